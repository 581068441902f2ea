/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Connections multiplexed over one RB² channel pair (rb2_conn.h). The wire
 * format and the structures are in rb2_conn_pvt.h.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
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

static const char *const refuse_why[RB2_CONN_REFUSE_MAX] = {
	[RB2_CONN_REFUSE_NO_LISTENER] = "nothing listens on that port at the peer",
	[RB2_CONN_REFUSE_BACKLOG] = "the port's backlog at the peer is full (nobody accepts)",
	[RB2_CONN_REFUSE_TOO_MANY] = "the peer holds its limit of connections (raise its max_conns)",
	[RB2_CONN_REFUSE_NO_ROUTE] = "the service has no link to that host (rb2-raasd --peer)",
};

static const char *const rst_why[RB2_CONN_RST_MAX] = {
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

static inline struct rb2_conn_slot *
slot_of(struct rb2_conn_ep *ep, uint32_t cid)
{
	return __rb2_conn_slot_of(ep, cid);
}

/* The connection an application's descriptor names, or NULL (-EBADF). */
static inline struct rb2_conn_slot *
conn_of(struct rb2_conn_ep *ep, int cd)
{
	return __rb2_conn_of(ep, cd);
}

static struct rb2_conn_slot *
slot_alloc(struct rb2_conn_ep *ep)
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
static void
maybe_free(struct rb2_conn_ep *ep, struct rb2_conn_slot *c)
{
	if (c->state == RB2_CONN_ST_FREE || !c->app_closed || c->in_owed_list)
		return;
	if (c->err != 0 || (c->wr_shut && c->rd_eof))
		slot_free(ep, c);
}

/* Queue @p c for rb2_conn_ep_ready(): it has news for its application. */
static inline void
mark_ready(struct rb2_conn_ep *ep, struct rb2_conn_slot *c)
{
	if (c->in_ready || c->app_closed || c->state == RB2_CONN_ST_BACKLOG)
		return;
	c->in_ready = 1;
	ep->ready[(ep->ready_head + ep->n_ready++) & ep->ready_mask] = c->cd & 0xffff;
}

static void
owe(struct rb2_conn_ep *ep, struct rb2_conn_slot *c, uint8_t what)
{
	c->owed |= what;
	if (!c->in_owed_list) {
		c->in_owed_list = 1;
		ep->owed[ep->n_owed++] = c->cd & 0xffff;
	}
}

static void
conn_fail(struct rb2_conn_ep *ep, struct rb2_conn_slot *c, int err, const char *why)
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
static void
ep_end(struct rb2_conn_ep *ep, int err, int conn_err, const char *why, const char *what,
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
		conn_fail(ep, c, conn_err, why);
		c->owed = 0;
		/* Never handed out: nobody will close it. */
		if (c->state == RB2_CONN_ST_BACKLOG) {
			c->app_closed = 1;
			maybe_free(ep, c);
		}
	}
	rte_log(level, rb2_conn_logtype, "rb2.conn: endpoint %s: %s; %u connection(s) end with it\n",
		ep->name, what, n);
}

/* The channel failed: every connection fails with it. */
static void
ep_fail(struct rb2_conn_ep *ep, int err)
{
	char why[96];

	snprintf(why, sizeof(why), "the channel to the peer failed: %s", strerror(-err));
	ep_end(ep, err, err, why, why + 4, RTE_LOG_ERR);
}

/* ---- the endpoint ------------------------------------------------------- */

static void ep_goodbye(struct rb2_conn_ep *ep);

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
	if (tx->msg_size != 0 || rx->msg_size != 0) {
		CONN_LOG(ERR, "endpoint %s: its channels must carry messages of any length "
			 "(msg_size 0), not of a fixed size (%u): frames differ in length",
			 name, RTE_MAX(tx->msg_size, rx->msg_size));
		rte_errno = EINVAL;
		return NULL;
	}
	if (params == NULL)
		rb2_conn_ep_params_init(&p);
	else
		p = *params;
	chan_max = RTE_MIN(rb2_tx_max_msg(tx), rx->max_len);
	if (p.max_msg == 0)
		p.max_msg = RTE_MIN(chan_max, p.window) - RB2_CONN_HDR_LEN;
	ret = params_check(&p, chan_max);
	if (ret < 0) {
		rte_errno = -ret;
		return NULL;
	}
	ep = calloc(1, sizeof(*ep));
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
	ep->tx_mark_max = tx->h.p.flags & RB2_CHAN_F_UNALIGNED ? 0 :
			  tx->h.p.slot_size - rb2_chan_msg_overhead(&tx->h.p);
	ep->poll_max = 32;
	ep->efd = -1;
	ep->peer_efd = -1;
	ep->conns = calloc(p.max_conns, sizeof(*ep->conns));
	ep->free_idx = calloc(p.max_conns, sizeof(*ep->free_idx));
	ep->owed = calloc(p.max_conns, sizeof(*ep->owed));
	ep->bufs = calloc(p.max_conns, sizeof(*ep->bufs));
	/* A power of two, for a mask instead of a division per entry. */
	ep->ready_mask = rte_align32pow2(p.max_conns) - 1;
	ep->ready = calloc((size_t)ep->ready_mask + 1, sizeof(*ep->ready));
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
	ep_goodbye(ep);
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

/* ---- frames out --------------------------------------------------------- */

/*
 * Put one control frame on the ring. -EAGAIN when the ring is full (the
 * caller keeps it owed); other errors fail the endpoint.
 */
static int
frame_out(struct rb2_conn_ep *ep, uint32_t cid, uint8_t type, uint16_t aux,
	  const void *body, uint32_t blen)
{
	uint8_t *slot;
	int ret = rb2_tx_reserve(ep->tx, RB2_CONN_HDR_LEN + blen, (void **)&slot);

	if (ret == -ENOBUFS)
		return -EAGAIN;
	if (ret < 0) {
		ep_fail(ep, ret);
		return ret;
	}
	*(uint64_t *)slot = __rb2_conn_hdr(cid, type, aux);
	if (blen != 0)
		memcpy(slot + RB2_CONN_HDR_LEN, body, blen);
	rb2_tx_commit(ep->tx, RB2_CONN_HDR_LEN + blen);
	ep->tx_run_cid = RB2_CONN_CID_NONE;      /* no run continues past it */
	CONN_STAT_ADD(ep, ctrl_frames_tx, 1);
	atomic_store_explicit(&ep->ctrl_bytes_tx, atomic_load_explicit(&ep->ctrl_bytes_tx,
		memory_order_relaxed) + RB2_CONN_HDR_LEN + blen, memory_order_relaxed);
	return 0;
}

