/* SPDX-License-Identifier: MIT */
/*
 * Tests for src/codec/zarr_layout.c on hand-made arrays, for what numpy
 * cannot write: shapes whose counts reach 2^63, more than 32 dims, counts
 * that do not fit, zero dims, strict chunk names, the store's listing, and
 * arrays that get no store. (The numpy-written stores: test_zarr.c.)
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "af_test.h"
#include "arrayfs/arrayfs.h"
#include "arrayfs/af_zarr.h"

/* Byte i of a huge array: a pattern any source offset can compute. */
static unsigned char pattern_at(uint64_t off)
{
	return (unsigned char)((off * 131) >> 3);
}

static ssize_t pattern_pread(const af_source *src, void *buf, size_t len,
			     uint64_t off)
{
	if (off >= src->size)
		return 0;
	if (len > src->size - off)
		len = (size_t)(src->size - off);
	for (size_t i = 0; i < len; i++)
		((unsigned char *)buf)[i] = pattern_at(off + i);
	return (ssize_t)len;
}

static void pattern_source(af_source *src, uint64_t size)
{
	memset(src, 0, sizeof(*src));
	src->pread = pattern_pread;
	src->size = size;
	src->fd = -1;
}

static void check_name(const af_zarr_layout *l, uint64_t index,
		       const char *want)
{
	char name[AF_ZARR_NAME_MAX];
	size_t len;
	ck_assert_int_eq(af_zarr_chunk_name(l, index, name, &len), AF_OK);
	ck_assert_str_eq(name, want);
	ck_assert_uint_eq(len, strlen(want));
	uint64_t back;
	ck_assert_int_eq(af_zarr_chunk_parse(l, want, &back), AF_OK);
	ck_assert_uint_eq(back, index);
}

START_TEST(huge_1d_array_counts_its_chunks_without_overflow)
{
	const uint64_t shape[] = { 1ULL << 62 };
	af_array a = aft_hand_array("|u1", false, 1, shape);
	af_zarr_layout l;
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, AF_ZARR_CHUNK_DEFAULT, NULL),
			 AF_OK);
	ck_assert_uint_eq(l.chunk_bytes, 8u << 20);
	ck_assert_uint_eq(l.nchunks, 1ULL << 39);
	ck_assert_uint_eq(af_zarr_entry_count(&l), 3 + (1ULL << 39));
	check_name(&l, (1ULL << 39) - 1, "549755813887");
	af_zarr_chunk ch;
	ck_assert_int_eq(af_zarr_chunk_get(&l, (1ULL << 39) - 1, &ch), AF_OK);
	ck_assert_uint_eq(ch.data_off, (1ULL << 62) - (8u << 20));
	ck_assert_uint_eq(ch.data_len, 8u << 20);
	ck_assert_int_eq(af_zarr_chunk_get(&l, 1ULL << 39, &ch), AF_E_RANGE);
	uint64_t idx;
	ck_assert_int_eq(af_zarr_chunk_parse(&l, "549755813888", &idx), AF_E_RANGE);
}
END_TEST

START_TEST(huge_2d_array_cuts_rows_and_reads_a_zero_tail)
{
	/* rows of 10^9 + 7 bytes: more than 8 MiB, so the last axis is cut */
	const uint64_t shape[] = { 3000000000ULL, 1000000007ULL };
	af_array a = aft_hand_array("|u1", false, 2, shape);
	af_zarr_layout l;
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, AF_ZARR_CHUNK_DEFAULT, NULL),
			 AF_OK);
	ck_assert_uint_eq(af_zarr_chunk_len(&l, 0), 1);
	ck_assert_uint_eq(af_zarr_chunk_len(&l, 1), 8u << 20);
	ck_assert_uint_eq(l.split_chunks, 120);
	ck_assert_uint_eq(l.nchunks, 3000000000ULL * 120);
	uint64_t last = l.nchunks - 1;
	check_name(&l, last, "2999999999.119");
	check_name(&l, 121, "1.1");

	af_zarr_chunk ch;
	ck_assert_int_eq(af_zarr_chunk_get(&l, last, &ch), AF_OK);
	uint64_t tail_data = 1000000007ULL - 119ULL * (8u << 20);
	ck_assert_uint_eq(ch.data_len, tail_data);
	ck_assert_uint_eq(ch.data_off, a.data_size - tail_data);

	af_source src;
	pattern_source(&src, a.data_size);
	af_view *data;
	ck_assert_int_eq(af_view_open(&data, &a, &src, AF_VIEW_DATA, NULL), AF_OK);
	af_extent e;
	ck_assert_int_eq(af_zarr_chunk_extent(&ch, data, 10, &e), AF_OK);
	ck_assert_int_eq(e.kind, AF_EXTENT_SOURCE);
	ck_assert_uint_eq(e.src_off, ch.data_off + 10);
	ck_assert_uint_eq(e.len, tail_data - 10);
	ck_assert_int_eq(af_zarr_chunk_extent(&ch, data, tail_data, &e), AF_OK);
	ck_assert_int_eq(e.kind, AF_EXTENT_ZERO);
	ck_assert_uint_eq(e.len, ch.size - tail_data);

	/* a read across the array's edge: data, then zeros, then the end */
	unsigned char buf[64];
	size_t got;
	ck_assert_int_eq(af_zarr_chunk_read(&ch, data, buf, sizeof(buf),
					    tail_data - 16, &got, NULL), AF_OK);
	ck_assert_uint_eq(got, sizeof(buf));
	for (unsigned i = 0; i < 16; i++)
		ck_assert_uint_eq(buf[i], pattern_at(a.data_size - 16 + i));
	for (unsigned i = 16; i < sizeof(buf); i++)
		ck_assert_uint_eq(buf[i], 0);
	ck_assert_int_eq(af_zarr_chunk_read(&ch, data, buf, sizeof(buf),
					    ch.size - 5, &got, NULL), AF_OK);
	ck_assert_uint_eq(got, 5);
	af_view_close(data);
}
END_TEST

