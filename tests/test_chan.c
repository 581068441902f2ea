/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* RB² channel: the paper's worked example, parameter and descriptor checks,
 * full and oversized refusals, and the liveness rules. Single lcore. */

#include <stdlib.h>

#include <rte_log.h>
#include <rte_memzone.h>

#include "rb2_test.h"

static struct rb2_xport *xp;
static struct rb2_tx *tx;
static struct rb2_rx *rx;

static void
setup(void)
{
	rb2_test_eal_init();
}

/* Destroy the pair and its transport (a test may open another after). */
static void
close_pair(void)
{
	rb2_tx_destroy(tx);
	rb2_rx_destroy(rx);
	rb2_xport_close(xp);
	tx = NULL;
	rx = NULL;
	xp = NULL;
}

static void
teardown(void)
{
	close_pair();
	rb2_test_eal_fini();
}

TestSuite(rb2_chan, .init = setup, .fini = teardown, .timeout = 60);

static void
open_pair(const char *spec, const struct rb2_chan_params *p)
{
	xp = rb2_xport_open_spec(spec);
	cr_assert_not_null(xp, "open %s: %s", spec, rte_strerror(rte_errno));
	tx = rb2_tx_create("t", xp, p);
	cr_assert_not_null(tx, "tx_create: %s", rte_strerror(rte_errno));
	rx = rb2_rx_create("t", xp, p);
	cr_assert_not_null(rx, "rx_create: %s", rte_strerror(rte_errno));
	cr_assert_eq(rb2_chan_pair(tx, rx), 0);
}

static void
write_msg(uint64_t seq)
{
	uint8_t b[40];

	rb2_test_fill(b, sizeof(b), seq);
	cr_assert_eq(rb2_tx_send(tx, b, sizeof(b)), 0, "send %" PRIu64, seq);
}

static void
read_msg(uint64_t seq)
{
	uint8_t b[64];

	cr_assert_eq(rb2_rx_recv(rx, b, sizeof(b)), 40, "recv %" PRIu64, seq);
	cr_assert(rb2_test_check(b, 40, seq), "payload of %" PRIu64, seq);
}

/* Masked pointers, as the paper draws them. */
static void
expect(const char *step, uint64_t tail, uint64_t synced_tail, uint64_t esc_tail,
       uint64_t local_head, uint64_t head, uint64_t synced_head,
       uint64_t local_tail)
{
	struct rb2_tx_ptrs t;
	struct rb2_rx_ptrs r;

	rb2_tx_pointers(tx, &t);
	rb2_rx_pointers(rx, &r);
	cr_expect_eq(t.tail % 8, tail, "%s: tail %" PRIu64, step, t.tail % 8);
	cr_expect_eq(t.synced_tail % 8, synced_tail, "%s: synced_tail %" PRIu64, step, t.synced_tail % 8);
	cr_expect_eq(t.esc_tail % 8, esc_tail, "%s: esc_tail %" PRIu64, step, t.esc_tail % 8);
	cr_expect_eq(t.local_head % 8, local_head, "%s: local_head %" PRIu64, step, t.local_head % 8);
	cr_expect_eq(r.head % 8, head, "%s: head %" PRIu64, step, r.head % 8);
	cr_expect_eq(r.synced_head % 8, synced_head, "%s: synced_head %" PRIu64, step, r.synced_head % 8);
	cr_expect_eq(r.local_tail % 8, local_tail, "%s: local_tail %" PRIu64, step, r.local_tail % 8);
}

/* Is slot @i of RB_R holding message @seq yet (copy mode: only once sent)? */
static int
rb_r_holds(unsigned int i, uint64_t seq)
{
	return rb2_test_check(rx->slots + (size_t)i * rx->slot_size, 40, seq);
}

/*
 * §IV-B, Fig. 4: N=8, α=4, β=2, γ=2. From the state of Fig. 4(a) (one
 * message committed but not transmitted, one read but not pushed), write one
 * message, read two, write two, checking all seven pointers after each step.
 * The NIC-copy mode makes the "sent but not readable" slots observable.
 */
Test(rb2_chan, paper_example_fig4_pointers_after_each_step)
{
	struct rb2_chan_params p;
	struct rb2_tx_stats st;

	rb2_chan_params_init(&p);
	p.slots = 8;
	p.alpha = 4;
	p.beta = 2;
	p.gamma = 2;
	p.eager = 0;            /* the paper's batching alone */
	open_pair("shm,mode=copy", &p);

	/* Reach Fig. 4(a): write 4 (slot transmission at 2, pointer
	 * advancement at 4), read 1, write 1. */
	for (uint64_t s = 0; s < 4; s++)
		write_msg(s);
	read_msg(0);
	write_msg(4);
	expect("fig4a", 5, 4, 4, 0, 1, 0, 4);
	cr_expect(!rb_r_holds(4, 4), "slot 4 must not be transmitted yet");

	/* (a)->(b): write one; tail - esc_tail = 2 >= β: slot transmission
	 * of slots 4 and 5, which the receiver cannot read yet. */
	write_msg(5);
	expect("fig4b", 6, 4, 6, 0, 1, 0, 4);
	cr_expect(rb_r_holds(4, 4) && rb_r_holds(5, 5), "slots 4,5 transmitted");

	/* (b)->(c): read two; the first makes head - synced_head = 2 >= γ
	 * (lazy push), the second only advances head. */
	read_msg(1);
	expect("fig4c.1", 6, 4, 6, 2, 2, 2, 4);
	read_msg(2);
	expect("fig4c", 6, 4, 6, 2, 3, 2, 4);

	/* (c)->(d): write two; tail - synced_tail = 4 >= α: pointer
	 * advancement sends slots 6,7 and moves local_tail by four. */
	write_msg(6);
	expect("fig4d.1", 7, 4, 6, 2, 3, 2, 4);
	write_msg(7);
	expect("fig4d", 0, 0, 0, 2, 3, 2, 0);

	rb2_tx_stats_get(tx, &st);
	cr_expect_eq(st.tail_writes, 2, "two pointer advancements");
	cr_expect_eq(st.slot_writes, 4, "slot transmissions: 2 of (a), (b), 2 of (d)");
	cr_expect_eq(st.deferred_tail_syncs, 0);

	/* Everything written is then read, once, in order. */
	for (uint64_t s = 3; s < 8; s++)
		read_msg(s);
	cr_expect_eq(rb2_rx_recv(rx, (uint8_t[64]){0}, 64), -EAGAIN);
}

Test(rb2_chan, invalid_parameters_are_named)
{
	static const struct {
		const char *name;
		uint32_t slots, slot_size, alpha, beta, gamma;
	} bad[] = {
		{"slots", 0, 64, 1, 1, 1},
		{"slots", 1000, 64, 1, 1, 1},
		{"slots", 1u << 25, 64, 1, 1, 1},
		{"slot_size", 8, 0, 1, 1, 1},
		{"slot_size", 8, 100, 1, 1, 1},
		{"slot_size", 1u << 24, 1u << 20, 1, 1, 1},
		{"alpha", 8, 64, 0, 1, 1},
		{"alpha", 8, 64, 8, 1, 1},
		{"beta", 8, 64, 4, 0, 1},
		{"beta", 8, 64, 4, 5, 1},
		{"gamma", 8, 64, 4, 2, 0},
		{"gamma", 8, 64, 4, 2, 8},
	};
	struct rb2_chan_params p;
	char why[160];

	xp = rb2_xport_open("shm", NULL);
	cr_assert_not_null(xp);
	for (unsigned int i = 0; i < RTE_DIM(bad); i++) {
		rb2_chan_params_init(&p);
		p.slots = bad[i].slots;
		p.slot_size = bad[i].slot_size;
		p.alpha = bad[i].alpha;
		p.beta = bad[i].beta;
		p.gamma = bad[i].gamma;
		why[0] = '\0';
		cr_expect_eq(rb2_chan_params_check(&p, why, sizeof(why)), -EINVAL,
			     "case %u", i);
		cr_expect(strstr(why, bad[i].name) != NULL,
			  "case %u: '%s' does not name %s", i, why, bad[i].name);
		cr_expect_null(rb2_tx_create("bad", xp, &p), "case %u", i);
		cr_expect_eq(rte_errno, EINVAL, "case %u: rte_errno %d", i, rte_errno);
	}
	/* The edges are valid: β = α = N - 1, γ = N - 1, and latency mode. */
	rb2_chan_params_init(&p);
	p.slots = 8; p.alpha = 7; p.beta = 7; p.gamma = 7;
	cr_expect_eq(rb2_chan_params_check(&p, NULL, 0), 0);
	p.alpha = p.beta = p.gamma = 1;
	cr_expect_eq(rb2_chan_params_check(&p, NULL, 0), 0);
	/* Unknown policies are refused, naming the parameter. */
	p.tail_sync = (enum rb2_tail_sync)7;
	cr_expect_eq(rb2_chan_params_check(&p, why, sizeof(why)), -EINVAL);
	cr_expect(strstr(why, "tail_sync") != NULL, "%s", why);
}

Test(rb2_chan, oversized_message_refused_not_truncated)
{
	struct rb2_chan_params p;
	static uint8_t big[64 * 9];
	void *slot = NULL;

	rb2_chan_params_init(&p);
	p.slots = 16; /* max message: 8 slots of 64 B */
	p.alpha = 4; p.beta = 2; p.gamma = 2;
	open_pair("shm", &p);
	cr_assert_eq(rb2_tx_max_msg(tx), 512);
	cr_expect_eq(rb2_tx_reserve(tx, 513, &slot), -EMSGSIZE);
	cr_expect_eq(rb2_tx_send(tx, big, sizeof(big)), -EMSGSIZE);
	rb2_test_fill(big, 512, 7);
	cr_expect_eq(rb2_tx_send(tx, big, 512), 0);
	cr_expect_eq(rb2_tx_flush(tx), 0);
	/* A receive buffer too small leaves the message in the ring. */
	cr_expect_eq(rb2_rx_recv(rx, big, 100), -EMSGSIZE);
	memset(big, 0, sizeof(big));
	cr_expect_eq(rb2_rx_recv(rx, big, sizeof(big)), 512);
	cr_expect(rb2_test_check(big, 512, 7));
}

