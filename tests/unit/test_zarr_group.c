/* SPDX-License-Identifier: MIT */
/*
 * Tests for src/codec/zarr_group*.c: a folder's children as a Zarr group
 * (keys, the collision rule, what is left out and why, order, lookup),
 * dimension names, the group and child metadata texts, the walk of a
 * sub-tree and the consolidated document against what zarr 2.13 writes,
 * its 10,000-array limit and its nesting limit. Trees are made in memory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "af_test.h"
#include "arrayfs/arrayfs.h"
#include "arrayfs/af_zarr_group.h"

static const uint64_t shape3[] = { 3 };
static const uint64_t shape22[] = { 2, 2 };

static af_zarr_group_entry array_entry(const char *name, const af_array *a)
{
	af_zarr_group_entry e = { name, AF_ZG_ARRAY, a, NULL, NULL, false };
	return e;
}

static af_zarr_group_entry folder_entry(const char *name,
					af_zarr_group_kind kind, void *folder)
{
	af_zarr_group_entry e = { name, kind, NULL, folder, NULL, false };
	return e;
}

/* The keys of @p g's children joined by ' ' (a static buffer). */
static const char *keys_of(const af_zarr_group *g)
{
	static char out[1024];
	size_t at = 0;
	out[0] = '\0';
	for (size_t i = 0; i < g->nchildren; i++) {
		size_t n;
		const char *k = af_zarr_group_key(g, &g->children[i], &n);
		at += (size_t)snprintf(out + at, sizeof(out) - at, "%s%.*s",
				       i ? " " : "", (int)n, k);
	}
	return out;
}

static af_zarr_group_left why_left(const af_zarr_group *g, size_t entry)
{
	for (size_t i = 0; i < g->nleft; i++)
		if (g->left[i].entry == entry)
			return g->left[i].why;
	return 0;
}

/* A 1-d .ra array of type @p typestr (hand-made: never af_array_free it). */
static af_array ra_hand_array(const char *typestr)
{
	af_array a = aft_hand_array(typestr, true, 1, shape3);
	a.format = AF_FORMAT_RA;
	return a;
}

static void build(af_zarr_group *g, const af_zarr_group_entry *e, size_t n)
{
	ck_assert_int_eq(af_zarr_group_build(g, e, n, AF_ZARR_CHUNK_DEFAULT, NULL),
			 AF_OK);
}

START_TEST(keys_drop_the_extension_of_their_kind)
{
	af_array npy = aft_hand_array("<f8", false, 1, shape3);
	af_array ra = ra_hand_array("<f4");
	af_zarr_group_entry e[] = {
		array_entry("temperature.npy", &npy),
		array_entry("img.ra", &ra),
		folder_entry("run.npz", AF_ZG_NPZ, NULL),
		folder_entry("sub", AF_ZG_FOLDER, NULL),
		array_entry("noext", &npy),
		array_entry("other.npz", &npy), /* not an array's extension */
	};
	af_zarr_group g;
	build(&g, e, 6);
	ck_assert_str_eq(keys_of(&g), "img noext other.npz run sub temperature");
	ck_assert_uint_eq(g.nleft, 0);
	ck_assert_uint_eq(g.narrays, 4);
	const af_zarr_group_child *c = af_zarr_group_find(&g, "run", 3);
	ck_assert_ptr_nonnull(c);
	ck_assert(!c->is_array);
	ck_assert_uint_eq(c->entry, 2);
	c = af_zarr_group_find(&g, "img", 3);
	ck_assert_ptr_nonnull(c);
	ck_assert(c->is_array);
	af_zarr_layout l;
	ck_assert_int_eq(af_zarr_group_layout(&g, c, &l, NULL), AF_OK);
	ck_assert_uint_eq(l.ndim, 1);
	ck_assert_int_eq(af_zarr_group_layout(&g, af_zarr_group_find(&g, "sub", 3),
					      &l, NULL), AF_E_INVAL);
	/* the model keeps no layout: a few words a child */
	ck_assert_uint_le(sizeof(af_zarr_group_child), 32);
	ck_assert_ptr_null(af_zarr_group_find(&g, "img.ra", 6));
	ck_assert_ptr_null(af_zarr_group_find(&g, "ru", 2));
	af_zarr_group_free(&g);
}
END_TEST

START_TEST(children_sharing_a_key_keep_their_full_names)
{
	af_array npy = aft_hand_array("<i2", false, 1, shape3);
	af_array ra = ra_hand_array("<i2");
	af_zarr_group_entry e[] = {
		array_entry("x.npy", &npy),
		array_entry("x.ra", &ra),
		folder_entry("run", AF_ZG_FOLDER, NULL),
		folder_entry("run.npz", AF_ZG_NPZ, NULL),
		array_entry("y.npy", &npy),
	};
	af_zarr_group g;
	build(&g, e, 5);
	ck_assert_str_eq(keys_of(&g), "run run.npz x.npy x.ra y");
	af_zarr_group_free(&g);

	/* a full name meeting another child's key: both keep full names */
	af_zarr_group_entry f[] = {
		array_entry("x.npy.npy", &npy),
		array_entry("x.npy", &npy),
		array_entry("x.ra", &ra),
	};
	build(&g, f, 3);
	ck_assert_str_eq(keys_of(&g), "x.npy x.npy.npy x.ra");
	af_zarr_group_free(&g);
}
END_TEST

/* Deferred headers from a table, each read counted. */
typedef struct header_table {
	const af_array **arrays;
	size_t reads;
} header_table;

static af_status table_header(void *ctx, size_t entry, const af_array **array,
			      const void **source, af_error *err)
{
	(void)err;
	header_table *t = ctx;
	t->reads++;
	*array = t->arrays[entry];
	*source = NULL;
	return AF_OK;
}

