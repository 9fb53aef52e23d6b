/* SPDX-License-Identifier: MIT */
/**
 * @file inflate_engine_i.h
 * Private to the inflate module (src/codec/inflate/).
 * The two back-ends a cursor inflates with: zlib (inflate_zlib.c) and
 * ISA-L (inflate_isal.c), and the zlib allocator and CRC-32 they share.
 */
#ifndef ARRAYFS_INFLATE_ENGINE_I_H
#define ARRAYFS_INFLATE_ENGINE_I_H

#include <zlib.h>

#include "inflate_state_i.h"

/*
 * What each engine does for a cursor. Both produce the same bytes and, for
 * bad streams, the same errors: ISA-L reports none of its own but sets
 * c->refused, and the cursor replays the stretch with zlib, whose verdict
 * stands.
 */
struct afz_engine {
	af_inflate_engine id;
	/* Make c's state ready to inflate from a block boundary. */
	af_status (*reset)(af_inflate *z, struct afz_cursor *c, af_error *err);
	/* Inflate the deflated window of @p p into c->scratch, leaving the
	 * state reset: AF_OK, AF_E_NOMEM, or AF_E_CORRUPT (no message). */
	af_status (*unzip_window)(af_inflate *z, struct afz_cursor *c,
				  const struct afz_point *p);
	/* Resume at a block boundary: the top @p bits bits of the byte before
	 * c->next_in are @p value, and @p dict holds the @p dlen output bytes
	 * before. False if the state will not take them. */
	bool (*resume)(struct afz_cursor *c, unsigned bits, unsigned value,
		       const unsigned char *dict, unsigned dlen);
	/* Inflate exactly n more bytes (c->out + n <= z->size) into dst,
	 * recording points past c->next_mark; at the declared end, insist the
	 * stream ends and check the CRC-32 of a pass from 0. */
	af_status (*produce)(af_inflate *z, struct afz_cursor *c,
			     unsigned char *dst, uint64_t n, af_error *err);
	/* Free c's engine state. */
	void (*release)(af_inflate *z, struct afz_cursor *c);
};

extern const struct afz_engine afz_engine_zlib;
#ifdef AF_HAVE_ISAL
extern const struct afz_engine afz_engine_isal;
#endif
/* zlib allocations counted in z->mem (opaque: the af_inflate). */
voidpf afz_zalloc(voidpf opaque, uInt items, uInt size);
void afz_zfree(voidpf opaque, voidpf ptr);

/** CRC-32 (zlib's) of @p len bytes after @p crc: ISA-L's when built with
 * it (6x zlib's here), else zlib's. */
uint32_t afz_crc32(uint32_t crc, const unsigned char *p, size_t len);
#ifdef AF_HAVE_ISAL
/** Raw-deflate @p len bytes at @p in with ISA-L (level 1) into at most
 * @p room bytes at @p out: their count, or 0 if they do not fit. */
unsigned afz_isal_deflate(af_inflate *z, const unsigned char *in,
			  unsigned len, unsigned char *out, size_t room);
#endif

/** Bytes of an ISA-L state (0 without ISA-L), for the memory bound. */
size_t afz_isal_state_size(void);

#endif /* ARRAYFS_INFLATE_ENGINE_I_H */
