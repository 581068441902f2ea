/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * rb2-raasd: the host service (RaaS's model). A DPDK primary; applications
 * are its secondaries and join it with one channel pair each over shm
 * (rb2_conn_service_join()). Other hosts' services are its peers, one
 * channel pair each over verbs (one RC QP each way, shared by every
 * connection of every application to that host). It relays connections: a
 * connect names a host and a port; the service finds the application
 * listening there (or the peer service of that host, which does), gives the
 * connection a relay id on each side (the vQPN each end puts in its frames),
 * and from then on moves frames between the two links, rewriting only the
 * id in the header. Credits are end to end. A frame for a destination whose
 * ring is full waits in that destination's queue (bounded; beyond it, its
 * source waits), so that one application that stops polling holds up only
 * the connections to it.
 *
 *   rb2-raasd [EAL args] -- [--host-id N] [--listen IP:PORT]
 *             [--peer [ID@]IP:PORT]... [--transport SPEC] [--max-relays N]
 *             [--queue-kb N]
 *
 * A link that fails (an application died, a peer service or its host) has
 * every connection through it reset at the other end, with the reason.
 * Telemetry: /rb2/raasd/info, /rb2/raasd/links (each application and peer,
 * with its connections).
 */

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_malloc.h>
#include <rte_ring.h>
#include <rte_telemetry.h>

#include <rb2_bulk.h>
#include <rb2_conn_service.h>
#include <rb2_lcore.h>
#include <rb2_mr_cache.h>

#include "../common/app_opt.h"

#define MAX_LINKS 256
#define MAX_LISTENS 64

/*
 * Frames waiting for room in one destination's ring, in order: so that a
 * destination that stops polling holds up only its own connections, not
 * the sources that also talk to others. Records [u32 len][frame] padded to
 * 8 bytes; one that does not fit before the end starts again at 0 behind a
 * QREC_WRAP. Allocated when first needed, bounded by --queue-kb: beyond
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
	char name[96];
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

static struct {
	struct link *links[MAX_LINKS];
	unsigned int nlinks;
	struct relay *relays;
	uint32_t max_relays;
	uint32_t *free_idx, nfree;
	uint64_t relayed, unknown, refused, resets, undeliverable;
	uint64_t held;                  /* times a source waited: a queue was full */
	uint64_t queued_all;            /* frames queued, links gone included */
	uint32_t queue_cap;             /* bytes per destination's queue (--queue-kb) */
	uint32_t host_id;               /* this host's, in connects (0 is "here" too) */
	enum rb2_head_sync peer_head;   /* --peer-sync: the peer links' policies */
	enum rb2_tail_sync peer_tail;
	volatile sig_atomic_t stop;
	pthread_mutex_t lock;           /* the link array, against telemetry */
	struct loan *loans;
	uint32_t max_loans;             /* --max-loans */
	uint32_t *loan_free, nloan_free;
	uint32_t nreading;              /* loans with a READ of ours in flight */
	uint64_t lent, lent_bytes;      /* loans made (atomic, for telemetry) */
	uint64_t copied_here, copied_bytes; /* READs served by one copy here */
	uint64_t reads, read_bytes;     /* READs from peers' lenders */
	uint64_t loans_failed;          /* lenders answered other than 0 */
	uint64_t bad_lends;             /* malformed REF, READREQ, REFDONE frames */
	uint32_t *reading;              /* the loans of those READs (nreading) */
} S;

static void
on_signal(int sig __rte_unused)
{
	S.stop = 1;
}

static inline uint32_t
relay_id(uint32_t idx, int side)
{
	return (uint32_t)S.relays[idx].gen << 16 | idx << 1 | (uint32_t)side;
}

/* The relay and side an id names, or NULL. */
static struct relay *
relay_of(uint32_t id, int *side)
{
	uint32_t idx = (id & 0xffff) >> 1;
	struct relay *r;

	if (idx >= S.max_relays)
		return NULL;
	r = &S.relays[idx];
	*side = (int)(id & 1);
	return r->used && r->gen == (id >> 16) ? r : NULL;
}

static void
relay_free(struct relay *r)
{
	for (int side = 0; side < 2; side++)
		if (r->l[side] != NULL)
			__atomic_fetch_sub(&r->l[side]->conns, 1, __ATOMIC_RELAXED);
	r->used = 0;
	S.free_idx[S.nfree++] = (uint32_t)(r - S.relays);
}

static inline uint32_t
qrec_size(uint32_t len)
{
	return (uint32_t)RTE_ALIGN_CEIL(sizeof(uint32_t) + len, 8);
}

/* Keep a copy of @p f behind what @p l's queue holds. @return 0, or
 * -EAGAIN (the queue is full, or cannot be had: the source waits). */
static int
queue_put(struct link *l, const void *f, uint32_t len)
{
	struct frame_queue *q = &l->q;
	uint32_t need = qrec_size(len), at = q->tail;

	if (q->buf == NULL) {
		if (S.queue_cap == 0 || q->no_memory)
			goto full;              /* --queue-kb 0: no queues */
		q->buf = rte_malloc("rb2_raasd_queue", S.queue_cap, 8);
		if (q->buf == NULL) {
			q->no_memory = 1;
			fprintf(stderr, "rb2-raasd: no memory for a %u KiB queue for %s: its sources "
				"wait for its ring instead (give the service more memory, -m, or a "
				"smaller --queue-kb)\n", S.queue_cap / 1024, l->name);
			goto full;
		}
		q->cap = S.queue_cap;
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
	S.queued_all++;
	__atomic_store_n(&q->frames, q->frames + 1, __ATOMIC_RELAXED);
	if (q->bytes > q->peak_bytes)
		__atomic_store_n(&q->peak_bytes, q->bytes, __ATOMIC_RELAXED);
	return 0;
full:
	__atomic_fetch_add(&S.held, 1, __ATOMIC_RELAXED);
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
link_put(struct link *l, const void *f, uint32_t len)
{
	int ret = -EAGAIN;

	if (l->q.bytes == 0)
		ret = rb2_conn_ep_forward(l->ep, f, len);
	if (ret == -EAGAIN)
		ret = queue_put(l, f, len);
	if (ret == 0)
		count(&l->frames_out, &l->bytes_out, len);
	return ret;
}

/* Move what waits for @p l onto its ring, as far as there is room. A link
 * that failed drops it, counted (the next pass resets its connections). */
static void
link_drain(struct link *l)
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
			__atomic_fetch_add(&S.undeliverable, 1, __ATOMIC_RELAXED);
		q->head += qrec_size(len);
		q->bytes -= qrec_size(len);
		__atomic_store_n(&q->frames, q->frames - 1, __ATOMIC_RELAXED);
	}
	q->head = q->tail = 0;
}

