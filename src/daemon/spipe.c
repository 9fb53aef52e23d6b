/* SPDX-License-Identifier: MIT */
/* Per-thread splice pipes: source bytes are spliced and checked before a reply. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "spipe.h"

/* Room for the largest read the kernel sends (max_pages x 4 KiB). */
#define AFD_SPIPE_SIZE (1u << 20)

struct afd_spipe {
	int fd[2];
};

static void spipe_close(struct afd_spipe *p)
{
	if (p->fd[0] >= 0)
		close(p->fd[0]);
	if (p->fd[1] >= 0)
		close(p->fd[1]);
	p->fd[0] = p->fd[1] = -1;
}

static int spipe_open(struct afd_spipe *p)
{
	if (pipe2(p->fd, O_CLOEXEC | O_NONBLOCK) < 0) {
		p->fd[0] = p->fd[1] = -1;
		return -errno;
	}
	/* a smaller pipe still works: the rest of a read is then copied */
	fcntl(p->fd[1], F_SETPIPE_SZ, AFD_SPIPE_SIZE);
	return 0;
}

static void spipe_free(void *arg)
{
	struct afd_spipe *p = arg;
	spipe_close(p);
	free(p);
}

int afd_spipe_key_create(pthread_key_t *key)
{
	return -pthread_key_create(key, spipe_free);
}

void afd_spipe_key_delete(pthread_key_t key)
{
	/* the calling thread's own pipe: other threads' went with them */
	struct afd_spipe *p = pthread_getspecific(key);
	if (p)
		spipe_free(p);
	pthread_key_delete(key);
}

struct afd_spipe *afd_spipe_get(pthread_key_t key)
{
	struct afd_spipe *p = pthread_getspecific(key);
	if (p && p->fd[0] >= 0)
		return p;
	if (!p) {
		p = malloc(sizeof(*p));
		if (!p)
			return NULL;
		p->fd[0] = p->fd[1] = -1;
		if (pthread_setspecific(key, p) != 0) {
			free(p);
			return NULL;
		}
	}
	return spipe_open(p) == 0 ? p : NULL;
}

ssize_t afd_spipe_fill(struct afd_spipe *p, int fd, off_t pos, size_t len)
{
	size_t done = 0;
	while (done < len) {
		loff_t at = pos + (off_t)done;
		ssize_t n = splice(fd, &at, p->fd[1], NULL, len - done,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)  /* the pipe is full */
				break;
			return -errno;
		}
		if (n == 0)  /* end of the file */
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

int afd_spipe_fd(const struct afd_spipe *p)
{
	return p->fd[0];
}

void afd_spipe_reset(struct afd_spipe *p)
{
	int left = 0;
	if (p->fd[0] >= 0 && ioctl(p->fd[0], FIONREAD, &left) == 0 && left == 0)
		return;
	/* bytes of a failed reply are still in it: start afresh */
	spipe_close(p);
	spipe_open(p);
}
