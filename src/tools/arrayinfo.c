/* SPDX-License-Identifier: MIT */
/*
 * arrayinfo: describe .npy, .npz and .ra files from their headers only
 * (never the data, so a 100 GiB file is as quick as a small one).
 */
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arrayfs/arrayfs.h"
#include "cli_common.h"
#include "group_info.h"
#include "json.h"
#include "stack_scan.h"

#define PROG "arrayinfo"

enum { EXIT_BROKEN = 1, EXIT_USAGE = 2 };

typedef struct info_opts {
	bool json;
	bool stack;   /* --stack: describe the stack each FOLDER would give */
	bool index;   /* --index: saved inflate indexes of each FILE */
	bool zarr_group; /* --zarr-group: the .zmetadata of each FOLDER */
	const char *index_dir; /* --index-dir, else the daemon's default */
	bool first;  /* JSON: no comma before the next file object yet */
	bool printed; /* text: a block is out, so the next one needs a blank line */
} info_opts;

/* Text mode: separate this file's block from the previous one. */
static void text_begin(info_opts *o)
{
	if (o->printed)
		printf("\n");
	o->printed = true;
}

static const char *byteorder_name(char bo)
{
	switch (bo) {
	case '<': return "little";
	case '>': return "big";
	default: return "none";
	}
}

static const char *method_name(uint16_t m, char *buf, size_t len)
{
	if (m == AF_ZIP_STORED)
		return "stored";
	if (m == AF_ZIP_DEFLATED)
		return "deflated";
	snprintf(buf, len, "method %u", (unsigned)m);
	return buf;
}

static unsigned long long ull(uint64_t v)
{
	return (unsigned long long)v;
}

static void text_array(const af_array *a, const char *indent)
{
	char name[AF_TYPE_NAME_MAX];

	if (a->format == AF_FORMAT_NPY)
		printf("%sformat:      npy %u.%u\n", indent, a->version_major,
		       a->version_minor);
	else
		printf("%sformat:      ra\n", indent);
	printf("%sshape:      ", indent);
	for (unsigned i = 0; i < a->ndim; i++)
		printf(" %llu", ull(a->shape[i]));
	printf("%s\n", a->ndim == 0 ? " ()" : "");
	af_array_type_name(a, name, sizeof(name));
	printf("%sdtype:       %s (%s)\n", indent, a->descr ? a->descr : "",
	       name);
	printf("%sorder:       %s\n", indent, a->fortran_order ? "F" : "C");
	printf("%sbyte order:  %s\n", indent, byteorder_name(a->dtype.byteorder));
	printf("%scount:       %llu\n", indent, ull(a->count));
	printf("%sitemsize:    %llu\n", indent, ull(a->dtype.itemsize));
	printf("%sdata offset: %llu\n", indent, ull(a->data_offset));
	printf("%sdata size:   %llu\n", indent, ull(a->data_size));
	printf("%sstored size: %llu\n", indent, ull(a->stored_size));
	printf("%scompression: %s\n", indent,
	       a->compression == AF_COMP_LZ4 ? "lz4" : "none");
	if (a->format == AF_FORMAT_RA)
		printf("%sra fields:   flags 0x%llx, eltype %llu, elbyte %llu\n",
		       indent, ull(a->ra_flags), ull(a->ra_eltype),
		       ull(a->ra_elbyte));
	if (a->dtype.has_object)
		printf("%sobjects:     yes (the data is a pickle)\n", indent);
}

