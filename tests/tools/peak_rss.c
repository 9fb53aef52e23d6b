/* SPDX-License-Identifier: MIT */
/*
 * peak_rss CMD ARGS...: run CMD and print its peak RSS in KiB, then exit
 * with its status. A child forked from a big process (Python) counts the
 * parent's pages as its own until it execs (Linux keeps the high-water
 * mark across exec), so tests measure a tool's memory from this small one.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2) {
		fputs("usage: peak_rss CMD [ARGS...]\n", stderr);
		return 2;
	}
	pid_t pid = fork();
	if (pid < 0) {
		perror("peak_rss: fork");
		return 2;
	}
	if (pid == 0) {
		execvp(argv[1], argv + 1);
		perror(argv[1]);
		_exit(127);
	}
	int status;
	struct rusage ru;
	if (wait4(pid, &status, 0, &ru) < 0) {
		perror("peak_rss: wait4");
		return 2;
	}
	printf("%ld\n", ru.ru_maxrss);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
