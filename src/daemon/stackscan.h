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

/* A folder's member heads (AF_HEAD_BYTES each, af_readahead.h) are read
 * ahead by two workers, 128 open or buffered at most, while the codec's
 * af_stack_scan parses the ones before, strictly in order; a folder of
 * fewer than 256 members is read in the scan's thread. */
#define AFD_STACK_AHEAD_WORKERS 2u
#define AFD_STACK_AHEAD_WINDOW 128u
#define AFD_STACK_AHEAD_MIN 256u
#define AFD_STACK_AHEAD_BATCH 16u

/**
 * Scan the folder (or npz folder) of @p s, whose dir, prefix, dirfd or sf
 * and st are set: fill its members, names, key and array directory.
 * Returns 0 (a stack), -ENOENT (none: the reason logged once, keyed by
 * @p version, the folder's) or -errno.
 */
int afd_stack_scan(struct afd_ctx *c, struct afd_stack *s, uint64_t version);

#endif /* ARRAYFS_DAEMON_STACKSCAN_H */
