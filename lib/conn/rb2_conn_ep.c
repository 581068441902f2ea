/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Connections (rb2_conn.h): the endpoint. Its creation and end, the
 * connection slots and descriptors, failure, and the counters. Frames go
 * out in rb2_conn_out.c and come in in rb2_conn_in.c; blocking is
 * rb2_conn_wait.c, opening and closing rb2_conn_open.c, the data calls
 * rb2_conn_data.c, lending rb2_conn_ref.c. The wire is rb2_conn_wire.h.
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

RTE_LOG_REGISTER(rb2_conn_logtype, rb2.conn, INFO);

struct rb2_conn_ep_list rb2_conn_eps = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.eps = TAILQ_HEAD_INITIALIZER(rb2_conn_eps.eps),
};

const char *const __rb2_conn_refuse_why[RB2_CONN_REFUSE_MAX] = {
	[RB2_CONN_REFUSE_NO_LISTENER] = "nothing listens on that port at the peer",
	[RB2_CONN_REFUSE_BACKLOG] = "the port's backlog at the peer is full (nobody accepts)",
	[RB2_CONN_REFUSE_TOO_MANY] = "the peer holds its limit of connections (raise its max_conns)",
	[RB2_CONN_REFUSE_NO_ROUTE] = "the service has no link to that host (rb2-raasd --peer)",
};

const char *const __rb2_conn_rst_why[RB2_CONN_RST_MAX] = {
	[RB2_CONN_RST_UNLISTEN] = "the peer stopped listening before accepting it",
	[RB2_CONN_RST_WINDOW] = "a sender overran the receiver's window",
	[RB2_CONN_RST_PEER_GONE] = "the application at the other end is gone (its link to the service failed)",
	[RB2_CONN_RST_NOMEM] = "the receiver had no memory for its receive buffer",
	[RB2_CONN_RST_PEER_LEFT] = "the peer closed its endpoint (it exited) with the connection open",
	[RB2_CONN_RST_LEND] = "the service could not pass a lent buffer on (its link to that host cannot READ applications' memory, or the registration failed: its log says)",
};

void
rb2_conn_ep_params_init(struct rb2_conn_ep_params *p)
{
	memset(p, 0, sizeof(*p));
	p->max_conns = 4096;
	p->window = 64 * 1024;
	p->backlog = 128;
}

uint32_t
rb2_conn_max_msg(const struct rb2_conn_ep *ep)
{
	return ep->p.max_msg;
}

/* ---- descriptors and slots ---------------------------------------------- */

struct rb2_conn_slot *
__rb2_conn_slot_alloc(struct rb2_conn_ep *ep)
{
	struct rb2_conn_slot *c;
	uint32_t gen, idx;

	if (ep->n_free == 0)
		return NULL;
	idx = ep->free_idx[--ep->n_free];
	c = &ep->conns[idx];
	gen = (c->cd >> 16) + 1;
	if (gen > 0x7fff)
		gen = 1;
	uint8_t in_ready = c->in_ready;
	memset(c, 0, sizeof(*c));      /* no receive buffer until data comes */
	c->in_ready = in_ready;
	c->cd = gen << 16 | idx;
	CONN_STAT_ADD(ep, conns_open, 1);
	return c;
}

static void
slot_free(struct rb2_conn_ep *ep, struct rb2_conn_slot *c)
{
	uint32_t cd = c->cd;
	uint8_t in_ready = c->in_ready;

	if (c->buf != NULL)
		ep->bufs[ep->n_bufs++] = c->buf;
	memset(c, 0, sizeof(*c));
	c->cd = cd;              /* for the next generation */
	/* Still queued in the ready list: it stays there once (the next
	 * connection in the slot is handed out from it, at worst early). */
	c->in_ready = in_ready;
	ep->free_idx[ep->n_free++] = c->cd & 0xffff;
	CONN_STAT_ADD(ep, conns_open, -1);
}

/* Free a closed connection's slot once nothing more can come for it. */
void
__rb2_conn_maybe_free(struct rb2_conn_ep *ep, struct rb2_conn_slot *c)
{
	if (c->state == RB2_CONN_ST_FREE || !c->app_closed || c->in_owed_list)
		return;
	if (c->err != 0 || (c->wr_shut && c->rd_eof))
		slot_free(ep, c);
}

