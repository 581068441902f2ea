/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Large messages by reference on a connection (rb2_conn_ref.h): the
 * sender's lent buffers, the receiver's READs, and the REFDONE frames that
 * give buffers back. The READ itself, the descriptor and the registrations
 * are rb2_bulk.h's pieces.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_malloc.h>

#include <rb2_bulk.h>
#include <rb2_mr_cache.h>

#include "rb2_conn_ref.h"
#include "rb2_conn_pvt.h"
#include "rb2_conn_service.h"

/* READs in flight at once per endpoint: one per connection whose
 * application is receiving a lent message. */
#define REF_READS_MAX 32u

struct lent {
	uint32_t id;                 /* gen << 16 | index, gen 1..65535 */
	uint8_t used;                /* lent, not given back yet */
	int status;                  /* given back with this status */
	unsigned int nsegs;
	uint64_t cookie;
	struct rb2_mr_seg segs[RB2_BULK_MAX_SEGS];
};

struct reading {
	uint32_t cd;                 /* the connection receiving */
	struct rb2_bulk_read rd;     /* dst, len; the rest for our own READ */
	/* Through a service, which READs for us (READREQ, READDONE): */
	uint8_t by_service, over;
	int status;                  /* the READDONE's, once over */
	uint32_t id;                 /* the lent buffer's, as the REF named it */
	void *bounce;                /* shared memory the READ lands in, when
				      * the application's buffer is not */
	size_t bounce_len;
};

struct rb2_conn_refs {
	struct rb2_mr_cache *tx_cache, *rx_cache;
	uint8_t own_tx, own_rx, tx_tried, rx_tried, said_copy, said_noread, said_unshared;
	uint32_t ref_min;
	uint32_t max_refs;
	/* Sender: the lending slots, a stack of free ones, and the slots
	 * given back, waiting for rb2_conn_ref_done() (a FIFO; a slot is free
	 * again once reaped, so it never holds more than max_refs). */
	struct lent *lent;
	uint32_t *free_idx;
	uint32_t n_free;
	uint32_t *done;
	uint32_t done_head, n_done;
	/* Receiver: REFDONE entries owed to the peer (ep->n_refdone_owed of
	 * them), and the READs in flight. */
	struct rb2_conn_refdone *owed;
	uint32_t cap_owed;
	/* The last bounce buffer given back, kept for the next: rte_malloc()
	 * of a large block in a secondary can ask the primary for memory,
	 * which measured slower than the READ itself. */
	void *spare;
	size_t spare_len;
	uint32_t n_reading;
	struct reading reading[REF_READS_MAX];
};

void
rb2_conn_ref_params_init(struct rb2_conn_ref_params *p)
{
	memset(p, 0, sizeof(*p));
	p->ref_min = RB2_CONN_REF_MIN_DEFAULT;
	p->max_refs = 64;
}

static struct rb2_conn_refs *
refs_new(struct rb2_conn_ep *ep, const struct rb2_conn_ref_params *p)
{
	struct rb2_conn_refs *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return NULL;
	r->ref_min = p->ref_min;
	r->max_refs = p->max_refs;
	r->lent = calloc(p->max_refs, sizeof(*r->lent));
	r->free_idx = calloc(p->max_refs, sizeof(*r->free_idx));
	r->done = calloc(p->max_refs, sizeof(*r->done));
	if (r->lent == NULL || r->free_idx == NULL || r->done == NULL) {
		free(r->lent);
		free(r->free_idx);
		free(r->done);
		free(r);
		return NULL;
	}
	for (uint32_t i = 0; i < p->max_refs; i++)
		r->free_idx[i] = p->max_refs - 1 - i;
	r->n_free = p->max_refs;
	r->tx_cache = p->tx_cache;
	r->rx_cache = p->rx_cache;
	/* Caches of our own are made when first needed: a receiver never
	 * registers to send, nor a sender to receive. */
	r->tx_tried = r->tx_cache != NULL;
	r->rx_tried = r->rx_cache != NULL;
	ep->refs = r;
	return r;
}

/* A cache's name in telemetry: conn-tx.<endpoint>. */
static const char *
cache_name(const struct rb2_conn_ep *ep, const char *half, char name[RB2_MR_CACHE_NAMESIZE])
{
	snprintf(name, RB2_MR_CACHE_NAMESIZE, "conn-%s.%.23s", half, ep->name);
	return name;
}

