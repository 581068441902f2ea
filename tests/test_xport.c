/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* Transport layer: driver registry, the -ENOTSUP defaults, argument checks,
 * WR chains and completions, the shm rendezvous between lcores, and the
 * out-of-band exchange over TCP. */

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_launch.h>
#include <rte_memzone.h>

#include <rb2_lcore.h>
#include <rb2_xport_driver.h>
#include <rb2_xport_oob.h>

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

Test(rb2_xport, registry_lists_shm_and_loop_and_refuses_unknown)
{
	const char *names[16];
	unsigned int n = rb2_xport_drivers(names, 16), found = 0;

	for (unsigned int i = 0; i < n; i++)
		found |= (strcmp(names[i], "shm") == 0) | (strcmp(names[i], "loop") == 0) << 1;
	cr_expect_eq(found, 3, "shm and loop are registered");
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

/*
 * Every registered driver that can pair two queues of this process runs the
 * same checks; a driver that cannot (no device here, as verbs without RDMA,
 * or a driver without memory) is named and passed over. @fn returns 0 after
 * checking with cr_expect, and is given an open transport.
 */
static unsigned int
for_each_local_driver(void (*fn)(const char *spec, struct rb2_xport *xp))
{
	const char *names[16];
	unsigned int n = rb2_xport_drivers(names, 16), ran = 0;

	for (unsigned int i = 0; i < n; i++) {
		/* shm's copy mode: every byte through the WR chain. */
		const char *spec = strcmp(names[i], "shm") == 0 ? "shm,mode=copy" : names[i];
		struct rb2_xport *xp = rb2_xport_open_spec(spec);
		struct rb2_xport_qp_attr attr = {.lcore_id = rte_lcore_id()};
		struct rb2_xport_qp *a = NULL, *b = NULL;
		struct rb2_xport_mr mr;
		int local = 0;

		if (xp != NULL && rb2_xport_mr_alloc(xp, "probe", 64, SOCKET_ID_ANY, &mr) == 0) {
			rb2_xport_mr_free(xp, &mr);
			a = rb2_xport_qp_create(xp, &attr);
			b = rb2_xport_qp_create(xp, &attr);
			local = a != NULL && b != NULL && rb2_xport_qp_connect_local(a, b) == 0;
		}
		rb2_xport_qp_destroy(a);
		rb2_xport_qp_destroy(b);
		if (!local) {
			cr_log_info("driver %s: cannot pair local queues here (%s); not run",
				    names[i], xp == NULL ? "no device" : "not supported");
			rb2_xport_close(xp);
			continue;
		}
		cr_log_info("driver %s", spec);
		fn(spec, xp);
		rb2_xport_close(xp);
		ran++;
	}
	return ran;
}

/* A chain executes in order behind one doorbell; only signaled WRs
 * complete; an unconnected queue refuses to post; a chain the completion
 * queue cannot take, or with an opcode the driver lacks, is refused whole. */
static void
chain_semantics(const char *spec, struct rb2_xport *xp)
{
	struct rb2_xport_qp_attr attr = {.lcore_id = rte_lcore_id(), .cq_depth = 4};
	struct rb2_xport_qp *a = rb2_xport_qp_create(xp, &attr);
	struct rb2_xport_qp *b = rb2_xport_qp_create(xp, &attr);
	struct rb2_xport_mr src, dst;
	struct rb2_xport_wc wc[8];
	struct rb2_xport_wr wr[3];
	uint64_t v = 42;

	cr_assert(a && b, "%s", spec);
	cr_assert_eq(rb2_xport_mr_alloc(xp, "src", 4096, SOCKET_ID_ANY, &src), 0);
	cr_assert_eq(rb2_xport_mr_alloc(xp, "dst", 4096, SOCKET_ID_ANY, &dst), 0);
	memset(src.addr, 0xab, 4096);
	wr[0] = (struct rb2_xport_wr){.wr_id = 1, .local = src.addr,
		.remote = (uintptr_t)dst.addr + 64, .len = 1000, .opcode = RB2_WR_WRITE,
		.lkey = src.lkey, .rkey = dst.rkey};
	wr[1] = (struct rb2_xport_wr){.wr_id = 2, .local = &v,
		.remote = (uintptr_t)dst.addr, .len = 8, .opcode = RB2_WR_WRITE,
		.flags = RB2_WR_SIGNALED | RB2_WR_INLINE, .rkey = dst.rkey};
	cr_expect_eq(rb2_xport_post(a, wr, 2), -ENOTCONN, "%s", spec);
	cr_assert_eq(rb2_xport_qp_connect_local(a, b), 0);
	cr_expect_eq(rb2_xport_qp_connect_local(a, b), -EISCONN);
	cr_assert_eq(rb2_xport_post(a, wr, 2), 0);
	cr_expect_eq(*(uint64_t *)dst.addr, 42, "%s", spec);
	cr_expect_eq(((uint8_t *)dst.addr)[64 + 999], 0xab);
	cr_expect_eq(((uint8_t *)dst.addr)[64 + 1000], 0);
	cr_assert_eq(rb2_xport_poll(a, wc, 8), 1, "%s: only the signaled WR completes", spec);
	cr_expect_eq(wc[0].wr_id, 2);
	cr_expect_eq(wc[0].status, RB2_WC_SUCCESS);
	cr_expect_eq(rb2_xport_poll(a, wc, 8), 0);
	/* A full completion ring refuses the whole chain. */
	for (int i = 0; i < 4; i++)
		cr_assert_eq(rb2_xport_post(a, &wr[1], 1), 0);
	v = 7;
	cr_expect_eq(rb2_xport_post(a, wr, 2), -ENOSPC, "%s", spec);
	cr_expect_eq(*(uint64_t *)dst.addr, 42, "%s: nothing of a refused chain ran", spec);
	cr_expect_eq(rb2_xport_poll(a, wc, 8), 4);
	/* An opcode the transport lacks refuses the chain before any of it. */
	if (!(rb2_xport_caps(xp) & RB2_XPORT_CAP_IMM)) {
		wr[2] = (struct rb2_xport_wr){.local = &v, .remote = (uintptr_t)dst.addr,
			.len = 8, .opcode = RB2_WR_WRITE_IMM};
		v = 9;
		cr_expect_eq(rb2_xport_post(a, &wr[1], 2), -ENOTSUP, "%s", spec);
		cr_expect_eq(*(uint64_t *)dst.addr, 42, "%s: the WRITE before it did not run", spec);
	}
	/* READ. */
	if (rb2_xport_caps(xp) & RB2_XPORT_CAP_READ) {
		wr[2] = (struct rb2_xport_wr){.local = &v, .remote = (uintptr_t)dst.addr,
			.len = 8, .opcode = RB2_WR_READ, .rkey = dst.rkey};
		cr_assert_eq(rb2_xport_post(a, &wr[2], 1), 0);
		cr_expect_eq(v, 42, "%s", spec);
	}
	rb2_xport_qp_destroy(a);
	rb2_xport_qp_destroy(b);
	rb2_xport_mr_free(xp, &src);
	rb2_xport_mr_free(xp, &dst);
}

Test(rb2_xport, every_driver_executes_chains_in_order_and_signals_selectively)
{
	cr_expect_geq(for_each_local_driver(chain_semantics), 2, "at least shm and loop ran");
}

/* A channel over each driver, its halves on two lcores: 200 000 messages of
 * every size up to 300 B, exactly once and in order, under each design. */
struct lcore_sender {
	struct rb2_tx *tx;
	uint64_t n;
	int ret;
};

static int
lcore_send(void *arg)
{
	struct lcore_sender *s = arg;
	uint8_t b[300];

	for (uint64_t seq = 0; seq < s->n && s->ret == 0;) {
		uint32_t len = 1 + (uint32_t)(seq * 7919 % 300);
		int r;

		rb2_test_fill(b, len, seq);
		r = rb2_tx_send(s->tx, b, len);
		if (r == 0)
			seq++;
		else if (r == -ENOBUFS)
			rb2_tx_flush(s->tx);
		else
			s->ret = r;
	}
	if (s->ret == 0)
		s->ret = rb2_tx_flush(s->tx);
	return 0;
}

static void
channel_two_lcores(const char *spec, struct rb2_xport *xp)
{
	static const char *const presets[] = {"rb2", "l5", "farm", "socksdirect"};
	unsigned int worker = rte_get_next_lcore(rte_lcore_id(), 1, 0);

	for (unsigned int i = 0; i < RTE_DIM(presets); i++) {
		struct lcore_sender s = {.n = 200000};
		struct rb2_chan_params p;
		struct rb2_msg m[32];
		struct rb2_rx *rx;
		uint64_t got = 0;

		rb2_chan_params_init(&p);
		cr_assert_eq(rb2_chan_params_preset(&p, presets[i]), 0);
		p.lcore_id = worker;
		s.tx = rb2_tx_create("lc", xp, &p);
		p.lcore_id = rte_lcore_id();
		rx = rb2_rx_create("lc", xp, &p);
		cr_assert(s.tx != NULL && rx != NULL, "%s %s", spec, presets[i]);
		cr_assert_eq(rb2_chan_pair(s.tx, rx), 0);
		cr_assert_eq(rb2_lcore_launch(lcore_send, &s, worker), 0);
		while (got < s.n) {
			int n = rb2_rx_peek_burst(rx, m, 32);

			cr_assert_geq(n, 0, "%s %s: %d", spec, presets[i], n);
			for (int k = 0; k < n; k++, got++) {
				uint32_t len = 1 + (uint32_t)(got * 7919 % 300);

				cr_assert_eq(m[k].len, len, "%s %s: message %" PRIu64, spec,
					     presets[i], got);
				cr_assert(rb2_test_check(m[k].data, len, got), "%s %s: message %"
					  PRIu64 " corrupt", spec, presets[i], got);
			}
			rb2_rx_release_burst(rx, m, (unsigned int)n);
		}
		rb2_lcore_wait(worker);
		cr_expect_eq(s.ret, 0, "%s %s: sender %d", spec, presets[i], s.ret);
		cr_expect_eq(rb2_rx_peek_burst(rx, m, 32), 0, "nothing more");
		rb2_tx_destroy(s.tx);
		rb2_rx_destroy(rx);
	}
}

Test(rb2_xport, every_driver_carries_a_channel_between_two_lcores)
{
	cr_expect_geq(for_each_local_driver(channel_two_lcores), 2, "at least shm and loop ran");
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
	cr_expect_null(rte_memzone_lookup("rb2rv.lonely"), "a timed-out side withdraws");
	rb2_xport_qp_destroy(q);
	rb2_xport_close(xp);
}

/* One side of a named shm rendezvous, @delay_ms late; its blob names its
 * role. */
struct xchg_arg {
	struct rb2_xport *xp;
	const char *name;
	enum rb2_xport_role role;
	unsigned int delay_ms;
	int ret;
	char got[16];
};

static int
xchg_worker(void *arg)
{
	struct xchg_arg *a = arg;
	struct rb2_xport_qp_attr attr = {.lcore_id = rte_lcore_id()};
	struct rb2_xport_qp *q = rb2_xport_qp_create(a->xp, &attr);
	char blob[16];

	snprintf(blob, sizeof(blob), "%s", a->role == RB2_XPORT_ACTIVE ? "active" : "passive");
	if (q == NULL) {
		a->ret = -ENOMEM;
		return 0;
	}
	rte_delay_us_sleep(a->delay_ms * 1000);
	a->ret = rb2_xport_qp_exchange(q, a->name, a->role, blob, sizeof(blob), a->got,
				       sizeof(a->got), 5000);
	rb2_xport_qp_destroy(q);
	return 0;
}

/* Whichever side comes first makes the zone (the active one napped until
 * the passive had made it); a second side of one role is refused. */
Test(rb2_xport, shm_rendezvous_either_side_first_one_side_a_role)
{
	struct rb2_xport *xp = rb2_xport_open("shm", NULL);
	unsigned int worker = rte_get_next_lcore(rte_lcore_id(), 1, 0);
	struct xchg_arg m = {.xp = xp};

	for (int i = 0; i < 4; i++) {
		/* The worker first, as either role; then the main lcore first. */
		struct xchg_arg a = {.xp = xp, .name = "first", .role = i % 2 ? RB2_XPORT_PASSIVE :
				     RB2_XPORT_ACTIVE, .delay_ms = i < 2 ? 0 : 50};

		m.name = "first";
		m.role = !a.role;
		m.delay_ms = i < 2 ? 50 : 0;
		cr_assert_eq(rb2_lcore_launch(xchg_worker, &a, worker), 0);
		xchg_worker(&m);
		rb2_lcore_wait(worker);
		cr_expect_eq(a.ret, 16, "worker (%s, %s): %d",
			     a.role == RB2_XPORT_ACTIVE ? "active" : "passive",
			     i < 2 ? "first" : "second", a.ret);
		cr_expect_eq(m.ret, 16, "main lcore: %d", m.ret);
		cr_expect_str_eq(a.got, a.role == RB2_XPORT_ACTIVE ? "passive" : "active");
		cr_expect_str_eq(m.got, m.role == RB2_XPORT_ACTIVE ? "passive" : "active");
		cr_expect_null(rte_memzone_lookup("rb2rv.first"), "the zone goes after both");
	}
	for (int r = 0; r < 2; r++) {
		struct xchg_arg a = {.xp = xp, .name = "twice", .role = r};

		cr_assert_eq(rb2_lcore_launch(xchg_worker, &a, worker), 0);
		m = (struct xchg_arg){.xp = xp, .name = "twice", .role = r, .delay_ms = 50};
		xchg_worker(&m);
		cr_expect_eq(m.ret, -EADDRINUSE, "a second %s side: %d",
			     r == RB2_XPORT_ACTIVE ? "active" : "passive", m.ret);
		m = (struct xchg_arg){.xp = xp, .name = "twice", .role = !r};
		xchg_worker(&m);
		cr_expect_eq(m.ret, 16);
		rb2_lcore_wait(worker);
		cr_expect_eq(a.ret, 16);
	}
	rb2_xport_close(xp);
}

/* Several queues in one exchange go over a stream socket only: its bytes
 * keep their order, where a named rendezvous taken back to back would not
 * (shm's frees its zone after both sides left). The exchange itself needs
 * verbs: the guests' suite runs it (test_stream remote-verbs, rb2-run). */
Test(rb2_xport, exchange_n_checks_its_arguments)
{
	struct rb2_xport *xp = rb2_xport_open("shm", NULL);
	struct rb2_xport_qp_attr attr = {.lcore_id = rte_lcore_id()};
	struct rb2_xport_qp *q = rb2_xport_qp_create(xp, &attr);
	char big[RB2_XPORT_BLOB_MAX + 1] = "", peer[8];
	struct rb2_xport_exch x = {.qp = q, .blob = big, .len = sizeof(big),
				   .peer_blob = peer, .peer_cap = sizeof(peer)};

	cr_assert_not_null(q);
	cr_expect_eq(rb2_xport_qp_exchange_n(&x, 1, "fd:0", 50), -EMSGSIZE);
	x.len = 8;
	cr_expect_eq(rb2_xport_qp_exchange_n(&x, 0, "fd:0", 50), -EINVAL);
	cr_expect_eq(rb2_xport_qp_exchange_n(&x, 1, "", 50), -EINVAL);
	cr_expect_eq(rb2_xport_qp_exchange_n(&x, 1, "by-name", 50), -EINVAL,
		     "a named rendezvous is refused");
	x.qp = NULL;
	cr_expect_eq(rb2_xport_qp_exchange_n(&x, 1, "fd:0", 50), -EINVAL);
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
	struct rb2_chan_params p = a->p; /* the receiver reads a->p meanwhile */
	struct rb2_tx *tx;
	uint8_t b[100];

	p.lcore_id = rte_lcore_id();
	tx = rb2_tx_create("rv", a->xp, &p);
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
	while (a->ret == 0 && (a->ret = rb2_tx_drained(tx)) == 0)
		;
	if (a->ret == 1)
		a->ret = 0;
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
	cr_assert_eq(rb2_lcore_launch(remote_sender, &a, worker), 0);
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
	rb2_lcore_wait(worker);
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
	cr_assert_eq(rb2_lcore_launch(remote_sender, &a, worker), 0);
	rb2_chan_params_init(&p);
	rx = rb2_rx_create("rv", a.xp, &p);
	cr_assert_not_null(rx);
	cr_expect_eq(rb2_rx_connect(rx, "rv", 5000), -ECONNREFUSED);
	rb2_lcore_wait(worker);
	cr_expect_eq(a.ret, -ECONNREFUSED);
	rb2_rx_destroy(rx);
	rb2_xport_close(a.xp);
}

/*
 * The CPU drivers' WRITE and READ move exactly the range, as DMA does: every
 * alignment of source and destination, every length up to a few words, the
 * right bytes, and nothing outside [dst, dst+len). (That each byte is stored
 * once and in order is what the loops are written for; the soak and the TSan
 * build catch the effects.)
 */
Test(rb2_xport, dma_write_and_read_move_exactly_the_range_at_every_alignment)
{
	uint8_t src[64], dst[96], want[96];

	for (unsigned int i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 7 + 1);
	for (int read = 0; read <= 1; read++)
		for (unsigned int so = 0; so < 8; so++)
			for (unsigned int dof = 0; dof < 8; dof++)
				for (uint32_t len = 0; len <= 40; len++) {
					memset(dst, 0xa5, sizeof(dst));
					memset(want, 0xa5, sizeof(want));
					memcpy(want + 16 + dof, src + so, len);
					if (read)
						rb2_xport_dma_read(dst + 16 + dof, src + so, len);
					else
						rb2_xport_dma_write(dst + 16 + dof, src + so, len);
					cr_assert_arr_eq(dst, want, sizeof(dst), "%s src+%u dst+%u len %u",
							 read ? "read" : "write", so, dof, len);
				}
}

/* ---- out-of-band exchange (rb2_xport_oob.h) ------------------------------ */

/* A TCP port nobody listens on now (the kernel's pick, then let go). */
static unsigned int
free_port(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	close(fd);
	return ntohs(sa.sin_port);
}

struct oob_side {
	char where[32];
	enum rb2_xport_role role;
	char blob[160], got[200];
	size_t len, cap;
	int ret;
};

static void *
oob_run(void *arg)
{
	struct oob_side *s = arg;

	s->ret = rb2_xport_tcp_exchange(s->where, s->role, s->blob, s->len, s->got, s->cap, 5000);
	return NULL;
}

Test(rb2_xport, tcp_exchange_swaps_blobs_and_bounds_its_waits)
{
	unsigned int port = free_port();
	struct oob_side a = {.role = RB2_XPORT_PASSIVE, .cap = 200},
			b = {.role = RB2_XPORT_ACTIVE, .cap = 200};
	pthread_t ta, tb;
	uint64_t t0;

	/* Both ways, whoever comes first (the active side retries while it
	 * is refused). */
	snprintf(a.where, sizeof(a.where), "127.0.0.1:%u", port);
	snprintf(b.where, sizeof(b.where), "127.0.0.1:%u", port);
	a.len = 150;
	memset(a.blob, 'a', sizeof(a.blob));
	b.len = 7;
	memcpy(b.blob, "bbbbbbb", 7);
	cr_assert_eq(pthread_create(&tb, NULL, oob_run, &b), 0);
	usleep(200 * 1000);
	cr_assert_eq(pthread_create(&ta, NULL, oob_run, &a), 0);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	cr_assert_eq(a.ret, 7, "passive: %d", a.ret);
	cr_assert_eq(b.ret, 150, "active: %d", b.ret);
	cr_assert_eq(memcmp(a.got, "bbbbbbb", 7), 0);
	cr_assert_eq(memcmp(b.got, a.blob, 150), 0);

	/* A blob longer than the caller's room. */
	a.cap = 4;
	a.ret = b.ret = 0;
	cr_assert_eq(pthread_create(&ta, NULL, oob_run, &a), 0);
	cr_assert_eq(pthread_create(&tb, NULL, oob_run, &b), 0);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	cr_assert_eq(a.ret, -EMSGSIZE);

	/* Nobody there: the passive side gives up at its timeout, not
	 * before; the active side retries a refused connect every 50 ms and
	 * gives up once less than 100 ms would be left, so after 200-250 ms
	 * of 300 (a bound of exactly 500 ms for the two together failed
	 * once, at 200.x + 300 ms). */
	t0 = rte_get_timer_cycles();
	cr_assert_eq(rb2_xport_tcp_exchange(a.where, RB2_XPORT_PASSIVE, "x", 1, a.got, 8, 300),
		     -ETIMEDOUT);
	cr_assert_geq(rte_get_timer_cycles() - t0, rte_get_timer_hz() * 295 / 1000,
		      "passive: gave up early");
	cr_assert_lt(rte_get_timer_cycles() - t0, 3 * rte_get_timer_hz(), "passive: waited too long");
	t0 = rte_get_timer_cycles();
	cr_assert_eq(rb2_xport_tcp_exchange(a.where, RB2_XPORT_ACTIVE, "x", 1, a.got, 8, 300),
		     -ECONNREFUSED);
	cr_assert_geq(rte_get_timer_cycles() - t0, rte_get_timer_hz() * 195 / 1000,
		      "active: gave up early");
	cr_assert_lt(rte_get_timer_cycles() - t0, 3 * rte_get_timer_hz(), "active: waited too long");
	cr_assert_eq(rb2_xport_tcp_exchange("no-port", RB2_XPORT_ACTIVE, "x", 1, a.got, 8, 300),
		     -EINVAL);
}

/* The transport's own descriptors go to the floor: the next free one at or
 * above it, closing the low one; past the soft limit, only if it may grow
 * the limit, which it then does up to the hard one. Criterion runs each
 * test in its own process: the limits changed here end with it. */
Test(rb2_xport, own_descriptors_go_to_the_floor)
{
	struct rlimit rl;
	int fd, hi;

	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	fd = open("/dev/null", O_RDONLY);
	cr_assert_eq(rb2_xport_fd_raise(fd), fd, "no floor: where it is");
	rb2_xport_fd_floor_set(100, 0);
	hi = rb2_xport_fd_raise(fd);
	cr_assert_geq(hi, 100);
	cr_assert_eq(fcntl(fd, F_GETFD), -1, "the low one is closed");
	cr_assert_neq(fcntl(hi, F_GETFD) & FD_CLOEXEC, 0, "close-on-exec");
	close(hi);
	if (rl.rlim_max == RLIM_INFINITY || rl.rlim_max > rl.rlim_cur + 64) {
		rl.rlim_cur = 128;
		cr_assert_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
		rb2_xport_fd_floor_set(128, 0);
		fd = open("/dev/null", O_RDONLY);
		cr_assert_eq(rb2_xport_fd_raise(fd), fd, "past the soft limit, not to grow it: stays");
		rb2_xport_fd_floor_set(128, 1);
		hi = rb2_xport_fd_raise(fd);
		cr_assert_geq(hi, 128, "the limit grew for it");
		cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
		cr_assert_geq(rl.rlim_cur, 192);
		close(hi);
	}
	rb2_xport_fd_floor_set(0, 0);
}
