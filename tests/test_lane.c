/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Lanes (lib/xport/rb2_xport_lane.h): queues over one QP, one doorbell per
 * flush. At the transport level on the loop driver: adjacent WRITEs merged,
 * a pointer written twice in a row written once, inline payloads captured
 * at post, completions returned to their own queue. At the channel level:
 * 16 channels on one lane each way carry every message exactly once, in
 * order, with one doorbell per pass. And the refusals.
 */

#include <rb2_xport_lane.h>

#include "rb2_test.h"

static struct rb2_xport *xp;

static void
setup(void)
{
	rb2_test_eal_init();
}

static void
teardown(void)
{
	rb2_xport_close(xp);
	xp = NULL;
	rb2_test_eal_fini();
}

TestSuite(rb2_lane, .init = setup, .fini = teardown, .timeout = 120);

static struct rb2_xport_lane *
lane_with(uint32_t max_chain, uint32_t window)
{
	struct rb2_xport_lane *la = rb2_xport_lane_create(xp, &(struct rb2_xport_lane_params){
		.lcore_id = rte_lcore_id(), .max_chain = max_chain, .max_inflight = window });

	cr_assert_not_null(la, "lane: %s", rte_strerror(rte_errno));
	return la;
}

static struct rb2_xport_lane *
lane(void)
{
	return lane_with(0, 0);
}

static struct rb2_xport_qp *
queue(struct rb2_xport_lane *la)
{
	struct rb2_xport_qp_attr attr = { .lcore_id = rte_lcore_id(), .lane = la };
	struct rb2_xport_qp *qp = rb2_xport_qp_create(xp, &attr);

	cr_assert_not_null(qp, "queue: %s", rte_strerror(rte_errno));
	return qp;
}

