/* SPDX-License-Identifier: MIT */
/*
 * Tests for src/codec/zarr_layout.c, zarr_chunk.c, zarr_meta.c and
 * zarr_json.c: every gen_zarr.py source (zarr/cases.txt) against the store
 * numpy and json.dumps computed (metadata byte for byte, every chunk whole,
 * by extents and by random slices), then hand-made arrays for what numpy
 * cannot write: huge shapes, more than 32 dims, counts that do not fit,
 * strict chunk names, descr forms numpy never writes, failing reads.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "af_test.h"
#include "arrayfs/arrayfs.h"
#include "arrayfs/af_zarr.h"

#define MAX_CASES 128
#define SLICES_PER_CHUNK 24

/* One line of zarr/cases.txt. */
typedef struct zarr_case {
	char name[64];
	char path[4096];
	uint64_t max_bytes;
	uint64_t nchunks;
} zarr_case;

static size_t load_cases(zarr_case *cases)
{
	FILE *f = fopen(aft_fixture("zarr/cases.txt"), "r");
	ck_assert_msg(f != NULL, "cannot open zarr/cases.txt");
	char line[1024], rel[512];
	size_t n = 0;
	while (fgets(line, sizeof(line), f)) {
		ck_assert_uint_lt(n, MAX_CASES);
		zarr_case *c = &cases[n++];
		unsigned long long max, count;
		ck_assert_int_eq(sscanf(line, "%63s %511s %llu %llu", c->name,
					rel, &max, &count), 4);
		char full[600];
		snprintf(full, sizeof(full), "zarr/%s", rel);
		snprintf(c->path, sizeof(c->path), "%s", aft_fixture(full));
		c->max_bytes = max;
		c->nchunks = count;
	}
	fclose(f);
	ck_assert_uint_gt(n, 40);
	return n;
}

/* exp/NAME/FILE of a case, or NULL if the generator wrote none. */
static unsigned char *expected(const zarr_case *c, const char *file,
			       size_t *len)
{
	char rel[512];
	snprintf(rel, sizeof(rel), "zarr/exp/%s/%s", c->name, file);
	const char *path = aft_fixture(rel);
	if (access(path, F_OK) != 0)
		return NULL;
	return aft_read_file(path, len);
}

static void check_text(const af_zarr_layout *l, af_zarr_file which,
		       const zarr_case *c, const char *file)
{
	size_t want_len = 0, len = 0;
	unsigned char *want = expected(c, file, &want_len);
	char *text = NULL;
	af_error err;
	af_status st = af_zarr_text(l, which, &text, &len, &err);
	if (!want) {
		ck_assert_msg(st == AF_E_RANGE, "%s: %s should be absent", c->name,
			      file);
		ck_assert_ptr_null(text);
		return;
	}
	ck_assert_msg(st == AF_OK, "%s: %s: %s", c->name, file, err.msg);
	ck_assert_msg(len == want_len && memcmp(text, want, len) == 0,
		      "%s: %s differs:\n%s\nwanted:\n%.*s", c->name, file, text,
		      (int)want_len, want);
	ck_assert_uint_eq(strlen(text), len);
	free(text);
	free(want);
}

/* The extents tile the chunk: source bytes, zeros, or decoded bytes. */
static void check_extents(const af_zarr_chunk *ch, af_view *data,
			  const af_source *src, const unsigned char *want,
			  const char *what)
{
	uint64_t off = 0;
	af_extent e;
	while (off < ch->size) {
		ck_assert_int_eq(af_zarr_chunk_extent(ch, data, off, &e), AF_OK);
		ck_assert_msg(e.len > 0 && e.len <= ch->size - off,
			      "%s: extent at %llu", what, (unsigned long long)off);
		unsigned char *b = malloc(e.len);
		ck_assert_ptr_nonnull(b);
		size_t got;
		switch (e.kind) {
		case AF_EXTENT_SOURCE:
			ck_assert_int_eq(af_source_read_exact(src, b, e.len,
							      e.src_off, NULL),
					 AF_OK);
			break;
		case AF_EXTENT_ZERO:
			/* the tail is the chunk's end, nothing after it */
			ck_assert_uint_eq(off + e.len, ch->size);
			memset(b, 0, e.len);
			break;
		case AF_EXTENT_DECODED:
			ck_assert_int_eq(af_zarr_chunk_read(ch, data, b, e.len, off,
							    &got, NULL),
					 AF_OK);
			ck_assert_uint_eq(got, e.len);
			break;
		default:
			ck_abort_msg("%s: extent kind %d in a chunk", what,
				     (int)e.kind);
		}
		ck_assert_msg(memcmp(b, want + off, e.len) == 0,
			      "%s: extent at %llu differs", what,
			      (unsigned long long)off);
		free(b);
		off += e.len;
	}
	ck_assert_int_eq(af_zarr_chunk_extent(ch, data, ch->size, &e), AF_E_RANGE);
}

