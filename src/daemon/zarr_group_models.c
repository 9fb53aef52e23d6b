/* SPDX-License-Identifier: MIT */
/* `.zarr/`: one folder's entries listed for the codec's group model, the
 * models kept (bounded, fresh), and `.zmetadata` walked from them. */
#include "zarr_group_models.h"

#include <dirent.h>
#include <errno.h>
#include <malloc.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctx.h"
#include "hash.h"
#include "path.h"
#include "stackdir.h"

int afd_zarr_groups_init(struct afd_zarr_groups *z)
{
	memset(z, 0, sizeof(*z));
	z->judged_max = AF_ZARR_CONSOLIDATED_MAX_ARRAYS;
	return pthread_mutex_init(&z->lock, NULL) == 0 ? 0 : -ENOMEM;
}

static void loc_free(struct afd_zarr_group_loc *l)
{
	free(l->path);
	free(l->prefix);
	l->path = l->prefix = NULL;
}

static void folder_free(struct afd_zarr_folder *f)
{
	af_zarr_group_free(&f->g);
	for (size_t i = 0; i < f->n; i++) {
		if (f->srcs)
			afd_src_put(f->srcs[i]);
		if (f->e[i].folder) {
			loc_free(f->e[i].folder);
			free(f->e[i].folder);
		}
	}
	free(f->e);
	free(f->srcs);
	free(f->judged);
	afd_names_free(&f->names);
	afd_src_put(f->npz);
	loc_free(&f->loc);
	free(f);
}

void afd_zarr_folder_put(struct afd_zarr_folder *f)
{
	if (f && __atomic_sub_fetch(&f->refs, 1, __ATOMIC_ACQ_REL) == 0)
		folder_free(f);
}

static void doc_drop_locked(struct afd_zarr_groups *z)
{
	free(z->doc);
	free(z->doc_loc.path);
	free(z->doc_loc.prefix);
	z->doc = z->doc_loc.path = z->doc_loc.prefix = NULL;
	z->doc_len = 0;
}

void afd_zarr_groups_destroy(struct afd_zarr_groups *z)
{
	for (unsigned i = 0; i < AFD_ZARR_GROUP_CACHED; i++)
		afd_zarr_folder_put(z->slot[i]);
	doc_drop_locked(z);
	pthread_mutex_destroy(&z->lock);
}

void afd_zarr_groups_shed(struct afd_zarr_groups *z)
{
	struct afd_zarr_folder *gone[AFD_ZARR_GROUP_CACHED];
	pthread_mutex_lock(&z->lock);
	for (unsigned i = 0; i < AFD_ZARR_GROUP_CACHED; i++) {
		gone[i] = z->slot[i];
		z->slot[i] = NULL;
	}
	doc_drop_locked(z);
	pthread_mutex_unlock(&z->lock);
	for (unsigned i = 0; i < AFD_ZARR_GROUP_CACHED; i++)
		afd_zarr_folder_put(gone[i]);
}

void afd_zarr_group_changed(struct afd_ctx *c)
{
	pthread_mutex_lock(&c->zarr_groups.lock);
	c->zarr_groups.gen++;
	pthread_mutex_unlock(&c->zarr_groups.lock);
}

static bool same_loc(const struct afd_zarr_group_loc *l, const char *path,
		     const char *prefix)
{
	if (strcmp(l->path, path) != 0 || !l->prefix != !prefix)
		return false;
	return !prefix || strcmp(l->prefix, prefix) == 0;
}

/* Room for one more entry of @p f (grown by doubling). */
static int grow(struct afd_zarr_folder *f, size_t *cap)
{
	if (f->n < *cap)
		return 0;
	size_t want = *cap ? *cap * 2 : 16;
	af_zarr_group_entry *e = realloc(f->e, want * sizeof(*e));
	if (e)
		f->e = e;
	struct afd_src **s = f->arrays ? realloc(f->srcs, want * sizeof(*s))
				       : NULL;
	if (s)
		f->srcs = s;
	if (!e || (f->arrays && !s))
		return -ENOMEM;
	*cap = want;
	return 0;
}

