/* SPDX-License-Identifier: MIT */
/* Tests for src/daemon/nodes.c: identities, lookup counts, versions, ids. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon_test.h"

#define ROOT_ID 1u  /* FUSE_ROOT_ID */

static struct afd_nodes t;

static void setup(void)
{
	ck_assert_int_eq(afd_nodes_init(&t, NK_DIR, ".", NULL), 0);
}

static void teardown(void)
{
	afd_nodes_destroy(&t);
}

static struct afd_node *get(enum afd_nkind k, enum afd_entry e,
			    const char *path, const char *member,
			    uint64_t version, int *created)
{
	int dummy;
	struct stat st = { .st_dev = 1, .st_ino = 2 };
	struct afd_node *n = afd_nodes_get(&t, k, e, path, member, version,
					   ROOT_ID, path, &st,
					   created ? created : &dummy);
	ck_assert_ptr_nonnull(n);
	return n;
}

START_TEST(root_is_fuse_root_id)
{
	ck_assert_uint_eq(afd_nodes_id(&t, t.root), ROOT_ID);
	ck_assert_ptr_eq(afd_nodes_from_id(&t, ROOT_ID), t.root);
	ck_assert_uint_eq(t.count, 1);
}
END_TEST

START_TEST(same_identity_is_the_same_node_and_counts_lookups)
{
	int created;
	struct afd_node *a = get(NK_FILE, AE_NONE, "a.txt", NULL, 7, &created);
	ck_assert_int_eq(created, 1);
	ck_assert_uint_eq(a->nlookup, 1);
	uint64_t id = afd_nodes_id(&t, a);
	ck_assert_uint_ne(id, ROOT_ID);
	struct afd_node *again = get(NK_FILE, AE_NONE, "a.txt", NULL, 7, &created);
	ck_assert_ptr_eq(again, a);
	ck_assert_int_eq(created, 0);
	ck_assert_uint_eq(a->nlookup, 2);
	ck_assert_uint_eq(afd_nodes_id(&t, again), id);
	ck_assert_ptr_eq(afd_nodes_from_id(&t, id), a);
	ck_assert_uint_eq(t.count, 2);
}
END_TEST

START_TEST(version_is_identity_but_not_inode_number)
{
	struct afd_node *v1 = get(NK_ENTRY, AE_DATA, "a.npy", NULL, 11, NULL);
	struct afd_node *v2 = get(NK_ENTRY, AE_DATA, "a.npy", NULL, 12, NULL);
	ck_assert_ptr_ne(v1, v2);
	ck_assert_uint_eq(afd_node_ino(v1), afd_node_ino(v2));
	ck_assert_uint_eq(afd_node_ino(v1), afd_ino_of("a.npy", NULL, AE_DATA));
	/* the old version keeps its node and id while the kernel holds it */
	ck_assert_ptr_eq(get(NK_ENTRY, AE_DATA, "a.npy", NULL, 11, NULL), v1);
	ck_assert_uint_eq(v1->nlookup, 2);
	ck_assert_uint_eq(v2->nlookup, 1);
}
END_TEST

START_TEST(kind_is_identity_but_not_inode_number)
{
	/* a plain file that becomes an array folder: a new node, same st_ino */
	struct afd_node *f = get(NK_FILE, AE_NONE, "x.npy", NULL, 0, NULL);
	struct afd_node *d = get(NK_ARRAY, AE_NONE, "x.npy", NULL, 0, NULL);
	ck_assert_ptr_ne(f, d);
	ck_assert_uint_eq(afd_node_ino(f), afd_node_ino(d));
}
END_TEST

START_TEST(inode_numbers_follow_path_member_and_entry)
{
	uint64_t a = afd_ino_of("a.npz", "k.npy", AE_DATA);
	ck_assert_uint_eq(a, afd_ino_of("a.npz", "k.npy", AE_DATA));
	ck_assert_uint_ne(a, afd_ino_of("a.npz", "k.npy", AE_SHAPE));
	ck_assert_uint_ne(a, afd_ino_of("a.npz", "j.npy", AE_DATA));
	ck_assert_uint_ne(a, afd_ino_of("b.npz", "k.npy", AE_DATA));
	/* an npz root has its file's number: its folder's listing gives that
	 * (and an NFS server matches the two to reconnect a handle) */
	ck_assert_uint_eq(afd_ino_of("a.npz", "", AE_NONE),
			  afd_ino_of("a.npz", NULL, AE_NONE));
	char path[32];
	for (int i = 0; i < 1000; i++) {
		snprintf(path, sizeof(path), "f%d", i);
		ck_assert_uint_gt(afd_ino_of(path, NULL, AE_NONE), ROOT_ID);
	}
}
END_TEST

