/* SPDX-License-Identifier: MIT */
/* Tests for src/daemon/srcfile.c: the source cache, by file version. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon_test.h"

static char *dir;
static struct afd_ctx c;

static void setup(void)
{
	dir = aftd_tmp_new();
	aftd_ctx_open(&c, dir, NULL);
}

static void teardown(void)
{
	afd_ctx_destroy(&c);
	aftd_tmp_free(dir);
}

static struct afd_src *get(const char *path)
{
	struct afd_src *sf = NULL;
	int rc = afd_src_get(&c, path, NULL, NULL, &sf);
	ck_assert_msg(rc == 0, "afd_src_get %s: %s", path, strerror(-rc));
	ck_assert_ptr_nonnull(sf);
	return sf;
}

static int get_rc(const char *path)
{
	struct afd_src *sf = NULL;
	int rc = afd_src_get(&c, path, NULL, NULL, &sf);
	afd_src_put(sf);
	return rc;
}

START_TEST(ident_differs_in_any_of_its_fields)
{
	struct stat st;
	memset(&st, 0, sizeof(st));
	st.st_dev = 1;
	st.st_ino = 2;
	st.st_size = 3;
	st.st_mtim = (struct timespec){ 4, 5 };
	st.st_ctim = (struct timespec){ 6, 7 };
	struct afd_ident a, b;
	afd_ident_of(&a, &st);
	afd_ident_of(&b, &st);
	ck_assert(afd_ident_eq(&a, &b));
	ck_assert_uint_eq(afd_ident_key("x.npy", &a), afd_ident_key("x.npy", &b));
	ck_assert_uint_ne(afd_ident_key("x.npy", &a), afd_ident_key("y.npy", &a));
	for (int field = 0; field < 7; field++) {
		struct stat o = st;
		switch (field) {
		case 0: o.st_dev++; break;
		case 1: o.st_ino++; break;
		case 2: o.st_size++; break;
		case 3: o.st_mtim.tv_sec++; break;
		case 4: o.st_mtim.tv_nsec++; break;
		case 5: o.st_ctim.tv_sec++; break;
		default: o.st_ctim.tv_nsec++; break;
		}
		afd_ident_of(&b, &o);
		ck_assert_msg(!afd_ident_eq(&a, &b), "field %d", field);
		ck_assert_uint_ne(afd_ident_key("x.npy", &a),
				  afd_ident_key("x.npy", &b));
	}
}
END_TEST

START_TEST(the_same_version_is_a_cache_hit)
{
	aftd_write_npy(dir, "a.npy", 10, 0);
	struct afd_src *s1 = get("a.npy");
	ck_assert_int_eq(s1->kind, SK_ARRAY);
	ck_assert_uint_eq(s1->arr.a.data_size, 10);
	ck_assert(s1->cached);
	struct afd_src *s2 = get("a.npy");
	ck_assert_ptr_eq(s2, s1);
	/* a fresh lstat passed in finds it too */
	struct stat st = aftd_lstat(dir, "a.npy");
	struct afd_src *s3 = NULL;
	ck_assert_int_eq(afd_src_get(&c, "a.npy", &st, NULL, &s3), 0);
	ck_assert_ptr_eq(s3, s1);
	ck_assert_uint_eq(c.srcs.count, 1);
	afd_src_put(s1);
	afd_src_put(s2);
	afd_src_put(s3);
}
END_TEST

START_TEST(a_changed_size_is_parsed_again_and_replaces_the_entry)
{
	aftd_write_npy(dir, "a.npy", 10, 0);
	struct afd_src *old = get("a.npy");
	aftd_write_npy(dir, "a.npy", 30, 0);
	struct afd_src *fresh = get("a.npy");
	ck_assert_ptr_ne(fresh, old);
	ck_assert_uint_eq(fresh->arr.a.data_size, 30);
	ck_assert_uint_ne(fresh->key, old->key);
	ck_assert_uint_eq(c.srcs.count, 1);
	ck_assert(!old->cached);
	/* the holder of the old version still reads it */
	ck_assert_uint_eq(old->arr.a.data_size, 10);
	afd_src_put(old);
	afd_src_put(fresh);
}
END_TEST

