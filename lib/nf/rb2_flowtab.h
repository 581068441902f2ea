/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_FLOWTAB_H
#define RB2_FLOWTAB_H

/**
 * @file
 * The measurement NF's state: exact per-flow packets and bytes with first and
 * last timestamps, totals by record kind, top-K, and an optional count-min
 * sketch whose error is reported against the exact counts.
 *
 * @code
 * struct rb2_flowtab *ft = rb2_flowtab_create(1 << 20, 0);   // no sketch
 * rb2_flowtab_add_burst(ft, recs, n);     // on the measure lcore
 * struct rb2_flow top[10];
 * unsigned int k = rb2_flowtab_top(ft, top, 10);
 * @endcode
 *
 * The table is open-addressed, one 64-byte line per flow, and grows (off the
 * per-record path) past 70% load. Lookups run in bursts: hash all, prefetch
 * all buckets, then update, so the misses of a burst overlap.
 */

#include <stdint.h>

#include <rb2_trace.h>

#ifdef __cplusplus
extern "C" {
#endif

/** One flow (a cache line). */
struct rb2_flow {
	uint64_t k0, k1, k2;  /**< the record's key: addresses, ports/proto/kind, x */
	uint64_t packets;
	uint64_t bytes;
	uint64_t first_ns;
	uint64_t last_ns;
	uint64_t hash;        /**< 0: empty slot */
};

/** Totals over every record, by kind. */
struct rb2_nf_totals {
	uint64_t packets, bytes;
	uint64_t ipv4, ipv6, nonip, malformed;
	uint64_t first_ns, last_ns;
	uint64_t lost;  /**< in packets, but in no flow: the table could not grow */
};

struct rb2_flowtab;

/**
 * @param flows Expected flows (the table starts at twice that, rounded up).
 * @param cm_width 0 for no sketch, else the count-min width (4 rows).
 * @return The table, or NULL (out of memory).
 */
struct rb2_flowtab *rb2_flowtab_create(uint64_t flows, uint32_t cm_width);
void rb2_flowtab_free(struct rb2_flowtab *ft);

/** Account @p n records (IP kinds become flows; every kind is in the totals). */
void rb2_flowtab_add_burst(struct rb2_flowtab *ft, const struct rb2_rec *recs,
			   unsigned int n);

/** As rb2_flowtab_add_burst(), for records scattered in memory (in place in
 * the messages that carried them). */
void rb2_flowtab_add_ptrs(struct rb2_flowtab *ft, const struct rb2_rec *const *recs,
			  unsigned int n);

/** @return the number of flows. */
uint64_t rb2_flowtab_count(const struct rb2_flowtab *ft);

/** Copy the totals. */
void rb2_flowtab_totals(const struct rb2_flowtab *ft, struct rb2_nf_totals *t);

/** Look a record's flow up; NULL if it has none. */
const struct rb2_flow *rb2_flowtab_find(const struct rb2_flowtab *ft,
					const struct rb2_rec *rec);

/**
 * Call @p cb for every flow, in table order.
 * @return the number of flows visited.
 */
uint64_t rb2_flowtab_walk(const struct rb2_flowtab *ft,
			  void (*cb)(void *arg, const struct rb2_flow *f), void *arg);

/**
 * The @p k heaviest flows by bytes (ties by packets), heaviest first.
 * @return how many were written (at most @p k).
 */
unsigned int rb2_flowtab_top(const struct rb2_flowtab *ft, struct rb2_flow *out,
			     unsigned int k);

/** The sketch's error against the exact counts (packets). */
struct rb2_cm_error {
	double mean_rel;   /**< mean over flows of (estimate - exact) / exact */
	double max_rel;
	uint64_t exact;    /**< flows estimated exactly */
};

/** @return 0, or -ENOENT if the table has no sketch. */
int rb2_flowtab_cm_error(const struct rb2_flowtab *ft, struct rb2_cm_error *e);

/** The sketch's packet estimate for a flow's key (0 if no sketch). */
uint64_t rb2_flowtab_cm_estimate(const struct rb2_flowtab *ft, const struct rb2_flow *f);

#ifdef __cplusplus
}
#endif

#endif /* RB2_FLOWTAB_H */
