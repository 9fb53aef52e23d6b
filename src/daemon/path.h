/* SPDX-License-Identifier: MIT */
/**
 * Source-relative path strings, as nodes (tree.c) and stacks (stackdir.c,
 * stackread.c) build them: "." is the source root, "a/b" a path under it.
 */
#ifndef ARRAYFS_DAEMON_PATH_H
#define ARRAYFS_DAEMON_PATH_H

/** Join a source-relative folder path and a name ("." + x = x). malloc'd. */
char *afd_path_join(const char *dir, const char *name);

#endif /* ARRAYFS_DAEMON_PATH_H */