Test(rb2_lane, merges_supersedes_captures_and_routes_completions)
{
	struct rb2_xport_lane *la, *lb;
	struct rb2_xport_qp *a1, *a2, *b1, *b2;
	struct rb2_xport_lane_stats st;
	struct rb2_xport_mr src, dst;
	struct rb2_xport_wc wc[4];
	uint64_t word;

	xp = rb2_xport_open("loop", NULL);
	cr_assert_not_null(xp);
	la = lane();
	lb = lane();
	a1 = queue(la);
	a2 = queue(la);
	b1 = queue(lb);
	b2 = queue(lb);
	cr_assert_eq(rb2_xport_qp_connect_local(a1, b1), 0);
	cr_assert_eq(rb2_xport_qp_connect_local(a2, b2), 0);
	cr_assert_eq(rb2_xport_mr_alloc(xp, "lsrc", 4096, SOCKET_ID_ANY, &src), 0);
	cr_assert_eq(rb2_xport_mr_alloc(xp, "ldst", 4096, SOCKET_ID_ANY, &dst), 0);
	for (int i = 0; i < 4096; i++)
		((uint8_t *)src.addr)[i] = (uint8_t)i;

	/* Two adjacent WRITEs of queue a1, the second signaled: one WR. */
	struct rb2_xport_wr w[2] = {
		{ .wr_id = 11, .local = src.addr, .remote = (uintptr_t)dst.addr, .len = 100,
		  .lkey = src.lkey, .rkey = dst.rkey, .opcode = RB2_WR_WRITE },
		{ .wr_id = 12, .local = (uint8_t *)src.addr + 100,
		  .remote = (uintptr_t)dst.addr + 100, .len = 200, .lkey = src.lkey,
		  .rkey = dst.rkey, .opcode = RB2_WR_WRITE, .flags = RB2_WR_SIGNALED },
	};
	cr_assert_eq(rb2_xport_post(a1, w, 2), 0);
	/* a2: a pointer WRITTEN twice in a row, inline; its source changes
	 * between the posts and again before the flush. */
	struct rb2_xport_wr p = { .wr_id = 21, .local = &word, .len = 8,
		.remote = (uintptr_t)dst.addr + 1024, .rkey = dst.rkey, .opcode = RB2_WR_WRITE,
		.flags = RB2_WR_INLINE };
	word = 1;
	cr_assert_eq(rb2_xport_post(a2, &p, 1), 0);
	word = 2;
	p.wr_id = 22;
	p.flags |= RB2_WR_SIGNALED;
	cr_assert_eq(rb2_xport_post(a2, &p, 1), 0);
	word = 3;
	cr_assert_eq(((uint8_t *)dst.addr)[150], 0, "posted before the flush");
	rb2_xport_lane_stats_get(la, &st);
	cr_assert_eq(st.doorbells, 0);
	cr_assert_eq(rb2_xport_lane_flush(la), 0);
	rb2_xport_lane_stats_get(la, &st);
	cr_assert_eq(st.doorbells, 1);
	cr_assert_eq(st.wrs_in, 4);
	cr_assert_eq(st.wrs_out, 2, "merged and superseded: %" PRIu64 " WRs out", st.wrs_out);
	cr_assert_eq(st.merged, 1);
	cr_assert_eq(st.superseded, 1);
	cr_assert_eq(memcmp(dst.addr, src.addr, 300), 0);
	cr_assert_eq(*(uint64_t *)((uint8_t *)dst.addr + 1024), 2, "the payload of post time");

	/* Each queue gets its own completion, with its own wr_id. */
	cr_assert_eq(rb2_xport_poll(a2, wc, 4), 1);
	cr_assert_eq(wc[0].wr_id, 22);
	cr_assert_eq(rb2_xport_poll(a2, wc, 4), 0);
	cr_assert_eq(rb2_xport_poll(a1, wc, 4), 1);
	cr_assert_eq(wc[0].wr_id, 12);

	/* A queue that keeps polling with WRs of its own waiting flushes the
	 * lane; a single poll does not. */
	w[1].wr_id = 13;
	cr_assert_eq(rb2_xport_post(a1, &w[1], 1), 0);
	int polls = 0, got = 0;
	while (got == 0 && polls++ < 100)
		got = rb2_xport_poll(a1, wc, 4);
	cr_assert_eq(got, 1);
	cr_assert_eq(wc[0].wr_id, 13);
	cr_assert_gt(polls, 1, "one poll flushed the lane: that undoes the batching");
	rb2_xport_lane_stats_get(la, &st);
	cr_assert_eq(st.forced, 1);

	/* A pointer written again later in the chain, with another WRITE
	 * between: written once. With a READ between: twice (the READ could
	 * have looked). */
	struct rb2_xport_wr c[4] = {
		{ .local = &word, .len = 8, .remote = (uintptr_t)dst.addr + 2048,
		  .rkey = dst.rkey, .opcode = RB2_WR_WRITE, .flags = RB2_WR_INLINE },
		{ .local = src.addr, .len = 64, .lkey = src.lkey,
		  .remote = (uintptr_t)dst.addr + 3000, .rkey = dst.rkey, .opcode = RB2_WR_WRITE },
		{ .local = &word, .len = 8, .remote = (uintptr_t)dst.addr + 2048,
		  .rkey = dst.rkey, .opcode = RB2_WR_WRITE, .flags = RB2_WR_INLINE },
		{ .local = (uint8_t *)src.addr + 512, .len = 8, .lkey = src.lkey,
		  .remote = (uintptr_t)dst.addr + 2048, .rkey = dst.rkey, .opcode = RB2_WR_READ },
	};
	struct rb2_xport_lane_stats s0;
	rb2_xport_lane_stats_get(la, &s0);
	cr_assert_eq(rb2_xport_post(a1, c, 3), 0);
	cr_assert_eq(rb2_xport_lane_flush(la), 0);
	rb2_xport_lane_stats_get(la, &st);
	cr_assert_eq(st.superseded - s0.superseded, 1);
	cr_assert_eq(st.wrs_out - s0.wrs_out, 2);
	struct rb2_xport_wr d[3] = { c[0], c[3], c[2] };
	cr_assert_eq(rb2_xport_post(a1, d, 3), 0);
	cr_assert_eq(rb2_xport_lane_flush(la), 0);
	rb2_xport_lane_stats_get(la, &s0);
	cr_assert_eq(s0.superseded, st.superseded, "dropped across a READ");
	cr_assert_eq(s0.wrs_out - st.wrs_out, 3);

	/* A queue of a lane connected in this process does not meet remote
	 * peers, and takes no receives. */
	cr_assert_eq(rb2_xport_qp_exchange(queue(la), "127.0.0.1:1", RB2_XPORT_ACTIVE, &word, 8,
					   &word, 8, 10), -EINVAL);
	struct rb2_xport_qp_attr attr = { .lcore_id = rte_lcore_id(), .lane = la,
		.recv_depth = 4 };
	cr_assert_null(rb2_xport_qp_create(xp, &attr));
	cr_assert_eq(rte_errno, ENOTSUP);
	rb2_xport_mr_free(xp, &src);
	rb2_xport_mr_free(xp, &dst);
}

