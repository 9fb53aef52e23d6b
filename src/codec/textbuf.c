/* SPDX-License-Identifier: MIT */
/* A growable string for the texts the codec makes (textbuf_i.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "textbuf_i.h"

static void tb_reserve(textbuf *tb, size_t extra)
{
	if (tb->failed)
		return;
	if (extra < tb->cap - tb->len)
		return;
	size_t cap = tb->cap ? tb->cap : 64;
	while (cap - tb->len <= extra) {
		if (cap > SIZE_MAX / 2) {
			tb->failed = true;
			return;
		}
		cap *= 2;
	}
	char *p = realloc(tb->buf, cap);
	if (!p) {
		tb->failed = true;
		return;
	}
	tb->buf = p;
	tb->cap = cap;
}

void tb_add(textbuf *tb, const char *s, size_t n)
{
	tb_reserve(tb, n);
	if (tb->failed)
		return;
	memcpy(tb->buf + tb->len, s, n);
	tb->len += n;
	tb->buf[tb->len] = '\0';
}

void tb_str(textbuf *tb, const char *s)
{
	tb_add(tb, s, strlen(s));
}

size_t tb_u64_digits(char out[TB_U64_DIGITS], uint64_t v)
{
	char rev[TB_U64_DIGITS];
	size_t n = 0;
	do {
		rev[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		out[i] = rev[n - 1 - i];
	out[n] = '\0';
	return n;
}

void tb_u64(textbuf *tb, uint64_t v)
{
	char num[TB_U64_DIGITS];
	tb_add(tb, num, tb_u64_digits(num, v));
}

af_status tb_finish(textbuf *tb, char **out, size_t *len)
{
	if (!tb->failed && !tb->buf)
		tb_add(tb, "", 0);
	af_status st = tb->failed ? AF_E_NOMEM : AF_OK;
	if (tb->failed) {
		free(tb->buf);
		*out = NULL;
		*len = 0;
	} else {
		*out = tb->buf;
		*len = tb->len;
	}
	*tb = (textbuf){ 0 };
	return st;
}
