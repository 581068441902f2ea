/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * The receiver's slow path (Algorithm 1, READMSG, past the inline peek and
 * release): the head's publication (lazy push every gamma slots, idle push
 * when drained; how is the head policy's), the sender's death, completions,
 * and a corrupt ring.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include <rte_cycles.h>
#include <rte_errno.h>

#include "rb2_chan_pvt.h"

void
rb2_rx_fail(struct rb2_rx *rx, int err, const char *fmt, ...)
{
	char why[192];
	va_list ap;

	if (rx->h.err == 0) {
		va_start(ap, fmt);
		vsnprintf(why, sizeof(why), fmt, ap);
		va_end(ap);
		RB2_CHAN_LOG(ERR, "channel '%s' receiver failed: %s", rx->h.name, why);
	}
	rx->h.err = err;
}

int
rb2_rx_reap(struct rb2_chan_half *h)
{
	struct rb2_rx *rx = rb2_half_rx(h);
	struct rb2_xport_wc wc[16];
	uint64_t slots = 0;
	unsigned int got = 0, wakes = 0;
	int n = rb2_xport_poll(h->qp, wc, RTE_DIM(wc));

	if (n < 0) {
		rb2_rx_fail(rx, n, "polling completions: %s", rte_strerror(-n));
		return n;
	}
	/* Receives of WRITE_WITH_IMM (each immediate: slots published, or a
	 * wake-up), our sleep word's WRITE, bulk READs, and failed sends: the head and
	 * credit WRITEs are unsignaled, so only failures come back. */
	for (int i = 0; i < n; i++) {
		if (wc[i].status != RB2_WC_SUCCESS) {
			rb2_rx_fail(rx, -EIO, "%s completion error: %s",
				    wc[i].opcode == RB2_WC_RECV_IMM ? "WRITE_WITH_IMM receive" :
				    wc[i].wr_id == WRID_BULK ? "READ of a lent buffer (the sender unregistered it?)" :
				    "head/credit WRITE", rb2_xport_wc_status_str(h->xp, wc[i].status));
		} else if (wc[i].opcode == RB2_WR_READ && wc[i].wr_id == WRID_BULK) {
			rx->bulk_reads_done++; /* rb2_bulk_recv() waits for it */
		} else if (wc[i].opcode == RB2_WC_RECV_IMM && wc[i].imm == RB2_IMM_WAKE) {
			wakes++;           /* a sender woke us (RB2_WR_WAKE) */
		} else if (wc[i].opcode == RB2_WC_RECV_IMM) {
			slots += wc[i].imm;
			got++;
		} else if (wc[i].wr_id == WRID_SLEEP) {
			rx->sleep_acked++; /* our sleep word has landed */
		}
	}
	if (wakes > 0) {
		int ret = rb2_xport_post_recv(h->qp, wakes);

		RB2_STAT_ADD(&rx->stats, wakeups, wakes);
		if (ret < 0)
			rb2_rx_fail(rx, ret, "re-posting wake-up receives: %s", rte_strerror(-ret));
	}
	if (got > 0) {
		if (h->tail->rx_received == NULL)
			rb2_rx_fail(rx, -EPROTO, "%u WRITE_WITH_IMM received under %s sync",
				    got, h->tail->name);
		else
			h->tail->rx_received(rx, got, slots);
	}
	return h->err < 0 ? h->err : (int)got;
}

int
rb2_rx_post(struct rb2_rx *rx, const struct rb2_xport_wr *w, unsigned int n)
{
	/* A full queue is reaped: the driver's forced-signal completions free
	 * it, and receives of WRITE_WITH_IMM are counted on the way. */
	int ret = rb2_chan_post(&rx->h, w, n, rb2_rx_reap);

	if (ret >= 0) {
		RB2_STAT_ADD(&rx->stats, wrs, n);
		RB2_STAT_ADD(&rx->stats, chains, 1);
	}
	return ret;
}

void
__rb2_rx_push(struct rb2_rx *rx)
{
	int ret;

	if (rx->h.err != 0)
		return;
	/* RB2_CHAN_F_LAZY_HEAD: what a sender READs is never behind what we
	 * pushed (it takes the larger), and it carries its complement. */
	if (rx->h.p.flags & RB2_CHAN_F_LAZY_HEAD)
		rb2_rx_store_head(rx);
	ret = rx->h.head->rx_publish(rx);
	if (unlikely(ret < 0)) {
		rb2_rx_fail(rx, ret, "publishing the head: %s", rte_strerror(-ret));
		return;
	}
	rx->synced_head = rx->head;
	RB2_STAT_ADD(&rx->stats, head_pushes, 1);
}

