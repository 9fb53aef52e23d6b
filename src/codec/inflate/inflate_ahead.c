/* SPDX-License-Identifier: MIT */
/*
 * Read-ahead of an af_inflate on a pool (af_inflate_set_pool): telling
 * sequential readers from random ones, cutting the output ahead of them
 * into units (spans between access points, or stretches of the pass from
 * 0), queueing those on the pool, and serving reads from the units'
 * buffers. Units are inflated by afz_read_direct like any read, so
 * cursors, the engines, the checks of a loaded index and the sticky
 * errors are those of a read without a pool.
 *
 * Locking: z->lock guards the slots, the streams and the counters. A pool
 * job holds no lock while it inflates; a reader copies out of a READY slot
 * unlocked, pinning it. The pool's lock is taken under z->lock (to queue
 * or take back a job), never the other way round: a decoder short of
 * budget only try-locks another's lock (reclaim).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "inflate_read_i.h"
#include "inflate_cursor_i.h"
#include "inflate_engine_i.h"
#include "inflate_index_i.h"

/* Reads in a row that make a reader sequential. */
#define AFZ_SEQ_HITS 3u
/* A unit's buffer is a multiple of this, so that units of a stream, whose
 * spans differ by a few KiB, fit in the buffers their slots kept. */
#define AFZ_SLOT_ROUND (256u << 10)

static unsigned pool_threads(const af_inflate *z)
{
	unsigned t = af_pool_threads(z->pool);
	return t ? t : 1;
}

/* Empty @p s, keeping its buffer and budget for its next unit (lock held;
 * s not pinned, not QUEUED nor RUNNING). */
static void slot_clear(struct afz_slot *s)
{
	s->state = AFZ_SLOT_EMPTY;
	s->pins = 0;
	s->consumed = 0;
}

/* Empty @p s, free its buffer and give its budget back (as slot_clear). */
static void slot_release(af_inflate *z, struct afz_slot *s)
{
	slot_clear(s);
	if (s->buf) {
		free(s->buf);
		afz_mem_sub(z, (size_t)s->held);
	}
	if (s->held)
		afp_unreserve(z->pool, s->held);
	s->buf = NULL;
	s->held = 0;
}

/* Whether @p s holds budget no reader needs: a unit done and not being
 * copied from, or an empty slot's kept buffer. */
static bool idle(const struct afz_slot *s)
{
	if (s->state == AFZ_SLOT_EMPTY)
		return s->held != 0;
	return (s->state == AFZ_SLOT_READY || s->state == AFZ_SLOT_FAILED) &&
	       !s->pins;
}

/* Another decoder is short of budget: give back every idle unit, if our
 * lock is free right now. Called under the pool's lock. */
static bool reclaim(struct afp_holder *h)
{
	af_inflate *z = (af_inflate *)((char *)h - offsetof(af_inflate, holder));
	if (pthread_mutex_trylock(&z->lock) != 0)
		return false;
	bool any = false;
	for (unsigned i = 0; i < AFZ_SLOTS; i++) {
		if (idle(&z->slots[i])) {
			slot_release(z, &z->slots[i]);
			any = true;
		}
	}
	pthread_mutex_unlock(&z->lock);
	return any;
}

