/* SPDX-License-Identifier: MIT */
/* Paths as URLs for the reference files arrayrefs writes. */
#include "refs_url.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

bool refs_url_is_file(const char *prefix)
{
	return strncmp(prefix, "file://", 7) == 0;
}

/* RFC 3986 section 2.3, and the path separator. */
static bool kept(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
	       c == '~' || c == '/';
}

char *refs_url_path(const char *path, bool encode)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(path);
	if (n > (SIZE_MAX - 1) / 3)
		return NULL;
	char *out = malloc(3 * n + 1), *o = out;
	if (!out)
		return NULL;
	for (const unsigned char *s = (const unsigned char *)path; *s; s++) {
		if (!encode || kept(*s)) {
			*o++ = (char)*s;
		} else {
			*o++ = '%';
			*o++ = hex[*s >> 4];
			*o++ = hex[*s & 15];
		}
	}
	*o = '\0';
	return out;
}

bool refs_url_templatable(const char *path, bool encode)
{
	return encode || !strpbrk(path, "{}");
}
