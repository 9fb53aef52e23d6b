/* SPDX-License-Identifier: MIT */
/* STUB: the daemon's entry point, to be replaced. */
#include <stdio.h>
#include <string.h>

#include "arrayfs/arrayfs.h"

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--version") == 0) {
		printf("arrayfs %s\n", ARRAYFS_VERSION);
		return 0;
	}
	fprintf(stderr, "arrayfs: not implemented yet\n");
	return 1;
}