static void check_chunk(const zarr_case *c, const af_zarr_layout *l,
			af_view *data, const af_source *src,
			const af_zarr_entry *en, uint64_t *seed)
{
	char what[400];
	snprintf(what, sizeof(what), "%s/%s", c->name, en->name);
	size_t want_len;
	unsigned char *want = expected(c, en->name, &want_len);
	ck_assert_msg(want != NULL, "%s: no such chunk in the expected store",
		      what);
	af_zarr_chunk ch;
	ck_assert_int_eq(af_zarr_chunk_get(l, en->chunk, &ch), AF_OK);
	ck_assert_uint_eq(ch.size, l->chunk_bytes);
	ck_assert_uint_eq(ch.size, want_len);

	unsigned char *buf = malloc(want_len + 8);
	ck_assert_ptr_nonnull(buf);
	size_t got;
	af_error err;
	ck_assert_msg(af_zarr_chunk_read(&ch, data, buf, want_len + 8, 0, &got,
					 &err) == AF_OK, "%s: %s", what, err.msg);
	ck_assert_uint_eq(got, want_len);
	ck_assert_msg(memcmp(buf, want, want_len) == 0, "%s differs", what);
	check_extents(&ch, data, src, want, what);
	for (int i = 0; i < SLICES_PER_CHUNK; i++) {
		uint64_t off = aft_rand(seed) % (want_len + 4);
		size_t len = (size_t)(aft_rand(seed) % (want_len + 4));
		memset(buf, 0xA5, want_len + 8);
		ck_assert_int_eq(af_zarr_chunk_read(&ch, data, buf, len, off,
						    &got, NULL), AF_OK);
		size_t n = off >= want_len ? 0 :
			   len < want_len - off ? len : want_len - off;
		ck_assert_uint_eq(got, n);
		ck_assert_msg(n == 0 || memcmp(buf, want + off, n) == 0,
			      "%s: [%llu, +%zu) differs", what,
			      (unsigned long long)off, len);
		ck_assert_uint_eq(buf[n], 0xA5);
	}
	free(buf);
	free(want);
}

static void check_case(const zarr_case *c, uint64_t *seed)
{
	af_source src;
	int fd = aft_open_fd_source(c->path, &src);
	af_array a;
	af_error err;
	ck_assert_msg(af_array_parse_named(c->path, &src, &a, &err) == AF_OK,
		      "%s: %s", c->name, err.msg);

	af_zarr_layout l;
	ck_assert_msg(af_zarr_layout_init(&l, &a, c->max_bytes, &err) == AF_OK,
		      "%s: %s", c->name, err.msg);
	ck_assert_msg(l.nchunks == c->nchunks, "%s: %llu chunks, want %llu",
		      c->name, (unsigned long long)l.nchunks,
		      (unsigned long long)c->nchunks);
	check_text(&l, AF_ZARR_ZARRAY, c, ".zarray");
	check_text(&l, AF_ZARR_ZATTRS, c, ".zattrs");
	check_text(&l, AF_ZARR_ZARR_JSON, c, "zarr.json");

	af_view *data;
	ck_assert_msg(af_view_open(&data, &a, &src, AF_VIEW_DATA, &err) == AF_OK,
		      "%s: %s", c->name, err.msg);
	uint64_t n = af_zarr_entry_count(&l);
	ck_assert_uint_eq(n, (l.v3_type ? 3 : 2) + c->nchunks);
	for (uint64_t i = 0; i < n; i++) {
		af_zarr_entry en, found;
		uint64_t at;
		ck_assert_int_eq(af_zarr_entry_at(&l, i, &en), AF_OK);
		ck_assert_uint_eq(strlen(en.name), en.name_len);
		ck_assert_int_eq(af_zarr_lookup(&l, en.name, &found, &at), AF_OK);
		ck_assert_uint_eq(at, i);
		ck_assert_int_eq(found.kind, en.kind);
		ck_assert_uint_eq(found.chunk, en.chunk);
		if (en.kind == AF_ZARR_CHUNK) {
			ck_assert_uint_eq(en.chunk, i - (n - c->nchunks));
			check_chunk(c, &l, data, &src, &en, seed);
		}
	}
	af_zarr_entry en;
	ck_assert_int_eq(af_zarr_entry_at(&l, n, &en), AF_E_RANGE);
	af_view_close(data);
	af_array_free(&a);
	close(fd);
}

