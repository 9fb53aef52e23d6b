/* SPDX-License-Identifier: MIT */
/*
 * Just enough JSON output for arrayinfo --json: a string escaper that never
 * emits invalid JSON, whatever bytes a file name or header holds.
 */
#ifndef ARRAYFS_TOOLS_JSON_H
#define ARRAYFS_TOOLS_JSON_H

#include <stdint.h>
#include <stdio.h>

/**
 * Write @p s as a quoted JSON string. Valid UTF-8 is kept; control
 * characters become \uXXXX; a byte that is not part of valid UTF-8 is taken
 * as Latin-1 (as .npy v1/v2 headers are) and written as \u00XX.
 */
void json_string(FILE *out, const char *s);

/** json_string's escaped text without the quotes (a piece of a string). */
void json_string_body(FILE *out, const char *s);

/** @p v in decimal, as printf's %llu / %lld write it, with no printf:
 * a reference file holds two numbers a chunk. */
void json_u64(FILE *out, uint64_t v);
void json_i64(FILE *out, int64_t v);

#endif /* ARRAYFS_TOOLS_JSON_H */
