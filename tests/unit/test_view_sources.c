/* SPDX-License-Identifier: MIT */
/*
 * Tests for src/codec/view.c over sources that misbehave: a source that
 * shrinks under an open view, one whose reads fail, one too short for the
 * data its header declares; and bad arguments to af_view_open. The arrays
 * come from the real parsers (the views of hand-built arrays are test_view.c's).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "af_test.h"
#include "arrayfs/arrayfs.h"

/* A source file copied to an unlinked temporary file, as an fd source, and
 * the array its parser reads from that copy. */
typedef struct fd_copy {
	int fd;
	af_source src;
	af_array a;
} fd_copy;

static void fd_copy_open(fd_copy *c, const char *rel)
{
	size_t len;
	unsigned char *raw = aft_read_file(aft_fixture(rel), &len);
	char tmpl[] = "/tmp/test_view_XXXXXX";
	c->fd = mkstemp(tmpl);
	ck_assert_int_ge(c->fd, 0);
	unlink(tmpl);
	ck_assert_int_eq(write(c->fd, raw, len), (ssize_t)len);
	free(raw);
	af_source_init_fd(&c->src, c->fd, 0, len);
	af_error err;
	ck_assert_msg(af_array_parse_named(rel, &c->src, &c->a, &err) == AF_OK,
		      "%s: %s", rel, err.msg);
}

static void fd_copy_close(fd_copy *c)
{
	af_array_free(&c->a);
	close(c->fd);
}

/* Open view @p kind of @p rel, cut the source to the header and half the
 * stored data, then read: the whole view and its last byte fail as
 * truncated at the new end. */
static void check_shrunk(const char *rel, af_view_kind kind)
{
	fd_copy c;
	fd_copy_open(&c, rel);
	ck_assert_uint_ge(c.a.data_size, 64);
	uint64_t keep = c.a.data_offset + c.a.stored_size / 2;
	af_view *v;
	af_error err;
	ck_assert_int_eq(af_view_open(&v, &c.a, &c.src, kind, &err), AF_OK);
	ck_assert_int_eq(ftruncate(c.fd, (off_t)keep), 0);
	uint64_t size = af_view_size(v);
	unsigned char *buf = malloc(size);
	size_t n = 99;
	ck_assert_int_eq(af_view_read(v, buf, size, 0, &n, &err), AF_E_TRUNCATED);
	ck_assert_uint_eq(n, 0);
	ck_assert_uint_eq(err.offset, keep);
	ck_assert_int_eq(af_view_read(v, buf, 1, size - 1, &n, &err),
			 AF_E_TRUNCATED);
	free(buf);
	af_view_close(v);
	fd_copy_close(&c);
}

START_TEST(source_shrunk_after_open_reads_fail)
{
	/* a byte-swapped npy, an LZ4 .ra and a byte-swapped .ra */
	check_shrunk("view/src/big_be_f8.npy", AF_VIEW_RA);
	check_shrunk("view/src/big_be_f8.npy", AF_VIEW_DATA);
	check_shrunk("view/src/big_be_f8.npy", AF_VIEW_NPY);
	check_shrunk("view/src/ra_lz4.ra", AF_VIEW_NPY);
	check_shrunk("view/src/ra_lz4.ra", AF_VIEW_DATA);
	check_shrunk("view/src/ra_t3_8_be.ra", AF_VIEW_NPY);
	check_shrunk("view/src/ra_t3_8_be.ra", AF_VIEW_DATA);
}
END_TEST

/* mnist_8_z.ra (72 header bytes, 486 of LZ4 data) parsed from a private
 * copy of its bytes in memory. */
typedef struct lz4_sample {
	unsigned char *raw;
	af_array a;
	af_source src;
} lz4_sample;