START_TEST(forget_counts_down_and_unlinks_at_zero)
{
	struct afd_node *a = get(NK_FILE, AE_NONE, "a.txt", NULL, 1, NULL);
	get(NK_FILE, AE_NONE, "a.txt", NULL, 1, NULL);
	get(NK_FILE, AE_NONE, "a.txt", NULL, 1, NULL);
	ck_assert_ptr_null(afd_nodes_forget(&t, a, 2));
	ck_assert_uint_eq(a->nlookup, 1);
	ck_assert_ptr_eq(afd_nodes_forget(&t, a, 1), a);
	ck_assert_uint_eq(t.count, 1);
	afd_node_free(a);
	/* gone from the table: the next lookup makes a new node */
	int created;
	struct afd_node *b = get(NK_FILE, AE_NONE, "a.txt", NULL, 1, &created);
	ck_assert_int_eq(created, 1);
	ck_assert_uint_eq(b->nlookup, 1);
}
END_TEST

START_TEST(forget_of_more_than_counted_or_of_nothing_is_harmless)
{
	struct afd_node *a = get(NK_FILE, AE_NONE, "a.txt", NULL, 1, NULL);
	ck_assert_ptr_null(afd_nodes_forget(&t, a, 0));
	ck_assert_uint_eq(a->nlookup, 1);
	ck_assert_ptr_eq(afd_nodes_forget(&t, a, 1000), a);
	ck_assert_uint_eq(t.count, 1);
	afd_node_free(a);
	/* the root is never unlinked, however often it is forgotten */
	ck_assert_ptr_null(afd_nodes_forget(&t, t.root, 1));
	ck_assert_ptr_null(afd_nodes_forget(&t, t.root, 1000));
	ck_assert_ptr_eq(afd_nodes_from_id(&t, ROOT_ID), t.root);
	ck_assert_uint_eq(t.count, 1);
}
END_TEST

START_TEST(a_listed_array_folder_is_found_by_its_path_while_it_lives)
{
	struct afd_arrsum sum, got;
	memset(&sum, 0, sizeof(sum));
	sum.key = afd_ident_key("d/a.npy", &sum.id);
	sum.size[AE_DATA] = 784;
	/* nothing remembered: no node, then a node with no summary */
	ck_assert(!afd_nodes_sum_of_path(&t, "d/a.npy", &got));
	struct afd_node *a = get(NK_ARRAY, AE_NONE, "d/a.npy", NULL, 0, NULL);
	ck_assert(!afd_nodes_sum_of_path(&t, "d/a.npy", &got));
	ck_assert_int_eq(afd_nodes_sum_set(&t, a, &sum), 0);
	ck_assert(afd_nodes_sum_of_path(&t, "d/a.npy", &got));
	ck_assert_uint_eq(got.key, sum.key);
	ck_assert_uint_eq(got.size[AE_DATA], 784);
	/* only the array folder of that source file: not another path, nor
	 * an npz member's folder of the same path (which has no room: its
	 * lookups go through the archive's parse) */
	ck_assert(!afd_nodes_sum_of_path(&t, "d/b.npy", &got));
	struct afd_node *m = get(NK_ARRAY, AE_NONE, "d/z.npz", "k", 0, NULL);
	ck_assert_int_lt(afd_nodes_sum_set(&t, m, &sum), 0);
	ck_assert(!afd_nodes_sum_get(&t, m, &got));
	ck_assert(!afd_nodes_sum_of_path(&t, "d/z.npz", &got));
	/* forgotten: nothing is found, and a new node remembers nothing */
	ck_assert_ptr_eq(afd_nodes_forget(&t, a, 1), a);
	afd_node_free(a);
	ck_assert(!afd_nodes_sum_of_path(&t, "d/a.npy", &got));
	get(NK_ARRAY, AE_NONE, "d/a.npy", NULL, 0, NULL);
	ck_assert(!afd_nodes_sum_of_path(&t, "d/a.npy", &got));
}
END_TEST

