/* SPDX-License-Identifier: MIT */
/*
 * Tests for src/codec/zarr_meta.c, zarr_json.c and zarr_chunk.c (with
 * zarr_layout.c): every gen_zarr.py source (zarr/cases.txt) against the
 * store numpy and json.dumps computed (metadata byte for byte, every chunk
 * whole, by extents and by random slices); descr forms numpy never writes;
 * chunk reads that fail; the rule for whether a store exists
 * (af_zarr_layout_init, which builds no text) against the writer, over
 * every fixture array and hostile types and shapes. Hand-made layouts:
 * test_zarr_layout.c.
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "af_test.h"
#include "arrayfs/arrayfs.h"
#include "arrayfs/af_zarr.h"
#include "../../src/codec/zarr_i.h"

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

/* af_zarr_layout_init of a 1-element array of @p descr (a v1 header's). */
static af_status store_status_of(char *descr, uint64_t max_chunk_bytes)
{
	static const uint64_t one[] = { 1 };
	af_array a = aft_hand_array("<i4", false, 1, one);
	ck_assert_int_eq(af_dtype_parse(descr, strlen(descr), true, &a.dtype, NULL),
			 AF_OK);
	a.descr = descr;
	af_zarr_layout l;
	return af_zarr_layout_init(&l, &a, max_chunk_bytes, NULL);
}

/* The .zarray of @p descr has the dtype @p json. */
static void assert_zarray_dtype(const char *descr, unsigned version,
				const char *json)
{
	af_status st;
	char *got = zarray_dtype_of(descr, version, &st);
	ck_assert_msg(st == AF_OK, "%s: status %d", descr, (int)st);
	ck_assert_msg(strcmp(got, json) == 0, "%s: got %s", descr, got);
	free(got);
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
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_zarray_dtype(cases[i].descr, cases[i].version, cases[i].json);
}
END_TEST

/*
 * zarr reads an unnamed (padding) field as numpy's f<index>: kept "" unless
 * a field of the descr is named f<digits>, where that name could be taken
 * (zarr 2.13: MetadataError "field 'f1' occurs more than once").
 */
