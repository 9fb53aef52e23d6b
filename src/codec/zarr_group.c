/* SPDX-License-Identifier: MIT */
/* The model of one folder as a Zarr group: its children, keys and left-outs. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrayfs/af_zarr_group.h"
#include "zarr_group_i.h"
#include "zarr_json_i.h"

static const char *const left_phrases[] = {
	[AF_ZG_LEFT_NOT_ARRAY] = "not an array, folder or npz",
	[AF_ZG_LEFT_STACK] = "the folder's .stack",
	[AF_ZG_LEFT_HIDDEN] = "its name starts with '.' or '__'",
	[AF_ZG_LEFT_BAD_KEY] = "Zarr cannot take its name as a key",
	[AF_ZG_LEFT_BAD_HEADER] = "its header could not be read",
	[AF_ZG_LEFT_OBJECT] = "an object array",
	[AF_ZG_LEFT_NO_STORE] = "an array with no Zarr store",
};

const char *af_zarr_group_left_phrase(af_zarr_group_left why)
{
	if ((size_t)why >= sizeof(left_phrases) / sizeof(left_phrases[0]) ||
	    !left_phrases[why])
		return "left out";
	return left_phrases[why];
}

bool af_zarr_group_left_logged(af_zarr_group_left why)
{
	return why != AF_ZG_LEFT_NOT_ARRAY && why != AF_ZG_LEFT_STACK &&
	       why != AF_ZG_LEFT_OBJECT;
}

size_t zg_name_ext(const char *name, af_zarr_group_kind *kind)
{
	/* the codec's one name rule says it; callers pass whole names */
	switch (af_array_name_kind(name, false)) {
	case AF_NAME_NPY:
	case AF_NAME_RA:
		*kind = AF_ZG_ARRAY;
		break;
	case AF_NAME_NPZ:
		*kind = AF_ZG_NPZ;
		break;
	default:
		*kind = AF_ZG_OTHER;
		return 0;
	}
	return strlen(name) - af_array_name_base_len(name);
}

/* The key before collisions: the name without the extension its kind has. */
static size_t stripped_len(const af_zarr_group_entry *e)
{
	size_t n = strlen(e->name);
	af_zarr_group_kind says;
	size_t ext = zg_name_ext(e->name, &says);
	bool drops = (e->kind == AF_ZG_ARRAY || e->kind == AF_ZG_NPZ) &&
		     says == e->kind;
	return drops ? n - ext : n;
}

/*
 * Keys Zarr cannot take: empty, ".", "..", a '/', a '\\' (zarr-python 2
 * reads it as '/', so the key would name another node), a leading ".z",
 * too long, and bytes that are not UTF-8 (the JSON would name another key).
 */
static bool key_ok(const char *key, size_t len)
{
	if (len == 0 || len >= AF_ZARR_NAME_MAX || memchr(key, '/', len) ||
	    memchr(key, '\\', len) || !zj_utf8_ok(key, len))
		return false;
	if ((len == 1 && key[0] == '.') || (len == 2 && !memcmp(key, "..", 2)))
		return false;
	return !(len >= 2 && key[0] == '.' && key[1] == 'z');
}

/* Why @p e is no child by its name and kind, or 0 if it may be one (its
 * key and, for an array, its header still to check). */
static af_zarr_group_left entry_left(const af_zarr_group_entry *e)
{
	if (strcmp(e->name, ".stack") == 0)
		return AF_ZG_LEFT_STACK;
	if (e->name[0] == '.' || (e->name[0] == '_' && e->name[1] == '_'))
		return AF_ZG_LEFT_HIDDEN;
	if (e->kind == AF_ZG_FOLDER || e->kind == AF_ZG_NPZ)
		return 0;
	return e->kind == AF_ZG_ARRAY ? 0 : AF_ZG_LEFT_NOT_ARRAY;
}

/* Why array header @p a is no child, or 0; AF_E_NOMEM in *st. */
static af_zarr_group_left header_left(const af_array *a, uint64_t max_chunk_bytes,
				      af_status *st)
{
	*st = AF_OK;
	if (!a)
		return AF_ZG_LEFT_BAD_HEADER;
	if (a->dtype.kind == AF_KIND_OBJECT || a->dtype.has_object)
		return AF_ZG_LEFT_OBJECT;
	af_zarr_layout l;
	af_status ls = af_zarr_layout_init(&l, a, max_chunk_bytes, NULL);
	if (ls == AF_E_NOMEM)
		*st = ls;
	return ls == AF_OK ? 0 : AF_ZG_LEFT_NO_STORE;
}

