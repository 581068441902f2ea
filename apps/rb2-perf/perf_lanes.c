/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Doorbells across channels (--mode lanes, rb2_xport_lane.h): K channels from
 * one lcore to another, each with a QP of its own on both sides (Kalia's
 * "several QPs per lcore"), against all of them on one lane per side (one
 * QP, one doorbell per loop pass, adjacent WRITEs merged). K from --channels
 * (default 1,8,64), rounds interleaved.
 *
 * Each sender pass puts --per-pass messages on every channel and flushes it
 * (a worker whose outputs all have something each pass), then flushes its
 * lane; the receiver drains every channel, then flushes its lane (its head
 * pushes). Per message: the sender's WRs (posted by the channels, and those
 * the lane actually posted after merging), its doorbells, the receiver's
 * doorbells; and the rate. Every message's sequence number is checked.
 *
 * --max-inflight W caps the WRs in flight per QP in both variants: each
 * channel's own window where it has a QP of its own, the lane's window
 * (all its channels together) on the lane. Deferrals and the most WRs seen
 * in flight are reported for each.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_lcore.h>

#include <rb2_lcore.h>
#include <rb2_xport_lane.h>

#include "perf.h"
#include "../common/bench.h"

#define ROUND_TIMEOUT_S 120 /* a run that takes longer has stalled */

enum { V_OWN, V_LANE, NV };
static const char *const vname[NV] = {"qp-per-channel", "lane"};

/* The channels of one K and one variant. */
struct lane_set {
	unsigned int k;
	struct rb2_tx **tx;
	struct rb2_rx **rx;
	struct rb2_xport_lane *ltx, *lrx; /* V_LANE */
	uint64_t *next_tx, *next_rx;      /* per channel sequence numbers */
};

struct lane_rx_arg {
	struct lane_set *s;
	uint64_t expect, got, bad;
	int fail;
	int stop;        /* the sender failed: give up */
};

struct lane_fig {
	double mps[PERF_MAX_ROUNDS];
	double wrs_in, wrs_out, tx_doorbells, rx_doorbells, merged; /* per message, summed */
	uint64_t msgs;
	uint64_t deferrals;         /* the sender's, by its windows */
	uint32_t inflight_seen;     /* most WRs in flight on one of its QPs */
};

static int
lane_receiver(void *arg)
{
	struct lane_rx_arg *a = arg;
	struct lane_set *s = a->s;
	struct rb2_msg m[32];

	while (a->got < a->expect && !__atomic_load_n(&a->stop, __ATOMIC_RELAXED)) {
		for (unsigned int c = 0; c < s->k; c++) {
			int n = rb2_rx_peek_burst(s->rx[c], m, RTE_DIM(m));

			if (n < 0) {
				a->fail = n;
				return 0;
			}
			for (int i = 0; i < n; i++)
				a->bad += *(const uint64_t *)m[i].data != s->next_rx[c]++;
			if (n > 0)
				rb2_rx_release_burst(s->rx[c], m, (unsigned int)n);
			a->got += (uint64_t)n;
		}
		if (s->lrx != NULL) {
			int ret = rb2_xport_lane_flush(s->lrx);

			if (ret < 0 && ret != -ENOSPC) {   /* -ENOSPC: again next pass */
				a->fail = ret;
				return 0;
			}
		}
	}
	return 0;
}

