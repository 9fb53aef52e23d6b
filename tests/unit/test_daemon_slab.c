/* SPDX-License-Identifier: MIT */
/* Tests for src/daemon/slab.c (the node slab) and segmap.c. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "af_test.h"
#include "segmap.h"
#include "slab.h"

#define N 20000u

static struct afd_slab s;

static void setup(void)
{
	afd_slab_init(&s);
}

static void teardown(void)
{
	afd_slab_destroy(&s);
}

START_TEST(a_segment_is_aligned_to_its_size)
{
	unsigned char *p = afd_seg_map(AFD_SLAB_SEG);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq((uintptr_t)p % AFD_SLAB_SEG, 0);
	ck_assert_uint_eq(p[0] | p[AFD_SLAB_SEG - 1], 0);
	p[AFD_SLAB_SEG - 1] = 1;
	afd_seg_unmap(p, AFD_SLAB_SEG);
	afd_seg_unmap(NULL, AFD_SLAB_SEG);
}
END_TEST

START_TEST(only_small_blocks_fit)
{
	ck_assert(!afd_slab_fits(0));
	ck_assert(afd_slab_fits(1));
	ck_assert(afd_slab_fits(AFD_SLAB_MAX));
	ck_assert(!afd_slab_fits(AFD_SLAB_MAX + 1));
	ck_assert_ptr_null(afd_slab_alloc(&s, AFD_SLAB_MAX + 1));
	ck_assert_uint_eq(afd_slab_mapped(&s), 0);
}
END_TEST

/* Cells of many sizes: zeroed, aligned, apart; written whole, freed in
 * two passes: once none is in use, one segment a class stays at most. */
START_TEST(cells_are_zeroed_apart_and_their_segments_go_back)
{
	static const unsigned char zero[AFD_SLAB_MAX];
	unsigned char **p = calloc(N, sizeof(*p));
	size_t *len = calloc(N, sizeof(*len));
	ck_assert(p && len);
	for (int round = 0; round < 2; round++) {
		for (size_t i = 0; i < N; i++) {
			len[i] = 1 + (i * 37) % AFD_SLAB_MAX;
			p[i] = afd_slab_alloc(&s, len[i]);
			ck_assert_ptr_nonnull(p[i]);
			ck_assert_uint_eq((uintptr_t)p[i] % 8, 0);
			ck_assert(memcmp(p[i], zero, len[i]) == 0);
			memset(p[i], (int)(i & 0xff) | 1, len[i]);
		}
		/* nothing overlaps: each still holds its own bytes */
		for (size_t i = 0; i < N; i++)
			ck_assert_uint_eq(p[i][len[i] - 1], (i & 0xff) | 1);
		size_t most = afd_slab_mapped(&s);
		ck_assert_uint_ge(most, N * 16);
		/* every other one, then the rest (freed cells are given out
		 * again, zeroed, in the next round) */
		for (size_t i = 0; i < N; i += 2)
			afd_slab_free(p[i]);
		ck_assert_uint_le(afd_slab_mapped(&s), most);
		for (size_t i = 1; i < N; i += 2)
			afd_slab_free(p[i]);
		ck_assert_uint_le(afd_slab_mapped(&s),
				  AFD_SLAB_CLASSES * AFD_SLAB_SEG);
	}
	afd_slab_free(NULL);
	free(p);
	free(len);
}
END_TEST

/* The cells of one size fill their segments: a node of 171 bytes costs
 * 176, not malloc's 192. */
START_TEST(cells_of_one_size_pack_their_segments)
{
	unsigned char **p = calloc(N, sizeof(*p));
	ck_assert_ptr_nonnull(p);
	for (size_t i = 0; i < N; i++)
		ck_assert_ptr_nonnull(p[i] = afd_slab_alloc(&s, 171));
	size_t per_seg = (AFD_SLAB_SEG - 64) / 176;
	ck_assert_uint_eq(afd_slab_mapped(&s),
			  ((N + per_seg - 1) / per_seg) * AFD_SLAB_SEG);
	for (size_t i = 0; i < N; i++)
		afd_slab_free(p[i]);
	ck_assert_uint_eq(afd_slab_mapped(&s), AFD_SLAB_SEG);
	free(p);
}
END_TEST

static Suite *slab_suite(void)
{
	Suite *su = suite_create("daemon_slab");
	TCase *tc = tcase_create("slab");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, a_segment_is_aligned_to_its_size);
	tcase_add_test(tc, only_small_blocks_fit);
	tcase_add_test(tc, cells_are_zeroed_apart_and_their_segments_go_back);
	tcase_add_test(tc, cells_of_one_size_pack_their_segments);
	suite_add_tcase(su, tc);
	return su;
}

int main(void)
{
	return aft_run(slab_suite());
}
