/* SPDX-License-Identifier: MIT */
/* Magic numbers at the start of a file, and the words a refusal uses. */
#include <string.h>

#include "arrayfs/af_sniff.h"

static const struct {
	af_magic magic;
	unsigned char len;
	const char *bytes;
	const char *name;
} magics[] = {
	{ AF_MAGIC_NPY, 6, "\x93NUMPY", "a NumPy .npy file" },
	{ AF_MAGIC_RA, 8, "rawarray", "a RawArray .ra file" },
	{ AF_MAGIC_ZIP, 4, "PK\x03\x04", "a zip archive" },
	{ AF_MAGIC_ZIP, 4, "PK\x05\x06", "a zip archive" },
	{ AF_MAGIC_ZIP, 4, "PK\x07\x08", "a zip archive" },
	{ AF_MAGIC_GZIP, 2, "\x1f\x8b", "a gzip file" },
	{ AF_MAGIC_BZIP2, 3, "BZh", "a bzip2 file" },
	{ AF_MAGIC_XZ, 6, "\xfd" "7zXZ\0", "an xz file" },
	{ AF_MAGIC_ZSTD, 4, "\x28\xb5\x2f\xfd", "a zstd file" },
	{ AF_MAGIC_HDF5, 8, "\x89HDF\r\n\x1a\n", "an HDF5 file" },
};

af_magic af_sniff(const void *head, size_t len)
{
	const unsigned char *h = head;
	for (size_t i = 0; i < sizeof(magics) / sizeof(magics[0]); i++) {
		if (len < magics[i].len ||
		    memcmp(h, magics[i].bytes, magics[i].len) != 0)
			continue;
		/* bzip2 is "BZh" and the block size digit: text may start "BZh" */
		if (magics[i].magic == AF_MAGIC_BZIP2 &&
		    (len < 4 || h[3] < '1' || h[3] > '9'))
			continue;
		return magics[i].magic;
	}
	return AF_MAGIC_UNKNOWN;
}

const char *af_magic_name(af_magic m)
{
	for (size_t i = 0; i < sizeof(magics) / sizeof(magics[0]); i++)
		if (magics[i].magic == m)
			return magics[i].name;
	return NULL;
}

af_status af_sniff_explain(const af_source *src, af_magic expected,
			   const char *expected_name, af_error *err)
{
	if (src->size == 0)
		return af_error_set(err, AF_E_MAGIC, 0, "empty file");
	unsigned char head[AF_SNIFF_LEN];
	size_t len = src->size < sizeof(head) ? (size_t)src->size : sizeof(head);
	if (af_source_read_exact(src, head, len, 0, NULL) != AF_OK)
		return AF_OK;
	af_magic m = af_sniff(head, len);
	if (m == AF_MAGIC_UNKNOWN || m == expected)
		return AF_OK;
	return af_error_set(err, AF_E_MAGIC, 0, "%s, not a %s",
			    af_magic_name(m), expected_name);
}
