/* SPDX-License-Identifier: MIT */
/* arrayrefs --verify: the recorded sources against the files now. */
#define _GNU_SOURCE
#include "refs_verify.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "json_read.h"
#include "refs_write.h"

/* A folder is read to find a renamed file this many times at most. */
#define RENAME_SEARCHES 1000

typedef struct verify {
	const char *prog;
	FILE *out;
	char *source;
	size_t changed;
	size_t searches;
} verify;

typedef struct record {
	long long size, mtime_ns, ino;
} record;

/* The name in @p full's folder of the entry whose inode is @p ino. */
static char *find_inode(const char *full, long long ino)
{
	char *dir = strdup(full), *slash = dir ? strrchr(dir, '/') : NULL;
	char *found = NULL;
	if (slash)
		*slash = '\0';
	DIR *d = dir ? opendir(slash ? (*dir ? dir : "/") : ".") : NULL;
	struct dirent *e;
	while (d && !found && (e = readdir(d)))
		if ((long long)e->d_ino == ino && strcmp(e->d_name, ".") != 0 &&
		    strcmp(e->d_name, "..") != 0)
			found = strdup(e->d_name);
	if (d)
		closedir(d);
	free(dir);
	return found;
}

static void check(verify *v, const char *file, const record *rec)
{
	char *full;
	if (asprintf(&full, "%s%s%s", v->source, *file ? "/" : "", file) < 0) {
		fprintf(stderr, "%s: out of memory\n", v->prog);
		v->changed++;
		return;
	}
	struct stat sb;
	if (stat(full, &sb) == 0) {
		long long mtime = (long long)sb.st_mtim.tv_sec * 1000000000LL +
				  sb.st_mtim.tv_nsec;
		if ((long long)sb.st_size != rec->size || mtime != rec->mtime_ns) {
			fprintf(v->out, "changed: %s (size %lld, was %lld)\n", full,
				(long long)sb.st_size, rec->size);
			v->changed++;
		} else if ((long long)sb.st_ino != rec->ino) {
			fprintf(v->out, "replaced: %s\n", full);
			v->changed++;
		}
	} else {
		char *to = errno == ENOENT && v->searches++ < RENAME_SEARCHES
				   ? find_inode(full, rec->ino) : NULL;
		if (to)
			fprintf(v->out, "renamed: %s (now %s)\n", full, to);
		else
			fprintf(v->out, "deleted: %s\n", full);
		free(to);
		v->changed++;
	}
	free(full);
}

/* {"size": N, "mtime_ns": N, "ino": N}, its '{' next. */
static bool read_record(json_reader *r, record *rec)
{
	bool first = true;
	rec->size = rec->mtime_ns = rec->ino = -1;
	if (json_next(r) != '{')
		return false;
	while (json_next_key(r, &first)) {
		long long *field = strcmp(r->str, "size") == 0 ? &rec->size
				   : strcmp(r->str, "mtime_ns") == 0 ? &rec->mtime_ns
				   : strcmp(r->str, "ino") == 0 ? &rec->ino : NULL;
		if (!(field ? json_read_int(r, field) : json_skip_value(r)))
			return false;
	}
	return !r->bad && rec->size >= 0 && rec->mtime_ns != -1;
}

static bool read_files(json_reader *r, verify *v)
{
	bool first = true;
	if (!v->source || json_next(r) != '{')
		return false;
	while (json_next_key(r, &first)) {
		char *file = strdup(r->str);
		record rec;
		bool ok = file && read_record(r, &rec);
		if (ok)
			check(v, file, &rec);
		free(file);
		if (!ok)
			return false;
	}
	return !r->bad;
}

static bool read_sources(json_reader *r, verify *v, bool *seen_files)
{
	bool first = true;
	if (json_next(r) != '{')
		return false;
	while (json_next_key(r, &first)) {
		bool ok;
		if (strcmp(r->str, "source") == 0) {
			ok = json_read_string(r);
			free(v->source);
			v->source = ok ? strdup(r->str) : NULL;
			ok = ok && v->source;
		} else if (strcmp(r->str, "files") == 0) {
			ok = read_files(r, v);
			*seen_files = ok;
		} else {
			ok = json_skip_value(r);
		}
		if (!ok)
			return false;
	}
	return !r->bad;
}

int refs_verify(const char *prog, const char *path, FILE *out)
{
	FILE *in = fopen(path, "r");
	if (!in) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
		return 1;
	}
	json_reader *r = calloc(1, sizeof(*r));
	verify v = { .prog = prog, .out = out };
	bool first = true, seen = false, ok = r != NULL;
	if (ok) {
		r->in = in;
		ok = json_next(r) == '{';
	}
	while (ok && json_next_key(r, &first))
		ok = strcmp(r->str, REFS_SOURCES_KEY) == 0
			     ? read_sources(r, &v, &seen)
			     : json_skip_value(r);
	ok = ok && !r->bad && seen;
	fclose(in);
	free(r);
	free(v.source);
	if (!ok) {
		fprintf(stderr, "%s: %s: not a reference file arrayrefs wrote "
			"(no readable \"" REFS_SOURCES_KEY "\" record)\n", prog, path);
		return 1;
	}
	return v.changed ? 1 : 0;
}
