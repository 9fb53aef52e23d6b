/* SPDX-License-Identifier: MIT */
/*
 * Random access into one raw deflate stream: opening and closing, the read
 * loop that serves each read from the cache or from a cursor it claims
 * (continuing one that is close behind, else restarting the least recently
 * used one at the nearest access point), and memory accounting.
 *
 * One mutex per af_inflate guards the shared state; it is never held while
 * inflating, only for bookkeeping and copies of at most one cache block.
 */
#include <stdlib.h>
#include <string.h>

#include "../bytes_i.h"
#include "inflate_read_i.h"
#include "inflate_cursor_i.h"
#include "inflate_engine_i.h"
#include "inflate_saved_i.h"
#include "inflate_cache_i.h"

void afz_mem_add(af_inflate *z, size_t n)
{
	__atomic_fetch_add(&z->mem, n, __ATOMIC_RELAXED);
}

void afz_mem_sub(af_inflate *z, size_t n)
{
	__atomic_fetch_sub(&z->mem, n, __ATOMIC_RELAXED);
}

void af_inflate_default_opts(struct af_inflate_opts *o)
{
	o->engine = AF_INFLATE_AUTO;
	o->span = AF_INFLATE_SPAN;
	o->piece = AFZ_PIECE;
	o->cursors = AF_INFLATE_CURSORS;
	o->block = AF_INFLATE_BLOCK;
	o->cache_blocks = AF_INFLATE_CACHE_BLOCKS;
	o->inbuf = AFZ_INBUF;
	o->index_div = AFZ_INDEX_DIV;
	o->seek_chunk = AFZ_SEEK_CHUNK;
	o->scout_chunk = AFZ_SCOUT_CHUNK;
	o->seek_limit = AF_INFLATE_SEEK_LIMIT;
	o->save_span = AF_INFLATE_SAVE_SPAN;
	o->save_late = AFZ_REFINE_AT_CLOSE;
	o->save_quiet_ns = AFZ_SAVE_QUIET_NS;
	o->save_quiet_max_ns = AFZ_SAVE_QUIET_MAX_NS;
}

bool af_inflate_engine_available(af_inflate_engine e)
{
#ifdef AF_HAVE_ISAL
	return e == AF_INFLATE_AUTO || e == AF_INFLATE_ZLIB ||
	       e == AF_INFLATE_ISAL;
#else
	return e == AF_INFLATE_AUTO || e == AF_INFLATE_ZLIB;
#endif
}

const char *af_inflate_engine_name(af_inflate_engine e)
{
	switch (e) {
	case AF_INFLATE_AUTO:
		return "auto";
	case AF_INFLATE_ZLIB:
		return "zlib";
	case AF_INFLATE_ISAL:
		return "isa-l";
	}
	return "unknown";
}

/* zlib's inflate state and its lazily allocated window, with our headers */
#define AFZ_ZLIB_COST (8192u + AF_INFLATE_WINDOW + 64u)

size_t af_inflate_fixed_memory(const struct af_inflate_opts *o)
{
	/* ISA-L's state or zlib's: the sum bounds either */
	return sizeof(af_inflate) +
	       o->cursors * (sizeof(struct afz_cursor) + AFZ_ZLIB_COST +
			     afz_isal_state_size() + o->inbuf + o->block +
			     AFZ_SCRATCH) +
	       o->cache_blocks * (sizeof(struct afz_cache_ent) + o->block) +
	       o->inbuf + 512; /* input read ahead (inflate_input.c) */
}

af_status af_inflate_open(af_inflate **out, const af_source *compressed,
			  uint64_t uncomp_size, uint32_t crc, af_error *err)
{
	struct af_inflate_opts o;
	af_inflate_default_opts(&o);
	return af_inflate_open_opts(out, compressed, uncomp_size, crc, &o, err);
}

af_status af_inflate_open_engine(af_inflate **out, const af_source *compressed,
				 uint64_t uncomp_size, uint32_t crc,
				 af_inflate_engine engine, af_error *err)
{
	struct af_inflate_opts o;
	af_inflate_default_opts(&o);
	o.engine = engine;
	return af_inflate_open_opts(out, compressed, uncomp_size, crc, &o, err);
}

