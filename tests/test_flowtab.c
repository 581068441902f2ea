/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* The measurement NF's flow table against an independent reference: the same
 * records sorted by flow and time, cut into flow records by the rules the
 * table documents (idle, active, FIN/RST), and compared record for record. */

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <rb2_flowtab.h>

#include "rb2_test.h"

#define S 1000000000ull

static uint64_t seed = 12345;

static uint64_t
rnd(void)
{
	return rb2_test_rand(&seed);
}

/* n records over @flows flows (skewed), with IPv6, non-IP and malformed,
 * @gap_ns apart on average (every 64th gap 64 times longer, so that idle
 * timeouts fire), and a FIN on 1 in @fin_every TCP packets (0: none). */
static struct rb2_rec *
make(unsigned int n, unsigned int flows, uint64_t gap_ns, unsigned int fin_every)
{
	struct rb2_rec *r = calloc(n, sizeof(*r));
	uint64_t ts = 1000 * S;

	for (unsigned int i = 0; i < n; i++) {
		uint64_t f = rnd() % flows;

		f = f * (rnd() % flows) / flows; /* more weight on low ids */
		r[i].kind = f % 17 == 0 ? RB2_REC_IPV6 : RB2_REC_IPV4;
		if (rnd() % 100 == 0)
			r[i].kind = rnd() % 2 ? RB2_REC_NONIP : RB2_REC_MALFORMED;
		if (r[i].kind == RB2_REC_IPV4) {
			r[i].src = (uint32_t)(f * 2654435761u);
			r[i].dst = (uint32_t)f;
		} else if (r[i].kind == RB2_REC_IPV6) {
			r[i].src6[0] = 0x20;
			memcpy(r[i].src6 + 8, &f, sizeof(f));
			r[i].dst6[0] = 0xfe;
			r[i].dst6[15] = (uint8_t)(f >> 3);
		}
		if (r[i].kind <= RB2_REC_IPV6) {
			r[i].sport = (uint16_t)(f >> 3);
			r[i].dport = 443;
			r[i].proto = f % 5 == 0 ? 17 : 6;
			r[i].in_port = (uint16_t)(f % 3);
			if (r[i].proto == 6 && fin_every && rnd() % fin_every == 0)
				r[i].tcp_flags = rnd() % 2 ? 0x11 : 0x04; /* FIN+ACK, RST */
			else if (r[i].proto == 6)
				r[i].tcp_flags = 0x10;
		}
		r[i].wire_len = 40 + (uint32_t)(rnd() % 1460);
		r[i].ip_len = r[i].kind <= RB2_REC_IPV6 ? r[i].wire_len - 14 : 0;
		ts += i % 64 == 63 ? 64 * gap_ns : rnd() % (2 * gap_ns + 1);
		r[i].ts_ns = ts;
		r[i].seq = i;
	}
	return r;
}

/* Same flow: addresses, ports, proto, kind (bytes 0-37) and in_port. */
static int
keycmp(const struct rb2_rec *a, const struct rb2_rec *b)
{
	int c = memcmp(a, b, 38);

	return c ? c : (int)a->in_port - (int)b->in_port;
}

static int
key_then_seq(const void *a, const void *b)
{
	int c = keycmp(a, b);

	if (c)
		return c;
	return ((const struct rb2_rec *)a)->seq < ((const struct rb2_rec *)b)->seq ? -1 : 1;
}

/* Flow records, collected from the table's callback or made by the reference. */
struct recs {
	struct rb2_flow_rec *v;
	uint64_t n, cap;
	uint64_t live_max;                  /* callback: flows held at most */
	const struct rb2_flowtab *ft;
	uint64_t evicted_first_prev, evicted_out_of_order;
};

static void
push(struct recs *a, const struct rb2_flow_rec *r)
{
	if (a->n == a->cap) {
		a->cap = a->cap ? 2 * a->cap : 1024;
		a->v = realloc(a->v, a->cap * sizeof(*a->v));
		cr_assert_not_null(a->v);
	}
	a->v[a->n++] = *r;
}

static void
on_end(void *arg, const struct rb2_flow_rec *r)
{
	struct recs *a = arg;

	cr_assert(r->end_reason >= 1 && r->end_reason < RB2_FLOW_END_MAX);
	cr_assert_gt(r->packets, 0, "a record holds at least one packet");
	if (r->end_reason == RB2_FLOW_END_RESOURCES) {
		/* Oldest first: each evicted record started no later than
		 * the next one evicted. */
		a->evicted_out_of_order += r->first_ns < a->evicted_first_prev;
		a->evicted_first_prev = r->first_ns;
	}
	push(a, r);
}

