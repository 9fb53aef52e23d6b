/* SPDX-License-Identifier: MIT */
/*
 * A deflate stream's access points as bytes (the index file format of
 * af_inflate.h), read back as untrusted input, and the check of each span
 * inflated later against the CRC-32 the saved index holds for it.
 *
 * Span CRCs come from the CRC-32 of the output before each point, which
 * the pass from 0 knows as it records the point: the CRC of [a, b) is
 * crc[0, b) ^ crc32_combine(crc[0, a), 0, b - a) (CRC-32 is linear).
 */
#include <stdlib.h>
#include <string.h>

#include "inflate_i.h"

#define IDX_MAGIC "AFINFLX\n"
#define IDX_VERSION 1u
#define IDX_HEAD (8u + 4u + 4u + 11u * 8u + 8u + 8u + 4u + 4u)
#define IDX_POINT (8u + 8u + 4u + 4u + 4u + 4u)
#define IDX_TAIL 4u

static unsigned long long ull(uint64_t v)
{
	return (unsigned long long)v;
}

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

af_status afz_verify(af_inflate *z, struct afz_cursor *c,
		     const unsigned char *dst, uint64_t n, af_error *err)
{
	if (!z->loaded)
		return AF_OK;
	uint64_t from = c->out - n, at = from;
	while (at < c->out) {
		if (c->vspan == AFZ_NO_SPAN) {
			size_t k = span_of(z, at);
			uint64_t end = span_end(z, k);
			if (afz_span_start(z, k) != at ||
			    __atomic_load_n(&z->span_ok[k], __ATOMIC_ACQUIRE)) {
				/* checked already (or entered mid-span, which
				 * a cursor that starts at points never does) */
				at = end < c->out ? end : c->out;
				continue;
			}
			c->vspan = k;
			c->vend = end;
			c->vcrc = 0;
		}
		uint64_t stop = c->vend < c->out ? c->vend : c->out;
		c->vcrc = afz_crc32(c->vcrc, dst + (at - from),
				    (size_t)(stop - at));
		at = stop;
		if (at < c->vend)
			break;
		size_t k = c->vspan;
		c->vspan = AFZ_NO_SPAN;
		if (c->vcrc != z->span_crc[k]) {
			/* blocks of it went to the cache before the check */
			afz_cache_drop(z, afz_span_start(z, k), c->vend);
			return af_error_set(err, AF_E_CORRUPT, AF_NO_OFFSET,
					    "span %zu (output bytes %llu to "
					    "%llu) inflates to CRC-32 %08x, "
					    "the saved index says %08x",
					    k, ull(afz_span_start(z, k)),
					    ull(c->vend), (unsigned)c->vcrc,
					    (unsigned)z->span_crc[k]);
		}
		__atomic_store_n(&z->span_ok[k], 1, __ATOMIC_RELEASE);
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
	 * than the file's, plus the header; no budget (tests): any size */
	if (!z->o.index_div)
		return SIZE_MAX / 2;
	uint64_t n = z->size / z->o.index_div + IDX_HEAD + IDX_TAIL +
		     IDX_POINT + AF_INFLATE_WINDOW;
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

uint32_t afz_span_crc(uint32_t crc_a, uint32_t crc_b, uint64_t len)
{
	return crc_b ^ (uint32_t)crc32_combine64(crc_a, 0, (z_off64_t)len);
}

af_status af_inflate_index_export(af_inflate *z, const af_index_key *key,
				  unsigned char **buf, size_t *len,
				  af_error *err)
{
	*buf = NULL;
	*len = 0;
	pthread_mutex_lock(&z->lock);
	if (!ready(z)) {
		pthread_mutex_unlock(&z->lock);
		return af_error_set(err, AF_E_INVAL, AF_NO_OFFSET,
				    "no checked pass recorded every access point yet");
	}
	size_t n = IDX_HEAD + IDX_TAIL;
	for (size_t i = 0; i < z->npoints; i++)
		n += IDX_POINT + (z->points[i].zlen ? z->points[i].zlen
						     : z->points[i].wlen);
	unsigned char *b = malloc(n);
	if (!b) {
		pthread_mutex_unlock(&z->lock);
		return afz_nomem(err, "index file");
	}
	memcpy(b, IDX_MAGIC, 8);
	af_put_le32(b + 8, IDX_VERSION);
	af_put_le32(b + 12, IDX_HEAD);
	put_key(b + 16, key);
	af_put_le64(b + 104, z->o.span);
	af_put_le64(b + 112, z->npoints);
	af_put_le32(b + 120, z->points[0].crc_before); /* span 0 */
	af_put_le32(b + 124, 0);
	unsigned char *p = b + IDX_HEAD;
	for (size_t i = 0; i < z->npoints; i++) {
		const struct afz_point *pt = &z->points[i];
		uint64_t end = span_end(z, i + 1);
		uint32_t crc_end = i + 1 < z->npoints
					   ? z->points[i + 1].crc_before
					   : z->crc;
		unsigned stored = pt->zlen ? pt->zlen : pt->wlen;
		af_put_le64(p, pt->in);
		af_put_le64(p + 8, pt->out);
		af_put_le32(p + 16, pt->bits);
		af_put_le32(p + 20, pt->wlen);
		af_put_le32(p + 24, pt->zlen);
		af_put_le32(p + 28, afz_span_crc(pt->crc_before, crc_end,
						end - pt->out));
		memcpy(p + IDX_POINT, pt->window, stored);
		p += IDX_POINT + stored;
	}
	z->saved = true;
	pthread_mutex_unlock(&z->lock);
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

/* A deflated window must inflate (zlib, which refuses what ISA-L might
 * let through) to exactly @p wlen bytes. */
static bool window_inflates(af_inflate *z, const unsigned char *src,
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

/* Check the records of @p b (len bytes, checksum already good) against z
 * and count the points. */
static af_status check_points(af_inflate *z, const unsigned char *b,
			      size_t len, uint64_t npoints, uint64_t comp_size,
			      af_error *err)
{
	unsigned char *tmp = malloc(AF_INFLATE_WINDOW + 1);
	if (!tmp)
		return afz_nomem(err, "index check");
	af_status st = AF_OK;
	size_t at = IDX_HEAD;
	uint64_t prev_out = 0, prev_bit = 0;
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
		else if (zlen && !window_inflates(z, p + IDX_POINT, zlen, wlen,
						  tmp))
			st = refuse(err, at, "a window does not inflate back");
		prev_out = out;
		prev_bit = in * 8 - bits;
		at += IDX_POINT + (zlen ? zlen : wlen);
	}
	if (!st && at != len - IDX_TAIL)
		st = refuse(err, at, "bytes after the last point");
	free(tmp);
	return st;
}

af_status af_inflate_index_import(af_inflate *z, const af_index_key *key,
				  const unsigned char *b, size_t len,
				  af_error *err)
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
	af_status st = check_points(z, b, len, npoints, key->comp_size, err);
	if (st)
		return st;

	struct afz_point *pts = calloc((size_t)npoints, sizeof(*pts));
	uint32_t *crcs = calloc((size_t)npoints + 1, sizeof(*crcs));
	unsigned char *ok = calloc((size_t)npoints + 1, 1);
	size_t held = 0, i = 0;
	if (!pts || !crcs || !ok)
		goto nomem;
	crcs[0] = af_le32(b + 120);
	const unsigned char *p = b + IDX_HEAD;
	for (; i < npoints; i++) {
		struct afz_point *pt = &pts[i];
		pt->in = af_le64(p);
		pt->out = af_le64(p + 8);
		pt->bits = (uint8_t)af_le32(p + 16);
		pt->wlen = af_le32(p + 20);
		pt->zlen = af_le32(p + 24);
		crcs[i + 1] = af_le32(p + 28);
		unsigned stored = pt->zlen ? pt->zlen : pt->wlen;
		pt->window = malloc(stored ? stored : 1);
		if (!pt->window)
			goto nomem;
		memcpy(pt->window, p + IDX_POINT, stored);
		held += stored + sizeof(*pt);
		p += IDX_POINT + stored;
	}
	pthread_mutex_lock(&z->lock);
	if (z->npoints || z->loaded || z->tick) {
		pthread_mutex_unlock(&z->lock);
		st = af_error_set(err, AF_E_INVAL, AF_NO_OFFSET,
				  "an index is loaded only before the first read");
		goto fail;
	}
	z->points = pts;
	z->npoints = z->cap = (size_t)npoints;
	z->index_bytes = held;
	z->span_crc = crcs;
	z->span_ok = ok;
	z->loaded = true;
	pthread_mutex_unlock(&z->lock);
	afz_mem_add(z, held + (size_t)npoints + 1 +
			       ((size_t)npoints + 1) * sizeof(*crcs));
	return AF_OK;
nomem:
	st = afz_nomem(err, "index");
fail:
	for (size_t j = 0; pts && j < i; j++)
		free(pts[j].window);
	free(pts);
	free(crcs);
	free(ok);
	return st;
}
