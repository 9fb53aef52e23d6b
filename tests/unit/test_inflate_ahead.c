/* SPDX-License-Identifier: MIT */
/* Tests for src/codec/pool.c and inflate_ahead.c: the pool's queue and
 * budget, and read-ahead of an af_inflate on it. Most cases use a pool of
 * 0 threads, which runs nothing by itself: what is queued, taken back or
 * run is then decided by the test alone (no timing). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "af_test.h"
#include "arrayfs/arrayfs.h"
#include "../../src/codec/inflate/inflate_read_i.h"
#include "../../src/codec/pool_i.h"
#include "pool_gate.h"

#define KIB (1u << 10)
#define SPAN (128u * KIB)

/* A deflate stream of pseudo-random small numbers (like np.savez of
 * uint8 0..15), level 0 for stored blocks that can be altered in place. */
struct stream {
	unsigned char *plain, *comp;
	size_t plen, clen;
	uint32_t crc;
	af_source src;
};

static void make_stream(struct stream *s, size_t n, int level, uint64_t seed)
{
	s->plain = malloc(n);
	ck_assert_ptr_nonnull(s->plain);
	for (size_t i = 0; i < n; i++)
		s->plain[i] = (unsigned char)(aft_rand(&seed) & 15);
	s->plen = n;
	s->crc = (uint32_t)crc32_z(0, s->plain, n);
	s->comp = aft_deflate_raw(s->plain, n, level, 8, &s->clen);
	af_source_init_mem(&s->src, s->comp, s->clen);
}

static void free_stream(struct stream *s)
{
	free(s->plain);
	free(s->comp);
}

/* An af_inflate over @p s with a point every @p span and, in its saved
 * index, every @p save_span, on @p pool. */
static af_inflate *open_spans_on(struct stream *s, af_pool *pool,
				 uint64_t span, uint64_t save_span)
{
	struct af_inflate_opts o;
	af_inflate_default_opts(&o);
	o.span = span;
	o.save_span = save_span;
	o.index_div = 0;
	o.block = 16 * KIB;
	o.cache_blocks = 8;
	af_inflate *z;
	af_error err;
	ck_assert_int_eq(af_inflate_open_opts(&z, &s->src, s->plen, s->crc, &o,
					      &err), AF_OK);
	if (pool)
		ck_assert_int_eq(af_inflate_set_pool(z, pool, &err), AF_OK);
	return z;
}

/* An af_inflate over @p s with a point every SPAN, on @p pool. */
static af_inflate *open_on(struct stream *s, af_pool *pool)
{
	return open_spans_on(s, pool, SPAN, AF_INFLATE_SAVE_SPAN);
}

static af_pool *manual_pool(uint64_t budget)
{
	af_pool *p;
	af_error err;
	ck_assert_int_eq(af_pool_open(&p, 0, budget, &err), AF_OK);
	return p;
}

/* Read [off, off + len) and compare with the plain bytes. */
static af_status read_at(af_inflate *z, const struct stream *s, uint64_t off,
			 size_t len, af_error *err)
{
	unsigned char *buf = malloc(len ? len : 1);
	size_t n = 0;
	af_status st = af_inflate_read(z, buf, len, off, &n, err);
	if (st == AF_OK) {
		size_t want = off >= s->plen ? 0 :
			      len < s->plen - off ? len : s->plen - off;
		ck_assert_uint_eq(n, want);
		ck_assert_msg(memcmp(buf, s->plain + off, n) == 0,
			      "bytes differ at %llu", (unsigned long long)off);
	}
	free(buf);
	return st;
}

static void read_ok(af_inflate *z, const struct stream *s, uint64_t off,
		    size_t len)
{
	af_error err;
	af_status st = read_at(z, s, off, len, &err);
	ck_assert_msg(st == AF_OK, "read at %llu: %s", (unsigned long long)off,
		      err.msg);
}

/* One pass from 0 (no pool), so every point and its CRC are known. */
static void pass(af_inflate *z, const struct stream *s)
{
	for (uint64_t off = 0; off < s->plen; off += 100 * KIB)
		read_ok(z, s, off, 100 * KIB);
}

/* A pass from 0, then what it left queued in @p p run. */
static void pass_and_drain(af_inflate *z, const struct stream *s, af_pool *p)
{
	pass(z, s);
	while (af_pool_run_one(p))
		;
}

/* An af_inflate over @p s on @p p whose pass from 0 is done. */
static af_inflate *open_passed(struct stream *s, af_pool *p)
{
	af_inflate *z = open_on(s, p);
	pass_and_drain(z, s, p);
	return z;
}

