/* SPDX-License-Identifier: MIT */
/* Views: a header in memory followed by the array data, served at any offset. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "arrayfs/af_view.h"
#include "bytes_i.h"
#include "lz4/lz4_i.h"
#include "ra_i.h"
#include "view_i.h"

/* Largest scalar a view byte-swaps: the halves of a complex256 (af_dtype
 * never gives more; a hand-made af_array with more is refused at open). */
#define VIEW_SWAP_MAX_SCALAR 16u

typedef enum view_data {
	VIEW_DATA_SOURCE = 1, /* bytes of the source, unchanged */
	VIEW_DATA_SWAP,       /* bytes of the source, each scalar reversed */
	VIEW_DATA_LZ4,        /* one LZ4 block of the source, decoded */
	VIEW_DATA_WHOLE,      /* planned only: the whole source, no header */
} view_data;

struct af_view {
	af_source src;          /* a copy; what it points to is borrowed */
	uint64_t size;
	unsigned char *head;    /* the synthesized header, or NULL */
	size_t head_len;
	view_data mode;
	uint64_t data_len;      /* bytes after the header */
	uint64_t src_base;      /* source offset of data byte 0 (SOURCE, SWAP) */
	unsigned scalar;        /* SWAP: bytes of one scalar */
	af_lz4_index *lz4;      /* LZ4: a reference, maybe shared; thread-safe */
};

/*
 * Where the bytes of view @p kind of @p a come from: the one rule behind
 * both af_view_open and af_view_cost. The .npy view of a .npy and the .ra
 * view of a .ra are the whole source. Every other view is a header, then
 * the array data: decoded when the .ra says LZ4; byte-swapped in the .ra
 * view of big-endian numbers (RawArray's numeric eltypes are
 * little-endian, while eltype 0 - bytes, unicode, void, structured - is
 * opaque to its readers, so those bytes stay as stored and the dtype file
 * says how to read them); else as stored.
 */
static view_data view_plan(const af_array *a, af_view_kind kind)
{
	if (!a->headerless &&
	    ((kind == AF_VIEW_NPY && a->format == AF_FORMAT_NPY) ||
	     (kind == AF_VIEW_RA && a->format == AF_FORMAT_RA)))
		return VIEW_DATA_WHOLE;
	if (a->compression == AF_COMP_LZ4)
		return VIEW_DATA_LZ4;
	uint64_t eltype, elbyte;
	af_ra_type_of(&a->dtype, &eltype, &elbyte);
	if (kind == AF_VIEW_RA && eltype != RA_ELTYPE_USER &&
	    a->dtype.byteorder == '>' && a->dtype.scalar_size > 1)
		return VIEW_DATA_SWAP;
	return VIEW_DATA_SOURCE;
}

af_cost af_view_cost(const af_array *a, const af_zip_entry *member,
		     af_view_kind kind)
{
	view_data plan = view_plan(a, kind);
	bool computed = plan == VIEW_DATA_SWAP || plan == VIEW_DATA_LZ4;
	af_cost c = {
		/* an empty array has no data to compute */
		.decodes = (computed && a->data_size > 0) ||
			   (member && member->method != AF_ZIP_STORED),
		/* its LZ4 index, read to the end (shared or not) */
		.held = plan == VIEW_DATA_LZ4 && a->data_size > 0 ?
			af_lz4_index_bound(a->data_size) : 0,
		.lz4_index = plan == VIEW_DATA_LZ4,
	};
	return c;
}

/* The data part of a view that is the array data (@p plan is not WHOLE);
 * an LZ4 view reads through @p lz4, or an index of its own. */
static af_status view_set_data(af_view *v, const af_array *a, view_data plan,
			       af_lz4_index *lz4, af_error *err)
{
	v->data_len = a->data_size;
	v->src_base = a->data_offset;
	if (plan == VIEW_DATA_LZ4) {
		v->mode = VIEW_DATA_LZ4;
		if (!lz4)
			return af_lz4_index_open(&v->lz4, a, &v->src, err);
		if (!lz4_index_fits(lz4, a))
			return af_error_set(err, AF_E_INVAL, a->data_offset,
					    "the LZ4 index given is of another array");
		v->lz4 = af_lz4_index_hold(lz4);
		return AF_OK;
	}
	if (a->stored_size != a->data_size)
		return af_error_set(err, AF_E_INVAL, a->data_offset,
				    "uncompressed array stores %" PRIu64
				    " bytes but has %" PRIu64,
				    a->stored_size, a->data_size);
	const af_dtype *dt = &a->dtype;
	if (plan == VIEW_DATA_SWAP) {
		if (dt->scalar_size > VIEW_SWAP_MAX_SCALAR ||
		    a->data_size % dt->scalar_size != 0)
			return af_error_set(err, AF_E_UNSUPPORTED, AF_NO_OFFSET,
					    "cannot byte-swap %" PRIu64
					    "-byte scalars in %" PRIu64 " bytes",
					    dt->scalar_size, a->data_size);
		v->mode = VIEW_DATA_SWAP;
		v->scalar = (unsigned)dt->scalar_size;
		return AF_OK;
	}
	v->mode = VIEW_DATA_SOURCE;
	return AF_OK;
}

