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

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
/* Flow records per message on edge "records": 32 x 80 bytes. */
#define EXPORT_BATCH 32
/* Records ended per drain() call at the run's end (5 MB of them). */
#define DRAIN_RECORDS 65536
/* On a quiet live input, sweep for idle flows at most this often, this
 * many slots at a time. */
#define LIVE_TICK_NS (100 * 1000000ull)
#define LIVE_SWEEP_SLOTS 65536
/* live = auto: records whose times are this close to the clock's are live. */
#define LIVE_NEAR_NS (60 * 1000000000ull)

enum { EDGE_RECORDS = 0 };

/* Where ended records are written: opened at init, so that a path that
 * cannot be written fails at once, not after the run. */
struct outfiles {
	FILE *json_f, *csv_f;
	uint64_t json_n;            /* records written to json_f */
	const char *json, *csv;
};

/* Shards of one measurement: one set of files, one merged summary. */
#define GROUP_MEMBERS 8
struct group {
	char name[32];
	unsigned int members, reported, alive;
	struct outfiles files;
	struct measure *m[GROUP_MEMBERS];
};
static struct group groups[4];

struct measure {
	struct rb2_flowtab *ft;
	struct rb2_stage *st;
	uint64_t top, interval_ns, cm_width;
	uint64_t max_flows, active_ns, idle_ns;
	char active_txt[24], idle_txt[24]; /* the timeouts as given, for the summary */
	const char *json, *csv;
	struct outfiles own, *out;  /* its files, or its group's */
	struct group *grp;          /* NULL: not a shard */
	int live;                   /* 1 yes, 0 no, -1 auto */
	uint64_t *c_records, *c_bad, *c_iv_out, *c_flow_records, *c_unexported;
	uint64_t bad_bytes;
	uint64_t calls;             /* of process() */
	uint64_t cycles;            /* in the timed calls of process() (1 in 8) */
	uint64_t timed_records;     /* ... and the records they measured */
	/* The heaviest records so far, heaviest first. */
	struct rb2_flow_rec *tops;
	unsigned int ntop;
	/* Ended records waiting to go out on edge "records". */
	int exporting;
	struct rb2_flow_rec ebuf[EXPORT_BATCH];
	unsigned int en;
	/* The sketch's error, taken before the final flush ends every record. */
	struct rb2_cm_error ce;
	int ce_ret;
	uint64_t ce_flows;          /* the flows it was measured over */
	int flushed;                /* the final flush has begun (drain, or report) */
	int late;                   /* ... in the report: too late for the exporter */
	/* Periodic reports: the interval, where the next one ends, the totals
	 * at the last line, and the heaviest records ended since. */
	uint64_t rep_ns, rep_next;
	const char *rep_path;
	FILE *rep_f;
	struct rb2_nf_totals rep_prev;
	struct rb2_flow_rec *rep_tops;
	unsigned int rep_ntop;
	uint64_t rep_lines;
	/* Live inputs: the latest record time at the last tick, whether it
	 * was the clock's, and when that tick was. */
	uint64_t seen_ts, tick_clock;
	int seen_live;
	/* Per-interval packets and bytes: bucket i covers
	 * [(base + i) * interval_ns, (base + i + 1) * interval_ns). */
	uint64_t base;
	uint64_t (*iv)[2];
	uint64_t niv, cap;
	uint64_t cur_lo, cur_hi;    /* the bucket last hit, as a ts range */
	uint64_t *cur;
};

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
	    rb2_stage_arg_str(a, "report", "-", &m->rep_path) < 0)
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

static json_t *json_flow(const struct rb2_flow_rec *f);
static void csv_flow(FILE *o, const struct rb2_flow_rec *f);

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
		json_t *o = json_flow(r);
		FILE *f = m->out->json_f;

		/* Shards on other lcores write the same file: a record at a time. */
		flockfile(f);
		fputs(m->out->json_n++ ? ",\n  " : "\n  ", f);
		json_dumpf(o, f, 0);
		funlockfile(f);
		json_decref(o);
	}
	if (m->out->csv_f != NULL)
		csv_flow(m->out->csv_f, r);   /* one fprintf: a locked write */
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

static json_t *json_flow(const struct rb2_flow_rec *f);

/*
 * One line of the periodic report, for the interval that ends at @end
 * (UINT64_MAX: the run's end): its totals and rates (the bursts measured
 * since the last line), the flows held, the records ended in it and the
 * heaviest of them. Long flows show as their active timeout ends them: set
 * it to the report interval to see every flow in every line.
 */
static void
report_line(struct measure *m, uint64_t end)
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
		json_array_append_new(tops, json_flow(&m->rep_tops[i]));
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
	report_line(m, m->rep_next);
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
		report_line(m, UINT64_MAX);     /* what the last interval had */
	return 0;
}

/* ---- Output ------------------------------------------------------------- */

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

static json_t *
json_flow(const struct rb2_flow_rec *f)
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

static void
csv_flow(FILE *o, const struct rb2_flow_rec *f)
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
	uint64_t bad, bad_bytes, iv_out, unexported, table_bytes, cycles, timed;
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
			"s:o, s:I, s:I, s:I, s:I, s:o, s:o, s:I}", "totals",
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
		json_array_append_new(tops, json_flow(&v->tops[i]));
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
		"%.1f MiB; timeouts active %s, idle %s\n", v->shards > 1 ? "s" : "", m->max_flows,
		v->shards > 1 ? " each" : "", t->peak_flows,
		(double)v->table_bytes / (1 << 20), m->active_txt, m->idle_txt);
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

static void
measure_report(struct rb2_stage *st, FILE *out)
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

static const char *const measure_edges[] = { "records", NULL };

static const struct rb2_stage_ops measure_ops = {
	.api_version = RB2_STAGE_API_VERSION,
	.name = "measure",
	.summary = "flow records with timeouts and a bounded table, rates, top-K, count-min "
		   "(top, interval_ms, flows, active_timeout, idle_timeout, live, cm_width, json, "
		   "csv); ended records out on edge 'records'",
	.edges = measure_edges,
	.optional_edges = 1u << EDGE_RECORDS,
	.priv_size = sizeof(struct measure),
	.init = measure_init,
	.start = measure_start,
	.fini = measure_fini,
	.process = measure_process,
	.idle = measure_idle,
	.drain = measure_drain,
	.report = measure_report,
};

RB2_STAGE_REGISTER(measure_ops);
