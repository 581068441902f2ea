/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* What the measure stage writes (rb2_measure_pvt.h): records as JSON and
 * CSV, periodic report lines, and the summary and results document, merged
 * over a group's shards. */

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>

#include "rb2_measure_pvt.h"

/*
 * One line of the periodic report, for the interval that ends at @end
 * (UINT64_MAX: the run's end): its totals and rates (the bursts measured
 * since the last line), the flows held, the records ended in it and the
 * heaviest of them. Long flows show as their active timeout ends them: set
 * it to the report interval to see every flow in every line.
 */
void
rb2_measure_report_line(struct measure *m, uint64_t end)
{
	struct rb2_nf_totals t, *p = &m->rep_prev;
	uint64_t start = m->rep_next - m->rep_ns;
	double secs;
	json_t *tops = json_array(), *o;

	rb2_flowtab_totals(m->ft, &t);
	/* The run's end: the last interval, up to the last record. */
	secs = end != UINT64_MAX ? (double)m->rep_ns / 1e9 :
		t.last_ns > start ? (double)(t.last_ns - start) / 1e9 : 0;
	for (unsigned int i = 0; i < m->rep_ntop; i++)
		json_array_append_new(tops, rb2_measure_json_flow(&m->rep_tops[i]));
	o = json_pack("{s:s, s:I, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:o}",
		      "measure", rb2_stage_name(m->st), "start_ns", (json_int_t)start,
		      "seconds", json_real(secs),
		      "packets", (json_int_t)(t.packets - p->packets),
		      "bytes", (json_int_t)(t.bytes - p->bytes),
		      "ipv4", (json_int_t)(t.ipv4 - p->ipv4), "ipv6", (json_int_t)(t.ipv6 - p->ipv6),
		      "nonip", (json_int_t)(t.nonip - p->nonip),
		      "malformed", (json_int_t)(t.malformed - p->malformed),
		      "flow_records", (json_int_t)(t.records - p->records),
		      "flows_held", (json_int_t)rb2_flowtab_count(m->ft),
		      "pps", secs > 0 ? json_real((double)(t.packets - p->packets) / secs) : json_null(),
		      "bps", secs > 0 ? json_real((double)(t.bytes - p->bytes) * 8 / secs) : json_null(),
		      "top", tops);
	if (m->grp != NULL)
		json_object_set_new(o, "group", json_string(m->grp->name));
	json_dumpf(o, m->rep_f, JSON_COMPACT | JSON_REAL_PRECISION(6));
	fputc('\n', m->rep_f);
	fflush(m->rep_f);
	json_decref(o);
	*p = t;
	m->rep_ntop = 0;
	m->rep_lines++;
}

static const char *
kind_name(unsigned int kind)
{
	return kind == RB2_REC_IPV4 ? "ipv4" : kind == RB2_REC_IPV6 ? "ipv6" : "other";
}

/* A record's addresses as text. */
struct flow_addr {
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];
};

static void
addr_text(const struct rb2_flow_rec *f, struct flow_addr *a)
{
	int af = f->kind == RB2_REC_IPV4 ? AF_INET : AF_INET6;

	inet_ntop(af, f->src, a->src, sizeof(a->src));
	inet_ntop(af, f->dst, a->dst, sizeof(a->dst));
}

json_t *
rb2_measure_json_flow(const struct rb2_flow_rec *f)
{
	struct flow_addr a;

	addr_text(f, &a);
	return json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s}",
			 "kind", kind_name(f->kind), "src", a.src, "dst", a.dst,
			 "sport", (json_int_t)f->sport, "dport", (json_int_t)f->dport,
			 "proto", (json_int_t)f->proto, "in_port", (json_int_t)f->in_port,
			 "packets", (json_int_t)f->packets, "bytes", (json_int_t)f->bytes,
			 "first_ns", (json_int_t)f->first_ns, "last_ns", (json_int_t)f->last_ns,
			 "tcp_flags", (json_int_t)f->tcp_flags,
			 "end", rb2_flow_end_name(f->end_reason));
}

