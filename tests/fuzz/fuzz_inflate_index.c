/* SPDX-License-Identifier: MIT */
/* libFuzzer target: hostile index files (af_inflate.h's format) against a
 * real deflate member built at start-up. The input is the index file; it
 * is tried as it is and again with its checksum made right (so mutations
 * reach the checks past it). An accepted index must never give bytes
 * other than the member's: every read that succeeds is compared with the
 * plain data. Seed: tests/fuzz/corpus/fuzz_inflate_index/seed0, the index
 * a pass saves, written by this file built with -DFUZZ_INDEX_WRITE_SEED:
 *   cc -DFUZZ_INDEX_WRITE_SEED -DAF_HAVE_ISAL=1 -Iinclude \
 *      tests/fuzz/fuzz_inflate_index.c BUILD/src/codec/libarrayfs.a \
 *      -lz -llz4 -lisal -lpthread -o seedgen && ./seedgen seed0 */
#include <stdio.h>
#include <zlib.h>

#include "fuzz_common.h"
#include "../../src/codec/inflate/inflate_opts_i.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MEMBER_PLAIN (256u << 10)

struct member {
	unsigned char *plain, *comp;
	size_t clen;
	uint32_t crc;
	af_source src;
	af_index_key key;
	struct af_inflate_opts o;
};

/* Words and digits, deflated with small blocks: many points, windows
 * that deflate (index_div keeps some of them deflated). */
static struct member *member_get(void)
{
	static struct member m;
	if (m.plain)
		return &m;
	m.plain = malloc(MEMBER_PLAIN);
	uint64_t s = 42;
	for (size_t i = 0; i < MEMBER_PLAIN; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		unsigned r = (unsigned)(s >> 33);
		m.plain[i] = (unsigned char)(r % 7 ? "arrayfs "[i % 8]
						   : "0123456789"[r % 10]);
	}
	m.crc = (uint32_t)crc32(0, m.plain, MEMBER_PLAIN);
	z_stream zs;
	memset(&zs, 0, sizeof(zs));
	deflateInit2(&zs, 6, Z_DEFLATED, -15, 1, Z_DEFAULT_STRATEGY);
	size_t cap = deflateBound(&zs, MEMBER_PLAIN);
	m.comp = malloc(cap);
	zs.next_in = m.plain;
	zs.avail_in = MEMBER_PLAIN;
	zs.next_out = m.comp;
	zs.avail_out = (uInt)cap;
	deflate(&zs, Z_FINISH);
	m.clen = cap - zs.avail_out;
	deflateEnd(&zs);
	af_source_init_mem(&m.src, m.comp, m.clen);
	m.key = (af_index_key){ .dev = 1, .ino = 2, .size = 3,
				.local_offset = 30, .comp_size = m.clen,
				.uncomp_size = MEMBER_PLAIN, .crc = m.crc };
	af_inflate_default_opts(&m.o);
	m.o.span = 16u << 10;
	m.o.piece = 4u << 10; /* several pieces a span */
	m.o.index_div = 4;
	m.o.block = 8u << 10;
	m.o.inbuf = 8u << 10;
	return &m;
}

static void try_index(struct member *m, const uint8_t *idx, size_t len,
		      uint64_t seed)
{
	af_inflate *z;
	af_error err;
	if (af_inflate_open_opts(&z, &m->src, MEMBER_PLAIN, m->crc, &m->o,
				 &err) != AF_OK)
		return;
	if (af_inflate_index_import(z, &m->key, idx, len, &err) == AF_OK) {
		unsigned char buf[FUZZ_READ_MAX];
		for (int i = 0; i < 4; i++) {
			seed = seed * 6364136223846793005ull + 1;
			uint64_t off = (seed >> 16) % MEMBER_PLAIN;
			size_t got;
			if (af_inflate_read(z, buf, sizeof(buf), off, &got,
					    &err) == AF_OK &&
			    memcmp(buf, m->plain + off, got) != 0)
				abort(); /* an index gave other bytes */
		}
	}
	af_inflate_close(z);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct member *m = member_get();
	uint64_t seed = fuzz_seed(data, size);
	try_index(m, data, size, seed);
	if (size < 4 || size > (1u << 20))
		return 0;
	uint8_t *fixed = malloc(size);
	if (!fixed)
		return 0;
	memcpy(fixed, data, size);
	uint32_t c = (uint32_t)crc32(0, fixed, (uInt)(size - 4));
	for (int i = 0; i < 4; i++)
		fixed[size - 4 + i] = (uint8_t)(c >> (8 * i));
	try_index(m, fixed, size, seed);
	free(fixed);
	return 0;
}

#ifdef FUZZ_INDEX_WRITE_SEED
/* Write the index a sequential pass saves for the member to argv[1]. */
int main(int argc, char **argv)
{
	struct member *m = member_get();
	af_inflate *z;
	af_error err;
	if (argc != 2 || af_inflate_open_opts(&z, &m->src, MEMBER_PLAIN,
					      m->crc, &m->o, &err) != AF_OK)
		return 2;
	static unsigned char buf[4096];
	size_t got;
	for (uint64_t off = 0; off < MEMBER_PLAIN; off += sizeof(buf))
		if (af_inflate_read(z, buf, sizeof(buf), off, &got, &err))
			return 1;
	unsigned char *idx;
	size_t len;
	if (af_inflate_index_export(z, &m->key, &idx, &len, &err) != AF_OK)
		return 1;
	FILE *f = fopen(argv[1], "wb");
	if (!f || fwrite(idx, 1, len, f) != len || fclose(f))
		return 1;
	printf("%zu points, %zu bytes\n", af_inflate_points(z), len);
	free(idx);
	af_inflate_close(z);
	return 0;
}
#endif
