/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * The "parse" stage: packets in, the measurement NF's records out,
 * with the decoder the pcap reader uses (rb2_trace_parse()), so the same
 * packets give the same records whether they come from a file or a port.
 * It reads each packet in place (its first segment holds the headers) and
 * frees nothing: the pipeline frees the mbufs after the burst.
 *
 *   batch = K      records per message (default 32, at most 64)
 *   linktype = N   the packets' DLT_ link type; default auto: each packet's
 *                  port's (rb2_pkt_linktype(): Ethernet, or the capture's
 *                  own for a net_pcap port reading a file)
 */

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include <rb2_stage.h>
#include <rb2_stage_pkt.h>
#include <rb2_trace.h>

struct parse_priv {
	uint64_t batch, linktype;
	int by_port;                 /* linktype = auto */
	uint64_t seq;
	struct rb2_trace_stats tst;
	uint64_t *c_ipv4, *c_ipv6, *c_nonip, *c_malformed;
};

static int
parse_init(struct rb2_stage *st, struct rb2_stage_args *a)
{
	struct parse_priv *p = rb2_stage_priv(st);
	struct rb2_rec probe;

	const char *lt;

	if (rb2_stage_arg_u64(a, "batch", 32, 1, RB2_REC_BATCH_MAX, &p->batch) < 0 ||
	    rb2_stage_arg_str(a, "linktype", "auto", &lt) < 0)
		return -EINVAL;
	p->by_port = strcmp(lt, "auto") == 0;
	if (!p->by_port &&
	    rb2_stage_arg_u64(a, "linktype", 1, 0, 65535, &p->linktype) < 0)
		return -EINVAL;
	if (!p->by_port && rb2_trace_parse((int)p->linktype, NULL, 0, 0, &probe) == -ENOTSUP) {
		rb2_stage_err(st, "linktype %" PRIu64 " is not one the decoder knows "
			      "(1 Ethernet, 101 raw IP, 113 Linux SLL, ...)", p->linktype);
		return -EINVAL;
	}
	p->c_ipv4 = rb2_stage_counter(st, "ipv4");
	p->c_ipv6 = rb2_stage_counter(st, "ipv6");
	p->c_nonip = rb2_stage_counter(st, "nonip");
	p->c_malformed = rb2_stage_counter(st, "malformed");
	return 0;
}

static void
parse_process(struct rb2_stage *st, const struct rb2_msg *msgs, unsigned int n)
{
	struct parse_priv *p = rb2_stage_priv(st);
	const struct rb2_pkt *pk = rb2_stage_pkts(st);
	uint64_t before[4] = { p->tst.ipv4, p->tst.ipv6, p->tst.nonip, p->tst.malformed };

	for (unsigned int i = 0; i < n;) {
		unsigned int k = (unsigned int)RTE_MIN((uint64_t)(n - i), p->batch);
		uint32_t len = k * (uint32_t)sizeof(struct rb2_rec);
		struct rb2_rec *r;
		size_t stride;
		int got;

		/* Zero copy: decode straight into the next link's slot. */
		got = rb2_stage_emit_reserve(st, 0, len, 1, (void **)&r, &stride);
		if (got < 0)
			return;       /* counted by the pipeline; the run fails */
		/* The slot's lines were last read by the receiver's lcore. Ask
		 * for all of them at once: each record is read back as soon as
		 * it is written (counted), and would otherwise wait out its
		 * line's transfer alone (68 -> 34 cycles per packet, rb2-nf with
		 * parse and measure on two lcores; doc/eval/port.md). */
		for (uint32_t o = 0; o < len; o += RTE_CACHE_LINE_SIZE)
			__builtin_prefetch(RTE_PTR_ADD(r, o), 1, 3);
		for (unsigned int j = 0; j < k; j++, i++) {
			int lt = p->by_port ? rb2_pkt_linktype(&pk[i]) : (int)p->linktype;

			rb2_trace_parse(lt, msgs[i].data, msgs[i].len, pk[i].pkt_len, &r[j]);
			r[j].ts_ns = pk[i].ts_ns;
			r[j].in_port = pk[i].port;
			r[j].seq = (uint32_t)p->seq++;
		}
		rb2_trace_count_burst(&p->tst, r, k);
		rb2_stage_emit_commit(st, 0, len, 1);
	}
	rb2_stage_count(p->c_ipv4, p->tst.ipv4 - before[0]);
	rb2_stage_count(p->c_ipv6, p->tst.ipv6 - before[1]);
	rb2_stage_count(p->c_nonip, p->tst.nonip - before[2]);
	rb2_stage_count(p->c_malformed, p->tst.malformed - before[3]);
}

static void
parse_report(struct rb2_stage *st, FILE *out)
{
	struct parse_priv *p = rb2_stage_priv(st);
	char why[256];

	fprintf(out, "parse '%s': %" PRIu64 " packets: %" PRIu64 " IPv4, %" PRIu64 " IPv6, %"
		PRIu64 " non-IP, %" PRIu64 " malformed; %" PRIu64 " non-first fragments, %" PRIu64
		" without ports\n", rb2_stage_name(st), p->tst.packets, p->tst.ipv4, p->tst.ipv6,
		p->tst.nonip, p->tst.malformed, p->tst.fragments, p->tst.truncated);
	if (p->tst.nonip > 0) {
		rb2_trace_nonip_format(&p->tst, why, sizeof(why));
		fprintf(out, "  non-IP by kind: %s\n", why);
	}
}

static const char *const parse_edges[] = { "out", NULL };

static const struct rb2_stage_ops parse_ops = {
	.api_version = RB2_STAGE_API_VERSION,
	.name = "parse",
	.summary = "decodes packets into the measurement NF's records, with the pcap "
		   "reader's decoder (batch, linktype)",
	.edges = parse_edges,
	.takes_pkts = 1,
	.priv_size = sizeof(struct parse_priv),
	.init = parse_init,
	.process = parse_process,
	.report = parse_report,
};
RB2_STAGE_REGISTER(parse_ops);