/* Append entry @p name of @p kind (deferred: an array whose header is
 * read at lookup); a sub-group at @p sub_path/@p sub_prefix. */
static int add_entry(struct afd_zarr_folder *f, size_t *cap, const char *name,
		     af_zarr_group_kind kind, struct afd_src *sf,
		     const af_array *a, const char *sub_path,
		     const char *sub_prefix)
{
	if (grow(f, cap) < 0) {
		afd_src_put(sf);
		return -ENOMEM;
	}
	size_t i = f->n;
	bool deferred = kind == AF_ZG_ARRAY && !f->arrays && !f->loc.prefix;
	f->e[i] = (af_zarr_group_entry){
		.name = afd_names_add(&f->names, name, strlen(name)),
		.kind = kind, .array = a, .deferred = deferred };
	if (f->srcs)
		f->srcs[i] = sf;
	else
		afd_src_put(sf);
	f->n++;
	if (!f->e[i].name)
		return -ENOMEM;
	if (sub_path) {
		struct afd_zarr_group_loc *l = calloc(1, sizeof(*l));
		f->e[i].folder = l;
		if (!l)
			return -ENOMEM;
		l->path = strdup(sub_path);
		l->prefix = sub_prefix ? strdup(sub_prefix) : NULL;
		if (!l->path || (sub_prefix && !l->prefix))
			return -ENOMEM;
	}
	return 0;
}

/* One name of a mirrored folder: what the mount shows it as. */
static int list_one(struct afd_ctx *c, struct afd_zarr_folder *f, size_t *cap,
		    const char *name, unsigned char dt)
{
	char *child = afd_path_join(f->loc.path, name);
	if (!child)
		return -ENOMEM;
	int rc = 0;
	if (dt == DT_UNKNOWN) {
		struct stat st;
		rc = afd_srcpath_stat(&c->root, child, &st);
		dt = rc < 0 ? DT_UNKNOWN : S_ISDIR(st.st_mode) ? DT_DIR :
		     S_ISREG(st.st_mode) ? DT_REG : DT_LNK;
		rc = 0;
	}
	af_name_kind nk = af_array_name_kind(name, false);
	if (dt == DT_DIR) {
		struct stat st;
		/* our own mountpoint is shown empty: no group of it */
		if (afd_srcpath_stat(&c->root, child, &st) == -EXDEV)
			rc = add_entry(f, cap, name, AF_ZG_OTHER, NULL, NULL,
				       NULL, NULL);
		else
			rc = add_entry(f, cap, name, AF_ZG_FOLDER, NULL, NULL,
				       child, NULL);
	} else if (dt == DT_REG && nk == AF_NAME_NPZ) {
		/* a sub-group where the mount shows a folder: an archive it
		 * could read (else it is a plain file) */
		struct afd_src *sf = NULL;
		int got = afd_src_get(c, child, NULL, NULL, &sf);
		bool npz = got == 0 && sf->kind == SK_NPZ;
		afd_src_put(sf);
		rc = got == -ENOMEM ? got :
		     add_entry(f, cap, name, npz ? AF_ZG_NPZ : AF_ZG_OTHER,
			       NULL, NULL, npz ? child : NULL, npz ? "" : NULL);
	} else if (dt == DT_REG && nk != AF_NAME_NONE && !f->arrays) {
		/* its header is read when its key is looked up */
		rc = add_entry(f, cap, name, AF_ZG_ARRAY, NULL, NULL, NULL, NULL);
	} else if (dt == DT_REG && nk != AF_NAME_NONE) {
		struct afd_src *sf = NULL;
		int got = afd_src_get(c, child, NULL, NULL, &sf);
		if (got == -ENOMEM) {
			rc = got;
		} else if (got < 0 || sf->kind != SK_ARRAY) {
			/* a header the mount could not parse: left out */
			afd_src_put(sf);
			rc = got == -ENOENT ? 0 :
			     add_entry(f, cap, name, AF_ZG_ARRAY, NULL, NULL,
				       NULL, NULL);
		} else {
			rc = add_entry(f, cap, name, AF_ZG_ARRAY, sf,
				       &sf->arr.a, NULL, NULL);
		}
	} else {
		rc = add_entry(f, cap, name, AF_ZG_OTHER, NULL, NULL, NULL,
			       NULL);
	}
	free(child);
	return rc;
}

