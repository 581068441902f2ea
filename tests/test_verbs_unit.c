/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* The verbs driver, checked on a host without RDMA: which WRs of a chain are
 * inline and which signaled, send-queue accounting and depths, and the
 * message when there is no device. */

#include <stdlib.h>

#include <rte_log.h>

#include <rb2_xport_verbs.h>

#include "rb2_test.h"

TestSuite(rb2_verbs, .init = rb2_test_eal_init, .fini = rb2_test_eal_fini,
	  .timeout = 60);

static struct rb2_xport_wr
wr(uint32_t len, uint16_t flags)
{
	return (struct rb2_xport_wr){.len = len, .opcode = RB2_WR_WRITE, .flags = flags};
}

Test(rb2_verbs, chain_inline_only_when_it_fits_and_signaled_only_when_asked)
{
	struct rb2_verbs_sq sq;
	/* The channel's pointer-advancement chain: lens, slots, tail. */
	struct rb2_xport_wr chain[3] = {
		wr(64, RB2_WR_INLINE), wr(1024, RB2_WR_INLINE),
		wr(8, RB2_WR_INLINE | RB2_WR_SIGNALED),
	};
	uint32_t f[3];

	cr_assert_eq(rb2_verbs_sq_init(&sq, 64), 0);
	cr_assert_eq(rb2_verbs_sq_plan(&sq, chain, 3, 256, f), 0);
	cr_expect_eq(f[0], RB2_VERBS_F_INLINE, "lens fits 256 B inline");
	cr_expect_eq(f[1], 0, "1 KiB of slots does not: DMA, unsignaled");
	cr_expect_eq(f[2], RB2_VERBS_F_INLINE | RB2_VERBS_F_SIGNALED, "the tail");
	/* A READ is never inline. */
	chain[0].opcode = RB2_WR_READ;
	cr_assert_eq(rb2_verbs_sq_plan(&sq, chain, 1, 256, f), 0);
	cr_expect_eq(f[0] & RB2_VERBS_F_INLINE, 0);
	rb2_verbs_sq_fini(&sq);
}

Test(rb2_verbs, unsignaled_rule_signals_every_half_depth_and_recycles)
{
	struct rb2_verbs_sq sq;
	struct rb2_xport_wr chain[4] = {wr(8, 0), wr(8, 0), wr(8, 0), wr(8, 0)};
	uint32_t f[4];
	unsigned int forced = 0, posted = 0;

	cr_assert_eq(rb2_verbs_sq_init(&sq, 16), 0);
	cr_assert_eq(sq.signal_every, 8);
	/* 16 unsignaled WRs fill the queue: two are forced to signal. */
	for (int c = 0; c < 4; c++) {
		cr_assert_eq(rb2_verbs_sq_plan(&sq, chain, 4, 0, f), 0);
		for (int i = 0; i < 4; i++) {
			posted++;
			if (f[i] & RB2_VERBS_F_INTERNAL) {
				forced++;
				cr_expect_eq(posted % 8, 0, "forced at WR %u", posted);
			}
		}
		rb2_verbs_sq_posted(&sq, f, 4);
	}
	cr_expect_eq(forced, 2);
	cr_expect_eq(sq.free, 0);
	cr_expect_eq(rb2_verbs_sq_plan(&sq, chain, 1, 0, f), -ENOSPC, "full");
	/* Each forced completion gives back the 8 WRs before it. */
	rb2_verbs_sq_completed(&sq);
	cr_expect_eq(sq.free, 8);
	rb2_verbs_sq_completed(&sq);
	cr_expect_eq(sq.free, 16);
	rb2_verbs_sq_completed(&sq); /* a stray one changes nothing */
	cr_expect_eq(sq.free, 16);
	rb2_verbs_sq_fini(&sq);
}

Test(rb2_verbs, depth_is_bounded_by_the_device)
{
	cr_expect_eq(rb2_verbs_sq_depth(4, 0), 16, "a floor");
	cr_expect_eq(rb2_verbs_sq_depth(300, 0), 300);
	cr_expect_eq(rb2_verbs_sq_depth(100000, 32767), 32767, "the device's max");
}

Test(rb2_verbs, no_device_gives_one_clear_message)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *log = open_memstream(&buf, &len);
	struct rb2_xport *xp;

	rte_openlog_stream(log);
	xp = rb2_xport_open("verbs", "dev=nosuchdev0");
	fflush(log);
	rte_openlog_stream(NULL);
	cr_expect_null(xp);
	cr_expect_eq(rte_errno, ENODEV);
	cr_expect(buf != NULL && strstr(buf, "nosuchdev0") && strstr(buf, "--transport shm") &&
		  strstr(buf, "rdma_rxe"), "log: %s", buf ? buf : "");
	cr_expect_null(rb2_xport_open("verbs", "port=0"), "port 0 is invalid");
	cr_expect_eq(rte_errno, EINVAL);
	fclose(log);
	free(buf);
}
