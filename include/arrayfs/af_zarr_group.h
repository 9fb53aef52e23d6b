/* SPDX-License-Identifier: MIT */
/**
 * @file af_zarr_group.h
 * `.zarr/`: a folder or an npz folder as a read-only Zarr group
 * (CONTRACT.md, "A folder or npz as a Zarr group"). The one model of the
 * hierarchy: which entries are children and under which keys, the
 * dimension names of child arrays, the metadata texts and the consolidated
 * `.zmetadata`. The daemon and the tools (arrayinfo --zarr-group, later
 * arrayrefs) ask this code; none of them decides a key on its own.
 *
 * The model of one folder (af_zarr_group_build) is made from the entries
 * the caller lists, with what each one is (an array with its parsed
 * header, a sub-folder, an npz folder, anything else). It reads nothing.
 * Children are in byte order of their keys. A key is the entry's name
 * without `.npy`/`.ra` (arrays) or `.npz` (npz folders); where two
 * children would share a key, every one of them keeps its full name (and
 * so on until no two share one: full names are unique in a folder).
 * Left out, each with its reason: `.stack`, names starting with `.` or
 * `__`, plain files and symlinks, arrays whose header could not be parsed,
 * object arrays, arrays with no `B.zarr/` (af_zarr_layout_init refuses
 * them), and keys Zarr cannot take (empty, `.` or `..`, a `/`, a leading
 * `.z`, AF_ZARR_NAME_MAX bytes or more, or not UTF-8: JSON could not
 * name it).
 *
 * A child array `.zarr/KEY/` is its `B.zarr/` (the same layout, chunks
 * and chunk files) with dimension names af_zarr_dim_name(KEY, i).
 *
 * The walk of a sub-tree (af_zarr_group_walk, af_zarr_consolidated_write)
 * asks the caller for one folder's entries at a time and holds at most one
 * model per level of the path it is in: never the whole tree. It visits
 * in the byte order of the full keys ("a-b/.zarray" before ".zattrs"
 * before "a/.zarray"), the order of zarr's sorted JSON keys, so the
 * consolidated document is streamed in its final order.
 *
 * Freshness: the walk reads the tree as the caller's list callback shows
 * it. A caller that must not mix two versions of the tree (the daemon,
 * whose folders change under it) answers every list call of one walk from
 * one version: it builds `.zmetadata` on its first read into a buffer
 * owned by that version of the group (the version its folder nodes had
 * when the walk began; a change of any of them makes a new version and a
 * new build at the next lookup), and serves every read of that open file
 * from the buffer.
 */
#ifndef ARRAYFS_AF_ZARR_GROUP_H
#define ARRAYFS_AF_ZARR_GROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "af_array.h"
#include "af_status.h"
#include "af_zarr.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Past this many arrays in its sub-tree a group has no `.zmetadata`. */
#define AF_ZARR_CONSOLIDATED_MAX_ARRAYS 10000u
/** Deepest sub-group a walk follows (AF_E_LIMIT past it). */
#define AF_ZARR_GROUP_MAX_DEPTH 64u
/** Room for any dimension name and its NUL: a key, "_dim_", the axis. */
#define AF_ZARR_DIM_NAME_MAX (AF_ZARR_NAME_MAX + 16)

/** What one entry of a folder is, as its lister knows it. */
typedef enum af_zarr_group_kind {
	AF_ZG_ARRAY = 1,  /* an array file or npz member (.npy, .ra) */
	AF_ZG_FOLDER,     /* a sub-folder */
	AF_ZG_NPZ,        /* an .npz, which the mount shows as a folder */
	AF_ZG_OTHER,      /* a plain file, a symlink, anything else */
} af_zarr_group_kind;

/** One entry of a folder; everything in it is borrowed from the caller. */
typedef struct af_zarr_group_entry {
	const char *name;        /* NUL-terminated */
	af_zarr_group_kind kind;
	const af_array *array;   /* AF_ZG_ARRAY: its header; NULL: unreadable */
	void *folder;            /* AF_ZG_FOLDER/NPZ: what the walk's list takes */
	const void *source;      /* AF_ZG_ARRAY: the lister's own (the file
				  * walk's: an af_zarr_fs_array) */
	bool deferred;           /* AF_ZG_ARRAY: its header is not read yet
				  * (array and source unset): the model
				  * reads it through af_zarr_group_header_fn
				  * where a key depends on it, the walk
				  * before it visits it */
} af_zarr_group_entry;

/**
 * Read the header of deferred entry @p entry: *array its header (NULL:
 * unreadable) and *source the lister's own, both valid until the next
 * call with the same @p ctx or until the entries are released. Returns
 * AF_OK (an unreadable header too) or a failure that stops the build or
 * walk (AF_E_NOMEM).
 */
