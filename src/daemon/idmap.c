/* SPDX-License-Identifier: MIT */
/* The id map (idmap.h): two hash indexes (by id, by identity) over records
 * packed in mapped segments, oldest segment first: the order of the
 * records is their LRU order. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "hash.h"
#include "idmap.h"
#include "segmap.h"

#define IDMAP_MIN_BUCKETS 256u
#define ROOT_ID 1u

/* A record in a segment. `span` is its slot's bytes (a multiple of 8),
 * with bit 0 set while it is live; dead slots wait for their segment. */
struct afd_idnode {
	struct afd_idrec r;
	struct afd_idnode *id_next, *ik_next;
	uint32_t ikey;         /* the identity's hash (buckets never pass 2^25) */
	uint32_t span;
	char strs[];
};

/* A segment: AFD_IDMAP_SEG bytes aligned to their size, slots after the
 * header up to `used`. */
struct afd_idseg {
	struct afd_idseg *older, *newer;
	size_t used;           /* bytes of slots written, from slots[0] */
	size_t live;           /* live slots */
	size_t scan;           /* no live slot before this offset */
	_Alignas(8) unsigned char slots[];
};

#define SEG_ROOM (AFD_IDMAP_SEG - sizeof(struct afd_idseg))

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

/* Zeroed memory of its own mapping (returned whole by unmap_len). */
static void *map_len(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void unmap_len(void *p, size_t len)
{
	if (p)
		munmap(p, len);
}

/* Bucket arrays are mapped too: after the node table's big arrays were
 * freed, glibc serves arrays this size from the heap. */
static struct afd_idnode **buckets_new(size_t nb)
{
	return map_len(nb * sizeof(struct afd_idnode *));
}

int afd_idmap_init(struct afd_idmap *m, size_t max, uint32_t gen)
{
	memset(m, 0, sizeof(*m));
	m->max = max ? max : AFD_IDMAP_MAX_DEFAULT;
	if (m->max > AFD_IDMAP_MAX_LIMIT)
		m->max = AFD_IDMAP_MAX_LIMIT;
	m->nbuckets = IDMAP_MIN_BUCKETS;
	m->by_id = buckets_new(m->nbuckets);
	m->by_ident = buckets_new(m->nbuckets);
	if (!m->by_id || !m->by_ident) {
		unmap_len(m->by_id, m->nbuckets * sizeof(*m->by_id));
		unmap_len(m->by_ident, m->nbuckets * sizeof(*m->by_ident));
		memset(m, 0, sizeof(*m));
		return -ENOMEM;
	}
	m->next_id = ROOT_ID + 1;
	m->gen = gen ? gen : 1;
	return 0;
}

void afd_idmap_destroy(struct afd_idmap *m)
{
	struct afd_idseg *s = m->oldest;
	while (s) {
		struct afd_idseg *next = s->newer;
		unmap_len(s, AFD_IDMAP_SEG);
		s = next;
	}
	unmap_len(m->spare, AFD_IDMAP_SEG);
	unmap_len(m->by_id, m->nbuckets * sizeof(*m->by_id));
	unmap_len(m->by_ident, m->nbuckets * sizeof(*m->by_ident));
	memset(m, 0, sizeof(*m));
}

/* Bytes the strings of @p r take (NULs included). */
static size_t strs_len(const struct afd_idrec *r)
{
	return strlen(r->path) + 1 + (r->member ? strlen(r->member) + 1 : 0) +
	       strlen(r->name ? r->name : "") + 1;
}

static struct afd_idseg *seg_of(const struct afd_idnode *n)
{
	return (struct afd_idseg *)((uintptr_t)n & ~(uintptr_t)(AFD_IDMAP_SEG - 1));
}

/* A new segment, aligned to its size (so that seg_of works), linked as
 * the newest. */
static struct afd_idseg *seg_new(struct afd_idmap *m)
{
	struct afd_idseg *s = m->spare;
	if (s) {
		m->spare = NULL;
		memset(s, 0, sizeof(*s));
	} else {
		s = afd_seg_map(AFD_IDMAP_SEG);
		if (!s)
			return NULL;
	}
	s->older = m->newest;
	if (m->newest)
		m->newest->newer = s;
	else
		m->oldest = s;
	m->newest = s;
	m->seg_bytes += AFD_IDMAP_SEG;
	return s;
}

static void seg_free(struct afd_idmap *m, struct afd_idseg *s)
{
	if (s->older)
		s->older->newer = s->newer;
	else
		m->oldest = s->newer;
	if (s->newer)
		s->newer->older = s->older;
	else
		m->newest = s->older;
	m->seg_bytes -= AFD_IDMAP_SEG;
	/* one kept for the next: a map at its bound frees and takes one
	 * every few hundred records, and fresh pages fault */
	if (!m->spare)
		m->spare = s;
	else
		unmap_len(s, AFD_IDMAP_SEG);
}

/* The first live slot of @p s at or after offset @p off, or NULL. */
static struct afd_idnode *seg_live_from(const struct afd_idseg *s, size_t off)
{
	while (off < s->used) {
		struct afd_idnode *n = (struct afd_idnode *)(s->slots + off);
		if (n->span & 1u)
			return n;
		off += n->span;
	}
	return NULL;
}

static size_t slot_off(const struct afd_idnode *n)
{
	return (size_t)((const unsigned char *)n - seg_of(n)->slots);
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
		if (n->ikey == (uint32_t)ik && same_ident(&n->r, want))
			return n;
	return NULL;
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

/* Unlink @p n and mark its slot dead; a segment left with no live slot
 * is unmapped, but the newest, which is only emptied for reuse. */
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
	n->span &= ~1u;
	m->count--;
	m->dirty = true;
	struct afd_idseg *s = seg_of(n);
	if (--s->live > 0)
		return;
	if (s == m->newest)
		s->used = s->scan = 0;
	else
		seg_free(m, s);
}

/* Drop the least recently used record. */
static void evict_oldest(struct afd_idmap *m)
{
	struct afd_idseg *s = m->oldest;
	while (s && s->live == 0)   /* only the newest can be empty */
		s = s->newer;
	if (!s)
		return;
	struct afd_idnode *n = seg_live_from(s, s->scan);
	s->scan = slot_off(n) + (n->span & ~1u);
	remove_node(m, n);
}

/* Drop every record of the oldest segment (it is then unmapped). */
static void evict_segment(struct afd_idmap *m)
{
	struct afd_idseg *s = m->oldest;
	if (s == m->newest)
		return;
	struct afd_idnode *n = seg_live_from(s, s->scan);
	while (n) {
		size_t next = slot_off(n) + (n->span & ~1u);
		bool last = s->live == 1;
		remove_node(m, n);    /* the last one unmaps s */
		if (last)
			return;
		n = seg_live_from(s, next);
	}
	if (!n)
		seg_free(m, s);   /* dead slots only: not left so, but cheap to say */
}

/* Double the buckets past a load of 1; a failed resize is harmless. */
static void maybe_grow(struct afd_idmap *m)
{
	if (m->count < m->nbuckets)
		return;
	size_t nb = m->nbuckets * 2;
	struct afd_idnode **id = buckets_new(nb);
	struct afd_idnode **ik = buckets_new(nb);
	if (!id || !ik) {
		unmap_len(id, nb * sizeof(*id));
		unmap_len(ik, nb * sizeof(*ik));
		return;
	}
	unmap_len(m->by_id, m->nbuckets * sizeof(*m->by_id));
	unmap_len(m->by_ident, m->nbuckets * sizeof(*m->by_ident));
	m->by_id = id;
	m->by_ident = ik;
	m->nbuckets = nb;
	for (struct afd_idseg *s = m->oldest; s; s = s->newer)
		for (struct afd_idnode *n = seg_live_from(s, s->scan); n;
		     n = seg_live_from(s, slot_off(n) + (n->span & ~1u)))
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

/*
 * Keep a copy of @p r (identity hash @p ik) as the most recent record,
 * evicting past the bounds. @p r must not point into the map (eviction
 * may unmap it).
 * Returns 0, 1 when the record is too big to keep (nothing kept), or
 * -ENOMEM.
 */
static int add_rec(struct afd_idmap *m, const struct afd_idrec *r,
		   uint64_t ik, struct afd_idnode **out)
{
	size_t span = (sizeof(struct afd_idnode) + strs_len(r) + 7) & ~(size_t)7;
	if (span > SEG_ROOM)
		return 1;
	while (m->oldest && m->count >= m->max)
		evict_oldest(m);
	struct afd_idseg *s = m->newest;
	if (!s || SEG_ROOM - s->used < span) {
		while (m->oldest && m->oldest != m->newest &&
		       m->seg_bytes + AFD_IDMAP_SEG > AFD_IDMAP_BYTES)
			evict_segment(m);
		s = m->newest;
		if (!s || SEG_ROOM - s->used < span)
			s = seg_new(m);
		if (!s)
			return -ENOMEM;
	}
	struct afd_idnode *n = (struct afd_idnode *)(s->slots + s->used);
	memset(n, 0, sizeof(*n));
	copy_rec(&n->r, n->strs, r);
	n->ikey = (uint32_t)ik;
	n->span = (uint32_t)span | 1u;
	s->used += span;
	s->live++;
	hash_link(m, n);
	m->count++;
	m->dirty = true;
	maybe_grow(m);
	if (out)
		*out = n;
	return 0;
}

int afd_idmap_insert(struct afd_idmap *m, const struct afd_idrec *r)
{
	if (r->id <= ROOT_ID || !r->path)
		return -EINVAL;
	struct afd_idnode *old = find_id(m, r->id);
	if (old)
		remove_node(m, old);
	uint64_t ik = ident_key(r);
	old = find_ident(m, r, ik);
	if (old)
		remove_node(m, old);
	int rc = add_rec(m, r, ik, NULL);
	if (rc < 0)
		return rc;
	if (r->id >= m->next_id)
		m->next_id = r->id + 1;
	return 0;
}

/*
 * Whether @p n is recent enough to stay where it is: the most recent
 * record, or, in a map bound to IDMAP_LOOSE_MIN records or more, any
 * record of the newest segment. A lookup touches its parent, so a
 * folder read child by child was copied once a child, each copy leaving
 * a dead slot that kept its segment mapped (10,000 arrays read through
 * `.zarr/`: 4.9 MB of segments for 2.7 MB of records); now it is copied
 * once a segment. The order within the newest segment (a few hundred
 * records of the 65,536) is then only roughly by last use; a smaller
 * map (tests) keeps the exact order.
 */
#define IDMAP_LOOSE_MIN 16384u
static bool is_recent(const struct afd_idmap *m, const struct afd_idnode *n)
{
	const struct afd_idseg *s = seg_of(n);
	if (s != m->newest)
		return false;
	return m->max >= IDMAP_LOOSE_MIN ||
	       slot_off(n) + (n->span & ~1u) == s->used;
}

/* Make *@p np the most recent record, with parent/name from @p place (NULL:
 * as they are): a copy at the newest end, the old slot dead. Parent and
 * name may differ for one identity only in how it was reached (a
 * hard-linked folder is not one: paths are the identity); the latest is
 * kept. Returns false on ENOMEM (the record is then gone). */
static bool move_newest(struct afd_idmap *m, struct afd_idnode **np,
			const struct afd_idrec *place)
{
	struct afd_idnode *n = *np;
	const char *name = place && place->name ? place->name : "";
	bool same = !place || (n->r.parent == place->parent &&
			       strcmp(n->r.name, name) == 0);
	if (same && is_recent(m, n))
		return true;
	struct afd_idrec r = n->r;
	if (!same) {
		r.parent = place->parent;
		r.name = name;
	}
	/* a copy outside the map (adding may unmap the old slot's segment);
	 * on the stack for the usual short paths: a lookup touches two */
	_Alignas(8) char local[512];
	size_t need = sizeof(struct afd_idrec) + strs_len(&r);
	struct afd_idrec *copy = (struct afd_idrec *)(void *)local;
	if (need <= sizeof(local))
		copy_rec(copy, local + sizeof(*copy), &r);
	else if (!(copy = afd_idrec_dup(&r)))
		return false;
	uint32_t ik = n->ikey;   /* the same identity: the bucket bits suffice */
	remove_node(m, n);
	int rc = add_rec(m, copy, ik, np);
	if (copy != (struct afd_idrec *)(void *)local)
		free(copy);
	return rc == 0;
}

int afd_idmap_issue(struct afd_idmap *m, const struct afd_idrec *want,
		    uint64_t *id, uint32_t *gen)
{
	uint64_t ik = ident_key(want);
	struct afd_idnode *n = find_ident(m, want, ik);
	if (n && n->r.dev == want->dev && n->r.ino == want->ino) {
		*id = n->r.id;
		*gen = n->r.gen;
		return move_newest(m, &n, want) ? 0 : -ENOMEM;
	}
	if (m->next_id == UINT64_MAX)
		return -ENOSPC;   /* 2^64 lookups: not in this universe */
	struct afd_idrec r = *want;
	r.id = m->next_id;
	r.gen = m->gen;
	if (n)
		remove_node(m, n);   /* the identity names another file now */
	int rc = add_rec(m, &r, ik, NULL);
	if (rc < 0)
		return rc;
	m->next_id++;
	*id = r.id;
	*gen = r.gen;
	return 0;
}

const struct afd_idrec *afd_idmap_find(struct afd_idmap *m, uint64_t id)
{
	struct afd_idnode *n = find_id(m, id);
	if (!n || !move_newest(m, &n, NULL))
		return NULL;
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

/* The first live record from segment @p s on, or NULL. */
static const struct afd_idnode *live_from_seg(const struct afd_idseg *s)
{
	for (; s; s = s->newer) {
		const struct afd_idnode *n = seg_live_from(s, s->scan);
		if (n)
			return n;
	}
	return NULL;
}

const struct afd_idrec *afd_idmap_first(const struct afd_idmap *m,
					const void **it)
{
	const struct afd_idnode *n = live_from_seg(m->oldest);
	*it = n;
	return n ? &n->r : NULL;
}

const struct afd_idrec *afd_idmap_next(const void **it)
{
	const struct afd_idnode *n = *it;
	if (n) {
		const struct afd_idseg *s = seg_of(n);
		const struct afd_idnode *next =
			seg_live_from(s, slot_off(n) + (n->span & ~1u));
		n = next ? next : live_from_seg(s->newer);
	}
	*it = n;
	return n ? &n->r : NULL;
}
