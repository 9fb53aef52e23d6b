/* SPDX-License-Identifier: MIT */
/*
 * Tests for src/codec/ra.c: the RawArray header parser against the upstream
 * reference samples and the gen_ra.py fixtures (whose expected answers are in
 * ra/cases.txt), truncations and byte flips, failing and short-reading
 * sources (test_ra_sources.c), and af_ra_type_of.
 */
#include <errno.h>
#include <fcntl.h>
#include <lz4.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "af_test.h"
#include "arrayfs/arrayfs.h"

#define MAX_CASES 256

typedef struct name_value {
	const char *name;
	int value;
} name_value;

static const name_value status_names[] = {
	{ "AF_OK", AF_OK },
	{ "AF_E_TRUNCATED", AF_E_TRUNCATED },
	{ "AF_E_MAGIC", AF_E_MAGIC },
	{ "AF_E_HEADER", AF_E_HEADER },
	{ "AF_E_DTYPE", AF_E_DTYPE },
	{ "AF_E_OVERFLOW", AF_E_OVERFLOW },
	{ "AF_E_UNSUPPORTED", AF_E_UNSUPPORTED },
	{ "AF_E_LIMIT", AF_E_LIMIT },
};

static const name_value kind_names[] = {
	{ "AF_KIND_INT", AF_KIND_INT },
	{ "AF_KIND_UINT", AF_KIND_UINT },
	{ "AF_KIND_FLOAT", AF_KIND_FLOAT },
	{ "AF_KIND_COMPLEX", AF_KIND_COMPLEX },
	{ "AF_KIND_VOID", AF_KIND_VOID },
	{ "AF_KIND_BFLOAT16", AF_KIND_BFLOAT16 },
};

static int lookup(const name_value *t, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(t[i].name, name) == 0)
			return t[i].value;
	ck_abort_msg("unknown name %s in ra/cases.txt", name);
	return -1;
}

/* The af_array invariants every successful parse must satisfy. */
static void check_invariants(const af_array *a, uint64_t src_size)
{
	ck_assert_int_eq(a->format, AF_FORMAT_RA);
	ck_assert(a->fortran_order);
	ck_assert_ptr_nonnull(a->descr);
	ck_assert_ptr_null(a->header_text);
	ck_assert_uint_le(a->ndim, AF_NDIM_MAX);
	ck_assert_ptr_nonnull(a->shape);
	uint64_t count = 1;
	for (unsigned i = 0; i < a->ndim; i++)
		ck_assert(!__builtin_mul_overflow(count, a->shape[i], &count));
	ck_assert_uint_eq(a->count, count);
	ck_assert_uint_eq(a->data_size, count * a->dtype.itemsize);
	ck_assert_uint_eq(a->dtype.itemsize, a->ra_elbyte);
	ck_assert_uint_eq(a->data_offset, 48 + 8 * (uint64_t)a->ndim);
	ck_assert_uint_le(a->data_offset + a->stored_size, src_size);
	ck_assert_uint_eq(a->stored_size, a->ra_size);
	if (a->compression == AF_COMP_NONE)
		ck_assert_uint_eq(a->stored_size, a->data_size);
	ck_assert_uint_eq(a->ra_unknown_flags, a->ra_flags & ~3ULL);
}

static void assert_zeroed(const af_array *a)
{
	static const af_array zero;
	ck_assert_msg(memcmp(a, &zero, sizeof(zero)) == 0,
		      "af_array not zeroed after a failed parse");
}

static af_status parse_mem(const unsigned char *buf, size_t len, af_array *a,
			   af_error *err)
{
	af_source src;
	af_source_init_mem(&src, buf, len);
	return af_ra_parse(&src, a, err);
}

/* ---- reference samples ------------------------------------------------ */

typedef struct ref_sample {
	const char *file;
	uint64_t flags, eltype, elbyte;
	const char *descr;
	unsigned ndim;
	uint64_t dims[3];
} ref_sample;

