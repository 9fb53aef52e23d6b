/* SPDX-License-Identifier: MIT */
/* The stderr progress bar of arrayconv. */
#include "progress.h"

#include <stdio.h>
#include <unistd.h>

#define BAR_WIDTH 30

void progress_start(progress *p, const char *label, uint64_t total, bool allow)
{
	p->enabled = allow && total >= PROGRESS_MIN_BYTES && isatty(STDERR_FILENO);
	p->total = total;
	p->shown = -1;
	p->label = label;
	progress_update(p, 0);
}

void progress_update(progress *p, uint64_t done)
{
	char bar[BAR_WIDTH + 1];
	int permille, fill;

	if (!p->enabled || p->total == 0)
		return;
	if (done > p->total)
		done = p->total;
	/* done <= total < 2^64: divide first so the product cannot overflow. */
	permille = (int)(done / (p->total / 1000 + 1));
	if (permille > 1000 || done == p->total)
		permille = 1000;
	if (permille == p->shown)
		return;
	p->shown = permille;
	fill = permille * BAR_WIDTH / 1000;
	for (int i = 0; i < BAR_WIDTH; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[BAR_WIDTH] = 0;
	fprintf(stderr, "\r%s [%s] %3d%% %.1f/%.1f MiB", p->label, bar,
		permille / 10, (double)done / 1048576.0,
		(double)p->total / 1048576.0);
	fflush(stderr);
}

void progress_end(progress *p)
{
	if (!p->enabled)
		return;
	/* \033[K clears to the end of the line: the bar leaves no trace. */
	fputs("\r\033[K", stderr);
	fflush(stderr);
	p->enabled = false;
}
