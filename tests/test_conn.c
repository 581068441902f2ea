/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Connections over one shared channel pair (lib/conn): exactly once and in
 * order per connection with 1000 of them, a stalled reader, close and
 * half-close, refusals, limits and bad input on the wire.
 */

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include <rb2_conn.h>
#include <rb2_lcore.h>

#include "rb2_test.h"
#include "rb2_conn_test.h"

static struct rb2_xport *xp;
static struct rb2_conn_ep *a, *b;   /* a: the client, b: the server */
static struct rb2_tx *raw_ab;        /* a's sender half, for forged frames */

static void
setup(void)
{
	rb2_test_eal_init();
	xp = rb2_xport_open("shm", NULL);
	cr_assert_not_null(xp);
}

static void
teardown(void)
{
	rb2_conn_ep_destroy(a);
	rb2_conn_ep_destroy(b);
	a = b = NULL;
	rb2_xport_close(xp);
	rb2_test_eal_fini();
}

/* Two endpoints joined by a channel pair of 4096 slots of 64 B each way. */
static void
open_eps(const struct rb2_conn_ep_params *pa, const struct rb2_conn_ep_params *pb)
{
	struct rb2_chan_params p;

	rb2_chan_params_init(&p);
	p.slots = 4096;
	rb2_test_conn_eps(xp, &p, pa, pb, &a, &b, &raw_ab);
}

/* Poll both ends until @p done(arg) or a bound of passes. */
static int
pump(int (*done)(void *), void *arg, unsigned int passes)
{
	for (unsigned int i = 0; i < passes; i++) {
		if (done != NULL && done(arg))
			return 1;
		rb2_conn_ep_poll(a);
		rb2_conn_ep_poll(b);
	}
	return done == NULL ? 1 : done(arg);
}

/* Connect @p n connections from a to b's port 7; @p ca[i] and @p cb[i] are
 * the two ends of connection i. */
static void
connect_n(unsigned int n, int *ca, int *cb)
{
	rb2_test_conn_connect_n(a, b, n, ca, cb);
}

/* Send @p n messages of @p len bytes on a's @p ca, message i filled from
 * @p first + i (rb2_test_fill()), and flush. */
static void
send_filled(int ca, uint32_t n, uint32_t len, uint64_t first)
{
	static uint8_t buf[4096];

	cr_assert_leq(len, sizeof(buf));
	for (uint32_t i = 0; i < n; i++) {
		rb2_test_fill(buf, len, first + i);
		cr_assert_eq(rb2_conn_send(a, ca, buf, len), 0, "message %u", i);
	}
	rb2_conn_flush(a);
}

/* Message seq of connection conn: [u32 conn][u32 seq][pattern]. */
static uint32_t
make_msg(uint8_t *buf, uint32_t conn, uint32_t seq, uint64_t *rng)
{
	uint32_t len = 8 + (uint32_t)(rb2_test_rand(rng) % 1500);

	memcpy(buf, &conn, 4);
	memcpy(buf + 4, &seq, 4);
	rb2_test_fill(buf + 8, len - 8, (uint64_t)conn << 32 | seq);
	return len;
}

static void
check_msg(const uint8_t *buf, int len, uint32_t conn, uint32_t seq)
{
	uint32_t c, s;

	cr_assert_geq(len, 8, "conn %u message %u: length %d", conn, seq, len);
	memcpy(&c, buf, 4);
	memcpy(&s, buf + 4, 4);
	cr_assert_eq(c, conn, "message for conn %u arrived on conn %u", c, conn);
	cr_assert_eq(s, seq, "conn %u: message %u arrived when %u was due", conn, s, seq);
	cr_assert(rb2_test_check(buf + 8, (uint32_t)len - 8, (uint64_t)conn << 32 | seq),
		  "conn %u message %u: payload corrupt", conn, seq);
}

TestSuite(rb2_conn, .init = setup, .fini = teardown, .timeout = 120);

#define NCONN 1000
#define PER_CONN 40

/* Exactly once, in order, per connection: 1000 connections over one pair,
 * random sizes, sends interleaved at random across connections and both
 * directions, then half-close and close, and no slot left. */
Test(rb2_conn, thousand_connections_exactly_once_in_order)
{
	static int ca[NCONN], cb[NCONN];
	static uint32_t next_tx[2][NCONN], next_rx[2][NCONN];
	static uint8_t buf[2048];
	struct rb2_conn_ep_params pp;
	struct rb2_conn_ep_stats sa, sb;
	uint64_t rng = 42, left = 2ull * NCONN * PER_CONN, delivered = 0;

	rb2_conn_ep_params_init(&pp);
	pp.window = 8192;     /* small: credits run out and come back */
	open_eps(&pp, &pp);
	connect_n(NCONN, ca, cb);

	while (delivered < 2ull * NCONN * PER_CONN) {
		/* A random burst of sends... */
		for (int k = 0; k < 64 && left > 0; k++) {
			uint32_t i = (uint32_t)(rb2_test_rand(&rng) % NCONN);
			int dir = (int)(rb2_test_rand(&rng) & 1);
			struct rb2_conn_ep *ep = dir ? b : a;
			int cd = dir ? cb[i] : ca[i];
			uint32_t len;
			int ret;

			if (next_tx[dir][i] == PER_CONN)
				continue;
			len = make_msg(buf, i, next_tx[dir][i], &rng);
			ret = rb2_conn_send(ep, cd, buf, len);
			if (ret == -EAGAIN || ret == -ENOBUFS)
				continue;
			cr_assert_eq(ret, 0, "send: %d", ret);
			next_tx[dir][i]++;
			left--;
		}
		rb2_conn_flush(a);
		rb2_conn_flush(b);
		/* ... and reads of random connections. */
		for (int k = 0; k < 256; k++) {
			uint32_t i = (uint32_t)(rb2_test_rand(&rng) % NCONN);
			int dir = (int)(rb2_test_rand(&rng) & 1);
			int len = rb2_conn_recv(dir ? a : b, dir ? ca[i] : cb[i], buf, sizeof(buf));

			if (len == -EAGAIN)
				continue;
			check_msg(buf, len, i, next_rx[dir][i]++);
			delivered++;
		}
	}
	/* Half-close from a: b reads the end of its streams, still sends. */
	for (uint32_t i = 0; i < NCONN; i++)
		cr_assert_eq(rb2_conn_shutdown(a, ca[i]), 0);
	cr_assert_eq(rb2_conn_send(a, ca[0], "x", 1), -EPIPE);
	pump(NULL, NULL, 8);
	for (uint32_t i = 0; i < NCONN; i++) {
		cr_assert_eq(rb2_conn_recv(b, cb[i], buf, sizeof(buf)), 0, "conn %u: no EOF", i);
		cr_assert_eq(rb2_conn_send(b, cb[i], "late", 4), 0);
		cr_assert_eq(rb2_conn_close(b, cb[i]), 0);
	}
	pump(NULL, NULL, 8);
	for (uint32_t i = 0; i < NCONN; i++) {
		cr_assert_eq(rb2_conn_recv(a, ca[i], buf, sizeof(buf)), 4);
		cr_assert_eq(memcmp(buf, "late", 4), 0);
		cr_assert_eq(rb2_conn_recv(a, ca[i], buf, sizeof(buf)), 0);
		cr_assert_eq(rb2_conn_close(a, ca[i]), 0);
	}
	pump(NULL, NULL, 8);
	rb2_conn_ep_stats_get(a, &sa);
	rb2_conn_ep_stats_get(b, &sb);
	cr_expect_eq(sa.conns_open, 0, "a holds %" PRIu64 " slots", sa.conns_open);
	cr_expect_eq(sb.conns_open, 0, "b holds %" PRIu64 " slots", sb.conns_open);
	cr_expect_eq(sa.tx_msgs, sb.rx_msgs, "a sent %" PRIu64 ", b got %" PRIu64 " (ctrl a %" PRIu64 " b %" PRIu64 ")", sa.tx_msgs, sb.rx_msgs, sa.ctrl_frames_tx, sb.ctrl_frames_rx);
	cr_expect_eq(sb.tx_msgs, sa.rx_msgs);
	cr_expect_eq(sa.tx_bytes, sb.rx_bytes);
	cr_expect_eq(sb.tx_bytes, sa.rx_bytes);
	cr_expect_eq(sa.discarded_msgs + sb.discarded_msgs, 0);
	cr_expect_eq(sa.unknown_conn + sb.unknown_conn + sa.bad_frames + sb.bad_frames, 0);
	cr_expect_gt(sa.credit_waits + sb.credit_waits, 0, "the window never filled");
	/* A closed descriptor is refused. */
	cr_expect_eq(rb2_conn_send(a, ca[0], "x", 1), -EBADF);
	cr_expect_eq(rb2_conn_recv(a, ca[0], buf, 1), -EBADF);
}

