/* SPDX-License-Identifier: MIT */
/* Reading handles as fuse_bufvecs: extents, pieces, splice or copy, and
 * the checks before and after a read; handle.c makes the handles. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "handle_i.h"
#include "spipe.h"
#include "stackread.h"
#include "zarr_chunks.h"

/* Stack members at least this big are spliced from their files, smaller
 * ones copied: a splice takes a pipe slot per page it touches */
#define AFD_STACK_SPLICE_MIN (64u * 1024u)
/* Beyond this many pieces in one reply the rest is copied in one go. */
#define AFD_READ_MAX_PIECES 16u
/* libfuse copies a reply under two pages out of the pipe again: below
 * that, one pread into memory is cheaper than splice + copy + drain */
#define AFD_SPLICE_MIN (2u * 4096u)

void afd_rbuf_free(struct afd_rbuf *rb)
{
	if (rb->pipe)
		afd_spipe_reset(rb->pipe);
	for (size_t i = 0; i < rb->nscratch; i++)
		free(rb->scratch[i]);
	free(rb->bv);
	memset(rb, 0, sizeof(*rb));
}

/* The source under this handle must still hold the bytes it had at open. */
static int check_unchanged(struct afd_handle *h, struct afd_failure *why)
{
	if (h->check_fd < 0)
		return 0;
	struct stat st;
	af_error err;
	if (fstat(h->check_fd, &st) < 0) {
		af_error_set(&err, AF_E_IO, AF_NO_OFFSET, "%s", strerror(errno));
	} else if (st.st_size != h->id.size ||
		   st.st_mtim.tv_sec != h->id.mtim.tv_sec ||
		   st.st_mtim.tv_nsec != h->id.mtim.tv_nsec) {
		af_error_set(&err, AF_E_IO, AF_NO_OFFSET,
			     "the source changed while open (size %lld, was %lld%s)",
			     (long long)st.st_size, (long long)h->id.size,
			     st.st_size == h->id.size ? ", rewritten" : "");
	} else {
		return 0;
	}
	return handle_fail(h, why, AFD_LINE_CHANGED, 0, &err);
}

static struct fuse_buf *piece(struct afd_rbuf *rb)
{
	struct fuse_bufvec *bv = rb->bv;
	struct fuse_buf *b = &bv->buf[bv->count++];
	memset(b, 0, sizeof(*b));
	return b;
}

static void *scratch(struct afd_rbuf *rb, size_t n)
{
	if (rb->nscratch == sizeof(rb->scratch) / sizeof(rb->scratch[0]))
		return NULL;
	void *p = malloc(n ? n : 1);
	if (p)
		rb->scratch[rb->nscratch++] = p;
	return p;
}

/*
 * Bytes [pos, pos + n) of @p fd as pieces: spliced into this thread's pipe
 * as far as it holds, the rest copied. An I/O error is -EIO; a file that
 * ends early is -EIO when @p strict (an array's bytes must all be there),
 * else a shorter piece (a plain file that shrank).
 */
