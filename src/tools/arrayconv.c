/* SPDX-License-Identifier: MIT */
/*
 * arrayconv: convert .npy <-> .ra, or extract an .npz member, through the
 * same af_view code the daemon serves, streaming in fixed-size chunks so
 * memory stays constant whatever the array size.
 */
#define _GNU_SOURCE /* renameat2 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arrayfs/arrayfs.h"
#include "cli_common.h"
#include "progress.h"

#define PROG "arrayconv"
#define CHUNK (1u << 20)

enum { EXIT_FAILED = 1, EXIT_USAGE = 2 };

typedef struct conv_opts {
	bool force;
	bool quiet;
	cli_kind to;       /* CLI_KIND_UNKNOWN: from OUT's name */
	const char *in;
	const char *out;
} conv_opts;

/* The one piece of global state: a signal handler can touch nothing else.
 * The copy loop polls it so an interrupted run still removes its temp file. */
static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	interrupted = sig;
}

static void catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	/* No SA_RESTART: a blocked write returns EINTR and the loop stops. */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

static void fail(const char *what, const char *msg)
{
	fprintf(stderr, PROG ": %s: %s\n", what, msg);
}

/*
 * Open IN: a file, or ARCHIVE.npz:KEY. A path that exists as a file wins,
 * so file names holding ':' still work; otherwise the first ':' whose
 * prefix is a regular file splits archive from key.
 * Returns 0, EXIT_FAILED or EXIT_USAGE (message printed).
 */
static int open_input(cli_array *a, const char *in)
{
	struct stat st;
	cli_file f;
	af_error err;
	cli_kind kind;
	char *path = NULL;
	const char *key = NULL;

	af_error_clear(&err);
	if (stat(in, &st) != 0) {
		for (const char *c = strchr(in, ':'); c; c = strchr(c + 1, ':')) {
			char *p = strndup(in, (size_t)(c - in));

			if (!p) {
				fail(in, "out of memory");
				return EXIT_FAILED;
			}
			if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) {
				path = p;
				key = c + 1;
				break;
			}
			free(p);
		}
	}
	if (cli_file_open(&f, path ? path : in, &err) != AF_OK) {
		cli_report(PROG, path ? path : in, &err);
		free(path);
		return EXIT_FAILED;
	}
	kind = cli_kind_of_file(path ? path : in, &f.src);
	if (key) {
		if (kind != CLI_KIND_NPZ) {
			fprintf(stderr, PROG ": %s: not an .npz archive, so "
				"'%s' cannot name a member\n", path, key);
			cli_file_close(&f);
			free(path);
			return EXIT_USAGE;
		}
		if (cli_array_open_member(a, &f, key, &err) != AF_OK) {
			cli_report(PROG, in, &err);
			free(path);
			return EXIT_FAILED;
		}
		free(path);
		return 0;
	}
	if (kind == CLI_KIND_NPZ) {
		fprintf(stderr, PROG ": %s: an .npz archive: name a member as "
			"%s:KEY (arrayinfo lists them)\n", in, in);
		cli_file_close(&f);
		return EXIT_USAGE;
	}
	if (kind == CLI_KIND_UNKNOWN) {
		fail(in, "not a .npy, .npz or .ra file");
		cli_file_close(&f);
		return EXIT_FAILED;
	}
	if (cli_array_open_file(a, &f, kind, &err) != AF_OK) {
		cli_report(PROG, in, &err);
		return EXIT_FAILED;
	}
	return 0;
}