static void
full_ring_refuses_and_loses_nothing(const char *spec)
{
	struct rb2_chan_params p;
	struct rb2_tx_stats st;
	uint8_t b[128];
	uint64_t sent = 0, got = 0;

	rb2_chan_params_init(&p);
	p.slots = 32; p.alpha = 8; p.beta = 4; p.gamma = 8;
	open_pair(spec, &p);
	for (int round = 0; round < 50; round++) {
		int ret;
		/* Fill until refused; a refused message is retried later. */
		for (;;) {
			uint32_t len = 1 + (uint32_t)((sent * 37) % 120);
			rb2_test_fill(b, len, sent);
			ret = rb2_tx_send(tx, b, len);
			if (ret == -ENOBUFS)
				break;
			cr_assert_eq(ret, 0);
			sent++;
		}
		cr_assert_eq(rb2_tx_flush(tx), 0);
		/* Drain it all: every accepted message, in order, once. */
		while ((ret = rb2_rx_recv(rx, b, sizeof(b))) > 0) {
			cr_assert_eq(ret, 1 + (int)((got * 37) % 120));
			cr_assert(rb2_test_check(b, (uint32_t)ret, got), "msg %" PRIu64, got);
			got++;
		}
		cr_assert_eq(ret, -EAGAIN);
		cr_assert_eq(got, sent, "round %d: sent %" PRIu64 " got %" PRIu64,
			     round, sent, got);
	}
	rb2_tx_stats_get(tx, &st);
	cr_expect_geq(st.full_events, 50);
	cr_expect_eq(st.messages, sent);
}

Test(rb2_chan, full_ring_refuses_and_loses_nothing_loadstore)
{
	full_ring_refuses_and_loses_nothing("shm,mode=loadstore");
}

Test(rb2_chan, full_ring_refuses_and_loses_nothing_copy)
{
	full_ring_refuses_and_loses_nothing("shm,mode=copy");
}

/* Liveness: with α=32 one message is not visible until flushed. */
Test(rb2_chan, single_message_alpha32_arrives_once_flushed)
{
	struct rb2_chan_params p;
	struct rb2_msg m[4];

	rb2_chan_params_init(&p); /* α=32 β=16 γ=32 */
	p.eager = 0;              /* or the first message would go at once */
	open_pair("shm,mode=copy", &p);
	write_msg(0);
	cr_expect_eq(rb2_rx_peek_burst(rx, m, 4), 0, "batched, not yet visible");
	/* An idle sender loop calls flush; with nothing pending it is free. */
	cr_expect_eq(rb2_tx_flush(tx), 0);
	cr_assert_eq(rb2_rx_peek_burst(rx, m, 4), 1);
	cr_expect_eq(m[0].len, 40);
	cr_expect(rb2_test_check(m[0].data, 40, 0));
	rb2_rx_release_burst(rx, m, 1);
	cr_expect_eq(rb2_tx_flush(tx), 0);
	cr_expect_eq(rb2_rx_peek_burst(rx, m, 4), 0, "delivered once");
}

/*
 * Eager publication (params.eager): a sender whose flush found nothing to
 * publish has gone idle, so the next eager commits are published at once;
 * the one after them batches again until a flush. A stream that never
 * idles batches exactly as with eager = 0: one advancement per alpha.
 */
Test(rb2_chan, eager_publishes_after_an_idle_flush_then_batches)
{
	struct rb2_chan_params p;
	struct rb2_tx_stats st;
	struct rb2_msg m[8];
	uint64_t seq = 0;

	rb2_chan_params_init(&p); /* α=32 β=16 γ=32 */
	p.eager = 2;
	open_pair("shm,mode=copy", &p);
	/* A new channel counts as idle. */
	for (int i = 0; i < 2; i++) {
		write_msg(seq);
		cr_assert_eq(rb2_rx_peek_burst(rx, m, 8), 1, "eager commit %d visible at once", i);
		read_msg(seq++);
	}
	write_msg(seq);
	cr_expect_eq(rb2_rx_peek_burst(rx, m, 8), 0, "the third commit batches");
	cr_expect_eq(rb2_tx_flush(tx), 0);     /* publishes it: not idle */
	read_msg(seq++);
	write_msg(seq);
	cr_expect_eq(rb2_rx_peek_burst(rx, m, 8), 0, "a flush that sent something does not arm it");
	cr_expect_eq(rb2_tx_flush(tx), 0);
	read_msg(seq++);
	cr_expect_eq(rb2_tx_flush(tx), 0);     /* nothing pending: idle, armed */
	write_msg(seq);
	cr_assert_eq(rb2_rx_peek_burst(rx, m, 8), 1, "visible at once after an idle flush");
	read_msg(seq++);
	rb2_tx_stats_get(tx, &st);
	cr_expect_eq(st.eager_advances, 3);

	/* A stream with no idle flush: the one eager commit left goes at
	 * once, then one advancement per alpha (32) messages: 1 + 7 for 256,
	 * the last 31 waiting for the flush. */
	{
		uint64_t tw = st.tail_writes, first = seq;

		for (int i = 0; i < 256; i++)
			write_msg(seq++);
		rb2_tx_stats_get(tx, &st);
		cr_expect_eq(st.tail_writes - tw, 8, "%" PRIu64 " advancements",
			     (uint64_t)(st.tail_writes - tw));
		cr_expect_eq(st.eager_advances, 4);
		cr_expect_eq(rb2_tx_flush(tx), 0);
		for (uint64_t k = first; k < seq; k++)
			read_msg(k);
		cr_expect_eq(rb2_rx_peek_burst(rx, m, 8), 0, "delivered once");
	}
}

/* RB2_EAGER_AUTO, the default: eager where a publication is a store (shm's
 * load/store mode), not where it is a WR (shm's NIC-copy mode, like verbs). */
static void
eager_auto(const char *spec, int eager)
{
	struct rb2_chan_params p;
	struct rb2_msg m[2];

	rb2_chan_params_init(&p);
	cr_assert_eq(p.eager, RB2_EAGER_AUTO);
	open_pair(spec, &p);
	write_msg(0);
	cr_expect_eq(rb2_rx_peek_burst(rx, m, 2), eager, "%s: %s", spec,
		     eager ? "published at commit" : "batched until a flush");
	cr_expect_eq(rb2_tx_flush(tx), 0);
	read_msg(0);
}

Test(rb2_chan, eager_by_default_on_loadstore)
{
	eager_auto("shm", 1);
}

Test(rb2_chan, no_eager_by_default_over_wrs)
{
	eager_auto("shm,mode=copy", 0);
}

/* Liveness: γ larger than the traffic a ring holds. The receiver releases
 * fewer than γ slots, yet the sender needs them back: only the idle push
 * (on finding the ring drained) frees them, or with RB2_CHAN_F_LAZY_HEAD
 * the sender's READ of the head the receiver stored. Without either this
 * test hangs. */
static void
gamma_exceeds_traffic(uint32_t flags)
{
	struct rb2_chan_params p;
	struct rb2_rx_stats rs;
	struct rb2_tx_stats ts;
	static uint8_t b[256];
	uint64_t seq = 0;

	rb2_chan_params_init(&p);
	p.slots = 8; p.alpha = 7; p.beta = 1; p.gamma = 7;
	p.flags = flags;
	open_pair("shm,mode=copy", &p);
	for (int i = 0; i < 1000; i++) {
		int ret;
		/* A 4-slot message needs 4 of the 7 usable slots. */
		rb2_test_fill(b, 256, seq);
		ret = rb2_tx_send(tx, b, 256);
		if (ret == -ENOBUFS) {
			/* Receiver's turn: it drains, then polls once more. */
			cr_assert_eq(rb2_rx_recv(rx, b, 256), -EAGAIN,
				     "iteration %d: receiver has nothing yet", i);
			cr_assert_eq(rb2_tx_send(tx, b, 256), 0,
				     "iteration %d: sender still stalled", i);
		} else {
			cr_assert_eq(ret, 0);
		}
		cr_assert_eq(rb2_tx_flush(tx), 0);
		cr_assert_eq(rb2_rx_recv(rx, b, 256), 256);
		cr_assert(rb2_test_check(b, 256, seq));
		seq++;
	}
	rb2_rx_stats_get(rx, &rs);
	rb2_tx_stats_get(tx, &ts);
	if (flags & RB2_CHAN_F_LAZY_HEAD) {
		cr_expect_eq(rs.idle_pushes, 0, "%" PRIu64 " idle pushes", (uint64_t)rs.idle_pushes);
		cr_expect_gt(ts.head_reads, 0, "the sender's READ did the work");
	} else {
		cr_expect_gt(rs.idle_pushes, 0, "the idle push did the work");
		cr_expect_eq(ts.head_reads, 0);
	}
}

Test(rb2_chan, sender_never_stalls_when_gamma_exceeds_traffic)
{
	gamma_exceeds_traffic(0);
}

Test(rb2_chan, sender_never_stalls_when_gamma_exceeds_traffic_lazy_head)
{
	gamma_exceeds_traffic(RB2_CHAN_F_LAZY_HEAD);
}

/* The wrap point: multi-slot messages never split; the reader gets one
 * contiguous pointer, and the skipped slots are reclaimed. */
Test(rb2_chan, wrap_multislot_message_stays_contiguous)
{
	struct rb2_chan_params p;
	struct rb2_msg m = {0};
	void *slot = NULL;

	rb2_chan_params_init(&p);
	p.slots = 8; p.alpha = 1; p.beta = 1; p.gamma = 1;
	open_pair("shm,mode=copy", &p);
	for (uint64_t s = 0; s < 5; s++)
		write_msg(s);
	for (uint64_t s = 0; s < 5; s++)
		read_msg(s);
	/* tail at slot 5: a 4-slot message cannot fit in slots 5..7. */
	cr_assert_eq(rb2_tx_reserve(tx, 200, &slot), 0);
	cr_expect_eq(slot, tx->slots, "placed at slot 0 of the mirror");
	rb2_test_fill(slot, 200, 99);
	rb2_tx_commit(tx, 200);
	cr_assert_eq(rb2_rx_peek_burst(rx, &m, 1), 1);
	cr_expect_eq(m.data, (void *)rx->slots, "read at slot 0");
	cr_expect_eq(m.len, 200);
	cr_expect(rb2_test_check(m.data, 200, 99));
	rb2_rx_release_burst(rx, &m, 1);
	cr_expect_eq(rx->head, 12, "3 skipped + 4 used slots");
}

