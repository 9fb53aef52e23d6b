/* SPDX-License-Identifier: MIT */
/**
 * Daemon logging: stderr in the foreground, syslog once daemonized.
 *
 * Lines about a file are said once: a broken source is looked up and read
 * over and over, and one line per version is what a person can use. Each
 * such line has a key naming what it is about (struct afd_logkey); the
 * log keeps a bounded set of the keys it has said.
 */
#ifndef ARRAYFS_DAEMON_LOG_H
#define ARRAYFS_DAEMON_LOG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <pthread.h>

#include "arrayfs/af_status.h"

enum afd_log_level { AFD_LOG_ERR, AFD_LOG_WARN, AFD_LOG_INFO, AFD_LOG_DEBUG };

/* The seen-set is emptied when it holds this many keys: a line may then be
 * said again, and memory stays bounded. */
#define AFD_LOG_SEEN_MAX 65536u

/** What a line said once is about: one value per kind of line. */
enum afd_line {
	AFD_LINE_ALWAYS = 0,     /* not remembered: said every time */
	AFD_LINE_UNPARSED,       /* a source shown as a plain file: why */
	AFD_LINE_ZIP_WARNING,    /* index: the archive's warning number */
	AFD_LINE_ZIP_LONG_NAMES, /* members left out for a long name part */
	AFD_LINE_RA_FLAGS,       /* unknown RawArray flag bits */
	AFD_LINE_MEMBER_PARSE,   /* index: a member unreadable or not an array */
	AFD_LINE_MEMBER_OPEN,    /* index: a member that failed to open */
	AFD_LINE_OPEN,           /* a file of the mount failed to open */
	AFD_LINE_READ,           /* index: the af_status a read failed with */
	AFD_LINE_CHANGED,        /* the source changed under an open file */
	AFD_LINE_STALE,          /* a node's source changed before its read */
	AFD_LINE_NETWORK_FS,     /* the source is on a network file system */
	AFD_LINE_INDEX,          /* index: a member's saved inflate index */
	AFD_LINE_STACK,          /* a folder's arrays do not stack: why */
	AFD_LINE_ZGROUP,         /* index: hash of a name left out of a
				  * `.zarr` group (or 0: no .zmetadata) */
};

/**
 * The key of a line said once. Two keys are the same line only when all
 * three fields are equal (no arithmetic mixes them).
 */
struct afd_logkey {
	enum afd_line kind;
	/* the version of the source it is about (afd_ident_key of the source,
	 * or of the file in the mount), 0 for the whole mount */
	uint64_t source;
	/* which one of that kind in that source (member, warning, status) */
	uint64_t index;
};

/** Log settings plus the bounded "already said" set. */
struct afd_log {
	bool to_syslog;
	bool debug;
	FILE *out;        /* lines before syslog: stderr (tests: a file) */
	pthread_mutex_t lock;
	struct afd_logkey *seen;  /* open addressing; kind ALWAYS = empty */
	size_t nseen, cap;
};

/** Set up @p lg (lines to stderr). Returns 0, or -1 out of memory. */
int afd_log_init(struct afd_log *lg, bool debug);
/** Switch to syslog (after daemonizing). */
void afd_log_use_syslog(struct afd_log *lg);
void afd_log_destroy(struct afd_log *lg);

void afd_log(struct afd_log *lg, enum afd_log_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/** Like afd_log, but only the first time @p key is seen. */
void afd_log_once(struct afd_log *lg, const struct afd_logkey *key,
		  enum afd_log_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/**
 * "cannot read <path>: <reason> (at byte N)", once per @p key (its kind
 * AFD_LINE_ALWAYS: every time).
 */
void afd_log_broken(struct afd_log *lg, const struct afd_logkey *key,
		    const char *path, const af_error *err);

#endif /* ARRAYFS_DAEMON_LOG_H */
