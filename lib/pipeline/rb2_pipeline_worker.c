/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * The lcore workers (rb2_pipeline_run(), rb2_pipeline_stop()): each polls its
 * sources and its input channels, runs the stages on what arrives, and then,
 * as rte_graph's walk does, the stages downstream on the same lcore on what
 * was queued for them; it ends each stage when all its inputs have ended,
 * passing the end of stream on.
 */

#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_pause.h>
#include <rte_ring.h>

#include <rb2_lcore.h>
#include <rb2_xport_lane.h>

#include "rb2_link.h"
#include "rb2_pipeline_private.h"

void
rb2_stage_run(struct rb2_stage *st, const struct rb2_msg *msgs, unsigned int n)
{
	uint64_t bytes = 0;

	if (stage_timed(st)) {
		uint64_t t0 = rte_rdtsc();

		st->ops->process(st, msgs, n);
		STAT_ADD(st->cycles, rte_rdtsc() - t0);
	} else {
		st->ops->process(st, msgs, n);
	}
	for (unsigned int i = 0; i < n; i++)
		bytes += msgs[i].len;
	STAT_ADD(st->in_msgs, n);
	STAT_ADD(st->in_bytes, bytes);
	STAT_ADD(st->bursts, 1);
}

/*
 * Run what was queued on same-lcore edges. The stages are in topological
 * order, and a stage only emits to stages after it, so one pass, taking each
 * stage's out edges in turn, runs everything: a stage's queued inputs all
 * come from stages before it, whose edges were taken first.
 */
static void
run_queued(struct rb2_worker *w)
{
	if (likely(w->queued == 0))
		return;
	for (unsigned int i = 0; i < w->nstages; i++) {
		struct rb2_stage *st = w->stages[i];

		for (unsigned int j = 0; j < st->nedges; j++) {
			struct rb2_edge *e = &st->edges[j];
			struct rb2_chunk *c;

			while ((c = e->q_head) != NULL) {
				e->q_head = c->next;
				if (e->q_head == NULL)
					e->q_tail = NULL;
				w->queued--;
				if (c->n > 0 && w->pl->stop < 2) {
					if (e->pkts)
						rb2_pkt_deliver(w, e->next, c->msgs, c->n, RB2_PKTS_LOCAL);
					else
						rb2_stage_run(e->next, c->msgs, c->n);
				} else if (e->pkts) {   /* aborted: free, do not leak */
					rb2_pkt_free_carriers(c->msgs, c->n);
				}
				rb2_chunk_put(w, c);
			}
			e->q_bytes = 0;
		}
	}
}

void
rb2_worker_run_queued(struct rb2_worker *w)
{
	run_queued(w);
}

/* Every input has ended: let the stage emit its last, then pass the end of
 * stream on. */
static void
finish(struct rb2_stage *st)
{
	while (st->ops->drain != NULL && st->pl->stop < 2 && st->ops->drain(st) > 0)
		run_queued(st->w);
	run_queued(st->w);
	for (unsigned int i = 0; i < st->nedges; i++) {
		struct rb2_edge *e = &st->edges[i];
		void *slot;
		int ret;

		if (e->next != NULL) {
			e->next->n_in_done++;
			continue;
		}
		if (e->xops != NULL) {      /* a link of another kind: its own end */
			e->xops->end(st, e);
			continue;
		}
		if (e->tx == NULL)
			continue;
		/* End of stream: the one zero-length message. */
		while ((ret = rb2_tx_reserve(e->tx, 0, &slot)) == -ENOBUFS &&
		       st->pl->stop < 2) {
			rb2_tx_flush(e->tx);
			rte_pause();
		}
		if (ret == 0) {
			rb2_tx_commit(e->tx, 0);
			ret = rb2_tx_flush(e->tx);
		}
		if (ret < 0 && ret != -ENOBUFS && e->err == 0) {
			PL_LOG(ERR, "stage '%s': cannot send the end of stream on link '%s': %s",
			       st->name, e->link->name, strerror(-ret));
			e->err = ret;
			st->pl->failed = 1;
		}
	}
	__atomic_store_n(&st->done, true, __ATOMIC_RELAXED); /* telemetry reads it */
}

