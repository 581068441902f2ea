/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* One lcore's server loop for the case-study apps (app_server.h). */

#define _GNU_SOURCE             /* accept4 */

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_common.h>

#include "app_hist.h"
#include "app_server.h"

/* A connection, on any transport. Its input is a byte stream: over rb2,
 * the messages' bytes are read in place (view) while requests end inside
 * them, and copied to `in` only when a request spans messages; over TCP
 * and L5 they are received into `in`. */
struct conn {
	int cd;                     /* rb2 descriptor, -1: free slot */
	int fd;                     /* TCP */
	int closing;                /* TCP: send what is left, then close */
	uint64_t linger_until;      /* TCP: closed for sending at last, input
				     * is drained (so that the client reads
				     * the answer, not a reset) until then */
	int pending;                /* TCP, L5: an answer is unfinished */
	int blocked;                /* TCP, L5: an answer waits for room */
	struct rb2_l5 *l5_in, *l5_out;   /* L5: its two rings */
	int l5_err;                 /* L5: a ring's error */
	int on_wait;                /* rb2: on the waiting list */
	const uint8_t *view;        /* rb2: the message being executed */
	uint32_t vlen, voff;
	uint8_t *in;
	uint32_t in_len, in_cap;
	uint8_t *out;               /* TCP: [out_head, out_len) unsent */
	uint32_t out_head, out_len, out_cap, reserved;
	uint32_t events;            /* TCP: what epoll watches now */
	/* The protocol's conn_size bytes, aligned for any type it keeps. */
	alignas(max_align_t) uint8_t proto[];
};

struct app_server {
	const struct app_proto *p;
	void *ctx;
	struct rb2_conn_ep *ep;
	uint16_t port;
	int ep_err;
	struct conn **rb2;          /* by slot (cd & 0xffff) */
	int *waiting;               /* descriptors waiting for room */
	uint32_t n_waiting;
	int lfd, efd;
	struct conn *tcp[APP_SERVER_TCP_MAX];
	unsigned int n_tcp;
	unsigned int n_lingering;
	struct conn *l5[APP_SERVER_L5_MAX];
	unsigned int n_l5;
	unsigned int passes;
	struct app_server_stats st;
};

static struct conn *
conn_new(const struct app_server *sv)
{
	return calloc(1, sizeof(struct conn) + sv->p->conn_size);
}

static void
conn_free(struct app_server *sv, struct conn *c)
{
	if (sv->p->fini != NULL)
		sv->p->fini(sv->ctx, c->proto);
	free(c->in);
	free(c->out);
	free(c);
}

/* Append @p len bytes to @p c's input. @return 0, or -1 (over in_max). */
static int
in_append(const struct app_server *sv, struct conn *c, const void *data, uint32_t len)
{
	if (c->in_len + len > c->in_cap) {
		uint32_t cap = RTE_MAX(c->in_len + len, RTE_MAX(c->in_cap * 2, 4096u));
		uint8_t *p;

		if (c->in_len + len > sv->p->in_max + 65536u)
			return -1;
		p = realloc(c->in, cap);
		if (p == NULL)
			return -1;
		c->in = p;
		c->in_cap = cap;
	}
	memcpy(c->in + c->in_len, data, len);
	c->in_len += len;
	return 0;
}

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

static void
rb2_cancel(void *ctx)
{
	struct rb2_out_ctx *c = ctx;

	rb2_conn_cancel(c->ep, c->cd);
}

static void
rb2_close(struct app_server *sv, struct conn *c, int failed)
{
	sv->st.conns_closed++;
	sv->st.conns_failed += failed != 0;
	rb2_conn_close(sv->ep, c->cd);
	sv->rb2[c->cd & 0xffff] = NULL;
	conn_free(sv, c);
}

/* The last request of a connection the protocol closes (-EPIPE) counts
 * too: it was answered. */
static inline void
count_last(struct app_server *sv, int ret)
{
	sv->st.requests += ret == -EPIPE;
}

/* Execute @p c's requests until it has none, or its answer must wait
 * (then it is on the waiting list). @return requests executed. */
