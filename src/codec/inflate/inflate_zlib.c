/* SPDX-License-Identifier: MIT */
/*
 * The zlib engine of an af_inflate cursor: a raw-deflate z_stream that
 * stops at block boundaries past the due mark (Z_BLOCK) so the cursor can
 * record access points there, resumes at a bit offset with inflatePrime +
 * inflateSetDictionary, and words every error of a bad stream. It is the
 * reference: where ISA-L gives up, this engine replays the stretch.
 */
#include <stdlib.h>
#include <string.h>

#include "inflate_cursor_i.h"
#include "inflate_engine_i.h"
#include "inflate_index_i.h"

/* One inflate call never gets more output room than this (uInt). */
#define AFZ_MAX_CALL (1u << 30)

/* zlib allocations, counted in z->mem; the size lives in a header. */
#define AFZ_ZHDR 16u

voidpf afz_zalloc(voidpf opaque, uInt items, uInt size)
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

void afz_zfree(voidpf opaque, voidpf ptr)
{
	unsigned char *p = (unsigned char *)ptr - AFZ_ZHDR;
	size_t n;
	memcpy(&n, p, sizeof(n));
	afz_mem_sub(opaque, n + AFZ_ZHDR);
	free(p);
}

/* Compressed offset of the next byte inflate will take. */
static uint64_t in_pos(const struct afz_cursor *c)
{
	return c->in - c->avail_in;
}

/* One inflate call on the cursor's input, which it takes and gives back. */
static int run(struct afz_cursor *c, unsigned char *dst, uInt room, int flush)
{
	c->zs.next_in = (unsigned char *)c->next_in;
	c->zs.avail_in = (uInt)c->avail_in;
	c->zs.next_out = dst;
	c->zs.avail_out = room;
	int ret = inflate(&c->zs, flush);
	c->next_in = c->zs.next_in;
	c->avail_in = c->zs.avail_in;
	return ret;
}

static af_status zlib_reset(af_inflate *z, struct afz_cursor *c, af_error *err)
{
	if (c->inited) {
		inflateReset(&c->zs);
		return AF_OK;
	}
	memset(&c->zs, 0, sizeof(c->zs));
	c->zs.zalloc = afz_zalloc;
	c->zs.zfree = afz_zfree;
	c->zs.opaque = z;
	if (inflateInit2(&c->zs, -15) != Z_OK)
		return afz_nomem(err, "state");
	c->inited = true;
	return AF_OK;
}

static af_status zlib_unzip_window(af_inflate *z, struct afz_cursor *c,
				   const struct afz_point *p)
{
	(void)z;
	c->zs.next_in = p->window;
	c->zs.avail_in = p->zlen;
	c->zs.next_out = c->scratch;
	c->zs.avail_out = p->wlen;
	int ret = inflate(&c->zs, Z_FINISH);
	bool ok = ret == Z_STREAM_END && c->zs.avail_out == 0;
	inflateReset(&c->zs);
	if (ret == Z_MEM_ERROR)
		return AF_E_NOMEM;
	return ok ? AF_OK : AF_E_CORRUPT;
}

