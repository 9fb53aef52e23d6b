/* SPDX-License-Identifier: MIT */
/*
 * Just enough JSON input for arrayrefs --verify: a pull reader over a
 * stream that reads strings and integers and skips any other value, in
 * memory bounded by JSON_READ_STRING_MAX and JSON_READ_DEPTH_MAX whatever
 * the size of the document.
 */
#ifndef ARRAYFS_TOOLS_JSON_READ_H
#define ARRAYFS_TOOLS_JSON_READ_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_READ_STRING_MAX 65536
#define JSON_READ_DEPTH_MAX 256

typedef struct json_reader {
	FILE *in;
	char str[JSON_READ_STRING_MAX];  /* the last string read, NUL-terminated */
	size_t len;
	bool bad;                        /* not JSON, or past a bound */
} json_reader;

/** The next non-blank byte, consumed (EOF at the end). */
int json_next(json_reader *r);
/** The next non-blank byte, left in the stream. */
int json_peek(json_reader *r);
/** Read a string (its '"' is next) into r->str. */
bool json_read_string(json_reader *r);
/** Read an integer (a '-' or digit is next). */
bool json_read_int(json_reader *r, long long *out);
/** Skip one value of any kind. */
bool json_skip_value(json_reader *r);
/**
 * In an object whose '{' is read: the next key into r->str, its ':' read.
 * False at the '}' (read; r->bad says if that was an error instead).
 */
bool json_next_key(json_reader *r, bool *first);

#endif /* ARRAYFS_TOOLS_JSON_READ_H */
