/* SPDX-License-Identifier: MIT */
/* The headers a view puts in front of the data: .npy for a .ra array, .ra for a .npy array. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrayfs/af_view.h"
#include "bytes_i.h"
#include "ra_i.h"
#include "view_i.h"

/* numpy/lib/format.py constants (numpy 1.24) */
#define NPY_ARRAY_ALIGN 64u
#define NPY_GROWTH_AXIS_MAX_DIGITS 21u
#define NPY_MAGIC_LEN 8u

static unsigned decimal_digits(uint64_t v)
{
	unsigned n = 1;
	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

/*
 * numpy's type string for a .ra element type. The reference reader ignores
 * the byte-order flag; the contract keeps it ('>'), and bfloat16, which
 * numpy has no type for, is served as its raw 16-bit pattern.
 */
static af_status ra_descr(const af_array *a, char *out, size_t cap,
			  af_error *err)
{
	if (af_ra_descr(&a->dtype, true, out, cap) == 0)
		return af_error_set(err, AF_E_UNSUPPORTED, AF_NO_OFFSET,
				    "RawArray element type %" PRIu64
				    " (%" PRIu64 " bytes) has no numpy equivalent",
				    a->ra_eltype, a->dtype.itemsize);
	return AF_OK;
}

/*
 * The .npy dict of a .ra array: its derived descr, 'fortran_order': True
 * and the dims. Always True, as the contract says, although np.save of the
 * reference reader's array writes False when that array is also
 * C-contiguous (at most one dim > 1, or empty): numpy loads both alike,
 * and one rule is easier to rely on than numpy's flags. malloc'd.
 */
static af_status ra_npy_dict(const af_array *a, char **out, af_error *err)
{
	char descr[32];
	af_status st = ra_descr(a, descr, sizeof(descr), err);
	if (st != AF_OK)
		return st;
	size_t cap = 128 + sizeof(descr) + (size_t)a->ndim * 22;
	char *dict = malloc(cap);
	if (!dict)
		return af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
				    "no memory for a %zu-byte .npy header", cap);
	size_t n = (size_t)snprintf(dict, cap,
				    "{'descr': '%s', 'fortran_order': True, 'shape': (",
				    descr);
	for (unsigned i = 0; i < a->ndim; i++)
		n += (size_t)snprintf(dict + n, cap - n, "%s%" PRIu64,
				      i ? ", " : "", a->shape[i]);
	snprintf(dict + n, cap - n, "%s), }", a->ndim == 1 ? "," : "");
	*out = dict;
	return AF_OK;
}

af_status af_view_npy_header(const af_array *a, unsigned char **out,
			     size_t *len, af_error *err)
{
	*out = NULL;
	*len = 0;
	if (a->ndim > AF_NDIM_MAX)
		return af_error_set(err, AF_E_SHAPE, AF_NO_OFFSET,
				    "%u dims is more than %u", a->ndim,
				    AF_NDIM_MAX);
	/* a .npy array written anew (a stack) brings its own dict */
	char *dict = NULL;
	if (a->format == AF_FORMAT_NPY) {
		if (!a->header_text)
			return af_error_set(err, AF_E_INVAL, AF_NO_OFFSET,
					    "a .npy array without its header dict");
		dict = strdup(a->header_text);
		if (!dict)
			return af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
					    "no memory for a .npy header");
	} else {
		af_status st = ra_npy_dict(a, &dict, err);
		if (st != AF_OK)
			return st;
	}
	size_t n = strlen(dict);
	/* numpy >= 1.24 leaves room to grow the outermost axis; version 1.0
	 * unless the header needs more than its 16-bit length (then 2.0) */
	unsigned growth = 0;
	if (a->ndim > 0)
		growth = NPY_GROWTH_AXIS_MAX_DIGITS -
			 decimal_digits(a->shape[a->fortran_order ? a->ndim - 1 : 0]);
	bool v2 = n + growth + NPY_ARRAY_ALIGN + NPY_MAGIC_LEN + 2 + 1 > 0xffff;
	size_t prefix = NPY_MAGIC_LEN + (v2 ? 4 : 2);
	size_t cap = prefix + n + growth + NPY_ARRAY_ALIGN + 1;
	unsigned char *buf = malloc(cap);
	if (!buf) {
		free(dict);
		return af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
				    "no memory for a %zu-byte .npy header", cap);
	}
	char *body = (char *)buf + prefix;
	memcpy(body, dict, n);
	free(dict);
	memset(body + n, ' ', growth);
	n += growth;
	/* format.py _wrap_header: pad with spaces so that the data, after the
	 * final '\n', starts at a multiple of 64 */
	size_t padlen = NPY_ARRAY_ALIGN - (prefix + n + 1) % NPY_ARRAY_ALIGN;
	memset(body + n, ' ', padlen);
	body[n + padlen] = '\n';
	size_t hlen = n + padlen + 1;
	memcpy(buf, "\x93NUMPY", 6);
	buf[6] = v2 ? 2 : 1;
	buf[7] = 0;
	if (v2)
		af_put_le32(buf + 8, (uint32_t)hlen);
	else
		af_put_le16(buf + 8, (uint16_t)hlen);
	*out = buf;
	*len = prefix + hlen;
	return AF_OK;
}

af_status af_view_ra_header(const af_array *a, unsigned char **out,
			    size_t *len, af_error *err)
{
	*out = NULL;
	*len = 0;
	if (a->ndim > AF_NDIM_MAX)
		return af_error_set(err, AF_E_SHAPE, AF_NO_OFFSET,
				    "%u dims is more than %u", a->ndim,
				    AF_NDIM_MAX);
	uint64_t eltype = 0, elbyte = 0;
	af_ra_type_of(&a->dtype, &eltype, &elbyte);
	size_t n = AF_RA_FIXED_HEADER + 8 * (size_t)a->ndim;
	unsigned char *buf = malloc(n);
	if (!buf)
		return af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
				    "no memory for a %zu-byte RawArray header", n);
	af_put_le64(buf, AF_RA_MAGIC);
	af_put_le64(buf + 8, 0);
	af_put_le64(buf + 16, eltype);
	af_put_le64(buf + 24, elbyte);
	af_put_le64(buf + 32, a->data_size);
	af_put_le64(buf + 40, a->ndim);
	for (unsigned i = 0; i < a->ndim; i++) {
		/* RawArray is column-major: a C-order shape is reversed */
		unsigned k = a->fortran_order ? i : a->ndim - 1 - i;
		af_put_le64(buf + AF_RA_FIXED_HEADER + 8 * (size_t)i,
			    a->shape[k]);
	}
	*out = buf;
	*len = n;
	return AF_OK;
}
