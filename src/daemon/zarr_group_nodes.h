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

/*
 * A `.zarr/` node resolves through another identity (afd_zarr_group_base)
 * and is then sized (afd_zarr_group_sized); a lookup under `.zarr/` makes
 * the child's identity here and tree.c resolves it. This file never calls
 * back into tree.c: it is a part tree.c asks, like zarr_store.c.
 */

/**
 * The identity @p id is served through, its strings borrowed from @p id:
 * a group and its files, its folder (NK_DIR, or NK_NPZDIR of an npz
 * folder); a child array `.zarr/KEY/` and its files, its B.zarr/ and
 * B.zarr/'s files (NK_ZARRDIR, NK_ZARRFILE).
 */
void afd_zarr_group_base(const struct afd_id *id, struct afd_id *base);

/**
 * After @p id's base resolved into @p r: the size (r->zsize) of a group
 * file or a child array's metadata file, and `.zmetadata`'s version
 * (r->zkey). Returns 0, -ENOENT (no `.zmetadata`: too many arrays), -ENOMEM.
 */
int afd_zarr_group_sized(struct afd_ctx *c, const struct afd_id *id,
			 struct afd_res *r);

/** The group `.zarr` of folder node @p parent (NK_DIR or NK_NPZDIR with no
 * source entry of that name) into *child. Returns 0 or -ENOMEM. */
int afd_zarr_group_hidden(const struct afd_node *parent, struct afd_id *child);

/** The identity of @p name in group node @p parent (NK_ZGROUP): one of its
 * files or a child. Returns 0, -ENOENT, -ENOMEM, -errno. */
int afd_zarr_group_child(struct afd_ctx *c, const struct afd_node *parent,
			 const char *name, struct afd_id *child);

/** The identity of @p name in child array node @p parent (NK_ZGARRAY),
 * whose array is @p ai: B.zarr/'s names (nothing is opened: a chunk file
 * opens at its open, as in B.zarr/). Returns 0, -ENOENT, -ENOMEM. */
int afd_zarr_group_array_child(const struct afd_node *parent,
			       const struct afd_arrinfo *ai, const char *name,
			       struct afd_id *child);

/** After @p child resolved into @p r: what its identity keeps of it. */
void afd_zarr_group_looked_up(struct afd_id *child, const struct afd_res *r);

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
 * (*name: a constant, or @p key filled; NULL: an entry a lookup found is
 * no child, not listed), inode number and type (DT_UNKNOWN: an array whose
 * header is not read yet). Returns false past the last one.
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
