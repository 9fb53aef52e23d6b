/* SPDX-License-Identifier: MIT */
/*
 * The RawArray (.ra) header parser and the numpy dtype -> RawArray type
 * mapping. Reads only the header and the source size, never the data.
 * Stricter than the reference readers: the magic is checked, every size is
 * overflow-checked, short files are refused, and the element type must be
 * one the format defines.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrayfs/arrayfs.h"
#include "bytes_i.h"
#include "ra_i.h"

#define RA_KNOWN_FLAGS (AF_RA_FLAG_BIG_ENDIAN | AF_RA_FLAG_COMPRESSED)

/* Field offsets in the fixed part of the header. */
enum {
	RA_OFF_MAGIC = 0,
	RA_OFF_FLAGS = 8,
	RA_OFF_ELTYPE = 16,
	RA_OFF_ELBYTE = 24,
	RA_OFF_SIZE = 32,
	RA_OFF_NDIMS = 40,
};

/*
 * An LZ4 sequence costs at least 3 bytes (token, 2-byte offset) per match
 * and every extra length byte adds at most 255 output bytes, so no raw LZ4
 * block decodes to more than 255 times its own length.
 */
#define LZ4_MAX_RATIO 255u

static const char *eltype_name(uint64_t eltype)
{
	switch (eltype) {
	case RA_ELTYPE_USER: return "user-defined";
	case RA_ELTYPE_INT: return "signed integer";
	case RA_ELTYPE_UINT: return "unsigned integer";
	case RA_ELTYPE_FLOAT: return "float";
	case RA_ELTYPE_COMPLEX: return "complex";
	case RA_ELTYPE_BFLOAT16: return "bfloat16";
	}
	return "unknown";
}

/* Checks eltype/elbyte against the sizes the format defines. */
static af_status check_type(uint64_t eltype, uint64_t elbyte, af_error *err)
{
	bool ok;
	const char *allowed;

	switch (eltype) {
	case RA_ELTYPE_USER:
		ok = elbyte >= 1;
		allowed = "at least 1";
		break;
	case RA_ELTYPE_INT:
	case RA_ELTYPE_UINT:
		ok = elbyte == 1 || elbyte == 2 || elbyte == 4 || elbyte == 8;
		allowed = "1, 2, 4 or 8";
		break;
	case RA_ELTYPE_FLOAT:
		ok = elbyte == 2 || elbyte == 4 || elbyte == 8 || elbyte == 16;
		allowed = "2, 4, 8 or 16";
		break;
	case RA_ELTYPE_COMPLEX:
		ok = elbyte == 8 || elbyte == 16 || elbyte == 32;
		allowed = "8, 16 or 32 (the whole pair)";
		break;
	case RA_ELTYPE_BFLOAT16:
		ok = elbyte == 2;
		/* Old Julia files used eltype 5 for Bool (elbyte 1). */
		allowed = elbyte == 1 ? "2 (eltype 5 with elbyte 1 is the old Julia "
					"package's Bool, which is not supported)" : "2";
		break;
	default:
		return af_error_set(err, AF_E_DTYPE, RA_OFF_ELTYPE,
				    "eltype %llu at byte 16 is not a RawArray element type (0-5)",
				    (unsigned long long)eltype);
	}
	if (!ok)
		return af_error_set(err, AF_E_DTYPE, RA_OFF_ELBYTE,
				    "elbyte %llu at byte 24 is invalid for eltype %llu (%s): it must be %s",
				    (unsigned long long)elbyte,
				    (unsigned long long)eltype, eltype_name(eltype),
				    allowed);
	return AF_OK;
}

