/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Packets on edges (rb2_stage_pkt.h): emitting them as pointer or byte
 * carriers, turning a burst of carriers into one message per packet for the
 * next stage, taking packets, and freeing what the stage did not take.
 */

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_kvargs.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_pause.h>
#include <rte_ring.h>

#include "rb2_build_config.h"
#include "rb2_link.h"
#include "rb2_pipeline_private.h"
#include "rb2_stage_pkt.h"
#if RB2_HAS_PCAP
#include "rb2_trace.h"
#endif

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
	b->ntaken++;
	if (b->pkt[i].m != NULL) {         /* pointer link: the mbuf itself */
		m = b->pkt[i].m;
		b->free[i] = NULL;
		return m;
	}
	if (b->pool == NULL)
		b->pool = rb2_pkt_pool(NULL, st->socket, RB2_PKT_POOL_DEFAULT, 256,
				       RTE_MBUF_DEFAULT_BUF_SIZE);
	m = b->pool != NULL ? pkt_copy(b->pool, b->msg[i].data, b->msg[i].len) : NULL;
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
	if (b->ntaken == 0 && b->nbytes == 0 && b->nplain == 0) {
		rte_pktmbuf_free_bulk(b->free, b->n);     /* all, the headers read */
	} else if (b->ntaken == 0 && b->nplain == b->n && !b->pools_mixed) {
		/* All plain, of one pool: back to it, no header read. */
		rte_mempool_put_bulk(b->pool0, (void *const *)b->free, b->n);
	} else {
		for (unsigned int i = 0; i < b->n; i++) {
			b->taken[i] = false;
			if (b->free[i] == NULL)
				continue;
			if (b->put[i] != NULL)
				rte_mempool_put(b->put[i], b->free[i]);
			else
				b->free[left++] = b->free[i];
		}
		if (left > 0)
			rte_pktmbuf_free_bulk(b->free, left);
	}
	b->n = 0;
	b->ntaken = 0;
	b->nbytes = 0;
	b->nplain = 0;
	b->pools_mixed = false;
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
	b->free[i] = m;
	b->put[i] = NULL;
}

/* A packet of a descriptor: nothing of its mbuf is read. */
static inline void
burst_add_desc(struct rb2_pkt_burst *b, const struct rb2_pkt_desc *d)
{
	unsigned int i = b->n++;

	b->msg[i].data = d->data;
	b->msg[i].len = d->data_len;
	b->pkt[i] = (struct rb2_pkt){ .m = d->m, .ts_ns = d->ts_ns, .pkt_len = d->pkt_len,
				      .port = d->port };
	b->free[i] = d->m;
	b->put[i] = d->pool;
	if (d->pool != NULL) {
		if (b->nplain++ == 0)
			b->pool0 = d->pool;
		else if (d->pool != b->pool0)
			b->pools_mixed = true;
	}
}

/*
 * Pointer carriers: the mbufs were last written on the sender's lcore (rx
 * reset them), so each of their header lines is a cross-core miss. A cursor
 * PF_AHEAD packets ahead, across the messages of the burst, prefetches both
 * lines (the second holds the receive time) while the packets before it are
 * taken, so that the misses overlap instead of coming one by one.
 */
#define PF_AHEAD 16u

struct pf_cursor {
	const struct rb2_msg *msgs;
	unsigned int n, i, j;
	bool desc;          /* descriptors: prefetch the data, not the mbuf */
};

static inline void
pf_next(struct pf_cursor *c)
{
	size_t each = c->desc ? sizeof(struct rb2_pkt_desc) : sizeof(struct rte_mbuf *);

	while (c->i < c->n && c->j >= c->msgs[c->i].len / each) {
		c->i++;
		c->j = 0;
	}
	if (c->i == c->n)
		return;
	if (c->desc) {
		rte_prefetch0(((const struct rb2_pkt_desc *)c->msgs[c->i].data)[c->j++].data);
		return;
	}
	struct rte_mbuf *m = ((struct rte_mbuf *const *)c->msgs[c->i].data)[c->j++];

	rte_prefetch0(m);
	rte_prefetch0(RTE_PTR_ADD(m, RTE_CACHE_LINE_SIZE));
}