START_TEST(counts_that_do_not_fit_are_refused)
{
	af_zarr_layout l;
	af_error err;
	const uint64_t bytes_overflow[] = { 1ULL << 32, 1ULL << 32 };
	af_array a = aft_hand_array("<f8", false, 2, bytes_overflow);
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, 1 << 20, &err),
			 AF_E_OVERFLOW);
	ck_assert_uint_eq(l.nchunks, 0);
	const uint64_t count_overflow[] = { 1ULL << 40, 1ULL << 40 };
	a = aft_hand_array("|u1", true, 2, count_overflow);
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, 1, &err), AF_E_OVERFLOW);

	/* one chunk a byte: the entry count must still fit a readdir offset */
	const uint64_t too_many[] = { (1ULL << 63) - 3 };
	a = aft_hand_array("|u1", false, 1, too_many);
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, 1, &err), AF_E_OVERFLOW);
	const uint64_t just_fits[] = { (1ULL << 63) - 4 };
	a = aft_hand_array("|u1", false, 1, just_fits);
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, 1, &err), AF_OK);
	ck_assert_uint_eq(af_zarr_entry_count(&l), (uint64_t)INT64_MAX);
	check_name(&l, (1ULL << 63) - 5, "9223372036854775803");
}
END_TEST

START_TEST(zero_dims_give_chunk_length_1_and_no_chunk_files)
{
	/* the non-zero dims could overflow together; nothing multiplies them */
	const uint64_t shape[] = { 1ULL << 40, 0, 1ULL << 40 };
	af_array a = aft_hand_array("<f8", false, 3, shape);
	af_zarr_layout l;
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, 8u << 20, NULL), AF_OK);
	ck_assert_uint_eq(l.nchunks, 0);
	ck_assert_uint_eq(af_zarr_chunk_len(&l, 0), 1);
	ck_assert_uint_eq(af_zarr_chunk_len(&l, 1), 1);
	ck_assert_uint_eq(af_zarr_chunk_len(&l, 2), 1u << 20);
	ck_assert_uint_eq(af_zarr_entry_count(&l), 3);
	uint64_t idx;
	ck_assert_int_eq(af_zarr_chunk_parse(&l, "0.0.0", &idx), AF_E_RANGE);
	af_zarr_entry en;
	ck_assert_int_eq(af_zarr_lookup(&l, "0.0.0", &en, &idx), AF_E_RANGE);
	ck_assert_int_eq(af_zarr_entry_at(&l, 3, &en), AF_E_RANGE);
	char *text;
	size_t len;
	ck_assert_int_eq(af_zarr_text(&l, AF_ZARR_ZARRAY, &text, &len, NULL),
			 AF_OK);
	ck_assert_ptr_nonnull(strstr(text, "\"chunks\": [\n        1,\n        1,\n"
					  "        1048576\n    ]"));
	free(text);
}
END_TEST

