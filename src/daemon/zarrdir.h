/* SPDX-License-Identifier: MIT */
/**
 * B.zarr/ of an array directory: which files it holds, their names,
 * inode numbers, sizes and texts, from the codec's layout (af_zarr.h).
 *
 * Invariants:
 *  - An afd_zarrinfo is filled once, when its array is parsed (srcfile.c),
 *    and is read-only from then on, except `share` (zchunk.h), which only
 *    changes under the source's mlock.
 *  - Nothing is kept per chunk: chunk i's name, inode number and size
 *    come from the layout each time they are asked for, so a store of a
 *    million chunks costs what a store of one does.
 *  - A file of B.zarr/ is (path, member, entry, sub) like any node
 *    (nodes.h): entry AE_ZARRAY, AE_ZATTRS, AE_ZJSON (sub 0) or AE_ZCHUNK
 *    (sub = the chunk index).
 */
#ifndef ARRAYFS_DAEMON_ZARRDIR_H
#define ARRAYFS_DAEMON_ZARRDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arrayfs/af_zarr.h"
#include "nodes.h"

struct afd_arrinfo;
struct afd_zshare;

/** What one array's B.zarr/ holds. */
struct afd_zarrinfo {
	bool ok;                   /* the array has a B.zarr/ */
	af_zarr_layout layout;     /* borrows the arrinfo's af_array */
	uint64_t meta_size[3];     /* .zarray, .zattrs, zarr.json (0: none) */
	struct afd_zshare *share;  /* the data view its open chunks share, or
				    * NULL (zchunk.h; under the source's mlock) */
};

/**
 * Decide whether array @p ai (parsed, its `data` entry known) has a
 * B.zarr/ with chunks of at most @p max_chunk bytes, and fill ai->zarr,
 * ai->has[AE_ZARR]. Arrays without `data`, and those the codec's layout
 * refuses (objects, types zarr cannot spell, counts that overflow), get
 * none. Nothing to free.
 */
void afd_zarr_info_fill(struct afd_arrinfo *ai, uint64_t max_chunk);

/** Whether B.zarr/ of @p z holds file (@p e, @p sub). */
bool afd_zarr_has(const struct afd_zarrinfo *z, enum afd_entry e, uint64_t sub);

/** The size of file @p e of B.zarr/ (every chunk has the same). */
uint64_t afd_zarr_size(const struct afd_zarrinfo *z, enum afd_entry e);

/**
 * The file of B.zarr/ called @p name: *e and *sub. Strict (af_zarr_lookup):
 * any other name is -ENOENT. Returns 0 or -ENOENT.
 */
int afd_zarr_name(const struct afd_zarrinfo *z, const char *name,
		  enum afd_entry *e, uint64_t *sub);

/**
 * Entry @p i of the listing of B.zarr/ (metadata files, then the chunks in
 * order) of the array at (@p path, @p member): its name in out->name and
 * its inode number in *ino. Returns false past the last entry.
 */
bool afd_zarr_listed(const struct afd_zarrinfo *z, const char *path,
		     const char *member, uint64_t i, af_zarr_entry *out,
		     uint64_t *ino);

/**
 * The text of metadata file @p e (AE_ZARRAY, AE_ZATTRS, AE_ZJSON): *out
 * malloc'd (the caller frees), *len its length. Returns AF_OK or the
 * codec's status (af_zarr_text).
 */
af_status afd_zarr_text(const struct afd_zarrinfo *z, enum afd_entry e,
			char **out, size_t *len);

#endif /* ARRAYFS_DAEMON_ZARRDIR_H */
