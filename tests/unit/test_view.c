/* SPDX-License-Identifier: MIT */
/*
 * Tests for src/codec/view.c and view_header.c: every view of the
 * gen_view.py sources (view/cases.txt) against the expected whole views
 * numpy computed, whole and by thousands of random slices (object arrays:
 * only B.npy, the source file itself); extents; LZ4
 * data through a view (decoder cases: test_lz4.c); sources that shrink or
 * fail (test_view_sources.c); concurrent readers.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "af_test.h"
#include "arrayfs/arrayfs.h"

#define MAX_CASES 256
#define RANDOM_READS 3000

/* One line of view/cases.txt: a source and the af_array it holds. */
typedef struct view_case {
	char name[64];
	char path[4096];
	bool unsupported;
	af_array a;        /* built by hand from the line; shape points below */
	uint64_t dims[AF_NDIM_MAX];
} view_case;

static const char *const view_ext[] = { NULL, "data", "npy", "ra" };

static uint64_t num(char **save)
{
	char *t = strtok_r(NULL, " \n", save);
	ck_assert_ptr_nonnull(t);
	return strtoull(t, NULL, 10);
}

static char *word(char **save)
{
	char *t = strtok_r(NULL, " \n", save);
	ck_assert_ptr_nonnull(t);
	return t;
}

/* Room for MAX_CASES cases on the heap (too big for a test's stack); free it. */
static view_case *cases_new(void)
{
	view_case *cases = calloc(MAX_CASES, sizeof(*cases));
	ck_assert_ptr_nonnull(cases);
	return cases;
}

static size_t load_cases(view_case *cases)
{
	FILE *f = fopen(aft_fixture("view/cases.txt"), "r");
	ck_assert_msg(f != NULL, "cannot open view/cases.txt");
	char line[8192];
	size_t n = 0;
	while (fgets(line, sizeof(line), f)) {
		ck_assert_uint_lt(n, MAX_CASES);
		view_case *c = &cases[n++];
		memset(c, 0, sizeof(*c));
		char *save;
		snprintf(c->name, sizeof(c->name), "%s", strtok_r(line, " ", &save));
		const char *where = word(&save), *path = word(&save);
		char rel[512];
		snprintf(rel, sizeof(rel), "view/%s", path);
		snprintf(c->path, sizeof(c->path), "%s",
			 strcmp(where, "ref") == 0 ? aft_reference(path) :
						     aft_fixture(rel));
		c->unsupported = strcmp(word(&save), "unsupported") == 0;
		af_array *a = &c->a;
		a->format = strcmp(word(&save), "npy") == 0 ? AF_FORMAT_NPY :
							      AF_FORMAT_RA;
		a->data_offset = num(&save);
		a->stored_size = num(&save);
		a->data_size = num(&save);
		a->count = num(&save);
		a->fortran_order = num(&save) != 0;
		a->dtype.kind = (af_kind)num(&save);
		a->dtype.byteorder = word(&save)[0];
		a->dtype.itemsize = num(&save);
		a->dtype.scalar_size = num(&save);
		a->dtype.has_object = num(&save) != 0;
		a->compression = num(&save) ? AF_COMP_LZ4 : AF_COMP_NONE;
		a->ra_flags = num(&save);
		a->ra_eltype = num(&save);
		a->ra_elbyte = num(&save);
		a->ndim = (unsigned)num(&save);
		ck_assert_uint_le(a->ndim, AF_NDIM_MAX);
		for (unsigned i = 0; i < a->ndim; i++)
			c->dims[i] = num(&save);
		a->shape = c->dims;
	}
	fclose(f);
	ck_assert_uint_gt(n, 100);
	return n;
}

static unsigned char *expected(const view_case *c, af_view_kind kind,
			       size_t *len)
{
	char rel[128];
	snprintf(rel, sizeof(rel), "view/exp/%s.%s", c->name, view_ext[kind]);
	return aft_read_file(aft_fixture(rel), len);
}

/* The extents tile the view; SOURCE ones equal the source, MEMORY ones the
 * view. Returns whether any is DECODED. */
