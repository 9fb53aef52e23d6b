/* SPDX-License-Identifier: MIT */
/* Tests for src/daemon/dirs.c: listings of mirrored, npz, array and
 * B.zarr/ folders, plain and readdirplus, in one go or resumed at any
 * offset. Nothing mounted: the buffers the kernel would get are parsed
 * here (its dirent layout, linux/fuse.h). */
#include <dirent.h>
#include <errno.h>
#include <linux/fuse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon_test.h"
#include "dirahead.h"
#include "dirs.h"
#include "srcfile.h"

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

#define MAX_NAMES 256

/* A listing as the kernel would read it. */
struct listing {
	size_t n;
	char *name[MAX_NAMES];
	uint64_t ino[MAX_NAMES];
	unsigned type[MAX_NAMES];
	bool has_entry[MAX_NAMES];     /* readdirplus: a node came with it */
	size_t entries_asked;          /* calls of the entry function */
};

static void listing_free(struct listing *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->name[i]);
	memset(l, 0, sizeof(*l));
}

/* readdirplus's entry function: a lookup of the name, as ops.c makes it. */
static bool entry_of(void *arg, const char *name, struct fuse_entry_param *e)
{
	void **a = arg;
	struct afd_node *parent = a[0];
	struct listing *l = a[1];
	l->entries_asked++;
	struct stat st;
	int rc;
	struct afd_node *n = aftd_lookup(&c, parent, name, &rc, &st);
	if (!n)
		return false;
	memset(e, 0, sizeof(*e));
	e->ino = afd_nodes_id(&c.nodes, n);
	e->attr = st;
	return true;
}

/* Parse @p used bytes of a filled buffer into @p l; the last entry's
 * next offset into *@p next. */
static void parse(struct listing *l, const char *buf, size_t used, bool plus,
		  off_t *next)
{
	size_t at = 0;
	while (at < used) {
		const struct fuse_dirent *d;
		bool entry = false;
		size_t size;
		if (plus) {
			const struct fuse_direntplus *dp = (const void *)(buf + at);
			d = &dp->dirent;
			entry = dp->entry_out.nodeid != 0;
			size = FUSE_DIRENTPLUS_SIZE(dp);
		} else {
			d = (const void *)(buf + at);
			size = FUSE_DIRENT_SIZE(d);
		}
		ck_assert_uint_lt(l->n, MAX_NAMES);
		l->name[l->n] = strndup(d->name, d->namelen);
		ck_assert_ptr_nonnull(l->name[l->n]);
		l->ino[l->n] = d->ino;
		l->type[l->n] = d->type;
		l->has_entry[l->n] = entry;
		l->n++;
		*next = (off_t)d->off;
		at += size;
	}
	ck_assert_uint_eq(at, used);
}

/* List folder node @p n with buffers of @p bufsize bytes, resuming at
 * each last entry's next offset, as the kernel does. */
static void list(struct afd_node *n, size_t bufsize, bool plus,
		 struct listing *l)
{
	memset(l, 0, sizeof(*l));
	struct afd_dirh *d = NULL;
	ck_assert_int_eq(afd_dir_open(&c, n, &d), 0);
	char *buf = malloc(bufsize);
	ck_assert_ptr_nonnull(buf);
	void *arg[2] = { n, l };
	struct afd_dir_plus p = { entry_of, arg };
	off_t off = 0;
	for (;;) {
		ssize_t used = afd_dir_fill(&c, NULL, d, buf, bufsize, off,
					    plus ? &p : NULL);
		ck_assert_int_ge(used, 0);
		if (used == 0)
			break;
		parse(l, buf, (size_t)used, plus, &off);
	}
	free(buf);
	afd_dir_close(d);
}

/* The index of @p name in @p l, or -1. */
static long find(const struct listing *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->name[i], name) == 0)
			return (long)i;
	return -1;
}

