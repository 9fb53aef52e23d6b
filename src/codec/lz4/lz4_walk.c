/* SPDX-License-Identifier: MIT */
/*
 * The LZ4 walker: parses a raw LZ4 block one sequence at a time, never
 * copying a byte, and accepts or refuses it exactly as liblz4's
 * LZ4_decompress_safe (1.9) does when it decodes the whole block into a
 * buffer of the declared size.
 *
 * liblz4's verdict is not only the format's rules: which sequences it lets
 * end near the ends of the input or output depends on which of its two
 * loops decodes them (a fast one while 64 or more output bytes remain, a
 * careful one after; a shortcut inside the careful one). So the walker
 * follows the same loops with the same tests, written on offsets instead of
 * pointers; each is marked with the liblz4 condition it mirrors. The
 * differential tests (test_lz4.c, fuzz_lz4_index) hold it to liblz4's
 * answer on valid, cut, flipped and random blocks.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bytes_i.h"
#include "lz4_i.h"

/* liblz4's names for the distances its tests use */
#define RUN_MASK 15u     /* literal length nibble that continues */
#define ML_MASK 15u      /* match length nibble that continues */
#define MINMATCH 4u
#define MFLIMIT 12u      /* literals this close to the output end end it */
#define LASTLITERALS 5u  /* a match may not end this close to it */
#define FASTLOOP 64u     /* the fast loop runs while this much output is left */

af_status lz4_walker_init(struct lz4_walker *w, const af_source *src,
			  uint64_t base, uint64_t in_len, uint64_t out_len,
			  size_t walk_buf, af_error *err)
{
	*w = (struct lz4_walker){ .src = src, .base = base, .in_len = in_len,
				  .out_len = out_len,
				  .safe = out_len < FASTLOOP };
	w->buf_cap = walk_buf;
	w->buf = malloc(walk_buf + LZ4I_PAD);
	if (!w->buf)
		return af_error_set(err, AF_E_NOMEM, base,
				    "no memory for the LZ4 walker");
	return AF_OK;
}

void lz4_walker_free(struct lz4_walker *w)
{
	free(w->buf);
	w->buf = NULL;
}

/* Make input byte @p pos (< in_len) readable: the window starts there
 * now. What it held from pos on is moved, not read again. */
static af_status walk_load(struct lz4_walker *w, uint64_t pos, af_error *err)
{
	size_t keep = 0;
	if (pos - w->buf_at < w->buf_len) {
		keep = w->buf_len - (size_t)(pos - w->buf_at);
		memmove(w->buf, w->buf + (pos - w->buf_at), keep);
	}
	w->buf_at = pos;
	w->buf_len = keep;
	uint64_t left = w->in_len - pos;
	size_t n = left < w->buf_cap ? (size_t)left : w->buf_cap;
	/* a failed read leaves the window as it was moved: still true */
	af_status st = af_source_read_exact(w->src, w->buf + keep, n - keep,
					    w->base + pos + keep, err);
	if (st != AF_OK)
		return st;
	w->buf_len = n;
	return AF_OK;
}

/* Input byte @p pos into *b. The loops below only ask for bytes inside the
 * block (liblz4 relies on the same tests); the bound is checked anyway. */
static inline af_status walk_byte(struct lz4_walker *w, uint64_t pos,
				  unsigned *b, bool *bad, af_error *err)
{
	if (pos >= w->in_len) {
		*bad = true;
		return AF_OK;
	}
	if (pos - w->buf_at >= w->buf_len) {
		af_status st = walk_load(w, pos, err);
		if (st != AF_OK)
			return st;
	}
	*b = w->buf[pos - w->buf_at];
	return AF_OK;
}

/*
 * liblz4's read_variable_length: bytes from *ip added to *len while they
 * are 255. Past a byte, ip must stay <= in_len - k (its `ilimit`); with
 * @p initial, *ip must start below that. *len never exceeds @p cap: a
 * longer run cannot fit the output, which liblz4 finds a test later.
 */