static int list_folder(struct afd_ctx *c, struct afd_zarr_folder *f, size_t *cap)
{
	int fd = afd_srcpath_open(&c->root, f->loc.path, O_RDONLY | O_DIRECTORY);
	if (fd == -EXDEV || fd == -ENOTDIR)
		return -ENOENT;
	if (fd < 0)
		return fd;
	DIR *dp = fdopendir(fd);
	if (!dp) {
		int rc = -errno;
		close(fd);
		return rc;
	}
	int rc = 0;
	size_t narrays = 0;
	struct dirent *de;
	while (rc == 0 && (errno = 0, de = readdir(dp))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		/* a walk's model holds its headers: never more than a
		 * `.zmetadata` could hold */
		if (f->arrays && af_array_name_kind(de->d_name, false) !=
				 AF_NAME_NONE &&
		    ++narrays > AF_ZARR_CONSOLIDATED_MAX_ARRAYS) {
			rc = -E2BIG;
			break;
		}
		rc = list_one(c, f, cap, de->d_name, de->d_type);
	}
	if (rc == 0 && errno)
		rc = -errno;
	closedir(dp);
	return rc;
}

static int list_npz(struct afd_ctx *c, struct afd_zarr_folder *f, size_t *cap)
{
	int rc = afd_src_get(c, f->loc.path, NULL, NULL, &f->npz);
	if (rc < 0)
		return rc == -EINVAL ? -ENOENT : rc;
	if (f->npz->kind != SK_NPZ)
		return -ENOENT;
	struct afd_src *sf = f->npz;
	long zdir = afd_npz_tree_dir(&sf->tree, f->loc.prefix,
				     strlen(f->loc.prefix));
	if (zdir < 0)
		return -ENOENT;
	const struct afd_npz_dir *z = &sf->tree.dirs[zdir];
	for (size_t k = 0; rc == 0 && k < z->nkids; k++) {
		const struct afd_npz_child *ch = &z->kids[k];
		if (ch->member < 0) {
			char *pre = NULL;
			if (asprintf(&pre, "%s%s/", f->loc.prefix, ch->name) < 0)
				return -ENOMEM;
			rc = add_entry(f, cap, ch->name, AF_ZG_FOLDER, NULL, NULL,
				       f->loc.path, pre);
			free(pre);
			continue;
		}
		if (afd_src_member_hidden(sf, (size_t)ch->member))
			continue;
		if (af_array_name_kind(ch->name, true) == AF_NAME_NONE) {
			rc = add_entry(f, cap, ch->name, AF_ZG_OTHER, NULL, NULL,
				       NULL, NULL);
			continue;
		}
		const struct afd_minfo *mi = afd_src_member(c, sf,
							    (size_t)ch->member);
		if (!mi)
			return -ENOMEM;
		if (mi->state == MS_ABSENT)
			continue;
		rc = add_entry(f, cap, ch->name, AF_ZG_ARRAY, NULL,
			       mi->state == MS_ARRAY ? &mi->arr.a : NULL, NULL,
			       NULL);
	}
	return rc;
}

/* Say once why entry @p entry of @p f is not a child, if worth it: once
 * for the folder and name, whichever model (lookup or walk) found it. */
