/* SPDX-License-Identifier: MIT */
/* `.zarr/` nodes: lookup, resolve, texts and listings (zarr_group_nodes.h). */
#include "zarr_group_nodes.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "hash.h"
#include "nodes.h"
#include "path.h"
#include "zarr_store.h"

/* the group's own files, in listing order (byte order of names) */
static const struct {
	const char *name;
	enum afd_entry e;
	af_zarr_group_file f;
} group_files[] = {
	{ ".zattrs", AE_ZG_ZATTRS, AF_ZG_ZATTRS },
	{ ".zgroup", AE_ZG_ZGROUP, AF_ZG_ZGROUP },
	{ "zarr.json", AE_ZG_ZJSON, AF_ZG_ZARR_JSON },
};
#define NGROUP_FILES (sizeof(group_files) / sizeof(group_files[0]))
static const char zmeta_name[] = ".zmetadata";

bool afd_zarr_group_kind(enum afd_nkind k)
{
	return k == NK_ZGROUP || k == NK_ZGFILE || k == NK_ZGARRAY ||
	       k == NK_ZGAFILE;
}

enum afd_entry afd_zarr_group_store_entry(enum afd_entry e)
{
	switch (e) {
	case AE_ZGA: return AE_ZARR;
	case AE_ZGA_ZARRAY: return AE_ZARRAY;
	case AE_ZGA_ZATTRS: return AE_ZATTRS;
	case AE_ZGA_ZJSON: return AE_ZJSON;
	case AE_ZGA_ZCHUNK: return AE_ZCHUNK;
	default: return e;
	}
}

static enum afd_entry group_entry_of_store(enum afd_entry e)
{
	switch (e) {
	case AE_ZARRAY: return AE_ZGA_ZARRAY;
	case AE_ZATTRS: return AE_ZGA_ZATTRS;
	case AE_ZJSON: return AE_ZGA_ZJSON;
	default: return AE_ZGA_ZCHUNK;
	}
}

uint64_t afd_zarr_group_doc_key(const char *doc, size_t len)
{
	uint64_t k = afd_hash_mix(afd_hash_bytes(AFD_FNV_SEED, doc, len));
	return k ? k : 1;
}

/* A child array's key from its identity: the leaf of its member or path,
 * whole (sub bit 0 set) or without .npy/.ra, as the model gave it. */
static const char *key_of(const struct afd_id *id, uint64_t full,
			  size_t *len)
{
	const char *whole = id->member ? id->member : id->path;
	const char *leaf = strrchr(whole, '/');
	leaf = leaf ? leaf + 1 : whole;
	*len = full ? strlen(leaf) : af_array_name_base_len(leaf);
	return leaf;
}

af_status afd_zarr_group_text(const struct afd_id *id, const struct afd_arrinfo *ai,
		      char **out, size_t *len)
{
	af_error err;
	af_error_clear(&err);
	if (id->kind == NK_ZGFILE) {
		for (size_t i = 0; i < NGROUP_FILES; i++)
			if (group_files[i].e == id->entry)
				return af_zarr_group_text(group_files[i].f, out,
							  len, &err);
		return AF_E_INVAL;
	}
	const af_zarr_layout *l = ai ? afd_zarr_layout(&ai->zarr) : NULL;
	if (id->kind != NK_ZGAFILE || !l)
		return AF_E_INVAL;
	af_zarr_file f = id->entry == AE_ZGA_ZARRAY ? AF_ZARR_ZARRAY :
			 id->entry == AE_ZGA_ZATTRS ? AF_ZARR_ZATTRS :
			 id->entry == AE_ZGA_ZJSON ? AF_ZARR_ZARR_JSON : 0;
	if (!f)
		return AF_E_INVAL;
	size_t klen;
	const char *key = key_of(id, id->sub & 1, &klen);
	return af_zarr_group_array_text(l, f, key, klen, out, len, &err);
}

