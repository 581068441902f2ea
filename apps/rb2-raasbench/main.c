/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * rb2-raasbench: large messages through the host service, lent against
 * copied, in interleaved rounds of one run (RaaS's copy/register threshold,
 * measured through rb2-raasd). Two applications, secondaries of the
 * service (on one host, or one on each of two hosts whose services are
 * peers):
 *
 *   rb2-raasbench [EAL] -- recv --port P [--private]
 *   rb2-raasbench [EAL] -- send --port P [--host H] --size BYTES
 *                 [--designs lent,copied] [--rounds R] [--seconds S]
 *                 [--buffers K] [--json FILE]
 *
 * lent: each message is one buffer of the group's shared memory, lent with
 * rb2_conn_send_ref() (K of them in flight; the service registers them
 * once, then hits). copied: the same bytes with rb2_conn_send(), in chunks
 * of the largest message a connection through the service takes. The
 * receiver takes both with rb2_conn_recv() into one buffer of shared memory
 * (--private: of malloc(), so the service READs into a bounce buffer). A
 * round ends with a 4-byte mark that the receiver answers with its byte
 * count, so each figure is bytes the receiver had, over the time until it
 * had them. The sender prints one JSON object.
 */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_malloc.h>

#include <rb2_conn_ref.h>
#include <rb2_conn_service.h>
#include <rb2_lcore.h>

#include "app_hist.h"
#include "../common/bench.h"

#define MAX_BUFFERS 64
#define MARK_LEN 4u

enum { LENT, COPIED, NMODES };
static const char *const mode_name[NMODES] = { "lent", "copied" };

static double
now_s(void)
{
	return (double)app_now_ns() / 1e9;
}

/* Poll once, or (blocking mode, the default) spin for --spin-us and then
 * sleep until the service sends: the service polls a core of its own, and
 * the two applications share what is left. */
static int busy_poll;
static unsigned int spin_us = 50;

static void
idle(struct rb2_conn_ep *ep)
{
	int cds[8];

	if (busy_poll) {
		rb2_conn_ep_poll(ep);
		return;
	}
	while (rb2_conn_ep_ready(ep, cds, 8) > 0)
		;                       /* the ready list does not wake a wait */
	rb2_conn_ep_wait(ep, spin_us, 10);
}

/* Wait out a send's -EAGAIN (no credit: a CREDIT frame wakes us) or
 * -ENOBUFS (our ring to the service is full: nothing wakes us when the
 * service makes room, so poll and let the others run). */
static void
send_wait(struct rb2_conn_ep *ep, int why)
{
	if (why == -EAGAIN) {
		idle(ep);
	} else {
		rb2_conn_ep_poll(ep);
		if (!busy_poll)
			sched_yield();
	}
}

/* Send all of @p len bytes at @p p as one message. */
static int
send_all(struct rb2_conn_ep *ep, int cd, const void *p, uint32_t len)
{
	int ret;

	while ((ret = rb2_conn_send(ep, cd, p, len)) == -EAGAIN || ret == -ENOBUFS)
		send_wait(ep, ret);
	return ret;
}

/* ---- the receiver ------------------------------------------------------- */

static int
receiver(struct rb2_conn_ep *ep, uint16_t port, int private_mem)
{
	size_t cap = 64u << 20;
	uint8_t *dst = private_mem ? malloc(cap) : rte_malloc("raasbench", cap, 64);
	uint64_t bytes = 0;
	int cd, len;

	if (dst == NULL) {
		fprintf(stderr, "recv: no memory for a %zu MiB buffer\n", cap >> 20);
		return 1;
	}
	memset(dst, 0, cap);
	printf("recv: listening on port %u (%s memory)\n", port, private_mem ? "private" :
	       "shared");
	fflush(stdout);
	while ((cd = rb2_conn_accept(ep, port)) == -EAGAIN)
		idle(ep);
	if (cd < 0) {
		fprintf(stderr, "recv: accept: %s\n", strerror(-cd));
		return 1;
	}
	for (;;) {
		len = rb2_conn_recv(ep, cd, dst, (uint32_t)cap);
		if (len == -EAGAIN || len == -EINPROGRESS) {
			idle(ep);           /* the same dst until done */
			continue;
		}
		if (len <= 0)
			break;
		if ((uint32_t)len == MARK_LEN) {
			if (send_all(ep, cd, &bytes, sizeof(bytes)) < 0)
				break;
			rb2_conn_flush(ep);
			continue;
		}
		bytes += (uint64_t)len;
	}
	printf("recv: %" PRIu64 " bytes, then %s\n", bytes, len == 0 ? "the end" : strerror(-len));
	rb2_conn_close(ep, cd);
	if (private_mem)
		free(dst);
	else
		rte_free(dst);
	return len == 0 ? 0 : 1;
}