static void json_array(const af_array *a)
{
	char name[AF_TYPE_NAME_MAX];

	printf("{\"format\": \"%s\", ", a->format == AF_FORMAT_NPY ? "npy" : "ra");
	if (a->format == AF_FORMAT_NPY)
		printf("\"version\": \"%u.%u\", ", a->version_major,
		       a->version_minor);
	else
		printf("\"version\": null, ");
	printf("\"shape\": [");
	for (unsigned i = 0; i < a->ndim; i++)
		printf("%s%llu", i ? ", " : "", ull(a->shape[i]));
	printf("], \"dtype\": ");
	json_string(stdout, a->descr ? a->descr : "");
	af_array_type_name(a, name, sizeof(name));
	printf(", \"type_name\": ");
	json_string(stdout, name);
	printf(", \"order\": \"%s\", \"byteorder\": \"%s\", ",
	       a->fortran_order ? "F" : "C", byteorder_name(a->dtype.byteorder));
	printf("\"count\": %llu, \"itemsize\": %llu, \"data_offset\": %llu, "
	       "\"data_size\": %llu, \"stored_size\": %llu, ",
	       ull(a->count), ull(a->dtype.itemsize), ull(a->data_offset),
	       ull(a->data_size), ull(a->stored_size));
	printf("\"compression\": \"%s\", \"has_object\": %s",
	       a->compression == AF_COMP_LZ4 ? "lz4" : "none",
	       a->dtype.has_object ? "true" : "false");
	if (a->format == AF_FORMAT_RA)
		printf(", \"ra_flags\": %llu, \"ra_eltype\": %llu, "
		       "\"ra_elbyte\": %llu", ull(a->ra_flags),
		       ull(a->ra_eltype), ull(a->ra_elbyte));
	printf("}");
}

static void json_error(const af_error *err)
{
	printf("{\"status\": ");
	json_string(stdout, af_status_str(err->status));
	printf(", \"message\": ");
	json_string(stdout, err->msg[0] ? err->msg : af_status_str(err->status));
	if (err->offset != AF_NO_OFFSET)
		printf(", \"offset\": %llu}", ull(err->offset));
	else
		printf(", \"offset\": null}");
}

static void report_warning(const char *what, const char *msg)
{
	fprintf(stderr, PROG ": %s: warning: %s\n", what, msg);
}

/* One .npy or .ra file. Returns 0 or EXIT_BROKEN. */
static int info_array_file(info_opts *o, const char *path, cli_file *f,
			   cli_kind kind)
{
	cli_array ca;
	af_error err;
	af_status st;
	char warn[96];

	af_error_clear(&err);
	st = cli_array_open_file(&ca, f, kind, &err);
	if (st != AF_OK) {
		cli_report(PROG, path, &err);
		if (o->json) {
			printf("{\"file\": ");
			json_string(stdout, path);
			printf(", \"format\": \"%s\", \"error\": ",
			       cli_kind_name(kind));
			json_error(&err);
			printf("}");
		}
		return EXIT_BROKEN;
	}
	warn[0] = 0;
	if (ca.arr.ra_unknown_flags)
		snprintf(warn, sizeof(warn), "unknown RawArray flag bits 0x%llx",
			 ull(ca.arr.ra_unknown_flags));
	if (o->json) {
		printf("{\"file\": ");
		json_string(stdout, path);
		printf(", \"format\": \"%s\", \"array\": ", cli_kind_name(kind));
		json_array(&ca.arr);
		printf(", \"warnings\": [");
		if (warn[0])
			json_string(stdout, warn);
		printf("]}");
	} else {
		if (warn[0])
			report_warning(path, warn);
		text_begin(o);
		printf("%s:\n", path);
		text_array(&ca.arr, "  ");
	}
	cli_array_close(&ca);
	return 0;
}

static bool is_npy_member(const af_zip_entry *e)
{
	return !e->is_dir && af_array_name_kind(e->name, true) == AF_NAME_NPY;
}