START_TEST(a_rewrite_of_the_same_size_is_parsed_again)
{
	aftd_write_npy(dir, "a.npy", 10, 0);
	struct stat st = aftd_lstat(dir, "a.npy");
	struct afd_src *old = get("a.npy");
	aftd_write_npy(dir, "a.npy", 10, 5);
	/* an mtime in the past: no clock tick is waited for */
	struct timespec t[2] = { st.st_atim, st.st_mtim };
	t[1].tv_sec -= 100;
	ck_assert_int_eq(utimensat(AT_FDCWD, aftd_path(dir, "a.npy"), t, 0), 0);
	struct afd_src *fresh = get("a.npy");
	ck_assert_ptr_ne(fresh, old);
	ck_assert_int_eq(fresh->st.st_size, old->st.st_size);
	afd_src_put(old);
	afd_src_put(fresh);
}
END_TEST

/* Change only the inode's ctime (a chmod), however coarse its clock is. */
static void touch_ctime(const char *name)
{
	struct stat a = aftd_lstat(dir, name);
	const char *path = aftd_path(dir, name);
	for (long i = 0;; i++) {
		ck_assert_msg(i < 50000000, "the ctime of %s never changed", path);
		ck_assert_int_eq(chmod(path, a.st_mode & 07777), 0);
		struct stat b = aftd_lstat(dir, name);
		if (b.st_ctim.tv_sec != a.st_ctim.tv_sec ||
		    b.st_ctim.tv_nsec != a.st_ctim.tv_nsec)
			return;
	}
}

START_TEST(a_changed_ctime_alone_is_parsed_again)
{
	aftd_write_npy(dir, "a.npy", 10, 0);
	struct afd_src *old = get("a.npy");
	touch_ctime("a.npy");
	struct afd_src *fresh = get("a.npy");
	ck_assert_ptr_ne(fresh, old);
	ck_assert_int_eq(fresh->st.st_mtim.tv_nsec, old->st.st_mtim.tv_nsec);
	ck_assert_int_eq(fresh->st.st_size, old->st.st_size);
	afd_src_put(old);
	afd_src_put(fresh);
}
END_TEST

START_TEST(dropped_is_parsed_again)
{
	aftd_write_npy(dir, "a.npy", 10, 0);
	struct afd_src *old = get("a.npy");
	afd_src_drop(&c, "a.npy");
	ck_assert(!old->cached);
	ck_assert_uint_eq(c.srcs.count, 0);
	struct afd_src *fresh = get("a.npy");
	ck_assert_ptr_ne(fresh, old);
	afd_src_put(old);
	afd_src_put(fresh);
}
END_TEST

START_TEST(shed_keeps_the_most_recently_used)
{
	aftd_write_npy(dir, "a.npy", 10, 0);
	aftd_write_npy(dir, "b.npy", 10, 0);
	aftd_write_npy(dir, "c.npy", 10, 0);
	struct afd_src *a = get("a.npy");
	afd_src_put(get("b.npy"));
	afd_src_put(get("c.npy"));
	afd_src_put(get("a.npy"));   /* a is the most recent again */
	afd_srcs_shed(&c.srcs, 1);
	ck_assert_uint_eq(c.srcs.count, 1);
	ck_assert(a->cached);
	struct afd_src *again = get("a.npy");
	ck_assert_ptr_eq(again, a);
	afd_src_put(again);
	/* one still referenced outlives its shedding */
	afd_srcs_shed(&c.srcs, 0);
	ck_assert_uint_eq(c.srcs.count, 0);
	ck_assert(!a->cached);
	ck_assert_uint_eq(a->arr.a.data_size, 10);
	afd_src_put(a);
}
END_TEST

START_TEST(the_fd_handed_out_is_of_the_version_returned)
{
	aftd_write_npy(dir, "a.npy", 10, 0);
	for (int pass = 0; pass < 2; pass++) {  /* a miss, then a hit */
		int fd = -1;
		struct afd_src *sf = NULL;
		ck_assert_int_eq(afd_src_get(&c, "a.npy", NULL, &fd, &sf), 0);
		ck_assert_int_ge(fd, 0);
		struct stat st;
		ck_assert_int_eq(fstat(fd, &st), 0);
		ck_assert_uint_eq(st.st_ino, sf->st.st_ino);
		ck_assert_int_eq(st.st_size, sf->st.st_size);
		close(fd);
		afd_src_put(sf);
	}
}
END_TEST

