/* SPDX-License-Identifier: MIT */
/*
 * Tests for src/codec/zip.c, member.c and subsource.c on broken and hostile
 * archives: the gen_zip.py fixtures cut, trimmed, flipped and patched,
 * archives built here byte by byte, and sources that are neither an fd nor
 * memory. The well-formed archives are test_zip.c's.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "af_test.h"
#include "arrayfs/arrayfs.h"

/* The bytes of fixture zip/NAME; the caller frees. */
static unsigned char *load_fixture(const char *archive, size_t *len)
{
	char rel[256];
	snprintf(rel, sizeof(rel), "zip/%s", archive);
	return aft_read_file(aft_fixture(rel), len);
}


/* ---- byte helpers ---------------------------------------------------- */

static void put16(unsigned char *p, unsigned v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
}

static void put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* Position of the classic end record (the archive has no comment). */
static size_t eocd_at(size_t len)
{
	return len - 22;
}

static af_status open_mem(const unsigned char *buf, size_t len, af_error *err)
{
	af_source s;
	af_source_init_mem(&s, buf, len);
	af_zip *z = (af_zip *)1;
	af_status st = af_zip_open(&z, &s, err);
	if (st != AF_OK)
		ck_assert_ptr_null(z);
	af_zip_close(z);
	return st;
}

/* What became of the archives and members of a fuzz-like test. */
typedef struct outcomes {
	unsigned refused; /* archive or member refused, or a read failed */
	unsigned served;  /* member read whole and equal to the oracle's */
} outcomes;

/* The names the contract lets through: no "..", "." or empty component,
 * no leading "/", no backslash, no component over 255 bytes. */
static void check_safe_name(const char *name)
{
	ck_assert_msg(name[0] != '/', "listed %s", name);
	ck_assert_msg(strchr(name, '\\') == NULL, "listed %s", name);
	for (const char *p = name; *p;) {
		size_t n = strcspn(p, "/");
		ck_assert_msg(n > 0 && n <= 255, "listed %s", name);
		ck_assert_msg(!(n == 1 && p[0] == '.') && !(n == 2 && !strncmp(p, "..", 2)),
			      "listed %s", name);
		p += n;
		if (*p == '/' && p[1] == '\0') /* a folder entry "d/" */
			break;
		p += *p == '/';
	}
}

/* The member's bytes as a reference reader gets them from the archive
 * @p zip: stored, the bytes at its data offset; deflated, what zlib's own
 * inflate makes of them, if that is exactly the declared size with the
 * declared CRC-32. NULL when the reference refuses it; the caller frees. */
static unsigned char *reference_bytes(const unsigned char *zip,
				      const af_zip_entry *e, uint64_t off)
{
	unsigned char *out = malloc(e->uncomp_size + 1);
	ck_assert_ptr_nonnull(out);
	if (e->method == AF_ZIP_STORED) {
		memcpy(out, zip + off, e->uncomp_size);
		return out;
	}
	z_stream zs = { .next_in = (unsigned char *)zip + off,
			.avail_in = (uInt)e->comp_size, .next_out = out,
			.avail_out = (uInt)e->uncomp_size + 1 };
	ck_assert_int_eq(inflateInit2(&zs, -15), Z_OK);
	int rc = inflate(&zs, Z_FINISH);
	inflateEnd(&zs);
	if (rc != Z_STREAM_END || zs.total_out != e->uncomp_size ||
	    crc32(0, out, (uInt)e->uncomp_size) != e->crc32) {
		free(out);
		return NULL;
	}
	return out;
}

/* Member @p i of @p z (opened over the @p len bytes at @p zip): refused
 * cleanly (at open or at a read), or read whole as the reference reads it. */
