/* SPDX-License-Identifier: MIT */
/* Helpers of the daemon core's unit tests: a context with nothing mounted. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon_test.h"
#include "handle.h"

static uint64_t test_now(void *arg)
{
	return ((struct aftd_clock *)arg)->now_ms;
}

void aftd_ctx_open(struct afd_ctx *c, const char *dir, struct aftd_clock *clk)
{
	struct afd_opts o = { .entry_timeout = 1, .neg_timeout = 1,
			      .uid = -1, .gid = -1 };
	afd_limits_default(&o.limits);
	o.source = strdup(dir);
	ck_assert_ptr_nonnull(o.source);
	ck_assert_int_eq(afd_ctx_init(c, &o), 0);
	if (clk)
		c->clock = (struct afd_clock){ test_now, clk };
}

char *aftd_text_of(struct afd_ctx *c, struct afd_node *n)
{
	struct afd_handle *h = aftd_open(c, n);
	size_t len;
	unsigned char *t = aftd_read_ok(c, h, 0, 1 << 20, &len);
	afd_handle_close(h);
	char *s = realloc(t, len + 1);
	ck_assert_ptr_nonnull(s);
	s[len] = '\0';
	return s;
}

void aftd_log_capture(struct afd_ctx *c)
{
	c->log.out = tmpfile();
	ck_assert_ptr_nonnull(c->log.out);
}

char *aftd_log_said(struct afd_ctx *c)
{
	fflush(c->log.out);
	long n = ftell(c->log.out);
	ck_assert_int_ge(n, 0);
	char *s = calloc(1, (size_t)n + 1);
	ck_assert_ptr_nonnull(s);
	rewind(c->log.out);
	ck_assert_uint_eq(fread(s, 1, (size_t)n, c->log.out), (size_t)n);
	return s;
}

void aftd_log_release(struct afd_ctx *c)
{
	fclose(c->log.out);
	c->log.out = stderr;
}

char *aftd_tmp_new(void)
{
	const char *base = getenv("TMPDIR");
	char *dir = NULL;
	ck_assert_int_ge(asprintf(&dir, "%s/afd-unit-XXXXXX",
				  base && *base ? base : "/tmp"), 0);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	return dir;
}

static int remove_one(const char *path, const struct stat *st, int flag,
		      struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

void aftd_tmp_free(char *dir)
{
	ck_assert_int_eq(nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS), 0);
	free(dir);
}

const char *aftd_path(const char *dir, const char *name)
{
	static __thread char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return path;
}

void aftd_write(const char *dir, const char *name, const void *buf, size_t len)
{
	const char *path = aftd_path(dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ck_assert_msg(fd >= 0, "cannot write %s: %s", path, strerror(errno));
	ck_assert_int_eq(write(fd, buf, len), (ssize_t)len);
	close(fd);
}

unsigned char *aftd_npy_bytes(size_t n, unsigned seed, size_t *len)
{
	char dict[128];
	int dl = snprintf(dict, sizeof(dict), "{'descr': '|u1', "
			  "'fortran_order': False, 'shape': (%zu,), }", n);
	/* magic, version, length, dict, spaces and '\n' to a multiple of 64 */
	size_t head = ((10 + (size_t)dl + 1 + 63) / 64) * 64;
	size_t total = head + n;
	unsigned char *buf = malloc(total);
	ck_assert_ptr_nonnull(buf);
	memcpy(buf, "\x93NUMPY\x01\x00", 8);
	buf[8] = (unsigned char)((head - 10) & 0xff);
	buf[9] = (unsigned char)((head - 10) >> 8);
	memset(buf + 10, ' ', head - 10);
	memcpy(buf + 10, dict, (size_t)dl);
	buf[head - 1] = '\n';
	for (size_t i = 0; i < n; i++)
		buf[head + i] = (unsigned char)(seed + i);
	*len = total;
	return buf;
}

