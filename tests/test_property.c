/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Property tests: random N, S, α, β, γ and message sizes, across the wrap
 * point, on both shm modes, through every send and receive API. Every message
 * must arrive exactly once, in order, with its payload intact.
 *
 * The default suite moves >= 10 million messages. RB2_TEST_SCALE=N multiplies
 * the counts (the "long" suite runs with 10).
 */

#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include <rte_launch.h>
#include <rte_pause.h>

#include <rb2_lcore.h>

#include <rb2_xport_lane.h>

#include "rb2_test.h"

TestSuite(rb2_property, .init = rb2_test_eal_init, .fini = rb2_test_eal_fini,
	  .timeout = 900);

static uint64_t
scale(void)
{
	const char *s = getenv("RB2_TEST_SCALE");

	return s != NULL && atoi(s) > 0 ? (uint64_t)atoi(s) : 1;
}

struct prop_cfg {
	struct rb2_chan_params p;
	uint64_t seed;
	uint32_t max_len;   /* largest message this run sends */
	int sleep;          /* two lcores, a transport that wakes: the receiver
			       sleeps when idle (RB2_CHAN_F_SLEEP) */
	int refuse;         /* an admission hook refuses at random */
	int lane;           /* each half posts through its lcore's lane (a
			       transport that posts WRs, no sleeping receiver) */
};

static void
random_cfg(uint64_t seed, struct prop_cfg *c)
{
	uint64_t r = seed * 0x9e3779b97f4a7c15ull + 1;
	uint32_t n;

	rb2_chan_params_init(&c->p);
	c->seed = seed;
	n = 1u << (1 + rb2_test_rand(&r) % 10);            /* 2 .. 1024 */
	c->p.slots = n;
	c->p.slot_size = 64 * (uint32_t)(1 + rb2_test_rand(&r) % 4);
	c->p.alpha = 1 + (uint32_t)(rb2_test_rand(&r) % (n - 1));
	c->p.beta = 1 + (uint32_t)(rb2_test_rand(&r) % c->p.alpha);
	c->p.gamma = 1 + (uint32_t)(rb2_test_rand(&r) % (n - 1));
	/* One configuration in four is a fixed-size channel. */
	if (rb2_test_rand(&r) % 4 == 0)
		c->p.msg_size = 1 + (uint32_t)(rb2_test_rand(&r) % c->p.slot_size);
	c->max_len = RTE_MIN(rb2_chan_max_msg(&c->p), 4096u);
	/* Head sync: lazy push or lazy pull, one in three pulls (drawn last,
	 * so the other parameters of a seed stay what they were). */
	if (rb2_test_rand(&r) % 3 == 0)
		c->p.head_sync = RB2_HEAD_LAZY_PULL;
	/* Tail sync: write-twice, WRITE_WITH_IMM or poll message, a third
	 * each (the marker takes 8 bytes of a fixed-size channel's slot). */
	switch (rb2_test_rand(&r) % 3) {
	case 0:
		c->p.tail_sync = RB2_TAIL_POLL_MSG;
		if (c->p.msg_size > c->p.slot_size - RB2_MARKER_SIZE)
			c->p.msg_size = c->p.slot_size - RB2_MARKER_SIZE;
		c->max_len = RTE_MIN(rb2_chan_max_msg(&c->p), 4096u);
		break;
	case 1:
		c->p.tail_sync = RB2_TAIL_WRITE_IMM;
		break;
	default:
		break;
	}
	/* The ablations: one configuration in four packs its slots off the
	 * cache lines (8-byte multiples), one in four has no elastic
	 * threshold. Drawn last, as above. */
	if (rb2_test_rand(&r) % 4 == 0) {
		c->p.flags |= RB2_CHAN_F_UNALIGNED;
		c->p.slot_size = 8 * (uint32_t)(1 + rb2_test_rand(&r) % 32);
		uint32_t room = c->p.slot_size -
			(c->p.tail_sync == RB2_TAIL_POLL_MSG ? RB2_MARKER_SIZE : 0);

		if (c->p.msg_size > room)
			c->p.msg_size = room; /* 0 (variable) when no room */
		c->max_len = RTE_MIN(rb2_chan_max_msg(&c->p), 4096u);
	}
	if (rb2_test_rand(&r) % 4 == 0)
		c->p.flags |= RB2_CHAN_F_NO_ELASTIC;
	/* Adaptive polling, one in three (drawn last). */
	c->sleep = rb2_test_rand(&r) % 3 == 0;
	/* An admission window, one in four (every WR signaled, transmissions
	 * deferred when full); half of those also refuse one admission in
	 * three through the hook, so deferrals happen on shm too. */
	c->refuse = 0;
	if (rb2_test_rand(&r) % 4 == 0) {
		c->p.max_inflight = RB2_TX_CHAIN_MAX + (uint32_t)(rb2_test_rand(&r) % 32);
		c->refuse = rb2_test_rand(&r) % 2 == 0;
	}
	/* Lanes (merged, superseded, batched chains), one in three. */
	c->lane = rb2_test_rand(&r) % 3 == 0;
	/* The head pushed also whenever the ring drains (the idle push,
	 * without RB2_CHAN_F_LAZY_HEAD), one in two; else READ when no push
	 * is due (drawn last). */
	if (rb2_test_rand(&r) % 2 == 0)
		c->p.flags &= ~RB2_CHAN_F_LAZY_HEAD;
	/* The length in the message's slot (RB2_CHAN_F_LEN_IN_SLOT), one
	 * configuration in two, under every tail sync (drawn last). */
	if (rb2_test_rand(&r) % 2 == 0) {
		c->p.flags |= RB2_CHAN_F_LEN_IN_SLOT;
		c->max_len = RTE_MIN(rb2_chan_max_msg(&c->p), 4096u);
	}
}

