/* SPDX-License-Identifier: MIT */
/* What stack a folder or an .npz would give: names, headers, agreement. */
#include "stack_scan.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_common.h"

static int by_natural_name(const void *a, const void *b)
{
	return af_name_natural_cmp(*(char *const *)a, *(char *const *)b);
}

static af_status add_name(stack_scan *s, size_t *cap, const char *name,
			  af_error *err)
{
	if (s->n == *cap) {
		size_t ncap = *cap ? 2 * *cap : 64;
		char **grown = realloc(s->names, ncap * sizeof(*grown));
		if (!grown)
			return af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
					    "no memory for %zu names", ncap);
		s->names = grown;
		*cap = ncap;
	}
	s->names[s->n] = strdup(name);
	if (!s->names[s->n])
		return af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
				    "no memory for a name");
	s->n++;
	return AF_OK;
}

/* Read member @p name's header into @p out (freed by the caller on AF_OK). */
typedef af_status (*parse_fn)(void *arg, const char *name, af_array *out,
			      af_error *why);

struct scan_parse {
	const stack_scan *s;
	parse_fn parse;
	void *arg;
};

static af_status parse_nth(void *arg, uint64_t i, af_array *out, af_error *why)
{
	const struct scan_parse *p = arg;
	return p->parse(p->arg, p->s->names[i], out, why);
}

/* Sort the names, then the codec's scan rule (af_stack_scan) decides. */
static af_status scan_members(stack_scan *s, parse_fn parse, void *arg,
			      af_error *why)
{
	qsort(s->names, s->n, sizeof(*s->names), by_natural_name);
	struct scan_parse p = { s, parse, arg };
	uint64_t culprit;
	af_status st = af_stack_scan(s->n, parse_nth, &p, &s->stack, &culprit,
				     why);
	if (st != AF_OK && culprit < s->n)
		s->culprit = s->names[culprit];
	return st;
}

static af_status parse_file(void *arg, const char *name, af_array *out,
			    af_error *why)
{
	int fd = openat(*(int *)arg, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat sb;
	if (fd < 0 || fstat(fd, &sb) < 0) {
		cli_errno_error(why, "cannot open");
		if (fd >= 0)
			close(fd);
		return AF_E_IO;
	}
	af_source src;
	af_source_init_fd(&src, fd, 0, (uint64_t)sb.st_size);
	af_status st = af_array_parse_named(name, &src, out, why);
	close(fd);
	return st;
}

static af_status parse_member(void *arg, const char *name, af_array *out,
			      af_error *why)
{
	const af_zip *z = arg;
	af_member *m = NULL;
	af_status st = af_member_open(&m, z, (size_t)af_zip_find(z, name), why);
	if (st == AF_OK)
		st = af_npy_parse(af_member_source(m), out, why);
	af_member_close(m);
	return st;
}

static af_status scan_folder(const char *path, stack_scan *s, af_error *why)
{
	DIR *d = opendir(path);
	if (!d)
		return cli_errno_error(why, path);
	int dfd = dirfd(d);
	size_t cap = 0;
	af_status st = AF_OK;
	struct dirent *e;
	while (st == AF_OK && (e = readdir(d))) {
		struct stat sb;
		if (!af_stack_member_name(e->d_name, false) ||
		    fstatat(dfd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(sb.st_mode))
			continue;
		st = add_name(s, &cap, e->d_name, why);
	}
	if (st == AF_OK)
		st = scan_members(s, parse_file, &dfd, why);
	closedir(d);
	return st;
}

static af_status scan_npz(const char *path, stack_scan *s, af_error *why)
{
	cli_file f;
	af_status st = cli_file_open(&f, path, why);
	if (st != AF_OK)
		return st;
	af_zip *z = NULL;
	st = af_zip_open(&z, &f.src, why);
	if (st != AF_OK) {
		cli_file_close(&f);
		return AF_E_UNSUPPORTED;
	}
	size_t cap = 0;
	for (size_t i = 0; st == AF_OK && i < af_zip_count(z); i++) {
		const af_zip_entry *e = af_zip_entry_at(z, i);
		/* the archive's top folder, as the mount's X.npz/.stack */
		if (!strchr(e->name, '/') && af_stack_zip_member(e))
			st = add_name(s, &cap, e->name, why);
	}
	if (st == AF_OK)
		st = scan_members(s, parse_member, z, why);
	af_zip_close(z);
	cli_file_close(&f);
	return st;
}

af_status stack_scan_path(const char *path, stack_scan *s, af_error *why)
{
	memset(s, 0, sizeof(*s));
	af_error_clear(why);
	struct stat sb;
	if (stat(path, &sb) < 0)
		return cli_errno_error(why, path);
	if (S_ISDIR(sb.st_mode))
		return scan_folder(path, s, why);
	if (af_array_name_kind(path, false) == AF_NAME_NPZ)
		return scan_npz(path, s, why);
	return af_error_set(why, AF_E_INVAL, AF_NO_OFFSET,
			    "not a folder nor an .npz file");
}

void stack_scan_free(stack_scan *s)
{
	af_array_free(&s->stack);
	for (size_t i = 0; i < s->n; i++)
		free(s->names[i]);
	free(s->names);
	memset(s, 0, sizeof(*s));
}
