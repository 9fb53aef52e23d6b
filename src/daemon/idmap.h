/* SPDX-License-Identifier: MIT */
/**
 * The id map: every nodeid the daemon ever gave the kernel, with what it
 * names, kept after the kernel forgets it, so an NFS server's file handle
 * (nodeid + generation, see export.h) can be turned back into a node.
 *
 * Invariants:
 *  - Ids come from a counter that only grows (FUSE_ROOT_ID = 1 is the root
 *    and is never in the map): an id is never given to a second identity
 *    in one daemon's life, nor across restarts while the map file is kept
 *    (the counter is saved with it). Each id carries the generation of the
 *    daemon run that issued it, a random number per run: should the file
 *    be lost (crash, corrupt, evicted), ids issued again get another
 *    generation and old handles are ESTALE, never another file.
 *  - One record per identity (kind, entry, path, member, sub, version):
 *    issuing an id for an identity whose record names another source file
 *    (dev/ino) replaces that record, so the old id is unknown from then on.
 *  - Bounded: at most `max` records, in segments of AFD_IDMAP_SEG bytes
 *    taking at most AFD_IDMAP_BYTES together; the least recently used goes
 *    first. A lookup touches the child, then its parent, so a folder is
 *    always more recent than anything looked up in it and goes after it.
 *  - Its memory is its own: records are packed into segments mapped
 *    apart from the heap, in the order they were last used (a touch moves
 *    a record to the newest segment), and a segment whose records all went
 *    is unmapped. Records kept in malloc's heap would hold a page each of
 *    the nodes freed around them after a big listing is forgotten.
 *  - Not thread-safe: the node table's lock guards it (nodes.h).
 */
#ifndef ARRAYFS_DAEMON_IDMAP_H
#define ARRAYFS_DAEMON_IDMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** What an id names. path/member/name point into the record. */
struct afd_idrec {
	uint64_t id;
	uint32_t gen;
	uint8_t kind;          /* enum afd_nkind */
	uint8_t entry;         /* enum afd_entry */
	uint64_t sub, version; /* as in afd_node */
	uint64_t parent;       /* the parent's nodeid (FUSE_ROOT_ID at the top) */
	uint64_t dev, ino;     /* the source file's (or folder's) identity */
	const char *path;      /* source-relative */
	const char *member;    /* NULL: none */
	const char *name;      /* the name in the parent */
};

struct afd_idseg;

struct afd_idmap {
	struct afd_idnode **by_id, **by_ident;  /* mapped, nbuckets each */
	size_t nbuckets, count, max;
	size_t seg_bytes;      /* the segments mapped, in bytes */
	struct afd_idseg *oldest, *newest;
	struct afd_idseg *spare;   /* the last segment emptied, kept for reuse */
	uint64_t next_id;
	uint32_t gen;          /* this run's generation for new ids */
	bool dirty;            /* changed since loaded or saved */
};

/** Records kept when no bound is given. */
#define AFD_IDMAP_MAX_DEFAULT 65536u
/** The largest bound accepted (a map file is refused past it). */
#define AFD_IDMAP_MAX_LIMIT (1u << 24)
/** Bytes of one segment of records (a power of two: a record finds its
 * segment by its address). A record is about 112 bytes and its strings;
 * one that does not fit a segment is not kept (ESTALE once forgotten). */
#define AFD_IDMAP_SEG ((size_t)64 << 10)
/** Bytes the segments may take together: with the default count, a map
 * file stays well under the size a load accepts. */
#define AFD_IDMAP_BYTES ((size_t)16 << 20)

/**
 * Set up an empty map of at most @p max records (0: the default) whose new
 * ids get generation @p gen (never 0: the root's). Returns 0 or -ENOMEM.
 */
int afd_idmap_init(struct afd_idmap *m, size_t max, uint32_t gen);
void afd_idmap_destroy(struct afd_idmap *m);

