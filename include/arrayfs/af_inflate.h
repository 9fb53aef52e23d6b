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
 *            state + 32 KiB window once zlib took over + 512 KiB input
 *            buffer (128 KiB a pread at first, more as it reads on) +
 *            one AF_INFLATE_BLOCK + 64 KiB to save or restore a
 *            window), allocated on use; while one deflates a window it
 *            holds a ~360 KiB deflate state for ~0.05 ms (ISA-L; zlib's:
 *            ~270 KiB, ~0.7 ms), and while it looks for a block boundary
 *            an 85 KiB copy of its ISA-L state,
 *   cache:   AF_INFLATE_CACHE_BLOCKS x AF_INFLATE_BLOCK,
 * about 5 MiB in all with the defaults, besides the points; with a pool
 * (af_inflate_set_pool) threads + 2 more cursors, one more input buffer
 * (the pass from 0's next input, read by a pool thread), and read-ahead
 * units (8 at most, each <= AF_INFLATE_UNIT_MAX) within the pool's budget.
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

#include "af_pool.h"
#include "af_source.h"
#include "af_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AF_INFLATE_SPAN (3u << 19)
#define AF_INFLATE_WINDOW 32768u
#define AF_INFLATE_CURSORS 4u
#define AF_INFLATE_BLOCK (64u << 10)
#define AF_INFLATE_CACHE_BLOCKS 24u
/* A saved index has a point about every this many output bytes, where its
 * budget allows (af_inflate_index_export). */
#define AF_INFLATE_SAVE_SPAN (256u << 10)

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
 * count (short only at the end of the output). Until a pass from 0 checked
 * the CRC-32 (or an index was loaded), a read of 32 KiB or more (or one
 * ending the output) waits while another such read less than 16 MiB behind
 * it is under way, so that reads sent at once (a kernel's read-ahead, an
 * O_DIRECT read split into requests) do not take the pass past each
 * other's bytes.
 * Returns AF_OK, AF_E_CORRUPT, AF_E_TRUNCATED, AF_E_NOMEM or AF_E_IO.
 */
af_status af_inflate_read(af_inflate *z, void *buf, size_t len, uint64_t off,
			  size_t *nread, af_error *err);

/**
 * Let @p z inflate ahead of its readers on @p pool (af_pool.h), which
 * must outlive it; before its first read. From then on:
 *  - a sequential reader (its third read in a row continuing the one
 *    before, within 1 MiB) or a read longer than a span gets the units
 *    from its position on inflated ahead, max(threads, 1) + 1 of them,
 *    each into a buffer of its own: a span between two access points
 *    (from a pass or a loaded index) on any thread at once, or the next
 *    AF_INFLATE_SPAN bytes of the pass from 0 one at a time (the pass
 *    itself is sequential, but the reader's copies then overlap it; the
 *    thread that ends a unit of it goes on with the next);
 *  - every such span is checked: against the loaded index's piece CRC-32s, or
 *    against the CRC-32 the pass from 0 recorded at its two ends (a
 *    mismatch condemns the member: AF_E_CORRUPT for every later read);
 *  - a reader whose unit is still queued takes it back and inflates it
 *    itself; one whose unit is being inflated waits for that (at most one
 *    unit); random readers (not sequential, not long) go through the
 *    cursors as without a pool and never queue anything;
 *  - memory: at most AFZ_SLOTS (8) units per stream, none longer than
 *    AF_INFLATE_UNIT_MAX (longer spans are not read ahead), and the
 *    buffers of all streams on one pool within its budget; a unit's
 *    buffer (its length rounded up to 256 KiB) stays with its slot once
 *    its bytes were read, for the next unit there, until the decoder
 *    closes or another unit on the pool needs the room. The stream gets
 *    max(threads, 1) + 2 more cursors (AF_INFLATE_CURSORS + ...), so
 *    threads inflating ahead leave two to random readers.
 * Returns AF_OK, AF_E_INVAL (already read, or a pool set), AF_E_NOMEM.
 */
af_status af_inflate_set_pool(af_inflate *z, af_pool *pool, af_error *err);

/**
 * With no pool: @p saver (af_pool_open_background), which must outlive
 * @p z, saves indexes on its background thread; before z's first read.
 * z's reads of 32 KiB or more (the kernel's read-ahead reads) are then
 * noted on it as streams, so exports there wait while they go on, as
 * on a pool.
 */
void af_inflate_set_saver(af_inflate *z, af_pool *saver);

/** Longest unit inflated ahead (4 MiB). */
#define AF_INFLATE_UNIT_MAX (4u << 20)

/** What read-ahead did for @p z so far (counters for tests and logs). */
typedef struct af_inflate_ahead {
	uint64_t pool;    /* units inflated by pool threads */
	uint64_t taken;   /* queued units a reader took back and inflated */
	uint64_t own;     /* units a reader inflated first for itself */
	uint64_t chained; /* of pool's: units of the pass from 0 that the
			   * thread ending the one before went on with,
			   * unqueued (the pass stays on one core) */
	uint64_t inputs_ahead; /* compressed input buffers of the pass from 0
				* that a pool thread read while it inflated */
} af_inflate_ahead;

/** Fill @p out with @p z's read-ahead counters (zeros without a pool). */
void af_inflate_ahead_stats(af_inflate *z, af_inflate_ahead *out);

/** Bytes of memory held now (points, cursors, cache). */
size_t af_inflate_memory(const af_inflate *z);
/** Number of access points recorded so far. */
size_t af_inflate_points(const af_inflate *z);

void af_inflate_close(af_inflate *z);

/*
 * Saved indexes (the file format; inflate_index.c and
 * inflate_index_file.c).
 *
 * After one pass from byte 0 has checked the member's CRC-32 and recorded
 * every access point on the way, the points can be saved; a later
 * af_inflate of the same member (another mount, another daemon) loads them
 * before its first read and starts every read at its nearest point.
 * Each span (the output between two points, from 0 to the first, from the
 * last to the end) is cut into pieces at the multiples of the piece size
 * (64 KiB, AF_INFLATE_BLOCK: cursors stop at such block ends anyway) that
 * fall inside it, and each piece is checked against the CRC-32 the index
 * holds for it: a read inflates from its nearest point to the end of the
 * piece holding its last byte (or of the cache block holding it, if
 * later), checking every piece it passes, and a mismatch in a piece the
 * read wants fails it with AF_E_CORRUPT naming the piece and its span. A
 * piece that fails while only passed through on the way to the read's
 * bytes is not served (nor cached), and does not fail that read: the
 * read's own pieces are checked on their own. Checked pieces are
 * remembered while @p z is open. So a random read inflates about half a
 * span on average, not a whole one. A saved index's spans are shorter
 * than the pass's: its export inflates the member once more to add a
 * point about every AF_INFLATE_SAVE_SPAN between the pass's, with sparse
 * windows (below), within the same budget spread over the output; on
 * float32 measurements a random read then inflates ~128 KiB (~0.5 ms),
 * against ~750 KiB (~2.1 ms) from the pass's points alone.
 * A loaded index records no new points. Only points recorded by the pass
 * from 0 know their CRC, so a stream read at random (recording points off
 * that pass) before being read whole saves no index until it is opened
 * again and read whole first.
 *
 * File (all integers little-endian):
 *   header, 128 bytes: magic "AFINFLX\n", u32 version (2), u32 header
 *     size (128), the key (11 x u64: dev, ino, size, mtime s, mtime ns,
 *     ctime s, ctime ns of the archive; local header offset, compressed
 *     size, uncompressed size, CRC-32 of the member), u64 span (info
 *     only), u64 number of points (>= 1), u32 piece size (65536), u32 0;
 *   per point, 28 bytes + its window: u64 compressed offset of the first
 *     byte not used up, u64 output offset, u32 unused bits of the byte
 *     before (0-7), u32 window length (min(out, 32768)), u32 deflated
 *     length (0: the window is stored as it is, else raw deflate of fewer
 *     bytes), then the window bytes. A saved window keeps only the bytes
 *     that matches in the 32 KiB of output after its point reach, the
 *     others zeroed, and is deflated when that is smaller: on float32
 *     measurements about 150 bytes instead of 30 KiB;
 *   the pieces' CRC-32s, u32 each, in output order: span 0's (from 0 to
 *     the first multiple of the piece size or the first point, ...), then
 *     span 1's, ... (a span [a, b) has (b - 1) / piece - a / piece + 1);
 *   u32 CRC-32 of everything before.
 * Version 1 files (one CRC-32 per span) are refused as an unknown version
 * and rebuilt. The pieces add 4 bytes per 64 KiB of output (0.006 %).
 * Loading refuses (AF_E_CORRUPT, "index file refused: ...") a file whose
 * magic, version, checksum, key or piece size differ, whose points are not
 * strictly increasing in output and bit offset, inside the stream and the
 * output, whose window sizes are not exactly those a pass records, that
 * does not hold exactly one CRC-32 per piece, whose piece CRCs do not combine
 * (crc32_combine, in order) to the member's CRC-32 from the archive, or
 * that is larger than af_inflate_index_max_bytes. A file that passes all
 * this but lies (forged with a matching checksum and key) can only make
 * reads fail with AF_E_CORRUPT (its piece CRCs), never give other bytes,
 * unless it forges the piece CRCs too: at least two of them, made to
 * agree with each other and with bytes its lying points inflate to (the
 * fuzzer found one forged CRC, learnt from the comparison, before the
 * combined check; CRC-32 is no MAC, so a deliberate forger with write
 * access to the cache folder can still do it). A deflated window is
 * first inflated when a read starts at its point (not at loading, which
 * then waited for every window: 8 ms of a 15 ms first read of a 128 MiB
 * member); one that does not inflate back fails the reads that start
 * there, as a forged piece CRC does. A read that starts from byte 0
 * still checks the member's own CRC-32 at the end.
 * No block holding bytes of a piece whose check has not ended enters the
 * block cache, so no reader takes bytes of a piece before it is checked.
 */

/** The identity an index is saved under: the archive file's (from stat)
 * and the member's (from its zip entry). */
typedef struct af_index_key {
	uint64_t dev, ino, size;
	int64_t mtime_sec, mtime_nsec, ctime_sec, ctime_nsec;
	uint64_t local_offset, comp_size, uncomp_size;
	uint32_t crc;
} af_index_key;

struct stat;
/** Fill @p k's archive fields from @p st (the archive file's stat) and
 * zero the member's. */
void af_index_key_of_file(af_index_key *k, const struct stat *st);

/** Largest index file @p z accepts: 1/52 of its output (the points'
 * memory budget), 4 bytes per piece, plus 33 KiB. */
size_t af_inflate_index_max_bytes(const af_inflate *z);

/** Whether @p z has an index worth saving that was not exported yet: a
 * pass from 0 checked the CRC-32 and recorded every point (>= 1). */
bool af_inflate_index_ready(af_inflate *z);

/**
 * Serialize @p z's points, with those added between them, under @p key
 * into *buf (malloc'ed, the caller frees) of *len bytes; marks @p z as
 * saved, and @p z reads from the saved points from then on. Inflates the
 * member once more without holding z's lock (about one more pass of CPU;
 * readers go on meanwhile). With a pool, that waits while streams on it
 * are read (any member's sequential reader: a first pass of another array
 * of the same .npz ran 10-70 % slower beside it), and goes on once none
 * was read for 50 ms, 10 s after the pass at the latest (a reader that
 * streams member after member would otherwise leave every export to its
 * member's close), or when @p z is closing (af_inflate_index_hurry).
 * Returns AF_OK, AF_E_NOMEM, or AF_E_INVAL when not af_inflate_index_ready.
 */
af_status af_inflate_index_export(af_inflate *z, const af_index_key *key,
				  unsigned char **buf, size_t *len,
				  af_error *err);

/**
 * Load the index in @p buf (@p len bytes, untrusted) into @p z, which must
 * not have been read yet. Returns AF_OK; AF_E_CORRUPT with a reason when
 * the file is refused (z unchanged); AF_E_INVAL if z was read already or
 * @p key is not z's stream; AF_E_NOMEM.
 */
af_status af_inflate_index_import(af_inflate *z, const af_index_key *key,
				  const unsigned char *buf, size_t len,
				  af_error *err);

/**
 * @p z is about to close: an export under way stops waiting for streams to
 * be quiet, and stops inflating again for more points once more than
 * 256 MiB of output would be left (the file then holds the pass's points
 * past there): a close waits about 0.5 s at most.
 */
void af_inflate_index_hurry(af_inflate *z);

/** Whether @p z's points came from a saved index. */
bool af_inflate_index_loaded(af_inflate *z);

/** Output bytes @p z has inflated so far, including those re-inflated
 * after restarts (a counter for tests and logs). */
uint64_t af_inflate_inflated(const af_inflate *z);

/*
 * Index files in a folder (inflate_index_file.c). A file is named after a
 * hash of its key ("<16 hex>-<8 hex>.afi"); it is written to a temporary
 * file in the same folder (".tmp-*") and renamed over, so readers never
 * see a partial file, and daemons sharing the folder at worst both write
 * the same file. Loading one sets its mtime to now: the folder is kept
 * under a byte budget by removing the files used least recently first
 * (and temporary files older than an hour) after each save.
 */

/** Default budget of an index folder: 256 MiB. */
#define AF_INDEX_DIR_BUDGET (256ull << 20)

/**
 * The default index folder into @p buf (@p n bytes): /var/cache/arrayfs
 * for root, else $XDG_CACHE_HOME/arrayfs, else $HOME/.cache/arrayfs.
 * Returns false when none can be named (no HOME, or too long).
 */
bool af_index_dir_default(char *buf, size_t n);

/**
 * Load the index of @p key from folder @p dir into @p z. Returns AF_OK;
 * AF_E_RANGE when there is no such file (nothing to say); AF_E_CORRUPT
 * (refused: the reason says why), AF_E_IO, AF_E_NOMEM otherwise.
 */
af_status af_index_file_load(af_inflate *z, const char *dir,
			     const af_index_key *key, af_error *err);

/**
 * Save @p z's index (af_inflate_index_ready) under @p key in @p dir
 * (created, mode 0700, if missing), then remove least recently used files
 * until the folder holds at most @p budget bytes of index files. Returns
 * AF_OK, AF_E_INVAL (nothing to save), AF_E_IO, AF_E_NOMEM.
 */
af_status af_index_file_save(af_inflate *z, const char *dir,
			     const af_index_key *key, uint64_t budget,
			     af_error *err);

/** The file name of @p key's index (no folder) into @p buf (>= 32 bytes). */
void af_index_file_name(char *buf, size_t n, const af_index_key *key);

#ifdef __cplusplus
}
#endif
#endif /* ARRAYFS_AF_INFLATE_H */
