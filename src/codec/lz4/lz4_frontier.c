/* SPDX-License-Identifier: MIT */
/*
 * The frontier of an LZ4 index: the one pass over the block from its
 * start. Each cache block is walked (lz4_walk.c: the verdict and the
 * record of the sequence holding the block's end), then decoded into a
 * cache entry, or left in the source when it is all literals; its last
 * 64 KiB are the next block's history, kept as an access point every span.
 * With a pool, two jobs help the reader who owns it: one walks ahead, the
 * other owns the frontier for a sequential reader and decodes ahead of it.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "lz4_index_i.h"

/*
 * Walk the sequences of block @p b (frontier owner): record the one
 * holding its end, and flag a zero-offset match among them.
 */
static af_status frontier_walk(af_lz4_index *ix, uint64_t b, af_error *err)
{
	uint64_t y = lz4_blk_end(ix, b);
	bool last = y == ix->out_len;
	/* the block's input from where liblz4 starts on it: kept in the
	 * walker's window for frontier_step */
	const struct lz4_seq *head = &ix->recs[b];
	af_status st = lz4_walker_anchor(&ix->walk, head->out < lz4_blk_start(ix, b) ?
					 head->end_in : head->in, err);
	if (st != AF_OK)
		return st;
	if (last ? !ix->walk.done :
		   !ix->have_cur || lz4_seq_end(&ix->cur) <= y) {
		bool zeros = false;
		st = lz4_walker_past(&ix->walk, y, &ix->cur, &zeros, err);
		ix->zeros[b] |= zeros;
		if (st != AF_OK)
			return st;
		ix->have_cur = true;
	}
	if (!last) {
		ix->recs[b + 1] = ix->cur;
		/* it may start exactly there: then it is block b + 1's too */
		if (ix->cur.ml && ix->cur.offset == 0)
			ix->zeros[b + 1] = 1;
	}
	return AF_OK;
}

/*
 * Block @p b = the frontier (walked), of literals only: nothing to decode.
 * Its last bytes are read from the source into the frontier's history
 * (through finbuf, so that a failed read leaves the history as it was).
 */
static af_status frontier_read(af_lz4_index *ix, uint64_t b, uint64_t x,
			       uint64_t y, size_t h2, af_error *err)
{
	const struct lz4_seq *s = &ix->recs[b];
	size_t n = y - x < h2 ? (size_t)(y - x) : h2;
	if (ix->fincap < n) {
		unsigned char *nb = realloc(ix->finbuf, n);
		if (!nb)
			return af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
					    "no memory for LZ4 history");
		lz4_mem_add(ix, n - ix->fincap);
		ix->finbuf = nb;
		ix->fincap = n;
	}
	af_status st = af_source_read_exact(&ix->src, ix->finbuf, n,
					    ix->base + s->lit_in + (y - n - s->out),
					    err);
	if (st != AF_OK)
		return st;
	unsigned char *end = ix->fhist + ix->hist;
	memmove(end - h2, end - (h2 - n), h2 - n);
	memcpy(end - n, ix->finbuf, n);
	return AF_OK;
}

/*
 * Decode block @p b = the frontier (walked) into @p e (owner, lock not
 * held), or with @p e NULL read it (literals only, served from the
 * source); keep its last bytes as the next block's history, and as a
 * point when one falls at its end. @p in_place: the walker's window is
 * the owner's (no walk job), so input it holds is decoded where it is.
 */
static af_status frontier_step(af_lz4_index *ix, uint64_t b,
			       struct lz4_entry *e, bool in_place,
			       af_error *err)
{
	af_status st = AF_OK;
	uint64_t x = lz4_blk_start(ix, b), y = lz4_blk_end(ix, b);
	size_t h = lz4_hist_before(ix, x), h2 = lz4_hist_before(ix, y);
	unsigned char *point = NULL;
	if (y % ix->o.span == 0 && y < ix->out_len) {
		point = malloc(h2);
		if (!point)
			return af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
					    "no memory for an LZ4 access point");
	}
	if (e) {
		memcpy(e->buf + ix->hist - h, ix->fhist + ix->hist - h, h);
		size_t cap0 = ix->fincap;
		struct lz4_window win = { NULL, 0, 0 };
		if (in_place)
			win = (struct lz4_window){ ix->walk.buf, ix->walk.buf_at,
						   ix->walk.buf_len };
		st = lz4_span_decode(&ix->walk, e->buf + ix->hist, x, y,
				     &ix->recs[b], &ix->recs[b + 1], ix->zeros[b],
				     in_place ? &win : NULL, &ix->finbuf,
				     &ix->fincap, err);
		lz4_mem_add(ix, ix->fincap - cap0);
		if (st == AF_OK)
			memcpy(ix->fhist + ix->hist - h2,
			       e->buf + ix->hist + (y - x) - h2, h2);
	} else {
		st = frontier_read(ix, b, x, y, h2, err);
	}
	if (st != AF_OK) {
		free(point);
		return st;
	}
	if (point) {
		memcpy(point, ix->fhist + ix->hist - h2, h2);
		pthread_mutex_lock(&ix->lock);
		ix->points[y / ix->o.span] = point;
		pthread_mutex_unlock(&ix->lock);
		lz4_mem_add(ix, h2);
	}
	return AF_OK;
}

