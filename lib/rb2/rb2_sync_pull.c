/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Head sync, lazy pull (§IV-A): the receiver only publishes its head in its
 * own region (a local store, at the points where lazy push would WRITE it);
 * the sender, short of room, READs it and waits for the READ. One round trip
 * per refresh, on the sender's path: the cost the paper measures against
 * lazy push.
 *
 * A READ of a word that changes meanwhile can come back torn: a PCIe NIC
 * reads an aligned 8 bytes at once, but Soft-RoCE copies byte by byte, and a
 * head read half before and half after the receiver's store (old low bytes,
 * new high ones) can run AHEAD of the real head. The sender would then
 * overwrite slots not yet read (the verbs suite caught it: a message lost,
 * others a lap early). So the receiver publishes the head with its
 * complement, complement first, in two adjacent words, and the sender READs
 * the 16 bytes and takes the head only when the two agree (and it lies
 * between the head it had and the tail it published). When they disagree
 * (a torn READ, or a receiver preempted between its two stores) it READs
 * again a few times, then keeps the head it had: no room this time, and the
 * caller tries again. With the copy ascending, agreement means both words
 * came from one store (each byte of the head was read before the
 * complement's, so a mix of versions in one cannot be matched in the other);
 * a head that agrees but lies outside that range is a protocol error.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "rb2_chan_pvt.h"

#define PULL_WORDS (RB2_PULL_CHECK + 1) /* the head, its complement */
#define PULL_LAND 4   /* where the READ lands in our shadow line: [4, 6) */
#define PULL_TRIES 4  /* inconsistent READs before keeping the old head */

void
rb2_rx_store_head(struct rb2_rx *rx)
{
	atomic_store_explicit((_Atomic uint64_t *)&rx->head_shadow[RB2_PULL_CHECK], ~rx->head,
			      memory_order_relaxed);
	/* Release: our reads of the freed slots, and the complement, before
	 * the head; pairs with the sender's READ (an acquire load on
	 * load/store shm). */
	atomic_store_explicit((_Atomic uint64_t *)rx->head_shadow, rx->head,
			      memory_order_release);
}

static int
pull_publish(struct rb2_rx *rx)
{
	rb2_rx_store_head(rx);
	return 0;
}

/* Post @w (signaled, WRID_PULL): rb2_tx_reap() counts its completion. */
static int
pull_post(struct rb2_tx *tx, const struct rb2_xport_wr *w)
{
	rb2_tx_post(tx, w, 1);
	if (tx->h.err == 0)
		tx->pull_inflight++;
	return tx->h.err;
}

/* Post @w (signaled, WRID_PULL) and wait for its completion, at most
 * RB2_POST_WAIT_MS; 0 when it completed. */
static int
post_wait(struct rb2_tx *tx, const struct rb2_xport_wr *w, const char *what)
{
	uint64_t until = 0;

	if (pull_post(tx, w) != 0)
		return tx->h.err;
	for (uint32_t spins = 0; tx->pull_inflight > 0 && tx->h.err == 0 &&
	     !rb2_post_wait_over(&until, spins); spins++)
		rb2_tx_reap(&tx->h);
	if (tx->pull_inflight > 0 && tx->h.err == 0)
		rb2_tx_fail(tx, -ETIMEDOUT, what);
	return tx->h.err;
}

/* One READ of the receiver's head and complement; 0 when it completed. */
static int
pull_once(struct rb2_tx *tx, uint64_t *land)
{
	struct rb2_xport_wr w = {
		.wr_id = WRID_PULL,
		.local = land,
		.remote = tx->h.peer.addr + RB2_REGION_SHADOW_OFF,
		.len = PULL_WORDS * sizeof(uint64_t), .lkey = tx->h.mr.lkey,
		.rkey = tx->h.peer.rkey, .opcode = RB2_WR_READ, .flags = RB2_WR_SIGNALED,
	};

	return post_wait(tx, &w, "the head READ did not complete");
}

/* RC completes a WR once the peer acknowledged it, and acknowledges in
 * order: once the fence completes, everything posted before has landed. */
static struct rb2_xport_wr
fence_wr(struct rb2_tx *tx)
{
	return (struct rb2_xport_wr){
		.wr_id = WRID_PULL, .local = tx->tail_shadow,
		.remote = tx->h.peer.addr + RB2_REGION_SHADOW_OFF, .len = 0,
		.lkey = tx->h.mr.lkey, .rkey = tx->h.peer.rkey, .opcode = RB2_WR_WRITE,
		.flags = RB2_WR_SIGNALED,
	};
}

void
rb2_tx_fence(struct rb2_tx *tx)
{
	struct rb2_xport_wr w = fence_wr(tx);

	if (tx->h.err == 0)
		(void)post_wait(tx, &w, RB2_FENCE_LATE);
}

int
rb2_tx_fence_post(struct rb2_tx *tx)
{
	struct rb2_xport_wr w = fence_wr(tx);

	return tx->h.err != 0 ? tx->h.err : pull_post(tx, &w);
}

uint64_t
rb2_tx_read_head(struct rb2_tx *tx, uint64_t had)
{
	uint64_t *land = &tx->tail_shadow[PULL_LAND];

	RB2_STAT_ADD(&tx->stats, head_reads, 1);
	if (tx->peer_head_pub != NULL) {
		/* Load/store: the READ is an acquire load, pairing with the
		 * receiver's release store of its head. */
		return RTE_MAX(had, atomic_load_explicit(tx->peer_head_pub, memory_order_acquire));
	}
	for (unsigned int i = 0; i < PULL_TRIES; i++) {
		uint64_t h, c;

		if (pull_once(tx, land) != 0)
			return had;
		h = atomic_load_explicit((_Atomic uint64_t *)&land[0], memory_order_acquire);
		c = atomic_load_explicit((_Atomic uint64_t *)&land[RB2_PULL_CHECK],
					 memory_order_relaxed);
		if (c != ~h) {
			/* Torn, or the receiver is between its two stores
			 * (and may stay there for a whole time slice). */
			RB2_STAT_ADD(&tx->stats, torn_head_reads, 1);
			continue;
		}
		if (unlikely(h < had || h > tx->pub_tail)) {
			char what[128];

			snprintf(what, sizeof(what), "the receiver published head %" PRIu64
				 ", outside [%" PRIu64 ", %" PRIu64 "], the head we had and the tail we published",
				 h, had, tx->pub_tail);
			rb2_tx_fail(tx, -EPROTO, what);
			return had;
		}
		return h;
	}
	/* Keep the head we had: no room this time; the caller tries again
	 * and the receiver will have finished its publish by then. */
	return had;
}

static void
pull_refresh(struct rb2_tx *tx)
{
	/* Lazy pull: nobody else writes local_head. */
	atomic_store_explicit(tx->local_head,
			      rb2_tx_read_head(tx, atomic_load_explicit(tx->local_head,
									memory_order_relaxed)),
			      memory_order_relaxed);
}

const struct rb2_head_ops rb2_head_pull_ops = {
	.name = "lazy pull",
	.rx_publish = pull_publish,
	.tx_refresh = pull_refresh,
};
