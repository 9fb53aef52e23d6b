/* SPDX-License-Identifier: MIT */
/*
 * Tests for src/codec/stack.c: natural name order, the rule that arrays
 * agree, the stacked array, and every view of a stack read through a
 * stack source over in-memory members (C and Fortran order, 0-d, .ra
 * members, a member that shrinks).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "af_test.h"
#include "arrayfs/arrayfs.h"

START_TEST(natural_order_counts_digit_runs_as_numbers)
{
	static const char *const sorted[] = {
		"a", "a1", "a2", "a02", "a10", "a10b", "a11", "b", "img0.npy",
		"img1.npy", "img2.npy", "img9.npy", "img10.npy", "img100.npy",
		"x18446744073709551616", "x99999999999999999999",
	};
	size_t n = sizeof(sorted) / sizeof(sorted[0]);
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++) {
			int c = af_name_natural_cmp(sorted[i], sorted[j]);
			if (i < j)
				ck_assert_msg(c < 0, "%s < %s", sorted[i], sorted[j]);
			else if (i > j)
				ck_assert_msg(c > 0, "%s > %s", sorted[i], sorted[j]);
			else
				ck_assert_int_eq(c, 0);
		}
}
END_TEST

/* A parsed .npy of @p dict and @p data bytes (kept in *file, caller frees). */
static af_array npy_of(const char *dict, const void *data, size_t len,
		       unsigned char **file)
{
	size_t hlen = strlen(dict);
	size_t pad = 64 - (10 + hlen + 1) % 64;
	size_t total = 10 + hlen + pad + 1 + len;
	unsigned char *b = malloc(total);
	ck_assert_ptr_nonnull(b);
	memcpy(b, "\x93NUMPY\x01\x00", 8);
	b[8] = (unsigned char)((hlen + pad + 1) & 0xff);
	b[9] = (unsigned char)((hlen + pad + 1) >> 8);
	memcpy(b + 10, dict, hlen);
	memset(b + 10 + hlen, ' ', pad);
	b[10 + hlen + pad] = '\n';
	memcpy(b + 10 + hlen + pad + 1, data, len);
	af_source src;
	af_source_init_mem(&src, b, total);
	af_array a;
	af_error err;
	ck_assert_int_eq(af_npy_parse(&src, &a, &err), AF_OK);
	*file = b;
	return a;
}

START_TEST(agree_names_the_first_difference)
{
	unsigned char *f[5];
	int16_t d[6] = { 0 };
	af_array a = npy_of("{'descr': '<i2', 'fortran_order': False, 'shape': (2, 3), }",
			    d, 12, &f[0]);
	af_array same = npy_of("{'descr': '<i2', 'fortran_order': False, 'shape': (2, 3), }",
			       d, 12, &f[1]);
	af_array dtype = npy_of("{'descr': '>i2', 'fortran_order': False, 'shape': (2, 3), }",
				d, 12, &f[2]);
	af_array shape = npy_of("{'descr': '<i2', 'fortran_order': False, 'shape': (3, 2), }",
				d, 12, &f[3]);
	af_array order = npy_of("{'descr': '<i2', 'fortran_order': True, 'shape': (2, 3), }",
				d, 12, &f[4]);
	af_error why;
	ck_assert_int_eq(af_stack_agree(&a, &same, &why), AF_OK);
	ck_assert_int_eq(af_stack_agree(&a, &dtype, &why), AF_E_UNSUPPORTED);
	ck_assert_str_eq(why.msg, "dtype >i2, not <i2");
	ck_assert_int_eq(af_stack_agree(&a, &shape, &why), AF_E_UNSUPPORTED);
	ck_assert_str_eq(why.msg, "shape 3 2, not 2 3");
	ck_assert_int_eq(af_stack_agree(&a, &order, &why), AF_E_UNSUPPORTED);
	ck_assert_str_eq(why.msg, "Fortran order, not C order");
	af_array *all[] = { &a, &same, &dtype, &shape, &order };
	for (int i = 0; i < 5; i++) {
		af_array_free(all[i]);
		free(f[i]);
	}
}
END_TEST

