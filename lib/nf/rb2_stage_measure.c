/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * The "measure" stage, the paper's Case#1 network measurement NF: it takes
 * messages of whole 40-byte records (rb2_trace.h) and keeps
 *  - exact per-flow packets and bytes, first and last timestamps;
 *  - totals by record kind, and packets/bytes per interval of trace time;
 *  - the top-K flows by bytes;
 *  - optionally a count-min sketch, its error reported against the exact
 *    counts.
 *
 *   top = K              heavy hitters in the summary (default 10)
 *   interval_ms = T      rate interval, trace time (default 1000)
 *   flows = N            expected flows: the table's initial size (default 1M)
 *   cm_width = W         count-min sketch width (0: none; 4 rows)
 *   json = FILE          everything, with every flow, as JSON
 *   csv = FILE           every flow as CSV
 */

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <rte_cycles.h>
#include <rte_log.h>

#include <rb2_flowtab.h>
#include <rb2_stage.h>
#include <rb2_trace.h>

RTE_LOG_REGISTER(measure_logtype, rb2.nf.measure, INFO);

#define REC_SIZE ((uint32_t)sizeof(struct rb2_rec))
/* Rate intervals kept: a timestamp further than this from the others (a
 * capture with zero timestamps among real ones) is counted, not bucketed. */
#define IV_MAX (1u << 20)

struct measure {
	struct rb2_flowtab *ft;
	uint64_t top, interval_ns, cm_width;
	const char *json, *csv;
	FILE *json_f, *csv_f;       /* opened at init: a bad path fails at once */
	uint64_t *c_records, *c_bad, *c_iv_out;
	uint64_t bad_bytes;
	uint64_t calls;             /* of process() */
	uint64_t cycles;            /* in the timed calls of process() (1 in 8) */
	uint64_t timed_records;     /* ... and the records they measured */
	/* Per-interval packets and bytes: bucket i covers
	 * [(base + i) * interval_ns, (base + i + 1) * interval_ns). */
	uint64_t base;
	uint64_t (*iv)[2];
	uint64_t niv, cap;
	uint64_t cur_lo, cur_hi;    /* the bucket last hit, as a ts range */
	uint64_t *cur;
};

static int
measure_init(struct rb2_stage *st, struct rb2_stage_args *a)
{
	struct measure *m = rb2_stage_priv(st);
	uint64_t flows, iv_ms;

	if (rb2_stage_arg_u64(a, "top", 10, 0, 1000000, &m->top) < 0 ||
	    rb2_stage_arg_u64(a, "interval_ms", 1000, 1, 86400000, &iv_ms) < 0 ||
	    rb2_stage_arg_u64(a, "flows", 1 << 20, 1, 1ull << 32, &flows) < 0 ||
	    rb2_stage_arg_u64(a, "cm_width", 0, 0, 1u << 28, &m->cm_width) < 0 ||
	    rb2_stage_arg_str(a, "json", NULL, &m->json) < 0 ||
	    rb2_stage_arg_str(a, "csv", NULL, &m->csv) < 0)
		return -EINVAL;
	/* The results are written at the end, after what may be a long run:
	 * open the files now, so that a path that cannot be written fails at
	 * once, not after the run. */
	if (m->json != NULL && (m->json_f = fopen(m->json, "w")) == NULL) {
		rb2_stage_err(st, "cannot write the results to %s: %s", m->json, strerror(errno));
		return -errno;
	}
	if (m->csv != NULL && (m->csv_f = fopen(m->csv, "w")) == NULL) {
		rb2_stage_err(st, "cannot write the flows to %s: %s", m->csv, strerror(errno));
		if (m->json_f != NULL)
			fclose(m->json_f);
		m->json_f = NULL;
		return -errno;
	}
	m->interval_ns = iv_ms * 1000000ull;
	m->ft = rb2_flowtab_create(flows, (uint32_t)m->cm_width);
	if (m->ft == NULL) {
		rb2_stage_err(st, "out of memory for a table of %" PRIu64 " flows (lower 'flows')",
			      flows);
		return -ENOMEM;
	}
	m->c_records = rb2_stage_counter(st, "records");
	m->c_bad = rb2_stage_counter(st, "bad_msgs");
	m->c_iv_out = rb2_stage_counter(st, "outside_intervals");
	return 0;
}