size_t aftd_write_npy(const char *dir, const char *name, size_t n,
		      unsigned seed)
{
	size_t total;
	unsigned char *buf = aftd_npy_bytes(n, seed, &total);
	aftd_write(dir, name, buf, total);
	free(buf);
	return total;
}

static void put_u64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

void aftd_write_lz4_ra(const char *dir, const char *name, size_t n)
{
	/* one LZ4 sequence of n literals and no match: a valid last sequence */
	size_t ext = n >= 15 ? (n - 15) / 255 + 1 : 0;
	size_t block = 1 + ext + n;
	size_t total = 56 + block;
	unsigned char *buf = calloc(1, total);
	ck_assert_ptr_nonnull(buf);
	put_u64(buf, 0x7961727261776172ull);   /* "rawarray" */
	put_u64(buf + 8, 2);                    /* flags: LZ4 */
	put_u64(buf + 16, 2);                   /* eltype: unsigned */
	put_u64(buf + 24, 1);                   /* elbyte */
	put_u64(buf + 32, block);               /* size: the block's */
	put_u64(buf + 40, 1);                   /* ndims */
	put_u64(buf + 48, n);
	unsigned char *p = buf + 56;
	*p++ = (unsigned char)((n >= 15 ? 15 : n) << 4);
	if (n >= 15) {
		size_t v = n - 15;
		for (; v >= 255; v -= 255)
			*p++ = 255;
		*p++ = (unsigned char)v;
	}
	for (size_t i = 0; i < n; i++)
		*p++ = (unsigned char)(i * 7);
	ck_assert_uint_eq((size_t)(p - buf), total);
	aftd_write(dir, name, buf, total);
	free(buf);
}

void aftd_copy(const char *from, const char *dir, const char *name)
{
	size_t len;
	unsigned char *buf = aft_read_file(from, &len);
	aftd_write(dir, name, buf, len);
	free(buf);
}

struct stat aftd_lstat(const char *dir, const char *name)
{
	struct stat st;
	const char *path = aftd_path(dir, name);
	ck_assert_msg(lstat(path, &st) == 0, "lstat %s: %s", path,
		      strerror(errno));
	return st;
}

struct afd_node *aftd_lookup(struct afd_ctx *c, struct afd_node *parent,
			     const char *name, int *rc, struct stat *attr)
{
	struct afd_id id;
	struct afd_res r;
	int e = afd_lookup(c, parent, name, 0, &id, &r, NULL);
	if (rc)
		*rc = e;
	if (e < 0)
		return NULL;
	if (attr)
		afd_attr(c, &id, &r, attr);
	int created;
	/* with its chunk index: B.zarr/ chunks differ by it alone */
	struct afd_node *n = afd_nodes_get_sub(&c->nodes, id.kind, id.entry,
					       id.path, id.member,
					       afd_version_of(&id, &r), id.sub,
					       afd_nodes_id(&c->nodes, parent),
					       name, &r.st, &created);
	afd_res_release(&r);
	afd_id_free(&id);
	ck_assert_ptr_nonnull(n);
	return n;
}

struct afd_node *aftd_must(struct afd_ctx *c, struct afd_node *parent,
			   const char *name)
{
	int rc = 0;
	struct afd_node *n = aftd_lookup(c, parent, name, &rc, NULL);
	ck_assert_msg(n != NULL, "lookup of %s in %s: %s", name, parent->path,
		      strerror(-rc));
	return n;
}

int aftd_forget(struct afd_ctx *c, struct afd_node *node, uint64_t n)
{
	struct afd_node *gone = afd_nodes_forget(&c->nodes, node, n);
	if (!gone)
		return 0;
	afd_notify_unwatch(c, gone->wd);
	afd_openless_unbind(&c->openless, gone);
	afd_node_free(gone);
	return 1;
}

struct afd_handle *aftd_open(struct afd_ctx *c, struct afd_node *n)
{
	struct afd_handle *h = NULL;
	bool keep_cache;
	int rc = afd_handle_open(c, n, O_RDONLY, &h, &keep_cache, NULL);
	ck_assert_msg(rc == 0, "open of %s (%s): %s", afd_node_name(n), n->path,
		      strerror(-rc));
	return h;
}

