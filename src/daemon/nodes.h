/* SPDX-License-Identifier: MIT */
/**
 * The node table: every inode the kernel knows, keyed by identity.
 *
 * Invariants:
 *  - A node's identity (kind, entry, path, member, version, sub) and its
 *    parent/name are immutable; only nlookup, the summary, served_gen,
 *    openless and the range change (nlookup and the summary under the table
 *    lock, served_gen and the range atomically, openless under the
 *    open-less set's lock; the last three in afd_node_io).
 *  - A node that serves bytes (plain file, npz member, array entry) is one
 *    version of its source: the version is part of its identity, so a
 *    source that changed gets a new nodeid at its next lookup, and the old
 *    one keeps serving its own version (or EIO), never the new bytes under
 *    the old page cache. Folders have version 0.
 *  - One node per identity: a second lookup of the same thing returns the
 *    same node. The root is never freed.
 *  - Nodeids come from the id map (idmap.h), not from addresses: a counter
 *    never reused, with a generation, and a record of what each id names
 *    kept after FORGET (bounded), so an id the kernel forgot can be looked
 *    up again (export.h). An identity seen again gets its old id back while
 *    its record lasts and its source file (dev/ino) is the same.
 *  - st_ino is a hash of (path, member, entry, sub) only, not of the kind, so
 *    it survives forget/lookup and a plain file turning into an array dir
 *    keeps its inode number; the kind is in the table key, so such a change
 *    gets a fresh nodeid (the kernel never sees an inode change type).
 *  - Lookups are hash-table hits, never scans; a second index by source
 *    path lets the notifier find every node built from one source file.
 */
#ifndef ARRAYFS_DAEMON_NODES_H
#define ARRAYFS_DAEMON_NODES_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "idmap.h"
#include "slab.h"

struct afd_openless;

/* The numbers of afd_nkind and afd_entry are stored in the id map's file
 * (idmap_file.c): never renumber one; change its FORMAT if you must. */
enum afd_nkind {
	NK_DIR = 1,   /* a mirrored source folder */
	NK_FILE = 2,     /* a source file served as-is (also fifos etc.) */
	NK_LINK = 3,     /* a source symlink */
	NK_ARRAY = 4,    /* X.npy / X.ra, or an npz member K.npy (member set) */
	NK_NPZDIR = 5,   /* an npz root (member "") or sub-folder ("a/b/") */
	NK_MEMBER = 6,   /* a non-array npz member, served uncompressed */
	NK_ENTRY = 7,    /* one file of an array directory */
	NK_ZARRDIR = 8,  /* B.zarr/ of an array directory (entry AE_ZARR) */
	NK_ZARRFILE = 9, /* a file in B.zarr/ (AE_ZARRAY .. AE_ZCHUNK) */
	/* `.zarr/` (zarr_group_models.h): path and member are the folder's (a mirrored
	 * folder: member NULL; an npz folder: its prefix "" or "a/"), sub the
	 * depth below the `.zarr` it was reached from (0: `.zarr` itself), so
	 * that one folder seen as `.zarr` and as a sub-group are two folders */
	NK_ZGROUP = 10,
	/* .zgroup, .zattrs, zarr.json, .zmetadata of a group; .zmetadata's
	 * version is its document's digest and its sub the document's length */
	NK_ZGFILE = 11,
	/* a child array `.zarr/KEY/`: path and member are the array's, sub
	 * (depth << 1 | 1 when KEY is its full name, 0 when without .npy/.ra) */
	NK_ZGARRAY = 12,
	/* a file of `.zarr/KEY/`: entries AE_ZGA_*, sub the chunk index, or
	 * (metadata) 1 when KEY is the full name */
	NK_ZGAFILE = 13,
};

enum afd_entry {
	AE_NONE = 0,
	AE_DATA = 1,
	AE_SHAPE = 2,
	AE_DTYPE = 3,
	AE_HEADER = 4,
	AE_NPY = 5,
	AE_RA = 6,
	AE_HDR = 7,       /* data.hdr */
	AE_NHDR = 8,      /* B.nhdr */
	AE_ZARR = 9,      /* B.zarr/ */
	AE_NAMES = 10,     /* names: only in a `.stack/` (stackdir.h) */
	AE_COUNT = 11,     /* the entries of an array directory end here */
	AE_ZARRAY = 12,    /* in B.zarr/: .zarray, .zattrs, zarr.json, chunk `sub` */
	AE_ZATTRS = 13,
	AE_ZJSON = 14,
	AE_ZCHUNK = 15,
	AE_ZGROUP = 16,    /* a `.zarr/` group folder */
	AE_ZG_ZGROUP = 17, /* its .zgroup, .zattrs, zarr.json, .zmetadata */
	AE_ZG_ZATTRS = 18,
	AE_ZG_ZJSON = 19,
	AE_ZG_ZMETA = 20,
	AE_ZGA = 21,       /* `.zarr/KEY/` of a child array */
	AE_ZGA_ZARRAY = 22, /* in it: B.zarr/'s AE_ZARRAY .. AE_ZCHUNK, own inodes */
	AE_ZGA_ZATTRS = 23,
	AE_ZGA_ZJSON = 24,
	AE_ZGA_ZCHUNK = 25,
};

