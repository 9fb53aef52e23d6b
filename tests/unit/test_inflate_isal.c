/* SPDX-License-Identifier: MIT */
/*
 * Tests for src/codec/inflate/inflate_isal.c: the ISA-L engine against the zlib
 * one, stream by stream. Over many streams (data of several entropies,
 * zlib levels 0-9 and its strategies: stored, fixed and dynamic Huffman,
 * flushes; ISA-L's own deflate; the members python's zlib wrote for the
 * zip fixtures; empty and one-byte streams) both engines must give the
 * same bytes, and the plaintext, for the same reads at random offsets
 * through the access-point machinery, ISA-L must keep the stream (no
 * hand-over to zlib), and each must restart from the other's access
 * points. For bad streams (cut short, run long, ending early, a wrong
 * CRC-32, bit flips) both must give the same status and message, read by
 * read, except where ISA-L takes an incomplete Huffman code zlib refuses.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#ifdef AF_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#endif

#include "af_test.h"
#include "arrayfs/arrayfs.h"
#include "../../src/codec/inflate/inflate_state_i.h"

#define KIB (1u << 10)
#define MIB (1u << 20)

struct stream {
	char name[96];
	unsigned char *plain;
	size_t plen;
	unsigned char *comp;
	size_t clen;
	uint32_t crc;
};

enum kind { ZEROS, NIBBLES, TEXT, FLOATS, NOISE, RUNS, KINDS };
static const char *const kind_names[KINDS] = {
	"zeros", "nibbles", "text", "floats", "noise", "runs",
};

static unsigned char *make_data(size_t n, enum kind k, uint64_t seed)
{
	/* text: pieces of a header line at random places */
	static const char line[] = "{'descr': '<f4', 'fortran_order': False, "
				   "'shape': (3, 4, 1024), }\n";
	unsigned char *p = malloc(n ? n : 1);
	ck_assert_ptr_nonnull(p);
	uint64_t st = seed | 1;
	for (size_t i = 0; i < n;) {
		uint64_t r = aft_rand(&st);
		if (k == ZEROS) {
			p[i++] = 0;
		} else if (k == NIBBLES) {
			for (int b = 0; b < 16 && i < n; b++)
				p[i++] = (unsigned char)((r >> (4 * b)) & 15);
		} else if (k == TEXT) {
			size_t from = (size_t)(r % (sizeof(line) - 1));
			size_t len = 1 + (size_t)((r >> 32) % 24);
			for (size_t j = from; j < from + len && j < sizeof(line) - 1 &&
					      i < n; j++)
				p[i++] = (unsigned char)line[j];
		} else if (k == FLOATS) {
			/* sums of uniforms: roughly normal float32 values */
			float f = (float)((r & 0xffff) + ((r >> 16) & 0xffff) +
					  ((r >> 32) & 0xffff)) / 65536.0f - 1.5f;
			unsigned char b[4];
			memcpy(b, &f, 4);
			for (int j = 0; j < 4 && i < n; j++)
				p[i++] = b[j];
		} else if (k == NOISE) {
			for (int b = 0; b < 8 && i < n; b++)
				p[i++] = (unsigned char)(r >> (8 * b));
		} else {
			size_t run = 1 + (size_t)(r % 300);
			for (size_t j = 0; j < run && i < n; j++)
				p[i++] = (unsigned char)(r >> 40);
		}
	}
	return p;
}

/* zlib raw deflate; flush_every > 0 adds a Z_SYNC_FLUSH (an empty stored
 * block, then byte alignment) every that many input bytes. */
static void zlib_compress(struct stream *s, int level, int memlevel,
			  int strategy, size_t flush_every)
{
	z_stream zs;
	memset(&zs, 0, sizeof(zs));
	ck_assert_int_eq(deflateInit2(&zs, level, Z_DEFLATED, -15, memlevel,
				      strategy), Z_OK);
	size_t cap = deflateBound(&zs, s->plen) + 64 +
		     (flush_every ? 6 * (s->plen / flush_every + 1) : 0);
	s->comp = malloc(cap);
	ck_assert_ptr_nonnull(s->comp);
	zs.next_out = s->comp;
	zs.avail_out = (uInt)cap;
	size_t at = 0;
	int ret;
	do {
		size_t n = s->plen - at;
		if (flush_every && n > flush_every)
			n = flush_every;
		zs.next_in = s->plain + at;
		zs.avail_in = (uInt)n;
		at += n;
		ret = deflate(&zs, at == s->plen ? Z_FINISH : Z_SYNC_FLUSH);
	} while (at < s->plen);
	ck_assert_int_eq(ret, Z_STREAM_END);
	s->clen = cap - zs.avail_out;
	deflateEnd(&zs);
}

