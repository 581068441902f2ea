/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Pipelines from configurations (rb2_pipeline_load(), rb2_pipeline_free()):
 * the file made a graph (rb2_pipeline_graph.c), then populated here: the
 * stages initialised, the links' halves opened by their kinds (rb2_link.h),
 * the stages placed on their lcores' workers and started. Running is
 * rb2_pipeline_worker.c's, statistics rb2_pipeline_stats.c's.
 */

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_ring.h>
#include <rte_string_fns.h>

#include <rb2_xport.h>
#include <rb2_xport_lane.h>

#include "rb2_link.h"
#include "rb2_pipeline_private.h"

RTE_LOG_REGISTER(rb2_pipeline_logtype, rb2.pipeline, INFO);

struct rb2_xport *
rb2_pipeline_xport_get(struct rb2_pipeline *pl, const char *spec)
{
	for (unsigned int i = 0; i < pl->nxports; i++)
		if (strcmp(pl->xports[i].spec, spec) == 0)
			return pl->xports[i].xp;
	if (pl->nxports == XPORTS_MAX)
		return NULL;
	pl->xports[pl->nxports].xp = rb2_xport_open_spec(spec);
	if (pl->xports[pl->nxports].xp == NULL)
		return NULL;
	/* Not snprintf: spec may be a field of *pl (a link's transport). */
	rte_strscpy(pl->xports[pl->nxports].spec, spec, sizeof(pl->xports[0].spec));
	return pl->xports[pl->nxports++].xp;
}

/* Start the stages that have a start() (ports), upstream first; give the
 * workers of stages that take packets their burst. */
static int
start_stages(struct rb2_pipeline *pl, char *err, size_t errlen)
{
	for (unsigned int i = 0; i < pl->nstages; i++) {
		struct rb2_stage *st = &pl->stages[i];

		if (!st->local || !st->ops->takes_pkts || st->w->pkb != NULL)
			continue;
		rb2_pkt_init();
		st->w->pkb = rte_zmalloc_socket("rb2_pkt_burst", sizeof(*st->w->pkb),
						RTE_CACHE_LINE_SIZE, st->socket);
		if (st->w->pkb == NULL)
			return rb2_pipeline_cfg_err(pl, err, errlen, st->line, "out of memory");
	}
	for (unsigned int r = 0; r < pl->nstages; r++)
		for (unsigned int i = 0; i < pl->nstages; i++) {
			struct rb2_stage *st = &pl->stages[i];
			int ret;

			if (st->topo != r || !st->local || st->ops->start == NULL)
				continue;
			ret = st->ops->start(st);
			if (ret < 0)
				return rb2_pipeline_cfg_err(pl, err, errlen, st->line, "stage '%s' (type %s) cannot "
					       "start: %s", st->name, st->ops->name,
					       st->err[0] ? st->err : strerror(-ret));
		}
	return 0;
}

/*
 * A stage's init() is other people's code (a plugin's): if it crashes, say
 * which stage was being initialised, from which file and line of the
 * configuration and which object, before dying of the same signal. The
 * message is made beforehand; the handler only write()s it (async-signal-
 * safe) and re-raises with the default action.
 */
static char crash_msg[512];
static size_t crash_len;
static const int crash_signals[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT };

static void
on_init_crash(int sig)
{
	static const char *const names[] = {
		[SIGSEGV] = "SIGSEGV\n", [SIGBUS] = "SIGBUS\n", [SIGILL] = "SIGILL\n",
		[SIGFPE] = "SIGFPE\n", [SIGABRT] = "SIGABRT\n",
	};
	const char *n = (size_t)sig < RTE_DIM(names) && names[sig] ? names[sig] : "a signal\n";

	if (write(STDERR_FILENO, crash_msg, crash_len) < 0 ||
	    write(STDERR_FILENO, n, strlen(n)) < 0)
		crash_len = 0;
	signal(sig, SIG_DFL);
	raise(sig);
}

static int
init_guarded(struct rb2_pipeline *pl, struct rb2_stage *st, struct rb2_stage_args *args)
{
	struct sigaction sa = { .sa_handler = on_init_crash }, old[RTE_DIM(crash_signals)];
	int ret;

	crash_len = (size_t)snprintf(crash_msg, sizeof(crash_msg),
				     "rb2: stage '%s' (type %s, from %s; %s:%u) crashed in its init(): ",
				     st->name, st->ops->name, rb2_stage_origin(st->ops), pl->cfg->path,
				     st->line);
	crash_len = RTE_MIN(crash_len, sizeof(crash_msg) - 1);
	for (unsigned int i = 0; i < RTE_DIM(crash_signals); i++)
		sigaction(crash_signals[i], &sa, &old[i]);
	ret = st->ops->init(st, args);
	for (unsigned int i = 0; i < RTE_DIM(crash_signals); i++)
		sigaction(crash_signals[i], &old[i], NULL);
	return ret;
}

static int
init_stage(struct rb2_pipeline *pl, struct rb2_stage *st, struct rb2_cfg_section *s,
	   char *err, size_t errlen)
{
	struct rb2_stage_args args = { .st = st, .sec = s };
	char why[320];
	int ret;

	if (st->ops->priv_size > 0) {
		st->priv = rte_zmalloc_socket("rb2_stage", st->ops->priv_size,
					      RTE_CACHE_LINE_SIZE, st->socket);
		if (st->priv == NULL)
			return rb2_pipeline_cfg_err(pl, err, errlen, st->line, "stage '%s': out of memory",
				       st->name);
	}
	ret = st->ops->init != NULL ? init_guarded(pl, st, &args) : 0;
	if (ret != 0) {
		const char *msg = st->err[0] != '\0' ? st->err : strerror(ret < 0 ? -ret : ret);

		/* Argument errors carry their own line; others get the section's. */
		if (strncmp(msg, "line ", 5) == 0)
			snprintf(err, errlen, "%s:%s", pl->cfg->path, msg + 5);
		else
			rb2_pipeline_cfg_err(pl, err, errlen, st->line, "stage '%s' (type %s): %s", st->name,
				st->ops->name, msg);
		return ret < 0 ? ret : -EINVAL;
	}
	st->inited = true;
	ret = rb2_stage_args_unused(&args, why, sizeof(why));
	if (ret != 0) {
		snprintf(err, errlen, "%s:%s", pl->cfg->path, why + 5);
		return ret;
	}
	return 0;
}