static void
rec_of(const struct rb2_rec *r, struct rb2_flow_rec *o)
{
	memset(o, 0, sizeof(*o));
	memcpy(o->src, r->src6, 16);
	memcpy(o->dst, r->dst6, 16);
	o->sport = r->sport;
	o->dport = r->dport;
	o->proto = r->proto;
	o->kind = r->kind;
	o->in_port = r->in_port;
	o->first_ns = r->ts_ns;
}

/* A record open at the end of the run (at @end, the latest record time):
 * ended by a timeout that has passed, else forced. */
static unsigned int
end_reason_at(const struct rb2_flow_rec *f, uint64_t end, uint64_t active, uint64_t idle)
{
	int i = idle && end > f->last_ns && end - f->last_ns >= idle;
	int a = active && end > f->first_ns && end - f->first_ns >= active;

	if (i && a)
		i = f->last_ns + idle <= f->first_ns + active;
	return i ? RB2_FLOW_END_IDLE : a ? RB2_FLOW_END_ACTIVE : RB2_FLOW_END_FORCED;
}

/* The reference: per flow in time order, the documented rules. */
static void
reference(const struct rb2_rec *in, unsigned int n, uint64_t active, uint64_t idle,
	  struct recs *out)
{
	struct rb2_rec *r = malloc(n * sizeof(*r));
	struct rb2_flow_rec cur;
	uint64_t end = 0;
	int open = 0;

	for (unsigned int i = 0; i < n; i++)
		end = in[i].ts_ns > end ? in[i].ts_ns : end;
	memcpy(r, in, n * sizeof(*r));
	qsort(r, n, sizeof(*r), key_then_seq);
	for (unsigned int i = 0; i < n; i++) {
		if (r[i].kind != RB2_REC_IPV4 && r[i].kind != RB2_REC_IPV6)
			continue;
		if (open && keycmp(&r[i], &r[i - 1]) != 0) {
			cur.end_reason = (uint8_t)end_reason_at(&cur, end, active, idle);
			push(out, &cur);
			open = 0;
		}
		if (open) {
			/* Due times; the earlier one that has passed ends it. */
			uint64_t di = idle ? cur.last_ns + idle : UINT64_MAX;
			uint64_t da = active ? cur.first_ns + active : UINT64_MAX;
			uint64_t due = di <= da ? di : da;

			if (r[i].ts_ns >= due) {
				cur.end_reason = di <= da ? RB2_FLOW_END_IDLE : RB2_FLOW_END_ACTIVE;
				push(out, &cur);
				open = 0;
			}
		}
		if (!open)
			rec_of(&r[i], &cur);
		open = 1;
		cur.packets++;
		cur.bytes += r[i].ip_len;
		cur.last_ns = r[i].ts_ns;
		cur.tcp_flags |= r[i].tcp_flags;
		if (r[i].proto == 6 && (r[i].tcp_flags & 0x05)) {
			cur.end_reason = RB2_FLOW_END_DETECTED;
			push(out, &cur);
			open = 0;
		}
	}
	if (open) {
		cur.end_reason = (uint8_t)end_reason_at(&cur, end, active, idle);
		push(out, &cur);
	}
	free(r);
}

static int
rec_cmp(const void *a, const void *b)
{
	const struct rb2_flow_rec *x = a, *y = b;
	int c = memcmp(x->src, y->src, 38);  /* src, dst, ports, proto, kind */

	if (c)
		return c;
	if (x->in_port != y->in_port)
		return x->in_port < y->in_port ? -1 : 1;
	return x->first_ns < y->first_ns ? -1 : x->first_ns > y->first_ns;
}

/* The table's records equal the reference's, record for record, end reason
 * too: at the end of the run, a record whose timeout has passed ends for it
 * whether or not the sweep came to it. */
