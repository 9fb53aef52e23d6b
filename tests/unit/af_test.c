/* SPDX-License-Identifier: MIT */
/* Helpers shared by the Check unit tests. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "af_test.h"

static const char *join_env(const char *var, const char *rel)
{
	static __thread char path[4096];
	const char *dir = getenv(var);
	ck_assert_msg(dir != NULL, "%s is not set (run through meson test)", var);
	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	return path;
}

const char *aft_fixture(const char *rel)
{
	return join_env("AF_FIXTURES", rel);
}

const char *aft_reference(const char *rel)
{
	return join_env("AF_REFERENCE", rel);
}

unsigned char *aft_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	long n = ftell(f);
	ck_assert_int_ge(n, 0);
	rewind(f);
	unsigned char *buf = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

unsigned char *aft_ra_data(const char *path, size_t *len)
{
	size_t n;
	unsigned char *raw = aft_read_file(path, &n);
	ck_assert_uint_ge(n, 48);
	size_t head = 48 + 8 * (size_t)raw[40];
	ck_assert_uint_ge(n, head);
	memmove(raw, raw + head, n - head);
	*len = n - head;
	return raw;
}

int aft_open_fd_source(const char *path, af_source *src)
{
	int fd = open(path, O_RDONLY);
	ck_assert_msg(fd >= 0, "cannot open %s", path);
	struct stat st;
	ck_assert_int_eq(fstat(fd, &st), 0);
	af_source_init_fd(src, fd, 0, (uint64_t)st.st_size);
	return fd;
}

unsigned char *aft_deflate_raw(const unsigned char *in, size_t n, int level,
			       int memlevel, size_t *clen)
{
	z_stream zs;
	memset(&zs, 0, sizeof(zs));
	ck_assert_int_eq(deflateInit2(&zs, level, Z_DEFLATED, -15, memlevel,
				      Z_DEFAULT_STRATEGY), Z_OK);
	size_t cap = deflateBound(&zs, n);
	unsigned char *out = malloc(cap);
	ck_assert_ptr_nonnull(out);
	zs.next_in = (unsigned char *)in;
	zs.avail_in = (uInt)n;
	zs.next_out = out;
	zs.avail_out = (uInt)cap;
	ck_assert_int_eq(deflate(&zs, Z_FINISH), Z_STREAM_END);
	*clen = cap - zs.avail_out;
	deflateEnd(&zs);
	return out;
}

static unsigned char *put_le(unsigned char *p, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		*p++ = (unsigned char)(v >> (8 * i));
	return p;
}

/* The fields local and central headers share, from "version needed". */
static unsigned char *put_common(unsigned char *p, int method, uint32_t crc,
				 size_t clen, size_t n, size_t name_len)
{
	p = put_le(p, 20, 2);  /* version needed */
	p = put_le(p, 0, 2);   /* flags */
	p = put_le(p, (uint64_t)method, 2);  /* method */
	p = put_le(p, 0, 4);   /* time, date */
	p = put_le(p, crc, 4);
	p = put_le(p, clen, 4);
	p = put_le(p, n, 4);
	p = put_le(p, name_len, 2);
	return put_le(p, 0, 2); /* extra */
}

