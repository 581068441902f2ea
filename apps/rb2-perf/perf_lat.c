/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Ping-pong latency: the main lcore sends a message on channel "lat-ping",
 * the worker echoes it on "lat-pong"; the round trip is timed with the TSC
 * after warm-up rounds. In the same run, a raw ping-pong of one cache line
 * (one store, one spinning load each way) gives the floor the machine allows.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_pause.h>

#include <rb2_lcore.h>

#include "perf.h"
#include <rb2_l5.h>
#include "../common/bench.h"

/* What the design copies (perf_design_copies()), with one message buffer
 * per side and direction. */
struct lat_copy {
	struct perf_copies cp;
	uint8_t *in, *out;
};

/* One direction: an RB² channel, or L5's own ring (--designs l5). */
struct lat_link {
	struct rb2_tx *tx;
	struct rb2_rx *rx;
	struct rb2_l5 *l5;
};

struct lat_ctl {
	const struct perf_opts *o;
	struct lat_copy echo_copy;  /* the echo side's */
	struct lat_link *ping_link, *pong_link;
	uint64_t rounds;
	int fail;
	/* Raw ping-pong lines, each alone in its cache line. */
	_Atomic uint64_t ping __rte_cache_aligned;
	_Atomic uint64_t pong __rte_cache_aligned;
};

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Busy-wait for one message on @k. Returns its bytes, in place or copied out
 * first as the design does (L5: its receive() copies out and clears the
 * ring's copy), with *len set; NULL on error. lat_done() then frees it.
 */
static const void *
lat_recv(const struct lat_link *k, struct rb2_msg *m, uint32_t size,
	 const struct lat_copy *lc, uint32_t *len, int *fail)
{
	int n;

	if (k->l5 != NULL) {
		while ((n = rb2_l5_recv(k->l5, lc->out, size)) == -EAGAIN)
			;
		if (n < 0) {
			*fail = n;
			return NULL;
		}
		*len = (uint32_t)n;
		return lc->out;
	}
	while ((n = rb2_rx_peek_burst(k->rx, m, 1)) == 0)
		;
	if (n < 0) {
		*fail = n;
		return NULL;
	}
	*len = m->len;
	if (!lc->cp.out)
		return m->data;
	rb2_msg_copy(lc->out, m->data, RTE_MIN(m->len, size));
	if (lc->cp.zero)
		memset(m->data, 0, m->len);
	return lc->out;
}

static void
lat_done(const struct lat_link *k, struct rb2_msg *m)
{
	if (k->l5 == NULL)
		rb2_rx_release_burst(k->rx, m, 1);
}

static int
lat_send(const struct lat_link *k, uint32_t size, uint64_t seq, const struct lat_copy *lc,
	 int *fail)
{
	void *slot;
	int ret;

	if (k->l5 != NULL) {      /* built elsewhere; send() copies it in */
		perf_fill(lc->in, size, seq);
		ret = rb2_l5_send(k->l5, lc->in, size);
		if (ret < 0)
			*fail = ret;
		return ret == 0;
	}
	while ((ret = rb2_tx_reserve(k->tx, size, &slot)) == -ENOBUFS)
		rte_pause();
	if (ret < 0) {
		*fail = ret;
		return 0;
	}
	if (lc->cp.in) {          /* built elsewhere, copied in */
		perf_fill(lc->in, size, seq);
		rb2_msg_copy(slot, lc->in, size);
	} else {
		perf_fill(slot, size, seq);
	}
	rb2_tx_commit(k->tx, size);
	/* With alpha > 1 the message would wait for more: send it now. */
	return rb2_tx_flush(k->tx) == 0;
}

static int
echo_main(void *arg)
{
	struct lat_ctl *c = arg;
	const uint32_t size = c->o->size;
	struct rb2_msg m = {0};
	uint32_t len;

	for (uint64_t i = 0; i < c->rounds; i++) {
		if (lat_recv(c->ping_link, &m, size, &c->echo_copy, &len, &c->fail) == NULL)
			return 0;
		if (!lat_send(c->pong_link, size, i, &c->echo_copy, &c->fail))
			return 0;
		lat_done(c->ping_link, &m);
	}
	/* The raw cache-line ping-pong, same count. */
	for (uint64_t i = 1; i <= c->rounds; i++) {
		while (atomic_load_explicit(&c->ping, memory_order_acquire) != i)
			rte_pause();
		atomic_store_explicit(&c->pong, i, memory_order_release);
	}
	return 0;
}

void
perf_lat_summarize(uint64_t *cyc, uint64_t n, struct perf_lat *l)
{
	double ns = 1e9 / (double)rte_get_tsc_hz();
	double sum = 0;

	qsort(cyc, n, sizeof(*cyc), cmp_u64);
	for (uint64_t i = 0; i < n; i++)
		sum += (double)cyc[i];
	l->avg = sum / (double)n * ns;
	l->min = (double)cyc[0] * ns;
	l->max = (double)cyc[n - 1] * ns;
	l->p50 = bench_percentile(cyc, n, 50) * ns;
	l->p99 = bench_percentile(cyc, n, 99) * ns;
	l->p999 = bench_percentile(cyc, n, 99.9) * ns;
}

static struct rb2_tx *
make_tx(struct rb2_xport *xp, const struct perf_opts *o, const char *name,
	unsigned int lcore)
{
	struct rb2_chan_params p = o->chan;

	p.lcore_id = lcore;
	return rb2_tx_create(name, xp, &p);
}

static struct rb2_rx *
make_rx(struct rb2_xport *xp, const struct perf_opts *o, const char *name,
	unsigned int lcore)
{
	struct rb2_chan_params p = o->chan;

	p.lcore_id = lcore;
	return rb2_rx_create(name, xp, &p);
}

int
perf_lat_run(const struct perf_opts *o, json_t *doc)
{
	uint64_t total = o->warmup + o->count, errors = 0;
	struct rb2_xport *xp = rb2_xport_open_spec(o->transport);
	struct lat_link ping = {0}, pong = {0};
	const int l5 = o->npresets == 1 && perf_preset_is_l5(o->presets[0]);
	const char *design = o->npresets == 1 ? o->presets[0] : "rb2";
	struct perf_lat rb2, raw;
	struct lat_ctl *c;
	uint64_t *cyc;
	struct rb2_msg m = {0};
	struct lat_copy my_copy;
	int fail = 0;

	if (xp == NULL) {
		fprintf(stderr, "rb2-perf: cannot open transport '%s': %s\n",
			o->transport, rte_strerror(rte_errno));
		return -1;
	}
	if (l5) {                 /* L5's own rings, 128 x size each (rb2_l5.h) */
		size_t bytes = rb2_l5_ring_bytes(o->chan.slots, o->size);

		ping.l5 = rb2_l5_create(xp, "lat-ping", bytes, o->size, o->tx_lcore, o->rx_lcore);
		pong.l5 = rb2_l5_create(xp, "lat-pong", bytes, o->size, o->rx_lcore, o->tx_lcore);
		if (ping.l5 == NULL || pong.l5 == NULL)
			return -1;
	} else {
		ping.tx = make_tx(xp, o, "lat-ping", o->tx_lcore);
		ping.rx = make_rx(xp, o, "lat-ping", o->rx_lcore);
		pong.tx = make_tx(xp, o, "lat-pong", o->rx_lcore);
		pong.rx = make_rx(xp, o, "lat-pong", o->tx_lcore);
		if (ping.tx == NULL || ping.rx == NULL || pong.tx == NULL || pong.rx == NULL ||
		    rb2_chan_pair(ping.tx, ping.rx) != 0 || rb2_chan_pair(pong.tx, pong.rx) != 0) {
			fprintf(stderr, "rb2-perf: cannot set up the ping-pong channels: %s\n",
				rte_strerror(rte_errno));
			return -1;
		}
	}
	c = rte_zmalloc(NULL, sizeof(*c), RTE_CACHE_LINE_SIZE);
	cyc = malloc(sizeof(*cyc) * (o->count + 1));
	if (c == NULL || cyc == NULL) {
		fprintf(stderr, "rb2-perf: out of memory for %" PRIu64 " samples\n", o->count);
		return -1;
	}
	c->o = o;
	c->echo_copy.cp = my_copy.cp = o->npresets == 1 ?
		perf_design_copies(o->presets[0]) : (struct perf_copies){ 0 };
	c->echo_copy.in = rte_malloc(NULL, o->size, RTE_CACHE_LINE_SIZE);
	c->echo_copy.out = rte_malloc(NULL, o->size, RTE_CACHE_LINE_SIZE);
	my_copy.in = rte_malloc(NULL, o->size, RTE_CACHE_LINE_SIZE);
	my_copy.out = rte_malloc(NULL, o->size, RTE_CACHE_LINE_SIZE);
	if (c->echo_copy.in == NULL || c->echo_copy.out == NULL || my_copy.in == NULL ||
	    my_copy.out == NULL) {
		fprintf(stderr, "rb2-perf: out of memory for copy buffers of %u B\n", o->size);
		return -1;
	}
	c->ping_link = &ping;
	c->pong_link = &pong;
	c->rounds = total;

	if (l5)
		printf("rb2-perf lat: %u B ping-pong over %s on L5's own rings, %" PRIu64
		       " warm-up + %" PRIu64 " measured round trips\n",
		       o->size, o->transport, o->warmup, o->count);
	else
		printf("rb2-perf lat: %u B ping-pong over %s, alpha=%u beta=%u gamma=%u, %" PRIu64
		       " warm-up + %" PRIu64 " measured round trips\n",
		       o->size, o->transport, o->chan.alpha, o->chan.beta, o->chan.gamma,
		       o->warmup, o->count);
	if (rb2_lcore_launch(echo_main, c, o->rx_lcore) != 0) {
		fprintf(stderr, "rb2-perf: cannot launch the echo lcore %u\n", o->rx_lcore);
		return -1;
	}
	for (uint64_t i = 0; i < total && fail == 0; i++) {
		uint64_t t0 = rte_rdtsc();

		const void *data;
		uint32_t len;

		if (!lat_send(&ping, o->size, i, &my_copy, &fail) ||
		    (data = lat_recv(&pong, &m, o->size, &my_copy, &len, &fail)) == NULL)
			break;
		if (i >= o->warmup)
			cyc[i - o->warmup] = rte_rdtsc() - t0;
		errors += len != o->size || !perf_check(data, o->size, i);
		lat_done(&pong, &m);
	}
	if (fail != 0) {
		fprintf(stderr, "rb2-perf: channel failed: %s\n", strerror(-fail));
		return -1;
	}
	perf_lat_summarize(cyc, o->count, &rb2);

	for (uint64_t i = 1; i <= total; i++) {
		uint64_t t0 = rte_rdtsc();

		atomic_store_explicit(&c->ping, i, memory_order_release);
		while (atomic_load_explicit(&c->pong, memory_order_acquire) != i)
			rte_pause();
		if (i > o->warmup)
			cyc[i - 1 - o->warmup] = rte_rdtsc() - t0;
	}
	rb2_lcore_wait(o->rx_lcore);
	if (c->fail != 0) {
		fprintf(stderr, "rb2-perf: echo side failed: %s\n", strerror(-c->fail));
		return -1;
	}
	perf_lat_summarize(cyc, o->count, &raw);

	printf("\n%-22s %9s %9s %9s %9s %9s %9s   (ns, round trip)\n", "", "avg",
	       "p50", "p99", "p99.9", "min", "max");
	printf("%-22s %9.0f %9.0f %9.0f %9.0f %9.0f %9.0f\n", design, rb2.avg,
	       rb2.p50, rb2.p99, rb2.p999, rb2.min, rb2.max);
	printf("%-22s %9.0f %9.0f %9.0f %9.0f %9.0f %9.0f\n", "raw cache-line",
	       raw.avg, raw.p50, raw.p99, raw.p999, raw.min, raw.max);
	printf("\np50 %s / raw cache line = %.2fx, errors %" PRIu64 "\n", design,
	       rb2.p50 / raw.p50, errors);

	/* "rb2": the design measured (named in "design"). */
	bench_json_merge(doc, json_pack("{s:I, s:I, s:s, s:s, s:o, s:o, s:o}",
		"warmup", (json_int_t)o->warmup, "errors", (json_int_t)errors,
		"copies", perf_copies_name(my_copy.cp), "design", design,
		"rb2", perf_json_lat(&rb2), "raw_cacheline", perf_json_lat(&raw),
		"ratio_p50_rb2_raw", bench_json_real(rb2.p50 / raw.p50)));
	free(cyc);
	rte_free(my_copy.in);
	rte_free(my_copy.out);
	rte_free(c->echo_copy.in);
	rte_free(c->echo_copy.out);
	rte_free(c);
	rb2_l5_destroy(ping.l5);
	rb2_l5_destroy(pong.l5);
	rb2_tx_destroy(ping.tx);
	rb2_rx_destroy(ping.rx);
	rb2_tx_destroy(pong.tx);
	rb2_rx_destroy(pong.rx);
	rb2_xport_close(xp);
	return errors == 0 ? 0 : -1;
}
