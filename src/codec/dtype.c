/* SPDX-License-Identifier: MIT */
/*
 * numpy descr parsing: type strings ("<f8", "|S10", "<M8[10ms]") and
 * structured field lists, following numpy.lib.format.descr_to_dtype. Only
 * the forms numpy writes (dtype.str and dtype.descr) and numpy's one-letter
 * codes are accepted, not every np.dtype() spelling ("float64", "<f8,<i4").
 */
#define _GNU_SOURCE /* qsort_r */
#include <stdlib.h>
#include <string.h>

#include "arrayfs/af_dtype.h"
#include "bytes_i.h"
#include "dtype_sink_i.h"
#include "pylit_i.h"

/* numpy keeps itemsizes and subarray dims in a C int. */
#define NP_INT_MAX 0x7FFFFFFFu

#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define HOST_ORDER '>'
#else
#define HOST_ORDER '<'
#endif

/* numpy's one-letter type codes, sized for an LP64 platform. */
static const struct {
	char code;
	af_kind kind;
	uint8_t size;
} type_codes[] = {
	{ '?', AF_KIND_BOOL, 1 },    { 'b', AF_KIND_INT, 1 },
	{ 'B', AF_KIND_UINT, 1 },    { 'h', AF_KIND_INT, 2 },
	{ 'H', AF_KIND_UINT, 2 },    { 'i', AF_KIND_INT, 4 },
	{ 'I', AF_KIND_UINT, 4 },    { 'l', AF_KIND_INT, 8 },
	{ 'L', AF_KIND_UINT, 8 },    { 'q', AF_KIND_INT, 8 },
	{ 'Q', AF_KIND_UINT, 8 },    { 'p', AF_KIND_INT, 8 },
	{ 'P', AF_KIND_UINT, 8 },    { 'e', AF_KIND_FLOAT, 2 },
	{ 'f', AF_KIND_FLOAT, 4 },   { 'd', AF_KIND_FLOAT, 8 },
	{ 'g', AF_KIND_FLOAT, 16 },  { 'F', AF_KIND_COMPLEX, 8 },
	{ 'D', AF_KIND_COMPLEX, 16 }, { 'G', AF_KIND_COMPLEX, 32 },
	{ 'S', AF_KIND_BYTES, 0 },   { 'a', AF_KIND_BYTES, 0 },
	{ 'c', AF_KIND_BYTES, 1 },   { 'U', AF_KIND_UNICODE, 0 },
	{ 'V', AF_KIND_VOID, 0 },    { 'O', AF_KIND_OBJECT, 8 },
	{ 'M', AF_KIND_DATETIME, 8 }, { 'm', AF_KIND_TIMEDELTA, 8 },
};

static const char *const time_units[] = {
	"Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as",
	"\xce\xbcs", /* numpy also reads the micro sign */
};

/* Refuses a type string; *out may be half-set by then, so it is zeroed. */
static af_status bad_type(const char *s, size_t len, af_dtype *out,
			  af_error *err, const char *why)
{
	memset(out, 0, sizeof(*out));
	return af_error_set(err, AF_E_DTYPE, AF_NO_OFFSET,
			    "type string '%.*s' %s", len > 40 ? 40 : (int)len,
			    s, why);
}

/* Parses decimal digits [s, s+len) into *v (<= NP_INT_MAX). */
static bool parse_size(const char *s, size_t len, uint64_t *v)
{
	*v = 0;
	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		*v = *v * 10 + (uint64_t)(s[i] - '0');
		if (*v > NP_INT_MAX)
			return false;
	}
	return true;
}

