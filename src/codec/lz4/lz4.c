/* SPDX-License-Identifier: MIT */
/*
 * Random access into one raw LZ4 block (lz4_i.h says how): opening and
 * closing an index, its memory bound, and reads, each served from the
 * cache of decoded blocks, from the source (literals), by the frontier
 * (lz4_frontier.c) past what was decoded so far, or by decoding a block
 * behind it from the nearest access point or cached block. The locking is
 * in lz4_index_i.h.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../bytes_i.h"
#include "lz4_index_i.h"

void lz4_default_opts(struct lz4_opts *o)
{
	o->span = AF_LZ4_SPAN;
	o->block = AF_LZ4_BLOCK;
	o->cache_blocks = AF_LZ4_CACHE_BLOCKS;
	/* four blocks: the input of the block walked last stays in it */
	o->walk_buf = 4 * (size_t)AF_LZ4_BLOCK;
}

static uint64_t div_up(uint64_t a, uint64_t b)
{
	return a / b + (a % b != 0);
}

/* Input bytes the whole sequences inside one block of @p blk output bytes
 * can take: a sequence of L output bytes has at most L * 256/255 + 3 input
 * bytes and L >= 4, or it is the last (literals only); 2 * blk bounds it. */
static uint64_t span_input_max(uint64_t blk)
{
	return 2 * blk + 64 + LZ4I_PAD;
}

/* The walker's window: a valid block of out_len bytes has less input
 * than this, so a small array gets a small window. */
static size_t walk_window(uint64_t out_len, const struct lz4_opts *o)
{
	uint64_t most = 2 * out_len + 64;
	return most < o->walk_buf ? (size_t)most : o->walk_buf;
}

/* What an index holds before any read: the struct and its tables. */
static uint64_t fixed_memory(uint64_t nblocks, uint64_t npoints)
{
	return sizeof(af_lz4_index) + (nblocks + 1) * sizeof(struct lz4_seq) +
	       nblocks + npoints * sizeof(unsigned char *);
}

uint64_t lz4_bound_opts(uint64_t out_len, const struct lz4_opts *o)
{
	uint64_t nblocks = div_up(out_len, o->block);
	uint64_t npoints = div_up(out_len, o->span);
	uint64_t hist = out_len < LZ4I_HISTORY ? out_len : LZ4I_HISTORY;
	uint64_t blk = out_len < o->block ? out_len : o->block;
	uint64_t entries = nblocks < o->cache_blocks ? nblocks : o->cache_blocks;
	/* windows; each entry with the input buffer of its decoder; the
	 * frontier's history, walker and input buffer */
	return fixed_memory(nblocks, npoints) +
	       (npoints ? npoints - 1 : 0) * hist +
	       entries * (hist + blk + span_input_max(blk)) +
	       (nblocks ? hist + walk_window(out_len, o) + LZ4I_PAD +
			  span_input_max(blk) : 0);
}

uint64_t af_lz4_index_bound(uint64_t decoded_size)
{
	struct lz4_opts o;
	lz4_default_opts(&o);
	return lz4_bound_opts(decoded_size, &o);
}

/* Free @p ix and all it holds, its lock and condition if made. */
static void index_free(af_lz4_index *ix, bool lock, bool cond)
{
	for (unsigned i = 0; ix->cache && i < ix->o.cache_blocks; i++) {
		free(ix->cache[i].buf);
		free(ix->cache[i].in);
	}
	for (uint64_t p = 0; ix->points && p <= ix->npoints; p++)
		free(ix->points[p]);
	lz4_walker_free(&ix->walk);
	if (cond) {
		afo_destroy(&ix->order);
		pthread_cond_destroy(&ix->cond);
	}
	if (lock)
		pthread_mutex_destroy(&ix->lock);
	free(ix->finbuf);
	free(ix->fhist);
	free(ix->cache);
	free(ix->points);
	free(ix->zeros);
	free(ix->recs);
	free(ix);
}

/* Sizes this index can handle: far past any real file, and small enough
 * that no offset sum below can overflow. */
#define LZ4I_MAX_LEN (1ULL << 60)

