/* SPDX-License-Identifier: MIT */
/* The source cache: parsed .npy/.ra/.npz state per file version, bounded LRU
 * (an npz's members: srcmember.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spinlock.h"
#include "ctx.h"
#include "hash.h"
#include "sidecar_files.h"
#include "srcfile.h"

#define AFD_SRC_BUCKETS 8192u

void afd_ident_of(struct afd_ident *id, const struct stat *st)
{
	memset(id, 0, sizeof(*id));
	id->dev = st->st_dev;
	id->ino = st->st_ino;
	id->size = st->st_size;
	id->mtim = st->st_mtim;
	id->ctim = st->st_ctim;
}

bool afd_ident_eq(const struct afd_ident *a, const struct afd_ident *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtim.tv_sec == b->mtim.tv_sec &&
	       a->mtim.tv_nsec == b->mtim.tv_nsec &&
	       a->ctim.tv_sec == b->ctim.tv_sec &&
	       a->ctim.tv_nsec == b->ctim.tv_nsec;
}

uint64_t afd_ident_key(const char *path, const struct afd_ident *id)
{
	uint64_t v[7] = { (uint64_t)id->dev, (uint64_t)id->ino,
			  (uint64_t)id->size, (uint64_t)id->mtim.tv_sec,
			  (uint64_t)id->mtim.tv_nsec, (uint64_t)id->ctim.tv_sec,
			  (uint64_t)id->ctim.tv_nsec };
	uint64_t h = afd_hash_str(AFD_FNV_SEED, path);
	h = afd_hash_mix(afd_hash_bytes(h, v, sizeof(v)));
	return h ? h : 1;
}

static size_t bucket_of(const char *path)
{
	return afd_hash_mix(afd_hash_str(AFD_FNV_SEED, path)) &
	       (AFD_SRC_BUCKETS - 1);
}

int afd_srcs_init(struct afd_srcs *s)
{
	memset(s, 0, sizeof(*s));
	s->nbuckets = AFD_SRC_BUCKETS;
	s->tab = calloc(s->nbuckets, sizeof(*s->tab));
	if (!s->tab)
		return -ENOMEM;
	s->lru.lru_next = s->lru.lru_prev = &s->lru;
	afd_mutex_init_spin(&s->lock);
	return 0;
}

static void arrinfo_free(struct afd_arrinfo *ai)
{
	af_array_free(&ai->a);
}

static void src_free(struct afd_src *sf)
{
	if (sf->kind == SK_ARRAY)
		arrinfo_free(&sf->arr);
	if (sf->minfo) {
		size_t n = af_zip_count(sf->zip);
		for (size_t i = 0; i < n; i++) {
			struct afd_minfo *mi = sf->minfo[i];
			if (!mi)
				continue;
			if (mi->m)
				af_member_close(mi->m);
			arrinfo_free(&mi->arr);
			free(mi);
		}
		free(sf->minfo);
	}
	afd_npz_tree_free(&sf->tree);
	if (sf->zip)
		af_zip_close(sf->zip);
	if (sf->fd >= 0)
		close(sf->fd);
	pthread_mutex_destroy(&sf->mlock);
	free(sf->path);
	free(sf);
}

void afd_src_put(struct afd_src *sf)
{
	if (sf && __atomic_sub_fetch(&sf->refs, 1, __ATOMIC_ACQ_REL) == 0)
		src_free(sf);
}

static void lru_unlink(struct afd_src *sf)
{
	sf->lru_prev->lru_next = sf->lru_next;
	sf->lru_next->lru_prev = sf->lru_prev;
}

static void lru_push_front(struct afd_srcs *s, struct afd_src *sf)
{
	sf->lru_next = s->lru.lru_next;
	sf->lru_prev = &s->lru;
	s->lru.lru_next->lru_prev = sf;
	s->lru.lru_next = sf;
}

/* Unlink from the cache (lock held); the caller puts the cache's ref. */
static void uncache(struct afd_srcs *s, struct afd_src *sf)
{
	struct afd_src **pp = &s->tab[bucket_of(sf->path)];
	while (*pp && *pp != sf)
		pp = &(*pp)->h_next;
	if (*pp)
		*pp = sf->h_next;
	lru_unlink(sf);
	sf->cached = false;
	s->count--;
	if (sf->kind == SK_NPZ)
		s->nzip--;
}