START_TEST(object_arrays_do_not_stack)
{
	unsigned char *f;
	unsigned char pickle[4] = { 0x80, 2, 0x4e, 0x2e };
	af_array a = npy_of("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }",
			    pickle, 4, &f);
	af_error why;
	ck_assert_int_eq(af_stack_agree(&a, &a, &why), AF_E_UNSUPPORTED);
	af_array s;
	ck_assert_int_eq(af_stack_array(&a, 3, &s, &why), AF_E_INVAL);
	af_array_free(&a);
	free(f);
}
END_TEST

START_TEST(huge_stacks_overflow_cleanly)
{
	unsigned char *f;
	int64_t d[4] = { 0 };
	af_array a = npy_of("{'descr': '<i8', 'fortran_order': False, 'shape': (4,), }",
			    d, 32, &f);
	af_array s;
	af_error err;
	ck_assert_int_eq(af_stack_array(&a, UINT64_MAX / 16, &s, &err), AF_E_OVERFLOW);
	ck_assert_int_eq(af_stack_array(&a, 1, &s, &err), AF_E_INVAL);
	af_array_free(&a);
	free(f);
}
END_TEST

/* Members as memory buffers; `short_member` reads only half of it. */
struct mem_members {
	const unsigned char *const *data;
	uint64_t bytes;
	long short_member;
};

static ssize_t mem_read(void *arg, uint64_t i, void *buf, size_t len,
			uint64_t off)
{
	const struct mem_members *m = arg;
	uint64_t have = (long)i == m->short_member ? m->bytes / 2 : m->bytes;
	if (off >= have)
		return 0;
	if (len > have - off)
		len = (size_t)(have - off);
	memcpy(buf, m->data[i] + off, len);
	return (ssize_t)len;
}

static void free_members(af_array *arr, unsigned char **files, int n)
{
	for (int i = 0; i < n; i++) {
		af_array_free(&arr[i]);
		free(files[i]);
	}
}

/* The whole view @p kind of stack @p s over @p src (malloc'd). */
static unsigned char *view_bytes(const af_array *s, const af_source *src,
				 af_view_kind kind, size_t *len)
{
	af_view *v;
	af_error err;
	ck_assert_int_eq(af_view_open(&v, s, src, kind, &err), AF_OK);
	*len = (size_t)af_view_size(v);
	unsigned char *b = malloc(*len + 1);
	size_t got = 0;
	/* in odd pieces, so reads cross member boundaries at every offset */
	for (size_t off = 0; off < *len; off += 7) {
		size_t take = *len - off < 7 ? *len - off : 7;
		ck_assert_int_eq(af_view_read(v, b + off, take, off, &got, &err), AF_OK);
		ck_assert_uint_eq(got, take);
	}
	af_view_close(v);
	return b;
}

