/* SPDX-License-Identifier: MIT */
/* STUB: to be replaced by the real implementation. */
#include "arrayfs/arrayfs.h"

af_status af_view_open(af_view **out, const af_array *a, const af_source *src,
		       af_view_kind kind, af_error *err)
{
	(void)a; (void)src; (void)kind; *out = NULL;
	return af_error_set(err, AF_E_UNSUPPORTED, AF_NO_OFFSET, "not implemented");
}
void af_view_close(af_view *v) { (void)v; }
uint64_t af_view_size(const af_view *v) { (void)v; return 0; }
af_status af_view_read(af_view *v, void *buf, size_t len, uint64_t off,
		       size_t *nread, af_error *err)
{
	(void)v; (void)buf; (void)len; (void)off; *nread = 0;
	return af_error_set(err, AF_E_UNSUPPORTED, AF_NO_OFFSET, "not implemented");
}
af_status af_view_extent(const af_view *v, uint64_t off, af_extent *out)
{
	(void)v; (void)off; (void)out;
	return AF_E_UNSUPPORTED;
}
