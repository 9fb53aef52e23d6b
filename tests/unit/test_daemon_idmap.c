/* SPDX-License-Identifier: MIT */
/* Tests for src/daemon/idmap.c and idmap_file.c: ids issued and kept,
 * the bound, and the map file (round trip, and hostile files refused). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "daemon_test.h"
#include "idmap.h"

#define KEY 0x1234abcdULL

static struct afd_idrec rec(const char *path, const char *member,
			    uint8_t kind, uint64_t version, uint64_t ino,
			    uint64_t parent)
{
	const char *slash = strrchr(path, '/');
	return (struct afd_idrec){ .kind = kind, .entry = AE_NONE,
				   .version = version, .parent = parent,
				   .dev = 7, .ino = ino, .path = path,
				   .member = member,
				   .name = slash ? slash + 1 : path };
}

static uint64_t issue(struct afd_idmap *m, struct afd_idrec r, uint32_t *gen)
{
	uint64_t id;
	uint32_t g;
	ck_assert_int_eq(afd_idmap_issue(m, &r, &id, &g), 0);
	if (gen)
		*gen = g;
	return id;
}

START_TEST(ids_count_up_and_an_identity_keeps_its_id)
{
	struct afd_idmap m;
	ck_assert_int_eq(afd_idmap_init(&m, 0, 99), 0);
	uint32_t g;
	uint64_t a = issue(&m, rec("a", NULL, NK_FILE, 5, 10, 1), &g);
	ck_assert_uint_eq(a, 2);   /* 1 is the root's */
	ck_assert_uint_eq(g, 99);
	uint64_t b = issue(&m, rec("b", NULL, NK_FILE, 5, 11, 1), NULL);
	ck_assert_uint_eq(b, 3);
	ck_assert_uint_eq(issue(&m, rec("a", NULL, NK_FILE, 5, 10, 1), NULL), a);
	/* a new version, another member, another kind: new ids */
	ck_assert_uint_eq(issue(&m, rec("a", NULL, NK_FILE, 6, 10, 1), NULL), 4);
	ck_assert_uint_eq(issue(&m, rec("a", "", NK_NPZDIR, 0, 10, 1), NULL), 5);
	ck_assert_uint_eq(issue(&m, rec("a", NULL, NK_ARRAY, 0, 10, 1), NULL), 6);
	const struct afd_idrec *r = afd_idmap_find(&m, a);
	ck_assert_ptr_nonnull(r);
	ck_assert_str_eq(r->path, "a");
	ck_assert_uint_eq(r->ino, 10);
	ck_assert_ptr_null(afd_idmap_find(&m, 1));
	ck_assert_ptr_null(afd_idmap_find(&m, 77));
	afd_idmap_destroy(&m);
}
END_TEST

START_TEST(another_file_at_the_path_gets_a_new_id_and_the_old_one_is_gone)
{
	struct afd_idmap m;
	ck_assert_int_eq(afd_idmap_init(&m, 0, 3), 0);
	uint64_t a = issue(&m, rec("d", NULL, NK_DIR, 0, 10, 1), NULL);
	uint64_t b = issue(&m, rec("d", NULL, NK_DIR, 0, 12, 1), NULL);
	ck_assert_uint_ne(a, b);
	ck_assert_ptr_null(afd_idmap_find(&m, a));
	ck_assert_uint_eq(afd_idmap_find(&m, b)->ino, 12);
	ck_assert_uint_eq(m.count, 1);
	afd_idmap_destroy(&m);
}
END_TEST

START_TEST(the_bound_drops_the_least_recently_used_and_folders_last)
{
	struct afd_idmap m;
	ck_assert_int_eq(afd_idmap_init(&m, 4, 3), 0);
	uint64_t dir = issue(&m, rec("d", NULL, NK_DIR, 0, 1, 1), NULL);
	char path[16];
	uint64_t ids[10];
	for (int i = 0; i < 10; i++) {
		snprintf(path, sizeof(path), "d/f%d", i);
		ids[i] = issue(&m, rec(path, NULL, NK_FILE, 1, 100 + (uint64_t)i,
				       dir), NULL);
		afd_idmap_touch(&m, dir);  /* what a lookup in d does */
		ck_assert_uint_le(m.count, 4);
	}
	ck_assert_ptr_nonnull(afd_idmap_find(&m, dir));
	for (int i = 0; i < 7; i++)
		ck_assert_ptr_null(afd_idmap_find(&m, ids[i]));
	for (int i = 7; i < 10; i++)
		ck_assert_ptr_nonnull(afd_idmap_find(&m, ids[i]));
	/* ids are never given again, whatever was dropped */
	ck_assert_uint_eq(issue(&m, rec("d/f0", NULL, NK_FILE, 1, 100, dir), NULL),
			  ids[9] + 1);
	afd_idmap_destroy(&m);
}
END_TEST