void
rb2_pkt_deliver(struct rb2_worker *w, struct rb2_stage *to, const struct rb2_msg *msgs,
		unsigned int n, enum rb2_pkt_carrier carrier)
{
	struct rb2_pkt_burst *b = w->pkb;
	struct pf_cursor pf = { .msgs = msgs, .desc = carrier == RB2_PKTS_DESC,
				.n = carrier == RB2_PKTS_PTRS || carrier == RB2_PKTS_DESC ? n : 0 };

	for (unsigned int d = 0; d < PF_AHEAD; d++)
		pf_next(&pf);
	for (unsigned int i = 0; i < n; i++) {
		if (carrier == RB2_PKTS_DESC) {
			const struct rb2_pkt_desc *d = msgs[i].data;
			unsigned int k = msgs[i].len / sizeof(*d);

			for (unsigned int j = 0; j < k; j++) {
				pf_next(&pf);
				if (b->n == RB2_STAGE_BURST_MAX)
					burst_run(b, to);
				burst_add_desc(b, &d[j]);
			}
			continue;
		}
		if (carrier != RB2_PKTS_BYTES) {
			struct rte_mbuf *const *p = msgs[i].data;
			unsigned int k = msgs[i].len / sizeof(*p);

			for (unsigned int j = 0; j < k; j++) {
				pf_next(&pf);     /* nothing, unless from another lcore */
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
		b->nbytes++;
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
void
rb2_pkt_drop(struct rb2_stage *st, struct rte_mbuf **pkts, unsigned int n)
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
			rb2_pkt_drop(st, &pkts[i], 1);
			continue;
		}
		if (ret < 0) {
			rb2_pkt_drop(st, pkts + i, n - i);
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

/* A channel of pointers: a descriptor per packet (struct rb2_pkt_desc),
 * up to ptrs_max in one message. */
static int
emit_desc(struct rb2_stage *st, unsigned int edge, struct rb2_edge *e, struct rte_mbuf **pkts,
	  unsigned int n)
{
	for (unsigned int off = 0; off < n;) {
		unsigned int k = RTE_MIN(n - off, e->ptrs_max);
		uint32_t len = k * (uint32_t)sizeof(struct rb2_pkt_desc);
		struct rb2_pkt_desc *d;
		size_t stride;
		int ret;

		ret = rb2_stage_emit_reserve(st, edge, len, 1, (void **)&d, &stride);
		if (ret < 0) {
			rb2_pkt_drop(st, pkts + off, n - off);
			return ret;
		}
		for (unsigned int j = 0; j < k; j++)
			rb2_pkt_desc_fill(&d[j], pkts[off + j]);
		rb2_stage_emit_commit(st, edge, len, 1);
		off += k;
	}
	return (int)n;
}

int
rb2_stage_emit_pkts(struct rb2_stage *st, unsigned int edge, struct rte_mbuf **pkts,
		    unsigned int n)
{
	struct rb2_edge *e;

	if (edge >= st->nedges || !st->edges[edge].pkts) {
		rb2_pkt_drop(st, pkts, n);
		rb2_stage_fail(st, "emitted packets on edge %u, which is not a packet edge "
			       "(rb2_stage_ops.pkt_edges)", edge);
		return -EINVAL;
	}
	e = &st->edges[edge];
	if (unlikely(e->xops != NULL))     /* a link of another kind (rb2_link.h) */
		return e->xops->emit_pkts(st, e, pkts, n);
	if (!e->ptrs)
		return emit_bytes(st, edge, pkts, n);
	if (e->desc)
		return emit_desc(st, edge, e, pkts, n);
	for (unsigned int off = 0; off < n;) {
		unsigned int k = RTE_MIN(n - off, e->ptrs_max);
		int ret = rb2_stage_emit(st, edge, pkts + off, k * (uint32_t)sizeof(*pkts));

		if (ret < 0) {
			rb2_pkt_drop(st, pkts + off, n - off);
			return ret;
		}
		off += k;
	}
	return (int)n;
}


/* ---- link types of ports ---------------------------------------------- */

uint16_t rb2_pkt_port_lt[RTE_MAX_ETHPORTS];

/* The capture a net_pcap port reads, into @p path (empty: none). */
static void
pcap_rx_file(uint16_t port, char *path, size_t len)
{
	struct rte_eth_dev_info info;
	const struct rte_devargs *da;
	struct rte_kvargs *kv;
	const char *file;

	path[0] = '\0';
	if (rte_eth_dev_info_get(port, &info) != 0 || info.driver_name == NULL ||
	    strcmp(info.driver_name, "net_pcap") != 0 || info.device == NULL)
		return;
	da = rte_dev_devargs(info.device);
	if (da == NULL || da->args == NULL)
		return;
	kv = rte_kvargs_parse(da->args, NULL);
	if (kv == NULL)
		return;
	file = rte_kvargs_get(kv, "rx_pcap");
	if (file != NULL)
		snprintf(path, len, "%s", file);
	rte_kvargs_free(kv);
}

int
rb2_pkt_port_linktype(uint16_t port)
{
	int lt = 1;     /* DLT_EN10MB: what every other port receives */
	char path[PATH_MAX];

	pcap_rx_file(port, path, sizeof(path));
#if RB2_HAS_PCAP
	if (path[0] != '\0') {
		char err[256];
		struct rb2_trace *t = rb2_trace_open(path, err, sizeof(err));

		if (t != NULL) {
			lt = rb2_trace_linktype(t);
			rb2_trace_close(t);
		}
	}
#endif
	if (port < RTE_MAX_ETHPORTS)
		__atomic_store_n(&rb2_pkt_port_lt[port], (uint16_t)(lt + 1), __ATOMIC_RELAXED);
	return lt;
}
