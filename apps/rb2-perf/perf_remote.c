/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Two-process runs, perftest style: `--server` on one side, `--client HOST`
 * on the other (verbs: two hosts or one; shm: two processes of a group).
 *
 * bw:  the client streams --rounds x --count messages as fast as it can;
 *      the server times each round from its first message to its last and
 *      reports the median (the figures are the receiver's, as ib_write_bw's).
 * lat: the client pings, the server echoes; channel "ping" on --port,
 *      "pong" on --port + 1; the client reports the round trips.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_lcore.h>

#include <rb2_xport_lane.h>

#include "perf.h"
#include "../common/bench.h"

#define CONNECT_TRIES 300 /* x 100 ms: the other side may start later */

/* The run's channel parameters, on @lane if there is one. */
static struct rb2_chan_params
chan_on(const struct perf_opts *o, struct rb2_xport_lane *lane)
{
	struct rb2_chan_params p = o->chan;

	if (lane != NULL) {
		p.lane = lane;
		p.max_inflight = 0;     /* the window is the lane's */
	}
	return p;
}

static struct rb2_tx *
open_tx_on(struct rb2_xport *xp, const struct perf_opts *o, const char *name,
	   const char *peer, struct rb2_xport_lane *lane)
{
	struct rb2_chan_params p = chan_on(o, lane);
	struct rb2_tx *tx = rb2_tx_create(name, xp, &p);
	int ret = -1;

	/* The receiver may not be listening yet: retry for a while. */
	for (int i = 0; tx != NULL && i < CONNECT_TRIES && ret != 0; i++) {
		ret = rb2_tx_connect(tx, peer, 2000);
		if (ret != 0)
			usleep(100000);
	}
	if (tx == NULL || ret != 0) {
		fprintf(stderr, "rb2-perf: cannot connect the sender to %s\n", peer);
		rb2_tx_destroy(tx);
		return NULL;
	}
	return tx;
}

static struct rb2_tx *
open_tx(struct rb2_xport *xp, const struct perf_opts *o, const char *name, const char *peer)
{
	return open_tx_on(xp, o, name, peer, NULL);
}

static struct rb2_rx *
open_rx_on(struct rb2_xport *xp, const struct perf_opts *o, const char *name,
	   const char *peer, struct rb2_xport_lane *lane)
{
	struct rb2_chan_params p = chan_on(o, lane);
	struct rb2_rx *rx = rb2_rx_create(name, xp, &p);

	if (rx == NULL || rb2_rx_connect(rx, peer, 120000) != 0) {
		fprintf(stderr, "rb2-perf: no sender connected on %s\n", peer);
		rb2_rx_destroy(rx);
		return NULL;
	}
	return rx;
}

static struct rb2_rx *
open_rx(struct rb2_xport *xp, const struct perf_opts *o, const char *name, const char *peer)
{
	return open_rx_on(xp, o, name, peer, NULL);
}

/* --lane: one lane for this side's channels, with --max-inflight as its
 * window (*lane stays NULL without --lane); -1, said, if it cannot be made. */
static int
lane_open(struct rb2_xport *xp, const struct perf_opts *o, unsigned int lcore,
	  struct rb2_xport_lane **lane)
{
	*lane = NULL;
	if (!o->lane)
		return 0;
	*lane = rb2_xport_lane_create(xp, &(struct rb2_xport_lane_params){
		.lcore_id = lcore, .max_inflight = o->chan.max_inflight });
	if (*lane == NULL) {
		fprintf(stderr, "rb2-perf: cannot make a lane on %s: %s\n", o->transport,
			rte_strerror(rte_errno));
		return -1;
	}
	return 0;
}

/* The end of a loop pass: one doorbell for every channel's WRs. */
static int
lane_pass(struct rb2_xport_lane *lane)
{
	int ret = lane != NULL ? rb2_xport_lane_flush(lane) : 0;

	return ret == -ENOSPC ? 0 : ret;   /* full or held by its window: next pass */
}

/* Rendezvous of a channel: a host transport listens on every address and
 * connects to the client's HOST; a same-host one (shm) meets by name. */
static void
addr(char *buf, size_t len, const struct perf_opts *o, struct rb2_xport *xp,
     int port_off)
{
	unsigned int port = o->port + (unsigned int)port_off;

	if (!(rb2_xport_caps(xp) & RB2_XPORT_CAP_REMOTE))
		snprintf(buf, len, "perf%u", port);
	else
		snprintf(buf, len, "%s:%u", o->server ? "0.0.0.0" : o->client, port);
}

