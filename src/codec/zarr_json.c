/* SPDX-License-Identifier: MIT */
/* A JSON writer formatting as Python's json.dumps(indent=4, ensure_ascii=True). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zarr_json_i.h"

#define ZJ_INDENT 4u

void zj_init(zj *w)
{
	memset(w, 0, sizeof(*w));
}

static void zj_add(zj *w, const char *s, size_t n)
{
	if (w->failed)
		return;
	tb_add(&w->text, s, n);
	if (w->text.failed)
		w->failed = AF_E_NOMEM;
}

static void zj_newline(zj *w, unsigned depth)
{
	static const char spaces[] = "                                ";
	zj_add(w, "\n", 1);
	size_t n = (size_t)depth * ZJ_INDENT;
	while (n > 0) {
		size_t c = n < sizeof(spaces) - 1 ? n : sizeof(spaces) - 1;
		zj_add(w, spaces, c);
		n -= c;
	}
}

/* A new member of the innermost container: `,` after the previous one,
 * then a new line at its depth. */
static void zj_member(zj *w)
{
	if (w->depth == 0)
		return;
	if (w->items[w->depth - 1])
		zj_add(w, ",", 1);
	w->items[w->depth - 1] = true;
	zj_newline(w, w->depth);
}

/* A value is a member of an array; in an object it follows its key. */
static void zj_value(zj *w)
{
	if (w->depth > 0 && w->open[w->depth - 1] == '[')
		zj_member(w);
}

void zj_begin(zj *w, char open)
{
	if (w->failed)
		return;
	if (w->depth >= ZJ_MAX_DEPTH) {
		w->failed = AF_E_LIMIT;
		return;
	}
	zj_value(w);
	zj_add(w, &open, 1);
	w->open[w->depth] = open;
	w->items[w->depth] = false;
	w->depth++;
}

void zj_end(zj *w, char close)
{
	if (w->failed || w->depth == 0)
		return;
	w->depth--;
	if (w->items[w->depth])
		zj_newline(w, w->depth);
	zj_add(w, &close, 1);
}

void zj_key(zj *w, const char *key)
{
	zj_member(w);
	zj_str(w, key, strlen(key));
	zj_add(w, ": ", 2);
}

/* \uXXXX with Python's lowercase hex. */
static void zj_escape_unit(zj *w, uint32_t u)
{
	char e[12]; /* room for any u32, though callers pass at most 0xFFFF */
	snprintf(e, sizeof(e), "\\u%04" PRIx32, u);
	zj_add(w, e, 6);
}

/*
 * The code point of the UTF-8 sequence at s[0..n), its length in *used.
 * Surrogates encoded as three bytes (Python string escapes in a descr can
 * make them) decode like any other code point; an invalid sequence is one
 * byte of U+FFFD.
 */
static uint32_t utf8_next(const unsigned char *s, size_t n, size_t *used)
{
	unsigned char c = s[0];
	unsigned len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 :
		       (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
	static const uint32_t min[5] = { 0, 0, 0x80, 0x800, 0x10000 };
	*used = 1;
	if (len == 0 || len > n)
		return 0xFFFD;
	uint32_t cp = len == 1 ? c : (uint32_t)(c & (0x7F >> len));
	for (unsigned i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0xFFFD;
		cp = cp << 6 | (s[i] & 0x3F);
	}
	if (cp < min[len] || cp > 0x10FFFF)
		return 0xFFFD;
	*used = len;
	return cp;
}

bool zj_utf8_ok(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	while (i < len) {
		size_t used;
		uint32_t cp = utf8_next(p + i, len - i, &used);
		/* U+FFFD itself is 3 bytes: one byte means a bad sequence */
		if ((cp == 0xFFFD && used == 1) || (cp >= 0xD800 && cp <= 0xDFFF))
			return false;
		i += used;
	}
	return true;
}

void zj_str(zj *w, const char *s, size_t len)
{
	zj_value(w);
	zj_add(w, "\"", 1);
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	while (i < len && !w->failed) {
		size_t run = i;
		/* printable ASCII but the two that need a backslash: copy as is */
		while (run < len && p[run] >= 0x20 && p[run] < 0x7F &&
		       p[run] != '"' && p[run] != '\\')
			run++;
		zj_add(w, s + i, run - i);
		i = run;
		if (i == len)
			break;
		size_t used;
		uint32_t cp = utf8_next(p + i, len - i, &used);
		i += used;
		switch (cp) {
		case '"': zj_add(w, "\\\"", 2); continue;
		case '\\': zj_add(w, "\\\\", 2); continue;
		case '\n': zj_add(w, "\\n", 2); continue;
		case '\r': zj_add(w, "\\r", 2); continue;
		case '\t': zj_add(w, "\\t", 2); continue;
		case '\b': zj_add(w, "\\b", 2); continue;
		case '\f': zj_add(w, "\\f", 2); continue;
		}
		if (cp >= 0x10000) {
			cp -= 0x10000;
			zj_escape_unit(w, 0xD800 | (cp >> 10));
			zj_escape_unit(w, 0xDC00 | (cp & 0x3FF));
		} else {
			zj_escape_unit(w, cp);
		}
	}
	zj_add(w, "\"", 1);
}

void zj_cstr(zj *w, const char *s)
{
	zj_str(w, s, strlen(s));
}

void zj_u64(zj *w, uint64_t v)
{
	char num[24];
	int n = snprintf(num, sizeof(num), "%" PRIu64, v);
	zj_value(w);
	zj_add(w, num, (size_t)n);
}

void zj_literal(zj *w, const char *text)
{
	zj_value(w);
	zj_add(w, text, strlen(text));
}

af_status zj_finish(zj *w, char **out, size_t *len)
{
	af_status st = tb_finish(&w->text, out, len);
	if (w->failed != AF_OK && st == AF_OK) {
		/* too deep: the text made so far is not the document */
		free(*out);
		*out = NULL;
		*len = 0;
		st = w->failed;
	}
	return st;
}
