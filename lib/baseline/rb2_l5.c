/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * L5's ring (pfent/L5RDMA), written for rb2's transports: see rb2_l5.h for
 * the layout and what it does at each step.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_malloc.h>
#include <rte_pause.h>

#include <rb2_chan.h>

#include "rb2_l5.h"

RTE_LOG_REGISTER(rb2_l5_logtype, rb2.l5, INFO);
#define L5_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, rb2_l5_logtype, "rb2_l5: " fmt "\n", ##__VA_ARGS__)

#define L5_VALIDITY UINT64_C(0xDEADDEADBEEFBEEF)
#define L5_HDR 8                  /* the length in front */
#define L5_TRL 8                  /* the validity word behind */
#define L5_WRID_SIGNAL 1
#define L5_WRID_READ 2

struct rb2_l5 {
	struct rb2_xport *xp;
	struct rb2_xport_qp *sq;      /* the sender's queue */
	struct rb2_xport_qp *rq;      /* the receiver's (it never posts) */
	size_t size, mask;
	int loadstore;

	/* Sender. */
	struct rb2_xport_mr smr;      /* send buffer (WRITE path) + READ landing word */
	uint8_t *sbuf;                /* where messages are built: the send
				       * buffer, or (load/store) the receiver's ring */
	uint64_t *rpos_copy;          /* L5's remoteReadPos: what the last READ found */
	const _Atomic uint64_t *peer_rpos; /* load/store: the position itself */
	uint64_t remote_ring, remote_rpos;
	uint32_t rkey;
	uint64_t send_pos, known_rpos;

	/* Receiver, in cache lines of its own. */
	struct rb2_xport_mr rmr __rte_cache_aligned; /* the ring + its read position */
	uint8_t *ring;
	_Atomic uint64_t *read_pos;
	uint64_t rx_pos;

	struct rb2_l5_stats tx_st __rte_cache_aligned;
	struct rb2_l5_stats rx_st __rte_cache_aligned;
};

/* A message's bytes in the ring: rounded up to 8, so that every length
 * word is one aligned 8-byte store. */
static inline uint64_t
l5_footprint(uint32_t len)
{
	return RTE_ALIGN_CEIL(L5_HDR + (uint64_t)len + L5_TRL, 8);
}

size_t
rb2_l5_ring_bytes(uint32_t slots, uint32_t size)
{
	return rte_align64pow2((uint64_t)slots * RTE_MAX(size, 8u));
}

/* Copy @n bytes into the ring at @off, continuing at its start. */
static inline void
ring_put(uint8_t *ring, size_t mask, uint64_t off, const void *src, size_t n)
{
	size_t at = off & mask, first = RTE_MIN(n, mask + 1 - at);

	rb2_msg_copy(ring + at, src, first);
	if (unlikely(first < n))
		rb2_msg_copy(ring, (const uint8_t *)src + first, n - first);
}

static inline void
ring_get(const uint8_t *ring, size_t mask, uint64_t off, void *dst, size_t n)
{
	size_t at = off & mask, first = RTE_MIN(n, mask + 1 - at);

	rb2_msg_copy(dst, ring + at, first);
	if (unlikely(first < n))
		rb2_msg_copy((uint8_t *)dst + first, ring, n - first);
}

static inline void
ring_zero(uint8_t *ring, size_t mask, uint64_t off, size_t n)
{
	size_t at = off & mask, first = RTE_MIN(n, mask + 1 - at);

	memset(ring + at, 0, first);
	if (unlikely(first < n))
		memset(ring, 0, n - first);
}

static void
l5_free_regions(struct rb2_l5 *r)
{
	if (r->smr.addr != NULL)
		rb2_xport_mr_free(r->xp, &r->smr);
	if (r->rmr.addr != NULL)
		rb2_xport_mr_free(r->xp, &r->rmr);
}

