/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * An application of rb2-raasd, for tests/test_raasd.sh: an EAL secondary of
 * the service that joins it and talks to another application through it.
 *
 *   test_raas_app [EAL] -- server NAME PORT CONNS PER [STALL]
 *        accept CONNS connections, check PER messages on each (once, in
 *        order, intact), answer each end of stream and close; print when
 *        every message was in ("delivered after S s"); with STALL, stop
 *        polling for STALL seconds once all are accepted
 *   test_raas_app [EAL] -- client NAME PORT CONNS PER [hang|PORT2]
 *        open CONNS connections (to host RB2_TEST_HOST through the service;
 *        default 0, this one), send PER messages on each at random, then
 *        half-close and wait for the answers and closes; with "hang", stop
 *        after sending (print "sent") and wait to be killed; with PORT2,
 *        CONNS more connections to PORT2, sent to in the same loop
 *   test_raas_app [EAL] -- orphan NAME PORT CONNS
 *        accept CONNS connections and read until every one is reset because
 *        the application at the other end is gone
 *   test_raas_app [EAL] -- refused NAME PORT CONNS
 *        connect CONNS times to a port nobody listens on (or, with
 *        RB2_TEST_HOST, a host the service has no link to): every one is
 *        refused, with the reason
 *   test_raas_app [EAL] -- linger NAME PORT CONNS listen|connect
 *        open CONNS connections (or accept them), then wait until the
 *        service is gone: every connection must fail
 *   test_raas_app [EAL] -- lender NAME PORT CONNS PER [abort]
 *        open CONNS connections and send PER messages on each with
 *        rb2_conn_send_ref() from two buffers of shared memory per
 *        connection, used again as they come back (so the service's
 *        registrations are hit); sizes cycle through one copied (1000 B)
 *        and three lent (128 KiB to 1 MiB + 13 B). Every lent buffer must
 *        come back READ (status 0); with "abort", the borrower closes
 *        early, and each connection must have some back unread
 *        (-ECONNABORTED) and none lost
 *   test_raas_app [EAL] -- borrower NAME PORT CONNS PER [abort|stall]
 *        accept CONNS connections and check each message (once, in order,
 *        intact), READ alternately into shared memory (in place) and into
 *        malloc()'d memory (through a bounce buffer); with "abort", read
 *        one message per connection after two seconds, then close it; with
 *        "stall", read nothing (print "stalled" once all are accepted) and
 *        wait to be killed
 *
 * Exit 0 when all went as it should.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_malloc.h>

#include <rb2_conn_ref.h>
#include <rb2_lcore.h>
#include <rb2_conn_service.h>

#include "rb2_conn_traffic.h"

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int
server(struct rb2_conn_ep *ep, uint16_t port, uint32_t conns, uint32_t per, unsigned int stall)
{
	static struct traffic_rx r;
	time_t t0 = time(NULL);
	double start = now_s();
	uint32_t full = 0;
	int ok, told = 0;

	struct rb2_conn_ep_stats st;

	while (r.eof < conns && r.ep_err == 0 && time(NULL) - t0 < 60) {
		traffic_serve(ep, port, &r, traffic_answer, NULL);
		if (stall > 0 && r.accepted == conns) {
			/* A destination that stops polling altogether. */
			printf("server: stalling %u s\n", stall);
			fflush(stdout);
			sleep(stall);
			stall = 0;
		}
		if (!told && r.delivered == (uint64_t)conns * per) {
			printf("server: delivered after %.2f s\n", now_s() - start);
			fflush(stdout);
			told = 1;
		}
	}
	/* Until the client has closed every one too: our last answers and
	 * FINs may be in flight until then. */
	do {
		rb2_conn_ep_poll(ep);
		rb2_conn_ep_stats_get(ep, &st);
	} while (st.conns_open > 0 && r.ep_err == 0 && time(NULL) - t0 < 60);
	ok = r.delivered == (uint64_t)conns * per && r.bad == 0 && r.eof == conns;
	/* Each connection numbers its messages with its index at the client
	 * (0.. or, for a client's second port, CONNS..): PER on CONNS of them. */
	for (uint32_t i = 0; i < TRAFFIC_MAX_CONNS; i++)
		full += r.next[i] == per;
	ok &= full == conns;
	printf("server: %" PRIu64 " messages on %u connections, %" PRIu64 " bad, %u ends "
	       "of stream%s\n", r.delivered, r.accepted, r.bad, r.eof, ok ? "" : " FAILED");
	return ok ? 0 : 1;
}

