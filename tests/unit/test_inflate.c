/* SPDX-License-Identifier: MIT */
/* Tests for src/codec/inflate*.c: random access into raw deflate streams.
 * Every case runs once per engine this build has (zlib, ISA-L); the
 * engines' agreement stream by stream is test_inflate_isal.c's. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "af_test.h"
#include "arrayfs/arrayfs.h"
#include "../../src/codec/inflate/inflate_state_i.h"

#define MIB (1u << 20)
#define KIB (1u << 10)

/* The engine the running case inflates with: set by its TCase's fixture
 * (Check runs each case in a process of its own). */
static af_inflate_engine engine = AF_INFLATE_AUTO;

static void use_zlib(void)
{
	engine = AF_INFLATE_ZLIB;
}

static void use_isal(void)
{
	engine = AF_INFLATE_ISAL;
}

static uint64_t rng(uint64_t *s)
{
	/* splitmix64: seeded, so a failure replays */
	uint64_t x = (*s += 0x9e3779b97f4a7c15ull);
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

enum kind { TEXT, NOISE, RAMP };

static unsigned char *make_data(size_t n, enum kind k, uint64_t seed)
{
	static const char *const words[] = {
		"array ", "float32 ", "shape ", "(3, 4) ", "npz ", "deflate ",
		"zip ", "member ", "\n", "0.125 ", "-17 ", "fortran_order ",
	};
	unsigned char *p = malloc(n ? n : 1);
	ck_assert_ptr_nonnull(p);
	size_t i = 0;
	while (i < n) {
		uint64_t r = rng(&seed);
		if (k == NOISE) {
			for (int b = 0; b < 8 && i < n; b++)
				p[i++] = (unsigned char)(r >> (8 * b));
		} else if (k == TEXT) {
			const char *w = words[r % 12];
			for (; *w && i < n; w++)
				p[i++] = (unsigned char)*w;
			/* numbers among the words: more literals, so deflate
			 * ends blocks often and they stop at odd bits */
			for (r >>= 8; r % 4 != 0 && i < n; r >>= 2)
				p[i++] = (unsigned char)('0' + (r >> 8) % 10);
		} else {
			float f = (float)(i / 4 % 1000) * 0.5f +
				  (float)(r % 16) * 0.001f;
			unsigned char b[4];
			memcpy(b, &f, 4);
			for (int j = 0; j < 4 && i < n; j++)
				p[i++] = b[j];
		}
	}
	return p;
}

struct stream {
	unsigned char *plain;
	size_t plen;
	unsigned char *comp;
	size_t clen;
	uint32_t crc;
};

/* memlevel sets deflate's symbol buffer: 1 ends a block every ~128 symbols */
static void make_stream_ml(struct stream *s, size_t n, enum kind k, int level,
			   int memlevel, uint64_t seed)
{
	s->plain = make_data(n, k, seed);
	s->plen = n;
	s->crc = (uint32_t)crc32_z(crc32(0, NULL, 0), s->plain, n);
	s->comp = aft_deflate_raw(s->plain, n, level, memlevel, &s->clen);
}

static void make_stream(struct stream *s, size_t n, enum kind k, int level,
			uint64_t seed)
{
	make_stream_ml(s, n, k, level, 8, seed);
}

static void free_stream(struct stream *s)
{
	free(s->plain);
	free(s->comp);
}

static struct af_inflate_opts opts_span(uint64_t span)
{
	struct af_inflate_opts o;
	af_inflate_default_opts(&o);
	o.span = span;
	o.index_div = 0; /* a point every span: these tests count them */
	o.block = 16 * KIB;
	o.cache_blocks = 8;
	o.inbuf = 8 * KIB;
	return o;
}

static af_inflate *open_mem(const struct stream *s, af_source *src,
			    uint64_t size, uint32_t crc,
			    const struct af_inflate_opts *o)
{
	af_inflate *z = NULL;
	af_error err;
	af_source_init_mem(src, s->comp, s->clen);
	struct af_inflate_opts with;
	if (o)
		with = *o;
	else
		af_inflate_default_opts(&with);
	with.engine = engine;
	af_status st = af_inflate_open_opts(&z, src, size, crc, &with, &err);
	ck_assert_int_eq(st, AF_OK);
	ck_assert_ptr_nonnull(z);
	return z;
}

/* A stream over @p src (a test's own source) with @p o and this run's engine. */
static af_inflate *open_over(const struct stream *s, const af_source *src,
			     struct af_inflate_opts o)
{
	af_inflate *z = NULL;
	af_error err;
	o.engine = engine;
	ck_assert_int_eq(af_inflate_open_opts(&z, src, s->plen, s->crc, &o,
					      &err), AF_OK);
	return z;
}

/* Read [off, off + len) and compare with the plaintext (clipped at its end). */
static void check_read(af_inflate *z, const struct stream *s, uint64_t off,
		       size_t len)
{
	unsigned char *buf = malloc(len ? len : 1);
	ck_assert_ptr_nonnull(buf);
	size_t n = 12345;
	af_error err;
	af_status st = af_inflate_read(z, buf, len, off, &n, &err);
	ck_assert_msg(st == AF_OK, "read %zu at %llu: %s", len,
		      (unsigned long long)off, err.msg);
	size_t want = off >= s->plen ? 0
		      : (len < s->plen - off ? len : s->plen - off);
	ck_assert_uint_eq(n, want);
	ck_assert_msg(memcmp(buf, s->plain + (off < s->plen ? off : 0), n) == 0,
		      "bytes differ in read %zu at %llu", len,
		      (unsigned long long)off);
	free(buf);
}

/* Close @p z of a case on a clean stream, which the engine under test
 * inflated all along: ISA-L never handed it to zlib. */
static void close_kept(af_inflate *z)
{
	ck_assert_str_eq(af_inflate_engine_name(af_inflate_engine_used(z)),
			 af_inflate_engine_name(engine));
	af_inflate_close(z);
}

static void random_reads(af_inflate *z, const struct stream *s, int count,
			 size_t maxlen, uint64_t seed)
{
	for (int i = 0; i < count; i++) {
		uint64_t off = rng(&seed) % (s->plen + 1);
		size_t len = (size_t)(rng(&seed) % (maxlen + 1));
		check_read(z, s, off, len);
	}
}

static void sequential(af_inflate *z, const struct stream *s, size_t piece)
{
	for (uint64_t off = 0; off < s->plen; off += piece)
		check_read(z, s, off, piece);
}

/* Read everything in pieces; the first failing status (or AF_OK). */
static af_status read_all(af_inflate *z, const struct stream *s, size_t piece,
			  unsigned char *out, af_error *err)
{
	for (uint64_t off = 0; off < s->plen; off += piece) {
		size_t n;
		af_status st = af_inflate_read(z, out + off, piece, off, &n,
					       err);
		if (st)
			return st;
		if (n == 0)
			break;
	}
	return AF_OK;
}

START_TEST(small_stream_reads_back)
{
	struct stream s;
	af_source src;
	make_stream(&s, 1000, TEXT, 6, 1);
	af_inflate *z = open_mem(&s, &src, s.plen, s.crc, NULL);
	check_read(z, &s, 0, s.plen);
	check_read(z, &s, 10, 20);
	check_read(z, &s, 999, 1);
	check_read(z, &s, 500, 4096);
	ck_assert_uint_eq(af_inflate_points(z), 0);
	close_kept(z);
	free_stream(&s);
}
END_TEST

START_TEST(empty_stream_reads_nothing)
{
	struct stream s;
	af_source src;
	make_stream(&s, 0, TEXT, 6, 1);
	af_inflate *z = open_mem(&s, &src, 0, s.crc, NULL);
	check_read(z, &s, 0, 100);
	check_read(z, &s, 7, 1);
	close_kept(z);
	free_stream(&s);
}
END_TEST

START_TEST(one_byte_stream)
{
	struct stream s;
	af_source src;
	make_stream(&s, 1, NOISE, 9, 3);
	af_inflate *z = open_mem(&s, &src, 1, s.crc, NULL);
	check_read(z, &s, 0, 1);
	check_read(z, &s, 0, 10);
	check_read(z, &s, 1, 10);
	close_kept(z);
	free_stream(&s);
}
END_TEST

START_TEST(stored_blocks_random_reads)
{
	struct stream s;
	af_source src;
	make_stream(&s, 3 * MIB / 2, NOISE, 0, 4);
	struct af_inflate_opts o = opts_span(64 * KIB);
	af_inflate *z = open_mem(&s, &src, s.plen, s.crc, &o);
	sequential(z, &s, 100000);
	/* stored blocks end every 64 KiB: a point every other one */
	ck_assert_uint_ge(af_inflate_points(z), 10);
	random_reads(z, &s, 200, 70000, 5);
	close_kept(z);
	free_stream(&s);
}
END_TEST

START_TEST(compressible_and_random_data)
{
	const enum kind kinds[] = { TEXT, NOISE, RAMP };
	for (int k = 0; k < 3; k++) {
		struct stream s;
		af_source src;
		make_stream(&s, 2 * MIB + 17, kinds[k], 6, 10 + (uint64_t)k);
		af_inflate *z = open_mem(&s, &src, s.plen, s.crc, NULL);
		sequential(z, &s, 128 * KIB);
		random_reads(z, &s, 50, 200000, 6);
		close_kept(z);
		free_stream(&s);
	}
}
END_TEST

START_TEST(multi_span_random_reads)
{
	struct stream s;
	af_source src;
	make_stream(&s, 20 * MIB, RAMP, 1, 7);
	struct af_inflate_opts o = opts_span(256 * KIB);
	af_inflate *z = open_mem(&s, &src, s.plen, s.crc, &o);
	/* the first reads jump ahead of the furthest point */
	check_read(z, &s, 19 * MIB, 1000);
	check_read(z, &s, 5 * MIB, 1000);
	ck_assert_uint_ge(af_inflate_points(z), 60);
	random_reads(z, &s, 500, 300000, 8);
	size_t np = af_inflate_points(z);
	for (size_t i = 1; i < np; i++)
		ck_assert_uint_gt(af_inflate_point_out(z, i),
				  af_inflate_point_out(z, i - 1));
	close_kept(z);
	free_stream(&s);
}
END_TEST

START_TEST(reverse_order_reads)
{
	struct stream s;
	af_source src;
	make_stream(&s, 4 * MIB, TEXT, 6, 9);
	struct af_inflate_opts o = opts_span(256 * KIB);
	af_inflate *z = open_mem(&s, &src, s.plen, s.crc, &o);
	for (uint64_t off = s.plen; off > 0;) {
		size_t len = off < 50000 ? (size_t)off : 50000;
		off -= len;
		check_read(z, &s, off, len);
	}
	close_kept(z);
	free_stream(&s);
}
END_TEST

START_TEST(sequential_odd_sizes)
{
	static const size_t sizes[] = { 1, 7, 4095, 65537, 131071, 3, 262145 };
	struct stream s;
	af_source src;
	make_stream(&s, 3 * MIB, RAMP, 6, 11);
	struct af_inflate_opts o = opts_span(512 * KIB);
	af_inflate *z = open_mem(&s, &src, s.plen, s.crc, &o);
	uint64_t off = 0;
	for (int i = 0; off < s.plen; i++) {
		size_t len = sizes[i % 7];
		check_read(z, &s, off, len);
		off += len;
	}
	close_kept(z);
	free_stream(&s);
}
END_TEST

START_TEST(reads_across_points)
{
	struct stream s;
	af_source src;
	make_stream(&s, 4 * MIB, TEXT, 6, 12);
	struct af_inflate_opts o = opts_span(200 * KIB);
	af_inflate *z = open_mem(&s, &src, s.plen, s.crc, &o);
	sequential(z, &s, MIB);
	size_t np = af_inflate_points(z);
	ck_assert_uint_ge(np, 15);
	for (size_t i = np; i-- > 0;) {
		uint64_t p = af_inflate_point_out(z, i);
		check_read(z, &s, p - 100, 200);
		check_read(z, &s, p, 1);
		check_read(z, &s, p - 1, 1);
	}
	close_kept(z);
	free_stream(&s);
}
END_TEST

/* The kernel's read-ahead sends its reads (1 MiB at most) at once, and the
 * daemon's threads may serve a later one first: the earlier one then finds
 * the bytes the cursor went past in the cache, with the default options,
 * rather than inflating them again from the point before them (from byte
 * 0 in a member's first span). */
START_TEST(a_read_served_after_the_one_behind_it_inflates_nothing)
{
	struct stream s;
	af_source src;
	make_stream(&s, 4 * MIB, TEXT, 6, 21);
	af_inflate *z = open_mem(&s, &src, s.plen, s.crc, NULL);
	check_read(z, &s, 0, MIB);
	check_read(z, &s, 2 * MIB, MIB);
	uint64_t before = af_inflate_inflated(z);
	check_read(z, &s, MIB, MIB);
	ck_assert_uint_eq(af_inflate_inflated(z), before);
	close_kept(z);
	free_stream(&s);
}
END_TEST

START_TEST(reads_past_end_are_clipped)
{
	struct stream s;
	af_source src;
	make_stream(&s, 300000, TEXT, 6, 13);
	af_inflate *z = open_mem(&s, &src, s.plen, s.crc, NULL);
	check_read(z, &s, s.plen - 10, 100);
	check_read(z, &s, s.plen, 100);
	check_read(z, &s, s.plen + 5, 100);
	check_read(z, &s, UINT64_MAX - 3, 100);
	check_read(z, &s, 1234, 0);
	check_read(z, &s, 0, s.plen + 1000);
	close_kept(z);
	free_stream(&s);
}
END_TEST

START_TEST(tiny_buffers_and_spans)
{
	/* one-byte preads, odd blocks and points every few KiB exercise the
	 * refill, bit-resume and short-window paths */
	struct stream s;
	af_source src;
	make_stream_ml(&s, 200000, TEXT, 9, 1, 14);
	struct af_inflate_opts o = { .span = 1000, .cursors = 1, .block = 7,
				     .cache_blocks = 3, .inbuf = 1 };
	af_inflate *z = open_mem(&s, &src, s.plen, s.crc, &o);
	check_read(z, &s, 150000, 5000);
	ck_assert_uint_ge(af_inflate_points(z), 50);
	random_reads(z, &s, 100, 3000, 15);
	close_kept(z);

	o = (struct af_inflate_opts){ .span = 3000, .cursors = 2, .block = 4096,
				      .cache_blocks = 0, .inbuf = 333 };
	z = open_mem(&s, &src, s.plen, s.crc, &o);
	sequential(z, &s, 5000);
	random_reads(z, &s, 100, 10000, 16);
	close_kept(z);
	free_stream(&s);
}
END_TEST

START_TEST(invalid_options_rejected)
{
	struct stream s;
	af_source src;
	af_inflate *z = (af_inflate *)&s;
	af_error err;
	make_stream(&s, 10, TEXT, 6, 1);
	af_source_init_mem(&src, s.comp, s.clen);
	struct af_inflate_opts o = opts_span(0);
	ck_assert_int_eq(af_inflate_open_opts(&z, &src, 10, s.crc, &o, &err),
			 AF_E_INVAL);
	ck_assert_ptr_null(z);
	free_stream(&s);
}
END_TEST

START_TEST(truncated_at_many_cuts)
{
	struct stream s;
	make_stream(&s, 400000, TEXT, 6, 17);
	unsigned char *out = malloc(s.plen);
	struct af_inflate_opts o = opts_span(64 * KIB);
	for (size_t cut = 0; cut <= s.clen; cut += cut < 64 ? 1 : 331) {
		af_source src;
		af_inflate *z = open_mem(&s, &src, s.plen, s.crc, &o);
		src.size = cut;
		af_error err;
		af_status st = read_all(z, &s, 50000, out, &err);
		ck_assert_msg(st == AF_E_TRUNCATED, "cut %zu: status %d", cut,
			      (int)st);
		ck_assert_uint_le(err.offset, cut);
		ck_assert_ptr_nonnull(strstr(err.msg, "compressed byte"));
		/* what lies well before the cut still reads */
		if (cut > s.clen / 2)
			check_read(z, &s, 1000, 100);
		af_inflate_close(z);
	}
	af_source src;
	af_inflate *z = open_mem(&s, &src, s.plen, s.crc, &o);
	ck_assert_int_eq(read_all(z, &s, 50000, out, NULL), AF_OK);
	af_inflate_close(z);
	free(out);
	free_stream(&s);
}
END_TEST

START_TEST(bit_flips_error_or_correct)
{
	struct stream s;
	make_stream(&s, 300000, TEXT, 6, 18);
	unsigned char *good = malloc(s.clen);
	memcpy(good, s.comp, s.clen);
	unsigned char *out = malloc(s.plen);
	struct af_inflate_opts o = opts_span(32 * KIB);
	uint64_t seed = 19;
	int failed = 0;
	for (int t = 0; t < 150; t++) {
		memcpy(s.comp, good, s.clen);
		size_t at = (size_t)(rng(&seed) % s.clen);
		s.comp[at] ^= (unsigned char)(1u << (rng(&seed) % 8));
		af_source src;
		af_inflate *z = open_mem(&s, &src, s.plen, s.crc, &o);
		memset(out, 0, s.plen);
		af_error err;
		af_status st = read_all(z, &s, 40000, out, &err);
		if (st == AF_OK)
			ck_assert_msg(memcmp(out, s.plain, s.plen) == 0,
				      "flip at %zu: wrong bytes, no error", at);
		else
			ck_assert_msg(st == AF_E_CORRUPT || st == AF_E_TRUNCATED,
				      "flip at %zu: status %d", at, (int)st);
		failed += st != AF_OK;
		/* random reads afterwards may fail but must not crash */
		uint64_t rs = seed;
		for (int i = 0; i < 5; i++) {
			size_t n;
			af_inflate_read(z, out, 30000, rng(&rs) % s.plen, &n,
					NULL);
		}
		af_inflate_close(z);
	}
	ck_assert_int_gt(failed, 100);
	free(out);
	free(good);
	free_stream(&s);
}
END_TEST

START_TEST(invalid_block_type_is_corrupt)
{
	static const unsigned char bad[] = { 0x07, 0x00, 0x11, 0x22 };
	af_source src;
	af_inflate *z;
	af_error err;
	af_source_init_mem(&src, bad, sizeof(bad));
	ck_assert_int_eq(af_inflate_open_engine(&z, &src, 100, 0, engine, &err),
			 AF_OK);
	unsigned char buf[100];
	size_t n = 5;
	ck_assert_int_eq(af_inflate_read(z, buf, 100, 0, &n, &err),
			 AF_E_CORRUPT);
	ck_assert_uint_eq(n, 0);
	ck_assert_ptr_nonnull(strstr(err.msg, "invalid block type"));
	af_inflate_close(z);
}
END_TEST

START_TEST(declared_size_too_small_is_corrupt)
{
	struct stream s;
	af_source src;
	make_stream(&s, MIB, TEXT, 6, 20);
	const uint64_t claims[] = { s.plen - 1, s.plen - 1000, 10 };
	for (int i = 0; i < 3; i++) {
		af_inflate *z = open_mem(&s, &src, claims[i], s.crc, NULL);
		unsigned char *out = malloc(s.plen);
		af_error err;
		size_t n;
		ck_assert_int_eq(af_inflate_read(z, out, s.plen, 0, &n, &err),
				 AF_E_CORRUPT);
		ck_assert_ptr_nonnull(strstr(err.msg, "more than the declared"));
		/* remembered: the member is bad as a whole */
		ck_assert_int_eq(af_inflate_read(z, out, 1, 0, &n, &err),
				 AF_E_CORRUPT);
		af_inflate_close(z);
		free(out);
	}
	free_stream(&s);
}
END_TEST

START_TEST(declared_size_too_large_is_corrupt)
{
	struct stream s;
	af_source src;
	make_stream(&s, MIB, TEXT, 6, 21);
	af_inflate *z = open_mem(&s, &src, s.plen + 1000, s.crc, NULL);
	unsigned char *out = malloc(s.plen + 1000);
	af_error err;
	size_t n;
	af_status st = af_inflate_read(z, out, s.plen + 1000, 0, &n, &err);
	ck_assert_int_eq(st, AF_E_CORRUPT);
	ck_assert_ptr_nonnull(strstr(err.msg, "ends after"));
	ck_assert_int_eq(af_inflate_read(z, out, 1000, 500, &n, &err),
			 AF_E_CORRUPT);
	af_inflate_close(z);
	free(out);
	free_stream(&s);
}
END_TEST

START_TEST(wrong_crc_after_full_pass_is_corrupt)
{
	struct stream s;
	af_source src;
	make_stream(&s, 3 * MIB, RAMP, 6, 22);
	struct af_inflate_opts o = opts_span(256 * KIB);
	af_inflate *z = open_mem(&s, &src, s.plen, s.crc ^ 1, &o);
	unsigned char *out = malloc(s.plen);
	af_error err;
	ck_assert_int_eq(read_all(z, &s, 128 * KIB, out, &err), AF_E_CORRUPT);
	ck_assert_ptr_nonnull(strstr(err.msg, "CRC-32"));
	size_t n;
	ck_assert_int_eq(af_inflate_read(z, out, 100, 0, &n, &err),
			 AF_E_CORRUPT);
	ck_assert_int_eq(af_inflate_read(z, out, 100, MIB, &n, &err),
			 AF_E_CORRUPT);
	af_inflate_close(z);

	/* the right CRC: the same pass succeeds and later reads still work */
	z = open_mem(&s, &src, s.plen, s.crc, &o);
	ck_assert_int_eq(read_all(z, &s, 128 * KIB, out, &err), AF_OK);
	ck_assert(memcmp(out, s.plain, s.plen) == 0);
	random_reads(z, &s, 20, 100000, 23);
	af_inflate_close(z);
	free(out);
	free_stream(&s);
}
END_TEST

struct failing {
	const unsigned char *mem;
	uint64_t fail_at;
};

static ssize_t failing_pread(const af_source *src, void *buf, size_t len,
			     uint64_t off)
{
	const struct failing *f = src->ctx;
	if (off >= f->fail_at)
		return -EIO;
	if (off >= src->size)
		return 0;
	uint64_t lim = f->fail_at < src->size ? f->fail_at : src->size;
	if (len > lim - off)
		len = (size_t)(lim - off);
	memcpy(buf, f->mem + off, len);
	return (ssize_t)len;
}

START_TEST(failing_source_is_io_error)
{
	struct stream s;
	make_stream(&s, 2 * MIB, TEXT, 6, 24);
	struct failing f = { s.comp, s.clen / 2 };
	af_source src = { .pread = failing_pread, .size = s.clen, .fd = -1,
			  .ctx = &f };
	af_inflate *z = open_over(&s, &src, opts_span(128 * KIB));
	af_error err;
	unsigned char *out = malloc(s.plen);
	ck_assert_int_eq(read_all(z, &s, 100000, out, &err), AF_E_IO);
	ck_assert_int_eq(err.sys_errno, EIO);
	ck_assert_uint_ge(err.offset, f.fail_at);
	/* still usable before the failing bytes, and fails again after */
	check_read(z, &s, 1000, 5000);
	size_t n;
	ck_assert_int_eq(af_inflate_read(z, out, 100, s.plen - 100, &n, &err),
			 AF_E_IO);
	/* the source recovers: so does the stream */
	f.fail_at = UINT64_MAX;
	check_read(z, &s, s.plen - 100, 100);
	af_inflate_close(z);
	free(out);
	free_stream(&s);
}
END_TEST

/* A source over memory that notes how many bytes each pread asked for. */
struct asking {
	const unsigned char *mem;
	size_t asked[4096];
	size_t n;
};

static ssize_t asking_pread(const af_source *src, void *buf, size_t len,
			    uint64_t off)
{
	struct asking *a = src->ctx;
	if (a->n < 4096)
		a->asked[a->n++] = len;
	if (off >= src->size)
		return 0;
	if (len > src->size - off)
		len = (size_t)(src->size - off);
	memcpy(buf, a->mem + off, len);
	return (ssize_t)len;
}

/* A cursor that reads on asks for more at a time (fewer, longer inflate
 * calls); one that starts at an access point for a random read asks for
 * little first. */
START_TEST(preads_grow_while_a_cursor_reads_on)
{
	struct stream s;
	make_stream(&s, 8 * MIB, NOISE, 6, 31);
	struct asking *a = calloc(1, sizeof(*a));
	ck_assert_ptr_nonnull(a);
	a->mem = s.comp;
	af_source src = { .pread = asking_pread, .size = s.clen, .fd = -1,
			  .ctx = a };
	struct af_inflate_opts o;
	af_inflate_default_opts(&o);
	af_inflate *z = open_over(&s, &src, o);
	af_error err;
	unsigned char *out = malloc(s.plen);
	ck_assert_ptr_nonnull(out);
	ck_assert_int_eq(read_all(z, &s, MIB, out, &err), AF_OK);
	ck_assert(memcmp(out, s.plain, s.plen) == 0);
	ck_assert_uint_eq(a->asked[0], AFZ_INBUF_FIRST);
	size_t most = 0;
	for (size_t i = 0; i < a->n; i++)
		most = a->asked[i] > most ? a->asked[i] : most;
	ck_assert_uint_eq(most, AFZ_INBUF);
	ck_assert_uint_lt(AFZ_INBUF_FIRST, AFZ_INBUF);
	/* a read far from the cache starts at a point: a short first pread */
	ck_assert_uint_gt(af_inflate_points(z), 2);
	a->n = 0;
	check_read(z, &s, s.plen / 2 + 12345, 4096);
	ck_assert_uint_gt(a->n, 0);
	ck_assert_uint_le(a->asked[0], AFZ_INBUF_FIRST);
	af_inflate_close(z);
	free(out);
	free(a);
	free_stream(&s);
}
END_TEST

struct worker {
	af_inflate *z;
	const struct stream *s;
	uint64_t seed;
	uint64_t seq; /* where this thread's sequential run continues */
	int bad;
};

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	unsigned char *buf = malloc(64 * KIB);
	for (int i = 0; i < 60 && buf; i++) {
		uint64_t off = rng(&w->seed) % w->s->plen;
		size_t len = 1 + (size_t)(rng(&w->seed) % (64 * KIB));
		if (i % 3 == 0) { /* interleave a sequential reader */
			off = w->seq % w->s->plen;
			w->seq = off + len;
		}
		size_t n;
		if (af_inflate_read(w->z, buf, len, off, &n, NULL) != AF_OK ||
		    n != (len < w->s->plen - off ? len : w->s->plen - off) ||
		    memcmp(buf, w->s->plain + off, n) != 0)
			w->bad++;
	}
	if (!buf)
		w->bad++;
	free(buf);
	return NULL;
}

