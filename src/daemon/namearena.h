/* SPDX-License-Identifier: MIT */
/**
 * Names kept for as long as a model lives, packed: one malloc a block of
 * many names instead of one a name (a `.zarr/` folder model of 1,000,000
 * children keeps 1,000,000 names). A name never moves once added, so the
 * model points at it; all go at once.
 */
#ifndef ARRAYFS_DAEMON_NAMEARENA_H
#define ARRAYFS_DAEMON_NAMEARENA_H

#include <stddef.h>

/** Bytes of one block; a longer name gets a block of its own size. */
#define AFD_NAMES_BLOCK 65536u

struct afd_names_block;

struct afd_names {
	struct afd_names_block *last;  /* the block names go into; each
					* points at the one before */
	size_t used;                   /* bytes of last taken */
	size_t bytes;                  /* bytes of every block, for the bounds */
};

/** An empty arena (also what a zeroed struct is). */
void afd_names_init(struct afd_names *a);

/** A copy of the @p len bytes at @p name, NUL-terminated, stable until
 * afd_names_free; NULL out of memory (or @p len too large for a size). */
const char *afd_names_add(struct afd_names *a, const char *name, size_t len);

/** Release every name of @p a and empty it. */
void afd_names_free(struct afd_names *a);

#endif /* ARRAYFS_DAEMON_NAMEARENA_H */
