/* SPDX-License-Identifier: MIT */
/* Zip members as byte sources: stored ones are a range of the archive,
 * deflated ones read through an af_inflate random-access index. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "arrayfs/af_inflate.h"
#include "arrayfs/af_zip.h"
#include "pool_i.h"
#include "subsource_i.h"
#include "zip_i.h"

struct af_member {
	struct afp_waitable save; /* first: the index saved on the pool */
	af_subsource data;  /* the member's bytes as stored in the archive */
	af_inflate *inf;    /* deflated members only */
	af_source out;      /* uncompressed bytes (deflated members) */
	const af_member_opts *o; /* index files, or NULL */
	af_index_key key;   /* the member's index key */
};

static void save_now(const af_member *m)
{
	af_error why;
	af_error_clear(&why);
	af_status st = af_index_file_save(m->inf, m->o->index_dir, &m->key,
					  m->o->index_budget, &why);
	/* INVAL: another reader saved it just before */
	if (st != AF_OK && st != AF_E_INVAL && m->o->note)
		m->o->note(m->o->note_arg, &why);
}

static void save_work(struct afp_waitable *w)
{
	save_now((af_member *)w);
}

/* The pool whose background thread saves @p m's index, or NULL. */
static af_pool *save_pool(const af_member *m)
{
	return m->o->pool ? m->o->pool : m->o->saver;
}

/*
 * After a read: save the index once a checked pass has recorded it. With
 * a pool (or a saver), its background thread writes the file: the read
 * that ends the pass does not wait for the export (about one more pass
 * of CPU: 0.6 s after a 0.4 s pass of 128 MiB of float32).
 */
static void maybe_save(af_member *m)
{
	if (!m->o || !m->o->index_dir || !af_inflate_index_ready(m->inf))
		return;
	if (!save_pool(m)) {
		save_now(m);
		return;
	}
	(void)afp_waitable_submit(save_pool(m), &m->save);
}

static const char *method_name(uint16_t method)
{
	switch (method) {
	case 1: return "shrink";
	case 2: case 3: case 4: case 5: return "reduce";
	case 6: return "implode";
	case 9: return "deflate64";
	case 10: return "PKWARE DCL implode";
	case 12: return "bzip2";
	case 14: return "LZMA";
	case 18: return "IBM TERSE";
	case 19: return "IBM LZ77";
	case 93: return "zstd";
	case 94: return "MP3";
	case 95: return "xz";
	case 96: return "JPEG";
	case 97: return "WavPack";
	case 98: return "PPMd";
	case 99: return "AES encryption";
	default: return "unknown";
	}
}

static ssize_t inflated_pread(const af_source *src, void *buf, size_t len,
			      uint64_t off)
{
	af_member *m = src->ctx;
	if (off >= src->size)
		return 0;
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	size_t n = 0;
	af_error err;
	af_error_clear(&err);
	af_status st = af_inflate_read(m->inf, buf, len, off, &n, &err);
	/* the errno alone travels on: say which span of which member
	 * disagrees with its saved index */
	if (st == AF_E_CORRUPT && m->o && m->o->note &&
	    af_inflate_index_loaded(m->inf))
		m->o->note(m->o->note_arg, &err);
	if (st != AF_OK)
		return -(err.sys_errno ? err.sys_errno : af_status_errno(st));
	maybe_save(m);
	return (ssize_t)n;
}

bool af_zip_entry_readable(const af_zip_entry *e, af_error *why)
{
	char q[128];
	bool encrypted = e->flags & (AF_ZIP_FLAG_ENCRYPTED |
				     AF_ZIP_FLAG_STRONG_ENCRYPTION);
	if (!encrypted &&
	    (e->method == AF_ZIP_STORED || e->method == AF_ZIP_DEFLATED))
		return true;
	af_zip_name_quote(q, sizeof(q), (const unsigned char *)e->name,
			  strlen(e->name));
	if (encrypted)
		af_error_set(why, AF_E_UNSUPPORTED, e->local_offset,
			     "zip member \"%s\" is encrypted", q);
	else
		af_error_set(why, AF_E_UNSUPPORTED, e->local_offset,
			     "zip member \"%s\" uses compression method %u (%s); only stored and deflated are supported",
			     q, e->method, method_name(e->method));
	return false;
}

af_status af_member_open(af_member **out, const af_zip *z, size_t i,
			 af_error *err)
{
	return af_member_open_opts(out, z, i, NULL, err);
}

