/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* rb2-http's load generator (http_client.h). */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <http_parser.h>
#include <rte_common.h>

#include "app_net.h"
#include "http_client.h"

struct hconn {
	int cd, fd;
	struct rb2_l5 *l5_tx, *l5_rx;   /* L5 */
	http_parser parser;
	const struct http_target *t;
	unsigned int next;         /* the next target's index */
	size_t body_off;
	int body_bad;
	int done;                  /* the answer is complete */
	uint64_t t0;
	struct http_client *c;
};

struct http_client {
	struct rb2_conn_ep *ep;
	int tcp, l5;
	struct hconn *conns;
	unsigned int n_conns;
	uint32_t *of_slot;         /* rb2: 1 + the index of a descriptor's slot's
				    * connection (cd & 0xffff), 0: none */
	const struct http_target *targets;
	unsigned int n_targets;
	struct http_result *res;
	uint8_t buf[APP_L5_MAX_MSG];   /* TCP: a recv; L5: a message */
};

static void
failure(struct http_client *c, const char *what, const struct http_target *t)
{
	if (c->res->first_failure[0] == '\0')
		snprintf(c->res->first_failure, sizeof(c->res->first_failure), "%s: %s", t->path,
			 what);
}

static int
on_body(http_parser *p, const char *at, size_t len)
{
	struct hconn *k = p->data;

	if (k->t->body != NULL && (k->body_off + len > k->t->len ||
				   memcmp(k->t->body + k->body_off, at, len) != 0))
		k->body_bad = 1;
	k->body_off += len;
	return 0;
}

static int
on_complete(http_parser *p)
{
	struct hconn *k = p->data;

	k->done = 1;
	http_parser_pause(p, 1);
	return 0;
}

static const http_parser_settings settings = {
	.on_body = on_body,
	.on_message_complete = on_complete,
};

static struct http_client *
client_new(unsigned int conns, const struct http_target *targets, unsigned int n_targets,
	   unsigned int idx)
{
	struct http_client *c = calloc(1, sizeof(*c));

	if (c == NULL || (c->conns = calloc(conns, sizeof(*c->conns))) == NULL) {
		free(c);
		return NULL;
	}
	c->n_conns = conns;
	c->targets = targets;
	c->n_targets = n_targets;
	for (unsigned int i = 0; i < conns; i++) {
		c->conns[i].cd = c->conns[i].fd = -1;
		c->conns[i].next = (idx * conns + i) % n_targets;
		c->conns[i].c = c;
	}
	return c;
}

struct http_client *
http_client_rb2(struct rb2_conn_ep *ep, int via_service, uint32_t host, uint16_t port,
		unsigned int conns, const struct http_target *targets, unsigned int n_targets,
		unsigned int idx)
{
	struct http_client *c = client_new(conns, targets, n_targets, idx);
	int cds[conns];

	if (c == NULL)
		return NULL;
	c->ep = ep;
	if (app_conns_open(ep, via_service, host, port, 1, 0, cds, conns) < 0) {
		http_client_free(c);
		return NULL;
	}
	c->of_slot = calloc(RB2_CONN_MAX + 1, sizeof(*c->of_slot));
	if (c->of_slot == NULL) {
		http_client_free(c);
		return NULL;
	}
	for (unsigned int i = 0; i < conns; i++) {
		c->conns[i].cd = cds[i];
		c->of_slot[cds[i] & 0xffff] = i + 1;
	}
	return c;
}

struct http_client *
http_client_tcp(const char *addr, unsigned int conns, const struct http_target *targets,
		unsigned int n_targets, unsigned int idx)
{
	struct http_client *c = client_new(conns, targets, n_targets, idx);

	if (c == NULL)
		return NULL;
	c->tcp = 1;
	for (unsigned int i = 0; i < conns; i++)
		if ((c->conns[i].fd = app_tcp_connect(addr)) < 0) {
			http_client_free(c);
			return NULL;
		}
	return c;
}

struct http_client *
http_client_l5(const struct app_l5_conn *l5, unsigned int conns,
	       const struct http_target *targets, unsigned int n_targets, unsigned int idx)
{
	struct http_client *c = client_new(conns, targets, n_targets, idx);

	if (c == NULL)
		return NULL;
	c->l5 = 1;
	for (unsigned int i = 0; i < conns; i++) {
		c->conns[i].l5_tx = l5[i].ring[0];
		c->conns[i].l5_rx = l5[i].ring[1];
	}
	return c;
}

