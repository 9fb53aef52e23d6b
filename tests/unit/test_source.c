/* SPDX-License-Identifier: MIT */
/* Tests for src/codec/source.c */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "af_test.h"
#include "arrayfs/arrayfs.h"

START_TEST(mem_source_reads_and_clips)
{
	af_source s;
	af_source_init_mem(&s, "abcdef", 6);
	char buf[8];
	ck_assert_int_eq(s.pread(&s, buf, 4, 4), 2);
	ck_assert_int_eq(memcmp(buf, "ef", 2), 0);
	ck_assert_int_eq(s.pread(&s, buf, 4, 6), 0);
	ck_assert_int_eq(s.pread(&s, buf, 4, UINT64_MAX), 0);
	ck_assert_int_eq(s.fd, -1);
}
END_TEST

START_TEST(read_exact_reports_truncation)
{
	af_source s;
	af_source_init_mem(&s, "abcdef", 6);
	char buf[8];
	af_error err;
	ck_assert_int_eq(af_source_read_exact(&s, buf, 3, 1, &err), AF_OK);
	ck_assert_int_eq(memcmp(buf, "bcd", 3), 0);
	ck_assert_int_eq(af_source_read_exact(&s, buf, 4, 4, &err), AF_E_TRUNCATED);
	ck_assert_uint_eq(err.offset, 6);
	ck_assert_int_eq(af_source_read_exact(&s, buf, 2, UINT64_MAX, &err), AF_E_RANGE);
}
END_TEST

START_TEST(fd_source_honours_base_and_size)
{
	char path[] = "/tmp/aftest-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	unlink(path);
	ck_assert_int_eq(write(fd, "0123456789", 10), 10);
	af_source s;
	af_source_init_fd(&s, fd, 2, 5);
	char buf[16];
	ck_assert_int_eq(s.pread(&s, buf, 16, 0), 5);
	ck_assert_int_eq(memcmp(buf, "23456", 5), 0);
	ck_assert_int_eq(s.pread(&s, buf, 16, 3), 2);
	af_error err;
	ck_assert_int_eq(af_source_read_exact(&s, buf, 6, 0, &err), AF_E_TRUNCATED);
	/* the file shrinking under the source is a truncation, not a crash */
	ck_assert_int_eq(ftruncate(fd, 4), 0);
	ck_assert_int_eq(af_source_read_exact(&s, buf, 5, 0, &err), AF_E_TRUNCATED);
	close(fd);
	ck_assert_int_eq(af_source_read_exact(&s, buf, 1, 0, &err), AF_E_IO);
	ck_assert_int_eq(err.sys_errno, EBADF);
}
END_TEST

START_TEST(prefix_source_serves_its_prefix_then_the_file)
{
	char path[] = "/tmp/aftest-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	unlink(path);
	ck_assert_int_eq(write(fd, "0123456789", 10), 10);
	/* a prefix that differs from the file shows where each read came from */
	af_prefix pre = { fd, (const unsigned char *)"abcd", 4 };
	af_source s;
	af_source_init_prefix(&s, &pre, 10);
	char buf[16];
	ck_assert_int_eq(s.pread(&s, buf, 3, 1), 3);
	ck_assert_int_eq(memcmp(buf, "bcd", 3), 0);
	ck_assert_int_eq(s.pread(&s, buf, 4, 2), 4);   /* runs past it */
	ck_assert_int_eq(memcmp(buf, "2345", 4), 0);
	ck_assert_int_eq(s.pread(&s, buf, 16, 8), 2);
	ck_assert_int_eq(s.pread(&s, buf, 4, 10), 0);
	ck_assert_int_eq(s.fd, -1);   /* never spliced: it is not the file */
	/* the file gone: a negative errno, as every source says */
	close(fd);
	ck_assert_int_eq(s.pread(&s, buf, 2, 0), 2);
	ck_assert_int_eq(s.pread(&s, buf, 2, 6), -EBADF);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("source");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, mem_source_reads_and_clips);
	tcase_add_test(tc, read_exact_reports_truncation);
	tcase_add_test(tc, fd_source_honours_base_and_size);
	tcase_add_test(tc, prefix_source_serves_its_prefix_then_the_file);
	suite_add_tcase(s, tc);
	return aft_run(s);
}
