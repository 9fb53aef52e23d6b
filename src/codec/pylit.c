/* SPDX-License-Identifier: MIT */
/*
 * The streaming Python-literal lexer shared by the .npy header and descr
 * parsers (see pylit_i.h). It accepts what ast.literal_eval accepts for the
 * values a header may hold, minus what no numpy ever wrote (bytes, raw or
 * triple-quoted strings, sets, string concatenation, \N{} escapes).
 */
#include <string.h>

#include "bytes_i.h"
#include "pylit_i.h"

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_ident(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	       is_digit(c) || (unsigned char)c >= 0x80;
}

static bool is_punct(char c)
{
	switch (c) {
	case '(': case ')': case '[': case ']': case '{': case '}':
	case ',': case ':': case '-': case '+':
		return true;
	}
	return false;
}

static int hex_val(char c)
{
	if (is_digit(c))
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static af_status fail_at(pylit *pl, af_status st, size_t pos, const char *what)
{
	return af_error_set(pl->err, st, pl->base + pos, "%s at byte %llu",
			    what, (unsigned long long)(pl->base + pos));
}

af_status pl_fail(pylit *pl, af_status st, const char *what)
{
	return fail_at(pl, st, pl->tok.start, what);
}

/* Skips whitespace, comments and backslash-newline continuations. */
static void skip_space(pylit *pl)
{
	const char *b = pl->buf;
	size_t i = pl->pos, n = pl->len;

	while (i < n) {
		char c = b[i];
		if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f') {
			i++;
		} else if (c == '#') {
			while (i < n && b[i] != '\n' && b[i] != '\r')
				i++;
		} else if (c == '\\' && i + 1 < n && (b[i + 1] == '\n' || b[i + 1] == '\r')) {
			i += 2;
		} else {
			break;
		}
	}
	pl->pos = i;
}

/* Reads @p count hex digits at *i into *v. */
static bool read_hex(const pylit *pl, size_t *i, int count, uint32_t *v)
{
	*v = 0;
	for (int k = 0; k < count; k++) {
		int h = *i < pl->len ? hex_val(pl->buf[*i]) : -1;
		if (h < 0)
			return false;
		*v = *v * 16 + (uint32_t)h;
		(*i)++;
	}
	return true;
}

/*
 * One escape sequence at buf[*i] (just after the backslash). Returns the
 * code point, -1 for a line continuation (no output), -2 for a backslash
 * kept literally (Python keeps unknown escapes), -3 on error.
 */
static long escape(const pylit *pl, size_t *i)
{
	static const char simple[] = "\\'\"abfnrtv";
	static const char value[] = "\\'\"\a\b\f\n\r\t\v";
	uint32_t v;

	if (*i >= pl->len)
		return -3;
	char c = pl->buf[*i];
	const char *s = c ? strchr(simple, c) : NULL;
	if (s) {
		(*i)++;
		return (unsigned char)value[s - simple];
	}
	if (c == '\n') {
		(*i)++;
		return -1;
	}
	if (c == '\r') {
		(*i)++;
		if (*i < pl->len && pl->buf[*i] == '\n')
			(*i)++;
		return -1;
	}
	if (c >= '0' && c <= '7') {
		v = 0;
		for (int k = 0; k < 3 && *i < pl->len && pl->buf[*i] >= '0' &&
				pl->buf[*i] <= '7'; k++)
			v = v * 8 + (uint32_t)(pl->buf[(*i)++] - '0');
		return v;
	}
	if (c == 'x' || c == 'u' || c == 'U') {
		(*i)++;
		if (!read_hex(pl, i, c == 'x' ? 2 : c == 'u' ? 4 : 8, &v) ||
		    v > 0x10FFFF)
			return -3;
		return v;
	}
	if (c == 'N')
		return -3;
	return -2;
}

static af_status lex_string(pylit *pl, size_t start, size_t q)
{
	char quote = pl->buf[q];
	size_t i = q + 1;
	bool escaped = false;

	if (i + 1 < pl->len && pl->buf[i] == quote && pl->buf[i + 1] == quote)
		return fail_at(pl, pl->syntax_status, start,
			       "triple-quoted string is not supported");
	for (;;) {
		if (i >= pl->len || pl->buf[i] == '\n' || pl->buf[i] == '\r')
			return fail_at(pl, pl->syntax_status, start,
				       "unterminated string");
		char c = pl->buf[i];
		if (c == quote)
			break;
		if (c == '\\') {
			size_t at = i++;
			escaped = true;
			if (escape(pl, &i) == -3)
				return fail_at(pl, pl->syntax_status, at,
					       "invalid escape in string");
			continue;
		}
		i++;
	}
	pl->tok.kind = PL_STR;
	pl->tok.escaped = escaped;
	pl->tok.body = q + 1;
	pl->tok.body_end = i;
	pl->pos = i + 1;
	return AF_OK;
}

