/* SPDX-License-Identifier: MIT */
/* Source-relative path strings. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "path.h"

char *afd_path_join(const char *dir, const char *name)
{
	char *out = NULL;
	if (strcmp(dir, ".") == 0)
		return strdup(name);
	if (asprintf(&out, "%s/%s", dir, name) < 0)
		return NULL;
	return out;
}