static void log_left(struct afd_ctx *c, const struct afd_zarr_folder *f,
		     size_t entry, af_zarr_group_left why)
{
	if (!af_zarr_group_left_logged(why))
		return;
	const char *name = f->e[entry].name;
	struct afd_logkey k = {
		AFD_LINE_ZGROUP,
		afd_hash_str(afd_hash_str(AFD_FNV_SEED, f->loc.path), f->loc.prefix),
		afd_hash_str(AFD_FNV_SEED, name) };
	bool root = !f->loc.prefix && strcmp(f->loc.path, ".") == 0;
	afd_log_once(&c->log, &k, AFD_LOG_WARN,
		     "%s%s%s%s: not in its folder's %s group: %s",
		     root ? "" : f->loc.path, root ? "" : "/",
		     f->loc.prefix ? f->loc.prefix : "", name,
		     AFD_ZARR_GROUP_NAME, af_zarr_group_left_phrase(why));
}

/* Reading a deferred entry's header for the codec (af_zarr_group_header_fn):
 * the parse read last is held until the next read or the end. */
struct header_read {
	struct afd_ctx *c;
	const struct afd_zarr_folder *f;
	struct afd_src *held;
};

static af_status read_header(void *ctx, size_t entry, const af_array **array,
			     const void **source, af_error *err)
{
	struct header_read *h = ctx;
	afd_src_put(h->held);
	h->held = NULL;
	*array = NULL;
	*source = NULL;
	char *child = afd_path_join(h->f->loc.path, h->f->e[entry].name);
	int got = child ? afd_src_get(h->c, child, NULL, NULL, &h->held) : -ENOMEM;
	free(child);
	if (got == -ENOMEM)
		return af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
				    "out of memory reading a header");
	/* gone or unparsable: left out as a header that could not be read */
	if (got == 0 && h->held->kind == SK_ARRAY)
		*array = &h->held->arr.a;
	return AF_OK;
}

enum afd_zarr_judged afd_zarr_folder_judged(const struct afd_zarr_folder *f,
					    const af_zarr_group_child *ch)
{
	if (!ch->is_array || !f->e[ch->entry].deferred)
		return AFD_ZJ_CHILD;
	return __atomic_load_n(&f->judged[ch->entry], __ATOMIC_RELAXED);
}

int afd_zarr_folder_judge(struct afd_ctx *c, struct afd_zarr_folder *f,
			  const af_zarr_group_child *ch)
{
	enum afd_zarr_judged was = afd_zarr_folder_judged(f, ch);
	if (was != AFD_ZJ_UNREAD)
		return was == AFD_ZJ_CHILD ? 0 : -ENOENT;
	/* a copy of the model: resolve notes what it read last in it, and
	 * f is shared by every lookup */
	af_zarr_group g = f->g;
	struct header_read h = { c, f, NULL };
	g.header_ctx = &h;
	af_zarr_group_left why;
	af_error err;
	af_error_clear(&err);
	af_status st = af_zarr_group_resolve(&g, ch, &why, &err);
	afd_src_put(h.held);
	if (st != AF_OK)
		return -ENOMEM;
	/* two lookups judging at once judge the same header the same */
	__atomic_store_n(&f->judged[ch->entry], why ? AFD_ZJ_LEFT : AFD_ZJ_CHILD,
			 __ATOMIC_RELAXED);
	if (!why)
		return 0;
	log_left(c, f, ch->entry, why);
	return -ENOENT;
}

/* A model for lookups and listings only: the headers go. */
static void drop_arrays(struct afd_zarr_folder *f)
{
	for (size_t i = 0; i < f->n; i++) {
		f->e[i].array = NULL;
		if (f->srcs)
			afd_src_put(f->srcs[i]);
	}
	free(f->srcs);
	f->srcs = NULL;
}

/* The codec's model of @p f's entries; a lookup model of a mirrored
 * folder reads the headers only of arrays whose key is contested, and
 * judges every array child now if there are at most judged_max. */
