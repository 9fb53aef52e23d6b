/* SPDX-License-Identifier: MIT */
/* Raising this mount's readahead window through sysfs (root only). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "readahead.h"

/* mountinfo writes space, tab, newline and backslash as \ooo: undo in place */
static void unescape(char *s)
{
	char *out = s;
	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*out++ = (char)(((s[1] - '0') << 6) | ((s[2] - '0') << 3) |
					(s[3] - '0'));
			s += 4;
		} else {
			*out++ = *s++;
		}
	}
	*out = '\0';
}

/* "MAJ:MIN" of the last (topmost) arrayfs mount on @p mountpoint. */
static int find_device(const char *mountpoint, char *dev, size_t devlen)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -errno;
	char *line = NULL;
	size_t cap = 0;
	int rc = -ENOENT;
	while (getline(&line, &cap, f) > 0) {
		/* id parent MAJ:MIN root mountpoint opts [optional...] - type ... */
		char *save = NULL, *field[5];
		char *p = line;
		int i;
		for (i = 0; i < 5 && (field[i] = strtok_r(p, " ", &save)); i++)
			p = NULL;
		if (i < 5)
			continue;
		char *sep = strstr(save ? save : "", " - ");
		if (!sep || strncmp(sep + 3, "fuse.arrayfs ", 13) != 0)
			continue;
		unescape(field[4]);
		if (strcmp(field[4], mountpoint) != 0 || strlen(field[2]) >= devlen)
			continue;
		strcpy(dev, field[2]);
		rc = 0;
	}
	free(line);
	fclose(f);
	return rc;
}

int afd_readahead_set(const char *mountpoint, unsigned kb)
{
	char dev[32], path[96], val[16];
	int rc = find_device(mountpoint, dev, sizeof(dev));
	if (rc < 0)
		return rc;
	snprintf(path, sizeof(path), "/sys/class/bdi/%s/read_ahead_kb", dev);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int len = snprintf(val, sizeof(val), "%u", kb);
	rc = write(fd, val, (size_t)len) == len ? 0 : -errno;
	close(fd);
	return rc;
}
