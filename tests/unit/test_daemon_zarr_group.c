/* SPDX-License-Identifier: MIT */
/* Tests for `.zarr/` (src/daemon/zarr_group_models.c, zarr_group_nodes.c): the hidden
 * lookup, the nodes of a group and of its child arrays, `.zmetadata`'s
 * version, and the models' freshness. Nothing mounted: lookups, opens and
 * reads are made as the handlers make them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "daemon_test.h"
#include "export.h"
#include "fail.h"
#include "handle.h"
#include "zarr_group_nodes.h"

static char *dir;
static struct afd_ctx c;
static struct aftd_clock clk;

static void setup(void)
{
	dir = aftd_tmp_new();
	clk.now_ms = 5000;
	aftd_ctx_open(&c, dir, &clk);
	c.opts.zarr_chunk = AF_ZARR_CHUNK_DEFAULT;   /* the daemon's default */
	aftd_log_capture(&c);
}

static void teardown(void)
{
	aftd_log_release(&c);
	afd_ctx_destroy(&c);
	aftd_tmp_free(dir);
}

static struct afd_node *group(void)
{
	return aftd_must(&c, c.nodes.root, AFD_ZARR_GROUP_NAME);
}

START_TEST(the_group_is_found_by_name_and_holds_its_files)
{
	aftd_write_npy(dir, "a.npy", 10, 0);
	struct afd_node *g = group();
	ck_assert_int_eq(g->kind, NK_ZGROUP);
	ck_assert_uint_eq(g->sub, 0);
	char *t = aftd_text_of(&c, aftd_must(&c, g, ".zgroup"));
	ck_assert_str_eq(t, "{\n    \"zarr_format\": 2\n}");
	free(t);
	struct afd_node *a = aftd_must(&c, g, "a");
	ck_assert_int_eq(a->kind, NK_ZGARRAY);
	t = aftd_text_of(&c, aftd_must(&c, a, ".zattrs"));
	ck_assert_ptr_nonnull(strstr(t, "\"a_dim_0\""));
	free(t);
	/* not by its file's name, nor a name of nothing */
	int rc;
	ck_assert_ptr_null(aftd_lookup(&c, g, "a.npy", &rc, NULL));
	ck_assert_int_eq(rc, -ENOENT);
	ck_assert_ptr_null(aftd_lookup(&c, g, "b", &rc, NULL));
	ck_assert_int_eq(rc, -ENOENT);
}
END_TEST

START_TEST(a_chunk_is_its_stores_chunk_with_an_inode_of_its_own)
{
	aftd_write_npy(dir, "a.npy", 10, 3);
	struct stat in_group, in_store;
	struct afd_node *a = aftd_must(&c, group(), "a");
	struct afd_node *ch = aftd_lookup(&c, a, "0", NULL, &in_group);
	ck_assert_ptr_nonnull(ch);
	struct afd_node *arr = aftd_must(&c, c.nodes.root, "a.npy");
	struct afd_node *store = aftd_must(&c, arr, "a.zarr");
	ck_assert_ptr_nonnull(aftd_lookup(&c, store, "0", NULL, &in_store));
	ck_assert_uint_eq(in_group.st_size, in_store.st_size);
	ck_assert_uint_ne(in_group.st_ino, in_store.st_ino);
	char *t = aftd_text_of(&c, ch);
	for (int i = 0; i < 10; i++)
		ck_assert_uint_eq((unsigned char)t[i], (unsigned char)(3 + i));
	free(t);
}
END_TEST

START_TEST(the_same_folder_as_group_and_sub_group_are_two_folders)
{
	/* aftd_path's buffer is aftd_write_npy's too */
	char *subdir = strdup(aftd_path(dir, "sub"));
	ck_assert_ptr_nonnull(subdir);
	ck_assert_int_eq(mkdir(subdir, 0755), 0);
	aftd_write_npy(subdir, "a.npy", 4, 0);
	free(subdir);
	struct afd_node *sub = aftd_must(&c, c.nodes.root, "sub");
	struct afd_node *own = aftd_must(&c, sub, AFD_ZARR_GROUP_NAME);
	struct afd_node *as_child = aftd_must(&c, group(), "sub");
	ck_assert_ptr_ne(own, as_child);
	ck_assert_uint_eq(as_child->sub, 1);
	ck_assert_ptr_ne(aftd_must(&c, own, "a"), aftd_must(&c, as_child, "a"));
}
END_TEST

