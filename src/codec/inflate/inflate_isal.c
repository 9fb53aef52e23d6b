/* SPDX-License-Identifier: MIT */
/*
 * The ISA-L engine of an af_inflate cursor (igzip's inflate, ~2x zlib on
 * numpy members), and the CRC-32 both engines use.
 *
 * ISA-L inflates ahead of what it delivers: each call first decodes up to
 * 32 KiB into its own buffer (tmp_out_buffer) and hands out what fits, and
 * that buffer always ends with the 32 KiB of history before the decoder's
 * position. ISA-L has no Z_BLOCK: it stops only where its input or its
 * buffers end. So once an access point is due, the cursor hands it
 * AFZ_SEEK_CHUNK compressed bytes per call; when the input ends inside the
 * next block's header, ISA-L says so (ISAL_BLOCK_HDR) and the cursor has a
 * block boundary at a known bit, with its window in tmp_out_buffer. A
 * stored block is ended exactly: the cursor hands it just its own bytes.
 *
 * ISA-L reports no error itself: on anything but a clean stream (invalid
 * data, input ending early, a stream shorter or longer than declared, no
 * boundary found within o.seek_limit compressed bytes) it sets c->refused
 * and zlib replays the stretch and gives the verdict (inflate_cursor.c).
 */
#include <stdlib.h>
#include <string.h>

#ifdef AF_HAVE_ISAL
#include <isa-l/crc.h>
#include <isa-l/igzip_lib.h>
#endif

#include "inflate_cursor_i.h"
#include "inflate_engine_i.h"
#include "inflate_index_i.h"

uint32_t afz_crc32(uint32_t crc, const unsigned char *p, size_t len)
{
#ifdef AF_HAVE_ISAL
	return crc32_gzip_refl(crc, p, len);
#else
	return (uint32_t)crc32_z(crc, p, len);
#endif
}

size_t afz_isal_state_size(void)
{
#ifdef AF_HAVE_ISAL
	return sizeof(struct inflate_state);
#else
	return 0;
#endif
}

#ifdef AF_HAVE_ISAL

unsigned afz_isal_deflate(af_inflate *z, const unsigned char *in,
			  unsigned len, unsigned char *out, size_t room)
{
	/* level 1: ~0.05 ms for a 32 KiB window, zlib's level 1 ~0.7 ms */
	size_t need = sizeof(struct isal_zstream) + ISAL_DEF_LVL1_DEFAULT;
	unsigned char *mem = malloc(need);
	if (!mem)
		return 0;
	afz_mem_add(z, need);
	struct isal_zstream *s = (struct isal_zstream *)mem;
	isal_deflate_stateless_init(s);
	s->level = 1;
	s->level_buf = mem + sizeof(*s);
	s->level_buf_size = ISAL_DEF_LVL1_DEFAULT;
	s->gzip_flag = IGZIP_DEFLATE;
	s->end_of_stream = 1;
	s->flush = NO_FLUSH;
	s->next_in = (uint8_t *)in;
	s->avail_in = len;
	s->next_out = out;
	s->avail_out = room > UINT32_MAX ? UINT32_MAX : (uint32_t)room;
	int ret = isal_deflate_stateless(s);
	unsigned n = ret == COMP_OK ? (unsigned)(room - s->avail_out) : 0;
	free(mem);
	afz_mem_sub(z, need);
	return n;
}

/* One call never gets more output room than this (uint32_t). */
#define ISAL_MAX_CALL (1u << 30)

static af_status isal_reset(af_inflate *z, struct afz_cursor *c, af_error *err)
{
	if (!c->isal) {
		c->isal = malloc(sizeof(*c->isal));
		if (!c->isal)
			return afz_nomem(err, "state");
		afz_mem_add(z, sizeof(*c->isal));
	}
	isal_inflate_init(c->isal);
	c->isal->crc_flag = ISAL_DEFLATE;
	c->isal->hist_bits = 0;
	return AF_OK;
}