START_TEST(padding_gets_a_name_no_field_has)
{
	static const struct { const char *descr; const char *json; } cases[] = {
		/* np.dtype([('a','u1'),('b','<f8')], align=True): as numpy wrote it */
		{ "[('a', '|u1'), ('', '|V7'), ('b', '<f8')]",
		  "[[\"a\",\"|u1\"],[\"\",\"|V7\"],[\"b\",\"<f8\"]]" },
		/* f1 is a field: f<index> then '_' past the longest name */
		{ "[('x', '|u1'), ('', '|V7'), ('f1', '<f8')]",
		  "[[\"x\",\"|u1\"],[\"f1_\",\"|V7\"],[\"f1\",\"<f8\"]]" },
		/* a nested field's name counts; so does the longest name */
		{ "[('abcd', '|u1'), ('', '|V3'), ('s', [('f0', '<i4'), ('', '|V4')]), ('', '|V8')]",
		  "[[\"abcd\",\"|u1\"],[\"f1___\",\"|V3\"],[\"s\",[[\"f0\",\"<i4\"],"
		  "[\"f1___\",\"|V4\"]]],[\"f3___\",\"|V8\"]]" },
		/* titles are left out, so a title f1 takes nothing */
		{ "[(('f1', 'a'), '|u1'), ('', '|V3')]",
		  "[[\"a\",\"|u1\"],[\"\",\"|V3\"]]" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_zarray_dtype(cases[i].descr, 1, cases[i].json);
}
END_TEST

START_TEST(padding_names_past_a_huge_field_name_get_no_store)
{
	/* a 5000-byte name and f0: every padding name would exceed 4096 */
	size_t cap = 6000;
	char *descr = malloc(cap);
	ck_assert_ptr_nonnull(descr);
	size_t n = (size_t)snprintf(descr, cap, "[('f0', '|u1'), ('', '|V1'), ('");
	memset(descr + n, 'n', 5000);
	n += 5000;
	snprintf(descr + n, cap - n, "', '|u1')]");
	ck_assert_int_eq(store_status_of(descr, 1 << 20), AF_E_UNSUPPORTED);
	/* without a field named f<digits>, padding stays "": a store */
	descr[3] = 'g';
	ck_assert_int_eq(store_status_of(descr, 1 << 20), AF_OK);
	free(descr);
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
	ck_assert_int_eq(store_status_of(descr, 8), AF_E_UNSUPPORTED);
	/* 40 + 24 still fits */
	strcpy(strstr(descr, ")), (") + 5 + 2 * 24, "))]");
	ck_assert_int_eq(store_status_of(descr, 8), AF_OK);
}
END_TEST

/* Whether the writer makes every metadata file of @p a's store, its
 * layout computed without the rule's dtype check. */
static bool writer_succeeds(const af_array *a, uint64_t max_bytes)
{
	af_zarr_layout l;
	if (af_zarr_layout_compute(&l, a, max_bytes, NULL) != AF_OK)
		return false;
	for (af_zarr_file f = AF_ZARR_ZARRAY; f <= AF_ZARR_ZARR_JSON; f++) {
		if (f == AF_ZARR_ZARR_JSON && !l.v3_type)
			continue;
		char *text = NULL;
		size_t len = 0;
		af_status st = af_zarr_text(&l, f, &text, &len, NULL);
		free(text);
		if (st != AF_OK)
			return false;
	}
	return true;
}

/* Stores the rule gave and refused, over all arrays checked. */
typedef struct rule_count {
	unsigned arrays, stores, refused, struct_stores, struct_refused;
} rule_count;

/* The rule (af_zarr_layout_init) says a store exists exactly when the
 * writer can write it, at several chunk sizes. */
static void check_rule(const af_array *a, const char *what, rule_count *n)
{
	static const uint64_t maxes[] = { 1, 8, 4096, 1 << 20, 8 << 20 };
	bool structured = a->format == AF_FORMAT_NPY &&
			  a->dtype.kind == AF_KIND_STRUCT;
	n->arrays++;
	for (size_t i = 0; i < sizeof(maxes) / sizeof(maxes[0]); i++) {
		af_zarr_layout l;
		af_error err;
		af_error_clear(&err);
		bool rule = af_zarr_layout_init(&l, a, maxes[i], &err) == AF_OK;
		bool wrote = writer_succeeds(a, maxes[i]);
		ck_assert_msg(rule == wrote, "%s (chunks of %llu): the rule says %s, "
			      "the writer %s (%s)", what,
			      (unsigned long long)maxes[i], rule ? "a store" : "none",
			      wrote ? "writes it" : "fails", err.msg);
		if (i == 0) {
			*(rule ? &n->stores : &n->refused) += 1;
			if (structured)
				*(rule ? &n->struct_stores : &n->struct_refused) += 1;
		}
	}
}

static bool has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);
	return n >= m && strcmp(s + n - m, suf) == 0;
}

typedef void (*array_fn)(af_array *a, const char *path, void *ctx);

/* Every .npy and .ra under @p dir that parses, through @p fn (which may
 * keep the array: it frees it or takes it). */
static void each_array_under(const char *dir, array_fn fn, void *ctx)
{
	DIR *d = opendir(dir);
	ck_assert_msg(d != NULL, "cannot list %s", dir);
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (e->d_type == DT_DIR) {
			each_array_under(path, fn, ctx);
			continue;
		}
		/* links (some dangling, on purpose) reach nothing new */
		if (e->d_type != DT_REG ||
		    (!has_suffix(e->d_name, ".npy") && !has_suffix(e->d_name, ".ra")))
			continue;
		af_source src;
		int fd = aft_open_fd_source(path, &src);
		af_array a;
		if (af_array_parse_named(path, &src, &a, NULL) == AF_OK)
			fn(&a, path, ctx);
		close(fd);
	}
	closedir(d);
}

static void check_rule_of(af_array *a, const char *path, void *ctx)
{
	check_rule(a, path, ctx);
	af_array_free(a);
}

static void check_rule_under(const char *dir, rule_count *n)
{
	each_array_under(dir, check_rule_of, n);
}

