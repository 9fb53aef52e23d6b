/* SPDX-License-Identifier: MIT */
/*
 * Tests for src/codec/lz4.c: the raw LZ4 block decoder against the
 * reference samples (each *_z.ra decodes to the data of its plain twin),
 * cut, corrupted and mis-sized blocks, and the size limits.
 */
#include <lz4.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "af_test.h"
#include "../../src/codec/lz4_i.h"

START_TEST(reference_samples_decode_to_their_twins)
{
	static const char *const pairs[][2] = {
		{ "mnist_8_z.ra", "mnist_8.ra" },
		{ "cifar_airplane_z.ra", "cifar_airplane.ra" },
	};
	for (size_t i = 0; i < 2; i++) {
		size_t zlen, plen;
		unsigned char *z = aft_ra_data(aft_reference(pairs[i][0]), &zlen);
		unsigned char *plain = aft_ra_data(aft_reference(pairs[i][1]), &plen);
		unsigned char *out = malloc(plen);
		af_error err;
		ck_assert_msg(af_lz4_decode_block(z, zlen, out, plen, 72, &err) ==
			      AF_OK, "%s: %s", pairs[i][0], err.msg);
		ck_assert(memcmp(out, plain, plen) == 0);
		free(out);
		free(plain);
		free(z);
	}
}
END_TEST

START_TEST(cut_block_is_corrupt)
{
	size_t zlen;
	unsigned char *z = aft_ra_data(aft_reference("mnist_8_z.ra"), &zlen);
	unsigned char out[2352];
	for (size_t cut = 0; cut < zlen; cut++) {
		af_error err;
		af_status st = af_lz4_decode_block(z, cut, out, sizeof(out), 72, &err);
		if (st != AF_E_CORRUPT)
			ck_abort_msg("cut at %zu: status %d", cut, (int)st);
	}
	free(z);
}
END_TEST

START_TEST(decoded_length_mismatch_is_corrupt)
{
	size_t zlen;
	unsigned char *z = aft_ra_data(aft_reference("mnist_8_z.ra"), &zlen);
	unsigned char out[2353];
	af_error err;
	ck_assert_int_eq(af_lz4_decode_block(z, zlen, out, 2353, 72, &err),
			 AF_E_CORRUPT);
	ck_assert_ptr_nonnull(strstr(err.msg, "decodes to 2352 bytes, expected 2353"));
	ck_assert_uint_eq(err.offset, 72);
	ck_assert_int_eq(af_lz4_decode_block(z, zlen, out, 2351, 72, &err),
			 AF_E_CORRUPT);
	ck_assert_ptr_nonnull(strstr(err.msg, "more than 2351"));
	free(z);
}
END_TEST

START_TEST(match_before_output_start_is_corrupt)
{
	/* 1 literal, then a match 0xFFFF bytes back, then 5 literals */
	static const unsigned char block[] = { 0x10, 'a', 0xFF, 0xFF, 0x50,
					       'b', 'c', 'd', 'e', 'f' };
	unsigned char out[64];
	af_error err;
	ck_assert_int_eq(af_lz4_decode_block(block, 4, out, 5, 0, &err),
			 AF_E_CORRUPT);
	ck_assert_int_eq(af_lz4_decode_block(block, sizeof(block), out, 10, 0,
					     &err), AF_E_CORRUPT);
}
END_TEST

/* A flipped block is refused as corrupt, or decodes to exactly what
 * liblz4 (the reference RawArray library's decoder) makes of it. */
START_TEST(random_byte_flips_are_corrupt_or_decode_as_liblz4)
{
	size_t zlen;
	unsigned char *orig = aft_ra_data(aft_reference("mnist_8_z.ra"), &zlen);
	unsigned char *z = malloc(zlen);
	/* exactly the decoded size: valgrind sees any write past it */
	unsigned char *out = malloc(2352), *ref = malloc(2352);
	uint64_t seed = 77;
	int corrupt = 0, decoded = 0;
	for (int i = 0; i < 5000; i++) {
		memcpy(z, orig, zlen);
		for (int j = 0; j < 1 + i % 4; j++)
			z[aft_rand(&seed) % zlen] ^=
				(unsigned char)(1 + aft_rand(&seed) % 255);
		af_error err = { 0 };
		af_status st = af_lz4_decode_block(z, zlen, out, 2352, 0, &err);
		if (st != AF_OK) {
			ck_assert_msg(st == AF_E_CORRUPT, "flip %d: status %d", i, (int)st);
			ck_assert_msg(err.msg[0] != '\0', "flip %d: no reason", i);
			corrupt++;
			continue;
		}
		int n = LZ4_decompress_safe((const char *)z, (char *)ref, (int)zlen, 2352);
		ck_assert_msg(n == 2352, "flip %d: decoded, liblz4 says %d", i, n);
		ck_assert_msg(memcmp(out, ref, 2352) == 0,
			      "flip %d: bytes differ from liblz4's", i);
		decoded++;
	}
	/* both sides reached, or the flips test nothing */
	ck_assert_int_gt(corrupt, 0);
	ck_assert_int_gt(decoded, 0);
	free(ref);
	free(out);
	free(z);
	free(orig);
}
END_TEST

START_TEST(empty_block)
{
	static const unsigned char token = 0x00; /* no literals, no match */
	unsigned char out[4];
	af_error err;
	ck_assert_int_eq(af_lz4_decode_block(&token, 1, out, 0, 0, &err), AF_OK);
	ck_assert_int_eq(af_lz4_decode_block(&token, 0, out, 0, 0, &err), AF_OK);
	ck_assert_int_eq(af_lz4_decode_block(&token, 0, out, 4, 9, &err),
			 AF_E_CORRUPT);
	ck_assert_uint_eq(err.offset, 9);
	ck_assert_int_eq(af_lz4_decode_block(&token, 1, out, 4, 0, &err),
			 AF_E_CORRUPT);
}
END_TEST

START_TEST(sizes_past_liblz4_int_range_are_limit)
{
	unsigned char b[1] = { 0 };
	af_error err;
	/* the sizes are refused before either buffer is touched */
	ck_assert_int_eq(af_lz4_decode_block(b, AF_LZ4_MAX_BLOCK + 1, b, 1, 0,
					     &err), AF_E_LIMIT);
	ck_assert_int_eq(af_lz4_decode_block(b, 1, b, AF_LZ4_MAX_BLOCK + 1, 0,
					     &err), AF_E_LIMIT);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("lz4");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, reference_samples_decode_to_their_twins);
	tcase_add_test(tc, cut_block_is_corrupt);
	tcase_add_test(tc, decoded_length_mismatch_is_corrupt);
	tcase_add_test(tc, match_before_output_start_is_corrupt);
	tcase_add_test(tc, empty_block);
	tcase_add_test(tc, sizes_past_liblz4_int_range_are_limit);
	suite_add_tcase(s, tc);
	tc = tcase_create("mangled");
	aft_tag_slow(tc);
	tcase_add_test(tc, random_byte_flips_are_corrupt_or_decode_as_liblz4);
	suite_add_tcase(s, tc);
	return aft_run(s);
}
