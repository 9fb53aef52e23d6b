/* SPDX-License-Identifier: MIT */
/* libFuzzer target: zip central directory, local headers, member reads
 * (stored and deflated), and the .npy parser over each member. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Members beyond this are listed but not opened, to bound one run. */
#define FUZZ_ZIP_MEMBERS 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	af_source src;
	af_zip *z;
	af_error err;
	af_source_init_mem(&src, data, size);
	if (af_zip_open(&z, &src, &err) != AF_OK)
		return 0;
	size_t n = af_zip_count(z);
	for (size_t i = 0; i < n; i++) {
		const af_zip_entry *e = af_zip_entry_at(z, i);
		af_zip_find(z, e->name);
	}
	for (size_t i = 0; i < n && i < FUZZ_ZIP_MEMBERS; i++) {
		uint64_t off;
		af_zip_data_offset(z, i, &off, &err);
		af_member *m;
		if (af_member_open(&m, z, i, &err) != AF_OK)
			continue;
		const af_source *ms = af_member_source(m);
		af_array a;
		if (af_npy_parse(ms, &a, &err) == AF_OK) {
			fuzz_views(&a, ms, fuzz_seed(data, size) + i);
			af_array_free(&a);
		}
		af_member_close(m);
	}
	af_zip_close(z);
	return 0;
}