static int
client(struct rb2_conn_ep *ep, uint16_t port, uint32_t conns, uint32_t per, int hang,
       uint16_t port2)
{
	static struct traffic_tx t;
	struct rb2_conn_ep_stats st;
	uint32_t answered, closed;
	const char *why = "";
	int ret;

	uint32_t host = getenv("RB2_TEST_HOST") ? (uint32_t)atoi(getenv("RB2_TEST_HOST")) : 0;

	if (port2 != 0 && 2 * conns > TRAFFIC_MAX_CONNS)
		return 2;
	t.conns = port2 != 0 ? 2 * conns : conns;
	t.rng = 11;
	for (uint32_t i = 0; i < t.conns; i++)
		t.cd[i] = rb2_conn_connect_host(ep, host, i < conns ? port : port2);
	ret = traffic_send(ep, &t, per, 60, &why);
	if (ret < 0) {
		printf("client: send: %s (%s)\n", strerror(-ret), why);
		return 1;
	}
	if (hang) {
		printf("sent\n");
		fflush(stdout);
		for (;;)
			rb2_conn_ep_poll(ep);
	}
	traffic_finish(ep, &t, t.conns, 60, &answered, &closed);
	rb2_conn_ep_stats_get(ep, &st);
	printf("client: %u connections answered and closed, %u closed here, %" PRIu64
	       " left open\n", answered, closed, st.conns_open);
	return answered == t.conns && closed == t.conns && st.conns_open == 0 ? 0 : 1;
}

/* Accept @p conns, then read until each is reset for its peer's death. */
static int
orphan(struct rb2_conn_ep *ep, uint16_t port, uint32_t conns)
{
	static struct traffic_rx r;
	uint32_t reset = 0;
	time_t t0 = time(NULL);

	while (time(NULL) - t0 < 60 && reset < conns) {
		traffic_serve(ep, port, &r, NULL, NULL);
		reset = 0;
		for (uint32_t i = 0; i < r.accepted && i < TRAFFIC_MAX_CONNS; i++)
			reset += rb2_conn_status(ep, r.cd_of[i]) == -ECONNRESET &&
				strstr(rb2_conn_why(ep, r.cd_of[i]), "is gone") != NULL;
	}
	printf("orphan: %u of %u connections reset (%s), %" PRIu64 " messages before\n",
	       reset, conns, r.accepted ? rb2_conn_why(ep, r.cd_of[0]) : "none accepted",
	       r.delivered);
	return reset == conns ? 0 : 1;
}

/* Connects that the service must refuse, each with its reason. */
static int
refused(struct rb2_conn_ep *ep, uint16_t port, uint32_t conns)
{
	uint32_t host = getenv("RB2_TEST_HOST") ? (uint32_t)atoi(getenv("RB2_TEST_HOST")) : 0;
	static int cd[TRAFFIC_MAX_CONNS];
	uint32_t n = 0;
	time_t t0 = time(NULL);

	for (uint32_t i = 0; i < conns; i++)
		cd[i] = rb2_conn_connect_host(ep, host, port);
	while (time(NULL) - t0 < 10) {
		rb2_conn_ep_poll(ep);
		n = 0;
		for (uint32_t i = 0; i < conns; i++)
			n += rb2_conn_status(ep, cd[i]) == -ECONNREFUSED &&
				rb2_conn_why(ep, cd[i])[0] != '\0';
		if (n == conns)
			break;
	}
	printf("refused: %u of %u connects refused (%s)\n", n, conns, rb2_conn_why(ep, cd[0]));
	return n == conns ? 0 : 1;
}