static void
place_workers(struct rb2_pipeline *pl)
{
	for (unsigned int r = 0; r < pl->nstages; r++)
		for (unsigned int i = 0; i < pl->nstages; i++) {
			struct rb2_stage *st = &pl->stages[i];
			struct rb2_worker *w = &pl->workers[st->lcore];

			if (st->topo != r || !st->local)
				continue;
			w->pl = pl;
			w->lcore = st->lcore;
			w->stages[w->nstages++] = st;
			st->w = w;
		}
	for (unsigned int i = 0; i < pl->nlinks; i++) {
		struct rb2_link *lk = &pl->links[i];

		if (lk->ops->is_input(lk)) {
			struct rb2_worker *w = &pl->workers[lk->to->lcore];

			w->inputs[w->ninputs++] = lk;
		}
		if (lk->tx != NULL) {
			struct rb2_worker *w = &pl->workers[lk->from->lcore];

			w->out_links[w->noutputs] = lk;
			w->outputs[w->noutputs++] = lk->tx;
		}
	}
}

struct rb2_pipeline *
rb2_pipeline_load(const char *path, const struct rb2_pipeline_opts *opts,
		  char *err, size_t errlen)
{
	struct rb2_pipeline *pl = rte_zmalloc("rb2_pipeline", sizeof(*pl), RTE_CACHE_LINE_SIZE);
	struct rb2_cfg_section *secs[STAGES_MAX] = { NULL };

	if (pl == NULL) {
		snprintf(err, errlen, "%s: out of memory", path);
		return NULL;
	}
	snprintf(pl->proc, sizeof(pl->proc), "%s",
		 opts != NULL && opts->proc != NULL ? opts->proc : "main");
	if (opts != NULL && opts->text != NULL)
		pl->cfg = rb2_cfg_parse(path, opts->text, strlen(opts->text), opts->vars,
					opts->nvars, err, errlen);
	else
		pl->cfg = rb2_cfg_load(path, opts != NULL ? opts->vars : NULL,
				       opts != NULL ? opts->nvars : 0, err, errlen);
	if (pl->cfg == NULL)
		goto fail;
	if (rb2_pipeline_graph(pl, secs, err, errlen) != 0)
		goto fail;
	/* Downstream first: a sink's cheap checks (can it write its results?)
	 * fail before a source's long set-up (preloading a trace). */
	for (unsigned int r = pl->nstages; r-- > 0;)
		for (unsigned int i = 0; i < pl->nstages; i++)
			if (pl->stages[i].topo == r && pl->stages[i].local &&
			    init_stage(pl, &pl->stages[i], secs[i], err, errlen) != 0)
				goto fail;
	for (unsigned int i = 0; i < pl->nlinks; i++)
		if (!pl->links[i].direct && (pl->links[i].from->local || pl->links[i].to->local) &&
		    pl->links[i].ops->open(pl, &pl->links[i], err, errlen) != 0)
			goto fail;
	place_workers(pl);
	if (start_stages(pl, err, errlen) != 0)
		goto fail;
	rb2_pipeline_telemetry_set(pl);
	return pl;
fail:
	rb2_pipeline_free(pl);
	return NULL;
}

void
rb2_pipeline_free(struct rb2_pipeline *pl)
{
	if (pl == NULL)
		return;
	if (rte_eal_process_type() == RTE_PROC_SECONDARY && rte_eal_primary_proc_alive(NULL) == 0) {
		/* A secondary frees DPDK memory by asking the primary to
		 * (DPDK's malloc_mp): with the primary gone, each such request
		 * waits 5 s for an answer that never comes. The exit gives the
		 * memory back. */
		rte_log(RTE_LOG_INFO, rb2_pipeline_logtype, "rb2.pipeline: the primary process is "
			"gone: the pipeline's shared memory is left for the exit to release\n");
		return;
	}
	rb2_pipeline_telemetry_clear(pl);
	for (unsigned int i = 0; i < pl->nstages; i++) {
		struct rb2_stage *st = &pl->stages[i];

		if (st->inited && st->ops->fini != NULL)
			st->ops->fini(st);
		for (unsigned int j = 0; j < st->nedges; j++)
			while (st->edges[j].q_head != NULL) {
				struct rb2_chunk *c = st->edges[j].q_head;

				st->edges[j].q_head = c->next;
				rte_free(c);
			}
		free(st->edges);
		rte_free(st->priv);
	}
	for (unsigned int i = 0; i < pl->nlinks; i++)
		if (pl->links[i].ops != NULL)
			pl->links[i].ops->close(&pl->links[i]);
	for (unsigned int i = 0; i < pl->nlanes; i++)   /* after their queues */
		rb2_xport_lane_destroy(pl->lane_tab[i].lane);
	for (unsigned int i = 0; i < pl->nxports; i++)
		rb2_xport_close(pl->xports[i].xp);
	for (unsigned int l = 0; l < RTE_MAX_LCORE; l++) {
		rb2_chunk_pool_free(&pl->workers[l]);
		rte_free(pl->workers[l].pkb);
	}
	rb2_cfg_free(pl->cfg);
	rte_free(pl);
}