#ifdef AF_HAVE_ISAL
/* ISA-L's own deflate at @p level (0-3): other block shapes than zlib's. */
static void isal_compress(struct stream *s, int level)
{
	static const uint32_t bufs[] = { ISAL_DEF_LVL0_DEFAULT,
					 ISAL_DEF_LVL1_DEFAULT,
					 ISAL_DEF_LVL2_DEFAULT,
					 ISAL_DEF_LVL3_DEFAULT };
	struct isal_zstream *zs = malloc(sizeof(*zs));
	unsigned char *lvl = malloc(bufs[level] ? bufs[level] : 1);
	size_t cap = 2 * s->plen + 1024;
	s->comp = malloc(cap);
	ck_assert(zs && lvl && s->comp);
	isal_deflate_init(zs);
	zs->level = (uint32_t)level;
	zs->level_buf = lvl;
	zs->level_buf_size = bufs[level];
	zs->gzip_flag = IGZIP_DEFLATE;
	zs->end_of_stream = 1;
	zs->next_in = s->plain;
	zs->avail_in = (uint32_t)s->plen;
	zs->next_out = s->comp;
	zs->avail_out = (uint32_t)cap;
	/* it returns now and then before the end, with room to spare */
	for (int i = 0; zs->internal_state.state != ZSTATE_END; i++) {
		ck_assert_int_lt(i, 10000);
		ck_assert_int_eq(isal_deflate(zs), COMP_OK);
		ck_assert_uint_gt(zs->avail_out, 0);
	}
	s->clen = cap - zs->avail_out;
	free(lvl);
	free(zs);
}
#endif

static void make_stream(struct stream *s, size_t n, enum kind k,
			uint64_t seed)
{
	memset(s, 0, sizeof(*s));
	s->plain = make_data(n, k, seed);
	s->plen = n;
	s->crc = (uint32_t)crc32_z(0, s->plain, n);
}

/* @p n bytes of kind @p k deflated by zlib at @p level, named @p name. */
static void zlib_stream(struct stream *s, size_t n, enum kind k, int level,
			const char *name)
{
	make_stream(s, n, k, (uint64_t)n + (uint64_t)k);
	zlib_compress(s, level, level == 9 ? 9 : 8, Z_DEFAULT_STRATEGY, 0);
	snprintf(s->name, sizeof(s->name), "%s %zu B, %s", kind_names[k], n,
		 name);
}

static void free_stream(struct stream *s)
{
	free(s->plain);
	free(s->comp);
	s->plain = s->comp = NULL;
}

static struct af_inflate_opts small_opts(af_inflate_engine e)
{
	struct af_inflate_opts o;
	af_inflate_default_opts(&o);
	o.engine = e;
	o.span = 64 * KIB;
	o.block = 16 * KIB;
	o.cache_blocks = 4;
	o.inbuf = 8 * KIB;
	o.index_div = 8; /* many windows kept deflated */
	return o;
}

static af_inflate *open_engine(const struct stream *s, af_source *src,
			       uint64_t size, uint32_t crc, af_inflate_engine e)
{
	struct af_inflate_opts o = small_opts(e);
	af_inflate *z = NULL;
	af_error err;
	af_source_init_mem(src, s->comp, s->clen);
	ck_assert_int_eq(af_inflate_open_opts(&z, src, size, crc, &o, &err),
			 AF_OK);
	return z;
}

struct pair {
	const struct stream *s;
	af_source zsrc, isrc;
	af_inflate *zl, *is;
	unsigned char *zbuf, *ibuf;
	size_t cap;
	int lenient; /* reads where ISA-L took a code zlib refused */
};

