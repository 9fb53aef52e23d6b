/* SPDX-License-Identifier: MIT */
/* Tests for src/daemon/handle.c and handle_read.c: opening every kind of
 * file, reading it at any offset, a source changed under an open file,
 * release. Nothing mounted: the handlers' calls are made directly. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arrayfs/arrayfs.h"
#include "daemon_test.h"
#include "fail.h"
#include "handle.h"

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

/* Node @p entry of array folder @p name in the root. */
static struct afd_node *entry(const char *name, const char *entry)
{
	return aftd_must(&c, aftd_must(&c, c.nodes.root, name), entry);
}

/* The npy bytes of aftd_npy_bytes(@p n, @p seed) and where its data starts. */
static unsigned char *npy_of(size_t n, unsigned seed, size_t *len,
			     size_t *data_off)
{
	unsigned char *b = aftd_npy_bytes(n, seed, len);
	*data_off = *len - n;
	return b;
}

START_TEST(npy_data_reads_the_sources_bytes_at_any_offset)
{
	size_t len, off;
	unsigned char *npy = npy_of(100000, 3, &len, &off);
	aftd_write(dir, "a.npy", npy, len);
	struct afd_handle *h = aftd_open(&c, entry("a.npy", "data"));
	ck_assert_int_eq(afd_handle_attr(h)->st_size, 100000);
	aftd_expect_reads(&c, h, npy + off, 100000);
	afd_handle_close(h);
	free(npy);
}
END_TEST

START_TEST(npy_views_are_the_file_and_a_rawarray_of_its_data)
{
	size_t len, off;
	unsigned char *npy = npy_of(30000, 9, &len, &off);
	aftd_write(dir, "a.npy", npy, len);
	struct afd_handle *h = aftd_open(&c, entry("a.npy", "a.npy"));
	aftd_expect_reads(&c, h, npy, len);
	afd_handle_close(h);

	h = aftd_open(&c, entry("a.npy", "a.ra"));
	size_t ralen;
	unsigned char *ra = aftd_read_ok(&c, h, 0, 1 << 20, &ralen);
	ck_assert_uint_eq(ralen, 56 + 30000);
	ck_assert_int_eq(memcmp(ra, "rawarray", 8), 0);
	ck_assert_int_eq(memcmp(ra + 56, npy + off, 30000), 0);
	aftd_expect_reads(&c, h, ra, ralen);
	afd_handle_close(h);
	free(ra);
	free(npy);
}
END_TEST

START_TEST(ra_data_and_its_npy_view_hold_the_ra_data)
{
	const char *path = aft_fixture("ra/type_f8.ra");
	aftd_copy(path, dir, "t.ra");
	size_t dlen;
	unsigned char *data = aft_ra_data(path, &dlen);
	ck_assert_uint_eq(dlen, 192);
	struct afd_handle *h = aftd_open(&c, entry("t.ra", "data"));
	aftd_expect_reads(&c, h, data, dlen);
	afd_handle_close(h);

	/* B.ra of a .ra is the file itself */
	size_t flen;
	unsigned char *file = aft_read_file(path, &flen);
	h = aftd_open(&c, entry("t.ra", "t.ra"));
	aftd_expect_reads(&c, h, file, flen);
	afd_handle_close(h);

	/* B.npy parses as a Fortran-order array of the same data */
	h = aftd_open(&c, entry("t.ra", "t.npy"));
	size_t nlen;
	unsigned char *npy = aftd_read_ok(&c, h, 0, 1 << 20, &nlen);
	af_source src;
	af_source_init_mem(&src, npy, nlen);
	af_array a;
	af_error err;
	ck_assert_int_eq(af_array_parse_named("t.npy", &src, &a, &err), AF_OK);
	ck_assert(a.fortran_order);
	ck_assert_uint_eq(a.ndim, 3);
	ck_assert_uint_eq(a.data_size, dlen);
	ck_assert_uint_eq(a.data_offset + dlen, nlen);
	ck_assert_int_eq(memcmp(npy + a.data_offset, data, dlen), 0);
	af_array_free(&a);
	aftd_expect_reads(&c, h, npy, nlen);
	afd_handle_close(h);
	free(npy);
	free(file);
	free(data);
}
END_TEST

