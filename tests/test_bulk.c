/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Large messages from application memory (rb2_bulk.h), on the loop
 * transport, whose READs and registrations are real enough for the logic:
 * content on both sides of the crossover, buffers given back exactly once
 * and in order, the caches' hits, forgetting (a freed buffer is never used
 * again), the refusals, and shm's copying fallback. tests/verbs-vm runs the
 * same path on Soft-RoCE, where a stale registration would show.
 */

#include <sys/mman.h>

#include <rb2_bulk.h>
#include <rb2_mr_cache.h>

#include "rb2_test.h"

static struct rb2_xport *xp;
static struct rb2_tx *tx;
static struct rb2_rx *rx;
static struct rb2_bulk_tx *btx;
static struct rb2_bulk_rx *brx;

static void
setup(void)
{
	rb2_test_eal_init();
}

static void
teardown(void)
{
	rb2_bulk_tx_destroy(btx);
	rb2_bulk_rx_destroy(brx);
	rb2_tx_destroy(tx);
	rb2_rx_destroy(rx);
	rb2_xport_close(xp);
	btx = NULL;
	brx = NULL;
	tx = NULL;
	rx = NULL;
	xp = NULL;
	rb2_test_eal_fini();
}

TestSuite(rb2_bulk, .init = setup, .fini = teardown, .timeout = 120);

/* A channel of 256 slots of 1 KiB (largest inline message 128 KiB) and its
 * bulk halves; @p for the sender's. */
static void
open_bulk(const char *spec, const struct rb2_bulk_params *p)
{
	struct rb2_chan_params cp;

	rb2_chan_params_init(&cp);
	cp.slots = 256;
	cp.slot_size = 1024;
	xp = rb2_xport_open_spec(spec);
	cr_assert_not_null(xp, "open %s: %s", spec, rte_strerror(rte_errno));
	tx = rb2_tx_create("bk", xp, &cp);
	rx = rb2_rx_create("bk", xp, &cp);
	cr_assert(tx != NULL && rx != NULL, "create: %s", rte_strerror(rte_errno));
	cr_assert_eq(rb2_chan_pair(tx, rx), 0);
	btx = rb2_bulk_tx_create(tx, p);
	brx = rb2_bulk_rx_create(rx, NULL);
	cr_assert(btx != NULL && brx != NULL, "bulk create: %s", rte_strerror(rte_errno));
}

/* Receive one message into @dst, however long its READ takes. */
static int
recv_one(void *dst, size_t cap)
{
	int ret;

	for (int spins = 0; spins < 1000000; spins++) {
		ret = rb2_bulk_recv(brx, dst, cap);
		if (ret != -EAGAIN && ret != -EINPROGRESS)
			return ret;
	}
	return ret;
}

/* Every lent buffer comes back once, in order: expect @cookie next. */
static unsigned int
reap_done(uint64_t *next_cookie)
{
	struct rb2_bulk_done d[16];
	int n = rb2_bulk_tx_done(btx, d, RTE_DIM(d));

	cr_assert_geq(n, 0);
	for (int i = 0; i < n; i++) {
		cr_assert_eq(d[i].status, 0);
		cr_assert_eq(d[i].cookie, *next_cookie, "cookie %" PRIu64 ", expected %" PRIu64,
			     d[i].cookie, *next_cookie);
		(*next_cookie)++;
	}
	return (unsigned int)n;
}

Test(rb2_bulk, content_on_both_sides_of_the_crossover)
{
	static const size_t sizes[] = {0, 1, 100, 4096, 65535, 65536, 65537,
				       300000, 1 << 20, 3 << 20};
	size_t cap = 3 << 20;
	uint8_t *src = malloc(cap), *dst = malloc(cap + 1); /* + a guard byte */
	uint64_t lent = 0, back = 0;
	struct rb2_bulk_stats ts, rs;

	cr_assert(src != NULL && dst != NULL);
	open_bulk("loop", NULL);
	for (unsigned int i = 0; i < RTE_DIM(sizes); i++) {
		size_t len = sizes[i];
		int ret;

		rb2_test_fill(src, (uint32_t)len, i);
		ret = rb2_bulk_send(btx, src, len, lent);
		cr_assert(ret == (len >= RB2_BULK_INLINE_MAX_DEFAULT ? 1 : 0),
			  "send of %zu: %d", len, ret);
		lent += ret == 1;
		cr_assert_eq(rb2_tx_flush(tx), 0);
		memset(dst, 0xee, len + 1);
		cr_assert_eq(recv_one(dst, cap), (int)len, "receive of %zu", len);
		cr_assert(rb2_test_check(dst, (uint32_t)len, i), "content of %zu", len);
		cr_assert_eq(dst[len], 0xee, "wrote past %zu", len);
		/* The receiver pushed its head as its READ completed. */
		if (ret == 1) {
			cr_assert_eq(reap_done(&back), 1);
			cr_assert_eq(rb2_bulk_tx_forget(btx, src, cap), 0);
		}
	}
	cr_assert_eq(back, lent);
	rb2_bulk_tx_stats_get(btx, &ts);
	rb2_bulk_rx_stats_get(brx, &rs);
	cr_assert_eq(ts.ref_msgs, 5);
	cr_assert_eq(ts.inline_msgs, 5);
	cr_assert_eq(ts.ref_done, 5);
	cr_assert_eq(rs.ref_msgs, 5);
	cr_assert_eq(rs.inline_msgs, 5);
	cr_assert_eq(rs.ref_bytes, ts.ref_bytes);
	cr_assert_geq(rs.reads, 5);
	free(src);
	free(dst);
}