/* ---- the sender --------------------------------------------------------- */

struct sender {
	struct rb2_conn_ep *ep;
	int cd;
	uint32_t size, chunk, nbuf;
	uint8_t *buf[MAX_BUFFERS];   /* shared memory, each message's */
	uint8_t busy[MAX_BUFFERS];
	uint32_t out;
	uint64_t peer_bytes;          /* what the receiver had at the last mark */
};

/* Reap lent buffers given back. @return the first failure, or 0. */
static int
reap(struct sender *s)
{
	struct rb2_conn_ref_done d[16];
	int n = rb2_conn_ref_done(s->ep, d, 16), err = 0;

	for (int k = 0; k < n; k++) {
		s->busy[d[k].cookie] = 0;
		s->out--;
		if (d[k].status != 0 && err == 0)
			err = d[k].status;
	}
	return err;
}

/* One round of @p mode for @p seconds. @return bytes/s the receiver took,
 * or a negative error. */
static double
run(struct sender *s, int mode, double seconds)
{
	double t0 = now_s(), t1;
	uint64_t sent = 0, before = s->peer_bytes;
	uint64_t got;
	int ret, len;

	while (now_s() - t0 < seconds) {
		if (mode == LENT) {
			uint32_t b = 0;

			if ((ret = reap(s)) < 0)
				return ret;
			while (b < s->nbuf && s->busy[b])
				b++;
			if (b == s->nbuf) {
				idle(s->ep);
				continue;
			}
			ret = rb2_conn_send_ref(s->ep, s->cd, s->buf[b], s->size, b);
			if (ret == -EAGAIN || ret == -ENOBUFS) {
				send_wait(s->ep, ret);
				continue;
			}
			if (ret < 0)
				return ret;
			if (ret == 1) {
				s->busy[b] = 1;
				s->out++;
			}
		} else {
			for (uint32_t off = 0; off < s->size; off += s->chunk) {
				ret = send_all(s->ep, s->cd, s->buf[0] + off,
					       RTE_MIN(s->chunk, s->size - off));
				if (ret < 0)
					return ret;
			}
		}
		sent += s->size;
	}
	/* The mark: answered once the receiver has had all before it. */
	while (s->out > 0) {
		if ((ret = reap(s)) < 0)
			return ret;
		if (s->out > 0)
			idle(s->ep);
	}
	if ((ret = send_all(s->ep, s->cd, "mark", MARK_LEN)) < 0)
		return ret;
	rb2_conn_flush(s->ep);
	while ((len = rb2_conn_recv(s->ep, s->cd, &got, sizeof(got))) == -EAGAIN)
		idle(s->ep);
	t1 = now_s();
	if (len != (int)sizeof(got))
		return len < 0 ? len : -EPROTO;
	s->peer_bytes = got;
	if (got - before != sent) {
		fprintf(stderr, "send: the receiver had %" PRIu64 " bytes of %" PRIu64 " sent\n",
			got - before, sent);
		return -EPROTO;
	}
	return (double)sent / (t1 - t0);
}