START_TEST(sixty_four_dims_name_every_chunk)
{
	uint64_t shape[AF_NDIM_MAX];
	for (unsigned i = 0; i < AF_NDIM_MAX; i++)
		shape[i] = 1;
	shape[0] = 3;
	shape[AF_NDIM_MAX - 1] = 5;
	af_array a = aft_hand_array("|u1", false, AF_NDIM_MAX, shape);
	af_zarr_layout l;
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, 4, NULL), AF_OK);
	ck_assert_uint_eq(l.nchunks, 6);
	ck_assert_uint_eq(l.chunk_bytes, 4);
	char want[AF_ZARR_NAME_MAX];
	size_t n = 0;
	for (unsigned i = 0; i < AF_NDIM_MAX; i++)
		n += (size_t)snprintf(want + n, sizeof(want) - n, "%s%s", i ? "." : "",
				      i == 0 ? "2" : i == AF_NDIM_MAX - 1 ? "1" : "0");
	check_name(&l, 5, want);
	af_zarr_chunk ch;
	ck_assert_int_eq(af_zarr_chunk_get(&l, 5, &ch), AF_OK);
	ck_assert_uint_eq(ch.data_off, 14);
	ck_assert_uint_eq(ch.data_len, 1);

	/* Fortran order mirrors it: whole first axis, the last one cut */
	a.fortran_order = true;
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, 4, NULL), AF_OK);
	ck_assert_uint_eq(af_zarr_chunk_len(&l, 0), 3);
	ck_assert_uint_eq(af_zarr_chunk_len(&l, AF_NDIM_MAX - 1), 1);
	ck_assert_uint_eq(l.chunk_bytes, 3);
	ck_assert_uint_eq(l.nchunks, 5);
	memcpy(want + n - 1, "4", 2);
	want[0] = '0';
	check_name(&l, 4, want);
	ck_assert_int_eq(af_zarr_chunk_get(&l, 4, &ch), AF_OK);
	ck_assert_uint_eq(ch.data_off, 12);
	ck_assert_uint_eq(ch.data_len, 3);

	uint64_t more[AF_NDIM_MAX + 1] = { 0 };
	a = aft_hand_array("|u1", false, AF_NDIM_MAX + 1, more);
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, 4, NULL), AF_E_SHAPE);
}
END_TEST

START_TEST(chunk_names_are_parsed_strictly)
{
	const uint64_t shape[] = { 3, 10 };
	af_array a = aft_hand_array("<i4", false, 2, shape);
	af_zarr_layout l;
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, 20, NULL), AF_OK);
	ck_assert_uint_eq(l.split_chunks, 2);
	check_name(&l, 0, "0.0");
	check_name(&l, 5, "2.1");
	static const char *const bad[] = {
		"", "0", "1", "0.0.0", "00.0", "0.00", "01.1", "+1.0", "-0.0",
		"0.-0", " 0.0", "0.0 ", "0..0", ".0.0", "0.0.", "3.0", "0.2",
		"1e0.0", "0x1.0", "18446744073709551616.0", "18446744073709551617.0",
		"0,0", "0/0", "0.0\n", ".zgroup", "zarr.json\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t idx = 99;
		ck_assert_msg(af_zarr_chunk_parse(&l, bad[i], &idx) == AF_E_RANGE,
			      "'%s' parsed", bad[i]);
		af_zarr_entry en;
		ck_assert_int_eq(af_zarr_lookup(&l, bad[i], &en, &idx), AF_E_RANGE);
	}
	uint64_t idx;
	ck_assert_int_eq(af_zarr_chunk_parse(&l, NULL, &idx), AF_E_RANGE);

	/* 0-d: one chunk, "0" */
	a = aft_hand_array("<i4", false, 0, NULL);
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, 1, NULL), AF_OK);
	ck_assert_uint_eq(l.nchunks, 1);
	ck_assert_uint_eq(l.chunk_bytes, 4);
	check_name(&l, 0, "0");
	static const char *const bad0[] = { "", "00", "1", "0.0", "-0", "+0" };
	for (size_t i = 0; i < sizeof(bad0) / sizeof(bad0[0]); i++)
		ck_assert_int_eq(af_zarr_chunk_parse(&l, bad0[i], &idx), AF_E_RANGE);
}
END_TEST

