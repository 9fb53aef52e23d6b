/* SPDX-License-Identifier: MIT */
/* libFuzzer target: hostile id map files (src/daemon/idmap_file.c). The
 * input is the file; it is tried as it is and again with its checksum
 * made right (so mutations reach the field checks past it). An accepted
 * map must hold only records the daemon could have issued, must survive
 * being used (issue, find, evict under a small bound) and must encode to
 * bytes that decode to the same map.
 * Seed: tests/fuzz/corpus/fuzz_idmap/seed0, a map of every kind of record,
 * written by this file built with -DFUZZ_IDMAP_WRITE_SEED:
 *   cc -DFUZZ_IDMAP_WRITE_SEED -D_GNU_SOURCE -Isrc/daemon \
 *      tests/fuzz/fuzz_idmap.c src/daemon/idmap.c src/daemon/idmap_file.c \
 *      -lz -o seedgen && ./seedgen seed0 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "idmap.h"
#include "nodes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define KEY 0x5eedULL

static void check_map(struct afd_idmap *m)
{
	const void *it;
	uint64_t n = 0;
	for (const struct afd_idrec *r = afd_idmap_first(m, &it); r;
	     r = afd_idmap_next(&it), n++) {
		if (!afd_idmap_path_ok(r->path, strlen(r->path)) || r->id < 2 ||
		    r->id >= m->next_id || r->kind < NK_DIR ||
		    r->kind > AFD_NKIND_LAST || r->entry > AFD_ENTRY_LAST || !r->gen)
			abort();
	}
	if (n != m->count || n > m->max)
		abort();
	/* a round trip gives the same bytes again */
	unsigned char *a, *b;
	size_t la, lb;
	if (afd_idmap_encode(m, KEY, &a, &la) < 0)
		return;
	struct afd_idmap back;
	char why[128];
	if (afd_idmap_init(&back, m->max, 5) < 0) {
		free(a);
		return;
	}
	if (afd_idmap_decode(&back, KEY, a, la, why, sizeof(why)) != 0)
		abort();
	if (afd_idmap_encode(&back, KEY, &b, &lb) == 0) {
		if (la != lb || memcmp(a, b, la) != 0)
			abort();
		free(b);
	}
	afd_idmap_destroy(&back);
	free(a);
	/* and it can be used */
	struct afd_idrec want = { .kind = NK_FILE, .path = "x", .name = "x",
				  .parent = 1, .dev = 1, .ino = 1 };
	uint64_t id;
	uint32_t gen;
	if (afd_idmap_issue(m, &want, &id, &gen) == 0 &&
	    afd_idmap_find(m, id) == NULL)
		abort();
}

static void one(const uint8_t *data, size_t size, size_t max)
{
	struct afd_idmap m;
	char why[160];
	if (afd_idmap_init(&m, max, 7) < 0)
		return;
	if (afd_idmap_decode(&m, KEY, data, size, why, sizeof(why)) == 0)
		check_map(&m);
	else if (m.count != 0)
		abort();
	afd_idmap_destroy(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	one(data, size, 0);
	if (size < 48)
		return 0;
	uint8_t *copy = malloc(size);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	uint32_t c = (uint32_t)crc32(0, copy, (uInt)(size - 4));
	for (int i = 0; i < 4; i++)
		copy[size - 4 + (size_t)i] = (uint8_t)(c >> (8 * i));
	one(copy, size, 0);
	one(copy, size, 3);   /* a small bound: the oldest are dropped */
	free(copy);
	return 0;
}

#ifdef FUZZ_IDMAP_WRITE_SEED
int main(int argc, char **argv)
{
	struct afd_idmap m;
	if (argc != 2 || afd_idmap_init(&m, 0, 42) < 0)
		return 1;
	struct afd_idrec r[] = {
		{ .kind = NK_DIR, .path = "sub", .name = "sub", .parent = 1,
		  .dev = 1, .ino = 5 },
		{ .kind = NK_NPZDIR, .path = "sub/a.npz", .member = "",
		  .name = "a.npz", .parent = 2, .dev = 1, .ino = 6 },
		{ .kind = NK_ENTRY, .entry = AE_DATA, .path = "sub/a.npz",
		  .member = "k.npy", .name = "data", .parent = 3,
		  .version = 77, .dev = 1, .ino = 6 },
		{ .kind = NK_ZARRFILE, .entry = AE_ZCHUNK, .path = "b.npy",
		  .name = "0.1", .sub = 12, .parent = 1, .version = 9,
		  .dev = 1, .ino = 8 },
	};
	for (size_t i = 0; i < sizeof(r) / sizeof(*r); i++) {
		uint64_t id;
		uint32_t gen;
		if (afd_idmap_issue(&m, &r[i], &id, &gen) < 0)
			return 1;
	}
	unsigned char *buf;
	size_t len;
	if (afd_idmap_encode(&m, KEY, &buf, &len) < 0)
		return 1;
	FILE *f = fopen(argv[1], "wb");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f) != 0)
		return 1;
	free(buf);
	afd_idmap_destroy(&m);
	return 0;
}
#endif