/* The same across two lcores: a sends on lcore 1, b reads on lcore 0. */
struct mt_arg {
	int *ca;
	uint64_t seed;
	_Atomic int stop;
	int err;
};

static int
mt_sender(void *p)
{
	struct mt_arg *m = p;
	static uint8_t buf[2048];
	uint32_t next[NCONN] = {0};
	uint64_t rng = m->seed, left = (uint64_t)NCONN * PER_CONN;

	while (left > 0 && !atomic_load(&m->stop)) {
		uint32_t i = (uint32_t)(rb2_test_rand(&rng) % NCONN);
		uint32_t len;
		int ret;

		if (next[i] == PER_CONN)
			continue;
		len = make_msg(buf, i, next[i], &rng);
		ret = rb2_conn_send(a, m->ca[i], buf, len);
		if (ret == -EAGAIN || ret == -ENOBUFS) {
			rb2_conn_ep_poll(a);
			continue;
		}
		if (ret < 0) {
			m->err = ret;
			return -1;
		}
		next[i]++;
		left--;
	}
	rb2_conn_flush(a);
	/* Keep taking credits until the reader is done. */
	while (!atomic_load(&m->stop))
		rb2_conn_ep_poll(a);
	return 0;
}

Test(rb2_conn, thousand_connections_two_lcores)
{
	static int ca[NCONN], cb[NCONN];
	static uint32_t next_rx[NCONN];
	static uint8_t buf[2048];
	struct mt_arg m = { .ca = ca, .seed = 7 };
	uint64_t delivered = 0, rng = 3, spins = 0;
	struct rb2_conn_ep_params pp;

	rb2_conn_ep_params_init(&pp);
	pp.window = 8192;
	open_eps(&pp, &pp);
	connect_n(NCONN, ca, cb);
	cr_assert_eq(rb2_lcore_launch(mt_sender, &m, rte_get_next_lcore(-1, 1, 0)), 0);
	/* The reader takes the connections with news from the ready list,
	 * and reads each until -EAGAIN (edge-triggered). */
	while (delivered < (uint64_t)NCONN * PER_CONN && spins++ < 2000000000ull) {
		int ready[64];
		int k = rb2_conn_ep_ready(b, ready, RTE_DIM(ready));

		cr_assert_geq(k, 0, "ready: %d", k);
		for (int j = 0; j < k; j++) {
			uint32_t i;
			int len;

			for (i = 0; i < NCONN && cb[i] != ready[j]; i++)
				;
			cr_assert_lt(i, NCONN, "ready descriptor %#x is not ours", ready[j]);
			while ((len = rb2_conn_recv(b, cb[i], buf, sizeof(buf))) > 0) {
				check_msg(buf, len, i, next_rx[i]++);
				delivered++;
			}
			cr_assert_eq(len, -EAGAIN);
		}
	}
	(void)rng;
	atomic_store(&m.stop, 1);
	rb2_lcore_wait_all();
	cr_assert_eq(m.err, 0, "sender: %d", m.err);
	cr_assert_eq(delivered, (uint64_t)NCONN * PER_CONN);
}

/*
 * A stalled reader: connection 0's reader never reads. Its sender stops at
 * its window; the 99 others on the same channel pair deliver everything,
 * and the stalled one holds at most one window of the receiver's memory and
 * no ring slots.
 */
Test(rb2_conn, stalled_reader_blocks_only_itself)
{
	enum { N = 100, MSGS = 200, LEN = 512 };
	static int ca[N], cb[N];
	static uint32_t sent[N], got[N];
	static uint8_t buf[LEN];
	struct rb2_conn_ep_params pp;
	struct rb2_conn_info info;
	struct rb2_conn_ep_stats sa;
	uint64_t done = 0, rounds = 0;
	uint64_t rng = 1;

	rb2_conn_ep_params_init(&pp);
	pp.window = 16384;
	open_eps(&pp, &pp);
	connect_n(N, ca, cb);
	while (done < (uint64_t)(N - 1) * MSGS && rounds++ < 100000) {
		for (uint32_t i = 0; i < N; i++) {
			int ret;

			if (sent[i] == MSGS)
				continue;
			rb2_test_fill(buf, LEN, (uint64_t)i << 32 | sent[i]);
			ret = rb2_conn_send(a, ca[i], buf, LEN);
			if (ret == 0)
				sent[i]++;
			else
				cr_assert(ret == -EAGAIN || ret == -ENOBUFS, "send: %d", ret);
		}
		rb2_conn_flush(a);
		rb2_conn_ep_poll(b);
		for (uint32_t i = 1; i < N; i++) {
			int len = rb2_conn_recv(b, cb[i], buf, sizeof(buf));

			if (len == -EAGAIN)
				continue;
			cr_assert_eq(len, LEN);
			cr_assert(rb2_test_check(buf, LEN, (uint64_t)i << 32 | got[i]));
			got[i]++;
			done++;
		}
		(void)rb2_test_rand(&rng);
	}
	cr_assert_eq(done, (uint64_t)(N - 1) * MSGS, "the others delivered %" PRIu64
		     " of %u in %" PRIu64 " rounds", done, (N - 1) * MSGS, rounds);
	/* Stopped at its window, which b holds in its buffer. */
	cr_assert_lt(sent[0], MSGS);
	cr_assert_eq(rb2_conn_info_get(b, cb[0], &info), 0);
	cr_expect_leq(info.buffered, pp.window);
	cr_expect_gt(info.buffered, pp.window - 2 * (LEN + 8), "buffered %u", info.buffered);
	cr_assert_eq(rb2_conn_info_get(a, ca[0], &info), 0);
	cr_expect_lt(info.credit, LEN + 8u);
	rb2_conn_ep_stats_get(a, &sa);
	cr_expect_gt(sa.credit_waits, 0);
	/* Of b's receive buffers only the stalled connection's is lent. */
	rb2_conn_ep_stats_get(b, &sa);
	cr_expect_eq(sa.rx_buffers, (uint64_t)b->n_bufs + 1, "%" PRIu64 " buffers, %u free",
		     sa.rx_buffers, b->n_bufs);
	/* Reading it later delivers everything, in order. */
	while (got[0] < MSGS && rounds++ < 200000) {
		int len;

		if (sent[0] < MSGS) {
			rb2_test_fill(buf, LEN, sent[0]);
			if (rb2_conn_send(a, ca[0], buf, LEN) == 0)
				sent[0]++;
		}
		rb2_conn_flush(a);
		len = rb2_conn_recv(b, cb[0], buf, sizeof(buf));
		if (len == -EAGAIN) {
			rb2_conn_ep_poll(a);
			continue;
		}
		cr_assert_eq(len, LEN);
		cr_assert(rb2_test_check(buf, LEN, got[0]), "message %u", got[0]);
		got[0]++;
	}
	cr_assert_eq(got[0], MSGS);
}