/* A summary as a parse of a 4x4 uint8 .npy makes it (afd_arrsum_of). */
static void npy_sum(struct afd_arrsum *sum, const char *path)
{
	memset(sum, 0, sizeof(*sum));
	sum->id.dev = 0x803;
	sum->id.ino = 0x123456789abcULL;
	sum->id.size = 144;
	sum->id.mtim = (struct timespec){ 1764400000, 999999999 };
	sum->id.ctim = (struct timespec){ (1LL << 34) - 1, 7 };
	sum->key = afd_ident_key(path, &sum->id);
	uint64_t sizes[AE_COUNT] = { [AE_DATA] = 16, [AE_SHAPE] = 5,
		[AE_DTYPE] = 4, [AE_HEADER] = 61, [AE_NPY] = 144,
		[AE_RA] = 64 };
	for (int e = 0; e < AE_COUNT; e++) {
		sum->size[e] = sizes[e];
		if (sizes[e])
			sum->has |= 1u << e;
	}
	sum->data_plain = true;
	sum->data_src_off = 128;
}

START_TEST(a_summary_is_kept_exactly_or_not_at_all)
{
	struct afd_arrsum sum, got;
	struct afd_node *a = get(NK_ARRAY, AE_NONE, "d/a.npy", NULL, 0, NULL);
	npy_sum(&sum, "d/a.npy");
	ck_assert_int_eq(afd_nodes_sum_set(&t, a, &sum), 0);
	ck_assert(afd_nodes_sum_get(&t, a, &got));
	ck_assert_mem_eq(&got, &sum, sizeof(sum));
	/* B.npy absent (size 0) and a data of more than 4 GiB still fit */
	sum.size[AE_NPY] = 0;
	sum.has &= ~(1u << AE_NPY);
	sum.size[AE_DATA] = 5ULL << 32;
	sum.size[AE_RA] = sum.size[AE_DATA] + 64;
	ck_assert_int_eq(afd_nodes_sum_set(&t, a, &sum), 0);
	ck_assert(afd_nodes_sum_get(&t, a, &got));
	ck_assert_mem_eq(&got, &sum, sizeof(sum));
	/* what does not fit is not remembered, nor is the older version:
	 * the lookups parse (a device past 32 bits, a long header text, a
	 * key that is not the path's, a header of 64 KiB, data 4 GiB into
	 * the file, a time before 1970, one after 2514) */
	struct afd_arrsum bad[7];
	for (int i = 0; i < 7; i++)
		npy_sum(&bad[i], "d/a.npy");
	bad[0].id.dev = 1ULL << 40;
	bad[1].size[AE_HEADER] = 70000;
	bad[2].key ^= 1;
	bad[3].size[AE_NPY] = bad[3].size[AE_DATA] + 65535;
	bad[4].data_src_off = 4ULL << 30;
	bad[5].id.mtim.tv_sec = -1;
	bad[6].id.ctim.tv_sec = 1LL << 34;
	for (int i = 0; i < 7; i++) {
		if (i != 2)
			bad[i].key = afd_ident_key("d/a.npy", &bad[i].id);
		ck_assert_int_eq(afd_nodes_sum_set(&t, a, &sum), 0);
		ck_assert_int_lt(afd_nodes_sum_set(&t, a, &bad[i]), 0);
		ck_assert_msg(!afd_nodes_sum_get(&t, a, &got), "case %d", i);
		ck_assert(!afd_nodes_sum_of_path(&t, "d/a.npy", &got));
	}
}
END_TEST

