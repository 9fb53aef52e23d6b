/* SPDX-License-Identifier: MIT */
/* The members of a cached npz (srcfile.h): what each is, parsed on first
 * use, and its af_member, opened once and shared by the handles reading it. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "srcfile.h"

long afd_src_find(const struct afd_src *sf, const char *member)
{
	if (sf->kind != SK_NPZ)
		return -1;
	long i = af_zip_find(sf->zip, member);
	if (i < 0)
		return -1;
	const af_zip_entry *e = af_zip_entry_at(sf->zip, (size_t)i);
	return e && !e->is_dir ? i : -1;
}

/* Parse member @p i's npy header (mlock held). */
static void member_parse(struct afd_ctx *c, struct afd_src *sf, size_t i,
			 struct afd_minfo *mi)
{
	const af_zip_entry *e = af_zip_entry_at(sf->zip, i);
	size_t plen = strlen(sf->path);
	char *where = malloc(plen + strlen(e->name) + 2);
	af_error err;
	af_error_clear(&err);
	if (!af_zip_entry_readable(e, &err)) {
		mi->state = MS_ABSENT;
		goto log;
	}
	mi->state = MS_PLAIN;
	if (af_array_name_kind(e->name, true) != AF_NAME_NPY)
		goto out;
	af_member *m = NULL;
	if (af_member_open(&m, sf->zip, i, &err) != AF_OK) {
		mi->state = MS_ABSENT;
		goto log;
	}
	const af_source *msrc = af_member_source(m);
	if (af_npy_parse(msrc, &mi->arr.a, &err) != AF_OK) {
		af_member_close(m);
		goto log;
	}
	mi->arr.offset = mi->arr.a.data_offset;
	uint64_t base;
	if (e->method == AF_ZIP_STORED &&
	    af_zip_data_offset(sf->zip, i, &base, NULL) == AF_OK &&
	    base + mi->arr.offset >= base)
		mi->arr.offset += base;
	afd_arrinfo_fill(c, &mi->arr, msrc);
	af_member_close(m);
	mi->state = MS_ARRAY;
	goto out;
log:
	if (where) {
		sprintf(where, "%s/%s", sf->path, e->name);
		struct afd_logkey k = { AFD_LINE_MEMBER_PARSE, sf->key, i };
		afd_log_broken(&c->log, &k, where, &err);
	}
out:
	free(where);
}

const struct afd_minfo *afd_src_member(struct afd_ctx *c, struct afd_src *sf,
				       size_t i)
{
	if (sf->kind != SK_NPZ || i >= af_zip_count(sf->zip))
		return NULL;
	pthread_mutex_lock(&sf->mlock);
	struct afd_minfo *mi = sf->minfo[i];
	if (!mi) {
		mi = calloc(1, sizeof(*mi));
		if (mi) {
			member_parse(c, sf, i, mi);
			sf->minfo[i] = mi;
		}
	}
	pthread_mutex_unlock(&sf->mlock);
	return mi;
}

bool afd_src_member_hidden(struct afd_src *sf, size_t i)
{
	if (!af_zip_entry_readable(af_zip_entry_at(sf->zip, i), NULL))
		return true;
	pthread_mutex_lock(&sf->mlock);
	bool hidden = sf->minfo[i] && sf->minfo[i]->state == MS_ABSENT;
	pthread_mutex_unlock(&sf->mlock);
	return hidden;
}

/* A saved index refused, or one that could not be saved: said once per
 * member version. */
static void member_index_note(void *arg, const af_error *why)
{
	struct afd_minfo *mi = arg;
	const af_zip_entry *e = af_zip_entry_at(mi->src->zip, mi->idx);
	struct afd_logkey k = { AFD_LINE_INDEX, mi->src->key, mi->idx };
	afd_log_once(&mi->ctx->log, &k, AFD_LOG_WARN, "%s: member %s: %s",
		     mi->src->path, e ? e->name : "?", why->msg);
}

/* How member @p i opens: saved indexes, read-ahead (mlock held). */
static const af_member_opts *member_index_opts(struct afd_ctx *c,
					       struct afd_src *sf, size_t i)
{
	struct afd_minfo *mi = sf->minfo[i];
	af_member_opts *o = &mi->mopts;
	memset(o, 0, sizeof(*o));
	o->index_dir = c->opts.index_dir;
	o->index_budget = AF_INDEX_DIR_BUDGET;
	af_index_key_of_file(&o->archive, &sf->st);
	o->note = member_index_note;
	o->note_arg = mi;
	o->pool = c->pool;
	o->saver = c->index_saver;
	mi->ctx = c;
	mi->src = sf;
	mi->idx = i;
	return o;
}

int afd_src_member_open(struct afd_ctx *c, struct afd_src *sf, size_t i,
			const af_source **src, af_error *why)
{
	af_error_clear(why);
	if (!afd_src_member(c, sf, i))
		return -ENOMEM;
	int rc = 0;
	pthread_mutex_lock(&sf->mlock);
	struct afd_minfo *mi = sf->minfo[i];
	if (mi->state == MS_ABSENT) {
		rc = -ENOENT;
	} else if (!mi->m) {
		af_status st = af_member_open_opts(&mi->m, sf->zip, i,
						   member_index_opts(c, sf, i),
						   why);
		if (st != AF_OK) {
			mi->m = NULL;
			rc = -af_status_errno(st);
		}
	}
	if (rc == 0) {
		mi->mrefs++;
		*src = af_member_source(mi->m);
	}
	pthread_mutex_unlock(&sf->mlock);
	return rc;
}

void afd_src_member_close(struct afd_src *sf, size_t i)
{
	pthread_mutex_lock(&sf->mlock);
	struct afd_minfo *mi = sf->minfo[i];
	if (mi && mi->mrefs && --mi->mrefs == 0 && mi->m) {
		af_inflate_ahead a;
		af_member_ahead(mi->m, &a);
		if (mi->ctx && af_member_inflated(mi->m))
			afd_log(&mi->ctx->log, AFD_LOG_DEBUG,
				"%s: member %zu closed: %llu bytes inflated, "
				"saved index %s, %llu units inflated ahead "
				"(%llu by threads, %llu taken back)", sf->path,
				i, (unsigned long long)af_member_inflated(mi->m),
				af_member_index_loaded(mi->m) ? "used" : "not used",
				(unsigned long long)(a.pool + a.taken + a.own),
				(unsigned long long)a.pool,
				(unsigned long long)a.taken);
		af_member_close(mi->m);
		mi->m = NULL;
	}
	pthread_mutex_unlock(&sf->mlock);
}