/* Blocks the walk job walks ahead of the frontier at most: only their
 * records (64 bytes each) are kept, so far ahead costs nothing. */
#define LZ4I_WALK_AHEAD 64u

/* The walk job: walk blocks from ix->walked to ix->walk_to, publishing
 * each, on a pool thread. A failure stops it: the owner walks that block
 * again itself and meets the same verdict. */
static void walk_job_run(struct afp_job *job)
{
	af_lz4_index *ix = (af_lz4_index *)((char *)job -
					    offsetof(af_lz4_index, walk_job));
	pthread_mutex_lock(&ix->lock);
	while (!ix->closing && ix->walked < ix->walk_to &&
	       ix->sticky == AF_OK) {
		uint64_t b = ix->walked;
		pthread_mutex_unlock(&ix->lock);
		af_error mine;
		af_error_clear(&mine);
		af_status st = frontier_walk(ix, b, &mine);
		pthread_mutex_lock(&ix->lock);
		if (st != AF_OK)
			break;
		ix->walked = b + 1;
		/* wake no one for nothing: readers waiting on the frontier
		 * wait on this condvar too */
		if (ix->walk_waiters)
			pthread_cond_broadcast(&ix->cond);
	}
	ix->walk_running = false;
	pthread_cond_broadcast(&ix->cond);
	pthread_mutex_unlock(&ix->lock);
}

/* With a pool, have the blocks after @p f walked ahead (lock held): once
 * half of those walked ahead are decoded, so that the job runs for many
 * blocks at a wake-up, not one. */
static void walk_ahead(af_lz4_index *ix, uint64_t f)
{
	if (!ix->pool || ix->walk_running || ix->closing ||
	    ix->walked >= ix->nblocks || ix->walked > f + LZ4I_WALK_AHEAD / 2)
		return;
	uint64_t to = f + 1 + LZ4I_WALK_AHEAD;
	ix->walk_to = to < ix->nblocks ? to : ix->nblocks;
	ix->walk_running = true;
	ix->walk_job.run = walk_job_run;
	afp_submit(ix->pool, &ix->walk_job);
}

void lz4_walk_stop(af_lz4_index *ix)
{
	pthread_mutex_lock(&ix->lock);
	ix->closing = true;
	if (ix->walk_running && afp_take(ix->pool, &ix->walk_job))
		ix->walk_running = false;
	if (ix->ahead_running && afp_take(ix->pool, &ix->ahead_job))
		ix->ahead_running = false;
	while (ix->walk_running || ix->ahead_running)
		pthread_cond_wait(&ix->cond, &ix->lock);
	pthread_mutex_unlock(&ix->lock);
}

/*
 * lz4_frontier_run; with @p ahead (the decode-ahead job) into entries no
 * reader waits to read, stopping where there is none: it decodes what
 * the reader will want next, never over what it has not read yet.
 */