af_status af_inflate_set_pool(af_inflate *z, af_pool *pool, af_error *err)
{
	if (!pool)
		return af_error_set(err, AF_E_INVAL, AF_NO_OFFSET, "no pool");
	unsigned want = z->o.cursors + (af_pool_threads(pool) ?
					 af_pool_threads(pool) : 1) + 2;
	if (want > 64)
		want = 64;
	struct afz_slot *slots = calloc(AFZ_SLOTS, sizeof(*slots));
	struct afz_cursor *cur = NULL;
	if (!slots)
		goto nomem;
	pthread_mutex_lock(&z->lock);
	if (z->tick || z->pool) {
		pthread_mutex_unlock(&z->lock);
		free(slots);
		return af_error_set(err, AF_E_INVAL, AF_NO_OFFSET,
				    "a pool is set only before the first read");
	}
	if (want > z->o.cursors) {
		/* no cursor was used yet: nothing points into the array */
		cur = realloc(z->cursors, want * sizeof(*cur));
		if (!cur) {
			pthread_mutex_unlock(&z->lock);
			free(slots);
			goto nomem;
		}
		memset(cur + z->o.cursors, 0,
		       (want - z->o.cursors) * sizeof(*cur));
		afz_mem_add(z, (want - z->o.cursors) * sizeof(*cur));
		z->cursors = cur;
		z->o.cursors = want;
	}
	for (unsigned i = 0; i < AFZ_SLOTS; i++)
		slots[i].z = z;
	z->slots = slots;
	afz_mem_add(z, AFZ_SLOTS * sizeof(*slots));
	z->pool = pool;
	z->holder.reclaim = reclaim;
	pthread_mutex_unlock(&z->lock);
	afp_holder_add(pool, &z->holder);
	return AF_OK;
nomem:
	return af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
			    "no memory for inflate read-ahead");
}

void af_inflate_ahead_stats(af_inflate *z, af_inflate_ahead *out)
{
	pthread_mutex_lock(&z->lock);
	out->pool = z->units_pool;
	out->taken = z->units_taken;
	out->own = z->units_own;
	out->chained = z->units_chained;
	out->inputs_ahead = __atomic_load_n(&z->inputs_ahead, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&z->lock);
}

/*
 * Count the read [off, end) in the stream it continues, or start a new
 * stream in place of the least recently used one. Returns the stream if
 * its reader is sequential now, else NULL. Lock held.
 */
static struct afz_stream *note_read(af_inflate *z, uint64_t off, uint64_t end)
{
	struct afz_stream *hit = NULL, *lru = &z->streams[0];
	for (unsigned i = 0; i < AFZ_STREAMS; i++) {
		struct afz_stream *s = &z->streams[i];
		if (s->hits && off <= s->next + AFZ_NEAR &&
		    off + AFZ_NEAR >= s->next &&
		    (off == s->next || end - off >= AFZ_SEQ_MIN ||
		     s->hits >= AFZ_SEQ_HITS)) {
			hit = s;
			break;
		}
		if (s->used < lru->used)
			lru = s;
	}
	if (!hit) {
		hit = lru;
		hit->hits = 0;
		hit->next = 0;
	}
	hit->hits++;
	if (end > hit->next)
		hit->next = end;
	hit->used = ++z->tick;
	return hit->hits >= AFZ_SEQ_HITS || end - off > z->o.span ? hit : NULL;
}

/* Where the pass from 0 goes on from: an idle cursor on it, or byte 0
 * when none started yet. Lock held. */
static bool pass_pos(const af_inflate *z, uint64_t *pos)
{
	if (z->crc_ok || z->loaded)
		return false;
	bool any = false;
	for (unsigned i = 0; i < z->o.cursors; i++) {
		const struct afz_cursor *c = &z->cursors[i];
		if (c->busy && c->on_pass)
			return false; /* it is moving: ask again later */
		if (!c->busy && c->live && c->from_start &&
		    (!any || c->pos > *pos)) {
			*pos = c->pos;
			any = true;
		}
	}
	if (!any && z->npoints == 0) {
		*pos = 0;
		any = true;
	}
	return any;
}

struct afz_unit {
	uint64_t start, end;
	bool pass, check;
	uint32_t crc;
};

/*
 * Whether point @p i starts a unit: a pass's own point (they are o.span
 * apart), or a loaded index's first past a multiple of o.span. A saved
 * index also has points between the pass's (inflate_refine.c), and units
 * of those short spans left a sequential reader too little inflated
 * ahead (8 units); a stream that takes its saved points after its pass
 * keeps its units, or its reader's slots would overlap new ones. Lock
 * held.
 */
static bool unit_head(const af_inflate *z, size_t i)
{
	return z->points[i].head;
}

