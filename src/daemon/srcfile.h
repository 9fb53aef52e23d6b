/* SPDX-License-Identifier: MIT */
/**
 * The source cache: for a .npy/.ra/.npz source path, its parsed state,
 * tied to the version of the file it was parsed from.
 *
 * Invariants:
 *  - An afd_src is immutable once published, except the per-member table
 *    of an npz (filled lazily under mlock) and refs (atomic).
 *  - It describes exactly one version of the file: (dev, ino, size, mtime,
 *    ctime). afd_src_get re-checks that on every call and re-parses when it
 *    differs, so a changed source is never served from a stale parse.
 *  - Bounded: at most the context's limits.src_max parsed sources and
 *    limits.src_max_zip open archives stay cached (LRU, ctx.h); holders
 *    (open files) keep theirs alive with a reference. Only an npz keeps
 *    an fd (its archive), never an array or a plain file.
 *  - Nothing is inflated or read beyond headers here.
 */
#ifndef ARRAYFS_DAEMON_SRCFILE_H
#define ARRAYFS_DAEMON_SRCFILE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "arrayfs/arrayfs.h"
#include "nodes.h"
#include "zarr_store.h"
#include "npz_tree.h"

struct afd_ctx;
struct afd_lz4share;
struct afd_src;

/** The identity of one version of a source file. */
struct afd_ident {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtim, ctim;
};

void afd_ident_of(struct afd_ident *id, const struct stat *st);
bool afd_ident_eq(const struct afd_ident *a, const struct afd_ident *b);
/** A 64-bit digest of path + version (log-once keys, keep_cache). */
uint64_t afd_ident_key(const char *path, const struct afd_ident *id);

/** What an array directory needs without touching data. */
struct afd_arrinfo {
	af_array a;
	bool has[AE_COUNT];         /* but AE_ZARR: afd_arrinfo_has */
	uint64_t size[AE_COUNT];
	uint64_t offset;    /* user.array.offset */
	struct afd_zarrinfo zarr;  /* B.zarr/ (zarr_store.h) */
	/* `data` is bytes [data_src_off, + size[AE_DATA]) of the source it
	 * was filled from, unchanged (the codec's extent of the whole view
	 * says so: no decoding, no swap); false for an empty or decoded one */
	bool data_plain;
	uint64_t data_src_off;
};

/**
 * Fill which entries array directory @p ai has and their sizes, from its
 * header (ai->a) and @p src (only sizes are asked of it; no byte is read).
 * B.zarr/ is left to be decided when first asked about (zarr_store.h):
 * has[AE_ZARR] stays false, afd_arrinfo_has answers for it.
 */
void afd_arrinfo_fill(struct afd_ctx *c, struct afd_arrinfo *ai,
		      const af_source *src);

/** The codec view that array-directory entry @p e is: AF_VIEW_DATA,
 * AF_VIEW_NPY or AF_VIEW_RA for `data`, B.npy and B.ra; only those. */
af_view_kind afd_entry_view(enum afd_entry e);

/** Whether array directory @p ai has entry @p e (< AE_COUNT); for
 * B.zarr/ this decides it (afd_zarr_exists). */
bool afd_arrinfo_has(const struct afd_arrinfo *ai, enum afd_entry e);

/**
 * What a lookup of an entry of one version of an array folder needs: the
 * version's identity and key, and which entries it has with their sizes.
 * An array folder's node keeps one (nodes.h), so looking up `data` after a
 * listing needs one stat and no parse, even once the parse has left the
 * cache (src_max). 176 bytes; nothing to free.
 */
struct afd_arrsum {
	struct afd_ident id;
	uint64_t key;
	uint32_t has;               /* bit e: the entry e exists (never
				     * B.zarr/: it resolves through a parse) */
	uint64_t size[AE_COUNT];
	bool data_plain;            /* as in afd_arrinfo, of the source file */
	uint64_t data_src_off;
};

/** Fill @p out from parsed array source @p sf (SK_ARRAY). */
void afd_arrsum_of(struct afd_arrsum *out, const struct afd_src *sf);

enum afd_skind { SK_PLAIN = 1, SK_ARRAY, SK_NPZ };
enum afd_mstate { MS_ARRAY = 1, MS_PLAIN, MS_ABSENT };

struct afd_minfo {
	enum afd_mstate state;
	struct afd_arrinfo arr;
	af_member *m;       /* shared by open handles, closed at the last */
	unsigned mrefs;
	/* saved inflate indexes: what m was opened with, and for its log
	 * lines (srcmember.c member_index_note) */
	af_member_opts mopts;
	struct afd_ctx *ctx;
	struct afd_src *src;
	size_t idx;
};

