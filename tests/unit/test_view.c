/* SPDX-License-Identifier: MIT */
/* PLACEHOLDER: tests for src/codec/view.c go here. */
#include "af_test.h"

START_TEST(placeholder)
{
	ck_assert_int_eq(1, 1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("view");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, placeholder);
	suite_add_tcase(s, tc);
	return aft_run(s);
}
