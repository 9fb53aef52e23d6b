/* SPDX-License-Identifier: MIT */
/* Scanning a folder for its `.stack`: listing the members, natural order,
 * each header read once (the codec's af_stack_scan decides), the member
 * table and the stacked array's directory. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctx.h"
#include "hash.h"
#include "stackdir.h"
#include "srcpath.h"
#include "stackscan.h"

/* ---- listing ---- */

/* A name listed: its place in the arena and (npz) its member index. */
struct sort_item {
	uint32_t off;
	uint32_t midx;       /* npz member (< AF_ZIP_MAX_ENTRIES), else 0 */
};

/* Names while listing: NUL-terminated in one arena, 8 bytes each beside. */
struct namelist {
	char *arena;
	size_t len, cap;
	struct sort_item *items;
	size_t n, ncap;
};

static int namelist_add(struct namelist *l, const char *name, long midx)
{
	size_t k = strlen(name) + 1;
	if (l->len + k > UINT32_MAX || midx > (long)UINT32_MAX)
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
		struct sort_item *it = realloc(l->items, cap * sizeof(*it));
		if (!it)
			return -ENOMEM;
		l->items = it;
		l->ncap = cap;
	}
	memcpy(l->arena + l->len, name, k);
	l->items[l->n++] = (struct sort_item){ (uint32_t)l->len,
					       midx < 0 ? 0 : (uint32_t)midx };
	l->len += k;
	return 0;
}

static void namelist_free(struct namelist *l)
{
	free(l->arena);
	free(l->items);
}

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
	af_readahead *heads;          /* folder members read ahead */
	struct timespec mtim, ctim;   /* the newest member's */
};

/* ---- reading headers ---- */

static void newest(struct timespec *t, const struct timespec *x)
{
	if (x->tv_sec > t->tv_sec ||
	    (x->tv_sec == t->tv_sec && x->tv_nsec > t->tv_nsec))
		*t = *x;
}

static const char *name_at(void *arg, uint64_t i)
{
	const struct scan *sc = arg;
	return sc->arena + sc->items[i].off;
}

/* A member opened by the daemon's rule for source paths: O_NONBLOCK, as
 * a fifo must not hang the scan. */
static int open_member(void *arg, int dirfd, const char *name)
{
	const struct afd_ctx *c = arg;
	return afd_srcpath_open_in(&c->root, dirfd, name, O_RDONLY | O_NONBLOCK);
}

static af_status parse_file(void *arg, uint64_t i, af_array *out, af_error *why)
{
	struct scan *sc = arg;
	af_head *hd = af_readahead_get(sc->heads, i);
	af_status rc;
	if (hd->err < 0) {
		rc = af_error_set(why, AF_E_IO, AF_NO_OFFSET, "cannot read: %s",
				  strerror(-hd->err));
		goto out;
	}
	if (!S_ISREG(hd->st.st_mode)) {
		rc = af_error_set(why, AF_E_UNSUPPORTED, AF_NO_OFFSET,
				  "not a regular file");
		goto out;
	}
	rc = af_array_parse_named(name_at(sc, i), &hd->src, out, why);
	if (rc != AF_OK)
		goto out;
	struct afd_stack_member *m = &sc->s->m[i];
	uint64_t end;
	m->flags = out->compression != AF_COMP_NONE ? AFD_SM_DECODE : 0;
	if (m->flags)
		sc->s->lz4_files = true;  /* the scan parses in order, alone */
	if (!m->flags && (__builtin_add_overflow(out->data_offset,
						 out->data_size, &end) ||
			  end > (uint64_t)hd->st.st_size)) {
		af_array_free(out);
		rc = af_error_set(why, AF_E_TRUNCATED, (uint64_t)hd->st.st_size,
				  "the file ends before its data does");
		goto out;
	}
	struct afd_ident id;
	afd_ident_of(&id, &hd->st);
	m->ident = afd_ident_key(NULL, &id);
	m->data_off = out->data_offset;
	newest(&sc->mtim, &hd->st.st_mtim);
	newest(&sc->ctim, &hd->st.st_ctim);
out:
	af_readahead_put(sc->heads, hd);
	return rc;
}