unsigned char *aft_zip(const struct aft_zip_member *m, size_t count,
		       size_t *len)
{
	unsigned char **comp = calloc(count ? count : 1, sizeof(*comp));
	size_t *clen = calloc(count ? count : 1, sizeof(*clen));
	ck_assert(comp && clen);
	size_t local = 0, central = 0;
	for (size_t i = 0; i < count; i++) {
		if (m[i].level >= 0) {
			comp[i] = aft_deflate_raw(m[i].plain, m[i].n, m[i].level,
						  8, &clen[i]);
		} else {
			comp[i] = malloc(m[i].n ? m[i].n : 1);
			ck_assert_ptr_nonnull(comp[i]);
			memcpy(comp[i], m[i].plain, m[i].n);
			clen[i] = m[i].n;
		}
		local += 30 + strlen(m[i].name) + clen[i];
		central += 46 + strlen(m[i].name);
	}
	unsigned char *z = malloc(local + central + 22);
	ck_assert_ptr_nonnull(z);
	unsigned char *p = z;
	for (int pass = 0; pass < 2; pass++) {
		size_t at = 0;  /* the member's local header */
		for (size_t i = 0; i < count; i++) {
			size_t nl = strlen(m[i].name);
			int method = m[i].level >= 0 ? 8 : 0;
			uint32_t crc = (uint32_t)crc32_z(crc32(0, NULL, 0),
							 m[i].plain, m[i].n);
			p = put_le(p, pass ? 0x02014b50 : 0x04034b50, 4);
			if (pass)
				p = put_le(p, 20, 2);  /* version made by */
			p = put_common(p, method, crc, clen[i], m[i].n, nl);
			if (pass) {
				/* comment length, disk, internal and
				 * external attrs, local header offset */
				p = put_le(p, 0, 6);
				p = put_le(p, 0, 4);
				p = put_le(p, at, 4);
			}
			memcpy(p, m[i].name, nl);
			p += nl;
			if (!pass) {
				memcpy(p, comp[i], clen[i]);
				p += clen[i];
			}
			at += 30 + nl + clen[i];
		}
	}
	p = put_le(p, 0x06054b50, 4);
	p = put_le(p, 0, 4);   /* disks */
	p = put_le(p, count, 2);
	p = put_le(p, count, 2);
	p = put_le(p, central, 4);
	p = put_le(p, local, 4);
	put_le(p, 0, 2);       /* comment */
	for (size_t i = 0; i < count; i++)
		free(comp[i]);
	free(comp);
	free(clen);
	*len = local + central + 22;
	return z;
}

unsigned char *aft_zip_deflated(const char *name, const unsigned char *plain,
				size_t n, int level, size_t *len)
{
	struct aft_zip_member m = { name, plain, n, level };
	return aft_zip(&m, 1, len);
}

unsigned char *aft_zip_stored(const char *name, const unsigned char *plain,
			      size_t n, size_t *len)
{
	struct aft_zip_member m = { name, plain, n, -1 };
	return aft_zip(&m, 1, len);
}

uint64_t aft_rand(uint64_t *state)
{
	*state ^= *state >> 12;
	*state ^= *state << 25;
	*state ^= *state >> 27;
	return *state * 0x2545F4914F6CDD1DULL;
}

af_array aft_hand_array(const char *typestr, bool fortran, unsigned ndim,
			const uint64_t *shape)
{
	af_array a;
	memset(&a, 0, sizeof(a));
	a.format = AF_FORMAT_NPY;
	a.version_major = 1;
	ck_assert_int_eq(af_dtype_parse_typestr(typestr, strlen(typestr),
						&a.dtype, NULL), AF_OK);
	a.descr = (char *)typestr;
	a.ndim = ndim;
	a.shape = (uint64_t *)shape;
	a.fortran_order = fortran;
	a.count = 1;
	for (unsigned i = 0; i < ndim; i++)
		if (__builtin_mul_overflow(a.count, shape[i], &a.count))
			a.count = 0;
	if (__builtin_mul_overflow(a.count, a.dtype.itemsize, &a.data_size))
		a.data_size = 0;
	a.stored_size = a.data_size;
	return a;
}

ssize_t aft_failing_pread(const af_source *src, void *buf, size_t len,
			  uint64_t off)
{
	(void)src; (void)buf; (void)len; (void)off;
	return -EIO;
}

void aft_assert_refused(af_status st, const af_error *err, const char *what)
{
	ck_assert_msg(st >= AF_E_TRUNCATED && st <= AF_E_RANGE,
		      "%s: %s, not a refusal of bad input", what, af_status_str(st));
	ck_assert_msg(err->msg[0] != '\0', "%s: refused (%s) without a reason",
		      what, af_status_str(st));
}

void aft_tag_slow(TCase *tc)
{
	tcase_set_tags(tc, "slow");
}

int aft_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

bool aft_counted_soon(pthread_mutex_t *lock, const uint64_t *counter)
{
	for (int i = 0; i < 10000; i++) {
		pthread_mutex_lock(lock);
		uint64_t n = *counter;
		pthread_mutex_unlock(lock);
		if (n)
			return true;
		usleep(1000);
	}
	return false;
}

int aft_fd_count(void)
{
	DIR *d = opendir("/proc/self/fd");
	ck_assert_ptr_nonnull(d);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1;  /* the listing's own */
}
