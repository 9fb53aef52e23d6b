/* SPDX-License-Identifier: MIT */
/*
 * The reference set arrayrefs writes: the hierarchy of SOURCE's `.zarr/`
 * group (af_zarr_fs_open and af_zarr_group_walk decide every key and
 * metadata text) as a kerchunk "version": 1 JSON document, streamed: the
 * walk holds one folder model per level, this adds the current file.
 */
#ifndef ARRAYFS_TOOLS_REFS_WRITE_H
#define ARRAYFS_TOOLS_REFS_WRITE_H

#include <stdint.h>
#include <stdio.h>

#include "arrayfs/arrayfs.h"

/** A short last chunk at most this big (padded) is written inline
 * (--inline-max changes it). */
#define REFS_INLINE_DEFAULT (64u << 10)

/** The top-level key of the document readers ignore: the sources' facts. */
#define REFS_SOURCES_KEY "arrayrefs"

typedef struct refs_opts {
	const char *prog;        /* for the lines on @p diag */
	const char *source;      /* the path walked */
	const char *source_abs;  /* its absolute path, recorded for --verify */
	const char *prefix;      /* where SOURCE is served (template "u") */
	const char *mount_url;   /* the mount's .zarr/ of SOURCE, or NULL */
	uint64_t max_chunk_bytes;
	uint64_t inline_max;     /* REFS_INLINE_DEFAULT or --inline-max */
	FILE *diag;              /* one line per array left out */
} refs_opts;

typedef struct refs_outcome {
	size_t left_out;         /* arrays left out (exit status 3) */
	size_t arrays;           /* arrays written */
	uint64_t chunks;         /* chunk references written */
	int write_errno;         /* set: the failure was writing @p out */
} refs_outcome;

/**
 * Write the reference set of @p o->source to @p out. Returns AF_OK (the
 * document is whole, *res says what was left out), or the failure (the
 * document is not whole; res->write_errno set when writing failed).
 */
af_status refs_write(const refs_opts *o, FILE *out, refs_outcome *res,
		     af_error *err);

#endif /* ARRAYFS_TOOLS_REFS_WRITE_H */
