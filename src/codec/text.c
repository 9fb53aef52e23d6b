/* SPDX-License-Identifier: MIT */
/*
 * The text files of an array directory: `shape`, `dtype` and `header`.
 *
 * shape:  the dims in header order, decimal, one space between, then "\n";
 *         a 0-d array gives just "\n".
 * dtype:  the descr, then "\n".
 * header: for .npy the dict literal (already stripped by the parser), then
 *         "\n". For .ra one "name: value" line per header field, in file
 *         order, every number in decimal:
 *             magic: rawarray
 *             flags: 2
 *             eltype: 2
 *             elbyte: 1
 *             size: 486
 *             ndims: 3
 *             dims: 28 28 3
 *         flags is the stored value, unknown bits included and not decoded.
 *         A 0-d array has the line "dims:" with no trailing space.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrayfs/arrayfs.h"
#include "textbuf_i.h"

static void tb_dims(textbuf *tb, const af_array *a)
{
	for (unsigned i = 0; i < a->ndim; i++) {
		if (i > 0)
			tb_add(tb, " ", 1);
		tb_u64(tb, a->shape[i]);
	}
}

af_status af_text_shape(const af_array *a, char **out, size_t *len)
{
	textbuf tb = { 0 };
	tb_dims(&tb, a);
	tb_add(&tb, "\n", 1);
	return tb_finish(&tb, out, len);
}

af_status af_text_dtype(const af_array *a, char **out, size_t *len)
{
	textbuf tb = { 0 };
	if (a->descr)
		tb_str(&tb, a->descr);
	tb_add(&tb, "\n", 1);
	return tb_finish(&tb, out, len);
}

static void tb_field(textbuf *tb, const char *name, uint64_t v)
{
	tb_str(tb, name);
	tb_str(tb, ": ");
	tb_u64(tb, v);
	tb_add(tb, "\n", 1);
}

af_status af_text_header(const af_array *a, char **out, size_t *len)
{
	textbuf tb = { 0 };
	if (a->format == AF_FORMAT_RA) {
		tb_str(&tb, "magic: rawarray\n");
		tb_field(&tb, "flags", a->ra_flags);
		tb_field(&tb, "eltype", a->ra_eltype);
		tb_field(&tb, "elbyte", a->ra_elbyte);
		tb_field(&tb, "size", a->ra_size);
		tb_field(&tb, "ndims", a->ndim);
		tb_str(&tb, a->ndim ? "dims: " : "dims:");
		tb_dims(&tb, a);
		tb_add(&tb, "\n", 1);
	} else {
		if (a->header_text)
			tb_str(&tb, a->header_text);
		tb_add(&tb, "\n", 1);
	}
	return tb_finish(&tb, out, len);
}
