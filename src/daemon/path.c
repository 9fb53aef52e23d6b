/* SPDX-License-Identifier: MIT */
/* Source-relative path strings. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "path.h"

char *afd_path_join(const char *dir, const char *name)
{
	if (strcmp(dir, ".") == 0)
		return strdup(name);
	/* two copies, not asprintf: a listing joins a path per entry, and
	 * the format machinery cost more than the rest of the join */
	size_t ld = strlen(dir), ln = strlen(name);
	if (ld > SIZE_MAX - ln - 2)
		return NULL;
	char *out = malloc(ld + 1 + ln + 1);
	if (!out)
		return NULL;
	memcpy(out, dir, ld);
	out[ld] = '/';
	memcpy(out + ld + 1, name, ln + 1);
	return out;
}