static unsigned int lane_runs; /* runs with lanes: the tests check some were */
static uint64_t lane_deferrals; /* ... and that some lane's window bound */

/* The halves' lanes of a run, or NULL where it has none: a load/store
 * transport posts nothing, and a sleeping receiver needs its own QP. */
struct lanes {
	struct rb2_xport_lane *tx, *rx;
};

static void
lanes_open(struct lanes *l, struct rb2_xport *xp, struct prop_cfg *c,
	   unsigned int tx_lcore, unsigned int rx_lcore)
{
	l->tx = l->rx = NULL;
	if (!c->lane || (rb2_xport_caps(xp) & RB2_XPORT_CAP_LOADSTORE) ||
	    (c->p.flags & RB2_CHAN_F_SLEEP))
		return;
	lane_runs++;
	/* A short lane and short posts: chains wait, fill and go in pieces;
	 * in half the runs, a window for each lane's QP as a whole. */
	uint32_t window = c->seed % 2 == 0 ? RB2_TX_CHAIN_MAX + (uint32_t)(c->seed / 2 % 40) : 0;
	uint32_t tx_pending = 8 + (uint32_t)(c->seed % 64), rx_pending = 8 + (uint32_t)(c->seed % 32);

	/* A window deeper than a lane's queues (4 x max_pending by default)
	 * is refused, and tested as such elsewhere (test_lane). */
	window = RTE_MIN(window, 4 * RTE_MIN(tx_pending, rx_pending));
	l->tx = rb2_xport_lane_create(xp, &(struct rb2_xport_lane_params){
		.lcore_id = tx_lcore, .max_pending = tx_pending,
		.max_chain = 1 + (uint32_t)(c->seed % 7), .max_inflight = window });
	l->rx = rb2_xport_lane_create(xp, &(struct rb2_xport_lane_params){
		.lcore_id = rx_lcore, .max_pending = rx_pending, .max_inflight = window });
	cr_assert(l->tx != NULL && l->rx != NULL, "lanes: %s", rte_strerror(rte_errno));
}

static void
lane_flush(struct rb2_xport_lane *l)
{
	int ret = l != NULL ? rb2_xport_lane_flush(l) : 0;

	cr_assert(ret == 0 || ret == -ENOSPC, "lane flush: %d", ret);
}

static void
lanes_close(struct lanes *l)
{
	struct rb2_xport_lane_stats st;

	for (int i = 0; i < 2; i++) {
		struct rb2_xport_lane *la = i == 0 ? l->tx : l->rx;

		if (la != NULL) {
			rb2_xport_lane_stats_get(la, &st);
			lane_deferrals += st.deferrals;
		}
	}
	rb2_xport_lane_destroy(l->tx);
	rb2_xport_lane_destroy(l->rx);
}

