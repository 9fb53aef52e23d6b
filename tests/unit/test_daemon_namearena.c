/* SPDX-License-Identifier: MIT */
/* Tests for the names arena (src/daemon/namearena.c). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "af_test.h"
#include "namearena.h"

START_TEST(names_stay_put_and_are_terminated)
{
	struct afd_names a;
	afd_names_init(&a);
	enum { N = 20000 };   /* ~10 bytes each: several blocks */
	const char **at = malloc(N * sizeof(*at));
	ck_assert_ptr_nonnull(at);
	char name[32];
	for (int i = 0; i < N; i++) {
		int len = snprintf(name, sizeof(name), "img%06d.npyXX", i);
		/* only the first len - 2 bytes are the name */
		at[i] = afd_names_add(&a, name, (size_t)len - 2);
		ck_assert_ptr_nonnull(at[i]);
	}
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "img%06d.npy", i);
		ck_assert_str_eq(at[i], name);
	}
	ck_assert_uint_gt(a.bytes, AFD_NAMES_BLOCK);
	ck_assert_uint_lt(a.bytes, 4u * N * 14);
	free(at);
	afd_names_free(&a);
	ck_assert_ptr_null(a.last);
	ck_assert_uint_eq(a.bytes, 0);
}
END_TEST

START_TEST(a_name_longer_than_a_block_gets_its_own)
{
	struct afd_names a;
	afd_names_init(&a);
	size_t big = AFD_NAMES_BLOCK + 100;
	char *text = malloc(big);
	ck_assert_ptr_nonnull(text);
	memset(text, 'n', big);
	const char *small = afd_names_add(&a, "a", 1);
	const char *got = afd_names_add(&a, text, big);
	const char *after = afd_names_add(&a, "b", 1);
	ck_assert_ptr_nonnull(got);
	ck_assert_int_eq(memcmp(got, text, big), 0);
	ck_assert_int_eq(got[big], '\0');
	ck_assert_str_eq(small, "a");
	ck_assert_str_eq(after, "b");
	/* an empty name is a name */
	ck_assert_str_eq(afd_names_add(&a, "", 0), "");
	/* a length no block can hold is refused, not wrapped */
	ck_assert_ptr_null(afd_names_add(&a, text, SIZE_MAX - 8));
	free(text);
	afd_names_free(&a);
}
END_TEST

static Suite *namearena_suite(void)
{
	Suite *s = suite_create("daemon_namearena");
	TCase *tc = tcase_create("names");
	tcase_add_test(tc, names_stay_put_and_are_terminated);
	tcase_add_test(tc, a_name_longer_than_a_block_gets_its_own);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return aft_run(namearena_suite());
}
