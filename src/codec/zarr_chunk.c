/* SPDX-License-Identifier: MIT */
/*
 * Zarr chunk files: a byte range of the `data` view, then zeros up to the
 * full chunk size. The data part is whatever the data view serves (source
 * bytes, or decoded LZ4 / deflate); nothing is byte-swapped or copied here.
 */
#include <inttypes.h>
#include <string.h>

#include "arrayfs/af_zarr.h"
#include "bytes_i.h"

/* The chunk's data part lies inside @p data and inside the chunk. */
static bool chunk_fits(const af_zarr_chunk *c, const af_view *data)
{
	uint64_t end;
	return !af_add(c->data_off, c->data_len, &end) &&
	       end <= af_view_size(data) && c->data_len <= c->size;
}

af_status af_zarr_chunk_read(const af_zarr_chunk *c, af_view *data, void *buf,
			     size_t len, uint64_t off, size_t *nread,
			     af_error *err)
{
	*nread = 0;
	if (!c || !data || (!buf && len))
		return af_error_set(err, AF_E_INVAL, AF_NO_OFFSET,
				    "af_zarr_chunk_read needs a chunk, a data view and a buffer");
	if (!chunk_fits(c, data))
		return af_error_set(err, AF_E_INVAL, AF_NO_OFFSET,
				    "chunk bytes [%" PRIu64 ", +%" PRIu64
				    ") are not inside the %" PRIu64 "-byte data view",
				    c->data_off, c->data_len, af_view_size(data));
	if (off >= c->size || len == 0)
		return AF_OK;
	size_t n = c->size - off < len ? (size_t)(c->size - off) : len;
	size_t done = 0;
	if (off < c->data_len) {
		size_t want = c->data_len - off < n ? (size_t)(c->data_len - off) : n;
		af_status st = af_view_read(data, buf, want, c->data_off + off,
					    &done, err);
		if (st != AF_OK)
			return st;
		if (done != want)
			return af_error_set(err, AF_E_TRUNCATED, c->data_off + off + done,
					    "the data view ended at byte %" PRIu64,
					    c->data_off + off + done);
	}
	/* past the array's edge: the chunk's zero tail */
	memset((unsigned char *)buf + done, 0, n - done);
	*nread = n;
	return AF_OK;
}

af_status af_zarr_chunk_extent(const af_zarr_chunk *c, const af_view *data,
			       uint64_t off, af_extent *out)
{
	memset(out, 0, sizeof(*out));
	if (!c || !data || off >= c->size || !chunk_fits(c, data))
		return AF_E_RANGE;
	if (off >= c->data_len) {
		out->kind = AF_EXTENT_ZERO;
		out->len = c->size - off;
		return AF_OK;
	}
	if (af_view_extent(data, c->data_off + off, out) != AF_OK) {
		memset(out, 0, sizeof(*out));
		return AF_E_RANGE;
	}
	if (out->len > c->data_len - off)
		out->len = c->data_len - off;
	return AF_OK;
}
