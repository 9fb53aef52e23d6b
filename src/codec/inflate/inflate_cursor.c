/* SPDX-License-Identifier: MIT */
/*
 * One inflate cursor of an af_inflate, whichever engine inflates for it:
 * restarting at an access point or the stream start, serving a read range
 * block by block (publishing whole blocks to the cache), recording access
 * points where an engine reports a block boundary (keeping each window as
 * it is or deflated, within the index budget), the errors both engines
 * word alike, and zlib taking over a stretch ISA-L gave up on. Every
 * function here runs in the thread that owns the cursor, without z->lock,
 * except where it takes the lock to look at or append points.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../bytes_i.h"
#include "inflate_read_i.h"
#include "inflate_cursor_i.h"
#include "inflate_engine_i.h"
#include "inflate_index_i.h"
#include "inflate_cache_i.h"

af_status afz_nomem(af_error *err, const char *what)
{
	return af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
			    "out of memory allocating the inflate %s", what);
}

af_status afz_ensure_buf(af_inflate *z, unsigned char **buf, size_t len,
			 af_error *err)
{
	if (*buf)
		return AF_OK;
	*buf = malloc(len);
	if (!*buf)
		return afz_nomem(err, "buffers");
	afz_mem_add(z, len);
	return AF_OK;
}

af_status afz_truncated(af_inflate *z, struct afz_cursor *c, af_error *err)
{
	return af_error_set(err, AF_E_TRUNCATED, c->in,
			    "deflate data ends at compressed byte %llu, after "
			    "%llu of %llu output bytes", ull(c->in), ull(c->out),
			    ull(z->size));
}

af_status afz_too_long(af_inflate *z, struct afz_cursor *c, uint64_t in,
		       af_error *err)
{
	c->fatal = true;
	return af_error_set(err, AF_E_CORRUPT, in,
			    "deflate stream inflates to more than the declared "
			    "%llu bytes (compressed byte %llu)", ull(z->size),
			    ull(in));
}

af_status afz_too_short(af_inflate *z, struct afz_cursor *c, uint64_t in,
			af_error *err)
{
	c->fatal = true;
	return af_error_set(err, AF_E_CORRUPT, in,
			    "deflate stream ends after %llu output bytes, %llu "
			    "declared (compressed byte %llu)", ull(c->out),
			    ull(z->size), ull(in));
}

af_status afz_ended(af_inflate *z, struct afz_cursor *c, af_error *err)
{
	c->ended = true;
	if (!c->from_start)
		return AF_OK;
	if (c->crc != z->crc) {
		c->fatal = true;
		return af_error_set(err, AF_E_CORRUPT, AF_NO_OFFSET,
				    "CRC-32 of the %llu output bytes is "
				    "%08x, expected %08x", ull(z->size),
				    (unsigned)c->crc, (unsigned)z->crc);
	}
	c->crc_checked = true;
	return AF_OK;
}

static const struct afz_engine *engine_of(af_inflate_engine e)
{
#ifdef AF_HAVE_ISAL
	if (e == AF_INFLATE_ISAL)
		return &afz_engine_isal;
#endif
	(void)e;
	return &afz_engine_zlib;
}

af_status afz_cursor_start(af_inflate *z, struct afz_cursor *c,
			   const struct afz_point *p, af_inflate_engine engine,
			   uint64_t next_mark, bool from_start, af_error *err)
{
	af_status st = afz_ensure_buf(z, &c->inbuf, z->o.inbuf, err);
	if (st)
		return st;
	afz_input_drop(z, c);
	const struct afz_engine *eng = engine_of(engine);
	if (c->eng && c->eng != eng)
		c->eng->release(z, c);
	c->eng = eng;
	st = eng->reset(z, c, err);
	if (st)
		return st;
	const unsigned char *dict = p ? p->window : NULL;
	if (p && p->zlen) {
		/* a window of a loaded index is first inflated here (the
		 * import checks only its size): one that does not inflate
		 * back fails the reads that start at its point */
		st = afz_ensure_buf(z, &c->scratch, AFZ_SCRATCH, err);
		if (!st)
			st = eng->unzip_window(z, c, p);
		if (st == AF_E_NOMEM)
			return afz_nomem(err, "state");
		if (st)
			return af_error_set(err, AF_E_CORRUPT, p->in,
					    "the saved window of the access "
					    "point at output byte %llu does "
					    "not inflate back", ull(p->out));
		dict = c->scratch;
	}
	c->next_in = c->inbuf;
	c->avail_in = 0;
	c->ask = z->o.inbuf < AFZ_INBUF_FIRST ? z->o.inbuf : AFZ_INBUF_FIRST;
	c->next_mark = next_mark;
	c->ended = false;
	c->eof = false;
	c->crc_checked = false;
	c->fatal = false;
	c->refused = false;
	c->seek_fed = 0;
	c->scouted = false;
	c->rescout = false;
	c->crc = 0;
	c->vpiece = AFZ_NO_PIECE;
	c->bad_from = c->bad_to = 0;
	if (!p) {
		c->in = 0;
		c->out = 0;
		c->from_start = from_start;
		return AF_OK;
	}
	c->from_start = false;
	c->out = p->out;
	c->in = p->in - (p->bits ? 1 : 0);
	unsigned value = 0;
	if (p->bits) {
		/* the point starts inside this byte: hand its top bits over */
		st = afz_refill(z, c, err);
		if (st)
			return st;
		if (c->eof)
			return afz_truncated(z, c, err);
		value = c->next_in[0] >> (8 - p->bits);
		c->next_in++;
		c->avail_in--;
	}
	if (!eng->resume(c, p->bits, value, dict, p->wlen))
		return af_error_set(err, AF_E_CORRUPT, p->in,
				    "cannot resume inflating at compressed "
				    "byte %llu", ull(p->in));
	return AF_OK;
}

