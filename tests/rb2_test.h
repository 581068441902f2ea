/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_TEST_H
#define RB2_TEST_H

/* Helpers shared by the Criterion suites: one EAL per test process (Criterion
 * forks for every test), --no-huge, and a --file-prefix unique to the pid. */

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>

#include <rb2_chan.h>
#include <rb2_lcore.h>
#include <rb2_xport.h>

#include "rb2_test_pattern.h"

static inline void
rb2_test_eal_init(void)
{
	char prefix[32];
	char *argv[] = {
		"rb2-test", "-l", "0-1", "--no-pci", "--no-huge", "-m", "512",
		"--file-prefix", prefix, "--log-level", "lib.eal:error", NULL,
	};

	snprintf(prefix, sizeof(prefix), "rb2t%d", (int)getpid());
	cr_assert(rte_eal_init((int)RTE_DIM(argv) - 1, argv) >= 0,
		  "rte_eal_init: %s", rte_strerror(rte_errno));
}

static inline void
rb2_test_eal_fini(void)
{
	rb2_eal_cleanup();
}

/*
 * Why rb2_test_check() refused @buf as message @seq: where the first wrong
 * 8-byte word is, and whose it is (each word of message s at offset i holds
 * s * K + i, K odd, so the message it came from is recovered: zeros mean
 * not yet written, an older one stale data, a newer one an overwrite).
 */
static inline void
rb2_test_explain(char *out, size_t len, const void *buf, uint32_t n, uint64_t seq)
{
	const uint64_t k = 0x9e3779b97f4a7c15ull;
	uint64_t inv = k, got, want;
	const uint8_t *p = buf;
	uint32_t i;

	for (int j = 0; j < 6; j++)       /* Newton: k * inv == 1 mod 2^64 */
		inv *= 2 - k * inv;
	for (i = 0; i + 8 <= n; i += 8) {
		memcpy(&got, p + i, 8);
		want = seq * k + i;
		if (got != want) {
			/* Another message's word, at its own offset o? */
			for (uint64_t o = 0; o < 65536; o += 8) {
				uint64_t s = (got - o) * inv;

				if (s - seq + 100000 < 200000) {
					snprintf(out, len, "byte %u of %u holds byte %" PRIu64
						 " of message %" PRIu64 " (%+" PRId64 ")", i, n, o, s,
						 (int64_t)(s - seq));
					return;
				}
			}
			snprintf(out, len, "byte %u of %u: word %#" PRIx64 " is %s", i, n, got,
				 got == 0 ? "zero" : "no nearby message's");
			return;
		}
	}
	snprintf(out, len, "the last %u bytes", n - i);
}

#endif /* RB2_TEST_H */