Test(rb2_chan, descriptor_validation_refuses_malformed_peers)
{
	struct rb2_chan_params p;
	struct rb2_chan_desc d;
	uint8_t blob[64];
	char why[160];

	rb2_chan_params_init(&p);
	open_pair("shm", &p);
	d = rx->h.peer; /* the sender's descriptor, as the receiver got it */
	cr_assert_eq(rb2_chan_desc_check(&d, sizeof(d), 1, &p, why, sizeof(why)), 0, "%s", why);
	cr_expect_eq(rb2_chan_desc_check(&d, sizeof(d) - 1, 1, &p, why, sizeof(why)), -EPROTO);
	cr_expect(strstr(why, "short") != NULL, "%s", why);
	/* Zero padding (rdma_cm pads private data) is accepted; anything
	 * else past the descriptor makes it oversized. */
	memset(blob, 0, sizeof(blob));
	memcpy(blob, &d, sizeof(d));
	cr_expect_eq(rb2_chan_desc_check(blob, sizeof(blob), 1, &p, why, sizeof(why)), 0, "%s", why);
	blob[sizeof(blob) - 1] = 1;
	cr_expect_eq(rb2_chan_desc_check(blob, sizeof(blob), 1, &p, why, sizeof(why)), -EPROTO);
	cr_expect(strstr(why, "oversized") != NULL, "%s", why);
	cr_expect_eq(rb2_chan_desc_check(&d, sizeof(d), 0, &p, why, sizeof(why)), -EPROTO);
	cr_expect(strstr(why, "receiver") != NULL, "%s", why);
	d.magic ^= 1;
	cr_expect_eq(rb2_chan_desc_check(&d, sizeof(d), 1, &p, why, sizeof(why)), -EPROTO);
	cr_expect(strstr(why, "magic") != NULL, "%s", why);
	d = rx->h.peer;
	d.slots = p.slots * 2;
	cr_expect_eq(rb2_chan_desc_check(&d, sizeof(d), 1, &p, why, sizeof(why)), -EPROTO);
	d = rx->h.peer;
	d.beta = d.alpha + 1;
	cr_expect_eq(rb2_chan_desc_check(&d, sizeof(d), 1, &p, why, sizeof(why)), -EPROTO);
	cr_expect(strstr(why, "beta") != NULL, "%s", why);
	d = rx->h.peer;
	d.len = 64;
	cr_expect_eq(rb2_chan_desc_check(&d, sizeof(d), 1, &p, why, sizeof(why)), -EPROTO);
}

Test(rb2_chan, unconnected_half_refuses)
{
	struct rb2_chan_params p;
	void *slot = NULL;

	rb2_chan_params_init(&p);
	xp = rb2_xport_open("shm", NULL);
	tx = rb2_tx_create("u", xp, &p);
	cr_assert_not_null(tx);
	cr_expect_eq(rb2_tx_reserve(tx, 8, &slot), -ENOTCONN);
	cr_expect_null(rb2_tx_create("u", xp, &p), "name taken");
	cr_expect_eq(rte_errno, EEXIST);
}

/* A fixed-size channel: every message is msg_size bytes, and no length ever
 * crosses the link (the receiver's lens[] area stays untouched). */
Test(rb2_chan, fixed_size_channel_carries_no_lengths)
{
	struct rb2_chan_params p;
	struct rb2_msg m[8];
	const uint32_t *rb_r_lens;
	char why[160];
	void *slot = NULL;

	rb2_chan_params_init(&p);
	p.slots = 64; p.alpha = 8; p.beta = 4; p.gamma = 8;
	p.msg_size = 65;
	cr_expect_eq(rb2_chan_params_check(&p, why, sizeof(why)), -EINVAL);
	cr_expect(strstr(why, "msg_size") != NULL, "%s", why);
	p.msg_size = 40;
	open_pair("shm,mode=copy", &p);
	cr_expect_eq(rb2_tx_max_msg(tx), 40);
	cr_expect_eq(rb2_tx_reserve(tx, 41, &slot), -EMSGSIZE);
	for (uint64_t s = 0; s < 200; s++) {
		write_msg(s);
		if (s % 3 == 2) {
			cr_assert_eq(rb2_tx_flush(tx), 0);
			for (uint64_t r = s - 2; r <= s; r++)
				read_msg(r);
		}
	}
	rb2_rx_release_burst(rx, m, (unsigned int)rb2_rx_peek_burst(rx, m, 8));
	rb_r_lens = (const uint32_t *)((const uint8_t *)rx->h.mr.addr + RB2_REGION_LENS_OFF);
	for (uint32_t i = 0; i < p.slots; i++)
		cr_assert_eq(rb_r_lens[i], 0, "lens[%u] was written", i);

	/* Both halves must agree on it. */
	struct rb2_chan_desc d = rx->h.peer;
	struct rb2_chan_params q = p;
	q.msg_size = 0;
	cr_expect_eq(rb2_chan_desc_check(&d, sizeof(d), 1, &q, why, sizeof(why)), -EPROTO);
	cr_expect(strstr(why, "msg_size") != NULL, "%s", why);
}

/* NUMA: memory on another socket than the half's lcore is worth a warning
 * that names both and the fix. This machine may have one node, so the
 * memory is asked of socket 1 (the allocation falls back; the warning is
 * about the request). */
Test(rb2_chan, numa_mismatch_between_lcore_and_memory_warns)
{
	struct rb2_chan_params p;
	char *buf = NULL;
	size_t len = 0;
	FILE *log = open_memstream(&buf, &len);

	cr_assert_not_null(log);
	rte_openlog_stream(log);
	rb2_chan_params_init(&p);
	p.socket_id = (int)rte_socket_id() + 1;
	xp = rb2_xport_open("shm", NULL);
	tx = rb2_tx_create("numa", xp, &p);
	fflush(log);
	rte_openlog_stream(NULL);
	cr_expect_not_null(tx, "falls back to memory it can get");
	cr_expect(buf != NULL && strstr(buf, "ring memory is on socket") != NULL &&
		  strstr(buf, "pin the sender") != NULL, "log: %s", buf ? buf : "");
	fclose(log);
	free(buf);
}

/* Lazy pull (§IV-A): the receiver never WRITEs its head; the sender READs it
 * when it runs out of room, and only then. */
static void
lazy_pull(const char *spec)
{
	struct rb2_chan_params p;
	struct rb2_tx_stats ts;
	struct rb2_tx_ptrs tp;
	uint8_t buf[64];
	uint64_t seq = 0;

	rb2_chan_params_init(&p);
	p.slots = 16; p.alpha = 4; p.beta = 2; p.gamma = 4;
	p.head_sync = RB2_HEAD_LAZY_PULL;
	open_pair(spec, &p);
	for (; seq < 15; seq++)               /* capacity N - 1 */
		write_msg(seq);
	cr_assert_eq(rb2_tx_send(tx, buf, 40), -ENOBUFS);
	rb2_tx_stats_get(tx, &ts);
	cr_assert_eq(ts.head_reads, 1, "one READ when the ring filled, got %" PRIu64,
		     ts.head_reads);
	cr_assert_eq(rb2_tx_flush(tx), 0);
	for (uint64_t i = 0; i < 15; i++) {
		cr_assert_eq(rb2_rx_recv(rx, buf, sizeof(buf)), 40);
		cr_assert(rb2_test_check(buf, 40, i), "message %" PRIu64, i);
	}
	/* Drained: the receiver published its head in its own region; the
	 * sender's local_head moves only when the sender READs it. */
	cr_assert_eq(rb2_rx_recv(rx, buf, sizeof(buf)), -EAGAIN);
	rb2_tx_pointers(tx, &tp);
	cr_assert_eq(tp.local_head, 0, "nobody wrote the sender's local_head");
	write_msg(seq++);
	rb2_tx_pointers(tx, &tp);
	cr_assert_eq(tp.local_head, 15, "the READ brought the head: %" PRIu64, tp.local_head);
	rb2_tx_stats_get(tx, &ts);
	cr_assert_eq(ts.head_reads, 2);
	for (; seq < 200; seq++) {            /* and steady traffic */
		int ret;

		while ((ret = rb2_tx_send(tx, buf, 40)) == -ENOBUFS) {
			rb2_tx_flush(tx);
			while (rb2_rx_recv(rx, buf, sizeof(buf)) == 40)
				;
		}
		cr_assert_eq(ret, 0);
	}
}

Test(rb2_chan, lazy_pull_sender_reads_head_copy)
{
	lazy_pull("shm,mode=copy");
}

Test(rb2_chan, lazy_pull_sender_reads_head_loadstore)
{
	lazy_pull("shm,mode=loadstore");
}

/*
 * A head READ that comes back torn (Soft-RoCE copies byte by byte: old low
 * bytes, new high ones can run ahead of the real head) is never taken. When
 * the head and its complement disagree the sender READs again, then keeps
 * the head it had (the ring stays full; a receiver preempted between its two
 * stores looks the same) and takes the head once the receiver's next
 * publish agrees. A head that agrees but lies past what the sender published
 * is a protocol error. Either way no slot not yet read is overwritten.
 */
static void
torn_head(int agree)
{
	struct rb2_chan_params p;
	struct rb2_tx_ptrs tp;
	struct rb2_tx_stats ts;
	uint8_t buf[64];

	rb2_chan_params_init(&p);
	p.slots = 16; p.alpha = 4; p.beta = 2; p.gamma = 4;
	p.head_sync = RB2_HEAD_LAZY_PULL;
	open_pair("shm,mode=copy", &p);
	for (uint64_t seq = 0; seq < 15; seq++)
		write_msg(seq);
	cr_assert_eq(rb2_tx_flush(tx), 0);
	for (uint64_t i = 0; i < 6; i++)             /* head 6 >= gamma: published */
		cr_assert_eq(rb2_rx_recv(rx, buf, sizeof(buf)), 40);
	/* What a torn READ would bring: 0x106 (a high byte of a later head
	 * over the low byte of this one), with or without its complement. */
	rx->head_shadow[0] = 0x106;
	rx->head_shadow[1] = agree ? ~0x106ull : ~6ull;  /* RB2_PULL_CHECK */
	cr_assert_eq(rb2_tx_send(tx, buf, 40), agree ? -EPROTO : -ENOBUFS);
	rb2_tx_pointers(tx, &tp);
	cr_assert_eq(tp.local_head, 0, "local_head untouched: %" PRIu64, tp.local_head);
	rb2_tx_stats_get(tx, &ts);
	cr_assert_eq(ts.torn_head_reads, agree ? 0 : 4, "%" PRIu64, ts.torn_head_reads);
	for (uint64_t i = 6; i < 15; i++) {         /* nothing was overwritten */
		cr_assert_eq(rb2_rx_recv(rx, buf, sizeof(buf)), 40);
		cr_assert(rb2_test_check(buf, 40, i), "message %" PRIu64, i);
	}
	if (agree)
		return;
	/* The receiver's next publish agrees again: the sender goes on. */
	cr_assert_eq(rb2_rx_recv(rx, buf, sizeof(buf)), -EAGAIN);
	write_msg(15);
	cr_assert_eq(rb2_tx_flush(tx), 0);
	cr_assert_eq(rb2_rx_recv(rx, buf, sizeof(buf)), 40);
	cr_assert(rb2_test_check(buf, 40, 15));
}

