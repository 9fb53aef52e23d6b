/* SPDX-License-Identifier: MIT */
/* inotify on source folders plus the thread that sends kernel invalidations. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/vfs.h>
#include <unistd.h>

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif
#include <fuse_lowlevel.h>

#include "ctx.h"
#include "notify.h"
#include "walked.h"

#define AFD_WATCH_MASK (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | \
			IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF | \
			IN_MOVE_SELF | IN_ONLYDIR)
/* A queue this long means the kernel is flooding us: collapse to "all". */
#define AFD_NOTIFY_QUEUE_MAX 65536u

int afd_notify_init(struct afd_notify *n)
{
	memset(n, 0, sizeof(*n));
	pthread_mutex_init(&n->lock, NULL);
	/* without inotify the daemon still works: changes then show after
	 * the attribute timeout or when a handler notices them */
	n->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	n->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	n->wds = calloc(AFD_WD_BUCKETS, sizeof(*n->wds));
	if (n->efd < 0 || !n->wds) {
		int e = n->efd < 0 ? errno : ENOMEM;
		if (n->ifd >= 0)
			close(n->ifd);
		if (n->efd >= 0)
			close(n->efd);
		free(n->wds);
		pthread_mutex_destroy(&n->lock);
		n->ifd = n->efd = -1;
		return -e;
	}
	return 0;
}

void afd_notify_destroy(struct afd_notify *n)
{
	while (n->head) {
		struct afd_nqitem *it = n->head;
		n->head = it->next;
		free(it->path);
		free(it);
	}
	for (size_t i = 0; i < AFD_WD_BUCKETS; i++) {
		while (n->wds[i]) {
			struct afd_wdpath *w = n->wds[i];
			n->wds[i] = w->next;
			free(w->path);
			free(w);
		}
	}
	free(n->wds);
	free(n->single_name);
	if (n->ifd >= 0)
		close(n->ifd);
	if (n->efd >= 0)
		close(n->efd);
	pthread_mutex_destroy(&n->lock);
}

static void wake(struct afd_notify *n)
{
	uint64_t one = 1;
	ssize_t r = write(n->efd, &one, sizeof(one));
	(void)r;
}

/* Where watch @p wd is (or would go) in the map (lock held). */
static struct afd_wdpath **wd_slot(struct afd_notify *n, int wd)
{
	struct afd_wdpath **pp = &n->wds[(unsigned)wd & (AFD_WD_BUCKETS - 1)];
	while (*pp && (*pp)->wd != wd)
		pp = &(*pp)->next;
	return pp;
}

void afd_notify_path(struct afd_ctx *c, const char *path, bool drop)
{
	struct afd_notify *n = &c->notify;
	struct afd_nqitem *it = malloc(sizeof(*it));
	char *p = path ? strdup(path) : NULL;
	if (!it || (path && !p)) {
		free(it);
		free(p);
		return;
	}
	it->path = p;
	it->drop = drop;
	it->next = NULL;
	pthread_mutex_lock(&n->lock);
	if (!n->running || n->queued >= AFD_NOTIFY_QUEUE_MAX) {
		pthread_mutex_unlock(&n->lock);
		free(p);
		free(it);
		return;
	}
	if (n->tail)
		n->tail->next = it;
	else
		n->head = it;
	n->tail = it;
	n->queued++;
	pthread_mutex_unlock(&n->lock);
	wake(n);
}

/*
 * False for network and cluster file systems: inotify there reports only
 * the changes made through this machine, not another client's.
 */
static bool sees_all_changes(int fd)
{
	static const unsigned long remote[] = {
		0x6969,      /* NFS */
		0x517B,      /* SMB */
		0xFF534D42,  /* CIFS */
		0xFE534D42,  /* SMB2 */
		0x65735546,  /* FUSE (sshfs, s3fs, ...) */
		0x00C36400,  /* Ceph */
		0x01021997,  /* 9p */
		0x5346414F,  /* AFS */
		0x6B414653,  /* kAFS */
		0x7461636F,  /* OCFS2 */
		0x01161970,  /* GFS2 */
		0x0BD00BD0,  /* Lustre */
		0x47504653,  /* GPFS */
		0x13661366,  /* OrangeFS */
		0x73757245,  /* Coda */
	};
	struct statfs sf;
	if (fstatfs(fd, &sf) < 0)
		return false;
	for (size_t i = 0; i < sizeof(remote) / sizeof(remote[0]); i++)
		if ((unsigned long)(uint32_t)sf.f_type == remote[i])
			return false;
	return true;
}