static bool check_extents(const af_view *v, const af_source *src,
			  const unsigned char *want, size_t size,
			  const char *what)
{
	uint64_t off = 0;
	af_extent e;
	bool decoded = false;
	while (off < size) {
		ck_assert_int_eq(af_view_extent(v, off, &e), AF_OK);
		ck_assert_msg(e.len > 0 && e.len <= size - off,
			      "%s: extent at %llu has length %llu", what,
			      (unsigned long long)off, (unsigned long long)e.len);
		if (e.kind == AF_EXTENT_SOURCE) {
			unsigned char *b = malloc(e.len);
			ck_assert_ptr_nonnull(b);
			ck_assert_int_eq(af_source_read_exact(src, b, e.len,
							      e.src_off, NULL),
					 AF_OK);
			ck_assert_msg(memcmp(b, want + off, e.len) == 0,
				      "%s: source extent at %llu differs", what,
				      (unsigned long long)off);
			free(b);
		} else if (e.kind == AF_EXTENT_MEMORY) {
			ck_assert_msg(memcmp(e.mem, want + off, e.len) == 0,
				      "%s: memory extent at %llu differs", what,
				      (unsigned long long)off);
		} else {
			ck_assert_int_eq(e.kind, AF_EXTENT_DECODED);
			decoded = true;
		}
		/* an extent asked for in the middle ends where the whole one does */
		if (e.len > 1) {
			af_extent mid;
			ck_assert_int_eq(af_view_extent(v, off + e.len / 2, &mid),
					 AF_OK);
			ck_assert_int_eq(mid.kind, e.kind);
			ck_assert_uint_eq(mid.len, e.len - e.len / 2);
			if (e.kind == AF_EXTENT_SOURCE)
				ck_assert_uint_eq(mid.src_off, e.src_off + e.len / 2);
			if (e.kind == AF_EXTENT_MEMORY)
				ck_assert_ptr_eq(mid.mem, e.mem + e.len / 2);
		}
		off += e.len;
	}
	ck_assert_int_eq(af_view_extent(v, size, &e), AF_E_RANGE);
	return decoded;
}

/* Whole content, then random slices around the header/data boundary and the end. */
static void check_reads(af_view *v, const unsigned char *want, size_t size,
			uint64_t seed, const char *what)
{
	unsigned char *buf = malloc(size + 1);
	ck_assert_ptr_nonnull(buf);
	size_t got = 0;
	af_error err;
	af_status st = af_view_read(v, buf, size + 1, 0, &got, &err);
	ck_assert_msg(st == AF_OK, "%s: whole read: %s", what, err.msg);
	ck_assert_uint_eq(got, size);
	ck_assert_msg(memcmp(buf, want, size) == 0, "%s: content differs", what);
	free(buf);

	af_extent e;
	uint64_t head = 0;
	if (size && af_view_extent(v, 0, &e) == AF_OK &&
	    e.kind == AF_EXTENT_MEMORY)
		head = e.len;
	/* up to 3x the header, capped so huge v2 headers stay quick under valgrind */
	size_t maxlen = 3 * head + 64 < 12000 ? 3 * head + 64 : 12000;
	buf = malloc(maxlen + 1);
	ck_assert_ptr_nonnull(buf);
	uint64_t s = seed | 1;
	for (int i = 0; i < RANDOM_READS; i++) {
		uint64_t r = aft_rand(&s);
		size_t len = (size_t)(aft_rand(&s) % (maxlen + 1));
		uint64_t off;
		switch (r % 4) {
		case 0: /* around the header/data boundary */
			off = head > len ? head - (r >> 8) % (len + 1) :
					   (r >> 8) % (head + 1);
			break;
		case 1: /* near or past the end */
			off = size + 8 - (r >> 8) % (size + 9 < 64 ? size + 9 : 64);
			break;
		default:
			off = (r >> 8) % (size + 16);
		}
		memset(buf, 0xA5, len + 1);
		st = af_view_read(v, buf, len, off, &got, &err);
		/* plain ifs: every ck_assert costs Check a write(2), and this
		 * loop runs a million times */
		if (st != AF_OK)
			ck_abort_msg("%s: read %zu at %llu: %s", what, len,
				     (unsigned long long)off, err.msg);
		size_t want_len = off >= size ? 0 :
				  (size - off < len ? size - off : len);
		if (got != want_len)
			ck_abort_msg("%s: read %zu at %llu gave %zu", what, len,
				     (unsigned long long)off, got);
		if (memcmp(buf, want + (off < size ? off : 0), got) != 0)
			ck_abort_msg("%s: read %zu at %llu differs", what, len,
				     (unsigned long long)off);
		if (buf[got] != 0xA5)
			ck_abort_msg("%s: read %zu at %llu wrote past %zu bytes",
				     what, len, (unsigned long long)off, got);
	}
	free(buf);
}