/* A buffer sent again is registered once, on both sides (MRRC's point). */
Test(rb2_bulk, repeated_buffers_hit_both_caches)
{
	size_t len = 256 << 10;
	uint8_t *src = malloc(len), *dst = malloc(len);
	struct rb2_mr_cache_stats cs;
	uint64_t back = 0;

	open_bulk("loop", NULL);
	for (int i = 0; i < 20; i++) {
		rb2_test_fill(src, (uint32_t)len, (uint64_t)i);
		cr_assert_eq(rb2_bulk_send(btx, src, len, (uint64_t)i), 1);
		cr_assert_eq(recv_one(dst, len), (int)len);
		cr_assert(rb2_test_check(dst, (uint32_t)len, (uint64_t)i));
		cr_assert_eq(reap_done(&back), 1);
	}
	rb2_mr_cache_stats_get(rb2_bulk_tx_cache(btx), &cs);
	cr_assert_eq(cs.gets, 20);
	cr_assert_eq(cs.hits, 19, "sender hits %" PRIu64, cs.hits);
	rb2_mr_cache_stats_get(rb2_bulk_rx_cache(brx), &cs);
	cr_assert_eq(cs.hits, 19, "receiver hits %" PRIu64, cs.hits);
	free(src);
	free(dst);
}

/* A lent buffer cannot be forgotten; a forgotten one is registered afresh
 * when its address comes back (here: unmapped, and mapped again at the same
 * address with other pages), never served from the old registration. */
Test(rb2_bulk, a_freed_buffer_is_never_used_again)
{
	size_t len = 1 << 20;
	uint8_t *dst = malloc(len), *src;
	struct rb2_mr_cache_stats before, after;
	uint64_t back = 0;

	open_bulk("loop", NULL);
	src = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(src, MAP_FAILED);
	rb2_test_fill(src, (uint32_t)len, 1);
	cr_assert_eq(rb2_bulk_send(btx, src, len, 0), 1);
	cr_assert_eq(rb2_bulk_tx_forget(btx, src + 4096, 1), -EBUSY, "a lent buffer was forgotten");
	cr_assert_eq(recv_one(dst, len), (int)len);
	cr_assert_eq(reap_done(&back), 1);
	rb2_mr_cache_stats_get(rb2_bulk_tx_cache(btx), &before);
	cr_assert_eq(rb2_bulk_tx_forget(btx, src, len), 0);
	cr_assert_eq(munmap(src, len), 0);
	cr_assert_eq(mmap(src, len, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0), src);
	rb2_test_fill(src, (uint32_t)len, 2);
	cr_assert_eq(rb2_bulk_send(btx, src, len, 1), 1);
	cr_assert_eq(recv_one(dst, len), (int)len);
	cr_assert(rb2_test_check(dst, (uint32_t)len, 2), "the old pages were sent");
	cr_assert_eq(reap_done(&back), 1);
	rb2_mr_cache_stats_get(rb2_bulk_tx_cache(btx), &after);
	cr_assert_eq(after.invalidations, before.invalidations + 1);
	cr_assert_eq(after.misses, before.misses + 1, "the freed buffer's registration was reused");
	cr_assert_eq(after.registrations, before.registrations + 1);
	munmap(src, len);
	free(dst);
}

/* Many buffers lent at once, the receiver behind: the window of lent buffers
 * fills (-EAGAIN, counted), each comes back once and in order, and every
 * message arrives exactly once, whatever its size. */
