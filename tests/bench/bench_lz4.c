/* SPDX-License-Identifier: MIT */
/*
 * Benchmark of LZ4 .ra data read through the `data` view (af_lz4_index):
 * an LZ4 .ra file written to a temporary folder and read from the page
 * cache, as the daemon reads it.
 *  - sequential: the whole of `data` in 128 KiB reads (FUSE's size) from a
 *    fresh view, against liblz4's LZ4_decompress_safe of the whole block
 *    (the block already in memory), and against pread of the block plus
 *    that decode (what any reader of the file pays); then in wall time,
 *    liblz4 against the view whose index walks ahead on a pool of 2
 *    threads (af_lz4_index_set_pool);
 *  - random: 2000 4 KiB reads at random offsets of a fresh view (the
 *    first walks the block up to its offset, and later ones past all
 *    before them walk on), then 2000 more once the index covers the whole
 *    block: the first, the median and the largest of the rest, and the
 *    index's memory.
 * Times are CPU times of this thread (the machine may be shared), best of
 * RUNS for the sequential figures.
 * Usage: bench_lz4 [MiB [CONTENT [RUNS]]]   (defaults: 1536, all, 3)
 *        bench_lz4 --write MiB CONTENT PATH   (the .ra alone)
 *        bench_lz4 --safe FILE.ra [RUNS]      (LZ4_decompress_safe, wall)
 *        bench_lz4 --view FILE.ra [RUNS]      (its data view, 512 KiB
 *                                              reads, 2 pool threads, wall)
 * CONTENT: floats (float32 normal), nibbles (uint8 0..15), images (uint8
 * 28x28 blobs on zeros), smooth (float64 sine, 2 decimals), arange (int32).
 */
#include <fcntl.h>
#include <lz4.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "arrayfs/arrayfs.h"

