/* SPDX-License-Identifier: MIT */
/**
 * @file lz4_oracle.h
 * The judge of the LZ4 index, shared by fuzz_lz4_index and the unit tests
 * (test_lz4_walk.c): one raw LZ4 block decoded through an af_lz4_index at
 * offsets drawn from a seed, against liblz4's LZ4_decompress_safe of the
 * whole block into exactly the declared size.
 *
 * The rules: a read that succeeds gives liblz4's bytes (those it wrote
 * before it failed, for a block it refuses); a read fails only with
 * AF_E_CORRUPT and only for a block liblz4 refuses, and from then on every
 * read fails so; a read of the last byte succeeds exactly when liblz4
 * decodes the whole block; the index never holds more than its bound.
 */
#ifndef AF_LZ4_ORACLE_H
#define AF_LZ4_ORACLE_H

#include <limits.h>
#include <lz4.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrayfs/arrayfs.h"
#include "../../src/codec/lz4/lz4_i.h"

/* splitmix64: the reads a seed stands for */
static inline uint64_t lz4_oracle_rand(uint64_t *s)
{
	uint64_t x = (*s += 0x9e3779b97f4a7c15ull);
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Say what broke into @p why; returns @p why. */
__attribute__((format(printf, 3, 4)))
static inline const char *lz4_oracle_fail(char *why, size_t why_len,
					  const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, why_len, fmt, ap);
	va_end(ap);
	return why;
}

/*
 * Judge block @p c (@p cn bytes, 1 <= out_len <= INT_MAX, cn <= INT_MAX)
 * through an index tuned by @p o, with @p reads reads from @p seed. Returns
 * NULL when every rule holds, else what broke (in @p why, @p why_len).
 */
static inline const char *lz4_oracle(const unsigned char *c, size_t cn,
				     size_t out_len, const struct lz4_opts *o,
				     uint64_t seed, int reads, char *why,
				     size_t why_len)
{
	unsigned char *ref = malloc(out_len), *got = malloc(out_len);
	if (!ref || !got) {
		free(ref);
		free(got);
		return lz4_oracle_fail(why, why_len, "no memory for the oracle");
	}
	int r = LZ4_decompress_safe((const char *)c, (char *)ref, (int)cn,
				    (int)out_len);
	const bool ref_ok = r == (int)out_len;
	af_source src;
	af_source_init_mem(&src, c, cn);
	af_lz4_index *ix;
	af_error err;
	af_status st = lz4_index_open_opts(&ix, &src, 0, cn, out_len, o, &err);
	const char *res = NULL;
	if (st != AF_OK) {
		if (st != AF_E_CORRUPT || ref_ok)
			res = lz4_oracle_fail(why, why_len, "open: status %d (liblz4: %d): %s",
					      (int)st, r, err.msg);
		goto done;
	}
	bool failed = false;
	for (int i = 0; i <= reads && !res; i++) {
		uint64_t off = out_len - 1, len = 1; /* last: the block's verdict */
		if (i < reads) {
			off = lz4_oracle_rand(&seed) % out_len;
			uint64_t most = out_len - off, pick = lz4_oracle_rand(&seed);
			len = pick % 3 == 0 ? most : pick % (most < 9000 ? most : 9000) + 1;
		}
		af_error_clear(&err);
		st = af_lz4_index_read(ix, got, (size_t)len, off, &err);
		if (st == AF_OK && failed)
			res = lz4_oracle_fail(why, why_len, "read %d at %llu succeeded after a failure",
					      i, (unsigned long long)off);
		else if (st == AF_OK && memcmp(got, ref + off, (size_t)len) != 0)
			res = lz4_oracle_fail(why, why_len, "read %d [%llu, +%llu): bytes differ from liblz4's",
					      i, (unsigned long long)off,
					      (unsigned long long)len);
		else if (st != AF_OK && (st != AF_E_CORRUPT || ref_ok))
			res = lz4_oracle_fail(why, why_len, "read %d at %llu: status %d (liblz4: %d): %s",
					      i, (unsigned long long)off, (int)st, r, err.msg);
		else if (st != AF_OK && (err.offset >= cn || !strstr(err.msg, "LZ4")))
			res = lz4_oracle_fail(why, why_len, "read %d: a refusal at %llu: %s",
					      i, (unsigned long long)err.offset, err.msg);
		else if (i == reads && (st == AF_OK) != ref_ok)
			res = lz4_oracle_fail(why, why_len, "last byte: status %d, liblz4 %d",
					      (int)st, r);
		failed |= st != AF_OK;
	}
	if (!res && af_lz4_index_memory(ix) > lz4_bound_opts(out_len, o))
		res = lz4_oracle_fail(why, why_len, "holds %zu bytes, over its bound %llu",
				      af_lz4_index_memory(ix),
				      (unsigned long long)lz4_bound_opts(out_len, o));
	af_lz4_index_close(ix);
done:
	free(got);
	free(ref);
	return res;
}

#endif /* AF_LZ4_ORACLE_H */
