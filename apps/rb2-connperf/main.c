/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * rb2-connperf: connections over RB² channels, measured (RaaS's Fig. 6 and
 * the cost of the connection layer), between two lcores of one process.
 *
 *   rb2-connperf [EAL args] -- --designs shared,perconn --conns 1000 --size 64
 *   rb2-connperf [EAL args] -- --designs shared,bare --lat 100000
 *
 * Modes, measured in interleaved rounds of one run (this machine's rates
 * swing with core placement; only ratios within a run mean anything):
 *   shared   every connection over one channel pair (lib/conn)
 *   perconn  one channel pair, and endpoint, per connection
 *   bare     one RB² channel, no connection layer (--conns 1)
 *   lent     as shared, every message lent from the sender's memory and
 *            READ by the receiver (rb2_conn_ref.h), not copied
 * Prints one JSON object on stdout.
 */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>

#include <rb2_conn.h>
#include <rb2_conn_ref.h>
#include <rb2_lcore.h>
#include <rb2_mr_cache.h>

#include "../common/app_opt.h"
#include "../common/bench.h"

enum mode { SHARED, PERCONN, BARE, LENT, NMODES };
static const char *const mode_name[NMODES] = { "shared", "perconn", "bare", "lent" };

/* Buffers a lending sender cycles through (each lent until given back). */
#define LENT_BUFS 64

#define MAX_ROUNDS 50

#define MAX_CONNS_LIST 8
/* Per-connection channel pairs take 4 memzones each (2 channels x 2
 * halves); DPDK's RTE_MAX_MEMZONE (2560 here) caps them. */
#define PERCONN_MAX 600

struct opts {
	unsigned int modes;     /* bit per enum mode */
	unsigned int conns[MAX_CONNS_LIST];
	unsigned int n_conns;
	uint32_t size;
	double seconds;         /* per round */
	unsigned int rounds;
	uint32_t window;
	unsigned int lat;       /* ping-pong round trips (0: throughput) */
	int one_lcore;          /* --lat with both ends on this lcore, in turns */
	int one_way;            /* --lat: stamp both ends, split the round trip */
	unsigned int wake;      /* blocking-mode wake-ups (0: not that test) */
	const char *transport;  /* rb2_xport_open_spec() */
	const char *json;       /* the JSON object into this file too, or NULL */
	int mr_cost;            /* registration against copying, and the cache */
	int zc;                 /* receive with rb2_conn_recv_zc() */
	unsigned int ring_scale; /* forward rings' slots x this (0: shared ones
				  * grow with their connections) */
	unsigned int spin_us;   /* blocking mode: poll this long before sleeping */
	const char *preset;     /* rb2_chan_params_preset(), or NULL: slots sized to --size */
};

/* One design under test, set up once, run in every round. */
struct variant {
	enum mode mode;
	unsigned int conns;
	unsigned int neps;
	struct rb2_conn_ep **ea, **eb;   /* a sends, b receives */
	int *ca, *cb;
	struct rb2_tx *tx, *txr;         /* bare: a->b, and b->a for --lat */
	struct rb2_rx *rx, *rxr;
	/* lent: the sender's buffers, and those not lent now (kept across
	 * rounds: a buffer still lent when a round ends comes back in the
	 * next one). */
	uint8_t *lbufs;
	unsigned int lfree[LENT_BUFS], nlfree;
	double result[MAX_ROUNDS];       /* Mmsg/s, or p50 round trip ns */
	double p99[MAX_ROUNDS];
	/* --one-way: p50s of the request's flight, the echo's turnaround and
	 * the reply's flight, ns, per round. */
	double one_way[3][MAX_ROUNDS];
};

struct bench {
	struct opts o;
	struct variant *v;               /* the one running */
	struct variant vs[NMODES * MAX_CONNS_LIST];
	unsigned int nv;
	_Atomic int stop;
	int err;
	/* --one-way: TSC stamps of every round trip i: the pinger's flush done
	 * (sent) and its receive back (back), the echo's receive (in) and its
	 * flush done (out). The echo counts its own messages (n_in): one is
	 * outstanding at a time, so its k-th is round trip k. */
	uint64_t *sent, *back, *in, *out;
	unsigned int n_in;
};

/* --designs LIST: the connection designs, a bit each. */
static int
parse_designs(const char *prog, const char *arg, void *dst)
{
	return bench_parse_names(prog, "designs", arg, mode_name, NMODES, dst);
}

/* --conns N[,N...]: the connection counts, a variant each. */
static int
parse_conns(const char *prog, const char *arg, void *dst)
{
	struct opts *o = dst;
	char list[128], *save = NULL;

	snprintf(list, sizeof(list), "%s", arg);
	o->n_conns = 0;
	for (char *tok = strtok_r(list, ",", &save); tok != NULL;
	     tok = strtok_r(NULL, ",", &save)) {
		uint64_t n;

		if (o->n_conns == MAX_CONNS_LIST || app_parse_u64(tok, &n) < 0 || n == 0 ||
		    n > RB2_CONN_MAX) {
			fprintf(stderr, "%s: --conns %s: up to %d counts, each 1..%u\n", prog, arg,
				MAX_CONNS_LIST, RB2_CONN_MAX);
			return -1;
		}
		o->conns[o->n_conns++] = (unsigned int)n;
	}
	return 0;
}

static struct opts opt = {
	.modes = 1u << SHARED | 1u << PERCONN, .conns = {1}, .n_conns = 1, .size = 64,
	.seconds = 1, .rounds = 5, .transport = "shm",
};

#define SYNOPSIS "[EAL args] -- [options]"

/* Every option: its range, its destination and its help (bench.h). A window
 * or a count of round trips of 0 is refused, not taken as "the default". */
