/* SPDX-License-Identifier: MIT */
/*
 * arrayrefs' writer: the `.zarr/` group of SOURCE as kerchunk references.
 * Keys and metadata come from the codec's group walk; this file decides
 * only where each chunk's bytes are read from (refs_chunk_plan) and how
 * the JSON is spelled.
 */
#define _GNU_SOURCE
#include "refs_write.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json.h"
#include "refs_meta.h"
#include "refs_plan.h"
#include "refs_url.h"

typedef struct refs_state {
	const refs_opts *o;
	FILE *out;
	FILE *files;          /* the "files" records, copied in at the end */
	bool more_refs;       /* a reference is out: the next needs a comma */
	bool more_files;
	char *file;           /* the source file recorded last (relative) */
	uint64_t file_size;
	bool encode;          /* percent-encode paths under the prefix */
	bool mount_encode;
	refs_outcome *res;
	refs_meta *meta;      /* the arrays' metadata texts, escaped once */
} refs_state;

static af_status nomem(af_error *err)
{
	return af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
			    "out of memory writing references");
}

static void say(const refs_state *s, const char *path, const char *why)
{
	fprintf(s->o->diag, "%s: %s%s%s: left out: %s\n", s->o->prog,
		s->o->source, *path ? "/" : "", path, why);
}

static void left_out(void *ctx, const char *path, af_zarr_group_left why)
{
	refs_state *s = ctx;
	if (!af_zarr_group_left_logged(why) && why != AF_ZG_LEFT_OBJECT)
		return;
	say(s, path, af_zarr_group_left_phrase(why));
	/* a hidden name is the group's rule, not a loss of the tool's */
	if (why != AF_ZG_LEFT_HIDDEN)
		s->res->left_out++;
}

/* `,\n"KEY": ` with KEY = @p path, '/' and @p name (or @p name alone). */
static af_status ref_key(refs_state *s, const char *path, const char *name,
			 af_error *err)
{
	(void)err;
	fputs(s->more_refs ? ",\n\"" : "\n\"", s->out);
	s->more_refs = true;
	if (*path) {
		json_string_body(s->out, path);
		putc('/', s->out);
	}
	json_string_body(s->out, name);
	fputs("\": ", s->out);
	return AF_OK;
}

/* An inline metadata text: its key and the text as a JSON string. */
static af_status ref_text(refs_state *s, const char *path, const char *name,
			  char *text, af_error *err)
{
	af_status st = ref_key(s, path, name, err);
	if (st == AF_OK)
		json_string(s->out, text);
	free(text);
	return st;
}

/* Metadata file @p name (@p which) of the array keyed @p key at @p path. */
static af_status ref_meta(refs_state *s, const char *path, const char *name,
			  const af_zarr_layout *l, af_zarr_file which,
			  const char *key, size_t key_len, af_error *err)
{
	af_status st = ref_key(s, path, name, err);
	return st != AF_OK ? st :
	       refs_meta_write(s->meta, l, which, key, key_len, s->out, err);
}

static af_status visit_group(void *ctx, const char *path, af_error *err)
{
	refs_state *s = ctx;
	char *text;
	size_t len;
	af_status st = af_zarr_group_text(AF_ZG_ZGROUP, &text, &len, err);
	if (st == AF_OK)
		st = ref_text(s, path, ".zgroup", text, err);
	if (st == AF_OK)
		st = af_zarr_group_text(AF_ZG_ZATTRS, &text, &len, err);
	if (st == AF_OK)
		st = ref_text(s, path, ".zattrs", text, err);
	return st;
}

/* @p file relative to SOURCE as a path to open. */
static char *full_path(const refs_state *s, const char *file)
{
	char *full;
	if (!*file)
		return strdup(s->o->source);
	return asprintf(&full, "%s/%s", s->o->source, file) < 0 ? NULL : full;
}

/* Record the file of @p src: its size, mtime and inode as the walk read
 * them (once: an npz's arrays come together). */
static af_status record_file(refs_state *s, const af_zarr_fs_array *src,
			     af_error *err)
{
	if (s->file && strcmp(s->file, src->file) == 0)
		return AF_OK;
	free(s->file);
	s->file = strdup(src->file);
	if (!s->file)
		return nomem(err);
	s->file_size = src->file_size;
	fputs(s->more_files ? ",\n" : "\n", s->files);
	s->more_files = true;
	json_string(s->files, src->file);
	fputs(": {\"size\": ", s->files);
	json_u64(s->files, src->file_size);
	fputs(", \"mtime_ns\": ", s->files);
	json_i64(s->files, src->file_mtime_ns);
	fputs(", \"ino\": ", s->files);
	json_u64(s->files, src->file_ino);
	putc('}', s->files);
	return AF_OK;
}

