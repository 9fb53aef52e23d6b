/* SPDX-License-Identifier: MIT */
/* The set of open files and folders, closed at shutdown if never released. */
#include <stdlib.h>

#include "openset.h"

void afd_openset_init(struct afd_openset *s)
{
	pthread_mutex_init(&s->lock, NULL);
	s->head = NULL;
}

struct afd_open *afd_openset_add(struct afd_openset *s, void *obj,
				 void (*close)(void *obj))
{
	struct afd_open *o = malloc(sizeof(*o));
	if (!o)
		return NULL;
	o->obj = obj;
	o->close = close;
	o->prev = NULL;
	pthread_mutex_lock(&s->lock);
	o->next = s->head;
	if (s->head)
		s->head->prev = o;
	s->head = o;
	pthread_mutex_unlock(&s->lock);
	return o;
}

void afd_openset_remove(struct afd_openset *s, struct afd_open *o)
{
	pthread_mutex_lock(&s->lock);
	if (o->prev)
		o->prev->next = o->next;
	else
		s->head = o->next;
	if (o->next)
		o->next->prev = o->prev;
	pthread_mutex_unlock(&s->lock);
	o->close(o->obj);
	free(o);
}

void afd_openset_destroy(struct afd_openset *s)
{
	while (s->head)
		afd_openset_remove(s, s->head);
	pthread_mutex_destroy(&s->lock);
}
