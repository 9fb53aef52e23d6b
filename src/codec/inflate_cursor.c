/* SPDX-License-Identifier: MIT */
/*
 * One inflate cursor of an af_inflate: a raw-deflate z_stream at some
 * output offset, restarted from an access point or the stream start, that
 * inflates forward, records access points past the furthest one (keeping
 * each window as it is or deflated, within the index budget) and checks
 * the stream end (and the CRC-32 after a pass from 0). Every function here
 * runs in the thread that owns the cursor, without z->lock, except where it
 * takes the lock to append a point.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "inflate_i.h"

/* One inflate call never gets more output room than this (uInt). */
#define AFZ_MAX_CALL (1u << 30)

static unsigned long long ull(uint64_t v)
{
	return (unsigned long long)v;
}

/* zlib allocations, counted in z->mem; the size lives in a header. */
#define AFZ_ZHDR 16u

static voidpf afz_zalloc(voidpf opaque, uInt items, uInt size)
{
	size_t n;
	if (__builtin_mul_overflow((size_t)items, (size_t)size, &n) ||
	    n > SIZE_MAX - AFZ_ZHDR)
		return Z_NULL;
	unsigned char *p = malloc(n + AFZ_ZHDR);
	if (!p)
		return Z_NULL;
	memcpy(p, &n, sizeof(n));
	afz_mem_add(opaque, n + AFZ_ZHDR);
	return p + AFZ_ZHDR;
}

static void afz_zfree(voidpf opaque, voidpf ptr)
{
	unsigned char *p = (unsigned char *)ptr - AFZ_ZHDR;
	size_t n;
	memcpy(&n, p, sizeof(n));
	afz_mem_sub(opaque, n + AFZ_ZHDR);
	free(p);
}

static af_status nomem(af_error *err, const char *what)
{
	return af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
			    "out of memory allocating the inflate %s", what);
}

static af_status ensure_buf(af_inflate *z, unsigned char **buf, size_t len,
			    af_error *err)
{
	if (*buf)
		return AF_OK;
	*buf = malloc(len);
	if (!*buf)
		return nomem(err, "buffers");
	afz_mem_add(z, len);
	return AF_OK;
}

/* Compressed offset of the next byte inflate will take. */
static uint64_t in_pos(const struct afz_cursor *c)
{
	return c->in - c->zs.avail_in;
}

static af_status truncated(af_inflate *z, struct afz_cursor *c, af_error *err)
{
	return af_error_set(err, AF_E_TRUNCATED, c->in,
			    "deflate data ends at compressed byte %llu, after "
			    "%llu of %llu output bytes", ull(c->in), ull(c->out),
			    ull(z->size));
}

/*
 * Read more compressed input. At the source's end set c->eof instead of
 * failing: inflate may still hold enough bits to finish.
 */
static af_status refill(af_inflate *z, struct afz_cursor *c, af_error *err)
{
	ssize_t n = z->src->pread(z->src, c->inbuf, z->o.inbuf, c->in);
	if (n < 0) {
		af_error_set(err, AF_E_IO, c->in,
			     "reading compressed byte %llu failed: %s",
			     ull(c->in), strerror((int)-n));
		if (err)
			err->sys_errno = (int)-n;
		return AF_E_IO;
	}
	if ((size_t)n > z->o.inbuf)
		return af_error_set(err, AF_E_IO, c->in,
				    "source returned more bytes than asked at "
				    "compressed byte %llu", ull(c->in));
	c->eof = n == 0;
	c->zs.next_in = c->inbuf;
	c->zs.avail_in = (uInt)n;
	c->in += (uint64_t)n;
	return AF_OK;
}

/*
 * Inflate the deflated window of @p p into c->scratch with the cursor's own
 * stream (just reset; the caller resets it again). Memory this module wrote
 * itself, so a failure here is a bug or a bit flip in RAM, not the file.
 */
static af_status unzip_window(struct afz_cursor *c, const struct afz_point *p,
			      af_error *err)
{
	c->zs.next_in = p->window;
	c->zs.avail_in = p->zlen;
	c->zs.next_out = c->scratch;
	c->zs.avail_out = p->wlen;
	int ret = inflate(&c->zs, Z_FINISH);
	bool ok = ret == Z_STREAM_END && c->zs.avail_out == 0;
	inflateReset(&c->zs);
	if (ret == Z_MEM_ERROR)
		return nomem(err, "state");
	if (!ok)
		return af_error_set(err, AF_E_CORRUPT, p->in,
				    "the saved window of the access point at "
				    "output byte %llu does not inflate back",
				    ull(p->out));
	return AF_OK;
}

