/* SPDX-License-Identifier: MIT */
/**
 * @file af_inflate.h
 * Random access into one raw deflate stream (a zip member), zran-style.
 *
 * While inflating, access points (bit position in the compressed stream +
 * the 32 KiB of output before it) are recorded every AF_INFLATE_SPAN bytes
 * of output; a read starts at the nearest point before its offset. A few
 * live inflate cursors let sequential readers continue without restarting,
 * and a small cache holds recently inflated blocks.
 *
 * Memory per stream is bounded:
 *   points:  32 KiB per AF_INFLATE_SPAN of output already reached
 *            (1.6 % of the member at the default 2 MiB span),
 *   cursors: AF_INFLATE_CURSORS x (~7 KiB zlib state + 32 KiB window +
 *            128 KiB input buffer + one AF_INFLATE_BLOCK), allocated on use,
 *   cache:   AF_INFLATE_CACHE_BLOCKS x AF_INFLATE_BLOCK,
 * about 1.9 MiB in all with the defaults, besides the points.
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

#define AF_INFLATE_SPAN (2u << 20)
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
