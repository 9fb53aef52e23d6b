/* SPDX-License-Identifier: MIT */
/*
 * What the handle files share: handle.c makes and closes handles, and
 * handle_read.c reads them (handle.h says how to use both). Only these
 * two files see inside a handle.
 */
#ifndef ARRAYFS_DAEMON_HANDLE_I_H
#define ARRAYFS_DAEMON_HANDLE_I_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "ctx.h"
#include "fail.h"
#include "handle.h"

struct afd_zarr_chunk;
struct afd_lz4share;

enum afd_hkind {
	H_PLAIN = 1,  /* a source file served as-is from its fd */
	H_RAW,        /* an af_source served as-is (npz plain member, or a
		       * `data` that is one range of its file: open_range) */
	H_VIEW,       /* data, B.npy, B.ra, a chunk file of B.zarr/ */
	H_TEXT,       /* shape, dtype, header, sidecars, Zarr metadata */
};

struct afd_handle {
	unsigned refs;           /* atomic */
	enum afd_hkind kind;
	int fd;                  /* owned: plain file or .npy/.ra source */
	struct afd_src *sf;      /* referenced */
	long midx;               /* member held open, or -1 */
	const af_source *src;
	af_source fsrc;
	af_view *view;
	struct afd_zarr_chunk *zc;   /* a chunk file: read through it, not view */
	struct afd_stackread *sr; /* under `.stack/`: its members (stackread.h) */
	bool text_borrowed;      /* text is the stack's names: not freed */
	char *text;
	size_t tlen;
	int check_fd;            /* fd whose data must not change, or -1 */
	struct afd_ident id;     /* its version at open */
	char *where;             /* for log lines */
	struct stat attr;        /* what getattr on this open file answers */
	uint64_t version;        /* of the source it opened (nodes.h) */
	size_t cost;             /* bytes it may decode and keep (LZ4) */
	struct afd_lz4share *lz4; /* the LZ4 index its view reads through */
};

/*
 * Record @p err as why @p h failed, said once per @p kind and @p index for
 * the file it serves in the version it opened. Returns the -errno to pass up.
 */
static inline int handle_fail(const struct afd_handle *h,
			      struct afd_failure *why, enum afd_line kind,
			      uint64_t index, const af_error *err)
{
	struct afd_logkey k = { kind, afd_ident_key(h->where, &h->id), index };
	return afd_failure_set(why, &k, h->where, err);
}

#endif /* ARRAYFS_DAEMON_HANDLE_I_H */