static int model(struct afd_ctx *c, struct afd_zarr_folder *f)
{
	struct header_read h = { c, f, NULL };
	af_error err;
	af_error_clear(&err);
	af_status st = af_zarr_group_build_deferred(&f->g, f->e, f->n,
						    c->opts.zarr_chunk,
						    read_header, &h, &err);
	afd_src_put(h.held);
	f->g.header_ctx = NULL;     /* each judge gives its own */
	if (st != AF_OK)
		return st == AF_E_NOMEM ? -ENOMEM : -EIO;
	for (size_t i = 0; i < f->g.nleft; i++)
		log_left(c, f, f->g.left[i].entry, f->g.left[i].why);
	if (f->arrays || f->loc.prefix)
		return 0;
	f->judged = calloc(f->n ? f->n : 1, 1);
	if (!f->judged)
		return -ENOMEM;
	if (f->g.narrays > c->zarr_groups.judged_max)
		return 0;
	for (size_t i = 0; i < f->g.nchildren; i++) {
		int rc = afd_zarr_folder_judge(c, f, &f->g.children[i]);
		if (rc == -ENOMEM)
			return rc;
	}
	return 0;
}

static int build(struct afd_ctx *c, const char *path, const char *prefix,
		 bool arrays, struct afd_zarr_folder **out)
{
	struct afd_zarr_folder *f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->refs = 1;
	f->arrays = arrays;
	f->loc.path = strdup(path);
	f->loc.prefix = prefix ? strdup(prefix) : NULL;
	size_t cap = 0;
	int rc = !f->loc.path || (prefix && !f->loc.prefix) ? -ENOMEM :
		 prefix ? list_npz(c, f, &cap) : list_folder(c, f, &cap);
	if (rc == 0)
		rc = model(c, f);
	if (rc < 0) {
		folder_free(f);
		return rc;
	}
	if (!arrays)
		drop_arrays(f);
	*out = f;
	return 0;
}

int afd_zarr_folder_get(struct afd_ctx *c, const char *path, const char *prefix,
		    bool arrays, struct afd_zarr_folder **out)
{
	struct afd_zarr_groups *z = &c->zarr_groups;
	uint64_t now = afd_now_ms(c);
	pthread_mutex_lock(&z->lock);
	uint64_t gen = z->gen;
	for (unsigned i = 0; i < AFD_ZARR_GROUP_CACHED; i++) {
		struct afd_zarr_folder *f = z->slot[i];
		if (f && !arrays && f->gen == gen &&
		    now < f->made_ms + AFD_STACK_UNWATCHED_MS &&
		    same_loc(&f->loc, path, prefix)) {
			__atomic_add_fetch(&f->refs, 1, __ATOMIC_RELAXED);
			z->used[i] = ++z->tick;
			pthread_mutex_unlock(&z->lock);
			*out = f;
			return 0;
		}
	}
	pthread_mutex_unlock(&z->lock);
	struct afd_zarr_folder *f;
	int rc = build(c, path, prefix, arrays, &f);
	if (rc < 0)
		return rc;
	f->gen = gen;
	/* its second of life starts when it is ready: a folder whose build
	 * takes longer (200,000 headers) would otherwise be stale at birth,
	 * and every child looked up in a listing of .zarr/ would build the
	 * whole folder again (quadratic); gen still catches any change seen */
	f->made_ms = afd_now_ms(c);
	/* a walk's model (its headers: up to 10,000 parses) goes with the
	 * walk; only the small ones for lookups are kept */
	if (arrays) {
		*out = f;
		return 0;
	}
	/* the cache's reference: in place of an older model of the same
	 * folder (a stale one kept beside it would hold its 100 bytes a child
	 * until 7 other folders pushed it out), else in the least recently
	 * used slot */
	__atomic_add_fetch(&f->refs, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&z->lock);
	unsigned lru = 0;
	for (unsigned i = 1; i < AFD_ZARR_GROUP_CACHED; i++)
		if (z->used[i] < z->used[lru])
			lru = i;
	for (unsigned i = 0; i < AFD_ZARR_GROUP_CACHED; i++)
		if (z->slot[i] && same_loc(&z->slot[i]->loc, path, prefix))
			lru = i;
	struct afd_zarr_folder *old = z->slot[lru];
	z->slot[lru] = f;
	z->used[lru] = ++z->tick;
	pthread_mutex_unlock(&z->lock);
	afd_zarr_folder_put(old);
	*out = f;
	return 0;
}

