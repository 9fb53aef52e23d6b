/* SPDX-License-Identifier: MIT */
/* `.stack/`: listing a folder's members, reading their headers once, the
 * compact member table, the verdicts kept per folder and the member fds
 * their readers share. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctx.h"
#include "hash.h"
#include "path.h"
#include "stackdir.h"
#include "stackscan.h"
#include "tree.h"  /* struct afd_id */

/* The member fds (stackdir.h) live and die with the verdict cache;
 * stackread.c takes and fills them. */

/* Set up @p m: no fd open, no thread until the first read-ahead. */
static void mfds_init(struct afd_mfds *m, const struct afd_srcroot *root)
{
	memset(m, 0, sizeof(*m));
	m->root = root;
	pthread_mutex_init(&m->lock, NULL);
	pthread_cond_init(&m->cv, NULL);
	pthread_cond_init(&m->opened, NULL);
}

/* Stop the prefetch thread (dropping its jobs): before stacks are freed. */
static void mfds_stop(struct afd_mfds *m)
{
	pthread_mutex_lock(&m->lock);
	bool running = m->running;
	m->stop = true;
	pthread_cond_broadcast(&m->cv);
	pthread_mutex_unlock(&m->lock);
	if (running)
		pthread_join(m->thread, NULL);
	for (unsigned k = 0; k < m->njobs; k++)
		afd_stack_put(m->job[k].stk);
	m->njobs = 0;
	m->running = false;
}

/* Close every fd (no reader left). */
static void mfds_destroy(struct afd_mfds *m)
{
	mfds_stop(m);
	pthread_cond_destroy(&m->cv);
	pthread_cond_destroy(&m->opened);
	for (size_t k = 0; k < AFD_MFD_SLOTS; k++)
		if (m->slot[k].stk && m->slot[k].fd >= 0)
			close(m->slot[k].fd);
	pthread_mutex_destroy(&m->lock);
}

/* Close the fds kept for @p stk (it is being freed: nobody reads it). */
static void mfds_forget(struct afd_mfds *m, const struct afd_stack *stk)
{
	int fds[AFD_MFD_SLOTS];
	size_t n = 0;
	pthread_mutex_lock(&m->lock);
	for (size_t k = 0; k < AFD_MFD_SLOTS; k++) {
		struct afd_mfd *s = &m->slot[k];
		if (s->stk != stk)
			continue;
		if (s->fd >= 0)
			fds[n++] = s->fd;
		memset(s, 0, sizeof(*s));
	}
	pthread_mutex_unlock(&m->lock);
	for (size_t k = 0; k < n; k++)
		close(fds[k]);
}

int afd_stacks_init(struct afd_stacks *s, const struct afd_srcroot *root)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	mfds_init(&s->mfds, root);
	return 0;
}

static void slot_clear(struct afd_stack_slot *sl)
{
	free(sl->dir);
	free(sl->prefix);
	memset(sl, 0, sizeof(*sl));
}

void afd_stacks_destroy(struct afd_stacks *s)
{
	/* its jobs hold stacks: none may be put after the slots are gone */
	mfds_stop(&s->mfds);
	for (size_t k = 0; k < AFD_STACK_CACHED; k++) {
		afd_stack_put(s->slot[k].stk);
		slot_clear(&s->slot[k]);
	}
	mfds_destroy(&s->mfds);
	pthread_mutex_destroy(&s->lock);
}

static bool is_stack_name(const char *s)
{
	size_t n = strlen(s), k = strlen(AFD_STACK_NAME);
	return n >= k && strcmp(s + n - k, AFD_STACK_NAME) == 0 &&
	       (n == k || s[n - k - 1] == '/');
}

bool afd_stack_id(const struct afd_id *id)
{
	if (id->kind != NK_ARRAY && id->kind != NK_ENTRY &&
	    id->kind != NK_ZARRDIR && id->kind != NK_ZARRFILE)
		return false;
	return id->member ? is_stack_name(id->member) : is_stack_name(id->path);
}

void afd_stack_hold(struct afd_stack *s)
{
	__atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
}

