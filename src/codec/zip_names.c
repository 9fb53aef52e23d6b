/* SPDX-License-Identifier: MIT */
/* Zip member names: safety checks, duplicates, the sorted index, warnings. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zip_i.h"

void af_zip_warn(af_zip *z, const char *fmt, ...)
{
	if (z->nwarnings >= AF_ZIP_MAX_WARNINGS) {
		z->dropped++;
		return;
	}
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	char *copy = strdup(line);
	if (!copy) {
		/* a lost warning line is better than failing the archive */
		z->dropped++;
		return;
	}
	z->warnings[z->nwarnings++] = copy;
}

void af_zip_warn_finish(af_zip *z)
{
	if (z->dropped == 0)
		return;
	char line[96];
	snprintf(line, sizeof(line), "and %zu more warnings", z->dropped);
	char *copy = strdup(line);
	if (copy)
		z->warnings[z->nwarnings++] = copy;
}

void af_zip_name_quote(char *out, size_t outlen, const unsigned char *name,
		       size_t len)
{
	size_t o = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = name[i];
		/* room for one escape, "..." and the NUL */
		if (o + 4 + 4 >= outlen) {
			memcpy(out + o, "...", 3);
			o += 3;
			break;
		}
		/* bytes >= 0x80 pass through: UTF-8 names stay readable */
		if (c < 0x20 || c == 0x7f || c == '\\') {
			snprintf(out + o, outlen - o, "\\x%02x", c);
			o += 4;
		} else {
			out[o++] = (char)c;
		}
	}
	out[o] = '\0';
}

const char *af_zip_name_problem(const unsigned char *name, size_t len,
				bool *is_dir)
{
	*is_dir = false;
	if (len == 0)
		return "empty name";
	if (memchr(name, '\0', len))
		return "NUL byte in name";
	if (memchr(name, '\\', len))
		return "backslash in name";
	if (name[0] == '/')
		return "absolute path";
	if (name[len - 1] == '/') {
		*is_dir = true;
		len--;
	}
	/* every component between slashes must be a plain name */
	size_t start = 0;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && name[i] != '/')
			continue;
		size_t n = i - start;
		if (n == 0)
			return "empty path component";
		if (n == 2 && name[start] == '.' && name[start + 1] == '.')
			return "\"..\" path component";
		if (n == 1 && name[start] == '.')
			return "\".\" path component";
		/* a longer component would be listed yet unreachable (NAME_MAX) */
		if (n > AF_ZIP_MAX_COMPONENT)
			return "path component longer than 255 bytes";
		start = i + 1;
	}
	return NULL;
}

/* qsort has no context argument; sort pointers to entries instead */
static int cmp_entry_ptr(const void *a, const void *b)
{
	const af_zip_entry *x = *(const af_zip_entry *const *)a;
	const af_zip_entry *y = *(const af_zip_entry *const *)b;
	int c = strcmp(x->name, y->name);
	if (c != 0)
		return c;
	return x < y ? -1 : x > y;
}

af_status af_zip_index(af_zip *z, af_error *err)
{
	size_t n = z->count;
	if (n == 0)
		return AF_OK;
	const af_zip_entry **order = malloc(n * sizeof(*order));
	uint32_t *pos = malloc(n * sizeof(*pos));
	z->sorted = malloc(n * sizeof(*z->sorted));
	if (!order || !pos || !z->sorted) {
		free(order);
		free(pos);
		return af_error_set(err, AF_E_NOMEM, AF_NO_OFFSET,
				    "no memory to index %zu zip members", n);
	}
	for (size_t i = 0; i < n; i++)
		order[i] = &z->entries[i];
	qsort(order, n, sizeof(*order), cmp_entry_ptr);
	/* ties sort in directory order, so the last of a run is kept;
	 * pos[i] is UINT32_MAX for a dropped entry, else 0 */
	for (size_t i = 0; i < n; i++)
		pos[i] = 0;
	for (size_t i = 0; i + 1 < n; i++) {
		if (strcmp(order[i]->name, order[i + 1]->name) != 0)
			continue;
		char q[256];
		af_zip_name_quote(q, sizeof(q),
				  (const unsigned char *)order[i]->name,
				  strlen(order[i]->name));
		af_zip_warn(z, "duplicate member \"%s\": an earlier copy is ignored, the last one is used",
			    q);
		pos[order[i] - z->entries] = UINT32_MAX;
	}
	size_t kept = 0;
	for (size_t i = 0; i < n; i++)
		if (pos[i] != UINT32_MAX)
			pos[i] = (uint32_t)kept++;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t p = pos[order[i] - z->entries];
		if (p != UINT32_MAX)
			z->sorted[k++] = p;
	}
	/* compact in place, keeping directory order */
	for (size_t i = 0; i < n; i++)
		if (pos[i] != UINT32_MAX)
			z->entries[pos[i]] = z->entries[i];
	z->count = kept;
	free(order);
	free(pos);
	return AF_OK;
}