static struct bench_opt table[] = {
	{ .type = BENCH_TEXT, .help = "Streams messages over connections between two lcores "
	  "(EAL args must give two, e.g. -l 0-1) and prints one JSON object: the connection "
	  "layer measured, RaaS's Fig. 6 (designs of connections over channels)." },
	{ .type = BENCH_TEXT, .help = "What every rb2 benchmark shares:" },
	{ "transport", BENCH_STR, &opt.transport, .arg = "SPEC",
	  .help = "the channels' transport (default shm; verbs,dev=rxe0: QPs connected within "
	  "this process)" },
	{ "size", BENCH_UINT, &opt.size, 8, 1u << 24, .arg = "BYTES",
	  .help = "message size (default 64)" },
	{ "rounds", BENCH_UINT, &opt.rounds, 1, MAX_ROUNDS, .arg = "R",
	  .help = "rounds, every design run once in each (default 5, max " RTE_STR(MAX_ROUNDS) ")" },
	{ "seconds", BENCH_REAL, &opt.seconds, 1e-3, 3600, .arg = "S",
	  .help = "measured time per round and design (default 1)" },
	{ "designs", BENCH_CALL, &opt.modes, .call = parse_designs, .arg = "LIST", .was = "modes",
	  .help = "comma-separated, run in interleaved rounds (default shared,perconn): shared: "
	  "every connection over one channel pair; perconn: a channel pair per connection; "
	  "bare: one RB2 channel without the connection layer (--conns 1 only); lent: as "
	  "shared, each message lent from one of " RTE_STR(LENT_BUFS) " sender buffers and "
	  "READ into the receiver's (a transport that READs: loop, verbs)" },
	{ "json", BENCH_STR, &opt.json, .arg = "FILE",
	  .help = "the JSON object into FILE too (it is always printed on stdout)" },
	{ .type = BENCH_TEXT, .help = "Its own:" },
	{ "conns", BENCH_CALL, &opt, .call = parse_conns, .arg = "N[,N...]",
	  .help = "connections (default 1); each count is a variant of each design, all in "
	  "the same interleaved rounds (perconn is left out above " RTE_STR(PERCONN_MAX)
	  ": DPDK's memzone limit)" },
	{ "window", BENCH_UINT, &opt.window, 64, 1u << 30, .arg = "BYTES",
	  .help = "each connection's receive window (default: 64 KiB, or two messages' "
	  "worth, whichever is more)" },
	{ "lat", BENCH_UINT, &opt.lat, 1, 1u << 30, .arg = "N",
	  .help = "ping-pong N round trips on connection 0 per round (flushing each "
	  "message) instead of streaming" },
	{ "one-way", BENCH_FLAG, &opt.one_way,
	  .help = "with --lat: split each round trip at the echo, from TSC stamps taken on "
	  "both lcores (the TSC must be invariant and in step across cores, as on current "
	  "x86 and KVM): the request's flight (the pinger's flush to the echo's receive), "
	  "the echo's turnaround and the reply's flight, p50s per variant (four stamps a "
	  "round trip: each adds a TSC read, 12 ns on some VMs)" },
	{ "one-lcore", BENCH_FLAG, &opt.one_lcore,
	  .help = "with --lat: both ends on this lcore, in turns (send, receive, send back, "
	  "receive back): no line crosses a core, so a round trip is the code's own cost, "
	  "which the cross-core figure holds beside the cost of moving lines "
	  "(doc/eval/conn.md, the layer's cost)" },
	{ "wake", BENCH_UINT, &opt.wake, 1, 1u << 30, .arg = "N",
	  .help = "blocking mode (shared, 1 connection): the reader idles in "
	  "rb2_conn_ep_wait() for a second (its CPU use is reported), then is woken N "
	  "times, 1 ms apart (the wake-up latency is reported)" },
	{ "spin-us", BENCH_UINT, &opt.spin_us, 0, 1000000, .arg = "U",
	  .help = "blocking mode: poll U us before sleeping (default 0)" },
	{ "zc", BENCH_FLAG, &opt.zc,
	  .help = "receive in place (rb2_conn_recv_zc, reading each line, then "
	  "rb2_conn_release) instead of copying out" },
	{ "preset", BENCH_STR, &opt.preset, .arg = "NAME",
	  .help = "the channels as rb2_chan_params_preset() makes them (" RB2_CHAN_PRESET_NAMES
	  ": rb2's 64 B slots with the length in the slot, as rb2-kv and rb2-raasd use) "
	  "instead of one slot per message" },
	{ "ring-scale", BENCH_UINT, &opt.ring_scale, 1, 1024, .arg = "S",
	  .help = "every forward ring (bare, shared, per connection) has S times the slots "
	  "(default: shared rings grow with their connections, up to 16 times; others 1 "
	  "time)" },
	{ "mr-cost", BENCH_FLAG, &opt.mr_cost,
	  .help = "on a transport that registers memory (verbs): the cost of registering a "
	  "buffer (and deregistering it) against copying it, 4 KiB to 64 MiB, the size where "
	  "they cross (RaaS's copy/register threshold), and the registration cache's hit "
	  "rate and cost on a repeating workload" },
	{ "help", BENCH_HELP, .help = "this text" },
	{ .type = BENCH_END },
};

static int
parse(int argc, char **argv, struct opts *o)
{
	if (bench_opts_parse("rb2-connperf", SYNOPSIS, table, argc, argv) < 0)
		return -1;
	*o = opt;
	if (o->size < 8 || o->size > (1u << 24) || o->seconds <= 0 || o->modes == 0 ||
	    o->rounds == 0 || o->rounds > MAX_ROUNDS) {
		fprintf(stderr, "rb2-connperf: --size must be 8 B..16 MiB, --seconds > 0, "
			"--rounds 1..%d, and one design at least\n", MAX_ROUNDS);
		return -1;
	}
	if ((o->one_lcore || o->one_way) && o->lat == 0) {
		fprintf(stderr, "rb2-connperf: --one-lcore and --one-way time --lat's round trips: "
			"give --lat N\n");
		return -1;
	}
	if (o->one_lcore && o->one_way) {
		fprintf(stderr, "rb2-connperf: --one-way splits a round trip between two lcores: "
			"drop --one-lcore\n");
		return -1;
	}
	if ((o->modes & 1u << LENT) && o->lat) {
		fprintf(stderr, "rb2-connperf: --designs lent streams (its round trip would be a copy's): "
			"drop --lat, or lent\n");
		return -1;
	}
	if (o->preset != NULL) {
		struct rb2_chan_params p;

		rb2_chan_params_init(&p);
		if (rb2_chan_params_preset(&p, o->preset) < 0) {
			fprintf(stderr, "rb2-connperf: --preset %s: not one of %s\n", o->preset,
				RB2_CHAN_PRESET_NAMES);
			return -1;
		}
	}
	if (o->window == 0)
		o->window = RTE_MAX(65536u, rte_align32pow2(2 * (8 + RTE_ALIGN_CEIL(o->size, 8u))));
	return 0;
}