static bool same_key(const af_zarr_group_child *a, const af_zarr_group_child *b)
{
	return zg_key_cmp(a->key, a->key_len, b->key, b->key_len) == 0;
}

/*
 * Sort by key; where keys are shared, give every sharer its full name.
 * A full name can meet another child's stripped key ("x.npy" beside
 * "x.npy.npy"), so repeat until no key is shared: each pass lengthens at
 * least one key to its full name, and full names are unique.
 */
static void settle_keys(af_zarr_group *g)
{
	bool shared = true;
	while (shared) {
		zg_sort_children(g->children, g->nchildren);
		shared = false;
		for (size_t i = 0; i + 1 < g->nchildren; i++) {
			if (!same_key(&g->children[i], &g->children[i + 1]))
				continue;
			size_t j = i;
			while (j < g->nchildren &&
			       same_key(&g->children[i], &g->children[j]))
				j++;
			for (size_t k = i; k < j; k++)
				g->children[k].key_len =
					strlen(g->children[k].key);
			shared = true;
			i = j - 1;
		}
	}
}

static void add_left(af_zarr_group *g, size_t entry, af_zarr_group_left why)
{
	g->left[g->nleft].entry = entry;
	g->left[g->nleft++].why = why;
}

static int left_cmp(const void *pa, const void *pb)
{
	const af_zarr_group_left_out *a = pa, *b = pb;
	return (a->entry > b->entry) - (a->entry < b->entry);
}

static af_status nomem(af_zarr_group *g, const char *name, af_error *err)
{
	af_zarr_group_free(g);
	return af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
			    "out of memory laying out %s", name);
}

/*
 * Judge the deferred arrays whose key a collision lengthened: only they
 * can change a key by being left out (one that no collision touches
 * keeps its stripped key in any subset of the children, since keys only
 * lengthen where shared). If any is left out, settle the rest again;
 * their contested ones are among those judged.
 */
static af_status judge_contested(af_zarr_group *g, af_error *err)
{
	size_t kept = 0;
	bool dropped = false;
	for (size_t i = 0; i < g->nchildren; i++) {
		af_zarr_group_child *c = &g->children[i];
		const af_zarr_group_entry *e = &g->entries[c->entry];
		if (c->is_array && e->deferred && c->key_len != stripped_len(e)) {
			af_zarr_group_left why;
			af_status st = af_zarr_group_resolve(g, c, &why, err);
			if (st != AF_OK)
				return st;
			if (why) {
				add_left(g, c->entry, why);
				g->narrays--;
				dropped = true;
				continue;
			}
		}
		g->children[kept++] = *c;
	}
	g->nchildren = kept;
	if (!dropped)
		return AF_OK;
	for (size_t i = 0; i < g->nchildren; i++)
		g->children[i].key_len = stripped_len(&g->entries[g->children[i].entry]);
	settle_keys(g);
	qsort(g->left, g->nleft, sizeof(g->left[0]), left_cmp);
	return AF_OK;
}

af_status af_zarr_group_build(af_zarr_group *g, const af_zarr_group_entry *entries,
			      size_t n, uint64_t max_chunk_bytes, af_error *err)
{
	return af_zarr_group_build_deferred(g, entries, n, max_chunk_bytes, NULL,
					    NULL, err);
}

af_status af_zarr_group_build_deferred(af_zarr_group *g,
				       const af_zarr_group_entry *entries,
				       size_t n, uint64_t max_chunk_bytes,
				       af_zarr_group_header_fn header,
				       void *header_ctx, af_error *err)
{
	if (!g)
		return af_error_set(err, AF_E_INVAL, AF_NO_OFFSET, "no group to build");
	memset(g, 0, sizeof(*g));
	g->read_entry = SIZE_MAX;
	if ((n > 0 && !entries) || max_chunk_bytes == 0)
		return af_error_set(err, AF_E_INVAL, AF_NO_OFFSET,
				    "no entries or no chunk size for a Zarr group");
	for (size_t i = 0; i < n; i++)
		if (!entries[i].name || (entries[i].deferred && !header))
			return af_error_set(err, AF_E_INVAL, AF_NO_OFFSET,
					    "entry %zu of a Zarr group has no %s", i,
					    entries[i].name ? "way to read its header"
							    : "name");
	g->entries = entries;
	g->max_chunk_bytes = max_chunk_bytes;
	g->header = header;
	g->header_ctx = header_ctx;
	g->children = calloc(n ? n : 1, sizeof(*g->children));
	g->left = calloc(n ? n : 1, sizeof(*g->left));
	if (!g->children || !g->left)
		return nomem(g, "a Zarr group", err);
	bool deferred = false;
	for (size_t i = 0; i < n; i++) {
		const af_zarr_group_entry *e = &entries[i];
		af_zarr_group_left why = entry_left(e);
		if (why) {
			add_left(g, i, why);
			continue;
		}
		af_zarr_group_child *c = &g->children[g->nchildren];
		c->entry = i;
		c->key = e->name;
		c->key_len = stripped_len(e);
		c->is_array = e->kind == AF_ZG_ARRAY;
		if (!key_ok(e->name, c->key_len) ||
		    !key_ok(e->name, strlen(e->name))) {
			add_left(g, i, AF_ZG_LEFT_BAD_KEY);
			continue;
		}
		if (c->is_array && !e->deferred) {
			af_status st;
			why = header_left(e->array, max_chunk_bytes, &st);
			if (st != AF_OK)
				return nomem(g, e->name, err);
			if (why) {
				add_left(g, i, why);
				continue;
			}
		}
		deferred |= c->is_array && e->deferred;
		g->narrays += c->is_array;
		g->nchildren++;
	}
	settle_keys(g);
	af_status st = deferred ? judge_contested(g, err) : AF_OK;
	if (st != AF_OK)
		af_zarr_group_free(g);
	return st;
}

