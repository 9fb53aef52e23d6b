/* SPDX-License-Identifier: MIT */
/*
 * Sparse windows for saved indexes. A point's window is the 32 KiB of
 * output before it, but a decoder resuming there reads only the bytes
 * that matches in the next 32 KiB of output reach back to (no match
 * reaches farther than 32 KiB). On data deflate finds few matches in
 * (float32 measurements) that is a few dozen bytes of the 32 KiB; zeroing
 * the rest lets the window deflate to about 150 bytes instead of 30 KiB,
 * so a saved index loads in a fraction of the time its first read took.
 *
 * Which bytes are reached is found without a decoder of our own: that
 * stretch is inflated twice, each time with a made-up window whose bytes
 * name their own position (q & 0xff; then (q >> 8) + 1 + q, mod 256).
 * A byte copied from the window, however many copies away, comes out as
 * window[q] in both runs, so the two runs differ exactly at such bytes
 * (their difference (q >> 8) + 1 is never 0 for q < 32 KiB), and the pair
 * of values gives q back. Literal bytes come out the same in both.
 *
 * A window this gets wrong costs no wrong bytes: the saved pieces' CRC-32s
 * check every byte inflated from a loaded index.
 */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "inflate_cursor_i.h"
#include "inflate_engine_i.h"
#include "inflate_index_i.h"
#include "inflate_saved_i.h"

/* compressed bytes read per call */
#define SPARSE_IN (64u << 10)

struct fake_run {
	z_stream zs;
	bool inited;
	unsigned char *out; /* AF_INFLATE_WINDOW bytes */
	unsigned char *dict;
};

static bool run_start(af_inflate *z, struct fake_run *r,
		      const struct afz_point *p, unsigned value, bool high)
{
	memset(&r->zs, 0, sizeof(r->zs));
	r->zs.zalloc = afz_zalloc;
	r->zs.zfree = afz_zfree;
	r->zs.opaque = z;
	if (inflateInit2(&r->zs, -15) != Z_OK)
		return false;
	r->inited = true;
	for (unsigned q = 0; q < p->wlen; q++)
		r->dict[q] = (unsigned char)(high ? (q >> 8) + 1 + q : q);
	if (p->bits && inflatePrime(&r->zs, p->bits, (int)value) != Z_OK)
		return false;
	return inflateSetDictionary(&r->zs, r->dict, p->wlen) == Z_OK;
}

/* Inflate @p n more input bytes of @p r towards @p want output bytes:
 * false on an error; *done once it has them or the stream ended. */
static bool run_feed(struct fake_run *r, const unsigned char *in, size_t n,
		     uInt want, bool *done)
{
	r->zs.next_in = (unsigned char *)in;
	r->zs.avail_in = (uInt)n;
	int ret = Z_OK;
	while (ret == Z_OK && r->zs.total_out < want &&
	       (r->zs.avail_in || r->zs.avail_out == 0)) {
		r->zs.next_out = r->out + r->zs.total_out;
		r->zs.avail_out = want - (uInt)r->zs.total_out;
		ret = inflate(&r->zs, Z_NO_FLUSH);
	}
	*done = ret == Z_STREAM_END || r->zs.total_out == want;
	return ret == Z_OK || ret == Z_STREAM_END || ret == Z_BUF_ERROR;
}

/* Inflate the output after @p p twice with made-up windows and mark in
 * @p used (p->wlen bytes) the window bytes it reaches. */
static bool mark_used(af_inflate *z, const struct afz_point *p,
		      struct fake_run r[2], unsigned char *in,
		      unsigned char *used)
{
	uint64_t left = z->size - p->out;
	uInt want = left < AF_INFLATE_WINDOW ? (uInt)left : AF_INFLATE_WINDOW;
	uint64_t at = p->in - (p->bits ? 1 : 0);
	unsigned value = 0;
	if (p->bits) {
		if (af_source_read_exact(z->src, in, 1, at, NULL) != AF_OK)
			return false;
		value = in[0] >> (8 - p->bits);
		at++;
	}
	for (int k = 0; k < 2; k++)
		if (!run_start(z, &r[k], p, value, k == 1))
			return false;
	bool done[2] = { false, false };
	while (!(done[0] && done[1])) {
		if (at >= z->src->size)
			return false;
		uint64_t rest = z->src->size - at;
		size_t n = rest < SPARSE_IN ? (size_t)rest : SPARSE_IN;
		if (af_source_read_exact(z->src, in, n, at, NULL) != AF_OK)
			return false;
		at += n;
		for (int k = 0; k < 2; k++)
			if (!done[k] && !run_feed(&r[k], in, n, want, &done[k]))
				return false;
	}
	if (r[0].zs.total_out != r[1].zs.total_out)
		return false;
	memset(used, 0, p->wlen);
	for (uLong i = 0; i < r[0].zs.total_out; i++) {
		unsigned lo = r[0].out[i], hi = r[1].out[i];
		if (lo == hi)
			continue;
		unsigned q = (((hi - 1 - lo) & 0xffu) << 8) | lo;
		if (q >= p->wlen)
			return false;
		used[q] = 1;
	}
	return true;
}

/* Deflate the @p len bytes at @p src into a new buffer of fewer than
 * @p under bytes: NULL if they do not fit. */
static unsigned char *deflate_under(af_inflate *z, const unsigned char *src,
				    unsigned len, unsigned under,
				    unsigned *zlen)
{
	unsigned char *out = malloc(under);
	if (!out)
		return NULL;
	*zlen = afz_deflate_window(z, src, len, out, under - 1);
	if (!*zlen) {
		free(out);
		return NULL;
	}
	return out;
}

unsigned char *afz_sparse_window(af_inflate *z, const struct afz_point *p,
				 unsigned *zlen)
{
	unsigned stored = p->zlen ? p->zlen : p->wlen;
	if (p->wlen == 0 || stored < 16)
		return NULL;
	struct fake_run r[2] = { 0 };
	unsigned char *in = malloc(SPARSE_IN);
	unsigned char *win = malloc(AF_INFLATE_WINDOW + 1);
	unsigned char *used = malloc(AF_INFLATE_WINDOW);
	unsigned char *res = NULL;
	for (int k = 0; k < 2; k++) {
		r[k].out = malloc(AF_INFLATE_WINDOW);
		r[k].dict = malloc(AF_INFLATE_WINDOW);
	}
	if (!in || !win || !used || !r[0].out || !r[1].out || !r[0].dict ||
	    !r[1].dict)
		goto out;
	if (p->zlen) {
		if (!afz_window_inflates(z, p->window, p->zlen, p->wlen, win))
			goto out;
	} else {
		memcpy(win, p->window, p->wlen);
	}
	if (!mark_used(z, p, r, in, used))
		goto out;
	for (unsigned q = 0; q < p->wlen; q++)
		if (!used[q])
			win[q] = 0;
	res = deflate_under(z, win, p->wlen, stored, zlen);
out:
	for (int k = 0; k < 2; k++) {
		if (r[k].inited)
			inflateEnd(&r[k].zs);
		free(r[k].out);
		free(r[k].dict);
	}
	free(in);
	free(win);
	free(used);
	return res;
}
