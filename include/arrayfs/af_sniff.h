/* SPDX-License-Identifier: MIT */
/**
 * @file af_sniff.h
 * What a file is, told by the magic number at its start, so that a reader
 * that refuses it can say "a gzip file, not a .npz (zip)" or "empty file"
 * instead of only naming what it did not find. The .npy, .ra and .npz
 * readers all explain a refusal through af_sniff_explain.
 *
 * Invariants:
 *  - Only the first AF_SNIFF_LEN bytes are looked at, and only magic
 *    numbers at byte 0 count (an HDF5 superblock after a user block, at
 *    byte 512 or later, is not looked for).
 *  - Nothing is allocated; every name is a constant string.
 */
#ifndef ARRAYFS_AF_SNIFF_H
#define ARRAYFS_AF_SNIFF_H
#include <stdbool.h>
#include <stddef.h>
#include "af_source.h"
#include "af_status.h"
#ifdef __cplusplus
extern "C" {
#endif
/** Bytes af_sniff needs to tell every format it knows. */
#define AF_SNIFF_LEN 8u
typedef enum af_magic {
	AF_MAGIC_UNKNOWN = 0,
	AF_MAGIC_NPY,      /* "\x93NUMPY" */
	AF_MAGIC_RA,       /* "rawarray" */
	AF_MAGIC_ZIP,      /* "PK\3\4", "PK\5\6" (empty), "PK\7\x08" (spanned) */
	AF_MAGIC_GZIP,     /* 1f 8b */
	AF_MAGIC_BZIP2,    /* "BZh1" ... "BZh9" */
	AF_MAGIC_XZ,       /* fd "7zXZ" 00 */
	AF_MAGIC_ZSTD,     /* 28 b5 2f fd */
	AF_MAGIC_HDF5,     /* 89 "HDF\r\n" 1a "\n" */
} af_magic;
/**
 * The format whose magic number starts the @p len bytes at @p head (the
 * first bytes of a file; fewer than AF_SNIFF_LEN is fine, a magic longer
 * than @p len is then not matched). Returns AF_MAGIC_UNKNOWN for none.
 */
af_magic af_sniff(const void *head, size_t len);
/**
 * A short phrase for @p m, as in "a gzip file", "a NumPy .npy file", "a zip
 * archive"; NULL for AF_MAGIC_UNKNOWN or a value out of range. Constant.
 */
const char *af_magic_name(af_magic m);
/**
 * Explain why @p src is not a file of the format @p expected (named
 * @p expected_name in the message, e.g. ".npz (zip)") when its bytes say
 * more than the reader knows. Reads at most AF_SNIFF_LEN bytes at offset 0.
 * Returns, with @p err (may be NULL) set at byte 0:
 *   AF_E_MAGIC  "empty file": the source has no bytes (no magic number,
 *               so not this format);
 *   AF_E_MAGIC  "<what it is>, not a <expected_name>" ("a gzip file, not
 *               a .npz (zip)"): its first bytes are the magic number of
 *               another format;
 * or AF_OK, with @p err untouched, when the bytes are no known format, are
 * the expected one, or cannot be read: the caller then gives its own reason.
 */
af_status af_sniff_explain(const af_source *src, af_magic expected,
			   const char *expected_name, af_error *err);
#ifdef __cplusplus
}
#endif
#endif /* ARRAYFS_AF_SNIFF_H */
