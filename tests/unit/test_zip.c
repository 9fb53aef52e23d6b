/* SPDX-License-Identifier: MIT */
/* Tests for src/codec/zip.c, zip_names.c, member.c and subsource.c: archives
 * written by numpy / zipfile / by hand (scripts/fixtures/gen_zip.py), checked
 * against the member lists and bytes python's zipfile reads back. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "af_test.h"
#include "arrayfs/arrayfs.h"

/* ---- helpers --------------------------------------------------------- */

typedef struct exp_entry {
	unsigned method, flags, is_dir;
	unsigned long long crc, comp, uncomp;
	char name[512];
} exp_entry;

typedef struct exp_list {
	size_t count, warnings;
	exp_entry *e;
} exp_list;

/** Parse NAME.list written by gen_zip.py (ck_abort on a malformed file). */
static exp_list load_list(const char *archive)
{
	char rel[256];
	snprintf(rel, sizeof(rel), "zip/%s.list", archive);
	FILE *f = fopen(aft_fixture(rel), "r");
	ck_assert_msg(f != NULL, "cannot open %s", rel);
	exp_list l = { 0 };
	ck_assert_int_eq(fscanf(f, "entries %zu warnings %zu\n", &l.count,
				&l.warnings), 2);
	l.e = calloc(l.count ? l.count : 1, sizeof(*l.e));
	ck_assert_ptr_nonnull(l.e);
	char hex[1100];
	for (size_t i = 0; i < l.count; i++) {
		exp_entry *e = &l.e[i];
		ck_assert_int_eq(fscanf(f, "%u %u %llu %llu %llu %u %1099s\n",
					&e->method, &e->flags, &e->crc,
					&e->comp, &e->uncomp, &e->is_dir, hex),
				 7);
		size_t n = strlen(hex) / 2;
		ck_assert_uint_lt(n, sizeof(e->name));
		for (size_t k = 0; k < n; k++) {
			unsigned v;
			ck_assert_int_eq(sscanf(hex + 2 * k, "%2x", &v), 1);
			e->name[k] = (char)v;
		}
	}
	fclose(f);
	return l;
}

/* An archive opened from its fixture file through an fd source. */
typedef struct fx {
	int fd;
	af_source src;
	af_zip *z;
} fx;

static fx fx_open(const char *archive)
{
	char rel[256];
	snprintf(rel, sizeof(rel), "zip/%s", archive);
	fx x;
	x.fd = open(aft_fixture(rel), O_RDONLY);
	ck_assert_msg(x.fd >= 0, "cannot open %s", rel);
	struct stat st;
	ck_assert_int_eq(fstat(x.fd, &st), 0);
	af_source_init_fd(&x.src, x.fd, 0, (uint64_t)st.st_size);
	af_error err;
	af_status s = af_zip_open(&x.z, &x.src, &err);
	ck_assert_msg(s == AF_OK, "%s: %s", archive, err.msg);
	return x;
}

static void fx_close(fx *x)
{
	af_zip_close(x->z);
	close(x->fd);
}

static unsigned char *load_fixture(const char *archive, size_t *len)
{
	char rel[256];
	snprintf(rel, sizeof(rel), "zip/%s", archive);
	return aft_read_file(aft_fixture(rel), len);
}

static void check_listing(const af_zip *z, const exp_list *l)
{
	ck_assert_uint_eq(af_zip_count(z), l->count);
	ck_assert_uint_eq(af_zip_warning_count(z), l->warnings);
	for (size_t i = 0; i < l->count; i++) {
		const af_zip_entry *e = af_zip_entry_at(z, i);
		const exp_entry *x = &l->e[i];
		ck_assert_str_eq(e->name, x->name);
		ck_assert_uint_eq(e->method, x->method);
		ck_assert_uint_eq(e->flags, x->flags);
		ck_assert_uint_eq(e->crc32, x->crc);
		ck_assert_uint_eq(e->comp_size, x->comp);
		ck_assert_uint_eq(e->uncomp_size, x->uncomp);
		ck_assert_int_eq(e->is_dir, x->is_dir);
		ck_assert_int_eq(af_zip_find(z, x->name), (long)i);
	}
	ck_assert_ptr_null(af_zip_entry_at(z, l->count));
}

