/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Connections: set-up and teardown. Listening, connecting and accepting,
 * shutdown and close, a relay's hooks, and the endpoint's goodbye.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sched.h>

#include <rte_errno.h>
#include <rte_cycles.h>
#include <rte_log.h>

#include <rb2_bulk.h>

#include "rb2_conn_pvt.h"

/* ---- set-up and teardown ------------------------------------------------ */

int
rb2_conn_listen(struct rb2_conn_ep *ep, uint16_t port, uint32_t backlog)
{
	struct rb2_conn_listener *l = NULL;

	if (listener_of(ep, port) != NULL)
		return -EADDRINUSE;
	for (uint32_t i = 0; i < RB2_CONN_LISTEN_MAX && l == NULL; i++)
		if (!ep->listeners[i].used)
			l = &ep->listeners[i];
	if (l == NULL)
		return -ENOSPC;
	if (backlog == 0)
		backlog = ep->p.backlog;
	free(l->q);
	l->q = conn_alloc_lines(backlog, sizeof(*l->q), 1);
	if (l->q == NULL)
		return -ENOMEM;
	/* Through a service: it must know where to send connects. */
	if (ep->p.service && (__rb2_conn_frame_out(ep, RB2_CONN_CID_NONE, RB2_CONN_FR_LISTEN, port,
				       NULL, 0) < 0 || rb2_conn_flush(ep) < 0))
		return ep->err != 0 ? ep->err : -EAGAIN;
	l->used = 1;
	l->port = port;
	l->backlog = backlog;
	l->head = l->count = 0;
	return 0;
}

int
rb2_conn_unlisten(struct rb2_conn_ep *ep, uint16_t port)
{
	struct rb2_conn_listener *l = listener_of(ep, port);

	if (l == NULL)
		return -EINVAL;
	for (uint32_t i = 0; i < l->count; i++) {
		struct rb2_conn_slot *c = slot_of(ep, l->q[(l->head + i) % l->backlog]);

		if (c == NULL)
			continue;
		c->owed &= ~RB2_CONN_OWE_SYNACK;
		c->app_closed = 1;
		c->rst_reason = RB2_CONN_RST_UNLISTEN;
		__rb2_conn_fail(ep, c, -ECONNRESET, __rb2_conn_rst_why[RB2_CONN_RST_UNLISTEN]);
		if (c->err == -ECONNRESET && !c->rd_eof)
			owe(ep, c, RB2_CONN_OWE_RST);
		__rb2_conn_maybe_free(ep, c);
	}
	l->used = 0;
	l->count = 0;
	if (ep->p.service && __rb2_conn_frame_out(ep, RB2_CONN_CID_NONE, RB2_CONN_FR_UNLISTEN, port,
				       NULL, 0) == 0)
		rb2_conn_flush(ep);
	return 0;
}

void
rb2_conn_ep_set_relay(struct rb2_conn_ep *ep, rb2_conn_relay_fn fn, void *arg)
{
	ep->relay = fn;
	ep->relay_arg = arg;
}

int
rb2_conn_ep_forward(struct rb2_conn_ep *ep, const void *frame, uint32_t len)
{
	void *slot;
	int ret;

	if (ep->err != 0)
		return ep->err;
	ret = rb2_tx_reserve(ep->tx, len, &slot);
	if (ret == -ENOBUFS)
		return -EAGAIN;
	if (ret < 0) {
		__rb2_conn_ep_fail(ep, ret);
		return ret;
	}
	memcpy(slot, frame, len);
	rb2_tx_commit(ep->tx, len);
	ep->tx_run_cid = RB2_CONN_CID_NONE;      /* no run continues past it */
	return 0;
}

int
rb2_conn_accept(struct rb2_conn_ep *ep, uint16_t port)
{
	struct rb2_conn_listener *l = listener_of(ep, port);
	struct rb2_conn_slot *c;

	if (l == NULL)
		return -EINVAL;
	if (l->count == 0 && ep->err == 0)
		rb2_conn_ep_poll(ep);
	while (l->count > 0) {
		c = slot_of(ep, l->q[l->head]);
		l->head = (l->head + 1) % l->backlog;
		l->count--;
		if (c == NULL || c->state != RB2_CONN_ST_BACKLOG)
			continue;
		c->state = RB2_CONN_ST_OPEN;
		return (int)c->cd;
	}
	return ep->err != 0 ? ep->err : -EAGAIN;
}

int
rb2_conn_backlog(struct rb2_conn_ep *ep, uint16_t port)
{
	const struct rb2_conn_listener *l = listener_of(ep, port);

	return l != NULL ? (int)l->count : -EINVAL;
}

int
rb2_conn_connect_host(struct rb2_conn_ep *ep, uint32_t host, uint16_t port)
{
	struct rb2_conn_slot *c;

	if (ep->err != 0)
		return ep->err;
	if (host != 0 && !ep->p.service)
		return -EINVAL;
	c = __rb2_conn_slot_alloc(ep);
	if (c == NULL)
		return ep->n_free == 0 ? -EMFILE : -ENOMEM;
	c->state = RB2_CONN_ST_SYN_SENT;
	c->port = port;
	c->host = host;
	c->peer_cd = RB2_CONN_CID_NONE;
	owe(ep, c, RB2_CONN_OWE_SYN);
	__rb2_conn_send_owed(ep);
	return (int)c->cd;
}

int
rb2_conn_connect(struct rb2_conn_ep *ep, uint16_t port)
{
	return rb2_conn_connect_host(ep, 0, port);
}

int
rb2_conn_status(struct rb2_conn_ep *ep, int cd)
{
	struct rb2_conn_slot *c = conn_of(ep, cd);

	if (c == NULL)
		return -EBADF;
	if (c->err != 0)
		return c->err;
	return c->state == RB2_CONN_ST_SYN_SENT ? -EINPROGRESS : 0;
}