START_TEST(lz4_ra_data_reads_decoded)
{
	aftd_write_lz4_ra(dir, "z.ra", 70000);
	unsigned char *want = malloc(70000);
	ck_assert_ptr_nonnull(want);
	for (size_t i = 0; i < 70000; i++)
		want[i] = (unsigned char)(i * 7);
	struct afd_handle *h = aftd_open(&c, entry("z.ra", "data"));
	aftd_expect_reads(&c, h, want, 70000);
	afd_handle_close(h);
	free(want);
}
END_TEST

/* A whole text entry of array folder @p name, NUL-terminated (freed). */
static char *text_of(const char *name, const char *ent)
{
	struct afd_handle *h = aftd_open(&c, entry(name, ent));
	size_t len;
	unsigned char *t = aftd_read_ok(&c, h, 0, 4096, &len);
	ck_assert_uint_eq(len, (size_t)afd_handle_attr(h)->st_size);
	/* and a part of it, and past its end */
	if (len > 2)
		aftd_expect_read(&c, h, 1, len - 2, t, len);
	aftd_expect_read(&c, h, len, 10, t, len);
	afd_handle_close(h);
	char *s = realloc(t, len + 1);
	ck_assert_ptr_nonnull(s);
	s[len] = '\0';
	return s;
}

START_TEST(texts_say_shape_dtype_and_header)
{
	aftd_write_npy(dir, "a.npy", 1234, 0);
	char *s = text_of("a.npy", "shape");
	ck_assert_str_eq(s, "1234\n");
	free(s);
	s = text_of("a.npy", "dtype");
	ck_assert_str_eq(s, "|u1\n");
	free(s);
	s = text_of("a.npy", "header");
	ck_assert_str_eq(s, "{'descr': '|u1', 'fortran_order': False, "
			 "'shape': (1234,), }\n");
	free(s);
	aftd_copy(aft_fixture("ra/type_f8.ra"), dir, "t.ra");
	s = text_of("t.ra", "shape");
	ck_assert_str_eq(s, "3 4 2\n");
	free(s);
	s = text_of("t.ra", "dtype");
	ck_assert_str_eq(s, "<f8\n");
	free(s);
}
END_TEST

/* Write @p name as an npz of one member m.npy of @p n bytes (stored or
 * deflated); returns the member's npy bytes (freed by the caller). */
static unsigned char *write_npz(const char *name, bool deflated, size_t n,
				size_t *len)
{
	unsigned char *npy = aftd_npy_bytes(n, 11, len);
	size_t zlen;
	unsigned char *zip = deflated ? aft_zip_deflated("m.npy", npy, *len, 6, &zlen)
				      : aft_zip_stored("m.npy", npy, *len, &zlen);
	aftd_write(dir, name, zip, zlen);
	free(zip);
	return npy;
}

static void npz_member_reads(bool deflated)
{
	size_t len;
	unsigned char *npy = write_npz("x.npz", deflated, 50000, &len);
	struct afd_node *m = aftd_must(&c, aftd_must(&c, c.nodes.root, "x.npz"),
				       "m.npy");
	ck_assert_int_eq(m->kind, NK_ARRAY);
	struct afd_handle *h = aftd_open(&c, aftd_must(&c, m, "data"));
	aftd_expect_reads(&c, h, npy + len - 50000, 50000);
	afd_handle_close(h);
	/* B.npy of a member is the member's bytes */
	h = aftd_open(&c, aftd_must(&c, m, "m.npy"));
	aftd_expect_reads(&c, h, npy, len);
	afd_handle_close(h);
	free(npy);
}

START_TEST(a_stored_npz_members_data_reads_its_bytes)
{
	npz_member_reads(false);
}
END_TEST

START_TEST(a_deflated_npz_members_data_reads_inflated)
{
	npz_member_reads(true);
}
END_TEST

