/* SPDX-License-Identifier: MIT */
/*
 * Tests for src/codec/npy.c: small hand-written headers, every fixture of
 * scripts/fixtures/gen_npy.py against numpy's verdict (expected.txt), and
 * truncations and seeded bit flips of every valid fixture's header.
 *
 * Intentional differences from numpy 1.24's reader (see OVERRIDE in
 * gen_npy.py): headers over 10000 characters are accepted (numpy needs
 * max_header_size); True is not a dimension; a negative dimension is
 * refused (numpy 1.24 loads (-2,)); a lower-case l suffix is accepted in
 * v1/v2 like an L; r'' strings and a top-level (type, shape) descr are
 * refused; more than 64 dims is AF_E_LIMIT (numpy stops at 32).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "af_test.h"
#include "arrayfs/arrayfs.h"

/* Builds a v1 .npy file from @p header (no padding) plus @p ndata zero bytes. */
static unsigned char *mk_npy(const char *header, int major, size_t ndata, size_t *len)
{
	size_t hl = strlen(header), pre = major == 1 ? 10 : 12;
	unsigned char *b = calloc(1, pre + hl + ndata + 1);
	ck_assert_ptr_nonnull(b);
	memcpy(b, "\x93NUMPY", 6);
	b[6] = (unsigned char)major;
	b[8] = (unsigned char)hl;
	b[9] = (unsigned char)(hl >> 8);
	if (major != 1) {
		b[10] = (unsigned char)(hl >> 16);
		b[11] = (unsigned char)(hl >> 24);
	}
	memcpy(b + pre, header, hl);
	*len = pre + hl + ndata;
	return b;
}

static af_status parse_text(const char *header, int major, size_t ndata, af_array *a,
			    af_error *err)
{
	size_t len;
	unsigned char *b = mk_npy(header, major, ndata, &len);
	af_source src;
	af_source_init_mem(&src, b, len);
	af_status st = af_npy_parse(&src, a, err);
	free(b);
	return st;
}

static af_status status_of(const char *header, int major, size_t ndata)
{
	af_array a;
	af_error err = { 0 };
	af_status st = parse_text(header, major, ndata, &a, &err);
	if (st == AF_OK)
		af_array_free(&a);
	else
		ck_assert_uint_eq(a.ndim, 0);
	return st;
}

START_TEST(typical_header)
{
	af_array a;
	af_error err = { 0 };
	ck_assert_int_eq(parse_text("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }   \n",
				    1, 48, &a, &err), AF_OK);
	ck_assert_str_eq(a.descr, "<f8");
	ck_assert_str_eq(a.header_text, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }");
	ck_assert_uint_eq(a.ndim, 2);
	ck_assert_uint_eq(a.shape[1], 3);
	ck_assert_uint_eq(a.count, 6);
	ck_assert_uint_eq(a.data_size, 48);
	ck_assert_uint_eq(a.stored_size, 48);
	ck_assert_uint_eq(a.data_offset, 10 + 63);
	ck_assert_int_eq(a.format, AF_FORMAT_NPY);
	ck_assert_int_eq(a.dtype.kind, AF_KIND_FLOAT);
	af_array_free(&a);
}
END_TEST

START_TEST(list_descr_kept_as_written)
{
	af_array a;
	af_error err = { 0 };
	ck_assert_int_eq(parse_text("{'descr': [('x', '<i4'),  ('y', '>f8', (2,))], "
				    "'fortran_order': True, 'shape': ()}", 1, 20, &a, &err), AF_OK);
	ck_assert_str_eq(a.descr, "[('x', '<i4'),  ('y', '>f8', (2,))]");
	ck_assert_uint_eq(a.dtype.itemsize, 20);
	ck_assert_uint_eq(a.count, 1);
	ck_assert(a.fortran_order);
	af_array_free(&a);
}
END_TEST

START_TEST(shape_int_is_not_tuple)
{
	ck_assert_int_eq(status_of("{'descr': '<f8', 'fortran_order': False, 'shape': (3)}", 1, 24),
			 AF_E_SHAPE);
	ck_assert_int_eq(status_of("{'descr': '<f8', 'fortran_order': False, 'shape': 3}", 1, 24),
			 AF_E_SHAPE);
}
END_TEST