Test(rb2_chan, lazy_pull_keeps_its_head_on_a_torn_read)
{
	torn_head(0);
}

Test(rb2_chan, lazy_pull_fails_on_a_head_past_the_published_tail)
{
	torn_head(1);
}

/* 5000 messages through the open pair, many laps with wraps, nothing lost
 * or repeated: @p msg_size bytes each, or (0) 0-199 bytes. */
static void
laps_of_lengths(uint32_t msg_size)
{
	struct rb2_msg m[8];
	uint8_t buf[256];

	for (uint64_t seq = 0, got = 0, spins = 0; got < 5000; spins++) {
		uint32_t len = msg_size ? msg_size : (uint32_t)(seq * 37 % 200);
		struct rb2_tx_ptrs tp;
		int n;

		rb2_tx_pointers(tx, &tp);
		cr_assert_lt(spins, 1000000, "stuck: sent %" PRIu64 ", received %" PRIu64
			     ", tail %" PRIu64 ", local_head %" PRIu64, seq, got, tp.tail,
			     tp.local_head);

		if (seq < 5000) {
			rb2_test_fill(buf, len, seq);
			if (rb2_tx_send(tx, buf, len) == 0)
				seq++;
			else
				rb2_tx_flush(tx);
		} else {
			rb2_tx_flush(tx);  /* batched: publish the last ones */
		}
		if ((n = rb2_rx_peek_burst(rx, m, 8)) > 0) {
			for (int i = 0; i < n; i++, got++) {
				uint32_t want = msg_size ? msg_size : (uint32_t)(got * 37 % 200);

				cr_assert_eq(m[i].len, want, "message %" PRIu64, got);
				cr_assert(rb2_test_check(m[i].data, want, got), "message %" PRIu64, got);
			}
			rb2_rx_release_burst(rx, m, (unsigned int)n);
		}
		cr_assert_geq(n, 0);
	}
}

/* Poll-message sync: no tail pointer crosses the link; each message's
 * marker publishes it, and the receiver zeroes marker and length after use. */
static void
poll_message(const char *spec, uint32_t msg_size)
{
	struct rb2_chan_params p;
	struct rb2_tx_stats ts;
	struct rb2_rx_ptrs rp;
	struct rb2_msg m[8];
	uint8_t buf[256];
	int n;

	rb2_chan_params_init(&p);
	p.slots = 16; p.alpha = 4; p.beta = 1; p.gamma = 4;
	p.tail_sync = RB2_TAIL_POLL_MSG;
	p.msg_size = msg_size;
	open_pair(spec, &p);
	cr_assert_eq(rb2_tx_max_msg(tx), msg_size ? msg_size : 8 * 64 - 8);
	/* 56 bytes fit one slot with the marker, 57 take two. */
	rb2_test_fill(buf, 56, 1);
	cr_assert_eq(rb2_tx_send(tx, buf, msg_size ? msg_size : 56), 0);
	rb2_tx_flush(tx);
	n = rb2_rx_peek_burst(rx, m, 8);
	cr_assert_eq(n, 1);
	cr_assert_eq(m[0].len, msg_size ? msg_size : 56);
	cr_assert(rb2_test_check(m[0].data, m[0].len, 1));
	rb2_rx_release_burst(rx, m, 1);
	cr_assert_eq(*(const uint64_t *)((const uint8_t *)m[0].data + 64 - 8), 0,
		     "the receiver zeroed the marker");
	if (msg_size == 0) {
		rb2_test_fill(buf, 57, 2);
		cr_assert_eq(rb2_tx_send(tx, buf, 57), 0);
		rb2_tx_flush(tx);
		n = rb2_rx_peek_burst(rx, m, 8);
		cr_assert_eq(n, 1);
		cr_assert_eq(m[0].len, 57);
		cr_assert_eq(m[0].next_lo, 3, "two slots");
		rb2_rx_release_burst(rx, m, 1);
	}
	laps_of_lengths(msg_size);
	rb2_tx_stats_get(tx, &ts);
	cr_assert_eq(ts.tail_writes, 0, "no tail pointer with poll-message sync");
	rb2_rx_pointers(rx, &rp);
	cr_assert_eq(rp.local_tail, 0, "nobody wrote the receiver's local_tail");
}

Test(rb2_chan, poll_message_copy)
{
	poll_message("shm,mode=copy", 0);
}

Test(rb2_chan, poll_message_loadstore)
{
	poll_message("shm,mode=loadstore", 0);
}

Test(rb2_chan, poll_message_fixed_size)
{
	poll_message("shm,mode=copy", 40);
}

Test(rb2_chan, poll_message_marker_takes_room)
{
	struct rb2_chan_params p;
	char why[256];

	rb2_chan_params_init(&p);
	p.tail_sync = RB2_TAIL_POLL_MSG;
	p.msg_size = 60;
	cr_expect_eq(rb2_chan_params_check(&p, why, sizeof(why)), -EINVAL);
	cr_expect(strstr(why, "marker") != NULL, "%s", why);
}

/* WRITE_WITH_IMM sync (emulated): one completion entry per tail sync, the
 * receiver learns its tail from them and hands receive-queue credits back;
 * a sender out of credits waits, and goes on once they return. */
static void
write_imm(const char *spec)
{
	struct rb2_chan_params p;
	struct rb2_tx_stats ts;
	struct rb2_rx_stats rs;
	uint8_t buf[64];
	uint64_t got = 0;

	rb2_chan_params_init(&p);
	p.slots = 256; p.alpha = 1; p.beta = 1; p.gamma = 8;
	p.tail_sync = RB2_TAIL_WRITE_IMM;
	open_pair(spec, &p);
	/* 100 messages, one CQE each: more than the 64 credits, so the last
	 * ones wait until the receiver replenishes. */
	for (uint64_t seq = 0; seq < 100; seq++)
		write_msg(seq);
	rb2_tx_stats_get(tx, &ts);
	cr_assert_eq(ts.cqes, RB2_CQ_ENTRIES, "credits bound the CQEs: %" PRIu64, ts.cqes);
	cr_assert_gt(ts.credit_waits, 0);
	for (int spins = 0; got < 100 && spins < 1000; spins++) {
		int n = rb2_rx_recv(rx, buf, sizeof(buf));

		if (n == -EAGAIN) {
			rb2_tx_flush(tx);   /* the sender, idle, retries its sync */
			continue;
		}
		cr_assert_eq(n, 40);
		cr_assert(rb2_test_check(buf, 40, got), "message %" PRIu64, got);
		got++;
	}
	rb2_tx_stats_get(tx, &ts);
	rb2_rx_stats_get(rx, &rs);
	cr_assert_eq(got, 100, "got %" PRIu64 ": tx cqes %" PRIu64 " credit waits %" PRIu64 ", rx cqes %" PRIu64 " returns %" PRIu64, got, (uint64_t)ts.cqes, (uint64_t)ts.credit_waits, (uint64_t)rs.cqes, (uint64_t)rs.cq_returns);
	rb2_tx_stats_get(tx, &ts);
	rb2_rx_stats_get(rx, &rs);
	cr_assert_eq(rs.cqes, ts.cqes, "every CQE polled: %" PRIu64 " of %" PRIu64, rs.cqes,
		     ts.cqes);
	cr_assert_gt(rs.cq_returns, 0);
}

Test(rb2_chan, write_imm_copy)
{
	write_imm("shm,mode=copy");
}

Test(rb2_chan, write_imm_loadstore)
{
	write_imm("shm,mode=loadstore");
}

/* Ablation M7: with RB2_CHAN_F_UNALIGNED the slots start 8 bytes past a
 * cache line and pack back to back (a 40-byte slot), messages straddle
 * lines, and everything still arrives; both halves must set it. */
static void
unaligned(const char *spec)
{
	struct rb2_chan_params p;
	struct rb2_msg m[4];
	char why[160];
	int straddles = 0;

	rb2_chan_params_init(&p);
	p.slots = 64; p.alpha = 8; p.beta = 4; p.gamma = 8;
	p.slot_size = 40;
	cr_expect_eq(rb2_chan_params_check(&p, why, sizeof(why)), -EINVAL);
	cr_expect(strstr(why, "multiple of 64") != NULL, "%s", why);
	p.flags = RB2_CHAN_F_UNALIGNED | 1u << 7;
	cr_expect_eq(rb2_chan_params_check(&p, why, sizeof(why)), -EINVAL);
	cr_expect(strstr(why, "flags") != NULL, "%s", why);
	p.flags = RB2_CHAN_F_UNALIGNED | RB2_CHAN_F_NO_ELASTIC;
	open_pair(spec, &p);
	cr_expect_eq((uintptr_t)rx->slots % 64, RB2_UNALIGNED_OFF);
	for (uint64_t s = 0; s < 300; s++) {
		write_msg(s);
		cr_assert_eq(rb2_tx_flush(tx), 0);
		cr_assert_eq(rb2_rx_peek_burst(rx, m, 4), 1, "message %" PRIu64, s);
		cr_assert_eq(m[0].len, 40);
		cr_assert(rb2_test_check(m[0].data, 40, s), "payload of %" PRIu64, s);
		straddles += (uintptr_t)m[0].data / 64 != ((uintptr_t)m[0].data + 39) / 64;
		rb2_rx_release_burst(rx, m, 1);
	}
	cr_expect_gt(straddles, 100, "messages crossing a cache line: %d", straddles);

	struct rb2_chan_desc d = rx->h.peer;
	struct rb2_chan_params q = p;
	q.flags = 0;
	cr_expect_eq(rb2_chan_desc_check(&d, sizeof(d), 1, &q, why, sizeof(why)), -EPROTO);
	cr_expect(strstr(why, "flags") != NULL, "%s", why);
}

Test(rb2_chan, unaligned_slots_copy)
{
	unaligned("shm,mode=copy");
}

Test(rb2_chan, unaligned_slots_loadstore)
{
	unaligned("shm,mode=loadstore");
}

