/* SPDX-License-Identifier: MIT */
/* Tests for the `.stack` of a folder (src/daemon/stackdir.c, stackscan.c,
 * stackread.c; their headers read ahead by the codec's af_readahead.h): which files are members, their order, the
 * versions a folder's changes make, and reads across members. Nothing
 * mounted: lookups, opens and reads are made as the handlers make them. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon_test.h"
#include "handle.h"
#include "stackscan.h"

static char *dir;
static struct afd_ctx c;
static struct aftd_clock clk;

static void setup(void)
{
	dir = aftd_tmp_new();
	clk.now_ms = 5000;
	aftd_ctx_open(&c, dir, &clk);
	/* the lines said, for the tests that ask why there is no stack */
	aftd_log_capture(&c);
}

static void teardown(void)
{
	aftd_log_release(&c);
	afd_ctx_destroy(&c);
	aftd_tmp_free(dir);
}

/* `.stack` of the root, or NULL with *rc the errno of its lookup. */
static struct afd_node *stack_or(int *rc)
{
	*rc = 0;
	return aftd_lookup(&c, c.nodes.root, AFD_STACK_NAME, rc, NULL);
}

static struct afd_node *stack(void)
{
	return aftd_must(&c, c.nodes.root, AFD_STACK_NAME);
}

/* The root has no stack (-ENOENT). */
static void no_stack(void)
{
	int rc;
	ck_assert_ptr_null(stack_or(&rc));
	ck_assert_int_eq(rc, -ENOENT);
}

/* The whole file @p name of `.stack/`, NUL-terminated (the caller frees). */
static char *stack_text(const char *name)
{
	return aftd_text_of(&c, aftd_must(&c, stack(), name));
}

static void expect_text(const char *name, const char *want)
{
	char *got = stack_text(name);
	ck_assert_str_eq(got, want);
	free(got);
}

/* What the log said so far, NUL-terminated (the caller frees). */
static char *log_said(void)
{
	return aftd_log_said(&c);
}

static size_t count_of(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/* Member @p name: @p n uint8 bytes of @p seed; its data into @p data. */
static void member(const char *name, size_t n, unsigned seed,
		   unsigned char *data)
{
	aftd_write_npy(dir, name, n, seed);
	for (size_t i = 0; data && i < n; i++)
		data[i] = (unsigned char)(seed + i);
}

/* Members m0 .. m{n-1} of @p each bytes, seeds far apart so that bytes
 * shifted across a boundary differ; their data into @p want. */
static void many_members(size_t n, size_t each, unsigned char *want)
{
	char name[32];
	for (size_t i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "m%zu.npy", i);
		member(name, each, (unsigned)(i * 17), want ? want + each * i : NULL);
	}
}

/* LZ4 .ra members a.ra, b.ra ... of 1000 bytes; their data into @p want. */
static void lz4_members(size_t n, unsigned char *want)
{
	char name[8];
	for (size_t i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%c.ra", (char)('a' + i));
		aftd_write_lz4_ra(dir, name, 1000);
	}
	for (size_t i = 0; i < 1000 * n; i++)
		want[i] = (unsigned char)((i % 1000) * 7);
}

/* ---- membership and order ---- */

START_TEST(members_are_the_regular_array_files_in_natural_order)
{
	member("img10.npy", 100, 10, NULL);
	member("img2.npy", 100, 2, NULL);
	member("img1.npy", 100, 1, NULL);
	aftd_write(dir, "notes.txt", "not an array", 12);
	aftd_write(dir, "img3.npy.bak", "not an array", 12);
	ck_assert_int_eq(mkdir(aftd_path(dir, "sub.npy"), 0755), 0);
	ck_assert_int_eq(symlink("img1.npy", aftd_path(dir, "link.npy")), 0);
	/* `names` has a name a line: a name with a line break is no member */
	member("img\n4.npy", 100, 4, NULL);
	expect_text("names", "img1.npy\nimg2.npy\nimg10.npy\n");
	expect_text("shape", "3 100\n");
	expect_text("dtype", "|u1\n");
}
END_TEST

START_TEST(a_name_starting_with_a_dot_is_a_member_like_any_other)
{
	member("a.npy", 10, 0, NULL);
	member(".b.npy", 10, 0, NULL);
	expect_text("names", ".b.npy\na.npy\n");
}
END_TEST