static void check_member_or_refusal(const unsigned char *zip, size_t len,
				    const af_zip *z, size_t i, outcomes *o)
{
	const af_zip_entry *e = af_zip_entry_at(z, i);
	af_member *m;
	af_error err = { 0 };
	af_status st = af_member_open(&m, z, i, &err);
	if (st != AF_OK) {
		aft_assert_refused(st, &err, e->name);
		o->refused++;
		return;
	}
	uint64_t off;
	ck_assert_int_eq(af_zip_data_offset(z, i, &off, NULL), AF_OK);
	ck_assert_uint_le(off + e->comp_size, len);
	const af_source *ms = af_member_source(m);
	ck_assert_uint_eq(ms->size, e->uncomp_size);
	/* these archives' members are under 1 MiB: a bigger declared size is
	 * a flip, and reads must fail before the end (bounded by the stream) */
	size_t n = e->uncomp_size < (1u << 20) ? (size_t)e->uncomp_size : 1u << 20;
	unsigned char *got = malloc(n + 1);
	ck_assert_ptr_nonnull(got);
	st = af_source_read_exact(ms, got, n, 0, &err);
	if (n == 0) {
		/* nothing is read from an empty member, so nothing can fail:
		 * its stream and CRC-32 go unchecked, as for any reader */
	} else if (st == AF_OK && n == e->uncomp_size) {
		unsigned char *want = reference_bytes(zip, e, off);
		ck_assert_msg(want != NULL, "%s: served, but zlib refuses it", e->name);
		ck_assert_msg(memcmp(got, want, n) == 0,
			      "%s: bytes differ from the reference reader's", e->name);
		free(want);
		o->served++;
	} else if (st == AF_E_IO) {
		/* a member source says "bad data" as a read error, like a file */
		ck_assert_int_eq(err.sys_errno, EIO);
		o->refused++;
	} else if (st != AF_OK) {
		aft_assert_refused(st, &err, e->name);
		o->refused++;
	}
	free(got);
	af_member_close(m);
}

/* Open @p len bytes at @p buf, whatever they are: a clean refusal, or an
 * archive whose listed names are safe and whose members each read as the
 * reference reader reads them or are refused. */
static void check_archive_or_refusal(const unsigned char *buf, size_t len,
				     outcomes *o)
{
	af_source s;
	af_source_init_mem(&s, buf, len);
	af_zip *z = (af_zip *)1;
	af_error err = { 0 };
	af_status st = af_zip_open(&z, &s, &err);
	if (st != AF_OK) {
		aft_assert_refused(st, &err, "archive");
		ck_assert_ptr_null(z);
		o->refused++;
		return;
	}
	for (size_t i = 0; i < af_zip_count(z); i++) {
		const af_zip_entry *e = af_zip_entry_at(z, i);
		ck_assert_int_eq(af_zip_find(z, e->name) >= 0, 1);
		check_safe_name(e->name);
		if (!e->is_dir)
			check_member_or_refusal(buf, len, z, i, o);
	}
	for (size_t i = 0; i < af_zip_warning_count(z); i++)
		ck_assert_ptr_nonnull(af_zip_warning(z, i));
	af_zip_close(z);
}

/* A stored archive of members whose content is their own name; names are
 * raw bytes (NULs allowed) of the given lengths. Caller frees. */
static unsigned char *build_zip(const char *const *names, const size_t *nlens,
				size_t n, size_t *len_out)
{
	size_t cap = 22;
	for (size_t i = 0; i < n; i++)
		cap += 30 + 46 + 3 * nlens[i];
	unsigned char *b = calloc(1, cap), *p = b;
	size_t *offs = calloc(n ? n : 1, sizeof(*offs));
	ck_assert(b && offs);
	for (size_t i = 0; i < n; i++) {
		offs[i] = (size_t)(p - b);
		put32(p, 0x04034b50);
		put16(p + 4, 20);
		put32(p + 14, (uint32_t)crc32(0, (const void *)names[i],
					      (unsigned)nlens[i]));
		put32(p + 18, (uint32_t)nlens[i]);
		put32(p + 22, (uint32_t)nlens[i]);
		put16(p + 26, (unsigned)nlens[i]);
		memcpy(p + 30, names[i], nlens[i]);
		memcpy(p + 30 + nlens[i], names[i], nlens[i]);
		p += 30 + 2 * nlens[i];
	}
	size_t cd = (size_t)(p - b);
	for (size_t i = 0; i < n; i++) {
		put32(p, 0x02014b50);
		put16(p + 4, 20);
		put16(p + 6, 20);
		memcpy(p + 16, b + offs[i] + 14, 12);
		put16(p + 28, (unsigned)nlens[i]);
		put32(p + 42, (uint32_t)offs[i]);
		memcpy(p + 46, names[i], nlens[i]);
		p += 46 + nlens[i];
	}
	size_t cd_size = (size_t)(p - b) - cd;
	put32(p, 0x06054b50);
	put16(p + 8, (unsigned)n);
	put16(p + 10, (unsigned)n);
	put32(p + 12, (uint32_t)cd_size);
	put32(p + 16, (uint32_t)cd);
	p += 22;
	free(offs);
	*len_out = (size_t)(p - b);
	return b;
}