START_TEST(eight_threads_random_offsets)
{
	struct stream s;
	af_source src;
	make_stream(&s, 6 * MIB, TEXT, 6, 25);
	struct af_inflate_opts o = opts_span(128 * KIB);
	o.index_div = 8; /* most windows deflated: restarts inflate them */
	af_inflate *z = open_mem(&s, &src, s.plen, s.crc, &o);
	pthread_t t[8];
	struct worker w[8];
	for (int i = 0; i < 8; i++) {
		w[i] = (struct worker){ z, &s, 100 + (uint64_t)i,
					(uint64_t)i * (s.plen / 8), 0 };
		ck_assert_int_eq(pthread_create(&t[i], NULL, worker_run, &w[i]),
				 0);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		ck_assert_int_eq(w[i].bad, 0);
	}
	close_kept(z);
	free_stream(&s);
}
END_TEST

START_TEST(memory_below_two_percent)
{
	struct stream s;
	af_source src;
	make_stream(&s, 64 * MIB, RAMP, 1, 26);
	af_inflate *z = open_mem(&s, &src, s.plen, s.crc, NULL);
	size_t before = af_inflate_memory(z);
	sequential(z, &s, MIB);
	size_t np = af_inflate_points(z);
	/* the budget may skip a point now and then, never two in a row */
	ck_assert_uint_ge(np, 64 * MIB / AF_INFLATE_SPAN / 2);
	ck_assert_uint_le(np, 64 * MIB / AF_INFLATE_SPAN);
	size_t mem = af_inflate_memory(z);
	size_t idx = af_inflate_index_memory(z);
	struct af_inflate_opts o;
	af_inflate_default_opts(&o);
	ck_assert_uint_le(idx, s.plen / o.index_div);
	ck_assert_uint_gt(mem, before + idx);
	ck_assert_uint_le(mem, af_inflate_fixed_memory(&o) + s.plen / 50);
	close_kept(z);
	free_stream(&s);
}
END_TEST

