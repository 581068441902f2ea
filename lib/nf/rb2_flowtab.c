/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* The measurement NF's flow table, top-K and count-min sketch. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rb2_flowtab.h"

#define CM_ROWS 4
#define BURST 32
#define unlikely_full(x) __builtin_expect(!!(x), 0)

struct rb2_flowtab {
	struct rb2_flow *slots;
	uint64_t mask;       /* capacity - 1 */
	uint64_t count;
	uint64_t grow_at;    /* 70% of capacity */
	struct rb2_nf_totals tot;
	uint32_t cm_width;   /* 0: no sketch */
	uint64_t *cm;        /* CM_ROWS x cm_width */
};

static void
key_of(const struct rb2_rec *r, uint64_t k[3])
{
	k[0] = (uint64_t)r->src | (uint64_t)r->dst << 32;
	k[1] = (uint64_t)r->sport | (uint64_t)r->dport << 16 |
		(uint64_t)r->proto << 32 | (uint64_t)r->kind << 40;
	k[2] = r->x;
}

/* A 64-bit mix of the key, never 0 (0 marks an empty slot). */
static uint64_t
hash_of(const uint64_t k[3])
{
	uint64_t h = k[0] * 0x9e3779b97f4a7c15ull;

	h ^= (k[1] + (h >> 29)) * 0xbf58476d1ce4e5b9ull;
	h ^= (k[2] + (h >> 31)) * 0x94d049bb133111ebull;
	h ^= h >> 32;
	return h | 1;
}

static struct rb2_flow *
alloc_slots(uint64_t cap)
{
	struct rb2_flow *s;

	if (posix_memalign((void **)&s, 64, cap * sizeof(*s)) != 0)
		return NULL;
	memset(s, 0, cap * sizeof(*s));
	return s;
}

struct rb2_flowtab *
rb2_flowtab_create(uint64_t flows, uint32_t cm_width)
{
	struct rb2_flowtab *ft = calloc(1, sizeof(*ft));
	uint64_t cap = 64;

	if (ft == NULL)
		return NULL;
	while (cap < 2 * flows)
		cap <<= 1;
	ft->slots = alloc_slots(cap);
	ft->mask = cap - 1;
	ft->grow_at = cap / 10 * 7;
	ft->cm_width = cm_width;
	if (cm_width != 0)
		ft->cm = calloc((size_t)CM_ROWS * cm_width, sizeof(*ft->cm));
	if (ft->slots == NULL || (cm_width != 0 && ft->cm == NULL)) {
		rb2_flowtab_free(ft);
		return NULL;
	}
	return ft;
}

void
rb2_flowtab_free(struct rb2_flowtab *ft)
{
	if (ft == NULL)
		return;
	free(ft->slots);
	free(ft->cm);
	free(ft);
}

/* Find the key's slot, or the empty one where it goes (linear probing). */
static struct rb2_flow *
probe(struct rb2_flow *slots, uint64_t mask, uint64_t h, const uint64_t k[3])
{
	for (uint64_t i = h & mask;; i = (i + 1) & mask) {
		struct rb2_flow *f = &slots[i];

		if (f->hash == 0 || (f->hash == h && f->k0 == k[0] && f->k1 == k[1] &&
				     f->k2 == k[2]))
			return f;
	}
}

/* Double the table: off the per-record path, amortized. */
static int
grow(struct rb2_flowtab *ft)
{
	uint64_t cap = (ft->mask + 1) * 2;
	struct rb2_flow *s = alloc_slots(cap);

	if (s == NULL)
		return -ENOMEM;
	for (uint64_t i = 0; i <= ft->mask; i++) {
		struct rb2_flow *f = &ft->slots[i];
		uint64_t k[3] = {f->k0, f->k1, f->k2};

		if (f->hash != 0)
			*probe(s, cap - 1, f->hash, k) = *f;
	}
	free(ft->slots);
	ft->slots = s;
	ft->mask = cap - 1;
	ft->grow_at = cap / 10 * 7;
	return 0;
}

static uint32_t
cm_col(uint64_t h, unsigned int row, uint32_t width)
{
	uint64_t x = h * (0x9e3779b97f4a7c15ull + 2 * row) + row;

	return (uint32_t)((x >> 32) % width);
}