/* Write all of buf, retrying short writes. Returns 0 or -1 with errno. */
static int write_all(int fd, const unsigned char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0) {
			if (errno == EINTR && !interrupted)
				continue;
			return -1;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * Copy the whole output (the view, or the source itself when the formats
 * match) to fd in CHUNK pieces. Returns 0 or EXIT_FAILED (message printed).
 */
static int copy_out(const conv_opts *o, const cli_array *a, af_view *v, int fd)
{
	uint64_t total = v ? af_view_size(v) : a->src->size;
	unsigned char *buf = malloc(CHUNK);
	progress bar;
	af_error err;
	uint64_t off = 0;
	int rc = EXIT_FAILED;

	if (!buf) {
		fail(o->in, "out of memory");
		return EXIT_FAILED;
	}
	af_error_clear(&err);
	progress_start(&bar, PROG, total, !o->quiet);
	while (off < total) {
		size_t want = total - off < CHUNK ? (size_t)(total - off) : CHUNK;
		size_t got = 0;
		af_status st;

		if (v) {
			st = af_view_read(v, buf, want, off, &got, &err);
		} else {
			st = af_source_read_exact(a->src, buf, want, off, &err);
			got = want;
		}
		if (st == AF_OK && got == 0)
			st = af_error_set(&err, AF_E_TRUNCATED, off,
					  "the input ended early");
		if (st != AF_OK) {
			progress_end(&bar);
			cli_report(PROG, o->in, &err);
			goto out;
		}
		if (interrupted || write_all(fd, buf, got) != 0) {
			progress_end(&bar);
			fail(strcmp(o->out, "-") ? o->out : "stdout",
			     interrupted ? "interrupted" : strerror(errno));
			goto out;
		}
		off += got;
		progress_update(&bar, off);
	}
	progress_end(&bar);
	rc = 0;
out:
	free(buf);
	return rc;
}

/* Put tmp in place of out: atomically, and without -f never over a file. */
static int install_output(const conv_opts *o, const char *tmp)
{
	if (o->force) {
		if (rename(tmp, o->out) == 0)
			return 0;
	} else {
		if (renameat2(AT_FDCWD, tmp, AT_FDCWD, o->out,
			      RENAME_NOREPLACE) == 0)
			return 0;
		/* Some file systems lack RENAME_NOREPLACE; link() never replaces. */
		if ((errno == EINVAL || errno == ENOSYS) && link(tmp, o->out) == 0) {
			unlink(tmp);
			return 0;
		}
		if (errno == EEXIST) {
			fail(o->out, "appeared while converting; not replaced "
			     "(use -f to overwrite)");
			return EXIT_FAILED;
		}
	}
	fail(o->out, strerror(errno));
	return EXIT_FAILED;
}

static int write_file(const conv_opts *o, const cli_array *a, af_view *v)
{
	struct stat st;
	char *tmp;
	int fd, rc;

	if (lstat(o->out, &st) == 0) {
		if (S_ISDIR(st.st_mode)) {
			fail(o->out, "is a folder; name the output file");
			return EXIT_FAILED;
		}
		if (!o->force) {
			fail(o->out, "exists; not overwritten (use -f to overwrite)");
			return EXIT_FAILED;
		}
	}
	fd = cli_temp_beside(o->out, PROG, &tmp);
	if (fd < 0) {
		fprintf(stderr, PROG ": %s: cannot create a temporary file "
			"next to it: %s\n", o->out, strerror(errno));
		return EXIT_FAILED;
	}
	rc = copy_out(o, a, v, fd);
	if (rc == 0 && fsync(fd) != 0) {
		fail(o->out, strerror(errno));
		rc = EXIT_FAILED;
	}
	if (close(fd) != 0 && rc == 0) {
		fail(o->out, strerror(errno));
		rc = EXIT_FAILED;
	}
	if (rc == 0)
		rc = install_output(o, tmp);
	if (rc != 0)
		unlink(tmp);
	free(tmp);
	return rc;
}

static int convert(const conv_opts *o)
{
	cli_array a;
	af_view *v = NULL;
	af_error err;
	cli_kind from;
	int rc;

	af_error_clear(&err);
	rc = open_input(&a, o->in);
	if (rc != 0)
		return rc;
	from = a.arr.format == AF_FORMAT_NPY ? CLI_KIND_NPY : CLI_KIND_RA;
	/* Same format: the file (or npz member) itself is the answer. */
	if (from != o->to &&
	    af_view_open(&v, &a.arr, a.src,
			 o->to == CLI_KIND_NPY ? AF_VIEW_NPY : AF_VIEW_RA,
			 &err) != AF_OK) {
		cli_report(PROG, o->in, &err);
		cli_array_close(&a);
		return EXIT_FAILED;
	}
	if (strcmp(o->out, "-") == 0)
		rc = copy_out(o, &a, v, STDOUT_FILENO);
	else
		rc = write_file(o, &a, v);
	af_view_close(v);
	cli_array_close(&a);
	return rc;
}

static void usage(FILE *out)
{
	fputs("usage: " PROG " [-f] [-q] [--to npy|ra] IN OUT\n"
	      "Convert an array between .npy and .ra, or extract an .npz member.\n"
	      "  IN   FILE.npy, FILE.ra, or ARCHIVE.npz:KEY (member KEY.npy or KEY)\n"
	      "  OUT  FILE.npy or FILE.ra (the format follows the name), or - for\n"
	      "       standard output (then --to is required)\n"
	      "\n"
	      "  -f, --force      replace OUT if it exists\n"
	      "  -t, --to FORMAT  output format: npy or ra\n"
	      "  -q, --quiet      no progress bar\n"
	      "  -h, --help       print this help and exit\n"
	      "  -V, --version    print the version and exit\n"
	      "\n"
	      "Exit status: 0 converted, 1 conversion failed (bad input, OUT\n"
	      "exists, I/O error), 2 usage error. See arrayconv(1).\n", out);
}

static int usage_error(const char *msg)
{
	fprintf(stderr, PROG ": %s\n", msg);
	fputs("Try '" PROG " --help'.\n", stderr);
	return EXIT_USAGE;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "force", no_argument, NULL, 'f' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "to", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	conv_opts o = { .to = CLI_KIND_UNKNOWN };
	int c;

	while ((c = getopt_long(argc, argv, "fqt:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			o.force = true;
			break;
		case 'q':
			o.quiet = true;
			break;
		case 't':
			if (strcmp(optarg, "npy") == 0)
				o.to = CLI_KIND_NPY;
			else if (strcmp(optarg, "ra") == 0)
				o.to = CLI_KIND_RA;
			else
				return usage_error("--to takes npy or ra");
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
	if (argc - optind != 2)
		return usage_error("give exactly two arguments: IN OUT");
	o.in = argv[optind];
	o.out = argv[optind + 1];
	if (o.to == CLI_KIND_UNKNOWN) {
		if (strcmp(o.out, "-") == 0)
			return usage_error("writing to standard output needs "
					   "--to npy or --to ra");
		o.to = cli_kind_of_name(o.out);
		if (o.to != CLI_KIND_NPY && o.to != CLI_KIND_RA)
			return usage_error("OUT must end in .npy or .ra "
					   "(or give --to)");
	}
	if (strcmp(o.out, "-") == 0 && isatty(STDOUT_FILENO))
		return usage_error("refusing to write binary data to a "
				   "terminal; redirect standard output");
	catch_signals();
	return convert(&o);
}
