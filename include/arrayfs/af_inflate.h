/* SPDX-License-Identifier: MIT */
/**
 * @file af_inflate.h
 * Random access into one raw deflate stream (a zip member), zran-style.
 *
 * While inflating, access points (bit position in the compressed stream +
 * the 32 KiB of output before it) are recorded every AF_INFLATE_SPAN bytes
 * of output; a read starts at the nearest point before its offset, so it
 * inflates at most about one span (1.5 MiB: ~3 ms of CPU with ISA-L, ~6
 * with zlib) before its first byte. A few live inflate cursors let
 * sequential readers continue without restarting, and a small cache holds
 * recently inflated blocks.
 *
 * Two engines inflate: ISA-L (igzip's, 1.3-2x zlib on numpy members) when
 * the library is built with it (meson -Disal=auto|enabled), else zlib.
 * They give the same bytes and, for bad streams, the same errors: ISA-L
 * reports none itself; where it fails, or cannot find a block boundary for
 * an access point within AF_INFLATE_SEEK_LIMIT compressed bytes, zlib
 * replays that stretch from the nearest point and inflates the rest of the
 * stream, and its verdict stands. One exception: ISA-L accepts an
 * incomplete Huffman code (RFC 1951 does not forbid one) that zlib refuses
 * as "invalid ... set"; from such a block on, ISA-L gives the bytes the
 * codes define where zlib gives AF_E_CORRUPT (a whole pass still checks
 * them against the CRC-32). Access points are block boundaries either
 * engine resumes from (bit offset + window), whichever recorded them.
 *
 * The points' windows are held to a budget of 1/52 (1.92 %) of the output
 * reached so far, for any data: a window is kept as it is if it fits, else
 * deflated (level 1, ~0.05 ms, only when needed, so a sequential pass pays
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
 *   cursors: AF_INFLATE_CURSORS x (~85 KiB ISA-L state, or ~7 KiB zlib
 *            state + 32 KiB window once zlib took over + 128 KiB input
 *            buffer + one AF_INFLATE_BLOCK + 64 KiB to save or restore a
 *            window), allocated on use; while one deflates a window it
 *            holds a ~360 KiB deflate state for ~0.05 ms (ISA-L; zlib's:
 *            ~270 KiB, ~0.7 ms), and while it looks for a block boundary
 *            an 85 KiB copy of its ISA-L state,
 *   cache:   AF_INFLATE_CACHE_BLOCKS x AF_INFLATE_BLOCK,
 * about 2.6 MiB in all with the defaults, besides the points.
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

#include <stdbool.h>
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

/* Compressed bytes ISA-L may look through for a block boundary to put an
 * access point at before zlib takes the stream over. */
#define AF_INFLATE_SEEK_LIMIT (512u << 10)

typedef struct af_inflate af_inflate;

typedef enum af_inflate_engine {
	AF_INFLATE_AUTO = 0, /* ISA-L when the build has it, else zlib */
	AF_INFLATE_ZLIB,
	AF_INFLATE_ISAL,
} af_inflate_engine;

/** Whether this build can inflate with @p e (AUTO and ZLIB: always). */
bool af_inflate_engine_available(af_inflate_engine e);

/** "auto", "zlib" or "isa-l" (static string). */
const char *af_inflate_engine_name(af_inflate_engine e);

/**
 * Prepare random access to the raw deflate stream held in @p compressed
 * (must outlive the index), which inflates to @p uncomp_size bytes with
 * CRC-32 @p crc. Inflates nothing yet. Returns AF_OK or AF_E_NOMEM.
 */
af_status af_inflate_open(af_inflate **out, const af_source *compressed,
			  uint64_t uncomp_size, uint32_t crc, af_error *err);

/**
 * af_inflate_open with the engine chosen: AF_INFLATE_AUTO is what
 * af_inflate_open uses; AF_INFLATE_ZLIB or AF_INFLATE_ISAL force one (for
 * tests and benchmarks). Returns AF_OK, AF_E_NOMEM, or AF_E_UNSUPPORTED
 * when the build lacks ISA-L and it was asked for.
 */
af_status af_inflate_open_engine(af_inflate **out, const af_source *compressed,
				 uint64_t uncomp_size, uint32_t crc,
				 af_inflate_engine engine, af_error *err);

/**
 * The engine @p z restarts with now: ZLIB or ISAL (ISAL until ISA-L gives
 * up on a stretch of this stream, then ZLIB for good).
 */
af_inflate_engine af_inflate_engine_used(af_inflate *z);

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
