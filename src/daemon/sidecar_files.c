/* SPDX-License-Identifier: MIT */
/* data.hdr and B.nhdr: which arrays have them, their sizes and texts. */
#include <stdlib.h>

#include "sidecar_files.h"
#include "srcfile.h"

af_status afd_sidecar_text(const af_array *a, enum afd_entry e, char **out,
			   size_t *len)
{
	af_error err;
	af_error_clear(&err);
	if (e != AE_HDR && e != AE_NHDR)
		return AF_E_INVAL;
	return af_sidecar_text(a, e == AE_HDR ? AF_SIDECAR_ENVI : AF_SIDECAR_NRRD,
			       out, len, &err);
}

void afd_sidecar_fill(struct afd_arrinfo *ai)
{
	static const enum afd_entry which[] = { AE_HDR, AE_NHDR };
	for (size_t i = 0; i < sizeof(which) / sizeof(which[0]); i++) {
		enum afd_entry e = which[i];
		char *text = NULL;
		size_t len = 0;
		ai->has[e] = ai->has[AE_DATA] &&
			     afd_sidecar_text(&ai->a, e, &text, &len) == AF_OK;
		ai->size[e] = ai->has[e] ? len : 0;
		free(text);
	}
}
