/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* One lcore's share of rb2-kv's server (kv_server.h). */

#define _GNU_SOURCE             /* accept4 */

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_malloc.h>

#include "kv_bin.h"
#include "kv_proto.h"
#include "kv_server.h"
#include "kv_text.h"

/* The most a TCP client's input holds: the largest request either
 * protocol has, a text "set" of a full value with its command line. */
#define TCP_IN_MAX (KV_VALUE_MAX + 2 * KV_TEXT_LINE_MAX + 64)

enum tcp_proto { PROTO_UNKNOWN, PROTO_BIN, PROTO_TEXT };

struct tcp_conn {
	int fd;
	enum tcp_proto proto;
	int closing;                 /* send what is left, then close */
	uint32_t events;             /* what epoll watches now */
	uint8_t *in;
	uint32_t in_len, in_cap;
	uint8_t *out;
	uint32_t out_head, out_len, out_cap;   /* [out_head, out_len) unsent */
	uint32_t reserved;
};

/* An rb2 connection's request that waits for room for its answer: a view
 * into the connection's receive buffer, released once answered. */
struct held {
	const uint8_t *req;
	uint32_t len;
	int cd;                      /* -1: none */
};

struct kv_server {
	struct kv_store *store;
	struct rb2_conn_ep *ep;
	uint16_t port;
	int ep_err;
	struct held *held;           /* by slot (cd & 0xffff) */
	int *waiting;                /* descriptors with a held request */
	uint32_t n_waiting, max_conns;
	int lfd, efd;
	struct tcp_conn *tcp[KV_SERVER_TCP_MAX];
	unsigned int n_tcp;
	unsigned int passes;
	struct kv_server_stats st;
};

/* ---- rb2 connections ---------------------------------------------- */

struct rb2_out_ctx {
	struct rb2_conn_ep *ep;
	int cd;
};

static void *
rb2_reserve(void *ctx, uint32_t len)
{
	struct rb2_out_ctx *c = ctx;
	void *buf;

	return rb2_conn_reserve(c->ep, c->cd, len, &buf) == 0 ? buf : NULL;
}

static void
rb2_commit(void *ctx, uint32_t len)
{
	struct rb2_out_ctx *c = ctx;

	rb2_conn_commit(c->ep, c->cd, len);
}

/* Execute @p cd's requests until it has none or its answer must wait.
 * @return the requests executed. */
static int
serve_conn(struct kv_server *sv, int cd)
{
	struct rb2_out_ctx ctx = { sv->ep, cd };
	const struct kv_out out = { rb2_reserve, rb2_commit, &ctx };
	struct held *h = &sv->held[cd & 0xffff];
	int n = 0;

	for (;;) {
		const void *req;
		int len, ret;

		if (h->cd == cd) {          /* the held one first */
			req = h->req;
			len = (int)h->len;
		} else {
			len = rb2_conn_recv_zc(sv->ep, cd, &req);
		}
		if (len == -EAGAIN)
			return n;
		if (len <= 0) {             /* end of stream, or it failed */
			if (len < 0)
				sv->st.conns_failed++;
			sv->st.conns_closed++;
			h->cd = -1;
			rb2_conn_close(sv->ep, cd);
			return n;
		}
		ret = kv_bin_exec(sv->store, req, (uint32_t)len, &out);
		if (ret == -EAGAIN) {
			if (h->cd != cd) {
				h->cd = cd;
				h->req = req;
				h->len = (uint32_t)len;
				sv->waiting[sv->n_waiting++] = cd;
				sv->st.waits++;
			}
			if (rb2_conn_status(sv->ep, cd) < 0) {   /* it will never have room */
				h->cd = -1;
				sv->st.conns_failed++;
				sv->st.conns_closed++;
				rb2_conn_close(sv->ep, cd);
			}
			return n;
		}
		if (ret < 0 || ((const struct kv_hdr *)req)->op > KV_OP_DEL ||
		    ((const struct kv_hdr *)req)->op < KV_OP_GET)
			sv->st.bad_requests++;
		h->cd = -1;
		rb2_conn_release(sv->ep, cd, 1);
		sv->st.requests++;
		n++;
	}
}

static int
poll_rb2(struct kv_server *sv)
{
	int cds[64], n, done = 0, cd;
	uint32_t w, keep = 0;

	/* Requests that waited for room: the client may have read since. */
	for (w = 0; w < sv->n_waiting; w++) {
		cd = sv->waiting[w];
		if (sv->held[cd & 0xffff].cd != cd)
			continue;
		done += serve_conn(sv, cd);
		if (sv->held[cd & 0xffff].cd == cd)
			sv->waiting[keep++] = cd;
	}
	sv->n_waiting = keep;
	n = rb2_conn_ep_ready(sv->ep, cds, RTE_DIM(cds));
	if (n < 0) {
		sv->ep_err = n;
		return n;
	}
	for (int i = 0; i < n; i++)
		if (sv->held[cds[i] & 0xffff].cd != cds[i])
			done += serve_conn(sv, cds[i]);
	/* New connections: an accept with none pending polls the endpoint
	 * again, so a busy pass looks for them one time in 64. */
	if (n == 0 || (sv->passes & 63) == 0) {
		while ((cd = rb2_conn_accept(sv->ep, sv->port)) >= 0) {
			sv->held[cd & 0xffff].cd = -1;
			sv->st.conns_accepted++;
		}
	}
	rb2_conn_flush(sv->ep);
	return done;
}

