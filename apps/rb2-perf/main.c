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

static void
usage(FILE *f, const char *prog)
{
	fprintf(f,
"usage: %s [EAL args] -- [options]\n"
"\n"
"Measures an RB2 channel between two lcores (EAL args must give two, e.g. -l 0-1).\n"
"\n"
"  --mode bw|lat|ops|wake|bulk|lanes  bw: streaming throughput (default); lat:\n"
"                       ping-pong round trip; ops: both halves on one lcore, in turns: the\n"
"                       code's own cost per message (repeatable instruction counts\n"
"                       under callgrind; usertools/rb2-perf-ab.py --callgrind); wake:\n"
"                       adaptive polling against polling: wake-up latency and idle\n"
"                       CPU of paced messages, and the rate of a busy stream; bulk:\n"
"                       4 KiB to 4 MiB messages copied through the ring against\n"
"                       lent from application memory (rb2_bulk.h), with and without\n"
"                       the registration cache: the crossover (verbs, or loop)\n"
"  --mode lanes         K channels between two lcores, each on a QP of its own\n"
"                       against all on one lane (rb2_xport_lane.h: one QP, one\n"
"                       doorbell per pass): WRs and doorbells per message, rate\n"
"  --channels LIST      lanes: channel counts (default 1,8,64; at most 4, each <= 256)\n"
"  --per-pass N         lanes: messages per channel per sender pass (default 1)\n"
"                       bw --server/--client: --channels K (one count) streams on K\n"
"                       channels from one lcore to one lcore, on ports --port + i\n"
"  --max-inflight W     admission window: WRs in flight per QP at most (0: none;\n"
"                       else >= 6); the client reports deferrals and the most seen\n"
"  --lane               bw --server/--client: the K channels on one lane a side,\n"
"                       so one QP between the processes (rb2_xport_lane.h); the\n"
"                       window, if any, is then the lane's\n"
"  --gap-us US          wake: paced messages US microseconds apart (default 1000)\n"
"  --paced N            wake: paced messages per round (default 2000)\n"
"  --idle-sleep N       wake: empty polls before the receiver sleeps (default 120,\n"
"                       RDMAbox's MAX_RETRY)\n"
"  --transport SPEC     transport and its arguments (default shm):\n"
"                         shm[,mode=loadstore|copy]\n"
"                         loop[,lag=N] (one process; lag: completions seen every\n"
"                         N-th poll), verbs[,dev=NAME,...] (README: Transports)\n"
"  --size BYTES         message size, >= 8 (default 64)\n"
"  --count N            bw: messages per round (default 10000000);\n"
"                       lat: measured round trips (default 100000)\n"
"  --duration SEC       bw: run each round for SEC seconds instead of --count\n"
"  --warmup N           lat: warm-up round trips first (default count/10)\n"
"  --rounds R           bw: rounds per variant, interleaved (default 5, max %d)\n"
"  --burst B            receiver burst and rte_ring burst (default 32, max 256)\n"
"  --slots N            ring slots, a power of two (default 1024)\n"
"  --slot-size S        slot bytes, a multiple of 64 (default: size rounded up to 64;\n"
"                       --unaligned: of 8)\n"
"  --alpha A            pointer advancement threshold (bw default 32, lat 1)\n"
"  --beta B             slot transmission threshold (bw default 16, lat 1)\n"
"  --gamma G            lazy push threshold (bw default 32, lat 1)\n"
"  --fixed              fixed-size channel: every message is --size bytes, one\n"
"                       slot each, and no length crosses the link\n"
"  --compare            bw: add DPDK rte_ring (element copy and zero-copy APIs),\n"
"                       and on shm both of its modes, each also fixed-size,\n"
"                       rounds interleaved\n"
"  --server             two processes (perftest style): this one receives (bw) or\n"
"                       echoes (lat); needs a transport with a rendezvous (verbs)\n"
"  --client HOST        the other process: sends (bw) or pings (lat) to HOST\n"
"  --peer HOST          lat --server: the client's host (for the reply channel)\n"
"  --port N             rendezvous port (default 18515; lat also uses N+1)\n"
"  --preset LIST        bw: the paper's designs, rounds interleaved, each with its\n"
"                       ratio to rb2: rb2, l5 (L5's own ring, as pfent/L5RDMA\n"
"                       builds it: length, payload and validity word back to\n"
"                       back, payload then length WRITE, no batching; in ops\n"
"                       mode an RB2 channel set up as L5), farm\n"
"                       (poll message, no batching), socksdirect (WRITE_WITH_IMM\n"
"                       + CQ polling, a completion per WRITE, 10 in flight), lean\n"
"                       (RB2's latency mode: one WRITE per message, the head\n"
"                       pushed every half ring). Each copies as its application\n"
"                       does (doc/guides/prog_guide/chan.md). Also sync pairs HEAD+TAIL:\n"
"                       push|pull + wt|cq|poll (alpha/beta/gamma as given).\n"
"                       A suffix :fixed makes that one a fixed-size channel\n"
"                       (no length crosses: the paper's slot = message size),\n"
"                       :var a variable-length one. Each preset's slot also\n"
"                       holds what its ring adds to a message (a poll\n"
"                       message's 8-byte marker; the 8-byte length header of\n"
"                       rb2*, socksdirect and lean :var) unless --slot-size\n"
"                       is given. lat: one preset\n"
"  --pairs K            bw: K channel pairs at once, pair i sending from the EAL's\n"
"                       lcore 2i to lcore 2i+1 (Fig. 7); the sum of their rates\n"
"  --bounce             bw: no zero copy: build each message in a buffer and copy\n"
"                       it in; copy it out before reading (ablation M6)\n"
"  --policy HEAD+TAIL   both sync policies at once: push|pull + wt|cq|poll\n"
"  Ablations (Table II), applied over any preset:\n"
"  --no-batching        alpha = beta = gamma = 1 (M2)\n"
"  --no-sync-ahead      beta = alpha: no slot transmission before the pointer\n"
"                       advancement (M3)\n"
"  --no-zero-copy       the same as --bounce (M6)\n"
"  --wrong-numa         ring memory on another NUMA node than the lcores (M9;\n"
"                       refused on a one-node machine)\n"
"  --no-elastic         no elastic threshold: WRITE the tail at every pointer\n"
"                       advancement, even with the last one in flight (M4)\n"
"  --unaligned          slots 8 bytes past a cache line, slot size a multiple of\n"
"                       8 (default: size rounded up to 8): messages packed back\n"
"                       to back across cache lines (ablation M7)\n"
"  --head-sync push|pull  lazy push (default) or lazy pull (the sender READs)\n"
"  --tail-sync wt|imm|poll  write-twice (default), WRITE_WITH_IMM with CQ polling\n"
"                       (native on verbs, emulated with WRITEs on shm: see\n"
"                       doc/guides/prog_guide/chan.md), or poll message\n"
"  --json FILE          write every figure to FILE as JSON\n"
"  --help               this text\n"
"\n"
"example: %s -l 0-1 --no-pci --no-huge -- --mode bw --size 64 --compare\n",
		prog, PERF_MAX_ROUNDS, prog);
}