/* The keys of the children of @p g that resolve as children. */
static const char *resolved_keys(af_zarr_group *g)
{
	static char out[1024];
	size_t at = 0;
	out[0] = '\0';
	for (size_t i = 0; i < g->nchildren; i++) {
		af_zarr_group_left why;
		ck_assert_int_eq(af_zarr_group_resolve(g, &g->children[i], &why,
						       NULL), AF_OK);
		if (why)
			continue;
		size_t n;
		const char *k = af_zarr_group_key(g, &g->children[i], &n);
		at += (size_t)snprintf(out + at, sizeof(out) - at, "%s%.*s",
				       at ? " " : "", (int)n, k);
	}
	return out;
}

START_TEST(deferred_headers_are_read_only_where_a_key_depends_on_them)
{
	af_array npy = aft_hand_array("<f8", false, 1, shape3);
	af_array ra = ra_hand_array("<f4");
	af_array obj = aft_hand_array("|O", false, 1, shape3);
	const char *names[] = { "x.npy", "x.ra", "y.npy", "z.npy" };
	af_zarr_group_entry e[4];
	for (size_t i = 0; i < 4; i++) {
		e[i] = array_entry(names[i], NULL);
		e[i].deferred = true;
	}
	/* x.npy unreadable frees "x" for x.ra: only the two are read */
	const af_array *heads[] = { NULL, &ra, &npy, &obj };
	header_table t = { heads, 0 };
	af_zarr_group g;
	ck_assert_int_eq(af_zarr_group_build_deferred(&g, e, 4, AF_ZARR_CHUNK_DEFAULT,
						      table_header, &t, NULL), AF_OK);
	ck_assert_uint_eq(t.reads, 2);
	ck_assert_str_eq(keys_of(&g), "x y z");
	ck_assert_int_eq(why_left(&g, 0), AF_ZG_LEFT_BAD_HEADER);
	af_zarr_group_left why;
	ck_assert_int_eq(af_zarr_group_resolve(&g, &g.children[1], &why, NULL), AF_OK);
	ck_assert_int_eq(why, 0);
	ck_assert_ptr_eq(af_zarr_group_array(&g, &g.children[1]), &npy);
	ck_assert_int_eq(af_zarr_group_resolve(&g, &g.children[2], &why, NULL), AF_OK);
	ck_assert_int_eq(why, AF_ZG_LEFT_OBJECT);
	af_zarr_group_free(&g);

	/* no header callback for a deferred entry */
	ck_assert_int_eq(af_zarr_group_build_deferred(&g, e, 4, AF_ZARR_CHUNK_DEFAULT,
						      NULL, NULL, NULL), AF_E_INVAL);
}
END_TEST

/* Every pattern of readable and unreadable headers over names that
 * collide in chains: the deferred model's children are the eager one's. */
START_TEST(deferred_models_are_the_eager_ones)
{
	af_array npy = aft_hand_array("<f8", false, 1, shape3);
	af_array ra = ra_hand_array("<f4");
	const char *names[] = { "x.npy", "x.ra", "x.npy.npy", "x.npy.ra",
				"x.ra.npy", "y.npy" };
	enum { N = 6 };
	for (unsigned mask = 0; mask < (1u << N); mask++) {
		const af_array *heads[N];
		af_zarr_group_entry eager[N], lazy[N];
		for (size_t i = 0; i < N; i++) {
			bool ra_name = strstr(names[i], ".ra") &&
				       !strstr(names[i] + strlen(names[i]) - 4, ".npy");
			heads[i] = mask & (1u << i) ? (ra_name ? &ra : &npy) : NULL;
			eager[i] = array_entry(names[i], heads[i]);
			lazy[i] = array_entry(names[i], NULL);
			lazy[i].deferred = true;
		}
		header_table t = { heads, 0 };
		af_zarr_group ge, gl;
		build(&ge, eager, N);
		ck_assert_int_eq(af_zarr_group_build_deferred(&gl, lazy, N,
							      AF_ZARR_CHUNK_DEFAULT,
							      table_header, &t,
							      NULL), AF_OK);
		char want[1024];
		snprintf(want, sizeof(want), "%s", keys_of(&ge));
		ck_assert_str_eq(resolved_keys(&gl), want);
		af_zarr_group_free(&ge);
		af_zarr_group_free(&gl);
	}
}
END_TEST

