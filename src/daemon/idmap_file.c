/* SPDX-License-Identifier: MIT */
/*
 * The id map's file (idmap.h). Little-endian throughout:
 *   header  "AFIDMAP\n", u32 format (2), u32 flags (0), u64 source key,
 *           u64 next_id, u64 count                                (40 bytes)
 *   count records, oldest first: u64 id, u32 gen, u8 kind, u8 entry,
 *           u16 0, u64 sub, u64 version, u64 parent, u64 dev, u64 ino,
 *           u16 path length, u16 member length (0xffff: none),
 *           u16 name length, u16 0                                (64 bytes)
 *           then the path, member and name bytes (no NULs)
 *   u32 CRC-32 (zlib) of every byte before it.
 * A file is untrusted: read whole under a size bound, then every field is
 * checked before anything is added (a corrupt file is ignored as a whole).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "../codec/bytes_i.h" /* the codec's little-endian field helpers */
#include "idmap.h"
#include "nodes.h"

#define MAGIC "AFIDMAP\n"
#define FORMAT 2u   /* 2: AE_NAMES took 10, the B.zarr/ files moved up */
#define HDR_LEN 40u
#define REC_LEN 64u
#define NO_MEMBER 0xffffu
#define STR_MAX 4096u
#define NAME_MAX_LEN 255u
#define FILE_MAX ((size_t)64 << 20)

/* The checksum of @p len bytes (zlib's crc32 takes at most UINT_MAX at once). */
static uint32_t crc_of(const unsigned char *p, size_t len)
{
	uLong c = crc32(0L, Z_NULL, 0);
	while (len) {
		uInt n = len > 0x40000000u ? 0x40000000u : (uInt)len;
		c = crc32(c, p, n);
		p += n;
		len -= n;
	}
	return (uint32_t)c;
}

/* The string lengths of @p r; false if one is past the file's bounds
 * (the daemon makes none such; such a record is not saved). */
static bool rec_fits(const struct afd_idrec *r, size_t *lp, size_t *lm,
		     size_t *ln)
{
	*lp = strlen(r->path);
	*ln = strlen(r->name);
	*lm = r->member ? strlen(r->member) : 0;
	return *lp <= STR_MAX && *lm <= STR_MAX && *ln <= NAME_MAX_LEN;
}

int afd_idmap_encode(const struct afd_idmap *m, uint64_t key,
		     unsigned char **out, size_t *len)
{
	size_t total = HDR_LEN + 4, count = 0, lp, lm, ln;
	const void *it;
	for (const struct afd_idrec *r = afd_idmap_first(m, &it); r;
	     r = afd_idmap_next(&it)) {
		if (!rec_fits(r, &lp, &lm, &ln))
			continue;
		total += REC_LEN + lp + lm + ln;
		count++;
	}
	unsigned char *buf = malloc(total);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, MAGIC, 8);
	af_put_le32(buf + 8, FORMAT);
	af_put_le32(buf + 12, 0);
	af_put_le64(buf + 16, key);
	af_put_le64(buf + 24, m->next_id);
	af_put_le64(buf + 32, count);
	unsigned char *p = buf + HDR_LEN;
	for (const struct afd_idrec *r = afd_idmap_first(m, &it); r;
	     r = afd_idmap_next(&it)) {
		if (!rec_fits(r, &lp, &lm, &ln))
			continue;
		memset(p, 0, REC_LEN);
		af_put_le64(p, r->id);
		af_put_le32(p + 8, r->gen);
		p[12] = r->kind;
		p[13] = r->entry;
		af_put_le64(p + 16, r->sub);
		af_put_le64(p + 24, r->version);
		af_put_le64(p + 32, r->parent);
		af_put_le64(p + 40, r->dev);
		af_put_le64(p + 48, r->ino);
		af_put_le16(p + 56, (uint16_t)lp);
		af_put_le16(p + 58, r->member ? (uint16_t)lm : NO_MEMBER);
		af_put_le16(p + 60, (uint16_t)ln);
		p += REC_LEN;
		memcpy(p, r->path, lp);
		p += lp;
		if (lm)
			memcpy(p, r->member, lm);
		p += lm;
		memcpy(p, r->name, ln);
		p += ln;
	}
	af_put_le32(p, crc_of(buf, (size_t)(p - buf)));
	*out = buf;
	*len = total;
	return 0;
}

