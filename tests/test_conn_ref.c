/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Large messages lent on connections (rb2_conn_ref.h), on the loop
 * transport, whose registrations and READs are real enough for the logic:
 * exactly once and in order among copied messages on many connections,
 * every lent buffer given back once with the right status (READ, or
 * discarded by a close), the caches' hits, forgetting,
 * malformed frames, and shm's copying fallback.
 */

#include <inttypes.h>
#include <stdlib.h>

#include <rb2_conn.h>
#include <rb2_conn_ref.h>
#include <rb2_mr_cache.h>

#include "rb2_test.h"
#include "rb2_conn_test.h"

static struct rb2_xport *xp;
static struct rb2_conn_ep *a, *b;   /* a lends, b READs */
static struct rb2_tx *raw_ab;        /* a's sender half, for forged frames */

static void
setup(void)
{
	rb2_test_eal_init();
}

static void
teardown(void)
{
	rb2_conn_ep_destroy(a);
	rb2_conn_ep_destroy(b);
	a = b = NULL;
	rb2_xport_close(xp);
	xp = NULL;
	rb2_test_eal_fini();
}

TestSuite(rb2_conn_ref, .init = setup, .fini = teardown, .timeout = 120);

#define REF_MIN (16u << 10)

/* Two endpoints over @p spec, channels of 1024 slots of 256 B, a's
 * messages from REF_MIN up lent. */
static void
open_eps(const char *spec)
{
	struct rb2_conn_ref_params rp;
	struct rb2_chan_params p;

	xp = rb2_xport_open_spec(spec);
	cr_assert_not_null(xp, "open %s: %s", spec, rte_strerror(rte_errno));
	rb2_chan_params_init(&p);
	p.slots = 1024;
	p.slot_size = 256;
	rb2_test_conn_eps(xp, &p, NULL, NULL, &a, &b, &raw_ab);
	rb2_conn_ref_params_init(&rp);
	rp.ref_min = REF_MIN;
	rp.max_refs = 16;
	cr_assert_eq(rb2_conn_ref_setup(a, &rp), 0);
	cr_assert_eq(rb2_conn_ref_setup(a, &rp), -EBUSY);
}

static void
connect_n(unsigned int n, int *ca, int *cb)
{
	rb2_test_conn_connect_n(a, b, n, ca, cb);
}

/* Receive the next message of @p cd on b into @p dst, however long its
 * READ takes. */
static int
recv_one(int cd, void *dst, uint32_t cap)
{
	int ret = -EAGAIN;

	for (int spins = 0; spins < 1000000; spins++) {
		ret = rb2_conn_recv(b, cd, dst, cap);
		if (ret != -EAGAIN && ret != -EINPROGRESS)
			return ret;
		rb2_conn_ep_poll(a);
	}
	return ret;
}

/* Reap a's lent buffers until @p want came back (or a bound of polls);
 * each must carry @p status. @return how many came. */
static unsigned int
reap(unsigned int want, int status, uint8_t *back)
{
	struct rb2_conn_ref_done d[16];
	unsigned int got = 0;

	for (int spins = 0; spins < 100000 && got < want; spins++) {
		int n = rb2_conn_ref_done(a, d, RTE_DIM(d));

		cr_assert_geq(n, 0);
		for (int i = 0; i < n; i++) {
			cr_assert_eq(d[i].status, status, "buffer %" PRIu64 ": status %d, expected %d",
				     d[i].cookie, d[i].status, status);
			if (back != NULL) {
				cr_assert_eq(back[d[i].cookie], 0, "buffer %" PRIu64 " came back twice",
					     d[i].cookie);
				back[d[i].cookie] = 1;
			}
		}
		got += (unsigned int)n;
		rb2_conn_ep_poll(b);
	}
	return got;
}

#define NCONN 24
#define PER_CONN 12

/* Copied and lent messages interleaved on many connections: each arrives
 * once, in order, intact; every lent buffer comes back once, READ. */
