/* SPDX-License-Identifier: MIT */
/* The per-mount context: opening the source, setting up every part and
 * tearing them down. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ctx.h"
#include "export.h"
#include "notify.h"
#include "setup.h"
#include "spipe.h"

void afd_limits_default(struct afd_limits *l)
{
	*l = (struct afd_limits){
		.bound_max = 512,
		.bound_budget = (size_t)256 << 20,
		/* readers taking turns come back well within a second */
		.bound_idle_ms = 1000,
		.src_max = 4096,
		/* each archive holds an fd and its central directory */
		.src_max_zip = 64,
		/* a crashed daemon loses at most this much of what it issued
		 * (those handles are then ESTALE, never wrong) */
		.ids_save_ms = 30000,
		.walked_max = AFD_WALKED_MAX_DEFAULT,
	};
}

/* The coarse clock is enough for a 1 s rule and costs no syscall. */
static uint64_t monotonic_ms(void *arg)
{
	(void)arg;
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
	return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

static int open_folder(struct afd_ctx *c, const char *dir)
{
	c->root.fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c->root.fd < 0) {
		fprintf(stderr, "arrayfs: cannot open source folder %s: %s\n",
			dir, strerror(errno));
		return -1;
	}
	c->root_dir = strdup(dir);
	return c->root_dir ? 0 : -1;
}

/*
 * A single-file SOURCE becomes the mount root itself: X.npy or X.ra shows
 * its array folder (data, shape, ...), X.npz its archive folder. Mounting
 * a folder holding just that file would only add one level. The file must
 * parse when mounting: a root that is a plain file is not a folder.
 */
static int init_single(struct afd_ctx *c, const char *abs, enum afd_nkind *kind)
{
	char *copy = strdup(abs);
	if (!copy)
		return -1;
	char *slash = strrchr(copy, '/');
	c->root_path = strdup(slash + 1);
	*slash = '\0';
	int rc = open_folder(c, copy[0] ? copy : "/");
	free(copy);
	if (rc < 0 || !c->root_path)
		return -1;
	if (af_array_name_kind(c->root_path, false) == AF_NAME_NONE) {
		fprintf(stderr, "arrayfs: source %s is not a folder nor a "
			".npy, .npz or .ra file\n", c->opts.source);
		return -1;
	}
	struct afd_src *sf = NULL;
	rc = afd_src_get(c, c->root_path, NULL, NULL, &sf);
	if (rc < 0) {
		fprintf(stderr, "arrayfs: cannot read source %s: %s\n",
			c->opts.source, strerror(-rc));
		return -1;
	}
	enum afd_skind k = sf->kind;
	afd_src_put(sf);
	if (k == SK_PLAIN) {
		fprintf(stderr, "arrayfs: source %s is not a readable array "
			"file (see the line above)\n", c->opts.source);
		return -1;
	}
	*kind = k == SK_ARRAY ? NK_ARRAY : NK_NPZDIR;
	c->single = true;
	c->notify.single_name = strdup(c->root_path);
	return 0;
}

/* A newer version of @p path replaced the cached one (srcfile.c): its
 * nodes go, through the notifier's queue. */
static void source_replaced(struct afd_ctx *c, const char *path)
{
	afd_notify_path(c, path, false);
}

/*
 * Fixed heap thresholds. glibc raises its mmap threshold to the size of
 * any mapped block freed (up to 32 MiB), and the top of a thread's heap
 * it keeps to twice that: after one `.zmetadata` document (megabytes)
 * was freed, a heap kept megabytes for good that malloc_trim does not
 * return (it trims the top of the main heap only). Fixed, blocks of
 * 4 MiB and more are always mapped and unmapped at free, and a heap's top
 * past 4 MiB goes back. Not lower: a read's copied reply (up to 1 MiB,
 * handle_read.c) mapped and unmapped each time made reads of a swapped
 * view 40 % slower (BENCHMARKS.md, walks and big folders).
 * One arena: each worker and inflate thread's own arena kept the touched
 * pages of its top (up to the trim threshold) after a walk, about 3 MiB
 * of 4.6 after a 10,000-array group was read; with one, 3.0 in all, and
 * deflated reads, chunk reads and `ds.load()` ran as fast (BENCHMARKS.md,
 * Zarr groups): the daemon's allocations are per request, not per byte.
 */
static void heap_setup(void)
{
	mallopt(M_MMAP_THRESHOLD, 4 << 20);
	mallopt(M_TRIM_THRESHOLD, 4 << 20);
	mallopt(M_ARENA_MAX, 1);
}

