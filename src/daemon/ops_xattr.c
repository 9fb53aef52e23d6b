/* SPDX-License-Identifier: MIT */
/*
 * The user.array.* xattrs of array folders, their data files and their
 * chunk files (ops.c has the table; the mount's write calls are refused
 * in ops_refuse.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "ops_i.h"
#include "tree.h"

/* The xattrs of an array folder and its data file, as one NUL-separated list. */
static const char afd_xattr_names[] =
	"user.array.shape\0user.array.dtype\0user.array.order\0user.array.offset";

static bool has_xattrs(const struct afd_node *n)
{
	return n->kind == NK_ARRAY || (n->kind == NK_ENTRY && n->entry == AE_DATA) ||
	       (n->kind == NK_ZARRFILE && n->entry == AE_ZCHUNK);
}

/* The value of @p name for array @p ai, malloc'd, or NULL (-ENODATA). */
static char *xattr_value(const struct afd_arrinfo *ai, const char *name)
{
	char *out = NULL;
	if (strcmp(name, "user.array.dtype") == 0)
		return strdup(ai->a.descr ? ai->a.descr : "");
	if (strcmp(name, "user.array.order") == 0)
		return strdup(ai->a.fortran_order ? "F" : "C");
	if (strcmp(name, "user.array.offset") == 0)
		return asprintf(&out, "%" PRIu64, ai->offset) < 0 ? NULL : out;
	if (strcmp(name, "user.array.shape") != 0)
		return NULL;
	size_t cap = 21 * (ai->a.ndim + 1) + 1, len = 0;
	out = malloc(cap);
	if (!out)
		return NULL;
	out[0] = '\0';
	for (unsigned i = 0; i < ai->a.ndim; i++)
		len += (size_t)snprintf(out + len, cap - len, "%s%" PRIu64,
					i ? " " : "", ai->a.shape[i]);
	return out;
}

static void reply_xattr(fuse_req_t req, const char *val, size_t len,
			size_t size)
{
	if (size == 0)
		fuse_reply_xattr(req, len);
	else if (size < len)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, val, len);
}

/*
 * Only the user. namespace is served. A name in another one (ls -l asks
 * every file for security.selinux, system.posix_acl_access and, of a
 * folder, system.posix_acl_default) is answered EOPNOTSUPP, as the
 * kernel's own filesystems answer a namespace they have no handler for:
 * the kernel passes it on uncached (fs/fuse/acl.c keeps only ENODATA as
 * "no ACL"), and ls, seeing it, stops asking that device (coreutils
 * caches an unsupported st_dev), so a listing costs a round trip a kind
 * of probe (two for ls -l), not three a file. ENODATA would be asked
 * again for every file.
 */
static bool served_namespace(const char *name)
{
	return strncmp(name, "user.", 5) == 0;
}

void arrayfs_ll_getxattr(fuse_req_t req, fuse_ino_t ino,
			 const char *name, size_t size)
{
	struct afd_ctx *c = afd_ctx(req);
	/* before the node's lookup: no lock, no parse, no source access */
	if (!served_namespace(name)) {
		fuse_reply_err(req, EOPNOTSUPP);
		return;
	}
	bool known = false;
	/* the list is NUL-separated with no empty name after it: bound by size */
	const char *end = afd_xattr_names + sizeof(afd_xattr_names);
	for (const char *p = afd_xattr_names; p < end; p += strlen(p) + 1)
		known |= strcmp(p, name) == 0;
	if (!known) {
		fuse_reply_err(req, ENODATA);
		return;
	}
	struct afd_node *n = node_of(req, ino);
	if (!n) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	if (!has_xattrs(n)) {
		fuse_reply_err(req, ENODATA);
		return;
	}
	struct afd_id id = afd_id_of(n);
	struct afd_res r;
	if (afd_resolve(c, &id, NULL, &r) < 0) {
		fuse_reply_err(req, ENODATA);
		return;
	}
	char *val = xattr_value(r.ai, name);
	afd_res_release(&r);
	if (!val) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	reply_xattr(req, val, strlen(val), size);
	free(val);
}

void arrayfs_ll_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct afd_node *n = node_of(req, ino);
	if (!n) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	if (!has_xattrs(n)) {
		reply_xattr(req, "", 0, size);
		return;
	}
	reply_xattr(req, afd_xattr_names, sizeof(afd_xattr_names), size);
}