static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t mix(uint64_t x)
{
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

enum content { FLOATS, NIBBLES, IMAGES, SMOOTH, ARANGE, CONTENTS };
static const char *const names[] = { "floats", "nibbles", "images", "smooth",
				     "arange" };
static const char *const descr[] = {
	"float32 normal", "uint8 0..15", "uint8 28x28 blobs on zeros",
	"float64 sine, 2 decimals", "int32 arange" };

/* Bytes [0, n) of the array of content @p k: any stretch can be made
 * again alone, to check reads without keeping the whole array. */
static void fill(enum content k, unsigned char *p, uint64_t at, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t j = at + i;
		switch (k) {
		case FLOATS: {
			uint64_t e = j / 4, h = mix(e + 1);
			double u = ((h >> 11) + 1.0) / 9007199254740993.0;
			float f = (float)(sqrt(-2 * log(u)) * cos((double)(h & 1023) * 0.00614));
			unsigned char b[4];
			memcpy(b, &f, 4);
			p[i] = b[j % 4];
			break;
		}
		case NIBBLES:
			p[i] = (unsigned char)(mix(j) % 16);
			break;
		case IMAGES: {
			uint64_t img = j / 784, px = j % 784, hi = mix(img);
			long dx = (long)(px % 28) - (long)(8 + hi % 12);
			long dy = (long)(px / 28) - (long)(8 + (hi >> 8) % 12);
			p[i] = dx * dx + dy * dy < (long)(20 + (hi >> 16) % 30) ?
			       (unsigned char)(128 + mix(j) % 128) : 0;
			break;
		}
		case SMOOTH: {
			double v = round(sin((double)(j / 8) * 1e-4) * 100000) / 100;
			unsigned char b[8];
			memcpy(b, &v, 8);
			p[i] = b[j % 8];
			break;
		}
		default: {
			uint32_t v = (uint32_t)(j / 4);
			p[i] = (unsigned char)(v >> (8 * (j % 4)));
		}
		}
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* A one-dim uint8 LZ4 .ra of @p n bytes of content @p k in @p path; the
 * block in *block (the caller frees), its size in *blen. */
static int write_ra(const char *path, enum content k, size_t n,
		    unsigned char **block, size_t *blen)
{
	unsigned char *raw = malloc(n);
	int cap = LZ4_compressBound((int)n);
	*block = malloc((size_t)cap);
	if (!raw || !*block || cap <= 0)
		return -1;
	fill(k, raw, 0, n);
	int got = LZ4_compress_default((const char *)raw, (char *)*block, (int)n, cap);
	free(raw);
	if (got <= 0)
		return -1;
	*blen = (size_t)got;
	uint64_t head[7] = { 0x7961727261776172ULL, 2, 2, 1, *blen, 1, n };
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(head, 8, 7, f) != 7 || fwrite(*block, 1, *blen, f) != *blen ||
	    fclose(f) != 0)
		return -1;
	return 0;
}

struct ra_file {
	int fd;
	af_source src;
	af_array a;
};

static int ra_open(struct ra_file *r, const char *path)
{
	af_error err;
	r->fd = open(path, O_RDONLY);
	if (r->fd < 0)
		return -1;
	af_source_init_fd(&r->src, r->fd, 0, (uint64_t)lseek(r->fd, 0, SEEK_END));
	if (af_ra_parse(&r->src, &r->a, &err) != AF_OK) {
		fprintf(stderr, "%s\n", err.msg);
		return -1;
	}
	return 0;
}

/* Seconds on @p clock of LZ4_decompress_safe of @p blen bytes at @p block
 * into the @p n bytes at @p out. */
static double time_safe(const unsigned char *block, size_t blen,
			unsigned char *out, size_t n, double (*clock)(void))
{
	double t = clock();
	if (LZ4_decompress_safe((const char *)block, (char *)out, (int)blen,
				(int)n) != (int)n)
		exit(1);
	return clock() - t;
}

/* A fresh index over @p r's data walking ahead on @p pool, and a data view
 * through it, as the daemon makes them; exits on failure. */
static void open_pooled(struct ra_file *r, af_pool *pool, af_lz4_index **ix,
			af_view **v)
{
	af_error err;
	if (af_lz4_index_open(ix, &r->a, &r->src, &err) != AF_OK ||
	    af_lz4_index_set_pool(*ix, pool, &err) != AF_OK ||
	    af_view_open_shared(v, &r->a, &r->src, AF_VIEW_DATA, *ix,
				&err) != AF_OK) {
		fprintf(stderr, "%s\n", err.msg);
		exit(1);
	}
}

static void bench(enum content k, size_t n, int runs, const char *path)
{
	unsigned char *block;
	size_t blen;
	if (write_ra(path, k, n, &block, &blen) != 0) {
		fprintf(stderr, "cannot write %s\n", path);
		exit(1);
	}
	struct ra_file r;
	if (ra_open(&r, path) != 0)
		exit(1);
	unsigned char *out = malloc(n), *buf = malloc(128 << 10);
	double safe = 1e9, read_safe = 1e9, view = 1e9;
	for (int i = 0; i < runs; i++) {
		double t = time_safe(block, blen, out, n, cpu_now);
		safe = t < safe ? t : safe;
		t = cpu_now();
		if (pread(r.fd, block, blen, 56) != (ssize_t)blen ||
		    LZ4_decompress_safe((const char *)block, (char *)out, (int)blen,
					(int)n) != (int)n)
			exit(1);
		t = cpu_now() - t;
		read_safe = t < read_safe ? t : read_safe;
		af_view *v;
		af_error err;
		if (af_view_open(&v, &r.a, &r.src, AF_VIEW_DATA, &err) != AF_OK)
			exit(1);
		t = cpu_now();
		for (uint64_t off = 0; off < n; off += 128 << 10) {
			size_t got;
			if (af_view_read(v, buf, 128 << 10, off, &got, &err) != AF_OK) {
				fprintf(stderr, "read at %llu: %s\n",
					(unsigned long long)off, err.msg);
				exit(1);
			}
		}
		t = cpu_now() - t;
		view = t < view ? t : view;
		af_view_close(v);
	}
	/* wall time: liblz4 alone, and the view walking ahead on a pool of
	 * 2 threads (af_lz4_index_set_pool) while this thread decodes */
	double safe_wall = 1e9, pool_wall = 1e9, pool_cpu = 1e9;
	af_pool *pool;
	af_error perr;
	if (af_pool_open(&pool, 2, 0, &perr) != AF_OK)
		exit(1);
	for (int i = 0; i < runs; i++) {
		double t = time_safe(block, blen, out, n, wall_now);
		safe_wall = t < safe_wall ? t : safe_wall;
		af_lz4_index *pix;
		af_view *v;
		open_pooled(&r, pool, &pix, &v);
		t = wall_now();
		double c = cpu_now();
		for (uint64_t off = 0; off < n; off += 128 << 10) {
			size_t got;
			if (af_view_read(v, buf, 128 << 10, off, &got, &perr) !=
			    AF_OK)
				exit(1);
		}
		c = cpu_now() - c;
		t = wall_now() - t;
		pool_wall = t < pool_wall ? t : pool_wall;
		pool_cpu = c < pool_cpu ? c : pool_cpu;
		af_view_close(v);
		af_lz4_index_close(pix);
	}
	af_pool_close(pool);
	free(block);
	free(out);
	printf("%-28s %5zu MiB, block %5.1f %%: liblz4 %5.0f MB/s, pread+liblz4 %5.0f MB/s, "
	       "view (128 KiB reads) %5.0f MB/s = %.2fx / %.2fx\n", descr[k], n >> 20,
	       100.0 * (double)blen / (double)n, (double)n / safe / 1e6,
	       (double)n / read_safe / 1e6, (double)n / view / 1e6, safe / view,
	       read_safe / view);
	printf("%-28s wall: liblz4 %5.0f MB/s, view walking ahead on 2 threads "
	       "%5.0f MB/s = %.2fx (its reader's CPU: %.2fx)\n", "",
	       (double)n / safe_wall / 1e6, (double)n / pool_wall / 1e6,
	       safe_wall / pool_wall, safe / pool_cpu);

	/* random 4 KiB reads through a fresh index */
	af_lz4_index *ix;
	af_view *v;
	af_error err;
	if (af_lz4_index_open(&ix, &r.a, &r.src, &err) != AF_OK ||
	    af_view_open_shared(&v, &r.a, &r.src, AF_VIEW_DATA, ix, &err) != AF_OK)
		exit(1);
	enum { READS = 2000 };
	static double ts[READS];
	uint64_t seed = 42;
	/* twice: first the index is made by the reads that go past it, then
	 * it covers the whole block */
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < READS; i++) {
			uint64_t off = mix(seed++) % (n - 4096);
			unsigned char want[4096];
			size_t got;
			double t = cpu_now();
			if (af_view_read(v, buf, 4096, off, &got, &err) != AF_OK)
				exit(1);
			ts[i] = cpu_now() - t;
			fill(k, want, off, 4096);
			if (memcmp(buf, want, 4096) != 0) {
				fprintf(stderr, "wrong bytes at %llu\n", (unsigned long long)off);
				exit(1);
			}
		}
		double first = ts[0], rest = 0;
		qsort(ts + 1, READS - 1, sizeof(double), cmp_double);
		if (pass == 0) { /* the rest of the block, for the second pass */
			size_t got;
			rest = cpu_now();
			if (af_view_read(v, buf, 1, n - 1, &got, &err) != AF_OK)
				exit(1);
			rest = cpu_now() - rest;
		}
		printf("%-28s random 4 KiB, %s: first %.1f ms, then median %.2f ms, max "
		       "%.2f ms; index %.1f MiB (bound %.1f)", "",
		       pass ? "whole index" : "fresh index", first * 1e3,
		       ts[READS / 2] * 1e3, ts[READS - 1] * 1e3,
		       (double)af_lz4_index_memory(ix) / 1048576.0,
		       (double)af_lz4_index_bound(n) / 1048576.0);
		if (pass == 0)
			printf("; the last byte after them %.0f ms", rest * 1e3);
		printf("\n");
	}
	af_view_close(v);
	af_lz4_index_close(ix);
	free(buf);
	af_array_free(&r.a);
	close(r.fd);
	unlink(path);
}

