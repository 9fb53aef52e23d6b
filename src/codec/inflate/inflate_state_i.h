/* SPDX-License-Identifier: MIT */
/**
 * @file inflate_state_i.h
 * Private to the inflate module (src/codec/inflate/).
 * The state of one af_inflate: its access points, its cursors and the
 * stream itself; every inflate_*.c includes it.
 *
 * Locking: z->lock guards the point list, the cache, the cursor table
 * fields marked "lock" and the sticky error. A cursor with busy set belongs
 * to the one thread that claimed it; that thread alone touches the fields
 * marked "owner", without the lock, so inflating never holds z->lock.
 * Point windows (as they are or deflated) are immutable once appended and
 * freed only at close, or, the pass's, when an export has replaced them
 * with the saved points (afz_use_saved), once no cursor is busy: so an
 * owner may use a point copied out under the lock after dropping it.
 */
#ifndef ARRAYFS_INFLATE_STATE_I_H
#define ARRAYFS_INFLATE_STATE_I_H

#include <pthread.h>
#include <stdbool.h>
#include <zlib.h>

#include "../read_order_i.h"
#include "inflate_opts_i.h"
#include "inflate_unit_i.h"

struct afz_point {
	uint64_t in;           /* compressed offset of the first byte not used up */
	uint64_t out;          /* output offset */
	unsigned wlen;         /* window bytes: 32 KiB except near the start */
	unsigned zlen;         /* 0: window holds the wlen bytes as they are;
				* else it holds them raw-deflated in zlen < wlen
				* bytes */
	uint32_t crc_before;   /* CRC-32 of output [0, out), if has_crc */
	uint8_t bits;          /* bits of byte in - 1 still unused (0-7) */
	bool has_crc;          /* recorded on a pass from 0 */
	bool head;             /* starts a read-ahead unit (inflate_ahead.c):
				* a pass's point, or a loaded index's first
				* past a multiple of o.span */
	unsigned char *window; /* the wlen output bytes before out */
};

struct afz_engine;
struct inflate_state;

struct afz_cursor {
	/* lock */
	bool busy;          /* claimed by a reader */
	bool live;          /* positioned: usable for continuing */
	uint64_t pos;       /* output offset when idle (== out) */
	uint64_t claim_pos; /* while busy: where it started */
	uint64_t busy_end;  /* while busy: where it will stop */
	bool on_pass;       /* on the pass from 0 (its from_start, as known
			     * under the lock while the owner moves it) */
	uint64_t used;      /* LRU tick */
	/* owner */
	size_t vpiece;      /* piece whose CRC-32 is being checked, or
			     * AFZ_NO_PIECE (pieces: see inflate_index.c) */
	uint64_t vstart, vend; /* where that piece begins and ends */
	uint32_t vcrc;      /* CRC-32 of its output so far */
	uint64_t vfrom;     /* first byte the read being served wants */
	uint64_t bad_from, bad_to; /* output holding pieces that failed
			     * their check before vfrom (skipped, not
			     * cached); equal: none */
	const struct afz_engine *eng; /* what inflates now; NULL before use */
	z_stream zs;
	bool inited;        /* inflateInit2 done */
	struct inflate_state *isal; /* ISA-L's state, allocated on first use */
	bool refused;       /* ISA-L gave up on the last call: zlib takes over */
	uint64_t seek_fed;  /* compressed bytes handed while seeking */
	bool scouted;       /* ISA-L: the range of the next boundary is known */
	uint64_t seek_from; /* ISA-L: hand seek chunks from this compressed */
	uint64_t seek_to;   /* byte to this one, where the boundary lies */
	bool rescout;       /* ISA-L: the scout ran out of input first: the
			     * boundary lies past seek_from; scout again
			     * there, with the next input */
	bool from_start;    /* produced every byte since 0: crc is running */
	bool ended;         /* reached the end and saw the stream end there */
	bool crc_checked;   /* ended with a matching CRC-32 */
	bool fatal;         /* the last error condemns the whole member */
	bool eof;           /* the compressed source has no more bytes */
	uint64_t out;       /* output bytes produced */
	uint64_t in;        /* compressed offset just past inbuf's contents */
	const unsigned char *next_in; /* inbuf bytes the engine has not taken */
	size_t avail_in;
	size_t ask;         /* bytes the next pread asks for (<= o.inbuf) */
	struct afz_input_ahead *ahead; /* the next input, read by the pool */
	uint64_t next_mark; /* record a point at the first boundary past this */
	uint32_t crc;
	unsigned char *inbuf;
	unsigned char *blockbuf; /* one cache block; may be swapped into the cache */
	unsigned char *scratch;  /* AFZ_SCRATCH: a window and its deflated copy */
};
struct af_inflate {
	const af_source *src;
	uint64_t size;
	uint32_t crc;
	struct af_inflate_opts o;
	pthread_mutex_t lock;
	pthread_cond_t idle;   /* broadcast whenever a cursor is released */
	struct afo_gate order; /* long reads of a first pass, in order */
	struct afz_point *points; /* sorted by out, append-only */
	size_t npoints, cap;
	size_t index_bytes;    /* windows as stored + point records */
	struct afz_cursor *cursors;
	struct afz_cache_ent *cache;
	uint64_t tick;
	bool crc_ok;           /* one pass from 0 saw the end with a good CRC */
	af_inflate_engine engine; /* ZLIB or ISAL: what restarts use */
	bool isal_refused;     /* ISA-L gave up on this stream: zlib from now */
	bool loaded;           /* points came from a saved index: no more
				* are recorded, spans are checked */
	bool saved;            /* the index was exported once */
	size_t *piece_first;   /* loaded: first piece of span 0..npoints,
				* then the number of pieces */
	uint32_t *piece_crc;   /* loaded: CRC-32 of each piece */
	unsigned char *piece_ok; /* loaded: piece checked (atomic bytes) */
	uint32_t *grid;        /* grid[m - 1]: CRC-32 of output [0, m x
				* o.piece), recorded by passes from 0 */
	size_t ngrid, gridcap; /* lock */
	uint64_t inflated;     /* output bytes produced, atomic (a counter
				* for tests and the -d log) */
	uint64_t seek_steps;   /* ISA-L calls handed at most AFZ_SEEK_CHUNK
				* bytes to reach a boundary, atomic (a
				* counter for tests) */
	af_status sticky;      /* AF_OK, or the error every read now returns */
	af_error sticky_err;
	size_t mem;            /* bytes held; atomic (zlib allocates unlocked) */

