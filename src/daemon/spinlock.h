/* SPDX-License-Identifier: MIT */
/* The mutex of a hot table: spins briefly before it sleeps. */
#ifndef AFD_SPINLOCK_H
#define AFD_SPINLOCK_H

#include <pthread.h>

/*
 * For locks held for a few hundred instructions by two threads at once
 * (the node table, the source cache, the node slab in a listing): a
 * futex sleep and wake-up costs this kind of VM tens of microseconds,
 * far more than waiting out the holder.
 */
static inline void afd_mutex_init_spin(pthread_mutex_t *m)
{
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
	pthread_mutex_init(m, &a);
	pthread_mutexattr_destroy(&a);
}

#endif