int
__rb2_conn_frame_out(struct rb2_conn_ep *ep, uint32_t cid, uint8_t type, uint16_t aux,
		     const void *body, uint32_t blen)
{
	return frame_out(ep, cid, type, aux, body, blen);
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
		ret = frame_out(ep, RB2_CONN_CID_NONE, RB2_CONN_FR_SYN, c->port, &h, sizeof(h));
		if (ret < 0)
			return ret;
		c->owed &= ~RB2_CONN_OWE_SYN;
	}
	if (c->owed & RB2_CONN_OWE_SYNACK) {
		hello_of(ep, c, &h);
		ret = frame_out(ep, c->peer_cd, RB2_CONN_FR_SYNACK, 0, &h, sizeof(h));
		if (ret < 0)
			return ret;
		c->owed &= ~RB2_CONN_OWE_SYNACK;
	}
	if (c->owed & RB2_CONN_OWE_WANT) {
		ret = frame_out(ep, c->peer_cd, RB2_CONN_FR_WANT, 0, NULL, 0);
		if (ret < 0)
			return ret;
		c->owed &= ~RB2_CONN_OWE_WANT;
	}
	if (c->owed & RB2_CONN_OWE_FIN) {
		ret = frame_out(ep, c->peer_cd, RB2_CONN_FR_FIN, 0, NULL, 0);
		if (ret < 0)
			return ret;
		c->owed &= ~RB2_CONN_OWE_FIN;
	}
	if (c->owed & RB2_CONN_OWE_RST) {
		ret = frame_out(ep, c->peer_cd, RB2_CONN_FR_RST, c->rst_reason, NULL, 0);
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
	ret = frame_out(ep, RB2_CONN_CID_NONE, RB2_CONN_FR_CREDIT, (uint16_t)n, cr, n * sizeof(cr[0]));
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
static void
send_owed(struct rb2_conn_ep *ep)
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
		if (frame_out(ep, ep->refusals[i].peer_cd, RB2_CONN_FR_REFUSE,
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
			maybe_free(ep, c);
	}
	ep->n_owed = keep;
}

/* ---- frames in ---------------------------------------------------------- */

static void
bad_frame(struct rb2_conn_ep *ep, const char *what, uint32_t len, unsigned int type)
{
	CONN_STAT_ADD(ep, bad_frames, 1);
	CONN_LOG(WARNING, "endpoint %s: dropped a malformed frame (%s: type %u, %u bytes)",
		 ep->name, what, type, len);
}

void
__rb2_conn_bad_frame(struct rb2_conn_ep *ep, const char *what, uint32_t len, unsigned int type)
{
	bad_frame(ep, what, len, type);
}

static void
unknown_conn(struct rb2_conn_ep *ep, uint32_t cid, unsigned int type)
{
	uint64_t n = atomic_load_explicit(&ep->ctr.unknown_conn, memory_order_relaxed) + 1;

	CONN_STAT_ADD(ep, unknown_conn, 1);
	/* The first one, then at powers of two: a flood does not flood the log. */
	if (rte_is_power_of_2(n))
		CONN_LOG(WARNING, "endpoint %s: dropped a frame (type %u) for connection "
			 "%#x, which is not open here (%" PRIu64 " so far)",
			 ep->name, type, cid, n);
}

void
__rb2_conn_credit_due(struct rb2_conn_ep *ep, struct rb2_conn_slot *c)
{
	owe(ep, c, RB2_CONN_OWE_CREDIT);
	if (ep->resv_cd < 0)
		send_owed(ep);
}

/* Append a message to @p c's receive buffer (its window checked): data,
 * or a lent buffer's descriptor (@p kind RB2_CONN_REC_REF). */
static __rte_always_inline void
record_in(struct rb2_conn_ep *ep, struct rb2_conn_slot *c, const uint8_t *payload, uint32_t len,
	  uint32_t fp, uint32_t kind)
{
	uint64_t h = (uint64_t)kind << 32 | len;
	uint8_t *rec;

	if (c->wpos == c->vpos)
		mark_ready(ep, c);
	if (c->buf == NULL) {          /* empty: the warmest free buffer, from its start */
		c->buf = ep->bufs[--ep->n_bufs];
		c->origin = c->wpos;
	}
	rec = __rb2_conn_rec(ep, c, c->wpos);
	memcpy(rec, &h, 8);
	/* libc's memcpy, not rte_memcpy: inline vector copies gained no
	 * throughput at 64 B and cost a ping-pong 1.42x a bare channel's
	 * round trip against 1.13x; at 64 KiB into 1000 cold buffers libc's
	 * rep movsb (no read for ownership) was 15% faster. */
	memcpy(rec + RB2_CONN_HDR_LEN, payload, len);
	c->wpos += fp;
	c->rx_msgs++;
	c->rx_bytes += len;
	CONN_STAT_ADD(ep, rx_msgs, 1);
	CONN_STAT_ADD(ep, rx_bytes, len);
}

/* One more receive buffer on the endpoint's stack (there is none free):
 * at most one per connection is ever made. 0, or -ENOMEM. */
static int
buf_make(struct rb2_conn_ep *ep)
{
	uint8_t *b = malloc((size_t)ep->p.window + rb2_conn_footprint(ep->p.max_msg));

	if (b == NULL)
		return -ENOMEM;
	ep->bufs[ep->n_bufs++] = b;
	CONN_STAT_ADD(ep, rx_buffers, 1);
	return 0;
}

static void
data_in(struct rb2_conn_ep *ep, struct rb2_conn_slot *c, const uint8_t *payload, uint32_t len,
	uint32_t kind)
{
	uint32_t fp = rb2_conn_footprint(len);
	const struct rb2_bulk_ref *ref = (const struct rb2_bulk_ref *)payload;

	if (c->app_closed || c->err != 0) {
		/* Closed unread by the application, or reset: counted, a lent
		 * buffer given back. Credit is returned to a connection that
		 * is only half-closed by us (its peer may still send); a reset
		 * one keeps the records it has for its reader, in place. */
		CONN_STAT_ADD(ep, discarded_msgs, 1);
		CONN_STAT_ADD(ep, discarded_bytes, kind == RB2_CONN_REC_REF ? ref->len : len);
		if (kind == RB2_CONN_REC_REF)
			__rb2_conn_refdone_owe(ep, ref->tag, -ECONNABORTED);
		if (c->rpos == c->wpos) {
			c->wpos += fp;
			__rb2_conn_consumed(ep, c, fp);
		}
		return;
	}
	if (unlikely(c->wpos + fp - c->rpos > ep->p.window || len > ep->p.max_msg)) {
		CONN_STAT_ADD(ep, window_violations, 1);
		CONN_LOG(ERR, "endpoint %s: connection %#x got %u bytes beyond its "
			 "window of %u (%" PRIu64 " buffered): reset", ep->name, c->cd,
			 len, ep->p.window, c->wpos - c->rpos);
		conn_fail(ep, c, -EPROTO, rst_why[RB2_CONN_RST_WINDOW]);
		c->rst_reason = RB2_CONN_RST_WINDOW;
		owe(ep, c, RB2_CONN_OWE_RST);
		if (kind == RB2_CONN_REC_REF)
			__rb2_conn_refdone_owe(ep, ref->tag, -ECONNABORTED);
		return;
	}
	if (unlikely(c->buf == NULL && ep->n_bufs == 0 && buf_make(ep) < 0)) {
		CONN_LOG(ERR, "endpoint %s: connection %#x: no memory for a receive buffer "
			 "of %u bytes: reset (a smaller window needs less)", ep->name, c->cd,
			 ep->p.window);
		CONN_STAT_ADD(ep, discarded_msgs, 1);
		CONN_STAT_ADD(ep, discarded_bytes, kind == RB2_CONN_REC_REF ? ref->len : len);
		conn_fail(ep, c, -ENOMEM, rst_why[RB2_CONN_RST_NOMEM]);
		c->rst_reason = RB2_CONN_RST_NOMEM;
		owe(ep, c, RB2_CONN_OWE_RST);
		if (kind == RB2_CONN_REC_REF)
			__rb2_conn_refdone_owe(ep, ref->tag, -ECONNABORTED);
		return;
	}
	record_in(ep, c, payload, len, fp, kind);
	if (kind == RB2_CONN_REC_REF) {
		/* Counted as the payload it stands for. */
		c->rx_bytes += ref->len - len;
		CONN_STAT_ADD(ep, rx_bytes, ref->len - len);
	}
}

/* A lent buffer's descriptor for connection @p cid. Whatever becomes of
 * it, the lender hears back (REFDONE), or its buffer would stay lent. */
static void
ref_in(struct rb2_conn_ep *ep, uint32_t cid, const uint8_t *body, uint32_t blen)
{
	const struct rb2_bulk_ref *ref = (const struct rb2_bulk_ref *)body;
	struct rb2_conn_slot *c;

	if (!rb2_bulk_ref_valid(body, blen) || ref->len > INT32_MAX) {
		bad_frame(ep, "not a lent buffer's descriptor", blen + RB2_CONN_HDR_LEN,
			  RB2_CONN_FR_REF);
		if (blen >= 4)
			__rb2_conn_refdone_owe(ep, ref->tag, -ECONNABORTED);
		return;
	}
	c = slot_of(ep, cid);
	if (unlikely(c == NULL || c->state == RB2_CONN_ST_SYN_SENT)) {
		unknown_conn(ep, cid, RB2_CONN_FR_REF);
		return __rb2_conn_refdone_owe(ep, ref->tag, -ECONNABORTED);
	}
	data_in(ep, c, body, blen, RB2_CONN_REC_REF);
}

static int
hello_ok(struct rb2_conn_ep *ep, const uint8_t *body, uint32_t blen,
	 struct rb2_conn_hello *h, unsigned int type)
{
	if (blen != sizeof(*h)) {
		bad_frame(ep, "hello of the wrong size", blen, type);
		return 0;
	}
	memcpy(h, body, sizeof(*h));
	if (h->magic != RB2_CONN_MAGIC || h->version != RB2_CONN_VERSION) {
		bad_frame(ep, h->magic != RB2_CONN_MAGIC ? "bad magic (byte order?)" :
			  "unknown version", blen, type);
		return 0;
	}
	if (h->window < 4096 || h->max_msg == 0 ||
	    rb2_conn_footprint(h->max_msg) > h->window) {
		bad_frame(ep, "window or max_msg out of range", blen, type);
		return 0;
	}
	return 1;
}

static void
refuse(struct rb2_conn_ep *ep, uint32_t peer_cd, uint16_t reason)
{
	if (ep->n_refusals == ep->cap_refusals) {
		uint32_t cap = ep->cap_refusals ? ep->cap_refusals * 2 : 16;
		struct rb2_conn_refusal *r = realloc(ep->refusals, cap * sizeof(*r));

		if (r == NULL) {
			/* The peer's connect then fails when the channel
			 * does; say why here. */
			CONN_LOG(ERR, "endpoint %s: out of memory refusing a connect",
				 ep->name);
			return;
		}
		ep->refusals = r;
		ep->cap_refusals = cap;
	}
	ep->refusals[ep->n_refusals++] = (struct rb2_conn_refusal){ peer_cd, reason };
	CONN_STAT_ADD(ep, refused_sent, 1);
}

static struct rb2_conn_listener *
listener_of(struct rb2_conn_ep *ep, uint16_t port)
{
	for (uint32_t i = 0; i < RB2_CONN_LISTEN_MAX; i++)
		if (ep->listeners[i].used && ep->listeners[i].port == port)
			return &ep->listeners[i];
	return NULL;
}

static void
syn_in(struct rb2_conn_ep *ep, uint16_t port, const uint8_t *body, uint32_t blen)
{
	struct rb2_conn_listener *l = listener_of(ep, port);
	struct rb2_conn_hello h;
	struct rb2_conn_slot *c;

	if (!hello_ok(ep, body, blen, &h, RB2_CONN_FR_SYN))
		return;
	if (l == NULL)
		return refuse(ep, h.src_cd, RB2_CONN_REFUSE_NO_LISTENER);
	if (l->count == l->backlog)
		return refuse(ep, h.src_cd, RB2_CONN_REFUSE_BACKLOG);
	c = slot_alloc(ep);
	if (c == NULL)
		return refuse(ep, h.src_cd, RB2_CONN_REFUSE_TOO_MANY);
	c->state = RB2_CONN_ST_BACKLOG;
	c->port = port;
	c->peer_cd = h.src_cd;
	c->peer_window = h.window;
	c->peer_max = h.max_msg;
	c->max_send = RTE_MIN(ep->p.max_msg, h.max_msg);
	l->q[(l->head + l->count++) % l->backlog] = c->cd;
	owe(ep, c, RB2_CONN_OWE_SYNACK);
	CONN_STAT_ADD(ep, conns_opened, 1);
}

/* ---- blocking mode: the doorbell ---------------------------------------- */

/* The peer sleeps: ring its eventfd if the ring holds what it has not read.
 * Once per sleep (it tells us again when it sleeps again). */
static void
ring_if_due(struct rb2_conn_ep *ep)
{
	uint64_t one = 1;

	if (ep->tx->pub_tail == ep->peer_head || ep->peer_efd < 0)
		return;
	ep->peer_sleeps = 0;
	CONN_STAT_ADD(ep, doorbells_rung, 1);
	if (write(ep->peer_efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		CONN_LOG(ERR, "endpoint %s: cannot ring the peer's doorbell: %s",
			 ep->name, strerror(errno));
}

/* The peer's eventfd, as a descriptor of ours: the same number in this
 * process; a copy through pidfd_getfd() from another (Linux 5.6). */
static int
peer_doorbell(struct rb2_conn_ep *ep, uint32_t pid, int32_t fd)
{
	int pidfd, copy;

	if (ep->peer_efd >= 0 && ep->peer_pid == pid && ep->peer_efd_num == fd)
		return ep->peer_efd;
	if (ep->peer_efd >= 0 && ep->peer_pid != (uint32_t)getpid())
		close(ep->peer_efd);
	ep->peer_efd = -1;
	ep->peer_pid = pid;
	ep->peer_efd_num = fd;
	if (pid == (uint32_t)getpid())
		return ep->peer_efd = fd;
	pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
	copy = pidfd < 0 ? -1 : (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
	if (copy < 0)
		CONN_LOG(ERR, "endpoint %s: cannot take the doorbell of process %u: %s "
			 "(needs Linux 5.6 and ptrace rights over it); it is woken at its "
			 "wait's timeout only", ep->name, pid, strerror(errno));
	if (pidfd >= 0)
		close(pidfd);
	return ep->peer_efd = copy;
}

static void
sleep_in(struct rb2_conn_ep *ep, const uint8_t *body, uint32_t blen)
{
	struct rb2_conn_sleep sl;

	if (blen != sizeof(sl))
		return bad_frame(ep, "sleep notice of the wrong size", blen, RB2_CONN_FR_SLEEP);
	/* Its pid and fd mean nothing on another host. */
	if (rb2_xport_caps(ep->tx->h.xp) & RB2_XPORT_CAP_REMOTE)
		return bad_frame(ep, "sleep notice across hosts", blen, RB2_CONN_FR_SLEEP);
	memcpy(&sl, body, sizeof(sl));
	peer_doorbell(ep, sl.pid, sl.fd);
	ep->peer_head = sl.head;
	ep->peer_sleeps = 1;
	ring_if_due(ep);
}

/* Awake again after a sleep: drain our doorbell, tell the peer. */
static void
disarm(struct rb2_conn_ep *ep)
{
	uint64_t v;

	if (read(ep->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		CONN_LOG(ERR, "endpoint %s: doorbell: %s", ep->name, strerror(errno));
	if (frame_out(ep, RB2_CONN_CID_NONE, RB2_CONN_FR_AWAKE, 0, NULL, 0) == 0)
		ep->armed = 0;
	/* else the ring is full: the peer rings once more, at worst */
}

/* A frame as it came off the ring, its header read, or, for a marked
 * frame, which has none, taken from the run it continues. */
struct frame {
	uint32_t cid;
	uint8_t type;             /* 0: no header (too short, or marked out of a run) */
	uint8_t marked;
	uint16_t aux;
	const uint8_t *body;
	uint32_t blen;
	uint32_t len;             /* its bytes in the ring */
};

/* Read the frame @p m, which follows in the ring a DATA frame of
 * connection @p run (or RB2_CONN_CID_NONE: any other frame). @return the
 * run after it, for the frame that follows it. */
static __rte_always_inline uint32_t
frame_get(const struct rb2_msg *m, uint32_t run, struct frame *fr)
{
	uint64_t hdr;

	fr->len = rb2_msg_len(m);
	fr->marked = rb2_msg_marked(m);
	fr->aux = 0;
	if (fr->marked) {
		/* No header: the run's DATA, from the first byte. */
		fr->cid = run;
		fr->type = run != RB2_CONN_CID_NONE ? RB2_CONN_FR_DATA : 0;
		fr->body = m->data;
		fr->blen = fr->len;
		return run;
	}
	if (unlikely(fr->len < RB2_CONN_HDR_LEN)) {
		fr->cid = RB2_CONN_CID_NONE;
		fr->type = 0;
		fr->body = m->data;
		fr->blen = 0;
		return RB2_CONN_CID_NONE;
	}
	memcpy(&hdr, m->data, sizeof(hdr));      /* cid, type, flags, aux */
	fr->cid = (uint32_t)hdr;
	fr->type = (uint8_t)(hdr >> 32);
	fr->aux = (uint16_t)(hdr >> 48);
	fr->body = (const uint8_t *)m->data + RB2_CONN_HDR_LEN;
	fr->blen = fr->len - RB2_CONN_HDR_LEN;
	return fr->type == RB2_CONN_FR_DATA ? fr->cid : RB2_CONN_CID_NONE;
}

/* The peer said goodbye (RB2_CONN_FR_BYE): answer it, then end. */
static void
bye_in(struct rb2_conn_ep *ep)
{
	if (!ep->bye_sent && ep->err == 0) {
		ep->bye_sent = 1;
		if (frame_out(ep, RB2_CONN_CID_NONE, RB2_CONN_FR_BYE, RB2_CONN_BYE_ANSWER,
			      NULL, 0) == 0)
			rb2_tx_flush(ep->tx);
	}
	ep_end(ep, -ESHUTDOWN, -ECONNRESET, rst_why[RB2_CONN_RST_PEER_LEFT],
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

static void
ep_goodbye(struct rb2_conn_ep *ep)
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
		send_owed(ep);
	if (frame_out(ep, RB2_CONN_CID_NONE, RB2_CONN_FR_BYE, RB2_CONN_BYE, NULL, 0) < 0 ||
	    rb2_tx_flush(ep->tx) < 0)
		return;
	if (ep->peer_sleeps)
		ring_if_due(ep);
	if (ep->tx->h.qp->peer_local)
		return;
	while (rte_get_timer_cycles() < end) {
		n = rb2_rx_peek_burst(ep->rx, m, RTE_DIM(m));
		if (n < 0)
			return;
		for (int i = 0; i < n; i++) {
			struct frame fr;

			ep->rx_run_cid = frame_get(&m[i], ep->rx_run_cid, &fr);
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

static void
frame_in(struct rb2_conn_ep *ep, const struct frame *fr)
{
	uint32_t cid = fr->cid, blen = fr->blen, len = fr->len;
	const uint8_t *body = fr->body;
	uint16_t aux = fr->aux;
	uint8_t type = fr->type;
	struct rb2_conn_hello h;
	struct rb2_conn_slot *c;

	if (unlikely(fr->marked && cid == RB2_CONN_CID_NONE))
		return bad_frame(ep, "marked as a run's, with no data frame before it", len, 0);
	if (unlikely(!fr->marked && len < RB2_CONN_HDR_LEN))
		return bad_frame(ep, "shorter than the header", len, 0);
	if (likely(type == RB2_CONN_FR_DATA)) {
		c = slot_of(ep, cid);
		if (unlikely(c == NULL || c->state == RB2_CONN_ST_SYN_SENT))
			return unknown_conn(ep, cid, type);
		if (unlikely(blen == 0))
			return bad_frame(ep, "empty data", len, type);
		return data_in(ep, c, body, blen, RB2_CONN_REC_DATA);
	}
	if (type == RB2_CONN_FR_REF)
		return ref_in(ep, cid, body, blen);
	if (unlikely(type == 0 || type >= RB2_CONN_FR_MAX))
		return bad_frame(ep, "unknown type", len, type);
	CONN_STAT_ADD(ep, ctrl_frames_rx, 1);
	switch (type) {
	case RB2_CONN_FR_SYN:
		return syn_in(ep, aux, body, blen);
	case RB2_CONN_FR_SLEEP:
		return sleep_in(ep, body, blen);
	case RB2_CONN_FR_AWAKE:
		ep->peer_sleeps = 0;
		return;
	case RB2_CONN_FR_BYE:
		return bye_in(ep);
	case RB2_CONN_FR_REFDONE:
		return __rb2_conn_refdone_in(ep, body, blen, aux);
	case RB2_CONN_FR_READDONE:
		if (!ep->p.service)
			return bad_frame(ep, "READDONE, which only a service sends", len, type);
		return __rb2_conn_readdone_in(ep, body, blen, aux);
	case RB2_CONN_FR_READREQ:
		return bad_frame(ep, "READREQ, which only a service takes", len, type);
	case RB2_CONN_FR_CREDIT:
		if (aux == 0 || blen != aux * sizeof(struct rb2_conn_credit))
			return bad_frame(ep, "credit count and length disagree", len, type);
		for (uint32_t i = 0; i < aux; i++) {
			struct rb2_conn_credit cr;

			memcpy(&cr, body + i * sizeof(cr), sizeof(cr));
			c = slot_of(ep, cr.cid);
			/* A credit may follow our close (the peer read on
			 * after our FIN): it has nothing to deliver. */
			if (c == NULL)
				continue;
			/* 32-bit cumulative count, extended against ours. */
			c->acked += (uint32_t)(cr.consumed - (uint32_t)c->acked);
			c->want_sent = 0;
		}
		return;
	default:
		break;
	}
	c = slot_of(ep, cid);
	if (c == NULL)
		return unknown_conn(ep, cid, type);
	switch (type) {
	case RB2_CONN_FR_SYNACK:
		if (c->state != RB2_CONN_ST_SYN_SENT)
			return bad_frame(ep, "accept of a connection not connecting", len, type);
		if (!hello_ok(ep, body, blen, &h, type))
			return;
		c->peer_cd = h.src_cd;
		c->peer_window = h.window;
		c->peer_max = h.max_msg;
		c->max_send = RTE_MIN(ep->p.max_msg, h.max_msg);
		c->state = RB2_CONN_ST_OPEN;
		CONN_STAT_ADD(ep, conns_opened, 1);
		mark_ready(ep, c);
		if (c->app_closed)   /* closed while connecting: close it now */
			owe(ep, c, RB2_CONN_OWE_FIN);
		return;
	case RB2_CONN_FR_REFUSE:
		if (c->state != RB2_CONN_ST_SYN_SENT || aux == 0 || aux >= RB2_CONN_REFUSE_MAX)
			return bad_frame(ep, "refusal of a connection not connecting", len, type);
		conn_fail(ep, c, -ECONNREFUSED, refuse_why[aux]);
		CONN_STAT_ADD(ep, refused_recv, 1);
		c->wr_shut = c->rd_eof = 1;
		return maybe_free(ep, c);
	case RB2_CONN_FR_FIN:
		c->rd_eof = 1;
		/* A reset after it (the peer's endpoint closed, say) fails
		 * sending only: the stream that ended reads to its end. */
		c->rd_clean = c->err == 0;
		mark_ready(ep, c);
		return maybe_free(ep, c);
	case RB2_CONN_FR_RST:
		conn_fail(ep, c, -ECONNRESET, aux > 0 && aux < RB2_CONN_RST_MAX ? rst_why[aux] :
			  "reset by the peer");
		c->owed &= ~(RB2_CONN_OWE_FIN | RB2_CONN_OWE_WANT | RB2_CONN_OWE_CREDIT);
		c->rd_eof = 1;
		return maybe_free(ep, c);
	case RB2_CONN_FR_WANT:
		c->peer_wants = 1;
		if (c->rpos != c->credited)
			owe(ep, c, RB2_CONN_OWE_CREDIT);
		return;
	default:
		return;
	}
}

/* ---- progress ----------------------------------------------------------- */

/* The common frame, inline in the poll: data for an open connection,
 * within its window. @return 0: anything else, for frame_in(). */
static __rte_always_inline int
data_in_fast(struct rb2_conn_ep *ep, const struct frame *fr)
{
	uint32_t fp = rb2_conn_footprint(fr->blen);
	struct rb2_conn_slot *c;

	if (unlikely(fr->type != RB2_CONN_FR_DATA || fr->blen == 0))
		return 0;
	c = slot_of(ep, fr->cid);
	if (unlikely(c == NULL || c->state != RB2_CONN_ST_OPEN || c->app_closed || c->err != 0 ||
		     c->wpos + fp - c->rpos > ep->p.window || fr->blen > ep->p.max_msg ||
		     (c->buf == NULL && ep->n_bufs == 0)))
		return 0;
	record_in(ep, c, fr->body, fr->blen, fp, RB2_CONN_REC_DATA);
	return 1;
}

/* Take the next frame off the ring (@p m): file its data, or act on it. */
static __rte_always_inline void
frame_take(struct rb2_conn_ep *ep, const struct rb2_msg *m)
{
	struct frame fr;

	ep->rx_run_cid = frame_get(m, ep->rx_run_cid, &fr);
	if (!data_in_fast(ep, &fr))
		frame_in(ep, &fr);
}

/* A marked DATA frame @p fr with the header it was sent without, in the
 * endpoint's relay buffer: the relay forwards frames of many runs. @return
 * the buffer, or NULL (the frame is counted as bad, with the reason). */
static uint8_t *
relay_headed(struct rb2_conn_ep *ep, const struct frame *fr)
{
	if (fr->blen > ep->p.max_msg) {
		bad_frame(ep, "marked, and longer than the largest message", fr->len,
			  RB2_CONN_FR_DATA);
		return NULL;
	}
	if (ep->relay_buf == NULL)
		ep->relay_buf = malloc(RB2_CONN_HDR_LEN + ep->p.max_msg);
	if (ep->relay_buf == NULL) {
		bad_frame(ep, "marked, and no memory to give it its header for the relay",
			  fr->len, RB2_CONN_FR_DATA);
		return NULL;
	}
	*(uint64_t *)ep->relay_buf = __rb2_conn_hdr(fr->cid, RB2_CONN_FR_DATA, 0);
	memcpy(ep->relay_buf + RB2_CONN_HDR_LEN, fr->body, fr->blen);
	return ep->relay_buf;
}

/* A relay's link: the endpoint's own frames (sleep, awake) here, the rest
 * to the relay, which may refuse more for now. @return the frames taken. */
static int
relay_in(struct rb2_conn_ep *ep, struct rb2_msg *m, int n)
{
	for (int i = 0; i < n; i++) {
		struct frame fr;
		uint32_t run = frame_get(&m[i], ep->rx_run_cid, &fr);
		uint8_t *f = m[i].data;

		/* Its own frames, and a marked one out of any run (counted
		 * as bad there), are the endpoint's. */
		if (fr.type == RB2_CONN_FR_SLEEP || fr.type == RB2_CONN_FR_AWAKE ||
		    fr.type == RB2_CONN_FR_BYE || (fr.marked && fr.cid == RB2_CONN_CID_NONE))
			frame_in(ep, &fr);
		else if ((!fr.marked || (f = relay_headed(ep, &fr)) != NULL) &&
			 ep->relay(ep->relay_arg, ep, f, fr.marked ? RB2_CONN_HDR_LEN + fr.blen :
				   fr.len) == -EAGAIN)
			return i;
		ep->rx_run_cid = run;
	}
	return n;
}

/* Telemetry asked for a page of connections: copy it, on this lcore. */
static void
tel_snapshot(struct rb2_conn_ep *ep, uint64_t asked)
{
	uint32_t i = (uint32_t)asked, n = 0;

	for (; i < ep->p.max_conns && n < RB2_CONN_TEL_PAGE; i++) {
		const struct rb2_conn_slot *c = &ep->conns[i];
		struct rb2_conn_tel *t = &ep->tel[n];

		if (c->state == RB2_CONN_ST_FREE)
			continue;
		t->cd = c->cd;
		t->peer_cd = c->peer_cd;
		t->state = c->state;
		t->port = c->port;
		t->credit = c->state == RB2_CONN_ST_OPEN ?
			(uint32_t)(c->peer_window - (c->sent - c->acked)) : 0;
		t->tx_credit_used = c->sent;
		t->rx_msgs = c->rx_msgs;
		t->rx_bytes = c->rx_bytes;
		t->buffered = (uint32_t)(c->wpos - c->rpos);
		n++;
	}
	ep->tel_n = n;
	ep->tel_next = i;
	atomic_store_explicit(&ep->tel_taken, (uint32_t)(asked >> 32), memory_order_release);
}

/* ep_progress()'s flags. */
#define POLL_CHECK_PEER 1u   /* nothing came: ask whether the peer lives */
#define POLL_LAZY 2u         /* a run of one connection's data may stay in the ring */

/* File what is left of the run left in the ring (ep->pend) into its
 * receive buffer, in order, and release it. @return the frames filed. */
static unsigned int
pend_flush(struct rb2_conn_ep *ep)
{
	unsigned int n = ep->pend_n - ep->pend_i;

	for (unsigned int i = ep->pend_i; i < ep->pend_n; i++)
		frame_take(ep, &ep->pend[i]);
	__rb2_conn_pend_done(ep);
	return n;
}

/*
 * A run of at least this many data frames for one connection at the head
 * of a burst stays in the ring for recv() (ep->pend); a shorter one (frames
 * of many connections interleaved) is filed at once, or each poll would take
 * a frame or two.
 */
#define PEND_MIN_RUN 8u
/* A lone frame stays only from this size: a small one (a ping-pong's)
 * taken straight cost the round trip 15-25% (doc/eval/conn.md). */
#define PEND_LONE_MIN 1024u

/* How many frames at the head of m[0..n) may stay in the ring for recv():
 * data for one open connection, which is marked ready. A control frame is
 * handled in order with the data before it, so it ends the run. 0: file
 * the burst. */
static unsigned int
pend_run(struct rb2_conn_ep *ep, const struct rb2_msg *m, unsigned int n)
{
	uint32_t run = ep->rx_run_cid, cid = RB2_CONN_CID_NONE;
	struct rb2_conn_slot *c;
	unsigned int k = 0;

	/* A marked frame's header is not read: its miss waits for recv()'s
	 * copy (the peek prefetched it). */
	for (; k < n; k++) {
		struct frame fr;

		run = frame_get(&m[k], run, &fr);
		if (unlikely(fr.type != RB2_CONN_FR_DATA || fr.blen == 0) ||
		    (k > 0 && fr.cid != cid))
			break;
		cid = fr.cid;
	}
	if (k == 0 || (k < n && k < PEND_MIN_RUN) ||
	    (k == 1 && rb2_msg_len(&m[0]) < PEND_LONE_MIN))
		return 0;
	c = slot_of(ep, cid);
	if (c == NULL || c->state != RB2_CONN_ST_OPEN)
		return 0;
	mark_ready(ep, c);
	/* Every frame of the run is handled before anything after it. */
	ep->pend_cid = ep->rx_run_cid = cid;
	return k;
}

/*
 * About as many bytes of frames as one poll takes from the ring: what it
 * copies into receive buffers is read back by recv() while still in this
 * core's cache. 32 frames of 64 KiB would be 2 MiB: 1000 connections at
 * 64 KiB moved 0.54x one connection's bytes that way, 0.92x with 64 KiB a
 * poll (128 KiB: 0.91x, 256 KiB: 0.88x, 512 KiB: 0.54x; doc/eval/conn.md).
 */
#ifndef CONN_POLL_BYTES
#define CONN_POLL_BYTES (64u << 10)
#endif

/*
 * The poll. @p flags: POLL_CHECK_PEER asks the transport whether the peer
 * lives when nothing came (at most every millisecond); the implicit poll of
 * an empty receive leaves that to the explicit ones, for an event loop calls
 * it per connection. POLL_LAZY (recv(), rb2_conn_ep_ready()) may leave a
 * run of one connection's data in the ring for recv() to copy out
 * (ep->pend, pend_run()).
 */
static int
ep_progress(struct rb2_conn_ep *ep, unsigned int flags)
{
	struct rb2_msg *m = ep->pend;
	uint64_t asked, head0;
	int n, ret, taken, filed = 0;

	/* Telemetry (rb2_conn_telemetry.c): two loads and a branch per poll. */
	asked = atomic_load_explicit(&ep->tel_asked, memory_order_acquire);
	if (unlikely((uint32_t)(asked >> 32) !=
		     atomic_load_explicit(&ep->tel_taken, memory_order_relaxed)))
		tel_snapshot(ep, asked);
	if (unlikely(ep->err != 0))
		return ep->err;
	/* What is left of the last run first: nothing overtakes it. */
	if (ep->pend_n != 0)
		filed = (int)pend_flush(ep);
	head0 = ep->rx->head;
	n = rb2_rx_peek_burst(ep->rx, m, ep->poll_max);
	if (unlikely(n < 0)) {
		ep_fail(ep, n);
		return n;
	}
	taken = n;
	if (unlikely(ep->relay != NULL)) {
		n = taken = relay_in(ep, m, n);
		if (n > 0)
			rb2_rx_release_burst(ep->rx, m, (unsigned int)n);
	} else if (n > 0) {
		/* The ring's bytes this poll took, from its own positions: the
		 * next poll takes half as many frames after one that took more
		 * than CONN_POLL_BYTES, twice as many after a full one that
		 * took less than half. Per poll, not per frame. */
		uint64_t span = (uint64_t)(uint32_t)(m[n - 1].next_lo - (uint32_t)head0) *
				ep->rx->h.p.slot_size;
		unsigned int run = (flags & POLL_LAZY) ? pend_run(ep, m, (unsigned int)n) : 0;

		if (run > 0) {
			/* The frames after the run stay in the ring, unseen:
			 * the next poll peeks them again. */
			ep->pend_n = run;
			ep->pend_skips = 0;
			taken = (int)run;
		} else {
			for (int i = 0; i < n; i++)
				frame_take(ep, &m[i]);
			rb2_rx_release_burst(ep->rx, m, (unsigned int)n);
		}
		if (unlikely(span > CONN_POLL_BYTES)) {
			if (ep->poll_max > 1)
				ep->poll_max >>= 1;
		} else if (unlikely(ep->poll_max < RTE_DIM(ep->pend)) &&
			   (unsigned int)n == ep->poll_max && span < CONN_POLL_BYTES / 2) {
			ep->poll_max <<= 1;
		}
	}
	/* A goodbye in this burst ends the endpoint: the peer is going, so
	 * nothing more goes out, nor is its liveness checked. */
	if (unlikely(ep->err != 0))
		return ep->err;
	if (unlikely(ep->armed) && ep->resv_cd < 0)
		disarm(ep);
	if ((ep->n_owed | ep->n_refusals | ep->n_refdone_owed) != 0)
		send_owed(ep);
	ret = rb2_tx_flush(ep->tx);
	/* Busy peers never sleep: this is one load and a branch. */
	if (unlikely(ep->peer_sleeps))
		ring_if_due(ep);
	/* An idle sender learns of a dead peer here, within a millisecond
	 * of the transport knowing. */
	if (ret == 0 && n == 0 && filed == 0 && (flags & POLL_CHECK_PEER))
		ret = rb2_tx_check(ep->tx);
	if (unlikely(ret < 0)) {
		ep_fail(ep, ret);
		return ret;
	}
	return unlikely(ep->err != 0) ? ep->err : taken + filed;
}

int
rb2_conn_ep_poll(struct rb2_conn_ep *ep)
{
	return ep_progress(ep, POLL_CHECK_PEER);
}

int
rb2_conn_ep_ready(struct rb2_conn_ep *ep, int *cds, unsigned int n)
{
	unsigned int k = 0;

	if (ep->n_ready == 0)
		ep_progress(ep, POLL_CHECK_PEER | POLL_LAZY);
	while (k < n && ep->n_ready > 0) {
		struct rb2_conn_slot *c = &ep->conns[ep->ready[ep->ready_head]];

		ep->ready_head = (ep->ready_head + 1) & ep->ready_mask;
		ep->n_ready--;
		c->in_ready = 0;
		if (c->state != RB2_CONN_ST_FREE && !c->app_closed)
			cds[k++] = (int)c->cd;
	}
	return k > 0 ? (int)k : ep->err;
}

int
rb2_conn_flush(struct rb2_conn_ep *ep)
{
	int ret;

	if (unlikely(ep->err != 0))
		return ep->err;
	ret = rb2_tx_flush(ep->tx);
	if (ret < 0)
		ep_fail(ep, ret);
	else if (unlikely(ep->peer_sleeps))
		ring_if_due(ep);
	return ret;
}

int
rb2_conn_ep_fd(struct rb2_conn_ep *ep)
{
	if (ep->efd < 0) {
		ep->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (ep->efd < 0) {
			CONN_LOG(ERR, "endpoint %s: eventfd: %s", ep->name, strerror(errno));
			return -errno;
		}
	}
	return ep->efd;
}

int
rb2_conn_ep_arm(struct rb2_conn_ep *ep)
{
	struct rb2_conn_sleep sl;
	struct rb2_msg m;
	int n;

	n = rb2_conn_ep_fd(ep);
	if (n < 0)
		return n;
	n = ep_progress(ep, POLL_CHECK_PEER);
	if (n != 0)
		return n;                 /* frames came, or the error */
	/* A peer on another host cannot ring an eventfd here: no notice
	 * (rb2_conn_ep_wait() naps instead). */
	if (rb2_xport_caps(ep->tx->h.xp) & RB2_XPORT_CAP_REMOTE)
		return 0;
	/* Frames we owe (a peer may wait on our credit), or a reservation
	 * open: not a time to sleep. */
	if (ep->n_owed != 0 || ep->n_refusals != 0 || ep->resv_cd >= 0)
		return 1;
	sl.head = ep->rx->head;
	sl.pid = (uint32_t)getpid();
	sl.fd = ep->efd;
	if (frame_out(ep, RB2_CONN_CID_NONE, RB2_CONN_FR_SLEEP, 0, &sl, sizeof(sl)) < 0 ||
	    rb2_tx_flush(ep->tx) < 0)
		return ep->err != 0 ? ep->err : 1;
	ep->armed = 1;
	CONN_STAT_ADD(ep, sleeps, 1);
	/* What came between our last look and the notice is not rung for:
	 * look once more. */
	n = rb2_rx_peek_burst(ep->rx, &m, 1);
	return n != 0 ? (n > 0 ? 1 : n) : 0;
}

int
rb2_conn_ep_wait(struct rb2_conn_ep *ep, unsigned int spin_us, int timeout_ms)
{
	uint64_t hz = rte_get_timer_hz(), now = rte_get_timer_cycles();
	uint64_t spin_end = now + hz * spin_us / 1000000;
	uint64_t end = timeout_ms < 0 ? UINT64_MAX : now + hz * (uint64_t)timeout_ms / 1000;
	int n;

	/* Run: poll while work may come soon. */
	do {
		n = ep_progress(ep, POLL_CHECK_PEER);
		if (n != 0)
			return n < 0 ? n : 1;
	} while (rte_get_timer_cycles() < spin_end);
	/* Block: tell the peer, sleep on the doorbell. Slices of 100 ms at
	 * most, to notice a dead peer within that. */
	for (;;) {
		struct pollfd pfd;
		uint64_t left;

		n = rb2_conn_ep_arm(ep);
		if (n != 0)
			return n < 0 ? n : 1;
		now = rte_get_timer_cycles();
		if (now >= end)
			return 0;
		left = (end - now) * 1000 / hz;
		pfd = (struct pollfd){ .fd = ep->efd, .events = POLLIN };
		/* Nobody rings across hosts (ep->armed stays 0 there): nap. */
		if (poll(&pfd, 1, (int)RTE_MIN(left + 1, ep->armed ? (uint64_t)100 : 1)) < 0 &&
		    errno != EINTR)
			return -errno;
		n = ep_progress(ep, POLL_CHECK_PEER);       /* disarms */
		if (n != 0)
			return n < 0 ? n : 1;
	}
}

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
	l->q = calloc(backlog, sizeof(*l->q));
	if (l->q == NULL)
		return -ENOMEM;
	/* Through a service: it must know where to send connects. */
	if (ep->p.service && (frame_out(ep, RB2_CONN_CID_NONE, RB2_CONN_FR_LISTEN, port,
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
		conn_fail(ep, c, -ECONNRESET, rst_why[RB2_CONN_RST_UNLISTEN]);
		if (c->err == -ECONNRESET && !c->rd_eof)
			owe(ep, c, RB2_CONN_OWE_RST);
		maybe_free(ep, c);
	}
	l->used = 0;
	l->count = 0;
	if (ep->p.service && frame_out(ep, RB2_CONN_CID_NONE, RB2_CONN_FR_UNLISTEN, port,
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
		ep_fail(ep, ret);
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
rb2_conn_connect_host(struct rb2_conn_ep *ep, uint32_t host, uint16_t port)
{
	struct rb2_conn_slot *c;

	if (ep->err != 0)
		return ep->err;
	if (host != 0 && !ep->p.service)
		return -EINVAL;
	c = slot_alloc(ep);
	if (c == NULL)
		return ep->n_free == 0 ? -EMFILE : -ENOMEM;
	c->state = RB2_CONN_ST_SYN_SENT;
	c->port = port;
	c->host = host;
	c->peer_cd = RB2_CONN_CID_NONE;
	owe(ep, c, RB2_CONN_OWE_SYN);
	send_owed(ep);
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
		send_owed(ep);
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
	send_owed(ep);
	rb2_conn_flush(ep);    /* a FIN is not left waiting for a poll */
	maybe_free(ep, c);
	return 0;
}

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
		ep_fail(ep, ret);
		return ret;
	}
	if (hl != 0)
		*(uint64_t *)slot = __rb2_conn_hdr(c->peer_cd, RB2_CONN_FR_DATA, 0);
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
			ep_progress(ep, 0);
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
		ep_progress(ep, POLL_LAZY);
		if (ep->pend_n == 0)
			return 0;
	}
	len = recv_pend(ep, c, buf, cap);
	if (len == 0 && (pend_is(ep, c) || ++ep->pend_skips >= PEND_SKIPS_MAX))
		pend_flush(ep);
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
	len = next_record(ep, c, &rec);
	if (len <= 0)
		return len;
	if (unlikely(*(const uint32_t *)(rec + 4) == RB2_CONN_REC_REF)) {
		/* Lent: READ into @buf (no view of it here). */
		if (zc)
			return -EMSGSIZE;
		len = __rb2_conn_ref_recv(ep, c, rec, buf, cap);
		if (len > 0 && (ep->n_owed | ep->n_refdone_owed) != 0) {
			send_owed(ep);        /* the lender's buffer is free */
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
rb2_conn_release(struct rb2_conn_ep *ep, int cd, unsigned int n)
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
		send_owed(ep);
	return 0;
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