START_TEST(entries_that_are_no_children_are_left_out_with_a_reason)
{
	af_array npy = aft_hand_array("<f8", false, 1, shape3);
	af_array obj = aft_hand_array("|O", false, 1, shape3);
	uint64_t ones[AF_NDIM_MAX + 1];
	for (unsigned i = 0; i <= AF_NDIM_MAX; i++)
		ones[i] = 1;
	af_array deep = aft_hand_array("<f8", false, AF_NDIM_MAX + 1, ones);
	char longname[300];
	memset(longname, 'a', sizeof(longname));
	strcpy(longname + sizeof(longname) - 5, ".npy");
	af_zarr_group_entry e[] = {
		array_entry("ok.npy", &npy),             /* 0 */
		folder_entry(".stack", AF_ZG_FOLDER, NULL),
		array_entry(".hidden.npy", &npy),
		folder_entry("__pycache__", AF_ZG_FOLDER, NULL),
		folder_entry("notes.txt", AF_ZG_OTHER, NULL),
		array_entry("bad.npy", NULL),             /* 5: hostile header */
		array_entry("objects.npy", &obj),
		array_entry("nested/key.npy", &npy),
		array_entry(longname, &npy),
		array_entry("deep.npy", &deep),
		array_entry(".npy", &npy),                /* 10 */
		array_entry(".zarray.npy", &npy),
		array_entry("latin1-\xe9.npy", &npy),  /* not UTF-8 */
		array_entry("surrogate-\xed\xa0\x80.npy", &npy),
		array_entry("back\\slash.npy", &npy),  /* 14: zarr reads it as / */
	};
	size_t n = sizeof(e) / sizeof(e[0]);
	af_zarr_group g;
	build(&g, e, n);
	ck_assert_str_eq(keys_of(&g), "ok");
	ck_assert_uint_eq(g.nleft, n - 1);
	ck_assert_int_eq(why_left(&g, 1), AF_ZG_LEFT_STACK);
	ck_assert_int_eq(why_left(&g, 2), AF_ZG_LEFT_HIDDEN);
	ck_assert_int_eq(why_left(&g, 3), AF_ZG_LEFT_HIDDEN);
	ck_assert_int_eq(why_left(&g, 4), AF_ZG_LEFT_NOT_ARRAY);
	ck_assert_int_eq(why_left(&g, 5), AF_ZG_LEFT_BAD_HEADER);
	ck_assert_int_eq(why_left(&g, 6), AF_ZG_LEFT_OBJECT);
	ck_assert_int_eq(why_left(&g, 7), AF_ZG_LEFT_BAD_KEY);
	ck_assert_int_eq(why_left(&g, 8), AF_ZG_LEFT_BAD_KEY);
	ck_assert_int_eq(why_left(&g, 9), AF_ZG_LEFT_NO_STORE);
	ck_assert_int_eq(why_left(&g, 10), AF_ZG_LEFT_HIDDEN);
	ck_assert_int_eq(why_left(&g, 11), AF_ZG_LEFT_HIDDEN);
	ck_assert_int_eq(why_left(&g, 12), AF_ZG_LEFT_BAD_KEY);
	ck_assert_int_eq(why_left(&g, 13), AF_ZG_LEFT_BAD_KEY);
	ck_assert_int_eq(why_left(&g, 14), AF_ZG_LEFT_BAD_KEY);
	ck_assert(!af_zarr_group_left_logged(AF_ZG_LEFT_STACK));
	ck_assert(!af_zarr_group_left_logged(AF_ZG_LEFT_NOT_ARRAY));
	ck_assert(af_zarr_group_left_logged(AF_ZG_LEFT_HIDDEN));
	ck_assert(af_zarr_group_left_logged(AF_ZG_LEFT_BAD_HEADER));
	ck_assert_str_eq(af_zarr_group_left_phrase(AF_ZG_LEFT_OBJECT),
			 "an object array");
	af_zarr_group_free(&g);

	/* a key empty once the extension goes can only come from a hidden
	 * name; an empty name itself is a bad key */
	af_zarr_group_entry empty[] = { folder_entry("", AF_ZG_FOLDER, NULL) };
	build(&g, empty, 1);
	ck_assert_uint_eq(g.nchildren, 0);
	ck_assert_int_eq(why_left(&g, 0), AF_ZG_LEFT_BAD_KEY);
	af_zarr_group_free(&g);
}
END_TEST

START_TEST(children_are_in_byte_order_of_keys)
{
	af_array npy = aft_hand_array("<f8", false, 1, shape3);
	af_zarr_group_entry e[] = {
		array_entry("b.npy", &npy), array_entry("a.b.npy", &npy),
		array_entry("B.npy", &npy), array_entry("a.npy", &npy),
		array_entry("a-b.npy", &npy), array_entry("\xc3\xa9.npy", &npy),
		array_entry("Z.npy", &npy),
	};
	af_zarr_group g;
	build(&g, e, 7);
	ck_assert_str_eq(keys_of(&g), "B Z a a-b a.b b \xc3\xa9");
	af_zarr_group_free(&g);
}
END_TEST

START_TEST(bad_arguments_are_refused)
{
	af_zarr_group g;
	af_error err;
	af_error_clear(&err);
	ck_assert_int_eq(af_zarr_group_build(&g, NULL, 1, 1, &err), AF_E_INVAL);
	af_zarr_group_entry e[] = { { NULL, AF_ZG_OTHER, NULL, NULL, NULL, false } };
	ck_assert_int_eq(af_zarr_group_build(&g, e, 1, 1, &err), AF_E_INVAL);
	ck_assert_int_eq(af_zarr_group_build(&g, e, 0, 0, &err), AF_E_INVAL);
	ck_assert_int_eq(af_zarr_group_build(&g, NULL, 0, 1, &err), AF_OK);
	ck_assert_uint_eq(g.nchildren, 0);
	af_zarr_group_free(&g);
	af_zarr_group_free(NULL);
}
END_TEST

START_TEST(dimension_names_are_the_leaf_and_the_axis)
{
	char name[AF_ZARR_DIM_NAME_MAX];
	ck_assert_uint_eq(af_zarr_dim_name("signal", 6, 2, name), 12);
	ck_assert_str_eq(name, "signal_dim_2");
	ck_assert_uint_eq(af_zarr_dim_name("signal.npy", 6, 0, name), 12);
	ck_assert_str_eq(name, "signal_dim_0");
	ck_assert_uint_eq(af_zarr_dim_name(NULL, 0, 7, name), 5);
	ck_assert_str_eq(name, "dim_7");
	char longkey[AF_ZARR_NAME_MAX];
	memset(longkey, 'k', sizeof(longkey));
	ck_assert_uint_eq(af_zarr_dim_name(longkey, AF_ZARR_NAME_MAX - 1, 63, name),
			  AF_ZARR_NAME_MAX - 1 + 7);
	ck_assert_uint_eq(af_zarr_dim_name(longkey, AF_ZARR_NAME_MAX, 0, name), 0);
	ck_assert_str_eq(name, "");
}
END_TEST

