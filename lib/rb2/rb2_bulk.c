/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Large messages from application memory (rb2_bulk.h): the descriptor in the
 * ring, the sender's lent buffers, the receiver's READs.
 *
 * Wire format of a bulk channel's messages (little-endian, as the ring's):
 *
 *   struct bulk_hdr   kind, segment count, payload length
 *   inline:           the payload follows the header
 *   by reference:     a struct rb2_bulk_ref (its tag the kind): nsegs
 *                     segments {addr, len, rkey} follow the same header
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <rte_errno.h>
#include <rte_malloc.h>

#include <rb2_mr_cache.h>

#include "rb2_bulk.h"
#include "rb2_chan_pvt.h"

#define BULK_INLINE 0x4c4e4942u /* "BINL" */
#define BULK_REF 0x46455242u    /* "BREF" */

struct bulk_hdr {
	uint32_t kind;   /* BULK_INLINE or BULK_REF */
	uint32_t nsegs;  /* BULK_REF: segments that follow */
	uint64_t len;    /* payload bytes */
};

static_assert(sizeof(struct bulk_hdr) == 16 && sizeof(struct rb2_bulk_seg) == 16 &&
	      sizeof(struct rb2_bulk_ref) == RB2_BULK_REF_SIZE(RB2_BULK_MAX_SEGS),
	      "bulk descriptors are wire format");

/* A buffer lent to the receiver: free once the head passes @end. */
struct bulk_lent {
	uint64_t end;            /* the ring position after its descriptor */
	uint64_t cookie;
	unsigned int nsegs;
	struct rb2_mr_seg segs[RB2_BULK_MAX_SEGS];
};

struct rb2_bulk_tx {
	struct rb2_tx *tx;
	struct rb2_mr_cache *cache;  /* NULL: copy everything */
	int own_cache;
	uint32_t inline_max;
	uint32_t max_refs;           /* a power of two: the ring of lent buffers */
	uint64_t lent_head, lent_tail;
	struct rb2_bulk_stats st;
	struct bulk_lent *lent;
};

struct rb2_bulk_rx {
	struct rb2_rx *rx;
	struct rb2_mr_cache *cache;  /* NULL: the sender never lends */
	int own_cache;
	struct rb2_bulk_read rd;     /* the READ in flight (rd.dst != NULL) */
	struct rb2_msg msg;          /* its descriptor, held in the ring */
	struct rb2_bulk_stats st;
};

void
rb2_bulk_params_init(struct rb2_bulk_params *p)
{
	memset(p, 0, sizeof(*p));
	p->inline_max = RB2_BULK_INLINE_MAX_DEFAULT;
	p->max_refs = 64;
}

/*
 * Registered segments of [@addr, @addr + @len), at most RB2_BULK_MAX_SEGS.
 * A buffer sent at growing lengths leaves the cache holding several regions
 * of it, and a request over all of them would need one segment each: then
 * those regions are dropped (those in use live on until their put) and the
 * whole range is registered again as one.
 */
static int
cache_get(struct rb2_mr_cache *c, void *addr, size_t len, struct rb2_mr_seg *segs)
{
	int n = rb2_mr_cache_get(c, addr, len, segs, RB2_BULK_MAX_SEGS);

	if (n == -E2BIG) {
		rb2_mr_cache_invalidate(c, addr, len);
		n = rb2_mr_cache_get(c, addr, len, segs, RB2_BULK_MAX_SEGS);
	}
	return n == -ENOSPC ? -EAGAIN : n;
}

/* Both halves: a channel whose messages carry their length, and (sender) a
 * head the receiver pushes, since that is how a lent buffer comes back (a
 * bulk receiver pushes it as soon as a READ completes, RB2_CHAN_F_LAZY_HEAD
 * or not). */
static int
check_chan(const struct rb2_chan_half *h, const char *who)
{
	if (h->p.msg_size != 0) {
		RB2_CHAN_LOG(ERR, "bulk %s on '%s': a fixed-size channel (msg_size %u) cannot carry descriptors; create it with msg_size 0",
			     who, h->name, h->p.msg_size);
		return -EINVAL;
	}
	if (h->is_tx && h->p.head_sync != RB2_HEAD_LAZY_PUSH) {
		RB2_CHAN_LOG(ERR, "bulk sender on '%s': lent buffers come back with the receiver's head, which this channel does not push (lazy pull); use the default head sync",
			     h->name);
		return -EINVAL;
	}
	return 0;
}