START_TEST(stores_of_numpy_fixtures_match)
{
	zarr_case *cases = calloc(MAX_CASES, sizeof(*cases));
	ck_assert_ptr_nonnull(cases);
	size_t n = load_cases(cases);
	uint64_t seed = 0x5eed2a22;
	for (size_t i = 0; i < n; i++)
		check_case(&cases[i], &seed);
	free(cases);
}
END_TEST

/* ---- hand-made arrays ------------------------------------------------ */

/* Byte i of a huge array: a pattern any source offset can compute. */
static unsigned char pattern_at(uint64_t off)
{
	return (unsigned char)((off * 131) >> 3);
}

static ssize_t pattern_pread(const af_source *src, void *buf, size_t len,
			     uint64_t off)
{
	if (off >= src->size)
		return 0;
	if (len > src->size - off)
		len = (size_t)(src->size - off);
	for (size_t i = 0; i < len; i++)
		((unsigned char *)buf)[i] = pattern_at(off + i);
	return (ssize_t)len;
}

static void pattern_source(af_source *src, uint64_t size)
{
	memset(src, 0, sizeof(*src));
	src->pread = pattern_pread;
	src->size = size;
	src->fd = -1;
}

static void check_name(const af_zarr_layout *l, uint64_t index,
		       const char *want)
{
	char name[AF_ZARR_NAME_MAX];
	size_t len;
	ck_assert_int_eq(af_zarr_chunk_name(l, index, name, &len), AF_OK);
	ck_assert_str_eq(name, want);
	ck_assert_uint_eq(len, strlen(want));
	uint64_t back;
	ck_assert_int_eq(af_zarr_chunk_parse(l, want, &back), AF_OK);
	ck_assert_uint_eq(back, index);
}

START_TEST(huge_1d_array_counts_its_chunks_without_overflow)
{
	const uint64_t shape[] = { 1ULL << 62 };
	af_array a = aft_hand_array("|u1", false, 1, shape);
	af_zarr_layout l;
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, AF_ZARR_CHUNK_DEFAULT, NULL),
			 AF_OK);
	ck_assert_uint_eq(l.chunk_bytes, 8u << 20);
	ck_assert_uint_eq(l.nchunks, 1ULL << 39);
	ck_assert_uint_eq(af_zarr_entry_count(&l), 3 + (1ULL << 39));
	check_name(&l, (1ULL << 39) - 1, "549755813887");
	af_zarr_chunk ch;
	ck_assert_int_eq(af_zarr_chunk_get(&l, (1ULL << 39) - 1, &ch), AF_OK);
	ck_assert_uint_eq(ch.data_off, (1ULL << 62) - (8u << 20));
	ck_assert_uint_eq(ch.data_len, 8u << 20);
	ck_assert_int_eq(af_zarr_chunk_get(&l, 1ULL << 39, &ch), AF_E_RANGE);
	uint64_t idx;
	ck_assert_int_eq(af_zarr_chunk_parse(&l, "549755813888", &idx), AF_E_RANGE);
}
END_TEST

