/* SPDX-License-Identifier: MIT */
/*
 * Tests for src/codec/lz4.c and lz4_span.c: random access into raw LZ4
 * blocks through af_lz4_index. Blocks of several sizes and entropies, made
 * by liblz4's LZ4_compress_default, and the reference samples (each *_z.ra
 * decodes to the data of its plain twin), read at many offsets in any
 * order and compared with liblz4's whole-block decode; blocks over several
 * access-point intervals; sequences longer than a cache block; corrupt
 * blocks; read failures; threads; views sharing an index; memory bounds.
 * The walker's verdicts against liblz4's: test_lz4_walk.c.
 */
#include <errno.h>
#include <lz4.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "af_test.h"
#include "arrayfs/arrayfs.h"
#include "../../src/codec/lz4/lz4_index_i.h"

/* Small cache blocks and spans: many of each in a small block. */
static struct lz4_opts small_opts(void)
{
	struct lz4_opts o;
	lz4_default_opts(&o);
	o.block = 4096;
	o.span = 4 * 4096;
	o.cache_blocks = 3;
	o.walk_buf = 100;
	return o;
}

/* A block liblz4 makes of @p n bytes at @p raw; *len its size. */
static unsigned char *compress(const unsigned char *raw, size_t n, size_t *len)
{
	int cap = LZ4_compressBound((int)n);
	unsigned char *c = malloc((size_t)cap);
	ck_assert_ptr_nonnull(c);
	int got = LZ4_compress_default((const char *)raw, (char *)c, (int)n, cap);
	ck_assert_int_gt(got, 0);
	*len = (size_t)got;
	return c;
}

enum content { ZEROS, RANDOM, NIBBLES, RAMPS, TEXT, PERIODIC, CONTENTS };

static unsigned char *make(enum content k, size_t n, uint64_t seed)
{
	static const char words[] = "the quick brown fox jumps over a lazy dog ";
	unsigned char *p = malloc(n ? n : 1);
	ck_assert_ptr_nonnull(p);
	for (size_t i = 0; i < n; i++) {
		switch (k) {
		case ZEROS:
			p[i] = 0;
			break;
		case RANDOM:
			p[i] = (unsigned char)aft_rand(&seed);
			break;
		case NIBBLES:
			p[i] = (unsigned char)(aft_rand(&seed) % 16);
			break;
		case RAMPS: /* float32-like: slow high bytes, noisy low ones */
			p[i] = i % 4 == 3 ? (unsigned char)(i >> 16) :
			       (unsigned char)(i % 4 == 2 ? i >> 9 : aft_rand(&seed) % 7);
			break;
		case TEXT:
			p[i] = (unsigned char)words[(i * 7 + aft_rand(&seed) % 3) %
						    (sizeof(words) - 1)];
			break;
		default: /* a period longer than any match reaches back */
			p[i] = (unsigned char)((i % 70001) * 13 + (i % 70001) / 257);
		}
	}
	return p;
}

/*
 * Read @p reads random stretches of the block at @p c through an index
 * tuned by @p o (in whatever order: the first ones move the frontier, the
 * later ones decode behind it), each equal to @p want; then the whole.
 */
static void check_random_reads(const unsigned char *c, size_t cn,
			       const unsigned char *want, size_t n,
			       const struct lz4_opts *o, uint64_t seed, int reads,
			       const char *what)
{
	af_source src;
	af_source_init_mem(&src, c, cn);
	af_lz4_index *ix;
	af_error err;
	ck_assert_msg(lz4_index_open_opts(&ix, &src, 0, cn, n, o, &err) == AF_OK,
		      "%s: %s", what, err.msg);
	unsigned char *buf = malloc(n);
	for (int i = 0; i <= reads; i++) {
		uint64_t off = i < reads ? aft_rand(&seed) % n : 0;
		size_t len = i < reads ? (size_t)(aft_rand(&seed) % (n - off < 20000 ?
								     n - off : 20000)) + 1 : n;
		af_status st = af_lz4_index_read(ix, buf, len, off, &err);
		ck_assert_msg(st == AF_OK, "%s: read %d at %llu: %s", what, i,
			      (unsigned long long)off, err.msg);
		ck_assert_msg(memcmp(buf, want + off, len) == 0,
			      "%s: read %d [%llu, +%zu) differs", what, i,
			      (unsigned long long)off, len);
	}
	ck_assert_msg(af_lz4_index_memory(ix) <= lz4_bound_opts(n, o),
		      "%s: holds %zu, bound %llu", what, af_lz4_index_memory(ix),
		      (unsigned long long)lz4_bound_opts(n, o));
	free(buf);
	af_lz4_index_close(ix);
}