/* Every option's value (defaults here). */
static struct {
	unsigned int port;      /* 0: not given */
	unsigned int host;
	unsigned int size;
	unsigned int modes;     /* bit per mode */
	unsigned int rounds;
	double seconds;
	unsigned int nbuf;
	int private_mem;
	const char *json;
	unsigned int window, chunk;
	double connect_wait;
} opt = { .modes = 1u << LENT | 1u << COPIED, .rounds = 5, .seconds = 1,
	  .nbuf = 8, .window = 1u << 20 };

/* --designs LIST: lent and/or copied. */
static int
parse_designs(const char *prog, const char *arg, void *dst)
{
	return bench_parse_names(prog, "designs", arg, mode_name, NMODES, dst);
}

#define SYNOPSIS "[EAL args] -- recv --port P [--private]\n" \
	"       rb2-raasbench [EAL args] -- send --port P [--host H] --size BYTES [options]"

static struct bench_opt table[] = {
	{ .type = BENCH_TEXT, .help = "Large messages through rb2-raasd, lent "
	  "(rb2_conn_send_ref) against copied (rb2_conn_send, in chunks, by default the "
	  "largest a connection takes), in interleaved rounds: the service layer measured. "
	  "Both processes are secondaries of the service (--proc-type=secondary, its "
	  "--file-prefix), which sets the transport; the sender prints one JSON object." },
	{ .type = BENCH_TEXT, .help = "What every rb2 benchmark shares:" },
	{ "size", BENCH_UINT, &opt.size, 64, 64u << 20, .arg = "BYTES",
	  .help = "message size, a multiple of 64, at most 64 MiB" },
	{ "rounds", BENCH_UINT, &opt.rounds, 1, 50, .arg = "R",
	  .help = "rounds, every design run once in each (default 5)" },
	{ "seconds", BENCH_REAL, &opt.seconds, 1e-3, 3600, .arg = "S",
	  .help = "per round and design (default 1)" },
	{ "designs", BENCH_CALL, &opt.modes, .call = parse_designs, .arg = "LIST",
	  .was = "modes", .help = "lent,copied (default both)" },
	{ "json", BENCH_STR, &opt.json, .arg = "FILE",
	  .help = "the JSON object into FILE too (it is always printed on stdout)" },
	{ .type = BENCH_TEXT, .help = "Its own:" },
	{ "port", BENCH_UINT, &opt.port, 1, 65535, .arg = "P", .help = "the receiver's port" },
	{ "host", BENCH_UINT, &opt.host, 0, UINT32_MAX, .arg = "H",
	  .help = "the receiver's host (its service's --host-id; default 0, this one)" },
	{ "buffers", BENCH_UINT, &opt.nbuf, 1, MAX_BUFFERS, .arg = "K",
	  .help = "lent buffers in flight (default 8, at most " RTE_STR(MAX_BUFFERS) ")" },
	{ "private", BENCH_FLAG, &opt.private_mem,
	  .help = "receiver: READ into malloc()'d memory (through a bounce buffer) instead "
	  "of shared memory (in place)" },
	{ "spin-us", BENCH_UINT, &spin_us, 0, 1000000, .arg = "U",
	  .help = "wait for the service by polling U us, then sleeping on the endpoint's "
	  "doorbell (default 50)" },
	{ "busy-poll", BENCH_FLAG, &busy_poll,
	  .help = "poll without sleeping (for a core of each process's own)" },
	{ "window", BENCH_UINT, &opt.window, 64, 1u << 30, .arg = "BYTES",
	  .help = "each connection's receive window (default 1 MiB, a power of two): what "
	  "a copying sender may have in flight" },
	{ "chunk", BENCH_UINT, &opt.chunk, 0, 64u << 20, .arg = "BYTES",
	  .help = "copied: the largest message sent (a multiple of 64; default and at most "
	  "the largest a connection takes)" },
	{ "connect-wait", BENCH_REAL, &opt.connect_wait, 0, 3600, .arg = "S",
	  .help = "retry a refused connect for S seconds (the receiver may not listen yet)" },
	{ "help", BENCH_HELP, .help = "this text" },
	{ .type = BENCH_END },
};

