/* SPDX-License-Identifier: MIT */
/* The node slab: size classes in aligned mapped segments (slab.h). */
#include <stdint.h>
#include <string.h>

#include "spinlock.h"
#include "segmap.h"
#include "slab.h"

/* A segment's header, at its start; its cells follow. */
struct afd_slab_seg {
	struct afd_slab *slab;
	struct afd_slab_seg *prev, *next;  /* in slab->open[cls] while open */
	void *free;            /* freed cells, each holding the next */
	uint32_t used;         /* cells given out and not freed */
	uint32_t bump;         /* offset of the first cell never given out */
	uint32_t cell;         /* its cells' size */
	uint32_t cls;
	bool open;             /* in slab->open[cls] */
};

/* where the first cell starts: past the header, 16-aligned */
#define AFD_SLAB_FIRST \
	((sizeof(struct afd_slab_seg) + 15u) & ~(size_t)15u)

void afd_slab_init(struct afd_slab *s)
{
	memset(s, 0, sizeof(*s));
	afd_mutex_init_spin(&s->lock);
}

void afd_slab_destroy(struct afd_slab *s)
{
	for (size_t c = 0; c < AFD_SLAB_CLASSES; c++)
		while (s->open[c]) {
			struct afd_slab_seg *g = s->open[c];
			s->open[c] = g->next;
			afd_seg_unmap(g, AFD_SLAB_SEG);
		}
	pthread_mutex_destroy(&s->lock);
}

bool afd_slab_fits(size_t size)
{
	return size > 0 && size <= AFD_SLAB_MAX;
}

static void open_push(struct afd_slab *s, struct afd_slab_seg *g)
{
	g->prev = NULL;
	g->next = s->open[g->cls];
	if (g->next)
		g->next->prev = g;
	s->open[g->cls] = g;
	g->open = true;
}

static void open_unlink(struct afd_slab *s, struct afd_slab_seg *g)
{
	if (g->prev)
		g->prev->next = g->next;
	else
		s->open[g->cls] = g->next;
	if (g->next)
		g->next->prev = g->prev;
	g->prev = g->next = NULL;
	g->open = false;
}

static bool seg_full(const struct afd_slab_seg *g)
{
	return !g->free && g->bump + g->cell > AFD_SLAB_SEG;
}

void *afd_slab_alloc(struct afd_slab *s, size_t size)
{
	if (!afd_slab_fits(size))
		return NULL;
	size_t cls = (size - 1) / AFD_SLAB_STEP;
	pthread_mutex_lock(&s->lock);
	struct afd_slab_seg *g = s->open[cls];
	if (!g) {
		/* mapped under the lock: one mapping every few hundred cells */
		g = afd_seg_map(AFD_SLAB_SEG);
		if (!g) {
			pthread_mutex_unlock(&s->lock);
			return NULL;
		}
		g->slab = s;
		g->cls = (uint32_t)cls;
		g->cell = (uint32_t)((cls + 1) * AFD_SLAB_STEP);
		g->bump = (uint32_t)AFD_SLAB_FIRST;
		s->mapped += AFD_SLAB_SEG;
		open_push(s, g);
	}
	void *p;
	if (g->free) {
		p = g->free;
		memcpy(&g->free, p, sizeof(void *));
	} else {
		p = (char *)g + g->bump;
		g->bump += g->cell;
	}
	g->used++;
	if (seg_full(g))
		open_unlink(s, g);
	pthread_mutex_unlock(&s->lock);
	/* a freed cell holds a link; one never given out is still zero */
	memset(p, 0, g->cell);
	return p;
}

void afd_slab_free(void *p)
{
	if (!p)
		return;
	struct afd_slab_seg *g = (struct afd_slab_seg *)((uintptr_t)p &
		~(uintptr_t)(AFD_SLAB_SEG - 1));
	struct afd_slab *s = g->slab;
	bool unmap = false;
	pthread_mutex_lock(&s->lock);
	memcpy(p, &g->free, sizeof(void *));
	g->free = p;
	g->used--;
	if (!g->open)
		open_push(s, g);
	/* empty: back to the system, unless it is its class's only open
	 * segment (kept for the next cell) */
	if (g->used == 0 && (g->prev || g->next)) {
		open_unlink(s, g);
		s->mapped -= AFD_SLAB_SEG;
		unmap = true;
	}
	pthread_mutex_unlock(&s->lock);
	if (unmap)
		afd_seg_unmap(g, AFD_SLAB_SEG);
}

size_t afd_slab_mapped(struct afd_slab *s)
{
	pthread_mutex_lock(&s->lock);
	size_t n = s->mapped;
	pthread_mutex_unlock(&s->lock);
	return n;
}
