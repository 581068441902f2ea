/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * The sender's slow path (Algorithm 1, WRITEMSG, past the inline commit):
 * slot transmission every beta slots, pointer advancement every alpha,
 * flush, and waiting for room. How the tail is published is the tail sync
 * policy's (rb2_sync_*.c); how the head comes back, the head policy's.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <rte_errno.h>

#include <rb2_xport_lane.h>

#include "rb2_chan_pvt.h"

void
rb2_tx_fail(struct rb2_tx *tx, int err, const char *what)
{
	if (tx->h.err == 0)
		RB2_CHAN_LOG(ERR, "channel '%s' sender failed: %s: %s; committed messages past the last published tail (%" PRIu64 " slots) are not delivered",
			     tx->h.name, what, rte_strerror(-err), tx->tail - tx->pub_tail);
	tx->h.err = err;
	tx->limit = 0; /* every reserve now takes the slow path and fails */
}

int
rb2_tx_reap(struct rb2_chan_half *h)
{
	struct rb2_tx *tx = rb2_half_tx(h);
	struct rb2_xport_wc wc[8];
	unsigned int wakes = 0;
	int n;

	/* Also the driver's own completions (a NIC recycles its send queue
	 * through them), so poll even with no tail WRITE in flight. */
	while ((n = rb2_xport_poll(h->qp, wc, RTE_DIM(wc))) != 0) {
		if (n < 0) {
			rb2_tx_fail(tx, n, "polling completions");
			break;
		}
		for (int i = 0; i < n; i++) {
			if (wc[i].status != RB2_WC_SUCCESS) {
				char what[96];

				snprintf(what, sizeof(what), "a %s completed with '%s'",
					 wc[i].opcode == RB2_WC_RECV_IMM ? "room wake-up's receive" :
					 "WRITE", rb2_xport_wc_status_str(h->xp, wc[i].status));
				rb2_tx_fail(tx, -EIO, what);
			} else if (wc[i].opcode == RB2_WC_RECV_IMM) {
				wakes++;   /* a head push's wake-up (RB2_CHAN_F_ROOM_WAKE) */
				continue;
			}
			if (tx->max_inflight != 0 && tx->wr_inflight > 0)
				tx->wr_inflight--;  /* with a window, every WR completes */
			if (wc[i].wr_id == WRID_TAIL && tx->tail_inflight > 0)
				tx->tail_inflight--;
			if (wc[i].wr_id == WRID_PULL && tx->pull_inflight > 0)
				tx->pull_inflight--;
		}
	}
	if (wakes > 0) {
		int ret = rb2_xport_post_recv(h->qp, wakes);

		RB2_STAT_ADD(&tx->stats, room_wakeups, wakes);
		if (ret < 0)
			rb2_tx_fail(tx, ret, "re-posting room wake-up receives");
	}
	return h->err;
}

/* rb2_tx_wait_arm(), and with @p room 0 the credit sleep, which waits only
 * for what holds a publication: -EAGAIN once nothing does. */
static int
wait_arm(struct rb2_tx *tx, struct rb2_xport_doorbell *db, int room)
{
	void *slot;
	int held, ret;

	if (tx->room_bell == NULL)
		return -ENOTSUP;
	if (tx->h.err != 0)
		return tx->h.err;
	/* What is committed must be out: its release is the push we wait for. */
	held = rb2_tx_flush_or_defer(tx);
	if (held < 0)
		return held;
	/* Armed before the last look: a push that lands after the look
	 * raises the doorbell. */
	ret = rb2_xport_doorbell_arm(tx->h.qp, tx->room_bell, db);
	RB2_STAT_WAKE_REQUESTS(&tx->stats, tx->h.qp);
	if (ret < 0)
		return ret;
	/* Held (only credits hold a flush, bar an admission hook, whose
	 * window a WR's completion frees): the credit return's wake-up, or
	 * that completion, rings after a look that finds none. */
	if (held == 1) {
		held = rb2_tx_flush_or_defer(tx);
		if (held == 1) {
			RB2_STAT_ADD(&tx->stats, room_sleeps, 1);
			RB2_STAT_ADD(&tx->stats, held_sleeps, 1);
			return 0;
		}
		if (held < 0) {
			rb2_xport_doorbell_done(tx->h.qp);
			RB2_STAT_WAKE_REQUESTS(&tx->stats, tx->h.qp);
			return held;
		}
	}
	if (!room) {
		rb2_xport_doorbell_done(tx->h.qp);
		RB2_STAT_WAKE_REQUESTS(&tx->stats, tx->h.qp);
		return -EAGAIN;
	}
	/* The look for room is a reservation of one slot, which leaves
	 * nothing behind (a reservation is only a position). */
	ret = rb2_tx_reserve(tx, 0, &slot);
	if (ret != -ENOBUFS) {
		rb2_xport_doorbell_done(tx->h.qp);
		RB2_STAT_WAKE_REQUESTS(&tx->stats, tx->h.qp);
		return ret < 0 ? ret : -EAGAIN;
	}
	RB2_STAT_ADD(&tx->stats, room_sleeps, 1);
	return 0;
}

