/* SPDX-License-Identifier: MIT */
/**
 * @file arrayfs.h
 * The arrayfs codec library: parsing, validation and conversion of NumPy
 * .npy/.npz and RawArray .ra files, with zip and random-access deflate.
 * Include this one header; link with `pkg-config --libs arrayfs`.
 */
#ifndef ARRAYFS_ARRAYFS_H
#define ARRAYFS_ARRAYFS_H

#include "af_status.h"
#include "af_source.h"
#include "af_dtype.h"
#include "af_array.h"
#include "af_zip.h"
#include "af_pool.h"
#include "af_inflate.h"
#include "af_view.h"
#include "af_lz4.h"
#include "af_sniff.h"
#include "af_stack.h"
#include "af_readahead.h"
#include "af_zarr_group.h"

#define ARRAYFS_VERSION "0.1.0"

#endif /* ARRAYFS_ARRAYFS_H */