/* Channels of a bw run: --channels K (one count), each on its own port
 * (--port + i), all on one lcore per side. */
static unsigned int
bw_channels(const struct perf_opts *o)
{
	return o->channels_given ? o->channels[0] : 1;
}

static int
bw_server(struct rb2_xport *xp, const struct perf_opts *o, json_t *doc)
{
	struct perf_variant v = {.name = "rb2", .desc = o->transport};
	unsigned int k = bw_channels(o), c = 0;
	struct rb2_msg m[256];
	char where[96], name[24];
	struct rb2_rx *rx[PERF_MAX_REMOTE_CHANNELS];
	uint64_t next[PERF_MAX_REMOTE_CHANNELS] = {0};
	uint64_t got = 0, total = (uint64_t)o->rounds * o->count, t0 = 0;
	struct rb2_xport_lane *lane;
	unsigned int r = 0;

	if (lane_open(xp, o, rte_lcore_id(), &lane) < 0)
		return -1;
	for (unsigned int i = 0; i < k; i++) {
		addr(where, sizeof(where), o, xp, (int)i);
		snprintf(name, sizeof(name), "perf%u", i);
		rx[i] = open_rx_on(xp, o, name, where, lane);
		if (rx[i] == NULL)
			return -1;
	}
	while (got < total) {
		int n;

		if (c == 0 && lane_pass(lane) < 0) {
			fprintf(stderr, "rb2-perf: the receivers' lane failed\n");
			return -1;
		}
		n = rb2_rx_peek_burst(rx[c], m, o->burst);

		if (n <= 0) {
			if (n < 0) {
				fprintf(stderr, "rb2-perf: receiver %u failed after %" PRIu64 " messages: %s\n",
					c, got, strerror(-n));
				return -1;
			}
			c = (c + 1) % k;
			continue;
		}
		if (t0 == 0)
			t0 = rte_rdtsc();
		for (int i = 0; i < n; i++)
			v.errors += m[i].len != o->size ||
				!perf_check(m[i].data, o->size, next[c] + (uint64_t)i);
		rb2_rx_release_burst(rx[c], m, (unsigned int)n);
		next[c] += (uint64_t)n;
		got += (uint64_t)n;
		c = (c + 1) % k;
		if (got >= (uint64_t)(r + 1) * o->count) {
			uint64_t t1 = rte_rdtsc();
			v.mps[v.n++] = (double)o->count /
				((double)(t1 - t0) / (double)rte_get_tsc_hz()) / 1e6;
			t0 = t1;
			r++;
		}
	}
	{
		double mps[PERF_MAX_ROUNDS];
		memcpy(mps, v.mps, sizeof(mps));
		v.median = bench_median(mps, v.n);
	}
	printf("rb2-perf bw server: %u B messages over %s, %u channel(s), %u rounds of %" PRIu64 "\n",
	       o->size, o->transport, k, o->rounds, o->count);
	printf("%-10s %12s %10s %8s\n", "", "Mmsg/s(med)", "Gbit/s", "errors");
	printf("%-10s %12.4f %10.4f %8" PRIu64 "\n", "rb2", v.median,
	       v.median * o->size * 8 / 1e3, v.errors);
	bench_json_merge(doc, json_pack("{s:s, s:I, s:I, s:o, s:o, s:I, s:o}", "role", "server",
		"channels", (json_int_t)k, "rounds", (json_int_t)o->rounds,
		"median_mmsg_s", bench_json_real(v.median),
		"median_gbit_s", bench_json_real(v.median * o->size * 8 / 1e3),
		"errors", (json_int_t)v.errors, "rounds_mmsg_s", bench_json_reals(v.mps, v.n)));
	/* Let the senders see their last slots released before we go. */
	for (int i = 0; i < 1000; i++) {
		for (unsigned int j = 0; j < k; j++)
			rb2_rx_peek_burst(rx[j], m, 1);
		(void)lane_pass(lane);
		usleep(1000);
	}
	if (lane != NULL) {
		struct rb2_xport_lane_stats ls;

		rb2_xport_lane_stats_get(lane, &ls);
		printf("receivers' lane: %" PRIu64 " doorbells, %" PRIu64 " WRs posted\n",
		       ls.doorbells, ls.wrs_out);
	}
	for (unsigned int i = 0; i < k; i++)
		rb2_rx_destroy(rx[i]);
	rb2_xport_lane_destroy(lane);
	return v.errors == 0 ? 0 : -1;
}