static int
serve_conn(struct app_server *sv, struct conn *c)
{
	struct rb2_out_ctx octx = { sv->ep, c->cd };
	const struct app_out out = { rb2_reserve, rb2_commit, rb2_cancel, &octx,
				     rb2_conn_max_msg(sv->ep) };
	int n = 0;

	for (;;) {
		const uint8_t *data;
		uint32_t len;
		int ret;

		/* An unfinished answer goes first (0 at once if none). */
		if (sv->p->resume != NULL) {
			ret = sv->p->resume(sv->ctx, c->proto, &out);
			if (ret == -EAGAIN)
				goto wait;
			if (ret < 0)
				goto close;
		}
		if (c->view == NULL) {
			const void *v;
			int got;

			/* Past its first request, a connection takes only what
			 * the poll filed: poll_rb2() flushes the answers before
			 * it polls again (rb2_conn_recv_ready()). */
			if (n > 0 && !rb2_conn_recv_ready(sv->ep, c->cd))
				return n;
			got = rb2_conn_recv_zc(sv->ep, c->cd, &v);
			if (got == -EAGAIN)
				return n;
			if (got <= 0) {          /* end of stream, or failed */
				rb2_close(sv, c, got < 0);
				return n;
			}
			if (c->in_len > 0) {     /* a request spans messages */
				ret = in_append(sv, c, v, (uint32_t)got);
				rb2_conn_release(sv->ep, c->cd, 1);
				if (ret < 0)
					goto close;
			} else {
				c->view = v;
				c->vlen = (uint32_t)got;
				c->voff = 0;
			}
		}
		data = c->in_len > 0 ? c->in : c->view + c->voff;
		len = c->in_len > 0 ? c->in_len : c->vlen - c->voff;
		ret = sv->p->exec(sv->ctx, c->proto, data, len, &out);
		if (ret == -EAGAIN)
			goto wait;
		if (ret < 0) {
			count_last(sv, ret);
			goto close;
		}
		if (ret == 0) {                  /* more input needed */
			if (c->in_len == 0 && in_append(sv, c, data, len) < 0)
				goto close;
			if (c->in_len >= sv->p->in_max)
				goto close;
			if (c->view != NULL) {
				c->view = NULL;
				rb2_conn_release(sv->ep, c->cd, 1);
			}
			continue;
		}
		n++;
		sv->st.requests++;
		if (c->in_len > 0) {
			memmove(c->in, c->in + ret, c->in_len - (uint32_t)ret);
			c->in_len -= (uint32_t)ret;
		} else if ((c->voff += (uint32_t)ret) == c->vlen) {
			c->view = NULL;
			rb2_conn_release(sv->ep, c->cd, 1);
		}
	}
wait:
	if (rb2_conn_status(sv->ep, c->cd) < 0) {   /* it will never have room */
		rb2_close(sv, c, 1);
		return n;
	}
	if (!c->on_wait) {
		c->on_wait = 1;
		sv->waiting[sv->n_waiting++] = c->cd;
		sv->st.waits++;
	}
	return n;
close:
	sv->st.closed_by_protocol++;
	rb2_close(sv, c, 0);
	return n;
}