/* ---- broken archives ------------------------------------------------- */

START_TEST(truncated_at_every_byte_fails)
{
	const char *names[] = { "savez.npz", "zip64.zip", "positional.npz" };
	for (size_t k = 0; k < 3; k++) {
		size_t len;
		unsigned char *buf = load_fixture(names[k], &len);
		/* every byte of the directory and end records, and a little
		 * before them (the data of the last member) */
		size_t cd = get32(buf + eocd_at(len) + 16);
		if (cd == 0xFFFFFFFF) /* zip64.zip: saturated */
			cd = 0;
		for (size_t cut = cd > 256 ? cd - 256 : 0; cut < len; cut++) {
			/* a shorter copy, so valgrind sees any read past it */
			unsigned char *c = malloc(cut ? cut : 1);
			memcpy(c, buf, cut);
			af_error err;
			af_status st = open_mem(c, cut, &err);
			ck_assert_msg(st != AF_OK, "%s cut at %zu opened", names[k],
				      cut);
			free(c);
		}
		free(buf);
	}
}
END_TEST

START_TEST(byte_cut_out_of_central_directory_fails)
{
	size_t len;
	unsigned char *buf = load_fixture("savez.npz", &len);
	size_t cd = get32(buf + eocd_at(len) + 16);
	unsigned char *c = malloc(len);
	for (size_t at = cd; at < len; at++) {
		memcpy(c, buf, at);
		memcpy(c + at, buf + at + 1, len - at - 1);
		ck_assert_msg(open_mem(c, len - 1, NULL) != AF_OK,
			      "byte %zu removed, still opened", at);
	}
	free(c);
	free(buf);
}
END_TEST

/* Flipped bytes are refused, or what still opens reads as a reference
 * reader (memcpy for stored members, zlib for deflated ones) reads it. */
START_TEST(random_byte_flips_are_refused_or_read_as_the_reference)
{
	const char *names[] = { "savez.npz", "savez_compressed.npz",
				"zip64.zip", "mixed.zip" };
	uint64_t seed = 20261123;
	for (size_t k = 0; k < 4; k++) {
		size_t len;
		unsigned char *buf = load_fixture(names[k], &len);
		size_t cd = len > 2048 ? len - 2048 : 0;
		unsigned char *c = malloc(len);
		outcomes o = { 0 };
		for (int round = 0; round < 600; round++) {
			memcpy(c, buf, len);
			int flips = 1 + (int)(aft_rand(&seed) % 4);
			for (int f = 0; f < flips; f++) {
				/* mostly the directory and end records,
				 * sometimes anywhere (local headers) */
				size_t at = round % 4 == 0
					    ? aft_rand(&seed) % len
					    : cd + aft_rand(&seed) % (len - cd);
				c[at] ^= (unsigned char)(1 + aft_rand(&seed) % 255);
			}
			check_archive_or_refusal(c, len, &o);
		}
		/* both sides reached, or the flips test nothing */
		ck_assert_msg(o.refused > 0 && o.served > 0,
			      "%s: %u refused, %u served", names[k], o.refused,
			      o.served);
		free(c);
		free(buf);
	}
}
END_TEST

START_TEST(central_directory_past_eof)
{
	size_t len;
	unsigned char *buf = load_fixture("savez.npz", &len);
	af_error err;
	put32(buf + eocd_at(len) + 16, (uint32_t)len + 100);
	ck_assert_int_eq(open_mem(buf, len, &err), AF_E_TRUNCATED);
	put32(buf + eocd_at(len) + 16, 0xFFFFFFF0u);
	ck_assert_int_eq(open_mem(buf, len, &err), AF_E_TRUNCATED);
	/* a size that runs into the end record */
	free(buf);
	buf = load_fixture("savez.npz", &len);
	put32(buf + eocd_at(len) + 12, get32(buf + eocd_at(len) + 12) + 1);
	ck_assert_int_eq(open_mem(buf, len, &err), AF_E_HEADER);
	free(buf);
}
END_TEST