static af_status walk_varlen(struct lz4_walker *w, uint64_t *ip, unsigned k,
			     bool initial, uint64_t cap, uint64_t *len,
			     bool *bad, af_error *err)
{
	const uint64_t I = w->in_len;
	if (initial && *ip + k >= I) {
		*bad = true;
		return AF_OK;
	}
	unsigned s;
	do {
		af_status st = walk_byte(w, *ip, &s, bad, err);
		if (st != AF_OK || *bad)
			return st;
		(*ip)++;
		if (*ip + k > I || *len > cap || s > cap - *len) {
			*bad = true;
			return AF_OK;
		}
		*len += s;
	} while (s == 255);
	return AF_OK;
}

static af_status walk_le16(struct lz4_walker *w, uint64_t ip, uint32_t *v,
			   bool *bad, af_error *err)
{
	unsigned lo, hi;
	af_status st = walk_byte(w, ip, &lo, bad, err);
	if (st == AF_OK && !*bad)
		st = walk_byte(w, ip + 1, &hi, bad, err);
	if (st == AF_OK && !*bad)
		*v = lo | (hi << 8);
	return st;
}

static af_status walk_refuse(const struct lz4_walker *w,
			     const struct lz4_seq *s, const char *why,
			     af_error *err)
{
	return af_error_set(err, AF_E_CORRUPT, w->base + s->in,
			    "LZ4 block at byte %" PRIu64 " is corrupt: the sequence at byte %"
			    PRIu64 " (output byte %" PRIu64 ") %s",
			    w->base, w->base + s->in, s->out, why);
}

/* Each step of lz4_walker_next that can fail: leave with the reason. */
#define WALK(call, reason)                                                   \
	do {                                                                 \
		af_status st_ = (call);                                      \
		if (st_ != AF_OK)                                            \
			return st_;                                          \
		if (bad) {                                                   \
			why = (reason);                                      \
			goto refuse;                                         \
		}                                                            \
	} while (0)

