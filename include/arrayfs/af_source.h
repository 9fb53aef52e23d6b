/* SPDX-License-Identifier: MIT */
/**
 * @file af_source.h
 * A random-access byte source: a file descriptor range, a memory buffer, or
 * anything with a pread function (an archive member, a test double).
 *
 * Every parser and view reads through this interface, so tests can feed
 * truncated or failing sources, and the daemon can see when a byte range
 * maps straight onto a file descriptor (and splice it) instead of copying.
 *
 * Invariants:
 *  - `size` is the number of readable bytes; offsets are 0-based within the
 *    source, whatever the underlying file offset is.
 *  - pread never reads past `size`; it returns fewer bytes than asked only
 *    at the end of the source or when the underlying file shrank.
 *  - A source is a small value; copying it is fine. It does not own fd,
 *    mem or ctx: whoever set it up closes/frees them, after every user.
 *  - pread may be called from several threads at once if the backing
 *    object allows it (fd and memory sources do).
 */
#ifndef ARRAYFS_AF_SOURCE_H
#define ARRAYFS_AF_SOURCE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "af_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct af_source af_source;

struct af_source {
	/**
	 * Read up to @p len bytes at @p off into @p buf.
	 * Returns the number of bytes read (0 at or past the end), or a
	 * negative errno.
	 */
	ssize_t (*pread)(const af_source *src, void *buf, size_t len,
			 uint64_t off);
	uint64_t size;
	/* fd sources: source offset x is byte fd_base + x of fd; -1 otherwise.
	 * Only fd sources may be spliced by the daemon. */
	int fd;
	uint64_t fd_base;
	/* memory sources: the bytes */
	const unsigned char *mem;
	/* other kinds: their state */
	void *ctx;
};

/** A source over bytes [base, base + size) of an open file descriptor. */
void af_source_init_fd(af_source *src, int fd, uint64_t base, uint64_t size);

/** A source over a memory buffer (not copied; must outlive the source). */
void af_source_init_mem(af_source *src, const void *buf, size_t len);

/** A file whose first bytes were read already (see af_source_init_prefix). */
typedef struct af_prefix {
	int fd;                       /* the file, for reads past the prefix */
	const unsigned char *buf;     /* its first len bytes */
	size_t len;
} af_prefix;

/**
 * A source over a file of @p size bytes whose first p->len bytes are
 * p->buf: reads within them are copies, the rest preads of p->fd. A
 * header parse over it costs the one pread that filled the prefix, not
 * one per field. @p p is not copied and must outlive the source.
 */
void af_source_init_prefix(af_source *src, const af_prefix *p, uint64_t size);

/**
 * Read exactly @p len bytes at @p off.
 * Returns AF_OK, AF_E_TRUNCATED if the source ends first (err->offset is
 * where), AF_E_RANGE if off + len overflows, or AF_E_IO with sys_errno.
 */
af_status af_source_read_exact(const af_source *src, void *buf, size_t len,
			       uint64_t off, af_error *err);

#ifdef __cplusplus
}
#endif
#endif /* ARRAYFS_AF_SOURCE_H */
