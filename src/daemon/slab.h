/* SPDX-License-Identifier: MIT */
/**
 * The node slab: small blocks of one size class packed in segments mapped
 * apart from the heap (segmap.h). A listing of a million arrays keeps a
 * node each: malloc would add its 8-byte header, round each block up to
 * 16 bytes past it, and leave the heap's pages around the few nodes still
 * held after a forget.
 *
 * Invariants:
 *  - A cell is zeroed when given out, 8-aligned, and its segment is found
 *    from its address alone (afd_slab_free needs no slab).
 *  - A segment with no cell in use is unmapped at once, but one per size
 *    class kept for the next: RSS follows what is held.
 *  - Thread-safe: one lock per slab, a leaf (nothing taken under it).
 */
#ifndef ARRAYFS_DAEMON_SLAB_H
#define ARRAYFS_DAEMON_SLAB_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

/* Segment size; cells are multiples of AFD_SLAB_STEP up to AFD_SLAB_MAX
 * bytes (bigger blocks are the caller's to malloc). */
#define AFD_SLAB_SEG (64u * 1024u)
#define AFD_SLAB_STEP 16u
#define AFD_SLAB_MAX 512u
#define AFD_SLAB_CLASSES (AFD_SLAB_MAX / AFD_SLAB_STEP)

struct afd_slab_seg;

struct afd_slab {
	pthread_mutex_t lock;
	/* per class: the segments with a free cell, most recently freed into
	 * or made first */
	struct afd_slab_seg *open[AFD_SLAB_CLASSES];
	size_t mapped;         /* bytes of segments mapped */
};

void afd_slab_init(struct afd_slab *s);
/** Unmap every segment (every cell must be free). */
void afd_slab_destroy(struct afd_slab *s);

/** Whether a block of @p size bytes comes from the slab. */
bool afd_slab_fits(size_t size);
/** A zeroed cell of at least @p size bytes (afd_slab_fits), or NULL. */
void *afd_slab_alloc(struct afd_slab *s, size_t size);
/** Give back cell @p p (from afd_slab_alloc of any slab). */
void afd_slab_free(void *p);
/** Bytes of segments mapped now (tests, the -d log). */
size_t afd_slab_mapped(struct afd_slab *s);

#endif /* ARRAYFS_DAEMON_SLAB_H */