START_TEST(only_serving_nodes_have_serving_state)
{
	struct afd_node *f = get(NK_FILE, AE_NONE, "a.txt", NULL, 1, NULL);
	struct afd_node *e = get(NK_ENTRY, AE_DATA, "a.npy", NULL, 2, NULL);
	struct afd_node *d = get(NK_DIR, AE_NONE, "sub", NULL, 0, NULL);
	struct afd_node *a = get(NK_ARRAY, AE_NONE, "a.npy", NULL, 0, NULL);
	ck_assert_ptr_nonnull(afd_node_io(f));
	ck_assert_ptr_nonnull(afd_node_io(e));
	ck_assert_ptr_null(afd_node_io(d));
	ck_assert_ptr_null(afd_node_io(a));
	uint64_t off, len;
	ck_assert(!afd_nodes_range_get(e, &off, &len));
	afd_nodes_range_set(e, 128, 16);
	afd_nodes_range_set(a, 1, 2);   /* no room: nothing */
	ck_assert(afd_nodes_range_get(e, &off, &len));
	ck_assert_uint_eq(off, 128);
	ck_assert_uint_eq(len, 16);
	ck_assert(!afd_nodes_range_get(a, &off, &len));
	ck_assert_str_eq(e->path, "a.npy");
	ck_assert_str_eq(afd_node_name(e), "a.npy");
	/* a name that is not the path's last component is kept after it */
	int created;
	struct stat st = { .st_dev = 1, .st_ino = 2 };
	struct afd_node *b = afd_nodes_get(&t, NK_ENTRY, AE_NPY, "d/a.npy",
					   "k.npy", 2, ROOT_ID, "B.npy", &st,
					   &created);
	ck_assert_ptr_nonnull(b);
	ck_assert_str_eq(afd_node_name(b), "B.npy");
	ck_assert_str_eq(b->member, "k.npy");
	struct afd_node *l = afd_nodes_get(&t, NK_DIR, AE_NONE, "d/sub",
					   NULL, 0, ROOT_ID, "sub", &st,
					   &created);
	ck_assert_str_eq(afd_node_name(l), "sub");
	ck_assert_str_eq(afd_node_name(t.root), "");
}
END_TEST

/* Node @p n of "d/f<i>.npy" (entry data, version i) is found again by its
 * identity (one more lookup counted) and by its id. */
static void assert_found_again(struct afd_node *n, int i)
{
	char path[32];
	snprintf(path, sizeof(path), "d/f%d.npy", i);
	int created;
	ck_assert_ptr_eq(get(NK_ENTRY, AE_DATA, path, NULL, (uint64_t)i,
			     &created), n);
	ck_assert_int_eq(created, 0);
	ck_assert_ptr_eq(afd_nodes_from_id(&t, afd_nodes_id(&t, n)), n);
}

START_TEST(many_nodes_grow_the_table_and_keep_their_ids)
{
	enum { N = 5000 };
	static struct afd_node *made[N];
	char path[32];
	for (int i = 0; i < N; i++) {
		snprintf(path, sizeof(path), "d/f%d.npy", i);
		made[i] = get(NK_ENTRY, AE_DATA, path, NULL, (uint64_t)i, NULL);
	}
	ck_assert_uint_eq(t.count, N + 1);
	ck_assert_uint_gt(t.nbuckets, 1024);
	for (int i = 0; i < N; i++)
		assert_found_again(made[i], i);
	/* forgetting most of them shrinks the table again; the rest are
	 * still found, by identity and by id */
	size_t grown = t.nbuckets;
	for (int i = 0; i < N - 10; i++) {
		ck_assert_ptr_eq(afd_nodes_forget(&t, made[i], 2), made[i]);
		afd_node_free(made[i]);
	}
	ck_assert_uint_lt(t.nbuckets, grown);
	ck_assert_uint_ge(t.nbuckets, 1024);
	for (int i = N - 10; i < N; i++) {
		assert_found_again(made[i], i);
		ck_assert_ptr_eq(afd_nodes_forget(&t, made[i], 3), made[i]);
		afd_node_free(made[i]);
	}
	ck_assert_uint_eq(t.count, 1);
	ck_assert_uint_eq(t.nbuckets, 1024);
}
END_TEST

START_TEST(a_trim_is_due_once_each_time_enough_nodes_are_freed)
{
	char path[32];
	ck_assert(!afd_nodes_trim_due(&t));
	/* a table holding more than is freed: only the count makes it due */
	for (unsigned i = 0; i < AFD_NODES_TRIM_AFTER; i++) {
		snprintf(path, sizeof(path), "kept%u", i);
		ck_assert_ptr_nonnull(get(NK_FILE, AE_NONE, path, NULL, 0, NULL));
	}
	for (unsigned i = 0; i < 2 * AFD_NODES_TRIM_AFTER + 5; i++) {
		snprintf(path, sizeof(path), "f%u", i);
		struct afd_node *n = get(NK_FILE, AE_NONE, path, NULL, 0, NULL);
		/* a forget that frees nothing counts nothing */
		ck_assert_ptr_null(afd_nodes_forget(&t, get(NK_FILE, AE_NONE, path,
							    NULL, 0, NULL), 1));
		ck_assert_ptr_eq(afd_nodes_forget(&t, n, 1), n);
		afd_node_free(n);
		bool due = afd_nodes_trim_due(&t);
		ck_assert_int_eq(due, (i + 1) % AFD_NODES_TRIM_AFTER == 0);
	}
}
END_TEST

