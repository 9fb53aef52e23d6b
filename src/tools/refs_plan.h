/* SPDX-License-Identifier: MIT */
/*
 * Full chunks for readers that refuse a short one (zarr 2.13): where each
 * chunk reference of a byte-range array reads from, and the chunk grid of
 * an array whose short last chunk could be read from nowhere.
 *
 * The mount's grid (af_zarr_layout) pads the last chunk with zeros. A
 * reference holds a full chunk when the range runs on into bytes of the
 * same file that follow the array (zarr ignores elements past the edge);
 * else a padded last chunk of at most the inline bound (REFS_INLINE_DEFAULT) is written
 * inline. Past that the array gets a grid of its own (its .zarray says
 * so): the cut axis' chunk length the larger of its largest divisor of the
 * extent below the mount's (no short chunk at all) and the length whose
 * chunk fits the inline bound (a short last chunk inline), so chunks stay
 * at least the inline bound / 2 bytes unless a whole chunk fits less.
 */
#ifndef ARRAYFS_TOOLS_REFS_PLAN_H
#define ARRAYFS_TOOLS_REFS_PLAN_H

#include <stdint.h>

#include "arrayfs/arrayfs.h"

typedef enum refs_chunk_source {
	REFS_CHUNK_RANGE = 1,  /* [url, offset, size] of the file */
	REFS_CHUNK_INLINE,     /* base64: its data then zeros */
	REFS_CHUNK_NONE,       /* short, past the file's end, too big inline */
} refs_chunk_source;

/** Where chunk @p c, at @p off in a file of @p file_size bytes, reads
 * from, inline when its padded size is at most @p inline_max. */
refs_chunk_source refs_chunk_where(const af_zarr_chunk *c, uint64_t off,
				   uint64_t file_size, uint64_t inline_max);

typedef enum refs_plan_result {
	REFS_PLAN_OK = 1,      /* *out is a grid with every chunk readable */
	REFS_PLAN_NONE,        /* none found (a hostile shape): leave it out */
	REFS_PLAN_FAILED,      /* err says why */
} refs_plan_result;

/**
 * The grid for array @p a (the mount's: @p l), whose data starts at
 * @p data_offset of a file of @p file_size bytes, into *out: @p l itself
 * unless its last chunk is REFS_CHUNK_NONE.
 */
refs_plan_result refs_plan_layout(const af_array *a, const af_zarr_layout *l,
				  uint64_t data_offset, uint64_t file_size,
				  uint64_t inline_max, af_zarr_layout *out,
				  af_error *err);

#endif /* ARRAYFS_TOOLS_REFS_PLAN_H */