/*
 * A small reservation where the ring was last published is built in the
 * endpoint's own lines and copied in at the commit (RB2_CONN_STAGE_MAX);
 * the next one of a burst goes in place. Reserved again, the room keeps
 * what was written, moved into the ring if it grows past the staging
 * lines; a cancelled one sends nothing. The receiver gets every byte.
 */
Test(rb2_conn, staged_reservations)
{
	struct rb2_conn_ep_params pp;
	const uint8_t *stage;
	uint8_t got[1024];
	void *w = NULL, *w2 = NULL;
	unsigned int seq;
	int ca, cb;

	rb2_conn_ep_params_init(&pp);
	open_eps(&pp, &pp);
	connect_n(1, &ca, &cb);
	stage = a->stage;
	cr_assert_eq(rb2_conn_flush(a), 0);
	cr_assert_eq(rb2_conn_reserve(a, ca, 100, &w), 0);
	cr_assert_eq(w, (const void *)stage, "a small reservation at the published tail is staged");
	rb2_test_fill(w, 100, 1);
	cr_assert_eq(rb2_conn_reserve(a, ca, 200, &w2), 0);
	cr_assert_eq(w2, w, "reserved again: the same staging lines");
	cr_assert(rb2_test_check(w2, 100, 1), "reserved again: what was written stays");
	cr_assert_eq(rb2_conn_commit(a, ca, 100), 0);
	/* A burst: staged while each commit is published at once (an idle
	 * sender publishes its first messages eagerly), in place after. */
	for (seq = 2; seq < 2 + 64; seq++) {
		int at_published = rb2_tx_tail(a->tx) == rb2_tx_published(a->tx);

		cr_assert_eq(rb2_conn_reserve(a, ca, 100, &w), 0);
		cr_assert_eq(w == (const void *)stage, at_published, "message %u", seq);
		rb2_test_fill(w, 100, seq);
		cr_assert_eq(rb2_conn_commit(a, ca, 100), 0);
		if (!at_published)
			break;
	}
	cr_assert_lt(seq, 2 + 64, "a burst never left the published tail behind");
	cr_assert_eq(rb2_conn_flush(a), 0);
	cr_assert_eq(rb2_conn_reserve(a, ca, 64, &w), 0);
	cr_assert_eq(w, (const void *)stage);
	rb2_test_fill(w, 64, seq + 1);
	cr_assert_eq(rb2_conn_reserve(a, ca, 1000, &w2), 0);
	cr_assert_neq(w2, (const void *)stage, "grown past the staging lines: in the ring");
	cr_assert(rb2_test_check(w2, 64, seq + 1), "grown: what was written moved with it");
	rb2_test_fill(w2, 1000, seq + 1);
	cr_assert_eq(rb2_conn_commit(a, ca, 1000), 0);
	cr_assert_eq(rb2_conn_flush(a), 0);
	cr_assert_eq(rb2_conn_reserve(a, ca, 50, &w), 0);
	cr_assert_eq(w, (const void *)stage);
	rb2_test_fill(w, 50, 0);
	rb2_conn_cancel(a, ca);
	cr_assert_eq(rb2_conn_commit(a, ca, 50), -EINVAL, "a cancelled reservation commits nothing");
	send_filled(ca, 1, 30, seq + 2);
	pump(NULL, NULL, 8);
	for (unsigned int i = 1; i <= seq; i++) {
		cr_assert_eq(rb2_conn_recv(b, cb, got, sizeof(got)), 100, "message %u", i);
		cr_assert(rb2_test_check(got, 100, i), "message %u", i);
	}
	cr_assert_eq(rb2_conn_recv(b, cb, got, sizeof(got)), 1000);
	cr_assert(rb2_test_check(got, 1000, seq + 1));
	cr_assert_eq(rb2_conn_recv(b, cb, got, sizeof(got)), 30, "nothing of the cancelled one");
	cr_assert(rb2_test_check(got, 30, seq + 2));
	cr_assert_eq(rb2_conn_recv(b, cb, got, sizeof(got)), -EAGAIN);
}

/* Zero-copy both ways: reserve/commit into the ring, views out of the
 * receive buffer, held until released (and credit only then). */
Test(rb2_conn, zero_copy_send_and_views)
{
	struct rb2_conn_ep_params pp;
	struct rb2_conn_info info;
	const void *v[4];
	int ca, cb, len;
	void *w = NULL;

	rb2_conn_ep_params_init(&pp);
	pp.window = 4096;
	open_eps(&pp, &pp);
	connect_n(1, &ca, &cb);
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(rb2_conn_reserve(a, ca, 1000, &w), 0);
		cr_assert_eq((uintptr_t)w % 8, 0);
		rb2_test_fill(w, 900, (uint64_t)i);
		cr_assert_eq(rb2_conn_commit(a, ca, 900), 0);
	}
	/* 4 x 908 bytes of the 4096 window: a fifth does not fit. */
	cr_assert_eq(rb2_conn_commit(a, ca, 900), -EINVAL, "commit without reserve");
	cr_assert_eq(rb2_conn_reserve(a, ca, 900, &w), -EAGAIN);
	pump(NULL, NULL, 4);
	for (int i = 0; i < 4; i++) {
		len = rb2_conn_recv_zc(b, cb, &v[i]);
		cr_assert_eq(len, 900);
		cr_assert(rb2_test_check(v[i], 900, (uint64_t)i));
	}
	cr_assert_eq(rb2_conn_recv_zc(b, cb, &v[0]), -EAGAIN);
	cr_assert_eq(rb2_conn_recv(b, cb, &len, sizeof(len)), -EBUSY);
	/* Views hold their credit. */
	pump(NULL, NULL, 4);
	cr_assert_eq(rb2_conn_reserve(a, ca, 900, &w), -EAGAIN);
	cr_assert_eq(rb2_conn_release(b, cb, 5), -EINVAL);
	cr_assert_eq(rb2_conn_release(b, cb, 4), 0);
	cr_assert_eq(rb2_conn_info_get(b, cb, &info), 0);
	cr_assert_eq(info.buffered, 0);
	pump(NULL, NULL, 4);
	cr_assert_eq(rb2_conn_info_get(a, ca, &info), 0);
	cr_assert_eq(info.credit, 4096, "credit %u after the release", info.credit);
	cr_assert_eq(rb2_conn_reserve(a, ca, 900, &w), 0);
}

/* A reservation left open holds back the endpoint's control frames, so
 * its credits: given up with rb2_conn_cancel(), they flow again. (A client
 * that reserved, then decided not to send, once starved its server.) */
Test(rb2_conn, cancelled_reservation_lets_credit_flow)
{
	struct rb2_conn_ep_params pp;
	struct rb2_conn_info info;
	uint8_t buf[1024];
	int ca, cb, sent = 0;
	void *w;

	rb2_conn_ep_params_init(&pp);
	pp.window = 4096;
	open_eps(&pp, &pp);
	connect_n(1, &ca, &cb);
	/* b fills its window towards a. */
	memset(buf, 7, sizeof(buf));
	while (rb2_conn_send(b, cb, buf, 1000) == 0)
		sent++;
	cr_assert_eq(sent, 4);
	/* a reserves room to b, then reads everything b sent: the credit
	 * it owes b waits behind the open reservation. */
	cr_assert_eq(rb2_conn_reserve(a, ca, 100, &w), 0);
	pump(NULL, NULL, 4);
	for (int i = 0; i < sent; i++)
		cr_assert_eq(rb2_conn_recv(a, ca, buf, sizeof(buf)), 1000);
	pump(NULL, NULL, 8);
	cr_assert_eq(rb2_conn_info_get(b, cb, &info), 0);
	cr_assert_lt(info.credit, 1000, "credit %u came through an open reservation",
		     info.credit);
	rb2_conn_cancel(a, ca);
	cr_assert_eq(rb2_conn_commit(a, ca, 100), -EINVAL, "a cancelled reservation commits");
	pump(NULL, NULL, 8);
	cr_assert_eq(rb2_conn_info_get(b, cb, &info), 0);
	cr_assert_eq(info.credit, 4096, "credit %u after the cancel", info.credit);
	cr_assert_eq(rb2_conn_send(b, cb, buf, 1000), 0);
}