struct rb2_l5 *
rb2_l5_create(struct rb2_xport *xp, const char *name, size_t bytes, uint32_t max_msg,
	       unsigned int tx_lcore, unsigned int rx_lcore)
{
	struct rb2_xport_qp_attr a = { .sq_depth = 1024, .cq_depth = 64 };
	char zname[RTE_MEMZONE_NAMESIZE];
	struct rb2_l5 *r;
	size_t size = rte_align64pow2(RTE_MAX(bytes, (size_t)64));
	int ret;

	if (l5_footprint(max_msg) > size) {
		L5_LOG(ERR, "'%s': a %u-byte message and its 16 bytes of length and validity do not fit a ring of %zu B: give it more slots",
		       name, max_msg, size);
		rte_errno = EMSGSIZE;
		return NULL;
	}
	r = rte_zmalloc("rb2_l5", sizeof(*r), RTE_CACHE_LINE_SIZE);
	if (r == NULL) {
		L5_LOG(ERR, "'%s': out of memory", name);
		rte_errno = ENOMEM;
		return NULL;
	}
	r->xp = xp;
	r->size = size;
	r->mask = size - 1;
	r->loadstore = (rb2_xport_caps(xp) & RB2_XPORT_CAP_LOADSTORE) != 0;

	/* The receiver's region: the ring, then its read position. */
	snprintf(zname, sizeof(zname), "l5r.%.24s", name);
	ret = rb2_xport_mr_alloc(xp, zname, size + RTE_CACHE_LINE_SIZE,
				 (int)rte_lcore_to_socket_id(rx_lcore), &r->rmr);
	if (ret == 0) {
		/* The sender's: its send buffer (none with load/store: it
		 * builds in the receiver's ring), then the READ's landing word. */
		snprintf(zname, sizeof(zname), "l5s.%.24s", name);
		ret = rb2_xport_mr_alloc(xp, zname, (r->loadstore ? 0 : size) + RTE_CACHE_LINE_SIZE,
					 (int)rte_lcore_to_socket_id(tx_lcore), &r->smr);
	}
	if (ret < 0) {
		L5_LOG(ERR, "'%s': cannot allocate a %zu-byte ring on %s: %s (raise the EAL's "
		       "memory, -m)", name, size, rb2_xport_name(xp), strerror(-ret));
		rte_errno = -ret;
		goto fail;
	}
	r->ring = r->rmr.addr;
	r->read_pos = (_Atomic uint64_t *)(r->ring + size);
	r->rpos_copy = (uint64_t *)((uint8_t *)r->smr.addr + (r->loadstore ? 0 : size));
	r->remote_ring = (uint64_t)(uintptr_t)r->rmr.addr;
	r->remote_rpos = r->remote_ring + size;
	r->rkey = r->rmr.rkey;

	a.lcore_id = tx_lcore;
	r->sq = rb2_xport_qp_create(xp, &a);
	a.lcore_id = rx_lcore;
	r->rq = rb2_xport_qp_create(xp, &a);
	if (r->sq == NULL || r->rq == NULL ||
	    (ret = rb2_xport_qp_connect_local(r->sq, r->rq)) != 0) {
		L5_LOG(ERR, "'%s': cannot connect its queues on %s: %s", name,
		       rb2_xport_name(xp), r->sq == NULL || r->rq == NULL ?
		       rte_strerror(rte_errno) : strerror(-ret));
		rte_errno = r->sq == NULL || r->rq == NULL ? rte_errno : -ret;
		goto fail;
	}
	if (r->loadstore) {
		r->sbuf = rb2_xport_peer_ptr(r->sq, r->remote_ring, r->rkey, size + RTE_CACHE_LINE_SIZE);
		if (r->sbuf == NULL) {
			L5_LOG(ERR, "'%s': cannot map the receiver's ring", name);
			rte_errno = EFAULT;
			goto fail;
		}
		r->peer_rpos = (const _Atomic uint64_t *)(r->sbuf + size);
	} else {
		r->sbuf = r->smr.addr;
	}
	return r;
fail:
	rb2_l5_destroy(r);
	return NULL;
}

void
rb2_l5_destroy(struct rb2_l5 *r)
{
	if (r == NULL)
		return;
	if (r->sq != NULL)
		rb2_xport_qp_destroy(r->sq);
	if (r->rq != NULL)
		rb2_xport_qp_destroy(r->rq);
	l5_free_regions(r);
	rte_free(r);
}

