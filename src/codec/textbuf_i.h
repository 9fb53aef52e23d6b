/* SPDX-License-Identifier: MIT */
/**
 * @file textbuf_i.h
 * Private: a growable, NUL-terminated string for the texts the codec makes
 * (shape, dtype, header, the Zarr metadata). Start from `textbuf tb = {0}`.
 * Invariant: `failed` sticks once an allocation fails; every later add is
 * a no-op and tb_finish frees the text and reports AF_E_NOMEM.
 */
#ifndef ARRAYFS_TEXTBUF_I_H
#define ARRAYFS_TEXTBUF_I_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arrayfs/af_status.h"

typedef struct textbuf {
	char *buf;      /* malloc'd, NUL-terminated once anything was added */
	size_t len;
	size_t cap;
	bool failed;
} textbuf;

/** Append @p n bytes of @p s (the buffer doubles as it fills). */
void tb_add(textbuf *tb, const char *s, size_t n);
/** Append the string @p s. */
void tb_str(textbuf *tb, const char *s);
/** Append @p v in decimal. */
void tb_u64(textbuf *tb, uint64_t v);
/** The longest decimal of a uint64_t, with its NUL. */
#define TB_U64_DIGITS 21
/** Write @p v in decimal and a NUL to @p out; returns the digits written.
 *  No printf: a listing makes the texts of every array it lists. */
size_t tb_u64_digits(char out[TB_U64_DIGITS], uint64_t v);
/**
 * Hand the text to the caller (*out malloc'd, the caller frees it; an
 * empty text is "", not NULL) and return AF_OK, or free it and return
 * AF_E_NOMEM. @p tb is left empty either way.
 */
af_status tb_finish(textbuf *tb, char **out, size_t *len);

#endif /* ARRAYFS_TEXTBUF_I_H */
