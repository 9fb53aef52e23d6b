/* SPDX-License-Identifier: MIT */
/* Tests for src/daemon/tree.c: names resolved against their sources. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon_test.h"
#include "srcpath.h"

static struct afd_ctx c;

/* The numpy-written corpus of the mount tests, read-only. */
static void setup(void)
{
	aftd_ctx_open(&c, aft_fixture("mount/corpus"), NULL);
}

static void teardown(void)
{
	afd_ctx_destroy(&c);
}

static int lookup_rc(struct afd_node *parent, const char *name)
{
	int rc = 0;
	struct afd_node *n = aftd_lookup(&c, parent, name, &rc, NULL);
	ck_assert_ptr_null(n);
	return rc;
}

static struct afd_node *lookup_attr(struct afd_node *parent, const char *name,
				    struct stat *st)
{
	int rc = 0;
	struct afd_node *n = aftd_lookup(&c, parent, name, &rc, st);
	ck_assert_msg(n != NULL, "%s: %s", name, strerror(-rc));
	return n;
}

/* The lstat of corpus file @p rel. */
static struct stat corpus_stat(const char *rel)
{
	struct stat st;
	ck_assert_int_eq(fstatat(c.root.fd, rel, &st, AT_SYMLINK_NOFOLLOW), 0);
	return st;
}

START_TEST(folders_and_array_files_become_folders)
{
	struct stat st;
	struct afd_node *dt = lookup_attr(c.nodes.root, "dtypes", &st);
	ck_assert_int_eq(dt->kind, NK_DIR);
	ck_assert(S_ISDIR(st.st_mode));
	struct afd_node *f8 = lookup_attr(dt, "f8_le.npy", &st);
	ck_assert_int_eq(f8->kind, NK_ARRAY);
	ck_assert_str_eq(f8->path, "dtypes/f8_le.npy");
	ck_assert_ptr_null(f8->member);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_uint_eq(st.st_mode & 0777, 0555);   /* from the file's 0644 */
	ck_assert_uint_eq(st.st_ino, afd_ino_of("dtypes/f8_le.npy", NULL, AE_NONE));
	static const struct { const char *name; enum afd_entry e; } ents[] = {
		{ "data", AE_DATA }, { "shape", AE_SHAPE }, { "dtype", AE_DTYPE },
		{ "header", AE_HEADER }, { "f8_le.npy", AE_NPY },
		{ "f8_le.ra", AE_RA },
	};
	off_t sizes[AE_COUNT] = { 0 };
	for (size_t i = 0; i < sizeof(ents) / sizeof(ents[0]); i++) {
		struct afd_node *e = lookup_attr(f8, ents[i].name, &st);
		ck_assert_int_eq(e->kind, NK_ENTRY);
		ck_assert_int_eq(e->entry, ents[i].e);
		ck_assert(S_ISREG(st.st_mode));
		ck_assert_uint_eq(st.st_mode & 0777, 0444);
		sizes[ents[i].e] = st.st_size;
	}
	/* a little-endian .npy: B.npy is the file, data its tail */
	off_t file = corpus_stat("dtypes/f8_le.npy").st_size;
	ck_assert_int_eq(sizes[AE_NPY], file);
	struct afd_id id = afd_id_of(f8);
	struct afd_res r;
	ck_assert_int_eq(afd_resolve(&c, &id, NULL, &r), 0);
	ck_assert_int_gt(sizes[AE_DATA], 0);
	ck_assert_uint_eq(r.ai->a.data_size, (uint64_t)sizes[AE_DATA]);
	ck_assert_uint_eq(r.ai->offset + r.ai->a.data_size, (uint64_t)file);
	afd_res_release(&r);
	ck_assert_int_eq(lookup_rc(f8, "f8_le.txt"), -ENOENT);
	ck_assert_int_eq(lookup_rc(f8, "other.npy"), -ENOENT);
	/* an object array has B.npy, and no data */
	struct afd_node *obj = lookup_attr(dt, "object.npy", &st);
	ck_assert_int_eq(obj->kind, NK_ARRAY);
	ck_assert_int_eq(lookup_rc(obj, "data"), -ENOENT);
	ck_assert_int_eq(aftd_must(&c, obj, "object.npy")->entry, AE_NPY);
}
END_TEST

