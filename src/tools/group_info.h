/* SPDX-License-Identifier: MIT */
/**
 * arrayinfo --zarr-group: the consolidated metadata (`.zmetadata`) the
 * mount's `.zarr/` of a folder or npz would give, from the files, with
 * no mount: the codec's group walk over them, so the keys and the texts
 * are the mount's own.
 */
#ifndef ARRAYFS_TOOLS_GROUP_INFO_H
#define ARRAYFS_TOOLS_GROUP_INFO_H

/**
 * Print the document for @p path (a folder, an .npz, or one .npy/.ra) on
 * stdout, then a newline; one line on stderr, prefixed @p prog, for each
 * entry left out that the daemon would log. Returns 0, or 1 when there is
 * no document (unreadable path, more than 10,000 arrays: said on stderr).
 */
int group_info(const char *prog, const char *path);

#endif /* ARRAYFS_TOOLS_GROUP_INFO_H */