START_TEST(a_non_array_npz_member_reads_as_itself)
{
	static const char text[] = "just some notes\n";
	size_t zlen;
	unsigned char *zip = aft_zip_deflated("notes.txt", (const unsigned char *)text,
					      sizeof(text) - 1, 6, &zlen);
	aftd_write(dir, "x.npz", zip, zlen);
	free(zip);
	struct afd_node *m = aftd_must(&c, aftd_must(&c, c.nodes.root, "x.npz"),
				       "notes.txt");
	ck_assert_int_eq(m->kind, NK_MEMBER);
	struct afd_handle *h = aftd_open(&c, m);
	aftd_expect_reads(&c, h, (const unsigned char *)text, sizeof(text) - 1);
	afd_handle_close(h);
}
END_TEST

/* Every chunk of store @p z of @p n bytes of @p data in chunks of
 * @p chunk bytes reads as its range of data, then zeros. */
static void expect_chunks(struct afd_node *z, const unsigned char *data,
			  size_t n, size_t chunk)
{
	unsigned char *want = malloc(chunk);
	ck_assert_ptr_nonnull(want);
	char name[24];
	for (size_t k = 0; k * chunk < n; k++) {
		size_t part = n - k * chunk < chunk ? n - k * chunk : chunk;
		memset(want, 0, chunk);
		memcpy(want, data + k * chunk, part);
		snprintf(name, sizeof(name), "%zu", k);
		struct afd_handle *h = aftd_open(&c, aftd_must(&c, z, name));
		ck_assert_int_eq(afd_handle_attr(h)->st_size, (off_t)chunk);
		aftd_expect_reads(&c, h, want, chunk);
		afd_handle_close(h);
	}
	free(want);
}

START_TEST(a_zarr_chunk_is_its_range_of_data_then_zeros)
{
	c.opts.zarr_chunk = 1000;
	size_t len, off;
	unsigned char *npy = npy_of(2500, 5, &len, &off);
	aftd_write(dir, "a.npy", npy, len);
	struct afd_node *z = entry("a.npy", "a.zarr");
	ck_assert_int_eq(z->kind, NK_ZARRDIR);
	expect_chunks(z, npy + off, 2500, 1000);
	int rc = 0;
	ck_assert_ptr_null(aftd_lookup(&c, z, "3", &rc, NULL));
	ck_assert_int_eq(rc, -ENOENT);
	free(npy);
}
END_TEST

START_TEST(big_chunks_read_spliced_then_zeros)
{
	c.opts.zarr_chunk = 70000;
	size_t len, off;
	unsigned char *npy = npy_of(150000, 6, &len, &off);
	aftd_write(dir, "a.npy", npy, len);
	expect_chunks(entry("a.npy", "a.zarr"), npy + off, 150000, 70000);
	free(npy);
}
END_TEST

static unsigned char *lz4_data(size_t n)
{
	unsigned char *d = malloc(n);
	ck_assert_ptr_nonnull(d);
	for (size_t i = 0; i < n; i++)
		d[i] = (unsigned char)(i * 7);
	return d;
}

START_TEST(chunks_of_decoded_arrays_read_their_range_of_data)
{
	c.opts.zarr_chunk = 1000;
	aftd_write_lz4_ra(dir, "z.ra", 2500);
	unsigned char *want = lz4_data(2500);
	expect_chunks(entry("z.ra", "z.zarr"), want, 2500, 1000);
	free(want);
	size_t len;
	unsigned char *npy = write_npz("x.npz", true, 2500, &len);
	struct afd_node *m = aftd_must(&c, aftd_must(&c, c.nodes.root, "x.npz"),
				       "m.npy");
	expect_chunks(aftd_must(&c, m, "m.zarr"), npy + len - 2500, 2500, 1000);
	free(npy);
}
END_TEST

/* Open chunks of one version of a decoded array read through one view,
 * freed with the last of them (zchunk.h). */
