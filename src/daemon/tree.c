/* SPDX-License-Identifier: MIT */
/* Resolving nodes against their sources; lookup of names; attributes. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctx.h"
#include "path.h"
#include "stackdir.h"
#include "tree.h"
#include "zarr_store.h"
#include "zarr_group_nodes.h"

static const char *const entry_fixed[AE_COUNT] = {
	[AE_DATA] = "data", [AE_SHAPE] = "shape", [AE_DTYPE] = "dtype",
	[AE_HEADER] = "header", [AE_HDR] = "data.hdr", [AE_NAMES] = "names",
};

/* the entries named B + a suffix */
static const char *const entry_suffix[AE_COUNT] = {
	[AE_NPY] = ".npy", [AE_RA] = ".ra", [AE_NHDR] = ".nhdr",
	[AE_ZARR] = ".zarr",
};

struct afd_id afd_id_of(const struct afd_node *n)
{
	return (struct afd_id){ n->kind, n->entry, (char *)n->path, n->member,
				afd_node_name(n), n->sub };
}

bool afd_entry_is_text(enum afd_entry e)
{
	switch (e) {
	case AE_SHAPE: case AE_DTYPE: case AE_HEADER: case AE_HDR: case AE_NHDR:
	case AE_ZARRAY: case AE_ZATTRS: case AE_ZJSON: case AE_NAMES:
	case AE_ZG_ZGROUP: case AE_ZG_ZATTRS: case AE_ZG_ZJSON: case AE_ZG_ZMETA:
	case AE_ZGA_ZARRAY: case AE_ZGA_ZATTRS: case AE_ZGA_ZJSON:
		return true;
	default:
		return false;
	}
}

void afd_id_free(struct afd_id *id)
{
	free(id->path);
	free(id->member);
	id->path = id->member = NULL;
}

const char *afd_array_dirname(const struct afd_node *n)
{
	/* `.stack/` is an array directory with B = stack */
	const char *name = afd_node_name(n);
	if (n->kind == NK_ARRAY && strcmp(name, AFD_STACK_NAME) == 0)
		return AFD_STACK_NAME + 1;
	if (name[0])
		return name;
	const char *s = strrchr(n->path, '/');
	return s ? s + 1 : n->path;
}

char *afd_entry_name(const char *dirname, enum afd_entry e)
{
	if (e < AE_COUNT && entry_fixed[e])
		return strdup(entry_fixed[e]);
	if (e >= AE_COUNT || !entry_suffix[e])
		return NULL;
	/* B = the folder name without its .npy / .ra extension */
	size_t n = af_array_name_base_len(dirname);
	char *out = NULL;
	if (asprintf(&out, "%.*s%s", (int)n, dirname, entry_suffix[e]) < 0)
		return NULL;
	return out;
}

enum afd_entry afd_entry_of(const char *dirname, const char *name)
{
	for (int k = AE_DATA; k < AE_COUNT; k++)
		if (entry_fixed[k] && strcmp(entry_fixed[k], name) == 0)
			return (enum afd_entry)k;
	size_t b = af_array_name_base_len(dirname);
	if (strncmp(name, dirname, b) != 0)
		return AE_NONE;
	for (int k = AE_DATA; k < AE_COUNT; k++)
		if (entry_suffix[k] && strcmp(name + b, entry_suffix[k]) == 0)
			return (enum afd_entry)k;
	return AE_NONE;
}

void afd_res_release(struct afd_res *r)
{
	afd_src_put(r->sf);
	afd_stack_put(r->stk);
	r->sf = NULL;
	r->stk = NULL;
}

/* A node under `.stack/`: the current stack of its folder. */
static int resolve_stack(struct afd_ctx *c, const struct afd_id *id,
			 bool watched, struct afd_res *r)
{
	int rc = afd_stack_get(c, id, watched, &r->stk);
	if (rc < 0)
		return rc;
	r->ai = &r->stk->arr;
	r->st = r->stk->st;
	return 0;
}

