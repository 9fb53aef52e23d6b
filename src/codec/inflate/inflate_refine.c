/* SPDX-License-Identifier: MIT */
/*
 * The points a saved index holds: the pass's own, and more between them.
 *
 * A pass from 0 records a point every o.span (1.5 MiB) at most, held to
 * the memory budget with the windows as they are. A random read inflates
 * from the nearest point before it, half a span on average: 2.1 ms on
 * float32 data. A saved index can afford more: its windows are sparse
 * (inflate_sparse.c), a few hundred bytes on such data. So before saving,
 * each span is inflated once more, from its point, by a private stream
 * that records a point every o.save_span; those points, their CRC-32
 * before (the span's point's, run on over the bytes) and sparse windows
 * join the pass's in the file, within the same budget.
 *
 * This runs on the thread that saves (the pool's background thread in the
 * daemon), once per member and index: about one more pass of CPU. It
 * takes the core only when streams are quiet: run alongside the first
 * pass of an .npz's next array, it slowed that pass by 10-70 %. A member
 * closing while it runs (af_inflate_index_hurry) stops waiting, and stops
 * adding points once more than AFZ_REFINE_AT_CLOSE of output is left, so
 * a close never waits long.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "inflate_cursor_i.h"
#include "inflate_engine_i.h"
#include "inflate_saved_i.h"

/* Output inflated per call of the private cursor. */
#define REFINE_CHUNK (256u << 10)

void af_inflate_index_hurry(af_inflate *z)
{
	__atomic_store_n(&z->hurry, true, __ATOMIC_RELAXED);
}

void afz_saved_free(struct afz_saved *s)
{
	for (size_t i = 0; s->pts && i < s->n; i++)
		if (s->own[i])
			free(s->pts[i].window);
	free(s->pts);
	free(s->own);
	*s = (struct afz_saved){ 0 };
}

/* Append @p p (its window owned when @p own). False: out of memory (the
 * window is freed if owned). */
static bool saved_add(struct afz_saved *s, const struct afz_point *p,
		      bool own)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		struct afz_point *np = realloc(s->pts, cap * sizeof(*np));
		if (np)
			s->pts = np;
		bool *no = np ? realloc(s->own, cap * sizeof(*no)) : NULL;
		if (!no) {
			if (own)
				free(p->window);
			return false;
		}
		s->own = no;
		s->cap = cap;
	}
	s->own[s->n] = own;
	s->pts[s->n++] = *p;
	return true;
}

/* @p p with its window made sparse where that is smaller; *own says
 * whether the result's window is a new buffer. */
static struct afz_point sparse_point(af_inflate *z, const struct afz_point *p,
				     bool *own)
{
	struct afz_point q = *p;
	unsigned zlen;
	unsigned char *w = afz_sparse_window(z, p, &zlen);
	*own = w != NULL;
	if (w) {
		q.window = w;
		q.zlen = zlen;
	}
	return q;
}

static uint64_t stored_of(const struct afz_point *p)
{
	return (uint64_t)(p->zlen ? p->zlen : p->wlen) + AFZ_SAVED_RECORD;
}

/* Whether a closing member's export should do no more work for the
 * output from @p a on (af_inflate_index_hurry). */
static bool hurried_at(const af_inflate *z, uint64_t a)
{
	return __atomic_load_n(&z->hurry, __ATOMIC_RELAXED) &&
	       z->size - a > (z->o.save_late ? z->o.save_late
					     : AFZ_REFINE_AT_CLOSE);
}

/* Wait while streams on @p z's pool (or saver) are read, unless z is
 * closing or its pass was checked long enough ago: the export is work no
 * read waits for (afp_note_stream), but it must be done some time. */
