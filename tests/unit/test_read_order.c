/* SPDX-License-Identifier: MIT */
/*
 * Long reads of a first pass served in offset order (src/codec/
 * read_order.c), the gate alone; test_inflate_ahead.c and test_lz4.c show
 * it through each decoder, counting the bytes decoded.
 */
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

#include "af_test.h"
#include "../../src/codec/read_order_i.h"

#define MIB (1u << 20)
/* the stream's size: no read below ends it */
#define SIZE (1024u * MIB)

struct gate {
	pthread_mutex_t lock;
	struct afo_gate g;
};

static void gate_open(struct gate *t)
{
	ck_assert_int_eq(pthread_mutex_init(&t->lock, NULL), 0);
	ck_assert_int_eq(afo_init(&t->g), 0);
}

static void gate_close(struct gate *t)
{
	afo_destroy(&t->g);
	pthread_mutex_destroy(&t->lock);
}

/* A read of [off, off + len) of a stream of SIZE bytes, or 1 MiB if
 * @p len is 0: it enters, marks itself entered and leaves when told. */
struct read {
	struct gate *t;
	uint64_t off;
	size_t len;
	size_t flight;
	bool entered, go;
};

static void *read_run(void *arg)
{
	struct read *r = arg;
	pthread_mutex_lock(&r->t->lock);
	r->flight = afo_enter(&r->t->g, &r->t->lock, r->off,
			      r->len ? r->len : MIB, SIZE);
	r->entered = true;
	pthread_mutex_unlock(&r->t->lock);
	for (;;) {
		pthread_mutex_lock(&r->t->lock);
		bool go = r->go;
		if (go)
			afo_leave(&r->t->g, r->flight);
		pthread_mutex_unlock(&r->t->lock);
		if (go)
			return NULL;
		usleep(1000);
	}
}

static bool entered(struct read *r)
{
	pthread_mutex_lock(&r->t->lock);
	bool e = r->entered;
	pthread_mutex_unlock(&r->t->lock);
	return e;
}

static void let_go(struct read *r)
{
	pthread_mutex_lock(&r->t->lock);
	r->go = true;
	pthread_mutex_unlock(&r->t->lock);
}

/* Whether @p r enters within about 10 s. */
static bool enters_soon(struct read *r)
{
	for (int i = 0; i < 10000 && !entered(r); i++)
		usleep(1000);
	return entered(r);
}

/* A long read waits while one behind it, nearer than AFO_FAR, is in
 * flight; one farther behind than that, or ahead, or at the same offset
 * does not hold it back; short reads are never counted. */
START_TEST(a_long_read_waits_only_for_one_near_behind_it)
{
	struct gate t;
	gate_open(&t);
	pthread_mutex_lock(&t.lock);
	size_t first = afo_enter(&t.g, &t.lock, 4 * MIB, MIB, SIZE);
	ck_assert_uint_ne(first, AFO_NONE);
	ck_assert_uint_eq(afo_enter(&t.g, &t.lock, 0, AFO_LONG - 1, SIZE),
			  AFO_NONE);
	/* the range each counted read wants is known */
	ck_assert(afo_wanted(&t.g, 5 * MIB - 1, 5 * MIB));
	ck_assert(!afo_wanted(&t.g, 5 * MIB, 6 * MIB));
	ck_assert(!afo_wanted(&t.g, 0, 4 * MIB));
	pthread_mutex_unlock(&t.lock);
	struct read at[3] = {
		{ &t, 4 * MIB, 0, 0, false, false },          /* same */
		{ &t, 2 * MIB, 0, 0, false, false },          /* behind */
		{ &t, 4 * MIB + AFO_FAR + 1, 0, 0, false, false }, /* far */
	};
	pthread_t th[4];
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(pthread_create(&th[i], NULL, read_run, &at[i]), 0);
		ck_assert(enters_soon(&at[i]));
	}
	struct read near = { &t, 5 * MIB, 0, 0, false, false };
	ck_assert_int_eq(pthread_create(&th[3], NULL, read_run, &near), 0);
	ck_assert(aft_counted_soon(&t.lock, &t.g.waits));
	ck_assert(!entered(&near));
	for (int i = 0; i < 3; i++) {
		let_go(&at[i]);
		pthread_join(th[i], NULL);
	}
	usleep(20000);
	ck_assert(!entered(&near)); /* the first is still in flight */
	pthread_mutex_lock(&t.lock);
	afo_leave(&t.g, first);
	pthread_mutex_unlock(&t.lock);
	ck_assert(enters_soon(&near));
	let_go(&near);
	pthread_join(th[3], NULL);
	gate_close(&t);
}
END_TEST

/* The last read of a window at the stream's end is short: it waits as a
 * long one does, where alone it took the pass to the end ahead of the
 * window's other reads. No other short read is counted. */
START_TEST(a_short_read_that_ends_the_stream_waits_as_a_long_one)
{
	ck_assert(afo_counts(SIZE - 4096, 4096, SIZE));
	ck_assert(!afo_counts(SIZE - 8192, 4096, SIZE));
	ck_assert(!afo_counts(SIZE, 0, SIZE));
	struct gate t;
	gate_open(&t);
	pthread_mutex_lock(&t.lock);
	size_t first = afo_enter(&t.g, &t.lock, SIZE - 2 * MIB, MIB, SIZE);
	pthread_mutex_unlock(&t.lock);
	struct read tail = { &t, SIZE - 4096, 4096, 0, false, false };
	pthread_t th;
	ck_assert_int_eq(pthread_create(&th, NULL, read_run, &tail), 0);
	ck_assert(aft_counted_soon(&t.lock, &t.g.waits));
	ck_assert(!entered(&tail));
	pthread_mutex_lock(&t.lock);
	afo_leave(&t.g, first);
	pthread_mutex_unlock(&t.lock);
	ck_assert(enters_soon(&tail));
	ck_assert_uint_ne(tail.flight, AFO_NONE);
	let_go(&tail);
	pthread_join(th, NULL);
	gate_close(&t);
}
END_TEST

/* More long reads than the gate counts: the rest go unordered, and every
 * one ends. */
START_TEST(reads_past_the_counted_ones_go_unordered)
{
	struct gate t;
	gate_open(&t);
	size_t f[AFO_FLIGHTS];
	pthread_mutex_lock(&t.lock);
	for (size_t i = 0; i < AFO_FLIGHTS; i++) {
		/* each behind the one before it: none waits */
		f[i] = afo_enter(&t.g, &t.lock, (AFO_FLIGHTS - i) * MIB, MIB,
				 SIZE);
		ck_assert_uint_ne(f[i], AFO_NONE);
	}
	ck_assert_uint_eq(afo_enter(&t.g, &t.lock, 0, MIB, SIZE),
			  AFO_NONE);
	for (size_t i = 0; i < AFO_FLIGHTS; i++)
		afo_leave(&t.g, f[i]);
	afo_leave(&t.g, AFO_NONE);
	ck_assert_uint_eq(t.g.waits, 0);
	pthread_mutex_unlock(&t.lock);
	gate_close(&t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("read_order");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, a_long_read_waits_only_for_one_near_behind_it);
	tcase_add_test(tc, a_short_read_that_ends_the_stream_waits_as_a_long_one);
	tcase_add_test(tc, reads_past_the_counted_ones_go_unordered);
	suite_add_tcase(s, tc);
	return aft_run(s);
}
