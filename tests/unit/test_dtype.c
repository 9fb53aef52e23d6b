/* SPDX-License-Identifier: MIT */
/*
 * Tests for src/codec/dtype.c: type strings (checked against what numpy
 * 1.24 accepts) and structured field lists, one named case each.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "af_test.h"
#include "arrayfs/af_array.h"
#include "arrayfs/af_dtype.h"

static af_status ts(const char *s, af_dtype *dt)
{
	af_error err = { 0 };
	return af_dtype_parse_typestr(s, strlen(s), dt, &err);
}

static af_status lit(const char *s, af_dtype *dt)
{
	af_error err = { 0 };
	return af_dtype_parse(s, strlen(s), false, dt, &err);
}

static void expect(const char *s, af_kind kind, char order, uint64_t itemsize,
		   uint64_t scalar)
{
	af_dtype dt;
	ck_assert_msg(ts(s, &dt) == AF_OK, "%s refused", s);
	ck_assert_msg(dt.kind == kind, "%s: kind %d", s, dt.kind);
	ck_assert_msg(dt.byteorder == order, "%s: order %c", s, dt.byteorder);
	ck_assert_msg(dt.itemsize == itemsize, "%s: itemsize", s);
	ck_assert_msg(dt.scalar_size == scalar, "%s: scalar_size", s);
}

START_TEST(numeric_type_strings)
{
	expect("<f8", AF_KIND_FLOAT, '<', 8, 8);
	expect(">i4", AF_KIND_INT, '>', 4, 4);
	expect("|u1", AF_KIND_UINT, '|', 1, 1);
	expect(">u1", AF_KIND_UINT, '|', 1, 1);
	expect("|b1", AF_KIND_BOOL, '|', 1, 1);
	expect("<f2", AF_KIND_FLOAT, '<', 2, 2);
	expect("<f16", AF_KIND_FLOAT, '<', 16, 16);
	expect(">c8", AF_KIND_COMPLEX, '>', 8, 4);
	expect("<c16", AF_KIND_COMPLEX, '<', 16, 8);
	expect("<c32", AF_KIND_COMPLEX, '<', 32, 16);
	expect("=f8", AF_KIND_FLOAT, '<', 8, 8);
	expect("|f8", AF_KIND_FLOAT, '<', 8, 8);
	expect("f8", AF_KIND_FLOAT, '<', 8, 8);
}
END_TEST

START_TEST(numpy_type_codes)
{
	expect("?", AF_KIND_BOOL, '|', 1, 1);
	expect("<?", AF_KIND_BOOL, '|', 1, 1);
	expect("b", AF_KIND_INT, '|', 1, 1);
	expect("i", AF_KIND_INT, '<', 4, 4);
	expect(">d", AF_KIND_FLOAT, '>', 8, 8);
	expect("g", AF_KIND_FLOAT, '<', 16, 16);
	expect("c", AF_KIND_BYTES, '|', 1, 0);
}
END_TEST

START_TEST(text_and_void_type_strings)
{
	expect("|S10", AF_KIND_BYTES, '|', 10, 0);
	expect("|S0", AF_KIND_BYTES, '|', 0, 0);
	expect("|a5", AF_KIND_BYTES, '|', 5, 0);
	expect("<U5", AF_KIND_UNICODE, '<', 20, 4);
	expect(">U3", AF_KIND_UNICODE, '>', 12, 4);
	expect("|V16", AF_KIND_VOID, '|', 16, 0);
	af_dtype dt;
	ck_assert_int_eq(ts("|O", &dt), AF_OK);
	ck_assert_uint_eq(dt.itemsize, 8);
	ck_assert(dt.has_object);
}
END_TEST

START_TEST(datetime_type_strings)
{
	expect("<M8[ns]", AF_KIND_DATETIME, '<', 8, 8);
	expect("<M8", AF_KIND_DATETIME, '<', 8, 8);
	expect(">m8[s]", AF_KIND_TIMEDELTA, '>', 8, 8);
	expect("<M8[10ms]", AF_KIND_DATETIME, '<', 8, 8);
	expect("<m8[25s]", AF_KIND_TIMEDELTA, '<', 8, 8);
	expect("<M8[as]", AF_KIND_DATETIME, '<', 8, 8);
	expect("<M8[Y]", AF_KIND_DATETIME, '<', 8, 8);
}
END_TEST

START_TEST(invalid_type_strings)
{
	static const char *const bad[] = {
		"", "<", "!f8", "f12", "i16", "u16", "c4", "b2", "M16", "M[ns]",
		"<M8[B]", "<M8[ns", "M8[1 s]", "i4 ", "S-1", "float64", "<x4",
		"S3000000000", "U1000000000", "O4",
	};
	af_dtype dt;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(ts(bad[i], &dt) == AF_E_DTYPE, "'%s' accepted", bad[i]);
}
END_TEST

/* af_status.h: a failed call leaves its out-parameters zeroed, not half-set. */
START_TEST(invalid_type_string_leaves_dtype_zeroed)
{
	static const char *const bad[] = { "<i3", "c4", "b2", "U1000000000", "O4" };
	static const af_dtype zero;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		af_dtype dt;
		memset(&dt, 0xA5, sizeof(dt));
		ck_assert_int_eq(ts(bad[i], &dt), AF_E_DTYPE);
		ck_assert_msg(dt.kind == zero.kind && dt.itemsize == zero.itemsize &&
			      dt.byteorder == zero.byteorder &&
			      dt.scalar_size == zero.scalar_size &&
			      dt.has_object == zero.has_object &&
			      dt.nfields == zero.nfields,
			      "'%s' left kind %d itemsize %llu", bad[i], (int)dt.kind,
			      (unsigned long long)dt.itemsize);
	}
}
END_TEST