static af_status isal_unzip_window(af_inflate *z, struct afz_cursor *c,
				   const struct afz_point *p)
{
	struct inflate_state *s = c->isal;
	s->next_in = p->window;
	s->avail_in = p->zlen;
	s->next_out = c->scratch;
	s->avail_out = p->wlen;
	int ret = isal_inflate_stateless(s);
	bool ok = ret == ISAL_DECOMP_OK && s->avail_out == 0;
	isal_reset(z, c, NULL);
	return ok ? AF_OK : AF_E_CORRUPT;
}

static bool isal_resume(struct afz_cursor *c, unsigned bits, unsigned value,
			const unsigned char *dict, unsigned dlen)
{
	struct inflate_state *s = c->isal;
	/* set_dict only copies the dictionary */
	if (dlen && isal_inflate_set_dict(s, (uint8_t *)dict, dlen) != COMP_OK)
		return false;
	s->read_in = value;
	s->read_in_length = (int32_t)bits;
	return true;
}

/* Output decoded into tmp_out_buffer but not handed out yet. */
static uint64_t pending(const struct inflate_state *s)
{
	return (uint64_t)(uint32_t)(s->tmp_out_valid - s->tmp_out_processed);
}

static bool at_header(const struct inflate_state *s)
{
	return s->block_state == ISAL_BLOCK_NEW_HDR ||
	       s->block_state == ISAL_BLOCK_HDR;
}

static bool finished(const struct inflate_state *s)
{
	return s->block_state == ISAL_BLOCK_FINISH ||
	       (s->block_state == ISAL_BLOCK_INPUT_DONE && pending(s) == 0);
}

static af_status refuse(struct afz_cursor *c)
{
	c->refused = true;
	return AF_E_CORRUPT;
}

/*
 * ISA-L stands at the header of a block that follows another: record an
 * access point there if one is due. The header starts at the bits ISA-L
 * holds back (read_in and the header bytes it saved in tmp_in_buffer).
 */
static void boundary(af_inflate *z, struct afz_cursor *c)
{
	const struct inflate_state *s = c->isal;
	uint64_t taken = c->in - c->avail_in;
	uint64_t held = (uint64_t)(uint32_t)s->read_in_length +
			8u * (uint64_t)(uint16_t)s->tmp_in_size;
	c->seek_fed = 0;
	c->scouted = false;
	c->rescout = false;
	if (s->read_in_length < 0 || held > taken * 8)
		return;
	uint64_t bit = taken * 8 - held;
	struct afz_boundary b;
	b.out = c->out + pending(s);
	b.in = (bit + 7) / 8;
	b.bits = (unsigned)(b.in * 8 - bit);
	b.wlen = b.out < AF_INFLATE_WINDOW ? (unsigned)b.out
					   : AF_INFLATE_WINDOW;
	if ((uint64_t)(uint32_t)s->tmp_out_valid < b.wlen)
		return;
	b.window = s->tmp_out_buffer + s->tmp_out_valid - b.wlen;
	/* the output not handed out yet ends the window */
	b.has_crc = c->from_start &&
		    pending(s) <= (uint64_t)(uint32_t)s->tmp_out_valid;
	b.crc = b.has_crc ? afz_crc32(c->crc, s->tmp_out_buffer +
						      s->tmp_out_valid -
						      pending(s),
				      (size_t)pending(s))
			  : 0;
	afz_record_point(z, c, &b);
}

/*
 * Find the compressed range where the next block starts: a copy of the
 * state inflates on (into c->scratch, thrown away) from the bytes the
 * cursor holds, in o.scout_chunk-byte calls, until it stops at a header or
 * its Huffman tables are no longer the current block's: the header then
 * starts inside that call's input or the few bytes ISA-L had read ahead.
 * Sets c->seek_from and c->seek_to (both 0 when the scout finds nothing:
 * the same tables again, an error). When the input the cursor holds ends
 * first, the boundary lies past its last 8 bytes: seek_from is there,
 * seek_to 0, and c->rescout says to scout again from there, with the next
 * input (before, the cursor went on in AFZ_SEEK_CHUNK steps to the
 * boundary: 5 of 84 points of a 128 MiB uint8 member took 650 steps or
 * more, two thirds of the pass's seek steps).
 */
