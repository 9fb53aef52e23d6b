/* SPDX-License-Identifier: MIT */
/* STUB: to be replaced by the real implementation. */
#include "arrayfs/arrayfs.h"

af_status af_inflate_open(af_inflate **out, const af_source *compressed,
			  uint64_t uncomp_size, uint32_t crc, af_error *err)
{
	(void)compressed; (void)uncomp_size; (void)crc; *out = NULL;
	return af_error_set(err, AF_E_UNSUPPORTED, AF_NO_OFFSET, "not implemented");
}
af_status af_inflate_read(af_inflate *z, void *buf, size_t len, uint64_t off,
			  size_t *nread, af_error *err)
{
	(void)z; (void)buf; (void)len; (void)off; *nread = 0;
	return af_error_set(err, AF_E_UNSUPPORTED, AF_NO_OFFSET, "not implemented");
}
size_t af_inflate_memory(const af_inflate *z) { (void)z; return 0; }
size_t af_inflate_points(const af_inflate *z) { (void)z; return 0; }
void af_inflate_close(af_inflate *z) { (void)z; }
