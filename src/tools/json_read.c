/* SPDX-License-Identifier: MIT */
/* A bounded pull reader of JSON for arrayrefs --verify. */
#include "json_read.h"

#include <ctype.h>
#include <limits.h>

int json_peek(json_reader *r)
{
	int c;
	while ((c = getc(r->in)) == ' ' || c == '\n' || c == '\t' || c == '\r')
		;
	if (c != EOF)
		ungetc(c, r->in);
	return c;
}

int json_next(json_reader *r)
{
	int c = json_peek(r);
	return c == EOF ? EOF : getc(r->in);
}

static bool fail(json_reader *r)
{
	r->bad = true;
	return false;
}

static bool put(json_reader *r, unsigned char c)
{
	if (r->len + 1 >= sizeof(r->str))
		return fail(r);
	r->str[r->len++] = (char)c;
	return true;
}

/* Code point @p cp as UTF-8. */
static bool put_utf8(json_reader *r, unsigned cp)
{
	if (cp < 0x80)
		return put(r, (unsigned char)cp);
	if (cp < 0x800)
		return put(r, 0xc0 | cp >> 6) && put(r, 0x80 | (cp & 63));
	if (cp < 0x10000)
		return put(r, 0xe0 | cp >> 12) && put(r, 0x80 | ((cp >> 6) & 63)) &&
		       put(r, 0x80 | (cp & 63));
	return put(r, 0xf0 | cp >> 18) && put(r, 0x80 | ((cp >> 12) & 63)) &&
	       put(r, 0x80 | ((cp >> 6) & 63)) && put(r, 0x80 | (cp & 63));
}

static bool hex4(json_reader *r, unsigned *out)
{
	*out = 0;
	for (int i = 0; i < 4; i++) {
		int c = getc(r->in);
		if (!isxdigit(c))
			return fail(r);
		*out = *out << 4 | (unsigned)(isdigit(c) ? c - '0'
						 : (tolower(c) - 'a' + 10));
	}
	return true;
}

static bool escape(json_reader *r)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	int c = getc(r->in);
	for (int i = 0; from[i]; i++)
		if (c == from[i])
			return put(r, (unsigned char)to[i]);
	unsigned cp, lo;
	if (c != 'u' || !hex4(r, &cp))
		return fail(r);
	if (cp >= 0xd800 && cp < 0xdc00) {
		if (getc(r->in) != '\\' || getc(r->in) != 'u' || !hex4(r, &lo) ||
		    lo < 0xdc00 || lo > 0xdfff)
			return fail(r);
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
	}
	return put_utf8(r, cp);
}

bool json_read_string(json_reader *r)
{
	r->len = 0;
	if (json_next(r) != '"')
		return fail(r);
	for (;;) {
		int c = getc(r->in);
		if (c == EOF || c < 0x20)
			return fail(r);
		if (c == '"')
			break;
		if (!(c == '\\' ? escape(r) : put(r, (unsigned char)c)))
			return false;
	}
	r->str[r->len] = '\0';
	return true;
}

bool json_read_int(json_reader *r, long long *out)
{
	int c = json_next(r);
	bool neg = c == '-';
	if (neg)
		c = getc(r->in);
	if (!isdigit(c))
		return fail(r);
	unsigned long long v = 0;
	for (; isdigit(c); c = getc(r->in)) {
		if (v > (ULLONG_MAX - 9) / 10)
			return fail(r);
		v = v * 10 + (unsigned)(c - '0');
	}
	if (c != EOF)
		ungetc(c, r->in);
	if (v > (unsigned long long)LLONG_MAX)
		return fail(r);
	*out = neg ? -(long long)v : (long long)v;
	return true;
}

/* Skip a number or a literal: the bytes up to a delimiter. */
static bool skip_atom(json_reader *r)
{
	int c, n = 0;
	while ((c = getc(r->in)) != EOF && (isalnum(c) || c == '-' || c == '+' ||
					    c == '.'))
		n++;
	if (c != EOF)
		ungetc(c, r->in);
	return n > 0 ? true : fail(r);
}

bool json_skip_value(json_reader *r)
{
	int depth = 0;
	do {
		int c = json_peek(r);
		if (c == '"') {
			if (!json_read_string(r))
				return false;
		} else if (c == '{' || c == '[') {
			getc(r->in);
			if (++depth > JSON_READ_DEPTH_MAX)
				return fail(r);
			int e = json_peek(r);
			if (e == '}' || e == ']') {
				getc(r->in);
				depth--;
			} else {
				continue;
			}
		} else if (c == EOF || !skip_atom(r)) {
			return fail(r);
		}
		/* after a value in a container: ',' then a key or a value, or its end */
		while (depth > 0) {
			c = json_next(r);
			if (c == '}' || c == ']') {
				depth--;
				continue;
			}
			if (c != ',' && c != ':')
				return fail(r);
			break;
		}
	} while (depth > 0);
	return true;
}

bool json_next_key(json_reader *r, bool *first)
{
	int c = json_peek(r);
	if (c == '}') {
		getc(r->in);
		return false;
	}
	if (!*first && json_next(r) != ',')
		return fail(r);
	*first = false;
	if (!json_read_string(r) || json_next(r) != ':')
		return fail(r);
	return true;
}
