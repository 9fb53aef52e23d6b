/* SPDX-License-Identifier: MIT */
/*
 * The worker pool of af_pool.h: two FIFOs of jobs under one lock (read-ahead
 * for the worker threads, background work for one thread of its own),
 * threads that run them one at a time, the time a stream was last read,
 * and the budget of read-ahead buffers that decoders reserve from (an
 * atomic count; when it is short, other decoders are asked, by try-lock
 * only, for their idle buffers).
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "pool_i.h"

struct afp_lane {
	pthread_cond_t work;       /* a job was queued, or stop */
	struct afp_job *head, *tail;
};

struct af_pool {
	pthread_mutex_t lock;
	struct afp_lane ahead;     /* read-ahead: the worker threads' */
	struct afp_lane back;      /* background: the background thread's */
	size_t queued;             /* in both */
	bool stop;
	unsigned nthreads;
	pthread_t *threads;
	pthread_t back_thread;
	bool back_started;
	uint64_t stream_ns;        /* atomic: CLOCK_MONOTONIC of the last
				    * stream read, 0: none yet */
	uint64_t budget;
	uint64_t held;             /* atomic */
	struct afp_holder holders; /* list head, under lock */
};

static struct afp_lane *lane_of(af_pool *p, const struct afp_job *job)
{
	return job->background ? &p->back : &p->ahead;
}

uint64_t af_pool_default_budget(unsigned threads)
{
	return (8ull << 20) + (uint64_t)threads * (6ull << 20);
}

/* Unlink @p job from its queue (lock held). */
static void unqueue(af_pool *p, struct afp_job *job)
{
	struct afp_lane *l = lane_of(p, job);
	if (job->prev)
		job->prev->next = job->next;
	else
		l->head = job->next;
	if (job->next)
		job->next->prev = job->prev;
	else
		l->tail = job->prev;
	job->prev = job->next = NULL;
	job->queued = false;
	p->queued--;
}

/* Run the jobs of lane @p l until the pool stops. */
static void serve(af_pool *p, struct afp_lane *l)
{
	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (!l->head && !p->stop)
			pthread_cond_wait(&l->work, &p->lock);
		if (!l->head)
			break;
		struct afp_job *job = l->head;
		unqueue(p, job);
		pthread_mutex_unlock(&p->lock);
		job->run(job); /* may free job */
		pthread_mutex_lock(&p->lock);
	}
	pthread_mutex_unlock(&p->lock);
}

static void *worker(void *arg)
{
	af_pool *p = arg;
	serve(p, &p->ahead);
	return NULL;
}

static void *back_worker(void *arg)
{
	af_pool *p = arg;
	serve(p, &p->back);
	return NULL;
}

static void stop_threads(af_pool *p, unsigned n)
{
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->ahead.work);
	pthread_cond_broadcast(&p->back.work);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < n; i++)
		pthread_join(p->threads[i], NULL);
	if (p->back_started)
		pthread_join(p->back_thread, NULL);
	p->back_started = false;
}

/* A pool of @p threads workers, and with @p back the background thread. */
static af_status open_pool(af_pool **out, unsigned threads, uint64_t budget,
			   bool back, af_error *err)
{
	*out = NULL;
	if (threads > AF_POOL_MAX_THREADS)
		return af_error_set(err, AF_E_INVAL, AF_NO_OFFSET,
				    "a pool runs at most %u threads",
				    AF_POOL_MAX_THREADS);
	af_pool *p = calloc(1, sizeof(*p));
	if (!p)
		goto nomem;
	p->threads = calloc(threads ? threads : 1, sizeof(*p->threads));
	if (!p->threads || pthread_mutex_init(&p->lock, NULL) != 0) {
		free(p->threads);
		free(p);
		goto nomem;
	}
	if (pthread_cond_init(&p->ahead.work, NULL) != 0) {
		pthread_mutex_destroy(&p->lock);
		free(p->threads);
		free(p);
		goto nomem;
	}
	if (pthread_cond_init(&p->back.work, NULL) != 0) {
		pthread_cond_destroy(&p->ahead.work);
		pthread_mutex_destroy(&p->lock);
		free(p->threads);
		free(p);
		goto nomem;
	}
	p->budget = budget;
	p->holders.next = p->holders.prev = &p->holders;
	for (unsigned i = 0; i < threads; i++) {
		if (pthread_create(&p->threads[i], NULL, worker, p) != 0) {
			stop_threads(p, i);
			p->nthreads = 0;
			af_pool_close(p);
			return af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
					    "cannot start inflate thread %u of %u",
					    i + 1, threads);
		}
		p->nthreads = i + 1;
	}
	if (back) {
		if (pthread_create(&p->back_thread, NULL, back_worker, p) != 0) {
			af_pool_close(p);
			return af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
					    "cannot start the background thread");
		}
		p->back_started = true;
	}
	*out = p;
	return AF_OK;
nomem:
	return af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
			    "no memory for a thread pool");
}

af_status af_pool_open(af_pool **out, unsigned threads, uint64_t budget,
		       af_error *err)
{
	return open_pool(out, threads, budget, threads > 0, err);
}

af_status af_pool_open_background(af_pool **out, af_error *err)
{
	return open_pool(out, 0, 0, true, err);
}

void af_pool_close(af_pool *p)
{
	if (!p)
		return;
	if (p->nthreads || p->back_started)
		stop_threads(p, p->nthreads);
	pthread_cond_destroy(&p->ahead.work);
	pthread_cond_destroy(&p->back.work);
	pthread_mutex_destroy(&p->lock);
	free(p->threads);
	free(p);
}

