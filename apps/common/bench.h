/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_BENCH_H
#define RB2_BENCH_H

/*
 * What every rb2 benchmark shares (rb2-perf, rb2-connperf, rb2-raasbench,
 * rb2-kv bench, rb2-http bench): the statistics of interleaved rounds and
 * JSON values that are always JSON.
 *
 * This machine's vCPUs move between near and far host cores, so absolute
 * rates swing 4x within a minute: only figures from rounds interleaved in
 * one run compare. A benchmark runs every variant once per round, and
 * reports each variant's median over rounds, and a variant against another
 * as the median of the per-round ratios (the two measured close in time),
 * not as the ratio of the medians.
 */

#include <stdint.h>

#include <jansson.h>

/* The median of @n values (not reordered); 0 for none. */
double bench_median(const double *v, unsigned int n);

/* The median over rounds i of x[i] / y[i], the rounds where y[i] > 0; 0 if
 * there is none. */
double bench_median_ratio(const double *x, const double *y, unsigned int n);

/* The @pct percentile (0..100) of @n sorted values: the value at rank
 * pct/100 * n, the last one at most. */
double bench_percentile(const uint64_t *sorted, uint64_t n, double pct);

/* A JSON number, or null where @v is not finite (NaN, infinity): JSON has
 * neither, and a division by a zero count must not make the file unreadable. */
json_t *bench_json_real(double v);

/* {"median": m, "rounds": [v0, v1, ...]} for @n rounds. */
json_t *bench_json_rounds(const double *v, unsigned int n);

/* Write @doc (taken) as one line on stdout, and, if @path is not NULL, to
 * that file too. 0, or -1 after saying why (as @prog). */
int bench_json_emit(json_t *doc, const char *path, const char *prog);

#endif /* RB2_BENCH_H */
