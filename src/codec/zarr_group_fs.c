/* SPDX-License-Identifier: MIT */
/* A Zarr group walk over files: a folder, an .npz or one .npy/.ra. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arrayfs/af_readahead.h"
#include "arrayfs/af_zarr_group.h"
#include "arrayfs/af_zip.h"
#include "textbuf_i.h"
#include "zarr_group_i.h"

/* A folder's array files read ahead (af_readahead.h) on one thread, which
 * overlaps the open, fstat, pread and close of each with the walk's own
 * work (the parse, and arrayrefs' formatting): heads buffered at most,
 * the fewest worth the thread, and how many are read between wakes (a
 * wake is two system calls, as dear as a file's read). */
#define FS_AHEAD_WORKERS 1u
#define FS_AHEAD_WINDOW 64u
#define FS_AHEAD_MIN 32u
#define FS_AHEAD_BATCH 16u

/* A parsed header and where its data lies: an npz member's (read when
 * its folder is listed) or the one a folder read last for the walk. */
typedef struct fs_header {
	char *file;                /* relative to the top; NULL: no memory */
	char *member;              /* in an npz: the member's name */
	af_array array;
	bool parsed;
	af_zarr_fs_array where;
} fs_header;

typedef struct fs_walk {
	char *top;        /* the walked path */
	void (*left_out)(void *ctx, const char *path, af_zarr_group_left why);
	void *left_ctx;
	af_head head;     /* a file the walk's thread reads itself */
	unsigned char head_buf[AF_HEAD_BYTES];
} fs_walk;

/* One entry: a name and what it is; entries[i] is made from items[i]. An
 * array file's header is not kept: the walk asks for it (fs_header), so a
 * folder costs its names and a few words an entry. */
typedef struct fs_item {
	size_t name;               /* offset in the folder's names */
	struct fs_folder *sub;     /* a sub-folder or an npz */
	fs_header *header;         /* an npz member's; NULL for a file */
	bool array_file;           /* an array file, header deferred */
} fs_item;

typedef struct fs_folder {
	char *rel;        /* a folder's path from the top, or its npz file's */
	char *prefix;     /* in an npz: the members' prefix ("", "a/"); else NULL */
	char *single;     /* the top is this one array file (its name) */
	int dfd;          /* a folder's, while listed (array files open under it) */
	textbuf names;    /* every item's name, each NUL-terminated */
	fs_header read;   /* the array file's header read last */
	af_readahead *ahead;   /* while listed: its headers read ahead, or NULL */
	const char **ahead_names;  /* in the walk's order, the heads' names */
	size_t ahead_n, ahead_next;   /* names, and the next one's index */
	af_zarr_group_entry *entries;   /* while listed */
	fs_item *items;
	size_t n, cap;
} fs_folder;

static af_status nomem(af_error *err)
{
	return af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
			    "out of memory walking files as a Zarr group");
}

/* "a/b", or the other alone where one is empty */
static char *join(const char *a, const char *b)
{
	char *out;
	if (!*a || !*b)
		return strdup(*a ? a : b);
	return asprintf(&out, "%s/%s", a, b) < 0 ? NULL : out;
}

static fs_folder *folder_new(const char *rel, const char *prefix)
{
	fs_folder *f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->dfd = -1;
	f->rel = strdup(rel);
	f->prefix = prefix ? strdup(prefix) : NULL;
	if (!f->rel || (prefix && !f->prefix)) {
		free(f->rel);
		free(f->prefix);
		free(f);
		return NULL;
	}
	return f;
}

static void folder_free(fs_folder *f)
{
	if (!f)
		return;
	free(f->rel);
	free(f->prefix);
	free(f->single);
	free(f);
}

static void zg_fs_header_free(fs_header *h)
{
	if (!h)
		return;
	free(h->file);
	free(h->member);
	af_array_free(&h->array);
	memset(h, 0, sizeof(*h));
}

/* A new item named @p name (@p len bytes). */
static fs_item *add_item(fs_folder *f, const char *name, size_t len)
{
	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 16;
		fs_item *grown = realloc(f->items, cap * sizeof(*grown));
		if (!grown)
			return NULL;
		f->items = grown;
		f->cap = cap;
	}
	size_t at = f->names.len;
	tb_add(&f->names, name, len);
	tb_add(&f->names, "", 1); /* each name ends in its NUL */
	if (f->names.failed)
		return NULL;
	fs_item *it = &f->items[f->n++];
	memset(it, 0, sizeof(*it));
	it->name = at;
	return it;
}

