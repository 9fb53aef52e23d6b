/* SPDX-License-Identifier: MIT */
/*
 * arrayrefs: a kerchunk reference set for the `.zarr/` group of a folder,
 * an .npz or one .npy/.ra, so that fsspec's ReferenceFileSystem reads the
 * original files as a Zarr hierarchy; and --verify of such a file.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arrayfs/arrayfs.h"
#include "cli_common.h"
#include "refs_verify.h"
#include "refs_write.h"

#define PROG "arrayrefs"

enum { EXIT_SOURCE = 1, EXIT_WRITE = 2, EXIT_LEFT_OUT = 3 };

#define OUT_BUFFER_BYTES (1u << 20)

static void usage(FILE *out)
{
	fputs("usage: " PROG " [--url PREFIX] [--mount-url URL] [-o FILE] SOURCE\n"
	      "       " PROG " --verify FILE\n"
	      "Write Zarr references (kerchunk JSON, version 1) to the arrays of\n"
	      "SOURCE (a folder, an .npz, or one .npy/.ra) where they lie.\n"
	      "\n"
	      "  -u, --url PREFIX    where SOURCE will be served (default:\n"
	      "                      file:// and its absolute path)\n"
	      "  -m, --mount-url URL where an arrayfs mount's .zarr/ of SOURCE\n"
	      "                      is served: deflated and LZ4 arrays refer\n"
	      "                      to its chunk files\n"
	      "  -o, --output FILE   write to FILE (default: standard output)\n"
	      "  -c, --chunk BYTES   largest chunk, as the daemon's zarr_chunk\n"
	      "  --inline-max BYTES  largest short last chunk written inline,\n"
	      "                      zero-padded (default 65536)\n"
	      "  --verify FILE       say which sources FILE refers to changed\n"
	      "  -h, --help          print this help and exit\n"
	      "  -V, --version       print the version and exit\n"
	      "\n"
	      "Exit status: 0 written in full, 1 bad arguments or SOURCE (--verify:\n"
	      "a source changed), 2 an I/O error writing, 3 some arrays left out.\n"
	      "See arrayrefs(1).\n", out);
}

static int parse_bytes(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || v == 0 || s[0] == '-')
		return -1;
	*out = v;
	return 0;
}

/* "file://" and the absolute path of @p source. */
static char *default_prefix(const char *source)
{
	char *abs = realpath(source, NULL), *url = NULL;
	if (abs && asprintf(&url, "file://%s", abs) < 0)
		url = NULL;
	free(abs);
	return url;
}

/*
 * Where the document goes: OUT itself when it is no regular file (a
 * device, a pipe: never renamed over, never removed), else a temporary
 * file beside it, renamed over it once whole, so a failure leaves OUT as
 * it was. *tmp gets the temporary file's name (NULL: none).
 */
static FILE *open_output(const char *output, char **tmp)
{
	struct stat sb;
	*tmp = NULL;
	if (!output) {
		/* a stream of its own, with its own buffer, closed and checked */
		int fd = dup(STDOUT_FILENO);
		FILE *out = fd >= 0 ? fdopen(fd, "w") : NULL;
		if (fd >= 0 && !out)
			close(fd);
		return out;
	}
	if (stat(output, &sb) == 0 && !S_ISREG(sb.st_mode))
		return fopen(output, "w");
	int fd = cli_temp_beside(output, PROG, tmp);
	FILE *out = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (fd >= 0 && !out) {
		close(fd);
		unlink(*tmp);
		free(*tmp);
		*tmp = NULL;
	}
	return out;
}

