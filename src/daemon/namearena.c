/* SPDX-License-Identifier: MIT */
/* Names packed in blocks (namearena.h). */
#include "namearena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct afd_names_block {
	struct afd_names_block *prev;
	size_t size;          /* bytes of text */
	char text[];
};

void afd_names_init(struct afd_names *a)
{
	memset(a, 0, sizeof(*a));
}

const char *afd_names_add(struct afd_names *a, const char *name, size_t len)
{
	if (len >= SIZE_MAX - sizeof(struct afd_names_block))
		return NULL;
	size_t need = len + 1;
	if (!a->last || a->last->size - a->used < need) {
		size_t size = need > AFD_NAMES_BLOCK ? need : AFD_NAMES_BLOCK;
		struct afd_names_block *b = malloc(sizeof(*b) + size);
		if (!b)
			return NULL;
		b->prev = a->last;
		b->size = size;
		a->last = b;
		a->used = 0;
		a->bytes += size;
	}
	char *out = a->last->text + a->used;
	memcpy(out, name, len);
	out[len] = '\0';
	a->used += need;
	return out;
}

void afd_names_free(struct afd_names *a)
{
	struct afd_names_block *b = a->last;
	while (b) {
		struct afd_names_block *prev = b->prev;
		free(b);
		b = prev;
	}
	afd_names_init(a);
}