START_TEST(ra_files_are_members_too)
{
	aftd_write_lz4_ra(dir, "b.ra", 100);
	aftd_write_lz4_ra(dir, "a.ra", 100);
	expect_text("names", "a.ra\nb.ra\n");
	/* RawArray is column-major: the new axis is the last */
	expect_text("shape", "100 2\n");
}
END_TEST

START_TEST(fewer_than_two_arrays_are_no_stack)
{
	no_stack();
	member("a.npy", 10, 0, NULL);
	aftd_write(dir, "notes.txt", "text", 4);
	no_stack();
}
END_TEST

START_TEST(a_disagreeing_member_means_no_stack_said_once)
{
	member("a.npy", 10, 0, NULL);
	member("b.npy", 10, 0, NULL);
	member("c.npy", 11, 0, NULL);
	no_stack();
	no_stack();
	char *said = log_said();
	ck_assert_msg(count_of(said, ".stack") == 1 &&
		      count_of(said, "c.npy") == 1 && strstr(said, "shape"),
		      "the log said: %s", said);
	free(said);
	/* and the files under it are not there either */
	char path[] = AFD_STACK_NAME;
	struct afd_id id = { .kind = NK_ENTRY, .entry = AE_DATA, .path = path,
			     .name = "data" };
	struct afd_res r;
	ck_assert_int_eq(afd_resolve(&c, &id, NULL, &r), -ENOENT);
}
END_TEST

START_TEST(an_array_file_that_does_not_parse_means_no_stack)
{
	member("a.npy", 10, 0, NULL);
	member("b.npy", 10, 0, NULL);
	aftd_write(dir, "c.npy", "not an array at all", 19);
	no_stack();
	char *said = log_said();
	ck_assert_msg(strstr(said, "c.npy") != NULL, "the log said: %s", said);
	free(said);
}
END_TEST

START_TEST(a_source_entry_named_stack_wins)
{
	member("a.npy", 10, 0, NULL);
	member("b.npy", 10, 0, NULL);
	aftd_write(dir, ".stack", "mine", 4);
	struct afd_node *n = stack();
	ck_assert_int_eq(n->kind, NK_FILE);
}
END_TEST

/* ---- reads across members ---- */

/* `.stack/data` of @p k members of @p each bytes, read everywhere. */
static void data_is_the_concatenation(size_t k, size_t each)
{
	unsigned char *want = malloc(k * each);
	ck_assert_ptr_nonnull(want);
	many_members(k, each, want);
	struct afd_handle *h = aftd_open(&c, aftd_must(&c, stack(), "data"));
	ck_assert_int_eq(afd_handle_attr(h)->st_size, (off_t)(k * each));
	aftd_expect_reads(&c, h, want, k * each);
	/* every boundary, from just before it to just after it */
	for (size_t i = 1; i < k; i++)
		aftd_expect_read(&c, h, i * each - 3, 6, want, k * each);
	aftd_expect_read(&c, h, each / 2, 2 * each, want, k * each);
	afd_handle_close(h);
	free(want);
}

START_TEST(small_members_read_as_their_concatenation)
{
	data_is_the_concatenation(7, 100);
}
END_TEST

START_TEST(big_members_spliced_read_as_their_concatenation)
{
	data_is_the_concatenation(4, 70000);
}
END_TEST

START_TEST(lz4_members_read_decoded)
{
	unsigned char want[3000];
	lz4_members(3, want);
	struct afd_handle *h = aftd_open(&c, aftd_must(&c, stack(), "data"));
	aftd_expect_reads(&c, h, want, sizeof(want));
	aftd_expect_read(&c, h, 990, 1020, want, sizeof(want));
	afd_handle_close(h);
}
END_TEST

START_TEST(the_npy_view_is_a_header_then_the_members)
{
	unsigned char want[300];
	member("a.npy", 100, 0, want);
	member("b.npy", 100, 1, want + 100);
	member("c.npy", 100, 2, want + 200);
	struct afd_handle *h = aftd_open(&c, aftd_must(&c, stack(), "stack.npy"));
	size_t len;
	unsigned char *npy = aftd_read_ok(&c, h, 0, 1 << 20, &len);
	afd_handle_close(h);
	af_source src;
	af_source_init_mem(&src, npy, len);
	af_array a;
	af_error err;
	ck_assert_int_eq(af_array_parse_named("stack.npy", &src, &a, &err), AF_OK);
	ck_assert_uint_eq(a.ndim, 2);
	ck_assert_uint_eq(a.shape[0], 3);
	ck_assert_uint_eq(a.shape[1], 100);
	ck_assert_uint_eq(a.data_offset + 300, len);
	ck_assert_int_eq(memcmp(npy + a.data_offset, want, 300), 0);
	af_array_free(&a);
	free(npy);
}
END_TEST