const char *
rb2_conn_why(struct rb2_conn_ep *ep, int cd)
{
	struct rb2_conn_slot *c = conn_of(ep, cd);

	return c == NULL ? "not an open descriptor" : c->why;
}

int
rb2_conn_shutdown(struct rb2_conn_ep *ep, int cd)
{
	struct rb2_conn_slot *c = conn_of(ep, cd);

	if (c == NULL)
		return -EBADF;
	if (c->err != 0)
		return c->err;
	if (!c->wr_shut) {
		c->wr_shut = 1;
		owe(ep, c, RB2_CONN_OWE_FIN);
		__rb2_conn_send_owed(ep);
		rb2_conn_flush(ep);    /* a FIN is not left waiting for a poll */
	}
	return 0;
}

int
rb2_conn_close(struct rb2_conn_ep *ep, int cd)
{
	struct rb2_conn_slot *c = conn_of(ep, cd);
	uint64_t msgs = 0, bytes = 0;

	if (c == NULL)
		return -EBADF;
	if (ep->p.service)
		__rb2_conn_ref_quiesce(ep, cd);
	if (ep->resv_cd == cd)
		ep->resv_cd = -1;
	/* What the application leaves unread is counted, and credited back
	 * so that the peer's sender is not left waiting. */
	while (c->rpos != c->wpos) {
		const uint8_t *rec = __rb2_conn_rec(ep, c, c->rpos);
		uint32_t len, kind;

		memcpy(&len, rec, 4);
		memcpy(&kind, rec + 4, 4);
		msgs++;
		if (kind == RB2_CONN_REC_REF) {
			bytes += ((const struct rb2_bulk_ref *)(rec + RB2_CONN_HDR_LEN))->len;
			__rb2_conn_ref_discard(ep, c, rec);
		} else {
			bytes += len;
		}
		__rb2_conn_consumed(ep, c, rb2_conn_footprint(len));
	}
	CONN_STAT_ADD(ep, discarded_msgs, msgs);
	CONN_STAT_ADD(ep, discarded_bytes, bytes);
	c->app_closed = 1;
	if (!c->wr_shut && c->err == 0 && c->state != RB2_CONN_ST_SYN_SENT) {
		c->wr_shut = 1;
		owe(ep, c, RB2_CONN_OWE_FIN);
	}
	if (c->state == RB2_CONN_ST_SYN_SENT) {
		/* The accept may still come: a FIN answers it then. */
		c->wr_shut = 1;
	}
	__rb2_conn_send_owed(ep);
	rb2_conn_flush(ep);    /* a FIN is not left waiting for a poll */
	__rb2_conn_maybe_free(ep, c);
	return 0;
}


/* The peer said goodbye (RB2_CONN_FR_BYE): answer it, then end. */
void
__rb2_conn_bye_in(struct rb2_conn_ep *ep)
{
	if (!ep->bye_sent && ep->err == 0) {
		ep->bye_sent = 1;
		if (__rb2_conn_frame_out(ep, RB2_CONN_CID_NONE, RB2_CONN_FR_BYE, RB2_CONN_BYE_ANSWER,
			      NULL, 0) == 0)
			rb2_tx_flush(ep->tx);
	}
	__rb2_conn_ep_end(ep, -ESHUTDOWN, -ECONNRESET, __rb2_conn_rst_why[RB2_CONN_RST_PEER_LEFT],
	       "the peer closed its endpoint", RTE_LOG_DEBUG);
}

/*
 * Say goodbye before the channel goes, and wait up to BYE_WAIT_MS for the
 * answer: a peer in another process or on another host then ends quietly,
 * having read the goodbye before it could see this process gone and call
 * that a failure. A peer in this process cannot see that, so nothing is
 * waited for. What else comes meanwhile is dropped: every connection here
 * ends.
 */
#define BYE_WAIT_MS 100

void
__rb2_conn_goodbye(struct rb2_conn_ep *ep)
{
	uint64_t end = rte_get_timer_cycles() + rte_get_timer_hz() * BYE_WAIT_MS / 1000;
	struct rb2_msg m[16];
	int n;

	if (ep->err != 0 || ep->bye_sent)
		return;
	ep->bye_sent = 1;
	/* What the application closed goes first: its FINs end those
	 * streams cleanly at the peer, before the goodbye resets the rest. */
	if ((ep->n_owed | ep->n_refusals | ep->n_refdone_owed) != 0)
		__rb2_conn_send_owed(ep);
	if (__rb2_conn_frame_out(ep, RB2_CONN_CID_NONE, RB2_CONN_FR_BYE, RB2_CONN_BYE, NULL, 0) < 0 ||
	    rb2_tx_flush(ep->tx) < 0)
		return;
	if (ep->peer_sleeps)
		__rb2_conn_ring_if_due(ep);
	if (rb2_tx_peer_local(ep->tx))
		return;
	while (rte_get_timer_cycles() < end) {
		n = rb2_rx_peek_burst(ep->rx, m, RTE_DIM(m));
		if (n < 0)
			return;
		for (int i = 0; i < n; i++) {
			struct rb2_conn_frame fr;

			ep->rx_run_cid = conn_frame_get(&m[i], ep->rx_run_cid, &fr);
			if (!fr.marked && fr.type == RB2_CONN_FR_BYE) {
				rb2_rx_release_burst(ep->rx, m, (unsigned int)n);
				return;
			}
		}
		if (n > 0)
			rb2_rx_release_burst(ep->rx, m, (unsigned int)n);
		else if (rb2_tx_check(ep->tx) < 0)
			return;   /* it is gone: its log says so */
		else
			sched_yield(); /* the peer may be on this CPU */
	}
}

