/* SPDX-License-Identifier: MIT */
/* Tests for src/codec/status.c */
#include <errno.h>
#include <string.h>

#include "af_test.h"
#include "arrayfs/arrayfs.h"

START_TEST(error_set_formats_and_returns_status)
{
	af_error err;
	af_error_clear(&err);
	ck_assert_uint_eq(err.offset, AF_NO_OFFSET);
	af_status st = af_error_set(&err, AF_E_HEADER, 12, "bad key '%s'", "x");
	ck_assert_int_eq(st, AF_E_HEADER);
	ck_assert_int_eq(err.status, AF_E_HEADER);
	ck_assert_uint_eq(err.offset, 12);
	ck_assert_str_eq(err.msg, "bad key 'x'");
}
END_TEST

START_TEST(error_set_null_is_fine)
{
	ck_assert_int_eq(af_error_set(NULL, AF_E_IO, 0, "x"), AF_E_IO);
}
END_TEST

START_TEST(error_message_is_bounded)
{
	af_error err;
	char big[1000];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	af_error_set(&err, AF_E_IO, 0, "%s", big);
	ck_assert_uint_eq(strlen(err.msg), sizeof(err.msg) - 1);
}
END_TEST

/* The one table (af_status.h): out of memory, a size limit, and EIO for
 * every other reason bytes cannot be served, never an errno that blames
 * the reader's call (EINVAL) or says reading is not supported (EOPNOTSUPP). */
START_TEST(errno_mapping)
{
	ck_assert_int_eq(af_status_errno(AF_OK), 0);
	for (int s = AF_E_NOMEM; s <= AF_E_INVAL; s++) {
		int want = s == AF_E_NOMEM ? ENOMEM : s == AF_E_LIMIT ? EFBIG : EIO;
		ck_assert_msg(af_status_errno((af_status)s) == want,
			      "%s: errno %d, want %d", af_status_str((af_status)s),
			      af_status_errno((af_status)s), want);
	}
	for (int s = AF_OK; s <= AF_E_INVAL; s++)
		ck_assert_str_ne(af_status_str((af_status)s), "unknown status");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("status");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, error_set_formats_and_returns_status);
	tcase_add_test(tc, error_set_null_is_fine);
	tcase_add_test(tc, error_message_is_bounded);
	tcase_add_test(tc, errno_mapping);
	suite_add_tcase(s, tc);
	return aft_run(s);
}
