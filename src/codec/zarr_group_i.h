/* SPDX-License-Identifier: MIT */
/**
 * @file zarr_group_i.h
 * Private: what the group's files share: its metadata written into a JSON
 * writer at any depth (the group texts, and the consolidated document,
 * which nests them), and the reading of a name's extension (the model's
 * keys, and the file-system walk's kinds).
 */
#ifndef ARRAYFS_ZARR_GROUP_I_H
#define ARRAYFS_ZARR_GROUP_I_H

#include "arrayfs/af_zarr_group.h"

struct zj;
/** Write group file @p which as the next value of @p w. AF_OK or AF_E_RANGE. */
af_status zg_put_group_file(af_zarr_group_file which, struct zj *w,
			    af_error *err);

/**
 * The extension of @p name as af_array_name_kind reads it: 4 for
 * ".npy" and 3 for ".ra" (*kind AF_ZG_ARRAY), 4 for ".npz" (AF_ZG_NPZ),
 * else 0 (AF_ZG_OTHER). A name that is only the extension has none.
 */
size_t zg_name_ext(const char *name, af_zarr_group_kind *kind);

/** Byte order of two keys (no NUL in either): a key comes before any
 * longer one it begins. */
int zg_key_cmp(const char *a, size_t alen, const char *b, size_t blen);

/** Sort @p n children by key, zg_key_cmp's order (zarr_group_sort.c). */
void zg_sort_children(af_zarr_group_child *c, size_t n);

#endif /* ARRAYFS_ZARR_GROUP_I_H */
