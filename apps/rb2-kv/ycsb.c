/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * YCSB's workloads and generators (ycsb.h), written from their definitions
 * in YCSB's Java sources; the comments name the class each part follows.
 */

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ycsb.h"

const char *const ycsb_op_name[YCSB_NOPS] = { "READ", "UPDATE", "INSERT", "READ-MODIFY-WRITE" };

/* ScrambledZipfianGenerator's constants: zeta(10^10, 0.99) precomputed. */
#define SCRAMBLED_ITEM_COUNT 10000000000ll
#define SCRAMBLED_ZETAN 26.46902820178302
#define ZIPFIAN_CONSTANT 0.99
#define ACK_WINDOW (1u << 20)   /* AcknowledgedCounterGenerator.WINDOW_SIZE */

int
ycsb_workload(char name, struct ycsb_workload *w)
{
	memset(w, 0, sizeof(*w));
	w->name = name;
	w->dist = YCSB_ZIPFIAN;
	switch (name) {      /* workloads/workload[a-f] */
	case 'a': w->proportion[YCSB_READ] = 0.5; w->proportion[YCSB_UPDATE] = 0.5; break;
	case 'b': w->proportion[YCSB_READ] = 0.95; w->proportion[YCSB_UPDATE] = 0.05; break;
	case 'c': w->proportion[YCSB_READ] = 1.0; break;
	case 'd':
		w->proportion[YCSB_READ] = 0.95;
		w->proportion[YCSB_INSERT] = 0.05;
		w->dist = YCSB_LATEST;
		break;
	case 'f': w->proportion[YCSB_READ] = 0.5; w->proportion[YCSB_RMW] = 0.5; break;
	default: return -1;
	}
	return 0;
}

int
ycsb_dist_parse(const char *s, enum ycsb_dist *d)
{
	if (strcmp(s, "zipfian") == 0)
		*d = YCSB_ZIPFIAN;
	else if (strcmp(s, "uniform") == 0)
		*d = YCSB_UNIFORM;
	else if (strcmp(s, "latest") == 0)
		*d = YCSB_LATEST;
	else
		return -1;
	return 0;
}

uint64_t
ycsb_fnvhash64(uint64_t v)
{
	uint64_t h = 0xCBF29CE484222325ull;

	for (int i = 0; i < 8; i++) {
		h ^= v & 0xff;
		v >>= 8;
		h *= 1099511628211ull;
	}
	/* Math.abs of a long: Long.MIN_VALUE stays itself. */
	return (int64_t)h < 0 && h != (1ull << 63) ? -h : h;
}

static double
zetastatic(int64_t st, int64_t n, double theta, double initialsum)
{
	double sum = initialsum;

	for (int64_t i = st; i < n; i++)
		sum += 1 / pow((double)(i + 1), theta);
	return sum;
}

void
ycsb_zipf_init(struct ycsb_zipf *z, int64_t min, int64_t max, double theta, double zetan)
{
	z->items = max - min + 1;
	z->base = min;
	z->theta = theta;
	z->zeta2theta = zetastatic(0, 2, theta, 0);
	z->alpha = 1.0 / (1.0 - theta);
	z->zetan = zetan != 0 ? zetan : zetastatic(0, z->items, theta, 0);
	z->countforzeta = z->items;
	z->eta = (1 - pow(2.0 / (double)z->items, 1 - theta)) / (1 - z->zeta2theta / z->zetan);
}

int64_t
ycsb_zipf_next(struct ycsb_zipf *z, int64_t itemcount, double u)
{
	double uz;

	/* ZipfianGenerator.nextLong: the zeta grows incrementally with the
	 * item count. (Its eta then uses the constructor's item count, as
	 * YCSB's does.) */
	if (itemcount > z->countforzeta) {
		z->zetan = zetastatic(z->countforzeta, itemcount, z->theta, z->zetan);
		z->countforzeta = itemcount;
		z->eta = (1 - pow(2.0 / (double)z->items, 1 - z->theta)) /
			 (1 - z->zeta2theta / z->zetan);
	}
	uz = u * z->zetan;
	if (uz < 1.0)
		return z->base;
	if (uz < 1.0 + pow(0.5, z->theta))
		return z->base + 1;
	return z->base + (int64_t)((double)itemcount * pow(z->eta * u - z->eta + 1, z->alpha));
}

static uint64_t
splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

double
ycsb_uniform(struct ycsb_gen *g)
{
	/* xoroshiro128+: 53 random bits. */
	uint64_t s0 = g->rng[0], s1 = g->rng[1], r = s0 + s1;

	s1 ^= s0;
	g->rng[0] = ((s0 << 24) | (s0 >> 40)) ^ s1 ^ (s1 << 16);
	g->rng[1] = (s1 << 37) | (s1 >> 27);
	return (double)(r >> 11) * 0x1.0p-53;
}

