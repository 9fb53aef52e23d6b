/* SPDX-License-Identifier: MIT */
/* arrayrefs --verify: which sources of a reference file changed since. */
#ifndef ARRAYFS_TOOLS_REFS_VERIFY_H
#define ARRAYFS_TOOLS_REFS_VERIFY_H

#include <stdio.h>

/**
 * Read the reference file @p path and tell on @p out each recorded
 * source that changed (size or mtime), was renamed (the same inode under
 * another name in its folder) or deleted. Returns 0 (none did), 1 (some
 * did, or @p path is no reference file: a line on stderr says which).
 */
int refs_verify(const char *prog, const char *path, FILE *out);

#endif /* ARRAYFS_TOOLS_REFS_VERIFY_H */
