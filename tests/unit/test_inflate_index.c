/* SPDX-License-Identifier: MIT */
/* Tests for src/codec/inflate/inflate_index.c and inflate_index_file.c: saved
 * access points, refused index files, span CRC checks, the index folder. */
#include <dirent.h>
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
#include "../../src/codec/bytes_i.h"
#include "../../src/codec/inflate/inflate_state_i.h"
#include "pool_gate.h"

#define KIB (1u << 10)
#define SPAN (128u * KIB)
#define PIECE (32u * KIB)

struct member {
	unsigned char *plain, *comp;
	size_t plen, clen;
	uint32_t crc;
	af_source src;
	af_index_key key;
};

/* Deflate m->plain (m->plen bytes) at @p level into m->comp and key it.
 * level 0 gives stored blocks, whose bytes can be altered in place. */
static void deflate_member(struct member *m, int level)
{
	m->crc = (uint32_t)crc32_z(0, m->plain, m->plen);
	z_stream zs;
	memset(&zs, 0, sizeof(zs));
	ck_assert_int_eq(deflateInit2(&zs, level, Z_DEFLATED, -15,
				      level ? 1 : 8,
				      Z_DEFAULT_STRATEGY), Z_OK);
	size_t cap = deflateBound(&zs, m->plen);
	free(m->comp);
	m->comp = malloc(cap);
	ck_assert_ptr_nonnull(m->comp);
	zs.next_in = m->plain;
	zs.avail_in = (uInt)m->plen;
	zs.next_out = m->comp;
	zs.avail_out = (uInt)cap;
	ck_assert_int_eq(deflate(&zs, Z_FINISH), Z_STREAM_END);
	m->clen = cap - zs.avail_out;
	deflateEnd(&zs);
	af_source_init_mem(&m->src, m->comp, m->clen);
	m->key.comp_size = m->clen;
	m->key.uncomp_size = m->plen;
	m->key.crc = m->crc;
}

/* Words and digits from a seeded generator: compressible, many blocks. */
static void make_member(struct member *m, size_t n, int level, uint64_t seed)
{
	m->plain = malloc(n);
	ck_assert_ptr_nonnull(m->plain);
	for (size_t i = 0; i < n; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		unsigned r = (unsigned)(seed >> 33);
		m->plain[i] = (unsigned char)(r % 7 ? "arrayfs "[i % 8]
						    : "0123456789"[r % 10]);
	}
	m->plen = n;
	m->comp = NULL;
	memset(&m->key, 0, sizeof(m->key));
	m->key.dev = 1;
	m->key.ino = 2;
	m->key.size = 3;
	m->key.mtime_sec = 4;
	m->key.local_offset = seed % 1000;
	deflate_member(m, level);
}

/* Like make_member, but bytes of a generator with the words only now and
 * then: deflate finds few matches, as in float32 measurements. */
static void make_noise_member(struct member *m, size_t n, uint64_t seed)
{
	make_member(m, n, 6, seed);
	for (size_t i = 0; i < n; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		if ((seed >> 60) != 0)
			m->plain[i] = (unsigned char)(seed >> 40);
	}
	deflate_member(m, 6);
}

static void free_member(struct member *m)
{
	free(m->plain);
	free(m->comp);
}

static af_inflate *open_engine(struct member *m, af_inflate_engine engine)
{
	struct af_inflate_opts o;
	af_inflate_default_opts(&o);
	o.engine = engine;
	o.span = SPAN;
	o.index_div = 0; /* a point every span */
	o.block = 16 * KIB;
	o.piece = PIECE;
	o.cache_blocks = 8;
	af_inflate *z = NULL;
	af_error err;
	ck_assert_int_eq(af_inflate_open_opts(&z, &m->src, m->plen, m->crc, &o,
					      &err), AF_OK);
	return z;
}

static af_status read_at(af_inflate *z, struct member *m, uint64_t off,
			 size_t len, af_error *err)
{
	unsigned char *buf = malloc(len);
	size_t n = 0;
	af_status st = af_inflate_read(z, buf, len, off, &n, err);
	if (st == AF_OK) {
		size_t want = len < m->plen - off ? len : m->plen - off;
		ck_assert_uint_eq(n, want);
		ck_assert_msg(memcmp(buf, m->plain + off, n) == 0,
			      "bytes differ at %llu", (unsigned long long)off);
	}
	free(buf);
	return st;
}

/* Reads of @p len bytes every @p step from @p first all give m's bytes. */
static void reads_right(af_inflate *z, struct member *m, uint64_t first,
			uint64_t step, size_t len)
{
	af_error err;
	for (uint64_t off = first; off < m->plen; off += step) {
		af_status st = read_at(z, m, off, len, &err);
		ck_assert_msg(st == AF_OK, "read at %llu: %s",
			      (unsigned long long)off, err.msg);
	}
}

static af_inflate *open_member(struct member *m)
{
	return open_engine(m, AF_INFLATE_AUTO);
}

/* A sequential pass with @p engine, then the exported index. */
static unsigned char *saved_by(struct member *m, af_inflate_engine engine,
			       size_t *len)
{
	af_inflate *z = open_engine(m, engine);
	af_error err;
	ck_assert(!af_inflate_index_ready(z));
	for (uint64_t off = 0; off < m->plen; off += 100 * KIB)
		ck_assert_int_eq(read_at(z, m, off, 100 * KIB, &err), AF_OK);
	ck_assert(af_inflate_index_ready(z));
	ck_assert_uint_gt(af_inflate_points(z), 4);
	unsigned char *buf;
	ck_assert_int_eq(af_inflate_index_export(z, &m->key, &buf, len, &err),
			 AF_OK);
	ck_assert(!af_inflate_index_ready(z)); /* saved once */
	af_inflate_close(z);
	return buf;
}

