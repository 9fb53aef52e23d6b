/* SPDX-License-Identifier: MIT */
/* Member headers read ahead by worker threads, a bounded window at a time. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "srcpath.h"
#include "stackhdr.h"

enum { HDR_EMPTY = 0, HDR_BUSY, HDR_READY };

/* hd->src: a file of @p size bytes, its first hd->len bytes from hd->buf. */
static void set_source(struct afd_hdr *hd, uint64_t size)
{
	hd->pre = (af_prefix){ hd->fd, hd->buf, hd->len };
	af_source_init_prefix(&hd->src, &hd->pre, size);
}

int afd_hdr_read_prefix(struct afd_hdr *hd, uint64_t size)
{
	hd->len = 0;
	ssize_t got = pread(hd->fd, hd->buf, sizeof(hd->buf), 0);
	if (got < 0)
		return -errno;
	hd->len = (uint32_t)got;
	set_source(hd, size);
	return 0;
}

/* Open, fstat and read the prefix of member hd->i (no lock held). */
static void read_one(struct afd_hdrs *h, struct afd_hdr *hd)
{
	hd->err = 0;
	hd->len = 0;
	hd->fd = afd_srcpath_open_in(h->root, h->dirfd, h->name(h->arg, hd->i),
				     O_RDONLY | O_NONBLOCK);
	if (hd->fd < 0) {
		hd->err = hd->fd;
		hd->fd = -1;
		return;
	}
	if (fstat(hd->fd, &hd->st) < 0) {
		hd->err = -errno;
		return;
	}
	if (!S_ISREG(hd->st.st_mode)) {
		set_source(hd, 0);
		return;
	}
	hd->err = afd_hdr_read_prefix(hd, (uint64_t)hd->st.st_size);
	/* the whole file is in buf: close it here, in parallel, not in the
	 * scan's one thread */
	if (hd->err == 0 && (uint64_t)hd->len == (uint64_t)hd->st.st_size) {
		close(hd->fd);
		hd->fd = -1;
		hd->pre.fd = -1;
	}
}

static void *worker_main(void *arg)
{
	struct afd_hdrs *h = arg;
	pthread_mutex_lock(&h->lock);
	for (;;) {
		/* a batch at a time: one wake-up per batch, not per member */
		while (!h->stop && h->next < h->n &&
		       h->next + AFD_HDR_BATCH > h->consumed + AFD_HDR_WINDOW)
			pthread_cond_wait(&h->cv, &h->lock);
		if (h->stop || h->next >= h->n)
			break;
		uint64_t lo = h->next, hi = lo + AFD_HDR_BATCH;
		if (hi > h->n)
			hi = h->n;
		h->next = hi;
		for (uint64_t i = lo; i < hi; i++) {
			struct afd_hdr *hd = &h->slot[i % AFD_HDR_WINDOW];
			hd->i = i;
			hd->state = HDR_BUSY;
		}
		pthread_mutex_unlock(&h->lock);
		for (uint64_t i = lo; i < hi; i++)
			read_one(h, &h->slot[i % AFD_HDR_WINDOW]);
		pthread_mutex_lock(&h->lock);
		for (uint64_t i = lo; i < hi; i++)
			h->slot[i % AFD_HDR_WINDOW].state = HDR_READY;
		pthread_cond_broadcast(&h->cv);
	}
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

int afd_hdrs_start(struct afd_hdrs **out, const struct afd_srcroot *root,
		   int dirfd, uint64_t n, afd_hdr_name_fn name, void *arg)
{
	struct afd_hdrs *h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->root = root;
	h->dirfd = dirfd;
	h->name = name;
	h->arg = arg;
	h->n = n;
	for (size_t k = 0; k < AFD_HDR_WINDOW; k++)
		h->slot[k].fd = -1;
	pthread_mutex_init(&h->lock, NULL);
	pthread_cond_init(&h->cv, NULL);
	if (n >= AFD_HDR_PARALLEL_MIN)
		for (unsigned k = 0; k < AFD_HDR_WORKERS; k++) {
			/* fewer workers only make it slower, never wrong */
			if (pthread_create(&h->worker[k], NULL, worker_main, h) != 0)
				break;
			h->nworkers++;
		}
	*out = h;
	return 0;
}

struct afd_hdr *afd_hdrs_get(struct afd_hdrs *h, uint64_t i)
{
	struct afd_hdr *hd = &h->slot[i % AFD_HDR_WINDOW];
	if (!h->nworkers) {
		hd->i = i;
		read_one(h, hd);
		return hd;
	}
	pthread_mutex_lock(&h->lock);
	while (hd->state != HDR_READY || hd->i != i)
		pthread_cond_wait(&h->cv, &h->lock);
	pthread_mutex_unlock(&h->lock);
	return hd;
}

void afd_hdrs_put(struct afd_hdrs *h, struct afd_hdr *hd)
{
	if (hd->fd >= 0)
		close(hd->fd);
	hd->fd = -1;
	if (!h->nworkers)
		return;
	pthread_mutex_lock(&h->lock);
	hd->state = HDR_EMPTY;
	h->consumed = hd->i + 1;
	/* workers wait for a whole batch of room */
	if (h->consumed % AFD_HDR_BATCH == 0)
		pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->lock);
}

void afd_hdrs_stop(struct afd_hdrs *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->lock);
	h->stop = true;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->lock);
	for (unsigned k = 0; k < h->nworkers; k++)
		pthread_join(h->worker[k], NULL);
	for (size_t k = 0; k < AFD_HDR_WINDOW; k++)
		if (h->slot[k].fd >= 0)
			close(h->slot[k].fd);
	pthread_cond_destroy(&h->cv);
	pthread_mutex_destroy(&h->lock);
	free(h);
}