static int
parse_u64(const char *opt, const char *arg, uint64_t min, uint64_t max,
	  uint64_t *out)
{
	uint64_t v;

	/* k, M, G as every rb2 app takes them (app_opt.h). */
	if (app_parse_u64(arg, &v) < 0 || v < min || v > max) {
		fprintf(stderr, "rb2-perf: invalid --%s '%s': expected an integer in [%" PRIu64
			", %" PRIu64 "]\n", opt, arg, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

static int
parse_args(int argc, char **argv, struct perf_opts *o)
{
	static const struct option longopts[] = {
		{"mode", required_argument, NULL, 'm'},
		{"transport", required_argument, NULL, 't'},
		{"size", required_argument, NULL, 's'},
		{"count", required_argument, NULL, 'n'},
		{"duration", required_argument, NULL, 'D'},
		{"warmup", required_argument, NULL, 'w'},
		{"rounds", required_argument, NULL, 'r'},
		{"burst", required_argument, NULL, 'b'},
		{"slots", required_argument, NULL, 'N'},
		{"slot-size", required_argument, NULL, 'S'},
		{"alpha", required_argument, NULL, 'A'},
		{"beta", required_argument, NULL, 'B'},
		{"gamma", required_argument, NULL, 'G'},
		{"compare", no_argument, NULL, 'c'},
		{"fixed", no_argument, NULL, 'F'},
		{"server", no_argument, NULL, 'R'},
		{"client", required_argument, NULL, 'C'},
		{"peer", required_argument, NULL, 'P'},
		{"port", required_argument, NULL, 'O'},
		{"json", required_argument, NULL, 'j'},
		{"preset", required_argument, NULL, 'p'},
		{"bounce", no_argument, NULL, 'X'},
		{"no-elastic", no_argument, NULL, 'E'},
		{"pairs", required_argument, NULL, 'K'},
		{"policy", required_argument, NULL, 'Y'},
		{"no-batching", no_argument, NULL, '2'},
		{"no-sync-ahead", no_argument, NULL, '3'},
		{"no-zero-copy", no_argument, NULL, 'X'},
		{"wrong-numa", no_argument, NULL, '9'},
		{"unaligned", no_argument, NULL, 'U'},
		{"head-sync", required_argument, NULL, 'H'},
		{"tail-sync", required_argument, NULL, 'T'},
		{"gap-us", required_argument, NULL, 'g'},
		{"paced", required_argument, NULL, 'q'},
		{"idle-sleep", required_argument, NULL, 'i'},
		{"channels", required_argument, NULL, 'k'},
		{"per-pass", required_argument, NULL, 'e'},
		{"max-inflight", required_argument, NULL, 'W'},
		{"lane", no_argument, NULL, 'L'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int have_count = 0, have_warmup = 0, have_slot_size = 0;
	int have_a = 0, have_b = 0, have_g = 0, opt;
	uint64_t v;
	char why[160];

	memset(o, 0, sizeof(*o));
	o->mode = MODE_BW;
	strcpy(o->transport, "shm");
	o->size = 64;
	o->rounds = 5;
	o->burst = 32;
	o->port = 18515;
	o->gap_us = 1000;
	o->paced = 2000;
	o->idle_sleep = 120;
	o->per_pass = 1;
	o->channels[0] = 1;
	o->channels[1] = 8;
	o->channels[2] = 64;
	o->nchannels = 3;
	rb2_chan_params_init(&o->chan);

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'm':
			if (strcmp(optarg, "bw") == 0) {
				o->mode = MODE_BW;
			} else if (strcmp(optarg, "lat") == 0) {
				o->mode = MODE_LAT;
			} else if (strcmp(optarg, "ops") == 0) {
				o->mode = MODE_OPS;
			} else if (strcmp(optarg, "wake") == 0) {
				o->mode = MODE_WAKE;
			} else if (strcmp(optarg, "bulk") == 0) {
				o->mode = MODE_BULK;
			} else if (strcmp(optarg, "lanes") == 0) {
				o->mode = MODE_LANES;
			} else {
				fprintf(stderr, "rb2-perf: invalid --mode '%s': use bw, lat, ops, wake, bulk or lanes\n", optarg);
				return -1;
			}
			break;
		case 't':
			if (strlen(optarg) >= sizeof(o->transport)) {
				fprintf(stderr, "rb2-perf: --transport spec too long\n");
				return -1;
			}
			strcpy(o->transport, optarg);
			break;
		case 's':
			if (parse_u64("size", optarg, 8, 1u << 30, &v) < 0)
				return -1;
			o->size = (uint32_t)v;
			break;
		case 'n':
			if (parse_u64("count", optarg, 1, UINT64_MAX / 2, &o->count) < 0)
				return -1;
			have_count = 1;
			break;
		case 'D': {
			char *end;
			o->duration = strtod(optarg, &end);
			if (end == optarg || *end != '\0' || !(o->duration > 0 && o->duration <= 3600)) {
				fprintf(stderr, "rb2-perf: invalid --duration '%s': seconds in (0, 3600]\n", optarg);
				return -1;
			}
			break;
		}
		case 'w':
			if (parse_u64("warmup", optarg, 0, UINT64_MAX / 2, &o->warmup) < 0)
				return -1;
			have_warmup = 1;
			break;
		case 'r':
			if (parse_u64("rounds", optarg, 1, PERF_MAX_ROUNDS, &v) < 0)
				return -1;
			o->rounds = (unsigned int)v;
			break;
		case 'b':
			if (parse_u64("burst", optarg, 1, 256, &v) < 0)
				return -1;
			o->burst = (unsigned int)v;
			break;
		case 'N':
			if (parse_u64("slots", optarg, 2, 1u << 24, &v) < 0)
				return -1;
			o->chan.slots = (uint32_t)v;
			break;
		case 'S':
			if (parse_u64("slot-size", optarg, 8, 1u << 30, &v) < 0)
				return -1;
			o->chan.slot_size = (uint32_t)v;
			have_slot_size = 1;
			break;
		case 'A':
			if (parse_u64("alpha", optarg, 0, UINT32_MAX, &v) < 0)
				return -1;
			o->chan.alpha = (uint32_t)v;
			have_a = 1;
			break;
		case 'B':
			if (parse_u64("beta", optarg, 0, UINT32_MAX, &v) < 0)
				return -1;
			o->chan.beta = (uint32_t)v;
			have_b = 1;
			break;
		case 'G':
			if (parse_u64("gamma", optarg, 0, UINT32_MAX, &v) < 0)
				return -1;
			o->chan.gamma = (uint32_t)v;
			have_g = 1;
			break;
		case 'c':
			o->compare = 1;
			break;
		case 'F':
			o->fixed = 1;
			break;
		case 'R':
			o->server = 1;
			break;
		case 'C':
			o->client = optarg;
			break;
		case 'P':
			o->peer = optarg;
			break;
		case 'O':
			if (parse_u64("port", optarg, 1, 65534, &v) < 0)
				return -1;
			o->port = (unsigned int)v;
			break;
		case 'j':
			o->json = optarg;
			break;
		case 'p': {
			char list[128], *save = NULL;

			snprintf(list, sizeof(list), "%s", optarg);
			for (char *t = strtok_r(list, ",", &save); t != NULL;
			     t = strtok_r(NULL, ",", &save)) {
				struct rb2_chan_params tp = o->chan;

				if (perf_apply_preset(&tp, t, o) != 0)
					return -1;
				if (o->npresets == PERF_MAX_VARIANTS) {
					fprintf(stderr, "rb2-perf: at most %d presets\n", PERF_MAX_VARIANTS);
					return -1;
				}
				if (strlen(t) > 18) { /* "perf-" + it names a channel */
					fprintf(stderr, "rb2-perf: preset name '%s' too long\n", t);
					return -1;
				}
				snprintf(o->presets[o->npresets++], sizeof(o->presets[0]), "%s", t);
			}
			break;
		}
		case 'X':
			o->bounce = 1;
			break;
		case 'E':
			o->chan.flags |= RB2_CHAN_F_NO_ELASTIC;
			break;
		case 'K':
			if (parse_u64("pairs", optarg, 1, PERF_MAX_PAIRS, &v) < 0)
				return -1;
			o->pairs = (unsigned int)v;
			break;
		case 'Y':
			if (strchr(optarg, '+') == NULL || strchr(optarg, ':') != NULL ||
			    preset_sync(&o->chan, optarg) != 0) {
				fprintf(stderr, "rb2-perf: invalid --policy '%s': expected HEAD+TAIL, push|pull + wt|cq|poll\n",
					optarg);
				return -1;
			}
			break;
		case '2':
			o->no_batching = 1;
			break;
		case '3':
			o->no_sync_ahead = 1;
			break;
		case '9':
			o->wrong_numa = 1;
			break;
		case 'U':
			o->chan.flags |= RB2_CHAN_F_UNALIGNED;
			break;
		case 'H':
			if (strcmp(optarg, "push") == 0) {
				o->chan.head_sync = RB2_HEAD_LAZY_PUSH;
			} else if (strcmp(optarg, "pull") == 0) {
				o->chan.head_sync = RB2_HEAD_LAZY_PULL;
			} else {
				fprintf(stderr, "rb2-perf: invalid --head-sync '%s': expected push or pull\n", optarg);
				return -1;
			}
			break;
		case 'T':
			if (strcmp(optarg, "wt") == 0 || strcmp(optarg, "write-twice") == 0) {
				o->chan.tail_sync = RB2_TAIL_WRITE_TWICE;
			} else if (strcmp(optarg, "poll") == 0) {
				o->chan.tail_sync = RB2_TAIL_POLL_MSG;
			} else if (strcmp(optarg, "imm") == 0 || strcmp(optarg, "cq") == 0) {
				o->chan.tail_sync = RB2_TAIL_WRITE_IMM;
			} else {
				fprintf(stderr, "rb2-perf: invalid --tail-sync '%s': expected wt, imm or poll\n", optarg);
				return -1;
			}
			break;
		case 'g':
			if (parse_u64("gap-us", optarg, 1, 10000000, &o->gap_us) < 0)
				return -1;
			break;
		case 'k': {
			char list[64], *save = NULL;

			snprintf(list, sizeof(list), "%s", optarg);
			o->nchannels = 0;
			for (char *t = strtok_r(list, ",", &save); t != NULL;
			     t = strtok_r(NULL, ",", &save)) {
				if (o->nchannels == PERF_MAX_CHANNEL_COUNTS ||
				    parse_u64("channels", t, 1, 256, &v) < 0) {
					fprintf(stderr, "rb2-perf: --channels takes up to %d counts of 1 to 256\n",
						PERF_MAX_CHANNEL_COUNTS);
					return -1;
				}
				o->channels[o->nchannels++] = (unsigned int)v;
			}
			o->channels_given = 1;
			break;
		}
		case 'L':
			o->lane = 1;
			break;
		case 'W':
			if (parse_u64("max-inflight", optarg, 0, 1u << 20, &v) < 0)
				return -1;
			o->chan.max_inflight = (uint32_t)v;
			break;
		case 'e':
			if (parse_u64("per-pass", optarg, 1, 1024, &v) < 0)
				return -1;
			o->per_pass = (unsigned int)v;
			break;
		case 'q':
			if (parse_u64("paced", optarg, 1, 100000000, &o->paced) < 0)
				return -1;
			break;
		case 'i':
			if (parse_u64("idle-sleep", optarg, 1, UINT32_MAX, &v) < 0)
				return -1;
			o->idle_sleep = (unsigned int)v;
			break;
		case 'h':
			usage(stdout, argv[0]);
			exit(EXIT_SUCCESS);
		default:
			fprintf(stderr, "rb2-perf: see --help\n");
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "rb2-perf: unexpected argument '%s' (EAL args go before --, app args after)\n",
			argv[optind]);
		return -1;
	}
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
		fprintf(stderr, "rb2-perf: --pairs: bw mode in one process, one design (at most one --preset), without --compare or --bounce\n");
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
		fprintf(stderr, "rb2-perf: --preset: several (bw, in one process) or one (lat)\n");
		return -1;
	}
	for (unsigned int i = 0; i < o->npresets; i++)
		if (perf_preset_is_l5(o->presets[i]) &&
		    (o->pairs || o->server || o->client != NULL)) {
			fprintf(stderr, "rb2-perf: --preset %s: L5's own ring (rb2_l5.h) connects its halves within one process, in bw and lat; --pairs and two-process runs take the RB2 channel designs\n",
				o->presets[i]);
			return -1;
		}
	if (o->npresets > 0 && o->compare && o->npresets > PERF_MAX_VARIANTS - 2) {
		fprintf(stderr, "rb2-perf: --preset with --compare: at most %d presets\n",
			PERF_MAX_VARIANTS - 2);
		return -1;
	}
	if (o->mode == MODE_WAKE && (o->server || o->client || o->compare || o->pairs ||
				      o->bounce || o->npresets > 0 || o->size < 16)) {
		fprintf(stderr, "rb2-perf: --mode wake runs one design in one process, messages of at least 16 B: no --server, --client, --compare, --pairs, --bounce or --preset\n");
		return -1;
	}
	if (o->mode == MODE_LANES && (o->server || o->client || o->compare || o->pairs ||
				       o->bounce || o->npresets > 0 || o->size < 8)) {
		fprintf(stderr, "rb2-perf: --mode lanes runs in one process, messages of at least 8 B: no --server, --client, --compare, --pairs, --bounce or --preset\n");
		return -1;
	}
	if (o->mode == MODE_BULK && (o->server || o->client || o->compare || o->pairs ||
				      o->bounce || o->npresets > 0)) {
		fprintf(stderr, "rb2-perf: --mode bulk runs its own sizes in one process: no --server, --client, --compare, --pairs, --bounce or --preset\n");
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

void
perf_json_begin(FILE *f, const struct perf_opts *o)
{
	/* The run's parameters by jansson (the transport is the user's
	 * string), written without the closing brace: each mode appends its
	 * figures, then closes the object. */
	json_t *doc = json_pack("{s:s, s:s, s:I, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
				"s:I, s:I, s:I, s:o, s:I}",
		"tool", "rb2-perf", "version", RB2_VERSION, "time", (json_int_t)time(NULL),
		"mode", o->mode == MODE_BW ? "bw" : o->mode == MODE_LAT ? "lat" :
			o->mode == MODE_WAKE ? "wake" : o->mode == MODE_BULK ? "bulk" :
			o->mode == MODE_LANES ? "lanes" : "ops",
		"transport", o->transport, "size", (json_int_t)o->size,
		"slots", (json_int_t)o->chan.slots, "slot_size", (json_int_t)o->chan.slot_size,
		"alpha", (json_int_t)o->chan.alpha, "beta", (json_int_t)o->chan.beta,
		"gamma", (json_int_t)o->chan.gamma, "msg_size", (json_int_t)o->chan.msg_size,
		"flags", (json_int_t)o->chan.flags, "burst", (json_int_t)o->burst,
		"count", (json_int_t)o->count, "duration", bench_json_real(o->duration),
		"tsc_hz", (json_int_t)rte_get_tsc_hz());
	char *head = doc != NULL ? json_dumps(doc, JSON_REAL_PRECISION(6)) : NULL;

	json_decref(doc);
	if (head == NULL) {
		fputs("{\"tool\": \"rb2-perf\"", f);
		return;
	}
	head[strlen(head) - 1] = '\0';
	fputs(head, f);
	free(head);
}

void
perf_json_lat(FILE *f, const char *key, const struct perf_lat *l, int last)
{
	fprintf(f, "\"%s\": {\"avg_ns\": %.1f, \"p50_ns\": %.1f, \"p99_ns\": %.1f, "
		"\"p99_9_ns\": %.1f, \"min_ns\": %.1f, \"max_ns\": %.1f}%s",
		key, l->avg, l->p50, l->p99, l->p999, l->min, l->max, last ? "" : ", ");
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

int
main(int argc, char **argv)
{
	struct perf_opts o;
	FILE *json = NULL;
	int ret;

	/* "--help" after "--", or with no "--" at all, is ours; before "--"
	 * it is the EAL's own. */
	for (int i = 1, seen_dd = 0; i < argc; i++) {
		int has_dd = seen_dd;
		for (int j = i + 1; !has_dd && j < argc; j++)
			has_dd = strcmp(argv[j], "--") == 0;
		seen_dd |= strcmp(argv[i], "--") == 0;
		if ((strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) &&
		    (seen_dd || !has_dd)) {
			usage(stdout, argv[0]);
			return EXIT_SUCCESS;
		}
	}

	ret = rb2_eal_init(argc, argv, 30); /* a secondary waits for its primary */
	if (ret < 0) {
		fprintf(stderr, "rb2-perf: EAL initialisation failed: %s (check the EAL args before --; without hugepages add --no-huge)\n",
			rte_strerror(rte_errno));
		return EXIT_FAILURE;
	}
	argv[ret] = argv[0];
	if (parse_args(argc - ret, argv + ret, &o) < 0) {
		rb2_eal_cleanup();
		return 2;
	}
	o.tx_lcore = rte_get_main_lcore();
	o.rx_lcore = rte_get_next_lcore(o.tx_lcore, 1, 0);
	if ((o.server || o.client != NULL) && !rte_eal_has_hugepages() &&
	    (spec_caps(o.transport) & RB2_XPORT_CAP_REMOTE) == 0) {
		/* Two processes meet in shared memzones: only hugepage memory is
		 * shared between the processes of a DPDK group. */
		fprintf(stderr, "rb2-perf: --server/--client over %s are two processes of one DPDK group, "
			"which needs hugepages: drop --no-huge and reserve some (as root: "
			"dpdk-hugepages.py -p 2M --setup 1G), give both the same --file-prefix, and "
			"start the second with --proc-type=secondary\n", o.transport);
		rb2_eal_cleanup();
		return 2;
	}
	if (o.server || o.client != NULL) {
		/* One side per process, on the main lcore. */
		o.rx_lcore = o.tx_lcore;
		o.chan.lcore_id = o.tx_lcore;
		if (o.json != NULL && (json = fopen(o.json, "w")) == NULL) {
			fprintf(stderr, "rb2-perf: cannot write --json %s: %s\n", o.json, strerror(errno));
			rb2_eal_cleanup();
			return 2;
		}
		ret = perf_remote_run(&o, json);
		if (json != NULL)
			fclose(json);
		rb2_eal_cleanup();
		return ret == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
	}
	if (o.mode != MODE_OPS && (rte_lcore_count() < 2 || o.rx_lcore >= RTE_MAX_LCORE)) {
		fprintf(stderr, "rb2-perf: needs two lcores, one per half of the channel; EAL has %u (use -l 0-1)\n",
			rte_lcore_count());
		rb2_eal_cleanup();
		return 2;
	}
	if (o.json != NULL && (json = fopen(o.json, "w")) == NULL) {
		fprintf(stderr, "rb2-perf: cannot write --json %s: %s\n", o.json, strerror(errno));
		rb2_eal_cleanup();
		return 2;
	}
	ret = o.mode == MODE_OPS ? perf_ops_run(&o, json) :
		o.mode == MODE_WAKE ? perf_wake_run(&o, json) :
		o.mode == MODE_BULK ? perf_bulk_run(&o, json) :
		o.mode == MODE_LANES ? perf_lanes_run(&o, json) :
		o.mode == MODE_LAT ? perf_lat_run(&o, json) :
		o.pairs > 0 ? perf_pairs_run(&o, json) : perf_bw_run(&o, json);
	if (json != NULL)
		fclose(json);
	rb2_eal_cleanup();
	return ret == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
