/* SPDX-License-Identifier: MIT */
/**
 * `.stack/`: a folder's (or an npz folder's) arrays as one array, resolved
 * on the first lookup and kept as a compact member table.
 *
 * Invariants:
 *  - Nothing is read until `.stack` is looked up (or a node under it is
 *    resolved): listing a folder never reads a header for it.
 *  - An afd_stack is one version of the folder: its members' names, source
 *    identities and data offsets at the scan, frozen once published (read
 *    by any thread without a lock; refs atomic). Its key, the version its
 *    byte-serving nodes carry (nodes.h), is a digest of all of them.
 *  - The codec decides what stacks (af_stack_member_name, af_stack_scan);
 *    this file lists, opens and remembers.
 *  - Bounded: AFD_STACK_CACHED verdicts (a stack, or "none" and why) are
 *    kept, LRU; a member costs sizeof(struct afd_stack_member) plus its
 *    name; a scan holds one member fd at a time.
 *  - Fresh: a verdict is used only while its folder's identity (ctime
 *    moves with every entry added, removed or renamed) is unchanged and no
 *    inotify event came for the folder (afd_stack_changed); where changes
 *    are not pushed, for at most AFD_STACK_UNWATCHED_MS. An npz verdict is
 *    tied to its archive's parse.
 */
#ifndef ARRAYFS_DAEMON_STACKDIR_H
#define ARRAYFS_DAEMON_STACKDIR_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "srcfile.h"
#include "srcpath.h"

struct afd_ctx;
struct afd_id;

/** The name of the virtual entry in every folder. */
#define AFD_STACK_NAME ".stack"
/** Verdicts kept. */
#define AFD_STACK_CACHED 16u
/** How long a verdict lives where changes are not pushed (ms). */
#define AFD_STACK_UNWATCHED_MS 1000u

/** Member read through the codec (LZ4 `.ra`, deflated npz member). */
#define AFD_SM_DECODE 1u

struct afd_stack_member {
	uint64_t ident;     /* folder: afd_ident_key(NULL, its identity at the
			     * scan); npz: its index in the archive */
	uint64_t data_off;  /* where its data starts: in its file, or (stored
			     * npz member) in the archive; DECODE: in its
			     * decoded bytes */
	uint32_t name_off;  /* its name in names */
	uint32_t flags;     /* AFD_SM_* */
};

struct afd_stack {
	unsigned refs;          /* atomic */
	char *dir;              /* the folder's path, or the npz's */
	char *prefix;           /* npz folder ("" or "a/"), NULL for a folder */
	int dirfd;              /* a folder's fd (members open in it), or -1 */
	struct afd_src *sf;     /* npz: the archive's parse (referenced) */
	struct stat st;         /* attributes of `.stack/` and its files */
	uint64_t key;           /* the version (see above) */
	uint64_t n, member_bytes;
	struct afd_stack_member *m;
	bool lz4_files;         /* a folder's: some member is an LZ4 .ra */
	char *names;            /* "a.npy\nb.npy\n": the `names` file */
	size_t names_len;
	struct afd_arrinfo arr; /* the stacked array's directory */
	af_stack_reader sizes;  /* the reader arr was sized with (reads nothing) */
	struct afd_mfds *mfds;  /* where its member fds are kept */
};

/*
 * The member fds every stack's readers share (one set per mount, in
 * afd_stacks): their slots are set up, stopped, closed and forgotten with
 * the stacks here; stackread.c's readers and prefetch thread take and
 * fill them under the set's lock.
 */

/** Member fds kept open, for the whole mount. */
#define AFD_MFD_SLOTS 256u
/** Read-ahead of member opens: every STEP members read in order, the
 * members from STEP to 3 x STEP ahead are opened by the prefetch thread. */
#define AFD_MFD_STEP 64u
#define AFD_MFD_JOBS 16u

struct afd_mfd {
	const struct afd_stack *stk;  /* whose member (NULL: free) */
	uint64_t i;
	int fd;                       /* -1 while being opened */
	unsigned busy;                /* readers using fd now */
	bool opening;                 /* the prefetch thread is opening it */
};

/** Members to open ahead of a sequential reader. */
struct afd_mfd_job {
	struct afd_stack *stk;        /* referenced while queued */
	uint64_t lo, hi;
};

struct afd_mfds {
	pthread_mutex_t lock;         /* the slots and the jobs (a leaf) */
	struct afd_mfd slot[AFD_MFD_SLOTS];
	const struct afd_srcroot *root;
	/* the prefetch thread, started at the first job */
	pthread_cond_t cv;            /* a job queued, or stop */
	pthread_cond_t opened;        /* a prefetched member is open */
	pthread_t thread;
	bool running, stop;
	struct afd_mfd_job job[AFD_MFD_JOBS];
	unsigned njobs;
};

struct afd_stack_slot {
	char *dir, *prefix;       /* what it is the verdict of (NULL: free) */
	struct afd_stack *stk;    /* referenced, or NULL: no stack */
	struct afd_ident dir_id;  /* the folder's identity at the scan */
	uint64_t src_key;         /* npz: the archive's version */
	uint64_t made_ms, used;
	bool watched;             /* changes to the folder are pushed */
};

/** The verdict cache and the member fds (one per mount, in the context). */
struct afd_stacks {
	pthread_mutex_t lock;     /* the slots and gen (a leaf) */
	struct afd_stack_slot slot[AFD_STACK_CACHED];
	uint64_t gen;             /* counts afd_stack_changed calls */
	uint64_t tick;
	struct afd_mfds mfds;     /* member fds (above) */
};

/** Set up @p s; member fds open beneath @p root's folders. Returns 0. */
int afd_stacks_init(struct afd_stacks *s, const struct afd_srcroot *root);
/** Stop the prefetch thread, drop every verdict, close every member fd. */
void afd_stacks_destroy(struct afd_stacks *s);

/** True if @p id is under a `.stack` (its path or npz member says so). */
bool afd_stack_id(const struct afd_id *id);

/**
 * The current stack of the folder holding `.stack` node @p id (path
 * "dir/.stack", or an npz path with member "a/.stack"), scanned if no
 * fresh verdict is kept. @p watched: the folder's changes are pushed
 * (only a lookup knows; else the last verdict's word, or false).
 * Returns 0 (*out referenced: afd_stack_put), -ENOENT (no stack: the
 * reason was logged once), -ENOMEM or -errno.
 */
int afd_stack_get(struct afd_ctx *c, const struct afd_id *id, bool watched,
		  struct afd_stack **out);
/** Count one more holder of @p s. */
void afd_stack_hold(struct afd_stack *s);
/** Drop one (NULL: nothing); the last frees it and closes its fds. */
void afd_stack_put(struct afd_stack *s);

/** Member @p i's name (not NUL-terminated: *len bytes). */
const char *afd_stack_name(const struct afd_stack *s, uint64_t i, size_t *len);

/**
 * Source path @p path changed (inotify): forget the verdict of the folder
 * holding it. Returns the path of that folder's `.stack` (malloc'd, for
 * the notifier to invalidate), or NULL.
 */
char *afd_stack_changed(struct afd_ctx *c, const char *path);

#endif /* ARRAYFS_DAEMON_STACKDIR_H */
