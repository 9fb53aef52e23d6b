/* SPDX-License-Identifier: MIT */
/* The walk of a Zarr group's sub-tree in the byte order of its full keys. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrayfs/af_zarr_group.h"

/* A key path: every level's key (< AF_ZARR_NAME_MAX) and its '/'. */
#define PATH_CAP ((size_t)(AF_ZARR_GROUP_MAX_DEPTH + 1) * AF_ZARR_NAME_MAX + 1)

typedef struct walk_state {
	const af_zarr_walk *walk;
	const af_zarr_visit *visit;
	char *keys;    /* the key path of the folder walked ("run/sub") */
	char *names;   /* the same folders by name ("run.npz/sub") */
} walk_state;

/* Append "/" (unless at the root) and @p len bytes of @p s at @p at. */
static size_t path_join(char *path, size_t at, const char *s, size_t len)
{
	if (at > 0)
		path[at++] = '/';
	memcpy(path + at, s, len);
	path[at + len] = '\0';
	return at + len;
}

/*
 * The order of full keys inside a group: every key below a child starts
 * "KEY/", so children compare as their key followed by '/'. That is not
 * the order of the keys alone: "a" < "a.b" but "a.b/" < "a/".
 */
static int slash_cmp(const void *pa, const void *pb)
{
	const af_zarr_group_child *a = *(const af_zarr_group_child *const *)pa;
	const af_zarr_group_child *b = *(const af_zarr_group_child *const *)pb;
	size_t n = a->key_len < b->key_len ? a->key_len : b->key_len;
	int c = memcmp(a->key, b->key, n);
	if (c != 0)
		return c;
	unsigned char ca = n < a->key_len ? (unsigned char)a->key[n] : '/';
	unsigned char cb = n < b->key_len ? (unsigned char)b->key[n] : '/';
	return (ca > cb) - (ca < cb);
}

/* Tell the walk's left_out of entry @p name of the folder walked. */
static void report_one(walk_state *s, size_t nlen, const char *name,
		       af_zarr_group_left why)
{
	size_t len = strlen(name);
	char *full = malloc(nlen + len + 2);
	if (!full)
		return; /* a report lost for memory: the walk goes on */
	memcpy(full, s->names, nlen);
	path_join(full, nlen, name, len);
	s->walk->left_out(s->walk->ctx, full, why);
	free(full);
}

static void report_left(walk_state *s, size_t nlen, const af_zarr_group *g)
{
	if (!s->walk->left_out)
		return;
	for (size_t i = 0; i < g->nleft; i++)
		report_one(s, nlen, g->entries[g->left[i].entry].name,
			   g->left[i].why);
}

static af_status walk_folder(walk_state *s, void *folder, size_t klen,
			     size_t nlen, unsigned depth, af_error *err);

static af_status walk_child(walk_state *s, af_zarr_group *g,
			    const af_zarr_group_child *c, size_t klen,
			    size_t nlen, unsigned depth, af_error *err)
{
	const af_zarr_group_entry *e = &g->entries[c->entry];
	size_t k = path_join(s->keys, klen, c->key, c->key_len);
	if (c->is_array) {
		/* a deferred header is read here, one at a time */
		af_zarr_group_left why;
		af_zarr_layout l;
		af_status st = af_zarr_group_resolve(g, c, &why, err);
		if (st == AF_OK && why) {
			if (s->walk->left_out)
				report_one(s, nlen, e->name, why);
			return AF_OK;
		}
		if (st == AF_OK)
			st = af_zarr_group_layout(g, c, &l, err);
		return st != AF_OK ? st :
		       s->visit->array(s->visit->ctx, s->keys, g, c, &l, err);
	}
	if (depth >= AF_ZARR_GROUP_MAX_DEPTH)
		return af_error_set(err, AF_E_LIMIT, AF_NO_OFFSET,
				    "%s: Zarr groups nest deeper than %u",
				    s->keys, AF_ZARR_GROUP_MAX_DEPTH);
	size_t n = path_join(s->names, nlen, e->name, strlen(e->name));
	return walk_folder(s, e->folder, k, n, depth + 1, err);
}

