/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * rb2-http: an HTTP/1.1 file server over rb2 connections and TCP, and a
 * closed-loop load generator (the RB² paper's §V-C case study, Fig. 10).
 *
 *   rb2-http [EAL] -- server --root DIR [--port P] [--tcp IP:PORT] ...
 *   rb2-http [EAL] -- client [--host H] [--port P] | [--tcp IP:PORT] --files DIR ...
 *   rb2-http [EAL -l 0-1] -- bench --designs rb2,l5,farm,socksdirect,tcp
 */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <http_parser.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_telemetry.h>

#include <rb2_conn.h>
#include <rb2_conn_service.h>
#include <rb2_lcore.h>

#include "app_hist.h"
#include "app_main.h"
#include "http_client.h"
#include "http_files.h"
#include "http_server.h"

struct opts {
	const char *root;
	uint16_t port;
	const char *tcp;
	int no_rb2;
	uint64_t max_file;
	uint32_t host;
	const char *files;
	const char *path;
	unsigned int conns;
	uint64_t requests;
	const char *json;
	int quiet;
	const char *designs[APP_BENCH_MAX_DESIGNS];
	unsigned int n_designs;
	unsigned int rounds;
	const char *transport;
	uint32_t file_size, file_count;
};

static void
usage(FILE *f)
{
	fprintf(f,
"usage: rb2-http [EAL args] -- server|client|bench [options]\n"
"\n"
"An HTTP/1.1 server of the files under a directory (GET, HEAD, keep-alive;\n"
"requests parsed by http-parser) over rb2 connections and TCP, and a closed-loop\n"
"client that checks every body byte for byte.\n"
"\n"
"server: every EAL lcore serves; over rb2 it joins rb2-raasd (start this as its\n"
"secondary), lcore i on rb2 port P+i; over TCP all lcores share --tcp's port.\n"
"  --root DIR           the directory served (nothing outside it is ever read)\n"
"  --port P             first rb2 port (default 8080)\n"
"  --tcp IP:PORT        also serve TCP there (curl, wrk)\n"
"  --no-rb2             TCP only, no service (then this is an EAL primary)\n"
"  --max-file BYTES     larger files are refused with 413 (default 64 MiB)\n"
"\n"
"client: every EAL lcore runs a closed loop: each connection sends a GET and\n"
"waits for the whole answer before the next.\n"
"  --host H --port P    the server through the service (defaults 0: this host,\n"
"                       8080)\n"
"  --tcp IP:PORT        over TCP instead\n"
"  --files DIR          ask for each file of DIR in turn, checking each body\n"
"                       against it (the server's --root, or a copy)\n"
"  --path PATH          ask for PATH only (status checked, not the body)\n"
"  --conns N            connections per lcore (default 1)\n"
"  --requests N         all lcores together (default 1000000)\n"
"  --json FILE          also write the results as JSON ('-': stdout)\n"
"  --quiet              no progress lines\n"
"Exits 1 if any answer was not 200 with the right body.\n"
"\n"
"bench: server and client in one process (EAL -l 0-1), files made in a\n"
"temporary directory, each design in interleaved rounds; prints one JSON object.\n"
"  --designs LIST       " RB2_CHAN_PRESET_NAMES ", tcp; ratios are\n"
"                       the first's over each (default rb2,l5,farm,socksdirect,tcp)\n"
"  --rounds R           (default 3); --requests is per design and round\n"
"  --file-size B        (default 1024)   --file-count N (default 16)\n"
"  --conns N            (default 1)      --transport SPEC (default shm)\n");
}

static int
parse(int argc, char **argv, void *arg)
{
	struct opts *o = arg;
	static const struct option lo[] = {
		{"root", required_argument, NULL, 'r'}, {"port", required_argument, NULL, 'p'},
		{"tcp", required_argument, NULL, 't'}, {"no-rb2", no_argument, NULL, 'N'},
		{"max-file", required_argument, NULL, 'm'},
		{"host", required_argument, NULL, 'H'}, {"files", required_argument, NULL, 'f'},
		{"path", required_argument, NULL, 'P'}, {"conns", required_argument, NULL, 'c'},
		{"requests", required_argument, NULL, 'n'},
		{"json", required_argument, NULL, 'j'}, {"quiet", no_argument, NULL, 'q'},
		{"designs", required_argument, NULL, 'x'},
		{"rounds", required_argument, NULL, 'R'},
		{"transport", required_argument, NULL, 'T'},
		{"file-size", required_argument, NULL, 's'},
		{"file-count", required_argument, NULL, 'C'},
		{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
	};
	const char *designs = NULL;
	int c, n;

	o->port = 8080;
	o->max_file = 64u << 20;
	o->conns = 1;
	o->requests = 1000000;
	o->rounds = 3;
	o->transport = "shm";
	o->file_size = 1024;
	o->file_count = 16;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		unsigned long long v = 0;

		if (optarg != NULL && strchr("pmHcnRsC", c) != NULL) {
			char *end;

			errno = 0;
			v = strtoull(optarg, &end, 0);
			if (errno != 0 || *end != '\0' || optarg[0] == '-') {
				fprintf(stderr, "rb2-http: '%s': a number expected\n", optarg);
				return -1;
			}
		}
		switch (c) {
		case 'r': o->root = optarg; break;
		case 'p': o->port = (uint16_t)v; break;
		case 't': o->tcp = optarg; break;
		case 'N': o->no_rb2 = 1; break;
		case 'm': o->max_file = v; break;
		case 'H': o->host = (uint32_t)v; break;
		case 'f': o->files = optarg; break;
		case 'P': o->path = optarg; break;
		case 'c': o->conns = (unsigned int)v; break;
		case 'n': o->requests = v; break;
		case 'j': o->json = optarg; break;
		case 'q': o->quiet = 1; break;
		case 'x': designs = optarg; break;
		case 'R': o->rounds = (unsigned int)v; break;
		case 'T': o->transport = optarg; break;
		case 's': o->file_size = (uint32_t)v; break;
		case 'C': o->file_count = (uint32_t)v; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -1;
		}
	}
	n = app_bench_designs(designs, o->designs);
	if (n < 0)
		return -1;
	o->n_designs = (unsigned int)n;
	if (o->conns < 1 || o->conns > 4096 || o->requests < 1 || o->rounds < 1 ||
	    o->rounds > 64 || o->file_count < 1) {
		fprintf(stderr, "rb2-http: --conns 1..4096, --requests, --file-count at least 1, "
			"--rounds 1..64\n");
		return -1;
	}
	return 0;
}

/* ---- server --------------------------------------------------------- */

static struct http_serve_ctx server_ctx[RTE_MAX_LCORE];

static int
tel_stats(const char *cmd __rte_unused, const char *params __rte_unused, struct rte_tel_data *d)
{
	struct http_serve_stats s = {0};
	struct app_server_stats a;
	unsigned int id;

	app_serve_stats(&a);
	RTE_LCORE_FOREACH(id) {
		const struct http_serve_stats *x = &server_ctx[id].st;

		s.s200 += __atomic_load_n(&x->s200, __ATOMIC_RELAXED);
		s.s400 += __atomic_load_n(&x->s400, __ATOMIC_RELAXED);
		s.s403 += __atomic_load_n(&x->s403, __ATOMIC_RELAXED);
		s.s404 += __atomic_load_n(&x->s404, __ATOMIC_RELAXED);
		s.s405 += __atomic_load_n(&x->s405, __ATOMIC_RELAXED);
		s.s413 += __atomic_load_n(&x->s413, __ATOMIC_RELAXED);
		s.body_bytes += __atomic_load_n(&x->body_bytes, __ATOMIC_RELAXED);
	}
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "requests", a.requests);
	rte_tel_data_add_dict_u64(d, "status_200", s.s200);
	rte_tel_data_add_dict_u64(d, "status_400", s.s400);
	rte_tel_data_add_dict_u64(d, "status_403", s.s403);
	rte_tel_data_add_dict_u64(d, "status_404", s.s404);
	rte_tel_data_add_dict_u64(d, "status_405", s.s405);
	rte_tel_data_add_dict_u64(d, "status_413", s.s413);
	rte_tel_data_add_dict_u64(d, "body_bytes", s.body_bytes);
	rte_tel_data_add_dict_u64(d, "conns_accepted", a.conns_accepted);
	rte_tel_data_add_dict_u64(d, "conns_closed", a.conns_closed);
	rte_tel_data_add_dict_u64(d, "conns_failed", a.conns_failed);
	rte_tel_data_add_dict_u64(d, "closed_by_protocol", a.closed_by_protocol);
	rte_tel_data_add_dict_u64(d, "tcp_refused", a.tcp_refused);
	rte_tel_data_add_dict_u64(d, "answer_waits", a.waits);
	return 0;
}

