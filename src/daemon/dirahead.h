/* SPDX-License-Identifier: MIT */
/**
 * A readdirplus listing of a mirrored folder parses every array it lists,
 * one request at a time: the kernel sends the next batch only once the
 * program has taken this one. The thread that answered a batch then
 * parses the next two into the source cache, from the last name back,
 * until it meets a name parsed already: where the last such pass
 * stopped, or where the next request, which parses from its first name,
 * got to. So a request mostly finds its names parsed and is answered at
 * once, while its thread goes on with the batch after: two cores on one
 * listing. The result is a cache fill: what a lookup answers never
 * depends on it, and a listing's entries only through the parse's stamp
 * (afd_src_get_fresh).
 */
#ifndef ARRAYFS_DAEMON_DIRAHEAD_H
#define ARRAYFS_DAEMON_DIRAHEAD_H

#include <stddef.h>
#include <sys/types.h>

struct afd_ctx;

/** The next batch of a listing: taken before the reply (the handle may
 *  be released as soon as it is sent), run after it. */
struct afd_dir_ahead {
	char *path;      /* the folder's source path, or NULL: nothing to do */
	off_t off;       /* where the next batch starts */
	size_t count;    /* names to look at: twice the batch just sent */
};

/** Parse the arrays among the next @p a->count names of the folder from
 *  @p a->off, last first, until one is found cached; frees a->path. */
void afd_dir_ahead_run(struct afd_ctx *c, struct afd_dir_ahead *a);

#endif /* ARRAYFS_DAEMON_DIRAHEAD_H */