/* Read at, just before and just after every point, last point first, with
 * no cache: each read restarts a cursor at a point. */
static void reads_at_points(af_inflate *z, const struct stream *s)
{
	size_t np = af_inflate_points(z);
	for (size_t i = np; i-- > 0;) {
		uint64_t p = af_inflate_point_out(z, i);
		check_read(z, s, p, 1);
		check_read(z, s, p + 1, 3000);
		check_read(z, s, p - 1, 2);
		check_read(z, s, p + 40000, 100);
	}
}

START_TEST(deflated_windows_restart_reads)
{
	const enum kind kinds[] = { TEXT, RAMP };
	for (int k = 0; k < 2; k++) {
		struct stream s;
		af_source src;
		make_stream(&s, 6 * MIB, kinds[k], 6, 40 + (uint64_t)k);
		/* 16 KiB of budget per span: a 32 KiB window must shrink */
		struct af_inflate_opts o = opts_span(128 * KIB);
		o.index_div = 8;
		o.cache_blocks = 0;
		o.cursors = 2;
		af_inflate *z = open_mem(&s, &src, s.plen, s.crc, &o);
		sequential(z, &s, 300000);
		size_t np = af_inflate_points(z), zipped = 0;
		for (size_t i = 0; i < np; i++)
			zipped += af_inflate_point_compressed(z, i);
		ck_assert_uint_ge(np, 20);
		ck_assert_uint_ge(zipped, 4);
		/* memory counts the deflated sizes, not 32 KiB each */
		size_t idx = af_inflate_index_memory(z);
		ck_assert_uint_le(idx, s.plen / 8);
		ck_assert_uint_lt(idx, np * AF_INFLATE_WINDOW);
		reads_at_points(z, &s);
		random_reads(z, &s, 200, 5000, 41);
		close_kept(z);
		free_stream(&s);
	}
}
END_TEST