static void wait_for_quiet(af_inflate *z)
{
	uint64_t quiet = z->o.save_quiet_ns ? z->o.save_quiet_ns
					    : AFZ_SAVE_QUIET_NS;
	uint64_t most = z->o.save_quiet_max_ns ? z->o.save_quiet_max_ns
					       : AFZ_SAVE_QUIET_MAX_NS;
	uint64_t from = __atomic_load_n(&z->checked_ns, __ATOMIC_RELAXED);
	af_pool *p = z->pool ? z->pool : z->saver;
	bool counted = false;
	while (p && !__atomic_load_n(&z->hurry, __ATOMIC_RELAXED) &&
	       afp_now_ns() - from < most && !afp_streams_quiet(p, quiet)) {
		if (!counted)
			__atomic_fetch_add(&z->export_waits, 1,
					   __ATOMIC_RELAXED);
		counted = true;
		const struct timespec poll = {
			.tv_nsec = (long)AFZ_SAVE_QUIET_POLL_NS
		};
		nanosleep(&poll, NULL);
	}
}

/* What refining one span needs. */
struct refine {
	af_inflate *z, *r;       /* the member's stream, the private one */
	struct afz_cursor *c;    /* r's cursor */
	unsigned char *buf;      /* REFINE_CHUNK bytes of output */
	uint64_t budget;         /* bytes the added points may store */
	uint64_t added;          /* bytes they store */
	uint64_t last_cost;      /* what the last one cost */
};

/* Whether a point at output @p out costing @p cost fits: the budget is
 * spread over the output, so points land all along it, not only at its
 * start. */
static bool fits(const struct refine *f, uint64_t out, uint64_t cost)
{
	if (f->budget == UINT64_MAX)
		return true;
	unsigned __int128 share = (unsigned __int128)f->budget * out /
				  f->z->size;
	return f->added + cost <= share;
}

/* Add @p p (recorded by r at output p->out, inside the bytes at buf that
 * begin at @p from, whose CRC-32 before is @p crc) to @p s if it fits the
 * budget. Its window moves over or is freed by the caller (NULL then).
 * False when out of memory. */
static bool take_point(struct refine *f, struct afz_saved *s,
		       struct afz_point *p, uint32_t crc, uint64_t from)
{
	/* the last point's cost as a guess: making a window sparse
	 * inflates 64 KiB, a waste for a point that will not fit */
	if (!fits(f, p->out, f->last_cost))
		return true;
	bool own;
	struct afz_point q = sparse_point(f->z, p, &own);
	uint64_t cost = stored_of(&q);
	f->last_cost = cost;
	if (!fits(f, p->out, cost)) {
		if (own)
			free(q.window);
		return true;
	}
	if (!own) {
		/* r's own copy of the window moves over */
		p->window = NULL;
		own = true;
	}
	q.crc_before = afz_crc32(crc, f->buf, (size_t)(p->out - from));
	q.has_crc = true;
	/* read-ahead units stay the pass's spans once these join them */
	q.head = false;
	f->added += cost;
	return saved_add(s, &q, own);
}

/* Move the points r recorded since its seed (index @p keep) that lie in
 * the @p n bytes of output at buf, [from, from + n), into @p s, in order,
 * before output @p end: each gets the CRC-32 of the output before it
 * from @p crc (that of output [0, from)), a sparse window, and a place
 * only if the budget has room. Points past from + n (ISA-L finds a
 * boundary in output it has not handed out yet) stay for the next call.
 * False when out of memory. */
static bool take_points(struct refine *f, struct afz_saved *s, size_t keep,
			uint64_t from, uint32_t crc, uint64_t n, uint64_t end)
{
	af_inflate *r = f->r;
	bool ok = true;
	size_t later = keep;
	for (size_t i = keep; i < r->npoints; i++) {
		struct afz_point *p = &r->points[i];
		if (p->out > from + n) {
			r->points[later++] = *p;
			continue;
		}
		if (ok && p->out >= from && p->out < end &&
		    (!s->n || p->out > s->pts[s->n - 1].out))
			ok = take_point(f, s, p, crc, from);
		free(p->window);
	}
	r->npoints = later;
	r->index_bytes = 0;
	return ok;
}

/* Free the windows r recorded past index @p keep and forget them. */
static void drop_points(af_inflate *r, size_t keep)
{
	for (size_t i = keep; i < r->npoints; i++)
		free(r->points[i].window);
	r->npoints = keep;
	r->index_bytes = 0;
}

