/* SPDX-License-Identifier: MIT */
/**
 * The nodes of `.zarr/` (zarr_group_models.h): lookup of names in a group and in a
 * child array's folder, resolving and sizing them, their texts and their
 * listings. Node identities are in nodes.h (NK_ZGROUP .. NK_ZGAFILE).
 *
 * A child array `.zarr/KEY/` is its B.zarr/: its nodes resolve through
 * B.zarr/'s (afd_resolve of the NK_ZARRDIR / NK_ZARRFILE identity), so
 * its chunk files are B.zarr/'s chunk files, opened and read by the same
 * code; only `.zarray`, `.zattrs` and zarr.json are the group's texts.
 */
#ifndef ARRAYFS_DAEMON_ZARR_GROUP_NODES_H
#define ARRAYFS_DAEMON_ZARR_GROUP_NODES_H

#include <dirent.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tree.h"
#include "zarr_group_models.h"

/** True for the kinds of `.zarr/` nodes. */
bool afd_zarr_group_kind(enum afd_nkind k);

/**
 * Whether @p name in folder node @p parent (NK_DIR or NK_NPZDIR, which
 * has no source entry of that name) is its group: then *child and *r are
 * filled as afd_lookup's. Returns 0, or -ENOENT (not the group's name).
 */
int afd_zarr_group_lookup_hidden(struct afd_ctx *c, const struct afd_node *parent,
			 const char *name, struct afd_id *child,
			 struct afd_res *r);

/** afd_lookup in a NK_ZGROUP or NK_ZGARRAY folder (nothing is opened:
 * a chunk file opens at its open, as in B.zarr/). */
int afd_zarr_group_lookup(struct afd_ctx *c, const struct afd_node *parent,
		  const char *name, struct afd_id *child, struct afd_res *r);

/** afd_resolve of a `.zarr/` identity (afd_zarr_group_kind). */
int afd_zarr_group_resolve(struct afd_ctx *c, const struct afd_id *id, int *fd_out,
		   struct afd_res *r);

/** The B.zarr/ entry an AE_ZGA_* entry is served as (else @p e). */
enum afd_entry afd_zarr_group_store_entry(enum afd_entry e);

/**
 * The text of `.zarr/` file @p id (NK_ZGFILE but .zmetadata, or the
 * metadata of NK_ZGAFILE with @p ai its array): *out malloc'd. Returns
 * AF_OK or the codec's status.
 */
af_status afd_zarr_group_text(const struct afd_id *id, const struct afd_arrinfo *ai,
		      char **out, size_t *len);

/** `.zmetadata`'s version for its document @p doc (never 0). */
uint64_t afd_zarr_group_doc_key(const char *doc, size_t len);

/**
 * Entry @p i of the listing of group folder model @p f (metadata files,
 * then the children), the group reached at depth @p depth: its name
 * (*name: a constant, or @p key filled), inode number and type. Returns
 * false past the last one.
 */
bool afd_zarr_group_listed(const struct afd_zarr_folder *f, uint64_t depth, uint64_t i,
		   char key[NAME_MAX + 1], const char **name, uint64_t *ino,
		   unsigned char *dt);

/** Entry @p i of the listing of `.zarr/KEY/` (array at @p path/@p member,
 * its node's @p sub): B.zarr/'s names with their own inode numbers. */
bool afd_zarr_group_array_listed(const struct afd_zarrinfo *z, const char *path,
			 const char *member, uint64_t sub, uint64_t i,
			 af_zarr_entry *out, uint64_t *ino);

#endif /* ARRAYFS_DAEMON_ZARR_GROUP_NODES_H */
