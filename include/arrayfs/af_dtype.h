/* SPDX-License-Identifier: MIT */
/**
 * @file af_dtype.h
 * NumPy `descr` parsing: a type string ("<f8", "|S10", "<M8[ns]") or a
 * structured field list, reduced to what arrayfs needs: the item size, the
 * kind, the byte order and whether objects are inside.
 *
 * Invariants:
 *  - itemsize is the exact number of bytes numpy uses per element (the sum
 *    of field sizes times their sub-array counts, padding included).
 *  - has_object is true if any field, however nested, is an object; the
 *    data of such an array is a pickle and must never be interpreted.
 *  - scalar_size is the size of one byte-swappable scalar (8 for "<c16",
 *    4 for ">i4") for plain numeric kinds, 0 where bytes must never be
 *    swapped (bytes, void, structured, unicode is 4: UCS-4 code units).
 */
#ifndef ARRAYFS_AF_DTYPE_H
#define ARRAYFS_AF_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "af_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum af_kind {
	AF_KIND_BOOL = 1,
	AF_KIND_INT,       /* signed integer */
	AF_KIND_UINT,
	AF_KIND_FLOAT,
	AF_KIND_COMPLEX,   /* itemsize is the whole pair */
	AF_KIND_DATETIME,  /* M8[unit]: int64 */
	AF_KIND_TIMEDELTA, /* m8[unit]: int64 */
	AF_KIND_BYTES,     /* S */
	AF_KIND_UNICODE,   /* U: UCS-4 */
	AF_KIND_VOID,      /* V: opaque bytes */
	AF_KIND_STRUCT,    /* a field list */
	AF_KIND_OBJECT,    /* O */
	AF_KIND_BFLOAT16,  /* RawArray eltype 5 only */
} af_kind;

typedef struct af_dtype {
	af_kind kind;
	char byteorder;        /* '<', '>' or '|' (host order resolved for '=') */
	uint64_t itemsize;
	uint64_t scalar_size;  /* see the file comment */
	bool has_object;
	unsigned nfields;      /* top-level named fields of a struct, else 0 */
} af_dtype;

/** Longest descr text the parser accepts (bounds memory and time). */
#define AF_DESCR_MAX (16u << 20)
/** Deepest nesting of structured types accepted. */
#define AF_DTYPE_MAX_DEPTH 32

/**
 * Parse a descr given as Python literal text: either a quoted type string
 * ("'<f8'") or a list literal ("[('x', '<i4'), ('y', '<f8', (2,))]").
 * @p allow_long_suffix accepts Python-2 `L` integer suffixes (v1/v2 files).
 * Returns AF_OK, AF_E_DTYPE (err says which part), AF_E_OVERFLOW, AF_E_LIMIT,
 * AF_E_NOMEM. On failure *out is zeroed. Nothing to free.
 */
af_status af_dtype_parse(const char *text, size_t len, bool allow_long_suffix,
			 af_dtype *out, af_error *err);

/**
 * Parse a bare type string without quotes ("<f8", "|V16", "<M8[10ms]").
 * Returns AF_OK or AF_E_DTYPE (then *out is zeroed). Nothing to free.
 */
af_status af_dtype_parse_typestr(const char *s, size_t len, af_dtype *out,
				 af_error *err);

#ifdef __cplusplus
}
#endif
#endif /* ARRAYFS_AF_DTYPE_H */
