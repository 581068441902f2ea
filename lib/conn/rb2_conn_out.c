/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Connections: frames out. Control frames on the ring, and what each
 * connection owes the peer (SYN, SYNACK, FIN, RST, WANT, credits), sent
 * by the poll or at once where a caller waits on it.
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

/* ---- frames out --------------------------------------------------------- */

/*
 * Put one control frame on the ring. -EAGAIN when the ring is full (the
 * caller keeps it owed); other errors fail the endpoint.
 */
int
__rb2_conn_frame_out(struct rb2_conn_ep *ep, uint32_t cid, uint8_t type, uint16_t aux,
	  const void *body, uint32_t blen)
{
	uint8_t *slot;
	int ret = rb2_tx_reserve(ep->tx, RB2_CONN_HDR_LEN + blen, (void **)&slot);

	if (ret == -ENOBUFS)
		return -EAGAIN;
	if (ret < 0) {
		__rb2_conn_ep_fail(ep, ret);
		return ret;
	}
	*(uint64_t *)slot = rb2_conn_wire_hdr(cid, type, aux);
	if (blen != 0)
		memcpy(slot + RB2_CONN_HDR_LEN, body, blen);
	rb2_tx_commit(ep->tx, RB2_CONN_HDR_LEN + blen);
	ep->tx_run_cid = RB2_CONN_CID_NONE;      /* no run continues past it */
	CONN_STAT_ADD(ep, ctrl_frames_tx, 1);
	atomic_store_explicit(&ep->ctrl_bytes_tx, atomic_load_explicit(&ep->ctrl_bytes_tx,
		memory_order_relaxed) + RB2_CONN_HDR_LEN + blen, memory_order_relaxed);
	return 0;
}

static void
hello_of(const struct rb2_conn_ep *ep, const struct rb2_conn_slot *c, struct rb2_conn_hello *h)
{
	memset(h, 0, sizeof(*h));
	h->host = c->host;
	h->src_cd = c->cd;
	h->window = ep->p.window;
	h->max_msg = ep->p.max_msg;
	h->magic = RB2_CONN_MAGIC;
	h->version = RB2_CONN_VERSION;
}

/* Send one connection's owed frames except credits; -EAGAIN: ring full. */
static int
send_owed_one(struct rb2_conn_ep *ep, struct rb2_conn_slot *c)
{
	struct rb2_conn_hello h;
	int ret = 0;

	if (c->owed & RB2_CONN_OWE_SYN) {
		hello_of(ep, c, &h);
		ret = __rb2_conn_frame_out(ep, RB2_CONN_CID_NONE, RB2_CONN_FR_SYN, c->port, &h, sizeof(h));
		if (ret < 0)
			return ret;
		c->owed &= ~RB2_CONN_OWE_SYN;
	}
	if (c->owed & RB2_CONN_OWE_SYNACK) {
		hello_of(ep, c, &h);
		ret = __rb2_conn_frame_out(ep, c->peer_cd, RB2_CONN_FR_SYNACK, 0, &h, sizeof(h));
		if (ret < 0)
			return ret;
		c->owed &= ~RB2_CONN_OWE_SYNACK;
	}
	if (c->owed & RB2_CONN_OWE_WANT) {
		ret = __rb2_conn_frame_out(ep, c->peer_cd, RB2_CONN_FR_WANT, 0, NULL, 0);
		if (ret < 0)
			return ret;
		c->owed &= ~RB2_CONN_OWE_WANT;
	}
	if (c->owed & RB2_CONN_OWE_FIN) {
		ret = __rb2_conn_frame_out(ep, c->peer_cd, RB2_CONN_FR_FIN, 0, NULL, 0);
		if (ret < 0)
			return ret;
		c->owed &= ~RB2_CONN_OWE_FIN;
	}
	if (c->owed & RB2_CONN_OWE_RST) {
		ret = __rb2_conn_frame_out(ep, c->peer_cd, RB2_CONN_FR_RST, c->rst_reason, NULL, 0);
		if (ret < 0)
			return ret;
		c->owed &= ~RB2_CONN_OWE_RST;
	}
	return 0;
}

