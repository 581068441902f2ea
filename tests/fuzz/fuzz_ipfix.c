/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * libFuzzer target: IPFIX and NetFlow v9. The decoder on arbitrary messages
 * (as a collector would get them from anyone), and a round trip: the input
 * taken as flow records is encoded, in the version it picks, into messages
 * no longer than the size it picks, and must decode to the same records
 * (timestamps to the millisecond). Built and run by tests/fuzz/run.sh.
 */

#include <stdint.h>
#include <string.h>

#include "rb2_ipfix.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAXREC 64

struct rt {
	struct rb2_flow_rec want[MAXREC];
	unsigned int n, seen;
	struct rb2_ipfix_dec *d;
	size_t max;
};

static void
check_rec(void *arg, const struct rb2_flow_rec *r, uint32_t domain)
{
	struct rt *t = arg;

	(void)domain;
	if (t->seen >= t->n || memcmp(r, &t->want[t->seen], sizeof(*r)) != 0)
		__builtin_trap();
	t->seen++;
}

static void
check_msg(void *arg, const uint8_t *msg, size_t len)
{
	struct rt *t = arg;

	if (len > t->max || rb2_ipfix_dec_msg(t->d, msg, len, check_rec, t, NULL, 0) != 0)
		__builtin_trap();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rb2_ipfix_dec *d = rb2_ipfix_dec_create();
	struct rb2_ipfix_params p;
	struct rb2_ipfix_enc *e;
	static struct rt t;
	char err[128];

	/* Whatever arrives: decoded, or refused with a reason. */
	rb2_ipfix_dec_msg(d, data, size, NULL, NULL, err, sizeof(err));
	rb2_ipfix_dec_free(d);
	if (size < 2)
		return 0;
	/* The round trip: two bytes pick the message size, the rest are records. */
	rb2_ipfix_params_init(&p);
	p.max_msg = RB2_IPFIX_MSG_MIN + (((uint32_t)data[0] << 8 | data[1]) % 4000);
	p.refresh_msgs = data[0] % 4;
	p.version = data[1] & 1 ? RB2_NFV9_VERSION : RB2_IPFIX_VERSION;
	memset(&t, 0, sizeof(t));
	t.max = p.max_msg;
	t.d = rb2_ipfix_dec_create();
	e = rb2_ipfix_enc_create(&p);
	for (size_t off = 2; off + sizeof(struct rb2_flow_rec) <= size && t.n < MAXREC;
	     off += sizeof(struct rb2_flow_rec)) {
		struct rb2_flow_rec r;

		memcpy(&r, data + off, sizeof(r));
		r.kind = r.kind & 1 ? RB2_REC_IPV6 : RB2_REC_IPV4;
		if (r.kind == RB2_REC_IPV4) {
			memset(r.src + 4, 0, 12);
			memset(r.dst + 4, 0, 12);
		}
		r.rsvd = 0;
		r.rsvd2 = 0;
		if (rb2_ipfix_enc_add(e, &r, 1800000000, check_msg, &t) != 0)
			__builtin_trap();
		r.first_ns = r.first_ns / 1000000 * 1000000;
		r.last_ns = r.last_ns / 1000000 * 1000000;
		t.want[t.n++] = r;
	}
	rb2_ipfix_enc_flush(e, 1800000000, check_msg, &t);
	if (t.seen != t.n)
		__builtin_trap();
	rb2_ipfix_enc_free(e);
	rb2_ipfix_dec_free(t.d);
	return 0;
}
