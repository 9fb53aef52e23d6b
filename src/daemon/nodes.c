/* SPDX-License-Identifier: MIT */
/* The node table: nodeid <-> identity, lookup counts, and the path index. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif
#include <fuse_lowlevel.h>

#include "spinlock.h"
#include "arrsum.h"
#include "hash.h"
#include "nodes.h"
#include "srcfile.h"

#define AFD_NODES_MIN_BUCKETS 1024u

/* Under AddressSanitizer nodes are malloc'd: its red zones around each
 * block catch what a slab cell's neighbours would hide. */
#if defined(__SANITIZE_ADDRESS__)
#define AFD_NODES_SLAB false
#else
#define AFD_NODES_SLAB true
#endif

uint64_t afd_ino_of_sub(const char *path, const char *member, enum afd_entry e,
			uint64_t sub)
{
	uint64_t h = afd_hash_str(AFD_FNV_SEED, path);
	/* an npz root (member "") has its file's number: the one its folder's
	 * listing gives, which cannot know whether the archive parses */
	h = afd_hash_str(h, member && member[0] ? member : NULL);
	unsigned char eb = (unsigned char)e;
	h = afd_hash_bytes(h, &eb, 1);
	/* only chunk files have a sub: every other number stays as it was */
	if (sub)
		h = afd_hash_bytes(h, &sub, sizeof(sub));
	h = afd_hash_mix(h);
	return h <= FUSE_ROOT_ID ? h + 2 : h;
}

uint64_t afd_ino_of(const char *path, const char *member, enum afd_entry e)
{
	return afd_ino_of_sub(path, member, e, 0);
}

static uint64_t key_of(enum afd_nkind k, enum afd_entry e, const char *path,
		       const char *member, uint64_t version, uint64_t sub)
{
	unsigned char kb[2] = { (unsigned char)k, (unsigned char)e };
	uint64_t h = afd_hash_bytes(AFD_FNV_SEED, kb, 2);
	h = afd_hash_bytes(h, &version, sizeof(version));
	h = afd_hash_bytes(h, &sub, sizeof(sub));
	h = afd_hash_str(h, path);
	return afd_hash_mix(afd_hash_str(h, member));
}

static uint64_t path_key(const char *path)
{
	return afd_hash_mix(afd_hash_str(AFD_FNV_SEED, path));
}

