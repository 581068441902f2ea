/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Connections: the data calls out of line (rb2_conn.h has the inline fast
 * paths): a reservation that needs more than the common case, receives
 * from the buffer or from a run left in the ring, releases.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_errno.h>
#include <rte_cycles.h>
#include <rte_log.h>

#include <rb2_bulk.h>

#include "rb2_conn_pvt.h"

/* ---- data --------------------------------------------------------------- */

/* May @p c send @p len bytes now? 0, or the error to return. */
static inline int
send_ready(struct rb2_conn_ep *ep, struct rb2_conn_slot *c, uint32_t len)
{
	if (unlikely(c->err != 0))
		return c->err;
	if (unlikely(c->wr_shut))
		return -EPIPE;
	if (unlikely(len == 0))
		return -EINVAL;
	if (unlikely(len > ep->p.max_msg || (c->state == RB2_CONN_ST_OPEN && len > c->peer_max)))
		return -EMSGSIZE;
	/* Not before the peer knows us (our SYNACK out, its SYNACK in). */
	if (unlikely(c->state != RB2_CONN_ST_OPEN || (c->owed & RB2_CONN_OWE_SYNACK)))
		return -EAGAIN;
	if (unlikely(c->sent + rb2_conn_footprint(len) - c->acked > c->peer_window)) {
		CONN_STAT_ADD(ep, credit_waits, 1);
		if (!c->want_sent) {
			c->want_sent = 1;
			owe(ep, c, RB2_CONN_OWE_WANT);
		}
		return -EAGAIN;
	}
	return 0;
}

int
__rb2_conn_reserve_slow(struct rb2_conn_ep *ep, int cd, uint32_t len, void **buf)
{
	struct rb2_conn_slot *c = conn_of(ep, cd);
	uint8_t *slot;
	uint32_t hl;
	int ret;

	if (unlikely(c == NULL))
		return -EBADF;
	ret = send_ready(ep, c, len);
	if (unlikely(ret == -EAGAIN)) {
		/* Credits, the accept or ring room may be waiting. */
		ep->resv_cd = -1;
		rb2_conn_ep_poll(ep);
		ret = send_ready(ep, c, len);
	}
	if (unlikely(ret < 0))
		return ret;
	hl = __rb2_conn_hdr_len(ep, c, len);
	ret = rb2_tx_reserve(ep->tx, hl + len, (void **)&slot);
	if (unlikely(ret == -ENOBUFS)) {
		/* Room comes back as the peer reads (the reservation sees it);
		 * polling here would not make any. Every connection of the
		 * endpoint waits: say so, so that a loop over them stops. */
		CONN_STAT_ADD(ep, ring_full, 1);
		return -ENOBUFS;
	}
	if (unlikely(ret < 0)) {
		__rb2_conn_ep_fail(ep, ret);
		return ret;
	}
	*buf = slot + hl;
	return (int)hl;
}

/* The next unviewed record of @p c, polling once if there is none. */
static inline int
next_record(struct rb2_conn_ep *ep, struct rb2_conn_slot *c, const uint8_t **rec)
{
	uint32_t len;

	if (c->vpos == c->wpos) {
		if (ep->err == 0)
			__rb2_conn_progress(ep, 0);
		if (c->vpos == c->wpos)
			return c->err != 0 && !c->rd_clean ? c->err : c->rd_eof ? 0 : -EAGAIN;
	}
	*rec = __rb2_conn_rec(ep, c, c->vpos);
	memcpy(&len, *rec, 4);
	return (int)len;
}

void
__rb2_conn_pend_done(struct rb2_conn_ep *ep)
{
	rb2_rx_release_burst(ep->rx, ep->pend, ep->pend_n);
	ep->pend_i = ep->pend_n = 0;
}

/* rb2_conn_recv()'s inline path, for recv_direct(): @p c's next message
 * from the run left in the ring, if it is next there and fits. @return its
 * length, or 0. */
static int
recv_pend(struct rb2_conn_ep *ep, struct rb2_conn_slot *c, void *buf, uint32_t cap)
{
	uint32_t len;
	const uint8_t *p = __rb2_conn_payload(&ep->pend[ep->pend_i], &len);

	if (len > cap || !__rb2_conn_pend_mine(ep, c, len))
		return 0;
	rb2_msg_copy(buf, p, len);
	__rb2_conn_pend_taken(ep, c, len);
	return (int)len;
}

/*
 * A run of frames left in the ring for one connection's reader is filed
 * into its receive buffer once recv() on other connections has passed it
 * this many times: readers that come soon (rb2_conn_ep_ready() named it)
 * copy it out once, and one that does not come holds up nobody for long.
 */
#define PEND_SKIPS_MAX 64u