int afd_notify_watch(struct afd_ctx *c, const char *path, bool *pushed)
{
	struct afd_notify *n = &c->notify;
	*pushed = false;
	if (n->ifd < 0)
		return -1;
	char abs[PATH_MAX], link[64];
	int len = strcmp(path, ".") == 0 ?
		  snprintf(abs, sizeof(abs), "%s", c->root_dir) :
		  snprintf(abs, sizeof(abs), "%s/%s", c->root_dir, path);
	if (len < 0 || (size_t)len >= sizeof(abs))
		return -1;
	/* by fd, never by name: the name may lead through our own mount */
	int fd = afd_srcpath_open(&c->root, path, O_PATH | O_DIRECTORY);
	if (fd < 0)
		return -1;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	int wd = inotify_add_watch(n->ifd, link, AFD_WATCH_MASK);
	if (wd < 0) {
		afd_log(&c->log, AFD_LOG_DEBUG, "cannot watch %s: %s", abs,
			strerror(errno));
		close(fd);
		return -1;
	}
	char *p = strdup(path);
	struct afd_wdpath *fresh = malloc(sizeof(*fresh));
	if (!p || !fresh) {
		free(p);
		free(fresh);
		close(fd);
		return -1;
	}
	pthread_mutex_lock(&n->lock);
	struct afd_wdpath **pp = wd_slot(n, wd);
	if (*pp) {
		/* the same folder again (a new node): newest path wins */
		(*pp)->refs++;
		free((*pp)->path);
		(*pp)->path = p;
		free(fresh);
	} else {
		*fresh = (struct afd_wdpath){ wd, 1, p, NULL };
		*pp = fresh;
	}
	pthread_mutex_unlock(&n->lock);
	*pushed = sees_all_changes(fd);
	close(fd);
	/* said once a mount, for the first such folder looked up */
	static const struct afd_logkey network = { AFD_LINE_NETWORK_FS, 0, 0 };
	if (!*pushed)
		afd_log_once(&c->log, &network, AFD_LOG_INFO,
			     "%s is on a network file system: "
			     "changes made elsewhere show within %g s",
			     abs, c->opts.neg_timeout);
	return wd;
}

/* Unlink and free the map entry at @p pp (lock held). */
static void wd_remove(struct afd_wdpath **pp)
{
	struct afd_wdpath *w = *pp;
	*pp = w->next;
	free(w->path);
	free(w);
}

void afd_notify_unwatch(struct afd_ctx *c, int wd)
{
	struct afd_notify *n = &c->notify;
	if (wd < 0 || n->ifd < 0)
		return;
	pthread_mutex_lock(&n->lock);
	struct afd_wdpath **pp = wd_slot(n, wd);
	if (*pp && --(*pp)->refs == 0) {
		wd_remove(pp);
		inotify_rm_watch(n->ifd, wd);
	}
	pthread_mutex_unlock(&n->lock);
}

/* Tell the kernel to forget what it knows about source @p path (NULL: all). */
static void invalidate(struct afd_ctx *c, const char *path, bool drop)
{
	if (drop && path) {
		afd_src_drop(c, path);
		/* the folder's `.stack` may list it: a new one at next lookup */
		char *stack = afd_stack_changed(c, path);
		if (stack)
			invalidate(c, stack, false);
		free(stack);
	}
	/* a change, or events lost (NULL): new `.zarr` models at next lookup */
	if (drop || !path)
		afd_zarr_group_changed(c);
	struct afd_inval *v = NULL;
	long cnt = afd_nodes_collect(&c->nodes, path, &v);
	for (long i = 0; i < cnt; i++) {
		if (v[i].nodeid)
			fuse_lowlevel_notify_inval_inode(c->se, v[i].nodeid, 0, 0);
		if (v[i].parent)
			fuse_lowlevel_notify_inval_entry(c->se, v[i].parent,
							 v[i].name,
							 strlen(v[i].name));
		free(v[i].name);
	}
	free(v);
}

/* Source path of event @p ev, malloc'd, or NULL to ignore it. */
static char *event_path(struct afd_ctx *c, const struct inotify_event *ev)
{
	struct afd_notify *n = &c->notify;
	char *out = NULL;
	pthread_mutex_lock(&n->lock);
	struct afd_wdpath **pp = wd_slot(n, ev->wd);
	if (!*pp) {
		pthread_mutex_unlock(&n->lock);
		return NULL;
	}
	const char *dir = (*pp)->path;
	if (ev->mask & IN_IGNORED) {
		/* the kernel dropped the watch (folder gone) */
		wd_remove(pp);
	} else if (!ev->len || !ev->name[0]) {
		out = strdup(dir);
	} else if (n->single_name) {
		if (strcmp(ev->name, n->single_name) == 0)
			out = strdup(n->single_name);
	} else if (strcmp(dir, ".") == 0) {
		out = strdup(ev->name);
	} else if (asprintf(&out, "%s/%s", dir, ev->name) < 0) {
		out = NULL;
	}
	pthread_mutex_unlock(&n->lock);
	return out;
}