/* The whole source, unchanged: the .npy view of a .npy, the .ra view of a .ra. */
static void view_set_whole_source(af_view *v)
{
	v->mode = VIEW_DATA_SOURCE;
	v->src_base = 0;
	v->data_len = v->src.size;
}

af_status af_view_open(af_view **out, const af_array *a, const af_source *src,
		       af_view_kind kind, af_error *err)
{
	return af_view_open_shared(out, a, src, kind, NULL, err);
}

af_status af_view_open_shared(af_view **out, const af_array *a,
			      const af_source *src, af_view_kind kind,
			      af_lz4_index *lz4, af_error *err)
{
	*out = NULL;
	if (!a || !src || !src->pread)
		return af_error_set(err, AF_E_INVAL, AF_NO_OFFSET,
				    "a view needs an array and a source");
	/* an object array's data is a pickle, never interpreted: only its
	 * .npy file is served, as the bytes of the source */
	if (a->dtype.has_object &&
	    !(kind == AF_VIEW_NPY && a->format == AF_FORMAT_NPY))
		return af_error_set(err, AF_E_UNSUPPORTED, AF_NO_OFFSET,
				    "object arrays hold a pickle, not elements: no data or .ra view");
	uint64_t end;
	if (af_add(a->data_offset, a->stored_size, &end) || end > src->size)
		return af_error_set(err, AF_E_TRUNCATED, src->size,
				    "the source has %" PRIu64 " bytes, too few for %"
				    PRIu64 " bytes of array data at byte %" PRIu64,
				    src->size, a->stored_size, a->data_offset);
	if (a->format != AF_FORMAT_NPY && a->format != AF_FORMAT_RA)
		return af_error_set(err, AF_E_INVAL, AF_NO_OFFSET,
				    "unknown array format %d", (int)a->format);

	af_view *v = calloc(1, sizeof(*v));
	if (!v)
		return af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
				    "no memory for a view");
	v->src = *src;
	af_status st = AF_OK;
	view_data plan = view_plan(a, kind);
	switch (kind) {
	case AF_VIEW_DATA:
		break;
	case AF_VIEW_NPY:
		if (plan != VIEW_DATA_WHOLE)
			st = af_view_npy_header(a, &v->head, &v->head_len, err);
		break;
	case AF_VIEW_RA:
		if (plan != VIEW_DATA_WHOLE)
			st = af_view_ra_header(a, &v->head, &v->head_len, err);
		break;
	default:
		st = af_error_set(err, AF_E_INVAL, AF_NO_OFFSET,
				  "unknown view kind %d", (int)kind);
	}
	if (st == AF_OK && plan == VIEW_DATA_WHOLE)
		view_set_whole_source(v);
	else if (st == AF_OK)
		st = view_set_data(v, a, plan, lz4, err);
	if (st == AF_OK && af_add(v->head_len, v->data_len, &v->size))
		st = af_error_set(err, AF_E_OVERFLOW, AF_NO_OFFSET,
				  "view size overflows 64 bits");
	if (st != AF_OK) {
		af_lz4_index_close(v->lz4);
		free(v->head);
		free(v);
		return st;
	}
	*out = v;
	return AF_OK;
}

void af_view_close(af_view *v)
{
	if (!v)
		return;
	af_lz4_index_close(v->lz4);
	free(v->head);
	free(v);
}

uint64_t af_view_size(const af_view *v)
{
	return v ? v->size : 0;
}

