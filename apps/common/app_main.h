/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef APP_MAIN_H
#define APP_MAIN_H

/*
 * The commands the case-study apps share:
 *  - serve: a protocol's server on every EAL lcore, over rb2 (joining
 *    rb2-raasd; lcore i on port P+i) and TCP (all lcores on one port),
 *    until SIGINT or SIGTERM;
 *  - bench: the same server on one worker lcore and the app's client on
 *    the main lcore, in one process, with the link between them each of
 *    the paper's ring designs in turn, or TCP loopback.
 */

#include <jansson.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>

#include <rb2_xport.h>

#include "app_server.h"

/* An app's command line: [EAL args] -- server|client|bench [options]. */
struct app_cli {
	const char *app;                         /* "rb2-kv" */
	void (*usage)(FILE *f);
	const struct option *options;            /* every command's long options */
	int (*parse)(int argc, char **argv, void *opts);   /* -1: printed why */
	int (*run[3])(void *opts);               /* server, client, bench */
	void *opts;
};

/* EAL, the command and its options, the command: @return main()'s
 * status (2: a usage error). */
int app_cli_main(const struct app_cli *cli, int argc, char **argv);

struct app_serve_opts {
	const struct app_proto *proto;
	void **ctx;              /* by lcore id: each lcore's protocol context */
	const char *app;         /* for messages and service names */
	uint16_t port;           /* first rb2 port */
	const char *tcp;         /* IP:PORT, or NULL */
	int no_rb2;
};

/* Serve until SIGINT or SIGTERM, or until the service is gone (an rb2
 * server: then it stops, TCP too, since a secondary cannot join a restarted
 * service). @return 0 (stopped by a signal), 1 (the service is gone), or -1
 * (could not start; printed why). */
int app_serve(const struct app_serve_opts *o);

/* Sum of every serving lcore's counters (for telemetry). */
void app_serve_stats(struct app_server_stats *sum);

#define APP_BENCH_MAX_DESIGNS 12

/* One link under test: for ring designs over channels the client's
 * endpoint (its peer is served), for "l5" (L5's own rings) its @p conns
 * connections, for "tcp" the server's address. */
struct app_bench_link {
	const char *design;
	struct rb2_conn_ep *ep;
	struct app_l5_conn *l5;  /* "l5": n_l5 connections */
	unsigned int n_l5;
	char tcp[32];
};

/*
 * Set up every design's link, served by @p proto with @p ctx on the first
 * worker lcore (rb2 port 1; "l5": @p conns connections, the client's halves
 * on this lcore), and start serving. A design is "tcp", "l5" (L5's own
 * ring, lib/baseline/rb2_l5.h), "l5-chan" (an RB² channel set up as L5) or
 * another channel preset.
 * @return 0, or -1 (printed why).
 */
int app_bench_start(const struct app_proto *proto, void *ctx, const char *transport,
		    const char *const *designs, unsigned int n, unsigned int conns,
		    struct app_bench_link *links);
/* Serve link @p d (the others idle); its WR count starts here. */
void app_bench_select(unsigned int d);
/* Link @p d, selected last, has run a measured round of @p ops operations:
 * add the WRs posted since its selection to its count (printed per
 * operation by app_bench_print()). */
void app_bench_measured(unsigned int d, uint64_t ops);
/* Stop serving; free the servers and every link's endpoints (the clients
 * on them are closed first, by the caller). */
void app_bench_stop(struct app_bench_link *links, unsigned int n);

/*
 * Complete a bench's JSON object @p doc (the caller's parameters, taken)
 * and print it (bench_json_emit()): each design's median rate (@p unit),
 * p50 and p99 (µs), its rate in every round and (a ring design's) WRs and
 * signaled WRs per operation over the measured rounds, both ways; then the
 * first design's rate over each other's, the median of per-round ratios
 * (rates here swing between rounds, not within one). 0, or -1.
 */
int app_bench_print(json_t *doc, const char *const *designs, unsigned int n,
		    unsigned int rounds, const char *unit, double rate[][64], double p50[][64],
		    double p99[][64]);

/* Parse a comma-separated design list into @p designs (default when
 * @p list is NULL: rb2,l5,farm,socksdirect,tcp). @return the count, or -1. */
int app_bench_designs(const char *list, const char **designs);

#endif /* APP_MAIN_H */
