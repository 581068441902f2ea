/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * rb2_l5.h in a build without the paper's baselines (meson configure
 * -Dbaselines=false): no L5 ring is in it. Creating one fails, saying how
 * to get it; since no ring can exist, the other calls are never reached
 * with one, and refuse what they are given. Everything that compares with
 * L5 (rb2-perf's l5 design, a via = l5 link, the apps' l5 bench design)
 * then stops at its set-up with that message, and the rest works as ever.
 */

#include <errno.h>

#include <rte_errno.h>
#include <rte_log.h>

#include "rb2_l5.h"

RTE_LOG_REGISTER(rb2_l5_logtype, rb2.l5, INFO);

struct rb2_l5 *
rb2_l5_create(struct rb2_xport *xp, const char *name, size_t bytes, uint32_t max_msg,
	      unsigned int tx_lcore, unsigned int rx_lcore)
{
	RTE_SET_USED(xp);
	RTE_SET_USED(bytes);
	RTE_SET_USED(max_msg);
	RTE_SET_USED(tx_lcore);
	RTE_SET_USED(rx_lcore);
	rte_log(RTE_LOG_ERR, rb2_l5_logtype,
		"rb2_l5: %s: L5's ring (the paper's baseline) is not in this build; "
		"configure with meson configure -Dbaselines=true\n", name);
	rte_errno = ENOTSUP;
	return NULL;
}

void
rb2_l5_destroy(struct rb2_l5 *r)
{
	RTE_SET_USED(r);
}

int
rb2_l5_send(struct rb2_l5 *r, const void *data, uint32_t len)
{
	RTE_SET_USED(r);
	RTE_SET_USED(data);
	RTE_SET_USED(len);
	return -ENOTSUP;
}

int
rb2_l5_room(struct rb2_l5 *r, uint32_t len, unsigned int n)
{
	RTE_SET_USED(r);
	RTE_SET_USED(len);
	RTE_SET_USED(n);
	return -ENOTSUP;
}

int
rb2_l5_drained(struct rb2_l5 *r)
{
	RTE_SET_USED(r);
	return -ENOTSUP;
}

int
rb2_l5_recv(struct rb2_l5 *r, void *dst, uint32_t cap)
{
	RTE_SET_USED(r);
	RTE_SET_USED(dst);
	RTE_SET_USED(cap);
	return -ENOTSUP;
}

void
rb2_l5_stats_get(const struct rb2_l5 *r, struct rb2_l5_stats *st)
{
	RTE_SET_USED(r);
	*st = (struct rb2_l5_stats){ 0 };
}

size_t
rb2_l5_ring_bytes(uint32_t slots, uint32_t size)
{
	RTE_SET_USED(slots);
	RTE_SET_USED(size);
	return 0;
}