/* 16 channels, each half on its lcore's lane: send a few messages on every
 * channel and flush it, then flush the lane: one doorbell for all. */
static void channels_on_lanes(const char *spec, uint32_t max_chain, uint32_t window);

Test(rb2_lane, channels_on_a_lane_exactly_once_one_doorbell_per_pass)
{
	channels_on_lanes("loop", 0, 0);
}

/* A QP that takes few WRs per post: the chain goes in pieces, in order. */
Test(rb2_lane, channels_on_a_lane_chain_in_pieces)
{
	channels_on_lanes("loop", 2, 0);
}

/* An admission window for the lane's QP as a whole (8 WRs, whichever
 * channel's), over a "NIC" whose completions come late (every 4th poll):
 * the window binds, the channels defer in their rings for it, everything
 * still arrives once and in order, and no more than 8 WRs are ever in
 * flight. */
Test(rb2_lane, channels_on_a_lane_under_one_window)
{
	channels_on_lanes("loop,lag=4", 0, 8);
}

static void
channels_on_lanes(const char *spec, uint32_t max_chain, uint32_t window)
{
	enum { NCH = 16, PASSES = 300 };
	struct rb2_xport_lane *la, *lb;
	struct rb2_tx *tx[NCH];
	struct rb2_rx *rx[NCH];
	uint64_t sent[NCH] = {0}, got[NCH] = {0}, seed = 3, chains = 0;
	struct rb2_xport_lane_stats st;
	struct rb2_chan_params p;

	xp = rb2_xport_open_spec(spec);
	cr_assert_not_null(xp, "%s: %s", spec, rte_strerror(rte_errno));
	la = lane_with(max_chain, window);
	lb = lane_with(max_chain, window);
	rb2_chan_params_init(&p);
	p.slots = 64;
	p.alpha = 8;
	p.beta = 4;
	p.gamma = 8;
	for (int c = 0; c < NCH; c++) {
		char name[16];

		snprintf(name, sizeof(name), "ln%d", c);
		p.lane = la;
		tx[c] = rb2_tx_create(name, xp, &p);
		p.lane = lb;
		rx[c] = rb2_rx_create(name, xp, &p);
		cr_assert(tx[c] != NULL && rx[c] != NULL);
		cr_assert_eq(rb2_chan_pair(tx[c], rx[c]), 0);
	}
	/* A lane connected in this process reaches nobody else; and a
	 * transport that cannot exchange out of band (loop) keeps its lanes
	 * in one process. */
	p.lane = la;
	struct rb2_tx *lone = rb2_tx_create("lnx", xp, &p);
	cr_assert_not_null(lone);
	cr_assert_eq(rb2_tx_connect(lone, "127.0.0.1:1", 10), -EINVAL);
	rb2_tx_destroy(lone);
	struct rb2_xport_lane *fresh = lane();
	p.lane = fresh;
	lone = rb2_tx_create("lny", xp, &p);
	cr_assert_not_null(lone);
	cr_assert_eq(rb2_tx_connect(lone, "127.0.0.1:1", 10), -ENOTSUP);
	rb2_tx_destroy(lone);
	rb2_xport_lane_destroy(fresh);
	for (int pass = 0; pass < PASSES; pass++) {
		for (int c = 0; c < NCH; c++) {
			unsigned int k = (unsigned int)(rb2_test_rand(&seed) % 6);

			for (unsigned int i = 0; i < k; i++) {
				uint8_t m[96];
				uint32_t len = 8 + (uint32_t)(rb2_test_rand(&seed) % 88);

				rb2_test_fill(m, len, sent[c]);
				if (rb2_tx_send(tx[c], m, len) != 0)
					break;          /* full: the receiver is behind */
				sent[c]++;
			}
			cr_assert_eq(rb2_tx_flush(tx[c]), 0);
		}
		int ret = rb2_xport_lane_flush(la);

		/* -ENOSPC: the window holds the rest back, to the next pass. */
		cr_assert(ret == 0 || (window != 0 && ret == -ENOSPC), "flush: %d", ret);
		chains++;
		for (int c = 0; c < NCH; c++) {
			struct rb2_msg m[16];
			int n = rb2_rx_peek_burst(rx[c], m, 16);

			cr_assert_geq(n, 0);
			for (int i = 0; i < n; i++, got[c]++)
				cr_assert(rb2_test_check(m[i].data, m[i].len, got[c]),
					  "channel %d message %" PRIu64, c, got[c]);
			rb2_rx_release_burst(rx[c], m, (unsigned int)n);
		}
		ret = rb2_xport_lane_flush(lb);
		cr_assert(ret == 0 || (window != 0 && ret == -ENOSPC), "flush: %d", ret);
	}
	/* Drain. */
	for (int round = 0; round < 100000; round++) {
		uint64_t behind = 0;

		for (int c = 0; c < NCH; c++)
			behind += sent[c] - got[c];
		if (behind == 0 && round >= 100)
			break;
		for (int c = 0; c < NCH; c++) {
			struct rb2_msg m[16];
			int n;

			(void)rb2_tx_flush(tx[c]);
			while ((n = rb2_rx_peek_burst(rx[c], m, 16)) > 0) {
				for (int i = 0; i < n; i++, got[c]++)
					cr_assert(rb2_test_check(m[i].data, m[i].len, got[c]));
				rb2_rx_release_burst(rx[c], m, (unsigned int)n);
			}
		}
		(void)rb2_xport_lane_flush(la);
		(void)rb2_xport_lane_flush(lb);
	}
	for (int c = 0; c < NCH; c++)
		cr_assert_eq(got[c], sent[c], "channel %d: %" PRIu64 " of %" PRIu64, c, got[c],
			     sent[c]);
	rb2_xport_lane_stats_get(la, &st);
	if (window != 0) {
		struct rb2_xport_lane_stats sb;

		rb2_xport_lane_stats_get(lb, &sb);
		uint64_t chan_deferrals = 0;

		for (int c = 0; c < NCH; c++) {
			struct rb2_tx_stats ts;

			rb2_tx_stats_get(tx[c], &ts);
			chan_deferrals += ts.admission_deferrals;
		}
		/* The channels ask the lane's window first: a full one defers
		 * in their rings, where messages merge. */
		cr_assert_gt(chan_deferrals, 0, "no channel deferred for the lane's window");
		cr_assert(st.max_inflight_seen > 0 && st.max_inflight_seen <= window &&
			  sb.max_inflight_seen <= window, "%u and %u WRs in flight, window %u",
			  st.max_inflight_seen, sb.max_inflight_seen, window);
	} else if (max_chain == 0) {
		cr_assert_leq(st.doorbells, PASSES + 100 + st.forced,
			      "%" PRIu64 " doorbells for %d passes", st.doorbells, PASSES);
		cr_assert_gt(st.wrs_out, 2 * st.doorbells,
			     "a chain carries the channels' WRs together");
	} else {
		cr_assert_geq(st.doorbells * max_chain, st.wrs_out, "a post of more than %u WRs",
			      max_chain);
	}
	for (int c = 0; c < NCH; c++) {
		rb2_tx_destroy(tx[c]);
		rb2_rx_destroy(rx[c]);
	}
	rb2_xport_lane_stats_get(la, &st);
	cr_assert_eq(st.queues, 0);
	rb2_xport_lane_destroy(la);
	rb2_xport_lane_destroy(lb);
}

