/* SPDX-License-Identifier: MIT */
/* The metadata texts of a Zarr group and of its child arrays. */
#include <stdlib.h>

#include "arrayfs/af_zarr_group.h"
#include "zarr_group_i.h"
#include "zarr_i.h"
#include "zarr_json_i.h"

af_status zg_put_group_file(af_zarr_group_file which, zj *w, af_error *err)
{
	switch (which) {
	case AF_ZG_ZGROUP:
		zj_begin(w, '{');
		zj_key(w, "zarr_format");
		zj_u64(w, 2);
		zj_end(w, '}');
		return AF_OK;
	case AF_ZG_ZATTRS:
		zj_begin(w, '{');
		zj_end(w, '}');
		return AF_OK;
	case AF_ZG_ZARR_JSON:
		zj_begin(w, '{');
		zj_key(w, "zarr_format");
		zj_u64(w, 3);
		zj_key(w, "node_type");
		zj_cstr(w, "group");
		zj_key(w, "attributes");
		zj_begin(w, '{');
		zj_end(w, '}');
		zj_end(w, '}');
		return AF_OK;
	}
	return af_error_set(err, AF_E_RANGE, AF_NO_OFFSET,
			    "a Zarr group has no metadata file of kind %d",
			    (int)which);
}

af_status af_zarr_group_text(af_zarr_group_file which, char **out, size_t *len,
			     af_error *err)
{
	*out = NULL;
	*len = 0;
	zj w;
	zj_init(&w);
	af_status st = zg_put_group_file(which, &w, err);
	char *text;
	size_t n;
	af_status fin = zj_finish(&w, &text, &n);
	if (st != AF_OK) {
		free(text);
		return st;
	}
	if (fin != AF_OK)
		return af_error_set(err, fin, AF_NO_OFFSET,
				    "out of memory writing Zarr group metadata");
	*out = text;
	*len = n;
	return AF_OK;
}

af_status af_zarr_group_array_text(const af_zarr_layout *l, af_zarr_file which,
				   const char *key, size_t key_len, char **out,
				   size_t *len, af_error *err)
{
	*out = NULL;
	*len = 0;
	if (!key || key_len == 0 || key_len >= AF_ZARR_NAME_MAX)
		return af_error_set(err, AF_E_INVAL, AF_NO_OFFSET,
				    "no child of a Zarr group has a key of %zu bytes",
				    key_len);
	af_zarr_dims dims = { key, key_len };
	return af_zarr_text_dims(l, which, &dims, out, len, err);
}