static unsigned char *saved_index(struct member *m, size_t *len)
{
	return saved_by(m, AF_INFLATE_AUTO, len);
}

/* A new stream of @p m with the index @p idx (@p len bytes) loaded. */
/* Make an index file's own checksum right again after an edit. */
static void fix_checksum(unsigned char *idx, size_t len)
{
	uLong sum = crc32(0, idx, (uInt)(len - 4));
	for (int i = 0; i < 4; i++)
		idx[len - 4 + i] = (unsigned char)(sum >> (8 * i));
}

static af_inflate *with_index(struct member *m, const unsigned char *idx,
			      size_t len)
{
	af_inflate *z = open_member(m);
	af_error err;
	ck_assert_int_eq(af_inflate_index_import(z, &m->key, idx, len, &err),
			 AF_OK);
	ck_assert(af_inflate_index_loaded(z));
	return z;
}

START_TEST(loaded_index_reads_at_random_within_a_span)
{
	struct member m;
	make_member(&m, 3u << 20, 6, 7);
	size_t len;
	unsigned char *idx = saved_index(&m, &len);
	af_inflate *z = with_index(&m, idx, len);
	af_error err;
	uint64_t seed = 99;
	for (int i = 0; i < 40; i++) {
		seed = seed * 6364136223846793005ull + 1;
		uint64_t off = (seed >> 20) % m.plen;
		uint64_t before = af_inflate_inflated(z);
		ck_assert_int_eq(read_at(z, &m, off, 4 * KIB, &err), AF_OK);
		/* the nearest point, then the span's end to check it: no
		 * pass from 0 (points land on block ends past each span) */
		ck_assert_uint_le(af_inflate_inflated(z) - before,
				  3 * SPAN + 16 * KIB);
	}
	/* the last byte, from the last point */
	ck_assert_int_eq(read_at(z, &m, m.plen - 1, 1, &err), AF_OK);
	af_inflate_close(z);
	free(idx);
	free_member(&m);
}
END_TEST

/* The pieces of @p z's loaded index in order (as the file lists their
 * CRCs): starts into @p at, ends into @p to; returns their count. */
static size_t pieces(af_inflate *z, uint64_t size, uint64_t *at,
		     uint64_t *to, size_t max)
{
	size_t n = 0, np = af_inflate_points(z);
	for (size_t k = 0; k <= np; k++) {
		uint64_t a = k ? af_inflate_point_out(z, k - 1) : 0;
		uint64_t b = k < np ? af_inflate_point_out(z, k) : size;
		for (uint64_t s = a; s < b; n++) {
			uint64_t e = (s / PIECE + 1) * PIECE;
			ck_assert_uint_lt(n, max);
			at[n] = s;
			to[n] = e < b ? e : b;
			s = to[n];
		}
	}
	return n;
}

/* Each read inflates from its nearest point to the end of the piece
 * holding its last byte (or of the cache block holding it, if later: a
 * cursor fills that block), not to its span's end. */
START_TEST(read_inflates_to_its_piece_end)
{
	struct member m;
	make_member(&m, 3u << 20, 6, 17);
	size_t len;
	unsigned char *idx = saved_index(&m, &len);
	af_error err;
	uint64_t seed = 5;
	size_t under_span = 0;
	for (int i = 0; i < 60; i++) {
		/* a fresh stream each time: no cursor or cache to help */
		af_inflate *z = with_index(&m, idx, len);
		seed = seed * 6364136223846793005ull + 1;
		uint64_t off = (seed >> 20) % (m.plen - 4 * KIB);
		uint64_t last = off + 4 * KIB - 1, pt = 0, next = m.plen;
		for (size_t k = 0; k < af_inflate_points(z); k++) {
			uint64_t o = af_inflate_point_out(z, k);
			if (o <= off)
				pt = o;
			else if (o > last && o < next)
				next = o;
		}
		uint64_t pend = (last / PIECE + 1) * PIECE;
		if (pend > next)
			pend = next;
		/* a cursor fills the cache block holding the last byte */
		uint64_t bend = (last / (16 * KIB) + 1) * (16 * KIB);
		if (bend > pend)
			pend = bend;
		ck_assert_int_eq(read_at(z, &m, off, 4 * KIB, &err), AF_OK);
		ck_assert_msg(af_inflate_inflated(z) <= pend - pt,
			      "read at %llu inflated %llu bytes from the point "
			      "at %llu, its piece ends at %llu",
			      (unsigned long long)off,
			      (unsigned long long)af_inflate_inflated(z),
			      (unsigned long long)pt, (unsigned long long)pend);
		under_span += pend < next;
		af_inflate_close(z);
	}
	ck_assert_uint_gt(under_span, 20); /* the pieces did cut spans */
	free(idx);
	free_member(&m);
}
END_TEST

/* A forged piece CRC (file checksum made good again): reads in that piece
 * fail, every time; reads around it, in the same span, before and after
 * it, give the right bytes. */
