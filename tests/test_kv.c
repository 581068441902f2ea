/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * rb2-kv's parts (apps/rb2-kv): the table, both protocols' executors (every
 * status and error), YCSB's generators against YCSB's own numbers and
 * distributions, and the table under two lcores (no torn value is ever
 * read). The whole server and client run in tests/test_kv.sh.
 */

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <rb2_lcore.h>

#include "rb2_test.h"

#include "kv_bin.h"
#include "kv_proto.h"
#include "kv_store.h"
#include "kv_text.h"
#include "ycsb.h"

/* An answer buffer behind an app_out. */
struct obuf {
	uint8_t b[1 << 17];
	uint32_t len, reserved;
	int full;                 /* reserve fails */
};

static void *
ob_reserve(void *ctx, uint32_t len)
{
	struct obuf *o = ctx;

	if (o->full || o->len + len > sizeof(o->b))
		return NULL;
	o->reserved = len;
	return o->b + o->len;
}

static void
ob_cancel(void *ctx)
{
	struct obuf *o = ctx;

	o->reserved = 0;
}

static void
ob_commit(void *ctx, uint32_t len)
{
	struct obuf *o = ctx;

	cr_assert_leq(len, o->reserved);
	o->len += len;
}

static struct obuf ob;
static const struct app_out out = { ob_reserve, ob_commit, ob_cancel, &ob, sizeof(ob.b) };

static struct kv_store *
store(uint32_t capacity, uint32_t key_max, uint32_t value_max)
{
	struct kv_store_params p = {
		.name = "kvt", .capacity = capacity, .key_max = key_max,
		.value_max = value_max, .socket = SOCKET_ID_ANY,
	};
	struct kv_store *s = kv_store_create(&p);

	cr_assert_not_null(s, "kv_store_create: %s", rte_strerror(rte_errno));
	memset(&ob, 0, sizeof(ob));
	return s;
}

TestSuite(kv, .init = rb2_test_eal_init, .fini = rb2_test_eal_fini);

Test(kv, store_semantics)
{
	struct kv_store *s = store(64, 15, 100);
	char buf[128];
	struct kv_meta m1, m2;
	uint32_t need;

	cr_assert_eq(kv_store_get(s, "k", 1, buf, sizeof(buf), NULL, NULL), -ENOENT);
	cr_assert_eq(kv_store_put(s, "k", 1, "hello", 5, 7, KV_PUT_SET), 0);
	cr_assert_eq(kv_store_get(s, "k", 1, buf, sizeof(buf), NULL, &m1), 5);
	cr_assert(memcmp(buf, "hello", 5) == 0);
	cr_assert_eq(m1.flags, 7);
	cr_assert_eq(kv_store_get(s, "k", 1, buf, 4, &need, NULL), -EMSGSIZE);
	cr_assert_eq(need, 5);
	cr_assert_eq(kv_store_put(s, "k", 1, "x", 1, 0, KV_PUT_ADD), -EEXIST);
	cr_assert_eq(kv_store_put(s, "k", 1, "world!", 6, 0, KV_PUT_REPLACE), 0);
	cr_assert_eq(kv_store_get(s, "k", 1, buf, sizeof(buf), NULL, &m2), 6);
	cr_assert_neq(m1.cas, m2.cas, "every write changes the cas");
	cr_assert_eq(kv_store_put(s, "n", 1, "x", 1, 0, KV_PUT_REPLACE), -ENOENT);
	cr_assert_eq(kv_store_del(s, "k", 1), 0);
	cr_assert_eq(kv_store_del(s, "k", 1), -ENOENT);
	cr_assert_eq(kv_store_get(s, "k", 1, buf, sizeof(buf), NULL, NULL), -ENOENT);
	cr_assert_eq(kv_store_put(s, "k", 1, "x", 1, 0, KV_PUT_ADD), 0, "add after delete");
	/* Keys that differ only in length or padding are different keys. */
	cr_assert_eq(kv_store_put(s, "ab\0", 3, "3", 1, 0, KV_PUT_SET), 0);
	cr_assert_eq(kv_store_get(s, "ab", 2, buf, sizeof(buf), NULL, NULL), -ENOENT);
	cr_assert_eq(kv_store_put(s, "0123456789abcdef", 16, "x", 1, 0, KV_PUT_SET),
		     -ENAMETOOLONG);
	cr_assert_eq(kv_store_put(s, "", 0, "x", 1, 0, KV_PUT_SET), -EINVAL);
	cr_assert_eq(kv_store_put(s, "big", 3, buf, 101, 0, KV_PUT_SET), -E2BIG);
	cr_assert_eq(kv_store_put(s, "max", 3, buf, 100, 0, KV_PUT_SET), 0);
	kv_store_free(s);
}

