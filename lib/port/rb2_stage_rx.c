/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * The rx stage: a source that reads one RX queue of a DPDK port
 * (rte_eth_rx_burst) into mbufs of a pool on its lcore's socket, stamps each
 * with its receive time, and emits them on its packet edge "out". The
 * port's counters (rte_eth_stats) are its counters too, refreshed every
 * 100 ms, so they appear beside it in the summary, the JSON and telemetry;
 * its report reconciles them with what it passed on.
 */

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <time.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <rb2_stage.h>
#include <rb2_stage_pkt.h>

#include "rb2_port.h"

#define RX_BURST_MAX 256
#define STATS_EVERY_MS 100

struct rx_priv {
	uint16_t port, queue;
	unsigned int burst;
	uint64_t count;            /* stop after this many packets (0: never) */
	uint64_t idle_tsc;         /* stop after this long without one (0: never) */
	uint64_t last_tsc, next_stats_tsc;
	uint64_t received;
	int stamp;                 /* we stamp receive times (the PMD does not) */
	uint64_t tsc_hz, base_tsc, base_ns;
	struct rte_mempool *mp;
	struct rb2_port_conf conf;
	int started, released, warned_nombuf;
	uint64_t *c_ipackets, *c_imissed, *c_ierrors, *c_nombuf, *c_qpackets;
};

/* Copy the port's counters into the stage's; warn once about rx_nombuf. */
static void
refresh_stats(struct rb2_stage *st, struct rx_priv *p)
{
	struct rte_eth_stats s;

	if (rte_eth_stats_get(p->port, &s) != 0)
		return;
	__atomic_store_n(p->c_ipackets, s.ipackets, __ATOMIC_RELAXED);
	__atomic_store_n(p->c_imissed, s.imissed, __ATOMIC_RELAXED);
	__atomic_store_n(p->c_ierrors, s.ierrors, __ATOMIC_RELAXED);
	__atomic_store_n(p->c_nombuf, s.rx_nombuf, __ATOMIC_RELAXED);
	if (p->queue < RTE_ETHDEV_QUEUE_STAT_CNTRS)
		__atomic_store_n(p->c_qpackets, s.q_ipackets[p->queue], __ATOMIC_RELAXED);
	if (s.rx_nombuf > 0 && !p->warned_nombuf) {
		p->warned_nombuf = 1;
		rb2_stage_err(st, "port %u (%s): %" PRIu64 " packets found no mbuf in pool '%s' "
			      "(%u mbufs): raise pool_size", p->port, rb2_port_name(p->port),
			      s.rx_nombuf, p->mp->name, p->mp->size);
	}
}

