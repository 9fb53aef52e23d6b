/* SPDX-License-Identifier: MIT */
/**
 * Memory mapped apart from malloc's heap, in segments aligned to their
 * size: what a segment holds finds its segment header by masking its
 * address, and an unmapped segment goes back to the system at once (the
 * heap would keep the pages around live blocks). The id map (idmap.c) and
 * the node slab (slab.c) keep their records in such segments.
 */
#ifndef ARRAYFS_DAEMON_SEGMAP_H
#define ARRAYFS_DAEMON_SEGMAP_H

#include <stddef.h>

/** @p size bytes (a power of two, a multiple of the page size), zeroed,
 * at an address that is a multiple of @p size; NULL when none is left.
 * afd_seg_unmap returns it. */
void *afd_seg_map(size_t size);
/** Return segment @p p of @p size bytes (NULL: nothing). */
void afd_seg_unmap(void *p, size_t size);

#endif /* ARRAYFS_DAEMON_SEGMAP_H */
