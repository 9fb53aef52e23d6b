/* SPDX-License-Identifier: MIT */
/* Handles bound to nodes for open-less reads: a bounded LRU. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "openless.h"
#include "ctx.h"
#include "fail.h"
#include "handle.h"

void afd_openless_set_init(struct afd_openless_set *s)
{
	pthread_mutex_init(&s->lock, NULL);
	s->lru.next = s->lru.prev = &s->lru;
	s->count = s->bytes = 0;
}

static void lru_unlink(struct afd_openless_set *s, struct afd_openless *b)
{
	b->prev->next = b->next;
	b->next->prev = b->prev;
	s->count--;
	/* a shared cost is counted by its first bound handle only */
	if (!b->shared || --*b->shared == 0)
		s->bytes -= b->cost;
}

static void lru_push_front(struct afd_openless_set *s, struct afd_openless *b)
{
	b->next = s->lru.next;
	b->prev = &s->lru;
	s->lru.next->prev = b;
	s->lru.next = b;
	s->count++;
	if (!b->shared || (*b->shared)++ == 0)
		s->bytes += b->cost;
}

/* Unbind @p b (lock held); the caller closes b->h and frees b. */
static void unbind_locked(struct afd_openless_set *s, struct afd_openless *b)
{
	lru_unlink(s, b);
	afd_node_io(b->node)->openless = NULL;
	b->node = NULL;
}

static void release(struct afd_openless *list)
{
	while (list) {
		struct afd_openless *next = list->next;
		afd_handle_close(list->h);
		free(list);
		list = next;
	}
}

void afd_openless_set_destroy(struct afd_openless_set *s)
{
	struct afd_openless *all = NULL;
	while (s->lru.next != &s->lru) {
		struct afd_openless *b = s->lru.next;
		unbind_locked(s, b);
		b->next = all;
		all = b;
	}
	release(all);
	pthread_mutex_destroy(&s->lock);
}

/* Bind @p h to @p n unless another thread did first; returns the handle
 * to use (held) and closes the extra one. */
static struct afd_handle *bind(struct afd_ctx *c, struct afd_node *n,
			       struct afd_handle *h, struct afd_openless *b)
{
	struct afd_openless_set *s = &c->openless;
	const struct afd_limits *lim = &c->opts.limits;
	struct afd_openless *victims = NULL;
	/* only a serving node gets here: its handle opened */
	struct afd_node_io *io = afd_node_io(n);
	pthread_mutex_lock(&s->lock);
	if (io->openless) {
		struct afd_handle *theirs = io->openless->h;
		afd_handle_hold(theirs);
		pthread_mutex_unlock(&s->lock);
		afd_handle_close(h);
		free(b);
		return theirs;
	}
	uint64_t now = afd_now_ms(c);
	b->node = n;
	b->h = h;
	b->cost = afd_handle_cost(h);
	b->shared = afd_handle_cost_shared(h);
	b->used_ms = now;
	io->openless = b;
	lru_push_front(s, b);
	afd_handle_hold(h);
	/* over the count: the least recently read go, whatever they hold */
	while (s->count > lim->bound_max && s->lru.prev != b) {
		struct afd_openless *v = s->lru.prev;
		unbind_locked(s, v);
		v->next = victims;
		victims = v;
	}
	/* over the budget: idle decoded data goes, oldest first; the list is
	 * in order of use, so the first one still in use ends the search */
	for (struct afd_openless *v = s->lru.prev;
	     v != &s->lru && v != b && s->bytes > lim->bound_budget;) {
		struct afd_openless *prev = v->prev;
		if (now - v->used_ms < lim->bound_idle_ms)
			break;
		if (v->cost) {
			unbind_locked(s, v);
			v->next = victims;
			victims = v;
		}
		v = prev;
	}
	size_t cost = b->cost, held = s->bytes;
	pthread_mutex_unlock(&s->lock);
	release(victims);
	if (cost)
		afd_log(&c->log, AFD_LOG_DEBUG, "keeping %zu MiB of decoded data "
			"for %s%s%s/%s (%zu MiB in all)", cost >> 20, n->path,
			n->member ? "/" : "", n->member ? n->member : "",
			afd_node_name(n), held >> 20);
	return h;
}

int afd_openless_get(struct afd_ctx *c, struct afd_node *n,
		  struct afd_handle **out, bool *opened,
		  struct afd_failure *why)
{
	struct afd_openless_set *s = &c->openless;
	afd_failure_clear(why);
	if (opened)
		*opened = false;
	/* a folder or link has none: its open below says what it is */
	struct afd_node_io *io = afd_node_io(n);
	pthread_mutex_lock(&s->lock);
	struct afd_openless *b = io ? io->openless : NULL;
	if (b) {
		if (s->lru.next != b) {
			lru_unlink(s, b);
			lru_push_front(s, b);
		}
		b->used_ms = afd_now_ms(c);
		afd_handle_hold(b->h);
		*out = b->h;
		pthread_mutex_unlock(&s->lock);
		return 0;
	}
	pthread_mutex_unlock(&s->lock);

	b = malloc(sizeof(*b));
	if (!b)
		return -ENOMEM;
	struct afd_handle *h;
	bool keep;
	int rc = afd_handle_open(c, n, O_RDONLY, &h, &keep, why);
	if (rc == 0 && n->version && afd_handle_version(h) != n->version) {
		rc = afd_handle_stale(h, why);
		afd_handle_close(h);
	}
	if (rc < 0) {
		free(b);
		return rc;
	}
	*out = bind(c, n, h, b);
	if (opened)
		*opened = *out == h;
	return 0;
}

void afd_openless_offer(struct afd_ctx *c, struct afd_node *n,
		     struct afd_handle *h)
{
	struct afd_openless *b = malloc(sizeof(*b));
	if (!b) {
		afd_handle_close(h);
		return;
	}
	/* ours, held once more by the set, or the one bound first */
	afd_handle_close(bind(c, n, h, b));
}

bool afd_openless_attr(struct afd_openless_set *s, struct afd_node *n,
		    struct stat *st)
{
	const struct afd_node_io *io = afd_node_io(n);
	pthread_mutex_lock(&s->lock);
	bool bound = io && io->openless != NULL;
	if (bound)
		*st = *afd_handle_attr(io->openless->h);
	pthread_mutex_unlock(&s->lock);
	return bound;
}

void afd_openless_unbind(struct afd_openless_set *s, struct afd_node *n)
{
	struct afd_node_io *io = afd_node_io(n);
	if (!io)
		return;
	pthread_mutex_lock(&s->lock);
	struct afd_openless *b = io->openless;
	if (b)
		unbind_locked(s, b);
	pthread_mutex_unlock(&s->lock);
	if (b) {
		b->next = NULL;
		release(b);
	}
}