/* "[unit]" or "[Nunit]" after M8/m8. */
static bool valid_time_unit(const char *s, size_t len)
{
	uint64_t mult;
	size_t d = 1;

	if (len < 3 || s[0] != '[' || s[len - 1] != ']')
		return false;
	while (d < len - 1 && s[d] >= '0' && s[d] <= '9')
		d++;
	if (d > 1 && !parse_size(s + 1, d - 1, &mult))
		return false;
	size_t ulen = len - 1 - d;
	for (size_t i = 0; i < sizeof(time_units) / sizeof(time_units[0]); i++)
		if (strlen(time_units[i]) == ulen &&
		    memcmp(time_units[i], s + d, ulen) == 0)
			return true;
	return false;
}

/* Sets scalar_size and the resolved byte order from kind and itemsize. */
static void finish_scalar(af_dtype *dt, char order)
{
	switch (dt->kind) {
	case AF_KIND_BOOL: case AF_KIND_INT: case AF_KIND_UINT:
	case AF_KIND_FLOAT: case AF_KIND_BFLOAT16:
		dt->scalar_size = dt->itemsize;
		break;
	case AF_KIND_COMPLEX:
		dt->scalar_size = dt->itemsize / 2;
		break;
	case AF_KIND_DATETIME: case AF_KIND_TIMEDELTA:
		dt->scalar_size = 8;
		break;
	case AF_KIND_UNICODE:
		dt->scalar_size = 4;
		break;
	default:
		dt->scalar_size = 0;
		break;
	}
	if (dt->scalar_size <= 1 || dt->kind == AF_KIND_BOOL)
		dt->byteorder = '|';
	else
		dt->byteorder = order == '>' || order == '<' ? order : HOST_ORDER;
	dt->has_object = dt->kind == AF_KIND_OBJECT;
}

af_status af_dtype_parse_typestr(const char *s, size_t len, af_dtype *out,
				 af_error *err)
{
	const char *s0 = s;
	size_t len0 = len;
	char order = '=';
	uint64_t n;

	memset(out, 0, sizeof(*out));
	if (len > 0 && (s[0] == '<' || s[0] == '>' || s[0] == '|' || s[0] == '=')) {
		order = s[0];
		s++;
		len--;
	}
	if (len == 0)
		return bad_type(s0, len0, out, err, "has no type code");
	char k = s[0];
	const char *rest = s + 1;
	size_t rlen = len - 1;

	if (rlen == 0) {
		for (size_t i = 0; i < sizeof(type_codes) / sizeof(type_codes[0]); i++) {
			if (type_codes[i].code == k) {
				out->kind = type_codes[i].kind;
				out->itemsize = type_codes[i].size;
				finish_scalar(out, order);
				return AF_OK;
			}
		}
		return bad_type(s0, len0, out, err, "is not a numpy type");
	}
	if (k == 'M' || k == 'm') {
		if (rest[0] != '8' || (rlen > 1 && !valid_time_unit(rest + 1, rlen - 1)))
			return bad_type(s0, len0, out, err,
					"is not a datetime type (M8[unit] or m8[unit])");
		out->kind = k == 'M' ? AF_KIND_DATETIME : AF_KIND_TIMEDELTA;
		out->itemsize = 8;
		finish_scalar(out, order);
		return AF_OK;
	}
	if (!parse_size(rest, rlen, &n))
		return bad_type(s0, len0, out, err, "has an invalid size");
	bool ok;
	switch (k) {
	case 'b':
		ok = n == 1;
		out->kind = AF_KIND_BOOL;
		break;
	case 'i': case 'u':
		ok = n == 1 || n == 2 || n == 4 || n == 8;
		out->kind = k == 'i' ? AF_KIND_INT : AF_KIND_UINT;
		break;
	case 'f':
		ok = n == 2 || n == 4 || n == 8 || n == 16;
		out->kind = AF_KIND_FLOAT;
		break;
	case 'c':
		ok = n == 8 || n == 16 || n == 32;
		out->kind = AF_KIND_COMPLEX;
		break;
	case 'S': case 'a':
		ok = true;
		out->kind = AF_KIND_BYTES;
		break;
	case 'U':
		ok = n <= NP_INT_MAX / 4;
		out->kind = AF_KIND_UNICODE;
		n *= 4;
		break;
	case 'V':
		ok = true;
		out->kind = AF_KIND_VOID;
		break;
	case 'O':
		ok = n == 8;
		out->kind = AF_KIND_OBJECT;
		break;
	default:
		ok = false;
	}
	if (!ok)
		return bad_type(s0, len0, out, err, "is not a numpy type");
	out->itemsize = n;
	finish_scalar(out, order);
	return AF_OK;
}