void afd_srcs_destroy(struct afd_srcs *s)
{
	while (s->lru.lru_next != &s->lru) {
		struct afd_src *sf = s->lru.lru_next;
		uncache(s, sf);
		afd_src_put(sf);
	}
	free(s->tab);
	pthread_mutex_destroy(&s->lock);
}

static struct afd_src *find_locked(struct afd_srcs *s, const char *path)
{
	for (struct afd_src *sf = s->tab[bucket_of(path)]; sf; sf = sf->h_next)
		if (strcmp(sf->path, path) == 0)
			return sf;
	return NULL;
}

af_view_kind afd_entry_view(enum afd_entry e)
{
	return e == AE_NPY ? AF_VIEW_NPY : e == AE_RA ? AF_VIEW_RA : AF_VIEW_DATA;
}

void afd_arrinfo_fill(struct afd_ctx *c, struct afd_arrinfo *ai,
			 const af_source *src)
{
	static const enum afd_entry ve[] = { AE_DATA, AE_NPY, AE_RA };
	/* the codec refuses the views an array cannot have (object arrays:
	 * B.npy only) */
	for (size_t i = 0; i < 3; i++) {
		af_view *v = NULL;
		af_error err;
		af_error_clear(&err);
		if (af_view_open(&v, &ai->a, src, afd_entry_view(ve[i]), &err) == AF_OK) {
			ai->has[ve[i]] = true;
			ai->size[ve[i]] = af_view_size(v);
			af_extent e;
			if (ve[i] == AE_DATA &&
			    af_view_extent(v, 0, &e) == AF_OK &&
			    e.kind == AF_EXTENT_SOURCE && e.len == ai->size[AE_DATA]) {
				ai->data_plain = true;
				ai->data_src_off = e.src_off;
			}
			af_view_close(v);
		}
	}
	af_status (*tf[])(const af_array *, char **, size_t *) = {
		[AE_SHAPE] = af_text_shape, [AE_DTYPE] = af_text_dtype,
		[AE_HEADER] = af_text_header };
	for (int e = AE_SHAPE; e <= AE_HEADER; e++) {
		char *t = NULL;
		size_t len = 0;
		if (tf[e](&ai->a, &t, &len) == AF_OK) {
			ai->has[e] = true;
			ai->size[e] = len;
		}
		free(t);
	}
	afd_sidecar_fill(ai);
	afd_zarr_info_init(ai, c->opts.zarr_chunk);
}

bool afd_arrinfo_has(const struct afd_arrinfo *ai, enum afd_entry e)
{
	return e == AE_ZARR ? afd_zarr_exists(&ai->zarr) : ai->has[e];
}

