/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Tail sync, poll message (§IV-A; FaRM's design, and the paper's FaRM
 * baseline): no tail pointer crosses the link. Each message ends, in its last
 * slot, with an 8-byte marker the receiver polls for (odd, so never the zero
 * the receiver leaves; different on every lap). Its length goes first (the
 * lens[] WRITE before the slots' WRITE, or a store before the marker's
 * release store), so a marker seen means length and payload are there.
 *
 * A marker can be forged, though: a marker is always a slot's last 8 bytes,
 * and any other bytes that land there (a payload word, or padding the
 * sender's mirror never clears) can hold the marker a later message will
 * have there. The property suite's soak found one: an old marker's high
 * bytes in the mirror's padding, its low byte overwritten by a payload byte,
 * equalled the next lap's marker, and a message was taken before its
 * payload had landed. So the receiver zeroes what it consumed, as the paper
 * says the poll-message receiver must: the last 8 bytes of every slot of a
 * released message or of skipped wrap padding (the only places a marker is
 * looked for), and marks the length consumed (RB2_LEN_EMPTY: zero-length
 * messages are legal).
 *
 * With RB2_CHAN_F_LEN_IN_SLOT (the "lean" preset) the length goes in an
 * 8-byte header at the start of the message's first slot instead: the
 * length, then the low word of the marker, so that a header left from an
 * earlier lap never matches. The receiver reads the header where its head
 * is, finds the marker from the length, and zeroes the headers' places as
 * it zeroes the markers'. The message, its length and its marker are one
 * WRITE (FaRM's own layout: a header and a trailing marker); wrap padding
 * is its header alone (RB2_LEN_SKIP).
 *
 * It relies on a WRITE landing front to back, which not every RNIC
 * guarantees (the paper's reason to leave it out of RB²); the shm
 * transport's copy mode lands WRITEs in address order, as FaRM's NICs did.
 */

#include <errno.h>

#include <rte_cycles.h>
#include <rte_pause.h>

#include "rb2_chan_pvt.h"

static void
poll_tx_init(struct rb2_tx *tx)
{
	tx->trailer = RB2_MARKER_SIZE + tx->leader;
}

static void
poll_rx_init(struct rb2_rx *rx)
{
	/* Every lens[] entry starts consumed. */
	for (uint32_t i = 0; rx->msg_size == 0 && i <= rx->mask; i++)
		((uint32_t *)(uintptr_t)rx->lens)[i] = RB2_LEN_EMPTY;
	rx->poll_msg = 1;
}

/* Zero the last 8 bytes of slots @first..@last, where markers are looked
 * for (and with RB2_CHAN_F_LEN_IN_SLOT the first 8, where headers are):
 * nothing left there can pass for a later message's marker. The head push
 * that returns these slots to the sender orders the zeroes before the
 * sender's next WRITE there.
 *
 * Relaxed atomic stores (a plain mov on x86): a wrap padding is zeroed on
 * sight of its header, which is the first word of a WRITE that goes on to
 * land the padding's other slots; nothing orders those after the sight (no
 * marker follows them), so a plain store there would race with the WRITE
 * still landing. What lands late is the sender's mirror, an earlier lap's
 * marker, which no later message's marker equals. */
static inline void
zero_slot_ends(struct rb2_rx *rx, uint32_t first, uint32_t last)
{
	uint8_t *end = (uint8_t *)(uintptr_t)rx->slots + (size_t)(first + 1) * rx->slot_size -
		RB2_MARKER_SIZE;

	for (uint32_t s = first; s <= last; s++, end += rx->slot_size) {
		atomic_store_explicit((_Atomic uint64_t *)(uintptr_t)end, 0, memory_order_relaxed);
		if (rx->leader != 0)
			atomic_store_explicit((_Atomic uint64_t *)(uintptr_t)(end + RB2_MARKER_SIZE -
									  rx->slot_size),
					      0, memory_order_relaxed);
	}
}

/* The markers publish: there is no tail to WRITE. */
static unsigned int
poll_publish(struct rb2_tx *tx, struct rb2_xport_wr *w __rte_unused,
	     enum rb2_publish how __rte_unused)
{
	RB2_POS_STORE(tx->pub_tail, tx->tail);
	return 0;
}

/* RB2_CHAN_F_LEN_IN_SLOT: store the header @p hdr at the start of slot
 * @p pos: into the receiver's ring (load/store; it polls the header, so an
 * atomic store, ordered before the marker's release store), or into the
 * mirror, to travel with the slots' WRITE. */
static inline void
put_hdr(struct rb2_tx *tx, uint32_t pos, uint64_t hdr)
{
	void *at = tx->slots + (size_t)pos * tx->slot_size;

	if (tx->h.loadstore)
		atomic_store_explicit((_Atomic uint64_t *)at, hdr, memory_order_relaxed);
	else
		*(uint64_t *)at = hdr;
}

/* Commit: end each of @n messages of @len bytes from free-running slot @t
 * (after a wrap skip of @skip slots) with its marker, and start it with its
 * header (RB2_CHAN_F_LEN_IN_SLOT) or give its length to lens[]. */
void
__rb2_tx_mark(struct rb2_tx *tx, uint64_t t, uint32_t skip, uint32_t len, unsigned int n)
{
	uint32_t need = __rb2_nslots((len & ~RB2_MSG_MARK) + tx->trailer, tx->slot_size);
	int in_slot = tx->leader != 0;
	/* With WRITEs, lens[] travels by ranges from the mirror, inner entries
	 * of multi-slot messages and of the wrap padding included: those must
	 * read "consumed", or a stale length (or skip) from an earlier lap
	 * would be taken for a new one. (Load/store stores only the entries
	 * that start something, and the receiver consumes each of them.) */
	int ranges = !tx->h.loadstore && tx->msg_size == 0 && !in_slot;

	if (skip != 0) {
		if (in_slot)
			put_hdr(tx, (uint32_t)t & tx->mask, __rb2_len_hdr(t, RB2_LEN_SKIP));
		else if (tx->h.loadstore && tx->msg_size == 0)
			atomic_store_explicit((_Atomic uint32_t *)&tx->peer_lens[t & tx->mask],
					      RB2_LEN_SKIP, memory_order_relaxed); /* polled */
		for (uint32_t q = ((uint32_t)t & tx->mask) + 1; ranges && q <= tx->mask; q++)
			tx->lens[q] = RB2_LEN_EMPTY;
		t += skip;
	}
	for (unsigned int i = 0; i < n; i++, t += need) {
		uint32_t pos = (uint32_t)t & tx->mask;
		void *mark = tx->slots + (size_t)(pos + need) * tx->slot_size - RB2_MARKER_SIZE;

		if (in_slot)
			put_hdr(tx, pos, __rb2_len_hdr(t, len));
		if (!tx->h.loadstore) {   /* travels with the slots' WRITE */
			for (uint32_t j = 1; ranges && j < need; j++)
				tx->lens[pos + j] = RB2_LEN_EMPTY;
			*(uint64_t *)mark = __rb2_marker(t);
			continue;
		}
		if (tx->msg_size == 0 && !in_slot)
			atomic_store_explicit((_Atomic uint32_t *)&tx->peer_lens[pos], len,
					      memory_order_relaxed); /* polled */
		/* Release: the payload and its length before the marker. */
		atomic_store_explicit((_Atomic uint64_t *)mark, __rb2_marker(t),
				      memory_order_release);
	}
}

/* The word that says a poll message's length: a lens[] entry (@p width 4)
 * or the slot's header (8, RB2_CHAN_F_LEN_IN_SLOT). Relaxed: the marker's
 * acquire orders what follows. */
static inline uint64_t
len_word(const void *p, unsigned int width)
{
	return width == 8 ? atomic_load_explicit((const _Atomic uint64_t *)p, memory_order_relaxed) :
		atomic_load_explicit((const _Atomic uint32_t *)p, memory_order_relaxed);
}

/* Poll message: does an impossible length word at @p p change within
 * 100 ms? A WRITE still landing does; a corrupt ring does not. */
static int
poll_word_settles(const void *p, unsigned int width, uint64_t was)
{
	uint64_t deadline = rte_get_timer_cycles() + rte_get_timer_hz() / 10;

	while (len_word(p, width) == was) {
		if (rte_get_timer_cycles() > deadline)
			return 0;
		rte_pause();
	}
	return 1;
}

int
__rb2_rx_peek_poll(struct rb2_rx *rx, struct rb2_msg *msgs, unsigned int n)
{
	uint32_t trailer = RB2_MARKER_SIZE + rx->leader;
	uint64_t h = rx->head;
	unsigned int i = 0;

	while (i < n) {
		uint32_t pos = (uint32_t)h & rx->mask;
		uint32_t len = rx->msg_size, need = 1;
		const uint8_t *slot = rx->slots + (size_t)pos * rx->slot_size;
		/* Where the length is: the slot's header (RB2_CHAN_F_LEN_IN_SLOT)
		 * or lens[]. */
		const void *lp = rx->leader != 0 ? (const void *)slot : (const void *)&rx->lens[pos];
		unsigned int width = rx->leader != 0 ? 8 : 4;
		uint64_t word = 0;
		const _Atomic uint64_t *mark;

		if (rx->msg_size == 0) {
			word = len_word(lp, width);
			len = (uint32_t)word;
			/* A header that is zero or an earlier lap's, or a
			 * consumed lens[] entry: nothing (yet). */
			if (rx->leader != 0 ? (uint32_t)(word >> 32) != (uint32_t)__rb2_marker(h) :
			    len == RB2_LEN_EMPTY)
				break;
			if (len == RB2_LEN_SKIP) {
				/* Wrap padding: nothing to deliver; free it now
				 * (only the first message of a peek may follow). */
				if (i > 0)
					break;
				zero_slot_ends(rx, pos, rx->mask);
				if (rx->leader == 0)
					atomic_store_explicit((_Atomic uint32_t *)(uintptr_t)lp,
							      RB2_LEN_EMPTY, memory_order_relaxed);
				h += rx->mask + 1 - pos;
				RB2_POS_STORE(rx->head, h);
				continue;
			}
			need = __rb2_nslots((len & ~RB2_MSG_MARK) + trailer, rx->slot_size);
			if (unlikely((len & ~RB2_MSG_MARK) > rx->max_len ||
				     pos + need > rx->mask + 1)) {
				/* Torn (a WRITE landing on the empty mark byte by
				 * byte, as rxe does) or corrupt: only a torn one
				 * changes. */
				if (poll_word_settles(lp, width, word))
					continue;
				return i > 0 ? (int)i : __rb2_rx_corrupt(rx, h, len);
			}
		}
		mark = (const _Atomic uint64_t *)(uintptr_t)(slot + (size_t)need * rx->slot_size -
							     RB2_MARKER_SIZE);
		/* Acquire: pairs with the sender's release store (or ordered
		 * WRITE) of the marker after payload and length. */
		if (atomic_load_explicit(mark, memory_order_acquire) != __rb2_marker(h))
			break;                        /* not all there yet */
		/* A length read before the marker may have been torn (a NIC
		 * writes byte-wise); it is final now. */
		if (rx->msg_size == 0 && len_word(lp, width) != word)
			continue;
		msgs[i].data = (void *)(uintptr_t)(slot + rx->leader);
		rte_prefetch0(msgs[i].data);
		msgs[i].len = len;
		msgs[i].next_lo = (uint32_t)(h + need);
		i++;
		h += need;
	}
	return i > 0 ? (int)i : rb2_rx_idle(rx);
}

void
__rb2_rx_release_poll(struct rb2_rx *rx, const struct rb2_msg *msgs, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		uint32_t pos = (uint32_t)(((const uint8_t *)msgs[i].data - rx->slots) /
					  rx->slot_size);

		/* Every slot's end, the marker's included (see the top), and
		 * with the length in the slot every slot's start. */
		zero_slot_ends(rx, pos, (msgs[i].next_lo - 1) & rx->mask);
		if (rx->msg_size == 0 && rx->leader == 0)
			((uint32_t *)(uintptr_t)rx->lens)[pos] = RB2_LEN_EMPTY;
	}
}

const struct rb2_tail_ops rb2_tail_poll_ops = {
	.name = "poll message",
	.lens_at_commit = 1,
	.tx_init = poll_tx_init,
	.rx_init = poll_rx_init,
	.tx_publish = poll_publish,
};
