/* SPDX-License-Identifier: MIT */
/* A `.stack`'s member bytes: bounded member fds, identity checks, decoding. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctx.h"
#include "hash.h"
#include "path.h"
#include "lz4share.h"
#include "srcfile.h"
#include "stackdir.h"
#include "stackread.h"

/* afd_stackread_fd_put's tag: how the fd was had */
enum { TAG_SLOT_BASE = 0, TAG_OWN = -1, TAG_ARCHIVE = -2 };

/* Consecutive members of one stack take consecutive slots: a window of
 * read-ahead never evicts itself. */
static size_t slot_of(const struct afd_stack *stk, uint64_t i)
{
	return (size_t)((afd_hash_mix((uint64_t)(uintptr_t)stk) + i) %
			AFD_MFD_SLOTS);
}

/* Log once that member @p i of @p stk is not the version listed. */
static int member_changed(struct afd_stackread *r, uint64_t i, const char *how)
{
	struct afd_stack *s = r->stk;
	size_t len;
	const char *name = afd_stack_name(s, i, &len);
	struct afd_logkey k = { AFD_LINE_CHANGED, s->key, i };
	afd_log_once(&r->c->log, &k, AFD_LOG_WARN,
		     "cannot read %s/%s%s: member %.*s %s since the stack was "
		     "listed; looking .stack up again gives the new one",
		     s->dir, s->prefix ? s->prefix : "", AFD_STACK_NAME, (int)len, name, how);
	return -EIO;
}

/* Whether fd still holds member @p i as listed (0), else -EIO, logged. */
static int check_member(struct afd_stackread *r, uint64_t i, int fd)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return member_changed(r, i, "cannot be checked");
	struct afd_ident id;
	afd_ident_of(&id, &st);
	if (afd_ident_key(NULL, &id) != r->stk->m[i].ident)
		return member_changed(r, i, "changed");
	return 0;
}

/* The archive under an npz stack must still be the one parsed. */
static int check_archive(struct afd_stackread *r, uint64_t i)
{
	struct stat st;
	struct afd_ident id;
	if (fstat(r->stk->sf->fd, &st) < 0)
		return member_changed(r, i, "cannot be checked");
	afd_ident_of(&id, &st);
	return afd_ident_eq(&id, &r->stk->sf->id) ? 0 :
	       member_changed(r, i, "changed (its archive did)");
}

/* Open member @p i of folder stack @p stk: the fd or -errno. */
static int open_in(const struct afd_srcroot *root, const struct afd_stack *stk,
		   uint64_t i)
{
	size_t len;
	const char *name = afd_stack_name(stk, i, &len);
	char buf[NAME_MAX + 1];
	if (len > NAME_MAX)
		return -ENOENT;
	memcpy(buf, name, len);
	buf[len] = '\0';
	return afd_srcpath_open_in(root, stk->dirfd, buf, O_RDONLY | O_NONBLOCK);
}

static int open_member(struct afd_stackread *r, uint64_t i)
{
	int fd = open_in(&r->c->root, r->stk, i);
	return fd >= 0 ? fd : member_changed(r, i, "is gone");
}

/* The prefetch thread: open member i into its slot if that is free. */
static void prefetch_one(struct afd_mfds *m, struct afd_stack *stk, uint64_t i)
{
	struct afd_mfd *s = &m->slot[slot_of(stk, i)];
	pthread_mutex_lock(&m->lock);
	if ((s->stk == stk && s->i == i) || s->busy) {
		pthread_mutex_unlock(&m->lock);
		return;
	}
	int old = s->stk ? s->fd : -1;
	s->stk = stk;
	s->i = i;
	s->fd = -1;
	s->busy = 1;
	s->opening = true;
	pthread_mutex_unlock(&m->lock);
	if (old >= 0)
		close(old);
	/* an identity check is the reader's, after its read (stackread.h) */
	int fd = open_in(m->root, stk, i);
	pthread_mutex_lock(&m->lock);
	if (fd >= 0) {
		s->fd = fd;
		s->busy = 0;
		s->opening = false;
	} else {
		memset(s, 0, sizeof(*s));
	}
	pthread_cond_broadcast(&m->opened);
	pthread_mutex_unlock(&m->lock);
}