static int
poll_rb2(struct app_server *sv)
{
	uint32_t w, n_waiting = sv->n_waiting;
	int cds[64], n, done = 0, cd;

	/* Connections that waited for room: the client may have read. */
	sv->n_waiting = 0;
	for (w = 0; w < n_waiting; w++) {
		struct conn *c = sv->rb2[sv->waiting[w] & 0xffff];

		if (c != NULL && c->cd == sv->waiting[w]) {
			c->on_wait = 0;
			done += serve_conn(sv, c);
		}
	}
	n = rb2_conn_ep_ready(sv->ep, cds, RTE_DIM(cds));
	if (n < 0) {
		sv->ep_err = n;
		return n;
	}
	for (int i = 0; i < n; i++) {
		struct conn *c = sv->rb2[cds[i] & 0xffff];

		/* One on the waiting list has had its turn above. */
		if (c != NULL && c->cd == cds[i] && !c->on_wait)
			done += serve_conn(sv, c);
	}
	/* New connections: those the poll above filed, and one pass in 64
	 * an accept that polls for them (an accept with none waiting polls
	 * the ring again, which every idle pass would pay). */
	if (rb2_conn_backlog(sv->ep, sv->port) > 0 || (sv->passes & 63) == 0) {
		while ((cd = rb2_conn_accept(sv->ep, sv->port)) >= 0) {
			struct conn *c = conn_new(sv);

			if (c == NULL) {
				rb2_conn_close(sv->ep, cd);
				sv->st.conns_failed++;
				continue;
			}
			c->cd = cd;
			c->fd = -1;
			sv->rb2[cd & 0xffff] = c;
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
	struct conn *t = ctx;
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
	struct conn *t = ctx;

	t->out_len += RTE_MIN(len, t->reserved);
	t->reserved = 0;
}

static void
tcp_cancel(void *ctx)
{
	struct conn *t = ctx;

	t->reserved = 0;
}

static void
tcp_close(struct app_server *sv, unsigned int i, int failed)
{
	struct conn *t = sv->tcp[i];

	close(t->fd);                /* leaves the epoll set too */
	sv->n_lingering -= t->linger_until != 0;
	conn_free(sv, t);
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

static inline int
tcp_backlogged(const struct conn *t)
{
	return t->pending || t->out_len - t->out_head >= APP_SERVER_TCP_BACKLOG;
}

static void
tcp_watch(struct app_server *sv, unsigned int i)
{
	struct conn *t = sv->tcp[i];
	uint32_t ev = t->linger_until ? EPOLLIN :
		      (t->out_len > t->out_head ? EPOLLOUT : 0) |
		      (!t->closing && !tcp_backlogged(t) ? EPOLLIN : 0);
	struct epoll_event e = { .events = ev, .data.u32 = i };

	if (ev != t->events) {
		epoll_ctl(sv->efd, EPOLL_CTL_MOD, t->fd, &e);
		t->events = ev;
	}
}

/* Execute what @p t has buffered into @p out, while its answers fit (a TCP
 * connection's backlog; an L5 connection has none: out_len stays 0). */
static int
execute_buffered(struct app_server *sv, struct conn *t, const struct app_out *out)
{
	uint32_t pos = 0;
	int n = 0, ret;

	t->blocked = 0;
	while (!t->closing && t->out_len - t->out_head < APP_SERVER_TCP_BACKLOG) {
		/* An unfinished answer goes on, a part at a time, first. */
		if (sv->p->resume != NULL) {
			ret = sv->p->resume(sv->ctx, t->proto, out);
			t->pending = ret == -EAGAIN;
			if (ret == -EAGAIN) {
				/* TCP's reservations always succeed: its backlog
				 * ends this loop. L5's wait for the ring. */
				if (t->fd < 0) {
					t->blocked = 1;
					break;
				}
				continue;
			}
			if (ret < 0) {
				t->closing = 1;
				break;
			}
		}
		if (pos == t->in_len)
			break;
		ret = sv->p->exec(sv->ctx, t->proto, t->in + pos, t->in_len - pos, out);
		t->blocked = ret == -EAGAIN;
		if (ret == 0 || ret == -EAGAIN)
			break;
		if (ret < 0) {
			t->closing = 1;
			sv->st.closed_by_protocol++;
			count_last(sv, ret);
			break;
		}
		sv->st.requests++;
		n++;
		pos += (uint32_t)ret;
	}
	if (pos > 0) {                /* (an L5 connection may have no input yet) */
		memmove(t->in, t->in + pos, t->in_len - pos);
		t->in_len -= pos;
	}
	return n;
}

static int
tcp_execute(struct app_server *sv, struct conn *t)
{
	const struct app_out out = { tcp_reserve, tcp_commit, tcp_cancel, t,
				     APP_SERVER_TCP_BACKLOG };

	return execute_buffered(sv, t, &out);
}

#define LINGER_NS 500000000ull

/* A connection closed for a bad request: its answer is out; the client
 * may still be sending. Close our side for sending, and read (and drop)
 * until it closes too or LINGER_NS pass: closing with unread input would
 * reset the connection, and the client could lose the answer. */
static int
tcp_linger(struct app_server *sv, unsigned int i, uint32_t events)
{
	struct conn *t = sv->tcp[i];
	uint8_t sink[4096];
	ssize_t r = 1;

	if (t->linger_until == 0) {
		shutdown(t->fd, SHUT_WR);
		t->linger_until = app_now_ns() + LINGER_NS;
		sv->n_lingering++;
		tcp_watch(sv, i);
	}
	while ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) &&
	       (r = recv(t->fd, sink, sizeof(sink), MSG_DONTWAIT)) > 0)
		;
	if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR) ||
	    app_now_ns() > t->linger_until)
		tcp_close(sv, i, 0);
	return 0;
}