/*
 * The unit holding output byte @p x, if it can be inflated ahead: the
 * spans between the unit heads around it when the unit's end is known and
 * its CRC-32 can be checked, else, past the last point, the next stretch
 * of the pass from 0 if x is in it or just behind it (then the unit starts
 * after x). Lock held.
 */
static bool unit_at(af_inflate *z, uint64_t x, struct afz_unit *u)
{
	memset(u, 0, sizeof(*u));
	const struct afz_point *p = afz_nearest_point(z, x);
	size_t n = z->npoints, k = p ? (size_t)(p - z->points) + 1 : 0;
	if (k < n || z->loaded || z->crc_ok) {
		size_t lo = k, hi = k;
		while (lo && !unit_head(z, lo - 1))
			lo--;
		while (hi < n && !unit_head(z, hi))
			hi++;
		k = lo;
		u->start = k ? z->points[k - 1].out : 0;
		u->end = hi < n ? z->points[hi].out : z->size;
		if (!z->loaded) {
			/* checked against what the pass from 0 recorded;
			 * a loaded index's spans are checked as inflated */
			if ((k && !z->points[k - 1].has_crc) ||
			    (hi < n ? !z->points[hi].has_crc : !z->crc_ok))
				return false;
			uint32_t a = k ? z->points[k - 1].crc_before : 0;
			uint32_t b = hi < n ? z->points[hi].crc_before : z->crc;
			u->check = true;
			u->crc = afz_span_crc(NULL, a, b, u->end - u->start);
		}
	} else {
		/* bytes just behind the pass (its cursor stops at the end
		 * of a cache block) come from the cache: the unit ahead of
		 * them is still worth making */
		uint64_t pos = 0;
		if (!pass_pos(z, &pos) || x >= pos + z->o.span)
			return false;
		u->start = pos;
		u->end = z->size - pos < z->o.span ? z->size : pos + z->o.span;
		u->pass = true;
	}
	return u->end > x && u->end - u->start <= AF_INFLATE_UNIT_MAX;
}

/* The slot holding output byte @p x, or NULL. Lock held. */
static struct afz_slot *slot_at(af_inflate *z, uint64_t x)
{
	for (unsigned i = 0; i < AFZ_SLOTS; i++) {
		struct afz_slot *s = &z->slots[i];
		if (s->state != AFZ_SLOT_EMPTY && s->start <= x && x < s->end)
			return s;
	}
	return NULL;
}

static bool pass_outstanding(const af_inflate *z)
{
	for (unsigned i = 0; i < AFZ_SLOTS; i++) {
		const struct afz_slot *s = &z->slots[i];
		if (s->pass && (s->state == AFZ_SLOT_QUEUED ||
				s->state == AFZ_SLOT_RUNNING))
			return true;
	}
	return false;
}

/* Give back idle units outside [from, to) and kept buffers: the least
 * recently used one (all of them with @p all). Whether one was. Lock
 * held. */
static bool evict(af_inflate *z, uint64_t from, uint64_t to, bool all)
{
	struct afz_slot *v = NULL;
	bool any = false;
	for (unsigned i = 0; i < AFZ_SLOTS; i++) {
		struct afz_slot *s = &z->slots[i];
		if (!idle(s) || (s->state != AFZ_SLOT_EMPTY && s->end > from &&
				 s->start < to))
			continue;
		if (all) {
			slot_release(z, s);
			any = true;
		} else if (!v || s->used < v->used) {
			v = s;
		}
	}
	if (v)
		slot_release(z, v);
	return any || v;
}

/* An empty slot, one whose kept buffer holds @p n bytes first, then one
 * with none; NULL if none is empty. Lock held. */
