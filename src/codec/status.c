/* SPDX-License-Identifier: MIT */
/* Status names, errno mapping and the error record. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "arrayfs/af_status.h"

const char *af_status_str(af_status st)
{
	switch (st) {
	case AF_OK: return "ok";
	case AF_E_NOMEM: return "out of memory";
	case AF_E_IO: return "I/O error";
	case AF_E_TRUNCATED: return "truncated";
	case AF_E_MAGIC: return "bad magic";
	case AF_E_VERSION: return "unsupported version";
	case AF_E_HEADER: return "bad header";
	case AF_E_DTYPE: return "bad dtype";
	case AF_E_SHAPE: return "bad shape";
	case AF_E_OVERFLOW: return "size overflow";
	case AF_E_UNSUPPORTED: return "unsupported";
	case AF_E_CORRUPT: return "corrupt data";
	case AF_E_NAME: return "unsafe name";
	case AF_E_LIMIT: return "limit exceeded";
	case AF_E_RANGE: return "out of range";
	case AF_E_INVAL: return "invalid argument";
	}
	return "unknown status";
}

int af_status_errno(af_status st)
{
	/* af_status.h says why each one is what it is */
	switch (st) {
	case AF_OK: return 0;
	case AF_E_NOMEM: return ENOMEM;
	case AF_E_LIMIT: return EFBIG;
	default: return EIO;
	}
}

af_status af_error_set(af_error *err, af_status st, uint64_t offset,
		       const char *fmt, ...)
{
	if (!err)
		return st;
	err->status = st;
	err->offset = offset;
	err->sys_errno = 0;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return st;
}

void af_error_clear(af_error *err)
{
	if (!err)
		return;
	memset(err, 0, sizeof(*err));
	err->offset = AF_NO_OFFSET;
}
