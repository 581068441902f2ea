/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Packets on edges (rb2_stage_pkt.h): emitting them as pointer or byte
 * carriers, turning a burst of carriers into one message per packet for the
 * next stage, taking packets, and freeing what the stage did not take.
 */

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_pause.h>
#include <rte_ring.h>

#include "rb2_pipeline_private.h"
#include "rb2_stage_pkt.h"

int rb2_pkt_ts_offset = -1;
uint64_t rb2_pkt_ts_flag;

void
rb2_pkt_init(void)
{
	/* The same field in every process of the group (a secondary finds
	 * what the primary registered). */
	if (rb2_pkt_ts_offset < 0 &&
	    rte_mbuf_dyn_rx_timestamp_register(&rb2_pkt_ts_offset, &rb2_pkt_ts_flag) != 0)
		PL_LOG(WARNING, "cannot register the mbuf rx timestamp field (%s): packets get "
		       "no receive time", rte_strerror(rte_errno));
}

struct rte_mempool *
rb2_pkt_pool(const char *name, int socket, unsigned int size, unsigned int cache,
	     uint16_t data_room)
{
	char def[RTE_MEMPOOL_NAMESIZE];
	struct rte_mempool *mp;

	rb2_pkt_init();
	if (socket == SOCKET_ID_ANY)
		socket = 0;
	if (name == NULL || name[0] == '\0') {
		snprintf(def, sizeof(def), "rb2_pkts_s%d", socket);
		name = def;
	}
	mp = rte_mempool_lookup(name);
	if (mp != NULL) {
		if (mp->size != size)
			PL_LOG(NOTICE, "mbuf pool '%s' exists with %u mbufs: it is shared, and a "
			       "pool_size of %u is not applied to it (name another with pool =)",
			       name, mp->size, size);
		return mp;
	}
	if (rte_eal_process_type() != RTE_PROC_PRIMARY) {
		PL_LOG(ERR, "mbuf pool '%s' does not exist, and a secondary process cannot create "
		       "it: start the primary's port stages first", name);
		rte_errno = ENOENT;
		return NULL;
	}
	/* A per-lcore cache holds at most 2/3 of the pool (DPDK's rule). */
	cache = RTE_MIN(RTE_MIN(cache, (unsigned int)RTE_MEMPOOL_CACHE_MAX_SIZE), size * 2 / 3);
	mp = rte_pktmbuf_pool_create(name, size, cache, 0, data_room, socket);
	if (mp == NULL && rte_errno == ENOMEM)
		PL_LOG(ERR, "cannot create mbuf pool '%s' of %u mbufs of %u bytes on socket %d: "
		       "not enough hugepage memory; reserve more (dpdk-hugepages.py -r 1G) or "
		       "lower pool_size", name, size, data_room, socket);
	return mp;
}

const struct rb2_pkt *
rb2_stage_pkts(const struct rb2_stage *st)
{
	struct rb2_pkt_burst *b = st->w != NULL ? st->w->pkb : NULL;

	return b != NULL && b->to == st ? b->pkt : NULL;
}

/* A copy of @len bytes at @data in a new mbuf (segments chained as the
 * pool's data room requires). */
static struct rte_mbuf *
pkt_copy(struct rte_mempool *mp, const uint8_t *data, uint32_t len)
{
	struct rte_mbuf *head = NULL, *tail = NULL;

	do {
		struct rte_mbuf *m = rte_pktmbuf_alloc(mp);
		uint32_t k;

		if (m == NULL) {
			rte_pktmbuf_free(head);
			return NULL;
		}
		k = RTE_MIN(len, (uint32_t)rte_pktmbuf_tailroom(m));
		memcpy(rte_pktmbuf_mtod(m, void *), data, k);
		m->data_len = (uint16_t)k;
		if (head == NULL) {
			head = m;
		} else {
			tail->next = m;
			head->nb_segs++;
		}
		head->pkt_len += k;
		tail = m;
		data += k;
		len -= k;
	} while (len > 0);
	return head;
}