static af_status frontier_run(af_lz4_index *ix, uint64_t b, bool ahead,
			      af_error *err)
{
	af_status st = AF_OK;
	ix->frontier_busy = true;
	while (ix->frontier <= b && ix->sticky == AF_OK) {
		uint64_t f = ix->frontier;
		if (ix->walked < f + 1 && ix->walk_running) {
			/* the walk job is on it: never walk beside it */
			if (afp_take(ix->pool, &ix->walk_job)) {
				ix->walk_running = false; /* not started */
			} else {
				ix->walk_waiters++;
				pthread_cond_wait(&ix->cond, &ix->lock);
				ix->walk_waiters--;
			}
			continue;
		}
		bool walk_here = ix->walked < f + 1;
		af_error mine;
		af_error_clear(&mine);
		if (walk_here) {
			pthread_mutex_unlock(&ix->lock);
			st = frontier_walk(ix, f, &mine);
			pthread_mutex_lock(&ix->lock);
			if (st != AF_OK) {
				lz4_fail_locked(ix, st, &mine, err);
				break;
			}
			ix->walked = f + 1;
		}
		walk_ahead(ix, f);
		/* recs[f] is known: it was walked with block f - 1 */
		bool direct = lz4_in_literals(&ix->recs[f], lz4_blk_start(ix, f),
					  lz4_blk_end(ix, f));
		struct lz4_entry *e = NULL;
		if (!direct) {
			e = lz4_cache_claim(ix, f, ahead, &st, err);
			if (st != AF_OK || (!e && ahead))
				break;
			if (!e) {
				pthread_cond_wait(&ix->cond, &ix->lock);
				continue;
			}
		}
		bool in_place = !ix->walk_running;
		pthread_mutex_unlock(&ix->lock);
		st = frontier_step(ix, f, e, in_place, &mine);
		pthread_mutex_lock(&ix->lock);
		if (e) {
			/* on its way to a read far ahead, the run passes
			 * blocks that reads counted behind that one want:
			 * they stay until read, as blocks decoded ahead do */
			if (!ahead)
				e->fresh = afo_wanted(&ix->order,
						      lz4_blk_start(ix, f),
						      lz4_blk_end(ix, f));
			lz4_entry_done(ix, e, st);
			if (st == AF_OK)
				ix->decoded += lz4_blk_end(ix, f) -
					       lz4_blk_start(ix, f);
		}
		if (st != AF_OK) {
			lz4_fail_locked(ix, st, &mine, err);
			break;
		}
		ix->frontier = f + 1;
	}
	ix->frontier_busy = false;
	pthread_cond_broadcast(&ix->cond);
	return st;
}

af_status lz4_frontier_run(af_lz4_index *ix, uint64_t b, af_error *err)
{
	return frontier_run(ix, b, false, err);
}

/* Blocks the decode-ahead job decodes past the last one a sequential
 * reader was served: the kernel's next read or two (512 KiB each with the
 * daemon's read-ahead window); each stays in the cache until read. */
#define LZ4I_DECODE_AHEAD 4u

/* The decode-ahead job: the frontier on to ix->ahead_to, a block at a
 * time so a reader at the frontier never waits long for it, unless a
 * reader owns the frontier (then it is on its way there). A failure
 * stops it: a reader meets it again (a corrupt block is sticky). */
static void ahead_job_run(struct afp_job *job)
{
	af_lz4_index *ix = (af_lz4_index *)((char *)job -
					    offsetof(af_lz4_index, ahead_job));
	pthread_mutex_lock(&ix->lock);
	while (!ix->closing && !ix->frontier_busy && ix->sticky == AF_OK &&
	       ix->frontier < ix->ahead_to) {
		uint64_t f = ix->frontier;
		af_error mine;
		af_error_clear(&mine);
		if (frontier_run(ix, f, true, &mine) != AF_OK ||
		    ix->frontier == f)
			break;
	}
	ix->ahead_running = false;
	pthread_cond_broadcast(&ix->cond);
	pthread_mutex_unlock(&ix->lock);
}

void lz4_decode_ahead(af_lz4_index *ix, uint64_t b)
{
	/* a reader at or just behind the frontier reads on sequentially;
	 * one far behind it reads at random */
	if (!ix->pool || ix->closing || ix->sticky != AF_OK ||
	    b + 1 + LZ4I_DECODE_AHEAD < ix->frontier)
		return;
	afp_note_stream(ix->pool);
	uint64_t to = b + 1 + LZ4I_DECODE_AHEAD;
	if (to > ix->nblocks)
		to = ix->nblocks;
	if (to > ix->ahead_to)
		ix->ahead_to = to;
	/* woken for two blocks at least: a wake-up costs as much as a
	 * fraction of a block's decode */
	if (ix->ahead_running || ix->frontier + LZ4I_DECODE_AHEAD / 2 > ix->ahead_to)
		return;
	ix->ahead_running = true;
	ix->ahead_job.run = ahead_job_run;
	afp_submit(ix->pool, &ix->ahead_job);
}

uint64_t lz4_index_settled_frontier(af_lz4_index *ix)
{
	pthread_mutex_lock(&ix->lock);
	while (ix->ahead_running || ix->frontier_busy)
		pthread_cond_wait(&ix->cond, &ix->lock);
	uint64_t f = ix->frontier;
	pthread_mutex_unlock(&ix->lock);
	return f;
}
