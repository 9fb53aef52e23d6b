/* SPDX-License-Identifier: MIT */
/*
 * A deflate stream's access points as bytes (the index file format of
 * af_inflate.h), read back as untrusted input, and the check of each piece
 * inflated later against the CRC-32 the saved index holds for it.
 *
 * A span (the output between two points) is cut into pieces at the
 * multiples of o.piece inside it, so a random read inflates from its
 * point to the end of the piece it needs, not of the span. Piece CRCs
 * come from the CRC-32 of the output before each point and before each
 * multiple of o.piece (the grid), which the pass from 0 knows as it goes:
 * the CRC of [a, b) is crc[0, b) ^ crc32_combine(crc[0, a), 0, b - a)
 * (CRC-32 is linear).
 */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "../bytes_i.h"
#include "inflate_read_i.h"
#include "inflate_cursor_i.h"
#include "inflate_engine_i.h"
#include "inflate_index_i.h"
#include "inflate_saved_i.h"
#include "inflate_cache_i.h"

#define IDX_MAGIC "AFINFLX\n"
#define IDX_VERSION 2u
#define IDX_HEAD (8u + 4u + 4u + 11u * 8u + 8u + 8u + 4u + 4u)
#define IDX_POINT (8u + 8u + 4u + 4u + 4u)
#define IDX_PIECE 4u
#define IDX_TAIL 4u

uint64_t afz_span_start(const af_inflate *z, size_t k)
{
	return k ? z->points[k - 1].out : 0;
}

static uint64_t span_end(const af_inflate *z, size_t k)
{
	return k < z->npoints ? z->points[k].out : z->size;
}

/* The span holding output byte @p at: points are immutable once loaded. */
static size_t span_of(const af_inflate *z, uint64_t at)
{
	const struct afz_point *p = afz_nearest_point(z, at);
	return p ? (size_t)(p - z->points) + 1 : 0;
}

/* Pieces of the span [a, b) (a < b): one, plus one per multiple of
 * @p piece inside it. */
static uint64_t pieces_in(uint64_t a, uint64_t b, uint64_t piece)
{
	return (b - 1) / piece - a / piece + 1;
}

/* The piece of a loaded index holding output byte @p at (< size): its
 * number, where it begins (*start) and ends (*end). */
static size_t piece_of(const af_inflate *z, uint64_t at, uint64_t *start,
		       uint64_t *end)
{
	const uint64_t g = z->o.piece;
	size_t k = span_of(z, at);
	uint64_t a = afz_span_start(z, k), b = span_end(z, k);
	uint64_t line = at - at % g;
	*start = line < a ? a : line;
	*end = b - line <= g ? b : line + g;
	return z->piece_first[k] + (size_t)(at / g - a / g);
}

/* Append the CRC-32s @p crcs of output [0, m * o.piece) for the @p n
 * lines m = @p first, first + 1, ... from the first one the grid lacks:
 * lines are recorded in order by the first pass to reach them; one
 * behind it has nothing to add. Takes the lock once. A grid that cannot
 * grow stops: the index is then not saved, which costs time only. */
static void grid_lines(af_inflate *z, uint64_t first, const uint32_t *crcs,
		       size_t n)
{
	pthread_mutex_lock(&z->lock);
	uint64_t want = (uint64_t)z->ngrid + 1;
	if (want >= first && want < first + n) {
		size_t skip = (size_t)(want - first), add = n - skip;
		if (z->ngrid + add > z->gridcap) {
			size_t cap = z->gridcap ? z->gridcap : 64;
			while (cap < z->ngrid + add && cap <= SIZE_MAX / 2)
				cap *= 2;
			uint32_t *ng = cap <= SIZE_MAX / sizeof(*ng)
					       ? realloc(z->grid,
							 cap * sizeof(*ng))
					       : NULL;
			if (ng) {
				afz_mem_add(z, (cap - z->gridcap) * sizeof(*ng));
				z->grid = ng;
				z->gridcap = cap;
			}
		}
		if (z->ngrid + add <= z->gridcap) {
			memcpy(z->grid + z->ngrid, crcs + skip,
			       add * sizeof(*crcs));
			z->ngrid += add;
		}
	}
	pthread_mutex_unlock(&z->lock);
}

