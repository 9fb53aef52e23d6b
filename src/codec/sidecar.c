/* SPDX-License-Identifier: MIT */
/*
 * Sidecar headers for `data`: ENVI (`data.hdr`) and detached NRRD
 * (`B.nhdr`). Both describe `data` exactly as stored: the dims fastest
 * first, the stored byte order, no offset. The rules and their limits are
 * in af_sidecar.h.
 */
#include <stdlib.h>
#include <string.h>

#include "arrayfs/af_sidecar.h"
#include "textbuf_i.h"

/* GDAL, QGIS and ENVI hold raster sizes in C ints. */
#define ENVI_DIM_MAX 2147483647u
#define ENVI_NDIM_MAX 3u
/* teem's NRRD_DIM_MAX: the most axes unu, ITK and Slicer read */
#define NRRD_AXES_MAX 16u
/* the longest text: NRRD with 16 axes of 20 digits and its kinds line */
#define SIDECAR_TEXT_MAX 1024u

/* A fixed buffer large enough for any sidecar (SIDECAR_TEXT_MAX). */
typedef struct sidecar_text {
	char buf[SIDECAR_TEXT_MAX];
	size_t len;
} sidecar_text;

/* The text is made of literals and numbers only: no printf, which cost
 * more than the rest of a listing's work for an array (every array
 * listed has its sidecars' sizes made). The limits above keep every text
 * well inside the buffer; past it, the text is cut. */
static void put_n(sidecar_text *t, const char *s, size_t n)
{
	size_t room = sizeof(t->buf) - 1 - t->len;
	if (n > room)
		n = room;
	memcpy(t->buf + t->len, s, n);
	t->len += n;
	t->buf[t->len] = '\0';
}

static void put(sidecar_text *t, const char *s)
{
	put_n(t, s, strlen(s));
}

static void put_u(sidecar_text *t, uint64_t v)
{
	char num[TB_U64_DIGITS];
	put_n(t, num, tb_u64_digits(num, v));
}

/* "NAME = V\n" */
static void put_line_u(sidecar_text *t, const char *name, uint64_t v)
{
	put(t, name);
	put_u(t, v);
	put(t, "\n");
}

/* Axis @p i counted from the fastest-varying one. */
static uint64_t fastest_dim(const af_array *a, unsigned i)
{
	return a->shape[a->fortran_order ? i : a->ndim - 1 - i];
}

static const char *byte_order_name(const af_array *a)
{
	return a->dtype.byteorder == '>' ? "big" : "little";
}

/* The ENVI "data type" code of @p dt, or 0 where ENVI has none. */
static int envi_type(const af_dtype *dt)
{
	uint64_t n = dt->itemsize;
	switch (dt->kind) {
	case AF_KIND_BOOL:
		return n == 1 ? 1 : 0;
	case AF_KIND_UINT:
		return n == 1 ? 1 : n == 2 ? 12 : n == 4 ? 13 : n == 8 ? 15 : 0;
	case AF_KIND_INT:
		return n == 2 ? 2 : n == 4 ? 3 : n == 8 ? 14 : 0;
	case AF_KIND_FLOAT:
		return n == 4 ? 4 : n == 8 ? 5 : 0;
	case AF_KIND_COMPLEX:
		return n == 8 ? 6 : n == 16 ? 9 : 0;
	default:
		return 0;
	}
}

/* The NRRD type of @p dt (of each half for complex), or NULL. */
static const char *nrrd_type(const af_dtype *dt)
{
	static const char *const ints[] = { "int8", "int16", NULL, "int32",
					    NULL, NULL, NULL, "int64" };
	static const char *const uints[] = { "uint8", "uint16", NULL, "uint32",
					     NULL, NULL, NULL, "uint64" };
	uint64_t n = dt->itemsize;
	switch (dt->kind) {
	case AF_KIND_BOOL:
		return n == 1 ? "uint8" : NULL;
	case AF_KIND_INT:
		return n >= 1 && n <= 8 ? ints[n - 1] : NULL;
	case AF_KIND_UINT:
		return n >= 1 && n <= 8 ? uints[n - 1] : NULL;
	case AF_KIND_FLOAT:
		return n == 4 ? "float" : n == 8 ? "double" : NULL;
	case AF_KIND_COMPLEX:
		return n == 8 ? "float" : n == 16 ? "double" : NULL;
	default:
		return NULL;
	}
}

