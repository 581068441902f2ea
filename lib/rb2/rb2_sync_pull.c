/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Head sync, lazy pull (§IV-A): the receiver only publishes its head in its
 * own region (a local store, at the points where lazy push would WRITE it);
 * the sender, short of room, READs it into local_head and waits for the
 * READ. One round trip per refresh, on the sender's path: the cost the paper
 * measures against lazy push.
 */

#include <errno.h>

#include "rb2_chan_pvt.h"

static int
pull_publish(struct rb2_rx *rx)
{
	/* Release: our reads of the freed slots before the head; pairs with
	 * the sender's READ (an acquire load on load/store shm). */
	atomic_store_explicit((_Atomic uint64_t *)rx->head_shadow, rx->head,
			      memory_order_release);
	return 0;
}

static void
pull_refresh(struct rb2_tx *tx)
{
	struct rb2_xport_wr w = {
		.wr_id = WRID_PULL,
		.local = (void *)(uintptr_t)tx->local_head,
		.remote = tx->h.peer.addr + RB2_REGION_SHADOW_OFF,
		.len = sizeof(uint64_t), .lkey = tx->h.mr.lkey, .rkey = tx->h.peer.rkey,
		.opcode = RB2_WR_READ, .flags = RB2_WR_SIGNALED,
	};

	RB2_STAT_ADD(&tx->stats, head_reads, 1);
	if (tx->peer_head_pub != NULL) {
		/* Load/store: the READ is an acquire load, pairing with the
		 * receiver's release store of its head. */
		atomic_store_explicit(tx->local_head,
				      atomic_load_explicit(tx->peer_head_pub, memory_order_acquire),
				      memory_order_relaxed);
		return;
	}
	rb2_tx_post(tx, &w, 1);
	if (tx->h.err != 0)
		return;
	tx->pull_inflight++;
	for (uint32_t spins = 0; tx->pull_inflight > 0 && tx->h.err == 0 &&
	     spins < RB2_POST_SPINS; spins++)
		rb2_tx_reap(&tx->h);
	if (tx->pull_inflight > 0 && tx->h.err == 0)
		rb2_tx_fail(tx, -ETIMEDOUT, "the head READ did not complete");
}

const struct rb2_head_ops rb2_head_pull_ops = {
	.name = "lazy pull",
	.rx_publish = pull_publish,
	.tx_refresh = pull_refresh,
};
