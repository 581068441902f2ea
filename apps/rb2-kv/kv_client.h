/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef KV_CLIENT_H
#define KV_CLIENT_H

/*
 * rb2-kv's YCSB client: one lcore's closed loop over its connections, each
 * with up to `depth` requests outstanding, over rb2 connections or TCP
 * (the same binary protocol), checking every answer: each value read must
 * be one written for its key (kv_value_check()), no older than the last
 * write acknowledged when the read was sent and no newer than the last
 * write sent when its answer came.
 *
 * Versions carry this client process's epoch in their top 24 bits (struct
 * kv_shared): a value written by another process, such as an earlier
 * `--phase load`, is one this process cannot date. It is taken as correct
 * (its checksum still is checked) until this process has a write of that
 * record acknowledged; after that, reading it is reading a lost write.
 *
 * That check is exact because the client never has two writes to one key
 * in flight (a write waits, unsent, for the one before it to be answered):
 * versions are then applied in the order they were numbered. (Two writes
 * in flight on different connections may arrive in either order, and a
 * check on numbers alone would blame the server for a legal order.)
 * YCSB's own client checks nothing.
 */

#include <signal.h>
#include <stdint.h>

#include <rb2_conn.h>

#include "app_hist.h"
#include "app_net.h"
#include "ycsb.h"

/* What every client lcore shares: the run's parameters and the versions
 * written, for the checks. */
struct kv_shared {
	struct ycsb_workload w;
	uint64_t records, operations;   /* operations: over all lcores */
	uint32_t value_size;
	unsigned int conns, depth;      /* per lcore */
	unsigned int ports;             /* connections spread over port .. port+ports-1 */
	uint16_t port;
	uint64_t key_space;
	uint64_t seed;
	uint64_t tracked;               /* records tracked: records + room for inserts */
	uint64_t *issued, *acked;       /* versions, by record: epoch << 40 | count */
	uint64_t epoch;                 /* this process's, KV_EPOCH_SHIFT up */
	uint8_t *writing;               /* a write of the record is in flight */
	struct ycsb_inserts inserts;    /* the shared insert counter (workload D) */
	int quiet;                      /* no progress lines */
};

#define KV_EPOCH_SHIFT 40
#define KV_COUNT_MASK ((1ull << KV_EPOCH_SHIFT) - 1)

/* Set every tracked record's versions to "none written by this process",
 * in an epoch drawn for it. */
void kv_shared_versions_init(struct kv_shared *sh);

/* The 8-byte key of record @p keynum. */
static inline uint64_t
kv_client_key(const struct kv_shared *sh, uint64_t keynum)
{
	return ycsb_fnvhash64(keynum + (sh->key_space << 40));
}

enum kv_phase { KV_LOAD, KV_RUN };

struct kv_result {
	struct app_hist lat[YCSB_NOPS];
	uint64_t ok[YCSB_NOPS], not_found[YCSB_NOPS], failed[YCSB_NOPS];
	uint64_t check_failures;        /* values that were not what was written */
	uint64_t no_space;              /* writes the server refused: its table is full */
	uint64_t t_start_ns, t_end_ns;
	char first_failure[160];        /* the first wrong value, or the error that ended it */
	char first_status[96];          /* the first answer other than OK */
};

/* One lcore's client. */
struct kv_client;

/* Over rb2: @p ep joined (or paired), connections opened to sh->port on
 * @p host (through a service: rb2_conn_connect_host) or its peer. */
struct kv_client *kv_client_rb2(struct kv_shared *sh, struct rb2_conn_ep *ep, int via_service,
				uint32_t host, unsigned int lcore_idx);
/* Over TCP to @p addr (IP:PORT). */
struct kv_client *kv_client_tcp(struct kv_shared *sh, const char *addr, unsigned int lcore_idx);
/* Over L5's own rings (the bench's "l5"): sh->conns connections @p l5,
 * the client's halves on this lcore. */
struct kv_client *kv_client_l5(struct kv_shared *sh, const struct app_l5_conn *l5,
			       unsigned int lcore_idx);
void kv_client_free(struct kv_client *c);

/* Set (by a signal handler) to end every running phase at its next pass:
 * kv_client_run() then returns the results so far. */
extern volatile sig_atomic_t kv_client_stop;

/*
 * Run a phase: KV_LOAD inserts this lcore's share of the records (of
 * @p n_lcores), KV_RUN does @p ops operations of the workload.
 * @return 0, or -errno (a connection failed: why in res->first_failure).
 *   Check failures are counted, not fatal.
 */
int kv_client_run(struct kv_client *c, enum kv_phase phase, uint64_t ops, unsigned int n_lcores,
		  struct kv_result *res);

#endif /* KV_CLIENT_H */