static void scout(af_inflate *z, struct afz_cursor *c)
{
	const struct inflate_state *s = c->isal;
	c->scouted = true;
	c->rescout = false;
	c->seek_from = c->seek_to = 0;
	if (s->block_state != ISAL_BLOCK_CODED ||
	    afz_ensure_buf(z, &c->scratch, AFZ_SCRATCH, NULL))
		return;
	struct inflate_state *sc = malloc(sizeof(*sc));
	if (!sc)
		return;
	afz_mem_add(z, sizeof(*sc));
	memcpy(sc, s, sizeof(*sc));
	const unsigned char *p = c->next_in;
	size_t left = c->avail_in;
	uint64_t at = c->in - c->avail_in; /* compressed offset of p */
	while (left > 0) {
		size_t k = left < z->o.scout_chunk ? left : z->o.scout_chunk;
		sc->next_in = (uint8_t *)p;
		sc->avail_in = (uint32_t)k;
		sc->next_out = c->scratch;
		sc->avail_out = AFZ_SCRATCH;
		if (isal_inflate(sc) != ISAL_DECOMP_OK || sc->avail_in > k)
			break;
		if (at_header(sc) || sc->block_state != ISAL_BLOCK_CODED ||
		    memcmp(&sc->lit_huff_code, &s->lit_huff_code,
			   sizeof(s->lit_huff_code)) ||
		    memcmp(&sc->dist_huff_code, &s->dist_huff_code,
			   sizeof(s->dist_huff_code))) {
			/* ISA-L holds at most 8 bytes read ahead */
			c->seek_from = at > 8 ? at - 8 : 0;
			c->seek_to = at + k;
			break;
		}
		size_t took = k - sc->avail_in;
		p += took;
		left -= took;
		at += took;
		if (!took)
			break;
	}
	if (left == 0 && at > c->in - c->avail_in) {
		/* ISA-L holds at most 8 bytes read ahead */
		c->seek_from = at - 8;
		c->rescout = true;
	}
	free(sc);
	afz_mem_sub(z, sizeof(*sc));
}

/* Compressed bytes to hand over in one call. */
static size_t to_hand(af_inflate *z, struct afz_cursor *c)
{
	const struct inflate_state *s = c->isal;
	if (c->out + pending(s) < c->next_mark)
		return c->avail_in;
	if (s->bfinal && (s->block_state == ISAL_BLOCK_CODED ||
			  s->block_state == ISAL_BLOCK_TYPE0)) {
		/* in the last block: no boundary ahead */
		c->next_mark = UINT64_MAX;
		return c->avail_in;
	}
	size_t n = z->o.seek_chunk;
	uint64_t at = c->in - c->avail_in;
	if (s->block_state == ISAL_BLOCK_TYPE0) {
		/* a stored block: hand exactly its rest, so that the input
		 * ends where the next header starts */
		uint32_t held = (uint32_t)s->read_in_length / 8;
		uint32_t left = (uint32_t)s->type0_block_len;
		n = left > held ? left - held : 0;
	} else {
		if (c->scouted && c->seek_to && at > c->seek_to)
			c->scouted = false; /* the header went by whole */
		if (c->scouted && c->rescout && at >= c->seek_from &&
		    c->avail_in > 8)
			c->scouted = false; /* the next input is in */
		if (!c->scouted)
			scout(z, c);
		if (at < c->seek_from)
			n = (size_t)(c->seek_from - at);
	}
	return n < c->avail_in ? n : c->avail_in;
}

/*
 * One isal_inflate call with up to @p room bytes of output at @p dst,
 * which are the cursor's output (counted in c->out and the CRC) when
 * @p deliver; *got: bytes written; *moved: whether anything changed.
 */