START_TEST(store_lists_metadata_then_chunks)
{
	const uint64_t shape[] = { 4 };
	af_array a = aft_hand_array("|S5", false, 1, shape);
	af_zarr_layout l;
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, 10, NULL), AF_OK);
	ck_assert_ptr_null(l.v3_type);
	ck_assert_uint_eq(af_zarr_entry_count(&l), 4);
	af_zarr_entry en;
	uint64_t at;
	ck_assert_int_eq(af_zarr_entry_at(&l, 0, &en), AF_OK);
	ck_assert_str_eq(en.name, ".zarray");
	ck_assert_int_eq(en.kind, AF_ZARR_ZARRAY);
	ck_assert_int_eq(af_zarr_entry_at(&l, 1, &en), AF_OK);
	ck_assert_str_eq(en.name, ".zattrs");
	ck_assert_int_eq(af_zarr_entry_at(&l, 2, &en), AF_OK);
	ck_assert_str_eq(en.name, "0");
	ck_assert_int_eq(en.kind, AF_ZARR_CHUNK);
	ck_assert_int_eq(af_zarr_lookup(&l, "zarr.json", &en, &at), AF_E_RANGE);
	char *text = (char *)1;
	size_t len;
	ck_assert_int_eq(af_zarr_text(&l, AF_ZARR_ZARR_JSON, &text, &len, NULL),
			 AF_E_RANGE);
	ck_assert_ptr_null(text);
	ck_assert_int_eq(af_zarr_text(&l, AF_ZARR_CHUNK, &text, &len, NULL),
			 AF_E_RANGE);

	a = aft_hand_array("<f8", false, 1, shape);
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, 10, NULL), AF_OK);
	ck_assert_str_eq(l.v3_type, "float64");
	ck_assert_int_eq(af_zarr_lookup(&l, "zarr.json", &en, &at), AF_OK);
	ck_assert_uint_eq(at, 2);
	ck_assert_int_eq(en.kind, AF_ZARR_ZARR_JSON);
	ck_assert_int_eq(af_zarr_lookup(&l, "3", &en, &at), AF_OK);
	ck_assert_uint_eq(at, 6);
	ck_assert_uint_eq(en.chunk, 3);
}
END_TEST

START_TEST(default_chunk_is_8_mib_and_oversized_elements_stand_alone)
{
	const uint64_t shape[] = { 4096, 4096 };
	af_array a = aft_hand_array("<f8", false, 2, shape);
	af_zarr_layout l;
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, AF_ZARR_CHUNK_DEFAULT, NULL),
			 AF_OK);
	ck_assert_uint_eq(af_zarr_chunk_len(&l, 0), 256);
	ck_assert_uint_eq(af_zarr_chunk_len(&l, 1), 4096);
	ck_assert_uint_eq(l.chunk_bytes, 8u << 20);
	ck_assert_uint_eq(l.nchunks, 16);

	/* a 16-byte element is larger than a 5-byte budget: one a chunk */
	a = aft_hand_array("<c16", true, 2, shape);
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, 5, NULL), AF_OK);
	ck_assert_uint_eq(l.chunk_bytes, 16);
	ck_assert_uint_eq(l.nchunks, 4096ULL * 4096);
	ck_assert_uint_eq(af_zarr_chunk_len(&l, 0), 1);
}
END_TEST

START_TEST(arrays_without_a_store_are_refused)
{
	const uint64_t shape[] = { 2 };
	af_zarr_layout l;
	af_error err;
	af_array a = aft_hand_array("|O", false, 1, shape);
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, 8, &err), AF_E_UNSUPPORTED);
	ck_assert_uint_gt(strlen(err.msg), 0);
	a = aft_hand_array("<i4", false, 1, shape);
	a.dtype.has_object = true;   /* a field holding objects */
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, 8, &err), AF_E_UNSUPPORTED);
	a = aft_hand_array("<M8[s]", false, 1, shape);
	a.format = AF_FORMAT_RA;     /* no RawArray type: no B.npy descr */
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, 8, &err), AF_E_UNSUPPORTED);
	a = aft_hand_array("<i4", false, 1, shape);
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, 0, &err), AF_E_INVAL);
	ck_assert_int_eq(af_zarr_layout_init(&l, NULL, 8, &err), AF_E_INVAL);
	a.descr = NULL;
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, 8, &err), AF_E_INVAL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("zarr_layout");
	TCase *tc = tcase_create("layout");
	tcase_add_test(tc, huge_1d_array_counts_its_chunks_without_overflow);
	tcase_add_test(tc, huge_2d_array_cuts_rows_and_reads_a_zero_tail);
	tcase_add_test(tc, counts_that_do_not_fit_are_refused);
	tcase_add_test(tc, zero_dims_give_chunk_length_1_and_no_chunk_files);
	tcase_add_test(tc, sixty_four_dims_name_every_chunk);
	tcase_add_test(tc, chunk_names_are_parsed_strictly);
	tcase_add_test(tc, store_lists_metadata_then_chunks);
	tcase_add_test(tc, default_chunk_is_8_mib_and_oversized_elements_stand_alone);
	tcase_add_test(tc, arrays_without_a_store_are_refused);
	suite_add_tcase(s, tc);
	return aft_run(s);
}