START_TEST(incompressible_windows_keep_the_budget)
{
	/* noise: windows do not deflate, so points come only as often as
	 * whole raw windows fit the budget, and none is stored deflated */
	const unsigned divs[] = { 16, 64 };
	for (int d = 0; d < 2; d++) {
		struct stream s;
		af_source src;
		make_stream(&s, 5 * MIB, NOISE, 6, 42 + (uint64_t)d);
		struct af_inflate_opts o = opts_span(256 * KIB);
		o.index_div = divs[d];
		o.cache_blocks = 0;
		af_inflate *z = open_mem(&s, &src, s.plen, s.crc, &o);
		sequential(z, &s, 200000);
		size_t np = af_inflate_points(z);
		ck_assert_uint_ge(np, d == 0 ? 5 : 1);
		/* and as soon as one fits, not a whole span later: a point
		 * needs (32 KiB + record) x div of output, plus a block */
		uint64_t prev = 0, most = (AF_INFLATE_WINDOW +
					   sizeof(struct afz_point)) *
					  divs[d] + 64 * KIB;
		for (size_t i = 0; i < np; i++) {
			ck_assert(!af_inflate_point_compressed(z, i));
			uint64_t at = af_inflate_point_out(z, i);
			ck_assert_uint_le(at - prev, most);
			prev = at;
		}
		ck_assert_uint_le(af_inflate_index_memory(z), s.plen / divs[d]);
		reads_at_points(z, &s);
		close_kept(z);
		free_stream(&s);
	}
}
END_TEST

