/* SPDX-License-Identifier: MIT */
/* Small stable hashes: FNV-1a 64 for inode numbers and table keys. */
#ifndef ARRAYFS_DAEMON_HASH_H
#define ARRAYFS_DAEMON_HASH_H

#include <stddef.h>
#include <stdint.h>

#define AFD_FNV_SEED 0xcbf29ce484222325ULL

static inline uint64_t afd_hash_bytes(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* Hash a string plus its terminating NUL, so ("ab","c") != ("a","bc"). */
static inline uint64_t afd_hash_str(uint64_t h, const char *s)
{
	if (!s)
		return afd_hash_bytes(h, "\xff", 1);
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return afd_hash_bytes(h, "", 1);
}

/* Final avalanche (splitmix64) so low bits are usable as bucket indexes. */
static inline uint64_t afd_hash_mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

#endif /* ARRAYFS_DAEMON_HASH_H */
