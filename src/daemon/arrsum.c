/* SPDX-License-Identifier: MIT */
/* An array folder's summary packed for its node (arrsum.h). */
#include <string.h>

#include "arrsum.h"

/* has's top bit: data_plain */
#define AFD_ARRSUM_PLAIN 0x8000u

_Static_assert(AE_COUNT < 15, "has and AFD_ARRSUM_PLAIN share 16 bits");
_Static_assert(sizeof(struct afd_arrsum_packed) == 64,
	       "a listing keeps one per array: keep it small");

/* the small texts, in the order of afd_arrsum_packed.text */
static const enum afd_entry texts[5] = { AE_SHAPE, AE_DTYPE, AE_HEADER,
					 AE_HDR, AE_NHDR };

/* Whether the entries not kept (none but those above, data, B.npy and
 * B.ra) have no size and are absent, as unpack gives them back. */
static bool others_empty(const struct afd_arrsum *s)
{
	for (int e = 0; e < AE_COUNT; e++) {
		bool kept = e == AE_DATA || e == AE_NPY || e == AE_RA;
		for (int i = 0; i < 5; i++)
			kept = kept || (int)texts[i] == e;
		if (!kept && (s->size[e] || (s->has & (1u << e))))
			return false;
	}
	return true;
}

/* B.npy's or B.ra's size: no size (the entry is absent) */
#define AFD_ARRSUM_NONE UINT16_MAX

/* *@p out = what size @p a adds to data's @p b, when that fits 16 bits */
static bool more16(uint16_t *out, uint64_t a, uint64_t b)
{
	if (a == 0) {
		*out = AFD_ARRSUM_NONE;
		return true;
	}
	if (a < b || a - b >= AFD_ARRSUM_NONE)
		return false;
	*out = (uint16_t)(a - b);
	return true;
}

static uint64_t plus(uint64_t data, uint16_t more)
{
	return more == AFD_ARRSUM_NONE ? 0 : data + more;
}

/* A time as seconds << 30 | nanoseconds, when it fits (1970 to 2514). */
static bool time64(uint64_t *out, const struct timespec *ts)
{
	if (ts->tv_sec < 0 || (uint64_t)ts->tv_sec >= (1ULL << 34) ||
	    ts->tv_nsec < 0 || ts->tv_nsec >= (1L << 30))
		return false;
	*out = (uint64_t)ts->tv_sec << 30 | (uint64_t)ts->tv_nsec;
	return true;
}

static struct timespec timespec_of(uint64_t t)
{
	return (struct timespec){ .tv_sec = (time_t)(t >> 30),
				  .tv_nsec = (long)(t & ((1u << 30) - 1)) };
}

bool afd_arrsum_pack(struct afd_arrsum_packed *out, const char *path,
		     const struct afd_arrsum *sum)
{
	const struct afd_ident *id = &sum->id;
	memset(out, 0, sizeof(*out));
	uint64_t data = sum->size[AE_DATA];
	if ((uint64_t)id->dev > UINT32_MAX || id->size < 0 ||
	    sum->has >= (1u << AE_COUNT) || sum->data_src_off > UINT32_MAX ||
	    !time64(&out->mtime, &id->mtim) ||
	    !time64(&out->ctime, &id->ctim) ||
	    !more16(&out->npy_more, sum->size[AE_NPY], data) ||
	    !more16(&out->ra_more, sum->size[AE_RA], data) ||
	    !others_empty(sum) || afd_ident_key(path, id) != sum->key)
		return false;
	for (int i = 0; i < 5; i++) {
		if (sum->size[texts[i]] > UINT16_MAX)
			return false;
		out->text[i] = (uint16_t)sum->size[texts[i]];
	}
	out->ino = (uint64_t)id->ino;
	out->size = (uint64_t)id->size;
	out->dev = (uint32_t)id->dev;
	out->data = data;
	out->data_src_off = (uint32_t)sum->data_src_off;
	out->has = (uint16_t)sum->has;
	if (sum->data_plain)
		out->has |= AFD_ARRSUM_PLAIN;
	return true;
}

void afd_arrsum_unpack(struct afd_arrsum *out, const char *path,
		       const struct afd_arrsum_packed *p)
{
	memset(out, 0, sizeof(*out));
	struct afd_ident *id = &out->id;
	id->dev = (dev_t)p->dev;
	id->ino = (ino_t)p->ino;
	id->size = (off_t)p->size;
	id->mtim = timespec_of(p->mtime);
	id->ctim = timespec_of(p->ctime);
	out->key = afd_ident_key(path, id);
	out->has = p->has & ~AFD_ARRSUM_PLAIN;
	out->data_plain = (p->has & AFD_ARRSUM_PLAIN) != 0;
	out->data_src_off = p->data_src_off;
	out->size[AE_DATA] = p->data;
	out->size[AE_NPY] = plus(p->data, p->npy_more);
	out->size[AE_RA] = plus(p->data, p->ra_more);
	for (int i = 0; i < 5; i++)
		out->size[texts[i]] = p->text[i];
}
