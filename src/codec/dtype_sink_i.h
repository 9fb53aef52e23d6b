/* SPDX-License-Identifier: MIT */
/**
 * @file dtype_sink_i.h
 * Private: an observer of the descr parser (dtype.c), so that code which
 * needs a descr's structure (zarr_meta.c writes zarr's JSON list form of
 * it) follows the one grammar dtype.c implements instead of a second one.
 *
 * Events, in text order, for a descr the parser accepts:
 *  - AF_DTYPE_EV_TYPE: a type string (decoded), at the top level or as a
 *    field's type;
 *  - AF_DTYPE_EV_LIST_BEGIN / _END around a field list;
 *  - AF_DTYPE_EV_FIELD_BEGIN / _END around one (name, type[, shape]) field
 *    (padding fields included);
 *  - AF_DTYPE_EV_NAME: a field name, `title` set for the title of a
 *    (title, name) pair (which comes first);
 *  - AF_DTYPE_EV_SHAPE: a sub-array shape that numpy makes a sub-array of
 *    (not a bare 1 nor ()), after the type it applies to: a field's own
 *    shape, or that of a (type, shape) pair used as a type. Each such shape
 *    is outside the ones reported before it for the same field. `n` is its
 *    number of dims; only the first min(n, AF_NDIM_MAX) are in `dims`.
 * Text pointers are valid during the call only. When parsing fails the
 * events stop; a sink must not assume every BEGIN gets its END.
 */
#ifndef ARRAYFS_DTYPE_SINK_I_H
#define ARRAYFS_DTYPE_SINK_I_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arrayfs/af_array.h" /* AF_NDIM_MAX */
#include "arrayfs/af_dtype.h"
#include "arrayfs/af_status.h"

typedef enum af_dtype_event {
	AF_DTYPE_EV_TYPE = 1,
	AF_DTYPE_EV_LIST_BEGIN,
	AF_DTYPE_EV_LIST_END,
	AF_DTYPE_EV_FIELD_BEGIN,
	AF_DTYPE_EV_FIELD_END,
	AF_DTYPE_EV_NAME,
	AF_DTYPE_EV_SHAPE,
} af_dtype_event;

typedef struct af_dtype_sink af_dtype_sink;
struct af_dtype_sink {
	void (*event)(af_dtype_sink *sink, af_dtype_event ev, const char *text,
		      size_t len, bool title, const uint64_t *dims, unsigned n);
};

/**
 * af_dtype_parse, reporting the descr's structure to @p sink as it goes.
 * Same returns and out-parameters as af_dtype_parse.
 */
af_status af_dtype_parse_observed(const char *text, size_t len,
				  bool allow_long_suffix, af_dtype_sink *sink,
				  af_dtype *out, af_error *err);

#endif /* ARRAYFS_DTYPE_SINK_I_H */