static int
run_server(void *arg)
{
	struct opts *o = arg;
	void *ctx[RTE_MAX_LCORE];
	struct app_serve_opts so = {
		.proto = &http_proto, .ctx = ctx, .app = "rb2-http", .port = o->port,
		.tcp = o->tcp, .no_rb2 = o->no_rb2,
	};
	unsigned int id;
	int ret;

	if (o->root == NULL) {
		fprintf(stderr, "rb2-http: server needs --root DIR\n");
		return 2;
	}
	http_parser_set_max_header_size(HTTP_SERVER_HEADER_MAX);
	RTE_LCORE_FOREACH(id) {
		server_ctx[id].files = http_files_open(o->root, o->max_file);
		if (server_ctx[id].files == NULL)
			return 1;
		ctx[id] = &server_ctx[id];
	}
	rte_telemetry_register_cmd("/rb2/http/stats", tel_stats,
				   "Answers by status, bytes, connections. No parameters");
	ret = app_serve(&so);
	RTE_LCORE_FOREACH(id)
		http_files_close(server_ctx[id].files);
	printf("rb2-http: stopped\n");
	return ret;
}

/* ---- client --------------------------------------------------------- */

static struct {
	struct http_client *c[RTE_MAX_LCORE];
	struct http_result res[RTE_MAX_LCORE];
	uint64_t requests[RTE_MAX_LCORE];
	int ret[RTE_MAX_LCORE];
	int quiet;
} C;

