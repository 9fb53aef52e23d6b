/* SPDX-License-Identifier: MIT */
/**
 * @file inflate_read_i.h
 * Private to the inflate module (src/codec/inflate/).
 * How inflate.c serves a read: straight from the cache and the cursors,
 * or through read-ahead units (inflate_ahead.c), a first pass's long
 * reads in order.
 */
#ifndef ARRAYFS_INFLATE_READ_I_H
#define ARRAYFS_INFLATE_READ_I_H

#include "inflate_state_i.h"

/**
 * Serve [off, off + len) (within the output) from the block cache and the
 * cursors, claiming one as needed: what af_inflate_read does without
 * read-ahead. Takes z->lock. Returns AF_OK or the read's failure.
 */
af_status afz_read_direct(af_inflate *z, unsigned char *buf, size_t len,
			  uint64_t off, af_error *err);

/**
 * afz_read_direct of [*at, end) with z->lock held (dropped while a cursor
 * inflates), @p p holding output byte @p off at p[0]; moves *at on as it
 * serves. Where it must wait for a busy cursor: with @p yield it returns
 * AF_OK with *at < end instead (a caller that waits on z->idle then may
 * find the bytes elsewhere: a unit another reader made meanwhile), else
 * it waits.
 */
af_status afz_direct_locked(af_inflate *z, unsigned char *p, uint64_t off,
			    uint64_t end, uint64_t *at, bool yield,
			    af_error *err);

/* inflate_ahead.c */

/** af_inflate_read for a stream with a pool: units ahead of sequential
 * readers, the rest through afz_read_direct. */
af_status afz_ahead_read(af_inflate *z, unsigned char *buf, size_t len,
			 uint64_t off, af_error *err);

/** Take back queued units, wait for running ones, free every buffer and
 * leave the pool (at close). */
void afz_ahead_stop(af_inflate *z);
/** The last access point at or before @p off, or NULL. Lock held. */
const struct afz_point *afz_nearest_point(const af_inflate *z, uint64_t off);
/* A read near a stream's next byte but not right at it continues a
 * stream that is not sequential yet only if it is at least this long, as
 * the kernel's read-ahead reads are: random 4 KiB reads (no read-ahead)
 * that happened to land near each other made a reader sequential, and
 * its next read waited for a whole unit to be inflated (9-13 ms on
 * float32 data). A sequential stream takes any read near it: the kernel
 * splits a read-ahead window into requests, and a short last one that
 * arrives first must not go to the cursors (which inflated its span
 * again from its point, then the unit did). Without a pool, a read this
 * long is what counts as a stream's on the saver (af_inflate_set_saver).
 */
#define AFZ_SEQ_MIN AFO_LONG

/*
 * A read of [off, off + len) starts: during a first pass (the member's
 * points do not cover it yet: no checked pass, no loaded index) it goes
 * through z->order (read_order_i.h). Returns what afz_order_leave takes
 * when it ends.
 */
size_t afz_order_enter(af_inflate *z, uint64_t off, size_t len);
void afz_order_leave(af_inflate *z, size_t flight);

#endif /* ARRAYFS_INFLATE_READ_I_H */
