/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef KV_PROTO_H
#define KV_PROTO_H

/*
 * rb2-kv's binary protocol, and the values its YCSB client writes.
 *
 * Self-delimiting, so the same bytes run over an rb2 connection (one
 * message per request) and over a TCP stream:
 *
 *   request   [op u8][klen u8][vlen u16][tag u32][key: klen][value: vlen]
 *   response  [status u8][KV_RESP_MAGIC u8][vlen u16][tag u32][value: vlen]
 *
 * Little-endian. A GET of an 8-byte key is 16 bytes; its answer with a
 * 120-byte value is 128 (the RB² paper's setting, §V-C). tag is the
 * client's, echoed. Responses come in request order on each connection.
 * The first byte of a request is never printable ASCII, which is how the
 * TCP front tells this protocol from memcached's text one.
 */

#include <stdint.h>
#include <string.h>

#define KV_OP_GET 0xb1
#define KV_OP_PUT 0xb2
#define KV_OP_DEL 0xb3
#define KV_RESP_MAGIC 0xb0
#define KV_HDR_LEN 8u
#define KV_KEY_MAX 250u          /* the longest key any store takes (memcached's) */
#define KV_VALUE_MAX 65535u      /* what vlen can say */

enum kv_status {
	KV_OK = 0,
	KV_NOT_FOUND = 1,
	KV_VALUE_TOO_LARGE = 2,  /* over the server's --value-max */
	KV_KEY_TOO_LONG = 3,     /* over the server's --key-max */
	KV_BAD_REQUEST = 4,      /* unknown op, a GET or DEL with a value,
				  * an empty key, or a length that lies */
	KV_NO_SPACE = 5,         /* the table is full */
	KV_NSTATUS
};

struct kv_hdr {
	uint8_t op;              /* or status, in a response */
	uint8_t klen;            /* or KV_RESP_MAGIC */
	uint16_t vlen;
	uint32_t tag;
};

_Static_assert(sizeof(struct kv_hdr) == KV_HDR_LEN, "kv_hdr is the wire header");

static inline const char *
kv_status_str(unsigned int s)
{
	static const char *const str[KV_NSTATUS] = {
		"OK", "NOT_FOUND", "VALUE_TOO_LARGE", "KEY_TOO_LONG", "BAD_REQUEST",
		"NO_SPACE",
	};
	return s < KV_NSTATUS ? str[s] : "UNKNOWN";
}

/*
 * A value as the YCSB client writes it, so that every read can be checked:
 * [version u64][check u64][fill], the check a hash of the key, the version
 * and the length, each 8 bytes of fill the check mixed with their offset.
 * Any byte wrong, a value of another key, or a torn one fails
 * kv_value_check().
 */
#define KV_VALUE_MIN 16u

static inline uint64_t
kv_mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

static inline uint64_t
kv_value_sum(uint64_t key, uint64_t version, uint32_t len)
{
	return kv_mix64(key ^ kv_mix64(version ^ ((uint64_t)len << 48)));
}

static inline uint64_t
kv_value_word(uint64_t sum, uint32_t off)
{
	return sum ^ ((uint64_t)off * 0x9e3779b97f4a7c15ull);
}

static inline void
kv_value_fill(uint8_t *v, uint32_t len, uint64_t key, uint64_t version)
{
	uint64_t sum = kv_value_sum(key, version, len), w;
	uint32_t off;

	memcpy(v, &version, 8);
	memcpy(v + 8, &sum, 8);
	/* One loop whose every copy is bounded by what is left: gcc 12 with
	 * -march=native on some CPUs (AMD EPYC) unrolls a full-word loop
	 * plus a tail into a copy it believes overflows (-Wstringop-overflow). */
	for (off = 16; off < len; off += 8) {
		w = kv_value_word(sum, off);
		memcpy(v + off, &w, len - off < 8 ? len - off : 8);
	}
}

/* @return 0 and the version, or -1 (the value is not one written for key). */
static inline int
kv_value_check(const uint8_t *v, uint32_t len, uint64_t key, uint64_t *version)
{
	uint64_t sum, w, x = 0;
	uint32_t off;

	if (len < KV_VALUE_MIN)
		return -1;
	memcpy(version, v, 8);
	memcpy(&sum, v + 8, 8);
	if (sum != kv_value_sum(key, *version, len))
		return -1;
	for (off = 16; off + 8 <= len; off += 8) {
		memcpy(&w, v + off, 8);
		x |= w ^ kv_value_word(sum, off);
	}
	w = kv_value_word(sum, off);
	return x != 0 || memcmp(v + off, &w, len - off) != 0 ? -1 : 0;
}

#endif /* KV_PROTO_H */
