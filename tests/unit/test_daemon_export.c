/* SPDX-License-Identifier: MIT */
/* Tests for src/daemon/export.c: LOOKUP of "." and ".." on ids the kernel
 * forgot, what a changed source does to them, and the saved id map. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon_test.h"
#include "export.h"

static char *dir, *cache;
static struct afd_ctx c;

static void setup(void)
{
	dir = aftd_tmp_new();
	cache = aftd_tmp_new();
	aftd_write_npy(dir, "a.npy", 100, 1);
	aftd_write(dir, "plain.txt", "hello\n", 6);
	aftd_ctx_open(&c, dir, NULL);
	c.opts.index_dir = cache;
}

static void teardown(void)
{
	c.opts.index_dir = NULL;
	afd_ctx_destroy(&c);
	aftd_tmp_free(dir);
	aftd_tmp_free(cache);
}

/* LOOKUP of "." in @p id: 0 and the node (one lookup counted), or -errno. */
static int self(struct afd_ctx *ctx, uint64_t id, struct afd_node **out,
		struct stat *st)
{
	return afd_export_lookup(ctx, id, false, out, st);
}

START_TEST(a_forgotten_id_is_looked_up_again)
{
	struct afd_node *arr = aftd_must(&c, c.nodes.root, "a.npy");
	struct afd_node *data = aftd_must(&c, arr, "data");
	uint64_t arr_id = arr->nodeid, data_id = data->nodeid;
	uint32_t gen = data->gen;
	ck_assert_uint_ne(gen, 0);
	ck_assert_int_eq(aftd_forget(&c, data, 1), 1);
	ck_assert_int_eq(aftd_forget(&c, arr, 1), 1);
	ck_assert_ptr_null(afd_nodes_from_id(&c.nodes, data_id));

	struct afd_node *n;
	struct stat st;
	ck_assert_int_eq(self(&c, data_id, &n, &st), 0);
	ck_assert_uint_eq(n->nodeid, data_id);
	ck_assert_uint_eq(n->gen, gen);
	ck_assert_int_eq(n->kind, NK_ENTRY);
	ck_assert_int_eq(st.st_size, 100);
	ck_assert_ptr_eq(afd_nodes_from_id(&c.nodes, data_id), n);
	/* its parent: the array folder, under its old id */
	struct afd_node *up;
	ck_assert_int_eq(afd_export_lookup(&c, data_id, true, &up, &st), 0);
	ck_assert_uint_eq(up->nodeid, arr_id);
	ck_assert(S_ISDIR(st.st_mode));
	/* a lookup by name finds the same nodes, not new ids */
	ck_assert_ptr_eq(aftd_must(&c, up, "data"), n);
	ck_assert_ptr_eq(aftd_must(&c, c.nodes.root, "a.npy"), up);
	/* ".." of the root is the root */
	ck_assert_int_eq(afd_export_lookup(&c, 1, true, &up, &st), 0);
	ck_assert_ptr_eq(up, c.nodes.root);
	/* an id never issued */
	ck_assert_int_eq(self(&c, data_id + 1000, &n, &st), -ESTALE);
}
END_TEST

START_TEST(changed_sources_make_old_ids_stale)
{
	struct afd_node *arr = aftd_must(&c, c.nodes.root, "a.npy");
	struct afd_node *data = aftd_must(&c, arr, "data");
	struct afd_node *plain = aftd_must(&c, c.nodes.root, "plain.txt");
	uint64_t arr_id = arr->nodeid, data_id = data->nodeid;
	uint64_t plain_id = plain->nodeid;
	aftd_forget(&c, data, 1);
	aftd_forget(&c, arr, 1);
	aftd_forget(&c, plain, 1);
	struct afd_node *n;
	struct stat st;

	/* rewritten in place: the old version's data is gone, the array
	 * folder (the same source file) stays */
	aftd_write_npy(dir, "a.npy", 50, 2);
	ck_assert_int_eq(self(&c, data_id, &n, &st), -ESTALE);
	ck_assert_int_eq(self(&c, arr_id, &n, &st), 0);
	ck_assert_uint_eq(n->nodeid, arr_id);
	struct afd_node *fresh = aftd_must(&c, n, "data");
	ck_assert_uint_ne(fresh->nodeid, data_id);
	aftd_forget(&c, fresh, 1);
	aftd_forget(&c, n, 1);

	ck_assert_ptr_null(afd_nodes_from_id(&c.nodes, arr_id));
	/* replaced by rename: another file, every id of the old one stale */
	aftd_write_npy(dir, "b.tmp", 50, 3);
	char *tmp = strdup(aftd_path(dir, "b.tmp"));
	ck_assert_int_eq(rename(tmp, aftd_path(dir, "a.npy")), 0);
	free(tmp);
	ck_assert_int_eq(self(&c, arr_id, &n, &st), -ESTALE);
	/* and removed */
	ck_assert_int_eq(unlink(aftd_path(dir, "plain.txt")), 0);
	ck_assert_int_eq(self(&c, plain_id, &n, &st), -ESTALE);
	/* a live node whose source changed is stale too (never new bytes
	 * under an old id) */
	arr = aftd_must(&c, c.nodes.root, "a.npy");
	data = aftd_must(&c, arr, "data");
	aftd_write_npy(dir, "a.npy", 60, 4);
	ck_assert_int_eq(self(&c, data->nodeid, &n, &st), -ESTALE);
	ck_assert_ptr_eq(afd_nodes_from_id(&c.nodes, data->nodeid), data);
	ck_assert_uint_eq(data->nlookup, 1);
	/* and a live array folder whose source is another file now */
	tmp = strdup(aftd_path(dir, "c.tmp"));
	aftd_write_npy(dir, "c.tmp", 70, 5);
	ck_assert_int_eq(rename(tmp, aftd_path(dir, "a.npy")), 0);
	free(tmp);
	ck_assert_int_eq(self(&c, arr->nodeid, &n, &st), -ESTALE);
}
END_TEST