static void pair_open(struct pair *p, const struct stream *s, uint64_t size,
		      uint32_t crc)
{
	memset(p, 0, sizeof(*p));
	p->s = s;
	p->zl = open_engine(s, &p->zsrc, size, crc, AF_INFLATE_ZLIB);
	p->is = open_engine(s, &p->isrc, size, crc, AF_INFLATE_ISAL);
	p->cap = 300 * KIB;
	p->zbuf = malloc(p->cap);
	p->ibuf = malloc(p->cap);
	ck_assert(p->zbuf && p->ibuf);
}

static void pair_close(struct pair *p)
{
	af_inflate_close(p->zl);
	af_inflate_close(p->is);
	free(p->zbuf);
	free(p->ibuf);
}

/* zlib refused a Huffman code as incomplete, which ISA-L accepts. */
static bool incomplete_code(const af_error *e)
{
	return strstr(e->msg, "invalid code lengths set") ||
	       strstr(e->msg, "invalid literal/lengths set") ||
	       strstr(e->msg, "invalid distances set");
}

/* One read through both engines: same status, message, count and bytes;
 * on a clean stream (@p clean) the plaintext too. Returns the status. */
static af_status both_read(struct pair *p, uint64_t off, size_t len,
			   bool clean)
{
	if (len > p->cap)
		len = p->cap;
	af_error ze, ie;
	size_t zn = 0, in = 0;
	af_status zs = af_inflate_read(p->zl, p->zbuf, len, off, &zn, &ze);
	af_status is = af_inflate_read(p->is, p->ibuf, len, off, &in, &ie);
	if (zs != is && zs == AF_E_CORRUPT && incomplete_code(&ze)) {
		p->lenient++;
		return zs;
	}
	ck_assert_msg(zs == is, "%s: read %zu at %llu: zlib %s (%s), ISA-L %s "
		      "(%s)", p->s->name, len, (unsigned long long)off,
		      af_status_str(zs), zs ? ze.msg : "", af_status_str(is),
		      is ? ie.msg : "");
	if (zs) {
		ck_assert_msg(strcmp(ze.msg, ie.msg) == 0,
			      "%s: read %zu at %llu: zlib says \"%s\", ISA-L "
			      "\"%s\"", p->s->name, len,
			      (unsigned long long)off, ze.msg, ie.msg);
		return zs;
	}
	ck_assert_uint_eq(zn, in);
	ck_assert_msg(memcmp(p->zbuf, p->ibuf, zn) == 0,
		      "%s: read %zu at %llu: the engines' bytes differ",
		      p->s->name, len, (unsigned long long)off);
	if (clean)
		ck_assert_msg(off >= p->s->plen ||
			      memcmp(p->zbuf, p->s->plain + off, zn) == 0,
			      "%s: read %zu at %llu differs from the data",
			      p->s->name, len, (unsigned long long)off);
	return AF_OK;
}

/* Random reads, a sequential pass in odd pieces, reads at and around
 * either engine's access points, more random reads. */
static void read_through(struct pair *p, uint64_t size, bool clean,
			 uint64_t seed)
{
	uint64_t st = seed | 1;
	for (int i = 0; i < 8; i++)
		both_read(p, aft_rand(&st) % (size + 1),
			  (size_t)(aft_rand(&st) % (40 * KIB)), clean);
	for (uint64_t off = 0; off < size;) {
		size_t len = 1 + (size_t)(aft_rand(&st) % (200 * KIB));
		if (both_read(p, off, len, clean) != AF_OK)
			break;
		off += len;
	}
	both_read(p, size, 10, clean);
	af_inflate *zs[2] = { p->zl, p->is };
	for (int e = 0; e < 2; e++) {
		size_t np = af_inflate_points(zs[e]);
		for (size_t i = np; i-- > 0;) {
			uint64_t at = af_inflate_point_out(zs[e], i);
			both_read(p, at, 3000, clean);
			both_read(p, at - 1, 2, clean);
		}
	}
	for (int i = 0; i < 20; i++)
		both_read(p, aft_rand(&st) % (size + 1),
			  (size_t)(aft_rand(&st) % (70 * KIB)), clean);
}