/* "base64:" and the chunk's data then zeros: a short last chunk. */
static af_status write_inline(refs_state *s, const af_zarr_fs_array *src,
			      const af_zarr_chunk *c, af_error *err)
{
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	unsigned char *buf = calloc(1, (size_t)c->size + 2);
	char *full = full_path(s, src->file);
	int fd = full ? open(full, O_RDONLY | O_CLOEXEC) : -1;
	af_status st = AF_OK;
	if (!buf || !full)
		st = nomem(err);
	else if (fd < 0 || pread(fd, buf, (size_t)c->data_len,
				 (off_t)(src->data_offset + c->data_off)) !=
				   (ssize_t)c->data_len)
		st = af_error_set(err, AF_E_IO, AF_NO_OFFSET,
				  "%s: cannot read its last chunk", src->file);
	if (st == AF_OK) {
		fputs("\"base64:", s->out);
		for (size_t i = 0; i < c->size; i += 3) {
			unsigned v = (unsigned)buf[i] << 16 | buf[i + 1] << 8 |
				     buf[i + 2];
			size_t n = c->size - i < 3 ? c->size - i : 3;
			putc(b64[v >> 18], s->out);
			putc(b64[(v >> 12) & 63], s->out);
			putc(n > 1 ? b64[(v >> 6) & 63] : '=', s->out);
			putc(n > 2 ? b64[v & 63] : '=', s->out);
		}
		putc('"', s->out);
	}
	if (fd >= 0)
		close(fd);
	free(full);
	free(buf);
	return st;
}

/* The chunks of an array read from its own file. */
static af_status write_ranges(refs_state *s, const char *path,
			      const af_zarr_layout *l,
			      const af_zarr_fs_array *src, af_error *err)
{
	char *url = refs_url_path(src->file, s->encode);
	bool tmpl = url && refs_url_templatable(src->file, s->encode);
	af_status st = url ? AF_OK : nomem(err);
	for (uint64_t i = 0; st == AF_OK && i < l->nchunks; i++) {
		char name[AF_ZARR_NAME_MAX];
		size_t len;
		af_zarr_chunk c;
		af_zarr_chunk_get(l, i, &c);
		af_zarr_chunk_name(l, i, name, &len);
		st = ref_key(s, path, name, err);
		if (st != AF_OK)
			break;
		uint64_t off = src->data_offset + c.data_off;
		if (refs_chunk_where(&c, off, s->file_size, s->o->inline_max) == REFS_CHUNK_INLINE) {
			st = write_inline(s, src, &c, err);
		} else {
			fputs("[", s->out);
			if (tmpl) {
				fputs(*src->file ? "\"{{u}}/" : "\"{{u}}", s->out);
				json_string_body(s->out, url);
				putc('"', s->out);
			} else {
				char *whole;
				if (asprintf(&whole, "%s/%s", s->o->prefix, url) < 0) {
					st = nomem(err);
					break;
				}
				json_string(s->out, whole);
				free(whole);
			}
			fputs(", ", s->out);
			json_u64(s->out, off);
			fputs(", ", s->out);
			json_u64(s->out, c.size);
			putc(']', s->out);
		}
		s->res->chunks++;
	}
	free(url);
	return st;
}

/* The chunks of a decoded array: the chunk files of the mount's .zarr/. */
static af_status write_mount(refs_state *s, const char *path,
			     const af_zarr_layout *l, af_error *err)
{
	char *url = refs_url_path(path, s->mount_encode);
	af_status st = url ? AF_OK : nomem(err);
	for (uint64_t i = 0; st == AF_OK && i < l->nchunks; i++) {
		char name[AF_ZARR_NAME_MAX];
		size_t len;
		af_zarr_chunk_name(l, i, name, &len);
		st = ref_key(s, path, name, err);
		if (st != AF_OK)
			break;
		fputs("[\"{{m}}/", s->out);
		json_string_body(s->out, url);
		fprintf(s->out, "/%s\"]", name);
		s->res->chunks++;
	}
	free(url);
	return st;
}