/* One design's run in one round (bench_rounds_run()). */
struct sender_round {
	struct sender *s;
	int mode[NMODES];       /* variant -> mode */
};

static int
run_one(void *arg, unsigned int variant, unsigned int round, double *figure)
{
	struct sender_round *sr = arg;
	int m = sr->mode[variant];
	double v = run(sr->s, m, opt.seconds);

	RTE_SET_USED(round);
	if (v < 0) {
		fprintf(stderr, "rb2-raasbench: %s: %s\n", mode_name[m], strerror((int)-v));
		return -1;
	}
	*figure = v;
	return 0;
}

/* Everything after the EAL's start: @return the exit status. */
static int
raasbench_main(int argc, char **argv)
{
	double rate[NMODES][50];
	struct sender_round sr = { 0 };
	unsigned int nvariants = 0;
	int ret, port;
	const char *role;
	struct sender s = { .cd = -1 };
	struct rb2_conn_ep_params epp;
	struct rb2_conn_ep *ep;
	char name[RB2_CONN_SERVICE_NAMESIZE];
	json_t *doc;

	if (argc < 2 || (strcmp(argv[1], "send") != 0 && strcmp(argv[1], "recv") != 0)) {
		int help = argc >= 2 && strcmp(argv[1], "--help") == 0;

		if (!help)
			fprintf(stderr, "rb2-raasbench: the first argument after -- is the role, "
				"send or recv\n");
		bench_opts_usage(help ? stdout : stderr, "rb2-raasbench", SYNOPSIS, table);
		return help ? 0 : 2;
	}
	role = argv[1];
	argc--;
	argv++;
	if (bench_opts_parse("rb2-raasbench", SYNOPSIS, table, argc, argv) < 0)
		return 2;
	port = (int)opt.port;
	s.size = opt.size;
	s.nbuf = opt.nbuf;
	if (port <= 0 || port > 65535) {
		fprintf(stderr, "rb2-raasbench: --port 1..65535 is needed\n");
		return 2;
	}
	if (s.size % 64 != 0) {
		fprintf(stderr, "rb2-raasbench: --size %u: a multiple of 64 (a lent buffer is "
			"whole cache lines)\n", s.size);
		return 2;
	}
	if (role[0] == 's' && (s.size == 0 || opt.modes == 0)) {
		fprintf(stderr, "rb2-raasbench: send needs --size BYTES (a multiple of 64 up to "
			"64 MiB) and one design at least\n");
		return 2;
	}
	snprintf(name, sizeof(name), "bench%c%d", role[0], (int)getpid());
	rb2_conn_ep_params_init(&epp);
	epp.window = opt.window;
	ep = rb2_conn_service_join(name, &epp, 10000);
	if (ep == NULL) {
		fprintf(stderr, "rb2-raasbench: cannot join the service: %s\n",
			rte_strerror(rte_errno));
		return 1;
	}
	if (role[0] == 'r') {
		ret = rb2_conn_listen(ep, (uint16_t)port, 1);
		if (ret < 0)
			fprintf(stderr, "rb2-raasbench: listen on %d: %s\n", port, strerror(-ret));
		ret = ret < 0 ? 1 : receiver(ep, (uint16_t)port, opt.private_mem);
		goto out;
	}
	/* Every message lent: the threshold is this benchmark's to choose. */
	struct rb2_conn_ref_params rp;

	rb2_conn_ref_params_init(&rp);
	rp.ref_min = 1;
	rp.max_refs = MAX_BUFFERS;
	s.ep = ep;
	ret = rb2_conn_ref_setup(ep, &rp);
	for (uint32_t b = 0; ret == 0 && b < s.nbuf; b++) {
		s.buf[b] = rte_malloc("raasbench", s.size, 64);
		if (s.buf[b] == NULL)
			ret = -ENOMEM;
		else
			memset(s.buf[b], (int)b + 1, s.size);   /* written: no zero page */
	}
	for (double until = now_s() + opt.connect_wait;;) {
		s.cd = ret == 0 ? rb2_conn_connect_host(ep, opt.host, (uint16_t)port) : ret;
		if (s.cd < 0) {
			fprintf(stderr, "rb2-raasbench: set-up: %s\n", strerror(-s.cd));
			ret = 1;
			goto out;
		}
		while ((ret = rb2_conn_status(ep, s.cd)) == -EINPROGRESS || ret == -EAGAIN)
			idle(ep);
		if (ret != -ECONNREFUSED || now_s() > until)
			break;
		rb2_conn_close(ep, s.cd);   /* nobody listens yet: again */
		usleep(100000);
		ret = 0;
	}
	s.chunk = rb2_conn_max_msg(ep) / 64 * 64;
	if (opt.chunk != 0 && opt.chunk % 64 == 0 && opt.chunk < s.chunk)
		s.chunk = opt.chunk;
	if (ret != 0) {
		fprintf(stderr, "rb2-raasbench: connect: %s (%s)\n", strerror(-ret),
			rb2_conn_why(ep, s.cd));
		ret = 1;
		goto out;
	}
	/* Each design once a round, in turns. */
	sr.s = &s;
	for (int m = 0; m < NMODES; m++)
		if (opt.modes & 1u << m)
			sr.mode[nvariants++] = m;
	{
		double fig[NMODES * 50];

		if (bench_rounds_run("rb2-raasbench", opt.rounds, nvariants, run_one, &sr,
				     fig) < 0) {
			ret = 1;
			goto out;
		}
		for (unsigned int v = 0; v < nvariants; v++)
			memcpy(rate[sr.mode[v]], &fig[v * opt.rounds],
			       opt.rounds * sizeof(double));
	}
	doc = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:o, s:b, s:I}",
			"tool", "rb2-raasbench", "layer", "service", "bench", "raas-lend",
			"size", (json_int_t)s.size, "chunk", (json_int_t)s.chunk,
			"buffers", (json_int_t)s.nbuf, "host", (json_int_t)opt.host,
			"rounds", (json_int_t)opt.rounds, "seconds", bench_json_real(opt.seconds),
			"busy_poll", busy_poll, "window", (json_int_t)opt.window);
	for (int m = 0; m < NMODES; m++) {
		json_t *a = json_array();
		char key[32];

		if (!(opt.modes & 1u << m)) {
			json_decref(a);
			continue;
		}
		for (unsigned int r = 0; r < opt.rounds; r++)
			json_array_append_new(a, bench_json_real(rate[m][r] / 1e6));
		snprintf(key, sizeof(key), "%s_MBps", mode_name[m]);
		json_object_set_new(doc, key, a);
		snprintf(key, sizeof(key), "%s_MBps_median", mode_name[m]);
		json_object_set_new(doc, key, bench_json_real(bench_median(rate[m], opt.rounds) / 1e6));
	}
	/* Lent against copied in the same round, then the median of those. */
	if ((opt.modes & 1u << LENT) && (opt.modes & 1u << COPIED))
		json_object_set_new(doc, "lent_over_copied_median", bench_json_real(
			bench_median_ratio(rate[LENT], rate[COPIED], opt.rounds)));
	if (bench_json_emit(doc, opt.json, "rb2-raasbench") < 0) {
		ret = 1;
		goto out;
	}
	ret = 0;
out:
	if (s.cd >= 0 && role[0] == 's') {
		rb2_conn_shutdown(ep, s.cd);
		rb2_conn_flush(ep);
	}
	for (uint32_t b = 0; b < s.nbuf; b++)
		rte_free(s.buf[b]);
	rb2_conn_ep_destroy(ep);
	return ret;
}

/* The usage with the name it is installed under. */
static void
app_usage(FILE *f)
{
	bench_opts_usage(f, "rb2-raasbench", SYNOPSIS, table);
}

int
main(int argc, char **argv)
{
	struct option *lo = bench_opts_long(table);
	const struct rb2_app app = { .name = "rb2-raasbench", .usage = app_usage, .options = lo };
	int ret = rb2_app_run(&app, argc, argv, raasbench_main);

	free(lo);
	return ret;
}