/** A random nonzero generation for this run (getrandom, else time and pid). */
uint32_t afd_idmap_new_gen(void);

/**
 * The id of identity @p want (its id and gen fields ignored): the record's
 * if one names the same identity and source file, touched; else a new id
 * with this run's generation (a record naming another file is dropped).
 * Either way its parent/name are set from @p want. On 0, *id and *gen are
 * set. Returns -ENOMEM.
 */
int afd_idmap_issue(struct afd_idmap *m, const struct afd_idrec *want,
		    uint64_t *id, uint32_t *gen);

/**
 * The record of @p id, touched, or NULL. Borrowed: valid until the map
 * changes (copy under the lock with afd_idrec_dup).
 */
const struct afd_idrec *afd_idmap_find(struct afd_idmap *m, uint64_t id);

/** Mark @p id recently used, if it is known. */
void afd_idmap_touch(struct afd_idmap *m, uint64_t id);

/** Forget @p id (its source is gone or names another file). */
void afd_idmap_drop(struct afd_idmap *m, uint64_t id);

/** A malloc'd copy of @p r with its own strings (free with free()), or NULL. */
struct afd_idrec *afd_idrec_dup(const struct afd_idrec *r);

/**
 * Add @p r as it is (id and gen kept; a map being loaded), as the most
 * recent record, evicting the oldest past the bound. A record with the
 * same id or identity is replaced. Raises next_id past r->id.
 * Returns 0, -EINVAL (id <= FUSE_ROOT_ID) or -ENOMEM.
 */
int afd_idmap_insert(struct afd_idmap *m, const struct afd_idrec *r);

/** Records oldest first: for (r = afd_idmap_first(m, &it); r;
 * r = afd_idmap_next(&it)). The map must not change meanwhile. */
const struct afd_idrec *afd_idmap_first(const struct afd_idmap *m,
					const void **it);
const struct afd_idrec *afd_idmap_next(const void **it);

/**
 * True if @p path (@p len bytes, no NUL among them) is a path the daemon
 * could have issued: "." or components joined by '/', none of them empty,
 * "." or "..".
 */
bool afd_idmap_path_ok(const char *path, size_t len);

/* ---- the map file (idmap_file.c): untrusted on load ---- */

/**
 * Serialize @p m (oldest record first) into a malloc'd buffer: *out and
 * *len. @p key names the SOURCE (stored and checked on load). Returns 0 or
 * -ENOMEM.
 */
int afd_idmap_encode(const struct afd_idmap *m, uint64_t key,
		     unsigned char **out, size_t *len);

/**
 * Parse a map file's bytes into @p m (set up, empty): the header, the
 * checksum, every record validated; nothing is added unless all of it is
 * valid. @p key must match the file's. Returns 0, or -EINVAL with a reason
 * in @p why (@p whylen bytes), or -ENOMEM.
 */
int afd_idmap_decode(struct afd_idmap *m, uint64_t key,
		     const unsigned char *buf, size_t len, char *why,
		     size_t whylen);

/**
 * Load @p file (at most a bounded size) into @p m. Returns 0, -ENOENT (no
 * file: nothing to say) or -EINVAL / -errno with the reason in @p why.
 */
int afd_idmap_load(struct afd_idmap *m, uint64_t key, int dirfd,
		   const char *file, char *why, size_t whylen);

/**
 * Write @p m to @p file in folder @p dirfd atomically (a temporary file in
 * the same folder, fsync, rename over). Returns 0 or -errno.
 */
int afd_idmap_save(const struct afd_idmap *m, uint64_t key, int dirfd,
		   const char *file);

/** Write @p len bytes at @p buf (afd_idmap_encode's) as afd_idmap_save
 * does. Returns 0 or -errno. */
int afd_idmap_write(const unsigned char *buf, size_t len, int dirfd,
		    const char *file);

#endif /* ARRAYFS_DAEMON_IDMAP_H */