/* The one thing that travels upstream besides the head: a receiver's notice
 * (a pipeline asking its upstream process to stop) reaches the sender, on
 * every transport mode; an unconnected receiver refuses to raise one. */
static void
notice(const char *spec)
{
	struct rb2_chan_params p;
	struct rb2_rx *lone;

	rb2_chan_params_init(&p);
	open_pair(spec, &p);
	cr_expect_eq(rb2_tx_notices(tx), 0, "%s: no notice yet", spec);
	cr_assert_eq(rb2_rx_notify(rx, RB2_NOTICE_STOP), 0);
	cr_expect_eq(rb2_tx_notices(tx), RB2_NOTICE_STOP, "%s: the sender sees it", spec);
	cr_assert_eq(rb2_rx_notify(rx, 1u << 5), 0);
	cr_expect_eq(rb2_tx_notices(tx), RB2_NOTICE_STOP | 1u << 5, "%s: notices add up", spec);
	lone = rb2_rx_create("lone", xp, &p);
	cr_assert_not_null(lone);
	cr_expect_eq(rb2_rx_notify(lone, RB2_NOTICE_STOP), -ENOTCONN);
	rb2_rx_destroy(lone);
}

Test(rb2_chan, receiver_notice_reaches_sender_copy)
{
	notice("shm,mode=copy");
}

Test(rb2_chan, receiver_notice_reaches_sender_loadstore)
{
	notice("shm,mode=loadstore");
}

Test(rb2_chan, receiver_notice_reaches_sender_loop)
{
	notice("loop");
}

/*
 * Poll message: a marker is looked for in a slot's last 8 bytes only, and
 * whatever else lands there can pass for a later message's marker (the
 * soak found a payload byte over an old marker's high bytes, equal to the
 * next lap's marker). So the receiver zeroes the last 8 bytes of every slot
 * it consumes: of released messages, and of skipped wrap padding.
 */
/*
 * An 8-slot channel (alpha = beta = gamma = 1) whose slots 0-4 carried five
 * one-slot messages, sent and released, and @p buf filled with @p byte: a
 * 200-byte message next (4 slots, with a poll-message marker too) does not
 * fit before the end, so slots 5-7 become wrap padding.
 */
static void
open_before_wrap(const char *spec, enum rb2_tail_sync sync, uint8_t *buf, size_t len, int byte)
{
	struct rb2_chan_params p;
	struct rb2_msg m[8];

	rb2_chan_params_init(&p);
	p.slots = 8;
	p.alpha = p.beta = p.gamma = 1;
	p.tail_sync = sync;
	open_pair(spec, &p);
	memset(buf, byte, len);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(rb2_tx_send(tx, buf, 50), 0);
	cr_assert_eq(rb2_rx_peek_burst(rx, m, 8), 5);
	rb2_rx_release_burst(rx, m, 5);
}

static void
poll_zeroes_slot_ends(const char *spec)
{
	struct rb2_msg m[8];
	uint8_t buf[256];

	open_before_wrap(spec, RB2_TAIL_POLL_MSG, buf, sizeof(buf), 0xff);
	cr_assert_eq(rb2_tx_send(tx, buf, 200), 0);
	cr_assert_eq(rb2_rx_peek_burst(rx, m, 8), 1);
	cr_expect_eq(m[0].data, (void *)rx->slots, "wrapped to slot 0");
	for (uint32_t s = 0; s < 8; s++) {
		uint64_t end;

		memcpy(&end, rx->slots + (s + 1) * 64 - 8, 8);
		if (s < 4)
			continue; /* the message being read */
		cr_expect_eq(end, 0, "%s: slot %u's last 8 bytes were left %#" PRIx64, spec, s, end);
	}
	rb2_rx_release_burst(rx, m, 1);
	for (uint32_t s = 0; s < 4; s++) {
		uint64_t end;

		memcpy(&end, rx->slots + (s + 1) * 64 - 8, 8);
		cr_expect_eq(end, 0, "%s: released slot %u's last 8 bytes were left %#" PRIx64,
			     spec, s, end);
	}
}

/*
 * Wrap padding is not sent. On a poll-message channel the receiver consumes a
 * skip on sight of its length and zeroes the skipped slots' ends; padding
 * bytes landing afterwards (or a copy storing a byte twice) would undo that.
 * Mark the receiver's slots 5-7, make the sender skip them, and check that
 * the WRITEs left them alone while carrying the wrapped message.
 */
static void
padding_is_not_sent(const char *spec, enum rb2_tail_sync sync)
{
	struct rb2_msg m[8];
	uint8_t buf[256];

	open_before_wrap(spec, sync, buf, sizeof(buf), 0x11);
	memset((uint8_t *)(uintptr_t)rx->slots + 5 * 64, 0xa5, 3 * 64); /* as the wire would */
	cr_assert_eq(rb2_tx_send(tx, buf, 200), 0);
	for (uint32_t i = 5 * 64; i < 8 * 64; i++)
		cr_assert_eq(rx->slots[i], 0xa5, "%s: padding byte %u was written", spec, i);
	cr_assert_eq(rb2_rx_peek_burst(rx, m, 8), 1);
	cr_expect_eq(m[0].data, (void *)rx->slots, "wrapped to slot 0");
	cr_expect_eq(m[0].len, 200);
	rb2_rx_release_burst(rx, m, 1);
}

Test(rb2_chan, wrap_padding_is_not_sent_poll_message)
{
	padding_is_not_sent("shm,mode=copy", RB2_TAIL_POLL_MSG);
}

Test(rb2_chan, wrap_padding_is_not_sent_write_twice)
{
	padding_is_not_sent("loop", RB2_TAIL_WRITE_TWICE);
}

Test(rb2_chan, poll_message_receiver_zeroes_every_slot_end_copy)
{
	poll_zeroes_slot_ends("shm,mode=copy");
}

Test(rb2_chan, poll_message_receiver_zeroes_every_slot_end_loadstore)
{
	poll_zeroes_slot_ends("shm,mode=loadstore");
}

/* ---- the paper's designs (§V-A), as rb2_chan_params_preset() builds them:
 * what each signals and how many WRITEs it may have in flight (what each
 * copies is the application's: rb2-perf copies as each does). */

static void
preset_pair(const char *preset)
{
	struct rb2_chan_params p;

	rb2_chan_params_init(&p);
	p.slots = 64;
	cr_assert_eq(rb2_chan_params_preset(&p, preset), 0);
	open_pair("shm,mode=copy", &p);
}

static void
send_and_drain(uint64_t n)
{
	for (uint64_t seq = 0; seq < n; seq++) {
		write_msg(seq);
		read_msg(seq);
	}
}

/* RB²: one signaled WR per pointer advancement (the tail WRITE), none else. */
Test(rb2_chan, preset_rb2_signals_only_its_tail_writes)
{
	struct rb2_tx_stats ts;

	preset_pair("rb2");
	for (uint64_t seq = 0; seq < 320; seq += 32) {
		for (uint64_t i = seq; i < seq + 32; i++)
			write_msg(i);
		rb2_tx_flush(tx);
		for (uint64_t i = seq; i < seq + 32; i++)
			read_msg(i);
	}
	rb2_tx_stats_get(tx, &ts);
	cr_assert_eq(ts.signaled_wrs, ts.tail_writes, "signaled %" PRIu64 ", tail WRITEs %" PRIu64,
		     (uint64_t)ts.signaled_wrs, (uint64_t)ts.tail_writes);
	cr_assert_lt(ts.tail_writes * 8, 320, "batched: %" PRIu64 " tail WRITEs for 320", (uint64_t)ts.tail_writes);
	cr_assert_eq(ts.admission_deferrals, 0);
}

/* RB² with batching turned off (the paper's Fig. 10): rb2's synchronization,
 * every message published by its own tail WRITE without a flush, the head
 * pushed for each message. */
Test(rb2_chan, preset_rb2_unbatched_publishes_every_message_at_once)
{
	struct rb2_tx_stats ts;
	struct rb2_rx_stats rs;

	preset_pair("rb2-unbatched");
	for (uint64_t seq = 0; seq < 200; seq++) {   /* past the ring, no flush */
		write_msg(seq);
		read_msg(seq);
	}
	rb2_tx_stats_get(tx, &ts);
	rb2_rx_stats_get(rx, &rs);
	cr_assert_eq(ts.tail_writes, 200, "%" PRIu64 " tail WRITEs", (uint64_t)ts.tail_writes);
	cr_assert_eq(ts.signaled_wrs, ts.tail_writes);
	cr_assert_eq(ts.head_reads, 0, "the head is pushed, not READ");
	cr_assert_geq(rs.head_pushes + rs.idle_pushes, 200 - 1, "%" PRIu64 " + %" PRIu64 " head pushes",
		      (uint64_t)rs.head_pushes, (uint64_t)rs.idle_pushes);
}

/* rb2: in a ping-pong (each message read as soon as it is published, the
 * ring drained after each), the head is pushed every gamma and never
 * because the ring drained, and never READ either: the sender is never
 * short of room. rb2-idlepush pushes it after every message. */
static uint64_t
ping_pong_head_pushes(const char *preset, uint64_t *idle, uint64_t *reads)
{
	struct rb2_rx_stats rs;
	struct rb2_tx_stats ts;
	uint8_t none[64];

	preset_pair(preset);
	for (uint64_t seq = 0; seq < 200; seq++) {
		write_msg(seq);
		rb2_tx_flush(tx);
		read_msg(seq);
		cr_assert_eq(rb2_rx_recv(rx, none, sizeof(none)), -EAGAIN); /* drained */
	}
	rb2_rx_stats_get(rx, &rs);
	rb2_tx_stats_get(tx, &ts);
	*idle = rs.idle_pushes;
	*reads = ts.head_reads;
	close_pair();
	return rs.head_pushes;
}

Test(rb2_chan, preset_rb2_pushes_the_head_only_every_gamma)
{
	struct rb2_chan_params p;
	uint64_t idle, pushes, reads;

	rb2_chan_params_init(&p);
	p.slots = 64;
	cr_assert_eq(rb2_chan_params_preset(&p, "rb2"), 0);
	cr_assert_eq(p.gamma, 32);
	cr_assert(p.flags & RB2_CHAN_F_LAZY_HEAD);
	cr_assert_eq(rb2_chan_max_msg(&p), 32 * 64 - 8, "half the ring less the length's header");
	pushes = ping_pong_head_pushes("rb2", &idle, &reads);
	cr_expect_eq(idle, 0, "%" PRIu64 " pushes because the ring drained", idle);
	cr_expect_eq(reads, 0, "%" PRIu64 " head READs", reads);
	cr_expect_eq(pushes, 200 / 32, "%" PRIu64 " head pushes for 200 messages at gamma 32", pushes);
	pushes = ping_pong_head_pushes("rb2-idlepush", &idle, &reads);
	cr_expect_geq(idle, 200 - 200 / 32 - 1, "rb2-idlepush: %" PRIu64 " pushes because the ring drained", idle);
	cr_expect_eq(reads, 0);
}

