/* SPDX-License-Identifier: MIT */
/**
 * @file zarr_json_i.h
 * Private: a JSON writer that formats exactly as Python's
 * `json.dumps(obj, indent=4, ensure_ascii=True, separators=(',', ': '))`,
 * the call zarr-python uses for `.zarray` and `.zattrs`, so the metadata
 * arrayfs serves is byte for byte what zarr itself would write.
 *
 * Format: every non-empty object and array puts each member on its own
 * line, indented 4 spaces a level; empty ones are `{}` and `[]`; strings
 * escape `"`, `\`, control characters, DEL and every non-ASCII character
 * (`\u00e9`, astral ones as surrogate pairs), with lowercase hex as Python
 * does. No trailing newline. Keys are written in the order given: a caller
 * that wants zarr's sorted keys gives them sorted.
 *
 * Invariants: the writer never fails half-way visibly. An allocation
 * failure sets `failed`; every later call is a no-op and zj_finish then
 * reports AF_E_NOMEM and frees the text. Nesting deeper than ZJ_MAX_DEPTH
 * also sets `failed` (AF_E_LIMIT). Every zj_init is followed by one
 * zj_finish, which hands over or frees the text. The text is a plain
 * buffer, not a stdio stream: the metadata texts are made at every parse
 * of an array (their lengths are file sizes), and a stream's locked calls
 * cost a sixth of a parse.
 */
#ifndef ARRAYFS_ZARR_JSON_I_H
#define ARRAYFS_ZARR_JSON_I_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "arrayfs/af_status.h"
#include "textbuf_i.h"

/* A structured dtype nests at most AF_DTYPE_MAX_DEPTH lists, each two
 * JSON levels deep (the field list and one field), inside the document. */
#define ZJ_MAX_DEPTH 80

typedef struct zj {
	textbuf text;             /* the text so far */
	unsigned depth;
	char open[ZJ_MAX_DEPTH];  /* '{' or '[' of each open container */
	bool items[ZJ_MAX_DEPTH]; /* does it hold anything yet */
	af_status failed;         /* AF_OK until the first failure */
} zj;

/** Start an empty document (a failure to is reported by zj_finish). */
void zj_init(zj *w);

/** Open `{` or `[` as the next value; close it with zj_end. */
void zj_begin(zj *w, char open);
/** Close the innermost container (`}` or `]`, matching its opener). */
void zj_end(zj *w, char close);

/** In an object: the next member's key (the value follows). */
void zj_key(zj *w, const char *key);

/** Values: in an array each one is a new item; in an object, the key's value. */
void zj_str(zj *w, const char *s, size_t len); /* UTF-8 bytes, escaped */
void zj_cstr(zj *w, const char *s);
void zj_u64(zj *w, uint64_t v);
void zj_literal(zj *w, const char *text);      /* null, true, 0.0 ... as is */

/**
 * Whether @p s (@p len bytes) is UTF-8 zj_str writes as it is, with no
 * U+FFFD for a bad sequence nor a surrogate: text a JSON reader gets back
 * byte for byte.
 */
bool zj_utf8_ok(const char *s, size_t len);

/**
 * Hand the text (NUL-terminated, malloc'd: the caller frees) to *out and
 * its length to *len. Returns AF_OK, or the first failure (AF_E_NOMEM,
 * AF_E_LIMIT), having freed the text and set *out to NULL.
 */
af_status zj_finish(zj *w, char **out, size_t *len);

#endif /* ARRAYFS_ZARR_JSON_I_H */
