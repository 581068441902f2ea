/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* The serve and bench commands of the case-study apps (app_main.h). */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_errno.h>
#include <rte_lcore.h>

#include <rb2_conn_service.h>
#include <rb2_lcore.h>

#include "app_hist.h"
#include "app_main.h"
#include "app_net.h"
#include "bench.h"

/* ---- the command line ------------------------------------------------ */

static const struct app_cli *cli_now;

/* After the EAL: every return goes through rb2_eal_run()'s cleanup. */
static int
cli_run(int argc, char **argv)
{
	static const char *const cmds[3] = { "server", "client", "bench" };
	const struct app_cli *cli = cli_now;

	if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		cli->usage(stdout);
		return 0;
	}
	for (int i = 0; argc >= 2 && i < 3; i++) {
		if (strcmp(argv[1], cmds[i]) != 0)
			continue;
		if (cli->parse(argc - 1, argv + 1, cli->opts) < 0)
			return 2;
		return cli->run[i](cli->opts);
	}
	fprintf(stderr, "%s: server, client or bench expected after the EAL args and '--'%s%s\n",
		cli->app, argc >= 2 ? ", not " : "", argc >= 2 ? argv[1] : "");
	cli->usage(stderr);
	return 2;
}

int
app_cli_main(const struct app_cli *cli, int argc, char **argv)
{
	const struct rb2_app app = { .name = cli->app, .usage = cli->usage,
				     .options = cli->options };

	cli_now = cli;
	app_name = cli->app;
	return rb2_app_run(&app, argc, argv, cli_run);
}

/* ---- serve ---------------------------------------------------------- */

static struct {
	const struct app_serve_opts *o;
	struct app_server *sv[RTE_MAX_LCORE];
	struct rb2_conn_ep *ep[RTE_MAX_LCORE];
	int lost[RTE_MAX_LCORE];
} S;

static volatile sig_atomic_t stop;

static void
on_signal(int sig __rte_unused)
{
	stop = 1;
}

/*
 * A server that lost the service stops, TCP and all, and exits 1: an EAL
 * secondary stays mapped to the memory of the primary it started with, so
 * it can never join a restarted service, and a server that went on over TCP
 * alone would serve half of what it was started for without end. Exiting
 * lets a supervisor restart it against the new service.
 */
static int
serve_lcore(void *arg __rte_unused)
{
	unsigned int id = rte_lcore_id();

	while (!stop) {
		int ret = app_server_poll(S.sv[id]);

		if (ret < 0 && !S.lost[id]) {
			S.lost[id] = 1;
			fprintf(stderr, "%s: lcore %u: the service is gone (%s): its rb2 "
				"connections are closed, and a secondary cannot join a restarted "
				"service: stopping%s, exit status 1 (restart this server once "
				"rb2-raasd runs again)\n", S.o->app, id,
				ret == -ESHUTDOWN ? "it stopped" : strerror(-ret),
				S.o->tcp ? " TCP too" : "");
			stop = 1;
		}
	}
	return 0;
}

