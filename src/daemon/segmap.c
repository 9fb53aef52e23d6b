/* SPDX-License-Identifier: MIT */
/* Segments mapped apart from the heap, aligned to their size (segmap.h). */
#include <stdint.h>
#include <sys/mman.h>

#include "segmap.h"

void *afd_seg_map(size_t size)
{
	/* twice the size, then the unaligned head and tail given back */
	unsigned char *p = mmap(NULL, 2 * size, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	uintptr_t a = ((uintptr_t)p + size - 1) & ~(uintptr_t)(size - 1);
	size_t head = a - (uintptr_t)p;
	if (head)
		munmap(p, head);
	if (size - head)
		munmap((unsigned char *)a + size, size - head);
	return (void *)a;
}

void afd_seg_unmap(void *p, size_t size)
{
	if (p)
		munmap(p, size);
}
