/* SPDX-License-Identifier: MIT */
/*
 * The small output cache of an af_inflate: a few aligned blocks of recently
 * produced output in an array with LRU eviction, so overlapping or repeated
 * reads of fresh output do not inflate again. Filled by swapping a cursor's
 * block buffer in, so publishing copies nothing under the lock.
 */
#include <stdlib.h>
#include <string.h>

#include "inflate_index_i.h"
#include "inflate_cache_i.h"

size_t afz_cache_get(af_inflate *z, unsigned char *buf, size_t len,
		     uint64_t off)
{
	uint64_t blk = off / z->o.block;
	size_t at = (size_t)(off % z->o.block);

	for (unsigned i = 0; i < z->o.cache_blocks; i++) {
		struct afz_cache_ent *e = &z->cache[i];
		if (!e->valid || e->blk != blk || at >= e->len ||
		    (e->piece != AFZ_NO_PIECE &&
		     !__atomic_load_n(&z->piece_ok[e->piece], __ATOMIC_ACQUIRE)))
			continue;
		size_t n = e->len - at;
		if (n > len)
			n = len;
		memcpy(buf, e->data + at, n);
		e->used = ++z->tick;
		return n;
	}
	return 0;
}

void afz_cache_put(af_inflate *z, struct afz_cursor *c, uint64_t blk,
		   size_t len, size_t piece)
{
	if (z->o.cache_blocks == 0 || c->blockbuf == NULL)
		return;
	pthread_mutex_lock(&z->lock);
	struct afz_cache_ent *victim = NULL;
	for (unsigned i = 0; i < z->o.cache_blocks; i++) {
		struct afz_cache_ent *e = &z->cache[i];
		if (e->valid && e->blk == blk) {
			/* two cursors produced the same block: keep one copy */
			victim = e;
			break;
		}
		if (!victim || !e->valid ||
		    (victim->valid && e->used < victim->used))
			victim = e;
	}
	unsigned char *old = victim->data;
	victim->data = c->blockbuf;
	victim->valid = true;
	victim->blk = blk;
	victim->len = len;
	victim->piece = piece;
	victim->used = ++z->tick;
	c->blockbuf = old;
	pthread_mutex_unlock(&z->lock);
}

void afz_cache_drop(af_inflate *z, uint64_t from, uint64_t to)
{
	pthread_mutex_lock(&z->lock);
	for (unsigned i = 0; i < z->o.cache_blocks; i++) {
		struct afz_cache_ent *e = &z->cache[i];
		uint64_t start = e->blk * z->o.block;
		if (e->valid && start < to && start + e->len > from)
			e->valid = false;
	}
	pthread_mutex_unlock(&z->lock);
}

void afz_cache_free(af_inflate *z)
{
	if (!z->cache)
		return;
	for (unsigned i = 0; i < z->o.cache_blocks; i++) {
		if (z->cache[i].data) {
			free(z->cache[i].data);
			afz_mem_sub(z, z->o.block);
		}
	}
	free(z->cache);
	z->cache = NULL;
}