/* The admission hook of c->refuse: the window's rule, and one admission in
 * three refused while anything is in flight. */
static int
refusing_admit(void *arg, uint32_t inflight, uint32_t want, uint32_t window)
{
	uint64_t *r = arg;

	if (inflight > 0 && rb2_test_rand(r) % 3 == 0)
		return 0;
	return inflight + want <= window;
}

static uint64_t admit_rand[2] = {1, 2}; /* the hooks' PRNGs: one per run kind */

static void
maybe_hook(struct rb2_tx *tx, const struct prop_cfg *c, int which)
{
	if (c->refuse) {
		admit_rand[which] = c->seed | 1;
		cr_assert_eq(rb2_tx_admission_hook(tx, refusing_admit, &admit_rand[which]), 0);
	}
}

/* Length of message @seq: mostly within one slot, some multi-slot, a few
 * up to the channel's limit; zero-length messages included. */
static uint32_t
len_of(const struct prop_cfg *c, uint64_t seq)
{
	uint64_t r = (seq + 1) * 0xd1b54a32d192ed03ull ^ c->seed;
	uint64_t k = rb2_test_rand(&r);
	uint32_t s = c->p.slot_size;

	if (c->p.msg_size != 0)
		return c->p.msg_size;
	switch (k % 10) {
	case 0:
		return (uint32_t)((k >> 8) % (c->max_len + 1));
	case 1:
	case 2:
		return (uint32_t)((k >> 8) % RTE_MIN(2 * s + 1, c->max_len + 1));
	default:
		return (uint32_t)((k >> 8) % RTE_MIN(s + 1, c->max_len + 1));
	}
}

/* Does the sender mark message @seq (RB2_MSG_MARK)? A quarter of the
 * messages of a variable-size channel; the mark must arrive with exactly
 * those, whatever the sync, transport or batching. */
static int
marked_of(const struct prop_cfg *c, uint64_t seq)
{
	return c->p.msg_size == 0 && (((seq + 7) * 0x9e3779b97f4a7c15ull ^ c->seed) >> 40) % 4 == 0;
}

struct rx_state {
	const struct prop_cfg *c;
	uint64_t next;     /* next expected sequence number */
	uint64_t bad;
};

static void
check_one(struct rx_state *st, const void *data, uint32_t len)
{
	uint32_t want = len_of(st->c, st->next);

	if (len != want || !rb2_test_check(data, len, st->next)) {
		char why[160] = "";

		if (len == want)
			rb2_test_explain(why, sizeof(why), data, len, st->next);
		if (st->bad++ == 0)
			cr_log_error("seed %" PRIu64 " (N=%u S=%u a=%u b=%u g=%u msg_size=%u head_sync=%d "
				     "tail_sync=%d flags=0x%x window=%u%s%s): message %" PRIu64 " has len %u (want %u) or a bad payload: %s",
				     st->c->seed, st->c->p.slots, st->c->p.slot_size, st->c->p.alpha,
				     st->c->p.beta, st->c->p.gamma, st->c->p.msg_size,
				     (int)st->c->p.head_sync, (int)st->c->p.tail_sync, st->c->p.flags,
				     st->c->p.max_inflight, st->c->refuse ? " refusing" : "",
				     st->c->p.lane != NULL ? " lanes" : "",
				     st->next, len, want, why);
	}
	st->next++;
}

static void
rx_cb(void *arg, const void *data, uint32_t len)
{
	check_one(arg, data, len);
}

