/* SPDX-License-Identifier: MIT */
/* Tests for file heads and their read-ahead (src/codec/head.c and
 * readahead.c, af_readahead.h): heads come in order with and without
 * workers (and when no worker thread can be made), each one is its file,
 * what is not a readable regular file says why, and no fd outlives its
 * head or grows with the folder. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "af_test.h"
#include "arrayfs/af_readahead.h"

#define HEAD 64u   /* small, so that some files are longer than a head */

static char dir[] = "/tmp/af_readahead.XXXXXX";
static int dfd = -1;
static char names[600][32];

/* Thread creations that succeed before every next one fails with EAGAIN
 * (-1: all succeed), to reach the read-ahead's threadless fallback: this
 * program is linked with --wrap=pthread_create (tests/unit/meson.build),
 * so the codec's calls come here. */
static int creations_left = -1;
static int threads_made;

int __real_pthread_create(pthread_t *t, const pthread_attr_t *attr,
			  void *(*fn)(void *), void *arg);
int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *attr,
			  void *(*fn)(void *), void *arg);

int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *attr,
			  void *(*fn)(void *), void *arg)
{
	if (creations_left == 0)
		return EAGAIN;
	if (creations_left > 0)
		creations_left--;
	int rc = __real_pthread_create(t, attr, fn, arg);
	if (rc == 0)
		threads_made++;
	return rc;
}

static void setup(void)
{
	creations_left = -1;
	threads_made = 0;
	strcpy(dir, "/tmp/af_readahead.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(dfd, 0);
}

static void teardown(void)
{
	DIR *d = fdopendir(dfd);
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.' &&
		    unlinkat(dirfd(d), e->d_name, 0) < 0)
			unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
	if (d)
		closedir(d);
	dfd = -1;
	rmdir(dir);
}

/* File i's size: shorter and longer than a head, by turns. */
static size_t size_of(uint64_t i)
{
	return i % 3 == 0 ? 3 * HEAD + i % 7 : i % 50;
}

static unsigned char byte_of(uint64_t i, size_t k)
{
	return (unsigned char)(i * 31 + k * 7 + 1);
}

/* Files f0 .. f(n-1) of size_of(i) bytes; @p big: all longer than a head. */
static void make_files(uint64_t n, bool big)
{
	ck_assert_uint_le(n, sizeof(names) / sizeof(names[0]));
	unsigned char buf[4 * HEAD];
	for (uint64_t i = 0; i < n; i++) {
		snprintf(names[i], sizeof(names[i]), "f%llu", (unsigned long long)i);
		size_t len = big ? 2 * HEAD : size_of(i);
		for (size_t k = 0; k < len; k++)
			buf[k] = byte_of(i, k);
		int fd = openat(dfd, names[i], O_WRONLY | O_CREAT | O_TRUNC, 0644);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(write(fd, buf, len), (ssize_t)len);
		close(fd);
	}
}

static const char *name_at(void *arg, uint64_t i)
{
	(void)arg;
	return names[i];
}

static af_readahead_opts opts(uint64_t n, unsigned window)
{
	return (af_readahead_opts){
		.dfd = dfd, .n = n, .name = name_at, .head_bytes = HEAD,
		.window = window, .workers = 2, .batch = 4, .min_parallel = 32,
	};
}

/* @p h is file @p i: its stat, its first bytes, and all of it through
 * its source (past the head from its fd, kept open for that alone). */
static void expect_file(const af_head *h, uint64_t i)
{
	struct stat sb;
	ck_assert_int_eq(fstatat(dfd, names[i], &sb, 0), 0);
	ck_assert_int_eq(h->err, 0);
	ck_assert(S_ISREG(h->st.st_mode));
	ck_assert_uint_eq(h->st.st_ino, sb.st_ino);
	ck_assert_uint_eq(h->st.st_size, sb.st_size);
	size_t size = (size_t)sb.st_size;
	ck_assert_uint_eq(h->len, size < HEAD ? size : HEAD);
	for (size_t k = 0; k < h->len; k++)
		ck_assert_uint_eq(h->buf[k], byte_of(i, k));
	ck_assert_msg((h->fd >= 0) == (size > HEAD), "file %llu: fd %d",
		      (unsigned long long)i, h->fd);
	ck_assert_uint_eq(h->src.size, size);
	unsigned char all[4 * HEAD];
	af_error err;
	ck_assert_int_eq(af_source_read_exact(&h->src, all, size, 0, &err), AF_OK);
	for (size_t k = 0; k < size; k++)
		ck_assert_uint_eq(all[k], byte_of(i, k));
}

