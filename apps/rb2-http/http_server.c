/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* HTTP/1.1 for the apps' server loop (http_server.h). */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <http_parser.h>
#include <rte_common.h>

#include "http_server.h"

#define URL_MAX 2048
#define CHUNK_MAX (256u << 10)   /* an answer goes out in parts of this at most */

/* A connection's state: the parser, the request being read, the answer
 * being written. */
struct http_conn {
	http_parser parser;
	int started;
	uint32_t parsed;         /* bytes of the current request fed already */
	uint32_t header_bytes;
	char url[URL_MAX + 1];
	uint32_t url_len;
	int url_too_long;
	int done;                /* the request is complete */
	int too_large;           /* its body is over HTTP_SERVER_BODY_MAX */
	uint64_t body_in;
	/* the answer, once decided */
	int status;              /* 0: none yet */
	int close_after;
	int head;                /* HEAD: headers only */
	struct http_file *file;
	size_t body_off;         /* how much of the body has gone out */
	int headers_out;
	struct http_serve_ctx *ctx;
};

static int
on_url(http_parser *p, const char *at, size_t len)
{
	struct http_conn *c = p->data;

	c->header_bytes += (uint32_t)len;
	if (c->url_len + len > URL_MAX) {
		c->url_too_long = 1;
		return 0;
	}
	memcpy(c->url + c->url_len, at, len);
	c->url_len += (uint32_t)len;
	return 0;
}

static int
on_header(http_parser *p, const char *at __rte_unused, size_t len)
{
	struct http_conn *c = p->data;

	c->header_bytes += (uint32_t)len;
	return c->header_bytes > HTTP_SERVER_HEADER_MAX;   /* non-zero: stop */
}

/* A body over the limit stops the parser: 413, and the connection closes. */
static int
on_headers_complete(http_parser *p)
{
	struct http_conn *c = p->data;

	if ((p->flags & F_CONTENTLENGTH) && p->content_length > HTTP_SERVER_BODY_MAX) {
		c->too_large = 1;
		http_parser_pause(p, 1);
	}
	return 0;
}

static int
on_body(http_parser *p, const char *at __rte_unused, size_t len)
{
	struct http_conn *c = p->data;

	c->body_in += len;
	if (c->body_in > HTTP_SERVER_BODY_MAX) {     /* chunked, without a length */
		c->too_large = 1;
		http_parser_pause(p, 1);
	}
	return 0;
}

static int
on_complete(http_parser *p)
{
	struct http_conn *c = p->data;

	c->done = 1;
	http_parser_pause(p, 1);        /* one request per exec() */
	return 0;
}

static const http_parser_settings settings = {
	.on_url = on_url,
	.on_header_field = on_header,
	.on_header_value = on_header,
	.on_headers_complete = on_headers_complete,
	.on_body = on_body,
	.on_message_complete = on_complete,
};

static int
hexval(char h)
{
	return h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 :
	       h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
}

/* Percent-decode the URL's path into @p out. @return 0, or -1 (malformed,
 * or a NUL). */
static int
decode_path(const char *url, uint32_t len, char *out, size_t cap)
{
	struct http_parser_url u;
	const char *p;
	size_t n = 0, plen;

	http_parser_url_init(&u);
	if (http_parser_parse_url(url, len, 0, &u) != 0 || !(u.field_set & (1 << UF_PATH)))
		return -1;
	p = url + u.field_data[UF_PATH].off;
	plen = u.field_data[UF_PATH].len;
	for (size_t i = 0; i < plen; i++) {
		char ch = p[i];

		if (ch == '%') {
			int hi = i + 2 < plen ? hexval(p[i + 1]) : -1;
			int lo = i + 2 < plen ? hexval(p[i + 2]) : -1;

			if (hi < 0 || lo < 0)
				return -1;
			ch = (char)(hi << 4 | lo);
			i += 2;
		}
		if (ch == '\0' || n + 1 >= cap)
			return -1;
		out[n++] = ch;
	}
	out[n] = '\0';
	return out[0] == '/' ? 0 : -1;
}

