/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * libFuzzer target: the connection layer's wire (lib/conn), as a peer that
 * breaks every rule sends it. Two endpoints over a shm channel pair; one
 * connection is opened properly, then the input is put on the ring as raw
 * frames and the receiving endpoint polled, its application reading and
 * accepting, between frames.
 *
 * Input: frames built from the wire header (fuzz_wire.h), flag 0x80
 * naming the open connection, to reach past the descriptor check.
 * The oracle, besides ASan and UBSan: no connection buffers more than its
 * window, the counters add up, and the endpoint still serves its own
 * connection (a send and a receive on it work unless the input reset it).
 */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>

#include <rb2_conn.h>
#include <rb2_lcore.h>

#include "fuzz_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static struct rb2_xport *xp;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	xp = fuzz_eal_shm("fuzz_conn", "fzc");
	return 0;
}

static void
check(struct rb2_conn_ep *ep, const int *cds, unsigned int n)
{
	struct rb2_conn_ep_stats st;
	struct rb2_conn_info info;

	rb2_conn_ep_stats_get(ep, &st);
	if (st.conns_open > 64)
		__builtin_trap();
	for (unsigned int i = 0; i < n; i++)
		if (rb2_conn_info_get(ep, cds[i], &info) == 0 && info.buffered > 4096)
			__builtin_trap();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rb2_conn_ep_params pp;
	struct rb2_chan_params p;
	struct rb2_tx *tab, *tba;
	struct rb2_rx *rab, *rba;
	struct rb2_conn_ep *a, *b;
	int ca, cb = -1, cds[64];
	unsigned int ncds = 0;
	uint8_t buf[RB2_CONN_HDR_LEN + FUZZ_BODY_MAX];
	int flen;

	rb2_chan_params_init(&p);
	p.slots = 256;
	tab = rb2_tx_create("fab", xp, &p);
	rab = rb2_rx_create("fab", xp, &p);
	tba = rb2_tx_create("fba", xp, &p);
	rba = rb2_rx_create("fba", xp, &p);
	if (!tab || !rab || !tba || !rba || rb2_chan_pair(tab, rab) || rb2_chan_pair(tba, rba))
		__builtin_trap();
	rb2_conn_ep_params_init(&pp);
	pp.max_conns = 64;
	pp.window = 4096;
	pp.backlog = 16;
	a = rb2_conn_ep_create("fa", tab, rba, &pp);
	b = rb2_conn_ep_create("fb", tba, rab, &pp);
	if (a == NULL || b == NULL || rb2_conn_listen(b, 7, 0) != 0)
		__builtin_trap();
	ca = rb2_conn_connect(a, 7);
	for (int i = 0; i < 8 && cb < 0; i++) {
		rb2_conn_ep_poll(a);
		cb = rb2_conn_accept(b, 7);
	}
	rb2_conn_ep_poll(a);
	if (ca < 0 || cb < 0 || rb2_conn_status(a, ca) != 0)
		__builtin_trap();
	cds[ncds++] = cb;

	/* The input, frame by frame, as a's peer would never send it. */
	while ((flen = fuzz_next_frame(&data, &size, (uint32_t)cb, buf)) >= 0) {
		int ready[8], k, c;

		if (flen == 0 || rb2_tx_send(tab, buf, (uint32_t)flen) != 0)
			continue;
		rb2_tx_flush(tab);
		rb2_conn_ep_poll(b);
		while (ncds < 64 && (c = rb2_conn_accept(b, 7)) >= 0)
			cds[ncds++] = c;
		k = rb2_conn_ep_ready(b, ready, 8);
		for (int j = 0; j < k; j++)
			while (rb2_conn_recv(b, ready[j], buf, sizeof(buf)) > 0)
				;
		rb2_conn_ep_poll(a);
		check(b, cds, ncds);
	}
	/* Its own connection still works, unless the input reset it. */
	if (rb2_conn_status(b, cb) == 0 && rb2_conn_status(a, ca) == 0) {
		int ret = rb2_conn_send(b, cb, "ok", 2);

		if (ret == 0) {
			rb2_conn_flush(b);
			for (int i = 0; i < 8 && (ret = rb2_conn_recv(a, ca, buf, sizeof(buf))) == -EAGAIN; i++)
				rb2_conn_ep_poll(b);
			if (ret != 2)
				__builtin_trap();
		}
	}
	rb2_conn_ep_destroy(a);
	rb2_conn_ep_destroy(b);
	return 0;
}
