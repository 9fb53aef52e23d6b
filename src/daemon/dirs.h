/* SPDX-License-Identifier: MIT */
/**
 * Folder listings: a mirrored source folder, an npz folder (from the
 * archive's name tree), an array folder (its entries) and B.zarr/.
 * A plain listing gives names and d_type only: no file is opened or
 * parsed, so .npy/.ra/.npz files are DT_UNKNOWN. A readdirplus listing
 * also gives the entry (node, attributes) of every name in a mirrored or
 * array folder and of the first AFD_ZARR_LISTED_ENTRIES names of
 * B.zarr/, as a lookup would; npz folders, and B.zarr/ past those, list
 * names alone there too. A handle lives from opendir to releasedir.
 */
#ifndef ARRAYFS_DAEMON_DIRS_H
#define ARRAYFS_DAEMON_DIRS_H

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif
#include <fuse_lowlevel.h>
#include <sys/types.h>

/*
 * How many names of a B.zarr/ listing come with their entries: its
 * metadata files and first chunks, so that a walk (du, find -ls) of
 * array folders holding small stores looks nothing up, while a store of
 * 100,000 chunks still makes at most this many nodes at a listing.
 */
#define AFD_ZARR_LISTED_ENTRIES 64u

struct afd_ctx;
struct afd_node;
struct afd_dirh;
struct afd_dir_ahead;

/** Open a listing of folder node @p n. Returns 0 or -errno. */
int afd_dir_open(struct afd_ctx *c, const struct afd_node *n,
		 struct afd_dirh **out);
/**
 * How a readdirplus listing gets the entry of a name: entry(arg, name, e)
 * fills @p e as a lookup of @p name in the listed folder would, counting
 * one lookup, and returns true; false lists the name without an entry.
 */
struct afd_dir_plus {
	bool (*entry)(void *arg, const char *name, struct fuse_entry_param *e);
	void *arg;
};

/**
 * Put entries from offset @p off into @p buf: fuse_add_direntry's format,
 * or with @p plus fuse_add_direntry_plus's (entry() is called only for a
 * name that fits). Returns the bytes used (0 at the end) or -errno.
 */
ssize_t afd_dir_fill(struct afd_ctx *c, fuse_req_t req, struct afd_dirh *d,
		     char *buf, size_t size, off_t off,
		     const struct afd_dir_plus *plus);
void afd_dir_close(struct afd_dirh *d);
/**
 * The tick of the parse clock that listing @p d began at (afd_src_tick):
 * a new one when it reads from offset @p off 0, at its start or a rewind.
 * A parse born since is as fresh as the listing's entries need.
 */
uint64_t afd_dir_listed_since(struct afd_ctx *c, struct afd_dirh *d, off_t off);
/**
 * What to parse ahead of readdirplus listing @p d, which just filled a
 * batch of @p count entries (dirahead.h): its next batch when @p d is a
 * mirrored folder, else nothing (@p a->path NULL, also on ENOMEM).
 */
void afd_dir_ahead_of(const struct afd_dirh *d, size_t count,
		      struct afd_dir_ahead *a);

#endif /* ARRAYFS_DAEMON_DIRS_H */
