/* SPDX-License-Identifier: MIT */
/* Stacks: the order of members, the rule that they agree, the stacked
 * array and the source that concatenates members' data. */
#include "arrayfs/af_stack.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrayfs/af_view.h"

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

int af_name_natural_cmp(const char *a, const char *b)
{
	const char *pa = a, *pb = b;
	while (*pa && *pb) {
		if (is_digit(*pa) && is_digit(*pb)) {
			const char *za = pa, *zb = pb;
			while (*za == '0')
				za++;
			while (*zb == '0')
				zb++;
			const char *ea = za, *eb = zb;
			while (is_digit(*ea))
				ea++;
			while (is_digit(*eb))
				eb++;
			/* more significant digits: the larger number */
			if (ea - za != eb - zb)
				return ea - za < eb - zb ? -1 : 1;
			int c = memcmp(za, zb, (size_t)(ea - za));
			if (c)
				return c;
			/* equal values: fewer leading zeros first */
			if (ea - pa != eb - pb)
				return ea - pa < eb - pb ? -1 : 1;
			pa = ea;
			pb = eb;
			continue;
		}
		if (*pa != *pb)
			return (unsigned char)*pa < (unsigned char)*pb ? -1 : 1;
		pa++;
		pb++;
	}
	if (*pa || *pb)
		return *pa ? 1 : -1;
	return strcmp(a, b);
}

/* The dtype as the `dtype` file shows it (descr, or the .ra-derived one). */
static const char *dtype_text(const af_array *a)
{
	return a->descr ? a->descr : "";
}

/* "3 4" (at most @p cap bytes, truncated with "..." if longer) */
static void shape_text(const af_array *a, char *out, size_t cap)
{
	size_t n = 0;
	out[0] = '\0';
	for (unsigned i = 0; i < a->ndim && n + 24 < cap; i++)
		n += (size_t)snprintf(out + n, cap - n, "%s%" PRIu64,
				      i ? " " : "", a->shape[i]);
	if (a->ndim == 0)
		snprintf(out, cap, "()");
	else if (n + 24 >= cap)
		snprintf(out + cap - 4, 4, "...");
}

af_status af_stack_agree(const af_array *first, const af_array *next,
			 af_error *why)
{
	if (first->dtype.has_object || next->dtype.has_object)
		return af_error_set(why, AF_E_UNSUPPORTED, AF_NO_OFFSET,
				    "object data (a pickle) does not stack");
	if (strcmp(dtype_text(first), dtype_text(next)) != 0)
		return af_error_set(why, AF_E_UNSUPPORTED, AF_NO_OFFSET,
				    "dtype %.200s, not %.200s", dtype_text(next),
				    dtype_text(first));
	bool same_shape = first->ndim == next->ndim;
	for (unsigned i = 0; same_shape && i < first->ndim; i++)
		same_shape = first->shape[i] == next->shape[i];
	if (!same_shape) {
		char a[200], b[200];
		shape_text(next, a, sizeof(a));
		shape_text(first, b, sizeof(b));
		return af_error_set(why, AF_E_UNSUPPORTED, AF_NO_OFFSET,
				    "shape %s, not %s", a, b);
	}
	/* the order of one element, or of a 1-d array, moves no byte, but
	 * the views say it (fortran_order, .ra dims): it must be one */
	if (first->fortran_order != next->fortran_order)
		return af_error_set(why, AF_E_UNSUPPORTED, AF_NO_OFFSET,
				    "%s order, not %s order",
				    next->fortran_order ? "Fortran" : "C",
				    first->fortran_order ? "Fortran" : "C");
	return AF_OK;
}

/* The .npy header dict of @p a (numpy's own spelling), malloc'd. */
static char *npy_dict(const af_array *a)
{
	const char *d = a->descr;
	bool list = d[0] == '[';
	size_t cap = strlen(d) + 96 + (size_t)a->ndim * 22;
	char *out = malloc(cap);
	if (!out)
		return NULL;
	size_t n = (size_t)snprintf(out, cap,
				    "{'descr': %s%s%s, 'fortran_order': %s, 'shape': (",
				    list ? "" : "'", d, list ? "" : "'",
				    a->fortran_order ? "True" : "False");
	for (unsigned i = 0; i < a->ndim; i++)
		n += (size_t)snprintf(out + n, cap - n, "%s%" PRIu64,
				      i ? ", " : "", a->shape[i]);
	snprintf(out + n, cap - n, "%s), }", a->ndim == 1 ? "," : "");
	return out;
}

