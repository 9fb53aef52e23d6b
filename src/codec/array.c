/* SPDX-License-Identifier: MIT */
/* af_array_free, what an array file's name says, and the parse it picks. */
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

static const struct {
	const char *ext;
	af_name_kind kind;
} name_exts[] = {
	{ ".npy", AF_NAME_NPY },
	{ ".ra", AF_NAME_RA },
	{ ".npz", AF_NAME_NPZ },
};

/* The extension of @p name's last component, or NULL. B must not be
 * empty: a file named just ".npy" is a hidden file named "npy" to `ls`
 * and to pathlib (no suffix), not an array, and as an array directory its
 * B would be empty, giving it the hidden entries ".npy", ".ra" and
 * ".zarr" (the last the name of a folder's Zarr group). */
static const char *name_ext(const char *name, af_name_kind *kind)
{
	const char *leaf = strrchr(name, '/');
	leaf = leaf ? leaf + 1 : name;
	size_t n = strlen(leaf);
	for (size_t i = 0; i < sizeof(name_exts) / sizeof(name_exts[0]); i++) {
		size_t k = strlen(name_exts[i].ext);
		if (n > k && strcmp(leaf + n - k, name_exts[i].ext) == 0) {
			*kind = name_exts[i].kind;
			return leaf + n - k;
		}
	}
	*kind = AF_NAME_NONE;
	return NULL;
}

af_name_kind af_array_name_kind(const char *name, bool in_npz)
{
	af_name_kind kind;
	name_ext(name, &kind);
	if (in_npz && kind != AF_NAME_NPY)
		return AF_NAME_NONE;
	return kind;
}

size_t af_array_name_base_len(const char *name)
{
	af_name_kind kind;
	const char *ext = name_ext(name, &kind);
	return ext ? (size_t)(ext - name) : strlen(name);
}

af_status af_array_parse_named(const char *name, const af_source *src,
			       af_array *out, af_error *err)
{
	switch (af_array_name_kind(name, false)) {
	case AF_NAME_NPY:
		return af_npy_parse(src, out, err);
	case AF_NAME_RA:
		return af_ra_parse(src, out, err);
	default:
		return af_error_set(err, AF_E_UNSUPPORTED, AF_NO_OFFSET,
				    "%s: not a .npy or .ra name", name);
	}
}
