/* SPDX-License-Identifier: MIT */
/* The id map (idmap.h): two hash indexes (by id, by identity) and an LRU. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "hash.h"
#include "idmap.h"

#define IDMAP_MIN_BUCKETS 256u
#define ROOT_ID 1u

struct afd_idnode {
	struct afd_idrec r;
	uint64_t ikey;
	struct afd_idnode *id_next, *ik_next, *older, *newer;
	char strs[];
};

static uint64_t id_key(uint64_t id)
{
	return afd_hash_mix(id);
}

static uint64_t ident_key(const struct afd_idrec *r)
{
	unsigned char kb[2] = { r->kind, r->entry };
	uint64_t h = afd_hash_bytes(AFD_FNV_SEED, kb, 2);
	h = afd_hash_bytes(h, &r->version, sizeof(r->version));
	h = afd_hash_bytes(h, &r->sub, sizeof(r->sub));
	h = afd_hash_str(h, r->path);
	return afd_hash_mix(afd_hash_str(h, r->member));
}

static bool str_eq(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

static bool same_ident(const struct afd_idrec *a, const struct afd_idrec *b)
{
	return a->kind == b->kind && a->entry == b->entry &&
	       a->version == b->version && a->sub == b->sub &&
	       str_eq(a->path, b->path) && str_eq(a->member, b->member);
}

uint32_t afd_idmap_new_gen(void)
{
	uint32_t g = 0;
	if (getrandom(&g, sizeof(g), GRND_NONBLOCK) != (ssize_t)sizeof(g)) {
		struct timespec t;
		clock_gettime(CLOCK_REALTIME, &t);
		g = (uint32_t)afd_hash_mix((uint64_t)t.tv_sec * 1000000007u ^
					   (uint64_t)t.tv_nsec ^
					   ((uint64_t)getpid() << 40));
	}
	return g ? g : 1;
}

int afd_idmap_init(struct afd_idmap *m, size_t max, uint32_t gen)
{
	memset(m, 0, sizeof(*m));
	m->max = max ? max : AFD_IDMAP_MAX_DEFAULT;
	if (m->max > AFD_IDMAP_MAX_LIMIT)
		m->max = AFD_IDMAP_MAX_LIMIT;
	m->nbuckets = IDMAP_MIN_BUCKETS;
	m->by_id = calloc(m->nbuckets, sizeof(*m->by_id));
	m->by_ident = calloc(m->nbuckets, sizeof(*m->by_ident));
	if (!m->by_id || !m->by_ident) {
		free(m->by_id);
		free(m->by_ident);
		memset(m, 0, sizeof(*m));
		return -ENOMEM;
	}
	m->next_id = ROOT_ID + 1;
	m->gen = gen ? gen : 1;
	return 0;
}

void afd_idmap_destroy(struct afd_idmap *m)
{
	struct afd_idnode *n = m->oldest;
	while (n) {
		struct afd_idnode *next = n->newer;
		free(n);
		n = next;
	}
	free(m->by_id);
	free(m->by_ident);
	memset(m, 0, sizeof(*m));
}

/* Bytes the strings of @p r take (NULs included). */
static size_t strs_len(const struct afd_idrec *r)
{
	return strlen(r->path) + 1 + (r->member ? strlen(r->member) + 1 : 0) +
	       strlen(r->name ? r->name : "") + 1;
}

static struct afd_idnode *find_id(const struct afd_idmap *m, uint64_t id)
{
	for (struct afd_idnode *n = m->by_id[id_key(id) & (m->nbuckets - 1)];
	     n; n = n->id_next)
		if (n->r.id == id)
			return n;
	return NULL;
}

static struct afd_idnode *find_ident(const struct afd_idmap *m,
				     const struct afd_idrec *want, uint64_t ik)
{
	for (struct afd_idnode *n = m->by_ident[ik & (m->nbuckets - 1)]; n;
	     n = n->ik_next)
		if (n->ikey == ik && same_ident(&n->r, want))
			return n;
	return NULL;
}

