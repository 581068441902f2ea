/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * rb2-flowbench: the measurement NF's flow table (rb2_flowtab.h) against
 * DPDK's rte_hash as the flow table, on the records of one capture, in
 * interleaved rounds: records per second and cycles per record of the
 * table's per-packet work, and memory per flow of the table's capacity.
 *
 *   rb2-flowbench [EAL args] -- --trace FILE [--flows N] [--rounds R]
 *                 [--designs rb2,rte_hash,none] [--json FILE]
 *
 * Both tables key a flow by the 5-tuple, the IP version and the ingress
 * port, hold --flows flows, and count packets, bytes, first and last time
 * and TCP flags per flow; neither ends a flow here (no timeouts), so they
 * do the same work. rte_hash takes the key (40 bytes) with its default
 * hash, a bucket extension table so that no flow is refused before the
 * capacity, and bulk lookups of 32; a flow's counters sit in an array at
 * the position it returns. 'none' only walks the records: what the others
 * cost beyond it is the table's (run under cachegrind, its misses).
 */

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_hash.h>
#include <rte_malloc.h>

#include <rb2_flowtab.h>
#include <rb2_lcore.h>
#include <rb2_trace.h>

#include "../common/bench.h"

#define PROG "rb2-flowbench"
#define BURST UINT64_C(32)

enum { D_RB2, D_RTE_HASH, D_NONE, NDESIGNS };
static const char *const design_name[NDESIGNS] = { "rb2", "rte_hash", "none" };

/* rte_hash's key: what rb2_flowtab keys a flow by. */
struct flowkey {
	uint8_t src[16], dst[16];
	uint16_t sport, dport;
	uint8_t proto, kind;
	uint16_t in_port;
};

/* rte_hash's per-flow counters, at the position of the flow's key. */
struct flowctr {
	uint64_t packets, bytes, first_ns, last_ns;
	uint8_t tcp_flags;
};

struct ctx {
	struct rb2_rec *recs;
	uint64_t n, cap;
	uint64_t flows;             /* capacity */
	uint64_t cycles[NDESIGNS];  /* of the last round */
	uint64_t mem[NDESIGNS];     /* bytes the table took */
	uint64_t held[NDESIGNS];    /* flows it held at the end */
	uint64_t sink;
	unsigned int designs[NDESIGNS], ndesigns;
};

static uint64_t
heap_bytes(void)
{
	struct rte_malloc_socket_stats s;
	uint64_t total = 0;

	for (unsigned int i = 0; i < rte_socket_count(); i++)
		if (rte_malloc_get_socket_stats(rte_socket_id_by_idx(i), &s) == 0)
			total += s.heap_allocsz_bytes;
	return total;
}

/*
 * The timed loops are functions of their own, never inlined, so that
 * valgrind --tool=callgrind --cache-sim=yes --toggle-collect=loop_rb2 (or
 * loop_rte_hash) counts one design's cache misses alone (benchmarks.md).
 */
static __attribute__((noinline)) void
loop_rb2(struct ctx *c, struct rb2_flowtab *ft)
{
	for (uint64_t i = 0; i < c->n; i += BURST)
		rb2_flowtab_add_burst(ft, c->recs + i, (unsigned int)RTE_MIN(BURST, c->n - i));
}

static int
run_rb2(struct ctx *c, uint64_t *cycles)
{
	struct rb2_flowtab_params p;
	struct rb2_flowtab *ft;
	uint64_t before = heap_bytes(), t0;

	rb2_flowtab_params_init(&p);
	p.max_flows = c->flows;
	p.active_ns = p.idle_ns = 0;
	p.socket_id = SOCKET_ID_ANY;
	p.prealloc = 1;         /* sized for the cap at once, as rte_hash is */
	ft = rb2_flowtab_create(&p);
	if (ft == NULL) {
		fprintf(stderr, PROG ": rb2_flowtab_create: %s (give the EAL more memory, -m)\n",
			strerror(errno));
		return -1;
	}
	c->mem[D_RB2] = heap_bytes() - before;
	t0 = rte_rdtsc();
	loop_rb2(c, ft);
	*cycles = rte_rdtsc() - t0;
	c->held[D_RB2] = rb2_flowtab_count(ft);
	rb2_flowtab_free(ft);
	return 0;
}

