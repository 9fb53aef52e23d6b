/* SPDX-License-Identifier: MIT */
/* Raising this mount's readahead window through sysfs (root only). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "readahead.h"

int afd_readahead_set(const struct afd_mountinfo *m, unsigned kb)
{
	char path[96], val[16];
	snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb",
		 m->major, m->minor);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int len = snprintf(val, sizeof(val), "%u", kb);
	int rc = write(fd, val, (size_t)len) == len ? 0 : -errno;
	close(fd);
	return rc;
}