/* @p st and the text it made (*text, *len) are @p want's: AF_OK and equal. */
static void text_is(af_status st, char **text, size_t *len, const char *want)
{
	ck_assert_int_eq(st, AF_OK);
	ck_assert_str_eq(*text, want);
	ck_assert_uint_eq(*len, strlen(want));
	free(*text);
}

START_TEST(group_texts_are_zarrs)
{
	char *t;
	size_t n;
	text_is(af_zarr_group_text(AF_ZG_ZGROUP, &t, &n, NULL), &t, &n,
		"{\n    \"zarr_format\": 2\n}");
	text_is(af_zarr_group_text(AF_ZG_ZATTRS, &t, &n, NULL), &t, &n, "{}");
	text_is(af_zarr_group_text(AF_ZG_ZARR_JSON, &t, &n, NULL), &t, &n,
		"{\n    \"zarr_format\": 3,\n    \"node_type\": \"group\",\n"
		"    \"attributes\": {}\n}");
	af_error err;
	af_error_clear(&err);
	ck_assert_int_eq(af_zarr_group_text(99, &t, &n, &err), AF_E_RANGE);
	ck_assert_ptr_null(t);
}
END_TEST

START_TEST(child_array_texts_are_its_stores_with_unique_dimension_names)
{
	af_array a = aft_hand_array(">i4", false, 2, shape22);
	af_zarr_layout l;
	ck_assert_int_eq(af_zarr_layout_init(&l, &a, AF_ZARR_CHUNK_DEFAULT, NULL),
			 AF_OK);
	char *t, *b;
	size_t n, bn;
	text_is(af_zarr_group_array_text(&l, AF_ZARR_ZATTRS, "sig.npy", 3, &t, &n,
					 NULL), &t, &n,
		"{\n    \"_ARRAY_DIMENSIONS\": [\n        \"sig_dim_0\",\n"
		"        \"sig_dim_1\"\n    ]\n}");
	/* .zarray: B.zarr/'s, byte for byte */
	ck_assert_int_eq(af_zarr_group_array_text(&l, AF_ZARR_ZARRAY, "sig", 3, &t,
						  &n, NULL), AF_OK);
	ck_assert_int_eq(af_zarr_text(&l, AF_ZARR_ZARRAY, &b, &bn, NULL), AF_OK);
	ck_assert_str_eq(t, b);
	free(t);
	free(b);
	/* zarr.json: B.zarr/'s with the names in attributes and dimension_names */
	ck_assert_int_eq(af_zarr_group_array_text(&l, AF_ZARR_ZARR_JSON, "sig", 3,
						  &t, &n, NULL), AF_OK);
	ck_assert_int_eq(af_zarr_text(&l, AF_ZARR_ZARR_JSON, &b, &bn, NULL), AF_OK);
	ck_assert_ptr_null(strstr(b, "dimension_names"));
	ck_assert_ptr_null(strstr(b, "sig_dim"));
	const char *tail =
		"    \"attributes\": {\n        \"_ARRAY_DIMENSIONS\": [\n"
		"            \"sig_dim_0\",\n            \"sig_dim_1\"\n        ]\n"
		"    },\n    \"dimension_names\": [\n        \"sig_dim_0\",\n"
		"        \"sig_dim_1\"\n    ]\n}";
	ck_assert_uint_gt(n, strlen(tail));
	ck_assert_str_eq(t + n - strlen(tail), tail);
	/* everything before the attributes is the store's */
	const char *attrs = strstr(b, "    \"attributes\"");
	ck_assert_ptr_nonnull(attrs);
	ck_assert_int_eq(memcmp(t, b, (size_t)(attrs - b)), 0);
	free(t);
	free(b);
	af_error err;
	af_error_clear(&err);
	ck_assert_int_eq(af_zarr_group_array_text(&l, AF_ZARR_ZATTRS, "", 0, &t,
						  &n, &err), AF_E_INVAL);
	ck_assert_int_eq(af_zarr_group_array_text(&l, AF_ZARR_CHUNK, "k", 1, &t,
						  &n, &err), AF_E_RANGE);
}
END_TEST

/* A tree in memory: each folder a list of entries. */
typedef struct fake_folder {
	af_zarr_group_entry *entries;
	size_t n;
	size_t repeat;          /* > 0: that many copies of entries[0] */
	af_zarr_group_entry *made;
} fake_folder;

typedef struct fake_tree {
	int lists, releases;
	char left[16][64];
	af_zarr_group_left why[16];
	size_t nleft;
	char *text;
	size_t len;
	size_t written;         /* bytes seen by the writer */
	size_t biggest_piece;
	struct read_log *reads; /* the header reads logged, if any */
} fake_tree;

static af_status fake_list(void *ctx, void *folder,
			   const af_zarr_group_entry **entries, size_t *n,
			   af_error *err)
{
	(void)err;
	fake_tree *t = ctx;
	fake_folder *f = folder;
	t->lists++;
	if (f->repeat) {
		f->made = calloc(f->repeat, sizeof(*f->made));
		char (*names)[24] = calloc(f->repeat, 24);
		ck_assert(f->made && names);
		for (size_t i = 0; i < f->repeat; i++) {
			snprintf(names[i], 24, "a%zu.npy", i);
			f->made[i] = f->entries[0];
			f->made[i].name = names[i];
		}
		*entries = f->made;
		*n = f->repeat;
		return AF_OK;
	}
	*entries = f->entries;
	*n = f->n;
	return AF_OK;
}

static void fake_release(void *ctx, void *folder,
			 const af_zarr_group_entry *entries, size_t n)
{
	(void)entries; (void)n;
	fake_tree *t = ctx;
	fake_folder *f = folder;
	t->releases++;
	if (f->made) {
		free((void *)f->made[0].name);
		free(f->made);
		f->made = NULL;
	}
}

