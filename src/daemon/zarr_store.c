/* SPDX-License-Identifier: MIT */
/* B.zarr/: its files, names, sizes and texts, from the codec's layout,
 * decided when first asked about. */
#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "srcfile.h"
#include "zarr_store.h"

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

void afd_zarr_info_init(struct afd_arrinfo *ai, uint64_t max_chunk)
{
	memset(&ai->zarr, 0, sizeof(ai->zarr));
	ai->zarr.max_chunk = max_chunk;
	ai->has[AE_ZARR] = false;
}

/* The codec's rule, for the array @p z is part of: no text is built. */
static bool decide(struct afd_zarrinfo *z)
{
	const struct afd_arrinfo *ai = (const struct afd_arrinfo *)
		((const char *)z - offsetof(struct afd_arrinfo, zarr));
	return ai->has[AE_DATA] &&
	       af_zarr_layout_init(&z->layout, &ai->a, z->max_chunk, NULL) == AF_OK;
}

/* The state of @p zc, decided (ZI_OK or ZI_NONE): the first caller
 * decides, a concurrent one waits. Callers take the state from here: a
 * plain read of it afterwards races, for ThreadSanitizer, with a late
 * waiter's compare-exchange, which it counts as a write even when it
 * fails (seen once in the soak test under TSan). */
static unsigned decided(const struct afd_zarrinfo *zc)
{
	/* deciding is the one write to a published arrinfo (zarr_store.h) */
	struct afd_zarrinfo *z = (struct afd_zarrinfo *)zc;
	unsigned s = __atomic_load_n(&z->state, __ATOMIC_ACQUIRE);
	while (s == ZI_UNKNOWN || s == ZI_BUSY) {
		unsigned want = ZI_UNKNOWN;
		if (s == ZI_UNKNOWN &&
		    __atomic_compare_exchange_n(&z->state, &want, ZI_BUSY, false,
						__ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
			s = decide(z) ? ZI_OK : ZI_NONE;
			__atomic_store_n(&z->state, s, __ATOMIC_RELEASE);
			break;
		}
		sched_yield();
		s = __atomic_load_n(&z->state, __ATOMIC_ACQUIRE);
	}
	return s;
}

bool afd_zarr_exists(const struct afd_zarrinfo *z)
{
	return decided(z) == ZI_OK;
}

const af_zarr_layout *afd_zarr_layout(const struct afd_zarrinfo *z)
{
	return afd_zarr_exists(z) ? &z->layout : NULL;
}

bool afd_zarr_has(const struct afd_zarrinfo *z, enum afd_entry e, uint64_t sub)
{
	if (!afd_zarr_exists(z))
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
	if (!f || !afd_zarr_exists(z))
		return 0;
	if (f == AF_ZARR_CHUNK)
		return z->layout.chunk_bytes;
	if (!afd_zarr_has(z, e, 0))
		return 0;
	/* measured once: threads that race make the same text */
	uint64_t *size = (uint64_t *)&z->meta_size[f - AF_ZARR_ZARRAY];
	uint64_t n = __atomic_load_n(size, __ATOMIC_RELAXED);
	char *text = NULL;
	size_t len = 0;
	if (n == 0 && afd_zarr_text(z, e, &text, &len) == AF_OK) {
		n = len;
		__atomic_store_n(size, n, __ATOMIC_RELAXED);
	}
	free(text);
	return n;
}

int afd_zarr_name(const struct afd_zarrinfo *z, const char *name,
		  enum afd_entry *e, uint64_t *sub)
{
	af_zarr_entry ent;
	uint64_t index;
	if (!afd_zarr_exists(z) ||
	    af_zarr_lookup(&z->layout, name, &ent, &index) != AF_OK)
		return -ENOENT;
	*e = entry_of_file[ent.kind];
	*sub = ent.kind == AF_ZARR_CHUNK ? ent.chunk : 0;
	return 0;
}

bool afd_zarr_listed(const struct afd_zarrinfo *z, const char *path,
		     const char *member, uint64_t i, af_zarr_entry *out,
		     uint64_t *ino)
{
	if (!afd_zarr_exists(z) || af_zarr_entry_at(&z->layout, i, out) != AF_OK)
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
	if (!f || f == AF_ZARR_CHUNK || !afd_zarr_has(z, e, 0))
		return AF_E_INVAL;
	return af_zarr_text(&z->layout, f, out, len, &err);
}
