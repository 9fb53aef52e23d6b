/* SPDX-License-Identifier: MIT */
/**
 * @file af_sidecar.h
 * Sidecar headers: small text files beside `data` that tell programs which
 * read raw bytes (GDAL, QGIS, ENVI, Spectral Python; 3D Slicer, ITK, VTK,
 * ParaView, Fiji, teem's unu) the element type and layout of `data`, so
 * they open it with no conversion. Each is computed from the af_array
 * alone and exists only where its format can describe the array.
 *
 *  - `data.hdr` (ENVI): arrays of 1 to 3 dims, each dim 1 .. 2^31-1 (GDAL
 *    reads the sizes as C ints), of the ENVI types u1/b1 (1), i2 (2),
 *    i4 (3), f4 (4), f8 (5), c8 (6), c16 (9), u2 (12), u4 (13), i8 (14),
 *    u8 (15). Band sequential: `samples` is the fastest-varying dim (the
 *    last of a C-order shape, the first of a Fortran-order or .ra one),
 *    `lines` the next, `bands` the slowest, 1 where absent.
 *  - `B.nhdr` (NRRD0004, detached, `data file: data`): arrays of int8 ..
 *    uint64, float32 (NRRD "float"), float64 ("double"), bool as uint8,
 *    complex64 / complex128 as float / double with an extra fastest axis
 *    of size 2 and `kinds: complex domain ...`; every dim >= 1, at most 16
 *    axes in all (teem's NRRD_DIM_MAX). `sizes` fastest first.
 *  - The byte order is the stored one (`data` is never swapped).
 *  - 0-d arrays, arrays with a zero dim, bfloat16, float16, datetimes,
 *    strings, records and objects get neither file.
 */
#ifndef ARRAYFS_AF_SIDECAR_H
#define ARRAYFS_AF_SIDECAR_H

#include <stddef.h>

#include "af_array.h"
#include "af_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum af_sidecar_kind {
	AF_SIDECAR_ENVI = 1, /* `data.hdr` */
	AF_SIDECAR_NRRD,     /* `B.nhdr` (B = the array directory's name
			      * without its extension) */
} af_sidecar_kind;

/** The ENVI header's file name in every array directory. */
#define AF_SIDECAR_ENVI_NAME "data.hdr"
/** The NRRD header's file name is B followed by this. */
#define AF_SIDECAR_NRRD_SUFFIX ".nhdr"

/**
 * The text of sidecar @p kind for @p a: a few lines, each ending in '\n'.
 * Reads nothing (cheap enough to call on every lookup). *out is malloc'd
 * and NUL-terminated (the caller frees), *len its length.
 * Returns AF_OK; AF_E_UNSUPPORTED when the format cannot describe the
 * array (the file is absent; err says why); AF_E_INVAL (NULL array,
 * unknown kind); AF_E_NOMEM. On failure *out is NULL.
 */
af_status af_sidecar_text(const af_array *a, af_sidecar_kind kind,
			  char **out, size_t *len, af_error *err);

#ifdef __cplusplus
}
#endif
#endif /* ARRAYFS_AF_SIDECAR_H */