static int
tcp_io(struct app_server *sv, unsigned int i, uint32_t events)
{
	struct conn *t = sv->tcp[i];
	int n = 0;

	if (t->linger_until != 0)
		return tcp_linger(sv, i, events);
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
		ssize_t r;

		if (t->in_cap - t->in_len < 4096 && t->in_cap < sv->p->in_max) {
			uint32_t cap = RTE_MIN(RTE_MAX(t->in_cap * 4, 16384u), sv->p->in_max);
			uint8_t *p = realloc(t->in, cap);

			if (p == NULL) {
				tcp_close(sv, i, 1);
				return 0;
			}
			t->in = p;
			t->in_cap = cap;
		}
		r = recv(t->fd, t->in + t->in_len, t->in_cap - t->in_len, 0);
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
			tcp_close(sv, i, r < 0);
			return 0;
		}
		if (r > 0)
			t->in_len += (uint32_t)r;
		n = tcp_execute(sv, t);
		if (t->in_len == sv->p->in_max && !t->closing && !tcp_backlogged(t)) {
			/* A full buffer with no complete request in it. */
			t->closing = 1;
			sv->st.closed_by_protocol++;
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
		/* Room again: the unfinished answer, and what arrived meanwhile. */
		if ((t->in_len > 0 || t->pending) && !(t->out_len - t->out_head >=
						       APP_SERVER_TCP_BACKLOG))
			n += tcp_execute(sv, t);
	}
	if (t->closing && t->out_len == t->out_head)
		return n + tcp_linger(sv, i, 0);
	tcp_watch(sv, i);
	return n;
}

