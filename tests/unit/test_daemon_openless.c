/* SPDX-License-Identifier: MIT */
/* Tests for src/daemon/openless.c: handles of open-less reads, bounded, on the
 * test's clock. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "daemon_test.h"
#include "handle.h"

static char *dir;
static struct afd_ctx c;
static struct aftd_clock clk;

static void setup(void)
{
	dir = aftd_tmp_new();
	clk.now_ms = 5000;
	aftd_ctx_open(&c, dir, &clk);
}

static void teardown(void)
{
	afd_ctx_destroy(&c);
	aftd_tmp_free(dir);
}

/* A read of node @p n as the read handler makes it without an open. */
static void read_node(struct afd_node *n)
{
	struct afd_handle *h = NULL;
	int rc = afd_openless_get(&c, n, &h, NULL, NULL);
	ck_assert_msg(rc == 0, "bound read of %s: %s", n->path, strerror(-rc));
	afd_handle_close(h);
}

static struct afd_node *plain(int i)
{
	char name[24]; /* "f" + any int + ".txt" */
	snprintf(name, sizeof(name), "f%02d.txt", i);
	aftd_write(dir, name, name, strlen(name));
	struct afd_node *n = aftd_must(&c, c.nodes.root, name);
	ck_assert_int_eq(n->kind, NK_FILE);
	return n;
}

START_TEST(at_most_the_limit_stay_bound_least_recently_read_first_out)
{
	c.opts.limits.bound_max = 3;
	struct afd_node *n[6];
	for (int i = 0; i < 6; i++)
		n[i] = plain(i);
	for (int i = 0; i < 3; i++)
		read_node(n[i]);
	ck_assert_uint_eq(c.openless.count, 3);
	read_node(n[0]);          /* n0 is the most recent again */
	read_node(n[3]);
	ck_assert_uint_eq(c.openless.count, 3);
	ck_assert_ptr_nonnull(afd_node_io(n[0])->openless);
	ck_assert_ptr_null(afd_node_io(n[1])->openless);
	read_node(n[4]);
	ck_assert_ptr_null(afd_node_io(n[2])->openless);
	ck_assert(afd_node_io(n[0])->openless &&
		  afd_node_io(n[3])->openless &&
		  afd_node_io(n[4])->openless);
	/* closed is made again when read again */
	read_node(n[1]);
	ck_assert_ptr_nonnull(afd_node_io(n[1])->openless);
	ck_assert_ptr_null(afd_node_io(n[0])->openless);
	ck_assert_uint_eq(c.openless.count, 3);
}
END_TEST

START_TEST(bound_handles_hold_at_most_the_limit_of_fds)
{
	c.opts.limits.bound_max = 3;
	struct afd_node *n[20];
	for (int i = 0; i < 20; i++)
		n[i] = plain(i);
	int before = aft_fd_count();
	for (int round = 0; round < 2; round++)
		for (int i = 0; i < 20; i++) {
			read_node(n[i]);
			ck_assert_int_le(aft_fd_count(), before + 3);
		}
	ck_assert_int_eq(aft_fd_count(), before + 3);
}
END_TEST

/* What a handle of an LZ4 .ra of 1000 decoded bytes keeps (af_view_cost):
 * the bound of its LZ4 index. */
#define U ((size_t)af_lz4_index_bound(1000))

static struct afd_node *lz4_data(const char *name, size_t size)
{
	aftd_write_lz4_ra(dir, name, size);
	struct afd_node *arr = aftd_must(&c, c.nodes.root, name);
	ck_assert_int_eq(arr->kind, NK_ARRAY);
	return aftd_must(&c, arr, "data");
}

START_TEST(decoded_data_is_given_up_only_by_handles_idle_long_enough)
{
	c.opts.limits.bound_budget = 2 * U + U / 2;
	c.opts.limits.bound_idle_ms = 1000;
	struct afd_node *z[6];
	char name[16];
	for (int i = 0; i < 6; i++) {
		snprintf(name, sizeof(name), "z%d.ra", i);
		z[i] = lz4_data(name, 1000);
	}
	uint64_t t0 = clk.now_ms;
	read_node(z[0]);
	read_node(z[1]);
	read_node(z[2]);
	ck_assert_uint_eq(c.openless.bytes, 3 * U);   /* over, but all in use */
	clk.now_ms = t0 + 999;
	read_node(z[3]);
	ck_assert_uint_eq(c.openless.bytes, 4 * U);   /* 999 ms is not idle */
	ck_assert(afd_node_io(z[0])->openless &&
		  afd_node_io(z[1])->openless &&
		  afd_node_io(z[2])->openless);

	clk.now_ms = t0 + 1000;
	read_node(z[0]);                            /* read again: spared */
	read_node(z[4]);
	/* z1 and z2 were idle, oldest first; z3 was read 1 ms ago */
	ck_assert_ptr_null(afd_node_io(z[1])->openless);
	ck_assert_ptr_null(afd_node_io(z[2])->openless);
	ck_assert(afd_node_io(z[0])->openless &&
		  afd_node_io(z[3])->openless &&
		  afd_node_io(z[4])->openless);
	ck_assert_uint_eq(c.openless.bytes, 3 * U);

	clk.now_ms = t0 + 2000;
	read_node(z[5]);
	/* z3 then z0 go, and the budget is met: z4 stays */
	ck_assert_ptr_null(afd_node_io(z[3])->openless);
	ck_assert_ptr_null(afd_node_io(z[0])->openless);
	ck_assert(afd_node_io(z[4])->openless && afd_node_io(z[5])->openless);
	ck_assert_uint_eq(c.openless.bytes, 2 * U);
	ck_assert_uint_eq(c.openless.count, 2);
}
END_TEST