/* the parse reads its header through a prefix read with one pread: the
 * fd is not needed again for a header that fits in it */
START_TEST(a_header_is_parsed_from_its_prefix_alone)
{
	size_t bytes = aftd_write_npy(dir, "p.npy", 2000, 0);
	char *path = NULL;
	ck_assert_int_ge(asprintf(&path, "%s/p.npy", dir), 0);
	unsigned char buf[AF_HEAD_BYTES];
	af_head hd = { .buf = buf, .cap = sizeof(buf) };
	int fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(af_head_read_fd(&hd, fd, bytes), 0);
	ck_assert_uint_eq(hd.len, AF_HEAD_BYTES);
	close(fd);
	hd.pre.fd = -1;  /* any read past the prefix now fails */
	af_array a;
	af_error err;
	ck_assert_int_eq(af_array_parse_named("p.npy", &hd.src, &a, &err), AF_OK);
	ck_assert_uint_eq(a.data_offset + 2000, bytes);
	af_array_free(&a);
	free(path);
}
END_TEST

/* A listing's parse builds no B.zarr/ text: deciding it and measuring
 * its metadata wait until asked (zarr_store.h). */
START_TEST(b_zarr_is_decided_when_first_asked)
{
	c.opts.zarr_chunk = AF_ZARR_CHUNK_DEFAULT;
	aftd_write_npy(dir, "z.npy", 2000, 0);
	struct afd_src *sf = get("z.npy");
	struct afd_zarrinfo *z = &sf->arr.zarr;
	ck_assert_uint_eq(z->state, ZI_UNKNOWN);
	ck_assert(!sf->arr.has[AE_ZARR]);
	struct afd_arrsum sum;
	afd_arrsum_of(&sum, sf);
	ck_assert_uint_eq(sum.has & (1u << AE_ZARR), 0);
	ck_assert(afd_arrinfo_has(&sf->arr, AE_ZARR));
	ck_assert_uint_eq(z->state, ZI_OK);
	for (int f = 0; f < 3; f++)
		ck_assert_uint_eq(z->meta_size[f], 0);
	char *text = NULL;
	size_t len = 0;
	ck_assert_int_eq(afd_zarr_text(z, AE_ZARRAY, &text, &len), AF_OK);
	ck_assert_uint_eq(afd_zarr_size(z, AE_ZARRAY), len);
	ck_assert_uint_eq(z->meta_size[0], len);
	ck_assert_uint_eq(afd_zarr_size(z, AE_ZARRAY), len);
	free(text);
	ck_assert_uint_gt(afd_zarr_size(z, AE_ZJSON), 0);
	ck_assert_uint_eq(afd_zarr_size(z, AE_ZCHUNK), 2000);
	afd_src_put(sf);

	/* an object array has none, decided the same way */
	aftd_copy(aft_fixture("npy/object-array.npy"), dir, "o.npy");
	sf = get("o.npy");
	ck_assert_uint_eq(sf->arr.zarr.state, ZI_UNKNOWN);
	ck_assert(!afd_arrinfo_has(&sf->arr, AE_ZARR));
	ck_assert_uint_eq(sf->arr.zarr.state, ZI_NONE);
	ck_assert_uint_eq(afd_zarr_size(&sf->arr.zarr, AE_ZARRAY), 0);
	enum afd_entry e;
	uint64_t sub;
	ck_assert_int_eq(afd_zarr_name(&sf->arr.zarr, ".zarray", &e, &sub), -ENOENT);
	afd_src_put(sf);
}
END_TEST

struct zarr_race {
	pthread_barrier_t go;
	struct afd_zarrinfo *z;
};

static void *ask_zarr(void *arg)
{
	struct zarr_race *r = arg;
	pthread_barrier_wait(&r->go);
	bool first = afd_zarr_exists(r->z);
	pthread_barrier_wait(&r->go);
	return (void *)(uintptr_t)first;
}