/* The endpoint's lending state, with the defaults if it has none yet. */
static struct rb2_conn_refs *
refs_of(struct rb2_conn_ep *ep)
{
	struct rb2_conn_ref_params p;

	if (likely(ep->refs != NULL))
		return ep->refs;
	rb2_conn_ref_params_init(&p);
	return refs_new(ep, &p);
}

int
rb2_conn_ref_setup(struct rb2_conn_ep *ep, const struct rb2_conn_ref_params *p)
{
	if (ep->refs != NULL)
		return -EBUSY;
	if (p->max_refs == 0 || p->max_refs > 65536) {
		CONN_LOG(ERR, "endpoint %s: max_refs %u: 1 to 65536 buffers lent at once",
			 ep->name, p->max_refs);
		return -EINVAL;
	}
	return refs_new(ep, p) != NULL ? 0 : -ENOMEM;
}

void
__rb2_conn_refs_destroy(struct rb2_conn_ep *ep)
{
	struct rb2_conn_refs *r = ep->refs;

	if (r == NULL)
		return;
	/* READs in flight land in the applications' buffers: wait for them
	 * (a failed channel READs no more). A service's were waited for
	 * already (__rb2_conn_ref_quiesce()). */
	rte_free(r->spare);
	for (uint32_t i = 0; i < r->n_reading; i++) {
		if (r->reading[i].by_service) {
			if (r->reading[i].over)     /* else the service may write it */
				rte_free(r->reading[i].bounce);
			continue;
		}
		while (rb2_bulk_read_poll(ep->rx, r->rx_cache, &r->reading[i].rd) == -EINPROGRESS)
			;
	}
	for (uint32_t i = 0; i < r->max_refs; i++)
		if (r->lent[i].used)
			rb2_mr_cache_put(r->tx_cache, r->lent[i].segs, r->lent[i].nsegs);
	if (r->own_tx)
		rb2_mr_cache_destroy(r->tx_cache);
	if (r->own_rx)
		rb2_mr_cache_destroy(r->rx_cache);
	free(r->lent);
	free(r->free_idx);
	free(r->done);
	free(r->owed);
	free(r);
	ep->refs = NULL;
}

/* ---- sending ------------------------------------------------------------ */

/* Put the descriptor @ref of a buffer lent on @cd (@nheld registered
 * segments, held in the next free slot's segs) in @desc, reserved for
 * it, and send it. @return 1 (lent), or the flush's error. */
static int
lend(struct rb2_conn_ep *ep, struct rb2_conn_refs *r, int cd, uint8_t *desc,
     struct rb2_bulk_ref *ref, unsigned int nheld, size_t len, uint64_t cookie)
{
	uint32_t idx = r->free_idx[--r->n_free];
	struct lent *l = &r->lent[idx];
	uint32_t dlen = RB2_BULK_REF_SIZE(ref->nsegs);
	int ret;

	/* The generation tells a late REFDONE from the slot's next buffer. */
	l->id = ((l->id >> 16) % 0xffffu + 1) << 16 | idx;
	l->used = 1;
	l->nsegs = nheld;
	l->cookie = cookie;
	ref->tag = l->id;
	memcpy(desc, ref, dlen);
	__rb2_conn_commit(ep, cd, desc, dlen, RB2_CONN_HDR_LEN, RB2_CONN_FR_REF);
	ep->tx_run_cid = RB2_CONN_CID_NONE;
	CONN_STAT_ADD(ep, ref_tx_msgs, 1);
	CONN_STAT_ADD(ep, ref_tx_bytes, len);
	atomic_store_explicit(&ep->ref_wire_bytes_tx, atomic_load_explicit(&ep->ref_wire_bytes_tx,
		memory_order_relaxed) + dlen, memory_order_relaxed);
	/* The receiver may start its READ now. */
	ret = rb2_tx_flush(ep->tx);
	return ret < 0 ? ret : 1;
}

/*
 * Lend through a service. The application has no verbs: its buffer is
 * named by its address in the process group's shared memory, where the
 * service sees it too (rb2_conn_service_shared()). The service registers
 * it for the peer service that READs it, or copies it once straight into
 * the reader's buffer when the reader is on this host. A buffer elsewhere
 * is copied through the ring, as on any transport that cannot lend.
 */
