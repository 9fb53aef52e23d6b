/* SPDX-License-Identifier: MIT */
/* Making and closing handles: open of every kind of file, and the bound
 * handle a lookup makes; reading them is handle_read.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "handle_i.h"
#include "lz4share.h"
#include "sidecar_files.h"
#include "stackread.h"
#include "tree.h"
#include "zarr_chunks.h"
#include "zarr_group_nodes.h"

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
	return afd_zarr_chunk_cost_shared(h->zc);
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
	afd_zarr_chunk_close(h->zc);
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
	bool entry = n->kind == NK_ENTRY || n->kind == NK_ZARRFILE ||
		     n->kind == NK_ZGFILE || n->kind == NK_ZGAFILE;
	if (n->member && entry)
		rc = asprintf(&out, "%s/%s/%s", n->path, n->member,
			      afd_node_name(n));
	else if (n->member)
		rc = asprintf(&out, "%s/%s", n->path, n->member);
	else if (entry)
		rc = asprintf(&out, "%s/%s", n->path, afd_node_name(n));
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

/* @p h serves the text just made into h->text, if @p st says it was. */
static int text_made(struct afd_handle *h, af_status st,
		     struct afd_failure *why)
{
	if (st != AF_OK) {
		af_error err;
		af_error_set(&err, st, AF_NO_OFFSET, "cannot write its text: %s",
			     af_status_str(st));
		return handle_fail(h, why, AFD_LINE_OPEN, 0, &err);
	}
	h->kind = H_TEXT;
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
	return text_made(h, st, why);
}

static int open_view(struct afd_ctx *c, struct afd_node *n,
		     struct afd_handle *h, const struct afd_res *r,
		     struct afd_failure *why);

/* A `.zarr/` text: a group's file, or a child array's metadata
 * (zarr_group_nodes.h). `.zmetadata` is made again and must be the document
 * the node was looked up as: else -ESTALE, and the kernel looks it up
 * again (a reader never gets a size of one and bytes of another). */
static int open_zarr_group_text(struct afd_ctx *c, struct afd_node *n,
			    struct afd_handle *h, uint64_t *version,
			    struct afd_failure *why)
{
	struct afd_id id = afd_id_of(n);
	bool zmeta = n->entry == AE_ZG_ZMETA;
	/* .zmetadata's attributes are its group's folder's and its own
	 * length: no walk to size it, the one below makes it */
	struct afd_id folder = id;
	if (zmeta)
		folder.kind = NK_ZGROUP;
	struct afd_res r;
	int rc = afd_resolve(c, &folder, NULL, &r);
	if (rc < 0)
		return rc;
	af_status st = AF_OK;
	if (zmeta) {
		rc = afd_zarr_group_zmetadata(c, n->path, n->member, &h->text,
					  &h->tlen, NULL);
		if (rc == 0 && afd_zarr_group_doc_key(h->text, h->tlen) != n->version)
			rc = -ESTALE;
	} else {
		st = afd_zarr_group_text(&id, r.ai, &h->text, &h->tlen);
	}
	*version = n->version ? n->version : afd_version_of(&id, &r);
	afd_attr(c, &id, &r, &h->attr);
	afd_res_release(&r);
	return rc < 0 ? rc : text_made(h, st, why);
}

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

/* The range of node @p n's `data` in its file, if it has one. */
static bool ranged(const struct afd_node *n, uint64_t *off, uint64_t *len)
{
	return n->kind == NK_ENTRY && n->entry == AE_DATA && !n->member &&
	       afd_nodes_range_get(n, off, len);
}

/* The range of node @p n's `data` in its file (afd_nodes_range_get),
 * when @p st (an fstat of the file) is still the node's version. */
static bool range_of(const struct afd_node *n, const struct stat *st,
		     uint64_t *off, uint64_t *len)
{
	struct afd_ident ident;
	if (!S_ISREG(st->st_mode) || !ranged(n, off, len))
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
	/* no open for a node without a range */
	if (!ranged(n, &off, &len))
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
	af_view_kind vk = afd_entry_view(n->entry);
	af_error err;
	af_error_clear(&err);
	if (n->kind == NK_ZARRFILE || n->kind == NK_ZGAFILE) {
		rc = afd_zarr_chunk_open(c, r->sf, r->midx, r->ai, n->sub, h->src, &h->zc,
				     &err);
		if (rc < 0 && rc != -ENOENT && rc != -ENOMEM)
			return handle_fail(h, why, AFD_LINE_OPEN, 0, &err);
		if (rc < 0)
			return rc;
		h->cost = afd_zarr_chunk_cost(h->zc);
		h->kind = H_VIEW;
		return 0;
	}
	const af_zip_entry *me = n->member && r->sf ?
		af_zip_entry_at(r->sf->zip, (size_t)r->midx) : NULL;
	af_cost cost = af_view_cost(&r->ai->a, me, vk);
	h->cost = cost.held < SIZE_MAX ? (size_t)cost.held : SIZE_MAX;
	if (h->fd >= 0 && !n->member &&
	    afd_lz4share_wanted(&r->ai->a, vk)) {
		/* one index for every handle of this version */
		rc = afd_lz4share_get(c, r->sf, &r->ai->a, h->fd, &h->lz4, &err);
		if (rc < 0 && err.status != AF_OK)
			return handle_fail(h, why, AFD_LINE_OPEN, 0, &err);
		if (rc < 0)
			return rc;
	}
	af_status st = af_view_open_shared(&h->view, &r->ai->a, h->src,
					   vk,
					   h->lz4 ? h->lz4->ix : NULL, &err);
	if (st != AF_OK) {
		h->view = NULL;
		return handle_fail(h, why, AFD_LINE_OPEN, 0, &err);
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
	case NK_ZGROUP:
	case NK_ZGARRAY:
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
	bool zg_text = n->kind == NK_ZGFILE ||
		       (n->kind == NK_ZGAFILE && afd_entry_is_text(n->entry));
	int rc = n->kind == NK_FILE ? open_plain(c, n, h, &version) :
		 zg_text ? open_zarr_group_text(c, n, h, &version, why) :
		 open_sourced(c, n, h, &version, why);
	if (rc < 0) {
		afd_handle_close(h);
		return rc;
	}
	h->version = version;
	/* every kind opened here serves bytes: it has its afd_node_io */
	uint64_t was = __atomic_exchange_n(&afd_node_io(n)->served_gen, version,
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
	__atomic_store_n(&afd_node_io(n)->served_gen, h->version,
			 __ATOMIC_RELEASE);
	*out = h;
	return 0;
}