/* Member i of an npz: its zip facts and, for K.npy, its array. */
static int info_member(info_opts *o, const char *path, const af_zip *z,
		       size_t i)
{
	const af_zip_entry *e = af_zip_entry_at(z, i);
	char mbuf[32];
	const char *method = method_name(e->method, mbuf, sizeof(mbuf));
	af_member *m = NULL;
	af_array arr;
	af_error err;
	af_status st = AF_OK;
	bool parsed = false;

	memset(&arr, 0, sizeof(arr));
	af_error_clear(&err);
	if (is_npy_member(e)) {
		st = af_member_open(&m, z, i, &err);
		if (st == AF_OK)
			st = af_npy_parse(af_member_source(m), &arr, &err);
		parsed = st == AF_OK;
		if (!parsed) {
			size_t n = strlen(path) + strlen(e->name) + 2;
			char *what = malloc(n);

			if (what)
				snprintf(what, n, "%s:%s", path, e->name);
			cli_report(PROG, what ? what : path, &err);
			free(what);
		}
	}
	if (o->json) {
		printf("%s{\"name\": ", i ? ", " : "");
		json_string(stdout, e->name);
		printf(", \"method\": ");
		json_string(stdout, method);
		printf(", \"is_dir\": %s, \"compressed_size\": %llu, "
		       "\"uncompressed_size\": %llu, \"crc32\": %lu, \"array\": ",
		       e->is_dir ? "true" : "false", ull(e->comp_size),
		       ull(e->uncomp_size), (unsigned long)e->crc32);
		if (parsed)
			json_array(&arr);
		else
			printf("null");
		if (st != AF_OK) {
			printf(", \"error\": ");
			json_error(&err);
		}
		printf("}");
	} else {
		printf("  %s: %s, %llu bytes stored, %llu bytes\n", e->name,
		       e->is_dir ? "folder" : method, ull(e->comp_size),
		       ull(e->uncomp_size));
		if (parsed)
			text_array(&arr, "    ");
	}
	af_array_free(&arr);
	if (m)
		af_member_close(m);
	return st == AF_OK ? 0 : EXIT_BROKEN;
}

static int info_npz_file(info_opts *o, const char *path, cli_file *f)
{
	af_zip *z = NULL;
	af_error err;
	af_status st;
	size_t n, nwarn;
	int rc = 0;

	af_error_clear(&err);
	st = af_zip_open(&z, &f->src, &err);
	if (st != AF_OK) {
		cli_report(PROG, path, &err);
		if (o->json) {
			printf("{\"file\": ");
			json_string(stdout, path);
			printf(", \"format\": \"npz\", \"error\": ");
			json_error(&err);
			printf("}");
		}
		return EXIT_BROKEN;
	}
	n = af_zip_count(z);
	nwarn = af_zip_warning_count(z);
	if (o->json) {
		printf("{\"file\": ");
		json_string(stdout, path);
		printf(", \"format\": \"npz\", \"members\": [");
	} else {
		text_begin(o);
		printf("%s: npz, %zu member%s\n", path, n, n == 1 ? "" : "s");
	}
	for (size_t i = 0; i < n; i++)
		rc |= info_member(o, path, z, i);
	if (o->json) {
		printf("], \"warnings\": [");
		for (size_t i = 0; i < nwarn; i++) {
			printf("%s", i ? ", " : "");
			json_string(stdout, af_zip_warning(z, i));
		}
		printf("]}");
	} else {
		for (size_t i = 0; i < nwarn; i++)
			report_warning(path, af_zip_warning(z, i));
	}
	af_zip_close(z);
	return rc;
}

/* A file that is no array at all: the error line, and its JSON object. */
static void report_unreadable(const info_opts *o, const char *path,
			      const af_error *err)
{
	cli_report(PROG, path, err);
	if (!o->json)
		return;
	printf("{\"file\": ");
	json_string(stdout, path);
	printf(", \"format\": null, \"error\": ");
	json_error(err);
	printf("}");
}