/* Tell the lister which deferred headers the walk reads, in @p order. */
static af_status tell_reads(walk_state *s, const af_zarr_group *g,
			    const af_zarr_group_child *const *order,
			    void *folder, af_error *err)
{
	if (!s->walk->will_read)
		return AF_OK;
	size_t *reads = malloc((g->nchildren ? g->nchildren : 1) * sizeof(*reads));
	size_t n = 0;
	if (!reads)
		return af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
				    "out of memory walking a Zarr group");
	for (size_t i = 0; i < g->nchildren; i++)
		if (order[i]->is_array && g->entries[order[i]->entry].deferred)
			reads[n++] = order[i]->entry;
	s->walk->will_read(s->walk->ctx, folder, reads, n);
	free(reads);
	return AF_OK;
}

static af_status walk_model(walk_state *s, af_zarr_group *g, void *folder,
			    size_t klen, size_t nlen, unsigned depth,
			    af_error *err)
{
	const af_zarr_group_child **order =
		malloc((g->nchildren ? g->nchildren : 1) * sizeof(*order));
	if (!order)
		return af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
				    "out of memory walking a Zarr group");
	for (size_t i = 0; i < g->nchildren; i++)
		order[i] = &g->children[i];
	/* the model's key order, unless a key is another's prefix followed
	 * by a byte below '/': then sort (a check costs less than a sort) */
	size_t sorted = 1;
	while (sorted < g->nchildren &&
	       slash_cmp(&order[sorted - 1], &order[sorted]) <= 0)
		sorted++;
	if (sorted < g->nchildren)
		qsort(order, g->nchildren, sizeof(*order), slash_cmp);
	af_status st = tell_reads(s, g, order, folder, err);
	bool own_done = false;
	for (size_t i = 0; st == AF_OK && i <= g->nchildren; i++) {
		/* the group's own ".zattrs"/".zgroup" sort before the first
		 * child whose key starts at or after '.' (none starts with it) */
		if (!own_done && (i == g->nchildren ||
				  (unsigned char)order[i]->key[0] > '.')) {
			s->keys[klen] = '\0';
			st = s->visit->group(s->visit->ctx, s->keys, err);
			own_done = true;
		}
		if (st == AF_OK && i < g->nchildren)
			st = walk_child(s, g, order[i], klen, nlen, depth, err);
	}
	free(order);
	return st;
}

/* The folder a model's deferred headers are read from. */
typedef struct folder_headers {
	const af_zarr_walk *walk;
	void *folder;
} folder_headers;

static af_status read_header(void *ctx, size_t entry, const af_array **array,
			     const void **source, af_error *err)
{
	const folder_headers *h = ctx;
	return h->walk->header(h->walk->ctx, h->folder, entry, array, source, err);
}

static af_status walk_folder(walk_state *s, void *folder, size_t klen,
			     size_t nlen, unsigned depth, af_error *err)
{
	folder_headers headers = { s->walk, folder };
	const af_zarr_group_entry *entries = NULL;
	size_t n = 0;
	af_status st = s->walk->list(s->walk->ctx, folder, &entries, &n, err);
	if (st != AF_OK)
		return st;
	af_zarr_group g;
	st = af_zarr_group_build_deferred(&g, entries, n, s->walk->max_chunk_bytes,
					  s->walk->header ? read_header : NULL,
					  &headers, err);
	if (st == AF_OK) {
		s->names[nlen] = '\0';
		report_left(s, nlen, &g);
		st = walk_model(s, &g, folder, klen, nlen, depth, err);
		af_zarr_group_free(&g);
	}
	s->walk->release(s->walk->ctx, folder, entries, n);
	return st;
}

af_status af_zarr_group_walk(const af_zarr_walk *walk, void *root,
			     const af_zarr_visit *visit, af_error *err)
{
	if (!walk || !walk->list || !walk->release || !visit || !visit->group ||
	    !visit->array)
		return af_error_set(err, AF_E_INVAL, AF_NO_OFFSET,
				    "a Zarr group walk needs list, release, "
				    "group and array callbacks");
	walk_state s = { walk, visit, malloc(PATH_CAP), malloc(PATH_CAP) };
	af_status st;
	if (!s.keys || !s.names)
		st = af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
				  "out of memory walking a Zarr group");
	else
		st = walk_folder(&s, root, 0, 0, 0, err);
	free(s.keys);
	free(s.names);
	return st;
}