static void drain_inotify(struct afd_ctx *c)
{
	char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
	for (;;) {
		ssize_t len = read(c->notify.ifd, buf, sizeof(buf));
		if (len <= 0)
			return;
		/* one invalidation per path per batch: writers send many events */
		char *seen[64];
		size_t nseen = 0;
		for (char *p = buf; p < buf + len;) {
			const struct inotify_event *ev = (const void *)p;
			p += sizeof(*ev) + ev->len;
			if (ev->mask & IN_Q_OVERFLOW) {
				invalidate(c, NULL, false);
				continue;
			}
			char *path = event_path(c, ev);
			if (!path)
				continue;
			bool dup = false;
			for (size_t i = 0; i < nseen && !dup; i++)
				dup = strcmp(seen[i], path) == 0;
			if (dup || nseen == 64) {
				if (!dup)
					invalidate(c, path, true);
				free(path);
				continue;
			}
			seen[nseen++] = path;
		}
		for (size_t i = 0; i < nseen; i++) {
			afd_log(&c->log, AFD_LOG_DEBUG, "source changed: %s", seen[i]);
			invalidate(c, seen[i], true);
			free(seen[i]);
		}
	}
}

static void drain_queue(struct afd_ctx *c)
{
	struct afd_notify *n = &c->notify;
	pthread_mutex_lock(&n->lock);
	struct afd_nqitem *it = n->head;
	bool flood = n->queued >= AFD_NOTIFY_QUEUE_MAX;
	n->head = n->tail = NULL;
	n->queued = 0;
	pthread_mutex_unlock(&n->lock);
	if (flood)
		invalidate(c, NULL, false);
	while (it) {
		struct afd_nqitem *next = it->next;
		if (!flood)
			invalidate(c, it->path, it->drop);
		free(it->path);
		free(it);
		it = next;
	}
}

/* Stop asked (the loop ends, or unmounting): no more invalidations. */
static bool stopping(struct afd_notify *n)
{
	pthread_mutex_lock(&n->lock);
	bool stop = n->stop;
	pthread_mutex_unlock(&n->lock);
	return stop;
}

/*
 * Drop the entries of the array folders listed longest ago past the bound
 * (walked.h). The kernel then drops each one's sub-tree where unused, and
 * the FORGETs that follow free the nodes. A folder the kernel forgot
 * already is skipped; its parent forgotten meanwhile answers ENOENT:
 * nothing is left to drop either way.
 */
static void prune_walked(struct afd_ctx *c)
{
	struct afd_walked_dir batch[64];
	size_t k;
	while (!stopping(&c->notify) &&
	       (k = afd_walked_take(&c->walked, batch, 64)) > 0) {
		for (size_t i = 0; i < k; i++) {
			uint64_t parent;
			char *name;
			if (afd_nodes_entry_of(&c->nodes, batch[i].nodeid,
					       batch[i].gen, &parent, &name) < 0)
				continue;
			int rc = fuse_lowlevel_notify_inval_entry(
				c->se, parent, name, strlen(name));
			if (rc < 0 && rc != -ENOENT)
				afd_log(&c->log, AFD_LOG_DEBUG,
					"cannot drop walked %s: %s", name,
					strerror(-rc));
			free(name);
		}
	}
}

void afd_notify_kick(struct afd_ctx *c)
{
	wake(&c->notify);
}

static void *notify_main(void *arg)
{
	struct afd_ctx *c = arg;
	struct afd_notify *n = &c->notify;
	for (;;) {
		struct pollfd pfd[2] = { { .fd = n->efd, .events = POLLIN },
					 { .fd = n->ifd, .events = POLLIN } };
		if (poll(pfd, n->ifd >= 0 ? 2 : 1, -1) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents) {
			uint64_t cnt;
			ssize_t r = read(n->efd, &cnt, sizeof(cnt));
			(void)r;
		}
		if (stopping(n))
			break;
		if (n->ifd >= 0 && pfd[1].revents)
			drain_inotify(c);
		drain_queue(c);
		prune_walked(c);
	}
	return NULL;
}

int afd_notify_start(struct afd_ctx *c)
{
	struct afd_notify *n = &c->notify;
	n->running = true;
	int rc = pthread_create(&n->thread, NULL, notify_main, c);
	if (rc != 0) {
		n->running = false;
		return -rc;
	}
	return 0;
}

void afd_notify_stop(struct afd_ctx *c)
{
	struct afd_notify *n = &c->notify;
	pthread_mutex_lock(&n->lock);
	bool was = n->running;
	n->stop = true;
	n->running = false;
	pthread_mutex_unlock(&n->lock);
	if (!was)
		return;
	wake(n);
	pthread_join(n->thread, NULL);
}