int
rb2_rx_notify(struct rb2_rx *rx, uint64_t flags)
{
	struct rb2_xport_wr w;
	int ret;

	if (rx->h.err != 0)
		return rx->h.err;
	rx->notices |= flags;
	if (rx->peer_notices != NULL) {
		/* Release: pairs with the acquire load of rb2_tx_notices(). */
		atomic_store_explicit(rx->peer_notices, rx->notices, memory_order_release);
		return 0;
	}
	rx->head_shadow[RB2_SHADOW_NOTICES] = rx->notices;
	rb2_chan_word_wr(&w, &rx->h, &rx->head_shadow[RB2_SHADOW_NOTICES], RB2_REGION_NOTICE_OFF,
			 0, 0);
	ret = rb2_rx_post(rx, &w, 1);
	if (ret < 0)
		rb2_rx_fail(rx, ret, "posting a notice: %s", rte_strerror(-ret));
	return ret;
}

/* Set our sleep word in the sender's region (RB2_CHAN_F_SLEEP): a store, or
 * a WRITE; @landed: wait until it has (its completion), so that every
 * publication the sender makes from now on sees it. */
static int
publish_sleep(struct rb2_rx *rx, uint64_t v, int landed)
{
	struct rb2_xport_wr w;
	uint64_t until = 0;
	int ret;

	if (rx->peer_sleep != NULL) {
		atomic_store_explicit(rx->peer_sleep, v, memory_order_release);
		return 0;
	}
	rx->head_shadow[RB2_SHADOW_SLEEP] = v;
	rb2_chan_word_wr(&w, &rx->h, &rx->head_shadow[RB2_SHADOW_SLEEP], RB2_REGION_SLEEP_OFF,
			 WRID_SLEEP, landed ? RB2_WR_SIGNALED : 0);
	ret = rb2_rx_post(rx, &w, 1);
	if (ret < 0) {
		rb2_rx_fail(rx, ret, "posting the sleep word: %s", rte_strerror(-ret));
		return ret;
	}
	if (!landed)
		return 0;
	rx->sleep_writes++;
	for (uint32_t spins = 0; rx->sleep_acked != rx->sleep_writes; spins++) {
		if (rb2_post_wait_over(&until, spins)) {
			rb2_rx_fail(rx, -ETIMEDOUT, "the sleep word's WRITE never completed");
			return -ETIMEDOUT;
		}
		if ((ret = rb2_rx_reap(&rx->h)) < 0)
			return ret;
	}
	return 0;
}

int
rb2_rx_sleep_arm(struct rb2_rx *rx, struct rb2_xport_doorbell *db)
{
	struct rb2_msg m;
	int n;

	if (rx->doorbell == NULL)
		return -ENOTSUP;
	if (rx->h.err != 0)
		return rx->h.err;
	/* "Asleep, having seen everything before head": the sender wakes
	 * us once it has published past it. Landed before we look again. */
	n = publish_sleep(rx, rx->head + 1, 1);
	if (n < 0)
		return n;
	/* Where WRITEs are the CPU's stores (shm), Dekker's handshake with
	 * the sender's wake_check(): our sleep word before our last look,
	 * its publication before its look at our word (rb2_chan_pvt.h). */
	if (!(rb2_xport_caps(rx->h.xp) & RB2_XPORT_CAP_REMOTE))
		rb2_sleep_fence_heavy();
	/* Armed before the last look: a ring after it ends the wait. */
	n = rb2_xport_doorbell_arm(rx->h.qp, rx->doorbell, db);
	RB2_STAT_WAKE_REQUESTS(&rx->stats, rx->h.qp);
	if (n == 0)
		n = rb2_rx_peek_burst(rx, &m, 1);
	if (n != 0) {
		rb2_rx_sleep_disarm(rx);
		if (n > 0)
			RB2_STAT_ADD(&rx->stats, sleep_aborts, 1);
		return n < 0 ? n : -EAGAIN;
	}
	RB2_STAT_ADD(&rx->stats, sleeps, 1);
	return 0;
}

void
rb2_rx_sleep_disarm(struct rb2_rx *rx)
{
	if (rx->doorbell == NULL || rx->h.err != 0)
		return;
	publish_sleep(rx, 0, 0);
	rb2_xport_doorbell_done(rx->h.qp);
	RB2_STAT_WAKE_REQUESTS(&rx->stats, rx->h.qp);
	/* Take the wake-up's receive completion and post its receive again
	 * (under WRITE_WITH_IMM sync the peek polls them anyway). */
	if (rx->wake_recvs > 0)
		rb2_rx_reap(&rx->h);
}

