/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* What every rb2 benchmark shares: see bench.h. */

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_opt.h"
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
bench_json_reals(const double *v, unsigned int n)
{
	json_t *r = json_array();

	for (unsigned int i = 0; i < n; i++)
		json_array_append_new(r, bench_json_real(v[i]));
	return r;
}

void
bench_json_merge(json_t *doc, json_t *more)
{
	if (doc != NULL && more != NULL)
		json_object_update(doc, more);
	json_decref(more);
}

json_t *
bench_json_rounds(const double *v, unsigned int n)
{
	return json_pack("{s:o, s:o}", "median", bench_json_real(bench_median(v, n)),
			 "rounds", bench_json_reals(v, n));
}

/* Six significant digits: what a rate measured here can claim. */
#define BENCH_JSON_FLAGS JSON_REAL_PRECISION(6)

static int
json_to_file(const json_t *doc, const char *path, const char *prog)
{
	FILE *f = fopen(path, "w");
	int ret = 0;

	if (f == NULL || json_dumpf(doc, f, BENCH_JSON_FLAGS) < 0 || fputc('\n', f) == EOF) {
		fprintf(stderr, "%s: --json %s: %s\n", prog, path, strerror(errno));
		ret = -1;
	}
	if (f != NULL && fclose(f) != 0 && ret == 0) {
		fprintf(stderr, "%s: --json %s: %s\n", prog, path, strerror(errno));
		ret = -1;
	}
	return ret;
}

int
bench_json_save(json_t *doc, const char *path, const char *prog)
{
	int ret;

	if (doc == NULL) {
		fprintf(stderr, "%s: cannot build the JSON summary (out of memory)\n", prog);
		return -1;
	}
	ret = json_to_file(doc, path, prog);
	json_decref(doc);
	return ret;
}

int
bench_json_emit(json_t *doc, const char *path, const char *prog)
{
	int ret = 0;

	if (doc == NULL) {
		fprintf(stderr, "%s: cannot build the JSON summary (out of memory)\n", prog);
		return -1;
	}
	if (json_dumpf(doc, stdout, BENCH_JSON_FLAGS) < 0 || fputc('\n', stdout) == EOF)
		ret = -1;
	fflush(stdout);
	if (path != NULL && json_to_file(doc, path, prog) < 0)
		ret = -1;
	json_decref(doc);
	return ret;
}

int
bench_rounds_run(const char *prog, unsigned int rounds, unsigned int variants,
		 bench_run_fn *run, void *ctx, double *figures)
{
	for (unsigned int r = 0; r < rounds; r++) {
		for (unsigned int v = 0; v < variants; v++) {
			double fig = NAN;

			if (run(ctx, v, r, &fig) < 0)
				return -1;
			figures[(size_t)v * rounds + r] = fig;
		}
		fprintf(stderr, "%s: round %u/%u done\n", prog, r + 1, rounds);
	}
	return 0;
}

/* ---- options as a table ------------------------------------------------ */

#define BENCH_HELP_COL 23   /* where an option's help starts */
#define BENCH_WIDTH 79

/* @text from column @col (the cursor at @at), wrapped at BENCH_WIDTH on
 * spaces, each further line indented to @col; "\n" breaks a line. */
static void
print_wrapped(FILE *f, const char *text, unsigned int col, unsigned int at)
{
	const char *p = text;

	while (*p != '\0') {
		size_t word = strcspn(p, " \n");

		if (at > col && at + 1 + word > BENCH_WIDTH) {
			fprintf(f, "\n%*s", (int)col, "");
			at = col;
		} else if (at > col) {
			fputc(' ', f);
			at++;
		}
		fwrite(p, 1, word, f);
		at += (unsigned int)word;
		p += word;
		if (*p == '\n') {
			fprintf(f, "\n%*s", (int)col, "");
			at = col;
			p++;
		}
		while (*p == ' ')
			p++;
	}
	fputc('\n', f);
}

void
bench_opts_usage(FILE *f, const char *prog, const char *synopsis, const struct bench_opt *t)
{
	fprintf(f, "usage: %s %s\n", prog, synopsis);
	for (; t->type != BENCH_END; t++) {
		int at;

		if (t->type == BENCH_TEXT) {
			fputc('\n', f);
			print_wrapped(f, t->help, 0, 0);
			continue;
		}
		at = fprintf(f, "  --%s%s%s", t->name, t->arg != NULL ? " " : "",
			     t->arg != NULL ? t->arg : "");
		if (at >= BENCH_HELP_COL - 1) {
			fputc('\n', f);
			at = 0;
		}
		fprintf(f, "%*s", BENCH_HELP_COL - at, "");
		print_wrapped(f, t->help != NULL ? t->help : "", BENCH_HELP_COL, BENCH_HELP_COL);
	}
}