uint32_t afz_crc_advance(af_inflate *z, uint32_t crc, uint64_t from,
			 const unsigned char *dst, size_t n)
{
	if (z->loaded)
		return afz_crc32(crc, dst, n);
	const uint64_t g = z->o.piece;
	uint64_t at = from, end = from + n, first = from / g + 1;
	/* the lines crossed, pushed to the grid a batch at a time: the
	 * readers share the lock */
	uint32_t batch[64];
	size_t k = 0;
	for (uint64_t m = first; m * g <= end; m++) {
		crc = afz_crc32(crc, dst + (at - from), (size_t)(m * g - at));
		at = m * g;
		batch[k++] = crc;
		if (k == sizeof(batch) / sizeof(batch[0])) {
			grid_lines(z, m + 1 - k, batch, k);
			k = 0;
		}
	}
	if (k)
		grid_lines(z, (at / g) + 1 - k, batch, k);
	return afz_crc32(crc, dst + (at - from), (size_t)(end - at));
}

af_status afz_verify(af_inflate *z, struct afz_cursor *c,
		     const unsigned char *dst, uint64_t n, af_error *err)
{
	if (!z->loaded)
		return AF_OK;
	uint64_t from = c->out - n, at = from;
	while (at < c->out) {
		if (c->vpiece == AFZ_NO_PIECE) {
			uint64_t ps, pe;
			size_t j = piece_of(z, at, &ps, &pe);
			if (ps != at ||
			    __atomic_load_n(&z->piece_ok[j], __ATOMIC_ACQUIRE)) {
				/* checked already (or entered mid-piece,
				 * which a cursor that starts at points
				 * never does) */
				at = pe < c->out ? pe : c->out;
				continue;
			}
			c->vpiece = j;
			c->vstart = ps;
			c->vend = pe;
			c->vcrc = 0;
		}
		uint64_t stop = c->vend < c->out ? c->vend : c->out;
		c->vcrc = afz_crc32(c->vcrc, dst + (at - from),
				    (size_t)(stop - at));
		at = stop;
		if (at < c->vend)
			break;
		size_t j = c->vpiece;
		c->vpiece = AFZ_NO_PIECE;
		if (c->vcrc != z->piece_crc[j]) {
			/* blocks of it went to the cache before the check */
			afz_cache_drop(z, c->vstart, c->vend);
			if (c->vend <= c->vfrom) {
				/* passed through on the way to the read's
				 * bytes, whose own pieces are checked:
				 * never cached, never served, and a read
				 * that wants it fails */
				if (c->bad_from == c->bad_to)
					c->bad_from = c->vstart;
				c->bad_to = c->vend;
				continue;
			}
			size_t k = span_of(z, c->vstart);
			return af_error_set(err, AF_E_CORRUPT, AF_NO_OFFSET,
					    "output bytes %llu to %llu (piece "
					    "%zu of span %zu) inflate to "
					    "CRC-32 %08x, the saved index "
					    "says %08x",
					    ull(c->vstart), ull(c->vend),
					    j - z->piece_first[k], k,
					    (unsigned)c->vcrc,
					    (unsigned)z->piece_crc[j]);
		}
		__atomic_store_n(&z->piece_ok[j], 1, __ATOMIC_RELEASE);
	}
	return AF_OK;
}

uint64_t af_inflate_inflated(const af_inflate *z)
{
	return __atomic_load_n(&z->inflated, __ATOMIC_RELAXED);
}

bool af_inflate_index_loaded(af_inflate *z)
{
	pthread_mutex_lock(&z->lock);
	bool l = z->loaded;
	pthread_mutex_unlock(&z->lock);
	return l;
}

/* Lock held. A point recorded off a pass from 0 has no CRC and never
 * gets one: such an index is never saved (marked so, to ask once). */
static bool ready(af_inflate *z)
{
	if (!z->crc_ok || z->loaded || z->saved || z->npoints == 0)
		return false;
	if (z->ngrid < (z->size - 1) / z->o.piece)
		return false; /* a grid line was missed: ask again later */
	for (size_t i = 0; i < z->npoints; i++)
		if (!z->points[i].has_crc) {
			z->saved = true;
			return false;
		}
	return true;
}

