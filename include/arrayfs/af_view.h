/* SPDX-License-Identifier: MIT */
/**
 * @file af_view.h
 * The files of an array directory, synthesized on read: `data`, the `.npy`
 * view, the `.ra` view, and the text of `shape`, `dtype` and `header`.
 *
 * A view is a header built in memory followed by the array's data, served
 * from the source by offset, transformed only where needed (byte swap of
 * big-endian numbers for the .ra view, LZ4 for compressed .ra data).
 *
 * Invariants:
 *  - af_view_size is exact and known without reading data.
 *  - af_view_read(off, len) returns exactly the bytes at [off, off+len) of
 *    the whole view, for any off and len, clipped at the end.
 *  - A view borrows the af_array and the af_source given to af_view_open;
 *    both must outlive it. It is safe to read one view from many threads.
 *  - Memory: the header (<= AF_NPY_HEADER_MAX; in practice < 2 KiB), plus
 *    for LZ4 data an af_lz4_index (af_lz4.h): access points and a small
 *    cache of decoded blocks, at most af_lz4_index_bound(data_size) (1.6 %
 *    of the decoded size plus about 8 MiB), whatever the size: reads at
 *    any offset decode from the nearest access point. Each view opened
 *    with af_view_open has an index of its own, kept until af_view_close;
 *    views opened with af_view_open_shared over one index share it. A
 *    read of byte-swapped data swaps in the caller's buffer (scalars cut by
 *    the ends of the read go through a 16-byte stack buffer); nothing grows
 *    with the length read.
 */
#ifndef ARRAYFS_AF_VIEW_H
#define ARRAYFS_AF_VIEW_H

#include <stddef.h>
#include <stdint.h>

#include "af_array.h"
#include "af_source.h"
#include "af_status.h"
#include "af_zip.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum af_view_kind {
	AF_VIEW_DATA = 1,  /* the raw element bytes, as stored (decoded) */
	AF_VIEW_NPY,       /* the array as a .npy file */
	AF_VIEW_RA,        /* the array as a .ra file */
} af_view_kind;

typedef struct af_view af_view;

/**
 * Build a view of @p kind over array @p a whose source is @p src. On AF_OK
 * *out is a view the caller closes with af_view_close; on failure *out is
 * NULL. The .npy view of a .npy array is the source's bytes, unchanged:
 * for an object array (a pickle) it is the only view there is.
 * Returns AF_OK, AF_E_UNSUPPORTED (object arrays have no data or .ra view;
 * no numpy type for a .ra element type; a scalar too large to byte-swap),
 * AF_E_TRUNCATED (@p src ends before the array data), AF_E_CORRUPT (LZ4
 * data larger than its block can decode to), AF_E_SHAPE (more than
 * AF_NDIM_MAX dims),
 * AF_E_OVERFLOW, AF_E_INVAL (NULL array or source, unknown kind or format,
 * uncompressed stored_size != data_size), AF_E_NOMEM.
 */
af_status af_view_open(af_view **out, const af_array *a, const af_source *src,
		       af_view_kind kind, af_error *err);

/** What reading a view costs beyond copying bytes of its source. */
typedef struct af_cost {
	/* some of its bytes are computed (inflated, LZ4-decoded or
	 * byte-swapped): they can never be spliced from the source fd */
	bool decodes;
	/* bytes the view may keep in memory once read: for data and B.npy
	 * of an LZ4 .ra, af_lz4_index_bound of the decoded size (an index
	 * shared by several views: once for all); 0 for none */
	uint64_t held;
	/* it decodes an LZ4 block through an af_lz4_index: the views for
	 * which this is true (data and B.npy of an LZ4 .ra, never its B.ra)
	 * can all read through one index (af_view_open_shared) */
	bool lz4_index;
} af_cost;

/**
 * The cost of the view af_view_open would build of @p kind over @p a,
 * known from the header alone: nothing is opened or read. @p member is
 * the zip entry holding the array, or NULL for a file of its own; a
 * member that is not stored (deflated) makes every view decode, though
 * its inflate state belongs to the member (af_member_memory), not to the
 * view, so it adds nothing to `held`. The rule is the one af_view_open
 * follows. For a view af_view_open refuses the answer means nothing.
 */
af_cost af_view_cost(const af_array *a, const af_zip_entry *member,
		     af_view_kind kind);

/** Free @p v and what it owns (decoded data, header); NULL is fine. */
void af_view_close(af_view *v);

/** The view's exact size in bytes (0 for NULL). */
uint64_t af_view_size(const af_view *v);

/**
 * Read [off, off + len) of the view into @p buf; *nread gets the count
 * (short only at the end; 0 at or past the end, and 0 on failure).
 * Returns AF_OK, AF_E_TRUNCATED (the source shrank), AF_E_CORRUPT, AF_E_IO,
 * AF_E_NOMEM, AF_E_INVAL (NULL view, or NULL buf with len > 0). A corrupt
 * LZ4 block is AF_E_CORRUPT from the read that meets it on (at the latest
 * one that reaches its last byte), for the life of its index; bytes read
 * before are right. I/O failures are retried by the next read.
 */
af_status af_view_read(af_view *v, void *buf, size_t len, uint64_t off,
		       size_t *nread, af_error *err);

/** What one stretch of a view is made of. */
typedef enum af_extent_kind {
	AF_EXTENT_MEMORY = 1, /* bytes at `mem` (valid while the view is open) */
	AF_EXTENT_SOURCE,     /* bytes [src_off, src_off+len) of the source, unchanged */
	AF_EXTENT_DECODED,    /* computed bytes: use af_view_read */
	AF_EXTENT_ZERO,       /* `len` zero bytes: nothing to read (Zarr chunk tails) */
} af_extent_kind;

typedef struct af_extent {
	af_extent_kind kind;
	uint64_t len;             /* bytes of the view from the asked offset */
	const unsigned char *mem; /* AF_EXTENT_MEMORY */
	uint64_t src_off;         /* AF_EXTENT_SOURCE */
} af_extent;

/**
 * Describe the view starting at @p off: the kind of bytes there and how
 * many follow of that kind. Lets the daemon splice AF_EXTENT_SOURCE parts
 * straight from the source fd. Reads nothing and sets no af_error.
 * Returns AF_OK or AF_E_RANGE (off >= size, or a NULL view; *out zeroed).
 */
af_status af_view_extent(const af_view *v, uint64_t off, af_extent *out);

/**
 * The text files of an array directory, each ending in '\n':
 * shape ("3 4\n", "\n" for 0-d), dtype (descr + "\n"), header (.npy: the
 * dict text; .ra: "name: value" lines). *out is malloc'd, the caller frees
 * it; *len excludes the terminating NUL. Returns AF_OK or AF_E_NOMEM.
 */
af_status af_text_shape(const af_array *a, char **out, size_t *len);
af_status af_text_dtype(const af_array *a, char **out, size_t *len);
af_status af_text_header(const af_array *a, char **out, size_t *len);

/**
 * The RawArray eltype / elbyte for a numpy dtype, per the contract
 * (signed 1, unsigned and bool 2, float 3, complex 4, datetime and
 * timedelta 1 with elbyte 8, everything else 0 with elbyte = itemsize).
 */
void af_ra_type_of(const af_dtype *dt, uint64_t *eltype, uint64_t *elbyte);

#ifdef __cplusplus
}
#endif
#endif /* ARRAYFS_AF_VIEW_H */
