/* SPDX-License-Identifier: MIT */
/**
 * The FUSE low-level handlers, named arrayfs_ll_<op>, and their table
 * (the xattr handlers are in ops_xattr.c, the refusals of a read-only
 * mount in ops_refuse.c). These three are the only files that reply to
 * the kernel, and every failure is answered in them: a plain -errno as it is, and a failure with a reason (an
 * af_error: a broken source, a read that failed) through afd_fail, which
 * logs it once and answers af_status_errno of its status (fail.h), the
 * same errno whether it was met at open or at read.
 *
 * Cache lifetimes: entries and attributes live ctx->opts.entry_timeout
 * seconds (an hour by default). That is safe because a change to a source
 * is pushed to the kernel (inotify -> notifier thread -> inval_inode /
 * inval_entry), and it saves one round trip per file on big trees. Negative
 * entries live neg_timeout (1 s): they are invalidated too, but a brief
 * life bounds the harm when inotify is not available (NFS sources).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ctx.h"
#include "dirahead.h"
#include "dirs.h"
#include "export.h"
#include "fail.h"
#include "handle.h"
#include "openset.h"
#include "ops.h"
#include "ops_i.h"
#include "tree.h"
#include "zarr_group_nodes.h"

/* Answer failure @p rc of @p req: the one boundary (see the top). */
static void afd_fail(fuse_req_t req, int rc, const struct afd_failure *why)
{
	fuse_reply_err(req, afd_failure_errno(&afd_ctx(req)->log, rc, why));
}