static void fake_left(void *ctx, const char *path, af_zarr_group_left why)
{
	fake_tree *t = ctx;
	ck_assert_uint_lt(t->nleft, 16);
	snprintf(t->left[t->nleft], 64, "%s", path);
	t->why[t->nleft++] = why;
}

static af_status keep_text(void *ctx, const char *text, size_t len,
			   af_error *err)
{
	(void)err;
	fake_tree *t = ctx;
	t->text = realloc(t->text, t->len + len + 1);
	ck_assert_ptr_nonnull(t->text);
	memcpy(t->text + t->len, text, len);
	t->len += len;
	t->text[t->len] = '\0';
	return AF_OK;
}

static af_status count_text(void *ctx, const char *text, size_t len,
			    af_error *err)
{
	(void)text; (void)err;
	fake_tree *t = ctx;
	t->written += len;
	if (len > t->biggest_piece)
		t->biggest_piece = len;
	return AF_OK;
}

static af_zarr_walk fake_walk(fake_tree *t)
{
	af_zarr_walk w = { t, fake_list, fake_release, fake_left,
			   AF_ZARR_CHUNK_DEFAULT, NULL, NULL };
	return w;
}

/* What zarr 2.13's consolidate_metadata writes for the tree below. */
static const char expected_zmetadata[] =
	"{\n"
	"    \"metadata\": {\n"
	"        \"-s/.zattrs\": {},\n"
	"        \"-s/.zgroup\": {\n"
	"            \"zarr_format\": 2\n"
	"        },\n"
	"        \"-s/u/.zarray\": {\n"
	"            \"chunks\": [\n"
	"                2,\n"
	"                2\n"
	"            ],\n"
	"            \"compressor\": null,\n"
	"            \"dimension_separator\": \".\",\n"
	"            \"dtype\": \"<f8\",\n"
	"            \"fill_value\": null,\n"
	"            \"filters\": null,\n"
	"            \"order\": \"F\",\n"
	"            \"shape\": [\n"
	"                2,\n"
	"                2\n"
	"            ],\n"
	"            \"zarr_format\": 2\n"
	"        },\n"
	"        \"-s/u/.zattrs\": {\n"
	"            \"_ARRAY_DIMENSIONS\": [\n"
	"                \"u_dim_0\",\n"
	"                \"u_dim_1\"\n"
	"            ]\n"
	"        },\n"
	"        \".zattrs\": {},\n"
	"        \".zgroup\": {\n"
	"            \"zarr_format\": 2\n"
	"        },\n"
	"        \"t/.zarray\": {\n"
	"            \"chunks\": [\n"
	"                3\n"
	"            ],\n"
	"            \"compressor\": null,\n"
	"            \"dimension_separator\": \".\",\n"
	"            \"dtype\": \"<i4\",\n"
	"            \"fill_value\": null,\n"
	"            \"filters\": null,\n"
	"            \"order\": \"C\",\n"
	"            \"shape\": [\n"
	"                3\n"
	"            ],\n"
	"            \"zarr_format\": 2\n"
	"        },\n"
	"        \"t/.zattrs\": {\n"
	"            \"_ARRAY_DIMENSIONS\": [\n"
	"                \"t_dim_0\"\n"
	"            ]\n"
	"        }\n"
	"    },\n"
	"    \"zarr_consolidated_format\": 1\n"
	"}";

START_TEST(the_consolidated_document_is_what_zarr_writes)
{
	af_array t3 = aft_hand_array("<i4", false, 1, shape3);
	af_array u22 = aft_hand_array("<f8", true, 2, shape22);
	af_zarr_group_entry sub[] = {
		array_entry("u.npy", &u22),
		array_entry("broken.npy", NULL),
	};
	fake_folder subf = { sub, 2, 0, NULL };
	af_zarr_group_entry root[] = {
		array_entry("t.npy", &t3),
		folder_entry("-s", AF_ZG_FOLDER, &subf),
		folder_entry("readme.txt", AF_ZG_OTHER, NULL),
	};
	fake_folder rootf = { root, 3, 0, NULL };
	fake_tree t = { 0 };
	af_zarr_walk w = fake_walk(&t);
	ck_assert_int_eq(af_zarr_consolidated_write(&w, &rootf, keep_text, &t, NULL),
			 AF_OK);
	ck_assert_str_eq(t.text, expected_zmetadata);
	ck_assert_int_eq(t.lists, 2);
	ck_assert_int_eq(t.releases, 2);
	ck_assert_uint_eq(t.nleft, 2);
	ck_assert_str_eq(t.left[0], "readme.txt");
	ck_assert_int_eq(t.why[0], AF_ZG_LEFT_NOT_ARRAY);
	ck_assert_str_eq(t.left[1], "-s/broken.npy");
	ck_assert_int_eq(t.why[1], AF_ZG_LEFT_BAD_HEADER);
	free(t.text);
}
END_TEST

START_TEST(an_npz_subgroup_is_keyed_without_its_extension)
{
	af_array t3 = aft_hand_array("<i4", false, 1, shape3);
	af_zarr_group_entry members[] = { array_entry("signal.npy", &t3) };
	fake_folder npz = { members, 1, 0, NULL };
	af_zarr_group_entry root[] = {
		folder_entry("run.npz", AF_ZG_NPZ, &npz),
		array_entry("a.npy", &t3),
		array_entry("a.b.npy", &t3),
	};
	fake_folder rootf = { root, 3, 0, NULL };
	fake_tree t = { 0 };
	af_zarr_walk w = fake_walk(&t);
	ck_assert_int_eq(af_zarr_consolidated_write(&w, &rootf, keep_text, &t, NULL),
			 AF_OK);
	/* the keys in zarr's sorted order: "a.b/" before "a/" */
	const char *order[] = { "\"a.b/.zarray\"", "\"a.b/.zattrs\"",
				"\"a/.zarray\"", "\"a/.zattrs\"",
				"\"run/.zattrs\"", "\"run/.zgroup\"",
				"\"run/signal/.zarray\"", "\"run/signal/.zattrs\"",
				"\"signal_dim_0\"", "\"zarr_consolidated_format\"" };
	const char *at = t.text;
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		const char *next = strstr(at, order[i]);
		ck_assert_msg(next != NULL, "%s missing or out of order", order[i]);
		at = next;
	}
	free(t.text);
}
END_TEST