/* Post a chain, reaping the send queue while it is full. */
static int
l5_post(struct rb2_l5 *r, const struct rb2_xport_wr *wrs, unsigned int n)
{
	struct rb2_xport_wc wc[8];
	int ret;

	while ((ret = rb2_xport_post(r->sq, wrs, n)) == -ENOSPC) {
		int k = rb2_xport_poll(r->sq, wc, RTE_DIM(wc));

		if (k < 0)
			return k;
	}
	if (ret == 0)
		r->tx_st.posts++;
	return ret;
}

/* Wait for the completion of the one signaled WR in flight. */
static int
l5_wait(struct rb2_l5 *r, uint64_t wr_id)
{
	struct rb2_xport_wc wc;

	for (;;) {
		int k = rb2_xport_poll(r->sq, &wc, 1);

		if (k < 0)
			return k;
		if (k == 0)
			continue;
		if (wc.status != RB2_WC_SUCCESS) {
			L5_LOG(ERR, "a %s failed: %s", wr_id == L5_WRID_READ ? "READ" : "WRITE",
			       rb2_xport_wc_status_str(r->xp, wc.status));
			return -EIO;
		}
		if (wc.wr_id == wr_id)
			return 0;
	}
}

/* WRITEs of ring bytes [off, off + n): one, or two at the end of the ring. */
static unsigned int
l5_write_wrs(struct rb2_l5 *r, uint64_t off, uint32_t n, uint16_t flags,
	     struct rb2_xport_wr *wrs)
{
	size_t at = off & r->mask;
	uint32_t first = (uint32_t)RTE_MIN((size_t)n, r->size - at);
	unsigned int k = 0;

	for (uint32_t done = 0, len = first; done < n; done += len, len = n - done) {
		size_t o = (at + done) & r->mask;

		wrs[k++] = (struct rb2_xport_wr){
			.opcode = RB2_WR_WRITE, .local = r->sbuf + o,
			.remote = r->remote_ring + o, .len = len,
			.lkey = r->smr.lkey, .rkey = r->rkey,
			.flags = len <= r->sq->max_inline ? RB2_WR_INLINE : 0,
		};
	}
	if (flags != 0) {              /* the last piece carries the signal */
		wrs[k - 1].flags |= flags;
		wrs[k - 1].wr_id = L5_WRID_SIGNAL;
	}
	return k;
}

/* Learn the receiver's read position: a load, or a READ waited for. */
static int
l5_read_rpos(struct rb2_l5 *r)
{
	if (r->loadstore) {
		r->known_rpos = atomic_load_explicit(r->peer_rpos, memory_order_acquire);
	} else {
		struct rb2_xport_wr rd = {
			.opcode = RB2_WR_READ, .local = r->rpos_copy,
			.remote = r->remote_rpos, .len = 8, .lkey = r->smr.lkey,
			.rkey = r->rkey, .flags = RB2_WR_SIGNALED, .wr_id = L5_WRID_READ,
		};
		int ret = l5_post(r, &rd, 1);

		if (ret == 0)
			ret = l5_wait(r, L5_WRID_READ);
		if (ret < 0)
			return ret;
		r->known_rpos = __atomic_load_n(r->rpos_copy, __ATOMIC_ACQUIRE);
	}
	r->tx_st.head_reads++;
	return 0;
}

/* L5's waitUntilSendFree(): READ the receiver's position until it frees
 * room, waiting for each READ (@once: one READ at most, then -ENOBUFS). */
static int
l5_wait_room(struct rb2_l5 *r, uint64_t need, bool once)
{
	for (unsigned int reads = 0; r->size - (r->send_pos - r->known_rpos) < need; reads++) {
		int ret;

		if (once && reads == 1)
			return -ENOBUFS;
		ret = l5_read_rpos(r);
		if (ret < 0)
			return ret;
	}
	return 0;
}