/* Sender: @count messages round robin, --per-pass on each channel a pass. */
static int
lane_send(const struct perf_opts *o, struct lane_set *s, uint64_t count)
{
	uint64_t sent = 0, deadline = rte_rdtsc() + ROUND_TIMEOUT_S * rte_get_tsc_hz();

	while (sent < count) {
		if (rte_rdtsc() > deadline)
			return -ETIMEDOUT;   /* a receiver stopped taking them */
		for (unsigned int c = 0; c < s->k && sent < count; c++) {
			for (unsigned int i = 0; i < o->per_pass && sent < count; i++) {
				void *slot;
				int ret = rb2_tx_reserve(s->tx[c], o->size, &slot);

				if (ret == -ENOBUFS)
					break;             /* that receiver is behind */
				if (ret < 0)
					return ret;
				*(uint64_t *)slot = s->next_tx[c]++;
				rb2_tx_commit(s->tx[c], o->size);
				sent++;
			}
			int ret = rb2_tx_flush(s->tx[c]);
			if (ret < 0)
				return ret;
		}
		if (s->ltx != NULL) {
			int ret = rb2_xport_lane_flush(s->ltx);

			if (ret < 0 && ret != -ENOSPC)
				return ret;
		}
	}
	/* Everything out, then the lane's last chain (its flush polls the QP
	 * when the send queue is full: try until it has room). */
	for (unsigned int c = 0; c < s->k; c++)
		if (rb2_tx_flush(s->tx[c]) < 0)
			return -EIO;
	int ret = s->ltx != NULL ? rb2_xport_lane_flush(s->ltx) : 0;

	while (ret == -ENOSPC && rte_rdtsc() < deadline)
		ret = rb2_xport_lane_flush(s->ltx);
	return ret;
}

static int
set_create(const struct perf_opts *o, struct rb2_xport *xp, struct lane_set *s,
	   unsigned int k, int v)
{
	struct rb2_chan_params p = o->chan;

	s->k = k;
	s->tx = calloc(k, sizeof(*s->tx));
	s->rx = calloc(k, sizeof(*s->rx));
	s->next_tx = calloc(k, sizeof(uint64_t));
	s->next_rx = calloc(k, sizeof(uint64_t));
	if (s->tx == NULL || s->rx == NULL || s->next_tx == NULL || s->next_rx == NULL)
		return -ENOMEM;
	if (v == V_LANE) {
		/* The window is the QP's: on a lane, the lane's. */
		s->ltx = rb2_xport_lane_create(xp, &(struct rb2_xport_lane_params){
			.lcore_id = o->tx_lcore, .max_inflight = p.max_inflight });
		s->lrx = rb2_xport_lane_create(xp, &(struct rb2_xport_lane_params){
			.lcore_id = o->rx_lcore, .max_inflight = p.max_inflight });
		if (s->ltx == NULL || s->lrx == NULL)
			return -rte_errno;
		p.max_inflight = 0;
	}
	for (unsigned int c = 0; c < k; c++) {
		char name[24];

		snprintf(name, sizeof(name), "l%c%u.%u", v == V_LANE ? 'l' : 'q', k, c);
		p.lcore_id = o->tx_lcore;
		p.lane = s->ltx;
		s->tx[c] = rb2_tx_create(name, xp, &p);
		p.lcore_id = o->rx_lcore;
		p.lane = s->lrx;
		s->rx[c] = rb2_rx_create(name, xp, &p);
		if (s->tx[c] == NULL || s->rx[c] == NULL || rb2_chan_pair(s->tx[c], s->rx[c]) != 0)
			return -rte_errno;
	}
	return 0;
}

static void
set_destroy(struct lane_set *s)
{
	for (unsigned int c = 0; s->tx != NULL && c < s->k; c++) {
		rb2_tx_destroy(s->tx[c]);
		rb2_rx_destroy(s->rx[c]);
	}
	rb2_xport_lane_destroy(s->ltx);
	rb2_xport_lane_destroy(s->lrx);
	free(s->tx);
	free(s->rx);
	free(s->next_tx);
	free(s->next_rx);
}

/* The sender's and receiver's WRs and doorbells, and the windows' deferrals, so far. */
struct lane_counts {
	double wrs_in, wrs_out, txd, rxd, merged, deferrals;
	uint32_t seen;          /* most WRs in flight on one QP */
};