START_TEST(quoted_type_string)
{
	af_dtype dt;
	ck_assert_int_eq(lit("'<f8'", &dt), AF_OK);
	ck_assert_uint_eq(dt.itemsize, 8);
	ck_assert_int_eq(lit("u\"<i2\"", &dt), AF_OK);
	ck_assert_uint_eq(dt.itemsize, 2);
	ck_assert_int_eq(lit("'<f8' x", &dt), AF_E_DTYPE);
	ck_assert_int_eq(lit("3", &dt), AF_E_DTYPE);
}
END_TEST

START_TEST(struct_offsets_and_fields)
{
	af_dtype dt;
	ck_assert_int_eq(lit("[('x', '<i4'), ('y', '<f8', (2,)), ('z', '|u1', 3)]", &dt), AF_OK);
	ck_assert_int_eq(dt.kind, AF_KIND_STRUCT);
	ck_assert_int_eq(dt.byteorder, '|');
	ck_assert_uint_eq(dt.itemsize, 4 + 16 + 3);
	ck_assert_uint_eq(dt.nfields, 3);
	ck_assert_uint_eq(dt.scalar_size, 0);
}
END_TEST

START_TEST(struct_padding_not_a_field)
{
	af_dtype dt;
	ck_assert_int_eq(lit("[('a', '<i4'), ('', '|V4'), ('b', '<f8'), ('', '|V8')]", &dt), AF_OK);
	ck_assert_uint_eq(dt.itemsize, 24);
	ck_assert_uint_eq(dt.nfields, 2);
	/* numpy: '' with a non-void type is a real field named '' */
	ck_assert_int_eq(lit("[('', '<i4')]", &dt), AF_OK);
	ck_assert_uint_eq(dt.nfields, 1);
	/* and a sub-array is void, so it is padding */
	ck_assert_int_eq(lit("[('', '<f8', (2,))]", &dt), AF_OK);
	ck_assert_uint_eq(dt.nfields, 0);
	ck_assert_uint_eq(dt.itemsize, 16);
}
END_TEST

START_TEST(struct_nested_titled)
{
	af_dtype dt;
	ck_assert_int_eq(lit("[(('T', 'a'), '<i4'), ('b', [('c', '>f8'), ('d', '|O')], (2,)),"
			     " ('e', ('<u2', (3,)))]", &dt), AF_OK);
	ck_assert_uint_eq(dt.itemsize, 4 + 2 * 16 + 6);
	ck_assert(dt.has_object);
	ck_assert_uint_eq(dt.nfields, 3);
}
END_TEST

START_TEST(struct_shape_forms)
{
	af_dtype dt;
	ck_assert_int_eq(lit("[('a', '<i4', ())]", &dt), AF_OK);
	ck_assert_uint_eq(dt.itemsize, 4);
	ck_assert_int_eq(lit("[('a', '<i4', 0)]", &dt), AF_OK);
	ck_assert_uint_eq(dt.itemsize, 0);
	ck_assert_int_eq(lit("[]", &dt), AF_OK);
	ck_assert_uint_eq(dt.itemsize, 0);
	ck_assert_int_eq(lit("[('a', '<i4', -1)]", &dt), AF_E_DTYPE);
	ck_assert_int_eq(lit("[('a', '<i4', (2147483648,))]", &dt), AF_E_DTYPE);
	ck_assert_int_eq(lit("[('a', '<i4', 2.0)]", &dt), AF_E_DTYPE);
}
END_TEST

