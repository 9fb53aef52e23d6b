/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the input is a raw LZ4 block, decoded through an
 * af_lz4_index (the access-point decoder of LZ4 .ra data) at offsets drawn
 * from the input and judged by lz4_oracle.h against liblz4's
 * LZ4_decompress_safe of the whole block: the same verdict, the same
 * bytes, never more memory than the index's bound. Any breach aborts.
 *
 * Input: byte 0 the cache block size (1..256 x 16 bytes, so that blocks
 * are cut at every kind of place), byte 1 the span (1..8 blocks, bits 0-2)
 * and the cache (1..4 blocks, bits 3-4) and the declared size (bits 5-7:
 * mostly what liblz4 decodes the block to, else that +-1, or bytes 2-3),
 * bytes 2-9 the seed of the reads; the rest is the block.
 */
#include "lz4_oracle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* small outputs keep runs fast */
#define FUZZ_LZ4_MAX_OUT (256u << 10)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 10)
		return 0;
	struct lz4_opts o;
	lz4_default_opts(&o);
	o.block = 16u * (1u + data[0]);
	o.span = o.block * (1u + (data[1] & 7u));
	o.cache_blocks = 1u + ((data[1] >> 3) & 3u);
	o.walk_buf = 64u + 61u * data[0];
	uint64_t seed;
	memcpy(&seed, data + 2, sizeof(seed));
	const unsigned char *c = data + 10;
	size_t cn = size - 10;

	static unsigned char scratch[FUZZ_LZ4_MAX_OUT];
	int n = LZ4_decompress_safe((const char *)c, (char *)scratch, (int)cn,
				    (int)sizeof(scratch));
	size_t out_len;
	switch (data[1] >> 5) {
	case 5:
		out_len = n > 0 ? (size_t)n + 1 : 1;
		break;
	case 6:
		out_len = n > 1 ? (size_t)n - 1 : 1;
		break;
	case 7:
		out_len = 1u + (data[2] | (size_t)data[3] << 8);
		break;
	default:
		out_len = n > 0 ? (size_t)n : 1u + data[2];
	}
	char why[512];
	if (lz4_oracle(c, cn, out_len, &o, seed, 6, why, sizeof(why))) {
		fprintf(stderr, "fuzz_lz4_index: %s\n", why);
		abort();
	}
	return 0;
}