static void check_case_views(const view_case *c, const af_array *a,
			     const af_source *src, uint64_t seed)
{
	for (int k = AF_VIEW_DATA; k <= AF_VIEW_RA; k++) {
		char what[128];
		snprintf(what, sizeof(what), "%s .%s view", c->name, view_ext[k]);
		af_view *v = NULL;
		af_error err;
		af_status st = af_view_open(&v, a, src, (af_view_kind)k, &err);
		/* object arrays (a pickle): B.npy, the file itself, and no more */
		if (c->unsupported && k != AF_VIEW_NPY) {
			ck_assert_msg(st == AF_E_UNSUPPORTED,
				      "%s: opened an object array (%d)", what,
				      (int)st);
			ck_assert_ptr_null(v);
			continue;
		}
		ck_assert_msg(st == AF_OK, "%s: %s", what, err.msg);
		size_t size;
		unsigned char *want = c->unsupported ?
			aft_read_file(c->path, &size) :
			expected(c, (af_view_kind)k, &size);
		ck_assert_msg(af_view_size(v) == size,
			      "%s: size %llu, expected %zu", what,
			      (unsigned long long)af_view_size(v), size);
		check_reads(v, want, size, seed + (uint64_t)k, what);
		bool decoded = check_extents(v, src, want, size, what);
		/* af_view_cost follows the rule the view follows */
		af_cost cost = af_view_cost(a, NULL, (af_view_kind)k);
		ck_assert_msg(cost.decodes == decoded, "%s: cost says decodes %d",
			      what, cost.decodes);
		ck_assert_uint_eq(cost.held, decoded && a->compression == AF_COMP_LZ4 ?
					     af_lz4_index_bound(a->data_size) : 0);
		/* an empty LZ4 block still has its (empty) index, but the .ra
		 * view of an LZ4 .ra is its source */
		ck_assert_msg(cost.lz4_index == (a->compression == AF_COMP_LZ4 &&
						 (decoded || (a->data_size == 0 &&
							      k != AF_VIEW_RA))),
			      "%s: cost says lz4_index %d", what, cost.lz4_index);
		free(want);
		af_view_close(v);
	}
}

START_TEST(views_of_hand_built_arrays_match_numpy)
{
	view_case *cases = cases_new();
	size_t n = load_cases(cases);
	for (size_t i = 0; i < n; i++) {
		int fd = open(cases[i].path, O_RDONLY);
		ck_assert_msg(fd >= 0, "cannot open %s", cases[i].path);
		af_source src;
		af_source_init_fd(&src, fd, 0, (uint64_t)lseek(fd, 0, SEEK_END));
		check_case_views(&cases[i], &cases[i].a, &src, 1000 + i);
		close(fd);
	}
	free(cases);
}
END_TEST

