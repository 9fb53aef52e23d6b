/* SPDX-License-Identifier: MIT */
/**
 * @file inflate_cache_i.h
 * Private to the inflate module (src/codec/inflate/).
 * The block cache of one af_inflate (inflate_cache.c).
 */
#ifndef ARRAYFS_INFLATE_CACHE_I_H
#define ARRAYFS_INFLATE_CACHE_I_H

#include "inflate_state_i.h"

struct afz_cache_ent {
	bool valid;
	uint64_t blk;          /* block index: output offset / block */
	size_t piece;          /* served only once this piece of a loaded
				* index is checked (AFZ_NO_PIECE: always) */
	size_t len;            /* == block except for the last block */
	uint64_t used;
	unsigned char *data;
};
/* inflate_cache.c: lookup needs z->lock held; publish takes it. */

/** Copy bytes at @p off from a cached block into @p buf; 0 on a miss. */
size_t afz_cache_get(af_inflate *z, unsigned char *buf, size_t len,
		     uint64_t off);

/**
 * Hand c->blockbuf, holding block @p blk (@p len bytes), to the cache; c
 * gets the evicted buffer back, or NULL (allocate on next use). It is
 * served only once piece @p piece (of a loaded index) passed its check:
 * no reader takes bytes of a piece that may fail it. AFZ_NO_PIECE: at once.
 */
void afz_cache_put(af_inflate *z, struct afz_cursor *c, uint64_t blk,
		   size_t len, size_t piece);

/** Forget cached blocks overlapping [@p from, @p to): a piece that failed
 * its check. Takes the lock. */
void afz_cache_drop(af_inflate *z, uint64_t from, uint64_t to);

void afz_cache_free(af_inflate *z);

#endif /* ARRAYFS_INFLATE_CACHE_I_H */