af_status af_stack_array(const af_array *first, uint64_t n, af_array *out,
			 af_error *err)
{
	memset(out, 0, sizeof(*out));
	if (n < AF_STACK_MIN_MEMBERS || first->dtype.has_object ||
	    first->ndim >= AF_NDIM_MAX || !first->descr)
		return af_error_set(err, AF_E_INVAL, AF_NO_OFFSET,
				    "no stack of %" PRIu64 " such arrays", n);
	/* a hand-written list descr may hold a comment or a newline: it
	 * would end the one-line header dict the views write */
	if (strpbrk(first->descr, "#\n\r"))
		return af_error_set(err, AF_E_UNSUPPORTED, AF_NO_OFFSET,
				    "a descr with comments or line breaks does not stack");
	uint64_t count, size;
	if (__builtin_mul_overflow(first->count, n, &count) ||
	    __builtin_mul_overflow(first->data_size, n, &size))
		return af_error_set(err, AF_E_OVERFLOW, AF_NO_OFFSET,
				    "%" PRIu64 " arrays of %" PRIu64
				    " bytes overflow 64 bits", n, first->data_size);
	*out = *first;
	out->shape = NULL;
	out->descr = NULL;
	out->header_text = NULL;
	out->ndim = first->ndim + 1;
	out->count = count;
	out->data_size = out->stored_size = size;
	out->data_offset = 0;
	out->compression = AF_COMP_NONE;
	out->headerless = true;
	out->shape = malloc(sizeof(uint64_t) * out->ndim);
	out->descr = strdup(first->descr);
	if (!out->shape || !out->descr)
		goto nomem;
	/* the new axis is the slowest: first in C order, last in Fortran */
	unsigned at = first->fortran_order ? first->ndim : 0;
	for (unsigned i = 0, j = 0; i < out->ndim; i++)
		out->shape[i] = i == at ? n : first->shape[j++];
	if (first->format == AF_FORMAT_RA) {
		out->ra_flags = first->ra_flags & AF_RA_FLAG_BIG_ENDIAN;
		out->ra_unknown_flags = 0;
		out->ra_size = size;
	} else {
		out->header_text = npy_dict(out);
		if (!out->header_text)
			goto nomem;
	}
	return AF_OK;
nomem:
	af_array_free(out);
	return af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
			    "no memory for a stack of %" PRIu64 " arrays", n);
}

bool af_stack_member_name(const char *name, bool in_npz)
{
	af_name_kind kind = af_array_name_kind(name, in_npz);
	/* `names` has one name a line: a name with a line break cannot be
	 * listed there, so it is no member */
	return (kind == AF_NAME_NPY || kind == AF_NAME_RA) &&
	       !strchr(name, '\n');
}

bool af_stack_zip_member(const af_zip_entry *e)
{
	size_t n = strlen(e->name);
	return !e->is_dir && n && e->name[n - 1] != '/' &&
	       af_stack_member_name(e->name, true) &&
	       af_zip_entry_readable(e, NULL);
}

af_status af_stack_scan(uint64_t n, af_stack_parse_fn parse, void *arg,
			af_array *out, uint64_t *culprit, af_error *why)
{
	memset(out, 0, sizeof(*out));
	*culprit = n;
	af_array model = { 0 };
	af_status st = AF_OK;
	for (uint64_t i = 0; st == AF_OK && i < n; i++) {
		af_array a;
		st = parse(arg, i, &a, why);
		if (st == AF_OK && i == 0) {
			model = a;
			continue;
		}
		if (st == AF_OK) {
			st = af_stack_agree(&model, &a, why);
			af_array_free(&a);
		}
		if (st != AF_OK) {
			*culprit = i;
			if (st != AF_E_NOMEM)
				st = AF_E_UNSUPPORTED;
		}
	}
	if (st == AF_OK && n < AF_STACK_MIN_MEMBERS)
		st = af_error_set(why, AF_E_UNSUPPORTED, AF_NO_OFFSET,
				  "%" PRIu64 " array%s (a stack needs at least %u)",
				  n, n == 1 ? "" : "s", AF_STACK_MIN_MEMBERS);
	if (st == AF_OK) {
		st = af_stack_array(&model, n, out, why);
		if (st == AF_E_INVAL || st == AF_E_OVERFLOW)
			st = AF_E_UNSUPPORTED;
	}
	af_array_free(&model);
	return st;
}

static ssize_t stack_pread(const af_source *src, void *buf, size_t len,
			   uint64_t off)
{
	const af_stack_reader *r = src->ctx;
	if (off >= src->size || len == 0)
		return 0;
	if (len > src->size - off)
		len = (size_t)(src->size - off);
	size_t done = 0;
	while (done < len) {
		uint64_t at = off + done;
		uint64_t i = at / r->member_bytes, o = at % r->member_bytes;
		size_t take = len - done;
		if (take > r->member_bytes - o)
			take = (size_t)(r->member_bytes - o);
		ssize_t got = r->read(r->arg, i, (char *)buf + done, take, o);
		if (got < 0)
			return done ? (ssize_t)done : got;
		done += (size_t)got;
		if ((size_t)got < take)
			break;   /* the member shrank: the caller sees a short read */
	}
	return (ssize_t)done;
}

void af_stack_source_init(af_source *src, const af_stack_reader *r)
{
	memset(src, 0, sizeof(*src));
	src->pread = stack_pread;
	src->fd = -1;
	src->ctx = (void *)r;
	/* member_bytes x n was checked by af_stack_array; an empty member
	 * (a zero dim) gives an empty stack */
	src->size = r->member_bytes ? r->member_bytes * r->n : 0;
}