bool af_inflate_index_ready(af_inflate *z)
{
	pthread_mutex_lock(&z->lock);
	bool r = ready(z);
	pthread_mutex_unlock(&z->lock);
	return r;
}

size_t af_inflate_index_max_bytes(const af_inflate *z)
{
	/* what the points may hold in memory, whose records are larger
	 * than the file's with their piece, plus the header and the grid's
	 * pieces; no budget (tests): any size */
	if (!z->o.index_div)
		return SIZE_MAX / 2;
	uint64_t n = z->size / z->o.index_div +
		     (z->size / z->o.piece + 2) * IDX_PIECE + IDX_HEAD +
		     IDX_TAIL + IDX_POINT + AF_INFLATE_WINDOW;
	return n > SIZE_MAX / 2 ? SIZE_MAX / 2 : (size_t)n;
}

static void put_key(unsigned char *p, const af_index_key *k)
{
	uint64_t v[11] = { k->dev, k->ino, k->size, (uint64_t)k->mtime_sec,
			   (uint64_t)k->mtime_nsec, (uint64_t)k->ctime_sec,
			   (uint64_t)k->ctime_nsec, k->local_offset,
			   k->comp_size, k->uncomp_size, k->crc };
	for (unsigned i = 0; i < 11; i++)
		af_put_le64(p + 8 * i, v[i]);
}

uint32_t afz_crc_combine(struct afz_crc_shift *s, uint32_t crc1, uint32_t crc2,
			 uint64_t len2)
{
	if (!s->set || s->len != len2) {
		s->op = crc32_combine_gen64((z_off64_t)len2);
		s->len = len2;
		s->set = true;
	}
	return (uint32_t)crc32_combine_op(crc1, crc2, s->op);
}

uint32_t afz_span_crc(struct afz_crc_shift *s, uint32_t crc_a, uint32_t crc_b,
		      uint64_t len)
{
	struct afz_crc_shift once = { 0 };
	return afz_crc_combine(s ? s : &once, crc_a, crc_b, len);
}

/* CRC-32 of output [0, @p x) where x is an end of span @p k of the saved
 * points @p sv, a multiple of o.piece or the end (the pass from 0
 * recorded it). Lock held (the grid). */
static uint32_t crc_at(const af_inflate *z, const struct afz_saved *sv,
		       size_t k, uint64_t x)
{
	if (x == 0)
		return 0;
	if (x == z->size)
		return z->crc;
	if (k && sv->pts[k - 1].out == x)
		return sv->pts[k - 1].crc_before;
	if (k < sv->n && sv->pts[k].out == x)
		return sv->pts[k].crc_before;
	return z->grid[x / z->o.piece - 1];
}

/* Span @p k of the saved points: [saved_start, saved_end). */
static uint64_t saved_start(const struct afz_saved *sv, size_t k)
{
	return k ? sv->pts[k - 1].out : 0;
}

static uint64_t saved_end(const af_inflate *z, const struct afz_saved *sv,
			  size_t k)
{
	return k < sv->n ? sv->pts[k].out : z->size;
}

/* The piece CRCs of span @p k, in order, at @p p. Lock held. */
static unsigned char *put_pieces(const af_inflate *z,
				 const struct afz_saved *sv, size_t k,
				 unsigned char *p, struct afz_crc_shift *shift)
{
	const uint64_t g = z->o.piece;
	uint64_t a = saved_start(sv, k), b = saved_end(z, sv, k);
	for (uint64_t s = a; s < b;) {
		uint64_t e = b - (s - s % g) <= g ? b : s - s % g + g;
		af_put_le32(p, afz_span_crc(shift, crc_at(z, sv, k, s),
					    crc_at(z, sv, k, e), e - s));
		p += IDX_PIECE;
		s = e;
	}
	return p;
}