static void lz4_sample_load(lz4_sample *s)
{
	size_t len;
	s->raw = aft_read_file(aft_reference("mnist_8_z.ra"), &len);
	af_source_init_mem(&s->src, s->raw, len);
	ck_assert_int_eq(af_ra_parse(&s->src, &s->a, NULL), AF_OK);
	ck_assert_int_eq(s->a.compression, AF_COMP_LZ4);
	ck_assert_uint_eq(s->a.data_offset, 72);
	ck_assert_uint_eq(s->a.stored_size, 486);
	ck_assert_uint_eq(len, 72 + 486);
}

static void lz4_sample_free(lz4_sample *s)
{
	af_array_free(&s->a);
	free(s->raw);
}

START_TEST(source_io_error_is_reported)
{
	lz4_sample s;
	lz4_sample_load(&s);
	s.src.pread = aft_failing_pread;
	af_view *v;
	af_error err;
	ck_assert_int_eq(af_view_open(&v, &s.a, &s.src, AF_VIEW_NPY, &err), AF_OK);
	unsigned char buf[300];
	size_t n;
	/* the header is in memory: no I/O needed */
	ck_assert_int_eq(af_view_read(v, buf, 64, 0, &n, &err), AF_OK);
	ck_assert_uint_eq(n, 64);
	ck_assert_int_eq(af_view_read(v, buf, sizeof(buf), 0, &n, &err), AF_E_IO);
	ck_assert_int_eq(err.sys_errno, EIO);
	af_view_close(v);
	lz4_sample_free(&s);
}
END_TEST

START_TEST(short_data_in_source_is_refused_at_open)
{
	lz4_sample s;
	lz4_sample_load(&s);
	s.src.size = 72 + 485;
	af_view *v = (af_view *)&s;
	af_error err;
	ck_assert_int_eq(af_view_open(&v, &s.a, &s.src, AF_VIEW_DATA, &err),
			 AF_E_TRUNCATED);
	ck_assert_ptr_null(v);
	lz4_sample_free(&s);
}
END_TEST

/* An offset + length past 2**64 is refused with the true numbers, not a wrapped sum. */
START_TEST(data_range_overflowing_64_bits_is_refused_with_true_numbers)
{
	unsigned char byte = 0;
	af_source src;
	af_source_init_mem(&src, &byte, 1);
	af_array a = { .format = AF_FORMAT_NPY,
		       .data_offset = UINT64_MAX - 1, .stored_size = 4,
		       .data_size = 4, .count = 4,
		       .dtype = { .kind = AF_KIND_UINT, .byteorder = '|',
				  .itemsize = 1, .scalar_size = 1 } };
	af_view *v = NULL;
	af_error err;
	ck_assert_int_eq(af_view_open(&v, &a, &src, AF_VIEW_DATA, &err),
			 AF_E_TRUNCATED);
	ck_assert_ptr_null(v);
	ck_assert_msg(strstr(err.msg, "18446744073709551614") != NULL,
		      "message lacks the data offset: %s", err.msg);
}
END_TEST

START_TEST(unknown_view_kind_is_invalid)
{
	lz4_sample s;
	lz4_sample_load(&s);
	af_view *v = (af_view *)&s;
	af_error err;
	ck_assert_int_eq(af_view_open(&v, &s.a, &s.src, (af_view_kind)0, &err),
			 AF_E_INVAL);
	ck_assert_ptr_null(v);
	ck_assert_int_eq(af_view_open(&v, &s.a, &s.src, (af_view_kind)4, &err),
			 AF_E_INVAL);
	ck_assert_uint_eq(af_view_size(NULL), 0);
	af_view_close(NULL);
	lz4_sample_free(&s);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("view_sources");
	TCase *tc = tcase_create("source");
	tcase_add_test(tc, source_shrunk_after_open_reads_fail);
	tcase_add_test(tc, source_io_error_is_reported);
	tcase_add_test(tc, short_data_in_source_is_refused_at_open);
	tcase_add_test(tc, data_range_overflowing_64_bits_is_refused_with_true_numbers);
	tcase_add_test(tc, unknown_view_kind_is_invalid);
	suite_add_tcase(s, tc);
	return aft_run(s);
}