/* A link taken away: what still waited for it is counted undeliverable
 * (its connections were reset at their other ends). */
static void
link_free(struct link *l)
{
	if (l->q.frames > 0) {
		__atomic_fetch_add(&S.undeliverable, l->q.frames, __ATOMIC_RELAXED);
		fprintf(stderr, "rb2-raasd: %" PRIu64 " frame(s) queued for %s not delivered: it "
			"is gone\n", l->q.frames, l->name);
	}
	if (l->refdone.n + l->readdone.n > 0)
		fprintf(stderr, "rb2-raasd: %u answer(s) about lent buffers owed to %s not sent: it "
			"is gone\n", l->refdone.n + l->readdone.n, l->name);
	free(l->refdone.e);
	free(l->readdone.e);
	rte_free(l->q.buf);
	free(l);
}

/* Put a header-only control frame towards @p l. */
static int
send_ctrl(struct link *l, uint32_t cid, uint8_t type, uint16_t aux)
{
	uint8_t f[RB2_CONN_HDR_LEN];
	uint64_t h = (uint64_t)cid | (uint64_t)type << 32 | (uint64_t)aux << 48;

	memcpy(f, &h, sizeof(h));
	return link_put(l, f, sizeof(f));
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
			fprintf(stderr, "rb2-raasd: %s: out of memory for a %s about buffer %#x\n",
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
owed_flush(struct link *l)
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
			if (link_put(l, f, RB2_CONN_HDR_LEN + m * sizeof(*o[k]->e)) == -EAGAIN)
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
loan_id(const struct loan *ln)
{
	return (uint32_t)ln->gen << 16 | (uint32_t)(ln - S.loans);
}

static struct loan *
loan_of(uint32_t id)
{
	struct loan *ln = (id & 0xffff) < S.max_loans ? &S.loans[id & 0xffff] : NULL;

	return ln != NULL && ln->used && ln->gen == id >> 16 ? ln : NULL;
}

static struct loan *
loan_new(struct link *lender, uint32_t lender_id, struct link *borrower)
{
	struct loan *ln;

	if (S.nloan_free == 0)
		return NULL;
	ln = &S.loans[S.loan_free[--S.nloan_free]];
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
loan_drop(struct loan *ln)
{
	if (ln->nheld != 0)
		rb2_mr_cache_put(ln->borrower->tx_cache, ln->held, ln->nheld);
	ln->used = 0;
	S.loan_free[S.nloan_free++] = (uint32_t)(ln - S.loans);
}

/* End @p ln: its lender, if still here, hears @p status. */
static void
loan_end(struct loan *ln, int status)
{
	if (ln->lender != NULL)
		owe(ln->lender, &ln->lender->refdone, ln->lender_id, status, "REFDONE");
	if (status != 0)
		__atomic_fetch_add(&S.loans_failed, 1, __ATOMIC_RELAXED);
	loan_drop(ln);
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
		fprintf(stderr, "rb2-raasd: the link to peer service %s cannot %s applications' memory (its transport, '%s'): connections that lend buffers over it are reset\n",
			l->name, tx ? "lend" : "READ",
			rb2_xport_name((tx ? &l->ep->tx->h : &l->ep->rx->h)->xp));
	return tx ? l->tx_cache : l->rx_cache;
}

static void
bad_lend(struct link *from, const char *what)
{
	uint64_t n = __atomic_add_fetch(&S.bad_lends, 1, __ATOMIC_RELAXED);

	if ((n & (n - 1)) == 0)                 /* at powers of two */
		fprintf(stderr, "rb2-raasd: %s: %s (%" PRIu64 " such frame(s) so far)\n",
			from->name, what, n);
}

static struct link *
listener(uint16_t port)
{
	for (unsigned int i = 0; i < S.nlinks; i++)
		for (unsigned int j = 0; j < S.links[i]->nlistens; j++)
			if (S.links[i]->listens[j] == port)
				return S.links[i];
	return NULL;
}

static struct link *
peer_of(uint32_t host)
{
	for (unsigned int i = 0; i < S.nlinks; i++)
		if (S.links[i]->host == host)
			return S.links[i];
	return NULL;
}

static int
syn_in(struct link *from, uint8_t *f, uint32_t len, uint16_t port)
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
	if (h.host == 0 || h.host == S.host_id) {
		to = listener(port);
		why = RB2_CONN_REFUSE_NO_LISTENER;
	} else {
		to = from->host == 0 ? peer_of(h.host) : NULL;
		why = RB2_CONN_REFUSE_NO_ROUTE;
	}
	if (to == NULL || S.nfree == 0) {
		ret = send_ctrl(from, h.src_cd, RB2_CONN_FR_REFUSE,
				to == NULL ? why : RB2_CONN_REFUSE_TOO_MANY);
		__atomic_fetch_add(&S.refused, ret == 0, __ATOMIC_RELAXED);
		return ret;
	}
	idx = S.free_idx[S.nfree - 1];
	r = &S.relays[idx];
	r->gen = (uint16_t)(r->gen % 0x7fff + 1);
	/* The acceptor addresses the connection as side 1's id; the next
	 * hop's host is its own. */
	struct rb2_conn_hello fwd = h;

	fwd.src_cd = relay_id(idx, 1);
	fwd.host = 0;
	memcpy(f + RB2_CONN_HDR_LEN, &fwd, sizeof(fwd));
	ret = link_put(to, f, len);
	memcpy(f + RB2_CONN_HDR_LEN, &h, sizeof(h));   /* as it was, for a retry */
	if (ret == -EAGAIN)
		return ret;
	if (ret < 0) {
		/* The listener's link failed: the next pass takes it away. */
		ret = send_ctrl(from, h.src_cd, RB2_CONN_FR_REFUSE, RB2_CONN_REFUSE_NO_LISTENER);
		__atomic_fetch_add(&S.refused, ret == 0, __ATOMIC_RELAXED);
		return ret;
	}
	uint32_t theirs = h.src_cd;
	S.nfree--;
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
credit_in(struct link *from, uint8_t *f, uint32_t len, uint16_t n)
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
		r = relay_of(cr.cid, &side);
		if (r == NULL || r->l[side] != from || r->cd[!side] == UINT32_MAX)
			continue;           /* after both closed: nothing to deliver */
		cr.cid = r->cd[!side];
		memcpy(out, &hdr, sizeof(hdr));
		memcpy(out + RB2_CONN_HDR_LEN, &cr, sizeof(cr));
		ret = link_put(r->l[!side], out, sizeof(out));
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* A lent buffer that cannot go on (see peer_cache()): the lender has it
 * back, and the connection is reset at both ends, with the reason. */
static int
lend_fail(struct link *from, struct relay *r, int side, uint32_t tag)
{
	owe(from, &from->refdone, tag, -ECONNABORTED, "REFDONE");
	__atomic_fetch_add(&S.loans_failed, 1, __ATOMIC_RELAXED);
	send_ctrl(from, r->cd[side], RB2_CONN_FR_RST, RB2_CONN_RST_LEND);
	if (r->l[!side] != NULL && r->cd[!side] != UINT32_MAX)
		send_ctrl(r->l[!side], r->cd[!side], RB2_CONN_FR_RST, RB2_CONN_RST_LEND);
	__atomic_fetch_add(&S.resets, 1, __ATOMIC_RELAXED);
	relay_free(r);
	return 0;
}

/*
 * A REF frame on relay @p r from side @p side: a buffer lent. Made a loan
 * and passed on: to a peer service with the buffer registered for its
 * READ; to an application with its length only (struct loan).
 * @return 0, or -EAGAIN (no loan, registration or room now: offered again).
 */
static int
lend_in(struct link *from, struct relay *r, int side, const uint8_t *f, uint32_t len)
{
	uint8_t out[RB2_CONN_HDR_LEN + RB2_BULK_REF_SIZE(RB2_BULK_MAX_SEGS)];
	struct link *to = r->l[!side];
	struct rb2_bulk_ref ref, fwd;
	struct loan *ln;
	uint64_t h;
	int ret;

	if (!rb2_bulk_ref_valid(f + RB2_CONN_HDR_LEN, len - RB2_CONN_HDR_LEN)) {
		/* No id to answer: the lender's connection waits for credit. */
		bad_lend(from, "dropped a REF frame that describes no buffer");
		return 0;
	}
	memcpy(&ref, f + RB2_CONN_HDR_LEN, len - RB2_CONN_HDR_LEN);
	if (from->host == 0 && (ref.nsegs != 1 || ref.segs[0].rkey != 0 ||
				!rb2_conn_service_shared((void *)(uintptr_t)ref.segs[0].addr,
							 ref.len))) {
		bad_lend(from, "a lent buffer outside the process group's shared memory: its connection is reset");
		return lend_fail(from, r, side, ref.tag);
	}
	if (to == NULL || r->cd[!side] == UINT32_MAX) {
		owe(from, &from->refdone, ref.tag, -ECONNABORTED, "REFDONE");
		return 0;
	}
	ln = loan_new(from, ref.tag, to);
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
			loan_drop(ln);      /* every registration in use: wait */
			return -EAGAIN;
		}
		if (n < 0) {
			if (n != -ENOTSUP)
				fprintf(stderr, "rb2-raasd: cannot register a buffer of %s for %s: %s\n",
					from->name, to->name, strerror(-n));
			loan_drop(ln);
			return lend_fail(from, r, side, ref.tag);
		}
		ln->nheld = (unsigned int)n;
	} else {
		/* To an application: the length only, in the lender's size. */
		memset(&fwd, 0, sizeof(fwd));
		fwd.nsegs = 1;
		fwd.len = ref.len;
		fwd.segs[0].len = (uint32_t)ref.len;
	}
	fwd.tag = loan_id(ln);
	h = (uint64_t)r->cd[!side] | (uint64_t)RB2_CONN_FR_REF << 32;
	memcpy(out, &h, sizeof(h));
	memcpy(out + RB2_CONN_HDR_LEN, &fwd, RB2_BULK_REF_SIZE(fwd.nsegs));
	ret = link_put(to, out, RB2_CONN_HDR_LEN + RB2_BULK_REF_SIZE(fwd.nsegs));
	if (ret == -EAGAIN) {
		loan_drop(ln);
		return ret;
	}
	if (ret < 0) {
		/* Its link failed: the lender has its buffer back. */
		loan_end(ln, -ECONNRESET);
		__atomic_fetch_add(&S.undeliverable, 1, __ATOMIC_RELAXED);
		return 0;
	}
	__atomic_fetch_add(&S.lent, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&S.lent_bytes, ref.len, __ATOMIC_RELAXED);
	__atomic_fetch_add(&S.relayed, 1, __ATOMIC_RELAXED);
	return 0;
}

/* REFDONE entries from the borrower of each: those loans end. */
static int
refdone_in(struct link *from, const uint8_t *f, uint32_t len, uint16_t n)
{
	if (n == 0 || len != RB2_CONN_HDR_LEN + n * sizeof(struct rb2_conn_refdone)) {
		bad_lend(from, "a REFDONE frame whose count and length disagree");
		return 0;
	}
	for (uint16_t i = 0; i < n; i++) {
		struct rb2_conn_refdone d;
		struct loan *ln;

		memcpy(&d, f + RB2_CONN_HDR_LEN + i * sizeof(d), sizeof(d));
		ln = loan_of(d.id);
		if (ln == NULL || ln->borrower != from || ln->reading) {
			bad_lend(from, "a REFDONE for no buffer it borrowed");
			continue;
		}
		loan_end(ln, d.status == 0 || d.status == -ECONNRESET ? d.status : -ECONNABORTED);
	}
	return 0;
}

/* Our READ for @p ln is over with @p status: its reader hears it. */
static void
read_over(struct loan *ln, int status, unsigned int at)
{
	ln->reading = 0;
	S.reading[at] = S.reading[--S.nreading];
	if (status == 0) {
		__atomic_fetch_add(&S.reads, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&S.read_bytes, ln->ref.len, __ATOMIC_RELAXED);
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
readreq_in(struct link *from, const uint8_t *f, uint32_t len)
{
	struct rb2_conn_readreq q;
	struct rb2_mr_cache *c;
	struct loan *ln;
	void *dst;
	int ret;

	if (from->host != 0 || len != RB2_CONN_HDR_LEN + sizeof(q)) {
		bad_lend(from, "a READREQ frame from a peer service, or of the wrong size");
		return 0;
	}
	memcpy(&q, f + RB2_CONN_HDR_LEN, sizeof(q));
	ln = loan_of(q.id);
	dst = (void *)(uintptr_t)q.dst;
	if (ln == NULL || ln->borrower != from || ln->reading) {
		bad_lend(from, "a READREQ for no buffer it borrowed");
		owe(from, &from->readdone, q.id, -EINVAL, "READDONE");
		return 0;
	}
	if (q.len != ln->ref.len || !rb2_conn_service_shared(dst, q.len)) {
		bad_lend(from, "a READREQ into memory outside the process group's shared memory, or of the wrong length");
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
		__atomic_fetch_add(&S.copied_here, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&S.copied_bytes, ln->ref.len, __ATOMIC_RELAXED);
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
	S.reading[S.nreading++] = (uint32_t)(ln - S.loans);
	return 0;
}

/* Our READs that completed (each pass). */
static void
reads_poll(void)
{
	for (uint32_t i = 0; i < S.nreading; ) {
		struct loan *ln = &S.loans[S.reading[i]];
		int ret = rb2_bulk_read_poll(ln->lender->ep->rx, ln->lender->rx_cache, &ln->rd);

		if (ret == -EINPROGRESS) {
			i++;
			continue;
		}
		read_over(ln, ret, i);
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
link_settle(struct link *l)
{
	for (uint32_t i = 0; i < S.nreading; ) {
		struct loan *ln = &S.loans[S.reading[i]];
		int ret;

		if (ln->lender != l && ln->borrower != l) {
			i++;
			continue;
		}
		while ((ret = rb2_bulk_read_poll(ln->lender->ep->rx, ln->lender->rx_cache,
						 &ln->rd)) == -EINPROGRESS)
			;
		read_over(ln, ret, i);
	}
	for (uint32_t i = 0; i < S.max_loans; i++) {
		struct loan *ln = &S.loans[i];

		if (!ln->used)
			continue;
		if (ln->lender == l)
			ln->lender = NULL;
		if (ln->borrower == l)
			loan_end(ln, l->host != 0 ? -ECONNRESET : -ECONNABORTED);
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
frame_from(void *arg, uint8_t *f, uint32_t len)
{
	struct link *from = arg;
	struct rb2_conn_hello h;
	uint32_t cid, orig;
	struct relay *r;
	uint16_t aux;
	uint8_t type;
	int side, ret;

	if (len < RB2_CONN_HDR_LEN)
		return 0;
	memcpy(&cid, f, 4);
	type = f[4];
	memcpy(&aux, f + 6, 2);
	switch (type) {
	case RB2_CONN_FR_LISTEN:
		if (from->nlistens < MAX_LISTENS && listener(aux) == NULL)
			from->listens[from->nlistens++] = aux;
		else
			fprintf(stderr, "rb2-raasd: %s: cannot listen on %u (taken, or %d ports)\n",
				from->name, aux, MAX_LISTENS);
		return 0;
	case RB2_CONN_FR_UNLISTEN:
		for (unsigned int j = 0; j < from->nlistens; j++)
			if (from->listens[j] == aux)
				from->listens[j] = from->listens[--from->nlistens];
		return 0;
	case RB2_CONN_FR_SYN:
		return syn_in(from, f, len, aux);
	case RB2_CONN_FR_CREDIT:
		return credit_in(from, f, len, aux);
	case RB2_CONN_FR_REFDONE:
		return refdone_in(from, f, len, aux);
	case RB2_CONN_FR_READREQ:
		return readreq_in(from, f, len);
	case RB2_CONN_FR_READDONE:
		bad_lend(from, "a READDONE frame, which only a service sends");
		return 0;
	default:
		break;
	}
	r = relay_of(cid, &side);
	if (r == NULL || r->l[side] != from) {
		__atomic_fetch_add(&S.unknown, 1, __ATOMIC_RELAXED);
		/* A lent buffer for no connection goes back to its lender. */
		if (type == RB2_CONN_FR_REF && len >= RB2_CONN_HDR_LEN + RB2_BULK_REF_SIZE(1)) {
			uint32_t tag;

			memcpy(&tag, f + RB2_CONN_HDR_LEN, sizeof(tag));
			owe(from, &from->refdone, tag, -ECONNABORTED, "REFDONE");
		}
		return 0;
	}
	if (type == RB2_CONN_FR_REF)
		return lend_in(from, r, side, f, len);
	if (r->l[!side] == NULL) {
		/* The connector died before this accept: reset it here. */
		if (type == RB2_CONN_FR_SYNACK && len == RB2_CONN_HDR_LEN + sizeof(h)) {
			memcpy(&h, f + RB2_CONN_HDR_LEN, sizeof(h));
			ret = send_ctrl(from, h.src_cd, RB2_CONN_FR_RST, RB2_CONN_RST_PEER_GONE);
			if (ret == -EAGAIN)
				return ret;
		}
		relay_free(r);
		return 0;
	}
	if (type == RB2_CONN_FR_SYNACK) {
		if (side != 1 || len != RB2_CONN_HDR_LEN + sizeof(h))
			return 0;
		memcpy(&h, f + RB2_CONN_HDR_LEN, sizeof(h));
		r->cd[1] = h.src_cd;
		h.src_cd = relay_id((uint32_t)(r - S.relays), 0);
		memcpy(f + RB2_CONN_HDR_LEN, &h, sizeof(h));
	}
	/* The frame as it is, to the other side's descriptor. */
	orig = cid;
	memcpy(f, &r->cd[!side], 4);
	ret = link_put(r->l[!side], f, len);
	memcpy(f, &orig, 4);
	if (ret == -EAGAIN) {
		if (type == RB2_CONN_FR_SYNACK)
			r->cd[1] = UINT32_MAX;
		return ret;
	}
	if (ret < 0) {
		/* Its link failed: the next pass resets this relay. */
		__atomic_fetch_add(&S.undeliverable, 1, __ATOMIC_RELAXED);
		return 0;
	}
	__atomic_fetch_add(&S.relayed, 1, __ATOMIC_RELAXED);
	if (type == RB2_CONN_FR_FIN)
		r->fin[side] = 1;
	if (type == RB2_CONN_FR_REFUSE || type == RB2_CONN_FR_RST || (r->fin[0] && r->fin[1]))
		relay_free(r);
	return 0;
}

/* Every frame from a link (rb2_conn_relay_fn), counted once taken. */
static int
relay_frame(void *arg, struct rb2_conn_ep *ep __rte_unused, uint8_t *f, uint32_t len)
{
	struct link *from = arg;
	int ret = frame_from(arg, f, len);

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
link_gone(struct link *l, int err)
{
	uint16_t why = err == -ESHUTDOWN ? RB2_CONN_RST_PEER_LEFT : RB2_CONN_RST_PEER_GONE;
	unsigned int n = 0;

	for (uint32_t i = 0; i < S.max_relays; i++) {
		struct relay *r = &S.relays[i];
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
		    send_ctrl(r->l[other], r->cd[other], RB2_CONN_FR_RST, why) == -EAGAIN)
			return -EAGAIN;
		relay_free(r);
		n++;
		__atomic_fetch_add(&S.resets, 1, __ATOMIC_RELAXED);
	}
	if (l->host != 0)
		printf("rb2-raasd: peer service %s %s: %u connection(s) reset at this end\n",
		       l->name, err == -ESHUTDOWN ? "stopped" : "failed (its link is down)", n);
	else
		printf("rb2-raasd: application %s (pid %u) %s: %u connection(s) reset at the "
		       "other end\n", l->name, l->pid,
		       err == -ESHUTDOWN ? "left" : "is gone (it exited without closing)", n);
	fflush(stdout);
	return 0;
}

static void
join(struct rb2_xport *xp, struct rb2_conn_service_join *req)
{
	char up[RB2_CHAN_NAMESIZE], down[RB2_CHAN_NAMESIZE];
	struct rb2_conn_ep_params ep;
	struct rb2_chan_params p;
	struct link *l = calloc(1, sizeof(*l));
	struct rb2_tx *tx;
	struct rb2_rx *rx;

	snprintf(up, sizeof(up), "%s.u", req->name);
	snprintf(down, sizeof(down), "%s.d", req->name);
	rb2_conn_service_chan_params(&p);
	rx = rb2_rx_create(up, xp, &p);
	tx = rb2_tx_create(down, xp, &p);
	rb2_conn_ep_params_init(&ep);
	ep.max_conns = 1;           /* its connections are relayed, not held */
	ep.backlog = 1;
	if (l == NULL || S.nlinks == MAX_LINKS || rx == NULL || tx == NULL ||
	    rb2_rx_connect(rx, up, 2000) != 0 || rb2_tx_connect(tx, down, 2000) != 0 ||
	    (l->ep = rb2_conn_ep_create(req->name, tx, rx, &ep)) == NULL) {
		fprintf(stderr, "rb2-raasd: cannot take application %s (pid %u): %s\n",
			req->name, req->pid, S.nlinks == MAX_LINKS ? "too many applications" :
			rte_strerror(rte_errno));
		if (l == NULL || l->ep == NULL) {
			rb2_tx_destroy(tx);
			rb2_rx_destroy(rx);
		}
		free(l);
		rte_free(req);
		return;
	}
	snprintf(l->name, sizeof(l->name), "%s", req->name);
	l->pid = req->pid;
	rb2_conn_ep_set_relay(l->ep, relay_frame, l);
	pthread_mutex_lock(&S.lock);
	S.links[S.nlinks++] = l;
	pthread_mutex_unlock(&S.lock);
	printf("rb2-raasd: application %s (pid %u) joined\n", l->name, l->pid);
	fflush(stdout);
	rte_free(req);
}

/* Telemetry runs on its own thread: the counters are read as the loop
 * writes them, atomically; the link and relay counts are a snapshot. */
#define TEL_LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

static int
tel_info(const char *cmd __rte_unused, const char *params __rte_unused,
	 struct rte_tel_data *d)
{
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "links", TEL_LOAD(S.nlinks));
	rte_tel_data_add_dict_u64(d, "relays_in_use", S.max_relays - TEL_LOAD(S.nfree));
	rte_tel_data_add_dict_u64(d, "max_relays", S.max_relays);
	rte_tel_data_add_dict_u64(d, "frames_relayed", TEL_LOAD(S.relayed));
	rte_tel_data_add_dict_u64(d, "unknown_frames", S.unknown);
	rte_tel_data_add_dict_u64(d, "refused", TEL_LOAD(S.refused));
	rte_tel_data_add_dict_u64(d, "resets", TEL_LOAD(S.resets));
	rte_tel_data_add_dict_u64(d, "undeliverable", TEL_LOAD(S.undeliverable));
	rte_tel_data_add_dict_u64(d, "queue_kb", S.queue_cap / 1024);
	rte_tel_data_add_dict_u64(d, "sources_held", TEL_LOAD(S.held));
	/* Lent buffers (RaaS's registered sends): loans out now, made, and
	 * how each reader got its bytes. Registrations: /rb2/mr_cache,
	 * raasd-tx.<peer host> and raasd-rx.<peer host>. */
	rte_tel_data_add_dict_u64(d, "loans_in_use", S.max_loans - TEL_LOAD(S.nloan_free));
	rte_tel_data_add_dict_u64(d, "max_loans", S.max_loans);
	rte_tel_data_add_dict_u64(d, "lent", TEL_LOAD(S.lent));
	rte_tel_data_add_dict_u64(d, "lent_bytes", TEL_LOAD(S.lent_bytes));
	rte_tel_data_add_dict_u64(d, "copied_here", TEL_LOAD(S.copied_here));
	rte_tel_data_add_dict_u64(d, "copied_here_bytes", TEL_LOAD(S.copied_bytes));
	rte_tel_data_add_dict_u64(d, "reads", TEL_LOAD(S.reads));
	rte_tel_data_add_dict_u64(d, "read_bytes", TEL_LOAD(S.read_bytes));
	rte_tel_data_add_dict_u64(d, "loans_failed", TEL_LOAD(S.loans_failed));
	rte_tel_data_add_dict_u64(d, "bad_lend_frames", TEL_LOAD(S.bad_lends));
	/* One channel pair per link (application or peer service), whatever
	 * the number of connections through it. */
	rte_tel_data_add_dict_u64(d, "host_id", S.host_id);
	return 0;
}

/*
 * A channel pair to a peer service: our sender to its --listen, its sender
 * to ours. Each side listens for the other's sender and connects its own;
 * the one with the smaller host id connects first, so that two services
 * starting together do not both wait (and a set of them, each taking its
 * peers in order, neither).
 */
static int
peer_link(struct rb2_xport *xp, uint32_t id, const char *addr, const char *listen)
{
	char in[RB2_CHAN_NAMESIZE], out[RB2_CHAN_NAMESIZE];
	struct rb2_conn_ep_params ep;
	struct rb2_chan_params p;
	struct link *l = calloc(1, sizeof(*l));
	struct rb2_tx *tx;
	struct rb2_rx *rx;
	int ret = -1;

	snprintf(in, sizeof(in), "peer%u.i", id);
	snprintf(out, sizeof(out), "peer%u.o", id);
	rb2_conn_service_chan_params(&p);
	p.head_sync = S.peer_head;
	p.tail_sync = S.peer_tail;
	rx = rb2_rx_create(in, xp, &p);
	tx = rb2_tx_create(out, xp, &p);
	if (l == NULL || rx == NULL || tx == NULL)
		goto out;
	printf("rb2-raasd: connecting to peer service %u at %s (listening on %s)\n", id,
	       addr, listen);
	fflush(stdout);
	for (int first = 0; first < 2; first++) {
		if ((first == 0) == (S.host_id < id)) {
			for (int i = 0; i < 600; i++) {      /* a minute for it to start */
				ret = rb2_tx_connect(tx, addr, 100);
				if (ret == 0 || S.stop)
					break;
			}
		} else {
			ret = rb2_rx_connect(rx, listen, 60000);
		}
		if (ret != 0)
			goto out;
	}
	rb2_conn_ep_params_init(&ep);
	ep.max_conns = 1;
	ep.backlog = 1;
	l->ep = rb2_conn_ep_create(out, tx, rx, &ep);
	if (l->ep == NULL)
		goto out;
	snprintf(l->name, sizeof(l->name), "%u@%s", id, addr);
	l->host = id;
	rb2_conn_ep_set_relay(l->ep, relay_frame, l);
	pthread_mutex_lock(&S.lock);
	S.links[S.nlinks++] = l;
	pthread_mutex_unlock(&S.lock);
	printf("rb2-raasd: peer service %s linked\n", l->name);
	fflush(stdout);
	return 0;
out:
	fprintf(stderr, "rb2-raasd: no link to peer service %u at %s: %s\n", id, addr,
		ret != 0 ? strerror(-ret) : rte_strerror(rte_errno));
	if (l == NULL || l->ep == NULL) {
		rb2_tx_destroy(tx);
		rb2_rx_destroy(rx);
	}
	free(l);
	return -1;
}

/* "[ID@]IP:PORT": the host id defaults to the address, as a number. */
/* @return whether @p addr is IPv4:PORT, each part in its range. */
static int
addr_ok(const char *addr)
{
	unsigned int a, b, c, d, port;
	int n = 0;

	return sscanf(addr, "%3u.%3u.%3u.%3u:%5u%n", &a, &b, &c, &d, &port, &n) == 5 &&
	       addr[n] == '\0' && a < 256 && b < 256 && c < 256 && d < 256 && port > 0 &&
	       port < 65536;
}

static int
parse_peer(const char *spec, uint32_t *id, char *addr, size_t len)
{
	const char *at = strchr(spec, '@');
	unsigned int a, b, c, d;
	uint64_t v;

	snprintf(addr, len, "%s", at != NULL ? at + 1 : spec);
	if (!addr_ok(addr))
		return -1;
	if (at != NULL) {
		char num[24];

		snprintf(num, sizeof(num), "%.*s", (int)(at - spec), spec);
		if (app_parse_u64(num, &v) < 0 || v == 0 || v > UINT32_MAX)
			return -1;
		*id = (uint32_t)v;
		return 0;
	}
	if (sscanf(addr, "%u.%u.%u.%u:", &a, &b, &c, &d) != 4)
		return -1;
	*id = a << 24 | b << 16 | c << 8 | d;
	return 0;
}

static int
tel_links(const char *cmd __rte_unused, const char *params __rte_unused,
	  struct rte_tel_data *d)
{
	rte_tel_data_start_dict(d);
	pthread_mutex_lock(&S.lock);
	for (unsigned int i = 0; i < S.nlinks; i++) {
		struct link *l = S.links[i];
		struct rte_tel_data *c = rte_tel_data_alloc();
		char key[sizeof(l->name)];

		/* Keys may hold only alphanumerics, '_' and '/': the name
		 * itself is in the entry. */
		for (size_t k = 0; k < sizeof(key); k++) {
			char ch = l->name[k];

			key[k] = ch == '\0' || isalnum((unsigned char)ch) || ch == '/' ? ch : '_';
			if (ch == '\0')
				break;
		}
		if (c == NULL)
			break;
		rte_tel_data_start_dict(c);
		rte_tel_data_add_dict_string(c, "name", l->name);
		rte_tel_data_add_dict_string(c, "kind", l->host ? "peer service" : "application");
		rte_tel_data_add_dict_u64(c, "pid", l->pid);
		rte_tel_data_add_dict_u64(c, "host_id", l->host);
		rte_tel_data_add_dict_u64(c, "connections", TEL_LOAD(l->conns));
		/* Frames for it waiting for room in its ring; the most bytes
		 * that ever waited (what --queue-kb needs to be). */
		rte_tel_data_add_dict_u64(c, "queued_frames", TEL_LOAD(l->q.frames));
		rte_tel_data_add_dict_u64(c, "queue_peak_bytes", TEL_LOAD(l->q.peak_bytes));
		/* Frames (and bytes, headers included) it sent us and we
		 * put towards it, queued ones included. */
		rte_tel_data_add_dict_u64(c, "frames_in", TEL_LOAD(l->frames_in));
		rte_tel_data_add_dict_u64(c, "bytes_in", TEL_LOAD(l->bytes_in));
		rte_tel_data_add_dict_u64(c, "frames_out", TEL_LOAD(l->frames_out));
		rte_tel_data_add_dict_u64(c, "bytes_out", TEL_LOAD(l->bytes_out));
		/* One channel pair: over verbs, one QP each way; an
		 * application's is shm, no QP. */
		rte_tel_data_add_dict_u64(c, "channel_pairs", 1);
		rte_tel_data_add_dict_u64(c, "qps", l->host != 0 ? 2 : 0);
		rte_tel_data_add_dict_container(d, key, c, 0);
	}
	pthread_mutex_unlock(&S.lock);
	return 0;
}

static void
usage(FILE *f, const char *prog)
{
	fprintf(f,
"usage: %s [EAL args] -- [options]\n"
"\n"
"The host service: applications started as secondaries of it (the same\n"
"--file-prefix, --proc-type=secondary) join with rb2_conn_service_join() and\n"
"open connections through it.\n"
"\n"
"  --max-relays N       connections through the service at once (default 16384,\n"
"                       at most 32767)\n"
"  --max-loans N        buffers lent through the service at once (default 4096,\n"
"                       at most 65535); beyond, lenders wait\n"
"  --host-id N          this host's id in connects (default: the --listen IPv4\n"
"                       address as a number; applications may also use 0)\n"
"  --listen IP:PORT     where peer services connect to this one\n"
"  --peer [ID@]IP:PORT  a peer service (its --listen; ID: its --host-id, by\n"
"                       default its address); repeat for more\n"
"  --transport SPEC     the transport to peers (default verbs; RB2_VERBS_ARGS),\n"
"                       e.g. verbs,dev=rxe0,srq=4096\n"
"  --peer-sync H+T      the peer links' sync policy: head push|pull, tail\n"
"                       wt|imm|poll (default push+wt; every service must use\n"
"                       the same). With imm, receives come from the device's\n"
"                       shared receive queue where the transport has srq=N\n"
"  --queue-kb N         frames for a destination whose ring is full wait in a\n"
"                       queue of N KiB of its own, so that their source goes on\n"
"                       with its other connections (default 4096; 0: none, the\n"
"                       source waits)\n"
"  --help\n", prog);
}

/* Every numeric option's range (app_opt.h). */
static const struct app_num_opt num_opts[] = {
	{'r', 1, 32767}, {'l', 1, 65535}, {'H', 0, UINT32_MAX}, {'Q', 0, 1024 * 1024},
	{0, 0, 0},
};

/* The options after '--' (also told apart before it: rb2_app_run()). */
static const struct option lo[] = {
	{"max-relays", required_argument, NULL, 'r'},
	{"max-loans", required_argument, NULL, 'l'},
	{"host-id", required_argument, NULL, 'H'},
	{"listen", required_argument, NULL, 'L'},
	{"peer", required_argument, NULL, 'P'},
	{"transport", required_argument, NULL, 'T'},
	{"queue-kb", required_argument, NULL, 'Q'},
	{"peer-sync", required_argument, NULL, 'S'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

/* Everything after the EAL's start: @return the exit status. */
static int
raasd_main(int argc, char **argv)
{
	const char *listen = NULL, *spec = NULL, *peers[16];
	unsigned int npeers = 0;
	struct rb2_xport *pxp = NULL;
	struct rte_ring *ring;
	struct rb2_xport *xp;
	int opt;

	S.max_relays = 16384;
	S.max_loans = 4096;
	S.queue_cap = 4096 * 1024;
	pthread_mutex_init(&S.lock, NULL);
	while ((opt = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		uint64_t v = 0;

		if (optarg != NULL && app_opt_num("rb2-raasd", lo, num_opts, opt, optarg, &v) < 0)
			return 2;
		switch (opt) {
		case 'r':
			S.max_relays = (uint32_t)v;
			break;
		case 'l':
			S.max_loans = (uint32_t)v;
			break;
		case 'H':
			S.host_id = (uint32_t)v;
			break;
		case 'L':
			listen = optarg;
			break;
		case 'P':
			if (npeers == RTE_DIM(peers)) {
				fprintf(stderr, "rb2-raasd: at most %zu --peer\n", RTE_DIM(peers));
				return 2;
			}
			peers[npeers++] = optarg;
			break;
		case 'T':
			spec = optarg;
			break;
		case 'S': {
			const char *plus = strchr(optarg, '+');

			if (plus == NULL || (strncmp(optarg, "push+", 5) != 0 &&
					     strncmp(optarg, "pull+", 5) != 0) ||
			    (strcmp(plus + 1, "wt") != 0 && strcmp(plus + 1, "imm") != 0 &&
			     strcmp(plus + 1, "poll") != 0)) {
				fprintf(stderr, "rb2-raasd: --peer-sync %s: expected HEAD+TAIL, "
					"HEAD push or pull, TAIL wt, imm or poll (push+imm)\n", optarg);
				return 2;
			}
			S.peer_head = strncmp(optarg, "pull+", 5) == 0 ? RB2_HEAD_LAZY_PULL :
				RB2_HEAD_LAZY_PUSH;
			S.peer_tail = strcmp(plus + 1, "imm") == 0 ? RB2_TAIL_WRITE_IMM :
				strcmp(plus + 1, "poll") == 0 ? RB2_TAIL_POLL_MSG :
				RB2_TAIL_WRITE_TWICE;
			break;
		}
		case 'Q': {
			uint64_t kb = v;

			if (kb != 0 && kb < 256) {
				fprintf(stderr, "rb2-raasd: --queue-kb %s: 0 (none) or 256..1048576 "
					"(a queue holds at least two of the largest frames)\n", optarg);
				return 2;
			}
			S.queue_cap = (uint32_t)kb * 1024;
			break;
		}
		case 'h':
			usage(stdout, argv[0]);
			return 0;
		default:
			usage(stderr, argv[0]);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "rb2-raasd: unexpected argument '%s' (options start with --; "
			"rb2-raasd --help)\n", argv[optind]);
		return 2;
	}
	/* Its applications map its memory: DPDK shares only hugepage files. */
	if (!rte_eal_has_hugepages()) {
		fprintf(stderr, "rb2-raasd: --no-huge: its applications could not map its memory "
			"(DPDK multi-process shares hugepages): reserve some (usertools/"
			"rb2-hugepages.sh 1024) and drop --no-huge\n");
		return 2;
	}
	if (listen != NULL && !addr_ok(listen)) {
		fprintf(stderr, "rb2-raasd: --listen %s: IPv4:PORT expected, the port 1..65535\n",
			listen);
		return 2;
	}
	if (npeers > 0 && listen == NULL) {
		fprintf(stderr, "rb2-raasd: --peer needs --listen (where the peer connects back)\n");
		return 2;
	}
	if (S.host_id == 0 && listen != NULL && parse_peer(listen, &S.host_id, (char[64]){0}, 64) < 0) {
		fprintf(stderr, "rb2-raasd: --listen %s: IP:PORT (or give --host-id)\n", listen);
		return 2;
	}
	if (rte_eal_process_type() != RTE_PROC_PRIMARY) {
		fprintf(stderr, "rb2-raasd: must be the primary process of its group\n");
		return 2;
	}
	S.relays = calloc(S.max_relays, sizeof(*S.relays));
	S.free_idx = calloc(S.max_relays, sizeof(*S.free_idx));
	for (uint32_t i = 0; i < S.max_relays; i++)
		S.free_idx[i] = S.max_relays - 1 - i;
	S.nfree = S.max_relays;
	S.loans = calloc(S.max_loans, sizeof(*S.loans));
	S.loan_free = calloc(S.max_loans, sizeof(*S.loan_free));
	S.reading = calloc(S.max_loans, sizeof(*S.reading));
	for (uint32_t i = 0; i < S.max_loans; i++)
		S.loan_free[i] = S.max_loans - 1 - i;
	S.nloan_free = S.max_loans;
	ring = rte_ring_create(RB2_CONN_SERVICE_RING, 64, rte_socket_id(), RING_F_SC_DEQ);
	xp = rb2_xport_open("shm", NULL);
	if (ring == NULL || xp == NULL || S.relays == NULL || S.free_idx == NULL ||
	    S.loans == NULL || S.loan_free == NULL || S.reading == NULL) {
		fprintf(stderr, "rb2-raasd: cannot start: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	rte_telemetry_register_cmd("/rb2/raasd/info", tel_info,
		"Returns the service's applications, relays and counters. Takes no parameters");
	rte_telemetry_register_cmd("/rb2/raasd/links", tel_links,
		"Returns each application and peer service linked, with its connections. Takes no parameters");
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	/* A --transport is opened now, peers or not: one it cannot open is
	 * refused at start, not when a peer first needs it. */
	if (npeers > 0 || spec != NULL) {
		pxp = spec != NULL ? rb2_xport_open_spec(spec) :
			rb2_xport_open("verbs", getenv("RB2_VERBS_ARGS"));
		if (pxp == NULL) {
			fprintf(stderr, "rb2-raasd: --transport %s: cannot open it: %s (the "
				"log above says why)\n", spec != NULL ? spec : "verbs",
				rte_strerror(rte_errno));
			return 1;
		}
	}
	for (unsigned int i = 0; i < npeers; i++) {
		char addr[64];
		uint32_t id;

		if (parse_peer(peers[i], &id, addr, sizeof(addr)) < 0 || id == S.host_id) {
			fprintf(stderr, "rb2-raasd: --peer %s: [ID@]IP:PORT, ID not this host's\n",
				peers[i]);
			return 2;
		}
		if (peer_link(pxp, id, addr, listen) < 0)
			return 1;
	}
	printf("rb2-raasd: ready (pid %d, host %u): %u relays, %u peer(s)\n", (int)getpid(),
	       S.host_id, S.max_relays, npeers);
	fflush(stdout);
	while (!S.stop) {
		void *req = NULL;

		/* Worker and Poller in one loop: take joins, then each link's
		 * frames (relayed as they come), then flush. */
		while (rte_ring_dequeue(ring, &req) == 0)
			join(xp, (struct rb2_conn_service_join *)req);
		/* What waits for a destination goes before anything new. */
		for (unsigned int i = 0; i < S.nlinks; i++)
			link_drain(S.links[i]);
		for (unsigned int i = 0; i < S.nlinks; i++) {
			struct link *l = S.links[i];

			int err = rb2_conn_ep_poll(l->ep);

			if (err >= 0 || link_gone(l, err) < 0)
				continue;
			link_settle(l);
			rb2_conn_ep_destroy(l->ep);
			pthread_mutex_lock(&S.lock);
			S.links[i--] = S.links[--S.nlinks];
			pthread_mutex_unlock(&S.lock);
			link_free(l);
		}
		/* Our READs for applications; then the answers about lent
		 * buffers, and what was relayed onto links polled before it,
		 * out now. */
		if (S.nreading > 0)
			reads_poll();
		for (unsigned int i = 0; i < S.nlinks; i++) {
			if (S.links[i]->refdone.n + S.links[i]->readdone.n > 0)
				owed_flush(S.links[i]);
			rb2_conn_flush(S.links[i]->ep);
		}
	}
	printf("rb2-raasd: stopping: %u link(s) (applications and peers), %" PRIu64 " frames relayed"
	       ", %" PRIu64 " of them queued for a full destination, a source held %" PRIu64
	       " time(s)\n", S.nlinks, S.relayed, S.queued_all, S.held);
	printf("rb2-raasd: lent buffers: %" PRIu64 " lent (%" PRIu64 " bytes); %" PRIu64
	       " copied here, lender to reader; %" PRIu64 " READ from peers (%" PRIu64
	       " bytes); %" PRIu64 " given back unread or failed; %" PRIu64 " bad frame(s)\n",
	       S.lent, S.lent_bytes, S.copied_here, S.reads, S.read_bytes, S.loans_failed,
	       S.bad_lends);
	for (unsigned int i = 0; i < S.nlinks; i++) {
		struct rb2_mr_cache *c[2] = { S.links[i]->tx_cache, S.links[i]->rx_cache };

		for (int k = 0; k < 2; k++) {
			struct rb2_mr_cache_stats st;

			if (c[k] == NULL)
				continue;
			rb2_mr_cache_stats_get(c[k], &st);
			printf("rb2-raasd: registrations %s: %" PRIu64 " gets, %" PRIu64 " hits, %"
			       PRIu64 " misses, %" PRIu64 " registrations, %" PRIu64 " evictions\n",
			       rb2_mr_cache_name(c[k]), st.gets, st.hits, st.misses,
			       st.registrations, st.evictions);
		}
	}
	for (unsigned int i = 0; i < S.nlinks; i++)
		link_settle(S.links[i]);
	for (unsigned int i = 0; i < S.nlinks; i++) {
		rb2_conn_ep_destroy(S.links[i]->ep);
		link_free(S.links[i]);
	}
	rte_ring_free(ring);
	rb2_xport_close(xp);
	if (pxp != NULL)
		rb2_xport_close(pxp);
	return 0;
}

/* The usage with the name it is installed under. */
static void
app_usage(FILE *f)
{
	usage(f, "rb2-raasd");
}

int
main(int argc, char **argv)
{
	const struct rb2_app app = { .name = "rb2-raasd", .usage = app_usage, .options = lo };

	return rb2_app_run(&app, argc, argv, raasd_main);
}