/* A cache over @h's transport, or NULL where it cannot lend memory. */
static struct rb2_mr_cache *
half_cache(struct rb2_chan_half *h, const char *cache_name)
{
	struct rb2_mr_cache *c = NULL;
	struct rb2_mr_cache_params p;
	char name[RB2_MR_CACHE_NAMESIZE];

	/* Named in telemetry as asked, or after its channel half:
	 * bulk-tx.<channel>. */
	rb2_mr_cache_params_init(&p);
	snprintf(name, sizeof(name), "bulk-%s.%s", h->is_tx ? "tx" : "rx", h->name);
	p.name = cache_name != NULL ? cache_name : name;
	if ((rb2_xport_caps(h->xp) & RB2_XPORT_CAP_READ) != 0 && !h->loadstore)
		c = rb2_mr_cache_create_xport(h->xp, &p);
	return c;
}

struct rb2_mr_cache *
rb2_bulk_cache_create(struct rb2_tx *tx, struct rb2_rx *rx, const char *name)
{
	return tx != NULL ? half_cache(&tx->h, name) : rx != NULL ? half_cache(&rx->h, name) : NULL;
}

/* The half's own cache, or NULL (said once, for a sender). */
static struct rb2_mr_cache *
own_cache(struct rb2_chan_half *h)
{
	struct rb2_mr_cache *c = half_cache(h, NULL);

	if (c == NULL && h->is_tx)
		RB2_CHAN_LOG(INFO, "bulk sender on '%s': transport '%s' cannot lend application memory to its peer; every message is copied through the ring",
			     h->name, rb2_xport_name(h->xp));
	return c;
}

struct rb2_bulk_tx *
rb2_bulk_tx_create(struct rb2_tx *tx, const struct rb2_bulk_params *p)
{
	struct rb2_bulk_params def;
	struct rb2_bulk_tx *b;
	uint32_t refs;

	if (p == NULL) {
		rb2_bulk_params_init(&def);
		p = &def;
	}
	if (check_chan(&tx->h, "sender") < 0) {
		rte_errno = EINVAL;
		return NULL;
	}
	refs = rte_align32pow2(p->max_refs ? p->max_refs : 64);
	b = rte_zmalloc("rb2_bulk_tx", sizeof(*b), RTE_CACHE_LINE_SIZE);
	if (b != NULL)
		b->lent = rte_zmalloc("rb2_bulk_lent", refs * sizeof(b->lent[0]), 0);
	if (b == NULL || b->lent == NULL) {
		rte_free(b);
		rte_errno = ENOMEM;
		return NULL;
	}
	b->tx = tx;
	b->inline_max = p->inline_max;
	b->max_refs = refs;
	b->cache = p->cache;
	if (b->cache == NULL && p->inline_max != UINT32_MAX) {
		b->cache = own_cache(&tx->h);
		b->own_cache = b->cache != NULL;
	}
	return b;
}

static void
give_back(struct rb2_bulk_tx *b, struct bulk_lent *l)
{
	rb2_mr_cache_put(b->cache, l->segs, l->nsegs);
	b->lent_head++;
}

void
rb2_bulk_tx_destroy(struct rb2_bulk_tx *b)
{
	if (b == NULL)
		return;
	while (b->lent_head != b->lent_tail)
		give_back(b, &b->lent[b->lent_head & (b->max_refs - 1)]);
	if (b->own_cache)
		rb2_mr_cache_destroy(b->cache);
	rte_free(b->lent);
	rte_free(b);
}

/* Copy through the ring: a header and the payload in one message. */
static int
send_inline(struct rb2_bulk_tx *b, const void *buf, size_t len)
{
	struct bulk_hdr *hd;
	void *slot;
	int ret;

	if (len > rb2_tx_max_msg(b->tx) - sizeof(*hd))
		return -EMSGSIZE;
	ret = rb2_tx_reserve(b->tx, (uint32_t)(sizeof(*hd) + len), &slot);
	if (ret < 0)
		return ret == -ENOBUFS ? -EAGAIN : ret;
	hd = slot;
	hd->kind = BULK_INLINE;
	hd->nsegs = 0;
	hd->len = len;
	memcpy(hd + 1, buf, len);
	rb2_tx_commit(b->tx, (uint32_t)(sizeof(*hd) + len));
	b->st.inline_msgs++;
	b->st.inline_bytes += len;
	return 0;
}

