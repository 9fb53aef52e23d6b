/* SPDX-License-Identifier: MIT */
/* Zip archives: end records (classic and zip64), the central directory,
 * and local headers. Name rules and the sorted index live in zip_names.c. */
#include <stdlib.h>
#include <string.h>

#include "arrayfs/af_sniff.h"
#include "bytes_i.h"
#include "zip_i.h"

#define SIG_LOCAL 0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_EOCD 0x06054b50u
#define SIG_EOCD64 0x06064b50u
#define SIG_LOCATOR 0x07064b50u

#define LOCAL_LEN 30u
#define CENTRAL_LEN 46u
#define EOCD_LEN 22u
#define EOCD64_LEN 56u
#define LOCATOR_LEN 20u
#define MAX_COMMENT 65535u

#define SAT16 0xFFFFu
#define SAT32 0xFFFFFFFFu

/* What the end records say about the central directory. */
struct zip_end {
	uint64_t count;
	uint64_t cd_size;
	uint64_t cd_offset;
	uint64_t limit; /* the directory must end at or before this byte */
	/* where the record holds each of the three, for messages */
	uint64_t count_at, size_at, offset_at;
};

static af_status read_zip64_end(const af_source *src, const unsigned char *loc,
				uint64_t loc_pos, const unsigned char *eocd,
				struct zip_end *e, af_error *err)
{
	uint32_t loc_disk = af_le32(loc + 4);
	uint64_t off = af_le64(loc + 8);
	uint32_t disks = af_le32(loc + 16);
	if (loc_disk != 0 || disks > 1)
		return af_error_set(err, AF_E_UNSUPPORTED, loc_pos,
				    "zip archives that span several disks are not supported");
	uint64_t end;
	if (af_add(off, EOCD64_LEN, &end) || end > loc_pos)
		return af_error_set(err, AF_E_HEADER, loc_pos,
				    "the zip64 locator at byte %llu points to byte %llu, past itself",
				    (unsigned long long)loc_pos,
				    (unsigned long long)off);
	unsigned char r[EOCD64_LEN];
	af_status st = af_source_read_exact(src, r, sizeof(r), off, err);
	if (st != AF_OK)
		return st;
	if (af_le32(r) != SIG_EOCD64)
		return af_error_set(err, AF_E_HEADER, off,
				    "no zip64 end record at byte %llu where the locator points",
				    (unsigned long long)off);
	if (af_le32(r + 16) != 0 || af_le32(r + 20) != 0)
		return af_error_set(err, AF_E_UNSUPPORTED, off,
				    "zip archives that span several disks are not supported");
	uint16_t disk = af_le16(eocd + 4), cd_disk = af_le16(eocd + 6);
	if ((disk != 0 && disk != SAT16) || (cd_disk != 0 && cd_disk != SAT16))
		return af_error_set(err, AF_E_UNSUPPORTED, loc_pos + LOCATOR_LEN,
				    "zip archives that span several disks are not supported");
	/* The zip64 values win over the classic ones (docs/FORMATS.md): some
	 * writers truncate the classic fields instead of saturating them. A
	 * wrong zip64 value is caught when its directory does not parse. */
	e->count = af_le64(r + 32);
	e->cd_size = af_le64(r + 40);
	e->cd_offset = af_le64(r + 48);
	e->limit = off;
	e->count_at = off + 32;
	e->size_at = off + 40;
	e->offset_at = off + 48;
	return AF_OK;
}

