/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Head sync, lazy push (§IV-A; the paper's choice and the default): the
 * receiver WRITEs its head into the sender's local_head every gamma released
 * slots, and at once when it finds the ring drained (idle push). The sender
 * only reads its own memory. Under RB2_CHAN_F_ROOM_WAKE a wake-up follows
 * each push, for a sender asleep for room.
 */

#include "rb2_chan_pvt.h"

static int
push_publish(struct rb2_rx *rx)
{
	struct rb2_xport_wr w[2];
	unsigned int n = 0;

	if (rx->peer_head != NULL) {
		/* Load/store. Release: our reads of the freed slots before the
		 * head; pairs with the acquire load in __rb2_tx_make_room(). */
		atomic_store_explicit(rx->peer_head, rx->head, memory_order_release);
	} else {
		/* Atomic: with RB2_CHAN_F_LAZY_HEAD the sender may READ this
		 * word at any time (rb2_tx_read_head()); it holds this value
		 * already then. */
		atomic_store_explicit((_Atomic uint64_t *)rx->head_shadow, rx->head,
				      memory_order_relaxed);
		rb2_chan_word_wr(&w[n++], &rx->h, rx->head_shadow, RB2_REGION_PTR_OFF, WRID_HEAD,
				 0);
	}
	/* RB2_CHAN_F_ROOM_WAKE: a sender asleep for room wakes behind the
	 * head (in chain order: after it landed). Every push: a sleeping
	 * sender is always owed one (rb2_tx_wait_arm()), so no word need
	 * say that it sleeps, and the push comes only every gamma slots. */
	if (rx->h.p.flags & RB2_CHAN_F_ROOM_WAKE)
		rb2_chan_wake_wr(&w[n++], &rx->h);
	return n > 0 ? rb2_rx_post(rx, w, n) : 0;
}

const struct rb2_head_ops rb2_head_push_ops = {
	.name = "lazy push",
	.rx_publish = push_publish,
};