static void arrayfs_ll_init(void *userdata, struct fuse_conn_info *conn)
{
	struct afd_ctx *c = userdata;
	if (conn->capable & FUSE_CAP_SPLICE_WRITE)
		conn->want |= FUSE_CAP_SPLICE_WRITE;
	if (conn->capable & FUSE_CAP_SPLICE_MOVE)
		conn->want |= FUSE_CAP_SPLICE_MOVE;
	if (conn->capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
	if (conn->capable & FUSE_CAP_CACHE_SYMLINKS)
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
	/* a readdirplus entry parses its array's header; the kernel asks
	 * for entries where the program looks them up (ls -l, du, find -ls:
	 * a lookup between batches) and for a listing's first batch, and
	 * for names alone elsewhere (ls -f, os.listdir), which parse
	 * nothing: 100,000 arrays listed by ls -f in 0.14 s, not 1.9 s */
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
	if (conn->capable & FUSE_CAP_READDIRPLUS_AUTO)
		conn->want |= FUSE_CAP_READDIRPLUS_AUTO;
	/* LOOKUP of "." and ".." answered: handles outlive FORGET (export.h) */
	if (conn->capable & FUSE_CAP_EXPORT_SUPPORT)
		conn->want |= FUSE_CAP_EXPORT_SUPPORT;
	/* the page cache is dropped explicitly (open, notifier), not on
	 * every attribute refresh */
	conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
	conn->max_readahead = UINT32_MAX;
	/* open is answered ENOSYS: no open/release round trip per file, and
	 * the page cache is kept (a changed source gets a new node) */
	c->no_open = (conn->capable & FUSE_CAP_NO_OPEN_SUPPORT) != 0;
	afd_log(&c->log, AFD_LOG_DEBUG, "init: kernel %u.%u, want 0x%x",
		conn->proto_major, conn->proto_minor, conn->want);
}

static void arrayfs_ll_destroy(void *userdata)
{
	(void)userdata;
}

/*
 * How long the kernel may cache what node @p n shows: long when a change
 * is pushed (inotify -> notifier), else briefly, since a file is then
 * served from the page cache until its name is looked up again.
 */
static double cache_secs(struct afd_ctx *c, const struct afd_node *n)
{
	bool pushed = __atomic_load_n(&n->watched, __ATOMIC_ACQUIRE) &&
		      __atomic_load_n(&c->notify.running, __ATOMIC_ACQUIRE);
	return pushed ? c->opts.entry_timeout : c->opts.neg_timeout;
}

static void forget_one(struct afd_ctx *c, struct afd_node *n, uint64_t nlookup)
{
	if (!n)
		return;   /* not an id the kernel holds: nothing to forget */
	struct afd_node *gone = afd_nodes_forget(&c->nodes, n, nlookup);
	if (!gone)
		return;
	afd_notify_unwatch(c, gone->wd);
	afd_openless_unbind(&c->openless, gone);
	afd_node_free(gone);
}

/* LOOKUP of "." or ".." (@p up) in @p ino: an NFS handle opened after the
 * kernel forgot its inode, or a folder reconnected (export.h). */
static void lookup_export(fuse_req_t req, fuse_ino_t ino, bool up)
{
	struct afd_ctx *c = afd_ctx(req);
	struct fuse_entry_param e;
	memset(&e, 0, sizeof(e));
	struct afd_node *n;
	int rc = afd_export_lookup(c, ino, up, &n, &e.attr);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	e.ino = afd_nodes_id(&c->nodes, n);
	e.generation = n->gen;
	/* "." and ".." are never entries the kernel keeps */
	e.entry_timeout = 0;
	e.attr_timeout = cache_secs(c, n);
	if (fuse_reply_entry(req, &e) == -ENOENT)
		forget_one(c, n, 1);
}

/*
 * Resolve @p name in folder @p p and fill the entry reply @p e for it: the
 * attributes, the node (one lookup counted: whoever gives it to the kernel
 * forgets it again if the reply never arrives) and the cache times. Lookup
 * and readdirplus both answer through here, so a listed entry is exactly
 * what a lookup of its name would have said. Returns 0 (*out set),
 * -ENOENT or -errno.
 */
/*
 * An array folder of a .npy/.ra file keeps what its entries' lookups need
 * from the version just parsed (afd_arrsum, tree.h): @p n when it is one,
 * and its folder @p p when an entry of @p p was resolved by a parse (the
 * source changed since @p p remembered it). Without memory, lookups parse.
 */
static void remember_version(struct afd_ctx *c, struct afd_node *p,
			     struct afd_node *n, const struct afd_id *id,
			     const struct afd_res *r)
{
	if (!r->sf || r->sf->kind != SK_ARRAY || r->stk || id->member)
		return;
	struct afd_arrsum sum;
	afd_arrsum_of(&sum, r->sf);
	if (id->kind == NK_ARRAY)
		(void)afd_nodes_sum_set(&c->nodes, n, &sum);
	else if (p->kind == NK_ARRAY)
		(void)afd_nodes_sum_set(&c->nodes, p, &sum);
}

/*
 * `data` of a .npy/.ra file whose bytes are one unchanged range of the
 * source, in the version @p n serves: its first read then opens the
 * source and checks the version without parsing it again (handle.c).
 */
static void remember_range(struct afd_node *n, const struct afd_id *id,
			   const struct afd_res *r)
{
	if (id->kind != NK_ENTRY || id->entry != AE_DATA || id->member || r->stk)
		return;
	if (r->summed && r->sum.data_plain)
		afd_nodes_range_set(n, r->sum.data_src_off, r->sum.size[AE_DATA]);
	else if (!r->summed && r->sf && r->sf->kind == SK_ARRAY &&
		 r->sf->arr.data_plain)
		afd_nodes_range_set(n, r->sf->arr.data_src_off,
				    r->sf->arr.size[AE_DATA]);
}

/*
 * A lookup of `data` that opened its source to check it (tree.h): the fd
 * becomes the node's bound handle, so the read that comes next opens
 * nothing. Only where reads come without an open (no-open kernels).
 */
static void bind_looked_up(struct afd_ctx *c, struct afd_node *n, int fd,
			   const struct stat *st)
{
	struct afd_handle *h;
	/* a hint (bind decides under its lock): a node read before keeps
	 * the handle it has */
	struct afd_node_io *io = afd_node_io(n);
	if (!io || __atomic_load_n(&io->openless, __ATOMIC_RELAXED))
		close(fd);
	else if (afd_handle_adopt_range(c, n, fd, st, &h) == 0)
		afd_openless_offer(c, n, h);
}

static int make_entry(struct afd_ctx *c, struct afd_node *p, const char *name,
		      bool lookup, uint64_t since, struct fuse_entry_param *e,
		      struct afd_node **out)
{
	struct afd_id id;
	struct afd_res r;
	int fd = -1;
	memset(e, 0, sizeof(*e));
	/* a listing opens nothing: it may never be read */
	int rc = afd_lookup(c, p, name, since, &id, &r,
			    lookup && c->no_open ? &fd : NULL);
	if (rc < 0)
		return rc;
	afd_attr(c, &id, &r, &e->attr);
	int created;
	struct afd_node *n = afd_nodes_get_sub(&c->nodes, id.kind, id.entry,
					       id.path, id.member,
					       afd_version_of(&id, &r), id.sub,
					       afd_nodes_id(&c->nodes, p), name,
					       &r.st, &created);
	if (n) {
		remember_version(c, p, n, &id, &r);
		remember_range(n, &id, &r);
	}
	if (n && fd >= 0)
		bind_looked_up(c, n, fd, &r.st);
	else if (fd >= 0)
		close(fd);
	afd_res_release(&r);
	afd_id_free(&id);
	if (!n)
		return -ENOMEM;
	if (created && n->kind == NK_DIR) {
		bool watched;
		__atomic_store_n(&n->wd, afd_notify_watch(c, n->path, &watched),
				 __ATOMIC_RELEASE);
		__atomic_store_n(&n->watched, watched, __ATOMIC_RELEASE);
	} else if (created && !afd_zarr_group_kind(n->kind)) {
		/* its source's changes are seen in the folder holding it */
		__atomic_store_n(&n->watched,
				 __atomic_load_n(&p->watched, __ATOMIC_ACQUIRE),
				 __ATOMIC_RELEASE);
	}
	/* a `.zarr/` node is never watched: what it shows depends on a whole
	 * folder, so the kernel keeps it briefly (zarr_group_models.h) */
	e->ino = afd_nodes_id(&c->nodes, n);
	e->generation = n->gen;
	e->entry_timeout = cache_secs(c, p);
	e->attr_timeout = cache_secs(c, n);
	*out = n;
	return 0;
}

static void arrayfs_ll_lookup(fuse_req_t req, fuse_ino_t parent,
			      const char *name)
{
	struct afd_ctx *c = afd_ctx(req);
	struct fuse_entry_param e;
	struct afd_node *n;
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
		lookup_export(req, parent, name[1] == '.');
		return;
	}
	struct afd_node *p = node_of(req, parent);
	if (!p) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	int rc = make_entry(c, p, name, true, 0, &e, &n);
	if (rc == -ENOENT) {
		memset(&e, 0, sizeof(e));
		e.entry_timeout = c->opts.neg_timeout;
		fuse_reply_entry(req, &e);
		return;
	}
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	if (fuse_reply_entry(req, &e) == -ENOENT) {
		/* the request was interrupted: the kernel never got it */
		forget_one(c, n, 1);
	}
}

