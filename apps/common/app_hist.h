/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef APP_HIST_H
#define APP_HIST_H

/* Latency for the case-study apps (rb2-kv, rb2-http): a histogram exact
 * below 64 ns, then 32 buckets per power of two (3 % wide), up to 2^41 ns;
 * and a cheap nanosecond clock. */

#include <stdint.h>

#define APP_HIST_BUCKETS (64 + 36 * 32)

struct app_hist {
	uint64_t n, sum_ns, max_ns, min_ns;
	uint64_t b[APP_HIST_BUCKETS];
};

void app_hist_add(struct app_hist *h, uint64_t ns);
void app_hist_merge(struct app_hist *to, const struct app_hist *from);
/* The value below which a fraction @p q of the samples lie (ns). */
uint64_t app_hist_quantile(const struct app_hist *h, double q);

/* Nanoseconds from the TSC (rte_rdtsc). */
uint64_t app_now_ns(void);

#endif /* APP_HIST_H */
