/* SPDX-License-Identifier: MIT */
/* libFuzzer target: .npy header + descr parsing, then every view. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	af_source src;
	af_array a;
	af_error err;
	af_source_init_mem(&src, data, size);
	if (af_npy_parse(&src, &a, &err) == AF_OK) {
		fuzz_views(&a, &src, fuzz_seed(data, size));
		af_array_free(&a);
	}
	return 0;
}