/* The last kind and entry (what a saved id map may name). */
#define AFD_NKIND_LAST NK_ZGAFILE
#define AFD_ENTRY_LAST AE_ZGA_ZCHUNK

/* What only a node that serves bytes keeps (afd_node_serves): in its
 * block, right before the node (afd_node_io). */
struct afd_node_io {
	uint64_t served_gen;   /* source version last opened (keep_cache) */
	struct afd_openless *openless; /* its handle for open-less reads
					* (openless.h), under that set's lock */
	/* `data` of a .npy/.ra file whose bytes are one unchanged range of
	 * the source in this node's version: its first read opens the file
	 * and serves the range, no parse (afd_nodes_range_*) */
	uint64_t range_off, range_len;
};

/*
 * A listing keeps a node per name (a million in one folder), so a node is
 * one block holding only what every kind needs: what some kinds keep goes
 * in a tail before it (a serving node's afd_node_io; an array folder's
 * packed summary, arrsum.h), its strings after it (path; then the name
 * unless it is path's last component; then the member). The name and
 * st_ino are found (afd_node_name, afd_node_ino), not kept.
 */
struct afd_node {
	uint64_t nodeid;       /* its id for the kernel (root: FUSE_ROOT_ID) */
	uint64_t nlookup;
	uint64_t parent;       /* parent nodeid, 0 for the root */
	uint64_t version;      /* source version served, 0 for folders */
	uint64_t sub;          /* AE_ZCHUNK: the chunk index, else 0 */
	char *member;          /* npz member name or folder prefix, else NULL */
	struct afd_node *id_next, *src_next, *nid_next;
	uint32_t key;          /* the identity's hash (key_of), its low bits */
	uint32_t gen;          /* its generation (0 for the root) */
	int wd;                /* inotify watch of an NK_DIR, or -1 */
	enum afd_nkind kind : 8;
	enum afd_entry entry : 8;
	bool watched;          /* every change to what it shows is pushed to
				* the kernel (else it is cached briefly) */
	bool ranged;           /* atomic: set (release) after the range */
	bool summed;           /* its packed summary is set (under the lock) */
	bool name_in_path;     /* its name is path's last component, else
				* it follows path (afd_node_name) */
	bool in_slab;          /* its block is a cell of the table's slab */
	char path[];           /* source-relative path ("." = the root) */
};

/** Whether nodes of kind @p k serve bytes (files; not folders or links):
 * only those have an afd_node_io. */
bool afd_node_serves(enum afd_nkind k);
/** The serving state of @p n, or NULL for a folder or a link. */
struct afd_node_io *afd_node_io(const struct afd_node *n);
/** The name of @p n in its parent folder. */
const char *afd_node_name(const struct afd_node *n);
/** The st_ino of @p n (afd_ino_of_sub of its identity). */
uint64_t afd_node_ino(const struct afd_node *n);

struct afd_nodes {
	pthread_mutex_t lock;
	struct afd_node *root;
	struct afd_node **id_tab, **src_tab, **nid_tab;
	size_t nbuckets, count;
	size_t freed;          /* nodes freed since afd_nodes_trim_due said so */
	struct afd_idmap ids;  /* every id issued, and what it names */
	struct afd_slab slab;  /* the nodes' blocks, but long ones (slab.h) */
};

/* Nodes freed between two returns of the heap's free memory to the
 * system (afd_nodes_trim_due): 16,384 nodes are about 5 MB. Fewer, at
 * least AFD_NODES_TRIM_MIN, when more were freed than are left. */
#define AFD_NODES_TRIM_AFTER 16384u
#define AFD_NODES_TRIM_MIN 1024u

/** Stable st_ino for an identity (never 0 or 1). */
uint64_t afd_ino_of(const char *path, const char *member, enum afd_entry e);
/** The same with a chunk index (@p sub 0 gives afd_ino_of's number). */
uint64_t afd_ino_of_sub(const char *path, const char *member, enum afd_entry e,
			uint64_t sub);

/** Set up the table with its root node and an empty id map (the default
 * bound, a new generation). Returns 0 or -ENOMEM. */
int afd_nodes_init(struct afd_nodes *t, enum afd_nkind root_kind,
		   const char *root_path, const char *root_member);
/** Free every node. */
void afd_nodes_destroy(struct afd_nodes *t);

/** The live node for a nodeid the kernel sent (FUSE_ROOT_ID = the root),
 * or NULL when no node has that id now. */
struct afd_node *afd_nodes_from_id(struct afd_nodes *t, uint64_t nodeid);
/** The nodeid to give the kernel for @p n. */
uint64_t afd_nodes_id(const struct afd_nodes *t, const struct afd_node *n);