START_TEST(a_trim_is_due_when_most_of_the_table_was_freed)
{
	/* the end of a big forget: 3,000 nodes freed one by one; due once
	 * more were freed than are left (1,501), then again after
	 * AFD_NODES_TRIM_MIN more (the table is smaller than that by then),
	 * and at the last, which leaves only the root */
	enum { N = 3000 };
	static struct afd_node *made[N];
	char path[32];
	for (unsigned i = 0; i < N; i++) {
		snprintf(path, sizeof(path), "f%u", i);
		made[i] = get(NK_FILE, AE_NONE, path, NULL, 0, NULL);
	}
	unsigned dues[3], ndue = 0;
	for (unsigned i = 0; i < N; i++) {
		ck_assert_ptr_eq(afd_nodes_forget(&t, made[i], 1), made[i]);
		afd_node_free(made[i]);
		if (afd_nodes_trim_due(&t)) {
			ck_assert_uint_lt(ndue, 3);
			dues[ndue++] = i + 1;
		}
	}
	ck_assert_uint_eq(ndue, 3);
	ck_assert_uint_eq(dues[0], 1501);
	ck_assert_uint_eq(dues[1], 1501 + AFD_NODES_TRIM_MIN);
	ck_assert_uint_eq(dues[2], N);
}
END_TEST

static void free_inval(struct afd_inval *v, long n)
{
	for (long i = 0; i < n; i++)
		free(v[i].name);
	free(v);
}

START_TEST(collect_finds_every_node_of_a_source_and_its_folder_entry)
{
	int created;
	struct stat st = { .st_dev = 1, .st_ino = 3 };
	struct afd_node *sub = afd_nodes_get(&t, NK_DIR, AE_NONE, "sub", NULL, 0,
					     ROOT_ID, "sub", &st, &created);
	uint64_t sub_id = afd_nodes_id(&t, sub);
	struct afd_node *arr = afd_nodes_get(&t, NK_ARRAY, AE_NONE, "sub/a.npy",
					     NULL, 0, sub_id, "a.npy", &st,
					     &created);
	struct afd_node *data = afd_nodes_get(&t, NK_ENTRY, AE_DATA, "sub/a.npy",
					      NULL, 5, afd_nodes_id(&t, arr),
					      "data", &st, &created);
	get(NK_FILE, AE_NONE, "sub/other", NULL, 1, NULL);
	struct afd_inval *v = NULL;
	long n = afd_nodes_collect(&t, "sub/a.npy", &v);
	ck_assert_int_eq(n, 3);
	int seen_arr = 0, seen_data = 0, seen_entry = 0;
	for (long i = 0; i < n; i++) {
		if (v[i].nodeid == afd_nodes_id(&t, arr)) {
			seen_arr++;
			ck_assert_uint_eq(v[i].parent, sub_id);
			ck_assert_str_eq(v[i].name, "a.npy");
		} else if (v[i].nodeid == afd_nodes_id(&t, data)) {
			seen_data++;
		} else {
			/* the folder: its entry "a.npy" and its own attributes */
			ck_assert_uint_eq(v[i].nodeid, sub_id);
			ck_assert_uint_eq(v[i].parent, sub_id);
			ck_assert_str_eq(v[i].name, "a.npy");
			seen_entry++;
		}
	}
	ck_assert_int_eq(seen_arr + seen_data + seen_entry, 3);
	ck_assert_int_eq(seen_arr * seen_data * seen_entry, 1);
	free_inval(v, n);
	n = afd_nodes_collect(&t, NULL, &v);
	ck_assert_int_eq(n, (long)t.count);
	free_inval(v, n);
}
END_TEST