/* Clean stream: identical bytes; ISA-L kept it; each engine restarts
 * from the points the other recorded. */
static void check_clean(const struct stream *s, uint64_t seed)
{
	struct pair p;
	pair_open(&p, s, s->plen, s->crc);
	read_through(&p, s->plen, true, seed);
	ck_assert_msg(af_inflate_engine_used(p.is) == AF_INFLATE_ISAL,
		      "%s: ISA-L handed a clean stream to zlib", s->name);
	ck_assert_int_eq(p.lenient, 0);
	/* swap the engines: each now restarts from the other's points */
	p.zl->engine = AF_INFLATE_ISAL;
	p.is->engine = AF_INFLATE_ZLIB;
	af_inflate *zs[2] = { p.zl, p.is };
	for (int e = 0; e < 2; e++) {
		size_t np = af_inflate_points(zs[e]);
		for (size_t i = 0; i < np; i++) {
			uint64_t at = af_inflate_point_out(zs[e], i);
			both_read(&p, at + 1, 5000, true);
		}
	}
	pair_close(&p);
}

START_TEST(zlib_levels_and_kinds)
{
	/* every kind at every level: stored (0), fast (1-3), lazy (4-9) */
	static const size_t sizes[] = { 0, 1, 777, 300 * KIB + 5 };
	for (int k = 0; k < KINDS; k++)
		for (int level = 0; level <= 9; level++)
			for (int i = 0; i < 4; i++) {
				if (i < 3 && level % 3 != 0)
					continue;
				struct stream s;
				make_stream(&s, sizes[i], (enum kind)k,
					    (uint64_t)(k * 100 + level));
				zlib_compress(&s, level, 8, Z_DEFAULT_STRATEGY,
					      0);
				snprintf(s.name, sizeof(s.name),
					 "%s %zu B level %d", kind_names[k],
					 s.plen, level);
				check_clean(&s, (uint64_t)level + 7);
				free_stream(&s);
			}
}
END_TEST

START_TEST(zlib_strategies_and_flushes)
{
	/* fixed-code blocks (Z_FIXED), Huffman only, RLE, filtered, tiny
	 * blocks (memLevel 1), big ones (9), and sync flushes */
	static const int strategies[] = { Z_FIXED, Z_HUFFMAN_ONLY, Z_RLE,
					  Z_FILTERED, Z_DEFAULT_STRATEGY };
	static const int memlevels[] = { 8, 8, 8, 8, 1, 9 };
	static const size_t flushes[] = { 0, 0, 0, 0, 0, 0, 10000, 65536 };
	for (int k = 0; k < KINDS; k++)
		for (int v = 0; v < 8; v++) {
			int strategy = strategies[v < 5 ? v : 4];
			struct stream s;
			make_stream(&s, 400 * KIB + (size_t)v, (enum kind)k,
				    (uint64_t)(k * 10 + v));
			zlib_compress(&s, 6, memlevels[v < 6 ? v : 0], strategy,
				      flushes[v]);
			snprintf(s.name, sizeof(s.name), "%s %zu B variant %d",
				 kind_names[k], s.plen, v);
			check_clean(&s, (uint64_t)v + 99);
			free_stream(&s);
		}
}
END_TEST

START_TEST(isal_made_streams)
{
#ifdef AF_HAVE_ISAL
	for (int k = 0; k < KINDS; k++)
		for (int level = 0; level <= 3; level++) {
			struct stream s;
			make_stream(&s, 700 * KIB + 3, (enum kind)k,
				    (uint64_t)(k + 40 * level));
			isal_compress(&s, level);
			snprintf(s.name, sizeof(s.name),
				 "%s %zu B igzip level %d", kind_names[k],
				 s.plen, level);
			check_clean(&s, (uint64_t)level + 5);
			free_stream(&s);
		}
#endif
}
END_TEST

/* A first pass over @p s through a decoder tuned by @p o, in reads of
 * @p step bytes, each checked; the decoder, for the caller to close, and
 * the whole output in *out (the caller frees it). */
