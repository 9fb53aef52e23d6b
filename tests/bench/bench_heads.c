/* SPDX-License-Identifier: MIT */
/*
 * The header read no reference writer can avoid: list a folder, then read
 * the first 256 bytes of every .npy in it with one pread each (open, pread,
 * close), in one thread. scripts/lib/bench_refs.sh times `arrayrefs` of the
 * 60,000 small sources against it.
 *
 * usage: bench_heads DIR
 * Prints "SECONDS FILES FAILED"; SECONDS covers the listing and the reads.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HEAD_BYTES 256

static int is_npy(const struct dirent *e)
{
	size_t len = strlen(e->d_name);
	return len > 4 && strcmp(e->d_name + len - 4, ".npy") == 0;
}

static double seconds(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: bench_heads DIR\n");
		return 2;
	}
	double t0 = seconds();
	int dfd = open(argv[1], O_RDONLY | O_DIRECTORY);
	struct dirent **names;
	int n = dfd < 0 ? -1 : scandir(argv[1], &names, is_npy, alphasort);
	if (n < 0) {
		perror(argv[1]);
		return 1;
	}
	char head[HEAD_BYTES];
	int failed = 0;
	for (int i = 0; i < n; i++) {
		int fd = openat(dfd, names[i]->d_name, O_RDONLY);
		if (fd < 0 || pread(fd, head, sizeof(head), 0) <= 0)
			failed++;
		if (fd >= 0)
			close(fd);
		free(names[i]);
	}
	double t = seconds() - t0;
	free(names);
	close(dfd);
	printf("%.3f %d %d\n", t, n, failed);
	return 0;
}
