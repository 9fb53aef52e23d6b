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

#include "inflate_i.h"

enum { AHEAD_IDLE, AHEAD_PENDING, AHEAD_DONE };

/* The next buffer of a cursor, read by a pool thread. */
struct afz_input_ahead {
	struct afp_job job;  /* first: the job is the whole */
	const af_source *src;
	pthread_mutex_t lock;
	pthread_cond_t done;
	int state;           /* AHEAD_*, under lock */
	unsigned char *buf;  /* o.inbuf bytes; the pool thread's while pending */
	uint64_t at;         /* compressed offset read */
	size_t len;          /* bytes asked */
	ssize_t got;         /* pread's result */
	bool by_pool;        /* a pool thread read it (not taken back) */
};

static void ahead_pread(struct afz_input_ahead *a)
{
	a->got = a->src->pread(a->src, a->buf, a->len, a->at);
}

static void ahead_run(struct afp_job *job)
{
	struct afz_input_ahead *a = (struct afz_input_ahead *)job;
	ahead_pread(a);
	pthread_mutex_lock(&a->lock);
	a->by_pool = true;
	a->state = AHEAD_DONE;
	pthread_cond_signal(&a->done);
	pthread_mutex_unlock(&a->lock);
}

/* Wait until @p a is not pending: a job still queued is taken back and
 * read here (the pool may be busy with longer work). Afterwards only the
 * cursor's owner touches @p a until it queues it again. */
static void ahead_settle(af_inflate *z, struct afz_input_ahead *a)
{
	pthread_mutex_lock(&a->lock);
	if (a->state == AHEAD_PENDING && afp_take(z->pool, &a->job)) {
		pthread_mutex_unlock(&a->lock);
		ahead_pread(a);
		pthread_mutex_lock(&a->lock);
		a->state = AHEAD_DONE;
	}
	while (a->state == AHEAD_PENDING)
		pthread_cond_wait(&a->done, &a->lock);
	pthread_mutex_unlock(&a->lock);
}

void afz_input_drop(af_inflate *z, struct afz_cursor *c)
{
	struct afz_input_ahead *a = c->ahead;
	if (!a)
		return;
	ahead_settle(z, a);
	pthread_cond_destroy(&a->done);
	pthread_mutex_destroy(&a->lock);
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
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->done, NULL);
	a->job.run = ahead_run;
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
	a->by_pool = false;
	a->state = AHEAD_PENDING;
	afp_submit(z->pool, &a->job);
}

/* Take the buffer read ahead if it is the one due: true if taken. */
static bool ahead_take(af_inflate *z, struct afz_cursor *c, ssize_t *n)
{
	struct afz_input_ahead *a = c->ahead;
	if (!a)
		return false;
	ahead_settle(z, a);
	if (a->state == AHEAD_IDLE)
		return false;
	a->state = AHEAD_IDLE;
	/* a failed read is read again below, where it is reported */
	if (a->at != c->in || a->got < 0 || (size_t)a->got > a->len)
		return false;
	unsigned char *mine = c->inbuf;
	c->inbuf = a->buf;
	a->buf = mine;
	*n = a->got;
	if (a->by_pool)
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
