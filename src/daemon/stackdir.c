/* SPDX-License-Identifier: MIT */
/* `.stack/`: listing a folder's members, reading their headers once, the
 * compact member table and the verdicts kept per folder. */
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
#include "stackdir.h"
#include "tree.h"

int afd_stacks_init(struct afd_stacks *s)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	afd_mfds_init(&s->mfds);
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
	for (size_t k = 0; k < AFD_STACK_CACHED; k++) {
		afd_stack_put(s->slot[k].stk);
		slot_clear(&s->slot[k]);
	}
	afd_mfds_destroy(&s->mfds);
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
	afd_mfds_forget(s->mfds, s);
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

/* ---- listing ---- */

/* Names while listing: NUL-terminated in one arena, offsets beside. */
struct namelist {
	char *arena;
	size_t len, cap;
	uint32_t *off;
	size_t n, ncap;
	long *midx;          /* npz: each name's member index */
};

static int namelist_add(struct namelist *l, const char *name, long midx)
{
	size_t k = strlen(name) + 1;
	if (l->len + k > UINT32_MAX)
		return -EFBIG;
	if (l->len + k > l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 4096;
		while (cap < l->len + k)
			cap *= 2;
		char *a = realloc(l->arena, cap);
		if (!a)
			return -ENOMEM;
		l->arena = a;
		l->cap = cap;
	}
	if (l->n == l->ncap) {
		size_t cap = l->ncap ? l->ncap * 2 : 256;
		uint32_t *o = realloc(l->off, cap * sizeof(*o));
		if (!o)
			return -ENOMEM;
		l->off = o;
		long *m = realloc(l->midx, cap * sizeof(*m));
		if (!m)
			return -ENOMEM;
		l->midx = m;
		l->ncap = cap;
	}
	memcpy(l->arena + l->len, name, k);
	l->off[l->n] = (uint32_t)l->len;
	l->midx[l->n] = midx;
	l->n++;
	l->len += k;
	return 0;
}

static void namelist_free(struct namelist *l)
{
	free(l->arena);
	free(l->off);
	free(l->midx);
}

struct sort_item {
	uint32_t off;
	long midx;
};

static int by_natural_name(const void *a, const void *b, void *arena)
{
	const struct sort_item *x = a, *y = b;
	return af_name_natural_cmp((const char *)arena + x->off,
				   (const char *)arena + y->off);
}

/* A scan in progress: the members in order and what is learnt of them. */
struct scan {
	struct afd_ctx *c;
	struct afd_stack *s;
	struct sort_item *items;
	const char *arena;
	int dirfd;
	struct timespec mtim, ctim;   /* the newest member's */
};

/* ---- reading headers ---- */

static void newest(struct timespec *t, const struct timespec *x)
{
	if (x->tv_sec > t->tv_sec ||
	    (x->tv_sec == t->tv_sec && x->tv_nsec > t->tv_nsec))
		*t = *x;
}