af_status af_inflate_index_export(af_inflate *z, const af_index_key *key,
				  unsigned char **buf, size_t *len,
				  af_error *err)
{
	*buf = NULL;
	*len = 0;
	if (!af_inflate_index_ready(z))
		return af_error_set(err, AF_E_INVAL, AF_NO_OFFSET,
				    "no checked pass recorded every access point yet");
	/* unlocked: inflates again (inflate_refine.c) */
	struct afz_saved sv;
	af_status st = afz_saved_points(z, &sv, err);
	if (st)
		return st;

	unsigned char *b = NULL, *p = NULL;
	size_t n = IDX_HEAD + IDX_TAIL;
	pthread_mutex_lock(&z->lock);
	if (!ready(z)) {
		/* saved meanwhile by another export */
		st = af_error_set(err, AF_E_INVAL, AF_NO_OFFSET,
				  "the index was exported already");
		goto out;
	}
	for (size_t k = 0; k <= sv.n; k++) {
		n += IDX_PIECE * (size_t)pieces_in(saved_start(&sv, k),
						   saved_end(z, &sv, k),
						   z->o.piece);
		if (k < sv.n)
			n += IDX_POINT + (sv.pts[k].zlen ? sv.pts[k].zlen
							 : sv.pts[k].wlen);
	}
	b = malloc(n);
	if (!b) {
		st = afz_nomem(err, "index file");
		goto out;
	}
	memcpy(b, IDX_MAGIC, 8);
	af_put_le32(b + 8, IDX_VERSION);
	af_put_le32(b + 12, IDX_HEAD);
	put_key(b + 16, key);
	af_put_le64(b + 104, z->o.span);
	af_put_le64(b + 112, sv.n);
	af_put_le32(b + 120, (uint32_t)z->o.piece);
	af_put_le32(b + 124, 0);
	p = b + IDX_HEAD;
	for (size_t i = 0; i < sv.n; i++) {
		const struct afz_point *pt = &sv.pts[i];
		unsigned stored = pt->zlen ? pt->zlen : pt->wlen;
		af_put_le64(p, pt->in);
		af_put_le64(p + 8, pt->out);
		af_put_le32(p + 16, pt->bits);
		af_put_le32(p + 20, pt->wlen);
		af_put_le32(p + 24, pt->zlen);
		memcpy(p + IDX_POINT, pt->window, stored);
		p += IDX_POINT + stored;
	}
	struct afz_crc_shift shift = { 0 };
	for (size_t k = 0; k <= sv.n; k++)
		p = put_pieces(z, &sv, k, p, &shift);
	z->saved = true;
	/* reads in this mount start from the saved points too */
	afz_use_saved(z, &sv);
out:
	pthread_mutex_unlock(&z->lock);
	afz_saved_free(&sv);
	if (st)
		return st;
	af_put_le32(p, afz_crc32(0, b, (size_t)(p - b)));
	*buf = b;
	*len = n;
	return AF_OK;
}

static af_status refuse(af_error *err, uint64_t at, const char *why)
{
	return af_error_set(err, AF_E_CORRUPT, at, "index file refused: %s",
			    why);
}

bool afz_window_inflates(af_inflate *z, const unsigned char *src,
			    unsigned zlen, unsigned wlen, unsigned char *out)
{
	z_stream s;
	memset(&s, 0, sizeof(s));
	s.zalloc = afz_zalloc;
	s.zfree = afz_zfree;
	s.opaque = z;
	if (inflateInit2(&s, -15) != Z_OK)
		return false;
	s.next_in = (unsigned char *)src;
	s.avail_in = zlen;
	s.next_out = out;
	s.avail_out = wlen + 1;
	int ret = inflate(&s, Z_FINISH);
	bool ok = ret == Z_STREAM_END && s.avail_in == 0 && s.avail_out == 1;
	inflateEnd(&s);
	return ok;
}

/*
 * The CRC-32 of the whole output made from the piece CRCs @p crcs of the
 * spans that points @p pts (n, in order, checked) make in [0, @p size):
 * the pieces tile the output, so this is the member's CRC-32 when every
 * piece CRC is true. A forged piece CRC (one that matches bytes a lying
 * point inflates to) then fails the member's own CRC unless a second CRC
 * is forged to make up for it.
 */
static uint32_t pieces_crc(const uint32_t *crcs, const struct afz_point *pts,
			   size_t n, uint64_t size, uint64_t g)
{
	uint32_t all = 0;
	size_t j = 0;
	struct afz_crc_shift shift = { 0 };
	for (size_t k = 0; k <= n; k++) {
		uint64_t a = k ? pts[k - 1].out : 0;
		uint64_t b = k < n ? pts[k].out : size;
		for (uint64_t x = a; x < b;) {
			uint64_t e = (x / g + 1) * g;
			if (e > b)
				e = b;
			all = afz_crc_combine(&shift, all, crcs[j++], e - x);
			x = e;
		}
	}
	return all;
}