/*
 * lstat of a mirrored path. The daemon's own mountpoint is an empty folder
 * with the source root's owner, mode and times: what is under it cannot be
 * seen without a lookup through the mount.
 */
static int stat_path(struct afd_ctx *c, const char *path, struct stat *st)
{
	int rc = afd_srcpath_stat(&c->root, path, st);
	if (rc != -EXDEV)
		return rc;
	if (fstat(c->root.fd, st) < 0)
		return -errno;
	st->st_mode = (st->st_mode & 07777) | S_IFDIR;
	st->st_nlink = 2;
	st->st_size = 0;
	return 0;
}

static int resolve_npz(struct afd_ctx *c, const struct afd_id *id,
		       struct afd_res *r)
{
	int rc = afd_src_get(c, id->path, NULL, NULL, &r->sf);
	if (rc < 0)
		return rc == -EINVAL ? -ENOENT : rc;
	r->st = r->sf->st;
	if (r->sf->kind != SK_NPZ)
		return -ENOENT;
	if (id->kind == NK_NPZDIR) {
		r->zdir = afd_npz_tree_dir(&r->sf->tree, id->member,
					strlen(id->member));
		return r->zdir >= 0 ? 0 : -ENOENT;
	}
	r->midx = afd_src_find(r->sf, id->member);
	if (r->midx < 0)
		return -ENOENT;
	const struct afd_minfo *mi = afd_src_member(c, r->sf, (size_t)r->midx);
	if (!mi)
		return -ENOMEM;
	if (id->kind == NK_MEMBER)
		return mi->state == MS_PLAIN ? 0 : -ENOENT;
	if (mi->state != MS_ARRAY)
		return -ENOENT;
	r->ai = &mi->arr;
	return 0;
}

static int resolve_zarr_group(struct afd_ctx *c, const struct afd_id *id,
			      int *fd_out, struct afd_res *r);

int afd_resolve(struct afd_ctx *c, const struct afd_id *id, int *fd_out,
		struct afd_res *r)
{
	memset(r, 0, sizeof(*r));
	r->midx = r->zdir = -1;
	if (fd_out)
		*fd_out = -1;
	int rc = 0;
	if (afd_zarr_group_kind(id->kind))
		return resolve_zarr_group(c, id, fd_out, r);
	switch (id->kind) {
	case NK_DIR:
	case NK_FILE:
	case NK_LINK:
		rc = stat_path(c, id->path, &r->st);
		if (rc < 0)
			return rc;
		if (id->kind == NK_DIR && !S_ISDIR(r->st.st_mode))
			return -ENOENT;
		if (id->kind == NK_LINK && !S_ISLNK(r->st.st_mode))
			return -ENOENT;
		if (id->kind == NK_FILE &&
		    (S_ISDIR(r->st.st_mode) || S_ISLNK(r->st.st_mode)))
			return -ENOENT;
		return 0;
	case NK_NPZDIR:
	case NK_MEMBER:
		rc = resolve_npz(c, id, r);
		break;
	case NK_ARRAY:
	case NK_ENTRY:
	case NK_ZARRDIR:
	case NK_ZARRFILE:
		if (afd_stack_id(id)) {
			rc = resolve_stack(c, id, false, r);
			break;
		}
		if (id->member) {
			rc = resolve_npz(c, id, r);
			break;
		}
		rc = afd_src_get(c, id->path, NULL, fd_out, &r->sf);
		if (rc < 0)
			return rc == -EINVAL ? -ENOENT : rc;
		r->st = r->sf->st;
		if (r->sf->kind != SK_ARRAY)
			rc = -ENOENT;
		else
			r->ai = &r->sf->arr;
		break;
	case NK_ZGROUP:
	case NK_ZGFILE:
	case NK_ZGARRAY:
	case NK_ZGAFILE:
		break;   /* resolved above */
	}
	if (rc == 0 && (id->kind == NK_ENTRY || id->kind == NK_ZARRDIR) &&
	    !afd_arrinfo_has(r->ai, id->entry))
		rc = -ENOENT;
	if (rc == 0 && id->kind == NK_ZARRFILE &&
	    !afd_zarr_has(&r->ai->zarr, id->entry, id->sub))
		rc = -ENOENT;
	if (rc < 0) {
		afd_res_release(r);
		if (fd_out && *fd_out >= 0) {
			close(*fd_out);
			*fd_out = -1;
		}
	}
	return rc;
}