/* @p l holds exactly the names of the NULL-terminated @p want, . and .. */
static void expect_names(const struct listing *l, const char *const *want)
{
	size_t k = 0;
	for (; want[k]; k++)
		ck_assert_msg(find(l, want[k]) >= 0, "%s is not listed", want[k]);
	ck_assert_msg(find(l, ".") >= 0 && find(l, "..") >= 0, "no . or ..");
	ck_assert_uint_eq(l->n, k + 2);
}

/* Every name of @p l but . and .. has the st_ino a lookup gives it. */
static void expect_inos_of_lookups(struct afd_node *parent,
				   const struct listing *l)
{
	for (size_t i = 0; i < l->n; i++) {
		if (!strcmp(l->name[i], ".") || !strcmp(l->name[i], ".."))
			continue;
		struct stat st;
		int rc;
		ck_assert_ptr_nonnull(aftd_lookup(&c, parent, l->name[i], &rc, &st));
		ck_assert_msg(st.st_ino == l->ino[i], "%s: ino %llu listed, %llu "
			      "looked up", l->name[i], (unsigned long long)l->ino[i],
			      (unsigned long long)st.st_ino);
	}
}

static void mirror_folder(void)
{
	aftd_write_npy(dir, "a.npy", 10, 0);
	aftd_write(dir, "b.txt", "text", 4);
	ck_assert_int_eq(mkdir(aftd_path(dir, "sub"), 0755), 0);
	ck_assert_int_eq(symlink("a.npy", aftd_path(dir, "link")), 0);
	size_t len;
	unsigned char *zip = aft_zip_stored("m.npy", (const unsigned char *)"x", 1,
					    &len);
	aftd_write(dir, "x.npz", zip, len);
	free(zip);
}

START_TEST(a_mirrored_folder_lists_its_names_array_files_unknown)
{
	mirror_folder();
	struct listing l;
	list(c.nodes.root, 4096, false, &l);
	static const char *const want[] = { "a.npy", "b.txt", "sub", "link",
					    "x.npz", NULL };
	expect_names(&l, want);
	/* a listing opens nothing: what an array name is waits for a lookup */
	ck_assert_uint_eq(l.type[find(&l, "a.npy")], DT_UNKNOWN);
	ck_assert_uint_eq(l.type[find(&l, "x.npz")], DT_UNKNOWN);
	ck_assert_uint_eq(l.type[find(&l, "b.txt")], DT_REG);
	ck_assert_uint_eq(l.type[find(&l, "sub")], DT_DIR);
	ck_assert_uint_eq(l.type[find(&l, "link")], DT_LNK);
	ck_assert_uint_eq(c.srcs.count, 0);
	expect_inos_of_lookups(c.nodes.root, &l);
	listing_free(&l);
}
END_TEST

START_TEST(an_array_folder_lists_its_entries)
{
	c.opts.zarr_chunk = AF_ZARR_CHUNK_DEFAULT;   /* the daemon's */
	aftd_write_npy(dir, "a.npy", 10, 0);
	struct afd_node *a = aftd_must(&c, c.nodes.root, "a.npy");
	struct listing l;
	list(a, 4096, false, &l);
	static const char *const want[] = { "data", "shape", "dtype", "header",
					    "a.npy", "a.ra", "a.zarr",
					    "data.hdr", "a.nhdr", NULL };
	expect_names(&l, want);
	ck_assert_uint_eq(l.type[find(&l, "a.zarr")], DT_DIR);
	ck_assert_uint_eq(l.type[find(&l, "data")], DT_REG);
	expect_inos_of_lookups(a, &l);
	listing_free(&l);

	/* an object array has no data, B.ra nor B.zarr/ */
	aftd_copy(aft_fixture("npy/object-array.npy"), dir, "o.npy");
	struct afd_node *o = aftd_must(&c, c.nodes.root, "o.npy");
	list(o, 4096, false, &l);
	static const char *const obj[] = { "shape", "dtype", "header", "o.npy",
					   NULL };
	expect_names(&l, obj);
	listing_free(&l);
}
END_TEST