static af_status read_end(const af_source *src, struct zip_end *e,
			  af_error *err)
{
	uint64_t size = src->size;
	if (size < EOCD_LEN) {
		af_status st = af_sniff_explain(src, AF_MAGIC_ZIP,
						".npz (zip)", err);
		if (st != AF_OK)
			return st;
		return af_error_set(err, AF_E_MAGIC, size,
				    "%llu bytes is too short for a zip archive",
				    (unsigned long long)size);
	}
	/* the end record is followed only by its comment; the locator sits
	 * right before it */
	size_t tail_len = MAX_COMMENT + EOCD_LEN + LOCATOR_LEN;
	if (size < tail_len)
		tail_len = (size_t)size;
	uint64_t tail_off = size - tail_len;
	unsigned char *tail = malloc(tail_len);
	if (!tail)
		return af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
				    "no memory for the zip end record");
	af_status st = af_source_read_exact(src, tail, tail_len, tail_off, err);
	if (st != AF_OK)
		goto out;
	/* a comment may hold the signature too: first look for a record whose
	 * comment ends exactly at the end of the file, then for any that fits */
	size_t p = 0;
	bool found = false;
	for (int exact = 1; exact >= 0 && !found; exact--) {
		p = tail_len - EOCD_LEN + 1;
		while (p-- > 0) {
			if (af_le32(tail + p) != SIG_EOCD)
				continue;
			size_t end = p + EOCD_LEN + af_le16(tail + p + 20);
			if (exact ? end == tail_len : end <= tail_len) {
				found = true;
				break;
			}
		}
	}
	if (!found) {
		st = af_sniff_explain(src, AF_MAGIC_ZIP, ".npz (zip)", err);
		if (st == AF_OK)
			st = af_error_set(err, AF_E_MAGIC, tail_off,
					  "no zip end-of-central-directory record in the last %zu bytes",
					  tail_len);
		goto out;
	}
	const unsigned char *eocd = tail + p;
	uint64_t eocd_pos = tail_off + p;
	if (p >= LOCATOR_LEN && af_le32(eocd - LOCATOR_LEN) == SIG_LOCATOR) {
		st = read_zip64_end(src, eocd - LOCATOR_LEN,
				    eocd_pos - LOCATOR_LEN, eocd, e, err);
		goto out;
	}
	if (af_le16(eocd + 4) != 0 || af_le16(eocd + 6) != 0) {
		st = af_error_set(err, AF_E_UNSUPPORTED, eocd_pos,
				  "zip archives that span several disks are not supported");
		goto out;
	}
	e->count = af_le16(eocd + 10);
	e->cd_size = af_le32(eocd + 12);
	e->cd_offset = af_le32(eocd + 16);
	e->limit = eocd_pos;
	e->count_at = eocd_pos + 10;
	e->size_at = eocd_pos + 12;
	e->offset_at = eocd_pos + 16;
out:
	free(tail);
	return st;
}

static af_status check_end(const struct zip_end *e, uint64_t file_size,
			   af_error *err)
{
	uint64_t end;
	if (af_add(e->cd_offset, e->cd_size, &end))
		return af_error_set(err, AF_E_OVERFLOW, e->offset_at,
				    "central directory offset %llu + size %llu overflows",
				    (unsigned long long)e->cd_offset,
				    (unsigned long long)e->cd_size);
	if (end > file_size)
		return af_error_set(err, AF_E_TRUNCATED, e->offset_at,
				    "the central directory [%llu, %llu) lies past the end of the %llu-byte file",
				    (unsigned long long)e->cd_offset,
				    (unsigned long long)end,
				    (unsigned long long)file_size);
	if (end > e->limit)
		return af_error_set(err, AF_E_HEADER, e->offset_at,
				    "the central directory [%llu, %llu) overlaps the end record at byte %llu",
				    (unsigned long long)e->cd_offset,
				    (unsigned long long)end,
				    (unsigned long long)e->limit);
	if (e->count > AF_ZIP_MAX_ENTRIES)
		return af_error_set(err, AF_E_LIMIT, e->count_at,
				    "%llu zip members is more than the limit of %u",
				    (unsigned long long)e->count,
				    AF_ZIP_MAX_ENTRIES);
	if (e->cd_size > AF_ZIP_MAX_CDIR)
		return af_error_set(err, AF_E_LIMIT, e->size_at,
				    "a %llu-byte central directory is more than the limit of %llu",
				    (unsigned long long)e->cd_size,
				    (unsigned long long)AF_ZIP_MAX_CDIR);
	/* count <= 4 Mi, so the product cannot overflow */
	if (e->count * CENTRAL_LEN > e->cd_size)
		return af_error_set(err, AF_E_HEADER, e->count_at,
				    "%llu members cannot fit in a %llu-byte central directory",
				    (unsigned long long)e->count,
				    (unsigned long long)e->cd_size);
	return AF_OK;
}

/* Replace saturated 32-bit fields with the values of the zip64 extra field
 * (id 1): exactly the saturated ones are present, in this order. */