START_TEST(random_reads_equal_the_whole_block_decode)
{
	static const size_t sizes[] = { 1, 100, 5000, 70000, 300000, 3u << 20 };
	const struct lz4_opts small = small_opts();
	struct lz4_opts dflt;
	lz4_default_opts(&dflt);
	uint64_t seed = 11;
	for (int k = 0; k < CONTENTS; k++)
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			size_t n = sizes[i], cn;
			unsigned char *raw = make((enum content)k, n, seed + i);
			unsigned char *c = compress(raw, n, &cn);
			/* liblz4's own decode is the reference */
			unsigned char *ref = malloc(n);
			ck_assert_int_eq(LZ4_decompress_safe((const char *)c, (char *)ref,
							     (int)cn, (int)n), (int)n);
			char what[64];
			snprintf(what, sizeof(what), "content %d, %zu bytes", k, n);
			check_random_reads(c, cn, ref, n, &small, seed++, 60, what);
			check_random_reads(c, cn, ref, n, &dflt, seed++, 20, what);
			free(ref);
			free(c);
			free(raw);
		}
}
END_TEST

START_TEST(reference_samples_read_at_any_offset_as_their_twins)
{
	static const char *const pairs[][2] = {
		{ "mnist_8_z.ra", "mnist_8.ra" },
		{ "cifar_airplane_z.ra", "cifar_airplane.ra" },
	};
	const struct lz4_opts small = small_opts();
	for (size_t i = 0; i < 2; i++) {
		size_t plen;
		unsigned char *plain = aft_ra_data(aft_reference(pairs[i][1]), &plen);
		/* through the file itself, parsed as the daemon parses it */
		af_source src;
		int fd = aft_open_fd_source(aft_reference(pairs[i][0]), &src);
		af_array a;
		af_error err;
		ck_assert_int_eq(af_ra_parse(&src, &a, &err), AF_OK);
		ck_assert_uint_eq(a.data_size, plen);
		af_lz4_index *ix;
		ck_assert_int_eq(af_lz4_index_open(&ix, &a, &src, &err), AF_OK);
		ck_assert_uint_eq(af_lz4_index_size(ix), plen);
		unsigned char buf[700];
		/* backwards, every length up to 700 somewhere */
		for (size_t off = plen; off-- > 0;) {
			size_t len = 1 + off % sizeof(buf);
			if (len > plen - off)
				len = plen - off;
			ck_assert_int_eq(af_lz4_index_read(ix, buf, len, off, &err), AF_OK);
			ck_assert_msg(memcmp(buf, plain + off, len) == 0,
				      "%s at %zu", pairs[i][0], off);
		}
		af_lz4_index_close(ix);
		/* and through small blocks, from a memory copy of the block */
		size_t zlen;
		unsigned char *z = aft_ra_data(aft_reference(pairs[i][0]), &zlen);
		check_random_reads(z, zlen, plain, plen, &small, 5, 200, pairs[i][0]);
		free(z);
		af_array_free(&a);
		close(fd);
		free(plain);
	}
}
END_TEST

/* Default tuning over several access-point intervals: a point at each one
 * crossed, and reads behind the frontier start from them. */
START_TEST(block_over_several_index_intervals)
{
	size_t n = 4 * AF_LZ4_SPAN + 1234567, cn;
	unsigned char *raw = malloc(n);
	uint64_t seed = 3;
	for (size_t i = 0; i < n; i++) /* text, zero runs and noise by turns */
		raw[i] = (i >> 18) % 3 == 0 ? (unsigned char)('a' + i % 26) :
			 (i >> 18) % 3 == 1 ? 0 : (unsigned char)aft_rand(&seed);
	unsigned char *c = compress(raw, n, &cn);
	struct lz4_opts o;
	lz4_default_opts(&o);
	af_source src;
	af_source_init_mem(&src, c, cn);
	af_lz4_index *ix;
	af_error err;
	ck_assert_int_eq(lz4_index_open_opts(&ix, &src, 0, cn, n, &o, &err), AF_OK);
	unsigned char *buf = malloc(1 << 20);
	/* the last byte first: the whole block is walked, every point made */
	ck_assert_int_eq(af_lz4_index_read(ix, buf, 1, n - 1, &err), AF_OK);
	ck_assert_uint_eq(buf[0], raw[n - 1]);
	ck_assert_uint_eq(lz4_index_points(ix), 4);
	for (int i = 0; i < 300; i++) {
		uint64_t off = aft_rand(&seed) % n;
		size_t len = (size_t)(aft_rand(&seed) % (1 << 20)) + 1;
		if (len > n - off)
			len = n - off;
		ck_assert_int_eq(af_lz4_index_read(ix, buf, len, off, &err), AF_OK);
		ck_assert_msg(memcmp(buf, raw + off, len) == 0, "read at %llu",
			      (unsigned long long)off);
	}
	/* 4 windows of 64 KiB, the records, 8 blocks and their buffers */
	ck_assert_uint_le(af_lz4_index_memory(ix), af_lz4_index_bound(n));
	ck_assert_uint_lt(af_lz4_index_bound(n), 16u << 20);
	af_lz4_index_close(ix);
	free(buf);
	free(c);
	free(raw);
}
END_TEST

