/* SPDX-License-Identifier: MIT */
/**
 * @file af_test.h
 * Helpers shared by the Check unit tests: fixture paths, whole-file reads,
 * a reproducible random sequence and a failing source.
 * Fixture folders come from the environment meson sets (AF_FIXTURES,
 * AF_REFERENCE); a missing variable or file fails the test, never skips it.
 */
#ifndef AF_TEST_H
#define AF_TEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <check.h>
#include <pthread.h>
#include <sys/types.h>

#include "arrayfs/af_array.h"
#include "arrayfs/af_source.h"

/** Path of @p rel under $AF_FIXTURES; static buffer, valid until the next call. */
const char *aft_fixture(const char *rel);
/** Path of @p rel under $AF_REFERENCE (the RawArray reference samples). */
const char *aft_reference(const char *rel);
/** Read a whole file (ck_abort on failure); the caller frees. */
unsigned char *aft_read_file(const char *path, size_t *len);
/**
 * The data part of a plain .ra file at @p path: the bytes after its
 * 48 + 8 x ndims header (ck_abort if the file is shorter). The caller frees.
 */
unsigned char *aft_ra_data(const char *path, size_t *len);
/**
 * xorshift64*: the next number of the sequence whose state the caller keeps
 * in *@p state (nonzero), so every run tests the same slices.
 */
uint64_t aft_rand(uint64_t *state);
/**
 * Raw-deflate (no header) the @p n bytes at @p in with zlib at @p level and
 * @p memlevel into a new buffer (the caller frees) of *@p clen bytes;
 * ck_abort on failure.
 */
unsigned char *aft_deflate_raw(const unsigned char *in, size_t n, int level,
			       int memlevel, size_t *clen);
/**
 * A zip archive (a new buffer of *@p len bytes, the caller frees) of one
 * member @p name holding the @p n bytes at @p plain, deflated at @p level.
 */
unsigned char *aft_zip_deflated(const char *name, const unsigned char *plain,
				size_t n, int level, size_t *len);
/** The same with the member stored (method 0), not deflated. */
unsigned char *aft_zip_stored(const char *name, const unsigned char *plain,
			      size_t n, size_t *len);
/** One member of a zip archive aft_zip writes. */
struct aft_zip_member {
	const char *name;
	const unsigned char *plain;  /* its @p n uncompressed bytes */
	size_t n;
	int level;                   /* deflated at this zlib level; -1: stored */
};
/**
 * A zip archive (a new buffer of *@p len bytes, the caller frees) of the
 * @p count members at @p m, in that order.
 */
unsigned char *aft_zip(const struct aft_zip_member *m, size_t count,
		       size_t *len);
/**
 * Open the file at @p path read-only as a whole-file fd source in *@p src
 * (ck_abort if it cannot be opened). Returns the fd; the caller closes it.
 */
int aft_open_fd_source(const char *path, af_source *src);
/**
 * A hand-made .npy af_array of type @p typestr (ck_abort if numpy has no
 * such type string) over the @p ndim dims at @p shape, with count and
 * data_size = stored_size computed (0 where they overflow). It borrows
 * @p typestr and @p shape: never af_array_free it.
 */
af_array aft_hand_array(const char *typestr, bool fortran, unsigned ndim,
			const uint64_t *shape);
/** An af_source pread that always fails with -EIO (for I/O error tests). */
ssize_t aft_failing_pread(const af_source *src, void *buf, size_t len,
			  uint64_t off);
/**
 * Require that @p st is a clean refusal of bad input: a format status
 * (truncated, magic, version, header, dtype, shape, overflow, unsupported,
 * corrupt, name, limit, range), not OK, an I/O, memory or argument error,
 * and that @p err says why. @p what names the case in the failure message.
 */
void aft_assert_refused(af_status st, const af_error *err, const char *what);
/**
 * Tag @p tc "slow": its cases (fuzz-like loops, load) run only in the slow
 * suite, as the meson test NAME_slow (tests/unit/meson.build registers it
 * for every program that calls this); NAME runs the others.
 */
void aft_tag_slow(TCase *tc);
/**
 * Whether @p counter, guarded by @p lock, is above 0 within about 10 s:
 * another thread got to the point that counts it.
 */
bool aft_counted_soon(pthread_mutex_t *lock, const uint64_t *counter);
/** Number of open file descriptors of this process. */
int aft_fd_count(void);
/** Run @p s with Check, print its summary, return the process exit status. */
int aft_run(Suite *s);

#endif /* AF_TEST_H */
