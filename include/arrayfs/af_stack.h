/* SPDX-License-Identifier: MIT */
/**
 * @file
 * A folder of arrays that agree, read as one array (the mount's `.stack/`).
 *
 * N arrays with one dtype, one shape and one order stack along a new axis
 * without moving a byte: the first axis for C order, the last for Fortran
 * order (so the members' data only concatenate). The stacked array is
 * *headerless*: its source holds the data alone, member after member, and
 * every view (data, .npy, .ra, Zarr) synthesizes its header as for any
 * converted array. The source is made by af_stack_source_init over a
 * caller's function that reads member i's decoded data, so the caller
 * decides how members are opened (and how many at once).
 *
 * Invariants callers rely on:
 *  - af_stack_agree is the one rule for "these arrays stack"; its reason
 *    names the first difference (dtype, shape, order, object data).
 *  - Member i's data is bytes [i * member_bytes, (i + 1) * member_bytes)
 *    of the stack's data, in the order the caller listed the members;
 *    af_name_natural_cmp is the order the contract asks for (ls -v).
 */
#ifndef ARRAYFS_AF_STACK_H
#define ARRAYFS_AF_STACK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "af_array.h"
#include "af_source.h"
#include "af_status.h"
#include "af_zip.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Fewest members a stack has (one array is not a stack). */
#define AF_STACK_MIN_MEMBERS 2u

/**
 * Natural name order, like `ls -v`: runs of digits compare as numbers
 * ("img2" < "img10"; with equal values the shorter run, i.e. fewer leading
 * zeros, first), everything else byte by byte. A total order: returns <0,
 * 0 (only for equal strings) or >0.
 */
int af_name_natural_cmp(const char *a, const char *b);

/**
 * Whether @p next stacks with @p first: the same dtype (as the `dtype`
 * file says it), shape and order, and no object data. Returns AF_OK, or
 * AF_E_UNSUPPORTED with @p why saying what differs ("dtype <f8, not <f4",
 * "shape 3 5, not 3 4", "Fortran order, not C order", "object data").
 */
af_status af_stack_agree(const af_array *first, const af_array *next,
			 af_error *why);

/**
 * Describe the stack of @p n members like @p first into @p out (freed with
 * af_array_free): the shape with n first (C order) or last (Fortran
 * order; a 0-d member gives shape (n,)), the same dtype and format,
 * headerless, uncompressed (members' LZ4 or deflate is undone by the
 * member reader), data_offset 0 and data_size n x the member's. The `.npy`
 * header text is made for the stacked shape; a `.ra` member's header
 * fields follow (size, dims; the LZ4 flag dropped).
 * Returns AF_OK, AF_E_INVAL (n < AF_STACK_MIN_MEMBERS, object data, or
 * AF_NDIM_MAX dims already), AF_E_OVERFLOW, AF_E_NOMEM.
 */
af_status af_stack_array(const af_array *first, uint64_t n, af_array *out,
			 af_error *err);

/**
 * Whether a folder entry (a regular file, @p in_npz false) or an npz
 * member (@p in_npz true) named @p name is a stack member by its name:
 * the arrays af_array_name_kind names (`.npy` or `.ra` files, `.npy`
 * members), but never a name holding a newline (the stack's `names` file
 * lists one name a line). Other names are left out of the stack, never a
 * reason for none. The one membership rule of the mount's `.stack` and
 * of `arrayinfo --stack`.
 */
bool af_stack_member_name(const char *name, bool in_npz);

/**
 * Whether npz entry @p e is a stack member of the folder it is in: a file
 * (not a folder entry), af_stack_member_name of its name, and readable by
 * the codec (af_zip_entry_readable: a member that cannot be read is left
 * out; one that fails to parse later means no stack).
 */
bool af_stack_zip_member(const af_zip_entry *e);

/**
 * Parse member @p i's header into @p out (the scan frees it). Returns
 * AF_OK, or a status with @p why saying what is wrong with the member.
 */
typedef af_status (*af_stack_parse_fn)(void *arg, uint64_t i, af_array *out,
				       af_error *why);

/**
 * The one scan rule for a stack of @p n members, already in natural name
 * order: each member parsed once by @p parse, in order, and held to the
 * first (af_stack_agree); at least AF_STACK_MIN_MEMBERS; then the stacked
 * array into @p out (freed with af_array_free on AF_OK).
 * Returns AF_OK; AF_E_UNSUPPORTED when there is no stack, @p why saying
 * why and *culprit the member at fault (n when no one member is: too few,
 * or the stack itself cannot be described); AF_E_NOMEM. Stops at the
 * first refused member.
 */
af_status af_stack_scan(uint64_t n, af_stack_parse_fn parse, void *arg,
			af_array *out, uint64_t *culprit, af_error *why);

/**
 * Read up to @p len bytes of member @p i's decoded data at @p off into
 * @p buf. Returns the count (short only at the member's end, which means
 * it shrank), or a negative errno.
 */
typedef ssize_t (*af_stack_read_fn)(void *arg, uint64_t i, void *buf,
				    size_t len, uint64_t off);

/** What a stack source reads through; owned by the caller, outlives it. */
typedef struct af_stack_reader {
	af_stack_read_fn read;
	void *arg;
	uint64_t n;              /* members */
	uint64_t member_bytes;   /* each member's data size */
} af_stack_reader;

/**
 * Make @p src read the stack's data through @p r: size n x member_bytes,
 * no fd (its bytes are copied, never spliced). A read spanning members
 * reads each in turn and stops short at a member that comes up short.
 */
void af_stack_source_init(af_source *src, const af_stack_reader *r);

#ifdef __cplusplus
}
#endif
#endif /* ARRAYFS_AF_STACK_H */
