/* SPDX-License-Identifier: MIT */
/**
 * @file ra_i.h
 * Private: the RawArray element types, and the numpy type text of one, shared by the
 * .ra parser (the `dtype` file) and the .npy view of a .ra array, so that
 * the two can never disagree on a letter or a byte-order mark.
 */
#ifndef ARRAYFS_RA_I_H
#define ARRAYFS_RA_I_H

#include <stdbool.h>
#include <stddef.h>

#include "arrayfs/af_dtype.h"

/* RawArray element types (the header's eltype field). */
enum {
	RA_ELTYPE_USER = 0,     /* opaque records: bytes never swapped */
	RA_ELTYPE_INT = 1,
	RA_ELTYPE_UINT = 2,
	RA_ELTYPE_FLOAT = 3,
	RA_ELTYPE_COMPLEX = 4,
	RA_ELTYPE_BFLOAT16 = 5,
};

/**
 * Write the type text of @p dt (kind, byteorder and itemsize as af_ra_parse
 * sets them, '|' for records and 1-byte types) into @p out: "<i2", "|u1",
 * ">f8", "<c16", "|V12". bfloat16 is "bfloat16",
 * or with @p bf16_as_u2 its raw 16-bit pattern "<u2" / ">u2" (numpy has no
 * bfloat16). Returns the text's length, or 0 when @p dt has no RawArray
 * type or the text does not fit in @p cap bytes (NUL included).
 */
size_t af_ra_descr(const af_dtype *dt, bool bf16_as_u2, char *out, size_t cap);

#endif /* ARRAYFS_RA_I_H */