static void
expect_same(struct recs *got, struct recs *want)
{
	qsort(got->v, got->n, sizeof(*got->v), rec_cmp);
	qsort(want->v, want->n, sizeof(*want->v), rec_cmp);
	cr_assert_eq(got->n, want->n, "flow records: table %" PRIu64 ", reference %" PRIu64,
		     got->n, want->n);
	for (uint64_t i = 0; i < got->n; i++) {
		const struct rb2_flow_rec *g = &got->v[i], *w = &want->v[i];

		cr_assert_eq(rec_cmp(g, w), 0, "record %" PRIu64 ": another flow or start", i);
		cr_assert_eq(g->packets, w->packets, "record %" PRIu64 " packets", i);
		cr_assert_eq(g->bytes, w->bytes, "record %" PRIu64 " bytes", i);
		cr_assert_eq(g->last_ns, w->last_ns, "record %" PRIu64 " last", i);
		cr_assert_eq(g->tcp_flags, w->tcp_flags, "record %" PRIu64 " flags", i);
		cr_assert_eq(g->end_reason, w->end_reason, "record %" PRIu64 " reason", i);
	}
}

static struct rb2_flowtab *
table(uint64_t cap, uint64_t active, uint64_t idle, uint32_t cm, struct recs *got)
{
	struct rb2_flowtab_params p;
	struct rb2_flowtab *ft;

	rb2_flowtab_params_init(&p);
	p.max_flows = cap;
	p.active_ns = active;
	p.idle_ns = idle;
	p.cm_width = cm;
	p.end = on_end;
	p.end_arg = got;
	ft = rb2_flowtab_create(&p);
	cr_assert_not_null(ft);
	got->ft = ft;
	return ft;
}

static void
run_against_reference(unsigned int n, unsigned int flows, uint64_t gap, unsigned int fin,
		      uint64_t active, uint64_t idle)
{
	struct rb2_rec *r = make(n, flows, gap, fin);
	struct recs got = { 0 }, want = { 0 };
	struct rb2_flowtab *ft = table(1 << 20, active, idle, 0, &got);
	struct rb2_nf_totals t;
	uint64_t ip = 0, pk = 0;

	rb2_flowtab_add_burst(ft, r, 7);          /* odd burst sizes too */
	rb2_flowtab_add_burst(ft, r + 7, n - 7);
	rb2_flowtab_flush(ft, RB2_FLOW_END_FORCED, 0);
	cr_assert_eq(rb2_flowtab_count(ft), 0);
	reference(r, n, active, idle, &want);
	expect_same(&got, &want);
	rb2_flowtab_totals(ft, &t);
	for (unsigned int i = 0; i < n; i++)
		ip += r[i].kind <= RB2_REC_IPV6;
	for (uint64_t i = 0; i < got.n; i++)
		pk += got.v[i].packets;
	cr_expect_eq(pk, ip, "every IP packet is in exactly one record");
	cr_expect_eq(t.records, got.n);
	cr_expect_eq(t.packets, n);
	cr_expect_eq(t.packets, t.ipv4 + t.ipv6 + t.nonip + t.malformed);
	cr_expect_gt(t.ipv6, 0);
	cr_expect_gt(t.nonip, 0);
	cr_expect_gt(t.malformed, 0);
	if (idle)
		cr_expect_gt(t.ended[RB2_FLOW_END_IDLE], 0);
	if (active)
		cr_expect_gt(t.ended[RB2_FLOW_END_ACTIVE], 0);
	if (fin)
		cr_expect_gt(t.ended[RB2_FLOW_END_DETECTED], 0);
	cr_log_info("%u records: %" PRIu64 " flow records (idle %" PRIu64 ", active %" PRIu64
		    ", end %" PRIu64 ", forced %" PRIu64 ")", n, t.records,
		    t.ended[RB2_FLOW_END_IDLE], t.ended[RB2_FLOW_END_ACTIVE],
		    t.ended[RB2_FLOW_END_DETECTED], t.ended[RB2_FLOW_END_FORCED]);
	rb2_flowtab_free(ft);
	free(got.v);
	free(want.v);
	free(r);
}

Test(rb2_flowtab, whole_flows_without_timeouts_match_the_reference)
{
	run_against_reference(500000, 50000, 1000, 0, 0, 0);
}

Test(rb2_flowtab, idle_active_fin_and_rst_cut_records_as_the_reference)
{
	/* 1 us apart on average over 2000 flows: the heaviest see a packet
	 * every few hundred us and outlive the active timeout (5 ms), the
	 * light ones go idle (1 ms); 1 in 200 TCP packets ends its flow. */
	run_against_reference(300000, 2000, 1000, 200, 5000000, 1000000);
}

