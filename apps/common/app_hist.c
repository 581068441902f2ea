/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* Latency histograms and the clock of the case-study apps (app_hist.h). */

#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_cycles.h>

#include "app_hist.h"

static inline unsigned int
hist_idx(uint64_t v)
{
	unsigned int e;

	if (v < 64)
		return (unsigned int)v;
	e = 63u - (unsigned int)__builtin_clzll(v);     /* >= 6 */
	if (e > 41)
		return APP_HIST_BUCKETS - 1;
	return 64 + (e - 6) * 32 + (unsigned int)((v >> (e - 5)) & 31);
}

static inline uint64_t
hist_value(unsigned int i)       /* the bucket's lower bound */
{
	unsigned int e;

	if (i < 64)
		return i;
	e = (i - 64) / 32 + 6;
	return (1ull << e) + ((uint64_t)((i - 64) % 32) << (e - 5));
}

void
app_hist_add(struct app_hist *h, uint64_t ns)
{
	if (h->n == 0 || ns < h->min_ns)
		h->min_ns = ns;
	if (ns > h->max_ns)
		h->max_ns = ns;
	h->n++;
	h->sum_ns += ns;
	h->b[hist_idx(ns)]++;
}

void
app_hist_merge(struct app_hist *to, const struct app_hist *from)
{
	if (from->n == 0)
		return;
	if (to->n == 0 || from->min_ns < to->min_ns)
		to->min_ns = from->min_ns;
	to->max_ns = RTE_MAX(to->max_ns, from->max_ns);
	to->n += from->n;
	to->sum_ns += from->sum_ns;
	for (unsigned int i = 0; i < APP_HIST_BUCKETS; i++)
		to->b[i] += from->b[i];
}

uint64_t
app_hist_quantile(const struct app_hist *h, double q)
{
	uint64_t want = (uint64_t)(q * (double)h->n), seen = 0;

	for (unsigned int i = 0; i < APP_HIST_BUCKETS; i++) {
		seen += h->b[i];
		if (seen > want)
			return RTE_MIN(hist_value(i), h->max_ns);
	}
	return h->max_ns;
}

uint64_t
app_now_ns(void)
{
	static double ns_per_cycle;

	if (ns_per_cycle == 0)
		ns_per_cycle = 1e9 / (double)rte_get_tsc_hz();
	return (uint64_t)((double)rte_rdtsc() * ns_per_cycle);
}

