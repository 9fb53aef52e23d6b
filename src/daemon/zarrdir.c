/* SPDX-License-Identifier: MIT */
/* B.zarr/: its files, names, sizes and texts, from the codec's layout. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "srcfile.h"
#include "zarrdir.h"

static const enum afd_entry entry_of_file[] = {
	[AF_ZARR_ZARRAY] = AE_ZARRAY, [AF_ZARR_ZATTRS] = AE_ZATTRS,
	[AF_ZARR_ZARR_JSON] = AE_ZJSON, [AF_ZARR_CHUNK] = AE_ZCHUNK,
};

/* The codec's name for entry @p e; 0 for none. */
static af_zarr_file file_of(enum afd_entry e)
{
	for (size_t f = AF_ZARR_ZARRAY; f <= AF_ZARR_CHUNK; f++)
		if (entry_of_file[f] == e)
			return (af_zarr_file)f;
	return (af_zarr_file)0;
}

void afd_zarr_info_fill(struct afd_arrinfo *ai, uint64_t max_chunk)
{
	struct afd_zarrinfo *z = &ai->zarr;
	memset(z, 0, sizeof(*z));
	ai->has[AE_ZARR] = false;
	if (!ai->has[AE_DATA])
		return;
	af_error err;
	af_error_clear(&err);
	if (af_zarr_layout_init(&z->layout, &ai->a, max_chunk, &err) != AF_OK ||
	    z->layout.chunk_bytes > INT64_MAX)  /* st_size is an off_t */
		return;
	for (af_zarr_file f = AF_ZARR_ZARRAY; f <= AF_ZARR_ZARR_JSON; f++) {
		if (f == AF_ZARR_ZARR_JSON && !z->layout.v3_type)
			continue;
		char *text = NULL;
		size_t len = 0;
		if (af_zarr_text(&z->layout, f, &text, &len, &err) != AF_OK)
			return;
		free(text);
		z->meta_size[f - AF_ZARR_ZARRAY] = len;
	}
	z->ok = true;
	ai->has[AE_ZARR] = true;
}

bool afd_zarr_has(const struct afd_zarrinfo *z, enum afd_entry e, uint64_t sub)
{
	if (!z->ok)
		return false;
	switch (e) {
	case AE_ZARRAY:
	case AE_ZATTRS:
		return sub == 0;
	case AE_ZJSON:
		return sub == 0 && z->layout.v3_type;
	case AE_ZCHUNK:
		return sub < z->layout.nchunks;
	default:
		return false;
	}
}

uint64_t afd_zarr_size(const struct afd_zarrinfo *z, enum afd_entry e)
{
	af_zarr_file f = file_of(e);
	if (f == AF_ZARR_CHUNK)
		return z->layout.chunk_bytes;
	return f ? z->meta_size[f - AF_ZARR_ZARRAY] : 0;
}

int afd_zarr_name(const struct afd_zarrinfo *z, const char *name,
		  enum afd_entry *e, uint64_t *sub)
{
	af_zarr_entry ent;
	uint64_t index;
	if (!z->ok || af_zarr_lookup(&z->layout, name, &ent, &index) != AF_OK)
		return -ENOENT;
	*e = entry_of_file[ent.kind];
	*sub = ent.kind == AF_ZARR_CHUNK ? ent.chunk : 0;
	return 0;
}

bool afd_zarr_listed(const struct afd_zarrinfo *z, const char *path,
		     const char *member, uint64_t i, af_zarr_entry *out,
		     uint64_t *ino)
{
	if (!z->ok || af_zarr_entry_at(&z->layout, i, out) != AF_OK)
		return false;
	*ino = afd_ino_of_sub(path, member, entry_of_file[out->kind],
			      out->kind == AF_ZARR_CHUNK ? out->chunk : 0);
	return true;
}

af_status afd_zarr_text(const struct afd_zarrinfo *z, enum afd_entry e,
			char **out, size_t *len)
{
	af_error err;
	af_error_clear(&err);
	af_zarr_file f = file_of(e);
	if (!z->ok || !f || f == AF_ZARR_CHUNK)
		return AF_E_INVAL;
	return af_zarr_text(&z->layout, f, out, len, &err);
}
