/* SPDX-License-Identifier: MIT */
/**
 * @file af_array.h
 * One array's description, as read from a `.npy` or `.ra` header, and the
 * parsers that produce it. Parsing reads only the header (plus the source
 * size), never the data.
 *
 * Invariants of a parsed af_array:
 *  - count = product(shape) (1 for ndim 0) and data_size = count x
 *    dtype.itemsize, both computed with overflow checks.
 *  - data_offset + stored_size <= the source size at parse time (short data
 *    is refused); bytes after the data are ignored.
 *  - stored_size == data_size unless compression != AF_COMP_NONE.
 *  - shape has ndim entries in header order (for .ra: the dims, dims[0]
 *    fastest); ndim <= AF_NDIM_MAX.
 *  - descr is the numpy type text: for .npy the header's descr exactly as
 *    written (without the surrounding quotes for a plain type string); for
 *    .ra the derived one ("<f4", "|u1", ">c8", "|V12", "bfloat16").
 *  - header_text: for .npy the dict literal, padding and the final newline
 *    stripped; for .ra NULL.
 *  - All pointers are owned by the af_array; af_array_free releases them.
 */
#ifndef ARRAYFS_AF_ARRAY_H
#define ARRAYFS_AF_ARRAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "af_dtype.h"
#include "af_source.h"
#include "af_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AF_NDIM_MAX 64
/** Largest .npy header accepted (numpy's own limit is 10000 by default). */
#define AF_NPY_HEADER_MAX (16u << 20)

typedef enum af_format {
	AF_FORMAT_NPY = 1,
	AF_FORMAT_RA = 2,
} af_format;

typedef enum af_compression {
	AF_COMP_NONE = 0,
	AF_COMP_LZ4 = 1,   /* .ra flags bit 1: one raw LZ4 block */
} af_compression;

/* RawArray header constants */
#define AF_RA_MAGIC 0x7961727261776172ULL
#define AF_RA_FLAG_BIG_ENDIAN 0x1ULL
#define AF_RA_FLAG_COMPRESSED 0x2ULL
#define AF_RA_FIXED_HEADER 48u

typedef struct af_array {
	af_format format;
	uint8_t version_major;    /* .npy: 1, 2 or 3; .ra: 0 */
	uint8_t version_minor;
	uint64_t data_offset;     /* where the (stored) data starts in the source */
	uint64_t stored_size;     /* bytes of data in the source */
	uint64_t data_size;       /* bytes of decoded data: count x itemsize */
	uint64_t count;
	unsigned ndim;
	uint64_t *shape;
	bool fortran_order;       /* .ra: always true */
	char *descr;
	char *header_text;
	af_dtype dtype;
	af_compression compression;
	/* .ra header fields as stored */
	uint64_t ra_flags;
	uint64_t ra_eltype;
	uint64_t ra_elbyte;
	uint64_t ra_size;
	/* .ra: flag bits this library does not know (warn, do not refuse) */
	uint64_t ra_unknown_flags;
	/* the source holds the data alone (a stack, af_stack.h): no view is
	 * the source file itself, every view writes its own header */
	bool headerless;
} af_array;

/** Release what @p a owns and zero it. NULL and zeroed arrays are fine. */
void af_array_free(af_array *a);

/**
 * Parse a .npy header from @p src. On AF_OK, *out is filled (free with
 * af_array_free). On failure *out is zeroed and err says why and where.
 * Returns AF_OK, AF_E_MAGIC, AF_E_VERSION, AF_E_TRUNCATED, AF_E_HEADER,
 * AF_E_DTYPE, AF_E_SHAPE, AF_E_OVERFLOW, AF_E_LIMIT, AF_E_NOMEM, AF_E_IO.
 */
af_status af_npy_parse(const af_source *src, af_array *out, af_error *err);

/**
 * Parse a RawArray header from @p src. Same conventions as af_npy_parse.
 * Unknown flag bits are kept in ra_unknown_flags (not an error). For the
 * LZ4 bit, stored_size is the compressed `size` and data_size the
 * decompressed length elbyte x product(dims).
 */
af_status af_ra_parse(const af_source *src, af_array *out, af_error *err);

/** What a file's name says it holds (af_array_name_kind). */
typedef enum af_name_kind {
	AF_NAME_NONE = 0,  /* not an array name: a plain file */
	AF_NAME_NPY,       /* B.npy */
	AF_NAME_RA,        /* B.ra */
	AF_NAME_NPZ,       /* B.npz, an archive of arrays */
} af_name_kind;

/**
 * The one rule for "is this name an array?", asked by the daemon, the
 * tools and the stack. Only the last component of @p name counts (a path
 * or an npz member name with '/' is fine). It is B + EXT with EXT ".npy",
 * ".ra" or ".npz", matched case-sensitively, and B not empty:
 *  - "x.npy" -> AF_NAME_NPY, "x.ra" -> AF_NAME_RA, "x.npz" -> AF_NAME_NPZ;
 *    "dir/x.npy" -> AF_NAME_NPY; "..npy" -> AF_NAME_NPY (B is ".");
 *  - ".npy", ".ra", ".npz", "dir/.npy" -> AF_NAME_NONE (a hidden file
 *    with no extension, as Python's pathlib reads it);
 *  - "x.NPY", "x.npy.bak", "x.npyz", "x", "" -> AF_NAME_NONE.
 * With @p in_npz (@p name is a member of an npz archive) only AF_NAME_NPY
 * or AF_NAME_NONE is returned: an npz's arrays are its .npy members; its
 * ".ra" and ".npz" members are plain files.
 */
af_name_kind af_array_name_kind(const char *name, bool in_npz);

/**
 * The length of @p name without the extension af_array_name_kind(name,
 * false) finds (so "x.npy" gives 1, "dir/x.ra" 5); strlen(name) when it
 * finds none. `%.*s` of that length prints B (with any path before it).
 */
size_t af_array_name_base_len(const char *name);

/**
 * Parse by file name (af_array_name_kind): npy or ra, with that parser's
 * returns and ownership. Returns AF_E_UNSUPPORTED for any other name
 * (an .npz too), without touching *out.
 */
af_status af_array_parse_named(const char *name, const af_source *src,
			       af_array *out, af_error *err);

/** Room af_array_type_name needs at most, the NUL included. */
#define AF_TYPE_NAME_MAX 96
/**
 * The name a person knows for the element type of @p a, to print beside
 * its type string: "float64, big-endian", "complex64, little-endian",
 * "uint8", "bool", "datetime64[ns]", "timedelta64[s]", "bytes, 10
 * characters", "unicode, 5 characters", "void, 16 bytes", "struct of 2
 * fields", "bfloat16", "object (pickled Python objects)".
 * Numbers (int, uint, float, complex) of more than one byte always say
 * their byte order; datetime64, timedelta64, unicode and bfloat16 say it
 * only when it is big-endian (little is what every writer makes); a struct
 * holding objects says so ("struct of 2 fields, with pickled Python
 * objects"). The datetime unit is read from a->descr ("datetime64" when it
 * has none).
 * Writes the name, NUL-terminated, into @p out (@p cap bytes; a cap of
 * AF_TYPE_NAME_MAX always suffices) and returns its length; returns 0, with
 * @p out empty when @p cap > 0, if it does not fit. Nothing to free.
 */
size_t af_array_type_name(const af_array *a, char *out, size_t cap);

#ifdef __cplusplus
}
#endif
#endif /* ARRAYFS_AF_ARRAY_H */