/* --write MiB CONTENT PATH: the .ra alone, for scripts/bench to mount. */
static int write_only(int argc, char **argv)
{
	size_t mib = argc > 2 ? strtoul(argv[2], NULL, 10) : 0;
	int k = 0;
	while (argc > 3 && k < CONTENTS && strcmp(argv[3], names[k]) != 0)
		k++;
	if (argc < 5 || mib < 1 || mib > 2047 || k == CONTENTS) {
		fprintf(stderr, "usage: bench_lz4 --write MiB CONTENT PATH\n");
		return 2;
	}
	unsigned char *block;
	size_t blen;
	int rc = write_ra(argv[4], (enum content)k, mib << 20, &block, &blen);
	free(block);
	return rc ? 1 : 0;
}

/* argv of `--MODE FILE.ra [RUNS]`: the file opened into *r, *runs (3 by
 * default). Returns 0, or -1 with the usage said. */
static int open_file_arg(int argc, char **argv, struct ra_file *r, int *runs)
{
	if (argc < 3 || ra_open(r, argv[2]) != 0) {
		fprintf(stderr, "usage: bench_lz4 %s FILE.ra [RUNS]\n", argv[1]);
		return -1;
	}
	*runs = argc > 3 ? atoi(argv[3]) : 3;
	return 0;
}