START_TEST(huge_entry_counts)
{
	size_t len;
	unsigned char *buf = load_fixture("savez.npz", &len);
	af_error err;
	put16(buf + eocd_at(len) + 8, 0xFFFE);
	put16(buf + eocd_at(len) + 10, 0xFFFE);
	ck_assert_int_eq(open_mem(buf, len, &err), AF_E_HEADER);
	put16(buf + eocd_at(len) + 8, 4);
	put16(buf + eocd_at(len) + 10, 4);
	ck_assert_int_eq(open_mem(buf, len, &err), AF_E_HEADER);
	free(buf);

	/* zip64 end record: count 2^40 is over the limit */
	buf = load_fixture("zip64.zip", &len);
	size_t z64 = len - 22 - 20 - 56;
	ck_assert_uint_eq(get32(buf + z64), 0x06064b50);
	put32(buf + z64 + 36, 0x100);
	ck_assert_int_eq(open_mem(buf, len, &err), AF_E_LIMIT);
	put32(buf + z64 + 36, 0);
	put32(buf + z64 + 44, 0x100); /* cd size 2^40: past the file */
	ck_assert_int_ne(open_mem(buf, len, &err), AF_OK);
	put32(buf + z64 + 44, 0);
	put32(buf + z64 + 52, 0xFFFFFFFF); /* cd offset near 2^64 */
	put32(buf + z64 + 48, 0xFFFFFFFF);
	ck_assert_int_eq(open_mem(buf, len, &err), AF_E_OVERFLOW);
	free(buf);
}
END_TEST

START_TEST(zip64_locator_pointing_nowhere)
{
	size_t len;
	unsigned char *buf = load_fixture("zip64.zip", &len);
	size_t loc = len - 22 - 20;
	af_error err;
	put32(buf + loc + 8, (uint32_t)loc); /* points at itself */
	ck_assert_int_eq(open_mem(buf, len, &err), AF_E_HEADER);
	put32(buf + loc + 8, 3); /* no signature there */
	ck_assert_int_eq(open_mem(buf, len, &err), AF_E_HEADER);
	free(buf);
}
END_TEST

START_TEST(not_a_zip)
{
	af_error err;
	ck_assert_int_eq(open_mem((const unsigned char *)"", 0, &err), AF_E_MAGIC);
	ck_assert_int_eq(open_mem((const unsigned char *)"PK\5\6", 4, &err),
			 AF_E_MAGIC);
	unsigned char junk[5000];
	uint64_t seed = 7;
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (unsigned char)aft_rand(&seed);
	ck_assert_int_eq(open_mem(junk, sizeof(junk), &err), AF_E_MAGIC);
	ck_assert_uint_ne(strlen(err.msg), 0);
}
END_TEST

START_TEST(multi_disk_refused)
{
	size_t len;
	unsigned char *buf = load_fixture("savez.npz", &len);
	put16(buf + eocd_at(len) + 4, 1);
	ck_assert_int_eq(open_mem(buf, len, NULL), AF_E_UNSUPPORTED);
	free(buf);
}
END_TEST

START_TEST(saturated_field_without_zip64_extra)
{
	size_t len;
	unsigned char *buf = load_fixture("savez.npz", &len);
	size_t cd = get32(buf + eocd_at(len) + 16);
	put32(buf + cd + 20, 0xFFFFFFFF);
	af_error err;
	ck_assert_int_eq(open_mem(buf, len, &err), AF_E_HEADER);
	ck_assert_ptr_nonnull(strstr(err.msg, "zip64"));
	free(buf);
}
END_TEST

/* Open savez.npz from memory after @p patch has changed its last member
 * (local header at @p loc, central entry at @p cen), then return the status
 * of opening that member. */
typedef void patch_fn(unsigned char *b, size_t loc, size_t cen, size_t cd);

static af_status last_member_after(patch_fn *patch, af_error *err)
{
	size_t len;
	unsigned char *buf = load_fixture("savez.npz", &len);
	size_t cd = get32(buf + eocd_at(len) + 16), cen = cd;
	unsigned n = buf[eocd_at(len) + 10];
	for (unsigned i = 0; i + 1 < n; i++)
		cen += 46 + (buf[cen + 28] | buf[cen + 29] << 8) +
		       (buf[cen + 30] | buf[cen + 31] << 8) +
		       (buf[cen + 32] | buf[cen + 33] << 8);
	ck_assert_uint_eq(get32(buf + cen), 0x02014b50);
	patch(buf, get32(buf + cen + 42), cen, cd);
	af_source s;
	af_source_init_mem(&s, buf, len);
	af_zip *z;
	ck_assert_int_eq(af_zip_open(&z, &s, err), AF_OK);
	af_member *m = NULL;
	af_status st = af_member_open(&m, z, n - 1, err);
	af_member_close(m);
	af_zip_close(z);
	free(buf);
	return st;
}