/* A `.zarr/` node: its base identity resolved, then sized (zarr_group_nodes.h). */
static int resolve_zarr_group(struct afd_ctx *c, const struct afd_id *id,
			      int *fd_out, struct afd_res *r)
{
	struct afd_id base;
	afd_zarr_group_base(id, &base);
	int rc = afd_resolve(c, &base, fd_out, r);
	if (rc == 0)
		rc = afd_zarr_group_sized(c, id, r);
	if (rc < 0)
		afd_res_release(r);
	return rc;
}

/*
 * `.zarr` in folder @p parent, which has no source entry of that name:
 * its group. Returns as afd_lookup, -ENOENT for any other name.
 */
static int lookup_zarr_group(struct afd_ctx *c, const struct afd_node *parent,
			     const char *name, struct afd_id *child,
			     struct afd_res *r)
{
	if (strcmp(name, AFD_ZARR_GROUP_NAME) != 0)
		return -ENOENT;
	afd_id_free(child);
	int rc = afd_zarr_group_hidden(parent, child);
	return rc < 0 ? rc : afd_resolve(c, child, NULL, r);
}

/* A name in a group (NK_ZGROUP) or in a child array's folder (NK_ZGARRAY). */
static int lookup_in_zarr_group(struct afd_ctx *c,
				const struct afd_node *parent,
				const char *name, struct afd_id *child,
				struct afd_res *r)
{
	int rc;
	if (parent->kind == NK_ZGROUP) {
		rc = afd_zarr_group_child(c, parent, name, child);
	} else {
		struct afd_id self = afd_id_of(parent);
		rc = afd_resolve(c, &self, NULL, r);
		if (rc == 0)
			rc = afd_zarr_group_array_child(parent, r->ai, name,
							child);
		afd_res_release(r);
	}
	if (rc == 0)
		rc = afd_resolve(c, child, NULL, r);
	if (rc == 0)
		afd_zarr_group_looked_up(child, r);
	return rc;
}

void afd_attr(struct afd_ctx *c, const struct afd_id *id,
	      const struct afd_res *r, struct stat *out)
{
	const struct stat *s = &r->st;
	mode_t perm = s->st_mode & 07777 & ~(mode_t)0222;
	memset(out, 0, sizeof(*out));
	out->st_ino = afd_ino_of_sub(id->path, id->member, id->entry, id->sub);
	out->st_uid = c->opts.uid >= 0 ? (uid_t)c->opts.uid : s->st_uid;
	out->st_gid = c->opts.gid >= 0 ? (gid_t)c->opts.gid : s->st_gid;
	out->st_atim = s->st_atim;
	out->st_mtim = s->st_mtim;
	out->st_ctim = s->st_ctim;
	out->st_blksize = 128 * 1024;
	out->st_nlink = 1;
	/* a folder made from a file: its read bits, and x wherever r is */
	mode_t rbits = s->st_mode & 0444;
	switch (id->kind) {
	case NK_DIR:
		out->st_mode = S_IFDIR | perm;
		out->st_size = s->st_size;
		break;
	case NK_FILE:
		out->st_mode = (s->st_mode & S_IFMT) | (perm & 0555);
		out->st_size = s->st_size;
		out->st_rdev = s->st_rdev;
		break;
	case NK_LINK:
		out->st_mode = S_IFLNK | 0777;
		out->st_size = s->st_size;
		break;
	case NK_ARRAY:
	case NK_ZARRDIR:
	case NK_ZGROUP:
	case NK_ZGARRAY:
		out->st_mode = S_IFDIR | rbits | (rbits >> 2);
		out->st_nlink = 2;
		break;
	case NK_ZGFILE:
		out->st_mode = S_IFREG | (rbits & 0444);
		out->st_size = (off_t)(id->entry == AE_ZG_ZMETA ? id->sub :
				       r->zsize);
		break;
	case NK_ZGAFILE:
		out->st_mode = S_IFREG | (rbits & 0444);
		out->st_size = (off_t)(id->entry == AE_ZGA_ZCHUNK ?
			afd_zarr_size(&r->ai->zarr, AE_ZCHUNK) : r->zsize);
		break;
	case NK_NPZDIR:
		out->st_mode = S_IFDIR | rbits | (rbits >> 2);
		out->st_nlink = 2;
		if (r->zdir >= 0)
			out->st_nlink += r->sf->tree.dirs[r->zdir].nsubdirs;
		break;
	case NK_MEMBER: {
		const af_zip_entry *e = af_zip_entry_at(r->sf->zip, (size_t)r->midx);
		out->st_mode = S_IFREG | (perm & 0555);
		out->st_size = (off_t)e->uncomp_size;
		break;
	}
	case NK_ENTRY:
		out->st_mode = S_IFREG | (perm & 0555);
		out->st_size = (off_t)(r->summed ? r->sum.size[id->entry] :
				       r->ai->size[id->entry]);
		break;
	case NK_ZARRFILE:
		out->st_mode = S_IFREG | (perm & 0555);
		out->st_size = (off_t)afd_zarr_size(&r->ai->zarr, id->entry);
		break;
	}
	out->st_blocks = (out->st_size + 511) / 512;
}

