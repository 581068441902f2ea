/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* Transport layer: driver registry, the -ENOTSUP defaults, argument checks,
 * WR chains and completions, and the shm rendezvous between lcores. */

#include <stdatomic.h>

#include <rte_launch.h>
#include <rte_memzone.h>

#include <rb2_xport_driver.h>

#include "rb2_test.h"

TestSuite(rb2_xport, .init = rb2_test_eal_init, .fini = rb2_test_eal_fini,
	  .timeout = 60);

/* A driver that implements only open(): everything else must fall back to
 * the -ENOTSUP table, never to a NULL call. */
static int
partial_open(struct rb2_xport *xp __rte_unused, const char *args __rte_unused)
{
	return 0;
}
static const struct rb2_xport_ops partial_ops = {.open = partial_open};
RB2_XPORT_REGISTER(partial, partial_ops);

Test(rb2_xport, registry_lists_shm_and_refuses_unknown)
{
	const char *names[16];
	unsigned int n = rb2_xport_drivers(names, 16), found = 0;

	for (unsigned int i = 0; i < n; i++)
		found |= strcmp(names[i], "shm") == 0;
	cr_expect(found, "shm is registered");
	cr_expect_null(rb2_xport_open("nosuch", NULL));
	cr_expect_eq(rte_errno, ENOENT);
	cr_expect_null(rb2_xport_open_spec(",mode=copy"));
	cr_expect_eq(rte_errno, EINVAL);
}

Test(rb2_xport, missing_ops_default_to_enotsup)
{
	struct rb2_xport *xp = rb2_xport_open("partial", NULL);
	struct rb2_xport_qp_attr attr = {.lcore_id = rte_lcore_id()};
	struct rb2_xport_mr mr;

	cr_assert_not_null(xp);
	cr_expect_eq(rb2_xport_mr_alloc(xp, "x", 64, SOCKET_ID_ANY, &mr), -ENOTSUP);
	cr_expect_null(rb2_xport_qp_create(xp, &attr));
	cr_expect_eq(rte_errno, ENOTSUP);
	cr_expect_eq(rb2_xport_caps(xp), 0);
	rb2_xport_close(xp);
}

Test(rb2_xport, shm_arguments_are_checked)
{
	struct rb2_xport *xp;

	cr_expect_null(rb2_xport_open("shm", "mode=dma"));
	cr_expect_eq(rte_errno, EINVAL);
	cr_expect_null(rb2_xport_open("shm", "speed=fast"));
	cr_expect_eq(rte_errno, EINVAL);
	xp = rb2_xport_open_spec("shm,mode=copy");
	cr_assert_not_null(xp);
	cr_expect_eq(rb2_xport_caps(xp) & RB2_XPORT_CAP_LOADSTORE, 0);
	rb2_xport_close(xp);
	xp = rb2_xport_open_spec("shm");
	cr_assert_not_null(xp);
	cr_expect_neq(rb2_xport_caps(xp) & RB2_XPORT_CAP_LOADSTORE, 0);
	rb2_xport_close(xp);
}

/* A chain executes in order behind one doorbell; only signaled WRs
 * complete; an unconnected queue refuses to post. */