/* L5: a data WRITE and a tail WRITE per message, the head READ (lazy pull). */
Test(rb2_chan, preset_l5_writes_twice_per_message_and_reads_the_head)
{
	struct rb2_tx_stats ts;

	preset_pair("l5");
	for (uint64_t seq = 0; seq < 200; seq++) {   /* past the ring: READs */
		write_msg(seq);
		read_msg(seq);
	}
	rb2_tx_stats_get(tx, &ts);
	cr_assert_eq(ts.tail_writes, 200, "%" PRIu64 " tail WRITEs", (uint64_t)ts.tail_writes);
	cr_assert_eq(ts.slot_writes, 200, "%" PRIu64 " slot WRITEs", (uint64_t)ts.slot_writes);
	cr_assert_gt(ts.head_reads, 0, "the head is READ");
}

/* FaRM: a WRITE per message (marker, and its length), no tail WRITE. */
Test(rb2_chan, preset_farm_polls_a_marker_per_message)
{
	struct rb2_tx_stats ts;

	preset_pair("farm");
	send_and_drain(200);
	rb2_tx_stats_get(tx, &ts);
	cr_assert_eq(ts.tail_writes, 0);
	cr_assert_eq(ts.slot_writes, 200, "%" PRIu64 " slot WRITEs", (uint64_t)ts.slot_writes);
}

/* SocksDirect: a completion for every WRITE, at most 10 in flight; while
 * the window is full (here: a NIC that does not answer, played by a hook
 * that refuses until the test lets it go; shm completes every WR at once)
 * messages accumulate and go out together, a WRITE_WITH_IMM publishing
 * several. */
static int
nic_busy(void *arg, uint32_t inflight, uint32_t want, uint32_t window)
{
	int *busy = arg;

	return !*busy && inflight + want <= window;
}

Test(rb2_chan, preset_socksdirect_signals_every_write_and_caps_ten_in_flight)
{
	struct rb2_tx_stats ts;
	struct rb2_rx_stats rs;
	int busy = 0;

	preset_pair("socksdirect");
	send_and_drain(50);
	rb2_tx_stats_get(tx, &ts);
	cr_assert_eq(ts.wrs, 100, "a slot WRITE and a WRITE_WITH_IMM per message: %" PRIu64,
		     (uint64_t)ts.wrs);
	cr_assert_eq(ts.signaled_wrs, ts.wrs, "a completion for every WR: %" PRIu64 " of %" PRIu64,
		     (uint64_t)ts.signaled_wrs, (uint64_t)ts.wrs);
	cr_assert_leq(ts.max_inflight_seen, 10, "%" PRIu64 " in flight", (uint64_t)ts.max_inflight_seen);
	cr_assert_eq(ts.cqes, 50, "one WRITE_WITH_IMM per message while the window is open");

	/* A window that stays full: 30 messages accumulate behind the first. */
	cr_assert_eq(rb2_tx_admission_hook(tx, nic_busy, &busy), 0);
	busy = 1;
	for (uint64_t seq = 50; seq < 80; seq++)
		write_msg(seq);
	rb2_tx_stats_get(tx, &ts);
	cr_assert_gt(ts.admission_deferrals, 0);
	busy = 0;
	rb2_tx_flush(tx);
	for (uint64_t seq = 50; seq < 80; seq++)
		read_msg(seq);
	rb2_tx_stats_get(tx, &ts);
	rb2_rx_stats_get(rx, &rs);
	cr_assert_lt(ts.cqes, 50 + 30, "accumulated messages share a WRITE_WITH_IMM: %" PRIu64 " CQEs",
		     (uint64_t)ts.cqes);
	cr_assert_eq(rs.messages, 80);
	cr_assert_eq(rb2_tx_admission_hook(tx, NULL, NULL), 0);
}

/* ---- RB2_CHAN_F_LEN_IN_SLOT: a message's length in its first slot ---- */

/* A variable-size channel of @p slots x 64 B set up by @p preset, with the
 * length in the slot (@p in_slot) or in lens[] (lean without it: FaRM's
 * lens[] WRITE). */
static void
open_preset(const char *spec, const char *preset, uint32_t slots, int in_slot)
{
	struct rb2_chan_params p;

	rb2_chan_params_init(&p);
	p.slots = slots;
	cr_assert_eq(rb2_chan_params_preset(&p, preset), 0);
	cr_assert(p.flags & RB2_CHAN_F_LEN_IN_SLOT, "%s carries lengths in the slot", preset);
	if (!in_slot)
		p.flags &= ~RB2_CHAN_F_LEN_IN_SLOT;
	open_pair(spec, &p);
}

/* The header's place and the payload's, 8 bytes into the slot: the most that
 * fits one 64-byte slot (48 bytes with a poll message's header and marker,
 * 56 under a tail) and one byte more, which takes two; zero-length and
 * marked messages; then laps of every length from 0 to 199 across wraps. A
 * poll message's header is [length][its marker's low word] and zeroed once
 * released; under a tail it is [length][0] and stays (nothing is read past
 * the tail, so nothing needs clearing). */
static void
lengths_in_slot(const char *spec, const char *preset)
{
	struct rb2_msg m[8];
	uint8_t buf[256];
	uint64_t hdr, want;
	uint32_t fit;
	int poll;
	void *slot = NULL;

	open_preset(spec, preset, 16, 1);
	poll = tx->h.p.tail_sync == RB2_TAIL_POLL_MSG;
	fit = 64 - (poll ? 16 : 8);
	cr_assert_eq(rb2_tx_max_msg(tx), 8 * 64 - (64 - fit), "half the ring less header (and marker)");
	rb2_test_fill(buf, fit, 1);
	cr_assert_eq(rb2_tx_reserve(tx, fit, &slot), 0);
	cr_assert_eq((uintptr_t)slot % 64, 8, "the payload follows the header");
	memcpy(slot, buf, fit);
	rb2_tx_commit(tx, fit);
	rb2_tx_flush(tx);
	cr_assert_eq(rb2_rx_peek_burst(rx, m, 8), 1);
	cr_assert_eq(m[0].data, (void *)(rx->slots + 8));
	cr_assert_eq(m[0].len, fit);
	cr_assert_eq(m[0].next_lo, 1, "one slot");
	cr_assert(rb2_test_check(m[0].data, fit, 1));
	memcpy(&hdr, rx->slots, 8);
	want = poll ? __rb2_len_hdr(0, fit) : fit;    /* [fit][0] */
	cr_assert_eq(hdr, want, "header %#" PRIx64, hdr);
	rb2_rx_release_burst(rx, m, 1);
	memcpy(&hdr, rx->slots, 8);
	if (poll)
		cr_assert_eq(hdr, 0, "the receiver zeroed the header");
	cr_assert_eq(rb2_tx_send(tx, buf, fit + 1), 0);
	cr_assert_eq(rb2_tx_send(tx, buf, 0), 0);
	cr_assert_eq(rb2_tx_reserve(tx, 16, &slot), 0);
	memset(slot, 7, 16);
	rb2_tx_commit(tx, 16 | RB2_MSG_MARK);
	rb2_tx_flush(tx);
	cr_assert_eq(rb2_rx_peek_burst(rx, m, 8), 3);
	cr_assert_eq(m[0].len, fit + 1);
	cr_assert_eq(m[0].next_lo, 3, "two slots");
	cr_assert_eq(m[1].len, 0, "an empty message");
	cr_assert(rb2_msg_marked(&m[2]) && rb2_msg_len(&m[2]) == 16, "the mark beside the length");
	rb2_rx_release_burst(rx, m, 3);
	laps_of_lengths(0);
}

Test(rb2_chan, len_in_slot_carries_every_length_copy)
{
	lengths_in_slot("shm,mode=copy", "lean");
}

Test(rb2_chan, len_in_slot_carries_every_length_loadstore)
{
	lengths_in_slot("shm,mode=loadstore", "lean");
}

Test(rb2_chan, len_in_slot_write_twice_copy)
{
	lengths_in_slot("shm,mode=copy", "rb2");
}

Test(rb2_chan, len_in_slot_write_twice_loadstore)
{
	lengths_in_slot("shm,mode=loadstore", "rb2");
}

Test(rb2_chan, len_in_slot_unbatched_copy)
{
	lengths_in_slot("shm,mode=copy", "rb2-unbatched");
}

Test(rb2_chan, len_in_slot_write_imm_copy)
{
	lengths_in_slot("shm,mode=copy", "socksdirect");
}

Test(rb2_chan, len_in_slot_write_imm_loadstore)
{
	lengths_in_slot("shm,mode=loadstore", "socksdirect");
}

/* The WRs of 40 messages of 40 bytes (one slot each, no wrap) on @p preset,
 * with the length in the slot or not, and its tail WRITEs checked. */
static uint64_t
wrs_for_40(const char *preset, int in_slot, uint64_t tail_writes)
{
	struct rb2_tx_stats ts;

	open_preset("shm,mode=copy", preset, 64, in_slot);
	send_and_drain(40);
	rb2_tx_stats_get(tx, &ts);
	cr_assert_eq(ts.tail_writes, tail_writes);
	close_pair();
	return ts.wrs;
}

/* One WRITE per message of any length that fits: the same poll message
 * without the flag (FaRM's) posts its length in a second one. */
Test(rb2_chan, len_in_slot_is_one_write_per_message)
{
	uint64_t with = wrs_for_40("lean", 1, 0), without = wrs_for_40("lean", 0, 0);

	cr_assert_eq(with, 40, "%" PRIu64 " WRs for 40 messages", with);
	cr_assert_eq(without, 80, "%" PRIu64 " WRs for 40 messages without the flag", without);
}

/* rb2-unbatched publishes each message: its slot and its tail, two WRITEs;
 * with the length in lens[] three. */