uint64_t afd_version_of(const struct afd_id *id, const struct afd_res *r)
{
	struct afd_ident ident;
	switch (id->kind) {
	case NK_FILE:
		afd_ident_of(&ident, &r->st);
		return afd_ident_key(id->path, &ident);
	case NK_ZGFILE:
		return r->zkey;
	case NK_MEMBER:
	case NK_ENTRY:
	case NK_ZARRFILE:
	case NK_ZGAFILE:
		if (r->summed)
			return r->sum.key;
		if (r->stk)
			return r->stk->key;
		return r->sf ? r->sf->key : 0;
	default:
		return 0;
	}
}

/* Child @p child of a folder is source file r->sf (an NK_FILE so far):
 * an array, an archive folder, or a file shown as it is. */
static int array_file(struct afd_id *child, struct afd_res *r)
{
	child->kind = NK_FILE;
	r->st = r->sf->st;
	if (r->sf->kind == SK_ARRAY) {
		child->kind = NK_ARRAY;
		r->ai = &r->sf->arr;
	} else if (r->sf->kind == SK_NPZ) {
		child->kind = NK_NPZDIR;
		child->member = strdup("");
		r->zdir = 0;
		if (!child->member)
			return -ENOMEM;
	}
	return 0;
}

/*
 * Whether source file @p path is still exactly the version @p sum was
 * made from: 0 (*st its fresh lstat) or 1 (changed, gone, not a regular
 * file). With @p fd_out the file is opened (O_RDONLY) rather than stat'ed,
 * for a caller that keeps the fd (*fd_out, only when 0 is returned): the
 * O_PATH open and close of a stat would come on top of its open.
 */
static int still_summed(struct afd_ctx *c, const char *path,
			const struct afd_arrsum *sum, struct stat *st,
			int *fd_out)
{
	int fd = fd_out ? afd_srcpath_open(&c->root, path,
					   O_RDONLY | O_NONBLOCK) : -1;
	int rc = fd_out ? (fd < 0 ? fd : (fstat(fd, st) < 0 ? -errno : 0)) :
		 afd_srcpath_stat(&c->root, path, st);
	struct afd_ident now;
	if (rc == 0 && S_ISREG(st->st_mode)) {
		afd_ident_of(&now, st);
		rc = afd_ident_eq(&now, &sum->id) ? 0 : 1;
	} else {
		rc = 1;
	}
	if (rc == 0 && fd_out)
		*fd_out = fd;
	else if (fd >= 0)
		close(fd);
	return rc;
}