START_TEST(struct_duplicate_names)
{
	af_dtype dt;
	ck_assert_int_eq(lit("[('a', '<i4'), ('a', '<f8')]", &dt), AF_E_DTYPE);
	ck_assert_int_eq(lit("[(('a', 'b'), '<i4'), ('a', '<f8')]", &dt), AF_E_DTYPE);
	ck_assert_int_eq(lit("[(('a', 'a'), '<i4')]", &dt), AF_E_DTYPE);
	ck_assert_int_eq(lit("[('', '|V4'), ('', '|V4')]", &dt), AF_OK);
	/* found by fuzzing: two empty (non-padding) names, empty name text */
	ck_assert_int_eq(lit("[('', '<i4'), ('', '|u4')]", &dt), AF_E_DTYPE);
}
END_TEST

START_TEST(struct_syntax_errors)
{
	static const char *const bad[] = {
		"[('a')]", "[('a', '<i4', (2,), 3)]", "[(1, '<i4')]", "[('a', '<i4'",
		"[('a' '<i4')]", "[('a', 7)]", "[('a', '<i4')] ]",
	};
	af_dtype dt;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(lit(bad[i], &dt) == AF_E_DTYPE, "'%s' accepted", bad[i]);
}
END_TEST

START_TEST(struct_long_suffix)
{
	af_dtype dt;
	af_error err = { 0 };
	const char *s = "[('a', '<i4', (2L,))]";
	ck_assert_int_eq(af_dtype_parse(s, strlen(s), true, &dt, &err), AF_OK);
	ck_assert_uint_eq(dt.itemsize, 8);
	ck_assert_int_eq(af_dtype_parse(s, strlen(s), false, &dt, &err), AF_E_DTYPE);
}
END_TEST

/* [('a', [('a', ... '<i4' ...)])] nested @p depth lists deep. */
static char *nested(int depth)
{
	size_t cap = (size_t)depth * 16 + 16, n = 0;
	char *s = malloc(cap);
	ck_assert_ptr_nonnull(s);
	for (int i = 0; i < depth; i++)
		n += (size_t)snprintf(s + n, cap - n, "[('a', ");
	n += (size_t)snprintf(s + n, cap - n, "'<i4'");
	for (int i = 0; i < depth; i++)
		n += (size_t)snprintf(s + n, cap - n, ")]");
	return s;
}

START_TEST(struct_depth_limit)
{
	af_dtype dt;
	char *ok = nested(AF_DTYPE_MAX_DEPTH - 1), *deep = nested(AF_DTYPE_MAX_DEPTH + 1),
	     *huge = nested(5000);
	ck_assert_int_eq(lit(ok, &dt), AF_OK);
	ck_assert_uint_eq(dt.itemsize, 4);
	ck_assert_int_eq(lit(deep, &dt), AF_E_LIMIT);
	ck_assert_int_eq(lit(huge, &dt), AF_E_LIMIT);
	free(ok);
	free(deep);
	free(huge);
}
END_TEST

START_TEST(struct_itemsize_overflow)
{
	af_dtype dt;
	ck_assert_int_eq(lit("[('a', '|V2147483647', (2147483647, 2147483647, 2147483647))]", &dt),
			 AF_E_OVERFLOW);
}
END_TEST

START_TEST(struct_sum_overflow_at_the_field_that_overflows)
{
	/* each field is just under 2**63 bytes: the third one overflows */
	const char *s = "[('a', '|V2147483647', (2147483647, 2)), "
			"('b', '|V2147483647', (2147483647, 2)), "
			"('c', '|V2147483647', (2147483647, 2))]";
	af_dtype dt;
	af_error err = { 0 };
	ck_assert_int_eq(af_dtype_parse(s, strlen(s), false, &dt, &err),
			 AF_E_OVERFLOW);
	uint64_t at = (uint64_t)(strstr(s, "('c'") - s);
	ck_assert_uint_eq(err.offset, at);
	char want[64];
	snprintf(want, sizeof(want), "at byte %llu", (unsigned long long)at);
	ck_assert_msg(strstr(err.msg, want) != NULL, "%s", err.msg);
}
END_TEST

/* af_array_type_name of an array whose descr is @p descr (parsed as a
 * list literal when it starts with '[', else as a type string). */
static void expect_name(const char *descr, const char *want)
{
	af_array a = { 0 };
	af_error err = { 0 };
	af_status st = descr[0] == '[' ?
		af_dtype_parse(descr, strlen(descr), false, &a.dtype, &err) :
		af_dtype_parse_typestr(descr, strlen(descr), &a.dtype, &err);
	ck_assert_msg(st == AF_OK, "%s: %s", descr, err.msg);
	a.descr = (char *)descr;
	char name[AF_TYPE_NAME_MAX];
	ck_assert_uint_eq(af_array_type_name(&a, name, sizeof(name)), strlen(want));
	ck_assert_str_eq(name, want);
}