static af_status no_sidecar(af_error *err, const char *format,
			    const af_array *a, const char *why)
{
	return af_error_set(err, AF_E_UNSUPPORTED, AF_NO_OFFSET,
			    "%s cannot describe %s: %s", format,
			    a->descr ? a->descr : "this array", why);
}

static bool has_zero_dim(const af_array *a)
{
	for (unsigned i = 0; i < a->ndim; i++)
		if (a->shape[i] == 0)
			return true;
	return false;
}

static af_status envi_text(const af_array *a, sidecar_text *t, af_error *err)
{
	int type = envi_type(&a->dtype);
	if (type == 0)
		return no_sidecar(err, "ENVI", a, "not an ENVI data type");
	if (a->ndim < 1 || a->ndim > ENVI_NDIM_MAX)
		return no_sidecar(err, "ENVI", a, "ENVI holds 1 to 3 dims");
	uint64_t dim[ENVI_NDIM_MAX] = { 1, 1, 1 };
	for (unsigned i = 0; i < a->ndim; i++) {
		dim[i] = fastest_dim(a, i);
		if (dim[i] == 0 || dim[i] > ENVI_DIM_MAX)
			return no_sidecar(err, "ENVI", a,
					  "every dim must be 1 to 2^31-1");
	}
	put(t, "ENVI\n");
	put_line_u(t, "samples = ", dim[0]);
	put_line_u(t, "lines = ", dim[1]);
	put_line_u(t, "bands = ", dim[2]);
	put(t, "header offset = 0\n");
	put(t, "file type = ENVI Standard\n");
	put_line_u(t, "data type = ", (uint64_t)type);
	put(t, "interleave = bsq\n");
	put_line_u(t, "byte order = ", a->dtype.byteorder == '>' ? 1 : 0);
	return AF_OK;
}

static af_status nrrd_text(const af_array *a, sidecar_text *t, af_error *err)
{
	const char *type = nrrd_type(&a->dtype);
	if (!type)
		return no_sidecar(err, "NRRD", a, "not a NRRD type");
	bool complex = a->dtype.kind == AF_KIND_COMPLEX;
	unsigned axes = a->ndim + (complex ? 1 : 0);
	if (a->ndim == 0)
		return no_sidecar(err, "NRRD", a, "NRRD has no 0-d arrays");
	if (axes > NRRD_AXES_MAX)
		return no_sidecar(err, "NRRD", a, "more than 16 axes");
	if (has_zero_dim(a))
		return no_sidecar(err, "NRRD", a, "NRRD sizes are at least 1");
	put(t, "NRRD0004\n");
	put(t, "type: ");
	put(t, type);
	put(t, "\n");
	put_line_u(t, "dimension: ", axes);
	put(t, complex ? "sizes: 2" : "sizes:");
	for (unsigned i = 0; i < a->ndim; i++) {
		put(t, " ");
		put_u(t, fastest_dim(a, i));
	}
	put(t, "\n");
	if (complex) {
		put(t, "kinds: complex");
		for (unsigned i = 0; i < a->ndim; i++)
			put(t, " domain");
		put(t, "\n");
	}
	put(t, "endian: ");
	put(t, byte_order_name(a));
	put(t, "\n");
	put(t, "encoding: raw\n");
	put(t, "data file: data\n");
	return AF_OK;
}

af_status af_sidecar_text(const af_array *a, af_sidecar_kind kind,
			  char **out, size_t *len, af_error *err)
{
	*out = NULL;
	*len = 0;
	if (!a || (a->ndim > 0 && !a->shape))
		return af_error_set(err, AF_E_INVAL, AF_NO_OFFSET,
				    "a sidecar header needs an array");
	sidecar_text t = { .len = 0 };
	af_status st;
	switch (kind) {
	case AF_SIDECAR_ENVI:
		st = envi_text(a, &t, err);
		break;
	case AF_SIDECAR_NRRD:
		st = nrrd_text(a, &t, err);
		break;
	default:
		return af_error_set(err, AF_E_INVAL, AF_NO_OFFSET,
				    "unknown sidecar kind %d", (int)kind);
	}
	if (st != AF_OK)
		return st;
	*out = malloc(t.len + 1);
	if (!*out)
		return af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
				    "no memory for a %zu-byte header", t.len);
	memcpy(*out, t.buf, t.len + 1);
	*len = t.len;
	return AF_OK;
}
