/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * The relay core: lent buffers passed on as loans (rb2_conn_relay_pvt.h,
 * RaaS's registered sends). Every loan ends with exactly one REFDONE to its
 * lender; a reader's READREQ is served by one copy here (lender and reader
 * on this host) or one RDMA READ from the lender's host.
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

#include "rb2_conn_relay_pvt.h"
#include "rb2_conn_service.h"

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
		__rb2_relay_owe(ln->lender, &ln->lender->refdone, ln->lender_id, status, "REFDONE");
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

void
__rb2_relay_bad_lend(struct rb2_conn_relay *R, struct link *from, const char *what)
{
	uint64_t n = __atomic_add_fetch(&R->bad_lends, 1, __ATOMIC_RELAXED);

	if ((n & (n - 1)) == 0)                 /* at powers of two */
		RELAY_ERR(R, "%s: %s (%" PRIu64 " such frame(s) so far)\n",
			from->name, what, n);
}

/* A lent buffer that cannot go on (see peer_cache()): the lender has it
 * back, and the connection is reset at both ends, with the reason. */
static int
lend_fail(struct rb2_conn_relay *R, struct link *from, struct relay *r, int side, uint32_t tag)
{
	__rb2_relay_owe(from, &from->refdone, tag, -ECONNABORTED, "REFDONE");
	__atomic_fetch_add(&R->loans_failed, 1, __ATOMIC_RELAXED);
	__rb2_relay_send_ctrl(R, from, r->cd[side], RB2_CONN_FR_RST, RB2_CONN_RST_LEND);
	if (r->l[!side] != NULL && r->cd[!side] != UINT32_MAX)
		__rb2_relay_send_ctrl(R, r->l[!side], r->cd[!side], RB2_CONN_FR_RST, RB2_CONN_RST_LEND);
	__atomic_fetch_add(&R->resets, 1, __ATOMIC_RELAXED);
	__rb2_relay_free(R, r);
	return 0;
}

/*
 * A REF frame on relay @p r from side @p side: a buffer lent. Made a loan
 * and passed on: to a peer service with the buffer registered for its
 * READ; to an application with its length only (struct loan).
 * @return 0, or -EAGAIN (no loan, registration or room now: offered again).
 */
