/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* The measurement NF's flow table against an independent reference: the same
 * records sorted by key and counted by runs. */

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <rb2_flowtab.h>

#include "rb2_test.h"

static uint64_t seed = 12345;

static uint64_t
rnd(void)
{
	return rb2_test_rand(&seed);
}

/* n records over @flows flows (skewed), with IPv6, non-IP and malformed. */
static struct rb2_rec *
make(unsigned int n, unsigned int flows)
{
	struct rb2_rec *r = calloc(n, sizeof(*r));

	for (unsigned int i = 0; i < n; i++) {
		uint64_t f = rnd() % flows;
		f = f * (rnd() % flows) / flows; /* more weight on low ids */
		r[i].kind = f % 17 == 0 ? RB2_REC_IPV6 : RB2_REC_IPV4;
		if (rnd() % 100 == 0)
			r[i].kind = rnd() % 2 ? RB2_REC_NONIP : RB2_REC_MALFORMED;
		r[i].src = (uint32_t)(f * 2654435761u);
		r[i].dst = (uint32_t)f;
		r[i].sport = (uint16_t)(f >> 3);
		r[i].dport = 443;
		r[i].proto = 6;
		r[i].x = r[i].kind == RB2_REC_IPV6 ? (uint32_t)(f ^ 0xabcd) : 0;
		if (r[i].kind >= RB2_REC_NONIP)
			r[i].src = r[i].dst = r[i].sport = r[i].dport = r[i].proto = 0, r[i].x = 0;
		r[i].wire_len = 40 + (uint32_t)(rnd() % 1460);
		r[i].ts_ns = 1000 * (uint64_t)i;
		r[i].seq = i;
	}
	return r;
}

/* Same flow key: src, dst, ports, proto, kind (bytes 0-13) and x (16-19). */
static int
samekey(const struct rb2_rec *a, const struct rb2_rec *b)
{
	return memcmp(a, b, 14) == 0 &&
		memcmp((const uint8_t *)a + 16, (const uint8_t *)b + 16, 4) == 0;
}

static int
keycmp(const void *a, const void *b)
{
	int c = memcmp(a, b, 14); /* src, dst, ports, proto, kind */
	if (c)
		return c;
	c = memcmp((const uint8_t *)a + 16, (const uint8_t *)b + 16, 4); /* x */
	if (c)
		return c;
	return ((const struct rb2_rec *)a)->seq < ((const struct rb2_rec *)b)->seq ? -1 : 1;
}

Test(rb2_flowtab, exact_counts_match_a_sorted_reference)
{
	const unsigned int n = 500000;
	struct rb2_rec *r = make(n, 50000), *ref = malloc(n * sizeof(*r));
	struct rb2_flowtab *ft = rb2_flowtab_create(16, 0); /* grows as it goes */
	struct rb2_nf_totals t;
	uint64_t flows = 0, ip = 0, bytes = 0;

	rb2_flowtab_add_burst(ft, r, 7);          /* odd burst sizes too */
	rb2_flowtab_add_burst(ft, r + 7, n - 7);
	memcpy(ref, r, n * sizeof(*r));
	qsort(ref, n, sizeof(*ref), keycmp);
	for (unsigned int i = 0; i < n;) {
		unsigned int j = i;
		uint64_t pk = 0, by = 0;

		while (j < n && samekey(&ref[i], &ref[j])) {
			pk++;
			by += ref[j].wire_len;
			j++;
		}
		bytes += by;
		if (ref[i].kind == RB2_REC_IPV4 || ref[i].kind == RB2_REC_IPV6) {
			const struct rb2_flow *f = rb2_flowtab_find(ft, &ref[i]);
			cr_assert_not_null(f, "flow of record %" PRIu64 " missing", ref[i].seq);
			cr_assert_eq(f->packets, pk);
			cr_assert_eq(f->bytes, by);
			cr_assert_eq(f->first_ns, ref[i].ts_ns);
			cr_assert_eq(f->last_ns, ref[j - 1].ts_ns);
			flows++;
			ip += pk;
		} else {
			cr_assert_null(rb2_flowtab_find(ft, &ref[i]), "non-IP has no flow");
		}
		i = j;
	}
	rb2_flowtab_totals(ft, &t);
	cr_expect_eq(rb2_flowtab_count(ft), flows);
	cr_expect_eq(t.packets, n);
	cr_expect_eq(t.bytes, bytes);
	cr_expect_eq(t.ipv4 + t.ipv6, ip);
	cr_expect_eq(t.packets, t.ipv4 + t.ipv6 + t.nonip + t.malformed);
	cr_expect_gt(t.nonip, 0);
	cr_expect_gt(t.malformed, 0);
	cr_expect_gt(t.ipv6, 0);
	rb2_flowtab_free(ft);
	free(r);
	free(ref);
}

static int
heavier_first(const void *a, const void *b)
{
	const struct rb2_flow *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return x->packets > y->packets ? -1 : x->packets < y->packets;
}

struct all { struct rb2_flow *v; uint64_t n; };

static void
collect(void *arg, const struct rb2_flow *f)
{
	struct all *a = arg;
	a->v[a->n++] = *f;
}

Test(rb2_flowtab, top_k_and_count_min_against_the_exact_flows)
{
	const unsigned int n = 200000;
	struct rb2_rec *r = make(n, 20000);
	struct rb2_flowtab *ft = rb2_flowtab_create(20000, 1 << 14);
	struct all a;
	struct rb2_flow top[10];
	struct rb2_cm_error e;
	unsigned int k;

	rb2_flowtab_add_burst(ft, r, n);
	a.v = malloc(rb2_flowtab_count(ft) * sizeof(*a.v));
	a.n = 0;
	cr_assert_eq(rb2_flowtab_walk(ft, collect, &a), rb2_flowtab_count(ft));
	qsort(a.v, a.n, sizeof(*a.v), heavier_first);
	k = rb2_flowtab_top(ft, top, 10);
	cr_assert_eq(k, 10);
	for (unsigned int i = 0; i < k; i++) {
		cr_expect_eq(top[i].bytes, a.v[i].bytes, "rank %u", i);
		cr_expect_eq(top[i].packets, a.v[i].packets, "rank %u", i);
	}
	/* A count-min sketch never underestimates; report its error. */
	for (uint64_t i = 0; i < a.n; i++)
		cr_assert_geq(rb2_flowtab_cm_estimate(ft, &a.v[i]), a.v[i].packets);
	cr_assert_eq(rb2_flowtab_cm_error(ft, &e), 0);
	cr_expect_geq(e.mean_rel, 0);
	cr_expect_geq(e.max_rel, e.mean_rel);
	cr_expect_gt(e.exact, 0);
	cr_log_info("count-min 4 x 16384 over %" PRIu64 " flows: mean relative error %.4f, max %.2f, %" PRIu64 " exact",
		    a.n, e.mean_rel, e.max_rel, e.exact);
	free(a.v);
	rb2_flowtab_free(ft);
	ft = rb2_flowtab_create(10, 0);
	cr_expect_eq(rb2_flowtab_cm_error(ft, &e), -ENOENT, "no sketch asked for");
	rb2_flowtab_free(ft);
	free(r);
}
