/* SPDX-License-Identifier: MIT */
/*
 * Tests for src/codec/ra.c over sources that misbehave: a source whose
 * reads fail, one that hands out a byte per call, and one that counts what
 * the parser reads (only the header).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "af_test.h"
#include "arrayfs/arrayfs.h"

START_TEST(io_error_is_reported)
{
	af_source src;
	unsigned char dummy[64] = { 0 };
	af_source_init_mem(&src, dummy, sizeof(dummy));
	src.pread = aft_failing_pread;
	af_array a;
	af_error err = { 0 };
	ck_assert_int_eq(af_ra_parse(&src, &a, &err), AF_E_IO);
	ck_assert_int_eq(err.sys_errno, EIO);
	static const af_array zeroed;
	ck_assert_msg(memcmp(&a, &zeroed, sizeof(a)) == 0,
		      "af_array not zeroed after a failed parse");
}
END_TEST

/* Hands out one byte per call, as a slow pipe-backed source might. */
static ssize_t one_byte_pread(const af_source *src, void *buf, size_t len,
			      uint64_t off)
{
	if (off >= src->size || len == 0)
		return 0;
	memcpy(buf, src->mem + off, 1);
	return 1;
}

START_TEST(short_reads_are_completed)
{
	size_t len;
	unsigned char *buf = aft_read_file(aft_reference("mnist_8.ra"), &len);
	af_source src;
	af_source_init_mem(&src, buf, len);
	src.pread = one_byte_pread;
	af_array a;
	af_error err = { 0 };
	ck_assert_int_eq(af_ra_parse(&src, &a, &err), AF_OK);
	ck_assert_uint_eq(a.ndim, 3);
	ck_assert_uint_eq(a.shape[2], 3);
	af_array_free(&a);
	free(buf);
}
END_TEST

/* Counts the bytes a parse asks for; ctx points at the running total. */
static ssize_t counting_pread(const af_source *src, void *buf, size_t len,
			      uint64_t off)
{
	if (off >= src->size)
		return 0;
	if (len > src->size - off)
		len = (size_t)(src->size - off);
	memcpy(buf, src->mem + off, len);
	*(uint64_t *)src->ctx += len;
	return (ssize_t)len;
}

static uint64_t bytes_read_by_parse(const unsigned char *buf, size_t len,
				    af_status want)
{
	uint64_t total = 0;
	af_source src;
	af_source_init_mem(&src, buf, len);
	src.pread = counting_pread;
	src.ctx = &total;
	af_array a;
	af_error err = { 0 };
	ck_assert_int_eq(af_ra_parse(&src, &a, &err), want);
	af_array_free(&a);
	return total;
}

START_TEST(parse_reads_only_the_header)
{
	size_t len;
	unsigned char *buf = aft_read_file(aft_reference("shepplogan.ra"), &len);
	ck_assert_uint_eq(bytes_read_by_parse(buf, len, AF_OK), 48 + 2 * 8);
	free(buf);
	/* ndims 2**40: refused from the fixed header, no dims read. */
	buf = aft_read_file(aft_fixture("ra/ndims_2_40.ra"), &len);
	ck_assert_uint_eq(bytes_read_by_parse(buf, len, AF_E_LIMIT), 48);
	free(buf);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ra_sources");
	TCase *tc = tcase_create("sources");
	tcase_add_test(tc, io_error_is_reported);
	tcase_add_test(tc, short_reads_are_completed);
	tcase_add_test(tc, parse_reads_only_the_header);
	suite_add_tcase(s, tc);
	return aft_run(s);
}