START_TEST(forged_piece_crc_fails_that_piece_only)
{
	struct member m;
	make_member(&m, 2u << 20, 6, 23);
	size_t len;
	unsigned char *idx = saved_index(&m, &len);
	af_inflate *z = with_index(&m, idx, len);
	af_error err;
	static uint64_t at[4096], to[4096];
	size_t n = pieces(z, m.plen, at, to, 4096);
	af_inflate_close(z);
	/* a middle piece with pieces of its span on both sides */
	size_t j = n / 2;
	while (at[j] % PIECE != 0 || to[j] % PIECE != 0 ||
	       to[j + 1] % PIECE != 0)
		j++;
	ck_assert_uint_lt(j + 1, n);
	unsigned char *crc = idx + len - 4 - 4 * (n - j);
	crc[1] ^= 0x5a;
	fix_checksum(idx, len);
	/* alone, a forged piece CRC no longer makes the member's CRC-32 */
	z = open_member(&m);
	ck_assert_int_eq(af_inflate_index_import(z, &m.key, idx, len, &err),
			 AF_E_CORRUPT);
	ck_assert_ptr_nonnull(strstr(err.msg, "piece CRC-32s"));
	af_inflate_close(z);
	/* a second forged CRC, the last piece's, makes up for it */
	uint32_t head = 0;
	for (size_t i = 0; i + 1 < n; i++)
		head = (uint32_t)crc32_combine64(
			head, af_le32(idx + len - 4 - 4 * (n - i)),
			(z_off64_t)(to[i] - at[i]));
	uint32_t last = m.crc ^ (uint32_t)crc32_combine64(
		head, 0, (z_off64_t)(to[n - 1] - at[n - 1]));
	for (int i = 0; i < 4; i++)
		idx[len - 8 + i] = (unsigned char)(last >> (8 * i));
	fix_checksum(idx, len);

	z = with_index(&m, idx, len);
	/* after it first: its cursor passes through the bad piece */
	ck_assert_int_eq(read_at(z, &m, at[j + 1] + 100, 1000, &err), AF_OK);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(read_at(z, &m, (at[j] + to[j]) / 2, 1000,
					 &err), AF_E_CORRUPT);
		ck_assert_ptr_nonnull(strstr(err.msg, "piece"));
		ck_assert_int_eq(read_at(z, &m, at[j], 1, &err), AF_E_CORRUPT);
		ck_assert_int_eq(read_at(z, &m, to[j] - 1, 1, &err),
				 AF_E_CORRUPT);
	}
	ck_assert_int_eq(read_at(z, &m, at[j - 1], to[j - 1] - at[j - 1],
				 &err), AF_OK);
	ck_assert_int_eq(read_at(z, &m, to[j], 1, &err), AF_OK);
	ck_assert_int_eq(read_at(z, &m, to[j + 1] - 10, 10, &err), AF_OK);
	ck_assert_int_eq(read_at(z, &m, 0, 100, &err), AF_OK);
	ck_assert_int_eq(read_at(z, &m, m.plen - 1, 1, &err), AF_E_CORRUPT);
	af_inflate_close(z);
	free(idx);
	free_member(&m);
}
END_TEST

/* Points are block boundaries either engine resumes from, whichever
 * recorded them: an index saved by one serves the other. */
START_TEST(index_of_one_engine_serves_the_other)
{
	if (!af_inflate_engine_available(AF_INFLATE_ISAL))
		return;
	static const af_inflate_engine pairs[2][2] = {
		{ AF_INFLATE_ZLIB, AF_INFLATE_ISAL },
		{ AF_INFLATE_ISAL, AF_INFLATE_ZLIB },
	};
	struct member m;
	make_member(&m, 2u << 20, 6, 31);
	for (int p = 0; p < 2; p++) {
		size_t len;
		unsigned char *idx = saved_by(&m, pairs[p][0], &len);
		af_inflate *z = open_engine(&m, pairs[p][1]);
		af_error err;
		ck_assert_int_eq(af_inflate_index_import(z, &m.key, idx, len,
							 &err), AF_OK);
		reads_right(z, &m, 1000, 300 * KIB, 3000);
		af_inflate_close(z);
		free(idx);
	}
	free_member(&m);
}
END_TEST

START_TEST(tampered_index_is_refused_and_bytes_stay_right)
{
	struct member m, other;
	make_member(&m, 2u << 20, 6, 11);
	make_member(&other, 2u << 20, 6, 12);
	size_t len, olen;
	unsigned char *idx = saved_index(&m, &len);
	unsigned char *oidx = saved_index(&other, &olen);
	af_error err;
	/* a flipped byte anywhere, truncation anywhere */
	for (size_t at = 0; at < len; at += at < 256 ? 1 : 997) {
		af_inflate *z = open_member(&m);
		idx[at] ^= 0x10;
		ck_assert_msg(af_inflate_index_import(z, &m.key, idx, len,
						      &err) == AF_E_CORRUPT,
			      "a flip at %zu was accepted", at);
		idx[at] ^= 0x10;
		ck_assert_int_eq(af_inflate_index_import(z, &m.key, idx, at,
							 &err), AF_E_CORRUPT);
		ck_assert(!af_inflate_index_loaded(z));
		ck_assert_int_eq(read_at(z, &m, at * 7 % m.plen, 5000, &err),
				 AF_OK);
		af_inflate_close(z);
	}
	/* another member's index, and a stale key (the archive changed) */
	af_inflate *z = open_member(&m);
	ck_assert_int_eq(af_inflate_index_import(z, &m.key, oidx, olen, &err),
			 AF_E_CORRUPT);
	ck_assert_ptr_nonnull(strstr(err.msg, "stale"));
	af_index_key changed = m.key;
	changed.mtime_nsec = 1;
	ck_assert_int_eq(af_inflate_index_import(z, &changed, idx, len, &err),
			 AF_E_CORRUPT);
	/* the good one loads, but only before the first read */
	ck_assert_int_eq(read_at(z, &m, 12345, 10, &err), AF_OK);
	ck_assert_int_eq(af_inflate_index_import(z, &m.key, idx, len, &err),
			 AF_E_INVAL);
	af_inflate_close(z);
	free(idx);
	free(oidx);
	free_member(&m);
	free_member(&other);
}
END_TEST

