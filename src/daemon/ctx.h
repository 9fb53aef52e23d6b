/* SPDX-License-Identifier: MIT */
/**
 * The one per-mount context: stored as the session's userdata and read back
 * through afd_ctx(req). Nothing else in the daemon is mutable and global.
 *
 * Invariants: root, root_dir, single and the options are set before the
 * session starts and never change; nodes, srcs and notify have their own
 * locks.
 */
#ifndef ARRAYFS_DAEMON_CTX_H
#define ARRAYFS_DAEMON_CTX_H

#include <stdbool.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "bound.h"
#include "log.h"
#include "nodes.h"
#include "srcfile.h"
#include "notify.h"
#include "openset.h"
#include "srcpath.h"

struct fuse_session;

struct afd_opts {
	char *source;          /* as given */
	double entry_timeout;  /* s: positive entries and attributes */
	double neg_timeout;    /* s: negative entries */
	int uid, gid;          /* -1: the source's */
	unsigned readahead_kb; /* 0: the kernel's */
	int debug, foreground;
};

struct afd_ctx {
	struct afd_opts opts;
	struct afd_srcroot root; /* the source folder (or the file's folder) */
	char *root_dir;        /* its absolute path (for inotify) */
	char *source_abs;      /* SOURCE, absolute (for fsname) */
	bool single;           /* SOURCE is one file: the root is its dir view */
	char *root_path;       /* the root node's source path ("." or file name) */
	struct afd_log log;
	struct afd_nodes nodes;
	struct afd_srcs srcs;
	struct afd_notify notify;
	struct afd_openset open;  /* files and folders the kernel holds open */
	bool have_open;
	struct afd_boundset bound; /* node handles for open-less reads */
	bool have_bound;
	bool no_open;             /* the kernel sends no open (set at init) */
	struct fuse_session *se;
	pthread_key_t pipe_key;   /* each thread's splice pipe (spipe.h) */
	bool have_pipe_key;
};

/** Open the source and set up every part. Returns 0, or -1 with a message printed. */
int afd_ctx_init(struct afd_ctx *c, const struct afd_opts *o);
void afd_ctx_destroy(struct afd_ctx *c);

#endif /* ARRAYFS_DAEMON_CTX_H */