Test(rb2_chan, len_in_slot_drops_the_lens_write_under_a_tail)
{
	uint64_t with = wrs_for_40("rb2-unbatched", 1, 40);
	uint64_t without = wrs_for_40("rb2-unbatched", 0, 40);

	cr_assert_eq(with, 80, "%" PRIu64 " WRs for 40 messages", with);
	cr_assert_eq(without, 120, "%" PRIu64 " WRs for 40 messages without the flag", without);
}

/* Five one-slot messages of @p preset on 8 slots, taken; then 200 bytes (4
 * slots) that pad slots 5-7 and wrap, over padding slots poisoned as the
 * wire would leave them. @return the WRs the wrapping send posted. */
static uint64_t
wrap_past_padding(const char *preset)
{
	struct rb2_tx_stats before, after;
	struct rb2_msg m[8];
	uint8_t buf[256];

	open_preset("shm,mode=copy", preset, 8, 1);
	memset(buf, 0x11, sizeof(buf));
	for (int i = 0; i < 5; i++)
		cr_assert_eq(rb2_tx_send(tx, buf, 40), 0);
	cr_assert_eq(rb2_rx_peek_burst(rx, m, 8), 5);
	rb2_rx_release_burst(rx, m, 5);
	memset((uint8_t *)(uintptr_t)rx->slots + 5 * 64, 0xa5, 3 * 64);
	rb2_tx_stats_get(tx, &before);
	rb2_test_fill(buf, 200, 9);
	cr_assert_eq(rb2_tx_send(tx, buf, 200), 0);
	rb2_tx_flush(tx);
	rb2_tx_stats_get(tx, &after);
	return after.wrs - before.wrs;
}

/* Only the padding's header was written (no other padding byte), and the
 * receiver skips to the message at slot 0, left peeked in @p m. */
static void
expect_padding_skipped(struct rb2_msg *m)
{
	for (uint32_t i = 5 * 64 + 8; i < 8 * 64; i++)
		cr_assert_eq(rx->slots[i], 0xa5, "padding byte %u was written", i);
	cr_assert_eq(rb2_rx_peek_burst(rx, m, 8), 1);
	cr_assert_eq(m[0].data, (void *)(rx->slots + 8), "wrapped to slot 0");
	cr_assert_eq(m[0].len, 200);
	cr_assert(rb2_test_check(m[0].data, 200, 9));
}

/* Wrap padding is its header alone: an 8-byte WRITE into the first padded
 * slot; the rest of the padding is not sent. The receiver skips it on
 * sight and zeroes the padding's headers and markers. */
Test(rb2_chan, len_in_slot_padding_is_its_header_alone)
{
	struct rb2_msg m[8];
	uint64_t hdr;

	wrap_past_padding("lean");
	memcpy(&hdr, rx->slots + 5 * 64, 8);
	cr_assert_eq(hdr, __rb2_len_hdr(5, RB2_LEN_SKIP), "the padding's header %#" PRIx64, hdr);
	expect_padding_skipped(m);
	for (uint32_t s = 5; s < 8; s++) {
		uint64_t start, end;

		memcpy(&start, rx->slots + s * 64, 8);
		memcpy(&end, rx->slots + (s + 1) * 64 - 8, 8);
		cr_expect(start == 0 && end == 0, "padding slot %u left %#" PRIx64 " / %#" PRIx64,
			  s, start, end);
	}
	rb2_rx_release_burst(rx, m, 1);
}

/* The same under a tail: its header [RB2_LEN_SKIP][0] alone is written,
 * and the wrapping send is 3 WRs: the padding's header, the slots, the
 * tail. */
Test(rb2_chan, len_in_slot_tail_padding_is_its_header_alone)
{
	struct rb2_msg m[8];
	uint64_t wrs = wrap_past_padding("rb2-unbatched");
	uint32_t hdr[2];

	cr_assert_eq(wrs, 3, "the padding's header, the slots, the tail: %" PRIu64, wrs);
	memcpy(hdr, rx->slots + 5 * 64, 8);
	cr_assert(hdr[0] == RB2_LEN_SKIP && hdr[1] == 0, "the padding's header %#x %#x", hdr[0],
		  hdr[1]);
	expect_padding_skipped(m);
	rb2_rx_release_burst(rx, m, 1);
}

Test(rb2_chan, len_in_slot_needs_both_halves)
{
	struct rb2_chan_params p, q;

	/* Any tail sync may carry it (write-twice here). */
	rb2_chan_params_init(&p);
	p.flags |= RB2_CHAN_F_LEN_IN_SLOT;
	cr_expect_eq(rb2_chan_params_check(&p, NULL, 0), 0);
	cr_expect(rb2_chan_len_in_slot(&p));
	cr_expect_eq(rb2_chan_msg_overhead(&p), 8);
	cr_expect_eq(rb2_chan_max_msg(&p), p.slots / 2 * p.slot_size - 8);
	/* No effect on a fixed-size channel: its length is known. */
	rb2_chan_params_init(&p);
	cr_assert_eq(rb2_chan_params_preset(&p, "lean"), 0);
	p.msg_size = 40;
	cr_expect_eq(rb2_chan_params_check(&p, NULL, 0), 0);
	cr_expect(!rb2_chan_len_in_slot(&p));
	cr_expect_eq(rb2_chan_max_msg(&p), 40);
	cr_expect_eq(rb2_chan_msg_overhead(&p), 8, "a fixed-size poll message keeps its marker");
	/* A sender with it and a receiver without do not pair. */
	rb2_chan_params_init(&p);
	cr_assert_eq(rb2_chan_params_preset(&p, "lean"), 0);
	q = p;
	q.flags &= ~RB2_CHAN_F_LEN_IN_SLOT;
	xp = rb2_xport_open_spec("shm");
	tx = rb2_tx_create("t", xp, &p);
	rx = rb2_rx_create("t", xp, &q);
	cr_assert(tx != NULL && rx != NULL);
	cr_expect_neq(rb2_chan_pair(tx, rx), 0, "halves that disagree on the length's place");
}

/* Lean (RB²'s latency mode): with a fixed-size channel one WRITE per
 * message, no tail WRITE, and the head pushed every half ring, never because
 * the ring drained. */
Test(rb2_chan, preset_lean_writes_once_per_message_and_pushes_the_head_rarely)
{
	struct rb2_chan_params p;
	struct rb2_tx_stats ts;
	struct rb2_rx_stats rs;

	rb2_chan_params_init(&p);
	p.slots = 64;
	p.slot_size = 64;
	p.msg_size = 40;
	cr_assert_eq(rb2_chan_params_preset(&p, "lean"), 0);
	open_pair("shm,mode=copy", &p);
	send_and_drain(200);                 /* a ping-pong: drained every time */
	rb2_tx_stats_get(tx, &ts);
	rb2_rx_stats_get(rx, &rs);
	cr_assert_eq(ts.wrs, 200, "%" PRIu64 " WRs for 200 messages", (uint64_t)ts.wrs);
	cr_assert_eq(ts.tail_writes, 0);
	cr_assert_eq(rs.idle_pushes, 0);
	cr_assert_leq(rs.head_pushes, 200 / 32, "%" PRIu64 " head pushes", (uint64_t)rs.head_pushes);
	cr_assert_eq(ts.head_reads, 0, "never short of room");
}

Test(rb2_chan, an_admission_window_needs_room_for_a_transmission)
{
	struct rb2_chan_params p;
	char why[160];

	rb2_chan_params_init(&p);
	p.max_inflight = 3;
	cr_assert_eq(rb2_chan_params_check(&p, why, sizeof(why)), -EINVAL);
	cr_assert(strstr(why, "max_inflight") != NULL, "%s", why);
	p.max_inflight = 0;
	open_pair("shm", &p);
	cr_assert_eq(rb2_tx_admission_hook(tx, nic_busy, NULL), -EINVAL, "no window, no hook");
}


/*
 * A ring outlives its owner's destroy while its peer may still store into
 * it. On shm nothing revokes the peer's access as RDMA revokes an rkey: a
 * sender that has not noticed its receiver go would store into memory the
 * group hands out next (another channel's ring; raasd saw frames twice that
 * way). So the ring stays reserved until the sender lets go too, and the
 * sender's late stores land there, not in anything allocated since. The
 * loop driver's WRITEs are stores too: a lane flushes a destroyed queue's
 * waiting WRITEs after its peer may have freed its ring (the soak once
 * found a fresh lane's fields written that way), so it holds rings alike.
 * Only shm's rings are memzones, which the checks by name need.
 */
static void
ring_outlives_owner(const char *spec)
{
	struct rb2_chan_params p;
	struct rb2_xport_mr fresh;
	const uint8_t *b;
	size_t zeros = 0;
	bool memzones = strncmp(spec, "shm", 3) == 0;

	rb2_chan_params_init(&p);
	p.alpha = p.beta = 1;
	open_pair(spec, &p);
	write_msg(0);
	read_msg(0);
	rb2_rx_destroy(rx);
	rx = NULL;
	cr_expect(!memzones || rte_memzone_lookup("rb2r.t") != NULL,
		  "%s: the receiver's ring is still reserved while the sender holds it", spec);
	cr_assert_eq(rb2_xport_mr_alloc(xp, "fresh", 1 << 16, SOCKET_ID_ANY, &fresh), 0);
	/* The sender has not noticed: its stores still go to the old ring. */
	for (uint64_t i = 1; i <= 64; i++)
		write_msg(i);
	rb2_tx_flush(tx);
	b = fresh.addr;
	for (size_t i = 0; i < fresh.len; i++)
		zeros += b[i] == 0;
	cr_expect_eq(zeros, fresh.len, "%s: %zu bytes of memory allocated since were stored into",
		     spec, fresh.len - zeros);
	rb2_tx_destroy(tx);
	tx = NULL;
	cr_expect(!memzones || rte_memzone_lookup("rb2r.t") == NULL,
		  "%s: freed once the sender let go", spec);
	cr_expect(!memzones || rte_memzone_lookup("rb2s.t") == NULL,
		  "%s: the sender's own ring freed", spec);
	/* The name is free for the next channel. */
	struct rb2_tx *again = rb2_tx_create("t", xp, &p);
	cr_assert_not_null(again, "%s: the name is free again", spec);
	rb2_tx_destroy(again);
	rb2_xport_mr_free(xp, &fresh);
}

Test(rb2_chan, ring_outlives_its_owner_while_the_peer_holds_it_loadstore)
{
	ring_outlives_owner("shm,mode=loadstore");
}

Test(rb2_chan, ring_outlives_its_owner_while_the_peer_holds_it_copy)
{
	ring_outlives_owner("shm,mode=copy");
}

