/* SPDX-License-Identifier: MIT */
/*
 * Long reads served in the order of their offsets while a first pass is
 * under way. The kernel sends a reader's read-ahead as several reads at
 * once (1 MiB each: four with -o readahead_kb=4096, sixteen for one
 * O_DIRECT read of 16 MiB), and the daemon's threads may start them in any
 * order. A read that started first far ahead took the pass there, and the
 * reads behind it then decoded their bytes again from the point before
 * them: a first pass of a 128 MiB deflated member with 4 MiB of kernel
 * read-ahead inflated 1.7 times the member, and a 512 MiB LZ4 block read
 * with O_DIRECT 16 MiB reads was decoded 1.8 times.
 *
 * So a long read waits while a long read behind it, not far, is still
 * being served; the lowest one never waits, so they all end. Short reads
 * (random readers) neither wait nor are waited for, but for one that ends
 * the stream: the last read of a window there is short, and alone it took
 * the pass to the end ahead of the window's other reads. Nothing waits
 * once the pass has covered the stream: a read then starts at the point
 * before it, and reads served at once decode on more cores (an O_DIRECT
 * read of 4 MiB of a member with a saved index took 257 ms in order,
 * 194 ms at once).
 *
 * Only reads that have started are known: the first reads of a burst can
 * still start out of order before any of them is counted.
 */
#include "read_order_i.h"

int afo_init(struct afo_gate *g)
{
	for (size_t i = 0; i < AFO_FLIGHTS; i++)
		g->flights[i].live = false;
	g->waits = 0;
	return pthread_cond_init(&g->landed, NULL);
}

void afo_destroy(struct afo_gate *g)
{
	pthread_cond_destroy(&g->landed);
}

/* Whether @p f, in flight, is behind a read at @p off and near it. */
static bool behind(const struct afo_flight *f, uint64_t off)
{
	return f->live && f->off < off && off - f->off <= AFO_FAR;
}

size_t afo_enter(struct afo_gate *g, pthread_mutex_t *lock, uint64_t off,
		 size_t len, uint64_t size)
{
	if (!afo_counts(off, len, size))
		return AFO_NONE;
	size_t me = AFO_NONE;
	for (size_t i = 0; i < AFO_FLIGHTS && me == AFO_NONE; i++)
		if (!g->flights[i].live)
			me = i;
	if (me != AFO_NONE) {
		/* counted before waiting, so that a read behind this one that
		 * starts later does not wait for it, and one ahead does */
		g->flights[me].live = true;
		g->flights[me].off = off;
		g->flights[me].end = off + len;
	}
	for (;;) {
		bool wait = false;
		for (size_t i = 0; i < AFO_FLIGHTS && !wait; i++)
			wait = behind(&g->flights[i], off);
		if (!wait)
			break;
		g->waits++;
		pthread_cond_wait(&g->landed, lock);
	}
	return me;
}

void afo_leave(struct afo_gate *g, size_t flight)
{
	if (flight == AFO_NONE)
		return;
	g->flights[flight].live = false;
	pthread_cond_broadcast(&g->landed);
}

bool afo_wanted(const struct afo_gate *g, uint64_t from, uint64_t to)
{
	for (size_t i = 0; i < AFO_FLIGHTS; i++) {
		const struct afo_flight *f = &g->flights[i];
		if (f->live && f->off < to && from < f->end)
			return true;
	}
	return false;
}
