/* SPDX-License-Identifier: MIT */
/*
 * The .npy header parser: magic, version, header length, then the header
 * dict (descr, fortran_order, shape) read with the streaming literal lexer.
 * Reads only the header and the source size, never the data.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrayfs/arrayfs.h"
#include "bytes_i.h"
#include "pylit_i.h"

static const unsigned char npy_magic[6] = { 0x93, 'N', 'U', 'M', 'P', 'Y' };

/* Where each value of the dict is, in the (UTF-8) header text. */
typedef struct span {
	bool seen;
	size_t start, end;
} span;

/* Strict UTF-8 check: no overlongs, surrogates or code points > U+10FFFF. */
static size_t utf8_invalid_at(const unsigned char *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		unsigned c = s[i];
		size_t k;
		unsigned min, cp;
		if (c < 0x80) {
			i++;
			continue;
		} else if ((c & 0xE0) == 0xC0) {
			k = 1; min = 0x80; cp = c & 0x1F;
		} else if ((c & 0xF0) == 0xE0) {
			k = 2; min = 0x800; cp = c & 0x0F;
		} else if ((c & 0xF8) == 0xF0) {
			k = 3; min = 0x10000; cp = c & 0x07;
		} else {
			return i;
		}
		if (n - i <= k)
			return i;
		for (size_t j = 1; j <= k; j++) {
			if ((s[i + j] & 0xC0) != 0x80)
				return i;
			cp = (cp << 6) | (s[i + j] & 0x3F);
		}
		if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
			return i;
		i += k + 1;
	}
	return SIZE_MAX;
}

/* Latin-1 to UTF-8 in place into a buffer of twice the size. */
static size_t latin1_to_utf8(const unsigned char *in, size_t n, char *out)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		if (in[i] < 0x80) {
			out[o++] = (char)in[i];
		} else {
			out[o++] = (char)(0xC0 | (in[i] >> 6));
			out[o++] = (char)(0x80 | (in[i] & 0x3F));
		}
	}
	return o;
}

/*
 * The parser counted bytes of the UTF-8 copy of a Latin-1 header, where
 * each byte >= 0x80 became two; move err's offset (and the "at byte N" of
 * its message) back to the byte of the file.
 */
static void offset_to_latin1(af_error *err, const char *utf8, size_t n,
			     uint64_t hstart)
{
	if (!err || err->offset == AF_NO_OFFSET || err->offset < hstart)
		return;
	uint64_t pos = err->offset - hstart, wide = 0;
	for (size_t i = 0; i < n && i < pos; i++)
		wide += ((unsigned char)utf8[i] & 0xC0) == 0x80;
	if (wide == 0)
		return;
	char old[40], msg[sizeof(err->msg)];
	snprintf(old, sizeof(old), "at byte %llu",
		 (unsigned long long)err->offset);
	err->offset -= wide;
	char *at = strstr(err->msg, old);
	if (!at)
		return;
	snprintf(msg, sizeof(msg), "%.*sat byte %llu%s", (int)(at - err->msg),
		 err->msg, (unsigned long long)err->offset, at + strlen(old));
	memcpy(err->msg, msg, sizeof(msg));
}