/* Receive with one of the three APIs; returns the count or a negative errno. */
static int
receive_some(struct rb2_rx *rx, struct rx_state *st, unsigned int api,
	     unsigned int max)
{
	static uint8_t buf[64 * 1024];
	struct rb2_msg m[64];
	int n, got = 0;

	switch (api % 3) {
	case 0:
		n = rb2_rx_peek_burst(rx, m, RTE_MIN(max, 64u));
		if (n <= 0)
			return n;
		for (int i = 0; i < n; i++) {
			if (rb2_msg_marked(&m[i]) != marked_of(st->c, st->next) &&
			    st->bad++ == 0)
				cr_log_error("seed %" PRIu64 ": message %" PRIu64 " came %smarked",
					     st->c->seed, st->next, rb2_msg_marked(&m[i]) ? "" : "un");
			check_one(st, m[i].data, rb2_msg_len(&m[i]));
		}
		rb2_rx_release_burst(rx, m, (unsigned int)n);
		return n;
	case 1:
		return rb2_rx_read_burst(rx, rx_cb, st, max);
	default:
		while ((unsigned int)got < max) {
			n = rb2_rx_recv(rx, buf, sizeof(buf));
			if (n < 0)
				return got > 0 ? got : (n == -EAGAIN ? 0 : n);
			check_one(st, buf, (uint32_t)n);
			got++;
		}
		return got;
	}
}

/* Send message @seq with one of the APIs; 0, -ENOBUFS or an error. */
static int
send_one(struct rb2_tx *tx, const struct prop_cfg *c, uint64_t seq,
	 unsigned int api)
{
	static uint8_t buf[64 * 1024];
	uint32_t len = len_of(c, seq);
	void *slot;
	int ret;

	if (api % 2 == 0 && !marked_of(c, seq)) {
		rb2_test_fill(buf, len, seq);
		return rb2_tx_send(tx, buf, len);
	}
	ret = rb2_tx_reserve(tx, len, &slot);
	if (ret < 0)
		return ret;
	rb2_test_fill(slot, len, seq);
	rb2_tx_commit(tx, len | (marked_of(c, seq) ? RB2_MSG_MARK : 0));
	return 0;
}

/* Send a run of messages of equal length with the burst API. */
static int
send_burst(struct rb2_tx *tx, const struct prop_cfg *c, uint64_t seq,
	   unsigned int max)
{
	uint32_t len = len_of(c, seq);
	unsigned int k = 1;
	uint8_t *first;
	int n;

	while (k < max && len_of(c, seq + k) == len &&
	       marked_of(c, seq + k) == marked_of(c, seq))
		k++;
	n = rb2_tx_reserve_burst(tx, len, k, (void **)&first);
	if (n <= 0)
		return n == 0 ? -ENOBUFS : n;
	for (int i = 0; i < n; i++)
		rb2_test_fill(first + (size_t)i * rb2_tx_stride(tx, len), len,
			      seq + (uint64_t)i);
	rb2_tx_commit_burst(tx, len | (marked_of(c, seq) ? RB2_MSG_MARK : 0), (unsigned int)n);
	return n;
}