void afd_arrsum_of(struct afd_arrsum *out, const struct afd_src *sf)
{
	memset(out, 0, sizeof(*out));
	out->id = sf->id;
	out->key = sf->key;
	for (int e = 0; e < AE_COUNT; e++) {
		if (sf->arr.has[e])
			out->has |= 1u << e;
		out->size[e] = sf->arr.size[e];
	}
	out->data_plain = sf->arr.data_plain;
	out->data_src_off = sf->arr.data_src_off;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* Parse version @p st of @p path from @p fd into a new afd_src. */
static struct afd_src *parse(struct afd_ctx *c, const char *path, int fd,
			     const struct stat *st, uint64_t born)
{
	struct afd_src *sf = calloc(1, sizeof(*sf));
	if (!sf)
		return NULL;
	sf->path = strdup(path);
	if (!sf->path) {
		free(sf);
		return NULL;
	}
	sf->refs = 1;
	sf->fd = -1;
	sf->st = *st;
	afd_ident_of(&sf->id, st);
	sf->key = afd_ident_key(path, &sf->id);
	sf->born = born;
	pthread_mutex_init(&sf->mlock, NULL);
	/* with -d: how often sources are parsed (test_readdirplus counts) */
	afd_log(&c->log, AFD_LOG_DEBUG, "parsing %s", path);

	af_error err;
	af_error_clear(&err);
	const char *name = base_name(path);
	af_source src;
	af_source_init_fd(&src, fd, 0, (uint64_t)st->st_size);
	sf->kind = SK_PLAIN;
	if (af_array_name_kind(name, false) == AF_NAME_NPZ) {
		/* the archive keeps its own fd: the caller's is closed at release */
		int zfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
		if (zfd < 0) {
			af_error_set(&err, AF_E_IO, AF_NO_OFFSET, "%s",
				     strerror(errno));
			goto broken;
		}
		af_source_init_fd(&sf->zsrc, zfd, 0, (uint64_t)st->st_size);
		if (af_zip_open(&sf->zip, &sf->zsrc, &err) != AF_OK) {
			close(zfd);
			sf->zip = NULL;
			goto broken;
		}
		sf->fd = zfd;
		size_t n = af_zip_count(sf->zip), skipped = 0;
		if (afd_npz_tree_build(&sf->tree, sf->zip, &skipped) < 0 ||
		    !(sf->minfo = calloc(n ? n : 1, sizeof(*sf->minfo)))) {
			af_zip_close(sf->zip);
			sf->zip = NULL;
			close(zfd);
			sf->fd = -1;
			afd_npz_tree_free(&sf->tree);
			af_error_set(&err, AF_E_NOMEM, AF_NO_OFFSET, "out of memory");
			goto broken;
		}
		/* once per archive version, however often it is re-read */
		for (size_t i = 0; i < af_zip_warning_count(sf->zip); i++) {
			struct afd_logkey k = { AFD_LINE_ZIP_WARNING, sf->key, i };
			afd_log_once(&c->log, &k, AFD_LOG_WARN, "%s: %s", path,
				     af_zip_warning(sf->zip, i));
		}
		struct afd_logkey long_names = { AFD_LINE_ZIP_LONG_NAMES, sf->key, 0 };
		if (skipped)
			afd_log_once(&c->log, &long_names,
				     AFD_LOG_WARN, "%s: %zu member(s) left out: "
				     "a name part is longer than 255 bytes", path,
				     skipped);
		sf->kind = SK_NPZ;
		return sf;
	}
	/* the header from one pread (a .npy asks for its preamble, then the
	 * rest); a failed pread is met again, and said, by the fd source */
	unsigned char head_buf[AF_HEAD_BYTES];
	af_head head = { .buf = head_buf, .cap = sizeof(head_buf) };
	const af_source *hsrc = af_head_read_fd(&head, fd, (uint64_t)st->st_size) == 0 ?
				&head.src : &src;
	if (af_array_parse_named(name, hsrc, &sf->arr.a, &err) != AF_OK)
		goto broken;
	struct afd_logkey flags = { AFD_LINE_RA_FLAGS, sf->key, 0 };
	if (sf->arr.a.ra_unknown_flags)
		afd_log_once(&c->log, &flags, AFD_LOG_WARN,
			"%s: unknown RawArray flag bits 0x%llx ignored", path,
			(unsigned long long)sf->arr.a.ra_unknown_flags);
	sf->arr.offset = sf->arr.a.data_offset;
	afd_arrinfo_fill(c, &sf->arr, &src);
	sf->kind = SK_ARRAY;
	return sf;
broken:
	afd_log_broken(&c->log,
		       &(struct afd_logkey){ AFD_LINE_UNPARSED, sf->key, 0 },
		       path, &err);
	return sf;
}

/* Open source file @p path; a symlink is not one (-EINVAL), nor our mount. */
static int open_source(struct afd_ctx *c, const char *path)
{
	int fd = afd_srcpath_open(&c->root, path, O_RDONLY | O_NONBLOCK);
	if (fd == -ELOOP)
		return -EINVAL;
	return fd == -EXDEV ? -ENOENT : fd;
}

/*
 * The version of @p path to look for: with @p fd, the file is opened
 * (*fd, the caller closes it) and the version is that fd's; else @p known,
 * or an lstat. Returns 0, -EINVAL when it is not a regular file, or -errno.
 */
static int stat_source(struct afd_ctx *c, const char *path,
		       const struct stat *known, int *fd, struct stat *st)
{
	if (fd) {
		*fd = open_source(c, path);
		if (*fd < 0)
			return *fd;
		if (fstat(*fd, st) < 0) {
			int e = errno;
			close(*fd);
			*fd = -1;
			return -e;
		}
	} else if (known) {
		*st = *known;
	} else {
		int rc = afd_srcpath_stat(&c->root, path, st);
		if (rc < 0)
			return rc == -EXDEV ? -ENOENT : rc;
	}
	if (!S_ISREG(st->st_mode)) {
		if (fd) {
			close(*fd);
			*fd = -1;
		}
		return -EINVAL;
	}
	/* O_NONBLOCK only kept open() off fifos: it means nothing to the
	 * regular file it is now known to be */
	return 0;
}

/*
 * Open @p path to parse it, for a caller that had only stat'ed it: *fd
 * and *st are then of the version opened. Returns 0, -EAGAIN when it is
 * no longer a regular file, or -errno.
 */
static int open_to_parse(struct afd_ctx *c, const char *path, int *fd,
			 struct stat *st)
{
	*fd = open_source(c, path);
	if (*fd < 0)
		return *fd;
	if (fstat(*fd, st) < 0 || !S_ISREG(st->st_mode)) {
		close(*fd);
		*fd = -1;
		return -EAGAIN;
	}
	return 0;
}

/* The cached parse of exactly version @p id of @p path, referenced and
 * made the most recently used, or NULL. */
static struct afd_src *cache_find(struct afd_srcs *s, const char *path,
				  const struct afd_ident *id)
{
	pthread_mutex_lock(&s->lock);
	struct afd_src *sf = find_locked(s, path);
	if (sf && afd_ident_eq(&sf->id, id)) {
		__atomic_add_fetch(&sf->refs, 1, __ATOMIC_RELAXED);
		lru_unlink(sf);
		lru_push_front(s, sf);
	} else {
		sf = NULL;
	}
	pthread_mutex_unlock(&s->lock);
	return sf;
}

/*
 * Uncache the least recently used sources beyond @p lim, never @p keep
 * (lock held): beyond src_max any of them, beyond src_max_zip archives
 * only. Returns them linked through h_next; the caller puts each.
 */
static struct afd_src *evict_locked(struct afd_srcs *s,
				    const struct afd_limits *lim,
				    const struct afd_src *keep)
{
	struct afd_src *victims = NULL;
	for (struct afd_src *v = s->lru.lru_prev; v != &s->lru &&
	     (s->count > lim->src_max || s->nzip > lim->src_max_zip);) {
		struct afd_src *prev = v->lru_prev;
		if (v != keep && (s->count > lim->src_max || v->kind == SK_NPZ)) {
			uncache(s, v);
			v->h_next = victims;
			victims = v;
		}
		v = prev;
	}
	return victims;
}

/* Put each of @p victims (linked through h_next), the lock dropped. */
static void put_victims(struct afd_src *victims)
{
	while (victims) {
		struct afd_src *next = victims->h_next;
		afd_src_put(victims);
		victims = next;
	}
}

/*
 * Publish @p fresh (one reference, the caller's) as the cached version of
 * its path: it replaces an older version, whose nodes the notifier is
 * told about (afd_srcs.replaced), and the least recently used beyond the
 * limits go. Returns the entry to use, referenced: @p fresh, or the same
 * version another thread published first (then @p fresh is put).
 */
static struct afd_src *publish(struct afd_ctx *c, struct afd_src *fresh)
{
	struct afd_srcs *s = &c->srcs;
	pthread_mutex_lock(&s->lock);
	struct afd_src *old = find_locked(s, fresh->path);
	if (old && afd_ident_eq(&old->id, &fresh->id)) {
		__atomic_add_fetch(&old->refs, 1, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&s->lock);
		afd_src_put(fresh);
		return old;
	}
	if (old)
		uncache(s, old);
	fresh->cached = true;
	fresh->refs++;  /* the cache's reference */
	size_t b = bucket_of(fresh->path);
	fresh->h_next = s->tab[b];
	s->tab[b] = fresh;
	lru_push_front(s, fresh);
	s->count++;
	if (fresh->kind == SK_NPZ)
		s->nzip++;
	struct afd_src *victims = evict_locked(s, &c->opts.limits, fresh);
	pthread_mutex_unlock(&s->lock);
	put_victims(victims);
	if (old) {
		afd_src_put(old);
		if (s->replaced)
			s->replaced(c, fresh->path);
	}
	return fresh;
}

/*
 * The cached parse of version @p st of @p path, or a new one: parsed from
 * *fd (of that version), or from a file opened here when *fd < 0 (*fd and
 * *st are then of the version opened). The caller closes *fd. @p now:
 * the parse clock read before @p st was taken.
 */
static int get_version(struct afd_ctx *c, const char *path, uint64_t now,
		       struct stat *st, int *fd, struct afd_src **out)
{
	struct afd_ident id;
	afd_ident_of(&id, st);
	struct afd_src *sf = cache_find(&c->srcs, path, &id);
	if (!sf) {
		int rc;
		if (*fd < 0 && (rc = open_to_parse(c, path, fd, st)) < 0)
			return rc;
		sf = parse(c, path, *fd, st, now);
		if (!sf)
			return -ENOMEM;
		sf = publish(c, sf);
	}
	*out = sf;
	return 0;
}

/* The parse clock, read before a source is stat'ed or opened. */
static uint64_t clock_now(struct afd_srcs *s)
{
	return __atomic_load_n(&s->clock, __ATOMIC_SEQ_CST);
}

uint64_t afd_src_tick(struct afd_ctx *c)
{
	return __atomic_add_fetch(&c->srcs.clock, 1, __ATOMIC_SEQ_CST);
}

int afd_src_get(struct afd_ctx *c, const char *path, const struct stat *known,
		int *fd_out, struct afd_src **out)
{
	*out = NULL;
	if (af_array_name_kind(path, false) == AF_NAME_NONE)
		return -EINVAL;
	/* a stat the caller took (@p known) may be older than any tick:
	 * such a parse is never taken as fresh (born 0) */
	uint64_t now = known ? 0 : clock_now(&c->srcs);
	struct stat st;
	int fd = -1;
	int rc = stat_source(c, path, known, fd_out ? &fd : NULL, &st);
	if (rc < 0)
		return rc;
	rc = get_version(c, path, now, &st, &fd, out);
	if (rc == 0 && fd_out)
		*fd_out = fd;
	else if (fd >= 0)
		close(fd);
	return rc;
}

bool afd_src_get_fresh(struct afd_ctx *c, const char *path, uint64_t since,
		       struct stat *st, struct afd_src **out)
{
	struct afd_srcs *s = &c->srcs;
	*out = NULL;
	pthread_mutex_lock(&s->lock);
	struct afd_src *sf = find_locked(s, path);
	if (sf && since && sf->born >= since) {
		__atomic_add_fetch(&sf->refs, 1, __ATOMIC_RELAXED);
		lru_unlink(sf);
		lru_push_front(s, sf);
		*st = sf->st;
		*out = sf;
	}
	pthread_mutex_unlock(&s->lock);
	return *out != NULL;
}

int afd_src_get_opening(struct afd_ctx *c, const char *path, struct stat *st,
			struct afd_src **out)
{
	*out = NULL;
	if (af_array_name_kind(path, false) == AF_NAME_NONE)
		return -EINVAL;
	uint64_t now = clock_now(&c->srcs);
	int fd = -1;
	/* a parse of it is cached (a listing's parse-ahead made one): an
	 * O_PATH stat says whether it is still that version, and the full
	 * open and close, which cost twice as much, come only for a new one */
	bool parsed = afd_src_is_cached(c, path);
	int rc = stat_source(c, path, NULL, parsed ? NULL : &fd, st);
	if (rc < 0)
		return rc;
	rc = get_version(c, path, now, st, &fd, out);
	if (fd >= 0)
		close(fd);
	return rc;
}

bool afd_src_is_cached(struct afd_ctx *c, const char *path)
{
	struct afd_srcs *s = &c->srcs;
	pthread_mutex_lock(&s->lock);
	bool cached = find_locked(s, path) != NULL;
	pthread_mutex_unlock(&s->lock);
	return cached;
}

void afd_src_drop(struct afd_ctx *c, const char *path)
{
	struct afd_srcs *s = &c->srcs;
	pthread_mutex_lock(&s->lock);
	struct afd_src *sf = find_locked(s, path);
	if (sf)
		uncache(s, sf);
	pthread_mutex_unlock(&s->lock);
	afd_src_put(sf);
}

void afd_srcs_shed(struct afd_srcs *s, size_t keep)
{
	struct afd_src *victims = NULL;
	pthread_mutex_lock(&s->lock);
	while (s->count > keep) {
		struct afd_src *v = s->lru.lru_prev;
		uncache(s, v);
		v->h_next = victims;
		victims = v;
	}
	pthread_mutex_unlock(&s->lock);
	put_victims(victims);
}