/* Two callers asking at once: one decides, the other waits, both get the
 * same answer. Under ThreadSanitizer this also holds the state word to
 * its atomics (a plain read after deciding raced a waiter's CAS). */
START_TEST(b_zarr_is_decided_once_for_callers_asking_at_once)
{
	struct zarr_race r;
	ck_assert_int_eq(pthread_barrier_init(&r.go, NULL, 3), 0);
	for (int round = 0; round < 2000; round++) {
		struct afd_arrinfo *ai = calloc(1, sizeof(*ai));
		ck_assert_ptr_nonnull(ai);
		afd_zarr_info_init(ai, AF_ZARR_CHUNK_DEFAULT);
		/* no data: decided as none, at once */
		r.z = &ai->zarr;
		pthread_t t[2];
		for (int i = 0; i < 2; i++)
			ck_assert_int_eq(pthread_create(&t[i], NULL, ask_zarr, &r), 0);
		pthread_barrier_wait(&r.go);
		pthread_barrier_wait(&r.go);
		for (int i = 0; i < 2; i++) {
			void *got;
			ck_assert_int_eq(pthread_join(t[i], &got), 0);
			ck_assert_ptr_null(got);
		}
		ck_assert_uint_eq(__atomic_load_n(&ai->zarr.state, __ATOMIC_ACQUIRE),
				  ZI_NONE);
		free(ai);
	}
	pthread_barrier_destroy(&r.go);
}
END_TEST

START_TEST(only_regular_files_with_array_names_are_parsed)
{
	aftd_write(dir, "bad.npy", "not an array at all", 19);
	aftd_write(dir, "a.txt", "text", 4);
	ck_assert_int_eq(mkdir(aftd_path(dir, "d.npy"), 0755), 0);
	ck_assert_int_eq(symlink("bad.npy", aftd_path(dir, "l.npy")), 0);
	/* a file that does not parse is served as itself */
	struct afd_src *sf = get("bad.npy");
	ck_assert_int_eq(sf->kind, SK_PLAIN);
	ck_assert(sf->cached);
	afd_src_put(sf);
	ck_assert_int_eq(get_rc("a.txt"), -EINVAL);
	ck_assert_int_eq(get_rc("d.npy"), -EINVAL);
	ck_assert_int_eq(get_rc("l.npy"), -EINVAL);
	int fd = -1;
	ck_assert_int_eq(afd_src_get(&c, "l.npy", NULL, &fd, &sf), -EINVAL);
	ck_assert_int_eq(fd, -1);
	ck_assert_int_eq(get_rc("missing.npy"), -ENOENT);
	ck_assert_uint_eq(c.srcs.count, 1);
}
END_TEST

static int opening_rc(const char *path, struct stat *st)
{
	struct afd_src *sf = NULL;
	int rc = afd_src_get_opening(&c, path, st, &sf);
	afd_src_put(sf);
	return rc;
}

/* afd_src_get_opening (a lookup that opens at once) gives what an lstat
 * then afd_src_get gives: the same cached version, and -EINVAL for what
 * is no regular file, a fifo included, never waiting on it. */