START_TEST(shape_overflow_refused)
{
	ck_assert_int_eq(status_of("{'descr': '<f8', 'fortran_order': False, "
				   "'shape': (4294967296, 4294967296)}", 1, 0), AF_E_OVERFLOW);
	ck_assert_int_eq(status_of("{'descr': '<f8', 'fortran_order': False, "
				   "'shape': (4294967296, 536870912)}", 1, 0), AF_E_OVERFLOW);
	ck_assert_int_eq(status_of("{'descr': '<f8', 'fortran_order': False, "
				   "'shape': (0, 99999999999999999999999)}", 1, 0), AF_E_OVERFLOW);
}
END_TEST

START_TEST(zero_dim_makes_count_zero)
{
	ck_assert_int_eq(status_of("{'descr': '<f8', 'fortran_order': False, "
				   "'shape': (4294967296, 4294967296, 0)}", 1, 0), AF_OK);
}
END_TEST

START_TEST(too_many_dims_is_limit)
{
	char h[512] = "{'descr': '<f8', 'fortran_order': False, 'shape': (";
	for (int i = 0; i < 65; i++)
		strcat(h, "1,");
	strcat(h, ")}");
	ck_assert_int_eq(status_of(h, 1, 8), AF_E_LIMIT);
}
END_TEST

START_TEST(signed_zero_and_plus_dims)
{
	ck_assert_int_eq(status_of("{'descr': '<f8', 'fortran_order': False, 'shape': (+2, -0)}", 1, 0),
			 AF_OK);
	ck_assert_int_eq(status_of("{'descr': '<f8', 'fortran_order': False, 'shape': (2, -1)}", 1, 0),
			 AF_E_SHAPE);
}
END_TEST

START_TEST(bool_dim_refused)
{
	ck_assert_int_eq(status_of("{'descr': '<f8', 'fortran_order': False, 'shape': (True,)}", 1, 8),
			 AF_E_SHAPE);
}
END_TEST

START_TEST(truncated_data_offset)
{
	af_array a;
	af_error err = { 0 };
	ck_assert_int_eq(parse_text("{'descr': '<f8', 'fortran_order': False, 'shape': (2,)}",
				    1, 15, &a, &err), AF_E_TRUNCATED);
	ck_assert_uint_ne(err.offset, AF_NO_OFFSET);
	ck_assert_ptr_null(a.descr);
}
END_TEST

START_TEST(object_data_not_checked)
{
	af_array a;
	af_error err = { 0 };
	ck_assert_int_eq(parse_text("{'descr': '|O', 'fortran_order': False, 'shape': (1000,)}",
				    1, 5, &a, &err), AF_OK);
	ck_assert(a.dtype.has_object);
	ck_assert_uint_eq(a.count, 1000);
	ck_assert_uint_eq(a.stored_size, 5);
	af_array_free(&a);
}
END_TEST

START_TEST(long_suffix_only_before_v3)
{
	const char *h = "{'descr': '<f8', 'fortran_order': False, 'shape': (1L,)}";
	ck_assert_int_eq(status_of(h, 1, 8), AF_OK);
	ck_assert_int_eq(status_of(h, 2, 8), AF_OK);
	ck_assert_int_eq(status_of(h, 3, 8), AF_E_HEADER);
}
END_TEST

START_TEST(v3_invalid_utf8_refused)
{
	ck_assert_int_eq(status_of("{'descr': [('\xff', '<f8')], 'fortran_order': False, 'shape': (1,)}",
				   3, 8), AF_E_HEADER);
}
END_TEST

START_TEST(latin1_converted_to_utf8)
{
	af_array a;
	af_error err = { 0 };
	ck_assert_int_eq(parse_text("{'descr': [('\xe9', '<f8')], 'fortran_order': False, 'shape': (1,)}",
				    1, 8, &a, &err), AF_OK);
	ck_assert_str_eq(a.descr, "[('\xc3\xa9', '<f8')]");
	af_array_free(&a);
}
END_TEST