/* Close @p z, which must leave nothing queued or held in @p p, then the
 * pool and the stream. */
static void close_all(af_inflate *z, af_pool *p, struct stream *s)
{
	af_inflate_close(z);
	ck_assert_uint_eq(af_pool_queued(p), 0);
	ck_assert_uint_eq(af_pool_held(p), 0);
	af_pool_close(p);
	free_stream(s);
}

static int ran;
static void count_run(struct afp_job *job)
{
	(void)job;
	__atomic_add_fetch(&ran, 1, __ATOMIC_RELAXED);
}

START_TEST(pool_queue_is_fifo_and_jobs_can_be_taken_back)
{
	af_pool *p = manual_pool(1 << 20);
	struct afp_job j[3];
	ran = 0;
	for (int i = 0; i < 3; i++) {
		j[i] = (struct afp_job){ .run = count_run };
		afp_submit(p, &j[i]);
	}
	ck_assert_uint_eq(af_pool_queued(p), 3);
	ck_assert(afp_take(p, &j[1]));     /* still queued: ours again */
	ck_assert(!afp_take(p, &j[1]));    /* not twice */
	ck_assert_uint_eq(af_pool_queued(p), 2);
	ck_assert(af_pool_run_one(p));     /* the oldest: j[0] */
	ck_assert(!j[0].queued);
	ck_assert(!afp_take(p, &j[0]));    /* it ran: not takeable */
	ck_assert(af_pool_run_one(p));
	ck_assert(!af_pool_run_one(p));
	ck_assert_int_eq(ran, 2);
	af_pool_close(p);

	/* threads run whatever is queued before they stop */
	af_error err;
	ck_assert_int_eq(af_pool_open(&p, 2, 1 << 20, &err), AF_OK);
	ck_assert_uint_eq(af_pool_threads(p), 2);
	struct afp_job many[50];
	ran = 0;
	for (int i = 0; i < 50; i++) {
		many[i] = (struct afp_job){ .run = count_run };
		afp_submit(p, &many[i]);
	}
	af_pool_close(p);
	/* the threads ran them one at a time each; ran is read after join */
	ck_assert_int_eq(ran >= 1, 1);
	ck_assert_int_le(ran, 50);
	ck_assert_int_eq(af_pool_open(&p, AF_POOL_MAX_THREADS + 1, 1, &err),
			 AF_E_INVAL);
}
END_TEST

static void count_work(struct afp_waitable *w)
{
	(void)w;
	__atomic_add_fetch(&ran, 1, __ATOMIC_RELAXED);
}

/* A waitable job is queued once however often it is submitted; settling
 * runs it on the caller's thread while it is still queued. */
START_TEST(waitable_jobs_are_queued_once_and_settled)
{
	af_pool *p = manual_pool(1 << 20);
	struct afp_waitable w;
	afp_waitable_init(&w, count_work, false);
	ran = 0;
	ck_assert(afp_waitable_submit(p, &w));
	ck_assert(!afp_waitable_submit(p, &w)); /* pending: not again */
	ck_assert_uint_eq(af_pool_queued(p), 1);
	afp_waitable_settle(p, &w);              /* taken back, run here */
	ck_assert_int_eq(ran, 1);
	ck_assert(!w.by_pool);
	ck_assert_uint_eq(af_pool_queued(p), 0);
	ck_assert(afp_waitable_submit(p, &w));
	ck_assert(af_pool_run_one(p));           /* the pool runs it */
	afp_waitable_settle(p, &w);              /* nothing left to wait for */
	ck_assert_int_eq(ran, 2);
	ck_assert(w.by_pool);
	afp_waitable_destroy(&w);
	af_pool_close(p);
}
END_TEST

/* Background work runs on a thread of its own: it neither waits behind
 * read-ahead nor holds a worker that read-ahead needs. */
