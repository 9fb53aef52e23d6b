/* SPDX-License-Identifier: MIT */
/*
 * The metadata files of B.zarr/: .zarray and .zattrs (Zarr v2) and
 * zarr.json (Zarr v3), formatted as zarr-python formats them.
 *
 * A structured descr is a Python literal ("[('x', '<i4'), ('y', '<f8',
 * (2,))]"); zarr's list form is the same list in JSON ([["x", "<i4"],
 * ["y", "<f8", [2]]]), which zarr-python turns back into a numpy dtype
 * with np.dtype([(name, type) + tuple(shape)]). It is written from
 * dtype.c's own parse of the descr, normalizing what that round trip could
 * not read: a (type, shape) pair as a type moves its shape to the field
 * (nested sub-arrays concatenate their shapes, outer first, as numpy
 * does), a bare-int shape becomes a list (and a bare 1 or () none, which
 * numpy reads as no sub-array), and a (title, name) pair keeps only the
 * name, since zarr cannot decode titles.
 *
 * The list form has no offsets: padding (an aligned struct's, a gap between
 * offsets, an itemsize past the fields) is written as the field numpy's
 * descr gives it, an unnamed void, which zarr reads back as a void field
 * numpy names f<index>. Where a field of the descr is itself named like
 * that, numpy would refuse the duplicate and zarr raise MetadataError, so
 * every unnamed field gets f<index> lengthened with '_' past the longest
 * name of the descr instead, which no field can have (a name past
 * AF_ZARR_PAD_NAME_MAX: no store).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrayfs/af_zarr.h"
#include "arrayfs/af_zarr_group.h"
#include "dtype_sink_i.h"
#include "zarr_i.h"
#include "zarr_json_i.h"

const char *af_zarr_v3_type(const af_dtype *dt)
{
	static const char *const ints[] = { "int8", "int16", "int32", "int64" };
	static const char *const uints[] = { "uint8", "uint16", "uint32", "uint64" };
	static const char *const floats[] = { NULL, "float16", "float32", "float64" };
	int lg = dt->itemsize == 1 ? 0 : dt->itemsize == 2 ? 1 :
		 dt->itemsize == 4 ? 2 : dt->itemsize == 8 ? 3 : -1;
	switch (dt->kind) {
	case AF_KIND_BOOL:
		return dt->itemsize == 1 ? "bool" : NULL;
	case AF_KIND_INT:
		return lg >= 0 ? ints[lg] : NULL;
	case AF_KIND_UINT:
		return lg >= 0 ? uints[lg] : NULL;
	case AF_KIND_FLOAT:
		return lg >= 0 ? floats[lg] : NULL;
	case AF_KIND_COMPLEX:
		return dt->itemsize == 8 ? "complex64" :
		       dt->itemsize == 16 ? "complex128" : NULL;
	default:
		return NULL;
	}
}

/*
 * Writes zarr's list form of a structured descr from dtype.c's parse of it
 * (dtype_sink_i.h). A field's sub-array dims are collected until the field
 * ends, since a (type, shape) pair's shape follows its type and each shape
 * reported later is outside the earlier ones.
 */
typedef struct zarr_dtype_sink {
	af_dtype_sink base;
	zj *w;                              /* NULL: a check, nothing written */
	unsigned jdepth;                    /* a check: the JSON nesting w would have */
	unsigned depth;                     /* fields open */
	struct field_dims {
		uint64_t dims[AF_NDIM_MAX];
		unsigned n;
		uint64_t index;             /* its place in its list */
	} fields[AF_DTYPE_MAX_DEPTH + 1];
	uint64_t next_index[AF_DTYPE_MAX_DEPTH + 2]; /* per open list */
	char *pad_name;                     /* NULL: unnamed fields stay "" */
	size_t pad_len;                     /* longer than every field name */
	af_status failed;
} zarr_dtype_sink;