int
rb2_tx_wait_arm(struct rb2_tx *tx, struct rb2_xport_doorbell *db)
{
	return wait_arm(tx, db, 1);
}

int
rb2_tx_credit_sleep(struct rb2_tx *tx, unsigned int timeout_us)
{
	struct rb2_xport_doorbell db;
	int ret = wait_arm(tx, &db, 0);

	if (ret != 0)
		return ret;
	ret = rb2_xport_doorbell_wait(&db, 1, timeout_us);
	rb2_tx_wait_done(tx);
	return ret == -ETIMEDOUT || ret == -EINTR ? 0 : ret;
}

/* Awake (or told of the doorbell): @take what it holds (done, leave or
 * drain), then, if @reap, the wake-up receives that came, posted again. */
static void
wait_end(struct rb2_tx *tx, void (*take)(struct rb2_xport_qp *), int reap)
{
	if (tx->room_bell == NULL || tx->h.err != 0)
		return;
	take(tx->h.qp);
	RB2_STAT_WAKE_REQUESTS(&tx->stats, tx->h.qp);
	if (reap)
		rb2_tx_reap(&tx->h);
}

void
rb2_tx_wait_done(struct rb2_tx *tx)
{
	wait_end(tx, rb2_xport_doorbell_done, 1);
}

void
rb2_tx_wait_leave(struct rb2_tx *tx)
{
	wait_end(tx, rb2_xport_doorbell_leave, 1);
}

void
rb2_tx_wait_drain(struct rb2_tx *tx)
{
	wait_end(tx, rb2_xport_doorbell_drain, 0);
}

void
rb2_tx_post(struct rb2_tx *tx, const struct rb2_xport_wr *w, unsigned int n)
{
	struct rb2_xport_wr all[RB2_TX_CHAIN_MAX];
	unsigned int sig = 0;
	int ret;

	if (n == 0)
		return;
	if (unlikely(tx->max_inflight != 0 && n <= RTE_DIM(all))) {
		/* An admission window counts completions: signal every WR. */
		for (unsigned int i = 0; i < n; i++) {
			all[i] = w[i];
			all[i].flags |= RB2_WR_SIGNALED;
			if (all[i].wr_id == 0)
				all[i].wr_id = WRID_DATA;
		}
		w = all;
	}
	ret = rb2_chan_post(&tx->h, w, n, rb2_tx_reap);
	if (unlikely(ret < 0)) {
		rb2_tx_fail(tx, ret, "posting WRITEs");
		return;
	}
	for (unsigned int i = 0; i < n; i++)
		sig += (w[i].flags & RB2_WR_SIGNALED) != 0;
	RB2_STAT_ADD(&tx->stats, wrs, n);
	RB2_STAT_ADD(&tx->stats, chains, 1);
	RB2_STAT_ADD(&tx->stats, signaled_wrs, sig);
	if (tx->max_inflight != 0) {
		tx->wr_inflight += n;
		if (tx->wr_inflight > tx->stats.max_inflight_seen)
			atomic_store_explicit(&tx->stats.max_inflight_seen, tx->wr_inflight,
					      memory_order_relaxed);
	}
}

int
rb2_tx_admission_hook(struct rb2_tx *tx, rb2_tx_admit_t fn, void *arg)
{
	if (tx->max_inflight == 0)
		return -EINVAL;
	tx->admit_arg = arg;
	tx->admit = fn;
	return 0;
}

/* The WRs a transmission of what is committed, published as @how says,
 * may take (an upper bound: the lens[] WRITE of a fixed-size channel and a
 * deferred tail WRITE are not sent). */
