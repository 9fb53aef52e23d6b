/* SPDX-License-Identifier: MIT */
/* Tests for src/codec/array.c: what an array file's name says (the one
 * rule the daemon, the tools and the stack ask) and the parse it picks. */
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "af_test.h"
#include "arrayfs/arrayfs.h"

struct name_case {
	const char *name;
	af_name_kind in_folder, in_npz;
	size_t base_len;
};

static const struct name_case name_cases[] = {
	{ "x.npy", AF_NAME_NPY, AF_NAME_NPY, 1 },
	{ "x.ra", AF_NAME_RA, AF_NAME_NONE, 1 },
	{ "x.npz", AF_NAME_NPZ, AF_NAME_NONE, 1 },
	{ "dir/x.npy", AF_NAME_NPY, AF_NAME_NPY, 5 },
	{ "/abs/dir/run.ra", AF_NAME_RA, AF_NAME_NONE, 12 },
	/* B is "." and ".x": not empty, so arrays */
	{ "..npy", AF_NAME_NPY, AF_NAME_NPY, 1 },
	{ ".x.npy", AF_NAME_NPY, AF_NAME_NPY, 2 },
	/* the extension alone: a hidden file named npy, ra or npz */
	{ ".npy", AF_NAME_NONE, AF_NAME_NONE, 4 },
	{ ".ra", AF_NAME_NONE, AF_NAME_NONE, 3 },
	{ ".npz", AF_NAME_NONE, AF_NAME_NONE, 4 },
	{ "dir/.npy", AF_NAME_NONE, AF_NAME_NONE, 8 },
	{ "x.npy/", AF_NAME_NONE, AF_NAME_NONE, 6 },
	/* case-sensitive, and only at the end */
	{ "x.NPY", AF_NAME_NONE, AF_NAME_NONE, 5 },
	{ "x.Ra", AF_NAME_NONE, AF_NAME_NONE, 4 },
	{ "x.npy.bak", AF_NAME_NONE, AF_NAME_NONE, 9 },
	{ "x.npyz", AF_NAME_NONE, AF_NAME_NONE, 6 },
	{ "xnpy", AF_NAME_NONE, AF_NAME_NONE, 4 },
	{ "x.rar", AF_NAME_NONE, AF_NAME_NONE, 5 },
	{ "npy", AF_NAME_NONE, AF_NAME_NONE, 3 },
	{ "", AF_NAME_NONE, AF_NAME_NONE, 0 },
	/* a line break is a name like any other here (the stack's rule
	 * is stricter: af_stack_member_name) */
	{ "a\nb.npy", AF_NAME_NPY, AF_NAME_NPY, 3 },
};

START_TEST(array_names_by_their_last_component)
{
	for (size_t i = 0; i < sizeof(name_cases) / sizeof(name_cases[0]); i++) {
		const struct name_case *c = &name_cases[i];
		ck_assert_msg(af_array_name_kind(c->name, false) == c->in_folder,
			      "\"%s\" in a folder: %d, expected %d", c->name,
			      (int)af_array_name_kind(c->name, false),
			      (int)c->in_folder);
		ck_assert_msg(af_array_name_kind(c->name, true) == c->in_npz,
			      "\"%s\" in an npz: %d, expected %d", c->name,
			      (int)af_array_name_kind(c->name, true),
			      (int)c->in_npz);
		ck_assert_msg(af_array_name_base_len(c->name) == c->base_len,
			      "\"%s\": base length %zu, expected %zu", c->name,
			      af_array_name_base_len(c->name), c->base_len);
	}
}
END_TEST

/* af_array_parse_named picks its parser by the same rule. */
START_TEST(parse_named_follows_the_name_rule)
{
	af_source src;
	int fd = aft_open_fd_source(aft_fixture("npy/dtype-be-f8.npy"), &src);
	af_array a;
	af_error err;
	af_error_clear(&err);
	ck_assert_int_eq(af_array_parse_named("d/x.npy", &src, &a, &err), AF_OK);
	ck_assert_int_eq(a.format, AF_FORMAT_NPY);
	af_array_free(&a);
	const char *refused[] = { ".npy", "x.NPY", "x.npy.bak", "x.npz" };
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		memset(&a, 0x5a, sizeof(a));
		ck_assert_int_eq(af_array_parse_named(refused[i], &src, &a, &err),
				 AF_E_UNSUPPORTED);
		/* *out untouched */
		ck_assert_uint_eq(((unsigned char *)&a)[0], 0x5a);
	}
	/* a .ra name asks the .ra parser, which refuses the npy magic */
	ck_assert_int_eq(af_array_parse_named("x.ra", &src, &a, &err), AF_E_MAGIC);
	close(fd);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("array");
	TCase *tc = tcase_create("names");
	tcase_add_test(tc, array_names_by_their_last_component);
	tcase_add_test(tc, parse_named_follows_the_name_rule);
	suite_add_tcase(s, tc);
	return aft_run(s);
}