af_status lz4_index_open_opts(af_lz4_index **out, const af_source *src,
			      uint64_t base, uint64_t in_len, uint64_t out_len,
			      const struct lz4_opts *o, af_error *err)
{
	*out = NULL;
	if (!src || !src->pread || !o || o->block < 1 || o->block > (64u << 20) ||
	    o->span < o->block || o->span % o->block != 0 ||
	    o->cache_blocks < 1 || o->walk_buf < 64)
		return af_error_set(err, AF_E_INVAL, AF_NO_OFFSET,
				    "bad LZ4 index options");
	uint64_t end, most;
	if (af_add(base, in_len, &end) || end > src->size)
		return af_error_set(err, AF_E_TRUNCATED, src->size,
				    "the source has %" PRIu64 " bytes, too few for an LZ4 block of %"
				    PRIu64 " bytes at byte %" PRIu64,
				    src->size, in_len, base);
	/* no sequence expands more than 255 times (ra.c refuses such
	 * headers too): checked here before tables are sized from out_len */
	if (in_len > LZ4I_MAX_LEN || out_len > LZ4I_MAX_LEN ||
	    af_mul(in_len, 255, &most) || out_len > most)
		return af_error_set(err, AF_E_CORRUPT, base,
				    "no LZ4 block of %" PRIu64 " bytes decodes to %" PRIu64
				    " bytes", in_len, out_len);
	af_lz4_index *ix = calloc(1, sizeof(*ix));
	if (!ix)
		return af_error_set(err, AF_E_NOMEM, base, "no memory for an LZ4 index");
	ix->src = *src;
	ix->base = base;
	ix->in_len = in_len;
	ix->out_len = out_len;
	ix->o = *o;
	ix->hist = out_len < LZ4I_HISTORY ? (size_t)out_len : LZ4I_HISTORY;
	ix->blk_cap = out_len < o->block ? (size_t)out_len : o->block;
	ix->nblocks = div_up(out_len, o->block);
	ix->npoints = div_up(out_len, o->span);
	ix->refs = 1;
	/* calloc: the pages of records never reached are never touched */
	ix->recs = calloc(ix->nblocks + 1, sizeof(*ix->recs));
	ix->zeros = calloc(ix->nblocks + 1, 1);
	ix->points = calloc(ix->npoints + 1, sizeof(*ix->points));
	ix->cache = calloc(o->cache_blocks, sizeof(*ix->cache));
	ix->fhist = malloc(ix->hist ? ix->hist : 1);
	bool locks = pthread_mutex_init(&ix->lock, NULL) == 0;
	bool cond = locks && pthread_cond_init(&ix->cond, NULL) == 0;
	if (cond && afo_init(&ix->order) != 0) {
		pthread_cond_destroy(&ix->cond);
		cond = false;
	}
	af_status st = AF_OK;
	if (!ix->recs || !ix->zeros || !ix->points || !ix->cache || !ix->fhist ||
	    !cond)
		st = af_error_set(err, AF_E_NOMEM, base, "no memory for an LZ4 index");
	if (st == AF_OK && ix->nblocks)
		st = lz4_walker_init(&ix->walk, &ix->src, base, in_len, out_len,
				     walk_window(out_len, o), err);
	if (st != AF_OK) {
		index_free(ix, locks, cond);
		return st;
	}
	ix->recs[0] = (struct lz4_seq){ .in = 0, .out = 0,
					.safe = ix->walk.safe };
	ix->recs[ix->nblocks] = (struct lz4_seq){ .in = in_len, .out = out_len,
						  .end_in = in_len };
	ix->mem = (size_t)fixed_memory(ix->nblocks, ix->npoints) + ix->hist +
		  (ix->nblocks ? walk_window(out_len, o) + LZ4I_PAD : 0);
	*out = ix;
	return AF_OK;
}

af_status af_lz4_index_open(af_lz4_index **out, const af_array *a,
			    const af_source *src, af_error *err)
{
	*out = NULL;
	if (!a || a->compression != AF_COMP_LZ4)
		return af_error_set(err, AF_E_INVAL, AF_NO_OFFSET,
				    "an LZ4 index needs an LZ4-compressed array");
	struct lz4_opts o;
	lz4_default_opts(&o);
	return lz4_index_open_opts(out, src, a->data_offset, a->stored_size,
				   a->data_size, &o, err);
}

af_lz4_index *af_lz4_index_hold(af_lz4_index *ix)
{
	if (ix)
		__atomic_fetch_add(&ix->refs, 1, __ATOMIC_RELAXED);
	return ix;
}

