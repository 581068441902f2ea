/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_CONN_TRAFFIC_H
#define RB2_CONN_TRAFFIC_H

/*
 * Connection traffic for the cross-process and cross-host tests: a client
 * sends numbered messages of varied sizes on many connections, interleaved
 * at random; a server checks that each connection's arrive exactly once, in
 * order and intact. Message i of connection c: [u32 c][u32 i][pattern].
 */

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <rb2_conn.h>

#define TRAFFIC_MAX_CONNS 1000

static inline uint32_t
traffic_len(uint32_t conn, uint32_t seq)
{
	return 8 + (conn * 2654435761u + seq * 40503u) % 700;
}

static inline uint8_t
traffic_byte(uint32_t conn, uint32_t seq, uint32_t j)
{
	return (uint8_t)(conn * 31 + seq * 7 + j);
}

struct traffic_tx {
	unsigned int conns;
	int cd[TRAFFIC_MAX_CONNS];
	uint32_t next[TRAFFIC_MAX_CONNS];
	uint64_t rng;
};

/*
 * Send until every connection has sent @p per messages, in random order,
 * or @p seconds pass. @return 0, or the first send error (why in @p why).
 */
static inline int
traffic_send(struct rb2_conn_ep *ep, struct traffic_tx *t, uint32_t per,
	     unsigned int seconds, const char **why)
{
	static uint8_t buf[1024];
	uint64_t done = 0, all = (uint64_t)t->conns * per;
	time_t t0 = time(NULL);

	while (done < all && time(NULL) - t0 < (time_t)seconds) {
		uint32_t i, len;
		int ret;

		t->rng = t->rng * 6364136223846793005ull + 1442695040888963407ull;
		i = (uint32_t)(t->rng >> 33) % t->conns;
		if (t->next[i] >= per) {
			rb2_conn_ep_poll(ep);
			continue;
		}
		len = traffic_len(i, t->next[i]);
		memcpy(buf, &i, 4);
		memcpy(buf + 4, &t->next[i], 4);
		for (uint32_t j = 8; j < len; j++)
			buf[j] = traffic_byte(i, t->next[i], j);
		ret = rb2_conn_send(ep, t->cd[i], buf, len);
		if (ret == -EAGAIN || ret == -ENOBUFS)
			continue;
		if (ret < 0) {
			*why = rb2_conn_why(ep, t->cd[i]);
			return ret;
		}
		t->next[i]++;
		done++;
	}
	rb2_conn_flush(ep);
	return done == all ? 0 : -ETIMEDOUT;
}

struct traffic_rx {
	uint32_t next[TRAFFIC_MAX_CONNS];
	int cd_of[TRAFFIC_MAX_CONNS];   /* accepted descriptors, in accept order */
	uint32_t accepted, eof;
	uint64_t delivered, bad;
	int ep_err;
};

/*
 * One pass of a server on @p port: accept, read every connection with news
 * and check it. At a connection's end of stream, @p at_eof(ep, cd, arg)
 * (or a close when NULL).
 */
static inline void
traffic_serve(struct rb2_conn_ep *ep, uint16_t port, struct traffic_rx *r,
	      void (*at_eof)(struct rb2_conn_ep *, int, void *), void *arg)
{
	static uint8_t buf[1024];
	int ready[64], n, cd;

	while ((cd = rb2_conn_accept(ep, port)) >= 0)
		r->cd_of[r->accepted++ % TRAFFIC_MAX_CONNS] = cd;
	n = rb2_conn_ep_ready(ep, ready, 64);
	if (n < 0 && r->ep_err == 0)
		r->ep_err = n;
	for (int j = 0; j < n; j++) {
		int len;

		while ((len = rb2_conn_recv(ep, ready[j], buf, sizeof(buf))) > 0) {
			uint32_t i, seq;

			memcpy(&i, buf, 4);
			memcpy(&seq, buf + 4, 4);
			if (len < 8 || i >= TRAFFIC_MAX_CONNS || seq != r->next[i] ||
			    (uint32_t)len != traffic_len(i, seq) ||
			    (len > 8 && buf[len - 1] != traffic_byte(i, seq, (uint32_t)len - 1))) {
				r->bad++;
				continue;
			}
			r->next[i]++;
			r->delivered++;
		}
		if (len == 0) {
			r->eof++;
			if (at_eof != NULL)
				at_eof(ep, ready[j], arg);
			else
				rb2_conn_close(ep, ready[j]);
		}
	}
}

/* The server's answer at a connection's end of stream (a traffic_serve()
 * at_eof): one message, then its own close. */
#define TRAFFIC_BYE 0xb7eull

static inline void
traffic_answer(struct rb2_conn_ep *ep, int cd, void *arg)
{
	uint64_t bye = TRAFFIC_BYE;
	int ret;

	(void)arg;
	while ((ret = rb2_conn_send(ep, cd, &bye, sizeof(bye))) == -EAGAIN || ret == -ENOBUFS)
		;
	rb2_conn_close(ep, cd);
}

/*
 * The client's end: half-close the first @p conns connections of @p t,
 * then read each one's answer and close, closing ours, for at most
 * @p seconds. Counts what was answered and closed.
 */
static inline void
traffic_finish(struct rb2_conn_ep *ep, const struct traffic_tx *t, uint32_t conns,
	       unsigned int seconds, uint32_t *answered, uint32_t *closed)
{
	time_t t0 = time(NULL);

	*answered = *closed = 0;
	for (uint32_t i = 0; i < conns; i++)
		rb2_conn_shutdown(ep, t->cd[i]);
	while (*closed < conns && time(NULL) - t0 < (time_t)seconds) {
		int ready[64], n = rb2_conn_ep_ready(ep, ready, 64);

		if (n < 0)
			break;
		for (int j = 0; j < n; j++) {
			uint64_t bye;
			int len;

			while ((len = rb2_conn_recv(ep, ready[j], &bye, sizeof(bye))) > 0)
				*answered += len == sizeof(bye) && bye == TRAFFIC_BYE;
			if (len == 0) {
				rb2_conn_close(ep, ready[j]);
				(*closed)++;
			}
		}
	}
}

#endif /* RB2_CONN_TRAFFIC_H */