struct rte_mbuf *
rb2_stage_pkt_take(struct rb2_stage *st, unsigned int i)
{
	struct rb2_pkt_burst *b = st->w != NULL ? st->w->pkb : NULL;
	struct rte_mbuf *m;

	if (b == NULL || b->to != st || i >= b->n || b->taken[i])
		return NULL;
	b->taken[i] = true;
	if (b->pkt[i].m != NULL && !b->lent) {  /* pointer link: the mbuf itself */
		m = b->pkt[i].m;
		b->free[i] = NULL;
		return m;
	}
	/* A byte link, or a lent mbuf (its sender frees it): a copy. */
	if (b->pool == NULL)
		b->pool = rb2_pkt_pool(NULL, st->socket, RB2_PKT_POOL_DEFAULT, 256,
				       RTE_MBUF_DEFAULT_BUF_SIZE);
	if (b->pool == NULL)
		m = NULL;
	else if (b->pkt[i].m != NULL)
		m = rte_pktmbuf_copy(b->pkt[i].m, b->pool, 0, UINT32_MAX);
	else
		m = pkt_copy(b->pool, b->msg[i].data, b->msg[i].len);
	if (m == NULL) {
		STAT_ADD(st->pkt_drops, 1);
		return NULL;
	}
	m->port = b->pkt[i].port;
	rb2_pkt_ts_set(m, b->pkt[i].ts_ns);
	return m;
}

/* Run @to on the packets gathered in @b, then free those it did not take. */
static void
burst_run(struct rb2_pkt_burst *b, struct rb2_stage *to)
{
	unsigned int left = 0;

	if (b->n == 0)
		return;
	b->to = to;
	rb2_stage_run(to, b->msg, b->n);
	b->to = NULL;
	for (unsigned int i = 0; i < b->n; i++) {
		b->taken[i] = false;
		if (b->free[i] != NULL)
			b->free[left++] = b->free[i];
	}
	if (left > 0)
		rte_pktmbuf_free_bulk(b->free, left);
	b->n = 0;
}

static inline void
burst_add(struct rb2_pkt_burst *b, struct rte_mbuf *m)
{
	unsigned int i = b->n++;

	b->msg[i].data = rte_pktmbuf_mtod(m, void *);
	b->msg[i].len = m->data_len;
	b->pkt[i].m = m;
	b->pkt[i].ts_ns = rb2_pkt_ts(m);
	b->pkt[i].pkt_len = m->pkt_len;
	b->pkt[i].port = m->port;
	b->free[i] = b->lent ? NULL : m;
}

void
rb2_pkt_deliver(struct rb2_worker *w, struct rb2_stage *to, const struct rb2_msg *msgs,
		unsigned int n, int carry)
{
	struct rb2_pkt_burst *b = w->pkb;

	b->lent = carry == LINK_CARRY_LEND;
	for (unsigned int i = 0; i < n; i++) {
		if (carry != LINK_CARRY_BYTES) {
			struct rte_mbuf *const *p = msgs[i].data;
			unsigned int k = msgs[i].len / sizeof(*p);

			for (unsigned int j = 0; j < k; j++) {
				/* The header line of the packets a few ahead. */
				if (j + 4 < k)
					rte_prefetch0(p[j + 4]);
				if (b->n == RB2_STAGE_BURST_MAX)
					burst_run(b, to);
				burst_add(b, p[j]);
			}
			continue;
		}
		/* A byte carrier: a header, then the packet. */
		const struct rb2_pkt_hdr *h = msgs[i].data;
		unsigned int j;

		if (msgs[i].len < sizeof(*h) || h->pkt_len != msgs[i].len - sizeof(*h)) {
			STAT_ADD(to->pkt_drops, 1);
			rb2_stage_fail(to, "a packet message of %u bytes whose header says %u: the "
				       "sender is not a packet edge", msgs[i].len,
				       msgs[i].len >= sizeof(*h) ? h->pkt_len : 0);
			continue;
		}
		if (b->n == RB2_STAGE_BURST_MAX)
			burst_run(b, to);
		j = b->n++;
		b->msg[j].data = (void *)(h + 1);
		b->msg[j].len = h->pkt_len;
		b->pkt[j] = (struct rb2_pkt){ .m = NULL, .ts_ns = h->ts_ns, .pkt_len = h->pkt_len,
					      .port = h->port };
		b->free[j] = NULL;
	}
	burst_run(b, to);
}

void
rb2_pkt_free_carriers(const struct rb2_msg *msgs, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		rte_pktmbuf_free_bulk(msgs[i].data, msgs[i].len / sizeof(struct rte_mbuf *));
}

/* Packets that cannot be delivered: freed, and counted against @st. */
static void
drop(struct rb2_stage *st, struct rte_mbuf **pkts, unsigned int n)
{
	STAT_ADD(st->pkt_drops, n);
	rte_pktmbuf_free_bulk(pkts, n);
}