/* What is not a readable regular file says why, and blocks nothing. */
static void expect_not_read(const af_head *h, const char *name)
{
	if (!strcmp(name, "missing")) {
		ck_assert_int_eq(h->err, -ENOENT);
	} else if (!strcmp(name, "refused")) {
		ck_assert_int_eq(h->err, -EXDEV);
	} else if (!strcmp(name, "link")) {
		ck_assert_int_eq(h->err, -ELOOP);
	} else {
		ck_assert_int_eq(h->err, 0);
		ck_assert(!strcmp(name, "sub") ? S_ISDIR(h->st.st_mode) :
			  S_ISFIFO(h->st.st_mode));
		ck_assert_uint_eq(h->src.size, 0);
	}
	ck_assert_int_eq(h->fd, -1);
	ck_assert_uint_eq(h->len, 0);
}

/* Names of files that are not readable regular files, in expect_not_read */
static bool is_odd(const char *name)
{
	static const char *const odd[] = { "missing", "refused", "sub", "fifo",
					   "link" };
	for (size_t k = 0; k < sizeof(odd) / sizeof(odd[0]); k++)
		if (!strcmp(name, odd[k]))
			return true;
	return false;
}

/* Every head of @p o, got in order, is its file or says why not; no fd
 * is left open. */
static void read_in_order(const af_readahead_opts *o)
{
	int before = aft_fd_count();
	af_readahead *ra = af_readahead_start(o);
	ck_assert_ptr_nonnull(ra);
	for (uint64_t i = 0; i < o->n; i++) {
		af_head *h = af_readahead_get(ra, i);
		if (is_odd(names[i]))
			expect_not_read(h, names[i]);
		else
			expect_file(h, i);
		af_readahead_put(ra, h);   /* h is a worker's again */
	}
	af_readahead_stop(ra);
	ck_assert_int_eq(aft_fd_count(), before);
}

static void read_all_in_order(uint64_t n)
{
	make_files(n, false);
	af_readahead_opts o = opts(n, 16);
	read_in_order(&o);
}

START_TEST(heads_come_in_order_below_the_thread_threshold)
{
	read_all_in_order(20);
}
END_TEST

START_TEST(heads_come_in_order_above_the_thread_threshold)
{
	read_all_in_order(500);
}
END_TEST

START_TEST(a_window_larger_than_the_folder_is_its_size)
{
	make_files(40, false);
	af_readahead_opts o = opts(40, 1000);
	o.batch = 0;
	read_in_order(&o);
}
END_TEST

static void make_odd_files(void)
{
	ck_assert_int_eq(mkdirat(dfd, "sub", 0755), 0);
	ck_assert_int_eq(mkfifoat(dfd, "fifo", 0644), 0);
	ck_assert_int_eq(symlinkat("f0", dfd, "link"), 0);
}

START_TEST(a_missing_file_a_folder_a_fifo_and_a_symlink_say_why)
{
	make_files(1, false);
	make_odd_files();
	static const char *const odd[] = { "missing", "sub", "fifo", "link" };
	unsigned char buf[HEAD];
	int before = aft_fd_count();
	for (size_t k = 0; k < 4; k++) {
		af_head h = { .buf = buf, .cap = sizeof(buf) };
		ck_assert_int_eq(af_head_read_at(&h, af_head_openat, NULL, dfd,
						 odd[k]),
				 h.err);
		expect_not_read(&h, odd[k]);
	}
	ck_assert_int_eq(aft_fd_count(), before);
}
END_TEST

/* The same read ahead by workers, among regular files. */
START_TEST(odd_files_read_ahead_say_why_in_their_place)
{
	enum { N = 100 };
	make_files(N, false);
	make_odd_files();
	strcpy(names[10], "missing");
	strcpy(names[50], "sub");
	strcpy(names[51], "fifo");
	strcpy(names[99], "link");
	af_readahead_opts o = opts(N, 16);
	read_in_order(&o);
}
END_TEST

/* A file longer than its head keeps its fd, and the rest is read through
 * it; a whole one is closed at once. */