Test(rb2_conn_ref, lent_and_copied_exactly_once_in_order)
{
	static uint8_t *src[NCONN * PER_CONN];
	static uint32_t len[NCONN * PER_CONN];
	static uint8_t back[NCONN * PER_CONN];
	uint32_t cap = 1u << 20;
	uint8_t *dst = malloc(cap + 1);
	int ca[NCONN], cb[NCONN];
	unsigned int sent[NCONN] = {0}, got[NCONN] = {0}, lent = 0, copied = 0, reaped = 0;
	struct rb2_conn_ep_stats sa, sb;
	uint64_t rng = 42, lent_bytes = 0;

	cr_assert_not_null(dst);
	open_eps("loop");
	connect_n(NCONN, ca, cb);
	for (unsigned int i = 0; i < NCONN * PER_CONN; i++) {
		/* A third lent (REF_MIN to 1 MiB), the rest copied. */
		len[i] = rb2_test_rand(&rng) % 3 == 0 ?
			REF_MIN + (uint32_t)(rb2_test_rand(&rng) % (cap - REF_MIN)) :
			1 + (uint32_t)(rb2_test_rand(&rng) % (REF_MIN - 1));
		src[i] = malloc(len[i]);
		cr_assert_not_null(src[i]);
		rb2_test_fill(src[i], len[i], i);
	}
	/* Sends round-robin over the connections, receives in a different
	 * order, until everything has arrived. */
	for (unsigned int pass = 0; pass < 100000; pass++) {
		unsigned int done = 0;

		for (unsigned int k = 0; k < NCONN; k++) {
			unsigned int c = (k * 7 + pass) % NCONN, m;

			if (sent[c] < PER_CONN) {
				m = c * PER_CONN + sent[c];
				int ret = rb2_conn_send_ref(a, ca[c], src[m], len[m], m);

				if (ret >= 0) {
					cr_assert_eq(ret, len[m] >= REF_MIN, "message of %u: %d",
						     len[m], ret);
					lent += ret;
					copied += !ret;
					lent_bytes += ret ? len[m] : 0;
					sent[c]++;
				} else {
					cr_assert(ret == -EAGAIN || ret == -ENOBUFS, "send: %d", ret);
				}
			}
			if (got[c] < sent[c] && (pass + c) % 3 != 0) {
				m = c * PER_CONN + got[c];
				int nl;

				for (int t = 0; (nl = rb2_conn_next_len(b, cb[c])) == -EAGAIN &&
				     t < 1000; t++)
					rb2_conn_ep_poll(a);
				cr_assert_eq(nl, (int)len[m], "next length %d, expected %u", nl, len[m]);
				dst[len[m]] = 0xee;
				int ret = recv_one(cb[c], dst, cap);

				cr_assert_eq(ret, (int)len[m], "conn %u message %u: %d", c, got[c], ret);
				cr_assert(rb2_test_check(dst, len[m], m), "conn %u message %u corrupt",
					  c, got[c]);
				cr_assert_eq(dst[len[m]], 0xee, "wrote past the message");
				got[c]++;
			}
			done += got[c] == PER_CONN;
		}
		{
			struct rb2_conn_ref_done d[16];
			int n = rb2_conn_ref_done(a, d, RTE_DIM(d));

			for (int i = 0; i < n; i++) {
				cr_assert_eq(d[i].status, 0);
				cr_assert_eq(back[d[i].cookie], 0);
				back[d[i].cookie] = 1;
				cr_assert_eq(rb2_conn_ref_forget(a, src[d[i].cookie], len[d[i].cookie]), 0);
			}
			reaped += (unsigned int)(n > 0 ? n : 0);
		}
		rb2_conn_ep_poll(a);
		rb2_conn_ep_poll(b);
		if (done == NCONN)
			break;
	}
	for (unsigned int c = 0; c < NCONN; c++)
		cr_assert_eq(got[c], PER_CONN, "conn %u: %u of %u", c, got[c], PER_CONN);
	reaped += reap(lent - reaped, 0, back);
	cr_assert_eq(reaped, lent, "%u of %u lent buffers came back", reaped, lent);
	cr_assert_gt(lent, 0);
	cr_assert_gt(copied, 0);
	rb2_conn_ep_stats_get(a, &sa);
	rb2_conn_ep_stats_get(b, &sb);
	cr_assert_eq(sa.ref_tx_msgs, lent);
	cr_assert_eq(sb.ref_rx_msgs, lent);
	cr_assert_eq(sa.ref_tx_bytes, lent_bytes);
	cr_assert_eq(sb.ref_rx_bytes, lent_bytes);
	cr_assert_geq(sb.ref_reads, lent);
	cr_assert_eq(sb.rx_msgs, (uint64_t)NCONN * PER_CONN);
	cr_assert_eq(sa.tx_bytes, sb.rx_bytes, "sent %" PRIu64 " bytes, received %" PRIu64,
		     sa.tx_bytes, sb.rx_bytes);
	cr_assert_eq(sa.ref_discarded + sb.ref_discarded, 0);
	for (unsigned int i = 0; i < NCONN * PER_CONN; i++)
		free(src[i]);
	free(dst);
}