START_TEST(open_chunks_of_a_decoded_array_share_one_view)
{
	c.opts.zarr_chunk = 1000;
	aftd_write_lz4_ra(dir, "z.ra", 2500);
	struct afd_node *z = entry("z.ra", "z.zarr");
	struct afd_handle *h0 = aftd_open(&c, aftd_must(&c, z, "0"));
	struct afd_handle *h2 = aftd_open(&c, aftd_must(&c, z, "2"));
	struct afd_src *sf = NULL;
	ck_assert_int_eq(afd_src_get(&c, "z.ra", NULL, NULL, &sf), 0);
	ck_assert_ptr_nonnull(sf->arr.zarr.share);
	unsigned char *want = lz4_data(2500);
	aftd_expect_read(&c, h2, 0, 500, want + 2000, 500);
	aftd_expect_read(&c, h0, 0, 1000, want, 1000);
	afd_handle_close(h0);
	ck_assert_ptr_nonnull(sf->arr.zarr.share);
	afd_handle_close(h2);
	ck_assert_ptr_null(sf->arr.zarr.share);
	afd_src_put(sf);
	free(want);
}
END_TEST

START_TEST(a_plain_file_reads_as_itself)
{
	unsigned char buf[20000];
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)(i * 13 + 1);
	aftd_write(dir, "f.bin", buf, sizeof(buf));
	struct afd_node *n = aftd_must(&c, c.nodes.root, "f.bin");
	ck_assert_int_eq(n->kind, NK_FILE);
	struct afd_handle *h = aftd_open(&c, n);
	aftd_expect_reads(&c, h, buf, sizeof(buf));
	afd_handle_close(h);
}
END_TEST

/* ---- a source changed under an open file ---- */

/* Every way a handle reads (copied, spliced, decoded, a chunk) gives EIO
 * once its source changed in place: a.npy rewritten as @p new_size bytes,
 * z.ra cut or grown. */
static void changed_in_place_gives_eio(size_t new_size)
{
	c.opts.zarr_chunk = 60000;   /* a.zarr/0: a.npy's data, then zeros */
	aftd_write_npy(dir, "a.npy", 50000, 0);
	aftd_write_lz4_ra(dir, "z.ra", 50000);
	struct afd_handle *data = aftd_open(&c, entry("a.npy", "data"));
	struct afd_handle *npy = aftd_open(&c, entry("a.npy", "a.npy"));
	struct afd_handle *ra = aftd_open(&c, entry("a.npy", "a.ra"));
	struct afd_handle *lz = aftd_open(&c, entry("z.ra", "data"));
	struct afd_handle *chunk = aftd_open(&c, aftd_must(&c, entry("a.npy",
							"a.zarr"), "0"));
	aftd_rewrite_npy(dir, "a.npy", new_size);
	struct stat before = aftd_lstat(dir, "z.ra");
	ck_assert_int_eq(truncate(aftd_path(dir, "z.ra"),
				  new_size < 50000 ? 1000 : 70000), 0);
	ck_assert_int_ne(aftd_lstat(dir, "z.ra").st_size, before.st_size);
	struct afd_handle *all[] = { data, npy, ra, lz, chunk };
	for (size_t k = 0; k < sizeof(all) / sizeof(all[0]); k++) {
		aftd_expect_eio(&c, all[k], 0, 100);
		aftd_expect_eio(&c, all[k], 100, 30000);
		aftd_expect_eio(&c, all[k], 49990, 100);
		afd_handle_close(all[k]);
	}
}

START_TEST(a_source_that_grows_in_place_under_an_open_file_gives_eio)
{
	changed_in_place_gives_eio(60000);
}
END_TEST

START_TEST(a_source_that_shrinks_under_an_open_file_gives_eio)
{
	changed_in_place_gives_eio(20000);
}
END_TEST

START_TEST(a_source_rewritten_with_its_size_under_an_open_file_gives_eio)
{
	changed_in_place_gives_eio(50000);
}
END_TEST

