/* SPDX-License-Identifier: MIT */
/**
 * @file af_lz4.h
 * Random access into the LZ4 data of a RawArray file (flags bit 1: `size`
 * bytes of one raw LZ4 block, no frame), at any offset, of any size, in
 * bounded memory: the decoder state the `data` and `B.npy` views of an LZ4
 * .ra read through, which several views of one array may share.
 *
 * Invariants:
 *  - Memory: an access point every AF_LZ4_SPAN bytes of output decoded so
 *    far (the 64 KiB of output before it: 1.6 % of the output), a record
 *    per AF_LZ4_BLOCK of output (64 bytes), a cache of at most
 *    AF_LZ4_CACHE_BLOCKS decoded blocks, with one input buffer per block
 *    being decoded, and the first pass's 1 MiB input window: never more
 *    than af_lz4_index_bound(decoded size), 1.6 % of it plus about 8 MiB
 *    (less for small arrays).
 *  - The first read that needs a byte decodes from the start up to it,
 *    once (a sequential reader decodes each byte once); a read behind that
 *    decodes at most AF_LZ4_SPAN bytes, from the nearest access point or
 *    cached block. Until the whole block has been decoded once, a read of
 *    32 KiB or more (or one ending the output) waits while such a read
 *    less than 16 MiB behind it is being served, so that reads sent at
 *    once (a deep read-ahead window, a long O_DIRECT read) decode in
 *    order rather than past each other's blocks.
 *  - A block that LZ4_decompress_safe refuses, or that decodes to another
 *    length than declared, gives AF_E_CORRUPT (err->offset: the source
 *    offset of the faulty sequence) to every read from the one that finds
 *    it on, at the latest a read reaching the last byte; bytes served before
 *    are those liblz4 decodes. Read failures of the source are retried.
 *  - Thread-safe: any number of threads may read one index at once. It
 *    copies the af_source value; what that points to (fd, memory) is
 *    borrowed and must outlive the index.
 */
#ifndef ARRAYFS_AF_LZ4_H
#define ARRAYFS_AF_LZ4_H

#include <stddef.h>
#include <stdint.h>

#include "af_array.h"
#include "af_pool.h"
#include "af_source.h"
#include "af_status.h"
#include "af_view.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Output bytes between access points. */
#define AF_LZ4_SPAN (4ULL << 20)
/** Output bytes decoded and cached as one block. */
#define AF_LZ4_BLOCK (256u << 10)
/** Decoded blocks an index keeps. */
#define AF_LZ4_CACHE_BLOCKS 8u

typedef struct af_lz4_index af_lz4_index;

/**
 * Open the decoder state of LZ4 array @p a (compression AF_COMP_LZ4) in
 * @p src. Reads nothing. On AF_OK the caller holds the one reference and
 * drops it with af_lz4_index_close; on failure *out is NULL.
 * Returns AF_OK, AF_E_INVAL (not an LZ4 array, NULL argument),
 * AF_E_TRUNCATED (@p src ends before the block), AF_E_CORRUPT (no LZ4
 * block of stored_size bytes can decode to data_size bytes), AF_E_NOMEM.
 */
af_status af_lz4_index_open(af_lz4_index **out, const af_array *a,
			    const af_source *src, af_error *err);

/** Take one more reference to @p ix; returns @p ix. */
af_lz4_index *af_lz4_index_hold(af_lz4_index *ix);

/** Drop a reference; the last one frees the index. NULL is fine. */
void af_lz4_index_close(af_lz4_index *ix);

/** The decoded size (0 for NULL). */
uint64_t af_lz4_index_size(const af_lz4_index *ix);

/**
 * Decode output bytes [off, off + len) into @p buf; the range must lie
 * within the decoded size. Returns AF_OK, AF_E_RANGE (outside it),
 * AF_E_CORRUPT (see the invariants), AF_E_NOMEM, or the source's
 * AF_E_IO / AF_E_TRUNCATED.
 */
af_status af_lz4_index_read(af_lz4_index *ix, void *buf, size_t len,
			    uint64_t off, af_error *err);

/**
 * Let @p ix walk ahead on @p pool (af_pool.h, which must outlive it);
 * before the first read. The first pass over the block then parses the
 * sequences of the blocks ahead (up to 64, 16 MiB of output, only their
 * records kept) on a pool thread while the reader's thread decodes the
 * block it needs with liblz4, instead of one thread doing both; and a
 * sequential reader (one reading at the frontier of that first pass) gets
 * the 4 blocks after the one it read decoded on a pool thread while it is
 * served, into cache blocks it has read already (a block decoded ahead
 * stays until read, and is evicted last by anyone). The verdicts and
 * bytes are the same. Returns AF_OK or AF_E_INVAL (read already, or a
 * pool set).
 */
af_status af_lz4_index_set_pool(af_lz4_index *ix, af_pool *pool,
				af_error *err);

/**
 * Output bytes @p ix has decoded so far, a block decoded again (evicted
 * from the cache, then read) counting again; literals served from the
 * source count nothing. 0 for NULL.
 */
uint64_t af_lz4_index_decoded(af_lz4_index *ix);

/** Bytes @p ix holds now: points, records, cached blocks, buffers. */
size_t af_lz4_index_memory(af_lz4_index *ix);

/**
 * The most an index of an array decoding to @p decoded_size bytes ever
 * holds, read to the end: what a cache budget should count per index.
 */
uint64_t af_lz4_index_bound(uint64_t decoded_size);

/**
 * af_view_open, with the `data` or `B.npy` view of an LZ4 array reading
 * through @p lz4 (opened over the same array and source; the view takes
 * its own reference), so views of one array share one index and one
 * cache. With @p lz4 NULL, or for a view that decodes nothing, it is
 * af_view_open: an LZ4 view then has an index of its own.
 * Returns what af_view_open returns.
 */
af_status af_view_open_shared(af_view **out, const af_array *a,
			      const af_source *src, af_view_kind kind,
			      af_lz4_index *lz4, af_error *err);

#ifdef __cplusplus
}
#endif
#endif /* ARRAYFS_AF_LZ4_H */