/* Every key length, up to memcached's 250 bytes: keys that are prefixes of
 * each other, or differ in one byte anywhere, are different keys (the
 * table key is built a word at a time, from loads within the key). */
Test(kv, store_every_key_length)
{
	struct kv_store *s = store(1024, KV_KEY_MAX, 16);
	uint8_t key[KV_KEY_MAX], buf[16];
	uint32_t v;

	for (uint32_t i = 0; i < KV_KEY_MAX; i++)
		key[i] = (uint8_t)(i * 31 + 7);
	for (uint32_t len = 1; len <= KV_KEY_MAX; len++)
		cr_assert_eq(kv_store_put(s, key, len, &len, sizeof(len), 0, KV_PUT_ADD), 0,
			     "key of %u bytes", len);
	for (uint32_t len = 1; len <= KV_KEY_MAX; len++) {
		const uint32_t at[3] = { 0, len / 2, len - 1 };

		cr_assert_eq(kv_store_get(s, key, len, buf, sizeof(buf), NULL, NULL), 4);
		memcpy(&v, buf, 4);
		cr_assert_eq(v, len, "key of %u bytes read %u's value", len, v);
		for (int j = 0; j < 3; j++) {
			key[at[j]] ^= 0x5a;
			cr_assert_eq(kv_store_get(s, key, len, buf, sizeof(buf), NULL, NULL),
				     -ENOENT, "key of %u bytes, byte %u changed", len, at[j]);
			key[at[j]] ^= 0x5a;
		}
	}
	kv_store_free(s);
}

Test(kv, store_full_is_an_error_not_an_eviction)
{
	struct kv_store *s = store(8, 15, 16);
	uint32_t stored = 0;
	char buf[16];
	int ret = 0;

	/* rte_hash holds at least its capacity (more with per-lcore key
	 * caches); past that, a put fails and every key already in stays. */
	for (uint64_t k = 0; k < 100000 && (ret = kv_store_put(s, &k, 8, &k, 8, 0,
								   KV_PUT_SET)) == 0; k++)
		stored++;
	cr_assert_eq(ret, -ENOSPC);
	cr_assert_geq(stored, 8);
	for (uint64_t k = 0; k < stored; k++) {
		cr_assert_eq(kv_store_get(s, &k, 8, buf, sizeof(buf), NULL, NULL), 8);
		cr_assert(memcmp(buf, &k, 8) == 0);
	}
	kv_store_free(s);
}

/* A binary request in @p b: @return its length. */
static uint32_t
req(uint8_t *b, uint8_t op, const char *key, uint32_t klen, const void *val, uint32_t vlen,
    uint32_t tag)
{
	struct kv_hdr h = { op, (uint8_t)klen, (uint16_t)vlen, tag };

	memcpy(b, &h, 8);
	memcpy(b + 8, key, klen);
	if (vlen)
		memcpy(b + 8 + klen, val, vlen);
	return 8 + klen + vlen;
}

/* The answer at @p off: @return its status (and checks tag, magic). */
static int
status_at(uint32_t off, uint32_t tag, uint32_t *vlen)
{
	struct kv_hdr h;

	cr_assert_leq(off + 8, ob.len);
	memcpy(&h, ob.b + off, 8);
	cr_assert_eq(h.klen, KV_RESP_MAGIC);
	cr_assert_eq(h.tag, tag);
	if (vlen)
		*vlen = h.vlen;
	return h.op;
}