/* Field names and titles of one list, for the duplicate check. */
typedef struct name_set {
	char *text;
	size_t used, cap;
	struct name_ref { size_t off, len; uint64_t at; } *refs;
	size_t n, nmax;
} name_set;

static af_status names_add(name_set *ns, const char *s, size_t len, uint64_t at)
{
	if (ns->used + len > ns->cap) {
		size_t cap = ns->cap ? ns->cap * 2 : 256;
		while (cap < ns->used + len)
			cap *= 2;
		char *t = realloc(ns->text, cap);
		if (!t)
			return AF_E_NOMEM;
		ns->text = t;
		ns->cap = cap;
	}
	if (ns->n == ns->nmax) {
		size_t nmax = ns->nmax ? ns->nmax * 2 : 16;
		struct name_ref *r = realloc(ns->refs, nmax * sizeof(*r));
		if (!r)
			return AF_E_NOMEM;
		ns->refs = r;
		ns->nmax = nmax;
	}
	if (len)
		memcpy(ns->text + ns->used, s, len);
	ns->refs[ns->n++] = (struct name_ref){ ns->used, len, at };
	ns->used += len;
	return AF_OK;
}

static int name_cmp(const void *a, const void *b, void *arg)
{
	const struct name_ref *x = a, *y = b;
	const char *text = arg;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = n ? memcmp(text + x->off, text + y->off, n) : 0;
	if (c)
		return c;
	return x->len < y->len ? -1 : x->len > y->len;
}

static af_status names_check(name_set *ns, af_error *err)
{
	if (ns->n < 2)
		return AF_OK;
	qsort_r(ns->refs, ns->n, sizeof(*ns->refs), name_cmp, ns->text);
	for (size_t i = 1; i < ns->n; i++) {
		if (name_cmp(&ns->refs[i - 1], &ns->refs[i], ns->text) == 0) {
			struct name_ref *r = &ns->refs[i];
			uint64_t at = r->at > ns->refs[i - 1].at ? r->at : ns->refs[i - 1].at;
			return af_error_set(err, AF_E_DTYPE, at,
					    "field name or title '%.*s' is used twice (at byte %llu)",
					    r->len > 40 ? 40 : (int)r->len,
					    ns->text ? ns->text + r->off : "",
					    (unsigned long long)at);
		}
	}
	return AF_OK;
}

/* Decodes the current string token; *heap is set when it had to allocate. */
static af_status decode_str(pylit *pl, char *stack, size_t stack_len,
			    char **out, size_t *len)
{
	size_t cap = pl_str_cap(pl) + 1;
	char *buf = cap <= stack_len ? stack : malloc(cap);
	if (!buf)
		return AF_E_NOMEM;
	*len = pl_str_decode(pl, buf);
	*out = buf;
	return AF_OK;
}

static af_status parse_type(pylit *pl, unsigned depth, af_dtype *out);

/* Tells the descr's watcher, if any (dtype_sink_i.h), what was just read. */
static void observe(pylit *pl, af_dtype_event ev, const char *text, size_t len,
		    bool title, const uint64_t *dims, unsigned n)
{
	if (pl->sink)
		pl->sink->event(pl->sink, ev, text, len, title, dims, n);
}