static af_inflate *pass_with(const struct stream *s, af_source *src,
			     const struct af_inflate_opts *o, size_t step,
			     unsigned char **out)
{
	af_inflate *z;
	af_error err;
	af_source_init_mem(src, s->comp, s->clen);
	ck_assert_int_eq(af_inflate_open_opts(&z, src, s->plen, s->crc, o, &err),
			 AF_OK);
	*out = malloc(s->plen);
	ck_assert_ptr_nonnull(*out);
	size_t n;
	for (uint64_t off = 0; off < s->plen; off += step)
		ck_assert_int_eq(af_inflate_read(z, *out + off, step, off, &n,
						 &err), AF_OK);
	ck_assert(memcmp(*out, s->plain, s->plen) == 0);
	return z;
}

START_TEST(fixed_code_stream_goes_to_zlib)
{
	/* fixed-code blocks have 3-bit headers that ISA-L's 32-byte calls
	 * rarely end in, and the same tables each time, so the scout does not
	 * see them either: past o.seek_limit zlib takes the stream over,
	 * replays from the last point and places the points from there */
	struct stream s;
	make_stream(&s, 3 * MIB, TEXT, 21);
	zlib_compress(&s, 6, 8, Z_FIXED, 0);
	struct af_inflate_opts o = small_opts(AF_INFLATE_ISAL);
	o.seek_limit = 16 * KIB;
	o.index_div = 0; /* a point every span */
	af_source src;
	unsigned char *out;
	af_inflate *z = pass_with(&s, &src, &o, 100 * KIB, &out);
	ck_assert_int_eq(af_inflate_engine_used(z), AF_INFLATE_ZLIB);
	af_error err;
	size_t n;
	/* its blocks end every ~200 KiB of output: a point at most of them */
	ck_assert_uint_ge(af_inflate_points(z), 10);
	for (size_t i = af_inflate_points(z); i-- > 0;) {
		uint64_t at = af_inflate_point_out(z, i);
		ck_assert_int_eq(af_inflate_read(z, out, 5000, at, &n, &err),
				 AF_OK);
		ck_assert(memcmp(out, s.plain + at, n) == 0);
	}
	free(out);
	af_inflate_close(z);
	free_stream(&s);
}
END_TEST

/* A boundary past the input the cursor holds: the scout ran out of input
 * before it, and scouts again once the next input is in, so the cursor
 * seeks at most a scout chunk in AFZ_SEEK_CHUNK steps. Before, it went on
 * in those steps to the boundary, through the next input: one point in 20
 * of a numpy member (zlib blocks of 40-80 KiB output, 512 KiB of input
 * held) took 650 steps or more, two thirds of a pass's seek steps. */
START_TEST(a_scout_out_of_input_scouts_again)
{
#ifdef AF_HAVE_ISAL
	struct stream s;
	/* memLevel 9: blocks of 32 Ki symbols, 16 KiB or so of input each,
	 * twice the input the cursor holds */
	make_stream(&s, 4 * MIB, NIBBLES, 5);
	zlib_compress(&s, 6, 9, Z_DEFAULT_STRATEGY, 0);
	struct af_inflate_opts o = small_opts(AF_INFLATE_ISAL);
	o.index_div = 0; /* a point every span */
	af_source src;
	unsigned char *out;
	af_inflate *z = pass_with(&s, &src, &o, 256 * KIB, &out);
	ck_assert_int_eq(af_inflate_engine_used(z), AF_INFLATE_ISAL);
	size_t points = af_inflate_points(z);
	ck_assert_uint_ge(points, 40);
	/* a scout chunk, the 8 bytes ISA-L reads ahead and a block header,
	 * at most, per point */
	uint64_t most = (o.scout_chunk + 8 + 300) / o.seek_chunk + 1;
	ck_assert_uint_le(z->seek_steps, points * most);
	free(out);
	af_inflate_close(z);
	free_stream(&s);
#endif
}
END_TEST

/* Every deflated member of the zip fixtures (written by python's zipfile,
 * that is python's zlib, as np.savez_compressed does). */