static int info_one(info_opts *o, const char *path)
{
	cli_file f;
	af_error err;
	cli_kind kind;
	int rc;

	af_error_clear(&err);
	if (o->json && !o->first)
		printf(",\n ");
	o->first = false;
	if (cli_file_open(&f, path, &err) != AF_OK) {
		report_unreadable(o, path, &err);
		return EXIT_BROKEN;
	}
	kind = cli_kind_of_file(path, &f.src);
	if (kind == CLI_KIND_NPZ) {
		rc = info_npz_file(o, path, &f);
		cli_file_close(&f);
		return rc;
	}
	if (kind == CLI_KIND_UNKNOWN) {
		af_error_set(&err, AF_E_MAGIC, AF_NO_OFFSET,
			     "not a .npy, .npz or .ra file");
		report_unreadable(o, path, &err);
		cli_file_close(&f);
		return EXIT_BROKEN;
	}
	/* cli_array_open_file takes the file over and closes it. */
	return info_array_file(o, path, &f, kind);
}

/* --stack: the stack @p path (a folder or an .npz) would give, or why none. */
static int info_stack(info_opts *o, const char *path)
{
	stack_scan s;
	af_error why;
	if (o->json && !o->first)
		printf(",\n ");
	o->first = false;
	af_status st = stack_scan_path(path, &s, &why);
	if (st != AF_OK) {
		char what[4096];
		if (s.culprit)
			snprintf(what, sizeof(what), "%s: no stack: %s", path,
				 s.culprit);
		else
			snprintf(what, sizeof(what), "%s: no stack", path);
		cli_report(PROG, what, &why);
		if (o->json) {
			printf("{\"stack\": ");
			json_string(stdout, path);
			printf(", \"member\": ");
			if (s.culprit)
				json_string(stdout, s.culprit);
			else
				printf("null");
			printf(", \"error\": ");
			json_error(&why);
			printf("}");
		}
		stack_scan_free(&s);
		return EXIT_BROKEN;
	}
	if (o->json) {
		printf("{\"stack\": ");
		json_string(stdout, path);
		printf(", \"members\": %zu, \"first\": ", s.n);
		json_string(stdout, s.names[0]);
		printf(", \"last\": ");
		json_string(stdout, s.names[s.n - 1]);
		printf(", \"array\": ");
		json_array(&s.stack);
		printf("}");
	} else {
		text_begin(o);
		printf("%s: .stack of %zu arrays\n", path, s.n);
		printf("  first:       %s\n  last:        %s\n", s.names[0],
		       s.names[s.n - 1]);
		text_array(&s.stack, "  ");
	}
	stack_scan_free(&s);
	return 0;
}

/* A refused index's reason, for --index. */
static void keep_note(void *arg, const af_error *why)
{
	*(af_error *)arg = *why;
}

/* --index: for each deflated member of @p path, whether the index folder
 * holds a saved index the daemon would use (loaded exactly as it does). */
static int info_index(const info_opts *o, const char *path)
{
	char dir[4096];
	af_error err;
	if (o->index_dir)
		snprintf(dir, sizeof(dir), "%s", o->index_dir);
	else if (!af_index_dir_default(dir, sizeof(dir))) {
		fprintf(stderr, PROG ": no index folder (set HOME or use --index-dir)\n");
		return EXIT_BROKEN;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		perror(path);
		if (fd >= 0)
			close(fd);
		return EXIT_BROKEN;
	}
	af_source src;
	af_source_init_fd(&src, fd, 0, (uint64_t)st.st_size);
	af_zip *z = NULL;
	af_status s = af_zip_open(&z, &src, &err);
	if (s != AF_OK) {
		cli_report(PROG, path, &err);
		close(fd);
		return EXIT_BROKEN;
	}
	af_error refused;
	af_member_opts mo = { .index_dir = dir, .index_budget = AF_INDEX_DIR_BUDGET,
			      .note = keep_note, .note_arg = &refused };
	af_index_key_of_file(&mo.archive, &st);
	printf("%s: saved indexes in %s\n", path, dir);
	for (size_t i = 0; i < af_zip_count(z); i++) {
		const af_zip_entry *e = af_zip_entry_at(z, i);
		if (e->method != AF_ZIP_DEFLATED || !af_zip_entry_readable(e, NULL))
			continue;
		af_member *m = NULL;
		af_error_clear(&refused);
		if (af_member_open_opts(&m, z, i, &mo, &err) != AF_OK) {
			printf("  %s: cannot open: %s\n", e->name, err.msg);
			continue;
		}
		char name[64] = "?", file[4200];
		af_member_index_name(m, name, sizeof(name));
		snprintf(file, sizeof(file), "%s/%s", dir, name);
		struct stat ist;
		if (af_member_index_loaded(m) && stat(file, &ist) == 0)
			printf("  %s: index %s, %lld bytes, %zu access points\n",
			       e->name, name, (long long)ist.st_size,
			       af_member_index_points(m));
		else if (refused.status != AF_OK)
			printf("  %s: index %s refused: %s\n", e->name, name,
			       refused.msg);
		else
			printf("  %s: no index\n", e->name);
		af_member_close(m);
	}
	af_zip_close(z);
	close(fd);
	return 0;
}