/*
 * The pipeline is stopping (a signal, or a receiver's notice): ask the
 * senders of inputs in other processes or hosts to stop too, so that their
 * end of stream comes, and give them stop_timeout_ms to send it. An input
 * whose sender never ends it is given up (its messages in flight are lost,
 * and said so), so that a stop always ends in bounded time.
 */
static void
stop_inputs(struct rb2_worker *w)
{
	struct rb2_pipeline *pl = w->pl;
	uint64_t now = rte_get_timer_cycles();

	if (w->stop_deadline == 0)
		w->stop_deadline = now + rte_get_timer_hz() * pl->stop_timeout_ms / 1000;
	for (unsigned int i = 0; i < w->ninputs; i++) {
		struct rb2_link *l = w->inputs[i];

		if (l->ended || l->from->local)
			continue;
		if (!l->notified) {
			int ret = rb2_rx_notify(l->rx, RB2_NOTICE_STOP);

			l->notified = true;
			if (ret < 0)
				PL_LOG(WARNING, "link '%s': cannot ask stage '%s' (proc %s) to stop: %s",
				       l->name, l->from->name, l->from->proc, strerror(-ret));
		}
		if (now > w->stop_deadline) {
			PL_LOG(ERR, "link '%s': stage '%s' (proc %s) did not end its stream within %u ms "
			       "of the stop; giving it up: what it had not sent is lost",
			       l->name, l->from->name, l->from->proc, pl->stop_timeout_ms);
			l->ended = true;
			l->err = -ETIMEDOUT;
			l->to->n_in_done++;
			pl->failed = 1;
		}
	}
}

/* A receiver in another process or host asked us to stop (RB2_NOTICE_STOP):
 * stop the sources, as a signal here would. */
static void
watch_notices(struct rb2_worker *w)
{
	struct rb2_pipeline *pl = w->pl;

	for (unsigned int i = 0; i < w->noutputs; i++)
		if (unlikely(rb2_tx_notices(w->outputs[i]) & RB2_NOTICE_STOP) && pl->stop == 0) {
			PL_LOG(NOTICE, "a receiver asked to stop (link '%s'): stopping the sources "
			       "and draining", w->out_links[i]->name);
			pl->stop_by_peer = 1;
			pl->stop = 1;
		}
}

/* Idle: has a receiver of ours died? A paced source may not fill its ring,
 * where a reservation would find out; so ask, at most every millisecond. */
static void
check_outputs(struct rb2_worker *w)
{
	for (unsigned int i = 0; i < w->noutputs; i++) {
		struct rb2_edge *e = &w->out_links[i]->from->edges[w->out_links[i]->edge];
		int ret = rb2_tx_check(w->outputs[i]);

		if (ret < 0 && e->err == 0) {
			PL_LOG(ERR, "link '%s' failed: %s", w->out_links[i]->name, strerror(-ret));
			e->err = ret;
			w->pl->failed = 1;
		}
	}
}

/*
 * Adaptive polling (RDMAbox's hybrid; [pipeline] idle_sleep): after
 * idle_sleep empty passes (RDMAbox's hook, which catches the next message of
 * a burst without a sleep), the worker says on every input that it sleeps
 * and blocks on all their doorbells at once; the first sender to publish
 * wakes it. At most sleep_max_us, so that a stop, a signal and the peer
 * checks are still seen in bounded time. A worker that runs a source (a
 * port, a trace: nothing rings for them) or reads an input that cannot ring
 * (an rte_ring, a transport without RB2_XPORT_CAP_WAKE) keeps polling.
 */
