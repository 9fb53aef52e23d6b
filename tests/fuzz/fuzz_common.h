/* SPDX-License-Identifier: MIT */
/**
 * @file fuzz_common.h
 * Shared by the libFuzzer targets: exercise every view of a parsed array
 * at offsets drawn from the input, so the view composer is fuzzed along
 * with the parser that fed it.
 */
#ifndef AF_FUZZ_COMMON_H
#define AF_FUZZ_COMMON_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arrayfs/arrayfs.h"

/* Bounded so one input cannot make a run slow: views are read in at most
 * this many bytes, at a few offsets. */
#define FUZZ_READ_MAX 4096u

static inline void fuzz_text_files(const af_array *a)
{
	char *t;
	size_t n;
	if (af_text_shape(a, &t, &n) == AF_OK)
		free(t);
	if (af_text_dtype(a, &t, &n) == AF_OK)
		free(t);
	if (af_text_header(a, &t, &n) == AF_OK)
		free(t);
}

static inline void fuzz_views(const af_array *a, const af_source *src,
			      uint64_t seed)
{
	static const af_view_kind kinds[] = { AF_VIEW_DATA, AF_VIEW_NPY,
					      AF_VIEW_RA };
	unsigned char buf[FUZZ_READ_MAX];
	fuzz_text_files(a);
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		af_view *v;
		af_error err;
		if (af_view_open(&v, a, src, kinds[k], &err) != AF_OK)
			continue;
		uint64_t size = af_view_size(v);
		uint64_t offs[4] = { 0, size / 2, size ? size - 1 : 0,
				     size ? seed % size : 0 };
		for (int i = 0; i < 4; i++) {
			size_t got;
			size_t len = (size_t)((seed >> (8 * i)) % FUZZ_READ_MAX);
			af_view_read(v, buf, len, offs[i], &got, &err);
			af_extent ext;
			af_view_extent(v, offs[i], &ext);
		}
		af_view_close(v);
	}
}

static inline uint64_t fuzz_seed(const uint8_t *data, size_t size)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < size && i < 64; i++)
		h = (h ^ data[i]) * 1099511628211ULL;
	return h;
}

#endif /* AF_FUZZ_COMMON_H */
