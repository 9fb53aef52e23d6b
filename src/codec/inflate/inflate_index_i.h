/* SPDX-License-Identifier: MIT */
/**
 * @file inflate_index_i.h
 * Private to the inflate module (src/codec/inflate/).
 * The pieces of a loaded index and their CRC-32 checks (inflate_index.c).
 */
#ifndef ARRAYFS_INFLATE_INDEX_I_H
#define ARRAYFS_INFLATE_INDEX_I_H

#include "inflate_state_i.h"

/* inflate_index.c: checking pieces against a loaded index. A span is
 * the output between two access points: span 0 is [0, first point), span
 * k is [point k-1, point k), the last ends at the declared size. Spans are
 * cut into pieces at the multiples of o.piece inside them. */
#define AFZ_NO_PIECE SIZE_MAX

/** Feed the @p n bytes at @p dst just produced by @p c (ending at c->out)
 * to the piece check: AF_OK, or AF_E_CORRUPT when a piece's CRC-32
 * differs from the loaded index's. No-op unless an index was loaded. */
af_status afz_verify(af_inflate *z, struct afz_cursor *c,
		     const unsigned char *dst, uint64_t n, af_error *err);

/** A deflated window (@p zlen bytes at @p src) inflates with zlib, which
 * refuses what ISA-L might let through, to exactly @p wlen bytes, into
 * @p out (room for wlen + 1). */
bool afz_window_inflates(af_inflate *z, const unsigned char *src,
			 unsigned zlen, unsigned wlen, unsigned char *out);

/**
 * af_inflate_index_import of @p buf (malloc'ed), which @p z keeps on
 * AF_OK (its windows stay in it) and the caller frees otherwise.
 */
af_status afz_index_adopt(af_inflate *z, const af_index_key *key,
			  unsigned char *buf, size_t len, af_error *err);
/* crc32_combine64 keeping the operator of the last length it was asked
 * for: in a run of pieces of one size each combine is then one
 * multiplication, not a chain of log2(len) of them (a 128 MiB member has
 * 2048 pieces, combined when its index is loaded and, under its lock,
 * when it is exported). */
struct afz_crc_shift {
	bool set;
	uint64_t len;
	unsigned long op;
};

/** crc32_combine64(@p crc1, @p crc2, @p len2) through the operator @p s
 * keeps (start it zeroed). */
uint32_t afz_crc_combine(struct afz_crc_shift *s, uint32_t crc1, uint32_t crc2,
			 uint64_t len2);

/** CRC-32 of output [a, b) (@p len bytes) from the CRC-32 of [0, a) and of
 * [0, b); @p s as for afz_crc_combine, NULL for a one-off. */
uint32_t afz_span_crc(struct afz_crc_shift *s, uint32_t crc_a, uint32_t crc_b,
		      uint64_t len);
/** Where span @p k begins. */
uint64_t afz_span_start(const af_inflate *z, size_t k);

/**
 * The CRC-32 of output [0, @p from + n) from @p crc, that of [0, from),
 * and the @p n bytes at @p dst: the one running CRC-32 of a pass from 0.
 * Unless an index was loaded, it also records the CRC-32 at each multiple
 * of o.piece inside, for a saved index's pieces (taking the lock): those
 * cost no second pass over the bytes.
 */
uint32_t afz_crc_advance(af_inflate *z, uint32_t crc, uint64_t from,
			 const unsigned char *dst, size_t n);

#endif /* ARRAYFS_INFLATE_INDEX_I_H */
