/* SPDX-License-Identifier: MIT */
/**
 * nowork_ll: a FUSE low-level server that does no work, shaped like an
 * arrayfs mount of N small arrays, so scripts/bench can time the kernel's
 * and libfuse's share of a first pass: the root lists imgNNNNN.npy/ for
 * i < N (readdirplus, entries and attributes given, as arrayfs does), each
 * holding one file `data` of SIZE bytes. Every answer is computed from the
 * inode number: no allocation, no system call but the reply. Open is
 * answered ENOSYS (no open/release round trips, like arrayfs), timeouts
 * are an hour. So a program that lists the root, then reads every data,
 * sends LOOKUP of data and READ a file, exactly as through arrayfs.
 *
 * Without xattrs the kernel answers every getxattr itself after the first
 * (ENOSYS); -o xattrs serves them as arrayfs does, with no work: a name
 * outside user. is EOPNOTSUPP, a user. name ENODATA, listxattr empty; and
 * -o xattrs=enodata answers ENODATA for every name (arrayfs before it
 * answered EOPNOTSUPP), so each probe of ls -l is a round trip.
 *
 * -o auto asks FUSE_CAP_READDIRPLUS_AUTO, as arrayfs does, and answers a
 * READDIR with names alone: a names-only listing (os.listdir) then gets
 * entries in its first batch only, and a program that reads every data
 * after it sends LOOKUP of the folder too, the three requests a file
 * arrayfs gets, with no work behind them.
 *
 * usage: nowork_ll [-o files=N,size=BYTES,xattrs[=enodata],auto]
 *        [FUSE options]
 *        MOUNTPOINT (defaults 60000 and 784; run in the foreground with -f)
 * A big SIZE (the 8 MiB chunk files of a Zarr group) is answered from
 * the same 64 KiB buffer repeated, with the readahead arrayfs asks at
 * INIT (the window itself is the mount's sysfs setting), so a first read
 * of big files costs what the kernel's FUSE page cache alone costs.
 * Inodes: 1 the root, 2 + 2i folder i, 3 + 2i its data.
 */
#define FUSE_USE_VERSION 312
#include <errno.h>
#include <fuse_lowlevel.h>
#include <stdint.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#define TIMEOUT 3600.0
#define NAME_FMT "img%05u.npy"
#define SIZE_MAX_BYTES (1u << 30)
#define MAX_IOV 64  /* a read of up to 4 MiB from the 64 KiB buffer */

enum xattrs { XA_NONE, XA_AS_ARRAYFS, XA_ENODATA };

struct nowork {
	unsigned files;
	unsigned size;
	int xattrs;      /* enum xattrs */
	int names_only;  /* -o auto: READDIRPLUS_AUTO, a READDIR names alone */
	char data[1 << 16];  /* what every read returns (its first SIZE bytes) */
};

static const struct fuse_opt nowork_opts[] = {
	{ "files=%u", offsetof(struct nowork, files), 0 },
	{ "size=%u", offsetof(struct nowork, size), 0 },
	{ "xattrs", offsetof(struct nowork, xattrs), XA_AS_ARRAYFS },
	{ "xattrs=enodata", offsetof(struct nowork, xattrs), XA_ENODATA },
	{ "auto", offsetof(struct nowork, names_only), 1 },
	FUSE_OPT_END
};

static struct nowork *nw(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* The attributes of inode @p ino, or -1 when there is none. */
static int attr_of(const struct nowork *w, fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	if (ino == FUSE_ROOT_ID) {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
		return 0;
	}
	if (ino < 2 || (ino - 2) / 2 >= w->files)
		return -1;
	if (ino % 2 == 0) {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = w->size;
	}
	return 0;
}

static void entry_of(const struct nowork *w, fuse_ino_t ino,
		     struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = ino;
	e->attr_timeout = e->entry_timeout = TIMEOUT;
	attr_of(w, ino, &e->attr);
}

static void nowork_init(void *userdata, struct fuse_conn_info *conn)
{
	const struct nowork *w = userdata;
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
	conn->want &= ~(FUSE_CAP_READDIRPLUS_AUTO | FUSE_CAP_AUTO_INVAL_DATA);
	if (w->names_only && (conn->capable & FUSE_CAP_READDIRPLUS_AUTO))
		conn->want |= FUSE_CAP_READDIRPLUS_AUTO;
	conn->max_readahead = UINT32_MAX;  /* as arrayfs: sysfs sets the window */
}

static void nowork_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	const struct nowork *w = nw(req);
	struct fuse_entry_param e;
	unsigned i;
	char tail;
	if (parent == FUSE_ROOT_ID && sscanf(name, NAME_FMT "%c", &i, &tail) == 1 &&
	    i < w->files) {
		entry_of(w, 2 + 2 * (fuse_ino_t)i, &e);
	} else if (parent != FUSE_ROOT_ID && parent % 2 == 0 &&
		   strcmp(name, "data") == 0) {
		entry_of(w, parent + 1, &e);
	} else {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fuse_reply_entry(req, &e);
}

static void nowork_getattr(fuse_req_t req, fuse_ino_t ino,
			   struct fuse_file_info *fi)
{
	(void)fi;
	struct stat st;
	if (attr_of(nw(req), ino, &st) < 0)
		fuse_reply_err(req, ENOENT);
	else
		fuse_reply_attr(req, &st, TIMEOUT);
}

static void nowork_open(fuse_req_t req, fuse_ino_t ino,
			struct fuse_file_info *fi)
{
	(void)ino; (void)fi;
	fuse_reply_err(req, ENOSYS);  /* no-open: no more opens or releases */
}

static void nowork_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			struct fuse_file_info *fi)
{
	(void)ino; (void)fi;
	const struct nowork *w = nw(req);
	size_t left = off < (off_t)w->size ? w->size - (size_t)off : 0;
	size_t n = size < left ? size : left;
	struct iovec iov[MAX_IOV];
	int k = 0;
	for (size_t done = 0; done < n && k < MAX_IOV; k++) {
		size_t part = n - done < sizeof(w->data) ? n - done : sizeof(w->data);
		iov[k] = (struct iovec){ (void *)w->data, part };
		done += part;
	}
	fuse_reply_iov(req, iov, k);
}

