/* SPDX-License-Identifier: MIT */
/**
 * Handles bound to nodes, for reads that come without an open.
 *
 * When the kernel supports it, open() is answered ENOSYS once and the
 * kernel stops sending open and release: a file costs no round trip to
 * open, and its page cache is kept across opens. Reads then arrive with no
 * file handle, so each node that serves bytes gets one handle of its own,
 * made on its first read and checked against the node's version (a node
 * is one version of its source: nodes.h). A node whose source changed
 * before its first read answers EIO; the next lookup gives a new node.
 *
 * Bounded by the context's limits (ctx.h): at most bound_max handles
 * (each may hold an fd) stay bound, the least recently read closed first
 * and made again if read again. Decoded data (an LZ4 block, decoded whole)
 * is held to bound_budget bytes, but only handles idle for bound_idle_ms
 * on the context's clock give theirs up: readers taking turns on more
 * than the budget would otherwise each decode their file again for every
 * request.
 *
 * Locking: the open-less set's lock guards the list, the counts and every
 * node's `openless`. It is a leaf: nothing else is locked while it is held
 * (handles are closed after it is dropped) and it is never taken under another
 * lock, the nodes lock included. Forget unlinks a node under the nodes
 * lock, drops it, unbinds the node here, then frees it: the set never
 * points at a freed node, as no read reaches a forgotten node. The whole
 * order is in docs/DESIGN.md.
 */
#ifndef ARRAYFS_DAEMON_OPENLESS_H
#define ARRAYFS_DAEMON_OPENLESS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

struct afd_ctx;
struct afd_node;
struct afd_handle;
struct afd_failure;

struct afd_openless {
	struct afd_node *node;
	struct afd_handle *h;
	size_t cost;
	unsigned *shared;      /* the handles of one shared cost (handle.h) */
	uint64_t used_ms;      /* when last read (the context's clock) */
	struct afd_openless *prev, *next;
};

struct afd_openless_set {
	pthread_mutex_t lock;
	struct afd_openless lru;  /* list head: lru.next = most recently read */
	size_t count, bytes;   /* handles bound, and the cost they hold */
};

void afd_openless_set_init(struct afd_openless_set *s);
/** Close every bound handle (at shutdown, no request in flight). */
void afd_openless_set_destroy(struct afd_openless_set *s);

/**
 * The handle of node @p n, made if needed; held (afd_handle_close it).
 * *@p opened (when not NULL) says whether this call opened it, so the
 * source was fstat'ed against the node's version just now. Returns 0, -EIO if the source is no longer the node's version, or the
 * error of opening it; a failure with a reason is in @p why (fail.h).
 */
int afd_openless_get(struct afd_ctx *c, struct afd_node *n,
		  struct afd_handle **out, bool *opened,
		  struct afd_failure *why);
/**
 * Bind @p h, a handle of @p n's version made before any read (a lookup
 * that opened the source anyway), unless @p n has one: then @p h is
 * closed. The caller's hold on @p h is given up either way.
 */
void afd_openless_offer(struct afd_ctx *c, struct afd_node *n,
		     struct afd_handle *h);
/** The attributes of @p n's bound handle into @p st; false if unbound. */
bool afd_openless_attr(struct afd_openless_set *s, struct afd_node *n,
		    struct stat *st);
/** Drop @p n's handle (the kernel forgot the node). */
void afd_openless_unbind(struct afd_openless_set *s, struct afd_node *n);

#endif /* ARRAYFS_DAEMON_OPENLESS_H */