static int
send_ref_shared(struct rb2_conn_ep *ep, struct rb2_conn_refs *r, int cd, const void *buf,
		size_t len, uint64_t cookie)
{
	struct rb2_bulk_ref ref;
	uint8_t *desc;
	int ret;

	if (len > INT32_MAX)
		return -EMSGSIZE;
	if (!rb2_conn_service_shared(buf, len)) {
		if (!r->said_unshared) {
			r->said_unshared = 1;
			CONN_LOG(INFO, "endpoint %s: a buffer outside DPDK's shared memory cannot be lent through the service: copied through the ring (allocate large messages with rte_malloc() to lend them)",
				 ep->name);
		}
		return len > UINT32_MAX ? -EMSGSIZE : rb2_conn_send(ep, cd, buf, (uint32_t)len);
	}
	if (r->n_free == 0) {
		CONN_STAT_ADD(ep, ref_waits, 1);
		return -EAGAIN;
	}
	ep->tx_run_cid = RB2_CONN_CID_NONE;
	ret = __rb2_conn_reserve(ep, cd, RB2_BULK_REF_SIZE(1), &desc);
	if (ret < 0)
		return ret;
	ref.nsegs = 1;
	ref.len = len;
	ref.segs[0] = (struct rb2_bulk_seg){ .addr = (uint64_t)(uintptr_t)buf,
					     .len = (uint32_t)len, .rkey = 0 };
	return lend(ep, r, cd, desc, &ref, 0, len, cookie);
}

int
rb2_conn_send_ref(struct rb2_conn_ep *ep, int cd, const void *buf, size_t len, uint64_t cookie)
{
	struct rb2_conn_refs *r = refs_of(ep);
	char name[RB2_MR_CACHE_NAMESIZE];
	struct rb2_bulk_ref ref;
	uint8_t *desc;
	int n, ret;

	if (r == NULL)
		return -ENOMEM;
	if (ep->p.service && len >= r->ref_min)
		return send_ref_shared(ep, r, cd, buf, len, cookie);
	if (r->tx_cache == NULL && !r->tx_tried && len >= r->ref_min) {
		r->tx_tried = 1;
		r->tx_cache = rb2_bulk_cache_create(ep->tx, NULL, cache_name(ep, "tx", name));
		r->own_tx = r->tx_cache != NULL;
	}
	if (len < r->ref_min || r->tx_cache == NULL) {
		if (r->tx_tried && r->tx_cache == NULL && !r->said_copy) {
			r->said_copy = 1;
			CONN_LOG(INFO, "endpoint %s: transport '%s' cannot lend application memory to its peer; large messages are copied through the ring",
				 ep->name, rb2_xport_name(rb2_tx_xport(ep->tx)));
		}
		if (len > UINT32_MAX)
			return -EMSGSIZE;
		return rb2_conn_send(ep, cd, buf, (uint32_t)len);
	}
	if (len > INT32_MAX)
		return -EMSGSIZE;
	if (len == 0)
		return -EINVAL;         /* as a send: 0 from recv means the end */
	if (r->n_free == 0) {
		CONN_STAT_ADD(ep, ref_waits, 1);
		return -EAGAIN;
	}
	/* Room and credit for the descriptor first (the longest one: the
	 * commit says how long it is), so that nothing is registered for a
	 * message that cannot go. A REF frame always has its header (its
	 * type is there): no run may continue into it, nor from it. */
	ep->tx_run_cid = RB2_CONN_CID_NONE;
	ret = __rb2_conn_reserve(ep, cd, RB2_BULK_REF_SIZE(RB2_BULK_MAX_SEGS), &desc);
	if (ret < 0)
		return ret;
	/* Registered into the slot lend() takes. */
	n = rb2_bulk_ref_make(r->tx_cache, buf, len, &ref,
			      r->lent[r->free_idx[r->n_free - 1]].segs);
	if (n < 0) {
		if (n == -EAGAIN)
			CONN_STAT_ADD(ep, ref_waits, 1);
		return n;     /* the reservation lapses: nothing committed */
	}
	return lend(ep, r, cd, desc, &ref, (unsigned int)n, len, cookie);
}

