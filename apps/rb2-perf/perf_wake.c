/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Adaptive polling (--mode wake): what sleeping costs and what it saves, a
 * polling receiver and an adaptive one (RB2_CHAN_F_SLEEP, --idle-sleep empty
 * passes before it sleeps) side by side, in interleaved rounds.
 *
 *  - paced: the main lcore sends one message every --gap-us, stamped with
 *    the TSC; the receiver's lcore takes the stamp from its clock on receipt
 *    (one-way, one host: both read the same invariant TSC). The adaptive
 *    receiver sleeps between messages, so this is its wake-up latency. The
 *    receiver's thread CPU time (getrusage) over the round's wall time is its
 *    CPU under paced load.
 *  - idle: nothing for half a second (then one message): the receiver's CPU
 *    when there is no work at all.
 *  - busy: the main lcore streams --count messages as fast as it can; the
 *    ratio of the two receivers' rates is what adaptive polling costs a busy
 *    lcore (the sender's fence per publication, the receiver's idle count).
 */

#define _GNU_SOURCE /* RUSAGE_THREAD */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <sys/resource.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_pause.h>

#include <rb2_lcore.h>

#include "perf.h"
#include "../common/bench.h"

#define SLEEP_MAX_US 10000 /* the longest sleep, as a pipeline's default */
#define IDLE_US 500000     /* idle: nothing for this long */

enum { V_POLL, V_ADAPTIVE, NV };
static const char *const vname[NV] = {"poll", "adaptive"};

/* One round of the receiver's lcore. */
struct wake_round {
	struct rb2_rx *rx;
	int adaptive;
	unsigned int idle_sleep;
	uint64_t expect;         /* messages */
	uint64_t *lat;           /* paced: one-way cycles per message, or NULL */
	uint64_t got, bad, sleeps;
	uint64_t cpu_us, wall_us, cycles;
	int fail;
};

