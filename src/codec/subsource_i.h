/* SPDX-License-Identifier: MIT */
/**
 * @file subsource_i.h
 * A source over a byte range of another source (an archive member's bytes
 * inside the archive).
 *
 * Invariants:
 *  - When the parent is an fd source, sub->src is a plain fd source with
 *    fd_base shifted (so the daemon can still splice it); a memory parent
 *    gives a plain memory source. Any other parent is read through its own
 *    pread, with ctx pointing at the af_subsource: the af_subsource must
 *    then stay where it is while sub->src (or a copy of it) is in use.
 *  - The parent source value is copied; whatever it points to (fd, memory,
 *    ctx) must outlive the subsource.
 *  - Reads are thread-safe when the parent's are.
 */
#ifndef ARRAYFS_SUBSOURCE_I_H
#define ARRAYFS_SUBSOURCE_I_H

#include <stdint.h>

#include "arrayfs/af_source.h"
#include "arrayfs/af_status.h"

typedef struct af_subsource {
	af_source src;     /* read through this one */
	af_source parent;  /* copy of the parent source */
	uint64_t base;     /* where src's byte 0 is in the parent */
} af_subsource;

/**
 * Make @p sub a source over bytes [off, off + len) of @p parent.
 * Returns AF_OK, AF_E_OVERFLOW (off + len or the fd offset overflows) or
 * AF_E_RANGE (the range runs past the parent's end); on failure *sub is a
 * valid empty source.
 */
af_status af_subsource_init(af_subsource *sub, const af_source *parent,
			    uint64_t off, uint64_t len, af_error *err);

#endif /* ARRAYFS_SUBSOURCE_I_H */