Test(rb2_xport, shm_chain_executes_in_order_and_signals_selectively)
{
	struct rb2_xport *xp = rb2_xport_open("shm", "mode=copy");
	struct rb2_xport_qp_attr attr = {.lcore_id = rte_lcore_id(), .cq_depth = 4};
	struct rb2_xport_qp *a = rb2_xport_qp_create(xp, &attr);
	struct rb2_xport_qp *b = rb2_xport_qp_create(xp, &attr);
	struct rb2_xport_mr src, dst;
	struct rb2_xport_wc wc[8];
	struct rb2_xport_wr wr[3];
	uint64_t v = 42;

	cr_assert(xp && a && b);
	cr_assert_eq(rb2_xport_mr_alloc(xp, "src", 4096, SOCKET_ID_ANY, &src), 0);
	cr_assert_eq(rb2_xport_mr_alloc(xp, "dst", 4096, SOCKET_ID_ANY, &dst), 0);
	memset(src.addr, 0xab, 4096);
	wr[0] = (struct rb2_xport_wr){.wr_id = 1, .local = src.addr,
		.remote = (uintptr_t)dst.addr + 64, .len = 1000, .opcode = RB2_WR_WRITE};
	wr[1] = (struct rb2_xport_wr){.wr_id = 2, .local = &v,
		.remote = (uintptr_t)dst.addr, .len = 8, .opcode = RB2_WR_WRITE,
		.flags = RB2_WR_SIGNALED | RB2_WR_INLINE};
	cr_expect_eq(rb2_xport_post(a, wr, 2), -ENOTCONN);
	cr_assert_eq(rb2_xport_qp_connect_local(a, b), 0);
	cr_expect_eq(rb2_xport_qp_connect_local(a, b), -EISCONN);
	cr_assert_eq(rb2_xport_post(a, wr, 2), 0);
	cr_expect_eq(*(uint64_t *)dst.addr, 42);
	cr_expect_eq(((uint8_t *)dst.addr)[64 + 999], 0xab);
	cr_expect_eq(((uint8_t *)dst.addr)[64 + 1000], 0);
	cr_assert_eq(rb2_xport_poll(a, wc, 8), 1, "only the signaled WR completes");
	cr_expect_eq(wc[0].wr_id, 2);
	cr_expect_eq(wc[0].status, RB2_WC_SUCCESS);
	cr_expect_eq(rb2_xport_poll(a, wc, 8), 0);
	/* A full completion ring refuses the whole chain. */
	for (int i = 0; i < 4; i++)
		cr_assert_eq(rb2_xport_post(a, &wr[1], 1), 0);
	v = 7;
	cr_expect_eq(rb2_xport_post(a, wr, 2), -ENOSPC);
	cr_expect_eq(*(uint64_t *)dst.addr, 42, "nothing of a refused chain ran");
	cr_expect_eq(rb2_xport_poll(a, wc, 8), 4);
	/* An opcode the transport lacks refuses the chain before any of it. */
	wr[2] = (struct rb2_xport_wr){.local = &v, .remote = (uintptr_t)dst.addr,
		.len = 8, .opcode = RB2_WR_WRITE_IMM};
	v = 9;
	cr_expect_eq(rb2_xport_post(a, &wr[1], 2), -ENOTSUP);
	cr_expect_eq(*(uint64_t *)dst.addr, 42, "the WRITE before it did not run");
	/* READ. */
	wr[2] = (struct rb2_xport_wr){.local = &v, .remote = (uintptr_t)dst.addr,
		.len = 8, .opcode = RB2_WR_READ};
	cr_assert_eq(rb2_xport_post(a, &wr[2], 1), 0);
	cr_expect_eq(v, 42);
	rb2_xport_qp_destroy(a);
	rb2_xport_qp_destroy(b);
	rb2_xport_mr_free(xp, &src);
	rb2_xport_mr_free(xp, &dst);
	rb2_xport_close(xp);
}

Test(rb2_xport, shm_rendezvous_times_out_without_peer)
{
	struct rb2_xport *xp = rb2_xport_open("shm", NULL);
	struct rb2_xport_qp_attr attr = {.lcore_id = rte_lcore_id()};
	struct rb2_xport_qp *q = rb2_xport_qp_create(xp, &attr);
	char blob[8] = "x", peer[64];

	cr_assert_not_null(q);
	cr_expect_eq(rb2_xport_qp_exchange(q, "lonely", RB2_XPORT_ACTIVE, blob, 8,
					   peer, sizeof(peer), 50), -ETIMEDOUT);
	cr_expect_eq(rb2_xport_qp_exchange(q, "lonely", RB2_XPORT_PASSIVE, blob, 8,
					   peer, sizeof(peer), 50), -ETIMEDOUT);
	cr_expect_null(rte_memzone_lookup("rb2rv.lonely"), "a timed-out passive side withdraws");
	rb2_xport_qp_destroy(q);
	rb2_xport_close(xp);
}

