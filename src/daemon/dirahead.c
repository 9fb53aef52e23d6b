/* SPDX-License-Identifier: MIT */
/* Parsing a readdirplus listing's next batch ahead of it (dirahead.h). */
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctx.h"
#include "nodes.h"
#include "dirahead.h"
#include "path.h"
#include "srcfile.h"
#include "srcpath.h"

/* The source paths of the arrays a listing gives entries for, among the
 * next @p count names from @p off; *n of them. */
static char **next_arrays(struct afd_ctx *c, const struct afd_dir_ahead *a,
			  size_t *n)
{
	*n = 0;
	int fd = afd_srcpath_open(&c->root, a->path, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return NULL;
	DIR *dp = fdopendir(fd);
	if (!dp) {
		close(fd);
		return NULL;
	}
	char **paths = calloc(a->count, sizeof(*paths));
	seekdir(dp, a->off);
	struct dirent *de;
	for (size_t seen = 0; paths && seen < a->count && (de = readdir(dp));) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;   /* a batch's count has no . nor .. */
		seen++;
		af_name_kind k = af_array_name_kind(de->d_name, false);
		/* an archive is listed by name alone (dirs.c) */
		if ((de->d_type != DT_REG && de->d_type != DT_UNKNOWN) ||
		    k == AF_NAME_NONE || k == AF_NAME_NPZ)
			continue;
		paths[*n] = afd_path_join(a->path, de->d_name);
		if (paths[*n])
			(*n)++;
	}
	closedir(dp);
	return paths;
}

void afd_dir_ahead_run(struct afd_ctx *c, struct afd_dir_ahead *a)
{
	if (!a->path || a->count == 0) {
		free(a->path);
		a->path = NULL;
		return;
	}
	size_t n;
	char **paths = next_arrays(c, a, &n);
	bool met = false;
	for (size_t last = n; n > 0;) {
		char *p = paths[--n];
		/* cached: the listing got here (or an earlier pass did);
		 * summed: a folder listed again, whose lookups parse nothing
		 * (tree.c), which its last name tells: each probe of the node
		 * table misses the CPU's caches in a big folder, and a parse
		 * of a name remembered all the same is only wasted */
		struct afd_arrsum sum;
		struct stat st;
		struct afd_src *sf;
		met = met || afd_src_is_cached(c, p) ||
		      (n + 1 == last && afd_nodes_sum_of_path(&c->nodes, p, &sum));
		if (!met && afd_src_get_opening(c, p, &st, &sf) == 0)
			afd_src_put(sf);
		free(p);
	}
	free(paths);
	free(a->path);
	a->path = NULL;
}
