/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_CONN_CORE_H
#define RB2_CONN_CORE_H

/**
 * @file
 * Connections: a connection's state and the endpoint,
 * for the inline fast paths of rb2_conn.h.
 *
 * @internal Included by rb2_conn.h; do not include directly.
 *
 * The wire format (frame layouts, their encoding and parsing) is in
 * rb2_conn_wire.h.
 */

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/queue.h>

#include <rte_common.h>

#include <rb2_chan.h>

#include "rb2_conn_wire.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Longest endpoint name. */
#define RB2_CONN_EP_NAMESIZE 32
/** Most connections an endpoint can hold (descriptors carry a 16-bit index). */
#define RB2_CONN_MAX 65535
#define RB2_CONN_TEL_PAGE 32      /* connections per telemetry reply */

/** Endpoint configuration. */
struct rb2_conn_ep_params {
	/** Connections the endpoint holds at once (default 4096, at most
	 *  RB2_CONN_MAX). One more connect is refused locally (-EMFILE) or,
	 *  from the peer, with a reason that says so. */
	uint32_t max_conns;
	/** Receive buffer of each connection, in bytes: what a sender may
	 *  have unconsumed (default 64 KiB; a power of two from 4 KiB to
	 *  1 GiB). Each message costs 8 bytes plus its length rounded up
	 *  to 8. */
	uint32_t window;
	/** Unaccepted connections a listening port holds (default 128). */
	uint32_t backlog;
	/** Largest message (0: the most that the channel and the window
	 *  allow; rb2_conn_max_msg() says what that is). */
	uint32_t max_msg;
	/** The peer is a host service (rb2-raasd), not the application at
	 *  the other end: listens are announced to it, and connects name a
	 *  host (rb2_conn_connect_host()). */
	uint32_t service;
};

struct rb2_conn_ep;
/** A relay's frame handler (rb2_conn_ep_set_relay()): 0 (taken), or
 *  -EAGAIN (not now: the frame, and those after it, stay in the ring). */
typedef int (*rb2_conn_relay_fn)(void *arg, struct rb2_conn_ep *ep, uint8_t *frame,
				 uint32_t len);


/* The kind of a record in a receive buffer (its header's second word). */
#define RB2_CONN_REC_DATA 0u
#define RB2_CONN_REC_REF 1u
#define RB2_CONN_LISTEN_MAX 64u

/*
 * A reservation of up to this many bytes that starts where the ring was
 * last published is handed out in the endpoint's own lines (ep->stage) and
 * copied into the ring at the commit, in one burst. That slot is the one a
 * receiver that has drained the ring prefetches on every empty look, up to
 * RB2_IDLE_LINES_MAX lines of it: filled in place while the caller works
 * between its stores (rb2-kv's server looks the value up after reserving),
 * its lines are taken back between the stores, and each store waits for
 * its line again. rb2-kv's server then took 320-370 ns to drain its
 * answer's stores after the commit, against 170-180 ns built aside
 * (doc/eval/conn.md). The later messages of a burst are in slots no
 * receiver prefetches, and are not copied.
 */
#define RB2_CONN_STAGE_MAX (RB2_IDLE_LINES_MAX * RTE_CACHE_LINE_SIZE)

/* Control frames a connection owes the peer (sent by the poll). */
enum {
	RB2_CONN_OWE_SYN = 1 << 0,
	RB2_CONN_OWE_SYNACK = 1 << 1,
	RB2_CONN_OWE_CREDIT = 1 << 2,
	RB2_CONN_OWE_WANT = 1 << 3,
	RB2_CONN_OWE_FIN = 1 << 4,
	RB2_CONN_OWE_RST = 1 << 5,
};

enum rb2_conn_state {
	RB2_CONN_ST_FREE = 0,
	RB2_CONN_ST_SYN_SENT,   /* connect() sent (or owes) the SYN */
	RB2_CONN_ST_BACKLOG,    /* the peer's connect, not yet accepted here */
	RB2_CONN_ST_OPEN,       /* accepted (by either side) */
	RB2_CONN_ST_FAILED,     /* refused, or reset: err says which */
};