Test(rb2_flowtab, a_full_table_evicts_the_oldest_record_and_loses_no_packet)
{
	const unsigned int n = 200000, cap = 1000;
	struct rb2_rec *r = make(n, 20000, 1000, 0);
	struct recs got = { 0 };
	struct rb2_flowtab *ft = table(cap, 0, 0, 0, &got);
	struct rb2_nf_totals t;
	uint64_t ip = 0, pk = 0, by = 0, ipby = 0, mem = rb2_flowtab_memory(ft);

	for (unsigned int i = 0; i < n; i += 32) {
		rb2_flowtab_add_burst(ft, r + i, n - i < 32 ? n - i : 32);
		cr_assert_leq(rb2_flowtab_count(ft), cap);
	}
	cr_expect_eq(rb2_flowtab_flush(ft, RB2_FLOW_END_FORCED, 10), 10, "a flush in pieces");
	cr_expect_eq(rb2_flowtab_count(ft), cap - 10);
	rb2_flowtab_flush(ft, RB2_FLOW_END_FORCED, 0);
	rb2_flowtab_totals(ft, &t);
	for (unsigned int i = 0; i < n; i++)
		if (r[i].kind <= RB2_REC_IPV6) {
			ip++;
			ipby += r[i].ip_len;
		}
	for (uint64_t i = 0; i < got.n; i++) {
		pk += got.v[i].packets;
		by += got.v[i].bytes;
	}
	cr_expect_eq(pk, ip, "every IP packet is in exactly one record");
	cr_expect_eq(by, ipby);
	cr_expect_eq(t.peak_flows, cap);
	cr_expect_gt(t.ended[RB2_FLOW_END_RESOURCES], 0);
	cr_expect_eq(got.evicted_out_of_order, 0, "evicted oldest record first");
	cr_expect_eq(rb2_flowtab_memory(ft), mem, "the bound stays what it was");
	cr_expect_leq(rb2_flowtab_memory_peak(ft), mem);
	/* 1000 flows: 2048 slots of 64 + 16 bytes, 1000 IPv6 tuples. */
	cr_expect_lt(mem, 2048 * 80 + 1000 * 40 + 4096);
	cr_log_info("cap %u: %" PRIu64 " records, %" PRIu64 " evicted, %" PRIu64 " bytes",
		    cap, t.records, t.ended[RB2_FLOW_END_RESOURCES], mem);
	rb2_flowtab_free(ft);
	free(got.v);
	free(r);
}

Test(rb2_flowtab, a_growing_table_keeps_its_flows_and_their_start_order)
{
	/* 60000 flows at most: the table starts at 32 Ki slots and doubles
	 * twice, then evicts; 200000 flows drawn go through it. */
	const unsigned int n = 400000, cap = 60000;
	struct rb2_rec *r = make(n, 200000, 1000, 0);
	struct recs got = { 0 };
	struct rb2_flowtab *ft = table(cap, 0, 0, 0, &got);
	uint64_t peak0 = rb2_flowtab_memory_peak(ft), ip = 0, pk = 0;
	struct rb2_nf_totals t;
	unsigned int last = 0;

	for (unsigned int i = 0; i < n; i += 32)
		rb2_flowtab_add_burst(ft, r + i, n - i < 32 ? n - i : 32);
	rb2_flowtab_totals(ft, &t);
	cr_expect_eq(t.peak_flows, cap);
	cr_expect_gt(t.ended[RB2_FLOW_END_RESOURCES], 0);
	cr_expect_eq(got.evicted_out_of_order, 0, "the start order survives each rehash");
	cr_expect_lt(peak0, rb2_flowtab_memory(ft) / 3, "a new table is small");
	cr_expect_eq(rb2_flowtab_memory_peak(ft), rb2_flowtab_memory(ft),
		     "a full table is at its bound, no more");
	cr_expect_eq(rb2_flowtab_count(ft), cap);
	for (unsigned int i = 0; i < n; i++)
		if (r[i].kind <= RB2_REC_IPV6) {
			ip++;
			last = i;
		}
	cr_expect_not_null(rb2_flowtab_find(ft, &r[last]), "the last record's flow is found");
	rb2_flowtab_flush(ft, RB2_FLOW_END_FORCED, 0);
	for (uint64_t i = 0; i < got.n; i++)
		pk += got.v[i].packets;
	cr_expect_eq(pk, ip, "every IP packet is in exactly one record");
	rb2_flowtab_free(ft);
	free(got.v);
	free(r);
}