static void bad_local_sig(unsigned char *b, size_t loc, size_t cen, size_t cd)
{
	(void)cen, (void)cd;
	b[loc] = 'X';
}

static void bad_local_name(unsigned char *b, size_t loc, size_t cen, size_t cd)
{
	(void)cen, (void)cd;
	b[loc + 30] = 'z';
}

static void huge_local_extra(unsigned char *b, size_t loc, size_t cen,
			     size_t cd)
{
	(void)cen, (void)cd;
	put16(b + loc + 28, 0xFFFF);
}

static void stored_sizes_differ(unsigned char *b, size_t loc, size_t cen,
				size_t cd)
{
	(void)loc, (void)cd;
	put32(b + cen + 24, get32(b + cen + 24) + 1);
}

static void local_offset_in_cd(unsigned char *b, size_t loc, size_t cen,
			       size_t cd)
{
	(void)loc;
	put32(b + cen + 42, (uint32_t)cd);
}

static void encrypted_flag(unsigned char *b, size_t loc, size_t cen, size_t cd)
{
	(void)loc, (void)cd;
	put16(b + cen + 8, 1);
}

static void method_zstd(unsigned char *b, size_t loc, size_t cen, size_t cd)
{
	(void)loc, (void)cd;
	put16(b + cen + 10, 93);
}

START_TEST(bad_local_headers)
{
	af_error err;
	ck_assert_int_eq(last_member_after(bad_local_sig, &err), AF_E_HEADER);
	ck_assert_int_eq(last_member_after(bad_local_name, &err), AF_E_HEADER);
	ck_assert_int_eq(last_member_after(huge_local_extra, &err),
			 AF_E_OVERFLOW);
	ck_assert_int_eq(last_member_after(stored_sizes_differ, &err),
			 AF_E_HEADER);
	ck_assert_int_eq(last_member_after(local_offset_in_cd, &err),
			 AF_E_HEADER);
	ck_assert_int_eq(last_member_after(encrypted_flag, &err),
			 AF_E_UNSUPPORTED);
	ck_assert_int_eq(last_member_after(method_zstd, &err),
			 AF_E_UNSUPPORTED);
	ck_assert_ptr_nonnull(strstr(err.msg, "zstd"));
}
END_TEST

START_TEST(deflated_crc_mismatch_reads_as_eio)
{
	size_t len;
	unsigned char *buf = load_fixture("savez_compressed.npz", &len);
	size_t cd = get32(buf + eocd_at(len) + 16);
	put32(buf + cd + 16, get32(buf + cd + 16) ^ 1);
	af_source s;
	af_source_init_mem(&s, buf, len);
	af_zip *z;
	ck_assert_int_eq(af_zip_open(&z, &s, NULL), AF_OK);
	af_member *m;
	ck_assert_int_eq(af_member_open(&m, z, 0, NULL), AF_OK);
	const af_source *ms = af_member_source(m);
	unsigned char *got = malloc(ms->size);
	af_error err;
	ck_assert_int_eq(af_source_read_exact(ms, got, ms->size, 0, &err),
			 AF_E_IO);
	ck_assert_int_eq(err.sys_errno, EIO);
	free(got);
	af_member_close(m);
	af_zip_close(z);
	free(buf);
}
END_TEST

/* ---- archives built here --------------------------------------------- */

START_TEST(nul_and_backslash_names_left_out)
{
	const char *names[] = { "a\0b.npy", "c\\d.npy", "ok.npy", "", "x/" };
	size_t lens[] = { 7, 7, 6, 0, 2 };
	size_t len;
	unsigned char *b = build_zip(names, lens, 5, &len);
	af_source s;
	af_source_init_mem(&s, b, len);
	af_zip *z;
	ck_assert_int_eq(af_zip_open(&z, &s, NULL), AF_OK);
	ck_assert_uint_eq(af_zip_count(z), 2);
	ck_assert_str_eq(af_zip_entry_at(z, 0)->name, "ok.npy");
	ck_assert(af_zip_entry_at(z, 1)->is_dir);
	ck_assert_uint_eq(af_zip_warning_count(z), 3);
	/* the NUL shows escaped, never cutting the line short */
	ck_assert_ptr_nonnull(strstr(af_zip_warning(z, 0), "a\\x00b.npy"));
	af_zip_close(z);
	free(b);
}
END_TEST