/* Byte link: each packet's bytes after a header, then the mbuf freed. */
static int
emit_bytes(struct rb2_stage *st, unsigned int edge, struct rte_mbuf **pkts, unsigned int n)
{
	unsigned int sent = 0;

	for (unsigned int i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		struct rb2_pkt_hdr *h;
		size_t stride;
		void *slot;
		int ret;

		ret = rb2_stage_emit_reserve(st, edge, (uint32_t)sizeof(*h) + m->pkt_len, 1,
					     &slot, &stride);
		if (ret == -EMSGSIZE) {     /* this one is larger than the link carries */
			drop(st, &pkts[i], 1);
			continue;
		}
		if (ret < 0) {
			drop(st, pkts + i, n - i);
			return ret;
		}
		h = slot;
		*h = (struct rb2_pkt_hdr){ .ts_ns = rb2_pkt_ts(m), .pkt_len = m->pkt_len,
					   .port = m->port };
		/* Contiguous: read gives the data in place, to be copied;
		 * chained: it has copied the segments into the slot. */
		const void *d = rte_pktmbuf_read(m, 0, m->pkt_len, h + 1);

		if (d != (const void *)(h + 1))
			memcpy(h + 1, d, m->pkt_len);
		rb2_stage_emit_commit(st, edge, (uint32_t)sizeof(*h) + m->pkt_len, 1);
		rte_pktmbuf_free(m);
		sent++;
	}
	return (int)sent;
}

struct rb2_lend *
rb2_pkt_lend_create(uint32_t slots, uint32_t slot_size, int socket)
{
	/* What can be out at once: the tail runs at most N - 1 slots ahead of
	 * the head the sender knows, and the messages behind that head not
	 * yet freed (a reservation may learn of a newer head than the last
	 * reclaim did) are as many again: 2N slots, each holding at most
	 * slot_size / 8 pointers (and a message at least one slot). */
	uint32_t n = rte_align32pow2(RTE_MAX(slots, 2u));
	uint32_t np = rte_align32pow2(2 * n * RTE_MAX(slot_size / 8u, 1u));
	struct rb2_lend *l;

	l = rte_zmalloc_socket("rb2_lend", sizeof(*l) + (size_t)np * sizeof(*l->ptr) +
			       (size_t)2 * n * sizeof(*l->msg), RTE_CACHE_LINE_SIZE, socket);
	if (l == NULL)
		return NULL;
	l->ptr = (struct rte_mbuf **)(l + 1);
	l->pmask = np - 1;
	l->msg = (void *)(l->ptr + np);
	l->mmask = 2 * n - 1;
	return l;
}

/* Free the @n oldest mbufs lent. */
static void
lend_free(struct rb2_lend *l, unsigned int n)
{
	uint32_t at = (uint32_t)l->p_head & l->pmask;
	uint32_t first = RTE_MIN(n, l->pmask + 1 - at);

	if (n == 0)
		return;
	rte_pktmbuf_free_bulk(&l->ptr[at], first);
	if (n > first)
		rte_pktmbuf_free_bulk(l->ptr, n - first);
	l->p_head += n;
	l->returned += n;
}

void
rb2_pkt_lend_reclaim(struct rb2_edge *e, bool fresh)
{
	struct rb2_lend *l = e->lend;
	unsigned int n = 0;
	uint64_t rel;

	if (l->m_head == l->m_tail)
		return;
	rel = rb2_tx_released(e->tx, fresh);
	while (l->m_head != l->m_tail && (int64_t)(rel - l->msg[l->m_head & l->mmask].end) >= 0)
		n += l->msg[l->m_head++ & l->mmask].n;
	lend_free(l, n);
}

void
rb2_pkt_lend_end(struct rb2_pipeline *pl)
{
	for (unsigned int i = 0; i < pl->nstages; i++)
		for (unsigned int j = 0; j < pl->stages[i].nedges; j++) {
			struct rb2_lend *l = pl->stages[i].edges[j].lend;

			if (pl->stages[i].edges[j].ret_ring != NULL)
				rb2_pkt_ring_reclaim(&pl->stages[i].edges[j]);
			if (l == NULL)
				continue;
			lend_free(l, (unsigned int)(l->p_tail - l->p_head));
			l->m_head = l->m_tail;
		}
}