/* Members m0..m3 of @p each bytes, `.stack/data` open on them; their
 * data in *want (the caller frees). */
static struct afd_handle *open_four(size_t each, unsigned char **want)
{
	*want = malloc(4 * each);
	ck_assert_ptr_nonnull(*want);
	many_members(4, each, *want);
	return aftd_open(&c, aftd_must(&c, stack(), "data"));
}

/* After member m1 changed as @p change says, reads that touch it give
 * EIO, and reads of the others still give their bytes. */
static void a_changed_member_gives_eio(size_t each, void (*change)(void))
{
	unsigned char *want;
	struct afd_handle *h = open_four(each, &want);
	aftd_expect_read(&c, h, 0, 4 * each, want, 4 * each);
	change();
	aftd_expect_eio(&c, h, each, 10);
	aftd_expect_eio(&c, h, each - 5, 10);
	aftd_expect_eio(&c, h, 0, 4 * each);
	aftd_expect_read(&c, h, 0, each, want, 4 * each);
	aftd_expect_read(&c, h, 2 * each, 2 * each, want, 4 * each);
	afd_handle_close(h);
	free(want);
}

static void shrink_m1(void)
{
	ck_assert_int_eq(truncate(aftd_path(dir, "m1.npy"), 100), 0);
}

static void rewrite_m1(void)
{
	struct stat st = aftd_lstat(dir, "m1.npy");
	aftd_rewrite_npy(dir, "m1.npy", (size_t)st.st_size - 128);
	ck_assert_int_eq(aftd_lstat(dir, "m1.npy").st_size, st.st_size);
}

START_TEST(a_small_member_that_shrinks_under_a_read_gives_eio)
{
	a_changed_member_gives_eio(1000, shrink_m1);
}
END_TEST

START_TEST(a_big_member_that_shrinks_under_a_read_gives_eio)
{
	a_changed_member_gives_eio(70000, shrink_m1);
}
END_TEST

START_TEST(a_small_member_rewritten_with_its_size_gives_eio)
{
	a_changed_member_gives_eio(1000, rewrite_m1);
}
END_TEST

START_TEST(a_big_member_rewritten_with_its_size_gives_eio)
{
	a_changed_member_gives_eio(70000, rewrite_m1);
}
END_TEST

START_TEST(a_member_gone_before_its_first_read_gives_eio)
{
	unsigned char *want;
	struct afd_handle *h = open_four(1000, &want);
	ck_assert_int_eq(unlink(aftd_path(dir, "m2.npy")), 0);
	aftd_expect_read(&c, h, 0, 2000, want, 4000);
	aftd_expect_eio(&c, h, 2000, 100);
	afd_handle_close(h);
	free(want);
}
END_TEST

START_TEST(an_lz4_member_that_shrinks_under_a_read_gives_eio)
{
	unsigned char want[2000];
	lz4_members(2, want);
	struct afd_handle *h = aftd_open(&c, aftd_must(&c, stack(), "data"));
	ck_assert_int_eq(truncate(aftd_path(dir, "b.ra"), 500), 0);
	aftd_expect_eio(&c, h, 1000, 10);
	aftd_expect_eio(&c, h, 990, 20);
	aftd_expect_read(&c, h, 0, 1000, want, sizeof(want));
	afd_handle_close(h);
}
END_TEST

/* More members than AFD_STACK_AHEAD_MIN: their headers are read ahead
 * by worker threads, and a sequential reader's member opens too. */
START_TEST(many_members_read_ahead_read_as_their_concatenation)
{
	enum { N = AFD_STACK_AHEAD_MIN + AFD_STACK_AHEAD_WINDOW + 50 };
	static unsigned char want[10 * N];
	many_members(N, 10, want);
	int before = aft_fd_count();
	struct afd_handle *h = aftd_open(&c, aftd_must(&c, stack(), "data"));
	/* in order, a few members a read, as a reader streaming it */
	for (size_t off = 0; off < sizeof(want); off += 35)
		aftd_expect_read(&c, h, off, 35, want, sizeof(want));
	aftd_expect_read(&c, h, 0, sizeof(want), want, sizeof(want));
	afd_handle_close(h);
	/* member fds kept are bounded */
	ck_assert_int_le(aft_fd_count(), before + (int)AFD_MFD_SLOTS + 4);
	char shape[32];
	snprintf(shape, sizeof(shape), "%d 10\n", N);
	expect_text("shape", shape);
}
END_TEST