static af_status apply_zip64_extra(af_zip_entry *ze, const unsigned char *x,
				   size_t xlen, uint64_t at, uint64_t x_at,
				   af_error *err)
{
	uint64_t *want[3];
	size_t n = 0;
	if (ze->uncomp_size == SAT32)
		want[n++] = &ze->uncomp_size;
	if (ze->comp_size == SAT32)
		want[n++] = &ze->comp_size;
	if (ze->local_offset == SAT32)
		want[n++] = &ze->local_offset;
	if (n == 0)
		return AF_OK;
	size_t q = 0;
	while (q + 4 <= xlen) {
		uint16_t id = af_le16(x + q), len = af_le16(x + q + 2);
		if (q + 4 + len > xlen)
			break;
		if (id == 0x0001) {
			if (len < 8 * n)
				return af_error_set(err, AF_E_HEADER, x_at + q,
						    "the zip64 extra field of the member at byte %llu holds %u bytes, %zu needed",
						    (unsigned long long)at, len,
						    8 * n);
			for (size_t i = 0; i < n; i++)
				*want[i] = af_le64(x + q + 4 + 8 * i);
			return AF_OK;
		}
		q += 4 + (size_t)len;
	}
	return af_error_set(err, AF_E_HEADER, at,
			    "the member at byte %llu has 32-bit fields set to 0xFFFFFFFF but no zip64 extra field",
			    (unsigned long long)at);
}

static af_status read_entries(af_zip *z, const unsigned char *cd,
			      const struct zip_end *e, af_error *err)
{
	uint64_t size = e->cd_size;
	/* check_end made sure count * CENTRAL_LEN <= size */
	size_t arena = (size_t)(size - e->count * CENTRAL_LEN + e->count);
	z->entries = calloc(e->count ? (size_t)e->count : 1,
			    sizeof(*z->entries));
	z->names = malloc(arena ? arena : 1);
	if (!z->entries || !z->names)
		return af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
				    "no memory for %llu zip members",
				    (unsigned long long)e->count);
	size_t q = 0, used = 0;
	for (uint64_t i = 0; i < e->count; i++) {
		uint64_t at = e->cd_offset + q;
		if (size - q < CENTRAL_LEN || af_le32(cd + q) != SIG_CENTRAL)
			return af_error_set(err, AF_E_HEADER, at,
					    "no central directory entry %llu at byte %llu",
					    (unsigned long long)i,
					    (unsigned long long)at);
		const unsigned char *h = cd + q;
		size_t nlen = af_le16(h + 28), xlen = af_le16(h + 30),
		       clen = af_le16(h + 32);
		if (size - q - CENTRAL_LEN < nlen + xlen + clen)
			return af_error_set(err, AF_E_HEADER, at,
					    "central directory entry %llu at byte %llu runs past the directory",
					    (unsigned long long)i,
					    (unsigned long long)at);
		const unsigned char *name = h + CENTRAL_LEN;
		q += CENTRAL_LEN + nlen + xlen + clen;

		af_zip_entry ze = {
			.flags = af_le16(h + 8),
			.method = af_le16(h + 10),
			.mtime_dos = (uint32_t)af_le16(h + 14) << 16 |
				     af_le16(h + 12),
			.crc32 = af_le32(h + 16),
			.comp_size = af_le32(h + 20),
			.uncomp_size = af_le32(h + 24),
			.local_offset = af_le32(h + 42),
		};
		af_status st = apply_zip64_extra(&ze, name + nlen, xlen, at,
						 at + CENTRAL_LEN + nlen, err);
		if (st != AF_OK)
			return st;
		const char *why = af_zip_name_problem(name, nlen, &ze.is_dir);
		if (why) {
			char qn[256];
			af_zip_name_quote(qn, sizeof(qn), name, nlen);
			af_zip_warn(z, "member \"%s\" left out: %s", qn, why);
			continue;
		}
		/* the arena assumed every entry fits the directory; a later
		 * entry that does not is only found after this one is copied */
		if (nlen + 1 > arena - used)
			return af_error_set(err, AF_E_HEADER, at,
					    "central directory entry %llu at byte %llu leaves no room for the %llu entries it declares",
					    (unsigned long long)i,
					    (unsigned long long)at,
					    (unsigned long long)e->count);
		memcpy(z->names + used, name, nlen);
		z->names[used + nlen] = '\0';
		ze.name = z->names + used;
		used += nlen + 1;
		z->entries[z->count++] = ze;
	}
	if (q != size)
		return af_error_set(err, AF_E_HEADER, e->cd_offset + q,
				    "the central directory holds %llu bytes after its %llu entries",
				    (unsigned long long)(size - q),
				    (unsigned long long)e->count);
	return AF_OK;
}