static int
rx_init(struct rb2_stage *st, struct rb2_stage_args *a)
{
	struct rx_priv *p = rb2_stage_priv(st);
	const char *port, *pool, *ts;
	uint64_t burst, size, cache, room, rxd, link_ms, idle_ms;
	char err[512];
	int promisc, rss, q;

	if (rb2_stage_arg_str(a, "port", NULL, &port) < 0 ||
	    rb2_stage_arg_u64(a, "burst", 32, 1, RX_BURST_MAX, &burst) < 0 ||
	    rb2_stage_arg_str(a, "pool", NULL, &pool) < 0 ||
	    rb2_stage_arg_u64(a, "pool_size", 8191, 64, 1u << 26, &size) < 0 ||
	    rb2_stage_arg_u64(a, "pool_cache", 256, 0, RTE_MEMPOOL_CACHE_MAX_SIZE, &cache) < 0 ||
	    rb2_stage_arg_u64(a, "data_room", RTE_MBUF_DEFAULT_BUF_SIZE,
			      RTE_PKTMBUF_HEADROOM + 64, UINT16_MAX, &room) < 0 ||
	    rb2_stage_arg_u64(a, "rx_desc", 0, 0, 32768, &rxd) < 0 ||
	    rb2_stage_arg_bool(a, "promisc", 1, &promisc) < 0 ||
	    rb2_stage_arg_bool(a, "rss", 1, &rss) < 0 ||
	    rb2_stage_arg_u64(a, "link_timeout_ms", 5000, 0, 600000, &link_ms) < 0 ||
	    rb2_stage_arg_u64(a, "count", 0, 0, UINT64_MAX, &p->count) < 0 ||
	    rb2_stage_arg_u64(a, "idle_ms", 0, 0, 86400000, &idle_ms) < 0 ||
	    rb2_stage_arg_str(a, "timestamps", "auto", &ts) < 0)
		return -EINVAL;
	if (port == NULL) {
		rb2_stage_err(st, "'port' is missing: a port index (0) or device name (net_pcap0)");
		return -EINVAL;
	}
	if (strcmp(ts, "auto") != 0 && strcmp(ts, "pmd") != 0 && strcmp(ts, "clock") != 0) {
		rb2_stage_err(st, "timestamps = '%s': expected auto, pmd or clock", ts);
		return -EINVAL;
	}
	if (rb2_port_resolve(port, &p->port, err, sizeof(err)) != 0) {
		rb2_stage_err(st, "%s", err);
		return -ENODEV;
	}
	p->mp = rb2_pkt_pool(pool, rb2_stage_socket(st), (unsigned int)size, (unsigned int)cache,
			     (uint16_t)room);
	if (p->mp == NULL) {
		rb2_stage_err(st, "no mbuf pool of %" PRIu64 " mbufs: %s (reserve more hugepage "
			      "memory, or lower pool_size)", size, rte_strerror(rte_errno));
		return -ENOMEM;
	}
	q = rb2_port_attach(p->port, p->mp, err, sizeof(err));
	if (q < 0) {
		rb2_stage_err(st, "%s", err);
		return q;
	}
	p->queue = (uint16_t)q;
	p->burst = (unsigned int)burst;
	p->conf = (struct rb2_port_conf){ .rx_desc = (uint16_t)rxd, .promisc = promisc,
					  .rss = rss, .link_timeout_ms = (unsigned int)link_ms };
	/* A PMD's own timestamps: net_pcap's are the capture's (what a replay
	 * must keep); a NIC's run on its own clock, so by default we stamp. */
	p->stamp = strcmp(ts, "clock") == 0 ||
		(strcmp(ts, "auto") == 0 && strcmp(rb2_port_driver(p->port), "net_pcap") != 0);
	p->tsc_hz = rte_get_tsc_hz();
	p->idle_tsc = idle_ms * p->tsc_hz / 1000;
	p->c_qpackets = rb2_stage_counter(st, "received");
	p->c_ipackets = rb2_stage_counter(st, "port_ipackets");
	p->c_imissed = rb2_stage_counter(st, "port_imissed");
	p->c_ierrors = rb2_stage_counter(st, "port_ierrors");
	p->c_nombuf = rb2_stage_counter(st, "port_rx_nombuf");
	return 0;
}

