/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Connections: frames in, and the poll that takes them off the ring.
 * Data is filed into receive buffers (record_in(), inline), or left in the
 * ring for recv() as a run (ep->pend); control frames act on their
 * connection or the endpoint. Every malformed frame is counted and dropped.
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

/* ---- frames in ---------------------------------------------------------- */

void
__rb2_conn_bad_frame(struct rb2_conn_ep *ep, const char *what, uint32_t len, unsigned int type)
{
	CONN_STAT_ADD(ep, bad_frames, 1);
	CONN_LOG(WARNING, "endpoint %s: dropped a malformed frame (%s: type %u, %u bytes)",
		 ep->name, what, type, len);
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
	uint8_t *b = conn_alloc_lines((size_t)ep->p.window + rb2_conn_footprint(ep->p.max_msg), 1, 0);

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
		__rb2_conn_fail(ep, c, -EPROTO, __rb2_conn_rst_why[RB2_CONN_RST_WINDOW]);
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
		__rb2_conn_fail(ep, c, -ENOMEM, __rb2_conn_rst_why[RB2_CONN_RST_NOMEM]);
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
		__rb2_conn_bad_frame(ep, "not a lent buffer's descriptor", blen + RB2_CONN_HDR_LEN,
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
		__rb2_conn_bad_frame(ep, "hello of the wrong size", blen, type);
		return 0;
	}
	memcpy(h, body, sizeof(*h));
	if (h->magic != RB2_CONN_MAGIC || h->version != RB2_CONN_VERSION) {
		__rb2_conn_bad_frame(ep, h->magic != RB2_CONN_MAGIC ? "bad magic (byte order?)" :
			  "unknown version", blen, type);
		return 0;
	}
	if (h->window < 4096 || h->max_msg == 0 ||
	    rb2_conn_footprint(h->max_msg) > h->window) {
		__rb2_conn_bad_frame(ep, "window or max_msg out of range", blen, type);
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
	c = __rb2_conn_slot_alloc(ep);
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

static void
frame_in(struct rb2_conn_ep *ep, const struct rb2_conn_frame *fr)
{
	uint32_t cid = fr->cid, blen = fr->blen, len = fr->len;
	const uint8_t *body = fr->body;
	uint16_t aux = fr->aux;
	uint8_t type = fr->type;
	struct rb2_conn_hello h;
	struct rb2_conn_slot *c;

	if (unlikely(fr->marked && cid == RB2_CONN_CID_NONE))
		return __rb2_conn_bad_frame(ep, "marked as a run's, with no data frame before it", len, 0);
	if (unlikely(!fr->marked && len < RB2_CONN_HDR_LEN))
		return __rb2_conn_bad_frame(ep, "shorter than the header", len, 0);
	if (likely(type == RB2_CONN_FR_DATA)) {
		c = slot_of(ep, cid);
		if (unlikely(c == NULL || c->state == RB2_CONN_ST_SYN_SENT))
			return unknown_conn(ep, cid, type);
		if (unlikely(blen == 0))
			return __rb2_conn_bad_frame(ep, "empty data", len, type);
		return data_in(ep, c, body, blen, RB2_CONN_REC_DATA);
	}
	if (type == RB2_CONN_FR_REF)
		return ref_in(ep, cid, body, blen);
	if (unlikely(type == 0 || type >= RB2_CONN_FR_MAX))
		return __rb2_conn_bad_frame(ep, "unknown type", len, type);
	CONN_STAT_ADD(ep, ctrl_frames_rx, 1);
	switch (type) {
	case RB2_CONN_FR_SYN:
		return syn_in(ep, aux, body, blen);
	case RB2_CONN_FR_SLEEP:
		return __rb2_conn_sleep_in(ep, body, blen);
	case RB2_CONN_FR_AWAKE:
		ep->peer_sleeps = 0;
		return;
	case RB2_CONN_FR_BYE:
		return __rb2_conn_bye_in(ep);
	case RB2_CONN_FR_REFDONE:
		return __rb2_conn_refdone_in(ep, body, blen, aux);
	case RB2_CONN_FR_READDONE:
		if (!ep->p.service)
			return __rb2_conn_bad_frame(ep, "READDONE, which only a service sends", len, type);
		return __rb2_conn_readdone_in(ep, body, blen, aux);
	case RB2_CONN_FR_READREQ:
		return __rb2_conn_bad_frame(ep, "READREQ, which only a service takes", len, type);
	case RB2_CONN_FR_CREDIT:
		if (aux == 0 || blen != aux * sizeof(struct rb2_conn_credit))
			return __rb2_conn_bad_frame(ep, "credit count and length disagree", len, type);
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
			return __rb2_conn_bad_frame(ep, "accept of a connection not connecting", len, type);
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
			return __rb2_conn_bad_frame(ep, "refusal of a connection not connecting", len, type);
		__rb2_conn_fail(ep, c, -ECONNREFUSED, __rb2_conn_refuse_why[aux]);
		CONN_STAT_ADD(ep, refused_recv, 1);
		c->wr_shut = c->rd_eof = 1;
		return __rb2_conn_maybe_free(ep, c);
	case RB2_CONN_FR_FIN:
		c->rd_eof = 1;
		/* A reset after it (the peer's endpoint closed, say) fails
		 * sending only: the stream that ended reads to its end. */
		c->rd_clean = c->err == 0;
		mark_ready(ep, c);
		return __rb2_conn_maybe_free(ep, c);
	case RB2_CONN_FR_RST:
		__rb2_conn_fail(ep, c, -ECONNRESET, aux > 0 && aux < RB2_CONN_RST_MAX ? __rb2_conn_rst_why[aux] :
			  "reset by the peer");
		c->owed &= ~(RB2_CONN_OWE_FIN | RB2_CONN_OWE_WANT | RB2_CONN_OWE_CREDIT);
		c->rd_eof = 1;
		return __rb2_conn_maybe_free(ep, c);
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
data_in_fast(struct rb2_conn_ep *ep, const struct rb2_conn_frame *fr)
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
	struct rb2_conn_frame fr;

	ep->rx_run_cid = conn_frame_get(m, ep->rx_run_cid, &fr);
	if (!data_in_fast(ep, &fr))
		frame_in(ep, &fr);
}

/* A marked DATA frame @p fr with the header it was sent without, in the
 * endpoint's relay buffer: the relay forwards frames of many runs. @return
 * the buffer, or NULL (the frame is counted as bad, with the reason). */
static uint8_t *
relay_headed(struct rb2_conn_ep *ep, const struct rb2_conn_frame *fr)
{
	if (fr->blen > ep->p.max_msg) {
		__rb2_conn_bad_frame(ep, "marked, and longer than the largest message", fr->len,
			  RB2_CONN_FR_DATA);
		return NULL;
	}
	if (ep->relay_buf == NULL)
		ep->relay_buf = malloc(RB2_CONN_HDR_LEN + ep->p.max_msg);
	if (ep->relay_buf == NULL) {
		__rb2_conn_bad_frame(ep, "marked, and no memory to give it its header for the relay",
			  fr->len, RB2_CONN_FR_DATA);
		return NULL;
	}
	*(uint64_t *)ep->relay_buf = rb2_conn_wire_hdr(fr->cid, RB2_CONN_FR_DATA, 0);
	memcpy(ep->relay_buf + RB2_CONN_HDR_LEN, fr->body, fr->blen);
	return ep->relay_buf;
}

/* A relay's link: the endpoint's own frames (sleep, awake) here, the rest
 * to the relay, which may refuse more for now. @return the frames taken. */
static int
relay_in(struct rb2_conn_ep *ep, struct rb2_msg *m, int n)
{
	for (int i = 0; i < n; i++) {
		struct rb2_conn_frame fr;
		uint32_t run = conn_frame_get(&m[i], ep->rx_run_cid, &fr);
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

/* File what is left of the run left in the ring (ep->pend) into its
 * receive buffer, in order, and release it. @return the frames filed. */
unsigned int
__rb2_conn_pend_flush(struct rb2_conn_ep *ep)
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

	/* A lone small frame, a ping-pong's, is filed: known without
	 * parsing it, which frame_take() does next. So is every run for a
	 * reader that views (ep->zc_reader). */
	if ((n == 1 && rb2_msg_len(&m[0]) < PEND_LONE_MIN) || ep->zc_reader)
		return 0;
	/* A marked frame's header is not read: its miss waits for recv()'s
	 * copy (the peek prefetched it). */
	for (; k < n; k++) {
		struct rb2_conn_frame fr;

		run = conn_frame_get(&m[k], run, &fr);
		if (unlikely(fr.type != RB2_CONN_FR_DATA || fr.blen == 0) ||
		    (k > 0 && fr.cid != cid))
			break;
		cid = fr.cid;
	}
	if (k == 0 || (k < n && k < PEND_MIN_RUN))
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
int
__rb2_conn_progress(struct rb2_conn_ep *ep, unsigned int flags)
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
		filed = (int)__rb2_conn_pend_flush(ep);
	head0 = rb2_rx_head(ep->rx);
	n = rb2_rx_peek_burst(ep->rx, m, ep->poll_max);
	if (unlikely(n < 0)) {
		__rb2_conn_ep_fail(ep, n);
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
				rb2_rx_params(ep->rx)->slot_size;
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
		__rb2_conn_disarm(ep);
	if ((ep->n_owed | ep->n_refusals | ep->n_refdone_owed) != 0)
		__rb2_conn_send_owed(ep);
	ret = rb2_tx_flush(ep->tx);
	/* Busy peers never sleep: this is one load and a branch. */
	if (unlikely(ep->peer_sleeps))
		__rb2_conn_ring_if_due(ep);
	/* An idle sender learns of a dead peer here, within a millisecond
	 * of the transport knowing. */
	if (ret == 0 && n == 0 && filed == 0 && (flags & POLL_CHECK_PEER))
		ret = rb2_tx_check(ep->tx);
	if (unlikely(ret < 0)) {
		__rb2_conn_ep_fail(ep, ret);
		return ret;
	}
	return unlikely(ep->err != 0) ? ep->err : taken + filed;
}

int
rb2_conn_ep_poll(struct rb2_conn_ep *ep)
{
	return __rb2_conn_progress(ep, POLL_CHECK_PEER);
}

int
rb2_conn_ep_ready(struct rb2_conn_ep *ep, int *cds, unsigned int n)
{
	unsigned int k = 0;

	if (ep->n_ready == 0)
		__rb2_conn_progress(ep, POLL_CHECK_PEER | POLL_LAZY);
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
		__rb2_conn_ep_fail(ep, ret);
	else if (unlikely(ep->peer_sleeps))
		__rb2_conn_ring_if_due(ep);
	return ret;
}
