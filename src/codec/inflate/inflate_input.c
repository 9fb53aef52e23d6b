/* SPDX-License-Identifier: MIT */
/*
 * Compressed input of a cursor: one pread a refill, or, for the pass from
 * byte 0 of a stream with a pool, the next buffer read by another pool
 * thread while this one inflates. A first pass runs at one core's speed,
 * and copying its input out of the page cache is about a tenth of that
 * core's time; the other core is mostly idle then.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "inflate_cursor_i.h"

/* The next buffer of a cursor, read by a pool thread. */
struct afz_input_ahead {
	struct afp_waitable w; /* first */
	const af_source *src;
	bool queued;         /* owner's: read asked for, not yet taken */
	unsigned char *buf;  /* o.inbuf bytes; the pool's while pending */
	uint64_t at;         /* compressed offset read */
	size_t len;          /* bytes asked */
	ssize_t got;         /* pread's result */
};

static void ahead_pread(struct afp_waitable *w)
{
	struct afz_input_ahead *a = (struct afz_input_ahead *)w;
	a->got = a->src->pread(a->src, a->buf, a->len, a->at);
}

void afz_input_drop(af_inflate *z, struct afz_cursor *c)
{
	struct afz_input_ahead *a = c->ahead;
	if (!a)
		return;
	afp_waitable_settle(z->pool, &a->w);
	afp_waitable_destroy(&a->w);
	free(a->buf);
	afz_mem_sub(z, z->o.inbuf + sizeof(*a));
	free(a);
	c->ahead = NULL;
	__atomic_store_n(&z->input_ahead_held, false, __ATOMIC_RELEASE);
}

/* Whether the cursor reads on long enough for a second buffer to pay. */
static bool wants_ahead(const af_inflate *z, const struct afz_cursor *c)
{
	return z->pool && c->from_start && !c->eof && c->ask == z->o.inbuf;
}

/* The second buffer, if no other cursor of @p z holds one: one stream's
 * input read ahead costs one more o.inbuf at most. */
static struct afz_input_ahead *ahead_new(af_inflate *z)
{
	bool no = false;
	if (!__atomic_compare_exchange_n(&z->input_ahead_held, &no, true,
					 false, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED))
		return NULL;
	struct afz_input_ahead *a = calloc(1, sizeof(*a));
	unsigned char *buf = malloc(z->o.inbuf);
	if (!a || !buf) {
		free(a);
		free(buf);
		__atomic_store_n(&z->input_ahead_held, false, __ATOMIC_RELEASE);
		return NULL;
	}
	a->buf = buf;
	afz_mem_add(z, z->o.inbuf + sizeof(*a));
	afp_waitable_init(&a->w, ahead_pread, false);
	a->src = z->src;
	return a;
}

/* Queue the read of the buffer after the one just taken. */
static void ahead_start(af_inflate *z, struct afz_cursor *c)
{
	if (!c->ahead)
		c->ahead = ahead_new(z);
	struct afz_input_ahead *a = c->ahead;
	if (!a)
		return; /* another cursor has it, or no memory: read as without */
	a->at = c->in;
	a->len = c->ask;
	a->queued = afp_waitable_submit(z->pool, &a->w);
}

/* Take the buffer read ahead if it is the one due: true if taken. */
static bool ahead_take(af_inflate *z, struct afz_cursor *c, ssize_t *n)
{
	struct afz_input_ahead *a = c->ahead;
	if (!a || !a->queued)
		return false;
	afp_waitable_settle(z->pool, &a->w);
	a->queued = false;
	/* a failed read is read again below, where it is reported */
	if (a->at != c->in || a->got < 0 || (size_t)a->got > a->len)
		return false;
	unsigned char *mine = c->inbuf;
	c->inbuf = a->buf;
	a->buf = mine;
	*n = a->got;
	if (a->w.by_pool)
		__atomic_add_fetch(&z->inputs_ahead, 1, __ATOMIC_RELAXED);
	return true;
}

af_status afz_refill(af_inflate *z, struct afz_cursor *c, af_error *err)
{
	size_t ask = c->ask ? c->ask : z->o.inbuf;
	ssize_t n;
	if (!ahead_take(z, c, &n))
		n = z->src->pread(z->src, c->inbuf, ask, c->in);
	if (n < 0) {
		af_error_set(err, AF_E_IO, c->in,
			     "reading compressed byte %llu failed: %s",
			     ull(c->in), strerror((int)-n));
		if (err)
			err->sys_errno = (int)-n;
		return AF_E_IO;
	}
	if ((size_t)n > ask)
		return af_error_set(err, AF_E_IO, c->in,
				    "source returned more bytes than asked at "
				    "compressed byte %llu", ull(c->in));
	c->eof = n == 0;
	c->next_in = c->inbuf;
	c->avail_in = (size_t)n;
	c->in += (uint64_t)n;
	c->ask = ask > z->o.inbuf / 2 ? z->o.inbuf : 2 * ask;
	if (wants_ahead(z, c))
		ahead_start(z, c);
	return AF_OK;
}