static void
tcp_accept(struct app_server *sv)
{
	int fd, one = 1;

	while ((fd = accept4(sv->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		struct epoll_event e = { .events = EPOLLIN, .data.u32 = sv->n_tcp };
		struct conn *t;

		if (sv->n_tcp == APP_SERVER_TCP_MAX || (t = conn_new(sv)) == NULL) {
			sv->st.tcp_refused++;
			close(fd);
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		t->fd = fd;
		t->cd = -1;
		t->events = EPOLLIN;
		if (epoll_ctl(sv->efd, EPOLL_CTL_ADD, fd, &e) < 0) {
			conn_free(sv, t);
			close(fd);
			sv->st.tcp_refused++;
			continue;
		}
		sv->tcp[sv->n_tcp++] = t;
		sv->st.conns_accepted++;
	}
}

static int
poll_tcp(struct app_server *sv)
{
	struct epoll_event ev[64];
	int n, done = 0;

	/* Lingering connections whose clients neither send nor close. */
	if (sv->n_lingering > 0 && (sv->passes & 1023) == 0)
		for (unsigned int i = sv->n_tcp; i-- > 0;)
			if (sv->tcp[i]->linger_until != 0)
				tcp_linger(sv, i, 0);
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

/* ---- L5 connections ------------------------------------------------ */

/* An answer is written into the connection's buffer, and L5's send copies
 * it into the ring, as L5's send() copies from its caller's memory. */
static void *
l5_reserve(void *ctx, uint32_t len)
{
	struct conn *c = ctx;
	int room = len <= APP_L5_MAX_MSG ? rb2_l5_room(c->l5_out, len, 1) : -EMSGSIZE;

	if (room < 0 && room != -ENOBUFS && c->l5_err == 0)
		c->l5_err = room;
	return room > 0 ? c->out : NULL;
}

static void
l5_commit(void *ctx, uint32_t len)
{
	struct conn *c = ctx;
	int ret = rb2_l5_send(c->l5_out, c->out, len);   /* the room is there */

	if (ret < 0 && c->l5_err == 0)
		c->l5_err = ret;
}

static void
l5_cancel(void *ctx __rte_unused)
{
}

int
app_server_add_l5(struct app_server *sv, const struct app_l5_conn *l)
{
	struct conn *c;

	if (sv->n_l5 == APP_SERVER_L5_MAX) {
		fprintf(stderr, "%s: at most %d L5 connections per server\n", sv->p->name,
			APP_SERVER_L5_MAX);
		return -1;
	}
	c = conn_new(sv);
	if (c == NULL || (c->out = malloc(APP_L5_MAX_MSG)) == NULL) {
		fprintf(stderr, "%s: no memory for an L5 connection\n", sv->p->name);
		if (c != NULL)
			conn_free(sv, c);
		return -1;
	}
	c->cd = c->fd = -1;
	c->l5_in = l->ring[0];
	c->l5_out = l->ring[1];
	sv->l5[sv->n_l5++] = c;
	sv->st.conns_accepted++;
	return 0;
}

/* A connection whose ring failed, or that the protocol closed: L5 has no
 * end of stream to send, so it is only no longer served. */
static void
l5_end(struct app_server *sv, struct conn *c, int failed)
{
	c->closing = 1;
	sv->st.conns_closed++;
	sv->st.conns_failed += failed != 0;
	sv->st.closed_by_protocol += failed == 0;
}

/* Execute, then take the next message, until there is none or an answer
 * waits for room (then the ring holds the rest, and the client waits). */
static int
serve_l5(struct app_server *sv, struct conn *c)
{
	const struct app_out out = { l5_reserve, l5_commit, l5_cancel, c, APP_L5_MAX_MSG };
	int n = 0, got;

	for (;;) {
		n += execute_buffered(sv, c, &out);
		if (c->l5_err != 0) {
			l5_end(sv, c, 1);
			return n;
		}
		if (c->closing) {          /* the protocol closed it */
			l5_end(sv, c, 0);
			return n;
		}
		if (c->blocked)
			return n;
		if (c->in_len >= sv->p->in_max) {    /* no request in all that */
			l5_end(sv, c, 0);
			return n;
		}
		if (c->in_cap - c->in_len < APP_L5_MAX_MSG) {
			uint32_t cap = c->in_len + APP_L5_MAX_MSG;
			uint8_t *p = realloc(c->in, cap);

			if (p == NULL) {
				l5_end(sv, c, 1);
				return n;
			}
			c->in = p;
			c->in_cap = cap;
		}
		/* L5's receive: copied out of the ring (here straight into the
		 * input), the ring's bytes zeroed, the read position moved. */
		got = rb2_l5_recv(c->l5_in, c->in + c->in_len, c->in_cap - c->in_len);
		if (got == -EAGAIN)
			return n;
		if (got < 0) {
			l5_end(sv, c, 1);
			return n;
		}
		c->in_len += (uint32_t)got;
	}
}

static int
poll_l5(struct app_server *sv)
{
	int done = 0;

	for (unsigned int i = 0; i < sv->n_l5; i++)
		if (!sv->l5[i]->closing)
			done += serve_l5(sv, sv->l5[i]);
	return done;
}

/* ---- the server ---------------------------------------------------- */

struct app_server *
app_server_create(const struct app_proto *proto, void *ctx, struct rb2_conn_ep *ep,
		  uint16_t port, int tcp_fd)
{
	struct app_server *sv = calloc(1, sizeof(*sv));

	if (sv == NULL)
		return NULL;
	sv->p = proto;
	sv->ctx = ctx;
	sv->ep = ep;
	sv->port = port;
	sv->lfd = tcp_fd;
	sv->efd = -1;
	if (ep != NULL) {
		int ret;

		sv->rb2 = calloc(RB2_CONN_MAX + 1, sizeof(*sv->rb2));
		sv->waiting = malloc(sizeof(*sv->waiting) * (RB2_CONN_MAX + 1));
		if (sv->rb2 == NULL || sv->waiting == NULL)
			goto fail;
		ret = rb2_conn_listen(ep, port, 0);
		if (ret < 0) {
			fprintf(stderr, "%s: listen on rb2 port %u: %s\n", proto->name, port,
				strerror(-ret));
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
	app_server_free(sv);
	return NULL;
}

void
app_server_free(struct app_server *sv)
{
	if (sv == NULL)
		return;
	while (sv->n_tcp > 0)
		tcp_close(sv, sv->n_tcp - 1, 0);
	while (sv->n_l5 > 0)
		conn_free(sv, sv->l5[--sv->n_l5]);
	for (uint32_t i = 0; sv->rb2 != NULL && i <= RB2_CONN_MAX; i++)
		if (sv->rb2[i] != NULL)
			rb2_close(sv, sv->rb2[i], 0);
	if (sv->efd >= 0)
		close(sv->efd);
	if (sv->lfd >= 0)
		close(sv->lfd);
	free(sv->rb2);
	free(sv->waiting);
	free(sv);
}

int
app_server_poll(struct app_server *sv)
{
	int done = 0, ret;

	sv->passes++;
	if (sv->n_l5 > 0)
		done += poll_l5(sv);
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
app_server_stats_get(const struct app_server *sv, struct app_server_stats *st)
{
	*st = sv->st;
}