/* Size (and .zmetadata's version) of group file @p id. */
static int size_group_file(struct afd_ctx *c, const struct afd_id *id,
			   struct afd_res *r)
{
	char *text = NULL;
	size_t len = 0;
	if (id->entry == AE_ZG_ZMETA) {
		uint64_t gen;
		int rc = afd_zarr_group_zmetadata(c, id->path, id->member, &text,
					      &len, &gen);
		if (rc < 0)
			return rc;
		r->zkey = afd_zarr_group_doc_key(text, len);
		r->zsize = len;
		/* the open that follows a lookup reads this one */
		afd_zarr_group_zmetadata_keep(c, id->path, id->member, text, len,
					      gen);
		return 0;
	}
	if (afd_zarr_group_text(id, NULL, &text, &len) != AF_OK)
		return -ENOMEM;
	free(text);
	r->zsize = len;
	return 0;
}

void afd_zarr_group_base(const struct afd_id *id, struct afd_id *base)
{
	memset(base, 0, sizeof(*base));
	base->path = id->path;
	base->member = id->member;
	base->name = id->name;
	if (id->kind == NK_ZGROUP || id->kind == NK_ZGFILE) {
		base->kind = id->member ? NK_NPZDIR : NK_DIR;
		base->entry = AE_NONE;
		return;
	}
	/* a child array is its B.zarr/, its files B.zarr/'s */
	base->kind = id->kind == NK_ZGARRAY ? NK_ZARRDIR : NK_ZARRFILE;
	base->entry = afd_zarr_group_store_entry(id->entry);
	base->sub = id->entry == AE_ZGA_ZCHUNK ? id->sub : 0;
}

int afd_zarr_group_sized(struct afd_ctx *c, const struct afd_id *id,
			 struct afd_res *r)
{
	if (id->kind == NK_ZGFILE)
		return size_group_file(c, id, r);
	if (id->kind != NK_ZGAFILE || id->entry == AE_ZGA_ZCHUNK)
		return 0;
	char *text;
	size_t len;
	if (afd_zarr_group_text(id, r->ai, &text, &len) != AF_OK)
		return -ENOMEM;
	free(text);
	r->zsize = len;
	return 0;
}

static int set_group(struct afd_id *child, const char *path,
		     const char *prefix, uint64_t depth)
{
	child->kind = NK_ZGROUP;
	child->entry = AE_ZGROUP;
	child->sub = depth;
	child->path = strdup(path);
	child->member = prefix ? strdup(prefix) : NULL;
	return !child->path || (prefix && !child->member) ? -ENOMEM : 0;
}

int afd_zarr_group_hidden(const struct afd_node *parent, struct afd_id *child)
{
	return set_group(child, parent->path, parent->member, 0);
}

int afd_zarr_group_child(struct afd_ctx *c, const struct afd_node *parent,
			 const char *name, struct afd_id *child)
{
	for (size_t i = 0; i < NGROUP_FILES + 1; i++) {
		const char *fn = i < NGROUP_FILES ? group_files[i].name : zmeta_name;
		if (strcmp(name, fn) != 0)
			continue;
		child->kind = NK_ZGFILE;
		child->entry = i < NGROUP_FILES ? group_files[i].e : AE_ZG_ZMETA;
		child->path = strdup(parent->path);
		child->member = parent->member ? strdup(parent->member) : NULL;
		if (!child->path || (parent->member && !child->member))
			return -ENOMEM;
		return 0;
	}
	struct afd_zarr_folder *f;
	int rc = afd_zarr_folder_get(c, parent->path, parent->member, false, &f);
	if (rc < 0)
		return rc;
	const af_zarr_group_child *ch = af_zarr_group_find(&f->g, name,
							   strlen(name));
	uint64_t depth = parent->sub + 1;
	if (!ch) {
		rc = -ENOENT;
	} else if (!ch->is_array) {
		const struct afd_zarr_group_loc *l = f->e[ch->entry].folder;
		rc = set_group(child, l->path, l->prefix, depth);
	} else if ((rc = afd_zarr_folder_judge(c, f, ch)) < 0) {
		/* left out after all: its header read now */
	} else {
		const char *ename = f->e[ch->entry].name;
		child->kind = NK_ZGARRAY;
		child->entry = AE_ZGA;
		child->sub = depth << 1 | (ch->key_len == strlen(ename));
		if (f->loc.prefix) {
			child->path = strdup(f->loc.path);
			if (asprintf(&child->member, "%s%s", f->loc.prefix,
				     ename) < 0)
				child->member = NULL;
		} else {
			child->path = afd_path_join(f->loc.path, ename);
		}
		if (!child->path || (f->loc.prefix && !child->member))
			rc = -ENOMEM;
	}
	afd_zarr_folder_put(f);
	return rc;
}