/* After a forget: with many nodes freed since the last time, give the
 * heap's free memory back (glibc keeps it otherwise), the source cache
 * first cut to what the kernel still holds and the `.zarr` folder models
 * dropped (they are scattered through the pages the nodes were freed
 * from); with -d, say how many nodes are left, so a test sees every
 * lookup undone. */
static void after_forget(struct afd_ctx *c)
{
	if (afd_nodes_trim_due(&c->nodes)) {
		afd_srcs_shed(&c->srcs, afd_nodes_count(&c->nodes));
		afd_zarr_groups_shed(&c->zarr_groups);
		malloc_trim(0);
		afd_log(&c->log, AFD_LOG_DEBUG, "forget: free memory returned");
	}
	if (c->log.debug)
		afd_log(&c->log, AFD_LOG_DEBUG, "forget: %zu nodes left",
			afd_nodes_count(&c->nodes));
}

static void arrayfs_ll_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct afd_ctx *c = afd_ctx(req);
	forget_one(c, node_of(req, ino), nlookup);
	after_forget(c);
	fuse_reply_none(req);
}

static void arrayfs_ll_forget_multi(fuse_req_t req, size_t count,
				    struct fuse_forget_data *forgets)
{
	struct afd_ctx *c = afd_ctx(req);
	for (size_t i = 0; i < count; i++)
		forget_one(c, afd_nodes_from_id(&c->nodes, forgets[i].ino),
			   forgets[i].nlookup);
	after_forget(c);
	fuse_reply_none(req);
}

