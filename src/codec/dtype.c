/* SPDX-License-Identifier: MIT */
/* STUB: to be replaced by the real implementation. */
#include "arrayfs/arrayfs.h"

af_status af_dtype_parse(const char *text, size_t len, bool allow_long_suffix,
			 af_dtype *out, af_error *err)
{
	(void)text; (void)len; (void)allow_long_suffix; (void)out;
	return af_error_set(err, AF_E_UNSUPPORTED, AF_NO_OFFSET, "not implemented");
}

af_status af_dtype_parse_typestr(const char *s, size_t len, af_dtype *out,
				 af_error *err)
{
	(void)s; (void)len; (void)out;
	return af_error_set(err, AF_E_UNSUPPORTED, AF_NO_OFFSET, "not implemented");
}
