/* SPDX-License-Identifier: MIT */
/* Daemon logging: stderr in the foreground, syslog once daemonized. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "log.h"

/* The set is cleared when full: a line may then repeat, memory stays bounded. */
#define AFD_LOG_SEEN_MAX 65536u

int afd_log_init(struct afd_log *lg, bool debug)
{
	memset(lg, 0, sizeof(*lg));
	lg->debug = debug;
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
		fprintf(stderr, "arrayfs: %s\n", line);
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

/* Returns true the first time @p key is seen. */
static bool first_time(struct afd_log *lg, uint64_t key)
{
	if (key == 0)
		return true;
	bool fresh = true;
	pthread_mutex_lock(&lg->lock);
	if (lg->nseen >= AFD_LOG_SEEN_MAX) {
		memset(lg->seen, 0, lg->cap * sizeof(*lg->seen));
		lg->nseen = 0;
	}
	size_t mask = lg->cap - 1;
	for (size_t i = key & mask;; i = (i + 1) & mask) {
		if (lg->seen[i] == key) {
			fresh = false;
			break;
		}
		if (lg->seen[i] == 0) {
			lg->seen[i] = key;
			lg->nseen++;
			break;
		}
	}
	pthread_mutex_unlock(&lg->lock);
	return fresh;
}

void afd_log_once(struct afd_log *lg, uint64_t key, enum afd_log_level lvl,
		  const char *fmt, ...)
{
	if ((lvl == AFD_LOG_DEBUG && !lg->debug) || !first_time(lg, key))
		return;
	va_list ap;
	va_start(ap, fmt);
	vlog(lg, lvl, fmt, ap);
	va_end(ap);
}

void afd_log_broken(struct afd_log *lg, uint64_t key, const char *path,
		    const af_error *err)
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
