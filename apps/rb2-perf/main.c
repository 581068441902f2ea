/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * rb2-perf: the first benchmark a user reaches for, in the manner of
 * perftest's ib_write_bw / ib_write_lat.
 *
 *   rb2-perf [EAL args] -- --mode bw --size 64 --compare
 *   rb2-perf [EAL args] -- --mode lat --size 64
 */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>

#include <rb2_lcore.h>

#include "../common/app_opt.h"
#include "perf.h"
#include "../common/bench.h"

static int preset_sync(struct rb2_chan_params *p, const char *name);

/* --designs LIST, once every other option is read (a design's slot follows
 * --size and --slot-size wherever they stand on the line). */
static int
parse_designs(struct perf_opts *o, const char *arg)
{
	char list[128], *save = NULL;

	snprintf(list, sizeof(list), "%s", arg);
	o->npresets = 0;
	for (char *t = strtok_r(list, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
		struct rb2_chan_params tp = o->chan;

		if (perf_apply_preset(&tp, t, o) != 0)
			return -1;
		if (o->npresets == PERF_MAX_VARIANTS) {
			fprintf(stderr, "rb2-perf: --designs: at most %d\n", PERF_MAX_VARIANTS);
			return -1;
		}
		if (strlen(t) > 18) { /* "perf-" + it names a channel */
			fprintf(stderr, "rb2-perf: --designs: the name '%s' is too long\n", t);
			return -1;
		}
		snprintf(o->presets[o->npresets++], sizeof(o->presets[0]), "%s", t);
	}
	return 0;
}

/* ---- options (bench.h's table) -------------------------------------------- */

static struct perf_opts opt;
/* Set by the table, applied to opt.chan once every option is read. */
static int opt_no_elastic, opt_unaligned;
static const char *opt_designs;

static int
parse_mode(const char *prog, const char *arg, void *dst)
{
	static const char *const names[] = {
		[MODE_BW] = "bw", [MODE_LAT] = "lat", [MODE_OPS] = "ops",
		[MODE_WAKE] = "wake", [MODE_BULK] = "bulk", [MODE_LANES] = "lanes",
	};

	for (unsigned int m = 0; m < RTE_DIM(names); m++)
		if (names[m] != NULL && strcmp(arg, names[m]) == 0) {
			*(enum perf_mode *)dst = (enum perf_mode)m;
			return 0;
		}
	fprintf(stderr, "%s: --mode %s: bw, lat, ops, wake, bulk or lanes\n", prog, arg);
	return -1;
}

static int
parse_transport(const char *prog, const char *arg, void *dst)
{
	if (strlen(arg) >= sizeof(opt.transport)) {
		fprintf(stderr, "%s: --transport %s: longer than %zu characters\n", prog, arg,
			sizeof(opt.transport) - 1);
		return -1;
	}
	strcpy(dst, arg);
	return 0;
}

static int
parse_policy(const char *prog, const char *arg, void *dst)
{
	if (strchr(arg, '+') == NULL || strchr(arg, ':') != NULL || preset_sync(dst, arg) != 0) {
		fprintf(stderr, "%s: --policy %s: HEAD+TAIL expected, push|pull + wt|cq|poll\n",
			prog, arg);
		return -1;
	}
	return 0;
}

static int
parse_head_sync(const char *prog, const char *arg, void *dst)
{
	struct rb2_chan_params *p = dst;

	if (strcmp(arg, "push") == 0)
		p->head_sync = RB2_HEAD_LAZY_PUSH;
	else if (strcmp(arg, "pull") == 0)
		p->head_sync = RB2_HEAD_LAZY_PULL;
	else {
		fprintf(stderr, "%s: --head-sync %s: push or pull\n", prog, arg);
		return -1;
	}
	return 0;
}

static int
parse_tail_sync(const char *prog, const char *arg, void *dst)
{
	struct rb2_chan_params *p = dst;

	if (strcmp(arg, "wt") == 0 || strcmp(arg, "write-twice") == 0)
		p->tail_sync = RB2_TAIL_WRITE_TWICE;
	else if (strcmp(arg, "poll") == 0)
		p->tail_sync = RB2_TAIL_POLL_MSG;
	else if (strcmp(arg, "imm") == 0 || strcmp(arg, "cq") == 0)
		p->tail_sync = RB2_TAIL_WRITE_IMM;
	else {
		fprintf(stderr, "%s: --tail-sync %s: wt, imm or poll\n", prog, arg);
		return -1;
	}
	return 0;
}

static int
parse_channels(const char *prog, const char *arg, void *dst)
{
	struct perf_opts *o = dst;
	char list[64], *save = NULL;

	snprintf(list, sizeof(list), "%s", arg);
	o->nchannels = 0;
	for (char *t = strtok_r(list, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
		uint64_t v;

		if (o->nchannels == PERF_MAX_CHANNEL_COUNTS || app_parse_u64(t, &v) < 0 ||
		    v < 1 || v > 256) {
			fprintf(stderr, "%s: --channels %s: up to %d counts of 1 to 256\n", prog, arg,
				PERF_MAX_CHANNEL_COUNTS);
			return -1;
		}
		o->channels[o->nchannels++] = (unsigned int)v;
	}
	return 0;
}

#define SYNOPSIS "[EAL args] -- [options]"

static struct bench_opt table[] = {
	{ .type = BENCH_TEXT, .help = "Measures an RB2 channel between two lcores (EAL args "
	  "must give two, e.g. -l 0-1): the channel layer, in the manner of perftest's "
	  "ib_write_bw and ib_write_lat." },
	{ .type = BENCH_TEXT, .help = "What every rb2 benchmark shares:" },
	{ "transport", BENCH_CALL, opt.transport, .call = parse_transport, .arg = "SPEC",
	  .help = "transport and its arguments (default shm):\n"
	  "shm[,mode=loadstore|copy]\n"
	  "loop[,lag=N] (one process; lag: completions seen every N-th poll)\n"
	  "verbs[,dev=NAME,...] (doc/guides/prog_guide/xport.md)" },
	{ "size", BENCH_UINT, &opt.size, 8, 1u << 30, .arg = "BYTES",
	  .help = "message size, >= 8 (default 64)" },
	{ "rounds", BENCH_UINT, &opt.rounds, 1, PERF_MAX_ROUNDS, .arg = "R",
	  .help = "bw: rounds per design, interleaved (default 5, max "
	  RTE_STR(PERF_MAX_ROUNDS) ")" },
	{ "seconds", BENCH_REAL, &opt.duration, 1e-3, 3600, .arg = "S", .was = "duration",
	  .help = "bw: run each round for S seconds instead of --count messages" },
	{ "designs", BENCH_STR, &opt_designs, .arg = "LIST", .was = "preset",
	  .help = "bw: the paper's designs, rounds interleaved, each with its ratio to rb2: "
	  "rb2, l5 (L5's own ring, as pfent/L5RDMA builds it: length, payload and validity "
	  "word back to back, payload then length WRITE, no batching; in ops mode an RB2 "
	  "channel set up as L5), farm (poll message, no batching), socksdirect "
	  "(WRITE_WITH_IMM + CQ polling, a completion per WRITE, 10 in flight), lean (RB2's "
	  "latency mode: one WRITE per message, the head pushed every half ring). Each copies "
	  "as its application does (doc/guides/prog_guide/chan.md). Also sync pairs "
	  "HEAD+TAIL: push|pull + wt|cq|poll (alpha/beta/gamma as given). A suffix :fixed "
	  "makes that one a fixed-size channel (no length crosses: the paper's slot = message "
	  "size), :var a variable-length one. Each design's slot also holds what its ring "
	  "adds to a message (a poll message's 8-byte marker; the 8-byte length header of "
	  "rb2*, socksdirect and lean :var) unless --slot-size is given. lat: one design" },
	{ "json", BENCH_STR, &opt.json, .arg = "FILE", .help = "every figure, as JSON, into FILE" },
	{ .type = BENCH_TEXT, .help = "The experiment:" },
	{ "mode", BENCH_CALL, &opt.mode, .call = parse_mode, .arg = "MODE",
	  .help = "bw: streaming throughput (default); lat: ping-pong round trip; ops: both "
	  "halves on one lcore, in turns: the code's own cost per message (repeatable "
	  "instruction counts under callgrind; usertools/rb2-perf-ab.py --callgrind); wake: "
	  "adaptive polling against polling: wake-up latency and idle CPU of paced messages, "
	  "and the rate of a busy stream; bulk: 4 KiB to 4 MiB messages copied through the "
	  "ring against lent from application memory (rb2_bulk.h), with and without the "
	  "registration cache: the crossover (verbs, or loop); lanes: K channels between two "
	  "lcores, each on a QP of its own against all on one lane (rb2_xport_lane.h: one QP, "
	  "one doorbell per pass): WRs and doorbells per message, rate" },
	{ "count", BENCH_U64, &opt.count, 1, (double)(UINT64_MAX / 2), .arg = "N",
	  .help = "bw: messages per round (default 10000000); lat: measured round trips "
	  "(default 100000)" },
	{ "warmup", BENCH_U64, &opt.warmup, 0, (double)(UINT64_MAX / 2), .arg = "N",
	  .help = "lat: warm-up round trips first (default count/10)" },
	{ "compare", BENCH_FLAG, &opt.compare,
	  .help = "bw: add DPDK rte_ring (element copy and zero-copy APIs), and on shm both "
	  "of its modes, each also fixed-size, rounds interleaved" },
	{ "pairs", BENCH_UINT, &opt.pairs, 1, PERF_MAX_PAIRS, .arg = "K",
	  .help = "bw: K channel pairs at once, pair i sending from the EAL's lcore 2i to "
	  "lcore 2i+1 (Fig. 7); the sum of their rates" },
	{ "channels", BENCH_CALL, &opt, .call = parse_channels, .arg = "LIST",
	  .help = "lanes: channel counts (default 1,8,64; at most 4, each <= 256); bw "
	  "--server/--client: --channels K (one count) streams on K channels from one lcore "
	  "to one lcore, on ports --port + i" },
	{ "per-pass", BENCH_UINT, &opt.per_pass, 1, 1024, .arg = "N",
	  .help = "lanes: messages per channel per sender pass (default 1)" },
	{ "lane", BENCH_FLAG, &opt.lane,
	  .help = "bw --server/--client: the K channels on one lane a side, so one QP between "
	  "the processes (rb2_xport_lane.h); the window, if any, is then the lane's" },
	{ "gap-us", BENCH_U64, &opt.gap_us, 1, 10000000, .arg = "US",
	  .help = "wake: paced messages US microseconds apart (default 1000)" },
	{ "paced", BENCH_U64, &opt.paced, 1, 100000000, .arg = "N",
	  .help = "wake: paced messages per round (default 2000)" },
	{ "idle-sleep", BENCH_UINT, &opt.idle_sleep, 1, UINT32_MAX, .arg = "N",
	  .help = "wake: empty polls before the receiver sleeps (default 120, RDMAbox's "
	  "MAX_RETRY)" },
	{ .type = BENCH_TEXT, .help = "The channel:" },
	{ "burst", BENCH_UINT, &opt.burst, 1, 256, .arg = "B",
	  .help = "receiver burst and rte_ring burst (default 32, max 256)" },
	{ "slots", BENCH_UINT, &opt.chan.slots, 2, 1u << 24, .arg = "N",
	  .help = "ring slots, a power of two (default 1024)" },
	{ "slot-size", BENCH_UINT, &opt.chan.slot_size, 8, 1u << 30, .arg = "S",
	  .help = "slot bytes, a multiple of 64 (default: size rounded up to 64; --unaligned: "
	  "of 8)" },
	{ "alpha", BENCH_UINT, &opt.chan.alpha, 0, UINT32_MAX, .arg = "A",
	  .help = "pointer advancement threshold (bw default 32, lat 1)" },
	{ "beta", BENCH_UINT, &opt.chan.beta, 0, UINT32_MAX, .arg = "B",
	  .help = "slot transmission threshold (bw default 16, lat 1)" },
	{ "gamma", BENCH_UINT, &opt.chan.gamma, 0, UINT32_MAX, .arg = "G",
	  .help = "lazy push threshold (bw default 32, lat 1)" },
	{ "fixed", BENCH_FLAG, &opt.fixed,
	  .help = "fixed-size channel: every message is --size bytes, one slot each, and no "
	  "length crosses the link" },
	{ "max-inflight", BENCH_UINT, &opt.chan.max_inflight, 0, 1u << 20, .arg = "W",
	  .help = "admission window: WRs in flight per QP at most (0: none; else >= 6); the "
	  "client reports deferrals and the most seen" },
	{ "policy", BENCH_CALL, &opt.chan, .call = parse_policy, .arg = "HEAD+TAIL",
	  .help = "both sync policies at once: push|pull + wt|cq|poll" },
	{ "head-sync", BENCH_CALL, &opt.chan, .call = parse_head_sync, .arg = "push|pull",
	  .help = "lazy push (default) or lazy pull (the sender READs)" },
	{ "tail-sync", BENCH_CALL, &opt.chan, .call = parse_tail_sync, .arg = "wt|imm|poll",
	  .help = "write-twice (default), WRITE_WITH_IMM with CQ polling (native on verbs, "
	  "emulated with WRITEs on shm: see doc/guides/prog_guide/chan.md), or poll message" },
	{ .type = BENCH_TEXT, .help = "Two processes (perftest style):" },
	{ "server", BENCH_FLAG, &opt.server,
	  .help = "this one receives (bw) or echoes (lat); needs a transport with a "
	  "rendezvous (verbs)" },
	{ "client", BENCH_STR, &opt.client, .arg = "HOST",
	  .help = "the other process: sends (bw) or pings (lat) to HOST" },
	{ "peer", BENCH_STR, &opt.peer, .arg = "HOST",
	  .help = "lat --server: the client's host (for the reply channel)" },
	{ "port", BENCH_UINT, &opt.port, 1, 65534, .arg = "N",
	  .help = "rendezvous port (default 18515; lat also uses N+1)" },
	{ .type = BENCH_TEXT, .help = "Ablations (Table II), applied over any design:" },
	{ "no-batching", BENCH_FLAG, &opt.no_batching, .help = "alpha = beta = gamma = 1 (M2)" },
	{ "no-sync-ahead", BENCH_FLAG, &opt.no_sync_ahead,
	  .help = "beta = alpha: no slot transmission before the pointer advancement (M3)" },
	{ "no-elastic", BENCH_FLAG, &opt_no_elastic,
	  .help = "no elastic threshold: WRITE the tail at every pointer advancement, even "
	  "with the last one in flight (M4)" },
	{ "bounce", BENCH_FLAG, &opt.bounce,
	  .help = "bw: no zero copy: build each message in a buffer and copy it in; copy it "
	  "out before reading (M6)" },
	{ "no-zero-copy", BENCH_FLAG, &opt.bounce, .help = "the same as --bounce (M6)" },
	{ "unaligned", BENCH_FLAG, &opt_unaligned,
	  .help = "slots 8 bytes past a cache line, slot size a multiple of 8 (default: size "
	  "rounded up to 8): messages packed back to back across cache lines (M7)" },
	{ "wrong-numa", BENCH_FLAG, &opt.wrong_numa,
	  .help = "ring memory on another NUMA node than the lcores (M9; refused on a "
	  "one-node machine)" },
	{ "help", BENCH_HELP, .help = "this text" },
	{ .type = BENCH_TEXT, .help = "example: rb2-perf -l 0-1 --no-pci --no-huge -- --mode bw "
	  "--size 64 --compare" },
	{ .type = BENCH_END },
};

static void
app_usage(FILE *f)
{
	bench_opts_usage(f, "rb2-perf", SYNOPSIS, table);
}

static int
parse_args(int argc, char **argv, struct perf_opts *o)
{
	int have_count, have_warmup, have_slot_size, have_a, have_b, have_g;
	char why[160];

	memset(&opt, 0, sizeof(opt));
	opt.mode = MODE_BW;
	strcpy(opt.transport, "shm");
	opt.size = 64;
	opt.rounds = 5;
	opt.burst = 32;
	opt.port = 18515;
	opt.gap_us = 1000;
	opt.paced = 2000;
	opt.idle_sleep = 120;
	opt.per_pass = 1;
	opt.channels[0] = 1;
	opt.channels[1] = 8;
	opt.channels[2] = 64;
	opt.nchannels = 3;
	rb2_chan_params_init(&opt.chan);
	if (bench_opts_parse("rb2-perf", SYNOPSIS, table, argc, argv) < 0)
		return -1;
	*o = opt;
	have_count = bench_opt_given(table, "count");
	have_warmup = bench_opt_given(table, "warmup");
	have_slot_size = bench_opt_given(table, "slot-size");
	have_a = bench_opt_given(table, "alpha");
	have_b = bench_opt_given(table, "beta");
	have_g = bench_opt_given(table, "gamma");
	o->channels_given = bench_opt_given(table, "channels");
	if (opt_no_elastic)
		o->chan.flags |= RB2_CHAN_F_NO_ELASTIC;
	if (opt_unaligned)
		o->chan.flags |= RB2_CHAN_F_UNALIGNED;
	if (!have_count)
		o->count = o->mode == MODE_BW ? 10000000 : o->mode == MODE_WAKE ? 2000000 :
			o->mode == MODE_LANES ? 200000 : 100000;
	if (!have_warmup)
		o->warmup = o->count / 10;
	if (o->mode == MODE_LAT) {
		/* Latency mode: no batching unless asked for. */
		if (!have_a)
			o->chan.alpha = 1;
		if (!have_b)
			o->chan.beta = RTE_MIN(o->chan.alpha, 1u);
		if (!have_g)
			o->chan.gamma = 1;
	} else if (have_a && !have_b && o->chan.beta > o->chan.alpha) {
		o->chan.beta = o->chan.alpha; /* keep the default beta valid */
	}
	o->slot_size_given = have_slot_size;
	if (!have_slot_size)
		o->chan.slot_size = RTE_ALIGN_CEIL(o->size,
			o->chan.flags & RB2_CHAN_F_UNALIGNED ? 8 : 64);
	if (o->fixed)
		o->chan.msg_size = o->size;
	if (opt_designs != NULL && parse_designs(o, opt_designs) < 0)
		return -1;
	if (o->wrong_numa && rte_socket_count() < 2) {
		fprintf(stderr, "rb2-perf: --wrong-numa (ablation M9) needs two NUMA nodes; this machine has %u\n",
			rte_socket_count());
		return -1;
	}
	perf_ablate(&o->chan, o);
	if (o->npresets == 1 && o->mode == MODE_LAT &&
	    perf_apply_preset(&o->chan, o->presets[0], o) != 0)
		return -1;
	if (rb2_chan_params_check(&o->chan, why, sizeof(why)) < 0) {
		fprintf(stderr, "rb2-perf: %s\n", why);
		return -1;
	}
	if (o->size > rb2_chan_max_msg(&o->chan)) {
		fprintf(stderr, "rb2-perf: --size %u exceeds the channel's largest message, %u B (slots/2 x slot-size); raise --slots or --slot-size\n",
			o->size, rb2_chan_max_msg(&o->chan));
		return -1;
	}
	if (o->server && o->client != NULL) {
		fprintf(stderr, "rb2-perf: --server and --client are the two sides; give one\n");
		return -1;
	}
	if (o->server && o->mode == MODE_LAT && o->peer == NULL &&
	    strncmp(o->transport, "shm", 3) != 0) {
		fprintf(stderr, "rb2-perf: lat --server needs --peer HOST (the client) for the reply channel\n");
		return -1;
	}
	if (o->pairs > 0 && (o->mode != MODE_BW || o->server || o->client || o->compare ||
			     o->bounce || o->npresets > 1)) {
		fprintf(stderr, "rb2-perf: --pairs: bw mode in one process, one design (at most one of --designs), without --compare or --bounce\n");
		return -1;
	}
	if (o->channels_given && o->mode == MODE_BW && (o->nchannels != 1 || !(o->server || o->client))) {
		fprintf(stderr, "rb2-perf: bw --channels takes one count, with --server or --client (in one process: --pairs, or --mode lanes)\n");
		return -1;
	}
	if (o->lane && (o->mode != MODE_BW || !(o->server || o->client))) {
		fprintf(stderr, "rb2-perf: --lane is for bw --server/--client (in one process: --mode lanes)\n");
		return -1;
	}
	if ((o->server || o->client) && o->compare) {
		fprintf(stderr, "rb2-perf: --compare runs in one process; drop --server/--client\n");
		return -1;
	}
	if (o->mode == MODE_OPS && (o->server || o->client || o->compare || o->pairs ||
				     o->bounce)) {
		fprintf(stderr, "rb2-perf: --mode ops runs one channel in one lcore: no --server, --client, --compare, --pairs or --bounce\n");
		return -1;
	}
	if (o->npresets > 0 && (((o->server || o->client) && o->mode != MODE_LAT) ||
				(o->mode == MODE_LAT && o->npresets > 1))) {
		fprintf(stderr, "rb2-perf: --designs: several (bw, in one process) or one (lat)\n");
		return -1;
	}
	for (unsigned int i = 0; i < o->npresets; i++)
		if (perf_preset_is_l5(o->presets[i]) &&
		    (o->pairs || o->server || o->client != NULL)) {
			fprintf(stderr, "rb2-perf: --designs %s: L5's own ring (rb2_l5.h) connects its halves within one process, in bw and lat; --pairs and two-process runs take the RB2 channel designs\n",
				o->presets[i]);
			return -1;
		}
	if (o->npresets > 0 && o->compare && o->npresets > PERF_MAX_VARIANTS - 2) {
		fprintf(stderr, "rb2-perf: --designs with --compare: at most %d presets\n",
			PERF_MAX_VARIANTS - 2);
		return -1;
	}
	if (o->mode == MODE_WAKE && (o->server || o->client || o->compare || o->pairs ||
				      o->bounce || o->npresets > 0 || o->size < 16)) {
		fprintf(stderr, "rb2-perf: --mode wake runs one design in one process, messages of at least 16 B: no --server, --client, --compare, --pairs, --bounce or --designs\n");
		return -1;
	}
	if (o->mode == MODE_LANES && (o->server || o->client || o->compare || o->pairs ||
				       o->bounce || o->npresets > 0 || o->size < 8)) {
		fprintf(stderr, "rb2-perf: --mode lanes runs in one process, messages of at least 8 B: no --server, --client, --compare, --pairs, --bounce or --designs\n");
		return -1;
	}
	if (o->mode == MODE_BULK && (o->server || o->client || o->compare || o->pairs ||
				      o->bounce || o->npresets > 0)) {
		fprintf(stderr, "rb2-perf: --mode bulk runs its own sizes in one process: no --server, --client, --compare, --pairs, --bounce or --designs\n");
		return -1;
	}
	if (o->compare && o->mode != MODE_BW) {
		fprintf(stderr, "rb2-perf: --compare applies to --mode bw\n");
		return -1;
	}
	return 0;
}

/* The ablation switches, over whatever a preset set. */
void
perf_ablate(struct rb2_chan_params *p, const struct perf_opts *o)
{
	if (o->no_batching)
		p->alpha = p->beta = p->gamma = 1;
	if (o->no_sync_ahead)
		p->beta = p->alpha;
	if (o->wrong_numa && rte_socket_count() > 1) {
		/* The next node after the main lcore's. */
		unsigned int here = rte_lcore_to_socket_id(rte_get_main_lcore());

		for (unsigned int i = 0; i < rte_socket_count(); i++)
			if ((unsigned int)rte_socket_id_by_idx(i) == here) {
				p->socket_id = rte_socket_id_by_idx((i + 1) % rte_socket_count());
				break;
			}
	}
}

struct perf_copies
perf_design_copies(const char *preset)
{
	size_t n = strcspn(preset, ":");

	/* pfent/L5RDMA: send() copies into the send buffer, receive() copies
	 * out and then zeroes what it read. SocksDirect: socket semantics,
	 * copied in at send, out at recv. FaRM: the message is built in a
	 * registered send buffer and WRITTEN; the receiver reads it in place. */
	if (n == 2 && strncmp(preset, "l5", 2) == 0)
		return (struct perf_copies){ .in = 1, .out = 1, .zero = 1 };
	if (n == 11 && strncmp(preset, "socksdirect", 11) == 0)
		return (struct perf_copies){ .in = 1, .out = 1 };
	if (n == 4 && strncmp(preset, "farm", 4) == 0)
		return (struct perf_copies){ .in = 1 };
	return (struct perf_copies){ 0 };
}

const char *
perf_copies_name(struct perf_copies c)
{
	return c.in && c.out ? (c.zero ? "in+out+zero" : "in+out") : c.in ? "in" :
		c.out ? "out" : "none";
}

int
perf_preset_is_l5(const char *name)
{
	return strncmp(name, "l5", 2) == 0 && (name[2] == '\0' || name[2] == ':');
}

int
perf_preset_is_rb2(const char *name)
{
	return strncmp(name, "rb2", 3) == 0 && (name[3] == '\0' || name[3] == ':');
}

/*
 * A preset: DESIGN or HEAD+TAIL, optionally :fixed (a fixed-size channel,
 * no length crosses: the paper's slot = message size) or :var (lengths in
 * the slots or lens[], as any message size needs). Each preset's slot also
 * holds what its ring adds to a message (a poll message's 8-byte marker, an
 * 8-byte header where the length is in the slot: :var of rb2, lean and
 * socksdirect) unless --slot-size was given, so that each message takes one
 * slot.
 */
int
perf_apply_preset(struct rb2_chan_params *p, const char *spec,
		  const struct perf_opts *o)
{
	char name[24];
	const char *colon = strchr(spec, ':');
	int ret;

	snprintf(name, sizeof(name), "%.*s", colon ? (int)(colon - spec) : (int)strlen(spec),
		 spec);
	if (colon != NULL && strcmp(colon + 1, "fixed") == 0) {
		p->msg_size = o->size;
	} else if (colon != NULL && strcmp(colon + 1, "var") == 0) {
		p->msg_size = 0;
	} else if (colon != NULL) {
		fprintf(stderr, "rb2-perf: preset '%s': unknown suffix '%s' (expected :fixed or :var)\n",
			spec, colon + 1);
		return -EINVAL;
	}
	ret = preset_sync(p, name);
	/* A message of --size and what the ring adds to it (its header, its
	 * marker) in one slot, unless --slot-size says otherwise. */
	if (ret == 0 && !o->slot_size_given)
		p->slot_size = RTE_ALIGN_CEIL(o->size + rb2_chan_msg_overhead(p),
					      p->flags & RB2_CHAN_F_UNALIGNED ? 8 : 64);
	if (ret == 0)
		perf_ablate(p, o);
	return ret;
}

static int
preset_sync(struct rb2_chan_params *p, const char *name)
{
	const char *plus = strchr(name, '+');
	int ret;

	if (plus != NULL) {       /* a sync-policy pair: head+tail */
		size_t h = (size_t)(plus - name);

		if (h == 4 && strncmp(name, "push", 4) == 0)
			p->head_sync = RB2_HEAD_LAZY_PUSH;
		else if (h == 4 && strncmp(name, "pull", 4) == 0)
			p->head_sync = RB2_HEAD_LAZY_PULL;
		else
			goto bad;
		if (strcmp(plus + 1, "wt") == 0)
			p->tail_sync = RB2_TAIL_WRITE_TWICE;
		else if (strcmp(plus + 1, "poll") == 0)
			p->tail_sync = RB2_TAIL_POLL_MSG;
		else if (strcmp(plus + 1, "cq") == 0)
			p->tail_sync = RB2_TAIL_WRITE_IMM;
		else
			goto bad;
		return 0;
	}
	ret = rb2_chan_params_preset(p, name);
	if (ret != -ENOENT)
		return ret;
bad:
	fprintf(stderr, "rb2-perf: unknown preset '%s': a design (" RB2_CHAN_PRESET_NAMES ") or a "
		"sync pair HEAD+TAIL (push|pull + wt|cq|poll)\n", name);
	return -ENOENT;
}

json_t *
perf_json_begin(const struct perf_opts *o)
{
	return json_pack("{s:s, s:s, s:s, s:I, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
			 "s:I, s:I, s:I, s:o, s:I}",
		"tool", "rb2-perf", "layer", "channel", "version", RB2_VERSION,
		"time", (json_int_t)time(NULL),
		"mode", o->mode == MODE_BW ? "bw" : o->mode == MODE_LAT ? "lat" :
			o->mode == MODE_WAKE ? "wake" : o->mode == MODE_BULK ? "bulk" :
			o->mode == MODE_LANES ? "lanes" : "ops",
		"transport", o->transport, "size", (json_int_t)o->size,
		"slots", (json_int_t)o->chan.slots, "slot_size", (json_int_t)o->chan.slot_size,
		"alpha", (json_int_t)o->chan.alpha, "beta", (json_int_t)o->chan.beta,
		"gamma", (json_int_t)o->chan.gamma, "msg_size", (json_int_t)o->chan.msg_size,
		"flags", (json_int_t)o->chan.flags, "burst", (json_int_t)o->burst,
		"count", (json_int_t)o->count, "seconds", bench_json_real(o->duration),
		"tsc_hz", (json_int_t)rte_get_tsc_hz());
}

json_t *
perf_json_lat(const struct perf_lat *l)
{
	return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}", "avg_ns", bench_json_real(l->avg),
			 "p50_ns", bench_json_real(l->p50), "p99_ns", bench_json_real(l->p99),
			 "p99_9_ns", bench_json_real(l->p999), "min_ns", bench_json_real(l->min),
			 "max_ns", bench_json_real(l->max));
}