/* One lcore plays both halves in a random interleaving. */
static void
run_single(uint64_t seed, const char *spec, uint64_t msgs)
{
	struct prop_cfg c;
	struct rb2_xport *xp = rb2_xport_open_spec(spec);
	struct rb2_tx *tx;
	struct rb2_rx *rx;
	struct rx_state st = {.c = &c};
	uint64_t sent = 0, r = seed ^ 0x5555, idle = 0;
	struct lanes ln;
	char name[16];

	random_cfg(seed, &c);
	snprintf(name, sizeof(name), "p%" PRIu64, seed);
	cr_assert_not_null(xp);
	lanes_open(&ln, xp, &c, rte_lcore_id(), rte_lcore_id());
	c.p.lane = ln.tx;
	tx = rb2_tx_create(name, xp, &c.p);
	c.p.lane = ln.rx;
	rx = rb2_rx_create(name, xp, &c.p);
	cr_assert(tx != NULL && rx != NULL, "seed %" PRIu64, seed);
	cr_assert_eq(rb2_chan_pair(tx, rx), 0);
	maybe_hook(tx, &c, 0);

	while (st.next < msgs && st.bad == 0) {
		uint64_t k = rb2_test_rand(&r);
		uint64_t before = st.next + sent;

		if (k % 8 < 4) {
			unsigned int want = 1 + (unsigned int)((k >> 8) % 64);
			for (unsigned int i = 0; i < want && sent < msgs; i++) {
				int ret = (k >> 16) % 3 == 2 ?
					send_burst(tx, &c, sent, (unsigned int)RTE_MIN(msgs - sent, 16u)) :
					send_one(tx, &c, sent, (unsigned int)(k >> 20));
				if (ret == -ENOBUFS)
					break;
				cr_assert_geq(ret, 0, "seed %" PRIu64 ": send: %d", seed, ret);
				sent += ret > 0 ? (uint64_t)ret : 1;
			}
		} else if (k % 8 == 4) {
			cr_assert_eq(rb2_tx_flush(tx), 0);
			/* The sender's pass ends, or not yet: chains grow. */
			if ((k >> 8) % 2 == 0)
				lane_flush(ln.tx);
		} else {
			int n = receive_some(rx, &st, (unsigned int)(k >> 8),
					     1 + (unsigned int)((k >> 12) % 64));
			cr_assert_geq(n, 0, "seed %" PRIu64 ": receive: %d", seed, n);
			if ((k >> 20) % 2 == 0)
				lane_flush(ln.rx);
		}
		/* Liveness: without flushes the sender must still progress
		 * (stall flush, idle push); a few hundred idle steps is a hang. */
		idle = st.next + sent == before ? idle + 1 : 0;
		if (idle > 200) {
			cr_assert_eq(rb2_tx_flush(tx), 0);
			lane_flush(ln.tx);
			lane_flush(ln.rx);
			idle = 0;
		}
	}
	cr_assert_eq(st.bad, 0, "seed %" PRIu64 " (%s): %" PRIu64 " bad messages",
		     seed, spec, st.bad);
	cr_assert_eq(st.next, msgs);
	cr_assert_eq(rb2_tx_flush(tx), 0);
	lane_flush(ln.tx);
	cr_assert_eq(receive_some(rx, &st, 0, 64), 0, "nothing beyond what was sent");
	rb2_tx_destroy(tx);
	rb2_rx_destroy(rx);
	lanes_close(&ln);
	rb2_xport_close(xp);
}

Test(rb2_property, random_configs_exactly_once_in_order_10M)
{
	const uint64_t per = 125000 * scale();
	uint64_t total = 0;

#ifdef __SANITIZE_THREAD__
	/* Both halves on one lcore: one thread, so nothing for TSan to see, and
	 * 75 s of its time. The next test runs random configurations on two. */
	cr_skip_test("one thread: the release and ASan builds run it");
#endif
	/* 40 configurations x 2 shm modes x 125 k = 10 M messages, and the
	 * template driver (loop) on a quarter as many. */
	for (uint64_t seed = 1; seed <= 40; seed++) {
		run_single(seed, "shm,mode=copy", per);
		run_single(seed + 1000, "shm,mode=loadstore", per);
		total += 2 * per;
		if (seed % 4 == 0) {
			/* Half of them on a "NIC" whose completions come
			 * late, so that admission windows bind. */
			run_single(seed + 2000, seed % 8 == 0 ? "loop,lag=3" : "loop", per);
			total += per;
		}
	}
	cr_log_info("%" PRIu64 " messages delivered exactly once, in order (%u runs on lanes)",
		    total, lane_runs);
	cr_assert_geq(total, 10000000 * scale());
	cr_assert_gt(lane_runs, 0, "no run drew lanes");
	cr_assert_gt(lane_deferrals, 0, "no lane's admission window ever bound");
}

/* ---- two lcores: real concurrency ------------------------------------- */

struct conc {
	struct prop_cfg c;
	struct rb2_tx *tx;
	struct rb2_xport_lane *lane; /* the sender's, or NULL */
	uint64_t msgs;
	int err;
	_Atomic int stop;   /* the receiver saw a bad message: give up */
};