static void
measure_fini(struct rb2_stage *st)
{
	struct measure *m = rb2_stage_priv(st);

	rb2_flowtab_free(m->ft);
	free(m->iv);
	m->ft = NULL;
	m->iv = NULL;
	if (m->json_f != NULL)      /* never reported: left as opened */
		fclose(m->json_f);
	if (m->csv_f != NULL)
		fclose(m->csv_f);
	m->json_f = m->csv_f = NULL;
}

/* The slow path of interval accounting: find (or make) ts's bucket. */
static uint64_t *
bucket(struct measure *m, uint64_t ts)
{
	uint64_t b = ts / m->interval_ns;

	if (m->niv == 0)
		m->base = b;
	if (b < m->base) {              /* out of order, before the first */
		uint64_t shift = m->base - b;

		if (m->niv + shift > IV_MAX)
			return NULL;
		if (m->niv + shift > m->cap) {
			void *p = realloc(m->iv, (m->niv + shift) * sizeof(*m->iv));

			if (p == NULL)
				return NULL;
			m->iv = p;
			m->cap = m->niv + shift;
		}
		memmove(m->iv + shift, m->iv, m->niv * sizeof(*m->iv));
		memset(m->iv, 0, shift * sizeof(*m->iv));
		m->niv += shift;
		m->base = b;
	}
	if (b - m->base >= m->niv) {
		uint64_t need = b - m->base + 1;

		if (need > IV_MAX)
			return NULL;
		if (need > m->cap) {
			uint64_t cap = RTE_MAX(need, m->cap * 2);
			void *p = realloc(m->iv, cap * sizeof(*m->iv));

			if (p == NULL)
				return NULL;
			m->iv = p;
			m->cap = cap;
		}
		memset(m->iv + m->niv, 0, (need - m->niv) * sizeof(*m->iv));
		m->niv = need;
	}
	m->cur_lo = b * m->interval_ns;
	m->cur_hi = m->cur_lo + m->interval_ns;
	m->cur = m->iv[b - m->base];
	return m->cur;
}

/* Add a bucket's sums, kept in registers while its records come: adding
 * to @c record by record would make each wait for the one before's store. */
static inline void
flush_bucket(uint64_t *c, uint64_t *pk, uint64_t *by)
{
	if (*pk > 0) {
		c[0] += *pk;
		c[1] += *by;
		*pk = 0;
		*by = 0;
	}
}

static void
measure_process(struct rb2_stage *st, const struct rb2_msg *msgs, unsigned int n)
{
	struct measure *m = rb2_stage_priv(st);
	const struct rb2_rec *recs[RB2_STAGE_BURST_MAX];
	/* Timed on one call in 8, as the pipeline times stages: cycles per
	 * record are those calls' cycles over their records. */
	bool timed = m->calls++ % 8 == 0;
	uint64_t t0 = timed ? rte_rdtsc() : 0, total = 0;
	uint64_t *c = m->cur, pk = 0, by = 0; /* the current bucket, and its sums so far */
	unsigned int k = 0;

	for (unsigned int i = 0; i < n; i++) {
		const struct rb2_rec *r = msgs[i].data;
		uint32_t nr = msgs[i].len / REC_SIZE;

		if (unlikely(msgs[i].len % REC_SIZE != 0)) {
			/* Not whole records: counted, never guessed at. */
			rb2_stage_count(m->c_bad, 1);
			m->bad_bytes += msgs[i].len;
			continue;
		}
		for (uint32_t j = 0; j < nr; j++, r++) {
			/* Most records fall in the bucket of the one before. */
			if (unlikely(c == NULL || r->ts_ns < m->cur_lo || r->ts_ns >= m->cur_hi)) {
				flush_bucket(c, &pk, &by); /* before bucket() moves it */
				c = bucket(m, r->ts_ns);
			}
			if (likely(c != NULL)) {
				pk++;
				by += r->wire_len;
			} else {
				rb2_stage_count(m->c_iv_out, 1);
				c = m->cur;     /* the next record starts from the last bucket */
			}
			recs[k++] = r;
			if (k == RB2_STAGE_BURST_MAX) {
				rb2_flowtab_add_ptrs(m->ft, recs, k);
				total += k;
				k = 0;
			}
		}
	}
	flush_bucket(c, &pk, &by);
	if (k > 0)
		rb2_flowtab_add_ptrs(m->ft, recs, k);
	total += k;
	rb2_stage_count(m->c_records, total);
	if (timed) {
		m->cycles += rte_rdtsc() - t0;
		m->timed_records += total;
	}
}

