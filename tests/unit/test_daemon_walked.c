/* SPDX-License-Identifier: MIT */
/* Tests for src/daemon/walked.c: the bounded ring of array folders a walk
 * listed, handed to the notifier oldest first past the bound. */
#include <stdbool.h>
#include <stdint.h>

#include "af_test.h"
#include "walked.h"

static struct afd_walked w;
static bool started;

/* A ring keeping @p max folders in w, destroyed after the test. */
static void start(size_t max)
{
	ck_assert_int_eq(afd_walked_init(&w, max), 0);
	started = true;
}

static void teardown(void)
{
	if (started)
		afd_walked_destroy(&w);
	started = false;
}

/* Every folder past the bound, oldest first, into out (at most cap). */
static size_t take_all(struct afd_walked *r, struct afd_walked_dir *out,
		       size_t cap)
{
	size_t n = 0, k;
	while (n < cap && (k = afd_walked_take(r, out + n, cap - n)) > 0)
		n += k;
	return n;
}

/* Folders first..last (generation 1) listed; true when the last add said
 * the notifier has work. */
static bool add_range(struct afd_walked *r, uint64_t first, uint64_t last)
{
	bool work = false;
	for (uint64_t id = first; id <= last; id++)
		work = afd_walked_add(r, id, 1);
	return work;
}

START_TEST(past_the_bound_the_oldest_go_first)
{
	start(4);
	struct afd_walked_dir out[16];
	for (uint64_t id = 10; id < 14; id++)
		ck_assert(!afd_walked_add(&w, id, 1));
	ck_assert_uint_eq(take_all(&w, out, 16), 0);
	ck_assert(afd_walked_add(&w, 14, 1));
	ck_assert(afd_walked_add(&w, 15, 2));
	ck_assert_uint_eq(take_all(&w, out, 16), 2);
	ck_assert_uint_eq(out[0].nodeid, 10);
	ck_assert_uint_eq(out[1].nodeid, 11);
	ck_assert_uint_eq(out[0].gen, 1);
	/* four are kept: the newest */
	ck_assert_uint_eq(w.count, 4);
	ck_assert(!afd_walked_add(&w, 15, 2));
	ck_assert_uint_eq(w.count, 4);
}
END_TEST

START_TEST(drops_come_in_bursts_of_an_eighth)
{
	start(64);
	struct afd_walked_dir out[128];
	ck_assert(!add_range(&w, 1, 72));
	ck_assert_uint_eq(take_all(&w, out, 128), 0);
	ck_assert(afd_walked_add(&w, 73, 1));
	/* the whole burst, even taken a few at a time */
	ck_assert_uint_eq(afd_walked_take(&w, out, 4), 4);
	ck_assert_uint_eq(take_all(&w, out, 128), 9 - 4);
	ck_assert_uint_eq(out[0].nodeid, 5);
	ck_assert_uint_eq(w.count, 64);
	ck_assert(!afd_walked_add(&w, 74, 1));
	ck_assert_uint_eq(take_all(&w, out, 128), 0);
}
END_TEST

START_TEST(a_folder_listed_again_at_once_counts_once)
{
	start(2);
	afd_walked_add(&w, 7, 1);
	afd_walked_add(&w, 7, 1);
	afd_walked_add(&w, 7, 1);
	ck_assert_uint_eq(w.count, 1);
	/* another generation is another folder */
	afd_walked_add(&w, 7, 2);
	ck_assert_uint_eq(w.count, 2);
}
END_TEST

START_TEST(a_notifier_behind_grows_the_ring_up_to_its_bound)
{
	start(8);
	/* nothing taken: every listing is kept until 4 max + 4096 */
	ck_assert(add_range(&w, 1, 5000));
	ck_assert_uint_eq(w.count, 4 * 8 + 4096);
	ck_assert_uint_eq(w.missed, 5000 - (4 * 8 + 4096));
	struct afd_walked_dir out[5000];
	size_t n = take_all(&w, out, 5000);
	ck_assert_uint_eq(n, 4 * 8 + 4096 - 8);
	/* oldest first, in order, across the ring's growth */
	for (size_t i = 0; i < n; i++)
		ck_assert_uint_eq(out[i].nodeid, w.missed + 1 + i);
	ck_assert_uint_eq(w.count, 8);
}
END_TEST

START_TEST(zero_is_no_bound)
{
	start(0);
	ck_assert(!add_range(&w, 1, 100));
	struct afd_walked_dir out[4];
	ck_assert_uint_eq(afd_walked_take(&w, out, 4), 0);
	ck_assert_ptr_null(w.ring);
	struct afd_walked big;
	ck_assert_int_lt(afd_walked_init(&big, AFD_WALKED_MAX_LIMIT + 1), 0);
}
END_TEST

int main(void)
{
	const TTest *const cases[] = {
		past_the_bound_the_oldest_go_first,
		drops_come_in_bursts_of_an_eighth,
		a_folder_listed_again_at_once_counts_once,
		a_notifier_behind_grows_the_ring_up_to_its_bound,
		zero_is_no_bound,
	};
	Suite *s = suite_create("daemon_walked");
	TCase *tc = tcase_create("ring");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		tcase_add_test(tc, cases[i]);
	tcase_add_checked_fixture(tc, NULL, teardown);
	suite_add_tcase(s, tc);
	return aft_run(s);
}