/* carry = lend: the pointers travel as on a pointer link, and are kept
 * until the receiver has released their message; then this lcore frees
 * them, so the mbufs go back to its own mempool cache, where its rx takes
 * them again, instead of crossing the pool's common ring each way. */
static int
emit_lent(struct rb2_stage *st, unsigned int edge, struct rb2_edge *e, struct rte_mbuf **pkts,
	  unsigned int n)
{
	struct rb2_lend *l = e->lend;

	rb2_pkt_lend_reclaim(e, false);
	for (unsigned int off = 0; off < n;) {
		unsigned int k = RTE_MIN(n - off, e->ptrs_max);
		struct rb2_tx_ptrs p;
		int ret;

		/* Never full when sized by rb2_pkt_lend_create(); if it were,
		 * wait for the receiver rather than lose track of an mbuf. */
		while ((l->p_tail - l->p_head) + k > l->pmask + 1u ||
		       l->m_tail - l->m_head > l->mmask) {
			if (st->pl->stop >= 2) {
				drop(st, pkts + off, n - off);
				return -ECANCELED;
			}
			rb2_pkt_lend_reclaim(e, true);
			rte_pause();
		}
		ret = rb2_stage_emit(st, edge, pkts + off, k * (uint32_t)sizeof(*pkts));
		if (ret < 0) {
			drop(st, pkts + off, n - off);
			return ret;
		}
		for (unsigned int j = 0; j < k; j++)
			l->ptr[(l->p_tail + j) & l->pmask] = pkts[off + j];
		l->p_tail += k;
		rb2_tx_pointers(e->tx, &p);
		l->msg[l->m_tail & l->mmask].end = p.tail;
		l->msg[l->m_tail++ & l->mmask].n = k;
		off += k;
	}
	return (int)n;
}

/* via = rte_ring (a baseline): the pointers into DPDK's SP/SC ring, waiting
 * for room as an RB2 channel's emit does. */
void
rb2_pkt_ring_reclaim(struct rb2_edge *e)
{
	void *back[RB2_STAGE_BURST_MAX];
	unsigned int k;

	while ((k = rte_ring_sc_dequeue_burst(e->ret_ring, back, RTE_DIM(back), NULL)) > 0)
		rte_pktmbuf_free_bulk((struct rte_mbuf **)back, k);
}

static int
emit_ring(struct rb2_stage *st, struct rb2_edge *e, struct rte_mbuf **pkts, unsigned int n)
{
	unsigned int off = 0;

	if (e->ret_ring != NULL)
		rb2_pkt_ring_reclaim(e);
	while (off < n) {
		off += rte_ring_sp_enqueue_burst(e->ring, (void *const *)(pkts + off), n - off,
						 NULL);
		if (off == n)
			break;
		if (st->pl->stop >= 2) {
			STAT_ADD(e->failed, 1);
			drop(st, pkts + off, n - off);
			return -ECANCELED;
		}
		STAT_ADD(e->waits, 1);
		if (e->ret_ring != NULL)
			rb2_pkt_ring_reclaim(e);
		rte_pause();
	}
	STAT_ADD(e->msgs, n);
	STAT_ADD(e->bytes, (uint64_t)n * sizeof(*pkts));
	return (int)n;
}

int
rb2_stage_emit_pkts(struct rb2_stage *st, unsigned int edge, struct rte_mbuf **pkts,
		    unsigned int n)
{
	struct rb2_edge *e;

	if (edge >= st->nedges || !st->edges[edge].pkts) {
		drop(st, pkts, n);
		rb2_stage_fail(st, "emitted packets on edge %u, which is not a packet edge "
			       "(rb2_stage_ops.pkt_edges)", edge);
		return -EINVAL;
	}
	e = &st->edges[edge];
	if (e->ring != NULL)
		return emit_ring(st, e, pkts, n);
	if (!e->ptrs)
		return emit_bytes(st, edge, pkts, n);
	if (e->lend != NULL)
		return emit_lent(st, edge, e, pkts, n);
	for (unsigned int off = 0; off < n;) {
		unsigned int k = RTE_MIN(n - off, e->ptrs_max);
		int ret = rb2_stage_emit(st, edge, pkts + off, k * (uint32_t)sizeof(*pkts));

		if (ret < 0) {
			drop(st, pkts + off, n - off);
			return ret;
		}
		off += k;
	}
	return (int)n;
}