af_status afz_cursor_start(af_inflate *z, struct afz_cursor *c,
			   const struct afz_point *p, uint64_t next_mark,
			   bool from_start, af_error *err)
{
	af_status st = ensure_buf(z, &c->inbuf, z->o.inbuf, err);
	if (st)
		return st;
	int ret;
	if (!c->inited) {
		memset(&c->zs, 0, sizeof(c->zs));
		c->zs.zalloc = afz_zalloc;
		c->zs.zfree = afz_zfree;
		c->zs.opaque = z;
		ret = inflateInit2(&c->zs, -15);
		if (ret != Z_OK)
			return nomem(err, "state");
		c->inited = true;
	} else {
		inflateReset(&c->zs);
	}
	const unsigned char *dict = p ? p->window : NULL;
	if (p && p->zlen) {
		st = ensure_buf(z, &c->scratch, AFZ_SCRATCH, err);
		if (!st)
			st = unzip_window(c, p, err);
		if (st)
			return st;
		dict = c->scratch;
	}
	c->zs.next_in = c->inbuf;
	c->zs.avail_in = 0;
	c->next_mark = next_mark;
	c->ended = false;
	c->eof = false;
	c->crc_checked = false;
	c->fatal = false;
	c->crc = (uint32_t)crc32(0L, Z_NULL, 0);
	if (!p) {
		c->in = 0;
		c->out = 0;
		c->from_start = from_start;
		return AF_OK;
	}
	c->from_start = false;
	c->out = p->out;
	c->in = p->in - (p->bits ? 1 : 0);
	if (p->bits) {
		/* the point starts inside this byte: hand its top bits over */
		st = refill(z, c, err);
		if (st)
			return st;
		if (c->eof)
			return truncated(z, c, err);
		int byte = c->zs.next_in[0];
		c->zs.next_in++;
		c->zs.avail_in--;
		ret = inflatePrime(&c->zs, (int)p->bits, byte >> (8 - p->bits));
		if (ret != Z_OK)
			return af_error_set(err, AF_E_CORRUPT, p->in,
					    "cannot resume inflating at "
					    "compressed byte %llu", ull(p->in));
	}
	ret = inflateSetDictionary(&c->zs, dict, p->wlen);
	if (ret != Z_OK)
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

/*
 * Raw-deflate the wlen window bytes in c->scratch at level 1 into at most
 * @p room bytes (< wlen) at c->scratch + AF_INFLATE_WINDOW; their count, or
 * 0 if they do not fit (or no memory for the deflate state).
 */
static unsigned zip_window(af_inflate *z, struct afz_cursor *c, unsigned wlen,
			   size_t room)
{
	z_stream ds;
	memset(&ds, 0, sizeof(ds));
	ds.zalloc = afz_zalloc;
	ds.zfree = afz_zfree;
	ds.opaque = z;
	if (deflateInit2(&ds, 1, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return 0;
	ds.next_in = c->scratch;
	ds.avail_in = wlen;
	ds.next_out = c->scratch + AF_INFLATE_WINDOW;
	ds.avail_out = (uInt)room;
	int ret = deflate(&ds, Z_FINISH);
	unsigned n = (unsigned)(room - ds.avail_out);
	deflateEnd(&ds);
	return ret == Z_STREAM_END ? n : 0;
}

/*
 * Copy the window of the point at c->out into a new exact-size buffer: as it
 * is if that fits @p budget, else deflated if that fits and is smaller.
 * NULL if neither fits or memory runs out.
 */
static unsigned char *save_window(af_inflate *z, struct afz_cursor *c,
				  size_t budget, unsigned *wlen, unsigned *zlen)
{
	if (ensure_buf(z, &c->scratch, AFZ_SCRATCH, NULL))
		return NULL;
	uInt n = AF_INFLATE_WINDOW;
	if (inflateGetDictionary(&c->zs, c->scratch, &n) != Z_OK)
		return NULL;
	*wlen = n;
	*zlen = 0;
	const unsigned char *from = c->scratch;
	size_t len = n;
	if (n > budget) {
		/* deflate keeps a block header even for one byte: a window
		 * that short never gets here with a positive budget */
		*zlen = budget ? zip_window(z, c, n, budget < n - 1 ? budget
								    : n - 1)
			       : 0;
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

/* Called at a block boundary at or past c->next_mark. */
static void record_point(af_inflate *z, struct afz_cursor *c)
{
	pthread_mutex_lock(&z->lock);
	uint64_t due = point_due(z);
	size_t budget = budget_left(z, c->out);
	pthread_mutex_unlock(&z->lock);
	if (c->out < due) {
		/* another cursor recorded past us meanwhile: wait for the
		 * span after its last point */
		c->next_mark = due;
		return;
	}
	unsigned wlen = 0, zlen = 0;
	unsigned char *win = save_window(z, c, budget, &wlen, &zlen);
	size_t stored = zlen ? zlen : wlen;

	pthread_mutex_lock(&z->lock);
	due = point_due(z);
	bool recorded = false;
	if (win && c->out >= due && stored <= budget_left(z, c->out)) {
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
			pt->in = in_pos(c);
			pt->out = c->out;
			pt->bits = (unsigned)c->zs.data_type & 7u;
			pt->wlen = wlen;
			pt->zlen = zlen;
			pt->window = win;
			afz_mem_add(z, stored);
			z->index_bytes += stored + sizeof(*pt);
			win = NULL;
			recorded = true;
		}
	}
	if (c->out >= due) {
		/* recorded or out of memory: skip a span rather than retry at
		 * every block; over the budget: retry as soon as a window
		 * that does not deflate would fit, if that is sooner */
		uint64_t fits = z->o.index_div ? raw_fits_at(z) : 0;
		if (af_add(c->out, z->o.span, &due))
			due = UINT64_MAX;
		if (!recorded && fits > c->out && fits < due)
			due = fits;
	}
	c->next_mark = due;
	pthread_mutex_unlock(&z->lock);
	free(win);
}

static af_status corrupt(af_inflate *z, struct afz_cursor *c, af_error *err,
			 const char *why)
{
	return af_error_set(err, AF_E_CORRUPT, in_pos(c),
			    "invalid deflate data near compressed byte %llu "
			    "(output byte %llu of %llu): %s",
			    ull(in_pos(c)), ull(c->out), ull(z->size),
			    why ? why : "inflate failed");
}

/* Having produced all z->size bytes, insist the stream ends right here. */
static af_status check_end(af_inflate *z, struct afz_cursor *c, int ret,
			   af_error *err)
{
	unsigned char extra;
	while (ret != Z_STREAM_END) {
		if (c->zs.avail_in == 0 && !c->eof) {
			af_status st = refill(z, c, err);
			if (st)
				return st;
		}
		c->zs.next_out = &extra;
		c->zs.avail_out = 1;
		ret = inflate(&c->zs, Z_NO_FLUSH);
		if (c->zs.avail_out == 0) {
			c->fatal = true;
			return af_error_set(err, AF_E_CORRUPT, in_pos(c),
					    "deflate stream inflates to more "
					    "than the declared %llu bytes "
					    "(compressed byte %llu)",
					    ull(z->size), ull(in_pos(c)));
		}
		if (ret == Z_MEM_ERROR)
			return nomem(err, "state");
		if (ret == Z_DATA_ERROR || ret == Z_STREAM_ERROR ||
		    ret == Z_NEED_DICT)
			return corrupt(z, c, err, c->zs.msg);
		if (ret == Z_BUF_ERROR && c->zs.avail_in == 0 && c->eof)
			return truncated(z, c, err);
		if (ret == Z_BUF_ERROR && c->zs.avail_in > 0)
			return corrupt(z, c, err, "inflate made no progress");
	}
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

/* Inflate exactly n more bytes (c->out + n <= z->size) into dst. */
static af_status produce(af_inflate *z, struct afz_cursor *c,
			 unsigned char *dst, uint64_t n, af_error *err)
{
	int ret = Z_OK;
	while (n > 0) {
		if (c->zs.avail_in == 0 && !c->eof) {
			af_status st = refill(z, c, err);
			if (st)
				return st;
		}
		uint64_t room = n < AFZ_MAX_CALL ? n : AFZ_MAX_CALL;
		int flush = Z_NO_FLUSH;
		if (c->out >= c->next_mark)
			flush = Z_BLOCK;
		else if (room > c->next_mark - c->out)
			room = c->next_mark - c->out;
		c->zs.next_out = dst;
		c->zs.avail_out = (uInt)room;
		ret = inflate(&c->zs, flush);
		uint64_t got = room - c->zs.avail_out;
		if (got && c->from_start)
			c->crc = (uint32_t)crc32_z(c->crc, dst, (z_size_t)got);
		dst += got;
		n -= got;
		c->out += got;
		if (ret == Z_STREAM_END && n > 0) {
			c->fatal = true;
			return af_error_set(err, AF_E_CORRUPT, in_pos(c),
					    "deflate stream ends after %llu "
					    "output bytes, %llu declared "
					    "(compressed byte %llu)",
					    ull(c->out), ull(z->size),
					    ull(in_pos(c)));
		}
		if (ret == Z_MEM_ERROR)
			return nomem(err, "state");
		if (ret != Z_OK && ret != Z_STREAM_END && ret != Z_BUF_ERROR)
			return corrupt(z, c, err, c->zs.msg);
		/* data_type bit 7: stopped at a block boundary; bit 6: the
		 * last block is done, so no point is needed any more */
		bool boundary = flush == Z_BLOCK && (c->zs.data_type & 128);
		if (boundary && !(c->zs.data_type & 64))
			record_point(z, c);
		else if (boundary)
			c->next_mark = UINT64_MAX;
		else if (ret == Z_BUF_ERROR && c->zs.avail_in == 0 && c->eof)
			return truncated(z, c, err);
		else if (ret == Z_BUF_ERROR && c->zs.avail_in > 0)
			return corrupt(z, c, err, "inflate made no progress");
	}
	if (c->out == z->size && !c->ended)
		return check_end(z, c, ret, err);
	return AF_OK;
}

static af_status publish_copy(af_inflate *z, struct afz_cursor *c,
			      const unsigned char *src, uint64_t at,
			      size_t len, af_error *err)
{
	af_status st = ensure_buf(z, &c->blockbuf, z->o.block, err);
	if (st)
		return st;
	memcpy(c->blockbuf, src, len);
	afz_cache_put(z, c, at / z->o.block, len);
	return AF_OK;
}

af_status afz_cursor_serve(af_inflate *z, struct afz_cursor *c,
			   unsigned char *buf, uint64_t off, uint64_t end,
			   af_error *err)
{
	const uint64_t bs = z->o.block;
	/* keep the last few skipped blocks: a reader just behind us wants
	 * them, but skipping far must not flush the whole cache */
	uint64_t keep_from = off - (off < bs * (z->o.cache_blocks / 2)
				    ? off : bs * (z->o.cache_blocks / 2));
	af_status st = AF_OK;

	while (c->out < end && st == AF_OK) {
		uint64_t bstart = c->out - c->out % bs;
		uint64_t bend = z->size - bstart < bs ? z->size : bstart + bs;
		bool whole = c->out == bstart;

		if (whole && c->out >= off && bend <= end) {
			/* whole blocks inside the request: straight into buf */
			uint64_t stop = end == z->size ? end : end - end % bs;
			uint64_t from = c->out;
			st = produce(z, c, buf + (from - off), stop - from, err);
			if (st)
				break;
			/* cache only the tail, which an overlapping next read
			 * may want: copying it all costs ~4 % of the speed */
			uint64_t cache_from = from;
			uint64_t keep = bs * ((z->o.cache_blocks + 3) / 4);
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
		st = ensure_buf(z, &c->blockbuf, bs, err);
		if (st)
			break;
		uint64_t seg = c->out;
		unsigned char *dst = c->blockbuf + (seg - bstart);
		st = produce(z, c, dst, bend - seg, err);
		if (st)
			break;
		if (bend > off) {
			uint64_t a = seg > off ? seg : off;
			uint64_t e = bend < end ? bend : end;
			memcpy(buf + (a - off), c->blockbuf + (a - bstart),
			       (size_t)(e - a));
		}
		if (whole && (bend > off || bstart >= keep_from))
			afz_cache_put(z, c, bstart / bs, (size_t)(bend - bstart));
	}
	return st;
}

void afz_cursor_free(af_inflate *z, struct afz_cursor *c)
{
	if (c->inited)
		inflateEnd(&c->zs);
	c->inited = false;
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