static void *prefetch_main(void *arg)
{
	struct afd_mfds *m = arg;
	pthread_mutex_lock(&m->lock);
	for (;;) {
		while (!m->stop && m->njobs == 0)
			pthread_cond_wait(&m->cv, &m->lock);
		if (m->stop)
			break;
		struct afd_mfd_job j = m->job[0];
		memmove(m->job, m->job + 1, --m->njobs * sizeof(m->job[0]));
		pthread_mutex_unlock(&m->lock);
		for (uint64_t i = j.lo; i < j.hi; i++)
			prefetch_one(m, j.stk, i);
		afd_stack_put(j.stk);
		pthread_mutex_lock(&m->lock);
	}
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

/* A sequential reader is at member @p i: open the members ahead of it. */
static void read_ahead(struct afd_stackread *r, uint64_t i)
{
	uint64_t last = __atomic_exchange_n(&r->last, i, __ATOMIC_RELAXED);
	if (i != last + 1 || i % AFD_MFD_STEP != 0 || r->stk->sf)
		return;
	uint64_t lo = i + AFD_MFD_STEP, hi = i + 3 * AFD_MFD_STEP;
	if (hi > r->stk->n)
		hi = r->stk->n;
	if (lo >= hi)
		return;
	struct afd_mfds *m = &r->c->stacks.mfds;
	pthread_mutex_lock(&m->lock);
	if (!m->running && !m->stop)
		m->running = pthread_create(&m->thread, NULL, prefetch_main, m) == 0;
	if (m->running && m->njobs < AFD_MFD_JOBS) {
		afd_stack_hold(r->stk);
		m->job[m->njobs++] = (struct afd_mfd_job){ r->stk, lo, hi };
		pthread_cond_signal(&m->cv);
	}
	pthread_mutex_unlock(&m->lock);
}

/* Member @p i's fd: kept in its slot, or opened for this use (*tag). */
static int fd_get(struct afd_stackread *r, uint64_t i, int *tag)
{
	struct afd_mfds *m = &r->c->stacks.mfds;
	size_t k = slot_of(r->stk, i);
	struct afd_mfd *s = &m->slot[k];
	int old = -1;
	pthread_mutex_lock(&m->lock);
	/* being opened ahead by the prefetch thread: wait rather than open
	 * it twice */
	while (s->stk == r->stk && s->i == i && s->opening)
		pthread_cond_wait(&m->opened, &m->lock);
	if (s->stk == r->stk && s->i == i && s->fd >= 0) {
		s->busy++;
		int fd = s->fd;
		pthread_mutex_unlock(&m->lock);
		*tag = (int)k;
		return fd;
	}
	bool mine = s->busy == 0;
	if (mine) {
		old = s->stk ? s->fd : -1;
		s->stk = r->stk;
		s->i = i;
		s->fd = -1;
		s->busy = 1;
	}
	pthread_mutex_unlock(&m->lock);
	if (old >= 0)
		close(old);
	int fd = open_member(r, i);
	if (!mine) {
		*tag = TAG_OWN;
		return fd;
	}
	pthread_mutex_lock(&m->lock);
	if (fd >= 0) {
		s->fd = fd;
	} else {
		memset(s, 0, sizeof(*s));
	}
	pthread_mutex_unlock(&m->lock);
	*tag = (int)k;
	return fd;
}

static void fd_put(struct afd_stackread *r, int fd, int tag)
{
	if (tag == TAG_OWN) {
		close(fd);
		return;
	}
	if (tag < TAG_SLOT_BASE)
		return;
	struct afd_mfds *m = &r->c->stacks.mfds;
	pthread_mutex_lock(&m->lock);
	m->slot[tag].busy--;
	pthread_mutex_unlock(&m->lock);
}

int afd_stackread_fd_get(struct afd_stackread *r, uint64_t i, uint64_t *pos,
			 int *tag)
{
	const struct afd_stack_member *mb = &r->stk->m[i];
	if (mb->flags & AFD_SM_DECODE)
		return -ENOTSUP;
	*pos = mb->data_off;
	if (r->stk->sf) {
		*tag = TAG_ARCHIVE;
		int rc = check_archive(r, i);
		return rc < 0 ? rc : r->stk->sf->fd;
	}
	int fd = fd_get(r, i, tag);
	if (fd < 0)
		return fd;
	int rc = check_member(r, i, fd);
	if (rc < 0) {
		fd_put(r, fd, *tag);
		return rc;
	}
	return fd;
}

int afd_stackread_fd_put(struct afd_stackread *r, uint64_t i, int fd, int tag)
{
	int rc = tag == TAG_ARCHIVE ? check_archive(r, i) : check_member(r, i, fd);
	fd_put(r, fd, tag);
	return rc;
}

static ssize_t pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;
	while (done < len) {
		ssize_t got = pread(fd, (char *)buf + done, len - done,
				    (off_t)(off + done));
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		if (got == 0)
			break;
		done += (size_t)got;
	}
	return (ssize_t)done;
}