int afd_ctx_init(struct afd_ctx *c, const struct afd_opts *o)
{
	heap_setup();
	memset(c, 0, sizeof(*c));
	c->opts = *o;
	c->clock = (struct afd_clock){ monotonic_ms, NULL };
	c->root.fd = -1;
	c->root.own_mnt_id = -1;
	c->notify.ifd = c->notify.efd = -1;
	if (afd_log_init(&c->log, o->debug) < 0 || afd_srcs_init(&c->srcs) < 0 ||
	    afd_notify_init(&c->notify) < 0 ||
	    afd_spipe_key_create(&c->pipe_key) < 0) {
		fprintf(stderr, "arrayfs: out of memory\n");
		return -1;
	}
	c->srcs.replaced = source_replaced;
	c->have_pipe_key = true;
	afd_stacks_init(&c->stacks, &c->root);
	c->have_stacks = true;
	if (afd_zarr_groups_init(&c->zarr_groups) < 0) {
		fprintf(stderr, "arrayfs: out of memory\n");
		return -1;
	}
	c->have_zarr_groups = true;
	afd_openset_init(&c->open);
	c->have_open = true;
	afd_openless_set_init(&c->openless);
	c->have_openless = true;
	if (afd_walked_init(&c->walked, o->limits.walked_max) < 0) {
		fprintf(stderr, "arrayfs: max_walked must be at most %zu\n",
			AFD_WALKED_MAX_LIMIT);
		return -1;
	}
	c->have_walked = true;
	char abs[PATH_MAX];
	struct stat st;
	if (!realpath(o->source, abs) || stat(abs, &st) < 0) {
		fprintf(stderr, "arrayfs: source %s: %s\n", o->source,
			strerror(errno));
		return -1;
	}
	c->source_abs = strdup(abs);
	if (!c->source_abs)
		return -1;
	enum afd_nkind kind = NK_DIR;
	if (S_ISDIR(st.st_mode)) {
		if (open_folder(c, abs) < 0)
			return -1;
		c->root_path = strdup(".");
		if (!c->root_path)
			return -1;
	} else if (S_ISREG(st.st_mode)) {
		if (init_single(c, abs, &kind) < 0)
			return -1;
	} else {
		fprintf(stderr, "arrayfs: source %s is not a folder nor a "
			"regular file\n", o->source);
		return -1;
	}
	if (afd_nodes_init(&c->nodes, kind, c->root_path,
			   kind == NK_NPZDIR ? "" : NULL) < 0) {
		fprintf(stderr, "arrayfs: out of memory\n");
		return -1;
	}
	/* ids issued by earlier mounts of this SOURCE (NFS handles) */
	afd_export_load(c);
	/* the root's folder is watched for the whole mount */
	c->nodes.root->wd = afd_notify_watch(c, ".", &c->nodes.root->watched);
	return 0;
}

void afd_ctx_destroy(struct afd_ctx *c)
{
	afd_export_saver_stop(c);
	/* first: open files hold references on sources and nodes */
	if (c->have_open)
		afd_openset_destroy(&c->open);
	if (c->have_openless)
		afd_openless_set_destroy(&c->openless);
	/* stacks hold parsed sources: before the source cache */
	if (c->have_stacks)
		afd_stacks_destroy(&c->stacks);
	if (c->have_zarr_groups)
		afd_zarr_groups_destroy(&c->zarr_groups);
	if (c->nodes.id_tab)
		afd_nodes_destroy(&c->nodes);
	if (c->srcs.tab)
		afd_srcs_destroy(&c->srcs);
	/* after every source: their members used them */
	af_pool_close(c->pool);
	af_pool_close(c->index_saver);
	if (c->notify.wds)
		afd_notify_destroy(&c->notify);
	if (c->have_walked)
		afd_walked_destroy(&c->walked);
	if (c->log.seen)
		afd_log_destroy(&c->log);
	if (c->have_pipe_key)
		afd_spipe_key_delete(c->pipe_key);
	if (c->root.fd >= 0)
		close(c->root.fd);
	free(c->root_dir);
	free(c->source_abs);
	free(c->root_path);
	free(c->opts.source);
	memset(c, 0, sizeof(*c));
}

int afd_ctx_start_pool(struct afd_ctx *c)
{
	unsigned n = c->opts.inflate_threads;
	af_error err;
	if (n < 2) {
		/* no read-ahead, but indexes are still saved off the
		 * readers' threads */
		if (af_pool_open_background(&c->index_saver, &err) != AF_OK) {
			afd_log(&c->log, AFD_LOG_WARN, "no thread to save "
				"indexes on (the read ending a first pass "
				"saves them): %s", err.msg);
			return -1;
		}
		return 0;
	}
	if (af_pool_open(&c->pool, n, af_pool_default_budget(n), &err) !=
	    AF_OK) {
		afd_log(&c->log, AFD_LOG_WARN, "no read-ahead threads: %s",
			err.msg);
		return -1;
	}
	afd_log(&c->log, AFD_LOG_DEBUG, "%u inflate threads, %llu MiB of "
		"read-ahead at most", n,
		(unsigned long long)(af_pool_budget(c->pool) >> 20));
	return 0;
}