/*
 * The first walk over a descr: whether a field is named as numpy names an
 * unnamed one (f<digits>), and the longest name. Titles do not count: the
 * list form leaves them out.
 */
typedef struct name_scan {
	af_dtype_sink base;
	bool numbered;
	size_t longest;
} name_scan;

static void name_scan_event(af_dtype_sink *base, af_dtype_event ev,
			    const char *text, size_t len, bool title,
			    const uint64_t *dims, unsigned n)
{
	name_scan *ns = (name_scan *)base;
	(void)dims;
	(void)n;
	if (ev != AF_DTYPE_EV_NAME || title)
		return;
	if (len > ns->longest)
		ns->longest = len;
	size_t digits = 1;
	while (digits < len && text[digits] >= '0' && text[digits] <= '9')
		digits++;
	if (len >= 2 && text[0] == 'f' && digits == len)
		ns->numbered = true;
}

/* zj_begin, or in a check the nesting and limit it would meet */
static void sink_begin(zarr_dtype_sink *z, char open)
{
	if (z->w)
		zj_begin(z->w, open);
	else if (z->jdepth >= ZJ_MAX_DEPTH)
		z->failed = AF_E_LIMIT;
	else
		z->jdepth++;
}

static void sink_end(zarr_dtype_sink *z, char close)
{
	if (z->w)
		zj_end(z->w, close);
	else if (z->jdepth > 0)
		z->jdepth--;
}

/* Strings and numbers can only fail for memory: a check skips them. */
static void sink_str(zarr_dtype_sink *z, const char *text, size_t len)
{
	if (z->w)
		zj_str(z->w, text, len);
}

static void sink_u64(zarr_dtype_sink *z, uint64_t v)
{
	if (z->w)
		zj_u64(z->w, v);
}

/* Beyond this, padding names would make .zarray huge: no B.zarr. */
#define AF_ZARR_PAD_NAME_MAX 4096
/* "f" and a 64-bit index */
#define AF_ZARR_PAD_INDEX_MAX 21

/* An unnamed field's name: f<index>, then '_' up to pad_len if shorter. */
static void put_pad_name(zarr_dtype_sink *z, uint64_t index)
{
	int n = snprintf(z->pad_name, AF_ZARR_PAD_INDEX_MAX + 1, "f%llu",
			 (unsigned long long)index);
	if (n < 0) {
		z->failed = AF_E_LIMIT;
		return;
	}
	size_t len = (size_t)n;
	if (len < z->pad_len) {
		memset(z->pad_name + len, '_', z->pad_len - len);
		len = z->pad_len;
	}
	sink_str(z, z->pad_name, len);
}

static void zarr_dtype_event(af_dtype_sink *base, af_dtype_event ev,
			     const char *text, size_t len, bool title,
			     const uint64_t *dims, unsigned n)
{
	zarr_dtype_sink *z = (zarr_dtype_sink *)base;
	struct field_dims *f = z->depth ? &z->fields[z->depth - 1] : NULL;
	if (z->failed)
		return;
	switch (ev) {
	case AF_DTYPE_EV_TYPE:
		sink_str(z, text, len);
		return;
	case AF_DTYPE_EV_NAME:
		if (title)
			return;
		if (len == 0 && z->pad_name && f)
			put_pad_name(z, f->index);
		else
			sink_str(z, text, len);
		return;
	case AF_DTYPE_EV_LIST_BEGIN:
		z->next_index[z->depth] = 0;
		sink_begin(z, '[');
		return;
	case AF_DTYPE_EV_LIST_END:
		sink_end(z, ']');
		return;
	case AF_DTYPE_EV_FIELD_BEGIN:
		if (z->depth > AF_DTYPE_MAX_DEPTH) {
			z->failed = AF_E_LIMIT;
			return;
		}
		z->fields[z->depth].n = 0;
		z->fields[z->depth].index = z->next_index[z->depth]++;
		z->depth++;
		sink_begin(z, '[');
		return;
	case AF_DTYPE_EV_SHAPE:
		if (!f || n > AF_NDIM_MAX || f->n + n > AF_NDIM_MAX) {
			z->failed = AF_E_LIMIT;
			return;
		}
		memmove(f->dims + n, f->dims, f->n * sizeof(f->dims[0]));
		memcpy(f->dims, dims, n * sizeof(dims[0]));
		f->n += n;
		return;
	case AF_DTYPE_EV_FIELD_END:
		if (!f)
			return;
		if (f->n > 0) {
			sink_begin(z, '[');
			for (unsigned i = 0; i < f->n; i++)
				sink_u64(z, f->dims[i]);
			sink_end(z, ']');
		}
		sink_end(z, ']');
		z->depth--;
		return;
	}
}