static int lookup_dir(struct afd_ctx *c, const struct afd_node *parent,
		      const char *name, uint64_t since, struct afd_id *child,
		      struct afd_res *r)
{
	child->path = afd_path_join(parent->path, name);
	if (!child->path)
		return -ENOMEM;
	bool array_name = af_array_name_kind(name, false) != AF_NAME_NONE;
	/* a listing's entry its parse-ahead made since it began: no stat,
	 * and no probe of the node table, which misses the CPU's caches in
	 * a big folder */
	if (array_name && since &&
	    afd_src_get_fresh(c, child->path, since, &r->st, &r->sf))
		return array_file(child, r);
	/* an array file whose folder's node is live (listed before) and
	 * remembers its version: one lstat, no open or parse, for each name
	 * of a folder listed again that holds more arrays than src_max */
	if (array_name &&
	    afd_nodes_sum_of_path(&c->nodes, child->path, &r->sum) &&
	    still_summed(c, child->path, &r->sum, &r->st, NULL) == 0) {
		child->kind = NK_ARRAY;
		r->summed = true;
		return 0;
	}
	/* an array name is most often an array file: opened at once, no
	 * lookup of its own first; anything else (another name, a folder, a
	 * symlink, our mount, an error) is looked at as below */
	if (afd_src_get_opening(c, child->path, &r->st, &r->sf) == 0)
		return array_file(child, r);
	int rc = stat_path(c, child->path, &r->st);
	if (rc == -ENOENT && strcmp(name, AFD_STACK_NAME) == 0) {
		/* no source entry of that name: the folder's stack */
		child->kind = NK_ARRAY;
		return resolve_stack(c, child, parent->watched, r);
	}
	if (rc == -ENOENT)
		/* no source entry of that name: the folder's group? */
		return lookup_zarr_group(c, parent, name, child, r);
	if (rc < 0)
		return rc;
	if (S_ISDIR(r->st.st_mode)) {
		child->kind = NK_DIR;
		return 0;
	}
	if (S_ISLNK(r->st.st_mode)) {
		child->kind = NK_LINK;
		return 0;
	}
	child->kind = NK_FILE;
	if (!S_ISREG(r->st.st_mode) || af_array_name_kind(name, false) == AF_NAME_NONE)
		return 0;
	rc = afd_src_get(c, child->path, &r->st, NULL, &r->sf);
	if (rc == -EINVAL || rc == -ENOENT || rc == -EAGAIN)
		return rc == -EINVAL ? 0 : -ENOENT;
	if (rc < 0)
		return rc;
	return array_file(child, r);
}

/* Path and member of a file in array folder (or B.zarr/) @p parent. */
static int child_of_array(const struct afd_node *parent, struct afd_id *child)
{
	child->path = strdup(parent->path);
	child->member = parent->member ? strdup(parent->member) : NULL;
	if (!child->path || (parent->member && !child->member))
		return -ENOMEM;
	return 0;
}

/*
 * Entry @p e of array folder @p parent from what its node remembers of
 * its source's version (afd_arrsum), when a fresh lstat says the source
 * is still exactly that version: the parse it came from may have left the
 * source cache since (a listing of more than src_max arrays). Returns 0
 * (r filled, summed), -ENOENT (that version has no such entry), or 1: the
 * caller resolves it (nothing remembered, or the source changed or is
 * gone: the resolve parses the new version and says what happened).
 */
static int lookup_summed(struct afd_ctx *c, const struct afd_node *parent,
			 enum afd_entry e, struct afd_res *r, int *fd_out)
{
	if (parent->member || !afd_nodes_sum_get(&c->nodes, parent, &r->sum))
		return 1;
	bool has = r->sum.has & (1u << e);
	/* the read of data as one range of the file keeps the fd */
	struct stat st;
	if (still_summed(c, parent->path, &r->sum, &st,
			 has && r->sum.data_plain ? fd_out : NULL))
		return 1;
	if (!has)
		return -ENOENT;
	r->st = st;
	r->summed = true;
	return 0;
}