static struct afz_slot *slot_empty(af_inflate *z, uint64_t n)
{
	struct afz_slot *fits = NULL, *bare = NULL, *any = NULL;
	for (unsigned i = 0; i < AFZ_SLOTS; i++) {
		struct afz_slot *s = &z->slots[i];
		if (s->state != AFZ_SLOT_EMPTY)
			continue;
		if (s->held >= n && !fits)
			fits = s;
		else if (!s->held && !bare)
			bare = s;
		else if (!any)
			any = s;
	}
	return fits ? fits : bare ? bare : any;
}

/* An empty slot for unit @p u, at least its bytes reserved in the pool, or
 * NULL. The window [from, to) being filled is kept. Lock held. */
static struct afz_slot *slot_new(af_inflate *z, const struct afz_unit *u,
				 uint64_t from, uint64_t to)
{
	uint64_t n = u->end - u->start;
	struct afz_slot *s = slot_empty(z, n);
	if (!s && evict(z, from, to, false))
		s = slot_empty(z, n);
	if (!s)
		return NULL;
	if (s->held < n) {
		/* its kept buffer is too short (n <= AF_INFLATE_UNIT_MAX:
		 * rounding it up cannot wrap) */
		uint64_t want = (n + AFZ_SLOT_ROUND - 1) / AFZ_SLOT_ROUND *
				AFZ_SLOT_ROUND;
		slot_release(z, s);
		if (!afp_reserve(z->pool, &z->holder, want) &&
		    !(evict(z, from, to, true) &&
		      afp_reserve(z->pool, &z->holder, want)))
			return NULL;
		s->held = want;
	}
	s->start = u->start;
	s->end = u->end;
	s->pass = u->pass;
	s->check = u->check;
	s->crc = u->crc;
	s->consumed = 0;
	s->pins = 0;
	s->used = ++z->tick;
	s->st = AF_OK;
	af_error_clear(&s->err);
	return s;
}

static void job_run(struct afp_job *job);

/*
 * Make units from @p from on, up to max(threads, 1) + 1 of them; queue
 * them on the pool, except that with @p mine the unit holding @p from, if
 * it had to be made, is returned RUNNING for the caller to inflate itself,
 * and with @p pass (a pool thread that just ended a unit of the pass from
 * 0) a unit that continues the pass is set in *pass RUNNING for it, if
 * none is yet. Lock held.
 */
static struct afz_slot *schedule(af_inflate *z, uint64_t from, bool mine,
				 struct afz_slot **pass)
{
	unsigned want = pool_threads(z) + 1;
	struct afz_slot *own = NULL;
	uint64_t x = from;
	for (unsigned i = 0; i < want && x < z->size && !z->closing; i++) {
		struct afz_slot *s = slot_at(z, x);
		if (s) {
			x = s->end;
			continue;
		}
		struct afz_unit u;
		if (!unit_at(z, x, &u) || (u.pass && pass_outstanding(z)))
			break;
		bool inline_unit = mine && x == from && u.start <= from;
		if (!inline_unit && z->jobs >= want)
			break;
		s = slot_new(z, &u, from, u.end);
		if (!s)
			break;
		s->job.run = job_run;
		z->jobs++;
		if (inline_unit) {
			s->state = AFZ_SLOT_RUNNING;
			z->units_own++;
			own = s;
		} else if (u.pass && pass && !*pass) {
			s->state = AFZ_SLOT_RUNNING;
			z->units_pool++;
			z->units_chained++;
			*pass = s;
		} else {
			s->state = AFZ_SLOT_QUEUED;
			afp_submit(z->pool, &s->job);
		}
		x = u.end;
	}
	return own;
}

/* Keep every sequential stream's window full (after a unit ended, so the
 * pass from 0 goes on; @p pass as for schedule). Lock held. */
static void schedule_streams(af_inflate *z, struct afz_slot **pass)
{
	for (unsigned i = 0; i < AFZ_STREAMS; i++) {
		const struct afz_stream *s = &z->streams[i];
		if (s->hits >= AFZ_SEQ_HITS && s->next < z->size)
			schedule(z, s->next, false, pass);
	}
}

/* Inflate unit @p s (RUNNING, owned by the caller; lock not held). With
 * @p next (a pool thread), the unit of the pass from 0 that this one's end
 * made due, if any, is set there RUNNING for the caller to go on with. */