/* Check the records of @p b (len bytes, checksum already good) against z
 * and that exactly the pieces of the spans they make follow: their count
 * into *npieces. A deflated window is inflated only when a cursor first
 * starts at its point (afz_cursor_start refuses one that does not inflate
 * back, and the pieces' CRC-32s check what one that does inflates to):
 * inflating every window here made the first read of a member wait for
 * all of them (8 ms of 15 for a float32 member of 128 MiB). */
static af_status check_points(af_inflate *z, const unsigned char *b,
			      size_t len, uint64_t npoints, uint64_t comp_size,
			      uint64_t *npieces, af_error *err)
{
	af_status st = AF_OK;
	size_t at = IDX_HEAD;
	uint64_t prev_out = 0, prev_bit = 0, pieces = 0;
	for (uint64_t i = 0; i < npoints && !st; i++) {
		if (len - IDX_TAIL - at < IDX_POINT) {
			st = refuse(err, at, "it ends inside a point");
			break;
		}
		const unsigned char *p = b + at;
		uint64_t in = af_le64(p), out = af_le64(p + 8);
		uint32_t bits = af_le32(p + 16), wlen = af_le32(p + 20),
			 zlen = af_le32(p + 24);
		uint64_t want_w = out < AF_INFLATE_WINDOW ? out
							  : AF_INFLATE_WINDOW;
		if (out <= prev_out || out >= z->size)
			st = refuse(err, at, "point outputs out of order or past the end");
		else if (bits > 7 || in == 0 || in > comp_size ||
			 in > UINT64_MAX / 8 ||
			 in * 8 - bits <= prev_bit)
			st = refuse(err, at, "point inputs out of order or past the stream");
		else if (wlen != want_w || (zlen && zlen >= wlen))
			st = refuse(err, at, "bad window size");
		else if (len - IDX_TAIL - at - IDX_POINT <
			 (zlen ? zlen : wlen))
			st = refuse(err, at, "it ends inside a window");
		if (!st)
			pieces += pieces_in(prev_out, out, z->o.piece);
		prev_out = out;
		prev_bit = in * 8 - bits;
		at += IDX_POINT + (zlen ? zlen : wlen);
	}
	if (!st) {
		/* every piece is in [0, size): fewer than 2^64 of them */
		pieces += pieces_in(prev_out, z->size, z->o.piece);
		size_t rest = len - IDX_TAIL - at;
		if (rest % IDX_PIECE || rest / IDX_PIECE != pieces)
			st = refuse(err, at, "not one CRC-32 per piece after the points");
	}
	*npieces = pieces;
	return st;
}

/* af_inflate_index_import; with @p adopt (== b) the windows stay in the
 * file's buffer, which z then owns: no copy of each (page faults of a
 * fresh 2.5 MB were most of a first read's index load). */
