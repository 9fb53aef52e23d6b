/* SPDX-License-Identifier: MIT */
/*
 * The chunk layout of B.zarr/: which axis is cut and where, chunk indices,
 * names and byte ranges, and the listing of the store's files.
 *
 * Axes are walked in "positions" from the slowest-varying (0) to the
 * fastest (ndim - 1): for C order position t is axis t, for Fortran order
 * axis ndim - 1 - t. Every rule below is written once in positions, so
 * Fortran order is C order mirrored.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrayfs/af_zarr.h"
#include "bytes_i.h"
#include "ra_i.h"
#include "zarr_i.h"

/* Listing order of the metadata files; zarr.json only where v3 applies. */
static const struct {
	const char *name;
	af_zarr_file kind;
} zarr_meta_files[] = {
	{ ".zarray", AF_ZARR_ZARRAY },
	{ ".zattrs", AF_ZARR_ZATTRS },
	{ "zarr.json", AF_ZARR_ZARR_JSON },
};

static unsigned axis_at(const af_zarr_layout *l, unsigned pos)
{
	return l->fortran ? l->ndim - 1 - pos : pos;
}

/* A dim as the chunk shape counts it: zarr wants chunk lengths >= 1. */
static uint64_t dim_or_1(const af_zarr_layout *l, unsigned axis)
{
	return l->shape[axis] ? l->shape[axis] : 1;
}

/* Chunks along @p axis: the chunk grid's extent there (all dims nonzero). */
static uint64_t grid_len(const af_zarr_layout *l, unsigned axis)
{
	unsigned pos = l->fortran ? l->ndim - 1 - axis : axis;
	unsigned split_pos = l->fortran ? l->ndim - 1 - l->split : l->split;
	if (pos < split_pos)
		return l->shape[axis];
	return pos == split_pos ? l->split_chunks : 1;
}

uint64_t af_zarr_chunk_len(const af_zarr_layout *l, unsigned axis)
{
	unsigned pos = l->fortran ? l->ndim - 1 - axis : axis;
	unsigned split_pos = l->fortran ? l->ndim - 1 - l->split : l->split;
	if (pos < split_pos)
		return 1;
	return pos == split_pos ? l->run : dim_or_1(l, axis);
}

/* The array's identity as Zarr sees it: its descr and element type. */
static af_status layout_dtype(af_zarr_layout *l, const af_array *a,
			      af_error *err)
{
	if (a->dtype.has_object || a->dtype.kind == AF_KIND_OBJECT)
		return af_error_set(err, AF_E_UNSUPPORTED, AF_NO_OFFSET,
				    "object arrays hold a pickle, not elements: no Zarr store");
	l->dtype = a->dtype;
	switch (a->format) {
	case AF_FORMAT_NPY:
		if (!a->descr)
			return af_error_set(err, AF_E_INVAL, AF_NO_OFFSET,
					    "the array has no descr");
		l->descr = a->descr;
		l->descr_long_ints = a->version_major < 3;
		break;
	case AF_FORMAT_RA:
		/* the B.npy view's descr: bfloat16 is served as its bits, "<u2" */
		if (af_ra_descr(&a->dtype, true, l->ra_descr,
				sizeof(l->ra_descr)) == 0)
			return af_error_set(err, AF_E_UNSUPPORTED, AF_NO_OFFSET,
					    "RawArray element type %" PRIu64
					    " (%" PRIu64 " bytes) has no numpy type: no Zarr store",
					    a->ra_eltype, a->dtype.itemsize);
		break;
	default:
		return af_error_set(err, AF_E_INVAL, AF_NO_OFFSET,
				    "unknown array format %d", (int)a->format);
	}
	l->v3_type = af_zarr_v3_type(&a->dtype);
	return AF_OK;
}

/*
 * The cut: the slowest position whose block of faster dims still fits in
 * @p max bytes, and the most indices of it that fit. Block sizes only grow
 * towards slower positions, so walking from the fastest one and stopping
 * at the first block that would not fit finds it; the walk never
 * multiplies past @p max, so nothing overflows. A first element larger
 * than @p max leaves the cut on the fastest axis with one element.
 */
static void layout_cut(af_zarr_layout *l, uint64_t max)
{
	const uint64_t isz = l->dtype.itemsize;
	uint64_t block = isz, step = 1, grown;
	unsigned pos = l->ndim - 1;
	while (pos > 0 && block <= max) {
		uint64_t n = dim_or_1(l, axis_at(l, pos));
		if (af_mul(block, n, &grown) || grown > max)
			break;
		block = grown;
		/* with 0-byte elements the element count is bounded only by
		 * the shape; saturate (only a store without chunks gets there) */
		if (af_mul(step, n, &step))
			step = UINT64_MAX;
		pos--;
	}
	uint64_t n = dim_or_1(l, axis_at(l, pos));
	uint64_t run = block == 0 ? n : block > max ? 1 : max / block;
	l->split = axis_at(l, pos);
	l->run = run < n ? run : n;
	l->step = step;
	l->chunk_bytes = l->run * block; /* <= max, or one element */
	uint64_t len = l->shape[l->split];
	l->split_chunks = len == 0 ? 0 : (len - 1) / l->run + 1;
}