af_status lz4_walker_next(struct lz4_walker *w, struct lz4_seq *s,
			  af_error *err)
{
	if (w->done)
		return af_error_set(err, AF_E_RANGE, w->base + w->in_len,
				    "the LZ4 block has no sequence after its last");
	const uint64_t I = w->in_len, O = w->out_len;
	uint64_t ip = w->ip, op = w->op, lit, ml;
	bool safe = w->safe, bad = false;
	uint32_t off = 0;
	unsigned tok;
	const char *why;
	*s = (struct lz4_seq){ .in = ip, .out = op, .safe = safe };
	if (I == 0) {
		bad = true;
		why = "is missing: the block is empty";
		goto refuse;
	}
	WALK(walk_byte(w, ip, &tok, &bad, err), "is past the end of the block");
	ip++;
	lit = tok >> 4;
	const unsigned mlc = tok & 15u;
	if (!safe) {
		/* liblz4's fast loop: oend - op >= FASTLOOP */
		if (lit == RUN_MASK) {
			WALK(walk_varlen(w, &ip, RUN_MASK, true, O, &lit, &bad, err),
			     "has a literal length running past the end of the block");
			/* op+length > oend-32 || ip+length > iend-32 */
			if (op + lit + 32 > O || ip + lit + 32 > I) {
				safe = true;
				goto literals;
			}
		} else if (ip + 17 > I) { /* ip > iend-(16+1) */
			safe = true;
			goto literals;
		}
		s->lit_in = ip;
		ip += lit;
		op += lit;
		WALK(walk_le16(w, ip, &off, &bad, err), "is cut by the end of the block");
		ip += 2;
		ml = mlc;
		if (mlc == ML_MASK)
			WALK(walk_varlen(w, &ip, LASTLITERALS - 1, false, O, &ml,
					 &bad, err),
			     "has a match length running past the end of the block");
		ml += MINMATCH;
		/* op + length >= oend - FASTLOOP_SAFE_DISTANCE */
		if (op + ml + FASTLOOP >= O) {
			safe = true;
			goto match;
		}
		/* the 18-byte copy: offset >= 8, match inside the output */
		if (mlc != ML_MASK && off >= 8 && off <= op)
			goto done;
		goto match;
	}
	/* liblz4's careful loop, and its shortcut: ip < shortiend (iend-16)
	 * && op <= shortoend (oend-32) for literal lengths 0..14 */
	if (lit != RUN_MASK && ip + 16 < I && op + 32 <= O) {
		s->lit_in = ip;
		ip += lit;
		op += lit;
		WALK(walk_le16(w, ip, &off, &bad, err), "is cut by the end of the block");
		ip += 2;
		/* its 18-byte match copy checks nothing more */
		if (mlc != ML_MASK && off >= 8 && off <= op) {
			ml = mlc + MINMATCH;
			goto done;
		}
		goto copy_match;
	}
	if (lit == RUN_MASK)
		WALK(walk_varlen(w, &ip, RUN_MASK, true, O, &lit, &bad, err),
		     "has a literal length running past the end of the block");
literals:
	s->lit_in = ip;
	/* cpy > oend-MFLIMIT || ip+length > iend-(2+1+LASTLITERALS): these
	 * literals must be the last sequence, ending both exactly */
	if (op + lit + MFLIMIT > O || ip + lit + 8 > I) {
		if (op + lit > O) {
			why = "has literals running past the decoded size";
			goto refuse;
		}
		if (ip + lit != I) {
			why = "has literals that must end the block and do not";
			goto refuse;
		}
		op += lit;
		if (op != O) {
			char msg[96];
			snprintf(msg, sizeof(msg), "ends the block at %" PRIu64
				 " decoded bytes, not the %" PRIu64 " declared", op, O);
			return walk_refuse(w, s, msg, err);
		}
		s->lit = lit;
		s->end_in = I;
		s->last = true;
		w->ip = I;
		w->op = op;
		w->done = true;
		return AF_OK;
	}
	ip += lit;
	op += lit;
	WALK(walk_le16(w, ip, &off, &bad, err), "is cut by the end of the block");
	ip += 2;
copy_match:
	ml = mlc;
	if (mlc == ML_MASK)
		WALK(walk_varlen(w, &ip, LASTLITERALS - 1, false, O, &ml, &bad, err),
		     "has a match length running past the end of the block");
	ml += MINMATCH;
match:
	/* checkOffset: match + dictSize < lowPrefix */
	if (off > op) {
		why = "has a match reaching before the start of the output";
		goto refuse;
	}
	/* cpy > oend-MATCH_SAFEGUARD_DISTANCE && cpy > oend-LASTLITERALS */
	if (op + ml + LASTLITERALS > O) {
		why = "has a match ending in the last 5 bytes or past the decoded size";
		goto refuse;
	}
done:
	s->lit = op - s->out;
	s->ml = ml;
	s->offset = off;
	s->end_in = ip;
	w->ip = ip;
	w->op = op + ml;
	w->safe = safe;
	return AF_OK;
refuse:
	return walk_refuse(w, s, why, err);
}

af_status lz4_walker_anchor(struct lz4_walker *w, uint64_t pos, af_error *err)
{
	uint64_t end = w->buf_at + w->buf_len;
	if (pos >= w->in_len ||
	    (pos - w->buf_at < w->buf_len &&
	     (end - pos >= w->buf_cap / 4 || end == w->in_len)))
		return AF_OK;
	return walk_load(w, pos, err);
}

/* Make input [pos, pos + n) readable; n <= buf_cap and pos + n <= in_len. */
static inline af_status walk_need(struct lz4_walker *w, uint64_t pos, size_t n,
				  af_error *err)
{
	if (pos - w->buf_at < w->buf_len && pos + n <= w->buf_at + w->buf_len)
		return AF_OK;
	return walk_load(w, pos, err);
}

/*
 * The sequences of liblz4's fast loop far from the block's end, parsed
 * from the window with no call per byte: the tests are those of
 * lz4_walker_next's fast branch, and anything else (a switch to the
 * careful loop, an error, the input's last bytes) stops before the
 * sequence, for lz4_walker_next to judge. Returns with *found set when a
 * sequence ends past @p y (it is then *s).
 */