/* A channel that carries messages of @p len bytes: one slot each up to
 * 1 KiB (packed, 8-byte aligned, where @p len is not whole cache lines);
 * 64-byte slots and room for two beyond; or --preset's channel. A shared
 * channel has @p scale times the slots (its connections' rings would have
 * had more). Bare and connection channels are alike: a connection's
 * frames in a run carry no header (the ring marks them, lib/conn), and the
 * first of a run takes one slot more. */
static void
chan_params(struct rb2_chan_params *p, uint32_t len, unsigned int scale)
{
	rb2_chan_params_init(p);
	if (opt.preset != NULL) {          /* checked by parse() */
		rb2_chan_params_preset(p, opt.preset);
	} else if (len <= 1024) {
		p->slot_size = RTE_ALIGN_CEIL(len, 8u);
		if (p->slot_size % 64 != 0)
			p->flags |= RB2_CHAN_F_UNALIGNED;
	} else {
		p->slot_size = 64;
		p->slots = RTE_MAX(1024u, rte_align32pow2(4 * (len / 64 + 1)));
	}
	p->slots *= scale;
}

static int
make_pair(const char *name, struct rb2_xport *xp, uint32_t len, unsigned int scale,
	  struct rb2_tx **tx, struct rb2_rx **rx)
{
	struct rb2_chan_params p;

	chan_params(&p, len, scale);
	*tx = rb2_tx_create(name, xp, &p);
	*rx = rb2_rx_create(name, xp, &p);
	if (*tx == NULL || *rx == NULL || rb2_chan_pair(*tx, *rx) != 0) {
		fprintf(stderr, "rb2-connperf: channel %s: %s (the log above says why: "
			"memory (-m), or memzones)\n", name, rte_strerror(rte_errno));
		return -1;
	}
	return 0;
}

static int
setup(const struct opts *o, struct variant *v, unsigned int id, struct rb2_xport *xp)
{
	struct rb2_conn_ep_params pp;
	char name[32];

	if (v->mode == BARE) {
		snprintf(name, sizeof(name), "v%uf", id);
		if (make_pair(name, xp, o->size, RTE_MAX(o->ring_scale, 1u), &v->tx, &v->rx) < 0)
			return -1;
		snprintf(name, sizeof(name), "v%ur", id);
		return o->lat ? make_pair(name, xp, o->size, 1, &v->txr, &v->rxr) : 0;
	}
	v->neps = v->mode == PERCONN ? v->conns : 1;
	v->ea = calloc(v->neps, sizeof(*v->ea));
	v->eb = calloc(v->neps, sizeof(*v->eb));
	v->ca = calloc(v->conns, sizeof(int));
	v->cb = calloc(v->conns, sizeof(int));
	rb2_conn_ep_params_init(&pp);
	pp.window = o->window;
	pp.max_msg = o->size;
	pp.max_conns = RTE_MAX(v->conns, 16u);
	pp.backlog = pp.max_conns;
	for (unsigned int e = 0; e < v->neps; e++) {
		struct rb2_tx *t1, *t2;
		struct rb2_rx *r1, *r2;
		snprintf(name, sizeof(name), "v%uf%u", id, e);
		/* A shared ring grows with its connections, to 16 times
		 * (1/16 of what per-connection rings would take at 256). */
		if (make_pair(name, xp, o->size, o->ring_scale ? o->ring_scale :
			      v->mode == SHARED ? rte_align32pow2(RTE_MIN(v->conns, 16u)) : 1,
			      &t1, &r1) < 0)
			return -1;
		snprintf(name, sizeof(name), "v%ur%u", id, e);
		/* The return direction carries credits (and --lat's replies);
		 * an endpoint's largest message is the same both ways. */
		if (make_pair(name, xp, o->lat || o->size > 1024 ? o->size : 64, 1,
			      &t2, &r2) < 0)
			return -1;
		snprintf(name, sizeof(name), "v%ua%u", id, e);
		v->ea[e] = rb2_conn_ep_create(name, t1, r2, &pp);
		snprintf(name, sizeof(name), "v%ub%u", id, e);
		v->eb[e] = rb2_conn_ep_create(name, t2, r1, &pp);
		if (v->ea[e] == NULL || v->eb[e] == NULL) {
			fprintf(stderr, "rb2-connperf: endpoint: %s\n", rte_strerror(rte_errno));
			return -1;
		}
		if (rb2_conn_listen(v->eb[e], 1, 0) < 0)
			return -1;
	}
	if (v->mode == LENT) {
		struct rb2_conn_ref_params rp;

		rb2_conn_ref_params_init(&rp);
		rp.ref_min = 0;           /* every message */
		rp.max_refs = LENT_BUFS;
		v->lbufs = malloc((size_t)LENT_BUFS * o->size);
		if (v->lbufs == NULL || rb2_conn_ref_setup(v->ea[0], &rp) < 0)
			return -1;
		/* Real pages: untouched calloc memory reads as the one zero
		 * page, which flatters every copy out of it (by 2x, seen). */
		memset(v->lbufs, 0x5a, (size_t)LENT_BUFS * o->size);
		for (unsigned int i = 0; i < LENT_BUFS; i++)
			v->lfree[v->nlfree++] = i;
	}
	for (unsigned int i = 0; i < v->conns; i++) {
		unsigned int e = v->mode == PERCONN ? i : 0;

		v->ca[i] = rb2_conn_connect(v->ea[e], 1);
		if (v->ca[i] < 0)
			return -1;
		while ((v->cb[i] = rb2_conn_accept(v->eb[e], 1)) == -EAGAIN)
			rb2_conn_ep_poll(v->ea[e]);
		if (v->cb[i] < 0)
			return -1;
		while (rb2_conn_status(v->ea[e], v->ca[i]) == -EINPROGRESS)
			rb2_conn_ep_poll(v->ea[e]);
	}
	return 0;
}

/* ---- throughput --------------------------------------------------------- */

