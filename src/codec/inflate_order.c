/* SPDX-License-Identifier: MIT */
/*
 * Long reads of a stream served in the order of their offsets. The kernel
 * sends a reader's read-ahead as several reads at once (1 MiB each: four
 * with -o readahead_kb=4096, sixteen for one O_DIRECT read of 16 MiB), and
 * the daemon's threads may start them in any order. A read that started
 * first far ahead took the pass's idle cursor there, and the reads behind
 * it then inflated their bytes again from the point before them: a first
 * pass of a 128 MiB member with 4 MiB of kernel read-ahead inflated 1.7
 * times the member. So a long read waits while a long read behind it, not
 * far, is still being served; the lowest one never waits, so they all end.
 * Short reads (random readers) neither wait nor are waited for, nor does
 * anything once the member's points cover it (a pass checked its CRC-32,
 * or its index was loaded): a read then starts at the point before it, and
 * reads served at once inflate on more cores (an O_DIRECT read of 4 MiB
 * with a saved index took 257 ms in order, 194 ms at once).
 */
#include "inflate_i.h"

/* Whether @p f, in flight, is behind a read at @p off and near it. */
static bool behind(const struct afz_flight *f, uint64_t off)
{
	return f->live && f->off < off && off - f->off <= AFZ_ORDER_FAR;
}

size_t afz_order_enter(af_inflate *z, uint64_t off, size_t len)
{
	if (len < AFZ_SEQ_MIN)
		return AFZ_NO_FLIGHT;
	pthread_mutex_lock(&z->lock);
	if (z->crc_ok || z->loaded) {
		pthread_mutex_unlock(&z->lock);
		return AFZ_NO_FLIGHT;
	}
	size_t me = AFZ_NO_FLIGHT;
	for (size_t i = 0; i < AFZ_FLIGHTS && me == AFZ_NO_FLIGHT; i++)
		if (!z->flights[i].live)
			me = i;
	if (me != AFZ_NO_FLIGHT) {
		/* counted before waiting, so that a read behind this one that
		 * starts later does not wait for it, and one ahead does */
		z->flights[me].live = true;
		z->flights[me].off = off;
	}
	for (;;) {
		bool wait = false;
		for (size_t i = 0; i < AFZ_FLIGHTS && !wait; i++)
			wait = behind(&z->flights[i], off);
		if (!wait)
			break;
		z->order_waits++;
		pthread_cond_wait(&z->landed, &z->lock);
	}
	pthread_mutex_unlock(&z->lock);
	return me;
}

void afz_order_leave(af_inflate *z, size_t flight)
{
	if (flight == AFZ_NO_FLIGHT)
		return;
	pthread_mutex_lock(&z->lock);
	z->flights[flight].live = false;
	pthread_cond_broadcast(&z->landed);
	pthread_mutex_unlock(&z->lock);
}