/* The B.npy view's descr as text: .npy as written, .ra derived. */
static const char *layout_descr(const af_zarr_layout *l)
{
	return l->format == AF_FORMAT_RA ? l->ra_descr : l->descr;
}

/*
 * Walk a structured descr through the sink: into @p w, or with @p w NULL
 * only to learn whether writing it would succeed (the nesting starts
 * inside the .zarray's object, where the dtype value is written).
 */
static af_status walk_struct_dtype(const af_zarr_layout *l, zj *w,
				   af_error *err)
{
	zarr_dtype_sink *sink = calloc(1, sizeof(*sink));
	if (!sink)
		return af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
				    "out of memory writing a Zarr dtype");
	sink->base.event = zarr_dtype_event;
	sink->w = w;
	sink->jdepth = 1;
	af_dtype dt;
	name_scan names = { .base.event = name_scan_event };
	size_t len = strlen(l->descr);
	af_status st = af_dtype_parse_observed(l->descr, len,
					       l->descr_long_ints, &names.base,
					       &dt, err);
	if (st == AF_OK && names.numbered) {
		sink->pad_len = names.longest + 1;
		if (sink->pad_len > AF_ZARR_PAD_NAME_MAX)
			st = af_error_set(err, AF_E_LIMIT, AF_NO_OFFSET,
					  "a padding field's name would need %zu "
					  "bytes to differ from every field name",
					  sink->pad_len);
		else if (!(sink->pad_name = malloc(sink->pad_len +
						       AF_ZARR_PAD_INDEX_MAX + 1)))
			st = af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
					  "out of memory writing a Zarr dtype");
	}
	if (st == AF_OK)
		st = af_dtype_parse_observed(l->descr, len, l->descr_long_ints,
					     &sink->base, &dt, err);
	if (st == AF_OK && sink->failed)
		st = af_error_set(err, sink->failed, AF_NO_OFFSET,
				  "the descr's sub-arrays have more than %u dims, "
				  "or it nests too deeply", AF_NDIM_MAX);
	free(sink->pad_name);
	free(sink);
	return st;
}

static bool is_struct_npy(const af_zarr_layout *l)
{
	return l->format == AF_FORMAT_NPY && l->dtype.kind == AF_KIND_STRUCT;
}

/* The v2 "dtype" value: the B.npy view's descr in zarr's form. */
static af_status put_v2_dtype(const af_zarr_layout *l, zj *w, af_error *err)
{
	if (!is_struct_npy(l)) {
		zj_cstr(w, layout_descr(l));
		return AF_OK;
	}
	return walk_struct_dtype(l, w, err);
}

af_status af_zarr_dtype_check(const af_zarr_layout *l, af_error *err)
{
	if (!is_struct_npy(l))
		return AF_OK;
	af_error why;
	af_error_clear(&why);
	af_status st = walk_struct_dtype(l, NULL, &why);
	if (st == AF_E_DTYPE || st == AF_E_LIMIT)
		return af_error_set(err, AF_E_UNSUPPORTED, AF_NO_OFFSET,
				    "no Zarr dtype for this structured type: %s",
				    why.msg);
	if (st != AF_OK && err)
		*err = why;
	return st;
}