void
__rb2_conn_fail(struct rb2_conn_ep *ep, struct rb2_conn_slot *c, int err, const char *why)
{
	if (c->err != 0)
		return;
	c->err = err;
	snprintf(c->why, sizeof(c->why), "%s", why);
	if (c->state == RB2_CONN_ST_SYN_SENT)
		c->state = RB2_CONN_ST_FAILED;
	mark_ready(ep, c);
}

/*
 * The endpoint ends, and every connection with it: @err is the endpoint's
 * error from here on; each connection gets @conn_err and @why; the log says
 * @what at @level.
 */
void
__rb2_conn_ep_end(struct rb2_conn_ep *ep, int err, int conn_err, const char *why, const char *what,
       uint32_t level)
{
	uint32_t n = 0;

	if (ep->err != 0)
		return;
	ep->err = err;
	/* Nothing owed can be sent any more. */
	for (uint32_t i = 0; i < ep->n_owed; i++)
		ep->conns[ep->owed[i]].in_owed_list = 0;
	ep->n_owed = 0;
	ep->n_refusals = 0;
	for (uint32_t i = 0; i < ep->p.max_conns; i++) {
		struct rb2_conn_slot *c = &ep->conns[i];

		if (c->state == RB2_CONN_ST_FREE)
			continue;
		n++;
		__rb2_conn_fail(ep, c, conn_err, why);
		c->owed = 0;
		/* Never handed out: nobody will close it. */
		if (c->state == RB2_CONN_ST_BACKLOG) {
			c->app_closed = 1;
			__rb2_conn_maybe_free(ep, c);
		}
	}
	rte_log(level, rb2_conn_logtype, "rb2.conn: endpoint %s: %s; %u connection(s) end with it\n",
		ep->name, what, n);
}

/* The channel failed: every connection fails with it. */
void
__rb2_conn_ep_fail(struct rb2_conn_ep *ep, int err)
{
	char why[96];

	snprintf(why, sizeof(why), "the channel to the peer failed: %s", strerror(-err));
	__rb2_conn_ep_end(ep, err, err, why, why + 4, RTE_LOG_ERR);
}

/* ---- the endpoint ------------------------------------------------------- */

static int
params_check(const struct rb2_conn_ep_params *p, uint32_t chan_max)
{
	if (p->max_conns == 0 || p->max_conns > RB2_CONN_MAX) {
		CONN_LOG(ERR, "max_conns %u: must be 1..%u", p->max_conns, RB2_CONN_MAX);
		return -EINVAL;
	}
	if (!rte_is_power_of_2(p->window) || p->window < 4096 || p->window > (1u << 30)) {
		CONN_LOG(ERR, "window %u: must be a power of two from 4096 to 2^30",
			 p->window);
		return -EINVAL;
	}
	if (p->backlog == 0 || p->backlog > RB2_CONN_MAX) {
		CONN_LOG(ERR, "backlog %u: must be 1..%u", p->backlog, RB2_CONN_MAX);
		return -EINVAL;
	}
	if (p->max_msg > p->window - RB2_CONN_HDR_LEN) {
		CONN_LOG(ERR, "max_msg %u: must fit the window (at most %u)",
			 p->max_msg, p->window - RB2_CONN_HDR_LEN);
		return -EINVAL;
	}
	if (chan_max <= RB2_CONN_HDR_LEN + RB2_CONN_CREDITS_PER_FRAME * sizeof(struct rb2_conn_credit)) {
		CONN_LOG(ERR, "the channel carries messages of %u bytes at most: too few "
			 "for control frames (%zu); give it more or larger slots", chan_max,
			 RB2_CONN_HDR_LEN + RB2_CONN_CREDITS_PER_FRAME * sizeof(struct rb2_conn_credit));
		return -EMSGSIZE;
	}
	if (p->max_msg > chan_max - RB2_CONN_HDR_LEN) {
		CONN_LOG(ERR, "max_msg %u: the channel carries %u bytes at most, %u of "
			 "them for the header; give it more or larger slots",
			 p->max_msg, chan_max, RB2_CONN_HDR_LEN);
		return -EMSGSIZE;
	}
	return 0;
}