static af_status step(af_inflate *z, struct afz_cursor *c, unsigned char *dst,
		      uint32_t room, bool deliver, uint32_t *got, bool *moved,
		      af_error *err)
{
	struct inflate_state *s = c->isal;
	if (c->avail_in == 0 && !c->eof) {
		af_status st = afz_refill(z, c, err);
		if (st)
			return st;
	}
	bool seeking = c->out + pending(s) >= c->next_mark;
	size_t hand = to_hand(z, c);
	/* total_out (32 bits) only bounds how far back a match may reach;
	 * keep it past the window so a stream over 4 GiB never wraps it */
	if (s->total_out > (1u << 30))
		s->total_out = 1u << 20;
	s->next_in = (uint8_t *)c->next_in;
	s->avail_in = (uint32_t)hand;
	s->next_out = dst;
	s->avail_out = room;
	int32_t rl = s->read_in_length;
	int bs = s->block_state;
	uint64_t pend = pending(s);
	int ret = isal_inflate(s);
	/* after an error next_in and avail_in may point into ISA-L's own
	 * header buffer: the cursor restarts, so they do not matter */
	if (ret != ISAL_DECOMP_OK || s->avail_in > hand ||
	    s->avail_out > room)
		return refuse(c);
	size_t took = hand - s->avail_in;
	c->next_in += took;
	c->avail_in -= took;
	s->avail_in = 0;
	*got = room - s->avail_out;
	*moved = took || *got || s->read_in_length != rl ||
		 (int)s->block_state != bs || pending(s) != pend;
	if (deliver && *got) {
		if (c->from_start)
			c->crc = afz_crc_advance(z, c->crc, c->out, dst,
						 *got);
		c->out += *got;
	}
	if (seeking) {
		c->seek_fed += took;
		if (hand <= z->o.seek_chunk)
			__atomic_fetch_add(&z->seek_steps, 1, __ATOMIC_RELAXED);
	}
	if (deliver && c->out + pending(s) >= c->next_mark && at_header(s))
		boundary(z, c);
	else if (seeking && c->seek_fed > z->o.seek_limit)
		return refuse(c);
	return AF_OK;
}

/* Having delivered all z->size bytes, insist the stream ends right here. */
static af_status check_end(af_inflate *z, struct afz_cursor *c, af_error *err)
{
	unsigned char extra;
	for (;;) {
		if (pending(c->isal))
			return refuse(c);
		if (finished(c->isal))
			return afz_ended(z, c, err);
		uint32_t got;
		bool moved;
		af_status st = step(z, c, &extra, 1, false, &got, &moved, err);
		if (st)
			return st;
		if (got || !moved)
			return refuse(c);
	}
}

static af_status isal_produce(af_inflate *z, struct afz_cursor *c,
			      unsigned char *dst, uint64_t n, af_error *err)
{
	while (n > 0) {
		if (finished(c->isal))
			return refuse(c);
		uint64_t room = n < ISAL_MAX_CALL ? n : ISAL_MAX_CALL;
		/* deliver up to the due mark, then look for a boundary */
		if (c->out < c->next_mark && room > c->next_mark - c->out)
			room = c->next_mark - c->out;
		uint32_t got;
		bool moved;
		af_status st = step(z, c, dst, (uint32_t)room, true, &got,
				    &moved, err);
		if (st)
			return st;
		dst += got;
		n -= got;
		if (!moved)
			return refuse(c);
	}
	if (c->out == z->size && !c->ended)
		return check_end(z, c, err);
	return AF_OK;
}

static void isal_release(af_inflate *z, struct afz_cursor *c)
{
	if (!c->isal)
		return;
	free(c->isal);
	afz_mem_sub(z, sizeof(*c->isal));
	c->isal = NULL;
}

const struct afz_engine afz_engine_isal = {
	.id = AF_INFLATE_ISAL,
	.reset = isal_reset,
	.unzip_window = isal_unzip_window,
	.resume = isal_resume,
	.produce = isal_produce,
	.release = isal_release,
};

#endif /* AF_HAVE_ISAL */