/* Give lent buffer @l back with @status, for rb2_conn_ref_done(). */
static void
give_back(struct rb2_conn_ep *ep, struct rb2_conn_refs *r, struct lent *l, int status)
{
	if (l->nsegs != 0)
		rb2_mr_cache_put(r->tx_cache, l->segs, l->nsegs);
	r->done[(r->done_head + r->n_done++) % r->max_refs] = (uint32_t)(l - r->lent);
	l->used = 0;
	l->status = status;
	if (status == -ECONNABORTED || status == -ECONNRESET)
		CONN_STAT_ADD(ep, ref_discarded, 1);
}

void
__rb2_conn_refdone_in(struct rb2_conn_ep *ep, const uint8_t *body, uint32_t blen, uint16_t n)
{
	struct rb2_conn_refs *r = ep->refs;

	if (n == 0 || blen != n * sizeof(struct rb2_conn_refdone))
		return __rb2_conn_bad_frame(ep, "REFDONE count and length disagree", blen,
					    RB2_CONN_FR_REFDONE);
	for (uint32_t i = 0; i < n; i++) {
		struct rb2_conn_refdone d;
		struct lent *l;

		memcpy(&d, body + i * sizeof(d), sizeof(d));
		l = r != NULL && (d.id & 0xffff) < r->max_refs ? &r->lent[d.id & 0xffff] : NULL;
		if (l == NULL || !l->used || l->id != d.id ||
		    (d.status != 0 && d.status != -ECONNABORTED &&
		     !(ep->p.service && d.status == -ECONNRESET))) {
			__rb2_conn_bad_frame(ep, "REFDONE for no lent buffer", blen,
					     RB2_CONN_FR_REFDONE);
			continue;
		}
		give_back(ep, r, l, d.status);
	}
}

int
rb2_conn_ref_done(struct rb2_conn_ep *ep, struct rb2_conn_ref_done *done, unsigned int n)
{
	struct rb2_conn_refs *r = ep->refs;
	unsigned int k = 0;

	if (r == NULL)
		return 0;
	if (r->n_done == 0 && r->n_free != r->max_refs && ep->err == 0)
		rb2_conn_ep_poll(ep);
	/* A failed channel READs no more: every buffer still out is free. */
	if (ep->err != 0)
		for (uint32_t i = 0; i < r->max_refs; i++)
			if (r->lent[i].used)
				give_back(ep, r, &r->lent[i], ep->err);
	while (k < n && r->n_done != 0) {
		uint32_t idx = r->done[r->done_head];
		struct lent *l = &r->lent[idx];

		done[k++] = (struct rb2_conn_ref_done){ .cookie = l->cookie, .status = l->status };
		r->free_idx[r->n_free++] = idx;
		r->done_head = (r->done_head + 1) % r->max_refs;
		r->n_done--;
	}
	return (int)k;
}

/* ---- receiving ---------------------------------------------------------- */

void
__rb2_conn_refdone_owe(struct rb2_conn_ep *ep, uint32_t id, int status)
{
	struct rb2_conn_refs *r = refs_of(ep);

	if (r != NULL && ep->n_refdone_owed == r->cap_owed) {
		uint32_t cap = r->cap_owed ? 2 * r->cap_owed : 64;
		void *q = realloc(r->owed, cap * sizeof(*r->owed));

		if (q != NULL) {
			r->owed = q;
			r->cap_owed = cap;
		}
	}
	if (r == NULL || ep->n_refdone_owed == r->cap_owed) {
		/* The lender keeps that buffer until the channel goes. */
		CONN_LOG(ERR, "endpoint %s: out of memory to give lent buffer %#x back",
			 ep->name, id);
		return;
	}
	r->owed[ep->n_refdone_owed++] = (struct rb2_conn_refdone){ .id = id, .status = status };
	if (status != 0)
		CONN_STAT_ADD(ep, ref_discarded, 1);
}