/* A walk's folders, one model per level (af_zarr_walk's list/release). */
struct walk_ctx {
	struct afd_ctx *c;
	struct afd_zarr_folder *held[AF_ZARR_GROUP_MAX_DEPTH + 2];
	unsigned nheld;
	FILE *out;     /* the document so far (open_memstream) */
};

static af_status walk_list(void *ctx, void *folder,
			   const af_zarr_group_entry **entries, size_t *n,
			   af_error *err)
{
	struct walk_ctx *w = ctx;
	const struct afd_zarr_group_loc *l = folder;
	if (w->nheld >= AF_ZARR_GROUP_MAX_DEPTH + 2)
		return af_error_set(err, AF_E_LIMIT, AF_NO_OFFSET,
				    "groups nested too deep");
	struct afd_zarr_folder *f = NULL;
	int rc = afd_zarr_folder_get(w->c, l->path, l->prefix, true, &f);
	if (rc == -ENOMEM)
		return af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
				    "out of memory for a group");
	if (rc == -E2BIG)
		return af_error_set(err, AF_E_LIMIT, AF_NO_OFFSET,
				    "too many arrays for .zmetadata: more than %u "
				    "in %s", AF_ZARR_CONSOLIDATED_MAX_ARRAYS,
				    l->path);
	/* a folder gone, or an npz that is no archive: an empty group */
	w->held[w->nheld++] = f;
	*entries = f ? f->e : NULL;
	*n = f ? f->n : 0;
	return AF_OK;
}

static void walk_release(void *ctx, void *folder,
			 const af_zarr_group_entry *entries, size_t n)
{
	(void)folder;
	(void)n;
	struct walk_ctx *w = ctx;
	/* released in the reverse order of listing: the last one held */
	for (unsigned i = w->nheld; i-- > 0;) {
		struct afd_zarr_folder *f = w->held[i];
		if ((f ? f->e : NULL) == entries) {
			afd_zarr_folder_put(f);
			w->held[i] = w->held[--w->nheld];
			return;
		}
	}
}

static af_status keep(void *ctx, const char *text, size_t len, af_error *err)
{
	struct walk_ctx *w = ctx;
	if (fwrite(text, 1, len, w->out) != len)
		return af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
				    "out of memory for .zmetadata");
	return AF_OK;
}

static uint64_t changes_seen(struct afd_ctx *c)
{
	pthread_mutex_lock(&c->zarr_groups.lock);
	uint64_t gen = c->zarr_groups.gen;
	pthread_mutex_unlock(&c->zarr_groups.lock);
	return gen;
}

/* One walk of the sub-tree at @p root into *text (malloc'd, *tlen). */
static af_status walk_once(struct afd_ctx *c, struct afd_zarr_group_loc *root,
			   char **text, size_t *tlen, af_error *err)
{
	struct walk_ctx w = { .c = c };
	*text = NULL;
	*tlen = 0;
	w.out = open_memstream(text, tlen);
	if (!w.out)
		return af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
				    "out of memory for .zmetadata");
	af_zarr_walk walk = { .ctx = &w, .list = walk_list,
			      .release = walk_release,
			      .max_chunk_bytes = c->opts.zarr_chunk };
	af_status st = af_zarr_consolidated_write(&walk, root, keep, &w, err);
	while (w.nheld)
		afd_zarr_folder_put(w.held[--w.nheld]);
	if (fclose(w.out) != 0 && st == AF_OK)
		st = af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
				  "out of memory for .zmetadata");
	if (st != AF_OK) {
		free(*text);
		*text = NULL;
	}
	return st;
}

