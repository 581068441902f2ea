/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* IPFIX: what the encoder writes, the decoder reads back equal (to the
 * millisecond of the templates' timestamps); messages fit their size;
 * templates come first and then as often as asked; sequence numbers count
 * the records before each message; the decoder refuses what does not add
 * up. The collectors' view (nfcapd) is tests/test_nf.sh's ipfix mode. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rb2_ipfix.h>

#include "rb2_test.h"

static uint64_t seed = 99;

static struct rb2_flow_rec
random_rec(void)
{
	struct rb2_flow_rec r;
	uint64_t x = rb2_test_rand(&seed);

	memset(&r, 0, sizeof(r));
	r.kind = x % 3 == 0 ? RB2_REC_IPV6 : RB2_REC_IPV4;
	for (unsigned int i = 0; i < (r.kind == RB2_REC_IPV6 ? 16u : 4u); i++) {
		r.src[i] = (uint8_t)rb2_test_rand(&seed);
		r.dst[i] = (uint8_t)rb2_test_rand(&seed);
	}
	r.sport = (uint16_t)rb2_test_rand(&seed);
	r.dport = (uint16_t)rb2_test_rand(&seed);
	r.proto = (uint8_t)rb2_test_rand(&seed);
	r.tcp_flags = (uint8_t)rb2_test_rand(&seed);
	r.end_reason = (uint8_t)(1 + rb2_test_rand(&seed) % 5);
	r.in_port = (uint16_t)rb2_test_rand(&seed);
	r.packets = rb2_test_rand(&seed) >> (rb2_test_rand(&seed) % 64);
	r.bytes = rb2_test_rand(&seed) >> (rb2_test_rand(&seed) % 64);
	r.first_ns = 1700000000ull * 1000000000 + rb2_test_rand(&seed) % (86400ull * 1000000000);
	r.last_ns = r.first_ns + rb2_test_rand(&seed) % (3600ull * 1000000000);
	return r;
}

/* Messages as the encoder hands them out, kept whole. */
struct msgs {
	uint8_t *buf;
	size_t len, cap;
	size_t off[4096];
	unsigned int n;
	size_t max_len;
};

static void
keep(void *arg, const uint8_t *msg, size_t len)
{
	struct msgs *m = arg;

	cr_assert_lt(m->n, 4096);
	if (m->len + len > m->cap) {
		m->cap = 2 * (m->len + len);
		m->buf = realloc(m->buf, m->cap);
		cr_assert_not_null(m->buf);
	}
	memcpy(m->buf + m->len, msg, len);
	m->off[m->n++] = m->len;
	m->len += len;
	if (len > m->max_len)
		m->max_len = len;
}

static size_t
msg_len(const struct msgs *m, unsigned int i)
{
	return (i + 1 < m->n ? m->off[i + 1] : m->len) - m->off[i];
}

struct got {
	struct rb2_flow_rec v[20000];
	unsigned int n;
	uint32_t domain;
};

static void
on_rec(void *arg, const struct rb2_flow_rec *r, uint32_t domain)
{
	struct got *g = arg;

	cr_assert_lt(g->n, 20000);
	g->v[g->n++] = *r;
	g->domain = domain;
}

static struct rb2_flow_rec in[20000];

Test(rb2_ipfix, every_record_encoded_comes_back_equal)
{
	struct rb2_ipfix_params p;
	struct rb2_ipfix_enc *e;
	struct rb2_ipfix_dec *d = rb2_ipfix_dec_create();
	static struct got g;
	struct msgs m = { 0 };
	struct rb2_ipfix_enc_stats es;
	struct rb2_ipfix_dec_stats ds;
	char err[128];

	rb2_ipfix_params_init(&p);
	p.domain = 77;
	e = rb2_ipfix_enc_create(&p);
	cr_assert_not_null(e);
	for (unsigned int i = 0; i < 20000; i++) {
		in[i] = random_rec();
		cr_assert_eq(rb2_ipfix_enc_add(e, &in[i], 1800000000, keep, &m), 0);
	}
	rb2_ipfix_enc_flush(e, 1800000000, keep, &m);
	rb2_ipfix_enc_stats(e, &es);
	cr_assert_eq(es.records, 20000);
	cr_assert_eq(es.messages, m.n);
	cr_expect_leq(m.max_len, 1472, "a message fits a 1500-byte MTU's datagram");
	for (unsigned int i = 0; i < m.n; i++)
		cr_assert_eq(rb2_ipfix_dec_msg(d, m.buf + m.off[i], msg_len(&m, i), on_rec, &g, err,
					       sizeof(err)), 0, "message %u: %s", i, err);
	cr_assert_eq(g.n, 20000);
	cr_expect_eq(g.domain, 77);
	for (unsigned int i = 0; i < 20000; i++) {
		struct rb2_flow_rec want = in[i];

		/* Milliseconds on the wire (flowStart/EndMilliseconds). */
		want.first_ns = want.first_ns / 1000000 * 1000000;
		want.last_ns = want.last_ns / 1000000 * 1000000;
		cr_assert_eq(memcmp(&g.v[i], &want, sizeof(want)), 0, "record %u differs", i);
	}
	rb2_ipfix_dec_stats(d, &ds);
	cr_expect_eq(ds.seq_lost, 0);
	cr_expect_eq(ds.unknown_sets, 0);
	/* Templates first, then every 20 messages (the default). */
	cr_expect_eq(es.templates, (m.n + 20) / 21);
	rb2_ipfix_enc_free(e);
	rb2_ipfix_dec_free(d);
	free(m.buf);
}

Test(rb2_ipfix, sequence_numbers_count_records_and_show_a_loss)
{
	struct rb2_ipfix_params p;
	struct rb2_ipfix_enc *e;
	struct rb2_ipfix_dec *d = rb2_ipfix_dec_create();
	struct msgs m = { 0 };
	struct rb2_ipfix_dec_stats ds;
	uint32_t expect = 0, lost = 0, per_msg[4096];

	rb2_ipfix_params_init(&p);
	p.max_msg = 300;      /* a few records a message */
	p.refresh_msgs = 1;   /* templates in every other message */
	e = rb2_ipfix_enc_create(&p);
	for (unsigned int i = 0; i < 500; i++) {
		struct rb2_flow_rec r = random_rec();

		rb2_ipfix_enc_add(e, &r, 1800000000, keep, &m);
	}
	rb2_ipfix_enc_flush(e, 1800000000, keep, &m);
	for (unsigned int i = 0; i < m.n; i++) {
		const uint8_t *h = m.buf + m.off[i];
		uint32_t seq = (uint32_t)h[8] << 24 | (uint32_t)h[9] << 16 | (uint32_t)h[10] << 8 | h[11];
		struct got *g = calloc(1, sizeof(*g));

		cr_assert_eq(seq, expect, "message %u's sequence number", i);
		cr_assert_eq(rb2_ipfix_dec_msg(d, h, msg_len(&m, i), on_rec, g, NULL, 0), 0);
		expect += g->n;
		per_msg[i] = g->n;
		free(g);
		cr_assert_leq(msg_len(&m, i), 300);
	}
	cr_assert_eq(expect, 500);
	/* Lose every fifth message (after the first, which holds the
	 * templates): a fresh decoder counts what they held. */
	rb2_ipfix_dec_free(d);
	d = rb2_ipfix_dec_create();
	for (unsigned int i = 0; i < m.n; i++) {
		if (i % 5 == 4 && i + 1 < m.n)
			lost += per_msg[i];
		else
			rb2_ipfix_dec_msg(d, m.buf + m.off[i], msg_len(&m, i), NULL, NULL, NULL, 0);
	}
	rb2_ipfix_dec_stats(d, &ds);
	cr_expect_gt(lost, 0);
	cr_expect_eq(ds.seq_lost, lost);
	rb2_ipfix_enc_free(e);
	rb2_ipfix_dec_free(d);
	free(m.buf);
}

static uint32_t
be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* NetFlow v9: the same records in v9's framing (RFC 3954 §5): a header of
 * 20 bytes whose count is the records, templates included, whose sequence
 * counts messages, and whose source ID is the domain; templates in FlowSet
 * 0. A lost message shows as one missed sequence number. */
Test(rb2_ipfix, netflow_v9_carries_the_same_records_in_v9_framing)
{
	struct rb2_ipfix_params p;
	struct rb2_ipfix_enc *e;
	struct rb2_ipfix_dec *d = rb2_ipfix_dec_create();
	static struct got g;
	struct msgs m = { 0 };
	struct rb2_ipfix_dec_stats ds;
	char err[128];
	unsigned int tmpl_msgs = 0, before;

	rb2_ipfix_params_init(&p);
	p.version = RB2_NFV9_VERSION;
	p.domain = 4242;
	e = rb2_ipfix_enc_create(&p);
	cr_assert_not_null(e);
	for (unsigned int i = 0; i < 3000; i++) {
		in[i] = random_rec();
		cr_assert_eq(rb2_ipfix_enc_add(e, &in[i], 1800000000 + i / 100, keep, &m), 0);
	}
	rb2_ipfix_enc_flush(e, 1800000030, keep, &m);
	cr_assert_gt(m.n, 2);
	for (unsigned int i = 0; i < m.n; i++) {
		const uint8_t *h = m.buf + m.off[i];
		unsigned int sets = 0, tmpl = 0;

		cr_assert_eq(h[0] << 8 | h[1], 9);
		cr_assert_eq(be32(h + 12), i, "message %u's sequence number counts messages", i);
		cr_assert_eq(be32(h + 16), 4242, "the source ID is the domain");
		cr_assert_geq(be32(h + 8), 1800000000u);
		/* Walk the FlowSets: templates in set 0 (two records), data in
		 * sets 256/257 (52- and 76-byte records). */
		for (size_t off = RB2_NFV9_HDR_LEN; off < msg_len(&m, i);) {
			unsigned int id = h[off] << 8 | h[off + 1], len = h[off + 2] << 8 | h[off + 3];

			cr_assert_geq(len, 4);
			if (id == 0) {
				tmpl = 2;
				tmpl_msgs++;
			} else {
				cr_assert(id == 256 || id == 257, "FlowSet %u", id);
				sets += (len - 4) / (id == 256 ? RB2_IPFIX_REC_V4 : RB2_IPFIX_REC_V6);
			}
			off += len;
		}
		before = g.n;
		cr_assert_eq(rb2_ipfix_dec_msg(d, h, msg_len(&m, i), on_rec, &g, err, sizeof(err)),
			     0, "message %u: %s", i, err);
		cr_assert_eq(h[2] << 8 | h[3], sets + tmpl, "message %u's count", i);
		cr_assert_eq(g.n - before, sets);
	}
	cr_assert_eq(g.n, 3000);
	cr_expect_eq(g.domain, 4242);
	for (unsigned int i = 0; i < 3000; i++) {
		struct rb2_flow_rec want = in[i];

		want.first_ns = want.first_ns / 1000000 * 1000000;
		want.last_ns = want.last_ns / 1000000 * 1000000;
		cr_assert_eq(memcmp(&g.v[i], &want, sizeof(want)), 0, "record %u differs", i);
	}
	cr_expect_eq(tmpl_msgs, (m.n + 20) / 21);
	/* Lose messages 3 and 7: a fresh decoder counts two messages. */
	rb2_ipfix_dec_free(d);
	d = rb2_ipfix_dec_create();
	for (unsigned int i = 0; i < m.n; i++)
		if (i != 3 && i != 7)
			rb2_ipfix_dec_msg(d, m.buf + m.off[i], msg_len(&m, i), NULL, NULL, NULL, 0);
	rb2_ipfix_dec_stats(d, &ds);
	cr_expect_eq(ds.seq_lost, 2);
	rb2_ipfix_enc_free(e);
	rb2_ipfix_dec_free(d);
	free(m.buf);
}

Test(rb2_ipfix, templates_are_refreshed_by_time)
{
	struct rb2_ipfix_params p;
	struct rb2_ipfix_enc *e;
	struct msgs m = { 0 };
	struct rb2_ipfix_enc_stats es;
	struct rb2_flow_rec r = random_rec();

	rb2_ipfix_params_init(&p);
	p.refresh_msgs = 0;
	p.refresh_s = 10;
	e = rb2_ipfix_enc_create(&p);
	for (uint32_t t = 0; t < 100; t++) {       /* a message a second */
		rb2_ipfix_enc_add(e, &r, 1800000000 + t, keep, &m);
		rb2_ipfix_enc_flush(e, 1800000000 + t, keep, &m);
	}
	rb2_ipfix_enc_stats(e, &es);
	cr_expect_eq(es.messages, 100);
	cr_expect_eq(es.templates, 10, "every 10 s of export time: %" PRIu64, es.templates);
	rb2_ipfix_enc_free(e);
	free(m.buf);
}

Test(rb2_ipfix, bad_sizes_kinds_and_messages_are_refused)
{
	struct rb2_ipfix_params p;
	struct rb2_ipfix_enc *e;
	struct rb2_ipfix_dec *d = rb2_ipfix_dec_create();
	struct msgs m = { 0 };
	struct rb2_flow_rec r = random_rec();
	uint8_t b[64] = { 0 };
	char err[128];

	rb2_ipfix_params_init(&p);
	p.max_msg = RB2_IPFIX_MSG_MIN - 1;
	errno = 0;
	cr_expect_null(rb2_ipfix_enc_create(&p));
	cr_expect_eq(errno, EINVAL);
	rb2_ipfix_params_init(&p);
	e = rb2_ipfix_enc_create(&p);
	r.kind = RB2_REC_NONIP;
	cr_expect_eq(rb2_ipfix_enc_add(e, &r, 0, keep, &m), -EINVAL);
	rb2_ipfix_enc_free(e);
	cr_expect_eq(rb2_ipfix_dec_msg(d, b, 8, NULL, NULL, err, sizeof(err)), -EBADMSG);
	b[1] = 5;                    /* NetFlow v5 */
	b[3] = 16;
	cr_expect_eq(rb2_ipfix_dec_msg(d, b, 16, NULL, NULL, err, sizeof(err)), -EBADMSG);
	cr_expect(strstr(err, "version") != NULL, "%s", err);
	b[1] = 9;                    /* NetFlow v9, shorter than its header */
	cr_expect_eq(rb2_ipfix_dec_msg(d, b, 16, NULL, NULL, err, sizeof(err)), -EBADMSG);
	cr_expect(strstr(err, "NetFlow v9 header") != NULL, "%s", err);
	p.version = 8;
	errno = 0;
	cr_expect_null(rb2_ipfix_enc_create(&p));
	cr_expect_eq(errno, EINVAL);
	b[1] = 10;
	b[3] = 20;                   /* a set longer than the message */
	b[16] = 1; b[17] = 0; b[18] = 0; b[19] = 40;
	cr_expect_eq(rb2_ipfix_dec_msg(d, b, 20, NULL, NULL, err, sizeof(err)), -EBADMSG);
	b[3] = 24;                   /* a data set of a template never seen */
	b[16] = 1; b[17] = 0; b[18] = 0; b[19] = 8;
	cr_expect_eq(rb2_ipfix_dec_msg(d, b, 24, NULL, NULL, err, sizeof(err)), 0);
	{
		struct rb2_ipfix_dec_stats ds;

		rb2_ipfix_dec_stats(d, &ds);
		cr_expect_eq(ds.unknown_sets, 1);
	}
	rb2_ipfix_dec_free(d);
}
