/* SPDX-License-Identifier: MIT */
/**
 * What a node is now: resolving a node (or a name in a folder node) against
 * the current version of its source, and the attributes the kernel sees.
 *
 * Every call re-checks the source (one fstatat, plus a parse when it
 * changed), so a stale node answers -ENOENT rather than old data.
 */
#ifndef ARRAYFS_DAEMON_TREE_H
#define ARRAYFS_DAEMON_TREE_H

#include <sys/stat.h>

#include "nodes.h"
#include "srcfile.h"

struct afd_ctx;

/** A node identity, as stored in afd_node (strings borrowed or owned). */
struct afd_id {
	enum afd_nkind kind;
	enum afd_entry entry;
	char *path;
	char *member;
	const char *name;   /* the name in the parent (for B.npy / B.ra) */
	uint64_t sub;       /* AE_ZCHUNK: the chunk index (nodes.h) */
};

/** A node resolved against its source. */
struct afd_res {
	struct afd_src *sf;               /* referenced, or NULL */
	struct stat st;                   /* the source's lstat */
	const struct afd_arrinfo *ai;     /* NK_ARRAY / NK_ENTRY */
	long midx;                        /* npz member, or -1 */
	long zdir;                        /* NK_NPZDIR folder, or -1 */
	struct afd_stack *stk;            /* under `.stack/`: referenced */
	/* an entry, or an array folder listed again, looked up from the
	 * array folder node's afd_arrsum: then sf and ai are NULL, and st is
	 * a fresh lstat of that version */
	bool summed;
	struct afd_arrsum sum;
	/* `.zarr/` files (zarr_group_nodes.h): a text's size, and .zmetadata's
	 * version (the digest of its document) */
	uint64_t zsize, zkey;
};

/** The identity of node @p n (borrows its strings). */
struct afd_id afd_id_of(const struct afd_node *n);

/**
 * Resolve @p id. With @p fd_out (NK_ARRAY/NK_ENTRY of a .npy/.ra only),
 * the source is opened and *fd_out is of the version resolved (caller
 * closes; -1 otherwise). Returns 0 (release with afd_res_release) or
 * -ENOENT when the source no longer has this thing, or -errno.
 */
int afd_resolve(struct afd_ctx *c, const struct afd_id *id, int *fd_out,
		struct afd_res *r);
void afd_res_release(struct afd_res *r);

/** The attributes of @p id resolved as @p r (st_ino included). */
void afd_attr(struct afd_ctx *c, const struct afd_id *id,
	      const struct afd_res *r, struct stat *out);

/**
 * The version of its source that a node for @p id resolved as @p r serves
 * (nodes.h): the same number afd_handle_open computes for that version.
 */
uint64_t afd_version_of(const struct afd_id *id, const struct afd_res *r);

/**
 * Resolve name @p name in folder node @p parent. An entry of an array
 * folder whose node remembers the source's version (afd_nodes_sum_get)
 * costs one lstat and no parse while the source is still that version. On 0, *child holds the
 * new identity (path and member malloc'd: afd_id_free) and *r its
 * resolution. With @p fd_out, `data` answered that way opens the source
 * instead of stat'ing it: *fd_out is then an fd (O_RDONLY) of exactly the
 * version remembered, for the caller to keep or close; -1 otherwise.
 * @p since: for a listing's entry, the tick it began at (afd_src_tick): an
 * array file parsed since then is taken from the source cache unchecked
 * (afd_src_get_opening); 0 for a lookup.
 * Returns -ENOENT (negative entry), -ENOTDIR, -errno.
 */
int afd_lookup(struct afd_ctx *c, const struct afd_node *parent,
	       const char *name, uint64_t since, struct afd_id *child,
	       struct afd_res *r, int *fd_out);
void afd_id_free(struct afd_id *id);

/** True for the entries served as a text made at open (shape, data.hdr ...). */
bool afd_entry_is_text(enum afd_entry e);
/** Which entry of array folder @p dirname is called @p name (AE_NONE: none). */
enum afd_entry afd_entry_of(const char *dirname, const char *name);
/** The file name of entry @p e (< AE_COUNT) in array folder @p dirname,
 * malloc'd (NULL: no memory, or not an array folder entry). */
char *afd_entry_name(const char *dirname, enum afd_entry e);
/** The name of an array folder node (its source name for a single-file root). */
const char *afd_array_dirname(const struct afd_node *n);

#endif /* ARRAYFS_DAEMON_TREE_H */
