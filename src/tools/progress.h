/* SPDX-License-Identifier: MIT */
/*
 * A one-line progress bar on stderr for long copies. It shows only when
 * stderr is a terminal and the job is large, so pipes and logs stay clean.
 */
#ifndef ARRAYFS_TOOLS_PROGRESS_H
#define ARRAYFS_TOOLS_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

/** Jobs smaller than this finish too fast to need a bar. */
#define PROGRESS_MIN_BYTES (16ull << 20)

typedef struct progress {
	bool enabled;
	uint64_t total;
	int shown;     /* last per-mille drawn, -1 before the first */
	const char *label;
} progress;

/**
 * Start a bar for @p total bytes, labelled @p label (borrowed). It is
 * enabled only if @p allow, stderr is a terminal and total is at least
 * PROGRESS_MIN_BYTES.
 */
void progress_start(progress *p, const char *label, uint64_t total, bool allow);

/** Redraw if the shown value changed (at most 1000 redraws per job). */
void progress_update(progress *p, uint64_t done);

/** Erase the bar so later messages start on a clean line. */
void progress_end(progress *p);

#endif /* ARRAYFS_TOOLS_PROGRESS_H */