af_status af_zarr_layout_compute(af_zarr_layout *out, const af_array *a,
				 uint64_t max_chunk_bytes, af_error *err)
{
	memset(out, 0, sizeof(*out));
	if (!a || max_chunk_bytes == 0 || (a->ndim > 0 && !a->shape))
		return af_error_set(err, AF_E_INVAL, AF_NO_OFFSET,
				    "a Zarr layout needs an array and a chunk size of at least 1 byte");
	if (a->ndim > AF_NDIM_MAX)
		return af_error_set(err, AF_E_SHAPE, AF_NO_OFFSET,
				    "%u dims is more than %u", a->ndim, AF_NDIM_MAX);
	af_zarr_layout *l = out;
	l->shape = a->shape;
	l->ndim = a->ndim;
	l->fortran = a->fortran_order;
	l->format = a->format;
	af_status st = layout_dtype(l, a, err);
	if (st != AF_OK) {
		memset(out, 0, sizeof(*out));
		return st;
	}

	uint64_t count = 1;
	bool empty = false;
	for (unsigned i = 0; i < l->ndim; i++)
		empty |= l->shape[i] == 0;
	for (unsigned i = 0; i < l->ndim && !empty; i++)
		if (af_mul(count, l->shape[i], &count))
			goto overflow;
	if (empty)
		count = 0;
	if (af_mul(count, l->dtype.itemsize, &l->data_size))
		goto overflow;

	if (l->ndim == 0) {
		l->run = l->split_chunks = l->step = l->nchunks = 1;
		l->chunk_bytes = l->dtype.itemsize;
	} else {
		layout_cut(l, max_chunk_bytes);
		/* chunks = (product of the slower dims) x chunks along the cut */
		uint64_t n = empty ? 0 : l->split_chunks;
		unsigned split_pos = l->fortran ? l->ndim - 1 - l->split : l->split;
		for (unsigned pos = 0; pos < split_pos && n; pos++)
			if (af_mul(n, l->shape[axis_at(l, pos)], &n))
				goto overflow;
		l->nchunks = n;
	}
	/* every entry index must fit a readdir offset, and a chunk file's
	 * size an st_size (both off_t) */
	if (l->nchunks > (uint64_t)INT64_MAX - 3 || l->chunk_bytes > INT64_MAX)
		goto overflow;
	return AF_OK;
overflow:
	memset(out, 0, sizeof(*out));
	return af_error_set(err, AF_E_OVERFLOW, AF_NO_OFFSET,
			    "the array's element, byte or chunk count does not fit 64 bits");
}

af_status af_zarr_layout_init(af_zarr_layout *out, const af_array *a,
			      uint64_t max_chunk_bytes, af_error *err)
{
	af_status st = af_zarr_layout_compute(out, a, max_chunk_bytes, err);
	if (st == AF_OK)
		st = af_zarr_dtype_check(out, err);
	if (st != AF_OK)
		memset(out, 0, sizeof(*out));
	return st;
}

/* The grid coordinates of chunk @p index (< nchunks) in coord[axis]. */
static void chunk_coords(const af_zarr_layout *l, uint64_t index,
			 uint64_t coord[AF_NDIM_MAX])
{
	uint64_t outer = index / l->split_chunks;
	unsigned split_pos = l->fortran ? l->ndim - 1 - l->split : l->split;
	for (unsigned pos = l->ndim; pos-- > 0;) {
		unsigned axis = axis_at(l, pos);
		if (pos > split_pos) {
			coord[axis] = 0;
		} else if (pos == split_pos) {
			coord[axis] = index % l->split_chunks;
		} else {
			coord[axis] = outer % l->shape[axis];
			outer /= l->shape[axis];
		}
	}
}

af_status af_zarr_chunk_name(const af_zarr_layout *l, uint64_t index,
			     char name[AF_ZARR_NAME_MAX], size_t *len)
{
	*len = 0;
	name[0] = '\0';
	if (index >= l->nchunks)
		return AF_E_RANGE;
	if (l->ndim == 0) {
		memcpy(name, "0", 2);
		*len = 1;
		return AF_OK;
	}
	uint64_t coord[AF_NDIM_MAX];
	chunk_coords(l, index, coord);
	/* Each coordinate is below its grid extent and the extents multiply
	 * to nchunks < 2^63, so all digits together number at most
	 * ndim + 19: with the dots, under 150 bytes for 64 dims. */
	size_t n = 0;
	for (unsigned axis = 0; axis < l->ndim; axis++)
		n += (size_t)snprintf(name + n, AF_ZARR_NAME_MAX - n, "%s%" PRIu64,
				      axis ? "." : "", coord[axis]);
	*len = n;
	return AF_OK;
}