static void unit_run(af_inflate *z, struct afz_slot *s,
		     struct afz_slot **next)
{
	size_t len = (size_t)(s->end - s->start);
	af_error e;
	af_error_clear(&e);
	af_status st = AF_OK;
	if (!s->buf) {
		s->buf = malloc((size_t)s->held);
		if (s->buf) {
			afz_mem_add(z, (size_t)s->held);
			__atomic_add_fetch(&z->unit_buffers, 1,
					   __ATOMIC_RELAXED);
		} else {
			st = afz_nomem(&e, "read-ahead buffer");
		}
	}
	if (st == AF_OK)
		st = afz_read_direct(z, s->buf, len, s->start, &e);
	bool bad = false;
	if (st == AF_OK && s->check) {
		uint32_t got = afz_crc32(0, s->buf, len);
		if (got != s->crc) {
			bad = true;
			st = af_error_set(&e, AF_E_CORRUPT, AF_NO_OFFSET,
					  "output bytes %llu to %llu inflate to "
					  "CRC-32 %08x now, %08x in the pass "
					  "from 0", ull(s->start), ull(s->end),
					  (unsigned)got, (unsigned)s->crc);
		}
	}
	pthread_mutex_lock(&z->lock);
	if (bad && z->sticky == AF_OK) {
		/* the member no longer inflates as the pass that checked it */
		z->sticky = st;
		z->sticky_err = e;
	}
	s->st = st;
	s->err = e;
	s->state = st == AF_OK ? AFZ_SLOT_READY : AFZ_SLOT_FAILED;
	s->used = ++z->tick;
	z->jobs--;
	schedule_streams(z, s->pass && st == AF_OK ? next : NULL);
	pthread_cond_broadcast(&z->idle);
	pthread_mutex_unlock(&z->lock);
}

static void job_run(struct afp_job *job)
{
	struct afz_slot *s =
		(struct afz_slot *)((char *)job - offsetof(struct afz_slot, job));
	af_inflate *z = s->z;
	pthread_mutex_lock(&z->lock);
	s->state = AFZ_SLOT_RUNNING;
	z->units_pool++;
	pthread_mutex_unlock(&z->lock);
	/* The pass from 0 is serial: the unit that goes on from this one is
	 * inflated by this thread, never queued, so the cursor's state, input
	 * and window stay in this core's caches (handed from thread to thread
	 * at every unit, the pass ran 10-20 % slower) */
	while (s) {
		struct afz_slot *next = NULL;
		unit_run(z, s, &next);
		s = next;
	}
}

/* The start of the first slot inside (at, end), or end. Lock held. */
static uint64_t next_slot(const af_inflate *z, uint64_t at, uint64_t end)
{
	for (unsigned i = 0; i < AFZ_SLOTS; i++) {
		const struct afz_slot *s = &z->slots[i];
		if (s->state != AFZ_SLOT_EMPTY && s->start > at &&
		    s->start < end)
			end = s->start;
	}
	return end;
}

