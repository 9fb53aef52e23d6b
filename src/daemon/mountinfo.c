/* SPDX-License-Identifier: MIT */
/* Reading /proc/self/mountinfo without a lookup through any mount. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mountinfo.h"

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

/*
 * Parse one line: "id parent MAJ:MIN root mountpoint opts [optional...] -
 * type source superopts". Returns 0 and the mount point (unescaped, in
 * @p line) through *mp, or -1 for a line of another shape.
 */
static int parse_line(char *line, struct afd_mountinfo *m, char **mp)
{
	char *save = NULL, *field[5];
	char *p = line;
	int i;
	for (i = 0; i < 5 && (field[i] = strtok_r(p, " ", &save)); i++)
		p = NULL;
	if (i < 5 || !save)
		return -1;
	char *sep = strstr(save, " - ");
	if (!sep)
		return -1;
	char *type = sep + 3;
	size_t tlen = strcspn(type, " \n");
	if (tlen >= sizeof(m->fstype))
		return -1;
	if (sscanf(field[0], "%d", &m->mnt_id) != 1 ||
	    sscanf(field[2], "%u:%u", &m->major, &m->minor) != 2)
		return -1;
	memcpy(m->fstype, type, tlen);
	m->fstype[tlen] = '\0';
	unescape(field[4]);
	*mp = field[4];
	return 0;
}

/*
 * The last mount for which @p match says yes. Returns 0 with *out filled,
 * -ENOENT when none, or -errno.
 */
static int find_last(bool (*match)(const struct afd_mountinfo *m,
				   const char *mp, const void *arg),
		     const void *arg, struct afd_mountinfo *out)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -errno;
	char *line = NULL;
	size_t cap = 0;
	int rc = -ENOENT;
	while (getline(&line, &cap, f) > 0) {
		struct afd_mountinfo m;
		char *mp;
		if (parse_line(line, &m, &mp) < 0 || !match(&m, mp, arg))
			continue;
		*out = m;
		rc = 0;
	}
	free(line);
	fclose(f);
	return rc;
}

struct at_path {
	const char *path, *fstype;
};

static bool match_path(const struct afd_mountinfo *m, const char *mp,
		       const void *arg)
{
	const struct at_path *a = arg;
	return strcmp(mp, a->path) == 0 &&
	       (!a->fstype || strcmp(m->fstype, a->fstype) == 0);
}

int afd_mountinfo_top(const char *path, const char *fstype,
		      struct afd_mountinfo *out)
{
	struct at_path a = { path, fstype };
	return find_last(match_path, &a, out);
}

static bool match_id(const struct afd_mountinfo *m, const char *mp,
		     const void *arg)
{
	(void)mp;
	return m->mnt_id == *(const int *)arg;
}

int afd_mountinfo_by_id(int mnt_id, struct afd_mountinfo *out)
{
	return find_last(match_id, &mnt_id, out);
}