af_status af_inflate_open_opts(af_inflate **out, const af_source *compressed,
			       uint64_t uncomp_size, uint32_t crc,
			       const struct af_inflate_opts *o, af_error *err)
{
	*out = NULL;
	if (!compressed || !compressed->pread || o->span == 0 ||
	    o->piece > (1u << 30) ||
	    o->cursors == 0 || o->cursors > 64 || o->block == 0 ||
	    o->block > (1u << 30) || o->cache_blocks > 4096 || o->inbuf == 0 ||
	    o->inbuf > (1u << 30) || (unsigned)o->engine > AF_INFLATE_ISAL)
		return af_error_set(err, AF_E_INVAL, AF_NO_OFFSET,
				    "invalid inflate source or options");
	if (!af_inflate_engine_available(o->engine))
		return af_error_set(err, AF_E_UNSUPPORTED, AF_NO_OFFSET,
				    "this build inflates without %s",
				    af_inflate_engine_name(o->engine));
	af_inflate *z = calloc(1, sizeof(*z));
	if (!z)
		goto nomem;
	z->src = compressed;
	z->size = uncomp_size;
	z->crc = crc;
	z->o = *o;
	if (!z->o.piece)
		z->o.piece = AFZ_PIECE;
	if (!z->o.seek_chunk)
		z->o.seek_chunk = AFZ_SEEK_CHUNK;
	if (!z->o.seek_limit)
		z->o.seek_limit = AF_INFLATE_SEEK_LIMIT;
	if (!z->o.scout_chunk)
		z->o.scout_chunk = AFZ_SCOUT_CHUNK;
	z->engine = o->engine;
	if (z->engine == AF_INFLATE_AUTO)
		z->engine = af_inflate_engine_available(AF_INFLATE_ISAL)
				    ? AF_INFLATE_ISAL
				    : AF_INFLATE_ZLIB;
	z->mem = sizeof(*z);
	z->cursors = calloc(o->cursors, sizeof(*z->cursors));
	if (!z->cursors)
		goto nomem_z;
	afz_mem_add(z, o->cursors * sizeof(*z->cursors));
	if (o->cache_blocks) {
		z->cache = calloc(o->cache_blocks, sizeof(*z->cache));
		if (!z->cache)
			goto nomem_cursors;
		afz_mem_add(z, o->cache_blocks * sizeof(*z->cache));
	}
	if (pthread_mutex_init(&z->lock, NULL) != 0)
		goto nomem_cache;
	if (pthread_cond_init(&z->idle, NULL) != 0)
		goto nomem_lock;
	if (afo_init(&z->order) != 0)
		goto nomem_idle;
	*out = z;
	return AF_OK;

nomem_idle:
	pthread_cond_destroy(&z->idle);
nomem_lock:
	pthread_mutex_destroy(&z->lock);
nomem_cache:
	free(z->cache);
nomem_cursors:
	free(z->cursors);
nomem_z:
	free(z);
nomem:
	return af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
			    "out of memory opening a deflate stream");
}

void af_inflate_close(af_inflate *z)
{
	if (!z)
		return;
	if (z->pool)
		afz_ahead_stop(z);
	afz_retired_free(z, true);
	for (size_t i = 0; !z->windows_file && i < z->npoints; i++)
		free(z->points[i].window);
	free(z->windows_file);
	free(z->points);
	free(z->piece_first);
	free(z->piece_crc);
	free(z->piece_ok);
	free(z->grid);
	for (unsigned i = 0; i < z->o.cursors; i++)
		afz_cursor_free(z, &z->cursors[i]);
	free(z->cursors);
	afz_cache_free(z);
	afo_destroy(&z->order);
	pthread_cond_destroy(&z->idle);
	pthread_mutex_destroy(&z->lock);
	free(z);
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	uint64_t r;
	return af_add(a, b, &r) ? UINT64_MAX : r;
}