int
__rb2_relay_lend_in(struct rb2_conn_relay *R, struct link *from, struct relay *r, int side, const uint8_t *f, uint32_t len)
{
	uint8_t out[RB2_CONN_HDR_LEN + RB2_BULK_REF_SIZE(RB2_BULK_MAX_SEGS)];
	struct link *to = r->l[!side];
	struct rb2_bulk_ref ref, fwd;
	struct loan *ln;
	uint64_t h;
	int ret;

	if (!rb2_bulk_ref_valid(f + RB2_CONN_HDR_LEN, len - RB2_CONN_HDR_LEN)) {
		/* No id to answer: the lender's connection waits for credit. */
		__rb2_relay_bad_lend(R, from, "dropped a REF frame that describes no buffer");
		return 0;
	}
	memcpy(&ref, f + RB2_CONN_HDR_LEN, len - RB2_CONN_HDR_LEN);
	if (from->host == 0 && (ref.nsegs != 1 || ref.segs[0].rkey != 0 ||
				!rb2_conn_service_shared((void *)(uintptr_t)ref.segs[0].addr,
							 ref.len))) {
		__rb2_relay_bad_lend(R, from, "a lent buffer outside the process group's shared memory: its connection is reset");
		return lend_fail(R, from, r, side, ref.tag);
	}
	if (to == NULL || r->cd[!side] == UINT32_MAX) {
		__rb2_relay_owe(from, &from->refdone, ref.tag, -ECONNABORTED, "REFDONE");
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
	ret = __rb2_relay_link_put(R, to, out, RB2_CONN_HDR_LEN + RB2_BULK_REF_SIZE(fwd.nsegs));
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
int
__rb2_relay_refdone_in(struct rb2_conn_relay *R, struct link *from, const uint8_t *f, uint32_t len, uint16_t n)
{
	if (n == 0 || len != RB2_CONN_HDR_LEN + n * sizeof(struct rb2_conn_refdone)) {
		__rb2_relay_bad_lend(R, from, "a REFDONE frame whose count and length disagree");
		return 0;
	}
	for (uint16_t i = 0; i < n; i++) {
		struct rb2_conn_refdone d;
		struct loan *ln;

		memcpy(&d, f + RB2_CONN_HDR_LEN + i * sizeof(d), sizeof(d));
		ln = loan_of(R, d.id);
		if (ln == NULL || ln->borrower != from || ln->reading) {
			__rb2_relay_bad_lend(R, from, "a REFDONE for no buffer it borrowed");
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
		__rb2_relay_owe(ln->borrower, &ln->borrower->readdone, ln->reader_id, status, "READDONE");
}

/*
 * An application asks us to READ the buffer it borrowed into its own
 * (shared memory): copied once, here, from a lender here; READ from a
 * lender across the wire straight into it. @return 0, or -EAGAIN (no
 * registration now: asked again).
 */
int
__rb2_relay_readreq_in(struct rb2_conn_relay *R, struct link *from, const uint8_t *f, uint32_t len)
{
	struct rb2_conn_readreq q;
	struct rb2_mr_cache *c;
	struct loan *ln;
	void *dst;
	int ret;

	if (from->host != 0 || len != RB2_CONN_HDR_LEN + sizeof(q)) {
		__rb2_relay_bad_lend(R, from, "a READREQ frame from a peer service, or of the wrong size");
		return 0;
	}
	memcpy(&q, f + RB2_CONN_HDR_LEN, sizeof(q));
	ln = loan_of(R, q.id);
	dst = (void *)(uintptr_t)q.dst;
	if (ln == NULL || ln->borrower != from || ln->reading) {
		__rb2_relay_bad_lend(R, from, "a READREQ for no buffer it borrowed");
		__rb2_relay_owe(from, &from->readdone, q.id, -EINVAL, "READDONE");
		return 0;
	}
	if (q.len != ln->ref.len || !rb2_conn_service_shared(dst, q.len)) {
		__rb2_relay_bad_lend(R, from, "a READREQ into memory outside the process group's shared memory, or of the wrong length");
		__rb2_relay_owe(from, &from->readdone, q.id, -EFAULT, "READDONE");
		return 0;
	}
	if (ln->lender == NULL) {
		__rb2_relay_owe(from, &from->readdone, q.id, -ECONNRESET, "READDONE");
		return 0;
	}
	if (ln->lender->host == 0) {
		/* Both here: one copy, from the lender's buffer to the reader's. */
		memcpy(dst, (const void *)(uintptr_t)ln->ref.segs[0].addr, ln->ref.len);
		__atomic_fetch_add(&R->copied_here, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&R->copied_bytes, ln->ref.len, __ATOMIC_RELAXED);
		__rb2_relay_owe(from, &from->readdone, q.id, 0, "READDONE");
		return 0;
	}
	c = peer_cache(ln->lender, 0);
	ret = c == NULL ? -ENOTSUP :
		rb2_bulk_read_start(ln->lender->ep->rx, c, &ln->ref, dst, q.len, &ln->rd);
	if (ret == -EAGAIN)
		return ret;
	if (ret < 0) {
		__rb2_relay_owe(from, &from->readdone, q.id, ret, "READDONE");
		return 0;
	}
	ln->reading = 1;
	ln->reader_id = q.id;
	R->reading[R->nreading++] = (uint32_t)(ln - R->loans);
	return 0;
}

/* Our READs that completed (each pass). */
void
__rb2_relay_reads_poll(struct rb2_conn_relay *R)
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
void
__rb2_relay_link_settle(struct rb2_conn_relay *R, struct link *l)
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