/* The lending sender: LENT_BUFS buffers, each lent until given back. */
static int
lend(struct bench *b)
{
	const struct opts *o = &b->o;
	struct variant *v = b->v;
	struct rb2_conn_ep *ep = v->ea[0];
	struct rb2_conn_ref_done d[LENT_BUFS];
	unsigned int next = 0;

	while (!atomic_load_explicit(&b->stop, memory_order_relaxed)) {
		int n = rb2_conn_ref_done(ep, d, LENT_BUFS);

		for (int i = 0; i < n; i++) {
			if (d[i].status != 0) {
				b->err = d[i].status;
				return 0;
			}
			v->lfree[v->nlfree++] = (unsigned int)d[i].cookie;
		}
		while (v->nlfree > 0) {
			unsigned int k = v->lfree[v->nlfree - 1];
			int ret = rb2_conn_send_ref(ep, v->ca[next], v->lbufs + (size_t)k * o->size,
						    o->size, k);

			if (ret == -EAGAIN || ret == -ENOBUFS)
				break;
			if (ret != 1) {
				b->err = ret < 0 ? ret : -ENOTSUP;   /* copied: no READ here */
				return 0;
			}
			v->nlfree--;
			next = (next + 1) % v->conns;
		}
		rb2_conn_ep_poll(ep);
	}
	return 0;
}

/* An application's buffer: zeroed, on a line of its own, as any dataplane
 * allocates one. malloc()'s 16-byte alignment let the address (which moves
 * with the length of argv and the environment) decide whether a 64 B copy
 * stores one cache line or two: 15% of the 64 B rate, run to run. */
static uint8_t *
app_buf(uint32_t size)
{
	size_t len = RTE_ALIGN_CEIL((size_t)size, RTE_CACHE_LINE_SIZE);
	uint8_t *p = aligned_alloc(RTE_CACHE_LINE_SIZE, len);

	if (p != NULL)
		memset(p, 0, len);
	return p;
}

static int
sender(void *arg)
{
	struct bench *b = arg;
	const struct opts *o = &b->o;
	struct variant *v = b->v;
	uint8_t *buf;

	if (v->mode == LENT)
		return lend(b);
	buf = app_buf(o->size);
	if (buf == NULL) {
		b->err = -ENOMEM;
		return 0;
	}
	memset(buf, 0x5a, o->size);        /* real pages, as the lent buffers */
	while (!atomic_load_explicit(&b->stop, memory_order_relaxed)) {
		if (v->mode == BARE) {
			for (int k = 0; k < 32 && rb2_tx_send(v->tx, buf, o->size) == 0; k++)
				;
			rb2_tx_flush(v->tx);
			continue;
		}
		/* Up to 32 messages a connection per pass, then progress. */
		for (unsigned int i = 0; i < v->conns; i++) {
			struct rb2_conn_ep *ep = v->ea[v->mode == SHARED ? 0 : i];
			int ret = 0;

			for (int k = 0; k < 32 && ret == 0; k++)
				ret = rb2_conn_send(ep, v->ca[i], buf, o->size);
			/* -ENOBUFS: the shared ring is full, for every
			 * connection: on to the poll. */
			if (ret == -ENOBUFS && v->mode == SHARED)
				break;
			if (ret < 0 && ret != -EAGAIN && ret != -ENOBUFS) {
				b->err = ret;
				goto out;
			}
		}
		for (unsigned int e = 0; e < v->neps; e++)
			rb2_conn_ep_poll(v->ea[e]);
	}
out:
	free(buf);
	return 0;
}

/* Read a message in place as an application would (one load a line). */
static inline void
touch(const void *p, uint32_t len)
{
	const volatile uint8_t *b = p;

	for (uint32_t i = 0; i < len; i += 64)
		(void)b[i];
}

/* The receiver's loop on the main lcore: count what arrives. */
static uint64_t
receive(struct bench *b, uint64_t until, uint8_t *buf)
{
	const struct opts *o = &b->o;
	struct variant *v = b->v;
	uint64_t n = 0;
	int ready[64];

	while (rte_rdtsc() < until) {
		if (v->mode == BARE) {
			while (rb2_rx_recv(v->rx, buf, o->size) > 0)
				n++;
			continue;
		}
		if (v->mode == LENT) {
			/* A READ in flight is finished by calling again
			 * (the ready list hands a connection out once). */
			for (unsigned int i = 0; i < v->conns; i++) {
				int ret, k = 0;

				while (k < 32 && ((ret = rb2_conn_recv(v->eb[0], v->cb[i], buf,
								       o->size)) > 0 ||
						  ret == -EINPROGRESS))
					k += ret > 0;
				n += (uint64_t)k;
			}
			rb2_conn_ep_poll(v->eb[0]);
			continue;
		}
		for (unsigned int e = 0; e < v->neps; e++) {
			int k = rb2_conn_ep_ready(v->eb[e], ready, RTE_DIM(ready));

			for (int j = 0; j < k; j++) {
				const void *view;

				if (!o->zc) {
					while (rb2_conn_recv(v->eb[e], ready[j], buf, o->size) > 0)
						n++;
					continue;
				}
				/* Zero copy: read in place, then release. */
				while (rb2_conn_recv_zc(v->eb[e], ready[j], &view) > 0) {
					touch(view, o->size);
					rb2_conn_release(v->eb[e], ready[j], 1);
					n++;
				}
			}
		}
	}
	return n;
}

/* ---- latency ------------------------------------------------------------ */

/*
 * --one-way: the echo's stamps of the k-th message it answered (@p t_in:
 * taken as its receive returned), in its own arrays. Its count stays in a
 * register until it stops: a counter in struct bench would share a line
 * with what the pinger reads, and move it between the cores every message.
 */
static inline void
stamp_echo(uint64_t *in, uint64_t *out, unsigned int *k, unsigned int cap, uint64_t t_in)
{
	if (*k < cap) {
		in[*k] = t_in;
		out[*k] = rte_rdtsc();
	}
	++*k;
}