/* Lookups over a real folder: a changed source gives its nodes anew. */
START_TEST(a_changed_source_gives_new_nodes_with_the_same_inode_numbers)
{
	char *dir = aftd_tmp_new();
	aftd_write_npy(dir, "a.npy", 10, 0);
	aftd_write(dir, "t.txt", "old\n", 4);
	struct afd_ctx c;
	aftd_ctx_open(&c, dir, NULL);
	struct afd_node *root = c.nodes.root;
	struct afd_node *arr = aftd_must(&c, root, "a.npy");
	ck_assert_int_eq(arr->kind, NK_ARRAY);
	ck_assert_uint_eq(arr->version, 0);
	struct afd_node *d1 = aftd_must(&c, arr, "data");
	struct afd_node *t1 = aftd_must(&c, root, "t.txt");
	ck_assert_int_eq(t1->kind, NK_FILE);
	ck_assert_uint_ne(d1->version, 0);
	ck_assert_uint_ne(t1->version, 0);
	/* unchanged: the same nodes, counted again */
	ck_assert_ptr_eq(aftd_must(&c, arr, "data"), d1);
	ck_assert_uint_eq(d1->nlookup, 2);

	aftd_write_npy(dir, "a.npy", 20, 1);
	aftd_write(dir, "t.txt", "newer\n", 6);
	/* a folder has no version: the array folder is the same node */
	ck_assert_ptr_eq(aftd_must(&c, root, "a.npy"), arr);
	struct stat st;
	int rc;
	struct afd_node *d2 = aftd_lookup(&c, arr, "data", &rc, &st);
	struct afd_node *t2 = aftd_must(&c, root, "t.txt");
	ck_assert_ptr_ne(d2, d1);
	ck_assert_ptr_ne(t2, t1);
	ck_assert_uint_ne(d2->version, d1->version);
	ck_assert_uint_eq(afd_node_ino(d2), afd_node_ino(d1));
	ck_assert_uint_eq(afd_node_ino(t2), afd_node_ino(t1));
	ck_assert_uint_eq(st.st_ino, afd_node_ino(d1));
	ck_assert_int_eq(st.st_size, 20);
	/* the old nodes keep their ids until the kernel forgets them */
	ck_assert_ptr_eq(afd_nodes_from_id(&c.nodes, afd_nodes_id(&c.nodes, d1)), d1);
	ck_assert_uint_eq(d1->nlookup, 2);
	ck_assert_int_eq(aftd_forget(&c, d1, 2), 1);
	ck_assert_int_eq(aftd_forget(&c, t1, 1), 1);
	ck_assert_ptr_eq(aftd_must(&c, arr, "data"), d2);
	afd_ctx_destroy(&c);
	aftd_tmp_free(dir);
}
END_TEST

static Suite *nodes_suite(void)
{
	Suite *s = suite_create("daemon_nodes");
	TCase *tc = tcase_create("table");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, root_is_fuse_root_id);
	tcase_add_test(tc, same_identity_is_the_same_node_and_counts_lookups);
	tcase_add_test(tc, version_is_identity_but_not_inode_number);
	tcase_add_test(tc, kind_is_identity_but_not_inode_number);
	tcase_add_test(tc, inode_numbers_follow_path_member_and_entry);
	tcase_add_test(tc, forget_counts_down_and_unlinks_at_zero);
	tcase_add_test(tc, forget_of_more_than_counted_or_of_nothing_is_harmless);
	tcase_add_test(tc, a_listed_array_folder_is_found_by_its_path_while_it_lives);
	tcase_add_test(tc, a_summary_is_kept_exactly_or_not_at_all);
	tcase_add_test(tc, only_serving_nodes_have_serving_state);
	tcase_add_test(tc, many_nodes_grow_the_table_and_keep_their_ids);
	tcase_add_test(tc, a_trim_is_due_once_each_time_enough_nodes_are_freed);
	tcase_add_test(tc, a_trim_is_due_when_most_of_the_table_was_freed);
	tcase_add_test(tc, collect_finds_every_node_of_a_source_and_its_folder_entry);
	suite_add_tcase(s, tc);
	TCase *src = tcase_create("sources");
	tcase_add_test(src, a_changed_source_gives_new_nodes_with_the_same_inode_numbers);
	suite_add_tcase(s, src);
	return s;
}

int main(void)
{
	return aft_run(nodes_suite());
}