struct refused_case {
	int cd;
	int *status;
};

static int
not_connecting(void *p)
{
	struct refused_case *r = p;

	*r->status = rb2_conn_status(a, r->cd);
	return *r->status != -EINPROGRESS;
}

/* Refusals, each with its reason; the local limit. */
Test(rb2_conn, refusals_name_the_reason)
{
	struct rb2_conn_ep_params pa, pb;
	struct rb2_conn_ep_stats st;
	int status, cd[8];
	struct refused_case r = { .status = &status };

	rb2_conn_ep_params_init(&pa);
	rb2_conn_ep_params_init(&pb);
	pa.max_conns = 6;
	pb.max_conns = 3;
	pb.backlog = 2;
	open_eps(&pa, &pb);

	r.cd = rb2_conn_connect(a, 9);       /* nothing listens */
	cr_assert_geq(r.cd, 0);
	cr_assert_eq(rb2_conn_status(a, r.cd), -EINPROGRESS);
	cr_assert(pump(not_connecting, &r, 16));
	cr_assert_eq(status, -ECONNREFUSED);
	cr_assert(strstr(rb2_conn_why(a, r.cd), "nothing listens") != NULL, "%s",
		  rb2_conn_why(a, r.cd));
	cr_assert_eq(rb2_conn_send(a, r.cd, "x", 1), -ECONNREFUSED);
	cr_assert_eq(rb2_conn_close(a, r.cd), 0);

	cr_assert_eq(rb2_conn_listen(b, 9, 0), 0);
	cr_assert_eq(rb2_conn_listen(b, 9, 0), -EADDRINUSE);
	for (int i = 0; i < 3; i++)
		cd[i] = rb2_conn_connect(a, 9);
	r.cd = cd[2];                         /* backlog 2, nobody accepts */
	cr_assert(pump(not_connecting, &r, 16));
	cr_assert_eq(status, -ECONNREFUSED);
	cr_assert(strstr(rb2_conn_why(a, cd[2]), "backlog") != NULL, "%s",
		  rb2_conn_why(a, cd[2]));
	cr_assert_eq(rb2_conn_status(a, cd[0]), 0);
	cr_assert_geq(rb2_conn_accept(b, 9), 0);
	cr_assert_geq(rb2_conn_accept(b, 9), 0);
	cr_assert_eq(rb2_conn_accept(b, 9), -EAGAIN);
	cr_assert_eq(rb2_conn_accept(b, 10), -EINVAL);
	cd[3] = rb2_conn_connect(a, 9);       /* b's third slot */
	pump(NULL, NULL, 8);
	cr_assert_eq(rb2_conn_status(a, cd[3]), 0);
	cd[4] = rb2_conn_connect(a, 9);       /* b holds max_conns = 3 */
	r.cd = cd[4];
	cr_assert(pump(not_connecting, &r, 16));
	cr_assert_eq(status, -ECONNREFUSED);
	cr_assert(strstr(rb2_conn_why(a, cd[4]), "max_conns") != NULL, "%s",
		  rb2_conn_why(a, cd[4]));
	/* a's own limit: 6 slots, 2 of them held by refused connections not
	 * closed yet. */
	cd[5] = rb2_conn_connect(a, 9);
	cr_assert_geq(cd[5], 0);
	cr_assert_eq(rb2_conn_connect(a, 9), -EMFILE);
	pump(NULL, NULL, 8);
	cr_assert_eq(rb2_conn_status(a, cd[5]), -ECONNREFUSED);
	rb2_conn_ep_stats_get(b, &st);
	cr_expect_eq(st.refused_sent, 4, "b refused %" PRIu64, st.refused_sent);
	rb2_conn_ep_stats_get(a, &st);
	cr_expect_eq(st.refused_recv, 4, "a was refused %" PRIu64, st.refused_recv);
	/* Closing refused ones frees their slots. */
	cr_assert_eq(rb2_conn_close(a, cd[5]), 0);
	cr_assert_geq(rb2_conn_connect(a, 9), 0);
}

/* Forged and bad frames on the wire, oversized sends, and a window overrun. */
Test(rb2_conn, bad_input_is_counted_and_dropped)
{
	struct rb2_conn_ep_params pp;
	struct rb2_conn_ep_stats st;
	static uint8_t big[8192];
	uint8_t f[16] = {0};
	int ca, cb, status;
	uint32_t cid;

	rb2_conn_ep_params_init(&pp);
	pp.window = 4096;
	open_eps(&pp, &pp);
	connect_n(1, &ca, &cb);
	cr_assert_eq(rb2_conn_max_msg(a), 4096 - 8);
	cr_assert_eq(rb2_conn_send(a, ca, big, 4096 - 7), -EMSGSIZE);
	cr_assert_eq(rb2_conn_send(a, ca, big, 0), -EINVAL);
	cr_assert_eq(rb2_conn_send(a, 12345, big, 1), -EBADF);
	cr_assert_eq(rb2_conn_send(a, -1, big, 1), -EBADF);

	/* Data for a connection that does not exist. */
	cid = 0x00050077;
	memcpy(f, &cid, 4);
	f[4] = 1;                             /* DATA */
	cr_assert_eq(rb2_tx_send(raw_ab, f, sizeof(f)), 0);
	cr_assert_eq(rb2_tx_send(raw_ab, f, 5), 0);   /* shorter than a header */
	f[4] = 99;                            /* unknown type */
	cr_assert_eq(rb2_tx_send(raw_ab, f, 8), 0);
	/* Marked as a run's (no header), after a frame that is not data. */
	{
		void *slot = NULL;

		cr_assert_eq(rb2_tx_reserve(raw_ab, 16, &slot), 0);
		memset(slot, 0, 16);
		rb2_tx_commit(raw_ab, 16 | RB2_MSG_MARK);
	}
	/* A service's frames, to an endpoint that has none: a READ asked of
	 * it, and a READ it never asked for said done. */
	{
		uint8_t q[RB2_CONN_HDR_LEN + sizeof(struct rb2_conn_readreq)] = {0};
		uint64_t h = (uint64_t)RB2_CONN_CID_NONE | (uint64_t)RB2_CONN_FR_READREQ << 32;

		memcpy(q, &h, sizeof(h));
		cr_assert_eq(rb2_tx_send(raw_ab, q, sizeof(q)), 0);
		h = (uint64_t)RB2_CONN_CID_NONE | (uint64_t)RB2_CONN_FR_READDONE << 32 |
			(uint64_t)1 << 48;
		memcpy(q, &h, sizeof(h));
		cr_assert_eq(rb2_tx_send(raw_ab, q, RB2_CONN_HDR_LEN +
					 sizeof(struct rb2_conn_refdone)), 0);
	}
	rb2_tx_flush(raw_ab);
	pump(NULL, NULL, 4);
	rb2_conn_ep_stats_get(b, &st);
	cr_expect_eq(st.unknown_conn, 1);
	cr_expect_eq(st.bad_frames, 5);
	/* The connection is unharmed. */
	cr_assert_eq(rb2_conn_send(a, ca, "ok", 2), 0);
	pump(NULL, NULL, 4);
	cr_assert_eq(rb2_conn_recv(b, cb, big, sizeof(big)), 2);

	/* A sender that ignores the credit: b resets the connection. The two
	 * messages that fit its window stay readable, intact, in order,
	 * whatever else the sender sends after the reset. */
	cid = (uint32_t)cb;
	memcpy(big, &cid, 4);
	big[4] = 1;
	for (int i = 0; i < 4; i++) {       /* the last one within the window */
		uint32_t len = i < 3 ? 2000 : 40;

		rb2_test_fill(big + 8, len, (uint64_t)i);
		cr_assert_eq(rb2_tx_send(raw_ab, big, 8 + len), 0);
	}
	rb2_tx_flush(raw_ab);
	pump(NULL, NULL, 8);
	rb2_conn_ep_stats_get(b, &st);
	cr_expect_eq(st.window_violations, 1);
	cr_expect_eq(st.discarded_msgs, 1, "the message after the reset: %" PRIu64,
		     st.discarded_msgs);
	cr_expect_eq(rb2_conn_status(b, cb), -EPROTO);
	status = rb2_conn_status(a, ca);
	cr_expect_eq(status, -ECONNRESET, "the sender's end: %d", status);
	cr_expect(strstr(rb2_conn_why(a, ca), "window") != NULL, "%s", rb2_conn_why(a, ca));
	cr_expect_eq(rb2_conn_send(a, ca, "x", 1), -ECONNRESET);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(rb2_conn_recv(b, cb, big, sizeof(big)), 2000, "message %d", i);
		cr_assert(rb2_test_check(big, 2000, (uint64_t)i), "message %d is not the one sent", i);
	}
	cr_expect_eq(rb2_conn_recv(b, cb, big, sizeof(big)), -EPROTO);
}