START_TEST(many_members_one_disagreeing_late_means_no_stack_and_no_fd_kept)
{
	enum { N = AFD_STACK_AHEAD_MIN + AFD_STACK_AHEAD_WINDOW + 50 };
	/* bigger than a header's prefix: read ahead, they stay open */
	many_members(N, 2 * AF_HEAD_BYTES, NULL);
	member("m300.npy", 11, 0, NULL);   /* past the first window */
	int before = aft_fd_count();
	no_stack();
	ck_assert_int_eq(aft_fd_count(), before);
	char *said = log_said();
	ck_assert_msg(strstr(said, "m300.npy") != NULL, "the log said: %s", said);
	free(said);
}
END_TEST

/* B.zarr/ of a stack: chunks of whole rows, across members. */
START_TEST(zarr_chunks_of_a_stack_span_members)
{
	c.opts.zarr_chunk = 250;       /* two rows of 100 a chunk */
	unsigned char want[500];
	char name[16];
	many_members(5, 100, want);
	struct afd_node *z = aftd_must(&c, stack(), "stack.zarr");
	unsigned char chunk[200];
	for (size_t k = 0; k < 3; k++) {
		memset(chunk, 0, sizeof(chunk));
		memcpy(chunk, want + 200 * k, k < 2 ? 200 : 100);
		snprintf(name, sizeof(name), "%zu.0", k);
		struct afd_handle *h = aftd_open(&c, aftd_must(&c, z, name));
		aftd_expect_reads(&c, h, chunk, sizeof(chunk));
		afd_handle_close(h);
	}
}
END_TEST

/* ---- npz folders ---- */

/* x.npz of members c, a, b.npy (each @p each bytes, stored or deflated),
 * notes.txt and sub/d.npy, sub/e.npy; a, b, c's data in @p want. */
static void write_npz(size_t each, int level, unsigned char *want)
{
	size_t len[5];
	unsigned char *npy[5];
	for (size_t i = 0; i < 5; i++)
		npy[i] = aftd_npy_bytes(each, (unsigned)(i * 7), &len[i]);
	/* a, b, c are npy[1], npy[2], npy[0] */
	for (size_t i = 0; i < 3; i++)
		memcpy(want + i * each, npy[(i + 1) % 3] + len[0] - each, each);
	struct aft_zip_member m[] = {
		{ "c.npy", npy[0], len[0], level },
		{ "notes.txt", (const unsigned char *)"notes", 5, level },
		{ "a.npy", npy[1], len[1], level },
		{ "sub/d.npy", npy[3], len[3], level },
		{ "b.npy", npy[2], len[2], level },
		{ "sub/e.npy", npy[4], len[4], level },
	};
	size_t zlen;
	unsigned char *zip = aft_zip(m, sizeof(m) / sizeof(m[0]), &zlen);
	aftd_write(dir, "x.npz", zip, zlen);
	free(zip);
	for (size_t i = 0; i < 5; i++)
		free(npy[i]);
}

/* `.stack/` of folder @p folder of x.npz (NULL: its root). */
static struct afd_node *npz_stack(const char *folder)
{
	struct afd_node *n = aftd_must(&c, c.nodes.root, "x.npz");
	ck_assert_int_eq(n->kind, NK_NPZDIR);
	if (folder)
		n = aftd_must(&c, n, folder);
	return aftd_must(&c, n, AFD_STACK_NAME);
}

static void npz_members_read_as_their_concatenation(size_t each, int level)
{
	unsigned char *want = malloc(3 * each);
	ck_assert_ptr_nonnull(want);
	write_npz(each, level, want);
	struct afd_node *s = npz_stack(NULL);
	struct afd_handle *h = aftd_open(&c, aftd_must(&c, s, "names"));
	aftd_expect_read(&c, h, 0, 100, (const unsigned char *)
			 "a.npy\nb.npy\nc.npy\n", 18);
	afd_handle_close(h);
	h = aftd_open(&c, aftd_must(&c, s, "data"));
	aftd_expect_reads(&c, h, want, 3 * each);
	aftd_expect_read(&c, h, each - 3, 6, want, 3 * each);
	aftd_expect_read(&c, h, each / 2, 2 * each, want, 3 * each);
	/* the archive changed under it: EIO, never other bytes */
	ck_assert_int_eq(truncate(aftd_path(dir, "x.npz"), 3 * each), 0);
	aftd_expect_eio(&c, h, 0, 3 * each);
	aftd_expect_eio(&c, h, each, 10);
	afd_handle_close(h);
	free(want);
}

