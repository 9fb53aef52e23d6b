/* SPDX-License-Identifier: MIT */
/**
 * @file zarr_group_i.h
 * Private: the group's metadata written into a JSON writer at any depth,
 * shared by the group texts (zarr_group_meta.c) and the consolidated
 * document (zarr_group_consolidated.c), which nests them.
 */
#ifndef ARRAYFS_ZARR_GROUP_I_H
#define ARRAYFS_ZARR_GROUP_I_H

#include "arrayfs/af_zarr_group.h"

struct zj;
/** Write group file @p which as the next value of @p w. AF_OK or AF_E_RANGE. */
af_status zg_put_group_file(af_zarr_group_file which, struct zj *w,
			    af_error *err);

#endif /* ARRAYFS_ZARR_GROUP_I_H */