void
http_client_free(struct http_client *c)
{
	if (c == NULL)
		return;
	for (unsigned int i = 0; i < c->n_conns; i++) {
		if (c->conns[i].cd >= 0)
			rb2_conn_close(c->ep, c->conns[i].cd);
		if (c->conns[i].fd >= 0)
			close(c->conns[i].fd);
	}
	free(c->conns);
	free(c->of_slot);
	free(c);
}

/* Send @p k's next GET. @return 0, 1 (not now: no room), or -errno. */
static int
ask(struct http_client *c, struct hconn *k)
{
	const struct http_target *t = &c->targets[k->next];
	char req[400];
	int n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: rb2-http\r\n\r\n", t->path);

	if (c->tcp) {
		if (send(k->fd, req, (size_t)n, MSG_NOSIGNAL) != n)
			return -errno;
	} else if (c->l5) {
		int ret = rb2_l5_room(k->l5_tx, (uint32_t)n, 1);

		if (ret == -ENOBUFS)
			return 1;
		if (ret > 0)
			ret = rb2_l5_send(k->l5_tx, req, (uint32_t)n);   /* copied in */
		if (ret < 0)
			return ret;
	} else {
		int ret = rb2_conn_send(c->ep, k->cd, req, (uint32_t)n);

		if (ret == -EAGAIN || ret == -ENOBUFS)
			return 1;
		if (ret < 0)
			return ret;
	}
	k->t = t;
	k->next = (k->next + 1) % c->n_targets;
	/* As the server's next_request(): a parser paused at the end of the
	 * last answer is at the start of the next one already. */
	if (k->parser.data == k && HTTP_PARSER_ERRNO(&k->parser) == HPE_PAUSED) {
		http_parser_pause(&k->parser, 0);
	} else {
		http_parser_init(&k->parser, HTTP_RESPONSE);
		k->parser.data = k;
	}
	k->body_off = 0;
	k->body_bad = 0;
	k->done = 0;
	k->t0 = app_now_ns();
	return 0;
}

/* Feed answer bytes to @p k. @return 1 (its answer is complete), 0, or
 *   -EPROTO (not HTTP). */
static int
feed(struct http_client *c, struct hconn *k, const void *data, size_t len)
{
	size_t n;

	if (k->t == NULL || k->done)
		return -EPROTO;                    /* bytes nobody asked for */
	n = http_parser_execute(&k->parser, &settings, data, len);
	if (HTTP_PARSER_ERRNO(&k->parser) != HPE_OK && HTTP_PARSER_ERRNO(&k->parser) != HPE_PAUSED)
		return -EPROTO;
	if (!k->done)
		return 0;
	if (n != len)
		return -EPROTO;                    /* more than one answer */
	app_hist_add(&c->res->lat, app_now_ns() - k->t0);
	if (k->parser.status_code != 200) {
		c->res->bad_status++;
		failure(c, "a status other than 200", k->t);
	} else if (k->body_bad || (k->t->body != NULL && k->body_off != k->t->len)) {
		c->res->bad_body++;
		failure(c, "a body not the file's", k->t);
	} else {
		c->res->ok++;
	}
	k->t = NULL;
	return 1;
}

volatile sig_atomic_t http_client_stop;