Test(rb2_chan, ring_outlives_its_owner_while_the_peer_holds_it_loop)
{
	ring_outlives_owner("loop");
}

static void
freed_region_not_held(const char *name)
{
	bool memzones = strcmp(name, "shm") == 0;
	struct rb2_xport_mr mr;
	uint64_t addr;
	uint32_t rkey;

	xp = rb2_xport_open(name, NULL);
	cr_assert_not_null(xp);
	cr_assert_eq(rb2_xport_mr_alloc(xp, "held", 4096, SOCKET_ID_ANY, &mr), 0);
	addr = (uintptr_t)mr.addr;
	rkey = mr.rkey;
	cr_expect_eq(rb2_xport_peer_hold(xp, addr, rkey ^ 1), -ESTALE, "a wrong key is refused");
	cr_assert_eq(rb2_xport_peer_hold(xp, addr, rkey), 0);
	cr_expect_eq(rb2_xport_peer_hold(xp, addr, rkey), -EBUSY, "one holder at a time");
	rb2_xport_mr_free(xp, &mr);
	cr_expect(!memzones || rte_memzone_lookup("held") != NULL,
		  "held: the owner's free leaves it");
	cr_expect_eq(rb2_xport_peer_hold(xp, addr, rkey), -EBUSY,
		     "%s: still held after its owner's free", name);
	rb2_xport_peer_release(xp, addr, rkey);
	cr_expect(!memzones || rte_memzone_lookup("held") == NULL, "the last to let go frees it");
	cr_expect_eq(rb2_xport_peer_hold(xp, addr, rkey), -ESTALE,
		     "%s: a freed region is refused", name);
}

Test(rb2_chan, a_freed_region_cannot_be_held)
{
	freed_region_not_held("shm");
}

Test(rb2_chan, a_freed_loop_region_cannot_be_held)
{
	freed_region_not_held("loop");
}

/* Send @p len bytes with nobody flushing, retrying while the ring is full:
 * meanwhile the receiver only polls, taking the small (8-byte) messages
 * published before (counted in @p got). @return the send's result, and the
 * attempts in @p tries. */
static int
send_polling(const char *preset, const uint8_t *big, uint32_t len, uint8_t *out, size_t cap,
	     uint32_t *got, int *tries)
{
	int ret = -ENOBUFS;

	for (*tries = 0; *tries < 1000 && ret == -ENOBUFS; (*tries)++) {
		ret = rb2_tx_send(tx, big, len);
		if (ret == -ENOBUFS) {
			int r = rb2_rx_recv(rx, out, (uint32_t)cap);

			cr_assert(r == 8 || r == -EAGAIN, "%s: recv %d", preset, r);
			*got += r == 8;
		}
	}
	return ret;
}

/*
 * A sender whose receiver pushes its head lazily must still get room for
 * the largest message (half the ring) at any ring position: with the head
 * pushed only every gamma slots and the ring drained, the sender's view
 * lags by up to gamma - 1 slots, and a message that wraps needs its padding
 * too. (The lean preset once waited forever for one that wrapped after three
 * small messages.) With RB2_CHAN_F_LAZY_HEAD the sender READs the head the
 * receiver stored when it drained; with the flag on the receiver only, the
 * sender learns it from the descriptor.
 */
/* The head was READ at some point exactly when the receiver does not push
 * on draining (so the tests above did take that path). */

static void
expect_reads_iff_lazy(const char *preset, const struct rb2_chan_params *rxp)
{
	struct rb2_tx_stats ts;

	rb2_tx_stats_get(tx, &ts);
	if (rxp->flags & RB2_CHAN_F_LAZY_HEAD)
		cr_expect_gt(ts.head_reads, 0, "%s: the sender never READ the head", preset);
	else
		cr_expect_eq(ts.head_reads, 0, "%s: %" PRIu64 " head READs", preset,
			     (uint64_t)ts.head_reads);
}

static void
largest_message_at_every_position(const char *preset, int lazy_rx_only, uint32_t slots)
{
	struct rb2_chan_params p, pt;
	static uint8_t big[64 * 64], out[64 * 64];
	uint32_t max;

	rb2_chan_params_init(&p);
	p.slots = slots;
	p.slot_size = 64;
	cr_assert_eq(rb2_chan_params_preset(&p, preset), 0);
	cr_assert_eq(rb2_chan_params_check(&p, NULL, 0), 0);
	max = rb2_chan_max_msg(&p);
	pt = p;
	if (lazy_rx_only)
		pt.flags &= ~RB2_CHAN_F_LAZY_HEAD;
	xp = rb2_xport_open("shm", "mode=copy");
	tx = rb2_tx_create("t", xp, &pt);
	rx = rb2_rx_create("t", xp, &p);
	cr_assert(tx != NULL && rx != NULL && rb2_chan_pair(tx, rx) == 0);
	cr_expect_eq(max, p.slots / 2 * 64 - rb2_chan_msg_overhead(&p),
		     "%s: half the ring", preset);
	cr_expect_eq(rb2_tx_send(tx, big, max + 1), -EMSGSIZE, "%s: one byte over the limit", preset);
	cr_assert_leq(max, sizeof(big));
	for (uint32_t shift = 0; shift < 4 * p.slots; shift++) {
		uint32_t extra = shift % RTE_MIN(p.alpha, p.slots / 4), got = 0, none = 0;
		int ret, tries;

		/* Move the tail on by one small message each round (the
		 * receiver polling meanwhile, as its loop would: its head
		 * may not have been pushed since it drained)... */
		cr_assert_eq(send_polling(preset, big, 8, out, sizeof(out), &none, &tries), 0,
			     "%s: a small message into a drained ring", preset);
		cr_assert_eq(none, 0);
		rb2_tx_flush(tx);
		cr_assert_eq(rb2_rx_recv(rx, out, sizeof(out)), 8);
		/* ...and leave some more committed, unpublished if batched
		 * (fewer than alpha, and past params.eager), with nobody
		 * flushing them. */
		for (uint32_t i = 0; i < extra; i++)
			cr_assert_eq(send_polling(preset, big, 8, out, sizeof(out), &got, &tries), 0);
		memset(big, (int)shift, max);
		ret = send_polling(preset, big, max, out, sizeof(out), &got, &tries);
		cr_assert_eq(ret, 0, "%s: a %u-byte message after %u small ones, %u of them unflushed: %s after %d tries",
			     preset, max, shift + 1, extra, strerror(-ret), tries);
		rb2_tx_flush(tx);
		for (; got < extra; got++)
			cr_assert_eq(rb2_rx_recv(rx, out, sizeof(out)), 8);
		cr_assert_eq(rb2_rx_recv(rx, out, sizeof(out)), (int)max);
		cr_assert_eq(out[max - 1], (uint8_t)shift);
	}
	expect_reads_iff_lazy(preset, &p);
}

Test(rb2_chan, largest_message_fits_at_every_position_rb2)
{
	largest_message_at_every_position("rb2", 0, 16);
}

Test(rb2_chan, largest_message_fits_at_every_position_rb2_idlepush)
{
	largest_message_at_every_position("rb2-idlepush", 0, 16);
}

/* Batching too: up to alpha - 1 committed slots wait unpublished. */
Test(rb2_chan, largest_message_fits_at_every_position_rb2_batched)
{
	largest_message_at_every_position("rb2", 0, 128);
}

Test(rb2_chan, largest_message_fits_at_every_position_rb2_noeager)
{
	largest_message_at_every_position("rb2-noeager", 0, 16);
}

Test(rb2_chan, largest_message_fits_at_every_position_lean)
{
	largest_message_at_every_position("lean", 0, 16);
}

Test(rb2_chan, largest_message_fits_at_every_position_lean_receiver_only)
{
	largest_message_at_every_position("lean", 1, 16);
}

/*
 * The worst case exactly: the head unpushed by as much as it can be (up to
 * gamma - 1), as many commits unpublished as batching leaves (up to
 * alpha - 1), and the largest message where it needs the most padding.
 * Nobody flushes; the receiver only polls. The largest message must fit.
 */
static void
largest_message_worst_case(const char *preset, uint32_t slots)
{
	struct rb2_chan_params p;
	static uint8_t big[64 * 64], out[64 * 64];
	uint32_t max, k, pos, u = 0, c = 0, h0, got = 0;
	int ret, tries;

	rb2_chan_params_init(&p);
	p.slots = slots;
	p.slot_size = 64;
	cr_assert_eq(rb2_chan_params_preset(&p, preset), 0);
	max = rb2_chan_max_msg(&p);
	k = (max + rb2_chan_msg_overhead(&p) + 63) / 64;
	pos = slots - (k - 1);      /* a k-slot message here pads k - 1 first */
	/* The largest lag u + c reachable with one-slot messages from slot 0,
	 * where pushes fall on multiples of gamma: u = head % gamma. */
	for (uint32_t cu = 0; cu < p.alpha; cu++)
		for (uint32_t uu = 0; uu < p.gamma; uu++)
			if ((pos + slots - cu - uu) % p.gamma == 0 && uu + cu > u + c)
				u = uu, c = cu;
	h0 = (pos + slots - c) % slots;
	open_pair("shm,mode=copy", &p);
	for (uint32_t i = 0; i < h0; i++) {
		cr_assert_eq(rb2_tx_send(tx, big, 8), 0);
		rb2_tx_flush(tx);
		cr_assert_eq(rb2_rx_recv(rx, out, sizeof(out)), 8);
	}
	for (uint32_t i = 0; i < c; i++)
		cr_assert_eq(rb2_tx_send(tx, big, 8), 0);
	ret = send_polling(preset, big, max, out, sizeof(out), &got, &tries);
	cr_assert_eq(ret, 0, "%s: the largest message (%u slots) at slot %u, head %u slots unpushed, %u committed unpublished: %s after %d tries",
		     preset, k, pos, u, c, strerror(-ret), tries);
	rb2_tx_flush(tx);
	for (; got < c; got++)
		cr_assert_eq(rb2_rx_recv(rx, out, sizeof(out)), 8);
	cr_assert_eq(rb2_rx_recv(rx, out, sizeof(out)), (int)max);
	expect_reads_iff_lazy(preset, &p);
}

Test(rb2_chan, largest_message_fits_in_the_worst_case_lean)
{
	largest_message_worst_case("lean", 16);
}

Test(rb2_chan, largest_message_fits_in_the_worst_case_rb2)
{
	largest_message_worst_case("rb2", 128);
}
