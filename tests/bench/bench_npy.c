/* SPDX-License-Identifier: MIT */
/*
 * Micro-benchmark of af_npy_parse over memory sources: a typical numpy
 * header (padded to 128 bytes) and a 1000-field structured v2 header.
 * usage: bench_npy [N]   (default 1000000 parses of the typical header)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arrayfs/arrayfs.h"

/* A .npy file with @p header padded to 64 bytes, and @p ndata zero bytes. */
static unsigned char *make(const char *header, size_t ndata, size_t *len)
{
	size_t hl = strlen(header) + 1, pre = 12;
	hl += (64 - (pre + hl) % 64) % 64;
	unsigned char *b = calloc(1, pre + hl + ndata);
	if (!b)
		exit(1);
	memcpy(b, "\x93NUMPY\x02\x00", 8);
	for (int i = 0; i < 4; i++)
		b[8 + i] = (unsigned char)(hl >> (8 * i));
	memset(b + pre, ' ', hl);
	memcpy(b + pre, header, strlen(header));
	b[pre + hl - 1] = '\n';
	*len = pre + hl + ndata;
	return b;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void run(const char *what, const unsigned char *buf, size_t len, long n)
{
	af_source src;
	af_array a;
	af_error err;
	af_source_init_mem(&src, buf, len);
	double t0 = now();
	for (long i = 0; i < n; i++) {
		if (af_npy_parse(&src, &a, &err) != AF_OK) {
			fprintf(stderr, "%s: %s\n", what, err.msg);
			exit(1);
		}
		af_array_free(&a);
	}
	printf("%-28s %10.0f ns/parse (%ld parses)\n", what, (now() - t0) / (double)n, n);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	size_t len;
	unsigned char *typ = make("{'descr': '<f8', 'fortran_order': False, "
				  "'shape': (60000, 28, 28), }", (size_t)60000 * 28 * 28 * 8, &len);
	run("typical header (128 B)", typ, len, n);
	free(typ);

	char *h = malloc(1000 * 24 + 128);
	size_t k = (size_t)sprintf(h, "{'descr': [");
	for (int i = 0; i < 1000; i++)
		k += (size_t)sprintf(h + k, "('f%04d', '<f4'), ", i);
	sprintf(h + k, "], 'fortran_order': False, 'shape': (10,), }");
	unsigned char *big = make(h, 10 * 4000, &len);
	run("1000-field struct header", big, len, n / 1000 > 0 ? n / 1000 : 1);
	free(big);
	free(h);
	return 0;
}
