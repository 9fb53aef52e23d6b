/* SPDX-License-Identifier: MIT */
/* Open chunk files of B.zarr/, and the data view shared where it decodes. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "ctx.h"
#include "lz4share.h"
#include "zarr_store.h"
#include "zarr_chunks.h"

/* One data view of one version of an array, shared by its open chunks. */
struct afd_zshare {
	unsigned refs;             /* under sf->mlock */
	struct afd_src *sf;        /* referenced */
	struct afd_zarrinfo *home; /* where it is published */
	long midx;                 /* member held open, or -1 */
	int fd;                    /* its own fd of a file source, or -1 */
	af_source fsrc;
	af_view *view;
	struct afd_lz4share *lz4;  /* an LZ4 .ra's index (lz4share.h) */
};

struct afd_zarr_chunk {
	af_zarr_chunk chunk;
	af_view *view;             /* the one read: its own, or the share's */
	struct afd_zshare *share;  /* NULL: the view is its own */
	size_t cost;
};

/* An AF_VIEW_DATA view of @p ai over @p src. Returns 0 or -errno. */
static int data_view_open(const struct afd_arrinfo *ai, const af_source *src,
			  af_view **out, af_error *err)
{
	af_status st = af_view_open(out, &ai->a, src, AF_VIEW_DATA, err);
	if (st == AF_OK)
		return 0;
	*out = NULL;
	return -af_status_errno(st);
}

static void share_free(struct afd_zshare *s)
{
	if (!s)
		return;
	af_view_close(s->view);
	afd_lz4share_put(s->lz4);
	if (s->midx >= 0)
		afd_src_member_close(s->sf, (size_t)s->midx);
	if (s->fd >= 0)
		close(s->fd);
	afd_src_put(s->sf);
	free(s);
}

/* A new share over its own reference to the array's source. */
static int share_new(struct afd_ctx *c, struct afd_src *sf, long midx,
		     const struct afd_arrinfo *ai, const af_source *src,
		     struct afd_zshare **out, af_error *err)
{
	struct afd_zshare *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->refs = 1;
	s->midx = -1;
	s->fd = -1;
	__atomic_add_fetch(&sf->refs, 1, __ATOMIC_RELAXED);
	s->sf = sf;
	/* the arrinfo is published read-only; zarr.share is the one field
	 * that changes after, under mlock (zarr_store.h) */
	s->home = (struct afd_zarrinfo *)&ai->zarr;
	const af_source *own = &s->fsrc;
	int rc = 0;
	if (midx >= 0) {
		rc = afd_src_member_open(c, sf, (size_t)midx, &own, err);
		if (rc == 0)
			s->midx = midx;
	} else {
		s->fd = fcntl(src->fd, F_DUPFD_CLOEXEC, 3);
		if (s->fd < 0)
			rc = -errno;
		else
			af_source_init_fd(&s->fsrc, s->fd, src->fd_base, src->size);
	}
	if (rc == 0 && s->fd >= 0 &&
	    afd_lz4share_wanted(&ai->a, AF_VIEW_DATA)) {
		/* the same index as data and B.npy of this version */
		rc = afd_lz4share_get(c, sf, &ai->a, s->fd, &s->lz4, err);
		if (rc == 0) {
			af_status st = af_view_open_shared(&s->view, &ai->a, own,
							   AF_VIEW_DATA,
							   s->lz4->ix, err);
			rc = st == AF_OK ? 0 : -af_status_errno(st);
			if (rc < 0)
				s->view = NULL;
		}
	} else if (rc == 0) {
		rc = data_view_open(ai, own, &s->view, err);
	}
	if (rc < 0) {
		share_free(s);
		return rc;
	}
	*out = s;
	return 0;
}

