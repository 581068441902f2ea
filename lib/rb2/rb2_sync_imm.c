/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Tail sync, WRITE_WITH_IMM with CQ polling (§IV-A; SocksDirect's design):
 * the last WRITE of a tail sync raises a completion at the receiver, whose
 * immediate is the number of slots it publishes; the receiver polls its
 * completions and adds them to its tail.
 *
 * On a transport with RB2_XPORT_CAP_IMM (verbs) it is native: the receiver's
 * queue has RB2_CQ_ENTRIES zero-length receives posted, the sender one
 * credit per receive. The receiver re-posts receives in batches (half the
 * ring, or when it runs dry) and WRITEs the count consumed back as the
 * sender's credits. A sender out of credits defers its tail sync (counted).
 *
 * Elsewhere (shm) the channel does what the NIC would: the same 16-byte
 * entry {imm, seq} goes into a completion ring after RB_R's slots, with a
 * WRITE or a release store, one per credit, and the receiver polls that ring
 * (seq tags the lap). The receiver-side cost the paper blames for Push+CQ's
 * tail latency (polling CQEs, replenishing the receive queue) is paid for
 * real on both.
 */

#include <errno.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_pause.h>

#include "rb2_chan_pvt.h"

static void
imm_tx_init(struct rb2_tx *tx)
{
	const struct rb2_chan_params *p = &tx->h.p;

	/* WRs: entries are built in our mirror ring; load/store maps the
	 * receiver's at connection. */
	if (!tx->h.loadstore)
		tx->cq = RTE_PTR_ADD(tx->h.mr.addr,
				     rb2_region_cq_off(p->slots, p->slot_size, p->flags));
	tx->cq_credit = RTE_PTR_ADD(tx->h.mr.addr, RB2_REGION_CREDIT_OFF);
	atomic_store_explicit(tx->cq_credit, 0, memory_order_relaxed);
	tx->imm_native = !tx->h.loadstore && (rb2_xport_caps(tx->h.xp) & RB2_XPORT_CAP_IMM);
}

static void
imm_tx_attach(struct rb2_tx *tx, void *peer_base)
{
	const struct rb2_chan_desc *pd = &tx->h.peer;

	if (peer_base != NULL)
		tx->cq = RTE_PTR_ADD(peer_base, rb2_region_cq_off(pd->slots, pd->slot_size,
								  pd->flags));
}

static void
imm_rx_init(struct rb2_rx *rx)
{
	const struct rb2_chan_params *p = &rx->h.p;

	rx->cq = RTE_PTR_ADD(rx->h.mr.addr, rb2_region_cq_off(p->slots, p->slot_size, p->flags));
	memset(rx->cq, 0, RB2_CQ_ENTRIES * sizeof(*rx->cq));
	rx->cq_next = 1;
	rx->imm_native = (rb2_xport_caps(rx->h.xp) & RB2_XPORT_CAP_IMM) != 0;
}

static int
imm_rx_attach(struct rb2_rx *rx)
{
	int ret;

	rx->peer_credit = NULL;
	if (rx->h.loadstore)
		rx->peer_credit = rb2_xport_peer_ptr(rx->h.qp,
						     rx->h.peer.addr + RB2_REGION_CREDIT_OFF,
						     rx->h.peer.rkey, sizeof(uint64_t));
	/* Native: the sender starts with RB2_CQ_ENTRIES credits, one posted
	 * receive each. A WRITE_WITH_IMM that arrives before them is retried
	 * by the NIC (RNR), not lost. */
	if (rx->imm_native) {
		ret = rb2_xport_post_recv(rx->h.qp, RB2_CQ_ENTRIES);
		if (ret < 0) {
			RB2_CHAN_LOG(ERR, "channel '%s': posting %d receives for WRITE_WITH_IMM: %s",
				     rx->h.name, RB2_CQ_ENTRIES, rte_strerror(-ret));
			return ret;
		}
	}
	return 0;
}

/*
 * The completion entry of [pub_tail, tail), if the receiver has a credit
 * left; else the sync waits for the receiver to replenish (counted). Appends
 * the entry's WRITE (a WRITE_WITH_IMM carrying the slot count when the
 * transport has them: the receiver then reads the immediate from its receive
 * completion, not the entry); load/store stores it.
 */
static unsigned int
imm_publish(struct rb2_tx *tx, struct rb2_xport_wr *w, enum rb2_publish how)
{
	uint64_t credit = atomic_load_explicit(tx->cq_credit, memory_order_acquire);
	const struct rb2_chan_desc *pd = &tx->h.peer;
	struct rb2_cqe *e;

	if (how == RB2_PUBLISH_NONE || tx->tail == tx->pub_tail)
		return 0;
	if (tx->cqes - credit >= RB2_CQ_ENTRIES) {
		RB2_STAT_ADD(&tx->stats, credit_waits, 1);
		return 0;
	}
	e = &tx->cq[tx->cqes % RB2_CQ_ENTRIES];
	tx->cqes++;
	RB2_STAT_ADD(&tx->stats, cqes, 1);
	RB2_STAT_ADD(&tx->stats, tail_writes, 1);
	e->imm = (uint32_t)(tx->tail - tx->pub_tail);
	RB2_POS_STORE(tx->pub_tail, tx->tail);
	if (tx->h.loadstore) {
		/* Release: the slots and lens[] before the entry's tag; pairs
		 * with the acquire load of seq in cq_ring_poll(). */
		atomic_store_explicit((_Atomic uint64_t *)&e->seq, tx->cqes, memory_order_release);
		return 0;
	}
	e->seq = tx->cqes;
	w[0] = (struct rb2_xport_wr){
		.local = e,
		.remote = pd->addr + rb2_region_cq_off(pd->slots, pd->slot_size, pd->flags) +
			(uint64_t)((uintptr_t)e - (uintptr_t)tx->cq),
		.len = sizeof(*e), .lkey = tx->h.mr.lkey, .rkey = pd->rkey,
		.opcode = tx->imm_native ? RB2_WR_WRITE_IMM : RB2_WR_WRITE,
		.imm = e->imm,
		.flags = tx->h.qp->max_inline >= sizeof(*e) ? RB2_WR_INLINE : 0,
	};
	return 1;
}

/*
 * A flush must publish, but the completion entry needs a credit. The
 * receiver hands credits back when it drains, so wait for one (up to a
 * second; the next flush tries again after that). A sender that finishes
 * with a flush, as a pipeline stage sending its end of stream, would
 * otherwise leave its last messages unpublished. Under
 * RB2_CHAN_F_ROOM_WAKE the wait sleeps: the return of credits that lets
 * the publication go rings the sender's doorbell (return_credits()), so a
 * reader that drains late costs the sender no CPU. Without it the sender
 * looks again at full speed, as it must: nothing would wake it.
 */
static void
imm_flushed(struct rb2_tx *tx)
{
	uint64_t hz = rte_get_timer_hz(), deadline = rte_get_timer_cycles() + hz;

	while (tx->pub_tail != tx->tail && tx->h.err == 0) {
		uint64_t now = rte_get_timer_cycles();
		struct rb2_xport_wr w;
		int gone;

		if (now >= deadline)
			break;
		if (rb2_tx_credit_sleep(tx, (unsigned int)((deadline - now) * 1000000 / hz)) ==
		    -ENOTSUP) {
			rte_pause();
			if (!tx->h.loadstore)
				rb2_tx_reap(&tx->h);
			rb2_tx_post(tx, &w, imm_publish(tx, &w, RB2_PUBLISH_FLUSH));
		}
		gone = rb2_chan_peer_check(&tx->h);
		if (gone < 0)
			rb2_tx_fail(tx, gone, "the receiver is gone");
	}
}

/* Native: receive completions came in (rb2_rx_reap()). The receive
 * completion ordered every WRITE before it; only this lcore writes the tail
 * under this sync. */
static void
imm_rx_received(struct rb2_rx *rx, unsigned int n, uint64_t slots)
{
	uint64_t t = atomic_load_explicit(rx->local_tail, memory_order_relaxed);

	rx->cq_consumed += n;
	RB2_STAT_ADD(&rx->stats, cqes, n);
	atomic_store_explicit(rx->local_tail, t + slots, memory_order_relaxed);
}

/* Emulated: consume the completion ring's new entries and add their
 * immediates to the tail. Returns the entries consumed. */
static unsigned int
cq_ring_poll(struct rb2_rx *rx)
{
	uint64_t t = atomic_load_explicit(rx->local_tail, memory_order_relaxed);
	unsigned int got = 0;

	for (;;) {
		struct rb2_cqe *e = &rx->cq[(rx->cq_next - 1) % RB2_CQ_ENTRIES];

		/* Acquire: pairs with the release store (or ordered WRITE)
		 * of the tag after the slots, lens[] and the immediate. */
		if (atomic_load_explicit((_Atomic uint64_t *)&e->seq, memory_order_acquire) !=
		    rx->cq_next)
			break;
		t += e->imm;
		rx->cq_next++;
		rx->cq_consumed++;
		got++;
	}
	if (got > 0) {
		RB2_STAT_ADD(&rx->stats, cqes, got);
		atomic_store_explicit(rx->local_tail, t, memory_order_relaxed);
	}
	return got;
}

/*
 * Give the sender its credits back: one WRITE of the count consumed (native:
 * after re-posting the receives they stand for). Under RB2_CHAN_F_ROOM_WAKE
 * a wake-up follows a return of half the entries or more, for a sender that
 * sleeps for credits (rb2_tx_wait_arm()). No smaller return can find one
 * asleep: it slept with all RB2_CQ_ENTRIES entries unreturned, and until we
 * have consumed half of them we return only on an empty look (emulated),
 * which then has consumed them all. So a ping-pong pays one wake-up per
 * half ring of messages (native), or none (emulated, whose returns on an
 * empty look are each of a few).
 */
static void
return_credits(struct rb2_rx *rx)
{
	uint64_t back = rx->cq_consumed - rx->cq_returned;
	struct rb2_xport_wr w[2];
	unsigned int n = 0;
	int ret;

	if (rx->imm_native) {
		ret = rb2_xport_post_recv(rx->h.qp,
					  (unsigned int)(rx->cq_consumed - rx->cq_returned));
		if (unlikely(ret < 0)) {
			rb2_rx_fail(rx, ret, "re-posting receives: %s", rte_strerror(-ret));
			return;
		}
	}
	rx->cq_returned = rx->cq_consumed;
	RB2_STAT_ADD(&rx->stats, cq_returns, 1);
	if (rx->peer_credit != NULL) {
		/* Release: pairs with the sender's acquire load of its credit. */
		atomic_store_explicit(rx->peer_credit, rx->cq_consumed, memory_order_release);
	} else {
		rx->head_shadow[RB2_SHADOW_CREDITS] = rx->cq_consumed;
		rb2_chan_word_wr(&w[n++], &rx->h, &rx->head_shadow[RB2_SHADOW_CREDITS],
				 RB2_REGION_CREDIT_OFF, 0, 0);
	}
	/* Behind the credit in chain order (on shm, after its store): a
	 * sender woken by it finds the credit. */
	if ((rx->h.p.flags & RB2_CHAN_F_ROOM_WAKE) && back >= RB2_CQ_ENTRIES / 2)
		rb2_chan_wake_wr(&w[n++], &rx->h);
	if (n == 0)
		return;
	ret = rb2_rx_post(rx, w, n);
	if (unlikely(ret < 0))
		rb2_rx_fail(rx, ret, "posting the credit WRITE: %s", rte_strerror(-ret));
}

/*
 * Called by the inline peek when the ring looks empty: poll the receive
 * completions (native) or the completion ring (emulated), and replenish
 * every half ring. Emulated, also whenever the ring has run dry: a store.
 * Native, not then: a WRITE, and its ACK, for every message of a ping-pong
 * (two of the ten packets of a request between two Soft-RoCE guests). The
 * half ring alone keeps a sender going: it is out of credits only with
 * RB2_CQ_ENTRIES entries outstanding, so with more than half of them not
 * consumed yet, which this receiver then sees and consumes, and returns.
 */
void
__rb2_rx_poll_cq(struct rb2_rx *rx)
{
	int got = rx->imm_native ? rb2_rx_reap(&rx->h) : (int)cq_ring_poll(rx);

	if (rx->cq_consumed - rx->cq_returned >= RB2_CQ_ENTRIES / 2 ||
	    (!rx->imm_native && got <= 0 && rx->cq_consumed != rx->cq_returned))
		return_credits(rx);
}

const struct rb2_tail_ops rb2_tail_imm_ops = {
	.name = "WRITE_WITH_IMM",
	.region_extra = RB2_CQ_ENTRIES * sizeof(struct rb2_cqe),
	.tx_init = imm_tx_init,
	.rx_init = imm_rx_init,
	.tx_attach = imm_tx_attach,
	.rx_attach = imm_rx_attach,
	.tx_publish = imm_publish,
	.tx_flushed = imm_flushed,
	.rx_received = imm_rx_received,
};