START_TEST(member_altered_after_saving_fails_its_span)
{
	struct member m;
	make_member(&m, 2u << 20, 0, 5); /* stored blocks */
	size_t len;
	unsigned char *idx = saved_index(&m, &len);
	/* alter one stored byte: the stream still inflates, to other bytes */
	size_t where = m.clen / 2;
	m.comp[where] ^= 0x01;
	af_inflate *z = open_member(&m);
	af_error err;
	ck_assert_int_eq(af_inflate_index_import(z, &m.key, idx, len, &err),
			 AF_OK);
	/* far from the change: fine */
	ck_assert_int_eq(read_at(z, &m, 0, 1000, &err), AF_OK);
	ck_assert_int_eq(read_at(z, &m, m.plen - 1000, 1000, &err), AF_OK);
	/* its span: refused, every time, naming the span */
	for (int i = 0; i < 2; i++) {
		static unsigned char buf[64 * KIB];
		size_t n;
		ck_assert_int_eq(af_inflate_read(z, buf, sizeof(buf),
						 m.plen / 2 - sizeof(buf) / 2,
						 &n, &err),
				 AF_E_CORRUPT);
		ck_assert_ptr_nonnull(strstr(err.msg, "span"));
	}
	/* nowhere in the span, not even from blocks cached before the check */
	unsigned long long a, b;
	ck_assert_int_eq(sscanf(strstr(err.msg, "output bytes"),
				"output bytes %llu to %llu", &a, &b), 2);
	uint64_t at[] = { a, (a + b) / 2, b - 100, b - 100 - 16 * KIB };
	for (int i = 0; i < 4; i++) {
		unsigned char buf[100];
		size_t n;
		ck_assert_int_eq(af_inflate_read(z, buf, sizeof(buf), at[i],
						 &n, &err), AF_E_CORRUPT);
	}
	ck_assert_int_eq(af_status_errno(AF_E_CORRUPT), EIO);
	af_inflate_close(z);
	free(idx);
	free_member(&m);
}
END_TEST

