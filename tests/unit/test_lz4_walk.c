/* SPDX-License-Identifier: MIT */
/*
 * Tests for src/codec/lz4/lz4_walk.c: the walker's verdict on a raw LZ4 block
 * is liblz4's (LZ4_decompress_safe of the whole block into the declared
 * size), and reads through the index give liblz4's bytes, on blocks made
 * to hit liblz4's edges (sequences ending near either end of the input or
 * output, in its fast loop, its careful one and its shortcut), on flipped
 * and cut compressor output, and on declared sizes a little off. The judge
 * is tests/fuzz/lz4_oracle.h, which fuzz_lz4_index runs too.
 */
#include <lz4.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "af_test.h"
#include "../fuzz/lz4_oracle.h"

/* Tuning drawn from @p seed: cache blocks of 1 byte to 2 KiB, windows
 * from the smallest allowed. */
static struct lz4_opts drawn_opts(uint64_t *seed)
{
	struct lz4_opts o;
	lz4_default_opts(&o);
	o.block = 1 + (size_t)(aft_rand(seed) % 2048);
	o.span = o.block * (1 + aft_rand(seed) % 4);
	o.cache_blocks = 1 + (unsigned)(aft_rand(seed) % 3);
	o.walk_buf = 64 + (size_t)(aft_rand(seed) % 300);
	return o;
}

/* Append a length continuation (the bytes after a 15 nibble). */
static size_t put_len(unsigned char *p, size_t v)
{
	size_t i = 0;
	for (; v >= 255; v -= 255)
		p[i++] = 255;
	p[i++] = (unsigned char)v;
	return i;
}

/*
 * A block of random sequences into @p c (room for 40000 bytes): short and
 * long literal runs and matches, offsets mostly inside the output and
 * sometimes past it or 0, ending with literals whose length is drawn too;
 * then sometimes cut or given a stray byte. *out_len: what it decodes to
 * if it is valid.
 */
static size_t random_block(unsigned char *c, uint64_t *seed, size_t *out_len)
{
	size_t ip = 0, op = 0;
	int nseq = (int)(aft_rand(seed) % 12);
	for (int k = 0; k < nseq; k++) {
		size_t lit = aft_rand(seed) % 4 == 0 ? aft_rand(seed) % 300 :
						       aft_rand(seed) % 20;
		size_t ml = 4 + (aft_rand(seed) % 4 == 0 ? aft_rand(seed) % 600 :
							   aft_rand(seed) % 20);
		c[ip++] = (unsigned char)((lit < 15 ? lit : 15) << 4 |
					  (ml - 4 < 15 ? ml - 4 : 15));
		if (lit >= 15)
			ip += put_len(c + ip, lit - 15);
		for (size_t i = 0; i < lit; i++)
			c[ip++] = (unsigned char)aft_rand(seed);
		op += lit;
		size_t off = aft_rand(seed) % 8 == 0 ? aft_rand(seed) % 65536 :
			     aft_rand(seed) % (op + 2);
		c[ip++] = (unsigned char)off;
		c[ip++] = (unsigned char)(off >> 8);
		if (ml - 4 >= 15)
			ip += put_len(c + ip, ml - 19);
		op += ml;
	}
	size_t lit = aft_rand(seed) % 3 == 0 ? aft_rand(seed) % 40 : aft_rand(seed) % 8;
	c[ip++] = (unsigned char)((lit < 15 ? lit : 15) << 4 |
				  (aft_rand(seed) % 5 == 0 ? aft_rand(seed) % 16 : 0));
	if (lit >= 15)
		ip += put_len(c + ip, lit - 15);
	for (size_t i = 0; i < lit; i++)
		c[ip++] = (unsigned char)aft_rand(seed);
	*out_len = op + lit;
	if (aft_rand(seed) % 6 == 0)
		ip -= (size_t)(aft_rand(seed) % (ip + 1));
	if (aft_rand(seed) % 6 == 0)
		c[ip++] = (unsigned char)aft_rand(seed);
	return ip;
}

/* The declared size: mostly the true one, sometimes a little off. */
static size_t declared(size_t n, uint64_t *seed)
{
	uint64_t r = aft_rand(seed) % 10;
	size_t d = r == 0 ? n + aft_rand(seed) % 100 :
		   r == 1 && n > 3 ? n - 1 - aft_rand(seed) % 3 : n;
	return d ? d : 1;
}

static void judge(const unsigned char *c, size_t cn, size_t n, uint64_t *seed,
		  int reads, long round)
{
	struct lz4_opts o = drawn_opts(seed);
	char why[512];
	const char *bad = lz4_oracle(c, cn, n, &o, aft_rand(seed), reads, why,
				     sizeof(why));
	if (bad)
		ck_abort_msg("round %ld (%zu bytes, block %zu, span %llu): %s", round,
			     cn, o.block, (unsigned long long)o.span, bad);
}