/* One raw LZ4 sequence: @p lit literals from @p lits, then (ml > 0) a
 * match of @p ml bytes @p offset back. Returns bytes written at p. */
static size_t put_seq(unsigned char *p, const unsigned char *lits, size_t lit,
		      unsigned offset, size_t ml)
{
	size_t i = 0;
	size_t mlc = ml ? ml - 4 : 0;
	p[i++] = (unsigned char)((lit < 15 ? lit : 15) << 4 | (mlc < 15 ? mlc : 15));
	if (lit >= 15) {
		size_t v = lit - 15;
		for (; v >= 255; v -= 255)
			p[i++] = 255;
		p[i++] = (unsigned char)v;
	}
	memcpy(p + i, lits, lit);
	i += lit;
	if (!ml)
		return i;
	p[i++] = (unsigned char)offset;
	p[i++] = (unsigned char)(offset >> 8);
	if (mlc >= 15) {
		size_t v = mlc - 15;
		for (; v >= 255; v -= 255)
			p[i++] = 255;
		p[i++] = (unsigned char)v;
	}
	return i;
}

/* A literal run and a match, each far longer than a cache block and an
 * access-point interval, cut by them at every kind of place. */
START_TEST(sequences_longer_than_blocks_and_spans)
{
	size_t lit = 200000, ml = 500000, tail = 12;
	size_t n = lit + ml + tail;
	unsigned char *lits = make(RANDOM, lit, 9);
	unsigned char *c = malloc(lit + ml / 100 + 1024);
	size_t cn = put_seq(c, lits, lit, 3001, ml);
	cn += put_seq(c + cn, lits, tail, 0, 0);
	unsigned char *ref = malloc(n);
	ck_assert_int_eq(LZ4_decompress_safe((const char *)c, (char *)ref, (int)cn,
					     (int)n), (int)n);
	struct lz4_opts o = small_opts();
	for (size_t block = 1000; block <= 70000; block = block * 3 + 7) {
		o.block = block;
		o.span = 3 * block;
		check_random_reads(c, cn, ref, n, &o, block, 80, "long sequences");
	}
	free(ref);
	free(c);
	free(lits);
}
END_TEST

/* The first read that fails and every one after: AF_E_CORRUPT with the
 * source offset of the sequence at fault; reads before it were right. */
static af_status read_all(const unsigned char *c, size_t cn, size_t n,
			  uint64_t base_off, af_error *err)
{
	af_source src;
	unsigned char *file = malloc(base_off + cn);
	memset(file, 0xAA, base_off);
	memcpy(file + base_off, c, cn);
	af_source_init_mem(&src, file, base_off + cn);
	af_lz4_index *ix;
	struct lz4_opts o = small_opts();
	af_status st = lz4_index_open_opts(&ix, &src, base_off, cn, n, &o, err);
	if (st == AF_OK) {
		unsigned char *buf = malloc(n);
		st = af_lz4_index_read(ix, buf, n, 0, err);
		/* remembered: a read anywhere says the same */
		af_error again;
		ck_assert_int_eq(af_lz4_index_read(ix, buf, 1, 0, &again), st);
		if (st != AF_OK)
			ck_assert_uint_eq(again.offset, err->offset);
		free(buf);
		af_lz4_index_close(ix);
	}
	free(file);
	return st;
}

START_TEST(corrupt_blocks_are_corrupt_at_the_faulty_sequence)
{
	unsigned char b[64];
	af_error err;
	/* a match 0xFFFF back after 1 literal: before the output's start */
	size_t k = put_seq(b, (const unsigned char *)"a", 1, 0xFFFF, 4);
	k += put_seq(b + k, (const unsigned char *)"bcdefghijklm", 12, 0, 0);
	ck_assert_int_eq(read_all(b, k, 17, 100, &err), AF_E_CORRUPT);
	ck_assert_uint_eq(err.offset, 100);
	ck_assert_ptr_nonnull(strstr(err.msg, "before the start of the output"));

	/* the same, in the second sequence: the offset says which */
	k = put_seq(b, (const unsigned char *)"abcdef", 6, 6, 6);
	size_t second = k;
	k += put_seq(b + k, (const unsigned char *)"g", 1, 40, 4);
	k += put_seq(b + k, (const unsigned char *)"bcdefghijklm", 12, 0, 0);
	ck_assert_int_eq(read_all(b, k, 29, 0, &err), AF_E_CORRUPT);
	ck_assert_uint_eq(err.offset, second);

	/* runs long: bytes after the last literals */
	k = put_seq(b, (const unsigned char *)"abcdefghijklmnop", 16, 0, 0);
	b[k++] = 0;
	ck_assert_int_eq(read_all(b, k, 16, 0, &err), AF_E_CORRUPT);
	ck_assert_ptr_nonnull(strstr(err.msg, "must end the block"));

	/* ends early: a match cut off, literals cut off */
	k = put_seq(b, (const unsigned char *)"abcdefgh", 8, 8, 40);
	ck_assert_int_eq(read_all(b, k - 1, 60, 0, &err), AF_E_CORRUPT);
	ck_assert_int_eq(read_all(b, 5, 8, 0, &err), AF_E_CORRUPT);

	/* a literal length running past the end of the block */
	memset(b, 0xFF, 20);
	ck_assert_int_eq(read_all(b, 20, 100, 7, &err), AF_E_CORRUPT);
	ck_assert_uint_eq(err.offset, 7);
	ck_assert_ptr_nonnull(strstr(err.msg, "LZ4 block at byte 7"));
}
END_TEST

