/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the input is a raw deflate stream, inflated through
 * af_inflate by zlib and by ISA-L with the same reads (a sequential pass,
 * reads at random offsets and at every access point); both must give the
 * same status, message (its numbers aside: where a zlib stops in its input
 * depends on its buffers) and bytes, read by read. The one difference
 * allowed is the documented one: ISA-L takes an incomplete Huffman code
 * that zlib refuses ("invalid ... set"); from there on the engines part.
 *
 * Input: byte 0 flags (bit 0: declare exactly what zlib inflates, else
 * that +-; bit 4: a wrong CRC-32; bits 5-6: ISA-L's seek chunk), byte 1
 * (bits 0-1) ISA-L's scout chunk; the first 64 bytes seed the read
 * sizes; the rest is the stream. Without ISA-L it only runs zlib.
 */
#include <stdio.h>

#include <zlib.h>

#include "fuzz_common.h"
#include "../../src/codec/inflate/inflate_opts_i.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* small outputs keep runs fast (as fuzz_inflate) */
#define FUZZ_DIFF_MAX_OUT (256u << 10)

struct engines {
	af_inflate *z[2]; /* zlib, ISA-L */
	int n;            /* 1 without ISA-L */
	bool parted;      /* ISA-L took a code zlib refused */
};

static bool incomplete_code(const char *msg)
{
	return strstr(msg, "invalid code lengths set") ||
	       strstr(msg, "invalid literal/lengths set") ||
	       strstr(msg, "invalid distances set");
}

/* Whether @p a and @p b say the same with their digits left out. */
static bool same_words(const char *a, const char *b)
{
	for (;;) {
		while (*a >= '0' && *a <= '9')
			a++;
		while (*b >= '0' && *b <= '9')
			b++;
		if (*a != *b)
			return false;
		if (!*a)
			return true;
		a++;
		b++;
	}
}

static void both_read(struct engines *e, uint64_t off, size_t len)
{
	static unsigned char buf[2][FUZZ_READ_MAX];
	if (len > FUZZ_READ_MAX)
		len = FUZZ_READ_MAX;
	af_status st[2];
	af_error err[2];
	size_t got[2];
	for (int i = 0; i < e->n; i++)
		st[i] = af_inflate_read(e->z[i], buf[i], len, off, &got[i],
					&err[i]);
	if (e->n < 2 || e->parted)
		return;
	if (st[0] == AF_E_CORRUPT && incomplete_code(err[0].msg)) {
		e->parted = true;
		return;
	}
	if (st[0] != st[1] ||
	    (st[0] && !same_words(err[0].msg, err[1].msg)) ||
	    (!st[0] && (got[0] != got[1] ||
			memcmp(buf[0], buf[1], got[0]) != 0))) {
		fprintf(stderr, "engines differ: read %zu at %llu: zlib %s "
			"(%s), ISA-L %s (%s)\n", len, (unsigned long long)off,
			af_status_str(st[0]), st[0] ? err[0].msg : "",
			af_status_str(st[1]), st[1] ? err[1].msg : "");
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	uint8_t flags = data[0];
	uint64_t seed = fuzz_seed(data, size);
	const uint8_t *stream = data + 2;
	size_t slen = size - 2;

	/* what plain zlib makes of it decides the declared size and CRC */
	unsigned char *plain = malloc(FUZZ_DIFF_MAX_OUT);
	if (!plain)
		return 0;
	z_stream zs;
	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, -15) != Z_OK) {
		free(plain);
		return 0;
	}
	zs.next_in = (unsigned char *)stream;
	zs.avail_in = (uInt)slen;
	zs.next_out = plain;
	zs.avail_out = FUZZ_DIFF_MAX_OUT;
	inflate(&zs, Z_FINISH);
	uint64_t made = FUZZ_DIFF_MAX_OUT - zs.avail_out;
	inflateEnd(&zs);
	uint32_t crc = (uint32_t)crc32_z(0, plain, (size_t)made);
	free(plain);
	uint64_t declared = made;
	if (!(flags & 1)) {
		int delta = (int)((flags >> 1) & 7) - 3;
		declared = delta < 0 && made < (uint64_t)-delta
				   ? 0
				   : made + (uint64_t)(int64_t)delta;
	}
	if (flags & 16)
		crc ^= 1;

	af_source src;
	af_source_init_mem(&src, stream, slen);
	struct af_inflate_opts o;
	af_inflate_default_opts(&o);
	o.span = 4096;
	o.block = 1024;
	o.cache_blocks = 2;
	o.inbuf = 512;
	o.index_div = 8;
	o.seek_chunk = 4u << ((flags >> 5) & 3);
	o.scout_chunk = 16u << (data[1] & 3);
	o.seek_limit = 8192;
	struct engines e = { .n = 0 };
	const af_inflate_engine which[2] = { AF_INFLATE_ZLIB, AF_INFLATE_ISAL };
	for (int i = 0; i < 2; i++) {
		af_error err;
		o.engine = which[i];
		if (!af_inflate_engine_available(which[i]) ||
		    af_inflate_open_opts(&e.z[e.n], &src, declared, crc, &o,
					 &err) != AF_OK)
			break;
		e.n++;
	}
	/* a sequential pass in pieces, then random offsets, then points */
	uint64_t off = 0;
	for (int i = 0; i < 64 && off <= declared; i++) {
		size_t len = 1 + (size_t)((seed >> (i % 48)) % FUZZ_READ_MAX);
		both_read(&e, off, len);
		off += len;
	}
	for (int i = 0; i < 4; i++)
		both_read(&e, declared ? (seed >> (8 * i)) % declared : 0,
			  (size_t)(seed >> (16 * i)) % FUZZ_READ_MAX);
	for (int i = 0; i < e.n; i++) {
		size_t np = af_inflate_points(e.z[i]);
		for (size_t p = np; p-- > 0 && p + 8 > np;)
			both_read(&e, af_inflate_point_out(e.z[i], p), 300);
	}
	for (int i = 0; i < e.n; i++)
		af_inflate_close(e.z[i]);
	return 0;
}
