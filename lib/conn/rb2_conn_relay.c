/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * A host service's relay core (rb2_conn_relay.h): RaaS's model. Each link
 * is one endpoint, to an application of this host (shm) or to a peer
 * service (verbs); a connect names a host and a port; the relay finds the
 * application listening there (or the peer service of that host, which
 * does), gives the connection a relay id on each side (the vQPN each end
 * puts in its frames), and from then on moves frames between the two links,
 * rewriting only the id in the header (rb2_conn_wire.h). Credits are end to
 * end. A frame for a destination whose ring is full waits in that
 * destination's queue (bounded; beyond it, its source waits), so that one
 * application that stops polling holds up only the connections to it.
 * Lent buffers (rb2_conn_ref.h) pass through it as loans.
 */

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_errno.h>
#include <rte_malloc.h>

#include <rb2_bulk.h>
#include <rb2_mr_cache.h>

#include "rb2_conn_relay.h"
#include "rb2_conn_service.h"
#include "rb2_conn_wire.h"

#define RELAY_SAY(R, fmt, ...) fprintf((R)->p.out, "%s: " fmt, (R)->p.name, ## __VA_ARGS__)
#define RELAY_ERR(R, fmt, ...) fprintf((R)->p.err, "%s: " fmt, (R)->p.name, ## __VA_ARGS__)

#define MAX_LISTENS 64

/*
 * Frames waiting for room in one destination's ring, in order: so that a
 * destination that stops polling holds up only its own connections, not
 * the sources that also talk to others. Records [u32 len][frame] padded to
 * 8 bytes; one that does not fit before the end starts again at 0 behind a
 * QREC_WRAP. Allocated when first needed, bounded by queue_bytes: beyond
 * it the source is held, as without a queue.
 */
struct frame_queue {
	uint8_t *buf;
	uint32_t cap, head, tail;       /* byte offsets; head == tail: empty */
	uint32_t bytes;                 /* queued, records with their headers */
	uint64_t frames;                /* queued now (atomic, for telemetry) */
	uint64_t peak_bytes;            /* the most at once (atomic, for telemetry) */
	int no_memory;                  /* its allocation failed (said once) */
};
#define QREC_WRAP UINT32_MAX

/* Entries (id, status) owed to a link: REFDONEs to a lender, READDONEs
 * to a reader. Sent as frames of up to RB2_CONN_REFDONES_PER_FRAME, as
 * the link's ring has room (owed_flush()). */
struct owed {
	struct rb2_conn_refdone *e;
	uint32_t n, cap;
};

struct link {
	struct rb2_conn_relay *R;
	char name[RB2_CONN_RELAY_NAMESIZE];
	uint32_t pid;
	uint32_t host;                  /* a peer service's host id; 0: an application */
	struct rb2_conn_ep *ep;
	uint16_t listens[MAX_LISTENS];
	unsigned int nlistens;
	uint64_t conns;                 /* connections through it now (atomic) */
	/* Frames and bytes from it and to it (written by the loop alone,
	 * read by telemetry: relaxed atomics). */
	uint64_t frames_in, bytes_in, frames_out, bytes_out;
	struct frame_queue q;           /* frames for it that its ring had no room for */
	struct owed refdone, readdone;  /* answers owed to it about lent buffers */
	/* A peer's: registrations of applications' buffers for its READs,
	 * and of applications' buffers our READs from it land in. */
	struct rb2_mr_cache *tx_cache, *rx_cache;
	uint8_t tx_tried, rx_tried;
};

/*
 * A buffer lent through the service (RaaS's registered sends, §IV-C). Its
 * lender is an application here, whose buffer is in the process group's
 * shared memory and so at the same address here, or a peer service, which
 * registered it there. Its borrower is the application here that receives
 * it, or the peer service on the way to it. The REF frame passed on names
 * the loan by our id (gen << 16 | index); the lender's id for it is kept,
 * to answer the lender: every loan ends with exactly one REFDONE to it.
 *
 * An application never sees a registration: the REF it receives names
 * only the length (one segment, no key: the same size as the lender's, so
 * that both ends count the same credit), and it asks us to READ (READREQ)
 * into its shared memory. A lender here and a reader here: one copy, by us,
 * from buffer to buffer. A lender across the wire: one RDMA READ, from its
 * application's memory straight into ours (zero copy).
 */
struct loan {
	struct link *lender, *borrower;   /* NULL once gone */
	uint32_t lender_id;
	uint16_t gen;
	uint8_t used, reading;
	uint32_t reader_id;               /* the READDONE's id (ours, as the reader has it) */
	struct rb2_bulk_ref ref;          /* where the payload is, as we READ or copy it */
	unsigned int nheld;               /* segments registered here for a peer */
	struct rb2_mr_seg held[RB2_BULK_MAX_SEGS];
	struct rb2_bulk_read rd;          /* our READ for the reader */
};

/* A connection through the service: side 0 connected, side 1 accepted.
 * Its id on side s, the vQPN that side's application addresses it by, is
 * gen << 16 | idx << 1 | s. */
struct relay {
	struct link *l[2];
	uint32_t cd[2];                 /* each application's own descriptor */
	uint16_t gen;
	uint8_t used, fin[2];
};

/* The relay: written by the polling thread alone; the counters that
 * telemetry reads are relaxed atomics, the link array is under lock. */
struct rb2_conn_relay {
	struct rb2_conn_relay_params p;
	struct link *links[RB2_CONN_RELAY_MAX_LINKS];
	unsigned int nlinks;
	struct relay *relays;
	uint32_t *free_idx, nfree;
	uint64_t relayed, unknown, refused, resets, undeliverable;
	uint64_t held;                  /* times a source waited: a queue was full */
	uint64_t queued_all;            /* frames queued, links gone included */
	pthread_mutex_t lock;           /* the link array, against telemetry */
	struct loan *loans;
	uint32_t *loan_free, nloan_free;
	uint32_t nreading;              /* loans with a READ of ours in flight */
	uint64_t lent, lent_bytes;      /* loans made (atomic, for telemetry) */
	uint64_t copied_here, copied_bytes; /* READs served by one copy here */
	uint64_t reads, read_bytes;     /* READs from peers' lenders */
	uint64_t loans_failed;          /* lenders answered other than 0 */
	uint64_t bad_lends;             /* malformed REF, READREQ, REFDONE frames */
	uint32_t *reading;              /* the loans of those READs (nreading) */
};