START_TEST(past_10000_arrays_there_is_no_consolidated_document)
{
	af_array t3 = aft_hand_array("<i4", false, 1, shape3);
	af_zarr_group_entry one[] = { array_entry("x.npy", &t3) };
	fake_folder big = { one, 1, AF_ZARR_CONSOLIDATED_MAX_ARRAYS, NULL };
	fake_tree t = { 0 };
	af_zarr_walk w = fake_walk(&t);
	ck_assert_int_eq(af_zarr_consolidated_write(&w, &big, count_text, &t, NULL),
			 AF_OK);
	ck_assert_uint_gt(t.written, 100u * AF_ZARR_CONSOLIDATED_MAX_ARRAYS);
	/* streamed: no piece holds more than a few entries */
	ck_assert_uint_lt(t.biggest_piece, 4096);

	big.repeat = AF_ZARR_CONSOLIDATED_MAX_ARRAYS + 1;
	af_error err;
	af_error_clear(&err);
	ck_assert_int_eq(af_zarr_consolidated_write(&w, &big, count_text, &t, &err),
			 AF_E_LIMIT);
	ck_assert_ptr_nonnull(strstr(err.msg, "too many arrays"));
	ck_assert_int_eq(t.lists, t.releases);
}
END_TEST

/* A folder that holds itself: an endless nesting. */
START_TEST(endless_nesting_stops_at_the_depth_limit)
{
	fake_folder loop = { NULL, 1, 0, NULL };
	af_zarr_group_entry self[] = { folder_entry("d", AF_ZG_FOLDER, &loop) };
	loop.entries = self;
	fake_tree t = { 0 };
	af_zarr_walk w = fake_walk(&t);
	af_error err;
	af_error_clear(&err);
	ck_assert_int_eq(af_zarr_consolidated_write(&w, &loop, count_text, &t, &err),
			 AF_E_LIMIT);
	ck_assert_int_eq(t.lists, AF_ZARR_GROUP_MAX_DEPTH + 1);
	ck_assert_int_eq(t.lists, t.releases);
}
END_TEST

static af_status failing_write(void *ctx, const char *text, size_t len,
			       af_error *err)
{
	(void)ctx; (void)text; (void)len;
	return af_error_set(err, AF_E_IO, AF_NO_OFFSET, "disk full");
}

/* What a walk told will_read and asked header, in order. */
typedef struct read_log {
	const af_array *array;
	size_t told[8], asked[8];
	size_t ntold, nasked;
	int tellings;
} read_log;

static void log_will_read(void *ctx, void *folder, const size_t *entries,
			  size_t n)
{
	fake_tree *t = ctx;
	read_log *r = t->reads;
	(void)folder;
	ck_assert_uint_le(n, 8);
	memcpy(r->told, entries, n * sizeof(*entries));
	r->ntold = n;
	r->tellings++;
}

static af_status log_header(void *ctx, void *folder, size_t entry,
			    const af_array **array, const void **source,
			    af_error *err)
{
	fake_tree *t = ctx;
	read_log *r = t->reads;
	(void)folder; (void)err;
	ck_assert_uint_lt(r->nasked, 8);
	r->asked[r->nasked++] = entry;
	*array = r->array;
	*source = NULL;
	return AF_OK;
}

static af_status visit_no_group(void *ctx, const char *path, af_error *err)
{
	(void)ctx; (void)path; (void)err;
	return AF_OK;
}

static af_status visit_no_array(void *ctx, const char *path,
				const af_zarr_group *g,
				const af_zarr_group_child *c,
				const af_zarr_layout *l, af_error *err)
{
	(void)ctx; (void)path; (void)g; (void)c; (void)l; (void)err;
	return AF_OK;
}

/* The walk tells the lister the deferred headers it will read, in the
 * order it then reads them (the full keys' order, "a.b" before "a"). */
START_TEST(the_walk_tells_which_headers_it_reads_in_order)
{
	af_array t3 = aft_hand_array("<i4", false, 1, shape3);
	af_zarr_group_entry root[] = {
		array_entry("b.npy", NULL), array_entry("a.npy", NULL),
		array_entry("c.npy", &t3), folder_entry("n.txt", AF_ZG_OTHER, NULL),
		array_entry("a.b.npy", NULL),
	};
	for (size_t i = 0; i < 5; i++)
		root[i].deferred = root[i].kind == AF_ZG_ARRAY && !root[i].array;
	fake_folder rootf = { root, 5, 0, NULL };
	read_log r = { .array = &t3 };
	fake_tree t = { 0 };
	t.reads = &r;
	af_zarr_walk w = fake_walk(&t);
	w.header = log_header;
	w.will_read = log_will_read;
	const af_zarr_visit visit = { NULL, visit_no_group, visit_no_array };
	ck_assert_int_eq(af_zarr_group_walk(&w, &rootf, &visit, NULL), AF_OK);
	ck_assert_int_eq(r.tellings, 1);
	ck_assert_uint_eq(r.ntold, 3);
	ck_assert_uint_eq(r.told[0], 4);   /* a.b */
	ck_assert_uint_eq(r.told[1], 1);   /* a */
	ck_assert_uint_eq(r.told[2], 0);   /* b */
	ck_assert_uint_eq(r.nasked, 3);
	ck_assert_mem_eq(r.asked, r.told, 3 * sizeof(r.told[0]));
}
END_TEST