START_TEST(stored_npz_members_read_as_their_concatenation)
{
	npz_members_read_as_their_concatenation(1000, -1);
}
END_TEST

START_TEST(big_stored_npz_members_spliced_read_as_their_concatenation)
{
	npz_members_read_as_their_concatenation(70000, -1);
}
END_TEST

START_TEST(deflated_npz_members_read_inflated)
{
	npz_members_read_as_their_concatenation(70000, 6);
}
END_TEST

START_TEST(an_npz_folder_has_a_stack_of_its_own)
{
	unsigned char want[300];
	write_npz(100, -1, want);
	struct afd_node *s = npz_stack("sub");
	struct afd_handle *h = aftd_open(&c, aftd_must(&c, s, "names"));
	aftd_expect_read(&c, h, 0, 100, (const unsigned char *)"d.npy\ne.npy\n",
			 12);
	afd_handle_close(h);
}
END_TEST

/* ---- versions ---- */

/* The version `.stack/data` serves now, looked up afresh. */
static uint64_t data_version(void)
{
	return aftd_must(&c, stack(), "data")->version;
}

START_TEST(a_member_added_gives_a_new_stack_at_the_next_lookup)
{
	member("a.npy", 10, 0, NULL);
	member("b.npy", 10, 0, NULL);
	uint64_t v1 = data_version();
	ck_assert_uint_eq(data_version(), v1);
	struct afd_handle *old = aftd_open(&c, aftd_must(&c, stack(), "data"));
	member("c.npy", 10, 0, NULL);
	ck_assert_uint_ne(data_version(), v1);
	expect_text("names", "a.npy\nb.npy\nc.npy\n");
	expect_text("shape", "3 10\n");
	/* an open file of the old stack still reads the old one */
	ck_assert_int_eq(afd_handle_attr(old)->st_size, 20);
	size_t len;
	free(aftd_read_ok(&c, old, 0, 100, &len));
	ck_assert_uint_eq(len, 20);
	afd_handle_close(old);
}
END_TEST

START_TEST(a_member_removed_gives_a_new_stack_at_the_next_lookup)
{
	member("a.npy", 10, 0, NULL);
	member("b.npy", 10, 0, NULL);
	member("c.npy", 10, 0, NULL);
	uint64_t v1 = data_version();
	ck_assert_int_eq(unlink(aftd_path(dir, "b.npy")), 0);
	ck_assert_uint_ne(data_version(), v1);
	expect_text("names", "a.npy\nc.npy\n");
	ck_assert_int_eq(unlink(aftd_path(dir, "c.npy")), 0);
	no_stack();
}
END_TEST

START_TEST(a_member_renamed_gives_a_new_stack_at_the_next_lookup)
{
	member("a.npy", 10, 0, NULL);
	member("b.npy", 10, 0, NULL);
	uint64_t v1 = data_version();
	char *from = strdup(aftd_path(dir, "a.npy"));
	ck_assert_ptr_nonnull(from);
	ck_assert_int_eq(rename(from, aftd_path(dir, "c.npy")), 0);
	free(from);
	ck_assert_uint_ne(data_version(), v1);
	expect_text("names", "b.npy\nc.npy\n");
}
END_TEST

/* A member rewritten in place moves no folder time: the change comes as
 * an inotify event, which the notify thread hands to afd_stack_changed. */
START_TEST(a_member_changed_in_place_gives_a_new_stack_once_told)
{
	member("a.npy", 10, 0, NULL);
	member("b.npy", 10, 0, NULL);
	uint64_t v1 = data_version();
	aftd_rewrite_npy(dir, "b.npy", 10);
	char *inval = afd_stack_changed(&c, "b.npy");
	ck_assert_str_eq(inval, AFD_STACK_NAME);
	free(inval);
	uint64_t v2 = data_version();
	ck_assert_uint_ne(v2, v1);
	/* a member that changes so that it disagrees: no stack any more */
	aftd_rewrite_npy(dir, "b.npy", 12);
	free(afd_stack_changed(&c, "b.npy"));
	no_stack();
}
END_TEST