struct rb2_conn_ep *
rb2_conn_ep_create(const char *name, struct rb2_tx *tx, struct rb2_rx *rx,
		   const struct rb2_conn_ep_params *params)
{
	struct rb2_conn_ep_params p;
	struct rb2_conn_ep *ep;
	uint32_t chan_max;
	int ret;

	if (name == NULL || strlen(name) >= RB2_CONN_EP_NAMESIZE || tx == NULL ||
	    rx == NULL) {
		CONN_LOG(ERR, "endpoint: a name of at most %d characters and both "
			 "channel halves are needed", RB2_CONN_EP_NAMESIZE - 1);
		rte_errno = EINVAL;
		return NULL;
	}
	if (rb2_tx_msg_size(tx) != 0 || rb2_rx_msg_size(rx) != 0) {
		CONN_LOG(ERR, "endpoint %s: its channels must carry messages of any length "
			 "(msg_size 0), not of a fixed size (%u): frames differ in length",
			 name, RTE_MAX(rb2_tx_msg_size(tx), rb2_rx_msg_size(rx)));
		rte_errno = EINVAL;
		return NULL;
	}
	if (params == NULL)
		rb2_conn_ep_params_init(&p);
	else
		p = *params;
	chan_max = RTE_MIN(rb2_tx_max_msg(tx), rb2_rx_max_msg(rx));
	if (p.max_msg == 0)
		p.max_msg = RTE_MIN(chan_max, p.window) - RB2_CONN_HDR_LEN;
	ret = params_check(&p, chan_max);
	if (ret < 0) {
		rte_errno = -ret;
		return NULL;
	}
	ep = conn_alloc_lines(1, sizeof(*ep), 1);
	if (ep == NULL)
		goto nomem;
	snprintf(ep->name, sizeof(ep->name), "%s", name);
	ep->tx = tx;
	ep->rx = rx;
	ep->p = p;
	ep->win_mask = p.window - 1;
	ep->resv_cd = -1;
	ep->tx_run_cid = ep->rx_run_cid = ep->pend_cid = RB2_CONN_CID_NONE;
	/* Marked frames: those of one slot, where slots are whole lines
	 * (less what the ring adds to a message there: its header, its
	 * marker). */
	ep->tx_mark_max = rb2_tx_params(tx)->flags & RB2_CHAN_F_UNALIGNED ? 0 :
			  rb2_tx_params(tx)->slot_size - rb2_chan_msg_overhead(rb2_tx_params(tx));
	ep->poll_max = 32;
	ep->efd = -1;
	ep->peer_efd = -1;
	ep->conns = conn_alloc_lines(p.max_conns, sizeof(*ep->conns), 1);
	ep->free_idx = conn_alloc_lines(p.max_conns, sizeof(*ep->free_idx), 1);
	ep->owed = conn_alloc_lines(p.max_conns, sizeof(*ep->owed), 1);
	ep->bufs = conn_alloc_lines(p.max_conns, sizeof(*ep->bufs), 1);
	/* A power of two, for a mask instead of a division per entry. */
	ep->ready_mask = rte_align32pow2(p.max_conns) - 1;
	ep->ready = conn_alloc_lines((size_t)ep->ready_mask + 1, sizeof(*ep->ready), 1);
	if (ep->conns == NULL || ep->free_idx == NULL || ep->owed == NULL ||
	    ep->bufs == NULL || ep->ready == NULL)
		goto nomem;
	/* Lowest indexes first out of the stack. */
	for (uint32_t i = 0; i < p.max_conns; i++)
		ep->free_idx[i] = p.max_conns - 1 - i;
	ep->n_free = p.max_conns;
	pthread_mutex_lock(&rb2_conn_eps.lock);
	TAILQ_INSERT_TAIL(&rb2_conn_eps.eps, ep, next);
	pthread_mutex_unlock(&rb2_conn_eps.lock);
	return ep;
nomem:
	if (ep != NULL) {
		free(ep->conns);
		free(ep->free_idx);
		free(ep->owed);
		free(ep->bufs);
		free(ep->ready);
		free(ep);
	}
	CONN_LOG(ERR, "endpoint %s: out of memory for %u connections", name, p.max_conns);
	rte_errno = ENOMEM;
	return NULL;
}