/* The share of @p ai, made if there is none; counted. */
static int share_get(struct afd_ctx *c, struct afd_src *sf, long midx,
		     const struct afd_arrinfo *ai, const af_source *src,
		     struct afd_zshare **out, af_error *err)
{
	pthread_mutex_lock(&sf->mlock);
	struct afd_zshare *s = ai->zarr.share;
	if (s)
		s->refs++;
	pthread_mutex_unlock(&sf->mlock);
	if (s) {
		*out = s;
		return 0;
	}
	/* made outside the lock (it opens the member, which takes mlock) */
	struct afd_zshare *mine;
	int rc = share_new(c, sf, midx, ai, src, &mine, err);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&sf->mlock);
	s = ai->zarr.share;
	if (s)
		s->refs++;
	else
		mine->home->share = mine;
	pthread_mutex_unlock(&sf->mlock);
	if (s) {
		/* another chunk published one first: use it */
		share_free(mine);
		*out = s;
		return 0;
	}
	*out = mine;
	return 0;
}

static void share_put(struct afd_zshare *s)
{
	struct afd_src *sf = s->sf;
	pthread_mutex_lock(&sf->mlock);
	bool last = --s->refs == 0;
	if (last && s->home->share == s)
		s->home->share = NULL;
	pthread_mutex_unlock(&sf->mlock);
	if (last)
		share_free(s);
}

int afd_zarr_chunk_open(struct afd_ctx *c, struct afd_src *sf, long midx,
		    const struct afd_arrinfo *ai, uint64_t index,
		    const af_source *src, struct afd_zarr_chunk **out,
		    af_error *err)
{
	*out = NULL;
	const af_zarr_layout *layout = afd_zarr_layout(&ai->zarr);
	if (!layout)
		return -ENOENT;
	struct afd_zarr_chunk *z = calloc(1, sizeof(*z));
	if (!z)
		return -ENOMEM;
	if (af_zarr_chunk_get(layout, index, &z->chunk) != AF_OK) {
		free(z);
		return -ENOENT;
	}
	const af_zip_entry *member =
		midx >= 0 ? af_zip_entry_at(sf->zip, (size_t)midx) : NULL;
	af_cost cost = af_view_cost(&ai->a, member, AF_VIEW_DATA);
	int rc = 0;
	if (cost.decodes) {
		rc = share_get(c, sf, midx, ai, src, &z->share, err);
		if (rc == 0)
			z->view = z->share->view;
		z->cost = cost.held < SIZE_MAX ? (size_t)cost.held : SIZE_MAX;
	} else {
		rc = data_view_open(ai, src, &z->view, err);
	}
	if (rc < 0) {
		free(z);
		return rc;
	}
	*out = z;
	return 0;
}

uint64_t afd_zarr_chunk_size(const struct afd_zarr_chunk *z)
{
	return z->chunk.size;
}

size_t afd_zarr_chunk_cost(const struct afd_zarr_chunk *z)
{
	return z->cost;
}

unsigned *afd_zarr_chunk_cost_shared(const struct afd_zarr_chunk *z)
{
	return z && z->share && z->share->lz4 ? &z->share->lz4->bound : NULL;
}

af_status afd_zarr_chunk_extent(const struct afd_zarr_chunk *z, uint64_t off,
			    af_extent *out)
{
	af_status st = af_zarr_chunk_extent(&z->chunk, z->view, off, out);
	/* a shared view's source is not the handle's: never splice it */
	if (st == AF_OK && z->share && out->kind == AF_EXTENT_SOURCE)
		out->kind = AF_EXTENT_DECODED;
	return st;
}

af_status afd_zarr_chunk_read(struct afd_zarr_chunk *z, void *buf, size_t len,
			  uint64_t off, size_t *nread, af_error *err)
{
	return af_zarr_chunk_read(&z->chunk, z->view, buf, len, off, nread, err);
}

void afd_zarr_chunk_close(struct afd_zarr_chunk *z)
{
	if (!z)
		return;
	if (z->share)
		share_put(z->share);
	else
		af_view_close(z->view);
	free(z);
}
