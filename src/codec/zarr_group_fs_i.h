/* SPDX-License-Identifier: MIT */
/**
 * @file zarr_group_fs_i.h
 * Private: the file walk's header reads (zarr_group_fs.c), shared with
 * the thread that reads them ahead (zarr_group_fs_ahead.c).
 */
#ifndef ARRAYFS_ZARR_GROUP_FS_I_H
#define ARRAYFS_ZARR_GROUP_FS_I_H

#include <stdbool.h>
#include <stddef.h>

#include "arrayfs/af_zarr_group.h"

/* A parsed header and where its data lies: an npz member's (read when
 * its folder is listed) or the one a folder read last for the walk. */
typedef struct fs_header {
	char *file;                /* relative to the top; NULL: no memory */
	char *member;              /* in an npz: the member's name */
	af_array array;
	bool parsed;
	af_zarr_fs_array where;
} fs_header;

/** Release what @p h holds and empty it. */
void zg_fs_header_free(fs_header *h);

/**
 * Read array file @p name of the folder @p rel (open under @p dfd) into
 * the empty @p h: h->file "REL/NAME" (NULL: no memory, nothing read), and
 * the header parsed or not (h->parsed). Safe on any thread.
 */
void zg_fs_header_read(fs_header *h, int dfd, const char *rel,
		       const char *name);

/** Headers of one folder read on a thread of their own, in walk order. */
typedef struct fs_ahead fs_ahead;

/**
 * Start reading the headers of the @p n files named @p names[i] (entry
 * @p entries[i] of the folder's list, the order the walk takes them) of
 * folder @p rel under @p dfd, a few ahead of the walk. The names must
 * stay valid until fs_ahead_stop. NULL: not started (too few to be worth
 * a thread, or no thread or memory): the walk reads them itself.
 */
fs_ahead *fs_ahead_start(int dfd, const char *rel, const size_t *entries,
			 const char *const *names, size_t n);

/**
 * The header of entry @p entry if it is the next one read ahead: moved
 * into the empty @p out (waiting for it if need be), true. False (@p out
 * untouched) for any other entry: the caller reads it itself.
 */
bool fs_ahead_take(fs_ahead *a, size_t entry, fs_header *out);

/** Stop the thread, wait for it and free what it read. NULL is fine. */
void fs_ahead_stop(fs_ahead *a);

#endif /* ARRAYFS_ZARR_GROUP_FS_I_H */
