/* SPDX-License-Identifier: MIT */
/* The folder tree of an npz archive, from member names only. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "npz_tree.h"

static uint64_t hkey(const char *s, size_t n)
{
	return afd_hash_mix(afd_hash_bytes(AFD_FNV_SEED, s, n));
}

long afd_npz_tree_dir(const struct afd_npz_tree *t, const char *prefix,
		      size_t len)
{
	if (!t->nslots)
		return -1;
	size_t mask = t->nslots - 1;
	for (size_t i = hkey(prefix, len) & mask;; i = (i + 1) & mask) {
		uint32_t s = t->slots[i];
		if (s == 0)
			return -1;
		const char *p = t->dirs[s - 1].path;
		if (strlen(p) == len && memcmp(p, prefix, len) == 0)
			return (long)(s - 1);
	}
}

static void slot_put(uint32_t *slots, size_t nslots, uint64_t h, uint32_t v)
{
	size_t mask = nslots - 1;
	size_t i = h & mask;
	while (slots[i])
		i = (i + 1) & mask;
	slots[i] = v;
}

static int rehash(struct afd_npz_tree *t, size_t nslots)
{
	uint32_t *s = calloc(nslots, sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < t->ndirs; i++)
		slot_put(s, nslots, hkey(t->dirs[i].path, strlen(t->dirs[i].path)),
			 (uint32_t)(i + 1));
	free(t->slots);
	t->slots = s;
	t->nslots = nslots;
	return 0;
}

static int add_child(struct afd_npz_dir *d, const char *name, size_t len,
		     long member)
{
	if (d->nkids == d->cap) {
		size_t nc = d->cap ? d->cap * 2 : 8;
		struct afd_npz_child *k = realloc(d->kids, nc * sizeof(*k));
		if (!k)
			return -ENOMEM;
		d->kids = k;
		d->cap = nc;
	}
	char *copy = strndup(name, len);
	if (!copy)
		return -ENOMEM;
	d->kids[d->nkids++] = (struct afd_npz_child){ copy, member };
	if (member < 0)
		d->nsubdirs++;
	return 0;
}

/* The folder for prefix [0, len) (ending in '/', or empty), made on demand
 * together with its parents. Returns its index or -ENOMEM. */
static long ensure_dir(struct afd_npz_tree *t, const char *name, size_t len)
{
	long have = afd_npz_tree_dir(t, name, len);
	if (have >= 0)
		return have;
	long parent = -1;
	size_t base = 0;
	if (len > 0) {
		/* parent prefix: up to the '/' before the last component */
		size_t p = len - 1;
		while (p > 0 && name[p - 1] != '/')
			p--;
		parent = ensure_dir(t, name, p);
		if (parent < 0)
			return parent;
		base = p;
	}
	if (t->ndirs == t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 16;
		struct afd_npz_dir *d = realloc(t->dirs, nc * sizeof(*d));
		if (!d)
			return -ENOMEM;
		t->dirs = d;
		t->cap = nc;
	}
	struct afd_npz_dir *d = &t->dirs[t->ndirs];
	memset(d, 0, sizeof(*d));
	d->path = strndup(name, len);
	if (!d->path)
		return -ENOMEM;
	long idx = (long)t->ndirs++;
	if (t->ndirs * 2 > t->nslots) {
		if (rehash(t, t->nslots ? t->nslots * 2 : 64) < 0)
			return -ENOMEM;
	} else {
		slot_put(t->slots, t->nslots, hkey(name, len), (uint32_t)(idx + 1));
	}
	if (parent >= 0 &&
	    add_child(&t->dirs[parent], name + base, len - base - 1, -1) < 0)
		return -ENOMEM;
	return idx;
}

static bool parts_fit(const char *name)
{
	size_t run = 0;
	for (const char *p = name; *p; p++) {
		run = *p == '/' ? 0 : run + 1;
		if (run > NAME_MAX)
			return false;
	}
	return true;
}

int afd_npz_tree_build(struct afd_npz_tree *t, const af_zip *z, size_t *skipped)
{
	memset(t, 0, sizeof(*t));
	*skipped = 0;
	if (ensure_dir(t, "", 0) < 0)
		goto nomem;
	size_t n = af_zip_count(z);
	for (size_t i = 0; i < n; i++) {
		const af_zip_entry *e = af_zip_entry_at(z, i);
		size_t len = strlen(e->name);
		if (!parts_fit(e->name)) {
			(*skipped)++;
			continue;
		}
		if (e->is_dir || (len && e->name[len - 1] == '/')) {
			if (ensure_dir(t, e->name, len) < 0)
				goto nomem;
			continue;
		}
		const char *slash = strrchr(e->name, '/');
		size_t plen = slash ? (size_t)(slash - e->name) + 1 : 0;
		if (plen == len)
			continue;
		long d = ensure_dir(t, e->name, plen);
		if (d < 0)
			goto nomem;
		/* a member shadowed by a folder of the same name stays hidden:
		 * lookup prefers the folder, so list it once */
		if (len + 1 < len)
			continue;
		char *as_dir = malloc(len + 2);
		if (!as_dir)
			goto nomem;
		memcpy(as_dir, e->name, len);
		as_dir[len] = '/';
		long clash = afd_npz_tree_dir(t, as_dir, len + 1);
		free(as_dir);
		if (clash >= 0)
			continue;
		if (add_child(&t->dirs[d], e->name + plen, len - plen, (long)i) < 0)
			goto nomem;
	}
	return 0;
nomem:
	afd_npz_tree_free(t);
	return -ENOMEM;
}

void afd_npz_tree_free(struct afd_npz_tree *t)
{
	for (size_t i = 0; i < t->ndirs; i++) {
		for (size_t k = 0; k < t->dirs[i].nkids; k++)
			free(t->dirs[i].kids[k].name);
		free(t->dirs[i].kids);
		free(t->dirs[i].path);
	}
	free(t->dirs);
	free(t->slots);
	memset(t, 0, sizeof(*t));
}