START_TEST(a_folder_touched_in_the_newest_segment_is_not_copied)
{
	struct afd_idmap m;
	ck_assert_int_eq(afd_idmap_init(&m, 0, 3), 0);
	uint64_t dir = issue(&m, rec("d", NULL, NK_DIR, 0, 1, 1), NULL);
	char path[16];
	/* 300 children of about 130 bytes, the folder touched after each:
	 * one segment, not two of copies */
	for (int i = 0; i < 300; i++) {
		snprintf(path, sizeof(path), "d/f%03d", i);
		issue(&m, rec(path, NULL, NK_FILE, 1, 100 + (uint64_t)i, dir), NULL);
		afd_idmap_touch(&m, dir);
	}
	ck_assert_uint_eq(m.seg_bytes, AFD_IDMAP_SEG);
	ck_assert_uint_eq(m.count, 301);
	ck_assert_ptr_nonnull(afd_idmap_find(&m, dir));
	afd_idmap_destroy(&m);
}
END_TEST

START_TEST(the_bound_counts_the_bytes_of_paths_too)
{
	struct afd_idmap m;
	ck_assert_int_eq(afd_idmap_init(&m, 0, 3), 0);
	/* 5,000 paths of 4,000 bytes: 20 MB, past the segments' budget */
	char *path = malloc(4001);
	memset(path, 'p', 4000);
	path[4000] = '\0';
	uint64_t last = 0;
	for (int i = 0; i < 5000; i++) {
		snprintf(path, 12, "%011d", i);
		path[11] = 'p';
		last = issue(&m, rec(path, NULL, NK_FILE, 1, (uint64_t)i, 1), NULL);
		ck_assert_uint_le(m.seg_bytes, AFD_IDMAP_BYTES);
	}
	ck_assert_uint_lt(m.count, 5000);
	ck_assert_uint_gt(m.count, 1000);
	ck_assert_ptr_nonnull(afd_idmap_find(&m, last));
	ck_assert_ptr_null(afd_idmap_find(&m, 2));
	free(path);
	afd_idmap_destroy(&m);
}
END_TEST

START_TEST(records_dropped_give_their_segments_back)
{
	struct afd_idmap m;
	ck_assert_int_eq(afd_idmap_init(&m, 0, 3), 0);
	char path[32];
	uint64_t ids[20000];
	for (int i = 0; i < 20000; i++) {
		snprintf(path, sizeof(path), "d/file%05d.npy", i);
		ids[i] = issue(&m, rec(path, NULL, NK_ARRAY, 0, (uint64_t)i, 1),
			       NULL);
	}
	/* packed: about 150 bytes a record, segments included */
	ck_assert_uint_le(m.seg_bytes, 20000 * 160);
	/* the first half touched: the second half is now the oldest */
	for (int i = 0; i < 10000; i++)
		afd_idmap_touch(&m, ids[i]);
	const void *it;
	ck_assert_uint_eq(afd_idmap_first(&m, &it)->id, ids[10000]);
	for (int i = 0; i < 20000; i++)
		afd_idmap_drop(&m, ids[i]);
	ck_assert_uint_eq(m.count, 0);
	ck_assert_uint_le(m.seg_bytes, AFD_IDMAP_SEG);   /* the newest stays */
	ck_assert_ptr_null(afd_idmap_first(&m, &it));
	/* one too big for a segment gets an id and no record */
	char *big = malloc(AFD_IDMAP_SEG + 1);
	memset(big, 'b', AFD_IDMAP_SEG);
	big[AFD_IDMAP_SEG] = '\0';
	uint64_t b = issue(&m, rec(big, NULL, NK_FILE, 1, 1, 1), NULL);
	ck_assert_uint_gt(b, ids[19999]);
	ck_assert_ptr_null(afd_idmap_find(&m, b));
	free(big);
	afd_idmap_destroy(&m);
}
END_TEST

START_TEST(paths_the_daemon_could_not_have_issued_are_refused)
{
	const char *good[] = { ".", "a", "a/b", "a.npz", ".hidden", "a/..b" };
	const char *bad[] = { "", "/a", "a/", "a//b", "..", "a/../b", "./a",
			      "a/.", "a/.." };
	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++)
		ck_assert_msg(afd_idmap_path_ok(good[i], strlen(good[i])), "%s",
			      good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		ck_assert_msg(!afd_idmap_path_ok(bad[i], strlen(bad[i])), "%s",
			      bad[i]);
	ck_assert(!afd_idmap_path_ok("a\0b", 3));
}
END_TEST

