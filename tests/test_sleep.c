/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Adaptive polling (RB2_CHAN_F_SLEEP): a receiver that finds nothing for a
 * number of passes sleeps on its doorbell, and the sender's next publication
 * wakes it. Every message arrives once, in order, and none waits anywhere
 * near the sleep's timeout (a lost wake-up would show as that timeout). Two
 * lcores, every tail sync, both shm modes, and two channels on one sleeper.
 */

#define _GNU_SOURCE /* RUSAGE_THREAD */
#include <stdatomic.h>
#include <sys/resource.h>
#include <time.h>

#include <rte_cycles.h>
#include <rte_launch.h>
#include <rte_pause.h>

#include <rb2_lcore.h>

#include "rb2_test.h"

#define IDLE_PASSES 120          /* RDMAbox's MAX_RETRY */
#define SLEEP_TIMEOUT_US 1000000 /* a lost wake-up costs this much */
#define CREDIT_NAP_US 300000     /* a late reader's nap before it drains */
#define WAKE_BOUND_US 200000     /* a loaded 2-vCPU box stalls for tens of ms */

static struct rb2_xport *xp;
static struct rb2_tx *txs[2];
static struct rb2_rx *rxs[2];

static void
setup(void)
{
	rb2_test_eal_init();
}

static void
teardown(void)
{
	for (int i = 0; i < 2; i++) {
		rb2_tx_destroy(txs[i]);
		rb2_rx_destroy(rxs[i]);
		txs[i] = NULL;
		rxs[i] = NULL;
	}
	rb2_xport_close(xp);
	xp = NULL;
	rb2_test_eal_fini();
}

TestSuite(rb2_sleep, .init = setup, .fini = teardown, .timeout = 120);

static void
open_pairs(const char *spec, const struct rb2_chan_params *p, unsigned int n)
{
	xp = rb2_xport_open_spec(spec);
	cr_assert_not_null(xp, "open %s: %s", spec, rte_strerror(rte_errno));
	for (unsigned int i = 0; i < n; i++) {
		char name[16];

		snprintf(name, sizeof(name), "s%u", i);
		txs[i] = rb2_tx_create(name, xp, p);
		cr_assert_not_null(txs[i], "tx_create: %s", rte_strerror(rte_errno));
		rxs[i] = rb2_rx_create(name, xp, p);
		cr_assert_not_null(rxs[i], "rx_create: %s", rte_strerror(rte_errno));
		cr_assert_eq(rb2_chan_pair(txs[i], rxs[i]), 0);
	}
}

/* The sleeper: polls its channels, sleeps on all their doorbells after
 * IDLE_PASSES empty passes, and checks every message. */
struct sleeper {
	unsigned int nchan;
	uint64_t expect;              /* messages in all */
	uint64_t got, bad;
	uint64_t max_wait_cyc;        /* send stamp to receipt */
	uint64_t slept, cpu_us, wall_us;
	_Atomic int quit;             /* idle test: stop when set */
};