START_TEST(background_jobs_have_a_thread_of_their_own)
{
	af_error err;
	af_pool *p;
	ck_assert_int_eq(af_pool_open(&p, 1, 1 << 20, &err), AF_OK);
	struct gate fg, bg;
	gate_init(&fg, false);
	gate_init(&bg, true);
	afp_submit(p, &fg.job);
	gate_wait_entered(&fg);          /* the only worker is held */
	afp_submit(p, &bg.job);
	gate_wait_entered(&bg);          /* and yet it runs */
	struct gate fg2;
	gate_init(&fg2, false);
	gate_open(&fg);
	afp_submit(p, &fg2.job);         /* the worker is free again, */
	gate_wait_entered(&fg2);         /* though bg still runs */
	gate_open(&fg2);
	gate_open(&bg);
	af_pool_close(p);
	gate_destroy(&fg);
	gate_destroy(&fg2);
	gate_destroy(&bg);

	/* a pool of 0 threads: read-ahead first, then background; a queued
	 * background job can be taken back */
	p = manual_pool(1 << 20);
	struct afp_job b[2] = { { .run = count_run, .background = true },
				{ .run = count_run, .background = true } };
	struct afp_job f = { .run = count_run };
	ran = 0;
	afp_submit(p, &b[0]);
	afp_submit(p, &b[1]);
	afp_submit(p, &f);
	ck_assert_uint_eq(af_pool_queued(p), 3);
	ck_assert(afp_take(p, &b[1]));
	ck_assert(af_pool_run_one(p));
	ck_assert(!f.queued && b[0].queued);
	ck_assert(af_pool_run_one(p));
	ck_assert(!af_pool_run_one(p));
	ck_assert_int_eq(ran, 2);
	af_pool_close(p);
}
END_TEST

/* Streams are quiet until one is read, then for as long as asked. */
START_TEST(streams_are_quiet_until_one_is_read)
{
	af_pool *p = manual_pool(1 << 20);
	ck_assert(afp_streams_quiet(p, UINT64_MAX));
	afp_note_stream(p);
	ck_assert(!afp_streams_quiet(p, 3600ull * 1000000000u));
	ck_assert(afp_streams_quiet(p, 0));
	af_pool_close(p);
}
END_TEST

struct fake_holder {
	struct afp_holder h;
	af_pool *p;
	uint64_t held;
	int asked;
};

static bool fake_reclaim(struct afp_holder *h)
{
	struct fake_holder *f = (struct fake_holder *)h;
	f->asked++;
	if (!f->held)
		return false;
	afp_unreserve(f->p, f->held);
	f->held = 0;
	return true;
}

START_TEST(budget_is_held_and_other_holders_give_back)
{
	af_pool *p = manual_pool(100);
	struct fake_holder a = { .h.reclaim = fake_reclaim, .p = p };
	struct fake_holder b = { .h.reclaim = fake_reclaim, .p = p };
	afp_holder_add(p, &a.h);
	afp_holder_add(p, &b.h);
	ck_assert(afp_reserve(p, &a.h, 60));
	a.held = 60;
	ck_assert_uint_eq(af_pool_held(p), 60);
	/* b is short: a gives its 60 back; b is never asked for itself */
	ck_assert(afp_reserve(p, &b.h, 70));
	b.held = 70;
	ck_assert_int_eq(a.asked, 1);
	ck_assert_int_eq(b.asked, 0);
	ck_assert_uint_eq(af_pool_held(p), 70);
	/* nothing another holder can give: refused, nothing counted */
	ck_assert(!afp_reserve(p, &b.h, 40));
	ck_assert_int_eq(a.asked, 2);
	ck_assert(!afp_reserve(p, &a.h, 101));
	ck_assert_uint_eq(af_pool_held(p), 70);
	afp_unreserve(p, 70);
	afp_holder_remove(p, &a.h);
	afp_holder_remove(p, &b.h);
	afp_holder_remove(p, &b.h); /* twice is harmless */
	ck_assert_uint_eq(af_pool_held(p), 0);
	af_pool_close(p);
}
END_TEST

/* A sequential reader gets the spans after it queued; a reader whose span
 * is queued takes it back instead of waiting (with no thread to run it,
 * waiting would never end); random readers queue nothing. */
