/* SPDX-License-Identifier: MIT */
/* Views: a header in memory followed by the array data, served at any offset. */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "arrayfs/af_view.h"
#include "bytes_i.h"
#include "lz4_i.h"
#include "ra_i.h"
#include "view_i.h"

/* Largest scalar a view byte-swaps: the halves of a complex256 (af_dtype
 * never gives more; a hand-made af_array with more is refused at open). */
#define VIEW_SWAP_MAX_SCALAR 16u

typedef enum view_data {
	VIEW_DATA_SOURCE = 1, /* bytes of the source, unchanged */
	VIEW_DATA_SWAP,       /* bytes of the source, each scalar reversed */
	VIEW_DATA_LZ4,        /* one LZ4 block of the source, decoded once */
	VIEW_DATA_WHOLE,      /* planned only: the whole source, no header */
} view_data;

struct af_view {
	af_source src;          /* a copy; what it points to is borrowed */
	uint64_t size;
	unsigned char *head;    /* the synthesized header, or NULL */
	size_t head_len;
	view_data mode;
	uint64_t data_len;      /* bytes after the header */
	uint64_t src_base;      /* source offset of data byte 0 (SOURCE, SWAP, LZ4) */
	uint64_t stored_size;   /* LZ4: bytes of the compressed block */
	unsigned scalar;        /* SWAP: bytes of one scalar */

	/* LZ4: decoded once, on the first read that needs it, under `lock`,
	 * and published with a release store; the bytes never change after */
	pthread_mutex_t lock;
	unsigned char *decoded;
	af_status lz4_status;   /* a sticky, deterministic failure (corrupt) */
	af_error lz4_err;
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
		.held = plan == VIEW_DATA_LZ4 ? a->data_size : 0,
	};
	return c;
}

/* The data part of a view that is the array data (@p plan is not WHOLE). */
static af_status view_set_data(af_view *v, const af_array *a, view_data plan,
			       af_error *err)
{
	v->data_len = a->data_size;
	v->src_base = a->data_offset;
	if (plan == VIEW_DATA_LZ4) {
		if (a->data_size > AF_LZ4_MAX_DECODED)
			return af_error_set(err, AF_E_LIMIT, a->data_offset,
					    "LZ4 data decodes to %" PRIu64
					    " bytes, more than the %llu this library decodes in memory",
					    a->data_size,
					    (unsigned long long)AF_LZ4_MAX_DECODED);
		if (a->stored_size > AF_LZ4_MAX_BLOCK)
			return af_error_set(err, AF_E_LIMIT, a->data_offset,
					    "LZ4 block of %" PRIu64
					    " bytes is larger than liblz4 can decode",
					    a->stored_size);
		v->mode = VIEW_DATA_LZ4;
		v->stored_size = a->stored_size;
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
		st = view_set_data(v, a, plan, err);
	if (st == AF_OK && af_add(v->head_len, v->data_len, &v->size))
		st = af_error_set(err, AF_E_OVERFLOW, AF_NO_OFFSET,
				  "view size overflows 64 bits");
	if (st == AF_OK && pthread_mutex_init(&v->lock, NULL) != 0)
		st = af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
				  "cannot create the view's lock");
	if (st != AF_OK) {
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
	pthread_mutex_destroy(&v->lock);
	free(v->decoded);
	free(v->head);
	free(v);
}

uint64_t af_view_size(const af_view *v)
{
	return v ? v->size : 0;
}

/* Read the compressed block and decode it; called with v->lock held. */
static af_status view_decode_locked(af_view *v, af_error *err)
{
	unsigned char *in = malloc(v->stored_size ? v->stored_size : 1);
	unsigned char *dec = malloc(v->data_len ? v->data_len : 1);
	if (!in || !dec) {
		free(in);
		free(dec);
		return af_error_set(err, AF_E_NOMEM, v->src_base,
				    "no memory to decode %" PRIu64
				    " bytes of LZ4 data",
				    v->data_len);
	}
	af_status st = af_source_read_exact(&v->src, in, v->stored_size,
					    v->src_base, err);
	if (st == AF_OK)
		st = af_lz4_decode_block(in, v->stored_size, dec, v->data_len,
					 v->src_base, err);
	free(in);
	if (st != AF_OK) {
		free(dec);
		return st;
	}
	__atomic_store_n(&v->decoded, dec, __ATOMIC_RELEASE);
	return AF_OK;
}

/*
 * The decoded data, decoding it on first use. One thread decodes while the
 * others wait on the lock. A corrupt block stays corrupt, so that failure is
 * remembered; I/O failures and a shrunken source are retried next time.
 */
static af_status view_decoded(af_view *v, const unsigned char **out,
			      af_error *err)
{
	/* every read after the first takes this path: an acquire load pairs
	 * with the release store of the decoder, so readers neither wait on
	 * one another nor race (and thread sanitizers see the hand-over) */
	*out = __atomic_load_n(&v->decoded, __ATOMIC_ACQUIRE);
	if (*out)
		return AF_OK;
	pthread_mutex_lock(&v->lock);
	af_status st = AF_OK;
	if (v->lz4_status != AF_OK) {
		st = v->lz4_status;
		if (err)
			*err = v->lz4_err;
	} else if (!__atomic_load_n(&v->decoded, __ATOMIC_ACQUIRE)) {
		af_error mine;
		af_error_clear(&mine);
		st = view_decode_locked(v, &mine);
		if (st == AF_E_CORRUPT || st == AF_E_LIMIT) {
			v->lz4_status = st;
			v->lz4_err = mine;
		}
		if (st != AF_OK && err)
			*err = mine;
	}
	*out = v->decoded;
	pthread_mutex_unlock(&v->lock);
	return st;
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
	case VIEW_DATA_SOURCE:
		st = af_source_read_exact(&v->src, out + done, rest,
					  v->src_base + d, err);
		break;
	case VIEW_DATA_SWAP:
		st = view_read_swapped(v, out + done, d, rest, err);
		break;
	case VIEW_DATA_LZ4: {
		const unsigned char *dec;
		st = view_decoded(v, &dec, err);
		if (st == AF_OK)
			memcpy(out + done, dec + d, rest);
		break;
	}
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
