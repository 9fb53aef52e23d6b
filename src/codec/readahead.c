/* SPDX-License-Identifier: MIT */
/* A folder's file heads read ahead by worker threads, a bounded window at
 * a time, delivered in order (af_readahead.h). */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "arrayfs/af_readahead.h"

enum { SLOT_EMPTY = 0, SLOT_BUSY, SLOT_READY };

struct af_readahead {
	af_readahead_opts o;
	unsigned nslots;           /* the window; 1 without workers */
	af_head *head;             /* head i in head[i % nslots] */
	uint64_t *idx;             /* which head a slot holds (under lock) */
	unsigned char *state;      /* SLOT_* (under lock) */
	unsigned char *bufs;       /* nslots * head_bytes */
	pthread_mutex_t lock;
	pthread_cond_t ready;      /* a batch read: the caller's */
	pthread_cond_t room;       /* room for a batch, or stop: the workers' */
	uint64_t next;             /* the next head a worker takes */
	uint64_t consumed;         /* heads put back */
	uint64_t want;             /* the head the caller waits for */
	bool caller_waits;
	unsigned workers_wait;
	bool stop;
	unsigned nworkers;
	pthread_t *worker;
};

static void read_one(af_readahead *ra, af_head *h, uint64_t i)
{
	af_head_read_at(h, ra->o.opener, ra->o.open_arg, ra->o.dfd,
			ra->o.name(ra->o.name_arg, i));
}

static void *worker_main(void *arg)
{
	af_readahead *ra = arg;
	uint64_t batch = ra->o.batch, window = ra->nslots;
	pthread_mutex_lock(&ra->lock);
	for (;;) {
		/* a batch at a time: one wake-up per batch, not per head */
		while (!ra->stop && ra->next < ra->o.n &&
		       ra->next + batch > ra->consumed + window) {
			ra->workers_wait++;
			pthread_cond_wait(&ra->room, &ra->lock);
			ra->workers_wait--;
		}
		if (ra->stop || ra->next >= ra->o.n)
			break;
		uint64_t lo = ra->next;
		uint64_t hi = ra->o.n - lo < batch ? ra->o.n : lo + batch;
		ra->next = hi;
		for (uint64_t i = lo; i < hi; i++) {
			ra->idx[i % window] = i;
			ra->state[i % window] = SLOT_BUSY;
		}
		pthread_mutex_unlock(&ra->lock);
		/* the caller reads no BUSY slot: these are this worker's */
		for (uint64_t i = lo; i < hi; i++)
			read_one(ra, &ra->head[i % window], i);
		pthread_mutex_lock(&ra->lock);
		for (uint64_t i = lo; i < hi; i++)
			ra->state[i % window] = SLOT_READY;
		if (ra->caller_waits && ra->want >= lo && ra->want < hi)
			pthread_cond_signal(&ra->ready);
	}
	pthread_mutex_unlock(&ra->lock);
	return NULL;
}

static void ra_free(af_readahead *ra)
{
	free(ra->worker);
	free(ra->bufs);
	free(ra->state);
	free(ra->idx);
	free(ra->head);
	free(ra);
}

/* Start the workers; none (the caller reads each head) if a thread, mutex
 * or condition cannot be made: slower, never wrong. */
static void start_workers(af_readahead *ra)
{
	if (pthread_mutex_init(&ra->lock, NULL) != 0)
		return;
	if (pthread_cond_init(&ra->ready, NULL) != 0)
		goto no_ready;
	if (pthread_cond_init(&ra->room, NULL) != 0)
		goto no_room;
	ra->worker = calloc(ra->o.workers, sizeof(*ra->worker));
	for (unsigned k = 0; ra->worker && k < ra->o.workers; k++) {
		if (pthread_create(&ra->worker[k], NULL, worker_main, ra) != 0)
			break;
		ra->nworkers++;
	}
	if (ra->nworkers)
		return;
	pthread_cond_destroy(&ra->room);
no_room:
	pthread_cond_destroy(&ra->ready);
no_ready:
	pthread_mutex_destroy(&ra->lock);
}