void afd_stack_put(struct afd_stack *s)
{
	if (!s || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	mfds_forget(s->mfds, s);
	af_array_free(&s->arr.a);
	if (s->dirfd >= 0)
		close(s->dirfd);
	afd_src_put(s->sf);
	free(s->m);
	free(s->names);
	free(s->dir);
	free(s->prefix);
	free(s);
}

const char *afd_stack_name(const struct afd_stack *s, uint64_t i, size_t *len)
{
	const char *p = s->names + s->m[i].name_off;
	const char *end = memchr(p, '\n', s->names_len - s->m[i].name_off);
	*len = end ? (size_t)(end - p) : 0;
	return p;
}

/* ---- verdicts ---- */

/* Split `.stack` node @p id into its folder (and npz prefix). */
static int folder_of(const struct afd_id *id, char **dir, char **prefix)
{
	*dir = *prefix = NULL;
	size_t k = strlen(AFD_STACK_NAME);
	if (id->member) {
		*dir = strdup(id->path);
		*prefix = strndup(id->member, strlen(id->member) - k);
	} else {
		size_t n = strlen(id->path);
		*dir = n == k ? strdup(".") : strndup(id->path, n - k - 1);
	}
	if (!*dir || (id->member && !*prefix)) {
		free(*dir);
		free(*prefix);
		return -ENOMEM;
	}
	return 0;
}

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/* The fresh verdict for (dir, prefix), or false. Under the lock. */
static bool cached(struct afd_ctx *c, const char *dir, const char *prefix,
		   const struct afd_ident *now, uint64_t src_key,
		   struct afd_stack **out)
{
	struct afd_stacks *ss = &c->stacks;
	for (size_t k = 0; k < AFD_STACK_CACHED; k++) {
		struct afd_stack_slot *sl = &ss->slot[k];
		if (!sl->dir || strcmp(sl->dir, dir) != 0 ||
		    !same_str(sl->prefix, prefix))
			continue;
		bool fresh = prefix ? sl->src_key == src_key :
			     afd_ident_eq(&sl->dir_id, now) &&
			     (sl->watched || afd_now_ms(c) - sl->made_ms <
					     AFD_STACK_UNWATCHED_MS);
		if (!fresh)
			return false;
		sl->used = ++ss->tick;
		*out = sl->stk;
		if (sl->stk)
			afd_stack_hold(sl->stk);
		return true;
	}
	return false;
}

/* Keep a verdict (@p s referenced or NULL). Under the lock; returns the
 * stack the slot held before, for the caller to put after unlocking. */
static struct afd_stack *remember(struct afd_ctx *c, char *dir, char *prefix,
				  const struct afd_ident *dir_id,
				  uint64_t src_key, bool watched,
				  struct afd_stack *s)
{
	struct afd_stacks *ss = &c->stacks;
	struct afd_stack_slot *sl = NULL;
	for (size_t k = 0; k < AFD_STACK_CACHED && !sl; k++)
		if (ss->slot[k].dir && strcmp(ss->slot[k].dir, dir) == 0 &&
		    same_str(ss->slot[k].prefix, prefix))
			sl = &ss->slot[k];
	for (size_t k = 0; k < AFD_STACK_CACHED && !sl; k++)
		if (!ss->slot[k].dir)
			sl = &ss->slot[k];
	for (size_t k = 0; k < AFD_STACK_CACHED && !sl; k++)
		if (!sl || ss->slot[k].used < sl->used)
			sl = &ss->slot[k];
	struct afd_stack *old = sl->stk;
	/* a resolve (getattr, open) cannot tell whether the folder's changes
	 * are pushed; the lookup that made the last verdict could */
	if (sl->dir && strcmp(sl->dir, dir) == 0 && same_str(sl->prefix, prefix))
		watched = watched || sl->watched;
	slot_clear(sl);
	sl->dir = dir;
	sl->prefix = prefix;
	sl->stk = s;
	if (s)
		afd_stack_hold(s);
	sl->dir_id = *dir_id;
	sl->src_key = src_key;
	sl->made_ms = afd_now_ms(c);
	sl->watched = watched;
	sl->used = ++ss->tick;
	return old;
}

/* A new stack object for (dir, prefix), its folder opened. */
static int stack_new(struct afd_ctx *c, const char *dir, const char *prefix,
		     struct afd_stack **out, struct afd_ident *dir_id,
		     uint64_t *src_key)
{
	struct afd_stack *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->refs = 1;
	s->dirfd = -1;
	s->mfds = &c->stacks.mfds;
	s->dir = strdup(dir);
	s->prefix = prefix ? strdup(prefix) : NULL;
	int rc = 0;
	if (!s->dir || (prefix && !s->prefix)) {
		rc = -ENOMEM;
	} else if (prefix) {
		rc = afd_src_get(c, dir, NULL, NULL, &s->sf);
		if (rc == 0 && s->sf->kind != SK_NPZ)
			rc = -ENOENT;
		if (rc == 0) {
			s->st = s->sf->st;
			*dir_id = s->sf->id;
			*src_key = s->sf->key;
		}
	} else {
		s->dirfd = afd_srcpath_open(&c->root, dir, O_RDONLY | O_DIRECTORY);
		if (s->dirfd < 0) {
			rc = s->dirfd == -EXDEV ? -ENOENT : s->dirfd;
			s->dirfd = -1;
		} else if (fstat(s->dirfd, &s->st) < 0) {
			rc = -errno;
		} else {
			afd_ident_of(dir_id, &s->st);
		}
	}
	if (rc < 0) {
		afd_stack_put(s);
		return rc == -EINVAL ? -ENOENT : rc;
	}
	*out = s;
	return 0;
}

int afd_stack_get(struct afd_ctx *c, const struct afd_id *id, bool watched,
		  struct afd_stack **out)
{
	*out = NULL;
	char *dir, *prefix;
	int rc = folder_of(id, &dir, &prefix);
	if (rc < 0)
		return rc;
	struct afd_stack *s = NULL;
	struct afd_ident dir_id;
	uint64_t src_key = 0;
	rc = stack_new(c, dir, prefix, &s, &dir_id, &src_key);
	if (rc < 0)
		goto out;
	struct afd_stacks *ss = &c->stacks;
	struct afd_stack *hit = NULL;
	pthread_mutex_lock(&ss->lock);
	bool found = cached(c, dir, prefix, &dir_id, src_key, &hit);
	uint64_t gen = ss->gen;
	pthread_mutex_unlock(&ss->lock);
	if (found) {
		afd_stack_put(s);
		s = NULL;
		*out = hit;
		rc = hit ? 0 : -ENOENT;
		goto out;
	}
	rc = afd_stack_scan(c, s, afd_ident_key(id->path, &dir_id) ^ src_key);
	if (rc < 0 && rc != -ENOENT)
		goto out;
	pthread_mutex_lock(&ss->lock);
	struct afd_stack *old = NULL;
	/* a change seen while scanning: this verdict may be stale already */
	if (ss->gen == gen) {
		old = remember(c, dir, prefix, &dir_id, src_key, watched,
			       rc == 0 ? s : NULL);
		dir = prefix = NULL;
	}
	pthread_mutex_unlock(&ss->lock);
	afd_stack_put(old);
	if (rc == 0) {
		*out = s;
		s = NULL;
	}
out:
	afd_stack_put(s);
	free(dir);
	free(prefix);
	return rc;
}

char *afd_stack_changed(struct afd_ctx *c, const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir = slash ? strndup(path, (size_t)(slash - path)) : strdup(".");
	if (!dir)
		return NULL;
	struct afd_stacks *ss = &c->stacks;
	struct afd_stack *old = NULL;
	pthread_mutex_lock(&ss->lock);
	ss->gen++;
	for (size_t k = 0; k < AFD_STACK_CACHED; k++) {
		struct afd_stack_slot *sl = &ss->slot[k];
		if (sl->dir && !sl->prefix && strcmp(sl->dir, dir) == 0) {
			old = sl->stk;
			slot_clear(sl);
			break;
		}
	}
	pthread_mutex_unlock(&ss->lock);
	afd_stack_put(old);
	char *out = afd_path_join(dir, AFD_STACK_NAME);
	free(dir);
	return out;
}