START_TEST(python_zlib_members)
{
	const char *dir = aft_fixture("zip");
	DIR *d = opendir(dir);
	ck_assert_ptr_nonnull(d);
	int members = 0;
	for (struct dirent *de; (de = readdir(d));) {
		size_t nl = strlen(de->d_name);
		if (nl < 4 || (strcmp(de->d_name + nl - 4, ".npz") &&
			       strcmp(de->d_name + nl - 4, ".zip")))
			continue;
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		size_t alen;
		unsigned char *arch = aft_read_file(path, &alen);
		af_source asrc;
		af_source_init_mem(&asrc, arch, alen);
		af_zip *zip;
		af_error err;
		if (af_zip_open(&zip, &asrc, &err) != AF_OK) {
			free(arch);
			continue;
		}
		for (size_t i = 0; i < af_zip_count(zip); i++) {
			const af_zip_entry *e = af_zip_entry_at(zip, i);
			uint64_t at;
			if (e->method != AF_ZIP_DEFLATED ||
			    af_zip_data_offset(zip, i, &at, &err) != AF_OK ||
			    at > alen || e->comp_size > alen - at)
				continue;
			struct stream s = { .plen = (size_t)e->uncomp_size,
					    .clen = (size_t)e->comp_size,
					    .crc = e->crc32 };
			snprintf(s.name, sizeof(s.name), "%s member %zu",
				 de->d_name, i);
			s.comp = arch + at;
			struct pair p;
			pair_open(&p, &s, s.plen, s.crc);
			read_through(&p, s.plen, false, i + 3);
			pair_close(&p);
			members++;
		}
		af_zip_close(zip);
		free(arch);
	}
	closedir(d);
	ck_assert_int_ge(members, 5);
}
END_TEST

/* A mangled copy of a stream through both engines, read by read. */
static void check_bad(const struct stream *s, uint64_t size, uint32_t crc,
		      size_t cut, uint64_t seed)
{
	struct stream t = *s;
	t.clen = cut;
	struct pair p;
	pair_open(&p, &t, size, crc);
	read_through(&p, size, false, seed);
	pair_close(&p);
}

START_TEST(bad_streams_fail_alike)
{
	for (int k = NIBBLES; k <= FLOATS; k++) {
		struct stream s;
		zlib_stream(&s, 600 * KIB, (enum kind)k, 6, "mangled");
		/* cut short */
		for (size_t cut = 0; cut < s.clen; cut += s.clen / 9 + 1)
			check_bad(&s, s.plen, s.crc, cut, cut);
		/* declared too small (runs long), too large (ends early) */
		check_bad(&s, s.plen - 1, s.crc, s.clen, 1);
		check_bad(&s, s.plen / 3, s.crc, s.clen, 2);
		check_bad(&s, s.plen + 1, s.crc, s.clen, 3);
		/* a wrong CRC-32 */
		check_bad(&s, s.plen, s.crc ^ 0x80, s.clen, 4);
		free_stream(&s);
	}
}
END_TEST

START_TEST(bad_data_fails_only_reads_reaching_it)
{
	/* a full flush at 48 KiB (a cache block boundary) ends with an empty
	 * stored block (00 00 ff ff), whose lengths are then broken: reads
	 * up to 48 KiB succeed (though inflate meets the bad header as soon
	 * as the block before it ends), reads past it fail, alike */
	struct stream s;
	make_stream(&s, 100 * KIB, TEXT, 5);
	z_stream zs;
	memset(&zs, 0, sizeof(zs));
	ck_assert_int_eq(deflateInit2(&zs, 6, Z_DEFLATED, -15, 8,
				      Z_DEFAULT_STRATEGY), Z_OK);
	size_t cap = deflateBound(&zs, s.plen) + 64;
	s.comp = malloc(cap);
	ck_assert_ptr_nonnull(s.comp);
	zs.next_out = s.comp;
	zs.avail_out = (uInt)cap;
	zs.next_in = s.plain;
	zs.avail_in = 48 * KIB;
	ck_assert_int_eq(deflate(&zs, Z_FULL_FLUSH), Z_OK);
	size_t mark = cap - zs.avail_out;
	ck_assert(memcmp(s.comp + mark - 4, "\0\0\xff\xff", 4) == 0);
	zs.avail_in = (uInt)(s.plen - 48 * KIB);
	ck_assert_int_eq(deflate(&zs, Z_FINISH), Z_STREAM_END);
	s.clen = cap - zs.avail_out;
	deflateEnd(&zs);
	s.comp[mark - 1] = 0xfe;
	snprintf(s.name, sizeof(s.name), "text, a bad stored header at 48 KiB");
	struct pair p;
	pair_open(&p, &s, s.plen, s.crc);
	ck_assert_int_eq(both_read(&p, 40000, 48 * KIB - 40000, true), AF_OK);
	ck_assert_int_eq(both_read(&p, 48 * KIB - 10, 20, false),
			 AF_E_CORRUPT);
	ck_assert_int_eq(both_read(&p, 0, 1000, true), AF_OK);
	ck_assert_int_eq(both_read(&p, 60 * KIB, 1000, false), AF_E_CORRUPT);
	pair_close(&p);
	free_stream(&s);
}
END_TEST

