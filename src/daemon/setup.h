/* SPDX-License-Identifier: MIT */
/**
 * Setting up and tearing down the per-mount context (ctx.h): the one file
 * that knows every part of the daemon, in the order they are built and
 * the reverse order they are freed. main.c and the unit tests call it;
 * no part does.
 */
#ifndef ARRAYFS_DAEMON_SETUP_H
#define ARRAYFS_DAEMON_SETUP_H

#include "ctx.h"

/** The defaults: 512 handles, 256 MiB after 1 s idle, 4096 sources, 64
 * archives, the id map saved every 30 s while it changes. */
void afd_limits_default(struct afd_limits *l);

/**
 * Open the source and set up every part, with @p o (copied; the context
 * owns o->source from then on) and the monotonic clock. Nothing is
 * mounted. Returns 0, or -1 with a message printed; afd_ctx_destroy
 * either way.
 */
int afd_ctx_init(struct afd_ctx *c, const struct afd_opts *o);
void afd_ctx_destroy(struct afd_ctx *c);

/**
 * Start the read-ahead pool of opts.inflate_threads threads (none for 0
 * or 1: then index_saver, a thread that saves indexes). Called after
 * fuse_daemonize, whose fork would lose threads started before. Returns
 * 0, or -1 with a message printed (the daemon then runs without
 * read-ahead, or saves indexes on the reading threads).
 */
int afd_ctx_start_pool(struct afd_ctx *c);

#endif /* ARRAYFS_DAEMON_SETUP_H */
