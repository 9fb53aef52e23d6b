/* SPDX-License-Identifier: MIT */
/*
 * The group's children in the byte order of their keys (zg_sort_children).
 * A comparison sort of a folder of a million arrays made a million
 * callbacks' memcmp twenty times over, the largest part of building the
 * model; this sorts keys 8 bytes at a time as numbers, by radix, the
 * next 8 only within a run equal so far, and a short run by comparisons.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "zarr_group_i.h"

/* 12 bytes, not 16: the sort's room (24 bytes a child with the radix
 * passes' second copy), then the order and the children gathered in it
 * (36), stay near what a qsort over the children took (its merge buffer,
 * 32), which a big folder's walk pays at its peak (arrayrefs_memory). */
typedef struct __attribute__((packed, aligned(4))) keyed {
	uint64_t head;   /* 8 bytes of the key, big-endian, 0 past its end */
	uint32_t i;      /* its child's index */
} keyed;

/* Byte order of two keys: a key before any longer one it begins. */
int zg_key_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);
	if (c != 0)
		return c;
	return alen < blen ? -1 : alen > blen;
}

static int child_cmp(const void *pa, const void *pb)
{
	const af_zarr_group_child *a = pa, *b = pb;
	return zg_key_cmp(a->key, a->key_len, b->key, b->key_len);
}

/* Bytes [at, at + 8) of @p c's key as a big-endian number, 0 past its
 * end. Keys hold no NUL (key_ok), so a 0 marks a key's end: it orders a
 * key before a longer one that begins with it, as zg_key_cmp does. */
static uint64_t head_at(const af_zarr_group_child *c, size_t at)
{
	uint64_t h = 0;
	for (size_t k = at; k < at + 8; k++)
		h = h << 8 | (k < c->key_len ? (unsigned char)c->key[k] : 0);
	return h;
}

/* LSD radix sort of @p a by head, a byte a pass through @p tmp; a pass
 * whose byte is the same in every key (a shared prefix) is skipped.
 * Returns the array that holds the result (@p a or @p tmp). */
static keyed *radix_heads(keyed *a, keyed *tmp, size_t n)
{
	for (unsigned shift = 0; shift < 64; shift += 8) {
		size_t count[256] = { 0 };
		for (size_t k = 0; k < n; k++)
			count[(a[k].head >> shift) & 0xff]++;
		if (count[(a[0].head >> shift) & 0xff] == n)
			continue;
		size_t at = 0;
		for (unsigned b = 0; b < 256; b++) {
			size_t c = count[b];
			count[b] = at;
			at += c;
		}
		for (size_t k = 0; k < n; k++)
			tmp[count[(a[k].head >> shift) & 0xff]++] = a[k];
		keyed *t = a;
		a = tmp;
		tmp = t;
	}
	return a;
}

#define SMALL_RUN 16   /* a run this short is sorted by comparisons */

/* Sort @p n entries of @p a whose keys share their first @p at bytes and
 * are all at least that long, by the rest (@p tmp: room for n). */
static void sort_run(const af_zarr_group_child *c, keyed *a, keyed *tmp,
		     size_t n, size_t at)
{
	if (n <= SMALL_RUN) {
		for (size_t k = 1; k < n; k++) {
			keyed x = a[k];
			const af_zarr_group_child *xc = &c[x.i];
			size_t j = k;
			for (; j > 0; j--) {
				const af_zarr_group_child *yc = &c[a[j - 1].i];
				if (zg_key_cmp(yc->key + at, yc->key_len - at,
					       xc->key + at, xc->key_len - at) <= 0)
					break;
				a[j] = a[j - 1];
			}
			a[j] = x;
		}
		return;
	}
	for (size_t k = 0; k < n; k++)
		a[k].head = head_at(&c[a[k].i], at);
	keyed *sorted = radix_heads(a, tmp, n);
	if (sorted != a)
		memcpy(a, sorted, n * sizeof(*a));
	/* keys equal in these 8 bytes too: by the next 8, unless they ended
	 * here (a 0 last byte: then they are the same key) */
	for (size_t k = 0; k < n;) {
		size_t end = k + 1;
		while (end < n && a[end].head == a[k].head)
			end++;
		if (end - k > 1 && (a[k].head & 0xff) != 0)
			sort_run(c, a + k, tmp + k, end - k, at + 8);
		k = end;
	}
}

void zg_sort_children(af_zarr_group_child *c, size_t n)
{
	if (n < 2)
		return;
	keyed *a = n <= UINT32_MAX && n <= SIZE_MAX / (2 * sizeof(*a)) ?
		   malloc(2 * n * sizeof(*a)) : NULL;
	if (!a) {
		qsort(c, n, sizeof(*c), child_cmp);   /* slower, never wrong */
		return;
	}
	for (size_t k = 0; k < n; k++)
		a[k].i = (uint32_t)k;
	sort_run(c, a, a + n, n, 0);
	/* the order alone, then the children gathered in it: the keys'
	 * room is given back before the copy of the children is taken */
	uint32_t *order = malloc(n * sizeof(*order));
	if (order)
		for (size_t k = 0; k < n; k++)
			order[k] = a[k].i;
	free(a);
	af_zarr_group_child *out = order ? malloc(n * sizeof(*out)) : NULL;
	if (!out) {
		free(order);
		qsort(c, n, sizeof(*c), child_cmp);
		return;
	}
	for (size_t k = 0; k < n; k++)
		out[k] = c[order[k]];
	memcpy(c, out, n * sizeof(*c));
	free(out);
	free(order);
}
