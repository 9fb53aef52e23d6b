/* SPDX-License-Identifier: MIT */
/*
 * Benchmark of af_inflate on a 128 MiB deflated member of float32 ramps with
 * noise: plain zlib inflate speed, af_inflate sequential 1 MiB reads against
 * it, 4 KiB reads at random offsets once the index exists, and index memory
 * (windows as stored, deflated or not, plus the point records).
 * Usage: bench_inflate [MiB [span-KiB [index-div]]] (defaults: 128, the
 * library's)
 *
 *        bench_inflate --pass FILE SIZE CRC [RUNS]
 * times the first sequential pass (1 MiB reads, a fresh af_inflate) over
 * the raw deflate stream in FILE, which inflates to SIZE bytes with CRC-32
 * CRC, with each engine this build has: best of RUNS (default 5), the file
 * read right before each run (scripts/bench compares igzip and unzip).
 *
 *        bench_inflate --indexed FILE SIZE CRC THREADS [RUNS]
 * times a sequential read of the same stream with its saved index: one
 * pass builds and exports the index, then each run imports it into a
 * fresh af_inflate on a pool of THREADS (0: none) with the daemon's
 * default budget and reads it in 512 KiB reads (the mount's readahead):
 * the codec's part of a fresh mount's read with a saved index, without
 * FUSE. Prints wall and CPU (the process's, all threads) of the best run.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "arrayfs/arrayfs.h"
#include "../../src/codec/inflate/inflate_opts_i.h"

static double clock_s(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t rng(uint64_t *s)
{
	uint64_t x = (*s += 0x9e3779b97f4a7c15ull);
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Ramps of varying slope, noise in the low mantissa bits: compresses like
 * measured data does (2-3x), not like zeros. */
