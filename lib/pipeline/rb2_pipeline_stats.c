/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* What a pipeline reports (rb2_pipeline.h): the summary table with each
 * stage's own report, the statistics as JSON, and /rb2/pipeline/stages in
 * DPDK telemetry while it runs. */

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include <rte_cycles.h>
#include <rte_telemetry.h>

#include <rb2_xport_lane.h>

#include "rb2_link.h"
#include "rb2_pipeline_private.h"

uint64_t
rb2_stage_cycles(const struct rb2_stage *st)
{
	uint64_t calls = STAT_READ(st->calls), cycles = STAT_READ(st->cycles);
	/* Calls 0, CYCLES_SAMPLE, 2 CYCLES_SAMPLE, ... were timed. */
	uint64_t timed = (calls + CYCLES_SAMPLE - 1) / CYCLES_SAMPLE;

	return timed ? (uint64_t)((unsigned __int128)cycles * calls / timed) : 0;
}

/* Messages an instance emitted, and emits that failed, over its edges. */
static void
edge_totals(const struct rb2_stage *st, uint64_t *out, uint64_t *failed)
{
	*out = 0;
	*failed = 0;
	for (unsigned int j = 0; j < st->nedges; j++) {
		*out += STAT_READ(st->edges[j].msgs);
		*failed += STAT_READ(st->edges[j].failed);
	}
}

uint64_t
rb2_pipeline_lost(const struct rb2_pipeline *pl)
{
	uint64_t lost = 0, outm, failed;

	for (unsigned int i = 0; i < pl->nstages; i++) {
		const struct rb2_stage *st = &pl->stages[i];

		if (!st->local)
			continue;
		edge_totals(st, &outm, &failed);
		lost += failed + st->emit_errors + st->pkt_drops;
	}
	return lost;
}

unsigned int
rb2_pipeline_stage_failures(const struct rb2_pipeline *pl)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < pl->nstages; i++)
		n += pl->stages[i].local && pl->stages[i].failure[0] != '\0';
	return n;
}

/* Why the run was not clean, in words: failed stages, links and emits. */
static void
report_failures(struct rb2_pipeline *pl, FILE *out)
{
	for (unsigned int i = 0; i < pl->nstages; i++) {
		struct rb2_stage *st = &pl->stages[i];

		if (!st->local)
			continue;
		if (st->failure[0] != '\0')
			fprintf(out, "  stage '%s': %s\n", st->name, st->failure);
		if (st->emit_errors > 0)
			fprintf(out, "  stage '%s': %" PRIu64 " emit(s) refused (no such edge, or a "
				"zero length): a bug in the stage\n", st->name, st->emit_errors);
		if (st->pkt_drops > 0)
			fprintf(out, "  stage '%s': %" PRIu64 " packet(s) freed undelivered (the link "
				"failed, the pipeline aborted, or no mbuf to copy one into)\n",
				st->name, st->pkt_drops);
		for (unsigned int j = 0; j < st->nedges; j++) {
			const struct rb2_edge *e = &st->edges[j];
			const struct rb2_link *lk = e->link;

			if (lk == NULL && e->failed > 0)
				fprintf(out, "  stage '%s': %" PRIu64 " message(s) emitted on unlinked "
					"edge '%s': not delivered\n", st->name, e->failed, e->name);
			else if (e->err != 0)
				fprintf(out, "  link '%s' to stage '%s' (proc %s) failed: %s; %" PRIu64
					" message(s) were sent on it before, %" PRIu64 " emit(s) failed\n",
					lk->name, lk->to->name, lk->to->proc, strerror(-e->err), e->msgs,
					e->failed);
			else if (e->failed > 0)
				fprintf(out, "  stage '%s': %" PRIu64 " emit(s) on edge '%s' failed "
					"(too large for link '%s', or the pipeline was aborted)\n",
					st->name, e->failed, e->name, lk->name);
		}
	}
	for (unsigned int i = 0; i < pl->nlinks; i++) {
		const struct rb2_link *lk = &pl->links[i];

		if (lk->rx != NULL && lk->err != 0)
			fprintf(out, "  link '%s' from stage '%s' (proc %s) failed: %s; what it had "
				"not sent was not received\n", lk->name, lk->from->name, lk->from->proc,
				strerror(-lk->err));
	}
}