static void check_parsed(af_format format, uint64_t seed)
{
	view_case *cases = cases_new();
	size_t n = load_cases(cases);
	size_t done = 0;
	for (size_t i = 0; i < n; i++) {
		if (cases[i].a.format != format)
			continue;
		size_t len;
		unsigned char *raw = aft_read_file(cases[i].path, &len);
		af_source src;
		af_source_init_mem(&src, raw, len);
		af_array a;
		af_error err;
		af_status st = format == AF_FORMAT_NPY ?
			       af_npy_parse(&src, &a, &err) :
			       af_ra_parse(&src, &a, &err);
		ck_assert_msg(st == AF_OK, "%s: parse: %s", cases[i].name,
			      err.msg);
		check_case_views(&cases[i], &a, &src, seed + i);
		af_array_free(&a);
		free(raw);
		done++;
	}
	ck_assert_uint_gt(done, 40);
	free(cases);
}

START_TEST(views_of_parsed_npy_arrays_match_numpy)
{
	check_parsed(AF_FORMAT_NPY, 5000);
}
END_TEST

START_TEST(views_of_parsed_ra_arrays_match_numpy)
{
	check_parsed(AF_FORMAT_RA, 7000);
}
END_TEST

START_TEST(lz4_reference_samples_decode_to_their_twins)
{
	static const char *const pairs[][2] = {
		{ "mnist_8_z.ra", "mnist_8.ra" },
		{ "cifar_airplane_z.ra", "cifar_airplane.ra" },
	};
	for (size_t i = 0; i < 2; i++) {
		size_t zlen, plen;
		unsigned char *z = aft_read_file(aft_reference(pairs[i][0]), &zlen);
		unsigned char *plain = aft_ra_data(aft_reference(pairs[i][1]), &plen);
		af_source src;
		af_source_init_mem(&src, z, zlen);
		af_array a;
		af_error err;
		ck_assert_msg(af_ra_parse(&src, &a, &err) == AF_OK, "%s", err.msg);
		ck_assert_int_eq(a.compression, AF_COMP_LZ4);
		af_view *v;
		ck_assert_int_eq(af_view_open(&v, &a, &src, AF_VIEW_DATA, &err), AF_OK);
		ck_assert_uint_eq(af_view_size(v), plen);
		unsigned char *got = malloc(plen);
		size_t n;
		ck_assert_int_eq(af_view_read(v, got, plen, 0, &n, &err), AF_OK);
		ck_assert_uint_eq(n, plen);
		ck_assert(memcmp(got, plain, plen) == 0);
		free(got);
		af_view_close(v);
		af_array_free(&a);
		free(plain);
		free(z);
	}
}
END_TEST

/* A v1 .npy of @p header (no padding) then @p ndata bytes of @p data. */
static unsigned char *npy_of(const char *header, const void *data,
			     size_t ndata, size_t *len)
{
	size_t hl = strlen(header);
	unsigned char *b = malloc(10 + hl + ndata);
	ck_assert_ptr_nonnull(b);
	memcpy(b, "\x93NUMPY\x01\x00", 8);
	b[8] = (unsigned char)hl;
	b[9] = (unsigned char)(hl >> 8);
	memcpy(b + 10, header, hl);
	memcpy(b + 10 + hl, data, ndata);
	*len = 10 + hl + ndata;
	return b;
}

/* The data part (after the RawArray header) of the .ra view of @p npy. */
static void ra_view_data(const unsigned char *npy, size_t len,
			 unsigned char *out, size_t n)
{
	af_source src;
	af_source_init_mem(&src, npy, len);
	af_array a;
	af_error err;
	ck_assert_msg(af_npy_parse(&src, &a, &err) == AF_OK, "%s", err.msg);
	ck_assert_uint_eq(a.data_size, n);
	af_view *v;
	ck_assert_int_eq(af_view_open(&v, &a, &src, AF_VIEW_RA, &err), AF_OK);
	size_t got;
	uint64_t head = af_view_size(v) - n;
	ck_assert_int_eq(af_view_read(v, out, n, head, &got, &err), AF_OK);
	ck_assert_uint_eq(got, n);
	af_view_close(v);
	af_array_free(&a);
}