/*
 * Receive buffers are the endpoint's, lent to a connection only while it
 * holds unread data: 1000 idle connections hold none, a reader that keeps
 * up on all of them reuses one, and a connection whose reader stalls keeps
 * its own while the others go on. (b->n_bufs, the free ones, is read on the
 * endpoint's own thread.)
 */
Test(rb2_conn, receive_buffers_are_lent_while_data_waits)
{
	enum { N = 1000, LEN = 256 };
	static int ca[N], cb[N];
	static uint8_t buf[LEN];
	struct rb2_conn_ep_stats st;

	open_eps(NULL, NULL);
	connect_n(N, ca, cb);
	rb2_conn_ep_stats_get(b, &st);
	cr_expect_eq(st.rx_buffers, 0, "idle connections hold %" PRIu64 " buffers",
		     st.rx_buffers);
	for (int r = 0; r < 3; r++) {
		for (uint32_t i = 0; i < N; i++) {
			rb2_test_fill(buf, LEN, (uint64_t)r << 32 | i);
			cr_assert_eq(rb2_conn_send(a, ca[i], buf, LEN), 0);
			rb2_conn_flush(a);
			cr_assert_eq(rb2_conn_recv(b, cb[i], buf, LEN), LEN, "round %d conn %u", r, i);
			cr_assert(rb2_test_check(buf, LEN, (uint64_t)r << 32 | i));
		}
	}
	rb2_conn_ep_stats_get(b, &st);
	cr_expect_eq(st.rx_buffers, 1, "%" PRIu64 " buffers for 3000 messages read at once",
		     st.rx_buffers);
	cr_expect_eq(b->n_bufs, 1);
	/* Connection 0's reader stalls with a message; 1 reads on. Frames of
	 * two connections interleaved are filed into their buffers. */
	for (uint32_t i = 0; i < 2; i++) {
		rb2_test_fill(buf, LEN, i);
		cr_assert_eq(rb2_conn_send(a, ca[i], buf, LEN), 0);
	}
	rb2_conn_flush(a);
	cr_assert_eq(rb2_conn_recv(b, cb[1], buf, LEN), LEN);
	cr_assert(rb2_test_check(buf, LEN, 1));
	rb2_conn_ep_stats_get(b, &st);
	cr_expect_eq(st.rx_buffers, 2);
	cr_expect_eq(b->n_bufs, 1, "connection 0 holds its buffer");
	/* A view holds it too; its release gives it back. */
	const void *view;
	cr_assert_eq(rb2_conn_recv_zc(b, cb[0], &view), LEN);
	cr_assert(rb2_test_check(view, LEN, 0));
	cr_expect_eq(b->n_bufs, 1, "a view holds the buffer");
	cr_assert_eq(rb2_conn_release(b, cb[0], 1), 0);
	cr_expect_eq(b->n_bufs, 2);
	/* Closing with data unread gives the buffer back. */
	cr_assert_eq(rb2_conn_send(a, ca[2], buf, LEN), 0);
	rb2_conn_flush(a);
	rb2_conn_ep_poll(b);
	cr_expect_eq(b->n_bufs, 1);
	cr_assert_eq(rb2_conn_close(b, cb[2]), 0);
	cr_expect_eq(b->n_bufs, 2);
	rb2_conn_ep_stats_get(b, &st);
	cr_expect_eq(st.rx_buffers, 2);
	cr_expect_eq(st.discarded_msgs, 1);
}

/*
 * recv() copies a run of one connection's frames straight from the ring
 * (one copy, no receive buffer), and nothing around a run loses its place:
 * another connection's reader waits on it a bounded number of calls, a
 * message longer than the caller's buffer stays, a view taken after a
 * direct read is the next message, and the end of a stream comes last.
 */
/* Sends of a run (rb2_conn_core.h): @p n messages of @p len on @p cd,
 * each [u32 conn][u32 seq][pattern]; @p zc through reserve and commit. */
static void
send_run(int cd, uint32_t conn, uint32_t *seq, unsigned int n, uint32_t len, int zc)
{
	static uint8_t buf[256];

	for (unsigned int i = 0; i < n; i++) {
		void *p = buf;

		if (zc)
			cr_assert_eq(rb2_conn_reserve(a, cd, len, &p), 0);
		memcpy(p, &conn, 4);
		memcpy((uint8_t *)p + 4, seq, 4);
		rb2_test_fill((uint8_t *)p + 8, len - 8, (uint64_t)conn << 32 | *seq);
		cr_assert_eq(zc ? rb2_conn_commit(a, cd, len) : rb2_conn_send(a, cd, buf, len), 0);
		(*seq)++;
	}
}

/*
 * A connection's DATA frame of one slot right after one of its own goes
 * without a header, marked by the ring: a 64 B message takes one 64 B slot,
 * not two (a larger one keeps its header).
 * Runs of three connections, across polls, through the three ways to read
 * (straight from the ring, filed into a receive buffer, zero copy), broken
 * by a control frame; contents, order, slots and counters checked.
 */