/* A buffer sent again is registered once on each side (MRRC's point). */
Test(rb2_conn_ref, repeated_buffers_hit_both_caches)
{
	uint32_t len = 256 << 10;
	uint8_t *src = malloc(len), *dst = malloc(len);
	struct rb2_mr_cache_stats cs;
	int ca, cb;

	open_eps("loop");
	connect_n(1, &ca, &cb);
	for (int i = 0; i < 20; i++) {
		rb2_test_fill(src, len, (uint64_t)i);
		cr_assert_eq(rb2_conn_send_ref(a, ca, src, len, (uint64_t)i), 1);
		cr_assert_eq(recv_one(cb, dst, len), (int)len);
		cr_assert(rb2_test_check(dst, len, (uint64_t)i));
		cr_assert_eq(reap(1, 0, NULL), 1);
	}
	rb2_mr_cache_stats_get(rb2_conn_ref_tx_cache(a), &cs);
	cr_assert_eq(cs.gets, 20);
	cr_assert_eq(cs.hits, 19, "sender hits %" PRIu64, cs.hits);
	rb2_mr_cache_stats_get(rb2_conn_ref_rx_cache(b), &cs);
	cr_assert_eq(cs.hits, 19, "receiver hits %" PRIu64, cs.hits);
	free(src);
	free(dst);
}

/* Lent and never read: closing the connection gives every buffer back as
 * discarded, and the counts say so on both sides. A lent buffer cannot be
 * forgotten until it is back. */
Test(rb2_conn_ref, closed_unread_gives_buffers_back_discarded)
{
	uint32_t len = 64 << 10;
	uint8_t *src = malloc(3 * len), *small = malloc(100);
	struct rb2_conn_ep_stats sa, sb;
	int ca, cb;

	open_eps("loop");
	connect_n(1, &ca, &cb);
	for (uint64_t i = 0; i < 3; i++)
		cr_assert_eq(rb2_conn_send_ref(a, ca, src + i * len, len, i), 1);
	cr_assert_eq(rb2_conn_send_ref(a, ca, small, 100, 3), 0);
	cr_assert_eq(rb2_conn_send_ref(a, ca, small, 0, 4), -EINVAL);
	cr_assert_eq(rb2_conn_ref_forget(a, src + len, 1), -EBUSY, "a lent buffer was forgotten");
	for (int i = 0; i < 100; i++) {
		rb2_conn_ep_poll(a);
		rb2_conn_ep_poll(b);
	}
	cr_assert_eq(rb2_conn_next_len(b, cb), (int)len);
	cr_assert_eq(rb2_conn_close(b, cb), 0);
	cr_assert_eq(reap(3, -ECONNABORTED, NULL), 3);
	cr_assert_eq(rb2_conn_ref_forget(a, src, 3 * len), 0);
	rb2_conn_ep_stats_get(a, &sa);
	rb2_conn_ep_stats_get(b, &sb);
	cr_assert_eq(sa.ref_discarded, 3);
	cr_assert_eq(sb.ref_discarded, 3);
	cr_assert_eq(sb.discarded_msgs, 4);
	cr_assert_eq(sb.discarded_bytes, 3 * len + 100);
	/* Lent to a connection already closed there: back at once. */
	cr_assert_eq(rb2_conn_send_ref(a, ca, src, len, 9), 1);
	cr_assert_eq(reap(1, -ECONNABORTED, NULL), 1);
	free(src);
	free(small);
}

/* The lending slots bound what is out: the next lend waits (counted), and
 * goes once a buffer is back. */