START_TEST(mixed_windows_after_each_point)
{
	/* text, then noise, then ramps: some windows deflate, some cannot;
	 * reads right after every point match either way */
	struct stream s, parts[3];
	const enum kind kinds[] = { TEXT, NOISE, RAMP };
	size_t n = 0;
	for (int k = 0; k < 3; k++) {
		parts[k].plain = make_data(MIB + 777 * (size_t)k, kinds[k],
					   50 + (uint64_t)k);
		parts[k].plen = MIB + 777 * (size_t)k;
		n += parts[k].plen;
	}
	unsigned char *all = malloc(n);
	ck_assert_ptr_nonnull(all);
	for (size_t k = 0, at = 0; k < 3; at += parts[k].plen, k++) {
		memcpy(all + at, parts[k].plain, parts[k].plen);
		free(parts[k].plain);
	}
	s.plain = all;
	s.plen = n;
	s.crc = (uint32_t)crc32_z(crc32(0, NULL, 0), all, n);
	z_stream zs;
	memset(&zs, 0, sizeof(zs));
	ck_assert_int_eq(deflateInit2(&zs, 6, Z_DEFLATED, -15, 8,
				      Z_DEFAULT_STRATEGY), Z_OK);
	size_t cap = deflateBound(&zs, n);
	s.comp = malloc(cap);
	ck_assert_ptr_nonnull(s.comp);
	zs.next_in = all;
	zs.avail_in = (uInt)n;
	zs.next_out = s.comp;
	zs.avail_out = (uInt)cap;
	ck_assert_int_eq(deflate(&zs, Z_FINISH), Z_STREAM_END);
	s.clen = cap - zs.avail_out;
	deflateEnd(&zs);

	af_source src;
	struct af_inflate_opts o = opts_span(64 * KIB);
	o.index_div = 4;
	o.cache_blocks = 0;
	af_inflate *z = open_mem(&s, &src, s.plen, s.crc, &o);
	sequential(z, &s, 100000);
	size_t np = af_inflate_points(z), zipped = 0;
	for (size_t i = 0; i < np; i++)
		zipped += af_inflate_point_compressed(z, i);
	ck_assert_uint_gt(zipped, 0);
	ck_assert_uint_lt(zipped, np);
	ck_assert_uint_le(af_inflate_index_memory(z), s.plen / 4);
	reads_at_points(z, &s);
	random_reads(z, &s, 100, 70000, 51);
	close_kept(z);
	free_stream(&s);
}
END_TEST