static af_status parse_file(void *arg, uint64_t i, af_array *out, af_error *why)
{
	struct scan *sc = arg;
	const char *name = sc->arena + sc->items[i].off;
	int fd = afd_srcpath_open_in(&sc->c->root, sc->dirfd, name,
				     O_RDONLY | O_NONBLOCK);
	if (fd < 0)
		return af_error_set(why, AF_E_IO, AF_NO_OFFSET,
				    "cannot open: %s", strerror(-fd));
	struct stat st;
	af_status rc;
	if (fstat(fd, &st) < 0) {
		rc = af_error_set(why, AF_E_IO, AF_NO_OFFSET, "%s", strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = af_error_set(why, AF_E_UNSUPPORTED, AF_NO_OFFSET,
				  "not a regular file");
		goto out;
	}
	af_source src;
	af_source_init_fd(&src, fd, 0, (uint64_t)st.st_size);
	rc = af_array_parse_named(name, &src, out, why);
	if (rc != AF_OK)
		goto out;
	struct afd_stack_member *m = &sc->s->m[i];
	uint64_t end;
	m->flags = out->compression != AF_COMP_NONE ? AFD_SM_DECODE : 0;
	if (!m->flags && (__builtin_add_overflow(out->data_offset,
						 out->data_size, &end) ||
			  end > (uint64_t)st.st_size)) {
		af_array_free(out);
		rc = af_error_set(why, AF_E_TRUNCATED, (uint64_t)st.st_size,
				  "the file ends before its data does");
		goto out;
	}
	struct afd_ident id;
	afd_ident_of(&id, &st);
	m->ident = afd_ident_key(NULL, &id);
	m->data_off = out->data_offset;
	newest(&sc->mtim, &st.st_mtim);
	newest(&sc->ctim, &st.st_ctim);
out:
	close(fd);
	return rc;
}

static af_status parse_member(void *arg, uint64_t i, af_array *out,
			      af_error *why)
{
	struct scan *sc = arg;
	const struct afd_src *sf = sc->s->sf;
	long midx = sc->items[i].midx;
	af_member *mm = NULL;
	af_status rc = af_member_open(&mm, sf->zip, (size_t)midx, why);
	if (rc == AF_OK)
		rc = af_npy_parse(af_member_source(mm), out, why);
	if (rc == AF_OK) {
		const af_source *src = af_member_source(mm);
		struct afd_stack_member *m = &sc->s->m[i];
		m->ident = (uint64_t)midx;
		m->data_off = out->data_offset;
		m->flags = AFD_SM_DECODE;
		uint64_t end;
		if (__builtin_add_overflow(out->data_offset, out->data_size,
					   &end) || end > src->size) {
			af_array_free(out);
			rc = af_error_set(why, AF_E_TRUNCATED, src->size,
					  "the member ends before its data does");
		} else if (src->fd >= 0 && src->fd == sf->fd) {
			/* stored: a range of the archive, read (or spliced)
			 * straight from its fd */
			m->data_off = src->fd_base + out->data_offset;
			m->flags = 0;
		}
	}
	af_member_close(mm);
	return rc;
}

/* The folder's member names (regular files the codec calls members). */
static int list_folder(struct afd_ctx *c, int dirfd, struct namelist *l)
{
	int dfd = dup(dirfd);
	if (dfd < 0)
		return -errno;
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return -errno;
	}
	int rc = 0;
	struct dirent *e;
	while (rc == 0 && (e = readdir(d))) {
		if (!af_stack_member_name(e->d_name, false))
			continue;
		if (e->d_type == DT_UNKNOWN) {
			/* never fstatat: the name may be our own mount */
			int fd = afd_srcpath_open_in(&c->root, dirfd, e->d_name,
						     O_PATH);
			struct stat st;
			bool reg = fd >= 0 && fstat(fd, &st) == 0 &&
				   S_ISREG(st.st_mode);
			if (fd >= 0)
				close(fd);
			if (!reg)
				continue;
		} else if (e->d_type != DT_REG) {
			continue;
		}
		rc = namelist_add(l, e->d_name, -1);
	}
	closedir(d);
	return rc;
}

static int list_npz(const struct afd_src *sf, const char *prefix,
		    struct namelist *l)
{
	long zd = afd_ztree_dir(&sf->tree, prefix, strlen(prefix));
	if (zd < 0)
		return -ENOENT;
	const struct afd_zdir *z = &sf->tree.dirs[zd];
	int rc = 0;
	for (size_t k = 0; rc == 0 && k < z->nkids; k++) {
		const struct afd_zchild *ch = &z->kids[k];
		if (ch->member >= 0 && af_stack_member_name(ch->name, true) &&
		    !afd_src_member_hidden((struct afd_src *)sf, (size_t)ch->member))
			rc = namelist_add(l, ch->name, ch->member);
	}
	return rc;
}