int
rb2_bulk_ref_make(struct rb2_mr_cache *c, const void *buf, size_t len,
		  struct rb2_bulk_ref *ref, struct rb2_mr_seg *held)
{
	/* The NIC only reads it: the cache's const-less API is for both. */
	int n = cache_get(c, (void *)(uintptr_t)buf, len, held);

	if (n < 0)
		return n;
	ref->nsegs = (uint32_t)n;
	ref->len = len;
	for (int i = 0; i < n; i++) {
		ref->segs[i].addr = (uint64_t)(uintptr_t)held[i].addr;
		ref->segs[i].len = held[i].len;
		ref->segs[i].rkey = held[i].rkey;
	}
	return n;
}

int
rb2_bulk_send(struct rb2_bulk_tx *b, const void *buf, size_t len, uint64_t cookie)
{
	struct rb2_bulk_ref ref;
	struct bulk_lent *l;
	uint32_t dlen;
	void *slot;
	int n, ret;

	if (b->tx->h.err != 0)
		return b->tx->h.err;
	if (b->cache == NULL || len < b->inline_max || len == 0)
		return send_inline(b, buf, len);
	if (b->lent_tail - b->lent_head == b->max_refs) {
		b->st.ref_waits++;
		return -EAGAIN;
	}
	l = &b->lent[b->lent_tail & (b->max_refs - 1)];
	n = rb2_bulk_ref_make(b->cache, buf, len, &ref, l->segs);
	if (n < 0)
		return n;
	ref.tag = BULK_REF;
	dlen = RB2_BULK_REF_SIZE(n);
	ret = rb2_tx_reserve(b->tx, dlen, &slot);
	if (ret < 0) {
		rb2_mr_cache_put(b->cache, l->segs, (unsigned int)n);
		return ret == -ENOBUFS ? -EAGAIN : ret;
	}
	memcpy(slot, &ref, dlen);
	rb2_tx_commit(b->tx, dlen);
	l->end = b->tx->tail;
	l->cookie = cookie;
	l->nsegs = (unsigned int)n;
	b->lent_tail++;
	b->st.ref_msgs++;
	b->st.ref_bytes += len;
	/* The receiver may start its READ now: the descriptor goes at once. */
	ret = rb2_tx_flush(b->tx);
	return ret < 0 ? ret : 1;
}

int
rb2_bulk_tx_done(struct rb2_bulk_tx *b, struct rb2_bulk_done *done, unsigned int n)
{
	unsigned int k = 0;
	uint64_t head;
	int err;

	if (b->lent_head == b->lent_tail)
		return 0;
	/* Buffers are out: publish anything pending (a sleeping receiver is
	 * woken there) and ask after the receiver (rate-limited), so that a
	 * dead one gives every buffer back, failed, in bounded time. */
	(void)rb2_tx_flush(b->tx);
	err = rb2_tx_check(b->tx);
	/* Acquire: the receiver's head WRITE (or store) comes after its
	 * READs completed; nothing of ours is read after this. */
	head = atomic_load_explicit(b->tx->local_head, memory_order_acquire);
	while (k < n && b->lent_head != b->lent_tail) {
		struct bulk_lent *l = &b->lent[b->lent_head & (b->max_refs - 1)];

		if (err == 0 && (int64_t)(head - l->end) < 0)
			break;
		done[k].cookie = l->cookie;
		done[k].status = (int64_t)(head - l->end) >= 0 ? 0 : err;
		if (done[k].status != 0)
			b->st.ref_failed++;
		else
			b->st.ref_done++;
		give_back(b, l);
		k++;
	}
	return (int)k;
}

/* Does [a, a + alen) overlap [b, b + blen)? */
static int
overlaps(uintptr_t a, size_t alen, uintptr_t b, size_t blen)
{
	return a < b + blen && b < a + alen;
}

int
rb2_bulk_tx_forget(struct rb2_bulk_tx *b, void *buf, size_t len)
{
	for (uint64_t i = b->lent_head; i != b->lent_tail; i++) {
		const struct bulk_lent *l = &b->lent[i & (b->max_refs - 1)];

		for (unsigned int s = 0; s < l->nsegs; s++)
			if (overlaps((uintptr_t)l->segs[s].addr, l->segs[s].len,
				     (uintptr_t)buf, len))
				return -EBUSY;
	}
	if (b->cache != NULL)
		rb2_mr_cache_invalidate(b->cache, buf, len);
	return 0;
}