START_TEST(overlong_name_component_left_out)
{
	char long_leaf[300], long_dir[300], max_leaf[260];
	memset(long_leaf, 'n', 256);
	memcpy(long_leaf + 256, ".npy", 4); /* 260-byte leaf */
	memcpy(long_dir, "d/", 2);
	memset(long_dir + 2, 'n', 256);
	memcpy(long_dir + 258, "/x.npy", 6); /* 256-byte folder */
	memset(max_leaf, 'm', 251);
	memcpy(max_leaf + 251, ".npy", 4); /* exactly 255 bytes: fine */
	const char *names[] = { long_leaf, long_dir, max_leaf, "ok.npy" };
	size_t lens[] = { 260, 264, 255, 6 };
	size_t len;
	unsigned char *b = build_zip(names, lens, 4, &len);
	af_source s;
	af_source_init_mem(&s, b, len);
	af_zip *z;
	ck_assert_int_eq(af_zip_open(&z, &s, NULL), AF_OK);
	ck_assert_uint_eq(af_zip_count(z), 2);
	ck_assert_uint_eq(strlen(af_zip_entry_at(z, 0)->name), 255);
	ck_assert_str_eq(af_zip_entry_at(z, 1)->name, "ok.npy");
	ck_assert_uint_eq(af_zip_warning_count(z), 2);
	ck_assert_ptr_nonnull(strstr(af_zip_warning(z, 0), "longer than 255"));
	af_zip_close(z);
	free(b);
}
END_TEST

/* fuzz find (regressions/fuzz_zip/names-arena): an early entry with a long
 * name, and an entry count that only fits if later entries are short */
START_TEST(long_first_name_with_overstated_count_fails)
{
	char longname[60];
	memset(longname, 'L', sizeof(longname));
	const char *names[] = { longname, "b" };
	size_t lens[] = { sizeof(longname), 1 };
	size_t len;
	unsigned char *b = build_zip(names, lens, 2, &len);
	size_t eocd = eocd_at(len);
	put16(b + eocd + 8, 3);
	put16(b + eocd + 10, 3);
	af_error err;
	ck_assert_int_eq(open_mem(b, len, &err), AF_E_HEADER);
	free(b);
}
END_TEST

START_TEST(warnings_are_capped)
{
	enum { N = 300 };
	static char store[N][16];
	const char *names[N];
	size_t lens[N];
	for (int i = 0; i < N; i++) {
		lens[i] = (size_t)snprintf(store[i], sizeof(store[i]),
					   "../%d.npy", i);
		names[i] = store[i];
	}
	size_t len;
	unsigned char *b = build_zip(names, lens, N, &len);
	af_source s;
	af_source_init_mem(&s, b, len);
	af_zip *z;
	ck_assert_int_eq(af_zip_open(&z, &s, NULL), AF_OK);
	ck_assert_uint_eq(af_zip_count(z), 0);
	ck_assert_uint_eq(af_zip_warning_count(z), 101);
	ck_assert_str_eq(af_zip_warning(z, 100), "and 200 more warnings");
	af_zip_close(z);
	free(b);
}
END_TEST

START_TEST(find_is_exact_on_sorted_names)
{
	const char *names[] = { "b", "a/", "a/c", "ab", "a", "B", "\xc3\xa9" };
	size_t lens[] = { 1, 2, 3, 2, 1, 1, 2 };
	size_t len;
	unsigned char *b = build_zip(names, lens, 7, &len);
	af_source s;
	af_source_init_mem(&s, b, len);
	af_zip *z;
	ck_assert_int_eq(af_zip_open(&z, &s, NULL), AF_OK);
	for (size_t i = 0; i < 7; i++)
		ck_assert_int_eq(af_zip_find(z, names[i]), (long)i);
	ck_assert_int_eq(af_zip_find(z, "a/c/"), -1);
	ck_assert_int_eq(af_zip_find(z, "A"), -1);
	af_zip_close(z);
	free(b);
}
END_TEST