static __attribute__((noinline)) void
loop_rte_hash(struct ctx *c, struct rte_hash *h, struct flowctr *ctr)
{
	for (uint64_t i = 0; i < c->n; i += BURST) {
		unsigned int m = (unsigned int)RTE_MIN(BURST, c->n - i), k = 0;
		struct flowkey keys[32];
		const void *kp[32];
		const struct rb2_rec *rp[32];
		int32_t pos[32];

		for (unsigned int j = 0; j < m; j++) {
			const struct rb2_rec *r = &c->recs[i + j];

			if (r->kind != RB2_REC_IPV4 && r->kind != RB2_REC_IPV6)
				continue;
			memcpy(&keys[k], r, offsetof(struct flowkey, in_port));
			keys[k].in_port = r->in_port;
			kp[k] = &keys[k];
			rp[k++] = r;
		}
		if (k == 0)
			continue;
		rte_hash_lookup_bulk(h, kp, k, pos);
		for (unsigned int j = 0; j < k; j++) {
			struct flowctr *f;

			if (pos[j] < 0) {
				pos[j] = rte_hash_add_key(h, kp[j]);
				if (pos[j] < 0)
					continue;       /* full: the capacity is the cap */
				f = &ctr[pos[j]];
				f->first_ns = rp[j]->ts_ns;
			}
			f = &ctr[pos[j]];
			f->packets++;
			f->bytes += rp[j]->ip_len;
			f->last_ns = rp[j]->ts_ns;
			f->tcp_flags |= rp[j]->tcp_flags;
		}
	}
}

static int
run_rte_hash(struct ctx *c, uint64_t *cycles)
{
	char name[RTE_HASH_NAMESIZE];
	struct rte_hash_parameters hp = {
		.name = name, .entries = (uint32_t)c->flows, .key_len = sizeof(struct flowkey),
		.socket_id = (int)rte_socket_id(),
		.extra_flag = RTE_HASH_EXTRA_FLAGS_EXT_TABLE,
	};
	static unsigned int seq;
	uint64_t before = heap_bytes(), t0;
	struct flowctr *ctr;
	struct rte_hash *h;

	snprintf(name, sizeof(name), "flowbench%u", seq++);
	h = rte_hash_create(&hp);
	ctr = rte_zmalloc("flowbench", c->flows * sizeof(*ctr), 64);
	if (h == NULL || ctr == NULL) {
		fprintf(stderr, PROG ": rte_hash_create: %s (give the EAL more memory, -m)\n",
			rte_strerror(rte_errno));
		rte_hash_free(h);
		rte_free(ctr);
		return -1;
	}
	c->mem[D_RTE_HASH] = heap_bytes() - before;
	t0 = rte_rdtsc();
	loop_rte_hash(c, h, ctr);
	*cycles = rte_rdtsc() - t0;
	c->held[D_RTE_HASH] = (uint64_t)rte_hash_count(h);
	rte_hash_free(h);
	rte_free(ctr);
	return 0;
}

static int
run_none(struct ctx *c, uint64_t *cycles)
{
	uint64_t t0 = rte_rdtsc(), s = 0;

	for (uint64_t i = 0; i < c->n; i++)
		s += c->recs[i].ip_len;
	*cycles = rte_rdtsc() - t0;
	c->sink += s;
	c->mem[D_NONE] = 0;
	return 0;
}

static int
run(void *arg, unsigned int variant, unsigned int round, double *figure)
{
	struct ctx *c = arg;
	unsigned int d = c->designs[variant];
	uint64_t cyc = 0;
	int ret;

	(void)round;
	ret = d == D_RB2 ? run_rb2(c, &cyc) : d == D_RTE_HASH ? run_rte_hash(c, &cyc) :
		run_none(c, &cyc);
	if (ret != 0)
		return -1;
	c->cycles[d] = cyc;
	*figure = (double)c->n / ((double)cyc / (double)rte_get_tsc_hz()) / 1e6;
	return 0;
}

/* Read the capture into c->recs (replacing them) with rb2's reader or
 * libpcap's: @return the ns a record took, or -1. */
