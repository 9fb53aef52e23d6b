/* SPDX-License-Identifier: MIT */
/*
 * Tests for src/codec/text.c: the shape, dtype and header files of an array
 * directory, over hand-built af_arrays (.npy and .ra; 0-d, 1-d, big dims)
 * and one parsed reference sample.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "af_test.h"
#include "arrayfs/arrayfs.h"

typedef af_status (*text_fn)(const af_array *, char **, size_t *);

/* Runs @p fn on @p a and checks the whole text and its length. */
static void expect_text(text_fn fn, const af_array *a, const char *want)
{
	char *out = (char *)"not set";
	size_t len = 12345;
	ck_assert_int_eq(fn(a, &out, &len), AF_OK);
	ck_assert_ptr_nonnull(out);
	ck_assert_str_eq(out, want);
	ck_assert_uint_eq(len, strlen(want));
	ck_assert_uint_eq(strlen(out), len);
	free(out);
}

static af_array npy_array(uint64_t *shape, unsigned ndim, char *descr,
			  char *header)
{
	af_array a = { 0 };
	a.format = AF_FORMAT_NPY;
	a.version_major = 1;
	a.shape = shape;
	a.ndim = ndim;
	a.descr = descr;
	a.header_text = header;
	return a;
}

static af_array ra_array(uint64_t *shape, unsigned ndim, uint64_t flags,
			 uint64_t eltype, uint64_t elbyte, uint64_t size)
{
	af_array a = { 0 };
	a.format = AF_FORMAT_RA;
	a.fortran_order = true;
	a.shape = shape;
	a.ndim = ndim;
	a.ra_flags = flags;
	a.ra_eltype = eltype;
	a.ra_elbyte = elbyte;
	a.ra_size = size;
	return a;
}

START_TEST(shape_2d_in_header_order)
{
	uint64_t dims[] = { 3, 4 };
	af_array a = npy_array(dims, 2, (char *)"<f8", NULL);
	expect_text(af_text_shape, &a, "3 4\n");
}
END_TEST

START_TEST(shape_0d_is_a_bare_newline)
{
	af_array a = npy_array(NULL, 0, (char *)"<f8", NULL);
	expect_text(af_text_shape, &a, "\n");
}
END_TEST

START_TEST(shape_1d_zero_length)
{
	uint64_t dims[] = { 0 };
	af_array a = npy_array(dims, 1, (char *)"|u1", NULL);
	expect_text(af_text_shape, &a, "0\n");
}
END_TEST

START_TEST(shape_big_dims_are_exact_decimal)
{
	uint64_t dims[] = { UINT64_MAX, 1ULL << 40, 1 };
	af_array a = ra_array(dims, 3, 0, 2, 1, 0);
	expect_text(af_text_shape, &a,
		    "18446744073709551615 1099511627776 1\n");
}
END_TEST

START_TEST(shape_max_ndim)
{
	uint64_t dims[AF_NDIM_MAX];
	char want[AF_NDIM_MAX * 4 + 2] = "";
	for (unsigned i = 0; i < AF_NDIM_MAX; i++) {
		dims[i] = 100 + i;
		char num[8];
		snprintf(num, sizeof(num), i ? " %u" : "%u", 100 + i);
		strcat(want, num);
	}
	strcat(want, "\n");
	af_array a = ra_array(dims, AF_NDIM_MAX, 0, 2, 1, 0);
	expect_text(af_text_shape, &a, want);
}
END_TEST

START_TEST(dtype_is_descr_and_newline)
{
	af_array a = npy_array(NULL, 0, (char *)"<M8[ns]", NULL);
	expect_text(af_text_dtype, &a, "<M8[ns]\n");
	a.descr = (char *)"[('x', '<i4'), ('y', '<f8', (2,))]";
	expect_text(af_text_dtype, &a, "[('x', '<i4'), ('y', '<f8', (2,))]\n");
	af_array r = ra_array(NULL, 0, 0, 5, 2, 2);
	r.descr = (char *)"bfloat16";
	expect_text(af_text_dtype, &r, "bfloat16\n");
}
END_TEST

START_TEST(npy_header_is_dict_and_newline)
{
	uint64_t dims[] = { 3 };
	char dict[] = "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }";
	af_array a = npy_array(dims, 1, (char *)"<f8", dict);
	expect_text(af_text_header, &a,
		    "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }\n");
}
END_TEST

START_TEST(ra_header_lists_every_field)
{
	uint64_t dims[] = { 28, 28, 3 };
	af_array a = ra_array(dims, 3, 2, 2, 1, 486);
	expect_text(af_text_header, &a,
		    "magic: rawarray\n"
		    "flags: 2\n"
		    "eltype: 2\n"
		    "elbyte: 1\n"
		    "size: 486\n"
		    "ndims: 3\n"
		    "dims: 28 28 3\n");
}
END_TEST

START_TEST(ra_header_0d_has_no_trailing_space)
{
	af_array a = ra_array(NULL, 0, 0, 3, 8, 8);
	expect_text(af_text_header, &a,
		    "magic: rawarray\n"
		    "flags: 0\n"
		    "eltype: 3\n"
		    "elbyte: 8\n"
		    "size: 8\n"
		    "ndims: 0\n"
		    "dims:\n");
}
END_TEST

START_TEST(ra_header_unknown_flags_are_plain_decimal)
{
	uint64_t dims[] = { 1ULL << 63 };
	af_array a = ra_array(dims, 1, (1ULL << 63) | 5, 0, 12, UINT64_MAX);
	expect_text(af_text_header, &a,
		    "magic: rawarray\n"
		    "flags: 9223372036854775813\n"
		    "eltype: 0\n"
		    "elbyte: 12\n"
		    "size: 18446744073709551615\n"
		    "ndims: 1\n"
		    "dims: 9223372036854775808\n");
}
END_TEST

/* The text of a real parsed file, end to end through af_ra_parse. */
START_TEST(parsed_reference_sample_texts)
{
	size_t len;
	unsigned char *buf = aft_read_file(aft_reference("test.ra"), &len);
	af_source src;
	af_source_init_mem(&src, buf, len);
	af_array a;
	af_error err = { 0 };
	ck_assert_int_eq(af_ra_parse(&src, &a, &err), AF_OK);
	expect_text(af_text_shape, &a, "3 4\n");
	expect_text(af_text_dtype, &a, "<c8\n");
	expect_text(af_text_header, &a,
		    "magic: rawarray\nflags: 0\neltype: 4\nelbyte: 8\n"
		    "size: 96\nndims: 2\ndims: 3 4\n");
	af_array_free(&a);
	free(buf);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("text");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, shape_2d_in_header_order);
	tcase_add_test(tc, shape_0d_is_a_bare_newline);
	tcase_add_test(tc, shape_1d_zero_length);
	tcase_add_test(tc, shape_big_dims_are_exact_decimal);
	tcase_add_test(tc, shape_max_ndim);
	tcase_add_test(tc, dtype_is_descr_and_newline);
	tcase_add_test(tc, npy_header_is_dict_and_newline);
	tcase_add_test(tc, ra_header_lists_every_field);
	tcase_add_test(tc, ra_header_0d_has_no_trailing_space);
	tcase_add_test(tc, ra_header_unknown_flags_are_plain_decimal);
	tcase_add_test(tc, parsed_reference_sample_texts);
	suite_add_tcase(s, tc);
	return aft_run(s);
}
