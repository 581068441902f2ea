/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#include <errno.h>
#include <stdatomic.h>

#include <rte_common.h>
#include <rte_lcore.h>

#include "rb2_lcore.h"

/* What the worker runs, and its end, which it release-stores last. */
static struct launch {
	lcore_function_t *f;
	void *arg;
	_Atomic uint64_t ended;
} launches[RTE_MAX_LCORE];

static int
run_launched(void *p)
{
	struct launch *l = p;
	int ret = l->f(l->arg);

	/* Release: everything the function wrote, before the end. */
	atomic_fetch_add_explicit(&l->ended, 1, memory_order_release);
	return ret;
}

int
rb2_lcore_launch(lcore_function_t *f, void *arg, unsigned int lcore_id)
{
	struct launch *l;

	if (lcore_id >= RTE_MAX_LCORE || !rte_lcore_is_enabled(lcore_id) ||
	    lcore_id == rte_get_main_lcore())
		return -EINVAL;
	/* The slot is the worker's while it runs: check before writing it. */
	if (rte_eal_get_lcore_state(lcore_id) != WAIT)
		return -EBUSY;
	l = &launches[lcore_id];
	l->f = f;
	l->arg = arg;
	return rte_eal_remote_launch(run_launched, l, lcore_id);
}

int
rb2_lcore_wait(unsigned int lcore_id)
{
	int ret;

	if (lcore_id >= RTE_MAX_LCORE)
		return 0;
	ret = rte_eal_wait_lcore(lcore_id);
	/* Acquire: pairs with run_launched()'s release (see the header). */
	(void)atomic_load_explicit(&launches[lcore_id].ended, memory_order_acquire);
	return ret;
}

void
rb2_lcore_wait_all(void)
{
	unsigned int lcore_id;

	RTE_LCORE_FOREACH_WORKER(lcore_id)
		rb2_lcore_wait(lcore_id);
}
