/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Tail sync, write-twice (§IV-A; the paper's choice and the default): after
 * the slots' WRITE, a second WRITE of the tail into the receiver's
 * local_tail, on the same queue behind the same doorbell, so RC ordering
 * lands it after the slots. It is the channel's only signaled WR.
 *
 * Elastic threshold (§IV-B): at a pointer advancement whose predecessor's
 * tail WRITE has not completed, the network is busy: the tail sync is
 * deferred (counted) and slot transmission goes on. A flush never defers.
 * RB2_CHAN_F_NO_ELASTIC (ablation M4) WRITEs it every time.
 */

#include "rb2_chan_pvt.h"

static unsigned int
wt_publish(struct rb2_tx *tx, struct rb2_xport_wr *w, enum rb2_publish how)
{
	if (how == RB2_PUBLISH_NONE)
		return 0;
	if (tx->h.loadstore) {
		/* A store completes at once: the elastic threshold never
		 * defers here. */
		if (tx->pub_tail != tx->tail) {
			/* Release: the slots and lens[] before the tail; pairs
			 * with the acquire load of local_tail in
			 * rb2_rx_peek_burst(). */
			atomic_store_explicit(tx->peer_tail, tx->tail, memory_order_release);
			RB2_POS_STORE(tx->pub_tail, tx->tail);
			RB2_STAT_ADD(&tx->stats, tail_writes, 1);
		}
		return 0;
	}
	if (how == RB2_PUBLISH_ADVANCE && tx->tail_inflight > 0 &&
	    !(tx->h.p.flags & RB2_CHAN_F_NO_ELASTIC)) {
		RB2_STAT_ADD(&tx->stats, deferred_tail_syncs, 1);
		return 0;
	}
	*tx->tail_shadow = tx->tail;
	rb2_chan_word_wr(&w[0], &tx->h, tx->tail_shadow, RB2_REGION_PTR_OFF, WRID_TAIL,
			 RB2_WR_SIGNALED);
	RB2_POS_STORE(tx->pub_tail, tx->tail);
	tx->tail_inflight++;
	RB2_STAT_ADD(&tx->stats, tail_writes, 1);
	return 1;
}

const struct rb2_tail_ops rb2_tail_wt_ops = {
	.name = "write-twice",
	.tx_publish = wt_publish,
};
