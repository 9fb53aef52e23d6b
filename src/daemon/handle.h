/* SPDX-License-Identifier: MIT */
/**
 * Open files: what open() builds (a view, a text, or a raw source) and how
 * read() turns a byte range of it into a fuse_bufvec: source bytes spliced
 * into this thread's pipe and handed over as an fd buffer (no copy, errors
 * seen before the reply: spipe.h), headers as memory, decoded bytes
 * through af_view_read.
 *
 * A handle holds the fd of the version it opened, so a renamed-over source
 * keeps serving the old inode; a shrunk or rewritten one gives -EIO.
 *
 * handle.c makes and closes handles; handle_read.c reads them.
 */
#ifndef ARRAYFS_DAEMON_HANDLE_H
#define ARRAYFS_DAEMON_HANDLE_H

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif
#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

struct afd_ctx;
struct afd_node;
struct afd_handle;
struct afd_failure;

struct afd_spipe;

/** A read's reply: the bufvec and the scratch and pipe it points into. */
struct afd_rbuf {
	struct fuse_bufvec *bv;
	void *scratch[8];
	size_t nscratch;
	struct afd_spipe *pipe;   /* this thread's, if source bytes are in it */
	bool copy;                /* too small to splice: pread into memory */
};

/**
 * A handle for node @p n's `data` when it is one range of its file
 * (nodes.h afd_nodes_range_get), over @p fd: an fd of that file whose
 * fstat @p st must be the node's version. Takes @p fd (closed on
 * failure). Returns 0 (*out held: afd_handle_close), -ENOENT when @p n has
 * no range or @p st is another version, or -ENOMEM.
 */
int afd_handle_adopt_range(struct afd_ctx *c, struct afd_node *n, int fd,
			   const struct stat *st, struct afd_handle **out);

/**
 * Open node @p n with open(2) @p flags. *keep_cache tells whether the page
 * cache may be kept (the source has not changed since it was last served).
 * Returns 0 or -errno (-EROFS for any write access); a failure with a
 * reason (a broken source or member) is recorded in @p why, for the reply
 * to log and answer (fail.h).
 */
int afd_handle_open(struct afd_ctx *c, struct afd_node *n, int flags,
		    struct afd_handle **out, bool *keep_cache,
		    struct afd_failure *why);
/**
 * Prepare the bytes [off, off + size) (clipped at the end) in @p rb.
 * @p just_opened: @p h was opened by this request, so its open's fstat
 * stands for the check before reading (the one after a copy is made).
 * Returns 0 or -errno; a failure with a reason (the source failed, ended
 * early or changed) is recorded in @p why (fail.h).
 */
int afd_handle_read(struct afd_ctx *c, struct afd_handle *h, size_t size,
		    off_t off, bool just_opened, struct afd_rbuf *rb,
		    struct afd_failure *why);
/** After the reply: free the scratch, empty the pipe. */
void afd_rbuf_free(struct afd_rbuf *rb);
/**
 * Handles are counted: the kernel may send release as soon as it has a
 * read's reply, while the replying thread is still returning from writev;
 * a read holds its own reference until then. afd_handle_close drops one.
 */
void afd_handle_hold(struct afd_handle *h);
/**
 * The attributes of the version @p h opened: getattr through an open file
 * answers these, so a reader of a deleted or replaced source keeps its size.
 */
const struct stat *afd_handle_attr(const struct afd_handle *h);
void afd_handle_close(struct afd_handle *h);
/** The version of its source that @p h serves (nodes.h). */
uint64_t afd_handle_version(const struct afd_handle *h);
/** Heap bytes @p h may hold once read (a decoded LZ4 block), else 0. */
size_t afd_handle_cost(const struct afd_handle *h);
/**
 * Where @p h's cost is shared (an LZ4 index several handles read through:
 * lz4share.h): a count, under the bound lock, of the bound handles
 * counting it, so the budget counts it once; NULL when it is its own.
 */
unsigned *afd_handle_cost_shared(const struct afd_handle *h);
/**
 * Record in @p why that @p h is of a newer version of its source than its
 * node (said once per version). Returns -EIO.
 */
int afd_handle_stale(const struct afd_handle *h, struct afd_failure *why);

#endif /* ARRAYFS_DAEMON_HANDLE_H */
