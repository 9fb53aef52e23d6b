/* SPDX-License-Identifier: MIT */
/**
 * @file af_zarr.h
 * `B.zarr/`: an array as a read-only Zarr store (v2 and v3 metadata over the
 * same chunk files), computed from its af_array alone, with chunk files
 * that are byte ranges of the `data` view plus zeros.
 *
 * The layout (CONTRACT.md, "B.zarr/"): one axis is cut. For C order the
 * chunk shape is (1, ..., 1, k, n[j+1], ..., n[last]): the largest such
 * block of at most max_chunk_bytes, at least one element; Fortran order
 * mirrors it on the last axes, (n[0], ..., n[j-1], k, 1, ..., 1). So every
 * chunk is one contiguous range of `data`; only the last chunk along the
 * cut axis can pass the array's edge, and that part reads as zeros. A zero
 * dim counts as 1 for the chunk shape (zarr wants chunk lengths >= 1) and
 * the store then has no chunk files. A 0-d array has one chunk, "0".
 *
 * Invariants callers rely on:
 *  - Everything is computed from the af_array in checked 64-bit
 *    arithmetic; af_zarr_layout_init refuses (AF_E_OVERFLOW) an array
 *    whose counts do not fit, and otherwise every later call is exact.
 *  - The entry count (metadata files + chunks) is at most INT64_MAX, so a
 *    readdir offset (off_t) can hold any entry index.
 *  - Chunks are indexed 0 .. nchunks-1 in the order of their bytes in
 *    `data`: chunk i+1 starts where chunk i's data ends. Names and indices
 *    convert both ways with no memory per chunk; names are at most
 *    AF_ZARR_NAME_MAX - 1 bytes (in practice under 150).
 *  - A layout borrows the af_array's shape and descr (heap memory the
 *    af_array owns until af_array_free); copying the af_array struct
 *    elsewhere does not invalidate it, and a layout may be copied by value
 *    (it points into nothing of its own). It needs no freeing and is safe
 *    to share between threads (nothing in it changes after init).
 *  - Chunk bytes are never byte-swapped: Zarr keeps the stored byte order
 *    (the metadata says which).
 *
 * How the daemon serves `B.zarr/` with this API:
 *  - when B.zarr/ or anything in it is first asked about (a lookup, or a
 *    listing of the array directory): af_zarr_layout_init(&l, a,
 *    max_chunk_bytes), the rule for whether the array has a B.zarr/ at
 *    all (AF_E_UNSUPPORTED: none), which builds no text, so a listing of
 *    array directories need not pay for the metadata;
 *  - readdir of B.zarr/: entries 0 .. af_zarr_entry_count(&l) - 1 through
 *    af_zarr_entry (".zarray", ".zattrs", "zarr.json" where v3 applies,
 *    then the chunks), nothing kept per entry;
 *  - lookup: af_zarr_lookup(&l, name) (AF_E_RANGE: ENOENT);
 *  - metadata files: af_zarr_text (their size is the text's length);
 *  - a chunk file: size l.chunk_bytes; on open af_zarr_chunk_get(&l, i,
 *    &c) and a data view (af_view_open(..., AF_VIEW_DATA, ...)); reads by
 *    af_zarr_chunk_extent (AF_EXTENT_SOURCE: splice; AF_EXTENT_ZERO: fill
 *    with zeros, no read; AF_EXTENT_DECODED: af_zarr_chunk_read). Each
 *    af_view of an LZ4 array decodes its own copy of the whole array:
 *    chunk files of one LZ4 array should share one data view.
 */
#ifndef ARRAYFS_AF_ZARR_H
#define ARRAYFS_AF_ZARR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "af_array.h"
#include "af_status.h"
#include "af_view.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The default largest chunk (the daemon's -o zarr_chunk=BYTES changes it). */
#define AF_ZARR_CHUNK_DEFAULT (8ULL << 20)
/** Room for any chunk or metadata name and its NUL (fits NAME_MAX + 1). */
#define AF_ZARR_NAME_MAX 256

