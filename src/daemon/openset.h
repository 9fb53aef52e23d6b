/* SPDX-License-Identifier: MIT */
/**
 * The files and folders the kernel holds open. The kernel may never send
 * release for them (the daemon is stopped by a signal while a reader has
 * a file open), so the set lets shutdown close what is left instead of
 * leaking it. fi->fh points at an afd_open, which points at the object.
 */
#ifndef ARRAYFS_DAEMON_OPENSET_H
#define ARRAYFS_DAEMON_OPENSET_H

#include <pthread.h>

struct afd_open {
	struct afd_open *prev, *next;
	void *obj;
	void (*close)(void *obj);
};

struct afd_openset {
	pthread_mutex_t lock;
	struct afd_open *head;
};

void afd_openset_init(struct afd_openset *s);
/** Register @p obj; returns its entry, or NULL when out of memory. */
struct afd_open *afd_openset_add(struct afd_openset *s, void *obj,
				 void (*close)(void *obj));
/** Unregister @p o, close its object and free it. */
void afd_openset_remove(struct afd_openset *s, struct afd_open *o);
/** Close everything still open (at shutdown, no request in flight). */
void afd_openset_destroy(struct afd_openset *s);

#endif /* ARRAYFS_DAEMON_OPENSET_H */