Test(kv, binary_protocol_every_status)
{
	struct kv_store *s = store(64, 15, 200);
	uint8_t b[512], big[300] = {0};
	uint32_t n, vlen;

	n = req(b, KV_OP_PUT, "key1", 4, "value", 5, 1);
	cr_assert_eq(kv_bin_exec(s, b, n, &out), 0);
	cr_assert_eq(status_at(0, 1, NULL), KV_OK);
	ob.len = 0;
	n = req(b, KV_OP_GET, "key1", 4, NULL, 0, 2);
	cr_assert_eq(kv_bin_exec(s, b, n, &out), 0);
	cr_assert_eq(status_at(0, 2, &vlen), KV_OK);
	cr_assert_eq(vlen, 5);
	cr_assert(memcmp(ob.b + 8, "value", 5) == 0);
	cr_assert_eq(ob.len, 13);
	ob.len = 0;
	n = req(b, KV_OP_GET, "nokey", 5, NULL, 0, 3);
	cr_assert_eq(kv_bin_exec(s, b, n, &out), 0);
	cr_assert_eq(status_at(0, 3, &vlen), KV_NOT_FOUND);
	cr_assert_eq(vlen, 0);
	ob.len = 0;
	n = req(b, KV_OP_PUT, "k", 1, big, 201, 4);
	cr_assert_eq(kv_bin_exec(s, b, n, &out), 0);
	cr_assert_eq(status_at(0, 4, NULL), KV_VALUE_TOO_LARGE);
	ob.len = 0;
	n = req(b, KV_OP_GET, "0123456789abcdefXYZ", 19, NULL, 0, 5);
	cr_assert_eq(kv_bin_exec(s, b, n, &out), 0);
	cr_assert_eq(status_at(0, 5, NULL), KV_KEY_TOO_LONG);
	ob.len = 0;
	/* Unknown op, empty key, a GET with a value: that request only. */
	n = req(b, 0x42, "k", 1, NULL, 0, 6);
	cr_assert_eq(kv_bin_exec(s, b, n, &out), 0);
	cr_assert_eq(status_at(0, 6, NULL), KV_BAD_REQUEST);
	n = req(b, KV_OP_GET, "", 0, NULL, 0, 7);
	cr_assert_eq(kv_bin_exec(s, b, n, &out), 0);
	cr_assert_eq(status_at(8, 7, NULL), KV_BAD_REQUEST);
	n = req(b, KV_OP_GET, "k", 1, "v", 1, 8);
	cr_assert_eq(kv_bin_exec(s, b, n, &out), 0);
	cr_assert_eq(status_at(16, 8, NULL), KV_BAD_REQUEST);
	ob.len = 0;
	/* A length that lies breaks the framing. */
	n = req(b, KV_OP_GET, "key1", 4, NULL, 0, 9);
	cr_assert_eq(kv_bin_exec(s, b, n + 3, &out), -EPROTO);
	cr_assert_eq(status_at(0, 9, NULL), KV_BAD_REQUEST);
	cr_assert_eq(kv_bin_exec(s, b, 5, &out), -EPROTO);
	ob.len = 0;
	/* No room for the answer: nothing happens, and again later. */
	n = req(b, KV_OP_DEL, "key1", 4, NULL, 0, 10);
	ob.full = 1;
	cr_assert_eq(kv_bin_exec(s, b, n, &out), -EAGAIN);
	cr_assert_eq(kv_bin_exec(s, b, n, &out), -EAGAIN);
	ob.full = 0;
	cr_assert_eq(kv_bin_exec(s, b, n, &out), 0);
	cr_assert_eq(status_at(0, 10, NULL), KV_OK, "the delete ran once");
	n = req(b, KV_OP_DEL, "key1", 4, NULL, 0, 11);
	cr_assert_eq(kv_bin_exec(s, b, n, &out), 0);
	cr_assert_eq(status_at(8, 11, NULL), KV_NOT_FOUND);
	kv_store_free(s);
}

Test(kv, binary_get_of_a_value_larger_than_the_first_guess)
{
	struct kv_store *s = store(64, 15, 4000);
	uint8_t b[4100], v[4000];
	uint32_t n, vlen;

	for (uint32_t i = 0; i < sizeof(v); i++)
		v[i] = (uint8_t)(i * 7);
	n = req(b, KV_OP_PUT, "big", 3, v, sizeof(v), 1);
	cr_assert_eq(kv_bin_exec(s, b, n, &out), 0);
	ob.len = 0;
	n = req(b, KV_OP_GET, "big", 3, NULL, 0, 2);
	cr_assert_eq(kv_bin_exec(s, b, n, &out), 0);
	cr_assert_eq(status_at(0, 2, &vlen), KV_OK);
	cr_assert_eq(vlen, sizeof(v));
	cr_assert(memcmp(ob.b + 8, v, sizeof(v)) == 0);
	kv_store_free(s);
}