static int
client_lcore(void *arg __rte_unused)
{
	unsigned int id = rte_lcore_id();

	C.ret[id] = http_client_run(C.c[id], C.requests[id], C.quiet || id != rte_get_main_lcore(),
				    &C.res[id]);
	return 0;
}

static void
print_result(FILE *f, const struct http_result *r, int json)
{
	double s = (double)(r->t_end_ns - r->t_start_ns) / 1e9;
	const struct app_hist *h = &r->lat;

	if (json)
		fprintf(f, "\"requests\": %" PRIu64 ", \"seconds\": %.4f, \"qps\": %.1f, "
			"\"latency_us\": {\"avg\": %.3f, \"p50\": %.3f, \"p99\": %.3f, \"p999\": %.3f, "
			"\"max\": %.3f}, \"ok\": %" PRIu64 ", \"bad_status\": %" PRIu64
			", \"bad_body\": %" PRIu64, h->n, s, (double)h->n / s,
			h->n ? (double)h->sum_ns / (double)h->n / 1e3 : 0,
			(double)app_hist_quantile(h, 0.5) / 1e3,
			(double)app_hist_quantile(h, 0.99) / 1e3,
			(double)app_hist_quantile(h, 0.999) / 1e3, (double)h->max_ns / 1e3, r->ok,
			r->bad_status, r->bad_body);
	else
		fprintf(f, "rb2-http: %" PRIu64 " requests in %.3f s: %.0f QPS; latency p50 %.2f "
			"us, p99 %.2f us, p99.9 %.2f us, max %.2f us; %" PRIu64 " ok, %" PRIu64
			" bad status, %" PRIu64 " bad body\n", h->n, s, (double)h->n / s,
			(double)app_hist_quantile(h, 0.5) / 1e3,
			(double)app_hist_quantile(h, 0.99) / 1e3,
			(double)app_hist_quantile(h, 0.999) / 1e3, (double)h->max_ns / 1e3, r->ok,
			r->bad_status, r->bad_body);
}

