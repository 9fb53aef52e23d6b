/* SPDX-License-Identifier: MIT */
/*
 * Decoding one stretch of a walked LZ4 block: liblz4 decodes the whole
 * sequences inside it, and the sequences cut by its two ends are finished
 * or begun here (their literals are input bytes, their match a copy from
 * `offset` bytes back), so no stretch ever needs more than its own output
 * and the 64 KiB before it, however long a sequence is.
 */
#include <inttypes.h>
#include <limits.h>
#include <lz4.h>
#include <stdlib.h>
#include <string.h>

#include "lz4_i.h"

/*
 * @p n bytes at @p d, each equal to the byte @p offset before it: a match.
 * @p done bytes of the match precede d, and @p avail bytes of output are
 * readable before d. Copies grow by whole periods of the match (offset 1
 * becomes 1, 2, 4... bytes) so a long match is a few memcpy calls.
 */
static void copy_match(unsigned char *d, uint32_t offset, uint64_t n,
		       uint64_t done, uint64_t avail)
{
	while (n > 0) {
		uint64_t room = done + offset < avail ? done + offset : avail;
		uint64_t dist = room - room % offset;
		size_t c = n < dist ? (size_t)n : (size_t)dist;
		memcpy(d, d - dist, c);
		d += c;
		n -= c;
		done += c;
		avail += c;
	}
}

/* Output [from, to) of sequence @p s into out (out[i] is byte x + i). */
static af_status copy_seq(const af_source *src, uint64_t base,
			  unsigned char *out, uint64_t x, uint64_t hist,
			  const struct lz4_seq *s, uint64_t from, uint64_t to,
			  af_error *err)
{
	uint64_t lit_end = s->out + s->lit;
	if (from < lit_end) {
		uint64_t n = (to < lit_end ? to : lit_end) - from;
		af_status st = af_source_read_exact(src, out + (from - x),
						    (size_t)n,
						    base + s->lit_in + (from - s->out),
						    err);
		if (st != AF_OK)
			return st;
		from += n;
	}
	if (from < to) {
		unsigned char *d = out + (from - x);
		/* liblz4 1.9 decodes a zero offset as zeros */
		if (s->offset == 0)
			memset(d, 0, (size_t)(to - from));
		else
			copy_match(d, s->offset, to - from, from - lit_end,
				   hist + (from - x));
	}
	return AF_OK;
}

static af_status span_changed(uint64_t base, const struct lz4_seq *s,
			      af_error *err)
{
	return af_error_set(err, AF_E_CORRUPT, base + s->in,
			    "LZ4 block at byte %" PRIu64 " no longer decodes at byte %"
			    PRIu64 " as it did (did the file change?)",
			    base, base + s->in);
}

/* Walk whole sequences again from @p head (its walker state is recorded)
 * and copy their output in [pos, end) into out. */
static af_status walk_copy(const struct lz4_walker *block, unsigned char *out,
			   uint64_t x, uint64_t hist, const struct lz4_seq *head,
			   uint64_t pos, uint64_t end, af_error *err)
{
	struct lz4_walker w;
	af_status st = lz4_walker_init(&w, block->src, block->base,
				       block->in_len, block->out_len, 4096, err);
	w.ip = head->in;
	w.op = head->out;
	w.safe = head->safe;
	while (st == AF_OK && pos < end) {
		struct lz4_seq s;
		st = lz4_walker_next(&w, &s, err);
		if (st != AF_OK)
			break;
		uint64_t e = lz4_seq_end(&s) < end ? lz4_seq_end(&s) : end;
		if (e > pos) {
			st = copy_seq(block->src, block->base, out, x, hist, &s,
				      pos > s.out ? pos : s.out, e, err);
			pos = e;
		}
	}
	lz4_walker_free(&w);
	return st;
}

af_status lz4_span_decode(const struct lz4_walker *block,
			  unsigned char *out, uint64_t x,
			  uint64_t y, const struct lz4_seq *head,
			  const struct lz4_seq *tail, bool zeros,
			  const struct lz4_window *win, unsigned char **inbuf,
			  size_t *incap, af_error *err)
{
	const af_source *src = block->src;
	const uint64_t base = block->base;
	const uint64_t hist = x < LZ4I_HISTORY ? x : LZ4I_HISTORY;
	uint64_t pos = x, mid_in = head->in;
	af_status st;
	if (head->out < x) {
		uint64_t end = lz4_seq_end(head) < y ? lz4_seq_end(head) : y;
		st = copy_seq(src, base, out, x, hist, head, x, end, err);
		if (st != AF_OK)
			return st;
		pos = end;
		mid_in = head->end_in;
	}
	if (pos == y)
		return AF_OK;
	if (tail->out < pos || tail->in < mid_in || tail->out > y)
		return span_changed(base, head, err);
	if (tail->out > pos && zeros) {
		st = walk_copy(block, out, x, hist, head, pos, tail->out, err);
		if (st != AF_OK)
			return st;
		pos = tail->out;
	} else if (tail->out > pos) {
		/* the whole sequences between: liblz4, with the output before
		 * as its dictionary (contiguous: its fast prefix mode) */
		uint64_t n_in = tail->in - mid_in, n_out = tail->out - pos;
		if (n_in > (uint64_t)INT_MAX - LZ4I_PAD || n_out > INT_MAX)
			return span_changed(base, head, err);
		unsigned char *in, saved[LZ4I_PAD];
		bool in_place = win && mid_in >= win->at &&
				mid_in + n_in <= win->at + win->len;
		if (in_place) {
			/* in place: the pad goes over the bytes after, and back */
			in = win->buf + (mid_in - win->at);
			memcpy(saved, in + n_in, LZ4I_PAD);
		} else {
			if (*incap < n_in + LZ4I_PAD) {
				unsigned char *nb = realloc(*inbuf, n_in + LZ4I_PAD);
				if (!nb)
					return af_error_set(err, AF_E_NOMEM, base + mid_in,
							    "no memory for %" PRIu64
							    " bytes of LZ4 input", n_in);
				*inbuf = nb;
				*incap = n_in + LZ4I_PAD;
			}
			in = *inbuf;
			st = af_source_read_exact(src, in, (size_t)n_in,
						  base + mid_in, err);
			if (st != AF_OK)
				return st;
		}
		memset(in + n_in, 0, LZ4I_PAD);
		unsigned char *dst = out + (pos - x);
		uint64_t dict = pos < LZ4I_HISTORY ? pos : LZ4I_HISTORY;
		int got = LZ4_decompress_safe_partial_usingDict(
			(const char *)in, (char *)dst, (int)(n_in + LZ4I_PAD),
			(int)n_out, (int)n_out, (const char *)(dst - dict),
			(int)dict);
		if (in_place)
			memcpy(in + n_in, saved, LZ4I_PAD);
		if (got != (int)n_out)
			return span_changed(base, head, err);
		pos = tail->out;
	}
	if (pos < y)
		return copy_seq(src, base, out, x, hist, tail, pos, y, err);
	return AF_OK;
}