/* Output offset the next point is due at. Lock held. */
static uint64_t point_due(const af_inflate *z)
{
	uint64_t last = z->npoints ? z->points[z->npoints - 1].out : 0;
	uint64_t due;
	return af_add(last, z->o.span, &due) ? UINT64_MAX : due;
}

/* Bytes a new point at @p out may store without passing the index budget,
 * besides its record. Lock held. */
static size_t budget_left(const af_inflate *z, uint64_t out)
{
	if (!z->o.index_div)
		return SIZE_MAX;
	uint64_t allow = out / z->o.index_div;
	uint64_t held = (uint64_t)z->index_bytes + sizeof(struct afz_point);
	return allow > held ? (size_t)(allow - held < SIZE_MAX ? allow - held
							      : SIZE_MAX)
			    : 0;
}

/* Output offset from which a window kept as it is fits the budget. Lock
 * held. */
static uint64_t raw_fits_at(const af_inflate *z)
{
	uint64_t need = (uint64_t)z->index_bytes + AF_INFLATE_WINDOW +
			sizeof(struct afz_point), at;
	return af_mul(need, z->o.index_div, &at) ? UINT64_MAX : at;
}

unsigned afz_deflate_window(af_inflate *z, const unsigned char *win,
			    unsigned wlen, unsigned char *out, size_t room)
{
#ifdef AF_HAVE_ISAL
	return afz_isal_deflate(z, win, wlen, out, room);
#else
	z_stream ds;
	memset(&ds, 0, sizeof(ds));
	ds.zalloc = afz_zalloc;
	ds.zfree = afz_zfree;
	ds.opaque = z;
	if (deflateInit2(&ds, 1, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return 0;
	ds.next_in = (unsigned char *)win;
	ds.avail_in = wlen;
	ds.next_out = out;
	ds.avail_out = (uInt)room;
	int ret = deflate(&ds, Z_FINISH);
	unsigned n = (unsigned)(room - ds.avail_out);
	deflateEnd(&ds);
	return ret == Z_STREAM_END ? n : 0;
#endif
}

/*
 * Copy the window of @p b into a new exact-size buffer: as it is if that
 * fits @p budget, else deflated if that fits and is smaller. NULL if
 * neither fits or memory runs out.
 */
static unsigned char *save_window(af_inflate *z, struct afz_cursor *c,
				  const struct afz_boundary *b, size_t budget,
				  unsigned *zlen)
{
	*zlen = 0;
	const unsigned char *from = b->window;
	size_t len = b->wlen;
	if (b->wlen > budget) {
		/* deflate keeps a block header even for one byte: a window
		 * that short never gets here with a positive budget */
		if (!budget || afz_ensure_buf(z, &c->scratch, AFZ_SCRATCH, NULL))
			return NULL;
		*zlen = afz_deflate_window(z, b->window, b->wlen,
					   c->scratch + AF_INFLATE_WINDOW,
					   budget < b->wlen - 1 ? budget
								: b->wlen - 1);
		if (!*zlen)
			return NULL;
		from = c->scratch + AF_INFLATE_WINDOW;
		len = *zlen;
	}
	unsigned char *win = malloc(len ? len : 1);
	if (win)
		memcpy(win, from, len);
	return win;
}

void afz_record_point(af_inflate *z, struct afz_cursor *c,
		      const struct afz_boundary *b)
{
	pthread_mutex_lock(&z->lock);
	uint64_t due = z->loaded ? UINT64_MAX : point_due(z);
	size_t budget = budget_left(z, b->out);
	pthread_mutex_unlock(&z->lock);
	if (b->out < due) {
		/* another cursor recorded past us meanwhile: wait for the
		 * span after its last point */
		c->next_mark = due;
		return;
	}
	unsigned zlen = 0;
	unsigned char *win = save_window(z, c, b, budget, &zlen);
	size_t stored = zlen ? zlen : b->wlen;

	pthread_mutex_lock(&z->lock);
	due = point_due(z);
	bool recorded = false;
	if (win && b->out >= due && stored <= budget_left(z, b->out)) {
		if (z->npoints == z->cap) {
			size_t cap = z->cap ? z->cap * 2 : 16;
			struct afz_point *np =
				realloc(z->points, cap * sizeof(*np));
			if (np) {
				afz_mem_add(z, (cap - z->cap) * sizeof(*np));
				z->points = np;
				z->cap = cap;
			}
		}
		if (z->npoints < z->cap) {
			struct afz_point *pt = &z->points[z->npoints++];
			pt->in = b->in;
			pt->out = b->out;
			pt->bits = (uint8_t)b->bits;
			pt->has_crc = b->has_crc;
			pt->head = true;
			pt->crc_before = b->crc;
			pt->wlen = b->wlen;
			pt->zlen = zlen;
			pt->window = win;
			afz_mem_add(z, stored);
			z->index_bytes += stored + sizeof(*pt);
			win = NULL;
			recorded = true;
		}
	}
	if (b->out >= due) {
		/* recorded or out of memory: skip a span rather than retry at
		 * every block; over the budget: retry as soon as a window
		 * that does not deflate would fit, if that is sooner */
		uint64_t fits = z->o.index_div ? raw_fits_at(z) : 0;
		if (af_add(b->out, z->o.span, &due))
			due = UINT64_MAX;
		if (!recorded && fits > b->out && fits < due)
			due = fits;
	}
	c->next_mark = due;
	pthread_mutex_unlock(&z->lock);
	free(win);
}

/*
 * ISA-L gave up at c->out: zlib restarts at the nearest point before it,
 * inflates up to it again without recording or checksumming, and the
 * cursor goes on from there with zlib. The stream stays with zlib, so its
 * verdict on whatever ISA-L stumbled over is the one every read sees.
 */
static af_status take_over(af_inflate *z, struct afz_cursor *c, af_error *err)
{
	uint64_t at = c->out, mark = c->next_mark;
	bool from_start = c->from_start;
	uint32_t crc = c->crc;
	/* the piece check goes on over the replayed stretch's end too */
	size_t vpiece = c->vpiece;
	uint64_t vstart = c->vstart, vend = c->vend;
	uint64_t bad_from = c->bad_from, bad_to = c->bad_to;
	uint32_t vcrc = c->vcrc;
	struct afz_point pt;
	bool at_point;

	pthread_mutex_lock(&z->lock);
	z->isal_refused = true;
	const struct afz_point *p = afz_nearest_point(z, at);
	at_point = p != NULL;
	if (p)
		pt = *p;
	pthread_mutex_unlock(&z->lock);

	af_status st = afz_cursor_start(z, c, at_point ? &pt : NULL,
					AF_INFLATE_ZLIB, UINT64_MAX, false,
					err);
	if (!st)
		st = afz_ensure_buf(z, &c->scratch, AFZ_SCRATCH, err);
	while (!st && c->out < at) {
		uint64_t n = at - c->out;
		st = afz_engine_zlib.produce(z, c, c->scratch,
					     n < AFZ_SCRATCH ? n : AFZ_SCRATCH,
					     err);
	}
	c->from_start = from_start;
	c->crc = crc;
	c->next_mark = mark;
	c->vpiece = vpiece;
	c->vstart = vstart;
	c->vend = vend;
	c->bad_from = bad_from;
	c->bad_to = bad_to;
	c->vcrc = vcrc;
	if (!st && c->ended)
		st = afz_ended(z, c, err);
	return st;
}

af_status afz_cursor_produce(af_inflate *z, struct afz_cursor *c,
			     unsigned char *dst, uint64_t n, af_error *err)
{
	uint64_t end = c->out + n;
	/* a pass from 0 records the CRC-32s a saved index's pieces need as
	 * it checksums (afz_crc_advance, in the engines) */
	af_status st = c->eng->produce(z, c, dst, n, err);
	if (c->refused) {
		st = take_over(z, c, err);
		if (!st)
			st = afz_engine_zlib.produce(z, c,
						     dst + (n - (end - c->out)),
						     end - c->out, err);
	}
	if (st) {
		c->vpiece = AFZ_NO_PIECE;
		return st;
	}
	__atomic_fetch_add(&z->inflated, n, __ATOMIC_RELAXED);
	return afz_verify(z, c, dst, n, err);
}

/*
 * The piece whose check must end before a cache block ending at @p bend
 * may be served: with a loaded index, the piece @p c is checking if the
 * block holds any of its bytes (its check has not ended), else none.
 */
static size_t pending_piece(const af_inflate *z, const struct afz_cursor *c,
			    uint64_t bend)
{
	return z->loaded && c->vpiece != AFZ_NO_PIECE && bend > c->vstart
		       ? c->vpiece
		       : AFZ_NO_PIECE;
}

/* Hand c->blockbuf, holding the @p len bytes at @p at (a block start),
 * to the cache, unless they hold bytes of a piece that failed its check. */
static void put_block(af_inflate *z, struct afz_cursor *c, uint64_t at,
		      size_t len)
{
	if (c->bad_from < c->bad_to && at < c->bad_to &&
	    at + len > c->bad_from)
		return;
	afz_cache_put(z, c, at / z->o.block, len,
		      pending_piece(z, c, at + len));
}

static af_status publish_copy(af_inflate *z, struct afz_cursor *c,
			      const unsigned char *src, uint64_t at,
			      size_t len, af_error *err)
{
	af_status st = afz_ensure_buf(z, &c->blockbuf, z->o.block, err);
	if (st)
		return st;
	memcpy(c->blockbuf, src, len);
	put_block(z, c, at, len);
	return AF_OK;
}

af_status afz_cursor_serve(af_inflate *z, struct afz_cursor *c,
			   unsigned char *buf, uint64_t off, uint64_t end,
			   af_error *err)
{
	const uint64_t bs = z->o.block;
	/* keep the skipped blocks the cache holds beside this read's tail: a
	 * read of them is under way when the kernel's read-ahead reads were
	 * served out of order (it found them here, rather than inflating them
	 * again from the point before them: a .stack read of 4 MiB members
	 * inflated some up to twice when only half the cache kept them); a
	 * skip farther than that keeps its last blocks only */
	uint64_t skip_keep =
		bs * (z->o.cache_blocks - AFZ_TAIL_BLOCKS(z->o.cache_blocks));
	uint64_t keep_from = off - (off < skip_keep ? off : skip_keep);
	af_status st = AF_OK;

	c->vfrom = off;
	while (c->out < end && st == AF_OK) {
		uint64_t bstart = c->out - c->out % bs;
		uint64_t bend = z->size - bstart < bs ? z->size : bstart + bs;
		bool whole = c->out == bstart;

		if (whole && c->out >= off && bend <= end) {
			/* whole blocks inside the request: straight into buf */
			uint64_t stop = end == z->size ? end : end - end % bs;
			uint64_t from = c->out;
			st = afz_cursor_produce(z, c, buf + (from - off),
						 stop - from, err);
			if (st)
				break;
			/* cache only the tail, which an overlapping next read
			 * may want: copying it all costs ~4 % of the speed */
			uint64_t cache_from = from;
			uint64_t keep = bs * AFZ_TAIL_BLOCKS(z->o.cache_blocks);
			if (stop - from > keep)
				cache_from = stop - keep - (stop - keep) % bs;
			if (cache_from < from)
				cache_from = from;
			for (uint64_t b = cache_from;
			     z->o.cache_blocks && b < stop && !st; b += bs) {
				uint64_t e = stop - b < bs ? stop : b + bs;
				st = publish_copy(z, c, buf + (b - off), b,
						  (size_t)(e - b), err);
			}
			continue;
		}
		st = afz_ensure_buf(z, &c->blockbuf, bs, err);
		if (st)
			break;
		uint64_t seg = c->out;
		unsigned char *dst = c->blockbuf + (seg - bstart);
		st = afz_cursor_produce(z, c, dst, bend - seg, err);
		if (st)
			break;
		if (bend > off) {
			uint64_t a = seg > off ? seg : off;
			uint64_t e = bend < end ? bend : end;
			memcpy(buf + (a - off), c->blockbuf + (a - bstart),
			       (size_t)(e - a));
		}
		if (whole && (bend > off || bstart >= keep_from))
			put_block(z, c, bstart, (size_t)(bend - bstart));
	}
	/* a piece of a loaded index that the read touched is checked whole
	 * before the read returns: inflate on to its end */
	while (st == AF_OK && c->vpiece != AFZ_NO_PIECE && c->vstart < end &&
	       c->out < z->size) {
		uint64_t bend = z->size - c->out < bs ? z->size : c->out + bs;
		bool whole = c->out % bs == 0;
		if (bend > c->vend)
			bend = c->vend; /* no further than the piece needs */
		uint64_t from = c->out;
		st = afz_ensure_buf(z, &c->blockbuf, bs, err);
		if (!st)
			st = afz_cursor_produce(z, c, c->blockbuf, bend - from, err);
		if (!st && whole)
			put_block(z, c, from, (size_t)(bend - from));
	}
	return st;
}

void afz_cursor_free(af_inflate *z, struct afz_cursor *c)
{
	afz_input_drop(z, c);
	if (c->eng)
		c->eng->release(z, c);
	c->eng = NULL;
	if (c->inbuf) {
		free(c->inbuf);
		afz_mem_sub(z, z->o.inbuf);
	}
	if (c->blockbuf) {
		free(c->blockbuf);
		afz_mem_sub(z, z->o.block);
	}
	if (c->scratch) {
		free(c->scratch);
		afz_mem_sub(z, AFZ_SCRATCH);
	}
	c->inbuf = c->blockbuf = c->scratch = NULL;
}