/* Load a saved index; a refused one is said and ignored. */
static void load_index(af_member *m)
{
	af_error why;
	af_error_clear(&why);
	af_status st = af_index_file_load(m->inf, m->o->index_dir, &m->key,
					  &why);
	if (st != AF_OK && st != AF_E_RANGE && m->o->note)
		m->o->note(m->o->note_arg, &why);
}

af_status af_member_open_opts(af_member **out, const af_zip *z, size_t i,
			      const af_member_opts *o, af_error *err)
{
	*out = NULL;
	const af_zip_entry *e = af_zip_entry_at(z, i);
	if (!e)
		return af_error_set(err, AF_E_RANGE, AF_NO_OFFSET,
				    "zip member index %zu is out of range", i);
	if (!af_zip_entry_readable(e, err))
		return AF_E_UNSUPPORTED;
	char q[128];
	af_zip_name_quote(q, sizeof(q), (const unsigned char *)e->name,
			  strlen(e->name));
	if (e->method == AF_ZIP_STORED && e->comp_size != e->uncomp_size)
		return af_error_set(err, AF_E_HEADER, e->local_offset,
				    "stored zip member \"%s\" has %llu bytes stored but %llu uncompressed",
				    q, (unsigned long long)e->comp_size,
				    (unsigned long long)e->uncomp_size);
	uint64_t data;
	af_status st = af_zip_data_offset(z, i, &data, err);
	if (st != AF_OK)
		return st;
	af_member *m = calloc(1, sizeof(*m));
	if (!m)
		return af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
				    "no memory for a zip member");
	afp_waitable_init(&m->save, save_work, true);
	/* the archive source is only reachable through the zip, which keeps
	 * its own copy */
	const af_source *arch = af_zip_archive_source(z);
	st = af_subsource_init(&m->data, arch, data, e->comp_size, err);
	if (st != AF_OK)
		goto fail;
	if (e->method == AF_ZIP_DEFLATED) {
		st = af_inflate_open(&m->inf, &m->data.src, e->uncomp_size,
				     e->crc32, err);
		if (st != AF_OK)
			goto fail;
		m->out.pread = inflated_pread;
		m->out.size = e->uncomp_size;
		m->out.fd = -1;
		m->out.ctx = m;
		if (o && o->pool) {
			st = af_inflate_set_pool(m->inf, o->pool, err);
			if (st != AF_OK)
				goto fail;
		} else if (o && o->saver) {
			af_inflate_set_saver(m->inf, o->saver);
		}
		if (o && o->index_dir) {
			m->o = o;
			m->key = o->archive;
			m->key.local_offset = e->local_offset;
			m->key.comp_size = e->comp_size;
			m->key.uncomp_size = e->uncomp_size;
			m->key.crc = e->crc32;
			load_index(m);
		}
	}
	*out = m;
	return AF_OK;
fail:
	af_member_close(m);
	return st;
}

const af_source *af_member_source(const af_member *m)
{
	return m->inf ? &m->out : &m->data.src;
}

size_t af_member_memory(const af_member *m)
{
	return m->inf ? af_inflate_memory(m->inf) : 0;
}

uint64_t af_member_inflated(const af_member *m)
{
	return m->inf ? af_inflate_inflated(m->inf) : 0;
}

bool af_member_index_name(const af_member *m, char *buf, size_t n)
{
	if (!m->o)
		return false;
	af_index_file_name(buf, n, &m->key);
	return true;
}

void af_member_ahead(const af_member *m, af_inflate_ahead *out)
{
	memset(out, 0, sizeof(*out));
	if (m->inf)
		af_inflate_ahead_stats(m->inf, out);
}

size_t af_member_index_points(const af_member *m)
{
	return m->inf ? af_inflate_points(m->inf) : 0;
}

bool af_member_index_loaded(const af_member *m)
{
	return m->inf && af_inflate_index_loaded(m->inf);
}

void af_member_close(af_member *m)
{
	if (!m)
		return;
	/* a save still queued is done here, one running waited for (it
	 * cuts short inflating again for finer points) */
	if (m->inf)
		af_inflate_index_hurry(m->inf);
	if (m->o && save_pool(m))
		afp_waitable_settle(save_pool(m), &m->save);
	if (m->inf)
		af_inflate_close(m->inf);
	afp_waitable_destroy(&m->save);
	free(m);
}