START_TEST(bomb_stops_at_declared_size)
{
	/* 32 MiB of zeros in ~32 KiB, declared as 1 MiB */
	struct stream s;
	zlib_stream(&s, 32 * MIB, ZEROS, 9, "declared as 1 MiB");
	struct pair p;
	pair_open(&p, &s, MIB, s.crc);
	both_read(&p, 0, 1000, false);
	unsigned char *buf = malloc(MIB);
	ck_assert_ptr_nonnull(buf);
	af_inflate *zs[2] = { p.zl, p.is };
	char msg[2][256];
	for (int e = 0; e < 2; e++) {
		size_t n;
		af_error err;
		ck_assert_int_eq(af_inflate_read(zs[e], buf, MIB, 0, &n, &err),
				 AF_E_CORRUPT);
		ck_assert_ptr_nonnull(strstr(err.msg, "more than the declared"));
		memcpy(msg[e], err.msg, sizeof(msg[e]));
		struct af_inflate_opts o = small_opts(AF_INFLATE_ISAL);
		ck_assert_uint_le(af_inflate_memory(zs[e]),
				  af_inflate_fixed_memory(&o) + MIB / 8);
	}
	ck_assert_str_eq(msg[0], msg[1]);
	/* condemned as a whole from now on */
	both_read(&p, 0, 1000, false);
	both_read(&p, MIB - 10, 10, false);
	free(buf);
	pair_close(&p);
	free_stream(&s);
}
END_TEST

START_TEST(bit_flips_fail_alike)
{
	struct stream s;
	zlib_stream(&s, 200 * KIB, TEXT, 6, "a bit flipped");
	unsigned char *good = malloc(s.clen);
	ck_assert_ptr_nonnull(good);
	memcpy(good, s.comp, s.clen);
	uint64_t st = 77;
	int lenient = 0;
	for (int t = 0; t < 120; t++) {
		memcpy(s.comp, good, s.clen);
		/* half the flips in the first block's header */
		size_t at = (size_t)(aft_rand(&st) %
				     (t % 2 ? s.clen : (s.clen < 60 ? s.clen
								     : 60)));
		s.comp[at] ^= (unsigned char)(1u << (aft_rand(&st) % 8));
		struct pair p;
		pair_open(&p, &s, s.plen, s.crc);
		read_through(&p, s.plen, false, (uint64_t)t);
		lenient += p.lenient > 0;
		pair_close(&p);
	}
	printf("bit flips: %d of 120 made a code ISA-L takes and zlib "
	       "refuses\n", lenient);
	free(good);
	free_stream(&s);
}
END_TEST

struct bits {
	unsigned char buf[64];
	size_t bit;
};

/* @p n bits of @p v, least significant first (header fields, extras) */
static void put_bits(struct bits *b, unsigned v, unsigned n)
{
	for (unsigned i = 0; i < n; i++, b->bit++)
		if (v >> i & 1)
			b->buf[b->bit / 8] |= (unsigned char)(1u << (b->bit % 8));
}

/* a Huffman code: its most significant bit first */
static void put_code(struct bits *b, unsigned code, unsigned len)
{
	for (unsigned i = len; i-- > 0;)
		put_bits(b, code >> i & 1, 1);
}