static int refuse(char *why, size_t whylen, const char *msg, size_t at)
{
	snprintf(why, whylen, "%s (at byte %zu)", msg, at);
	return -EINVAL;
}

/* A copy of @p len bytes at @p p as a string, or NULL on ENOMEM. */
static char *str_at(const unsigned char *p, size_t len)
{
	char *s = malloc(len + 1);
	if (s) {
		memcpy(s, p, len);
		s[len] = '\0';
	}
	return s;
}

/* Check record @p r (strings set) against the header's next_id. */
static const char *rec_problem(const struct afd_idrec *r, uint64_t next_id,
			       size_t lp, size_t lm, size_t ln)
{
	if (r->id <= 1 || r->id >= next_id)
		return "record id out of range";
	if (r->gen == 0)
		return "record generation 0";
	if (r->kind < NK_DIR || r->kind > AFD_NKIND_LAST ||
	    r->entry > AFD_ENTRY_LAST)
		return "record kind or entry unknown";
	if (r->parent == 0 || r->parent == r->id)
		return "record parent invalid";
	if (!afd_idmap_path_ok(r->path, lp))
		return "record path invalid";
	if (r->member && memchr(r->member, '\0', lm))
		return "record member holds a NUL";
	if (ln == 0 || memchr(r->name, '\0', ln) || memchr(r->name, '/', ln))
		return "record name invalid";
	return NULL;
}

/* Parse the records into @p tmp (empty, as large as the caller's map). */
static int decode_records(struct afd_idmap *tmp, const unsigned char *buf,
			  size_t end, uint64_t count, uint64_t next_id,
			  char *why, size_t whylen)
{
	size_t at = HDR_LEN;
	for (uint64_t i = 0; i < count; i++) {
		if (end - at < REC_LEN)
			return refuse(why, whylen, "record truncated", at);
		const unsigned char *p = buf + at;
		size_t lp = af_le16(p + 56), lm = af_le16(p + 58), ln = af_le16(p + 60);
		bool has_member = lm != NO_MEMBER;
		if (!has_member)
			lm = 0;
		if (p[14] || p[15] || p[62] || p[63])
			return refuse(why, whylen, "record padding not zero", at);
		if (lp > STR_MAX || lm > STR_MAX || ln > NAME_MAX_LEN)
			return refuse(why, whylen, "record string too long", at);
		if (end - at - REC_LEN < lp + lm + ln)
			return refuse(why, whylen, "record strings truncated", at);
		const unsigned char *s = p + REC_LEN;
		char *path = str_at(s, lp);
		char *member = has_member ? str_at(s + lp, lm) : NULL;
		char *name = str_at(s + lp + lm, ln);
		struct afd_idrec r = {
			.id = af_le64(p), .gen = af_le32(p + 8), .kind = p[12],
			.entry = p[13], .sub = af_le64(p + 16),
			.version = af_le64(p + 24), .parent = af_le64(p + 32),
			.dev = af_le64(p + 40), .ino = af_le64(p + 48),
			.path = path, .member = member, .name = name,
		};
		int rc = 0;
		const char *bad = NULL;
		if (!path || !name || (has_member && !member))
			rc = -ENOMEM;
		else if ((bad = rec_problem(&r, next_id, lp, lm, ln)) != NULL)
			rc = refuse(why, whylen, bad, at);
		else if (afd_idmap_find(tmp, r.id))
			rc = refuse(why, whylen, "record id repeated", at);
		else
			rc = afd_idmap_insert(tmp, &r);
		free(path);
		free(member);
		free(name);
		if (rc < 0)
			return rc;
		at += REC_LEN + lp + lm + ln;
	}
	if (at != end)
		return refuse(why, whylen, "bytes after the last record", at);
	return 0;
}