static void arrayfs_ll_getattr(fuse_req_t req, fuse_ino_t ino,
			       struct fuse_file_info *fi)
{
	struct afd_ctx *c = afd_ctx(req);
	if (fi && fi->fh) {
		/* through an open file: the version it opened, not cached (the
		 * path may already show a newer version) */
		const struct afd_handle *h =
			((struct afd_open *)(uintptr_t)fi->fh)->obj;
		fuse_reply_attr(req, afd_handle_attr(h), 0);
		return;
	}
	struct afd_node *n = node_of(req, ino);
	if (!n) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	struct stat st;
	if (afd_openless_attr(&c->openless, n, &st)) {
		/* a node that has been read: the version it serves */
		fuse_reply_attr(req, &st, cache_secs(c, n));
		return;
	}
	struct afd_id id = afd_id_of(n);
	struct afd_res r;
	int rc = afd_resolve(c, &id, NULL, &r);
	if (rc < 0 && n == c->nodes.root && c->single) {
		/* the file under a single-file mount broke: the root stays an
		 * (empty) folder, never an error */
		memset(&r, 0, sizeof(r));
		r.midx = r.zdir = -1;
		if (afd_srcpath_stat(&c->root, n->path, &r.st) == 0) {
			id.kind = NK_ARRAY;
			rc = 0;
		}
	}
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	afd_attr(c, &id, &r, &st);
	afd_res_release(&r);
	fuse_reply_attr(req, &st, cache_secs(c, n));
}

static void arrayfs_ll_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct afd_ctx *c = afd_ctx(req);
	struct afd_node *n = node_of(req, ino);
	if (!n) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	if (n->kind != NK_LINK) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	char buf[PATH_MAX + 1];
	int fd = afd_srcpath_open(&c->root, n->path, O_PATH);
	if (fd < 0) {
		fuse_reply_err(req, fd == -EXDEV ? EINVAL : -fd);
		return;
	}
	ssize_t len = readlinkat(fd, "", buf, sizeof(buf));
	int e = errno;
	close(fd);
	if (len < 0) {
		fuse_reply_err(req, e == ENOENT ? EINVAL : e);
		return;
	}
	if ((size_t)len >= sizeof(buf)) {
		fuse_reply_err(req, ENAMETOOLONG);
		return;
	}
	buf[len] = '\0';
	fuse_reply_readlink(req, buf);
}

static void close_dir(void *obj)
{
	afd_dir_close(obj);
}

static void close_file(void *obj)
{
	afd_handle_close(obj);
}

/* fi->fh of an open file or folder: its entry in the open set */
static void *open_obj(const struct fuse_file_info *fi)
{
	return ((struct afd_open *)(uintptr_t)fi->fh)->obj;
}

/* Register @p obj and answer the open; closes it if either fails. */
static void reply_open(fuse_req_t req, struct fuse_file_info *fi, void *obj,
		       void (*close)(void *))
{
	struct afd_ctx *c = afd_ctx(req);
	struct afd_open *o = afd_openset_add(&c->open, obj, close);
	if (!o) {
		close(obj);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)o;
	if (fuse_reply_open(req, fi) == -ENOENT)
		afd_openset_remove(&c->open, o);
}

static void arrayfs_ll_opendir(fuse_req_t req, fuse_ino_t ino,
			       struct fuse_file_info *fi)
{
	struct afd_ctx *c = afd_ctx(req);
	struct afd_dirh *d;
	struct afd_node *n = node_of(req, ino);
	if (!n) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	int rc = afd_dir_open(c, n, &d);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	reply_open(req, fi, d, close_dir);
}

/* The nodes one readdirplus reply counted a lookup for. */
struct plus_reply {
	struct afd_ctx *c;
	struct afd_node *dir;
	uint64_t since;          /* afd_dir_listed_since */
	struct afd_node **counted;
	size_t n, cap;
};

static bool plus_entry(void *arg, const char *name, struct fuse_entry_param *e)
{
	struct plus_reply *pr = arg;
	struct afd_node *n;
	/* a name that cannot be resolved now is listed without an entry: the
	 * kernel's own lookup of it then answers the error */
	if (pr->n == pr->cap || make_entry(pr->c, pr->dir, name, false, pr->since, e, &n) < 0)
		return false;
	pr->counted[pr->n++] = n;
	return true;
}

