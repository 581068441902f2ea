/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef YCSB_H
#define YCSB_H

/*
 * YCSB's core workloads, as YCSB defines them (site.ycsb.workloads.
 * CoreWorkload and site.ycsb.generator): the operation mix of workloads
 * A, B, C, D and F, and the key choosers zipfian (ScrambledZipfianGenerator:
 * Gray et al.'s generator over 10^10 items, constant 0.99, its zeta
 * precomputed, scattered by FNV-1a 64), uniform and latest
 * (SkewedLatestGenerator over the acknowledged-insert counter). Keys are
 * YCSB's record numbers hashed by fnvhash64 (insertorder=hashed, the
 * default), carried as 8 bytes instead of the string "user<number>".
 * Workload E (scans) is not offered: rb2-kv is a hash table.
 */

#include <stdatomic.h>
#include <stdint.h>

enum ycsb_op { YCSB_READ, YCSB_UPDATE, YCSB_INSERT, YCSB_RMW, YCSB_NOPS };
enum ycsb_dist { YCSB_ZIPFIAN, YCSB_UNIFORM, YCSB_LATEST };

extern const char *const ycsb_op_name[YCSB_NOPS];  /* YCSB's: READ, UPDATE, ... */

struct ycsb_workload {
	char name;               /* 'a' .. 'f' */
	double proportion[YCSB_NOPS];
	enum ycsb_dist dist;
};

/* @return 0, or -1 (no such workload; E has scans, which a hash cannot serve). */
int ycsb_workload(char name, struct ycsb_workload *w);
/* @return 0, or -1 (not zipfian, uniform or latest). */
int ycsb_dist_parse(const char *s, enum ycsb_dist *d);

/* YCSB's Utils.fnvhash64: FNV-1a over the 8 bytes, low first, then the
 * absolute value as a Java long. */
uint64_t ycsb_fnvhash64(uint64_t v);

/* Gray et al.'s zipfian generator as YCSB's ZipfianGenerator. */
struct ycsb_zipf {
	int64_t items, base;
	double theta, zeta2theta, alpha, zetan, eta;
	int64_t countforzeta;
};

/* Over [min, max]; @p zetan 0: computed (O(items)). */
void ycsb_zipf_init(struct ycsb_zipf *z, int64_t min, int64_t max, double theta, double zetan);
/* ZipfianGenerator.nextLong(itemcount), @p u uniform in [0, 1). */
int64_t ycsb_zipf_next(struct ycsb_zipf *z, int64_t itemcount, double u);

/*
 * CoreWorkload's transactioninsertkeysequence, an
 * AcknowledgedCounterGenerator, which every client thread shares: the next
 * record to insert, and the highest below which every insert is
 * acknowledged (what reads may name).
 */
struct ycsb_inserts {
	_Atomic int64_t next, limit;
	atomic_flag lock;            /* over the window and the limit's move */
	uint8_t *window;             /* 2^20 flags */
};

/* @return 0, -ENOMEM. */
int ycsb_inserts_init(struct ycsb_inserts *in, uint64_t records);
void ycsb_inserts_free(struct ycsb_inserts *in);

/* One client thread's generator. */
struct ycsb_gen {
	struct ycsb_workload w;
	uint64_t records;
	uint64_t rng[2];
	struct ycsb_zipf zipf;       /* zipfian and latest */
	int64_t zipf_items;          /* scrambled: the key space incl. new keys */
	struct ycsb_inserts *ins;
};

/*
 * @param records      recordcount (the load phase inserts 0 .. records-1)
 * @param operations   operationcount (sizes zipfian's room for inserts)
 * @param ins          shared by every thread of the run
 */
void ycsb_gen_init(struct ycsb_gen *g, const struct ycsb_workload *w, uint64_t records,
		   uint64_t operations, uint64_t seed, struct ycsb_inserts *ins);

/* A uniform double in [0, 1). */
double ycsb_uniform(struct ycsb_gen *g);

/* The next operation (DiscreteGenerator over the workload's proportions). */
enum ycsb_op ycsb_next_op(struct ycsb_gen *g);
/* The record to read, update or read-modify-write (CoreWorkload.nextKeynum). */
uint64_t ycsb_next_keynum(struct ycsb_gen *g);
/* The record to insert next, and its acknowledgement once stored. @return
 *   -1 from ack if more than 2^20 inserts are outstanding. */
uint64_t ycsb_next_insert(struct ycsb_inserts *in);
int ycsb_ack_insert(struct ycsb_inserts *in, uint64_t keynum);

#endif /* YCSB_H */