static af_status lex_number(pylit *pl, size_t start)
{
	const char *b = pl->buf;
	size_t i = start, n = pl->len;
	unsigned radix = 10;
	uint64_t v = 0;
	bool big = false, is_float = false;

	/* strchr would match a NUL byte (the terminator): test it first */
	if (b[i] == '0' && i + 1 < n && b[i + 1] && strchr("xXoObB", b[i + 1])) {
		char r = (char)(b[i + 1] | 0x20);
		radix = r == 'x' ? 16 : r == 'o' ? 8 : 2;
		i += 2;
	}
	size_t digits = i;
	for (; i < n; i++) {
		int d = hex_val(b[i]);
		if (d < 0 || (unsigned)d >= radix)
			break;
		if (af_mul(v, radix, &v) || af_add(v, (unsigned)d, &v))
			big = true;
	}
	if (radix != 10 && i == digits)
		return fail_at(pl, pl->syntax_status, start, "invalid number");
	if (radix == 10) {
		if (i < n && b[i] == '.') {
			is_float = true;
			for (i++; i < n && is_digit(b[i]); i++)
				;
		}
		if (i < n && (b[i] == 'e' || b[i] == 'E')) {
			is_float = true;
			i++;
			if (i < n && (b[i] == '+' || b[i] == '-'))
				i++;
			if (i >= n || !is_digit(b[i]))
				return fail_at(pl, pl->syntax_status, start,
					       "invalid number");
			while (i < n && is_digit(b[i]))
				i++;
		}
		if (i < n && (b[i] == 'j' || b[i] == 'J')) {
			is_float = true;
			i++;
		}
		/* Python 3 refuses 007 but allows 000. */
		if (!is_float && b[start] == '0' && v != 0)
			return fail_at(pl, pl->syntax_status, start,
				       "integer with a leading zero");
	}
	if (!is_float && pl->allow_long && i < n && (b[i] == 'L' || b[i] == 'l'))
		i++;
	if (i < n && is_ident(b[i]))
		return fail_at(pl, pl->syntax_status, start, "invalid number");
	pl->tok.kind = is_float ? PL_FLOAT : PL_INT;
	pl->tok.ival = v;
	pl->tok.big = big;
	pl->pos = i;
	return AF_OK;
}

static af_status lex(pylit *pl)
{
	skip_space(pl);
	size_t i = pl->pos;
	const char *b = pl->buf;

	memset(&pl->tok, 0, sizeof(pl->tok));
	pl->tok.start = i;
	af_status st = AF_OK;
	if (i >= pl->len) {
		pl->tok.kind = PL_EOF;
	} else if (b[i] == '\'' || b[i] == '"') {
		st = lex_string(pl, i, i);
	} else if ((b[i] == 'u' || b[i] == 'U') && i + 1 < pl->len &&
		   (b[i + 1] == '\'' || b[i + 1] == '"')) {
		st = lex_string(pl, i, i + 1);
	} else if (is_digit(b[i]) ||
		   (b[i] == '.' && i + 1 < pl->len && is_digit(b[i + 1]))) {
		st = lex_number(pl, i);
	} else if (is_ident(b[i])) {
		size_t j = i;
		while (j < pl->len && is_ident(b[j]))
			j++;
		size_t n = j - i;
		if (n == 4 && memcmp(b + i, "True", 4) == 0)
			pl->tok.kind = PL_TRUE;
		else if (n == 5 && memcmp(b + i, "False", 5) == 0)
			pl->tok.kind = PL_FALSE;
		else if (n == 4 && memcmp(b + i, "None", 4) == 0)
			pl->tok.kind = PL_NONE;
		else
			return fail_at(pl, pl->syntax_status, i,
				       "unexpected name (not a literal)");
		pl->pos = j;
	} else if (is_punct(b[i])) {
		pl->tok.kind = PL_PUNCT;
		pl->tok.punct = b[i];
		pl->pos = i + 1;
	} else {
		return fail_at(pl, pl->syntax_status, i, "unexpected character");
	}
	pl->tok.end = pl->pos;
	return st;
}

af_status pl_init(pylit *pl, const char *buf, size_t len, uint64_t base,
		  bool allow_long, af_status syntax_status, af_error *err)
{
	memset(pl, 0, sizeof(*pl));
	pl->buf = buf;
	pl->len = len;
	pl->base = base;
	pl->allow_long = allow_long;
	pl->syntax_status = syntax_status;
	pl->err = err;
	return lex(pl);
}

af_status pl_advance(pylit *pl)
{
	pl->prev_end = pl->tok.end;
	return lex(pl);
}

