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

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>

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

/* [v0, v1, ...]: @n numbers (null for one that is not finite). */
json_t *bench_json_reals(const double *v, unsigned int n);

/* Every member of @more (taken) set in @doc; @doc's own of those names are
 * replaced. */
void bench_json_merge(json_t *doc, json_t *more);

/* {"median": m, "rounds": [v0, v1, ...]} for @n rounds. */
json_t *bench_json_rounds(const double *v, unsigned int n);

/* Write @doc (taken) as one line to the file @path. 0, or -1 after saying
 * why (as @prog). */
int bench_json_save(json_t *doc, const char *path, const char *prog);

/* Write @doc (taken) as one line on stdout, and, if @path is not NULL, to
 * that file too. 0, or -1 after saying why (as @prog). */
int bench_json_emit(json_t *doc, const char *path, const char *prog);

/* One variant's run in one round: its figure in *@figure; 0, or -1 after
 * saying why. */
typedef int bench_run_fn(void *ctx, unsigned int variant, unsigned int round, double *figure);

/*
 * The interleaved rounds every benchmark runs: in each of @rounds rounds,
 * variant 0, 1, ... @variants - 1 run in turn, so that every variant's
 * rounds sit close in time to the others' and a per-round ratio compares
 * like with like. Figures land in @figures[variant * @rounds + round]. After
 * each round "PROG: round r/R done" goes to stderr (a long run shows it is
 * alive). 0, or -1 at the first run that failed.
 */
int bench_rounds_run(const char *prog, unsigned int rounds, unsigned int variants,
		     bench_run_fn *run, void *ctx, double *figures);

/*
 * Options as a table. Every benchmark spells what they share one way:
 *
 *   --transport SPEC   the transport and its arguments (rb2_xport.h)
 *   --size BYTES       the message size
 *   --rounds R         interleaved rounds
 *   --seconds S        measured time per round and variant
 *   --designs LIST     the variants compared in each round
 *   --json FILE        every figure, as one JSON document
 *
 * and describes every option, these and its own, in one array of struct
 * bench_opt, from which both getopt_long's array and --help are made: an
 * option's name, range, destination and help sit in one row, so they cannot
 * drift apart. An older spelling (the row's @was) is still accepted, with a
 * one-line notice naming the new one.
 */
enum bench_opt_type {
	BENCH_END,      /* ends the table */
	BENCH_TEXT,     /* not an option: a paragraph of --help (@help) */
	BENCH_FLAG,     /* no argument: *(int *)dst = 1 */
	BENCH_UINT,     /* *(unsigned int *)dst, @min..@max; k, M, G suffixes */
	BENCH_U64,      /* *(uint64_t *)dst, @min..@max; k, M, G suffixes */
	BENCH_REAL,     /* *(double *)dst, @min..@max */
	BENCH_STR,      /* *(const char **)dst = the argument */
	BENCH_CALL,     /* @call(prog, argument, dst): 0, or -1 after saying why */
	BENCH_HELP,     /* --help: the usage on stdout, then exit(0) */
};

struct bench_opt {
	const char *name;          /* without "--" */
	enum bench_opt_type type;
	void *dst;
	double min, max;           /* BENCH_UINT, BENCH_U64, BENCH_REAL */
	int (*call)(const char *prog, const char *arg, void *dst);
	const char *arg;           /* its argument in --help: "N", "SEC" */
	const char *help;          /* one paragraph, wrapped to 80 columns; "\n"
				    * breaks a line */
	const char *was;           /* an older name, still accepted, or NULL */
	int given;                 /* set by bench_opts_parse() */
};

/* The usage: "usage: PROG SYNOPSIS", then every row of @t. */
void bench_opts_usage(FILE *f, const char *prog, const char *synopsis,
		      const struct bench_opt *t);

/* getopt_long()'s array for @t (every row's name and older name; what
 * rb2_app_run() is told), malloc()ed; NULL without memory. */
struct option *bench_opts_long(const struct bench_opt *t);

/* Parse @argc/@argv (argv[0] the program; getopt_long from optind = 1) into
 * the rows' destinations, setting each given row's @given. No positional
 * argument is taken. --help prints the usage and exits. 0, or -1 after
 * saying why (as @prog). */
int bench_opts_parse(const char *prog, const char *synopsis, struct bench_opt *t,
		     int argc, char **argv);

/* "a,b,c" of @names[0..@n-1] into a bit per name in *@mask, for a
 * BENCH_CALL row's parser. 0, or -1 after naming the option (--@opt), the
 * unknown name and the known ones (as @prog). */
int bench_parse_names(const char *prog, const char *opt, const char *arg,
		      const char *const *names, unsigned int n, unsigned int *mask);

/* Whether the option @name of @t was given (after bench_opts_parse()). */
int bench_opt_given(const struct bench_opt *t, const char *name);

#endif /* RB2_BENCH_H */