static af_status walk_fast(struct lz4_walker *w, uint64_t y, struct lz4_seq *s,
			   bool *found, bool *zeros, af_error *err)
{
	const uint64_t I = w->in_len, O = w->out_len;
	uint64_t ip = w->ip, op = w->op;
	af_status st = AF_OK;
	bool zero = false;
	/* 64: a token, an offset and length bytes to spare before the end */
	while (ip + 64 <= I) {
		st = walk_need(w, ip, 64, err);
		if (st != AF_OK)
			break;
		/* the common case first, while 64 bytes of window remain: both
		 * lengths in the token, a match inside the output and the
		 * sequence ending before y and far from the output's end. One
		 * test each (an offset of 0 wraps o - 1 past any mo), so that
		 * it parses about as fast as liblz4 decodes. */
		const unsigned char *p = w->buf + (ip - w->buf_at);
		const uint64_t win_end = w->buf_at + w->buf_len;
		const unsigned char *pend =
			w->buf + ((win_end < I ? win_end : I) - 64 - w->buf_at);
		const uint64_t stop = y + 1 < O - FASTLOOP ? y + 1 : O - FASTLOOP;
		while (p <= pend) {
			const unsigned t = *p, lt = t >> 4, mc = t & 15u;
			if (lt == RUN_MASK || mc == ML_MASK)
				break;
			const uint64_t o = af_le16(p + 1 + lt), mo = op + lt;
			const uint64_t end = mo + mc + MINMATCH;
			if (end >= stop || o - 1 >= mo)
				break;
			op = end;
			p += 3 + lt;
		}
		ip = w->buf_at + (uint64_t)(p - w->buf);
		if (ip + 64 > I)
			break;
		st = walk_need(w, ip, 64, err);
		if (st != AF_OK)
			break;
		const unsigned tok = w->buf[ip - w->buf_at];
		uint64_t lit = tok >> 4, q = ip + 1;
		bool bad = false; /* then lz4_walker_next says why */
		if (lit == RUN_MASK) {
			st = walk_varlen(w, &q, RUN_MASK, true, O, &lit, &bad, err);
			if (st != AF_OK || bad ||
			    op + lit + 32 > O || q + lit + 32 > I)
				break;
		} else if (q + 17 > I) {
			break;
		}
		const uint64_t lit_in = q;
		q += lit;
		st = walk_need(w, q, 2, err);
		if (st != AF_OK)
			break;
		const uint32_t off = af_le16(w->buf + (q - w->buf_at));
		q += 2;
		const uint64_t mo = op + lit;
		uint64_t ml = tok & 15u;
		if (ml == ML_MASK) {
			st = walk_varlen(w, &q, LASTLITERALS - 1, false, O, &ml,
					 &bad, err);
			if (st != AF_OK || bad)
				break;
		}
		ml += MINMATCH;
		if (mo + ml + FASTLOOP >= O || off > mo)
			break;
		zero |= off == 0;
		if (mo + ml > y) {
			*s = (struct lz4_seq){ .in = ip, .lit_in = lit_in, .end_in = q,
					       .out = op, .lit = lit, .ml = ml,
					       .offset = off };
			*found = true;
			ip = q;
			op = mo + ml;
			break;
		}
		ip = q;
		op = mo + ml;
	}
	w->ip = ip;
	w->op = op;
	*zeros |= zero;
	return st;
}

af_status lz4_walker_past(struct lz4_walker *w, uint64_t y, struct lz4_seq *s,
			  bool *zeros, af_error *err)
{
	for (;;) {
		bool found = false;
		if (!w->safe && !w->done) {
			af_status st = walk_fast(w, y, s, &found, zeros, err);
			if (st != AF_OK || found)
				return st;
		}
		af_status st = lz4_walker_next(w, s, err);
		if (st != AF_OK)
			return st;
		*zeros |= s->ml && s->offset == 0;
		if (s->last || lz4_seq_end(s) > y)
			return AF_OK;
	}
}