/*
 * A listing, or with @p plus a readdirplus listing: each entry it sends
 * but . and .. counts one lookup, as a lookup reply would, and the
 * kernel keeps its dentry for the entry's cache time (make_entry).
 */
static void reply_listing(fuse_req_t req, fuse_ino_t ino, size_t size,
			  off_t off, struct fuse_file_info *fi, bool plus)
{
	struct afd_ctx *c = afd_ctx(req);
	struct afd_dirh *d = open_obj(fi);
	struct plus_reply pr = { c, node_of(req, ino), 0, NULL, 0, 0 };
	struct afd_dir_plus how = { plus_entry, &pr };
	if (plus && !pr.dir) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	char *buf = malloc(size ? size : 1);
	if (plus) {
		pr.since = afd_dir_listed_since(c, d, off);
		/* no entry is smaller than one with a one-byte name */
		pr.cap = size / fuse_add_direntry_plus(req, NULL, 0, "x", NULL,
						       0) + 1;
		pr.counted = malloc(pr.cap * sizeof(*pr.counted));
	}
	if (!buf || (plus && !pr.counted)) {
		free(buf);
		free(pr.counted);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	ssize_t used = afd_dir_fill(c, req, d, buf, size, off,
				    plus ? &how : NULL);
	/* not after a first batch: a names-only listing gets one too
	 * (READDIRPLUS_AUTO), and would not use the parses */
	struct afd_dir_ahead ahead = { NULL, 0, 0 };
	/* the next two batches, last name first: the next request then
	 * finds its names parsed (the last pass stopped there) and is
	 * answered at once, while this thread parses the one after it */
	if (plus && used > 0 && off != 0)
		afd_dir_ahead_of(d, 2 * pr.n, &ahead);
	/* what the walk ring needs of the folder's node is read before the
	 * reply too: once the listing is sent, the kernel may forget the
	 * folder and its node be freed at any moment (TSan saw a FORGET
	 * free it while it was read after the reply) */
	struct afd_walked_dir walked;
	bool walk = off == 0 && afd_walked_of(pr.dir, &walked);
	int sent = used < 0 ? fuse_reply_err(req, (int)-used) :
		   fuse_reply_buf(req, buf, (size_t)used);
	if (sent == -ENOENT || used < 0) {
		/* an error sends no entry, and an interrupted request reaches
		 * no one: the kernel never got them */
		for (size_t i = 0; i < pr.n; i++)
			forget_one(c, pr.counted[i], 1);
	}
	if (used >= 0 && sent == 0 && walk)
		afd_walked_listed(c, &walked);
	free(pr.counted);
	free(buf);
	/* the reply is out: this thread is free to parse what comes next */
	afd_dir_ahead_run(c, &ahead);
}

static void arrayfs_ll_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
			       off_t off, struct fuse_file_info *fi)
{
	reply_listing(req, ino, size, off, fi, false);
}

static void arrayfs_ll_readdirplus(fuse_req_t req, fuse_ino_t ino,
				   size_t size, off_t off,
				   struct fuse_file_info *fi)
{
	reply_listing(req, ino, size, off, fi, true);
}

