/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * libFuzzer target: a host service's relay core (lib/conn/rb2_conn_relay.h)
 * as a hostile application drives it. Two applications are linked to one
 * relay over shm channel pairs: a well-behaved one (an endpoint in service
 * mode, listening on port 7) and a raw ring the input writes frames into,
 * built from the wire header (rb2_conn_wire.h). Between frames the relay
 * passes once, the good application polls, accepts and reads, and what the
 * relay sends the hostile one is read off its ring; the relay id of the
 * last connection it accepted there is kept, so that input frames can name
 * it and reach past the relay's id check.
 *
 * Input: frames built from the wire header (fuzz_wire.h), flag 0x80
 * naming the relay id learnt.
 * The oracle, besides ASan and UBSan (and LeakSanitizer at the end): the
 * relay's counts stay within its limits, and it tears down cleanly.
 */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>

#include <rb2_conn.h>
#include <rb2_conn_relay.h>
#include <rb2_lcore.h>

#include "fuzz_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static struct rb2_xport *xp;
static FILE *devnull;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	xp = fuzz_eal_shm("fuzz_relay", "fzr");
	devnull = fopen("/dev/null", "w");
	if (devnull == NULL)
		__builtin_trap();
	return 0;
}

/* A channel pair between an application (@p app_tx, @p app_rx) and the
 * relay's endpoint for it. */
static struct rb2_conn_ep *
link_make(const char *name, struct rb2_tx **app_tx, struct rb2_rx **app_rx)
{
	struct rb2_conn_ep_params pp;
	struct rb2_chan_params p;
	char up[32], down[32];
	struct rb2_tx *tx;
	struct rb2_rx *rx;

	rb2_chan_params_init(&p);
	p.slots = 256;
	snprintf(up, sizeof(up), "%s.u", name);
	snprintf(down, sizeof(down), "%s.d", name);
	*app_tx = rb2_tx_create(up, xp, &p);
	rx = rb2_rx_create(up, xp, &p);
	tx = rb2_tx_create(down, xp, &p);
	*app_rx = rb2_rx_create(down, xp, &p);
	if (!*app_tx || !rx || !tx || !*app_rx || rb2_chan_pair(*app_tx, rx) ||
	    rb2_chan_pair(tx, *app_rx))
		__builtin_trap();
	rb2_conn_ep_params_init(&pp);
	pp.max_conns = 1;
	pp.backlog = 1;
	pp.window = 4096;
	return rb2_conn_ep_create(name, tx, rx, &pp);
}

/* Read what the relay sent the hostile application; keep the relay id of
 * a connection it was handed (a SYN from the relay: the id is its hello's). */
static void
hostile_drain(struct rb2_rx *rx, uint32_t *learnt)
{
	struct rb2_msg m[16];
	int n;

	while ((n = rb2_rx_peek_burst(rx, m, 16)) > 0) {
		for (int i = 0; i < n; i++) {
			struct rb2_conn_frame fr;
			struct rb2_conn_hello h;

			rb2_conn_wire_parse(m[i].data, rb2_msg_len(&m[i]), 0, RB2_CONN_CID_NONE,
					    &fr);
			if ((fr.type == RB2_CONN_FR_SYNACK || fr.type == RB2_CONN_FR_SYN) &&
			    rb2_conn_wire_hello(fr.body, fr.blen, &h) == NULL)
				*learnt = h.src_cd;
		}
		rb2_rx_release_burst(rx, m, (unsigned int)n);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rb2_conn_relay_params rp;
	struct rb2_conn_relay_stats st;
	struct rb2_conn_ep_params gp;
	struct rb2_tx *htx, *gtx;
	struct rb2_rx *hrx, *grx;
	struct rb2_conn_ep *good, *hl, *gl;
	struct rb2_conn_relay *R;
	uint32_t learnt = RB2_CONN_CID_NONE;
	uint8_t buf[RB2_CONN_HDR_LEN + FUZZ_BODY_MAX];
	int flen;

	rb2_conn_relay_params_init(&rp);
	rp.name = "fuzz_relay";
	rp.out = rp.err = devnull;
	rp.max_relays = 16;
	rp.max_loans = 16;
	rp.queue_bytes = 256 * 1024;
	R = rb2_conn_relay_create(&rp);
	hl = link_make("fh", &htx, &hrx);
	gl = link_make("fg", &gtx, &grx);
	rb2_conn_ep_params_init(&gp);
	gp.max_conns = 16;
	gp.window = 4096;
	gp.service = 1;
	good = rb2_conn_ep_create("good", gtx, grx, &gp);
	if (R == NULL || hl == NULL || gl == NULL || good == NULL ||
	    rb2_conn_relay_add(R, hl, "hostile", 1, 0) != 0 ||
	    rb2_conn_relay_add(R, gl, "good", 2, 0) != 0 || rb2_conn_listen(good, 7, 0) != 0)
		__builtin_trap();
	rb2_conn_relay_poll(R);

	while ((flen = fuzz_next_frame(&data, &size, learnt, buf)) >= 0) {
		int ready[8], k, c;

		if (flen == 0 || rb2_tx_send(htx, buf, (uint32_t)flen) != 0)
			continue;
		rb2_tx_flush(htx);
		rb2_conn_relay_poll(R);
		rb2_conn_ep_poll(good);
		while ((c = rb2_conn_accept(good, 7)) >= 0)
			;
		k = rb2_conn_ep_ready(good, ready, 8);
		for (int j = 0; j < k; j++)
			while (rb2_conn_recv(good, ready[j], buf, sizeof(buf)) > 0)
				;
		rb2_conn_relay_poll(R);
		hostile_drain(hrx, &learnt);
		rb2_conn_relay_stats_get(R, &st);
		if (st.relays_in_use > st.max_relays || st.loans_in_use > st.max_loans ||
		    st.links > 2)
			__builtin_trap();
	}
	rb2_conn_ep_destroy(good);
	rb2_conn_relay_destroy(R);
	rb2_tx_destroy(htx);
	rb2_rx_destroy(hrx);
	return 0;
}