static char *temp_dir(void)
{
	char *d = strdup("/tmp/af-index-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(d));
	return d;
}

static size_t count_files(const char *dir)
{
	DIR *d = opendir(dir);
	ck_assert_ptr_nonnull(d);
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static void remove_dir(char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[512];
	while (d && (e = readdir(d)) != NULL) {
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		unlink(p);
	}
	if (d)
		closedir(d);
	rmdir(dir);
	free(dir);
}

static af_inflate *read_through(struct member *m)
{
	af_inflate *z = open_member(m);
	af_error err;
	for (uint64_t off = 0; off < m->plen; off += 256 * KIB)
		ck_assert_int_eq(read_at(z, m, off, 256 * KIB, &err), AF_OK);
	return z;
}

START_TEST(folder_saves_loads_and_keeps_its_budget)
{
	char *dir = temp_dir();
	struct member a, b;
	make_member(&a, 2u << 20, 6, 21);
	make_member(&b, 2u << 20, 6, 22);
	af_error err;
	af_inflate *z = open_member(&a);
	ck_assert_int_eq(af_index_file_load(z, dir, &a.key, &err), AF_E_RANGE);
	ck_assert_int_eq(af_index_file_save(z, dir, &a.key, 1u << 30, &err),
			 AF_E_INVAL); /* nothing read yet */
	af_inflate_close(z);

	z = read_through(&a);
	ck_assert_int_eq(af_index_file_save(z, dir, &a.key, 1u << 30, &err),
			 AF_OK);
	af_inflate_close(z);
	ck_assert_uint_eq(count_files(dir), 1);
	z = open_member(&a);
	ck_assert_int_eq(af_index_file_load(z, dir, &a.key, &err), AF_OK);
	ck_assert_int_eq(read_at(z, &a, a.plen / 3, 1000, &err), AF_OK);
	af_inflate_close(z);

	/* b's file with a budget of one file: a's, older, goes */
	char name[64], path[512];
	af_index_file_name(name, sizeof(name), &a.key);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	struct stat st;
	ck_assert_int_eq(stat(path, &st), 0);
	struct timespec old[2] = { { 1, 0 }, { 1, 0 } };
	ck_assert_int_eq(utimensat(AT_FDCWD, path, old, 0), 0);
	z = read_through(&b);
	ck_assert_int_eq(af_index_file_save(z, dir, &b.key,
					    (uint64_t)st.st_size + 100, &err),
			 AF_OK);
	af_inflate_close(z);
	ck_assert_uint_eq(count_files(dir), 1);
	ck_assert_int_ne(stat(path, &st), 0);

	/* a truncated file is refused (the caller says so), not trusted */
	af_index_file_name(name, sizeof(name), &b.key);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	ck_assert_int_eq(truncate(path, 200), 0);
	z = open_member(&b);
	ck_assert_int_eq(af_index_file_load(z, dir, &b.key, &err),
			 AF_E_CORRUPT);
	ck_assert_int_eq(read_at(z, &b, b.plen - 10, 10, &err), AF_OK);
	af_inflate_close(z);
	free_member(&a);
	free_member(&b);
	remove_dir(dir);
}
END_TEST

/* Read a member of a zip in memory whole through @p o, 1 MiB at a time. */
static void read_member_whole(const unsigned char *zip, size_t zlen,
			      const struct member *want,
			      const af_member_opts *o, bool close_now)
{
	af_source src;
	af_source_init_mem(&src, zip, zlen);
	af_zip *z;
	af_member *m;
	af_error err;
	ck_assert_int_eq(af_zip_open(&z, &src, &err), AF_OK);
	ck_assert_int_eq(af_member_open_opts(&m, z, 0, o, &err), AF_OK);
	const af_source *out = af_member_source(m);
	unsigned char *buf = malloc(1u << 20);
	ck_assert_ptr_nonnull(buf);
	for (uint64_t off = 0; off < want->plen; off += 1u << 20) {
		size_t n = want->plen - off < (1u << 20) ? want->plen - off
							  : 1u << 20;
		ck_assert_int_eq(out->pread(out, buf, n, off), (ssize_t)n);
		ck_assert(memcmp(buf, want->plain + off, n) == 0);
	}
	free(buf);
	if (!close_now) {
		/* the read that ended the pass queued the save: not done */
		ck_assert_uint_eq(count_files(o->index_dir), 0);
		while (af_pool_run_one(o->pool ? o->pool : o->saver))
			;
		ck_assert_uint_eq(count_files(o->index_dir), 1);
	}
	af_member_close(m); /* a save still queued is done here */
	af_zip_close(z);
	ck_assert_uint_eq(count_files(o->index_dir), 1);
}

/* With a pool, the index is saved by a pool thread, not by the read that
 * ends the pass; closing the member does a save still queued. */
/* A 4 MiB member from @p seed, and a zip of it alone (malloc'ed). */
static unsigned char *zip_of_member(struct member *a, uint64_t seed,
				    size_t *zlen)
{
	make_member(a, 4u << 20, 6, seed);
	return aft_zip_deflated("x.npy", a->plain, a->plen, 6, zlen);
}

START_TEST(member_saves_its_index_on_the_pool)
{
	struct member a;
	size_t zlen;
	unsigned char *zip = zip_of_member(&a, 31, &zlen);
	af_pool *pool;
	af_error err;
	ck_assert_int_eq(af_pool_open(&pool, 0, 64u << 20, &err), AF_OK);
	char *dir = temp_dir();
	af_member_opts o;
	memset(&o, 0, sizeof(o));
	o.index_dir = dir;
	o.index_budget = 1u << 30;
	o.archive = a.key;
	o.pool = pool;
	read_member_whole(zip, zlen, &a, &o, false);
	remove_dir(dir);
	dir = temp_dir();
	o.index_dir = dir;
	read_member_whole(zip, zlen, &a, &o, true);
	ck_assert_uint_eq(af_pool_queued(pool), 0);
	af_pool_close(pool);
	remove_dir(dir);
	free(zip);
	free_member(&a);
}
END_TEST

/* With no pool, a saver's background thread saves the index: the read
 * that ends the pass only queues it (held here behind a job that keeps
 * the thread busy), and closing the member does a save still queued. */
START_TEST(member_saves_its_index_on_a_saver_without_a_pool)
{
	struct member a;
	size_t zlen;
	unsigned char *zip = zip_of_member(&a, 37, &zlen);
	af_pool *saver;
	af_error err;
	ck_assert_int_eq(af_pool_open_background(&saver, &err), AF_OK);
	ck_assert_uint_eq(af_pool_threads(saver), 0);
	struct gate busy;
	gate_init(&busy, true);
	afp_submit(saver, &busy.job);
	gate_wait_entered(&busy);
	af_member_opts o;
	memset(&o, 0, sizeof(o));
	o.index_budget = 1u << 30;
	o.archive = a.key;
	o.saver = saver;
	for (int close_now = 0; close_now < 2; close_now++) {
		char *dir = temp_dir();
		o.index_dir = dir;
		read_member_whole(zip, zlen, &a, &o, close_now);
		ck_assert_uint_eq(af_pool_queued(saver), 0);
		remove_dir(dir);
	}
	gate_open(&busy);
	af_pool_close(saver);
	gate_destroy(&busy);
	free(zip);
	free_member(&a);
}
END_TEST

/* Index file layout (inflate_index.c): a header, then per point its
 * record and stored window. */
#define FILE_HEAD 128u
#define FILE_POINT 28u

/* Offset in @p idx of point @p i's record. */
static size_t point_at(const unsigned char *idx, size_t i)
{
	size_t at = FILE_HEAD;
	for (size_t k = 0; k < i; k++) {
		uint32_t wlen = af_le32(idx + at + 20), zlen = af_le32(idx + at + 24);
		at += FILE_POINT + (zlen ? zlen : wlen);
	}
	return at;
}

START_TEST(saved_windows_keep_only_the_bytes_reached)
{
	struct member m;
	make_noise_member(&m, 3u << 20, 41);
	size_t len;
	unsigned char *idx = saved_index(&m, &len);
	size_t np = (size_t)af_le64(idx + 112), small = 0;
	static unsigned char win[AF_INFLATE_WINDOW];
	for (size_t i = 0; i < np; i++) {
		const unsigned char *p = idx + point_at(idx, i);
		uint64_t out = af_le64(p + 8);
		uint32_t wlen = af_le32(p + 20), zlen = af_le32(p + 24);
		if (!zlen)
			continue;
		/* held raw in memory (no budget): saved deflated, small */
		if (zlen < wlen / 8)
			small++;
		z_stream zs;
		memset(&zs, 0, sizeof(zs));
		ck_assert_int_eq(inflateInit2(&zs, -15), Z_OK);
		zs.next_in = (unsigned char *)p + FILE_POINT;
		zs.avail_in = zlen;
		zs.next_out = win;
		zs.avail_out = wlen;
		ck_assert_int_eq(inflate(&zs, Z_FINISH), Z_STREAM_END);
		ck_assert_uint_eq(zs.avail_out, 0);
		inflateEnd(&zs);
		/* each byte kept is the output's; the rest are zeros */
		size_t kept = 0;
		for (uint32_t q = 0; q < wlen; q++) {
			unsigned char b = m.plain[out - wlen + q];
			ck_assert(win[q] == b || win[q] == 0);
			kept += win[q] != 0;
		}
		ck_assert_uint_lt(kept, wlen / 4);
	}
	ck_assert_uint_ge(small, np / 2);
	/* and they serve every read from their points */
	af_inflate *z = with_index(&m, idx, len);
	af_error err;
	for (size_t i = 0; i < af_inflate_points(z); i++) {
		uint64_t at = af_inflate_point_out(z, i);
		ck_assert_int_eq(read_at(z, &m, at, 40 * KIB, &err), AF_OK);
	}
	reads_right(z, &m, 777, 61 * KIB, 5000);
	af_inflate_close(z);
	free(idx);
	free_member(&m);
}
END_TEST

/* A stream of @p m with a point every @p span, a saved index's every
 * @p save_span, windows held to 1/@p div of the output (0: no budget),
 * and closing cutting refinement short past @p late bytes (0: default). */
static af_inflate *open_tuned(struct member *m, af_inflate_engine engine,
			      uint64_t span, uint64_t save_span, unsigned div,
			      uint64_t late)
{
	struct af_inflate_opts o;
	af_inflate_default_opts(&o);
	o.engine = engine;
	o.span = span;
	o.save_span = save_span;
	o.index_div = div;
	o.save_late = late;
	o.block = 16 * KIB;
	o.piece = PIECE;
	af_inflate *z = NULL;
	af_error err;
	ck_assert_int_eq(af_inflate_open_opts(&z, &m->src, m->plen, m->crc, &o,
					      &err), AF_OK);
	return z;
}

/* @p n reads of 1000 bytes at offsets from @p seed each give m's bytes
 * and inflate at most @p most. */
static void random_reads_inflate_at_most(af_inflate *z, struct member *m,
					 uint64_t seed, int n, uint64_t most)
{
	af_error err;
	for (int i = 0; i < n; i++) {
		seed = seed * 6364136223846793005ull + 1;
		uint64_t off = (seed >> 20) % m->plen;
		uint64_t before = af_inflate_inflated(z);
		ck_assert_int_eq(read_at(z, m, off, 1000, &err), AF_OK);
		ck_assert_uint_le(af_inflate_inflated(z) - before, most);
	}
}

/* Read @p z whole in order, then export its index (@p closing: as a
 * closing member does): into *len bytes; the pass's own points into *np. */
static unsigned char *pass_and_export(af_inflate *z, struct member *m,
				      bool closing, size_t *len, size_t *np)
{
	af_error err;
	reads_right(z, m, 0, 100 * KIB, 100 * KIB);
	*np = af_inflate_points(z);
	if (closing)
		af_inflate_index_hurry(z);
	unsigned char *idx;
	ck_assert_int_eq(af_inflate_index_export(z, &m->key, &idx, len, &err),
			 AF_OK);
	return idx;
}

struct export_run {
	af_inflate *z;
	struct member *m;
	unsigned char *idx;
	size_t len;
	af_status st;
	bool done;   /* atomic */
};

static void *export_on_thread(void *arg)
{
	struct export_run *x = arg;
	af_error err;
	x->st = af_inflate_index_export(x->z, &x->m->key, &x->idx, &x->len,
					&err);
	__atomic_store_n(&x->done, true, __ATOMIC_RELEASE);
	return NULL;
}

/* A stream on a pool of 0 threads (with @p saver, only as its saver, no
 * read-ahead), read through once in reads of @p step; its export inflates
 * again only after streams were quiet for @p quiet_ns, or @p max_ns after
 * the pass. */
static af_inflate *pass_on(struct member *m, af_pool *pool, bool saver,
			   uint64_t step, uint64_t quiet_ns, uint64_t max_ns)
{
	struct af_inflate_opts o;
	af_inflate_default_opts(&o);
	o.span = 1u << 20;
	o.save_span = 128 * KIB;
	o.index_div = 0;
	o.block = 16 * KIB;
	o.piece = PIECE;
	o.save_quiet_ns = quiet_ns;
	o.save_quiet_max_ns = max_ns;
	af_inflate *z = NULL;
	af_error err;
	ck_assert_int_eq(af_inflate_open_opts(&z, &m->src, m->plen, m->crc, &o,
					      &err), AF_OK);
	if (saver)
		af_inflate_set_saver(z, pool);
	else
		ck_assert_int_eq(af_inflate_set_pool(z, pool, &err), AF_OK);
	reads_right(z, m, 0, step, (size_t)step);
	ck_assert(af_inflate_index_ready(z));
	return z;
}

static af_inflate *pass_on_pool(struct member *m, af_pool *pool,
				uint64_t quiet_ns, uint64_t max_ns)
{
	return pass_on(m, pool, false, 100 * KIB, quiet_ns, max_ns);
}

/* Export @p z, then close it: the export never waited for streams. */
static void export_without_waiting(af_inflate *z, struct member *m)
{
	unsigned char *idx;
	size_t len;
	af_error err;
	ck_assert_int_eq(af_inflate_index_export(z, &m->key, &idx, &len, &err),
			 AF_OK);
	ck_assert_uint_eq(z->export_waits, 0);
	af_inflate_close(z);
	free(idx);
}

/* Export @p z on a thread while its streams stay loud, then close it
 * (hurry): the export waited, then went on, adding its points. */
static void export_waits_until_hurried(af_inflate *z, struct member *m,
				       size_t own)
{
	struct export_run x = { .z = z, .m = m };
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, export_on_thread, &x), 0);
	const struct timespec ms = { .tv_nsec = 1000000 };
	while (__atomic_load_n(&z->export_waits, __ATOMIC_RELAXED) == 0 &&
	       !__atomic_load_n(&x.done, __ATOMIC_ACQUIRE))
		nanosleep(&ms, NULL);
	/* waiting, and streams stay loud for an hour: not done */
	ck_assert(!__atomic_load_n(&x.done, __ATOMIC_ACQUIRE));
	af_inflate_index_hurry(z);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_int_eq(x.st, AF_OK);
	/* 4 MiB is well within what a closing member still refines */
	ck_assert_uint_ge((size_t)af_le64(x.idx + 112), 6 * own);
	free(x.idx);
}