int
rb2_pipeline_report(struct rb2_pipeline *pl, FILE *out)
{
	double hz = (double)rte_get_tsc_hz();
	double secs = (double)pl->run_cycles / hz;
	unsigned int failures = rb2_pipeline_stage_failures(pl);
	int bad = pl->failed || rb2_pipeline_lost(pl) > 0 || failures > 0;

	fprintf(out, "pipeline: %u stage(s) in proc '%s', ran %.3f s%s%s\n", pl->nstages, pl->proc,
		secs, pl->stop >= 2 ? " (aborted)" : pl->stop_by_peer ?
		" (stopped at a receiver's request, drained)" : pl->stop ? " (stopped, drained)" : "",
		bad ? "; NOT CLEAN:" : "");
	if (bad)
		report_failures(pl, out);
	fprintf(out, "  %-12s %5s %14s %14s %12s %10s\n", "stage", "lcore", "in msgs",
		"out msgs", "failed", "cyc/msg");
	for (unsigned int i = 0; i < pl->nstages; i++) {
		struct rb2_stage *st = &pl->stages[i];
		uint64_t outm, failed, n = st->in_msgs + st->produced;

		if (!st->local)
			continue;
		edge_totals(st, &outm, &failed);
		fprintf(out, "  %-12s %5u %14" PRIu64 " %14" PRIu64 " %12" PRIu64 " %10.1f\n",
			st->name, st->lcore, st->in_msgs, outm, failed + st->emit_errors,
			n ? (double)rb2_stage_cycles(st) / (double)n : 0.0);
		for (unsigned int j = 0; j < st->ncounters; j++)
			fprintf(out, "  %14s%-20s %" PRIu64 "\n", "", st->counters[j].name,
				st->counters[j].value);
	}
	for (unsigned int l = 0; l < RTE_MAX_LCORE; l++) {
		const struct rb2_worker *w = &pl->workers[l];

		if (w->can_sleep)
			fprintf(out, "  lcore %u: adaptive polling: slept %" PRIu64 " times, %.1f%% of "
				"the run\n", l, w->sleeps, pl->run_cycles ?
				100.0 * (double)w->slept_cycles / (double)pl->run_cycles : 0.0);
	}
	for (unsigned int i = 0; i < pl->nlanes; i++) {
		struct rb2_xport_lane_stats ls;

		rb2_xport_lane_stats_get(pl->lane_tab[i].lane, &ls);
		fprintf(out, "  lcore %u: lane to lcore %u%s%s (%s): %" PRIu64 " WRs from %u channel "
			"halves in %" PRIu64 " doorbells (%" PRIu64 " WRs posted, %" PRIu64
			" merged, %" PRIu64 " superseded)\n", pl->lane_tab[i].lcore,
			pl->lane_tab[i].peer, pl->lane_tab[i].peer_proc[0] ? " of proc " : "",
			pl->lane_tab[i].peer_proc, rb2_xport_name(pl->lane_tab[i].xp), ls.wrs_in,
			ls.queues, ls.doorbells, ls.wrs_out, ls.merged, ls.superseded);
	}
	for (unsigned int i = 0; i < pl->nlinks; i++)
		if (pl->links[i].priv != NULL && pl->links[i].ops->report != NULL)
			pl->links[i].ops->report(&pl->links[i], out);
	for (unsigned int i = 0; i < pl->nstages; i++)
		if (pl->stages[i].local && pl->stages[i].ops->report != NULL)
			pl->stages[i].ops->report(&pl->stages[i], out);
	/* A report() that could not write its results failed the job too. */
	if (rb2_pipeline_stage_failures(pl) > failures) {
		for (unsigned int i = 0; i < pl->nstages; i++)
			if (pl->stages[i].local && pl->stages[i].failure[0] != '\0')
				fprintf(out, "stage '%s': %s\n", pl->stages[i].name,
					pl->stages[i].failure);
		return -EIO;
	}
	return 0;
}