typedef af_status (*af_zarr_group_header_fn)(void *ctx, size_t entry,
					     const af_array **array,
					     const void **source, af_error *err);

/** Why an entry is not a child. */
typedef enum af_zarr_group_left {
	AF_ZG_LEFT_NOT_ARRAY = 1, /* a plain file, symlink ...: not worth a log */
	AF_ZG_LEFT_STACK,         /* `.stack`: not worth a log */
	AF_ZG_LEFT_HIDDEN,        /* starts with `.` or `__` */
	AF_ZG_LEFT_BAD_KEY,       /* Zarr cannot take its key */
	AF_ZG_LEFT_BAD_HEADER,    /* its header could not be parsed */
	AF_ZG_LEFT_OBJECT,        /* an object array */
	AF_ZG_LEFT_NO_STORE,      /* an array with no B.zarr/ */
} af_zarr_group_left;

/** A short phrase for @p why ("an object array"); a constant string. */
const char *af_zarr_group_left_phrase(af_zarr_group_left why);
/** Whether @p why is worth a log line (once): not for plain files,
 * .stack and object arrays, which the mount lists as usual. */
bool af_zarr_group_left_logged(af_zarr_group_left why);

typedef struct af_zarr_group_child {
	size_t entry;            /* index in the entries the model was built from */
	const char *key;         /* the entry's name, of which the key is ... */
	size_t key_len;          /* ... the first key_len bytes (no NUL there) */
	bool is_array;           /* else a sub-group */
} af_zarr_group_child;

typedef struct af_zarr_group_left_out {
	size_t entry;
	af_zarr_group_left why;
} af_zarr_group_left_out;

/** The model of one folder. Borrows the entries; af_zarr_group_free. */
typedef struct af_zarr_group {
	const af_zarr_group_entry *entries;
	uint64_t max_chunk_bytes;
	af_zarr_group_child *children;   /* byte order of keys */
	size_t nchildren;
	size_t narrays;                  /* children that are arrays (deferred
					  * ones not yet read count) */
	af_zarr_group_left_out *left;    /* in entry order */
	size_t nleft;
	/* deferred entries: how to read them, and the one read last */
	af_zarr_group_header_fn header;
	void *header_ctx;
	size_t read_entry;               /* SIZE_MAX: none */
	const af_array *read_array;
	const void *read_source;
} af_zarr_group;

/**
 * Decide the children of the folder whose @p n entries are @p entries
 * (names unique, as in any folder), child arrays laid out with chunks of at
 * most @p max_chunk_bytes (the daemon's zarr_chunk). On AF_OK *g holds the
 * model (free it with af_zarr_group_free); on failure *g is empty.
 * Returns AF_OK, AF_E_INVAL (NULL arguments, a NULL name, max_chunk_bytes
 * 0), AF_E_NOMEM.
 */
af_status af_zarr_group_build(af_zarr_group *g, const af_zarr_group_entry *entries,
			      size_t n, uint64_t max_chunk_bytes, af_error *err);

/**
 * af_zarr_group_build for entries some of which are deferred (their
 * headers read through @p header, @p header_ctx). Keys depend on headers
 * only where names collide (an array left out for its header frees its
 * key for another): the model reads the headers of the arrays whose key
 * is contested, and no other. A deferred child that is no child after
 * all (unreadable, object, no B.zarr/) is found by af_zarr_group_resolve,
 * which the walk calls before it visits an array. So a folder's model
 * holds its names and no header. Returns what af_zarr_group_build
 * returns, AF_E_INVAL for a deferred entry with no @p header, and what
 * @p header returns.
 */
af_status af_zarr_group_build_deferred(af_zarr_group *g,
				       const af_zarr_group_entry *entries,
				       size_t n, uint64_t max_chunk_bytes,
				       af_zarr_group_header_fn header,
				       void *header_ctx, af_error *err);

/**
 * Whether child @p c is one: its header read (a deferred entry's, through
 * the model's header callback), *why 0, or the reason it is left out
 * after all. Afterwards af_zarr_group_array/_source give its header and
 * source until the next resolve of @p g. Returns AF_OK, AF_E_NOMEM, or
 * what the header callback returns.
 */
af_status af_zarr_group_resolve(af_zarr_group *g, const af_zarr_group_child *c,
				af_zarr_group_left *why, af_error *err);

/** The header of array child @p c (a deferred one's: as last resolved),
 * or NULL. */
const af_array *af_zarr_group_array(const af_zarr_group *g,
				    const af_zarr_group_child *c);