START_TEST(sequential_reader_queues_spans_and_readers_take_them_back)
{
	struct stream s;
	make_stream(&s, 8u << 20, 6, 11);
	af_pool *p = manual_pool(64u << 20);
	af_inflate *z = open_on(&s, p);
	/* the pass from 0, read in 100 KiB steps, is sequential too: its
	 * next stretch is queued, and taken back by the reader each time
	 * (no thread runs it) */
	pass(z, &s);
	ck_assert_uint_ge(af_inflate_points(z), 10);
	af_inflate_ahead a;
	af_inflate_ahead_stats(z, &a);
	ck_assert_uint_ge(a.taken + a.own, 5);
	ck_assert_uint_eq(a.pool, 0);
	af_inflate_close(z);
	ck_assert_uint_eq(af_pool_queued(p), 0);

	z = open_on(&s, p);
	pass_and_drain(z, &s, p);
	/* random reads, more than 1 MiB apart: nothing queued, no unit */
	af_inflate_ahead b;
	af_inflate_ahead_stats(z, &b);
	read_ok(z, &s, 7000 * KIB, 4 * KIB);
	read_ok(z, &s, 10 * KIB, 4 * KIB);
	read_ok(z, &s, 3000 * KIB, 4 * KIB);
	ck_assert_uint_eq(af_pool_queued(p), 0);
	af_inflate_ahead_stats(z, &a);
	ck_assert_uint_eq(a.pool + a.taken + a.own, b.pool + b.taken + b.own);

	/* a sequential reader from just past point 32: its third read makes
	 * it one (32 KiB reads, all in the span after point 32) */
	uint64_t x = af_inflate_point_out(z, 32) + 1000;
	uint64_t next_span = af_inflate_point_out(z, 33);
	ck_assert_uint_gt(x, 4100 * KIB);
	ck_assert_uint_lt(x, 5800 * KIB);
	ck_assert_uint_gt(next_span, x + 96 * KIB);
	read_ok(z, &s, x, 32 * KIB);
	read_ok(z, &s, x + 32 * KIB, 32 * KIB);
	ck_assert_uint_eq(af_pool_queued(p), 0);
	read_ok(z, &s, x + 64 * KIB, 32 * KIB);
	af_inflate_ahead_stats(z, &a);
	ck_assert_uint_eq(a.own, b.own + 1);    /* its own span, inline */
	ck_assert_uint_eq(af_pool_queued(p), 1); /* and the next one */
	/* a reader in the queued span takes it back (as long a read as the
	 * kernel's read-ahead makes: it continues the stream) */
	read_ok(z, &s, next_span + 100, 32 * KIB);
	af_inflate_ahead_stats(z, &a);
	ck_assert_uint_eq(a.taken, b.taken + 1);
	/* the pool (run here) does what the reader queues next */
	read_ok(z, &s, x + 96 * KIB, 32 * KIB);
	ck_assert_uint_ge(af_pool_queued(p), 1);
	while (af_pool_run_one(p))
		;
	af_inflate_ahead_stats(z, &a);
	ck_assert_uint_ge(a.pool, b.pool + 1);
	for (uint64_t off = x + 128 * KIB; off < s.plen; off += 32 * KIB)
		read_ok(z, &s, off, 32 * KIB);
	ck_assert_uint_le(af_pool_held(p), af_pool_budget(p));
	/* closing takes back what is still queued */
	close_all(z, p, &s);
}
END_TEST

/* Units read by one sequential reader, all with the pool run between
 * reads, and the unit buffers malloc'ed meanwhile. */
static void read_through(af_inflate *z, const struct stream *s, af_pool *p,
			 uint64_t *units, uint64_t *buffers)
{
	af_inflate_ahead a, b;
	af_inflate_ahead_stats(z, &b);
	uint64_t before = __atomic_load_n(&z->unit_buffers, __ATOMIC_RELAXED);
	for (uint64_t off = 0; off < s->plen; off += 64 * KIB) {
		read_ok(z, s, off, 64 * KIB);
		while (af_pool_run_one(p))
			;
	}
	af_inflate_ahead_stats(z, &a);
	*units = a.pool + a.taken + a.own - (b.pool + b.taken + b.own);
	*buffers = __atomic_load_n(&z->unit_buffers, __ATOMIC_RELAXED) -
		   before;
}

/* A slot keeps its unit's buffer for the next unit (a buffer malloc'ed
 * for every unit cost its pages' faults: 4 % of a read with a saved index
 * in the daemon), and kept buffers are budget another decoder short of it
 * takes back. */
START_TEST(slots_keep_their_buffers_and_give_them_back)
{
	struct stream s;
	make_stream(&s, 4u << 20, 6, 21);
	af_pool *p = manual_pool(64u << 20);
	af_inflate *z = open_passed(&s, p);
	uint64_t units, buffers;
	read_through(z, &s, p, &units, &buffers);
	ck_assert_uint_ge(units, 16);
	ck_assert_uint_le(buffers, 3);
	/* read through, its slots still hold budget */
	ck_assert_uint_gt(af_pool_held(p), 0);
	af_inflate_close(z);
	ck_assert_uint_eq(af_pool_held(p), 0);
	af_pool_close(p);

	/* room for 4 units of SPAN, rounded up to a slot's 256 KiB: a
	 * decoder read through holds all of it, and another one on the
	 * pool still gets its units */
	const uint64_t budget = 1u << 20;
	p = manual_pool(budget);
	z = open_passed(&s, p);
	read_through(z, &s, p, &units, &buffers);
	ck_assert_uint_le(buffers, AFZ_SLOTS);
	ck_assert_uint_eq(af_pool_held(p), budget);
	af_inflate *y = open_passed(&s, p);
	read_through(y, &s, p, &units, &buffers);
	ck_assert_uint_ge(units, 16);
	ck_assert_uint_le(af_pool_held(p), budget);
	af_inflate_close(y);
	close_all(z, p, &s);
}
END_TEST