/* Run text commands; @return the bytes consumed by the first. */
static int
text(struct kv_store *s, const char *cmd)
{
	ob.len = 0;
	return kv_text_exec(s, cmd, (uint32_t)strlen(cmd), &out);
}

#define ANSWER_IS(want) \
	cr_assert(ob.len == strlen(want) && memcmp(ob.b, want, ob.len) == 0, \
		  "answer '%.*s', expected '%s'", (int)ob.len, ob.b, want)

Test(kv, memcached_text_protocol)
{
	struct kv_store *s = store(64, 250, 100);
	const char *set = "set foo 5 0 3\r\nbar\r\n";

	cr_assert_eq(text(s, set), (int)strlen(set));
	ANSWER_IS("STORED\r\n");
	text(s, "get foo\r\n");
	ANSWER_IS("VALUE foo 5 3\r\nbar\r\nEND\r\n");
	text(s, "get nothing foo nothing\r\n");
	ANSWER_IS("VALUE foo 5 3\r\nbar\r\nEND\r\n");
	cr_assert_gt(text(s, "gets foo\r\n"), 0);
	cr_assert(ob.len > 20 && memcmp(ob.b, "VALUE foo 5 3 ", 14) == 0);
	text(s, "add foo 0 0 1\r\nx\r\n");
	ANSWER_IS("NOT_STORED\r\n");
	text(s, "replace nope 0 0 1\r\nx\r\n");
	ANSWER_IS("NOT_STORED\r\n");
	text(s, "set quiet 0 0 1 noreply\r\nx\r\n");
	ANSWER_IS("");
	text(s, "delete foo\r\n");
	ANSWER_IS("DELETED\r\n");
	text(s, "delete foo\r\n");
	ANSWER_IS("NOT_FOUND\r\n");
	text(s, "get foo\r\n");
	ANSWER_IS("END\r\n");
	/* Expiry in memcached's forms: seconds ahead, then negative (gone at
	 * once); incr and decr with the padding a shorter number leaves. */
	text(s, "set e 0 60 1\r\nx\r\n");
	ANSWER_IS("STORED\r\n");
	text(s, "get e\r\n");
	ANSWER_IS("VALUE e 0 1\r\nx\r\nEND\r\n");
	text(s, "set e 0 -1 1\r\nx\r\n");
	ANSWER_IS("STORED\r\n");
	text(s, "get e\r\n");
	ANSWER_IS("END\r\n");
	text(s, "set n 0 0 2\r\n10\r\n");
	ANSWER_IS("STORED\r\n");
	text(s, "decr n 1\r\n");
	ANSWER_IS("9\r\n");
	text(s, "get n\r\n");
	ANSWER_IS("VALUE n 0 2\r\n9 \r\nEND\r\n");
	/* Errors, each named. */
	text(s, "incr foo 1\r\n");
	ANSWER_IS("NOT_FOUND\r\n");
	text(s, "incr n x\r\n");
	ANSWER_IS("CLIENT_ERROR invalid numeric delta argument\r\n");
	text(s, "set big 0 0 101\r\n");
	cr_assert_eq(ob.len, 0, "waits for the data block");
	{
		static char cmd[200];

		snprintf(cmd, sizeof(cmd), "set big 0 0 101\r\n%0101d\r\n", 0);
		cr_assert_eq(text(s, cmd), (int)strlen(cmd));
		ANSWER_IS("SERVER_ERROR object too large for cache\r\n");
	}
	cr_assert_eq(text(s, "set x 0 0 3\r\nabcd\r\n"), -EPIPE);
	ANSWER_IS("CLIENT_ERROR bad data chunk\r\n");
	text(s, "set x zero 0 3\r\nabc\r\n");
	ANSWER_IS("CLIENT_ERROR bad command line format\r\n");
	text(s, "frobnicate\r\n");
	ANSWER_IS("ERROR\r\n");
	cr_assert_eq(text(s, "get incomplete"), 0);
	{
		static char longline[KV_TEXT_LINE_MAX + 10];

		memset(longline, 'a', sizeof(longline) - 1);
		cr_assert_eq(text(s, longline), -EPIPE);
		ANSWER_IS("CLIENT_ERROR line too long\r\n");
	}
	cr_assert_eq(text(s, "quit\r\n"), -EPIPE);
	text(s, "flush_all\r\n");
	ANSWER_IS("OK\r\n");
	text(s, "get quiet\r\n");
	ANSWER_IS("END\r\n");
	kv_store_free(s);
}