static void
merge(struct http_result *all, const struct http_result *r)
{
	if (all->t_start_ns == 0 || r->t_start_ns < all->t_start_ns)
		all->t_start_ns = r->t_start_ns;
	all->t_end_ns = RTE_MAX(all->t_end_ns, r->t_end_ns);
	app_hist_merge(&all->lat, &r->lat);
	all->ok += r->ok;
	all->bad_status += r->bad_status;
	all->bad_body += r->bad_body;
	if (all->first_failure[0] == '\0')
		memcpy(all->first_failure, r->first_failure, sizeof(all->first_failure));
}

static int
run_client(void *arg)
{
	struct opts *o = arg;
	static struct http_result all;
	struct http_target *t = NULL, one;
	struct rb2_conn_ep *ep[RTE_MAX_LCORE] = {0};
	unsigned int id, n = 0, nl = rte_lcore_count();
	int nt, failed = 0;

	if ((o->files == NULL) == (o->path == NULL)) {
		fprintf(stderr, "rb2-http: client needs --files DIR or --path PATH\n");
		return 2;
	}
	if (o->files != NULL) {
		nt = http_targets_load(o->files, &t);
		if (nt < 0)
			return 1;
	} else {
		memset(&one, 0, sizeof(one));
		snprintf(one.path, sizeof(one.path), "%s", o->path);
		t = &one;
		nt = 1;
	}
	C.quiet = o->quiet;
	RTE_LCORE_FOREACH(id) {
		if (o->tcp != NULL) {
			C.c[id] = http_client_tcp(o->tcp, o->conns, t, (unsigned int)nt, n);
		} else {
			char name[RB2_CONN_SERVICE_NAMESIZE];

			snprintf(name, sizeof(name), "get%u.%u", (unsigned int)getpid() % 100000, n);
			ep[id] = rb2_conn_service_join(name, NULL, 5000);
			if (ep[id] == NULL) {
				fprintf(stderr, "rb2-http: joining rb2-raasd: %s (or use --tcp)\n",
					rte_strerror(rte_errno));
				return 1;
			}
			C.c[id] = http_client_rb2(ep[id], 1, o->host, o->port, o->conns, t,
						  (unsigned int)nt, n);
		}
		if (C.c[id] == NULL)
			return 1;
		C.requests[id] = o->requests * (n + 1) / nl - o->requests * n / nl;
		n++;
	}
	RTE_LCORE_FOREACH_WORKER(id)
		rb2_lcore_launch(client_lcore, NULL, id);
	client_lcore(NULL);
	rb2_lcore_wait_all();
	RTE_LCORE_FOREACH(id) {
		merge(&all, &C.res[id]);
		if (C.ret[id] < 0) {
			fprintf(stderr, "rb2-http: lcore %u: %s\n", id, C.res[id].first_failure);
			failed = 1;
		}
		http_client_free(C.c[id]);
		rb2_conn_ep_destroy(ep[id]);
	}
	if (t != &one)
		http_targets_free(t, nt);
	print_result(stdout, &all, 0);
	if (all.bad_status || all.bad_body) {
		printf("rb2-http: the first wrong answer: %s\n", all.first_failure);
		failed = 1;
	}
	if (o->json != NULL) {
		FILE *jf = strcmp(o->json, "-") == 0 ? stdout : fopen(o->json, "w");

		if (jf == NULL) {
			fprintf(stderr, "rb2-http: --json %s: %s\n", o->json, strerror(errno));
			return 1;
		}
		fprintf(jf, "{\"transport\": \"%s\", \"lcores\": %u, \"conns\": %u, ",
			o->tcp ? "tcp" : "rb2", nl, o->conns);
		print_result(jf, &all, 1);
		fprintf(jf, "}\n");
		if (jf != stdout)
			fclose(jf);
	}
	return failed;
}

/* ---- bench ---------------------------------------------------------- */

static double qps[APP_BENCH_MAX_DESIGNS][64], p50[APP_BENCH_MAX_DESIGNS][64],
	      p99[APP_BENCH_MAX_DESIGNS][64];