Test(rb2_flowtab, a_quiet_table_is_swept_by_the_clock)
{
	struct rb2_rec *r = make(10000, 500, 1000, 0);
	struct recs got = { 0 };
	struct rb2_flowtab *ft = table(1 << 16, 0, 1 * S, 0, &got);
	uint64_t held;

	rb2_flowtab_add_burst(ft, r, 10000);
	held = rb2_flowtab_count(ft);
	cr_assert_gt(held, 0);
	cr_expect_eq(rb2_flowtab_expire(ft, r[9999].ts_ns + S / 2, 0), 0, "not idle yet");
	cr_expect_eq(rb2_flowtab_expire(ft, r[9999].ts_ns + 2 * S, 0), held);
	cr_expect_eq(rb2_flowtab_count(ft), 0);
	for (uint64_t i = 0; i < got.n; i++)
		cr_expect_eq(got.v[i].end_reason, RB2_FLOW_END_IDLE);
	rb2_flowtab_free(ft);
	free(got.v);
	free(r);
}

Test(rb2_flowtab, lookups_find_held_flows_and_bad_sizes_are_refused)
{
	struct rb2_rec *r = make(1000, 100, 1000, 0);
	struct recs got = { 0 };
	struct rb2_flowtab *ft = table(100, 0, 0, 0, &got);
	struct rb2_flowtab_params p;

	rb2_flowtab_add_burst(ft, r, 1000);
	for (unsigned int i = 0; i < 1000; i++) {
		const struct rb2_flow *f = rb2_flowtab_find(ft, &r[i]);
		struct rb2_flow_rec o;

		if (r[i].kind > RB2_REC_IPV6)
			continue;
		cr_assert_not_null(f, "record %u's flow", i);
		rb2_flowtab_rec(ft, f, &o);
		cr_assert_eq(memcmp(o.src, r[i].src6, 16), 0);
		cr_assert_eq(memcmp(o.dst, r[i].dst6, 16), 0);
		cr_assert_eq(o.sport, r[i].sport);
		cr_assert_eq(o.in_port, r[i].in_port);
	}
	rb2_flowtab_free(ft);
	free(got.v);
	free(r);
	rb2_flowtab_params_init(&p);
	p.max_flows = 0;
	errno = 0;
	cr_expect_null(rb2_flowtab_create(&p));
	cr_expect_eq(errno, EINVAL);
}

Test(rb2_flowtab, top_k_and_count_min_against_the_exact_flows)
{
	const unsigned int n = 200000;
	struct rb2_rec *r = make(n, 20000, 1000, 0);
	struct recs got = { 0 };
	struct rb2_flowtab *ft = table(20000, 0, 0, 1 << 14, &got);
	struct rb2_flow_rec top[10];
	struct rb2_cm_error e;
	unsigned int k = 0;

	rb2_flowtab_add_burst(ft, r, n);
	/* A count-min sketch never underestimates; report its error. */
	cr_assert_eq(rb2_flowtab_cm_error(ft, &e), 0);
	for (unsigned int i = 0; i < n; i++) {
		const struct rb2_flow *f = rb2_flowtab_find(ft, &r[i]);

		if (f != NULL)
			cr_assert_geq(rb2_flowtab_cm_estimate(ft, f), f->packets);
	}
	cr_expect_geq(e.mean_rel, 0);
	cr_expect_geq(e.max_rel, e.mean_rel);
	cr_expect_gt(e.exact, 0);
	cr_log_info("count-min 4 x 16384 over %" PRIu64 " flows: mean relative error %.4f, "
		    "max %.2f, %" PRIu64 " exact", rb2_flowtab_count(ft), e.mean_rel, e.max_rel,
		    e.exact);
	rb2_flowtab_flush(ft, RB2_FLOW_END_FORCED, 0);
	cr_expect_eq(rb2_flowtab_cm_error(ft, &e), -ESTALE, "records have ended");
	for (uint64_t i = 0; i < got.n; i++)
		rb2_flow_top_offer(top, 10, &k, &got.v[i]);
	cr_assert_eq(k, 10);
	for (unsigned int i = 1; i < k; i++)
		cr_expect(!rb2_flow_rec_heavier(&top[i], &top[i - 1]), "rank %u", i);
	{
		unsigned int heavier_than_last = 0;

		for (uint64_t i = 0; i < got.n; i++)
			heavier_than_last += rb2_flow_rec_heavier(&got.v[i], &top[9]);
		cr_expect_leq(heavier_than_last, 9, "only the top 9 outweigh the 10th");
	}
	rb2_flowtab_free(ft);
	free(got.v);
	ft = table(10, 0, 0, 0, &got);
	cr_expect_eq(rb2_flowtab_cm_error(ft, &e), -ENOENT, "no sketch asked for");
	rb2_flowtab_free(ft);
	free(r);
}