struct rb2_bulk_rx *
rb2_bulk_rx_create(struct rb2_rx *rx, const struct rb2_bulk_params *p)
{
	struct rb2_bulk_rx *b;

	if (check_chan(&rx->h, "receiver") < 0) {
		rte_errno = EINVAL;
		return NULL;
	}
	b = rte_zmalloc("rb2_bulk_rx", sizeof(*b), RTE_CACHE_LINE_SIZE);
	if (b == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	b->rx = rx;
	b->cache = p != NULL ? p->cache : NULL;
	if (b->cache == NULL) {
		b->cache = own_cache(&rx->h);
		b->own_cache = b->cache != NULL;
	}
	return b;
}

void
rb2_bulk_rx_destroy(struct rb2_bulk_rx *b)
{
	if (b == NULL)
		return;
	/* A READ in flight lands in memory we are about to give back. */
	while (b->rd.dst != NULL && rb2_bulk_read_poll(b->rx, b->cache, &b->rd) == -EINPROGRESS)
		;
	if (b->own_cache)
		rb2_mr_cache_destroy(b->cache);
	rte_free(b);
}

/* Post the READs of a lent message into the registered @rd->dsegs: one per
 * piece where a source and a destination segment overlap, all behind one
 * doorbell, the last one signaled (an RC queue completes in order, so its
 * completion is all of theirs). @return the WRs posted. */
static int
post_reads(struct rb2_rx *rx, struct rb2_bulk_read *rd, const struct rb2_bulk_seg *src,
	   unsigned int nsrc)
{
	struct rb2_xport_wr w[2 * RB2_BULK_MAX_SEGS];
	unsigned int nw = 0, d = 0;
	uint64_t doff = 0;
	int ret;

	for (unsigned int s = 0; s < nsrc; s++) {
		uint64_t soff = 0;

		while (soff < src[s].len) {
			const struct rb2_mr_seg *ds = &rd->dsegs[d];
			uint32_t piece = (uint32_t)RTE_MIN((uint64_t)src[s].len - soff,
							   (uint64_t)ds->len - doff);

			w[nw++] = (struct rb2_xport_wr){
				.wr_id = WRID_BULK,
				.local = (uint8_t *)ds->addr + doff,
				.remote = src[s].addr + soff,
				.len = piece,
				.lkey = ds->lkey,
				.rkey = src[s].rkey,
				.opcode = RB2_WR_READ,
			};
			soff += piece;
			doff += piece;
			if (doff == ds->len) {
				d++;
				doff = 0;
			}
		}
	}
	w[nw - 1].flags = RB2_WR_SIGNALED;
	ret = rb2_rx_post(rx, w, nw);
	if (ret < 0) {
		rb2_rx_fail(rx, ret, "posting %u bulk READs: %s", nw, rte_strerror(-ret));
		return ret;
	}
	rd->target = rx->bulk_reads_posted += 1;
	return (int)nw;
}

int
rb2_bulk_ref_valid(const void *desc, uint32_t size)
{
	const struct rb2_bulk_ref *r = desc;
	uint64_t sum = 0;

	if (size < RB2_BULK_REF_SIZE(1) || r->nsegs < 1 || r->nsegs > RB2_BULK_MAX_SEGS ||
	    size != RB2_BULK_REF_SIZE(r->nsegs))
		return 0;
	for (unsigned int i = 0; i < r->nsegs; i++)
		sum += r->segs[i].len;
	return sum == r->len;
}

int
rb2_bulk_read_start(struct rb2_rx *rx, struct rb2_mr_cache *c, const struct rb2_bulk_ref *ref,
		    void *dst, size_t cap, struct rb2_bulk_read *rd)
{
	int ret;

	if (rx->h.err != 0)
		return rx->h.err;
	if (ref->len > cap)
		return -EMSGSIZE;
	ret = cache_get(c, dst, cap, rd->dsegs);
	if (ret < 0)
		return ret;
	rd->ndsegs = (unsigned int)ret;
	ret = post_reads(rx, rd, ref->segs, ref->nsegs);
	if (ret < 0) {
		rb2_mr_cache_put(c, rd->dsegs, rd->ndsegs);
		return ret;
	}
	rd->dst = dst;
	rd->len = ref->len;
	return ret;
}

int
rb2_bulk_read_poll(struct rb2_rx *rx, struct rb2_mr_cache *c, struct rb2_bulk_read *rd)
{
	int err = rx->h.err;

	if (err == 0 && (int64_t)(rx->bulk_reads_done - rd->target) < 0) {
		/* Reaping returns the WRITE_WITH_IMM receives it took (>= 0)
		 * or the error that failed the channel. */
		int ret = rb2_rx_reap(&rx->h);

		if (ret < 0)
			err = ret;
		else if ((int64_t)(rx->bulk_reads_done - rd->target) < 0)
			return -EINPROGRESS;
	}
	rb2_mr_cache_put(c, rd->dsegs, rd->ndsegs);
	rd->dst = NULL;
	return err < 0 ? err : 0;
}

/* Check a descriptor against the channel's limits: a corrupt one fails the
 * channel (nothing is READ from an address it names). */
static int
check_desc(struct rb2_bulk_rx *b, const struct rb2_msg *m)
{
	static const struct bulk_hdr none;
	const struct bulk_hdr *hd = m->len >= sizeof(*hd) ? m->data : &none;

	if (hd->kind == BULK_INLINE && m->len == sizeof(*hd) + hd->len)
		return 0;
	if (hd->kind == BULK_REF && rb2_bulk_ref_valid(m->data, m->len))
		return 0;
	rb2_rx_fail(b->rx, -EPROTO, "bulk receiver: a message of %u bytes is not a bulk message (kind %#x, %u segments, length %" PRIu64 "): is the sender a bulk sender?",
		    m->len, hd->kind, hd->nsegs, hd->len);
	return -EPROTO;
}

/* The READ into @b->rd.dst has completed (or failed): hand the
 * descriptor's slot back, and tell the sender now (its buffer is free). */
static int
finish_read(struct rb2_bulk_rx *b, int ret)
{
	struct rb2_rx *rx = b->rx;

	if (ret < 0)
		return ret;
	rb2_rx_release_burst(rx, &b->msg, 1);
	if (rx->head != rx->synced_head)
		__rb2_rx_push(rx);
	b->st.ref_msgs++;
	b->st.ref_bytes += b->rd.len;
	return rx->h.err != 0 ? rx->h.err : (int)b->rd.len;
}

int
rb2_bulk_recv(struct rb2_bulk_rx *b, void *dst, size_t cap)
{
	const struct bulk_hdr *hd;
	int n, ret;

	if (b->rd.dst != NULL) {
		if (dst != b->rd.dst)
			return -EBUSY;
		ret = rb2_bulk_read_poll(b->rx, b->cache, &b->rd);
		return ret == -EINPROGRESS ? ret : finish_read(b, ret);
	}
	n = rb2_rx_peek_burst(b->rx, &b->msg, 1);
	if (n <= 0)
		return n == 0 ? -EAGAIN : n;
	if (check_desc(b, &b->msg) < 0)
		return -EPROTO;
	hd = b->msg.data;
	if (hd->len > cap || hd->len > INT32_MAX)
		return -EMSGSIZE;
	if (hd->kind == BULK_INLINE) {
		memcpy(dst, hd + 1, hd->len);
		b->st.inline_msgs++;
		b->st.inline_bytes += hd->len;
		ret = (int)hd->len;
		rb2_rx_release_burst(b->rx, &b->msg, 1);
		return ret;
	}
	if (b->cache == NULL) {
		rb2_rx_fail(b->rx, -EPROTO, "bulk receiver: the sender lent a buffer, but transport '%s' cannot READ it",
			    rb2_xport_name(b->rx->h.xp));
		return -EPROTO;
	}
	ret = rb2_bulk_read_start(b->rx, b->cache, b->msg.data, dst, cap, &b->rd);
	if (ret < 0)
		return ret;
	b->st.reads += (uint64_t)ret;
	return rb2_bulk_recv(b, dst, cap);
}

int
rb2_bulk_rx_forget(struct rb2_bulk_rx *b, void *dst, size_t len)
{
	if (b->rd.dst != NULL && overlaps((uintptr_t)b->rd.dst, b->rd.len, (uintptr_t)dst, len))
		return -EBUSY;
	if (b->cache != NULL)
		rb2_mr_cache_invalidate(b->cache, dst, len);
	return 0;
}

void
rb2_bulk_tx_stats_get(const struct rb2_bulk_tx *b, struct rb2_bulk_stats *st)
{
	*st = b->st;
}

void
rb2_bulk_rx_stats_get(const struct rb2_bulk_rx *b, struct rb2_bulk_stats *st)
{
	*st = b->st;
}

struct rb2_mr_cache *
rb2_bulk_tx_cache(const struct rb2_bulk_tx *b)
{
	return b->cache;
}

struct rb2_mr_cache *
rb2_bulk_rx_cache(const struct rb2_bulk_rx *b)
{
	return b->cache;
}
