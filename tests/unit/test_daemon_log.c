/* SPDX-License-Identifier: MIT */
/* Tests for src/daemon/log.c (lines said once by structured key, bounded)
 * and fail.c (the errno and the line a failure is answered with). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "af_test.h"
#include "fail.h"
#include "log.h"

static struct afd_log lg;

static void setup(void)
{
	ck_assert_int_eq(afd_log_init(&lg, false), 0);
	lg.out = tmpfile();
	ck_assert_ptr_nonnull(lg.out);
}

static void teardown(void)
{
	fclose(lg.out);
	afd_log_destroy(&lg);
}

/* Everything logged so far, malloc'd. */
static char *logged(void)
{
	fflush(lg.out);
	long n = ftell(lg.out);
	ck_assert_int_ge(n, 0);
	char *s = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(s);
	rewind(lg.out);
	ck_assert_uint_eq(fread(s, 1, (size_t)n, lg.out), (size_t)n);
	s[n] = '\0';
	return s;
}

static size_t count_lines(void)
{
	char *s = logged();
	size_t n = 0;
	for (const char *p = s; *p; p++)
		n += *p == '\n';
	free(s);
	return n;
}

static void say(enum afd_line kind, uint64_t source, uint64_t index)
{
	struct afd_logkey k = { kind, source, index };
	afd_log_once(&lg, &k, AFD_LOG_WARN, "kind %d source %llu index %llu",
		     (int)kind, (unsigned long long)source,
		     (unsigned long long)index);
}

/* The three lines whose old keys were source ^ mix(7): zip warning 0
 * (mix(i + 7)), member 6's parse (mix(j + 1)), member 4's open (mix(k + 3)). */
START_TEST(lines_of_different_kinds_never_hide_each_other)
{
	for (int round = 0; round < 3; round++) {
		say(AFD_LINE_ZIP_WARNING, 42, 0);
		say(AFD_LINE_MEMBER_PARSE, 42, 6);
		say(AFD_LINE_MEMBER_OPEN, 42, 4);
	}
	char want[256];
	snprintf(want, sizeof(want),
		 "arrayfs: kind %d source 42 index 0\n"
		 "arrayfs: kind %d source 42 index 6\n"
		 "arrayfs: kind %d source 42 index 4\n",
		 AFD_LINE_ZIP_WARNING, AFD_LINE_MEMBER_PARSE, AFD_LINE_MEMBER_OPEN);
	char *s = logged();
	ck_assert_str_eq(s, want);
	free(s);
}
END_TEST

START_TEST(every_field_tells_lines_apart)
{
	/* all kinds, sources and indexes in a small cube, twice over */
	for (int round = 0; round < 2; round++)
		for (int kind = AFD_LINE_UNPARSED; kind <= AFD_LINE_NETWORK_FS; kind++)
			for (uint64_t source = 0; source < 3; source++)
				for (uint64_t index = 0; index < 3; index++)
					say((enum afd_line)kind, source, index);
	size_t kinds = AFD_LINE_NETWORK_FS - AFD_LINE_UNPARSED + 1;
	ck_assert_uint_eq(count_lines(), kinds * 3 * 3);
	/* fields are not mixed: (source 1, index 0) is not (source 0, index 1) */
	say(AFD_LINE_READ, UINT64_MAX, 0);
	say(AFD_LINE_READ, 0, UINT64_MAX);
	ck_assert_uint_eq(count_lines(), kinds * 3 * 3 + 2);
}
END_TEST

START_TEST(always_is_said_every_time)
{
	for (int i = 0; i < 5; i++)
		say(AFD_LINE_ALWAYS, 7, 7);
	ck_assert_uint_eq(count_lines(), 5);
}
END_TEST

START_TEST(broken_says_where_why_and_the_byte)
{
	af_error err;
	af_error_set(&err, AF_E_HEADER, 12, "bad\nkey");
	struct afd_logkey k = { AFD_LINE_UNPARSED, 9, 0 };
	afd_log_broken(&lg, &k, "a/b.npy", &err);
	afd_log_broken(&lg, &k, "a/b.npy", &err);
	af_error_clear(&err);
	err.status = AF_E_TRUNCATED;
	k.kind = AFD_LINE_READ;
	afd_log_broken(&lg, &k, "c.ra", &err);
	char *s = logged();
	ck_assert_str_eq(s, "arrayfs: cannot read a/b.npy: bad\\x0akey (at byte 12)\n"
			    "arrayfs: cannot read c.ra: truncated\n");
	free(s);
}
END_TEST

