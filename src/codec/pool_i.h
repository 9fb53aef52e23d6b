/* SPDX-License-Identifier: MIT */
/**
 * @file pool_i.h
 * Private to the codec: what decoders (inflate_ahead.c, lz4_ahead.c) do
 * with an af_pool (pool.c): queue jobs, take queued ones back, wait for a
 * job (afp_waitable), say when a stream is read, and count their
 * read-ahead buffers against the pool's budget.
 */
#ifndef ARRAYFS_POOL_I_H
#define ARRAYFS_POOL_I_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "arrayfs/af_pool.h"

/* One piece of work. The pool touches it only under its lock and until it
 * hands it to run(); from then on it is the job owner's again (run may
 * free it). */
struct afp_job {
	void (*run)(struct afp_job *job);
	struct afp_job *prev, *next;
	bool queued;
	/* set before submitting: work no read waits for (an index save),
	 * for the pool's background thread, so it never holds a worker
	 * that read-ahead needs */
	bool background;
};

/**
 * A decoder that holds read-ahead buffers. reclaim is called under the
 * pool's lock by another decoder short of budget: it must only try-lock
 * its owner (never wait on a lock), free the idle buffers it can, and say
 * whether it freed any.
 */
struct afp_holder {
	bool (*reclaim)(struct afp_holder *h);
	struct afp_holder *prev, *next;
	bool listed;
};

/** Queue @p job (not queued) at the back. */
void afp_submit(af_pool *p, struct afp_job *job);

/** Take @p job out of the queue: true if it was still queued (the caller
 * runs it or drops it), false if a thread has it or it was never queued. */
bool afp_take(af_pool *p, struct afp_job *job);

/**
 * A job its owner waits for before it touches what the job uses: one
 * submitted at a time; afp_waitable_settle takes it back and runs it on
 * the owner's thread while it is still queued (the pool may be busy with
 * longer work), or waits for the thread running it.
 */
struct afp_waitable {
	struct afp_job job;   /* first: the job is the whole */
	void (*work)(struct afp_waitable *w);
	pthread_mutex_t lock;
	pthread_cond_t done;
	bool pending;         /* queued or running; under lock */
	bool by_pool;         /* its last run was the pool's, not settle's */
};

void afp_waitable_init(struct afp_waitable *w,
		       void (*work)(struct afp_waitable *w), bool background);
void afp_waitable_destroy(struct afp_waitable *w);
/** Queue @p w unless it is pending; true if queued. */
bool afp_waitable_submit(af_pool *p, struct afp_waitable *w);
/** Return once @p w is not pending (see above). */
void afp_waitable_settle(af_pool *p, struct afp_waitable *w);

/**
 * A stream (a sequential reader, a read longer than a span) was read just
 * now. Background work that would take a core from it (an index export
 * inflating a member again) waits until streams are quiet.
 */
void afp_note_stream(af_pool *p);

/** Whether no stream was read in the last @p ns nanoseconds. */
bool afp_streams_quiet(const af_pool *p, uint64_t ns);

/** CLOCK_MONOTONIC in nanoseconds, never 0 (0 stands for "never"). */
uint64_t afp_now_ns(void);

/** Count @p h among the decoders asked to give buffers back. */
void afp_holder_add(af_pool *p, struct afp_holder *h);
/** Stop counting @p h (before its owner is freed). */
void afp_holder_remove(af_pool *p, struct afp_holder *h);

/**
 * Count @p n more bytes of buffers against the budget, asking the other
 * holders (not @p self, whose lock the caller may hold) for idle ones when
 * it is short. False if they do not fit even then.
 */
bool afp_reserve(af_pool *p, struct afp_holder *self, uint64_t n);

/** Give back @p n bytes reserved before. */
void afp_unreserve(af_pool *p, uint64_t n);

#endif /* ARRAYFS_POOL_I_H */