static inline uint32_t
relay_id(struct rb2_conn_relay *R, uint32_t idx, int side)
{
	return (uint32_t)R->relays[idx].gen << 16 | idx << 1 | (uint32_t)side;
}

/* The relay and side an id names, or NULL. */
static struct relay *
relay_of(struct rb2_conn_relay *R, uint32_t id, int *side)
{
	uint32_t idx = (id & 0xffff) >> 1;
	struct relay *r;

	if (idx >= R->p.max_relays)
		return NULL;
	r = &R->relays[idx];
	*side = (int)(id & 1);
	return r->used && r->gen == (id >> 16) ? r : NULL;
}

static void
relay_free(struct rb2_conn_relay *R, struct relay *r)
{
	for (int side = 0; side < 2; side++)
		if (r->l[side] != NULL)
			__atomic_fetch_sub(&r->l[side]->conns, 1, __ATOMIC_RELAXED);
	r->used = 0;
	R->free_idx[R->nfree++] = (uint32_t)(r - R->relays);
}

static inline uint32_t
qrec_size(uint32_t len)
{
	return (uint32_t)RTE_ALIGN_CEIL(sizeof(uint32_t) + len, 8);
}

/* Keep a copy of @p f behind what @p l's queue holds. @return 0, or
 * -EAGAIN (the queue is full, or cannot be had: the source waits). */
static int
queue_put(struct rb2_conn_relay *R, struct link *l, const void *f, uint32_t len)
{
	struct frame_queue *q = &l->q;
	uint32_t need = qrec_size(len), at = q->tail;

	if (q->buf == NULL) {
		if (R->p.queue_bytes == 0 || q->no_memory)
			goto full;              /* --queue-kb 0: no queues */
		q->buf = rte_malloc("rb2_raasd_queue", R->p.queue_bytes, 8);
		if (q->buf == NULL) {
			q->no_memory = 1;
			RELAY_ERR(R, "no memory for a %u KiB queue for %s: its sources "
				"wait for its ring instead (give the service more memory, -m, or a "
				"smaller --queue-kb)\n", R->p.queue_bytes / 1024, l->name);
			goto full;
		}
		q->cap = R->p.queue_bytes;
		q->head = q->tail = q->bytes = 0;
	}
	/* One more record, and the skipped end if it has to wrap; the
	 * tail never catches up with the head. */
	if (at + need > q->cap) {
		if (q->bytes + (q->cap - at) + need >= q->cap)
			goto full;
		if (q->cap - at >= sizeof(uint32_t))
			*(uint32_t *)(q->buf + at) = QREC_WRAP;
		q->bytes += q->cap - at;
		at = 0;
	}
	if (q->bytes + need >= q->cap)
		goto full;
	*(uint32_t *)(q->buf + at) = len;
	memcpy(q->buf + at + sizeof(uint32_t), f, len);
	q->tail = at + need;
	q->bytes += need;
	R->queued_all++;
	__atomic_store_n(&q->frames, q->frames + 1, __ATOMIC_RELAXED);
	if (q->bytes > q->peak_bytes)
		__atomic_store_n(&q->peak_bytes, q->bytes, __ATOMIC_RELAXED);
	return 0;
full:
	__atomic_fetch_add(&R->held, 1, __ATOMIC_RELAXED);
	return -EAGAIN;
}

/* One frame of @p len bytes more on a link's counters. */
static inline void
count(uint64_t *frames, uint64_t *bytes, uint32_t len)
{
	__atomic_store_n(frames, *frames + 1, __ATOMIC_RELAXED);
	__atomic_store_n(bytes, *bytes + len, __ATOMIC_RELAXED);
}

/*
 * Everything to link @p l goes through here: onto its ring when nothing is
 * waiting for it, else (or when its ring is full) behind what waits.
 * @return 0, -EAGAIN (not taken: the caller's source waits and offers it
 * again), or the link's error.
 */
static int
link_put(struct rb2_conn_relay *R, struct link *l, const void *f, uint32_t len)
{
	int ret = -EAGAIN;

	if (l->q.bytes == 0)
		ret = rb2_conn_ep_forward(l->ep, f, len);
	if (ret == -EAGAIN)
		ret = queue_put(R, l, f, len);
	if (ret == 0)
		count(&l->frames_out, &l->bytes_out, len);
	return ret;
}

/* Move what waits for @p l onto its ring, as far as there is room. A link
 * that failed drops it, counted (the next pass resets its connections). */
static void
link_drain(struct rb2_conn_relay *R, struct link *l)
{
	struct frame_queue *q = &l->q;

	while (q->bytes > 0) {
		uint32_t len = q->cap - q->head >= sizeof(uint32_t) ?
			*(uint32_t *)(q->buf + q->head) : QREC_WRAP;
		int ret;

		if (len == QREC_WRAP) {
			q->bytes -= q->cap - q->head;
			q->head = 0;
			continue;
		}
		ret = rb2_conn_ep_forward(l->ep, q->buf + q->head + sizeof(uint32_t), len);
		if (ret == -EAGAIN)
			return;
		if (ret < 0)
			__atomic_fetch_add(&R->undeliverable, 1, __ATOMIC_RELAXED);
		q->head += qrec_size(len);
		q->bytes -= qrec_size(len);
		__atomic_store_n(&q->frames, q->frames - 1, __ATOMIC_RELAXED);
	}
	q->head = q->tail = 0;
}

/* A link taken away: what still waited for it is counted undeliverable
 * (its connections were reset at their other ends). */
static void
link_free(struct rb2_conn_relay *R, struct link *l)
{
	if (l->q.frames > 0) {
		__atomic_fetch_add(&R->undeliverable, l->q.frames, __ATOMIC_RELAXED);
		RELAY_ERR(R, "%" PRIu64 " frame(s) queued for %s not delivered: it "
			"is gone\n", l->q.frames, l->name);
	}
	if (l->refdone.n + l->readdone.n > 0)
		RELAY_ERR(R, "%u answer(s) about lent buffers owed to %s not sent: it "
			"is gone\n", l->refdone.n + l->readdone.n, l->name);
	free(l->refdone.e);
	free(l->readdone.e);
	rte_free(l->q.buf);
	free(l);
}