START_TEST(a_failing_writer_stops_the_walk)
{
	af_array t3 = aft_hand_array("<i4", false, 1, shape3);
	af_zarr_group_entry root[] = { array_entry("t.npy", &t3) };
	fake_folder rootf = { root, 1, 0, NULL };
	fake_tree t = { 0 };
	af_zarr_walk w = fake_walk(&t);
	af_error err;
	af_error_clear(&err);
	ck_assert_int_eq(af_zarr_consolidated_write(&w, &rootf, failing_write, &t,
						    &err), AF_E_IO);
	ck_assert_int_eq(t.lists, t.releases);
	w.list = NULL;
	ck_assert_int_eq(af_zarr_consolidated_write(&w, &rootf, count_text, &t,
						    &err), AF_E_INVAL);
}
END_TEST

/* What a walk over the files of tools/good saw. */
typedef struct fs_seen {
	const char *top;   /* the walked path, under the fixtures */
	char paths[64][128];
	size_t n;
	size_t ranges, decoded;
	char left[16][128];
	size_t nleft;
} fs_seen;

static af_status seen_group(void *ctx, const char *path, af_error *err)
{
	(void)ctx; (void)path; (void)err;
	return AF_OK;
}

/* The bytes [off, off + len) of the file @p rel of the walk @p s. */
static unsigned char *file_bytes(const fs_seen *s, const char *rel,
				 uint64_t off, size_t len)
{
	char full[600];
	snprintf(full, sizeof(full), "%s%s%s", s->top, *rel ? "/" : "", rel);
	size_t n;
	unsigned char *all = aft_read_file(aft_fixture(full), &n);
	ck_assert_uint_le(off + len, n);
	unsigned char *out = malloc(len ? len : 1);
	ck_assert_ptr_nonnull(out);
	memcpy(out, all + off, len);
	free(all);
	return out;
}

/* The data of npz member @p member of file @p rel of the walk @p s. */
static unsigned char *member_data(const fs_seen *s, const char *rel,
				  const char *member, const af_array *a)
{
	char full[600];
	snprintf(full, sizeof(full), "%s/%s", s->top, rel);
	af_source src;
	int fd = aft_open_fd_source(aft_fixture(full), &src);
	af_zip *z = NULL;
	ck_assert_int_eq(af_zip_open(&z, &src, NULL), AF_OK);
	af_member *m = NULL;
	ck_assert_int_eq(af_member_open(&m, z, (size_t)af_zip_find(z, member),
					NULL), AF_OK);
	unsigned char *out = malloc(a->data_size ? a->data_size : 1);
	ck_assert_ptr_nonnull(out);
	ck_assert_int_eq(af_source_read_exact(af_member_source(m), out,
					      a->data_size, a->data_offset, NULL),
			 AF_OK);
	af_member_close(m);
	af_zip_close(z);
	close(fd);
	return out;
}

static af_status seen_array(void *ctx, const char *path, const af_zarr_group *g,
			    const af_zarr_group_child *c, const af_zarr_layout *l,
			    af_error *err)
{
	(void)err;
	fs_seen *s = ctx;
	const af_zarr_fs_array *where = af_zarr_group_source(g, c);
	const af_array *a = af_zarr_group_array(g, c);
	ck_assert_uint_lt(s->n, 64);
	snprintf(s->paths[s->n++], 128, "%s", path);
	ck_assert_ptr_nonnull(where);
	if (!where->chunks_are_ranges) {
		s->decoded++;
		return AF_OK;
	}
	s->ranges++;
	/* chunk 0 as arrayrefs would refer to it: a range of the file */
	af_zarr_chunk ch = { 0, 0, 0 };
	if (l->nchunks > 0)
		ck_assert_int_eq(af_zarr_chunk_get(l, 0, &ch), AF_OK);
	unsigned char *got = file_bytes(s, where->file,
					where->data_offset + ch.data_off,
					(size_t)ch.data_len);
	unsigned char *want = where->member ?
		member_data(s, where->file, where->member, a) :
		file_bytes(s, where->file, a->data_offset, (size_t)a->data_size);
	ck_assert_int_eq(memcmp(got, want + ch.data_off, (size_t)ch.data_len), 0);
	free(got);
	free(want);
	return AF_OK;
}

static void seen_left(void *ctx, const char *path, af_zarr_group_left why)
{
	(void)why;
	fs_seen *s = ctx;
	ck_assert_uint_lt(s->nleft, 16);
	snprintf(s->left[s->nleft++], 128, "%s", path);
}

static bool seen_path(const fs_seen *s, const char *path)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->paths[i], path) == 0)
			return true;
	return false;
}

