/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * rb2-kv: a key-value store over rb2 connections and TCP, and a YCSB
 * client (the RB² paper's §V-C case study, Fig. 9).
 *
 *   rb2-kv [EAL] -- server [--port P] [--tcp IP:PORT] ...   as rb2-raasd's secondary
 *   rb2-kv [EAL] -- client [--host H] [--port P] | [--tcp IP:PORT] --workload c ...
 *   rb2-kv [EAL -l 0-1] -- bench --designs rb2,l5,farm,socksdirect,tcp
 */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_telemetry.h>

#include <rb2_conn.h>
#include <rb2_conn_service.h>
#include <rb2_lcore.h>
#include <rb2_xport.h>

#include "app_hist.h"
#include "app_main.h"
#include "app_tel.h"
#include "app_net.h"
#include "bench.h"
#include "kv_client.h"
#include "kv_proto.h"
#include "kv_server.h"
#include "kv_store.h"

struct opts {
	/* server */
	uint16_t port;
	const char *tcp;
	int no_rb2;
	uint32_t capacity, key_max, value_max;
	const char *name;
	/* client */
	uint32_t host;
	unsigned int ports;
	char workload;
	int dist_set;
	enum ycsb_dist dist;
	uint64_t records, operations;
	uint32_t value_size;
	unsigned int conns, depth;
	int load, run;
	uint64_t key_space, seed;
	const char *json;
	int quiet;
	/* bench */
	const char *designs[APP_BENCH_MAX_DESIGNS];
	unsigned int n_designs;
	unsigned int rounds;
	const char *transport;
};

static struct opts kvo = {
	.port = 11211, .key_max = 15, .value_max = 1024, .ports = 1, .workload = 'c',
	.records = 100000, .operations = 3000000, .value_size = 120, .conns = 1, .depth = 1,
	.load = 1, .run = 1, .seed = 1, .rounds = 3, .transport = "shm",
};
static unsigned int opt_port = 11211;  /* kvo.port is 16 bits */
static const char *opt_designs;

static int
parse_workload(const char *prog, const char *arg, void *dst)
{
	if (arg[0] == '\0' || arg[1] != '\0' || strchr("abcdf", arg[0]) == NULL) {
		fprintf(stderr, "%s: --workload %s: a, b, c, d or f (YCSB's)\n", prog, arg);
		return -1;
	}
	*(char *)dst = arg[0];
	return 0;
}

static int
parse_distribution(const char *prog, const char *arg, void *dst)
{
	if (ycsb_dist_parse(arg, dst) < 0) {
		fprintf(stderr, "%s: --distribution %s: zipfian, uniform or latest\n", prog, arg);
		return -1;
	}
	kvo.dist_set = 1;
	return 0;
}

static int
parse_phase(const char *prog, const char *arg, void *dst)
{
	struct opts *o = dst;

	if (strcmp(arg, "run") != 0 && strcmp(arg, "load") != 0 && strcmp(arg, "both") != 0) {
		fprintf(stderr, "%s: --phase %s: load, run or both\n", prog, arg);
		return -1;
	}
	o->load = strcmp(arg, "run") != 0;
	o->run = strcmp(arg, "load") != 0;
	return 0;
}

#define SYNOPSIS "[EAL args] -- server|client|bench [options]"

/* Every option of the three commands: range, destination and help (bench.h). */
static struct bench_opt table[] = {
	{ .type = BENCH_TEXT, .help = "A key-value store (DPDK's rte_hash) served over rb2 "
	  "connections and TCP, and YCSB's workloads as a client, checking every value it "
	  "reads." },
	{ .type = BENCH_TEXT, .help = "server: every EAL lcore serves; over rb2 it joins "
	  "rb2-raasd (start this as its secondary: --proc-type=secondary --file-prefix <the "
	  "service's>), lcore i on rb2 port P+i; over TCP all lcores share --tcp's port "
	  "(memcached's text protocol, or rb2-kv's binary one). Runs until SIGINT or SIGTERM." },
	{ "port", BENCH_UINT, &opt_port, 1, 65535, .arg = "P",
	  .help = "first rb2 port (default 11211)" },
	{ "tcp", BENCH_STR, &kvo.tcp, .arg = "IP:PORT",
	  .help = "server: also serve TCP there (e.g. 127.0.0.1:11211); client: over TCP "
	  "instead (the binary protocol)" },
	{ "no-rb2", BENCH_FLAG, &kvo.no_rb2,
	  .help = "TCP only, no service (then this is an EAL primary)" },
	{ "records", BENCH_U64, &kvo.records, 2, 1u << 31, .arg = "N",
	  .help = "server: keys the table holds; client: recordcount (default 100000)" },
	{ "key-max", BENCH_UINT, &kvo.key_max, 1, KV_KEY_MAX, .arg = "B",
	  .help = "longest key (default 15; memcached clients need up to 250)" },
	{ "value-max", BENCH_UINT, &kvo.value_max, 1, KV_VALUE_MAX, .arg = "B",
	  .help = "largest value (default 1024, at most 65535)" },
	{ "name", BENCH_STR, &kvo.name, .arg = "NAME",
	  .help = "application name at the service (default kv-<pid>)" },
	{ .type = BENCH_TEXT, .help = "client: every EAL lcore runs a closed loop over its "
	  "connections. Prints YCSB's output format; exits 1 if any value read was wrong or "
	  "any operation failed." },
	{ "host", BENCH_UINT, &kvo.host, 0, UINT32_MAX, .arg = "H",
	  .help = "the server's host id at the service (default 0: this host)" },
	{ "ports", BENCH_UINT, &kvo.ports, 1, 1024, .arg = "N",
	  .help = "connections spread over ports P..P+N-1 (default 1)" },
	{ "workload", BENCH_CALL, &kvo.workload, .call = parse_workload, .arg = "W",
	  .help = "YCSB workload a, b, c, d or f (default c)" },
	{ "distribution", BENCH_CALL, &kvo.dist, .call = parse_distribution, .arg = "D",
	  .help = "zipfian, uniform or latest (default: the workload's)" },
	{ "operations", BENCH_U64, &kvo.operations, 1, (double)(UINT64_MAX >> 1), .arg = "N",
	  .help = "operationcount, all lcores together (default 3000000); bench: per design "
	  "and round" },
	{ "value-size", BENCH_UINT, &kvo.value_size, KV_VALUE_MIN, KV_VALUE_MAX, .arg = "B",
	  .help = "bytes per value (default 120: 128-byte answers; a value carries its "
	  "version and checksum)" },
	{ "conns", BENCH_UINT, &kvo.conns, 1, 4096, .arg = "N",
	  .help = "connections per lcore (default 1)" },
	{ "depth", BENCH_UINT, &kvo.depth, 1, 4096, .arg = "D",
	  .help = "requests outstanding per connection (default 1)" },
	{ "phase", BENCH_CALL, &kvo, .call = parse_phase, .arg = "load|run|both",
	  .help = "(default both)" },
	{ "key-space", BENCH_U64, &kvo.key_space, 0, (1u << 23) - 1, .arg = "K",
	  .help = "clients with different K never share a key (default 0)" },
	{ "seed", BENCH_U64, &kvo.seed, 0, (double)UINT64_MAX, .arg = "S",
	  .help = "(default 1)" },
	{ "json", BENCH_STR, &kvo.json, .arg = "FILE",
	  .help = "also write the results as JSON ('-': stdout)" },
	{ "quiet", BENCH_FLAG, &kvo.quiet, .help = "no progress lines" },
	{ .type = BENCH_TEXT, .help = "bench: server and client in one process (EAL -l 0-1: "
	  "client on the main lcore, server on the next), the same table, each design in "
	  "interleaved rounds; prints one JSON object. Takes the client's workload options "
	  "too." },
	{ "designs", BENCH_STR, &opt_designs, .arg = "LIST",
	  .help = "the channel's design, as in rb2_chan_params_preset() ("
	  RB2_CHAN_PRESET_NAMES "), but l5 is L5's own ring (a pair per connection; l5-chan: "
	  "the channel set up as L5), or tcp (the same server over TCP loopback); ratios are "
	  "the first's over each (default rb2,l5,farm,socksdirect,tcp)" },
	{ "rounds", BENCH_UINT, &kvo.rounds, 1, 64, .arg = "R", .help = "(default 3)" },
	{ "transport", BENCH_STR, &kvo.transport, .arg = "SPEC",
	  .help = "the channels' transport (default shm)" },
	{ "help", BENCH_HELP, .help = "this text" },
	{ .type = BENCH_END },
};

static void
usage(FILE *f)
{
	bench_opts_usage(f, "rb2-kv", SYNOPSIS, table);
}

static int
parse(int argc, char **argv, void *arg)
{
	struct opts *o = arg;
	int n;

	if (bench_opts_parse("rb2-kv", SYNOPSIS, table, argc, argv) < 0)
		return -1;
	kvo.port = (uint16_t)opt_port;
	n = app_bench_designs(opt_designs, kvo.designs);
	if (n < 0)
		return -1;
	kvo.n_designs = (unsigned int)n;
	*o = kvo;
	return 0;
}

/* ---- server --------------------------------------------------------- */

static struct kv_store *server_store;
static struct kv_serve_ctx server_ctx[RTE_MAX_LCORE];

static void
tel_stats(struct app_tel_dict *d)
{
	struct kv_store_stats st;
	struct app_server_stats a;
	uint64_t bad = 0;
	unsigned int id;

	kv_store_stats_get(server_store, &st);
	app_serve_stats(&a);
	RTE_LCORE_FOREACH(id)
		bad += __atomic_load_n(&server_ctx[id].bad_requests, __ATOMIC_RELAXED);
	app_tel_add(d, "keys", st.keys);
	app_tel_add(d, "gets", st.gets);
	app_tel_add(d, "hits", st.hits);
	app_tel_add(d, "misses", st.misses);
	app_tel_add(d, "puts", st.puts);
	app_tel_add(d, "dels", st.dels);
	app_tel_add(d, "too_large", st.too_large);
	app_tel_add(d, "key_too_long", st.key_too_long);
	app_tel_add(d, "table_full", st.full);
	app_tel_add(d, "requests", a.requests);
	app_tel_add(d, "bad_requests", bad);
	app_tel_add(d, "closed_by_protocol", a.closed_by_protocol);
	app_tel_add(d, "conns_accepted", a.conns_accepted);
	app_tel_add(d, "conns_closed", a.conns_closed);
	app_tel_add(d, "conns_failed", a.conns_failed);
	app_tel_add(d, "tcp_refused", a.tcp_refused);
	app_tel_add(d, "answer_waits", a.waits);
}

static struct kv_store *
make_store(const struct opts *o, const char *name)
{
	struct kv_store_params sp = {
		.name = name, .capacity = o->capacity, .key_max = o->key_max,
		.value_max = o->value_max, .socket = (int)rte_socket_id(),
	};
	struct kv_store *s = kv_store_create(&sp);

	if (s == NULL)
		fprintf(stderr, "rb2-kv: the table: %s (the log above says why)\n",
			rte_strerror(rte_errno));
	return s;
}

static int
run_server(void *arg)
{
	struct opts *o = arg;
	void *ctx[RTE_MAX_LCORE];
	struct app_serve_opts so = {
		.proto = &kv_proto, .ctx = ctx, .app = "rb2-kv", .port = o->port,
		.tcp = o->tcp, .no_rb2 = o->no_rb2,
	};
	struct kv_store_stats st;
	unsigned int id;
	int ret;

	o->capacity = (uint32_t)o->records;
	server_store = make_store(o, "rb2_kv");
	if (server_store == NULL)
		return 1;
	RTE_LCORE_FOREACH(id) {
		server_ctx[id].store = server_store;
		ctx[id] = &server_ctx[id];
	}
	app_tel_register("rb2-kv", "/rb2/kv/stats", tel_stats,
			 "The table's and the server's counters. No parameters");
	ret = app_serve(&so);
	app_tel_close();
	kv_store_stats_get(server_store, &st);
	if (ret >= 0)
		printf("rb2-kv: stopped: %" PRIu64 " keys, %" PRIu64 " gets (%" PRIu64 " hits), %"
		       PRIu64 " puts, %" PRIu64 " deletes, %" PRIu64 " writes refused (table "
		       "full)\n", st.keys, st.gets, st.hits, st.puts, st.dels, st.full);
	kv_store_free(server_store);
	return ret < 0 ? 1 : ret;
}

/* ---- client --------------------------------------------------------- */

struct cli {
	struct kv_shared sh;
	struct kv_client *c[RTE_MAX_LCORE];
	struct kv_result res[RTE_MAX_LCORE];
	int ret[RTE_MAX_LCORE];
	enum kv_phase phase;
	uint64_t ops_per_lcore[RTE_MAX_LCORE];
	struct rb2_conn_ep *ep[RTE_MAX_LCORE];
	unsigned int n_lcores;
};

/* Destroy an endpoint once its closed connections' last frames are out
 * (or after a second): the server then sees each end of stream, not a
 * reset. */
static void
close_ep(struct rb2_conn_ep *ep)
{
	uint64_t deadline = app_now_ns() + 1000000000ull;
	struct rb2_conn_ep_stats st;

	if (ep == NULL)
		return;
	do {
		if (rb2_conn_ep_poll(ep) < 0)
			break;
		rb2_conn_ep_stats_get(ep, &st);
	} while (st.conns_open > 0 && app_now_ns() < deadline);
	rb2_conn_ep_destroy(ep);
}

static struct cli C;

static int
client_lcore(void *arg __rte_unused)
{
	unsigned int id = rte_lcore_id();

	C.ret[id] = kv_client_run(C.c[id], C.phase, C.ops_per_lcore[id], C.n_lcores, &C.res[id]);
	return 0;
}

static int
shared_init(struct kv_shared *sh, const struct opts *o)
{
	if (ycsb_workload(o->workload, &sh->w) < 0) {
		fprintf(stderr, "rb2-kv: --workload %c: a, b, c, d or f (E is scans: a hash "
			"table has no order)\n", o->workload);
		return -1;
	}
	if (o->dist_set)
		sh->w.dist = o->dist;
	sh->records = o->records;
	sh->operations = o->operations;
	sh->value_size = o->value_size;
	sh->conns = o->conns;
	sh->depth = o->depth;
	sh->ports = o->ports;
	sh->port = o->port;
	sh->key_space = o->key_space;
	sh->seed = o->seed;
	sh->quiet = o->quiet;
	sh->tracked = o->records + (sh->w.proportion[YCSB_INSERT] > 0 ? o->operations : 0);
	sh->issued = calloc(sh->tracked, sizeof(uint64_t));
	sh->acked = calloc(sh->tracked, sizeof(uint64_t));
	sh->writing = calloc(sh->tracked, 1);
	if (sh->issued == NULL || sh->acked == NULL || sh->writing == NULL || ycsb_inserts_init(&sh->inserts,
									 o->records) < 0) {
		fprintf(stderr, "rb2-kv: no memory to track %" PRIu64 " records\n", sh->tracked);
		return -1;
	}
	kv_shared_versions_init(sh);
	return 0;
}

static void
shared_free(struct kv_shared *sh)
{
	free(sh->issued);
	free(sh->acked);
	free(sh->writing);
	ycsb_inserts_free(&sh->inserts);
}

/* Sum the lcores' results of a phase. */
static void
merge(struct kv_result *all, const struct kv_result *res, const unsigned int *ids, unsigned int n)
{
	memset(all, 0, sizeof(*all));
	for (unsigned int i = 0; i < n; i++) {
		const struct kv_result *r = &res[ids[i]];

		for (int op = 0; op < YCSB_NOPS; op++) {
			app_hist_merge(&all->lat[op], &r->lat[op]);
			all->ok[op] += r->ok[op];
			all->not_found[op] += r->not_found[op];
			all->failed[op] += r->failed[op];
		}
		all->check_failures += r->check_failures;
		all->no_space += r->no_space;
		if (all->first_failure[0] == '\0')
			memcpy(all->first_failure, r->first_failure, sizeof(all->first_failure));
		if (all->first_status[0] == '\0')
			memcpy(all->first_status, r->first_status, sizeof(all->first_status));
		if (i == 0 || r->t_start_ns < all->t_start_ns)
			all->t_start_ns = r->t_start_ns;
		all->t_end_ns = RTE_MAX(all->t_end_ns, r->t_end_ns);
	}
}

static uint64_t
total_ops(const struct kv_result *r)
{
	uint64_t n = 0;

	for (int op = 0; op < YCSB_NOPS; op++)
		n += r->lat[op].n;
	return n;
}

/* YCSB's text output (its measurement exporter's lines). */
static void
print_ycsb(FILE *f, const struct kv_result *r)
{
	double ms = (double)(r->t_end_ns - r->t_start_ns) / 1e6;

	fprintf(f, "[OVERALL], RunTime(ms), %.0f\n", ms);
	fprintf(f, "[OVERALL], Throughput(ops/sec), %.1f\n", (double)total_ops(r) / ms * 1e3);
	for (int op = 0; op < YCSB_NOPS; op++) {
		const struct app_hist *h = &r->lat[op];
		const char *nm = ycsb_op_name[op];

		if (h->n == 0)
			continue;
		fprintf(f, "[%s], Operations, %" PRIu64 "\n", nm, h->n);
		fprintf(f, "[%s], AverageLatency(us), %.3f\n", nm, (double)h->sum_ns / (double)h->n / 1e3);
		fprintf(f, "[%s], MinLatency(us), %.3f\n", nm, (double)h->min_ns / 1e3);
		fprintf(f, "[%s], MaxLatency(us), %.3f\n", nm, (double)h->max_ns / 1e3);
		fprintf(f, "[%s], 95thPercentileLatency(us), %.3f\n", nm,
			(double)app_hist_quantile(h, 0.95) / 1e3);
		fprintf(f, "[%s], 99thPercentileLatency(us), %.3f\n", nm,
			(double)app_hist_quantile(h, 0.99) / 1e3);
		fprintf(f, "[%s], Return=OK, %" PRIu64 "\n", nm, r->ok[op]);
		if (r->not_found[op])
			fprintf(f, "[%s], Return=NOT_FOUND, %" PRIu64 "\n", nm, r->not_found[op]);
		if (r->failed[op])
			fprintf(f, "[%s], Return=ERROR, %" PRIu64 "\n", nm, r->failed[op]);
	}
}

/* One phase's figures, as JSON (the client's --json). */
static json_t *
json_phase(const struct kv_result *r)
{
	struct app_hist all = {0};
	double s = (double)(r->t_end_ns - r->t_start_ns) / 1e9;
	json_t *ops = json_object();

	for (int op = 0; op < YCSB_NOPS; op++)
		app_hist_merge(&all, &r->lat[op]);
	for (int op = 0; op < YCSB_NOPS; op++)
		if (r->lat[op].n != 0)
			json_object_set_new(ops, ycsb_op_name[op], json_pack("{s:I, s:I, s:I}",
				"ok", (json_int_t)r->ok[op], "not_found", (json_int_t)r->not_found[op],
				"error", (json_int_t)r->failed[op]));
	return json_pack("{s:I, s:o, s:o, s:{s:o, s:o, s:o, s:o, s:o}, s:I, s:o}",
		"operations", (json_int_t)all.n, "seconds", bench_json_real(s),
		"ops_per_s", bench_json_real((double)all.n / s), "latency_us",
		"avg", bench_json_real(all.n ? (double)all.sum_ns / (double)all.n / 1e3 : 0),
		"p50", bench_json_real((double)app_hist_quantile(&all, 0.5) / 1e3),
		"p99", bench_json_real((double)app_hist_quantile(&all, 0.99) / 1e3),
		"p999", bench_json_real((double)app_hist_quantile(&all, 0.999) / 1e3),
		"max", bench_json_real((double)all.max_ns / 1e3),
		"check_failures", (json_int_t)r->check_failures, "ops", ops);
}

/* What failed, each kind in its own words, with its likely cause. */
static void
print_failures(FILE *f, const struct kv_result *r, int loading)
{
	uint64_t not_found = 0, failed = 0;

	for (int op = 0; op < YCSB_NOPS; op++) {
		not_found += r->not_found[op];
		failed += r->failed[op];
	}
	if (r->no_space)
		fprintf(f, "# %" PRIu64 " writes refused: the server's table is full (it holds "
			"the keys its --records says: start it with at least this client's "
			"--records)\n", r->no_space);
	if (not_found && !loading)
		fprintf(f, "# %" PRIu64 " reads found no value: load the records first (--phase "
			"load, or both, with the same --records and --key-space)\n", not_found);
	if (failed > r->no_space)
		fprintf(f, "# %" PRIu64 " operations failed; the first: %s\n",
			failed - r->no_space, r->first_status);
	if (r->check_failures)
		fprintf(f, "# %" PRIu64 " values read were wrong; the first: %s\n",
			r->check_failures, r->first_failure);
}

static int
phase_failed(const struct kv_result *r)
{
	for (int op = 0; op < YCSB_NOPS; op++)
		if (r->not_found[op] || r->failed[op])
			return 1;
	return r->check_failures != 0;
}

/* Ctrl-C: the phase stops, and its results so far are printed (a second
 * one kills). */
static void
on_client_signal(int sig)
{
	kv_client_stop = 1;
	signal(sig, SIG_DFL);
}

static int
run_client(void *arg)
{
	struct opts *o = arg;
	unsigned int ids[RTE_MAX_LCORE], n = 0, id;
	struct kv_result load = {0}, run = {0};
	int failed = 0;

	if (shared_init(&C.sh, o) < 0)
		return 2;
	RTE_LCORE_FOREACH(id) {
		if (o->tcp != NULL) {
			C.c[id] = kv_client_tcp(&C.sh, o->tcp, n);
		} else {
			char name[RB2_CONN_SERVICE_NAMESIZE];
			struct rb2_conn_ep *ep;

			snprintf(name, sizeof(name), "ycsb%u.%u", (unsigned int)getpid() % 100000, n);
			ep = rb2_conn_service_join(name, NULL, 5000);
			if (ep == NULL) {
				fprintf(stderr, "rb2-kv: joining rb2-raasd: %s (or use --tcp)\n",
					rte_strerror(rte_errno));
				return 1;
			}
			C.ep[id] = ep;
			C.c[id] = kv_client_rb2(&C.sh, ep, 1, o->host, n);
		}
		if (C.c[id] == NULL)
			return 1;
		ids[n++] = id;
	}
	C.n_lcores = n;
	signal(SIGINT, on_client_signal);
	signal(SIGTERM, on_client_signal);
	for (int p = 0; p < 2; p++) {
		struct kv_result *all = p == 0 ? &load : &run;

		if ((p == 0 && !o->load) || (p == 1 && !o->run))
			continue;
		C.phase = p == 0 ? KV_LOAD : KV_RUN;
		for (unsigned int i = 0; i < n; i++)
			C.ops_per_lcore[ids[i]] = o->operations * (i + 1) / n - o->operations * i / n;
		RTE_LCORE_FOREACH_WORKER(id)
			rb2_lcore_launch(client_lcore, NULL, id);
		client_lcore(NULL);
		rb2_lcore_wait_all();
		merge(all, C.res, ids, n);
		for (unsigned int i = 0; i < n; i++)
			if (C.ret[ids[i]] < 0) {
				fprintf(stderr, "rb2-kv: %s phase, lcore %u: %s\n",
					p == 0 ? "load" : "run", ids[i], C.res[ids[i]].first_failure);
				failed = 1;
			}
		printf("# rb2-kv %s phase: workload %c, %s, %" PRIu64 " records, %u lcore%s x "
		       "%u connection%s x depth %u\n", p == 0 ? "load" : "run", o->workload,
		       o->tcp ? "TCP" : "rb2", o->records, n, n > 1 ? "s" : "", o->conns,
		       o->conns > 1 ? "s" : "", o->depth);
		if (kv_client_stop)
			printf("# interrupted: the results of the operations done so far\n");
		print_ycsb(stdout, all);
		print_failures(stdout, all, p == 0);
		if (kv_client_stop)
			break;
		failed |= phase_failed(all);
		if (failed)
			break;
	}
	if (o->json != NULL) {
		json_t *doc = json_pack("{s:s, s:s, s:s#, s:s, s:I, s:I, s:I, s:I, s:I}",
			"tool", "rb2-kv", "layer", "application", "workload", &o->workload, 1,
			"transport", o->tcp ? "tcp" : "rb2", "records", (json_int_t)o->records,
			"lcores", (json_int_t)n, "conns", (json_int_t)o->conns,
			"depth", (json_int_t)o->depth, "value_size", (json_int_t)o->value_size);

		if (doc != NULL && o->load)
			json_object_set_new(doc, "load", json_phase(&load));
		if (doc != NULL && o->run)
			json_object_set_new(doc, "run", json_phase(&run));
		/* "-": on stdout, after the report. */
		if ((strcmp(o->json, "-") == 0 ? bench_json_emit(doc, NULL, "rb2-kv") :
		     bench_json_save(doc, o->json, "rb2-kv")) < 0)
			return 1;
	}
	RTE_LCORE_FOREACH(id) {
		kv_client_free(C.c[id]);
		close_ep(C.ep[id]);
	}
	shared_free(&C.sh);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	return kv_client_stop ? 130 : failed;
}

/* ---- bench ---------------------------------------------------------- */

static double ops_s[APP_BENCH_MAX_DESIGNS][64], p50[APP_BENCH_MAX_DESIGNS][64],
	      p99[APP_BENCH_MAX_DESIGNS][64];

/* One design's run in one round (bench_rounds_run()): its ops/s, and its
 * latency percentiles kept beside. */
struct bench_round {
	struct opts *o;
	struct kv_client **cl;
};

static int
bench_round(void *arg, unsigned int d, unsigned int r, double *figure)
{
	struct bench_round *br = arg;
	struct app_hist all = {0};
	struct kv_result res;
	double s;

	app_bench_select(d);
	if (kv_client_run(br->cl[d], KV_RUN, br->o->operations, 1, &res) < 0 ||
	    phase_failed(&res)) {
		fprintf(stderr, "rb2-kv: %s, round %u: %s\n", br->o->designs[d], r + 1,
			res.first_failure[0] ? res.first_failure : res.first_status);
		return -1;
	}
	for (int op = 0; op < YCSB_NOPS; op++)
		app_hist_merge(&all, &res.lat[op]);
	app_bench_measured(d, all.n);
	s = (double)(res.t_end_ns - res.t_start_ns) / 1e9;
	ops_s[d][r] = *figure = (double)all.n / s;
	p50[d][r] = (double)app_hist_quantile(&all, 0.5) / 1e3;
	p99[d][r] = (double)app_hist_quantile(&all, 0.99) / 1e3;
	return 0;
}

static int
run_bench(void *arg)
{
	struct opts *o = arg;
	struct app_bench_link links[APP_BENCH_MAX_DESIGNS] = {0};
	struct kv_client *cl[APP_BENCH_MAX_DESIGNS] = {0};
	struct kv_serve_ctx ctx = {0};
	struct kv_result res;
	int failed = 0;

	if (o->rounds > 64) {
		fprintf(stderr, "rb2-kv: --rounds: at most 64\n");
		return 2;
	}
	if (shared_init(&C.sh, o) < 0)
		return 2;
	C.sh.port = 1;
	C.sh.ports = 1;
	C.sh.quiet = 1;
	/* The table: the records, and every insert of every round. */
	o->capacity = (uint32_t)(o->records + (C.sh.w.proportion[YCSB_INSERT] > 0 ?
					       o->operations * o->rounds : 0));
	ctx.store = make_store(o, "rb2_kv_bench");
	if (ctx.store == NULL ||
	    app_bench_start(&kv_proto, &ctx, o->transport, o->designs, o->n_designs, o->conns,
			    links) < 0)
		return 1;
	for (unsigned int d = 0; d < o->n_designs && !failed; d++) {
		app_bench_select(d);
		cl[d] = links[d].ep != NULL ? kv_client_rb2(&C.sh, links[d].ep, 0, 0, 0) :
			links[d].l5 != NULL ? kv_client_l5(&C.sh, links[d].l5, 0) :
					      kv_client_tcp(&C.sh, links[d].tcp, 0);
		failed = cl[d] == NULL;
	}
	if (!failed) {
		app_bench_select(0);
		failed = kv_client_run(cl[0], KV_LOAD, 0, 1, &res) < 0 || phase_failed(&res);
		if (failed)
			fprintf(stderr, "rb2-kv: load: %s\n", res.first_failure[0] ? res.first_failure : res.first_status);
	}
	if (!failed) {
		struct bench_round br = { o, cl };
		static double fig[APP_BENCH_MAX_DESIGNS * 64];

		failed = bench_rounds_run("rb2-kv bench", o->rounds, o->n_designs, bench_round,
					  &br, fig) < 0;
	}
	for (unsigned int d = 0; d < o->n_designs; d++)
		kv_client_free(cl[d]);
	app_bench_stop(links, o->n_designs);
	kv_store_free(ctx.store);
	shared_free(&C.sh);
	if (failed)
		return 1;
	return app_bench_print(json_pack("{s:s, s:s#, s:I, s:I, s:I, s:I, s:I, s:I, s:s}",
					 "bench", "rb2-kv", "workload", &o->workload, 1,
					 "records", (json_int_t)o->records,
					 "operations_per_round", (json_int_t)o->operations,
					 "value_size", (json_int_t)o->value_size,
					 "conns", (json_int_t)o->conns, "depth", (json_int_t)o->depth,
					 "rounds", (json_int_t)o->rounds, "transport", o->transport),
			       o->designs, o->n_designs, o->rounds, "ops_per_s", ops_s, p50,
			       p99) < 0 ? 1 : 0;
}

int
main(int argc, char **argv)
{
	static struct opts o;
	struct option *lo = bench_opts_long(table);
	const struct app_cli cli = {
		.app = "rb2-kv", .usage = usage, .options = lo, .parse = parse,
		.run = { run_server, run_client, run_bench }, .opts = &o,
	};
	int ret = app_cli_main(&cli, argc, argv);

	free(lo);
	return ret;
}
