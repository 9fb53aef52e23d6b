/* SPDX-License-Identifier: MIT */
/**
 * The readahead window of this mount. The kernel gives a FUSE mount
 * 128 KiB and lets the file system only lower it at INIT, so a big
 * sequential read costs one round trip per 128 KiB. Root may raise it in
 * sysfs, on the mount's own backing device (no other mount shares it);
 * done between mount and INIT, INIT keeps it.
 *
 * Above about 1 MiB a read no longer fits libfuse's splice pipe
 * (/proc/sys/fs/pipe-max-size) with its header and is copied instead:
 * AFD_READAHEAD_DEFAULT_KB stays well under that.
 */
#ifndef ARRAYFS_DAEMON_READAHEAD_H
#define ARRAYFS_DAEMON_READAHEAD_H

#include "mountinfo.h"

#define AFD_READAHEAD_DEFAULT_KB 512u

/**
 * Set the readahead of mount @p m (this daemon's own, from mountinfo) to
 * @p kb KiB. Returns 0 or -errno (-EACCES when not root).
 */
int afd_readahead_set(const struct afd_mountinfo *m, unsigned kb);

#endif /* ARRAYFS_DAEMON_READAHEAD_H */