static int write_refs(const refs_opts *o, const char *output)
{
	char *tmp;
	FILE *out = open_output(output, &tmp);
	if (!out) {
		fprintf(stderr, PROG ": %s: %s\n",
			output ? output : "standard output", strerror(errno));
		return EXIT_WRITE;
	}
	/* a document of many small pieces: few, big writes (glibc takes a
	 * size only with a buffer) */
	char *buffer = malloc(OUT_BUFFER_BYTES);
	if (buffer)
		setvbuf(out, buffer, _IOFBF, OUT_BUFFER_BYTES);
	/* one thread writes it: no lock a call (a few calls a chunk) */
	__fsetlocking(out, FSETLOCKING_BYCALLER);
	refs_outcome res;
	af_error err;
	af_error_clear(&err);
	af_status st = refs_write(o, out, &res, &err);
	if (fclose(out) != 0 && st == AF_OK) {
		res.write_errno = errno;
		st = af_error_set(&err, AF_E_IO, AF_NO_OFFSET, "%s: %s",
				  output ? output : "standard output",
				  strerror(errno));
	}
	free(buffer);
	if (st == AF_OK && tmp && rename(tmp, output) != 0) {
		res.write_errno = errno;
		st = af_error_set(&err, AF_E_IO, AF_NO_OFFSET, "%s: %s", output,
				  strerror(errno));
	}
	if (st != AF_OK) {
		cli_report(PROG, o->source, &err);
		if (tmp)
			unlink(tmp);
	}
	free(tmp);
	if (st != AF_OK)
		return res.write_errno ? EXIT_WRITE : EXIT_SOURCE;
	return res.left_out ? EXIT_LEFT_OUT : 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "url", required_argument, NULL, 'u' },
		{ "mount-url", required_argument, NULL, 'm' },
		{ "output", required_argument, NULL, 'o' },
		{ "chunk", required_argument, NULL, 'c' },
		{ "inline-max", required_argument, NULL, 'i' },
		{ "verify", required_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	refs_opts o = { .prog = PROG, .max_chunk_bytes = AF_ZARR_CHUNK_DEFAULT,
			.inline_max = REFS_INLINE_DEFAULT, .diag = stderr };
	const char *output = NULL, *verify = NULL;
	int c;
	while ((c = getopt_long(argc, argv, "u:m:o:c:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'u': o.prefix = optarg; break;
		case 'm': o.mount_url = optarg; break;
		case 'o': output = optarg; break;
		case 'v': verify = optarg; break;
		case 'c':
		case 'i':
			if (parse_bytes(optarg, c == 'c' ? &o.max_chunk_bytes
							 : &o.inline_max) == 0)
				break;
			fprintf(stderr, PROG ": %s: not a byte count\n", optarg);
			return EXIT_SOURCE;
		case 'h': usage(stdout); return 0;
		case 'V': printf(PROG " %s\n", ARRAYFS_VERSION); return 0;
		default: usage(stderr); return EXIT_SOURCE;
		}
	}
	if (verify) {
		if (optind != argc) {
			usage(stderr);
			return EXIT_SOURCE;
		}
		int rc = refs_verify(PROG, verify, stdout);
		return fflush(stdout) == 0 ? rc : EXIT_WRITE;
	}
	if (optind + 1 != argc) {
		fputs(PROG ": give one SOURCE\n", stderr);
		usage(stderr);
		return EXIT_SOURCE;
	}
	o.source = argv[optind];
	char *abs = realpath(o.source, NULL);
	char *prefix = o.prefix ? NULL : default_prefix(o.source);
	if (!abs || (!o.prefix && !prefix)) {
		fprintf(stderr, PROG ": %s: %s\n", o.source, strerror(errno));
		free(abs);
		free(prefix);
		return EXIT_SOURCE;
	}
	o.source_abs = abs;
	if (!o.prefix)
		o.prefix = prefix;
	/* no trailing '/': each file's path is joined with one */
	size_t plen = strlen(o.prefix);
	while (plen > 1 && o.prefix[plen - 1] == '/' && o.prefix[plen - 2] != '/')
		plen--;
	char *trimmed = strndup(o.prefix, plen);
	if (trimmed)
		o.prefix = trimmed;
	int rc = write_refs(&o, output);
	free(trimmed);
	free(abs);
	free(prefix);
	return rc;
}