af_status af_zarr_group_resolve(af_zarr_group *g, const af_zarr_group_child *c,
				af_zarr_group_left *why, af_error *err)
{
	const af_zarr_group_entry *e = &g->entries[c->entry];
	*why = 0;
	if (!c->is_array || !e->deferred)
		return AF_OK;
	g->read_entry = SIZE_MAX;
	af_status st = g->header(g->header_ctx, c->entry, &g->read_array,
				 &g->read_source, err);
	if (st != AF_OK)
		return st;
	g->read_entry = c->entry;
	*why = header_left(g->read_array, g->max_chunk_bytes, &st);
	if (st != AF_OK)
		return af_error_set(err, st, AF_NO_OFFSET,
				    "out of memory laying out %s", e->name);
	return AF_OK;
}

const af_array *af_zarr_group_array(const af_zarr_group *g,
				    const af_zarr_group_child *c)
{
	const af_zarr_group_entry *e = &g->entries[c->entry];
	return !e->deferred ? e->array :
	       g->read_entry == c->entry ? g->read_array : NULL;
}

const void *af_zarr_group_source(const af_zarr_group *g,
				 const af_zarr_group_child *c)
{
	const af_zarr_group_entry *e = &g->entries[c->entry];
	return !e->deferred ? e->source :
	       g->read_entry == c->entry ? g->read_source : NULL;
}

void af_zarr_group_free(af_zarr_group *g)
{
	if (!g)
		return;
	free(g->children);
	free(g->left);
	memset(g, 0, sizeof(*g));
}

const char *af_zarr_group_key(const af_zarr_group *g,
			      const af_zarr_group_child *c, size_t *len)
{
	(void)g;
	*len = c->key_len;
	return c->key;
}

af_status af_zarr_group_layout(const af_zarr_group *g,
			       const af_zarr_group_child *c, af_zarr_layout *out,
			       af_error *err)
{
	if (!c->is_array)
		return af_error_set(err, AF_E_INVAL, AF_NO_OFFSET,
				    "%.*s is a Zarr sub-group, not an array",
				    (int)c->key_len, c->key);
	const af_array *a = af_zarr_group_array(g, c);
	if (!a)
		return af_error_set(err, AF_E_INVAL, AF_NO_OFFSET,
				    "%.*s: its header is not read",
				    (int)c->key_len, c->key);
	return af_zarr_layout_init(out, a, g->max_chunk_bytes, err);
}

const af_zarr_group_child *af_zarr_group_find(const af_zarr_group *g,
					      const char *key, size_t len)
{
	size_t lo = 0, hi = g->nchildren;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const af_zarr_group_child *c = &g->children[mid];
		int d = zg_key_cmp(c->key, c->key_len, key, len);
		if (d == 0)
			return c;
		if (d < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

size_t af_zarr_dim_name(const char *leaf, size_t leaf_len, unsigned axis,
			char out[AF_ZARR_DIM_NAME_MAX])
{
	if (!leaf)
		return (size_t)snprintf(out, AF_ZARR_DIM_NAME_MAX, "dim_%u", axis);
	if (leaf_len >= AF_ZARR_NAME_MAX) {
		out[0] = '\0';
		return 0;
	}
	return (size_t)snprintf(out, AF_ZARR_DIM_NAME_MAX, "%.*s_dim_%u",
				(int)leaf_len, leaf, axis);
}
