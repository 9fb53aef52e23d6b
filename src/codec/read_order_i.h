/* SPDX-License-Identifier: MIT */
/*
 * Long reads of one decoded stream served in the order of their offsets
 * (read_order.c), for both decoders that have a serial first pass: a
 * deflated member (af_inflate) and an LZ4 block (af_lz4_index).
 */
#ifndef ARRAYFS_READ_ORDER_I_H
#define ARRAYFS_READ_ORDER_I_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A long read: at least this many bytes, as the kernel's read-ahead reads
 * are (a random reader without read-ahead asks 4 KiB at a time), but for
 * the last of a window, which the stream's end cuts short.
 */
#define AFO_LONG (32u << 10)

/* Long reads in flight that order each other; more go unordered. */
#define AFO_FLIGHTS 32u
#define AFO_NONE SIZE_MAX
/* How far behind a long read another one in flight holds it back: the
 * longest O_DIRECT read the kernel splits into 1 MiB requests sent at once
 * that is worth serving in order. */
#define AFO_FAR (16u << 20)

struct afo_flight {
	bool live;
	uint64_t off, end;
};

/* Guarded by the decoder's own mutex, which every call below holds. */
struct afo_gate {
	pthread_cond_t landed; /* broadcast whenever a long read ends */
	struct afo_flight flights[AFO_FLIGHTS];
	uint64_t waits;        /* times a long read waited for one behind */
};

/* Whether a read of [off, off + len) of a stream of @p size bytes is one
 * the gate counts: a long one, or one that ends the stream. */
static inline bool afo_counts(uint64_t off, size_t len, uint64_t size)
{
	return len >= AFO_LONG || (len && off + len == size);
}

/** 0, or an errno value (pthread_cond_init's). */
int afo_init(struct afo_gate *g);
void afo_destroy(struct afo_gate *g);

/**
 * A read of [off, off + len) of a stream of @p size bytes starts during
 * its first pass (the caller knows). One afo_counts is counted, then
 * waits (on @p lock, held) while another one less than AFO_FAR behind it
 * is in flight. Returns what afo_leave takes when it ends.
 */
size_t afo_enter(struct afo_gate *g, pthread_mutex_t *lock, uint64_t off,
		 size_t len, uint64_t size);

/** The read of @p flight (afo_enter's, AFO_NONE is fine) ended; lock
 * held. */
void afo_leave(struct afo_gate *g, size_t flight);

/** Whether a counted read in flight wants bytes of [from, to); lock
 * held. */
bool afo_wanted(const struct afo_gate *g, uint64_t from, uint64_t to);

#endif /* ARRAYFS_READ_ORDER_I_H */
