/* SPDX-License-Identifier: MIT */
/* arrayinfo --zarr-group: the .zmetadata a folder or npz would have. */
#include "group_info.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrayfs/arrayfs.h"
#include "cli_common.h"

typedef struct group_out {
	const char *prog;
	const char *path;
	char *text;    /* the document so far: printed only when whole */
	size_t len;
} group_out;

static af_status keep(void *ctx, const char *text, size_t len, af_error *err)
{
	group_out *g = ctx;
	char *grown = realloc(g->text, g->len + len);
	if (!grown)
		return af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
				    "out of memory for .zmetadata");
	memcpy(grown + g->len, text, len);
	g->text = grown;
	g->len += len;
	return AF_OK;
}

static void say_left(void *ctx, const char *path, af_zarr_group_left why)
{
	const group_out *g = ctx;
	if (af_zarr_group_left_logged(why))
		fprintf(stderr, "%s: %s/%s: not in the group: %s\n", g->prog,
			g->path, path, af_zarr_group_left_phrase(why));
}

int group_info(const char *prog, const char *path)
{
	group_out g = { prog, path, NULL, 0 };
	af_zarr_walk walk;
	void *root;
	af_error err;
	af_error_clear(&err);
	af_status st = af_zarr_fs_open(path, AF_ZARR_CHUNK_DEFAULT, say_left, &g,
				       &walk, &root, &err);
	if (st == AF_OK) {
		st = af_zarr_consolidated_write(&walk, root, keep, &g, &err);
		af_zarr_fs_close(&walk, root);
	}
	if (st != AF_OK) {
		char what[4200];
		snprintf(what, sizeof(what), "%s: no .zmetadata", path);
		cli_report(prog, what, &err);
		free(g.text);
		return 1;
	}
	fwrite(g.text, 1, g.len, stdout);
	putchar('\n');
	free(g.text);
	return 0;
}
