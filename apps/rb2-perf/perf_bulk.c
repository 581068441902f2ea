/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Large messages from application memory (--mode bulk, rb2_bulk.h): where
 * lending a buffer beats copying it through the ring. For each size from
 * 4 KiB to 4 MiB, three ways of moving the application's buffers, in
 * interleaved rounds:
 *
 *  - copy:     the sender copies the buffer into the ring, the receiver
 *              copies it out (the ring's own path; inline_max = UINT32_MAX);
 *  - lend:     the sender lends it (registered once, through the cache), the
 *              receiver READs it into its destination (registered once);
 *  - lend-reg: the same, each buffer forgotten once it is back, on both
 *              sides: registration on every message, as without a cache.
 *
 * The application's data already sits in its buffers (filled once); each
 * message only stamps its first and last words, which the receiver checks.
 * The sender cycles through four buffers, reusing one when it is back. The
 * crossover is the smallest size from which lending is at least as fast as
 * copying, in the median of the per-round ratios.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <sys/mman.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_lcore.h>

#include <rb2_bulk.h>
#include <rb2_lcore.h>
#include <rb2_mr_cache.h>

#include "perf.h"
#include "../common/bench.h"

#define BULK_SIZES 6
#define BULK_BUFS 4
#define BULK_MAX (4u << 20)
#define BULK_ROUND_BYTES (32u << 20) /* per size, variant and round */
#define ROUND_TIMEOUT_S 120          /* a run that takes longer has stalled */

enum { V_COPY, V_LEND, V_LEND_REG, NV };
static const char *const vname[NV] = {"copy", "lend", "lend-reg"};

struct bulk_round {
	struct rb2_bulk_rx *b;
	uint8_t *dst;
	uint32_t size;
	uint64_t expect, got, bad;
	int forget;          /* lend-reg: drop the destination's registration */
	int fail;
	int stop;            /* the sender failed: give up */
};

static int
receiver_main(void *arg)
{
	struct bulk_round *r = arg;

	while (r->got < r->expect && !__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
		int ret = rb2_bulk_recv(r->b, r->dst, BULK_MAX);

		if (ret == -EAGAIN || ret == -EINPROGRESS)
			continue;
		if (ret < 0) {
			r->fail = ret;
			return 0;
		}
		r->bad += (uint32_t)ret != r->size || !perf_check(r->dst, r->size, r->got);
		r->got++;
		if (r->forget)
			rb2_bulk_rx_forget(r->b, r->dst, BULK_MAX);
	}
	return 0;
}

/* Send @n messages of @size from @bufs; @forget: each buffer's registration
 * dropped when it comes back. @return 0 or -errno. */
static int
send_round(struct rb2_bulk_tx *b, struct rb2_tx *tx, uint8_t **bufs, uint32_t size,
	   uint64_t n, int forget)
{
	int lent[BULK_BUFS] = {0}, out = 0;
	uint64_t seq = 0, deadline = rte_rdtsc() + ROUND_TIMEOUT_S * rte_get_tsc_hz();

	while (seq < n || out > 0) {
		if (rte_rdtsc() > deadline)
			return -ETIMEDOUT;   /* the receiver stopped taking them */
		struct rb2_bulk_done d[BULK_BUFS];
		int k = rb2_bulk_tx_done(b, d, BULK_BUFS);

		for (int i = 0; i < k; i++) {
			unsigned int j = (unsigned int)(d[i].cookie % BULK_BUFS);

			if (d[i].status != 0)
				return d[i].status;
			lent[j] = 0;
			out--;
			if (forget)
				rb2_bulk_tx_forget(b, bufs[j], BULK_MAX);
		}
		if (seq == n) {
			(void)rb2_tx_flush(tx);
			continue;
		}
		unsigned int j = (unsigned int)(seq % BULK_BUFS);
		if (lent[j]) {
			(void)rb2_tx_flush(tx);
			continue;
		}
		memcpy(bufs[j], &seq, 8);                /* the message's stamp */
		memcpy(bufs[j] + size - 8, &seq, 8);
		int ret = rb2_bulk_send(b, bufs[j], size, seq);
		if (ret == -EAGAIN) {
			(void)rb2_tx_flush(tx);
			continue;
		}
		if (ret < 0)
			return ret;
		lent[j] = ret == 1;
		out += ret == 1;
		seq++;
	}
	return rb2_tx_flush(tx);
}

int
perf_bulk_run(const struct perf_opts *o, json_t *doc)
{
	static const uint32_t sizes[BULK_SIZES] = {4096, 16384, 65536, 262144, 1u << 20, 4u << 20};
	struct rb2_xport *xp = rb2_xport_open_spec(o->transport);
	struct rb2_tx *tx[NV];
	struct rb2_rx *rx[NV];
	struct rb2_bulk_tx *btx[NV];
	struct rb2_bulk_rx *brx[NV];
	uint8_t *bufs[BULK_BUFS], *dst;
	static double gbps[BULK_SIZES][NV][PERF_MAX_ROUNDS], ratio[BULK_SIZES][PERF_MAX_ROUNDS];
	double med[BULK_SIZES][NV], med_ratio[BULK_SIZES], hz = (double)rte_get_tsc_hz();
	uint64_t bad = 0;
	int crossover = -1;

	if (xp == NULL) {
		fprintf(stderr, "rb2-perf: cannot open transport '%s': %s\n", o->transport,
			rte_strerror(rte_errno));
		return -1;
	}
	for (int v = 0; v < NV; v++) {
		struct rb2_chan_params p = o->chan;
		struct rb2_bulk_params bp;
		char name[16];

		/* Room for the largest message copied through the ring. */
		p.slot_size = 4096;
		p.slots = 4096;
		p.msg_size = 0;
		snprintf(name, sizeof(name), "bulk-%s", vname[v]);
		p.lcore_id = o->tx_lcore;
		tx[v] = rb2_tx_create(name, xp, &p);
		p.lcore_id = o->rx_lcore;
		rx[v] = rb2_rx_create(name, xp, &p);
		if (tx[v] == NULL || rx[v] == NULL || rb2_chan_pair(tx[v], rx[v]) != 0) {
			fprintf(stderr, "rb2-perf: cannot set up the %s channel: %s\n", vname[v],
				rte_strerror(rte_errno));
			return -1;
		}
		rb2_bulk_params_init(&bp);
		bp.inline_max = v == V_COPY ? UINT32_MAX : 0;
		btx[v] = rb2_bulk_tx_create(tx[v], &bp);
		brx[v] = rb2_bulk_rx_create(rx[v], NULL);
		if (btx[v] == NULL || brx[v] == NULL) {
			fprintf(stderr, "rb2-perf: cannot make the %s channel a bulk one: %s\n",
				vname[v], rte_strerror(rte_errno));
			return -1;
		}
		if (v != V_COPY && rb2_bulk_tx_cache(btx[v]) == NULL) {
			fprintf(stderr, "rb2-perf: --mode bulk lends application memory, which transport '%s' cannot (use verbs, or loop in one process)\n",
				o->transport);
			return -1;
		}
	}
	for (int i = 0; i < BULK_BUFS; i++) {
		bufs[i] = mmap(NULL, BULK_MAX, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (bufs[i] == MAP_FAILED)
			return -1;
		memset(bufs[i], 0x5a + i, BULK_MAX);   /* the application's data */
	}
	dst = mmap(NULL, BULK_MAX, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (dst == MAP_FAILED)
		return -1;
	memset(dst, 0, BULK_MAX);
	printf("rb2-perf bulk: %s; copy through the ring against lending (cached registration, and registration per message); %u MiB per size, variant and round; %u rounds, interleaved\n",
	       o->transport, BULK_ROUND_BYTES >> 20, o->rounds);
	for (unsigned int round = 0; round < o->rounds; round++) {
		for (int s = 0; s < BULK_SIZES; s++) {
			uint64_t n = RTE_MAX((uint64_t)BULK_ROUND_BYTES / sizes[s], (uint64_t)16);

			for (int k = 0; k < NV; k++) {
				int v = (int)(round + (unsigned int)k) % NV;
				struct bulk_round r = { .b = brx[v], .dst = dst, .size = sizes[s],
					.expect = n, .forget = v == V_LEND_REG };
				uint64_t t0;
				int ret;

				if (rb2_lcore_launch(receiver_main, &r, o->rx_lcore) != 0)
					return -1;
				t0 = rte_rdtsc();
				ret = send_round(btx[v], tx[v], bufs, sizes[s], n, v == V_LEND_REG);
				if (ret < 0)
					__atomic_store_n(&r.stop, 1, __ATOMIC_RELAXED);
				rb2_lcore_wait(o->rx_lcore);
				if (ret == 0)
					ret = r.fail;
				if (ret < 0) {
					fprintf(stderr, "rb2-perf: %s round %u at %u B failed: %s\n",
						vname[v], round, sizes[s], strerror(-ret));
					return -1;
				}
				bad += r.bad;
				gbps[s][v][round] = (double)n * sizes[s] /
					((double)(rte_rdtsc() - t0) / hz) / 1e9;
			}
			ratio[s][round] = gbps[s][V_LEND][round] / gbps[s][V_COPY][round];
		}
		printf("round %u done\n", round);
	}
	printf("\n%10s %10s %10s %10s %12s   (GB/s, median of %u rounds)\n", "size", "copy",
	       "lend", "lend-reg", "lend/copy", o->rounds);
	for (int s = 0; s < BULK_SIZES; s++) {
		for (int v = 0; v < NV; v++)
			med[s][v] = bench_median(gbps[s][v], o->rounds);
		med_ratio[s] = bench_median(ratio[s], o->rounds);
		/* The crossover: from here on, lending never loses. */
		if (med_ratio[s] >= 1.0 && crossover < 0)
			crossover = s;
		else if (med_ratio[s] < 1.0)
			crossover = -1;
		printf("%10u %10.3f %10.3f %10.3f %12.2f\n", sizes[s], med[s][V_COPY],
		       med[s][V_LEND], med[s][V_LEND_REG], med_ratio[s]);
	}
	struct rb2_mr_cache_stats cs;
	rb2_mr_cache_stats_get(rb2_bulk_tx_cache(btx[V_LEND]), &cs);
	if (crossover >= 0)
		printf("\ncrossover: lending is at least as fast as copying from %u B up (default inline_max %u B); sender cache %.1f%% hits; errors %" PRIu64 "\n",
		       sizes[crossover], RB2_BULK_INLINE_MAX_DEFAULT,
		       cs.gets ? 100.0 * (double)cs.hits / (double)cs.gets : 0.0, bad);
	else
		printf("\ncrossover: lending never caught up with copying up to %u B here; errors %" PRIu64 "\n",
		       sizes[BULK_SIZES - 1], bad);
	if (doc != NULL) {
		json_t *js = json_array();

		for (int k = 0; k < BULK_SIZES; k++)
			json_array_append_new(js, json_pack("{s:I, s:o, s:o, s:o, s:o}",
				"bytes", (json_int_t)sizes[k],
				"copy_gbps", bench_json_real(med[k][V_COPY]),
				"lend_gbps", bench_json_real(med[k][V_LEND]),
				"lend_reg_gbps", bench_json_real(med[k][V_LEND_REG]),
				"lend_over_copy", bench_json_real(med_ratio[k])));
		bench_json_merge(doc, json_pack("{s:I, s:I, s:I, s:I, s:o, s:o}",
			"round_bytes", (json_int_t)BULK_ROUND_BYTES, "errors", (json_int_t)bad,
			"crossover_bytes", (json_int_t)(crossover >= 0 ? sizes[crossover] : 0),
			"inline_max_default", (json_int_t)RB2_BULK_INLINE_MAX_DEFAULT,
			"sender_cache_hit_pct", bench_json_real(cs.gets ? 100.0 * (double)cs.hits /
								(double)cs.gets : 0.0),
			"sizes", js));
	}
	for (int v = 0; v < NV; v++) {
		rb2_bulk_tx_destroy(btx[v]);
		rb2_bulk_rx_destroy(brx[v]);
		rb2_tx_destroy(tx[v]);
		rb2_rx_destroy(rx[v]);
	}
	for (int i = 0; i < BULK_BUFS; i++)
		munmap(bufs[i], BULK_MAX);
	munmap(dst, BULK_MAX);
	rb2_xport_close(xp);
	return bad == 0 ? 0 : -1;
}
