/* SPDX-License-Identifier: MIT */
/* STUB: to be replaced by the real implementation. */
#include "arrayfs/arrayfs.h"

af_status af_text_shape(const af_array *a, char **out, size_t *len)
{ (void)a; *out = NULL; *len = 0; return AF_E_UNSUPPORTED; }
af_status af_text_dtype(const af_array *a, char **out, size_t *len)
{ (void)a; *out = NULL; *len = 0; return AF_E_UNSUPPORTED; }
af_status af_text_header(const af_array *a, char **out, size_t *len)
{ (void)a; *out = NULL; *len = 0; return AF_E_UNSUPPORTED; }