struct afd_src {
	unsigned refs;
	char *path;
	struct stat st;
	struct afd_ident id;
	uint64_t key;       /* afd_ident_key(path, id) */
	/* the parse clock (afd_srcs.clock) read before this version was
	 * opened or stat'ed: it is what the file was at that tick or later */
	uint64_t born;
	enum afd_skind kind;
	struct afd_arrinfo arr;          /* SK_ARRAY */
	int fd;                          /* SK_NPZ: the archive, else -1 */
	af_source zsrc;
	af_zip *zip;
	struct afd_npz_tree tree;
	pthread_mutex_t mlock;
	struct afd_minfo **minfo;        /* per member, lazily */
	/* SK_ARRAY: the shared LZ4 index of an LZ4 .ra, under mlock
	 * (lz4share.h); NULL while no handle decodes it */
	struct afd_lz4share *lz4;
	/* cache links, under afd_srcs.lock */
	struct afd_src *h_next, *lru_prev, *lru_next;
	bool cached;
};

struct afd_srcs {
	pthread_mutex_t lock;
	struct afd_src **tab;
	size_t nbuckets, count, nzip;
	struct afd_src lru;   /* list head: lru.lru_next = most recent */
	/* the parse clock: ticked by each listing's start (afd_src_tick);
	 * atomic */
	uint64_t clock;
	/* Told when a newer version of a cached path replaced the older one,
	 * whose nodes must go (the notifier's queue: set at set-up, setup.c,
	 * so that this file calls nothing above it). NULL: nobody. */
	void (*replaced)(struct afd_ctx *c, const char *path);
};

int afd_srcs_init(struct afd_srcs *s);
void afd_srcs_destroy(struct afd_srcs *s);


/**
 * The current parsed version of source file @p path (relative to the
 * root). @p known: a fresh lstat of it, or NULL to stat here. With
 * @p fd_out, the file is opened, and *fd_out (caller closes) is of exactly
 * the version returned. Returns 0 (*out referenced: afd_src_put it),
 * -EINVAL if it is not a regular file with an array name, or -errno.
 */
int afd_src_get(struct afd_ctx *c, const char *path, const struct stat *known,
		int *fd_out, struct afd_src **out);

/**
 * afd_src_get of a path not stat'ed yet, for a caller that would lstat it
 * first only to see a regular file: it is opened at once (O_NONBLOCK, no
 * symlink, not our mount), fstat'ed into *@p st, and parsed from that fd
 * if its version is not cached: one open, not an O_PATH lookup and then
 * an open (a listing of 60,000 arrays parses each); when a parse of the
 * path is cached, an O_PATH lstat comes first, and the open only for a
 * version not cached. Returns 0, -EINVAL
 * when it is not a regular file with an array name (a symlink, a folder,
 * a fifo: the caller then looks with lstat), or -errno (-ENOENT also for
 * our own mount).
 */
int afd_src_get_opening(struct afd_ctx *c, const char *path, struct stat *st,
			struct afd_src **out);
/**
 * The cached parse of @p path when it was born at or after tick @p since
 * (afd_src_tick; 0: never), referenced, with its stat in *@p st: taken as
 * it is, with no stat of the source. For a listing's entries, made after
 * it began: what its parse-ahead parsed a moment ago is as fresh as they
 * need, and a change the notifier saw since has dropped it.
 */
bool afd_src_get_fresh(struct afd_ctx *c, const char *path, uint64_t since,
		       struct stat *st, struct afd_src **out);
/**
 * A tick of the parse clock, for a listing that begins (or rewinds): a
 * parse born at this tick or later opened its source after this call.
 */
uint64_t afd_src_tick(struct afd_ctx *c);
void afd_src_put(struct afd_src *sf);
/** Whether some version of @p path is cached (a hint: it may be stale). */
bool afd_src_is_cached(struct afd_ctx *c, const char *path);
/** Forget the cached version of @p path (the file changed). */
void afd_src_drop(struct afd_ctx *c, const char *path);
/**
 * Keep at most @p keep cached sources, the most recently used: after the
 * kernel forgot most of what it held, parses it will not ask again for
 * would hold the pages of the heap around them (ops.c after_forget).
 */
void afd_srcs_shed(struct afd_srcs *s, size_t keep);

/* An npz's members (srcmember.c). */

/**
 * What npz member @p i is (parsed on first use). Returns NULL only on
 * ENOMEM. The result lives as long as @p sf.
 */
const struct afd_minfo *afd_src_member(struct afd_ctx *c, struct afd_src *sf,
				       size_t i);
/**
 * Open member @p i for reading (shared, counted). Returns 0 or -errno;
 * when the archive's member fails to open, @p why (not NULL) says why,
 * for the caller to report (else its status is AF_OK).
 */
int afd_src_member_open(struct afd_ctx *c, struct afd_src *sf, size_t i,
			const af_source **src, af_error *why);
void afd_src_member_close(struct afd_src *sf, size_t i);

/** True if member @p i is left out of listings (a method or encryption
 * this library cannot read, or it failed to open). Parses nothing. */
bool afd_src_member_hidden(struct afd_src *sf, size_t i);

/** Member index of an npz member name, or -1. */
long afd_src_find(const struct afd_src *sf, const char *member);

#endif /* ARRAYFS_DAEMON_SRCFILE_H */