struct rb2_conn_slot {
	uint32_t cd;              /* current descriptor of this slot */
	uint32_t peer_cd;         /* the peer's, put in every frame's header */
	uint8_t state;            /* enum rb2_conn_state */
	uint8_t owed;             /* RB2_CONN_OWE_* */
	uint8_t in_owed_list;
	uint8_t in_ready;         /* queued in the endpoint's ready list */
	uint8_t wr_shut;          /* FIN owed or sent: no more sends */
	uint8_t rd_eof;           /* the peer's FIN arrived */
	uint8_t app_closed;       /* rb2_conn_close(): descriptor invalid */
	uint8_t want_sent;        /* a WANT is out, no credit since */
	uint8_t peer_wants;       /* the peer waits for credit */
	uint16_t port;
	uint32_t host;            /* connect_host()'s, for the SYN */
	uint8_t rst_reason;
	uint8_t rd_clean;         /* the FIN came before any error: reads end with 0 */
	int err;                  /* 0, or the negative errno it failed with */
	/* Sending. */
	uint32_t peer_window, peer_max;
	uint32_t max_send;        /* min(our max_msg, the peer's) */
	uint64_t sent, acked;     /* footprint bytes */
	/* Receiving: records [u32 len][u32 kind][payload, padded to 8] at
	 * logical positions; buf holds window bytes plus one record of
	 * slack, so that a record is contiguous even across the end. A
	 * record at pos sits at (pos - origin) mod window: origin moves to
	 * wpos whenever the buffer is empty. The buffer is the endpoint's
	 * (ep->bufs), lent to the connection only while it holds records
	 * (rpos != wpos): NULL when empty. So a reader that keeps up writes
	 * and reads the same few warm buffers whatever the number of
	 * connections, and an idle connection holds no memory. */
	uint8_t *buf;
	uint64_t origin;
	uint64_t wpos;            /* next record's position */
	uint64_t vpos;            /* next record to hand out as a view */
	uint64_t rpos;            /* oldest unreleased record */
	uint64_t credited;        /* rpos as last sent in a credit */
	uint64_t rx_msgs, rx_bytes;
	char why[96];
};

struct rb2_conn_listener {
	uint16_t port;
	uint8_t used;
	uint32_t backlog;         /* capacity */
	uint32_t head, count;
	uint32_t *q;              /* descriptors waiting for accept() */
};

/* The endpoint's counters (struct rb2_conn_ep_stats has the same fields),
 * written by its thread, read by telemetry from its own. */
#define RB2_CONN_EP_COUNTERS(X) \
	X(conns_open) X(conns_opened) X(refused_sent) X(refused_recv) \
	X(tx_msgs) X(tx_bytes) X(rx_msgs) X(rx_bytes) \
	X(ctrl_frames_tx) X(ctrl_frames_rx) X(credit_waits) X(ring_full) \
	X(discarded_msgs) X(discarded_bytes) X(unknown_conn) X(bad_frames) \
	X(window_violations) X(sleeps) X(doorbells_rung) \
	X(ref_tx_msgs) X(ref_tx_bytes) X(ref_rx_msgs) X(ref_rx_bytes) X(ref_reads) \
	X(ref_waits) X(ref_discarded) X(rx_buffers)

#define RB2_CONN_COUNTER_FIELD(f) _Atomic uint64_t f;
struct rb2_conn_ep_counters {
	RB2_CONN_EP_COUNTERS(RB2_CONN_COUNTER_FIELD)
};

struct rb2_conn_refusal {
	uint32_t peer_cd;
	uint16_t reason;
};