Test(rb2_conn, a_run_of_frames_goes_without_headers)
{
	static uint8_t buf[256];
	struct rb2_conn_ep_stats sa, sb;
	struct rb2_tx_stats ts;
	uint32_t seq[3] = {0}, want[3] = {0};
	uint64_t tail0, bytes = 0;
	int ca[3], cb[3], len;
	const void *view;

	open_eps(NULL, NULL);
	connect_n(3, ca, cb);
	tail0 = raw_ab->tail;
	/* 40 on 0: more than a poll takes (32), so the run goes on across
	 * polls; 5 on 1 and 3 larger on 0: a burst of several connections,
	 * filed; 4 on 2 reserved and committed; 1's FIN; 2 on 2 again. */
	send_run(ca[0], 0, &seq[0], 40, 64, 0);
	send_run(ca[1], 1, &seq[1], 5, 64, 0);
	send_run(ca[0], 0, &seq[0], 3, 100, 0);
	send_run(ca[2], 2, &seq[2], 4, 64, 1);
	cr_assert_eq(rb2_conn_shutdown(a, ca[1]), 0);
	send_run(ca[2], 2, &seq[2], 2, 64, 0);
	rb2_conn_flush(a);
	bytes = 45 * 64 + 3 * 100 + 6 * 64;
	/* Slots of 64 B: a run's first 64 B message takes two (its header
	 * makes it 72 B), the others one; 100 B, more than a slot, keeps its
	 * header (two slots); the FIN one. 41 + 6 + 6 + 5 + 1 + 3. */
	cr_expect_eq(raw_ab->tail - tail0, 62, "%" PRIu64 " slots", raw_ab->tail - tail0);
	rb2_tx_stats_get(raw_ab, &ts);
	cr_expect_eq(ts.marked, 39 + 4 + 3 + 1, "%" PRIu64 " marked", (uint64_t)ts.marked);

	/* Connection 0's 40: a run left in the ring, twice (the second one
	 * starts marked: its connection is the previous poll's). */
	for (int i = 0; i < 40; i++) {
		len = rb2_conn_recv(b, cb[0], buf, sizeof(buf));
		check_msg(buf, len, 0, want[0]++);
	}
	/* The rest comes in one burst of several connections: filed. */
	cr_assert_gt(rb2_conn_ep_poll(b), 0);
	for (int i = 0; i < 3; i++) {
		len = rb2_conn_recv(b, cb[0], buf, sizeof(buf));
		cr_assert_eq(len, 100);
		check_msg(buf, len, 0, want[0]++);
	}
	for (int i = 0; i < 5; i++) {
		len = rb2_conn_recv(b, cb[1], buf, sizeof(buf));
		check_msg(buf, len, 1, want[1]++);
	}
	cr_expect_eq(rb2_conn_recv(b, cb[1], buf, sizeof(buf)), 0, "connection 1's end");
	for (int i = 0; i < 6; i++) {
		len = rb2_conn_recv_zc(b, cb[2], &view);
		check_msg(view, len, 2, want[2]++);
		cr_assert_eq(rb2_conn_release(b, cb[2], 1), 0);
	}
	cr_expect_eq(rb2_conn_recv(b, cb[2], buf, sizeof(buf)), -EAGAIN);
	rb2_conn_ep_stats_get(a, &sa);
	rb2_conn_ep_stats_get(b, &sb);
	cr_expect_eq(sa.tx_msgs, 54);
	cr_expect_eq(sb.rx_msgs, 54);
	cr_expect_eq(sa.tx_bytes, bytes, "sent %" PRIu64 " bytes", sa.tx_bytes);
	cr_expect_eq(sb.rx_bytes, bytes, "received %" PRIu64 " bytes", sb.rx_bytes);
	cr_expect_eq(sb.bad_frames + sb.unknown_conn + sb.discarded_msgs, 0);
}

/* Packed slots (8-byte, not whole lines) cost a message its stride with or
 * without the header: there nothing is marked (marked frames measured
 * slower there, doc/eval/conn.md). */
Test(rb2_conn, packed_slots_keep_every_header)
{
	struct rb2_chan_params p;
	struct rb2_tx_stats ts;
	uint32_t seq = 0, want = 0;
	static uint8_t buf[64];
	int ca, cb, len;

	rb2_chan_params_init(&p);
	p.flags |= RB2_CHAN_F_UNALIGNED;
	p.slot_size = 72;
	rb2_test_conn_eps(xp, &p, NULL, NULL, &a, &b, &raw_ab);
	connect_n(1, &ca, &cb);
	send_run(ca, 0, &seq, 20, 64, 0);
	rb2_conn_flush(a);
	rb2_tx_stats_get(raw_ab, &ts);
	cr_expect_eq(ts.marked, 0);
	for (int i = 0; i < 20; i++) {
		len = rb2_conn_recv(b, cb, buf, sizeof(buf));
		check_msg(buf, len, 0, want++);
	}
}

Test(rb2_conn, a_run_is_read_straight_from_the_ring)
{
	enum { RUN = 20, LEN = 100 };
	static uint8_t buf[LEN];
	struct rb2_conn_ep_stats st;
	uint32_t got = 0, read = 0;
	const void *view;
	int ca[2], cb[2], len, calls = 0;

	open_eps(NULL, NULL);
	connect_n(2, ca, cb);
	/* A run read as it comes: no receive buffer is ever made. */
	for (uint32_t i = 0; i < RUN; i++) {
		rb2_test_fill(buf, LEN, i);
		cr_assert_eq(rb2_conn_send(a, ca[0], buf, LEN), 0);
	}
	rb2_conn_flush(a);
	for (uint32_t i = 0; i < RUN; i++, read++) {
		cr_assert_eq(rb2_conn_recv(b, cb[0], buf, LEN), LEN, "message %u", i);
		cr_assert(rb2_test_check(buf, LEN, i), "message %u", i);
	}
	rb2_conn_ep_stats_get(b, &st);
	cr_expect_eq(st.rx_buffers, 0, "%" PRIu64 " receive buffers for a run read at once",
		     st.rx_buffers);
	/* Connection 0's run ahead of connection 1's messages and its end:
	 * 1's reader gets them all, then the end. The run waits for 0's
	 * reader through 64 calls on others, then is filed (rb2_conn_in.c's
	 * PEND_SKIPS_MAX). */
	for (uint32_t i = 0; i < RUN; i++) {
		rb2_test_fill(buf, LEN, 100 + i);
		cr_assert_eq(rb2_conn_send(a, ca[0], buf, LEN), 0);
	}
	for (uint32_t i = 0; i < 3; i++) {
		rb2_test_fill(buf, LEN, 200 + i);
		cr_assert_eq(rb2_conn_send(a, ca[1], buf, LEN), 0);
	}
	cr_assert_eq(rb2_conn_shutdown(a, ca[1]), 0);
	rb2_conn_ep_poll(a);
	while ((len = rb2_conn_recv(b, cb[1], buf, LEN)) != 0) {
		cr_assert_lt(calls++, 72, "connection 1 still waits after %d calls", calls);
		if (len == -EAGAIN)
			continue;
		cr_assert_eq(len, LEN, "connection 1: %d", len);
		cr_assert(rb2_test_check(buf, LEN, 200 + got), "connection 1: message %u", got);
		got++;
		read++;
	}
	cr_assert_eq(got, 3);
	for (uint32_t i = 0; i < RUN; i++, read++) {
		cr_assert_eq(rb2_conn_recv(b, cb[0], buf, LEN), LEN);
		cr_assert(rb2_test_check(buf, LEN, 100 + i), "connection 0: message %u", i);
	}
	/* Too long for the buffer given: it stays, for a larger one. */
	for (uint32_t i = 0; i < 2; i++) {
		rb2_test_fill(buf, LEN, 300 + i);
		cr_assert_eq(rb2_conn_send(a, ca[0], buf, LEN), 0);
	}
	rb2_conn_flush(a);
	cr_assert_eq(rb2_conn_recv(b, cb[0], buf, LEN / 2), -EMSGSIZE);
	cr_assert_eq(rb2_conn_next_len(b, cb[0]), LEN);
	for (uint32_t i = 0; i < 2; i++, read++) {
		cr_assert_eq(rb2_conn_recv(b, cb[0], buf, LEN), LEN);
		cr_assert(rb2_test_check(buf, LEN, 300 + i));
	}
	/* A view after a direct read is the next message. */
	for (uint32_t i = 0; i < 10; i++) {
		rb2_test_fill(buf, LEN, 400 + i);
		cr_assert_eq(rb2_conn_send(a, ca[0], buf, LEN), 0);
	}
	rb2_conn_flush(a);
	cr_assert_eq(rb2_conn_recv(b, cb[0], buf, LEN), LEN);
	cr_assert(rb2_test_check(buf, LEN, 400));
	cr_assert_eq(rb2_conn_recv_zc(b, cb[0], &view), LEN);
	cr_assert(rb2_test_check(view, LEN, 401), "the view is not the next message");
	cr_assert_eq(rb2_conn_release(b, cb[0], 1), 0);
	read += 2;
	for (uint32_t i = 2; i < 10; i++, read++) {
		cr_assert_eq(rb2_conn_recv(b, cb[0], buf, LEN), LEN);
		cr_assert(rb2_test_check(buf, LEN, 400 + i), "message %u after the view", 400 + i);
	}
	cr_assert_eq(rb2_conn_recv(b, cb[0], buf, LEN), -EAGAIN);
	rb2_conn_ep_stats_get(b, &st);
	cr_expect_eq(st.rx_msgs, read);
	cr_expect_eq(st.rx_bytes, (uint64_t)read * LEN);
	cr_expect_eq(st.discarded_msgs, 0);
}