static uint32_t
wrs_needed(const struct rb2_tx *tx, enum rb2_publish how)
{
	uint32_t pos = (uint32_t)tx->esc_tail & tx->mask;
	uint32_t ranges = tx->tail - tx->esc_tail > (uint64_t)(tx->mask + 1 - pos) ? 2 : 1;

	return ranges * (tx->msg_size == 0 ? 2 : 1) + (how != RB2_PUBLISH_NONE);
}

static int
admitted(const struct rb2_tx *tx, uint32_t want)
{
	if (tx->admit != NULL)
		return tx->admit(tx->admit_arg, tx->wr_inflight, want, tx->max_inflight);
	/* On a lane with a window the window is the lane's QP's, shared by
	 * every channel on it. */
	if (tx->lane_window != NULL)
		return rb2_xport_lane_room(tx->lane_window, want) >= want;
	return tx->wr_inflight + want <= tx->max_inflight;
}

/*
 * The admission window (params.max_inflight): may this transmission go out?
 * A slot transmission or pointer advancement that does not fit is deferred:
 * its messages stay committed and go out with the next, in fewer, larger
 * WRITEs (RDMAbox merges while its regulator holds requests back;
 * SocksDirect batches while its ten are in flight). A flush waits, reaping,
 * for room.
 */
static int
admit(struct rb2_tx *tx, enum rb2_publish how)
{
	uint32_t want = wrs_needed(tx, how);
	uint64_t until = 0;

	if (admitted(tx, want))
		return 1;
	for (uint32_t spins = 0; !rb2_post_wait_over(&until, spins) && tx->h.err == 0; spins++) {
		rb2_tx_reap(&tx->h);
		if (admitted(tx, want))
			return 1;
		if (how != RB2_PUBLISH_FLUSH) {
			RB2_STAT_ADD(&tx->stats, admission_deferrals, 1);
			return 0;
		}
	}
	if (tx->h.err == 0)
		rb2_tx_fail(tx, -ETIMEDOUT, "a flush found no room in the admission window (an admission hook that never admits?)");
	return 0;
}

/* One contiguous range of slots [a, a+k): its lens entries (unless the
 * channel is fixed-size or carries lengths in the slots), then its first
 * @ks slots (the rest is wrap padding: not sent, but for its header where
 * lengths are in the slots, which is how the receiver learns of the skip). */
static __rte_always_inline unsigned int
range_wrs(struct rb2_tx *tx, struct rb2_xport_wr *w, uint32_t a, uint32_t k, uint32_t ks)
{
	const struct rb2_chan_desc *pd = &tx->h.peer;
	uint64_t peer_lens = pd->addr + RB2_REGION_LENS_OFF;
	uint64_t peer_slots = pd->addr + rb2_region_slots_off(pd->slots, pd->flags);
	uint32_t llen = k * (uint32_t)sizeof(uint32_t);
	uint32_t max_inline = tx->h.qp->max_inline;
	unsigned int n = 0;

	if (tx->msg_size == 0 && tx->leader == 0)
		w[n++] = (struct rb2_xport_wr){
			.local = &tx->lens[a], .remote = peer_lens + (uint64_t)a * 4,
			.len = llen, .lkey = tx->h.mr.lkey, .rkey = pd->rkey,
			.opcode = RB2_WR_WRITE,
			.flags = llen <= max_inline ? RB2_WR_INLINE : 0,
		};
	if (ks != 0) {
		w[n++] = (struct rb2_xport_wr){
			.local = tx->slots + (size_t)a * tx->slot_size,
			.remote = peer_slots + (uint64_t)a * tx->slot_size,
			.len = ks * tx->slot_size, .lkey = tx->h.mr.lkey, .rkey = pd->rkey,
			.opcode = RB2_WR_WRITE,
			.flags = ks * tx->slot_size <= max_inline ? RB2_WR_INLINE : 0,
		};
		RB2_STAT_ADD(&tx->stats, slot_writes, 1);
	}
	if (ks < k && tx->leader != 0)      /* the padding's header */
		w[n++] = (struct rb2_xport_wr){
			.local = tx->slots + (size_t)(a + ks) * tx->slot_size,
			.remote = peer_slots + (uint64_t)(a + ks) * tx->slot_size,
			.len = RB2_LEN_HDR_SIZE, .lkey = tx->h.mr.lkey, .rkey = pd->rkey,
			.opcode = RB2_WR_WRITE,
			.flags = RB2_LEN_HDR_SIZE <= max_inline ? RB2_WR_INLINE : 0,
		};
	return n;
}

