/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_CONN_TEST_H
#define RB2_CONN_TEST_H

/*
 * Two connection endpoints in one test process, and connections between
 * them (test_conn.c, test_conn_ref.c). Criterion asserts; include after
 * rb2_test.h.
 */

#include <errno.h>

#include <rb2_conn.h>

/* Endpoints @a (the client) and @b (the server) joined by a channel pair
 * over @xp, both channels with parameters @cp. @raw_ab gets a's sender half,
 * for forged frames. */
static inline void
rb2_test_conn_eps(struct rb2_xport *xp, const struct rb2_chan_params *cp,
		  const struct rb2_conn_ep_params *pa, const struct rb2_conn_ep_params *pb,
		  struct rb2_conn_ep **a, struct rb2_conn_ep **b, struct rb2_tx **raw_ab)
{
	struct rb2_tx *tab = rb2_tx_create("ab", xp, cp), *tba = rb2_tx_create("ba", xp, cp);
	struct rb2_rx *rab = rb2_rx_create("ab", xp, cp), *rba = rb2_rx_create("ba", xp, cp);

	cr_assert(tab && rab && tba && rba, "channels: %s", rte_strerror(rte_errno));
	cr_assert_eq(rb2_chan_pair(tab, rab), 0);
	cr_assert_eq(rb2_chan_pair(tba, rba), 0);
	*a = rb2_conn_ep_create("a", tab, rba, pa);
	*b = rb2_conn_ep_create("b", tba, rab, pb);
	cr_assert(*a && *b, "rb2_conn_ep_create: %s", rte_strerror(rte_errno));
	*raw_ab = tab;
}

/* Connect @n connections from @a to @b's port 7; @ca[i] and @cb[i] are the
 * two ends of connection i, every one open when this returns. */
static inline void
rb2_test_conn_connect_n(struct rb2_conn_ep *a, struct rb2_conn_ep *b, unsigned int n,
			int *ca, int *cb)
{
	cr_assert_eq(rb2_conn_listen(b, 7, n), 0);
	for (unsigned int i = 0; i < n; i++) {
		ca[i] = rb2_conn_connect(a, 7);
		cr_assert_geq(ca[i], 0, "connect %u: %d", i, ca[i]);
	}
	for (unsigned int i = 0; i < n; i++) {
		unsigned int tries = 0;

		while ((cb[i] = rb2_conn_accept(b, 7)) == -EAGAIN && tries++ < 1000)
			rb2_conn_ep_poll(a);
		cr_assert_geq(cb[i], 0, "accept %u: %d", i, cb[i]);
	}
	for (unsigned int i = 0; i < n; i++) {
		for (unsigned int tries = 0; tries < 1000 &&
		     rb2_conn_status(a, ca[i]) == -EINPROGRESS; tries++) {
			rb2_conn_ep_poll(a);
			rb2_conn_ep_poll(b);
		}
		cr_assert_eq(rb2_conn_status(a, ca[i]), 0, "conn %u: %s", i, rb2_conn_why(a, ca[i]));
	}
}

#endif /* RB2_CONN_TEST_H */