START_TEST(incomplete_code_isal_takes_zlib_refuses)
{
	/* one dynamic block whose literal/length code (A, B, end of block:
	 * 2 bits each) leaves a quarter of the code space unused: zlib
	 * refuses it, ISA-L inflates "ABBA" (the documented exception) */
	struct bits b = { { 0 }, 0 };
	put_bits(&b, 1, 1);  /* BFINAL */
	put_bits(&b, 2, 2);  /* dynamic */
	put_bits(&b, 0, 5);  /* 257 literal/length codes */
	put_bits(&b, 0, 5);  /* 1 distance code */
	put_bits(&b, 12, 4); /* 16 code length codes */
	/* in RFC 1951 order 16 17 18 0 8 7 9 6 10 5 11 4 12 3 13 2:
	 * 18 and 0 get 2 bits, 2 gets 1 bit (codes 2: 0, 0: 10, 18: 11) */
	static const unsigned clen[16] = { 0, 0, 2, 2, 0, 0, 0, 0,
					   0, 0, 0, 0, 0, 0, 0, 1 };
	for (int i = 0; i < 16; i++)
		put_bits(&b, clen[i], 3);
	put_code(&b, 3, 2);   /* 18: 65 zeros (0..64) */
	put_bits(&b, 54, 7);
	put_code(&b, 0, 1);   /* 'A': 2 */
	put_code(&b, 0, 1);   /* 'B': 2 */
	put_code(&b, 3, 2);   /* 18: 138 zeros (67..204) */
	put_bits(&b, 127, 7);
	put_code(&b, 3, 2);   /* 18: 51 zeros (205..255) */
	put_bits(&b, 40, 7);
	put_code(&b, 0, 1);   /* end of block: 2 */
	put_code(&b, 2, 2);   /* the one distance code: unused */
	static const unsigned abba[] = { 0, 1, 1, 0, 2 }; /* A B B A end */
	for (int i = 0; i < 5; i++)
		put_code(&b, abba[i], 2);
	struct stream s = { .plain = (unsigned char *)"ABBA", .plen = 4,
			    .comp = b.buf, .clen = (b.bit + 7) / 8 };
	s.crc = (uint32_t)crc32_z(0, s.plain, 4);
	snprintf(s.name, sizeof(s.name), "an incomplete code");
	af_inflate *zs[2];
	af_source src[2];
	af_status st[2];
	af_error err[2];
	unsigned char out[2][8];
	size_t n[2];
	for (int e = 0; e < 2; e++) {
		zs[e] = open_engine(&s, &src[e], 4, s.crc,
				    e ? AF_INFLATE_ISAL : AF_INFLATE_ZLIB);
		st[e] = af_inflate_read(zs[e], out[e], 8, 0, &n[e], &err[e]);
		af_inflate_close(zs[e]);
	}
	ck_assert_int_eq(st[0], AF_E_CORRUPT);
	ck_assert(incomplete_code(&err[0]));
	ck_assert_int_eq(st[1], AF_OK);
	ck_assert_uint_eq(n[1], 4);
	ck_assert(memcmp(out[1], "ABBA", 4) == 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("inflate_isal");
	if (!af_inflate_engine_available(AF_INFLATE_ISAL)) {
		printf("inflate_isal: this build has no ISA-L: nothing to "
		       "compare\n");
		return EXIT_SUCCESS;
	}
	TCase *tc = tcase_create("clean");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, zlib_levels_and_kinds);
	tcase_add_test(tc, zlib_strategies_and_flushes);
	tcase_add_test(tc, isal_made_streams);
	tcase_add_test(tc, python_zlib_members);
	tcase_add_test(tc, fixed_code_stream_goes_to_zlib);
	tcase_add_test(tc, a_scout_out_of_input_scouts_again);
	suite_add_tcase(s, tc);

	tc = tcase_create("bad");
	aft_tag_slow(tc);
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, bad_streams_fail_alike);
	tcase_add_test(tc, bad_data_fails_only_reads_reaching_it);
	tcase_add_test(tc, bomb_stops_at_declared_size);
	tcase_add_test(tc, bit_flips_fail_alike);
	tcase_add_test(tc, incomplete_code_isal_takes_zlib_refuses);
	suite_add_tcase(s, tc);
	return aft_run(s);
}
