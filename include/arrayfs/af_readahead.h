/* SPDX-License-Identifier: MIT */
/**
 * @file af_readahead.h
 * File heads: a file's stat and first bytes, read with one open, fstat
 * and pread, so that a header parse over them costs no more system calls;
 * and a folder's file heads read ahead, in order, by worker threads while
 * the caller parses the ones before (a Zarr group walk, arrayrefs, the
 * daemon's `.stack` scans).
 *
 * Invariants:
 *  - A head's fd is open only while a parse may read past its first bytes
 *    (a regular file longer than them); otherwise it is -1.
 *  - Bounded: a read-ahead holds at most `window` heads open or buffered
 *    (a worker waits until the caller has put head i - window back before
 *    it reads head i), so memory and fds do not grow with the folder.
 *  - Heads are delivered in order: af_readahead_get(i) for i = 0, 1, ...,
 *    each given back with af_readahead_put before the next get.
 *  - Every fd a worker opened is closed by af_readahead_put or
 *    af_readahead_stop, including those read ahead of a caller that
 *    stopped early.
 *  - Below `min_parallel` heads, or when a thread cannot be made, the heads
 *    are read in the calling thread, by af_readahead_get: slower, never
 *    an error.
 *  - No global state: read-aheads are independent of each other.
 */
#ifndef ARRAYFS_AF_READAHEAD_H
#define ARRAYFS_AF_READAHEAD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "af_source.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Bytes of a file that hold nearly every array header (a .npy one is 128
 * bytes or a few more, a .ra one 48 plus 8 a dimension), so a parse over a
 * head of this many costs its one pread: the size the daemon and the Zarr
 * group walk read. */
#define AF_HEAD_BYTES 1024u

/** One file's head. */
typedef struct af_head {
	int fd;                /* see the invariants; the head's to close */
	int err;               /* 0, or -errno of the open, fstat or pread */
	struct stat st;        /* valid when the open succeeded */
	unsigned char *buf;    /* cap bytes: the caller's, or a read-ahead's */
	size_t cap;
	size_t len;            /* bytes of the file in buf */
	af_prefix pre;         /* fd, buf and len, as src reads them */
	af_source src;         /* the file, its first len bytes from buf; of
				* size 0 unless a regular file was read */
} af_head;

/**
 * Opens @p name under folder @p dfd for reading, in the caller's rule
 * (e.g. refusing symlinks, or its own mount). Must not block on a fifo or
 * device (O_NONBLOCK). Returns the fd (the head closes it) or -errno.
 * Called from worker threads.
 */
typedef int (*af_head_open_fn)(void *arg, int dfd, const char *name);

/** openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK), or
 * -errno: a symlink is refused (-ELOOP). @p arg is unused. */
int af_head_openat(void *arg, int dfd, const char *name);

/**
 * Read the first h->cap bytes of @p fd, an open file of @p size bytes, into
 * h->buf, and make h->src that file (its first bytes from memory, the rest
 * from @p fd, which stays the caller's: h->fd is set to it). h->st is not
 * touched. Returns 0 or -errno (also in h->err; h->src is then unset).
 */
int af_head_read_fd(af_head *h, int fd, uint64_t size);

/**
 * Open @p name under @p dfd with @p opener (@p arg its argument), fstat it
 * and, a regular file, read its head (af_head_read_fd); close the fd when
 * the whole file is in h->buf or it is not a regular file (h->src is then
 * empty). h->buf and h->cap must be set. Returns h->err: 0 or -errno (the
 * fd then closed). Safe on any thread.
 */
int af_head_read_at(af_head *h, af_head_open_fn opener, void *arg, int dfd,
		    const char *name);

/** Close h->fd if open. */
void af_head_close(af_head *h);

/** Head i's name (NUL-terminated, valid until af_readahead_stop), for the
 * workers. Called from worker threads. */
typedef const char *(*af_head_name_fn)(void *arg, uint64_t i);

/** What a read-ahead reads and how. */
typedef struct af_readahead_opts {
	int dfd;                   /* the folder the names are in */
	uint64_t n;                /* heads 0 .. n-1 */
	af_head_name_fn name;
	void *name_arg;
	af_head_open_fn opener;    /* NULL: af_head_openat */
	void *open_arg;
	size_t head_bytes;         /* bytes read of each file (> 0) */
	unsigned window;           /* heads open or buffered at most */
	unsigned workers;          /* threads reading ahead */
	unsigned batch;            /* heads a worker reads between wakes */
	uint64_t min_parallel;     /* fewer heads: no thread */
} af_readahead_opts;

typedef struct af_readahead af_readahead;

/**
 * Start reading the heads of @p o->n files ahead (@p o is copied; a window
 * of 0 or a batch larger than the window is raised or lowered to work).
 * Returns the read-ahead (free it with af_readahead_stop) or NULL: out of
 * memory.
 */
af_readahead *af_readahead_start(const af_readahead_opts *o);

/**
 * Head @p i (calls in order 0, 1, ...), waiting for it if need be. Valid
 * until af_readahead_put; its err says whether it was read.
 */
af_head *af_readahead_get(af_readahead *ra, uint64_t i);

/** Done with @p h, the last head got: its fd is closed, its slot reused. */
void af_readahead_put(af_readahead *ra, af_head *h);

/** Stop the workers, wait for them, close what they read ahead and free
 * @p ra. NULL is fine. */
void af_readahead_stop(af_readahead *ra);

#ifdef __cplusplus
}
#endif

#endif /* ARRAYFS_AF_READAHEAD_H */