af_readahead *af_readahead_start(const af_readahead_opts *o)
{
	af_readahead *ra = calloc(1, sizeof(*ra));
	if (!ra)
		return NULL;
	ra->o = *o;
	if (!ra->o.opener)
		ra->o.opener = af_head_openat;
	bool parallel = o->workers > 0 && o->n >= o->min_parallel && o->n > 1;
	/* a window of the folder's size at most: a small folder costs little */
	uint64_t window = o->window ? o->window : 1;
	if (window > o->n)
		window = o->n ? o->n : 1;
	ra->nslots = parallel ? (unsigned)window : 1;
	if (ra->o.batch == 0 || ra->o.batch > ra->nslots)
		ra->o.batch = ra->nslots;
	size_t bytes;
	ra->head = calloc(ra->nslots, sizeof(*ra->head));
	ra->idx = calloc(ra->nslots, sizeof(*ra->idx));
	ra->state = calloc(ra->nslots, sizeof(*ra->state));
	if (__builtin_mul_overflow((size_t)ra->nslots, o->head_bytes, &bytes))
		bytes = SIZE_MAX;
	ra->bufs = bytes != SIZE_MAX ? malloc(bytes ? bytes : 1) : NULL;
	if (!ra->head || !ra->idx || !ra->state || !ra->bufs) {
		ra_free(ra);
		return NULL;
	}
	for (unsigned k = 0; k < ra->nslots; k++) {
		ra->head[k].fd = -1;
		ra->head[k].pre.fd = -1;
		ra->head[k].buf = ra->bufs + (size_t)k * o->head_bytes;
		ra->head[k].cap = o->head_bytes;
	}
	if (parallel)
		start_workers(ra);
	return ra;
}

af_head *af_readahead_get(af_readahead *ra, uint64_t i)
{
	af_head *h = &ra->head[i % ra->nslots];
	if (!ra->nworkers) {
		read_one(ra, h, i);
		return h;
	}
	pthread_mutex_lock(&ra->lock);
	while (ra->state[i % ra->nslots] != SLOT_READY ||
	       ra->idx[i % ra->nslots] != i) {
		ra->want = i;
		ra->caller_waits = true;
		pthread_cond_wait(&ra->ready, &ra->lock);
		ra->caller_waits = false;
	}
	pthread_mutex_unlock(&ra->lock);
	return h;
}

void af_readahead_put(af_readahead *ra, af_head *h)
{
	af_head_close(h);
	if (!ra->nworkers)
		return;
	size_t k = (size_t)(h - ra->head);
	pthread_mutex_lock(&ra->lock);
	ra->state[k] = SLOT_EMPTY;
	ra->consumed = ra->idx[k] + 1;
	/* workers wait for a whole batch of room: woken once, as it opens
	 * (consumed grows by one a put), not at every put after */
	if (ra->workers_wait && ra->next < ra->o.n &&
	    ra->next + ra->o.batch == ra->consumed + ra->nslots)
		pthread_cond_broadcast(&ra->room);
	pthread_mutex_unlock(&ra->lock);
}

void af_readahead_stop(af_readahead *ra)
{
	if (!ra)
		return;
	if (ra->nworkers) {
		pthread_mutex_lock(&ra->lock);
		ra->stop = true;
		pthread_cond_broadcast(&ra->room);
		pthread_mutex_unlock(&ra->lock);
		for (unsigned k = 0; k < ra->nworkers; k++)
			pthread_join(ra->worker[k], NULL);
		pthread_cond_destroy(&ra->room);
		pthread_cond_destroy(&ra->ready);
		pthread_mutex_destroy(&ra->lock);
	}
	/* read ahead and never got, or got and not put */
	for (unsigned k = 0; k < ra->nslots; k++)
		af_head_close(&ra->head[k]);
	ra_free(ra);
}
