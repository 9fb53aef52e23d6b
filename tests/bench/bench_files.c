/* SPDX-License-Identifier: MIT */
/*
 * Read many small files the way a C program does: open, read to the end,
 * close, one after the other. scripts/bench times the 60,000 MNIST-sized
 * sources this way, and every X.npy/data through a mount, beside one
 * sequential read of .stack/data.
 *
 * usage: bench_files DIR [SUFFIX]
 * Lists DIR once (readdir, sorted, no stat), then reads DIR/NAME SUFFIX for
 * every NAME ending in .npy. Prints "SECONDS BYTES FAILED".
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: bench_files DIR [SUFFIX]\n");
		return 2;
	}
	const char *suffix = argc == 3 ? argv[2] : "";
	DIR *d = opendir(argv[1]);
	if (!d) {
		perror(argv[1]);
		return 1;
	}
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (len < 5 || strcmp(e->d_name + len - 4, ".npy") != 0)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 1024;
			names = realloc(names, cap * sizeof(*names));
			if (!names)
				return 1;
		}
		if (asprintf(&names[n], "%s/%s%s", argv[1], e->d_name, suffix) < 0)
			return 1;
		n++;
	}
	closedir(d);
	qsort(names, n, sizeof(*names), by_name);
	static char buf[1 << 16];
	unsigned long long bytes = 0;
	size_t failed = 0;
	double t0 = now();
	for (size_t i = 0; i < n; i++) {
		int fd = open(names[i], O_RDONLY);
		if (fd < 0) {
			failed++;
			continue;
		}
		ssize_t got;
		while ((got = read(fd, buf, sizeof(buf))) > 0)
			bytes += (unsigned long long)got;
		if (got < 0)
			failed++;
		close(fd);
	}
	double t = now() - t0;
	printf("%.3f %llu %zu\n", t, bytes, failed);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return 0;
}