int
rb2_l5_send(struct rb2_l5 *r, const void *data, uint32_t len)
{
	const uint64_t total = l5_footprint(len), pos = r->send_pos;
	const uint64_t validity = L5_VALIDITY;
	int signal = r->tx_st.messages % RB2_L5_SIGNAL_EVERY == 0;
	int ret;

	if (unlikely(len == 0))
		return -EINVAL;
	if (unlikely(total > r->size))
		return -EMSGSIZE;
	ret = l5_wait_room(r, total, false);
	if (unlikely(ret < 0))
		return ret;
	r->tx_st.wrapped += (pos & r->mask) + total > r->size;
	/* send(): copy the message in, the validity word behind it. */
	ring_put(r->sbuf, r->mask, pos + L5_HDR, data, len);
	ring_put(r->sbuf, r->mask, pos + L5_HDR + len, &validity, L5_TRL);
	r->tx_st.copied_bytes += len;
	if (r->loadstore) {
		/* The stores are the WRITEs; the length goes last, and its
		 * release publishes the payload and the validity word. */
		__atomic_store_n((uint64_t *)(r->sbuf + (pos & r->mask)), (uint64_t)len,
				 __ATOMIC_RELEASE);
	} else {
		const uint64_t length = len;

		/* sendParanoid(): payload and validity, then the length, in
		 * two posts; every 4096th length is signaled and waited for. */
		struct rb2_xport_wr wrs[2];
		unsigned int k;

		memcpy(r->sbuf + (pos & r->mask), &length, L5_HDR);
		k = l5_write_wrs(r, pos + L5_HDR, len + L5_TRL, 0, wrs);
		ret = l5_post(r, wrs, k);
		r->tx_st.writes += ret == 0 ? k : 0;
		if (ret == 0) {
			k = l5_write_wrs(r, pos, L5_HDR, signal ? RB2_WR_SIGNALED : 0, wrs);
			ret = l5_post(r, wrs, k);
			r->tx_st.writes += ret == 0 ? k : 0;
		}
		if (ret == 0 && signal) {
			r->tx_st.signaled++;
			ret = l5_wait(r, L5_WRID_SIGNAL);
		}
		if (unlikely(ret < 0))
			return ret;
	}
	r->send_pos = pos + total;
	r->tx_st.messages++;
	return 0;
}

int
rb2_l5_room(struct rb2_l5 *r, uint32_t len, unsigned int n)
{
	uint64_t fp = l5_footprint(len);
	int ret;

	if (unlikely(len == 0 || n == 0))
		return -EINVAL;
	if (unlikely(fp > r->size))
		return -EMSGSIZE;
	ret = l5_wait_room(r, fp, true);
	if (ret < 0)
		return ret;
	return (int)RTE_MIN((uint64_t)n, (r->size - (r->send_pos - r->known_rpos)) / fp);
}

int
rb2_l5_drained(struct rb2_l5 *r)
{
	int ret;

	if (r->known_rpos == r->send_pos)
		return 1;
	ret = l5_read_rpos(r);
	return ret < 0 ? ret : r->known_rpos == r->send_pos;
}

int
rb2_l5_recv(struct rb2_l5 *r, void *dst, uint32_t cap)
{
	const uint64_t pos = r->rx_pos;
	uint64_t len, total, validity;

	/* The length lands last (its own WRITE, or the release store on
	 * load/store): 0 is no message yet, and once it is there the
	 * payload and the validity word behind it are too. L5 checks the
	 * validity word all the same; a mismatch is a message still in
	 * flight to L5, so wait. */
	len = __atomic_load_n((const uint64_t *)(r->ring + (pos & r->mask)), __ATOMIC_ACQUIRE);
	if (len == 0)
		return -EAGAIN;
	if (unlikely(len > r->size - L5_HDR - L5_TRL))
		return -EPROTO;
	ring_get(r->ring, r->mask, pos + L5_HDR + len, &validity, L5_TRL);
	if (validity != L5_VALIDITY)
		return -EAGAIN;
	if (unlikely(len > cap))
		return -EMSGSIZE;
	total = l5_footprint((uint32_t)len);
	/* receive(): copy out, clear what was read, advance. */
	ring_get(r->ring, r->mask, pos + L5_HDR, dst, len);
	ring_zero(r->ring, r->mask, pos, total);
	r->rx_pos = pos + total;
	atomic_store_explicit(r->read_pos, r->rx_pos, memory_order_release);
	r->rx_st.received++;
	r->rx_st.copied_bytes += len;
	r->rx_st.cleared_bytes += total;
	return (int)len;
}

void
rb2_l5_stats_get(const struct rb2_l5 *r, struct rb2_l5_stats *st)
{
	*st = r->tx_st;
	st->received = r->rx_st.received;
	st->copied_bytes += r->rx_st.copied_bytes;
	st->cleared_bytes = r->rx_st.cleared_bytes;
}
