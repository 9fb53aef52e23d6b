/* SPDX-License-Identifier: MIT */
/* Daemon logging: stderr in the foreground, syslog once daemonized. */
#ifndef ARRAYFS_DAEMON_LOG_H
#define ARRAYFS_DAEMON_LOG_H

#include <stdbool.h>
#include <stdint.h>
#include <pthread.h>

#include "arrayfs/af_status.h"

enum afd_log_level { AFD_LOG_ERR, AFD_LOG_WARN, AFD_LOG_INFO, AFD_LOG_DEBUG };

/*
 * Log settings plus a bounded "already said" set, so one broken source
 * version gets one line however often it is looked up.
 */
struct afd_log {
	bool to_syslog;
	bool debug;
	pthread_mutex_t lock;
	uint64_t *seen;   /* open-addressed set of line keys, 0 = empty */
	size_t nseen, cap;
};

int afd_log_init(struct afd_log *lg, bool debug);
/* Switch to syslog (after daemonizing). */
void afd_log_use_syslog(struct afd_log *lg);
void afd_log_destroy(struct afd_log *lg);

void afd_log(struct afd_log *lg, enum afd_log_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/** Like afd_log, but only the first time @p key is seen. */
void afd_log_once(struct afd_log *lg, uint64_t key, enum afd_log_level lvl,
		  const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/*
 * "cannot read <path>: <reason> (at byte N)", once per @p key (0 = always).
 * Callers derive key from the path and the source's identity.
 */
void afd_log_broken(struct afd_log *lg, uint64_t key, const char *path,
		    const af_error *err);

#endif /* ARRAYFS_DAEMON_LOG_H */