static int
echo(void *arg)
{
	struct bench *b = arg;
	const struct opts *o = &b->o;
	struct variant *v = b->v;
	uint8_t *buf = app_buf(o->size);
	uint64_t *in = b->in, *out = b->out;
	unsigned int n_in = 0, cap = o->lat + o->lat / 10;
	int len;

	while (!atomic_load_explicit(&b->stop, memory_order_relaxed)) {
		if (v->mode == BARE) {
			if (rb2_rx_recv(v->rx, buf, o->size) > 0) {
				uint64_t t_in = o->one_way ? rte_rdtsc() : 0;

				while (rb2_tx_send(v->txr, buf, o->size) == -ENOBUFS)
					;
				rb2_tx_flush(v->txr);
				if (o->one_way)
					stamp_echo(in, out, &n_in, cap, t_in);
			}
			continue;
		}
		len = rb2_conn_recv(v->eb[0], v->cb[0], buf, o->size);
		if (len > 0) {
			uint64_t t_in = o->one_way ? rte_rdtsc() : 0;
			int ret;

			while ((ret = rb2_conn_send(v->eb[0], v->cb[0], buf, (uint32_t)len)) == -EAGAIN ||
			       ret == -ENOBUFS)
				;
			rb2_conn_flush(v->eb[0]);
			if (o->one_way)
				stamp_echo(in, out, &n_in, cap, t_in);
		}
	}
	b->n_in = n_in;
	free(buf);
	return 0;
}

static int
cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, c = *(const uint64_t *)y;

	return a < c ? -1 : a > c;
}

/*
 * --one-lcore: one round trip with both ends on this lcore, in turns. On
 * shm each receive finds its message there (the send flushed it), so
 * nothing waits and this is the sends', receives' and flushes' own cost; a
 * transport whose WRITEs land later (verbs) is polled until they have.
 * @return the length that came back, or a negative errno.
 */
static int
turn_trip(struct variant *v, uint8_t *buf, uint32_t size)
{
	int ret;

	if (v->mode == BARE) {
		if ((ret = rb2_tx_send(v->tx, buf, size)) < 0 || (ret = rb2_tx_flush(v->tx)) < 0)
			return ret;
		while ((ret = rb2_rx_recv(v->rx, buf, size)) == -EAGAIN)
			;
		if (ret < 0 || (ret = rb2_tx_send(v->txr, buf, size)) < 0 ||
		    (ret = rb2_tx_flush(v->txr)) < 0)
			return ret;
		while ((ret = rb2_rx_recv(v->rxr, buf, size)) == -EAGAIN)
			;
		return ret;
	}
	if ((ret = rb2_conn_send(v->ea[0], v->ca[0], buf, size)) < 0 ||
	    (ret = rb2_conn_flush(v->ea[0])) < 0)
		return ret;
	while ((ret = rb2_conn_recv(v->eb[0], v->cb[0], buf, size)) == -EAGAIN)
		;
	if (ret <= 0 || (ret = rb2_conn_send(v->eb[0], v->cb[0], buf, (uint32_t)ret)) < 0 ||
	    (ret = rb2_conn_flush(v->eb[0])) < 0)
		return ret < 0 ? ret : -ECONNRESET;
	while ((ret = rb2_conn_recv(v->ea[0], v->ca[0], buf, size)) == -EAGAIN)
		;
	return ret;
}

/* Round trips on connection 0 (or the bare pair); sorted into @p rtt. */
static int
pingpong(struct bench *b, uint8_t *buf, uint64_t *rtt)
{
	const struct opts *o = &b->o;
	struct variant *v = b->v;
	uint64_t *sent = b->sent, *back = b->back;

	for (unsigned int i = 0; i < o->lat + o->lat / 10; i++) {
		uint64_t t0 = rte_rdtsc();
		int ret;

		if (o->one_lcore) {
			ret = turn_trip(v, buf, o->size);
		} else if (v->mode == BARE) {
			while (rb2_tx_send(v->tx, buf, o->size) == -ENOBUFS)
				;
			rb2_tx_flush(v->tx);
			if (o->one_way)
				sent[i] = rte_rdtsc();
			while ((ret = rb2_rx_recv(v->rxr, buf, o->size)) == -EAGAIN)
				;
		} else {
			while ((ret = rb2_conn_send(v->ea[0], v->ca[0], buf, o->size)) == -EAGAIN ||
			       ret == -ENOBUFS)
				;
			if (ret == 0) {
				rb2_conn_flush(v->ea[0]);
				if (o->one_way)
					sent[i] = rte_rdtsc();
				do
					ret = rb2_conn_recv(v->ea[0], v->ca[0], buf, o->size);
				while (ret == -EAGAIN);
			}
		}
		if (ret < 0) {
			fprintf(stderr, "rb2-connperf: round trip %u: %s\n", i, strerror(-ret));
			return -1;
		}
		if (o->one_lcore && (uint32_t)ret != o->size) {
			fprintf(stderr, "rb2-connperf: round trip %u: %d bytes came back, not %u\n",
				i, ret, o->size);
			return -1;
		}
		if (o->one_way)
			back[i] = rte_rdtsc();
		if (i >= o->lat / 10)           /* the first tenth warms up */
			rtt[i - o->lat / 10] = rte_rdtsc() - t0;
	}
	qsort(rtt, o->lat, sizeof(*rtt), cmp_u64);
	return 0;
}

/* ---- blocking mode ------------------------------------------------------ */

static double
thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The peer, on the worker lcore: a message every millisecond, carrying
 * the TSC at its send. */
static int
waker(void *arg)
{
	struct bench *b = arg;
	struct variant *v = b->v;
	struct timespec gap = { .tv_nsec = 1000 * 1000 };

	for (unsigned int i = 0; i < b->o.wake + 1 && !atomic_load(&b->stop); i++) {
		uint64_t t0;

		nanosleep(&gap, NULL);
		rb2_conn_ep_poll(v->ea[0]);      /* takes the sleep notice */
		t0 = rte_rdtsc();
		if (rb2_conn_send(v->ea[0], v->ca[0], &t0, sizeof(t0)) < 0 ||
		    rb2_conn_flush(v->ea[0]) < 0) {
			b->err = -EIO;
			return -1;
		}
	}
	return 0;
}

