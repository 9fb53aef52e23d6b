/* SPDX-License-Identifier: MIT */
/*
 * Tests for src/codec/sidecar.c: the ENVI and NRRD headers of every
 * gen_zarr.py source (zarr/cases.txt; exp/NAME/data.hdr and B.nhdr where
 * the generator says the format can describe the array) byte for byte,
 * and the limits of both formats on hand-made arrays.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "af_test.h"
#include "arrayfs/arrayfs.h"
#include "arrayfs/af_sidecar.h"

/* The header of @p kind for @p a equals exp/NAME/FILE, or is refused. */
static void check_sidecar(const af_array *a, af_sidecar_kind kind,
			  const char *name, const char *file)
{
	char rel[512];
	snprintf(rel, sizeof(rel), "zarr/exp/%s/%s", name, file);
	const char *path = aft_fixture(rel);
	char *text = NULL;
	size_t len = 0;
	af_error err;
	af_error_clear(&err);
	af_status st = af_sidecar_text(a, kind, &text, &len, &err);
	if (access(path, F_OK) != 0) {
		ck_assert_msg(st == AF_E_UNSUPPORTED, "%s: %s should be absent",
			      name, file);
		ck_assert_ptr_null(text);
		ck_assert_uint_gt(strlen(err.msg), 0);
		return;
	}
	size_t want_len;
	unsigned char *want = aft_read_file(path, &want_len);
	ck_assert_msg(st == AF_OK, "%s: %s: %s", name, file, err.msg);
	ck_assert_msg(len == want_len && memcmp(text, want, len) == 0,
		      "%s: %s differs:\n%s\nwanted:\n%.*s", name, file, text,
		      (int)want_len, want);
	free(want);
	free(text);
}

START_TEST(sidecars_of_numpy_fixtures_match)
{
	FILE *f = fopen(aft_fixture("zarr/cases.txt"), "r");
	ck_assert_msg(f != NULL, "cannot open zarr/cases.txt");
	char line[1024], name[64], rel[512], full[600];
	unsigned cases = 0, envi = 0, nrrd = 0;
	while (fgets(line, sizeof(line), f)) {
		ck_assert_int_eq(sscanf(line, "%63s %511s", name, rel), 2);
		snprintf(full, sizeof(full), "zarr/%s", rel);
		char path[4096];
		snprintf(path, sizeof(path), "%s", aft_fixture(full));
		af_source src;
		int fd = aft_open_fd_source(path, &src);
		af_array a;
		af_error err;
		ck_assert_msg(af_array_parse_named(path, &src, &a, &err) == AF_OK,
			      "%s: %s", name, err.msg);
		check_sidecar(&a, AF_SIDECAR_ENVI, name, "data.hdr");
		check_sidecar(&a, AF_SIDECAR_NRRD, name, "B.nhdr");
		char *text;
		size_t len;
		if (af_sidecar_text(&a, AF_SIDECAR_ENVI, &text, &len, NULL) == AF_OK) {
			envi++;
			free(text);
		}
		if (af_sidecar_text(&a, AF_SIDECAR_NRRD, &text, &len, NULL) == AF_OK) {
			nrrd++;
			free(text);
		}
		af_array_free(&a);
		close(fd);
		cases++;
	}
	fclose(f);
	/* both kinds of answer are exercised */
	ck_assert_uint_gt(cases, 40);
	ck_assert_uint_gt(envi, 15);
	ck_assert_uint_lt(envi, cases);
	ck_assert_uint_gt(nrrd, 15);
	ck_assert_uint_lt(nrrd, cases);
}
END_TEST

static af_status text_of(const af_array *a, af_sidecar_kind kind, char **text)
{
	size_t len;
	af_status st = af_sidecar_text(a, kind, text, &len, NULL);
	if (st == AF_OK)
		ck_assert_uint_eq(strlen(*text), len);
	else
		ck_assert_ptr_null(*text);
	return st;
}

