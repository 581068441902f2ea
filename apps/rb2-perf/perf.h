/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_PERF_H
#define RB2_PERF_H

/* rb2-perf: shared types of the option parser, the streaming (bw) and
 * ping-pong (lat) benchmarks, and the report writers. */

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <rte_common.h>

#include <rb2_chan.h>
#include "../common/bench.h"

struct rb2_l5;

#define PERF_MAX_VARIANTS 6
#define PERF_MAX_ROUNDS 101
#define PERF_MAX_PAIRS 64       /* --pairs: channel pairs at once */
#define PERF_MAX_CHANNEL_COUNTS 4 /* --channels: counts compared */
#define PERF_MAX_REMOTE_CHANNELS 256 /* --channels K of a two-process bw run */

enum perf_mode { MODE_BW, MODE_LAT, MODE_OPS, MODE_WAKE, MODE_BULK, MODE_LANES };

struct perf_opts {
	enum perf_mode mode;
	char transport[64];     /* transport spec, e.g. "shm,mode=copy" */
	uint32_t size;          /* message bytes */
	uint64_t count;         /* messages per round (bw) / measured round trips (lat) */
	double duration;        /* seconds per round (bw); 0: use count */
	uint64_t warmup;        /* lat: warm-up round trips */
	unsigned int rounds;    /* bw: rounds per variant, interleaved */
	unsigned int burst;     /* receiver burst, rte_ring burst */
	struct rb2_chan_params chan;
	int compare;            /* add rte_ring (and both shm modes) */
	int fixed;              /* fixed-size channels (msg_size = size) */
	int slot_size_given;    /* --slot-size: presets keep it as it is */
	int bounce;             /* bw: copy through bounce buffers (no zero copy) */
	unsigned int pairs;     /* bw: k channel pairs on 2k lcores (Fig. 7); 0: one */
	/* Ablations of Table II, applied after any preset. */
	int no_batching;        /* M2: alpha = beta = gamma = 1 */
	int no_sync_ahead;      /* M3: beta = alpha */
	int wrong_numa;         /* M9: ring memory on another NUMA node */
	const char *json;       /* JSON output file, or NULL */
	unsigned int tx_lcore, rx_lcore;
	/* Two-process runs (perftest style). */
	int server;             /* --server */
	const char *client;     /* --client HOST */
	const char *peer;       /* --peer HOST: the client, for the lat server */
	unsigned int port;      /* --port (lat also uses port + 1) */
	/* --designs: designs of the paper's evaluation, interleaved (bw). */
	char presets[PERF_MAX_VARIANTS][24];
	unsigned int npresets;
	/* --mode wake: adaptive polling. */
	uint64_t gap_us;        /* paced messages this far apart */
	uint64_t paced;         /* paced messages per round */
	unsigned int idle_sleep; /* empty polls before the adaptive receiver sleeps */
	/* --mode lanes: channel counts, messages per channel per pass. */
	unsigned int channels[PERF_MAX_CHANNEL_COUNTS], nchannels;
	int channels_given;     /* --channels on the command line */
	unsigned int per_pass;
	int lane;               /* bw --server/--client: the channels on one lane a side */
};

/* One benchmarked implementation in bw mode. */
struct perf_variant {
	const char *name;       /* "rb2-shm-loadstore", "ring-zc", ... */
	const char *desc;
	double mps[PERF_MAX_ROUNDS]; /* million messages/s per round */
	unsigned int n;
	double median;
	uint64_t errors;        /* lost, duplicated, reordered or corrupt */
	/* rb2 variants only: the channel and its counters after the run. */
	struct rb2_xport *xp;
	struct rb2_tx *tx;
	struct rb2_rx *rx;
	struct rte_ring *ring;
	struct rb2_l5 *l5;     /* VAR_L5: L5's own ring (rb2_l5.h) */
	int kind;               /* VAR_RB2, VAR_RING_ELEM, VAR_RING_ZC, VAR_L5 */
	/* What the design copies (perf_design_copies()), and the bytes it did. */
	struct perf_copies { int in, out, zero; } copies;
	uint64_t copied_bytes;
};

enum { VAR_RB2, VAR_RING_ELEM, VAR_RING_ZC, VAR_L5 };

/* Latency results, nanoseconds. */
struct perf_lat {
	double avg, p50, p99, p999, min, max;
};

/* main.c: a design (rb2, l5, farm) or a sync-policy pair (push+wt,
 * pull+poll, ...: the rest of @p stays) applied to channel parameters.
 * Returns 0, -ENOENT or -ENOTSUP (the message is printed). */
int perf_apply_preset(struct rb2_chan_params *p, const char *name,
		      const struct perf_opts *o);
int perf_preset_is_rb2(const char *name);
/* "l5" or "l5:...": in bw and lat, L5's own ring (rb2_l5.h) runs instead of
 * an RB² channel set up as L5. */
int perf_preset_is_l5(const char *name);
/* What a design's application copies, as its paper or code does (see
 * doc/guides/prog_guide/chan.md): in (the sender builds the message elsewhere and copies it
 * into the ring), out (the receiver copies it out before using it), zero
 * (the receiver clears what it read: L5). RB² and the sync pairs: nothing. */
struct perf_copies perf_design_copies(const char *preset);
const char *perf_copies_name(struct perf_copies c);
void perf_ablate(struct rb2_chan_params *p, const struct perf_opts *o);

/* Each mode runs, prints its table on stdout, and, where @doc is not NULL
 * (--json), adds its figures to @doc (perf_json_begin()'s parameters). */

/* perf_bw.c */
int perf_bw_run(const struct perf_opts *o, json_t *doc);
int perf_pairs_run(const struct perf_opts *o, json_t *doc);
/* perf_lat.c */
int perf_lat_run(const struct perf_opts *o, json_t *doc);
void perf_lat_summarize(uint64_t *cyc, uint64_t n, struct perf_lat *l);
/* perf_ops.c */
int perf_ops_run(const struct perf_opts *o, json_t *doc);
/* perf_wake.c */
int perf_wake_run(const struct perf_opts *o, json_t *doc);
/* perf_lanes.c */
int perf_lanes_run(const struct perf_opts *o, json_t *doc);
/* perf_bulk.c */
int perf_bulk_run(const struct perf_opts *o, json_t *doc);
/* perf_remote.c */
int perf_remote_run(const struct perf_opts *o, json_t *doc);

/* Payload: every 8-byte word holds the sequence number (the tail bytes of a
 * size that is not a multiple of 8 too), so a reader checks the first and the
 * last word and so touches the first and the last cache line. */
static inline void
perf_fill(void *buf, uint32_t size, uint64_t seq)
{
	uint64_t *w = buf;
	uint32_t i, words = size / 8;

	for (i = 0; i < words; i++)
		w[i] = seq;
	if (size % 8)
		memcpy((uint8_t *)buf + size - 8, &seq, 8);
}

static inline int
perf_check(const void *buf, uint32_t size, uint64_t seq)
{
	uint64_t first, last;

	memcpy(&first, buf, 8);
	memcpy(&last, (const uint8_t *)buf + size - 8, 8);
	return first == seq && last == seq;
}

/* The run's parameters: the object every mode adds its figures to. */
json_t *perf_json_begin(const struct perf_opts *o);
/* {"avg_ns", "p50_ns", "p99_ns", "p99_9_ns", "min_ns", "max_ns"} of @l. */
json_t *perf_json_lat(const struct perf_lat *l);

#endif /* RB2_PERF_H */