START_TEST(header_limit_and_magic)
{
	unsigned char b[16] = "\x93NUMPY\x02\x00\xff\xff\xff\x7f";
	af_source src;
	af_array a;
	af_error err = { 0 };
	af_source_init_mem(&src, b, sizeof(b));
	ck_assert_int_eq(af_npy_parse(&src, &a, &err), AF_E_LIMIT);
	b[6] = 1;
	b[9] = 0x01;
	ck_assert_int_eq(af_npy_parse(&src, &a, &err), AF_E_TRUNCATED);
	b[0] = 'X';
	ck_assert_int_eq(af_npy_parse(&src, &a, &err), AF_E_MAGIC);
	af_source_init_mem(&src, b, 0);
	ck_assert_int_eq(af_npy_parse(&src, &a, &err), AF_E_MAGIC);
	b[0] = 0x93;
	af_source_init_mem(&src, b, 3);
	ck_assert_int_eq(af_npy_parse(&src, &a, &err), AF_E_TRUNCATED);
}
END_TEST

START_TEST(error_says_at_byte)
{
	af_array a;
	af_error err = { 0 };
	ck_assert_int_eq(parse_text("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), 'x': 1}",
				    1, 16, &a, &err), AF_E_HEADER);
	ck_assert_uint_eq(err.offset, 10 + 56);
	ck_assert_ptr_nonnull(strstr(err.msg, "at byte 66"));
}
END_TEST

START_TEST(descr_error_offset_in_file)
{
	af_array a;
	af_error err = { 0 };
	ck_assert_int_eq(parse_text("{'descr': [('a', '<x4')], 'fortran_order': False, 'shape': (2,)}",
				    1, 16, &a, &err), AF_E_DTYPE);
	ck_assert_uint_eq(err.offset, 10 + 17);
	ck_assert_int_eq(parse_text("{'descr': [('a', '<i4'), ('a', '<i4')], 'fortran_order': False, "
				    "'shape': (2,)}", 1, 16, &a, &err), AF_E_DTYPE);
	ck_assert_uint_eq(err.offset, 10 + 26);
}
END_TEST

/* Parses @p len bytes at @p b, expecting failure @p want; fills @p err. */
static void refuse_bytes(const void *b, size_t len, af_status want, af_error *err)
{
	af_source src;
	af_array a;
	af_source_init_mem(&src, b, len);
	ck_assert_int_eq(af_npy_parse(&src, &a, err), want);
}

START_TEST(empty_file_says_empty)
{
	af_error err = { 0 };
	refuse_bytes("", 0, AF_E_MAGIC, &err);
	ck_assert_str_eq(err.msg, "empty file");
	ck_assert_uint_eq(err.offset, 0);
}
END_TEST