void
rb2_pipeline_stats_json(struct rb2_pipeline *pl, FILE *out)
{
	double hz = (double)rte_get_tsc_hz();
	json_t *root = json_object(), *stages = json_array(), *lcores = json_array();
	json_t *lanes = json_array();

	/* jansson escapes every name (a plugin's counters, edges and types
	 * are anyone's strings) and keeps the keys in the order they go in. */
	json_object_set_new(root, "proc", json_string(pl->proc));
	json_object_set_new(root, "seconds", json_real((double)pl->run_cycles / hz));
	json_object_set_new(root, "stopped", json_integer(pl->stop));
	json_object_set_new(root, "stopped_by_peer", json_integer(pl->stop_by_peer));
	json_object_set_new(root, "failed", json_integer(pl->failed));
	json_object_set_new(root, "lost", json_integer((json_int_t)rb2_pipeline_lost(pl)));
	for (unsigned int i = 0; i < pl->nstages; i++) {
		struct rb2_stage *st = &pl->stages[i];
		json_t *o, *edges, *ctrs;

		if (!st->local)
			continue;
		o = json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
			      "name", st->name, "type", st->ops->name, "lcore", (json_int_t)st->lcore,
			      "in_msgs", (json_int_t)st->in_msgs, "in_bytes", (json_int_t)st->in_bytes,
			      "produced", (json_int_t)st->produced, "bursts", (json_int_t)st->bursts,
			      "cycles", (json_int_t)rb2_stage_cycles(st),
			      "emit_errors", (json_int_t)st->emit_errors,
			      "pkt_drops", (json_int_t)st->pkt_drops);
		edges = json_object();
		for (unsigned int j = 0; j < st->nedges; j++) {
			const struct rb2_edge *e = &st->edges[j];

			json_object_set_new(edges, e->name, json_pack("{s:I, s:I, s:I, s:I, s:s}",
				"msgs", (json_int_t)e->msgs, "bytes", (json_int_t)e->bytes,
				"failed", (json_int_t)e->failed, "waits", (json_int_t)e->waits,
				"error", e->err ? strerror(-e->err) : ""));
		}
		json_object_set_new(o, "edges", edges);
		ctrs = json_object();
		for (unsigned int j = 0; j < st->ncounters; j++)
			json_object_set_new(ctrs, st->counters[j].name,
					    json_integer((json_int_t)st->counters[j].value));
		json_object_set_new(o, "counters", ctrs);
		json_array_append_new(stages, o);
	}
	json_object_set_new(root, "stages", stages);
	for (unsigned int l = 0; l < RTE_MAX_LCORE; l++) {
		const struct rb2_worker *w = &pl->workers[l];

		if (w->nstages == 0)
			continue;
		json_array_append_new(lcores, json_pack("{s:I, s:b, s:I, s:f}",
			"lcore", (json_int_t)l, "adaptive", w->can_sleep,
			"sleeps", (json_int_t)w->sleeps, "slept_seconds",
			(double)w->slept_cycles / hz));
	}
	json_object_set_new(root, "lcores", lcores);
	for (unsigned int i = 0; i < pl->nlanes; i++) {
		struct rb2_xport_lane_stats ls;

		rb2_xport_lane_stats_get(pl->lane_tab[i].lane, &ls);
		json_array_append_new(lanes, json_pack("{s:I, s:I, s:s, s:s, s:I, s:I, s:I, s:I, "
			"s:I, s:I, s:I}", "lcore", (json_int_t)pl->lane_tab[i].lcore,
			"peer_lcore", (json_int_t)pl->lane_tab[i].peer,
			"peer_proc", pl->lane_tab[i].peer_proc,
			"transport", rb2_xport_name(pl->lane_tab[i].xp),
			"queues", (json_int_t)ls.queues, "wrs_in", (json_int_t)ls.wrs_in,
			"doorbells", (json_int_t)ls.doorbells, "wrs_out", (json_int_t)ls.wrs_out,
			"merged", (json_int_t)ls.merged, "superseded", (json_int_t)ls.superseded,
			"forced", (json_int_t)ls.forced));
	}
	json_object_set_new(root, "lanes", lanes);
	/* Each link kind's array ("l5_links"): its links' counters. */
	for (unsigned int k = 0; rb2_link_kinds[k] != NULL; k++) {
		const struct rb2_link_ops *ops = rb2_link_kinds[k];
		json_t *a;

		if (ops->json_key == NULL)
			continue;
		a = json_array();
		for (unsigned int i = 0; i < pl->nlinks; i++)
			if (pl->links[i].ops == ops && pl->links[i].priv != NULL)
				json_array_append_new(a, ops->report_json(&pl->links[i]));
		json_object_set_new(root, ops->json_key, a);
	}
	json_dumpf(root, out, JSON_REAL_PRECISION(9));
	json_decref(root);
}

/* ---- Telemetry: /rb2/pipeline/stages ------------------------------------ */

/* The pipeline telemetry shows. The telemetry thread holds the lock while
 * it reads one, so it is never freed under it, and sees it whole. */