START_TEST(envi_holds_one_to_three_dims_of_int_size)
{
	char *text;
	const uint64_t four[] = { 2, 2, 2, 2 };
	af_array a = aft_hand_array("<f4", false, 4, four);
	ck_assert_int_eq(text_of(&a, AF_SIDECAR_ENVI, &text), AF_E_UNSUPPORTED);
	a.ndim = 0;
	ck_assert_int_eq(text_of(&a, AF_SIDECAR_ENVI, &text), AF_E_UNSUPPORTED);
	const uint64_t big[] = { 3, 2147483647ULL };
	a = aft_hand_array("<f4", false, 2, big);
	ck_assert_int_eq(text_of(&a, AF_SIDECAR_ENVI, &text), AF_OK);
	ck_assert_ptr_nonnull(strstr(text, "\nsamples = 2147483647\nlines = 3\n"
					   "bands = 1\n"));
	free(text);
	const uint64_t too_big[] = { 3, 2147483648ULL };
	a = aft_hand_array("<f4", false, 2, too_big);
	ck_assert_int_eq(text_of(&a, AF_SIDECAR_ENVI, &text), AF_E_UNSUPPORTED);
	/* ENVI has no signed byte, no half float, no times */
	const uint64_t two[] = { 2 };
	static const char *const none[] = { "|i1", "<f2", "<M8[s]", "<f16",
					    "<c32", "|S3", "|O" };
	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
		a = aft_hand_array(none[i], false, 1, two);
		ck_assert_msg(text_of(&a, AF_SIDECAR_ENVI, &text) == AF_E_UNSUPPORTED,
			      "%s", none[i]);
	}
}
END_TEST

START_TEST(nrrd_holds_sixteen_axes_and_no_zero_sizes)
{
	char *text;
	uint64_t shape[17];
	for (unsigned i = 0; i < 17; i++)
		shape[i] = 1;
	af_array a = aft_hand_array(">i8", true, 16, shape);
	ck_assert_int_eq(text_of(&a, AF_SIDECAR_NRRD, &text), AF_OK);
	ck_assert_ptr_nonnull(strstr(text, "\ntype: int64\ndimension: 16\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nendian: big\n"));
	free(text);
	a.ndim = 17;
	ck_assert_int_eq(text_of(&a, AF_SIDECAR_NRRD, &text), AF_E_UNSUPPORTED);
	/* complex takes one axis more */
	a = aft_hand_array("<c16", false, 15, shape);
	ck_assert_int_eq(text_of(&a, AF_SIDECAR_NRRD, &text), AF_OK);
	free(text);
	a.ndim = 16;
	ck_assert_int_eq(text_of(&a, AF_SIDECAR_NRRD, &text), AF_E_UNSUPPORTED);
	shape[3] = 0;
	a = aft_hand_array("<f4", false, 5, shape);
	ck_assert_int_eq(text_of(&a, AF_SIDECAR_NRRD, &text), AF_E_UNSUPPORTED);
	a.ndim = 0;
	ck_assert_int_eq(text_of(&a, AF_SIDECAR_NRRD, &text), AF_E_UNSUPPORTED);
	const uint64_t two[] = { 2 };
	a = aft_hand_array("<u2", false, 1, two);
	a.dtype.kind = AF_KIND_BFLOAT16;
	ck_assert_int_eq(text_of(&a, AF_SIDECAR_NRRD, &text), AF_E_UNSUPPORTED);
	ck_assert_int_eq(text_of(&a, AF_SIDECAR_ENVI, &text), AF_E_UNSUPPORTED);
}
END_TEST

START_TEST(bad_calls_are_invalid)
{
	char *text = (char *)1;
	size_t len = 3;
	const uint64_t two[] = { 2 };
	af_array a = aft_hand_array("<f4", false, 1, two);
	ck_assert_int_eq(af_sidecar_text(NULL, AF_SIDECAR_ENVI, &text, &len, NULL),
			 AF_E_INVAL);
	ck_assert_ptr_null(text);
	ck_assert_uint_eq(len, 0);
	ck_assert_int_eq(af_sidecar_text(&a, (af_sidecar_kind)9, &text, &len, NULL),
			 AF_E_INVAL);
	a.shape = NULL;
	ck_assert_int_eq(af_sidecar_text(&a, AF_SIDECAR_NRRD, &text, &len, NULL),
			 AF_E_INVAL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sidecar");
	TCase *tc = tcase_create("sidecar");
	tcase_add_test(tc, sidecars_of_numpy_fixtures_match);
	tcase_add_test(tc, envi_holds_one_to_three_dims_of_int_size);
	tcase_add_test(tc, nrrd_holds_sixteen_axes_and_no_zero_sizes);
	tcase_add_test(tc, bad_calls_are_invalid);
	suite_add_tcase(s, tc);
	return aft_run(s);
}