START_TEST(huge_2d_array_cuts_rows_and_reads_a_zero_tail)
{
	/* rows of 10^9 + 7 bytes: more than 8 MiB, so the last axis is cut */
	const uint64_t shape[] = { 3000000000ULL, 1000000007ULL };
	af_array a = aft_hand_array("|u1", false, 2, shape);
	af_zarr_layout l;
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, AF_ZARR_CHUNK_DEFAULT, NULL),
			 AF_OK);
	ck_assert_uint_eq(af_zarr_chunk_len(&l, 0), 1);
	ck_assert_uint_eq(af_zarr_chunk_len(&l, 1), 8u << 20);
	ck_assert_uint_eq(l.split_chunks, 120);
	ck_assert_uint_eq(l.nchunks, 3000000000ULL * 120);
	uint64_t last = l.nchunks - 1;
	check_name(&l, last, "2999999999.119");
	check_name(&l, 121, "1.1");

	af_zarr_chunk ch;
	ck_assert_int_eq(af_zarr_chunk_get(&l, last, &ch), AF_OK);
	uint64_t tail_data = 1000000007ULL - 119ULL * (8u << 20);
	ck_assert_uint_eq(ch.data_len, tail_data);
	ck_assert_uint_eq(ch.data_off, a.data_size - tail_data);

	af_source src;
	pattern_source(&src, a.data_size);
	af_view *data;
	ck_assert_int_eq(af_view_open(&data, &a, &src, AF_VIEW_DATA, NULL), AF_OK);
	af_extent e;
	ck_assert_int_eq(af_zarr_chunk_extent(&ch, data, 10, &e), AF_OK);
	ck_assert_int_eq(e.kind, AF_EXTENT_SOURCE);
	ck_assert_uint_eq(e.src_off, ch.data_off + 10);
	ck_assert_uint_eq(e.len, tail_data - 10);
	ck_assert_int_eq(af_zarr_chunk_extent(&ch, data, tail_data, &e), AF_OK);
	ck_assert_int_eq(e.kind, AF_EXTENT_ZERO);
	ck_assert_uint_eq(e.len, ch.size - tail_data);

	/* a read across the array's edge: data, then zeros, then the end */
	unsigned char buf[64];
	size_t got;
	ck_assert_int_eq(af_zarr_chunk_read(&ch, data, buf, sizeof(buf),
					    tail_data - 16, &got, NULL), AF_OK);
	ck_assert_uint_eq(got, sizeof(buf));
	for (unsigned i = 0; i < 16; i++)
		ck_assert_uint_eq(buf[i], pattern_at(a.data_size - 16 + i));
	for (unsigned i = 16; i < sizeof(buf); i++)
		ck_assert_uint_eq(buf[i], 0);
	ck_assert_int_eq(af_zarr_chunk_read(&ch, data, buf, sizeof(buf),
					    ch.size - 5, &got, NULL), AF_OK);
	ck_assert_uint_eq(got, 5);
	af_view_close(data);
}
END_TEST

START_TEST(counts_that_do_not_fit_are_refused)
{
	af_zarr_layout l;
	af_error err;
	const uint64_t bytes_overflow[] = { 1ULL << 32, 1ULL << 32 };
	af_array a = aft_hand_array("<f8", false, 2, bytes_overflow);
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, 1 << 20, &err),
			 AF_E_OVERFLOW);
	ck_assert_uint_eq(l.nchunks, 0);
	const uint64_t count_overflow[] = { 1ULL << 40, 1ULL << 40 };
	a = aft_hand_array("|u1", true, 2, count_overflow);
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, 1, &err), AF_E_OVERFLOW);

	/* one chunk a byte: the entry count must still fit a readdir offset */
	const uint64_t too_many[] = { (1ULL << 63) - 3 };
	a = aft_hand_array("|u1", false, 1, too_many);
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, 1, &err), AF_E_OVERFLOW);
	const uint64_t just_fits[] = { (1ULL << 63) - 4 };
	a = aft_hand_array("|u1", false, 1, just_fits);
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, 1, &err), AF_OK);
	ck_assert_uint_eq(af_zarr_entry_count(&l), (uint64_t)INT64_MAX);
	check_name(&l, (1ULL << 63) - 5, "9223372036854775803");
}
END_TEST

START_TEST(zero_dims_give_chunk_length_1_and_no_chunk_files)
{
	/* the non-zero dims could overflow together; nothing multiplies them */
	const uint64_t shape[] = { 1ULL << 40, 0, 1ULL << 40 };
	af_array a = aft_hand_array("<f8", false, 3, shape);
	af_zarr_layout l;
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, 8u << 20, NULL), AF_OK);
	ck_assert_uint_eq(l.nchunks, 0);
	ck_assert_uint_eq(af_zarr_chunk_len(&l, 0), 1);
	ck_assert_uint_eq(af_zarr_chunk_len(&l, 1), 1);
	ck_assert_uint_eq(af_zarr_chunk_len(&l, 2), 1u << 20);
	ck_assert_uint_eq(af_zarr_entry_count(&l), 3);
	uint64_t idx;
	ck_assert_int_eq(af_zarr_chunk_parse(&l, "0.0.0", &idx), AF_E_RANGE);
	af_zarr_entry en;
	ck_assert_int_eq(af_zarr_lookup(&l, "0.0.0", &en, &idx), AF_E_RANGE);
	ck_assert_int_eq(af_zarr_entry_at(&l, 3, &en), AF_E_RANGE);
	char *text;
	size_t len;
	ck_assert_int_eq(af_zarr_text(&l, AF_ZARR_ZARRAY, &text, &len, NULL),
			 AF_OK);
	ck_assert_ptr_nonnull(strstr(text, "\"chunks\": [\n        1,\n        1,\n"
					  "        1048576\n    ]"));
	free(text);
}
END_TEST

