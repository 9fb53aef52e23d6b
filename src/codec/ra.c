/* SPDX-License-Identifier: MIT */
/* STUB: to be replaced by the real implementation. */
#include "arrayfs/arrayfs.h"

af_status af_ra_parse(const af_source *src, af_array *out, af_error *err)
{
	(void)src; (void)out;
	return af_error_set(err, AF_E_UNSUPPORTED, AF_NO_OFFSET, "not implemented");
}

void af_ra_type_of(const af_dtype *dt, uint64_t *eltype, uint64_t *elbyte)
{
	(void)dt; *eltype = 0; *elbyte = 0;
}