Test(kv, ycsb_fnvhash64_is_ycsbs)
{
	/* Java's Utils.fnvhash64; 0 gives the famous "user6284781860667377211". */
	cr_assert_eq(ycsb_fnvhash64(0), 6284781860667377211ull);
	cr_assert_eq(ycsb_fnvhash64(1), 8517097267634966620ull);
	cr_assert_eq(ycsb_fnvhash64(2), 1820151046732198393ull);
	cr_assert_eq(ycsb_fnvhash64(12345), 1792800413050876852ull);
	cr_assert_eq(ycsb_fnvhash64(1ull << 40), 6908947124047430886ull);
}

Test(kv, ycsb_workload_mixes)
{
	const char ws[] = "abcdf";
	struct ycsb_workload w;
	struct ycsb_inserts ins;

	cr_assert_eq(ycsb_workload('e', &w), -1, "E is scans");
	for (unsigned int i = 0; i < sizeof(ws) - 1; i++) {
		uint64_t n[YCSB_NOPS] = {0}, draws = 200000;
		struct ycsb_gen g;

		cr_assert_eq(ycsb_workload(ws[i], &w), 0);
		cr_assert_eq(ycsb_inserts_init(&ins, 1000), 0);
		ycsb_gen_init(&g, &w, 1000, draws, 42, &ins);
		for (uint64_t d = 0; d < draws; d++)
			n[ycsb_next_op(&g)]++;
		for (int op = 0; op < YCSB_NOPS; op++)
			cr_assert(fabs((double)n[op] / (double)draws - w.proportion[op]) < 0.01,
				  "workload %c: %s %.4f of the operations, want %.2f", ws[i],
				  ycsb_op_name[op], (double)n[op] / (double)draws,
				  w.proportion[op]);
		ycsb_inserts_free(&ins);
	}
}

/* Draw @p draws record numbers; @return the largest share one record had. */
static double
draw(enum ycsb_dist dist, uint64_t records, uint64_t draws, uint64_t *count, uint64_t *top)
{
	struct ycsb_workload w;
	struct ycsb_inserts ins;
	struct ycsb_gen g;
	uint64_t best = 0;

	ycsb_workload('c', &w);
	w.dist = dist;
	cr_assert_eq(ycsb_inserts_init(&ins, records), 0);
	ycsb_gen_init(&g, &w, records, draws, 7, &ins);
	memset(count, 0, records * sizeof(*count));
	for (uint64_t d = 0; d < draws; d++) {
		uint64_t k = ycsb_next_keynum(&g);

		cr_assert_lt(k, records, "record %" PRIu64 " of %" PRIu64, k, records);
		count[k]++;
	}
	for (uint64_t k = 0; k < records; k++)
		if (count[k] > best) {
			best = count[k];
			*top = k;
		}
	ycsb_inserts_free(&ins);
	return (double)best / (double)draws;
}

Test(kv, ycsb_distributions)
{
	uint64_t records = 1000, draws = 1000000, top = 0, *count;
	double share, zeta = 0;

	count = calloc(records, sizeof(*count));
	/* Scrambled zipfian: item 0 of 10^10 has 1/zeta(10^10, 0.99) of the
	 * draws (YCSB's ZETAN 26.469...), 3.78 %, on whichever record FNV
	 * scatters it to (others that land there add a little). */
	share = draw(YCSB_ZIPFIAN, records, draws, count, &top);
	cr_assert(share > 0.036 && share < 0.045, "top record share %.4f", share);
	/* Uniform: every record near 1/1000. */
	share = draw(YCSB_UNIFORM, records, draws, count, &top);
	cr_assert(share < 0.0013, "top record share %.4f", share);
	for (uint64_t k = 0; k < records; k++)
		cr_assert_gt(count[k], 800, "record %" PRIu64 " drawn %" PRIu64 " times", k,
			     count[k]);
	/* Latest: the newest record is the most drawn, 1/zeta(999) of the
	 * time, and the share falls with age. */
	share = draw(YCSB_LATEST, records, draws, count, &top);
	for (int i = 1; i <= 999; i++)
		zeta += 1 / pow(i, 0.99);
	cr_assert_eq(top, records - 1);
	cr_assert(fabs(share - 1 / zeta) < 0.01, "newest share %.4f, want %.4f", share, 1 / zeta);
	cr_assert_gt(count[records - 2], count[records - 10]);
	cr_assert_gt(count[records - 10], count[records - 500]);
	free(count);
}

