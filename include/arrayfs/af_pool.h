/* SPDX-License-Identifier: MIT */
/**
 * @file af_pool.h
 * A small pool of worker threads that decoders share to decode ahead of
 * their readers: spans of a deflated member (af_inflate.h) once its access
 * points exist, blocks of an LZ4 .ra (af_lz4.h) past what was read.
 *
 * The caller owns the pool (the daemon keeps one in its per-mount
 * context; nothing in the library is global) and hands it to each decoder
 * it opens; every decoder using it must be closed before af_pool_close.
 *
 * Invariants:
 *  - Work is only ever read-ahead: a reader whose bytes are still queued
 *    takes that job back and does it on its own thread, so no reader ever
 *    waits for a queued job (one already running is waited for: it is the
 *    work the reader needs, at most one span).
 *  - Memory: decoded read-ahead buffers of every decoder using the pool
 *    together hold at most af_pool_budget bytes; a decoder that needs one
 *    takes idle ones back (its own first, then other decoders', which never
 *    blocks on their locks). The threads themselves hold nothing but their
 *    stacks (8 MiB of address space each, a few pages touched).
 *  - Background work (a member's index save, which inflates it once more)
 *    runs on one more thread of its own, so it never holds a worker that
 *    read-ahead needs; it waits while streams are being read (a first pass
 *    of another member: numpy loading an .npz array after array), and
 *    goes on when they are quiet or its member closes.
 *  - A pool of 0 threads runs nothing by itself: queued work is done by
 *    readers taking it back, or by af_pool_run_one (tests).
 *  - Locking: the pool's lock guards its queue and the list of decoders
 *    holding buffers; it is taken under a decoder's lock, never the other
 *    way round (it only try-locks a decoder to take buffers back).
 */
#ifndef ARRAYFS_AF_POOL_H
#define ARRAYFS_AF_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "af_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct af_pool af_pool;

/** Most threads a pool runs. */
#define AF_POOL_MAX_THREADS 64u

/**
 * The default budget of read-ahead buffers for @p threads threads:
 * 8 MiB + 6 MiB per thread (20 MiB with 2 threads): each thread's span in
 * flight, as many ready for each sequential reader, and room for two
 * readers at once.
 */
uint64_t af_pool_default_budget(unsigned threads);

/**
 * Start a pool of @p threads worker threads (0 to AF_POOL_MAX_THREADS; 0:
 * none, see above), and with any, the background thread, whose decoders
 * keep at most @p budget bytes of
 * read-ahead buffers. On AF_OK the caller stops it with af_pool_close.
 * Returns AF_OK, AF_E_INVAL (too many threads), AF_E_NOMEM (also when a
 * thread cannot be started; the threads started are stopped again).
 */
af_status af_pool_open(af_pool **out, unsigned threads, uint64_t budget,
		       af_error *err);

/**
 * A pool with no workers and a read-ahead budget of 0, but its background
 * thread: for saving indexes (af_member_opts.saver) where no read-ahead is
 * wanted (one core), so that the read ending a first pass does not wait
 * for the export, about one more pass of CPU. Returns AF_OK or AF_E_NOMEM.
 */
af_status af_pool_open_background(af_pool **out, af_error *err);

/**
 * Stop the threads (each ends after its job at hand) and free the pool.
 * Every decoder given @p p must be closed first. NULL is fine.
 */
void af_pool_close(af_pool *p);

/** The number of worker threads (the background thread not counted). */
unsigned af_pool_threads(const af_pool *p);

/** The read-ahead buffer budget in bytes. */
uint64_t af_pool_budget(const af_pool *p);

/** Bytes of read-ahead buffers its decoders hold now. */
uint64_t af_pool_held(const af_pool *p);

/** Jobs queued and not started (for tests and logs). */
size_t af_pool_queued(af_pool *p);

/**
 * Run the oldest queued job on the calling thread (read-ahead first, then
 * background); false if none was queued. For tests of a pool of 0
 * threads: deterministic read-ahead.
 */
bool af_pool_run_one(af_pool *p);

#ifdef __cplusplus
}
#endif
#endif /* ARRAYFS_AF_POOL_H */