START_TEST(a_read_renews_the_idle_window)
{
	c.opts.limits.bound_budget = U + U / 2;
	c.opts.limits.bound_idle_ms = 1000;
	struct afd_node *z0 = lz4_data("z0.ra", 1000);
	struct afd_node *z1 = lz4_data("z1.ra", 1000);
	struct afd_node *z2 = lz4_data("z2.ra", 1000);
	uint64_t t0 = clk.now_ms;
	read_node(z0);
	read_node(z1);
	clk.now_ms = t0 + 1000;
	read_node(z0);            /* bound already: only its time changes */
	clk.now_ms = t0 + 1500;
	read_node(z2);
	/* z1 was idle and goes; z0, read 500 ms ago, stays over the budget */
	ck_assert_ptr_null(afd_node_io(z1)->openless);
	ck_assert(afd_node_io(z0)->openless && afd_node_io(z2)->openless);
	ck_assert_uint_eq(c.openless.bytes, 2 * U);
}
END_TEST

START_TEST(handles_that_decode_nothing_cost_nothing)
{
	c.opts.limits.bound_budget = 0;
	c.opts.limits.bound_idle_ms = 0;
	aftd_write_lz4_ra(dir, "z.ra", 1000);
	aftd_write_npy(dir, "a.npy", 100, 0);
	struct afd_node *z = aftd_must(&c, c.nodes.root, "z.ra");
	struct afd_node *a = aftd_must(&c, c.nodes.root, "a.npy");
	struct afd_node *zra = aftd_must(&c, z, "z.ra");   /* the source itself */
	struct afd_node *zshape = aftd_must(&c, z, "shape");
	struct afd_node *adata = aftd_must(&c, a, "data");
	read_node(zra);
	read_node(zshape);
	read_node(adata);
	ck_assert_uint_eq(c.openless.bytes, 0);
	ck_assert_uint_eq(c.openless.count, 3);
	/* with no budget, an idle LZ4 handle goes at the next bind */
	struct afd_node *znpy = aftd_must(&c, z, "z.npy");
	read_node(znpy);
	ck_assert_uint_eq(c.openless.bytes, U);
	read_node(aftd_must(&c, z, "data"));
	ck_assert_ptr_null(afd_node_io(znpy)->openless);
	ck_assert(afd_node_io(zra)->openless &&
		  afd_node_io(zshape)->openless &&
		  afd_node_io(adata)->openless);
	ck_assert_uint_eq(c.openless.bytes, U);
}
END_TEST

START_TEST(a_bound_handle_serves_its_nodes_version)
{
	aftd_write_npy(dir, "a.npy", 10, 0);
	aftd_write_npy(dir, "b.npy", 10, 0);
	struct afd_node *a = aftd_must(&c, aftd_must(&c, c.nodes.root, "a.npy"),
				       "data");
	struct afd_node *b = aftd_must(&c, aftd_must(&c, c.nodes.root, "b.npy"),
				       "data");
	struct stat st;
	ck_assert(!afd_openless_attr(&c.openless, a, &st));
	read_node(a);
	ck_assert(afd_openless_attr(&c.openless, a, &st));
	ck_assert_int_eq(st.st_size, 10);
	aftd_write_npy(dir, "a.npy", 30, 0);
	aftd_write_npy(dir, "b.npy", 30, 0);
	/* read before: the version it was read as */
	ck_assert(afd_openless_attr(&c.openless, a, &st));
	ck_assert_int_eq(st.st_size, 10);
	/* changed before its first read: EIO, and the next lookup is new */
	struct afd_handle *h = NULL;
	ck_assert_int_eq(afd_openless_get(&c, b, &h, NULL, NULL), -EIO);
	ck_assert_ptr_null(afd_node_io(b)->openless);
	struct afd_node *b2 = aftd_must(&c, aftd_must(&c, c.nodes.root, "b.npy"),
					"data");
	ck_assert_ptr_ne(b2, b);
	read_node(b2);
	ck_assert(afd_openless_attr(&c.openless, b2, &st));
	ck_assert_int_eq(st.st_size, 30);
}
END_TEST

START_TEST(a_forgotten_node_is_unbound)
{
	struct afd_node *n = plain(0);
	read_node(n);
	ck_assert_uint_eq(c.openless.count, 1);
	ck_assert_int_eq(aftd_forget(&c, n, 1), 1);
	ck_assert_uint_eq(c.openless.count, 0);
	n = plain(0);
	read_node(n);
	read_node(n);
	ck_assert_uint_eq(c.openless.count, 1);
}
END_TEST

static Suite *bound_suite(void)
{
	Suite *s = suite_create("daemon_openless");
	TCase *tc = tcase_create("bound");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, at_most_the_limit_stay_bound_least_recently_read_first_out);
	tcase_add_test(tc, bound_handles_hold_at_most_the_limit_of_fds);
	tcase_add_test(tc, decoded_data_is_given_up_only_by_handles_idle_long_enough);
	tcase_add_test(tc, a_read_renews_the_idle_window);
	tcase_add_test(tc, handles_that_decode_nothing_cost_nothing);
	tcase_add_test(tc, a_bound_handle_serves_its_nodes_version);
	tcase_add_test(tc, a_forgotten_node_is_unbound);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return aft_run(bound_suite());
}