/* Is the run left in the ring @p c's? */
static inline int
pend_is(const struct rb2_conn_ep *ep, const struct rb2_conn_slot *c)
{
	return ep->pend_cid == c->cd;
}

/*
 * recv() into @p buf on @p c, which has nothing buffered: its next message
 * straight from the ring, where a poll left a run of its frames, polling
 * once if none is left. A run of another connection's is left for its
 * reader, up to PEND_SKIPS_MAX calls; one of @p c's that is not taken here
 * (too long for @p buf) is filed, for the usual way to say so.
 * @return the length, or 0: none here (@p c may have records now, an
 *   error, or its end).
 */
static int
recv_direct(struct rb2_conn_ep *ep, struct rb2_conn_slot *c, void *buf, uint32_t cap)
{
	int len;

	if (ep->pend_n == 0) {
		if (ep->err != 0)
			return 0;
		__rb2_conn_progress(ep, POLL_LAZY);
		if (ep->pend_n == 0)
			return 0;
	}
	len = recv_pend(ep, c, buf, cap);
	if (len == 0 && (pend_is(ep, c) || ++ep->pend_skips >= PEND_SKIPS_MAX))
		__rb2_conn_pend_flush(ep);
	return len;
}

int
__rb2_conn_recv_slow(struct rb2_conn_ep *ep, int cd, void *buf, uint32_t cap, int zc)
{
	struct rb2_conn_slot *c = conn_of(ep, cd);
	const uint8_t *rec = NULL;
	int len;

	if (unlikely(c == NULL))
		return -EBADF;
	if (unlikely(!zc && c->vpos != c->rpos))
		return -EBUSY;
	if (!zc && c->vpos == c->wpos && ep->relay == NULL) {
		/* Nothing buffered: from the ring, polled once at most. */
		len = recv_direct(ep, c, buf, cap);
		if (len > 0)
			return len;
		if (c->vpos == c->wpos)
			return c->err != 0 && !c->rd_clean ? c->err : c->rd_eof ? 0 : -EAGAIN;
	}
	if (zc && c->vpos == c->wpos && ep->pend_i < ep->pend_n && pend_is(ep, c)) {
		/* A view of a run left in the ring: filed here, without the
		 * poll next_record() would make, and not left again. */
		ep->zc_reader = 1;
		__rb2_conn_pend_flush(ep);
	}
	len = next_record(ep, c, &rec);
	if (len <= 0)
		return len;
	if (unlikely(*(const uint32_t *)(rec + 4) == RB2_CONN_REC_REF)) {
		/* Lent: READ into @buf (no view of it here). */
		if (zc)
			return -EMSGSIZE;
		len = __rb2_conn_ref_recv(ep, c, rec, buf, cap);
		if (len > 0 && (ep->n_owed | ep->n_refdone_owed) != 0) {
			__rb2_conn_send_owed(ep);        /* the lender's buffer is free */
			rb2_tx_flush(ep->tx);
		}
		return len;
	}
	if (zc) {
		*(const void **)buf = rec + RB2_CONN_HDR_LEN;
		c->vpos += rb2_conn_footprint((uint32_t)len);
		return len;
	}
	if (unlikely((uint32_t)len > cap))
		return -EMSGSIZE;
	memcpy(buf, rec + RB2_CONN_HDR_LEN, (size_t)len);
	__rb2_conn_consumed(ep, c, rb2_conn_footprint((uint32_t)len));
	return len;
}

int
rb2_conn_next_len(struct rb2_conn_ep *ep, int cd)
{
	struct rb2_conn_slot *c = conn_of(ep, cd);
	const uint8_t *rec = NULL;
	int len;

	if (unlikely(c == NULL))
		return -EBADF;
	len = next_record(ep, c, &rec);
	if (len > 0 && *(const uint32_t *)(rec + 4) == RB2_CONN_REC_REF)
		len = (int)((const struct rb2_bulk_ref *)(rec + RB2_CONN_HDR_LEN))->len;
	return len;
}

int
__rb2_conn_release_slow(struct rb2_conn_ep *ep, int cd, unsigned int n)
{
	struct rb2_conn_slot *c = conn_of(ep, cd);
	uint64_t pos, fp = 0;

	if (unlikely(c == NULL))
		return -EBADF;
	pos = c->rpos;
	for (unsigned int i = 0; i < n; i++) {
		uint32_t len;

		if (pos + fp >= c->vpos)
			return -EINVAL;
		memcpy(&len, __rb2_conn_rec(ep, c, pos + fp), 4);
		fp += rb2_conn_footprint(len);
	}
	__rb2_conn_consumed(ep, c, (uint32_t)fp);
	if (ep->n_owed != 0)
		__rb2_conn_send_owed(ep);
	return 0;
}