/* rb2_conn_backlog() counts what the polls filed, without polling. */
Test(rb2_conn, backlog_counts_filed_connects_without_polling)
{
	int cd[3];

	open_eps(NULL, NULL);
	cr_assert_eq(rb2_conn_backlog(b, 9), -EINVAL, "a port nobody listens on");
	cr_assert_eq(rb2_conn_listen(b, 9, 0), 0);
	for (int i = 0; i < 3; i++)
		cr_assert_geq(cd[i] = rb2_conn_connect(a, 9), 0);
	rb2_conn_flush(a);
	cr_assert_eq(rb2_conn_backlog(b, 9), 0, "counted before a poll");
	rb2_conn_ep_poll(b);
	cr_assert_eq(rb2_conn_backlog(b, 9), 3);
	cr_assert_geq(rb2_conn_accept(b, 9), 0);
	cr_assert_eq(rb2_conn_backlog(b, 9), 2);
	cr_assert_eq(rb2_conn_unlisten(b, 9), 0);
	cr_assert_eq(rb2_conn_backlog(b, 9), -EINVAL);
}

/* rb2_conn_recv_ready() says whether a receive would poll: before the
 * poll no, after it yes for a filed message and for a run left in the
 * ring, no again once they are read (the next one unpolled stays unseen),
 * and yes for the end of the stream and for a closed descriptor. */
Test(rb2_conn, recv_ready_says_whether_a_receive_would_poll)
{
	enum { LEN = 100, RUN = 12 };
	static uint8_t buf[LEN];
	int ca, cb, cds[4];
	const void *view;

	open_eps(NULL, NULL);
	connect_n(1, &ca, &cb);
	cr_assert_eq(rb2_conn_recv_ready(b, cb), 0, "ready with nothing sent");
	rb2_test_fill(buf, LEN, 1);
	cr_assert_eq(rb2_conn_send(a, ca, buf, LEN), 0);
	rb2_conn_flush(a);
	cr_assert_eq(rb2_conn_recv_ready(b, cb), 0, "ready before any poll");
	cr_assert_eq(rb2_conn_ep_ready(b, cds, 4), 1);
	cr_assert_eq(rb2_conn_recv_ready(b, cb), 1, "a filed message, not ready");
	/* A second message lands unpolled: the first is read, then the
	 * connection says a receive would poll, and that receive finds it. */
	rb2_test_fill(buf, LEN, 2);
	cr_assert_eq(rb2_conn_send(a, ca, buf, LEN), 0);
	rb2_conn_flush(a);
	cr_assert_eq(rb2_conn_recv_zc(b, cb, &view), LEN);
	cr_assert(rb2_test_check(view, LEN, 1));
	cr_assert_eq(rb2_conn_release(b, cb, 1), 0);
	cr_assert_eq(rb2_conn_recv_ready(b, cb), 0, "ready with only the ring's message");
	cr_assert_eq(rb2_conn_recv(b, cb, buf, LEN), LEN);
	cr_assert(rb2_test_check(buf, LEN, 2));
	/* A run the poll left in the ring for recv(). (The ready list still
	 * names the connection, for the message recv() polled in: taken
	 * first, so that the next rb2_conn_ep_ready() polls.) */
	cr_assert_eq(rb2_conn_ep_ready(b, cds, 4), 1);
	cr_assert_eq(rb2_conn_recv_ready(b, cb), 0);
	send_filled(ca, RUN, LEN, 10);
	cr_assert_eq(rb2_conn_ep_ready(b, cds, 4), 1);
	for (uint32_t i = 0; i < RUN; i++) {
		cr_assert_eq(rb2_conn_recv_ready(b, cb), 1, "run message %u not ready", i);
		cr_assert_eq(rb2_conn_recv(b, cb, buf, LEN), LEN);
		cr_assert(rb2_test_check(buf, LEN, 10 + i), "run message %u", i);
	}
	cr_assert_eq(rb2_conn_recv_ready(b, cb), 0, "ready after the run");
	/* The end, once polled, and a closed descriptor: the receive says. */
	cr_assert_eq(rb2_conn_shutdown(a, ca), 0);
	rb2_conn_ep_poll(a);
	rb2_conn_ep_poll(b);
	cr_assert_eq(rb2_conn_recv_ready(b, cb), 1, "the end, not ready");
	cr_assert_eq(rb2_conn_recv(b, cb, buf, LEN), 0);
	cr_assert_eq(rb2_conn_close(b, cb), 0);
	cr_assert_eq(rb2_conn_recv_ready(b, cb), 1, "a closed descriptor, not ready");
	cr_assert_eq(rb2_conn_recv(b, cb, buf, LEN), -EBADF);
}

/* A run the poll left in the ring, met by a zero-copy receive: filed
 * without a poll (a message sent since stays in the ring, unseen), viewed
 * in order; the next run is filed by the poll itself, and a copying
 * receive then reads it from the buffer. */
Test(rb2_conn, a_viewing_reader_gets_its_runs_filed)
{
	enum { LEN = 100, RUN = 12 };
	static uint8_t buf[LEN];
	int ca, cb, cds[4];
	const void *view;

	open_eps(NULL, NULL);
	connect_n(1, &ca, &cb);
	send_filled(ca, RUN, LEN, 10);
	cr_assert_eq(rb2_conn_ep_ready(b, cds, 4), 1);
	cr_assert_eq(b->pend_n - b->pend_i, RUN, "the run was not left in the ring");
	cr_assert_eq(b->zc_reader, 0);
	send_filled(ca, 1, LEN, 99);
	for (uint32_t i = 0; i < RUN; i++) {
		cr_assert_eq(rb2_conn_recv_zc(b, cb, &view), LEN, "run message %u", i);
		cr_assert(rb2_test_check(view, LEN, 10 + i), "run message %u", i);
		cr_assert_eq(b->pend_n, 0, "the run stayed in the ring after a view");
	}
	cr_assert_eq(b->zc_reader, 1);
	cr_assert_eq(rb2_conn_recv_ready(b, cb), 0, "the unpolled message seen");
	cr_assert_eq(rb2_conn_release(b, cb, RUN), 0);
	cr_assert_eq(rb2_conn_recv(b, cb, buf, LEN), LEN);
	cr_assert(rb2_test_check(buf, LEN, 99));
	send_filled(ca, RUN, LEN, 30);
	cr_assert_eq(rb2_conn_ep_ready(b, cds, 4), 1);
	cr_assert_eq(b->pend_n, 0, "a run left in the ring for a viewing reader");
	for (uint32_t i = 0; i < RUN; i++) {
		cr_assert_eq(rb2_conn_recv(b, cb, buf, LEN), LEN, "filed message %u", i);
		cr_assert(rb2_test_check(buf, LEN, 30 + i), "filed message %u", i);
	}
}

/*
 * A poll takes about 64 KiB of frames (what it copies into receive buffers
 * is read back while still in the cache): after polls of large frames it
 * takes fewer, after full polls of small ones as many as it may again.
 * Every message still arrives once, in order.
 */