START_TEST(a_decoded_length_other_than_declared_is_corrupt)
{
	size_t zlen;
	unsigned char *z = aft_ra_data(aft_reference("mnist_8_z.ra"), &zlen);
	af_error err;
	ck_assert_int_eq(read_all(z, zlen, 2352, 72, &err), AF_OK);
	ck_assert_int_eq(read_all(z, zlen, 2353, 72, &err), AF_E_CORRUPT);
	ck_assert_ptr_nonnull(strstr(err.msg, "at 2352 decoded bytes, not the 2353"));
	/* shorter: liblz4 refuses the last literals, which no longer fit */
	ck_assert_int_eq(read_all(z, zlen, 2351, 72, &err), AF_E_CORRUPT);
	ck_assert_uint_ge(err.offset, 72);
	ck_assert_uint_lt(err.offset, 72 + zlen);
	/* more than 255 output bytes per input byte: refused at open */
	af_source src;
	af_source_init_mem(&src, z, zlen);
	af_lz4_index *ix;
	struct lz4_opts o = small_opts();
	ck_assert_int_eq(lz4_index_open_opts(&ix, &src, 0, zlen, 255 * zlen + 1, &o,
					     &err), AF_E_CORRUPT);
	ck_assert_ptr_null(ix);
	ck_assert_int_eq(lz4_index_open_opts(&ix, &src, 1, zlen, 2352, &o, &err),
			 AF_E_TRUNCATED);
	free(z);
}
END_TEST

START_TEST(every_cut_of_a_block_is_corrupt)
{
	size_t zlen;
	unsigned char *z = aft_ra_data(aft_reference("mnist_8_z.ra"), &zlen);
	for (size_t cut = 0; cut < zlen; cut++) {
		af_error err;
		af_status st = read_all(z, cut, 2352, 0, &err);
		if (st != AF_E_CORRUPT)
			ck_abort_msg("cut at %zu: status %d", cut, (int)st);
	}
	free(z);
}
END_TEST

/* A match offset of 0 is invalid in the LZ4 format, yet liblz4 1.9
 * decodes one as zeros: so do reads, wherever the block is cut. */
START_TEST(zero_offset_reads_as_liblz4_decodes_it)
{
	unsigned char b[64];
	size_t k = put_seq(b, (const unsigned char *)"x", 1, 0, 105);
	k += put_seq(b + k, (const unsigned char *)"xxxxx", 5, 0, 0);
	unsigned char ref[111];
	ck_assert_int_eq(LZ4_decompress_safe((const char *)b, (char *)ref, (int)k,
					     111), 111);
	ck_assert_uint_eq(ref[3], 0);
	struct lz4_opts o = small_opts();
	for (o.block = 1; o.block < 120; o.block += 7) {
		o.span = o.block;
		check_random_reads(b, k, ref, 111, &o, o.block, 30, "zero offset");
	}
}
END_TEST

/* A source that fails its first reads with EIO, then works. */
struct flaky {
	const unsigned char *mem;
	int fails;
};

static ssize_t flaky_pread(const af_source *src, void *buf, size_t len,
			   uint64_t off)
{
	struct flaky *f = src->ctx;
	if (f->fails > 0) {
		f->fails--;
		return -EIO;
	}
	if (off >= src->size)
		return 0;
	size_t n = src->size - off < len ? (size_t)(src->size - off) : len;
	memcpy(buf, f->mem + off, n);
	return (ssize_t)n;
}

START_TEST(read_failures_are_retried)
{
	size_t n = 100000, cn;
	unsigned char *raw = make(TEXT, n, 4);
	unsigned char *c = compress(raw, n, &cn);
	struct lz4_opts o = small_opts();
	unsigned char *buf = malloc(n);
	for (int fails = 1; fails < 40; fails += 3) {
		struct flaky f = { c, 0 };
		af_source src = { .pread = flaky_pread, .size = cn, .fd = -1, .ctx = &f };
		af_lz4_index *ix;
		af_error err;
		ck_assert_int_eq(lz4_index_open_opts(&ix, &src, 0, cn, n, &o, &err), AF_OK);
		uint64_t seed = (uint64_t)fails;
		for (int i = 0; i < 40; i++) {
			uint64_t off = aft_rand(&seed) % n;
			size_t len = (size_t)(aft_rand(&seed) % (n - off)) + 1;
			f.fails = i % 5 == 0 ? fails % 4 + 1 : 0;
			af_status st;
			while ((st = af_lz4_index_read(ix, buf, len, off, &err)) == AF_E_IO)
				ck_assert_int_eq(err.sys_errno, EIO);
			ck_assert_int_eq(st, AF_OK);
			ck_assert(memcmp(buf, raw + off, len) == 0);
		}
		af_lz4_index_close(ix);
	}
	free(buf);
	free(c);
	free(raw);
}
END_TEST