af_status pl_expect(pylit *pl, char c, const char *what)
{
	if (!pl_is(pl, c))
		return pl_fail(pl, pl->syntax_status, what);
	return pl_advance(pl);
}

static af_status skip(pylit *pl, unsigned depth)
{
	af_status st;

	if (depth > PL_MAX_DEPTH)
		return pl_fail(pl, AF_E_LIMIT, "literal nested too deeply");
	switch (pl->tok.kind) {
	case PL_STR: case PL_INT: case PL_FLOAT:
	case PL_TRUE: case PL_FALSE: case PL_NONE:
		return pl_advance(pl);
	case PL_EOF:
		return pl_fail(pl, pl->syntax_status, "unexpected end, expected a value");
	case PL_PUNCT:
		break;
	}
	char open = pl->tok.punct;
	if (open == '-' || open == '+') {
		if ((st = pl_advance(pl)))
			return st;
		if (pl->tok.kind != PL_INT && pl->tok.kind != PL_FLOAT)
			return pl_fail(pl, pl->syntax_status, "expected a number after a sign");
		return pl_advance(pl);
	}
	if (open != '(' && open != '[' && open != '{')
		return pl_fail(pl, pl->syntax_status, "expected a value");
	char close = open == '(' ? ')' : open == '[' ? ']' : '}';
	if ((st = pl_advance(pl)))
		return st;
	while (!pl_is(pl, close)) {
		if ((st = skip(pl, depth + 1)))
			return st;
		if (open == '{') {
			if ((st = pl_expect(pl, ':', "expected ':' in a dict")) ||
			    (st = skip(pl, depth + 1)))
				return st;
		}
		if (pl_is(pl, ','))
			st = pl_advance(pl);
		else if (!pl_is(pl, close))
			st = pl_fail(pl, pl->syntax_status, "expected ',' or a closing bracket");
		if (st)
			return st;
	}
	return pl_advance(pl);
}

af_status pl_skip_value(pylit *pl)
{
	return skip(pl, 0);
}

af_status pl_unwrap(pylit *pl, unsigned *n)
{
	*n = 0;
	while (pl_is(pl, '(')) {
		pylit save = *pl;
		af_status st = pl_advance(pl);
		if (!st && pl_is(pl, ')')) {
			*pl = save;
			break;
		}
		if (!st)
			st = pl_skip_value(pl);
		if (st)
			return st;
		bool redundant = pl_is(pl, ')');
		size_t scanned = pl->pos - save.pos;
		*pl = save;
		pl->lookahead += scanned;
		if (pl->lookahead / 8 > pl->len + 4096)
			return pl_fail(pl, AF_E_LIMIT, "too much nesting in parentheses");
		if (!redundant)
			break;
		if (++*n > PL_MAX_DEPTH)
			return pl_fail(pl, AF_E_LIMIT, "too many parentheses");
		if ((st = pl_advance(pl)))
			return st;
	}
	return AF_OK;
}

af_status pl_close_parens(pylit *pl, unsigned n)
{
	for (unsigned k = 0; k < n; k++) {
		af_status st = pl_expect(pl, ')', "expected ')'");
		if (st)
			return st;
	}
	return AF_OK;
}

static size_t put_utf8(char *o, uint32_t c)
{
	if (c < 0x80) {
		o[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		o[0] = (char)(0xC0 | (c >> 6));
		o[1] = (char)(0x80 | (c & 0x3F));
		return 2;
	}
	if (c < 0x10000) {
		o[0] = (char)(0xE0 | (c >> 12));
		o[1] = (char)(0x80 | ((c >> 6) & 0x3F));
		o[2] = (char)(0x80 | (c & 0x3F));
		return 3;
	}
	o[0] = (char)(0xF0 | (c >> 18));
	o[1] = (char)(0x80 | ((c >> 12) & 0x3F));
	o[2] = (char)(0x80 | ((c >> 6) & 0x3F));
	o[3] = (char)(0x80 | (c & 0x3F));
	return 4;
}

size_t pl_str_decode(const pylit *pl, char *out)
{
	size_t i = pl->tok.body, end = pl->tok.body_end, n = 0;

	if (!pl->tok.escaped) {
		memcpy(out, pl->buf + i, end - i);
		out[end - i] = '\0';
		return end - i;
	}
	while (i < end) {
		if (pl->buf[i] != '\\') {
			out[n++] = pl->buf[i++];
			continue;
		}
		i++;
		long c = escape(pl, &i);
		if (c >= 0)
			n += put_utf8(out + n, (uint32_t)c);
		else if (c == -2)
			out[n++] = '\\';
	}
	out[n] = '\0';
	return n;
}
