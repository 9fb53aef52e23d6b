/* SPDX-License-Identifier: MIT */
/* Tests for src/daemon/lz4share.c: which views get the shared LZ4 index. */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "daemon_test.h"
#include "lz4share.h"

static const char *const kind_names[] = {
	[AF_VIEW_DATA] = "data", [AF_VIEW_NPY] = "B.npy", [AF_VIEW_RA] = "B.ra",
};

struct parsed {
	int fd;
	af_source src;
	af_array a;
};

static void parse(struct parsed *p, const char *dir, const char *name)
{
	p->fd = aft_open_fd_source(aftd_path(dir, name), &p->src);
	af_error err;
	af_error_clear(&err);
	ck_assert_msg(af_array_parse_named(name, &p->src, &p->a, &err) == AF_OK,
		      "%s: %s", name, err.msg);
}

static void unparse(struct parsed *p)
{
	af_array_free(&p->a);
	close(p->fd);
}

/*
 * The share is wanted for exactly the views that read through an index:
 * given the index of another array, such a view refuses it (AF_E_INVAL),
 * any other view never looks at it. Every view kind, so a kind the view
 * plan decodes and the daemon forgets (or the reverse) fails here.
 */
static void check_every_kind(const struct parsed *p, af_lz4_index *other,
			     const char *what, unsigned expect_wanted)
{
	unsigned wanted = 0;
	for (int k = AF_VIEW_DATA; k <= AF_VIEW_RA; k++) {
		af_view *v = NULL;
		af_error err;
		af_error_clear(&err);
		af_status st = af_view_open_shared(&v, &p->a, &p->src,
						   (af_view_kind)k, other, &err);
		bool reads_index = st == AF_E_INVAL;
		ck_assert_msg(reads_index || st == AF_OK, "%s %s: %s", what,
			      kind_names[k], err.msg);
		ck_assert_msg(afd_lz4share_wanted(&p->a, (af_view_kind)k) ==
			      reads_index, "%s %s: the share is %swanted", what,
			      kind_names[k], reads_index ? "not " : "");
		if (reads_index)
			wanted |= 1u << k;
		af_view_close(v);
	}
	ck_assert_msg(wanted == expect_wanted, "%s: wanted for kinds %#x",
		      what, wanted);
}

START_TEST(the_share_goes_to_the_views_that_read_an_index)
{
	char *dir = aftd_tmp_new();
	aftd_write_lz4_ra(dir, "l.ra", 1000);
	aftd_write_lz4_ra(dir, "other.ra", 300);
	aftd_write_npy(dir, "p.npy", 100, 1);
	struct parsed lz4, other, npy, ra;
	parse(&lz4, dir, "l.ra");
	parse(&other, dir, "other.ra");
	parse(&npy, dir, "p.npy");
	/* a plain .ra of the same elements: the .ra view of the .npy */
	af_view *v;
	af_error err;
	af_error_clear(&err);
	ck_assert_int_eq(af_view_open(&v, &npy.a, &npy.src, AF_VIEW_RA, &err),
			 AF_OK);
	unsigned char buf[4096];
	size_t got = 0;
	ck_assert_int_eq(af_view_read(v, buf, sizeof(buf), 0, &got, &err), AF_OK);
	ck_assert_uint_eq(got, af_view_size(v));
	aftd_write(dir, "plain.ra", buf, got);
	af_view_close(v);
	parse(&ra, dir, "plain.ra");

	af_lz4_index *ix = NULL;
	ck_assert_int_eq(af_lz4_index_open(&ix, &other.a, &other.src, &err), AF_OK);
	/* data and B.npy decode the block; B.ra is the source file itself */
	check_every_kind(&lz4, ix, "an LZ4 .ra",
			 1u << AF_VIEW_DATA | 1u << AF_VIEW_NPY);
	check_every_kind(&npy, ix, "a .npy", 0);
	check_every_kind(&ra, ix, "a plain .ra", 0);
	af_lz4_index_close(ix);

	unparse(&ra);
	unparse(&npy);
	unparse(&other);
	unparse(&lz4);
	aftd_tmp_free(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("daemon_lz4share");
	TCase *tc = tcase_create("wanted");
	tcase_add_test(tc, the_share_goes_to_the_views_that_read_an_index);
	suite_add_tcase(s, tc);
	return aft_run(s);
}