/* Where changes are not pushed (no inotify, a network file system), a
 * verdict lives AFD_STACK_UNWATCHED_MS on the clock. */
START_TEST(an_unwatched_folders_verdict_lives_a_while_only)
{
	c.nodes.root->watched = false;
	member("a.npy", 10, 0, NULL);
	member("b.npy", 10, 0, NULL);
	uint64_t v1 = data_version();
	aftd_rewrite_npy(dir, "b.npy", 10);
	clk.now_ms += AFD_STACK_UNWATCHED_MS - 1;
	ck_assert_uint_eq(data_version(), v1);
	clk.now_ms += 1;
	ck_assert_uint_ne(data_version(), v1);
}
END_TEST

/* Every scan says so in a debug line (stackscan.c). */
START_TEST(an_unchanged_folder_is_scanned_once)
{
	c.log.debug = true;
	member("a.npy", 10, 0, NULL);
	member("b.npy", 10, 0, NULL);
	for (int k = 0; k < 3; k++) {
		struct afd_node *data = aftd_must(&c, stack(), "data");
		afd_handle_close(aftd_open(&c, data));
	}
	clk.now_ms += 10 * AFD_STACK_UNWATCHED_MS;   /* watched: no expiry */
	stack();
	char *said = log_said();
	ck_assert_msg(count_of(said, "members listed") == 1, "the log said: %s",
		      said);
	free(said);
	member("c.npy", 10, 0, NULL);
	stack();
	said = log_said();
	ck_assert_msg(count_of(said, "members listed") == 2, "the log said: %s",
		      said);
	free(said);
}
END_TEST

static Suite *stack_suite(void)
{
	Suite *s = suite_create("daemon_stack");
	TCase *tc = tcase_create("members");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, members_are_the_regular_array_files_in_natural_order);
	tcase_add_test(tc, a_name_starting_with_a_dot_is_a_member_like_any_other);
	tcase_add_test(tc, ra_files_are_members_too);
	tcase_add_test(tc, fewer_than_two_arrays_are_no_stack);
	tcase_add_test(tc, a_disagreeing_member_means_no_stack_said_once);
	tcase_add_test(tc, an_array_file_that_does_not_parse_means_no_stack);
	tcase_add_test(tc, a_source_entry_named_stack_wins);
	suite_add_tcase(s, tc);

	tc = tcase_create("read");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, small_members_read_as_their_concatenation);
	tcase_add_test(tc, big_members_spliced_read_as_their_concatenation);
	tcase_add_test(tc, lz4_members_read_decoded);
	tcase_add_test(tc, the_npy_view_is_a_header_then_the_members);
	tcase_add_test(tc, a_small_member_that_shrinks_under_a_read_gives_eio);
	tcase_add_test(tc, a_big_member_that_shrinks_under_a_read_gives_eio);
	tcase_add_test(tc, a_small_member_rewritten_with_its_size_gives_eio);
	tcase_add_test(tc, a_big_member_rewritten_with_its_size_gives_eio);
	tcase_add_test(tc, a_member_gone_before_its_first_read_gives_eio);
	tcase_add_test(tc, an_lz4_member_that_shrinks_under_a_read_gives_eio);
	tcase_add_test(tc, many_members_read_ahead_read_as_their_concatenation);
	tcase_add_test(tc, many_members_one_disagreeing_late_means_no_stack_and_no_fd_kept);
	tcase_add_test(tc, zarr_chunks_of_a_stack_span_members);
	suite_add_tcase(s, tc);

	tc = tcase_create("npz");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, stored_npz_members_read_as_their_concatenation);
	tcase_add_test(tc, big_stored_npz_members_spliced_read_as_their_concatenation);
	tcase_add_test(tc, deflated_npz_members_read_inflated);
	tcase_add_test(tc, an_npz_folder_has_a_stack_of_its_own);
	suite_add_tcase(s, tc);

	tc = tcase_create("versions");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, a_member_added_gives_a_new_stack_at_the_next_lookup);
	tcase_add_test(tc, a_member_removed_gives_a_new_stack_at_the_next_lookup);
	tcase_add_test(tc, a_member_renamed_gives_a_new_stack_at_the_next_lookup);
	tcase_add_test(tc, a_member_changed_in_place_gives_a_new_stack_once_told);
	tcase_add_test(tc, an_unwatched_folders_verdict_lives_a_while_only);
	tcase_add_test(tc, an_unchanged_folder_is_scanned_once);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return aft_run(stack_suite());
}
