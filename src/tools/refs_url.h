/* SPDX-License-Identifier: MIT */
/*
 * URLs in a reference file: a file's path under the prefix SOURCE is
 * served at, and the test whether a path can be written under a template.
 */
#ifndef ARRAYFS_TOOLS_REFS_URL_H
#define ARRAYFS_TOOLS_REFS_URL_H

#include <stdbool.h>

/** Whether @p prefix is a file:// URL, whose paths fsspec reads as they are. */
bool refs_url_is_file(const char *prefix);

/**
 * @p path as a URL path, malloc'd (NULL: out of memory): percent-encoded
 * (RFC 3986: the unreserved characters and '/' kept, every other byte
 * %XX) when @p encode, else as it is (file:// URLs: fsspec's local file
 * system does not decode them).
 */
char *refs_url_path(const char *path, bool encode);

/**
 * Whether @p path, written as refs_url_path writes it, can follow a
 * "{{u}}" template: fsspec fills templates with str.format, so a '{' or
 * '}' left in the URL would be taken for another template.
 */
bool refs_url_templatable(const char *path, bool encode);

#endif /* ARRAYFS_TOOLS_REFS_URL_H */
