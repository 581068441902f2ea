/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef HTTP_FILES_H
#define HTTP_FILES_H

/*
 * The files rb2-http serves: a directory, opened once, under which every
 * path is resolved by the kernel with openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_MAGICLINKS), so neither "..", nor an absolute path, nor a
 * symbolic link can lead outside it. Contents are cached per lcore (no
 * locks) for a second, then read again.
 */

#include <stddef.h>
#include <stdint.h>

struct http_file {
	uint8_t *data;
	size_t len;
	const char *type;        /* Content-Type */
	uint32_t refs;           /* the cache's, and each answer's in flight */
	uint64_t loaded_ns;
	char path[];             /* as asked for (decoded), the cache's key */
};

struct http_files;

/* @return the tree rooted at @p dir, or NULL (printed why). Files over
 *   @p max_file bytes are refused (413 is the client's answer). */
struct http_files *http_files_open(const char *dir, size_t max_file);
void http_files_close(struct http_files *f);

/*
 * The file at @p path (decoded, starting with '/'; a path ending in '/'
 * means its index.html), with a reference the caller drops with
 * http_file_put().
 * @return 0, -ENOENT (none, or not a regular file), -EACCES (it would
 *   lead outside the tree), -EFBIG (over max_file), -ENOMEM.
 */
int http_file_get(struct http_files *f, const char *path, struct http_file **file);
void http_file_put(struct http_file *file);

#endif /* HTTP_FILES_H */
