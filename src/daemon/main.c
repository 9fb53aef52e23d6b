/* SPDX-License-Identifier: MIT */
/* arrayfs: options, checks of SOURCE and MOUNTPOINT, then the FUSE loop. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "arrayfs/arrayfs.h"
#include "ctx.h"
#include "setup.h"
#include "export.h"
#include "mountinfo.h"
#include "ops.h"
#include "readahead.h"

#define AFD_DEFAULT_TIMEOUT 3600.0
#define AFD_DEFAULT_NEG_TIMEOUT 1.0

static const struct fuse_opt afd_opt_spec[] = {
	{ "uid=%d", offsetof(struct afd_opts, uid), 0 },
	{ "gid=%d", offsetof(struct afd_opts, gid), 0 },
	{ "timeout=%lf", offsetof(struct afd_opts, entry_timeout), 0 },
	{ "negative_timeout=%lf", offsetof(struct afd_opts, neg_timeout), 0 },
	{ "readahead_kb=%u", offsetof(struct afd_opts, readahead_kb), 0 },
	{ "index_dir=%s", offsetof(struct afd_opts, index_dir), 0 },
	{ "no_index", offsetof(struct afd_opts, no_index), 1 },
	{ "zarr_chunk=%" SCNu64, offsetof(struct afd_opts, zarr_chunk), 0 },
	{ "inflate_threads=%u", offsetof(struct afd_opts, inflate_threads), 0 },
	{ "max_handles=%zu", offsetof(struct afd_opts, limits.bound_max), 0 },
	{ "max_decoded=%zu", offsetof(struct afd_opts, limits.bound_budget), 0 },
	{ "decoded_idle_ms=%" SCNu64,
	  offsetof(struct afd_opts, limits.bound_idle_ms), 0 },
	{ "max_walked=%zu", offsetof(struct afd_opts, limits.walked_max), 0 },
	FUSE_OPT_END
};

/* The first non-option is SOURCE; the rest (MOUNTPOINT) go to libfuse. */
static int opt_proc(void *data, const char *arg, int key,
		    struct fuse_args *outargs)
{
	(void)outargs;
	struct afd_opts *o = data;
	if (key == FUSE_OPT_KEY_NONOPT && !o->source) {
		o->source = strdup(arg);
		return o->source ? 0 : -1;
	}
	return 1;
}

/* One read-ahead thread per core, as many as a pool runs. */
static unsigned default_inflate_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	if (n < 1)
		return 1;
	return n > AF_POOL_MAX_THREADS ? AF_POOL_MAX_THREADS : (unsigned)n;
}

static void usage(const char *prog)
{
	struct afd_limits l;
	afd_limits_default(&l);
	printf("usage: %s [options] SOURCE MOUNTPOINT\n"
	       "\n"
	       "Mount SOURCE (a folder, or one .npy/.npz/.ra file) read-only at\n"
	       "MOUNTPOINT; arrays appear as folders of data, shape, dtype,\n"
	       "header and .npy/.ra views. Unmount with fusermount3 -u MOUNTPOINT.\n"
	       "\n"
	       "arrayfs options:\n"
	       "    -o uid=N               owner of every file (default: the source's)\n"
	       "    -o gid=N               group of every file (default: the source's)\n"
	       "    -o timeout=S           entry/attribute cache seconds (default %g)\n"
	       "    -o negative_timeout=S  cache seconds for missing names (default %g)\n"
	       "    -o readahead_kb=N      readahead window when run as root (default %u;\n"
	       "                           0: the kernel's 128)\n"
	       "    -o index_dir=DIR       saved inflate indexes of npz members and node\n"
	       "                           ids for NFS handles (default\n"
	       "                           $XDG_CACHE_HOME/arrayfs, ~/.cache/arrayfs;\n"
	       "                           root: /var/cache/arrayfs; 256 MiB at most)\n"
	       "    -o no_index            neither read nor save indexes and ids\n"
	       "    -o zarr_chunk=BYTES    largest chunk file of B.zarr/ (default 8388608)\n"
	       "    -o inflate_threads=N   threads inflating npz members ahead of\n"
	       "                           sequential readers (default: one per core,\n"
	       "                           here %u; 0 or 1: none; %llu MiB of buffers\n"
	       "                           at most)\n"
	       "    -o max_handles=N       files kept open for reads without an open\n"
	       "                           (default %zu)\n"
	       "    -o max_decoded=BYTES   decoded LZ4 data those keep (default %zu)\n"
	       "    -o decoded_idle_ms=MS  kept anyway by files read this recently\n"
	       "                           (default %" PRIu64 ")\n"
	       "    -o max_walked=N        array folders a walk (du, find, ls -R)\n"
	       "                           listed whose entries the kernel keeps;\n"
	       "                           older ones are dropped (default %zu;\n"
	       "                           0: keep all)\n"
	       "\n", prog, AFD_DEFAULT_TIMEOUT, AFD_DEFAULT_NEG_TIMEOUT,
	       AFD_READAHEAD_DEFAULT_KB, default_inflate_threads(),
	       (unsigned long long)(af_pool_default_budget(
		       default_inflate_threads()) >> 20),
	       l.bound_max, l.bound_budget, l.bound_idle_ms, l.walked_max);
	fuse_cmdline_help();
	fuse_lowlevel_help();
}