/* The names file in natural order, and each member's place in it. */
static int order_names(struct scan *sc, const struct namelist *l)
{
	struct afd_stack *s = sc->s;
	sc->items = malloc((l->n ? l->n : 1) * sizeof(*sc->items));
	s->m = calloc(l->n ? l->n : 1, sizeof(*s->m));
	s->names = malloc(l->len ? l->len : 1);
	if (!sc->items || !s->m || !s->names)
		return -ENOMEM;
	for (size_t i = 0; i < l->n; i++)
		sc->items[i] = (struct sort_item){ l->off[i], l->midx[i] };
	qsort_r(sc->items, l->n, sizeof(*sc->items), by_natural_name, l->arena);
	size_t at = 0;
	for (size_t i = 0; i < l->n; i++) {
		const char *name = l->arena + sc->items[i].off;
		size_t k = strlen(name);
		memcpy(s->names + at, name, k);
		s->names[at + k] = '\n';
		s->m[i].name_off = (uint32_t)at;
		at += k + 1;
	}
	s->names_len = at;
	s->n = l->n;
	sc->arena = l->arena;
	return 0;
}

static ssize_t read_nothing(void *arg, uint64_t i, void *buf, size_t len,
			    uint64_t off)
{
	(void)arg; (void)i; (void)buf; (void)len; (void)off;
	return -EIO;
}

/* The stacked array's directory, its version and its attributes. */
static int describe(struct scan *sc, const af_array *stacked)
{
	struct afd_stack *s = sc->s;
	s->arr.a = *stacked;
	s->member_bytes = stacked->data_size / s->n;
	s->sizes = (af_stack_reader){ .read = read_nothing, .n = s->n,
				      .member_bytes = s->member_bytes };
	af_source src;
	af_stack_source_init(&src, &s->sizes);
	afd_arrinfo_fill(sc->c, &s->arr, &src);
	s->arr.has[AE_NAMES] = true;
	s->arr.size[AE_NAMES] = s->names_len;
	uint64_t h = afd_hash_str(afd_hash_str(AFD_FNV_SEED, s->dir), s->prefix);
	if (s->sf)
		h = afd_hash_bytes(h, &s->sf->key, sizeof(s->sf->key));
	h = afd_hash_bytes(h, s->m, s->n * sizeof(*s->m));
	h = afd_hash_bytes(h, s->names, s->names_len);
	s->key = afd_hash_mix(h) | 1;
	/* its files are as readable as the folder, and as new as the newest
	 * member (a member rewritten in place moves no folder time) */
	s->st.st_mode = (s->st.st_mode & 0444) | S_IFREG;
	newest(&s->st.st_mtim, &sc->mtim);
	newest(&s->st.st_ctim, &sc->ctim);
	return 0;
}

/* Where the log line of a refused stack points: "dir/.stack". */
static void log_refused(struct afd_ctx *c, const struct afd_stack *s,
			uint64_t version, const char *member, const af_error *why)
{
	struct afd_logkey k = { AFD_LINE_STACK, version, 0 };
	afd_log_once(&c->log, &k, AFD_LOG_INFO, "no %s/%s%s: %s%s%s",
		     s->dir, s->prefix ? s->prefix : "", AFD_STACK_NAME, member ? member : "", member ? ": " : "",
		     why->msg);
}

/*
 * Scan the folder (or npz folder) of @p s, whose dir, prefix, dirfd or sf
 * and st are set. Returns 0 (a stack), -ENOENT (none, logged once with
 * @p version) or -errno.
 */
static int scan(struct afd_ctx *c, struct afd_stack *s, uint64_t version)
{
	struct namelist l = { 0 };
	struct scan sc = { .c = c, .s = s, .dirfd = s->dirfd };
	int rc = s->sf ? list_npz(s->sf, s->prefix, &l) :
			 list_folder(c, s->dirfd, &l);
	if (rc == 0)
		rc = order_names(&sc, &l);
	if (rc < 0)
		goto out;
	af_error why;
	af_error_clear(&why);
	af_array stacked;
	uint64_t culprit;
	af_status st = af_stack_scan(s->n, s->sf ? parse_member : parse_file,
				     &sc, &stacked, &culprit, &why);
	if (st == AF_E_NOMEM) {
		rc = -ENOMEM;
	} else if (st != AF_OK) {
		log_refused(c, s, version, culprit < s->n ?
			    l.arena + sc.items[culprit].off : NULL, &why);
		rc = -ENOENT;
	} else {
		rc = describe(&sc, &stacked);
	}
out:
	free(sc.items);
	namelist_free(&l);
	return rc;
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
	rc = scan(c, s, afd_ident_key(id->path, &dir_id) ^ src_key);
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