/* ---- Output ------------------------------------------------------------- */

static const char *
kind_name(unsigned int kind)
{
	return kind == RB2_REC_IPV4 ? "ipv4" : kind == RB2_REC_IPV6 ? "ipv6" : "other";
}

/* A flow's key, decoded: "1.2.3.4", ports, proto; or the IPv6 digest. */
struct flow_key {
	unsigned int kind, proto, sport, dport;
	char src[INET_ADDRSTRLEN], dst[INET_ADDRSTRLEN];
	char digest[40];
};

static void
decode(const struct rb2_flow *f, struct flow_key *k)
{
	uint32_t s = (uint32_t)f->k0, d = (uint32_t)(f->k0 >> 32);

	k->kind = (unsigned int)(f->k1 >> 40) & 0xff;
	k->proto = (unsigned int)(f->k1 >> 32) & 0xff;
	k->sport = (unsigned int)f->k1 & 0xffff;
	k->dport = (unsigned int)(f->k1 >> 16) & 0xffff;
	inet_ntop(AF_INET, &s, k->src, sizeof(k->src));
	inet_ntop(AF_INET, &d, k->dst, sizeof(k->dst));
	snprintf(k->digest, sizeof(k->digest), "%016" PRIx64 "%08" PRIx64 "%08" PRIx64,
		 f->k0, f->k1 & 0xffffffffu, f->k2);
}

static json_t *
json_flow(const struct rb2_flow *f)
{
	struct flow_key k;
	json_t *o;

	decode(f, &k);
	if (k.kind == RB2_REC_IPV4)
		o = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I}", "kind", "ipv4", "src", k.src,
			      "dst", k.dst, "sport", (json_int_t)k.sport,
			      "dport", (json_int_t)k.dport, "proto", (json_int_t)k.proto);
	else
		o = json_pack("{s:s, s:s, s:I}", "kind", kind_name(k.kind), "key", k.digest,
			      "proto", (json_int_t)k.proto);
	json_object_set_new(o, "packets", json_integer((json_int_t)f->packets));
	json_object_set_new(o, "bytes", json_integer((json_int_t)f->bytes));
	json_object_set_new(o, "first_ns", json_integer((json_int_t)f->first_ns));
	json_object_set_new(o, "last_ns", json_integer((json_int_t)f->last_ns));
	return o;
}

struct walk_out {
	FILE *f;
	uint64_t n;
};

static void
json_walk(void *arg, const struct rb2_flow *f)
{
	struct walk_out *w = arg;

	json_t *o = json_flow(f);

	fputs(w->n++ ? ",\n  " : "\n  ", w->f);
	json_dumpf(o, w->f, 0);
	json_decref(o);
}

static void
csv_walk(void *arg, const struct rb2_flow *f)
{
	struct walk_out *w = arg;
	struct flow_key k;

	decode(f, &k);
	fprintf(w->f, "%s,%s,%s,%u,%u,%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n",
		kind_name(k.kind), k.kind == RB2_REC_IPV4 ? k.src : k.digest,
		k.kind == RB2_REC_IPV4 ? k.dst : "", k.kind == RB2_REC_IPV4 ? k.sport : 0,
		k.kind == RB2_REC_IPV4 ? k.dport : 0, k.proto, f->packets, f->bytes,
		f->first_ns, f->last_ns);
	w->n++;
}