static void put_shape(const af_zarr_layout *l, zj *w)
{
	zj_begin(w, '[');
	for (unsigned i = 0; i < l->ndim; i++)
		zj_u64(w, l->shape[i]);
	zj_end(w, ']');
}

static void put_chunks(const af_zarr_layout *l, zj *w)
{
	zj_begin(w, '[');
	for (unsigned i = 0; i < l->ndim; i++)
		zj_u64(w, af_zarr_chunk_len(l, i));
	zj_end(w, ']');
}

/* ["dim_0", ...] or ["LEAF_dim_0", ...]: af_zarr_dim_name's names. */
static void put_dim_names(const af_zarr_layout *l, const af_zarr_dims *dims,
			  zj *w)
{
	zj_begin(w, '[');
	for (unsigned i = 0; i < l->ndim; i++) {
		char name[AF_ZARR_DIM_NAME_MAX];
		size_t n = af_zarr_dim_name(dims ? dims->leaf : NULL,
					    dims ? dims->leaf_len : 0, i, name);
		zj_str(w, name, n);
	}
	zj_end(w, ']');
}

/* {"_ARRAY_DIMENSIONS": [...]}: the names xarray reads. */
static void put_attributes(const af_zarr_layout *l, const af_zarr_dims *dims,
			   zj *w)
{
	zj_begin(w, '{');
	zj_key(w, "_ARRAY_DIMENSIONS");
	put_dim_names(l, dims, w);
	zj_end(w, '}');
}

/* .zarray, keys sorted as zarr-python writes them. */
static af_status put_zarray(const af_zarr_layout *l, zj *w, af_error *err)
{
	zj_begin(w, '{');
	zj_key(w, "chunks");
	put_chunks(l, w);
	zj_key(w, "compressor");
	zj_literal(w, "null");
	zj_key(w, "dimension_separator");
	zj_cstr(w, ".");
	zj_key(w, "dtype");
	af_status st = put_v2_dtype(l, w, err);
	if (st != AF_OK)
		return st;
	zj_key(w, "fill_value");
	zj_literal(w, "null");
	zj_key(w, "filters");
	zj_literal(w, "null");
	zj_key(w, "order");
	zj_cstr(w, l->fortran ? "F" : "C");
	zj_key(w, "shape");
	put_shape(l, w);
	zj_key(w, "zarr_format");
	zj_u64(w, 2);
	zj_end(w, '}');
	return AF_OK;
}

/* What put_zarray reads, compared: keep the two in step. */
bool af_zarr_zarray_same(const af_zarr_layout *a, const af_zarr_layout *b)
{
	if (a->ndim != b->ndim || a->fortran != b->fortran ||
	    a->format != b->format || a->dtype.kind != b->dtype.kind ||
	    a->descr_long_ints != b->descr_long_ints)
		return false;
	for (unsigned i = 0; i < a->ndim; i++)
		if (a->shape[i] != b->shape[i] ||
		    af_zarr_chunk_len(a, i) != af_zarr_chunk_len(b, i))
			return false;
	const char *da = layout_descr(a), *db = layout_descr(b);
	return da && db && strcmp(da, db) == 0;
}

static void put_zero(const af_zarr_layout *l, zj *w)
{
	switch (l->dtype.kind) {
	case AF_KIND_BOOL:
		zj_literal(w, "false");
		return;
	case AF_KIND_FLOAT:
		zj_literal(w, "0.0");
		return;
	case AF_KIND_COMPLEX:
		zj_begin(w, '[');
		zj_literal(w, "0.0");
		zj_literal(w, "0.0");
		zj_end(w, ']');
		return;
	default:
		zj_literal(w, "0");
	}
}

/* A {"name": ..., "configuration": {...}} codec or encoding object, open. */
static void begin_named(zj *w, const char *name)
{
	zj_begin(w, '{');
	zj_key(w, "name");
	zj_cstr(w, name);
	zj_key(w, "configuration");
	zj_begin(w, '{');
}