/* ---- sources --------------------------------------------------------- */

/* A source that is neither fd nor memory: reads through a memory source
 * and counts calls. */
static ssize_t counting_pread(const af_source *src, void *buf, size_t len,
			      uint64_t off)
{
	const af_source *inner = src->ctx;
	return inner->pread(inner, buf, len, off);
}

static void init_generic(af_source *s, af_source *inner)
{
	memset(s, 0, sizeof(*s));
	s->pread = counting_pread;
	s->fd = -1;
	s->size = inner->size;
	s->ctx = inner;
}

/* Members read through a generic source list and read exactly as through
 * memory, and as python's zipfile reads them. */
START_TEST(members_over_a_generic_source)
{
	size_t len;
	unsigned char *buf = load_fixture("savez.npz", &len);
	af_source inner, outer;
	af_source_init_mem(&inner, buf, len);
	init_generic(&outer, &inner);
	af_zip *z, *zm;
	ck_assert_int_eq(af_zip_open(&z, &outer, NULL), AF_OK);
	ck_assert_int_eq(af_zip_open(&zm, &inner, NULL), AF_OK);
	ck_assert_uint_eq(af_zip_count(z), af_zip_count(zm));
	ck_assert_uint_ge(af_zip_count(z), 2);
	for (size_t i = 0; i < af_zip_count(z); i++) {
		const af_zip_entry *e = af_zip_entry_at(z, i);
		ck_assert_str_eq(e->name, af_zip_entry_at(zm, i)->name);
		ck_assert_uint_eq(e->uncomp_size, af_zip_entry_at(zm, i)->uncomp_size);
		af_member *m;
		ck_assert_int_eq(af_member_open(&m, z, i, NULL), AF_OK);
		const af_source *ms = af_member_source(m);
		ck_assert_int_eq(ms->fd, -1);
		size_t wl;
		char rel[64];
		snprintf(rel, sizeof(rel), "zip/savez.npz.%zu.bin", i);
		unsigned char *want = aft_read_file(aft_fixture(rel), &wl);
		unsigned char *got = malloc(wl + 1);
		ck_assert_uint_eq(ms->size, wl);
		ck_assert_int_eq(af_source_read_exact(ms, got, wl, 0, NULL), AF_OK);
		ck_assert_int_eq(memcmp(got, want, wl), 0);
		ck_assert_int_eq(ms->pread(ms, got, 10, wl), 0);
		free(got);
		free(want);
		af_member_close(m);
	}
	af_zip_close(zm);
	af_zip_close(z);
	free(buf);
}
END_TEST

#include "../../src/codec/subsource_i.h"

START_TEST(subsource_kinds_and_ranges)
{
	static const char text[] = "0123456789";
	af_source mem, gen;
	af_source_init_mem(&mem, text, 10);
	init_generic(&gen, &mem);
	af_subsource sub, sub2;
	af_error err;
	char buf[16];

	ck_assert_int_eq(af_subsource_init(&sub, &mem, 2, 5, &err), AF_OK);
	ck_assert_ptr_eq(sub.src.mem, (const unsigned char *)text + 2);
	ck_assert_int_eq(sub.src.pread(&sub.src, buf, 16, 1), 4);
	ck_assert_int_eq(memcmp(buf, "3456", 4), 0);

	ck_assert_int_eq(af_subsource_init(&sub, &gen, 3, 4, &err), AF_OK);
	ck_assert_int_eq(sub.src.fd, -1);
	ck_assert_int_eq(sub.src.pread(&sub.src, buf, 16, 0), 4);
	ck_assert_int_eq(memcmp(buf, "3456", 4), 0);
	ck_assert_int_eq(sub.src.pread(&sub.src, buf, 16, 4), 0);
	/* a range of a range */
	ck_assert_int_eq(af_subsource_init(&sub2, &sub.src, 1, 2, &err), AF_OK);
	ck_assert_int_eq(sub2.src.pread(&sub2.src, buf, 16, 0), 2);
	ck_assert_int_eq(memcmp(buf, "45", 2), 0);

	ck_assert_int_eq(af_subsource_init(&sub, &mem, 8, 3, &err), AF_E_RANGE);
	ck_assert_uint_eq(sub.src.size, 0);
	ck_assert_int_eq(af_subsource_init(&sub, &mem, UINT64_MAX, 2, &err),
			 AF_E_OVERFLOW);
	ck_assert_int_eq(af_subsource_init(&sub, &mem, 10, 0, &err), AF_OK);
	ck_assert_int_eq(sub.src.pread(&sub.src, buf, 1, 0), 0);

	char path[] = "/tmp/afzip-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	unlink(path);
	ck_assert_int_eq(write(fd, text, 10), 10);
	af_source fds;
	af_source_init_fd(&fds, fd, 1, 9);
	ck_assert_int_eq(af_subsource_init(&sub, &fds, 2, 4, &err), AF_OK);
	ck_assert_int_eq(sub.src.fd, fd);
	ck_assert_uint_eq(sub.src.fd_base, 3);
	ck_assert_int_eq(sub.src.pread(&sub.src, buf, 16, 0), 4);
	ck_assert_int_eq(memcmp(buf, "3456", 4), 0);
	af_source_init_fd(&fds, fd, UINT64_MAX - 4, 9);
	ck_assert_int_eq(af_subsource_init(&sub, &fds, 2, 4, &err),
			 AF_E_OVERFLOW);
	close(fd);
}
END_TEST