/* A map of a few records of every shape: a member, an entry, a chunk. */
static void sample(struct afd_idmap *m)
{
	ck_assert_int_eq(afd_idmap_init(m, 0, 42), 0);
	uint64_t d = issue(m, rec("sub", NULL, NK_DIR, 0, 5, 1), NULL);
	uint64_t z = issue(m, rec("sub/a.npz", "", NK_NPZDIR, 0, 6, d), NULL);
	struct afd_idrec e = rec("sub/a.npz", "k.npy", NK_ENTRY, 77, 6, z);
	e.entry = AE_DATA;
	e.name = "data";
	issue(m, e, NULL);
	e.kind = NK_ZARRFILE;
	e.entry = AE_ZCHUNK;
	e.sub = 12345;
	e.name = "0.1";
	issue(m, e, NULL);
}

static void assert_same_maps(struct afd_idmap *a, struct afd_idmap *b)
{
	ck_assert_uint_eq(a->count, b->count);
	ck_assert_uint_eq(a->next_id, b->next_id);
	const void *ia, *ib;
	const struct afd_idrec *x = afd_idmap_first(a, &ia);
	const struct afd_idrec *y = afd_idmap_first(b, &ib);
	for (; x && y; x = afd_idmap_next(&ia), y = afd_idmap_next(&ib)) {
		ck_assert_uint_eq(x->id, y->id);
		ck_assert_uint_eq(x->gen, y->gen);
		ck_assert_uint_eq(x->kind, y->kind);
		ck_assert_uint_eq(x->entry, y->entry);
		ck_assert_uint_eq(x->sub, y->sub);
		ck_assert_uint_eq(x->version, y->version);
		ck_assert_uint_eq(x->parent, y->parent);
		ck_assert_uint_eq(x->dev, y->dev);
		ck_assert_uint_eq(x->ino, y->ino);
		ck_assert_str_eq(x->path, y->path);
		ck_assert_str_eq(x->name, y->name);
		ck_assert((x->member == NULL) == (y->member == NULL));
		if (x->member)
			ck_assert_str_eq(x->member, y->member);
	}
	ck_assert(!x && !y);
}

START_TEST(a_saved_map_loads_as_it_was)
{
	struct afd_idmap m, back;
	sample(&m);
	char *dir = aftd_tmp_new();
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	ck_assert_int_eq(afd_idmap_save(&m, KEY, dfd, "m.afm"), 0);
	ck_assert_int_eq(afd_idmap_init(&back, 0, 9), 0);
	char why[128] = "";
	ck_assert_int_eq(afd_idmap_load(&back, KEY, dfd, "m.afm", why,
					sizeof(why)), 0);
	assert_same_maps(&m, &back);
	ck_assert_uint_eq(back.gen, 9);  /* new ids: this run's generation */
	/* another SOURCE's key: refused */
	afd_idmap_destroy(&back);
	ck_assert_int_eq(afd_idmap_init(&back, 0, 9), 0);
	ck_assert_int_eq(afd_idmap_load(&back, KEY + 1, dfd, "m.afm", why,
					sizeof(why)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "another source"));
	ck_assert_int_eq(afd_idmap_load(&back, KEY, dfd, "none.afm", why,
					sizeof(why)), -ENOENT);
	ck_assert_uint_eq(back.count, 0);
	/* a smaller bound keeps the newest records */
	afd_idmap_destroy(&back);
	ck_assert_int_eq(afd_idmap_init(&back, 2, 9), 0);
	ck_assert_int_eq(afd_idmap_load(&back, KEY, dfd, "m.afm", why,
					sizeof(why)), 0);
	ck_assert_uint_eq(back.count, 2);
	ck_assert_ptr_nonnull(afd_idmap_find(&back, m.next_id - 1));
	ck_assert_uint_eq(back.next_id, m.next_id);
	afd_idmap_destroy(&back);
	close(dfd);
	aftd_tmp_free(dir);
	afd_idmap_destroy(&m);
}
END_TEST

/* Put a right checksum on @p buf (so damage reaches the field checks). */
static void fix_crc(unsigned char *buf, size_t len)
{
	uint32_t c = (uint32_t)crc32(0, buf, (uInt)(len - 4));
	for (int i = 0; i < 4; i++)
		buf[len - 4 + (size_t)i] = (unsigned char)(c >> (8 * i));
}

/* Decode @p len bytes: accepted (every record then valid) or refused with
 * a reason; the map is left empty on refusal. */
