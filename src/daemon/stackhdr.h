/* SPDX-License-Identifier: MIT */
/**
 * Reading a folder's member headers ahead, in parallel, for a `.stack`
 * scan: worker threads open member i, fstat it and read its first
 * AFD_HDR_PREFIX bytes while the scan (the codec's af_stack_scan, strictly
 * in order) parses the ones before.
 *
 * Invariants:
 *  - Bounded: at most AFD_HDR_WINDOW members are open or buffered at once
 *    (a worker waits until the scan has consumed member i - WINDOW before
 *    it takes member i), so memory and fds do not grow with the folder.
 *  - Every fd a worker opened is closed by afd_hdrs_put or afd_hdrs_stop,
 *    including the ones read ahead of a scan that stopped early.
 *  - Folders of fewer than AFD_HDR_PARALLEL_MIN members are read in the
 *    calling thread, with no worker.
 */
#ifndef ARRAYFS_DAEMON_STACKHDR_H
#define ARRAYFS_DAEMON_STACKHDR_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "arrayfs/arrayfs.h"

struct afd_srcroot;

#define AFD_HDR_PREFIX 1024u      /* bytes read with the stat */
#define AFD_HDR_WINDOW 128u       /* members open or buffered at once */
#define AFD_HDR_WORKERS 2u
#define AFD_HDR_PARALLEL_MIN 256u
#define AFD_HDR_BATCH 16u         /* members a worker takes at once */

/** One member read ahead. */
struct afd_hdr {
	uint64_t i;
	int state;                /* HDR_EMPTY, HDR_BUSY, HDR_READY */
	int fd;                   /* open on READY unless err or the whole
				   * file is in buf, else -1 */
	int err;                  /* -errno of the open, fstat or read */
	struct stat st;
	uint32_t len;             /* prefix bytes read */
	unsigned char buf[AFD_HDR_PREFIX];
	af_prefix pre;            /* fd, buf and len, as src reads them */
	af_source src;            /* the file: its prefix from buf */
};

/**
 * Read the first AFD_HDR_PREFIX bytes of hd->fd, a regular file of @p size
 * bytes, into hd->buf, and make hd->src that file: the prefix from memory,
 * the rest from hd->fd (which stays the caller's). A header parse over it
 * costs one pread, not one per field. Returns 0 or -errno.
 */
int afd_hdr_read_prefix(struct afd_hdr *hd, uint64_t size);

/** Returns member i's name (NUL-terminated), for the workers. */
typedef const char *(*afd_hdr_name_fn)(void *arg, uint64_t i);

struct afd_hdrs {
	const struct afd_srcroot *root;
	int dirfd;
	afd_hdr_name_fn name;
	void *arg;
	uint64_t n;
	pthread_mutex_t lock;
	pthread_cond_t cv;
	uint64_t next;            /* the next member a worker takes */
	uint64_t consumed;        /* members the scan is done with */
	bool stop;
	unsigned nworkers;
	pthread_t worker[AFD_HDR_WORKERS];
	struct afd_hdr slot[AFD_HDR_WINDOW];
};

/**
 * Start reading the @p n members of folder @p dirfd ahead (names from
 * @p name). Returns 0 or -ENOMEM (*h must then not be used).
 */
int afd_hdrs_start(struct afd_hdrs **out, const struct afd_srcroot *root,
		   int dirfd, uint64_t n, afd_hdr_name_fn name, void *arg);
/**
 * Member @p i, read (the calls come in order 0, 1, ...). Its src reads
 * the file (the prefix from memory). Give it back with afd_hdrs_put.
 */
struct afd_hdr *afd_hdrs_get(struct afd_hdrs *h, uint64_t i);
/** Done with member @p hd: its fd is closed and its slot reused. */
void afd_hdrs_put(struct afd_hdrs *h, struct afd_hdr *hd);
/** Stop the workers, close what they read ahead, free @p h. */
void afd_hdrs_stop(struct afd_hdrs *h);

#endif /* ARRAYFS_DAEMON_STACKHDR_H */