static const ref_sample samples[] = {
	{ "test.ra", 0, 4, 8, "<c8", 2, { 3, 4 } },
	{ "mnist_8.ra", 0, 2, 1, "|u1", 3, { 28, 28, 3 } },
	{ "mnist_8_z.ra", 2, 2, 1, "|u1", 3, { 28, 28, 3 } },
	{ "cifar_airplane.ra", 0, 2, 1, "|u1", 3, { 32, 32, 3 } },
	{ "cifar_airplane_z.ra", 2, 2, 1, "|u1", 3, { 32, 32, 3 } },
	{ "rand100.ra", 0, 1, 8, "<i8", 2, { 8, 8 } },
	{ "randc32.ra", 0, 4, 8, "<c8", 2, { 4, 4 } },
	{ "randc64.ra", 0, 4, 16, "<c16", 2, { 4, 4 } },
	{ "randf16.ra", 0, 3, 2, "<f2", 2, { 4, 4 } },
	{ "randf32.ra", 0, 3, 4, "<f4", 2, { 4, 4 } },
	{ "randf64.ra", 0, 3, 8, "<f8", 2, { 4, 4 } },
	{ "randi32.ra", 0, 1, 4, "<i4", 2, { 4, 4 } },
	{ "randi8.ra", 0, 1, 1, "|i1", 2, { 4, 4 } },
	{ "randu32.ra", 0, 2, 4, "<u4", 2, { 4, 4 } },
	{ "randu8.ra", 0, 2, 1, "|u1", 2, { 4, 4 } },
	{ "shepplogan.ra", 0, 3, 8, "<f8", 2, { 256, 256 } },
};
#define NSAMPLES (sizeof(samples) / sizeof(samples[0]))

/* Parses a reference sample through an fd source, as the daemon does. */
static af_status parse_reference(const char *file, af_array *a, af_error *err)
{
	const char *path = aft_reference(file);
	int fd = open(path, O_RDONLY);
	ck_assert_msg(fd >= 0, "cannot open %s", path);
	off_t end = lseek(fd, 0, SEEK_END);
	ck_assert_int_ge(end, 0);
	af_source src;
	af_source_init_fd(&src, fd, 0, (uint64_t)end);
	af_status st = af_ra_parse(&src, a, err);
	close(fd);
	return st;
}

START_TEST(reference_sample_parses)
{
	const ref_sample *s = &samples[_i];
	af_array a;
	af_error err = { 0 };
	size_t len;
	free(aft_read_file(aft_reference(s->file), &len));

	af_status st = parse_reference(s->file, &a, &err);
	ck_assert_msg(st == AF_OK, "%s: %s", s->file, err.msg);
	check_invariants(&a, len);
	ck_assert_uint_eq(a.ra_flags, s->flags);
	ck_assert_uint_eq(a.ra_eltype, s->eltype);
	ck_assert_uint_eq(a.ra_elbyte, s->elbyte);
	ck_assert_str_eq(a.descr, s->descr);
	ck_assert_uint_eq(a.ndim, s->ndim);
	for (unsigned i = 0; i < s->ndim; i++)
		ck_assert_uint_eq(a.shape[i], s->dims[i]);
	if (s->flags & AF_RA_FLAG_COMPRESSED) {
		ck_assert_int_eq(a.compression, AF_COMP_LZ4);
		ck_assert_uint_lt(a.stored_size, a.data_size);
	} else {
		ck_assert_int_eq(a.compression, AF_COMP_NONE);
		ck_assert_uint_eq(a.data_offset + a.data_size, len);
	}
	ck_assert_uint_eq(a.data_size, a.count * s->elbyte);
	af_array_free(&a);
}
END_TEST

/* Looks @p file up in the "NAME HEX" lines of the generator's md5.txt;
 * the digest goes to @p hex. Returns hex, or NULL if the file is not listed. */
static const char *computed_md5(const char *md5s, const char *file,
				char hex[33])
{
	char key[256];
	snprintf(key, sizeof(key), "%.200s ", file);
	for (const char *p = md5s; p && *p; p = strchr(p, '\n')) {
		if (*p == '\n')
			p++;
		if (strncmp(p, key, strlen(key)) == 0 &&
		    sscanf(p + strlen(key), "%32s", hex) == 1)
			return hex;
	}
	return NULL;
}

