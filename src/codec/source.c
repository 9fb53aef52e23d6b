/* SPDX-License-Identifier: MIT */
/* File-descriptor and memory byte sources, and the exact-read helper. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "arrayfs/af_source.h"

static ssize_t fd_pread(const af_source *src, void *buf, size_t len,
			uint64_t off)
{
	if (off >= src->size)
		return 0;
	if (len > src->size - off)
		len = src->size - off;
	uint64_t at = src->fd_base + off;
	if (at < off || at > (uint64_t)INT64_MAX)
		return -EOVERFLOW;
	for (;;) {
		ssize_t n = pread(src->fd, buf, len, (off_t)at);
		if (n >= 0 || errno != EINTR)
			return n < 0 ? -errno : n;
	}
}

static ssize_t mem_pread(const af_source *src, void *buf, size_t len,
			 uint64_t off)
{
	if (off >= src->size)
		return 0;
	if (len > src->size - off)
		len = src->size - off;
	memcpy(buf, src->mem + off, len);
	return (ssize_t)len;
}

void af_source_init_fd(af_source *src, int fd, uint64_t base, uint64_t size)
{
	memset(src, 0, sizeof(*src));
	src->pread = fd_pread;
	src->fd = fd;
	src->fd_base = base;
	src->size = size;
}

void af_source_init_mem(af_source *src, const void *buf, size_t len)
{
	memset(src, 0, sizeof(*src));
	src->pread = mem_pread;
	src->fd = -1;
	src->mem = buf;
	src->size = len;
}

/* Within the prefix a copy, else what an fd source over the file reads. */
static ssize_t prefix_pread(const af_source *src, void *buf, size_t len,
			    uint64_t off)
{
	const af_prefix *p = src->ctx;
	if (off >= src->size)
		return 0;
	if (len > src->size - off)
		len = src->size - off;
	if (off < p->len && len <= p->len - off) {
		memcpy(buf, p->buf + off, len);
		return (ssize_t)len;
	}
	af_source file;
	af_source_init_fd(&file, p->fd, 0, src->size);
	return fd_pread(&file, buf, len, off);
}

void af_source_init_prefix(af_source *src, const af_prefix *p, uint64_t size)
{
	memset(src, 0, sizeof(*src));
	src->pread = prefix_pread;
	src->fd = -1;
	src->ctx = (void *)p;
	src->size = size;
}

af_status af_source_read_exact(const af_source *src, void *buf, size_t len,
			       uint64_t off, af_error *err)
{
	if (off + len < off)
		return af_error_set(err, AF_E_RANGE, off,
				    "read of %zu bytes at %llu overflows", len,
				    (unsigned long long)off);
	unsigned char *p = buf;
	size_t done = 0;
	while (done < len) {
		/* pread may return short counts (fd at a boundary); loop */
		ssize_t n = src->pread(src, p + done, len - done, off + done);
		if (n < 0) {
			af_error_set(err, AF_E_IO, off + done,
				     "read failed at byte %llu: %s",
				     (unsigned long long)(off + done),
				     strerror((int)-n));
			if (err)
				err->sys_errno = (int)-n;
			return AF_E_IO;
		}
		if (n == 0)
			return af_error_set(err, AF_E_TRUNCATED, off + done,
					    "source ends at byte %llu, %zu bytes short",
					    (unsigned long long)(off + done),
					    len - done);
		done += (size_t)n;
	}
	return AF_OK;
}
