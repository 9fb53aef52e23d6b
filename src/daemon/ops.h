/* SPDX-License-Identifier: MIT */
/* The FUSE low-level operations table: the only code that replies. */
#ifndef ARRAYFS_DAEMON_OPS_H
#define ARRAYFS_DAEMON_OPS_H

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif
#include <fuse_lowlevel.h>

extern const struct fuse_lowlevel_ops afd_ops;

#endif /* ARRAYFS_DAEMON_OPS_H */