static double
cyc_per_rec(const struct measure *m)
{
	return m->timed_records ? (double)m->cycles / (double)m->timed_records : 0;
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

/*
 * The results as JSON, built by jansson; the per-flow list, which can hold
 * millions of flows, is streamed after it one object at a time, so that
 * the document is never whole in memory.
 */
static int
write_json(struct measure *m, const struct rb2_nf_totals *t, const struct rb2_flow *top,
	   unsigned int ntop)
{
	FILE *o = m->json_f;
	struct walk_out w = { .f = o };
	json_t *doc, *ivs = json_array(), *tops = json_array();
	struct rb2_cm_error ce;
	char *head;

	m->json_f = NULL;
	doc = json_pack("{s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}, s:I, "
			"s:o, s:I}", "totals", "packets", (json_int_t)t->packets,
			"bytes", (json_int_t)t->bytes, "ipv4", (json_int_t)t->ipv4,
			"ipv6", (json_int_t)t->ipv6, "nonip", (json_int_t)t->nonip,
			"malformed", (json_int_t)t->malformed, "lost", (json_int_t)t->lost,
			"bad_msgs", (json_int_t)*m->c_bad, "bad_bytes", (json_int_t)m->bad_bytes,
			"outside_intervals", (json_int_t)*m->c_iv_out,
			"first_ns", (json_int_t)t->first_ns, "last_ns", (json_int_t)t->last_ns,
			"flows", (json_int_t)rb2_flowtab_count(m->ft),
			"cycles_per_record", json_num(cyc_per_rec(m)),
			"interval_ns", (json_int_t)m->interval_ns);
	for (uint64_t i = 0; i < m->niv; i++)
		json_array_append_new(ivs, json_pack("[I, I, I]",
			(json_int_t)((m->base + i) * m->interval_ns), (json_int_t)m->iv[i][0],
			(json_int_t)m->iv[i][1]));
	json_object_set_new(doc, "intervals", ivs);
	for (unsigned int i = 0; i < ntop; i++)
		json_array_append_new(tops, json_flow(&top[i]));
	json_object_set_new(doc, "top", tops);
	if (rb2_flowtab_cm_error(m->ft, &ce) == 0)
		json_object_set_new(doc, "count_min", json_pack("{s:I, s:I, s:o, s:o, s:I}",
			"width", (json_int_t)m->cm_width, "rows", (json_int_t)4,
			"mean_rel_error", json_num(ce.mean_rel), "max_rel_error", json_num(ce.max_rel),
			"exact_flows", (json_int_t)ce.exact));
	else
		json_object_set_new(doc, "count_min", json_null());
	head = json_dumps(doc, JSON_REAL_PRECISION(6));
	json_decref(doc);
	if (head == NULL) {
		fclose(o);
		return -ENOMEM;
	}
	/* The object without its closing brace, then the streamed list. */
	head[strlen(head) - 1] = '\0';
	fprintf(o, "%s, \"flow_list\": [", head);
	free(head);
	rb2_flowtab_walk(m->ft, json_walk, &w);
	fprintf(o, "]}\n");
	return close_checked(o);
}

static int
write_csv(struct measure *m)
{
	FILE *o = m->csv_f;
	struct walk_out w = { .f = o };

	m->csv_f = NULL;
	fprintf(o, "kind,src,dst,sport,dport,proto,packets,bytes,first_ns,last_ns\n");
	rb2_flowtab_walk(m->ft, csv_walk, &w);
	return close_checked(o);
}

static void
measure_report(struct rb2_stage *st, FILE *out)
{
	struct measure *m = rb2_stage_priv(st);
	struct rb2_nf_totals t;
	struct rb2_flow *top = calloc(m->top + 1, sizeof(*top));
	unsigned int ntop = 0;
	struct rb2_cm_error ce;
	double span;
	uint64_t pmin = UINT64_MAX, pmax = 0;

	rb2_flowtab_totals(m->ft, &t);
	span = t.packets ? (double)(t.last_ns - t.first_ns) / 1e9 : 0;
	fprintf(out, "measure '%s': %" PRIu64 " records, %" PRIu64 " flows, %.3f GB on the wire, "
		"%.3f s of trace time\n", rb2_stage_name(st), t.packets,
		rb2_flowtab_count(m->ft), (double)t.bytes / 1e9, span);
	fprintf(out, "  by kind: %" PRIu64 " IPv4, %" PRIu64 " IPv6, %" PRIu64 " non-IP, %" PRIu64
		" malformed", t.ipv4, t.ipv6, t.nonip, t.malformed);
	if (*m->c_bad || t.lost)
		fprintf(out, "; %" PRIu64 " messages not whole records, %" PRIu64
			" records in no flow (table full)", *m->c_bad, t.lost);
	fprintf(out, "\n");
	for (uint64_t i = 0; i < m->niv; i++) {
		pmin = RTE_MIN(pmin, m->iv[i][0]);
		pmax = RTE_MAX(pmax, m->iv[i][0]);
	}
	if (*m->c_iv_out > 0)
		fprintf(out, "  %" PRIu64 " records lie over %u intervals away from the first: "
			"left out of the rates (raise interval_ms)\n", *m->c_iv_out, IV_MAX);
	if (m->niv > 0)
		fprintf(out, "  rate per %.3f s of trace time, %" PRIu64 " intervals: min %.3f, mean "
			"%.3f, max %.3f Mpps; mean %.3f Gb/s\n", (double)m->interval_ns / 1e9, m->niv,
			(double)pmin / ((double)m->interval_ns / 1e3),
			(double)t.packets / (double)m->niv / ((double)m->interval_ns / 1e3),
			(double)pmax / ((double)m->interval_ns / 1e3),
			(double)t.bytes * 8 / (double)m->niv / (double)m->interval_ns);
	fprintf(out, "  measure cost: %.1f cycles/record\n", cyc_per_rec(m));
	if (top != NULL && m->top > 0) {
		ntop = rb2_flowtab_top(m->ft, top, (unsigned int)m->top);
		fprintf(out, "  top %u flows by bytes:\n  %4s  %-45s %5s %12s %14s\n", ntop, "#",
			"flow", "proto", "packets", "bytes");
		for (unsigned int i = 0; i < ntop; i++) {
			struct flow_key k;
			char flow[96];

			decode(&top[i], &k);
			if (k.kind == RB2_REC_IPV4)
				snprintf(flow, sizeof(flow), "%s:%u -> %s:%u", k.src, k.sport, k.dst,
					 k.dport);
			else
				snprintf(flow, sizeof(flow), "ipv6 %s", k.digest);
			fprintf(out, "  %4u  %-45s %5u %12" PRIu64 " %14" PRIu64 "\n", i + 1, flow,
				k.proto, top[i].packets, top[i].bytes);
		}
	}
	if (rb2_flowtab_cm_error(m->ft, &ce) == 0)
		fprintf(out, "  count-min (%" PRIu64 " x 4): mean error %+.4f%%, max %+.2f%%, exact "
			"for %" PRIu64 " of %" PRIu64 " flows\n", m->cm_width, ce.mean_rel * 100,
			ce.max_rel * 100, ce.exact, rb2_flowtab_count(m->ft));
	if (m->json_f != NULL) {
		int ret = write_json(m, &t, top, ntop);

		fprintf(out, "  flows as JSON: %s%s%s\n", m->json, ret ? ": " : "",
			ret ? strerror(-ret) : "");
		if (ret != 0)
			rb2_stage_fail(st, "writing %s: %s: its results are incomplete", m->json,
				       strerror(-ret));
	}
	if (m->csv_f != NULL) {
		int ret = write_csv(m);

		fprintf(out, "  flows as CSV: %s%s%s\n", m->csv, ret ? ": " : "",
			ret ? strerror(-ret) : "");
		if (ret != 0)
			rb2_stage_fail(st, "writing %s: %s: its flows are incomplete", m->csv,
				       strerror(-ret));
	}
	free(top);
}

static const struct rb2_stage_ops measure_ops = {
	.api_version = RB2_STAGE_API_VERSION,
	.name = "measure",
	.summary = "exact per-flow packets/bytes, rates, top-K, count-min (top, interval_ms, "
		   "flows, cm_width, json, csv)",
	.priv_size = sizeof(struct measure),
	.init = measure_init,
	.fini = measure_fini,
	.process = measure_process,
	.report = measure_report,
};

RB2_STAGE_REGISTER(measure_ops);