START_TEST(a_source_entry_named_zarr_wins)
{
	ck_assert_int_eq(mkdir(aftd_path(dir, ".zarr"), 0755), 0);
	ck_assert_int_eq(group()->kind, NK_DIR);
}
END_TEST

START_TEST(colliding_keys_keep_their_full_names)
{
	aftd_write_npy(dir, "x.npy", 4, 0);
	aftd_write_lz4_ra(dir, "x.ra", 4);
	struct afd_node *g = group();
	int rc;
	ck_assert_ptr_null(aftd_lookup(&c, g, "x", &rc, NULL));
	struct afd_node *x = aftd_must(&c, g, "x.npy");
	ck_assert_uint_eq(x->sub & 1, 1);
	char *t = aftd_text_of(&c, aftd_must(&c, x, "zarr.json"));
	ck_assert_ptr_nonnull(strstr(t, "\"x.npy_dim_0\""));
	free(t);
	ck_assert_ptr_nonnull(aftd_must(&c, g, "x.ra"));
}
END_TEST

START_TEST(a_hostile_header_is_left_out_said_once)
{
	aftd_write_npy(dir, "a.npy", 4, 0);
	aftd_write(dir, "bad.npy", "\x93NUMPY\x01\x00\x04\x00{}}\n", 14);
	struct afd_node *g = group();
	int rc;
	ck_assert_ptr_null(aftd_lookup(&c, g, "bad", &rc, NULL));
	ck_assert_int_eq(rc, -ENOENT);
	clk.now_ms += AFD_STACK_UNWATCHED_MS;   /* a new model, the same line */
	ck_assert_ptr_null(aftd_lookup(&c, g, "bad", &rc, NULL));
	char *log = aftd_log_said(&c);
	const char *line = "bad.npy: not in its folder's .zarr group";
	char *at = strstr(log, line);
	ck_assert_ptr_nonnull(at);
	ck_assert_ptr_null(strstr(at + 1, line));
	free(log);
}
END_TEST

/* The children listed by lookup model @p f, "name:T" each (T: D for
 * DT_DIR, U for DT_UNKNOWN), joined by spaces, after the group's files. */
static char *listed(const struct afd_zarr_folder *f)
{
	static char out[256];
	char key[NAME_MAX + 1];
	const char *name;
	uint64_t ino;
	unsigned char dt;
	out[0] = '\0';
	for (uint64_t i = 3; afd_zarr_group_listed(f, 0, i, key, &name, &ino, &dt); i++)
		if (name)
			snprintf(out + strlen(out), sizeof(out) - strlen(out),
				 "%s%s:%c", out[0] ? " " : "", name,
				 dt == DT_DIR ? 'D' : dt == DT_UNKNOWN ? 'U' : '?');
	return out;
}

static void write_names_only_folder(void)
{
	aftd_write_npy(dir, "a.npy", 4, 0);
	aftd_write(dir, "bad.npy", "\x93NUMPY\x01\x00\x04\x00{}}\n", 14);
	/* contested: the model reads both, and x.ra keeps the key */
	aftd_write(dir, "x.npy", "\x93NUMPY\x01\x00\x04\x00{}}\n", 14);
	aftd_write_lz4_ra(dir, "x.ra", 4);
}

START_TEST(past_judged_max_a_header_is_read_at_its_lookup)
{
	c.zarr_groups.judged_max = 0;
	write_names_only_folder();
	struct afd_zarr_folder *f;
	ck_assert_int_eq(afd_zarr_folder_get(&c, ".", NULL, false, &f), 0);
	ck_assert_str_eq(listed(f), "a:U bad:U x:U");
	struct afd_node *g = group();
	int rc;
	for (int twice = 0; twice < 2; twice++) {
		ck_assert_ptr_null(aftd_lookup(&c, g, "bad", &rc, NULL));
		ck_assert_int_eq(rc, -ENOENT);
	}
	ck_assert_int_eq(aftd_must(&c, g, "a")->kind, NK_ZGARRAY);
	ck_assert_int_eq(aftd_must(&c, g, "x")->kind, NK_ZGARRAY);
	/* what the lookups learnt, the same model lists */
	ck_assert_str_eq(listed(f), "a:D x:D");
	afd_zarr_folder_put(f);
	char *log = aftd_log_said(&c);
	for (int i = 0; i < 2; i++) {
		const char *line = i ? "x.npy: not in its folder's .zarr group"
				     : "bad.npy: not in its folder's .zarr group";
		char *at = strstr(log, line);
		ck_assert_ptr_nonnull(at);
		ck_assert_ptr_null(strstr(at + 1, line));
	}
	free(log);
}
END_TEST