/* Small reads that land near each other are random, not sequential:
 * only reads right after the one before, or as long as the kernel's
 * read-ahead makes, continue a stream. */
START_TEST(small_reads_near_each_other_stay_random)
{
	struct stream s;
	make_stream(&s, 8u << 20, 6, 13);
	af_pool *p = manual_pool(64u << 20);
	af_inflate *z = open_passed(&s, p);
	af_inflate_ahead b, a;
	af_inflate_ahead_stats(z, &b);
	uint64_t x = af_inflate_point_out(z, 20) + 1000;
	for (int i = 0; i < 6; i++)
		read_ok(z, &s, x + (uint64_t)i * 200 * KIB, 4 * KIB);
	ck_assert_uint_eq(af_pool_queued(p), 0);
	af_inflate_ahead_stats(z, &a);
	ck_assert_uint_eq(a.pool + a.taken + a.own, b.pool + b.taken + b.own);
	/* 4 KiB reads one after the other: sequential at the third */
	uint64_t y = af_inflate_point_out(z, 40) + 1000;
	for (int i = 0; i < 3; i++)
		read_ok(z, &s, y + (uint64_t)i * 4 * KIB, 4 * KIB);
	af_inflate_ahead_stats(z, &a);
	ck_assert_uint_eq(a.own, b.own + 1);
	close_all(z, p, &s);
}
END_TEST

/* A sequential reader keeps its units when the stream takes its saved
 * points (finer than the pass's) in the middle of its read: units stay
 * the pass's spans, so none overlaps one read ahead before. */
START_TEST(reader_keeps_its_units_when_the_saved_points_arrive)
{
	struct stream s;
	make_stream(&s, 8u << 20, 6, 17);
	af_pool *p = manual_pool(64u << 20);
	af_inflate *z = open_spans_on(&s, p, 2 * SPAN, 60 * KIB);
	af_error err;
	pass_and_drain(z, &s, p);
	size_t own = af_inflate_points(z);
	uint64_t before = af_inflate_inflated(z);
	uint64_t at = 0;
	for (; at < s.plen / 2; at += 64 * KIB) {
		read_ok(z, &s, at, 64 * KIB);
		while (af_pool_run_one(p))
			;
	}
	unsigned char *idx;
	size_t len;
	ck_assert_int_eq(af_inflate_index_export(z, &(af_index_key){ .crc = s.crc,
						 .uncomp_size = s.plen },
						 &idx, &len, &err), AF_OK);
	free(idx);
	ck_assert_uint_gt(af_inflate_points(z), 2 * own);
	for (; at < s.plen; at += 64 * KIB) {
		read_ok(z, &s, at, 64 * KIB);
		while (af_pool_run_one(p))
			;
	}
	/* as without the export: 1.08x (the first reads, before the reader
	 * counts as sequential, inflate their spans through the cursors) */
	ck_assert_uint_le(af_inflate_inflated(z) - before,
			  s.plen + s.plen / 8);
	close_all(z, p, &s);
}
END_TEST

/* Spans read ahead are checked against the CRC-32 the pass from 0
 * recorded: a member whose bytes changed since fails, for good. */
START_TEST(spans_read_ahead_are_checked_against_the_pass)
{
	struct stream s;
	make_stream(&s, 2u << 20, 0, 12); /* stored blocks */
	af_pool *p = manual_pool(64u << 20);
	af_inflate *z = open_on(&s, p);
	pass_and_drain(z, &s, p);
	s.comp[s.clen / 2] ^= 0x10;  /* still a stream: other bytes */
	af_error err;
	af_status st = AF_OK;
	for (uint64_t off = 0; off < s.plen && st == AF_OK; off += 64 * KIB)
		st = read_at(z, &s, off, 64 * KIB, &err);
	ck_assert_int_eq(st, AF_E_CORRUPT);
	ck_assert_ptr_nonnull(strstr(err.msg, "pass from 0"));
	/* condemned: even bytes far from the change, and a reader that
	 * would have been sequential (a unit made for it, then not
	 * inflated: closing must not wait for it) */
	ck_assert_int_eq(read_at(z, &s, 0, 10, &err), AF_E_CORRUPT);
	for (uint64_t off = 0; off < 4 * SPAN; off += 32 * KIB)
		ck_assert_int_eq(read_at(z, &s, off, 32 * KIB, &err),
				 AF_E_CORRUPT);
	af_inflate_close(z);
	af_pool_close(p);
	free_stream(&s);
}
END_TEST