int
rb2_rx_wait_arm(struct rb2_rx *rx, struct rb2_xport_doorbell *db)
{
	struct rb2_msg m;
	int n;

	if (rx->doorbell == NULL || !rx->imm_native || rx->h.p.tail_sync != RB2_TAIL_WRITE_IMM)
		return -ENOTSUP;
	if (rx->h.err != 0)
		return rx->h.err;
	/* Armed before the last look: every publication completes here, so
	 * one that lands after the look raises the doorbell. */
	n = rb2_xport_doorbell_arm(rx->h.qp, NULL, db);
	if (n == 0)
		n = rb2_rx_peek_burst(rx, &m, 1);
	if (n != 0) {
		rb2_xport_doorbell_done(rx->h.qp);
		RB2_STAT_WAKE_REQUESTS(&rx->stats, rx->h.qp);
		return n < 0 ? n : -EAGAIN;
	}
	RB2_STAT_WAKE_REQUESTS(&rx->stats, rx->h.qp);
	RB2_STAT_ADD(&rx->stats, sleeps, 1);
	return 0;
}

void
rb2_rx_wait_done(struct rb2_rx *rx)
{
	if (rx->h.err == 0) {
		rb2_xport_doorbell_done(rx->h.qp);
		RB2_STAT_WAKE_REQUESTS(&rx->stats, rx->h.qp);
	}
}

void
rb2_rx_wait_leave(struct rb2_rx *rx)
{
	if (rx->h.err == 0) {
		rb2_xport_doorbell_leave(rx->h.qp);
		RB2_STAT_WAKE_REQUESTS(&rx->stats, rx->h.qp);
	}
}

void
rb2_rx_wait_drain(struct rb2_rx *rx)
{
	if (rx->h.err == 0) {
		rb2_xport_doorbell_drain(rx->h.qp);
		RB2_STAT_WAKE_REQUESTS(&rx->stats, rx->h.qp);
	}
}

int
rb2_rx_sleep(struct rb2_rx *rx, unsigned int timeout_us)
{
	struct rb2_xport_doorbell db;
	int ret = rb2_rx_sleep_arm(rx, &db);

	if (ret < 0)
		return ret;
	ret = rb2_xport_doorbell_wait(&db, 1, timeout_us);
	rb2_rx_sleep_disarm(rx);
	return ret == -ETIMEDOUT || ret == -EINTR ? 0 : ret;
}

/*
 * The receiver found its ring empty: is the sender still there? Its death is
 * only final once the ring has been found empty by a look that started after
 * the death was seen: the sender may have published its last messages (and
 * died) between our look at the tail and the status check. So the first
 * sighting only arms the verdict; the caller's next empty peek, which reads
 * the tail (or the markers, or the completions) again, delivers it, once
 * RB2_GONE_GRACE_US have passed for WRITEs still landing from the wire.
 * @p due: this look is one that asks the transport (rb2_rx_idle()).
 */
static void
check_peer(struct rb2_rx *rx, int due)
{
	int gone;

	if (rx->h.peer_gone == 0) {
		gone = due ? __rb2_chan_peer_check_clock(&rx->h) : 0;
		if (gone < 0) {
			rx->h.peer_gone = gone;
			rx->h.gone_tsc = rte_get_timer_cycles();
		}
		return;
	}
	if (rte_get_timer_cycles() - rx->h.gone_tsc <
	    rte_get_timer_hz() / (1000000 / RB2_GONE_GRACE_US))
		return;
	RB2_CHAN_LOG(ERR, "channel '%s' receiver: the sender is gone (%s); everything it published was delivered",
		     rx->h.name, rte_strerror(-rx->h.peer_gone));
	rx->h.err = rx->h.peer_gone;
}

/* rb2_rx_idle()'s slow half: it counted the look. */
int
__rb2_rx_idle(struct rb2_rx *rx, int check_due)
{
	if (rx->h.err == 0)
		check_peer(rx, check_due);
	/* RB2_CHAN_F_LAZY_HEAD: no push, only a store into our own shadow
	 * line, where a sender short of room READs it. The compare keeps an
	 * idle poll loop from dirtying the line the sender may be reading. */
	if (rx->h.p.flags & RB2_CHAN_F_LAZY_HEAD) {
		if (rx->head_shadow[0] != rx->head)
			rb2_rx_store_head(rx);
		return rx->h.err == -ENOTCONN ? 0 : rx->h.err;
	}
	/* Idle push: the ring is drained, so the sender may be blocked on a
	 * stale local_head; give it all the room back now. */
	if (rx->head != rx->synced_head) {
		__rb2_rx_push(rx);
		RB2_STAT_ADD(&rx->stats, idle_pushes, 1);
	}
	return rx->h.err == -ENOTCONN ? 0 : rx->h.err;
}

int
__rb2_rx_corrupt(struct rb2_rx *rx, uint64_t pos, uint32_t len)
{
	if (rx->h.err == 0)
		RB2_CHAN_LOG(ERR, "channel '%s' receiver: slot %" PRIu64 " holds length %u, which runs past the published tail %" PRIu64 " or the %u-byte limit: the peer wrote a corrupt ring",
			     rx->h.name, pos & rx->mask, len, rx->tail_seen & rx->mask,
			     rx->max_len);
	rx->h.err = -EPROTO;
	return -EPROTO;
}
