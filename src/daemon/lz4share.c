/* SPDX-License-Identifier: MIT */
/* One LZ4 index per source version, shared by its handles. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "ctx.h"
#include "lz4share.h"

bool afd_lz4share_wanted(const af_array *a, af_view_kind kind)
{
	return af_view_cost(a, NULL, kind).lz4_index;
}

static void share_free(struct afd_lz4share *s)
{
	uint64_t decoded = af_lz4_index_decoded(s->ix);
	if (s->ctx && decoded)
		afd_log(&s->ctx->log, AFD_LOG_DEBUG,
			"%s: LZ4 index closed: %llu bytes decoded of %llu",
			s->sf->path, (unsigned long long)decoded,
			(unsigned long long)af_lz4_index_size(s->ix));
	af_lz4_index_close(s->ix);
	if (s->fd >= 0)
		close(s->fd);
	afd_src_put(s->sf);
	free(s);
}

/* A new share over its own fd and reference to @p sf, walking ahead on
 * @p pool if there is one. */
static int share_new(struct afd_src *sf, const af_array *a, int fd,
		     af_pool *pool, struct afd_lz4share **out, af_error *err)
{
	struct afd_lz4share *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->refs = 1;
	__atomic_add_fetch(&sf->refs, 1, __ATOMIC_RELAXED);
	s->sf = sf;
	s->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (s->fd < 0) {
		int rc = -errno;
		share_free(s);
		return rc;
	}
	af_source_init_fd(&s->src, s->fd, 0, (uint64_t)sf->st.st_size);
	af_status st = af_lz4_index_open(&s->ix, a, &s->src, err);
	if (st == AF_OK && pool)
		st = af_lz4_index_set_pool(s->ix, pool, err);
	if (st != AF_OK) {
		share_free(s);
		return -af_status_errno(st);
	}
	uint64_t bound = af_lz4_index_bound(a->data_size);
	s->cost = bound < SIZE_MAX ? (size_t)bound : SIZE_MAX;
	*out = s;
	return 0;
}

int afd_lz4share_get(struct afd_ctx *c, struct afd_src *sf, const af_array *a,
		     int fd, struct afd_lz4share **out, af_error *err)
{
	pthread_mutex_lock(&sf->mlock);
	struct afd_lz4share *s = sf->lz4;
	if (s)
		s->refs++;
	pthread_mutex_unlock(&sf->mlock);
	if (s) {
		*out = s;
		return 0;
	}
	/* made unlocked: opening reads nothing, but allocates its tables */
	struct afd_lz4share *mine = NULL;
	int rc = share_new(sf, a, fd, c->pool, &mine, err);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&sf->mlock);
	s = sf->lz4;
	if (s)
		s->refs++;
	else
		sf->lz4 = mine;
	pthread_mutex_unlock(&sf->mlock);
	if (s) {
		/* another handle published one first: use it */
		share_free(mine);
		*out = s;
		return 0;
	}
	afd_log(&c->log, AFD_LOG_DEBUG, "%s: LZ4 index opened (%zu MiB at most)",
		sf->path, mine->cost >> 20);
	mine->ctx = c;
	*out = mine;
	return 0;
}

void afd_lz4share_put(struct afd_lz4share *s)
{
	if (!s)
		return;
	struct afd_src *sf = s->sf;
	pthread_mutex_lock(&sf->mlock);
	bool last = --s->refs == 0;
	if (last && sf->lz4 == s)
		sf->lz4 = NULL;
	pthread_mutex_unlock(&sf->mlock);
	if (last)
		share_free(s);
}