static void items_free(fs_folder *f)
{
	/* first: the thread reads under dfd, by the names */
	af_readahead_stop(f->ahead);
	f->ahead = NULL;
	free(f->ahead_names);
	f->ahead_names = NULL;
	f->ahead_n = f->ahead_next = 0;
	for (size_t i = 0; i < f->n; i++) {
		zg_fs_header_free(f->items[i].header);
		free(f->items[i].header);
		folder_free(f->items[i].sub);
	}
	zg_fs_header_free(&f->read);
	free(f->items);
	free(f->entries);
	free(f->names.buf);
	if (f->dfd >= 0)
		close(f->dfd);
	f->dfd = -1;
	f->items = NULL;
	f->entries = NULL;
	memset(&f->names, 0, sizeof(f->names));
	f->n = f->cap = 0;
}

/* What the walk records of the file it read (af_zarr_fs_array says why). */
static void set_file_stat(af_zarr_fs_array *where, const struct stat *sb)
{
	where->file_size = (uint64_t)sb->st_size;
	where->file_mtime_ns = (int64_t)sb->st_mtim.tv_sec * 1000000000LL +
			       sb->st_mtim.tv_nsec;
	where->file_ino = (uint64_t)sb->st_ino;
}

/* Parse the header of @p hd, the file named @p name, into @p h (its file
 * set; left unparsed if the read or parse failed). */
static void zg_fs_head_parse(fs_header *h, af_head *hd, const char *name)
{
	h->where.file = h->file;
	if (hd->err == 0 && S_ISREG(hd->st.st_mode)) {
		set_file_stat(&h->where, &hd->st);
		h->parsed = af_array_parse_named(name, &hd->src, &h->array,
						 NULL) == AF_OK;
	}
	h->where.data_offset = h->array.data_offset;
	h->where.chunks_are_ranges = h->array.compression == AF_COMP_NONE;
}

/* Whether @p name under @p dfd opens as a zip archive. */
static bool is_zip(int dfd, const char *name)
{
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat sb;
	bool ok = false;
	if (fd >= 0 && fstat(fd, &sb) == 0) {
		af_source src;
		af_source_init_fd(&src, fd, 0, (uint64_t)sb.st_size);
		af_zip *z = NULL;
		ok = af_zip_open(&z, &src, NULL) == AF_OK;
		af_zip_close(z);
	}
	if (fd >= 0)
		close(fd);
	return ok;
}

