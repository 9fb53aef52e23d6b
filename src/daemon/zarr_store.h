/* SPDX-License-Identifier: MIT */
/**
 * B.zarr/ of an array directory: which files it holds, their names,
 * inode numbers, sizes and texts, from the codec's layout (af_zarr.h).
 *
 * Invariants:
 *  - An afd_zarrinfo is the `zarr` member of an afd_arrinfo, always. The
 *    parse of the array (srcfile.c) only records the chunk size: whether
 *    B.zarr/ exists, and its layout, are decided by the first question
 *    asked of it (afd_zarr_exists and every call below), once, from the
 *    codec's rule (af_zarr_layout_init), which builds no text; so a
 *    listing of array folders pays nothing for B.zarr/. The metadata
 *    texts are made when their sizes or bytes are asked for.
 *  - Deciding is the one change after publication without a lock: an
 *    atomic state word (ZI_*), the layout written before it turns to
 *    ZI_OK; a thread that finds another deciding waits the few
 *    microseconds it takes. Metadata sizes are atomic words (0: not
 *    measured yet; no text is empty). `share` (zarr_chunks.h) only changes
 *    under the source's mlock.
 *  - Nothing is kept per chunk: chunk i's name, inode number and size
 *    come from the layout each time they are asked for, so a store of a
 *    million chunks costs what a store of one does.
 *  - A file of B.zarr/ is (path, member, entry, sub) like any node
 *    (nodes.h): entry AE_ZARRAY, AE_ZATTRS, AE_ZJSON (sub 0) or AE_ZCHUNK
 *    (sub = the chunk index).
 */
#ifndef ARRAYFS_DAEMON_ZARR_STORE_H
#define ARRAYFS_DAEMON_ZARR_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arrayfs/af_zarr.h"
#include "nodes.h"

struct afd_arrinfo;
struct afd_zshare;

/** Whether an array has a B.zarr/: not asked yet, being decided, no, yes. */
enum afd_zstate { ZI_UNKNOWN = 0, ZI_BUSY, ZI_NONE, ZI_OK };

/** What one array's B.zarr/ holds (see the invariants above). */
struct afd_zarrinfo {
	unsigned state;            /* enum afd_zstate, atomic */
	uint64_t max_chunk;        /* the largest chunk file, bytes */
	af_zarr_layout layout;     /* ZI_OK: borrows the arrinfo's af_array */
	uint64_t meta_size[3];     /* .zarray, .zattrs, zarr.json, atomic
				    * (0: not measured yet) */
	struct afd_zshare *share;  /* the data view its open chunks share, or
				    * NULL (zarr_chunks.h; under the source's mlock) */
};

/**
 * Prepare ai->zarr of array @p ai (parsed, its `data` entry known) for
 * chunks of at most @p max_chunk bytes; whether it has a B.zarr/ is
 * decided when first asked. ai->has[AE_ZARR] stays false: ask
 * afd_zarr_exists (or afd_arrinfo_has). Nothing to free.
 */
void afd_zarr_info_init(struct afd_arrinfo *ai, uint64_t max_chunk);

/**
 * Whether the array of @p z has a B.zarr/: arrays without `data`, and
 * those the codec's layout refuses (objects, types zarr cannot spell,
 * counts that overflow), have none. Decided at the first call.
 */
bool afd_zarr_exists(const struct afd_zarrinfo *z);

/** The layout of B.zarr/ of @p z, or NULL when there is none. */
const af_zarr_layout *afd_zarr_layout(const struct afd_zarrinfo *z);

/** Whether B.zarr/ of @p z holds file (@p e, @p sub). */
bool afd_zarr_has(const struct afd_zarrinfo *z, enum afd_entry e, uint64_t sub);

/** The size of file @p e of B.zarr/ (every chunk has the same; a
 * metadata file's is its text's length, made at the first call; 0 when
 * there is no such file or no memory to measure it). */
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

#endif /* ARRAYFS_DAEMON_ZARR_STORE_H */