static int
opt_value(const char *prog, const struct bench_opt *r, const char *arg)
{
	uint64_t v;
	double d;
	char *end;

	switch (r->type) {
	case BENCH_UINT:
	case BENCH_U64:
		if (app_parse_u64(arg, &v) < 0 || (double)v < r->min || (double)v > r->max) {
			fprintf(stderr, "%s: --%s %s: a whole number from %.0f to %.0f expected\n",
				prog, r->name, arg, r->min, r->max);
			return -1;
		}
		if (r->type == BENCH_UINT)
			*(unsigned int *)r->dst = (unsigned int)v;
		else
			*(uint64_t *)r->dst = v;
		return 0;
	case BENCH_REAL:
		errno = 0;
		d = strtod(arg, &end);
		if (errno != 0 || end == arg || *end != '\0' || !(d >= r->min && d <= r->max)) {
			fprintf(stderr, "%s: --%s %s: a number from %g to %g expected\n",
				prog, r->name, arg, r->min, r->max);
			return -1;
		}
		*(double *)r->dst = d;
		return 0;
	case BENCH_STR:
		*(const char **)r->dst = arg;
		return 0;
	case BENCH_CALL:
		return r->call(prog, arg, r->dst);
	case BENCH_FLAG:
		*(int *)r->dst = 1;
		return 0;
	default:
		return -1;
	}
}

struct option *
bench_opts_long(const struct bench_opt *t)
{
	unsigned int n = 0, k = 0;
	struct option *lo;

	while (t[n].type != BENCH_END)
		n++;
	lo = calloc(2 * n + 1, sizeof(*lo));
	if (lo == NULL)
		return NULL;
	/* getopt_long's val is the row's index: a row and its older name
	 * lead to the same row. */
	for (unsigned int i = 0; i < n; i++) {
		int has = t[i].type == BENCH_FLAG || t[i].type == BENCH_HELP ? no_argument :
			required_argument;

		if (t[i].type == BENCH_TEXT)
			continue;
		lo[k++] = (struct option){ t[i].name, has, NULL, 256 + (int)i };
		if (t[i].was != NULL)
			lo[k++] = (struct option){ t[i].was, has, NULL, 256 + (int)i };
	}
	return lo;
}

int
bench_opts_parse(const char *prog, const char *synopsis, struct bench_opt *t,
		 int argc, char **argv)
{
	struct option *lo = bench_opts_long(t);
	unsigned int n = 0;
	int c, idx, ret = 0;

	while (t[n].type != BENCH_END)
		n++;
	if (lo == NULL) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return -1;
	}
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", lo, &idx)) != -1) {
		const struct bench_opt *r;

		if (c == 'h') {
			bench_opts_usage(stdout, prog, synopsis, t);
			exit(EXIT_SUCCESS);
		}
		if (c < 256 || c >= 256 + (int)n) {
			fprintf(stderr, "%s: see --help\n", prog);
			ret = -1;
			break;
		}
		r = &t[c - 256];
		if (r->type == BENCH_HELP) {
			bench_opts_usage(stdout, prog, synopsis, t);
			exit(EXIT_SUCCESS);
		}
		if (r->was != NULL && strcmp(lo[idx].name, r->was) == 0)
			fprintf(stderr, "%s: --%s is now spelled --%s (as in every rb2 benchmark)\n",
				prog, r->was, r->name);
		if (opt_value(prog, r, optarg) < 0) {
			ret = -1;
			break;
		}
		t[c - 256].given = 1;
	}
	free(lo);
	if (ret == 0 && optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s' (options start with --; EAL args go "
			"before --; %s --help)\n", prog, argv[optind], prog);
		ret = -1;
	}
	return ret;
}

int
bench_parse_names(const char *prog, const char *opt, const char *arg,
		  const char *const *names, unsigned int n, unsigned int *mask)
{
	char list[256], *save = NULL;

	snprintf(list, sizeof(list), "%s", arg);
	*mask = 0;
	for (char *tok = strtok_r(list, ",", &save); tok != NULL;
	     tok = strtok_r(NULL, ",", &save)) {
		unsigned int i;

		for (i = 0; i < n && strcmp(tok, names[i]) != 0; i++)
			;
		if (i == n) {
			fprintf(stderr, "%s: --%s: '%s' is not ", prog, opt, tok);
			for (i = 0; i < n; i++)
				fprintf(stderr, "%s%s", names[i], i + 2 < n ? ", " :
					i + 1 < n ? " or " : "\n");
			return -1;
		}
		*mask |= 1u << i;
	}
	return 0;
}

int
bench_opt_given(const struct bench_opt *t, const char *name)
{
	for (; t->type != BENCH_END; t++)
		if (t->name != NULL && strcmp(t->name, name) == 0)
			return t->given;
	return 0;
}