struct rb2_conn_ep {
	char name[RB2_CONN_EP_NAMESIZE];
	struct rb2_tx *tx;
	struct rb2_rx *rx;
	struct rb2_conn_ep_params p;
	uint32_t win_mask;
	int err;
	int resv_cd;              /* descriptor holding the ring's reservation */
	uint32_t resv_len;
	uint64_t resv_tail;       /* the ring's tail when it was made */
	uint32_t resv_hl;         /* its header's length: 0 (a marked run frame) or 8 */
	uint8_t *resv_payload;    /* its room, behind the header's (stored at the commit) */
	uint8_t resv_staged;      /* handed out in stage[], copied at the commit */
	/* Runs (the top of this file): the last frame put on the ring was
	 * DATA for the peer's tx_run_cid (RB2_CONN_CID_NONE: another kind),
	 * so the next DATA frame for it goes marked, without a header, if it
	 * is at most tx_mark_max bytes (one slot; 0 in packed slots). Every
	 * frame that is not DATA resets it; a data frame stores it only when
	 * it changes. */
	uint32_t tx_run_cid;
	uint32_t tx_mark_max;
	/* The connection of the last DATA frame taken off the ring, in ring
	 * order (RB2_CONN_CID_NONE after any other frame): a marked frame's. */
	uint32_t rx_run_cid;
	struct rb2_conn_slot *conns;       /* max_conns slots */
	uint32_t *free_idx;       /* stack of free slot indexes */
	uint32_t n_free;
	uint32_t *owed;           /* slot indexes owing control frames */
	uint32_t n_owed;
	uint32_t *ready;          /* FIFO of slot indexes with news */
	uint32_t ready_mask;      /* its size (a power of two) - 1 */
	uint32_t ready_head, n_ready;
	/* Receive buffers not lent to a connection: a stack, so the one
	 * taken next is the one given back last, still in the cache. At
	 * most one per connection exists (ctr.rx_buffers counts them). */
	uint8_t **bufs;           /* max_conns entries */
	uint32_t n_bufs;
	uint32_t poll_max;        /* frames a poll takes (ep_progress()) */
	/* A run left in the ring: a poll for recv() or rb2_conn_ep_ready()
	 * that finds a run of data frames for one connection at the head of
	 * its burst marks it ready and leaves the run where it is, so that
	 * recv() copies each frame straight out of the ring (one copy, not
	 * two). pend[pend_i..pend_n) are not yet handled; those before
	 * pend_i are, and are released together when the last one is. Any
	 * other poll first files what is left into receive buffers
	 * (__rb2_conn_pend_flush() in rb2_conn_in.c, which says when else it does). */
	struct rb2_msg pend[32];
	uint32_t pend_i, pend_n;
	uint32_t pend_cid;        /* the run's connection (its frames' cid) */
	uint32_t pend_skips;      /* recv()s of others that passed the run */
	/* A zero-copy receive met a run left in the ring: this endpoint's
	 * reader views its receive buffers, which a run must be filed into
	 * first. From then on the poll files every run at once, rather than
	 * leave it for the view's own poll (two polls, two parses a run). */
	uint8_t zc_reader;
	struct rb2_conn_refusal *refusals; /* REFUSE frames owed */
	uint32_t n_refusals, cap_refusals;
	struct rb2_conn_refs *refs;        /* lending (rb2_conn_ref.h), NULL until used */
	uint32_t n_refdone_owed;           /* REFDONE entries owed to the peer */
	_Atomic uint64_t ref_wire_bytes_tx; /* lent messages' descriptors on the ring */
	uint8_t *relay_buf;       /* a marked frame given its header, for the relay */
	struct rb2_conn_listener listeners[RB2_CONN_LISTEN_MAX];
	uint64_t unknown_logged;  /* log unknown ids at powers of two */
	/* Blocking mode (rb2_conn_ep_wait()). */
	int efd;                  /* our doorbell (eventfd), -1 until needed */
	uint8_t armed;            /* we told the peer we sleep */
	rb2_conn_relay_fn relay;  /* frames go there (a service's link) */
	void *relay_arg;
	uint8_t peer_sleeps;      /* the peer told us it sleeps */
	uint8_t bye_sent;         /* we said goodbye (rb2_conn_ep_destroy()) */
	uint64_t peer_head;       /* ... having read this far */
	uint32_t peer_pid;
	int32_t peer_efd_num;     /* its eventfd's number there */
	int peer_efd;             /* ours to write: the same, or a pidfd_getfd() copy */
	struct rb2_conn_ep_counters ctr;
	_Atomic uint64_t ctrl_bytes_tx; /* to tell data from control in the ring's counts */
	TAILQ_ENTRY(rb2_conn_ep) next;
	/* Telemetry's view of the connections (/rb2/conn/connections): the
	 * telemetry thread asks (sequence << 32 | first slot), the endpoint's
	 * own poll takes the snapshot and says which request it answered,
	 * so no connection field is read from another thread. */
	_Atomic uint64_t tel_asked;
	_Atomic uint32_t tel_taken;
	uint32_t tel_next;        /* the slot after the last one seen */
	uint32_t tel_n;
	struct rb2_conn_tel {
		uint32_t cd, peer_cd;
		uint8_t state;
		uint16_t port;
		uint32_t credit;          /* bytes the peer still takes */
		uint64_t tx_credit_used;  /* 8 B a message + its length rounded to 8 */
		uint64_t rx_msgs, rx_bytes;
		uint32_t buffered;        /* received, not yet read */
	} tel[RB2_CONN_TEL_PAGE];
	/* A staged reservation (RB2_CONN_STAGE_MAX). */
	uint8_t stage[RB2_CONN_STAGE_MAX] __rte_cache_aligned;
};

/* ---- helpers of the inline fast paths (rb2_conn.h) ---------------------- */

/** @internal Where the record at logical position @p pos of @p c is. */
static inline uint8_t *
__rb2_conn_rec(const struct rb2_conn_ep *ep, const struct rb2_conn_slot *c, uint64_t pos)
{
	return c->buf + ((pos - c->origin) & ep->win_mask);
}

