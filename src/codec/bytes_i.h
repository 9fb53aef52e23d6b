/* SPDX-License-Identifier: MIT */
/**
 * @file bytes_i.h
 * Private helpers of the codec: little-endian decoding from byte buffers
 * and checked size arithmetic. Never cast a struct over file bytes; decode
 * each field with these. Every size or offset that comes from a file goes
 * through af_add / af_mul before use.
 */
#ifndef ARRAYFS_BYTES_I_H
#define ARRAYFS_BYTES_I_H

#include <stdbool.h>
#include <stdint.h>

static inline uint16_t af_le16(const unsigned char *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t af_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
	       ((uint32_t)p[3] << 24);
}

static inline uint64_t af_le64(const unsigned char *p)
{
	return (uint64_t)af_le32(p) | ((uint64_t)af_le32(p + 4) << 32);
}

static inline void af_put_le16(unsigned char *p, uint16_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
}

static inline void af_put_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static inline void af_put_le64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/** *out = a + b; returns true on overflow (then *out is unspecified). */
static inline bool af_add(uint64_t a, uint64_t b, uint64_t *out)
{
	return __builtin_add_overflow(a, b, out);
}

/** *out = a * b; returns true on overflow. */
static inline bool af_mul(uint64_t a, uint64_t b, uint64_t *out)
{
	return __builtin_mul_overflow(a, b, out);
}

#endif /* ARRAYFS_BYTES_I_H */
