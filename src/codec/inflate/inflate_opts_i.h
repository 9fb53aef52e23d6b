/* SPDX-License-Identifier: MIT */
/**
 * @file inflate_opts_i.h
 * Private to the inflate module (src/codec/inflate/).
 * The tuning of one af_inflate: the options tests shrink, their
 * defaults and limits, and the hooks tests read a stream's points with.
 */
#ifndef ARRAYFS_INFLATE_OPTS_I_H
#define ARRAYFS_INFLATE_OPTS_I_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arrayfs/af_inflate.h"

struct af_inflate_opts {
	af_inflate_engine engine; /* AUTO: ISA-L when built with it */
	uint64_t span;         /* output bytes between access points, >= 1 */
	uint64_t piece;        /* grid of the saved index's piece CRCs,
				* <= 1 GiB (inflate_index.c; 0: default) */
	unsigned cursors;      /* live inflate streams, >= 1 */
	size_t block;          /* cache block size, >= 1 */
	unsigned cache_blocks; /* cache capacity in blocks, 0 disables it */
	size_t inbuf;          /* compressed bytes asked per pread, >= 1 */
	unsigned index_div;    /* index bytes <= output reached / index_div,
				* 0: no limit (a point every span) */
	size_t seek_chunk;     /* ISA-L: compressed bytes per call while it
				* looks for a block boundary (0: default) */
	size_t scout_chunk;    /* ISA-L: the same for the scout that finds the
				* range first (0: default) */
	uint64_t seek_limit;   /* ISA-L: compressed bytes it may look through
				* for one before zlib takes over (0: default) */
	uint64_t save_span;    /* a saved index's points between the pass's:
				* one every this many output bytes
				* (inflate_refine.c; 0 or >= span: none) */
	uint64_t save_late;    /* closing: an export adds no points where
				* more output than this is left (0: default
				* AFZ_REFINE_AT_CLOSE) */
	uint64_t save_quiet_ns; /* with a pool, an export inflates again
				* only once no stream was read for this
				* long (0: default AFZ_SAVE_QUIET_NS) */
	uint64_t save_quiet_max_ns; /* ... but waits so no later than this
				* after the pass was checked (0: default
				* AFZ_SAVE_QUIET_MAX_NS) */
};

/** Fill @p o with the public defaults (AF_INFLATE_* constants). */
void af_inflate_default_opts(struct af_inflate_opts *o);

/**
 * af_inflate_open with explicit tuning; AF_E_INVAL if @p o is out of range,
 * AF_E_UNSUPPORTED if it asks for an engine this build lacks.
 */
af_status af_inflate_open_opts(af_inflate **out, const af_source *compressed,
			       uint64_t uncomp_size, uint32_t crc,
			       const struct af_inflate_opts *o, af_error *err);

/** Output offset of access point @p i (< af_inflate_points), for tests. */
uint64_t af_inflate_point_out(af_inflate *z, size_t i);

/** Bytes the points hold now (windows as stored + records), for tests. */
size_t af_inflate_index_memory(af_inflate *z);

/** Access point @p i (< af_inflate_points) keeps its window deflated. */
bool af_inflate_point_compressed(af_inflate *z, size_t i);

/** Upper bound of the memory an af_inflate holds besides its points. */
size_t af_inflate_fixed_memory(const struct af_inflate_opts *o);

/* Compressed bytes a cursor asks for per pread, at most: a cursor that
 * goes on reading grows its reads from AFZ_INBUF_FIRST to this, since each
 * isal_inflate call that runs out of input ends on its careful path and
 * saves its history (512 KiB instead of 128 KiB: +4 % on a first pass),
 * while a random read, which needs a few hundred KiB, reads no more. */
#define AFZ_INBUF (512u << 10)
#define AFZ_INBUF_FIRST (128u << 10)

/* The kernel's read-ahead sends its reads, of up to this many bytes, at
 * once, and the daemon's threads may serve them out of order: a read that
 * starts within this of a stream's next byte continues it
 * (inflate_ahead.c), and a cursor taken this far past bytes nobody read
 * yet keeps them all in the cache (afz_cursor_serve), for the read of
 * them that is surely under way. */
#define AFZ_NEAR (1u << 20)

/* Cache blocks a read that ends in whole blocks keeps of its own output
 * (an overlapping next read may want them): a quarter of the cache, 4 at
 * most, as before the cache grew to 24 (every read-ahead unit pays for
 * the copy); the others keep what a cursor went past to reach a read. */
#define AFZ_TAIL_BLOCKS(cache_blocks) \
	((cache_blocks) < 16 ? ((cache_blocks) + 3) / 4 : 4u)

_Static_assert((AF_INFLATE_CACHE_BLOCKS -
		AFZ_TAIL_BLOCKS(AF_INFLATE_CACHE_BLOCKS)) *
			       (uint64_t)AF_INFLATE_BLOCK >=
		       AFZ_NEAR + AF_INFLATE_BLOCK,
	       "the default cache keeps a whole read skipped out of order");

/* A cursor's scratch buffer, allocated when it first saves or restores a
 * window. */
#define AFZ_SCRATCH (2u * AF_INFLATE_WINDOW)

/* Pieces of a saved index: a CRC-32 every this many output bytes (on
 * multiples of it) besides the points. A cursor stops at the end of the
 * cache block holding a read's last byte anyway, so a finer grid saves no
 * inflating; it costs 4 bytes per 64 KiB (0.006 % of the output). */
#define AFZ_PIECE AF_INFLATE_BLOCK

/* Default index budget: 1/52 of the output = 1.92 %. */
#define AFZ_INDEX_DIV 52u

/* ISA-L cannot be told to stop at a block boundary; it stops where its
 * input ends, and when that is inside a block header it says so. So past a
 * due point a cursor hands it this few compressed bytes per call: headers
 * of dynamic blocks are longer, so most boundaries are caught. */
#define AFZ_SEEK_CHUNK 32u
/* Handing 32 bytes a call all the way from the mark to the next boundary
 * costs ~10 % of a pass on a uint8 0..15 member (its blocks are 25 KiB
 * compressed); so a copy of the state (a scout) first inflates on in calls
 * of this many bytes until its Huffman tables change, and only that last
 * call's stretch is then fed in seek chunks (~2 % of a pass, measured). */
#define AFZ_SCOUT_CHUNK 1024u

/* A uint64_t for printf's %llu. */
static inline unsigned long long ull(uint64_t v)
{
	return (unsigned long long)v;
}

#endif /* ARRAYFS_INFLATE_OPTS_I_H */
