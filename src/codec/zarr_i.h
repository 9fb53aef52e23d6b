/* SPDX-License-Identifier: MIT */
/**
 * @file zarr_i.h
 * Private: the pieces of the Zarr store shared by its layout
 * (zarr_layout.c) and its metadata (zarr_meta.c).
 */
#ifndef ARRAYFS_ZARR_I_H
#define ARRAYFS_ZARR_I_H

#include "arrayfs/af_dtype.h"
#include "arrayfs/af_zarr.h"

/**
 * The Zarr v3 core data type of @p dt ("bool", "int8" .. "uint64",
 * "float16" .. "float64", "complex64", "complex128"), or NULL when it has
 * none (then the store has no zarr.json). A static string.
 */
const char *af_zarr_v3_type(const af_dtype *dt);

/**
 * Whether the .zarray of layout @p l can spell its dtype, without writing
 * it: for a structured .npy type, one parse of the descr through the
 * writer's own sink, counting instead of writing; AF_OK at once for any
 * other type. The writer (af_zarr_text) then fails only for memory.
 * Returns AF_OK, AF_E_UNSUPPORTED (zarr's list form cannot hold it: err
 * says why), AF_E_NOMEM.
 */
af_status af_zarr_dtype_check(const af_zarr_layout *l, af_error *err);

/**
 * The arithmetic part of af_zarr_layout_init: the layout of @p a's store,
 * without af_zarr_dtype_check. For tests that run the writer on what init
 * refuses; the store exists only if af_zarr_layout_init says so.
 * Returns what af_zarr_layout_init returns, but for that check.
 */
af_status af_zarr_layout_compute(af_zarr_layout *out, const af_array *a,
				 uint64_t max_chunk_bytes, af_error *err);

/** Dimension names af_zarr_dim_name(leaf, axis) of a group's child array. */
typedef struct af_zarr_dims {
	const char *leaf;   /* its key in its group */
	size_t leaf_len;
} af_zarr_dims;

struct zj;
/**
 * Write metadata file @p which of @p l as the next value of @p w (at any
 * depth: the consolidated document nests them), with @p dims's dimension
 * names, or B.zarr/'s ("dim_0", ...) for NULL; @p dims also gives
 * zarr.json its "dimension_names". Returns what af_zarr_text returns but
 * for the writer's own failures, which zj_finish reports.
 */
af_status af_zarr_meta_put(const af_zarr_layout *l, af_zarr_file which,
			   const af_zarr_dims *dims, struct zj *w,
			   af_error *err);

/** af_zarr_text with @p dims's dimension names (NULL: B.zarr/'s). */
af_status af_zarr_text_dims(const af_zarr_layout *l, af_zarr_file which,
			    const af_zarr_dims *dims, char **out, size_t *len,
			    af_error *err);

#endif /* ARRAYFS_ZARR_I_H */