void
rb2_conn_ep_destroy(struct rb2_conn_ep *ep)
{
	if (ep == NULL)
		return;
	if (ep->p.service)
		__rb2_conn_ref_quiesce(ep, -1);
	__rb2_conn_goodbye(ep);
	pthread_mutex_lock(&rb2_conn_eps.lock);
	TAILQ_REMOVE(&rb2_conn_eps.eps, ep, next);
	pthread_mutex_unlock(&rb2_conn_eps.lock);
	for (uint32_t i = 0; i < ep->p.max_conns; i++)
		free(ep->conns[i].buf);
	for (uint32_t i = 0; i < ep->n_bufs; i++)
		free(ep->bufs[i]);
	for (uint32_t i = 0; i < RB2_CONN_LISTEN_MAX; i++)
		free(ep->listeners[i].q);
	__rb2_conn_refs_destroy(ep);     /* READs in flight need the rx half */
	if (ep->peer_efd >= 0 && ep->peer_pid != (uint32_t)getpid())
		close(ep->peer_efd);     /* our pidfd_getfd() copy */
	if (ep->efd >= 0)
		close(ep->efd);
	rb2_tx_destroy(ep->tx);
	rb2_rx_destroy(ep->rx);
	free(ep->conns);
	free(ep->free_idx);
	free(ep->owed);
	free(ep->bufs);
	free(ep->ready);
	free(ep->refusals);
	free(ep->relay_buf);
	free(ep);
}

/* ---- counters ----------------------------------------------------------- */

void
rb2_conn_ep_stats_get(const struct rb2_conn_ep *ep, struct rb2_conn_ep_stats *st)
{
	struct rb2_tx_stats ts;
	uint64_t msgs, bytes, marked;

#define CONN_COUNTER_COPY(f) st->f = atomic_load_explicit(&ep->ctr.f, memory_order_relaxed);
	RB2_CONN_EP_COUNTERS(CONN_COUNTER_COPY)
	/* Data sent, from the ring's own counts (the fast path counts
	 * nothing twice): every frame it transmitted, less control frames
	 * and headers. Frames committed but not yet flushed are not in. */
	rb2_tx_stats_get(ep->tx, &ts);
	msgs = atomic_load_explicit(&ts.messages, memory_order_relaxed);
	bytes = atomic_load_explicit(&ts.bytes, memory_order_relaxed);
	st->tx_msgs = msgs > st->ctrl_frames_tx ? msgs - st->ctrl_frames_tx : 0;
	bytes -= RTE_MIN(bytes, atomic_load_explicit(&ep->ctrl_bytes_tx, memory_order_relaxed));
	/* A lent message counts its payload, not its descriptor. */
	bytes -= RTE_MIN(bytes, atomic_load_explicit(&ep->ref_wire_bytes_tx, memory_order_relaxed));
	/* Headers: every frame has one but the marked (rb2_conn_core.h). */
	marked = atomic_load_explicit(&ts.marked, memory_order_relaxed);
	bytes -= RTE_MIN(bytes, (st->tx_msgs - RTE_MIN(st->tx_msgs, marked)) * RB2_CONN_HDR_LEN);
	st->tx_bytes = bytes + st->ref_tx_bytes;
}

int
rb2_conn_info_get(struct rb2_conn_ep *ep, int cd, struct rb2_conn_info *info)
{
	struct rb2_conn_slot *c = conn_of(ep, cd);

	if (c == NULL)
		return -EBADF;
	memset(info, 0, sizeof(*info));
	info->port = c->port;
	info->status = rb2_conn_status(ep, cd);
	info->peer_cd = c->peer_cd;
	info->tx_credit_used = c->sent;
	info->rx_msgs = c->rx_msgs;
	info->rx_bytes = c->rx_bytes;
	info->credit = c->state == RB2_CONN_ST_OPEN ?
		(uint32_t)(c->peer_window - (c->sent - c->acked)) : 0;
	info->buffered = (uint32_t)(c->wpos - c->rpos);
	return 0;
}