/*
 * Inflate output [a, b) again from @p seed (NULL: the stream start, a ==
 * 0), whose CRC-32 of [0, a) is @p crc_a, adding the points r records on
 * the way to @p s. False when out of memory; any other failure just adds
 * no more points in this span (the pass's points still make a whole
 * index, and its pieces' CRC-32s check every byte read through it).
 */
static bool refine_span(struct refine *f, struct afz_saved *s,
			const struct afz_point *seed, uint64_t a, uint64_t b,
			uint32_t crc_a)
{
	af_inflate *r = f->r;
	af_error err;
	size_t keep = 0;
	if (seed) {
		/* where take_over restarts if ISA-L gives up; the window is
		 * z's, never freed by r (keep stays below npoints' drops) */
		r->points[0] = *seed;
		keep = 1;
	}
	r->npoints = keep;
	af_status st = afz_cursor_start(r, f->c, seed, r->engine,
					a + r->o.span, false, &err);
	uint32_t crc = crc_a;
	uint64_t at = a;
	bool ok = true;
	while (!st && ok && at < b) {
		uint64_t n = b - at < REFINE_CHUNK ? b - at : REFINE_CHUNK;
		wait_for_quiet(f->z);
		st = afz_cursor_produce(r, f->c, f->buf, n, &err);
		if (!st) {
			ok = take_points(f, s, keep, at, crc, n, b);
			crc = afz_crc32(crc, f->buf, (size_t)n);
			at += n;
		}
	}
	drop_points(r, keep);
	r->npoints = 0;
	return ok && st != AF_E_NOMEM;
}

/* The bytes points added to the pass's @p own may store: the file's
 * share for windows (af_inflate_index_max_bytes) less what those store. */
static uint64_t added_budget(const af_inflate *z, const struct afz_saved *own)
{
	if (!z->o.index_div)
		return UINT64_MAX;
	uint64_t all = z->size / z->o.index_div, held = 0;
	for (size_t i = 0; i < own->n; i++)
		held += stored_of(&own->pts[i]);
	return all > held ? all - held : 0;
}

/* Points every o.save_span between the pass's (@p own, sparse, n of
 * them) into @p fine: the pass's borrowed (own[i] false), each span's
 * added ones after its point. False when out of memory or the private
 * stream cannot be opened. */
static bool refine_all(af_inflate *z, const struct afz_saved *own,
		       struct afz_saved *fine)
{
	struct af_inflate_opts ro = z->o;
	ro.span = z->o.save_span;
	ro.index_div = 0;
	ro.cursors = 1;
	ro.cache_blocks = 0;
	pthread_mutex_lock(&z->lock);
	ro.engine = z->isal_refused ? AF_INFLATE_ZLIB : z->engine;
	pthread_mutex_unlock(&z->lock);
	struct refine f = { .z = z, .budget = added_budget(z, own),
			    .last_cost = AFZ_SAVED_RECORD };
	f.buf = malloc(REFINE_CHUNK);
	bool ok = f.buf && af_inflate_open_opts(&f.r, z->src, z->size, z->crc,
						&ro, NULL) == AF_OK;
	if (ok) {
		f.r->points = malloc(16 * sizeof(*f.r->points));
		f.r->cap = f.r->points ? 16 : 0;
		ok = f.r->points != NULL;
		f.c = &f.r->cursors[0];
	}
	for (size_t k = 0; ok && k <= own->n; k++) {
		const struct afz_point *seed = k ? &own->pts[k - 1] : NULL;
		uint64_t a = seed ? seed->out : 0;
		uint64_t b = k < own->n ? own->pts[k].out : z->size;
		if (seed)
			ok = saved_add(fine, seed, false);
		if (ok && !hurried_at(z, a))
			ok = refine_span(&f, fine, seed, a, b,
					 seed ? seed->crc_before : 0);
	}
	af_inflate_close(f.r);
	free(f.buf);
	return ok;
}

