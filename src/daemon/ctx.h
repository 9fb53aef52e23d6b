/* SPDX-License-Identifier: MIT */
/**
 * The one per-mount context: stored as the session's userdata and read back
 * through afd_ctx(req). Nothing else in the daemon is mutable and global.
 * Its parts are set up and torn down by setup.c, the one file above them
 * all; the parts themselves only read it.
 *
 * Invariants: root, root_dir, single, the options (limits included) and
 * the clock are set before the session starts and never change; nodes,
 * srcs and notify have their own locks.
 */
#ifndef ARRAYFS_DAEMON_CTX_H
#define ARRAYFS_DAEMON_CTX_H

#include <stdbool.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "openless.h"
#include "export.h"
#include "log.h"
#include "nodes.h"
#include "srcfile.h"
#include "notify.h"
#include "openset.h"
#include "srcpath.h"
#include "stackdir.h"
#include "walked.h"
#include "zarr_group_models.h"

struct fuse_session;

/**
 * Every bound the core keeps on what it holds (docs/DESIGN.md, Bounds).
 * Set once, before the session starts, from afd_limits_default and the
 * mount options; a unit test sets them small. A limit of 0 keeps one.
 */
struct afd_limits {
	size_t bound_max;       /* handles bound to nodes (each may hold an fd) */
	size_t bound_budget;    /* decoded bytes those handles keep... */
	uint64_t bound_idle_ms; /* ...given up only by handles idle this long */
	size_t src_max;         /* parsed sources cached */
	size_t src_max_zip;     /* of those, archives (each holds an fd) */
	uint64_t ids_save_ms;   /* the id map is saved this often while it
				 * changes (0: at unmount only), export.h */
	size_t walked_max;      /* array folders listed whose entries the
				 * kernel keeps (0: no bound), walked.h */
};

/**
 * A monotonic clock in milliseconds: now_ms(arg). The daemon's reads
 * CLOCK_MONOTONIC_COARSE; a unit test passes its own and moves it. It is
 * read under the bound lock: it must not block nor take a lock.
 */
struct afd_clock {
	uint64_t (*now_ms)(void *arg);
	void *arg;
};

struct afd_opts {
	char *source;          /* as given */
	double entry_timeout;  /* s: positive entries and attributes */
	double neg_timeout;    /* s: negative entries */
	int uid, gid;          /* -1: the source's */
	unsigned readahead_kb; /* 0: the kernel's */
	char *index_dir;       /* saved inflate indexes (main frees); NULL:
				* none (-o no_index) */
	int no_index;
	uint64_t zarr_chunk;   /* largest B.zarr/ chunk file, bytes (>= 1) */
	unsigned inflate_threads; /* read-ahead threads; 0 or 1: none */
	struct afd_limits limits;
	int debug, foreground;
};

struct afd_ctx {
	struct afd_opts opts;
	struct afd_clock clock;  /* for the idle rule of bound handles */
	struct afd_srcroot root; /* the source folder (or the file's folder) */
	char *root_dir;        /* its absolute path (for inotify) */
	char *source_abs;      /* SOURCE, absolute (for fsname) */
	bool single;           /* SOURCE is one file: the root is its dir view */
	char *root_path;       /* the root node's source path ("." or file name) */
	struct afd_log log;
	struct afd_nodes nodes;
	struct afd_srcs srcs;
	struct afd_notify notify;
	struct afd_walked walked; /* array folders a walk listed (walked.h) */
	bool have_walked;
	struct afd_openset open;  /* files and folders the kernel holds open */
	bool have_open;
	struct afd_stacks stacks; /* `.stack` verdicts and member fds */
	bool have_stacks;
	struct afd_zarr_groups zarr_groups; /* `.zarr` folder models (zarr_group_models.h) */
	bool have_zarr_groups;
	struct afd_saver saver;   /* saves the id map now and then (export.h) */
	struct afd_openless_set openless; /* node handles for open-less reads */
	bool have_openless;
	bool no_open;             /* the kernel sends no open (set at init) */
	struct fuse_session *se;
	pthread_key_t pipe_key;   /* each thread's splice pipe (spipe.h) */
	bool have_pipe_key;
	/* threads that inflate ahead (af_pool.h), started once the daemon
	 * runs (afd_ctx_start_pool); NULL: none. Closed after every source. */
	af_pool *pool;
	/* with no pool: one whose background thread alone saves indexes
	 * (af_pool_open_background). Closed after every source. */
	af_pool *index_saver;
};

/** The time now on @p c's clock, in milliseconds. */
static inline uint64_t afd_now_ms(const struct afd_ctx *c)
{
	return c->clock.now_ms(c->clock.arg);
}

#endif /* ARRAYFS_DAEMON_CTX_H */
