/* SPDX-License-Identifier: MIT */
/* The metadata texts of arrayrefs' arrays, escaped once (refs_meta.h). */
#define _GNU_SOURCE
#include "refs_meta.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

/* Distinct .zarray texts kept (a folder mixing a few array kinds in any
 * order reuses them all), and .zattrs templates (one per ndim met). */
#define ZARRAY_SLOTS 8
#define ZATTRS_SLOTS 4

/* The key .zattrs templates are made with, and the one that checks them:
 * plain keys (as_plain), "@" in no other part of the text. */
#define MARK "@"
#define CHECK_KEY "#c#"

typedef struct zarray_slot {
	af_zarr_layout layout;  /* shape and descr point into the slot's own */
	uint64_t shape[AF_NDIM_MAX];
	char *descr;
	char *json;             /* the quoted JSON string */
	size_t json_len;
} zarray_slot;

/* A .zattrs made with key MARK, escaped, and where each MARK is in it:
 * written with the key in place of each. usable false: the check failed,
 * this ndim is written the slow way. */
typedef struct zattrs_slot {
	unsigned ndim;
	bool made, usable;
	char *json;
	size_t json_len;
	size_t mark[AF_NDIM_MAX];
	size_t nmarks;
} zattrs_slot;

struct refs_meta {
	zarray_slot zarray[ZARRAY_SLOTS];
	size_t nzarray, next_zarray;
	zattrs_slot zattrs[ZATTRS_SLOTS];
	size_t next_zattrs;
};

refs_meta *refs_meta_new(void)
{
	return calloc(1, sizeof(refs_meta));
}

void refs_meta_free(refs_meta *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < ZARRAY_SLOTS; i++) {
		free(m->zarray[i].descr);
		free(m->zarray[i].json);
	}
	for (size_t i = 0; i < ZATTRS_SLOTS; i++)
		free(m->zattrs[i].json);
	free(m);
}

static af_status nomem(af_error *err)
{
	return af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
			    "out of memory writing references");
}

/* The codec's text of @p which for @p key as a quoted JSON string. */
static af_status escaped_text(const af_zarr_layout *l, af_zarr_file which,
			      const char *key, size_t key_len, char **json,
			      size_t *json_len, af_error *err)
{
	char *text;
	size_t len;
	*json = NULL;
	af_status st = af_zarr_group_array_text(l, which, key, key_len, &text,
						&len, err);
	if (st != AF_OK)
		return st;
	FILE *f = open_memstream(json, json_len);
	if (f) {
		json_string(f, text);
		if (fclose(f) != 0) {
			free(*json);
			*json = NULL;
		}
	}
	free(text);
	return *json ? AF_OK : nomem(err);
}

/* Whether both escapings (the codec's inside the text, json_string's of
 * the text) keep every byte of @p key as it is. */
static bool as_plain(const char *key, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)key[i];
		if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\')
			return false;
	}
	return true;
}

static af_status write_zarray(refs_meta *m, const af_zarr_layout *l,
			      const char *key, size_t key_len, FILE *out,
			      af_error *err)
{
	for (size_t i = 0; i < m->nzarray; i++) {
		const zarray_slot *z = &m->zarray[i];
		if (af_zarr_zarray_same(&z->layout, l)) {
			fwrite(z->json, 1, z->json_len, out);
			return AF_OK;
		}
	}
	zarray_slot *z = &m->zarray[m->next_zarray];
	char *json, *descr = NULL;
	size_t json_len;
	af_status st = escaped_text(l, AF_ZARR_ZARRAY, key, key_len, &json,
				    &json_len, err);
	if (st != AF_OK)
		return st;
	if (l->descr && !(descr = strdup(l->descr))) {
		free(json);
		return nomem(err);
	}
	fwrite(json, 1, json_len, out);
	free(z->json);
	free(z->descr);
	z->layout = *l;
	memcpy(z->shape, l->shape, l->ndim * sizeof(z->shape[0]));
	z->layout.shape = z->shape;
	z->layout.descr = z->descr = descr;
	z->json = json;
	z->json_len = json_len;
	m->next_zarray = (m->next_zarray + 1) % ZARRAY_SLOTS;
	if (m->nzarray < ZARRAY_SLOTS)
		m->nzarray++;
	return AF_OK;
}

