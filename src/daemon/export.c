/* SPDX-License-Identifier: MIT */
/* NFS export (export.h): LOOKUP of "." and "..", and the saved id map. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ctx.h"
#include "export.h"
#include "hash.h"
#include "tree.h"

/* Drop the lookup counted on @p n (the reply is not sent). */
static void drop_lookup(struct afd_ctx *c, struct afd_node *n)
{
	struct afd_node *gone = afd_nodes_forget(&c->nodes, n, 1);
	if (!gone)
		return;
	afd_notify_unwatch(c, gone->wd);
	afd_openless_unbind(&c->openless, gone);
	afd_node_free(gone);
}

/* Resolve @p id now and check it is still version @p version of the
 * source file @p rec names (NULL: its record was dropped, the version
 * alone is checked). Returns 0 with *r set (release it), or -ESTALE or
 * another -errno. */
static int still_same(struct afd_ctx *c, const struct afd_id *id,
		      const struct afd_idrec *rec, uint64_t version,
		      struct afd_res *r)
{
	int rc = afd_resolve(c, id, NULL, r);
	if (rc < 0)
		return rc == -ENOENT || rc == -ENOTDIR ? -ESTALE : rc;
	if ((rec && ((uint64_t)r->st.st_dev != rec->dev ||
		     (uint64_t)r->st.st_ino != rec->ino)) ||
	    afd_version_of(id, r) != version) {
		afd_res_release(r);
		return -ESTALE;
	}
	return 0;
}

/* A live node: it still serves what it named? Then its attributes. The
 * root is the mount itself: never stale. */
static int live_attr(struct afd_ctx *c, struct afd_node *n, struct stat *attr)
{
	struct afd_id id = afd_id_of(n);
	struct afd_res r;
	int rc;
	if (n == c->nodes.root) {
		rc = afd_resolve(c, &id, NULL, &r);
	} else {
		struct afd_idrec *rec = afd_nodes_record(&c->nodes, n->nodeid);
		rc = still_same(c, &id, rec, n->version, &r);
		free(rec);
	}
	if (rc < 0)
		return rc;
	afd_attr(c, &id, &r, attr);
	afd_res_release(&r);
	return 0;
}

/* Bring back forgotten id @p nodeid from its record. */
static int revive(struct afd_ctx *c, uint64_t nodeid, struct afd_node **out,
		  struct stat *attr)
{
	struct afd_idrec *rec = afd_nodes_record(&c->nodes, nodeid);
	if (!rec)
		return -ESTALE;
	struct afd_id id = { (enum afd_nkind)rec->kind,
			     (enum afd_entry)rec->entry, (char *)rec->path,
			     (char *)rec->member, rec->name, rec->sub };
	struct afd_res r;
	int rc = still_same(c, &id, rec, rec->version, &r);
	if (rc < 0) {
		afd_log(&c->log, AFD_LOG_DEBUG, "handle of %s: %s", rec->path,
			strerror(-rc));
		free(rec);
		return rc;
	}
	int created;
	struct afd_node *n = afd_nodes_adopt(&c->nodes, rec, &created, &rc);
	if (n)
		afd_attr(c, &id, &r, attr);   /* id borrows rec's strings */
	afd_res_release(&r);
	free(rec);
	if (!n)
		return rc;
	if (created && n->kind == NK_DIR) {
		bool watched;
		__atomic_store_n(&n->wd, afd_notify_watch(c, n->path, &watched),
				 __ATOMIC_RELEASE);
		__atomic_store_n(&n->watched, watched, __ATOMIC_RELEASE);
	}
	/* other kinds stay unwatched (short cache lifetimes): their folder's
	 * node, which would push their changes, may not be live */
	*out = n;
	return 0;
}

int afd_export_lookup(struct afd_ctx *c, uint64_t nodeid, bool parent,
		      struct afd_node **out, struct stat *attr)
{
	if (parent) {
		struct afd_node *child = afd_nodes_from_id(&c->nodes, nodeid);
		if (!child)
			return -ESTALE;
		/* the root's parent is itself (outside the mount is not ours) */
		nodeid = child == c->nodes.root ? child->nodeid : child->parent;
	}
	struct afd_node *n = afd_nodes_ref_id(&c->nodes, nodeid);
	if (!n)
		return revive(c, nodeid, out, attr);
	int rc = live_attr(c, n, attr);
	if (rc < 0) {
		drop_lookup(c, n);
		return rc;
	}
	*out = n;
	return 0;
}

/* The map file's name for this SOURCE: a digest of its dev/ino and of the
 * root's source path (a single-file SOURCE). Returns false if unnamed. */
