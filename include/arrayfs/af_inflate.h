/* SPDX-License-Identifier: MIT */
/**
 * @file af_inflate.h
 * Random access into one raw deflate stream (a zip member), zran-style.
 *
 * While inflating, access points (bit position in the compressed stream +
 * the 32 KiB of output before it) are recorded every AF_INFLATE_SPAN bytes
 * of output; a read starts at the nearest point before its offset, so it
 * inflates at most about one span (1.5 MiB: ~8 ms of CPU at ~200 MB/s)
 * before its first byte. A few live inflate cursors let sequential readers
 * continue without restarting, and a small cache holds recently inflated
 * blocks.
 *
 * The points' windows are held to a budget of 1/52 (1.92 %) of the output
 * reached so far, for any data: a window is kept as it is if it fits, else
 * deflated (level 1, ~0.4 ms, only when needed, so a sequential pass pays
 * for few of them) if that fits, else the point is skipped and the next is
 * tried one span later or as soon as a whole window fits, if sooner.
 * Windows of typical data deflate to about half, so the points come every
 * span; where windows do not deflate (random bytes) they come every
 * 52 x 32 KiB = 1.63 MiB instead, and such data inflates faster. Either
 * way no two points are farther apart than 1.63 MiB plus the rest of the
 * deflate block where the later one falls (out of memory aside).
 *
 * Memory per stream is bounded:
 *   points:  <= 1.92 % of the output already reached (windows as stored +
 *            records), plus the point array's slack,
 *   cursors: AF_INFLATE_CURSORS x (~7 KiB zlib state + 32 KiB window +
 *            128 KiB input buffer + one AF_INFLATE_BLOCK + 64 KiB to save
 *            or restore a window), allocated on use; while one deflates a
 *            window it holds a ~270 KiB deflate state for ~0.4 ms,
 *   cache:   AF_INFLATE_CACHE_BLOCKS x AF_INFLATE_BLOCK,
 * about 2.2 MiB in all with the defaults, besides the points.
 *
 * Invariants:
 *  - Output past uncomp_size is never produced: a stream that would inflate
 *    to more than the declared size, or ends before it, is AF_E_CORRUPT.
 *  - When one pass reaches the end, the CRC-32 of the whole output is
 *    checked against the expected value; a mismatch is AF_E_CORRUPT.
 *    These three (too long, too short, bad CRC) condemn the whole member:
 *    every later read returns the same error. Other errors (bad data at
 *    some offset, truncation, I/O) fail only the reads that reach them.
 *  - All functions on one af_inflate are thread-safe (internal mutex, held
 *    only for bookkeeping, never while inflating; readers that need the
 *    same cursor wait for it). af_inflate_close needs no read in flight.
 */
#ifndef ARRAYFS_AF_INFLATE_H
#define ARRAYFS_AF_INFLATE_H

#include <stddef.h>
#include <stdint.h>

#include "af_source.h"
#include "af_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AF_INFLATE_SPAN (3u << 19)
#define AF_INFLATE_WINDOW 32768u
#define AF_INFLATE_CURSORS 4u
#define AF_INFLATE_BLOCK (64u << 10)
#define AF_INFLATE_CACHE_BLOCKS 16u

typedef struct af_inflate af_inflate;

/**
 * Prepare random access to the raw deflate stream held in @p compressed
 * (must outlive the index), which inflates to @p uncomp_size bytes with
 * CRC-32 @p crc. Inflates nothing yet. Returns AF_OK or AF_E_NOMEM.
 */
af_status af_inflate_open(af_inflate **out, const af_source *compressed,
			  uint64_t uncomp_size, uint32_t crc, af_error *err);

/**
 * Copy up to @p len bytes of output at @p off into @p buf; *nread gets the
 * count (short only at the end of the output).
 * Returns AF_OK, AF_E_CORRUPT, AF_E_TRUNCATED, AF_E_NOMEM or AF_E_IO.
 */
af_status af_inflate_read(af_inflate *z, void *buf, size_t len, uint64_t off,
			  size_t *nread, af_error *err);

/** Bytes of memory held now (points, cursors, cache). */
size_t af_inflate_memory(const af_inflate *z);
/** Number of access points recorded so far. */
size_t af_inflate_points(const af_inflate *z);

void af_inflate_close(af_inflate *z);

#ifdef __cplusplus
}
#endif
#endif /* ARRAYFS_AF_INFLATE_H */