/* Full, the set is emptied: a line may come again, memory stays the same. */
START_TEST(the_set_is_bounded)
{
	size_t cap = lg.cap;
	for (uint64_t i = 0; i + 1 < AFD_LOG_SEEN_MAX; i++) {
		say(AFD_LINE_READ, 1, i);
		say(AFD_LINE_READ, 1, i);
	}
	say(AFD_LINE_READ, 1, AFD_LOG_SEEN_MAX - 1);
	ck_assert_uint_eq(lg.nseen, AFD_LOG_SEEN_MAX);
	ck_assert_uint_eq(count_lines(), AFD_LOG_SEEN_MAX);
	say(AFD_LINE_READ, 1, 0);  /* the set was full, so emptied: said again */
	say(AFD_LINE_READ, 1, 0);
	ck_assert_uint_eq(count_lines(), AFD_LOG_SEEN_MAX + 1);
	ck_assert_uint_eq(lg.nseen, 1);
	ck_assert_uint_eq(lg.cap, cap);
}
END_TEST

/* -- fail.c ---------------------------------------------------------- */

static long logged_bytes(void)
{
	fflush(lg.out);
	return ftell(lg.out);
}

/* A failure of status @p st recorded at "x.npy/data" under READ / @p index. */
static int record(struct afd_failure *f, af_status st, uint64_t index)
{
	af_error err;
	af_error_set(&err, st, 3, "reason %d", (int)st);
	struct afd_logkey k = { AFD_LINE_READ, 5, index };
	return afd_failure_set(f, &k, "x.npy/data", &err);
}

START_TEST(a_reason_is_answered_by_the_table_and_logged_once)
{
	for (int s = AF_E_NOMEM; s <= AF_E_INVAL; s++) {
		struct afd_failure f;
		afd_failure_clear(&f);
		long before = logged_bytes();
		int rc = record(&f, (af_status)s, (uint64_t)s);
		ck_assert_int_eq(rc, -af_status_errno((af_status)s));
		/* the rc passed up does not matter: the reason decides */
		ck_assert_int_eq(afd_failure_errno(&lg, -EPERM, &f),
				 af_status_errno((af_status)s));
		long after_first = logged_bytes();
		ck_assert_int_gt(after_first, before);
		ck_assert_int_eq(afd_failure_errno(&lg, rc, &f),
				 af_status_errno((af_status)s));
		ck_assert_int_eq(logged_bytes(), after_first);
	}
}
END_TEST

START_TEST(no_reason_is_the_errno_as_it_is_unlogged)
{
	struct afd_failure f;
	afd_failure_clear(&f);
	ck_assert_int_eq(afd_failure_errno(&lg, -ENOENT, &f), ENOENT);
	ck_assert_int_eq(afd_failure_errno(&lg, -EROFS, NULL), EROFS);
	ck_assert_int_eq(logged_bytes(), 0);
}
END_TEST

START_TEST(the_line_names_the_file_and_the_byte)
{
	struct afd_failure f;
	afd_failure_clear(&f);
	ck_assert_int_eq(record(&f, AF_E_TRUNCATED, 0), -EIO);
	ck_assert_int_eq(afd_failure_errno(&lg, -EIO, &f), EIO);
	char line[256] = "";
	rewind(lg.out);
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), lg.out));
	ck_assert_str_eq(line, "arrayfs: cannot read x.npy/data: reason 3 (at byte 3)\n");
}
END_TEST

START_TEST(a_record_without_a_status_is_still_a_failure)
{
	struct afd_failure f;
	afd_failure_clear(&f);
	af_error err;
	af_error_clear(&err);
	struct afd_logkey k = { AFD_LINE_OPEN, 1, 0 };
	ck_assert_int_eq(afd_failure_set(&f, &k, "y", &err), -EIO);
	ck_assert_int_eq(afd_failure_errno(&lg, 0, &f), EIO);
	/* no record to fill: only the errno */
	af_error_set(&err, AF_E_NOMEM, AF_NO_OFFSET, "x");
	ck_assert_int_eq(afd_failure_set(NULL, &k, "y", &err), -ENOMEM);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("daemon_log");
	TCase *tc = tcase_create("core");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, lines_of_different_kinds_never_hide_each_other);
	tcase_add_test(tc, every_field_tells_lines_apart);
	tcase_add_test(tc, always_is_said_every_time);
	tcase_add_test(tc, broken_says_where_why_and_the_byte);
	tcase_add_test(tc, the_set_is_bounded);
	tcase_add_test(tc, a_reason_is_answered_by_the_table_and_logged_once);
	tcase_add_test(tc, no_reason_is_the_errno_as_it_is_unlogged);
	tcase_add_test(tc, the_line_names_the_file_and_the_byte);
	tcase_add_test(tc, a_record_without_a_status_is_still_a_failure);
	suite_add_tcase(s, tc);
	return aft_run(s);
}