static void
worker_sleep(struct rb2_worker *w)
{
	struct rb2_xport_doorbell db[LINKS_MAX];
	struct rb2_rx *armed[LINKS_MAX];
	unsigned int n = 0, i;

	w->idle = 0;
	for (i = 0; i < w->nstages; i++)
		if (!w->stages[i]->done && w->stages[i]->ops->poll != NULL)
			return;
	for (i = 0; i < w->ninputs; i++) {
		struct rb2_link *l = w->inputs[i];

		if (l->ended)
			continue;
		if (rb2_rx_sleep_arm(l->rx, &db[n]) != 0)
			break;              /* a message came: poll on */
		armed[n++] = l->rx;
	}
	if (i == w->ninputs && n > 0) {
		uint64_t t0 = rte_rdtsc();

		rb2_xport_doorbell_wait(db, n, w->pl->sleep_max_us);
		STAT_ADD(w->slept_cycles, rte_rdtsc() - t0);
		STAT_ADD(w->sleeps, 1);
	}
	for (i = 0; i < n; i++)
		rb2_rx_sleep_disarm(armed[i]);
}

/* [pipeline] lanes: post what this lcore's channels queued in its lanes,
 * one chain (one doorbell) per lane for the whole loop pass. A full send
 * queue keeps the rest for the next pass; @drain waits until it is out (the
 * worker's last pass: nothing may stay behind). */
static void
flush_lanes(struct rb2_worker *w, bool drain)
{
	/* A failed lane fails its channels: their next post or poll returns
	 * the error, and the link reports it; nothing to do with it here. */
	for (unsigned int i = 0; i < w->nlanes; i++)
		while (rb2_xport_lane_flush(w->lanes[i]) == -ENOSPC && drain &&
		       w->pl->stop < 2)
			rte_pause();
}

static int
worker_main(void *arg)
{
	struct rb2_worker *w = arg;
	struct rb2_pipeline *pl = w->pl;
	struct rb2_msg msgs[RB2_STAGE_BURST_MAX];
	unsigned int left = w->nstages;

	while (left > 0 && pl->stop < 2) {
		int busy = 0;

		if (pl->stop == 0)
			watch_notices(w);
		else
			stop_inputs(w);

		for (unsigned int i = 0; i < w->nstages; i++) {
			struct rb2_stage *st = w->stages[i];
			int r;

			if (st->done || st->ops->poll == NULL)
				continue;
			if (pl->stop != 0) {
				finish(st);
				left--;
				continue;
			}
			if (stage_timed(st)) {
				uint64_t t0 = rte_rdtsc();

				r = st->ops->poll(st);
				STAT_ADD(st->cycles, rte_rdtsc() - t0);
			} else {
				r = st->ops->poll(st);
			}
			run_queued(w);
			if (r > 0) {
				STAT_ADD(st->produced, (uint64_t)r);
				busy = 1;
			} else if (r < 0) {
				if (r != -ENODATA)
					PL_LOG(ERR, "stage '%s' stopped: %s", st->name, strerror(-r));
				finish(st);
				left--;
			}
		}
		for (unsigned int i = 0; i < w->ninputs; i++) {
			struct rb2_link *l = w->inputs[i];
			unsigned int k;
			int n;

			if (l->ended)
				continue;
			/* A link of another kind than a channel polls itself. */
			if (unlikely(l->ops->poll != NULL)) {
				busy |= l->ops->poll(w, l);
				continue;
			}
			n = rb2_rx_peek_burst(l->rx, msgs, l->peek != 0 ? l->peek : pl->burst);
			if (n == 0)
				continue;
			if (n < 0) {
				PL_LOG(ERR, "link '%s' failed: %s; what stage '%s' (proc %s) had not sent is "
				       "lost (its summary says how much it sent)", l->name, strerror(-n),
				       l->from->name, l->from->proc);
				pl->failed = 1;
				l->err = n;
				l->ended = true;
				l->to->n_in_done++;
				continue;
			}
			for (k = 0; k < (unsigned int)n && msgs[k].len != 0; k++)
				;
			if (k > 0) {
				if (l->pkts)
					rb2_pkt_deliver(w, l->to, msgs, k,
							l->carry == LINK_CARRY_PTRS ?
							RB2_PKTS_DESC : RB2_PKTS_BYTES);
				else
					rb2_stage_run(l->to, msgs, k);
				run_queued(w);
			}
			rb2_rx_release_burst(l->rx, msgs, (unsigned int)n);
			if (k < (unsigned int)n) {     /* the end of stream */
				l->ended = true;
				l->to->n_in_done++;
			}
			busy = 1;
		}
		for (unsigned int i = 0; i < w->nstages; i++) {
			struct rb2_stage *st = w->stages[i];

			if (!st->done && st->ops->poll == NULL && st->n_in_done == st->n_in) {
				finish(st);
				left--;
			}
		}
		if (!busy) {
			for (unsigned int i = 0; i < w->nstages; i++)
				if (w->stages[i]->ops->idle != NULL && !w->stages[i]->done)
					w->stages[i]->ops->idle(w->stages[i]);
			/* Idle: nothing committed may wait for a threshold. */
			for (unsigned int i = 0; i < w->noutputs; i++)
				rb2_tx_flush(w->outputs[i]);
			flush_lanes(w, false);
			check_outputs(w);
			if (w->can_sleep && ++w->idle >= pl->idle_sleep && pl->stop == 0)
				worker_sleep(w);
			else
				rte_pause();
		} else {
			w->idle = 0;
			flush_lanes(w, false);
		}
	}
	flush_lanes(w, true);
	w->ret = left > 0 ? -ECANCELED : 0;
	return 0;
}