int
http_client_run(struct http_client *c, uint64_t requests, int quiet, struct http_result *res)
{
	uint64_t asked = 0, answered = 0, last = app_now_ns(), passes = 0;
	int ret = 0;

	memset(res, 0, sizeof(*res));
	c->res = res;
	res->t_start_ns = app_now_ns();
	while (answered < requests && !http_client_stop) {
		for (unsigned int i = 0; i < c->n_conns && asked < requests; i++) {
			struct hconn *k = &c->conns[i];

			if (k->t != NULL)
				continue;
			ret = ask(c, k);
			if (ret < 0)
				goto failed;
			asked += ret == 0;
		}
		if (c->tcp) {
			for (unsigned int i = 0; i < c->n_conns; i++) {
				struct hconn *k = &c->conns[i];
				ssize_t r;

				if (k->t == NULL)
					continue;
				r = recv(k->fd, c->buf, sizeof(c->buf), MSG_DONTWAIT);
				if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
					ret = r == 0 ? -ECONNRESET : -errno;
					goto failed;
				}
				if (r > 0 && (ret = feed(c, k, c->buf, (size_t)r)) < 0)
					goto failed;
				answered += ret == 1;
			}
		} else if (c->l5) {
			for (unsigned int i = 0; i < c->n_conns; i++) {
				struct hconn *k = &c->conns[i];
				int len;

				/* Each message copied out, as L5 does. (Bytes
				 * nobody asked for fail feed().) */
				while ((len = rb2_l5_recv(k->l5_rx, c->buf, sizeof(c->buf))) != -EAGAIN) {
					if (len < 0 || (ret = feed(c, k, c->buf, (size_t)len)) < 0) {
						ret = len < 0 ? len : ret;
						goto failed;
					}
					answered += ret == 1;
				}
			}
		} else {
			int cds[64], n;

			rb2_conn_flush(c->ep);
			n = rb2_conn_ep_ready(c->ep, cds, RTE_DIM(cds));
			if (n < 0) {
				ret = n;
				goto failed;
			}
			for (int j = 0; j < n; j++) {
				uint32_t x = c->of_slot[cds[j] & 0xffff];
				struct hconn *k = x != 0 && c->conns[x - 1].cd == cds[j] ?
						  &c->conns[x - 1] : NULL;
				const void *p;
				int len;

				while (k != NULL && (len = rb2_conn_recv_zc(c->ep, k->cd, &p)) > 0) {
					ret = feed(c, k, p, (size_t)len);
					rb2_conn_release(c->ep, k->cd, 1);
					if (ret < 0)
						goto failed;
					answered += ret == 1;
				}
				if (k != NULL && len != -EAGAIN) {
					ret = len == 0 ? -ECONNRESET : len;
					goto failed;
				}
			}
		}
		/* The clock every 256 passes, not answers: a client whose
		 * answers come slowly reports too. */
		if (!quiet && (++passes & 0xff) == 0 && app_now_ns() - last > 1000000000ull) {
			last = app_now_ns();
			fprintf(stderr, "rb2-http: %.0f%% (%" PRIu64 " of %" PRIu64 ")\n",
				100.0 * (double)answered / (double)requests, answered, requests);
		}
	}
	res->t_end_ns = app_now_ns();
	return 0;
failed:
	res->t_end_ns = app_now_ns();
	if (res->first_failure[0] == '\0')
		snprintf(res->first_failure, sizeof(res->first_failure), "%s after %" PRIu64
			 " answers", ret == -EPROTO ? "an answer that is not HTTP" : strerror(-ret),
			 answered);
	return ret;
}

int
http_targets_load(const char *dir, struct http_target **out)
{
	DIR *d = opendir(dir);
	struct http_target *t = NULL;
	struct dirent *e;
	int n = 0;

	if (d == NULL) {
		fprintf(stderr, "rb2-http: --files %s: %s\n", dir, strerror(errno));
		return -1;
	}
	while ((e = readdir(d)) != NULL) {
		char full[4096];
		struct stat st;
		struct http_target *nt;
		int fd;

		snprintf(full, sizeof(full), "%s/%s", dir, e->d_name);
		if (e->d_name[0] == '.' || stat(full, &st) < 0 || !S_ISREG(st.st_mode) ||
		    strlen(e->d_name) > 200)
			continue;
		nt = realloc(t, (size_t)(n + 1) * sizeof(*t));
		if (nt == NULL)
			break;
		t = nt;
		t[n].path[0] = '/';
		memcpy(t[n].path + 1, e->d_name, strlen(e->d_name) + 1);   /* <= 200 */
		t[n].len = (size_t)st.st_size;
		t[n].body = malloc(t[n].len + 1);
		fd = open(full, O_RDONLY | O_CLOEXEC);
		if (t[n].body == NULL || fd < 0 ||
		    read(fd, t[n].body, t[n].len) != (ssize_t)t[n].len) {
			fprintf(stderr, "rb2-http: reading %s: %s\n", full, strerror(errno));
			if (fd >= 0)
				close(fd);
			closedir(d);
			return -1;
		}
		close(fd);
		n++;
	}
	closedir(d);
	if (n == 0) {
		fprintf(stderr, "rb2-http: --files %s: no regular files in it\n", dir);
		return -1;
	}
	*out = t;
	return n;
}

void
http_targets_free(struct http_target *t, int n)
{
	for (int i = 0; i < n; i++)
		free(t[i].body);
	free(t);
}