static int fd_piece(struct afd_ctx *c, struct afd_handle *h,
		    struct afd_rbuf *rb, int fd, uint64_t pos, size_t n,
		    bool strict, struct afd_failure *why)
{
	af_error err;
	ssize_t got = 0;
	struct afd_spipe *p = NULL;
	if (!rb->copy)
		p = rb->pipe ? rb->pipe : afd_spipe_get(c->pipe_key);
	if (p) {
		rb->pipe = p;
		got = afd_spipe_fill(p, fd, (off_t)pos, n);
		if (got < 0)
			goto io_error;
		struct fuse_buf *last = rb->bv->count ?
			&rb->bv->buf[rb->bv->count - 1] : NULL;
		if (got > 0 && last && (last->flags & FUSE_BUF_IS_FD) &&
		    last->fd == afd_spipe_fd(p)) {
			/* right behind the last piece in the pipe: one piece */
			last->size += (size_t)got;
		} else if (got > 0) {
			struct fuse_buf *b = piece(rb);
			b->flags = FUSE_BUF_IS_FD;
			b->fd = afd_spipe_fd(p);
			b->size = (size_t)got;
		}
	}
	if ((size_t)got == n)
		return 0;
	size_t rest = n - (size_t)got, done = 0;
	unsigned char *m = scratch(rb, rest);
	if (!m)
		return -ENOMEM;
	while (done < rest) {
		ssize_t r = pread(fd, m + done, rest - done,
				  (off_t)(pos + (uint64_t)got + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			got = -errno;
			goto io_error;
		}
		if (r == 0)
			break;
		done += (size_t)r;
	}
	if (done < rest && strict) {
		af_error_set(&err, AF_E_TRUNCATED, pos + (uint64_t)got + done,
			     "the source ends at byte %llu, before the data does",
			     (unsigned long long)(pos + (uint64_t)got + done));
		return handle_fail(h, why, AFD_LINE_READ, err.status, &err);
	}
	if (done > 0) {
		struct fuse_buf *b = piece(rb);
		b->mem = m;
		b->size = done;
	}
	return 0;
io_error:
	af_error_set(&err, AF_E_IO, pos, "read failed near byte %llu: %s",
		     (unsigned long long)pos, strerror((int)-got));
	err.sys_errno = (int)-got;
	return handle_fail(h, why, AFD_LINE_READ, err.status, &err);
}

/* What a view read walks: a chunk file's (zarr_chunks.h) or the handle's
 * view. */
static af_status view_extent(const struct afd_handle *h, uint64_t pos,
			     af_extent *e)
{
	return h->zc ? afd_zarr_chunk_extent(h->zc, pos, e) :
		       af_view_extent(h->view, pos, e);
}

static af_status view_read(struct afd_handle *h, void *buf, size_t n,
			   uint64_t pos, size_t *got, af_error *err)
{
	return h->zc ? afd_zarr_chunk_read(h->zc, buf, n, pos, got, err) :
		       af_view_read(h->view, buf, n, pos, got, err);
}

/* Copy [pos, end) of the view into one scratch buffer piece. */
static int copy_rest(struct afd_handle *h, struct afd_rbuf *rb, uint64_t pos,
		     uint64_t end, struct afd_failure *why)
{
	size_t n = (size_t)(end - pos), got = 0;
	void *p = scratch(rb, n);
	af_error err;
	af_error_clear(&err);
	if (!p)
		return -ENOMEM;
	if (view_read(h, p, n, pos, &got, &err) != AF_OK)
		return handle_fail(h, why, AFD_LINE_READ, err.status, &err);
	if (got != n) {
		af_error_set(&err, AF_E_TRUNCATED, pos + got,
			     "view ended early at byte %llu",
			     (unsigned long long)(pos + got));
		return handle_fail(h, why, AFD_LINE_READ, err.status, &err);
	}
	struct fuse_buf *b = piece(rb);
	b->mem = p;
	b->size = n;
	return 0;
}

/*
 * Bytes [pos, pos + n) of a view over a stack, source bytes from src_off:
 * each member's part spliced from its fd (checked before and after:
 * stackread.h), the rest copied once pieces or scratch run short.
 */
static int stack_pieces(struct afd_ctx *c, struct afd_handle *h,
			struct afd_rbuf *rb, uint64_t pos, uint64_t src_off,
			size_t n, struct afd_failure *why)
{
	uint64_t mb = h->sr->stk->member_bytes;
	size_t done = 0;
	while (done < n) {
		if (rb->bv->count + 2 >= AFD_READ_MAX_PIECES ||
		    rb->nscratch + 1 >= sizeof(rb->scratch) / sizeof(rb->scratch[0]))
			return copy_rest(h, rb, pos + done, pos + n, why);
		uint64_t at = src_off + done, i = at / mb, o = at % mb;
		size_t take = n - done < mb - o ? n - done : (size_t)(mb - o);
		uint64_t base;
		int tag;
		int fd = afd_stackread_fd_get(h->sr, i, &base, &tag);
		int rc = fd;
		if (fd >= 0) {
			rc = fd_piece(c, h, rb, fd, base + o, take, true, why);
			int after = afd_stackread_fd_put(h->sr, i, fd, tag);
			if (rc == 0)
				rc = after;
		} else if (fd == -ENOTSUP) {
			rc = copy_rest(h, rb, pos + done, pos + done + take, why);
		}
		if (rc < 0)
			return rc;
		done += take;
	}
	return 0;
}

static int read_view(struct afd_ctx *c, struct afd_handle *h, uint64_t off,
		     uint64_t end, struct afd_rbuf *rb, struct afd_failure *why)
{
	uint64_t pos = off;
	while (pos < end) {
		if (rb->bv->count + 2 >= AFD_READ_MAX_PIECES ||
		    rb->nscratch + 1 >= sizeof(rb->scratch) / sizeof(rb->scratch[0])) {
			int rc = copy_rest(h, rb, pos, end, why);
			if (rc < 0)
				return rc;
			break;
		}
		af_extent e;
		if (view_extent(h, pos, &e) != AF_OK || e.len == 0) {
			af_error err;
			af_error_set(&err, AF_E_RANGE, pos,
				     "no extent at byte %llu", (unsigned long long)pos);
			return handle_fail(h, why, AFD_LINE_READ, err.status, &err);
		}
		uint64_t n = e.len < end - pos ? e.len : end - pos;
		if (e.kind == AF_EXTENT_MEMORY) {
			struct fuse_buf *b = piece(rb);
			b->mem = (void *)e.mem;
			b->size = (size_t)n;
		} else if (e.kind == AF_EXTENT_ZERO) {
			/* a chunk's tail past the array's edge: nothing to read */
			void *zeros = scratch(rb, (size_t)n);
			if (!zeros)
				return -ENOMEM;
			memset(zeros, 0, (size_t)n);
			struct fuse_buf *b = piece(rb);
			b->mem = zeros;
			b->size = (size_t)n;
		} else if (e.kind == AF_EXTENT_SOURCE && h->sr &&
			   h->sr->stk->member_bytes >= AFD_STACK_SPLICE_MIN) {
			int rc = stack_pieces(c, h, rb, pos, e.src_off, (size_t)n,
					      why);
			if (rc < 0)
				return rc;
		} else if (e.kind == AF_EXTENT_SOURCE && h->src->fd >= 0) {
			int rc = fd_piece(c, h, rb, h->src->fd,
					  h->src->fd_base + e.src_off, (size_t)n,
					  true, why);
			if (rc < 0)
				return rc;
		} else {
			int rc = copy_rest(h, rb, pos, pos + n, why);
			if (rc < 0)
				return rc;
		}
		pos += n;
	}
	return 0;
}

static int read_raw(struct afd_ctx *c, struct afd_handle *h, uint64_t off,
		    uint64_t end, struct afd_rbuf *rb, struct afd_failure *why)
{
	size_t n = (size_t)(end - off);
	if (h->src->fd >= 0)
		return fd_piece(c, h, rb, h->src->fd, h->src->fd_base + off, n,
				true, why);
	void *p = scratch(rb, n);
	if (!p)
		return -ENOMEM;
	af_error err;
	af_error_clear(&err);
	if (af_source_read_exact(h->src, p, n, off, &err) != AF_OK)
		return handle_fail(h, why, AFD_LINE_READ, err.status, &err);
	struct fuse_buf *b = piece(rb);
	b->mem = p;
	b->size = n;
	return 0;
}

int afd_handle_read(struct afd_ctx *c, struct afd_handle *h, size_t size,
		    off_t off, bool just_opened, struct afd_rbuf *rb,
		    struct afd_failure *why)
{
	afd_failure_clear(why);
	memset(rb, 0, sizeof(*rb));
	rb->bv = calloc(1, sizeof(struct fuse_bufvec) +
			     AFD_READ_MAX_PIECES * sizeof(struct fuse_buf));
	if (!rb->bv)
		return -ENOMEM;
	if (off < 0)
		return -EINVAL;
	uint64_t o = (uint64_t)off, total;
	switch (h->kind) {
	case H_PLAIN:
		/* as-is: the kernel clips at the size it knows; a short read
		 * of a file that shrank is just an earlier end */
		rb->copy = (uint64_t)h->attr.st_size <= o ||
			   (uint64_t)h->attr.st_size - o < AFD_SPLICE_MIN;
		return fd_piece(c, h, rb, h->fd, o, size, false, why);
	case H_TEXT:
		if (o < h->tlen) {
			struct fuse_buf *b = piece(rb);
			b->mem = h->text + o;
			b->size = size < h->tlen - o ? size : h->tlen - o;
		}
		return 0;
	case H_RAW:
		total = h->src->size;
		break;
	case H_VIEW:
		total = h->zc ? afd_zarr_chunk_size(h->zc) : af_view_size(h->view);
		break;
	default:
		return -EIO;
	}
	if (o >= total)
		return 0;
	uint64_t end = size < total - o ? o + size : total;
	rb->copy = end - o < AFD_SPLICE_MIN;
	/*
	 * Never serve a mix of two versions: spliced bytes are copied after
	 * this check (a writer then shortens or re-times the file first), and
	 * decoded bytes were read before the second one. A handle this
	 * request opened was fstat'ed against its version a moment ago, and
	 * a read copied whole needs only the check after it: a change at any
	 * time since the open has moved the size or mtime by then.
	 */
	int rc = just_opened || rb->copy ? 0 : check_unchanged(h, why);
	if (rc == 0)
		rc = h->kind == H_RAW ? read_raw(c, h, o, end, rb, why) :
					read_view(c, h, o, end, rb, why);
	if (rc == 0 && (rb->nscratch || rb->copy))
		rc = check_unchanged(h, why);
	return rc;
}