START_TEST(a_file_walk_says_where_each_chunk_lies)
{
	fs_seen s = { .top = "tools/good" };
	af_zarr_walk w;
	void *root;
	ck_assert_int_eq(af_zarr_fs_open(aft_fixture("tools/good"),
					 AF_ZARR_CHUNK_DEFAULT, seen_left, &s,
					 &w, &root, NULL), AF_OK);
	af_zarr_visit v = { &s, seen_group, seen_array };
	ck_assert_int_eq(af_zarr_group_walk(&w, root, &v, NULL), AF_OK);
	af_zarr_fs_close(&w, root);
	/* stored members and plain .npy are ranges; deflated ones are not */
	ck_assert(seen_path(&s, "stored/x"));
	ck_assert(seen_path(&s, "stored/nested/z"));
	ck_assert(seen_path(&s, "deflated/x"));
	ck_assert(seen_path(&s, "fortran"));
	ck_assert(!seen_path(&s, "object"));
	ck_assert_uint_eq(s.decoded, 2);
	ck_assert_uint_eq(s.ranges, s.n - 2);
	for (size_t i = 1; i < s.n; i++)
		ck_assert_msg(strcmp(s.paths[i - 1], s.paths[i]) < 0,
			      "%s before %s", s.paths[i - 1], s.paths[i]);

	/* one array file: a group of that array, its file the path itself */
	fs_seen one = { .top = "tools/good/c_order.npy" };
	ck_assert_int_eq(af_zarr_fs_open(aft_fixture("tools/good/c_order.npy"),
					 AF_ZARR_CHUNK_DEFAULT, NULL, NULL, &w,
					 &root, NULL), AF_OK);
	v.ctx = &one;
	ck_assert_int_eq(af_zarr_group_walk(&w, root, &v, NULL), AF_OK);
	af_zarr_fs_close(&w, root);
	ck_assert_uint_eq(one.n, 1);
	ck_assert_str_eq(one.paths[0], "c_order");

	af_error err;
	af_error_clear(&err);
	ck_assert_int_eq(af_zarr_fs_open(aft_fixture("tools/good/missing"),
					 AF_ZARR_CHUNK_DEFAULT, NULL, NULL, &w,
					 &root, &err), AF_E_IO);
	ck_assert_int_eq(af_zarr_fs_open(aft_fixture("zip/comment.zip"),
					 AF_ZARR_CHUNK_DEFAULT, NULL, NULL, &w,
					 &root, &err), AF_E_INVAL);
}
END_TEST

/* Byte order, as zarr lists keys: a key before a longer one it begins. */
static int key_order(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);
	return c ? c : (alen > blen) - (alen < blen);
}

/* Many keys, most sharing their first 8 bytes or more, some a prefix of
 * others, some not ASCII, some shared by an array and a folder: the
 * children come in byte order, and each is found by its key. */
START_TEST(children_come_in_the_byte_order_of_their_keys)
{
	enum { N = 3000 };
	static const char *const part[] = { "img0000", "img00001", "a", "\xc3\xa9t",
					    "run_", "b", "img000011", "z9" };
	static char names[N][48];
	static af_zarr_group_entry e[N];
	af_array npy = aft_hand_array("<f8", false, 1, shape3);
	uint32_t r = 12345;
	size_t n = 0;
	while (n < N) {
		char name[48] = "";
		r = r * 1103515245u + 12345u;
		for (unsigned k = 0, parts = 1 + (r >> 16) % 4; k < parts; k++) {
			r = r * 1103515245u + 12345u;
			strcat(name, part[(r >> 16) % 8]);
		}
		r = r * 1103515245u + 12345u;
		bool array = (r >> 16) % 3 == 0;
		snprintf(names[n], sizeof(names[n]), "%s%s", name, array ? ".npy" : "");
		bool seen = false;
		for (size_t j = 0; j < n && !seen; j++)
			seen = !strcmp(names[j], names[n]);
		if (seen)
			continue;
		e[n] = array ? array_entry(names[n], &npy)
			     : folder_entry(names[n], AF_ZG_FOLDER, NULL);
		n++;
	}
	af_zarr_group g;
	build(&g, e, N);
	ck_assert_uint_eq(g.nchildren, N);
	for (size_t i = 0; i < g.nchildren; i++) {
		size_t len, prev_len;
		const char *key = af_zarr_group_key(&g, &g.children[i], &len);
		ck_assert_ptr_eq(af_zarr_group_find(&g, key, len), &g.children[i]);
		if (i == 0)
			continue;
		const char *prev = af_zarr_group_key(&g, &g.children[i - 1], &prev_len);
		ck_assert_msg(key_order(prev, prev_len, key, len) < 0,
			      "%.*s before %.*s", (int)prev_len, prev, (int)len, key);
	}
	af_zarr_group_free(&g);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("zarr_group");
	TCase *model = tcase_create("model");
	tcase_add_test(model, keys_drop_the_extension_of_their_kind);
	tcase_add_test(model, children_come_in_the_byte_order_of_their_keys);
	tcase_add_test(model, children_sharing_a_key_keep_their_full_names);
	tcase_add_test(model, entries_that_are_no_children_are_left_out_with_a_reason);
	tcase_add_test(model, deferred_headers_are_read_only_where_a_key_depends_on_them);
	tcase_add_test(model, deferred_models_are_the_eager_ones);
	tcase_add_test(model, children_are_in_byte_order_of_keys);
	tcase_add_test(model, bad_arguments_are_refused);
	tcase_add_test(model, dimension_names_are_the_leaf_and_the_axis);
	suite_add_tcase(s, model);
	TCase *texts = tcase_create("texts");
	tcase_add_test(texts, group_texts_are_zarrs);
	tcase_add_test(texts, child_array_texts_are_its_stores_with_unique_dimension_names);
	suite_add_tcase(s, texts);
	TCase *walk = tcase_create("consolidated");
	tcase_add_test(walk, the_consolidated_document_is_what_zarr_writes);
	tcase_add_test(walk, an_npz_subgroup_is_keyed_without_its_extension);
	tcase_add_test(walk, past_10000_arrays_there_is_no_consolidated_document);
	tcase_add_test(walk, endless_nesting_stops_at_the_depth_limit);
	tcase_add_test(walk, a_failing_writer_stops_the_walk);
	tcase_add_test(walk, the_walk_tells_which_headers_it_reads_in_order);
	suite_add_tcase(s, walk);
	TCase *files = tcase_create("files");
	tcase_add_test(files, a_file_walk_says_where_each_chunk_lies);
	suite_add_tcase(s, files);
	return aft_run(s);
}
