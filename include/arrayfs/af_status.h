/* SPDX-License-Identifier: MIT */
/**
 * @file af_status.h
 * Status codes and the error record every codec call fills in.
 *
 * Invariants callers rely on:
 *  - Every fallible call returns an af_status; AF_OK is 0, everything else
 *    is a failure and leaves its out-parameters in a state that is safe to
 *    free (zeroed or untouched).
 *  - When a call fails and was given a non-NULL af_error, err->msg holds one
 *    human-readable sentence (no trailing newline) saying what is wrong and,
 *    where it is known, err->offset holds the byte offset in the source at
 *    which the problem was found (AF_NO_OFFSET otherwise).
 *  - The library never prints, never aborts and never exits.
 */
#ifndef ARRAYFS_AF_STATUS_H
#define ARRAYFS_AF_STATUS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum af_status {
	AF_OK = 0,
	AF_E_NOMEM,       /* allocation failed */
	AF_E_IO,          /* the source could not be read (errno in err->sys_errno) */
	AF_E_TRUNCATED,   /* the source ends before the format says it should */
	AF_E_MAGIC,       /* not this format at all */
	AF_E_VERSION,     /* a format version this library does not read */
	AF_E_HEADER,      /* the header is malformed (syntax, keys, fields) */
	AF_E_DTYPE,       /* the element type is invalid or unsupported */
	AF_E_SHAPE,       /* the shape / dims are invalid */
	AF_E_OVERFLOW,    /* a size or offset computation overflows 64 bits */
	AF_E_UNSUPPORTED, /* valid, but a feature this library does not handle */
	AF_E_CORRUPT,     /* compressed data or a checksum is bad */
	AF_E_NAME,        /* an archive member name is unsafe */
	AF_E_LIMIT,       /* a documented resource limit would be exceeded */
	AF_E_RANGE,       /* an offset or index outside the object */
	AF_E_INVAL,       /* the caller passed an invalid argument */
} af_status;

#define AF_NO_OFFSET UINT64_MAX

typedef struct af_error {
	af_status status;
	uint64_t offset;   /* byte in the source where it went wrong, or AF_NO_OFFSET */
	int sys_errno;     /* for AF_E_IO: the errno of the failed call, else 0 */
	char msg[256];     /* one sentence, NUL-terminated */
} af_error;

/** A short constant name for a status ("truncated", "bad header", ...). */
const char *af_status_str(af_status st);

/**
 * The errno a file system answers for a failure with status @p st: the
 * one table, the same whether the failure is found when a file is opened
 * or when it is read.
 *  - AF_OK: 0.
 *  - AF_E_NOMEM: ENOMEM. Out of memory; trying again may work.
 *  - AF_E_LIMIT: EFBIG. A documented size limit of this library (a .npy
 *    header over AF_NPY_HEADER_MAX, ...): the file is valid, too large here.
 *  - Every other status: EIO. The bytes cannot be served: the source is
 *    broken, truncated, changed or unreadable, or uses a feature this
 *    library does not read (AF_E_UNSUPPORTED: EOPNOTSUPP would tell cp
 *    and friends that reading itself is not supported), or a check
 *    failed (AF_E_INVAL: EINVAL would blame the reader's arguments).
 * An AF_E_IO keeps the failed call's errno in af_error.sys_errno for the
 * log line; the answer is still EIO.
 */
int af_status_errno(af_status st);

/**
 * Record a failure in @p err (which may be NULL) and return @p st, so that
 * a parser can write `return af_error_set(err, AF_E_HEADER, off, "...")`.
 */
af_status af_error_set(af_error *err, af_status st, uint64_t offset,
		       const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/** Reset @p err to "no error" (NULL allowed). */
void af_error_clear(af_error *err);

#ifdef __cplusplus
}
#endif
#endif /* ARRAYFS_AF_STATUS_H */