static void
set_counts(const struct lane_set *s, struct lane_counts *k)
{
	*k = (struct lane_counts){0};
	for (unsigned int c = 0; c < s->k; c++) {
		struct rb2_tx_stats ts;
		struct rb2_rx_stats rs;

		rb2_tx_stats_get(s->tx[c], &ts);
		rb2_rx_stats_get(s->rx[c], &rs);
		k->wrs_in += (double)ts.wrs;
		k->txd += (double)ts.chains;
		k->rxd += (double)rs.head_pushes;
		k->deferrals += (double)ts.admission_deferrals;
		k->seen = RTE_MAX(k->seen, (uint32_t)ts.max_inflight_seen);
	}
	k->wrs_out = k->wrs_in;
	if (s->ltx != NULL) {
		struct rb2_xport_lane_stats a, b;

		rb2_xport_lane_stats_get(s->ltx, &a);
		rb2_xport_lane_stats_get(s->lrx, &b);
		k->wrs_out = (double)a.wrs_out;
		k->txd = (double)a.doorbells;
		k->rxd = (double)b.doorbells;
		k->merged = (double)(a.merged + a.superseded);
		k->deferrals += (double)a.deferrals;
		k->seen = RTE_MAX(k->seen, a.max_inflight_seen);
	}
}

