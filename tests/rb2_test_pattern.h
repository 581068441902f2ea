/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_TEST_PATTERN_H
#define RB2_TEST_PATTERN_H

/* Payloads a receiver can check, and a seedable PRNG: shared by the
 * Criterion suites (rb2_test.h) and the plain test programs (test_verbs). */

#include <stdint.h>
#include <string.h>

/* xorshift64*: a seedable PRNG for property tests. */
static inline uint64_t
rb2_test_rand(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

/* Deterministic payload of message @seq, so the receiver can check it. */
static inline void
rb2_test_fill(void *buf, uint32_t len, uint64_t seq)
{
	uint8_t *p = buf;
	uint32_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t v = seq * 0x9e3779b97f4a7c15ull + i;
		memcpy(p + i, &v, 8);
	}
	for (; i < len; i++)
		p[i] = (uint8_t)(seq + i);
}

static inline int
rb2_test_check(const void *buf, uint32_t len, uint64_t seq)
{
	const uint8_t *p = buf;
	uint32_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t v = seq * 0x9e3779b97f4a7c15ull + i, got;
		memcpy(&got, p + i, 8);
		if (got != v)
			return 0;
	}
	for (; i < len; i++)
		if (p[i] != (uint8_t)(seq + i))
			return 0;
	return 1;
}

#endif /* RB2_TEST_PATTERN_H */
