/* SPDX-License-Identifier: MIT */
/* Folder listings for mirrored, npz and array folders. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctx.h"
#include "dirahead.h"
#include "dirs.h"
#include "tree.h"
#include "zarr_group_nodes.h"

struct afd_dirh {
	enum afd_nkind kind;
	char *path;              /* the node's source path */
	char *member;
	uint64_t self_ino;
	uint64_t since;          /* the parse clock's tick at offset 0 */
	/* mirrored folder */
	DIR *dp;
	off_t offset;
	struct dirent *entry;
	/* npz / array folder */
	struct afd_src *sf;
	struct afd_stack *stk;   /* `.stack/` and its B.zarr/: referenced */
	long zdir;
	const struct afd_arrinfo *ai;  /* array and B.zarr/ folders */
	char *names[AE_COUNT];   /* array folder entry names (NULL = absent) */
	struct afd_zarr_folder *zf;  /* a `.zarr/` group: its model, referenced */
	uint64_t sub;            /* `.zarr/` nodes: their sub (nodes.h) */
};

void afd_dir_close(struct afd_dirh *d)
{
	if (!d)
		return;
	if (d->dp)
		closedir(d->dp);
	afd_src_put(d->sf);
	afd_stack_put(d->stk);
	afd_zarr_folder_put(d->zf);
	for (int i = 0; i < AE_COUNT; i++)
		free(d->names[i]);
	free(d->path);
	free(d->member);
	free(d);
}

int afd_dir_open(struct afd_ctx *c, const struct afd_node *n,
		 struct afd_dirh **out)
{
	struct afd_dirh *d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->kind = n->kind;
	d->zdir = -1;
	d->self_ino = afd_ino_of_sub(n->path, n->member, n->entry,
				     afd_zarr_group_kind(n->kind) ? n->sub : 0);
	d->sub = n->sub;
	d->path = strdup(n->path);
	d->member = n->member ? strdup(n->member) : NULL;
	int rc = 0;
	if (!d->path || (n->member && !d->member)) {
		rc = -ENOMEM;
		goto fail;
	}
	if (n->kind == NK_DIR) {
		int fd = afd_srcpath_open(&c->root, n->path,
					  O_RDONLY | O_DIRECTORY);
		if (fd == -EXDEV) {
			/* our own mountpoint: listed empty, never through us */
			d->kind = NK_ARRAY;
			*out = d;
			return 0;
		}
		if (fd < 0) {
			rc = fd;
			goto fail;
		}
		d->dp = fdopendir(fd);
		if (!d->dp) {
			rc = -errno;
			close(fd);
			goto fail;
		}
		*out = d;
		return 0;
	}
	if (n->kind == NK_ZGROUP) {
		rc = afd_zarr_folder_get(c, n->path, n->member, false, &d->zf);
		if (rc < 0)
			goto fail;
		*out = d;
		return 0;
	}
	if (n->kind != NK_ARRAY && n->kind != NK_NPZDIR && n->kind != NK_ZARRDIR &&
	    n->kind != NK_ZGARRAY) {
		rc = -ENOTDIR;
		goto fail;
	}
	struct afd_id id = afd_id_of(n);
	struct afd_res r;
	rc = afd_resolve(c, &id, NULL, &r);
	if (rc < 0 && n == c->nodes.root) {
		/* a single-file root whose file broke: an empty folder */
		d->kind = NK_ARRAY;
		*out = d;
		return 0;
	}
	if (rc < 0)
		goto fail;
	d->sf = r.sf;
	d->stk = r.stk;
	d->zdir = r.zdir;
	d->ai = r.ai;
	if (n->kind == NK_ARRAY) {
		const char *dn = afd_array_dirname(n);
		for (int e = AE_DATA; e < AE_COUNT; e++) {
			if (!afd_arrinfo_has(r.ai, (enum afd_entry)e))
				continue;
			d->names[e] = afd_entry_name(dn, (enum afd_entry)e);
			if (!d->names[e]) {
				rc = -ENOMEM;
				goto fail;
			}
		}
	}
	*out = d;
	return 0;
fail:
	afd_dir_close(d);
	return rc;
}