START_TEST(views_of_a_c_order_stack)
{
	enum { N = 5 };
	int16_t vals[N][6];
	unsigned char *files[N];
	af_array arr[N];
	const unsigned char *data[N];
	for (int i = 0; i < N; i++) {
		for (int k = 0; k < 6; k++)
			vals[i][k] = (int16_t)(100 * i + k);
		arr[i] = npy_of("{'descr': '<i2', 'fortran_order': False, 'shape': (2, 3), }",
				vals[i], 12, &files[i]);
		data[i] = (const unsigned char *)vals[i];
	}
	af_array s;
	af_error err;
	ck_assert_int_eq(af_stack_array(&arr[0], N, &s, &err), AF_OK);
	ck_assert_uint_eq(s.ndim, 3);
	ck_assert_uint_eq(s.shape[0], N);
	ck_assert_uint_eq(s.shape[1], 2);
	ck_assert_uint_eq(s.shape[2], 3);
	ck_assert_str_eq(s.header_text,
			 "{'descr': '<i2', 'fortran_order': False, 'shape': (5, 2, 3), }");
	struct mem_members mm = { data, 12, -1 };
	af_stack_reader r = { mem_read, &mm, N, 12 };
	af_source src;
	af_stack_source_init(&src, &r);

	size_t len;
	unsigned char *d = view_bytes(&s, &src, AF_VIEW_DATA, &len);
	ck_assert_uint_eq(len, sizeof(vals));
	ck_assert_mem_eq(d, vals, sizeof(vals));
	free(d);

	/* B.npy parses back as the stack, then the members' bytes */
	unsigned char *npy = view_bytes(&s, &src, AF_VIEW_NPY, &len);
	af_source back;
	af_source_init_mem(&back, npy, len);
	af_array p;
	ck_assert_int_eq(af_npy_parse(&back, &p, &err), AF_OK);
	ck_assert_uint_eq(p.data_offset % 64, 0);
	ck_assert_uint_eq(p.ndim, 3);
	ck_assert_uint_eq(p.shape[0], N);
	ck_assert_int_eq(p.fortran_order, false);
	ck_assert_str_eq(p.descr, "<i2");
	ck_assert_uint_eq(len - p.data_offset, sizeof(vals));
	ck_assert_mem_eq(npy + p.data_offset, vals, sizeof(vals));
	af_array_free(&p);
	free(npy);

	/* B.ra: dims reversed (3, 2, 5), the same bytes */
	unsigned char *ra = view_bytes(&s, &src, AF_VIEW_RA, &len);
	af_source_init_mem(&back, ra, len);
	ck_assert_int_eq(af_ra_parse(&back, &p, &err), AF_OK);
	ck_assert_uint_eq(p.ndim, 3);
	ck_assert_uint_eq(p.shape[0], 3);
	ck_assert_uint_eq(p.shape[1], 2);
	ck_assert_uint_eq(p.shape[2], N);
	ck_assert_mem_eq(ra + p.data_offset, vals, sizeof(vals));
	af_array_free(&p);
	free(ra);

	/* header, shape and dtype texts */
	char *t;
	ck_assert_int_eq(af_text_shape(&s, &t, &len), AF_OK);
	ck_assert_str_eq(t, "5 2 3\n");
	free(t);

	af_array_free(&s);
	free_members(arr, files, N);
}
END_TEST

START_TEST(fortran_and_0d_members_stack_on_their_slowest_axis)
{
	unsigned char *f;
	double v = 1.5;
	af_array a = npy_of("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }",
			    (double[6]){ 0 }, 48, &f);
	af_array s;
	af_error err;
	ck_assert_int_eq(af_stack_array(&a, 4, &s, &err), AF_OK);
	ck_assert_uint_eq(s.ndim, 3);
	ck_assert_uint_eq(s.shape[0], 2);
	ck_assert_uint_eq(s.shape[1], 3);
	ck_assert_uint_eq(s.shape[2], 4);
	ck_assert_str_eq(s.header_text,
			 "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3, 4), }");
	af_array_free(&s);
	af_array_free(&a);
	free(f);

	a = npy_of("{'descr': '<f8', 'fortran_order': False, 'shape': (), }", &v, 8, &f);
	ck_assert_int_eq(af_stack_array(&a, 3, &s, &err), AF_OK);
	ck_assert_uint_eq(s.ndim, 1);
	ck_assert_uint_eq(s.shape[0], 3);
	ck_assert_str_eq(s.header_text,
			 "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }");
	af_array_free(&s);
	af_array_free(&a);
	free(f);
}
END_TEST

START_TEST(ra_members_keep_their_header_fields)
{
	size_t len;
	unsigned char *file = aft_read_file(aft_reference("mnist_8.ra"), &len);
	af_source src;
	af_source_init_mem(&src, file, len);
	af_array a;
	af_error err;
	ck_assert_int_eq(af_ra_parse(&src, &a, &err), AF_OK);
	af_array s;
	ck_assert_int_eq(af_stack_array(&a, 3, &s, &err), AF_OK);
	ck_assert_int_eq(s.format, AF_FORMAT_RA);
	ck_assert_uint_eq(s.ndim, a.ndim + 1);
	ck_assert_uint_eq(s.shape[a.ndim], 3);
	ck_assert_uint_eq(s.ra_size, 3 * a.data_size);
	char *t;
	ck_assert_int_eq(af_text_header(&s, &t, &len), AF_OK);
	ck_assert_ptr_nonnull(strstr(t, "ndims: 4\ndims: 28 28 3 3\n"));
	free(t);
	af_array_free(&s);
	af_array_free(&a);
	free(file);
}
END_TEST