/* Several threads share one af_zip and open members at once. */
static void *reader_thread(void *arg)
{
	const af_zip *z = arg;
	for (int round = 0; round < 50; round++) {
		for (size_t i = 0; i < af_zip_count(z); i++) {
			if (af_zip_find(z, af_zip_entry_at(z, i)->name) != (long)i)
				return (void *)1;
			af_member *m;
			if (af_member_open(&m, z, i, NULL) != AF_OK)
				return (void *)1;
			unsigned char b[64];
			const af_source *s = af_member_source(m);
			if (s->size >= 6 &&
			    (s->pread(s, b, 6, 0) != 6 || memcmp(b, "\x93NUMPY", 6)))
				return (void *)1;
			af_member_close(m);
		}
	}
	return NULL;
}

START_TEST(threads_share_one_archive)
{
	char rel[64];
	snprintf(rel, sizeof(rel), "zip/%s",
		 _i ? "savez_compressed.npz" : "savez.npz");
	af_source src;
	int fd = aft_open_fd_source(aft_fixture(rel), &src);
	af_zip *z;
	ck_assert_int_eq(af_zip_open(&z, &src, NULL), AF_OK);
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, reader_thread, z), 0);
	for (int i = 0; i < 4; i++) {
		void *r;
		ck_assert_int_eq(pthread_join(t[i], &r), 0);
		ck_assert_ptr_null(r);
	}
	af_zip_close(z);
	close(fd);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("zip_broken");
	TCase *tc = tcase_create("mangled");
	aft_tag_slow(tc);
	tcase_add_test(tc, truncated_at_every_byte_fails);
	tcase_add_test(tc, byte_cut_out_of_central_directory_fails);
	tcase_add_test(tc, random_byte_flips_are_refused_or_read_as_the_reference);
	suite_add_tcase(s, tc);

	tc = tcase_create("broken");
	tcase_add_test(tc, central_directory_past_eof);
	tcase_add_test(tc, huge_entry_counts);
	tcase_add_test(tc, zip64_locator_pointing_nowhere);
	tcase_add_test(tc, not_a_zip);
	tcase_add_test(tc, multi_disk_refused);
	tcase_add_test(tc, saturated_field_without_zip64_extra);
	tcase_add_test(tc, bad_local_headers);
	tcase_add_test(tc, deflated_crc_mismatch_reads_as_eio);
	suite_add_tcase(s, tc);

	tc = tcase_create("built");
	tcase_add_test(tc, nul_and_backslash_names_left_out);
	tcase_add_test(tc, overlong_name_component_left_out);
	tcase_add_test(tc, long_first_name_with_overstated_count_fails);
	tcase_add_test(tc, warnings_are_capped);
	tcase_add_test(tc, find_is_exact_on_sorted_names);
	suite_add_tcase(s, tc);

	tc = tcase_create("sources");
	tcase_add_test(tc, members_over_a_generic_source);
	tcase_add_test(tc, subsource_kinds_and_ranges);
	tcase_add_loop_test(tc, threads_share_one_archive, 0, 2);
	suite_add_tcase(s, tc);
	return aft_run(s);
}
