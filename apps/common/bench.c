/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* What every rb2 benchmark shares: see bench.h. */

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* Rounds a benchmark runs at most (every one here asks for far fewer). */
#define BENCH_MAX_ROUNDS 1024

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double
bench_median(const double *v, unsigned int n)
{
	double t[BENCH_MAX_ROUNDS];

	if (n == 0)
		return 0;
	if (n > BENCH_MAX_ROUNDS)
		n = BENCH_MAX_ROUNDS;
	memcpy(t, v, n * sizeof(*t));
	qsort(t, n, sizeof(*t), cmp_double);
	return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

double
bench_median_ratio(const double *x, const double *y, unsigned int n)
{
	double r[BENCH_MAX_ROUNDS];
	unsigned int k = 0;

	for (unsigned int i = 0; i < n && k < BENCH_MAX_ROUNDS; i++)
		if (y[i] > 0)
			r[k++] = x[i] / y[i];
	return bench_median(r, k);
}

double
bench_percentile(const uint64_t *sorted, uint64_t n, double pct)
{
	uint64_t i = (uint64_t)(pct / 100.0 * (double)n);

	if (n == 0)
		return 0;
	return (double)sorted[i >= n ? n - 1 : i];
}

json_t *
bench_json_real(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

json_t *
bench_json_rounds(const double *v, unsigned int n)
{
	json_t *r = json_array();

	for (unsigned int i = 0; i < n; i++)
		json_array_append_new(r, bench_json_real(v[i]));
	return json_pack("{s:o, s:o}", "median", bench_json_real(bench_median(v, n)),
			 "rounds", r);
}

int
bench_json_emit(json_t *doc, const char *path, const char *prog)
{
	/* Six significant digits: what a rate measured here can claim. */
	size_t flags = JSON_REAL_PRECISION(6);
	int ret = 0;

	if (doc == NULL) {
		fprintf(stderr, "%s: cannot build the JSON summary (out of memory)\n", prog);
		return -1;
	}
	if (json_dumpf(doc, stdout, flags) < 0 || fputc('\n', stdout) == EOF)
		ret = -1;
	fflush(stdout);
	if (path != NULL) {
		FILE *f = fopen(path, "w");

		if (f == NULL || json_dumpf(doc, f, flags) < 0 || fputc('\n', f) == EOF) {
			fprintf(stderr, "%s: --json %s: %s\n", prog, path, strerror(errno));
			ret = -1;
		}
		if (f != NULL && fclose(f) != 0 && ret == 0) {
			fprintf(stderr, "%s: --json %s: %s\n", prog, path, strerror(errno));
			ret = -1;
		}
	}
	json_decref(doc);
	return ret;
}