void af_lz4_index_close(af_lz4_index *ix)
{
	if (!ix || __atomic_sub_fetch(&ix->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	if (ix->pool)
		lz4_walk_stop(ix);
	index_free(ix, true, true);
}

uint64_t af_lz4_index_decoded(af_lz4_index *ix)
{
	if (!ix)
		return 0;
	pthread_mutex_lock(&ix->lock);
	uint64_t n = ix->decoded;
	pthread_mutex_unlock(&ix->lock);
	return n;
}

af_status af_lz4_index_set_pool(af_lz4_index *ix, af_pool *pool,
				af_error *err)
{
	pthread_mutex_lock(&ix->lock);
	bool fresh = ix->frontier == 0 && !ix->frontier_busy && !ix->pool;
	if (fresh)
		ix->pool = pool;
	pthread_mutex_unlock(&ix->lock);
	return fresh ? AF_OK : af_error_set(err, AF_E_INVAL, AF_NO_OFFSET,
					    "a pool is set only before the "
					    "first read");
}

bool lz4_index_fits(const af_lz4_index *ix, const af_array *a)
{
	return a->compression == AF_COMP_LZ4 && ix->base == a->data_offset &&
	       ix->in_len == a->stored_size && ix->out_len == a->data_size;
}

uint64_t af_lz4_index_size(const af_lz4_index *ix)
{
	return ix ? ix->out_len : 0;
}

size_t af_lz4_index_memory(af_lz4_index *ix)
{
	return ix ? __atomic_load_n(&ix->mem, __ATOMIC_RELAXED) : 0;
}

size_t lz4_index_points(af_lz4_index *ix)
{
	pthread_mutex_lock(&ix->lock);
	size_t n = 0;
	for (uint64_t p = 1; p < ix->npoints; p++)
		n += ix->points[p] != NULL;
	pthread_mutex_unlock(&ix->lock);
	return n;
}

/* The entry holding block @p b, or NULL (lock held). */
static struct lz4_entry *cache_find(af_lz4_index *ix, uint64_t b)
{
	for (unsigned i = 0; i < ix->o.cache_blocks; i++) {
		struct lz4_entry *e = &ix->cache[i];
		if (e->state != ENT_EMPTY && e->blk == b)
			return e;
	}
	return NULL;
}

/*
 * Whether valid entry @p e should go before valid entry @p than: a block
 * decoded for a reader who has not read it yet (fresh) goes last, and of
 * those the last decoded first: the block before it stays, so decoding it
 * again costs one block, where the first one decoded would be decoded
 * again from the access point before it (up to a span).
 */
static bool evict_first(const struct lz4_entry *e,
			const struct lz4_entry *than)
{
	if (e->fresh != than->fresh)
		return !e->fresh;
	return e->fresh ? e->used > than->used : e->used < than->used;
}

struct lz4_entry *lz4_cache_claim(af_lz4_index *ix, uint64_t b, bool ahead,
				     af_status *st, af_error *err)
{
	struct lz4_entry *pick = NULL;
	for (unsigned i = 0; i < ix->o.cache_blocks; i++) {
		struct lz4_entry *e = &ix->cache[i];
		if (e->state == ENT_FILLING || (ahead && e->fresh))
			continue;
		if (e->state == ENT_EMPTY) {
			pick = e;
			break;
		}
		if (!pick || evict_first(e, pick))
			pick = e;
	}
	*st = AF_OK;
	if (!pick)
		return NULL;
	if (!pick->buf) {
		size_t n = ix->hist + ix->blk_cap;
		pick->buf = malloc(n);
		if (!pick->buf) {
			*st = af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
					   "no memory for a decoded LZ4 block");
			return NULL;
		}
		lz4_mem_add(ix, n);
	}
	pick->state = ENT_FILLING;
	pick->blk = b;
	pick->fresh = ahead;
	return pick;
}

void lz4_entry_done(af_lz4_index *ix, struct lz4_entry *e, af_status st)
{
	e->state = st == AF_OK ? ENT_VALID : ENT_EMPTY;
	e->used = ++ix->tick;
	pthread_cond_broadcast(&ix->cond);
}

af_status lz4_fail_locked(af_lz4_index *ix, af_status st, const af_error *mine,
			     af_error *err)
{
	if (st == AF_E_CORRUPT && ix->sticky == AF_OK) {
		ix->sticky = st;
		ix->sticky_err = *mine;
	}
	if (err)
		*err = *mine;
	return st;
}

/*
 * Decode block @p b, behind the frontier, from the nearest cached block or
 * access point before it (lock held; dropped while decoding). Returns
 * AF_OK also when it only waited: the caller looks again.
 */
static af_status decode_behind(af_lz4_index *ix, uint64_t b, af_error *err)
{
	uint64_t per_point = ix->o.span / ix->o.block;
	uint64_t start = b / per_point * per_point;
	const unsigned char *from = NULL;
	for (unsigned i = 0; i < ix->o.cache_blocks; i++) {
		const struct lz4_entry *c = &ix->cache[i];
		if (c->state == ENT_VALID && c->blk >= start && c->blk < b) {
			start = c->blk + 1;
			from = c->buf;
		}
	}
	uint64_t x = lz4_blk_start(ix, start);
	size_t h = lz4_hist_before(ix, x);
	/* the history: the end of that block ([hist | block], the block
	 * ending at x), or the point at x */
	if (from)
		from += ix->hist + (x - lz4_blk_start(ix, start - 1)) - h;
	else if (h)
		from = ix->points[x / ix->o.span];
	af_status st;
	struct lz4_entry *e = lz4_cache_claim(ix, b, false, &st, err);
	if (!e) {
		if (st == AF_OK)
			pthread_cond_wait(&ix->cond, &ix->lock);
		return st;
	}
	unsigned char *dst = e->buf + ix->hist;
	/* the claim may have taken that very entry: its bytes are still
	 * there, and may overlap where they go */
	if (h)
		memmove(dst - h, from, h);
	pthread_mutex_unlock(&ix->lock);
	af_error mine;
	af_error_clear(&mine);
	st = AF_OK;
	for (uint64_t k = start; k <= b && st == AF_OK; k++) {
		uint64_t xk = lz4_blk_start(ix, k), yk = lz4_blk_end(ix, k);
		size_t cap0 = e->incap;
		st = lz4_span_decode(&ix->walk, dst, xk, yk,
				     &ix->recs[k], &ix->recs[k + 1], ix->zeros[k],
				     NULL, &e->in, &e->incap, &mine);
		lz4_mem_add(ix, e->incap - cap0);
		if (st == AF_OK && k < b) {
			/* the next block's history: the end of this one */
			size_t h2 = lz4_hist_before(ix, yk);
			memmove(dst - h2, dst + (yk - xk) - h2, h2);
		}
	}
	pthread_mutex_lock(&ix->lock);
	lz4_entry_done(ix, e, st);
	if (st == AF_OK)
		ix->decoded += lz4_blk_end(ix, b) - lz4_blk_start(ix, start);
	return st == AF_OK ? AF_OK : lz4_fail_locked(ix, st, &mine, err);
}

/* Bytes [skip, skip + n) of block @p b into @p out. */
static af_status read_in_block(af_lz4_index *ix, uint64_t b, size_t skip,
			       unsigned char *out, size_t n, af_error *err)
{
	af_status st = AF_OK;
	pthread_mutex_lock(&ix->lock);
	for (;;) {
		if (ix->sticky != AF_OK) {
			if (err)
				*err = ix->sticky_err;
			st = ix->sticky;
			break;
		}
		uint64_t x = lz4_blk_start(ix, b);
		if (b < ix->frontier &&
		    lz4_in_literals(&ix->recs[b], x + skip, x + skip + n)) {
			/* bytes of the source as they are: no decoding */
			const struct lz4_seq *r = &ix->recs[b];
			lz4_decode_ahead(ix, b);
			pthread_mutex_unlock(&ix->lock);
			return af_source_read_exact(&ix->src, out, n,
						    ix->base + r->lit_in +
						    (x + skip - r->out), err);
		}
		struct lz4_entry *e = cache_find(ix, b);
		if (e && e->state == ENT_VALID) {
			memcpy(out, e->buf + ix->hist + skip, n);
			e->used = ++ix->tick;
			e->fresh = false;
			lz4_decode_ahead(ix, b);
			break;
		}
		if (e || (b >= ix->frontier && ix->frontier_busy)) {
			pthread_cond_wait(&ix->cond, &ix->lock);
			continue;
		}
		st = b >= ix->frontier ? lz4_frontier_run(ix, b, err) :
					 decode_behind(ix, b, err);
		if (st != AF_OK)
			break;
	}
	pthread_mutex_unlock(&ix->lock);
	return st;
}

af_status af_lz4_index_read(af_lz4_index *ix, void *buf, size_t len,
			    uint64_t off, af_error *err)
{
	uint64_t end;
	if (!ix || (!buf && len) || af_add(off, len, &end) || end > ix->out_len)
		return af_error_set(err, AF_E_RANGE, AF_NO_OFFSET,
				    "LZ4 read of %zu bytes at %" PRIu64
				    " is outside the decoded data",
				    len, off);
	/* during the first pass, long reads go in offset order */
	size_t flight = AFO_NONE;
	if (afo_counts(off, len, ix->out_len)) {
		pthread_mutex_lock(&ix->lock);
		if (ix->frontier < ix->nblocks)
			flight = afo_enter(&ix->order, &ix->lock, off, len,
					   ix->out_len);
		pthread_mutex_unlock(&ix->lock);
	}
	unsigned char *out = buf;
	af_status st = AF_OK;
	while (len > 0 && st == AF_OK) {
		uint64_t b = off / ix->o.block;
		size_t skip = (size_t)(off - lz4_blk_start(ix, b));
		uint64_t left = lz4_blk_end(ix, b) - off;
		size_t n = left < len ? (size_t)left : len;
		st = read_in_block(ix, b, skip, out, n, err);
		out += n;
		off += n;
		len -= n;
	}
	if (flight != AFO_NONE) {
		pthread_mutex_lock(&ix->lock);
		afo_leave(&ix->order, flight);
		pthread_mutex_unlock(&ix->lock);
	}
	return st;
}
