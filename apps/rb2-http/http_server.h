/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef HTTP_SERVER_H
#define HTTP_SERVER_H

/*
 * HTTP/1.1 for the apps' server loop (app_server.h): GET and HEAD of the
 * files under a directory, keep-alive and pipelining, requests parsed by
 * http-parser (Debian's libhttp-parser). Answers: 200; 400 (malformed, and
 * the shapes of request smuggling http-parser refuses: two Content-Lengths,
 * Content-Length with Transfer-Encoding; and headers over
 * HTTP_SERVER_HEADER_MAX, as nginx answers them), 403 (a path that would
 * lead outside the directory), 404, 405 (with Allow), 413 (a body over
 * the limit, a file over --max-file). After a 400 or 413 the connection is
 * closed: what follows cannot be trusted to be a request.
 */

#include <stdint.h>

#include "app_server.h"
#include "http_files.h"

#define HTTP_SERVER_HEADER_MAX 8192u     /* request line and headers */
#define HTTP_SERVER_BODY_MAX 65536u      /* a request's body (GET/HEAD ignore it) */

/* What an lcore's server counts, by answer. */
struct http_serve_stats {
	uint64_t s200, s400, s403, s404, s405, s413;
	uint64_t body_bytes;
};

/* An lcore's server context. */
struct http_serve_ctx {
	struct http_files *files;
	struct http_serve_stats st;
};

extern const struct app_proto http_proto;

#endif /* HTTP_SERVER_H */