/** Everything about one array's B.zarr/ but the bytes. Read-only after init. */
typedef struct af_zarr_layout {
	/* the array, borrowed (see the file comment) */
	const uint64_t *shape;
	const char *descr;       /* .npy: the header's descr, as written; .ra: NULL */
	unsigned ndim;
	bool fortran;
	af_format format;
	bool descr_long_ints;    /* .npy v1/v2: Python-2 `L` suffixes allowed */
	af_dtype dtype;
	char ra_descr[32];       /* .ra: the B.npy view's descr ("<u2" for bfloat16) */
	const char *v3_type;     /* "float64" ...; NULL: no zarr.json */

	/* the chunks */
	unsigned split;          /* the cut axis (0 for 0-d) */
	uint64_t run;            /* chunk length along it, >= 1 */
	uint64_t split_chunks;   /* chunks along it: ceil(n[split] / run) */
	uint64_t step;           /* elements per index of the cut axis: the
				  * product of the faster dims (zero dims as 1) */
	uint64_t chunk_bytes;    /* the size of every chunk file */
	uint64_t nchunks;        /* 0 when a dim is 0; 1 for 0-d */
	uint64_t data_size;      /* bytes of `data` */
} af_zarr_layout;

/**
 * Compute the layout of @p a's store with chunks of at most
 * @p max_chunk_bytes (>= 1; a single element larger than that is a chunk
 * of its own). On AF_OK *out is filled; nothing to free.
 *
 * This is the rule for whether @p a has a B.zarr/ (AF_OK: it has), and
 * it is cheap: arithmetic on the shape, and for a structured .npy type one
 * parse of its descr; no metadata text is built. On AF_OK every
 * af_zarr_text of the layout succeeds but for lack of memory.
 * Returns AF_OK, AF_E_UNSUPPORTED (object arrays, .ra element types with
 * no numpy type, structured types zarr cannot spell: no B.zarr/),
 * AF_E_NOMEM, AF_E_INVAL (NULL array, max_chunk_bytes 0,
 * no descr), AF_E_SHAPE (more than AF_NDIM_MAX dims), AF_E_OVERFLOW (the
 * element count, data size or entry count does not fit 64 bits, or the
 * chunk size or entry count an off_t).
 */
af_status af_zarr_layout_init(af_zarr_layout *out, const af_array *a,
			      uint64_t max_chunk_bytes, af_error *err);

/** Chunk length of @p l along @p axis (< ndim): 1, run, or the dim (1 if 0). */
uint64_t af_zarr_chunk_len(const af_zarr_layout *l, unsigned axis);

/**
 * Write the chunk name of chunk @p index ("i.j.k", "0" for 0-d) into
 * @p name (AF_ZARR_NAME_MAX bytes), NUL-terminated; *len gets its length.
 * Returns AF_OK or AF_E_RANGE (index >= nchunks).
 */
af_status af_zarr_chunk_name(const af_zarr_layout *l, uint64_t index,
			     char name[AF_ZARR_NAME_MAX], size_t *len);

/**
 * The index of the chunk named @p name (NUL-terminated). Strict: exactly
 * ndim decimal parts joined by '.', no sign, no leading zero (but "0"), each
 * inside the chunk grid. Returns AF_OK or AF_E_RANGE for any other text.
 */
af_status af_zarr_chunk_parse(const af_zarr_layout *l, const char *name,
			      uint64_t *index);

/** One chunk file: a range of `data`, then zeros up to `size`. */
typedef struct af_zarr_chunk {
	uint64_t data_off;  /* where its bytes start in `data` */
	uint64_t data_len;  /* bytes of data in it; the rest reads as zeros */
	uint64_t size;      /* the file's size: the layout's chunk_bytes */
} af_zarr_chunk;

/** Fill *out for chunk @p index. Returns AF_OK or AF_E_RANGE (no such chunk). */
af_status af_zarr_chunk_get(const af_zarr_layout *l, uint64_t index,
			    af_zarr_chunk *out);

/**
 * Read [off, off + len) of chunk @p c into @p buf, the data part through
 * @p data (an AF_VIEW_DATA view of the array; never byte-swapped), the
 * tail as zeros. *nread gets the count (short only at the chunk's end).
 * Returns AF_OK, AF_E_INVAL (NULL arguments, or a data view too short for
 * the chunk), or what af_view_read returns.
 */