/* The cases of one engine: reads, errors and load. */
static void add_cases(Suite *s, const char *engine_name, void (*setup)(void))
{
	char name[64];
	snprintf(name, sizeof(name), "reads-%s", engine_name);
	TCase *tc = tcase_create(name);
	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, small_stream_reads_back);
	tcase_add_test(tc, empty_stream_reads_nothing);
	tcase_add_test(tc, one_byte_stream);
	tcase_add_test(tc, stored_blocks_random_reads);
	tcase_add_test(tc, compressible_and_random_data);
	tcase_add_test(tc, multi_span_random_reads);
	tcase_add_test(tc, reverse_order_reads);
	tcase_add_test(tc, sequential_odd_sizes);
	tcase_add_test(tc, reads_across_points);
	tcase_add_test(tc, a_read_served_after_the_one_behind_it_inflates_nothing);
	tcase_add_test(tc, reads_past_end_are_clipped);
	tcase_add_test(tc, tiny_buffers_and_spans);
	tcase_add_test(tc, invalid_options_rejected);
	tcase_add_test(tc, deflated_windows_restart_reads);
	tcase_add_test(tc, incompressible_windows_keep_the_budget);
	tcase_add_test(tc, mixed_windows_after_each_point);
	suite_add_tcase(s, tc);

	snprintf(name, sizeof(name), "errors-%s", engine_name);
	tc = tcase_create(name);
	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, truncated_at_many_cuts);
	tcase_add_test(tc, bit_flips_error_or_correct);
	tcase_add_test(tc, invalid_block_type_is_corrupt);
	tcase_add_test(tc, declared_size_too_small_is_corrupt);
	tcase_add_test(tc, declared_size_too_large_is_corrupt);
	tcase_add_test(tc, wrong_crc_after_full_pass_is_corrupt);
	tcase_add_test(tc, failing_source_is_io_error);
	tcase_add_test(tc, preads_grow_while_a_cursor_reads_on);
	suite_add_tcase(s, tc);

	snprintf(name, sizeof(name), "load-%s", engine_name);
	tc = tcase_create(name);
	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, eight_threads_random_offsets);
	tcase_add_test(tc, memory_below_two_percent);
	suite_add_tcase(s, tc);
}

int main(void)
{
	Suite *s = suite_create("inflate");
	add_cases(s, "zlib", use_zlib);
	if (af_inflate_engine_available(AF_INFLATE_ISAL))
		add_cases(s, "isal", use_isal);
	else
		printf("inflate: this build has no ISA-L; zlib cases only\n");
	return aft_run(s);
}
