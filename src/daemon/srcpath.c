/* SPDX-License-Identifier: MIT */
/* Resolving source paths without ever entering the daemon's own mount. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "mountinfo.h"
#include "srcpath.h"

#define NO_CROSSING (RESOLVE_NO_XDEV | RESOLVE_NO_SYMLINKS)

static int openat2_fd(int dirfd, const char *path, int flags, uint64_t resolve)
{
	struct open_how how = { .flags = (uint64_t)(unsigned)flags,
				.resolve = resolve };
	return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}

int afd_mnt_id_of_fd(int fd)
{
	char name[64];
	snprintf(name, sizeof(name), "/proc/self/fdinfo/%d", fd);
	FILE *f = fopen(name, "re");
	if (!f)
		return -errno;
	char line[128];
	int id = -ENOENT;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "mnt_id: %d", &id) == 1)
			break;
	fclose(f);
	return id;
}

/*
 * Whether the mount @p top is on is ours: the same mount, or a bind mount
 * of it elsewhere (another mount id, the same device). 1, 0 or -errno.
 */
static int is_own_mount(const struct afd_srcroot *r, int top)
{
	int id = afd_mnt_id_of_fd(top);
	if (id < 0)
		return id;
	if (r->own_mnt_id < 0)
		return 0;
	if (id == r->own_mnt_id)
		return 1;
	struct afd_mountinfo m;
	int rc = afd_mountinfo_by_id(id, &m);
	if (rc < 0)
		return rc;
	return makedev(m.major, m.minor) == r->own_dev;
}

/* Reopen O_PATH @p fd with @p flags: through its /proc link, no lookup. */
static int reopen(int fd, int flags)
{
	if (flags & O_PATH)
		return fcntl(fd, F_DUPFD_CLOEXEC, 0);
	char name[64];
	snprintf(name, sizeof(name), "/proc/self/fd/%d", fd);
	/* the link is a magic link: O_NOFOLLOW would refuse it */
	return open(name, flags & ~O_NOFOLLOW);
}

/*
 * Open component @p name of folder @p dir, crossing a mount on it only if
 * it is not ours. Returns the fd or -errno (-EXDEV: our mount).
 */
static int open_component(const struct afd_srcroot *r, int dir,
			  const char *name, int flags)
{
	int fd = openat2_fd(dir, name, flags, NO_CROSSING);
	if (fd >= 0)
		return fd;
	if (errno != EXDEV)
		return -errno;
	/* a mount point: O_PATH opens the mount on top without asking it */
	int top = openat2_fd(dir, name, O_PATH | O_CLOEXEC | O_NOFOLLOW,
			     RESOLVE_NO_SYMLINKS);
	if (top < 0)
		return -errno;
	int rc = is_own_mount(r, top);
	if (rc != 0) {
		close(top);
		return rc < 0 ? rc : -EXDEV;
	}
	fd = reopen(top, flags);
	int e = errno;
	close(top);
	return fd >= 0 ? fd : -e;
}

/* The slow path: @p path crosses a mount point somewhere. */
static int walk(const struct afd_srcroot *r, const char *path, int flags)
{
	char *copy = strdup(path);
	if (!copy)
		return -ENOMEM;
	int dir = r->fd, rc = -ENOENT;
	char *save = NULL;
	char *name = strtok_r(copy, "/", &save);
	while (name) {
		char *next = strtok_r(NULL, "/", &save);
		int fd = open_component(r, dir, name, next ? O_PATH |
					O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW :
					flags);
		if (dir != r->fd)
			close(dir);
		dir = r->fd;
		if (fd < 0) {
			/* only the mountpoint itself is seen, never below it */
			rc = fd == -EXDEV && next ? -ENOENT : fd;
			break;
		}
		if (!next) {
			rc = fd;
			break;
		}
		dir = fd;
		name = next;
	}
	if (dir != r->fd)
		close(dir);
	free(copy);
	return rc;
}

/* Kernels before 5.6 have no openat2: open, then refuse our own device. */
static int open_old(const struct afd_srcroot *r, const char *path, int flags)
{
	int fd = openat(r->fd, path, flags);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (r->own_mnt_id >= 0 && fstat(fd, &st) == 0 && st.st_dev == r->own_dev) {
		close(fd);
		return -EXDEV;
	}
	return fd;
}

int afd_srcpath_open(const struct afd_srcroot *r, const char *path, int flags)
{
	flags |= O_CLOEXEC | O_NOFOLLOW;
	if (!(flags & O_PATH))
		flags |= O_NOCTTY;
	int fd = openat2_fd(r->fd, path, flags, NO_CROSSING);
	if (fd >= 0)
		return fd;
	if (errno == ENOSYS)
		return open_old(r, path, flags);
	if (errno != EXDEV)
		return -errno;
	return walk(r, path, flags);
}

int afd_srcpath_open_in(const struct afd_srcroot *r, int dirfd,
			const char *name, int flags)
{
	flags |= O_CLOEXEC | O_NOFOLLOW | O_NOCTTY;
	int fd = openat2_fd(dirfd, name, flags, NO_CROSSING | RESOLVE_BENEATH);
	if (fd >= 0)
		return fd;
	if (errno == ENOSYS) {
		fd = openat(dirfd, name, flags);
		struct stat st;
		if (fd >= 0 && r->own_mnt_id >= 0 && fstat(fd, &st) == 0 &&
		    st.st_dev == r->own_dev) {
			close(fd);
			return -EXDEV;
		}
		return fd >= 0 ? fd : -errno;
	}
	if (errno != EXDEV)
		return -errno;
	return open_component(r, dirfd, name, flags);
}

int afd_srcpath_stat(const struct afd_srcroot *r, const char *path,
		     struct stat *st)
{
	int fd = afd_srcpath_open(r, path, O_PATH);
	if (fd < 0)
		return fd;
	int rc = fstat(fd, st) < 0 ? -errno : 0;
	close(fd);
	return rc;
}
