/* SPDX-License-Identifier: MIT */
/**
 * @file inflate_cursor_i.h
 * Private to the inflate module (src/codec/inflate/).
 * A cursor, run by its owner without z->lock (inflate_cursor.c): where it
 * starts, what it serves, the points it records, its input
 * (inflate_input.c) and the errors every engine reports alike.
 */
#ifndef ARRAYFS_INFLATE_CURSOR_I_H
#define ARRAYFS_INFLATE_CURSOR_I_H

#include "inflate_state_i.h"

/* inflate_cursor.c: all run by the cursor's owner, without z->lock. */

/**
 * Position @p c at @p p (NULL: the stream start) to inflate with @p engine
 * (ZLIB or ISAL). @p next_mark and @p from_start are decided by the caller
 * under the lock.
 */
af_status afz_cursor_start(af_inflate *z, struct afz_cursor *c,
			   const struct afz_point *p, af_inflate_engine engine,
			   uint64_t next_mark, bool from_start, af_error *err);

/**
 * Advance @p c (at c->out <= off) to cover [off, end) and copy that range
 * into @p buf (which holds byte off at buf[0]). Leaves c->out at the end of
 * the cache block holding end - 1. On failure c is no longer positioned.
 */
af_status afz_cursor_serve(af_inflate *z, struct afz_cursor *c,
			   unsigned char *buf, uint64_t off, uint64_t end,
			   af_error *err);

/**
 * Inflate exactly @p n more bytes (c->out + n <= z->size) into @p dst
 * with c's engine, zlib taking over where ISA-L gives up; a loaded
 * index's pieces are checked on the way.
 */
af_status afz_cursor_produce(af_inflate *z, struct afz_cursor *c,
			     unsigned char *dst, uint64_t n, af_error *err);

void afz_cursor_free(af_inflate *z, struct afz_cursor *c);
/* A block boundary where another block follows: a place to restart. */
struct afz_boundary {
	uint64_t out;                /* output offset */
	uint64_t in;                 /* first compressed byte not used up */
	unsigned bits;               /* bits of byte in - 1 still unused */
	const unsigned char *window; /* the wlen output bytes before out */
	unsigned wlen;
	bool has_crc;                /* crc is known: a pass from 0 */
	uint32_t crc;                /* CRC-32 of output [0, out) */
};

/** Record a point at @p b (at or past c->next_mark) if the budget allows;
 * moves c->next_mark on. */
void afz_record_point(af_inflate *z, struct afz_cursor *c,
		      const struct afz_boundary *b);

/* inflate_input.c */

/** Read more compressed input into c->next_in/avail_in (one pread, or the
 * buffer a pool thread read ahead for the pass from 0); at the source's
 * end set c->eof instead of failing. */
af_status afz_refill(af_inflate *z, struct afz_cursor *c, af_error *err);
/** Free the input read ahead for @p c (it moves, or the stream closes),
 * waiting for a read under way. */
void afz_input_drop(af_inflate *z, struct afz_cursor *c);

/** The stream ended right at the declared size: check the CRC-32 of a pass
 * from 0 (a mismatch condemns the member). */
af_status afz_ended(af_inflate *z, struct afz_cursor *c, af_error *err);

/* The errors every engine reports alike. */
af_status afz_nomem(af_error *err, const char *what);
af_status afz_truncated(af_inflate *z, struct afz_cursor *c, af_error *err);
af_status afz_too_long(af_inflate *z, struct afz_cursor *c, uint64_t in,
		       af_error *err);
af_status afz_too_short(af_inflate *z, struct afz_cursor *c, uint64_t in,
			af_error *err);

af_status afz_ensure_buf(af_inflate *z, unsigned char **buf, size_t len,
			 af_error *err);
/**
 * Raw-deflate the @p wlen window bytes at @p win at level 1 (ISA-L's when
 * built with it) into at most @p room bytes at @p out: their count, or 0
 * if they do not fit (or no memory for the deflate state).
 */
unsigned afz_deflate_window(af_inflate *z, const unsigned char *win,
			    unsigned wlen, unsigned char *out, size_t room);

#endif /* ARRAYFS_INFLATE_CURSOR_I_H */