	/* read-ahead, all under lock (inflate_ahead.c); pool NULL: none */
	af_pool *pool;
	struct afp_holder holder; /* the pool's hook to take buffers back */
	struct afz_slot *slots;   /* AFZ_SLOTS */
	unsigned jobs;            /* slots QUEUED or RUNNING */
	bool closing;
	struct afz_stream streams[AFZ_STREAMS];
	uint64_t units_pool;      /* units inflated by pool threads */
	uint64_t units_taken;     /* queued units a reader took back */
	uint64_t units_own;       /* units a reader inflated for itself */
	uint64_t units_chained;   /* pass units a pool thread went on with */
	uint64_t unit_buffers;    /* units' buffers malloc'ed; atomic (tests) */
	uint64_t inputs_ahead;    /* refills read ahead by the pool; atomic */
	bool input_ahead_held;    /* a cursor has the second input buffer
				   * (inflate_input.c); atomic */
	unsigned char *windows_file; /* loaded by afz_index_adopt: the
				   * file the windows lie in, freed at
				   * close (else each window is its own) */
	unsigned char **retired;  /* lock: windows of the pass's points the
				   * saved ones replaced (afz_use_saved),
				   * freed once no cursor is busy: one may
				   * be starting from a copy of such a point */
	size_t nretired, retired_bytes;
	bool hurry;               /* closing: an export adds few points;
				   * atomic (inflate_refine.c) */
	uint64_t export_waits;    /* atomic: times an export waited for
				   * streams to be quiet (tests) */
	uint64_t checked_ns;      /* atomic: when a pass from 0 first checked
				   * the CRC-32 (afp_now_ns), 0: not yet */
	af_pool *saver;           /* with no pool: where reads of AFZ_SEQ_MIN
				   * or more are noted as streams
				   * (af_inflate_set_saver); set before the
				   * first read */
};

void afz_mem_add(af_inflate *z, size_t n);
void afz_mem_sub(af_inflate *z, size_t n);

#endif /* ARRAYFS_INFLATE_STATE_I_H */