static void make_floats(unsigned char *p, size_t n)
{
	uint64_t seed = 42;
	float v = 0, slope = 0.01f;
	for (size_t i = 0; i + 4 <= n; i += 4) {
		uint64_t r = rng(&seed);
		if (i % 40000 == 0)
			slope = (float)(r % 1000) * 1e-5f - 0.005f;
		v += slope;
		float f = v + (float)(r >> 54) * 1e-6f;
		memcpy(p + i, &f, 4);
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static size_t deflate_all(const unsigned char *in, size_t n,
			  unsigned char **out)
{
	z_stream zs;
	memset(&zs, 0, sizeof(zs));
	if (deflateInit2(&zs, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return 0;
	size_t cap = deflateBound(&zs, n);
	*out = malloc(cap);
	if (!*out)
		return 0;
	zs.next_in = (unsigned char *)in;
	zs.avail_in = (uInt)n;
	zs.next_out = *out;
	zs.avail_out = (uInt)cap;
	int ret = deflate(&zs, Z_FINISH);
	size_t len = cap - zs.avail_out;
	deflateEnd(&zs);
	return ret == Z_STREAM_END ? len : 0;
}

/* Plain zlib: one call over the whole member; optionally CRC-32 as well. */
static double cpu_now(void)
{
	return clock_s(CLOCK_THREAD_CPUTIME_ID);
}

static double plain_inflate(const unsigned char *comp, size_t clen,
			    unsigned char *out, size_t n, int with_crc)
{
	double t0 = cpu_now();
	z_stream zs;
	memset(&zs, 0, sizeof(zs));
	inflateInit2(&zs, -15);
	zs.next_in = (unsigned char *)comp;
	zs.avail_in = (uInt)clen;
	zs.next_out = out;
	zs.avail_out = (uInt)n;
	int ret = inflate(&zs, Z_FINISH);
	inflateEnd(&zs);
	if (with_crc)
		(void)crc32_z(0, out, n);
	double t = cpu_now() - t0;
	if (ret != Z_STREAM_END) {
		fprintf(stderr, "plain inflate failed: %d\n", ret);
		exit(1);
	}
	return (double)n / t / 1e6;
}

/* Read all of @p fd, so that the pass starts from the page cache. */
static void warm(int fd, unsigned char *buf, size_t len)
{
	off_t at = 0;
	ssize_t n;
	while ((n = pread(fd, buf, len, at)) > 0)
		at += n;
}

/* The raw deflate stream of the --pass and --indexed modes: FILE SIZE CRC
 * at argv[2..4]. */
struct stream {
	uint64_t size;
	uint32_t crc;
	int fd;
	struct stat st;
	af_source src;
};

static bool stream_open(struct stream *s, char **argv)
{
	s->size = strtoull(argv[3], NULL, 0);
	s->crc = (uint32_t)strtoul(argv[4], NULL, 0);
	s->fd = open(argv[2], O_RDONLY);
	if (s->fd < 0 || fstat(s->fd, &s->st) != 0) {
		perror(argv[2]);
		return false;
	}
	af_source_init_fd(&s->src, s->fd, 0, (uint64_t)s->st.st_size);
	return true;
}

static int first_pass(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: bench_inflate --pass FILE SIZE CRC "
			"[RUNS]\n");
		return 2;
	}
	int runs = argc > 5 ? atoi(argv[5]) : 5;
	struct stream in;
	if (!stream_open(&in, argv))
		return 1;
	const size_t piece = 1u << 20;
	unsigned char *buf = malloc(piece);
	if (!buf)
		return 1;
	static const af_inflate_engine engines[] = { AF_INFLATE_ZLIB,
						     AF_INFLATE_ISAL };
	for (int e = 0; e < 2; e++) {
		if (!af_inflate_engine_available(engines[e]))
			continue;
		double best = 0, best_cpu = 0;
		for (int r = 0; r < runs; r++) {
			warm(in.fd, buf, piece);
			double t0 = now(), c0 = cpu_now();
			af_inflate *z;
			af_error err;
			if (af_inflate_open_engine(&z, &in.src, in.size, in.crc,
						   engines[e], &err) != AF_OK)
				return 1;
			for (uint64_t off = 0; off < in.size; off += piece) {
				size_t got;
				if (af_inflate_read(z, buf, piece, off, &got,
						    &err) != AF_OK) {
					fprintf(stderr, "read: %s\n", err.msg);
					return 1;
				}
			}
			double mib = (double)in.size / (1 << 20);
			double mibs = mib / (now() - t0);
			double cpu = mib / (cpu_now() - c0);
			best = mibs > best ? mibs : best;
			best_cpu = cpu > best_cpu ? cpu : best_cpu;
			if (af_inflate_engine_used(z) != engines[e]) {
				fprintf(stderr, "%s gave up\n",
					af_inflate_engine_name(engines[e]));
				return 1;
			}
			af_inflate_close(z);
		}
		printf("%-6s %8.1f MiB/s wall %8.1f MiB/s CPU (best of %d)\n",
		       af_inflate_engine_name(engines[e]), best, best_cpu, runs);
	}
	free(buf);
	close(in.fd);
	return 0;
}

/* The index of the stream @p src (@p size bytes out, CRC-32 @p crc) as a
 * saved index file would hold it, under @p key; NULL on failure. */
static unsigned char *export_index(const af_source *src, uint64_t size,
				   uint32_t crc, const af_index_key *key,
				   size_t *len)
{
	af_inflate *z;
	af_error err;
	const size_t piece = 1u << 20;
	unsigned char *buf = malloc(piece), *idx = NULL;
	if (!buf || af_inflate_open(&z, src, size, crc, &err) != AF_OK) {
		free(buf);
		return NULL;
	}
	af_status st = AF_OK;
	for (uint64_t off = 0; off < size && st == AF_OK; off += piece) {
		size_t got;
		st = af_inflate_read(z, buf, piece, off, &got, &err);
	}
	if (st == AF_OK)
		st = af_inflate_index_export(z, key, &idx, len, &err);
	if (st != AF_OK)
		fprintf(stderr, "index: %s\n", err.msg);
	af_inflate_close(z);
	free(buf);
	return st == AF_OK ? idx : NULL;
}

static int indexed_pass(int argc, char **argv)
{
	if (argc < 6) {
		fprintf(stderr, "usage: bench_inflate --indexed FILE SIZE CRC "
			"THREADS [RUNS]\n");
		return 2;
	}
	unsigned threads = (unsigned)strtoul(argv[5], NULL, 0);
	int runs = argc > 6 ? atoi(argv[6]) : 5;
	struct stream in;
	if (!stream_open(&in, argv))
		return 1;
	af_index_key key;
	af_index_key_of_file(&key, &in.st);
	key.comp_size = (uint64_t)in.st.st_size;
	key.uncomp_size = in.size;
	key.crc = in.crc;
	size_t ilen;
	unsigned char *idx = export_index(&in.src, in.size, in.crc, &key,
					  &ilen);
	const size_t piece = 512u << 10;
	unsigned char *buf = malloc(piece);
	af_pool *pool = NULL;
	af_error err;
	if (!idx || !buf)
		return 1;
	if (threads && af_pool_open(&pool, threads,
				    af_pool_default_budget(threads), &err)) {
		fprintf(stderr, "pool: %s\n", err.msg);
		return 1;
	}
	double best = 0, best_cpu = 0;
	for (int r = 0; r < runs; r++) {
		warm(in.fd, buf, piece);
		double t0 = now(), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
		af_inflate *z;
		if (af_inflate_open(&z, &in.src, in.size, in.crc, &err) ||
		    af_inflate_index_import(z, &key, idx, ilen, &err) ||
		    (pool && af_inflate_set_pool(z, pool, &err) != AF_OK)) {
			fprintf(stderr, "open: %s\n", err.msg);
			return 1;
		}
		for (uint64_t off = 0; off < in.size; off += piece) {
			size_t got;
			if (af_inflate_read(z, buf, piece, off, &got, &err) !=
			    AF_OK) {
				fprintf(stderr, "read: %s\n", err.msg);
				return 1;
			}
		}
		af_inflate_close(z);
		double mibs = (double)in.size / (1 << 20) / (now() - t0);
		double cpu = (double)in.size / (1 << 20) /
			     (clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0);
		if (mibs > best) {
			best = mibs;
			best_cpu = cpu;
		}
	}
	printf("indexed %u %.1f MiB/s wall %.1f MiB/s CPU (best of %d)\n",
	       threads, best, best_cpu, runs);
	af_pool_close(pool);
	free(idx);
	free(buf);
	close(in.fd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--pass") == 0)
		return first_pass(argc, argv);
	if (argc > 1 && strcmp(argv[1], "--indexed") == 0)
		return indexed_pass(argc, argv);
	size_t mib = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 128;
	size_t n = mib << 20;
	struct af_inflate_opts o;
	af_inflate_default_opts(&o);
	if (argc > 2)
		o.span = (uint64_t)strtoull(argv[2], NULL, 10) << 10;
	if (argc > 3)
		o.index_div = (unsigned)strtoul(argv[3], NULL, 10);
	unsigned char *plain = malloc(n), *out = malloc(n), *comp = NULL;
	if (!plain || !out)
		return 1;
	make_floats(plain, n);
	double t0 = now();
	size_t clen = deflate_all(plain, n, &comp);
	if (!clen)
		return 1;
	uint32_t crc = (uint32_t)crc32_z(0, plain, n);
	printf("member: %zu MiB float32 ramps+noise, deflated level 6 to %.1f MiB "
	       "(%.2fx) in %.1f s\n", mib, (double)clen / (1 << 20),
	       (double)n / (double)clen, now() - t0);

	/* throughput in thread CPU time, best of 5 interleaved runs: the build
	 * machine is shared, and wall time there measures the neighbours */
	af_source src;
	af_source_init_mem(&src, comp, clen);
	af_inflate *z = NULL;
	af_error err;
	double plain_mbs = 0, plain_crc_mbs = 0, seq_mbs = 0;
	for (int rep = 0; rep < 5; rep++) {
		double a = plain_inflate(comp, clen, out, n, 0);
		double b = plain_inflate(comp, clen, out, n, 1);
		plain_mbs = a > plain_mbs ? a : plain_mbs;
		plain_crc_mbs = b > plain_crc_mbs ? b : plain_crc_mbs;
		af_inflate_close(z);
		if (af_inflate_open_opts(&z, &src, n, crc, &o, &err) != AF_OK)
			return 1;
		t0 = cpu_now();
		for (size_t off = 0; off < n; off += 1u << 20) {
			size_t got;
			if (af_inflate_read(z, out + off, 1u << 20, off, &got,
					    &err) != AF_OK) {
				fprintf(stderr, "read: %s\n", err.msg);
				return 1;
			}
		}
		double mbs = (double)n / (cpu_now() - t0) / 1e6;
		seq_mbs = mbs > seq_mbs ? mbs : seq_mbs;
	}
	if (memcmp(out, plain, n) != 0) {
		fprintf(stderr, "sequential output differs\n");
		return 1;
	}
	printf("(MB/s of output per CPU second, best of 5)\n");
	printf("plain zlib inflate:             %7.1f MB/s\n", plain_mbs);
	printf("plain zlib inflate + CRC-32:    %7.1f MB/s\n", plain_crc_mbs);
	printf("af_inflate sequential 1 MiB:    %7.1f MB/s  (%.1f %% of plain, "
	       "%.1f %% of plain+CRC; target >= 90 %%)\n", seq_mbs,
	       100 * seq_mbs / plain_mbs, 100 * seq_mbs / plain_crc_mbs);

	uint64_t seed = 7;
	double sum = 0, max = 0, ts[1000], cpu_sum = 0, cpu_max = 0;
	unsigned char buf[4096];
	for (int i = 0; i < 1000; i++) {
		uint64_t off = rng(&seed) % (n - sizeof(buf));
		size_t got;
		t0 = now();
		double c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
		if (af_inflate_read(z, buf, sizeof(buf), off, &got, &err) != AF_OK)
			return 1;
		double t = now() - t0;
		double ct = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
		cpu_sum += ct;
		cpu_max = ct > cpu_max ? ct : cpu_max;
		if (memcmp(buf, plain + off, sizeof(buf)) != 0) {
			fprintf(stderr, "random read at %llu differs\n",
				(unsigned long long)off);
			return 1;
		}
		sum += t;
		max = t > max ? t : max;
		ts[i] = t;
	}
	printf("random 4 KiB reads (1000), wall: mean %.2f ms, max %.2f ms "
	       "(target < 10 ms)\n", sum / 1000 * 1e3, max * 1e3);
	qsort(ts, 1000, sizeof(ts[0]), cmp_double);
	printf("                                p50 %.2f ms, p99 %.2f ms; "
	       "CPU time mean %.2f ms, max %.2f ms\n", ts[500] * 1e3,
	       ts[990] * 1e3, cpu_sum, cpu_max * 1e3);
	size_t pts = af_inflate_points(z), zipped = 0;
	uint64_t gap = 0, prev = 0;
	for (size_t i = 0; i < pts; i++) {
		zipped += af_inflate_point_compressed(z, i);
		uint64_t at = af_inflate_point_out(z, i);
		gap = at - prev > gap ? at - prev : gap;
		prev = at;
	}
	size_t mem = af_inflate_memory(z), idx = af_inflate_index_memory(z);
	printf("index: %zu points (%zu windows deflated), %.2f MiB = %.2f %% of "
	       "the member (target < 2 %%); all memory %.2f MiB\n", pts,
	       zipped, (double)idx / (1 << 20), 100.0 * (double)idx / (double)n,
	       (double)mem / (1 << 20));
	printf("span %.2f MiB, index budget 1/%u of the output; widest gap "
	       "between points %.2f MiB\n", (double)o.span / (1 << 20),
	       o.index_div, (double)gap / (1 << 20));
	af_inflate_close(z);
	free(comp);
	free(out);
	free(plain);
	return 0;
}