START_TEST(a_member_that_shrank_is_a_truncated_read)
{
	enum { N = 3 };
	uint8_t vals[N][8];
	unsigned char *files[N];
	af_array arr[N];
	const unsigned char *data[N];
	for (int i = 0; i < N; i++) {
		memset(vals[i], i + 1, 8);
		arr[i] = npy_of("{'descr': '|u1', 'fortran_order': False, 'shape': (8,), }",
				vals[i], 8, &files[i]);
		data[i] = vals[i];
	}
	af_array s;
	af_error err;
	ck_assert_int_eq(af_stack_array(&arr[0], N, &s, &err), AF_OK);
	struct mem_members mm = { data, 8, 1 };
	af_stack_reader r = { mem_read, &mm, N, 8 };
	af_source src;
	af_stack_source_init(&src, &r);
	af_view *v;
	ck_assert_int_eq(af_view_open(&v, &s, &src, AF_VIEW_DATA, &err), AF_OK);
	unsigned char buf[24];
	size_t got = 99;
	ck_assert_int_eq(af_view_read(v, buf, 24, 0, &got, &err), AF_E_TRUNCATED);
	ck_assert_uint_eq(got, 0);
	/* the intact member still reads */
	ck_assert_int_eq(af_view_read(v, buf, 8, 16, &got, &err), AF_OK);
	ck_assert_mem_eq(buf, vals[2], 8);
	af_view_close(v);
	af_array_free(&s);
	free_members(arr, files, N);
}
END_TEST

/* The membership rule of the mount's .stack and of arrayinfo --stack. */
START_TEST(members_are_array_names_without_a_line_break)
{
	ck_assert(af_stack_member_name("a.npy", false));
	ck_assert(af_stack_member_name("a.ra", false));
	ck_assert(af_stack_member_name("a.npy", true));
	/* an npz's .ra members are plain files */
	ck_assert(!af_stack_member_name("a.ra", true));
	ck_assert(!af_stack_member_name("a.npz", false));
	/* `names` lists one name a line */
	ck_assert(!af_stack_member_name("a\nb.npy", false));
	ck_assert(!af_stack_member_name("a\nb.npy", true));
	ck_assert(!af_stack_member_name("a.ra\n", false));
	/* not array names (af_array_name_kind) */
	ck_assert(!af_stack_member_name(".npy", false));
	ck_assert(!af_stack_member_name(".ra", false));
	ck_assert(!af_stack_member_name("a.NPY", false));
	ck_assert(!af_stack_member_name("a.npy.bak", false));
}
END_TEST

START_TEST(zip_members_are_readable_npy_files)
{
	af_zip_entry e = { .name = "sub/a.npy", .method = AF_ZIP_STORED };
	ck_assert(af_stack_zip_member(&e));
	e.method = AF_ZIP_DEFLATED;
	ck_assert(af_stack_zip_member(&e));
	e.method = 12;   /* bzip2: the codec cannot read it */
	ck_assert(!af_stack_zip_member(&e));
	e.method = AF_ZIP_STORED;
	e.flags = AF_ZIP_FLAG_ENCRYPTED;
	ck_assert(!af_stack_zip_member(&e));
	e.flags = 0;
	e.is_dir = true;
	ck_assert(!af_stack_zip_member(&e));
	e.is_dir = false;
	const char *others[] = { "a.ra", "a\nb.npy", "sub/.npy", "a.npy/" };
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		e.name = others[i];
		ck_assert_msg(!af_stack_zip_member(&e), "%s", others[i]);
	}
}
END_TEST

static Suite *stack_suite(void)
{
	Suite *s = suite_create("stack");
	TCase *tc = tcase_create("stack");
	tcase_add_test(tc, natural_order_counts_digit_runs_as_numbers);
	tcase_add_test(tc, agree_names_the_first_difference);
	tcase_add_test(tc, object_arrays_do_not_stack);
	tcase_add_test(tc, huge_stacks_overflow_cleanly);
	tcase_add_test(tc, views_of_a_c_order_stack);
	tcase_add_test(tc, fortran_and_0d_members_stack_on_their_slowest_axis);
	tcase_add_test(tc, ra_members_keep_their_header_fields);
	tcase_add_test(tc, a_member_that_shrank_is_a_truncated_read);
	tcase_add_test(tc, members_are_array_names_without_a_line_break);
	tcase_add_test(tc, zip_members_are_readable_npy_files);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return aft_run(stack_suite());
}