START_TEST(the_rule_agrees_with_the_writer_on_every_fixture)
{
	static const char *const dirs[] = { "npy", "ra", "view", "zarr", "mount" };
	rule_count n = { 0 };
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char dir[4096];
		snprintf(dir, sizeof(dir), "%s", aft_fixture(dirs[i]));
		check_rule_under(dir, &n);
	}
	/* the corpus has both answers, structured types among them */
	ck_assert_uint_gt(n.arrays, 300);
	ck_assert_uint_gt(n.stores, 100);
	ck_assert_uint_gt(n.refused, 5);
	ck_assert_uint_gt(n.struct_stores, 3);
}
END_TEST

/* Arrays with a store and their .zarray texts. */
typedef struct kept_arrays {
	af_array a[1024];
	af_zarr_layout l[1024];
	char *zarray[1024];
	size_t n;
} kept_arrays;

static void keep_array(af_array *a, const char *path, void *ctx)
{
	kept_arrays *k = ctx;
	size_t len;
	(void)path;
	if (k->n == 1024 || af_zarr_layout_init(&k->l[k->n], a, 4096, NULL) != AF_OK) {
		af_array_free(a);
		return;
	}
	k->a[k->n] = *a;
	k->l[k->n].shape = k->a[k->n].shape;
	k->l[k->n].descr = k->a[k->n].descr;
	ck_assert_int_eq(af_zarr_text(&k->l[k->n], AF_ZARR_ZARRAY,
				      &k->zarray[k->n], &len, NULL), AF_OK);
	k->n++;
}

/* af_zarr_zarray_same says "same" only of layouts whose .zarray texts
 * are byte-identical (what arrayrefs relies on to reuse one). */
START_TEST(layouts_called_same_have_the_same_zarray)
{
	static const char *const dirs[] = { "npy", "ra", "view", "zarr", "mount" };
	kept_arrays *k = calloc(1, sizeof(*k));
	ck_assert_ptr_nonnull(k);
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		each_array_under(aft_fixture(dirs[i]), keep_array, k);
	size_t same = 0, differ = 0;
	for (size_t i = 0; i < k->n; i++)
		for (size_t j = 0; j < k->n; j++) {
			if (!af_zarr_zarray_same(&k->l[i], &k->l[j])) {
				differ++;
				continue;
			}
			same += i != j;
			ck_assert_msg(strcmp(k->zarray[i], k->zarray[j]) == 0,
				      "called same, but\n%s\n%s", k->zarray[i],
				      k->zarray[j]);
		}
	ck_assert_uint_gt(k->n, 100);
	ck_assert_uint_gt(same, 10);   /* the fixtures repeat some kinds */
	ck_assert_uint_gt(differ, 1000);
	for (size_t i = 0; i < k->n; i++) {
		free(k->zarray[i]);
		af_array_free(&k->a[i]);
	}
	free(k);
}
END_TEST

/* A hand array of descr @p descr (parsed as a v1 header would be), or
 * false when the dtype parser refuses it (no array can have it). */
static bool hand_struct(af_array *a, const char *descr, unsigned ndim,
			const uint64_t *shape)
{
	*a = aft_hand_array("<i4", false, ndim, shape);
	if (af_dtype_parse(descr, strlen(descr), true, &a->dtype, NULL) != AF_OK)
		return false;
	a->descr = (char *)descr;
	return true;
}

/* [('a', [('a', ... '<i4' ...)])] with @p depth lists, into @p out. */
static void nested_descr(char *out, size_t cap, unsigned depth)
{
	size_t n = 0;
	for (unsigned i = 0; i < depth; i++)
		n += (size_t)snprintf(out + n, cap - n, "[('a', ");
	n += (size_t)snprintf(out + n, cap - n, "'<i4'");
	for (unsigned i = 0; i < depth; i++)
		n += (size_t)snprintf(out + n, cap - n, ")]");
}

