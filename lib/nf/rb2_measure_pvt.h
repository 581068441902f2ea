/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_MEASURE_PVT_H
#define RB2_MEASURE_PVT_H

/*
 * The measure stage's state, shared by its two files: rb2_stage_measure.c
 * (the stage: arguments, the per-burst work, timeouts by the clock, the
 * final flush, shard groups) and rb2_measure_out.c (what it writes: records
 * as JSON and CSV, periodic report lines, the summary and the results
 * document, merged over a group's shards). Not installed.
 */

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include <rb2_flowtab.h>
#include <rb2_stage.h>
#include <rb2_trace.h>

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
	uint64_t tick_tsc, tick_cycles;   /* idle(): the clock read at most every 10 ms */
	int seen_live;
	/* Per-interval packets and bytes: bucket i covers
	 * [(base + i) * interval_ns, (base + i + 1) * interval_ns). */
	uint64_t base;
	uint64_t (*iv)[2];
	uint64_t niv, cap;
	uint64_t cur_lo, cur_hi;    /* the bucket last hit, as a ts range */
	uint64_t *cur;
};


/* A record as JSON (one object of "flow_list") and as a CSV line. */
json_t *rb2_measure_json_flow(const struct rb2_flow_rec *f);
void rb2_measure_csv_flow(FILE *o, const struct rb2_flow_rec *f);

/* One periodic report line, for the interval that ends at @end (UINT64_MAX:
 * the run's end). */
void rb2_measure_report_line(struct measure *m, uint64_t end);

/* The stage's report(): its summary, and its files finished; a shard's
 * line, and from the group's last shard the group's, merged. */
void rb2_measure_report(struct rb2_stage *st, FILE *out);

#endif /* RB2_MEASURE_PVT_H */
