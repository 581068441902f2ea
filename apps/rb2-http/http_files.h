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
 *
 * Generated bodies, for benchmarks without a tree: with gen_max > 0,
 * GET /gen/N answers N bytes (0 <= N <= gen_max, decimal) of
 * http_gen_fill()'s text, which a client can check without the server's
 * files.
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

/* @return the tree rooted at @p dir (NULL: no tree, generated bodies only),
 *   or NULL (printed why). Files over @p max_file bytes, and generated
 *   bodies over @p gen_max, are refused (413 is the client's answer);
 *   @p gen_max 0: no generated bodies (/gen/ is a path like any). */
struct http_files *http_files_open(const char *dir, size_t max_file, size_t gen_max);

/* The path prefix of generated bodies. */
#define HTTP_GEN_PREFIX "/gen/"

/* A generated body of @p len bytes: lines of letters, each body its own. */
static inline void
http_gen_fill(uint8_t *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = i % 64 == 63 ? '\n' : (uint8_t)('a' + (i * 7 + len) % 26);
}
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