static int str_eq(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

bool afd_node_serves(enum afd_nkind k)
{
	switch (k) {
	case NK_DIR:
	case NK_LINK:
	case NK_ARRAY:
	case NK_NPZDIR:
	case NK_ZARRDIR:
	case NK_ZGROUP:
	case NK_ZGARRAY:
		return false;
	default:
		return true;
	}
}

/* An array folder of a source file has room for its summary
 * (afd_nodes_sum_set); a serving node for its afd_node_io. */
static bool has_sum_room(enum afd_nkind kind, const char *member)
{
	return kind == NK_ARRAY && !member;
}

/* The bytes before the node in its block (its tail, nodes.h). */
static size_t tail_size(enum afd_nkind kind, const char *member)
{
	if (afd_node_serves(kind))
		return sizeof(struct afd_node_io);
	if (has_sum_room(kind, member))
		return sizeof(struct afd_arrsum_packed);
	return 0;
}

struct afd_node_io *afd_node_io(const struct afd_node *n)
{
	return afd_node_serves(n->kind) ? (struct afd_node_io *)n - 1 : NULL;
}

/* The packed summary's room before array folder node @p n. */
static struct afd_arrsum_packed *sum_room(const struct afd_node *n)
{
	return (struct afd_arrsum_packed *)n - 1;
}

const char *afd_node_name(const struct afd_node *n)
{
	if (n->name_in_path)
		return strrchr(n->path, '/') + 1;
	return n->path + strlen(n->path) + 1;
}

uint64_t afd_node_ino(const struct afd_node *n)
{
	return afd_ino_of_sub(n->path, n->member, n->entry, n->sub);
}

void afd_node_free(struct afd_node *n)
{
	char *block = (char *)n - tail_size(n->kind, n->member);
	if (n->in_slab)
		afd_slab_free(block);
	else
		free(block);
}

/* Copy @p len bytes of @p str to *@p at and move *@p at past them. */
static char *put_str(char **at, const char *str, size_t len)
{
	char *out = memcpy(*at, str, len);
	*at += len;
	return out;
}

static struct afd_node *node_new(struct afd_nodes *t, enum afd_nkind kind,
				 enum afd_entry e,
				 const char *path, const char *member,
				 uint64_t version, uint64_t sub,
				 uint64_t parent, const char *name)
{
	if (!name)
		name = "";
	size_t lp = strlen(path) + 1, ln = strlen(name) + 1;
	size_t lm = member ? strlen(member) + 1 : 0;
	/* most names are their path's last component: kept once */
	bool name_in_path = ln < lp && path[lp - ln - 1] == '/' &&
			    !strchr(name, '/') &&
			    memcmp(path + lp - ln, name, ln) == 0;
	if (name_in_path)
		ln = 0;
	/* the node, its tail and its strings in one block: a listing of many
	 * arrays makes a node per entry, and small strings of their own cost
	 * more than the node (malloc's 32-byte chunks) */
	size_t tail = tail_size(kind, member);
	size_t size = tail + offsetof(struct afd_node, path) + lp + ln + lm;
	bool in_slab = AFD_NODES_SLAB && afd_slab_fits(size);
	char *block = in_slab ? afd_slab_alloc(&t->slab, size) : calloc(1, size);
	if (!block)
		return NULL;
	struct afd_node *n = (struct afd_node *)(block + tail);
	n->in_slab = in_slab;
	char *at = n->path;
	put_str(&at, path, lp);
	n->name_in_path = name_in_path;
	if (!name_in_path)
		put_str(&at, name, ln);
	n->member = member ? put_str(&at, member, lm) : NULL;
	n->kind = kind;
	n->entry = e;
	n->wd = -1;
	n->parent = parent;
	n->version = version;
	n->sub = sub;
	n->key = (uint32_t)key_of(kind, e, path, member, version, sub);
	return n;
}

static size_t nid_bucket(const struct afd_nodes *t, uint64_t nodeid)
{
	return afd_hash_mix(nodeid) & (t->nbuckets - 1);
}

static void link_node(struct afd_nodes *t, struct afd_node *n)
{
	size_t mask = t->nbuckets - 1;
	size_t b = nid_bucket(t, n->nodeid);
	n->nid_next = t->nid_tab[b];
	t->nid_tab[b] = n;
	b = n->key & mask;
	n->id_next = t->id_tab[b];
	t->id_tab[b] = n;
	b = path_key(n->path) & mask;
	n->src_next = t->src_tab[b];
	t->src_tab[b] = n;
	t->count++;
}

static void unlink_node(struct afd_nodes *t, struct afd_node *n)
{
	size_t mask = t->nbuckets - 1;
	struct afd_node **pp = &t->id_tab[n->key & mask];
	while (*pp && *pp != n)
		pp = &(*pp)->id_next;
	if (*pp)
		*pp = n->id_next;
	pp = &t->src_tab[path_key(n->path) & mask];
	while (*pp && *pp != n)
		pp = &(*pp)->src_next;
	if (*pp)
		*pp = n->src_next;
	pp = &t->nid_tab[nid_bucket(t, n->nodeid)];
	while (*pp && *pp != n)
		pp = &(*pp)->nid_next;
	if (*pp)
		*pp = n->nid_next;
	t->count--;
}

/* Rehash into @p nb buckets (a power of two); a failed resize is
 * harmless: the table keeps its buckets. */
static void rehash(struct afd_nodes *t, size_t nb)
{
	struct afd_node **id = calloc(nb, sizeof(*id));
	struct afd_node **src = calloc(nb, sizeof(*src));
	struct afd_node **nid = calloc(nb, sizeof(*nid));
	if (!id || !src || !nid) {
		free(id);
		free(src);
		free(nid);
		return;
	}
	struct afd_node **old = t->id_tab;
	size_t ob = t->nbuckets;
	free(t->src_tab);
	free(t->nid_tab);
	t->id_tab = id;
	t->src_tab = src;
	t->nid_tab = nid;
	t->nbuckets = nb;
	t->count = 0;
	for (size_t i = 0; i < ob; i++) {
		struct afd_node *n = old[i];
		while (n) {
			struct afd_node *next = n->id_next;
			link_node(t, n);
			n = next;
		}
	}
	free(old);
}

/* Double the buckets when the load passes 1: a listing of a million
 * names probes the table for each name, and each node along a chain is a
 * miss of the CPU's caches (`ls -l` of 1,000,000 arrays 0.2-0.6 s
 * faster than at a load of 2), for 12 bytes more a node (three buckets). */
static void maybe_grow(struct afd_nodes *t)
{
	if (t->count >= t->nbuckets)
		rehash(t, t->nbuckets * 2);
}

/* Halve them when the load falls under 1/4: a walk of a big tree (du,
 * find) grows the table, and the kernel forgets it all later. */
static void maybe_shrink(struct afd_nodes *t)
{
	if (t->nbuckets > AFD_NODES_MIN_BUCKETS && t->count < t->nbuckets / 4)
		rehash(t, t->nbuckets / 2);
}

int afd_nodes_init(struct afd_nodes *t, enum afd_nkind root_kind,
		   const char *root_path, const char *root_member)
{
	memset(t, 0, sizeof(*t));
	afd_slab_init(&t->slab);
	t->nbuckets = AFD_NODES_MIN_BUCKETS;
	t->id_tab = calloc(t->nbuckets, sizeof(*t->id_tab));
	t->src_tab = calloc(t->nbuckets, sizeof(*t->src_tab));
	t->nid_tab = calloc(t->nbuckets, sizeof(*t->nid_tab));
	t->root = node_new(t, root_kind, AE_NONE, root_path, root_member, 0, 0,
			   0, "");
	int ids = afd_idmap_init(&t->ids, 0, afd_idmap_new_gen());
	if (!t->id_tab || !t->src_tab || !t->nid_tab || !t->root || ids < 0) {
		free(t->id_tab);
		free(t->src_tab);
		free(t->nid_tab);
		if (t->root)
			afd_node_free(t->root);
		if (ids == 0)
			afd_idmap_destroy(&t->ids);
		afd_slab_destroy(&t->slab);
		memset(t, 0, sizeof(*t));
		return -ENOMEM;
	}
	t->root->nlookup = 1;
	t->root->nodeid = FUSE_ROOT_ID;
	link_node(t, t->root);
	afd_mutex_init_spin(&t->lock);
	return 0;
}

void afd_nodes_destroy(struct afd_nodes *t)
{
	for (size_t i = 0; i < t->nbuckets; i++) {
		struct afd_node *n = t->id_tab[i];
		while (n) {
			struct afd_node *next = n->id_next;
			afd_node_free(n);
			n = next;
		}
	}
	free(t->id_tab);
	free(t->src_tab);
	free(t->nid_tab);
	afd_idmap_destroy(&t->ids);
	afd_slab_destroy(&t->slab);
	pthread_mutex_destroy(&t->lock);
	memset(t, 0, sizeof(*t));
}

/* The live node of @p nodeid, or NULL. Lock held. */
static struct afd_node *by_nodeid_locked(struct afd_nodes *t, uint64_t nodeid)
{
	for (struct afd_node *n = t->nid_tab[nid_bucket(t, nodeid)]; n;
	     n = n->nid_next)
		if (n->nodeid == nodeid)
			return n;
	return NULL;
}

struct afd_node *afd_nodes_from_id(struct afd_nodes *t, uint64_t nodeid)
{
	if (nodeid == FUSE_ROOT_ID)
		return t->root;
	pthread_mutex_lock(&t->lock);
	struct afd_node *n = by_nodeid_locked(t, nodeid);
	pthread_mutex_unlock(&t->lock);
	return n;
}

uint64_t afd_nodes_id(const struct afd_nodes *t, const struct afd_node *n)
{
	(void)t;
	return n->nodeid;
}

struct afd_node *afd_nodes_ref_id(struct afd_nodes *t, uint64_t nodeid)
{
	pthread_mutex_lock(&t->lock);
	struct afd_node *n = by_nodeid_locked(t, nodeid);
	if (n) {
		n->nlookup++;
		afd_idmap_touch(&t->ids, nodeid);
	}
	pthread_mutex_unlock(&t->lock);
	return n;
}

struct afd_idrec *afd_nodes_record(struct afd_nodes *t, uint64_t nodeid)
{
	pthread_mutex_lock(&t->lock);
	const struct afd_idrec *r = afd_idmap_find(&t->ids, nodeid);
	struct afd_idrec *copy = r ? afd_idrec_dup(r) : NULL;
	pthread_mutex_unlock(&t->lock);
	return copy;
}

/* The node with this identity (key = its key_of), or NULL. Lock held. */
static struct afd_node *find_locked(struct afd_nodes *t, uint64_t key,
				    enum afd_nkind kind, enum afd_entry e,
				    const char *path, const char *member,
				    uint64_t version, uint64_t sub)
{
	for (struct afd_node *n = t->id_tab[key & (t->nbuckets - 1)]; n;
	     n = n->id_next)
		if (n->key == (uint32_t)key && n->kind == kind &&
		    n->entry == e &&
		    n->version == version && n->sub == sub &&
		    str_eq(n->path, path) &&
		    str_eq(n->member, member))
			return n;
	return NULL;
}

/* A lookup of @p n: its record, then its parent's, are the most recent
 * (idmap.h: a folder outlives what is looked up in it). Lock held. */
static void touch_locked(struct afd_nodes *t, const struct afd_node *n)
{
	afd_idmap_touch(&t->ids, n->nodeid);
	afd_idmap_touch(&t->ids, n->parent);
}

struct afd_node *afd_nodes_get_sub(struct afd_nodes *t, enum afd_nkind kind,
				   enum afd_entry e, const char *path,
				   const char *member, uint64_t version,
				   uint64_t sub, uint64_t parent,
				   const char *name, const struct stat *src,
				   int *created)
{
	uint64_t key = key_of(kind, e, path, member, version, sub);
	*created = 0;
	/* one probe and one hold: a listing makes a node per entry, and the
	 * allocation is short next to a second probe and lock round */
	pthread_mutex_lock(&t->lock);
	struct afd_node *n = find_locked(t, key, kind, e, path, member, version,
					 sub);
	if (n) {
		n->nlookup++;
		touch_locked(t, n);
		pthread_mutex_unlock(&t->lock);
		return n;
	}
	struct afd_node *fresh = node_new(t, kind, e, path, member, version, sub,
					  parent, name);
	if (!fresh) {
		pthread_mutex_unlock(&t->lock);
		return NULL;
	}
	struct afd_idrec want = {
		.kind = (uint8_t)kind, .entry = (uint8_t)e, .sub = sub,
		.version = version, .parent = parent,
		.dev = (uint64_t)src->st_dev, .ino = (uint64_t)src->st_ino,
		.path = path, .member = member, .name = afd_node_name(fresh),
	};
	if (afd_idmap_issue(&t->ids, &want, &fresh->nodeid, &fresh->gen) < 0) {
		pthread_mutex_unlock(&t->lock);
		afd_node_free(fresh);
		return NULL;
	}
	afd_idmap_touch(&t->ids, parent);
	fresh->nlookup = 1;
	link_node(t, fresh);
	maybe_grow(t);
	pthread_mutex_unlock(&t->lock);
	*created = 1;
	return fresh;
}

struct afd_node *afd_nodes_get(struct afd_nodes *t, enum afd_nkind kind,
			       enum afd_entry e, const char *path,
			       const char *member, uint64_t version,
			       uint64_t parent, const char *name,
			       const struct stat *src, int *created)
{
	return afd_nodes_get_sub(t, kind, e, path, member, version, 0, parent,
				 name, src, created);
}

struct afd_node *afd_nodes_adopt(struct afd_nodes *t,
				 const struct afd_idrec *rec, int *created,
				 int *err)
{
	enum afd_nkind kind = (enum afd_nkind)rec->kind;
	enum afd_entry e = (enum afd_entry)rec->entry;
	uint64_t key = key_of(kind, e, rec->path, rec->member, rec->version,
			      rec->sub);
	*created = 0;
	*err = 0;
	struct afd_node *fresh = node_new(t, kind, e, rec->path, rec->member,
					  rec->version, rec->sub, rec->parent,
					  rec->name);
	if (!fresh) {
		*err = -ENOMEM;
		return NULL;
	}
	fresh->nodeid = rec->id;
	fresh->gen = rec->gen;
	pthread_mutex_lock(&t->lock);
	struct afd_node *n = by_nodeid_locked(t, rec->id);
	if (!n) {
		n = find_locked(t, key, kind, e, rec->path, rec->member,
				rec->version, rec->sub);
		if (n) {
			/* the same thing is live under a newer id */
			pthread_mutex_unlock(&t->lock);
			afd_node_free(fresh);
			*err = -ESTALE;
			return NULL;
		}
		fresh->nlookup = 1;
		link_node(t, fresh);
		maybe_grow(t);
		touch_locked(t, fresh);
		pthread_mutex_unlock(&t->lock);
		*created = 1;
		return fresh;
	}
	n->nlookup++;
	touch_locked(t, n);
	pthread_mutex_unlock(&t->lock);
	afd_node_free(fresh);
	return n;
}

struct afd_node *afd_nodes_forget(struct afd_nodes *t, struct afd_node *node,
				  uint64_t n)
{
	struct afd_node *gone = NULL;
	pthread_mutex_lock(&t->lock);
	node->nlookup = node->nlookup > n ? node->nlookup - n : 0;
	if (node->nlookup == 0 && node != t->root) {
		unlink_node(t, node);
		maybe_shrink(t);
		t->freed++;
		gone = node;
	}
	pthread_mutex_unlock(&t->lock);
	return gone;
}

bool afd_nodes_trim_due(struct afd_nodes *t)
{
	pthread_mutex_lock(&t->lock);
	/* the last batches of a big forget too (most of the table gone, or
	 * all of it), or the memory of its last few thousand nodes stays */
	bool due = t->freed >= AFD_NODES_TRIM_AFTER ||
		   (t->freed >= AFD_NODES_TRIM_MIN && t->freed > t->count) ||
		   (t->freed > 0 && t->count <= 1);
	if (due)
		t->freed = 0;
	pthread_mutex_unlock(&t->lock);
	return due;
}

size_t afd_nodes_count(struct afd_nodes *t)
{
	pthread_mutex_lock(&t->lock);
	size_t n = t->count;
	pthread_mutex_unlock(&t->lock);
	return n;
}

static int push(struct afd_inval **v, size_t *n, size_t *cap, uint64_t nodeid,
		uint64_t parent, const char *name)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		struct afd_inval *nv = realloc(*v, nc * sizeof(**v));
		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = nc;
	}
	char *copy = NULL;
	if (parent) {
		copy = strdup(name);
		if (!copy)
			return -ENOMEM;
	}
	(*v)[*n] = (struct afd_inval){ nodeid, parent, copy };
	(*n)++;
	return 0;
}