af_status afz_saved_points(af_inflate *z, struct afz_saved *s, af_error *err)
{
	*s = (struct afz_saved){ 0 };
	pthread_mutex_lock(&z->lock);
	size_t np = z->npoints;
	struct afz_point *zp = malloc((np ? np : 1) * sizeof(*zp));
	if (zp)
		memcpy(zp, z->points, np * sizeof(*zp));
	pthread_mutex_unlock(&z->lock);
	if (!zp)
		return afz_nomem(err, "index file");
	/* the pass's points, sparse: kept whatever the budget leaves */
	struct afz_saved own = { 0 };
	bool ok = true;
	for (size_t i = 0; ok && i < np; i++) {
		/* each sparse window inflates 64 KiB: not for a closing
		 * member's far points */
		bool mine = false;
		wait_for_quiet(z);
		struct afz_point q = hurried_at(z, zp[i].out)
					     ? zp[i]
					     : sparse_point(z, &zp[i], &mine);
		ok = saved_add(&own, &q, mine);
	}
	free(zp);
	if (!ok) {
		afz_saved_free(&own);
		return afz_nomem(err, "index file");
	}
	own.base = np;
	struct afz_saved fine = { 0 };
	if (!z->o.save_span || z->o.save_span >= z->o.span || !np ||
	    !refine_all(z, &own, &fine)) {
		/* no finer points: the pass's alone still make an index */
		afz_saved_free(&fine);
		*s = own;
		return AF_OK;
	}
	/* fine borrows own's windows: hand over those own holds */
	for (size_t i = 0, k = 0; i < fine.n && k < own.n; i++)
		if (fine.pts[i].out == own.pts[k].out) {
			fine.own[i] = own.own[k];
			own.own[k++] = false;
		}
	afz_saved_free(&own);
	fine.base = np;
	*s = fine;
	return AF_OK;
}

void afz_retired_free(af_inflate *z, bool all)
{
	if (!z->nretired)
		return;
	for (unsigned i = 0; !all && i < z->o.cursors; i++)
		if (z->cursors[i].busy)
			return;
	for (size_t i = 0; i < z->nretired; i++)
		free(z->retired[i]);
	free(z->retired);
	afz_mem_sub(z, z->retired_bytes);
	z->retired = NULL;
	z->nretired = z->retired_bytes = 0;
}

void afz_use_saved(af_inflate *z, struct afz_saved *sv)
{
	if (z->loaded || z->windows_file || z->retired ||
	    z->npoints != sv->base || sv->n <= z->npoints)
		return;
	struct afz_point *pts = malloc(sv->n * sizeof(*pts));
	unsigned char **old = malloc(z->npoints * sizeof(*old));
	if (!pts || !old) {
		free(pts);
		free(old);
		return;
	}
	/* a pass point whose window sv borrows keeps it; the others retire
	 * (both lists are in output order) */
	size_t nold = 0, j = 0;
	uint64_t old_bytes = 0, new_bytes = 0;
	for (size_t i = 0; i < z->npoints; i++) {
		const struct afz_point *p = &z->points[i];
		while (j < sv->n && sv->pts[j].out < p->out)
			j++;
		if (j < sv->n && !sv->own[j] && sv->pts[j].window == p->window)
			continue;
		old[nold++] = p->window;
		old_bytes += p->zlen ? p->zlen : p->wlen;
	}
	size_t held = 0;
	for (size_t i = 0; i < sv->n; i++) {
		pts[i] = sv->pts[i];
		unsigned stored = pts[i].zlen ? pts[i].zlen : pts[i].wlen;
		if (sv->own[i])
			new_bytes += stored;
		sv->own[i] = false;
		held += stored + sizeof(*pts);
	}
	afz_mem_sub(z, z->cap * sizeof(*pts));
	afz_mem_add(z, new_bytes + sv->n * sizeof(*pts));
	free(z->points);
	z->points = pts;
	z->npoints = z->cap = sv->n;
	z->index_bytes = held;
	z->retired = old;
	z->nretired = nold;
	z->retired_bytes = old_bytes;
	afz_retired_free(z, false);
}