/* Write template @p t with @p key in place of each MARK. */
static void fill_template(const zattrs_slot *t, const char *key,
			  size_t key_len, FILE *out)
{
	size_t from = 0;
	for (size_t i = 0; i < t->nmarks; i++) {
		fwrite(t->json + from, 1, t->mark[i] - from, out);
		fwrite(key, 1, key_len, out);
		from = t->mark[i] + strlen(MARK);
	}
	fwrite(t->json + from, 1, t->json_len - from, out);
}

/* Where MARK is in @p t's text: one place a dimension, or not usable. */
static bool find_marks(zattrs_slot *t)
{
	t->nmarks = 0;
	for (const char *p = t->json; (p = strstr(p, MARK)); p += strlen(MARK)) {
		if (t->nmarks == t->ndim)
			return false;
		t->mark[t->nmarks++] = (size_t)(p - t->json);
	}
	return t->nmarks == t->ndim;
}

/* Whether template @p t filled with CHECK_KEY is the codec's text for it:
 * then the text takes the key in those places and nowhere else. */
static af_status check_template(const zattrs_slot *t, const af_zarr_layout *l,
				bool *ok, af_error *err)
{
	char *want, *got = NULL;
	size_t want_len, got_len = 0;
	af_status st = escaped_text(l, AF_ZARR_ZATTRS, CHECK_KEY,
				    strlen(CHECK_KEY), &want, &want_len, err);
	if (st != AF_OK)
		return st;
	FILE *f = open_memstream(&got, &got_len);
	if (f) {
		fill_template(t, CHECK_KEY, strlen(CHECK_KEY), f);
		if (fclose(f) != 0) {
			free(got);
			got = NULL;
		}
	}
	if (got)
		*ok = got_len == want_len && memcmp(got, want, got_len) == 0;
	free(got);
	free(want);
	return got ? AF_OK : nomem(err);
}

/* The template of @p l's ndim, made now if none is kept. */
static af_status zattrs_template(refs_meta *m, const af_zarr_layout *l,
				 const zattrs_slot **out, af_error *err)
{
	for (size_t i = 0; i < ZATTRS_SLOTS; i++)
		if (m->zattrs[i].made && m->zattrs[i].ndim == l->ndim) {
			*out = &m->zattrs[i];
			return AF_OK;
		}
	zattrs_slot *t = &m->zattrs[m->next_zattrs];
	m->next_zattrs = (m->next_zattrs + 1) % ZATTRS_SLOTS;
	free(t->json);
	memset(t, 0, sizeof(*t));
	t->ndim = l->ndim;
	af_status st = escaped_text(l, AF_ZARR_ZATTRS, MARK, strlen(MARK),
				    &t->json, &t->json_len, err);
	bool ok = false;
	if (st == AF_OK && find_marks(t))
		st = check_template(t, l, &ok, err);
	if (st != AF_OK) {
		free(t->json);
		memset(t, 0, sizeof(*t));
		return st;
	}
	t->made = true;
	t->usable = ok;
	*out = t;
	return AF_OK;
}

static af_status write_zattrs(refs_meta *m, const af_zarr_layout *l,
			      const char *key, size_t key_len, FILE *out,
			      af_error *err)
{
	const zattrs_slot *t = NULL;
	af_status st = AF_OK;
	if (as_plain(key, key_len))
		st = zattrs_template(m, l, &t, err);
	if (st != AF_OK)
		return st;
	if (t && t->usable) {
		fill_template(t, key, key_len, out);
		return AF_OK;
	}
	char *json;
	size_t json_len;
	st = escaped_text(l, AF_ZARR_ZATTRS, key, key_len, &json, &json_len,
			  err);
	if (st == AF_OK)
		fwrite(json, 1, json_len, out);
	free(json);
	return st;
}

af_status refs_meta_write(refs_meta *m, const af_zarr_layout *l,
			  af_zarr_file which, const char *key, size_t key_len,
			  FILE *out, af_error *err)
{
	if (which == AF_ZARR_ZARRAY)
		return write_zarray(m, l, key, key_len, out, err);
	if (which == AF_ZARR_ZATTRS)
		return write_zattrs(m, l, key, key_len, out, err);
	return af_error_set(err, AF_E_RANGE, AF_NO_OFFSET,
			    "arrayrefs writes no metadata file of kind %d",
			    (int)which);
}
