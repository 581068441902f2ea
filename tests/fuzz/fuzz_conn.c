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
 * Input: frames, each [u8 type][u8 len][u8 len_hi:2, flags:6][u16 aux]
 * [len bytes of body], built from the wire header (rb2_conn_wire.h) so
 * that every frame type is reached. Type 0: the body is the whole frame,
 * raw. Else a header of type (type % (RB2_CONN_FR_MAX + 1)) and aux, for
 * the open connection (flag 0x80, to reach past the descriptor check),
 * RB2_CONN_CID_NONE (0x40) or the body's first 4 bytes, then the body.
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
#include <rb2_conn_wire.h>
#include <rb2_lcore.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static struct rb2_xport *xp;

/* libFuzzer ends with exit(): close the transport, and leave no EAL
 * runtime directory behind. */
static void
fuzz_fini(void)
{
	rb2_xport_close(xp);
	rb2_eal_cleanup();
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char prefix[32];
	char *eal[] = { "fuzz_conn", "-l", "0", "--no-pci", "--no-huge", "-m", "256",
			"--file-prefix", prefix, "--log-level", "*:emerg", NULL };

	(void)argc;
	(void)argv;
	snprintf(prefix, sizeof(prefix), "fzc%d", (int)getpid());
	if (rte_eal_init((int)(sizeof(eal) / sizeof(eal[0])) - 1, eal) < 0)
		__builtin_trap();
	xp = rb2_xport_open("shm", NULL);
	if (xp == NULL)
		__builtin_trap();
	atexit(fuzz_fini);
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
	uint8_t buf[1024 + RB2_CONN_HDR_LEN];

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
	while (size >= 5) {
		uint32_t len = (uint32_t)(data[1] | (data[2] & 0x03) << 8), flen;
		uint8_t sel = data[0], flags = data[2];
		uint16_t aux = (uint16_t)(data[3] | data[4] << 8);
		int ready[8], k, c;

		data += 5;
		size -= 5;
		len = len > size ? (uint32_t)size : len;
		if (sel == 0) {
			memcpy(buf, data, len);
			flen = len;
		} else {
			uint32_t cid = RB2_CONN_CID_NONE;

			if (flags & 0x80)
				cid = (uint32_t)cb;
			else if (!(flags & 0x40) && len >= 4)
				memcpy(&cid, data, 4);
			rb2_conn_wire_put_hdr(buf, cid, (uint8_t)(sel % (RB2_CONN_FR_MAX + 1)), aux);
			memcpy(buf + RB2_CONN_HDR_LEN, data, len);
			flen = RB2_CONN_HDR_LEN + len;
		}
		data += len;
		size -= len;
		if (flen == 0 || rb2_tx_send(tab, buf, flen) != 0)
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