START_TEST(ra_view_keeps_user_defined_bytes_as_stored)
{
	/* ">U3": UCS-4 big-endian, RawArray eltype 0: never swapped */
	static const unsigned char ucs4[24] = { 0, 0, 0, 'a', 0, 0, 0, 'b',
		0, 0, 0, 'c', 0, 0, 0, 'd', 0, 0, 0, 'e', 0, 0, 0xE9, 0 };
	unsigned char out[24];
	size_t len;
	unsigned char *npy = npy_of("{'descr': '>U3', 'fortran_order': False, "
				    "'shape': (2,), }", ucs4, sizeof(ucs4), &len);
	ra_view_data(npy, len, out, sizeof(out));
	ck_assert_mem_eq(out, ucs4, sizeof(ucs4));
	free(npy);
	/* a struct of big-endian numbers: eltype 0 too */
	unsigned char rec[24];
	for (size_t i = 0; i < sizeof(rec); i++)
		rec[i] = (unsigned char)(i + 1);
	npy = npy_of("{'descr': [('x', '>f8'), ('y', '>i4')], 'fortran_order': "
		     "False, 'shape': (2,), }", rec, sizeof(rec), &len);
	ra_view_data(npy, len, out, sizeof(out));
	ck_assert_mem_eq(out, rec, sizeof(rec));
	free(npy);
	/* big-endian numbers are still swapped, each half of a complex alone */
	npy = npy_of("{'descr': '>c8', 'fortran_order': False, 'shape': (3,), }",
		     rec, sizeof(rec), &len);
	ra_view_data(npy, len, out, sizeof(out));
	for (size_t i = 0; i < sizeof(rec); i++)
		ck_assert_uint_eq(out[i], rec[i - i % 4 + 3 - i % 4]);
	free(npy);
}
END_TEST