START_TEST(other_formats_named_by_their_magic)
{
	static const struct {
		const char *bytes;
		size_t len;
		const char *msg;
	} cases[] = {
		{ "\x1f\x8b\x08\x00\x00\x00\x00\x00", 8, "a gzip file, not a .npy" },
		{ "BZh91AY&SY", 10, "a bzip2 file, not a .npy" },
		{ "\xfd" "7zXZ\0\0\x04", 8, "an xz file, not a .npy" },
		{ "\x28\xb5\x2f\xfd\x00", 5, "a zstd file, not a .npy" },
		{ "\x89HDF\r\n\x1a\n\0\0", 10, "an HDF5 file, not a .npy" },
		{ "rawarray\0\0\0\0", 12, "a RawArray .ra file, not a .npy" },
		{ "PK\x03\x04\x14\0\0\0", 8, "a zip archive, not a .npy" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		af_error err = { 0 };
		refuse_bytes(cases[i].bytes, cases[i].len, AF_E_MAGIC, &err);
		ck_assert_str_eq(err.msg, cases[i].msg);
		ck_assert_uint_eq(err.offset, 0);
	}
	/* no known magic: the reader's own words */
	af_error err = { 0 };
	refuse_bytes("BZhello", 7, AF_E_MAGIC, &err);
	ck_assert_str_eq(err.msg, "not a .npy file (no \\x93NUMPY magic)");
}
END_TEST

START_TEST(sniff_knows_each_magic_and_no_more)
{
	ck_assert_int_eq(af_sniff("\x93NUMPY\x01\x00", 8), AF_MAGIC_NPY);
	ck_assert_int_eq(af_sniff("rawarray", 8), AF_MAGIC_RA);
	ck_assert_int_eq(af_sniff("rawarra", 7), AF_MAGIC_UNKNOWN);
	ck_assert_int_eq(af_sniff("PK\x05\x06", 4), AF_MAGIC_ZIP);
	ck_assert_int_eq(af_sniff("PK\x07\x08", 4), AF_MAGIC_ZIP);
	ck_assert_int_eq(af_sniff("PK\x01\x02", 4), AF_MAGIC_UNKNOWN);
	ck_assert_int_eq(af_sniff("\x1f\x8b", 2), AF_MAGIC_GZIP);
	ck_assert_int_eq(af_sniff("\x1f", 1), AF_MAGIC_UNKNOWN);
	ck_assert_int_eq(af_sniff("BZh1", 4), AF_MAGIC_BZIP2);
	ck_assert_int_eq(af_sniff("BZh", 3), AF_MAGIC_UNKNOWN);
	ck_assert_int_eq(af_sniff("BZh0", 4), AF_MAGIC_UNKNOWN);
	ck_assert_int_eq(af_sniff("", 0), AF_MAGIC_UNKNOWN);
	ck_assert_str_eq(af_magic_name(AF_MAGIC_HDF5), "an HDF5 file");
	ck_assert_str_eq(af_magic_name(AF_MAGIC_ZIP), "a zip archive");
	ck_assert_ptr_null(af_magic_name(AF_MAGIC_UNKNOWN));
	ck_assert_ptr_null(af_magic_name((af_magic)99));
}
END_TEST

START_TEST(version_error_at_the_bad_byte)
{
	af_error err = { 0 };
	refuse_bytes("\x93NUMPY\x01\x05\x00\x00", 10, AF_E_VERSION, &err);
	ck_assert_uint_eq(err.offset, 7);
	refuse_bytes("\x93NUMPY\x04\x00\x00\x00", 10, AF_E_VERSION, &err);
	ck_assert_uint_eq(err.offset, 6);
}
END_TEST

/* Offset in the file of @p needle, which must be in @p header. */
static uint64_t file_offset_of(const char *header, const char *needle)
{
	const char *at = strstr(header, needle);
	ck_assert_ptr_nonnull(at);
	return 10 + (uint64_t)(at - header);
}

/* @p err is at byte @p at, and its message says so. */
static void assert_at_byte(const af_error *err, uint64_t at)
{
	char want[64];
	snprintf(want, sizeof(want), "at byte %llu", (unsigned long long)at);
	ck_assert_uint_eq(err->offset, at);
	ck_assert_msg(strstr(err->msg, want) != NULL, "\"%s\" lacks \"%s\"",
		      err->msg, want);
}

START_TEST(overflow_errors_at_the_dimension_and_shape)
{
	af_array a;
	af_error err = { 0 };
	const char *h = "{'descr': '<f8', 'fortran_order': False, "
			"'shape': (4294967296, 4294967297, 3)}";
	ck_assert_int_eq(parse_text(h, 1, 0, &a, &err), AF_E_OVERFLOW);
	assert_at_byte(&err, file_offset_of(h, "4294967297"));
	/* the count fits, count x itemsize does not */
	h = "{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904,)}";
	ck_assert_int_eq(parse_text(h, 1, 0, &a, &err), AF_E_OVERFLOW);
	assert_at_byte(&err, file_offset_of(h, "(4611"));
}
END_TEST

START_TEST(latin1_header_errors_count_file_bytes)
{
	af_array a;
	af_error err = { 0 };
	/* the parser reads a UTF-8 copy, where each of the two Latin-1 bytes
	 * before the fault takes two bytes: the offset must count the file's */
	const char *h = "{'descr': [('\xe9\xe8', '<f8')], 'fortran_order': False, "
			"'shape': (2,), 'x': 1}";
	ck_assert_int_eq(parse_text(h, 1, 16, &a, &err), AF_E_HEADER);
	assert_at_byte(&err, file_offset_of(h, "'x'"));
	h = "{'descr': [('\xe9', '<f8'), ('\xe9', '<i4')], 'fortran_order': False, "
	    "'shape': (2,)}";
	ck_assert_int_eq(parse_text(h, 1, 24, &a, &err), AF_E_DTYPE);
	assert_at_byte(&err, file_offset_of(h, "'\xe9', '<i4'"));
}
END_TEST

/* One expected.txt line checked against the parser. */
static void check_line(char *line)
{
	char *save, *name = strtok_r(line, " \n", &save), *verdict = strtok_r(NULL, " \n", &save);
	size_t len;
	char path[512];
	snprintf(path, sizeof(path), "npy/%s", name);
	unsigned char *buf = aft_read_file(aft_fixture(path), &len);
	af_source src;
	af_array a;
	af_error err = { 0 };
	af_source_init_mem(&src, buf, len);
	af_status st = af_npy_parse(&src, &a, &err);
	if (strcmp(verdict, "reject") == 0) {
		ck_assert_msg(st != AF_OK, "%s: numpy refuses it, we accepted", name);
		free(buf);
		return;
	}
	ck_assert_msg(st == AF_OK, "%s: numpy loads it, we said %s", name, err.msg);
	unsigned long long v[5];
	for (int i = 0; i < 5; i++)
		v[i] = strtoull(strtok_r(NULL, " \n", &save), NULL, 10);
	ck_assert_msg(a.fortran_order == (v[0] != 0), "%s: fortran_order", name);
	ck_assert_msg(a.dtype.itemsize == v[1], "%s: itemsize %" PRIu64, name, a.dtype.itemsize);
	ck_assert_msg(a.data_offset == v[2], "%s: data offset", name);
	ck_assert_msg(a.count == v[3], "%s: count", name);
	ck_assert_msg(a.ndim == v[4], "%s: ndim", name);
	for (unsigned i = 0; i < a.ndim; i++)
		ck_assert_msg(a.shape[i] == strtoull(strtok_r(NULL, " \n", &save), NULL, 10),
			      "%s: dim %u", name, i);
	char *descr = strtok_r(NULL, " \n", &save);
	if (descr && strcmp(descr, "-") != 0)
		ck_assert_msg(strcmp(a.descr, descr) == 0, "%s: descr %s vs %s", name, a.descr, descr);
	af_array_free(&a);
	free(buf);
}

static char *read_manifest(void)
{
	size_t len;
	char *m = (char *)aft_read_file(aft_fixture("npy/expected.txt"), &len);
	m[len] = '\0';
	return m;
}

START_TEST(fixtures_match_numpy)
{
	char *m = read_manifest(), *save, *line;
	int n = 0;
	for (line = strtok_r(m, "\n", &save); line; line = strtok_r(NULL, "\n", &save), n++)
		check_line(line);
	ck_assert_int_ge(n, 60);
	free(m);
}
END_TEST

/* Every truncation inside the header, and seeded single-byte flips. */
static void mangle(const char *name)
{
	char path[512];
	size_t len;
	snprintf(path, sizeof(path), "npy/%s", name);
	unsigned char *buf = aft_read_file(aft_fixture(path), &len);
	af_source src;
	af_array a;
	af_error err;
	af_source_init_mem(&src, buf, len);
	ck_assert_int_eq(af_npy_parse(&src, &a, &err), AF_OK);
	uint64_t hend = a.data_offset, dsize = a.data_size;
	bool obj = a.dtype.has_object;
	af_array_free(&a);
	/* Big headers: every 97th cut keeps the run short. */
	size_t step = hend > 4096 ? 97 : 1;
	for (size_t cut = 0; cut < hend; cut += step) {
		af_source_init_mem(&src, buf, cut);
		ck_assert_msg(af_npy_parse(&src, &a, &err) != AF_OK, "%s cut at %zu", name, cut);
	}
	if (dsize > 0 && !obj) {
		af_source_init_mem(&src, buf, hend + dsize - 1);
		ck_assert_int_ne(af_npy_parse(&src, &a, &err), AF_OK);
	}
	/* A flip is refused cleanly (in the magic, always as AF_E_MAGIC), or
	 * parses to a consistent array; that it is numpy's array is judged
	 * through the mount (tests/mount/test_flips.py). */
	unsigned seed = 12345;
	int refused = 0;
	for (int i = 0; i < 300; i++) {
		seed = seed * 1103515245u + 12345u;
		size_t at = (seed >> 8) % hend;
		unsigned char old = buf[at];
		buf[at] ^= (unsigned char)(1u << ((seed >> 3) & 7));
		af_source_init_mem(&src, buf, len);
		af_error ferr = { 0 };
		af_status st = af_npy_parse(&src, &a, &ferr);
		if (at < 6)
			ck_assert_msg(st == AF_E_MAGIC, "%s: magic byte %zu flipped, %s",
				      name, at, af_status_str(st));
		if (st == AF_OK) {
			uint64_t count = 1;
			for (unsigned d = 0; d < a.ndim; d++)
				ck_assert(!__builtin_mul_overflow(count, a.shape[d], &count));
			ck_assert_uint_eq(a.count, count);
			if (!a.dtype.has_object) { /* a pickle's size is its own */
				ck_assert_uint_eq(a.data_size, count * a.dtype.itemsize);
				ck_assert_uint_le(a.data_offset + a.data_size, len);
			}
			af_array_free(&a);
		} else {
			static const af_array zeroed;
			ck_assert_msg(memcmp(&a, &zeroed, sizeof(a)) == 0,
				      "%s: af_array not zeroed after a refusal", name);
			aft_assert_refused(st, &ferr, name);
			refused++;
		}
		buf[at] = old;
	}
	ck_assert_msg(refused > 0, "%s: no flip refused", name);
	free(buf);
}

START_TEST(truncations_and_flips)
{
	char *m = read_manifest(), *save, *line;
	for (line = strtok_r(m, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[256], verdict[16];
		if (sscanf(line, "%255s %15s", name, verdict) == 2 && strcmp(verdict, "ok") == 0)
			mangle(name);
	}
	free(m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("npy");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, typical_header);
	tcase_add_test(tc, list_descr_kept_as_written);
	tcase_add_test(tc, shape_int_is_not_tuple);
	tcase_add_test(tc, shape_overflow_refused);
	tcase_add_test(tc, zero_dim_makes_count_zero);
	tcase_add_test(tc, too_many_dims_is_limit);
	tcase_add_test(tc, signed_zero_and_plus_dims);
	tcase_add_test(tc, bool_dim_refused);
	tcase_add_test(tc, truncated_data_offset);
	tcase_add_test(tc, object_data_not_checked);
	tcase_add_test(tc, long_suffix_only_before_v3);
	tcase_add_test(tc, v3_invalid_utf8_refused);
	tcase_add_test(tc, latin1_converted_to_utf8);
	tcase_add_test(tc, header_limit_and_magic);
	tcase_add_test(tc, error_says_at_byte);
	tcase_add_test(tc, descr_error_offset_in_file);
	tcase_add_test(tc, empty_file_says_empty);
	tcase_add_test(tc, other_formats_named_by_their_magic);
	tcase_add_test(tc, sniff_knows_each_magic_and_no_more);
	tcase_add_test(tc, version_error_at_the_bad_byte);
	tcase_add_test(tc, overflow_errors_at_the_dimension_and_shape);
	tcase_add_test(tc, latin1_header_errors_count_file_bytes);
	suite_add_tcase(s, tc);
	TCase *fx = tcase_create("fixtures");
	tcase_set_timeout(fx, 600);
	tcase_add_test(fx, fixtures_match_numpy);
	suite_add_tcase(s, fx);
	TCase *mangled = tcase_create("mangled");
	aft_tag_slow(mangled);
	tcase_set_timeout(mangled, 600);
	tcase_add_test(mangled, truncations_and_flips);
	suite_add_tcase(s, mangled);
	return aft_run(s);
}