static int lookup_array(struct afd_ctx *c, const struct afd_node *parent,
			const char *name, struct afd_id *child,
			struct afd_res *r, int *fd_out)
{
	enum afd_entry e = afd_entry_of(afd_array_dirname(parent), name);
	if (e == AE_NONE)
		return -ENOENT;
	child->kind = e == AE_ZARR ? NK_ZARRDIR : NK_ENTRY;
	child->entry = e;
	int rc = child_of_array(parent, child);
	if (rc == 0 && child->kind == NK_ENTRY &&
	    (rc = lookup_summed(c, parent, e, r, e == AE_DATA ? fd_out : NULL)) <= 0)
		return rc;
	return rc < 0 ? rc : afd_resolve(c, child, NULL, r);
}

/* A name in B.zarr/: resolved against the current version's layout. */
static int lookup_zarr(struct afd_ctx *c, const struct afd_node *parent,
		       const char *name, struct afd_id *child,
		       struct afd_res *r)
{
	child->kind = NK_ZARRDIR;
	child->entry = AE_ZARR;
	int rc = child_of_array(parent, child);
	if (rc == 0)
		rc = afd_resolve(c, child, NULL, r);
	if (rc == 0)
		rc = afd_zarr_name(&r->ai->zarr, name, &child->entry, &child->sub);
	if (rc == 0)
		child->kind = NK_ZARRFILE;
	return rc;
}

static int lookup_npz(struct afd_ctx *c, const struct afd_node *parent,
		      const char *name, struct afd_id *child,
		      struct afd_res *r)
{
	child->path = strdup(parent->path);
	if (!child->path ||
	    asprintf(&child->member, "%s%s/", parent->member, name) < 0) {
		child->member = NULL;
		return -ENOMEM;
	}
	child->kind = NK_NPZDIR;
	int rc = afd_resolve(c, child, NULL, r);
	if (rc != -ENOENT)
		return rc;
	/* not a folder: a member (array folder or plain file)? */
	child->member[strlen(child->member) - 1] = '\0';
	if (strcmp(name, AFD_STACK_NAME) == 0) {
		/* a member of that name wins over the folder's stack */
		child->kind = NK_MEMBER;
		rc = afd_resolve(c, child, NULL, r);
		if (rc != -ENOENT)
			return rc;
		child->kind = NK_ARRAY;
		return resolve_stack(c, child, parent->watched, r);
	}
	child->kind = NK_ARRAY;
	rc = afd_resolve(c, child, NULL, r);
	if (rc != -ENOENT)
		return rc;
	child->kind = NK_MEMBER;
	rc = afd_resolve(c, child, NULL, r);
	if (rc == -ENOENT)
		/* no member of that name: the folder's group? */
		rc = lookup_zarr_group(c, parent, name, child, r);
	return rc;
}

int afd_lookup(struct afd_ctx *c, const struct afd_node *parent,
	       const char *name, uint64_t since, struct afd_id *child,
	       struct afd_res *r, int *fd_out)
{
	if (fd_out)
		*fd_out = -1;
	memset(child, 0, sizeof(*child));
	memset(r, 0, sizeof(*r));
	r->midx = r->zdir = -1;
	child->name = name;
	int rc;
	switch (parent->kind) {
	case NK_DIR:
		rc = lookup_dir(c, parent, name, since, child, r);
		break;
	case NK_ARRAY:
		rc = lookup_array(c, parent, name, child, r, fd_out);
		break;
	case NK_NPZDIR:
		rc = lookup_npz(c, parent, name, child, r);
		break;
	case NK_ZARRDIR:
		rc = lookup_zarr(c, parent, name, child, r);
		break;
	case NK_ZGROUP:
	case NK_ZGARRAY:
		rc = lookup_in_zarr_group(c, parent, name, child, r);
		break;
	default:
		return -ENOTDIR;
	}
	if (rc < 0) {
		afd_res_release(r);
		afd_id_free(child);
		if (fd_out && *fd_out >= 0) {
			close(*fd_out);
			*fd_out = -1;
		}
	}
	return rc;
}