START_TEST(up_to_judged_max_every_header_is_read_at_the_build)
{
	write_names_only_folder();
	struct afd_zarr_folder *f;
	ck_assert_int_eq(afd_zarr_folder_get(&c, ".", NULL, false, &f), 0);
	ck_assert_str_eq(listed(f), "a:D x:D");
	/* none of the parses is kept by the model */
	ck_assert_ptr_null(f->srcs);
	afd_zarr_folder_put(f);
	char *log = aftd_log_said(&c);
	ck_assert_ptr_nonnull(strstr(log, "bad.npy: not in its folder's .zarr group"));
	free(log);
}
END_TEST

/* `.zmetadata`'s node: version = its document's digest. */
static struct afd_node *zmeta(void)
{
	return aftd_must(&c, group(), ".zmetadata");
}

/* What an open of node @p n returns (a handle it makes is closed). */
static int open_node(struct afd_node *n)
{
	struct afd_handle *h;
	bool keep;
	struct afd_failure why;
	int rc = afd_handle_open(&c, n, 0, &h, &keep, &why);
	if (rc == 0)
		afd_handle_close(h);
	return rc;
}

START_TEST(zmetadata_is_a_new_node_when_the_tree_changes)
{
	aftd_write_npy(dir, "a.npy", 4, 0);
	struct afd_node *m1 = zmeta();
	ck_assert_uint_ne(m1->version, 0);
	/* unchanged: the same node */
	ck_assert_ptr_eq(zmeta(), m1);
	aftd_write_npy(dir, "b.npy", 4, 0);
	/* told by the notifier: a new model and document at once */
	afd_zarr_group_changed(&c);
	struct afd_node *m2 = zmeta();
	ck_assert_ptr_ne(m2, m1);
	ck_assert_uint_ne(m2->version, m1->version);
	char *t = aftd_text_of(&c, m2);
	ck_assert_ptr_nonnull(strstr(t, "\"b/.zarray\""));
	/* the old node keeps its own size, not the new document's */
	struct afd_id id = afd_id_of(m1);
	struct afd_res r;
	struct stat st;
	ck_assert_int_eq(afd_resolve(&c, &id, NULL, &r), 0);
	afd_attr(&c, &id, &r, &st);
	afd_res_release(&r);
	ck_assert_uint_eq((uint64_t)st.st_size, m1->sub);
	ck_assert_uint_lt(m1->sub, m2->sub);
	ck_assert_uint_eq(strlen(t), m2->sub);
	free(t);
	/* the old node's document is gone: its open says so, no mix */
	ck_assert_int_eq(open_node(m1), -ESTALE);
}
END_TEST

/* `cat .zmetadata`: the open reads the document its lookup sized, so the
 * tree is walked once; only while that document is as fresh as a model. */
START_TEST(zmetadata_open_reads_the_document_its_lookup_sized)
{
	aftd_write_npy(dir, "a.npy", 4, 0);
	struct afd_node *m1 = zmeta();
	/* an untold change right after the lookup: a second walk would see
	 * it and find the node stale; the kept document is the node's */
	aftd_write_npy(dir, "c.npy", 4, 0);
	char *t = aftd_text_of(&c, m1);
	ck_assert_ptr_nonnull(strstr(t, "\"a/.zarray\""));
	ck_assert_ptr_null(strstr(t, "\"c/.zarray\""));
	ck_assert_uint_eq(strlen(t), m1->sub);
	free(t);
	/* taken: the next open walks, sees c.npy, and says the node is stale */
	ck_assert_int_eq(open_node(m1), -ESTALE);
	/* a change told between lookup and open: the kept one is refused */
	clk.now_ms += AFD_STACK_UNWATCHED_MS;
	struct afd_node *m2 = zmeta();
	ck_assert_ptr_ne(m2, m1);
	aftd_write_npy(dir, "d.npy", 4, 0);
	afd_zarr_group_changed(&c);
	ck_assert_int_eq(open_node(m2), -ESTALE);
	/* one left past its lifetime is not read either */
	struct afd_node *m3 = zmeta();
	aftd_write_npy(dir, "e.npy", 4, 0);
	clk.now_ms += AFD_STACK_UNWATCHED_MS;
	ck_assert_int_eq(open_node(m3), -ESTALE);
	/* shed drops it (ops.c after_forget) */
	clk.now_ms += AFD_STACK_UNWATCHED_MS;
	struct afd_node *m4 = zmeta();
	ck_assert_ptr_nonnull(c.zarr_groups.doc);
	afd_zarr_groups_shed(&c.zarr_groups);
	ck_assert_ptr_null(c.zarr_groups.doc);
	t = aftd_text_of(&c, m4);
	ck_assert_ptr_nonnull(strstr(t, "\"e/.zarray\""));
	free(t);
}
END_TEST