static void arrayfs_ll_releasedir(fuse_req_t req, fuse_ino_t ino,
				  struct fuse_file_info *fi)
{
	(void)ino;
	afd_openset_remove(&afd_ctx(req)->open,
			   (struct afd_open *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

static void arrayfs_ll_open(fuse_req_t req, fuse_ino_t ino,
			    struct fuse_file_info *fi)
{
	struct afd_ctx *c = afd_ctx(req);
	struct afd_handle *h;
	bool keep = false;
	if (c->no_open) {
		/* "success, and send no more opens" (FUSE_CAP_NO_OPEN_SUPPORT);
		 * the mount is read-only, so the kernel refuses writes itself */
		fuse_reply_err(req, ENOSYS);
		return;
	}
	struct afd_failure why;
	struct afd_node *n = node_of(req, ino);
	if (!n) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	int rc = afd_handle_open(c, n, fi->flags, &h, &keep,
				 &why);
	if (rc < 0) {
		afd_fail(req, rc, &why);
		return;
	}
	fi->keep_cache = keep;
	fi->direct_io = 0;
	reply_open(req, fi, h, close_file);
}

/*
 * Answer a read with @p bv. Pieces all in memory (decoded or copied bytes)
 * go to the kernel in one writev, which copies them straight into its
 * pages: libfuse's splice path would first write them into a pipe, a
 * second copy of every byte. Pieces in this thread's splice pipe (source
 * bytes) are spliced.
 */
static void reply_pieces(fuse_req_t req, const struct fuse_bufvec *bv)
{
	struct iovec iov[16];
	bool in_memory = bv->count <= sizeof(iov) / sizeof(iov[0]);
	for (size_t i = 0; in_memory && i < bv->count; i++) {
		in_memory = !(bv->buf[i].flags & FUSE_BUF_IS_FD);
		iov[i] = (struct iovec){ bv->buf[i].mem, bv->buf[i].size };
	}
	if (in_memory)
		fuse_reply_iov(req, iov, (int)bv->count);
	else
		fuse_reply_data(req, (struct fuse_bufvec *)bv,
				FUSE_BUF_SPLICE_MOVE);
}

static void arrayfs_ll_read(fuse_req_t req, fuse_ino_t ino, size_t size,
			    off_t off, struct fuse_file_info *fi)
{
	struct afd_ctx *c = afd_ctx(req);
	struct afd_handle *h;
	struct afd_rbuf rb;
	struct afd_failure why;
	bool opened = false;
	if (fi->fh) {
		h = open_obj(fi);
		afd_handle_hold(h);
	} else {
		/* opened without a round trip: the node's own handle */
		struct afd_node *n = node_of(req, ino);
		if (!n) {
			fuse_reply_err(req, ESTALE);
			return;
		}
		int rc = afd_openless_get(c, n, &h, &opened, &why);
		if (rc < 0) {
			afd_fail(req, rc, &why);
			return;
		}
	}
	int rc = afd_handle_read(c, h, size, off, opened, &rb, &why);
	if (rc < 0)
		afd_fail(req, rc, &why);
	else if (rb.bv->count == 0)
		fuse_reply_buf(req, NULL, 0);
	else
		reply_pieces(req, rb.bv);
	afd_rbuf_free(&rb);
	afd_handle_close(h);
}

static void arrayfs_ll_release(fuse_req_t req, fuse_ino_t ino,
			       struct fuse_file_info *fi)
{
	(void)ino;
	afd_openset_remove(&afd_ctx(req)->open,
			   (struct afd_open *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

static void arrayfs_ll_statfs(fuse_req_t req, fuse_ino_t ino)
{
	(void)ino;
	struct statvfs sv;
	if (fstatvfs(afd_ctx(req)->root.fd, &sv) < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	sv.f_flag |= ST_RDONLY;
	fuse_reply_statfs(req, &sv);
}

const struct fuse_lowlevel_ops afd_ops = {
	.init = arrayfs_ll_init,
	.destroy = arrayfs_ll_destroy,
	.lookup = arrayfs_ll_lookup,
	.forget = arrayfs_ll_forget,
	.forget_multi = arrayfs_ll_forget_multi,
	.getattr = arrayfs_ll_getattr,
	.readlink = arrayfs_ll_readlink,
	.opendir = arrayfs_ll_opendir,
	.readdir = arrayfs_ll_readdir,
	.readdirplus = arrayfs_ll_readdirplus,
	.releasedir = arrayfs_ll_releasedir,
	.open = arrayfs_ll_open,
	.read = arrayfs_ll_read,
	.release = arrayfs_ll_release,
	.statfs = arrayfs_ll_statfs,
	.getxattr = arrayfs_ll_getxattr,
	.listxattr = arrayfs_ll_listxattr,
	.setattr = arrayfs_ll_setattr,
	.mknod = arrayfs_ll_mknod,
	.mkdir = arrayfs_ll_mkdir,
	.unlink = arrayfs_ll_unlink,
	.rmdir = arrayfs_ll_unlink,
	.symlink = arrayfs_ll_symlink,
	.rename = arrayfs_ll_rename,
	.link = arrayfs_ll_link,
	.write = arrayfs_ll_write,
	.create = arrayfs_ll_create,
	.setxattr = arrayfs_ll_setxattr,
	.removexattr = arrayfs_ll_removexattr,
	.fallocate = arrayfs_ll_fallocate,
	.copy_file_range = arrayfs_ll_copy_file_range,
};