START_TEST(npz_members_are_folders_arrays_and_files)
{
	struct stat st;
	struct afd_node *npz = aftd_must(&c, c.nodes.root, "npz");
	struct afd_node *mixed = lookup_attr(npz, "mixed.npz", &st);
	ck_assert_int_eq(mixed->kind, NK_NPZDIR);
	ck_assert_str_eq(mixed->member, "");
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_uint_eq(st.st_nlink, 3);            /* . .. and meta/ */
	struct afd_node *first = aftd_must(&c, mixed, "first.npy");
	ck_assert_int_eq(first->kind, NK_ARRAY);
	ck_assert_str_eq(first->member, "first.npy");
	struct afd_node *data = aftd_must(&c, first, "data");
	ck_assert_int_eq(data->kind, NK_ENTRY);
	ck_assert_str_eq(data->member, "first.npy");
	ck_assert_uint_ne(data->version, 0);
	struct afd_node *notes = lookup_attr(mixed, "notes.txt", &st);
	ck_assert_int_eq(notes->kind, NK_MEMBER);
	ck_assert_int_eq(st.st_size, 13);
	struct afd_node *meta = aftd_must(&c, mixed, "meta");
	ck_assert_int_eq(meta->kind, NK_NPZDIR);
	ck_assert_str_eq(meta->member, "meta/");
	struct afd_node *info = lookup_attr(meta, "info.json", &st);
	ck_assert_int_eq(info->kind, NK_MEMBER);
	ck_assert_str_eq(info->member, "meta/info.json");
	ck_assert_int_eq(st.st_size, 197);            /* inflated */
	ck_assert_int_eq(lookup_rc(mixed, "nothing"), -ENOENT);
	ck_assert_int_eq(lookup_rc(mixed, "first"), -ENOENT);
	ck_assert_int_eq(lookup_rc(meta, "first.npy"), -ENOENT);
	/* a key with slashes: folders down to the array */
	struct afd_node *stored = aftd_must(&c, npz, "stored.npz");
	struct afd_node *b = aftd_must(&c, aftd_must(&c, stored, "a"), "b");
	ck_assert_str_eq(b->member, "a/b/");
	struct afd_node *cc = aftd_must(&c, b, "c.npy");
	ck_assert_int_eq(cc->kind, NK_ARRAY);
	ck_assert_str_eq(cc->member, "a/b/c.npy");
	ck_assert_int_eq(aftd_must(&c, cc, "c.ra")->entry, AE_RA);
}
END_TEST

START_TEST(broken_array_files_are_plain_files)
{
	struct stat st;
	struct afd_node *broken = aftd_must(&c, c.nodes.root, "broken");
	struct afd_node *bad = lookup_attr(broken, "bad-magic.npy", &st);
	ck_assert_int_eq(bad->kind, NK_FILE);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_int_eq(st.st_size, corpus_stat("broken/bad-magic.npy").st_size);
	struct afd_node *npz = aftd_must(&c, c.nodes.root, "npz");
	ck_assert_int_eq(aftd_must(&c, npz, "not-a-zip.npz")->kind, NK_FILE);
	/* nothing is looked up inside a file */
	ck_assert_int_eq(lookup_rc(bad, "data"), -ENOTDIR);
}
END_TEST

START_TEST(symlinks_stay_symlinks_and_missing_names_are_enoent)
{
	struct stat st;
	struct afd_node *l = lookup_attr(c.nodes.root, "link-to-f8.npy", &st);
	ck_assert_int_eq(l->kind, NK_LINK);
	ck_assert(S_ISLNK(st.st_mode));
	ck_assert_int_eq(st.st_size, strlen("dtypes/f8_le.npy"));
	ck_assert_int_eq(aftd_must(&c, c.nodes.root, "dangling-link")->kind,
			 NK_LINK);
	ck_assert_int_eq(lookup_rc(l, "data"), -ENOTDIR);
	ck_assert_int_eq(lookup_rc(c.nodes.root, "no-such-name"), -ENOENT);
	ck_assert_int_eq(lookup_rc(c.nodes.root, "no-such.npy"), -ENOENT);
	struct afd_node *f8 = aftd_must(&c, aftd_must(&c, c.nodes.root, "dtypes"),
					"f8_le.npy");
	ck_assert_int_eq(lookup_rc(aftd_must(&c, f8, "data"), "x"), -ENOTDIR);
}
END_TEST

/* A node whose source is no longer what it was resolves as ENOENT. */
START_TEST(stale_nodes_resolve_as_enoent)
{
	char *dir = aftd_tmp_new();
	struct afd_ctx t;
	aftd_ctx_open(&t, dir, NULL);
	ck_assert_int_eq(mkdir(aftd_path(dir, "sub"), 0755), 0);
	aftd_write_npy(dir, "a.npy", 8, 0);
	struct afd_node *sub = aftd_must(&t, t.nodes.root, "sub");
	struct afd_node *a = aftd_must(&t, t.nodes.root, "a.npy");
	struct afd_node *shape = aftd_must(&t, a, "shape");
	struct afd_id id;
	struct afd_res r;
	id = afd_id_of(shape);
	ck_assert_int_eq(afd_resolve(&t, &id, NULL, &r), 0);
	ck_assert_ptr_nonnull(r.ai);
	afd_res_release(&r);
	ck_assert_int_eq(rmdir(aftd_path(dir, "sub")), 0);
	aftd_write(dir, "sub", "now a file", 10);
	aftd_write(dir, "a.npy", "broken now", 10);
	id = afd_id_of(sub);
	ck_assert_int_eq(afd_resolve(&t, &id, NULL, &r), -ENOENT);
	id = afd_id_of(a);
	ck_assert_int_eq(afd_resolve(&t, &id, NULL, &r), -ENOENT);
	id = afd_id_of(shape);
	int fd = 7;
	ck_assert_int_eq(afd_resolve(&t, &id, &fd, &r), -ENOENT);
	ck_assert_int_eq(fd, -1);
	/* and a new lookup says what they are now */
	ck_assert_int_eq(aftd_must(&t, t.nodes.root, "sub")->kind, NK_FILE);
	ck_assert_int_eq(aftd_must(&t, t.nodes.root, "a.npy")->kind, NK_FILE);
	afd_ctx_destroy(&t);
	aftd_tmp_free(dir);
}
END_TEST

