/* SPDX-License-Identifier: MIT */
/*
 * Every call that would change the tree: the mount is read-only, so each
 * is answered EROFS before anything is looked at.
 */
#include <errno.h>

#include "ops_i.h"

void arrayfs_ll_setattr(fuse_req_t req, fuse_ino_t ino,
			struct stat *attr, int to_set,
			struct fuse_file_info *fi)
{
	(void)ino; (void)attr; (void)to_set; (void)fi;
	fuse_reply_err(req, EROFS);
}

void arrayfs_ll_mknod(fuse_req_t req, fuse_ino_t parent,
		      const char *name, mode_t mode, dev_t rdev)
{
	(void)parent; (void)name; (void)mode; (void)rdev;
	fuse_reply_err(req, EROFS);
}

void arrayfs_ll_mkdir(fuse_req_t req, fuse_ino_t parent,
		      const char *name, mode_t mode)
{
	(void)parent; (void)name; (void)mode;
	fuse_reply_err(req, EROFS);
}

void arrayfs_ll_unlink(fuse_req_t req, fuse_ino_t parent,
		       const char *name)
{
	(void)parent; (void)name;
	fuse_reply_err(req, EROFS);
}

void arrayfs_ll_symlink(fuse_req_t req, const char *link,
			fuse_ino_t parent, const char *name)
{
	(void)link; (void)parent; (void)name;
	fuse_reply_err(req, EROFS);
}

void arrayfs_ll_rename(fuse_req_t req, fuse_ino_t parent,
		       const char *name, fuse_ino_t newparent,
		       const char *newname, unsigned int flags)
{
	(void)parent; (void)name; (void)newparent; (void)newname; (void)flags;
	fuse_reply_err(req, EROFS);
}

void arrayfs_ll_link(fuse_req_t req, fuse_ino_t ino,
		     fuse_ino_t newparent, const char *newname)
{
	(void)ino; (void)newparent; (void)newname;
	fuse_reply_err(req, EROFS);
}

void arrayfs_ll_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		      size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)ino; (void)buf; (void)size; (void)off; (void)fi;
	fuse_reply_err(req, EROFS);
}

void arrayfs_ll_create(fuse_req_t req, fuse_ino_t parent,
		       const char *name, mode_t mode,
		       struct fuse_file_info *fi)
{
	(void)parent; (void)name; (void)mode; (void)fi;
	fuse_reply_err(req, EROFS);
}

void arrayfs_ll_setxattr(fuse_req_t req, fuse_ino_t ino,
			 const char *name, const char *value,
			 size_t size, int flags)
{
	(void)ino; (void)name; (void)value; (void)size; (void)flags;
	fuse_reply_err(req, EROFS);
}

void arrayfs_ll_removexattr(fuse_req_t req, fuse_ino_t ino,
			    const char *name)
{
	(void)ino; (void)name;
	fuse_reply_err(req, EROFS);
}

void arrayfs_ll_fallocate(fuse_req_t req, fuse_ino_t ino, int mode,
			  off_t offset, off_t length,
			  struct fuse_file_info *fi)
{
	(void)ino; (void)mode; (void)offset; (void)length; (void)fi;
	fuse_reply_err(req, EROFS);
}

void arrayfs_ll_copy_file_range(fuse_req_t req, fuse_ino_t ino_in,
				off_t off_in,
				struct fuse_file_info *fi_in,
				fuse_ino_t ino_out, off_t off_out,
				struct fuse_file_info *fi_out,
				size_t len, int flags)
{
	(void)ino_in; (void)off_in; (void)fi_in; (void)ino_out;
	(void)off_out; (void)fi_out; (void)len; (void)flags;
	fuse_reply_err(req, EROFS);
}
