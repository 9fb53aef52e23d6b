/* SPDX-License-Identifier: MIT */
/**
 * Every stat, open and listing of a source path goes through here, so that
 * the daemon never looks a path up through its own mount. A MOUNTPOINT
 * inside SOURCE would otherwise make each request of the mount ask the
 * mount again (ls mnt/mnt/mnt ...) until every worker thread waits on
 * another and the mount hangs.
 *
 * How: paths are resolved under the source root with openat2 and
 * RESOLVE_NO_XDEV | RESOLVE_NO_SYMLINKS, which fails with EXDEV before it
 * enters any other mount. Only then is the path walked a component at a
 * time; at each mount point, the mount on it is opened with O_PATH (which
 * asks no file system anything) and compared with the daemon's own: by
 * mount id (/proc/self/fdinfo) and by device (mountinfo, so a bind mount
 * of ours is ours too). Other mounts inside SOURCE are still crossed; the
 * daemon's own never is. Symlinks are never
 * followed by the daemon: the kernel resolves them for the mount's users.
 *
 * Invariant: own_mnt_id is set once, after mounting and before any request
 * thread starts, and never changes (-1 before: there is no own mount yet).
 */
#ifndef ARRAYFS_DAEMON_SRCPATH_H
#define ARRAYFS_DAEMON_SRCPATH_H

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

/** The source root and the mount it must never enter. */
struct afd_srcroot {
	int fd;            /* the source folder (or a single file's folder) */
	int own_mnt_id;    /* this daemon's mount, -1 before mounting */
	dev_t own_dev;     /* its device, for kernels without openat2 */
};

/**
 * Open source path @p path (relative to the root; "." is the root) with
 * open(2) @p flags (O_CLOEXEC, O_NOFOLLOW and, unless O_PATH, O_NOCTTY are
 * added). A symlink as the last component opens as the link with O_PATH
 * and fails with ELOOP otherwise; a symlink before it fails with ELOOP.
 * Returns the fd (caller closes), -EXDEV when @p path is where the
 * daemon's own mount is mounted, -ENOENT for a path under it, or -errno.
 */
int afd_srcpath_open(const struct afd_srcroot *r, const char *path, int flags);

/**
 * Open @p name, one component, in source folder @p dirfd (an fd
 * afd_srcpath_open gave) the same way, for many names of one folder
 * without resolving its path each time. Returns the fd (caller closes),
 * -EXDEV when it is the daemon's own mount, or -errno.
 */
int afd_srcpath_open_in(const struct afd_srcroot *r, int dirfd,
			const char *name, int flags);

/** lstat(2) of source path @p path: 0, -EXDEV (own mount) or -errno. */
int afd_srcpath_stat(const struct afd_srcroot *r, const char *path,
		     struct stat *st);

/** The mount id of open file @p fd (from /proc/self/fdinfo), or -errno. */
int afd_mnt_id_of_fd(int fd);

#endif /* ARRAYFS_DAEMON_SRCPATH_H */