/* A type string token: decode and parse it. */
static af_status parse_str_type(pylit *pl, af_dtype *out)
{
	char stack[128], *s;
	size_t len;
	uint64_t at = pl_off(pl);

	if (decode_str(pl, stack, sizeof(stack), &s, &len))
		return AF_E_NOMEM;
	af_status st = af_dtype_parse_typestr(s, len, out, pl->err);
	if (!st)
		observe(pl, AF_DTYPE_EV_TYPE, s, len, false, NULL, 0);
	if (s != stack)
		free(s);
	if (st) {
		if (pl->err)
			pl->err->offset = at;
		return st;
	}
	return pl_advance(pl);
}

/*
 * A sub-array shape: a bare int or a tuple of ints. *count is the element
 * count; *subarray says whether numpy makes a sub-array dtype of it (a bare
 * 1 and () do not).
 */
static af_status parse_field_shape(pylit *pl, uint64_t *count, bool *subarray)
{
	unsigned paren;
	af_status st;

	if ((st = pl_unwrap(pl, &paren)))
		return st;
	*count = 1;
	bool tuple = pl_is(pl, '(');
	if (tuple && (st = pl_advance(pl)))
		return st;
	unsigned ndim = 0;
	uint64_t dims[AF_NDIM_MAX];
	while (!tuple || !pl_is(pl, ')')) {
		unsigned p;
		if ((st = pl_unwrap(pl, &p)))
			return st;
		if (pl->tok.kind != PL_INT || pl->tok.big || pl->tok.ival > NP_INT_MAX)
			return pl_fail(pl, AF_E_DTYPE,
				       "field shape must hold non-negative ints below 2**31");
		if (af_mul(*count, pl->tok.ival, count))
			return pl_fail(pl, AF_E_OVERFLOW, "field shape overflows");
		uint64_t dim = pl->tok.ival;
		if (ndim < AF_NDIM_MAX)
			dims[ndim] = dim;
		ndim++;
		if ((st = pl_advance(pl)) || (st = pl_close_parens(pl, p)))
			return st;
		if (!tuple) {
			*subarray = dim != 1;
			if (*subarray)
				observe(pl, AF_DTYPE_EV_SHAPE, NULL, 0, false, dims, 1);
			return pl_close_parens(pl, paren);
		}
		if (pl_is(pl, ','))
			st = pl_advance(pl);
		else if (!pl_is(pl, ')'))
			st = pl_fail(pl, AF_E_DTYPE, "expected ',' or ')' in a field shape");
		if (st)
			return st;
	}
	*subarray = ndim > 0;
	if (*subarray)
		observe(pl, AF_DTYPE_EV_SHAPE, NULL, 0, false, dims, ndim);
	if ((st = pl_advance(pl)))
		return st;
	return pl_close_parens(pl, paren);
}

/* Applies a sub-array shape to @p dt. */
static af_status make_subarray(pylit *pl, af_dtype *dt, uint64_t count,
			       bool subarray, uint64_t at)
{
	if (af_mul(dt->itemsize, count, &dt->itemsize))
		return af_error_set(pl->err, AF_E_OVERFLOW, at,
				    "sub-array size overflows at byte %llu",
				    (unsigned long long)at);
	if (subarray) {
		dt->kind = AF_KIND_VOID;
		dt->byteorder = '|';
		dt->scalar_size = 0;
		dt->nfields = 0;
	}
	return AF_OK;
}

