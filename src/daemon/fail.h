/* SPDX-License-Identifier: MIT */
/**
 * The one error boundary. A failure with a reason (an af_error from the
 * codec, or from the daemon's own checks of a source) travels from where
 * it happens to the reply as a struct afd_failure; ops.c answers it with
 * afd_failure_errno, which logs the reason once under its key and gives
 * the errno af_status_errno has for its status (the one table, see
 * af_status.h). So the same failure gets the same errno whether it is
 * found when a file is opened or when it is read.
 *
 * Failures without a reason (a name that is not there, a write to the
 * read-only mount, ENOMEM of the daemon's own bookkeeping) stay plain
 * negative errnos and are answered as they are, without a line.
 */
#ifndef ARRAYFS_DAEMON_FAIL_H
#define ARRAYFS_DAEMON_FAIL_H

#include "arrayfs/af_status.h"
#include "log.h"

/* Room for the path in a failure's line (lines are cut at 1 KiB anyway). */
#define AFD_WHERE_MAX 1024

struct afd_failure {
	af_error err;             /* err.status AF_OK: no reason recorded */
	struct afd_logkey key;    /* what its line is about: said once */
	char where[AFD_WHERE_MAX]; /* the file it is about, for the line */
};

/*
 * A NULL @p f is allowed where a caller has no use for the reason (unit
 * tests); the daemon's reply paths always pass one.
 */

/** Record "no reason yet" in @p f. */
void afd_failure_clear(struct afd_failure *f);

/**
 * Record in @p f that @p where failed for reason @p err (copied), to be
 * logged once under @p key. Returns -af_status_errno(err->status), the
 * errno the reply will carry, for callers that pass failures up as a
 * negative errno.
 */
int afd_failure_set(struct afd_failure *f, const struct afd_logkey *key,
		    const char *where, const af_error *err);

/**
 * The errno to answer failure @p rc (a negative errno) with: when @p f
 * records a reason, that reason is logged once and the errno is
 * af_status_errno of its status; else -rc, unlogged.
 */
int afd_failure_errno(struct afd_log *lg, int rc, const struct afd_failure *f);

#endif /* ARRAYFS_DAEMON_FAIL_H */