/* The export is background work: it does not inflate again while a
 * stream on its pool is read (here: the pass's own reader, an hour ago as
 * far as quiet goes), and a close's hurry lets it go on at once, as does
 * enough time since the pass. */
START_TEST(export_waits_while_streams_are_read_until_its_member_closes)
{
	struct member m;
	make_noise_member(&m, 4u << 20, 53);
	af_pool *pool;
	af_error err;
	ck_assert_int_eq(af_pool_open(&pool, 0, 64u << 20, &err), AF_OK);
	const uint64_t hour = 3600ull * 1000000000u;
	af_inflate *z = pass_on_pool(&m, pool, hour, hour);
	size_t own = af_inflate_points(z);
	export_waits_until_hurried(z, &m, own);
	af_inflate_close(z);

	/* quiet streams: the export never waits */
	export_without_waiting(pass_on_pool(&m, pool, 1, hour), &m);
	unsigned char *idx;
	size_t len;

	/* loud for an hour, but the pass was checked long enough ago: the
	 * export goes on without a close (else this test never ends) */
	z = pass_on_pool(&m, pool, hour, 1);
	ck_assert_int_eq(af_inflate_index_export(z, &m.key, &idx, &len, &err),
			 AF_OK);
	ck_assert_uint_ge((size_t)af_le64(idx + 112), 6 * own);
	af_inflate_close(z);
	free(idx);
	while (af_pool_run_one(pool))
		;
	af_pool_close(pool);
	free_member(&m);
}
END_TEST