static int push_node(struct afd_nodes *t, struct afd_inval **v, size_t *n,
		     size_t *cap, struct afd_node *node)
{
	return push(v, n, cap, afd_nodes_id(t, node), node->parent,
		    afd_node_name(node));
}

long afd_nodes_collect(struct afd_nodes *t, const char *path,
		       struct afd_inval **out)
{
	struct afd_inval *v = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;
	pthread_mutex_lock(&t->lock);
	if (!path) {
		for (size_t i = 0; i < t->nbuckets && rc == 0; i++)
			for (struct afd_node *x = t->id_tab[i]; x && rc == 0;
			     x = x->id_next)
				rc = push_node(t, &v, &n, &cap, x);
		goto done;
	}
	size_t mask = t->nbuckets - 1;
	for (struct afd_node *x = t->src_tab[path_key(path) & mask];
	     x && rc == 0; x = x->src_next)
		if (strcmp(x->path, path) == 0)
			rc = push_node(t, &v, &n, &cap, x);

	/* the folder holding it: drop its (maybe negative) entry, and its
	 * own attributes (its mtime changed with the entry) */
	const char *slash = strrchr(path, '/');
	char *dir = slash ? strndup(path, (size_t)(slash - path)) : strdup(".");
	const char *base = slash ? slash + 1 : path;
	if (!dir) {
		rc = -ENOMEM;
		goto done;
	}
	for (struct afd_node *x = t->src_tab[path_key(dir) & mask];
	     x && rc == 0; x = x->src_next)
		if (x->kind == NK_DIR && strcmp(x->path, dir) == 0 &&
		    strcmp(path, ".") != 0)
			rc = push(&v, &n, &cap, afd_nodes_id(t, x),
				  afd_nodes_id(t, x), base);
	free(dir);
done:
	pthread_mutex_unlock(&t->lock);
	if (rc < 0) {
		for (size_t i = 0; i < n; i++)
			free(v[i].name);
		free(v);
		return rc;
	}
	*out = v;
	return (long)n;
}