/* 300 random reads of the n bytes, or with len one read at off. */
struct reader {
	af_lz4_index *ix;
	const unsigned char *want;
	size_t n;
	uint64_t seed;
	int bad;
	uint64_t off;
	size_t len;
};

static void *reader_run(void *arg)
{
	struct reader *r = arg;
	if (r->len) {
		unsigned char *one = malloc(r->len);
		af_error err;
		r->bad = !one ||
			 af_lz4_index_read(r->ix, one, r->len, r->off, &err) ||
			 memcmp(one, r->want + r->off, r->len) != 0;
		free(one);
		return NULL;
	}
	unsigned char *buf = malloc(30000);
	for (int i = 0; i < 300; i++) {
		uint64_t off = aft_rand(&r->seed) % r->n;
		size_t len = (size_t)(aft_rand(&r->seed) % 30000) + 1;
		if (len > r->n - off)
			len = r->n - off;
		af_error err;
		if (af_lz4_index_read(r->ix, buf, len, off, &err) != AF_OK ||
		    memcmp(buf, r->want + off, len) != 0)
			r->bad++;
	}
	free(buf);
	return NULL;
}

START_TEST(threads_reading_one_index_see_the_same_bytes)
{
	size_t n = 2u << 20, cn;
	unsigned char *raw = make(RAMPS, n, 8);
	unsigned char *c = compress(raw, n, &cn);
	struct lz4_opts o = small_opts();
	o.cache_blocks = 2; /* fewer entries than threads: they wait their turn */
	af_source src;
	af_source_init_mem(&src, c, cn);
	af_lz4_index *ix;
	af_error err;
	ck_assert_int_eq(lz4_index_open_opts(&ix, &src, 0, cn, n, &o, &err), AF_OK);
	struct reader r[4];
	pthread_t t[4];
	for (int i = 0; i < 4; i++) {
		r[i] = (struct reader){ ix, raw, n, 100u + (uint64_t)i, 0, 0, 0 };
		ck_assert_int_eq(pthread_create(&t[i], NULL, reader_run, &r[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		ck_assert_int_eq(r[i].bad, 0);
	}
	af_lz4_index_close(ix);
	free(c);
	free(raw);
}
END_TEST

/* Read the whole block at @p c (@p cn bytes, @p n decoded) in 10000-byte
 * steps through an index walking ahead on @p pool: the status, and the
 * bytes into @p out. */
static af_status read_on_pool(const unsigned char *c, size_t cn, size_t n,
			      af_pool *pool, unsigned char *out, af_error *err)
{
	af_source src;
	af_source_init_mem(&src, c, cn);
	af_lz4_index *ix;
	struct lz4_opts o = small_opts();
	o.walk_buf = 4096;
	ck_assert_int_eq(lz4_index_open_opts(&ix, &src, 0, cn, n, &o, err), AF_OK);
	ck_assert_int_eq(af_lz4_index_set_pool(ix, pool, err), AF_OK);
	af_status st = AF_OK;
	for (size_t off = 0; off < n && st == AF_OK; off += 10000)
		st = af_lz4_index_read(ix, out + off, n - off < 10000 ? n - off : 10000,
				       off, err);
	/* too late for a pool now */
	ck_assert_int_eq(af_lz4_index_set_pool(ix, pool, NULL), AF_E_INVAL);
	af_lz4_index_close(ix);
	return st;
}

/* Walking ahead on a pool thread (or queued and taken back, with a pool
 * of no thread) gives liblz4's bytes and verdicts, as walking in line. */
START_TEST(walking_ahead_on_a_pool_agrees_with_liblz4)
{
	af_pool *pools[2];
	af_error err;
	ck_assert_int_eq(af_pool_open(&pools[0], 0, 0, &err), AF_OK);
	ck_assert_int_eq(af_pool_open(&pools[1], 2, 0, &err), AF_OK);
	size_t n = 600000;
	unsigned char *want = malloc(n), *got = malloc(n);
	for (int k = 0; k < CONTENTS; k++) {
		unsigned char *raw = make((enum content)k, n, 30u + (uint64_t)k);
		size_t cn;
		unsigned char *c = compress(raw, n, &cn);
		for (int flip = 0; flip < 4; flip++) {
			if (flip)
				c[(cn / 4) * (size_t)flip] ^= (unsigned char)(0x21 * flip);
			int ok = LZ4_decompress_safe((const char *)c, (char *)want,
						     (int)cn, (int)n);
			for (int p = 0; p < 2; p++) {
				af_status st = read_on_pool(c, cn, n, pools[p], got,
							    &err);
				if (ok == (int)n) {
					ck_assert_msg(st == AF_OK, "content %d flip %d "
						      "pool %d: %s", k, flip, p,
						      err.msg);
					ck_assert(memcmp(got, want, n) == 0);
				} else {
					ck_assert_msg(st == AF_E_CORRUPT, "content %d "
						      "flip %d pool %d: %d", k,
						      flip, p, st);
				}
			}
		}
		ck_assert_uint_eq(af_pool_queued(pools[0]), 0);
		free(c);
		free(raw);
	}
	free(want);
	free(got);
	af_pool_close(pools[0]);
	af_pool_close(pools[1]);
}
END_TEST

/* The cache blocks decoded once a sequential reader, on a pool of
 * @p threads with a cache of @p cache_blocks, has read block 0 and the
 * index is idle; then the rest is read and checked. */
static uint64_t decoded_after_block_0(unsigned threads, unsigned cache_blocks)
{
	size_t n = 100000, cn;
	unsigned char *raw = make(TEXT, n, 77), *got = malloc(n);
	unsigned char *c = compress(raw, n, &cn);
	af_source src;
	af_source_init_mem(&src, c, cn);
	af_error err;
	af_pool *pool;
	ck_assert_int_eq(af_pool_open(&pool, threads, 0, &err), AF_OK);
	struct lz4_opts o = small_opts();
	o.walk_buf = 4096;
	o.cache_blocks = cache_blocks;
	af_lz4_index *ix;
	ck_assert_int_eq(lz4_index_open_opts(&ix, &src, 0, cn, n, &o, &err), AF_OK);
	ck_assert_int_eq(af_lz4_index_set_pool(ix, pool, &err), AF_OK);
	ck_assert_int_eq(af_lz4_index_read(ix, got, o.block, 0, &err), AF_OK);
	uint64_t decoded = lz4_index_settled_frontier(ix);
	for (size_t off = o.block; off < n; off += 5000)
		ck_assert_int_eq(af_lz4_index_read(ix, got + off, n - off < 5000 ?
						   n - off : 5000, off, &err), AF_OK);
	ck_assert(memcmp(got, raw, n) == 0);
	af_lz4_index_close(ix);
	af_pool_close(pool);
	free(c);
	free(got);
	free(raw);
	return decoded;
}

/* A sequential reader gets the blocks after the one it reads decoded on
 * a pool thread (4 ahead), never over a block decoded ahead that it has
 * not read yet: with 3 cache blocks only 3 are decoded ahead. */
START_TEST(a_sequential_reader_gets_blocks_decoded_ahead)
{
	ck_assert_uint_eq(decoded_after_block_0(2, 8), 1 + 4);
	ck_assert_uint_eq(decoded_after_block_0(2, 3), 1 + 3);
}
END_TEST

/* 16 blocks of 64 KiB of TEXT made with @p seed (*raw, and the block in
 * *c, both for the caller to free), through an index of @p cache cached
 * blocks and a point every @p span_blocks blocks, over @p src. */
#define GATE_BLK (64u << 10)
static af_lz4_index *open_16_blocks(uint64_t seed, uint64_t span_blocks,
				    unsigned cache, af_source *src,
				    unsigned char **raw, unsigned char **c)
{
	size_t n = 16 * GATE_BLK, cn;
	*raw = make(TEXT, n, seed);
	*c = compress(*raw, n, &cn);
	struct lz4_opts o;
	lz4_default_opts(&o);
	o.block = GATE_BLK;
	o.span = span_blocks * GATE_BLK;
	o.cache_blocks = cache;
	af_source_init_mem(src, *c, cn);
	af_lz4_index *ix;
	af_error err;
	ck_assert_int_eq(lz4_index_open_opts(&ix, src, 0, cn, n, &o, &err), AF_OK);
	return ix;
}

/* Count a read of [@p off, +@p len) in flight at the gate of @p ix, as
 * af_lz4_index_read does (AFO_NONE: not counted). */
static size_t hold_flight(af_lz4_index *ix, size_t off, size_t len, size_t n)
{
	pthread_mutex_lock(&ix->lock);
	size_t flight = afo_enter(&ix->order, &ix->lock, off, len, n);
	pthread_mutex_unlock(&ix->lock);
	return flight;
}

static void end_flight(af_lz4_index *ix, size_t flight)
{
	pthread_mutex_lock(&ix->lock);
	afo_leave(&ix->order, flight);
	pthread_mutex_unlock(&ix->lock);
}

/* The kernel sends a deep read-ahead window or a long O_DIRECT read as
 * 1 MiB reads at once: during the first pass, one that starts while a
 * read behind it is under way waits for it, rather than taking the
 * frontier past that read's blocks, which the cache may no longer hold
 * when it gets to them (decoded again from the access point before them:
 * 1.4-1.8 times the block through the daemon). */
START_TEST(a_long_read_waits_for_the_one_behind_it)
{
	const size_t blk = GATE_BLK, n = 16 * blk;
	unsigned char *raw, *c, *got = malloc(n);
	af_source src;
	af_lz4_index *ix = open_16_blocks(5, 4, 2, &src, &raw, &c);
	af_error err;
	ck_assert_int_eq(af_lz4_index_read(ix, got, blk, 0, &err), AF_OK);
	ck_assert_uint_eq(af_lz4_index_decoded(ix), blk);
	/* a read of blocks 1 and 2 is under way... */
	size_t behind = hold_flight(ix, blk, 2 * blk, n);
	ck_assert_uint_ne(behind, AFO_NONE);
	/* ...when the one of block 3 starts: it waits, decoding nothing */
	struct reader far = { ix, raw, n, 0, 0, 3 * blk, blk };
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, reader_run, &far), 0);
	ck_assert(aft_counted_soon(&ix->lock, &ix->order.waits));
	ck_assert_uint_eq(af_lz4_index_decoded(ix), blk);
	/* the read behind it goes on (its own flight, at its offset, does
	 * not hold it back) and ends */
	ck_assert_int_eq(af_lz4_index_read(ix, got + blk, 2 * blk, blk, &err),
			 AF_OK);
	end_flight(ix, behind);
	pthread_join(t, NULL);
	ck_assert_int_eq(far.bad, 0);
	ck_assert(memcmp(got, raw, 3 * blk) == 0);
	/* each block decoded once, through a cache of 2 */
	ck_assert_uint_eq(af_lz4_index_decoded(ix), 4 * blk);
	/* short reads (random readers) neither wait nor hold back */
	ck_assert_uint_eq(hold_flight(ix, 0, 4096, n), AFO_NONE);
	ck_assert_int_eq(af_lz4_index_read(ix, got + 3 * blk, n - 3 * blk,
					   3 * blk, &err), AF_OK);
	ck_assert(memcmp(got, raw, n) == 0);
	ck_assert_uint_eq(af_lz4_index_decoded(ix), n);
	af_lz4_index_close(ix);
	free(c);
	free(got);
	free(raw);
}
END_TEST

/* A far read can start before the reads behind it are counted, and its
 * run of the frontier passes their blocks: those that counted reads want
 * stay until read, and when every cached block is such a one, the last
 * decoded goes first, its predecessor cached: decoding it again costs one
 * block. Before, the run evicted the first ones, and each was decoded
 * again from the access point before it (up to a span). */
START_TEST(a_far_reads_run_keeps_the_blocks_counted_reads_want)
{
	const size_t blk = GATE_BLK, n = 16 * blk;
	unsigned char *raw, *c, *got = malloc(n);
	af_source src;
	/* one access point: at 0 */
	af_lz4_index *ix = open_16_blocks(9, 16, 4, &src, &raw, &c);
	af_error err;
	/* the frontier to block 6, blocks 2-5 cached */
	ck_assert_int_eq(af_lz4_index_read(ix, got, 4096, 5 * blk, &err), AF_OK);
	ck_assert_uint_eq(af_lz4_index_decoded(ix), 6 * blk);
	/* a read of blocks 6-9 is counted... */
	size_t behind = hold_flight(ix, 6 * blk, 4 * blk, n);
	ck_assert_uint_ne(behind, AFO_NONE);
	/* ...when one of block 10 runs the frontier there (a short read: the
	 * gate lets it by, as it did the far read that started first) */
	ck_assert_int_eq(af_lz4_index_read(ix, got, 4096, 10 * blk, &err), AF_OK);
	ck_assert(memcmp(got, raw + 10 * blk, 4096) == 0);
	ck_assert_uint_eq(af_lz4_index_decoded(ix), 11 * blk);
	/* the counted read: block 9 again from block 8, nothing more */
	ck_assert_int_eq(af_lz4_index_read(ix, got + 6 * blk, 4 * blk, 6 * blk,
					   &err), AF_OK);
	ck_assert(memcmp(got + 6 * blk, raw + 6 * blk, 4 * blk) == 0);
	ck_assert_uint_eq(af_lz4_index_decoded(ix), 12 * blk);
	end_flight(ix, behind);
	af_lz4_index_close(ix);
	free(c);
	free(got);
	free(raw);
}
END_TEST

/* data and B.npy of one array over one index: both right, one cache. */
START_TEST(views_share_one_index)
{
	af_source src;
	int fd = aft_open_fd_source(aft_reference("cifar_airplane_z.ra"), &src);
	size_t plen;
	unsigned char *plain = aft_ra_data(aft_reference("cifar_airplane.ra"), &plen);
	af_array a;
	af_error err;
	ck_assert_int_eq(af_ra_parse(&src, &a, &err), AF_OK);
	af_lz4_index *ix;
	ck_assert_int_eq(af_lz4_index_open(&ix, &a, &src, &err), AF_OK);
	af_view *data, *npy;
	ck_assert_int_eq(af_view_open_shared(&data, &a, &src, AF_VIEW_DATA, ix, &err),
			 AF_OK);
	ck_assert_int_eq(af_view_open_shared(&npy, &a, &src, AF_VIEW_NPY, ix, &err),
			 AF_OK);
	/* the views hold their references: the caller's may go first */
	af_lz4_index_close(ix);
	unsigned char *buf = malloc(plen);
	size_t got;
	ck_assert_int_eq(af_view_read(data, buf, plen, 0, &got, &err), AF_OK);
	ck_assert_uint_eq(got, plen);
	ck_assert(memcmp(buf, plain, plen) == 0);
	uint64_t head = af_view_size(npy) - plen;
	ck_assert_int_eq(af_view_read(npy, buf, plen, head, &got, &err), AF_OK);
	ck_assert(memcmp(buf, plain, plen) == 0);
	/* another array's index is refused */
	af_array other = a;
	other.data_size++;
	af_view *v;
	ck_assert_int_eq(af_lz4_index_open(&ix, &a, &src, &err), AF_OK);
	ck_assert_int_eq(af_view_open_shared(&v, &other, &src, AF_VIEW_DATA, ix, &err),
			 AF_E_INVAL);
	ck_assert_ptr_null(v);
	af_lz4_index_close(ix);
	af_view_close(npy);
	af_view_close(data);
	free(buf);
	free(plain);
	af_array_free(&a);
	close(fd);
}
END_TEST

START_TEST(empty_output_and_bad_arguments)
{
	static const unsigned char token = 0;
	af_source src;
	af_source_init_mem(&src, &token, 1);
	af_lz4_index *ix;
	af_error err;
	struct lz4_opts o = small_opts();
	ck_assert_int_eq(lz4_index_open_opts(&ix, &src, 0, 1, 0, &o, &err), AF_OK);
	ck_assert_uint_eq(af_lz4_index_size(ix), 0);
	ck_assert_int_eq(af_lz4_index_read(ix, NULL, 0, 0, &err), AF_OK);
	unsigned char b;
	ck_assert_int_eq(af_lz4_index_read(ix, &b, 1, 0, &err), AF_E_RANGE);
	af_lz4_index_close(ix);
	/* an empty block that should decode to bytes: no block does */
	ck_assert_int_eq(lz4_index_open_opts(&ix, &src, 0, 0, 4, &o, &err), AF_E_CORRUPT);
	o.span = o.block + 1; /* not a multiple */
	ck_assert_int_eq(lz4_index_open_opts(&ix, &src, 0, 1, 4, &o, &err), AF_E_INVAL);
	af_array plain = { .compression = AF_COMP_NONE };
	ck_assert_int_eq(af_lz4_index_open(&ix, &plain, &src, &err), AF_E_INVAL);
	ck_assert_uint_eq(af_lz4_index_memory(NULL), 0);
	af_lz4_index_close(NULL);
}
END_TEST

/* What the daemon budgets for a view: the index's bound, not the output. */
START_TEST(view_cost_is_the_index_bound)
{
	af_array a = { .format = AF_FORMAT_RA, .compression = AF_COMP_LZ4,
		       .data_size = 3ULL << 30, .stored_size = 1 << 30 };
	af_cost c = af_view_cost(&a, NULL, AF_VIEW_DATA);
	ck_assert(c.decodes);
	ck_assert_uint_eq(c.held, af_lz4_index_bound(a.data_size));
	/* 1.6 % of 3 GiB in points, plus a few MiB */
	ck_assert_uint_lt(c.held, (3ULL << 30) / 50);
	ck_assert_uint_gt(c.held, (3ULL << 30) / 64);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("lz4");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, reference_samples_read_at_any_offset_as_their_twins);
	tcase_add_test(tc, sequences_longer_than_blocks_and_spans);
	tcase_add_test(tc, corrupt_blocks_are_corrupt_at_the_faulty_sequence);
	tcase_add_test(tc, a_decoded_length_other_than_declared_is_corrupt);
	tcase_add_test(tc, every_cut_of_a_block_is_corrupt);
	tcase_add_test(tc, zero_offset_reads_as_liblz4_decodes_it);
	tcase_add_test(tc, read_failures_are_retried);
	tcase_add_test(tc, threads_reading_one_index_see_the_same_bytes);
	tcase_add_test(tc, walking_ahead_on_a_pool_agrees_with_liblz4);
	tcase_add_test(tc, a_sequential_reader_gets_blocks_decoded_ahead);
	tcase_add_test(tc, a_long_read_waits_for_the_one_behind_it);
	tcase_add_test(tc, a_far_reads_run_keeps_the_blocks_counted_reads_want);
	tcase_add_test(tc, views_share_one_index);
	tcase_add_test(tc, empty_output_and_bad_arguments);
	tcase_add_test(tc, view_cost_is_the_index_bound);
	tcase_add_test(tc, random_reads_equal_the_whole_block_decode);
	tcase_add_test(tc, block_over_several_index_intervals);
	suite_add_tcase(s, tc);
	return aft_run(s);
}
