/* SPDX-License-Identifier: MIT */
/* The bounded ring of array folders a walk listed (walked.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "walked.h"

int afd_walked_init(struct afd_walked *w, size_t max)
{
	memset(w, 0, sizeof(*w));
	if (max > AFD_WALKED_MAX_LIMIT)
		return -EINVAL;
	w->max = max;
	w->cap_max = max ? 4 * max + 4096 : 0;
	int rc = pthread_mutex_init(&w->lock, NULL);
	return -rc;
}

void afd_walked_destroy(struct afd_walked *w)
{
	free(w->ring);
	w->ring = NULL;
	pthread_mutex_destroy(&w->lock);
}

/* Double the ring (lock held), its entries kept oldest first. */
static int grow(struct afd_walked *w)
{
	size_t cap = w->cap ? 2 * w->cap : w->max + 64;
	if (cap > w->cap_max)
		cap = w->cap_max;
	struct afd_walked_dir *ring = malloc(cap * sizeof(*ring));
	if (!ring)
		return -ENOMEM;
	for (size_t i = 0; i < w->count; i++)
		ring[i] = w->ring[(w->head + i) % w->cap];
	free(w->ring);
	w->ring = ring;
	w->cap = cap;
	w->head = 0;
	return 0;
}

/*
 * Whether the notifier has work (lock held): an eighth more than the
 * bound, so that it drops folders in bursts. Each drop makes the kernel
 * ask the parent's attributes again (a GETATTR), and the attributes of a
 * listing in flight meanwhile (one GETATTR a name): once a burst, not once
 * a folder. The kernel's FORGETs then come in batches too.
 */
static bool due(const struct afd_walked *w)
{
	return w->count > w->max + w->max / 8;
}

bool afd_walked_add(struct afd_walked *w, uint64_t nodeid, uint32_t gen)
{
	if (!w->max)
		return false;
	pthread_mutex_lock(&w->lock);
	if (w->count == w->cap && w->cap < w->cap_max && grow(w) < 0 &&
	    !w->cap) {
		/* nothing pruned: what a mount without the bound does */
		pthread_mutex_unlock(&w->lock);
		return false;
	}
	if (w->count) {
		const struct afd_walked_dir *last =
			&w->ring[(w->head + w->count - 1) % w->cap];
		if (last->nodeid == nodeid && last->gen == gen) {
			bool work = due(w);
			pthread_mutex_unlock(&w->lock);
			return work;
		}
	}
	if (w->count == w->cap) {
		w->head = (w->head + 1) % w->cap;
		w->count--;
		w->missed++;
	}
	w->ring[(w->head + w->count) % w->cap] =
		(struct afd_walked_dir){ nodeid, gen };
	w->count++;
	bool work = due(w);
	pthread_mutex_unlock(&w->lock);
	return work;
}

size_t afd_walked_take(struct afd_walked *w, struct afd_walked_dir *out,
		       size_t n)
{
	size_t k = 0;
	if (!w->max)
		return 0;
	pthread_mutex_lock(&w->lock);
	/* a burst, once due, goes down to max */
	if (due(w))
		w->draining = true;
	while (w->draining && k < n && w->count > w->max) {
		out[k++] = w->ring[w->head];
		w->head = (w->head + 1) % w->cap;
		w->count--;
	}
	if (w->count <= w->max)
		w->draining = false;
	pthread_mutex_unlock(&w->lock);
	return k;
}

bool afd_walked_of(const struct afd_node *dir, struct afd_walked_dir *out)
{
	/* an array folder's sub-tree is what a walk multiplies by 14; a
	 * mirrored folder's entries are its own listing's, held as ls -l
	 * holds them */
	if (!dir || dir->kind != NK_ARRAY)
		return false;
	*out = (struct afd_walked_dir){ dir->nodeid, dir->gen };
	return true;
}

void afd_walked_listed(struct afd_ctx *c, const struct afd_walked_dir *d)
{
	if (afd_walked_add(&c->walked, d->nodeid, d->gen))
		afd_notify_kick(c);
}
