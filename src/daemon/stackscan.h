/* SPDX-License-Identifier: MIT */
/**
 * Scanning one folder (or npz folder) for its `.stack` (stackdir.h says
 * what a stack is and when one is scanned).
 */
#ifndef ARRAYFS_DAEMON_STACKSCAN_H
#define ARRAYFS_DAEMON_STACKSCAN_H

#include <stdint.h>

struct afd_ctx;
struct afd_stack;

/**
 * Scan the folder (or npz folder) of @p s, whose dir, prefix, dirfd or sf
 * and st are set: fill its members, names, key and array directory.
 * Returns 0 (a stack), -ENOENT (none: the reason logged once, keyed by
 * @p version, the folder's) or -errno.
 */
int afd_stack_scan(struct afd_ctx *c, struct afd_stack *s, uint64_t version);

#endif /* ARRAYFS_DAEMON_STACKSCAN_H */
