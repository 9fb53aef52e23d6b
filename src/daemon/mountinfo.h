/* SPDX-License-Identifier: MIT */
/**
 * Reading /proc/self/mountinfo: which mount is on top of a path. It is the
 * one way to learn about a mount without a path lookup through it, so the
 * daemon uses it for its own mount (mount id, device) and to refuse a
 * MOUNTPOINT that already holds an arrayfs mount.
 */
#ifndef ARRAYFS_DAEMON_MOUNTINFO_H
#define ARRAYFS_DAEMON_MOUNTINFO_H

#include <stdbool.h>

/** One mount, as mountinfo lists it. */
struct afd_mountinfo {
	int mnt_id;
	unsigned major, minor;
	char fstype[64];
};

/**
 * The topmost mount whose mount point is @p path (absolute, resolved),
 * and of file system type @p fstype when not NULL. Mounts stacked on one
 * point are listed in the order they were made, so the last one wins.
 * Returns 0 with *out filled, -ENOENT when none, or -errno.
 */
int afd_mountinfo_top(const char *path, const char *fstype,
		      struct afd_mountinfo *out);

/** The mount with id @p mnt_id: 0 with *out filled, -ENOENT, or -errno. */
int afd_mountinfo_by_id(int mnt_id, struct afd_mountinfo *out);

#endif /* ARRAYFS_DAEMON_MOUNTINFO_H */
