/* SPDX-License-Identifier: MIT */
/**
 * @file lz4_i.h
 * Private: decoding of one raw LZ4 block (no frame header), the data of a
 * RawArray file with flags bit 1 set.
 *
 * Invariants:
 *  - The decoder never writes past out_len and never reads past in_len,
 *    whatever the input (liblz4's "safe" decoder).
 *  - Success means the block decoded to exactly out_len bytes.
 */
#ifndef ARRAYFS_LZ4_I_H
#define ARRAYFS_LZ4_I_H

#include <stddef.h>
#include <stdint.h>

#include "arrayfs/af_status.h"

/** Largest input or output size liblz4's int-based API can take. */
#define AF_LZ4_MAX_BLOCK ((size_t)0x7FFFFFFF)

/**
 * Decode the raw LZ4 block @p in (@p in_len bytes) into @p out, which must
 * receive exactly @p out_len bytes. @p where is the source offset of the
 * block, used in error reports.
 * Returns AF_OK, AF_E_CORRUPT (malformed block, or it decodes to another
 * length) or AF_E_LIMIT (a size above AF_LZ4_MAX_BLOCK).
 */
af_status af_lz4_decode_block(const void *in, size_t in_len, void *out,
			      size_t out_len, uint64_t where, af_error *err);

#endif /* ARRAYFS_LZ4_I_H */