static char *dup_range(const char *s, size_t n)
{
	char *d = malloc(n + 1);
	if (d) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

/* The dict: every key must be one of the three; the last duplicate wins. */
static af_status scan_dict(pylit *pl, span spans[3])
{
	static const char *const keys[3] = { "descr", "fortran_order", "shape" };
	af_status st;

	if (!pl_is(pl, '{'))
		return pl_fail(pl, AF_E_HEADER, "header does not start with a dict");
	if ((st = pl_advance(pl)))
		return st;
	while (!pl_is(pl, '}')) {
		char key[32];
		if (pl->tok.kind != PL_STR)
			return pl_fail(pl, AF_E_HEADER, "header key is not a string");
		int which = -1;
		if (pl_str_cap(pl) < sizeof(key)) {
			size_t n = pl_str_decode(pl, key);
			for (int k = 0; k < 3; k++)
				if (strlen(keys[k]) == n && memcmp(keys[k], key, n) == 0)
					which = k;
		}
		if (which < 0)
			return pl_fail(pl, AF_E_HEADER,
				       "header has a key other than descr, fortran_order and shape");
		if ((st = pl_advance(pl)) ||
		    (st = pl_expect(pl, ':', "expected ':' after a header key")))
			return st;
		spans[which].seen = true;
		spans[which].start = pl->tok.start;
		if ((st = pl_skip_value(pl)))
			return st;
		spans[which].end = pl->prev_end;
		if (pl_is(pl, ','))
			st = pl_advance(pl);
		else if (!pl_is(pl, '}'))
			st = pl_fail(pl, AF_E_HEADER, "expected ',' or '}' in the header dict");
		if (st)
			return st;
	}
	if ((st = pl_advance(pl)))
		return st;
	if (pl->tok.kind != PL_EOF)
		return pl_fail(pl, AF_E_HEADER, "text after the header dict");
	for (int k = 0; k < 3; k++)
		if (!spans[k].seen)
			return af_error_set(pl->err, AF_E_HEADER, pl->base,
					    "header has no '%s' key", keys[k]);
	return AF_OK;
}

static af_status parse_fortran(const char *text, const span *sp, uint64_t base,
			       bool *fortran, af_error *err)
{
	pylit pl;
	unsigned paren;
	af_status st;

	if ((st = pl_init(&pl, text + sp->start, sp->end - sp->start,
			  base + sp->start, true, AF_E_HEADER, err)) ||
	    (st = pl_unwrap(&pl, &paren)))
		return st;
	if (pl.tok.kind != PL_TRUE && pl.tok.kind != PL_FALSE)
		return pl_fail(&pl, AF_E_HEADER, "fortran_order is not True or False");
	*fortran = pl.tok.kind == PL_TRUE;
	if ((st = pl_advance(&pl)))
		return st;
	return pl_close_parens(&pl, paren);
}

static af_status parse_shape(const char *text, const span *sp, uint64_t base,
			     bool allow_long, af_array *a, af_error *err)
{
	uint64_t dims[AF_NDIM_MAX], dim_at[AF_NDIM_MAX];
	unsigned ndim = 0, paren, p;
	pylit pl;
	af_status st;

	if ((st = pl_init(&pl, text + sp->start, sp->end - sp->start,
			  base + sp->start, allow_long, AF_E_HEADER, err)) ||
	    (st = pl_unwrap(&pl, &paren)))
		return st;
	if (!pl_is(&pl, '('))
		return pl_fail(&pl, AF_E_SHAPE, "shape is not a tuple");
	if ((st = pl_advance(&pl)))
		return st;
	while (!pl_is(&pl, ')')) {
		if ((st = pl_unwrap(&pl, &p)))
			return st;
		/* Python reads +2 as 2 and -0 as 0. */
		bool minus = pl_is(&pl, '-');
		if ((minus || pl_is(&pl, '+')) && (st = pl_advance(&pl)))
			return st;
		if (minus && pl.tok.kind == PL_INT && (pl.tok.big || pl.tok.ival != 0))
			return pl_fail(&pl, AF_E_SHAPE, "shape has a negative dimension");
		if (pl.tok.kind != PL_INT)
			return pl_fail(&pl, AF_E_SHAPE, "shape has a dimension that is not an int");
		if (pl.tok.big)
			return pl_fail(&pl, AF_E_OVERFLOW, "shape dimension does not fit in 64 bits");
		if (ndim == AF_NDIM_MAX)
			return pl_fail(&pl, AF_E_LIMIT, "shape has more than 64 dimensions");
		dim_at[ndim] = pl_off(&pl);
		dims[ndim++] = pl.tok.ival;
		if ((st = pl_advance(&pl)) || (st = pl_close_parens(&pl, p)))
			return st;
		if (pl_is(&pl, ','))
			st = pl_advance(&pl);
		else if (!pl_is(&pl, ')'))
			st = pl_fail(&pl, AF_E_SHAPE, "shape is not a tuple");  /* (3) */
		else if (ndim == 1)
			st = pl_fail(&pl, AF_E_SHAPE, "shape (n) is an int, not a tuple: write (n,)");
		if (st)
			return st;
	}
	if ((st = pl_advance(&pl)) || (st = pl_close_parens(&pl, paren)))
		return st;

	/* As numpy computes in Python ints, a zero dim makes the count 0
	 * whatever the other dims are. */
	uint64_t count = 1;
	bool zero = false;
	for (unsigned i = 0; i < ndim; i++)
		zero |= dims[i] == 0;
	for (unsigned i = 0; i < ndim && !zero; i++)
		if (af_mul(count, dims[i], &count))
			return af_error_set(err, AF_E_OVERFLOW, dim_at[i],
					    "element count of the shape overflows 64 bits at dimension %u, at byte %llu",
					    i, (unsigned long long)dim_at[i]);
	a->count = zero ? 0 : count;
	a->ndim = ndim;
	a->shape = malloc((ndim ? ndim : 1) * sizeof(uint64_t));
	if (!a->shape)
		return AF_E_NOMEM;
	memcpy(a->shape, dims, ndim * sizeof(uint64_t));
	return AF_OK;
}

static af_status parse_descr(const char *text, const span *sp, uint64_t base,
			     bool allow_long, af_array *a, af_error *err)
{
	pylit pl;
	unsigned paren;
	af_status st;
	const char *t = text + sp->start;
	size_t n = sp->end - sp->start;

	if ((st = pl_init(&pl, t, n, base + sp->start, allow_long, AF_E_HEADER, err)) ||
	    (st = pl_unwrap(&pl, &paren)))
		return st;
	if (pl.tok.kind == PL_STR) {
		a->descr = malloc(pl_str_cap(&pl) + 1);
		if (!a->descr)
			return AF_E_NOMEM;
		size_t len = pl_str_decode(&pl, a->descr);
		st = af_dtype_parse_typestr(a->descr, len, &a->dtype, err);
		if (st && err)
			err->offset = pl_off(&pl);
		return st;
	}
	size_t start = pl.tok.start;
	if ((st = pl_skip_value(&pl)))
		return st;
	size_t end = pl.prev_end;
	st = af_dtype_parse_at(t + start, end - start, base + sp->start + start,
			       allow_long, &a->dtype, err);
	if (st)
		return st;
	a->descr = dup_range(t + start, end - start);
	return a->descr ? AF_OK : AF_E_NOMEM;
}

/* The padding numpy ends a header with (a test per byte, not strchr:
 * a header has some 60 of them, and every array listed is parsed). */
static bool trailing_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Parses the header text (UTF-8, no NUL) into @p a. */
static af_status parse_header(const char *text, size_t n, uint64_t base,
			      bool allow_long, af_array *a, af_error *err)
{
	span spans[3] = { { 0 } };
	pylit pl;
	af_status st;

	if ((st = pl_init(&pl, text, n, base, allow_long, AF_E_HEADER, err)) ||
	    (st = scan_dict(&pl, spans)) ||
	    (st = parse_descr(text, &spans[0], base, allow_long, a, err)) ||
	    (st = parse_fortran(text, &spans[1], base, &a->fortran_order, err)) ||
	    (st = parse_shape(text, &spans[2], base, allow_long, a, err)))
		return st;
	/* An object array's data is a pickle of its own length (npy_parse). */
	if (!a->dtype.has_object &&
	    af_mul(a->count, a->dtype.itemsize, &a->data_size))
		return af_error_set(err, AF_E_OVERFLOW, base + spans[2].start,
				    "data size (count x itemsize %llu) of the shape at byte %llu overflows 64 bits",
				    (unsigned long long)a->dtype.itemsize,
				    (unsigned long long)(base + spans[2].start));
	while (n > 0 && trailing_blank(text[n - 1]))
		n--;
	a->header_text = dup_range(text, n);
	return a->header_text ? AF_OK : AF_E_NOMEM;
}

/* Reads magic, version and header length; sets a->data_offset. */
static af_status read_prelude(const af_source *src, af_array *a,
			      uint64_t *hstart, uint64_t *hlen, af_error *err)
{
	unsigned char pre[12];
	size_t have = src->size < sizeof(pre) ? (size_t)src->size : sizeof(pre);
	af_status st;

	if ((st = af_source_read_exact(src, pre, have, 0, err)))
		return st;
	size_t cmp = have < 6 ? have : 6;
	if (have == 0 || memcmp(pre, npy_magic, cmp) != 0) {
		st = af_sniff_explain(src, AF_MAGIC_NPY, ".npy", err);
		if (st != AF_OK)
			return st;
		return af_error_set(err, AF_E_MAGIC, 0, "not a .npy file (no \\x93NUMPY magic)");
	}
	if (have < 8)
		return af_error_set(err, AF_E_TRUNCATED, have,
				    "file ends at byte %zu inside the .npy preamble", have);
	a->version_major = pre[6];
	a->version_minor = pre[7];
	if (pre[7] != 0 || pre[6] < 1 || pre[6] > 3)
		return af_error_set(err, AF_E_VERSION,
				    pre[6] < 1 || pre[6] > 3 ? 6 : 7,
				    ".npy version %u.%u is not 1.0, 2.0 or 3.0",
				    pre[6], pre[7]);
	*hstart = pre[6] == 1 ? 10 : 12;
	if (have < *hstart)
		return af_error_set(err, AF_E_TRUNCATED, have,
				    "file ends at byte %zu inside the header length", have);
	*hlen = pre[6] == 1 ? af_le16(pre + 8) : af_le32(pre + 8);
	if (*hlen > AF_NPY_HEADER_MAX)
		return af_error_set(err, AF_E_LIMIT, 8,
				    "header length %llu is above the %u-byte limit",
				    (unsigned long long)*hlen, AF_NPY_HEADER_MAX);
	if (af_add(*hstart, *hlen, &a->data_offset))
		return af_error_set(err, AF_E_OVERFLOW, 8, "data offset overflows");
	if (a->data_offset > src->size)
		return af_error_set(err, AF_E_TRUNCATED, src->size,
				    "header of %llu bytes at byte %llu runs past the end of the file (%llu bytes)",
				    (unsigned long long)*hlen, (unsigned long long)*hstart,
				    (unsigned long long)src->size);
	return AF_OK;
}

static af_status npy_parse(const af_source *src, af_array *a, af_error *err)
{
	uint64_t hstart = 0, hlen = 0;
	unsigned char stack[1024];
	char *text = NULL;
	unsigned char *raw = stack;
	af_status st;

	a->format = AF_FORMAT_NPY;
	a->compression = AF_COMP_NONE;
	if ((st = read_prelude(src, a, &hstart, &hlen, err)))
		return st;
	if (hlen > sizeof(stack) && !(raw = malloc(hlen)))
		return AF_E_NOMEM;
	if ((st = af_source_read_exact(src, raw, hlen, hstart, err)))
		goto out;
	const unsigned char *nul = memchr(raw, 0, hlen);
	if (nul) {
		st = af_error_set(err, AF_E_HEADER, hstart + (nul - raw),
				  "NUL byte in the header at byte %llu",
				  (unsigned long long)(hstart + (nul - raw)));
		goto out;
	}
	const char *utf8 = (const char *)raw;
	size_t n = hlen;
	if (a->version_major == 3) {
		size_t bad = utf8_invalid_at(raw, hlen);
		if (bad != SIZE_MAX) {
			st = af_error_set(err, AF_E_HEADER, hstart + bad,
					  "invalid UTF-8 in a version 3.0 header at byte %llu",
					  (unsigned long long)(hstart + bad));
			goto out;
		}
	} else {
		bool high = false;
		for (size_t i = 0; i < hlen && !high; i++)
			high = raw[i] >= 0x80;
		if (high) {
			/* Offsets in messages then count UTF-8 bytes. */
			if (!(text = malloc(hlen * 2))) {
				st = AF_E_NOMEM;
				goto out;
			}
			n = latin1_to_utf8(raw, hlen, text);
			utf8 = text;
		}
	}
	if ((st = parse_header(utf8, n, hstart, a->version_major < 3, a, err))) {
		if (text)
			offset_to_latin1(err, text, n, hstart);
		goto out;
	}

	uint64_t avail = src->size - a->data_offset;
	if (a->dtype.has_object) {
		/* A pickle of unknown length: never interpreted, never checked. */
		a->stored_size = a->data_size = avail;
	} else {
		if (a->data_size > avail) {
			st = af_error_set(err, AF_E_TRUNCATED, src->size,
					  "data needs %llu bytes at byte %llu but the file ends at byte %llu",
					  (unsigned long long)a->data_size,
					  (unsigned long long)a->data_offset,
					  (unsigned long long)src->size);
			goto out;
		}
		a->stored_size = a->data_size;
	}
out:
	if (raw != stack)
		free(raw);
	free(text);
	if (st == AF_E_NOMEM)
		af_error_set(err, st, AF_NO_OFFSET, "out of memory reading a .npy header");
	return st;
}

af_status af_npy_parse(const af_source *src, af_array *out, af_error *err)
{
	memset(out, 0, sizeof(*out));
	af_status st = npy_parse(src, out, err);
	if (st)
		af_array_free(out);
	return st;
}
