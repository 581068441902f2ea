/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * The tx stage: a sink that takes the packets it is given and transmits
 * them on one TX queue of a DPDK port (rte_eth_tx_burst), retrying for a
 * bounded time (tx_retry_us) while the queue is full. What the port still
 * refuses then is freed and counted as refused, never silently lost.
 */

#include <errno.h>
#include <inttypes.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_pause.h>

#include <rb2_stage.h>
#include <rb2_stage_pkt.h>

#include "rb2_port.h"

struct tx_priv {
	uint16_t port, queue;
	uint64_t retry_tsc;
	struct rb2_port_conf conf;
	int started, released, warned;
	int handed;                /* the port was given packets (rb2_port_tx_sent()) */
	uint64_t *c_sent, *c_refused, *c_opackets, *c_oerrors;
};

static void
refresh_stats(struct tx_priv *p)
{
	struct rte_eth_stats s;

	if (rte_eth_stats_get(p->port, &s) != 0)
		return;
	__atomic_store_n(p->c_opackets, s.opackets, __ATOMIC_RELAXED);
	__atomic_store_n(p->c_oerrors, s.oerrors, __ATOMIC_RELAXED);
}

static int
tx_init(struct rb2_stage *st, struct rb2_stage_args *a)
{
	struct tx_priv *p = rb2_stage_priv(st);
	uint64_t retry_us, txd, link_ms;
	const char *port;
	char err[512];
	int q;

	if (rb2_stage_arg_str(a, "port", NULL, &port) < 0 ||
	    rb2_stage_arg_u64(a, "tx_retry_us", 1000, 0, 10000000, &retry_us) < 0 ||
	    rb2_stage_arg_u64(a, "tx_desc", 0, 0, 32768, &txd) < 0 ||
	    rb2_stage_arg_u64(a, "link_timeout_ms", 5000, 0, 600000, &link_ms) < 0)
		return -EINVAL;
	if (port == NULL) {
		rb2_stage_err(st, "'port' is missing: a port index (0) or device name (net_ring0)");
		return -EINVAL;
	}
	if (rb2_port_resolve(port, &p->port, err, sizeof(err)) != 0) {
		rb2_stage_err(st, "%s", err);
		return -ENODEV;
	}
	q = rb2_port_attach(p->port, NULL, err, sizeof(err));
	if (q < 0) {
		rb2_stage_err(st, "%s", err);
		return q;
	}
	p->queue = (uint16_t)q;
	p->retry_tsc = retry_us * rte_get_tsc_hz() / 1000000;
	p->conf = (struct rb2_port_conf){ .tx_desc = (uint16_t)txd, .promisc = 1, .rss = 1,
					  .link_timeout_ms = (unsigned int)link_ms };
	p->c_sent = rb2_stage_counter(st, "sent");
	p->c_refused = rb2_stage_counter(st, "refused");
	p->c_opackets = rb2_stage_counter(st, "port_opackets");
	p->c_oerrors = rb2_stage_counter(st, "port_oerrors");
	return 0;
}

static int
tx_start(struct rb2_stage *st)
{
	struct tx_priv *p = rb2_stage_priv(st);
	char err[512];
	int ret = rb2_port_start(p->port, &p->conf, err, sizeof(err));

	p->started = 1;
	if (ret != 0)
		rb2_stage_err(st, "%s", err);
	return ret;
}

static void
tx_process(struct rb2_stage *st, const struct rb2_msg *msgs, unsigned int n)
{
	struct tx_priv *p = rb2_stage_priv(st);
	struct rte_mbuf *pkts[RB2_STAGE_BURST_MAX];
	unsigned int k = 0, sent = 0;
	uint64_t deadline = 0;

	(void)msgs;
	for (unsigned int i = 0; i < n; i++) {
		struct rte_mbuf *m = rb2_stage_pkt_take(st, i);

		if (m != NULL)       /* NULL: no mbuf for it (counted as dropped) */
			pkts[k++] = m;
	}
	while (sent < k) {
		uint16_t r = rte_eth_tx_burst(p->port, p->queue, pkts + sent,
					      (uint16_t)RTE_MIN(k - sent, (unsigned int)UINT16_MAX));

		sent += r;
		if (r > 0 || sent == k)
			continue;
		/* A full queue drains as the port sends; a bounded wait. */
		if (deadline == 0)
			deadline = rte_rdtsc() + p->retry_tsc;
		else if (rte_rdtsc() > deadline)
			break;
		rte_pause();
	}
	rb2_stage_count(p->c_sent, sent);
	if (sent > 0 && !p->handed) {    /* the port may hold mbufs from now on */
		p->handed = 1;
		rb2_port_tx_sent(p->port);
	}
	if (sent < k) {
		rte_pktmbuf_free_bulk(pkts + sent, k - sent);
		rb2_stage_count(p->c_refused, k - sent);
		if (!p->warned) {
			p->warned = 1;
			rb2_stage_err(st, "port %u (%s) refuses packets: its TX queue stayed full "
				      "for tx_retry_us (the link is slower than the input, or down); "
				      "refused packets are freed and counted", p->port,
				      rb2_port_name(p->port));
		}
	}
}

static int
tx_drain(struct rb2_stage *st)
{
	struct tx_priv *p = rb2_stage_priv(st);

	refresh_stats(p);
	if (!p->released) {
		p->released = 1;
		rb2_port_release(p->port);
		refresh_stats(p);
	}
	return 0;
}

static void
tx_report(struct rb2_stage *st, FILE *out)
{
	struct tx_priv *p = rb2_stage_priv(st);

	fprintf(out, "tx '%s': port %u (%s, PMD %s) queue %u: %" PRIu64 " packets sent, %" PRIu64
		" refused by the port (freed)\n  port: opackets %" PRIu64 ", oerrors %" PRIu64 "\n",
		rb2_stage_name(st), p->port, rb2_port_name(p->port), rb2_port_driver(p->port),
		p->queue, *p->c_sent, *p->c_refused, *p->c_opackets, *p->c_oerrors);
}

static void
tx_fini(struct rb2_stage *st)
{
	struct tx_priv *p = rb2_stage_priv(st);

	if (p->started && !p->released)
		rb2_port_release(p->port);
	rb2_port_detach(p->port);
}

static const struct rb2_stage_ops tx_ops = {
	.api_version = RB2_STAGE_API_VERSION,
	.name = "tx",
	.summary = "transmits the packets it takes on a DPDK port's TX queue, retrying "
		   "tx_retry_us, counting what the port refuses (port, tx_retry_us, tx_desc)",
	.takes_pkts = 1,
	.priv_size = sizeof(struct tx_priv),
	.init = tx_init,
	.start = tx_start,
	.process = tx_process,
	.drain = tx_drain,
	.report = tx_report,
	.fini = tx_fini,
};
RB2_STAGE_REGISTER(tx_ops);