static af_status import(af_inflate *z, const af_index_key *key,
			const unsigned char *b, size_t len,
			unsigned char *adopt, af_error *err)
{
	if (len < IDX_HEAD + IDX_TAIL)
		return refuse(err, AF_NO_OFFSET, "shorter than its header");
	if (len > af_inflate_index_max_bytes(z))
		return refuse(err, AF_NO_OFFSET, "larger than the bound for this member");
	if (memcmp(b, IDX_MAGIC, 8) != 0)
		return refuse(err, 0, "bad magic");
	if (af_le32(b + 8) != IDX_VERSION || af_le32(b + 12) != IDX_HEAD)
		return refuse(err, 8, "unknown version");
	if (afz_crc32(0, b, len - IDX_TAIL) != af_le32(b + len - IDX_TAIL))
		return refuse(err, len - IDX_TAIL, "bad checksum");
	unsigned char k[88];
	put_key(k, key);
	if (memcmp(k, b + 16, sizeof(k)) != 0)
		return refuse(err, 16, "it is for another file or member (stale)");
	if (key->uncomp_size != z->size || key->crc != z->crc)
		return af_error_set(err, AF_E_INVAL, AF_NO_OFFSET,
				    "index key does not match the stream");
	uint64_t npoints = af_le64(b + 112);
	if (npoints == 0 || npoints > (len - IDX_HEAD) / IDX_POINT)
		return refuse(err, 112, "bad point count");
	if (af_le32(b + 120) != z->o.piece || af_le32(b + 124) != 0)
		return refuse(err, 120, "pieces of another size");
	uint64_t npieces = 0;
	af_status st = check_points(z, b, len, npoints, key->comp_size,
				    &npieces, err);
	if (st)
		return st;

	/* npieces CRCs fit in the file: the arrays are bounded by it */
	struct afz_point *pts = calloc((size_t)npoints, sizeof(*pts));
	size_t *first = calloc((size_t)npoints + 2, sizeof(*first));
	uint32_t *crcs = calloc((size_t)npieces, sizeof(*crcs));
	unsigned char *ok = calloc((size_t)npieces, 1);
	size_t held = 0, i = 0;
	if (!pts || !first || !crcs || !ok)
		goto nomem;
	const unsigned char *pc = b + len - IDX_TAIL - npieces * IDX_PIECE;
	for (size_t j = 0; j < npieces; j++)
		crcs[j] = af_le32(pc + IDX_PIECE * j);
	const unsigned char *p = b + IDX_HEAD;
	for (; i < npoints; i++) {
		struct afz_point *pt = &pts[i];
		pt->in = af_le64(p);
		pt->out = af_le64(p + 8);
		pt->bits = (uint8_t)af_le32(p + 16);
		pt->wlen = af_le32(p + 20);
		pt->zlen = af_le32(p + 24);
		/* units of about o.span however close the points are */
		pt->head = pt->out / z->o.span >
			   (i ? pts[i - 1].out : 0) / z->o.span;
		first[i + 1] = first[i] +
			       (size_t)pieces_in(i ? pts[i - 1].out : 0, pt->out,
						 z->o.piece);
		unsigned stored = pt->zlen ? pt->zlen : pt->wlen;
		if (adopt) {
			pt->window = adopt + (p + IDX_POINT - b);
		} else {
			pt->window = malloc(stored ? stored : 1);
			if (!pt->window)
				goto nomem;
			memcpy(pt->window, p + IDX_POINT, stored);
			held += stored;
		}
		held += sizeof(*pt);
		p += IDX_POINT + stored;
	}
	if (pieces_crc(crcs, pts, (size_t)npoints, z->size, z->o.piece) !=
	    z->crc) {
		st = refuse(err, len - IDX_TAIL - npieces * IDX_PIECE,
			    "its piece CRC-32s do not make the member's");
		goto fail;
	}
	pthread_mutex_lock(&z->lock);
	if (z->npoints || z->loaded || z->tick) {
		pthread_mutex_unlock(&z->lock);
		st = af_error_set(err, AF_E_INVAL, AF_NO_OFFSET,
				  "an index is loaded only before the first read");
		goto fail;
	}
	if (adopt)
		held += len;
	z->points = pts;
	z->npoints = z->cap = (size_t)npoints;
	z->index_bytes = held;
	z->windows_file = adopt;
	first[npoints + 1] = (size_t)npieces;
	z->piece_first = first;
	z->piece_crc = crcs;
	z->piece_ok = ok;
	z->loaded = true;
	pthread_mutex_unlock(&z->lock);
	afz_mem_add(z, held + ((size_t)npoints + 2) * sizeof(*first) +
			       (size_t)npieces * (sizeof(*crcs) + 1));
	return AF_OK;
nomem:
	st = afz_nomem(err, "index");
fail:
	for (size_t j = 0; pts && !adopt && j < i; j++)
		free(pts[j].window);
	free(pts);
	free(first);
	free(crcs);
	free(ok);
	return st;
}

af_status af_inflate_index_import(af_inflate *z, const af_index_key *key,
				  const unsigned char *buf, size_t len,
				  af_error *err)
{
	return import(z, key, buf, len, NULL, err);
}

af_status afz_index_adopt(af_inflate *z, const af_index_key *key,
			  unsigned char *buf, size_t len, af_error *err)
{
	return import(z, key, buf, len, buf, err);
}
