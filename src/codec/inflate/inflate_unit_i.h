/* SPDX-License-Identifier: MIT */
/**
 * @file inflate_unit_i.h
 * Private to the inflate module (src/codec/inflate/).
 * Read-ahead units (inflate_ahead.c): the slots a stream decodes whole
 * stretches of output into, and the reader streams that ask for them.
 */
#ifndef ARRAYFS_INFLATE_UNIT_I_H
#define ARRAYFS_INFLATE_UNIT_I_H

#include <stdbool.h>
#include <stdint.h>

#include "arrayfs/af_inflate.h"
#include "../pool_i.h"

/* Read-ahead (inflate_ahead.c): a unit is a stretch of output decoded
 * whole into a buffer of its own, by a pool thread or by the reader that
 * needs it first: one span between two access points, or the next
 * o.span bytes of the pass from 0. */
enum afz_slot_state {
	AFZ_SLOT_EMPTY = 0,
	AFZ_SLOT_QUEUED,   /* its job waits in the pool's queue */
	AFZ_SLOT_RUNNING,  /* a thread inflates it: only that thread touches
			    * buf, st and err */
	AFZ_SLOT_READY,    /* buf holds [start, end) */
	AFZ_SLOT_FAILED,   /* st and err say why */
};

struct afz_slot {
	af_inflate *z;
	struct afp_job job;
	enum afz_slot_state state;
	uint64_t start, end;   /* output range */
	bool check;            /* crc is the CRC-32 the pass from 0 recorded */
	uint32_t crc;          /* for [start, end) */
	bool pass;             /* continues the pass from 0 */
	unsigned char *buf;    /* held bytes, from RUNNING on; kept while
				* EMPTY for the next unit (a buffer freed
				* and malloc'ed again for every unit cost
				* its pages' faults, 4 % of a read with a
				* saved index) */
	uint64_t held;         /* bytes reserved in the pool: >= end -
				* start unless EMPTY, buf's size if buf */
	unsigned pins;         /* readers copying out of it unlocked */
	uint64_t consumed;     /* bytes readers took out of it */
	uint64_t used;         /* LRU tick */
	af_status st;
	af_error err;
};

/* A reader's position, to tell sequential readers from random ones. */
struct afz_stream {
	uint64_t next;         /* the byte after its last read */
	unsigned hits;         /* reads that continued it */
	uint64_t used;
};

#define AFZ_STREAMS 4u
/* Units a decoder keeps at most, ahead of its readers and behind them. */
#define AFZ_SLOTS 8u

#endif /* ARRAYFS_INFLATE_UNIT_I_H */