size_t af_ra_descr(const af_dtype *dt, bool bf16_as_u2, char *out, size_t cap)
{
	char letter;
	switch (dt->kind) {
	case AF_KIND_INT: letter = 'i'; break;
	case AF_KIND_UINT: letter = 'u'; break;
	case AF_KIND_FLOAT: letter = 'f'; break;
	case AF_KIND_COMPLEX: letter = 'c'; break;
	case AF_KIND_BOOL: letter = 'b'; break;
	case AF_KIND_VOID: letter = 'V'; break;
	case AF_KIND_BFLOAT16:
		letter = 'u';
		if (!bf16_as_u2) {
			int n = snprintf(out, cap, "bfloat16");
			return n > 0 && (size_t)n < cap ? (size_t)n : 0;
		}
		break;
	default:
		return 0;
	}
	int n = snprintf(out, cap, "%c%c%llu", dt->byteorder, letter,
			 (unsigned long long)dt->itemsize);
	return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

/* Fills the numpy view of the element type: descr and af_dtype. */
static af_status make_dtype(af_array *a, bool big_endian)
{
	static const af_kind kinds[] = { AF_KIND_VOID, AF_KIND_INT,
					 AF_KIND_UINT, AF_KIND_FLOAT,
					 AF_KIND_COMPLEX, AF_KIND_BFLOAT16 };
	uint64_t eltype = a->ra_eltype, elbyte = a->ra_elbyte;
	af_dtype *dt = &a->dtype;

	dt->kind = kinds[eltype];
	dt->itemsize = elbyte;
	dt->has_object = false;
	dt->nfields = 0;
	/* Byte order means nothing for opaque records and single bytes. */
	if (eltype == RA_ELTYPE_USER || elbyte == 1)
		dt->byteorder = '|';
	else
		dt->byteorder = big_endian ? '>' : '<';
	if (eltype == RA_ELTYPE_USER)
		dt->scalar_size = 0;
	else if (eltype == RA_ELTYPE_COMPLEX)
		dt->scalar_size = elbyte / 2;
	else
		dt->scalar_size = elbyte;

	/* "|V" + 20 digits is the longest text */
	char buf[32];
	if (af_ra_descr(dt, false, buf, sizeof(buf)) == 0)
		return AF_E_DTYPE;
	a->descr = strdup(buf);
	return a->descr ? AF_OK : AF_E_NOMEM;
}

/*
 * Flags bit 1: the reference C library stores one raw LZ4 block of `size`
 * bytes; the Julia package stored LEB128 varints and wrote `size` = the
 * decoded length. A real LZ4 block is never exactly as long as its output
 * for small arrays and practically never for large ones, so size equal to
 * the decoded length identifies the Julia layout.
 */
static af_status check_compressed(const af_array *a, uint64_t src_size,
				  af_error *err)
{
	uint64_t size = a->ra_size, decoded = a->data_size, bound;

	if (size == decoded && decoded > 0)
		return af_error_set(err, AF_E_UNSUPPORTED, RA_OFF_SIZE,
				    "flags bit 1 is set but size %llu equals the decoded length: "
				    "this is the Julia RawArray package's LEB128 varint encoding, "
				    "which is not supported (%llu bytes follow the header)",
				    (unsigned long long)size,
				    (unsigned long long)(src_size > a->data_offset ?
							 src_size - a->data_offset : 0));
	/* An overflowing bound is larger than any decoded length. */
	if (decoded > 0 && !af_mul(size, LZ4_MAX_RATIO, &bound) &&
	    decoded > bound)
		return af_error_set(err, AF_E_HEADER, RA_OFF_SIZE,
				    "an LZ4 block of %llu bytes (size at byte 32) cannot decode to "
				    "elbyte x product(dims) = %llu bytes",
				    (unsigned long long)size,
				    (unsigned long long)decoded);
	return AF_OK;
}

/* Reads the fixed 48-byte header; tells "not RawArray" from "cut short". */
static af_status read_fixed(const af_source *src, unsigned char *hdr,
			    af_error *err)
{
	static const unsigned char magic[8] = "rawarray";
	uint64_t have = src->size < AF_RA_FIXED_HEADER ? src->size :
			AF_RA_FIXED_HEADER;
	af_status st = af_source_read_exact(src, hdr, (size_t)have, 0, err);
	if (st != AF_OK)
		return st;
	size_t cmp = have < 8 ? (size_t)have : 8;
	if (have == 0 || memcmp(hdr, magic, cmp) != 0) {
		st = af_sniff_explain(src, AF_MAGIC_RA, ".ra", err);
		if (st != AF_OK)
			return st;
		return af_error_set(err, AF_E_MAGIC, 0,
				    "the first 8 bytes are not the RawArray magic \"rawarray\"");
	}
	if (have < AF_RA_FIXED_HEADER)
		return af_error_set(err, AF_E_TRUNCATED, have,
				    "the file ends at byte %llu, inside the 48-byte RawArray header",
				    (unsigned long long)have);
	return AF_OK;
}

static af_status read_dims(const af_source *src, af_array *a, af_error *err)
{
	unsigned char buf[8 * AF_NDIM_MAX];
	size_t n = (size_t)a->ndim * 8;
	uint64_t end = AF_RA_FIXED_HEADER + (uint64_t)n;

	if (src->size < end)
		return af_error_set(err, AF_E_TRUNCATED, src->size,
				    "the file ends at byte %llu, but the %u dims end at byte %llu",
				    (unsigned long long)src->size, a->ndim,
				    (unsigned long long)end);
	af_status st = af_source_read_exact(src, buf, n, AF_RA_FIXED_HEADER, err);
	if (st != AF_OK)
		return st;
	/* calloc(0) may return NULL; keep one slot so NULL means no memory. */
	a->shape = calloc(a->ndim ? a->ndim : 1, sizeof(*a->shape));
	if (!a->shape)
		return af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
				    "out of memory for %u dims", a->ndim);
	uint64_t count = 1;
	for (unsigned i = 0; i < a->ndim; i++) {
		a->shape[i] = af_le64(buf + 8 * i);
		if (af_mul(count, a->shape[i], &count))
			return af_error_set(err, AF_E_OVERFLOW,
					    AF_RA_FIXED_HEADER + 8 * (uint64_t)i,
					    "the product of the dims overflows 64 bits at dim %u (%llu)",
					    i, (unsigned long long)a->shape[i]);
	}
	a->count = count;
	if (af_mul(count, a->ra_elbyte, &a->data_size))
		return af_error_set(err, AF_E_OVERFLOW, AF_RA_FIXED_HEADER,
				    "%llu elements of %llu bytes overflow 64 bits",
				    (unsigned long long)count,
				    (unsigned long long)a->ra_elbyte);
	return AF_OK;
}

