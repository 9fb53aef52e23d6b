/* SPDX-License-Identifier: MIT */
/* Which bytes make each chunk reference full (refs_plan.h says why). */
#include "refs_plan.h"

/* Trial divisions at most: exact for extents below 2^32, quick for any. */
#define DIVISOR_TRIALS (1u << 16)

refs_chunk_source refs_chunk_where(const af_zarr_chunk *c, uint64_t off,
				   uint64_t file_size, uint64_t inline_max)
{
	if (c->data_len == c->size ||
	    (off <= file_size && c->size <= file_size - off))
		return REFS_CHUNK_RANGE;
	return c->size <= inline_max ? REFS_CHUNK_INLINE : REFS_CHUNK_NONE;
}

/* The largest divisor of @p n at most @p cap (1 if the search finds none). */
static uint64_t divisor_below(uint64_t n, uint64_t cap)
{
	uint64_t best = 1;
	for (uint64_t i = 1; i <= DIVISOR_TRIALS && i <= n / i; i++) {
		if (n % i != 0)
			continue;
		if (i <= cap && i > best)
			best = i;
		if (n / i <= cap && n / i > best)
			best = n / i;
	}
	return best;
}

refs_plan_result refs_plan_layout(const af_array *a, const af_zarr_layout *l,
				  uint64_t data_offset, uint64_t file_size,
				  uint64_t inline_max, af_zarr_layout *out,
				  af_error *err)
{
	*out = *l;
	if (l->nchunks == 0)
		return REFS_PLAN_OK;
	af_zarr_chunk last;
	af_zarr_chunk_get(l, l->nchunks - 1, &last);
	if (data_offset > UINT64_MAX - last.data_off ||
	    refs_chunk_where(&last, data_offset + last.data_off, file_size,
			     inline_max) != REFS_CHUNK_NONE)
		return REFS_PLAN_OK;
	/* a run of 1 never leaves a short chunk, so here run >= 2 */
	uint64_t slab = l->chunk_bytes / l->run;
	uint64_t fits = inline_max / slab;
	uint64_t run = divisor_below(l->shape[l->split], l->run);
	if (fits > run)
		run = fits; /* < l->run: else the last chunk went inline */
	if (run == 0)
		run = 1;
	af_status st = af_zarr_layout_init(out, a, run * slab, err);
	if (st != AF_OK)
		return REFS_PLAN_FAILED;
	af_zarr_chunk_get(out, out->nchunks - 1, &last);
	if (out->run != run || out->split != l->split ||
	    refs_chunk_where(&last, data_offset + last.data_off, file_size,
			     inline_max) == REFS_CHUNK_NONE)
		return REFS_PLAN_NONE;
	return REFS_PLAN_OK;
}