START_TEST(the_rule_agrees_with_the_writer_on_hostile_arrays)
{
	rule_count n = { 0 };
	static const uint64_t one[] = { 1 }, empty[] = { 0, 5 },
		huge[] = { 1ULL << 40, 1ULL << 40 }, rows[] = { 3, 1ULL << 62 };
	static uint64_t ones64[64];
	for (size_t i = 0; i < 64; i++)
		ones64[i] = 1;
	/* descrs that are not literals, on a structured type */
	static const char *const bad[] = { "[('a', '<i4'),", "[('a' '<i4')]",
					   "[('a', 5)]", "[('a', '<i4')] x",
					   "[('a', '<i4', (2, 'b'))]", "" };
	af_array a;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		a = aft_hand_array("<i4", false, 1, one);
		a.dtype.kind = AF_KIND_STRUCT;
		a.descr = (char *)bad[i];
		check_rule(&a, bad[i], &n);
	}
	/* sub-array dims beyond what zarr's list form holds, and just in */
	char descr[2048];
	for (int extra = 20; extra <= 30; extra++) {
		size_t k = (size_t)snprintf(descr, sizeof(descr), "[('a', ('<i4', (");
		for (int i = 0; i < 40; i++)
			k += (size_t)snprintf(descr + k, sizeof(descr) - k, "1,");
		k += (size_t)snprintf(descr + k, sizeof(descr) - k, ")), (");
		for (int i = 0; i < extra; i++)
			k += (size_t)snprintf(descr + k, sizeof(descr) - k, "1,");
		snprintf(descr + k, sizeof(descr) - k, "))]");
		ck_assert(hand_struct(&a, descr, 1, one));
		check_rule(&a, descr, &n);
	}
	/* nesting up to where the dtype parser stops */
	unsigned nested = 0;
	for (unsigned depth = 1; depth <= AF_DTYPE_MAX_DEPTH + 2; depth++) {
		nested_descr(descr, sizeof(descr), depth);
		if (!hand_struct(&a, descr, 1, one))
			continue;
		nested++;
		check_rule(&a, descr, &n);
	}
	ck_assert_uint_ge(nested, AF_DTYPE_MAX_DEPTH - 1);
	/* elements past an off_t, titles, escapes, empty structs */
	static const char *const odd[] = {
		"[('a', '|V4611686018427387904', (3,))]",
		"[(('t', 'n'), '<i4'), ('x', [('y', '>f4')], (2, 1))]",
		"[('a\\x00\\u00e9', '<i2'), (\"'\", '|b1')]", "[]",
	};
	for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++)
		if (hand_struct(&a, odd[i], 1, one))
			check_rule(&a, odd[i], &n);
	/* objects, and shapes: empty, overflowing, 64 dims, 0-d, huge rows */
	a = aft_hand_array("|O", false, 1, one);
	check_rule(&a, "|O", &n);
	const struct { const char *t; unsigned ndim; const uint64_t *shape; } shapes[] = {
		{ "<f8", 2, empty }, { "<f8", 2, huge }, { "|u1", 64, ones64 },
		{ "<c16", 0, NULL }, { "<i2", 2, rows }, { "|b1", 1, one },
	};
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		a = aft_hand_array(shapes[i].t, i % 2 == 1, shapes[i].ndim,
				   shapes[i].shape);
		check_rule(&a, shapes[i].t, &n);
	}
	ck_assert_uint_gt(n.struct_refused, 10);
	ck_assert_uint_gt(n.struct_stores, 10);
	ck_assert_uint_gt(n.refused, n.struct_refused);
}
END_TEST

START_TEST(chunk_reads_fail_cleanly)
{
	static const uint64_t shape[] = { 10 };
	af_array a = aft_hand_array("<i4", false, 1, shape);
	unsigned char bytes[40] = { 0 };
	af_source src;
	af_source_init_mem(&src, bytes, sizeof(bytes));
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
	ck_assert_int_eq(err.sys_errno, EIO);
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
	TCase *meta = tcase_create("metadata");
	tcase_add_test(meta, descr_forms_numpy_never_writes_become_zarr_lists);
	tcase_add_test(meta, padding_gets_a_name_no_field_has);
	tcase_add_test(meta, padding_names_past_a_huge_field_name_get_no_store);
	tcase_add_test(meta, a_descr_that_is_not_a_literal_gets_no_store);
	tcase_add_test(meta, sub_arrays_zarr_cannot_spell_get_no_store);
	tcase_add_test(meta, the_rule_agrees_with_the_writer_on_every_fixture);
	tcase_add_test(meta, layouts_called_same_have_the_same_zarray);
	tcase_add_test(meta, the_rule_agrees_with_the_writer_on_hostile_arrays);
	suite_add_tcase(s, meta);
	TCase *chunks = tcase_create("chunks");
	tcase_add_test(chunks, chunk_reads_fail_cleanly);
	suite_add_tcase(s, chunks);
	return aft_run(s);
}