uint64_t afd_dir_listed_since(struct afd_ctx *c, struct afd_dirh *d, off_t off)
{
	if (off == 0 || d->since == 0)
		d->since = afd_src_tick(c);
	return d->since;
}

void afd_dir_ahead_of(const struct afd_dirh *d, size_t count,
		      struct afd_dir_ahead *a)
{
	a->path = d->dp && count ? strdup(d->path) : NULL;
	a->off = d->offset;
	a->count = count;
}

static unsigned char dtype_of(unsigned char dt, const char *name)
{
	if (dt == DT_REG && af_array_name_kind(name, false) != AF_NAME_NONE)
		return DT_UNKNOWN;
	return dt;
}

/*
 * Add one entry; returns false when the buffer is full. A readdirplus
 * listing (@p plus) asks for the entry of @p name when @p lookup says the
 * folder gives entries and the name is not . or ..; the room is checked
 * first, so a lookup is counted only for an entry that is sent.
 */
static bool add(fuse_req_t req, const struct afd_dir_plus *plus, bool lookup,
		char *buf, size_t size, size_t *used, const char *name,
		uint64_t ino, unsigned char dt, off_t next)
{
	struct fuse_entry_param e;
	memset(&e, 0, sizeof(e));
	e.attr.st_ino = ino;
	e.attr.st_mode = (mode_t)DTTOIF(dt);
	if (!plus) {
		size_t need = fuse_add_direntry(req, buf + *used, size - *used,
						name, &e.attr, next);
		if (need > size - *used)
			return false;
		*used += need;
		return true;
	}
	size_t need = fuse_add_direntry_plus(req, NULL, 0, name, NULL, next);
	if (need > size - *used)
		return false;
	/* without an entry (ino 0) the kernel looks the name up itself */
	struct fuse_entry_param got;
	if (lookup && strcmp(name, ".") != 0 && strcmp(name, "..") != 0 &&
	    plus->entry(plus->arg, name, &got))
		e = got;
	fuse_add_direntry_plus(req, buf + *used, size - *used, name, &e, next);
	*used += need;
	return true;
}

static ssize_t fill_mirror(fuse_req_t req, const struct afd_dir_plus *plus,
			   struct afd_dirh *d, char *buf, size_t size, off_t off)
{
	size_t used = 0;
	if (off != d->offset) {
		seekdir(d->dp, off);
		d->entry = NULL;
		d->offset = off;
	}
	for (;;) {
		if (!d->entry) {
			errno = 0;
			d->entry = readdir(d->dp);
			if (!d->entry) {
				if (errno && used == 0)
					return -errno;
				break;
			}
		}
		const char *name = d->entry->d_name;
		uint64_t ino;
		if (strcmp(name, ".") == 0) {
			ino = d->self_ino;
		} else if (strcmp(name, "..") == 0) {
			/* any non-zero value: readdir users skip d_ino 0 */
			ino = d->self_ino ^ 1;
		} else {
			char child[PATH_MAX];
			int n = strcmp(d->path, ".") == 0 ?
				snprintf(child, sizeof(child), "%s", name) :
				snprintf(child, sizeof(child), "%s/%s", d->path, name);
			ino = n > 0 && (size_t)n < sizeof(child) ?
			      afd_ino_of(child, NULL, AE_NONE) : 0;
		}
		off_t next = d->entry->d_off;
		/* an archive's entry would read its central directory (up
		 * to 512 MiB): listed by name, looked up when it is used */
		if (!add(req, plus, af_array_name_kind(name, false) != AF_NAME_NPZ, buf, size,
			 &used, name, ino,
			 dtype_of(d->entry->d_type, name), next))
			break;
		d->entry = NULL;
		d->offset = next;
	}
	return (ssize_t)used;
}