static uint64_t
thread_cpu_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
		(uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

static int
receiver_main(void *arg)
{
	struct wake_round *r = arg;
	uint64_t cpu0 = thread_cpu_us(), t0 = rte_rdtsc(), t1 = 0;
	unsigned int idle = 0;
	struct rb2_msg m[32];

	while (r->got < r->expect) {
		int n = rb2_rx_peek_burst(r->rx, m, RTE_DIM(m));

		if (n < 0) {
			r->fail = n;
			return 0;
		}
		if (n == 0) {
			if (r->adaptive && ++idle >= r->idle_sleep) {
				int ret = rb2_rx_sleep(r->rx, SLEEP_MAX_US);

				if (ret < 0 && ret != -EAGAIN) {
					r->fail = ret;
					return 0;
				}
				r->sleeps += ret == 0;
				idle = 0;
			}
			continue;
		}
		idle = 0;
		for (int i = 0; i < n; i++) {
			const uint64_t *w = m[i].data;
			uint64_t now = rte_rdtsc();

			r->bad += w[0] != r->got + (uint64_t)i;
			if (r->lat != NULL)
				r->lat[r->got + (uint64_t)i] = now > w[1] ? now - w[1] : 0;
		}
		if (r->got == 0)
			t1 = rte_rdtsc();        /* busy: from the first message */
		rb2_rx_release_burst(r->rx, m, (unsigned int)n);
		r->got += (uint64_t)n;
	}
	r->cycles = rte_rdtsc() - (r->lat != NULL ? t0 : t1);
	r->wall_us = (rte_rdtsc() - t0) * 1000000 / rte_get_tsc_hz();
	r->cpu_us = thread_cpu_us() - cpu0;
	return 0;
}

static int
send_one(struct rb2_tx *tx, uint32_t size, uint64_t seq, int flush)
{
	uint64_t *w;
	void *slot = NULL;
	int ret;

	while ((ret = rb2_tx_reserve(tx, size, &slot)) == -ENOBUFS)
		rb2_tx_flush(tx);
	if (ret < 0)
		return ret;
	w = slot;
	w[0] = seq;
	w[1] = rte_rdtsc();
	rb2_tx_commit(tx, size);
	return flush ? rb2_tx_flush(tx) : 0;
}

/* One round: launch the receiver, send (paced: each message @gap_us after
 * the last), wait. */
static int
run_round(const struct perf_opts *o, struct rb2_tx *tx, struct wake_round *r, int paced,
	  uint64_t gap_us)
{
	uint64_t gap = gap_us * rte_get_tsc_hz() / 1000000;
	int ret = 0;

	if (rb2_lcore_launch(receiver_main, r, o->rx_lcore) != 0)
		return -EBUSY;
	for (uint64_t i = 0; i < r->expect && ret == 0; i++) {
		if (paced) {
			uint64_t due = rte_rdtsc() + gap;

			while (rte_rdtsc() < due)
				rte_pause();
		}
		ret = send_one(tx, o->size, i, paced);
	}
	if (ret == 0)
		ret = rb2_tx_flush(tx);
	rb2_lcore_wait(o->rx_lcore);
	return ret < 0 ? ret : r->fail;
}

int
perf_wake_run(const struct perf_opts *o, json_t *doc)
{
	struct rb2_xport *xp = rb2_xport_open_spec(o->transport);
	struct rb2_tx *tx[NV];
	struct rb2_rx *rx[NV];
	uint64_t paced_n = o->paced, *lat[NV];
	double cpu[NV][PERF_MAX_ROUNDS], idle_cpu[NV][PERF_MAX_ROUNDS];
	double mps[NV][PERF_MAX_ROUNDS], ratio[PERF_MAX_ROUNDS];
	uint64_t sleeps[NV] = {0}, busy_sleeps = 0, bad = 0, nlat[NV] = {0};
	struct perf_lat l[NV];
	double hz = (double)rte_get_tsc_hz();

	if (xp == NULL) {
		fprintf(stderr, "rb2-perf: cannot open transport '%s': %s\n", o->transport,
			rte_strerror(rte_errno));
		return -1;
	}
	if (!(rb2_xport_caps(xp) & RB2_XPORT_CAP_WAKE)) {
		fprintf(stderr, "rb2-perf: --mode wake needs a transport that can wake a sleeping receiver (shm, verbs); %s cannot\n",
			o->transport);
		return -1;
	}
	for (int v = 0; v < NV; v++) {
		struct rb2_chan_params p = o->chan;
		char name[16];

		if (v == V_ADAPTIVE)
			p.flags |= RB2_CHAN_F_SLEEP;
		snprintf(name, sizeof(name), "wake-%s", vname[v]);
		p.lcore_id = o->tx_lcore;
		tx[v] = rb2_tx_create(name, xp, &p);
		p.lcore_id = o->rx_lcore;
		rx[v] = rb2_rx_create(name, xp, &p);
		lat[v] = malloc(sizeof(uint64_t) * paced_n * o->rounds);
		if (tx[v] == NULL || rx[v] == NULL || lat[v] == NULL || rb2_chan_pair(tx[v], rx[v]) != 0) {
			fprintf(stderr, "rb2-perf: cannot set up the %s channel: %s\n", vname[v],
				rte_strerror(rte_errno));
			return -1;
		}
	}
	printf("rb2-perf wake: %u B over %s; paced: %" PRIu64 " messages %" PRIu64
	       " us apart; busy: %" PRIu64 " messages; adaptive sleeps after %u empty polls (at most %u us); %u rounds, interleaved\n",
	       o->size, o->transport, paced_n, o->gap_us, o->count, o->idle_sleep, SLEEP_MAX_US,
	       o->rounds);
	for (unsigned int round = 0; round < o->rounds; round++) {
		for (int k = 0; k < NV; k++) {
			int v = (int)(round + (unsigned int)k) % NV;  /* alternate who goes first */
			struct wake_round pr = { .rx = rx[v], .adaptive = v == V_ADAPTIVE,
				.idle_sleep = o->idle_sleep, .expect = paced_n,
				.lat = lat[v] + nlat[v] };
			struct wake_round br = { .rx = rx[v], .adaptive = v == V_ADAPTIVE,
				.idle_sleep = o->idle_sleep, .expect = o->count };
			struct wake_round ir = { .rx = rx[v], .adaptive = v == V_ADAPTIVE,
				.idle_sleep = o->idle_sleep, .expect = 1 };
			int ret = run_round(o, tx[v], &pr, 1, o->gap_us);

			if (ret == 0)
				ret = run_round(o, tx[v], &br, 0, 0);
			if (ret == 0)   /* idle: one message after IDLE_US */
				ret = run_round(o, tx[v], &ir, 1, IDLE_US);
			if (ret < 0) {
				fprintf(stderr, "rb2-perf: %s round %u failed: %s\n", vname[v], round,
					strerror(-ret));
				return -1;
			}
			nlat[v] += pr.got;
			sleeps[v] += pr.sleeps;
			busy_sleeps += br.sleeps;
			bad += pr.bad + br.bad;
			cpu[v][round] = pr.wall_us ? 100.0 * (double)pr.cpu_us / (double)pr.wall_us : 0;
			idle_cpu[v][round] = ir.wall_us ? 100.0 * (double)ir.cpu_us / (double)ir.wall_us : 0;
			mps[v][round] = (double)br.got / ((double)br.cycles / hz) / 1e6;
		}
		ratio[round] = mps[V_ADAPTIVE][round] / mps[V_POLL][round];
		printf("round %u: busy %.2f / %.2f Mmsg/s; CPU paced %.1f%% / %.2f%%, idle %.1f%% / %.3f%% (poll / adaptive)\n",
		       round, mps[V_POLL][round], mps[V_ADAPTIVE][round], cpu[V_POLL][round],
		       cpu[V_ADAPTIVE][round], idle_cpu[V_POLL][round], idle_cpu[V_ADAPTIVE][round]);
	}
	for (int v = 0; v < NV; v++)
		perf_lat_summarize(lat[v], nlat[v], &l[v]);
	printf("\n%-10s %9s %9s %9s %9s %9s %9s   (ns, one way, %" PRIu64 " samples each)\n",
	       "paced", "p50", "p99", "p99.9", "max", "CPU %", "idle CPU %", nlat[0]);
	for (int v = 0; v < NV; v++)
		printf("%-10s %9.0f %9.0f %9.0f %9.0f %9.2f %9.3f\n", vname[v], l[v].p50, l[v].p99,
		       l[v].p999, l[v].max, bench_median(cpu[v], o->rounds),
		       bench_median(idle_cpu[v], o->rounds));
	printf("\nbusy: adaptive / poll = %.3f (median of per-round ratios), the adaptive receiver slept %"
	       PRIu64 " times; paced: %" PRIu64 " sleeps; errors %" PRIu64 "\n",
	       bench_median(ratio, o->rounds), busy_sleeps, sleeps[V_ADAPTIVE], bad);
	if (doc != NULL) {
		bench_json_merge(doc, json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o}",
			"gap_us", (json_int_t)o->gap_us, "paced", (json_int_t)paced_n,
			"idle_sleep", (json_int_t)o->idle_sleep, "sleep_max_us",
			(json_int_t)SLEEP_MAX_US, "samples", (json_int_t)nlat[0],
			"errors", (json_int_t)bad, "sleeps", (json_int_t)sleeps[V_ADAPTIVE],
			"busy_sleeps", (json_int_t)busy_sleeps, "busy_ratio_adaptive_poll",
			bench_json_real(bench_median(ratio, o->rounds))));
		for (int v = 0; v < NV; v++) {
			char key[32];

			snprintf(key, sizeof(key), "wake_%s", vname[v]);
			json_object_set_new(doc, key, perf_json_lat(&l[v]));
			snprintf(key, sizeof(key), "paced_cpu_pct_%s", vname[v]);
			json_object_set_new(doc, key, bench_json_real(bench_median(cpu[v], o->rounds)));
			snprintf(key, sizeof(key), "idle_cpu_pct_%s", vname[v]);
			json_object_set_new(doc, key,
					    bench_json_real(bench_median(idle_cpu[v], o->rounds)));
			snprintf(key, sizeof(key), "busy_mps_%s", vname[v]);
			json_object_set_new(doc, key, bench_json_real(bench_median(mps[v], o->rounds)));
		}
	}
	for (int v = 0; v < NV; v++) {
		free(lat[v]);
		rb2_tx_destroy(tx[v]);
		rb2_rx_destroy(rx[v]);
	}
	rb2_xport_close(xp);
	return bad == 0 ? 0 : -1;
}