static int
sender_lcore(void *arg)
{
	struct conc *k = arg;
	uint64_t sent = 0, r = k->c.seed;

	while (sent < k->msgs && !atomic_load_explicit(&k->stop, memory_order_relaxed)) {
		int ret = send_one(k->tx, &k->c, sent, (unsigned int)rb2_test_rand(&r));

		if (ret == -ENOBUFS) {
			rb2_tx_flush(k->tx); /* idle: publish what we have */
			if (k->lane != NULL)
				(void)rb2_xport_lane_flush(k->lane);
			rte_pause();
			continue;
		}
		if (ret < 0) {
			k->err = ret;
			return 0;
		}
		sent++;
		/* A pass of the sender's loop ends every few messages. */
		if (k->lane != NULL && rb2_test_rand(&r) % 8 == 0)
			(void)rb2_xport_lane_flush(k->lane);
	}
	k->err = rb2_tx_flush(k->tx);
	if (k->err == 0 && k->lane != NULL)
		for (int i = 0; i < 1000000 && (k->err = rb2_xport_lane_flush(k->lane)) == -ENOSPC; i++)
			;
	return 0;
}

static void
run_concurrent(uint64_t seed, const char *spec, uint64_t msgs)
{
	struct conc k = {.msgs = msgs};
	struct rx_state st = {.c = &k.c};
	struct rb2_xport *xp = rb2_xport_open_spec(spec);
	unsigned int worker = rte_get_next_lcore(rte_lcore_id(), 1, 0);
	struct rb2_rx *rx;
	uint64_t r = seed;
	struct lanes ln;
	char name[16];

	random_cfg(seed, &k.c);
	if (k.c.sleep && (rb2_xport_caps(xp) & RB2_XPORT_CAP_WAKE))
		k.c.p.flags |= RB2_CHAN_F_SLEEP;
	lanes_open(&ln, xp, &k.c, worker, rte_lcore_id());
	k.lane = ln.tx;
	k.c.p.lcore_id = worker;
	k.c.p.lane = ln.tx;
	snprintf(name, sizeof(name), "c%" PRIu64, seed);
	k.tx = rb2_tx_create(name, xp, &k.c.p);
	if (k.tx != NULL)
		maybe_hook(k.tx, &k.c, 1);
	k.c.p.lcore_id = rte_lcore_id();
	k.c.p.lane = ln.rx;
	rx = rb2_rx_create(name, xp, &k.c.p);
	/* Every failure names the seed and transport: random_cfg(seed)
	 * rebuilds the configuration. */
	cr_assert(k.tx != NULL && rx != NULL, "seed %" PRIu64 " (%s): no channel", seed, spec);
	cr_assert_eq(rb2_chan_pair(k.tx, rx), 0, "seed %" PRIu64 " (%s, lanes %s): pairing failed",
		     seed, spec, ln.tx != NULL ? "on" : "off");
	cr_assert_eq(rb2_lcore_launch(sender_lcore, &k, worker), 0);
	for (uint64_t idle = 0, empty = 0; st.next < msgs && st.bad == 0;) {
		int n = receive_some(rx, &st, (unsigned int)rb2_test_rand(&r), 32);

		cr_assert_geq(n, 0);
		if (ln.rx != NULL && rb2_test_rand(&r) % 4 == 0)
			lane_flush(ln.rx);     /* the receiver's pass ends */
		/* Adaptive polling: sleep after 32 empty polls, until the
		 * sender's next publication (or 100 ms) wakes us. */
		empty = n > 0 ? 0 : empty + 1;
		if ((k.c.p.flags & RB2_CHAN_F_SLEEP) && empty >= 32) {
			int ret = rb2_rx_sleep(rx, 100000);

			cr_assert(ret == 0 || ret == -EAGAIN, "sleep: %d", ret);
			empty = 0;
		}
		/* A sender that failed has stopped: after a million empty polls
		 * fail on its error below, instead of waiting forever. */
		if (n == 0 && rte_eal_get_lcore_state(worker) != RUNNING && ++idle > 1000000)
			break;
	}
	/* A bad message stops the receiver: stop the sender too, or it waits
	 * for room forever and the test hangs instead of failing. */
	atomic_store_explicit(&k.stop, 1, memory_order_relaxed);
	rb2_lcore_wait(worker);
	cr_assert_eq(k.err, 0, "sender: %d", k.err);
	cr_assert_eq(st.bad, 0, "seed %" PRIu64 " (%s): %" PRIu64 " bad", seed, spec, st.bad);
	cr_assert_eq(receive_some(rx, &st, 0, 64), 0, "no duplicates");
	rb2_tx_destroy(k.tx);
	rb2_rx_destroy(rx);
	lanes_close(&ln);
	rb2_xport_close(xp);
}