static void put_le(unsigned char *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* A zip of one member "m.npy" holding @p data deflated; caller frees. */
static unsigned char *deflated_zip(const unsigned char *data, size_t n,
				   size_t *len)
{
	uLongf clen = compressBound(n);
	unsigned char *z = calloc(1, 30 + 5 + clen + 46 + 5 + 22);
	ck_assert_ptr_nonnull(z);
	z_stream zs = { 0 };
	ck_assert_int_eq(deflateInit2(&zs, 6, Z_DEFLATED, -15, 8,
				      Z_DEFAULT_STRATEGY), Z_OK);
	zs.next_in = (unsigned char *)data;
	zs.avail_in = (uInt)n;
	zs.next_out = z + 35;
	zs.avail_out = (uInt)clen;
	ck_assert_int_eq(deflate(&zs, Z_FINISH), Z_STREAM_END);
	clen = zs.total_out;
	deflateEnd(&zs);
	uint32_t crc = (uint32_t)crc32(0, data, (uInt)n);
	unsigned char *c = z + 35 + clen, *e = c + 46 + 5;
	put_le(z, 0x04034b50u, 4);
	put_le(z + 8, 8, 2);
	put_le(z + 14, crc, 4);
	put_le(z + 18, clen, 4);
	put_le(z + 22, n, 4);
	put_le(z + 26, 5, 2);
	memcpy(z + 30, "m.npy", 5);
	put_le(c, 0x02014b50u, 4);
	put_le(c + 10, 8, 2);
	put_le(c + 16, crc, 4);
	put_le(c + 20, clen, 4);
	put_le(c + 24, n, 4);
	put_le(c + 28, 5, 2);
	memcpy(c + 46, "m.npy", 5);
	put_le(e, 0x06054b50u, 4);
	put_le(e + 8, 1, 2);
	put_le(e + 10, 1, 2);
	put_le(e + 12, 46 + 5, 4);
	put_le(e + 16, (uint64_t)(c - z), 4);
	*len = (size_t)(e + 22 - z);
	return z;
}

START_TEST(object_array_npy_view_is_the_file_or_member_bytes)
{
	size_t n, zlen;
	unsigned char *npy = aft_read_file(aft_fixture("view/src/object.npy"), &n);
	unsigned char *zip = deflated_zip(npy, n, &zlen);
	af_source file, arch;
	af_source_init_mem(&file, npy, n);
	af_source_init_mem(&arch, zip, zlen);
	af_zip *z;
	af_member *m;
	af_error err;
	ck_assert_int_eq(af_zip_open(&z, &arch, &err), AF_OK);
	ck_assert_int_eq(af_member_open(&m, z, 0, &err), AF_OK);
	const af_source *srcs[2] = { &file, af_member_source(m) };
	for (int i = 0; i < 2; i++) {
		af_array a;
		ck_assert_int_eq(af_npy_parse(srcs[i], &a, &err), AF_OK);
		ck_assert(a.dtype.has_object);
		af_view *v;
		ck_assert_int_eq(af_view_open(&v, &a, srcs[i], AF_VIEW_NPY, &err),
				 AF_OK);
		ck_assert_uint_eq(af_view_size(v), n);
		unsigned char *got = malloc(n);
		size_t len;
		ck_assert_int_eq(af_view_read(v, got, n, 0, &len, &err), AF_OK);
		ck_assert_uint_eq(len, n);
		ck_assert_mem_eq(got, npy, n);
		free(got);
		af_view_close(v);
		/* the pickle is never served as elements */
		ck_assert_int_eq(af_view_open(&v, &a, srcs[i], AF_VIEW_DATA, &err),
				 AF_E_UNSUPPORTED);
		ck_assert_int_eq(af_view_open(&v, &a, srcs[i], AF_VIEW_RA, &err),
				 AF_E_UNSUPPORTED);
		af_array_free(&a);
	}
	af_member_close(m);
	af_zip_close(z);
	free(zip);
	free(npy);
}
END_TEST

/* mnist_8_z.ra as a hand-built af_array over a private copy of its bytes. */
typedef struct lz4_sample {
	unsigned char *raw;
	size_t len;
	uint64_t dims[3];
	af_array a;
	af_source src;
} lz4_sample;

static void lz4_sample_load(lz4_sample *s)
{
	memset(s, 0, sizeof(*s));
	s->raw = aft_read_file(aft_reference("mnist_8_z.ra"), &s->len);
	s->dims[0] = 28;
	s->dims[1] = 28;
	s->dims[2] = 3;
	af_array *a = &s->a;
	a->format = AF_FORMAT_RA;
	a->data_offset = 72;
	a->stored_size = 486;
	a->data_size = a->count = 2352;
	a->ndim = 3;
	a->shape = s->dims;
	a->fortran_order = true;
	a->dtype = (af_dtype){ .kind = AF_KIND_UINT, .byteorder = '|',
			       .itemsize = 1, .scalar_size = 1 };
	a->compression = AF_COMP_LZ4;
	a->ra_flags = AF_RA_FLAG_COMPRESSED;
	a->ra_eltype = 2;
	a->ra_elbyte = 1;
	ck_assert_uint_eq(s->len, 72 + 486);
	af_source_init_mem(&s->src, s->raw, s->len);
}

static af_status lz4_sample_read(lz4_sample *s, af_error *err)
{
	af_view *v;
	af_status st = af_view_open(&v, &s->a, &s->src, AF_VIEW_DATA, err);
	if (st != AF_OK)
		return st;
	unsigned char buf[64];
	size_t n = 0;
	st = af_view_read(v, buf, sizeof(buf), 100, &n, err);
	/* a failure is remembered: the second read says the same */
	af_status again = af_view_read(v, buf, sizeof(buf), 2000, &n, NULL);
	ck_assert_int_eq(again, st);
	af_view_close(v);
	return st;
}

START_TEST(lz4_corrupt_block_is_corrupt)
{
	lz4_sample s;
	lz4_sample_load(&s);
	af_error err;
	ck_assert_int_eq(lz4_sample_read(&s, &err), AF_OK);

	memset(s.raw + 72, 0xFF, 486); /* literal lengths past the block */
	ck_assert_int_eq(lz4_sample_read(&s, &err), AF_E_CORRUPT);
	ck_assert_uint_eq(err.offset, 72);
	ck_assert_ptr_nonnull(strstr(err.msg, "LZ4"));
	free(s.raw);

	/* a match offset reaching before the start of the output */
	lz4_sample_load(&s);
	memset(s.raw + 72, 0, 486);
	s.raw[72] = 0x1F;  /* 1 literal, then a match */
	s.raw[74] = 0xFF;  /* offset 0xFFFF */
	s.raw[75] = 0xFF;
	ck_assert_int_eq(lz4_sample_read(&s, &err), AF_E_CORRUPT);
	free(s.raw);
}
END_TEST

START_TEST(lz4_wrong_decoded_length_is_corrupt)
{
	lz4_sample s;
	lz4_sample_load(&s);
	af_error err;
	s.a.data_size = 2353;
	ck_assert_int_eq(lz4_sample_read(&s, &err), AF_E_CORRUPT);
	ck_assert_ptr_nonnull(strstr(err.msg, "2353"));
	s.a.data_size = 2351;
	ck_assert_int_eq(lz4_sample_read(&s, &err), AF_E_CORRUPT);
	free(s.raw);
}
END_TEST

START_TEST(lz4_larger_than_its_block_can_decode_is_corrupt)
{
	lz4_sample s;
	lz4_sample_load(&s);
	s.a.data_size = 255 * s.a.stored_size + 1;
	af_view *v;
	af_error err;
	for (int k = AF_VIEW_DATA; k <= AF_VIEW_NPY; k++)
		ck_assert_int_eq(af_view_open(&v, &s.a, &s.src, (af_view_kind)k,
					      &err), AF_E_CORRUPT);
	/* the .ra view of a .ra file is the file: nothing to decode */
	ck_assert_int_eq(af_view_open(&v, &s.a, &s.src, AF_VIEW_RA, &err), AF_OK);
	af_view_close(v);
	free(s.raw);
}
END_TEST

START_TEST(view_cost_of_members_and_lz4)
{
	af_array a = { .format = AF_FORMAT_NPY, .data_size = 80,
		       .dtype = { .kind = AF_KIND_FLOAT, .byteorder = '<',
				  .itemsize = 8, .scalar_size = 8 } };
	af_zip_entry stored = { .method = AF_ZIP_STORED };
	af_zip_entry deflated = { .method = AF_ZIP_DEFLATED };
	for (int k = AF_VIEW_DATA; k <= AF_VIEW_RA; k++) {
		/* a file or a stored member: bytes as they are, spliceable */
		ck_assert(!af_view_cost(&a, NULL, (af_view_kind)k).decodes);
		ck_assert(!af_view_cost(&a, &stored, (af_view_kind)k).decodes);
		/* a deflated member decodes, and its index is the member's */
		af_cost c = af_view_cost(&a, &deflated, (af_view_kind)k);
		ck_assert(c.decodes);
		ck_assert_uint_eq(c.held, 0);
	}
	/* big-endian numbers: only the .ra view swaps, and keeps nothing */
	a.dtype.byteorder = '>';
	ck_assert(!af_view_cost(&a, NULL, AF_VIEW_DATA).decodes);
	ck_assert(!af_view_cost(&a, NULL, AF_VIEW_NPY).decodes);
	ck_assert(af_view_cost(&a, NULL, AF_VIEW_RA).decodes);
	ck_assert_uint_eq(af_view_cost(&a, NULL, AF_VIEW_RA).held, 0);
	/* an LZ4 .ra: data and B.npy decode through an index, which may keep
	 * its bound; B.ra is the file itself */
	lz4_sample s;
	lz4_sample_load(&s);
	for (int k = AF_VIEW_DATA; k <= AF_VIEW_NPY; k++) {
		af_cost c = af_view_cost(&s.a, NULL, (af_view_kind)k);
		ck_assert(c.decodes);
		ck_assert_uint_eq(c.held, af_lz4_index_bound(2352));
	}
	af_cost c = af_view_cost(&s.a, NULL, AF_VIEW_RA);
	ck_assert(!c.decodes);
	ck_assert_uint_eq(c.held, 0);
	free(s.raw);
}
END_TEST

typedef struct reader_job {
	af_view *v;
	const unsigned char *want;
	size_t size;
	uint64_t seed;
	int failures;
} reader_job;

static void *reader_thread(void *arg)
{
	reader_job *j = arg;
	unsigned char buf[5000];
	for (int i = 0; i < 500; i++) {
		uint64_t off = aft_rand(&j->seed) % (j->size + 10);
		size_t len = (size_t)(aft_rand(&j->seed) % sizeof(buf));
		size_t got;
		af_error err;
		if (af_view_read(j->v, buf, len, off, &got, &err) != AF_OK) {
			j->failures++;
			continue;
		}
		size_t want_len = off >= j->size ? 0 :
				  (j->size - off < len ? j->size - off : len);
		if (got != want_len || memcmp(buf, j->want + off, got) != 0)
			j->failures++;
	}
	return NULL;
}

START_TEST(concurrent_readers_see_the_same_bytes)
{
	view_case *cases = cases_new();
	size_t n = load_cases(cases);
	static const struct { const char *name; af_view_kind kind; } targets[] = {
		{ "big_be_f8", AF_VIEW_RA },
		{ "ra_lz4_big", AF_VIEW_DATA },
		{ "ra_lz4_big", AF_VIEW_NPY },
		{ "ref_shepplogan", AF_VIEW_NPY },
	};
	for (size_t t = 0; t < sizeof(targets) / sizeof(targets[0]); t++) {
		const view_case *c = NULL;
		for (size_t i = 0; i < n; i++)
			if (strcmp(cases[i].name, targets[t].name) == 0)
				c = &cases[i];
		ck_assert_ptr_nonnull(c);
		int fd = open(c->path, O_RDONLY);
		ck_assert_int_ge(fd, 0);
		af_source src;
		af_source_init_fd(&src, fd, 0, (uint64_t)lseek(fd, 0, SEEK_END));
		af_view *v;
		af_error err;
		ck_assert_int_eq(af_view_open(&v, &c->a, &src, targets[t].kind, &err),
				 AF_OK);
		size_t size;
		unsigned char *want = expected(c, targets[t].kind, &size);
		reader_job jobs[8];
		pthread_t th[8];
		for (int i = 0; i < 8; i++) {
			jobs[i] = (reader_job){ v, want, size, 31 + (uint64_t)i, 0 };
			ck_assert_int_eq(pthread_create(&th[i], NULL, reader_thread,
							&jobs[i]), 0);
		}
		for (int i = 0; i < 8; i++) {
			pthread_join(th[i], NULL);
			ck_assert_msg(jobs[i].failures == 0, "%s: thread %d: %d bad reads",
				      c->name, i, jobs[i].failures);
		}
		free(want);
		af_view_close(v);
		close(fd);
	}
	free(cases);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("view");
	TCase *views = tcase_create("views");
	tcase_add_test(views, views_of_hand_built_arrays_match_numpy);
	tcase_add_test(views, views_of_parsed_npy_arrays_match_numpy);
	tcase_add_test(views, views_of_parsed_ra_arrays_match_numpy);
	tcase_add_test(views, ra_view_keeps_user_defined_bytes_as_stored);
	tcase_add_test(views, object_array_npy_view_is_the_file_or_member_bytes);
	suite_add_tcase(s, views);
	TCase *lz4 = tcase_create("lz4");
	tcase_add_test(lz4, lz4_reference_samples_decode_to_their_twins);
	tcase_add_test(lz4, lz4_corrupt_block_is_corrupt);
	tcase_add_test(lz4, lz4_wrong_decoded_length_is_corrupt);
	tcase_add_test(lz4, lz4_larger_than_its_block_can_decode_is_corrupt);
	tcase_add_test(lz4, view_cost_of_members_and_lz4);
	suite_add_tcase(s, lz4);
	TCase *threads = tcase_create("threads");
	tcase_add_test(threads, concurrent_readers_see_the_same_bytes);
	suite_add_tcase(s, threads);
	return aft_run(s);
}