static int
rx_start(struct rb2_stage *st)
{
	struct rx_priv *p = rb2_stage_priv(st);
	struct timespec now;
	char err[512];
	int ret;

	ret = rb2_port_start(p->port, &p->conf, err, sizeof(err));
	p->started = 1;
	if (ret != 0) {
		rb2_stage_err(st, "%s", err);
		return ret;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	p->base_tsc = rte_rdtsc();
	p->base_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
	p->last_tsc = p->base_tsc;
	return 0;
}

static int
rx_poll(struct rb2_stage *st)
{
	struct rx_priv *p = rb2_stage_priv(st);
	struct rte_mbuf *pkts[RX_BURST_MAX];
	unsigned int want = p->burst;
	uint64_t now;
	uint16_t n;
	int ret;

	if (p->count != 0) {
		if (p->received >= p->count)
			return -ENODATA;
		want = (unsigned int)RTE_MIN((uint64_t)want, p->count - p->received);
	}
	n = rte_eth_rx_burst(p->port, p->queue, pkts, (uint16_t)want);
	now = rte_rdtsc();
	if (now >= p->next_stats_tsc) {
		refresh_stats(st, p);
		p->next_stats_tsc = now + p->tsc_hz / (1000 / STATS_EVERY_MS);
	}
	if (n == 0) {
		if (p->idle_tsc != 0 && now - p->last_tsc > p->idle_tsc)
			return -ENODATA;
		return 0;
	}
	p->last_tsc = now;
	if (!p->stamp) {
		/* net_pcap gives the capture's time in microseconds (22.11,
		 * measured) or, in later releases, nanoseconds: below 1e17
		 * (the year 5138 in us, 1973 in ns) it is microseconds. */
		for (uint16_t i = 0; i < n; i++) {
			uint64_t t = rb2_pkt_ts(pkts[i]);

			if (t != 0 && t < 100000000000000000ull)
				rb2_pkt_ts_set(pkts[i], t * 1000);
		}
	} else {
		uint64_t ns = p->base_ns + (uint64_t)((double)(now - p->base_tsc) * 1e9 /
						      (double)p->tsc_hz);

		for (uint16_t i = 0; i < n; i++)
			rb2_pkt_ts_set(pkts[i], ns);
	}
	p->received += n;
	ret = rb2_stage_emit_pkts(st, 0, pkts, n);
	return ret < 0 ? ret : (int)n;
}

/* The end (input finished, count or idle reached, or a stop): the port's
 * last counters, then the port stops once its last stage is done. */
static int
rx_drain(struct rb2_stage *st)
{
	struct rx_priv *p = rb2_stage_priv(st);

	refresh_stats(st, p);
	if (!p->released) {
		p->released = 1;
		rb2_port_release(p->port);
		refresh_stats(st, p);
	}
	return 0;
}

static void
rx_report(struct rb2_stage *st, FILE *out)
{
	struct rx_priv *p = rb2_stage_priv(st);
	uint64_t ip = __atomic_load_n(p->c_ipackets, __ATOMIC_RELAXED);
	unsigned int in_use = rte_mempool_in_use_count(p->mp);

	fprintf(out, "rx '%s': port %u (%s, PMD %s) queue %u: %" PRIu64 " packets received and "
		"passed on%s\n", rb2_stage_name(st), p->port, rb2_port_name(p->port),
		rb2_port_driver(p->port), p->queue, p->received,
		p->count != 0 && p->received >= p->count ? " (count reached)" : "");
	fprintf(out, "  port: ipackets %" PRIu64 ", imissed %" PRIu64 ", ierrors %" PRIu64
		", rx_nombuf %" PRIu64 " (not received: missed, errored or without an mbuf)\n", ip,
		*p->c_imissed, *p->c_ierrors, *p->c_nombuf);
	fprintf(out, "  pool '%s': %u of %u mbufs in use after the run\n", p->mp->name, in_use,
		p->mp->size);
	if (in_use > 0) {
		char holders[256];

		if (rb2_port_holders(holders, sizeof(holders)) > 0)
			fprintf(out, "  (the TX rings of port %s may hold them: a PMD keeps what it "
				"was given until it has sent it)\n", holders);
		else
			rb2_stage_fail(st, "%u mbufs of pool '%s' were never freed", in_use,
				       p->mp->name);
	}
}

static void
rx_fini(struct rb2_stage *st)
{
	struct rx_priv *p = rb2_stage_priv(st);

	if (p->started && !p->released)
		rb2_port_release(p->port);
	rb2_port_detach(p->port);
}

static const char *const rx_edges[] = { "out", NULL };

static const struct rb2_stage_ops rx_ops = {
	.api_version = RB2_STAGE_API_VERSION,
	.name = "rx",
	.summary = "receives packets from a DPDK port's RX queue (port, burst, pool_size, "
		   "pool_cache, data_room, count, idle_ms, rss, promisc, link_timeout_ms)",
	.edges = rx_edges,
	.pkt_edges = 1u << 0,
	.priv_size = sizeof(struct rx_priv),
	.init = rx_init,
	.start = rx_start,
	.poll = rx_poll,
	.drain = rx_drain,
	.report = rx_report,
	.fini = rx_fini,
};
RB2_STAGE_REGISTER(rx_ops);