/* With no pool but a saver, a stream's reads of 32 KiB or more (the
 * kernel's read-ahead reads) hold exports back as a pool's streams do;
 * smaller reads (random ones) do not. */
START_TEST(export_on_a_saver_waits_while_long_reads_go_on)
{
	struct member m;
	make_noise_member(&m, 4u << 20, 59);
	const uint64_t hour = 3600ull * 1000000000u;
	af_pool *saver;
	af_error err;
	ck_assert_int_eq(af_pool_open_background(&saver, &err), AF_OK);
	af_inflate *z = pass_on(&m, saver, true, 64 * KIB, hour, hour);
	export_waits_until_hurried(z, &m, af_inflate_points(z));
	af_inflate_close(z);
	af_pool_close(saver);

	ck_assert_int_eq(af_pool_open_background(&saver, &err), AF_OK);
	export_without_waiting(pass_on(&m, saver, true, 16 * KIB, hour, hour),
			       &m);
	af_pool_close(saver);
	free_member(&m);
}
END_TEST

START_TEST(saved_index_adds_points_between_the_pass_s)
{
	struct member m;
	make_noise_member(&m, 4u << 20, 47);
	const af_inflate_engine engines[] = { AF_INFLATE_ZLIB, AF_INFLATE_ISAL };
	for (int e = 0; e < 2; e++) {
		if (!af_inflate_engine_available(engines[e]))
			continue;
		af_inflate *z = open_tuned(&m, engines[e], 1u << 20, 128 * KIB,
					   0, 0);
		size_t len, own;
		unsigned char *idx = pass_and_export(z, &m, false, &len, &own);
		af_inflate_close(z);
		size_t np = (size_t)af_le64(idx + 112);
		ck_assert_uint_ge(own, 3);
		ck_assert_uint_ge(np, 6 * own);
		/* a point at most about a save span after the one before */
		uint64_t prev = 0;
		for (size_t i = 0; i < np; i++) {
			uint64_t out = af_le64(idx + point_at(idx, i) + 8);
			ck_assert_uint_le(out - prev, 128 * KIB + 32 * KIB);
			prev = out;
		}
		/* a read inflates from its point to its piece's end */
		z = with_index(&m, idx, len);
		random_reads_inflate_at_most(z, &m, 5, 60,
					     160 * KIB + 2 * PIECE);
		reads_right(z, &m, 0, 256 * KIB, 256 * KIB);
		af_inflate_close(z);
		free(idx);
	}
	free_member(&m);
}
END_TEST

/* Random reads of a stream, each checked, until told to stop. */
struct reader {
	af_inflate *z;
	struct member *m;
	uint64_t seed;
	int stop;     /* atomic */
	unsigned reads, bad;
};

static void *read_randomly(void *arg)
{
	struct reader *r = arg;
	unsigned char *buf = malloc(8 * KIB);
	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE) || r->reads < 20) {
		r->seed = r->seed * 6364136223846793005ull + 1;
		uint64_t off = (r->seed >> 20) % (r->m->plen - 8 * KIB);
		size_t n = 0;
		af_error err;
		if (af_inflate_read(r->z, buf, 8 * KIB, off, &n, &err) != AF_OK ||
		    n != 8 * KIB || memcmp(buf, r->m->plain + off, n) != 0)
			r->bad++;
		r->reads++;
	}
	free(buf);
	return NULL;
}

/* Once exported, the stream itself reads from the saved points: a random
 * read in the same mount inflates as little as in the next one; readers
 * going on while it exports never see other bytes. */
START_TEST(stream_reads_from_its_saved_points_once_exported)
{
	struct member m;
	make_noise_member(&m, 4u << 20, 61);
	af_inflate *z = open_tuned(&m, AF_INFLATE_AUTO, 1u << 20, 128 * KIB,
				   0, 0);
	reads_right(z, &m, 0, 100 * KIB, 100 * KIB);
	size_t own = af_inflate_points(z);
	struct reader rd[2] = { { z, &m, 3, 0, 0, 0 }, { z, &m, 4, 0, 0, 0 } };
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, read_randomly,
						&rd[i]), 0);
	unsigned char *idx;
	size_t len;
	af_error err;
	ck_assert_int_eq(af_inflate_index_export(z, &m.key, &idx, &len, &err),
			 AF_OK);
	for (int i = 0; i < 2; i++) {
		__atomic_store_n(&rd[i].stop, 1, __ATOMIC_RELEASE);
		pthread_join(t[i], NULL);
		ck_assert_uint_eq(rd[i].bad, 0);
	}
	ck_assert_uint_eq(af_inflate_points(z), af_le64(idx + 112));
	ck_assert_uint_ge(af_inflate_points(z), 6 * own);
	random_reads_inflate_at_most(z, &m, 9, 40, 160 * KIB + 16 * KIB);
	af_inflate_close(z);
	free(idx);
	free_member(&m);
}
END_TEST