static struct rb2_pipeline *telemetry_pl;
static pthread_mutex_t telemetry_lock = PTHREAD_MUTEX_INITIALIZER;

void
rb2_pipeline_telemetry_set(struct rb2_pipeline *pl)
{
	pthread_mutex_lock(&telemetry_lock);
	telemetry_pl = pl;
	pthread_mutex_unlock(&telemetry_lock);
}

void
rb2_pipeline_telemetry_clear(struct rb2_pipeline *pl)
{
	pthread_mutex_lock(&telemetry_lock);
	if (telemetry_pl == pl)
		telemetry_pl = NULL;
	pthread_mutex_unlock(&telemetry_lock);
}

static int
tel_stages(const char *cmd __rte_unused, const char *params __rte_unused,
	   struct rte_tel_data *d)
{
	struct rb2_pipeline *pl;

	rte_tel_data_start_dict(d);
	pthread_mutex_lock(&telemetry_lock);
	pl = telemetry_pl;
	if (pl == NULL) {
		pthread_mutex_unlock(&telemetry_lock);
		return 0;
	}
	for (unsigned int i = 0; i < pl->nstages; i++) {
		struct rb2_stage *st = &pl->stages[i];
		struct rte_tel_data *c;
		uint64_t outm, failed;

		if (!st->local || (c = rte_tel_data_alloc()) == NULL)
			continue;
		rte_tel_data_start_dict(c);
		rte_tel_data_add_dict_string(c, "type", st->ops->name);
		rte_tel_data_add_dict_u64(c, "lcore", st->lcore);
		/* Written by the stage's lcore meanwhile: each read whole,
		 * together perhaps a little apart. */
		rte_tel_data_add_dict_u64(c, "in_msgs", STAT_READ(st->in_msgs));
		rte_tel_data_add_dict_u64(c, "in_bytes", STAT_READ(st->in_bytes));
		rte_tel_data_add_dict_u64(c, "produced", STAT_READ(st->produced));
		edge_totals(st, &outm, &failed);
		rte_tel_data_add_dict_u64(c, "out_msgs", outm);
		rte_tel_data_add_dict_u64(c, "failed", failed + STAT_READ(st->emit_errors));
		rte_tel_data_add_dict_u64(c, "pkt_drops", STAT_READ(st->pkt_drops));
		rte_tel_data_add_dict_u64(c, "cycles", rb2_stage_cycles(st));
		rte_tel_data_add_dict_u64(c, "done", STAT_READ(st->done));
		for (unsigned int j = 0; j < st->ncounters; j++)
			rte_tel_data_add_dict_u64(c, st->counters[j].name,
						  STAT_READ(st->counters[j].value));
		rte_tel_data_add_dict_container(d, st->name, c, 0);
	}
	pthread_mutex_unlock(&telemetry_lock);
	return 0;
}

static int
tel_lcores(const char *cmd __rte_unused, const char *params __rte_unused,
	   struct rte_tel_data *d)
{
	struct rb2_pipeline *pl;
	char key[16];

	rte_tel_data_start_dict(d);
	pthread_mutex_lock(&telemetry_lock);
	pl = telemetry_pl;
	for (unsigned int l = 0; pl != NULL && l < RTE_MAX_LCORE; l++) {
		struct rb2_worker *w = &pl->workers[l];
		struct rte_tel_data *c;

		if (w->nstages == 0 || (c = rte_tel_data_alloc()) == NULL)
			continue;
		rte_tel_data_start_dict(c);
		rte_tel_data_add_dict_u64(c, "adaptive", w->can_sleep);
		rte_tel_data_add_dict_u64(c, "sleeps", STAT_READ(w->sleeps));
		rte_tel_data_add_dict_u64(c, "slept_us", STAT_READ(w->slept_cycles) * 1000000 /
					  rte_get_tsc_hz());
		snprintf(key, sizeof(key), "%u", l);
		rte_tel_data_add_dict_container(d, key, c, 0);
	}
	pthread_mutex_unlock(&telemetry_lock);
	return 0;
}

RTE_INIT(rb2_pipeline_telemetry_init)
{
	rte_telemetry_register_cmd("/rb2/pipeline/lcores", tel_lcores,
				   "Per-lcore adaptive polling of the running pipeline: sleeps and "
				   "time asleep. No parameters.");
	rte_telemetry_register_cmd("/rb2/pipeline/stages", tel_stages,
				   "Per-stage counters of the running pipeline. No parameters.");
}