/* Hold @p conns connections until the service dies under them. */
static int
linger(struct rb2_conn_ep *ep, uint16_t port, uint32_t conns, int listen)
{
	static int cd[TRAFFIC_MAX_CONNS];
	uint32_t n = 0, failed = 0;
	time_t t0 = time(NULL);
	int ret = 0;

	uint32_t host = getenv("RB2_TEST_HOST") ? (uint32_t)atoi(getenv("RB2_TEST_HOST")) : 0;

	int said = 0;

	for (uint32_t i = 0; !listen && i < conns; i++)
		cd[n++] = rb2_conn_connect_host(ep, host, port);
	while (time(NULL) - t0 < 60 && ret >= 0) {
		uint32_t open = 0;
		int c;

		while (listen && n < conns && (c = rb2_conn_accept(ep, port)) >= 0)
			cd[n++] = c;
		ret = rb2_conn_ep_poll(ep);
		/* Say once that all are open: the script kills the service on
		 * this line, not after a fixed wait a slow guest may overrun. */
		for (uint32_t i = 0; !said && i < n; i++)
			open += rb2_conn_status(ep, cd[i]) == 0;
		if (!said && n == conns && open == conns) {
			printf("linger: %u connections open\n", conns);
			fflush(stdout);
			said = 1;
		}
	}
	for (uint32_t i = 0; i < n; i++)
		failed += rb2_conn_status(ep, cd[i]) == ret;
	printf("linger: the service is gone (%s); %u of %u connections failed with it\n",
	       ret < 0 ? strerror(-ret) : "no error", failed, conns);
	return ret == -ECONNRESET && n == conns && failed == conns ? 0 : 1;
}

/* ---- lent messages through the service ----------------------------------- */

#define LEND_CONNS 16
#define LEND_MAX ((1u << 20) + 13)

static uint32_t
lend_len(uint32_t conn, uint32_t seq)
{
	static const uint32_t sizes[] = { 1000, 128u << 10, 300001, LEND_MAX };

	return sizes[(conn + seq) % 4];
}

/* Message @p seq of connection @p conn: [u32 conn][u32 seq][pattern]. */
static void
lend_fill(uint8_t *b, uint32_t conn, uint32_t seq, uint32_t len)
{
	for (uint32_t j = 8; j < len; j++)
		b[j] = (uint8_t)(conn * 131 + seq * 7 + j);
	memcpy(b, &conn, 4);
	memcpy(b + 4, &seq, 4);
}

static int
lend_ok(const uint8_t *b, uint32_t conn, uint32_t seq, uint32_t len)
{
	uint32_t c, q;

	memcpy(&c, b, 4);
	memcpy(&q, b + 4, 4);
	if (c != conn || q != seq || len != lend_len(conn, seq))
		return 0;
	for (uint32_t j = 8; j < len; j++)
		if (b[j] != (uint8_t)(conn * 131 + seq * 7 + j))
			return 0;
	return 1;
}

static int
lender(struct rb2_conn_ep *ep, uint16_t port, uint32_t conns, uint32_t per, int abort_)
{
	uint32_t host = getenv("RB2_TEST_HOST") ? (uint32_t)atoi(getenv("RB2_TEST_HOST")) : 0;
	int cd[LEND_CONNS], stopped[LEND_CONNS] = { 0 }, out = 0, ok = 1;
	uint32_t next[LEND_CONNS] = { 0 }, aborted[LEND_CONNS] = { 0 };
	uint8_t *buf[LEND_CONNS][2];
	uint8_t busy[LEND_CONNS][2] = { { 0 } };
	uint64_t lent = 0, copied = 0, back_ok = 0, back_aborted = 0, back_other = 0;
	struct rb2_conn_ref_done d[16];
	time_t t0 = time(NULL);
	uint32_t done = 0;

	for (uint32_t i = 0; i < conns; i++) {
		cd[i] = rb2_conn_connect_host(ep, host, port);
		buf[i][0] = rte_malloc("lend", LEND_MAX, 64);
		buf[i][1] = rte_malloc("lend", LEND_MAX, 64);
		if (cd[i] < 0 || buf[i][0] == NULL || buf[i][1] == NULL) {
			printf("lender: connect or rte_malloc failed\n");
			return 1;
		}
	}
	while (done < conns && time(NULL) - t0 < 60) {
		int n = rb2_conn_ref_done(ep, d, 16);

		for (int k = 0; k < n; k++) {
			uint32_t c = (uint32_t)(d[k].cookie >> 1);

			busy[c][d[k].cookie & 1] = 0;
			out--;
			if (d[k].status == 0) {
				back_ok++;
			} else if (d[k].status == -ECONNABORTED) {
				back_aborted++;
				aborted[c]++;
			} else {
				back_other++;
				printf("lender: buffer back with %s\n", strerror(-d[k].status));
			}
		}
		done = 0;
		for (uint32_t i = 0; i < conns; i++) {
			int b = busy[i][0] ? 1 : 0, ret;

			if (stopped[i] || next[i] == per) {
				done++;
				continue;
			}
			if (busy[i][b])
				continue;
			lend_fill(buf[i][b], i, next[i], lend_len(i, next[i]));
			ret = rb2_conn_send_ref(ep, cd[i], buf[i][b], lend_len(i, next[i]),
						(uint64_t)i << 1 | (uint64_t)b);
			if (ret == 1) {
				busy[i][b] = 1;
				out++;
				lent++;
			} else if (ret == 0) {
				copied++;
			} else if (ret != -EAGAIN && ret != -ENOBUFS) {
				/* The borrower closed (abort): no more on it. */
				stopped[i] = 1;
				if (!abort_)
					printf("lender: send on connection %u: %s\n", i, strerror(-ret));
				continue;
			} else {
				rb2_conn_ep_poll(ep);
				continue;
			}
			next[i]++;
		}
	}
	for (uint32_t i = 0; i < conns; i++)
		rb2_conn_shutdown(ep, cd[i]);
	while (out > 0 && time(NULL) - t0 < 60) {
		int n = rb2_conn_ref_done(ep, d, 16);

		for (int k = 0; k < n; k++, out--) {
			if (d[k].status == 0)
				back_ok++;
			else if (d[k].status == -ECONNABORTED)
				back_aborted++, aborted[d[k].cookie >> 1]++;
			else
				back_other++;
		}
	}
	for (uint32_t i = 0; i < conns; i++) {
		if (abort_ && aborted[i] == 0)
			ok = 0;
		rb2_conn_close(ep, cd[i]);
		rte_free(buf[i][0]);
		rte_free(buf[i][1]);
	}
	ok &= out == 0 && back_other == 0 && back_ok + back_aborted == lent && lent > 0 &&
		(abort_ ? back_aborted > 0 : back_aborted == 0 && lent + copied ==
		 (uint64_t)conns * per);
	printf("lender: %" PRIu64 " lent, %" PRIu64 " copied; back: %" PRIu64 " read, %" PRIu64
	       " unread (aborted), %" PRIu64 " other, %d still out%s\n", lent, copied, back_ok,
	       back_aborted, back_other, out, ok ? "" : " FAILED");
	return ok ? 0 : 1;
}

