/* SPDX-License-Identifier: MIT */
/*
 * Index files in a cache folder: naming, loading (untrusted: bounded read,
 * then af_inflate_index_import), atomic saving (temporary file + rename)
 * and the folder's byte budget (least recently used removed first).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "inflate_cursor_i.h"
#include "inflate_index_i.h"

#define TMP_PREFIX ".tmp-"
#define TMP_MAX_AGE 3600

bool af_index_dir_default(char *buf, size_t n)
{
	int w;
	const char *xdg = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");
	if (geteuid() == 0)
		w = snprintf(buf, n, "/var/cache/arrayfs");
	else if (xdg && xdg[0] == '/')
		w = snprintf(buf, n, "%s/arrayfs", xdg);
	else if (home && home[0] == '/')
		w = snprintf(buf, n, "%s/.cache/arrayfs", home);
	else
		return false;
	return w > 0 && (size_t)w < n;
}

void af_index_file_name(char *buf, size_t n, const af_index_key *k)
{
	uint64_t v[11] = { k->dev, k->ino, k->size, (uint64_t)k->mtime_sec,
			   (uint64_t)k->mtime_nsec, (uint64_t)k->ctime_sec,
			   (uint64_t)k->ctime_nsec, k->local_offset,
			   k->comp_size, k->uncomp_size, k->crc };
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (unsigned i = 0; i < 11; i++)
		for (unsigned b = 0; b < 8; b++) {
			h ^= (v[i] >> (8 * b)) & 0xff;
			h *= 1099511628211ull;
		}
	snprintf(buf, n, "%016llx-%08x.afi", (unsigned long long)h,
		 (unsigned)k->crc);
}

void af_index_key_of_file(af_index_key *k, const struct stat *st)
{
	memset(k, 0, sizeof(*k));
	k->dev = (uint64_t)st->st_dev;
	k->ino = (uint64_t)st->st_ino;
	k->size = (uint64_t)st->st_size;
	k->mtime_sec = st->st_mtim.tv_sec;
	k->mtime_nsec = st->st_mtim.tv_nsec;
	k->ctime_sec = st->st_ctim.tv_sec;
	k->ctime_nsec = st->st_ctim.tv_nsec;
}

static af_status io_error(af_error *err, const char *what, const char *path,
			  int e)
{
	af_error_set(err, AF_E_IO, AF_NO_OFFSET, "%s %s: %s", what, path,
		     strerror(e));
	if (err)
		err->sys_errno = e;
	return AF_E_IO;
}

static bool join(char *buf, size_t n, const char *dir, const char *name)
{
	int w = snprintf(buf, n, "%s/%s", dir, name);
	return w > 0 && (size_t)w < n;
}

af_status af_index_file_load(af_inflate *z, const char *dir,
			     const af_index_key *key, af_error *err)
{
	char name[64], path[4096];
	af_index_file_name(name, sizeof(name), key);
	if (!join(path, sizeof(path), dir, name))
		return af_error_set(err, AF_E_RANGE, AF_NO_OFFSET,
				    "index folder name too long");
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ENOENT)
			return af_error_set(err, AF_E_RANGE, AF_NO_OFFSET,
					    "no index file %s", path);
		return io_error(err, "cannot open index file", path, errno);
	}
	struct stat st;
	af_status s = AF_OK;
	unsigned char *buf = NULL;
	if (fstat(fd, &st) < 0) {
		s = io_error(err, "cannot stat index file", path, errno);
		goto out;
	}
	if (!S_ISREG(st.st_mode) || st.st_size < 0 ||
	    (uint64_t)st.st_size > af_inflate_index_max_bytes(z)) {
		s = af_error_set(err, AF_E_CORRUPT, AF_NO_OFFSET,
				 "index file refused: %s is not a regular file "
				 "of at most %zu bytes", path,
				 af_inflate_index_max_bytes(z));
		goto out;
	}
	size_t len = (size_t)st.st_size;
	buf = malloc(len ? len : 1);
	if (!buf) {
		s = afz_nomem(err, "index file");
		goto out;
	}
	size_t got = 0;
	while (got < len) {
		ssize_t r = pread(fd, buf + got, len - got, (off_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			s = io_error(err, "cannot read index file", path, errno);
			goto out;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	s = afz_index_adopt(z, key, buf, got, err);
	if (s == AF_OK) {
		buf = NULL; /* z's now */
		futimens(fd, (const struct timespec[2]){
				     { .tv_nsec = UTIME_OMIT },
				     { .tv_nsec = UTIME_NOW } });
	}