/* ---- TCP ----------------------------------------------------------- */

static void *
tcp_reserve(void *ctx, uint32_t len)
{
	struct tcp_conn *t = ctx;
	uint32_t need = t->out_len + len;

	if (t->out_head > 0 && t->out_head == t->out_len) {
		t->out_head = t->out_len = 0;     /* all sent: start over */
		need = len;
	}
	if (need > t->out_cap) {
		uint32_t cap = RTE_MAX(need, t->out_cap * 2);
		uint8_t *p = realloc(t->out, cap);

		if (p == NULL)
			return NULL;
		t->out = p;
		t->out_cap = cap;
	}
	t->reserved = len;
	return t->out + t->out_len;
}

static void
tcp_commit(void *ctx, uint32_t len)
{
	struct tcp_conn *t = ctx;

	t->out_len += RTE_MIN(len, t->reserved);
	t->reserved = 0;
}

static void
tcp_close(struct kv_server *sv, unsigned int i, int failed)
{
	struct tcp_conn *t = sv->tcp[i];

	close(t->fd);                /* leaves the epoll set too */
	free(t->in);
	free(t->out);
	free(t);
	sv->st.conns_closed++;
	sv->st.conns_failed += failed != 0;
	/* The last one takes the freed index; epoll learns its new one. An
	 * event already collected under its old index is skipped (it is out
	 * of range now) and, level-triggered, reported again next time. */
	sv->tcp[i] = sv->tcp[--sv->n_tcp];
	if (i < sv->n_tcp) {
		struct epoll_event e = { .events = sv->tcp[i]->events, .data.u32 = i };

		epoll_ctl(sv->efd, EPOLL_CTL_MOD, sv->tcp[i]->fd, &e);
	}
}

static void
tcp_watch(struct kv_server *sv, unsigned int i)
{
	struct tcp_conn *t = sv->tcp[i];
	uint32_t pending = t->out_len - t->out_head;
	uint32_t ev = (pending > 0 ? EPOLLOUT : 0) |
		      (!t->closing && pending < KV_SERVER_TCP_BACKLOG ? EPOLLIN : 0);
	struct epoll_event e = { .events = ev, .data.u32 = i };

	if (ev != t->events) {
		epoll_ctl(sv->efd, EPOLL_CTL_MOD, t->fd, &e);
		t->events = ev;
	}
}

/* Execute what @p t has buffered. @return requests executed, -1 to close. */
static int
tcp_execute(struct kv_server *sv, struct tcp_conn *t)
{
	const struct kv_out out = { tcp_reserve, tcp_commit, t };
	uint32_t pos = 0;
	int n = 0;

	while (pos < t->in_len && !t->closing &&
	       t->out_len - t->out_head < KV_SERVER_TCP_BACKLOG) {
		const uint8_t *p = t->in + pos;
		uint32_t avail = t->in_len - pos;
		int used;

		if (t->proto == PROTO_UNKNOWN)
			t->proto = p[0] >= 0x80 ? PROTO_BIN : PROTO_TEXT;
		if (t->proto == PROTO_BIN) {
			uint32_t len;

			if (avail < KV_HDR_LEN || avail < (len = kv_bin_req_len(p)))
				break;
			used = kv_bin_exec(sv->store, p, len, &out) == 0 ? (int)len : -EPIPE;
			if (((const struct kv_hdr *)p)->op < KV_OP_GET ||
			    ((const struct kv_hdr *)p)->op > KV_OP_DEL)
				sv->st.bad_requests++;
		} else {
			used = kv_text_exec(sv->store, (const char *)p, avail, &out);
			if (used == 0)
				break;
		}
		sv->st.requests++;
		n++;
		if (used < 0) {
			t->closing = 1;
			break;
		}
		pos += (uint32_t)used;
	}
	memmove(t->in, t->in + pos, t->in_len - pos);
	t->in_len -= pos;
	return n;
}

