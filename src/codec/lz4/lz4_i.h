/* SPDX-License-Identifier: MIT */
/**
 * @file lz4_i.h
 * Private to the LZ4 module (lz4.c, lz4_frontier.c, lz4_walk.c, lz4_span.c;
 * the index's own state: lz4_index_i.h): random access
 * into one raw LZ4 block (no frame header), the data of a RawArray file
 * with flags bit 1 set, through an index of access points.
 *
 * How it works. A walker of our own parses the block sequence by sequence
 * (token, lengths, offset: it never copies a byte) and decides, with the
 * very tests liblz4's LZ4_decompress_safe makes, whether the whole block
 * is valid; it records the sequence that holds each cache block boundary.
 * liblz4 (LZ4_decompress_safe_partial_usingDict) turns the whole sequences
 * of a cache block into bytes, with the 64 KiB before the block as its
 * dictionary; the one or two sequences cut by the block's ends are copied
 * by lz4_span.c (a literal run is bytes of the input, a match a copy from
 * `offset` bytes back), so a match or literal run of any length costs no
 * more memory than a block. Every AF_LZ4_SPAN bytes of output the 64 KiB
 * before it are kept (an access point): a block is decoded from the
 * nearest point or cached block before it.
 *
 * Why a walker of our own and not liblz4 alone: liblz4's safe decoders
 * cannot say where in the input they stopped, and an access point needs
 * that input offset at a sequence start (LZ4_decompress_safe_partial stops
 * at an output size but reports no input position). Parsing the fields of
 * a sequence is all the walker does; decoding stays liblz4's. The price:
 * the first pass parses every sequence twice (walker, then liblz4), and
 * parsing is most of liblz4's own work on data of short sequences (there a
 * first pass runs at about 0.4x LZ4_decompress_safe; on data of long
 * literal runs or matches at 0.8x: tests/bench/bench_lz4.c).
 *
 * Invariants:
 *  - A read returns only bytes of a block the walker has validated up to
 *    the end of the read; the block's verdict (AF_E_CORRUPT with the source
 *    offset of the faulty sequence) is that of LZ4_decompress_safe of the
 *    whole block into exactly the decoded size, met at the latest when a
 *    read reaches the last byte, and it stays for the life of the index.
 *    A match offset of 0, invalid in the LZ4 block format, is taken as
 *    liblz4 1.9 takes it: as zeros.
 *  - Nothing is ever written past the decoded size or read past the block.
 */
#ifndef ARRAYFS_LZ4_I_H
#define ARRAYFS_LZ4_I_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arrayfs/af_lz4.h"

/* How far back an LZ4 match can reach: the dictionary a block needs. */
#define LZ4I_HISTORY (64u << 10)

/* Bytes of zeros placed after the input handed to liblz4: it may read the
 * next token once it has the output it was asked for, and a zero token is
 * an empty sequence that makes it stop. */
#define LZ4I_PAD 16u

/** Tuning: the public defaults (af_lz4.h), shrunk by tests. */
struct lz4_opts {
	uint64_t span;         /* output bytes between access points: a
				* multiple of block */
	size_t block;          /* cache block: output bytes decoded at once */
	unsigned cache_blocks; /* decoded blocks kept, >= 1 */
	size_t walk_buf;       /* input bytes the walker reads at once, >= 64 */
};

/** Fill @p o with the public defaults. */
void lz4_default_opts(struct lz4_opts *o);

/**
 * af_lz4_index_open over bytes [base, base + in_len) of @p src, a raw LZ4
 * block that must decode to @p out_len bytes, with tuning @p o.
 * Returns AF_OK, AF_E_INVAL (@p o out of range), AF_E_CORRUPT (no LZ4 block
 * of in_len bytes decodes to out_len), AF_E_NOMEM.
 */
af_status lz4_index_open_opts(af_lz4_index **out, const af_source *src,
			      uint64_t base, uint64_t in_len, uint64_t out_len,
			      const struct lz4_opts *o, af_error *err);

/** Whether @p ix was opened over the LZ4 data of @p a. */
bool lz4_index_fits(const af_lz4_index *ix, const af_array *a);

/** Access points the index holds now (for tests). */
size_t lz4_index_points(af_lz4_index *ix);

/** Cache blocks decoded from the block's start (the frontier) once no
 * decode-ahead job is queued or running (for tests: never with a pool of
 * no thread, whose jobs wait to be taken back). */
uint64_t lz4_index_settled_frontier(af_lz4_index *ix);

/** The memory af_lz4_index_bound promises for @p out_len with @p o. */
uint64_t lz4_bound_opts(uint64_t out_len, const struct lz4_opts *o);

/* One sequence of the block, as the walker parsed it. `lit` literal bytes
 * at input lit_in, then (unless it is the last sequence) `ml` bytes copied
 * from `offset` bytes back. */
