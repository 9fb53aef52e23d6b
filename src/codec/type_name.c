/* SPDX-License-Identifier: MIT */
/* The words for an element type that a person reads beside its type string. */
#include <stdio.h>
#include <string.h>

#include "arrayfs/af_array.h"

/* ", little-endian" or ", big-endian" as @p always asks, else "". */
static const char *order_words(char byteorder, bool always)
{
	if (byteorder == '>')
		return ", big-endian";
	if (byteorder == '<' && always)
		return ", little-endian";
	return "";
}

/* "[ns]" of a datetime type string ("<M8[ns]"), or "" for none. */
static const char *time_unit(const char *descr, int *len)
{
	const char *open = descr ? strchr(descr, '[') : NULL;
	const char *close = open ? strchr(open, ']') : NULL;
	*len = close ? (int)(close - open + 1) : 0;
	return close ? open : "";
}

static const char *plural(unsigned long long n)
{
	return n == 1 ? "" : "s";
}

size_t af_array_type_name(const af_array *a, char *out, size_t cap)
{
	const af_dtype *dt = &a->dtype;
	unsigned long long size = dt->itemsize, bits = size * 8;
	char bo = dt->byteorder;
	int n, ulen;
	const char *unit;

	switch (dt->kind) {
	case AF_KIND_BOOL:
		n = snprintf(out, cap, "bool");
		break;
	case AF_KIND_INT:
	case AF_KIND_UINT:
	case AF_KIND_FLOAT:
	case AF_KIND_COMPLEX: {
		static const char *const names[] = {
			[AF_KIND_INT] = "int", [AF_KIND_UINT] = "uint",
			[AF_KIND_FLOAT] = "float", [AF_KIND_COMPLEX] = "complex" };
		n = snprintf(out, cap, "%s%llu%s", names[dt->kind], bits,
			     order_words(bo, true));
		break;
	}
	case AF_KIND_DATETIME:
	case AF_KIND_TIMEDELTA:
		unit = time_unit(a->descr, &ulen);
		n = snprintf(out, cap, "%s64%.*s%s",
			     dt->kind == AF_KIND_DATETIME ? "datetime" : "timedelta",
			     ulen, unit, order_words(bo, false));
		break;
	case AF_KIND_BYTES:
		n = snprintf(out, cap, "bytes, %llu character%s", size,
			     plural(size));
		break;
	case AF_KIND_UNICODE:
		n = snprintf(out, cap, "unicode, %llu character%s%s", size / 4,
			     plural(size / 4), order_words(bo, false));
		break;
	case AF_KIND_VOID:
		n = snprintf(out, cap, "void, %llu byte%s", size, plural(size));
		break;
	case AF_KIND_STRUCT:
		n = snprintf(out, cap, "struct of %u field%s%s", dt->nfields,
			     plural(dt->nfields),
			     dt->has_object ? ", with pickled Python objects" : "");
		break;
	case AF_KIND_OBJECT:
		n = snprintf(out, cap, "object (pickled Python objects)");
		break;
	case AF_KIND_BFLOAT16:
		n = snprintf(out, cap, "bfloat16%s", order_words(bo, false));
		break;
	default:
		n = snprintf(out, cap, "unknown type");
		break;
	}
	if (n < 0 || (size_t)n >= cap) {
		if (cap > 0)
			out[0] = '\0';
		return 0;
	}
	return (size_t)n;
}