static af_status visit_array(void *ctx, const char *path, const af_zarr_group *g,
			     const af_zarr_group_child *c,
			     const af_zarr_layout *mount_layout, af_error *err)
{
	refs_state *s = ctx;
	const af_zarr_fs_array *src = af_zarr_group_source(g, c);
	if (!src->chunks_are_ranges && !s->o->mount_url) {
		say(s, path, "its chunks must be decoded (give --mount-url)");
		s->res->left_out++;
		return AF_OK;
	}
	if (src->chunks_are_ranges && !refs_url_templatable(src->file, s->encode) &&
	    strstr(src->file, "{{")) {
		say(s, path, "its file name has \"{{\", which fsspec takes for a template");
		s->res->left_out++;
		return AF_OK;
	}
	af_status st = record_file(s, src, err);
	if (st != AF_OK)
		return st;
	af_zarr_layout l = *mount_layout;
	if (src->chunks_are_ranges) {
		refs_plan_result r = refs_plan_layout(af_zarr_group_array(g, c),
						      mount_layout,
						      src->data_offset,
						      s->file_size,
						      s->o->inline_max, &l, err);
		if (r == REFS_PLAN_FAILED)
			return err->status;
		if (r == REFS_PLAN_NONE) {
			say(s, path, "no chunk grid gives it full chunks");
			s->res->left_out++;
			return AF_OK;
		}
	}
	size_t klen;
	const char *key = af_zarr_group_key(g, c, &klen);
	st = ref_meta(s, path, ".zarray", &l, AF_ZARR_ZARRAY, key, klen, err);
	if (st == AF_OK)
		st = ref_meta(s, path, ".zattrs", &l, AF_ZARR_ZATTRS, key, klen,
			      err);
	if (st == AF_OK)
		st = src->chunks_are_ranges ? write_ranges(s, path, &l, src, err)
					    : write_mount(s, path, &l, err);
	if (st == AF_OK)
		s->res->arrays++;
	return st;
}

static void write_head(refs_state *s)
{
	fputs("{\"version\": 1, \"templates\": {\"u\": ", s->out);
	json_string(s->out, s->o->prefix);
	if (s->o->mount_url) {
		fputs(", \"m\": ", s->out);
		json_string(s->out, s->o->mount_url);
	}
	fputs("},\n\"refs\": {", s->out);
}

/* The end: the sources' records (readers ignore the key) and the braces. */
static af_status write_tail(refs_state *s, af_error *err)
{
	fputs("},\n\"" REFS_SOURCES_KEY "\": {\"source\": ", s->out);
	json_string(s->out, s->o->source_abs);
	fputs(", \"files\": {", s->out);
	if (fflush(s->files) != 0 || fseek(s->files, 0, SEEK_SET) != 0)
		return af_error_set(err, AF_E_IO, AF_NO_OFFSET,
				    "cannot read back the file records: %s",
				    strerror(errno));
	char buf[8192];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), s->files)) > 0)
		fwrite(buf, 1, n, s->out);
	if (ferror(s->files))
		return af_error_set(err, AF_E_IO, AF_NO_OFFSET,
				    "cannot read back the file records");
	fputs("\n}}}\n", s->out);
	return AF_OK;
}

af_status refs_write(const refs_opts *o, FILE *out, refs_outcome *res,
		     af_error *err)
{
	memset(res, 0, sizeof(*res));
	refs_state s = { .o = o, .out = out, .res = res,
			 .encode = !refs_url_is_file(o->prefix),
			 .mount_encode = o->mount_url &&
					 !refs_url_is_file(o->mount_url) };
	af_zarr_walk walk;
	void *root;
	af_status st = af_zarr_fs_open(o->source, o->max_chunk_bytes, left_out,
				       &s, &walk, &root, err);
	if (st != AF_OK)
		return st;
	/* records of files wait in a temporary file, not in memory */
	s.files = tmpfile();
	/* this thread's alone: no lock a call (a few calls a file) */
	if (s.files)
		__fsetlocking(s.files, FSETLOCKING_BYCALLER);
	s.meta = refs_meta_new();
	if (!s.meta) {
		st = af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
				  "out of memory writing references");
	} else if (!s.files) {
		st = af_error_set(err, AF_E_IO, AF_NO_OFFSET,
				  "cannot make a temporary file: %s",
				  strerror(errno));
	} else {
		const af_zarr_visit visit = { &s, visit_group, visit_array };
		write_head(&s);
		st = af_zarr_group_walk(&walk, root, &visit, err);
		if (st == AF_OK)
			st = write_tail(&s, err);
	}
	if (s.files)
		fclose(s.files);
	af_zarr_fs_close(&walk, root);
	free(s.file);
	refs_meta_free(s.meta);
	if (st == AF_OK && (fflush(out) != 0 || ferror(out))) {
		res->write_errno = errno ? errno : EIO;
		st = af_error_set(err, AF_E_IO, AF_NO_OFFSET,
				  "cannot write the references: %s",
				  strerror(res->write_errno));
	}
	return st;
}