/* Put a header-only control frame towards @p l. */
static int
send_ctrl(struct rb2_conn_relay *R, struct link *l, uint32_t cid, uint8_t type, uint16_t aux)
{
	uint8_t f[RB2_CONN_HDR_LEN];
	uint64_t h = (uint64_t)cid | (uint64_t)type << 32 | (uint64_t)aux << 48;

	memcpy(f, &h, sizeof(h));
	return link_put(R, l, f, sizeof(f));
}

/* ---- lent buffers (struct loan) ------------------------------------------ */

static void
owe(struct link *l, struct owed *o, uint32_t id, int status, const char *what)
{
	if (o->n == o->cap) {
		uint32_t cap = o->cap != 0 ? 2 * o->cap : 64;
		void *e = realloc(o->e, cap * sizeof(*o->e));

		if (e == NULL) {
			/* Lost: its lender's buffer stays lent, or its
			 * reader waits, until that link goes. */
			RELAY_ERR(l->R, "%s: out of memory for a %s about buffer %#x\n",
				l->name, what, id);
			return;
		}
		o->e = e;
		o->cap = cap;
	}
	o->e[o->n++] = (struct rb2_conn_refdone){ .id = id, .status = status };
}

/* Send what is owed to @p l, as far as its ring and queue take it. */
static void
owed_flush(struct rb2_conn_relay *R, struct link *l)
{
	struct owed *o[2] = { &l->refdone, &l->readdone };
	const uint8_t type[2] = { RB2_CONN_FR_REFDONE, RB2_CONN_FR_READDONE };

	for (int k = 0; k < 2; k++) {
		uint32_t sent = 0;

		while (sent < o[k]->n) {
			uint8_t f[RB2_CONN_HDR_LEN + RB2_CONN_REFDONES_PER_FRAME *
				  sizeof(struct rb2_conn_refdone)];
			uint32_t m = RTE_MIN(o[k]->n - sent, RB2_CONN_REFDONES_PER_FRAME);
			uint64_t h = (uint64_t)RB2_CONN_CID_NONE | (uint64_t)type[k] << 32 |
				(uint64_t)m << 48;

			memcpy(f, &h, sizeof(h));
			memcpy(f + RB2_CONN_HDR_LEN, o[k]->e + sent, m * sizeof(*o[k]->e));
			/* Taken, or the link failed: link_settle() then ends
			 * its loans. */
			if (link_put(R, l, f, RB2_CONN_HDR_LEN + m * sizeof(*o[k]->e)) == -EAGAIN)
				break;
			sent += m;
		}
		if (sent == 0)
			continue;               /* none owed, or no room: e may be NULL */
		memmove(o[k]->e, o[k]->e + sent, (o[k]->n - sent) * sizeof(*o[k]->e));
		o[k]->n -= sent;
	}
}

static inline uint32_t
loan_id(struct rb2_conn_relay *R, const struct loan *ln)
{
	return (uint32_t)ln->gen << 16 | (uint32_t)(ln - R->loans);
}

static struct loan *
loan_of(struct rb2_conn_relay *R, uint32_t id)
{
	struct loan *ln = (id & 0xffff) < R->p.max_loans ? &R->loans[id & 0xffff] : NULL;

	return ln != NULL && ln->used && ln->gen == id >> 16 ? ln : NULL;
}

static struct loan *
loan_new(struct rb2_conn_relay *R, struct link *lender, uint32_t lender_id, struct link *borrower)
{
	struct loan *ln;

	if (R->nloan_free == 0)
		return NULL;
	ln = &R->loans[R->loan_free[--R->nloan_free]];
	ln->gen = (uint16_t)(ln->gen % 0xffffu + 1);
	ln->used = 1;
	ln->reading = 0;
	ln->nheld = 0;
	ln->lender = lender;
	ln->lender_id = lender_id;
	ln->borrower = borrower;
	return ln;
}

/* Free @p ln without a word to its lender (its REF was not passed on:
 * the lender's frame is offered again). */
static void
loan_drop(struct rb2_conn_relay *R, struct loan *ln)
{
	if (ln->nheld != 0)
		rb2_mr_cache_put(ln->borrower->tx_cache, ln->held, ln->nheld);
	ln->used = 0;
	R->loan_free[R->nloan_free++] = (uint32_t)(ln - R->loans);
}

/* End @p ln: its lender, if still here, hears @p status. */
static void
loan_end(struct rb2_conn_relay *R, struct loan *ln, int status)
{
	if (ln->lender != NULL)
		owe(ln->lender, &ln->lender->refdone, ln->lender_id, status, "REFDONE");
	if (status != 0)
		__atomic_fetch_add(&R->loans_failed, 1, __ATOMIC_RELAXED);
	loan_drop(R, ln);
}

/* A peer link's registration cache: for its READs of our applications'
 * buffers (@p tx), or for our READs from it. NULL where its transport
 * cannot lend (said once). */
static struct rb2_mr_cache *
peer_cache(struct link *l, int tx)
{
	char name[RB2_MR_CACHE_NAMESIZE];

	if (tx && !l->tx_tried) {
		l->tx_tried = 1;
		snprintf(name, sizeof(name), "raasd-tx.%u", l->host);
		l->tx_cache = rb2_bulk_cache_create(l->ep->tx, NULL, name);
	} else if (!tx && !l->rx_tried) {
		l->rx_tried = 1;
		snprintf(name, sizeof(name), "raasd-rx.%u", l->host);
		l->rx_cache = rb2_bulk_cache_create(NULL, l->ep->rx, name);
	} else {
		return tx ? l->tx_cache : l->rx_cache;
	}
	if ((tx ? l->tx_cache : l->rx_cache) == NULL)
		RELAY_ERR(l->R, "the link to peer service %s cannot %s applications' memory (its transport, '%s'): connections that lend buffers over it are reset\n",
			l->name, tx ? "lend" : "READ",
			rb2_xport_name(tx ? rb2_tx_xport(l->ep->tx) : rb2_rx_xport(l->ep->rx)));
	return tx ? l->tx_cache : l->rx_cache;
}

static void
bad_lend(struct rb2_conn_relay *R, struct link *from, const char *what)
{
	uint64_t n = __atomic_add_fetch(&R->bad_lends, 1, __ATOMIC_RELAXED);

	if ((n & (n - 1)) == 0)                 /* at powers of two */
		RELAY_ERR(R, "%s: %s (%" PRIu64 " such frame(s) so far)\n",
			from->name, what, n);
}