static int
run_wake(struct bench *b, unsigned int worker)
{
	json_t *doc;
	struct variant *v = &b->vs[0];
	uint64_t *lat = calloc(b->o.wake + 1, sizeof(*lat));
	double ns = 1e9 / (double)rte_get_tsc_hz(), cpu, wall;
	struct rb2_conn_ep_stats st;
	struct timespec w0, w1;
	unsigned int got = 0;
	uint64_t t0;

	/* Idle: nobody sends for a second. */
	clock_gettime(CLOCK_MONOTONIC, &w0);
	cpu = thread_cpu_s();
	while (rb2_conn_ep_wait(v->eb[0], b->o.spin_us, 1000) > 0)
		;
	cpu = thread_cpu_s() - cpu;
	clock_gettime(CLOCK_MONOTONIC, &w1);
	wall = (double)(w1.tv_sec - w0.tv_sec) + (double)(w1.tv_nsec - w0.tv_nsec) / 1e9;
	/* Woken N times (the first message warms up). */
	b->v = v;
	rb2_lcore_launch(waker, b, worker);
	while (got < b->o.wake + 1) {
		int ret = rb2_conn_ep_wait(v->eb[0], b->o.spin_us, 2000);

		if (ret <= 0) {
			fprintf(stderr, "rb2-connperf: wake %u: %s\n", got,
				ret == 0 ? "no message in 2 s" : strerror(-ret));
			break;
		}
		while (rb2_conn_recv(v->eb[0], v->cb[0], &t0, sizeof(t0)) == sizeof(t0))
			lat[got++] = rte_rdtsc() - t0;
	}
	atomic_store(&b->stop, 1);
	rb2_lcore_wait(worker);
	if (got < b->o.wake + 1)
		return -1;
	qsort(lat + 1, b->o.wake, sizeof(*lat), cmp_u64);
	rb2_conn_ep_stats_get(v->eb[0], &st);
	doc = json_pack("{s:s, s:s, s:s, s:I, s:o, s:o, s:I, s:o, s:o, s:o, s:I}",
			"tool", "rb2-connperf", "layer", "connection", "test", "blocking",
			"spin_us", (json_int_t)b->o.spin_us, "idle_seconds", bench_json_real(wall),
			"idle_cpu_percent", bench_json_real(100 * cpu / wall),
			"wakeups", (json_int_t)b->o.wake,
			"wake_ns_p50", bench_json_real((double)lat[1 + b->o.wake / 2] * ns),
			"wake_ns_p99", bench_json_real((double)lat[1 + (uint64_t)b->o.wake * 99 / 100] *
						       ns),
			"wake_ns_max", bench_json_real((double)lat[b->o.wake] * ns),
			"sleeps", (json_int_t)st.sleeps);
	free(lat);
	return bench_json_emit(doc, opt.json, "rb2-connperf");
}

/* ---- registering against copying ---------------------------------------- */

static int
run_mr_cost(struct rb2_xport *xp)
{
	json_t *doc, *sizes;
	uint64_t hz = rte_get_tsc_hz(), cross = 0;
	size_t max = 64u << 20;
	uint8_t *src = aligned_alloc(4096, max), *dst = aligned_alloc(4096, max);
	struct rb2_mr_cache_stats st;
	struct rb2_mr_cache *cache;

	struct rb2_xport_mr probe;

	if (src == NULL || dst == NULL)
		return -1;
	int ret = rb2_xport_mr_reg(xp, src, 4096, &probe);

	if (ret == -ENOTSUP) {
		fprintf(stderr, "rb2-connperf: --mr-cost needs a transport that registers "
			"application memory (--transport verbs,...); %s does not\n",
			rb2_xport_name(xp));
		return -1;
	}
	if (ret < 0) {
		fprintf(stderr, "rb2-connperf: registering 4 KiB on %s: %s\n",
			rb2_xport_name(xp), strerror(-ret));
		return -1;
	}
	rb2_xport_mr_dereg(xp, &probe);
	memset(src, 1, max);
	memset(dst, 2, max);
	doc = json_pack("{s:s, s:s, s:s, s:s}", "tool", "rb2-connperf", "layer", "connection",
			"transport", rb2_xport_name(xp), "test", "mr_cost");
	sizes = json_array();
	for (size_t len = 4096; len <= max; len *= 4) {
		unsigned int reps = len <= (1u << 20) ? 50 : 5;
		uint64_t t_reg = 0, t_copy = 0;

		for (unsigned int i = 0; i < reps; i++) {
			struct rb2_xport_mr mr;
			uint64_t t0 = rte_rdtsc();
			int ret = rb2_xport_mr_reg(xp, src, len, &mr);

			if (ret < 0) {
				fprintf(stderr, "rb2-connperf: registering %zu bytes: %s\n", len,
					strerror(-ret));
				return -1;
			}
			rb2_xport_mr_dereg(xp, &mr);
			t_reg += rte_rdtsc() - t0;
			t0 = rte_rdtsc();
			memcpy(dst, src, len);
			t_copy += rte_rdtsc() - t0;
		}
		double reg_us = (double)t_reg / reps * 1e6 / (double)hz;
		double copy_us = (double)t_copy / reps * 1e6 / (double)hz;

		if (cross == 0 && reg_us < copy_us)
			cross = len;
		json_array_append_new(sizes, json_pack("{s:I, s:o, s:o}", "bytes", (json_int_t)len,
						       "reg_dereg_us", bench_json_real(reg_us),
						       "copy_us", bench_json_real(copy_us)));
	}
	json_object_set_new(doc, "sizes", sizes);
	json_object_set_new(doc, "register_beats_copy_from_bytes", json_integer((json_int_t)cross));
	/* The cache on a repeating workload: 16 buffers of 256 KiB, each sent
	 * many times, in a cache that holds 8 of them. */
	cache = rb2_mr_cache_create_xport(xp, &(struct rb2_mr_cache_params){
		.max_pages = 8 * 64, .max_regions = 64, .page_size = 4096,
		.frequent_pct = 50 });
	if (cache == NULL)
		return -1;
	uint64_t rng = 1, t0 = rte_rdtsc();
	unsigned int gets = 20000;

	for (unsigned int i = 0; i < gets; i++) {
		struct rb2_mr_seg seg[4];
		/* Skewed: buffer k with probability ~ 1/(k+1). */
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		unsigned int k = (unsigned int)((rng >> 33) % 136), b = 0;

		while (k >= b + 1 && b < 15) {
			k -= b + 1;
			b++;
		}
		int n = rb2_mr_cache_get(cache, src + (size_t)(15 - b) * (256 << 10), 256 << 10,
					 seg, 4);
		if (n < 0) {
			fprintf(stderr, "rb2-connperf: cache get: %s\n", strerror(-n));
			return -1;
		}
		rb2_mr_cache_put(cache, seg, (unsigned int)n);
	}
	double per_get_us = (double)(rte_rdtsc() - t0) / gets * 1e6 / (double)hz;

	rb2_mr_cache_stats_get(cache, &st);
	json_object_set_new(doc, "cache", json_pack("{s:I, s:I, s:I, s:I, s:I, s:o, s:I, s:I, s:I, "
		"s:o}", "buffers", (json_int_t)16, "buffer_bytes", (json_int_t)(256 << 10),
		"capacity_buffers", (json_int_t)8, "gets", (json_int_t)st.gets,
		"hits", (json_int_t)st.hits,
		"hit_rate", bench_json_real((double)st.hits / (double)st.gets),
		"registrations", (json_int_t)st.registrations, "evictions", (json_int_t)st.evictions,
		"dereg_batches", (json_int_t)st.dereg_batches,
		"us_per_get", bench_json_real(per_get_us)));
	rb2_mr_cache_destroy(cache);
	free(src);
	free(dst);
	return bench_json_emit(doc, opt.json, "rb2-connperf");
}