/** @internal The slot a wire descriptor names, if open under it. */
static inline struct rb2_conn_slot *
__rb2_conn_slot_of(struct rb2_conn_ep *ep, uint32_t cid)
{
	uint32_t idx = cid & 0xffff;
	struct rb2_conn_slot *c;

	if (unlikely(idx >= ep->p.max_conns))
		return NULL;
	c = &ep->conns[idx];
	return likely(c->state != RB2_CONN_ST_FREE && c->cd == cid) ? c : NULL;
}

/** @internal The connection an application's descriptor names, or NULL. */
static inline struct rb2_conn_slot *
__rb2_conn_of(struct rb2_conn_ep *ep, int cd)
{
	struct rb2_conn_slot *c;

	if (unlikely(cd < 0))
		return NULL;
	c = __rb2_conn_slot_of(ep, (uint32_t)cd);
	if (unlikely(c == NULL || c->app_closed || c->state == RB2_CONN_ST_BACKLOG))
		return NULL;
	return c;
}

/** @internal Owe a credit and send it if the ring is free (out of line). */
void __rb2_conn_credit_due(struct rb2_conn_ep *ep, struct rb2_conn_slot *c);

/** @internal Consume @p fp bytes of @p c's buffer; credit back when due. */
static inline void
__rb2_conn_consumed(struct rb2_conn_ep *ep, struct rb2_conn_slot *c, uint32_t fp)
{
	uint64_t unreturned;

	c->rpos += fp;
	if (c->vpos < c->rpos)
		c->vpos = c->rpos;
	if (c->rpos == c->wpos && c->buf != NULL) {
		/* Drained, no view held: the buffer goes back to the
		 * endpoint, warm, for whichever connection receives next. */
		ep->bufs[ep->n_bufs++] = c->buf;
		c->buf = NULL;
	}
	/* Credit back in quarters of the window, or at once for a sender
	 * that said it waits. */
	unreturned = c->rpos - c->credited;
	if (unlikely(unreturned >= (ep->p.window >> 2) ||
		     (c->peer_wants && unreturned != 0)))
		__rb2_conn_credit_due(ep, c);
}

/** @internal Release the run left in the ring, every frame of it taken. */
void __rb2_conn_pend_done(struct rb2_conn_ep *ep);

/** @internal Add to a counter that only the endpoint's thread writes. */
static inline void
__rb2_conn_ctr_add(_Atomic uint64_t *ctr, uint64_t v)
{
	atomic_store_explicit(ctr, atomic_load_explicit(ctr, memory_order_relaxed) + v,
			      memory_order_relaxed);
}

/**
 * @internal The payload of a DATA frame @p m as it came off the ring, and
 * its length in @p len: after the header, or from the first byte of a
 * marked frame, which has none.
 */
static __rte_always_inline const uint8_t *
__rb2_conn_payload(const struct rb2_msg *m, uint32_t *len)
{
	uint32_t hl = rb2_msg_marked(m) ? 0 : RB2_CONN_HDR_LEN;

	*len = rb2_msg_len(m) - hl;
	return (const uint8_t *)m->data + hl;
}

/**
 * @internal May recv() take the frame with @p len bytes of payload that a
 * poll left in the ring (ep->pend[ep->pend_i], of connection ep->pend_cid)
 * as @p c's next message? @p c has nothing buffered; a frame not taken is
 * filed.
 */
static __rte_always_inline int
__rb2_conn_pend_mine(const struct rb2_conn_ep *ep, const struct rb2_conn_slot *c, uint32_t len)
{
	return ep->pend_cid == c->cd && c->state == RB2_CONN_ST_OPEN && c->err == 0 &&
	       len <= ep->p.max_msg && rb2_conn_footprint(len) <= ep->p.window;
}

/**
 * @internal The frame at ep->pend[ep->pend_i], @p c's, was copied out:
 * count it as filed and read at once (the same positions, so the same
 * credits), and release the run with its last frame.
 */
static __rte_always_inline void
__rb2_conn_pend_taken(struct rb2_conn_ep *ep, struct rb2_conn_slot *c, uint32_t len)
{
	uint32_t fp = rb2_conn_footprint(len);

	if (unlikely(++ep->pend_i == ep->pend_n))
		__rb2_conn_pend_done(ep);
	c->wpos += fp;
	c->rx_msgs++;
	c->rx_bytes += len;
	__rb2_conn_ctr_add(&ep->ctr.rx_msgs, 1);
	__rb2_conn_ctr_add(&ep->ctr.rx_bytes, len);
	__rb2_conn_consumed(ep, c, fp);
}

#ifdef __cplusplus
}
#endif

#endif /* RB2_CONN_CORE_H */