int
__rb2_conn_refdone_send(struct rb2_conn_ep *ep)
{
	struct rb2_conn_refs *r = ep->refs;
	uint32_t sent = 0;

	while (sent < ep->n_refdone_owed) {
		uint32_t k = RTE_MIN(ep->n_refdone_owed - sent, RB2_CONN_REFDONES_PER_FRAME);

		if (__rb2_conn_frame_out(ep, RB2_CONN_CID_NONE, RB2_CONN_FR_REFDONE, (uint16_t)k,
					 r->owed + sent, k * sizeof(*r->owed)) < 0)
			break;
		sent += k;
	}
	memmove(r->owed, r->owed + sent, (ep->n_refdone_owed - sent) * sizeof(*r->owed));
	ep->n_refdone_owed -= sent;
	return ep->n_refdone_owed != 0 ? -EAGAIN : 0;
}

static struct reading *
reading_of(struct rb2_conn_refs *r, uint32_t cd)
{
	for (uint32_t i = 0; i < r->n_reading; i++)
		if (r->reading[i].cd == cd)
			return &r->reading[i];
	return NULL;
}

/* Wait for, or check, @rd's READ; once it is over, forget it. */
static int
reading_poll(struct rb2_conn_ep *ep, struct rb2_conn_refs *r, struct reading *rd, int wait)
{
	int ret;

	do
		ret = rb2_bulk_read_poll(ep->rx, r->rx_cache, &rd->rd);
	while (wait && ret == -EINPROGRESS);
	if (ret != -EINPROGRESS)
		*rd = r->reading[--r->n_reading];
	return ret;
}

/* The READ of the buffer @rec lends is over (@status): the record is
 * consumed either way, the lender told. @return its length, or @status. */
static int
ref_taken(struct rb2_conn_ep *ep, struct rb2_conn_slot *c, const uint8_t *rec, int status)
{
	const struct rb2_bulk_ref *ref = (const struct rb2_bulk_ref *)(rec + RB2_CONN_HDR_LEN);
	uint32_t dlen;

	memcpy(&dlen, rec, 4);
	__rb2_conn_refdone_owe(ep, ref->tag, status == 0 ? 0 : -ECONNABORTED);
	__rb2_conn_consumed(ep, c, rb2_conn_footprint(dlen));
	if (status != 0)
		return status;
	CONN_STAT_ADD(ep, ref_rx_msgs, 1);
	CONN_STAT_ADD(ep, ref_rx_bytes, ref->len);
	return (int)ref->len;
}

/* A bounce buffer of at least @len bytes of shared memory, or NULL. */
static void *
bounce_get(struct rb2_conn_refs *r, size_t len, size_t *got)
{
	void *p = r->spare;

	if (p != NULL && r->spare_len >= len) {
		*got = r->spare_len;
		r->spare = NULL;
		return p;
	}
	*got = RTE_ALIGN_CEIL(len, (size_t)64 << 10);
	return rte_malloc("rb2_conn_bounce", *got, RTE_CACHE_LINE_SIZE);
}

/* Done with bounce buffer @p of @len bytes: kept if it is the larger. */
static void
bounce_put(struct rb2_conn_refs *r, void *p, size_t len)
{
	if (p == NULL)
		return;
	if (r->spare != NULL && r->spare_len >= len) {
		rte_free(p);
		return;
	}
	rte_free(r->spare);
	r->spare = p;
	r->spare_len = len;
}

/*
 * Receive a lent message through a service: ask it to READ (READREQ) into
 * @buf, in place where @buf is shared memory, else into a bounce buffer
 * of shared memory that is then copied to @buf; -EINPROGRESS until its
 * READDONE comes. Each call polls the endpoint once, so that a caller
 * that only calls recv() still sees the answer.
 */