static int
borrower(struct rb2_conn_ep *ep, uint16_t port, uint32_t conns, uint32_t per, int abort_,
	 int stall)
{
	int cd[LEND_CONNS], pending[LEND_CONNS] = { 0 }, closed[LEND_CONNS] = { 0 };
	uint32_t got[LEND_CONNS] = { 0 }, idx[LEND_CONNS], accepted = 0, eof = 0;
	uint64_t bad = 0, in_place = 0, bounced = 0;
	uint8_t *shared[LEND_CONNS], *priv[LEND_CONNS];
	time_t t0 = time(NULL);
	int ok;

	for (uint32_t i = 0; i < conns; i++) {
		shared[i] = rte_malloc("borrow", LEND_MAX, 64);
		priv[i] = malloc(LEND_MAX);
		if (shared[i] == NULL || priv[i] == NULL)
			return 1;
	}
	while (eof < conns && time(NULL) - t0 < 60) {
		int c;

		while (accepted < conns && (c = rb2_conn_accept(ep, port)) >= 0)
			cd[accepted++] = c;
		if (stall) {
			if (accepted == conns && stall++ == 1) {
				printf("stalled\n");
				fflush(stdout);
			}
			rb2_conn_ep_poll(ep);
			t0 = time(NULL);
			continue;
		}
		if (abort_ && time(NULL) - t0 < 2) {
			rb2_conn_ep_poll(ep);   /* let lent buffers pile up, unread */
			continue;
		}
		rb2_conn_ep_poll(ep);
		for (uint32_t i = 0; i < accepted; i++) {
			/* Alternately in place and through a bounce buffer; a
			 * READ in progress keeps its buffer until it is done. */
			uint8_t *dst = (got[i] + (uint32_t)pending[i]) % 2 == 0 ? shared[i] : priv[i];
			int len;

			if (closed[i])
				continue;
			if (pending[i])
				dst = pending[i] == 1 ? shared[i] : priv[i];
			len = rb2_conn_recv(ep, cd[i], dst, LEND_MAX);
			if (len == -EINPROGRESS) {
				pending[i] = dst == shared[i] ? 1 : 2;
				continue;
			}
			pending[i] = 0;
			if (len == -EAGAIN)
				continue;
			if (len <= 0) {
				if (len < 0)
					printf("borrower: connection %u: %s\n", i, strerror(-len));
				closed[i] = 1;
				eof++;
				rb2_conn_close(ep, cd[i]);
				continue;
			}
			if (got[i] == 0)
				memcpy(&idx[i], dst, 4);
			if (idx[i] >= conns || !lend_ok(dst, idx[i], got[i], (uint32_t)len))
				bad++;
			if (len >= (128 << 10))
				dst == shared[i] ? in_place++ : bounced++;
			got[i]++;
			if (abort_) {
				/* One read, the rest left unread. */
				closed[i] = 1;
				eof++;
				rb2_conn_close(ep, cd[i]);
			}
		}
	}
	ok = eof == conns && bad == 0;
	for (uint32_t i = 0; i < conns; i++) {
		ok &= abort_ ? got[i] == 1 : got[i] == per;
		rte_free(shared[i]);
		free(priv[i]);
	}
	/* Until the lender has closed too: our last frames may be in flight. */
	for (time_t t1 = time(NULL); time(NULL) - t1 < 2; )
		rb2_conn_ep_poll(ep);
	printf("borrower: %u connections, %" PRIu64 " lent messages READ in place, %" PRIu64
	       " through a bounce buffer, %" PRIu64 " bad%s\n", accepted, in_place, bounced, bad,
	       ok ? "" : " FAILED");
	return ok ? 0 : 1;
}

