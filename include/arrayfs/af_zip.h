/* SPDX-License-Identifier: MIT */
/**
 * @file af_zip.h
 * A read-only zip reader for what numpy (through CPython's zipfile) writes:
 * stored and deflated members, zip64 sizes, offsets and end records, data
 * descriptors, UTF-8 names, more than 65535 members.
 *
 * Invariants:
 *  - Sizes and offsets come from the central directory (zip64 values used
 *    only where the 32-bit field is 0xFFFFFFFF); the local header is read
 *    only to find where a member's data begins.
 *  - The entry list holds only members with safe names: no "..", no
 *    leading "/", no empty component, no NUL or backslash. Every member
 *    that was left out has one warning line (af_zip_warning).
 *  - Duplicate names: only the last entry in the directory is kept.
 *  - Entries are in central-directory order; directories (names ending in
 *    "/") are kept with is_dir set.
 *  - An af_zip is immutable after af_zip_open, so several threads may read
 *    entries and open members at once.
 */
#ifndef ARRAYFS_AF_ZIP_H
#define ARRAYFS_AF_ZIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "af_inflate.h"
#include "af_source.h"
#include "af_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Most members read from one archive (bounds memory per archive). */
#define AF_ZIP_MAX_ENTRIES (4u << 20)

#define AF_ZIP_STORED 0
#define AF_ZIP_DEFLATED 8
/* General purpose flag bits that make a member unreadable here. */
#define AF_ZIP_FLAG_ENCRYPTED 0x0001u          /* bit 0: any encryption */
#define AF_ZIP_FLAG_STRONG_ENCRYPTION 0x0040u  /* bit 6: PKWARE strong encryption */

typedef struct af_zip_entry {
	const char *name;        /* UTF-8 (or CP437 bytes passed through) */
	uint16_t method;         /* AF_ZIP_STORED, AF_ZIP_DEFLATED, or other */
	uint16_t flags;          /* general purpose bit flags */
	uint32_t crc32;
	uint64_t comp_size;
	uint64_t uncomp_size;
	uint64_t local_offset;   /* of the local file header */
	uint32_t mtime_dos;      /* DOS date << 16 | DOS time */
	bool is_dir;
} af_zip_entry;

typedef struct af_zip af_zip;

/**
 * Read the central directory of the archive in @p src (what the source
 * points to must outlive the af_zip). On AF_OK *out is a reader the caller
 * closes with af_zip_close; on failure *out is NULL. Returns AF_OK,
 * AF_E_MAGIC (no end record: not a zip), AF_E_TRUNCATED, AF_E_HEADER
 * (inconsistent records), AF_E_UNSUPPORTED (multi-disk archives),
 * AF_E_LIMIT, AF_E_OVERFLOW, AF_E_NOMEM, AF_E_IO.
 */
af_status af_zip_open(af_zip **out, const af_source *src, af_error *err);
/** Free @p z, its entries, names and warnings; NULL is fine. */
void af_zip_close(af_zip *z);

size_t af_zip_count(const af_zip *z);
/** Entry @p i (owned by @p z, valid until af_zip_close), or NULL past the end. */
const af_zip_entry *af_zip_entry_at(const af_zip *z, size_t i);
/** Index of the member called @p name, or -1. O(log n). */
long af_zip_find(const af_zip *z, const char *name);

/**
 * Warnings about members left out or oddities (one line each, no '\n';
 * owned by @p z). af_zip_warning returns NULL past the end.
 */
size_t af_zip_warning_count(const af_zip *z);
const char *af_zip_warning(const af_zip *z, size_t i);

/**
 * Where member @p i's data begins in the archive (reads its local header).
 * *offset is 0 on failure. Returns AF_OK, AF_E_RANGE (no member @p i),
 * AF_E_HEADER (bad local header signature or name), AF_E_TRUNCATED,
 * AF_E_OVERFLOW (data would run past the archive), AF_E_NOMEM, AF_E_IO.
 */
af_status af_zip_data_offset(const af_zip *z, size_t i, uint64_t *offset,
			     af_error *err);