af_status af_zarr_chunk_read(const af_zarr_chunk *c, af_view *data, void *buf,
			     size_t len, uint64_t off, size_t *nread,
			     af_error *err);

/**
 * Describe chunk @p c from @p off, like af_view_extent: the data part has
 * the kinds of @p data's extents (AF_EXTENT_SOURCE offsets are source
 * offsets, to splice; AF_EXTENT_DECODED: read it with af_zarr_chunk_read),
 * clipped to the chunk; the tail is one AF_EXTENT_ZERO extent. Reads
 * nothing. Returns AF_OK or AF_E_RANGE (off >= size, NULL arguments, or a
 * data view too short; *out zeroed).
 */
af_status af_zarr_chunk_extent(const af_zarr_chunk *c, const af_view *data,
			       uint64_t off, af_extent *out);

/** The files of B.zarr/. */
typedef enum af_zarr_file {
	AF_ZARR_ZARRAY = 1,  /* ".zarray": v2 metadata */
	AF_ZARR_ZATTRS,      /* ".zattrs": v2 attributes */
	AF_ZARR_ZARR_JSON,   /* "zarr.json": v3 metadata, where v3_type is set */
	AF_ZARR_CHUNK,       /* a chunk file */
} af_zarr_file;

typedef struct af_zarr_entry {
	af_zarr_file kind;
	uint64_t chunk;                /* AF_ZARR_CHUNK: its index */
	char name[AF_ZARR_NAME_MAX];   /* NUL-terminated */
	size_t name_len;
} af_zarr_entry;

/** Entries of B.zarr/: 2 or 3 metadata files, then nchunks chunks. */
uint64_t af_zarr_entry_count(const af_zarr_layout *l);

/**
 * Entry @p i of B.zarr/ in listing order (metadata files first, then the
 * chunks in index order). Returns AF_OK or AF_E_RANGE (i >= entry count).
 */
af_status af_zarr_entry_at(const af_zarr_layout *l, uint64_t i,
			   af_zarr_entry *out);

/**
 * The entry named @p name (NUL-terminated) in B.zarr/, and in *index its
 * listing index. Returns AF_OK or AF_E_RANGE (no such file: ENOENT).
 */
af_status af_zarr_lookup(const af_zarr_layout *l, const char *name,
			 af_zarr_entry *out, uint64_t *index);

/**
 * The text of metadata file @p which: exact JSON as zarr-python writes it
 * (indent 4, sorted keys for v2, ASCII with \u escapes, no final newline).
 *  - .zarray: zarr_format 2, shape, chunks, dtype (the B.npy view's descr:
 *    a type string, or a structured type in zarr's list form with sub-array
 *    shapes; field titles are left out, as zarr cannot read them),
 *    compressor, filters and fill_value null, order "C"/"F",
 *    dimension_separator ".".
 *  - .zattrs: {"_ARRAY_DIMENSIONS": ["dim_0", ...]}.
 *  - zarr.json: v3 with data_type, a regular chunk grid, the "v2" chunk key
 *    encoding with ".", a transpose codec reversing the axes for Fortran
 *    order of 2+ dims, then a bytes codec (with "endian" unless 1-byte),
 *    a zero fill_value, the .zattrs attributes, node_type array.
 * *out is malloc'd (NUL-terminated; the caller frees), *len its length.
 * Returns AF_OK, AF_E_RANGE (AF_ZARR_CHUNK, or zarr.json where v3_type is
 * NULL), AF_E_DTYPE (a descr that is not a numpy descr literal), AF_E_LIMIT,
 * AF_E_NOMEM.
 */
af_status af_zarr_text(const af_zarr_layout *l, af_zarr_file which,
		       char **out, size_t *len, af_error *err);

/**
 * Whether layouts @p a and @p b have byte-identical .zarray texts (the
 * same shape, chunks, order and dtype), decided without writing either:
 * a writer of many arrays (arrayrefs) formats one and reuses it. A
 * cheap comparison of what af_zarr_text's .zarray reads.
 */
bool af_zarr_zarray_same(const af_zarr_layout *a, const af_zarr_layout *b);

#ifdef __cplusplus
}
#endif
#endif /* ARRAYFS_AF_ZARR_H */