Test(rb2_conn, a_poll_takes_a_bounded_number_of_bytes)
{
	enum { BIG = 16384, SMALL = 64 };
	struct rb2_conn_ep_params pp;
	static uint8_t buf[BIG];
	uint32_t sent = 0, got = 0;
	int ca, cb, n = 0;

	rb2_conn_ep_params_init(&pp);
	pp.window = 1u << 20;
	open_eps(&pp, &pp);
	connect_n(1, &ca, &cb);
	for (int round = 0; round < 6; round++) {
		for (int k = 0; k < 12; k++, sent++) {
			rb2_test_fill(buf, BIG, sent);
			cr_assert_eq(rb2_conn_send(a, ca, buf, BIG), 0);
		}
		rb2_conn_flush(a);
		while ((n = rb2_conn_ep_poll(b)) > 0)
			if (round > 2)
				cr_expect_leq(n, 4, "round %d: a poll took %d frames of %d bytes",
					      round, n, BIG);
		for (int len; (len = rb2_conn_recv(b, cb, buf, BIG)) > 0; got++) {
			cr_assert_eq(len, BIG);
			cr_assert(rb2_test_check(buf, BIG, got), "message %u", got);
		}
		cr_assert_eq(got, sent);
		rb2_conn_ep_poll(a);          /* credits */
	}
	/* Small frames: the poll grows back to 32 frames. */
	for (int round = 0; round < 8; round++) {
		for (int k = 0; k < 64; k++, sent++) {
			rb2_test_fill(buf, SMALL, sent);
			cr_assert_eq(rb2_conn_send(a, ca, buf, SMALL), 0);
		}
		rb2_conn_flush(a);
		n = rb2_conn_ep_poll(b);
		for (int len; (len = rb2_conn_recv(b, cb, buf, BIG)) > 0; got++) {
			cr_assert_eq(len, SMALL);
			cr_assert(rb2_test_check(buf, SMALL, got), "message %u", got);
		}
		cr_assert_eq(got, sent);
		rb2_conn_ep_poll(a);
	}
	cr_expect_eq(n, 32, "the last poll of small frames took %d", n);
}

/* Blocking mode: a reader thread sleeps on its doorbell, costs (almost)
 * no CPU while idle, and wakes when the peer sends. */
struct sleeper {
	int cd;
	_Atomic int got;
	double cpu_ms;
	int err;
};

static double
thread_cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int
sleeper_main(void *p)
{
	struct sleeper *s = p;
	double t0 = thread_cpu_ms();
	char buf[16];
	int ret;

	for (int i = 0; i < 50 && atomic_load(&s->got) == 0; i++) {
		ret = rb2_conn_ep_wait(b, 20, 2000);
		if (ret < 0) {
			s->err = ret;
			return -1;
		}
		if (rb2_conn_recv(b, s->cd, buf, sizeof(buf)) == 5)
			atomic_store(&s->got, 1);
	}
	s->cpu_ms = thread_cpu_ms() - t0;
	return 0;
}

Test(rb2_conn, blocking_wait_sleeps_and_wakes)
{
	struct rb2_conn_ep_stats st;
	struct sleeper s = {0};
	struct timespec nap = { .tv_nsec = 300 * 1000 * 1000 };
	unsigned int lc = rte_get_next_lcore(-1, 1, 0);
	int ca;

	open_eps(NULL, NULL);
	connect_n(1, &ca, &s.cd);
	cr_assert_geq(rb2_conn_ep_fd(b), 0);
	cr_assert_eq(rb2_lcore_launch(sleeper_main, &s, lc), 0);
	nanosleep(&nap, NULL);              /* the reader is asleep by now */
	rb2_conn_ep_poll(a);                /* takes its sleep notice */
	cr_assert_eq(rb2_conn_send(a, ca, "hello", 5), 0);
	cr_assert_eq(rb2_conn_flush(a), 0); /* rings */
	cr_assert_eq(rb2_lcore_wait(lc), 0, "reader: %d", s.err);
	cr_assert_eq(atomic_load(&s.got), 1, "the reader never got the message");
	rb2_conn_ep_stats_get(b, &st);
	cr_expect_geq(st.sleeps, 1);
	rb2_conn_ep_stats_get(a, &st);
	cr_expect_eq(st.doorbells_rung, 1);
	/* 300 ms idle, 20 us of it spinning: a few ms of CPU at most. */
	cr_expect_lt(s.cpu_ms, 30.0, "the idle reader used %.1f ms of CPU", s.cpu_ms);
}

/* Too many connections: a clear limit at max_conns, not a crash. */
Test(rb2_conn, parameters_are_checked)
{
	struct rb2_conn_ep_params pp;
	struct rb2_chan_params p;
	struct rb2_tx *tx;
	struct rb2_rx *rx;

	rb2_chan_params_init(&p);
	tx = rb2_tx_create("pc", xp, &p);
	rx = rb2_rx_create("pc", xp, &p);
	cr_assert(tx && rx);
	rb2_conn_ep_params_init(&pp);
	pp.max_conns = RB2_CONN_MAX + 1;
	cr_expect_null(rb2_conn_ep_create("x", tx, rx, &pp));
	cr_expect_eq(rte_errno, EINVAL);
	rb2_conn_ep_params_init(&pp);
	pp.window = 5000;
	cr_expect_null(rb2_conn_ep_create("x", tx, rx, &pp));
	rb2_conn_ep_params_init(&pp);
	pp.max_msg = 40000;                    /* the channel carries 32 KiB */
	pp.window = 65536;
	cr_expect_null(rb2_conn_ep_create("x", tx, rx, &pp));
	cr_expect_eq(rte_errno, EMSGSIZE);
	rb2_tx_destroy(tx);
	rb2_rx_destroy(rx);
}

/* An endpoint destroyed normally says goodbye: the peer's endpoint ends with
 * -ESHUTDOWN, a stream the departing side had ended (FIN) reads to its end
 * with 0, and one it left open reads what came, then fails with the reason. */
Test(rb2_conn, a_goodbye_ends_finished_streams_cleanly_and_resets_the_rest)
{
	struct rb2_conn_ep_params p;
	int ca[2], cb[2], ret;
	char buf[64];

	rb2_conn_ep_params_init(&p);
	open_eps(&p, &p);
	connect_n(2, ca, cb);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(rb2_conn_send(a, ca[0], "done", 4), 0);
	cr_assert_eq(rb2_conn_send(a, ca[1], "open", 4), 0);
	cr_assert_eq(rb2_conn_shutdown(a, ca[0]), 0);
	rb2_conn_ep_destroy(a);              /* no poll between: the FIN is owed */
	a = NULL;
	for (int i = 0; i < 8; i++)
		ret = rb2_conn_ep_poll(b);
	cr_expect_eq(ret, -ESHUTDOWN, "the peer's endpoint: %d", ret);
	for (int i = 0; i < 3; i++)
		cr_expect_eq(rb2_conn_recv(b, cb[0], buf, sizeof(buf)), 4, "message %d", i);
	ret = rb2_conn_recv(b, cb[0], buf, sizeof(buf));
	cr_expect_eq(ret, 0, "the finished stream ends with 0, not %d", ret);
	cr_expect_eq(rb2_conn_recv(b, cb[1], buf, sizeof(buf)), 4);
	ret = rb2_conn_recv(b, cb[1], buf, sizeof(buf));
	cr_expect_eq(ret, -ECONNRESET, "the open one: %d", ret);
	cr_expect(strstr(rb2_conn_why(b, cb[1]), "closed its endpoint") != NULL, "%s",
		  rb2_conn_why(b, cb[1]));
	cr_expect_eq(rb2_conn_send(b, cb[0], "x", 1), -ECONNRESET, "sending to a peer that left");
}