void
rb2_flowtab_add_ptrs(struct rb2_flowtab *ft, const struct rb2_rec *const *recs,
		     unsigned int n)
{
	uint64_t keys[BURST][3], hs[BURST];
	struct rb2_nf_totals *t = &ft->tot;
	/* The totals in locals over the call: in @t, each record's sums would
	 * wait for the one before's stores (the flows' writes may alias @t). */
	uint64_t bytes = 0, ipv4 = 0, ipv6 = 0, malformed = 0, lost = 0;
	uint64_t first = t->packets > 0 ? t->first_ns : UINT64_MAX, last = t->last_ns;

	for (unsigned int b = 0; b < n; b += BURST) {
		unsigned int m = n - b < BURST ? n - b : BURST;
		int full = 0;

		/* Grow before the burst, so that no slot pointer goes stale. If
		 * it cannot, go on while there is room; past that, count the
		 * records as lost, never drop them silently. */
		if (ft->count + m > ft->grow_at && grow(ft) < 0)
			full = ft->count + m >= ft->mask;
		/* Hash all that go in a flow, and start every bucket's miss
		 * at once. */
		for (unsigned int i = 0; i < m; i++) {
			unsigned int kind = recs[b + i]->kind;

			if (kind != RB2_REC_IPV4 && kind != RB2_REC_IPV6)
				continue;
			key_of(recs[b + i], keys[i]);
			hs[i] = hash_of(keys[i]);
			__builtin_prefetch(&ft->slots[hs[i] & ft->mask], 1, 3);
		}
		for (unsigned int i = 0; i < m; i++) {
			const struct rb2_rec *r = recs[b + i];
			struct rb2_flow *f;

			first = r->ts_ns < first ? r->ts_ns : first;
			last = r->ts_ns > last ? r->ts_ns : last;
			bytes += r->wire_len;
			switch (r->kind) {
			case RB2_REC_IPV4: ipv4++; break;
			case RB2_REC_IPV6: ipv6++; break;
			case RB2_REC_NONIP: continue;
			default: malformed++; continue;  /* rare: the one to spill */
			}
			if (unlikely_full(full)) {
				lost++;
				continue;
			}
			f = probe(ft->slots, ft->mask, hs[i], keys[i]);
			if (f->hash == 0) {
				f->hash = hs[i];
				f->k0 = keys[i][0];
				f->k1 = keys[i][1];
				f->k2 = keys[i][2];
				f->first_ns = r->ts_ns;
				ft->count++;
			}
			f->packets++;
			f->bytes += r->wire_len;
			f->last_ns = r->ts_ns;
			for (unsigned int row = 0; ft->cm != NULL && row < CM_ROWS; row++)
				ft->cm[(size_t)row * ft->cm_width +
				       cm_col(hs[i], row, ft->cm_width)]++;
		}
	}
	if (n == 0)
		return;
	t->first_ns = first;
	t->last_ns = last;
	t->packets += n;
	t->bytes += bytes;
	t->ipv4 += ipv4;
	t->ipv6 += ipv6;
	t->malformed += malformed;
	t->nonip += n - ipv4 - ipv6 - malformed;
	t->lost += lost;
}

void
rb2_flowtab_add_burst(struct rb2_flowtab *ft, const struct rb2_rec *recs,
		      unsigned int n)
{
	const struct rb2_rec *p[BURST];

	for (unsigned int b = 0; b < n; b += BURST) {
		unsigned int m = n - b < BURST ? n - b : BURST;

		for (unsigned int i = 0; i < m; i++)
			p[i] = &recs[b + i];
		rb2_flowtab_add_ptrs(ft, p, m);
	}
}

uint64_t
rb2_flowtab_count(const struct rb2_flowtab *ft)
{
	return ft->count;
}

void
rb2_flowtab_totals(const struct rb2_flowtab *ft, struct rb2_nf_totals *t)
{
	*t = ft->tot;
}

const struct rb2_flow *
rb2_flowtab_find(const struct rb2_flowtab *ft, const struct rb2_rec *rec)
{
	uint64_t k[3];
	const struct rb2_flow *f;

	key_of(rec, k);
	f = probe(ft->slots, ft->mask, hash_of(k), k);
	return f->hash != 0 ? f : NULL;
}

uint64_t
rb2_flowtab_walk(const struct rb2_flowtab *ft,
		 void (*cb)(void *arg, const struct rb2_flow *f), void *arg)
{
	uint64_t n = 0;

	for (uint64_t i = 0; i <= ft->mask; i++)
		if (ft->slots[i].hash != 0) {
			cb(arg, &ft->slots[i]);
			n++;
		}
	return n;
}

static int
heavier(const struct rb2_flow *a, const struct rb2_flow *b)
{
	return a->bytes != b->bytes ? a->bytes > b->bytes : a->packets > b->packets;
}

unsigned int
rb2_flowtab_top(const struct rb2_flowtab *ft, struct rb2_flow *out, unsigned int k)
{
	unsigned int n = 0;

	/* Insertion into a sorted array of k: cheap for the small k of a report. */
	for (uint64_t i = 0; k != 0 && i <= ft->mask; i++) {
		const struct rb2_flow *f = &ft->slots[i];
		unsigned int j;

		if (f->hash == 0 || (n == k && !heavier(f, &out[k - 1])))
			continue;
		j = n < k ? n++ : k - 1;
		while (j > 0 && heavier(f, &out[j - 1])) {
			out[j] = out[j - 1];
			j--;
		}
		out[j] = *f;
	}
	return n;
}

uint64_t
rb2_flowtab_cm_estimate(const struct rb2_flowtab *ft, const struct rb2_flow *f)
{
	uint64_t est = UINT64_MAX;

	if (ft->cm == NULL)
		return 0;
	for (unsigned int row = 0; row < CM_ROWS; row++) {
		uint64_t c = ft->cm[(size_t)row * ft->cm_width +
				    cm_col(f->hash, row, ft->cm_width)];
		if (c < est)
			est = c;
	}
	return est;
}

int
rb2_flowtab_cm_error(const struct rb2_flowtab *ft, struct rb2_cm_error *e)
{
	double sum = 0;

	memset(e, 0, sizeof(*e));
	if (ft->cm == NULL)
		return -ENOENT;
	for (uint64_t i = 0; i <= ft->mask; i++) {
		const struct rb2_flow *f = &ft->slots[i];
		double rel;

		if (f->hash == 0)
			continue;
		rel = (double)(rb2_flowtab_cm_estimate(ft, f) - f->packets) /
			(double)f->packets;
		sum += rel;
		if (rel > e->max_rel)
			e->max_rel = rel;
		e->exact += rel == 0;
	}
	e->mean_rel = ft->count ? sum / (double)ft->count : 0;
	return 0;
}
