/* SPDX-License-Identifier: MIT */
/* Sources over a byte range of another source. */
#include <stddef.h>
#include <string.h>

#include "bytes_i.h"
#include "subsource_i.h"

static ssize_t sub_pread(const af_source *src, void *buf, size_t len,
			 uint64_t off)
{
	const af_subsource *sub = src->ctx;
	if (off >= src->size)
		return 0;
	if (len > src->size - off)
		len = src->size - off;
	/* base + off <= base + size, checked at init */
	return sub->parent.pread(&sub->parent, buf, len, sub->base + off);
}

af_status af_subsource_init(af_subsource *sub, const af_source *parent,
			    uint64_t off, uint64_t len, af_error *err)
{
	memset(sub, 0, sizeof(*sub));
	/* an empty source on failure; its pread also tells a memory parent */
	af_source_init_mem(&sub->src, NULL, 0);
	uint64_t end;
	if (af_add(off, len, &end))
		return af_error_set(err, AF_E_OVERFLOW, off,
				    "range of %llu bytes at byte %llu overflows",
				    (unsigned long long)len,
				    (unsigned long long)off);
	if (end > parent->size)
		return af_error_set(err, AF_E_RANGE, off,
				    "range [%llu, %llu) runs past the end of a %llu-byte source",
				    (unsigned long long)off,
				    (unsigned long long)end,
				    (unsigned long long)parent->size);
	/* a plain memory or fd child keeps reads one call deep and lets the
	 * daemon splice; only other parents need the forwarding pread */
	if (parent->fd >= 0) {
		uint64_t base;
		if (af_add(parent->fd_base, off, &base) ||
		    af_add(base, len, &end) || end > (uint64_t)INT64_MAX)
			return af_error_set(err, AF_E_OVERFLOW, off,
					    "file offset of range at byte %llu overflows",
					    (unsigned long long)off);
		af_source_init_fd(&sub->src, parent->fd, base, len);
		return AF_OK;
	}
	if (parent->mem && parent->pread == sub->src.pread) {
		af_source_init_mem(&sub->src, parent->mem + off, (size_t)len);
		return AF_OK;
	}
	sub->parent = *parent;
	sub->base = off;
	sub->src.pread = sub_pread;
	sub->src.fd = -1;
	sub->src.mem = NULL;
	sub->src.size = len;
	sub->src.ctx = sub;
	return AF_OK;
}
