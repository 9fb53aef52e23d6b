/* SPDX-License-Identifier: MIT */
/* A pool job for tests that holds the thread running it until opened. */
#ifndef ARRAYFS_TEST_POOL_GATE_H
#define ARRAYFS_TEST_POOL_GATE_H

#include <pthread.h>
#include <stdbool.h>

#include "../../src/codec/pool_i.h"

/* A job that holds its thread until released. */
struct gate {
	struct afp_job job;   /* first */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool entered, open;
};

static inline void gate_run(struct afp_job *job)
{
	struct gate *g = (struct gate *)job;
	pthread_mutex_lock(&g->lock);
	g->entered = true;
	pthread_cond_broadcast(&g->cond);
	while (!g->open)
		pthread_cond_wait(&g->cond, &g->lock);
	pthread_mutex_unlock(&g->lock);
}

static inline void gate_init(struct gate *g, bool background)
{
	*g = (struct gate){ .job = { .run = gate_run,
				     .background = background } };
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cond, NULL);
}

static inline void gate_wait_entered(struct gate *g)
{
	pthread_mutex_lock(&g->lock);
	while (!g->entered)
		pthread_cond_wait(&g->cond, &g->lock);
	pthread_mutex_unlock(&g->lock);
}

static inline void gate_open(struct gate *g)
{
	pthread_mutex_lock(&g->lock);
	g->open = true;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
}

static inline void gate_destroy(struct gate *g)
{
	pthread_cond_destroy(&g->cond);
	pthread_mutex_destroy(&g->lock);
}

#endif