START_TEST(an_npz_folder_lists_its_members_and_folders)
{
	unsigned char *npy;
	size_t len, zlen;
	npy = aftd_npy_bytes(10, 0, &len);
	struct aft_zip_member m[] = {
		{ "b.npy", npy, len, -1 },
		{ "notes.txt", (const unsigned char *)"notes", 5, 6 },
		{ "sub/c.npy", npy, len, 6 },
		{ "sub/deeper/d.npy", npy, len, -1 },
	};
	unsigned char *zip = aft_zip(m, 4, &zlen);
	aftd_write(dir, "x.npz", zip, zlen);
	free(zip);
	free(npy);
	struct afd_node *x = aftd_must(&c, c.nodes.root, "x.npz");
	struct listing l;
	list(x, 4096, false, &l);
	static const char *const top[] = { "b.npy", "notes.txt", "sub", NULL };
	expect_names(&l, top);
	ck_assert_uint_eq(l.type[find(&l, "sub")], DT_DIR);
	ck_assert_uint_eq(l.type[find(&l, "notes.txt")], DT_REG);
	expect_inos_of_lookups(x, &l);
	listing_free(&l);
	struct afd_node *sub = aftd_must(&c, x, "sub");
	list(sub, 4096, false, &l);
	static const char *const inner[] = { "c.npy", "deeper", NULL };
	expect_names(&l, inner);
	expect_inos_of_lookups(sub, &l);
	listing_free(&l);
}
END_TEST

/* B.zarr/ of a.npy, @p n uint8 elements in chunks of @p chunk bytes. */
static struct afd_node *store(size_t n, uint64_t chunk)
{
	c.opts.zarr_chunk = chunk;
	aftd_write_npy(dir, "a.npy", n, 0);
	return aftd_must(&c, aftd_must(&c, c.nodes.root, "a.npy"), "a.zarr");
}

START_TEST(a_zarr_store_lists_its_metadata_and_every_chunk)
{
	struct afd_node *z = store(1000, 100);
	struct listing l;
	list(z, 4096, false, &l);
	static const char *const want[] = { ".zarray", ".zattrs", "zarr.json",
					    "0", "1", "2", "3", "4", "5", "6",
					    "7", "8", "9", NULL };
	expect_names(&l, want);
	expect_inos_of_lookups(z, &l);
	listing_free(&l);
}
END_TEST

/* The same names, in the same order, with the same inode numbers. */
static void expect_same(const struct listing *a, const struct listing *b)
{
	ck_assert_uint_eq(a->n, b->n);
	for (size_t i = 0; i < a->n; i++) {
		ck_assert_str_eq(a->name[i], b->name[i]);
		ck_assert_uint_eq(a->ino[i], b->ino[i]);
	}
}

START_TEST(a_listing_resumed_at_every_entry_is_the_same)
{
	char name[16];
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "f%02d.txt", i);
		aftd_write(dir, name, "x", 1);
	}
	aftd_write_npy(dir, "a.npy", 1000, 0);
	c.opts.zarr_chunk = 10;
	struct afd_node *a = aftd_must(&c, c.nodes.root, "a.npy");
	struct afd_node *nodes[] = { c.nodes.root, a, aftd_must(&c, a, "a.zarr") };
	for (size_t k = 0; k < 3; k++)
		for (int plus = 0; plus < 2; plus++) {
			struct listing whole, piecemeal;
			list(nodes[k], 1 << 16, plus, &whole);
			/* room for one entry at a time */
			list(nodes[k], plus ? 200 : 40, plus, &piecemeal);
			ck_assert_uint_gt(whole.n, 2);
			expect_same(&whole, &piecemeal);
			/* an entry is asked for only when it is sent */
			ck_assert_uint_eq(whole.entries_asked,
					  piecemeal.entries_asked);
			listing_free(&whole);
			listing_free(&piecemeal);
		}
}
END_TEST