/* --one-way: the p50s of the measured round trips' three parts, into
 * v->one_way[.][r]. The echo has stopped: its stamps are all written. */
static void
split_round(struct bench *b, unsigned int r, uint64_t *scratch)
{
	unsigned int first = b->o.lat / 10, n = RTE_MIN(b->n_in, b->o.lat + first);
	double ns = 1e9 / (double)rte_get_tsc_hz();

	for (int part = 0; part < 3; part++) {
		unsigned int k = 0;

		for (unsigned int i = first; i < n; i++)
			scratch[k++] = part == 0 ? b->in[i] - b->sent[i] :
				       part == 1 ? b->out[i] - b->in[i] : b->back[i] - b->out[i];
		qsort(scratch, k, sizeof(*scratch), cmp_u64);
		/* A stamp that runs backwards would wrap: TSCs out of step. */
		b->v->one_way[part][r] = k > 0 && scratch[k / 2] < (UINT64_C(1) << 62) ?
					 (double)scratch[k / 2] * ns : -1;
	}
}

/* One round of one variant. */
static int
run_round(struct bench *b, unsigned int worker, unsigned int r, uint8_t *buf, uint64_t *rtt)
{
	struct variant *v = b->v;
	uint64_t hz = rte_get_tsc_hz();
	int ret = 0;

	atomic_store(&b->stop, 0);
	if (b->o.lat) {
		double ns = 1e9 / (double)hz;

		b->n_in = 0;
		if (!b->o.one_lcore)
			rb2_lcore_launch(echo, b, worker);
		ret = pingpong(b, buf, rtt);
		v->result[r] = (double)rtt[b->o.lat / 2] * ns;
		v->p99[r] = (double)rtt[(uint64_t)b->o.lat * 99 / 100] * ns;
	} else {
		uint64_t t0, n;

		rb2_lcore_launch(sender, b, worker);
		receive(b, rte_rdtsc() + hz / 10, buf);       /* warm-up */
		t0 = rte_rdtsc();
		n = receive(b, t0 + (uint64_t)(b->o.seconds * (double)hz), buf);
		v->result[r] = (double)n / ((double)(rte_rdtsc() - t0) / (double)hz) / 1e6;
	}
	atomic_store(&b->stop, 1);
	rb2_lcore_wait(worker);
	if (b->o.one_way && ret == 0)
		split_round(b, r, rtt);     /* rtt is read already: free to reuse */
	if (b->err != 0) {
		fprintf(stderr, "rb2-connperf: %s: send: %s\n", mode_name[v->mode],
			strerror(-b->err));
		return -1;
	}
	return ret;
}

/* The median over rounds of x's result over y's in the same round: rounds
 * are close in time, so a ratio within one is the least disturbed by this
 * machine's swings. */
static double
median_ratio(const struct variant *x, const struct variant *y, unsigned int n)
{
	return bench_median_ratio(x->result, y->result, n);
}

static struct variant *
find(struct bench *b, enum mode m, unsigned int conns)
{
	for (unsigned int i = 0; i < b->nv; i++)
		if (b->vs[i].mode == m && b->vs[i].conns == conns)
			return &b->vs[i];
	return NULL;
}

static int
print_json(struct bench *b)
{
	const struct opts *o = &b->o;
	struct variant *s1 = find(b, SHARED, 1), *bare = find(b, BARE, 1);
	json_t *doc, *vs = json_array();

	doc = json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:b, s:I, s:o, s:s, s:s}",
			"tool", "rb2-connperf", "layer", "connection", "transport", o->transport,
			"channels", o->preset != NULL ? o->preset : "sized to the message",
			"size", (json_int_t)o->size, "window", (json_int_t)o->window,
			"ring_scale", (json_int_t)o->ring_scale, "zero_copy_receive", o->zc,
			"rounds", (json_int_t)o->rounds, "seconds", bench_json_real(o->seconds),
			"test", o->one_lcore ? "latency_one_lcore" : o->lat ? "latency" : "throughput",
			"unit", o->lat ? "rtt_ns_p50" : "mmsg_per_s");
	for (unsigned int i = 0; i < b->nv; i++) {
		struct variant *v = &b->vs[i], *pc = find(b, PERCONN, v->conns);
		double med = bench_median(v->result, o->rounds);
		json_t *j = json_pack("{s:s, s:I, s:I}", "mode", mode_name[v->mode],
				      "conns", (json_int_t)v->conns, "channel_pairs",
				      (json_int_t)(v->mode == BARE ? 1 : v->neps));

		json_t *rounds = bench_json_rounds(v->result, o->rounds);

		json_object_update(j, rounds);      /* "median", "rounds" */
		json_decref(rounds);
		if (o->lat)
			json_object_set_new(j, "p99_median",
					    bench_json_real(bench_median(v->p99, o->rounds)));
		if (o->one_way)
			json_object_set_new(j, "one_way_ns_p50", json_pack("{s:o, s:o, s:o}",
				"request", bench_json_real(bench_median(v->one_way[0], o->rounds)),
				"turnaround", bench_json_real(bench_median(v->one_way[1], o->rounds)),
				"reply", bench_json_real(bench_median(v->one_way[2], o->rounds))));
		else if (!o->lat)        /* a rate; a round trip's p50 is no rate */
			json_object_set_new(j, "gbit_per_s", bench_json_real(med * o->size * 8 / 1e3));
		/* Medians of per-round ratios. */
		if (v->mode == SHARED && s1 != NULL)
			json_object_set_new(j, "over_1_conn",
					    bench_json_real(median_ratio(v, s1, o->rounds)));
		if (v->mode == SHARED && pc != NULL)
			json_object_set_new(j, "over_perconn",
					    bench_json_real(median_ratio(v, pc, o->rounds)));
		if (v->mode == SHARED && v->conns == 1 && bare != NULL)
			json_object_set_new(j, "over_bare",
					    bench_json_real(median_ratio(v, bare, o->rounds)));
		if (v->mode == LENT && find(b, SHARED, v->conns) != NULL)
			json_object_set_new(j, "over_copied", bench_json_real(
				median_ratio(v, find(b, SHARED, v->conns), o->rounds)));
		if (v->mode != BARE) {
			/* The receivers' buffers: made when data waits, at most
			 * one per connection (lib/conn lends them). */
			uint64_t nbuf = 0, bytes = 0;

			for (unsigned int e = 0; e < v->neps; e++) {
				struct rb2_conn_ep_stats st;

				rb2_conn_ep_stats_get(v->eb[e], &st);
				nbuf += st.rx_buffers;
				bytes += st.rx_buffers * ((uint64_t)o->window +
					 rb2_conn_footprint(rb2_conn_max_msg(v->eb[e])));
			}
			json_object_set_new(j, "rx_buffers", json_integer((json_int_t)nbuf));
			json_object_set_new(j, "rx_buffer_mib",
					    bench_json_real((double)bytes / (1 << 20)));
		}
		json_array_append_new(vs, j);
	}
	json_object_set_new(doc, "variants", vs);
	return bench_json_emit(doc, opt.json, "rb2-connperf");
}