START_TEST(an_untold_change_shows_after_the_models_lifetime)
{
	aftd_write_npy(dir, "a.npy", 4, 0);
	struct afd_node *g = group();
	int rc;
	ck_assert_ptr_null(aftd_lookup(&c, g, "b", &rc, NULL));
	aftd_write_npy(dir, "b.npy", 4, 0);
	clk.now_ms += AFD_STACK_UNWATCHED_MS - 1;
	ck_assert_ptr_null(aftd_lookup(&c, g, "b", &rc, NULL));
	clk.now_ms += 1;
	ck_assert_ptr_nonnull(aftd_must(&c, g, "b"));
}
END_TEST

START_TEST(a_newer_model_of_a_folder_takes_its_older_ones_slot)
{
	aftd_write_npy(dir, "a.npy", 4, 0);
	struct afd_zarr_folder *f;
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(afd_zarr_folder_get(&c, ".", NULL, false, &f), 0);
		afd_zarr_folder_put(f);
		clk.now_ms += AFD_STACK_UNWATCHED_MS;   /* stale: built again */
	}
	unsigned kept = 0;
	for (unsigned i = 0; i < AFD_ZARR_GROUP_CACHED; i++)
		kept += c.zarr_groups.slot[i] != NULL;
	ck_assert_uint_eq(kept, 1);
}
END_TEST

START_TEST(shed_models_are_built_again_and_one_held_stays_usable)
{
	aftd_write_npy(dir, "a.npy", 4, 0);
	struct afd_zarr_folder *held = NULL;
	ck_assert_int_eq(afd_zarr_folder_get(&c, ".", NULL, false, &held), 0);
	ck_assert_uint_eq(held->n, 1);
	afd_zarr_groups_shed(&c.zarr_groups);
	for (unsigned i = 0; i < AFD_ZARR_GROUP_CACHED; i++)
		ck_assert_ptr_null(c.zarr_groups.slot[i]);
	ck_assert_str_eq(held->e[0].name, "a.npy");   /* still the caller's */
	struct afd_zarr_folder *again = NULL;
	ck_assert_int_eq(afd_zarr_folder_get(&c, ".", NULL, false, &again), 0);
	ck_assert_ptr_ne(again, held);
	ck_assert_uint_eq(again->n, 1);
	afd_zarr_folder_put(again);
	afd_zarr_folder_put(held);
}
END_TEST

START_TEST(an_npz_folder_is_a_group)
{
	/* members a.npy .. e.npy */
	aftd_copy(aft_fixture("zip/descriptor_stored.npz"), dir, "r.npz");
	struct afd_node *npz = aftd_must(&c, c.nodes.root, "r.npz");
	struct afd_node *g = aftd_must(&c, npz, AFD_ZARR_GROUP_NAME);
	ck_assert_int_eq(g->kind, NK_ZGROUP);
	ck_assert_str_eq(g->member, "");
	struct afd_node *a = aftd_must(&c, g, "a");
	ck_assert_int_eq(a->kind, NK_ZGARRAY);
	ck_assert_str_eq(a->member, "a.npy");
	/* the same npz as a sub-group of the root's group */
	struct afd_node *r = aftd_must(&c, group(), "r");
	ck_assert_int_eq(r->kind, NK_ZGROUP);
	ck_assert_str_eq(r->path, "r.npz");
	ck_assert_ptr_nonnull(aftd_must(&c, r, "e"));
	int rc;
	ck_assert_ptr_null(aftd_lookup(&c, r, "a.npy", &rc, NULL));
	ck_assert_int_eq(rc, -ENOENT);
}
END_TEST

/* More entries than a model's first allocation, sub-folders among them
 * (their places moved as the entries grew: ASan would see a stale one). */