Test(rb2_bulk, lent_window_and_exactly_once)
{
	struct rb2_bulk_params p;
	enum { NBUF = 8, MSGS = 400 };
	size_t maxlen = 512 << 10;
	uint8_t *bufs[NBUF], *dst = malloc(maxlen);
	uint32_t lens[NBUF];
	int lent[NBUF] = {0};
	uint64_t seed = 7, sent = 0, got = 0, busy = 0, last_back = 0, backs = 0;
	struct rb2_bulk_stats ts;

	rb2_bulk_params_init(&p);
	p.max_refs = 4;
	p.inline_max = 8192;
	open_bulk("loop", &p);
	for (int i = 0; i < NBUF; i++)
		bufs[i] = malloc(maxlen);
	while (got < MSGS) {
		/* Message k goes from buffer k % NBUF, once that buffer is no
		 * longer lent and the receiver is less than NBUF behind. */
		while (sent < MSGS && sent - got < NBUF && !lent[sent % NBUF]) {
			unsigned int k = (unsigned int)(sent % NBUF);
			uint32_t len = (uint32_t)(rb2_test_rand(&seed) % maxlen);
			int ret;

			if (rb2_test_rand(&seed) % 3 == 0)
				len %= 8192;
			rb2_test_fill(bufs[k], len, sent);
			ret = rb2_bulk_send(btx, bufs[k], len, sent);
			if (ret == -EAGAIN) {
				busy++;
				break;
			}
			cr_assert_geq(ret, 0, "send: %d", ret);
			lens[k] = len;
			lent[k] = ret == 1;
			sent++;
		}
		(void)rb2_tx_flush(tx);
		if (rb2_test_rand(&seed) % 2 == 0) {
			int ret = rb2_bulk_recv(brx, dst, maxlen);

			if (ret >= 0) {
				unsigned int k = (unsigned int)(got % NBUF);

				cr_assert_eq((uint32_t)ret, lens[k]);
				cr_assert(rb2_test_check(dst, (uint32_t)ret, got),
					  "message %" PRIu64, got);
				got++;
			} else {
				cr_assert(ret == -EAGAIN || ret == -EINPROGRESS, "recv: %d", ret);
			}
		}
		struct rb2_bulk_done d[8];
		int n = rb2_bulk_tx_done(btx, d, RTE_DIM(d));

		for (int i = 0; i < n; i++) {
			unsigned int k = (unsigned int)(d[i].cookie % NBUF);

			cr_assert_eq(d[i].status, 0);
			cr_assert(backs == 0 || d[i].cookie > last_back, "given back out of order");
			cr_assert_lt(d[i].cookie, got, "given back before it was received");
			cr_assert(lent[k], "message %" PRIu64 " given back twice", d[i].cookie);
			lent[k] = 0;
			last_back = d[i].cookie;
			backs++;
		}
	}
	rb2_bulk_tx_stats_get(btx, &ts);
	cr_assert_eq(ts.inline_msgs + ts.ref_msgs, MSGS);
	cr_assert_gt(ts.ref_msgs, 0);
	cr_assert_gt(ts.inline_msgs, 0);
	cr_assert_eq(ts.ref_done, backs);
	cr_assert_eq(ts.ref_done, ts.ref_msgs);
	cr_assert_eq(ts.ref_waits, busy);
	for (int i = 0; i < NBUF; i++)
		free(bufs[i]);
	free(dst);
}

Test(rb2_bulk, refusals_name_their_cause)
{
	struct rb2_chan_params cp;
	uint8_t big[256];

	open_bulk("loop", NULL);
	/* A message too large for the destination stays in the ring. */
	memset(big, 1, sizeof(big));
	cr_assert_eq(rb2_bulk_send(btx, big, sizeof(big), 0), 0);
	cr_assert_eq(rb2_tx_flush(tx), 0);
	cr_assert_eq(rb2_bulk_recv(brx, big, 10), -EMSGSIZE);
	cr_assert_eq(rb2_bulk_recv(brx, big, sizeof(big)), (int)sizeof(big));
	/* A plain message is not a bulk one: the receiver fails, loudly. */
	cr_assert_eq(rb2_tx_send(tx, "plain", 5), 0);
	cr_assert_eq(rb2_tx_flush(tx), 0);
	cr_assert_eq(rb2_bulk_recv(brx, big, sizeof(big)), -EPROTO);

	/* Channels a lent buffer cannot come back on. */
	rb2_chan_params_init(&cp);
	cp.head_sync = RB2_HEAD_LAZY_PULL;
	struct rb2_tx *t2 = rb2_tx_create("bk2", xp, &cp);
	cr_assert_not_null(t2);
	cr_assert_null(rb2_bulk_tx_create(t2, NULL));
	cr_assert_eq(rte_errno, EINVAL);
	rb2_tx_destroy(t2);
	rb2_chan_params_init(&cp);
	cp.msg_size = 64;
	cp.slot_size = 64;
	t2 = rb2_tx_create("bk3", xp, &cp);
	cr_assert_not_null(t2);
	cr_assert_null(rb2_bulk_tx_create(t2, NULL));
	rb2_tx_destroy(t2);
}

/* shm's peers are processes that cannot READ each other's heap: every
 * message is copied through the ring, up to the ring's largest. */
Test(rb2_bulk, shm_copies_through_the_ring)
{
	size_t len = 100000;
	uint8_t *src = malloc(len), *dst = malloc(len);
	struct rb2_bulk_stats ts;

	open_bulk("shm", NULL);
	cr_assert_null(rb2_bulk_tx_cache(btx));
	rb2_test_fill(src, (uint32_t)len, 3);
	cr_assert_eq(rb2_bulk_send(btx, src, len, 0), 0);
	cr_assert_eq(rb2_tx_flush(tx), 0);
	cr_assert_eq(recv_one(dst, len), (int)len);
	cr_assert(rb2_test_check(dst, (uint32_t)len, 3));
	cr_assert_eq(rb2_bulk_send(btx, src, 200000, 0), -EMSGSIZE);
	rb2_bulk_tx_stats_get(btx, &ts);
	cr_assert_eq(ts.ref_msgs, 0);
	free(src);
	free(dst);
}