af_status afz_ahead_read(af_inflate *z, unsigned char *buf, size_t len,
			 uint64_t off, af_error *err)
{
	af_status st = AF_OK;
	uint64_t end = off + len, at = off;
	pthread_mutex_lock(&z->lock);
	struct afz_stream *seq = len ? note_read(z, off, end) : NULL;
	if (seq)
		afp_note_stream(z->pool);
	/* a unit this thread inflates: made for it, or taken back */
	struct afz_slot *mine = seq ? schedule(z, off, true, NULL) : NULL;
	for (;;) {
		if (z->sticky) {
			st = z->sticky;
			if (err)
				*err = z->sticky_err;
			break;
		}
		if (at >= end)
			break;
		struct afz_slot *s = mine ? mine : slot_at(z, at);
		if (!s) {
			uint64_t stop = next_slot(z, at, end);
			st = afz_direct_locked(z, buf, off, stop, &at, true, err);
			if (st)
				break;
			if (at < stop) {
				/* a busy cursor will produce these bytes: by
				 * the time it is done they may be in a unit
				 * (made for another reader of this stream: as
				 * a read of them inflated them again from the
				 * point before them once the cursor had gone
				 * past), and a sequential reader schedules
				 * its own */
				pthread_cond_wait(&z->idle, &z->lock);
				if (seq && !mine)
					mine = schedule(z, at, true, NULL);
			}
			continue;
		}
		if (s->state == AFZ_SLOT_QUEUED) {
			/* never wait behind the queue: inflate it here */
			if (!afp_take(z->pool, &s->job)) {
				/* a thread just took it */
				pthread_cond_wait(&z->idle, &z->lock);
				continue;
			}
			s->state = AFZ_SLOT_RUNNING;
			z->units_taken++;
			mine = s;
		}
		if (s == mine) {
			mine = NULL;
			/* pinned until this read copies from it: an idle unit
			 * may be evicted for another stream's read-ahead, and
			 * readers sharing a small budget would otherwise take
			 * turns inflating each other's units without end */
			s->pins++;
			pthread_mutex_unlock(&z->lock);
			unit_run(z, s, NULL);
			pthread_mutex_lock(&z->lock);
			s->pins--;
			continue;
		}
		if (s->state == AFZ_SLOT_RUNNING) {
			pthread_cond_wait(&z->idle, &z->lock);
			continue;
		}
		if (s->state == AFZ_SLOT_FAILED) {
			/* a failure that condemns the member is sticky (above);
			 * any other is this read's to meet, or not, as it
			 * would without read-ahead */
			slot_clear(s);
			continue;
		}
		uint64_t stop = s->end < end ? s->end : end;
		s->pins++;
		s->used = ++z->tick;
		pthread_mutex_unlock(&z->lock);
		memcpy(buf + (at - off), s->buf + (at - s->start),
		       (size_t)(stop - at));
		pthread_mutex_lock(&z->lock);
		s->pins--;
		s->consumed += stop - at;
		/* read through: the kernel keeps these bytes now */
		if (s->consumed >= s->end - s->start && !s->pins)
			slot_clear(s);
		at = stop;
	}
	if (mine) {
		/* the member failed (sticky) before this read inflated the
		 * unit made for it: give the unit back, or afz_ahead_stop
		 * waits for a RUNNING slot nobody runs */
		z->jobs--;
		slot_clear(mine);
		pthread_cond_broadcast(&z->idle);
	}
	pthread_mutex_unlock(&z->lock);
	return st;
}

void afz_ahead_stop(af_inflate *z)
{
	pthread_mutex_lock(&z->lock);
	z->closing = true;
	for (;;) {
		bool busy = false;
		for (unsigned i = 0; i < AFZ_SLOTS; i++) {
			struct afz_slot *s = &z->slots[i];
			if (s->state == AFZ_SLOT_QUEUED &&
			    afp_take(z->pool, &s->job)) {
				z->jobs--;
				s->state = AFZ_SLOT_FAILED;
			}
			busy |= s->state == AFZ_SLOT_QUEUED ||
				s->state == AFZ_SLOT_RUNNING;
		}
		if (!busy)
			break;
		pthread_cond_wait(&z->idle, &z->lock);
	}
	for (unsigned i = 0; i < AFZ_SLOTS; i++) {
		z->slots[i].pins = 0;
		slot_release(z, &z->slots[i]);
	}
	pthread_mutex_unlock(&z->lock);
	/* no unit runs now: no cursor is in use or queues input reads */
	for (unsigned i = 0; i < z->o.cursors; i++)
		afz_input_drop(z, &z->cursors[i]);
	afp_holder_remove(z->pool, &z->holder);
	free(z->slots);
	afz_mem_sub(z, AFZ_SLOTS * sizeof(*z->slots));
	z->slots = NULL;
	z->pool = NULL;
}
