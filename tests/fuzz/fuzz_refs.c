/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: arrayrefs' writer over one hostile file. The first
 * byte picks its kind (.npy, .ra, .npz) and the grid (the chunk and inline
 * bounds, small so that short tails, inline chunks and grids of their own
 * all happen); the rest is the file, written into a folder of its own.
 * Whatever the bytes, a document the writer calls whole must be JSON.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arrayfs/arrayfs.h"
#include "json_read.h"
#include "refs_write.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char fuzz_dir[] = "/tmp/fuzz_refs.XXXXXX";

static void fuzz_folder_remove(void)
{
	rmdir(fuzz_dir);
}

/* The folder the input is written into: one per process, made once and
 * removed at exit (each input's file is removed after its run). */
static const char *fuzz_folder(void)
{
	static const char *made;
	if (!made && (made = mkdtemp(fuzz_dir)))
		atexit(fuzz_folder_remove);
	return made;
}

static void check_json(const char *doc, size_t len)
{
	json_reader *r = calloc(1, sizeof(*r));
	r->in = fmemopen((void *)doc, len, "r");
	if (!r->in || !json_skip_value(r) || json_peek(r) != EOF)
		__builtin_trap();
	fclose(r->in);
	free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const ext[] = { "npy", "ra", "npz" };
	const char *dir = fuzz_folder();
	if (!dir || size < 1)
		return 0;
	char path[64];
	snprintf(path, sizeof(path), "%s/x.%s", dir, ext[data[0] % 3]);
	FILE *f = fopen(path, "wb");
	if (!f)
		return 0;
	fwrite(data + 1, 1, size - 1, f);
	fclose(f);

	char *doc = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&doc, &len);
	FILE *diag = fopen("/dev/null", "w");
	refs_opts o = { .prog = "fuzz_refs", .source = dir, .source_abs = dir,
			.prefix = "https://example.org/x y",
			.max_chunk_bytes = 16u << (data[0] >> 4),
			.inline_max = 8u << ((data[0] >> 2) & 3), .diag = diag };
	refs_outcome res;
	af_error err;
	if (out && diag && refs_write(&o, out, &res, &err) == AF_OK) {
		fflush(out);
		check_json(doc, len);
	}
	if (out)
		fclose(out);
	if (diag)
		fclose(diag);
	free(doc);
	unlink(path);
	return 0;
}