out:
	free(buf);
	close(fd);
	return s;
}

struct idx_file {
	char name[64];
	uint64_t bytes;
	struct timespec used;
};

static int older_first(const void *a, const void *b)
{
	const struct idx_file *x = a, *y = b;
	if (x->used.tv_sec != y->used.tv_sec)
		return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
	if (x->used.tv_nsec != y->used.tv_nsec)
		return x->used.tv_nsec < y->used.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

static bool is_index_name(const char *n)
{
	size_t l = strlen(n);
	return l == 16 + 1 + 8 + 4 && strcmp(n + l - 4, ".afi") == 0;
}

/* Remove least recently used index files until @p budget bytes remain,
 * and temporary files a crashed writer left. Best effort: another daemon
 * may remove the same files at the same time. */
static void trim(int dfd, uint64_t budget)
{
	int fd = dup(dfd);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	struct idx_file *f = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = 0;
	time_t now = time(NULL);
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		struct stat st;
		bool tmp = strncmp(e->d_name, TMP_PREFIX, strlen(TMP_PREFIX)) == 0;
		if ((!tmp && !is_index_name(e->d_name)) ||
		    fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		if (tmp) {
			if (now - st.st_mtim.tv_sec > TMP_MAX_AGE)
				unlinkat(dfd, e->d_name, 0);
			continue;
		}
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 64;
			struct idx_file *nf = realloc(f, nc * sizeof(*nf));
			if (!nf)
				break;
			f = nf;
			cap = nc;
		}
		snprintf(f[n].name, sizeof(f[n].name), "%s", e->d_name);
		f[n].bytes = (uint64_t)st.st_size;
		f[n].used = st.st_mtim;
		total += f[n].bytes;
		n++;
	}
	closedir(d);
	if (total > budget && n) {
		qsort(f, n, sizeof(*f), older_first);
		for (size_t i = 0; i < n && total > budget; i++)
			if (unlinkat(dfd, f[i].name, 0) == 0 || errno == ENOENT)
				total -= f[i].bytes;
	}
	free(f);
}

af_status af_index_file_save(af_inflate *z, const char *dir,
			     const af_index_key *key, uint64_t budget,
			     af_error *err)
{
	unsigned char *buf;
	size_t len;
	af_status s = af_inflate_index_export(z, key, &buf, &len, err);
	if (s)
		return s;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		s = io_error(err, "cannot create index folder", dir, errno);
		free(buf);
		return s;
	}
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		s = io_error(err, "cannot open index folder", dir, errno);
		free(buf);
		return s;
	}
	char name[64], tmp[128];
	af_index_file_name(name, sizeof(name), key);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	/* unique among daemons (pid) and threads (the af_inflate's address) */
	snprintf(tmp, sizeof(tmp), TMP_PREFIX "%ld-%llx-%ld-%s", (long)getpid(),
		 (unsigned long long)(uintptr_t)z, (long)ts.tv_nsec, name);
	int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		s = io_error(err, "cannot create index file in", dir, errno);
		goto out;
	}
	size_t put = 0;
	while (put < len) {
		ssize_t w = write(fd, buf + put, len - put);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			s = io_error(err, "cannot write index file in", dir,
				     w < 0 ? errno : ENOSPC);
			break;
		}
		put += (size_t)w;
	}
	if (close(fd) < 0 && !s)
		s = io_error(err, "cannot write index file in", dir, errno);
	if (!s && renameat(dfd, tmp, dfd, name) < 0)
		s = io_error(err, "cannot rename index file in", dir, errno);
	if (s)
		unlinkat(dfd, tmp, 0);
	else
		trim(dfd, budget);
out:
	close(dfd);
	free(buf);
	return s;
}