/* The slot of @p r keeping member @p i, or AFD_STACK_KEPT (klock held). */
static unsigned kept_slot(const struct afd_stackread *r, uint64_t i)
{
	unsigned k = 0;
	while (k < AFD_STACK_KEPT && r->kept[k] != i)
		k++;
	return k;
}

/* Make LZ4 member @p i one that @p r keeps (klock held), in place of the
 * one kept longest: its version's shared index, checked to be the version
 * listed. The slot, or -EIO (logged), -ENOMEM. */
static int keep_lz4(struct afd_stackread *r, uint64_t i)
{
	size_t len;
	const char *name = afd_stack_name(r->stk, i, &len);
	char nbuf[NAME_MAX + 1];
	if (len > NAME_MAX)
		return member_changed(r, i, "is gone");
	memcpy(nbuf, name, len);
	nbuf[len] = '\0';
	char *path = afd_path_join(r->stk->dir, nbuf);
	if (!path)
		return -ENOMEM;
	int fd = -1;
	struct afd_src *sf = NULL;
	int rc = afd_src_get(r->c, path, NULL, &fd, &sf);
	free(path);
	if (rc == -ENOMEM)
		return rc;
	if (rc < 0)
		return member_changed(r, i, "is gone");
	if (sf->kind != SK_ARRAY ||
	    !afd_lz4share_wanted(&sf->arr.a, AF_VIEW_DATA))
		rc = member_changed(r, i, "no longer parses as it did");
	else
		rc = check_member(r, i, fd);
	struct afd_lz4share *s = NULL;
	af_error err;
	af_error_clear(&err);
	if (rc == 0)
		rc = afd_lz4share_get(r->c, sf, &sf->arr.a, fd, &s, &err);
	if (rc < 0 && err.status != AF_OK)
		rc = member_changed(r, i, "no longer decodes");
	close(fd);
	afd_src_put(sf);
	if (rc < 0)
		return rc;
	unsigned k = r->knext;
	r->knext = (k + 1) % AFD_STACK_KEPT;
	afd_lz4share_put(r->klz4[k]);
	r->klz4[k] = s;
	r->kept[k] = i;
	return (int)k;
}

/* An LZ4 .ra member: its decoded bytes through its shared index. */
static ssize_t read_decoded_file(struct afd_stackread *r, uint64_t i,
				 void *buf, size_t len, uint64_t off)
{
	pthread_mutex_lock(&r->klock);
	unsigned k = kept_slot(r, i);
	ssize_t rc = k < AFD_STACK_KEPT && r->klz4[k] ? (ssize_t)k
						      : keep_lz4(r, i);
	if (rc >= 0) {
		struct afd_lz4share *s = r->klz4[rc];
		af_error err;
		uint64_t size = af_lz4_index_size(s->ix);
		if (off > size)
			off = size;
		if (len > size - off)
			len = (size_t)(size - off);
		if (len && af_lz4_index_read(s->ix, buf, len, off, &err) != AF_OK)
			rc = member_changed(r, i, "no longer decodes");
		else
			rc = (ssize_t)len;
		if (rc >= 0 && check_member(r, i, s->fd) < 0)
			rc = -EIO;
	}
	pthread_mutex_unlock(&r->klock);
	return rc;
}

/* Make member @p i one that @p r keeps open (a reference of its own on
 * the archive's shared member), closing the one kept longest. */