START_TEST(added_points_keep_the_budget_spread_over_the_member)
{
	struct member m;
	make_noise_member(&m, 4u << 20, 53);
	af_inflate *z = open_tuned(&m, AF_INFLATE_AUTO, 1u << 20, 8 * KIB,
				   100, 0);
	size_t len, own;
	unsigned char *idx = pass_and_export(z, &m, false, &len, &own);
	uint64_t pass_out[64];
	ck_assert_uint_le(own, 64);
	for (size_t i = 0; i < own; i++)
		pass_out[i] = af_inflate_point_out(z, i);
	af_inflate_close(z);
	size_t np = (size_t)af_le64(idx + 112), late = 0;
	uint64_t windows = 0;
	for (size_t i = 0; i < np; i++) {
		const unsigned char *p = idx + point_at(idx, i);
		uint64_t out = af_le64(p + 8);
		uint32_t wlen = af_le32(p + 20), zlen = af_le32(p + 24);
		windows += (zlen ? zlen : wlen) + 32;
		bool theirs = false;
		for (size_t k = 0; k < own; k++)
			theirs |= pass_out[k] == out;
		late += !theirs && out > m.plen * 3 / 4;
	}
	ck_assert_uint_gt(np, own);
	ck_assert_uint_le(windows, m.plen / 100);
	/* the budget, not the save span, decided: fewer than one per span */
	ck_assert_uint_lt(np, m.plen / (8 * KIB));
	ck_assert_uint_gt(late, 0);
	z = with_index(&m, idx, len);
	reads_right(z, &m, 999, 97 * KIB, 3000);
	af_inflate_close(z);
	free(idx);
	free_member(&m);
}
END_TEST

START_TEST(closing_member_saves_the_pass_s_points_only)
{
	struct member m;
	make_noise_member(&m, 3u << 20, 59);
	af_inflate *z = open_tuned(&m, AF_INFLATE_AUTO, 1u << 20, 128 * KIB,
				   0, 1);
	size_t len, own;
	unsigned char *idx = pass_and_export(z, &m, true, &len, &own);
	ck_assert_uint_eq(af_le64(idx + 112), own);
	af_inflate_close(z);
	free(idx);
	free_member(&m);
}
END_TEST

START_TEST(window_that_does_not_inflate_fails_reads_from_its_point_only)
{
	struct member m;
	make_noise_member(&m, 2u << 20, 43);
	size_t len;
	unsigned char *idx = saved_index(&m, &len);
	size_t np = (size_t)af_le64(idx + 112), i = np / 2;
	unsigned char *p = idx + point_at(idx, i);
	while (i < np && !af_le32(p + 24))
		p = idx + point_at(idx, ++i);
	ck_assert_uint_lt(i, np);
	/* BTYPE 11: no deflate stream starts so */
	memset(p + FILE_POINT, 0xff, af_le32(p + 24));
	fix_checksum(idx, len);
	af_inflate *z = with_index(&m, idx, len);
	af_error err;
	uint64_t from = af_le64(p + 8);
	uint64_t to = i + 1 < np ? af_le64(idx + point_at(idx, i + 1) + 8)
				 : m.plen;
	for (int k = 0; k < 2; k++) {
		ck_assert_int_eq(read_at(z, &m, (from + to) / 2, 100, &err),
				 AF_E_CORRUPT);
		ck_assert_ptr_nonnull(strstr(err.msg, "does not inflate back"));
	}
	ck_assert_int_eq(read_at(z, &m, from - 5000, 4000, &err), AF_OK);
	ck_assert_int_eq(read_at(z, &m, to, 4000, &err), AF_OK);
	af_inflate_close(z);
	free(idx);
	free_member(&m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("inflate_index");
	TCase *tc = tcase_create("index");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, loaded_index_reads_at_random_within_a_span);
	tcase_add_test(tc, read_inflates_to_its_piece_end);
	tcase_add_test(tc, forged_piece_crc_fails_that_piece_only);
	tcase_add_test(tc, index_of_one_engine_serves_the_other);
	tcase_add_test(tc, tampered_index_is_refused_and_bytes_stay_right);
	tcase_add_test(tc, member_altered_after_saving_fails_its_span);
	tcase_add_test(tc, folder_saves_loads_and_keeps_its_budget);
	tcase_add_test(tc, member_saves_its_index_on_the_pool);
	tcase_add_test(tc, member_saves_its_index_on_a_saver_without_a_pool);
	tcase_add_test(tc, saved_windows_keep_only_the_bytes_reached);
	tcase_add_test(tc, window_that_does_not_inflate_fails_reads_from_its_point_only);
	tcase_add_test(tc, saved_index_adds_points_between_the_pass_s);
	tcase_add_test(tc, added_points_keep_the_budget_spread_over_the_member);
	tcase_add_test(tc, closing_member_saves_the_pass_s_points_only);
	tcase_add_test(tc, stream_reads_from_its_saved_points_once_exported);
	tcase_add_test(tc, export_waits_while_streams_are_read_until_its_member_closes);
	tcase_add_test(tc, export_on_a_saver_waits_while_long_reads_go_on);
	suite_add_tcase(s, tc);
	return aft_run(s);
}