static void nowork_opendir(fuse_req_t req, fuse_ino_t ino,
			   struct fuse_file_info *fi)
{
	(void)ino;
	fuse_reply_open(req, fi);
}

/* Offset k: the k-th entry (0 ".", 1 "..", 2 + i folder i). */
static void nowork_readdir_any(fuse_req_t req, fuse_ino_t ino, size_t size,
			       off_t off, bool plus)
{
	const struct nowork *w = nw(req);
	char *buf = malloc(size ? size : 1);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	size_t used = 0;
	fuse_ino_t nkids = ino == FUSE_ROOT_ID ? w->files : 1;
	for (fuse_ino_t k = (fuse_ino_t)off; k < 2 + nkids; k++) {
		char name[32];
		struct fuse_entry_param e;
		if (k < 2) {
			snprintf(name, sizeof(name), "%s", k ? ".." : ".");
			memset(&e, 0, sizeof(e));  /* ino 0: no lookup counted */
			e.attr.st_ino = ino;
			e.attr.st_mode = S_IFDIR;
		} else if (ino == FUSE_ROOT_ID) {
			snprintf(name, sizeof(name), NAME_FMT, (unsigned)(k - 2));
			entry_of(w, 2 + 2 * (k - 2), &e);
		} else {
			snprintf(name, sizeof(name), "data");
			entry_of(w, ino + 1, &e);
		}
		size_t need = plus ?
			fuse_add_direntry_plus(req, buf + used, size - used,
					       name, &e, (off_t)k + 1) :
			fuse_add_direntry(req, buf + used, size - used, name,
					  &e.attr, (off_t)k + 1);
		if (need > size - used)
			break;
		used += need;
	}
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void nowork_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	nowork_readdir_any(req, ino, size, off, false);
}

static void nowork_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
			       off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	nowork_readdir_any(req, ino, size, off, true);
}

static void nowork_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	(void)ino; (void)nlookup;
	fuse_reply_none(req);
}

static void nowork_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			    size_t size)
{
	(void)ino; (void)size;
	const struct nowork *w = nw(req);
	if (w->xattrs == XA_NONE)
		fuse_reply_err(req, ENOSYS);  /* the kernel asks no more */
	else if (w->xattrs == XA_AS_ARRAYFS && strncmp(name, "user.", 5) != 0)
		fuse_reply_err(req, EOPNOTSUPP);
	else
		fuse_reply_err(req, ENODATA);
}

static void nowork_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	(void)ino;
	if (nw(req)->xattrs == XA_NONE)
		fuse_reply_err(req, ENOSYS);
	else if (size == 0)
		fuse_reply_xattr(req, 0);
	else
		fuse_reply_buf(req, NULL, 0);
}

static const struct fuse_lowlevel_ops nowork_ops = {
	.init = nowork_init,
	.lookup = nowork_lookup,
	.forget = nowork_forget,
	.getattr = nowork_getattr,
	.open = nowork_open,
	.read = nowork_read,
	.opendir = nowork_opendir,
	.readdir = nowork_readdir,
	.readdirplus = nowork_readdirplus,
	.getxattr = nowork_getxattr,
	.listxattr = nowork_listxattr,
};

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts opts;
	struct fuse_loop_config *loop = NULL;
	struct fuse_session *se = NULL;
	int rc = 1;
	static struct nowork w = { .files = 60000, .size = 784 };
	if (fuse_opt_parse(&args, &w, nowork_opts, NULL) != 0 ||
	    fuse_parse_cmdline(&args, &opts) != 0)
		return 1;
	if (!opts.mountpoint || w.size > SIZE_MAX_BYTES) {
		fprintf(stderr, "usage: %s [-o files=N,size=BYTES<=1GiB,"
			"xattrs[=enodata],auto] MOUNTPOINT\n", argv[0]);
		goto out;
	}
	memset(w.data, 'x', sizeof(w.data));
	se = fuse_session_new(&args, &nowork_ops, sizeof(nowork_ops), &w);
	if (!se || fuse_set_signal_handlers(se) != 0)
		goto out;
	if (fuse_session_mount(se, opts.mountpoint) != 0)
		goto out_signals;
	fuse_daemonize(opts.foreground);
	/* the same multi-threaded loop as arrayfs */
	loop = fuse_loop_cfg_create();
	if (!loop)
		goto out_unmount;
	fuse_loop_cfg_set_clone_fd(loop, (unsigned)opts.clone_fd);
	/* libfuse's "unset" value is UINT_MAX: keep its default */
	if (opts.max_idle_threads <= 100000)
		fuse_loop_cfg_set_idle_threads(loop, opts.max_idle_threads);
	if (opts.max_threads > 0 && opts.max_threads <= 100000)
		fuse_loop_cfg_set_max_threads(loop, opts.max_threads);
	rc = opts.singlethread ? fuse_session_loop(se) :
	     fuse_session_loop_mt(se, loop);
	fuse_loop_cfg_destroy(loop);
out_unmount:
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out:
	if (se)
		fuse_session_destroy(se);
	free(opts.mountpoint);
	fuse_opt_free_args(&args);
	return rc ? 1 : 0;
}
