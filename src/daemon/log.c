/* SPDX-License-Identifier: MIT */
/* Daemon logging: stderr in the foreground, syslog once daemonized. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "hash.h"
#include "log.h"

int afd_log_init(struct afd_log *lg, bool debug)
{
	memset(lg, 0, sizeof(*lg));
	lg->debug = debug;
	lg->out = stderr;
	lg->cap = AFD_LOG_SEEN_MAX * 2;
	lg->seen = calloc(lg->cap, sizeof(*lg->seen));
	if (!lg->seen)
		return -1;
	pthread_mutex_init(&lg->lock, NULL);
	return 0;
}

void afd_log_use_syslog(struct afd_log *lg)
{
	openlog("arrayfs", LOG_PID, LOG_DAEMON);
	lg->to_syslog = true;
}

void afd_log_destroy(struct afd_log *lg)
{
	if (lg->to_syslog)
		closelog();
	free(lg->seen);
	lg->seen = NULL;
	pthread_mutex_destroy(&lg->lock);
}

static void vlog(struct afd_log *lg, enum afd_log_level lvl, const char *fmt,
		 va_list ap)
{
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	char raw[1024], line[4 * sizeof(raw)];
	vsnprintf(raw, sizeof(raw), fmt, ap);
	/* names come from files and archives: a control byte in one must
	 * not start a line of its own (or move a terminal's cursor) */
	size_t o = 0;
	for (const unsigned char *p = (const unsigned char *)raw; *p; p++) {
		if (*p < 0x20 || *p == 0x7f)
			o += (size_t)snprintf(line + o, sizeof(line) - o, "\\x%02x", *p);
		else
			line[o++] = (char)*p;
	}
	line[o] = '\0';
	if (lg->to_syslog) {
		syslog(prio[lvl], "%s", line);
	} else {
		/* one fprintf per line keeps lines whole across threads */
		fprintf(lg->out, "arrayfs: %s\n", line);
	}
}

void afd_log(struct afd_log *lg, enum afd_log_level lvl, const char *fmt, ...)
{
	if (lvl == AFD_LOG_DEBUG && !lg->debug)
		return;
	va_list ap;
	va_start(ap, fmt);
	vlog(lg, lvl, fmt, ap);
	va_end(ap);
}

static bool key_eq(const struct afd_logkey *a, const struct afd_logkey *b)
{
	return a->kind == b->kind && a->source == b->source &&
	       a->index == b->index;
}

/* The slot to start looking for @p key in (the fields hashed one by one:
 * the struct's padding is not part of the key). */
static size_t key_slot(const struct afd_logkey *key, size_t mask)
{
	uint32_t kind = (uint32_t)key->kind;
	uint64_t h = afd_hash_bytes(AFD_FNV_SEED, &kind, sizeof(kind));
	h = afd_hash_bytes(h, &key->source, sizeof(key->source));
	h = afd_hash_bytes(h, &key->index, sizeof(key->index));
	return (size_t)afd_hash_mix(h) & mask;
}

/* Returns true the first time @p key is seen. */
static bool first_time(struct afd_log *lg, const struct afd_logkey *key)
{
	if (key->kind == AFD_LINE_ALWAYS)
		return true;
	bool fresh = true;
	pthread_mutex_lock(&lg->lock);
	if (lg->nseen >= AFD_LOG_SEEN_MAX) {
		memset(lg->seen, 0, lg->cap * sizeof(*lg->seen));
		lg->nseen = 0;
	}
	size_t mask = lg->cap - 1;
	for (size_t i = key_slot(key, mask);; i = (i + 1) & mask) {
		if (key_eq(&lg->seen[i], key)) {
			fresh = false;
			break;
		}
		if (lg->seen[i].kind == AFD_LINE_ALWAYS) {
			lg->seen[i] = *key;
			lg->nseen++;
			break;
		}
	}
	pthread_mutex_unlock(&lg->lock);
	return fresh;
}

void afd_log_once(struct afd_log *lg, const struct afd_logkey *key,
		  enum afd_log_level lvl, const char *fmt, ...)
{
	if ((lvl == AFD_LOG_DEBUG && !lg->debug) || !first_time(lg, key))
		return;
	va_list ap;
	va_start(ap, fmt);
	vlog(lg, lvl, fmt, ap);
	va_end(ap);
}

void afd_log_broken(struct afd_log *lg, const struct afd_logkey *key,
		    const char *path, const af_error *err)
{
	if (!first_time(lg, key))
		return;
	const char *why = err && err->msg[0] ? err->msg :
			  af_status_str(err ? err->status : AF_E_IO);
	if (err && err->offset != AF_NO_OFFSET)
		afd_log(lg, AFD_LOG_WARN, "cannot read %s: %s (at byte %llu)",
			path, why, (unsigned long long)err->offset);
	else
		afd_log(lg, AFD_LOG_WARN, "cannot read %s: %s", path, why);
}