int aftd_read(struct afd_ctx *c, struct afd_handle *h, uint64_t off,
	      size_t size, unsigned char **out, size_t *len)
{
	struct afd_rbuf rb;
	*out = NULL;
	*len = 0;
	int rc = afd_handle_read(c, h, size, (off_t)off, false, &rb, NULL);
	if (rc == 0) {
		/* what libfuse does with the reply: pieces, spliced or not,
		 * copied out in order */
		size_t total = fuse_buf_size(rb.bv);
		*out = malloc(total ? total : 1);
		ck_assert_ptr_nonnull(*out);
		struct fuse_bufvec dst = FUSE_BUFVEC_INIT(total);
		dst.buf[0].mem = *out;
		ssize_t got = fuse_buf_copy(&dst, rb.bv, 0);
		ck_assert_int_eq(got, (ssize_t)total);
		*len = total;
	}
	afd_rbuf_free(&rb);
	return rc;
}

unsigned char *aftd_read_ok(struct afd_ctx *c, struct afd_handle *h,
			    uint64_t off, size_t size, size_t *len)
{
	unsigned char *out;
	int rc = aftd_read(c, h, off, size, &out, len);
	ck_assert_msg(rc == 0, "read of %zu bytes at %llu: %s", size,
		      (unsigned long long)off, strerror(-rc));
	return out;
}

void aftd_expect_read(struct afd_ctx *c, struct afd_handle *h, uint64_t off,
		      size_t size, const unsigned char *want, size_t total)
{
	size_t len;
	unsigned char *got = aftd_read_ok(c, h, off, size, &len);
	size_t expect = off >= total ? 0 :
			size < total - off ? size : (size_t)(total - off);
	ck_assert_msg(len == expect, "read of %zu at %llu: %zu bytes, not %zu",
		      size, (unsigned long long)off, len, expect);
	size_t i = 0;
	while (i < len && got[i] == want[off + i])
		i++;
	ck_assert_msg(i == len, "read of %zu at %llu: byte %llu is %u, not %u",
		      size, (unsigned long long)off,
		      (unsigned long long)(off + i), i < len ? got[i] : 0,
		      i < len ? want[off + i] : 0);
	free(got);
}

void aftd_expect_reads(struct afd_ctx *c, struct afd_handle *h,
		       const unsigned char *want, size_t total)
{
	aftd_expect_read(c, h, 0, 100, want, total);
	aftd_expect_read(c, h, 0, total, want, total);
	aftd_expect_read(c, h, total / 2, 50, want, total);
	aftd_expect_read(c, h, 1, total > 20000 ? 20000 : total, want, total);
	aftd_expect_read(c, h, total > 10 ? total - 10 : 0, 4096, want, total);
	aftd_expect_read(c, h, total > 9000 ? total - 9000 : 0, 65536, want,
			 total);
	aftd_expect_read(c, h, total, 4096, want, total);
	aftd_expect_read(c, h, total + 12345, 10, want, total);
}

void aftd_expect_eio(struct afd_ctx *c, struct afd_handle *h, uint64_t off,
		     size_t size)
{
	unsigned char *got;
	size_t len;
	int rc = aftd_read(c, h, off, size, &got, &len);
	ck_assert_msg(rc == -EIO, "read of %zu at %llu: %d, not EIO", size,
		      (unsigned long long)off, rc);
	ck_assert_ptr_null(got);
}

void aftd_rewrite_npy(const char *dir, const char *name, size_t n)
{
	struct stat before = aftd_lstat(dir, name);
	aftd_write_npy(dir, name, n, 200);
	struct timespec t[2] = { before.st_atim, before.st_mtim };
	t[1].tv_sec -= 100;
	ck_assert_int_eq(utimensat(AT_FDCWD, aftd_path(dir, name), t, 0), 0);
	ck_assert_uint_eq(aftd_lstat(dir, name).st_ino, before.st_ino);
}