START_TEST(a_source_replaced_by_rename_keeps_serving_the_old_bytes)
{
	size_t len, off;
	unsigned char *old = npy_of(50000, 1, &len, &off);
	aftd_write(dir, "a.npy", old, len);
	struct afd_handle *h = aftd_open(&c, entry("a.npy", "data"));
	aftd_expect_read(&c, h, 0, 100, old + off, 50000);
	aftd_write_npy(dir, "new.npy", 70000, 99);
	char *from = strdup(aftd_path(dir, "new.npy"));
	ck_assert_ptr_nonnull(from);
	ck_assert_int_eq(rename(from, aftd_path(dir, "a.npy")), 0);
	free(from);
	aftd_expect_reads(&c, h, old + off, 50000);
	ck_assert_int_eq(afd_handle_attr(h)->st_size, 50000);
	afd_handle_close(h);
	/* a new open is of the new version */
	h = aftd_open(&c, entry("a.npy", "data"));
	ck_assert_int_eq(afd_handle_attr(h)->st_size, 70000);
	afd_handle_close(h);
	free(old);
}
END_TEST

START_TEST(an_npz_rewritten_under_an_open_member_gives_eio)
{
	for (int deflated = 0; deflated < 2; deflated++) {
		size_t len;
		free(write_npz("x.npz", deflated, 50000, &len));
		struct afd_node *m = aftd_must(&c, aftd_must(&c, c.nodes.root,
							     "x.npz"), "m.npy");
		struct afd_handle *h = aftd_open(&c, aftd_must(&c, m, "data"));
		ck_assert_int_eq(truncate(aftd_path(dir, "x.npz"), 100), 0);
		aftd_expect_eio(&c, h, 0, 100);
		aftd_expect_eio(&c, h, 1000, 30000);
		afd_handle_close(h);
	}
}
END_TEST

/* A deflated member whose stream is broken half way: its reads fail
 * with a reason (fail.h), never give other bytes. */
START_TEST(a_corrupt_deflated_member_fails_with_a_reason_never_other_bytes)
{
	size_t n = 200000;
	unsigned char *plain = malloc(n);
	ck_assert_ptr_nonnull(plain);
	for (size_t i = 0; i < n; i++)     /* little to compress */
		plain[i] = (unsigned char)(i * 2654435761u >> 13);
	size_t zlen;
	unsigned char *zip = aft_zip_deflated("m.bin", plain, n, 6, &zlen);
	/* past the local header and the stream's start, before its end */
	memset(zip + zlen / 2, 0xff, 64);
	aftd_write(dir, "x.npz", zip, zlen);
	free(zip);
	struct afd_node *m = aftd_must(&c, aftd_must(&c, c.nodes.root, "x.npz"),
				       "m.bin");
	ck_assert_int_eq(m->kind, NK_MEMBER);
	struct afd_handle *h = NULL;
	struct afd_failure why;
	bool keep;
	int rc = afd_handle_open(&c, m, O_RDONLY, &h, &keep, &why);
	if (rc == 0) {
		struct afd_rbuf rb;
		for (uint64_t off = 0; rc == 0 && off < n; off += 65536) {
			rc = afd_handle_read(&c, h, 65536, (off_t)off, false, &rb,
					     &why);
			afd_rbuf_free(&rb);
		}
		afd_handle_close(h);
	}
	ck_assert_msg(rc < 0, "a broken stream read without an error");
	ck_assert_int_ne(why.err.status, AF_OK);
	ck_assert_str_ne(why.err.msg, "");
	free(plain);
}
END_TEST

START_TEST(a_plain_file_that_shrinks_reads_short_not_wrong)
{
	unsigned char buf[20000];
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)(i * 3);
	aftd_write(dir, "f.bin", buf, sizeof(buf));
	struct afd_handle *h = aftd_open(&c, aftd_must(&c, c.nodes.root, "f.bin"));
	ck_assert_int_eq(truncate(aftd_path(dir, "f.bin"), 15000), 0);
	aftd_expect_read(&c, h, 10000, 10000, buf, 15000);
	aftd_expect_read(&c, h, 0, 100, buf, 15000);
	afd_handle_close(h);
}
END_TEST

