/* SPDX-License-Identifier: MIT */
/* Open files: views, texts and raw sources, and reads as fuse_bufvecs. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctx.h"
#include "fail.h"
#include "handle.h"
#include "lz4share.h"
#include "sidecar.h"
#include "spipe.h"
#include "stackdir.h"
#include "tree.h"
#include "zchunk.h"

/* Stack members at least this big are spliced from their files, smaller
 * ones copied: a splice takes a pipe slot per page it touches */
#define AFD_STACK_SPLICE_MIN (64u * 1024u)
/* Beyond this many pieces in one reply the rest is copied in one go. */
#define AFD_READ_MAX_PIECES 16u
/* libfuse copies a reply under two pages out of the pipe again: below
 * that, one pread into memory is cheaper than splice + copy + drain */
#define AFD_SPLICE_MIN (2u * 4096u)

enum afd_hkind {
	H_PLAIN = 1,  /* a source file served as-is from its fd */
	H_RAW,        /* an af_source served as-is (npz plain member, or a
		       * `data` that is one range of its file: open_range) */
	H_VIEW,       /* data, B.npy, B.ra, a chunk file of B.zarr/ */
	H_TEXT,       /* shape, dtype, header, sidecars, Zarr metadata */
};

struct afd_handle {
	unsigned refs;           /* atomic */
	enum afd_hkind kind;
	int fd;                  /* owned: plain file or .npy/.ra source */
	struct afd_src *sf;      /* referenced */
	long midx;               /* member held open, or -1 */
	const af_source *src;
	af_source fsrc;
	af_view *view;
	struct afd_zchunk *zc;   /* a chunk file: read through it, not view */
	struct afd_stackread *sr; /* under `.stack/`: its members (stackread.h) */
	bool text_borrowed;      /* text is the stack's names: not freed */
	char *text;
	size_t tlen;
	int check_fd;            /* fd whose data must not change, or -1 */
	struct afd_ident id;     /* its version at open */
	char *where;             /* for log lines */
	struct stat attr;        /* what getattr on this open file answers */
	uint64_t version;        /* of the source it opened (nodes.h) */
	size_t cost;             /* bytes it may decode and keep (LZ4) */
	struct afd_lz4share *lz4; /* the LZ4 index its view reads through */
};

uint64_t afd_handle_version(const struct afd_handle *h)
{
	return h->version;
}

size_t afd_handle_cost(const struct afd_handle *h)
{
	return h->cost;
}

unsigned *afd_handle_cost_shared(const struct afd_handle *h)
{
	if (h->lz4)
		return &h->lz4->bound;
	return afd_zchunk_cost_shared(h->zc);
}

int afd_handle_stale(const struct afd_handle *h, struct afd_failure *why)
{
	af_error err;
	af_error_set(&err, AF_E_IO, AF_NO_OFFSET,
		     "the source changed after it was looked up; reading it "
		     "again by its path shows the new version");
	struct afd_logkey k = { AFD_LINE_STALE, h->version, 0 };
	return afd_failure_set(why, &k, h->where, &err);
}

/*
 * Record @p err as why @p h failed, said once per @p kind and @p index for
 * the file it serves in the version it opened. Returns the -errno to pass up.
 */
static int fail(const struct afd_handle *h, struct afd_failure *why,
		enum afd_line kind, uint64_t index, const af_error *err)
{
	struct afd_logkey k = { kind, afd_ident_key(h->where, &h->id), index };
	return afd_failure_set(why, &k, h->where, err);
}

const struct stat *afd_handle_attr(const struct afd_handle *h)
{
	return &h->attr;
}

void afd_handle_hold(struct afd_handle *h)
{
	__atomic_add_fetch(&h->refs, 1, __ATOMIC_RELAXED);
}