/* A fixed-size channel's messages and bytes, @cnt slots transmitted (one
 * message a slot); variable sizes are counted at commit. */
static inline void
count_fixed(struct rb2_tx *tx, uint64_t cnt)
{
	if (tx->msg_size != 0) {
		RB2_STAT_ADD(&tx->stats, messages, cnt);
		RB2_STAT_ADD(&tx->stats, bytes, cnt * tx->msg_size);
	}
}

/*
 * Slot transmission of [esc_tail, tail), which may wrap (two ranges at most),
 * on a load/store transport: the slots are in RB_R already, so only lens[] is
 * copied (unless the channel is fixed-size, carries lengths in the slots, or
 * the policy stored it at commit), in the order the WR chain would land it.
 */
static inline void
transmit_ls(struct rb2_tx *tx)
{
	uint64_t from = tx->esc_tail, cnt = tx->tail - from;
	uint32_t a = (uint32_t)from & tx->mask;
	uint32_t first = (uint32_t)RTE_MIN(cnt, (uint64_t)(tx->mask + 1 - a));

	if (cnt == 0)
		return;
	count_fixed(tx, cnt);
	tx->esc_tail = tx->tail;
	if (tx->msg_size == 0 && tx->leader == 0 && !tx->h.tail->lens_at_commit) {
		memcpy(&tx->peer_lens[a], &tx->lens[a], first * sizeof(uint32_t));
		if (cnt > first)
			memcpy(tx->peer_lens, tx->lens, (size_t)(cnt - first) * sizeof(uint32_t));
	}
}

/*
 * The same with WRs: appends each range's lens[] and slot WRITEs to @w. The
 * slots of wrap padding (which runs to the end of the ring, so only the
 * first range holds any) are not sent: nothing reads them, and on a
 * poll-message channel they could land after the receiver had consumed the
 * skip on sight of its length, over the slot ends it had zeroed.
 */
static unsigned int
transmit_wrs(struct rb2_tx *tx, struct rb2_xport_wr *w)
{
	uint64_t from = tx->esc_tail, cnt = tx->tail - from;
	uint32_t a = (uint32_t)from & tx->mask;
	uint32_t first = (uint32_t)RTE_MIN(cnt, (uint64_t)(tx->mask + 1 - a)), ks;
	unsigned int n = 0;

	if (cnt == 0)
		return 0;
	count_fixed(tx, cnt);
	tx->esc_tail = tx->tail;
	/* skip_at - from wraps past first unless the padding is in range */
	ks = tx->skip_at - from < first ? (uint32_t)(tx->skip_at - from) : first;
	n += range_wrs(tx, w, a, first, ks);
	if (cnt > first)
		n += range_wrs(tx, w + n, 0, (uint32_t)(cnt - first), (uint32_t)(cnt - first));
	return n;
}

/*
 * Adaptive polling (RB2_CHAN_F_SLEEP): after a publication, and when idle,
 * does the receiver sleep having seen less than we have published? Then wake
 * it, once per sleep, with an RB2_WR_WAKE behind what we published.
 *
 * Where WRITEs are the CPU's stores (shm), this is Dekker's handshake with
 * rb2_rx_sleep_arm(): we publish, then look at its sleep word; it sets the
 * word, then looks at the ring; with a full barrier on both sides between
 * the store and the load, one of the two sees the other's store. Ours is only
 * the compiler's where the receiver's is membarrier(2) (rb2_chan_pvt.h).
 * Over a network (verbs) a publication may land after the receiver's last
 * look although we looked at its word before it had landed: the receiver
 * waits until its word has, so our next look, at the next publication or
 * when idle, finds it, and the word says what it had seen.
 */
static void __rte_noinline
wake_check(struct rb2_tx *tx)
{
	struct rb2_xport_wr w;
	uint64_t sleep;

	if (likely(__atomic_load_n(&rb2_sleep_fence_asym, __ATOMIC_RELAXED)))
		atomic_signal_fence(memory_order_seq_cst);
	else
		atomic_thread_fence(memory_order_seq_cst);
	sleep = atomic_load_explicit(tx->rx_sleep, memory_order_relaxed);
	if (likely(sleep == 0 || sleep == tx->woken || tx->pub_tail < sleep))
		return;
	tx->woken = sleep;             /* once per sleep */
	rb2_chan_wake_wr(&w, &tx->h);
	rb2_tx_post(tx, &w, 1);
	RB2_STAT_ADD(&tx->stats, wakeups, 1);
}

