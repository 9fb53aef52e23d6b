/* SPDX-License-Identifier: MIT */
/* `.zmetadata`: the consolidated v2 metadata of a group, streamed. */
#include <stdlib.h>
#include <string.h>

#include "arrayfs/af_zarr_group.h"
#include "zarr_group_i.h"
#include "zarr_i.h"
#include "zarr_json_i.h"

/* A metadata key: a key path, '/', a file name. */
#define KEY_CAP ((size_t)(AF_ZARR_GROUP_MAX_DEPTH + 1) * AF_ZARR_NAME_MAX + 16)

typedef struct consolidated {
	zj w;
	af_zarr_write_fn write;
	void *write_ctx;
	uint64_t arrays;
	char *key;
} consolidated;

/* Key "PATH/FILE" (just FILE at the root) as the next member. */
static void put_key(consolidated *c, const char *path, const char *file)
{
	size_t n = strlen(path);
	memcpy(c->key, path, n);
	if (n > 0)
		c->key[n++] = '/';
	strcpy(c->key + n, file);
	zj_key(&c->w, c->key);
}

/* Hand the text made so far to the writer, keeping the writer's state. */
static af_status flush(consolidated *c, af_error *err)
{
	if (c->w.failed)
		return af_error_set(err, c->w.failed, AF_NO_OFFSET,
				    "out of memory writing .zmetadata");
	if (c->w.text.len == 0)
		return AF_OK;
	af_status st = c->write(c->write_ctx, c->w.text.buf, c->w.text.len, err);
	c->w.text.len = 0;
	c->w.text.buf[0] = '\0';
	return st;
}

static af_status on_group(void *ctx, const char *path, af_error *err)
{
	consolidated *c = ctx;
	put_key(c, path, ".zattrs");
	zg_put_group_file(AF_ZG_ZATTRS, &c->w, err);
	put_key(c, path, ".zgroup");
	zg_put_group_file(AF_ZG_ZGROUP, &c->w, err);
	return flush(c, err);
}

static af_status on_array(void *ctx, const char *path, const af_zarr_group *g,
			  const af_zarr_group_child *child,
			  const af_zarr_layout *l, af_error *err)
{
	consolidated *c = ctx;
	if (++c->arrays > AF_ZARR_CONSOLIDATED_MAX_ARRAYS)
		return af_error_set(err, AF_E_LIMIT, AF_NO_OFFSET,
				    "too many arrays for .zmetadata: more than %u",
				    AF_ZARR_CONSOLIDATED_MAX_ARRAYS);
	af_zarr_dims dims;
	dims.leaf = af_zarr_group_key(g, child, &dims.leaf_len);
	put_key(c, path, ".zarray");
	af_status st = af_zarr_meta_put(l, AF_ZARR_ZARRAY, &dims,
					&c->w, err);
	if (st != AF_OK)
		return st;
	put_key(c, path, ".zattrs");
	st = af_zarr_meta_put(l, AF_ZARR_ZATTRS, &dims, &c->w, err);
	if (st != AF_OK)
		return st;
	return flush(c, err);
}

af_status af_zarr_consolidated_write(const af_zarr_walk *walk, void *root,
				     af_zarr_write_fn write, void *write_ctx,
				     af_error *err)
{
	if (!write)
		return af_error_set(err, AF_E_INVAL, AF_NO_OFFSET,
				    "no writer for .zmetadata");
	consolidated c = { .write = write, .write_ctx = write_ctx,
			   .key = malloc(KEY_CAP) };
	if (!c.key)
		return af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
				    "out of memory writing .zmetadata");
	zj_init(&c.w);
	/* zarr sorts the document's keys: "metadata" first */
	zj_begin(&c.w, '{');
	zj_key(&c.w, "metadata");
	zj_begin(&c.w, '{');
	af_zarr_visit visit = { &c, on_group, on_array };
	af_status st = af_zarr_group_walk(walk, root, &visit, err);
	if (st == AF_OK) {
		zj_end(&c.w, '}');
		zj_key(&c.w, "zarr_consolidated_format");
		zj_u64(&c.w, 1);
		zj_end(&c.w, '}');
		st = flush(&c, err);
	}
	char *rest;
	size_t n;
	zj_finish(&c.w, &rest, &n);
	free(rest);
	free(c.key);
	return st;
}