/* Send one CREDIT frame for the connections at @p idx; 0 or -EAGAIN. */
static int
send_credits(struct rb2_conn_ep *ep, const uint32_t *idx, uint32_t n)
{
	struct rb2_conn_credit cr[RB2_CONN_CREDITS_PER_FRAME];
	int ret;

	for (uint32_t j = 0; j < n; j++) {
		struct rb2_conn_slot *c = &ep->conns[idx[j]];

		cr[j].cid = c->peer_cd;
		cr[j].consumed = (uint32_t)c->rpos;
	}
	ret = __rb2_conn_frame_out(ep, RB2_CONN_CID_NONE, RB2_CONN_FR_CREDIT, (uint16_t)n, cr, n * sizeof(cr[0]));
	if (ret < 0)
		return ret;
	for (uint32_t j = 0; j < n; j++) {
		struct rb2_conn_slot *c = &ep->conns[idx[j]];

		c->credited = c->rpos;
		c->peer_wants = 0;
		c->owed &= ~RB2_CONN_OWE_CREDIT;
	}
	return 0;
}

/*
 * Send what is owed: refusals, each connection's frames, then credits
 * gathered into as few CREDIT frames as fit. What does not fit in the ring
 * stays owed for the next poll. Not while the application holds a
 * reservation (the ring would hand out its room twice).
 */
void
__rb2_conn_send_owed(struct rb2_conn_ep *ep)
{
	uint32_t batch[RB2_CONN_CREDITS_PER_FRAME];
	uint32_t nb = 0, keep = 0, i;
	int full = 0;

	if (ep->resv_cd >= 0 || ep->err != 0)
		return;
	/* Lent buffers back first: the sender may be waiting for them. */
	if (ep->n_refdone_owed != 0 && __rb2_conn_refdone_send(ep) < 0)
		return;
	for (i = 0; i < ep->n_refusals; i++)
		if (__rb2_conn_frame_out(ep, ep->refusals[i].peer_cd, RB2_CONN_FR_REFUSE,
			      ep->refusals[i].reason, NULL, 0) < 0)
			break;
	if (i > 0) {
		memmove(ep->refusals, ep->refusals + i,
			(ep->n_refusals - i) * sizeof(*ep->refusals));
		ep->n_refusals -= i;
	}

	for (i = 0; i < ep->n_owed && !full; i++) {
		struct rb2_conn_slot *c = &ep->conns[ep->owed[i]];

		if (c->owed & ~RB2_CONN_OWE_CREDIT)
			full = send_owed_one(ep, c) < 0;
	}
	for (i = 0; i < ep->n_owed && !full; i++) {
		if (!(ep->conns[ep->owed[i]].owed & RB2_CONN_OWE_CREDIT))
			continue;
		batch[nb++] = ep->owed[i];
		if (nb == RB2_CONN_CREDITS_PER_FRAME) {
			full = send_credits(ep, batch, nb) < 0;
			nb = 0;
		}
	}
	if (nb > 0 && !full)
		send_credits(ep, batch, nb);
	for (i = 0; i < ep->n_owed; i++) {
		struct rb2_conn_slot *c = &ep->conns[ep->owed[i]];

		if (c->owed != 0 && ep->err == 0) {
			ep->owed[keep++] = ep->owed[i];
			continue;
		}
		c->owed = 0;
		c->in_owed_list = 0;
		if (c->state != RB2_CONN_ST_FREE)
			__rb2_conn_maybe_free(ep, c);
	}
	ep->n_owed = keep;
}


void
__rb2_conn_credit_due(struct rb2_conn_ep *ep, struct rb2_conn_slot *c)
{
	owe(ep, c, RB2_CONN_OWE_CREDIT);
	if (ep->resv_cd < 0)
		__rb2_conn_send_owed(ep);
}