/* A field name: a string or a (title, name) pair; both go into @p ns. */
static af_status parse_field_name(pylit *pl, name_set *ns, bool *empty)
{
	char stack[128], *s;
	size_t len;
	unsigned paren, p;
	af_status st;

	if ((st = pl_unwrap(pl, &paren)))
		return st;
	bool pair = pl_is(pl, '(');
	if (pair && (st = pl_advance(pl)))
		return st;
	for (int part = 0; part < (pair ? 2 : 1); part++) {
		if ((st = pl_unwrap(pl, &p)))
			return st;
		if (pl->tok.kind != PL_STR)
			return pl_fail(pl, AF_E_DTYPE,
				       "field name must be a string or a (title, name) pair");
		uint64_t at = pl_off(pl);
		if (decode_str(pl, stack, sizeof(stack), &s, &len))
			return AF_E_NOMEM;
		st = names_add(ns, s, len, at);
		if (!st)
			observe(pl, AF_DTYPE_EV_NAME, s, len, pair && part == 0,
				NULL, 0);
		if (s != stack)
			free(s);
		if (st)
			return st;
		*empty = !pair && len == 0;
		if ((st = pl_advance(pl)) || (st = pl_close_parens(pl, p)))
			return st;
		if (pair && part == 0 &&
		    (st = pl_expect(pl, ',', "expected ',' in a (title, name) pair")))
			return st;
	}
	if (pair) {
		if (pl_is(pl, ',') && (st = pl_advance(pl)))
			return st;
		if ((st = pl_expect(pl, ')', "expected ')' after a (title, name) pair")))
			return st;
	}
	return pl_close_parens(pl, paren);
}

/* One (name, type[, shape]) entry; adds its size to *size. */
static af_status parse_field(pylit *pl, unsigned depth, name_set *ns,
			     af_dtype *sum)
{
	af_dtype ft;
	bool empty = false;
	af_status st;
	size_t nnames = ns->n;
	uint64_t field_at = pl_off(pl);

	if (!pl_is(pl, '('))
		return pl_fail(pl, AF_E_DTYPE, "expected a (name, type) field tuple");
	observe(pl, AF_DTYPE_EV_FIELD_BEGIN, NULL, 0, false, NULL, 0);
	if ((st = pl_advance(pl)) || (st = parse_field_name(pl, ns, &empty)) ||
	    (st = pl_expect(pl, ',', "expected ',' after a field name")) ||
	    (st = parse_type(pl, depth, &ft)))
		return st;
	if (pl_is(pl, ',') && (st = pl_advance(pl)))
		return st;
	if (!pl_is(pl, ')')) {
		uint64_t count, at = pl_off(pl);
		bool subarray;
		if ((st = parse_field_shape(pl, &count, &subarray)) ||
		    (st = make_subarray(pl, &ft, count, subarray, at)))
			return st;
		if (pl_is(pl, ',') && (st = pl_advance(pl)))
			return st;
	}
	if ((st = pl_expect(pl, ')', "expected ')' after a field")))
		return st;
	observe(pl, AF_DTYPE_EV_FIELD_END, NULL, 0, false, NULL, 0);
	/* descr_to_dtype: '' names of non-struct void type are padding. */
	if (empty && ft.kind == AF_KIND_VOID)
		ns->n = nnames;
	else
		sum->nfields++;
	sum->has_object |= ft.has_object;
	if (af_add(sum->itemsize, ft.itemsize, &sum->itemsize))
		return af_error_set(pl->err, AF_E_OVERFLOW, field_at,
				    "structured itemsize overflows with the field at byte %llu",
				    (unsigned long long)field_at);
	return AF_OK;
}

static af_status parse_list(pylit *pl, unsigned depth, af_dtype *out)
{
	name_set ns = { 0 };
	af_status st;

	memset(out, 0, sizeof(*out));
	out->kind = AF_KIND_STRUCT;
	out->byteorder = '|';
	observe(pl, AF_DTYPE_EV_LIST_BEGIN, NULL, 0, false, NULL, 0);
	if ((st = pl_advance(pl)))
		return st;
	while (!pl_is(pl, ']')) {
		if ((st = parse_field(pl, depth, &ns, out)))
			goto done;
		if (pl_is(pl, ','))
			st = pl_advance(pl);
		else if (!pl_is(pl, ']'))
			st = pl_fail(pl, AF_E_DTYPE, "expected ',' or ']' in a field list");
		if (st)
			goto done;
	}
	if (!(st = names_check(&ns, pl->err))) {
		observe(pl, AF_DTYPE_EV_LIST_END, NULL, 0, false, NULL, 0);
		st = pl_advance(pl);
	}
done:
	free(ns.text);
	free(ns.refs);
	return st;
}