/**
 * Find or create the node for an identity and count one lookup. @p src is
 * the lstat of its source file or folder (afd_res.st): its dev/ino go in
 * the id's record. Returns NULL on ENOMEM. *created tells whether it is new.
 */
struct afd_node *afd_nodes_get(struct afd_nodes *t, enum afd_nkind kind,
			       enum afd_entry e, const char *path,
			       const char *member, uint64_t version,
			       uint64_t parent, const char *name,
			       const struct stat *src, int *created);
/** The same for an identity with a chunk index @p sub (B.zarr/ chunks). */
struct afd_node *afd_nodes_get_sub(struct afd_nodes *t, enum afd_nkind kind,
				   enum afd_entry e, const char *path,
				   const char *member, uint64_t version,
				   uint64_t sub, uint64_t parent,
				   const char *name, const struct stat *src,
				   int *created);

/**
 * The live node with id @p nodeid with one more lookup counted, or NULL.
 */
struct afd_node *afd_nodes_ref_id(struct afd_nodes *t, uint64_t nodeid);

/** A malloc'd copy of the id map's record of @p nodeid (free()), or NULL. */
struct afd_idrec *afd_nodes_record(struct afd_nodes *t, uint64_t nodeid);

/**
 * Bring back the node a record names (its source checked by the caller),
 * with the record's id and generation, one lookup counted. If that id is
 * live meanwhile, that node. Returns NULL with *err -ENOMEM, or -ESTALE
 * when the identity is live under another id. *created as above.
 */
struct afd_node *afd_nodes_adopt(struct afd_nodes *t,
				 const struct afd_idrec *rec, int *created,
				 int *err);

/**
 * Drop @p n lookups. A node reaching 0 is unlinked and returned: the
 * caller drops what hangs on it (its inotify watch, its bound handle) and
 * frees it with afd_node_free. Otherwise NULL.
 */
struct afd_node *afd_nodes_forget(struct afd_nodes *t, struct afd_node *node,
				  uint64_t n);
void afd_node_free(struct afd_node *n);
/**
 * Whether AFD_NODES_TRIM_AFTER nodes were freed since it last said so,
 * AFD_NODES_TRIM_MIN and more than the table holds now, or any and only
 * the root is left (then it counts again): the forget that freed them
 * gives the heap's
 * free memory back to the system, or the daemon would keep the peak of
 * the biggest walk of the tree for good.
 */
bool afd_nodes_trim_due(struct afd_nodes *t);
/** How many nodes the table holds, the root included (for the -d log). */
size_t afd_nodes_count(struct afd_nodes *t);

struct afd_arrsum;
/**
 * Remember @p sum (copied) as what array folder node @p n's source
 * version holds. Returns 0 or -ENOMEM (then nothing is remembered).
 */
int afd_nodes_sum_set(struct afd_nodes *t, struct afd_node *n,
		      const struct afd_arrsum *sum);
/** Copy what afd_nodes_sum_set last remembered for @p n into *out;
 * false when nothing is. */
bool afd_nodes_sum_get(struct afd_nodes *t, const struct afd_node *n,
		       struct afd_arrsum *out);
/** The same for the live array folder node of source file @p path (not an
 * npz member), if there is one: a listing asks it of every array name. */
bool afd_nodes_sum_of_path(struct afd_nodes *t, const char *path,
			   struct afd_arrsum *out);

/**
 * Remember that entry node @p n serves bytes [@p off, @p off + @p len) of
 * its source file, unchanged, in the node's version (the same for every
 * caller: it comes from the parse of that version). Lock-free.
 */
void afd_nodes_range_set(struct afd_node *n, uint64_t off, uint64_t len);
/** The range afd_nodes_range_set remembered for @p n; false when none. */
bool afd_nodes_range_get(const struct afd_node *n, uint64_t *off,
			 uint64_t *len);

/** One notification target collected under the lock. */
struct afd_inval {
	uint64_t nodeid;       /* invalidate this inode (0: none) */
	uint64_t parent;       /* invalidate entry (parent, name) (0: none) */
	char *name;            /* malloc'd */
};

/**
 * Collect what must be invalidated when source path @p path changed: every
 * node built from it, and the entry @p path in its folder's node.
 * With @p path NULL: every node. *out is malloc'd (free items and array).
 * Returns the count, or -ENOMEM.
 */
long afd_nodes_collect(struct afd_nodes *t, const char *path,
		       struct afd_inval **out);

/**
 * The entry of live node @p nodeid of generation @p gen: its folder's
 * nodeid and its name (malloc'd), for an invalidation sent outside the
 * lock. Returns 0, -ENOENT when no such node is live now or it is the
 * root, or -ENOMEM.
 */
int afd_nodes_entry_of(struct afd_nodes *t, uint64_t nodeid, uint32_t gen,
		       uint64_t *parent, char **name);

#endif /* ARRAYFS_DAEMON_NODES_H */
