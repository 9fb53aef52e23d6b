/* SPDX-License-Identifier: MIT */
/**
 * `.zarr/`: every mirrored folder and npz folder as a Zarr group
 * (CONTRACT.md). The codec's model (af_zarr_group.h) decides children,
 * keys and texts; this file lists a folder for it and keeps the models.
 *
 * Invariants:
 *  - Nothing is listed or parsed for a group until a name under `.zarr`
 *    is looked up or resolved.
 *  - An afd_zarr_folder is one version of one folder's model: its
 *    entries. Frozen once published but for what lookups learn of
 *    deferred children (judged, atomic); refs atomic.
 *  - A key listed is found, or is a deferred child whose header was not
 *    read yet (listed DT_UNKNOWN): a lookup reads it, and a key left out
 *    then (logged once) is ENOENT and no longer listed by that model.
 *  - Bounded: AFD_ZARR_GROUP_CACHED models for lookups and listings are kept
 *    (LRU), names only; a walk of a sub-tree builds its own models,
 *    headers kept, one per level, freed as it leaves each folder: never
 *    the whole tree, and nothing of it kept after the walk.
 *  - Fresh: a model is used only while no inotify event came for the mount
 *    since its build began (afd_zarr_group_changed bumps one generation) and
 *    for at most AFD_STACK_UNWATCHED_MS after it ended; group nodes are never cached by the
 *    kernel longer than that (ops.c), so a child added, removed or changed
 *    shows at the next lookup.
 *  - `.zmetadata` is one document of one walk: its node's version is the
 *    digest of its bytes, an open file reads its own copy, so no reader
 *    ever sees two versions of the tree mixed.
 *  - Locking: the cache lock is a leaf; models are built outside it.
 */
#ifndef ARRAYFS_DAEMON_ZARR_GROUP_MODELS_H
#define ARRAYFS_DAEMON_ZARR_GROUP_MODELS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arrayfs/af_zarr_group.h"
#include "namearena.h"
#include "srcfile.h"

struct afd_ctx;

/** The hidden name of the group in every folder. */
#define AFD_ZARR_GROUP_NAME ".zarr"
/** Folder models kept. */
#define AFD_ZARR_GROUP_CACHED 8u
/** Walks of one `.zmetadata` while the notifier sees changes. */
#define AFD_ZARR_GROUP_WALK_TRIES 3u

/** Where a folder of a group lies: a mirrored folder or an npz folder. */
struct afd_zarr_group_loc {
	char *path;     /* source path of the folder, or of the npz */
	char *prefix;   /* npz: "" or "a/"; NULL: a mirrored folder */
};

/* What a lookup model knows of a deferred array child (afd_zarr_folder
 * judged): its header not read yet, read and fine, or left out after all. */
enum afd_zarr_judged { AFD_ZJ_UNREAD = 0, AFD_ZJ_CHILD, AFD_ZJ_LEFT };

struct afd_zarr_folder {
	unsigned refs;               /* atomic */
	struct afd_zarr_group_loc loc;
	struct afd_src *npz;         /* npz: the archive's parse, referenced */
	size_t n;
	af_zarr_group_entry *e;      /* the entries the model is built from; a
				      * sub-group's folder: its afd_zarr_group_loc */
	struct afd_names names;      /* the entries' names */
	/* a walk's model for `.zmetadata` (arrays): each array entry's parse
	 * or NULL, its header in e[i].array. A lookup model of a mirrored
	 * folder holds names only: its array entries are deferred, each
	 * header read when its key is looked up (judged: one atomic byte an
	 * entry, enum afd_zarr_judged), about 100 bytes a child in all */
	struct afd_src **srcs;
	unsigned char *judged;
	af_zarr_group g;
	bool arrays;
	uint64_t gen, made_ms;       /* when it was built */
};

