/* SPDX-License-Identifier: MIT */
/**
 * @file zip_i.h
 * Private parts of the zip reader shared by zip.c (end records, central
 * directory) and zip_names.c (name checks, duplicates, sorted index,
 * warnings).
 */
#ifndef ARRAYFS_ZIP_I_H
#define ARRAYFS_ZIP_I_H

#include <stddef.h>
#include <stdint.h>

#include "arrayfs/af_zip.h"

/* Warning lines kept per archive; later ones are only counted. */
#define AF_ZIP_MAX_WARNINGS 100u
/* Longest member name component: a file name on Linux (NAME_MAX). */
#define AF_ZIP_MAX_COMPONENT 255u
/* Largest central directory read into memory. */
#define AF_ZIP_MAX_CDIR (512ull << 20)

/* Immutable after af_zip_open: threads share it without locks. */
struct af_zip {
	af_source src;          /* copy of the archive source */
	uint64_t cd_offset;     /* where the central directory begins */
	af_zip_entry *entries;  /* safe, deduplicated, directory order */
	size_t count;
	char *names;            /* every entry's NUL-terminated name */
	uint32_t *sorted;       /* entry indices sorted by name */
	char **warnings;
	size_t nwarnings;       /* lines kept (at most AF_ZIP_MAX_WARNINGS + 1) */
	size_t dropped;         /* warnings beyond the cap */
};

/** The archive source the zip reads from (its own copy). */
const af_source *af_zip_archive_source(const af_zip *z);

/** Record one warning line (printf-style); never fails the caller. */
void af_zip_warn(af_zip *z, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/** Add the "and N more" line once every warning is in. */
void af_zip_warn_finish(af_zip *z);

/**
 * Why a raw entry name (@p len bytes) is unsafe, or NULL if it is fine.
 * *is_dir tells whether it names a directory (trailing '/').
 */
const char *af_zip_name_problem(const unsigned char *name, size_t len,
				bool *is_dir);

/** Write @p len name bytes printably (\xNN escapes, truncated) into @p out. */
void af_zip_name_quote(char *out, size_t outlen, const unsigned char *name,
		       size_t len);

/**
 * Drop all but the last of each duplicate name (with a warning each), then
 * build z->sorted. Entries and names must be filled in.
 * Returns AF_OK or AF_E_NOMEM (z is then only fit for af_zip_close).
 */
af_status af_zip_index(af_zip *z, af_error *err);

#endif /* ARRAYFS_ZIP_I_H */
