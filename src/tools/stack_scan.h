/* SPDX-License-Identifier: MIT */
/**
 * The stack a folder of .npy/.ra files, or an .npz, would give in the
 * mount (`.stack/`): its members in natural name order, each header read
 * once, and the codec's rule (af_stack_agree) deciding. Headers only:
 * no data is read.
 */
#ifndef ARRAYFS_TOOLS_STACK_SCAN_H
#define ARRAYFS_TOOLS_STACK_SCAN_H

#include <stddef.h>

#include "arrayfs/arrayfs.h"

typedef struct stack_scan {
	af_array stack;     /* the stacked array (valid on AF_OK) */
	char **names;       /* the members, in order */
	size_t n;
	const char *culprit; /* when refused: the member at fault (in names), or NULL */
} stack_scan;

/**
 * Scan @p path (a folder, or an .npz file). Returns AF_OK with *s filled;
 * AF_E_UNSUPPORTED when there is no stack, with @p why saying why (and
 * s->culprit naming the member whose header or agreement failed); AF_E_IO
 * when @p path cannot be read; AF_E_NOMEM. Free with stack_scan_free in
 * every case.
 */
af_status stack_scan_path(const char *path, stack_scan *s, af_error *why);
void stack_scan_free(stack_scan *s);

#endif /* ARRAYFS_TOOLS_STACK_SCAN_H */
