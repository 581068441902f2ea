/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * The "measure" stage, the paper's Case#1 network measurement NF as a flow
 * monitor: it takes messages of whole records (rb2_trace.h) and keeps
 *  - a bounded flow table (rb2_flowtab.h): per flow packets, bytes, first
 *    and last timestamps and TCP flags, until the record ends (idle or
 *    active timeout, FIN/RST, evicted from a full table, end of the run);
 *  - totals by record kind, and packets/bytes per interval of trace time;
 *  - the top-K records by bytes;
 *  - optionally a count-min sketch, its error reported against the exact
 *    counts (while no record has ended before the end of the run).
 * Every ended record goes out on edge "records" when it is linked (to an
 * exporter: the ipfix stage), and to the json/csv files when asked.
 *
 *   top = K              heavy hitters in the summary (default 10)
 *   interval_ms = T      rate interval, trace time (default 1000)
 *   flows = N            the most flows held at once (default 1M)
 *   active_timeout = S   seconds, or "off" (default 300, nfpcapd's)
 *   idle_timeout = S     seconds, or "off" (default 60, nfpcapd's)
 *   live = auto|yes|no   on a quiet input, end idle flows by the clock
 *                        (auto: when the records' times are the clock's)
 *   cm_width = W         count-min sketch width (0: none; 4 rows)
 *   json = FILE          everything, with every record, as JSON
 *   csv = FILE           every record as CSV
 *   report_interval = S  every S seconds (record time), one JSON line: the
 *                        interval's totals, rates and top-K (default off)
 *   report = FILE        where those lines go (default -: standard output)
 *   group = NAME         a shard: the measure stages of one group (fed by a
 *                        shard stage) write one JSON/CSV and one summary,
 *                        merged, as one stage would
 */

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include <rte_cycles.h>
#include <rte_log.h>

#include "rb2_measure_pvt.h"

RTE_LOG_REGISTER(measure_logtype, rb2.nf.measure, INFO);

static struct group groups[4];

static void on_end(void *arg, const struct rb2_flow_rec *r);

static uint64_t
clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A timeout argument: seconds > 0, or "off" (0). */
static int
arg_timeout(struct rb2_stage *st, struct rb2_stage_args *a, const char *key, double def,
	    uint64_t *ns)
{
	const char *v;
	double sec;

	if (rb2_stage_arg_str(a, key, NULL, &v) < 0)
		return -EINVAL;
	if (v != NULL && strcmp(v, "off") == 0) {
		*ns = 0;
		return 0;
	}
	if (rb2_stage_arg_double(a, key, def, 1e-3, 1e7, &sec) < 0) {
		rb2_stage_err(st, "%s must be seconds, at least 0.001 (or off for none)", key);
		return -EINVAL;
	}
	*ns = (uint64_t)(sec * 1e9);
	return 0;
}

/* Shards name their group; the first of a name makes it. */
static int
join_group(struct measure *m, const char *name)
{
	struct group *g = NULL;

	m->out = &m->own;
	if (name == NULL)
		return 0;
	for (unsigned int i = 0; i < RTE_DIM(groups) && g == NULL; i++)
		if (groups[i].alive && strcmp(groups[i].name, name) == 0)
			g = &groups[i];
	for (unsigned int i = 0; i < RTE_DIM(groups) && g == NULL; i++)
		if (!groups[i].alive) {
			g = &groups[i];
			memset(g, 0, sizeof(*g));
			snprintf(g->name, sizeof(g->name), "%s", name);
		}
	if (g == NULL || g->members == GROUP_MEMBERS) {
		rb2_stage_err(m->st, "group = %s: at most %zu groups of %d shards", name,
			      RTE_DIM(groups), GROUP_MEMBERS);
		return -EINVAL;
	}
	if (g->members > 0 && ((g->files.json == NULL) != (m->json == NULL) ||
			       (g->files.csv == NULL) != (m->csv == NULL) ||
			       (m->json != NULL && strcmp(g->files.json, m->json) != 0) ||
			       (m->csv != NULL && strcmp(g->files.csv, m->csv) != 0))) {
		rb2_stage_err(m->st, "group = %s: its shards write one JSON and one CSV: give "
			      "each the same json and csv", name);
		return -EINVAL;
	}
	g->alive++;
	g->m[g->members++] = m;
	m->grp = g;
	m->out = &g->files;
	return 0;
}

/* The files, opened by the first shard of a group (or the stage). */
static int
open_files(struct measure *m)
{
	struct outfiles *o = m->out;

	if (o->json != NULL || o->csv != NULL)
		return 0;               /* a group's, already open */
	o->json = m->json;
	o->csv = m->csv;
	if (m->json != NULL && (o->json_f = fopen(m->json, "w")) == NULL) {
		rb2_stage_err(m->st, "cannot write the results to %s: %s", m->json, strerror(errno));
		return -errno;
	}
	if (m->csv != NULL && (o->csv_f = fopen(m->csv, "w")) == NULL) {
		rb2_stage_err(m->st, "cannot write the flows to %s: %s", m->csv, strerror(errno));
		return -errno;
	}
	if (o->json_f != NULL)
		fputs("{\"flow_list\": [", o->json_f);
	if (o->csv_f != NULL)
		fputs("kind,src,dst,sport,dport,proto,packets,bytes,first_ns,last_ns,tcp_flags,"
		      "end,in_port\n", o->csv_f);
	return 0;
}

static void
close_files(struct outfiles *o)
{
	if (o->json_f != NULL)      /* never reported: left as it stands */
		fclose(o->json_f);
	if (o->csv_f != NULL)
		fclose(o->csv_f);
	memset(o, 0, sizeof(*o));
}

static int
measure_init(struct rb2_stage *st, struct rb2_stage_args *a)
{
	struct measure *m = rb2_stage_priv(st);
	struct rb2_flowtab_params fp;
	uint64_t iv_ms;
	const char *live, *group;
	double rep_s;

	rb2_flowtab_params_init(&fp);
	m->st = st;
	if (rb2_stage_arg_u64(a, "top", 10, 0, 1000000, &m->top) < 0 ||
	    rb2_stage_arg_u64(a, "interval_ms", 1000, 1, 86400000, &iv_ms) < 0 ||
	    rb2_stage_arg_u64(a, "flows", 1 << 20, 1, 1ull << 31, &fp.max_flows) < 0 ||
	    arg_timeout(st, a, "active_timeout", 300, &fp.active_ns) < 0 ||
	    arg_timeout(st, a, "idle_timeout", 60, &fp.idle_ns) < 0 ||
	    rb2_stage_arg_str(a, "live", "auto", &live) < 0 ||
	    rb2_stage_arg_u64(a, "cm_width", 0, 0, 1u << 28, &m->cm_width) < 0 ||
	    rb2_stage_arg_str(a, "json", NULL, &m->json) < 0 ||
	    rb2_stage_arg_str(a, "csv", NULL, &m->csv) < 0 ||
	    rb2_stage_arg_str(a, "group", NULL, &group) < 0 ||
	    rb2_stage_arg_double(a, "report_interval", 0, 0, 86400 * 365, &rep_s) < 0 ||
	    rb2_stage_arg_str(a, "report", "-", &m->rep_path) < 0 ||
	    rb2_stage_arg_bool(a, "prealloc", 0, &fp.prealloc) < 0)
		return -EINVAL;
	m->rep_ns = (uint64_t)(rep_s * 1e9);
	if (m->rep_ns != 0 && m->rep_ns < 1000000) {
		rb2_stage_err(st, "report_interval must be at least 0.001 s (0: no reports)");
		return -EINVAL;
	}
	if (m->rep_ns != 0) {
		m->rep_f = strcmp(m->rep_path, "-") == 0 ? stdout : fopen(m->rep_path, "w");
		m->rep_tops = calloc(m->top + 1, sizeof(*m->rep_tops));
		if (m->rep_f == NULL || m->rep_tops == NULL) {
			rb2_stage_err(st, "report = %s: %s", m->rep_path, strerror(errno));
			return -EINVAL;
		}
	}
	if (strcmp(live, "auto") == 0 || strcmp(live, "yes") == 0 || strcmp(live, "no") == 0) {
		m->live = live[0] == 'a' ? -1 : live[0] == 'y';
		m->tick_cycles = rte_get_tsc_hz() / 100;
	} else {
		rb2_stage_err(st, "live = %s: expected auto, yes or no", live);
		return -EINVAL;
	}
	if (join_group(m, group) < 0 || open_files(m) < 0)
		return -EINVAL;
	m->interval_ns = iv_ms * 1000000ull;
	m->max_flows = fp.max_flows;
	m->active_ns = fp.active_ns;
	m->idle_ns = fp.idle_ns;
	snprintf(m->active_txt, sizeof(m->active_txt), fp.active_ns ? "%g s" : "off",
		 (double)fp.active_ns / 1e9);
	snprintf(m->idle_txt, sizeof(m->idle_txt), fp.idle_ns ? "%g s" : "off",
		 (double)fp.idle_ns / 1e9);
	fp.cm_width = (uint32_t)m->cm_width;
	fp.socket_id = rb2_stage_socket(st);
	fp.end = on_end;
	fp.end_arg = m;
	m->tops = calloc(m->top + 1, sizeof(*m->tops));
	m->ft = rb2_flowtab_create(&fp);
	if (m->ft == NULL && errno == ENOMEM) {
		/* No DPDK heap big enough (--no-huge gives 64 MB unless -m
		 * says more): plain pages, said once. */
		RTE_LOG(NOTICE, USER1, "measure '%s': the DPDK heap has no room for %" PRIu64
			" flows; the flow table takes ordinary pages (give the EAL more with -m, "
			"or reserve hugepages)\n", rb2_stage_name(st), fp.max_flows);
		fp.socket_id = RB2_FLOWTAB_LIBC;
		m->ft = rb2_flowtab_create(&fp);
	}
	if (m->ft == NULL || m->tops == NULL) {
		rb2_stage_err(st, "out of memory for a table of %" PRIu64 " flows (lower 'flows')",
			      fp.max_flows);
		return -ENOMEM;
	}
	m->c_records = rb2_stage_counter(st, "records");
	m->c_bad = rb2_stage_counter(st, "bad_msgs");
	m->c_iv_out = rb2_stage_counter(st, "outside_intervals");
	m->c_flow_records = rb2_stage_counter(st, "flow_records");
	m->c_unexported = rb2_stage_counter(st, "flow_records_unexported");
	m->ce_ret = -ENOENT;
	return 0;
}

static int
measure_start(struct rb2_stage *st)
{
	struct measure *m = rb2_stage_priv(st);

	m->exporting = rb2_stage_edge_linked(st, EDGE_RECORDS);
	return 0;
}

static void
measure_fini(struct rb2_stage *st)
{
	struct measure *m = rb2_stage_priv(st);

	rb2_flowtab_free(m->ft);
	free(m->iv);
	free(m->tops);
	m->ft = NULL;
	m->iv = NULL;
	m->tops = NULL;
	if (m->rep_f != NULL && m->rep_f != stdout)
		fclose(m->rep_f);
	m->rep_f = NULL;
	free(m->rep_tops);
	m->rep_tops = NULL;
	if (m->grp == NULL) {
		close_files(&m->own);
	} else if (--m->grp->alive == 0) {
		close_files(&m->grp->files);
		m->grp->members = 0;
	}
	m->grp = NULL;
}

/* The ended records so far out on edge "records". */
static void
export_flush(struct measure *m)
{
	if (m->en == 0)
		return;
	if (rb2_stage_emit(m->st, EDGE_RECORDS, m->ebuf, m->en * (uint32_t)sizeof(m->ebuf[0])) < 0)
		rb2_stage_count(m->c_unexported, m->en);  /* and the run fails */
	m->en = 0;
}

/* A record ended (rb2_flowtab's callback, on the measure lcore). */
static void
on_end(void *arg, const struct rb2_flow_rec *r)
{
	struct measure *m = arg;

	rb2_stage_count(m->c_flow_records, 1);
	rb2_flow_top_offer(m->tops, (unsigned int)m->top, &m->ntop, r);
	if (m->rep_tops != NULL)
		rb2_flow_top_offer(m->rep_tops, (unsigned int)m->top, &m->rep_ntop, r);
	if (m->out->json_f != NULL) {
		json_t *o = rb2_measure_json_flow(r);
		FILE *f = m->out->json_f;

		/* Shards on other lcores write the same file: a record at a time. */
		flockfile(f);
		fputs(m->out->json_n++ ? ",\n  " : "\n  ", f);
		json_dumpf(o, f, 0);
		funlockfile(f);
		json_decref(o);
	}
	if (m->out->csv_f != NULL)
		rb2_measure_csv_flow(m->out->csv_f, r);   /* one fprintf: a locked write */
	if (m->late && rb2_stage_edge_linked(m->st, EDGE_RECORDS)) {
		/* Ended by the report's flush, after the pipeline stopped
		 * early: too late for the exporter, and counted so. */
		rb2_stage_count(m->c_unexported, 1);
	} else if (m->exporting) {
		m->ebuf[m->en++] = *r;
		if (m->en == EXPORT_BATCH)
			export_flush(m);
	}
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

/* Lines for the intervals that have ended by record time (@clock 0) or,
 * on a quiet live input, by the clock. */
static void
report_due(struct measure *m, uint64_t clock)
{
	struct rb2_nf_totals t;
	uint64_t now;

	rb2_flowtab_totals(m->ft, &t);
	if (t.packets == 0)
		return;
	now = clock != 0 ? clock : t.last_ns;
	if (m->rep_next == 0)
		m->rep_next = t.first_ns / m->rep_ns * m->rep_ns + m->rep_ns;
	if (now < m->rep_next)
		return;
	rb2_measure_report_line(m, m->rep_next);
	/* A quiet spell of several intervals: one line for all of it. */
	m->rep_next = now / m->rep_ns * m->rep_ns + m->rep_ns;
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
	export_flush(m);
	if (m->rep_ns != 0)
		report_due(m, 0);
	if (timed) {
		m->cycles += rte_rdtsc() - t0;
		m->timed_records += total;
	}
}

/*
 * Nothing came on this pass. On a live input (a port), time goes on without
 * packets: end the flows that have been idle by the clock, at most every
 * LIVE_TICK_NS. Under replay (live = no, or auto with a capture's old
 * timestamps) the records' time alone decides, so that the same trace gives
 * the same records at any speed.
 */
static void
measure_idle(struct rb2_stage *st)
{
	struct measure *m = rb2_stage_priv(st);
	struct rb2_nf_totals t;
	uint64_t now;

	if (m->live == 0)
		return;
	/* The TSC gates the clock: an idle lcore comes here on every empty
	 * poll, and clock_gettime() there took a tenth of its cycles, which
	 * an SMT sibling (the replay) then lacked. */
	now = rte_rdtsc();
	if (now - m->tick_tsc < m->tick_cycles)
		return;
	m->tick_tsc = now;
	now = clock_ns();
	if (now - m->tick_clock < LIVE_TICK_NS)
		return;
	m->tick_clock = now;
	rb2_flowtab_totals(m->ft, &t);
	if (t.packets == 0)
		return;
	if (t.last_ns != m->seen_ts) {
		/* Records came since the last tick: are their times the clock's? */
		m->seen_ts = t.last_ns;
		m->seen_live = (now > t.last_ns ? now - t.last_ns : t.last_ns - now) < LIVE_NEAR_NS;
	}
	if (m->live < 0 && !m->seen_live)
		return;  /* auto, and a replayed capture's old times */
	rb2_flowtab_expire(m->ft, now, LIVE_SWEEP_SLOTS);
	export_flush(m);
	if (m->rep_ns != 0)
		report_due(m, now);
}

/*
 * Every input has ended: end every record (forced end), and send them, in
 * pieces of DRAIN_RECORDS: a million flows' records at once would be 80 MB
 * queued for a same-lcore exporter before it could run.
 */
static int
measure_drain(struct rb2_stage *st)
{
	struct measure *m = rb2_stage_priv(st);

	if (!m->flushed) {
		m->ce_ret = rb2_flowtab_cm_error(m->ft, &m->ce);
		m->ce_flows = rb2_flowtab_count(m->ft);
		m->flushed = 1;
	}
	rb2_flowtab_flush(m->ft, RB2_FLOW_END_FORCED, DRAIN_RECORDS);
	export_flush(m);
	if (rb2_flowtab_count(m->ft) > 0)
		return 1;
	if (m->rep_ns != 0 && m->rep_next != 0)
		rb2_measure_report_line(m, UINT64_MAX);     /* what the last interval had */
	return 0;
}

static const char *const measure_edges[] = { "records", NULL };

static const struct rb2_stage_ops measure_ops = {
	.api_version = RB2_STAGE_API_VERSION,
	.name = "measure",
	.summary = "flow records with timeouts and a bounded table, rates, top-K, count-min "
		   "(top, interval_ms, flows, prealloc, active_timeout, idle_timeout, live, cm_width, "
		   "json, csv); ended records out on edge 'records'",
	.edges = measure_edges,
	.optional_edges = 1u << EDGE_RECORDS,
	.priv_size = sizeof(struct measure),
	.init = measure_init,
	.start = measure_start,
	.fini = measure_fini,
	.process = measure_process,
	.idle = measure_idle,
	.drain = measure_drain,
	.report = rb2_measure_report,
};

RB2_STAGE_REGISTER(measure_ops);