/* With WRs: transmit what is committed and publish it as @how says, in one
 * chain behind one doorbell: slots first, then the policy's tail WRITE. */
static void __rte_noinline
sync_tail_wrs(struct rb2_tx *tx, enum rb2_publish how)
{
	struct rb2_xport_wr w[RB2_TX_CHAIN_MAX]; /* 2 x (lens + slots) + the tail */
	unsigned int n, k;

	if (unlikely(tx->max_inflight != 0) && !admit(tx, how))
		return;
	n = transmit_wrs(tx, w);

	if (how != RB2_PUBLISH_NONE) {
		tx->synced_tail = tx->tail;
		rb2_tx_reap(&tx->h); /* the elastic threshold needs what completed */
	}
	k = tx->h.tail->tx_publish(tx, w + n, how);
	/* A native WRITE_WITH_IMM tail sync rides on the last slot WRITE of
	 * the chain when there is one: the receiver takes the count from its
	 * receive completion, never from the entry the WR would carry, so a
	 * 64 B message is one WR and one packet, as an rsocket send is (two
	 * WRs, and their ACKs, made a ping-pong between two Soft-RoCE guests
	 * 18 packets a request against rsocket's 4). */
	if (k == 1 && n > 0 && w[n].opcode == RB2_WR_WRITE_IMM &&
	    w[n - 1].opcode == RB2_WR_WRITE && w[n - 1].len > 0) {
		w[n - 1].opcode = RB2_WR_WRITE_IMM;
		w[n - 1].imm = w[n].imm;
		w[n - 1].flags |= w[n].flags & RB2_WR_SIGNALED;
		k = 0;
	}
	n += k;
	rb2_tx_post(tx, w, n);
	if (unlikely(tx->rx_sleep != NULL))
		wake_check(tx);
}

/*
 * Load/store: transmit what is committed (lens[] only), then publish it as
 * @how says, with stores. With alpha = 1 (L5, FaRM) this runs per message,
 * so it keeps no WR array and calls nothing it does not need.
 */
static void __rte_noinline
sync_tail_ls(struct rb2_tx *tx, enum rb2_publish how)
{
	transmit_ls(tx);
	if (how != RB2_PUBLISH_NONE)
		tx->synced_tail = tx->tail;
	tx->h.tail->tx_publish(tx, NULL, how);
	if (unlikely(tx->rx_sleep != NULL))
		wake_check(tx);
}

/* The entry points only pick the path: a test and a tail call. */
void
__rb2_tx_transmit(struct rb2_tx *tx)
{
	if (tx->h.loadstore)
		sync_tail_ls(tx, RB2_PUBLISH_NONE);
	else
		sync_tail_wrs(tx, RB2_PUBLISH_NONE);
}

void
__rb2_tx_advance(struct rb2_tx *tx)
{
	if (tx->h.loadstore)
		sync_tail_ls(tx, RB2_PUBLISH_ADVANCE);
	else
		sync_tail_wrs(tx, RB2_PUBLISH_ADVANCE);
}

/* A commit after an idle flush (params.eager): an advancement, counted. */
void
__rb2_tx_advance_eager(struct rb2_tx *tx)
{
	tx->eager_left--;
	RB2_STAT_ADD(&tx->stats, eager_advances, 1);
	__rb2_tx_advance(tx);
}

/* A flush's transmission and publication, once: under WRITE_WITH_IMM sync
 * the publication may still wait for the receiver's credits. */
static void
flush_once(struct rb2_tx *tx)
{
	RB2_STAT_ADD(&tx->stats, flushes, 1);
	if (tx->h.loadstore)
		sync_tail_ls(tx, RB2_PUBLISH_FLUSH);
	else
		sync_tail_wrs(tx, RB2_PUBLISH_FLUSH);
}