static int try_decode(const unsigned char *buf, size_t len)
{
	struct afd_idmap m;
	ck_assert_int_eq(afd_idmap_init(&m, 0, 9), 0);
	char why[128] = "";
	int rc = afd_idmap_decode(&m, KEY, buf, len, why, sizeof(why));
	if (rc < 0) {
		ck_assert_int_eq(rc, -EINVAL);
		ck_assert_uint_eq(m.count, 0);
		ck_assert(why[0] != '\0');
	} else {
		const void *it;
		for (const struct afd_idrec *r = afd_idmap_first(&m, &it); r;
		     r = afd_idmap_next(&it)) {
			ck_assert(afd_idmap_path_ok(r->path, strlen(r->path)));
			ck_assert_uint_gt(r->id, 1);
			ck_assert_uint_lt(r->id, m.next_id);
			ck_assert_uint_le(r->kind, AFD_NKIND_LAST);
		}
	}
	afd_idmap_destroy(&m);
	return rc;
}

START_TEST(hostile_map_files_are_refused_whole)
{
	struct afd_idmap m;
	sample(&m);
	unsigned char *good;
	size_t len;
	ck_assert_int_eq(afd_idmap_encode(&m, KEY, &good, &len), 0);
	ck_assert_int_eq(try_decode(good, len), 0);
	unsigned char *buf = malloc(len + 8);
	/* cut anywhere: refused */
	for (size_t cut = 0; cut < len; cut++) {
		memcpy(buf, good, cut);
		ck_assert_int_eq(try_decode(buf, cut), -EINVAL);
	}
	/* any byte changed: refused by the checksum; with the checksum made
	 * right, refused by a field check or still a valid map */
	for (size_t i = 0; i + 4 < len; i++) {
		for (int bit = 0; bit < 8; bit++) {
			memcpy(buf, good, len);
			buf[i] ^= (unsigned char)(1u << bit);
			ck_assert_int_eq(try_decode(buf, len), -EINVAL);
			fix_crc(buf, len);
			try_decode(buf, len);
		}
	}
	/* a count past the records, a path climbing out, a repeated id */
	memcpy(buf, good, len);
	buf[32] = 0xff;
	fix_crc(buf, len);
	ck_assert_int_eq(try_decode(buf, len), -EINVAL);
	memcpy(buf, good, len);
	unsigned char *p = memmem(buf, len, "sub/a.npz", 9);
	ck_assert_ptr_nonnull(p);
	memcpy(p, "../a.npz", 8);   /* the path is now "../a.npzz" */
	fix_crc(buf, len);
	ck_assert_int_eq(try_decode(buf, len), -EINVAL);
	memcpy(buf, good, len);
	memcpy(buf + 40 + 64 + 3, buf + 40, 8);  /* record 2's id := record 1's */
	fix_crc(buf, len);
	ck_assert_int_eq(try_decode(buf, len), -EINVAL);
	free(buf);
	free(good);
	afd_idmap_destroy(&m);
}
END_TEST

START_TEST(a_map_file_that_is_not_a_regular_file_is_refused)
{
	char *dir = aftd_tmp_new();
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	ck_assert_int_eq(mkdirat(dfd, "d.afm", 0700), 0);
	ck_assert_int_eq(symlinkat("/etc/passwd", dfd, "l.afm"), 0);
	struct afd_idmap m;
	ck_assert_int_eq(afd_idmap_init(&m, 0, 9), 0);
	char why[128];
	ck_assert_int_lt(afd_idmap_load(&m, KEY, dfd, "d.afm", why,
					sizeof(why)), 0);
	ck_assert_int_lt(afd_idmap_load(&m, KEY, dfd, "l.afm", why,
					sizeof(why)), 0);
	ck_assert_uint_eq(m.count, 0);
	afd_idmap_destroy(&m);
	close(dfd);
	aftd_tmp_free(dir);
}
END_TEST

static Suite *idmap_suite(void)
{
	Suite *s = suite_create("daemon_idmap");
	TCase *tc = tcase_create("map");
	tcase_add_test(tc, ids_count_up_and_an_identity_keeps_its_id);
	tcase_add_test(tc, another_file_at_the_path_gets_a_new_id_and_the_old_one_is_gone);
	tcase_add_test(tc, the_bound_drops_the_least_recently_used_and_folders_last);
	tcase_add_test(tc, a_folder_touched_in_the_newest_segment_is_not_copied);
	tcase_add_test(tc, the_bound_counts_the_bytes_of_paths_too);
	tcase_add_test(tc, records_dropped_give_their_segments_back);
	tcase_add_test(tc, paths_the_daemon_could_not_have_issued_are_refused);
	suite_add_tcase(s, tc);
	TCase *f = tcase_create("file");
	tcase_add_test(f, a_saved_map_loads_as_it_was);
	tcase_add_test(f, hostile_map_files_are_refused_whole);
	tcase_add_test(f, a_map_file_that_is_not_a_regular_file_is_refused);
	suite_add_tcase(s, f);
	return s;
}

int main(void)
{
	return aft_run(idmap_suite());
}