static void lru_unlink(struct afd_idmap *m, struct afd_idnode *n)
{
	if (n->older)
		n->older->newer = n->newer;
	else
		m->oldest = n->newer;
	if (n->newer)
		n->newer->older = n->older;
	else
		m->newest = n->older;
	n->older = n->newer = NULL;
}

static void lru_push(struct afd_idmap *m, struct afd_idnode *n)
{
	n->older = m->newest;
	n->newer = NULL;
	if (m->newest)
		m->newest->newer = n;
	else
		m->oldest = n;
	m->newest = n;
}

static void hash_link(struct afd_idmap *m, struct afd_idnode *n)
{
	size_t mask = m->nbuckets - 1;
	size_t b = id_key(n->r.id) & mask;
	n->id_next = m->by_id[b];
	m->by_id[b] = n;
	b = n->ikey & mask;
	n->ik_next = m->by_ident[b];
	m->by_ident[b] = n;
}

static void remove_node(struct afd_idmap *m, struct afd_idnode *n)
{
	size_t mask = m->nbuckets - 1;
	struct afd_idnode **pp = &m->by_id[id_key(n->r.id) & mask];
	while (*pp && *pp != n)
		pp = &(*pp)->id_next;
	if (*pp)
		*pp = n->id_next;
	pp = &m->by_ident[n->ikey & mask];
	while (*pp && *pp != n)
		pp = &(*pp)->ik_next;
	if (*pp)
		*pp = n->ik_next;
	lru_unlink(m, n);
	m->count--;
	m->str_bytes -= strs_len(&n->r);
	m->dirty = true;
	free(n);
}

/* Double the buckets past a load of 1; a failed resize is harmless. */
static void maybe_grow(struct afd_idmap *m)
{
	if (m->count < m->nbuckets)
		return;
	size_t nb = m->nbuckets * 2;
	struct afd_idnode **id = calloc(nb, sizeof(*id));
	struct afd_idnode **ik = calloc(nb, sizeof(*ik));
	if (!id || !ik) {
		free(id);
		free(ik);
		return;
	}
	free(m->by_id);
	free(m->by_ident);
	m->by_id = id;
	m->by_ident = ik;
	m->nbuckets = nb;
	for (struct afd_idnode *n = m->oldest; n; n = n->newer)
		hash_link(m, n);
}

/* Copy @p src into @p dst with its strings at @p s (strs_len bytes). */
static void copy_rec(struct afd_idrec *dst, char *s, const struct afd_idrec *src)
{
	*dst = *src;
	size_t l = strlen(src->path) + 1;
	dst->path = memcpy(s, src->path, l);
	s += l;
	if (src->member) {
		l = strlen(src->member) + 1;
		dst->member = memcpy(s, src->member, l);
		s += l;
	}
	const char *name = src->name ? src->name : "";
	dst->name = memcpy(s, name, strlen(name) + 1);
}

struct afd_idrec *afd_idrec_dup(const struct afd_idrec *r)
{
	struct afd_idrec *c = malloc(sizeof(*c) + strs_len(r));
	if (c)
		copy_rec(c, (char *)(c + 1), r);
	return c;
}

/* A new node holding a copy of @p r (strings included), not linked. */
static struct afd_idnode *node_new(const struct afd_idrec *r)
{
	struct afd_idnode *n = malloc(sizeof(*n) + strs_len(r));
	if (!n)
		return NULL;
	memset(n, 0, sizeof(*n));
	copy_rec(&n->r, n->strs, r);
	n->ikey = ident_key(&n->r);
	return n;
}

/* Link @p n as the most recent record, evicting past the bound. */
static void add_node(struct afd_idmap *m, struct afd_idnode *n)
{
	size_t len = strs_len(&n->r);
	while (m->oldest && (m->count >= m->max ||
			     m->str_bytes + len > AFD_IDMAP_STR_BUDGET))
		remove_node(m, m->oldest);
	hash_link(m, n);
	lru_push(m, n);
	m->count++;
	m->str_bytes += len;
	m->dirty = true;
	maybe_grow(m);
}