/* With a loaded index, spans read ahead are checked against it: the one
 * that changed fails with the span named, the others still read. */
START_TEST(spans_read_ahead_are_checked_against_a_loaded_index)
{
	struct stream s;
	make_stream(&s, 2u << 20, 0, 13);
	af_index_key key = { .dev = 1, .ino = 2, .comp_size = s.clen,
			     .uncomp_size = s.plen, .crc = s.crc };
	af_inflate *z = open_on(&s, NULL);
	pass(z, &s);
	unsigned char *idx;
	size_t len;
	af_error err;
	ck_assert_int_eq(af_inflate_index_export(z, &key, &idx, &len, &err),
			 AF_OK);
	af_inflate_close(z);
	s.comp[s.clen / 2] ^= 0x10;

	af_pool *p = manual_pool(64u << 20);
	z = open_on(&s, p);
	ck_assert_int_eq(af_inflate_index_import(z, &key, idx, len, &err),
			 AF_OK);
	af_status st = AF_OK;
	uint64_t off = 0;
	for (; off < s.plen && st == AF_OK; off += 64 * KIB) {
		st = read_at(z, &s, off, 64 * KIB, &err);
		af_pool_run_one(p);
	}
	ck_assert_int_eq(st, AF_E_CORRUPT);
	ck_assert_ptr_nonnull(strstr(err.msg, "span"));
	ck_assert_uint_gt(off, 64 * KIB);
	ck_assert_uint_lt(off, s.plen);
	/* not sticky: the spans around it are fine */
	read_ok(z, &s, 0, 1000);
	read_ok(z, &s, s.plen - 1000, 1000);
	af_inflate_close(z);
	af_pool_close(p);
	free(idx);
	free_stream(&s);
}
END_TEST

/* Run @p fn on @p a and on @p b in two threads, and wait for both. */
static void run_pair(void *(*fn)(void *), void *a, void *b)
{
	pthread_t t[2];
	ck_assert_int_eq(pthread_create(&t[0], NULL, fn, a), 0);
	ck_assert_int_eq(pthread_create(&t[1], NULL, fn, b), 0);
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
}

struct reader {
	af_inflate *z;
	const struct stream *s;
	bool sequential;
	int bad;
};

static void *reader_run(void *arg)
{
	struct reader *r = arg;
	uint64_t seed = r->sequential ? 5 : 6;
	unsigned char *buf = malloc(64 * KIB);
	for (uint64_t i = 0, off = 0; off < r->s->plen; i++) {
		size_t len = r->sequential ? 48 * KIB : 4 * KIB;
		uint64_t at = r->sequential ? off : aft_rand(&seed) % r->s->plen;
		size_t n;
		af_error err;
		if (af_inflate_read(r->z, buf, len, at, &n, &err) != AF_OK ||
		    memcmp(buf, r->s->plain + at, n) != 0)
			r->bad++;
		off = r->sequential ? off + len : (i + 1) * 64 * KIB;
	}
	free(buf);
	return NULL;
}

/* Pool threads inflating ahead while a sequential and a random reader
 * share the stream: every byte right, first pass and after it, with a
 * budget of a few units or less than one. */
START_TEST(threads_and_readers_share_a_stream)
{
	struct stream s;
	make_stream(&s, 6u << 20, 6, 14);
	const uint64_t budgets[] = { 64u << 20, 3 * SPAN, SPAN / 2 };
	for (unsigned b = 0; b < 3; b++) {
		af_pool *p;
		af_error err;
		ck_assert_int_eq(af_pool_open(&p, 2, budgets[b], &err), AF_OK);
		af_inflate *z = open_on(&s, p);
		for (int round = 0; round < 2; round++) {
			struct reader r[2] = { { z, &s, true, 0 },
					       { z, &s, false, 0 } };
			run_pair(reader_run, &r[0], &r[1]);
			ck_assert_int_eq(r[0].bad + r[1].bad, 0);
			ck_assert_uint_le(af_pool_held(p), budgets[b]);
		}
		af_inflate_ahead a;
		af_inflate_ahead_stats(z, &a);
		if (b == 0)
			ck_assert_uint_gt(a.pool + a.taken + a.own, 0);
		af_inflate_close(z);
		ck_assert_uint_eq(af_pool_held(p), 0);
		af_pool_close(p);
	}
	free_stream(&s);
}
END_TEST