static struct link *
listener(struct rb2_conn_relay *R, uint16_t port)
{
	for (unsigned int i = 0; i < R->nlinks; i++)
		for (unsigned int j = 0; j < R->links[i]->nlistens; j++)
			if (R->links[i]->listens[j] == port)
				return R->links[i];
	return NULL;
}

static struct link *
peer_of(struct rb2_conn_relay *R, uint32_t host)
{
	for (unsigned int i = 0; i < R->nlinks; i++)
		if (R->links[i]->host == host)
			return R->links[i];
	return NULL;
}

static int
syn_in(struct rb2_conn_relay *R, struct link *from, uint8_t *f, uint32_t len, uint16_t port)
{
	struct rb2_conn_hello h;
	struct link *to;
	struct relay *r;
	uint16_t why = 0;
	uint32_t idx;
	int ret;

	if (len != RB2_CONN_HDR_LEN + sizeof(h))
		return 0;                   /* the application's ep counts it */
	memcpy(&h, f + RB2_CONN_HDR_LEN, sizeof(h));
	/* Here (an application listening), or on to that host's service. */
	if (h.host == 0 || h.host == R->p.host_id) {
		to = listener(R, port);
		why = RB2_CONN_REFUSE_NO_LISTENER;
	} else {
		to = from->host == 0 ? peer_of(R, h.host) : NULL;
		why = RB2_CONN_REFUSE_NO_ROUTE;
	}
	if (to == NULL || R->nfree == 0) {
		ret = send_ctrl(R, from, h.src_cd, RB2_CONN_FR_REFUSE,
				to == NULL ? why : RB2_CONN_REFUSE_TOO_MANY);
		__atomic_fetch_add(&R->refused, ret == 0, __ATOMIC_RELAXED);
		return ret;
	}
	idx = R->free_idx[R->nfree - 1];
	r = &R->relays[idx];
	r->gen = (uint16_t)(r->gen % 0x7fff + 1);
	/* The acceptor addresses the connection as side 1's id; the next
	 * hop's host is its own. */
	struct rb2_conn_hello fwd = h;

	fwd.src_cd = relay_id(R, idx, 1);
	fwd.host = 0;
	memcpy(f + RB2_CONN_HDR_LEN, &fwd, sizeof(fwd));
	ret = link_put(R, to, f, len);
	memcpy(f + RB2_CONN_HDR_LEN, &h, sizeof(h));   /* as it was, for a retry */
	if (ret == -EAGAIN)
		return ret;
	if (ret < 0) {
		/* The listener's link failed: the next pass takes it away. */
		ret = send_ctrl(R, from, h.src_cd, RB2_CONN_FR_REFUSE, RB2_CONN_REFUSE_NO_LISTENER);
		__atomic_fetch_add(&R->refused, ret == 0, __ATOMIC_RELAXED);
		return ret;
	}
	uint32_t theirs = h.src_cd;
	R->nfree--;
	r->used = 1;
	r->l[0] = from;
	r->l[1] = to;
	__atomic_fetch_add(&from->conns, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&to->conns, 1, __ATOMIC_RELAXED);
	r->cd[0] = theirs;
	r->cd[1] = UINT32_MAX;
	r->fin[0] = r->fin[1] = 0;
	return 0;
}

/* Credits name the relay id; each entry goes to its relay's other side,
 * as a credit frame of its own (credits are cumulative: a retry after a
 * partial forward repeats nothing harmful). */