static int
tcp_io(struct kv_server *sv, unsigned int i, uint32_t events)
{
	struct tcp_conn *t = sv->tcp[i];
	int n = 0;

	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
		if (t->in_cap - t->in_len < 4096 && t->in_cap < TCP_IN_MAX) {
			uint32_t cap = RTE_MIN(t->in_cap * 4, (uint32_t)TCP_IN_MAX);
			uint8_t *p = realloc(t->in, cap);

			if (p == NULL) {
				tcp_close(sv, i, 1);
				return 0;
			}
			t->in = p;
			t->in_cap = cap;
		}
		ssize_t r = recv(t->fd, t->in + t->in_len, t->in_cap - t->in_len, 0);

		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
			tcp_close(sv, i, r < 0);
			return 0;
		}
		if (r > 0)
			t->in_len += (uint32_t)r;
		n = tcp_execute(sv, t);
		if (t->in_len == TCP_IN_MAX && !t->closing) {
			/* A full buffer with no complete request in it. */
			t->closing = 1;
			sv->st.bad_requests++;
		}
	}
	if (t->out_len > t->out_head) {
		ssize_t w = send(t->fd, t->out + t->out_head, t->out_len - t->out_head,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w < 0 && errno != EAGAIN && errno != EINTR) {
			tcp_close(sv, i, 1);
			return n;
		}
		if (w > 0)
			t->out_head += (uint32_t)w;
		/* Room again: what arrived while it was full. */
		if (t->in_len > 0 && t->out_len - t->out_head < KV_SERVER_TCP_BACKLOG)
			n += tcp_execute(sv, t);
	}
	if (t->closing && t->out_len == t->out_head) {
		tcp_close(sv, i, 0);
		return n;
	}
	tcp_watch(sv, i);
	return n;
}

static void
tcp_accept(struct kv_server *sv)
{
	int fd, one = 1;

	while ((fd = accept4(sv->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		struct tcp_conn *t;
		struct epoll_event e = { .events = EPOLLIN, .data.u32 = sv->n_tcp };

		if (sv->n_tcp == KV_SERVER_TCP_MAX || (t = calloc(1, sizeof(*t))) == NULL) {
			sv->st.tcp_refused++;
			close(fd);
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		t->fd = fd;
		t->events = EPOLLIN;
		t->in_cap = 4096;
		t->in = malloc(t->in_cap);
		if (t->in == NULL || epoll_ctl(sv->efd, EPOLL_CTL_ADD, fd, &e) < 0) {
			free(t->in);
			free(t);
			close(fd);
			sv->st.tcp_refused++;
			continue;
		}
		sv->tcp[sv->n_tcp++] = t;
		sv->st.conns_accepted++;
	}
}

static int
poll_tcp(struct kv_server *sv)
{
	struct epoll_event ev[64];
	int n, done = 0;

	n = epoll_wait(sv->efd, ev, RTE_DIM(ev), 0);
	for (int i = 0; i < n; i++) {
		unsigned int idx = ev[i].data.u32;

		if (idx == UINT32_MAX)
			tcp_accept(sv);
		else if (idx < sv->n_tcp)
			done += tcp_io(sv, idx, ev[i].events);
	}
	return done;
}

/* ---- the server ---------------------------------------------------- */

struct kv_server *
kv_server_create(struct kv_store *s, struct rb2_conn_ep *ep, uint16_t port, int tcp_fd)
{
	struct kv_server *sv = calloc(1, sizeof(*sv));

	if (sv == NULL)
		return NULL;
	sv->store = s;
	sv->ep = ep;
	sv->port = port;
	sv->lfd = tcp_fd;
	sv->efd = -1;
	sv->max_conns = RB2_CONN_MAX + 1;
	if (ep != NULL) {
		int ret;

		sv->held = malloc(sizeof(*sv->held) * sv->max_conns);
		sv->waiting = malloc(sizeof(*sv->waiting) * sv->max_conns);
		if (sv->held == NULL || sv->waiting == NULL)
			goto fail;
		for (uint32_t i = 0; i < sv->max_conns; i++)
			sv->held[i].cd = -1;
		ret = rb2_conn_listen(ep, port, 0);
		if (ret < 0) {
			fprintf(stderr, "rb2-kv: listen on rb2 port %u: %s\n", port, strerror(-ret));
			goto fail;
		}
	}
	if (tcp_fd >= 0) {
		struct epoll_event e = { .events = EPOLLIN, .data.u32 = UINT32_MAX };

		fcntl(tcp_fd, F_SETFL, fcntl(tcp_fd, F_GETFL) | O_NONBLOCK);
		sv->efd = epoll_create1(EPOLL_CLOEXEC);
		if (sv->efd < 0 || epoll_ctl(sv->efd, EPOLL_CTL_ADD, tcp_fd, &e) < 0)
			goto fail;
	}
	return sv;
fail:
	kv_server_free(sv);
	return NULL;
}

void
kv_server_free(struct kv_server *sv)
{
	if (sv == NULL)
		return;
	while (sv->n_tcp > 0)
		tcp_close(sv, sv->n_tcp - 1, 0);
	if (sv->efd >= 0)
		close(sv->efd);
	free(sv->held);
	free(sv->waiting);
	free(sv);
}

int
kv_server_poll(struct kv_server *sv)
{
	int done = 0, ret;

	if (sv->ep != NULL && sv->ep_err == 0) {
		ret = poll_rb2(sv);
		if (ret < 0)
			return ret;
		done += ret;
	}
	/* A pass over TCP is a system call (epoll_wait): with rb2
	 * connections busy, one pass in 8 (a few microseconds apart). */
	if (sv->lfd >= 0 && (done == 0 || (sv->passes & 7) == 0))
		done += poll_tcp(sv);
	return done;
}

void
kv_server_stats_get(const struct kv_server *sv, struct kv_server_stats *st)
{
	*st = sv->st;
}
