/* SPDX-License-Identifier: MIT */
/**
 * An array folder node's summary (struct afd_arrsum, srcfile.h) as the
 * node keeps it: 64 bytes instead of 176, since a listing keeps one per
 * array (a million in one folder).
 *
 * Invariants:
 *  - Exact or nothing: afd_arrsum_pack refuses a summary it cannot give
 *    back bit for bit (a device number, a text size or a header over its
 *    field, a time before 1970 or after 2514, a key that is not the
 *    path's), and the node then remembers
 *    nothing: its lookups parse, as without a summary. The version check
 *    (afd_ident_eq) is never weaker than on the parse's own identity.
 *  - What follows from the rest is not kept: the key is afd_ident_key of
 *    the node's path and the identity; B.npy and B.ra are kept as what
 *    they add to data.
 */
#ifndef ARRAYFS_DAEMON_ARRSUM_H
#define ARRAYFS_DAEMON_ARRSUM_H

#include <stdbool.h>
#include <stdint.h>

#include "srcfile.h"

struct afd_arrsum_packed {
	uint64_t ino, size;          /* the source's identity (afd_ident) */
	uint64_t mtime, ctime;       /* seconds << 30 | nanoseconds */
	uint64_t data;               /* size of `data` */
	uint32_t dev;
	uint32_t data_src_off;       /* where `data` lies, when plain */
	uint16_t npy_more, ra_more;  /* B.npy, B.ra: bytes on top of data */
	/* shape, dtype, header, data.hdr, B.nhdr: small texts */
	uint16_t text[5];
	uint16_t has;                /* afd_arrsum.has, and AFD_ARRSUM_PLAIN */
};

/** Pack @p sum of source file @p path into @p out. false: it does not fit
 * exactly (nothing to remember). */
bool afd_arrsum_pack(struct afd_arrsum_packed *out, const char *path,
		     const struct afd_arrsum *sum);
/** The summary @p p of source file @p path packs. */
void afd_arrsum_unpack(struct afd_arrsum *out, const char *path,
		       const struct afd_arrsum_packed *p);

#endif /* ARRAYFS_DAEMON_ARRSUM_H */