unsigned af_pool_threads(const af_pool *p)
{
	return p ? p->nthreads : 0;
}

uint64_t af_pool_budget(const af_pool *p)
{
	return p ? p->budget : 0;
}

uint64_t af_pool_held(const af_pool *p)
{
	return p ? __atomic_load_n(&p->held, __ATOMIC_RELAXED) : 0;
}

size_t af_pool_queued(af_pool *p)
{
	pthread_mutex_lock(&p->lock);
	size_t n = p->queued;
	pthread_mutex_unlock(&p->lock);
	return n;
}

bool af_pool_run_one(af_pool *p)
{
	pthread_mutex_lock(&p->lock);
	struct afp_job *job = p->ahead.head ? p->ahead.head : p->back.head;
	if (job)
		unqueue(p, job);
	pthread_mutex_unlock(&p->lock);
	if (job)
		job->run(job);
	return job != NULL;
}

void afp_submit(af_pool *p, struct afp_job *job)
{
	pthread_mutex_lock(&p->lock);
	struct afp_lane *l = lane_of(p, job);
	job->next = NULL;
	job->prev = l->tail;
	if (l->tail)
		l->tail->next = job;
	else
		l->head = job;
	l->tail = job;
	job->queued = true;
	p->queued++;
	pthread_cond_signal(&l->work);
	pthread_mutex_unlock(&p->lock);
}

uint64_t afp_now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec + 1;
}

void afp_note_stream(af_pool *p)
{
	__atomic_store_n(&p->stream_ns, afp_now_ns(), __ATOMIC_RELAXED);
}

bool afp_streams_quiet(const af_pool *p, uint64_t ns)
{
	uint64_t at = __atomic_load_n(&p->stream_ns, __ATOMIC_RELAXED);
	return at == 0 || afp_now_ns() - at >= ns;
}

bool afp_take(af_pool *p, struct afp_job *job)
{
	pthread_mutex_lock(&p->lock);
	bool was = job->queued;
	if (was)
		unqueue(p, job);
	pthread_mutex_unlock(&p->lock);
	return was;
}

static void waitable_run(struct afp_job *job)
{
	struct afp_waitable *w = (struct afp_waitable *)job;
	w->work(w);
	pthread_mutex_lock(&w->lock);
	w->pending = false;
	w->by_pool = true;
	pthread_cond_broadcast(&w->done);
	pthread_mutex_unlock(&w->lock);
}

void afp_waitable_init(struct afp_waitable *w,
		       void (*work)(struct afp_waitable *w), bool background)
{
	w->job.run = waitable_run;
	w->job.queued = false;
	w->job.background = background;
	w->work = work;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->done, NULL);
	w->pending = w->by_pool = false;
}

void afp_waitable_destroy(struct afp_waitable *w)
{
	pthread_cond_destroy(&w->done);
	pthread_mutex_destroy(&w->lock);
}

bool afp_waitable_submit(af_pool *p, struct afp_waitable *w)
{
	/* queued under its lock, so settle never sees it pending but not
	 * yet queued */
	pthread_mutex_lock(&w->lock);
	bool queue = !w->pending;
	if (queue) {
		w->pending = true;
		afp_submit(p, &w->job);
	}
	pthread_mutex_unlock(&w->lock);
	return queue;
}

void afp_waitable_settle(af_pool *p, struct afp_waitable *w)
{
	pthread_mutex_lock(&w->lock);
	if (w->pending && afp_take(p, &w->job)) {
		pthread_mutex_unlock(&w->lock);
		w->work(w);
		pthread_mutex_lock(&w->lock);
		w->pending = false;
		w->by_pool = false;
	}
	while (w->pending)
		pthread_cond_wait(&w->done, &w->lock);
	pthread_mutex_unlock(&w->lock);
}

void afp_holder_add(af_pool *p, struct afp_holder *h)
{
	pthread_mutex_lock(&p->lock);
	h->next = p->holders.next;
	h->prev = &p->holders;
	p->holders.next->prev = h;
	p->holders.next = h;
	h->listed = true;
	pthread_mutex_unlock(&p->lock);
}

void afp_holder_remove(af_pool *p, struct afp_holder *h)
{
	pthread_mutex_lock(&p->lock);
	if (h->listed) {
		h->prev->next = h->next;
		h->next->prev = h->prev;
		h->listed = false;
	}
	pthread_mutex_unlock(&p->lock);
}

static bool try_reserve(af_pool *p, uint64_t n)
{
	uint64_t cur = __atomic_load_n(&p->held, __ATOMIC_RELAXED);
	do {
		if (n > p->budget || cur > p->budget - n)
			return false;
	} while (!__atomic_compare_exchange_n(&p->held, &cur, cur + n, true,
					      __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	return true;
}

bool afp_reserve(af_pool *p, struct afp_holder *self, uint64_t n)
{
	if (try_reserve(p, n))
		return true;
	if (n > p->budget)
		return false;
	pthread_mutex_lock(&p->lock);
	bool ok = false;
	for (struct afp_holder *h = p->holders.next; h != &p->holders && !ok;
	     h = h->next) {
		if (h != self && h->reclaim(h))
			ok = try_reserve(p, n);
	}
	pthread_mutex_unlock(&p->lock);
	return ok;
}

void afp_unreserve(af_pool *p, uint64_t n)
{
	__atomic_fetch_sub(&p->held, n, __ATOMIC_RELAXED);
}