static double
load(struct ctx *c, const char *path, int libpcap)
{
	char err[256];
	uint64_t t0 = rte_rdtsc();
	struct rb2_trace *t = libpcap ? rb2_trace_open_libpcap(path, err, sizeof(err)) :
		rb2_trace_open(path, err, sizeof(err));
	int r;

	if (t == NULL) {
		fprintf(stderr, PROG ": %s\n", err);
		return -1;
	}
	/* A second read reuses the first's memory (its pages are in). */
	c->n = 0;
	if (c->recs == NULL) {
		c->cap = 1 << 20;
		c->recs = malloc(c->cap * sizeof(*c->recs));
	}
	while (c->recs != NULL &&
	       (r = rb2_trace_next_burst(t, &c->recs[c->n],
					 (unsigned int)RTE_MIN(UINT64_C(256), c->cap - c->n))) > 0)
		if ((c->n += (uint64_t)r) == c->cap) {
			c->cap *= 2;
			c->recs = realloc(c->recs, c->cap * sizeof(*c->recs));
		}
	rb2_trace_close(t);
	if (c->recs == NULL || c->n == 0) {
		fprintf(stderr, PROG ": %s: %s\n", path, c->recs == NULL ? "out of memory" :
			"no packet");
		return -1;
	}
	return (double)(rte_rdtsc() - t0) * 1e9 / (double)rte_get_tsc_hz() / (double)c->n;
}

/*
 * --reader both: the capture read into records by rb2's reader and by
 * libpcap in turn, @p rounds times; the two must give the same records.
 * @return a JSON object of the figures, or NULL.
 */
static json_t *
compare_readers(struct ctx *c, const char *path, unsigned int rounds)
{
	double ns[2][1000], ratio[1000];
	struct rb2_rec *first = NULL;
	uint64_t n = 0;

	if (load(c, path, 0) < 0)       /* the records' memory faulted in */
		return NULL;
	for (unsigned int r = 0; r < rounds; r++) {
		for (int lib = 0; lib < 2; lib++) {
			ns[lib][r] = load(c, path, lib);
			if (ns[lib][r] < 0)
				return NULL;
			if (r == 0 && lib == 0) {
				n = c->n;
				first = malloc(n * sizeof(*first));
				if (first == NULL)
					return NULL;
				memcpy(first, c->recs, n * sizeof(*first));
			} else if (r == 0 && (c->n != n || memcmp(first, c->recs, n * sizeof(*first)))) {
				fprintf(stderr, PROG ": %s: rb2's reader and libpcap give different "
					"records\n", path);
				free(first);
				return NULL;
			}
		}
		ratio[r] = ns[1][r] / ns[0][r];
		printf("read round %u/%u: rb2 %.1f ns/record, libpcap %.1f\n", r + 1, rounds,
		       ns[0][r], ns[1][r]);
	}
	free(first);
	return json_pack("{s:o, s:o, s:o, s:b}", "rb2_ns_per_record",
			 bench_json_real(bench_median(ns[0], rounds)), "libpcap_ns_per_record",
			 bench_json_real(bench_median(ns[1], rounds)), "libpcap_over_rb2",
			 bench_json_real(bench_median(ratio, rounds)), "same_records", 1);
}

static int
parse_designs(const char *prog, const char *arg, void *dst)
{
	return bench_parse_names(prog, "designs", arg, design_name, NDESIGNS, dst);
}

#define SYNOPSIS "[EAL args] -- --trace FILE [options]"

/* The options, with their defaults; the table below writes into them. */
static const char *trace, *json, *reader = "rb2";
static unsigned int rounds = 5, mask = 1u << D_RB2 | 1u << D_RTE_HASH;
static uint64_t flows = 1 << 20;

static struct bench_opt table[] = {
	{ .type = BENCH_TEXT, .help = "The NF's flow table against rte_hash as the flow "
	  "table, on one capture's records, in interleaved rounds (see the source's head)." },
	{ "trace", BENCH_STR, &trace, .arg = "FILE", .help = "the capture (pcap, pcapng)" },
	{ "flows", BENCH_U64, &flows, 64, 1u << 31, .arg = "N",
	  .help = "each table's capacity (default 1M)" },
	{ "rounds", BENCH_UINT, &rounds, 1, 1000, .arg = "R",
	  .help = "interleaved rounds (default 5)" },
	{ "designs", BENCH_CALL, &mask, .call = parse_designs, .arg = "LIST",
	  .help = "rb2, rte_hash, none (default rb2,rte_hash)" },
	{ "reader", BENCH_STR, &reader, .arg = "WHICH",
	  .help = "the capture's reader: rb2 (default), libpcap, or both: then it is "
	  "read by each in turn, --rounds times, timed, and their records compared" },
	{ "json", BENCH_STR, &json, .arg = "FILE", .help = "the figures as JSON" },
	{ .name = "help", .type = BENCH_HELP },
	{ .type = BENCH_END },
};