START_TEST(sixty_four_dims_name_every_chunk)
{
	uint64_t shape[AF_NDIM_MAX];
	for (unsigned i = 0; i < AF_NDIM_MAX; i++)
		shape[i] = 1;
	shape[0] = 3;
	shape[AF_NDIM_MAX - 1] = 5;
	af_array a = aft_hand_array("|u1", false, AF_NDIM_MAX, shape);
	af_zarr_layout l;
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, 4, NULL), AF_OK);
	ck_assert_uint_eq(l.nchunks, 6);
	ck_assert_uint_eq(l.chunk_bytes, 4);
	char want[AF_ZARR_NAME_MAX];
	size_t n = 0;
	for (unsigned i = 0; i < AF_NDIM_MAX; i++)
		n += (size_t)snprintf(want + n, sizeof(want) - n, "%s%s", i ? "." : "",
				      i == 0 ? "2" : i == AF_NDIM_MAX - 1 ? "1" : "0");
	check_name(&l, 5, want);
	af_zarr_chunk ch;
	ck_assert_int_eq(af_zarr_chunk_get(&l, 5, &ch), AF_OK);
	ck_assert_uint_eq(ch.data_off, 14);
	ck_assert_uint_eq(ch.data_len, 1);

	/* Fortran order mirrors it: whole first axis, the last one cut */
	a.fortran_order = true;
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, 4, NULL), AF_OK);
	ck_assert_uint_eq(af_zarr_chunk_len(&l, 0), 3);
	ck_assert_uint_eq(af_zarr_chunk_len(&l, AF_NDIM_MAX - 1), 1);
	ck_assert_uint_eq(l.chunk_bytes, 3);
	ck_assert_uint_eq(l.nchunks, 5);
	memcpy(want + n - 1, "4", 2);
	want[0] = '0';
	check_name(&l, 4, want);
	ck_assert_int_eq(af_zarr_chunk_get(&l, 4, &ch), AF_OK);
	ck_assert_uint_eq(ch.data_off, 12);
	ck_assert_uint_eq(ch.data_len, 3);

	uint64_t more[AF_NDIM_MAX + 1] = { 0 };
	a = aft_hand_array("|u1", false, AF_NDIM_MAX + 1, more);
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, 4, NULL), AF_E_SHAPE);
}
END_TEST

START_TEST(chunk_names_are_parsed_strictly)
{
	const uint64_t shape[] = { 3, 10 };
	af_array a = aft_hand_array("<i4", false, 2, shape);
	af_zarr_layout l;
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, 20, NULL), AF_OK);
	ck_assert_uint_eq(l.split_chunks, 2);
	check_name(&l, 0, "0.0");
	check_name(&l, 5, "2.1");
	static const char *const bad[] = {
		"", "0", "1", "0.0.0", "00.0", "0.00", "01.1", "+1.0", "-0.0",
		"0.-0", " 0.0", "0.0 ", "0..0", ".0.0", "0.0.", "3.0", "0.2",
		"1e0.0", "0x1.0", "18446744073709551616.0", "18446744073709551617.0",
		"0,0", "0/0", "0.0\n", ".zgroup", "zarr.json\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t idx = 99;
		ck_assert_msg(af_zarr_chunk_parse(&l, bad[i], &idx) == AF_E_RANGE,
			      "'%s' parsed", bad[i]);
		af_zarr_entry en;
		ck_assert_int_eq(af_zarr_lookup(&l, bad[i], &en, &idx), AF_E_RANGE);
	}
	uint64_t idx;
	ck_assert_int_eq(af_zarr_chunk_parse(&l, NULL, &idx), AF_E_RANGE);

	/* 0-d: one chunk, "0" */
	a = aft_hand_array("<i4", false, 0, NULL);
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, 1, NULL), AF_OK);
	ck_assert_uint_eq(l.nchunks, 1);
	ck_assert_uint_eq(l.chunk_bytes, 4);
	check_name(&l, 0, "0");
	static const char *const bad0[] = { "", "00", "1", "0.0", "-0", "+0" };
	for (size_t i = 0; i < sizeof(bad0) / sizeof(bad0[0]); i++)
		ck_assert_int_eq(af_zarr_chunk_parse(&l, bad0[i], &idx), AF_E_RANGE);
}
END_TEST

