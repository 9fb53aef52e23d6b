/* SPDX-License-Identifier: MIT */
/* STUB: to be replaced by the real implementation. */
#include "arrayfs/arrayfs.h"

af_status af_member_open(af_member **out, const af_zip *z, size_t i, af_error *err)
{
	(void)z; (void)i; *out = NULL;
	return af_error_set(err, AF_E_UNSUPPORTED, AF_NO_OFFSET, "not implemented");
}
const af_source *af_member_source(const af_member *m) { (void)m; return NULL; }
size_t af_member_memory(const af_member *m) { (void)m; return 0; }
void af_member_close(af_member *m) { (void)m; }
