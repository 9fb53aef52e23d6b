/* SPDX-License-Identifier: MIT */
/**
 * Change notification: inotify on the source folders the kernel knows, and
 * one thread that tells the kernel to drop what it cached about a changed
 * source (fuse_lowlevel_notify_inval_inode / _inval_entry).
 *
 * Those calls are never made from a request handler: libfuse warns they
 * can deadlock there. Handlers only queue a path (afd_notify_path); the
 * thread does the rest. It also drops the entries of the array folders a
 * walk listed past its bound (walked.h). Before afd_notify_start and after
 * afd_notify_stop, queueing is a no-op.
 */
#ifndef ARRAYFS_DAEMON_NOTIFY_H
#define ARRAYFS_DAEMON_NOTIFY_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

struct afd_ctx;

struct afd_wdpath {
	int wd;
	unsigned refs;
	char *path;
	struct afd_wdpath *next;
};

/* Buckets of the wd -> folder map (wds grow one by one: wd & mask spreads). */
#define AFD_WD_BUCKETS 1024u

struct afd_nqitem {
	char *path;
	bool drop;
	struct afd_nqitem *next;
};

struct afd_notify {
	pthread_mutex_t lock;
	int ifd;                 /* inotify, or -1 when unavailable */
	int efd;                 /* eventfd: queue not empty / stop */
	bool running, stop;
	pthread_t thread;
	struct afd_nqitem *head, *tail;
	size_t queued;
	struct afd_wdpath **wds; /* watch descriptor -> folder path */
	char *single_name;       /* single-file source: its name in root_dir */
};

int afd_notify_init(struct afd_notify *n);
/** Start the thread (after daemonizing: threads do not survive fork). */
int afd_notify_start(struct afd_ctx *c);
/** Stop and join the thread; queued work is dropped. */
void afd_notify_stop(struct afd_ctx *c);
void afd_notify_destroy(struct afd_notify *n);

/**
 * Queue "source path @p path changed". With @p drop the cached parse of it
 * is forgotten too (inotify saw a change the stat identity may not show).
 */
void afd_notify_path(struct afd_ctx *c, const char *path, bool drop);

/** Wake the thread: it has array folders past the walk bound to drop
 * (walked.h). */
void afd_notify_kick(struct afd_ctx *c);

/**
 * Watch source folder @p path (relative). Returns the wd or -1.
 * *pushed tells whether every change in it will be seen: false when the
 * watch failed or the folder is on a network file system (inotify sees
 * only this machine's changes there).
 */
int afd_notify_watch(struct afd_ctx *c, const char *path, bool *pushed);
/** Drop one use of watch @p wd. */
void afd_notify_unwatch(struct afd_ctx *c, int wd);

#endif /* ARRAYFS_DAEMON_NOTIFY_H */
