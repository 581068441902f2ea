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

#include <rte_cycles.h>
#include <rte_telemetry.h>

#include <rb2_l5.h>
#include <rb2_xport_lane.h>

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
	for (unsigned int i = 0; i < pl->nlinks; i++) {
		struct rb2_l5_stats ls;

		if (pl->links[i].l5 == NULL)
			continue;
		rb2_l5_stats_get(pl->links[i].l5, &ls);
		fprintf(out, "  link '%s': L5's own ring (via = l5): %" PRIu64 " messages sent, %"
			PRIu64 " received; %" PRIu64 " WRITEs in %" PRIu64 " posts, %" PRIu64
			" signaled, %" PRIu64 " reads of its read position; %" PRIu64 " bytes "
			"copied in and out, %" PRIu64 " cleared\n", pl->links[i].name, ls.messages,
			ls.received, ls.writes, ls.posts, ls.signaled, ls.head_reads,
			ls.copied_bytes, ls.cleared_bytes);
	}
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

	fprintf(out, "{\"proc\": \"%s\", \"seconds\": %.6f, \"stopped\": %d, \"stopped_by_peer\": %d, "
		"\"failed\": %d, \"lost\": %" PRIu64 ", \"stages\": [",
		pl->proc, (double)pl->run_cycles / hz, pl->stop, pl->stop_by_peer, pl->failed,
		rb2_pipeline_lost(pl));
	for (unsigned int i = 0, k = 0; i < pl->nstages; i++) {
		struct rb2_stage *st = &pl->stages[i];

		if (!st->local)
			continue;
		fprintf(out, "%s{\"name\": \"%s\", \"type\": \"%s\", \"lcore\": %u, "
			"\"in_msgs\": %" PRIu64 ", \"in_bytes\": %" PRIu64 ", \"produced\": %" PRIu64
			", \"bursts\": %" PRIu64 ", \"cycles\": %" PRIu64 ", \"emit_errors\": %" PRIu64
			", \"pkt_drops\": %" PRIu64 ", \"edges\": {",
			k++ ? ", " : "", st->name, st->ops->name, st->lcore, st->in_msgs,
			st->in_bytes, st->produced, st->bursts, rb2_stage_cycles(st), st->emit_errors,
			st->pkt_drops);
		for (unsigned int j = 0; j < st->nedges; j++)
			fprintf(out, "%s\"%s\": {\"msgs\": %" PRIu64 ", \"bytes\": %" PRIu64
				", \"failed\": %" PRIu64 ", \"waits\": %" PRIu64 ", \"error\": \"%s\"}",
				j ? ", " : "", st->edges[j].name, st->edges[j].msgs, st->edges[j].bytes,
				st->edges[j].failed, st->edges[j].waits,
				st->edges[j].err ? strerror(-st->edges[j].err) : "");
		fprintf(out, "}, \"counters\": {");
		for (unsigned int j = 0; j < st->ncounters; j++)
			fprintf(out, "%s\"%s\": %" PRIu64, j ? ", " : "", st->counters[j].name,
				st->counters[j].value);
		fprintf(out, "}}");
	}
	fprintf(out, "], \"lcores\": [");
	for (unsigned int l = 0, k = 0; l < RTE_MAX_LCORE; l++) {
		const struct rb2_worker *w = &pl->workers[l];

		if (w->nstages == 0)
			continue;
		fprintf(out, "%s{\"lcore\": %u, \"adaptive\": %s, \"sleeps\": %" PRIu64
			", \"slept_seconds\": %.6f}", k++ ? ", " : "", l,
			w->can_sleep ? "true" : "false", w->sleeps, (double)w->slept_cycles / hz);
	}
	fprintf(out, "], \"lanes\": [");
	for (unsigned int i = 0; i < pl->nlanes; i++) {
		struct rb2_xport_lane_stats ls;

		rb2_xport_lane_stats_get(pl->lane_tab[i].lane, &ls);
		fprintf(out, "%s{\"lcore\": %u, \"peer_lcore\": %u, \"peer_proc\": \"%s\", "
			"\"transport\": \"%s\", "
			"\"queues\": %u, \"wrs_in\": %" PRIu64 ", \"doorbells\": %" PRIu64
			", \"wrs_out\": %" PRIu64 ", \"merged\": %" PRIu64 ", \"superseded\": %"
			PRIu64 ", \"forced\": %" PRIu64 "}", i ? ", " : "", pl->lane_tab[i].lcore,
			pl->lane_tab[i].peer, pl->lane_tab[i].peer_proc,
			rb2_xport_name(pl->lane_tab[i].xp), ls.queues,
			ls.wrs_in, ls.doorbells, ls.wrs_out, ls.merged, ls.superseded, ls.forced);
	}
	fprintf(out, "], \"l5_links\": [");
	for (unsigned int i = 0, k = 0; i < pl->nlinks; i++) {
		struct rb2_l5_stats ls;

		if (pl->links[i].l5 == NULL)
			continue;
		rb2_l5_stats_get(pl->links[i].l5, &ls);
		fprintf(out, "%s{\"name\": \"%s\", \"messages\": %" PRIu64 ", \"received\": %"
			PRIu64 ", \"writes\": %" PRIu64 ", \"posts\": %" PRIu64 ", \"signaled\": %"
			PRIu64 ", \"head_reads\": %" PRIu64 ", \"wrapped\": %" PRIu64
			", \"copied_bytes\": %" PRIu64 ", \"cleared_bytes\": %" PRIu64 "}",
			k++ ? ", " : "", pl->links[i].name, ls.messages, ls.received, ls.writes,
			ls.posts, ls.signaled, ls.head_reads, ls.wrapped, ls.copied_bytes,
			ls.cleared_bytes);
	}
	fprintf(out, "]}");
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