static void end_named(zj *w)
{
	zj_end(w, '}');
	zj_end(w, '}');
}

/* zarr.json in the order of the v3 specification's example. */
static void put_zarr_json(const af_zarr_layout *l, const af_zarr_dims *dims,
			  zj *w)
{
	zj_begin(w, '{');
	zj_key(w, "zarr_format");
	zj_u64(w, 3);
	zj_key(w, "node_type");
	zj_cstr(w, "array");
	zj_key(w, "shape");
	put_shape(l, w);
	zj_key(w, "data_type");
	zj_cstr(w, l->v3_type);
	zj_key(w, "chunk_grid");
	begin_named(w, "regular");
	zj_key(w, "chunk_shape");
	put_chunks(l, w);
	end_named(w);
	zj_key(w, "chunk_key_encoding");
	begin_named(w, "v2");
	zj_key(w, "separator");
	zj_cstr(w, ".");
	end_named(w);
	zj_key(w, "fill_value");
	put_zero(l, w);
	zj_key(w, "codecs");
	zj_begin(w, '[');
	if (l->fortran && l->ndim >= 2) {
		/* the stored bytes are the C-order array of the reversed shape */
		begin_named(w, "transpose");
		zj_key(w, "order");
		zj_begin(w, '[');
		for (unsigned i = l->ndim; i-- > 0;)
			zj_u64(w, i);
		zj_end(w, ']');
		end_named(w);
	}
	begin_named(w, "bytes");
	/* v3 wants no endian for 1-byte types; an empty configuration keeps
	 * readers that require the member happy */
	if (l->dtype.itemsize > 1) {
		zj_key(w, "endian");
		zj_cstr(w, l->dtype.byteorder == '>' ? "big" : "little");
	}
	end_named(w);
	zj_end(w, ']');
	zj_key(w, "attributes");
	put_attributes(l, dims, w);
	if (dims) {
		zj_key(w, "dimension_names");
		put_dim_names(l, dims, w);
	}
	zj_end(w, '}');
}

af_status af_zarr_meta_put(const af_zarr_layout *l, af_zarr_file which,
			   const af_zarr_dims *dims, zj *w, af_error *err)
{
	switch (which) {
	case AF_ZARR_ZARRAY:
		return put_zarray(l, w, err);
	case AF_ZARR_ZATTRS:
		put_attributes(l, dims, w);
		return AF_OK;
	case AF_ZARR_ZARR_JSON:
		if (!l->v3_type)
			return af_error_set(err, AF_E_RANGE, AF_NO_OFFSET,
					    "%s has no Zarr v3 data type: no zarr.json",
					    layout_descr(l));
		put_zarr_json(l, dims, w);
		return AF_OK;
	default:
		return af_error_set(err, AF_E_RANGE, AF_NO_OFFSET,
				    "B.zarr/ has no metadata file of kind %d",
				    (int)which);
	}
}

af_status af_zarr_text_dims(const af_zarr_layout *l, af_zarr_file which,
			    const af_zarr_dims *dims, char **out, size_t *len,
			    af_error *err)
{
	*out = NULL;
	*len = 0;
	zj w;
	zj_init(&w);
	af_status st = af_zarr_meta_put(l, which, dims, &w, err);
	if (st != AF_OK) {
		char *drop;
		size_t n;
		zj_finish(&w, &drop, &n);
		free(drop);
		return st;
	}
	st = zj_finish(&w, out, len);
	if (st != AF_OK)
		return af_error_set(err, st, AF_NO_OFFSET,
				    st == AF_E_LIMIT ? "Zarr metadata nested too deeply" :
						       "out of memory writing Zarr metadata");
	return AF_OK;
}

af_status af_zarr_text(const af_zarr_layout *l, af_zarr_file which,
		       char **out, size_t *len, af_error *err)
{
	return af_zarr_text_dims(l, which, NULL, out, len, err);
}