void afd_handle_close(struct afd_handle *h)
{
	if (!h || __atomic_sub_fetch(&h->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	if (h->view)
		af_view_close(h->view);
	afd_lz4share_put(h->lz4);
	afd_zchunk_close(h->zc);
	afd_stackread_close(h->sr);
	if (h->midx >= 0)
		afd_src_member_close(h->sf, (size_t)h->midx);
	afd_src_put(h->sf);
	if (h->fd >= 0)
		close(h->fd);
	if (!h->text_borrowed)
		free(h->text);
	free(h->where);
	free(h);
}

static char *where_of(const struct afd_node *n)
{
	char *out = NULL;
	int rc;
	bool entry = n->kind == NK_ENTRY || n->kind == NK_ZARRFILE;
	if (n->member && entry)
		rc = asprintf(&out, "%s/%s/%s", n->path, n->member, n->name);
	else if (n->member)
		rc = asprintf(&out, "%s/%s", n->path, n->member);
	else if (entry)
		rc = asprintf(&out, "%s/%s", n->path, n->name);
	else
		rc = asprintf(&out, "%s", n->path);
	return rc < 0 ? NULL : out;
}

static int open_plain(struct afd_ctx *c, struct afd_node *n,
		      struct afd_handle *h, uint64_t *version)
{
	h->fd = afd_srcpath_open(&c->root, n->path, O_RDONLY | O_NONBLOCK);
	if (h->fd < 0) {
		int rc = h->fd;
		h->fd = -1;
		return rc == -ELOOP || rc == -EXDEV ? -ENOENT : rc;
	}
	struct stat st;
	if (fstat(h->fd, &st) < 0)
		return -errno;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	/* O_NONBLOCK only kept open() off fifos; reads of one must wait (it
	 * means nothing to a regular file) */
	if (!S_ISREG(st.st_mode))
		fcntl(h->fd, F_SETFL, fcntl(h->fd, F_GETFL) & ~O_NONBLOCK);
	afd_ident_of(&h->id, &st);
	*version = afd_ident_key(n->path, &h->id);
	h->kind = H_PLAIN;
	struct afd_id id = afd_id_of(n);
	struct afd_res r = { .st = st, .midx = -1, .zdir = -1 };
	afd_attr(c, &id, &r, &h->attr);
	return 0;
}

static int open_text(const struct afd_arrinfo *ai, enum afd_entry e,
		     struct afd_handle *h, struct afd_failure *why)
{
	af_status st = AF_E_INVAL;
	if (e == AE_SHAPE)
		st = af_text_shape(&ai->a, &h->text, &h->tlen);
	else if (e == AE_DTYPE)
		st = af_text_dtype(&ai->a, &h->text, &h->tlen);
	else if (e == AE_HEADER)
		st = af_text_header(&ai->a, &h->text, &h->tlen);
	else if (e == AE_HDR || e == AE_NHDR)
		st = afd_sidecar_text(&ai->a, e, &h->text, &h->tlen);
	else
		st = afd_zarr_text(&ai->zarr, e, &h->text, &h->tlen);
	if (st != AF_OK) {
		af_error err;
		af_error_set(&err, st, AF_NO_OFFSET, "cannot write its text: %s",
			     af_status_str(st));
		return fail(h, why, AFD_LINE_OPEN, 0, &err);
	}
	h->kind = H_TEXT;
	return 0;
}

static int open_view(struct afd_ctx *c, struct afd_node *n,
		     struct afd_handle *h, const struct afd_res *r,
		     struct afd_failure *why);

/* A file under `.stack/`: its bytes come from the members (stackread.h). */
static int open_stack(struct afd_ctx *c, struct afd_node *n,
		      struct afd_handle *h, struct afd_res *r,
		      uint64_t *version, struct afd_failure *why)
{
	struct afd_id id = afd_id_of(n);
	*version = r->stk->key;
	afd_attr(c, &id, r, &h->attr);
	h->sr = afd_stackread_open(c, r->stk);
	int rc = h->sr ? 0 : -ENOMEM;
	if (rc == 0 && n->entry == AE_NAMES) {
		h->text = r->stk->names;
		h->tlen = r->stk->names_len;
		h->text_borrowed = true;
		h->kind = H_TEXT;
	} else if (rc == 0 && afd_entry_is_text(n->entry)) {
		rc = open_text(r->ai, n->entry, h, why);
	} else if (rc == 0) {
		h->src = &h->sr->src;
		rc = open_view(c, n, h, r, why);
		/* the member's decoded data it keeps (stackread.h) */
		size_t more = afd_stackread_cost(r->stk);
		h->cost = h->cost > SIZE_MAX - more ? SIZE_MAX : h->cost + more;
	}
	afd_res_release(r);
	return rc;
}

/* Serve range [off, off + len) of @p fd (taken), the node's version as
 * fstat'ed into @p st, as the raw handle @p h. */
static void range_handle(struct afd_ctx *c, struct afd_node *n,
			 struct afd_handle *h, int fd, const struct stat *st,
			 uint64_t off, uint64_t len)
{
	h->fd = h->check_fd = fd;
	afd_ident_of(&h->id, st);
	af_source_init_fd(&h->fsrc, fd, off, len);
	h->src = &h->fsrc;
	h->kind = H_RAW;
	struct afd_id id = afd_id_of(n);
	struct afd_res r = { .st = *st, .midx = -1, .zdir = -1, .summed = true };
	r.sum.size[AE_DATA] = len;
	afd_attr(c, &id, &r, &h->attr);
}

/* The range of node @p n's `data` in its file (afd_nodes_range_get),
 * when @p st (an fstat of the file) is still the node's version. */
static bool range_of(const struct afd_node *n, const struct stat *st,
		     uint64_t *off, uint64_t *len)
{
	struct afd_ident ident;
	if (n->kind != NK_ENTRY || n->entry != AE_DATA || n->member ||
	    !S_ISREG(st->st_mode) || !afd_nodes_range_get(n, off, len))
		return false;
	afd_ident_of(&ident, st);
	return afd_ident_key(n->path, &ident) == n->version &&
	       *off <= (uint64_t)st->st_size &&
	       *len <= (uint64_t)st->st_size - *off;
}

/*
 * `data` that is one unchanged range of its .npy/.ra file in the node's
 * version (afd_nodes_range_get), opened without parsing the file again:
 * the fd opened must be exactly that version (fstat), and its bytes are
 * then that range. Returns 0, or 1 when it is not such a node or the file
 * is not (or no longer) that version: the caller opens it the ordinary
 * way, which resolves what the file is now and says what happened.
 */
static int open_range(struct afd_ctx *c, struct afd_node *n,
		      struct afd_handle *h, uint64_t *version)
{
	uint64_t off, len;
	if (n->kind != NK_ENTRY || n->entry != AE_DATA || n->member ||
	    !afd_nodes_range_get(n, &off, &len))
		return 1;
	int fd = afd_srcpath_open(&c->root, n->path, O_RDONLY | O_NONBLOCK);
	if (fd < 0)
		return 1;
	struct stat st;
	if (fstat(fd, &st) < 0 || !range_of(n, &st, &off, &len)) {
		close(fd);
		return 1;
	}
	range_handle(c, n, h, fd, &st, off, len);
	*version = n->version;
	return 0;
}

static int open_sourced(struct afd_ctx *c, struct afd_node *n,
			struct afd_handle *h, uint64_t *version,
			struct afd_failure *why)
{
	int rc = open_range(c, n, h, version);
	if (rc <= 0)
		return rc;
	struct afd_id id = afd_id_of(n);
	struct afd_res r;
	/* a .npy/.ra is opened here, and the fd is of the version parsed */
	bool file_backed = !n->member;
	rc = afd_resolve(c, &id, file_backed ? &h->fd : NULL, &r);
	if (rc < 0)
		return rc;
	if (r.stk)
		return open_stack(c, n, h, &r, version, why);
	h->sf = r.sf;
	h->id = r.sf->id;
	*version = r.sf->key;
	afd_attr(c, &id, &r, &h->attr);
	if (afd_entry_is_text(n->entry)) {
		if (h->fd >= 0) {
			close(h->fd);
			h->fd = -1;
		}
		return open_text(r.ai, n->entry, h, why);
	}
	if (file_backed) {
		af_source_init_fd(&h->fsrc, h->fd, 0, (uint64_t)r.sf->st.st_size);
		h->src = &h->fsrc;
		h->check_fd = h->fd;
	} else {
		af_error err;
		rc = afd_src_member_open(c, r.sf, (size_t)r.midx, &h->src, &err);
		if (rc < 0 && err.status != AF_OK) {
			/* once per member, whichever of its files met it first */
			struct afd_logkey k = { AFD_LINE_MEMBER_OPEN, r.sf->key,
						(uint64_t)r.midx };
			return afd_failure_set(why, &k, h->where, &err);
		}
		if (rc < 0)
			return rc;
		h->midx = r.midx;
		h->check_fd = r.sf->fd;
	}
	if (n->kind == NK_MEMBER) {
		h->kind = H_RAW;
		return 0;
	}
	return open_view(c, n, h, &r, why);
}

/* A view (data, B.npy, B.ra) or a chunk file of @p r's array over h->src. */
static int open_view(struct afd_ctx *c, struct afd_node *n,
		     struct afd_handle *h, const struct afd_res *r,
		     struct afd_failure *why)
{
	int rc;
	static const af_view_kind vk[AE_COUNT] = {
		[AE_DATA] = AF_VIEW_DATA, [AE_NPY] = AF_VIEW_NPY, [AE_RA] = AF_VIEW_RA };
	af_error err;
	af_error_clear(&err);
	if (n->kind == NK_ZARRFILE) {
		rc = afd_zchunk_open(c, r->sf, r->midx, r->ai, n->sub, h->src, &h->zc,
				     &err);
		if (rc < 0 && rc != -ENOENT && rc != -ENOMEM)
			return fail(h, why, AFD_LINE_OPEN, 0, &err);
		if (rc < 0)
			return rc;
		h->cost = afd_zchunk_cost(h->zc);
		h->kind = H_VIEW;
		return 0;
	}
	const af_zip_entry *me = n->member && r->sf ?
		af_zip_entry_at(r->sf->zip, (size_t)r->midx) : NULL;
	af_cost cost = af_view_cost(&r->ai->a, me, vk[n->entry]);
	h->cost = cost.held < SIZE_MAX ? (size_t)cost.held : SIZE_MAX;
	if (h->fd >= 0 && !n->member &&
	    afd_lz4share_wanted(&r->ai->a, vk[n->entry])) {
		/* one index for every handle of this version */
		rc = afd_lz4share_get(c, r->sf, &r->ai->a, h->fd, &h->lz4, &err);
		if (rc < 0 && err.status != AF_OK)
			return fail(h, why, AFD_LINE_OPEN, 0, &err);
		if (rc < 0)
			return rc;
	}
	af_status st = af_view_open_shared(&h->view, &r->ai->a, h->src,
					   vk[n->entry],
					   h->lz4 ? h->lz4->ix : NULL, &err);
	if (st != AF_OK) {
		h->view = NULL;
		return fail(h, why, AFD_LINE_OPEN, 0, &err);
	}
	h->kind = H_VIEW;
	return 0;
}

int afd_handle_open(struct afd_ctx *c, struct afd_node *n, int flags,
		    struct afd_handle **out, bool *keep_cache,
		    struct afd_failure *why)
{
	afd_failure_clear(why);
	if ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC))
		return -EROFS;
	switch (n->kind) {
	case NK_DIR:
	case NK_ARRAY:
	case NK_NPZDIR:
	case NK_ZARRDIR:
		return -EISDIR;
	case NK_LINK:
		return -ELOOP;
	default:
		break;
	}
	struct afd_handle *h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->refs = 1;
	h->fd = h->check_fd = -1;
	h->midx = -1;
	h->where = where_of(n);
	if (!h->where) {
		free(h);
		return -ENOMEM;
	}
	uint64_t version = 0;
	int rc = n->kind == NK_FILE ? open_plain(c, n, h, &version) :
		 open_sourced(c, n, h, &version, why);
	if (rc < 0) {
		afd_handle_close(h);
		return rc;
	}
	h->version = version;
	uint64_t was = __atomic_exchange_n(&n->served_gen, version,
					   __ATOMIC_ACQ_REL);
	*keep_cache = was == version;
	*out = h;
	return 0;
}

