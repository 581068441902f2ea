/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * rb2-perf --mode ops: the cost of the channel's code, without the cost of
 * two cores talking. Both halves take turns on one lcore: reserve and commit
 * a burst, flush, then peek and release it all. Nothing spins, so under
 * callgrind the instructions per message are the same on every run, whatever
 * the machine does: the instrument for a before/after comparison of a
 * fast-path change on a machine whose timings swing 4x (usertools/
 * rb2-perf-ab.py --callgrind). It also reports cycles per message.
 *
 * One variant per --designs (default: rb2), each a fresh channel.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <rte_cycles.h>
#include <rte_errno.h>

#include <rb2_xport.h>

#include "perf.h"

/* The measured loop, a function of its own so that callgrind can count it
 * alone (--toggle-collect=perf_ops_loop). Returns the messages that failed
 * their check. */
uint64_t perf_ops_loop(struct rb2_tx *tx, struct rb2_rx *rx, uint32_t size,
		       unsigned int burst, uint64_t count);

__attribute__((noinline)) uint64_t
perf_ops_loop(struct rb2_tx *tx, struct rb2_rx *rx, uint32_t size, unsigned int burst,
	      uint64_t count)
{
	struct rb2_msg m[256];
	uint64_t sent = 0, got = 0, bad = 0;

	while (got < count) {
		unsigned int want = (unsigned int)RTE_MIN((uint64_t)burst, count - sent);
		void *first;
		int k = want > 0 ? rb2_tx_reserve_burst(tx, size, want, &first) : 0;

		if (k > 0) {
			size_t stride = rb2_tx_stride(tx, size);

			for (int i = 0; i < k; i++)
				perf_fill((uint8_t *)first + (size_t)i * stride, size, sent + (uint64_t)i);
			rb2_tx_commit_burst(tx, size, (unsigned int)k);
			sent += (uint64_t)k;
		} else if (k < 0 && k != -ENOBUFS) {
			return count - got;
		}
		if (rb2_tx_flush(tx) < 0)
			return count - got;
		for (;;) {
			int n = rb2_rx_peek_burst(rx, m, burst);

			if (n <= 0)
				break;
			for (int i = 0; i < n; i++)
				bad += !perf_check(m[i].data, size, got + (uint64_t)i);
			rb2_rx_release_burst(rx, m, (unsigned int)n);
			got += (uint64_t)n;
		}
	}
	return bad;
}

int
perf_ops_run(const struct perf_opts *o, json_t *doc)
{
	unsigned int nv = o->npresets > 0 ? o->npresets : 1;
	json_t *vs = json_array();
	int ret = 0;

	printf("%-22s %12s %14s\n", "variant (one lcore)", "messages", "cycles/msg");
	for (unsigned int v = 0; v < nv; v++) {
		const char *preset = o->npresets > 0 ? o->presets[v] : "as given";
		struct rb2_chan_params p = o->chan;
		struct rb2_xport *xp;
		struct rb2_tx *tx;
		struct rb2_rx *rx;
		uint64_t t0, cyc, bad;
		char chan[RB2_CHAN_NAMESIZE], why[256];

		if (o->npresets > 0 && perf_apply_preset(&p, preset, o) != 0)
			return -1;
		if (rb2_chan_params_check(&p, why, sizeof(why)) != 0) {
			fprintf(stderr, "rb2-perf: preset %s: %s\n", preset, why);
			return -1;
		}
		snprintf(chan, sizeof(chan), "ops%u", v);
		xp = rb2_xport_open_spec(o->transport);
		p.lcore_id = rte_lcore_id();
		tx = xp != NULL ? rb2_tx_create(chan, xp, &p) : NULL;
		rx = xp != NULL ? rb2_rx_create(chan, xp, &p) : NULL;
		if (tx == NULL || rx == NULL || rb2_chan_pair(tx, rx) != 0) {
			fprintf(stderr, "rb2-perf: cannot set up channel '%s' on %s: %s\n", chan,
				o->transport, rte_strerror(rte_errno));
			return -1;
		}
		t0 = rte_rdtsc();
		bad = perf_ops_loop(tx, rx, o->size, o->burst, o->count);
		cyc = rte_rdtsc() - t0;
		printf("%-22s %12" PRIu64 " %14.1f%s\n", preset, o->count,
		       (double)cyc / (double)o->count, bad ? "  ERRORS" : "");
		json_array_append_new(vs, json_pack("{s:s, s:I, s:o, s:I}", "name", preset,
			"messages", (json_int_t)o->count,
			"cycles_per_msg", bench_json_real((double)cyc / (double)o->count),
			"errors", (json_int_t)bad));
		if (bad != 0) {
			fprintf(stderr, "rb2-perf: %s: %" PRIu64 " messages lost or corrupt\n",
				preset, bad);
			ret = -1;
		}
		rb2_tx_destroy(tx);
		rb2_rx_destroy(rx);
		rb2_xport_close(xp);
	}
	bench_json_merge(doc, json_pack("{s:o}", "variants", vs));
	return ret;
}
