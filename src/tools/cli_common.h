/* SPDX-License-Identifier: MIT */
/*
 * What arrayinfo and arrayconv share: opening an input file as an af_source,
 * telling its kind by name (then by trying each parser), opening an array
 * (a whole file or an npz member) and printing errors in one form:
 *   PROG: WHAT: <reason> (at byte N)
 * Nothing here parses a format itself; the codec library does.
 */
#ifndef ARRAYFS_TOOLS_CLI_COMMON_H
#define ARRAYFS_TOOLS_CLI_COMMON_H

#include <stdbool.h>
#include <stddef.h>

#include "arrayfs/arrayfs.h"

typedef enum cli_kind {
	CLI_KIND_UNKNOWN = 0,
	CLI_KIND_NPY,
	CLI_KIND_RA,
	CLI_KIND_NPZ,
} cli_kind;

/** One open input file. fd is -1 when closed. */
typedef struct cli_file {
	int fd;
	af_source src;   /* the whole file */
} cli_file;

/**
 * An array ready to read: the file, the zip and member when it comes from
 * an npz, and the parsed header. `src` points at the file's source or the
 * member's; it stays valid until cli_array_close.
 */
typedef struct cli_array {
	cli_file file;
	af_zip *zip;
	af_member *member;
	const char *member_name; /* borrowed from the zip, or NULL */
	const af_source *src;
	af_array arr;
} cli_array;

/**
 * Open @p path read-only (a regular file). On failure prints nothing and
 * returns AF_E_IO (or AF_E_INVAL for a folder) with err filled.
 */
af_status cli_file_open(cli_file *f, const char *path, af_error *err);
void cli_file_close(cli_file *f);

/** The kind a name (or path) says, by the codec's af_array_name_kind. */
cli_kind cli_kind_of_name(const char *name);

/**
 * The kind of an open file: by name when the name says, otherwise the
 * first parser that accepts the content (npy, ra, then zip).
 */
cli_kind cli_kind_of_file(const char *name, const af_source *src);

/**
 * Open the array in @p f (already open, of kind NPY or RA) into @p a, which
 * takes ownership of the file. On failure the file is closed too.
 */
af_status cli_array_open_file(cli_array *a, cli_file *f, cli_kind kind,
			      af_error *err);

/**
 * Open member @p key of the npz in @p f into @p a (taking ownership of the
 * file). The member is looked up as KEY.npy first, then as KEY.
 * Returns AF_E_RANGE when no member has that name.
 */
af_status cli_array_open_member(cli_array *a, cli_file *f, const char *key,
				af_error *err);

void cli_array_close(cli_array *a);

/** Print "PROG: WHAT: msg (at byte N)\n" to stderr (no "at" part if unknown). */
void cli_report(const char *prog, const char *what, const af_error *err);

/** Fill err for a failed system call on @p what (errno is read here). */
af_status cli_errno_error(af_error *err, const char *what);

/**
 * Create a temporary file beside @p out ("DIR/.NAME.TOOL-XXXXXX"), to be
 * renamed over @p out once written whole, with the mode a new file gets
 * (0666 & ~umask; mkstemp's is 0600). Returns its fd and sets *tmp (the
 * caller frees it), or -1 with errno set and *tmp NULL.
 */
int cli_temp_beside(const char *out, const char *tool, char **tmp);

/** "npy", "ra" or "npz". */
const char *cli_kind_name(cli_kind k);

#endif /* ARRAYFS_TOOLS_CLI_COMMON_H */
