/* SPDX-License-Identifier: MIT */
/**
 * @file zarr_i.h
 * Private: the pieces of the Zarr store shared by its layout
 * (zarr_layout.c) and its metadata (zarr_meta.c).
 */
#ifndef ARRAYFS_ZARR_I_H
#define ARRAYFS_ZARR_I_H

#include "arrayfs/af_dtype.h"

/**
 * The Zarr v3 core data type of @p dt ("bool", "int8" .. "uint64",
 * "float16" .. "float64", "complex64", "complex128"), or NULL when it has
 * none (then the store has no zarr.json). A static string.
 */
const char *af_zarr_v3_type(const af_dtype *dt);

#endif /* ARRAYFS_ZARR_I_H */