START_TEST(zmetadata_walks_a_folder_of_many_entries_and_sub_folders)
{
	char name[32];
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "s%02d", i);
		char *sub = strdup(aftd_path(dir, name));
		ck_assert_ptr_nonnull(sub);
		ck_assert_int_eq(mkdir(sub, 0755), 0);
		aftd_write_npy(sub, "a.npy", 2, 0);
		free(sub);
		snprintf(name, sizeof(name), "x%02d.npy", i);
		aftd_write_npy(dir, name, 2, 0);
	}
	char *t = aftd_text_of(&c, zmeta());
	ck_assert_ptr_nonnull(strstr(t, "\"s39/a/.zarray\""));
	ck_assert_ptr_nonnull(strstr(t, "\"x39/.zarray\""));
	free(t);
}
END_TEST

/* NFS handles: a forgotten `.zarr/` node comes back by its id, or is
 * ESTALE once what it served changed; never other bytes. */
START_TEST(forgotten_group_nodes_come_back_or_are_stale)
{
	aftd_write_npy(dir, "a.npy", 10, 7);
	struct afd_node *g = group();
	struct afd_node *a = aftd_must(&c, g, "a");
	struct afd_node *ch = aftd_must(&c, a, "0");
	struct afd_node *m = zmeta();
	uint64_t ch_id = ch->nodeid, a_id = a->nodeid, m_id = m->nodeid;
	uint64_t m_len = m->sub;
	ck_assert_int_eq(aftd_forget(&c, ch, 1), 1);
	ck_assert_int_eq(aftd_forget(&c, a, 1), 1);
	ck_assert_int_eq(aftd_forget(&c, m, 1), 1);
	struct afd_node *n;
	struct stat st;
	ck_assert_int_eq(afd_export_lookup(&c, ch_id, false, &n, &st), 0);
	ck_assert_int_eq(n->kind, NK_ZGAFILE);
	ck_assert_int_eq(st.st_size, 10);
	char *t = aftd_text_of(&c, n);
	ck_assert_uint_eq((unsigned char)t[0], 7);
	free(t);
	struct afd_node *up;
	ck_assert_int_eq(afd_export_lookup(&c, ch_id, true, &up, &st), 0);
	ck_assert_uint_eq(up->nodeid, a_id);
	ck_assert_int_eq(afd_export_lookup(&c, m_id, false, &n, &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_size, m_len);
	ck_assert_int_eq(aftd_forget(&c, n, 1), 1);
	/* the tree changes: the old document's id is stale */
	aftd_write_npy(dir, "b.npy", 10, 0);
	afd_zarr_group_changed(&c);
	ck_assert_int_eq(afd_export_lookup(&c, m_id, false, &n, &st), -ESTALE);
}
END_TEST

static Suite *zarr_group_suite(void)
{
	Suite *s = suite_create("daemon_zarr_group");
	TCase *tc = tcase_create("lookup");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, the_group_is_found_by_name_and_holds_its_files);
	tcase_add_test(tc, a_chunk_is_its_stores_chunk_with_an_inode_of_its_own);
	tcase_add_test(tc, the_same_folder_as_group_and_sub_group_are_two_folders);
	tcase_add_test(tc, a_source_entry_named_zarr_wins);
	tcase_add_test(tc, colliding_keys_keep_their_full_names);
	tcase_add_test(tc, a_hostile_header_is_left_out_said_once);
	tcase_add_test(tc, past_judged_max_a_header_is_read_at_its_lookup);
	tcase_add_test(tc, up_to_judged_max_every_header_is_read_at_the_build);
	tcase_add_test(tc, an_npz_folder_is_a_group);
	suite_add_tcase(s, tc);

	tc = tcase_create("versions");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, zmetadata_is_a_new_node_when_the_tree_changes);
	tcase_add_test(tc, zmetadata_open_reads_the_document_its_lookup_sized);
	tcase_add_test(tc, an_untold_change_shows_after_the_models_lifetime);
	tcase_add_test(tc, a_newer_model_of_a_folder_takes_its_older_ones_slot);
	tcase_add_test(tc, shed_models_are_built_again_and_one_held_stays_usable);
	tcase_add_test(tc, zmetadata_walks_a_folder_of_many_entries_and_sub_folders);
	tcase_add_test(tc, forgotten_group_nodes_come_back_or_are_stale);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return aft_run(zarr_group_suite());
}