static bool map_name(struct afd_ctx *c, char *buf, size_t n, uint64_t *key)
{
	struct stat st;
	if (!c->source_abs || stat(c->source_abs, &st) < 0)
		return false;
	uint64_t v[2] = { (uint64_t)st.st_dev, (uint64_t)st.st_ino };
	uint64_t h = afd_hash_bytes(AFD_FNV_SEED, v, sizeof(v));
	*key = afd_hash_mix(afd_hash_str(h, c->root_path));
	snprintf(buf, n, "ids-%016llx.afm", (unsigned long long)*key);
	return true;
}

static int open_dir(const char *dir, bool create)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && create) {
		if (mkdir(dir, 0700) < 0 && errno != EEXIST)
			return -1;
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	return fd;
}

void afd_export_load(struct afd_ctx *c)
{
	char name[64], why[160];
	uint64_t key;
	if (!c->opts.index_dir || !map_name(c, name, sizeof(name), &key))
		return;
	int dfd = open_dir(c->opts.index_dir, false);
	if (dfd < 0)
		return;
	why[0] = '\0';
	int rc = afd_idmap_load(&c->nodes.ids, key, dfd, name, why,
				sizeof(why));
	close(dfd);
	if (rc == 0)
		afd_log(&c->log, AFD_LOG_DEBUG, "id map %s: %zu ids", name,
			c->nodes.ids.count);
	else if (rc != -ENOENT)
		afd_log(&c->log, AFD_LOG_WARN, "id map %s/%s ignored: %s "
			"(file handles from before this mount are stale)",
			c->opts.index_dir, name, why);
}

void afd_export_save(struct afd_ctx *c)
{
	char name[64];
	uint64_t key;
	if (!c->opts.index_dir || !map_name(c, name, sizeof(name), &key))
		return;
	/* copied under the lock (lookups wait for a copy, not for a disk) */
	unsigned char *buf = NULL;
	size_t len = 0;
	int rc = 0;
	pthread_mutex_lock(&c->nodes.lock);
	if (c->nodes.ids.dirty) {
		rc = afd_idmap_encode(&c->nodes.ids, key, &buf, &len);
		if (rc == 0)
			c->nodes.ids.dirty = false;
	}
	pthread_mutex_unlock(&c->nodes.lock);
	if (rc == 0 && !buf)
		return;   /* nothing changed */
	if (rc == 0) {
		int dfd = open_dir(c->opts.index_dir, true);
		rc = dfd < 0 ? -errno : afd_idmap_write(buf, len, dfd, name);
		if (dfd >= 0)
			close(dfd);
	}
	free(buf);
	if (rc < 0) {
		pthread_mutex_lock(&c->nodes.lock);
		c->nodes.ids.dirty = true;   /* try again next time */
		pthread_mutex_unlock(&c->nodes.lock);
		afd_log(&c->log, AFD_LOG_WARN, "cannot save id map %s/%s: %s "
			"(file handles will not survive a restart)",
			c->opts.index_dir, name, strerror(-rc));
	}
}

static void *saver_main(void *arg)
{
	struct afd_ctx *c = arg;
	struct afd_saver *s = &c->saver;
	uint64_t every = c->opts.limits.ids_save_ms;
	pthread_mutex_lock(&s->lock);
	while (!s->stop) {
		struct timespec t;
		clock_gettime(CLOCK_MONOTONIC, &t);
		t.tv_sec += (time_t)(every / 1000);
		t.tv_nsec += (long)(every % 1000) * 1000000L;
		if (t.tv_nsec >= 1000000000L) {
			t.tv_sec++;
			t.tv_nsec -= 1000000000L;
		}
		while (!s->stop &&
		       pthread_cond_timedwait(&s->cond, &s->lock, &t) != ETIMEDOUT)
			;
		if (s->stop)
			break;
		pthread_mutex_unlock(&s->lock);
		afd_export_save(c);
		pthread_mutex_lock(&s->lock);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

int afd_export_saver_start(struct afd_ctx *c)
{
	struct afd_saver *s = &c->saver;
	if (s->running || !c->opts.index_dir || !c->opts.limits.ids_save_ms)
		return 0;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, &ca);
	pthread_condattr_destroy(&ca);
	s->stop = false;
	int rc = pthread_create(&s->thread, NULL, saver_main, c);
	if (rc != 0) {
		pthread_cond_destroy(&s->cond);
		pthread_mutex_destroy(&s->lock);
		return -rc;
	}
	s->running = true;
	return 0;
}

void afd_export_saver_stop(struct afd_ctx *c)
{
	struct afd_saver *s = &c->saver;
	if (!s->running)
		return;
	pthread_mutex_lock(&s->lock);
	s->stop = true;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->thread, NULL);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	s->running = false;
}