START_TEST(opening_at_once_finds_the_same_versions)
{
	aftd_write_npy(dir, "a.npy", 10, 0);
	ck_assert_int_eq(mkdir(aftd_path(dir, "d.npy"), 0755), 0);
	ck_assert_int_eq(symlink("a.npy", aftd_path(dir, "l.npy")), 0);
	ck_assert_int_eq(mkfifo(aftd_path(dir, "f.npy"), 0644), 0);
	aftd_write(dir, "a.txt", "text", 4);
	struct stat st, want = aftd_lstat(dir, "a.npy");
	struct afd_src *s1 = NULL;
	ck_assert_int_eq(afd_src_get_opening(&c, "a.npy", &st, &s1), 0);
	ck_assert_int_eq(s1->kind, SK_ARRAY);
	ck_assert_uint_eq(st.st_ino, want.st_ino);
	ck_assert_int_eq(st.st_size, want.st_size);
	struct afd_src *s2 = get("a.npy");
	ck_assert_ptr_eq(s2, s1);          /* one cached version */
	struct afd_src *s3 = NULL;
	ck_assert_int_eq(afd_src_get_opening(&c, "a.npy", &st, &s3), 0);
	ck_assert_ptr_eq(s3, s1);
	afd_src_put(s1);
	afd_src_put(s2);
	afd_src_put(s3);
	ck_assert_int_eq(opening_rc("d.npy", &st), -EINVAL);
	ck_assert_int_eq(opening_rc("l.npy", &st), -EINVAL);
	ck_assert_int_eq(opening_rc("f.npy", &st), -EINVAL);
	ck_assert_int_eq(opening_rc("a.txt", &st), -EINVAL);
	ck_assert_int_eq(opening_rc("missing.npy", &st), -ENOENT);
	ck_assert_uint_eq(c.srcs.count, 1);
	/* a rewrite is a new version, parsed again */
	aftd_write_npy(dir, "a.npy", 20, 0);
	struct afd_src *s4 = NULL;
	ck_assert_int_eq(afd_src_get_opening(&c, "a.npy", &st, &s4), 0);
	ck_assert_uint_eq(s4->arr.a.data_size, 20);
	afd_src_put(s4);
}
END_TEST

/* A listing takes a parse made since it began as it is (its parse-ahead
 * made it a moment ago), and checks one made before: a version rewritten
 * after the listing's tick is what a later listing sees. */
START_TEST(a_parse_born_since_a_listing_began_is_taken_unchecked)
{
	aftd_write_npy(dir, "a.npy", 10, 0);
	uint64_t t = afd_src_tick(&c);
	struct stat st;
	struct afd_src *s1 = NULL, *s2 = NULL, *s3 = NULL, *none = NULL;
	ck_assert(!afd_src_get_fresh(&c, "a.npy", t, &st, &none));
	ck_assert_int_eq(afd_src_get_opening(&c, "a.npy", &st, &s1), 0);
	ck_assert_uint_ge(s1->born, t);
	aftd_write_npy(dir, "a.npy", 20, 0);
	/* the listing that began at t: no stat, the parse it had */
	ck_assert(afd_src_get_fresh(&c, "a.npy", t, &st, &s2));
	ck_assert_ptr_eq(s2, s1);
	ck_assert_int_eq(st.st_size, s1->st.st_size);
	/* one that begins now does not take it; a lookup finds the new
	 * version */
	uint64_t later = afd_src_tick(&c);
	ck_assert_uint_gt(later, t);
	ck_assert(!afd_src_get_fresh(&c, "a.npy", later, &st, &none));
	ck_assert(!afd_src_get_fresh(&c, "a.npy", 0, &st, &none));
	ck_assert_ptr_null(none);
	ck_assert_int_eq(afd_src_get_opening(&c, "a.npy", &st, &s3), 0);
	ck_assert_ptr_ne(s3, s1);
	ck_assert_uint_eq(s3->arr.a.data_size, 20);
	ck_assert_uint_ge(s3->born, later);
	afd_src_put(s1);
	afd_src_put(s2);
	afd_src_put(s3);
	/* a version found from a stat the caller took earlier is never
	 * taken as fresh: its born is 0 */
	aftd_write_npy(dir, "b.npy", 4, 0);
	struct stat known = aftd_lstat(dir, "b.npy");
	struct afd_src *b = NULL;
	ck_assert_int_eq(afd_src_get(&c, "b.npy", &known, NULL, &b), 0);
	ck_assert_uint_eq(b->born, 0);
	ck_assert(!afd_src_get_fresh(&c, "b.npy", 1, &st, &none));
	afd_src_put(b);
}
END_TEST