START_TEST(store_lists_metadata_then_chunks)
{
	const uint64_t shape[] = { 4 };
	af_array a = aft_hand_array("|S5", false, 1, shape);
	af_zarr_layout l;
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, 10, NULL), AF_OK);
	ck_assert_ptr_null(l.v3_type);
	ck_assert_uint_eq(af_zarr_entry_count(&l), 4);
	af_zarr_entry en;
	uint64_t at;
	ck_assert_int_eq(af_zarr_entry_at(&l, 0, &en), AF_OK);
	ck_assert_str_eq(en.name, ".zarray");
	ck_assert_int_eq(en.kind, AF_ZARR_ZARRAY);
	ck_assert_int_eq(af_zarr_entry_at(&l, 1, &en), AF_OK);
	ck_assert_str_eq(en.name, ".zattrs");
	ck_assert_int_eq(af_zarr_entry_at(&l, 2, &en), AF_OK);
	ck_assert_str_eq(en.name, "0");
	ck_assert_int_eq(en.kind, AF_ZARR_CHUNK);
	ck_assert_int_eq(af_zarr_lookup(&l, "zarr.json", &en, &at), AF_E_RANGE);
	char *text = (char *)1;
	size_t len;
	ck_assert_int_eq(af_zarr_text(&l, AF_ZARR_ZARR_JSON, &text, &len, NULL),
			 AF_E_RANGE);
	ck_assert_ptr_null(text);
	ck_assert_int_eq(af_zarr_text(&l, AF_ZARR_CHUNK, &text, &len, NULL),
			 AF_E_RANGE);

	a = aft_hand_array("<f8", false, 1, shape);
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, 10, NULL), AF_OK);
	ck_assert_str_eq(l.v3_type, "float64");
	ck_assert_int_eq(af_zarr_lookup(&l, "zarr.json", &en, &at), AF_OK);
	ck_assert_uint_eq(at, 2);
	ck_assert_int_eq(en.kind, AF_ZARR_ZARR_JSON);
	ck_assert_int_eq(af_zarr_lookup(&l, "3", &en, &at), AF_OK);
	ck_assert_uint_eq(at, 6);
	ck_assert_uint_eq(en.chunk, 3);
}
END_TEST

START_TEST(default_chunk_is_8_mib_and_oversized_elements_stand_alone)
{
	const uint64_t shape[] = { 4096, 4096 };
	af_array a = aft_hand_array("<f8", false, 2, shape);
	af_zarr_layout l;
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, AF_ZARR_CHUNK_DEFAULT, NULL),
			 AF_OK);
	ck_assert_uint_eq(af_zarr_chunk_len(&l, 0), 256);
	ck_assert_uint_eq(af_zarr_chunk_len(&l, 1), 4096);
	ck_assert_uint_eq(l.chunk_bytes, 8u << 20);
	ck_assert_uint_eq(l.nchunks, 16);

	/* a 16-byte element is larger than a 5-byte budget: one a chunk */
	a = aft_hand_array("<c16", true, 2, shape);
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, 5, NULL), AF_OK);
	ck_assert_uint_eq(l.chunk_bytes, 16);
	ck_assert_uint_eq(l.nchunks, 4096ULL * 4096);
	ck_assert_uint_eq(af_zarr_chunk_len(&l, 0), 1);
}
END_TEST

START_TEST(arrays_without_a_store_are_refused)
{
	const uint64_t shape[] = { 2 };
	af_zarr_layout l;
	af_error err;
	af_array a = aft_hand_array("|O", false, 1, shape);
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, 8, &err), AF_E_UNSUPPORTED);
	ck_assert_uint_gt(strlen(err.msg), 0);
	a = aft_hand_array("<i4", false, 1, shape);
	a.dtype.has_object = true;   /* a field holding objects */
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, 8, &err), AF_E_UNSUPPORTED);
	a = aft_hand_array("<M8[s]", false, 1, shape);
	a.format = AF_FORMAT_RA;     /* no RawArray type: no B.npy descr */
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, 8, &err), AF_E_UNSUPPORTED);
	a = aft_hand_array("<i4", false, 1, shape);
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, 0, &err), AF_E_INVAL);
	ck_assert_int_eq(af_zarr_layout_init(&l, NULL, 8, &err), AF_E_INVAL);
	a.descr = NULL;
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, 8, &err), AF_E_INVAL);
}
END_TEST