/* ---- opening and release ---- */

START_TEST(writes_are_refused_and_folders_are_no_files)
{
	aftd_write_npy(dir, "a.npy", 10, 0);
	struct afd_node *data = entry("a.npy", "data");
	struct afd_handle *h = NULL;
	bool keep;
	ck_assert_int_eq(afd_handle_open(&c, data, O_WRONLY, &h, &keep, NULL),
			 -EROFS);
	ck_assert_int_eq(afd_handle_open(&c, data, O_RDWR, &h, &keep, NULL),
			 -EROFS);
	ck_assert_int_eq(afd_handle_open(&c, data, O_RDONLY | O_TRUNC, &h,
					 &keep, NULL), -EROFS);
	struct afd_node *arr = aftd_must(&c, c.nodes.root, "a.npy");
	ck_assert_int_eq(afd_handle_open(&c, arr, O_RDONLY, &h, &keep, NULL),
			 -EISDIR);
	ck_assert_int_eq(afd_handle_open(&c, c.nodes.root, O_RDONLY, &h, &keep,
					 NULL), -EISDIR);
	ck_assert_ptr_null(h);
}
END_TEST

START_TEST(a_source_gone_before_the_open_is_not_opened)
{
	aftd_write_npy(dir, "a.npy", 10, 0);
	struct afd_node *data = entry("a.npy", "data");
	ck_assert_int_eq(unlink(aftd_path(dir, "a.npy")), 0);
	struct afd_handle *h = NULL;
	bool keep;
	ck_assert_int_eq(afd_handle_open(&c, data, O_RDONLY, &h, &keep, NULL),
			 -ENOENT);
	ck_assert_ptr_null(h);
}
END_TEST

START_TEST(the_cache_is_kept_while_the_source_is_the_version_served)
{
	aftd_write_npy(dir, "a.npy", 10, 0);
	struct afd_node *data = entry("a.npy", "data");
	struct afd_handle *h1 = NULL, *h2 = NULL, *h3 = NULL;
	bool keep = true;
	ck_assert_int_eq(afd_handle_open(&c, data, O_RDONLY, &h1, &keep, NULL), 0);
	ck_assert(!keep);
	ck_assert_int_eq(afd_handle_open(&c, data, O_RDONLY, &h2, &keep, NULL), 0);
	ck_assert(keep);
	ck_assert_uint_eq(afd_handle_version(h2), data->version);
	/* another version opened through the old node: not kept, and the
	 * handle says it is not the node's version */
	aftd_rewrite_npy(dir, "a.npy", 10);
	ck_assert_int_eq(afd_handle_open(&c, data, O_RDONLY, &h3, &keep, NULL), 0);
	ck_assert(!keep);
	ck_assert_uint_ne(afd_handle_version(h3), data->version);
	afd_handle_close(h1);
	afd_handle_close(h2);
	afd_handle_close(h3);
}
END_TEST

/* a.npy of 30000 bytes (*npy, its data at *off), its `data` node with
 * the range of its data remembered, as a lookup remembers it (ops.c). */
static struct afd_node *ranged_data(unsigned char **npy, size_t *off)
{
	size_t len;
	*npy = npy_of(30000, 4, &len, off);
	aftd_write(dir, "a.npy", *npy, len);
	struct afd_node *data = entry("a.npy", "data");
	afd_nodes_range_set(data, *off, 30000);
	return data;
}

START_TEST(a_remembered_range_opens_without_a_parse)
{
	unsigned char *npy;
	size_t off;
	struct afd_node *data = ranged_data(&npy, &off);
	afd_src_drop(&c, "a.npy");
	ck_assert_uint_eq(c.srcs.count, 0);
	struct afd_handle *h = aftd_open(&c, data);
	ck_assert_uint_eq(c.srcs.count, 0);
	ck_assert_uint_eq(afd_handle_version(h), data->version);
	aftd_expect_reads(&c, h, npy + off, 30000);
	/* a change under it is caught like any other */
	aftd_rewrite_npy(dir, "a.npy", 30000);
	aftd_expect_eio(&c, h, 0, 100);
	afd_handle_close(h);
	/* a file no longer that version is parsed: the handle says which */
	h = aftd_open(&c, data);
	ck_assert_uint_eq(c.srcs.count, 1);
	ck_assert_uint_ne(afd_handle_version(h), data->version);
	afd_handle_close(h);
	free(npy);
}
END_TEST