START_TEST(reference_md5_matches_upstream)
{
	size_t n1, n2;
	char *sums = (char *)aft_read_file(aft_reference("checksums.md5.txt"), &n1);
	char *md5s = (char *)aft_read_file(aft_fixture("ra/md5.txt"), &n2);
	sums[n1] = '\0';
	md5s[n2] = '\0';
	int checked = 0;
	char *save = NULL;
	for (char *line = strtok_r(sums, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char file[256], want[64];
		ck_assert_msg(sscanf(line, "MD5 (%255[^)]) = %63s", file, want) == 2,
			      "bad line in checksums.md5.txt: %s", line);
		char hex[33];
		const char *got = computed_md5(md5s, file, hex);
		ck_assert_msg(got != NULL, "no computed MD5 for %s", file);
		ck_assert_msg(strcmp(got, want) == 0, "%s: MD5 %s, upstream %s",
			      file, got, want);
		checked++;
	}
	ck_assert_int_eq(checked, 11);
	free(sums);
	free(md5s);
}
END_TEST

static float le_f32(const unsigned char *p)
{
	uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 |
		     (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	float f;
	memcpy(&f, &u, sizeof(f));
	return f;
}

START_TEST(reference_test_ra_values)
{
	size_t len;
	unsigned char *buf = aft_read_file(aft_reference("test.ra"), &len);
	af_array a;
	af_error err = { 0 };
	ck_assert_int_eq(parse_mem(buf, len, &a, &err), AF_OK);
	ck_assert_uint_eq(a.count, 12);
	for (uint64_t k = 0; k < a.count; k++) {
		const unsigned char *p = buf + a.data_offset + 8 * k;
		float re = le_f32(p), im = le_f32(p + 4);
		ck_assert_float_eq(re, (float)k);
		if (k == 0)
			ck_assert_msg(isinf(im) && im < 0, "imag(0) = %g", im);
		else
			ck_assert_float_eq(im, -1.0f / (float)k);
	}
	af_array_free(&a);
	free(buf);
}
END_TEST

/* The compressed samples decode with plain LZ4 to their uncompressed twin. */
static void check_lz4_pair(const char *zfile, const char *plain)
{
	size_t zlen, plen;
	unsigned char *z = aft_read_file(aft_reference(zfile), &zlen);
	unsigned char *p = aft_read_file(aft_reference(plain), &plen);
	af_array za, pa;
	af_error err = { 0 };
	ck_assert_int_eq(parse_mem(z, zlen, &za, &err), AF_OK);
	ck_assert_int_eq(parse_mem(p, plen, &pa, &err), AF_OK);
	ck_assert_int_eq(za.compression, AF_COMP_LZ4);
	ck_assert_uint_eq(za.data_size, pa.data_size);
	char *out = malloc(za.data_size);
	ck_assert_ptr_nonnull(out);
	int n = LZ4_decompress_safe((const char *)z + za.data_offset, out,
				    (int)za.stored_size, (int)za.data_size);
	ck_assert_int_eq(n, (int)za.data_size);
	ck_assert(memcmp(out, p + pa.data_offset, pa.data_size) == 0);
	free(out);
	af_array_free(&za);
	af_array_free(&pa);
	free(z);
	free(p);
}

START_TEST(reference_lz4_decodes_to_plain_twin)
{
	check_lz4_pair("mnist_8_z.ra", "mnist_8.ra");
	check_lz4_pair("cifar_airplane_z.ra", "cifar_airplane.ra");
}
END_TEST

/* ---- generated cases -------------------------------------------------- */

typedef struct gen_case {
	char name[64];
	char line[1024];
	af_status status;
} gen_case;

/* Room for MAX_CASES cases on the heap (too big for a test's stack); free it. */
static gen_case *cases_new(void)
{
	gen_case *cases = calloc(MAX_CASES, sizeof(*cases));
	ck_assert_ptr_nonnull(cases);
	return cases;
}

static size_t load_cases(gen_case *cases)
{
	size_t len;
	char *text = (char *)aft_read_file(aft_fixture("ra/cases.txt"), &len);
	text[len] = '\0';
	size_t n = 0;
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		ck_assert_uint_lt(n, MAX_CASES);
		gen_case *c = &cases[n++];
		char status[32];
		ck_assert(sscanf(line, "%63s %31s", c->name, status) == 2);
		snprintf(c->line, sizeof(c->line), "%s", line);
		c->status = (af_status)lookup(status_names,
					      sizeof(status_names) / sizeof(status_names[0]),
					      status);
	}
	free(text);
	return n;
}

static unsigned char *read_case(const gen_case *c, size_t *len)
{
	char rel[128];
	snprintf(rel, sizeof(rel), "ra/%.63s.ra", c->name);
	return aft_read_file(aft_fixture(rel), len);
}

/* Compares a parsed array with an AF_OK line of cases.txt. */
static void check_expected(const gen_case *c, const af_array *a)
{
	char descr[64], kind[32], order[4];
	unsigned long long itemsize, scalar, count, off, stored, dsize, comp,
		unknown, ndim;
	int used = 0;
	int got = sscanf(c->line,
			 "%*s %*s %63s %31s %3s %llu %llu %llu %llu %llu %llu %llu %llu %llu%n",
			 descr, kind, order, &itemsize, &scalar, &count, &off,
			 &stored, &dsize, &comp, &unknown, &ndim, &used);
	ck_assert_msg(got == 12, "%s: bad expected line", c->name);
	ck_assert_str_eq(a->descr, descr);
	ck_assert_int_eq(a->dtype.kind,
			 lookup(kind_names, sizeof(kind_names) / sizeof(kind_names[0]),
				kind));
	ck_assert_int_eq(a->dtype.byteorder, order[0]);
	ck_assert_uint_eq(a->dtype.itemsize, itemsize);
	ck_assert_uint_eq(a->dtype.scalar_size, scalar);
	ck_assert(!a->dtype.has_object);
	ck_assert_uint_eq(a->count, count);
	ck_assert_uint_eq(a->data_offset, off);
	ck_assert_uint_eq(a->stored_size, stored);
	ck_assert_uint_eq(a->data_size, dsize);
	ck_assert_uint_eq(a->compression, comp);
	ck_assert_uint_eq(a->ra_unknown_flags, unknown);
	ck_assert_uint_eq(a->ndim, ndim);
	const char *p = c->line + used;
	for (unsigned i = 0; i < a->ndim; i++) {
		char *end;
		unsigned long long d = strtoull(p, &end, 10);
		ck_assert_msg(end != p, "%s: missing dim %u", c->name, i);
		ck_assert_uint_eq(a->shape[i], d);
		p = end;
	}
}

START_TEST(generated_cases_match_expected)
{
	gen_case *cases = cases_new();
	size_t n = load_cases(cases);
	ck_assert_uint_ge(n, 60);
	for (size_t i = 0; i < n; i++) {
		size_t len;
		unsigned char *buf = read_case(&cases[i], &len);
		af_array a;
		af_error err = { 0 };
		af_status st = parse_mem(buf, len, &a, &err);
		ck_assert_msg(st == cases[i].status, "%s: got %s (%s), want %s",
			      cases[i].name, af_status_str(st), err.msg,
			      af_status_str(cases[i].status));
		if (st == AF_OK) {
			check_invariants(&a, len);
			check_expected(&cases[i], &a);
			af_array_free(&a);
		} else {
			assert_zeroed(&a);
			ck_assert_int_eq(err.status, st);
			ck_assert_msg(err.msg[0] != '\0', "%s: empty message",
				      cases[i].name);
		}
		free(buf);
	}
	free(cases);
}
END_TEST

/* Every valid file: the reference samples and the AF_OK generated cases. */
typedef void (*file_fn)(const char *what, unsigned char *buf, size_t len);

static void for_each_valid(file_fn fn)
{
	for (size_t i = 0; i < NSAMPLES; i++) {
		size_t len;
		unsigned char *buf = aft_read_file(aft_reference(samples[i].file), &len);
		fn(samples[i].file, buf, len);
		free(buf);
	}
	gen_case *cases = cases_new();
	size_t n = load_cases(cases);
	for (size_t i = 0; i < n; i++) {
		if (cases[i].status != AF_OK)
			continue;
		size_t len;
		unsigned char *buf = read_case(&cases[i], &len);
		fn(cases[i].name, buf, len);
		free(buf);
	}
	free(cases);
}

static void truncate_everywhere(const char *what, unsigned char *buf, size_t len)
{
	af_array a;
	af_error err = { 0 };
	ck_assert_int_eq(parse_mem(buf, len, &a, &err), AF_OK);
	uint64_t header_end = a.data_offset, need = a.data_offset + a.stored_size;
	af_array_free(&a);
	/* Every cut inside the header, and inside the data (sampled if big). */
	uint64_t step = need > 65536 ? 997 : 1;
	for (uint64_t cut = 0; cut < need; cut += cut < header_end ? 1 : step) {
		af_status st = parse_mem(buf, (size_t)cut, &a, &err);
		/* no byte at all is no magic: "empty file", not a cut .ra */
		af_status want = cut == 0 ? AF_E_MAGIC : AF_E_TRUNCATED;
		ck_assert_msg(st == want, "%s cut at %llu: got %s, want %s",
			      what, (unsigned long long)cut, af_status_str(st),
			      af_status_str(want));
		assert_zeroed(&a);
	}
	ck_assert_int_eq(parse_mem(buf, (size_t)need, &a, &err), AF_OK);
	af_array_free(&a);
}

START_TEST(truncated_valid_files_never_parse)
{
	for_each_valid(truncate_everywhere);
}
END_TEST

static uint64_t le64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* The oracle for a parse that succeeds: the header fields exactly as the
 * format lays them out (FORMATS.md), read straight from the bytes. */
static void check_as_the_header_says(const char *what, const unsigned char *b,
				     const af_array *a)
{
	uint64_t flags = le64(b + 8), eltype = le64(b + 16), ndims = le64(b + 40);
	ck_assert_msg(a->ra_flags == flags && a->ra_eltype == eltype &&
		      a->ra_elbyte == le64(b + 24) && a->ra_size == le64(b + 32) &&
		      a->ndim == ndims, "%s: fields differ from the header", what);
	for (unsigned i = 0; i < a->ndim; i++)
		ck_assert_msg(a->shape[i] == le64(b + 48 + 8 * i), "%s: dim %u", what, i);
	ck_assert_int_eq(a->compression, flags & 2 ? AF_COMP_LZ4 : AF_COMP_NONE);
	if (eltype >= 1 && eltype <= 4 && a->dtype.itemsize > 1)
		ck_assert_int_eq(a->dtype.byteorder, flags & 1 ? '>' : '<');
}

/* Seeded flips, mostly in the header: each copy is refused cleanly (a
 * flipped magic always as AF_E_MAGIC), or parsed as its header says. */
static void flip_bytes(const char *what, unsigned char *buf, size_t len)
{
	uint64_t seed = 0x9E3779B97F4A7C15ULL ^ len;
	size_t span = len < 128 ? len : 128; /* mostly the header */
	unsigned char *copy = malloc(len);
	ck_assert_ptr_nonnull(copy);
	int refused = 0;
	for (int round = 0; round < 300; round++) {
		memcpy(copy, buf, len);
		int flips = 1 + (int)(aft_rand(&seed) % 4);
		for (int f = 0; f < flips; f++) {
			size_t at = (size_t)(aft_rand(&seed) % span);
			copy[at] ^= (unsigned char)(1u << (aft_rand(&seed) % 8));
			if (aft_rand(&seed) % 4 == 0)
				copy[at] = (unsigned char)aft_rand(&seed);
		}
		af_array a;
		af_error err = { 0 };
		af_status st = parse_mem(copy, len, &a, &err);
		if (memcmp(copy, "rawarray", 8) != 0)
			ck_assert_msg(st == AF_E_MAGIC, "%s round %d: magic flipped, %s",
				      what, round, af_status_str(st));
		if (st == AF_OK) {
			check_invariants(&a, len);
			check_as_the_header_says(what, copy, &a);
			af_array_free(&a);
		} else {
			assert_zeroed(&a);
			aft_assert_refused(st, &err, what);
			refused++;
		}
	}
	ck_assert_msg(refused > 0, "%s: no flip refused", what);
	free(copy);
}

START_TEST(random_byte_flips_are_refused_or_read_as_the_header_says)
{
	for_each_valid(flip_bytes);
}
END_TEST

/* ---- messages --------------------------------------------------------- */

static void expect_message(const char *file, af_status st, const char *needle,
			   const char *needle2)
{
	size_t len;
	char rel[128];
	snprintf(rel, sizeof(rel), "ra/%.100s", file);
	unsigned char *buf = aft_read_file(aft_fixture(rel), &len);
	af_array a;
	af_error err = { 0 };
	ck_assert_int_eq(parse_mem(buf, len, &a, &err), st);
	ck_assert_msg(strstr(err.msg, needle), "%s: \"%s\" lacks \"%s\"", file,
		      err.msg, needle);
	if (needle2)
		ck_assert_msg(strstr(err.msg, needle2), "%s: \"%s\" lacks \"%s\"",
			      file, err.msg, needle2);
	free(buf);
}

START_TEST(messages_say_what_is_wrong)
{
	expect_message("size_too_big.ra", AF_E_HEADER, "49", "48");
	expect_message("julia_varint_short.ra", AF_E_UNSUPPORTED, "Julia", "LEB128");
	expect_message("float_elbyte_3.ra", AF_E_DTYPE, "elbyte 3", "2, 4, 8 or 16");
	expect_message("eltype_6.ra", AF_E_DTYPE, "eltype 6", NULL);
	expect_message("ndims_2_40.ra", AF_E_LIMIT, "1099511627776", NULL);
	expect_message("bad_magic.ra", AF_E_MAGIC, "rawarray", NULL);
	expect_message("truncated_data.ra", AF_E_TRUNCATED, "ends at byte 111", NULL);
}
END_TEST

START_TEST(refusals_say_what_the_file_is)
{
	static const struct {
		const char *bytes;
		size_t len;
		const char *msg;
	} cases[] = {
		{ "", 0, "empty file" },
		{ "\x93NUMPY\x01\x00\x76\x00", 10, "a NumPy .npy file, not a .ra" },
		{ "\x1f\x8b\x08\x00", 4, "a gzip file, not a .ra" },
		{ "PK\x03\x04\x14\x00", 6, "a zip archive, not a .ra" },
		{ "\x89HDF\r\n\x1a\n", 8, "an HDF5 file, not a .ra" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		af_array a;
		af_error err = { 0 };
		ck_assert_int_eq(parse_mem((const unsigned char *)cases[i].bytes,
					   cases[i].len, &a, &err), AF_E_MAGIC);
		ck_assert_str_eq(err.msg, cases[i].msg);
		ck_assert_uint_eq(err.offset, 0);
		assert_zeroed(&a);
	}
}
END_TEST

/* ---- af_ra_type_of ---------------------------------------------------- */

START_TEST(type_of_follows_the_contract)
{
	static const struct {
		af_kind kind;
		uint64_t itemsize, eltype, elbyte;
	} map[] = {
		{ AF_KIND_INT, 4, 1, 4 },       { AF_KIND_INT, 1, 1, 1 },
		{ AF_KIND_UINT, 8, 2, 8 },      { AF_KIND_BOOL, 1, 2, 1 },
		{ AF_KIND_FLOAT, 2, 3, 2 },     { AF_KIND_FLOAT, 16, 3, 16 },
		{ AF_KIND_COMPLEX, 8, 4, 8 },   { AF_KIND_COMPLEX, 32, 4, 32 },
		{ AF_KIND_DATETIME, 8, 1, 8 },  { AF_KIND_TIMEDELTA, 8, 1, 8 },
		{ AF_KIND_BYTES, 10, 0, 10 },   { AF_KIND_UNICODE, 20, 0, 20 },
		{ AF_KIND_VOID, 16, 0, 16 },    { AF_KIND_STRUCT, 12, 0, 12 },
		{ AF_KIND_OBJECT, 8, 0, 8 },    { AF_KIND_BFLOAT16, 2, 5, 2 },
	};
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		af_dtype dt = { .kind = map[i].kind, .itemsize = map[i].itemsize };
		uint64_t eltype = 99, elbyte = 99;
		af_ra_type_of(&dt, &eltype, &elbyte);
		ck_assert_uint_eq(eltype, map[i].eltype);
		ck_assert_uint_eq(elbyte, map[i].elbyte);
	}
}
END_TEST

/* A parsed .ra maps back to the eltype/elbyte it was read from. */
START_TEST(type_of_round_trips_parsed_types)
{
	for (size_t i = 0; i < NSAMPLES; i++) {
		af_array a;
		af_error err = { 0 };
		ck_assert_int_eq(parse_reference(samples[i].file, &a, &err), AF_OK);
		uint64_t eltype, elbyte;
		af_ra_type_of(&a.dtype, &eltype, &elbyte);
		ck_assert_uint_eq(eltype, a.ra_eltype);
		ck_assert_uint_eq(elbyte, a.ra_elbyte);
		af_array_free(&a);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ra");
	TCase *ref = tcase_create("reference");
	tcase_add_loop_test(ref, reference_sample_parses, 0, (int)NSAMPLES);
	tcase_add_test(ref, reference_md5_matches_upstream);
	tcase_add_test(ref, reference_test_ra_values);
	tcase_add_test(ref, reference_lz4_decodes_to_plain_twin);
	suite_add_tcase(s, ref);

	TCase *gen = tcase_create("generated");
	tcase_add_test(gen, generated_cases_match_expected);
	tcase_add_test(gen, messages_say_what_is_wrong);
	tcase_add_test(gen, refusals_say_what_the_file_is);
	suite_add_tcase(s, gen);

	TCase *bad = tcase_create("hostile");
	aft_tag_slow(bad);
	tcase_set_timeout(bad, 600);
	tcase_add_test(bad, truncated_valid_files_never_parse);
	tcase_add_test(bad, random_byte_flips_are_refused_or_read_as_the_header_says);
	suite_add_tcase(s, bad);

	TCase *map = tcase_create("type_of");
	tcase_add_test(map, type_of_follows_the_contract);
	tcase_add_test(map, type_of_round_trips_parsed_types);
	suite_add_tcase(s, map);
	return aft_run(s);
}