Test(rb2_conn_ref, lending_slots_bound_the_buffers_out)
{
	uint32_t len = 32 << 10;
	uint8_t *src = malloc(17 * (size_t)len), *dst = malloc(len);
	struct rb2_conn_ep_stats sa;
	int ca, cb;

	open_eps("loop");
	connect_n(1, &ca, &cb);
	for (uint64_t i = 0; i < 16; i++)
		cr_assert_eq(rb2_conn_send_ref(a, ca, src + i * len, len, i), 1);
	cr_assert_eq(rb2_conn_send_ref(a, ca, src + 16 * (size_t)len, len, 16), -EAGAIN);
	rb2_conn_ep_stats_get(a, &sa);
	cr_assert_eq(sa.ref_waits, 1);
	cr_assert_eq(recv_one(cb, dst, len), (int)len);
	cr_assert_eq(reap(1, 0, NULL), 1);
	cr_assert_eq(rb2_conn_send_ref(a, ca, src + 16 * (size_t)len, len, 16), 1);
	for (int i = 0; i < 16; i++)
		cr_assert_eq(recv_one(cb, dst, len), (int)len);
	cr_assert_eq(reap(16, 0, NULL), 16);
	free(src);
	free(dst);
}

/* A buffer too small for a lent message: -EMSGSIZE, and it stays; a READ
 * in flight is not abandoned for another buffer. */
Test(rb2_conn_ref, short_buffer_and_a_read_in_flight)
{
	uint32_t len = 100 << 10;
	uint8_t *src = malloc(len), *dst = malloc(len);
	int ca, cb;

	open_eps("loop");
	connect_n(1, &ca, &cb);
	rb2_test_fill(src, len, 5);
	cr_assert_eq(rb2_conn_send_ref(a, ca, src, len, 0), 1);
	for (int i = 0; i < 100; i++)
		rb2_conn_ep_poll(b);
	cr_assert_eq(rb2_conn_recv(b, cb, dst, len - 1), -EMSGSIZE);
	cr_assert_eq(recv_one(cb, dst, len), (int)len);
	cr_assert(rb2_test_check(dst, len, 5));
	cr_assert_eq(reap(1, 0, NULL), 1);
	free(src);
	free(dst);
}

/* Forged frames: a descriptor that does not add up, and a REFDONE for a
 * buffer never lent, are dropped and counted. */
Test(rb2_conn_ref, malformed_frames_are_counted)
{
	struct rb2_conn_ep_stats sa, sb;
	uint8_t *slot = NULL;
	int ca, cb;

	open_eps("loop");
	connect_n(1, &ca, &cb);
	rb2_conn_ep_stats_get(b, &sb);
	cr_assert_eq(sb.bad_frames, 0);
	/* A REF whose segments do not add up to its length. */
	cr_assert_eq(rb2_tx_reserve(raw_ab, 8 + 32, (void **)&slot), 0);
	memset(slot, 0, 40);
	slot[4] = RB2_CONN_FR_REF;
	slot[8 + 4] = 1;         /* one segment */
	slot[8 + 8] = 100;       /* of length 0, for 100 bytes */
	rb2_tx_commit(raw_ab, 40);
	rb2_tx_flush(raw_ab);
	/* b answers it (the lender would keep the buffer otherwise): a has
	 * lent nothing, so that REFDONE is malformed there. */
	for (int i = 0; i < 100; i++) {
		rb2_conn_ep_poll(b);
		rb2_conn_ep_poll(a);
	}
	rb2_conn_ep_stats_get(a, &sa);
	rb2_conn_ep_stats_get(b, &sb);
	cr_assert_eq(sb.bad_frames, 1);
	cr_assert_eq(sa.bad_frames, 1);
	cr_assert_eq(rb2_conn_status(a, ca), 0, "the connection goes on");
}

/* shm's peers are other processes: nothing is lent, everything copied. */
Test(rb2_conn_ref, shm_copies)
{
	uint32_t len = REF_MIN + 100;
	uint8_t *src = malloc(len), *dst = malloc(len);
	struct rb2_conn_ep_stats sa;
	int ca, cb;

	open_eps("shm");
	connect_n(1, &ca, &cb);
	rb2_test_fill(src, len, 3);
	cr_assert_eq(rb2_conn_send_ref(a, ca, src, len, 0), 0);
	cr_assert_null(rb2_conn_ref_tx_cache(a));
	cr_assert_eq(recv_one(cb, dst, len), (int)len);
	cr_assert(rb2_test_check(dst, len, 3));
	rb2_conn_ep_stats_get(a, &sa);
	cr_assert_eq(sa.ref_tx_msgs, 0);
	free(src);
	free(dst);
}