static const char *
reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 413: return "Content Too Large";
	default: return "Error";
	}
}

/* Decide the answer to the request just parsed. */
static void
decide(struct http_conn *c)
{
	struct http_serve_ctx *x = c->ctx;
	char path[URL_MAX + 1];
	int ret;

	c->close_after = !http_should_keep_alive(&c->parser);
	c->head = c->parser.method == HTTP_HEAD;
	if (c->url_too_long || decode_path(c->url, c->url_len, path, sizeof(path)) < 0) {
		c->status = 400;
		c->close_after = 1;
		return;
	}
	if (c->parser.method != HTTP_GET && c->parser.method != HTTP_HEAD) {
		c->status = 405;
		return;
	}
	ret = http_file_get(x->files, path, &c->file);
	c->status = ret == 0 ? 200 : ret == -EACCES ? 403 : ret == -EFBIG ? 413 : 404;
	(void)x;
}

static void
count(struct http_conn *c)
{
	struct http_serve_stats *st = &c->ctx->st;

	switch (c->status) {
	case 200: st->s200++; break;
	case 400: st->s400++; break;
	case 403: st->s403++; break;
	case 404: st->s404++; break;
	case 405: st->s405++; break;
	default: st->s413++; break;
	}
}

/* The Date header's value, made once a second. */
static const char *
http_date(void)
{
	static __thread char buf[40];
	static __thread time_t made;
	time_t now = time(NULL);

	if (now != made) {
		struct tm tm;

		gmtime_r(&now, &tm);
		strftime(buf, sizeof(buf), "%a, %d %b %Y %H:%M:%S GMT", &tm);
		made = now;
	}
	return buf;
}

/*
 * Write what is left of the answer (headers first), as much as fits.
 * @return 0 (all of it out), -EAGAIN (not all), -EPIPE (out, and the
 *   connection closes).
 */
static int
send_answer(struct http_conn *c, const struct app_out *out)
{
	size_t body = c->status == 200 && !c->head ? c->file->len : 0;

	if (!c->headers_out) {
		char h[512];
		size_t room, first;
		int n;
		char *r;

		if (c->status == 200)
			n = snprintf(h, sizeof(h), "HTTP/1.1 200 OK\r\nServer: rb2-http\r\nDate: %s\r\n"
				     "Content-Type: %s\r\nContent-Length: %zu\r\n%s\r\n", http_date(),
				     c->file->type, c->file->len,
				     c->close_after ? "Connection: close\r\n" : "");
		else
			n = snprintf(h, sizeof(h), "HTTP/1.1 %d %s\r\nServer: rb2-http\r\nDate: %s\r\n"
				     "Content-Type: text/plain\r\nContent-Length: %zu\r\n%s%s\r\n%s%s",
				     c->status, reason(c->status), http_date(),
				     strlen(reason(c->status)) + 1,
				     c->status == 405 ? "Allow: GET, HEAD\r\n" : "",
				     c->close_after ? "Connection: close\r\n" : "",
				     c->head ? "" : reason(c->status), c->head ? "" : "\n");
		/* The headers and as much of the body as one part takes. */
		room = RTE_MIN((size_t)RTE_MIN(out->max, CHUNK_MAX), (size_t)n + body);
		r = out->reserve(out->ctx, (uint32_t)room);
		if (r == NULL)
			return -EAGAIN;
		memcpy(r, h, (size_t)n);
		first = room - (size_t)n;
		if (first > 0)
			memcpy(r + n, c->file->data, first);
		out->commit(out->ctx, (uint32_t)room);
		c->headers_out = 1;
		c->body_off = first;
	}
	while (c->body_off < body) {
		uint32_t part = (uint32_t)RTE_MIN(body - c->body_off,
						  (size_t)RTE_MIN(out->max, CHUNK_MAX));
		char *r = out->reserve(out->ctx, part);

		if (r == NULL)
			return -EAGAIN;
		memcpy(r, c->file->data + c->body_off, part);
		out->commit(out->ctx, part);
		c->body_off += part;
		if (c->body_off < body && out->max >= CHUNK_MAX)
			return -EAGAIN;     /* TCP: a part at a time, then send */
	}
	c->ctx->st.body_bytes += body;
	http_file_put(c->file);
	c->file = NULL;
	c->status = 0;
	c->headers_out = 0;
	return c->close_after ? -EPIPE : 0;
}