/* fsname=arrayfs:<source>, with the -o separators escaped. */
static int add_fsname(struct fuse_args *args, const char *source)
{
	size_t n = strlen(source);
	char *opt = malloc(2 * n + 32);
	if (!opt)
		return -1;
	char *p = opt + sprintf(opt, "-ofsname=arrayfs:");
	for (const char *s = source; *s; s++) {
		if (*s == ',' || *s == '\\')
			*p++ = '\\';
		*p++ = *s;
	}
	*p = '\0';
	int rc = fuse_opt_add_arg(args, opt);
	free(opt);
	return rc;
}

/* Many open files at once each hold an fd: allow as many as we may. */
static void raise_nofile(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* Whether folder @p mp holds anything (its files are hidden while mounted). */
static bool has_entries(const char *mp)
{
	DIR *d = opendir(mp);
	if (!d)
		return false;
	struct dirent *e;
	bool any = false;
	while (!any && (e = readdir(d)))
		any = strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return any;
}

static int check_mountpoint(const char *mp)
{
	struct stat st;
	if (stat(mp, &st) < 0) {
		fprintf(stderr, "arrayfs: mountpoint %s: %s\n", mp, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "arrayfs: mountpoint %s is not a directory\n", mp);
		return -1;
	}
	/* a second mount would stack on the first and need two unmounts */
	struct afd_mountinfo m;
	if (afd_mountinfo_top(mp, NULL, &m) == 0 &&
	    strcmp(m.fstype, "fuse.arrayfs") == 0) {
		fprintf(stderr, "arrayfs: mountpoint %s is already an arrayfs "
			"mount (unmount it first: fusermount3 -u %s)\n", mp, mp);
		return -1;
	}
	if (has_entries(mp))
		fprintf(stderr, "arrayfs: warning: mountpoint %s is not empty: "
			"its files are hidden while arrayfs is mounted there\n",
			mp);
	return 0;
}

/*
 * Learn our own mount from mountinfo, before any request is served, so
 * the daemon can refuse to look anything up through it (srcpath.h).
 */
static int learn_own_mount(struct afd_ctx *c, const char *mp,
			   struct afd_mountinfo *m)
{
	int rc = afd_mountinfo_top(mp, NULL, m);
	if (rc < 0) {
		fprintf(stderr, "arrayfs: cannot find the new mount %s in "
			"/proc/self/mountinfo: %s\n", mp, strerror(-rc));
		return -1;
	}
	c->root.own_mnt_id = m->mnt_id;
	c->root.own_dev = makedev(m->major, m->minor);
	return 0;
}

static int run(struct afd_ctx *c, struct fuse_args *args,
	       struct fuse_cmdline_opts *cmd)
{
	int ret = 1;
	struct fuse_session *se = fuse_session_new(args, &afd_ops,
						   sizeof(afd_ops), c);
	if (!se)
		return 1;
	c->se = se;
	if (fuse_set_signal_handlers(se) != 0)
		goto out_session;
	if (fuse_session_mount(se, cmd->mountpoint) != 0)
		goto out_signals;
	struct afd_mountinfo own;
	if (learn_own_mount(c, cmd->mountpoint, &own) < 0)
		goto out_unmount;
	/* daemonize only once mounted: the launcher's exit status then
	 * says whether the mount is there */
	fuse_daemonize(cmd->foreground);
	if (!cmd->foreground)
		afd_log_use_syslog(&c->log);
	afd_ctx_start_pool(c);
	if (c->opts.readahead_kb) {
		int ra = afd_readahead_set(&own, c->opts.readahead_kb);
		afd_log(&c->log, AFD_LOG_DEBUG, "readahead %u KiB: %s",
			c->opts.readahead_kb, ra < 0 ? strerror(-ra) : "set");
	}
	if (afd_notify_start(c) < 0)
		afd_log(&c->log, AFD_LOG_WARN,
			"no change notification thread: changed sources show "
			"after the cache timeout");
	if (afd_export_saver_start(c) < 0)
		afd_log(&c->log, AFD_LOG_WARN, "no id map saver thread: the "
			"ids NFS handles name are saved at unmount only");
	int rc;
	if (cmd->singlethread) {
		rc = fuse_session_loop(se);
	} else {
		struct fuse_loop_config *cfg = fuse_loop_cfg_create();
		if (!cfg) {
			rc = -ENOMEM;
		} else {
			fuse_loop_cfg_set_clone_fd(cfg, (unsigned)cmd->clone_fd);
			/* libfuse's "unset" value is UINT_MAX: keep its default */
			if (cmd->max_idle_threads <= 100000)
				fuse_loop_cfg_set_idle_threads(cfg, cmd->max_idle_threads);
			if (cmd->max_threads > 0 && cmd->max_threads <= 100000)
				fuse_loop_cfg_set_max_threads(cfg, cmd->max_threads);
			rc = fuse_session_loop_mt(se, cfg);
			fuse_loop_cfg_destroy(cfg);
		}
	}
	afd_notify_stop(c);
	/* the ids given out, for the handles NFS clients keep (export.h) */
	afd_export_saver_stop(c);
	afd_export_save(c);
	/* a positive rc is the signal that ended the loop: a clean exit */
	ret = rc < 0 ? 1 : 0;
out_unmount:
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out_session:
	fuse_session_destroy(se);
	c->se = NULL;
	return ret;
}

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts cmd;
	struct afd_opts o = { .entry_timeout = AFD_DEFAULT_TIMEOUT,
			      .neg_timeout = AFD_DEFAULT_NEG_TIMEOUT,
			      .uid = -1, .gid = -1,
			      .readahead_kb = AFD_READAHEAD_DEFAULT_KB };
	struct afd_ctx ctx;
	int ret = 1;

	afd_limits_default(&o.limits);
	o.zarr_chunk = AF_ZARR_CHUNK_DEFAULT;
	o.inflate_threads = default_inflate_threads();
	memset(&cmd, 0, sizeof(cmd));
	memset(&ctx, 0, sizeof(ctx));
	ctx.root.fd = -1;
	if (fuse_opt_parse(&args, &o, afd_opt_spec, opt_proc) != 0)
		goto out;
	if (fuse_parse_cmdline(&args, &cmd) != 0)
		goto out;
	if (cmd.show_help) {
		usage(argv[0]);
		ret = 0;
		goto out;
	}
	if (cmd.show_version) {
		printf("arrayfs %s\n", ARRAYFS_VERSION);
		printf("FUSE library version %s\n", fuse_pkgversion());
		fflush(stdout);  /* the next line comes from a child process */
		fuse_lowlevel_version();
		ret = 0;
		goto out;
	}
	if (!o.source || !cmd.mountpoint) {
		fprintf(stderr, "usage: %s [options] SOURCE MOUNTPOINT\n"
			"       %s --help\n", argv[0], argv[0]);
		goto out;
	}
	if (o.entry_timeout < 0 || o.neg_timeout < 0) {
		fprintf(stderr, "arrayfs: timeouts must not be negative\n");
		goto out;
	}
	if (o.inflate_threads > AF_POOL_MAX_THREADS) {
		fprintf(stderr, "arrayfs: inflate_threads must be 0 to %u\n",
			AF_POOL_MAX_THREADS);
		goto out;
	}
	if (o.zarr_chunk < 1 || o.zarr_chunk > INT64_MAX) {
		fprintf(stderr, "arrayfs: zarr_chunk must be 1 to %" PRId64 " bytes\n",
			INT64_MAX);
		goto out;
	}
	o.debug = cmd.debug;
	o.foreground = cmd.foreground;
	if (o.no_index) {
		free(o.index_dir);
		o.index_dir = NULL;
	} else if (!o.index_dir) {
		char dir[4096];
		if (af_index_dir_default(dir, sizeof(dir)))
			o.index_dir = strdup(dir);
	}
	if (check_mountpoint(cmd.mountpoint) < 0)
		goto out;
	struct afd_opts copy = o;
	o.source = NULL;   /* the context owns it now */
	if (afd_ctx_init(&ctx, &copy) < 0)
		goto out;
	if (fuse_opt_add_arg(&args, "-oro,default_permissions,subtype=arrayfs") ||
	    add_fsname(&args, ctx.source_abs)) {
		fprintf(stderr, "arrayfs: out of memory\n");
		goto out;
	}
	raise_nofile();
	ret = run(&ctx, &args, &cmd);
out:
	afd_ctx_destroy(&ctx);
	free(o.source);
	free(o.index_dir);
	free(cmd.mountpoint);
	fuse_opt_free_args(&args);
	return ret;
}