/* A tiny deterministic generator: tests must repeat exactly. */
static uint64_t rnd(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

/** Member i reads whole and at random ranges exactly like NAME.i.bin. */
static void check_member(const fx *x, const char *archive, size_t i)
{
	char rel[256];
	snprintf(rel, sizeof(rel), "zip/%s.%zu.bin", archive, i);
	size_t len;
	unsigned char *want = aft_read_file(aft_fixture(rel), &len);
	af_member *m;
	af_error err;
	af_status st = af_member_open(&m, x->z, i, &err);
	ck_assert_msg(st == AF_OK, "%s member %zu: %s", archive, i, err.msg);
	const af_source *s = af_member_source(m);
	ck_assert_uint_eq(s->size, len);
	const af_zip_entry *e = af_zip_entry_at(x->z, i);
	if (e->method == AF_ZIP_STORED) {
		/* stored members stay spliceable: same fd, shifted base */
		uint64_t data;
		ck_assert_int_eq(af_zip_data_offset(x->z, i, &data, &err), AF_OK);
		ck_assert_int_eq(s->fd, x->fd);
		ck_assert_uint_eq(s->fd_base, data);
		ck_assert_uint_eq(af_member_memory(m), 0);
	}
	unsigned char *got = malloc(len + 1);
	ck_assert_ptr_nonnull(got);
	st = af_source_read_exact(s, got, len, 0, &err);
	ck_assert_msg(st == AF_OK, "%s member %zu: %s", archive, i, err.msg);
	ck_assert_int_eq(memcmp(got, want, len), 0);
	ck_assert_int_eq(s->pread(s, got, 1, len), 0);
	uint64_t seed = 42 + i;
	for (int k = 0; k < 40 && len > 0; k++) {
		uint64_t off = rnd(&seed) % len;
		size_t n = (size_t)(rnd(&seed) % (len - off) + 1);
		memset(got, 0, n);
		st = af_source_read_exact(s, got, n, off, &err);
		ck_assert_msg(st == AF_OK, "%s member %zu at %llu: %s", archive,
			      i, (unsigned long long)off, err.msg);
		ck_assert_int_eq(memcmp(got, want + off, n), 0);
	}
	if (e->method == AF_ZIP_DEFLATED && len > 0)
		ck_assert_uint_gt(af_member_memory(m), 0);
	free(got);
	free(want);
	af_member_close(m);
}

/** Listing and every member's bytes of one fixture archive. */
static void check_archive(const char *archive, bool content)
{
	exp_list l = load_list(archive);
	fx x = fx_open(archive);
	check_listing(x.z, &l);
	for (size_t i = 0; content && i < l.count; i++)
		check_member(&x, archive, i);
	fx_close(&x);
	free(l.e);
}

/* ---- archives written by numpy ------------------------------------- */

START_TEST(savez_stored_members)
{
	check_archive("savez.npz", true);
}
END_TEST

START_TEST(savez_compressed_deflated_members)
{
	check_archive("savez_compressed.npz", true);
}
END_TEST

START_TEST(positional_keys)
{
	check_archive("positional.npz", true);
	fx x = fx_open("positional.npz");
	ck_assert_int_ge(af_zip_find(x.z, "arr_0.npy"), 0);
	ck_assert_int_ge(af_zip_find(x.z, "arr_1.npy"), 0);
	ck_assert_int_eq(af_zip_find(x.z, "arr_2.npy"), -1);
	fx_close(&x);
}
END_TEST

START_TEST(nested_keys_with_slash)
{
	check_archive("nested.npz", true);
	fx x = fx_open("nested.npz");
	ck_assert_int_ge(af_zip_find(x.z, "grp/sub/y.npy"), 0);
	ck_assert_int_eq(af_zip_find(x.z, "grp"), -1);
	ck_assert_int_eq(af_zip_find(x.z, "grp/"), -1);
	fx_close(&x);
}
END_TEST

START_TEST(utf8_keys)
{
	check_archive("utf8.npz", true);
	fx x = fx_open("utf8.npz");
	long i = af_zip_find(x.z, "temp\xc3\xa9rature.npy");
	ck_assert_int_ge(i, 0);
	ck_assert_uint_eq(af_zip_entry_at(x.z, (size_t)i)->flags & 0x800, 0x800);
	fx_close(&x);
}
END_TEST

START_TEST(empty_npz)
{
	check_archive("empty.npz", false);
	fx x = fx_open("empty.npz");
	ck_assert_int_eq(af_zip_find(x.z, "a.npy"), -1);
	af_member *m;
	ck_assert_int_eq(af_member_open(&m, x.z, 0, NULL), AF_E_RANGE);
	uint64_t off;
	ck_assert_int_eq(af_zip_data_offset(x.z, 0, &off, NULL), AF_E_RANGE);
	fx_close(&x);
}
END_TEST

START_TEST(non_npy_members_and_directories)
{
	check_archive("mixed.zip", true);
	fx x = fx_open("mixed.zip");
	long d = af_zip_find(x.z, "dir/");
	ck_assert_int_ge(d, 0);
	ck_assert(af_zip_entry_at(x.z, (size_t)d)->is_dir);
	fx_close(&x);
}
END_TEST

START_TEST(numpy_zip64_local_extra_differs_from_central)
{
	/* numpy >= 1.17 puts a 20-byte zip64 extra in every local header and
	 * none in the central directory: data starts after the local one */
	size_t len;
	unsigned char *buf = load_fixture("savez.npz", &len);
	fx x = fx_open("savez.npz");
	for (size_t i = 0; i < af_zip_count(x.z); i++) {
		const af_zip_entry *e = af_zip_entry_at(x.z, i);
		const unsigned char *h = buf + e->local_offset;
		unsigned nlen = h[26] | h[27] << 8, xlen = h[28] | h[29] << 8;
		ck_assert_uint_eq(xlen, 20);
		uint64_t data;
		ck_assert_int_eq(af_zip_data_offset(x.z, i, &data, NULL), AF_OK);
		ck_assert_uint_eq(data, e->local_offset + 30 + nlen + xlen);
		ck_assert_int_eq(memcmp(buf + data, "\x93NUMPY", 6), 0);
	}
	fx_close(&x);
	free(buf);
}
END_TEST

START_TEST(data_descriptors_stored)
{
	check_archive("descriptor_stored.npz", true);
	fx x = fx_open("descriptor_stored.npz");
	ck_assert_uint_eq(af_zip_entry_at(x.z, 0)->flags & 0x8, 0x8);
	fx_close(&x);
}
END_TEST

START_TEST(data_descriptors_deflated)
{
	check_archive("descriptor_deflated.npz", true);
}
END_TEST

/* ---- zip64 ---------------------------------------------------------- */

START_TEST(zip64_saturated_fields_from_extra)
{
	check_archive("zip64.zip", true);
}
END_TEST

START_TEST(zip64_end_with_real_legacy_values)
{
	check_archive("zip64_legacy_real.zip", true);
}
END_TEST

START_TEST(zip64_end_wins_over_a_disagreeing_legacy_one)
{
	size_t len;
	unsigned char *buf = load_fixture("zip64_legacy_wrong.zip", &len);
	af_source s;
	af_source_init_mem(&s, buf, len);
	af_zip *z;
	af_error err;
	ck_assert_int_eq(af_zip_open(&z, &s, &err), AF_OK);
	ck_assert_uint_eq(af_zip_count(z), 3);
	af_zip_close(z);
	free(buf);
}
END_TEST

START_TEST(zip64_end_with_a_wrong_count_is_refused)
{
	size_t len;
	unsigned char *buf = load_fixture("zip64_disagree.zip", &len);
	af_source s;
	af_source_init_mem(&s, buf, len);
	af_zip *z;
	af_error err;
	ck_assert_int_ne(af_zip_open(&z, &s, &err), AF_OK);
	ck_assert_ptr_null(z);
	ck_assert_str_ne(err.msg, "");
	free(buf);
}
END_TEST

START_TEST(more_than_65535_members)
{
	fx x = fx_open("many.zip");
	ck_assert_uint_eq(af_zip_count(x.z), 70000);
	ck_assert_int_eq(af_zip_find(x.z, "m0.npy"), 0);
	ck_assert_int_eq(af_zip_find(x.z, "m12345.npy"), 12345);
	ck_assert_int_eq(af_zip_find(x.z, "m65535.npy"), 65535);
	ck_assert_int_eq(af_zip_find(x.z, "m69999.npy"), 69999);
	ck_assert_int_eq(af_zip_find(x.z, "m70000.npy"), -1);
	ck_assert_int_eq(af_zip_find(x.z, ""), -1);
	size_t idx[] = { 0, 65536, 69999 };
	for (size_t k = 0; k < 3; k++) {
		af_member *m;
		ck_assert_int_eq(af_member_open(&m, x.z, idx[k], NULL), AF_OK);
		char want[16], got[16] = { 0 };
		int n = snprintf(want, sizeof(want), "%zu", idx[k]);
		const af_source *s = af_member_source(m);
		ck_assert_uint_eq(s->size, (uint64_t)n);
		ck_assert_int_eq(af_source_read_exact(s, got, (size_t)n, 0, NULL),
				 AF_OK);
		ck_assert_str_eq(got, want);
		af_member_close(m);
	}
	fx_close(&x);
	exp_list l = load_list("many.zip");
	x = fx_open("many.zip");
	check_listing(x.z, &l);
	fx_close(&x);
	free(l.e);
}
END_TEST

/* ---- names ----------------------------------------------------------- */

START_TEST(duplicates_last_wins)
{
	check_archive("duplicates.zip", true);
	fx x = fx_open("duplicates.zip");
	ck_assert_uint_eq(af_zip_warning_count(x.z), 2);
	for (size_t i = 0; i < 2; i++)
		ck_assert_ptr_nonnull(strstr(af_zip_warning(x.z, i), "duplicate"));
	long i = af_zip_find(x.z, "a.npy");
	ck_assert_int_ge(i, 0);
	af_member *m;
	ck_assert_int_eq(af_member_open(&m, x.z, (size_t)i, NULL), AF_OK);
	char got[32] = { 0 };
	const af_source *s = af_member_source(m);
	ck_assert_uint_eq(s->size, 15);
	ck_assert_int_eq(af_source_read_exact(s, got, 15, 0, NULL), AF_OK);
	ck_assert_str_eq(got, "third copy wins");
	af_member_close(m);
	fx_close(&x);
}
END_TEST

START_TEST(unsafe_names_left_out)
{
	check_archive("unsafe.zip", false);
	fx x = fx_open("unsafe.zip");
	const char *bad[] = { "../evil.npy", "/abs.npy", "a//b.npy",
			      "a/../b.npy", "./dot.npy", "..", "a//",
			      "nul", "back\\slash.npy" };
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++)
		ck_assert_int_eq(af_zip_find(x.z, bad[k]), -1);
	ck_assert_int_ge(af_zip_find(x.z, "good.npy"), 0);
	ck_assert_int_ge(af_zip_find(x.z, "sub/ok.npy"), 0);
	for (size_t i = 0; i < af_zip_warning_count(x.z); i++) {
		const char *w = af_zip_warning(x.z, i);
		ck_assert_ptr_nonnull(strstr(w, "left out"));
		ck_assert_ptr_null(strchr(w, '\n'));
	}
	ck_assert_ptr_null(af_zip_warning(x.z, af_zip_warning_count(x.z)));
	fx_close(&x);
}
END_TEST

