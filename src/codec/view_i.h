/* SPDX-License-Identifier: MIT */
/**
 * @file view_i.h
 * Private: the headers a view synthesizes in front of the array data.
 *
 * Both builders read only the parsed af_array (never the source) and
 * return a malloc'd buffer the caller frees. Their size is bounded by the
 * number of dims (<= AF_NDIM_MAX): at most a few KiB.
 */
#ifndef ARRAYFS_VIEW_I_H
#define ARRAYFS_VIEW_I_H

#include <stddef.h>
#include <stdint.h>

#include "arrayfs/af_array.h"
#include "arrayfs/af_status.h"

/**
 * The .npy header (magic through the final '\n') for the .ra array @p a,
 * formatted as numpy 1.24's np.save formats it, for the array the reference
 * Python RawArray reader returns (numpy shape = dims, Fortran order), with
 * 'fortran_order': True even where np.save would write False.
 * Returns AF_OK, AF_E_UNSUPPORTED (no numpy type for the element type),
 * AF_E_SHAPE (more than AF_NDIM_MAX dims), AF_E_NOMEM. With at most
 * AF_NDIM_MAX dims the header always fits version 1.0, so no 2.0 header
 * is ever made.
 */
af_status af_view_npy_header(const af_array *a, unsigned char **out,
			     size_t *len, af_error *err);

/**
 * The RawArray header (magic, flags 0, eltype, elbyte, size, ndims, dims)
 * for the .npy array @p a, dims in column-major order.
 * Returns AF_OK, AF_E_SHAPE (more than AF_NDIM_MAX dims), AF_E_NOMEM.
 */
af_status af_view_ra_header(const af_array *a, unsigned char **out,
			    size_t *len, af_error *err);

#endif /* ARRAYFS_VIEW_I_H */