/* Two readers taking turns the way the kernel's read-ahead sends its reads:
 * a pair of neighbouring 1 MiB reads at once, the pair after it once both
 * are answered. */
struct pair_reader {
	af_inflate *z;
	const struct stream *s;
	pthread_barrier_t *turn;
	unsigned which; /* 0: the first read of each pair, 1: the second */
	int bad;
};

static void *pair_reader_run(void *arg)
{
	struct pair_reader *r = arg;
	const size_t len = 1u << 20;
	unsigned char *buf = malloc(len);
	ck_assert_ptr_nonnull(buf);
	for (uint64_t off = 0; off < r->s->plen; off += 2 * len) {
		pthread_barrier_wait(r->turn);
		uint64_t at = off + r->which * len;
		size_t n;
		af_error err;
		if (at < r->s->plen &&
		    (af_inflate_read(r->z, buf, len, at, &n, &err) != AF_OK ||
		     memcmp(buf, r->s->plain + at, n) != 0))
			r->bad++;
	}
	free(buf);
	return NULL;
}

/* A first pass read in such pairs inflates each byte once: the read served
 * second finds what the first one's cursor went past in the cache or in a
 * unit, rather than inflating it again from the point before it (from byte
 * 0 in the first span: a .stack of 4 MiB members read this way inflated
 * up to 1.6 times their size). */
START_TEST(reads_sent_in_pairs_inflate_each_byte_once)
{
	struct stream s;
	make_stream(&s, 4u << 20, 6, 23);
	af_pool *p;
	af_error err;
	ck_assert_int_eq(af_pool_open(&p, 2, af_pool_default_budget(2), &err),
			 AF_OK);
	for (int round = 0; round < 40; round++) {
		struct af_inflate_opts o;
		af_inflate_default_opts(&o);
		af_inflate *z;
		ck_assert_int_eq(af_inflate_open_opts(&z, &s.src, s.plen,
						      s.crc, &o, &err), AF_OK);
		ck_assert_int_eq(af_inflate_set_pool(z, p, &err), AF_OK);
		pthread_barrier_t turn;
		pthread_barrier_init(&turn, NULL, 2);
		struct pair_reader r[2] = { { z, &s, &turn, 0, 0 },
					    { z, &s, &turn, 1, 0 } };
		run_pair(pair_reader_run, &r[0], &r[1]);
		pthread_barrier_destroy(&turn);
		ck_assert_int_eq(r[0].bad + r[1].bad, 0);
		ck_assert_msg(af_inflate_inflated(z) == s.plen,
			      "round %d: %llu bytes inflated for %zu", round,
			      (unsigned long long)af_inflate_inflated(z),
			      s.plen);
		af_inflate_close(z);
	}
	ck_assert_uint_eq(af_pool_held(p), 0);
	af_pool_close(p);
	free_stream(&s);
}
END_TEST

/* A read of [3 MiB, 4 MiB) by reader @p arg. */
static void *far_read_run(void *arg)
{
	struct reader *r = arg;
	af_error err;
	r->bad += read_at(r->z, r->s, 3u << 20, 1u << 20, &err) != AF_OK;
	return NULL;
}

/* The kernel sends a deep read-ahead window or a long O_DIRECT read as
 * 1 MiB reads at once: in a first pass, one that starts while a read
 * behind it is under way waits for it, rather than taking the pass's
 * cursor past the bytes that read is fetching (which that read then
 * inflated again from the point before them: 1.7-2 times the member). */
START_TEST(a_long_read_waits_for_the_one_behind_it)
{
	struct stream s;
	make_stream(&s, 4u << 20, 6, 24);
	af_inflate *z = open_on(&s, NULL);
	read_ok(z, &s, 0, 1u << 20);
	ck_assert_uint_eq(af_inflate_inflated(z), 1u << 20);
	/* a read of [1 MiB, 3 MiB) is under way... */
	size_t behind = afz_order_enter(z, 1u << 20, 2u << 20);
	ck_assert_uint_ne(behind, AFO_NONE);
	/* ...when the one of [3 MiB, 4 MiB) starts */
	struct reader far = { z, &s, true, 0 };
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, far_read_run, &far), 0);
	ck_assert(aft_counted_soon(&z->lock, &z->order.waits));
	ck_assert_uint_eq(af_inflate_inflated(z), 1u << 20);
	/* the read behind it goes on (its own flight, at its offset, does
	 * not hold it back) and ends */
	read_ok(z, &s, 1u << 20, 2u << 20);
	afz_order_leave(z, behind);
	pthread_join(t, NULL);
	ck_assert_int_eq(far.bad, 0);
	ck_assert_uint_eq(af_inflate_inflated(z), s.plen);
	/* short reads (random readers) neither wait nor hold back */
	behind = afz_order_enter(z, 0, 4096);
	ck_assert_uint_eq(behind, AFO_NONE);
	af_inflate_close(z);
	free_stream(&s);
}
END_TEST