/* The "dtype" member of the .zarray of a 1-element array of @p descr. */
static char *zarray_dtype_of(const char *descr, unsigned version, af_status *st)
{
	static const uint64_t one[] = { 1 };
	af_array a = aft_hand_array("<i4", false, 1, one);
	ck_assert_int_eq(af_dtype_parse(descr, strlen(descr), version < 3,
					&a.dtype, NULL), AF_OK);
	a.descr = (char *)descr;
	a.version_major = (uint8_t)version;
	af_zarr_layout l;
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, 1 << 20, NULL), AF_OK);
	char *text = NULL;
	size_t len;
	af_error err;
	*st = af_zarr_text(&l, AF_ZARR_ZARRAY, &text, &len, &err);
	if (*st != AF_OK) {
		ck_assert_ptr_null(text);
		return NULL;
	}
	/* keep the dtype value only, on one line */
	char *from = strstr(text, "\"dtype\": "), *to = strstr(text, ",\n    \"fill_value\"");
	ck_assert(from && to);
	from += 9;
	char *out = calloc(1, (size_t)(to - from) + 1);
	ck_assert_ptr_nonnull(out);
	size_t n = 0;
	for (const char *p = from; p < to; p++)
		if (*p != '\n' && *p != ' ')
			out[n++] = *p;
	free(text);
	return out;
}

START_TEST(descr_forms_numpy_never_writes_become_zarr_lists)
{
	static const struct { const char *descr; unsigned version; const char *json; } cases[] = {
		/* a (type, shape) pair moves its shape to the field, inner last */
		{ "[('a', ('<f8', (2,)), (3,))]", 1, "[[\"a\",\"<f8\",[3,2]]]" },
		/* a bare-int shape is a list; a bare 1 or () is no sub-array */
		{ "[('c', '<u2', 4), ('d', '<u2', 1), ('e', '|u1', ())]", 1,
		  "[[\"c\",\"<u2\",[4]],[\"d\",\"<u2\"],[\"e\",\"|u1\"]]" },
		/* titles dropped, redundant parentheses and trailing commas */
		{ "([(('title', 'n'), ('<i4'),), ((('x')), [('y', '>f4')], (2, 1),),])", 1,
		  "[[\"n\",\"<i4\"],[\"x\",[[\"y\",\">f4\"]],[2,1]]]" },
		{ "[('x', ([('e', '|u1')], (2,)), 3)]", 1,
		  "[[\"x\",[[\"e\",\"|u1\"]],[3,2]]]" },
		/* Python 2 long ints in a version 1.0 header */
		{ "[('x', '<f4', (2L, 3L))]", 1, "[[\"x\",\"<f4\",[2,3]]]" },
		/* string escapes decode, then JSON escapes them again */
		{ "[('a\\x00\\u00e9\\U0001F600', '<i2'), (\"'\", '|b1')]", 3,
		  "[[\"a\\u0000\\u00e9\\ud83d\\ude00\",\"<i2\"],[\"'\",\"|b1\"]]" },
		{ "[]", 1, "[]" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		af_status st;
		char *got = zarray_dtype_of(cases[i].descr, cases[i].version, &st);
		ck_assert_msg(st == AF_OK, "%s: status %d", cases[i].descr, (int)st);
		ck_assert_msg(strcmp(got, cases[i].json) == 0, "%s: got %s",
			      cases[i].descr, got);
		free(got);
	}
}
END_TEST

START_TEST(a_descr_that_is_not_a_literal_gets_no_store)
{
	static const uint64_t one[] = { 1 };
	af_array a = aft_hand_array("<i4", false, 1, one);
	a.dtype.kind = AF_KIND_STRUCT;
	static const char *const bad[] = { "[('a', '<i4'),", "[('a' '<i4')]",
					   "[('a', 5)]", "[('a', '<i4')] x",
					   "[('a', '<i4', (2, 'b'))]" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		a.descr = (char *)bad[i];
		af_zarr_layout l;
		af_error err;
		ck_assert_msg(af_zarr_layout_init(&l, &a, 8, &err) == AF_E_UNSUPPORTED,
			      "'%s' was accepted", bad[i]);
		ck_assert_uint_gt(strlen(err.msg), 0);
		ck_assert_uint_eq(l.nchunks, 0);
	}
}
END_TEST

START_TEST(sub_arrays_zarr_cannot_spell_get_no_store)
{
	/* 40 + 30 sub-array dims of length 1: the parser takes it (one
	 * element), but no list form holds more than AF_NDIM_MAX dims */
	char descr[512];
	size_t n = (size_t)snprintf(descr, sizeof(descr), "[('a', ('<i4', (");
	for (int i = 0; i < 40; i++)
		n += (size_t)snprintf(descr + n, sizeof(descr) - n, "1,");
	n += (size_t)snprintf(descr + n, sizeof(descr) - n, ")), (");
	for (int i = 0; i < 30; i++)
		n += (size_t)snprintf(descr + n, sizeof(descr) - n, "1,");
	snprintf(descr + n, sizeof(descr) - n, "))]");
	static const uint64_t one[] = { 1 };
	af_array a = aft_hand_array("<i4", false, 1, one);
	ck_assert_int_eq(af_dtype_parse(descr, strlen(descr), true, &a.dtype, NULL),
			 AF_OK);
	a.descr = descr;
	af_zarr_layout l;
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, 8, NULL), AF_E_UNSUPPORTED);
	/* 40 + 24 still fits */
	strcpy(strstr(descr, ")), (") + 5 + 2 * 24, "))]");
	ck_assert_int_eq(af_dtype_parse(descr, strlen(descr), true, &a.dtype, NULL),
			 AF_OK);
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, 8, NULL), AF_OK);
}
END_TEST

