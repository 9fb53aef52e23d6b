/* SPDX-License-Identifier: MIT */
/**
 * @file daemon_test.h
 * Helpers of the unit tests of the daemon's core (test_daemon_*.c): a
 * context over a temp folder, with nothing mounted and a clock the test
 * moves; source files written by hand; lookups and forgets as the FUSE
 * handlers make them. Every helper ck_asserts on failure.
 */
#ifndef DAEMON_TEST_H
#define DAEMON_TEST_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "af_test.h"
#include "ctx.h"
#include "setup.h"
#include "tree.h"

/** A test's clock: its time is whatever the test sets in now_ms. */
struct aftd_clock {
	uint64_t now_ms;
};

/**
 * Set up @p c over source folder @p dir as the daemon would (default
 * limits, then the test changes c->opts.limits as it likes), with @p clk
 * (may be NULL: the monotonic clock) as its clock. afd_ctx_destroy it.
 */
void aftd_ctx_open(struct afd_ctx *c, const char *dir, struct aftd_clock *clk);

/** Send @p c's log lines to a temp file, for aftd_log_said. */
void aftd_log_capture(struct afd_ctx *c);
/** What @p c's log said since aftd_log_capture, NUL-terminated (free it). */
char *aftd_log_said(struct afd_ctx *c);
/** Close the capture (before afd_ctx_destroy): lines go to stderr again. */
void aftd_log_release(struct afd_ctx *c);

/** A new empty temp folder, malloc'd: aftd_tmp_free removes and frees it. */
char *aftd_tmp_new(void);
void aftd_tmp_free(char *dir);

/** The path @p dir/@p name in a static buffer, valid until the next call. */
const char *aftd_path(const char *dir, const char *name);

/** Write @p len bytes at @p buf as file @p dir/@p name (replaced in place). */
void aftd_write(const char *dir, const char *name, const void *buf, size_t len);
/**
 * A .npy v1.0 of @p n uint8 elements, element i being (@p seed + i) &
 * 0xff, as a new buffer of *@p len bytes (the caller frees).
 */
unsigned char *aftd_npy_bytes(size_t n, unsigned seed, size_t *len);
/** Write @p dir/@p name as aftd_npy_bytes(@p n, @p seed). Returns its size. */
size_t aftd_write_npy(const char *dir, const char *name, size_t n,
		      unsigned seed);
/**
 * Write @p dir/@p name as a RawArray of @p n uint8 elements, one dim,
 * LZ4-compressed as one block of literals: its data and B.npy decode
 * @p n bytes whole (a bound handle's cost).
 */
void aftd_write_lz4_ra(const char *dir, const char *name, size_t n);
/** Copy file @p from to @p dir/@p name. */
void aftd_copy(const char *from, const char *dir, const char *name);
/** lstat of @p dir/@p name. */
struct stat aftd_lstat(const char *dir, const char *name);

/**
 * Look @p name up in folder node @p parent as the lookup handler does:
 * resolve, then find or make the node of that identity and version,
 * counting one lookup. Returns the node, or NULL with *rc (if not NULL)
 * the negative errno; with @p attr the attributes the kernel would get.
 */
struct afd_node *aftd_lookup(struct afd_ctx *c, struct afd_node *parent,
			     const char *name, int *rc, struct stat *attr);
/** Like aftd_lookup, for a name that must resolve (ck_assert). */
struct afd_node *aftd_must(struct afd_ctx *c, struct afd_node *parent,
			   const char *name);
/**
 * Drop @p n lookups of @p node as the forget handler does; a node that
 * reaches 0 is unwatched, unbound and freed. Returns whether it was.
 */
int aftd_forget(struct afd_ctx *c, struct afd_node *node, uint64_t n);

struct afd_handle;
/** Open node @p n read-only as the open handler does (ck_assert: it opens). */
struct afd_handle *aftd_open(struct afd_ctx *c, struct afd_node *n);
/**
 * Read @p size bytes at @p off of @p h as the read handler does (not just
 * opened: the checks before and after a read both run), and copy the
 * reply's pieces out as libfuse would: *@p out a new buffer of *@p len
 * bytes (the caller frees; NULL on failure). Returns 0 or the -errno.
 */
int aftd_read(struct afd_ctx *c, struct afd_handle *h, uint64_t off,
	      size_t size, unsigned char **out, size_t *len);
/** Like aftd_read, for a read that must succeed (ck_assert). */
unsigned char *aftd_read_ok(struct afd_ctx *c, struct afd_handle *h,
			    uint64_t off, size_t size, size_t *len);

/** The whole of file node @p n (opened, read, closed), NUL-terminated
 * (the caller frees). */
char *aftd_text_of(struct afd_ctx *c, struct afd_node *n);

/**
 * Read [@p off, @p off + @p size) of @p h and require the bytes @p want
 * holds from @p off on, clipped at its @p total bytes (the file's end).
 */
void aftd_expect_read(struct afd_ctx *c, struct afd_handle *h, uint64_t off,
		      size_t size, const unsigned char *want, size_t total);
/**
 * aftd_expect_read at the start, in the middle, across the end and past
 * it, each small (copied) and big (spliced) where the file is big enough.
 */
void aftd_expect_reads(struct afd_ctx *c, struct afd_handle *h,
		       const unsigned char *want, size_t total);
/** Require that reading [@p off, @p off + @p size) of @p h gives -EIO. */
void aftd_expect_eio(struct afd_ctx *c, struct afd_handle *h, uint64_t off,
		     size_t size);
/**
 * Rewrite @p dir/@p name in place (the same inode) as aftd_write_npy of
 * @p n bytes of another seed, its mtime set back 100 s so that the change
 * shows whatever the grain of the file system's clock.
 */
void aftd_rewrite_npy(const char *dir, const char *name, size_t n);

#endif /* DAEMON_TEST_H */