/* A first pass read by a fast sequential reader: each unit of the pass
 * is due as the one before ends, and the pool thread that ended it goes
 * on with it (counted), rather than queueing it for whichever thread
 * wakes first: the pass is serial, its state best kept on one core. */
START_TEST(the_pass_from_0_stays_on_the_thread_that_runs_it)
{
	struct stream s;
	make_stream(&s, 6u << 20, 6, 21);
	af_pool *p;
	af_error err;
	ck_assert_int_eq(af_pool_open(&p, 2, 64u << 20, &err), AF_OK);
	af_inflate *z = open_on(&s, p);
	for (uint64_t off = 0; off < s.plen; off += 16 * KIB)
		read_ok(z, &s, off, 16 * KIB);
	af_inflate_ahead a;
	af_inflate_ahead_stats(z, &a);
	ck_assert_uint_gt(a.pool, 0);
	ck_assert_uint_gt(a.chained, 0);
	ck_assert_uint_le(a.chained, a.pool);
	af_inflate_close(z);
	ck_assert_uint_eq(af_pool_held(p), 0);
	af_pool_close(p);
	free_stream(&s);
}
END_TEST

/* The pass from 0 has its next compressed input read by the pool while
 * it inflates (here the pool is run by hand between reads); the bytes
 * stay right, and closing takes back a read still queued. */
START_TEST(the_pass_from_0_has_its_input_read_ahead)
{
	struct stream s;
	make_stream(&s, 8u << 20, 6, 23);
	af_pool *p = manual_pool(64u << 20);
	af_inflate *z = open_on(&s, p);
	for (uint64_t off = 0; off < s.plen; off += 100 * KIB) {
		read_ok(z, &s, off, 100 * KIB);
		while (af_pool_run_one(p))
			;
	}
	af_inflate_ahead a;
	af_inflate_ahead_stats(z, &a);
	/* 4.4 MiB of input: 128 + 256 KiB, then 512 KiB reads, all ahead */
	ck_assert_uint_ge(a.inputs_ahead, 5);
	af_inflate_close(z);

	/* closed with a read ahead still queued: taken back, none left */
	z = open_on(&s, p);
	read_ok(z, &s, 0, 3072 * KIB);
	ck_assert_uint_gt(af_pool_queued(p), 0);
	close_all(z, p, &s);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("inflate_ahead");
	TCase *tc = tcase_create("ahead");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, pool_queue_is_fifo_and_jobs_can_be_taken_back);
	tcase_add_test(tc, budget_is_held_and_other_holders_give_back);
	tcase_add_test(tc, sequential_reader_queues_spans_and_readers_take_them_back);
	tcase_add_test(tc, slots_keep_their_buffers_and_give_them_back);
	tcase_add_test(tc, small_reads_near_each_other_stay_random);
	tcase_add_test(tc, reader_keeps_its_units_when_the_saved_points_arrive);
	tcase_add_test(tc, spans_read_ahead_are_checked_against_the_pass);
	tcase_add_test(tc, spans_read_ahead_are_checked_against_a_loaded_index);
	tcase_add_test(tc, the_pass_from_0_stays_on_the_thread_that_runs_it);
	tcase_add_test(tc, the_pass_from_0_has_its_input_read_ahead);
	tcase_add_test(tc, waitable_jobs_are_queued_once_and_settled);
	tcase_add_test(tc, background_jobs_have_a_thread_of_their_own);
	tcase_add_test(tc, streams_are_quiet_until_one_is_read);
	tcase_add_test(tc, threads_and_readers_share_a_stream);
	tcase_add_test(tc, reads_sent_in_pairs_inflate_each_byte_once);
	tcase_add_test(tc, a_long_read_waits_for_the_one_behind_it);
	suite_add_tcase(s, tc);
	return aft_run(s);
}