Test(rb2_lane, refusals)
{
	xp = rb2_xport_open("shm", "mode=loadstore");
	cr_assert_not_null(xp);
	cr_assert_null(rb2_xport_lane_create(xp, &(struct rb2_xport_lane_params){0}));
	cr_assert_eq(rte_errno, ENOTSUP);
}

/* A window deeper than the lane's QP could ever hold in flight, one too
 * small for a transmission, and a loop "NIC" told to lag by nonsense:
 * refused, saying what to change. */
Test(rb2_lane, windows_that_cannot_work_and_bad_lags_are_refused)
{
	cr_assert_null(rb2_xport_open("loop", "lag=0"));
	cr_assert_null(rb2_xport_open("loop", "lag=x"));
	xp = rb2_xport_open("loop", NULL);
	cr_assert_not_null(xp);
	cr_assert_null(rb2_xport_lane_create(xp, &(struct rb2_xport_lane_params){
		.max_inflight = 100000 }));
	cr_assert_eq(rte_errno, EINVAL);
	/* A window too small for one transmission would hold a channel
	 * back for ever: a channel refuses such a lane. */
	struct rb2_xport_lane *la = lane_with(0, 4);
	struct rb2_chan_params p;

	rb2_chan_params_init(&p);
	p.lane = la;
	cr_assert_null(rb2_tx_create("lnw", xp, &p));
	rb2_xport_lane_destroy(la);
}