int
__rb2_tx_flush(struct rb2_tx *tx)
{
	if (tx->h.err != 0)
		return tx->h.err;
	if (tx->tail == tx->pub_tail) {   /* idle: the receiver may sleep */
		tx->eager_left = tx->eager;
		if (tx->rx_sleep != NULL)
			wake_check(tx);
		return tx->h.err;
	}
	flush_once(tx);
	if (tx->h.tail->tx_flushed != NULL)
		tx->h.tail->tx_flushed(tx);   /* WRITE_WITH_IMM: waits for credits */
	return tx->h.err;
}

int
rb2_tx_flush_or_defer(struct rb2_tx *tx)
{
	if (tx->h.err != 0 || tx->tail == tx->pub_tail)
		return rb2_tx_flush(tx);
	if (tx->max_inflight != 0 && !tx->h.loadstore) {
		rb2_tx_reap(&tx->h);     /* what completed frees the window */
		if (!admitted(tx, wrs_needed(tx, RB2_PUBLISH_FLUSH))) {
			RB2_STAT_ADD(&tx->stats, admission_deferrals, 1);
			return 1;
		}
	}
	flush_once(tx);
	if (tx->h.err != 0)
		return tx->h.err;
	return tx->tail != tx->pub_tail;  /* held for credits (counted) */
}

int
__rb2_tx_make_room(struct rb2_tx *tx, uint64_t need)
{
	uint64_t h;

	if (tx->h.err != 0)
		return tx->h.err;
	if (tx->h.head->tx_refresh != NULL)
		tx->h.head->tx_refresh(tx);   /* lazy pull: READ the head */
	h = rb2_tx_head(tx);
	tx->limit = h + tx->mask;
	if (tx->tail + need <= tx->limit)
		return 0;

	rb2_tx_reap(&tx->h);
	if (tx->h.err == 0) {
		int gone = rb2_chan_peer_check(&tx->h);

		if (gone < 0)
			rb2_tx_fail(tx, gone, "the receiver is gone");
	}
	/* A receiver with RB2_CHAN_F_LAZY_HEAD pushes its head only when it
	 * has released gamma slots since its last push, never because its
	 * ring drained. Fewer than gamma published slots beyond the head we
	 * have: no push may ever come, so READ the head it stores when it
	 * drains. This is the only READ, and only when short of room, so a
	 * ping-pong costs no head traffic but the push every gamma. Signed: a
	 * poll-message receiver on load/store sees each message at its commit,
	 * so its head, and a push, can run ahead of pub_tail. */
	if (tx->peer_gamma != 0 && tx->h.head->tx_refresh == NULL && tx->h.err == 0 &&
	    (int64_t)(tx->pub_tail - h) < (int64_t)tx->peer_gamma) {
		tx->read_head = rb2_tx_read_head(tx, h);
		h = rb2_tx_head(tx);
		tx->limit = h + tx->mask;
		if (tx->tail + need <= tx->limit)
			return 0;
	}
	/* Liveness: if the receiver has consumed everything we published, only
	 * a tail WRITE can free room; so can a tail deferred by the elastic
	 * threshold once its predecessor has completed. */
	if (tx->tail != tx->pub_tail &&
	    (h == tx->pub_tail ||
	     (tx->tail_inflight == 0 && tx->pub_tail != tx->synced_tail)))
		__rb2_tx_flush(tx);
	RB2_STAT_ADD(&tx->stats, full_events, 1);
	return tx->h.err != 0 ? tx->h.err : -ENOBUFS;
}

int
__rb2_tx_check_due(struct rb2_tx *tx)
{
	int gone = __rb2_chan_peer_check_clock(&tx->h);

	if (gone < 0)
		rb2_tx_fail(tx, gone, "the receiver is gone");
	return tx->h.err;
}

int
rb2_tx_drained(struct rb2_tx *tx)
{
	if (rb2_tx_check(tx) != 0)
		return tx->h.err;
	/* Also when nothing is unpublished: an idle flush is where a sleeping
	 * receiver that saw less than we published gets woken. */
	if (rb2_tx_flush(tx) != 0)
		return tx->h.err;
	rb2_tx_reap(&tx->h);
	if (rb2_tx_head(tx) == tx->tail)
		return 1;
	if (tx->h.head->tx_refresh != NULL)
		tx->h.head->tx_refresh(tx);     /* lazy pull */
	else if (tx->peer_gamma != 0)
		tx->read_head = rb2_tx_read_head(tx, rb2_tx_head(tx)); /* no push at the drain */
	if (tx->h.err != 0)
		return tx->h.err;
	return rb2_tx_head(tx) == tx->tail;
}