void
rb2_measure_csv_flow(FILE *o, const struct rb2_flow_rec *f)
{
	struct flow_addr a;

	addr_text(f, &a);
	fprintf(o, "%s,%s,%s,%u,%u,%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%u,%s,%u\n",
		kind_name(f->kind), a.src, a.dst, f->sport, f->dport, f->proto, f->packets,
		f->bytes, f->first_ns, f->last_ns, f->tcp_flags, rb2_flow_end_name(f->end_reason),
		f->in_port);
}

/* Close a results file: 0, or the error of any write to it (a full disk). */
static int
close_checked(FILE *o)
{
	int err = ferror(o) ? (errno ? errno : EIO) : 0;

	if (fclose(o) != 0 && err == 0)
		err = errno ? errno : EIO;
	return -err;
}

/* A number, or null where it is not finite: JSON has no NaN. */
static json_t *
json_num(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

/* What the summary and the JSON say: one stage's, or its group's merged. */
struct view {
	const struct measure *m;    /* the settings (the shards share them) */
	unsigned int shards;
	struct rb2_nf_totals t;
	uint64_t bad, bad_bytes, iv_out, unexported, table_bytes, table_peak, cycles, timed;
	uint64_t base, niv;
	uint64_t (*iv)[2];
	struct rb2_flow_rec *tops;
	unsigned int ntop;
	int ce_ret;
	struct rb2_cm_error ce;
};

/* Merge @n shards: sums, the earliest first and latest last, rates by
 * absolute interval, the top-K of the shards' top-Ks (a record is in one
 * shard, so the K heaviest overall are among them), the sketch's error
 * weighted by each shard's flows. */
static int
view_make(struct view *v, struct measure *const *ms, unsigned int n)
{
	uint64_t lo = UINT64_MAX, hi = 0, ce_flows = 0;
	double ce_sum = 0;

	memset(v, 0, sizeof(*v));
	v->m = ms[0];
	v->shards = n;
	v->ce_ret = ms[0]->ce_ret;
	v->tops = calloc(ms[0]->top + 1, sizeof(*v->tops));
	if (v->tops == NULL)
		return -ENOMEM;
	v->t.first_ns = UINT64_MAX;
	for (unsigned int i = 0; i < n; i++) {
		const struct measure *m = ms[i];
		struct rb2_nf_totals t;

		rb2_flowtab_totals(m->ft, &t);
		v->t.packets += t.packets;
		v->t.bytes += t.bytes;
		v->t.ipv4 += t.ipv4;
		v->t.ipv6 += t.ipv6;
		v->t.nonip += t.nonip;
		v->t.malformed += t.malformed;
		v->t.records += t.records;
		v->t.peak_flows += t.peak_flows;
		for (unsigned int r = 0; r < RB2_FLOW_END_MAX; r++)
			v->t.ended[r] += t.ended[r];
		if (t.packets > 0) {
			v->t.first_ns = RTE_MIN(v->t.first_ns, t.first_ns);
			v->t.last_ns = RTE_MAX(v->t.last_ns, t.last_ns);
		}
		v->bad += *m->c_bad;
		v->bad_bytes += m->bad_bytes;
		v->iv_out += *m->c_iv_out;
		v->unexported += *m->c_unexported;
		v->table_bytes += rb2_flowtab_memory(m->ft);
		v->table_peak += rb2_flowtab_memory_peak(m->ft);
		v->cycles += m->cycles;
		v->timed += m->timed_records;
		for (unsigned int k = 0; k < m->ntop; k++)
			rb2_flow_top_offer(v->tops, (unsigned int)m->top, &v->ntop, &m->tops[k]);
		if (m->niv > 0) {
			lo = RTE_MIN(lo, m->base);
			hi = RTE_MAX(hi, m->base + m->niv);
		}
		if (m->ce_ret != 0) {
			v->ce_ret = m->ce_ret;
		} else {
			ce_sum += m->ce.mean_rel * (double)m->ce_flows;
			ce_flows += m->ce_flows;
			v->ce.max_rel = RTE_MAX(v->ce.max_rel, m->ce.max_rel);
			v->ce.exact += m->ce.exact;
		}
	}
	if (v->t.packets == 0)
		v->t.first_ns = 0;
	v->ce.mean_rel = ce_flows ? ce_sum / (double)ce_flows : 0;
	if (hi > lo) {
		v->base = lo;
		v->niv = hi - lo;
		v->iv = calloc(v->niv, sizeof(*v->iv));
		if (v->iv == NULL)
			return -ENOMEM;
		for (unsigned int i = 0; i < n; i++)
			for (uint64_t k = 0; k < ms[i]->niv; k++) {
				v->iv[ms[i]->base + k - lo][0] += ms[i]->iv[k][0];
				v->iv[ms[i]->base + k - lo][1] += ms[i]->iv[k][1];
			}
	}
	return 0;
}

static void
view_free(struct view *v)
{
	free(v->iv);
	free(v->tops);
}

static double
cyc_per_rec(const struct view *v)
{
	return v->timed ? (double)v->cycles / (double)v->timed : 0;
}

static json_t *
json_ended(const struct rb2_nf_totals *t)
{
	json_t *o = json_object();

	for (unsigned int r = 1; r < RB2_FLOW_END_MAX; r++)
		json_object_set_new(o, rb2_flow_end_name(r), json_integer((json_int_t)t->ended[r]));
	return o;
}

/*
 * The results as JSON. The records were streamed into the file's
 * "flow_list" as they ended (there may be millions); what follows them is
 * built by jansson: the object without its opening brace.
 */
static int
write_json(struct outfiles *of, const struct view *v)
{
	const struct measure *m = v->m;
	const struct rb2_nf_totals *t = &v->t;
	FILE *o = of->json_f;
	json_t *doc, *ivs = json_array(), *tops = json_array();
	char *tail;

	of->json_f = NULL;
	doc = json_pack("{s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}, s:I, "
			"s:o, s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:I}", "totals",
			"packets", (json_int_t)t->packets,
			"bytes", (json_int_t)t->bytes, "ipv4", (json_int_t)t->ipv4,
			"ipv6", (json_int_t)t->ipv6, "nonip", (json_int_t)t->nonip,
			"malformed", (json_int_t)t->malformed,
			"bad_msgs", (json_int_t)v->bad, "bad_bytes", (json_int_t)v->bad_bytes,
			"outside_intervals", (json_int_t)v->iv_out,
			"first_ns", (json_int_t)t->first_ns, "last_ns", (json_int_t)t->last_ns,
			"flows", (json_int_t)t->records,
			"cycles_per_record", json_num(cyc_per_rec(v)),
			"interval_ns", (json_int_t)m->interval_ns,
			"peak_flows", (json_int_t)t->peak_flows,
			"table_bytes", (json_int_t)v->table_bytes,
			"table_bytes_peak", (json_int_t)v->table_peak,
			"unexported", (json_int_t)v->unexported,
			"ended", json_ended(t),
			"timeouts_s", json_pack("{s:o, s:o}",
				"active", m->active_ns ? json_real((double)m->active_ns / 1e9) : json_null(),
				"idle", m->idle_ns ? json_real((double)m->idle_ns / 1e9) : json_null()),
			"shards", (json_int_t)v->shards);
	for (uint64_t i = 0; i < v->niv; i++)
		json_array_append_new(ivs, json_pack("[I, I, I]",
			(json_int_t)((v->base + i) * m->interval_ns), (json_int_t)v->iv[i][0],
			(json_int_t)v->iv[i][1]));
	json_object_set_new(doc, "intervals", ivs);
	for (unsigned int i = 0; i < v->ntop; i++)
		json_array_append_new(tops, rb2_measure_json_flow(&v->tops[i]));
	json_object_set_new(doc, "top", tops);
	if (v->ce_ret == 0)
		json_object_set_new(doc, "count_min", json_pack("{s:I, s:I, s:o, s:o, s:I}",
			"width", (json_int_t)m->cm_width, "rows", (json_int_t)4,
			"mean_rel_error", json_num(v->ce.mean_rel),
			"max_rel_error", json_num(v->ce.max_rel), "exact_flows",
			(json_int_t)v->ce.exact));
	else
		json_object_set_new(doc, "count_min", json_null());
	tail = json_dumps(doc, JSON_REAL_PRECISION(6));
	json_decref(doc);
	if (tail == NULL) {
		fclose(o);
		return -ENOMEM;
	}
	fprintf(o, "%s], %s\n", of->json_n ? "\n" : "", tail + 1);
	free(tail);
	return close_checked(o);
}

static void
print_summary(const struct view *v, const char *name, FILE *out)
{
	const struct measure *m = v->m;
	const struct rb2_nf_totals *t = &v->t;
	double span = t->packets ? (double)(t->last_ns - t->first_ns) / 1e9 : 0;
	uint64_t pmin = UINT64_MAX, pmax = 0;

	if (v->shards > 1)
		fprintf(out, "measure group '%s' (%u shards, merged): ", name, v->shards);
	else
		fprintf(out, "measure '%s': ", name);
	fprintf(out, "%" PRIu64 " records, %" PRIu64 " flow records, %.3f GB on the wire, %.3f s "
		"of trace time\n", t->packets, t->records, (double)t->bytes / 1e9, span);
	fprintf(out, "  by kind: %" PRIu64 " IPv4, %" PRIu64 " IPv6, %" PRIu64 " non-IP, %" PRIu64
		" malformed", t->ipv4, t->ipv6, t->nonip, t->malformed);
	if (v->bad)
		fprintf(out, "; %" PRIu64 " messages not whole records", v->bad);
	fprintf(out, "\n  flow records ended by");
	for (unsigned int r = 1; r < RB2_FLOW_END_MAX; r++)
		fprintf(out, "%s %s %" PRIu64, r > 1 ? "," : "", rb2_flow_end_name(r), t->ended[r]);
	fprintf(out, "\n  flow table%s: at most %" PRIu64 " flows held%s (%" PRIu64 " at the peak), "
		"%.1f MiB at most (%.1f MiB at the peak); timeouts active %s, idle %s\n",
		v->shards > 1 ? "s" : "", m->max_flows, v->shards > 1 ? " each" : "", t->peak_flows,
		(double)v->table_bytes / (1 << 20), (double)v->table_peak / (1 << 20),
		m->active_txt, m->idle_txt);
	if (t->ended[RB2_FLOW_END_RESOURCES] > 0)
		fprintf(out, "  %" PRIu64 " records were ended early to make room (raise flows, or "
			"shorten the timeouts)\n", t->ended[RB2_FLOW_END_RESOURCES]);
	if (v->unexported > 0)
		fprintf(out, "  %" PRIu64 " flow records were not exported (the pipeline stopped "
			"before the exporter took them)\n", v->unexported);
	for (uint64_t i = 0; i < v->niv; i++) {
		pmin = RTE_MIN(pmin, v->iv[i][0]);
		pmax = RTE_MAX(pmax, v->iv[i][0]);
	}
	if (v->iv_out > 0)
		fprintf(out, "  %" PRIu64 " records lie over %u intervals away from the first: "
			"left out of the rates (raise interval_ms)\n", v->iv_out, IV_MAX);
	if (v->niv > 0)
		fprintf(out, "  rate per %.3f s of trace time, %" PRIu64 " intervals: min %.3f, mean "
			"%.3f, max %.3f Mpps; mean %.3f Gb/s\n", (double)m->interval_ns / 1e9, v->niv,
			(double)pmin / ((double)m->interval_ns / 1e3),
			(double)t->packets / (double)v->niv / ((double)m->interval_ns / 1e3),
			(double)pmax / ((double)m->interval_ns / 1e3),
			(double)t->bytes * 8 / (double)v->niv / (double)m->interval_ns);
	fprintf(out, "  measure cost: %.1f cycles/record\n", cyc_per_rec(v));
	if (m->top > 0) {
		fprintf(out, "  top %u flow records by bytes:\n  %4s  %-45s %5s %12s %14s\n", v->ntop,
			"#", "flow", "proto", "packets", "bytes");
		for (unsigned int i = 0; i < v->ntop; i++) {
			const struct rb2_flow_rec *f = &v->tops[i];
			struct flow_addr a;
			char flow[120];

			addr_text(f, &a);
			snprintf(flow, sizeof(flow), f->kind == RB2_REC_IPV4 ? "%s:%u -> %s:%u" :
				 "[%s]:%u -> [%s]:%u", a.src, f->sport, a.dst, f->dport);
			fprintf(out, "  %4u  %-45s %5u %12" PRIu64 " %14" PRIu64 "\n", i + 1, flow,
				f->proto, f->packets, f->bytes);
		}
	}
	if (v->ce_ret == 0)
		fprintf(out, "  count-min (%" PRIu64 " x 4%s): mean error %+.4f%%, max %+.2f%%, exact "
			"for %" PRIu64 " of %" PRIu64 " flows\n", m->cm_width,
			v->shards > 1 ? " a shard" : "", v->ce.mean_rel * 100, v->ce.max_rel * 100,
			v->ce.exact, t->records);
	else if (v->ce_ret == -ESTALE)
		fprintf(out, "  count-min (%" PRIu64 " x 4): error not measured: records ended "
			"before the end of the run (timeouts, FIN/RST or a full table), and the "
			"sketch counts whole flows\n", m->cm_width);
}

void
rb2_measure_report(struct rb2_stage *st, FILE *out)
{
	struct measure *m = rb2_stage_priv(st);
	struct outfiles *of = m->out;
	struct view v;

	if (!m->flushed) {
		/* The pipeline stopped before the input ended: the sketch's
		 * error now, then the records still held end into the files
		 * and the counts. */
		m->ce_ret = rb2_flowtab_cm_error(m->ft, &m->ce);
		m->ce_flows = rb2_flowtab_count(m->ft);
		m->flushed = 1;
	}
	if (rb2_flowtab_count(m->ft) > 0) {
		/* Stopped before the drain had ended them all. */
		m->late = 1;
		rb2_flowtab_flush(m->ft, RB2_FLOW_END_FORCED, 0);
	}
	if (m->grp != NULL && ++m->grp->reported < m->grp->members) {
		/* A shard: its line; the last one of the group says the rest. */
		struct rb2_nf_totals t;

		rb2_flowtab_totals(m->ft, &t);
		fprintf(out, "measure '%s': shard of '%s': %" PRIu64 " records, %" PRIu64
			" flow records\n", rb2_stage_name(st), m->grp->name, t.packets, t.records);
		return;
	}
	if (view_make(&v, m->grp != NULL ? m->grp->m : &m, m->grp != NULL ? m->grp->members : 1)
	    != 0) {
		rb2_stage_fail(st, "out of memory for the summary");
		view_free(&v);
		return;
	}
	if (m->grp != NULL)
		fprintf(out, "measure '%s': shard of '%s': %" PRIu64 " records\n",
			rb2_stage_name(st), m->grp->name, *m->c_records);
	print_summary(&v, m->grp != NULL ? m->grp->name : rb2_stage_name(st), out);
	if (of->json_f != NULL) {
		int ret = write_json(of, &v);

		fprintf(out, "  flows as JSON: %s%s%s\n", of->json, ret ? ": " : "",
			ret ? strerror(-ret) : "");
		if (ret != 0)
			rb2_stage_fail(st, "writing %s: %s: its results are incomplete", of->json,
				       strerror(-ret));
	}
	if (of->csv_f != NULL) {
		FILE *o = of->csv_f;
		int ret;

		of->csv_f = NULL;
		ret = close_checked(o);
		fprintf(out, "  flows as CSV: %s%s%s\n", of->csv, ret ? ": " : "",
			ret ? strerror(-ret) : "");
		if (ret != 0)
			rb2_stage_fail(st, "writing %s: %s: its flows are incomplete", of->csv,
				       strerror(-ret));
	}
	if (v.unexported > 0)
		rb2_stage_fail(st, "%" PRIu64 " flow records were not exported", v.unexported);
	view_free(&v);
}