/* ---- methods --------------------------------------------------------- */

static void expect_unsupported(const char *archive, const char *name,
			       const char *word)
{
	fx x = fx_open(archive);
	long i = af_zip_find(x.z, name);
	ck_assert_int_ge(i, 0);
	af_member *m = (af_member *)1;
	af_error err;
	ck_assert_int_eq(af_member_open(&m, x.z, (size_t)i, &err),
			 AF_E_UNSUPPORTED);
	ck_assert_ptr_null(m);
	ck_assert_msg(strstr(err.msg, word), "message \"%s\" lacks %s",
		      err.msg, word);
	fx_close(&x);
}

START_TEST(unsupported_methods_listed_but_refused)
{
	check_archive("methods.zip", false);
	expect_unsupported("methods.zip", "bzip2.npy", "bzip2");
	expect_unsupported("methods.zip", "lzma.npy", "LZMA");
	fx x = fx_open("methods.zip");
	af_member *m;
	ck_assert_int_eq(af_member_open(&m, x.z, 0, NULL), AF_OK);
	af_member_close(m);
	fx_close(&x);
}
END_TEST

START_TEST(encrypted_member_refused)
{
	check_archive("encrypted.zip", false);
	expect_unsupported("encrypted.zip", "secret.npy", "encrypted");
}
END_TEST