int afd_nodes_entry_of(struct afd_nodes *t, uint64_t nodeid, uint32_t gen,
		       uint64_t *parent, char **name)
{
	int rc = -ENOENT;
	pthread_mutex_lock(&t->lock);
	struct afd_node *n = by_nodeid_locked(t, nodeid);
	if (n && n->gen == gen && n->parent) {
		*parent = n->parent;
		*name = strdup(afd_node_name(n));
		rc = *name ? 0 : -ENOMEM;
	}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

int afd_nodes_sum_set(struct afd_nodes *t, struct afd_node *n,
		      const struct afd_arrsum *sum)
{
	if (!has_sum_room(n->kind, n->member))
		return -EINVAL;
	/* packed outside the lock: the node's path never changes */
	struct afd_arrsum_packed p;
	bool fits = afd_arrsum_pack(&p, n->path, sum);
	pthread_mutex_lock(&t->lock);
	if (fits)
		*sum_room(n) = p;
	/* one that does not fit forgets the older version's too */
	n->summed = fits;
	pthread_mutex_unlock(&t->lock);
	return fits ? 0 : -ERANGE;
}

void afd_nodes_range_set(struct afd_node *n, uint64_t off, uint64_t len)
{
	struct afd_node_io *io = afd_node_io(n);
	if (!io || __atomic_load_n(&n->ranged, __ATOMIC_ACQUIRE))
		return;
	/* racing setters store the same numbers: the node's version fixes them */
	__atomic_store_n(&io->range_off, off, __ATOMIC_RELAXED);
	__atomic_store_n(&io->range_len, len, __ATOMIC_RELAXED);
	__atomic_store_n(&n->ranged, true, __ATOMIC_RELEASE);
}

bool afd_nodes_range_get(const struct afd_node *n, uint64_t *off,
			 uint64_t *len)
{
	if (!__atomic_load_n(&n->ranged, __ATOMIC_ACQUIRE))
		return false;
	const struct afd_node_io *io = afd_node_io(n);
	*off = __atomic_load_n(&io->range_off, __ATOMIC_RELAXED);
	*len = __atomic_load_n(&io->range_len, __ATOMIC_RELAXED);
	return true;
}

bool afd_nodes_sum_get(struct afd_nodes *t, const struct afd_node *n,
		       struct afd_arrsum *out)
{
	struct afd_arrsum_packed p;
	pthread_mutex_lock(&t->lock);
	bool got = n->summed;
	if (got)
		p = *sum_room(n);
	pthread_mutex_unlock(&t->lock);
	if (got)
		afd_arrsum_unpack(out, n->path, &p);
	return got;
}

bool afd_nodes_sum_of_path(struct afd_nodes *t, const char *path,
			   struct afd_arrsum *out)
{
	/* an array folder of a source file: entry, version and sub 0 */
	uint64_t key = key_of(NK_ARRAY, AE_NONE, path, NULL, 0, 0);
	struct afd_arrsum_packed p;
	pthread_mutex_lock(&t->lock);
	struct afd_node *n = find_locked(t, key, NK_ARRAY, AE_NONE, path, NULL,
					 0, 0);
	bool got = n && n->summed;
	if (got)
		p = *sum_room(n);
	pthread_mutex_unlock(&t->lock);
	if (got)
		afd_arrsum_unpack(out, path, &p);
	return got;
}