/* Files of pseudo-random bytes under a new temporary directory. */
static int
make_files(const struct opts *o, char *dir, struct http_target **t)
{
	uint64_t x = 88172645463325252ull;

	if (mkdtemp(dir) == NULL) {
		fprintf(stderr, "rb2-http: mkdtemp: %s\n", strerror(errno));
		return -1;
	}
	for (uint32_t i = 0; i < o->file_count; i++) {
		char path[256];
		FILE *f;

		snprintf(path, sizeof(path), "%s/f%u.bin", dir, i);
		f = fopen(path, "w");
		if (f == NULL)
			return -1;
		for (uint32_t b = 0; b < o->file_size; b++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			fputc((int)(x & 0xff), f);
		}
		fclose(f);
	}
	return http_targets_load(dir, t);
}

static void
remove_files(const char *dir, const struct opts *o)
{
	for (uint32_t i = 0; i < o->file_count; i++) {
		char path[256];

		snprintf(path, sizeof(path), "%s/f%u.bin", dir, i);
		unlink(path);
	}
	rmdir(dir);
}

static int
run_bench(void *arg)
{
	struct opts *o = arg;
	struct app_bench_link links[APP_BENCH_MAX_DESIGNS] = {0};
	struct http_client *cl[APP_BENCH_MAX_DESIGNS] = {0};
	struct http_serve_ctx ctx = {0};
	char dir[] = "/tmp/rb2-http-bench.XXXXXX";
	struct http_target *t;
	struct http_result res;
	int nt, failed = 0;

	nt = make_files(o, dir, &t);
	if (nt < 0)
		return 1;
	http_parser_set_max_header_size(HTTP_SERVER_HEADER_MAX);
	ctx.files = http_files_open(dir, o->max_file);
	if (ctx.files == NULL ||
	    app_bench_start(&http_proto, &ctx, o->transport, o->designs, o->n_designs, links) < 0)
		failed = 1;
	for (unsigned int d = 0; d < o->n_designs && !failed; d++) {
		app_bench_select(d);
		cl[d] = links[d].ep != NULL ?
			http_client_rb2(links[d].ep, 0, 0, 1, o->conns, t, (unsigned int)nt, 0) :
			http_client_tcp(links[d].tcp, o->conns, t, (unsigned int)nt, 0);
		failed = cl[d] == NULL;
	}
	for (unsigned int r = 0; r < o->rounds && !failed; r++) {
		for (unsigned int d = 0; d < o->n_designs && !failed; d++) {
			app_bench_select(d);
			if (http_client_run(cl[d], o->requests, 1, &res) < 0 || res.bad_status ||
			    res.bad_body) {
				fprintf(stderr, "rb2-http: %s, round %u: %s\n", o->designs[d], r + 1,
					res.first_failure);
				failed = 1;
				break;
			}
			app_bench_measured(d, res.lat.n);
			qps[d][r] = (double)res.lat.n / ((double)(res.t_end_ns - res.t_start_ns) / 1e9);
			p50[d][r] = (double)app_hist_quantile(&res.lat, 0.5) / 1e3;
			p99[d][r] = (double)app_hist_quantile(&res.lat, 0.99) / 1e3;
		}
		fprintf(stderr, "rb2-http: bench round %u/%u done\n", r + 1, o->rounds);
	}
	for (unsigned int d = 0; d < o->n_designs; d++)
		http_client_free(cl[d]);
	app_bench_stop(links, o->n_designs);
	http_files_close(ctx.files);
	http_targets_free(t, nt);
	remove_files(dir, o);
	if (failed)
		return 1;
	printf("{\n  \"bench\": \"rb2-http\", \"requests_per_round\": %" PRIu64 ", \"file_size\": "
	       "%u, \"files\": %u, \"conns\": %u, \"rounds\": %u, \"transport\": \"%s\",\n",
	       o->requests, o->file_size, o->file_count, o->conns, o->rounds, o->transport);
	app_bench_print(o->designs, o->n_designs, o->rounds, "qps", qps, p50, p99);
	return 0;
}

int
main(int argc, char **argv)
{
	static struct opts o;
	const struct app_cli cli = {
		.app = "rb2-http", .usage = usage, .parse = parse,
		.run = { run_server, run_client, run_bench }, .opts = &o,
	};

	return app_cli_main(&cli, argc, argv);
}