/* A type: a string, a field list, or a (type, shape) tuple. */
static af_status parse_type(pylit *pl, unsigned depth, af_dtype *out)
{
	unsigned paren;
	af_status st;

	if (depth >= AF_DTYPE_MAX_DEPTH)
		return pl_fail(pl, AF_E_LIMIT, "dtype nested too deeply");
	if ((st = pl_unwrap(pl, &paren)))
		return st;
	if (pl->tok.kind == PL_STR) {
		st = parse_str_type(pl, out);
	} else if (pl_is(pl, '[')) {
		st = parse_list(pl, depth + 1, out);
	} else if (pl_is(pl, '(')) {
		uint64_t count, at;
		bool subarray;
		if ((st = pl_advance(pl)) || (st = parse_type(pl, depth + 1, out)) ||
		    (st = pl_expect(pl, ',', "expected ',' in a (type, shape) tuple")))
			return st;
		at = pl_off(pl);
		if ((st = parse_field_shape(pl, &count, &subarray)) ||
		    (st = make_subarray(pl, out, count, subarray, at)))
			return st;
		if (pl_is(pl, ',') && (st = pl_advance(pl)))
			return st;
		st = pl_expect(pl, ')', "expected ')' after a (type, shape) tuple");
	} else {
		return pl_fail(pl, AF_E_DTYPE,
			       "expected a type string, a field list or a (type, shape) tuple");
	}
	if (st)
		return st;
	return pl_close_parens(pl, paren);
}

af_status af_dtype_parse(const char *text, size_t len, bool allow_long_suffix,
			 af_dtype *out, af_error *err)
{
	return af_dtype_parse_at(text, len, 0, allow_long_suffix, out, err);
}

/* af_dtype_parse_at, with @p sink (or NULL) watching. */
static af_status parse_descr(const char *text, size_t len, uint64_t base,
			     bool allow_long_suffix, af_dtype_sink *sink,
			     af_dtype *out, af_error *err)
{
	pylit pl;
	unsigned paren;
	af_status st;

	memset(out, 0, sizeof(*out));
	if (len > AF_DESCR_MAX)
		return af_error_set(err, AF_E_LIMIT, base,
				    "descr of %zu bytes is longer than the limit", len);
	if ((st = pl_init(&pl, text, len, base, allow_long_suffix, AF_E_DTYPE, err)))
		goto fail;
	pl.sink = sink;
	if ((st = pl_unwrap(&pl, &paren)))
		goto fail;
	if (pl.tok.kind == PL_STR)
		st = parse_str_type(&pl, out);
	else if (pl_is(&pl, '['))
		st = parse_list(&pl, 1, out);
	else
		st = pl_fail(&pl, AF_E_DTYPE,
			     "descr must be a type string or a list of fields");
	if (!st)
		st = pl_close_parens(&pl, paren);
	if (!st && pl.tok.kind != PL_EOF)
		st = pl_fail(&pl, AF_E_DTYPE, "unexpected text after the descr");
	if (!st)
		return AF_OK;
fail:
	if (st == AF_E_NOMEM)
		af_error_set(err, st, AF_NO_OFFSET, "out of memory parsing a descr");
	memset(out, 0, sizeof(*out));
	return st;
}

af_status af_dtype_parse_at(const char *text, size_t len, uint64_t base,
			    bool allow_long_suffix, af_dtype *out, af_error *err)
{
	return parse_descr(text, len, base, allow_long_suffix, NULL, out, err);
}

af_status af_dtype_parse_observed(const char *text, size_t len,
				  bool allow_long_suffix, af_dtype_sink *sink,
				  af_dtype *out, af_error *err)
{
	return parse_descr(text, len, 0, allow_long_suffix, sink, out, err);
}
