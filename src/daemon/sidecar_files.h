/* SPDX-License-Identifier: MIT */
/**
 * The sidecar headers of an array directory, `data.hdr` (AE_HDR) and
 * `B.nhdr` (AE_NHDR): small texts beside `data`, made by the codec
 * (af_sidecar.h) from the header alone, present only where their format
 * can describe the array.
 */
#ifndef ARRAYFS_DAEMON_SIDECAR_FILES_H
#define ARRAYFS_DAEMON_SIDECAR_FILES_H

#include <stddef.h>

#include "arrayfs/af_sidecar.h"
#include "nodes.h"

struct afd_arrinfo;

/**
 * Set has[] and size[] of AE_HDR and AE_NHDR for array @p ai (parsed, its
 * `data` entry known: the headers describe `data`, so an array without it
 * has neither).
 */
void afd_sidecar_fill(struct afd_arrinfo *ai);

/**
 * The text of sidecar @p e (AE_HDR or AE_NHDR) of @p a: *out malloc'd
 * (the caller frees), *len its length. Returns AF_OK, AF_E_UNSUPPORTED
 * (no such file for this array), AF_E_INVAL, AF_E_NOMEM.
 */
af_status afd_sidecar_text(const af_array *a, enum afd_entry e, char **out,
			   size_t *len);

#endif /* ARRAYFS_DAEMON_SIDECAR_FILES_H */
