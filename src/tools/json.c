/* SPDX-License-Identifier: MIT */
/* JSON string escaping for the tools' machine-readable output. */
#include "json.h"

#include <stddef.h>

/* Length of the valid UTF-8 sequence at s, or 0 if the bytes are not one. */
static size_t utf8_len(const unsigned char *s)
{
	unsigned c = s[0];
	size_t n;
	unsigned cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	/* Overlong forms, UTF-16 surrogates and values past U+10FFFF are not UTF-8. */
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return n;
}

void json_string(FILE *out, const char *str)
{
	putc('"', out);
	json_string_body(out, str);
	putc('"', out);
}

void json_string_body(FILE *out, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	while (*s) {
		unsigned c = *s;
		size_t n;

		switch (c) {
		case '"': fputs("\\\"", out); s++; continue;
		case '\\': fputs("\\\\", out); s++; continue;
		case '\n': fputs("\\n", out); s++; continue;
		case '\r': fputs("\\r", out); s++; continue;
		case '\t': fputs("\\t", out); s++; continue;
		default: break;
		}
		if (c < 0x20 || c == 0x7f) {
			fprintf(out, "\\u%04x", c);
			s++;
			continue;
		}
		n = utf8_len(s);
		if (n == 0) {
			fprintf(out, "\\u%04x", c);
			s++;
			continue;
		}
		fwrite(s, 1, n, out);
		s += n;
	}
}
