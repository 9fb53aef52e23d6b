/* SPDX-License-Identifier: MIT */
/* Input opening and error printing shared by the command-line tools. */
#include "cli_common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

af_status cli_errno_error(af_error *err, const char *what)
{
	int e = errno;
	af_error_set(err, AF_E_IO, AF_NO_OFFSET, "%s: %s", what, strerror(e));
	if (err)
		err->sys_errno = e;
	return AF_E_IO;
}

af_status cli_file_open(cli_file *f, const char *path, af_error *err)
{
	struct stat st;

	f->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (f->fd < 0)
		return cli_errno_error(err, "cannot open");
	if (fstat(f->fd, &st) != 0) {
		cli_errno_error(err, "cannot stat");
		goto fail;
	}
	if (S_ISDIR(st.st_mode)) {
		af_error_set(err, AF_E_INVAL, AF_NO_OFFSET, "is a folder");
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		/* A pipe has no size and no random access: the parsers need both. */
		af_error_set(err, AF_E_INVAL, AF_NO_OFFSET,
			     "not a regular file");
		goto fail;
	}
	af_source_init_fd(&f->src, f->fd, 0, (uint64_t)st.st_size);
	return AF_OK;
fail:
	close(f->fd);
	f->fd = -1;
	return err ? err->status : AF_E_IO;
}

void cli_file_close(cli_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
}

int cli_temp_beside(const char *out, const char *tool, char **tmp)
{
	const char *slash = strrchr(out, '/');
	int dirlen = slash ? (int)(slash - out + 1) : 0;
	size_t n = strlen(out) + strlen(tool) + 16;
	*tmp = malloc(n);
	if (!*tmp) {
		errno = ENOMEM;
		return -1;
	}
	snprintf(*tmp, n, "%.*s.%s.%s-XXXXXX", dirlen, out, out + dirlen, tool);
	int fd = mkstemp(*tmp);
	mode_t mask = umask(0);
	umask(mask);
	if (fd >= 0 && fchmod(fd, 0666 & ~mask) == 0)
		return fd;
	int e = errno;
	if (fd >= 0) {
		close(fd);
		unlink(*tmp);
	}
	free(*tmp);
	*tmp = NULL;
	errno = e;
	return -1;
}

cli_kind cli_kind_of_name(const char *name)
{
	switch (af_array_name_kind(name, false)) {
	case AF_NAME_NPY: return CLI_KIND_NPY;
	case AF_NAME_RA: return CLI_KIND_RA;
	case AF_NAME_NPZ: return CLI_KIND_NPZ;
	case AF_NAME_NONE: break;
	}
	return CLI_KIND_UNKNOWN;
}

cli_kind cli_kind_of_file(const char *name, const af_source *src)
{
	cli_kind k = cli_kind_of_name(name);
	af_array a;
	af_zip *z;

	if (k != CLI_KIND_UNKNOWN)
		return k;
	/* No telling name: the first parser that accepts the bytes decides. */
	if (af_npy_parse(src, &a, NULL) == AF_OK) {
		af_array_free(&a);
		return CLI_KIND_NPY;
	}
	if (af_ra_parse(src, &a, NULL) == AF_OK) {
		af_array_free(&a);
		return CLI_KIND_RA;
	}
	if (af_zip_open(&z, src, NULL) == AF_OK) {
		af_zip_close(z);
		return CLI_KIND_NPZ;
	}
	return CLI_KIND_UNKNOWN;
}

static void cli_array_init(cli_array *a, cli_file *f)
{
	memset(a, 0, sizeof(*a));
	a->file = *f;
	f->fd = -1;
	/* The file's source lives inside *a from now on: never copy *a. */
	a->src = &a->file.src;
}

af_status cli_array_open_file(cli_array *a, cli_file *f, cli_kind kind,
			      af_error *err)
{
	af_status st;

	cli_array_init(a, f);
	if (kind == CLI_KIND_NPY)
		st = af_npy_parse(a->src, &a->arr, err);
	else if (kind == CLI_KIND_RA)
		st = af_ra_parse(a->src, &a->arr, err);
	else
		st = af_error_set(err, AF_E_UNSUPPORTED, AF_NO_OFFSET,
				  "not a .npy or .ra file");
	if (st != AF_OK)
		cli_array_close(a);
	return st;
}

/* Index of KEY.npy, else of KEY, else -1. */
static long find_member(const af_zip *z, const char *key)
{
	size_t n = strlen(key);
	char *withext = malloc(n + 5);
	long i = -1;

	if (withext) {
		memcpy(withext, key, n);
		memcpy(withext + n, ".npy", 5);
		i = af_zip_find(z, withext);
		free(withext);
	}
	if (i < 0)
		i = af_zip_find(z, key);
	return i;
}

af_status cli_array_open_member(cli_array *a, cli_file *f, const char *key,
				af_error *err)
{
	af_status st;
	long i;

	cli_array_init(a, f);
	st = af_zip_open(&a->zip, &a->file.src, err);
	if (st != AF_OK)
		goto fail;
	i = find_member(a->zip, key);
	if (i < 0) {
		st = af_error_set(err, AF_E_RANGE, AF_NO_OFFSET,
				  "no member named '%s' or '%s.npy'", key, key);
		goto fail;
	}
	a->member_name = af_zip_entry_at(a->zip, (size_t)i)->name;
	st = af_member_open(&a->member, a->zip, (size_t)i, err);
	if (st != AF_OK)
		goto fail;
	a->src = af_member_source(a->member);
	st = af_npy_parse(a->src, &a->arr, err);
	if (st != AF_OK)
		goto fail;
	return AF_OK;
fail:
	cli_array_close(a);
	return st;
}

void cli_array_close(cli_array *a)
{
	af_array_free(&a->arr);
	if (a->member)
		af_member_close(a->member);
	if (a->zip)
		af_zip_close(a->zip);
	a->member = NULL;
	a->zip = NULL;
	a->member_name = NULL;
	a->src = NULL;
	cli_file_close(&a->file);
}

void cli_report(const char *prog, const char *what, const af_error *err)
{
	const char *msg = err->msg[0] ? err->msg : af_status_str(err->status);

	if (err->offset != AF_NO_OFFSET)
		fprintf(stderr, "%s: %s: %s (at byte %llu)\n", prog, what, msg,
			(unsigned long long)err->offset);
	else
		fprintf(stderr, "%s: %s: %s\n", prog, what, msg);
}

const char *cli_kind_name(cli_kind k)
{
	switch (k) {
	case CLI_KIND_NPY: return "npy";
	case CLI_KIND_RA: return "ra";
	case CLI_KIND_NPZ: return "npz";
	case CLI_KIND_UNKNOWN: break;
	}
	return "unknown";
}