START_TEST(ids_survive_a_restart_through_the_saved_map)
{
	struct afd_node *arr = aftd_must(&c, c.nodes.root, "a.npy");
	struct afd_node *data = aftd_must(&c, arr, "data");
	uint64_t data_id = data->nodeid, arr_id = arr->nodeid;
	uint32_t gen = data->gen;
	afd_export_save(&c);
	c.opts.index_dir = NULL;
	afd_ctx_destroy(&c);

	aftd_ctx_open(&c, dir, NULL);
	c.opts.index_dir = cache;
	afd_export_load(&c);
	ck_assert_uint_ne(c.nodes.ids.gen, gen);  /* a new run's generation */
	struct afd_node *n;
	struct stat st;
	ck_assert_int_eq(self(&c, data_id, &n, &st), 0);
	ck_assert_uint_eq(n->gen, gen);
	ck_assert_int_eq(afd_export_lookup(&c, data_id, true, &n, &st), 0);
	ck_assert_uint_eq(n->nodeid, arr_id);
	/* new ids continue past the saved ones */
	struct afd_node *p = aftd_must(&c, c.nodes.root, "plain.txt");
	ck_assert_uint_gt(p->nodeid, data_id);
	ck_assert_uint_eq(p->gen, c.nodes.ids.gen);
}
END_TEST

START_TEST(a_corrupt_map_is_ignored)
{
	struct afd_node *arr = aftd_must(&c, c.nodes.root, "a.npy");
	uint64_t arr_id = arr->nodeid;
	afd_export_save(&c);
	c.opts.index_dir = NULL;
	afd_ctx_destroy(&c);
	/* every map file in the cache folder gets a byte changed */
	char cmd[512];
	snprintf(cmd, sizeof(cmd),
		 "for f in %s/*.afm; do printf 'X' | dd of=\"$f\" bs=1 seek=60 "
		 "conv=notrunc status=none; done", cache);
	ck_assert_int_eq(system(cmd), 0);
	aftd_ctx_open(&c, dir, NULL);
	c.opts.index_dir = cache;
	afd_export_load(&c);
	ck_assert_uint_eq(c.nodes.ids.count, 0);
	struct afd_node *n;
	struct stat st;
	ck_assert_int_eq(self(&c, arr_id, &n, &st), -ESTALE);
}
END_TEST

/* Whether the cache folder holds a map file. */
static bool have_map_file(void)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "ls %s/ids-*.afm >/dev/null 2>&1", cache);
	return system(cmd) == 0;
}

START_TEST(the_saver_writes_the_map_while_it_changes)
{
	c.opts.limits.ids_save_ms = 20;
	ck_assert_int_eq(afd_export_saver_start(&c), 0);
	usleep(100 * 1000);
	ck_assert(!have_map_file());   /* nothing issued: nothing to save */
	struct afd_node *arr = aftd_must(&c, c.nodes.root, "a.npy");
	uint64_t arr_id = arr->nodeid;
	for (int i = 0; i < 500 && !have_map_file(); i++)
		usleep(10 * 1000);
	ck_assert(have_map_file());
	/* as a crash would leave it: no save at the end */
	afd_export_saver_stop(&c);
	c.nodes.ids.dirty = false;
	c.opts.index_dir = NULL;
	afd_ctx_destroy(&c);
	aftd_ctx_open(&c, dir, NULL);
	c.opts.index_dir = cache;
	afd_export_load(&c);
	struct afd_node *n;
	struct stat st;
	ck_assert_int_eq(self(&c, arr_id, &n, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
}
END_TEST

static Suite *export_suite(void)
{
	Suite *s = suite_create("daemon_export");
	TCase *tc = tcase_create("export");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, a_forgotten_id_is_looked_up_again);
	tcase_add_test(tc, changed_sources_make_old_ids_stale);
	tcase_add_test(tc, ids_survive_a_restart_through_the_saved_map);
	tcase_add_test(tc, a_corrupt_map_is_ignored);
	tcase_add_test(tc, the_saver_writes_the_map_while_it_changes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return aft_run(export_suite());
}