START_TEST(chunk_reads_fail_cleanly)
{
	static const uint64_t shape[] = { 10 };
	af_array a = aft_hand_array("<i4", false, 1, shape);
	af_source src;
	pattern_source(&src, a.data_size);
	af_view *data;
	ck_assert_int_eq(af_view_open(&data, &a, &src, AF_VIEW_DATA, NULL), AF_OK);
	unsigned char buf[8];
	size_t got = 9;
	af_error err;
	/* a chunk that does not lie inside the view */
	af_zarr_chunk bad = { .data_off = 36, .data_len = 8, .size = 8 };
	ck_assert_int_eq(af_zarr_chunk_read(&bad, data, buf, 8, 0, &got, &err),
			 AF_E_INVAL);
	ck_assert_uint_eq(got, 0);
	af_extent e;
	ck_assert_int_eq(af_zarr_chunk_extent(&bad, data, 0, &e), AF_E_RANGE);
	bad = (af_zarr_chunk){ .data_off = 0, .data_len = 8, .size = 4 };
	ck_assert_int_eq(af_zarr_chunk_read(&bad, data, buf, 8, 0, &got, &err),
			 AF_E_INVAL);
	af_zarr_chunk ok = { .data_off = 32, .data_len = 8, .size = 8 };
	ck_assert_int_eq(af_zarr_chunk_read(&ok, NULL, buf, 8, 0, &got, &err),
			 AF_E_INVAL);
	ck_assert_int_eq(af_zarr_chunk_read(&ok, data, NULL, 8, 0, &got, &err),
			 AF_E_INVAL);
	ck_assert_int_eq(af_zarr_chunk_read(&ok, data, NULL, 0, 0, &got, &err),
			 AF_OK);
	af_view_close(data);

	/* the source fails: the read says so, with the errno */
	src.pread = aft_failing_pread;
	ck_assert_int_eq(af_view_open(&data, &a, &src, AF_VIEW_DATA, NULL), AF_OK);
	ck_assert_int_eq(af_zarr_chunk_read(&ok, data, buf, 8, 0, &got, &err),
			 AF_E_IO);
	ck_assert_uint_eq(got, 0);
	/* the zero tail needs no read, so it cannot fail */
	ok.size = 16;
	ck_assert_int_eq(af_zarr_chunk_read(&ok, data, buf, 8, 8, &got, &err),
			 AF_OK);
	ck_assert_uint_eq(got, 8);
	af_view_close(data);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("zarr");
	TCase *fix = tcase_create("fixtures");
	tcase_add_test(fix, stores_of_numpy_fixtures_match);
	suite_add_tcase(s, fix);
	TCase *layout = tcase_create("layout");
	tcase_add_test(layout, huge_1d_array_counts_its_chunks_without_overflow);
	tcase_add_test(layout, huge_2d_array_cuts_rows_and_reads_a_zero_tail);
	tcase_add_test(layout, counts_that_do_not_fit_are_refused);
	tcase_add_test(layout, zero_dims_give_chunk_length_1_and_no_chunk_files);
	tcase_add_test(layout, sixty_four_dims_name_every_chunk);
	tcase_add_test(layout, chunk_names_are_parsed_strictly);
	tcase_add_test(layout, store_lists_metadata_then_chunks);
	tcase_add_test(layout, default_chunk_is_8_mib_and_oversized_elements_stand_alone);
	tcase_add_test(layout, arrays_without_a_store_are_refused);
	suite_add_tcase(s, layout);
	TCase *meta = tcase_create("metadata");
	tcase_add_test(meta, descr_forms_numpy_never_writes_become_zarr_lists);
	tcase_add_test(meta, a_descr_that_is_not_a_literal_gets_no_store);
	tcase_add_test(meta, sub_arrays_zarr_cannot_spell_get_no_store);
	suite_add_tcase(s, meta);
	TCase *chunks = tcase_create("chunks");
	tcase_add_test(chunks, chunk_reads_fail_cleanly);
	suite_add_tcase(s, chunks);
	return aft_run(s);
}
