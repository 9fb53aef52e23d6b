/* SPDX-License-Identifier: MIT */
/**
 * @file inflate_saved_i.h
 * Private to the inflate module (src/codec/inflate/).
 * The points an index file holds (inflate_refine.c), their windows made
 * sparse (inflate_sparse.c), and when an export may inflate again.
 */
#ifndef ARRAYFS_INFLATE_SAVED_I_H
#define ARRAYFS_INFLATE_SAVED_I_H

#include "inflate_state_i.h"

/* inflate_refine.c: the points an index file holds. */

/* Points of a saved index, in output order, each with its CRC-32 before
 * and its window as the file stores it. */
struct afz_saved {
	struct afz_point *pts;
	bool *own;             /* [i]: pts[i].window is this list's to free;
				* else it is the stream's own point's */
	size_t n, cap;
	size_t base;           /* the stream's points it was made from */
};

/* What a point costs the file besides its window: its record and the
 * piece CRC its span boundary adds. */
#define AFZ_SAVED_RECORD (28u + 4u)

/* A closing member's export still adds points while at most this much
 * output is left to inflate again (about 0.5 s of CPU): the daemon closes
 * an evicted member on the thread of the request that evicted it. */
#define AFZ_REFINE_AT_CLOSE (256ull << 20)
/* An export inflates again only once no stream on its pool was read for
 * this long: a sequential reader asks every millisecond or so, and numpy
 * loading an .npz reads the next array at once. */
#define AFZ_SAVE_QUIET_NS (50ull * 1000 * 1000)

/* An export waits for quiet no later than this after its pass was
 * checked: a reader streaming member after member for longer (an epoch
 * of training data) would otherwise leave every export to be done at
 * close, on the thread of the request that evicts the member, or at
 * unmount. */
#define AFZ_SAVE_QUIET_MAX_NS (10ull * 1000 * 1000 * 1000)

/* How long an export waiting for quiet sleeps between looks (a close's
 * hurry is seen within it). */
#define AFZ_SAVE_QUIET_POLL_NS (5ull * 1000 * 1000)

/**
 * The points an index file of @p z holds: the pass's, their windows made
 * sparse, and with o.save_span more between them, inflated again without
 * z's lock, within the budget. Returns AF_OK or AF_E_NOMEM.
 */
af_status afz_saved_points(af_inflate *z, struct afz_saved *s, af_error *err);

void afz_saved_free(struct afz_saved *s);

/**
 * Let @p z read from the saved points @p sv from now on too (a pass's
 * stream, lock held): its own points' windows that @p sv does not keep
 * are retired, and @p sv gives its windows to z. No-op for a loaded
 * index, or when z has points @p sv was not made from.
 */
void afz_use_saved(af_inflate *z, struct afz_saved *sv);

/** Free the retired windows if no cursor is busy (lock held); with
 * @p all (closing), whatever the cursors. */
void afz_retired_free(af_inflate *z, bool all);

/* inflate_sparse.c */

/**
 * Point @p p's window as a saved index stores it: the bytes a decoder
 * resuming at p can reach kept, the others zeroed, deflated into a new
 * buffer of *zlen bytes, fewer than p stores. NULL when that is not
 * smaller or anything fails (the window is then saved as it is). Reads
 * the compressed stream after p; takes no lock.
 */
unsigned char *afz_sparse_window(af_inflate *z, const struct afz_point *p,
				 unsigned *zlen);

#endif /* ARRAYFS_INFLATE_SAVED_I_H */
