/* SPDX-License-Identifier: MIT */
/**
 * NFS export: turning a file handle back into a node, and keeping the id
 * map (idmap.h) across daemon restarts.
 *
 * What the kernel does (fs/fuse/inode.c, with FUSE_CAP_EXPORT_SUPPORT):
 * a handle is (nodeid, generation) [+ the parent's]; to open one it looks
 * the nodeid up in its inode cache, and if the inode was forgotten sends
 * LOOKUP of "." in that nodeid: the reply must carry the same nodeid (else
 * EIO) and the handle's generation (else ESTALE); an error reply other
 * than ENOENT is passed on, ENOENT becomes ESTALE. To reconnect a folder
 * it sends LOOKUP of ".." in a nodeid it holds.
 *
 * What a handle gets: the node its id named, if the record is still in the
 * map and its source still is the same file (dev/ino) at the same version;
 * otherwise ESTALE. A source rewritten in place has a new version, so the
 * old version's nodeid (nodes.h: a changed source gets a new nodeid) is
 * ESTALE from then on, never the new bytes under the old id nor the old
 * bytes it no longer has; a client looks the name up again and gets the
 * new id. Folders and array folders have no version: their ids last while
 * the path names the same folder or source file.
 */
#ifndef ARRAYFS_DAEMON_EXPORT_H
#define ARRAYFS_DAEMON_EXPORT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

struct afd_ctx;
struct afd_node;

/**
 * LOOKUP of "." (@p parent false) or ".." (@p parent true) in @p nodeid.
 * On 0, *out is the node with one lookup counted (the caller answers the
 * kernel, or drops the lookup) and *attr its attributes. Returns -ESTALE
 * (the id is unknown, or names something that is gone or changed),
 * -ENOMEM, or another -errno met reading the source.
 */
int afd_export_lookup(struct afd_ctx *c, uint64_t nodeid, bool parent,
		      struct afd_node **out, struct stat *attr);

/**
 * Load the id map of this SOURCE from the index folder (ctx opts.index_dir;
 * none: nothing is kept across restarts). A missing file is silent; one
 * that cannot be used is ignored with one log line.
 */
void afd_export_load(struct afd_ctx *c);

/**
 * Save the id map if it changed (atomically): copied under the node
 * table's lock, written without it. Logs a failure.
 */
void afd_export_save(struct afd_ctx *c);

/** The thread that saves the id map every limits.ids_save_ms while it
 * changes, so a daemon that crashes loses only the latest ids. */
struct afd_saver {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool running, stop;
};

/** Start the saver (nothing with ids_save_ms 0 or no index folder).
 * Returns 0 or -errno (the map is then saved at unmount only). */
int afd_export_saver_start(struct afd_ctx *c);
/** Stop the saver and wait for it; harmless if it never started. */
void afd_export_saver_stop(struct afd_ctx *c);

#endif /* ARRAYFS_DAEMON_EXPORT_H */