/*
 * Ready for the connection's next request. After the first, the parser is
 * already at the start of a message: on_complete() paused it there, and a
 * request that did not complete closes the connection instead. So it is
 * only un-paused, as http-parser is meant to run on a keep-alive
 * connection. http_parser_init() for every request cost the server 7% of
 * its samples (rb2-http bench, perf): Debian's build stores 16 bytes, then
 * one, then loads 4 across both, which no single store can forward.
 */
static void
next_request(struct http_conn *c)
{
	if (c->parser.data == c && HTTP_PARSER_ERRNO(&c->parser) == HPE_PAUSED) {
		http_parser_pause(&c->parser, 0);
	} else {
		http_parser_init(&c->parser, HTTP_REQUEST);
		c->parser.data = c;
	}
	c->parsed = 0;
	c->header_bytes = 0;
	c->url_len = 0;
	c->url_too_long = 0;
	c->done = 0;
	c->too_large = 0;
	c->body_in = 0;
}

static int
http_exec(void *ctx, void *conn, const uint8_t *in, uint32_t len, const struct app_out *out)
{
	struct http_conn *c = conn;
	size_t n;
	int ret;

	if (!c->started) {
		c->ctx = ctx;
		c->started = 1;
		next_request(c);
	}
	if (c->status == 0) {                      /* no answer decided yet */
		enum http_errno err;

		if (len == c->parsed)                  /* (0 bytes would mean EOF) */
			return 0;
		n = http_parser_execute(&c->parser, &settings, (const char *)in + c->parsed,
					len - c->parsed);
		c->parsed += (uint32_t)n;
		err = HTTP_PARSER_ERRNO(&c->parser);
		if (c->too_large) {
			c->status = 413;               /* its body is not read */
			c->close_after = 1;
		} else if (err != HPE_OK && err != HPE_PAUSED) {
			/* Malformed, a smuggling shape, headers too long. */
			c->status = 400;
			c->close_after = 1;
		} else if (c->done) {
			decide(c);
		} else if (c->header_bytes > HTTP_SERVER_HEADER_MAX) {
			c->status = 400;
			c->close_after = 1;
		} else {
			return 0;                      /* the request is not all here */
		}
		count(c);
	}
	/* The answer (again, if it found no room before). */
	ret = send_answer(c, out);
	if (ret == -EAGAIN && !c->headers_out)
		return -EAGAIN;                    /* nothing out: call again */
	n = c->parsed;
	if (ret == -EPIPE)
		return -EPIPE;
	next_request(c);
	return (int)n;                             /* -EAGAIN: resume() goes on */
}

static int
http_resume(void *ctx __rte_unused, void *conn, const struct app_out *out)
{
	struct http_conn *c = conn;

	/* Only an answer already begun: one that found no room for its
	 * headers is exec()'s, which runs again on the same request and
	 * consumes it once the answer is out. */
	if (c->status == 0 || !c->headers_out)
		return 0;
	return send_answer(c, out);
}

static void
http_fini(void *ctx __rte_unused, void *conn)
{
	struct http_conn *c = conn;

	http_file_put(c->file);
}

const struct app_proto http_proto = {
	.name = "rb2-http",
	.conn_size = sizeof(struct http_conn),
	.in_max = HTTP_SERVER_HEADER_MAX + HTTP_SERVER_BODY_MAX + 4096,
	.exec = http_exec,
	.resume = http_resume,
	.fini = http_fini,
};