const struct afz_point *afz_nearest_point(const af_inflate *z, uint64_t off)
{
	size_t lo = 0, hi = z->npoints;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (z->points[mid].out <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &z->points[lo - 1] : NULL;
}

struct afz_claim {
	struct afz_cursor *c;
	bool restart;
	af_inflate_engine engine;
	bool at_point;
	struct afz_point pt; /* copied: the array may move once unlocked */
	uint64_t next_mark;
	bool from_start;
};

/*
 * Choose how to serve [off, end): continue an idle cursor that is behind
 * off and no farther than the nearest point (or than a span, while it is
 * on a CRC-checking pass from 0), else restart
 * the least recently used idle cursor at the nearest point. Returns false
 * when the caller should wait: every cursor is busy, or a busy one will
 * soon cover off (the cache) or stop just before it, and either no idle
 * cursor may go on to off or the one that may is more than a span behind
 * where the busy one started. Lock held.
 */
static bool pick(af_inflate *z, uint64_t off, uint64_t end,
		 struct afz_claim *cl)
{
	const struct afz_point *pt = afz_nearest_point(z, off);
	uint64_t pt_out = pt ? pt->out : 0;
	struct afz_cursor *best = NULL, *victim = NULL;
	bool wait = false;
	uint64_t wait_from = 0;

	for (unsigned i = 0; i < z->o.cursors; i++) {
		struct afz_cursor *c = &z->cursors[i];
		if (c->busy) {
			/* it will pass through off, or stop just short of it;
			 * at a point itself restarting costs no more (read-
			 * ahead inflates the spans after it meanwhile) */
			if (c->claim_pos <= off && (off > pt_out || !pt) &&
			    (off < c->busy_end || c->busy_end >= pt_out)) {
				wait = true;
				if (c->claim_pos > wait_from)
					wait_from = c->claim_pos;
			}
			continue;
		}
		/* restarting is cheap, so a nearer point wins, unless the
		 * cursor is checking the CRC of a pass from 0 */
		if (c->live && c->pos <= off &&
		    (c->pos >= pt_out ||
		     (c->from_start && !z->crc_ok &&
		      off - c->pos <= z->o.span)) &&
		    (!best || c->pos > best->pos))
			best = c;
		if (!victim ||
		    (victim->live && (!c->live || c->used < victim->used)))
			victim = c;
	}
	/* before the pass's first point, any live cursor may go on to off:
	 * one left just past a member's header, taken to a read ahead of the
	 * busy pass, would inflate again what the pass is inflating; waiting
	 * costs at most the pass's claim */
	if (best && wait && wait_from > best->pos &&
	    off - best->pos > z->o.span)
		best = NULL;
	cl->restart = !best;
	cl->c = best ? best : victim;
	if (!cl->c || (!best && wait))
		return false;

	struct afz_cursor *c = cl->c;
	c->busy = true;
	c->used = ++z->tick;
	if (cl->restart) {
		c->live = false;
		cl->at_point = pt != NULL;
		if (pt)
			cl->pt = *pt;
		c->claim_pos = pt_out;
		c->on_pass = !pt && !z->crc_ok;
	} else {
		c->claim_pos = c->pos;
	}
	uint64_t last = z->npoints ? z->points[z->npoints - 1].out : 0;
	cl->next_mark = z->loaded ? UINT64_MAX : sat_add(last, z->o.span);
	cl->from_start = !z->crc_ok;
	cl->engine = z->isal_refused ? AF_INFLATE_ZLIB : z->engine;
	/* the cursor stops at the end of the cache block holding end - 1 */
	uint64_t bstart = (end - 1) - (end - 1) % z->o.block;
	c->busy_end = z->size - bstart < z->o.block ? z->size
						     : bstart + z->o.block;
	return true;
}

/* Lock held. */
static void release(af_inflate *z, struct afz_cursor *c, af_status st,
		    const af_error *e)
{
	c->busy = false;
	afz_retired_free(z, false);
	c->on_pass = st == AF_OK && c->from_start;
	if (st == AF_OK) {
		c->live = true;
		c->pos = c->out;
		if (c->crc_checked && !z->crc_ok) {
			z->crc_ok = true;
			__atomic_store_n(&z->checked_ns, afp_now_ns(),
					 __ATOMIC_RELAXED);
		}
	} else {
		c->live = false;
		if (c->fatal && z->sticky == AF_OK) {
			z->sticky = st;
			z->sticky_err = *e;
		}
	}
	pthread_cond_broadcast(&z->idle);
}

af_status afz_direct_locked(af_inflate *z, unsigned char *p, uint64_t off,
			   uint64_t end, uint64_t *at, bool yield,
			   af_error *err)
{
	af_error e;
	af_error_clear(&e);
	af_status st = AF_OK;
	for (;;) {
		if (z->sticky) {
			st = z->sticky;
			e = z->sticky_err;
			break;
		}
		if (*at >= end)
			break;
		size_t n = afz_cache_get(z, p + (*at - off),
					 (size_t)(end - *at), *at);
		if (n) {
			*at += n;
			continue;
		}
		struct afz_claim cl;
		if (!pick(z, *at, end, &cl)) {
			if (yield)
				break;
			pthread_cond_wait(&z->idle, &z->lock);
			continue;
		}
		pthread_mutex_unlock(&z->lock);
		if (cl.restart)
			st = afz_cursor_start(z, cl.c, cl.at_point ? &cl.pt : NULL,
					      cl.engine, cl.next_mark,
					      cl.from_start, &e);
		else
			cl.c->next_mark = cl.next_mark < cl.c->next_mark
						  ? cl.c->next_mark
						  : cl.next_mark;
		if (st == AF_OK)
			st = afz_cursor_serve(z, cl.c, p + (*at - off), *at, end,
					      &e);
		pthread_mutex_lock(&z->lock);
		release(z, cl.c, st, &e);
		if (st)
			break;
		*at = end;
	}
	if (st && err)
		*err = e;
	return st;
}

af_status afz_read_direct(af_inflate *z, unsigned char *p, size_t len,
			  uint64_t off, af_error *err)
{
	uint64_t at = off;
	pthread_mutex_lock(&z->lock);
	af_status st = afz_direct_locked(z, p, off, off + len, &at, false, err);
	pthread_mutex_unlock(&z->lock);
	return st;
}

size_t afz_order_enter(af_inflate *z, uint64_t off, size_t len)
{
	if (!afo_counts(off, len, z->size))
		return AFO_NONE; /* a random reader's: not even the lock */
	pthread_mutex_lock(&z->lock);
	size_t flight = z->crc_ok || z->loaded
				? AFO_NONE
				: afo_enter(&z->order, &z->lock, off, len,
					    z->size);
	pthread_mutex_unlock(&z->lock);
	return flight;
}

void afz_order_leave(af_inflate *z, size_t flight)
{
	if (flight == AFO_NONE)
		return;
	pthread_mutex_lock(&z->lock);
	afo_leave(&z->order, flight);
	pthread_mutex_unlock(&z->lock);
}

af_status af_inflate_read(af_inflate *z, void *buf, size_t len, uint64_t off,
			  size_t *nread, af_error *err)
{
	*nread = 0;
	if (off >= z->size || len == 0)
		len = 0;
	else if (len > z->size - off)
		len = (size_t)(z->size - off);
	if (!z->pool && z->saver && len >= AFZ_SEQ_MIN)
		afp_note_stream(z->saver);
	size_t flight = afz_order_enter(z, off, len);
	af_status st = z->pool ? afz_ahead_read(z, buf, len, off, err)
			       : afz_read_direct(z, buf, len, off, err);
	afz_order_leave(z, flight);
	if (st == AF_OK)
		*nread = len;
	return st;
}

void af_inflate_set_saver(af_inflate *z, af_pool *saver)
{
	z->saver = saver;
}

size_t af_inflate_memory(const af_inflate *z)
{
	return __atomic_load_n(&z->mem, __ATOMIC_RELAXED);
}

af_inflate_engine af_inflate_engine_used(af_inflate *z)
{
	pthread_mutex_lock(&z->lock);
	af_inflate_engine e = z->isal_refused ? AF_INFLATE_ZLIB : z->engine;
	pthread_mutex_unlock(&z->lock);
	return e;
}

size_t af_inflate_points(const af_inflate *z)
{
	pthread_mutex_t *lock = (pthread_mutex_t *)&z->lock;
	pthread_mutex_lock(lock);
	size_t n = z->npoints;
	pthread_mutex_unlock(lock);
	return n;
}

uint64_t af_inflate_point_out(af_inflate *z, size_t i)
{
	pthread_mutex_lock(&z->lock);
	uint64_t out = i < z->npoints ? z->points[i].out : UINT64_MAX;
	pthread_mutex_unlock(&z->lock);
	return out;
}

size_t af_inflate_index_memory(af_inflate *z)
{
	pthread_mutex_lock(&z->lock);
	size_t n = z->index_bytes;
	pthread_mutex_unlock(&z->lock);
	return n;
}

bool af_inflate_point_compressed(af_inflate *z, size_t i)
{
	pthread_mutex_lock(&z->lock);
	bool zipped = i < z->npoints && z->points[i].zlen != 0;
	pthread_mutex_unlock(&z->lock);
	return zipped;
}
