/* SPDX-License-Identifier: MIT */
/**
 * Per-thread splice pipes. A read splices its source bytes into the
 * calling thread's pipe first and hands the pipe to libfuse as an fd
 * buffer: the bytes still move by page reference (no copy), but an I/O
 * error or a short count is seen here, before any reply. (Given the
 * source fd itself, libfuse would turn an error after the first byte into
 * a short reply, which the kernel takes for the end of the file.)
 *
 * Invariant: a pipe holds nothing between requests; one that may (a reply
 * failed half way) is closed and made anew.
 */
#ifndef ARRAYFS_DAEMON_SPIPE_H
#define ARRAYFS_DAEMON_SPIPE_H

#include <pthread.h>
#include <stddef.h>
#include <sys/types.h>

struct afd_spipe;

/** The key under which each thread keeps its pipe. Returns 0 or -errno. */
int afd_spipe_key_create(pthread_key_t *key);
void afd_spipe_key_delete(pthread_key_t key);

/** This thread's pipe (made on first use), or NULL if none can be made. */
struct afd_spipe *afd_spipe_get(pthread_key_t key);

/**
 * Move up to @p len bytes at @p pos of @p fd into pipe @p p.
 * Returns the count moved (less than @p len when the pipe is full or the
 * file ends; the caller tells which apart by what it expected), or -errno.
 */
ssize_t afd_spipe_fill(struct afd_spipe *p, int fd, off_t pos, size_t len);
/** The pipe's read end, to hand to libfuse. */
int afd_spipe_fd(const struct afd_spipe *p);
/** After the reply: make sure nothing is left in the pipe. */
void afd_spipe_reset(struct afd_spipe *p);

#endif /* ARRAYFS_DAEMON_SPIPE_H */