/* May this worker sleep when idle? Every input must be able to ring it. */
static void
worker_can_sleep(struct rb2_pipeline *pl, struct rb2_worker *w)
{
	w->can_sleep = false;
	if (pl->idle_sleep == 0 || w->nstages == 0 || w->ninputs == 0)
		return;
	for (unsigned int i = 0; i < w->ninputs; i++)
		if (!w->inputs[i]->sleep) {
			PL_LOG(NOTICE, "lcore %u keeps polling: its input link '%s' %s", w->lcore,
			       w->inputs[i]->name, w->inputs[i]->ops->no_sleep != NULL ?
			       w->inputs[i]->ops->no_sleep :
			       "is over a transport that cannot wake a sleeper (shm can)");
			return;
		}
	w->can_sleep = true;
}

int
rb2_pipeline_run(struct rb2_pipeline *pl)
{
	unsigned int me = rte_lcore_id(), l;
	uint64_t t0 = rte_rdtsc();
	int ret = 0;

	for (l = 0; l < RTE_MAX_LCORE; l++)
		worker_can_sleep(pl, &pl->workers[l]);
	RTE_LCORE_FOREACH_WORKER(l) {
		if (pl->workers[l].nstages == 0)
			continue;
		if (rb2_lcore_launch(worker_main, &pl->workers[l], l) != 0) {
			PL_LOG(ERR, "cannot launch lcore %u: it is busy", l);
			pl->stop = 2;
			ret = -EBUSY;
		}
	}
	if (pl->workers[me].nstages > 0)
		worker_main(&pl->workers[me]);
	RTE_LCORE_FOREACH_WORKER(l)
		if (pl->workers[l].nstages > 0)
			rb2_lcore_wait(l);
	pl->run_cycles = rte_rdtsc() - t0;
	for (l = 0; l < RTE_MAX_LCORE; l++)
		if (pl->workers[l].ret < 0 && ret == 0)
			ret = pl->workers[l].ret;
	/* Every failed emit and link fails the run: nothing is lost quietly. */
	if (ret == 0 && (pl->failed || rb2_pipeline_lost(pl) > 0 ||
			 rb2_pipeline_stage_failures(pl) > 0))
		ret = -EIO;
	return ret;
}

void
rb2_pipeline_stop(struct rb2_pipeline *pl)
{
	if (pl->stop < 2)
		pl->stop++;
}
