/* SPDX-License-Identifier: MIT */
/*
 * A folder's array files read on a second thread (zarr_group_fs_i.h):
 * the open, fstat, pread and close of each file overlap the walk's own
 * work (the parse, and arrayrefs' formatting). A ring of AHEAD_SLOTS
 * files' first bytes bounds the memory; the walk takes them in the order
 * the model gave.
 */
#include <pthread.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "zarr_group_fs_i.h"

/* Headers read ahead at most, and the fewest worth a thread. */
#define AHEAD_SLOTS 64u
#define AHEAD_MIN 32u
/* A side waiting for the other is woken once this many slots are ready
 * for it, not at each: every wake is two system calls, as dear as a
 * file's read. */
#define AHEAD_BATCH 16u

struct fs_ahead {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t moved;      /* a slot filled or emptied, or stop */
	int dfd;
	const char **names;        /* the walk's order */
	size_t n;
	size_t made, taken;        /* under lock */
	bool stop;                 /* under lock */
	bool walk_waits, reader_waits;  /* under lock: who sleeps on moved */
	fs_head slot[AHEAD_SLOTS];  /* file i's in slot[i % AHEAD_SLOTS] */
};

static void *read_ahead(void *arg)
{
	fs_ahead *a = arg;
	for (size_t i = 0; i < a->n; i++) {
		pthread_mutex_lock(&a->lock);
		while (!a->stop && i - a->taken >= AHEAD_SLOTS) {
			a->reader_waits = true;
			pthread_cond_wait(&a->moved, &a->lock);
			a->reader_waits = false;
		}
		bool stop = a->stop;
		pthread_mutex_unlock(&a->lock);
		if (stop)
			break;
		/* the walk reads no slot past made: this one is the reader's */
		zg_fs_head_read(&a->slot[i % AHEAD_SLOTS], a->dfd, a->names[i]);
		pthread_mutex_lock(&a->lock);
		a->made = i + 1;
		if (a->walk_waits &&
		    (a->made - a->taken >= AHEAD_BATCH || a->made == a->n))
			pthread_cond_signal(&a->moved);
		pthread_mutex_unlock(&a->lock);
	}
	return NULL;
}

static void ahead_free(fs_ahead *a)
{
	free(a->names);
	free(a);
}

fs_ahead *fs_ahead_start(int dfd, const char **names, size_t n)
{
	fs_ahead *a = n >= AHEAD_MIN ? calloc(1, sizeof(*a)) : NULL;
	if (!a) {
		free(names);
		return NULL;
	}
	a->dfd = dfd;
	a->n = n;
	a->names = names;
	if (pthread_mutex_init(&a->lock, NULL) != 0) {
		ahead_free(a);
		return NULL;
	}
	if (pthread_cond_init(&a->moved, NULL) != 0) {
		pthread_mutex_destroy(&a->lock);
		ahead_free(a);
		return NULL;
	}
	if (pthread_create(&a->thread, NULL, read_ahead, a) != 0) {
		pthread_cond_destroy(&a->moved);
		pthread_mutex_destroy(&a->lock);
		ahead_free(a);
		return NULL;
	}
	return a;
}

bool fs_ahead_take(fs_ahead *a, const char *name, fs_head *out)
{
	/* taken changes only here, on the walk's thread */
	if (a->taken == a->n || a->names[a->taken] != name)
		return false;
	pthread_mutex_lock(&a->lock);
	while (a->made <= a->taken) {
		a->walk_waits = true;
		pthread_cond_wait(&a->moved, &a->lock);
		a->walk_waits = false;
	}
	pthread_mutex_unlock(&a->lock);
	/* the reader writes no slot before taken moves past it */
	const fs_head *h = &a->slot[a->taken % AHEAD_SLOTS];
	out->ok = h->ok;
	out->fd = h->fd;
	out->sb = h->sb;
	out->have = h->have;
	memcpy(out->head, h->head, h->have);
	pthread_mutex_lock(&a->lock);
	a->taken++;
	if (a->reader_waits && a->made - a->taken <= AHEAD_SLOTS - AHEAD_BATCH)
		pthread_cond_signal(&a->moved);
	pthread_mutex_unlock(&a->lock);
	return true;
}

void fs_ahead_stop(fs_ahead *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	a->stop = true;
	pthread_cond_signal(&a->moved);
	pthread_mutex_unlock(&a->lock);
	pthread_join(a->thread, NULL);
	for (size_t i = a->taken; i < a->made; i++)
		if (a->slot[i % AHEAD_SLOTS].fd >= 0)
			close(a->slot[i % AHEAD_SLOTS].fd);
	pthread_cond_destroy(&a->moved);
	pthread_mutex_destroy(&a->lock);
	ahead_free(a);
}
