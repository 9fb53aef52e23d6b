/* SPDX-License-Identifier: MIT */
/*
 * What the handler files (ops.c, ops_xattr.c, ops_refuse.c) share: the
 * request's context and node, and the handlers ops.c's table names from
 * the other two. Only these files reply to the kernel.
 */
#ifndef ARRAYFS_DAEMON_OPS_I_H
#define ARRAYFS_DAEMON_OPS_I_H

#include "ctx.h"
#include "ops.h"

static inline struct afd_ctx *afd_ctx(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* The node of nodeid @p ino, or NULL (answer ESTALE). */
static inline struct afd_node *node_of(fuse_req_t req, fuse_ino_t ino)
{
	return afd_nodes_from_id(&afd_ctx(req)->nodes, ino);
}

/* ops_xattr.c */
void arrayfs_ll_getxattr(fuse_req_t req, fuse_ino_t ino,
			 const char *name, size_t size);
void arrayfs_ll_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);

/* ops_refuse.c: EROFS */
void arrayfs_ll_setattr(fuse_req_t req, fuse_ino_t ino,
			struct stat *attr, int to_set,
			struct fuse_file_info *fi);
void arrayfs_ll_mknod(fuse_req_t req, fuse_ino_t parent,
		      const char *name, mode_t mode, dev_t rdev);
void arrayfs_ll_mkdir(fuse_req_t req, fuse_ino_t parent,
		      const char *name, mode_t mode);
void arrayfs_ll_unlink(fuse_req_t req, fuse_ino_t parent,
		       const char *name);
void arrayfs_ll_symlink(fuse_req_t req, const char *link,
			fuse_ino_t parent, const char *name);
void arrayfs_ll_rename(fuse_req_t req, fuse_ino_t parent,
		       const char *name, fuse_ino_t newparent,
		       const char *newname, unsigned int flags);
void arrayfs_ll_link(fuse_req_t req, fuse_ino_t ino,
		     fuse_ino_t newparent, const char *newname);
void arrayfs_ll_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		      size_t size, off_t off, struct fuse_file_info *fi);
void arrayfs_ll_create(fuse_req_t req, fuse_ino_t parent,
		       const char *name, mode_t mode,
		       struct fuse_file_info *fi);
void arrayfs_ll_setxattr(fuse_req_t req, fuse_ino_t ino,
			 const char *name, const char *value,
			 size_t size, int flags);
void arrayfs_ll_removexattr(fuse_req_t req, fuse_ino_t ino,
			    const char *name);
void arrayfs_ll_fallocate(fuse_req_t req, fuse_ino_t ino, int mode,
			  off_t offset, off_t length,
			  struct fuse_file_info *fi);
void arrayfs_ll_copy_file_range(fuse_req_t req, fuse_ino_t ino_in,
				off_t off_in,
				struct fuse_file_info *fi_in,
				fuse_ino_t ino_out, off_t off_out,
				struct fuse_file_info *fi_out,
				size_t len, int flags);

#endif /* ARRAYFS_DAEMON_OPS_I_H */