/**
 * Whether member @p e's bytes can be read (af_member_open refuses exactly
 * the members this says no to, and nothing else for their method or
 * flags): a member is readable when it is not encrypted (flags bit 0 or
 * bit 6, AF_ZIP_FLAG_ENCRYPTED / AF_ZIP_FLAG_STRONG_ENCRYPTION) and is
 * stored or deflated. Directories are readable (no bytes); whether the
 * bytes then agree with the sizes is for af_member_open to find.
 * Returns true, or false with @p why (may be NULL) set for a log line:
 * AF_E_UNSUPPORTED at the member's local header offset, saying "zip member
 * "K" is encrypted" or which compression method it uses.
 */
bool af_zip_entry_readable(const af_zip_entry *e, af_error *why);

typedef struct af_member af_member;

/**
 * Open member @p i for reading its uncompressed bytes through *src_out.
 * Stored members give an fd source over the archive when the archive
 * source is an fd source (so they can be spliced); deflated members give a
 * source backed by an af_inflate random-access index.
 * On AF_OK the caller closes *out with af_member_close; on failure *out is
 * NULL. Returns AF_OK, AF_E_RANGE (no member @p i), AF_E_UNSUPPORTED (other
 * methods, encryption), AF_E_HEADER, AF_E_TRUNCATED, AF_E_OVERFLOW,
 * AF_E_NOMEM, AF_E_IO.
 * The member must be closed before the af_zip.
 */
af_status af_member_open(af_member **out, const af_zip *z, size_t i,
			 af_error *err);
/** Where a deflated member keeps its saved index (see af_inflate.h). */
typedef struct af_member_opts {
	const char *index_dir;   /* index folder; NULL: no index files */
	uint64_t index_budget;   /* the folder's byte budget */
	/* the archive's identity: dev, ino, size, mtime, ctime (the member
	 * fields are filled from its entry) */
	af_index_key archive;
	/* called (from the opening or reading thread, or a pool thread
	 * saving the index) with one line when a
	 * saved index is refused or cannot be saved, or when a read fails
	 * AF_E_CORRUPT while one is loaded (a span's CRC-32 differs from the
	 * index's); may be NULL */
	void (*note)(void *arg, const af_error *why);
	void *note_arg;
	/* threads to inflate ahead on (af_inflate_set_pool), which must
	 * outlive the member; NULL: none */
	af_pool *pool;
	/* with no pool: a pool (af_pool_open_background) whose background
	 * thread saves the index, which must outlive the member; NULL too:
	 * the read that ends a first pass saves it, and waits for the
	 * export (about one more pass of CPU) */
	af_pool *saver;
} af_member_opts;

/**
 * af_member_open, and for a deflated member with @p o->index_dir: load its
 * saved index if one is there and valid (a refused one is reported through
 * o->note and ignored), and save it once a read completes a checked pass
 * (on the background thread of @p o->pool, or else of @p o->saver, if
 * there is one; af_member_close waits for it); with @p o->pool, inflate
 * ahead of sequential readers on it.
 * @p o (and the folder name) must outlive the member.
 */
af_status af_member_open_opts(af_member **out, const af_zip *z, size_t i,
			      const af_member_opts *o, af_error *err);
/** Output bytes inflated for @p m so far (0 for a stored member). */
uint64_t af_member_inflated(const af_member *m);
/** The file name (af_index_file_name) of @p m's saved index into @p buf
 * (>= 32 bytes); false if @p m was opened without an index folder or is
 * stored. */
bool af_member_index_name(const af_member *m, char *buf, size_t n);
/** Read-ahead counters of @p m (af_inflate_ahead_stats; zeros for a
 * stored member or one without a pool). */
void af_member_ahead(const af_member *m, af_inflate_ahead *out);
/** Access points @p m holds now (0 for a stored member). */
size_t af_member_index_points(const af_member *m);
/** Whether @p m's access points came from a saved index. */
bool af_member_index_loaded(const af_member *m);
/** The member's uncompressed bytes; owned by @p m, valid until it closes. */
const af_source *af_member_source(const af_member *m);
/** Bytes of memory the member's decompression state uses now. */
size_t af_member_memory(const af_member *m);
/** Free @p m and its decompression state; NULL is fine. */
void af_member_close(af_member *m);

#ifdef __cplusplus
}
#endif
#endif /* ARRAYFS_AF_ZIP_H */