static int
flowbench_main(int argc, char **argv)
{
	struct ctx c = { .flows = 0 };
	json_t *doc, *ds, *read = NULL;
	double *fig;

	if (bench_opts_parse(PROG, SYNOPSIS, table, argc, argv) < 0)
		return 1;
	if (trace == NULL) {
		fprintf(stderr, PROG ": give --trace FILE (rb2-tracegen makes one)\n");
		return 1;
	}
	c.flows = flows;
	for (unsigned int d = 0; d < NDESIGNS; d++)
		if (mask & 1u << d)
			c.designs[c.ndesigns++] = d;
	if (strcmp(reader, "rb2") != 0 && strcmp(reader, "libpcap") != 0 &&
	    strcmp(reader, "both") != 0) {
		fprintf(stderr, PROG ": --reader %s: expected rb2, libpcap or both\n", reader);
		return 1;
	}
	if (strcmp(reader, "both") == 0) {
		read = compare_readers(&c, trace, rounds);
		if (read == NULL)
			return 1;
	} else if (load(&c, trace, strcmp(reader, "libpcap") == 0) < 0) {
		return 1;
	}
	fig = calloc((size_t)rounds * c.ndesigns, sizeof(*fig));
	if (fig == NULL || bench_rounds_run(PROG, rounds, c.ndesigns, run, &c, fig) < 0)
		return 1;
	doc = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I}", "tool", PROG, "layer", "application",
			"trace", trace, "records", (json_int_t)c.n, "flows_cap", (json_int_t)flows,
			"rounds", (json_int_t)rounds);
	ds = json_object();
	printf("%-10s %12s %14s %12s %14s %10s\n", "design", "M records/s", "cycles/record",
	       "table MiB", "bytes per flow", "flows held");
	for (unsigned int v = 0; v < c.ndesigns; v++) {
		unsigned int d = c.designs[v];
		double med = bench_median(fig + (size_t)v * rounds, rounds);
		double cpr = (double)rte_get_tsc_hz() / (med * 1e6);

		printf("%-10s %12.2f %14.1f %12.1f %14.1f %10" PRIu64 "\n", design_name[d], med, cpr,
		       (double)c.mem[d] / (1 << 20), (double)c.mem[d] / (double)flows, c.held[d]);
		json_object_set_new(ds, design_name[d], json_pack("{s:o, s:o, s:o, s:I, s:o, s:I}",
			"mrecords_per_s", bench_json_rounds(fig + (size_t)v * rounds, rounds),
			"median_mrecords_per_s", bench_json_real(med),
			"cycles_per_record", bench_json_real(cpr),
			"table_bytes", (json_int_t)c.mem[d],
			"bytes_per_flow_of_cap", bench_json_real((double)c.mem[d] / (double)flows),
			"flows_held", (json_int_t)c.held[d]));
	}
	json_object_set_new(doc, "designs", ds);
	if (read != NULL)
		json_object_set_new(doc, "read", read);
	if (mask & 1u << D_RB2 && mask & 1u << D_RTE_HASH)
		json_object_set_new(doc, "rb2_over_rte_hash", bench_json_real(bench_median_ratio(
			fig, fig + rounds, rounds)));
	free(fig);
	free(c.recs);
	return bench_json_emit(doc, json, PROG) < 0;
}

static void
app_usage(FILE *f)
{
	bench_opts_usage(f, PROG, SYNOPSIS, table);
}

int
main(int argc, char **argv)
{
	struct option *lo = bench_opts_long(table);
	const struct rb2_app app = { .name = PROG, .usage = app_usage, .options = lo };
	int ret = rb2_app_run(&app, argc, argv, flowbench_main);

	free(lo);
	return ret;
}
