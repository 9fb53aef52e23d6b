/* SPDX-License-Identifier: MIT */
/* One raw LZ4 block decoded with liblz4's bounds-checked decoder. */
#include <lz4.h>

#include "lz4_i.h"

af_status af_lz4_decode_block(const void *in, size_t in_len, void *out,
			      size_t out_len, uint64_t where, af_error *err)
{
	if (in_len > AF_LZ4_MAX_BLOCK || out_len > AF_LZ4_MAX_BLOCK)
		return af_error_set(err, AF_E_LIMIT, where,
				    "LZ4 block at byte %llu: %zu bytes in, %zu out is more than liblz4 can take",
				    (unsigned long long)where, in_len, out_len);
	if (in_len == 0) {
		/* liblz4 reads one token byte even for an empty output */
		if (out_len == 0)
			return AF_OK;
		return af_error_set(err, AF_E_CORRUPT, where,
				    "LZ4 block at byte %llu is empty but should decode to %zu bytes",
				    (unsigned long long)where, out_len);
	}
	int n = LZ4_decompress_safe(in, out, (int)in_len, (int)out_len);
	if (n < 0)
		return af_error_set(err, AF_E_CORRUPT, where,
				    "LZ4 block at byte %llu is corrupt (fails at input byte %d) or decodes to more than %zu bytes",
				    (unsigned long long)where, -n - 1, out_len);
	if ((size_t)n != out_len)
		return af_error_set(err, AF_E_CORRUPT, where,
				    "LZ4 block at byte %llu decodes to %d bytes, expected %zu",
				    (unsigned long long)where, n, out_len);
	return AF_OK;
}