int afd_idmap_insert(struct afd_idmap *m, const struct afd_idrec *r)
{
	if (r->id <= ROOT_ID || !r->path)
		return -EINVAL;
	struct afd_idnode *n = node_new(r);
	if (!n)
		return -ENOMEM;
	struct afd_idnode *old = find_id(m, r->id);
	if (old)
		remove_node(m, old);
	old = find_ident(m, &n->r, n->ikey);
	if (old)
		remove_node(m, old);
	add_node(m, n);
	if (r->id >= m->next_id)
		m->next_id = r->id + 1;
	return 0;
}

/* Parent and name may differ for one identity only in how it was reached
 * (a hard-linked folder is not one: paths are the identity); keep the
 * latest. Returns false on ENOMEM (the record is then left as it was). */
static bool set_place(struct afd_idmap *m, struct afd_idnode **np,
		      const struct afd_idrec *want)
{
	struct afd_idnode *n = *np;
	const char *name = want->name ? want->name : "";
	if (n->r.parent == want->parent && strcmp(n->r.name, name) == 0)
		return true;
	struct afd_idrec r = n->r;
	r.parent = want->parent;
	r.name = name;
	struct afd_idnode *fresh = node_new(&r);
	if (!fresh)
		return false;
	remove_node(m, n);
	add_node(m, fresh);
	*np = fresh;
	return true;
}

int afd_idmap_issue(struct afd_idmap *m, const struct afd_idrec *want,
		    uint64_t *id, uint32_t *gen)
{
	uint64_t ik = ident_key(want);
	struct afd_idnode *n = find_ident(m, want, ik);
	if (n && n->r.dev == want->dev && n->r.ino == want->ino) {
		if (!set_place(m, &n, want))
			return -ENOMEM;
		lru_unlink(m, n);
		lru_push(m, n);
		*id = n->r.id;
		*gen = n->r.gen;
		return 0;
	}
	if (m->next_id == UINT64_MAX)
		return -ENOSPC;   /* 2^64 lookups: not in this universe */
	struct afd_idrec r = *want;
	r.id = m->next_id;
	r.gen = m->gen;
	struct afd_idnode *fresh = node_new(&r);
	if (!fresh)
		return -ENOMEM;
	if (n)
		remove_node(m, n);   /* the identity names another file now */
	add_node(m, fresh);
	m->next_id++;
	*id = r.id;
	*gen = r.gen;
	return 0;
}

const struct afd_idrec *afd_idmap_find(struct afd_idmap *m, uint64_t id)
{
	struct afd_idnode *n = find_id(m, id);
	if (!n)
		return NULL;
	lru_unlink(m, n);
	lru_push(m, n);
	return &n->r;
}

void afd_idmap_touch(struct afd_idmap *m, uint64_t id)
{
	(void)afd_idmap_find(m, id);
}

void afd_idmap_drop(struct afd_idmap *m, uint64_t id)
{
	struct afd_idnode *n = find_id(m, id);
	if (n)
		remove_node(m, n);
}

bool afd_idmap_path_ok(const char *path, size_t len)
{
	if (len == 0 || memchr(path, '\0', len))
		return false;
	if (len == 1 && path[0] == '.')
		return true;
	size_t start = 0;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && path[i] != '/')
			continue;
		size_t cl = i - start;
		if (cl == 0 || cl > 255 ||
		    (cl == 1 && path[start] == '.') ||
		    (cl == 2 && path[start] == '.' && path[start + 1] == '.'))
			return false;
		start = i + 1;
	}
	return true;
}

const struct afd_idrec *afd_idmap_first(const struct afd_idmap *m,
					const void **it)
{
	*it = m->oldest;
	return m->oldest ? &m->oldest->r : NULL;
}

const struct afd_idrec *afd_idmap_next(const void **it)
{
	const struct afd_idnode *n = *it;
	n = n ? n->newer : NULL;
	*it = n;
	return n ? &n->r : NULL;
}
