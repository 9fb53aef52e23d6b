/* SPDX-License-Identifier: MIT */
/* af_array_free and dispatch of a parse by file name. */
#include "arrayfs/arrayfs.h"

#include <stdlib.h>
#include <string.h>

void af_array_free(af_array *a)
{
	if (!a)
		return;
	free(a->shape);
	free(a->descr);
	free(a->header_text);
	memset(a, 0, sizeof(*a));
}

af_status af_array_parse_named(const char *name, const af_source *src,
			       af_array *out, af_error *err)
{
	size_t n = strlen(name);
	if (n >= 4 && strcmp(name + n - 4, ".npy") == 0)
		return af_npy_parse(src, out, err);
	if (n >= 3 && strcmp(name + n - 3, ".ra") == 0)
		return af_ra_parse(src, out, err);
	return af_error_set(err, AF_E_UNSUPPORTED, AF_NO_OFFSET,
			    "%s: not a .npy or .ra name", name);
}