struct lz4_seq {
	uint64_t in;      /* input offset of its token */
	uint64_t lit_in;  /* input offset of its first literal */
	uint64_t end_in;  /* input offset just past it */
	uint64_t out;     /* output offset of its first byte */
	uint64_t lit;     /* literal bytes */
	uint64_t ml;      /* match bytes; 0 for the last sequence */
	uint32_t offset;  /* match distance, 0..65535 */
	bool last;        /* the block's last sequence: literals only */
	bool safe;        /* the walker was in liblz4's careful loop at it */
};

/** Output offset just past @p s. */
static inline uint64_t lz4_seq_end(const struct lz4_seq *s)
{
	return s->out + s->lit + s->ml;
}

/* The walker: LZ4_decompress_safe's control flow without the copies. */
struct lz4_walker {
	const af_source *src;
	uint64_t base;        /* source offset of input byte 0 */
	uint64_t in_len, out_len;
	uint64_t ip, op;      /* where the next sequence starts */
	bool safe;            /* in liblz4's careful loop (near either end) */
	bool done;            /* the last sequence was parsed */
	unsigned char *buf;   /* input bytes [buf_at, buf_at + buf_len), with
			       * room for LZ4I_PAD bytes past buf_cap */
	size_t buf_cap, buf_len;
	uint64_t buf_at;
};

/* Input bytes in memory that lz4_span_decode may decode in place: [at, at
 * + len) at buf, writable LZ4I_PAD bytes past it (it restores them). */
struct lz4_window {
	unsigned char *buf;
	uint64_t at;
	size_t len;
};

/**
 * Start @p w at the beginning of the block [base, base + in_len) of @p src
 * that must decode to out_len bytes, reading walk_buf bytes at a time.
 * Returns AF_OK or AF_E_NOMEM; free with lz4_walker_free.
 */
af_status lz4_walker_init(struct lz4_walker *w, const af_source *src,
			  uint64_t base, uint64_t in_len, uint64_t out_len,
			  size_t walk_buf, af_error *err);

void lz4_walker_free(struct lz4_walker *w);

/**
 * Parse the next sequence into *s and move past it. Returns AF_OK,
 * AF_E_CORRUPT (the block is invalid there, or it ended with a decoded size
 * other than out_len; err->offset is the source offset of the sequence's
 * token), AF_E_RANGE (called after the last sequence), or the source's
 * AF_E_IO / AF_E_TRUNCATED, after which @p w is unchanged and may retry.
 */
af_status lz4_walker_next(struct lz4_walker *w, struct lz4_seq *s,
			  af_error *err);

/**
 * Keep input byte @p pos (<= the walker's position) and at least a
 * quarter of a window after it in the window, sliding the window to start
 * at @p pos if not: the walk of one cache block then leaves that block's
 * input in memory for lz4_span_decode (a window is four blocks by
 * default). Returns AF_OK or the source's read failure.
 */
af_status lz4_walker_anchor(struct lz4_walker *w, uint64_t pos, af_error *err);

/**
 * lz4_walker_next until a sequence ends past output byte @p y (it holds
 * y) or the last one is parsed; *s is then that sequence. Sets *zeros
 * when a sequence parsed has a match offset of 0. The same verdicts as
 * lz4_walker_next, and the same retry on a read failure.
 */
af_status lz4_walker_past(struct lz4_walker *w, uint64_t y, struct lz4_seq *s,
			  bool *zeros, af_error *err);

/**
 * Bytes [x, y) of the output of the block @p block walks (its source and
 * sizes: it is not moved) into @p out (out[i] is byte x + i),
 * given the min(64 KiB, x) bytes of output before x at out[-min(64K, x)].
 * @p head is the sequence holding x (or one starting at x), @p tail the one
 * holding y, or starting at y (at the decoded size: a record with `in` the
 * block size and `out` the decoded size); both were validated by the
 * walker, and every sequence between them. @p zeros: a sequence between
 * them has a match offset of 0 (liblz4 would leave stale bytes where it
 * stops; they are walked again and copied here instead). The input comes
 * from @p win when it holds it (NULL: none), else is read into *inbuf /
 * *incap, a reusable buffer (grown here, freed by the caller).
 * Returns AF_OK, AF_E_CORRUPT (liblz4 disagrees: the source changed since
 * it was walked), AF_E_NOMEM, or the source's read failures.
 */
af_status lz4_span_decode(const struct lz4_walker *block,
			  unsigned char *out, uint64_t x,
			  uint64_t y, const struct lz4_seq *head,
			  const struct lz4_seq *tail, bool zeros,
			  const struct lz4_window *win, unsigned char **inbuf,
			  size_t *incap, af_error *err);

#endif /* ARRAYFS_LZ4_I_H */