START_TEST(type_names_a_person_knows)
{
	expect_name("<c8", "complex64, little-endian");
	expect_name(">c16", "complex128, big-endian");
	expect_name(">f8", "float64, big-endian");
	expect_name("<f2", "float16, little-endian");
	expect_name("|u1", "uint8");
	expect_name("|i1", "int8");
	expect_name("<i8", "int64, little-endian");
	expect_name(">u2", "uint16, big-endian");
	expect_name("|b1", "bool");
	expect_name("<M8[ns]", "datetime64[ns]");
	expect_name(">M8[10ms]", "datetime64[10ms], big-endian");
	expect_name("<M8", "datetime64");
	expect_name("<m8[s]", "timedelta64[s]");
	expect_name("|S10", "bytes, 10 characters");
	expect_name("|S1", "bytes, 1 character");
	expect_name("<U5", "unicode, 5 characters");
	expect_name(">U3", "unicode, 3 characters, big-endian");
	expect_name("|V16", "void, 16 bytes");
	expect_name("|O", "object (pickled Python objects)");
	expect_name("[('x', '<i4'), ('y', '>f8', (2,))]", "struct of 2 fields");
	expect_name("[('x', '<i4')]", "struct of 1 field");
	expect_name("[('x', '<i4'), ('o', '|O')]",
		    "struct of 2 fields, with pickled Python objects");
	/* a .ra eltype 5 array */
	af_array bf = { .dtype = { .kind = AF_KIND_BFLOAT16, .byteorder = '<',
				   .itemsize = 2, .scalar_size = 2 } };
	char name[AF_TYPE_NAME_MAX];
	af_array_type_name(&bf, name, sizeof(name));
	ck_assert_str_eq(name, "bfloat16");
	bf.dtype.byteorder = '>';
	af_array_type_name(&bf, name, sizeof(name));
	ck_assert_str_eq(name, "bfloat16, big-endian");
	/* too small a buffer: nothing but an empty string */
	ck_assert_uint_eq(af_array_type_name(&bf, name, 8), 0);
	ck_assert_str_eq(name, "");
}
END_TEST

START_TEST(struct_many_fields)
{
	size_t cap = 5000 * 24 + 8, n = 0;
	char *s = malloc(cap);
	n += (size_t)sprintf(s, "[");
	for (int i = 0; i < 5000; i++)
		n += (size_t)sprintf(s + n, "('f%05d', '<f4'), ", i);
	sprintf(s + n, "]");
	af_dtype dt;
	ck_assert_int_eq(lit(s, &dt), AF_OK);
	ck_assert_uint_eq(dt.nfields, 5000);
	ck_assert_uint_eq(dt.itemsize, 20000);
	free(s);
}
END_TEST

/* 200 redundant parentheses around a 20000-field list: the look-ahead that
 * tells "(x)" from "(x, y)" must not rescan the list 200 times. */
START_TEST(paren_lookahead_bounded)
{
	size_t cap = 20000 * 24 + 512, n = 0;
	char *s = malloc(cap);
	for (int i = 0; i < 200; i++)
		s[n++] = '(';
	s[n++] = '[';
	for (int i = 0; i < 20000; i++)
		n += (size_t)sprintf(s + n, "('f%05d', '<f4'), ", i);
	s[n++] = ']';
	for (int i = 0; i < 200; i++)
		s[n++] = ')';
	af_dtype dt;
	af_error err = { 0 };
	ck_assert_int_eq(af_dtype_parse(s, n, false, &dt, &err), AF_E_LIMIT);
	/* a few redundant parentheses are fine */
	memmove(s + 3, s + 200, n - 200);
	ck_assert_int_eq(af_dtype_parse(s, n - 394, false, &dt, &err), AF_OK);
	ck_assert_uint_eq(dt.nfields, 20000);
	free(s);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("dtype");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, numeric_type_strings);
	tcase_add_test(tc, numpy_type_codes);
	tcase_add_test(tc, text_and_void_type_strings);
	tcase_add_test(tc, datetime_type_strings);
	tcase_add_test(tc, invalid_type_strings);
	tcase_add_test(tc, invalid_type_string_leaves_dtype_zeroed);
	tcase_add_test(tc, quoted_type_string);
	tcase_add_test(tc, struct_offsets_and_fields);
	tcase_add_test(tc, struct_padding_not_a_field);
	tcase_add_test(tc, struct_nested_titled);
	tcase_add_test(tc, struct_shape_forms);
	tcase_add_test(tc, struct_duplicate_names);
	tcase_add_test(tc, struct_syntax_errors);
	tcase_add_test(tc, struct_long_suffix);
	tcase_add_test(tc, struct_depth_limit);
	tcase_add_test(tc, struct_itemsize_overflow);
	tcase_add_test(tc, struct_sum_overflow_at_the_field_that_overflows);
	tcase_add_test(tc, struct_many_fields);
	tcase_add_test(tc, type_names_a_person_knows);
	tcase_add_test(tc, paren_lookahead_bounded);
	suite_add_tcase(s, tc);
	return aft_run(s);
}