/* The client streams on its channels round robin, a burst each; with
 * --max-inflight every channel's QP has that admission window, and the
 * summed counters say what it did. */
static int
bw_client(struct rb2_xport *xp, const struct perf_opts *o, json_t *doc)
{
	uint64_t total = (uint64_t)o->rounds * o->count, seq = 0;
	unsigned int k = bw_channels(o);
	uint64_t next[PERF_MAX_REMOTE_CHANNELS] = {0};
	struct rb2_tx *tx[PERF_MAX_REMOTE_CHANNELS];
	uint64_t wrs = 0, sig = 0, defer = 0, seen = 0, doorbells = 0, t0;
	struct rb2_xport_lane *lane;
	char where[96], name[24];
	size_t stride;

	if (lane_open(xp, o, rte_lcore_id(), &lane) < 0)
		return -1;
	for (unsigned int i = 0; i < k; i++) {
		addr(where, sizeof(where), o, xp, (int)i);
		snprintf(name, sizeof(name), "perf%u", i);
		tx[i] = open_tx_on(xp, o, name, where, lane);
		if (tx[i] == NULL)
			return -1;
	}
	stride = rb2_tx_stride(tx[0], o->size);
	t0 = rte_rdtsc();
	for (unsigned int c = 0; seq < total; c = (c + 1) % k) {
		unsigned int want = (unsigned int)RTE_MIN((uint64_t)o->burst, total - seq);
		uint8_t *first;
		int n;

		if (c == 0 && lane_pass(lane) < 0) {
			fprintf(stderr, "rb2-perf: the senders' lane failed\n");
			return -1;
		}
		n = rb2_tx_reserve_burst(tx[c], o->size, want, (void **)&first);

		if (n == -ENOBUFS)
			continue;
		if (n < 0) {
			fprintf(stderr, "rb2-perf: sender %u failed: %s\n", c, strerror(-n));
			return -1;
		}
		for (int i = 0; i < n; i++)
			perf_fill(first + (size_t)i * stride, o->size, next[c] + (uint64_t)i);
		rb2_tx_commit_burst(tx[c], o->size, (unsigned int)n);
		next[c] += (uint64_t)n;
		seq += (uint64_t)n;
	}
	for (unsigned int c = 0; c < k; c++)
		rb2_tx_flush(tx[c]);
	for (uint64_t t = rte_get_timer_cycles(), c = 0; rte_get_timer_cycles() - t < 30 * rte_get_timer_hz();) {
		unsigned int busy = 0;

		for (c = 0; c < k; c++)
			busy += rb2_tx_drained(tx[c]) == 0;
		(void)lane_pass(lane);
		if (busy == 0)
			break;
	}
	double secs = (double)(rte_rdtsc() - t0) / (double)rte_get_tsc_hz();
	for (unsigned int c = 0; c < k; c++) {
		struct rb2_tx_stats st;

		rb2_tx_stats_get(tx[c], &st);
		wrs += st.wrs;
		sig += st.signaled_wrs;
		defer += st.admission_deferrals;
		seen = RTE_MAX(seen, (uint64_t)st.max_inflight_seen);
		doorbells += st.chains;
	}
	if (lane != NULL) {
		struct rb2_xport_lane_stats ls;

		rb2_xport_lane_stats_get(lane, &ls);
		defer += ls.deferrals;
		seen = RTE_MAX(seen, (uint64_t)ls.max_inflight_seen);
		doorbells = ls.doorbells;
	}
	printf("rb2-perf bw client: sent %" PRIu64 " messages of %u B on %u channel(s)%s in %.2f s; window %u: %.3f WRs per message (%" PRIu64 " signaled), %.4f doorbells per message, %" PRIu64 " deferred, at most %" PRIu64 " WRs in flight on a QP\n",
	       seq, o->size, k, lane != NULL ? " on one lane" : "", secs, o->chan.max_inflight,
	       seq ? (double)wrs / (double)seq : 0.0, sig,
	       seq ? (double)doorbells / (double)seq : 0.0, defer, seen);
	/* "elapsed_seconds": what the run took ("seconds" is the option). */
	bench_json_merge(doc, json_pack("{s:s, s:I, s:b, s:I, s:I, s:o, s:I, s:I, s:I, s:I, s:I}",
		"role", "client", "channels", (json_int_t)k, "lane", lane != NULL,
		"max_inflight", (json_int_t)o->chan.max_inflight, "messages", (json_int_t)seq,
		"elapsed_seconds", bench_json_real(secs), "wrs", (json_int_t)wrs,
		"signaled_wrs", (json_int_t)sig, "doorbells", (json_int_t)doorbells,
		"admission_deferrals", (json_int_t)defer, "max_inflight_seen", (json_int_t)seen));
	for (unsigned int c = 0; c < k; c++)
		rb2_tx_destroy(tx[c]);
	rb2_xport_lane_destroy(lane);
	return 0;
}