/** The lister's source of array child @p c (as af_zarr_group_array). */
const void *af_zarr_group_source(const af_zarr_group *g,
				 const af_zarr_group_child *c);

/** Release what @p g holds and empty it. NULL and empty models are fine. */
void af_zarr_group_free(af_zarr_group *g);

/** The key of child @p c (not NUL-terminated: *len bytes). */
const char *af_zarr_group_key(const af_zarr_group *g,
			      const af_zarr_group_child *c, size_t *len);

/**
 * The layout of child array @p c: its B.zarr/ (af_zarr_layout_init of its
 * entry's array, borrowed). Not kept in the model, which stays at about
 * 32 bytes a child: the model decided it exists, so this fails only for
 * a child that is no array (AF_E_INVAL) or for memory (AF_E_NOMEM).
 */
af_status af_zarr_group_layout(const af_zarr_group *g,
			       const af_zarr_group_child *c, af_zarr_layout *out,
			       af_error *err);

/** The child keyed @p key (@p len bytes), or NULL. Binary search. */
const af_zarr_group_child *af_zarr_group_find(const af_zarr_group *g,
					      const char *key, size_t len);

/**
 * Dimension @p axis of the child array keyed @p leaf (@p leaf_len bytes):
 * "LEAF_dim_AXIS", unique in the group (keys are, and the axis is the
 * digits after the last "_dim_"); with @p leaf NULL, B.zarr/'s "dim_AXIS".
 * Writes it NUL-terminated into @p out and returns its length, or 0 when
 * it does not fit (leaf_len >= AF_ZARR_NAME_MAX: never a child's key).
 */
size_t af_zarr_dim_name(const char *leaf, size_t leaf_len, unsigned axis,
			char out[AF_ZARR_DIM_NAME_MAX]);

/** The metadata files of a group (`.zarr/` and each `.zarr/KEY/` sub-group). */
typedef enum af_zarr_group_file {
	AF_ZG_ZGROUP = 1,  /* {"zarr_format": 2} */
	AF_ZG_ZATTRS,      /* {} */
	AF_ZG_ZARR_JSON,   /* {"zarr_format": 3, "node_type": "group", "attributes": {}} */
} af_zarr_group_file;

/**
 * The text of group file @p which, formatted as zarr-python writes it.
 * *out is malloc'd (the caller frees), *len its length. Returns AF_OK,
 * AF_E_RANGE (no such file), AF_E_NOMEM.
 */
af_status af_zarr_group_text(af_zarr_group_file which, char **out, size_t *len,
			     af_error *err);

/**
 * The text of metadata file @p which of child array `.zarr/KEY/` (KEY:
 * @p key, @p key_len bytes) with layout @p l: af_zarr_text's, but with
 * dimension names af_zarr_dim_name(KEY, i) in `.zattrs` and zarr.json's
 * attributes, and zarr.json's "dimension_names" the same. Returns what
 * af_zarr_text returns, and AF_E_INVAL for a key no child can have.
 */
af_status af_zarr_group_array_text(const af_zarr_layout *l, af_zarr_file which,
				   const char *key, size_t key_len, char **out,
				   size_t *len, af_error *err);

/**
 * How a walk gets the tree and what it tells. The list callback gives the
 * entries of @p folder (the walk's root, or an entry's `folder`); they
 * must stay valid until release is called for the same folder, which the
 * walk always does, even after a failure. Nothing else is kept.
 */
typedef struct af_zarr_walk {
	void *ctx;
	af_status (*list)(void *ctx, void *folder,
			  const af_zarr_group_entry **entries, size_t *n,
			  af_error *err);
	void (*release)(void *ctx, void *folder,
			const af_zarr_group_entry *entries, size_t n);
	/* may be NULL: an entry left out, @p path its full name in the tree
	 * ("run/x.npy"); walks of one tree report the same entries */
	void (*left_out)(void *ctx, const char *path, af_zarr_group_left why);
	uint64_t max_chunk_bytes;
	/* may be NULL if list gives no deferred entry: read the header of
	 * entry @p entry of @p folder's list (af_zarr_group_header_fn) */
	af_status (*header)(void *ctx, void *folder, size_t entry,
			    const af_array **array, const void **source,
			    af_error *err);
	/* may be NULL: told once a folder's model is built which deferred
	 * entries of its list the walk reads (@p n of them, in @p entries),
	 * in the order it calls header for them, so a lister may read ahead;
	 * the walk may stop before the last (the list is valid only during
	 * the call) */
	void (*will_read)(void *ctx, void *folder, const size_t *entries,
			  size_t n);
} af_zarr_walk;

