/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the descr parser on arbitrary literal text. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	af_dtype dt;
	af_error err;
	if (size == 0)
		return 0;
	/* first byte picks the mode so both entry points are explored */
	const char *text = (const char *)data + 1;
	if (data[0] & 1)
		af_dtype_parse(text, size - 1, data[0] & 2, &dt, &err);
	else
		af_dtype_parse_typestr(text, size - 1, &dt, &err);
	return 0;
}