int afd_handle_adopt_range(struct afd_ctx *c, struct afd_node *n, int fd,
			   const struct stat *st, struct afd_handle **out)
{
	uint64_t off, len;
	if (!range_of(n, st, &off, &len)) {
		close(fd);
		return -ENOENT;
	}
	struct afd_handle *h = calloc(1, sizeof(*h));
	if (!h) {
		close(fd);
		return -ENOMEM;
	}
	h->refs = 1;
	h->midx = -1;
	h->where = where_of(n);
	if (!h->where) {
		free(h);
		close(fd);
		return -ENOMEM;
	}
	range_handle(c, n, h, fd, st, off, len);
	h->version = n->version;
	__atomic_store_n(&n->served_gen, h->version, __ATOMIC_RELEASE);
	*out = h;
	return 0;
}

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
	return fail(h, why, AFD_LINE_CHANGED, 0, &err);
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
		return fail(h, why, AFD_LINE_READ, err.status, &err);
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
	return fail(h, why, AFD_LINE_READ, err.status, &err);
}

/* What a view read walks: a chunk file's (zchunk.h) or the handle's view. */
static af_status view_extent(const struct afd_handle *h, uint64_t pos,
			     af_extent *e)
{
	return h->zc ? afd_zchunk_extent(h->zc, pos, e) :
		       af_view_extent(h->view, pos, e);
}

static af_status view_read(struct afd_handle *h, void *buf, size_t n,
			   uint64_t pos, size_t *got, af_error *err)
{
	return h->zc ? afd_zchunk_read(h->zc, buf, n, pos, got, err) :
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
		return fail(h, why, AFD_LINE_READ, err.status, &err);
	if (got != n) {
		af_error_set(&err, AF_E_TRUNCATED, pos + got,
			     "view ended early at byte %llu",
			     (unsigned long long)(pos + got));
		return fail(h, why, AFD_LINE_READ, err.status, &err);
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
			return fail(h, why, AFD_LINE_READ, err.status, &err);
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
		return fail(h, why, AFD_LINE_READ, err.status, &err);
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
		total = h->zc ? afd_zchunk_size(h->zc) : af_view_size(h->view);
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