static int
ref_recv_service(struct rb2_conn_ep *ep, struct rb2_conn_refs *r, struct rb2_conn_slot *c,
		 const uint8_t *rec, void *buf, uint32_t cap)
{
	const struct rb2_bulk_ref *ref = (const struct rb2_bulk_ref *)(rec + RB2_CONN_HDR_LEN);
	struct rb2_conn_readreq q;
	struct reading *rd = reading_of(r, c->cd);
	int ret;

	if (rd != NULL && rd->rd.dst != buf)
		return -EBUSY;
	if (rd == NULL) {
		void *bounce = NULL;
		size_t blen = 0;

		if (ref->len > cap)
			return -EMSGSIZE;
		if (r->n_reading == REF_READS_MAX)
			return -EAGAIN;
		if (!rb2_conn_service_shared(buf, ref->len)) {
			bounce = bounce_get(r, ref->len, &blen);
			if (bounce == NULL)
				return -ENOMEM;     /* the heap may have room later */
		}
		q = (struct rb2_conn_readreq){ .id = ref->tag, .len = ref->len,
			.dst = (uint64_t)(uintptr_t)(bounce != NULL ? bounce : buf) };
		ret = __rb2_conn_frame_out(ep, RB2_CONN_CID_NONE, RB2_CONN_FR_READREQ, 0, &q,
					   sizeof(q));
		if (ret < 0) {
			bounce_put(r, bounce, blen);
			return ret;
		}
		rb2_tx_flush(ep->tx);
		rd = &r->reading[r->n_reading++];
		*rd = (struct reading){ .cd = c->cd, .by_service = 1, .id = ref->tag,
					.bounce = bounce, .bounce_len = blen };
		rd->rd.dst = buf;
		rd->rd.len = ref->len;
		CONN_STAT_ADD(ep, ref_reads, 1);
	}
	if (!rd->over) {
		rb2_conn_ep_poll(ep);
		rd = reading_of(r, c->cd);          /* the poll may move it */
		if (rd == NULL || !rd->over)
			return ep->err != 0 ? ep->err : -EINPROGRESS;
	}
	ret = rd->status;
	if (ret == 0 && rd->bounce != NULL)
		memcpy(buf, rd->bounce, rd->rd.len);
	bounce_put(r, rd->bounce, rd->bounce_len);
	*rd = r->reading[--r->n_reading];
	return ref_taken(ep, c, rec, ret);
}

void
__rb2_conn_readdone_in(struct rb2_conn_ep *ep, const uint8_t *body, uint32_t blen, uint16_t n)
{
	struct rb2_conn_refs *r = ep->refs;

	if (n == 0 || blen != n * sizeof(struct rb2_conn_refdone))
		return __rb2_conn_bad_frame(ep, "READDONE count and length disagree", blen,
					    RB2_CONN_FR_READDONE);
	for (uint32_t i = 0; i < n; i++) {
		struct rb2_conn_refdone d;
		struct reading *rd = NULL;

		memcpy(&d, body + i * sizeof(d), sizeof(d));
		for (uint32_t k = 0; r != NULL && k < r->n_reading; k++)
			if (r->reading[k].by_service && !r->reading[k].over &&
			    r->reading[k].id == d.id)
				rd = &r->reading[k];
		if (rd == NULL || d.status > 0) {
			__rb2_conn_bad_frame(ep, "READDONE for no READ asked", blen,
					     RB2_CONN_FR_READDONE);
			continue;
		}
		rd->over = 1;
		rd->status = d.status;
	}
}

/* Does the service READ into @cd's buffer (@cd -1: any connection's)? */
static int
service_reading(const struct rb2_conn_refs *r, int cd)
{
	for (uint32_t i = 0; i < r->n_reading; i++) {
		const struct reading *rd = &r->reading[i];

		if (rd->by_service && !rd->over && (cd < 0 || rd->cd == (uint32_t)cd))
			return 1;
	}
	return 0;
}

void
__rb2_conn_ref_quiesce(struct rb2_conn_ep *ep, int cd)
{
	struct rb2_conn_refs *r = ep->refs;
	uint64_t end = rte_get_timer_cycles() + 30 * rte_get_timer_hz();

	/* The service's READ lands in the application's buffer: not after
	 * the connection is gone. It ends in bounded time, or the link to
	 * the service fails (then nothing more comes from it). */
	while (r != NULL && ep->err == 0 && service_reading(r, cd)) {
		if (rte_get_timer_cycles() > end) {
			CONN_LOG(ERR, "endpoint %s: the service has not finished a READ into an application buffer in 30 s; going on without it",
				 ep->name);
			return;
		}
		rb2_conn_ep_poll(ep);
	}
}