void afd_zarr_group_zmetadata_keep(struct afd_ctx *c, const char *path,
				   const char *prefix, char *doc, size_t len,
				   uint64_t gen)
{
	struct afd_zarr_groups *z = &c->zarr_groups;
	char *p = strdup(path), *x = prefix ? strdup(prefix) : NULL;
	if (!p || (prefix && !x)) {   /* not kept: the open walks again */
		free(p);
		free(x);
		free(doc);
		return;
	}
	pthread_mutex_lock(&z->lock);
	doc_drop_locked(z);
	z->doc_loc = (struct afd_zarr_group_loc){ p, x };
	z->doc = doc;
	z->doc_len = len;
	z->doc_gen = gen;
	z->doc_ms = afd_now_ms(c);
	pthread_mutex_unlock(&z->lock);
}

/* The kept document of this group while fresh, taken; else false (and a
 * stale one is dropped: nothing would take it). */
static bool doc_take(struct afd_ctx *c, const char *path, const char *prefix,
		     char **doc, size_t *len, uint64_t *gen)
{
	struct afd_zarr_groups *z = &c->zarr_groups;
	bool took = false;
	pthread_mutex_lock(&z->lock);
	if (z->doc) {
		bool fresh = z->doc_gen == z->gen &&
			     afd_now_ms(c) < z->doc_ms + AFD_STACK_UNWATCHED_MS;
		if (fresh && same_loc(&z->doc_loc, path, prefix)) {
			*doc = z->doc;
			*len = z->doc_len;
			if (gen)
				*gen = z->doc_gen;
			z->doc = NULL;
			took = true;
		}
		if (took || !fresh)
			doc_drop_locked(z);
	}
	pthread_mutex_unlock(&z->lock);
	return took;
}

int afd_zarr_group_zmetadata(struct afd_ctx *c, const char *path,
			     const char *prefix, char **doc, size_t *len,
			     uint64_t *walked_gen)
{
	if (doc_take(c, path, prefix, doc, len, walked_gen))
		return 0;
	struct afd_zarr_group_loc root = { (char *)path, (char *)prefix };
	af_error err;
	af_error_clear(&err);
	af_status st = AF_OK;
	char *text = NULL;
	size_t tlen = 0;
	/* a walk during which the notifier saw a change may hold folders
	 * of two versions of the tree: made again (a bounded number of
	 * times: a tree that never stops changing gets its last walk) */
	uint64_t gen = 0;
	for (unsigned tries = 0; tries < AFD_ZARR_GROUP_WALK_TRIES; tries++) {
		gen = changes_seen(c);
		free(text);
		st = walk_once(c, &root, &text, &tlen, &err);
		if (st != AF_OK || changes_seen(c) == gen)
			break;
	}
	/* the walk parsed every header of the sub-tree and built models
	 * with them, all freed now: their pages go back (glibc keeps them) */
	malloc_trim(0);
	if (st == AF_OK) {
		*doc = text;
		*len = tlen;
		if (walked_gen)
			*walked_gen = gen;
		return 0;
	}
	if (st == AF_E_NOMEM)
		return -ENOMEM;
	struct afd_logkey k = { AFD_LINE_ZGROUP,
				afd_hash_str(afd_hash_str(AFD_FNV_SEED, path), prefix),
				0 };
	afd_log_once(&c->log, &k, AFD_LOG_WARN,
		     "%s/%s%s: no .zmetadata: %s (readers list the group instead)",
		     path, prefix ? prefix : "", AFD_ZARR_GROUP_NAME,
		     err.msg);
	return -ENOENT;
}