static bool zlib_resume(struct afz_cursor *c, unsigned bits, unsigned value,
			const unsigned char *dict, unsigned dlen)
{
	if (bits && inflatePrime(&c->zs, (int)bits, (int)value) != Z_OK)
		return false;
	return inflateSetDictionary(&c->zs, dict, dlen) == Z_OK;
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

/* Called at a block boundary where another block follows, at or past
 * c->next_mark. */
static void boundary(af_inflate *z, struct afz_cursor *c)
{
	if (afz_ensure_buf(z, &c->scratch, AFZ_SCRATCH, NULL))
		return;
	uInt n = AF_INFLATE_WINDOW;
	if (inflateGetDictionary(&c->zs, c->scratch, &n) != Z_OK)
		return;
	struct afz_boundary b = {
		.out = c->out,
		.in = in_pos(c),
		.bits = (unsigned)c->zs.data_type & 7u,
		.window = c->scratch,
		.wlen = n,
		.has_crc = c->from_start,
		.crc = c->crc,
	};
	afz_record_point(z, c, &b);
}

/* Having produced all z->size bytes, insist the stream ends right here. */
static af_status check_end(af_inflate *z, struct afz_cursor *c, int ret,
			   af_error *err)
{
	unsigned char extra;
	while (ret != Z_STREAM_END) {
		if (c->avail_in == 0 && !c->eof) {
			af_status st = afz_refill(z, c, err);
			if (st)
				return st;
		}
		ret = run(c, &extra, 1, Z_NO_FLUSH);
		if (c->zs.avail_out == 0)
			return afz_too_long(z, c, in_pos(c), err);
		if (ret == Z_MEM_ERROR)
			return afz_nomem(err, "state");
		if (ret == Z_DATA_ERROR || ret == Z_STREAM_ERROR ||
		    ret == Z_NEED_DICT)
			return corrupt(z, c, err, c->zs.msg);
		if (ret == Z_BUF_ERROR && c->avail_in == 0 && c->eof)
			return afz_truncated(z, c, err);
		if (ret == Z_BUF_ERROR && c->avail_in > 0)
			return corrupt(z, c, err, "inflate made no progress");
	}
	return afz_ended(z, c, err);
}

static af_status zlib_produce(af_inflate *z, struct afz_cursor *c,
			      unsigned char *dst, uint64_t n, af_error *err)
{
	int ret = Z_OK;
	while (n > 0) {
		if (c->avail_in == 0 && !c->eof) {
			af_status st = afz_refill(z, c, err);
			if (st)
				return st;
		}
		uint64_t room = n < AFZ_MAX_CALL ? n : AFZ_MAX_CALL;
		int flush = Z_NO_FLUSH;
		if (c->out >= c->next_mark)
			flush = Z_BLOCK;
		else if (room > c->next_mark - c->out)
			room = c->next_mark - c->out;
		ret = run(c, dst, (uInt)room, flush);
		uint64_t got = room - c->zs.avail_out;
		if (got && c->from_start)
			c->crc = afz_crc_advance(z, c->crc, c->out, dst,
						 (size_t)got);
		dst += got;
		n -= got;
		c->out += got;
		if (ret == Z_STREAM_END && n > 0)
			return afz_too_short(z, c, in_pos(c), err);
		if (ret == Z_MEM_ERROR)
			return afz_nomem(err, "state");
		/* inflate reads the next block's header as soon as a block
		 * ends, even with no room left: bad data past the bytes asked
		 * for fails the read that needs them (zlib stays in its error
		 * state), as it does with ISA-L, whatever the buffer sizes */
		if (ret == Z_DATA_ERROR && n == 0)
			break;
		if (ret != Z_OK && ret != Z_STREAM_END && ret != Z_BUF_ERROR)
			return corrupt(z, c, err, c->zs.msg);
		/* data_type bit 7: stopped at a block boundary; bit 6: the
		 * last block is done, so no point is needed any more */
		bool at_boundary = flush == Z_BLOCK && (c->zs.data_type & 128);
		if (at_boundary && !(c->zs.data_type & 64))
			boundary(z, c);
		else if (at_boundary)
			c->next_mark = UINT64_MAX;
		else if (ret == Z_BUF_ERROR && c->avail_in == 0 && c->eof)
			return afz_truncated(z, c, err);
		else if (ret == Z_BUF_ERROR && c->avail_in > 0)
			return corrupt(z, c, err, "inflate made no progress");
	}
	if (c->out == z->size && !c->ended)
		return check_end(z, c, ret, err);
	return AF_OK;
}

static void zlib_release(af_inflate *z, struct afz_cursor *c)
{
	(void)z;
	if (c->inited)
		inflateEnd(&c->zs);
	c->inited = false;
}

const struct afz_engine afz_engine_zlib = {
	.id = AF_INFLATE_ZLIB,
	.reset = zlib_reset,
	.unzip_window = zlib_unzip_window,
	.resume = zlib_resume,
	.produce = zlib_produce,
	.release = zlib_release,
};
