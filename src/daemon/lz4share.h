/* SPDX-License-Identifier: MIT */
/**
 * The LZ4 index of one version of an LZ4 .ra (af_lz4.h), shared by every
 * handle that decodes it: `data`, `B.npy` and the shared data view of the
 * chunk files of `B.zarr/`. So however many files and handles read one
 * array version, its access points and decoded cache are built and held
 * once, and counted once against the bound handles' budget (openless.h).
 *
 * With the context's pool (inflate_threads), the index walks the LZ4
 * block ahead of its first pass on a pool thread, and decodes ahead of a
 * sequential reader on another (af_lz4_index_set_pool).
 * The share has its own fd of the version (a dup of the opening handle's,
 * which is of exactly that version) and a reference to the source entry;
 * it is published in the entry (afd_src.lz4) under its mlock and freed
 * with its last holder.
 *
 * Locking: the source's mlock guards afd_src.lz4 and the share's refs;
 * nothing is taken under it for them. `bound` (the bound handles counting
 * the share's cost) is guarded by the bound lock.
 */
#ifndef ARRAYFS_DAEMON_LZ4SHARE_H
#define ARRAYFS_DAEMON_LZ4SHARE_H

#include <stddef.h>
#include <stdint.h>

#include "arrayfs/arrayfs.h"

struct afd_ctx;
struct afd_src;

struct afd_lz4share {
	unsigned refs;            /* under sf->mlock */
	struct afd_src *sf;       /* referenced */
	int fd;                   /* its own fd of the version */
	af_source src;
	af_lz4_index *ix;
	size_t cost;              /* af_lz4_index_bound of the decoded size */
	unsigned bound;           /* bound handles counting cost (bound lock) */
	struct afd_ctx *ctx;      /* for the -d line at the last put */
};

/**
 * The share of LZ4 array @p a of source version @p sf, made over a dup of
 * @p fd (an fd of that version) if there is none; counted. Logs a -d line
 * when it makes one. Returns 0, -errno (err says why for a refusal of the
 * codec).
 */
int afd_lz4share_get(struct afd_ctx *c, struct afd_src *sf, const af_array *a,
		     int fd, struct afd_lz4share **out, af_error *err);

/** Drop a reference; the last frees the index, the fd and the source
 * reference. NULL is fine. */
void afd_lz4share_put(struct afd_lz4share *s);

/** Whether view @p kind of @p a reads through an LZ4 index: the view
 * plan's answer (af_cost.lz4_index), so the share is given to exactly the
 * views af_view_open_shared would read through one. */
bool afd_lz4share_wanted(const af_array *a, af_view_kind kind);

#endif /* ARRAYFS_DAEMON_LZ4SHARE_H */
