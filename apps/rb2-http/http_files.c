/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* The files rb2-http serves (http_files.h). */

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "app_hist.h"
#include "http_files.h"

#define CACHE_SLOTS 256          /* per lcore: a direct-mapped table */
#define CACHE_MAX_FILE (1u << 20)
#define CACHE_TTL_NS 1000000000ull

struct http_files {
	int dirfd;               /* -1: no tree */
	size_t max_file;
	size_t gen_max;          /* generated bodies up to this; 0: none */
	struct http_file *cache[CACHE_SLOTS];
};

struct http_files *
http_files_open(const char *dir, size_t max_file, size_t gen_max)
{
	struct http_files *f = calloc(1, sizeof(*f));

	if (f == NULL)
		return NULL;
	f->gen_max = gen_max;
	f->dirfd = dir != NULL ? open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC) : -1;
	if (f->dirfd < 0 && dir != NULL) {
		fprintf(stderr, "rb2-http: --root %s: %s\n", dir, strerror(errno));
		free(f);
		return NULL;
	}
	f->max_file = max_file;
	return f;
}

void
http_files_close(struct http_files *f)
{
	if (f == NULL)
		return;
	for (unsigned int i = 0; i < CACHE_SLOTS; i++)
		if (f->cache[i] != NULL)
			http_file_put(f->cache[i]);
	if (f->dirfd >= 0)
		close(f->dirfd);
	free(f);
}

void
http_file_put(struct http_file *file)
{
	if (file != NULL && --file->refs == 0) {
		free(file->data);
		free(file);
	}
}

static const char *
type_of(const char *path)
{
	static const struct { const char *ext, *type; } types[] = {
		{".html", "text/html"}, {".htm", "text/html"}, {".txt", "text/plain"},
		{".css", "text/css"}, {".js", "application/javascript"},
		{".json", "application/json"}, {".png", "image/png"}, {".jpg", "image/jpeg"},
		{".svg", "image/svg+xml"},
	};
	const char *dot = strrchr(path, '.');

	for (unsigned int i = 0; dot != NULL && i < sizeof(types) / sizeof(types[0]); i++)
		if (strcmp(dot, types[i].ext) == 0)
			return types[i].type;
	return "application/octet-stream";
}

static uint32_t
path_hash(const char *p)
{
	uint32_t h = 2166136261u;

	while (*p)
		h = (h ^ (uint8_t)*p++) * 16777619u;
	return h;
}

/* A generated body, if @p path names one: 1 (made, or -errno in @p ret),
 * 0 (not one). */
static int
generate(struct http_files *f, const char *path, struct http_file **out, int *ret)
{
	const char *n = path + strlen(HTTP_GEN_PREFIX);
	struct http_file *file = NULL;
	char *end;
	unsigned long long len;

	if (f->gen_max == 0 || strncmp(path, HTTP_GEN_PREFIX, strlen(HTTP_GEN_PREFIX)) != 0)
		return 0;
	errno = 0;
	len = strtoull(n, &end, 10);
	*ret = 0;
	if (*n < '0' || *n > '9' || *end != '\0' || errno != 0 || strlen(n) > 19)
		*ret = -ENOENT;
	else if (len > f->gen_max)
		*ret = -EFBIG;
	else if ((file = calloc(1, sizeof(*file) + strlen(path) + 1)) == NULL ||
		 (file->data = malloc(len + 1)) == NULL) {
		free(file);
		*ret = -ENOMEM;
	}
	if (*ret < 0)
		return 1;
	http_gen_fill(file->data, len);
	file->len = len;
	file->type = "text/plain";
	file->refs = 1;
	file->loaded_ns = app_now_ns();
	strcpy(file->path, path);
	*out = file;
	return 1;
}

/* Read @p path under the tree (or generate it). */
static int
load(struct http_files *f, const char *path, struct http_file **out)
{
	struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	char rel[4096];
	struct http_file *file;
	struct stat st;
	size_t got = 0;
	int fd, ret;

	if (generate(f, path, out, &ret))
		return ret;
	if (f->dirfd < 0)
		return -ENOENT;
	/* Relative to the tree; "/" and ".../" mean an index. */
	snprintf(rel, sizeof(rel), "%s%s", path[1] ? path + 1 : ".",
		 path[strlen(path) - 1] == '/' ? (path[1] ? "index.html" : "/index.html") : "");
	fd = (int)syscall(SYS_openat2, f->dirfd, rel, &how, sizeof(how));
	if (fd < 0)
		return errno == EXDEV ? -EACCES : errno == ENOMEM ? -ENOMEM : -ENOENT;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -ENOENT;
	}
	if ((size_t)st.st_size > f->max_file) {
		close(fd);
		return -EFBIG;
	}
	file = calloc(1, sizeof(*file) + strlen(path) + 1);
	if (file == NULL || (file->data = malloc((size_t)st.st_size + 1)) == NULL) {
		free(file);
		close(fd);
		return -ENOMEM;
	}
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, file->data + got, (size_t)st.st_size - got);

		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	file->len = got;
	file->type = type_of(rel);
	file->refs = 1;
	file->loaded_ns = app_now_ns();
	strcpy(file->path, path);
	*out = file;
	return 0;
}

int
http_file_get(struct http_files *f, const char *path, struct http_file **file)
{
	uint32_t slot = path_hash(path) % CACHE_SLOTS;
	struct http_file *c = f->cache[slot];
	int ret;

	if (c != NULL && strcmp(c->path, path) == 0 &&
	    app_now_ns() - c->loaded_ns < CACHE_TTL_NS) {
		c->refs++;
		*file = c;
		return 0;
	}
	ret = load(f, path, file);
	if (ret < 0)
		return ret;
	if ((*file)->len <= CACHE_MAX_FILE) {
		http_file_put(f->cache[slot]);
		f->cache[slot] = *file;
		(*file)->refs++;
	}
	return 0;
}