af_status af_zip_open(af_zip **out, const af_source *src, af_error *err)
{
	*out = NULL;
	af_zip *z = calloc(1, sizeof(*z));
	if (z)
		z->warnings = calloc(AF_ZIP_MAX_WARNINGS + 1,
				     sizeof(*z->warnings));
	if (!z || !z->warnings) {
		af_zip_close(z);
		return af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
				    "no memory for a zip reader");
	}
	z->src = *src;
	unsigned char *cd = NULL;
	struct zip_end e = {0};
	af_status st = read_end(src, &e, err);
	if (st == AF_OK)
		st = check_end(&e, src->size, err);
	if (st != AF_OK)
		goto fail;
	z->cd_offset = e.cd_offset;
	cd = malloc(e.cd_size ? (size_t)e.cd_size : 1);
	if (!cd) {
		st = af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
				  "no memory for a %llu-byte central directory",
				  (unsigned long long)e.cd_size);
		goto fail;
	}
	st = af_source_read_exact(src, cd, (size_t)e.cd_size, e.cd_offset, err);
	if (st == AF_OK)
		st = read_entries(z, cd, &e, err);
	if (st == AF_OK)
		st = af_zip_index(z, err);
	if (st != AF_OK)
		goto fail;
	free(cd);
	af_zip_warn_finish(z);
	*out = z;
	return AF_OK;
fail:
	free(cd);
	af_zip_close(z);
	return st;
}

void af_zip_close(af_zip *z)
{
	if (!z)
		return;
	if (z->warnings)
		for (size_t i = 0; i < z->nwarnings; i++)
			free(z->warnings[i]);
	free(z->warnings);
	free(z->sorted);
	free(z->names);
	free(z->entries);
	free(z);
}

const af_source *af_zip_archive_source(const af_zip *z)
{
	return &z->src;
}

size_t af_zip_count(const af_zip *z)
{
	return z->count;
}

const af_zip_entry *af_zip_entry_at(const af_zip *z, size_t i)
{
	return i < z->count ? &z->entries[i] : NULL;
}

long af_zip_find(const af_zip *z, const char *name)
{
	size_t lo = 0, hi = z->count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint32_t idx = z->sorted[mid];
		int c = strcmp(name, z->entries[idx].name);
		if (c == 0)
			return (long)idx;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return -1;
}

size_t af_zip_warning_count(const af_zip *z)
{
	return z->nwarnings;
}

const char *af_zip_warning(const af_zip *z, size_t i)
{
	return i < z->nwarnings ? z->warnings[i] : NULL;
}

af_status af_zip_data_offset(const af_zip *z, size_t i, uint64_t *offset,
			     af_error *err)
{
	*offset = 0;
	if (i >= z->count)
		return af_error_set(err, AF_E_RANGE, AF_NO_OFFSET,
				    "zip member index %zu is out of range", i);
	const af_zip_entry *ze = &z->entries[i];
	size_t nlen = strlen(ze->name);
	char q[128];
	af_zip_name_quote(q, sizeof(q), (const unsigned char *)ze->name, nlen);
	uint64_t at = ze->local_offset, end;
	if (af_add(at, LOCAL_LEN + nlen, &end))
		return af_error_set(err, AF_E_OVERFLOW, AF_NO_OFFSET,
				    "local header offset %llu of \"%s\" overflows",
				    (unsigned long long)at, q);
	if (end > z->cd_offset)
		return af_error_set(err, AF_E_HEADER, at,
				    "the local header of \"%s\" at byte %llu runs into the central directory",
				    q, (unsigned long long)at);
	unsigned char *h = malloc(LOCAL_LEN + nlen);
	if (!h)
		return af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
				    "no memory for a local header");
	af_status st = af_source_read_exact(&z->src, h, LOCAL_LEN + nlen, at,
					    err);
	if (st != AF_OK)
		goto out;
	if (af_le32(h) != SIG_LOCAL) {
		st = af_error_set(err, AF_E_HEADER, at,
				  "no local header for \"%s\" at byte %llu",
				  q, (unsigned long long)at);
		goto out;
	}
	if (af_le16(h + 26) != nlen || memcmp(h + LOCAL_LEN, ze->name, nlen)) {
		st = af_error_set(err, AF_E_HEADER, at,
				  "the local header at byte %llu names another member than \"%s\"",
				  (unsigned long long)at, q);
		goto out;
	}
	uint64_t data = end + af_le16(h + 28), data_end;
	if (data < end || af_add(data, ze->comp_size, &data_end) ||
	    data_end > z->cd_offset) {
		st = af_error_set(err, AF_E_OVERFLOW, at,
				  "the %llu bytes of \"%s\" would run past the archive's members",
				  (unsigned long long)ze->comp_size, q);
		goto out;
	}
	*offset = data;
out:
	free(h);
	return st;
}