/* Listen on @port, and say so once the service has been told (the script
 * starts the connecting side on that line, not after a fixed wait). */
static int
listen_said(struct rb2_conn_ep *ep, uint16_t port, uint32_t backlog)
{
	int ret = rb2_conn_listen(ep, port, backlog);

	if (ret == 0) {
		printf("listening on %u\n", port);
		fflush(stdout);
	}
	return ret;
}

int
main(int argc, char **argv)
{
	struct rb2_conn_ep *ep;
	uint32_t conns, per;
	uint16_t port;
	int ret = rte_eal_init(argc, argv);

	if (ret < 0) {
		fprintf(stderr, "EAL: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	argc -= ret;
	argv += ret;
	if (argc < 5) {
		fprintf(stderr, "usage: test_raas_app [EAL] -- server|client|orphan|refused|linger NAME "
			"PORT CONNS [PER|listen|connect] [hang]\n");
		return 2;
	}
	port = (uint16_t)atoi(argv[3]);
	conns = (uint32_t)atoi(argv[4]);
	per = argc > 5 ? (uint32_t)atoi(argv[5]) : 0;
	if (conns == 0 || conns > TRAFFIC_MAX_CONNS)
		return 2;
	ep = rb2_conn_service_join(argv[2], NULL, 10000);
	if (ep == NULL) {
		fprintf(stderr, "%s: cannot join the service: %s\n", argv[2],
			rte_strerror(rte_errno));
		return 1;
	}
	if (strcmp(argv[1], "server") == 0)
		ret = listen_said(ep, port, conns) ?:
			server(ep, port, conns, per, argc > 6 ? (unsigned int)atoi(argv[6]) : 0);
	else if (strcmp(argv[1], "client") == 0)
		ret = client(ep, port, conns, per, argc > 6 && strcmp(argv[6], "hang") == 0,
			     argc > 6 ? (uint16_t)atoi(argv[6]) : 0);
	else if (strcmp(argv[1], "orphan") == 0)
		ret = listen_said(ep, port, conns) ?: orphan(ep, port, conns);
	else if (strcmp(argv[1], "refused") == 0)
		ret = refused(ep, port, conns);
	else if (strcmp(argv[1], "linger") == 0) {
		int listen = argc > 5 && strcmp(argv[5], "listen") == 0;

		ret = (listen ? listen_said(ep, port, conns) : 0) ?:
			linger(ep, port, conns, listen);
	} else if (strcmp(argv[1], "lender") == 0 && conns <= LEND_CONNS) {
		ret = lender(ep, port, conns, per, argc > 6 && strcmp(argv[6], "abort") == 0);
	} else if (strcmp(argv[1], "borrower") == 0 && conns <= LEND_CONNS) {
		ret = listen_said(ep, port, conns) ?:
			borrower(ep, port, conns, per, argc > 6 && strcmp(argv[6], "abort") == 0,
				 argc > 6 && strcmp(argv[6], "stall") == 0);
	} else
		ret = 2;
	rb2_conn_ep_destroy(ep);
	rb2_eal_cleanup();
	return ret;
}