START_TEST(readdirplus_gives_entries_where_they_cost_no_parse)
{
	mirror_folder();
	struct listing l;
	list(c.nodes.root, 1 << 16, true, &l);
	/* every name but . and .. and the archive, whose entry would read
	 * its central directory */
	ck_assert(!l.has_entry[find(&l, ".")]);
	ck_assert(!l.has_entry[find(&l, "x.npz")]);
	ck_assert(l.has_entry[find(&l, "a.npy")]);
	ck_assert(l.has_entry[find(&l, "b.txt")]);
	ck_assert(l.has_entry[find(&l, "sub")]);
	ck_assert_uint_eq(l.entries_asked, 4);
	listing_free(&l);

	/* an npz folder lists names alone: an entry would parse every member */
	struct afd_node *x = aftd_must(&c, c.nodes.root, "x.npz");
	list(x, 1 << 16, true, &l);
	ck_assert_int_ge(find(&l, "m.npy"), 0);
	ck_assert_uint_eq(l.entries_asked, 0);
	listing_free(&l);
}
END_TEST

START_TEST(readdirplus_gives_the_entries_of_a_stores_first_names_only)
{
	struct afd_node *z = store(200, 1);
	struct listing l;
	list(z, 1 << 16, true, &l);
	ck_assert_uint_eq(l.n, 2 + 3 + 200);
	ck_assert_uint_eq(l.entries_asked, AFD_ZARR_LISTED_ENTRIES);
	ck_assert(l.has_entry[find(&l, ".zarray")]);
	ck_assert(l.has_entry[find(&l, "60")]);
	ck_assert(!l.has_entry[find(&l, "61")]);
	ck_assert(!l.has_entry[find(&l, "199")]);
	listing_free(&l);
}
END_TEST

START_TEST(files_are_not_listed)
{
	aftd_write_npy(dir, "a.npy", 10, 0);
	struct afd_dirh *d = NULL;
	struct afd_node *data = aftd_must(&c, aftd_must(&c, c.nodes.root,
							"a.npy"), "data");
	ck_assert_int_eq(afd_dir_open(&c, data, &d), -ENOTDIR);
	ck_assert_ptr_null(d);
}
END_TEST

/* The source folder's names in readdir's order, . and .. left out. */
static size_t readdir_order(char **names, size_t max)
{
	DIR *dp = opendir(dir);
	ck_assert_ptr_nonnull(dp);
	size_t n = 0;
	struct dirent *de;
	while ((de = readdir(dp)) && n < max)
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			names[n++] = strdup(de->d_name);
	closedir(dp);
	return n;
}

#define AHEAD_ARRAYS 12

START_TEST(parsing_ahead_fills_the_cache_with_arrays_only)
{
	mirror_folder();
	struct afd_dir_ahead a = { strdup("."), 0, 100 };
	afd_dir_ahead_run(&c, &a);
	ck_assert_ptr_null(a.path);
	ck_assert(afd_src_is_cached(&c, "a.npy"));
	/* an archive is listed by name alone: reading it may cost much */
	ck_assert(!afd_src_is_cached(&c, "x.npz"));
	ck_assert(!afd_src_is_cached(&c, "b.txt"));
}
END_TEST

START_TEST(parsing_ahead_goes_from_the_last_name_back_to_the_listing)
{
	char name[32];
	for (int i = 0; i < AHEAD_ARRAYS; i++) {
		snprintf(name, sizeof(name), "a%02d.npy", i);
		aftd_write_npy(dir, name, 10, (unsigned)i);
	}
	char *order[AHEAD_ARRAYS];
	ck_assert_uint_eq(readdir_order(order, AHEAD_ARRAYS), AHEAD_ARRAYS);
	/* the listing has parsed up to the fifth name */
	size_t met = 4;
	struct afd_src *sf;
	ck_assert_int_eq(afd_src_get(&c, order[met], NULL, NULL, &sf), 0);
	afd_src_put(sf);
	struct afd_dir_ahead a = { strdup("."), 0, AHEAD_ARRAYS };
	afd_dir_ahead_run(&c, &a);
	for (size_t i = 0; i < AHEAD_ARRAYS; i++) {
		ck_assert_msg(afd_src_is_cached(&c, order[i]) == (i >= met),
			      "%s (name %zu)", order[i], i);
		free(order[i]);
	}
}
END_TEST