static int
credit_in(struct rb2_conn_relay *R, struct link *from, uint8_t *f, uint32_t len, uint16_t n)
{
	struct rb2_conn_credit cr;

	if (len != RB2_CONN_HDR_LEN + (uint32_t)n * sizeof(cr))
		return 0;
	for (uint16_t i = 0; i < n; i++) {
		uint8_t out[RB2_CONN_HDR_LEN + sizeof(cr)];
		uint64_t hdr = (uint64_t)RB2_CONN_CID_NONE | (uint64_t)RB2_CONN_FR_CREDIT << 32 |
			(uint64_t)1 << 48;
		struct relay *r;
		int side, ret;

		memcpy(&cr, f + RB2_CONN_HDR_LEN + i * sizeof(cr), sizeof(cr));
		r = relay_of(R, cr.cid, &side);
		if (r == NULL || r->l[side] != from || r->cd[!side] == UINT32_MAX)
			continue;           /* after both closed: nothing to deliver */
		cr.cid = r->cd[!side];
		memcpy(out, &hdr, sizeof(hdr));
		memcpy(out + RB2_CONN_HDR_LEN, &cr, sizeof(cr));
		ret = link_put(R, r->l[!side], out, sizeof(out));
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* A lent buffer that cannot go on (see peer_cache()): the lender has it
 * back, and the connection is reset at both ends, with the reason. */
static int
lend_fail(struct rb2_conn_relay *R, struct link *from, struct relay *r, int side, uint32_t tag)
{
	owe(from, &from->refdone, tag, -ECONNABORTED, "REFDONE");
	__atomic_fetch_add(&R->loans_failed, 1, __ATOMIC_RELAXED);
	send_ctrl(R, from, r->cd[side], RB2_CONN_FR_RST, RB2_CONN_RST_LEND);
	if (r->l[!side] != NULL && r->cd[!side] != UINT32_MAX)
		send_ctrl(R, r->l[!side], r->cd[!side], RB2_CONN_FR_RST, RB2_CONN_RST_LEND);
	__atomic_fetch_add(&R->resets, 1, __ATOMIC_RELAXED);
	relay_free(R, r);
	return 0;
}

/*
 * A REF frame on relay @p r from side @p side: a buffer lent. Made a loan
 * and passed on: to a peer service with the buffer registered for its
 * READ; to an application with its length only (struct loan).
 * @return 0, or -EAGAIN (no loan, registration or room now: offered again).
 */
static int
lend_in(struct rb2_conn_relay *R, struct link *from, struct relay *r, int side, const uint8_t *f, uint32_t len)
{
	uint8_t out[RB2_CONN_HDR_LEN + RB2_BULK_REF_SIZE(RB2_BULK_MAX_SEGS)];
	struct link *to = r->l[!side];
	struct rb2_bulk_ref ref, fwd;
	struct loan *ln;
	uint64_t h;
	int ret;

	if (!rb2_bulk_ref_valid(f + RB2_CONN_HDR_LEN, len - RB2_CONN_HDR_LEN)) {
		/* No id to answer: the lender's connection waits for credit. */
		bad_lend(R, from, "dropped a REF frame that describes no buffer");
		return 0;
	}
	memcpy(&ref, f + RB2_CONN_HDR_LEN, len - RB2_CONN_HDR_LEN);
	if (from->host == 0 && (ref.nsegs != 1 || ref.segs[0].rkey != 0 ||
				!rb2_conn_service_shared((void *)(uintptr_t)ref.segs[0].addr,
							 ref.len))) {
		bad_lend(R, from, "a lent buffer outside the process group's shared memory: its connection is reset");
		return lend_fail(R, from, r, side, ref.tag);
	}
	if (to == NULL || r->cd[!side] == UINT32_MAX) {
		owe(from, &from->refdone, ref.tag, -ECONNABORTED, "REFDONE");
		return 0;
	}
	ln = loan_new(R, from, ref.tag, to);
	if (ln == NULL)
		return -EAGAIN;             /* every loan out (--max-loans): wait */
	ln->ref = ref;
	if (to->host != 0) {
		/* On to a peer service: registered here for its READ. */
		struct rb2_mr_cache *c = peer_cache(to, 1);
		int n = c == NULL ? -ENOTSUP :
			rb2_bulk_ref_make(c, (void *)(uintptr_t)ref.segs[0].addr, ref.len, &fwd,
					  ln->held);

		if (n == -EAGAIN) {
			loan_drop(R, ln);      /* every registration in use: wait */
			return -EAGAIN;
		}
		if (n < 0) {
			if (n != -ENOTSUP)
				RELAY_ERR(R, "cannot register a buffer of %s for %s: %s\n",
					from->name, to->name, strerror(-n));
			loan_drop(R, ln);
			return lend_fail(R, from, r, side, ref.tag);
		}
		ln->nheld = (unsigned int)n;
	} else {
		/* To an application: the length only, in the lender's size. */
		memset(&fwd, 0, sizeof(fwd));
		fwd.nsegs = 1;
		fwd.len = ref.len;
		fwd.segs[0].len = (uint32_t)ref.len;
	}
	fwd.tag = loan_id(R, ln);
	h = (uint64_t)r->cd[!side] | (uint64_t)RB2_CONN_FR_REF << 32;
	memcpy(out, &h, sizeof(h));
	memcpy(out + RB2_CONN_HDR_LEN, &fwd, RB2_BULK_REF_SIZE(fwd.nsegs));
	ret = link_put(R, to, out, RB2_CONN_HDR_LEN + RB2_BULK_REF_SIZE(fwd.nsegs));
	if (ret == -EAGAIN) {
		loan_drop(R, ln);
		return ret;
	}
	if (ret < 0) {
		/* Its link failed: the lender has its buffer back. */
		loan_end(R, ln, -ECONNRESET);
		__atomic_fetch_add(&R->undeliverable, 1, __ATOMIC_RELAXED);
		return 0;
	}
	__atomic_fetch_add(&R->lent, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&R->lent_bytes, ref.len, __ATOMIC_RELAXED);
	__atomic_fetch_add(&R->relayed, 1, __ATOMIC_RELAXED);
	return 0;
}

/* REFDONE entries from the borrower of each: those loans end. */
static int
refdone_in(struct rb2_conn_relay *R, struct link *from, const uint8_t *f, uint32_t len, uint16_t n)
{
	if (n == 0 || len != RB2_CONN_HDR_LEN + n * sizeof(struct rb2_conn_refdone)) {
		bad_lend(R, from, "a REFDONE frame whose count and length disagree");
		return 0;
	}
	for (uint16_t i = 0; i < n; i++) {
		struct rb2_conn_refdone d;
		struct loan *ln;

		memcpy(&d, f + RB2_CONN_HDR_LEN + i * sizeof(d), sizeof(d));
		ln = loan_of(R, d.id);
		if (ln == NULL || ln->borrower != from || ln->reading) {
			bad_lend(R, from, "a REFDONE for no buffer it borrowed");
			continue;
		}
		loan_end(R, ln, d.status == 0 || d.status == -ECONNRESET ? d.status : -ECONNABORTED);
	}
	return 0;
}

/* Our READ for @p ln is over with @p status: its reader hears it. */
static void
read_over(struct rb2_conn_relay *R, struct loan *ln, int status, unsigned int at)
{
	ln->reading = 0;
	R->reading[at] = R->reading[--R->nreading];
	if (status == 0) {
		__atomic_fetch_add(&R->reads, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&R->read_bytes, ln->ref.len, __ATOMIC_RELAXED);
	}
	if (ln->borrower != NULL)
		owe(ln->borrower, &ln->borrower->readdone, ln->reader_id, status, "READDONE");
}

/*
 * An application asks us to READ the buffer it borrowed into its own
 * (shared memory): copied once, here, from a lender here; READ from a
 * lender across the wire straight into it. @return 0, or -EAGAIN (no
 * registration now: asked again).
 */
static int
readreq_in(struct rb2_conn_relay *R, struct link *from, const uint8_t *f, uint32_t len)
{
	struct rb2_conn_readreq q;
	struct rb2_mr_cache *c;
	struct loan *ln;
	void *dst;
	int ret;

	if (from->host != 0 || len != RB2_CONN_HDR_LEN + sizeof(q)) {
		bad_lend(R, from, "a READREQ frame from a peer service, or of the wrong size");
		return 0;
	}
	memcpy(&q, f + RB2_CONN_HDR_LEN, sizeof(q));
	ln = loan_of(R, q.id);
	dst = (void *)(uintptr_t)q.dst;
	if (ln == NULL || ln->borrower != from || ln->reading) {
		bad_lend(R, from, "a READREQ for no buffer it borrowed");
		owe(from, &from->readdone, q.id, -EINVAL, "READDONE");
		return 0;
	}
	if (q.len != ln->ref.len || !rb2_conn_service_shared(dst, q.len)) {
		bad_lend(R, from, "a READREQ into memory outside the process group's shared memory, or of the wrong length");
		owe(from, &from->readdone, q.id, -EFAULT, "READDONE");
		return 0;
	}
	if (ln->lender == NULL) {
		owe(from, &from->readdone, q.id, -ECONNRESET, "READDONE");
		return 0;
	}
	if (ln->lender->host == 0) {
		/* Both here: one copy, from the lender's buffer to the reader's. */
		memcpy(dst, (const void *)(uintptr_t)ln->ref.segs[0].addr, ln->ref.len);
		__atomic_fetch_add(&R->copied_here, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&R->copied_bytes, ln->ref.len, __ATOMIC_RELAXED);
		owe(from, &from->readdone, q.id, 0, "READDONE");
		return 0;
	}
	c = peer_cache(ln->lender, 0);
	ret = c == NULL ? -ENOTSUP :
		rb2_bulk_read_start(ln->lender->ep->rx, c, &ln->ref, dst, q.len, &ln->rd);
	if (ret == -EAGAIN)
		return ret;
	if (ret < 0) {
		owe(from, &from->readdone, q.id, ret, "READDONE");
		return 0;
	}
	ln->reading = 1;
	ln->reader_id = q.id;
	R->reading[R->nreading++] = (uint32_t)(ln - R->loans);
	return 0;
}

/* Our READs that completed (each pass). */
static void
reads_poll(struct rb2_conn_relay *R)
{
	for (uint32_t i = 0; i < R->nreading; ) {
		struct loan *ln = &R->loans[R->reading[i]];
		int ret = rb2_bulk_read_poll(ln->lender->ep->rx, ln->lender->rx_cache, &ln->rd);

		if (ret == -EINPROGRESS) {
			i++;
			continue;
		}
		read_over(R, ln, ret, i);
	}
}

/*
 * Link @p l is going: settle every loan through it, before its channels
 * and caches go. A READ in flight lands in an application's memory: it is
 * waited for (a failed queue ends it at once). A lender gone leaves its
 * loans to their borrowers, who are answered when they ask; a borrower
 * gone ends its loans (the lender hears -ECONNABORTED, or -ECONNRESET for
 * a peer service).
 */
static void
link_settle(struct rb2_conn_relay *R, struct link *l)
{
	for (uint32_t i = 0; i < R->nreading; ) {
		struct loan *ln = &R->loans[R->reading[i]];
		int ret;

		if (ln->lender != l && ln->borrower != l) {
			i++;
			continue;
		}
		while ((ret = rb2_bulk_read_poll(ln->lender->ep->rx, ln->lender->rx_cache,
						 &ln->rd)) == -EINPROGRESS)
			;
		read_over(R, ln, ret, i);
	}
	for (uint32_t i = 0; i < R->p.max_loans; i++) {
		struct loan *ln = &R->loans[i];

		if (!ln->used)
			continue;
		if (ln->lender == l)
			ln->lender = NULL;
		if (ln->borrower == l)
			loan_end(R, ln, l->host != 0 ? -ECONNRESET : -ECONNABORTED);
	}
	if (l->tx_cache != NULL)
		rb2_mr_cache_destroy(l->tx_cache);
	if (l->rx_cache != NULL)
		rb2_mr_cache_destroy(l->rx_cache);
	l->tx_cache = l->rx_cache = NULL;
	l->tx_tried = l->rx_tried = 1;
}

/* A frame from link @p arg: relayed, answered, or counted and dropped.
 * @return 0, or -EAGAIN (not now: offered again). */
static int
frame_from(struct rb2_conn_relay *R, void *arg, uint8_t *f, uint32_t len)
{
	struct link *from = arg;
	struct rb2_conn_hello h;
	uint32_t cid, orig;
	struct relay *r;
	uint16_t aux;
	uint8_t type;
	int side, ret;

	struct rb2_conn_frame fr;

	/* Marked frames come with their header restored (rb2_conn_in.c's
	 * relay_headed()): every frame here has one. */
	rb2_conn_wire_parse(f, len, 0, RB2_CONN_CID_NONE, &fr);
	if (fr.type == 0)
		return 0;
	cid = fr.cid;
	type = fr.type;
	aux = fr.aux;
	switch (type) {
	case RB2_CONN_FR_LISTEN:
		if (from->nlistens < MAX_LISTENS && listener(R, aux) == NULL)
			from->listens[from->nlistens++] = aux;
		else
			RELAY_ERR(R, "%s: cannot listen on %u (taken, or %d ports)\n",
				from->name, aux, MAX_LISTENS);
		return 0;
	case RB2_CONN_FR_UNLISTEN:
		for (unsigned int j = 0; j < from->nlistens; j++)
			if (from->listens[j] == aux)
				from->listens[j] = from->listens[--from->nlistens];
		return 0;
	case RB2_CONN_FR_SYN:
		return syn_in(R, from, f, len, aux);
	case RB2_CONN_FR_CREDIT:
		return credit_in(R, from, f, len, aux);
	case RB2_CONN_FR_REFDONE:
		return refdone_in(R, from, f, len, aux);
	case RB2_CONN_FR_READREQ:
		return readreq_in(R, from, f, len);
	case RB2_CONN_FR_READDONE:
		bad_lend(R, from, "a READDONE frame, which only a service sends");
		return 0;
	default:
		break;
	}
	r = relay_of(R, cid, &side);
	if (r == NULL || r->l[side] != from) {
		__atomic_fetch_add(&R->unknown, 1, __ATOMIC_RELAXED);
		/* A lent buffer for no connection goes back to its lender. */
		if (type == RB2_CONN_FR_REF && len >= RB2_CONN_HDR_LEN + RB2_BULK_REF_SIZE(1)) {
			uint32_t tag;

			memcpy(&tag, f + RB2_CONN_HDR_LEN, sizeof(tag));
			owe(from, &from->refdone, tag, -ECONNABORTED, "REFDONE");
		}
		return 0;
	}
	if (type == RB2_CONN_FR_REF)
		return lend_in(R, from, r, side, f, len);
	if (r->l[!side] == NULL) {
		/* The connector died before this accept: reset it here. */
		if (type == RB2_CONN_FR_SYNACK && len == RB2_CONN_HDR_LEN + sizeof(h)) {
			memcpy(&h, f + RB2_CONN_HDR_LEN, sizeof(h));
			ret = send_ctrl(R, from, h.src_cd, RB2_CONN_FR_RST, RB2_CONN_RST_PEER_GONE);
			if (ret == -EAGAIN)
				return ret;
		}
		relay_free(R, r);
		return 0;
	}
	if (type == RB2_CONN_FR_SYNACK) {
		if (side != 1 || len != RB2_CONN_HDR_LEN + sizeof(h))
			return 0;
		memcpy(&h, f + RB2_CONN_HDR_LEN, sizeof(h));
		r->cd[1] = h.src_cd;
		h.src_cd = relay_id(R, (uint32_t)(r - R->relays), 0);
		memcpy(f + RB2_CONN_HDR_LEN, &h, sizeof(h));
	}
	/* The frame as it is, to the other side's descriptor. */
	orig = cid;
	rb2_conn_wire_set_cid(f, r->cd[!side]);
	ret = link_put(R, r->l[!side], f, len);
	rb2_conn_wire_set_cid(f, orig);
	if (ret == -EAGAIN) {
		if (type == RB2_CONN_FR_SYNACK)
			r->cd[1] = UINT32_MAX;
		return ret;
	}
	if (ret < 0) {
		/* Its link failed: the next pass resets this relay. */
		__atomic_fetch_add(&R->undeliverable, 1, __ATOMIC_RELAXED);
		return 0;
	}
	__atomic_fetch_add(&R->relayed, 1, __ATOMIC_RELAXED);
	if (type == RB2_CONN_FR_FIN)
		r->fin[side] = 1;
	if (type == RB2_CONN_FR_REFUSE || type == RB2_CONN_FR_RST || (r->fin[0] && r->fin[1]))
		relay_free(R, r);
	return 0;
}

/* Every frame from a link (rb2_conn_relay_fn), counted once taken. */
static int
relay_frame(void *arg, struct rb2_conn_ep *ep __rte_unused, uint8_t *f, uint32_t len)
{
	struct link *from = arg;
	int ret = frame_from(from->R, arg, f, len);

	if (ret != -EAGAIN)
		count(&from->frames_in, &from->bytes_in, len);
	return ret;
}

/* An application's or a peer service's link ended: @err is the endpoint's
 * error, -ESHUTDOWN when the other side closed it (an application exited,
 * a service stopped). Reset the other end of each of its connections.
 * @return 0, or -EAGAIN (some other end's ring is full: again on the next
 * pass). */
static int
link_gone(struct rb2_conn_relay *R, struct link *l, int err)
{
	uint16_t why = err == -ESHUTDOWN ? RB2_CONN_RST_PEER_LEFT : RB2_CONN_RST_PEER_GONE;
	unsigned int n = 0;

	for (uint32_t i = 0; i < R->p.max_relays; i++) {
		struct relay *r = &R->relays[i];
		int side, other;

		if (!r->used || (r->l[0] != l && r->l[1] != l))
			continue;
		side = r->l[0] == l ? 0 : 1;
		other = !side;
		if (r->l[other] != NULL && r->l[other] != l && r->cd[other] == UINT32_MAX) {
			/* Its accept is still to come: answered with a reset. */
			r->l[side] = NULL;
			n++;
			continue;
		}
		if (r->l[other] != NULL && r->l[other] != l &&
		    send_ctrl(R, r->l[other], r->cd[other], RB2_CONN_FR_RST, why) == -EAGAIN)
			return -EAGAIN;
		relay_free(R, r);
		n++;
		__atomic_fetch_add(&R->resets, 1, __ATOMIC_RELAXED);
	}
	if (l->host != 0)
		RELAY_SAY(R, "peer service %s %s: %u connection(s) reset at this end\n",
		       l->name, err == -ESHUTDOWN ? "stopped" : "failed (its link is down)", n);
	else
		RELAY_SAY(R, "application %s (pid %u) %s: %u connection(s) reset at the "
		       "other end\n", l->name, l->pid,
		       err == -ESHUTDOWN ? "left" : "is gone (it exited without closing)", n);
	fflush(R->p.out);
	return 0;
}

void
rb2_conn_relay_params_init(struct rb2_conn_relay_params *p)
{
	memset(p, 0, sizeof(*p));
	p->name = "rb2-relay";
	p->out = stdout;
	p->err = stderr;
	p->max_relays = 16384;
	p->max_loans = 4096;
	p->queue_bytes = 4096 * 1024;
}

struct rb2_conn_relay *
rb2_conn_relay_create(const struct rb2_conn_relay_params *p)
{
	struct rb2_conn_relay *R;

	if (p == NULL || p->max_relays == 0 || p->max_relays > (1u << 15) ||
	    p->max_loans == 0 || p->max_loans > (1u << 16) ||
	    (p->queue_bytes != 0 && p->queue_bytes < 256 * 1024)) {
		rte_errno = EINVAL;
		return NULL;
	}
	R = calloc(1, sizeof(*R));
	if (R == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	R->p = *p;
	if (R->p.out == NULL)
		R->p.out = stdout;
	if (R->p.err == NULL)
		R->p.err = stderr;
	if (R->p.name == NULL)
		R->p.name = "rb2-relay";
	pthread_mutex_init(&R->lock, NULL);
	R->relays = calloc(R->p.max_relays, sizeof(*R->relays));
	R->free_idx = calloc(R->p.max_relays, sizeof(*R->free_idx));
	R->loans = calloc(R->p.max_loans, sizeof(*R->loans));
	R->loan_free = calloc(R->p.max_loans, sizeof(*R->loan_free));
	R->reading = calloc(R->p.max_loans, sizeof(*R->reading));
	if (R->relays == NULL || R->free_idx == NULL || R->loans == NULL ||
	    R->loan_free == NULL || R->reading == NULL) {
		rb2_conn_relay_destroy(R);
		rte_errno = ENOMEM;
		return NULL;
	}
	for (uint32_t i = 0; i < R->p.max_relays; i++)
		R->free_idx[i] = R->p.max_relays - 1 - i;
	R->nfree = R->p.max_relays;
	for (uint32_t i = 0; i < R->p.max_loans; i++)
		R->loan_free[i] = R->p.max_loans - 1 - i;
	R->nloan_free = R->p.max_loans;
	return R;
}

int
rb2_conn_relay_add(struct rb2_conn_relay *R, struct rb2_conn_ep *ep, const char *name,
		   uint32_t pid, uint32_t host)
{
	struct link *l;

	if (R->nlinks == RB2_CONN_RELAY_MAX_LINKS)
		return -ENOSPC;
	l = calloc(1, sizeof(*l));
	if (l == NULL)
		return -ENOMEM;
	l->R = R;
	l->ep = ep;
	l->pid = pid;
	l->host = host;
	snprintf(l->name, sizeof(l->name), "%s", name);
	rb2_conn_ep_set_relay(ep, relay_frame, l);
	pthread_mutex_lock(&R->lock);
	R->links[R->nlinks++] = l;
	pthread_mutex_unlock(&R->lock);
	return 0;
}

void
rb2_conn_relay_poll(struct rb2_conn_relay *R)
{
	/* What waits for a destination goes before anything new. */
	for (unsigned int i = 0; i < R->nlinks; i++)
		link_drain(R, R->links[i]);
	/* Each link's frames, relayed as they come. */
	for (unsigned int i = 0; i < R->nlinks; i++) {
		struct link *l = R->links[i];
		int err = rb2_conn_ep_poll(l->ep);

		if (err >= 0 || link_gone(R, l, err) < 0)
			continue;
		link_settle(R, l);
		rb2_conn_ep_destroy(l->ep);
		pthread_mutex_lock(&R->lock);
		R->links[i--] = R->links[--R->nlinks];
		pthread_mutex_unlock(&R->lock);
		link_free(R, l);
	}
	/* Our READs for applications; then the answers about lent buffers,
	 * and what was relayed onto links polled before it, out now. */
	if (R->nreading > 0)
		reads_poll(R);
	for (unsigned int i = 0; i < R->nlinks; i++) {
		if (R->links[i]->refdone.n + R->links[i]->readdone.n > 0)
			owed_flush(R, R->links[i]);
		rb2_conn_flush(R->links[i]->ep);
	}
}

void
rb2_conn_relay_destroy(struct rb2_conn_relay *R)
{
	if (R == NULL)
		return;
	if (R->relays != NULL) {
		RELAY_SAY(R, "stopping: %u link(s) (applications and peers), %" PRIu64
			  " frames relayed, %" PRIu64 " of them queued for a full destination, "
			  "a source held %" PRIu64 " time(s)\n", R->nlinks, R->relayed,
			  R->queued_all, R->held);
		RELAY_SAY(R, "lent buffers: %" PRIu64 " lent (%" PRIu64 " bytes); %" PRIu64
			  " copied here, lender to reader; %" PRIu64 " READ from peers (%" PRIu64
			  " bytes); %" PRIu64 " given back unread or failed; %" PRIu64
			  " bad frame(s)\n", R->lent, R->lent_bytes, R->copied_here, R->reads,
			  R->read_bytes, R->loans_failed, R->bad_lends);
	}
	for (unsigned int i = 0; i < R->nlinks; i++) {
		struct rb2_mr_cache *c[2] = { R->links[i]->tx_cache, R->links[i]->rx_cache };

		for (int k = 0; k < 2; k++) {
			struct rb2_mr_cache_stats st;

			if (c[k] == NULL)
				continue;
			rb2_mr_cache_stats_get(c[k], &st);
			RELAY_SAY(R, "registrations %s: %" PRIu64 " gets, %" PRIu64 " hits, %"
				  PRIu64 " misses, %" PRIu64 " registrations, %" PRIu64
				  " evictions\n", rb2_mr_cache_name(c[k]), st.gets, st.hits,
				  st.misses, st.registrations, st.evictions);
		}
	}
	fflush(R->p.out);
	for (unsigned int i = 0; i < R->nlinks; i++)
		link_settle(R, R->links[i]);
	for (unsigned int i = 0; i < R->nlinks; i++) {
		rb2_conn_ep_destroy(R->links[i]->ep);
		link_free(R, R->links[i]);
	}
	free(R->relays);
	free(R->free_idx);
	free(R->loans);
	free(R->loan_free);
	free(R->reading);
	pthread_mutex_destroy(&R->lock);
	free(R);
}

/* Telemetry runs on its own thread: the counters are read as the loop
 * writes them, atomically; the link and relay counts are a snapshot. */
#define TEL_LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

void
rb2_conn_relay_stats_get(const struct rb2_conn_relay *R, struct rb2_conn_relay_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->links = TEL_LOAD(R->nlinks);
	st->relays_in_use = R->p.max_relays - TEL_LOAD(R->nfree);
	st->max_relays = R->p.max_relays;
	st->frames_relayed = TEL_LOAD(R->relayed);
	st->unknown_frames = TEL_LOAD(R->unknown);
	st->refused = TEL_LOAD(R->refused);
	st->resets = TEL_LOAD(R->resets);
	st->undeliverable = TEL_LOAD(R->undeliverable);
	st->queued = TEL_LOAD(R->queued_all);
	st->sources_held = TEL_LOAD(R->held);
	st->loans_in_use = R->p.max_loans - TEL_LOAD(R->nloan_free);
	st->max_loans = R->p.max_loans;
	st->lent = TEL_LOAD(R->lent);
	st->lent_bytes = TEL_LOAD(R->lent_bytes);
	st->copied_here = TEL_LOAD(R->copied_here);
	st->copied_here_bytes = TEL_LOAD(R->copied_bytes);
	st->reads = TEL_LOAD(R->reads);
	st->read_bytes = TEL_LOAD(R->read_bytes);
	st->loans_failed = TEL_LOAD(R->loans_failed);
	st->bad_lend_frames = TEL_LOAD(R->bad_lends);
}

unsigned int
rb2_conn_relay_links_get(struct rb2_conn_relay *R, struct rb2_conn_relay_link_stats *ls,
			 unsigned int n)
{
	unsigned int k = 0;

	pthread_mutex_lock(&R->lock);
	for (; k < R->nlinks && k < n; k++) {
		const struct link *l = R->links[k];

		snprintf(ls[k].name, sizeof(ls[k].name), "%s", l->name);
		ls[k].pid = l->pid;
		ls[k].host = l->host;
		ls[k].conns = TEL_LOAD(l->conns);
		ls[k].queued_frames = TEL_LOAD(l->q.frames);
		ls[k].queue_peak_bytes = TEL_LOAD(l->q.peak_bytes);
		ls[k].frames_in = TEL_LOAD(l->frames_in);
		ls[k].bytes_in = TEL_LOAD(l->bytes_in);
		ls[k].frames_out = TEL_LOAD(l->frames_out);
		ls[k].bytes_out = TEL_LOAD(l->bytes_out);
	}
	pthread_mutex_unlock(&R->lock);
	return k;
}