static void usage(FILE *out)
{
	fputs("usage: " PROG " [--json] FILE...\n"
	      "       " PROG " [--json] --stack FOLDER...\n"
	      "       " PROG " --index [--index-dir DIR] FILE...\n"
	      "       " PROG " --zarr-group FOLDER...\n"
	      "Describe .npy, .npz and .ra files from their headers.\n"
	      "\n"
	      "  -j, --json     print one JSON array with an object per file\n"
	      "  -s, --stack    describe the .stack each FOLDER (or .npz) gives\n"
	      "                 in an arrayfs mount, or say why it has none\n"
	      "  -i, --index    say which deflated members of each .npz have a\n"
	      "                 saved inflate index the daemon would use\n"
	      "  --index-dir DIR  the index folder (default: the daemon's)\n"
	      "  -z, --zarr-group  print the consolidated Zarr metadata\n"
	      "                 (.zmetadata) of the .zarr/ group each FOLDER\n"
	      "                 (or .npz, .npy, .ra) has in an arrayfs mount\n"
	      "  -h, --help     print this help and exit\n"
	      "  -V, --version  print the version and exit\n"
	      "\n"
	      "Exit status: 0 all files read, 1 a file is broken or unreadable,\n"
	      "2 usage error. See arrayinfo(1).\n", out);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "stack", no_argument, NULL, 's' },
		{ "index", no_argument, NULL, 'i' },
		{ "index-dir", required_argument, NULL, 'D' },
		{ "zarr-group", no_argument, NULL, 'z' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	info_opts o = { .json = false, .first = true, .printed = false };
	int c, rc = 0;

	while ((c = getopt_long(argc, argv, "jsizhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			o.json = true;
			break;
		case 's':
			o.stack = true;
			break;
		case 'i':
			o.index = true;
			break;
		case 'D':
			o.index_dir = optarg;
			break;
		case 'z':
			o.zarr_group = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf(PROG " %s\n", ARRAYFS_VERSION);
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (o.index || o.zarr_group)
		o.json = false; /* --index speaks text only; --zarr-group JSON
				 * of its own */
	if (optind >= argc) {
		fputs(PROG ": no FILE given\n", stderr);
		usage(stderr);
		return EXIT_USAGE;
	}
	if (o.json)
		printf("[");
	for (int i = optind; i < argc; i++) {
		rc |= o.zarr_group ? group_info(PROG, argv[i])
		      : o.index ? info_index(&o, argv[i])
		      : o.stack ? info_stack(&o, argv[i])
				: info_one(&o, argv[i]);
	}
	if (o.json)
		printf("]\n");
	if (fflush(stdout) != 0 || ferror(stdout)) {
		perror(PROG ": cannot write the output");
		return EXIT_BROKEN;
	}
	return rc;
}