int afd_zarr_group_array_child(const struct afd_node *parent,
			       const struct afd_arrinfo *ai, const char *name,
			       struct afd_id *child)
{
	enum afd_entry e;
	uint64_t sub;
	int rc = afd_zarr_name(&ai->zarr, name, &e, &sub);
	if (rc < 0)
		return rc;
	child->kind = NK_ZGAFILE;
	child->entry = group_entry_of_store(e);
	child->sub = e == AE_ZCHUNK ? sub : (parent->sub & 1);
	child->path = strdup(parent->path);
	child->member = parent->member ? strdup(parent->member) : NULL;
	if (!child->path || (parent->member && !child->member))
		return -ENOMEM;
	return 0;
}

void afd_zarr_group_looked_up(struct afd_id *child, const struct afd_res *r)
{
	/* `.zmetadata` is one document: its version the digest, its sub the
	 * length, so the node keeps its own size (nodes.h) */
	if (child->kind == NK_ZGFILE && child->entry == AE_ZG_ZMETA)
		child->sub = r->zsize;
}

bool afd_zarr_group_listed(const struct afd_zarr_folder *f, uint64_t depth, uint64_t i,
		   char key[NAME_MAX + 1], const char **name, uint64_t *ino,
		   unsigned char *dt)
{
	if (i < NGROUP_FILES) {
		*name = group_files[i].name;
		*ino = afd_ino_of(f->loc.path, f->loc.prefix, group_files[i].e);
		*dt = DT_REG;
		return true;
	}
	i -= NGROUP_FILES;
	if (i >= f->g.nchildren)
		return false;
	const af_zarr_group_child *ch = &f->g.children[i];
	const char *ename = f->e[ch->entry].name;
	enum afd_zarr_judged j = afd_zarr_folder_judged(f, ch);
	if (j == AFD_ZJ_LEFT) {
		*name = NULL;    /* a lookup found it is no child */
		return true;
	}
	/* the key: the name's first key_len bytes, listed NUL-terminated */
	size_t klen = ch->key_len < NAME_MAX ? ch->key_len : NAME_MAX;
	memcpy(key, ch->key, klen);
	key[klen] = '\0';
	*name = key;
	/* a header not read yet: the lookup says what it is */
	*dt = j == AFD_ZJ_CHILD ? DT_DIR : DT_UNKNOWN;
	if (!ch->is_array) {
		const struct afd_zarr_group_loc *l = f->e[ch->entry].folder;
		*ino = afd_ino_of_sub(l->path, l->prefix, AE_ZGROUP, depth + 1);
		return true;
	}
	uint64_t sub = (depth + 1) << 1 | (ch->key_len == strlen(ename));
	char buf[PATH_MAX];
	int n = f->loc.prefix ?
		snprintf(buf, sizeof(buf), "%s%s", f->loc.prefix, ename) :
		strcmp(f->loc.path, ".") == 0 ?
		snprintf(buf, sizeof(buf), "%s", ename) :
		snprintf(buf, sizeof(buf), "%s/%s", f->loc.path, ename);
	if (n < 0 || (size_t)n >= sizeof(buf))
		*ino = 2;   /* any number: the lookup gives the true one */
	else if (f->loc.prefix)
		*ino = afd_ino_of_sub(f->loc.path, buf, AE_ZGA, sub);
	else
		*ino = afd_ino_of_sub(buf, NULL, AE_ZGA, sub);
	return true;
}

bool afd_zarr_group_array_listed(const struct afd_zarrinfo *z, const char *path,
			 const char *member, uint64_t sub, uint64_t i,
			 af_zarr_entry *out, uint64_t *ino)
{
	if (!afd_zarr_listed(z, path, member, i, out, ino))
		return false;
	bool chunk = out->kind == AF_ZARR_CHUNK;
	enum afd_entry e = chunk ? AE_ZGA_ZCHUNK :
			   out->kind == AF_ZARR_ZARRAY ? AE_ZGA_ZARRAY :
			   out->kind == AF_ZARR_ZATTRS ? AE_ZGA_ZATTRS :
			   AE_ZGA_ZJSON;
	*ino = afd_ino_of_sub(path, member, e, chunk ? out->chunk : (sub & 1));
	return true;
}
