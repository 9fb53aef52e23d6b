/* SPDX-License-Identifier: MIT */
/*
 * The `.zarray` and `.zattrs` of arrayrefs' arrays as the JSON strings
 * the reference file holds, made once and reused: the arrays of a big
 * folder share a few shapes and types, so formatting and escaping each
 * array's texts anew was most of the tool's own time. The texts still
 * come from the codec (af_zarr_group_array_text); this only keeps them.
 */
#ifndef ARRAYFS_TOOLS_REFS_META_H
#define ARRAYFS_TOOLS_REFS_META_H

#include <stddef.h>
#include <stdio.h>

#include "arrayfs/arrayfs.h"

typedef struct refs_meta refs_meta;

/** An empty cache, or NULL for memory. */
refs_meta *refs_meta_new(void);
void refs_meta_free(refs_meta *m);

/**
 * Write metadata file @p which (AF_ZARR_ZARRAY or AF_ZARR_ZATTRS) of the
 * child array keyed @p key (@p key_len bytes) with layout @p l to @p out
 * as a quoted JSON string: the bytes json_string writes of the codec's
 * text. Returns AF_OK, or what af_zarr_group_array_text returns.
 */
af_status refs_meta_write(refs_meta *m, const af_zarr_layout *l,
			  af_zarr_file which, const char *key, size_t key_len,
			  FILE *out, af_error *err);

#endif /* ARRAYFS_TOOLS_REFS_META_H */