/* What @p de is (DT_*), from readdir where the file system says it. */
static unsigned char entry_type(int dfd, const struct dirent *de)
{
	struct stat sb;
	if (de->d_type != DT_UNKNOWN)
		return de->d_type;
	if (fstatat(dfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0)
		return DT_UNKNOWN;
	return S_ISDIR(sb.st_mode) ? DT_DIR : S_ISREG(sb.st_mode) ? DT_REG
								 : DT_UNKNOWN;
}

/* Classify entry @p de of a folder and add it as an item. */
static af_status list_dir_entry(fs_folder *f, const struct dirent *de,
				af_error *err)
{
	const char *name = de->d_name;
	fs_item *it = add_item(f, name, strlen(name));
	if (!it)
		return nomem(err);
	af_zarr_group_kind says = AF_ZG_OTHER;
	zg_name_ext(name, &says);
	unsigned char type = entry_type(f->dfd, de);
	char *rel = NULL;
	if (type == DT_DIR || (type == DT_REG && says == AF_ZG_NPZ &&
			       is_zip(f->dfd, name))) {
		rel = join(f->rel, name);
		it->sub = rel ? folder_new(rel, type == DT_DIR ? NULL : "") : NULL;
		free(rel);
		return it->sub ? AF_OK : nomem(err);
	}
	it->array_file = type == DT_REG && says == AF_ZG_ARRAY;
	return AF_OK;
}

static af_status list_dir(const fs_walk *w, fs_folder *f, af_error *err)
{
	char *full = join(w->top, f->rel);
	f->dfd = full ? open(full, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	int dup_fd = f->dfd >= 0 ? fcntl(f->dfd, F_DUPFD_CLOEXEC, 0) : -1;
	DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	if (!d) {
		af_status st = full ? af_error_set(err, AF_E_IO, AF_NO_OFFSET,
						   "%s: %s", full, strerror(errno))
				    : nomem(err);
		if (dup_fd >= 0)
			close(dup_fd);
		free(full);
		return st;
	}
	af_status st = AF_OK;
	struct dirent *e;
	while (st == AF_OK && (e = readdir(d)))
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			st = list_dir_entry(f, e, err);
	closedir(d);
	free(full);
	return st;
}

/* Member @p i's header into a new header of @p it (the npz file is
 * @p file), and where its data lies. */
static af_status parse_member(fs_item *it, const char *file, const af_zip *z,
			      size_t i, af_error *err)
{
	const af_zip_entry *e = af_zip_entry_at(z, i);
	af_member *m = NULL;
	fs_header *h = calloc(1, sizeof(*h));
	it->header = h;
	if (h) {
		h->file = strdup(file);
		h->member = strdup(e->name);
	}
	if (!h || !h->file || !h->member)
		return nomem(err);
	h->where.file = h->file;
	h->where.member = h->member;
	if (af_member_open(&m, z, i, NULL) != AF_OK)
		return AF_OK;
	h->parsed = af_npy_parse(af_member_source(m), &h->array, NULL) == AF_OK;
	af_member_close(m);
	uint64_t base;
	h->where.data_offset = h->array.data_offset;
	if (h->parsed && e->method == AF_ZIP_STORED &&
	    af_zip_data_offset(z, i, &base, NULL) == AF_OK &&
	    base + h->where.data_offset >= base) {
		h->where.data_offset += base;
		h->where.chunks_are_ranges = true;
	}
	return AF_OK;
}

/* A name right under an npz folder: a member, or the first part of deeper ones. */
typedef struct npz_part {
	const char *name;  /* in the member's name, after the folder's prefix */
	size_t len;
	size_t member;
	bool folder;
} npz_part;

/* By name; of one name, the folder first (it wins, as in the mount). */
static int part_cmp(const void *pa, const void *pb)
{
	const npz_part *a = pa, *b = pb;
	size_t n = a->len < b->len ? a->len : b->len;
	int c = memcmp(a->name, b->name, n);
	if (c != 0)
		return c;
	if (a->len != b->len)
		return a->len < b->len ? -1 : 1;
	return (int)b->folder - (int)a->folder;
}

static bool same_name(const npz_part *a, const npz_part *b)
{
	return a->len == b->len && memcmp(a->name, b->name, a->len) == 0;
}

/* Add the folder or member @p p of npz folder @p f. */
static af_status add_part(fs_folder *f, const af_zip *z, const npz_part *p,
			  af_error *err)
{
	fs_item *it = add_item(f, p->name, p->len);
	if (!it)
		return nomem(err);
	if (p->folder) {
		size_t plen = strlen(f->prefix);
		char *sub = malloc(plen + p->len + 2);
		if (sub) {
			memcpy(sub, f->prefix, plen);
			memcpy(sub + plen, p->name, p->len);
			strcpy(sub + plen + p->len, "/");
			it->sub = folder_new(f->rel, sub);
		}
		free(sub);
		return it->sub ? AF_OK : nomem(err);
	}
	if (p->len > 4 && memcmp(p->name + p->len - 4, ".npy", 4) == 0)
		return parse_member(it, f->rel, z, p->member, err);
	return AF_OK;
}

/*
 * The folder f->prefix of an npz: members right under it (those the
 * codec can read), and the first part of deeper names as sub-folders.
 * The zip is closed before the walk goes on: items copy the names.
 */
static af_status list_npz_members(fs_folder *f, const af_zip *z, af_error *err)
{
	size_t plen = strlen(f->prefix), n = 0;
	npz_part *parts = malloc((af_zip_count(z) ? af_zip_count(z) : 1) *
				 sizeof(*parts));
	if (!parts)
		return nomem(err);
	for (size_t i = 0; i < af_zip_count(z); i++) {
		const af_zip_entry *e = af_zip_entry_at(z, i);
		if (strncmp(e->name, f->prefix, plen) != 0 || e->name[plen] == '\0')
			continue;
		const char *rest = e->name + plen;
		const char *slash = strchr(rest, '/');
		bool folder = slash || e->is_dir;
		if (!folder && !af_zip_entry_readable(e, NULL))
			continue;
		parts[n++] = (npz_part){ rest, slash ? (size_t)(slash - rest) :
					 strlen(rest), i, folder };
	}
	qsort(parts, n, sizeof(*parts), part_cmp);
	af_status st = AF_OK;
	for (size_t i = 0; st == AF_OK && i < n; i++)
		if (i == 0 || !same_name(&parts[i - 1], &parts[i]))
			st = add_part(f, z, &parts[i], err);
	free(parts);
	return st;
}

static af_status list_npz(const fs_walk *w, fs_folder *f, af_error *err)
{
	char *full = join(w->top, f->rel);
	int fd = full ? open(full, O_RDONLY | O_CLOEXEC) : -1;
	struct stat sb;
	af_status st;
	if (fd < 0 || fstat(fd, &sb) < 0) {
		st = full ? af_error_set(err, AF_E_IO, AF_NO_OFFSET, "%s: %s",
					 full, strerror(errno)) : nomem(err);
	} else {
		af_source src;
		af_source_init_fd(&src, fd, 0, (uint64_t)sb.st_size);
		af_zip *z = NULL;
		st = af_zip_open(&z, &src, err);
		if (st == AF_OK)
			st = list_npz_members(f, z, err);
		for (size_t i = 0; st == AF_OK && i < f->n; i++)
			if (f->items[i].header)
				set_file_stat(&f->items[i].header->where, &sb);
		af_zip_close(z);
	}
	if (fd >= 0)
		close(fd);
	free(full);
	return st;
}

/* The entries of @p f from its items. */
static af_status make_entries(fs_folder *f, af_error *err)
{
	f->entries = calloc(f->n ? f->n : 1, sizeof(*f->entries));
	if (!f->entries)
		return nomem(err);
	for (size_t i = 0; i < f->n; i++) {
		fs_item *it = &f->items[i];
		af_zarr_group_entry *e = &f->entries[i];
		e->name = f->names.buf + it->name;
		if (it->sub) {
			e->kind = it->sub->prefix && !f->prefix ? AF_ZG_NPZ : AF_ZG_FOLDER;
			e->folder = it->sub;
		} else if (it->array_file) {
			e->kind = AF_ZG_ARRAY;
			e->deferred = true;
		} else if (it->header) {
			e->kind = AF_ZG_ARRAY;
			e->array = it->header->parsed ? &it->header->array : NULL;
			e->source = &it->header->where;
		} else {
			e->kind = AF_ZG_OTHER;
		}
	}
	return AF_OK;
}

static af_status fs_list(void *ctx, void *folder,
			 const af_zarr_group_entry **entries, size_t *n,
			 af_error *err)
{
	const fs_walk *w = ctx;
	fs_folder *f = folder;
	af_status st;
	if (f->single) {
		fs_item *it = add_item(f, f->single, strlen(f->single));
		st = it ? AF_OK : nomem(err);
		if (it)
			it->array_file = true;
	} else {
		st = f->prefix ? list_npz(w, f, err) : list_dir(w, f, err);
	}
	if (st == AF_OK)
		st = make_entries(f, err);
	if (st != AF_OK) {
		items_free(f);
		return st;
	}
	*entries = f->entries;
	*n = f->n;
	return AF_OK;
}

/* The header of array file @p entry of @p folder, read now: the one a
 * folder keeps, until the next. */
static af_status fs_read_header(void *ctx, void *folder, size_t entry,
				const af_array **array, const void **source,
				af_error *err)
{
	fs_walk *w = ctx;
	fs_folder *f = folder;
	const char *name = f->names.buf + f->items[entry].name;
	zg_fs_header_free(&f->read);
	f->read.file = f->single ? strdup("") : join(f->rel, name);
	if (!f->read.file)
		return nomem(err);
	/* the next one read ahead, or (the top file, any other) read here */
	bool ahead = !f->single && f->ahead && f->ahead_next < f->ahead_n &&
		     f->ahead_names[f->ahead_next] == name;
	af_head *hd = ahead ? af_readahead_get(f->ahead, f->ahead_next++) :
			      &w->head;
	if (!ahead)
		af_head_read_at(hd, af_head_openat, NULL,
				f->single ? AT_FDCWD : f->dfd,
				f->single ? w->top : name);
	zg_fs_head_parse(&f->read, hd, name);
	if (ahead)
		af_readahead_put(f->ahead, hd);
	else
		af_head_close(hd);
	*array = f->read.parsed ? &f->read.array : NULL;
	*source = &f->read.where;
	return AF_OK;
}

static const char *ahead_name(void *arg, uint64_t i)
{
	const fs_folder *f = arg;
	return f->ahead_names[i];
}

/* A folder's array files read ahead, in the walk's order. */
static void fs_will_read(void *ctx, void *folder, const size_t *entries,
			 size_t n)
{
	fs_folder *f = folder;
	(void)ctx;
	if (f->single || f->prefix || f->ahead || n == 0)
		return;
	const char **names = malloc(n * sizeof(*names));
	if (!names)
		return; /* the walk reads them itself */
	for (size_t i = 0; i < n; i++)
		names[i] = f->names.buf + f->items[entries[i]].name;
	f->ahead_names = names;
	f->ahead_n = n;
	f->ahead_next = 0;
	af_readahead_opts o = {
		.dfd = f->dfd, .n = n, .name = ahead_name, .name_arg = f,
		.opener = af_head_openat, .head_bytes = AF_HEAD_BYTES,
		.window = FS_AHEAD_WINDOW, .workers = FS_AHEAD_WORKERS,
		.batch = FS_AHEAD_BATCH, .min_parallel = FS_AHEAD_MIN,
	};
	f->ahead = af_readahead_start(&o);
	if (!f->ahead) {
		/* the walk reads them itself */
		free(names);
		f->ahead_names = NULL;
		f->ahead_n = 0;
	}
}

static void fs_release(void *ctx, void *folder,
		       const af_zarr_group_entry *entries, size_t n)
{
	(void)ctx; (void)entries; (void)n;
	items_free(folder);
}

static void fs_left(void *ctx, const char *path, af_zarr_group_left why)
{
	const fs_walk *w = ctx;
	if (w->left_out)
		w->left_out(w->left_ctx, path, why);
}

af_status af_zarr_fs_open(const char *path, uint64_t max_chunk_bytes,
			  void (*left_out)(void *ctx, const char *path,
					   af_zarr_group_left why),
			  void *left_ctx, af_zarr_walk *walk, void **root,
			  af_error *err)
{
	memset(walk, 0, sizeof(*walk));
	*root = NULL;
	struct stat sb;
	if (stat(path, &sb) < 0)
		return af_error_set(err, AF_E_IO, AF_NO_OFFSET, "%s: %s", path,
				    strerror(errno));
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	af_zarr_group_kind says;
	zg_name_ext(base, &says);
	bool dir = S_ISDIR(sb.st_mode);
	if (!dir && (!S_ISREG(sb.st_mode) || says == AF_ZG_OTHER))
		return af_error_set(err, AF_E_INVAL, AF_NO_OFFSET,
				    "%s: not a folder, .npz, .npy or .ra file", path);
	fs_walk *w = calloc(1, sizeof(*w));
	fs_folder *f = folder_new("", dir || says == AF_ZG_ARRAY ? NULL : "");
	if (w) {
		w->top = strdup(path);
		w->head.fd = -1;
		w->head.buf = w->head_buf;
		w->head.cap = sizeof(w->head_buf);
	}
	if (f && !dir && says == AF_ZG_ARRAY)
		f->single = strdup(base);
	if (!w || !f || !w->top ||
	    (!dir && says == AF_ZG_ARRAY && !f->single)) {
		if (w)
			free(w->top);
		free(w);
		folder_free(f);
		return nomem(err);
	}
	w->left_out = left_out;
	w->left_ctx = left_ctx;
	walk->ctx = w;
	walk->list = fs_list;
	walk->release = fs_release;
	walk->left_out = fs_left;
	walk->header = fs_read_header;
	walk->will_read = fs_will_read;
	walk->max_chunk_bytes = max_chunk_bytes;
	*root = f;
	return AF_OK;
}

void af_zarr_fs_close(af_zarr_walk *walk, void *root)
{
	fs_walk *w = walk ? walk->ctx : NULL;
	if (w)
		free(w->top);
	free(w);
	folder_free(root);
	if (walk)
		memset(walk, 0, sizeof(*walk));
}