START_TEST(the_least_recently_used_go_beyond_the_limit)
{
	c.opts.limits.src_max = 3;
	char name[16];
	for (int i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "n%d.npy", i);
		aftd_write_npy(dir, name, 4, (unsigned)i);
	}
	struct afd_src *s[5];
	s[0] = get("n0.npy");
	s[1] = get("n1.npy");
	s[2] = get("n2.npy");
	s[3] = get("n3.npy");
	ck_assert_uint_eq(c.srcs.count, 3);
	ck_assert(!s[0]->cached);
	/* a hit makes n1 the most recent: n2 goes next */
	struct afd_src *again = get("n1.npy");
	ck_assert_ptr_eq(again, s[1]);
	afd_src_put(again);
	s[4] = get("n4.npy");
	ck_assert_uint_eq(c.srcs.count, 3);
	ck_assert(s[1]->cached && !s[2]->cached && s[3]->cached && s[4]->cached);
	/* held references keep the evicted alive and whole */
	ck_assert_uint_eq(s[0]->arr.a.data_size, 4);
	ck_assert_str_eq(s[2]->path, "n2.npy");
	struct afd_src *n0 = get("n0.npy");
	ck_assert_ptr_ne(n0, s[0]);
	afd_src_put(n0);
	for (int i = 0; i < 5; i++)
		afd_src_put(s[i]);
	ck_assert_uint_eq(c.srcs.count, 3);
}
END_TEST

START_TEST(archives_have_their_own_limit)
{
	c.opts.limits.src_max_zip = 1;
	const char *npz = aft_fixture("mount/corpus/npz/stored.npz");
	aftd_copy(npz, dir, "x.npz");
	aftd_copy(npz, dir, "y.npz");
	aftd_write_npy(dir, "a.npy", 4, 0);
	struct afd_src *a = get("a.npy");
	struct afd_src *x = get("x.npz");
	ck_assert_int_eq(x->kind, SK_NPZ);
	ck_assert_int_ge(x->fd, 0);
	struct afd_src *y = get("y.npz");
	ck_assert_uint_eq(c.srcs.nzip, 1);
	ck_assert(!x->cached && y->cached && a->cached);
	ck_assert_uint_eq(c.srcs.count, 2);
	/* the evicted archive still reads its members through its own fd */
	long i = afd_src_find(x, "plain.npy");
	ck_assert_int_ge(i, 0);
	const struct afd_minfo *mi = afd_src_member(&c, x, (size_t)i);
	ck_assert_ptr_nonnull(mi);
	ck_assert_int_eq(mi->state, MS_ARRAY);
	const af_source *src = NULL;
	ck_assert_int_eq(afd_src_member_open(&c, x, (size_t)i, &src, NULL), 0);
	unsigned char magic[6];
	ck_assert_int_eq(src->pread(src, magic, 6, 0), 6);
	ck_assert_int_eq(memcmp(magic, "\x93NUMPY", 6), 0);
	afd_src_member_close(x, (size_t)i);
	afd_src_put(x);
	afd_src_put(y);
	afd_src_put(a);
}
END_TEST

static Suite *srcfile_suite(void)
{
	Suite *s = suite_create("daemon_srcfile");
	TCase *tc = tcase_create("cache");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, ident_differs_in_any_of_its_fields);
	tcase_add_test(tc, the_same_version_is_a_cache_hit);
	tcase_add_test(tc, shed_keeps_the_most_recently_used);
	tcase_add_test(tc, a_changed_size_is_parsed_again_and_replaces_the_entry);
	tcase_add_test(tc, a_rewrite_of_the_same_size_is_parsed_again);
	tcase_add_test(tc, a_changed_ctime_alone_is_parsed_again);
	tcase_add_test(tc, dropped_is_parsed_again);
	tcase_add_test(tc, the_fd_handed_out_is_of_the_version_returned);
	tcase_add_test(tc, a_header_is_parsed_from_its_prefix_alone);
	tcase_add_test(tc, b_zarr_is_decided_when_first_asked);
	tcase_add_test(tc, b_zarr_is_decided_once_for_callers_asking_at_once);
	tcase_add_test(tc, only_regular_files_with_array_names_are_parsed);
	tcase_add_test(tc, opening_at_once_finds_the_same_versions);
	tcase_add_test(tc, a_parse_born_since_a_listing_began_is_taken_unchecked);
	tcase_add_test(tc, the_least_recently_used_go_beyond_the_limit);
	tcase_add_test(tc, archives_have_their_own_limit);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return aft_run(srcfile_suite());
}