/* bench_rounds_run()'s view of a round: variant @variant's run_round(),
 * which keeps its figures (several per round) in the variant itself. */
struct round_ctx {
	struct bench *b;
	unsigned int worker;
	uint8_t *buf;
	uint64_t *rtt;
};

static int
run_one(void *arg, unsigned int variant, unsigned int round, double *figure)
{
	struct round_ctx *rc = arg;

	rc->b->v = &rc->b->vs[variant];
	if (run_round(rc->b, rc->worker, round, rc->buf, rc->rtt) < 0)
		return -1;
	*figure = rc->b->v->result[round];
	return 0;
}

/* Everything after the EAL's start: @return the exit status. */
static int
connperf(int argc, char **argv)
{
	static struct bench b;
	struct rb2_xport *xp;
	unsigned int worker;
	uint64_t *rtt;
	uint8_t *buf;

	if (parse(argc, argv, &b.o) < 0)
		return 2;
	worker = rte_get_next_lcore(-1, 1, 0);
	if (worker >= RTE_MAX_LCORE) {
		fprintf(stderr, "rb2-connperf: needs two lcores (EAL -l 0-1)\n");
		return 2;
	}
	xp = rb2_xport_open_spec(b.o.transport);
	if (xp == NULL) {
		fprintf(stderr, "rb2-connperf: --transport %s: %s\n", b.o.transport,
			rte_strerror(rte_errno));
		return 1;
	}
	if (b.o.mr_cost)
		return run_mr_cost(xp) < 0;
	for (unsigned int c = 0; c < b.o.n_conns; c++) {
		for (int m = 0; m < NMODES; m++) {
			struct variant *v = &b.vs[b.nv];

			if (!(b.o.modes & 1u << m))
				continue;
			/* Said, not dropped silently: a variant the modes cannot run. */
			if ((m == BARE && b.o.conns[c] != 1) ||
			    (m == PERCONN && b.o.conns[c] > PERCONN_MAX)) {
				fprintf(stderr, "rb2-connperf: %s at --conns %u: not run (%s)\n",
					mode_name[m], b.o.conns[c], m == BARE ?
					"bare is one connection: --conns 1" :
					"perconn gives each connection its own channel pair: at most "
					RTE_STR(PERCONN_MAX) " connections");
				continue;
			}
			v->mode = (enum mode)m;
			v->conns = b.o.conns[c];
			if (setup(&b.o, v, b.nv, xp) < 0)
				return 1;
			b.nv++;
		}
	}
	if (b.nv == 0) {
		fprintf(stderr, "rb2-connperf: no variant to run (the lines above say why)\n");
		return 2;
	}
	if (b.o.wake) {
		if (b.vs[0].mode != SHARED || b.vs[0].conns != 1) {
			fprintf(stderr, "rb2-connperf: --wake runs on shared, one connection\n");
			return 2;
		}
		return run_wake(&b, worker) < 0;
	}
	buf = app_buf(b.o.size);
	rtt = calloc(b.o.lat + 1, sizeof(*rtt));
	if (b.o.one_way) {
		size_t n = (size_t)b.o.lat + b.o.lat / 10;

		b.sent = calloc(n, sizeof(uint64_t));
		b.back = calloc(n, sizeof(uint64_t));
		b.in = calloc(n, sizeof(uint64_t));
		b.out = calloc(n, sizeof(uint64_t));
		if (b.sent == NULL || b.back == NULL || b.in == NULL || b.out == NULL) {
			fprintf(stderr, "rb2-connperf: --one-way: no memory for %zu stamps\n", 4 * n);
			return 1;
		}
	}
	struct round_ctx rc = { &b, worker, buf, rtt };
	double *fig = calloc((size_t)b.nv * b.o.rounds, sizeof(double));

	if (fig == NULL ||
	    bench_rounds_run("rb2-connperf", b.o.rounds, b.nv, run_one, &rc, fig) < 0)
		return 1;
	free(fig);
	return print_json(&b) < 0 ? 1 : 0;
}

/* The usage with the name it is installed under. */
static void
app_usage(FILE *f)
{
	bench_opts_usage(f, "rb2-connperf", SYNOPSIS, table);
}

int
main(int argc, char **argv)
{
	struct option *lo = bench_opts_long(table);
	const struct rb2_app app = { .name = "rb2-connperf", .usage = app_usage, .options = lo };
	int ret = rb2_app_run(&app, argc, argv, connperf);

	free(lo);
	return ret;
}