int
perf_lanes_run(const struct perf_opts *o, json_t *doc)
{
	struct rb2_xport *xp = rb2_xport_open_spec(o->transport);
	static struct lane_set sets[PERF_MAX_CHANNEL_COUNTS][NV];
	static struct lane_fig fig[PERF_MAX_CHANNEL_COUNTS][NV];
	double hz = (double)rte_get_tsc_hz();
	uint64_t bad = 0;
	int ret = 0;

	if (xp == NULL) {
		fprintf(stderr, "rb2-perf: cannot open transport '%s': %s\n", o->transport,
			rte_strerror(rte_errno));
		return -1;
	}
	for (unsigned int i = 0; i < o->nchannels && ret == 0; i++)
		for (int v = 0; v < NV && ret == 0; v++) {
			ret = set_create(o, xp, &sets[i][v], o->channels[i], v);
			if (ret < 0)
				fprintf(stderr, "rb2-perf: cannot set up %u channels (%s): %s\n",
					o->channels[i], vname[v], rte_strerror(-ret));
		}
	if (ret < 0)
		return -1;
	printf("rb2-perf lanes: %u B over %s; %" PRIu64 " messages per run, %u per channel per pass; alpha %u beta %u gamma %u; %u rounds, interleaved\n",
	       o->size, o->transport, o->count, o->per_pass, o->chan.alpha, o->chan.beta,
	       o->chan.gamma, o->rounds);
	for (unsigned int r = 0; r < o->rounds; r++) {
		for (unsigned int i = 0; i < o->nchannels; i++) {
			for (int k = 0; k < NV; k++) {
				int v = (int)(r + (unsigned int)k) % NV;
				struct lane_set *s = &sets[i][v];
				struct lane_rx_arg a = { .s = s, .expect = o->count };
				struct lane_counts c0, c1;
				uint64_t t0;

				set_counts(s, &c0);
				if (rb2_lcore_launch(lane_receiver, &a, o->rx_lcore) != 0)
					return -1;
				t0 = rte_rdtsc();
				ret = lane_send(o, s, o->count);
				if (ret < 0)
					__atomic_store_n(&a.stop, 1, __ATOMIC_RELAXED);
				rb2_lcore_wait(o->rx_lcore);
				if (ret == 0)
					ret = a.fail;
				if (ret < 0) {
					fprintf(stderr, "rb2-perf: %u channels (%s), round %u: %s\n",
						s->k, vname[v], r, strerror(-ret));
					return -1;
				}
				fig[i][v].mps[r] = (double)o->count / ((double)(rte_rdtsc() - t0) / hz) / 1e6;
				printf("round %u: %u channels, %s: %.3f Mmsg/s\n", r, s->k, vname[v],
				       fig[i][v].mps[r]);
				fflush(stdout);
				set_counts(s, &c1);
				fig[i][v].wrs_in += c1.wrs_in - c0.wrs_in;
				fig[i][v].wrs_out += c1.wrs_out - c0.wrs_out;
				fig[i][v].tx_doorbells += c1.txd - c0.txd;
				fig[i][v].rx_doorbells += c1.rxd - c0.rxd;
				fig[i][v].merged += c1.merged - c0.merged;
				fig[i][v].deferrals += (uint64_t)(c1.deferrals - c0.deferrals);
				fig[i][v].inflight_seen = RTE_MAX(fig[i][v].inflight_seen, c1.seen);
				fig[i][v].msgs += o->count;
				bad += a.bad;
			}
		}
	}
	printf("\n%9s %-15s %9s %11s %11s %11s %11s %9s\n", "channels", "variant", "Mmsg/s",
	       "WRs/msg", "posted/msg", "tx db/msg", "rx db/msg", "lane/own");
	for (unsigned int i = 0; i < o->nchannels; i++)
		for (int v = 0; v < NV; v++) {
			const struct lane_fig *f = &fig[i][v];
			double ratio[PERF_MAX_ROUNDS];

			for (unsigned int r = 0; r < o->rounds; r++)
				ratio[r] = fig[i][V_LANE].mps[r] / fig[i][V_OWN].mps[r];
			printf("%9u %-15s %9.3f %11.3f %11.3f %11.4f %11.4f", o->channels[i], vname[v],
			       bench_median((double *)f->mps, o->rounds), f->wrs_in / (double)f->msgs,
			       f->wrs_out / (double)f->msgs, f->tx_doorbells / (double)f->msgs,
			       f->rx_doorbells / (double)f->msgs);
			if (v == V_LANE)
				printf(" %9.3f", bench_median(ratio, o->rounds));
			printf("\n");
		}
	if (o->chan.max_inflight != 0) {
		printf("\nadmission window: %u WRs in flight per QP (the lane's QP: all its channels)\n",
		       o->chan.max_inflight);
		for (unsigned int i = 0; i < o->nchannels; i++)
			for (int v = 0; v < NV; v++)
				printf("%9u %-15s deferrals/msg %.4f, most in flight %u\n",
				       o->channels[i], vname[v],
				       (double)fig[i][v].deferrals / (double)fig[i][v].msgs,
				       fig[i][v].inflight_seen);
	}
	printf("\nerrors %" PRIu64 " (lane/own: median of per-round rate ratios)\n", bad);
	if (doc != NULL) {
		json_t *runs = json_array();

		for (unsigned int i = 0; i < o->nchannels; i++)
			for (int v = 0; v < NV; v++) {
				const struct lane_fig *f = &fig[i][v];
				double m = (double)f->msgs;

				json_array_append_new(runs, json_pack(
					"{s:I, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:I}",
					"channels", (json_int_t)o->channels[i], "variant", vname[v],
					"mmsg_s", bench_json_real(bench_median((double *)f->mps, o->rounds)),
					"wrs_per_msg", bench_json_real(f->wrs_in / m),
					"posted_wrs_per_msg", bench_json_real(f->wrs_out / m),
					"tx_doorbells_per_msg", bench_json_real(f->tx_doorbells / m),
					"rx_doorbells_per_msg", bench_json_real(f->rx_doorbells / m),
					"merged_per_msg", bench_json_real(f->merged / m),
					"deferrals_per_msg", bench_json_real((double)f->deferrals / m),
					"max_inflight_seen", (json_int_t)f->inflight_seen));
			}
		bench_json_merge(doc, json_pack("{s:I, s:I, s:I, s:o}", "per_pass",
			(json_int_t)o->per_pass, "max_inflight", (json_int_t)o->chan.max_inflight,
			"errors", (json_int_t)bad, "runs", runs));
	}
	for (unsigned int i = 0; i < o->nchannels; i++)
		for (int v = 0; v < NV; v++)
			set_destroy(&sets[i][v]);
	rb2_xport_close(xp);
	return bad == 0 ? 0 : -1;
}
