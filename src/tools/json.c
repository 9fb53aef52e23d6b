/* SPDX-License-Identifier: MIT */
/* JSON string escaping for the tools' machine-readable output. */
#include "json.h"

#include <stddef.h>
#include <string.h>

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

/* Escaped text gathered for one write: a write a byte, or a run, was most
 * of arrayrefs' time (metadata texts are full of quotes and line ends). */
typedef struct json_buf {
	FILE *out;
	size_t len;
	char text[4096];
} json_buf;

static void put_bytes(json_buf *b, const void *p, size_t n)
{
	if (b->len + n > sizeof(b->text)) {
		fwrite(b->text, 1, b->len, b->out);
		b->len = 0;
	}
	if (n > sizeof(b->text)) {
		fwrite(p, 1, n, b->out);
		return;
	}
	memcpy(b->text + b->len, p, n);
	b->len += n;
}

void json_string_body(FILE *out, const char *str)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)str;
	json_buf b;

	b.out = out;
	b.len = 0;
	while (*s) {
		/* a run that needs no escape goes in one copy */
		const unsigned char *run = s;
		while (*s >= 0x20 && *s < 0x7f && *s != '"' && *s != '\\')
			s++;
		if (s > run) {
			put_bytes(&b, run, (size_t)(s - run));
			continue;
		}
		unsigned c = *s;
		size_t n = c >= 0x80 ? utf8_len(s) : 1;
		char esc[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };

		switch (c) {
		case '"': put_bytes(&b, "\\\"", 2); break;
		case '\\': put_bytes(&b, "\\\\", 2); break;
		case '\n': put_bytes(&b, "\\n", 2); break;
		case '\r': put_bytes(&b, "\\r", 2); break;
		case '\t': put_bytes(&b, "\\t", 2); break;
		default:
			/* a control byte, or one not part of valid UTF-8 (Latin-1) */
			if (c < 0x20 || c == 0x7f || n == 0) {
				put_bytes(&b, esc, sizeof(esc));
				n = 1;
			} else {
				put_bytes(&b, s, n);
			}
		}
		s += n;
	}
	fwrite(b.text, 1, b.len, out);
}

void json_u64(FILE *out, uint64_t v)
{
	char digits[20];
	size_t n = 0;
	do {
		digits[sizeof(digits) - ++n] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	fwrite(digits + sizeof(digits) - n, 1, n, out);
}

void json_i64(FILE *out, int64_t v)
{
	if (v < 0)
		putc('-', out);
	/* the magnitude of INT64_MIN too, in unsigned arithmetic */
	json_u64(out, v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
}
