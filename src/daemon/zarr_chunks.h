/* SPDX-License-Identifier: MIT */
/**
 * Open chunk files of B.zarr/: chunk i is bytes [data_off, +data_len) of
 * the array's `data` view, then zeros up to the chunk size (af_zarr.h).
 *
 * Where the data view only copies source bytes (a .npy, a stored npz
 * member, a plain .ra), each open chunk has a view of its own over its
 * handle's source, and its bytes are spliced from the source fd. Where the
 * view decodes (af_view_cost: an LZ4 .ra, a deflated member), every open
 * chunk of one version of the array reads through one shared data view
 * (an afd_zshare, published in the arrinfo's zarr.share under the
 * source's mlock and freed with its last chunk), so what the view builds
 * and keeps (an LZ4 index and its decoded cache) is made once however many
 * chunk files are read, not once per chunk file.
 *
 * Locking: the source's mlock guards zarr.share and the share counts;
 * nothing else is taken while it is held for them.
 */
#ifndef ARRAYFS_DAEMON_ZARR_CHUNKS_H
#define ARRAYFS_DAEMON_ZARR_CHUNKS_H

#include <stddef.h>
#include <stdint.h>

#include "arrayfs/arrayfs.h"

struct afd_ctx;
struct afd_src;
struct afd_arrinfo;
struct afd_zarr_chunk;

/**
 * Open chunk @p index of array @p ai of source @p sf (npz member @p midx,
 * or -1). @p src is the opening handle's source of the array (its fd, or
 * the member), which must outlive the chunk. On 0, *out is the chunk
 * (afd_zarr_chunk_close it). Returns 0, -ENOENT (no such chunk), -ENOMEM, or
 * the errno of the codec's refusal (err says why).
 */
int afd_zarr_chunk_open(struct afd_ctx *c, struct afd_src *sf, long midx,
		    const struct afd_arrinfo *ai, uint64_t index,
		    const af_source *src, struct afd_zarr_chunk **out,
		    af_error *err);

/** The chunk file's size (the layout's chunk_bytes). */
uint64_t afd_zarr_chunk_size(const struct afd_zarr_chunk *z);

/**
 * Bytes its view holds once read (af_view_cost's `held`), for the bound
 * handles' budget: every chunk of a shared view counts all of it, so the
 * budget never counts less than is held; for an LZ4 .ra the view's index
 * is the one data and B.npy share (lz4share.h), counted once for all.
 */
size_t afd_zarr_chunk_cost(const struct afd_zarr_chunk *z);

/** Where that cost is shared with the other handles of its LZ4 index
 * (afd_handle_cost_shared), or NULL (also for a NULL chunk). */
unsigned *afd_zarr_chunk_cost_shared(const struct afd_zarr_chunk *z);

/**
 * Describe the chunk from @p off (af_zarr_chunk_extent): AF_EXTENT_SOURCE
 * (offsets in the opening handle's source: splice them), AF_EXTENT_ZERO
 * (the tail past the array's edge), AF_EXTENT_MEMORY or AF_EXTENT_DECODED
 * (read it with afd_zarr_chunk_read). Returns AF_OK or AF_E_RANGE.
 */
af_status afd_zarr_chunk_extent(const struct afd_zarr_chunk *z, uint64_t off,
			    af_extent *out);

/** Read [off, off + len) of the chunk (af_zarr_chunk_read). */
af_status afd_zarr_chunk_read(struct afd_zarr_chunk *z, void *buf, size_t len,
			  uint64_t off, size_t *nread, af_error *err);

/** Close @p z (NULL is fine), and its shared view with the last chunk. */
void afd_zarr_chunk_close(struct afd_zarr_chunk *z);

#endif /* ARRAYFS_DAEMON_ZARR_CHUNKS_H */