START_TEST(a_file_longer_than_its_head_keeps_its_fd)
{
	make_files(4, false);   /* f0, f3: longer; f1, f2: shorter */
	unsigned char buf[HEAD];
	int before = aft_fd_count();
	for (uint64_t i = 0; i < 4; i++) {
		af_head h = { .buf = buf, .cap = sizeof(buf) };
		ck_assert_int_eq(af_head_read_at(&h, af_head_openat, NULL, dfd,
						 names[i]), 0);
		expect_file(&h, i);
		ck_assert_int_eq(aft_fd_count(), before + (h.fd >= 0));
		af_head_close(&h);
		ck_assert_int_eq(aft_fd_count(), before);
	}
}
END_TEST

/* A caller's own opener is used, and its error is the head's. */
static int refusing_opener(void *arg, int d, const char *name)
{
	int *calls = arg;
	(*calls)++;
	return !strcmp(name, "refused") ? -EXDEV :
					   af_head_openat(NULL, d, name);
}

START_TEST(the_callers_opener_decides)
{
	enum { N = 64 };
	make_files(N, false);
	strcpy(names[7], "refused");
	int calls = 0;
	af_readahead_opts o = opts(N, 8);
	o.opener = refusing_opener;
	o.open_arg = &calls;
	read_in_order(&o);
	ck_assert_int_eq(calls, N);
}
END_TEST

/* A caller that stops early (with or without a head in hand) leaves no
 * fd open, whatever the workers had read ahead. */
START_TEST(an_early_stop_closes_every_fd)
{
	enum { N = 300 };
	make_files(N, true);
	int before = aft_fd_count();
	for (uint64_t got = 0; got < 3; got++) {
		af_readahead_opts o = opts(N, 32);
		af_readahead *ra = af_readahead_start(&o);
		ck_assert_ptr_nonnull(ra);
		for (uint64_t i = 0; i < got; i++) {
			af_head *h = af_readahead_get(ra, i);
			expect_file(h, i);
			if (i + 1 < got || got == 1)
				af_readahead_put(ra, h);   /* got 2: one held */
		}
		af_readahead_stop(ra);
		ck_assert_int_eq(aft_fd_count(), before);
	}
}
END_TEST

/* A slow caller holding a head: the workers wait, never holding more than
 * the window open, however long the folder. */
START_TEST(the_window_bounds_open_fds_while_the_caller_is_slow)
{
	enum { N = 500, WINDOW = 24 };
	make_files(N, true);
	int before = aft_fd_count();
	af_readahead_opts o = opts(N, WINDOW);
	af_readahead *ra = af_readahead_start(&o);
	ck_assert_ptr_nonnull(ra);
	for (uint64_t i = 0; i < N; i += 97) {
		for (uint64_t j = i ? i - 96 : 0; j < i; j++)
			af_readahead_put(ra, af_readahead_get(ra, j));
		af_head *h = af_readahead_get(ra, i);
		expect_file(h, i);
		/* the workers run on meanwhile: each sample is within bound */
		for (int k = 0; k < 200; k++) {
			ck_assert_int_le(aft_fd_count(), before + WINDOW);
			usleep(100);
		}
		af_readahead_put(ra, h);
	}
	af_readahead_stop(ra);
	ck_assert_int_eq(aft_fd_count(), before);
}
END_TEST

/* No thread to be had, or one of two: the heads come all the same, in
 * order, each its file, and no fd is left open. */
START_TEST(without_its_threads_the_caller_reads_every_head)
{
	make_files(500, false);
	for (int left = 0; left < 2; left++) {
		creations_left = left;
		threads_made = 0;
		af_readahead_opts o = opts(500, 16);
		read_in_order(&o);
		ck_assert_int_eq(threads_made, left);
	}
	creations_left = -1;
}
END_TEST

static Suite *readahead_suite(void)
{
	Suite *s = suite_create("readahead");
	TCase *tc = tcase_create("readahead");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, heads_come_in_order_below_the_thread_threshold);
	tcase_add_test(tc, heads_come_in_order_above_the_thread_threshold);
	tcase_add_test(tc, a_window_larger_than_the_folder_is_its_size);
	tcase_add_test(tc, a_missing_file_a_folder_a_fifo_and_a_symlink_say_why);
	tcase_add_test(tc, odd_files_read_ahead_say_why_in_their_place);
	tcase_add_test(tc, a_file_longer_than_its_head_keeps_its_fd);
	tcase_add_test(tc, the_callers_opener_decides);
	tcase_add_test(tc, an_early_stop_closes_every_fd);
	tcase_add_test(tc, the_window_bounds_open_fds_while_the_caller_is_slow);
	tcase_add_test(tc, without_its_threads_the_caller_reads_every_head);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return aft_run(readahead_suite());
}
