/* SPDX-License-Identifier: MIT */
/**
 * @file lz4_index_i.h
 * Private to lz4.c (opening, reads, the cache) and lz4_frontier.c (the
 * walk and first decode of the block from its start): the state of one
 * af_lz4_index.
 *
 * Locking: ix->lock guards the cache, the frontier's published fields
 * (frontier, frontier_busy, the records and points below it) and the
 * sticky error; it is held to copy at most one block, never to decode.
 * One thread at a time owns the frontier (frontier_busy) and alone touches
 * the fields marked "frontier owner". A block being decoded is a cache
 * entry in state FILLING that only its decoder touches. Records, point
 * windows and zero flags below the frontier never change once published,
 * so a decoder reads them without the lock.
 */
#ifndef ARRAYFS_LZ4_INDEX_I_H
#define ARRAYFS_LZ4_INDEX_I_H

#include <pthread.h>

#include "lz4_i.h"
#include "../pool_i.h"
#include "../read_order_i.h"

enum entry_state { ENT_EMPTY = 0, ENT_FILLING, ENT_VALID };

/* A decoded block: [hist bytes of output before it | the block]. */
struct lz4_entry {
	enum entry_state state;
	uint64_t blk;
	uint64_t used;        /* LRU tick */
	unsigned char *buf;   /* allocated on first use */
	unsigned char *in;    /* input of a decode behind the frontier into it */
	size_t incap;
	bool fresh;           /* decoded ahead of a sequential reader and not
			       * read yet: evicted last */
};

struct af_lz4_index {
	af_source src;
	uint64_t base, in_len, out_len;
	struct lz4_opts o;
	size_t hist;           /* dictionary kept: min(64 KiB, out_len) */
	size_t blk_cap;        /* min(block, out_len) */
	uint64_t nblocks, npoints;
	unsigned refs;         /* atomic */

	pthread_mutex_t lock;
	pthread_cond_t cond;   /* broadcast when an entry or the frontier frees */
	struct afo_gate order; /* long reads ahead of the frontier, in order */
	uint64_t frontier;     /* blocks [0, frontier) were walked and decoded */
	bool frontier_busy;
	/* [b] is the sequence holding output b * block, for b <= frontier;
	 * [0] and [nblocks] are markers for the block's start and end */
	struct lz4_seq *recs;
	unsigned char *zeros;  /* [b]: block b holds a zero-offset match */
	unsigned char **points; /* [p]: the output before p * span (p >= 1) */
	af_status sticky;
	af_error sticky_err;
	struct lz4_entry *cache;
	uint64_t tick;
	size_t mem;            /* bytes held; atomic */
	uint64_t decoded;      /* lock: output bytes decoded, again counting
				* again (af_lz4_index_decoded) */

	/* the walker: the frontier owner's, or while walk_running the walk
	 * job's (lz4_frontier.c), which walks ahead of the frontier on a
	 * pool thread while the owner decodes */
	struct lz4_walker walk;
	struct lz4_seq cur;    /* the last sequence walked */
	bool have_cur;
	uint64_t walked;       /* recs[1..walked] are set; lock */
	af_pool *pool;         /* NULL: the owner walks each block itself */
	struct afp_job walk_job;
	bool walk_running;     /* lock: the job is queued or walking */
	uint64_t walk_to;      /* lock: it walks blocks up to this one */
	unsigned walk_waiters; /* lock: owners waiting for it to walk one */
	bool closing;          /* lock */
	/* the decode-ahead job (lz4_frontier.c): for a sequential reader,
	 * it moves the frontier on to ahead_to on a pool thread while the
	 * reader is served */
	struct afp_job ahead_job;
	bool ahead_running;    /* lock: the job is queued or decoding */
	uint64_t ahead_to;     /* lock */

	/* frontier owner */
	unsigned char *fhist;  /* the hist bytes of output before the frontier */
	unsigned char *finbuf;
	size_t fincap;
};

static inline void lz4_mem_add(af_lz4_index *ix, size_t n)
{
	__atomic_fetch_add(&ix->mem, n, __ATOMIC_RELAXED);
}

static inline void lz4_mem_sub(af_lz4_index *ix, size_t n)
{
	__atomic_fetch_sub(&ix->mem, n, __ATOMIC_RELAXED);
}

/* Output offsets of cache block @p b: [lz4_blk_start, lz4_blk_end). */
static inline uint64_t lz4_blk_start(const af_lz4_index *ix, uint64_t b)
{
	return b * ix->o.block;
}

static inline uint64_t lz4_blk_end(const af_lz4_index *ix, uint64_t b)
{
	uint64_t y = (b + 1) * ix->o.block;
	return y < ix->out_len ? y : ix->out_len;
}

/* History bytes there are before output offset @p x. */
static inline size_t lz4_hist_before(const af_lz4_index *ix, uint64_t x)
{
	return x < ix->hist ? (size_t)x : ix->hist;
}

/* Whether output [from, to) is literals of @p s: bytes of the source. */
static inline bool lz4_in_literals(const struct lz4_seq *s, uint64_t from,
				   uint64_t to)
{
	return s->out <= from && to <= s->out + s->lit;
}

/**
 * An entry to decode block @p b into, now FILLING, or NULL: every entry is
 * being filled (wait on ix->cond and look again), or *st is AF_E_NOMEM.
 * The least recently used goes, a fresh one only when all are fresh;
 * with @p ahead (for the decode-ahead job, whose entry is then fresh)
 * never a fresh one: NULL then. Lock held.
 */
struct lz4_entry *lz4_cache_claim(af_lz4_index *ix, uint64_t b, bool ahead,
				  af_status *st, af_error *err);

/** A claimed entry is filled (@p st AF_OK) or given back. Lock held. */
void lz4_entry_done(af_lz4_index *ix, struct lz4_entry *e, af_status st);

/** Copy @p mine to @p err and return @p st; a corrupt block's failure
 * stays for every later read. Lock held. */
af_status lz4_fail_locked(af_lz4_index *ix, af_status st, const af_error *mine,
			  af_error *err);

/**
 * Move the frontier past block @p b: walk and decode the blocks before it
 * from where the frontier is (lock held; dropped while decoding). Returns
 * AF_OK (also when a corrupt block was met before: the sticky error says
 * so), or the failure met.
 */
af_status lz4_frontier_run(af_lz4_index *ix, uint64_t b, af_error *err);

/**
 * A reader was served block @p b: if it reads at the frontier (a
 * sequential reader) and there is a pool, have the blocks after it
 * decoded ahead on a pool thread (lock held).
 */
void lz4_decode_ahead(af_lz4_index *ix, uint64_t b);

/** Take back or wait for the walk and decode-ahead jobs (at close; lock
 * not held). */
void lz4_walk_stop(af_lz4_index *ix);

#endif /* ARRAYFS_LZ4_INDEX_I_H */