/** What a walk visits, in the byte order of the full keys. */
typedef struct af_zarr_visit {
	void *ctx;
	/* a group; @p path its key path ("" for the root, "run", "run/sub") */
	af_status (*group)(void *ctx, const char *path, af_error *err);
	/* a child array: its key path ("run/signal"), its model @p g and
	 * child @p c (its leaf key, its entry) and its layout @p l */
	af_status (*array)(void *ctx, const char *path, const af_zarr_group *g,
			   const af_zarr_group_child *c, const af_zarr_layout *l,
			   af_error *err);
} af_zarr_visit;

/**
 * Walk the sub-tree of @p root through @p walk, calling @p visit for the
 * root group, then each group and array below it. Stops at the first
 * failure of a callback and returns it. Returns AF_OK, AF_E_LIMIT (deeper
 * than AF_ZARR_GROUP_MAX_DEPTH), AF_E_NOMEM, AF_E_INVAL, or what a
 * callback returned.
 */
af_status af_zarr_group_walk(const af_zarr_walk *walk, void *root,
			     const af_zarr_visit *visit, af_error *err);

/** Where the consolidated document goes, in pieces, in order. */
typedef af_status (*af_zarr_write_fn)(void *ctx, const char *text, size_t len,
				      af_error *err);

/**
 * Stream `.zmetadata` of the group @p root to @p write: {"metadata":
 * {...every .zattrs, .zarray and .zgroup of the sub-tree, keys like
 * "run/signal/.zarray"...}, "zarr_consolidated_format": 1}, byte for byte
 * what zarr 2.13's consolidate_metadata writes for the same hierarchy.
 * Memory: one folder model per level and the current entry's text.
 * Past AF_ZARR_CONSOLIDATED_MAX_ARRAYS arrays it stops with AF_E_LIMIT
 * ("too many arrays": the group has no `.zmetadata`). After any failure
 * the pieces written so far are not a document: the caller drops them.
 * Returns AF_OK, AF_E_LIMIT, or what af_zarr_group_walk and @p write
 * return.
 */
af_status af_zarr_consolidated_write(const af_zarr_walk *walk, void *root,
				     af_zarr_write_fn write, void *write_ctx,
				     af_error *err);

/** Where an array of a walked file tree lies (the entry's `source`). */
typedef struct af_zarr_fs_array {
	const char *file;        /* its file, relative to the walked path
				  * ("run.npz", "sub/x.npy"; "" the path itself) */
	const char *member;      /* in an npz: its member name; else NULL */
	uint64_t data_offset;    /* where its data starts: in `file` when
				  * chunks_are_ranges, else in the decoded
				  * member */
	bool chunks_are_ranges;  /* a plain .npy/.ra or a stored member: chunk
				  * c (af_zarr_chunk_get) is bytes
				  * data_offset + c.data_off, c.data_len long,
				  * of `file`, then zeros; a deflated member or
				  * LZ4 .ra must be decoded (false) */
	/* `file` as it was when the header was read (fstat of the descriptor
	 * read): what a reference records for --verify, with no second stat */
	uint64_t file_size;
	int64_t file_mtime_ns;
	uint64_t file_ino;
} af_zarr_fs_array;

/**
 * A walk over the files at @p path, for the tools: a folder (sub-folders
 * and .npz files as sub-groups, each npz's member folders too), an .npz,
 * or one .npy/.ra (a group holding that one array). It lists and parses
 * headers as the mount does (.npy and .ra names in folders, .npy names in
 * an npz; symlinks and files of other names are plain) and never reads
 * data. An array whose file cannot be opened or parsed is listed with a
 * NULL array (left out: AF_ZG_LEFT_BAD_HEADER). Fills *walk (with
 * @p left_out and @p left_ctx: told of each entry left out, may be NULL)
 * and *root for af_zarr_group_walk or af_zarr_consolidated_write; close
 * it with af_zarr_fs_close. Memory: one folder's headers per level.
 * Returns AF_OK, AF_E_IO (@p path cannot be read), AF_E_INVAL (it is none
 * of these), AF_E_NOMEM.
 */
af_status af_zarr_fs_open(const char *path, uint64_t max_chunk_bytes,
			  void (*left_out)(void *ctx, const char *path,
					   af_zarr_group_left why),
			  void *left_ctx, af_zarr_walk *walk, void **root,
			  af_error *err);

/** Release a walk af_zarr_fs_open filled, and its root. */
void af_zarr_fs_close(af_zarr_walk *walk, void *root);

#ifdef __cplusplus
}
#endif
#endif /* ARRAYFS_AF_ZARR_GROUP_H */
