/* SPDX-License-Identifier: MIT */
/**
 * Reading a `.stack`'s data: member i's bytes, from a bounded set of
 * member fds shared by every reader of the mount.
 *
 * Invariants:
 *  - At most AFD_MFD_SLOTS member fds (stackdir.h) stay open
 *    (direct-mapped by stack and member; a slot in use is never closed, a
 *    reader that finds its slot taken opens the member for that read alone
 *    and closes it).
 *  - A member's bytes are served only if the member is still the version
 *    the stack listed: its identity (dev, ino, size, mtime, ctime) is
 *    checked after the bytes were read (ctime cannot be set back, so an
 *    unchanged identity after the read means nothing was written since
 *    the scan). Otherwise the read is -EIO, logged once: a reader of an
 *    old stack never sees a mix.
 *  - Members the codec must decode (LZ4 .ra, deflated npz members) are
 *    read through their shared decoders (lz4share.h, srcfile.h), the
 *    last two a reader read kept between its reads (below).
 */
#ifndef ARRAYFS_DAEMON_STACKREAD_H
#define ARRAYFS_DAEMON_STACKREAD_H

#include <pthread.h>
#include <stdint.h>

#include "arrayfs/arrayfs.h"

struct afd_ctx;
struct afd_stack;

/** One open file's way to a stack's data. */
/* Decoded members a reader keeps between its reads. */
#define AFD_STACK_KEPT 2u

struct afd_stackread {
	struct afd_ctx *c;
	struct afd_stack *stk;    /* referenced */
	af_stack_reader r;
	af_source src;            /* the stack's data (af_stack_source_init) */
	uint64_t last;            /* the member read last (atomic; a hint) */
	/* The decoded members kept between reads, so a sequential reader's
	 * next read goes on where the last one stopped instead of decoding
	 * the member again from its first byte: a deflated npz member (a
	 * reference on its archive's shared member, afd_src_member_open,
	 * with its read-ahead and saved index), or an LZ4 .ra member (its
	 * version's shared LZ4 index, lz4share.h, in klz4; an LZ4 read holds
	 * klock). Two: the kernel's read-ahead sends reads out of order, so
	 * a read of a member's tail may come after one of the next member's
	 * head. kept[k] UINT64_MAX: none; knext is replaced next. Under
	 * klock. */
	pthread_mutex_t klock;
	uint64_t kept[AFD_STACK_KEPT];
	struct afd_lz4share *klz4[AFD_STACK_KEPT];
	unsigned knext;
};

/**
 * A reader of @p stk's data (referenced until afd_stackread_close).
 * Returns NULL out of memory.
 */
struct afd_stackread *afd_stackread_open(struct afd_ctx *c,
					 struct afd_stack *stk);
/**
 * Decoded bytes a reader of @p stk may keep (the bound handles' budget,
 * openless.h): the LZ4 indexes of AFD_STACK_KEPT members where members are
 * LZ4 .ra files, else 0 (deflated members count as their archive's do:
 * nothing).
 */
size_t afd_stackread_cost(const struct afd_stack *stk);

/** Free @p r (NULL: nothing) and drop its hold on the stack. */
void afd_stackread_close(struct afd_stackread *r);

/**
 * For a splice: an fd holding member @p i's data from byte *pos on,
 * checked to be the version listed. Returns the fd (give it back with
 * afd_stackread_fd_put with the same *tag) or -errno (-EIO logged).
 * Members read through the codec return -ENOTSUP: copy them.
 */
int afd_stackread_fd_get(struct afd_stackread *r, uint64_t i, uint64_t *pos,
			 int *tag);
/**
 * Give back what afd_stackread_fd_get gave, after the bytes were taken:
 * the identity is checked again (0), else -EIO (logged once).
 */
int afd_stackread_fd_put(struct afd_stackread *r, uint64_t i, int fd, int tag);

#endif /* ARRAYFS_DAEMON_STACKREAD_H */
