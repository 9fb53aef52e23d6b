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
#include <sys/stat.h>

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

/* One read covers the header of nearly every array (a .npy header is
 * 128 bytes or a few more, a .ra one 48 plus its shape): the parser's
 * reads are served from it, so a file costs one open, fstat and pread. */
#define FS_HEAD_BYTES 4096u

/* A file's first bytes, read for its header's parse: the system calls,
 * which a second thread can make. */
typedef struct fs_head {
	bool ok;             /* opened, a regular file, read */
	int fd;              /* open while the parse may read past head; else -1 */
	struct stat sb;
	size_t have;
	unsigned char head[FS_HEAD_BYTES];
} fs_head;

/** Open @p path under @p dfd, fstat it and read its first bytes into
 * @p hd. Safe on any thread. */
void zg_fs_head_read(fs_head *hd, int dfd, const char *path);

/** Parse the header of @p hd, the file named @p name, into @p h (its
 * file set; left unparsed if the read or parse failed), and close
 * hd->fd. */
void zg_fs_head_parse(fs_header *h, fs_head *hd, const char *name);

/** The first bytes of one folder's array files read on a thread of
 * their own, in walk order (the parse stays on the walk's thread: the
 * reads are the longer part). */
typedef struct fs_ahead fs_ahead;

/**
 * Start reading the @p n files named @p names[i] (in the order the walk
 * takes them) under @p dfd, a few ahead of the walk. Takes @p names (a
 * malloc'd array; freed even when not started), whose strings must stay
 * valid until fs_ahead_stop. NULL: not started (too few to be worth a
 * thread, or no thread or memory): the walk reads them itself.
 */
fs_ahead *fs_ahead_start(int dfd, const char **names, size_t n);

/**
 * The first bytes of the file named @p name (the very pointer given in
 * names: one name a file) if it is the next one read ahead: copied into
 * @p out (waiting for them if need be; out->fd is the caller's to
 * close), true. False (@p out untouched) for any other: the caller reads
 * it itself.
 */
bool fs_ahead_take(fs_ahead *a, const char *name, fs_head *out);

/** Stop the thread, wait for it and free what it read. NULL is fine. */
void fs_ahead_stop(fs_ahead *a);

#endif /* ARRAYFS_ZARR_GROUP_FS_I_H */