int
ycsb_inserts_init(struct ycsb_inserts *in, uint64_t records)
{
	/* new AcknowledgedCounterGenerator(recordcount) */
	atomic_init(&in->next, (int64_t)records);
	atomic_init(&in->limit, (int64_t)records - 1);
	atomic_flag_clear(&in->lock);
	in->window = calloc(ACK_WINDOW, 1);
	return in->window == NULL ? -ENOMEM : 0;
}

void
ycsb_inserts_free(struct ycsb_inserts *in)
{
	free(in->window);
	in->window = NULL;
}

void
ycsb_gen_init(struct ycsb_gen *g, const struct ycsb_workload *w, uint64_t records,
	      uint64_t operations, uint64_t seed, struct ycsb_inserts *ins)
{
	memset(g, 0, sizeof(*g));
	g->w = *w;
	g->records = records;
	g->ins = ins;
	g->rng[0] = splitmix64(&seed);
	g->rng[1] = splitmix64(&seed);
	if (w->dist == YCSB_ZIPFIAN) {
		/* ScrambledZipfianGenerator(insertstart, insertstart +
		 * insertcount + expectednewkeys), expectednewkeys =
		 * operations * insertproportion * 2 (YCSB's "fudge factor"). */
		int64_t newkeys = (int64_t)((double)operations * w->proportion[YCSB_INSERT] * 2.0);

		g->zipf_items = (int64_t)records + newkeys + 1;
		ycsb_zipf_init(&g->zipf, 0, SCRAMBLED_ITEM_COUNT, ZIPFIAN_CONSTANT,
			       SCRAMBLED_ZETAN);
	} else if (w->dist == YCSB_LATEST) {
		/* SkewedLatestGenerator: new ZipfianGenerator(basis.lastValue()) */
		ycsb_zipf_init(&g->zipf, 0, (int64_t)records - 2, ZIPFIAN_CONSTANT, 0);
	}
}

enum ycsb_op
ycsb_next_op(struct ycsb_gen *g)
{
	/* DiscreteGenerator: a uniform draw walks the weights in the order
	 * CoreWorkload added them (read, update, insert, scan, rmw). */
	double u = ycsb_uniform(g), sum = 0;

	for (int op = 0; op < YCSB_NOPS; op++) {
		sum += g->w.proportion[op];
		if (u < sum)
			return (enum ycsb_op)op;
	}
	for (int op = YCSB_NOPS - 1; op >= 0; op--)   /* rounding: the last weighted */
		if (g->w.proportion[op] > 0)
			return (enum ycsb_op)op;
	return YCSB_READ;
}

static int64_t
choose(struct ycsb_gen *g)
{
	switch (g->w.dist) {
	case YCSB_UNIFORM:
		/* UniformLongGenerator(insertstart, insertstart + insertcount - 1) */
		return (int64_t)(ycsb_uniform(g) * (double)g->records);
	case YCSB_LATEST: {
		/* SkewedLatestGenerator.nextValue */
		int64_t max = atomic_load_explicit(&g->ins->limit, memory_order_acquire);

		return max - ycsb_zipf_next(&g->zipf, max, ycsb_uniform(g));
	}
	case YCSB_ZIPFIAN:
	default: {
		/* ScrambledZipfianGenerator.nextValue */
		int64_t r = ycsb_zipf_next(&g->zipf, g->zipf.items, ycsb_uniform(g));

		return (int64_t)(ycsb_fnvhash64((uint64_t)r) % (uint64_t)g->zipf_items);
	}
	}
}

uint64_t
ycsb_next_keynum(struct ycsb_gen *g)
{
	int64_t k;

	/* CoreWorkload.nextKeynum: draw again past the last acknowledged
	 * insert (keychooser.nextValue().intValue(), as YCSB truncates). */
	do
		k = (int32_t)choose(g);
	while (k > atomic_load_explicit(&g->ins->limit, memory_order_acquire) || k < 0);
	return (uint64_t)k;
}

uint64_t
ycsb_next_insert(struct ycsb_inserts *in)
{
	return (uint64_t)atomic_fetch_add(&in->next, 1);
}

int
ycsb_ack_insert(struct ycsb_inserts *in, uint64_t keynum)
{
	/* AcknowledgedCounterGenerator.acknowledge: the limit moves over
	 * every contiguous acknowledged value. (YCSB only tries the lock;
	 * waiting for it means no acknowledgement is left behind.) */
	uint32_t slot = (uint32_t)(keynum & (ACK_WINDOW - 1));
	int64_t i;
	int ret = 0;

	while (atomic_flag_test_and_set_explicit(&in->lock, memory_order_acquire))
		;
	if (in->window[slot]) {
		ret = -1;
	} else {
		in->window[slot] = 1;
		for (i = atomic_load_explicit(&in->limit, memory_order_relaxed) + 1;
		     in->window[i & (ACK_WINDOW - 1)]; i++)
			in->window[i & (ACK_WINDOW - 1)] = 0;
		atomic_store_explicit(&in->limit, i - 1, memory_order_release);
	}
	atomic_flag_clear_explicit(&in->lock, memory_order_release);
	return ret;
}
