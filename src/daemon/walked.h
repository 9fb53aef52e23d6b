/* SPDX-License-Identifier: MIT */
/**
 * The array folders a walk listed, oldest first, bounded (`-o max_walked`).
 *
 * A walk (du, find, ls -R) lists every array folder it meets, and the
 * kernel keeps every entry a listing gave it (about 14 an array, with
 * B.zarr/) until memory runs short: on a machine with room, never, so a
 * walk of a million arrays held 12 million inodes and as many nodes
 * here. The kernel's FUSE has no per-entry limit but an entry's timeout,
 * which only ends at the next lookup. So this keeps the last
 * `walked_max` array folders listed; past that the oldest goes to the
 * notifier thread, which tells the kernel to drop its entry
 * (inval_entry): the kernel then drops the folder's sub-tree where
 * nothing uses it, and the FORGETs that follow free its nodes. A folder
 * in use (a process's cwd, an open file) stays where it is used.
 *
 * A plain lookup (X.npy/data read by a first pass) enters nothing: only a
 * listing of the folder itself does. Entries name a node by id and
 * generation, never by pointer: a folder the kernel forgot meanwhile is
 * skipped when its turn comes (afd_nodes_entry_of).
 */
#ifndef ARRAYFS_DAEMON_WALKED_H
#define ARRAYFS_DAEMON_WALKED_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct afd_ctx;
struct afd_node;

struct afd_walked_dir {
	uint64_t nodeid;
	uint32_t gen;
};

struct afd_walked {
	pthread_mutex_t lock;
	size_t max;            /* folders kept listed (0: no bound, none kept) */
	/* cap slots, grown by doubling up to cap_max while the notifier is
	 * behind (it waits on the kernel's lock of each folder's parent,
	 * which the walk's own lookups take too) */
	struct afd_walked_dir *ring;
	size_t cap, cap_max, head, count;
	uint64_t missed;       /* dropped unpruned: even cap_max was full */
	bool draining;         /* a burst of drops is under way (walked.c) */
};

/* Listed folders kept by default: a walk then leaves about 230,000 entries
 * in the kernel (about 250 MB there; the daemon's RSS after du -s of
 * 100,000 arrays: 95 MiB, not 360) rather than 14 an array of the whole
 * tree, and a folder listed again within 16,384 others is still cached
 * (docs/DESIGN.md, Bounds). */
#define AFD_WALKED_MAX_DEFAULT 16384u
/* The largest -o max_walked (the ring: 16 bytes a slot, up to 4 max + 4096
 * slots). */
#define AFD_WALKED_MAX_LIMIT ((size_t)1 << 24)

/** Set up @p w keeping @p max folders (0: off). Returns 0 or -errno. */
int afd_walked_init(struct afd_walked *w, size_t max);
void afd_walked_destroy(struct afd_walked *w);

/**
 * Remember that the kernel listed folder (@p nodeid, @p gen). The same
 * folder listed twice in a row is remembered once; when the ring is full
 * and at its largest (the notifier far behind), the oldest is forgotten
 * unpruned. Returns whether the notifier has work: more than max + max / 8
 * are remembered.
 */
bool afd_walked_add(struct afd_walked *w, uint64_t nodeid, uint32_t gen);

/** Take at most @p n of the oldest folders past the bound into @p out,
 * once there is work (afd_walked_add), until max are left. Returns how
 * many. */
size_t afd_walked_take(struct afd_walked *w, struct afd_walked_dir *out,
		       size_t n);

/**
 * Whether folder @p dir, about to be listed from offset 0, is one the ring
 * keeps (an array folder); *@p out its id. Called before the listing's
 * reply: once the reply is sent the kernel may forget @p dir, and its
 * node be freed, at any moment.
 */
bool afd_walked_of(const struct afd_node *dir, struct afd_walked_dir *out);

/**
 * The listing of folder @p d (afd_walked_of) was sent: it enters the ring,
 * and the notifier is woken when the ring is past the bound.
 */
void afd_walked_listed(struct afd_ctx *c, const struct afd_walked_dir *d);

#endif /* ARRAYFS_DAEMON_WALKED_H */