/* The codec's name rule (af_array_name_kind) decides, not a suffix test:
 * valid arrays named just ".npy" or ".ra", or "x.NPY", are plain files,
 * and "..npy" (B = ".") an array folder of "..npy", "..ra". */
START_TEST(only_array_names_become_array_folders)
{
	char *dir = aftd_tmp_new();
	struct afd_ctx t;
	aftd_ctx_open(&t, dir, NULL);
	const char *plain[] = { ".npy", "x.NPY", "x.npy.bak" };
	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
		aftd_write_npy(dir, plain[i], 8, 0);
		ck_assert_msg(aftd_must(&t, t.nodes.root, plain[i])->kind ==
			      NK_FILE, "%s", plain[i]);
	}
	aftd_write_lz4_ra(dir, ".ra", 8);
	ck_assert_int_eq(aftd_must(&t, t.nodes.root, ".ra")->kind, NK_FILE);
	aftd_write_npy(dir, "..npy", 8, 0);
	struct afd_node *dots = aftd_must(&t, t.nodes.root, "..npy");
	ck_assert_int_eq(dots->kind, NK_ARRAY);
	ck_assert_int_eq(aftd_must(&t, dots, "..npy")->entry, AE_NPY);
	ck_assert_int_eq(aftd_must(&t, dots, "..ra")->entry, AE_RA);
	afd_ctx_destroy(&t);
	aftd_tmp_free(dir);
}
END_TEST

/*
 * The own-mount rule with a stand-in: a context over "/" that takes /proc
 * for its own mount. /proc must then look like an empty folder, and
 * nothing below it may be looked up.
 */
START_TEST(the_own_mount_is_an_empty_folder_never_entered)
{
	struct afd_ctx t;
	aftd_ctx_open(&t, "/", NULL);
	/* before it is ours, /proc is a folder like another */
	struct afd_node *proc = aftd_must(&t, t.nodes.root, "proc");
	ck_assert_int_eq(proc->kind, NK_DIR);
	ck_assert_int_eq(aftd_must(&t, proc, "self")->kind, NK_LINK);

	int pfd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(pfd, 0);
	struct stat pst, rst;
	ck_assert_int_eq(fstat(pfd, &pst), 0);
	ck_assert_int_eq(fstat(t.root.fd, &rst), 0);
	t.root.own_mnt_id = afd_mnt_id_of_fd(pfd);
	t.root.own_dev = pst.st_dev;
	close(pfd);
	ck_assert_int_ge(t.root.own_mnt_id, 0);
	ck_assert_int_ne(t.root.own_mnt_id, afd_mnt_id_of_fd(t.root.fd));

	struct stat st;
	int rc;
	struct afd_node *own = aftd_lookup(&t, t.nodes.root, "proc", &rc, &st);
	ck_assert_ptr_eq(own, proc);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_int_eq(st.st_size, 0);
	ck_assert_uint_eq(st.st_mtim.tv_sec, rst.st_mtim.tv_sec);
	rc = 0;
	ck_assert_ptr_null(aftd_lookup(&t, proc, "self", &rc, NULL));
	ck_assert_int_eq(rc, -ENOENT);
	ck_assert_ptr_null(aftd_lookup(&t, proc, "cpuinfo", &rc, NULL));
	ck_assert_int_eq(rc, -ENOENT);
	/* a source below it is not opened either */
	struct afd_src *sf = NULL;
	ck_assert_int_eq(afd_src_get(&t, "proc/x.npy", NULL, NULL, &sf), -ENOENT);
	afd_ctx_destroy(&t);
}
END_TEST

static Suite *tree_suite(void)
{
	Suite *s = suite_create("daemon_tree");
	TCase *tc = tcase_create("corpus");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, folders_and_array_files_become_folders);
	tcase_add_test(tc, npz_members_are_folders_arrays_and_files);
	tcase_add_test(tc, broken_array_files_are_plain_files);
	tcase_add_test(tc, symlinks_stay_symlinks_and_missing_names_are_enoent);
	suite_add_tcase(s, tc);
	TCase *own = tcase_create("own");
	tcase_add_test(own, stale_nodes_resolve_as_enoent);
	tcase_add_test(own, only_array_names_become_array_folders);
	tcase_add_test(own, the_own_mount_is_an_empty_folder_never_entered);
	suite_add_tcase(s, own);
	return s;
}

int main(void)
{
	return aft_run(tree_suite());
}