int
app_serve(const struct app_serve_opts *o)
{
	unsigned int id, n = 0;
	int lfd = -1, lost = 0;

	if (o->no_rb2 && o->tcp == NULL) {
		fprintf(stderr, "%s: --no-rb2 without --tcp serves nothing\n", o->app);
		return -1;
	}
	S.o = o;
	RTE_LCORE_FOREACH(id) {
		int fd = -1;

		if (!o->no_rb2) {
			char name[RB2_CONN_SERVICE_NAMESIZE];
			struct rb2_conn_ep_params p;

			rb2_conn_ep_params_init(&p);
			p.max_conns = RB2_CONN_MAX;
			snprintf(name, sizeof(name), "%.6s%u.%u", o->app + 4,
				 (unsigned int)getpid() % 100000, n);
			S.ep[id] = rb2_conn_service_join(name, &p, 5000);
			if (S.ep[id] == NULL) {
				fprintf(stderr, "%s: joining rb2-raasd: %s (or serve TCP only: "
					"--no-rb2 --tcp IP:PORT)\n", o->app, rte_strerror(rte_errno));
				return -1;
			}
		}
		/* One listening socket, each lcore's server a descriptor of it:
		 * an accepted connection is the lcore's that took it. */
		if (o->tcp != NULL && lfd < 0 && (lfd = app_tcp_listen(o->tcp, NULL)) < 0)
			return -1;
		if (lfd >= 0 && (fd = n == 0 ? lfd : fcntl(lfd, F_DUPFD_CLOEXEC, 0)) < 0) {
			fprintf(stderr, "%s: TCP %s: %s\n", o->app, o->tcp, strerror(errno));
			return -1;
		}
		S.sv[id] = app_server_create(o->proto, o->ctx[id], S.ep[id],
					     (uint16_t)(o->port + n), fd);
		if (S.sv[id] == NULL)
			return -1;
		n++;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	printf("%s: serving on %u lcore%s:", o->app, n, n > 1 ? "s" : "");
	if (!o->no_rb2)
		printf(" rb2 port%s %u%s", n > 1 ? "s" : "", o->port, n > 1 ? ".." : "");
	if (!o->no_rb2 && n > 1)
		printf("%u", o->port + n - 1);
	if (o->no_rb2)
		printf(" (no rb2)");
	if (o->tcp)
		printf(", TCP %s", o->tcp);
	printf("\n");
	fflush(stdout);
	RTE_LCORE_FOREACH_WORKER(id)
		rb2_lcore_launch(serve_lcore, NULL, id);
	serve_lcore(NULL);
	rb2_lcore_wait_all();
	/* What each lcore served: a server on several lcores shares its load
	 * only as the clients spread their connections (rb2: ports P+i). */
	RTE_LCORE_FOREACH(id) {
		struct app_server_stats st;

		app_server_stats_get(S.sv[id], &st);
		printf("%s: lcore %u served %" PRIu64 " requests on %" PRIu64 " connections\n",
		       o->app, id, st.requests, st.conns_accepted);
	}
	RTE_LCORE_FOREACH(id) {
		app_server_free(S.sv[id]);
		rb2_conn_ep_destroy(S.ep[id]);
		S.sv[id] = NULL;
		lost |= S.lost[id];
	}
	return lost ? 1 : 0;
}

void
app_serve_stats(struct app_server_stats *a)
{
	unsigned int id;

	memset(a, 0, sizeof(*a));
	RTE_LCORE_FOREACH(id) {
		struct app_server_stats b;

		if (S.sv[id] == NULL)
			continue;
		app_server_stats_get(S.sv[id], &b);
		a->requests += b.requests;
		a->conns_accepted += b.conns_accepted;
		a->conns_closed += b.conns_closed;
		a->conns_failed += b.conns_failed;
		a->closed_by_protocol += b.closed_by_protocol;
		a->tcp_refused += b.tcp_refused;
		a->waits += b.waits;
	}
}

/* ---- bench ---------------------------------------------------------- */

/* WRs of a design's four halves (a count, or a sum over measured rounds). */
struct bench_wrs {
	uint64_t all, signaled;
	uint64_t data, tail, head;  /* slot WRITEs; tail WRITEs; head WRITEs and READs */
};

static struct {
	struct app_server *sv[APP_BENCH_MAX_DESIGNS];
	struct rb2_conn_ep *srv_ep[APP_BENCH_MAX_DESIGNS];
	struct app_ep_chans chans[APP_BENCH_MAX_DESIGNS];   /* none for tcp, l5 */
	const struct app_bench_link *links;
	/* WRs both ways (each half's own: a sender's WRITEs and READs, a
	 * receiver's head WRITEs and credit returns), over measured rounds. */
	struct bench_wrs at_select;
	struct bench_wrs wrs[APP_BENCH_MAX_DESIGNS];
	uint64_t ops[APP_BENCH_MAX_DESIGNS];
	unsigned int worker;
	int active;              /* -1: none, -2: stop */
} B;

/* WRs posted so far on design @p d's four halves: all, signaled, and by
 * what they carry (what is left of all: wake-ups, notices, credits). */
static void
bench_wrs(unsigned int d, struct bench_wrs *c)
{
	*c = (struct bench_wrs){0};
	for (int k = 0; k < 2; k++) {
		struct rb2_tx_stats ts;
		struct rb2_rx_stats rs;

		if (B.chans[d].tx[k] == NULL)
			continue;
		rb2_tx_stats_get(B.chans[d].tx[k], &ts);
		rb2_rx_stats_get(B.chans[d].rx[k], &rs);
		c->all += ts.wrs + rs.wrs;
		c->signaled += ts.signaled_wrs;
		c->data += ts.slot_writes;
		c->tail += ts.tail_writes;
		c->head += ts.head_reads + rs.head_pushes;
	}
	/* L5 posts two WRs per message (the payload with its validity word,
	 * then its length; a third where it wraps) and a READ of the read
	 * position when short of room. */
	for (unsigned int i = 0; B.links != NULL && i < B.links[d].n_l5; i++) {
		for (int k = 0; k < 2; k++) {
			struct rb2_l5_stats st;

			rb2_l5_stats_get(B.links[d].l5[i].ring[k], &st);
			c->all += st.writes + st.head_reads;
			c->signaled += st.signaled;
			c->data += st.writes - RTE_MIN(st.writes, st.messages);
			c->tail += RTE_MIN(st.writes, st.messages);
			c->head += st.head_reads;
		}
	}
}

static int
bench_server(void *arg __rte_unused)
{
	int d;

	while ((d = __atomic_load_n(&B.active, __ATOMIC_ACQUIRE)) != -2)
		if (d >= 0)
			app_server_poll(B.sv[d]);
	return 0;
}

int
app_bench_designs(const char *list, const char **designs)
{
	static const char *const def[] = { "rb2", "l5", "farm", "socksdirect", "tcp" };
	char *save = NULL, *s;
	int n = 0;

	if (list == NULL) {
		for (unsigned int i = 0; i < RTE_DIM(def); i++)
			designs[n++] = def[i];
		return n;
	}
	s = strdup(list);
	for (char *t = strtok_r(s, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (n == APP_BENCH_MAX_DESIGNS) {
			app_err("--designs: at most %d\n", APP_BENCH_MAX_DESIGNS);
			return -1;
		}
		designs[n++] = t;
	}
	return n;
}

int
app_bench_start(const struct app_proto *proto, void *ctx, const char *transport,
		const char *const *designs, unsigned int n, unsigned int conns,
		struct app_bench_link *links)
{
	struct rb2_xport *xp;

	B.worker = rte_get_next_lcore(-1, 1, 0);
	if (B.worker >= RTE_MAX_LCORE) {
		app_err("bench needs two lcores (EAL -l 0-1)\n");
		return -1;
	}
	xp = rb2_xport_open_spec(transport);
	if (xp == NULL) {
		app_err("--transport %s: %s\n", transport, rte_strerror(rte_errno));
		return -1;
	}
	for (unsigned int d = 0; d < n; d++) {
		links[d].design = designs[d];
		if (strcmp(designs[d], "tcp") == 0) {
			uint16_t port;
			int fd = app_tcp_listen("127.0.0.1:0", &port);

			if (fd < 0)
				return -1;
			snprintf(links[d].tcp, sizeof(links[d].tcp), "127.0.0.1:%u", port);
			B.sv[d] = app_server_create(proto, ctx, NULL, 0, fd);
		} else if (strcmp(designs[d], "l5") == 0) {
			if (conns > APP_SERVER_L5_MAX) {
				app_err("design l5: at most %d connections\n",
					APP_SERVER_L5_MAX);
				return -1;
			}
			B.sv[d] = app_server_create(proto, ctx, NULL, 0, -1);
			links[d].l5 = calloc(conns, sizeof(*links[d].l5));
			if (B.sv[d] == NULL || links[d].l5 == NULL)
				return -1;
			for (unsigned int i = 0; i < conns; i++) {
				char name[24];

				snprintf(name, sizeof(name), "bench%u.%u", d, i);
				if (app_l5_conn_create(name, xp, rte_lcore_id(), B.worker,
						       &links[d].l5[i]) < 0)
					return -1;
				links[d].n_l5++;
				if (app_server_add_l5(B.sv[d], &links[d].l5[i]) < 0)
					return -1;
			}
		} else {
			char name[16];

			snprintf(name, sizeof(name), "bench%u", d);
			if (app_ep_pair(name, xp, strcmp(designs[d], "l5-chan") == 0 ? "l5" :
					designs[d], &links[d].ep, &B.srv_ep[d],
					&B.chans[d]) < 0)
				return -1;
			B.sv[d] = app_server_create(proto, ctx, B.srv_ep[d], 1, -1);
		}
		if (B.sv[d] == NULL)
			return -1;
	}
	B.links = links;
	B.active = -1;
	return rb2_lcore_launch(bench_server, NULL, B.worker) < 0 ? -1 : 0;
}

void
app_bench_select(unsigned int d)
{
	__atomic_store_n(&B.active, (int)d, __ATOMIC_RELEASE);
	bench_wrs(d, &B.at_select);
}

void
app_bench_measured(unsigned int d, uint64_t ops)
{
	struct bench_wrs c, *t = &B.wrs[d], *a = &B.at_select;

	bench_wrs(d, &c);
	t->all += c.all - a->all;
	t->signaled += c.signaled - a->signaled;
	t->data += c.data - a->data;
	t->tail += c.tail - a->tail;
	t->head += c.head - a->head;
	B.ops[d] += ops;
}

void
app_bench_stop(struct app_bench_link *links, unsigned int n)
{
	__atomic_store_n(&B.active, -2, __ATOMIC_RELEASE);
	rb2_lcore_wait(B.worker);
	for (unsigned int d = 0; d < n; d++) {
		app_server_free(B.sv[d]);
		rb2_conn_ep_destroy(B.srv_ep[d]);
		rb2_conn_ep_destroy(links[d].ep);
		for (unsigned int i = 0; i < links[d].n_l5; i++)
			app_l5_conn_destroy(&links[d].l5[i]);
		free(links[d].l5);
		links[d].l5 = NULL;
		links[d].n_l5 = 0;
		B.sv[d] = NULL;
		B.srv_ep[d] = NULL;
		B.chans[d] = (struct app_ep_chans){0};
		links[d].ep = NULL;
	}
	B.links = NULL;
}

int
app_bench_print(json_t *doc, const char *const *designs, unsigned int n, unsigned int rounds,
		const char *unit, double rate[][64], double p50[][64], double p99[][64])
{
	json_t *ds = json_object(), *ratios = json_object();
	char key[64];

	/* The layer measured: a whole application, server and client. */
	json_object_set_new(doc, "layer", json_string("application"));

	for (unsigned int d = 0; d < n; d++) {
		json_t *o = json_object(), *rs = json_array();

		snprintf(key, sizeof(key), "median_%s", unit);
		json_object_set_new(o, key, bench_json_real(bench_median(rate[d], rounds)));
		json_object_set_new(o, "median_p50_us", bench_json_real(bench_median(p50[d], rounds)));
		json_object_set_new(o, "median_p99_us", bench_json_real(bench_median(p99[d], rounds)));
		for (unsigned int r = 0; r < rounds; r++)
			json_array_append_new(rs, bench_json_real(rate[d][r]));
		json_object_set_new(o, unit, rs);
		if (strcmp(designs[d], "tcp") != 0 && B.ops[d] > 0) {
			const struct bench_wrs *t = &B.wrs[d];
			double ops = (double)B.ops[d];

			json_object_set_new(o, "wrs_per_op", bench_json_real((double)t->all / ops));
			json_object_set_new(o, "signaled_per_op",
					    bench_json_real((double)t->signaled / ops));
			/* Where nothing is posted (shm's stores) the counters
			 * count stores, not WRs: no breakdown. */
			if (t->all >= t->data + t->tail + t->head && t->all > 0)
				json_object_set_new(o, "wrs_per_op_by_kind", json_pack(
					"{s:o, s:o, s:o, s:o}",
					"data", bench_json_real((double)t->data / ops),
					"tail", bench_json_real((double)t->tail / ops),
					"head", bench_json_real((double)t->head / ops),
					"other", bench_json_real((double)(t->all - t->data - t->tail -
									  t->head) / ops)));
		}
		json_object_set_new(ds, designs[d], o);
	}
	json_object_set_new(doc, "designs", ds);
	for (unsigned int d = 1; d < n; d++) {
		snprintf(key, sizeof(key), "%s/%s", designs[0], designs[d]);
		json_object_set_new(ratios, key,
				    bench_json_real(bench_median_ratio(rate[0], rate[d], rounds)));
	}
	json_object_set_new(doc, "ratios", ratios);
	return bench_json_emit(doc, NULL, "bench");
}