/* npz, array and B.zarr/ folders: offset k = the k-th entry (0 ".", 1 "..") */
static ssize_t fill_virtual(fuse_req_t req, const struct afd_dir_plus *plus,
			    struct afd_dirh *d, char *buf, size_t size, off_t off)
{
	size_t used = 0;
	af_zarr_entry zent;
	if (off < 0)
		return -EINVAL;
	for (uint64_t k = (uint64_t)off;; k++) {
		const char *name;
		uint64_t ino;
		unsigned char dt;
		char *tmp = NULL;
		if (k == 0 || k == 1) {
			name = k == 0 ? "." : "..";
			ino = k == 0 ? d->self_ino : d->self_ino ^ 1;
			dt = DT_DIR;
		} else if (d->kind == NK_ARRAY) {
			uint64_t j = k - 2;
			int e = AE_DATA;
			/* the j-th present entry */
			for (; e < AE_COUNT; e++)
				if (d->names[e] && j-- == 0)
					break;
			if (e >= AE_COUNT)
				break;
			name = d->names[e];
			ino = afd_ino_of(d->path, d->member, (enum afd_entry)e);
			dt = e == AE_ZARR ? DT_DIR : DT_REG;
		} else if (d->kind == NK_ZARRDIR) {
			/* made from its index alone: no memory per chunk */
			if (!afd_zarr_listed(&d->ai->zarr, d->path, d->member,
					     k - 2, &zent, &ino))
				break;
			name = zent.name;
			dt = DT_REG;
		} else if (d->kind == NK_ZGARRAY) {
			if (!afd_zarr_group_array_listed(&d->ai->zarr, d->path,
						 d->member, d->sub, k - 2,
						 &zent, &ino))
				break;
			name = zent.name;
			dt = DT_REG;
		} else if (d->kind == NK_ZGROUP) {
			if (!afd_zarr_group_listed(d->zf, d->sub, k - 2, zent.name,
					   &name, &ino, &dt))
				break;
			if (!name)
				continue;
		} else {
			const struct afd_npz_dir *z = &d->sf->tree.dirs[d->zdir];
			if (k - 2 >= z->nkids)
				break;
			const struct afd_npz_child *ch = &z->kids[k - 2];
			if (ch->member >= 0 &&
			    afd_src_member_hidden(d->sf, (size_t)ch->member))
				continue;
			name = ch->name;
			if (asprintf(&tmp, "%s%s%s", d->member, ch->name,
				     ch->member < 0 ? "/" : "") < 0)
				return used ? (ssize_t)used : -ENOMEM;
			ino = afd_ino_of(d->path, tmp, AE_NONE);
			dt = ch->member < 0 ? DT_DIR :
			     af_array_name_kind(name, true) != AF_NAME_NONE ?
			     DT_UNKNOWN : DT_REG;
		}
		/* entries for an array folder's few files and a store's first
		 * names; an archive's names alone, as plain readdir: an entry
		 * would parse every member */
		bool entry = d->kind == NK_ARRAY ||
			     ((d->kind == NK_ZARRDIR || d->kind == NK_ZGARRAY ||
			       d->kind == NK_ZGROUP) &&
			      k - 2 < AFD_ZARR_LISTED_ENTRIES);
		bool ok = add(req, plus, entry, buf, size, &used, name, ino, dt,
			      (off_t)(k + 1));
		free(tmp);
		if (!ok)
			break;
	}
	return (ssize_t)used;
}

ssize_t afd_dir_fill(struct afd_ctx *c, fuse_req_t req, struct afd_dirh *d,
		     char *buf, size_t size, off_t off,
		     const struct afd_dir_plus *plus)
{
	(void)c;
	if (d->kind == NK_DIR)
		return fill_mirror(req, plus, d, buf, size, off);
	return fill_virtual(req, plus, d, buf, size, off);
}