/* One decimal part of a chunk name: "0" or no leading zero, no sign. */
static bool parse_part(const char **p, uint64_t *v)
{
	const char *s = *p;
	if (*s < '0' || *s > '9' || (s[0] == '0' && s[1] >= '0' && s[1] <= '9'))
		return false;
	*v = 0;
	for (; *s >= '0' && *s <= '9'; s++)
		if (af_mul(*v, 10, v) || af_add(*v, (uint64_t)(*s - '0'), v))
			return false;
	*p = s;
	return true;
}

af_status af_zarr_chunk_parse(const af_zarr_layout *l, const char *name,
			      uint64_t *index)
{
	*index = 0;
	if (!name || l->nchunks == 0)
		return AF_E_RANGE;
	if (l->ndim == 0)
		return strcmp(name, "0") == 0 ? AF_OK : AF_E_RANGE;
	uint64_t coord[AF_NDIM_MAX];
	const char *p = name;
	for (unsigned axis = 0; axis < l->ndim; axis++) {
		if (axis > 0 && *p++ != '.')
			return AF_E_RANGE;
		if (!parse_part(&p, &coord[axis]) ||
		    coord[axis] >= grid_len(l, axis))
			return AF_E_RANGE;
	}
	if (*p != '\0')
		return AF_E_RANGE;
	/* in range on every axis, so the index is below nchunks: no overflow */
	unsigned split_pos = l->fortran ? l->ndim - 1 - l->split : l->split;
	uint64_t outer = 0;
	for (unsigned pos = 0; pos < split_pos; pos++) {
		unsigned axis = axis_at(l, pos);
		outer = outer * l->shape[axis] + coord[axis];
	}
	*index = outer * l->split_chunks + coord[l->split];
	return AF_OK;
}

af_status af_zarr_chunk_get(const af_zarr_layout *l, uint64_t index,
			    af_zarr_chunk *out)
{
	memset(out, 0, sizeof(*out));
	if (index >= l->nchunks)
		return AF_E_RANGE;
	out->size = l->chunk_bytes;
	if (l->ndim == 0) {
		out->data_len = l->chunk_bytes;
		return AF_OK;
	}
	/*
	 * In data order the slower positions form `outer`, then the cut axis
	 * (n indices of `step` elements each). A chunk starts inside the
	 * array, so its start and length are below count and their byte
	 * counts below data_size, which init checked: nothing overflows.
	 */
	uint64_t outer = index / l->split_chunks;
	uint64_t c = index % l->split_chunks;
	uint64_t n = l->shape[l->split];
	uint64_t first = c * l->run;
	uint64_t len = n - first < l->run ? n - first : l->run;
	out->data_off = (outer * n + first) * l->step * l->dtype.itemsize;
	out->data_len = len * l->step * l->dtype.itemsize;
	return AF_OK;
}

static unsigned meta_count(const af_zarr_layout *l)
{
	return l->v3_type ? 3 : 2;
}

uint64_t af_zarr_entry_count(const af_zarr_layout *l)
{
	/* init keeps nchunks <= INT64_MAX - 3 */
	return meta_count(l) + l->nchunks;
}

af_status af_zarr_entry_at(const af_zarr_layout *l, uint64_t i,
			   af_zarr_entry *out)
{
	memset(out, 0, sizeof(*out));
	unsigned m = meta_count(l);
	if (i < m) {
		out->kind = zarr_meta_files[i].kind;
		out->name_len = strlen(zarr_meta_files[i].name);
		memcpy(out->name, zarr_meta_files[i].name, out->name_len + 1);
		return AF_OK;
	}
	out->kind = AF_ZARR_CHUNK;
	out->chunk = i - m;
	af_status st = af_zarr_chunk_name(l, i - m, out->name, &out->name_len);
	if (st != AF_OK)
		memset(out, 0, sizeof(*out));
	return st;
}

af_status af_zarr_lookup(const af_zarr_layout *l, const char *name,
			 af_zarr_entry *out, uint64_t *index)
{
	memset(out, 0, sizeof(*out));
	*index = 0;
	if (!name)
		return AF_E_RANGE;
	unsigned m = meta_count(l);
	for (unsigned i = 0; i < m; i++)
		if (strcmp(name, zarr_meta_files[i].name) == 0) {
			*index = i;
			return af_zarr_entry_at(l, i, out);
		}
	uint64_t chunk;
	if (af_zarr_chunk_parse(l, name, &chunk) != AF_OK)
		return AF_E_RANGE;
	*index = m + chunk;
	return af_zarr_entry_at(l, *index, out);
}