/* Message: [0] sequence number per channel, [1] the sender's TSC. */
static int
sleeper_main(void *arg)
{
	struct sleeper *s = arg;
	uint64_t next[2] = {0, 0};
	uint64_t t0 = rte_get_timer_cycles();
	unsigned int idle = 0;
	struct rusage ru;

	while (s->got < s->expect && !atomic_load(&s->quit)) {
		struct rb2_xport_doorbell db[2];
		unsigned int armed = 0;
		int busy = 0;

		for (unsigned int c = 0; c < s->nchan; c++) {
			struct rb2_msg m[8];
			int n = rb2_rx_peek_burst(rxs[c], m, 8);

			if (n < 0) {
				s->bad++;
				return -1;
			}
			for (int i = 0; i < n; i++) {
				const uint64_t *w = m[i].data;
				uint64_t now = rte_get_timer_cycles();

				if (w[0] != next[c]++)
					s->bad++;
				if (now > w[1] && now - w[1] > s->max_wait_cyc)
					s->max_wait_cyc = now - w[1];
			}
			if (n > 0) {
				rb2_rx_release_burst(rxs[c], m, (unsigned int)n);
				s->got += (uint64_t)n;
				busy = 1;
			}
		}
		if (busy || ++idle < IDLE_PASSES) {
			if (busy)
				idle = 0;
			continue;
		}
		/* Arm every channel; a message on any calls the sleep off. */
		for (; armed < s->nchan; armed++)
			if (rb2_rx_sleep_arm(rxs[armed], &db[armed]) != 0)
				break;
		if (armed == s->nchan) {
			rb2_xport_doorbell_wait(db, armed, SLEEP_TIMEOUT_US);
			s->slept++;
		}
		for (unsigned int c = 0; c < armed; c++)
			rb2_rx_sleep_disarm(rxs[c]);
		idle = 0;
	}
	getrusage(RUSAGE_THREAD, &ru);
	s->cpu_us = (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
		(uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
	s->wall_us = (rte_get_timer_cycles() - t0) * 1000000 / rte_get_timer_hz();
	return 0;
}

/* Send @count messages, alternating channels at random, each after a random
 * gap of 0 to 2 ms (so the sleeper sleeps before most of them, and some
 * land while it arms), flushed at once: a paced sender. */
static void
paced_traffic(const char *spec, const char *preset, unsigned int nchan, uint64_t count)
{
	struct rb2_chan_params p;
	struct sleeper s = { .nchan = nchan, .expect = count };
	uint64_t seq[2] = {0, 0}, rnd = 0x9e3779b97f4a7c15ull;
	unsigned int lc = rte_get_next_lcore(-1, 1, 0);
	uint64_t wakeups = 0, sleeps = 0;

	rb2_chan_params_init(&p);
	cr_assert_eq(rb2_chan_params_preset(&p, preset), 0);
	p.slots = 256;
	p.flags |= RB2_CHAN_F_SLEEP;
	p.lcore_id = lc;
	open_pairs(spec, &p, nchan);
	cr_assert_eq(rb2_lcore_launch(sleeper_main, &s, lc), 0);
	for (uint64_t i = 0; i < count; i++) {
		unsigned int c = nchan > 1 ? (unsigned int)(rb2_test_rand(&rnd) & 1) : 0;
		uint64_t gap = rb2_test_rand(&rnd) % 2000;
		uint64_t *w;
		void *slot = NULL;
		int ret;

		if (gap > 100)
			rte_delay_us_sleep((unsigned int)gap);
		while ((ret = rb2_tx_reserve(txs[c], 16, &slot)) == -ENOBUFS)
			rb2_tx_flush(txs[c]);
		cr_assert_eq(ret, 0);
		w = slot;
		w[0] = seq[c]++;
		w[1] = rte_get_timer_cycles();
		rb2_tx_commit(txs[c], 16);
		rb2_tx_flush(txs[c]);
	}
	cr_assert_eq(rb2_lcore_wait(lc), 0, "sleeper failed: %" PRIu64 " bad", s.bad);
	for (unsigned int c = 0; c < nchan; c++) {
		struct rb2_tx_stats ts;
		struct rb2_rx_stats rs;

		rb2_tx_stats_get(txs[c], &ts);
		rb2_rx_stats_get(rxs[c], &rs);
		wakeups += ts.wakeups;
		sleeps += rs.sleeps;
	}
	cr_assert_eq(s.got, count, "%" PRIu64 " of %" PRIu64 " messages", s.got, count);
	cr_assert_eq(s.bad, 0, "%" PRIu64 " out of order", s.bad);
	cr_assert_gt(s.slept, count / 4, "slept %" PRIu64 " times for %" PRIu64 " paced messages",
		     s.slept, count);
	cr_assert_gt(wakeups, 0, "no sender woke its receiver (%" PRIu64 " sleeps)", sleeps);
	cr_assert_lt(s.max_wait_cyc * 1000000 / rte_get_timer_hz(), WAKE_BOUND_US,
		     "a message waited %" PRIu64 " us (sleep timeout %u us: a lost wake-up?)",
		     s.max_wait_cyc * 1000000 / rte_get_timer_hz(), SLEEP_TIMEOUT_US);
}

Test(rb2_sleep, write_twice_loadstore)
{
	paced_traffic("shm,mode=loadstore", "rb2", 1, 300);
}

Test(rb2_sleep, write_twice_copy)
{
	paced_traffic("shm,mode=copy", "rb2", 1, 300);
}

Test(rb2_sleep, poll_message_loadstore)
{
	paced_traffic("shm,mode=loadstore", "farm", 1, 300);
}

Test(rb2_sleep, poll_message_copy)
{
	paced_traffic("shm,mode=copy", "farm", 1, 300);
}

Test(rb2_sleep, write_imm_loadstore)
{
	paced_traffic("shm,mode=loadstore", "socksdirect", 1, 300);
}

Test(rb2_sleep, write_imm_copy)
{
	paced_traffic("shm,mode=copy", "socksdirect", 1, 300);
}

/* One sleeper, two channels: it waits on both doorbells at once. */
Test(rb2_sleep, two_channels_one_sleeper)
{
	paced_traffic("shm,mode=loadstore", "rb2", 2, 400);
}

/* An idle receiver sleeps: it uses almost no CPU while nothing comes. */
Test(rb2_sleep, idle_receiver_uses_no_cpu)
{
	struct rb2_chan_params p;
	struct sleeper s = { .nchan = 1, .expect = UINT64_MAX };
	unsigned int lc = rte_get_next_lcore(-1, 1, 0);

	rb2_chan_params_init(&p);
	p.flags |= RB2_CHAN_F_SLEEP;
	p.lcore_id = lc;
	open_pairs("shm", &p, 1);
	cr_assert_eq(rb2_lcore_launch(sleeper_main, &s, lc), 0);
	rte_delay_us_sleep(500000);
	atomic_store(&s.quit, 1);
	/* It sleeps up to SLEEP_TIMEOUT_US: a message wakes it to see quit. */
	cr_assert_eq(rb2_tx_send(txs[0], (uint64_t[2]){0, rte_get_timer_cycles()}, 16), 0);
	rb2_tx_flush(txs[0]);
	cr_assert_eq(rb2_lcore_wait(lc), 0);
	cr_assert_gt(s.wall_us, 400000);
	/* Less than 5% of a core (the benchmark measures the real figure;
	 * this only catches a sleeper that spins). */
	cr_assert_lt(s.cpu_us * 20, s.wall_us, "idle sleeper used %" PRIu64 " us of CPU in %" PRIu64
		     " us", s.cpu_us, s.wall_us);
}

/* Arming with a message already there calls the sleep off, and says so. */
Test(rb2_sleep, arming_with_a_message_waiting_calls_the_sleep_off)
{
	struct rb2_chan_params p;
	struct rb2_xport_doorbell db;
	struct rb2_rx_stats rs;
	struct rb2_tx_stats ts;
	uint8_t b[16] = {0};

	rb2_chan_params_init(&p);
	p.flags |= RB2_CHAN_F_SLEEP;
	open_pairs("shm,mode=copy", &p, 1);
	cr_assert_eq(rb2_rx_sleep_arm(rxs[0], &db), 0);
	/* Sleeping now: the sender's publication rings the doorbell once. */
	cr_assert_eq(rb2_tx_send(txs[0], b, sizeof(b)), 0);
	rb2_tx_flush(txs[0]);
	cr_assert_neq(__atomic_load_n(db.word, __ATOMIC_ACQUIRE), db.seen, "the doorbell rang");
	cr_assert_eq(rb2_xport_doorbell_wait(&db, 1, SLEEP_TIMEOUT_US), 0, "a rung doorbell does not block");
	rb2_rx_sleep_disarm(rxs[0]);
	cr_assert_eq(rb2_rx_sleep_arm(rxs[0], &db), -EAGAIN, "a message is waiting");
	rb2_rx_stats_get(rxs[0], &rs);
	rb2_tx_stats_get(txs[0], &ts);
	cr_assert_eq(rs.sleeps, 1);
	cr_assert_eq(rs.sleep_aborts, 1);
	cr_assert_eq(ts.wakeups, 1);
	cr_assert_eq(rb2_rx_recv(rxs[0], b, sizeof(b)), 16);
	/* Awake: publications ring nothing. */
	cr_assert_eq(rb2_tx_send(txs[0], b, sizeof(b)), 0);
	rb2_tx_flush(txs[0]);
	rb2_tx_stats_get(txs[0], &ts);
	cr_assert_eq(ts.wakeups, 1);
}

/* Both halves must agree, the transport must be able to wake, and a channel
 * without the flag refuses to sleep. */
Test(rb2_sleep, the_flag_is_checked)
{
	struct rb2_chan_params p, q;
	struct rb2_xport_doorbell db;

	rb2_chan_params_init(&p);
	q = p;
	q.flags |= RB2_CHAN_F_SLEEP;
	xp = rb2_xport_open_spec("shm");
	cr_assert_not_null(xp);
	txs[0] = rb2_tx_create("f", xp, &p);
	rxs[0] = rb2_rx_create("f", xp, &q);
	cr_assert(txs[0] != NULL && rxs[0] != NULL);
	cr_assert_eq(rb2_chan_pair(txs[0], rxs[0]), -EINVAL, "flags differ");
	txs[1] = rb2_tx_create("g", xp, &p);
	rxs[1] = rb2_rx_create("g", xp, &p);
	cr_assert_eq(rb2_chan_pair(txs[1], rxs[1]), 0);
	cr_assert_eq(rb2_rx_sleep_arm(rxs[1], &db), -ENOTSUP);
	cr_assert_eq(rb2_rx_sleep(rxs[1], 10), -ENOTSUP);
}

/* A transport that cannot wake (loop) refuses the flag, naming it. */
Test(rb2_sleep, a_transport_that_cannot_wake_refuses)
{
	struct rb2_chan_params p;

	rb2_chan_params_init(&p);
	p.flags |= RB2_CHAN_F_SLEEP;
	xp = rb2_xport_open_spec("loop");
	cr_assert_not_null(xp);
	cr_assert_null(rb2_rx_create("l", xp, &p));
	cr_assert_eq(rte_errno, ENOTSUP);
}

/*
 * RB2_CHAN_F_ROOM_WAKE: a sender short of room sleeps on its own doorbell,
 * and the receiver's head push (every gamma slots, with a wake-up behind
 * it) wakes it. Nothing is READ: the head READ is what Soft-RoCE leaves
 * uncompleted under reordering.
 */
static void
room_params(struct rb2_chan_params *p)
{
	rb2_chan_params_init(p);
	p->slots = 64;
	p->gamma = 16;
	p->alpha = p->beta = 1;
	p->flags |= RB2_CHAN_F_LAZY_HEAD | RB2_CHAN_F_LEN_IN_SLOT | RB2_CHAN_F_ROOM_WAKE;
}

static void
room_wakes_the_sender(const char *spec)
{
	struct rb2_chan_params p;
	struct rb2_xport_doorbell db;
	struct rb2_tx_stats ts;
	uint8_t b[16] = {0};
	unsigned int sent = 0;
	void *slot;

	room_params(&p);
	open_pairs(spec, &p, 1);
	cr_assert_eq(rb2_tx_wait_arm(txs[0], &db), -EAGAIN, "room: no sleep");
	while (rb2_tx_send(txs[0], b, sizeof(b)) == 0)
		sent++;
	cr_assert_eq(sent, p.slots - 1, "one slot a message, the ring less one");
	cr_assert_eq(rb2_tx_wait_arm(txs[0], &db), 0, "short of room: armed");
	/* Fewer than gamma released: no push, so the doorbell stays. */
	for (unsigned int i = 0; i < p.gamma - 1; i++)
		cr_assert_eq(rb2_rx_recv(rxs[0], b, sizeof(b)), 16);
	cr_assert_eq(__atomic_load_n(db.word, __ATOMIC_ACQUIRE), db.seen, "no push yet");
	cr_assert_eq(rb2_rx_recv(rxs[0], b, sizeof(b)), 16);
	cr_assert_eq(rb2_xport_doorbell_wait(&db, 1, SLEEP_TIMEOUT_US), 0,
		     "the push at gamma rang the sender's doorbell");
	rb2_tx_wait_done(txs[0]);
	cr_assert_eq(rb2_tx_reserve(txs[0], 16, &slot), 0, "room after the push");
	rb2_tx_stats_get(txs[0], &ts);
	cr_assert_eq(ts.room_sleeps, 1);
	cr_assert_eq(ts.head_reads, 0, "nothing READ");
}

Test(rb2_sleep, room_wakes_the_sender_loadstore)
{
	room_wakes_the_sender("shm,mode=loadstore");
}

Test(rb2_sleep, room_wakes_the_sender_copy)
{
	room_wakes_the_sender("shm,mode=copy");
}

/*
 * WRITE_WITH_IMM sync under RB2_CHAN_F_ROOM_WAKE: a sender that has used its
 * receiver's credits holds its next publication (the slots are there, the
 * tail is not), and sleeps until they come back: the return of credits
 * rings its doorbell. Without that wake-up it could only look again and
 * again, at full speed, for as long as the receiver did not read.
 */
static void
credits_wake_the_sender(const char *spec)
{
	struct rb2_chan_params p;
	struct rb2_xport_doorbell db;
	struct rb2_tx_stats ts;
	uint64_t v = 0;

	room_params(&p);
	p.slots = 256;
	p.gamma = 128;        /* no head push, with its wake-up, in what follows */
	p.tail_sync = RB2_TAIL_WRITE_IMM;
	open_pairs(spec, &p, 1);
	/* One publication a message (alpha 1), a credit each. */
	for (v = 0; v < 64; v++)
		cr_assert_eq(rb2_tx_send(txs[0], &v, sizeof(v)), 0);
	cr_assert_eq(rb2_tx_flush_or_defer(txs[0]), 0, "64 credits, 64 publications");
	cr_assert_eq(rb2_tx_send(txs[0], &v, sizeof(v)), 0, "room for the 65th");
	cr_assert_eq(rb2_tx_flush_or_defer(txs[0]), 1, "its publication waits for a credit");
	cr_assert_eq(rb2_tx_wait_arm(txs[0], &db), 0, "held for credits: armed, not 'look again'");
	cr_assert_eq(__atomic_load_n(db.word, __ATOMIC_ACQUIRE), db.seen, "nothing rang yet");
	for (uint64_t i = 0; i < 64; i++) {
		uint64_t got = ~0ull;

		cr_assert_eq(rb2_rx_recv(rxs[0], &got, sizeof(got)), (int)sizeof(got));
		cr_assert_eq(got, i);
	}
	cr_assert_eq(rb2_xport_doorbell_wait(&db, 1, SLEEP_TIMEOUT_US), 0,
		     "the return of credits rang the sender's doorbell");
	rb2_tx_wait_done(txs[0]);
	cr_assert_eq(rb2_tx_flush_or_defer(txs[0]), 0, "awake: the 65th goes out");
	cr_assert_eq(rb2_rx_recv(rxs[0], &v, sizeof(v)), (int)sizeof(v));
	cr_assert_eq(v, 64);
	rb2_tx_stats_get(txs[0], &ts);
	cr_assert_eq(ts.held_sleeps, 1);
	cr_assert_geq(ts.credit_waits, 2);
	/* Everything published and room: nothing to sleep for. */
	cr_assert_eq(rb2_tx_wait_arm(txs[0], &db), -EAGAIN);
}

Test(rb2_sleep, credits_wake_the_sender_loadstore)
{
	credits_wake_the_sender("shm,mode=loadstore");
}

Test(rb2_sleep, credits_wake_the_sender_copy)
{
	credits_wake_the_sender("shm,mode=copy");
}

/* A reader on its lcore: @expect messages, each its own index, in order
 * (@bad counts those out of place), after a nap of @nap_us, and pausing
 * 200 us about every 64th message if @pauses. */
struct lcore_reader {
	uint64_t expect, got, bad;
	unsigned int nap_us;
	int pauses;
};

static int
lcore_reader_main(void *arg)
{
	struct lcore_reader *r = arg;
	uint64_t rnd = 0x2545f4914f6cdd1dull;

	rte_delay_us_sleep(r->nap_us);
	while (r->got < r->expect) {
		uint64_t v;
		int n = rb2_rx_recv(rxs[0], &v, sizeof(v));

		if (n == -EAGAIN)
			continue;
		if (n < 0)
			return -1;
		r->bad += v != r->got++;
		if (r->pauses && rb2_test_rand(&rnd) % 64 == 0)
			rte_delay_us_sleep(200);
	}
	return 0;
}

static uint64_t
thread_cpu_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (uint64_t)t.tv_sec * 1000000 + (uint64_t)t.tv_nsec / 1000;
}

/*
 * A flush must publish, so it waits for the credits a late reader holds (up
 * to a second). Under RB2_CHAN_F_ROOM_WAKE it waits asleep: their return
 * rings the doorbell. Spinning instead, the flush would burn the whole nap.
 */
static void
a_flush_sleeps_for_credits(const char *spec)
{
	struct rb2_chan_params p;
	struct lcore_reader r = { .expect = 65, .nap_us = CREDIT_NAP_US };
	unsigned int lc = rte_get_next_lcore(-1, 1, 0);
	uint64_t t0, c0, wall, cpu;
	struct rb2_tx_stats ts;

	room_params(&p);
	p.slots = 256;
	p.gamma = 128;
	p.tail_sync = RB2_TAIL_WRITE_IMM;
	p.lcore_id = lc;
	open_pairs(spec, &p, 1);
	cr_assert_eq(rb2_lcore_launch(lcore_reader_main, &r, lc), 0);
	for (uint64_t v = 0; v < 65; v++)
		cr_assert_eq(rb2_tx_send(txs[0], &v, sizeof(v)), 0);
	t0 = rte_get_timer_cycles();
	c0 = thread_cpu_us();
	cr_assert_eq(rb2_tx_flush(txs[0]), 0);
	wall = (rte_get_timer_cycles() - t0) * 1000000 / rte_get_timer_hz();
	cpu = thread_cpu_us() - c0;
	cr_assert_eq(rb2_tx_published(txs[0]), rb2_tx_tail(txs[0]), "the 65th went out");
	cr_assert_eq(rb2_lcore_wait(lc), 0);
	cr_assert_eq(r.got, r.expect);
	cr_assert_eq(r.bad, 0);
	rb2_tx_stats_get(txs[0], &ts);
	cr_assert_geq(wall, CREDIT_NAP_US / 2, "the flush took %" PRIu64 " us: it did not wait "
		      "for the late reader, so the check tests nothing", wall);
	cr_assert_lt(cpu, wall / 4, "%" PRIu64 " us of CPU in a flush of %" PRIu64 " us: it "
		     "waited for credits at full speed", cpu, wall);
	cr_assert_gt(ts.held_sleeps, 0, "the flush never slept for credits");
}

Test(rb2_sleep, a_flush_sleeps_for_credits_loadstore)
{
	a_flush_sleeps_for_credits("shm,mode=loadstore");
}

Test(rb2_sleep, a_flush_sleeps_for_credits_copy)
{
	a_flush_sleeps_for_credits("shm,mode=copy");
}

/* The reader on its lcore, with pauses; the writer sleeps whenever the
 * ring is full. Every message arrives once, in order; no sleep runs out. */
Test(rb2_sleep, a_writer_that_sleeps_for_room_loses_nothing)
{
	struct rb2_chan_params p;
	struct lcore_reader r = { .expect = 20000, .pauses = 1 };
	unsigned int lc = rte_get_next_lcore(-1, 1, 0);
	uint64_t timeouts = 0;
	struct rb2_tx_stats ts;

	room_params(&p);
	p.lcore_id = lc;
	open_pairs("shm,mode=copy", &p, 1);
	cr_assert_eq(rb2_lcore_launch(lcore_reader_main, &r, lc), 0);
	for (uint64_t i = 0; i < r.expect; i++) {
		int ret;

		while ((ret = rb2_tx_send(txs[0], &i, sizeof(i))) == -ENOBUFS) {
			struct rb2_xport_doorbell db;

			if (rb2_tx_wait_arm(txs[0], &db) == 0) {
				timeouts += rb2_xport_doorbell_wait(&db, 1, SLEEP_TIMEOUT_US) ==
					    -ETIMEDOUT;
				rb2_tx_wait_done(txs[0]);
			}
		}
		cr_assert_eq(ret, 0);
	}
	rb2_tx_flush(txs[0]);
	cr_assert_eq(rb2_lcore_wait(lc), 0);
	rb2_tx_stats_get(txs[0], &ts);
	cr_assert_eq(r.got, r.expect);
	cr_assert_eq(r.bad, 0, "%" PRIu64 " out of order", r.bad);
	cr_assert_gt(ts.room_sleeps, 0, "the writer never slept");
	cr_assert_eq(timeouts, 0, "%" PRIu64 " of %" PRIu64 " sleeps ran out: a lost wake-up",
		     timeouts, (uint64_t)ts.room_sleeps);
	cr_assert_eq(ts.head_reads, 0, "nothing READ");
}

/* The flag needs lazy push and a transport that wakes; a message leaves
 * gamma slots; a channel without it refuses to sleep for room. */
Test(rb2_sleep, the_room_flag_is_checked)
{
	struct rb2_chan_params p;
	struct rb2_xport_doorbell db;
	char why[200];

	room_params(&p);
	cr_assert_eq(rb2_chan_max_msg(&p), (p.slots - p.gamma) / 2 * p.slot_size -
		     rb2_chan_msg_overhead(&p));
	p.head_sync = RB2_HEAD_LAZY_PULL;
	cr_assert_eq(rb2_chan_params_check(&p, why, sizeof(why)), -EINVAL);
	cr_assert(strstr(why, "lazy push") != NULL, "%s", why);
	room_params(&p);
	xp = rb2_xport_open_spec("loop");
	cr_assert_not_null(xp);
	cr_assert_null(rb2_tx_create("l", xp, &p));
	cr_assert_eq(rte_errno, ENOTSUP);
	rb2_xport_close(xp);
	xp = NULL;
	rb2_chan_params_init(&p);
	open_pairs("shm", &p, 1);
	cr_assert_eq(rb2_tx_wait_arm(txs[0], &db), -ENOTSUP);
}