Test(rb2_property, two_lcores_random_configs_exactly_once_in_order)
{
	const char *one = getenv("RB2_TEST_SEED");

	cr_assert_geq(rte_lcore_count(), 2);
	if (one != NULL) {          /* rerun the seed a failure names */
		uint64_t seed = strtoull(one, NULL, 0);

		const char *spec = getenv("RB2_TEST_SPEC"); /* or the run's own */

		if (spec == NULL)
			spec = seed >= 0x50a4000000ull ?
				(const char *[]){"shm,mode=copy", "shm,mode=loadstore", "loop"}[seed % 3] :
				seed < 600 ? "shm,mode=copy" : seed < 700 ? "shm,mode=loadstore" : "loop";
		run_concurrent(seed, spec, 300000 * scale());
		return;
	}
	for (uint64_t seed = 1; seed <= 6; seed++) {
		run_concurrent(seed + 500, "shm,mode=copy", 300000 * scale());
		run_concurrent(seed + 600, "shm,mode=loadstore", 300000 * scale());
		if (seed % 2 == 0)
			run_concurrent(seed + 700, seed == 4 ? "loop,lag=3" : "loop",
				       300000 * scale());
	}
	cr_assert_gt(lane_runs, 0, "no run drew lanes");
}

/*
 * The soak: random configurations (N, S, alpha, beta, gamma, head and tail
 * policies, fixed or variable sizes, the ablation flags), each run on two
 * lcores over one of shm's two modes or the loop driver, one after another
 * until RB2_SOAK_SECONDS have passed; every message exactly once, in
 * order, intact. Prints the configurations and messages it ran (and the
 * first seed, to rerun one: RB2_TEST_SEED). Skips without the variable.
 */
Test(rb2_property, soak_random_configs_two_lcores, .timeout = 86400 * 7)
{
	static const char *const specs[] = {"shm,mode=copy", "shm,mode=loadstore", "loop"};
	const char *secs = getenv("RB2_SOAK_SECONDS");
	uint64_t first = 0x50a4000000ull + (uint64_t)time(NULL) % 100000 * 1000;
	uint64_t seed = first, total = 0, configs = 0;
	time_t end, t0 = time(NULL);
	double rate = 0;        /* messages a second: the slowest configuration's so far */

	if (secs == NULL || atol(secs) <= 0)
		cr_skip_test("set RB2_SOAK_SECONDS=N to soak for N seconds");
	end = t0 + atol(secs);
	while (time(NULL) < end) {
		/* Message counts that keep a configuration under a few seconds
		 * even unbatched, so that many of them run; and none that would
		 * outlast the soak by much where the build is slow (a
		 * sanitizer's: ASan's ran 20 s of soak for 100). */
		uint64_t msgs = 200000 + seed % 7 * 300000;
		double left = (double)(end - time(NULL)) + 1;
		struct timespec a, b;

		if (rate == 0)          /* the first: the smallest, to learn the rate */
			msgs = 200000;
		else if ((double)msgs > rate * left)
			msgs = RTE_MAX((uint64_t)(rate * left), (uint64_t)20000);
		clock_gettime(CLOCK_MONOTONIC, &a);
		run_concurrent(seed, specs[seed % 3], msgs);
		clock_gettime(CLOCK_MONOTONIC, &b);
		/* The slowest configuration's rate: an unbatched one runs many
		 * times slower than a batched one. */
		double r = (double)msgs / ((double)(b.tv_sec - a.tv_sec) +
					   (double)(b.tv_nsec - a.tv_nsec) / 1e9 + 1e-9);

		rate = rate > 0 && rate < r ? rate : r;
		total += msgs;
		configs++;
		seed++;
	}
	printf("soak: %" PRIu64 " random configurations (seeds %" PRIu64 "..%" PRIu64 "), %" PRIu64
	       " messages exactly once, in order, in %ld s (%.1f M/s)\n", configs, first, seed - 1,
	       total, (long)(time(NULL) - t0), (double)total / 1e6 / (double)(time(NULL) - t0 + 1));
	cr_log_info("soak: %" PRIu64 " configurations, %" PRIu64 " messages", configs, total);
}