static af_status parse_member(void *arg, uint64_t i, af_array *out,
			      af_error *why)
{
	struct scan *sc = arg;
	const struct afd_src *sf = sc->s->sf;
	long midx = (long)sc->items[i].midx;
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
	long zd = afd_npz_tree_dir(&sf->tree, prefix, strlen(prefix));
	if (zd < 0)
		return -ENOENT;
	const struct afd_npz_dir *z = &sf->tree.dirs[zd];
	int rc = 0;
	for (size_t k = 0; rc == 0 && k < z->nkids; k++) {
		const struct afd_npz_child *ch = &z->kids[k];
		/* not afd_src_member_hidden: whether a member failed to open
		 * before must not decide; a broken one means none */
		if (ch->member >= 0 &&
		    af_stack_zip_member(af_zip_entry_at(sf->zip,
							(size_t)ch->member)))
			rc = namelist_add(l, ch->name, ch->member);
	}
	return rc;
}

/* The names file in natural order, and each member's place in it. */
static int order_names(struct scan *sc, struct namelist *l)
{
	struct afd_stack *s = sc->s;
	/* an empty folder lists nothing: items is NULL, which qsort_r must
	 * not be given (declared nonnull; UBSan stops there) */
	if (l->n > 1)
		qsort_r(l->items, l->n, sizeof(*l->items), by_natural_name,
			l->arena);
	s->m = calloc(l->n ? l->n : 1, sizeof(*s->m));
	s->names = malloc(l->len ? l->len : 1);
	if (!s->m || !s->names)
		return -ENOMEM;
	size_t at = 0;
	for (size_t i = 0; i < l->n; i++) {
		const char *name = l->arena + l->items[i].off;
		size_t k = strlen(name);
		memcpy(s->names + at, name, k);
		s->names[at + k] = '\n';
		s->m[i].name_off = (uint32_t)at;
		at += k + 1;
	}
	s->names_len = at;
	s->n = l->n;
	sc->items = l->items;
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

static double seconds(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int afd_stack_scan(struct afd_ctx *c, struct afd_stack *s, uint64_t version)
{
	struct namelist l = { 0 };
	struct scan sc = { .c = c, .s = s, .dirfd = s->dirfd };
	double t0 = seconds();
	int rc = s->sf ? list_npz(s->sf, s->prefix, &l) :
			 list_folder(c, s->dirfd, &l);
	double t1 = seconds();
	if (rc == 0)
		rc = order_names(&sc, &l);
	double t2 = seconds();
	if (rc < 0)
		goto out;
	if (!s->sf) {
		af_readahead_opts o = {
			.dfd = s->dirfd, .n = s->n, .name = name_at,
			.name_arg = &sc, .opener = open_member, .open_arg = c,
			.head_bytes = AF_HEAD_BYTES, .window = AFD_STACK_AHEAD_WINDOW,
			.workers = AFD_STACK_AHEAD_WORKERS, .batch = AFD_STACK_AHEAD_BATCH,
			.min_parallel = AFD_STACK_AHEAD_MIN,
		};
		sc.heads = af_readahead_start(&o);
		if (!sc.heads) {
			rc = -ENOMEM;
			goto out;
		}
	}
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
	/* where a slow first lookup spends its time (-d) */
	afd_log(&c->log, AFD_LOG_DEBUG, "%s/%s%s: %zu members listed in %.3f s, "
		"sorted in %.3f s, headers read in %.3f s", s->dir,
		s->prefix ? s->prefix : "", AFD_STACK_NAME, (size_t)s->n, t1 - t0,
		t2 - t1, seconds() - t2);
out:
	af_readahead_stop(sc.heads);
	namelist_free(&l);   /* sc.items and sc.arena are its */
	return rc;
}

