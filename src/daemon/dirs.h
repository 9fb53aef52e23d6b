/* SPDX-License-Identifier: MIT */
/**
 * Folder listings: a mirrored source folder (names and d_type only: no file
 * is opened or parsed, so .npy/.ra/.npz files are DT_UNKNOWN), an npz
 * folder (from the archive's name tree) and an array folder (its entries).
 * A handle lives from opendir to releasedir.
 */
#ifndef ARRAYFS_DAEMON_DIRS_H
#define ARRAYFS_DAEMON_DIRS_H

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif
#include <fuse_lowlevel.h>
#include <sys/types.h>

struct afd_ctx;
struct afd_node;
struct afd_dirh;

/** Open a listing of folder node @p n. Returns 0 or -errno. */
int afd_dir_open(struct afd_ctx *c, const struct afd_node *n,
		 struct afd_dirh **out);
/**
 * Put entries from offset @p off into @p buf (fuse_add_direntry format).
 * Returns the bytes used (0 at the end) or -errno.
 */
ssize_t afd_dir_fill(struct afd_ctx *c, fuse_req_t req, struct afd_dirh *d,
		     char *buf, size_t size, off_t off);
void afd_dir_close(struct afd_dirh *d);

#endif /* ARRAYFS_DAEMON_DIRS_H */
