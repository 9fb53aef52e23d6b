/* SPDX-License-Identifier: MIT */
/* Failures with a reason, from where they happen to the reply (fail.h). */
#include <errno.h>
#include <stdio.h>

#include "fail.h"

void afd_failure_clear(struct afd_failure *f)
{
	if (!f)
		return;
	af_error_clear(&f->err);
	f->key = (struct afd_logkey){ AFD_LINE_ALWAYS, 0, 0 };
	f->where[0] = '\0';
}

int afd_failure_set(struct afd_failure *f, const struct afd_logkey *key,
		    const char *where, const af_error *err)
{
	/* a failure, whatever its record says */
	af_status st = err->status == AF_OK ? AF_E_IO : err->status;
	if (f) {
		f->err = *err;
		f->err.status = st;
		f->key = *key;
		snprintf(f->where, sizeof(f->where), "%s", where ? where : "?");
	}
	return -af_status_errno(st);
}

int afd_failure_errno(struct afd_log *lg, int rc, const struct afd_failure *f)
{
	if (!f || f->err.status == AF_OK)
		return rc < 0 ? -rc : EIO;
	afd_log_broken(lg, &f->key, f->where, &f->err);
	return af_status_errno(f->err.status);
}