static int
lat_pair(struct rb2_xport *xp, const struct perf_opts *o, json_t *doc)
{
	char ping[96], pong[96];
	struct rb2_tx *tx;
	struct rb2_rx *rx;
	struct rb2_msg m = {0};
	uint64_t total = o->warmup + o->count, *cyc = NULL, errors = 0;

	addr(ping, sizeof(ping), o, xp, 0);
	addr(pong, sizeof(pong), o, xp, 1);
	int remote = (rb2_xport_caps(xp) & RB2_XPORT_CAP_REMOTE) != 0;
	if (o->server) {
		rx = open_rx(xp, o, "ping", ping);
		if (remote)
			snprintf(pong, sizeof(pong), "%s:%u", o->peer, o->port + 1);
		tx = rx ? open_tx(xp, o, "pong", pong) : NULL;
	} else {
		tx = open_tx(xp, o, "ping", ping);
		if (remote)
			snprintf(pong, sizeof(pong), "0.0.0.0:%u", o->port + 1);
		rx = tx ? open_rx(xp, o, "pong", pong) : NULL;
	}
	if (tx == NULL || rx == NULL)
		return -1;
	if (!o->server && (cyc = malloc(sizeof(*cyc) * (o->count + 1))) == NULL)
		return -1;
	for (uint64_t i = 0; i < total; i++) {
		uint64_t t0 = rte_rdtsc();
		void *slot = NULL;
		int n;

		if (!o->server) {
			while (rb2_tx_reserve(tx, o->size, &slot) == -ENOBUFS)
				;
			perf_fill(slot, o->size, i);
			rb2_tx_commit(tx, o->size);
			rb2_tx_flush(tx);
		}
		while ((n = rb2_rx_peek_burst(rx, &m, 1)) == 0)
			;
		if (n < 0) {
			fprintf(stderr, "rb2-perf: channel failed at round %" PRIu64 ": %s\n",
				i, strerror(-n));
			return -1;
		}
		errors += m.len != o->size || !perf_check(m.data, o->size, i);
		if (o->server) {
			while (rb2_tx_reserve(tx, o->size, &slot) == -ENOBUFS)
				;
			memcpy(slot, m.data, o->size);
			rb2_tx_commit(tx, o->size);
			rb2_tx_flush(tx);
		} else if (i >= o->warmup) {
			cyc[i - o->warmup] = rte_rdtsc() - t0;
		}
		rb2_rx_release_burst(rx, &m, 1);
	}
	if (!o->server) {
		struct perf_lat l;

		perf_lat_summarize(cyc, o->count, &l);
		printf("rb2-perf lat client: %u B over %s, %" PRIu64 " warm-up + %" PRIu64 " round trips\n",
		       o->size, o->transport, o->warmup, o->count);
		printf("%-6s %9s %9s %9s %9s %9s %9s   (us, round trip)\n", "", "avg", "p50",
		       "p99", "p99.9", "min", "max");
		printf("%-6s %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f\n", "rb2", l.avg / 1e3,
		       l.p50 / 1e3, l.p99 / 1e3, l.p999 / 1e3, l.min / 1e3, l.max / 1e3);
		bench_json_merge(doc, json_pack("{s:s, s:I, s:I, s:o}", "role", "client",
			"warmup", (json_int_t)o->warmup, "errors", (json_int_t)errors,
			"rb2", perf_json_lat(&l)));
		free(cyc);
	}
	sleep(1);
	rb2_tx_destroy(tx);
	rb2_rx_destroy(rx);
	return errors == 0 ? 0 : -1;
}

int
perf_remote_run(const struct perf_opts *o, json_t *doc)
{
	struct rb2_xport *xp = rb2_xport_open_spec(o->transport);
	int ret;

	if (xp == NULL) {
		fprintf(stderr, "rb2-perf: cannot open transport '%s': %s\n", o->transport,
			rte_strerror(rte_errno));
		return -1;
	}
	if (o->mode == MODE_LAT)
		ret = lat_pair(xp, o, doc);
	else
		ret = o->server ? bw_server(xp, o, doc) : bw_client(xp, o, doc);
	rb2_xport_close(xp);
	return ret;
}