/* --safe PATH [RUNS]: liblz4's LZ4_decompress_safe of the block of the
 * LZ4 .ra at PATH, already in memory, into a buffer of its decoded size:
 * MiB/s (wall) of the best of RUNS (the reference for a sequential read
 * of its data through a mount). */
static int safe_only(int argc, char **argv)
{
	struct ra_file r;
	int runs;
	if (open_file_arg(argc, argv, &r, &runs) != 0)
		return 2;
	size_t blen = (size_t)r.a.stored_size, n = (size_t)r.a.data_size;
	unsigned char *block = malloc(blen), *out = malloc(n);
	if (!block || !out || blen > INT32_MAX || n > INT32_MAX ||
	    pread(r.fd, block, blen, (off_t)r.a.data_offset) != (ssize_t)blen)
		return 1;
	memset(out, 0, n); /* pages in: the decode alone is timed */
	double best = 1e9;
	for (int i = 0; i < runs; i++) {
		struct timespec a, b;
		clock_gettime(CLOCK_MONOTONIC, &a);
		if (LZ4_decompress_safe((const char *)block, (char *)out, (int)blen,
					(int)n) != (int)n)
			return 1;
		clock_gettime(CLOCK_MONOTONIC, &b);
		double t = (double)(b.tv_sec - a.tv_sec) +
			   (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
		best = t < best ? t : best;
	}
	printf("%.0f\n", (double)n / 1048576.0 / best);
	free(block);
	free(out);
	af_array_free(&r.a);
	close(r.fd);
	return 0;
}

/* --view PATH [RUNS]: the data of the LZ4 .ra at PATH read through a
 * fresh view in 512 KiB reads (the daemon's read-ahead window), its index
 * on a pool of 2 threads as in the daemon: MiB/s (wall) of the best of
 * RUNS, then the reader thread's CPU seconds of that run. The codec's
 * part of a sequential read through a mount, without the kernel's. */
static int view_only(int argc, char **argv)
{
	struct ra_file r;
	int runs;
	if (open_file_arg(argc, argv, &r, &runs) != 0)
		return 2;
	size_t n = (size_t)r.a.data_size, step = 512 << 10;
	unsigned char *buf = malloc(step);
	af_pool *pool;
	af_error err;
	if (!buf || af_pool_open(&pool, 2, 0, &err) != AF_OK)
		return 1;
	double best = 1e9, best_cpu = 0;
	for (int i = 0; i < runs; i++) {
		af_lz4_index *ix;
		af_view *v;
		open_pooled(&r, pool, &ix, &v);
		double t = wall_now(), c = cpu_now();
		for (uint64_t off = 0; off < n; off += step) {
			size_t got;
			if (af_view_read(v, buf, step, off, &got, &err) != AF_OK) {
				fprintf(stderr, "%s\n", err.msg);
				return 1;
			}
		}
		t = wall_now() - t;
		c = cpu_now() - c;
		if (t < best) {
			best = t;
			best_cpu = c;
		}
		af_view_close(v);
		af_lz4_index_close(ix);
	}
	printf("%.0f %.2f\n", (double)n / 1048576.0 / best, best_cpu);
	af_pool_close(pool);
	free(buf);
	af_array_free(&r.a);
	close(r.fd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--write") == 0)
		return write_only(argc, argv);
	if (argc > 1 && strcmp(argv[1], "--safe") == 0)
		return safe_only(argc, argv);
	if (argc > 1 && strcmp(argv[1], "--view") == 0)
		return view_only(argc, argv);
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 1536;
	int runs = argc > 3 ? atoi(argv[3]) : 3;
	if (mib < 1 || mib > 2047 || runs < 1) {
		fprintf(stderr, "usage: bench_lz4 [MiB (1..2047) [CONTENT [RUNS]]]\n");
		return 2;
	}
	char path[] = "/tmp/bench_lz4_XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		return 1;
	close(fd);
	for (int k = 0; k < CONTENTS; k++)
		if (argc <= 2 || strcmp(argv[2], names[k]) == 0 ||
		    strcmp(argv[2], "all") == 0)
			bench((enum content)k, mib << 20, runs, path);
	return 0;
}