/* --json FILE: writable before anything runs (a run of minutes must not
 * end in "cannot write"). 0, or -1 after saying why. */
static int
json_file_check(const char *path)
{
	FILE *f = path != NULL ? fopen(path, "w") : NULL;

	if (path == NULL)
		return 0;
	if (f == NULL) {
		fprintf(stderr, "rb2-perf: cannot write --json %s: %s\n", path, strerror(errno));
		return -1;
	}
	fclose(f);
	return 0;
}

/* The capabilities of the transport a spec names (0 if it cannot open). */
static uint32_t
spec_caps(const char *spec)
{
	struct rb2_xport *xp = rb2_xport_open_spec(spec);
	uint32_t caps = xp != NULL ? rb2_xport_caps(xp) : 0;

	rb2_xport_close(xp);
	return caps;
}

/* After the EAL (rb2_app_run()): every return goes through its cleanup. */
static int
perf_main(int argc, char **argv)
{
	struct perf_opts o;
	json_t *doc;
	int ret;

	if (parse_args(argc, argv, &o) < 0)
		return 2;
	o.tx_lcore = rte_get_main_lcore();
	o.rx_lcore = rte_get_next_lcore(o.tx_lcore, 1, 0);
	if ((o.server || o.client != NULL) && !rte_eal_has_hugepages() &&
	    (spec_caps(o.transport) & RB2_XPORT_CAP_REMOTE) == 0) {
		/* Two processes meet in shared memzones: only hugepage memory is
		 * shared between the processes of a DPDK group. */
		fprintf(stderr, "rb2-perf: --server/--client over %s are two processes of one DPDK group, "
			"which needs hugepages: drop --no-huge and reserve some (as root: "
			"dpdk-hugepages.py -p 2M -r 1G), give both the same --file-prefix, and "
			"start the second with --proc-type=secondary\n", o.transport);
		return 2;
	}
	if (o.mode != MODE_OPS && !(o.server || o.client != NULL) &&
	    (rte_lcore_count() < 2 || o.rx_lcore >= RTE_MAX_LCORE)) {
		fprintf(stderr, "rb2-perf: needs two lcores, one per half of the channel; EAL has %u (use -l 0-1)\n",
			rte_lcore_count());
		return 2;
	}
	if (json_file_check(o.json) < 0)
		return 2;
	doc = o.json != NULL ? perf_json_begin(&o) : NULL;
	if (o.server || o.client != NULL) {
		/* One side per process, on the main lcore. */
		o.rx_lcore = o.tx_lcore;
		o.chan.lcore_id = o.tx_lcore;
		ret = perf_remote_run(&o, doc);
	} else {
		ret = o.mode == MODE_OPS ? perf_ops_run(&o, doc) :
			o.mode == MODE_WAKE ? perf_wake_run(&o, doc) :
			o.mode == MODE_BULK ? perf_bulk_run(&o, doc) :
			o.mode == MODE_LANES ? perf_lanes_run(&o, doc) :
			o.mode == MODE_LAT ? perf_lat_run(&o, doc) :
			o.pairs > 0 ? perf_pairs_run(&o, doc) : perf_bw_run(&o, doc);
	}
	/* A failed run's file says so, with what it measured before. */
	if (doc != NULL && ret != 0)
		json_object_set_new(doc, "failed", json_true());
	if (doc != NULL && bench_json_save(doc, o.json, "rb2-perf") < 0 && ret == 0)
		ret = -1;
	return ret == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

int
main(int argc, char **argv)
{
	struct option *lo = bench_opts_long(table);
	const struct rb2_app app = { .name = "rb2-perf", .usage = app_usage, .options = lo };
	int ret = rb2_app_run(&app, argc, argv, perf_main);

	free(lo);
	return ret;
}