/* What a lookup that opened the source hands over (ops.c): an fd of the
 * node's version is adopted as its range; another version's is refused
 * and closed. */
START_TEST(an_fd_of_the_nodes_version_is_adopted_as_its_range)
{
	unsigned char *npy;
	size_t off;
	struct afd_node *data = ranged_data(&npy, &off);
	int fd = open(aftd_path(dir, "a.npy"), O_RDONLY);
	ck_assert_int_ge(fd, 0);
	struct stat st;
	ck_assert_int_eq(fstat(fd, &st), 0);
	struct afd_handle *h = NULL;
	ck_assert_int_eq(afd_handle_adopt_range(&c, data, fd, &st, &h), 0);
	ck_assert_uint_eq(afd_handle_version(h), data->version);
	ck_assert_int_eq(afd_handle_attr(h)->st_size, 30000);
	aftd_expect_reads(&c, h, npy + off, 30000);
	afd_handle_close(h);

	int before = aft_fd_count();
	aftd_rewrite_npy(dir, "a.npy", 30000);
	fd = open(aftd_path(dir, "a.npy"), O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	h = NULL;
	ck_assert_int_eq(afd_handle_adopt_range(&c, data, fd, &st, &h), -ENOENT);
	ck_assert_ptr_null(h);
	ck_assert_int_eq(aft_fd_count(), before);
	free(npy);
}
END_TEST

START_TEST(release_closes_what_a_handle_held)
{
	aftd_write_npy(dir, "a.npy", 50000, 0);
	aftd_write_lz4_ra(dir, "z.ra", 50000);
	size_t len;
	free(write_npz("x.npz", true, 50000, &len));
	aftd_write(dir, "f.bin", "plain", 5);
	struct afd_node *m = aftd_must(&c, aftd_must(&c, c.nodes.root, "x.npz"),
				       "m.npy");
	struct afd_node *n[] = {
		entry("a.npy", "data"), entry("a.npy", "a.ra"),
		entry("a.npy", "shape"), entry("z.ra", "z.npy"),
		aftd_must(&c, m, "data"), aftd_must(&c, c.nodes.root, "f.bin"),
	};
	/* the first round caches the parses (the archive keeps its fd) and
	 * makes this thread's splice pipe (kept for the thread) */
	for (size_t k = 0; k < sizeof(n) / sizeof(n[0]); k++) {
		struct afd_handle *h = aftd_open(&c, n[k]);
		free(aftd_read_ok(&c, h, 0, 40000, &len));
		afd_handle_close(h);
	}
	int before = aft_fd_count();
	struct afd_handle *h[sizeof(n) / sizeof(n[0])];
	for (size_t k = 0; k < sizeof(n) / sizeof(n[0]); k++) {
		h[k] = aftd_open(&c, n[k]);
		free(aftd_read_ok(&c, h[k], 0, 40000, &len));
	}
	ck_assert_int_gt(aft_fd_count(), before);
	for (size_t k = 0; k < sizeof(n) / sizeof(n[0]); k++)
		afd_handle_close(h[k]);
	ck_assert_int_eq(aft_fd_count(), before);
}
END_TEST

START_TEST(a_held_handle_outlives_its_release)
{
	size_t len, off;
	unsigned char *npy = npy_of(20000, 2, &len, &off);
	aftd_write(dir, "a.npy", npy, len);
	struct afd_handle *h = aftd_open(&c, entry("a.npy", "data"));
	aftd_expect_read(&c, h, 0, 10000, npy + off, 20000);  /* makes the pipe */
	afd_handle_close(h);
	int before = aft_fd_count();
	h = aftd_open(&c, entry("a.npy", "data"));
	afd_handle_hold(h);     /* a read in flight */
	afd_handle_close(h);    /* the release */
	aftd_expect_read(&c, h, 100, 10000, npy + off, 20000);
	afd_handle_close(h);    /* the read's own */
	ck_assert_int_eq(aft_fd_count(), before);
	free(npy);
}
END_TEST

START_TEST(an_openless_read_gives_what_an_open_gives)
{
	size_t len, off;
	unsigned char *npy = npy_of(40000, 8, &len, &off);
	aftd_write(dir, "a.npy", npy, len);
	struct afd_node *data = entry("a.npy", "data");
	struct afd_handle *h = NULL;
	ck_assert_int_eq(afd_openless_get(&c, data, &h, NULL, NULL), 0);
	aftd_expect_reads(&c, h, npy + off, 40000);
	afd_handle_close(h);
	/* rewritten: the bound handle it kept gives EIO, never new bytes */
	aftd_rewrite_npy(dir, "a.npy", 40000);
	ck_assert_int_eq(afd_openless_get(&c, data, &h, NULL, NULL), 0);
	aftd_expect_eio(&c, h, 0, 100);
	afd_handle_close(h);
	free(npy);
}
END_TEST

static Suite *handle_suite(void)
{
	Suite *s = suite_create("daemon_handle");
	TCase *tc = tcase_create("read");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, npy_data_reads_the_sources_bytes_at_any_offset);
	tcase_add_test(tc, npy_views_are_the_file_and_a_rawarray_of_its_data);
	tcase_add_test(tc, ra_data_and_its_npy_view_hold_the_ra_data);
	tcase_add_test(tc, lz4_ra_data_reads_decoded);
	tcase_add_test(tc, texts_say_shape_dtype_and_header);
	tcase_add_test(tc, a_stored_npz_members_data_reads_its_bytes);
	tcase_add_test(tc, a_deflated_npz_members_data_reads_inflated);
	tcase_add_test(tc, a_non_array_npz_member_reads_as_itself);
	tcase_add_test(tc, a_zarr_chunk_is_its_range_of_data_then_zeros);
	tcase_add_test(tc, big_chunks_read_spliced_then_zeros);
	tcase_add_test(tc, chunks_of_decoded_arrays_read_their_range_of_data);
	tcase_add_test(tc, open_chunks_of_a_decoded_array_share_one_view);
	tcase_add_test(tc, a_plain_file_reads_as_itself);
	suite_add_tcase(s, tc);

	tc = tcase_create("changed");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, a_source_that_grows_in_place_under_an_open_file_gives_eio);
	tcase_add_test(tc, a_source_that_shrinks_under_an_open_file_gives_eio);
	tcase_add_test(tc, a_source_rewritten_with_its_size_under_an_open_file_gives_eio);
	tcase_add_test(tc, a_source_replaced_by_rename_keeps_serving_the_old_bytes);
	tcase_add_test(tc, an_npz_rewritten_under_an_open_member_gives_eio);
	tcase_add_test(tc, a_corrupt_deflated_member_fails_with_a_reason_never_other_bytes);
	tcase_add_test(tc, a_plain_file_that_shrinks_reads_short_not_wrong);
	suite_add_tcase(s, tc);

	tc = tcase_create("open");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, writes_are_refused_and_folders_are_no_files);
	tcase_add_test(tc, a_source_gone_before_the_open_is_not_opened);
	tcase_add_test(tc, the_cache_is_kept_while_the_source_is_the_version_served);
	tcase_add_test(tc, a_remembered_range_opens_without_a_parse);
	tcase_add_test(tc, an_fd_of_the_nodes_version_is_adopted_as_its_range);
	tcase_add_test(tc, release_closes_what_a_handle_held);
	tcase_add_test(tc, a_held_handle_outlives_its_release);
	tcase_add_test(tc, an_openless_read_gives_what_an_open_gives);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return aft_run(handle_suite());
}
