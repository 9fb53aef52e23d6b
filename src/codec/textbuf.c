/* SPDX-License-Identifier: MIT */
/* A growable string for the texts the codec makes (textbuf_i.h). */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
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

void tb_u64(textbuf *tb, uint64_t v)
{
	char num[24];
	int n = snprintf(num, sizeof(num), "%" PRIu64, v);
	tb_add(tb, num, (size_t)n);
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