int
__rb2_conn_ref_recv(struct rb2_conn_ep *ep, struct rb2_conn_slot *c, const uint8_t *rec,
		    void *buf, uint32_t cap)
{
	const struct rb2_bulk_ref *ref = (const struct rb2_bulk_ref *)(rec + RB2_CONN_HDR_LEN);
	struct rb2_conn_refs *r = refs_of(ep);
	char name[RB2_MR_CACHE_NAMESIZE];
	struct reading *rd;
	int ret;

	if (r == NULL)
		return -ENOMEM;
	if (ep->p.service)
		return ref_recv_service(ep, r, c, rec, buf, cap);
	rd = reading_of(r, c->cd);
	if (rd != NULL && rd->rd.dst != buf)
		return -EBUSY;
	if (rd == NULL) {
		if (ref->len > cap)
			return -EMSGSIZE;
		if (r->rx_cache == NULL && !r->rx_tried) {
			r->rx_tried = 1;
			r->rx_cache = rb2_bulk_cache_create(NULL, ep->rx,
							    cache_name(ep, "rx", name));
			r->own_rx = r->rx_cache != NULL;
		}
		if (r->rx_cache == NULL) {
			/* The sender's transport lends, ours cannot READ:
			 * the two ends disagree about the channel. Said
			 * once; closing the connection gives it back. */
			if (!r->said_noread) {
				r->said_noread = 1;
				CONN_LOG(ERR, "endpoint %s: connection %#x: the peer lent a buffer, but transport '%s' cannot READ it",
					 ep->name, c->cd, rb2_xport_name(rb2_rx_xport(ep->rx)));
			}
			return -EPROTO;
		}
		if (r->n_reading == REF_READS_MAX)
			return -EAGAIN;
		rd = &r->reading[r->n_reading];
		ret = rb2_bulk_read_start(ep->rx, r->rx_cache, ref, buf, cap, &rd->rd);
		if (ret < 0)
			return ret;
		rd->cd = c->cd;
		r->n_reading++;
		CONN_STAT_ADD(ep, ref_reads, (uint64_t)ret);
	}
	ret = reading_poll(ep, r, rd, 0);
	if (ret < 0)
		return ret;
	return ref_taken(ep, c, rec, 0);
}

void
__rb2_conn_ref_discard(struct rb2_conn_ep *ep, struct rb2_conn_slot *c, const uint8_t *rec)
{
	const struct rb2_bulk_ref *ref = (const struct rb2_bulk_ref *)(rec + RB2_CONN_HDR_LEN);
	struct rb2_conn_refs *r = ep->refs;
	struct reading *rd = r != NULL ? reading_of(r, c->cd) : NULL;

	/* Its READ lands in the application's buffer: not after close (a
	 * service's READ was waited for before, __rb2_conn_ref_quiesce()). */
	if (rd != NULL && rd->by_service) {
		if (rd->over)                   /* else the service may still write it */
			bounce_put(r, rd->bounce, rd->bounce_len);
		*rd = r->reading[--r->n_reading];
	} else if (rd != NULL) {
		reading_poll(ep, r, rd, 1);
	}
	__rb2_conn_refdone_owe(ep, ref->tag, -ECONNABORTED);
}

int
rb2_conn_ref_forget(struct rb2_conn_ep *ep, void *buf, size_t len)
{
	struct rb2_conn_refs *r = ep->refs;
	uintptr_t a = (uintptr_t)buf;

	if (r == NULL)
		return 0;
	for (uint32_t i = 0; i < r->max_refs; i++) {
		const struct lent *l = &r->lent[i];

		if (!l->used)
			continue;
		for (unsigned int s = 0; s < l->nsegs; s++)
			if ((uintptr_t)l->segs[s].addr < a + len &&
			    a < (uintptr_t)l->segs[s].addr + l->segs[s].len)
				return -EBUSY;
	}
	for (uint32_t i = 0; i < r->n_reading; i++) {
		const struct rb2_bulk_read *rd = &r->reading[i].rd;

		if ((uintptr_t)rd->dst < a + len && a < (uintptr_t)rd->dst + rd->len)
			return -EBUSY;
	}
	if (r->tx_cache != NULL)
		rb2_mr_cache_invalidate(r->tx_cache, buf, len);
	if (r->rx_cache != NULL)
		rb2_mr_cache_invalidate(r->rx_cache, buf, len);
	return 0;
}

struct rb2_mr_cache *
rb2_conn_ref_tx_cache(const struct rb2_conn_ep *ep)
{
	return ep->refs != NULL ? ep->refs->tx_cache : NULL;
}

struct rb2_mr_cache *
rb2_conn_ref_rx_cache(const struct rb2_conn_ep *ep)
{
	return ep->refs != NULL ? ep->refs->rx_cache : NULL;
}
