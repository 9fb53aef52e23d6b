/* SPDX-License-Identifier: MIT */
/* A file's head: its stat and first bytes, for a header parse that costs
 * one pread (af_readahead.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "arrayfs/af_readahead.h"

int af_head_openat(void *arg, int dfd, const char *name)
{
	(void)arg;
	/* O_NONBLOCK: a fifo named like an array must not hang the reader */
	int fd = openat(dfd, name,
			O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	return fd < 0 ? -errno : fd;
}

/* h->src: the file of @p size bytes, its first h->len bytes from h->buf. */
static void set_source(af_head *h, uint64_t size)
{
	h->pre = (af_prefix){ h->fd, h->buf, h->len };
	af_source_init_prefix(&h->src, &h->pre, size);
}

int af_head_read_fd(af_head *h, int fd, uint64_t size)
{
	h->fd = fd;
	h->len = 0;
	ssize_t got;
	do
		got = pread(fd, h->buf, h->cap, 0);
	while (got < 0 && errno == EINTR);
	if (got < 0)
		return h->err = -errno;
	h->len = (size_t)got;
	set_source(h, size);
	return h->err = 0;
}

void af_head_close(af_head *h)
{
	if (h->fd >= 0)
		close(h->fd);
	h->fd = -1;
	h->pre.fd = -1;
}

int af_head_read_at(af_head *h, af_head_open_fn opener, void *arg, int dfd,
		    const char *name)
{
	h->len = 0;
	h->err = 0;
	h->fd = opener(arg, dfd, name);
	if (h->fd < 0) {
		h->err = h->fd;
		h->fd = -1;
		return h->err;
	}
	if (fstat(h->fd, &h->st) < 0) {
		h->err = -errno;
		af_head_close(h);
		return h->err;
	}
	if (!S_ISREG(h->st.st_mode) || h->st.st_size < 0) {
		/* nothing of it is read: the caller says what it is */
		af_head_close(h);
		set_source(h, 0);
		return 0;
	}
	if (af_head_read_fd(h, h->fd, (uint64_t)h->st.st_size) < 0) {
		af_head_close(h);
		return h->err;
	}
	/* the whole file is in buf: a parse reads nothing past it, so the fd
	 * is closed here, maybe on a worker, not on the parsing thread */
	if ((uint64_t)h->len >= (uint64_t)h->st.st_size)
		af_head_close(h);
	return 0;
}