static void keep_member(struct afd_stackread *r, uint64_t i)
{
	struct afd_src *sf = r->stk->sf;
	uint64_t drop = UINT64_MAX;
	pthread_mutex_lock(&r->klock);
	if (kept_slot(r, i) == AFD_STACK_KEPT) {
		const af_source *src;
		af_error why;
		if (afd_src_member_open(r->c, sf, (size_t)r->stk->m[i].ident,
					&src, &why) == 0) {
			unsigned k = r->knext;
			r->knext = (k + 1) % AFD_STACK_KEPT;
			drop = r->kept[k];
			r->kept[k] = i;
		}
	}
	pthread_mutex_unlock(&r->klock);
	if (drop != UINT64_MAX)
		afd_src_member_close(sf, (size_t)r->stk->m[drop].ident);
}

/* A deflated npz member: its uncompressed bytes from its data offset. */
static ssize_t read_decoded_member(struct afd_stackread *r, uint64_t i,
				   void *buf, size_t len, uint64_t off)
{
	const struct afd_stack_member *mb = &r->stk->m[i];
	struct afd_src *sf = r->stk->sf;
	const af_source *src;
	af_error why;
	if (afd_src_member_open(r->c, sf, (size_t)mb->ident, &src, &why) < 0)
		return member_changed(r, i, "no longer opens");
	ssize_t got = -EIO;
	if (mb->data_off <= src->size)
		got = src->pread(src, buf, len, mb->data_off + off);
	keep_member(r, i);
	afd_src_member_close(sf, (size_t)mb->ident);
	if (got >= 0 && check_archive(r, i) < 0)
		got = -EIO;
	return got;
}

static ssize_t read_member(void *arg, uint64_t i, void *buf, size_t len,
			   uint64_t off)
{
	struct afd_stackread *r = arg;
	const struct afd_stack_member *mb = &r->stk->m[i];
	if (mb->flags & AFD_SM_DECODE)
		return r->stk->sf ? read_decoded_member(r, i, buf, len, off) :
				    read_decoded_file(r, i, buf, len, off);
	uint64_t pos;
	int tag;
	read_ahead(r, i);
	int fd = r->stk->sf ? r->stk->sf->fd : fd_get(r, i, &tag);
	if (r->stk->sf)
		tag = TAG_ARCHIVE;
	if (fd < 0)
		return fd;
	pos = mb->data_off + off;
	ssize_t got = pread_full(fd, buf, len, pos);
	/* after the read: an identity unchanged since the scan means the
	 * bytes are the listed version's (see stackread.h) */
	int rc = afd_stackread_fd_put(r, i, fd, tag);
	if (got >= 0 && (size_t)got < len)
		rc = member_changed(r, i, "ends early");
	return rc < 0 ? rc : got;
}

size_t afd_stackread_cost(const struct afd_stack *stk)
{
	if (stk->sf || !stk->lz4_files)
		return 0;
	uint64_t b = af_lz4_index_bound(stk->member_bytes);
	return b < SIZE_MAX / AFD_STACK_KEPT ? (size_t)b * AFD_STACK_KEPT
					     : SIZE_MAX;
}

struct afd_stackread *afd_stackread_open(struct afd_ctx *c,
					 struct afd_stack *stk)
{
	struct afd_stackread *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->c = c;
	r->stk = stk;
	r->last = UINT64_MAX;  /* member 0 is "in order" */
	for (unsigned k = 0; k < AFD_STACK_KEPT; k++)
		r->kept[k] = UINT64_MAX;
	pthread_mutex_init(&r->klock, NULL);
	afd_stack_hold(stk);
	r->r = (af_stack_reader){ .read = read_member, .arg = r, .n = stk->n,
				  .member_bytes = stk->member_bytes };
	af_stack_source_init(&r->src, &r->r);
	return r;
}

void afd_stackread_close(struct afd_stackread *r)
{
	if (!r)
		return;
	for (unsigned k = 0; k < AFD_STACK_KEPT; k++) {
		if (r->kept[k] != UINT64_MAX && r->stk->sf)
			afd_src_member_close(r->stk->sf,
					     (size_t)r->stk->m[r->kept[k]].ident);
		afd_lz4share_put(r->klz4[k]);
	}
	pthread_mutex_destroy(&r->klock);
	afd_stack_put(r->stk);
	free(r);
}