static void swap_scalars(unsigned char *p, size_t len, unsigned scalar)
{
	size_t at = 0;
	/* memcpy + bswap compiles to plain loads and stores: no alignment needed */
	switch (scalar) {
	case 2:
		for (; at + 2 <= len; at += 2) {
			uint16_t x;
			memcpy(&x, p + at, 2);
			x = __builtin_bswap16(x);
			memcpy(p + at, &x, 2);
		}
		return;
	case 4:
		for (; at + 4 <= len; at += 4) {
			uint32_t x;
			memcpy(&x, p + at, 4);
			x = __builtin_bswap32(x);
			memcpy(p + at, &x, 4);
		}
		return;
	case 8:
		for (; at + 8 <= len; at += 8) {
			uint64_t x;
			memcpy(&x, p + at, 8);
			x = __builtin_bswap64(x);
			memcpy(p + at, &x, 8);
		}
		return;
	}
	for (; at + scalar <= len; at += scalar)
		for (unsigned i = 0, j = scalar - 1; i < j; i++, j--) {
			unsigned char t = p[at + i];
			p[at + i] = p[at + j];
			p[at + j] = t;
		}
}

/*
 * Data bytes [d, d + n) of a byte-swapped view. Whole scalars are read
 * straight into the caller's buffer and reversed there (no allocation, no
 * second copy: this runs for every FUSE read); only a scalar cut by either
 * end of the slice goes through a one-scalar stack buffer.
 */
static af_status view_read_swapped(const af_view *v, unsigned char *out,
				   uint64_t d, size_t n, af_error *err)
{
	const unsigned s = v->scalar;
	while (n > 0) {
		size_t skip = (size_t)(d % s);
		af_status st;
		if (skip == 0 && n >= s) {
			size_t whole = n - n % s;
			st = af_source_read_exact(&v->src, out, whole,
						  v->src_base + d, err);
			if (st != AF_OK)
				return st;
			swap_scalars(out, whole, s);
			out += whole;
			d += whole;
			n -= whole;
			continue;
		}
		/* data_len is a multiple of s, so the whole scalar exists */
		unsigned char one[VIEW_SWAP_MAX_SCALAR];
		st = af_source_read_exact(&v->src, one, s, v->src_base + d - skip,
					  err);
		if (st != AF_OK)
			return st;
		swap_scalars(one, s, s);
		size_t c = s - skip < n ? s - skip : n;
		memcpy(out, one + skip, c);
		out += c;
		d += c;
		n -= c;
	}
	return AF_OK;
}

af_status af_view_read(af_view *v, void *buf, size_t len, uint64_t off,
		       size_t *nread, af_error *err)
{
	*nread = 0;
	if (!v || (!buf && len))
		return af_error_set(err, AF_E_INVAL, AF_NO_OFFSET,
				    "af_view_read needs a view and a buffer");
	if (off >= v->size || len == 0)
		return AF_OK;
	size_t n = v->size - off < len ? (size_t)(v->size - off) : len;
	unsigned char *out = buf;
	size_t done = 0;
	if (off < v->head_len) {
		size_t c = v->head_len - (size_t)off;
		if (c > n)
			c = n;
		memcpy(out, v->head + off, c);
		done = c;
	}
	if (done == n) {
		*nread = n;
		return AF_OK;
	}
	uint64_t d = off + done - v->head_len;
	size_t rest = n - done;
	af_status st = AF_OK;
	switch (v->mode) {
	case VIEW_DATA_WHOLE:   /* a plan only: such a view reads as SOURCE */
	case VIEW_DATA_SOURCE:
		st = af_source_read_exact(&v->src, out + done, rest,
					  v->src_base + d, err);
		break;
	case VIEW_DATA_SWAP:
		st = view_read_swapped(v, out + done, d, rest, err);
		break;
	case VIEW_DATA_LZ4:
		st = af_lz4_index_read(v->lz4, out + done, rest, d, err);
		break;
	}
	if (st != AF_OK)
		return st;
	*nread = n;
	return AF_OK;
}

af_status af_view_extent(const af_view *v, uint64_t off, af_extent *out)
{
	memset(out, 0, sizeof(*out));
	if (!v || off >= v->size)
		return AF_E_RANGE;
	if (off < v->head_len) {
		out->kind = AF_EXTENT_MEMORY;
		out->mem = v->head + off;
		out->len = v->head_len - off;
		return AF_OK;
	}
	uint64_t d = off - v->head_len;
	out->len = v->data_len - d;
	if (v->mode == VIEW_DATA_SOURCE) {
		out->kind = AF_EXTENT_SOURCE;
		out->src_off = v->src_base + d;
	} else {
		out->kind = AF_EXTENT_DECODED;
	}
	return AF_OK;
}