static void random_blocks(long rounds, uint64_t seed)
{
	unsigned char *c = malloc(40000);
	int valid = 0;
	for (long i = 0; i < rounds; i++) {
		size_t n;
		size_t cn = random_block(c, &seed, &n);
		size_t d = declared(n, &seed);
		unsigned char *ref = malloc(d);
		valid += LZ4_decompress_safe((const char *)c, (char *)ref, (int)cn,
					     (int)d) == (int)d;
		free(ref);
		judge(c, cn, d, &seed, 4, i);
	}
	/* both verdicts are reached, or the blocks test nothing */
	ck_assert_int_gt(valid, rounds / 20);
	ck_assert_int_lt(valid, rounds - rounds / 20);
	free(c);
}

START_TEST(random_sequences_get_liblz4s_verdict)
{
	random_blocks(3000, 21);
}
END_TEST

START_TEST(many_random_sequences_get_liblz4s_verdict)
{
	random_blocks(300000, 22);
}
END_TEST

/* Compressor output flipped, cut and declared a little off. */
static void mangled_blocks(long rounds, uint64_t seed)
{
	size_t plen;
	unsigned char *plain = aft_ra_data(aft_reference("cifar_airplane.ra"), &plen);
	for (long i = 0; i < rounds; i++) {
		size_t n = 1 + (size_t)(aft_rand(&seed) % plen);
		size_t from = (size_t)(aft_rand(&seed) % (plen - n + 1));
		size_t cap = (size_t)LZ4_compressBound((int)n), cn;
		unsigned char *c = malloc(cap + 1);
		cn = (size_t)LZ4_compress_default((const char *)plain + from,
						  (char *)c, (int)n, (int)cap);
		switch (aft_rand(&seed) % 4) {
		case 0: /* a few bytes flipped */
			for (int j = 0; j < 1 + (int)(aft_rand(&seed) % 3); j++)
				c[aft_rand(&seed) % cn] ^= (unsigned char)(1 + aft_rand(&seed) % 255);
			break;
		case 1: /* cut */
			cn = (size_t)(aft_rand(&seed) % (cn + 1));
			break;
		case 2: /* the last bytes changed: the block's end rules */
			for (size_t j = 0; j < 16 && j < cn; j++)
				if (aft_rand(&seed) % 3 == 0)
					c[cn - 1 - j] = (unsigned char)aft_rand(&seed);
			break;
		default: /* as made */
			break;
		}
		judge(c, cn, declared(n, &seed), &seed, 4, i);
		free(c);
	}
	free(plain);
}

START_TEST(mangled_blocks_get_liblz4s_verdict)
{
	mangled_blocks(2000, 31);
}
END_TEST

START_TEST(many_mangled_blocks_get_liblz4s_verdict)
{
	mangled_blocks(100000, 32);
}
END_TEST

/*
 * liblz4's edges one by one: which of its loops meets a sequence decides
 * whether it may end near the end of the input or output. Each block is
 * judged whatever its verdict; the ones named here are those liblz4 takes
 * though the LZ4 format's end rules would not.
 */
START_TEST(liblz4s_edges_get_its_verdict)
{
	uint64_t seed = 5;
	unsigned char c[256];
	/* a match ending at the very end of the output, which the format
	 * forbids and the careful loop's shortcut takes (40 bytes: careful
	 * from the start), then an empty last sequence */
	size_t k = 0;
	c[k++] = 0x40; /* 4 literals, a 4-byte match 4 back */
	memcpy(c + k, "abcd", 4);
	k += 4;
	c[k++] = 4;
	c[k++] = 0;
	c[k++] = 0xEE; /* 14 literals, an 18-byte match 8 back */
	memcpy(c + k, "ABCDEFGHIJKLMN", 14);
	k += 14;
	c[k++] = 8;
	c[k++] = 0;
	c[k++] = 0x00;
	ck_assert_int_eq(LZ4_decompress_safe((const char *)c, (char *)c + 128,
					     (int)k, 40), 40);
	judge(c, k, 40, &seed, 3, 0);
	/* the same at every declared size and cut, and with filler before */
	for (size_t pre = 0; pre < 80; pre += 7)
		for (size_t cut = 0; cut <= 3; cut++) {
			unsigned char b[256];
			size_t m = 0;
			if (pre) { /* 15 literals, a match of 19 + pre at offset 1 */
				b[m++] = 0xFF;
				b[m++] = 0;
				memset(b + m, 'z', 15);
				m += 15;
				b[m++] = 1;
				b[m++] = 0;
				m += put_len(b + m, pre);
			}
			memcpy(b + m, c, k - cut);
			size_t n = (pre ? 15 + pre + 19 : 0) + 40;
			for (size_t d = n - 2; d <= n + 2; d++)
				judge(b, m + k - cut, d, &seed, 3, (long)pre);
		}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("lz4_walk");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, random_sequences_get_liblz4s_verdict);
	tcase_add_test(tc, mangled_blocks_get_liblz4s_verdict);
	tcase_add_test(tc, liblz4s_edges_get_its_verdict);
	suite_add_tcase(s, tc);
	tc = tcase_create("many");
	aft_tag_slow(tc);
	tcase_add_test(tc, many_random_sequences_get_liblz4s_verdict);
	tcase_add_test(tc, many_mangled_blocks_get_liblz4s_verdict);
	suite_add_tcase(s, tc);
	return aft_run(s);
}