START_TEST(comment_with_fake_end_signature)
{
	check_archive("comment.zip", true);
}
END_TEST

START_TEST(readable_rule_is_encryption_and_method)
{
	static const struct {
		uint16_t method, flags;
		bool readable;
		const char *word;
	} cases[] = {
		{ AF_ZIP_STORED, 0, true, NULL },
		{ AF_ZIP_DEFLATED, 0, true, NULL },
		{ AF_ZIP_DEFLATED, 0x0008, true, NULL },  /* data descriptor */
		{ AF_ZIP_STORED, 0x0800, true, NULL },    /* UTF-8 name */
		{ AF_ZIP_STORED, 0x0001, false, "encrypted" },
		{ AF_ZIP_DEFLATED, 0x0041, false, "encrypted" },
		{ AF_ZIP_STORED, 0x0040, false, "encrypted" },
		{ 12, 0, false, "method 12 (bzip2)" },
		{ 93, 0, false, "method 93 (zstd)" },
		{ 99, 0x0001, false, "encrypted" },       /* AES */
		{ 1234, 0, false, "method 1234 (unknown)" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		af_zip_entry e = { .name = "k.npy", .method = cases[i].method,
				   .flags = cases[i].flags, .local_offset = 77 };
		af_error why;
		af_error_clear(&why);
		ck_assert_int_eq(af_zip_entry_readable(&e, &why), cases[i].readable);
		ck_assert_int_eq(af_zip_entry_readable(&e, NULL), cases[i].readable);
		if (cases[i].readable) {
			ck_assert_int_eq(why.status, AF_OK);
			continue;
		}
		ck_assert_int_eq(why.status, AF_E_UNSUPPORTED);
		ck_assert_uint_eq(why.offset, 77);
		ck_assert_msg(strstr(why.msg, cases[i].word) &&
			      strstr(why.msg, "\"k.npy\""), "%s", why.msg);
	}
	/* af_member_open refuses with the same words */
	fx x = fx_open("methods.zip");
	for (size_t i = 0; i < af_zip_count(x.z); i++) {
		const af_zip_entry *e = af_zip_entry_at(x.z, i);
		af_error why, err;
		af_member *m;
		bool ok = af_zip_entry_readable(e, &why);
		af_status st = af_member_open(&m, x.z, i, &err);
		ck_assert_int_eq(st == AF_E_UNSUPPORTED, !ok);
		if (ok)
			af_member_close(m);
		else
			ck_assert_str_eq(err.msg, why.msg);
	}
	fx_close(&x);
}
END_TEST

/* ---- what a refusal says, and where --------------------------------- */

static void le16_at(unsigned char *p, unsigned v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
}

static void le32_at(unsigned char *p, uint32_t v)
{
	le16_at(p, v & 0xFFFFu);
	le16_at(p + 2, v >> 16);
}

/* A classic end record at @p p: @p count entries, directory [off, off+size). */
static void end_record(unsigned char *p, unsigned count, uint32_t size,
		       uint32_t off)
{
	memset(p, 0, 22);
	le32_at(p, 0x06054b50u);
	le16_at(p + 8, count);
	le16_at(p + 10, count);
	le32_at(p + 12, size);
	le32_at(p + 16, off);
}

/* Opening @p len bytes at @p b fails with @p want; returns the error. */
static af_error refuse_zip(const void *b, size_t len, af_status want)
{
	af_source s;
	af_source_init_mem(&s, b, len);
	af_zip *z;
	af_error err = { 0 };
	ck_assert_int_eq(af_zip_open(&z, &s, &err), want);
	ck_assert_ptr_null(z);
	return err;
}

START_TEST(not_a_zip_says_what_it_is)
{
	/* 40 bytes: more than an end record needs, so the tail is searched */
	unsigned char b[40] = "\x1f\x8b\x08\x00";
	af_error err = refuse_zip(b, sizeof(b), AF_E_MAGIC);
	ck_assert_str_eq(err.msg, "a gzip file, not a .npz (zip)");
	ck_assert_uint_eq(err.offset, 0);
	memcpy(b, "\x93NUMPY\x01\x00", 8);
	err = refuse_zip(b, sizeof(b), AF_E_MAGIC);
	ck_assert_str_eq(err.msg, "a NumPy .npy file, not a .npz (zip)");
	memcpy(b, "rawarray", 8);
	err = refuse_zip(b, 10, AF_E_MAGIC);
	ck_assert_str_eq(err.msg, "a RawArray .ra file, not a .npz (zip)");
	err = refuse_zip(b, 0, AF_E_MAGIC);
	ck_assert_str_eq(err.msg, "empty file");
	ck_assert_uint_eq(err.offset, 0);
	/* unknown bytes, or a zip cut before its end: the zip reader's words */
	err = refuse_zip("hello", 5, AF_E_MAGIC);
	ck_assert_str_eq(err.msg, "5 bytes is too short for a zip archive");
	ck_assert_uint_eq(err.offset, 5);
	memcpy(b, "PK\x03\x04", 4);
	err = refuse_zip(b, sizeof(b), AF_E_MAGIC);
	ck_assert_ptr_nonnull(strstr(err.msg, "no zip end-of-central-directory record"));
}
END_TEST

START_TEST(end_record_errors_point_at_the_field)
{
	unsigned char b[46 + 22] = { 0 };
	/* the directory offset points past the end: the field is at 16 */
	end_record(b + 46, 1, 46, 4000);
	af_error err = refuse_zip(b + 46, 22, AF_E_TRUNCATED);
	ck_assert_uint_eq(err.offset, 16);
	/* 2 entries cannot fit in 46 bytes: the count is at 46 + 10 */
	end_record(b + 46, 2, 46, 0);
	err = refuse_zip(b, sizeof(b), AF_E_HEADER);
	ck_assert_uint_eq(err.offset, 46 + 10);
}
END_TEST

START_TEST(short_zip64_extra_error_at_the_extra_field)
{
	/* one entry "a" whose compressed size says "see zip64" (0xFFFFFFFF),
	 * with a zip64 extra field of 4 bytes where 8 are needed */
	unsigned char b[46 + 1 + 8 + 22] = { 0 };
	le32_at(b, 0x02014b50u);
	le32_at(b + 20, 0xFFFFFFFFu);
	le16_at(b + 28, 1);
	le16_at(b + 30, 8);
	b[46] = 'a';
	le16_at(b + 47, 1);
	le16_at(b + 49, 4);
	end_record(b + 55, 1, 55, 0);
	af_error err = refuse_zip(b, sizeof(b), AF_E_HEADER);
	ck_assert_uint_eq(err.offset, 47);
	ck_assert_ptr_nonnull(strstr(err.msg, "zip64 extra field"));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("zip");
	TCase *tc = tcase_create("numpy");
	tcase_add_test(tc, savez_stored_members);
	tcase_add_test(tc, savez_compressed_deflated_members);
	tcase_add_test(tc, positional_keys);
	tcase_add_test(tc, nested_keys_with_slash);
	tcase_add_test(tc, utf8_keys);
	tcase_add_test(tc, empty_npz);
	tcase_add_test(tc, non_npy_members_and_directories);
	tcase_add_test(tc, numpy_zip64_local_extra_differs_from_central);
	tcase_add_test(tc, data_descriptors_stored);
	tcase_add_test(tc, data_descriptors_deflated);
	suite_add_tcase(s, tc);

	tc = tcase_create("zip64");
	tcase_add_test(tc, zip64_saturated_fields_from_extra);
	tcase_add_test(tc, zip64_end_with_real_legacy_values);
	tcase_add_test(tc, zip64_end_wins_over_a_disagreeing_legacy_one);
	tcase_add_test(tc, zip64_end_with_a_wrong_count_is_refused);
	tcase_add_test(tc, more_than_65535_members);
	suite_add_tcase(s, tc);

	tc = tcase_create("names");
	tcase_add_test(tc, duplicates_last_wins);
	tcase_add_test(tc, unsafe_names_left_out);
	tcase_add_test(tc, unsupported_methods_listed_but_refused);
	tcase_add_test(tc, encrypted_member_refused);
	tcase_add_test(tc, readable_rule_is_encryption_and_method);
	tcase_add_test(tc, comment_with_fake_end_signature);
	suite_add_tcase(s, tc);

	tc = tcase_create("messages");
	tcase_add_test(tc, not_a_zip_says_what_it_is);
	tcase_add_test(tc, end_record_errors_point_at_the_field);
	tcase_add_test(tc, short_zip64_extra_error_at_the_extra_field);
	suite_add_tcase(s, tc);

	return aft_run(s);
}