int afd_idmap_decode(struct afd_idmap *m, uint64_t key,
		     const unsigned char *buf, size_t len, char *why,
		     size_t whylen)
{
	if (len < HDR_LEN + 4 || memcmp(buf, MAGIC, 8) != 0)
		return refuse(why, whylen, "not an id map file", 0);
	if (af_le32(buf + 8) != FORMAT || af_le32(buf + 12) != 0)
		return refuse(why, whylen, "unknown id map format", 8);
	size_t end = len - 4;
	if (crc_of(buf, end) != af_le32(buf + end))
		return refuse(why, whylen, "checksum mismatch", end);
	if (af_le64(buf + 16) != key)
		return refuse(why, whylen, "id map of another source", 16);
	uint64_t next_id = af_le64(buf + 24), count = af_le64(buf + 32);
	if (next_id < 2 || next_id == UINT64_MAX)
		return refuse(why, whylen, "next id out of range", 24);
	/* every record takes REC_LEN bytes at least: a cheap upper bound */
	if (count > AFD_IDMAP_MAX_LIMIT || count > (end - HDR_LEN) / REC_LEN)
		return refuse(why, whylen, "record count out of range", 32);
	struct afd_idmap tmp;
	if (afd_idmap_init(&tmp, m->max, m->gen) < 0)
		return -ENOMEM;
	int rc = decode_records(&tmp, buf, end, count, next_id, why, whylen);
	if (rc < 0) {
		afd_idmap_destroy(&tmp);
		return rc;
	}
	tmp.next_id = next_id > tmp.next_id ? next_id : tmp.next_id;
	tmp.dirty = false;
	afd_idmap_destroy(m);
	*m = tmp;
	return 0;
}

int afd_idmap_load(struct afd_idmap *m, uint64_t key, int dirfd,
		   const char *file, char *why, size_t whylen)
{
	int fd = openat(dirfd, file,
			O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		int e = errno;
		if (e != ENOENT)
			snprintf(why, whylen, "cannot open: %s", strerror(e));
		return -e;
	}
	struct stat st;
	unsigned char *buf = NULL;
	int rc = 0;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		snprintf(why, whylen, "cannot stat: %s", strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode) || st.st_size < 0 ||
	    (uint64_t)st.st_size > FILE_MAX) {
		rc = refuse(why, whylen, "not a regular file of at most 64 MiB", 0);
		goto out;
	}
	size_t len = (size_t)st.st_size, got = 0;
	buf = malloc(len ? len : 1);
	if (!buf) {
		rc = -ENOMEM;
		snprintf(why, whylen, "out of memory");
		goto out;
	}
	while (got < len) {
		ssize_t r = pread(fd, buf + got, len - got, (off_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = -errno;
			snprintf(why, whylen, "cannot read: %s", strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	rc = afd_idmap_decode(m, key, buf, got, why, whylen);
	if (rc == -ENOMEM)
		snprintf(why, whylen, "out of memory");
out:
	free(buf);
	close(fd);
	return rc;
}

static int write_all(int fd, const unsigned char *p, size_t len)
{
	while (len) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int afd_idmap_write(const unsigned char *buf, size_t len, int dirfd,
		    const char *file)
{
	char tmp[300];
	snprintf(tmp, sizeof(tmp), ".ids-tmp-%ld-%.200s", (long)getpid(), file);
	int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC |
			O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	int rc = write_all(fd, buf, len);
	if (rc == 0 && fsync(fd) < 0)
		rc = -errno;
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && renameat(dirfd, tmp, dirfd, file) < 0)
		rc = -errno;
	if (rc < 0)
		unlinkat(dirfd, tmp, 0);
	return rc;
}

int afd_idmap_save(const struct afd_idmap *m, uint64_t key, int dirfd,
		   const char *file)
{
	unsigned char *buf;
	size_t len;
	int rc = afd_idmap_encode(m, key, &buf, &len);
	if (rc < 0)
		return rc;
	rc = afd_idmap_write(buf, len, dirfd, file);
	free(buf);
	return rc;
}