/* Two lcores find each other by name and run a channel through it. */
struct peer_arg {
	struct rb2_xport *xp;
	struct rb2_chan_params p;
	int ret;
	uint64_t sent;
};

static int
remote_sender(void *arg)
{
	struct peer_arg *a = arg;
	struct rb2_tx *tx;
	uint8_t b[100];

	a->p.lcore_id = rte_lcore_id();
	tx = rb2_tx_create("rv", a->xp, &a->p);
	if (tx == NULL) {
		a->ret = -rte_errno;
		return 0;
	}
	a->ret = rb2_tx_connect(tx, "rv", 5000);
	while (a->ret == 0 && a->sent < 100000) {
		rb2_test_fill(b, sizeof(b), a->sent);
		int r = rb2_tx_send(tx, b, sizeof(b));
		if (r == 0)
			a->sent++;
		else if (r != -ENOBUFS)
			a->ret = r;
	}
	if (a->ret == 0)
		a->ret = rb2_tx_flush(tx);
	/* Wait for the receiver to take everything before tearing down. */
	while (a->ret == 0 && atomic_load_explicit(tx->local_head, memory_order_acquire) != tx->tail)
		;
	rb2_tx_destroy(tx);
	return 0;
}

static void
rendezvous_channel(const char *spec)
{
	struct peer_arg a = {.xp = rb2_xport_open_spec(spec)};
	unsigned int worker = rte_get_next_lcore(rte_lcore_id(), 1, 0);
	struct rb2_rx *rx;
	uint8_t b[128];
	uint64_t got = 0;
	int n;

	cr_assert_not_null(a.xp);
	rb2_chan_params_init(&a.p);
	cr_assert_eq(rte_eal_remote_launch(remote_sender, &a, worker), 0);
	rx = rb2_rx_create("rv", a.xp, &a.p);
	cr_assert_not_null(rx);
	cr_assert_eq(rb2_rx_connect(rx, "rv", 5000), 0);
	while (got < 100000) {
		n = rb2_rx_recv(rx, b, sizeof(b));
		if (n == -EAGAIN)
			continue;
		cr_assert_eq(n, 100);
		cr_assert(rb2_test_check(b, 100, got));
		got++;
	}
	/* Hand everything back so the sender sees local_head == tail. */
	while (rb2_rx_recv(rx, b, sizeof(b)) == -EAGAIN && rte_eal_get_lcore_state(worker) == RUNNING)
		;
	rte_eal_wait_lcore(worker);
	cr_expect_eq(a.ret, 0, "sender: %d", a.ret);
	rb2_rx_destroy(rx);
	rb2_xport_close(a.xp);
}

Test(rb2_xport, shm_lcores_rendezvous_by_name_loadstore)
{
	rendezvous_channel("shm,mode=loadstore");
}

Test(rb2_xport, shm_lcores_rendezvous_by_name_copy)
{
	rendezvous_channel("shm,mode=copy");
}

Test(rb2_xport, mismatched_peer_is_refused)
{
	struct peer_arg a = {.xp = rb2_xport_open("shm", NULL)};
	unsigned int worker = rte_get_next_lcore(rte_lcore_id(), 1, 0);
	struct rb2_chan_params p;
	struct rb2_rx *rx;

	rb2_chan_params_init(&a.p);
	a.p.slots = 512; /* the receiver below has 1024 */
	cr_assert_eq(rte_eal_remote_launch(remote_sender, &a, worker), 0);
	rb2_chan_params_init(&p);
	rx = rb2_rx_create("rv", a.xp, &p);
	cr_assert_not_null(rx);
	cr_expect_eq(rb2_rx_connect(rx, "rv", 5000), -ECONNREFUSED);
	rte_eal_wait_lcore(worker);
	cr_expect_eq(a.ret, -ECONNREFUSED);
	rb2_rx_destroy(rx);
	rb2_xport_close(a.xp);
}