START_TEST(parsing_ahead_starts_where_the_listing_stopped)
{
	for (int i = 0; i < AHEAD_ARRAYS; i++) {
		char name[32];
		snprintf(name, sizeof(name), "a%02d.npy", i);
		aftd_write_npy(dir, name, 10, (unsigned)i);
	}
	char *order[AHEAD_ARRAYS];
	ck_assert_uint_eq(readdir_order(order, AHEAD_ARRAYS), AHEAD_ARRAYS);
	struct afd_dirh *d;
	ck_assert_int_eq(afd_dir_open(&c, c.nodes.root, &d), 0);
	/* a buffer of . , .. and a few names: one batch */
	char buf[200];
	ssize_t used = afd_dir_fill(&c, NULL, d, buf, sizeof(buf), 0, NULL);
	ck_assert_int_gt(used, 0);
	struct listing l = { 0 };
	off_t next;
	parse(&l, buf, (size_t)used, false, &next);
	size_t sent = 0;   /* . and .. come where the folder's order puts them */
	for (size_t i = 0; i < l.n; i++)
		sent += strcmp(l.name[i], ".") != 0 && strcmp(l.name[i], "..") != 0;
	ck_assert_uint_lt(sent, AHEAD_ARRAYS / 2);
	struct afd_dir_ahead a;
	afd_dir_ahead_of(d, sent, &a);
	ck_assert_str_eq(a.path, ".");
	ck_assert_uint_eq(a.count, sent);
	afd_dir_ahead_run(&c, &a);
	/* the batch after the one sent, and nothing else */
	for (size_t i = 0; i < AHEAD_ARRAYS; i++) {
		bool next_batch = i >= sent && i < 2 * sent;
		ck_assert_msg(afd_src_is_cached(&c, order[i]) == next_batch,
			      "%s (name %zu, %zu sent)", order[i], i, sent);
		free(order[i]);
	}
	listing_free(&l);
	afd_dir_close(d);
}
END_TEST

START_TEST(parsing_ahead_of_an_array_folder_does_nothing)
{
	aftd_write_npy(dir, "a.npy", 10, 0);
	struct afd_node *a = aftd_must(&c, c.nodes.root, "a.npy");
	struct afd_dirh *d;
	ck_assert_int_eq(afd_dir_open(&c, a, &d), 0);
	struct afd_dir_ahead ahead;
	afd_dir_ahead_of(d, 5, &ahead);
	ck_assert_ptr_null(ahead.path);
	afd_dir_ahead_run(&c, &ahead);
	afd_dir_close(d);
}
END_TEST

static Suite *dirs_suite(void)
{
	Suite *s = suite_create("daemon_dirs");
	TCase *tc = tcase_create("list");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, a_mirrored_folder_lists_its_names_array_files_unknown);
	tcase_add_test(tc, an_array_folder_lists_its_entries);
	tcase_add_test(tc, an_npz_folder_lists_its_members_and_folders);
	tcase_add_test(tc, a_zarr_store_lists_its_metadata_and_every_chunk);
	tcase_add_test(tc, a_listing_resumed_at_every_entry_is_the_same);
	tcase_add_test(tc, readdirplus_gives_entries_where_they_cost_no_parse);
	tcase_add_test(tc, readdirplus_gives_the_entries_of_a_stores_first_names_only);
	tcase_add_test(tc, files_are_not_listed);
	tcase_add_test(tc, parsing_ahead_fills_the_cache_with_arrays_only);
	tcase_add_test(tc, parsing_ahead_goes_from_the_last_name_back_to_the_listing);
	tcase_add_test(tc, parsing_ahead_starts_where_the_listing_stopped);
	tcase_add_test(tc, parsing_ahead_of_an_array_folder_does_nothing);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return aft_run(dirs_suite());
}