static af_status parse(const af_source *src, af_array *a, af_error *err)
{
	unsigned char hdr[AF_RA_FIXED_HEADER];
	af_status st = read_fixed(src, hdr, err);
	if (st != AF_OK)
		return st;

	a->format = AF_FORMAT_RA;
	a->fortran_order = true;
	a->ra_flags = af_le64(hdr + RA_OFF_FLAGS);
	a->ra_eltype = af_le64(hdr + RA_OFF_ELTYPE);
	a->ra_elbyte = af_le64(hdr + RA_OFF_ELBYTE);
	a->ra_size = af_le64(hdr + RA_OFF_SIZE);
	a->ra_unknown_flags = a->ra_flags & ~RA_KNOWN_FLAGS;
	uint64_t ndims = af_le64(hdr + RA_OFF_NDIMS);

	st = check_type(a->ra_eltype, a->ra_elbyte, err);
	if (st != AF_OK)
		return st;
	if (ndims > AF_NDIM_MAX)
		return af_error_set(err, AF_E_LIMIT, RA_OFF_NDIMS,
				    "ndims %llu at byte 40 exceeds the limit of %d dimensions",
				    (unsigned long long)ndims, AF_NDIM_MAX);
	a->ndim = (unsigned)ndims;
	/* Cannot overflow with ndims <= AF_NDIM_MAX, checked all the same. */
	if (af_mul(ndims, 8, &a->data_offset) ||
	    af_add(a->data_offset, AF_RA_FIXED_HEADER, &a->data_offset))
		return af_error_set(err, AF_E_OVERFLOW, RA_OFF_NDIMS,
				    "the header length overflows 64 bits");

	st = read_dims(src, a, err);
	if (st != AF_OK)
		return st;

	bool compressed = a->ra_flags & AF_RA_FLAG_COMPRESSED;
	if (compressed) {
		st = check_compressed(a, src->size, err);
		if (st != AF_OK)
			return st;
		a->compression = AF_COMP_LZ4;
	} else if (a->ra_size != a->data_size) {
		return af_error_set(err, AF_E_HEADER, RA_OFF_SIZE,
				    "size %llu at byte 32 does not match elbyte x product(dims) = %llu",
				    (unsigned long long)a->ra_size,
				    (unsigned long long)a->data_size);
	}
	a->stored_size = a->ra_size;

	uint64_t end;
	if (af_add(a->data_offset, a->stored_size, &end))
		return af_error_set(err, AF_E_OVERFLOW, RA_OFF_SIZE,
				    "data offset %llu + size %llu overflows 64 bits",
				    (unsigned long long)a->data_offset,
				    (unsigned long long)a->stored_size);
	if (end > src->size)
		return af_error_set(err, AF_E_TRUNCATED, src->size,
				    "the data needs bytes %llu to %llu but the file ends at byte %llu",
				    (unsigned long long)a->data_offset,
				    (unsigned long long)end,
				    (unsigned long long)src->size);

	st = make_dtype(a, a->ra_flags & AF_RA_FLAG_BIG_ENDIAN);
	if (st != AF_OK)
		return af_error_set(err, st, AF_NO_OFFSET, st == AF_E_NOMEM ?
				    "out of memory for the type string" :
				    "no numpy type text for this element type");
	return AF_OK;
}

af_status af_ra_parse(const af_source *src, af_array *out, af_error *err)
{
	memset(out, 0, sizeof(*out));
	af_status st = parse(src, out, err);
	if (st != AF_OK)
		af_array_free(out);
	return st;
}

void af_ra_type_of(const af_dtype *dt, uint64_t *eltype, uint64_t *elbyte)
{
	*elbyte = dt->itemsize;
	switch (dt->kind) {
	case AF_KIND_INT:
		*eltype = RA_ELTYPE_INT;
		break;
	case AF_KIND_BOOL:
	case AF_KIND_UINT:
		*eltype = RA_ELTYPE_UINT;
		break;
	case AF_KIND_FLOAT:
		*eltype = RA_ELTYPE_FLOAT;
		break;
	case AF_KIND_COMPLEX:
		*eltype = RA_ELTYPE_COMPLEX;
		break;
	case AF_KIND_DATETIME:
	case AF_KIND_TIMEDELTA:
		*eltype = RA_ELTYPE_INT;
		*elbyte = 8;
		break;
	case AF_KIND_BFLOAT16:
		*eltype = RA_ELTYPE_BFLOAT16;
		*elbyte = 2;
		break;
	default:
		/* bytes, unicode, void, structured, object: opaque records */
		*eltype = RA_ELTYPE_USER;
		break;
	}
}