Test(kv, ycsb_inserts_acknowledged_out_of_order)
{
	struct ycsb_inserts ins;

	cr_assert_eq(ycsb_inserts_init(&ins, 100), 0);
	cr_assert_eq(ycsb_next_insert(&ins), 100);
	cr_assert_eq(ycsb_next_insert(&ins), 101);
	cr_assert_eq(ycsb_next_insert(&ins), 102);
	cr_assert_eq(ycsb_ack_insert(&ins, 101), 0);
	cr_assert_eq(atomic_load(&ins.limit), 99, "100 is not acknowledged yet");
	cr_assert_eq(ycsb_ack_insert(&ins, 100), 0);
	cr_assert_eq(atomic_load(&ins.limit), 101);
	cr_assert_eq(ycsb_ack_insert(&ins, 102), 0);
	cr_assert_eq(atomic_load(&ins.limit), 102);
	ycsb_inserts_free(&ins);
}

Test(kv, value_check_catches_every_change)
{
	uint8_t v[120], w[120];
	uint64_t ver;

	kv_value_fill(v, sizeof(v), 77, 5);
	cr_assert_eq(kv_value_check(v, sizeof(v), 77, &ver), 0);
	cr_assert_eq(ver, 5);
	cr_assert_eq(kv_value_check(v, sizeof(v), 78, &ver), -1, "another key's value");
	cr_assert_eq(kv_value_check(v, sizeof(v) - 1, 77, &ver), -1, "cut short");
	for (unsigned int i = 0; i < sizeof(v); i++) {
		memcpy(w, v, sizeof(v));
		w[i] ^= 0x10;
		cr_assert_eq(kv_value_check(w, sizeof(w), 77, &ver), -1, "byte %u changed", i);
	}
}

/* Two lcores: one rewrites a few keys with values of two lengths, one reads
 * them; a torn or mixed value would fail its check. */
struct race {
	struct kv_store *s;
	volatile int stop;
	uint64_t writes;
};

static int
writer(void *arg)
{
	struct race *r = arg;
	uint8_t v[600];

	for (uint64_t ver = 1; !r->stop; ver++) {
		uint64_t key = ver % 4;
		uint32_t len = ver % 2 ? 600 : 40;

		kv_value_fill(v, len, key, ver);
		kv_store_put(r->s, &key, 8, v, len, 0, KV_PUT_SET);
		r->writes++;
	}
	return 0;
}

Test(kv, concurrent_readers_never_see_a_torn_value)
{
	struct race r = { .s = store(64, 15, 600) };
	unsigned int worker = rte_get_next_lcore(-1, 1, 0);
	uint8_t v[600];
	uint64_t reads = 0, ver;

	for (uint64_t key = 0; key < 4; key++) {
		kv_value_fill(v, 40, key, 0);
		kv_store_put(r.s, &key, 8, v, 40, 0, KV_PUT_SET);
	}
	cr_assert_eq(rb2_lcore_launch(writer, &r, worker), 0);
	for (uint64_t i = 0; i < 2000000 && (i < 1000 || r.writes < 100000 || reads < 100000); i++) {
		uint64_t key = i % 4;
		int n = kv_store_get(r.s, &key, 8, v, sizeof(v), NULL, NULL);

		cr_assert(n == 40 || n == 600, "length %d", n);
		cr_assert_eq(kv_value_check(v, (uint32_t)n, key, &ver), 0,
			     "a torn value of key %" PRIu64 " (%d bytes)", key, n);
		reads++;
	}
	r.stop = 1;
	rb2_lcore_wait(worker);
	cr_assert_gt(r.writes, 1000, "the writer ran (%" PRIu64 " writes)", r.writes);
	kv_store_free(r.s);
}
