/* SPDX-License-Identifier: MIT */
/**
 * The folder tree of an npz archive, built once from the central directory
 * (names only, nothing read) so that readdir and lookup of a nested key
 * are a hash hit, not a scan of 60,000 members.
 *
 * Invariants: folder paths are "" (the root) or "a/b/" (trailing '/').
 * Child names are the component after the folder's path. The tree is
 * immutable after afd_npz_tree_build, like the af_zip it comes from.
 */
#ifndef ARRAYFS_DAEMON_NPZ_TREE_H
#define ARRAYFS_DAEMON_NPZ_TREE_H

#include <stddef.h>
#include <stdint.h>

#include "arrayfs/af_zip.h"

struct afd_npz_child {
	char *name;
	long member;   /* member index, or -1 for a sub-folder */
};

struct afd_npz_dir {
	char *path;
	struct afd_npz_child *kids;
	size_t nkids, cap;
	unsigned nsubdirs;
};

struct afd_npz_tree {
	struct afd_npz_dir *dirs;
	size_t ndirs, cap;
	uint32_t *slots;   /* open addressing: dir index + 1, 0 = empty */
	size_t nslots;
};

/**
 * Build the tree of @p z. Members with a name part longer than NAME_MAX
 * (255 bytes) are left out: no kernel can look them up; *skipped counts
 * them. Returns 0 or -ENOMEM (tree left empty).
 */
int afd_npz_tree_build(struct afd_npz_tree *t, const af_zip *z,
		       size_t *skipped);
void afd_npz_tree_free(struct afd_npz_tree *t);
/** Index of the folder with path @p prefix ("" or "a/b/"), or -1. */
long afd_npz_tree_dir(const struct afd_npz_tree *t, const char *prefix,
		      size_t len);

#endif /* ARRAYFS_DAEMON_NPZ_TREE_H */