struct afd_zarr_groups {
	pthread_mutex_t lock;        /* the slots and gen (a leaf) */
	struct afd_zarr_folder *slot[AFD_ZARR_GROUP_CACHED];
	uint64_t used[AFD_ZARR_GROUP_CACHED];
	uint64_t gen, tick;
	/* a lookup model of at most this many array children reads every
	 * header at its build (one at a time, none kept), so its listing
	 * is exact; past it (no `.zmetadata` either) headers are read at
	 * lookup. AF_ZARR_CONSOLIDATED_MAX_ARRAYS; set once, before use */
	size_t judged_max;
	/* the last `.zmetadata` a lookup sized, for the open that follows
	 * (`cat` walks the tree once, not twice): its group, the document,
	 * the generation it was walked in, when it was kept (its walk's
	 * end, as a folder model's lifetime counts); at most
	 * one, taken by an open, replaced by the next, dropped by shed */
	struct afd_zarr_group_loc doc_loc;
	char *doc;
	size_t doc_len;
	uint64_t doc_gen, doc_ms;
};

int afd_zarr_groups_init(struct afd_zarr_groups *z);
void afd_zarr_groups_destroy(struct afd_zarr_groups *z);
/** Something changed under the mount (inotify): models are rebuilt. */
/**
 * Drop every cached folder model (a 1,000,000-array folder's is about
 * 100 MB, and one kept past its second would hold the pages around it):
 * after the kernel forgot most of what it held (ops.c after_forget).
 * Models in use stay until put.
 */
void afd_zarr_groups_shed(struct afd_zarr_groups *z);
void afd_zarr_group_changed(struct afd_ctx *c);

/**
 * The current model of the folder at @p path / @p prefix (prefix NULL: a
 * mirrored folder, its array entries deferred); with @p arrays, one that
 * keeps its headers (a folder
 * of more than AF_ZARR_CONSOLIDATED_MAX_ARRAYS array files then gives
 * -E2BIG: no `.zmetadata` can hold it). Entries left out are logged once.
 * Returns 0 (*out referenced: afd_zarr_folder_put), -ENOENT (no such
 * folder), -E2BIG, -ENOMEM, -errno.
 */
int afd_zarr_folder_get(struct afd_ctx *c, const char *path, const char *prefix,
		    bool arrays, struct afd_zarr_folder **out);
void afd_zarr_folder_put(struct afd_zarr_folder *f);

/**
 * Whether child @p ch of lookup model @p f is one: a deferred array's
 * header read now (through the source cache) unless f already knows;
 * one left out after all is logged once. Returns 0, -ENOENT (left out),
 * -ENOMEM.
 */
int afd_zarr_folder_judge(struct afd_ctx *c, struct afd_zarr_folder *f,
			  const af_zarr_group_child *ch);

/** What @p f knows of child @p ch: AFD_ZJ_CHILD for any but a deferred
 * array child. */
enum afd_zarr_judged afd_zarr_folder_judged(const struct afd_zarr_folder *f,
					    const af_zarr_group_child *ch);

/**
 * `.zmetadata` of the group at @p path / @p prefix: the one kept by
 * afd_zarr_group_zmetadata_keep while it is fresh (no change told since
 * its walk began, at most AFD_STACK_UNWATCHED_MS old: as fresh as a
 * folder model), else built now (again, up to AFD_ZARR_GROUP_WALK_TRIES
 * walks, while the notifier saw a change during the walk): *doc malloc'd
 * (the caller frees), *len its length, *gen (may be NULL) the generation
 * of its walk. Returns 0, -ENOENT (past AF_ZARR_CONSOLIDATED_MAX_ARRAYS
 * arrays or AF_ZARR_GROUP_MAX_DEPTH levels, logged once), -ENOMEM.
 */
int afd_zarr_group_zmetadata(struct afd_ctx *c, const char *path,
			     const char *prefix, char **doc, size_t *len,
			     uint64_t *gen);
/**
 * Keep @p doc (taken: freed here or by whoever takes it), which a lookup
 * has just sized, for the open that follows it; replaces the one kept.
 */
void afd_zarr_group_zmetadata_keep(struct afd_ctx *c, const char *path,
				   const char *prefix, char *doc, size_t len,
				   uint64_t gen);

#endif /* ARRAYFS_DAEMON_ZARR_GROUP_MODELS_H */
