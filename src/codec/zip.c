/* SPDX-License-Identifier: MIT */
/* STUB: to be replaced by the real implementation. */
#include "arrayfs/arrayfs.h"

af_status af_zip_open(af_zip **out, const af_source *src, af_error *err)
{
	(void)src; *out = NULL;
	return af_error_set(err, AF_E_UNSUPPORTED, AF_NO_OFFSET, "not implemented");
}
void af_zip_close(af_zip *z) { (void)z; }
size_t af_zip_count(const af_zip *z) { (void)z; return 0; }
const af_zip_entry *af_zip_entry_at(const af_zip *z, size_t i) { (void)z; (void)i; return NULL; }
long af_zip_find(const af_zip *z, const char *name) { (void)z; (void)name; return -1; }
size_t af_zip_warning_count(const af_zip *z) { (void)z; return 0; }
const char *af_zip_warning(const af_zip *z, size_t i) { (void)z; (void)i; return NULL; }
af_status af_zip_data_offset(const af_zip *z, size_t i, uint64_t *offset, af_error *err)
{
	(void)z; (void)i; (void)offset;
	return af_error_set(err, AF_E_UNSUPPORTED, AF_NO_OFFSET, "not implemented");
}
