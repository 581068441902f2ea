/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * An out-of-tree packet stage, built as a plugin with nothing but pkg-config:
 *
 *   make                    # cc -shared -fPIC pkt_filter.c $(pkg-config --cflags --libs librb2)
 *   rb2-nf -l 0-1 --no-pci --vdev net_pcap0,rx_pcap=in.pcap \
 *          --vdev net_pcap1,tx_pcap=out.pcap -- \
 *          --plugin ./pkt_filter.so --config fwd.ini --idle-ms 500
 *
 * "pkt_filter" takes packets (mbufs) and forwards on its packet edge "out"
 * the IP packets of one protocol, decoded with rb2's own decoder
 * (rb2_trace_parse(): VLAN, QinQ, PPPoE and MPLS included). It takes the
 * packets it keeps (they are then its own, and emitting them hands them on);
 * the pipeline frees the others after the burst, and counts them here as
 * "filtered".
 *
 *   proto = N     the IP protocol kept (default 0: every IP packet)
 */

#include <errno.h>

#include <rb2_stage.h>
#include <rb2_stage_pkt.h>
#include <rb2_trace.h>

struct pkt_filter {
	uint64_t proto;
	uint64_t *kept, *filtered;
};

static int
pkt_filter_init(struct rb2_stage *st, struct rb2_stage_args *args)
{
	struct pkt_filter *f = rb2_stage_priv(st);

	if (rb2_stage_arg_u64(args, "proto", 0, 0, 255, &f->proto) < 0)
		return -EINVAL;
	f->kept = rb2_stage_counter(st, "kept");
	f->filtered = rb2_stage_counter(st, "filtered");
	return 0;
}

static void
pkt_filter_process(struct rb2_stage *st, const struct rb2_msg *msgs, unsigned int n)
{
	struct pkt_filter *f = rb2_stage_priv(st);
	const struct rb2_pkt *pk = rb2_stage_pkts(st);
	struct rte_mbuf *keep[RB2_STAGE_BURST_MAX];
	unsigned int k = 0;

	for (unsigned int i = 0; i < n; i++) {
		struct rb2_rec r;
		struct rte_mbuf *m;

		/* The packet is read in place: msgs[i] is its first segment,
		 * framed as its port frames packets (Ethernet, or a capture's
		 * own link type through net_pcap). */
		rb2_trace_parse(rb2_pkt_linktype(&pk[i]), msgs[i].data, msgs[i].len,
				pk[i].pkt_len, &r);
		if ((r.kind != RB2_REC_IPV4 && r.kind != RB2_REC_IPV6) ||
		    (f->proto != 0 && r.proto != f->proto)) {
			rb2_stage_count(f->filtered, 1);
			continue;         /* not taken: the pipeline frees it */
		}
		m = rb2_stage_pkt_take(st, i);
		if (m != NULL)            /* NULL: no mbuf for it, counted */
			keep[k++] = m;
	}
	rb2_stage_count(f->kept, k);
	if (k > 0)
		rb2_stage_emit_pkts(st, 0, keep, k); /* hands them on, even on failure */
}

static const char *const pkt_filter_edges[] = { "out", NULL };

static const struct rb2_stage_ops pkt_filter_ops = {
	.api_version = RB2_STAGE_API_VERSION,
	.name = "pkt_filter",
	.summary = "forwards the IP packets of one protocol (proto; 0: all IP)",
	.edges = pkt_filter_edges,
	.pkt_edges = 1u << 0,
	.takes_pkts = 1,
	.priv_size = sizeof(struct pkt_filter),
	.init = pkt_filter_init,
	.process = pkt_filter_process,
};
RB2_STAGE_REGISTER(pkt_filter_ops);
