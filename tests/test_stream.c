/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * rb2_stream (lib/preload): a byte stream over an RB² channel pair between
 * two processes without the EAL, woken through a socket, as rb2-run's
 * connections are. Each check runs a client and a server over one arena,
 * with a socketpair for the bells, in one of three ways (argv[1]):
 *   - (none): two processes on one host (rb2_stream_open(), shm), woken
 *     through the socket alone;
 *   - shm-efd: the same with a pair of eventfds, as rb2-run's connections
 *     on one host: each end sleeps on its eventfd only, never on the
 *     socket, so a bell that went to the socket (or nowhere) leaves a
 *     sleeper asleep, and fails the check;
 *   - remote-shm: the protocol of a stream across hosts (each end its own
 *     control words, flags WRITten into the peer's, counts READ back, the
 *     end a mark in the ring), both ends in one process on two threads,
 *     their queues paired directly on shm (rb2_stream_pair_remote());
 *   - remote-verbs: across hosts for real, on an RDMA device (Soft-RoCE in
 *     the verbs guest): two processes, each end's queues connected over
 *     the socketpair itself (rb2_stream_open_remote(), rendezvous "fd:N"),
 *     both batching as rb2-run's do (rb2_stream_batch(); RB2_TEST_BATCH=0
 *     sends every write at once), so a waiter flushes first. (Soft-RoCE on
 *     one host often completes a WRITE before the post returns, so a write
 *     is seldom held here: the two-guest suite checks that writes were.)
 *     Exit 77 without a device.
 * The checks:
 *   - 32 MiB each way in writes and reads of random sizes and iovec splits:
 *     every byte once, in order (a pattern of its offset);
 *   - boundaries do not show: three writes of 10 bytes read as 25 then 5;
 *     MSG_PEEK returns what the next read takes;
 *   - half-close: after the client's SHUT_WR the server reads everything,
 *     then 0, and still sends to the client, which reads it, then 0 after
 *     the server closes; the client's write then fails with EPIPE;
 *   - sleepers: a reader blocked on its bell is woken by the writer (the
 *     bells rung are counted), and a writer blocked on a full ring is woken
 *     by the reader;
 *   - a writer ahead of a reader that sleeps 1.5 s: 600 small writes, all
 *     read in order. Across hosts with batching they use up the reader's
 *     credits; no write waits for them, and the writer, waiting for the
 *     answer, sleeps (CPU under a quarter of the wait) until their return
 *     wakes it. Without batching (RB2_TEST_BATCH=0) every write publishes,
 *     so the writes wait for the credits: asleep, under the same bound;
 *   - across hosts with batching, a writer 200 writes ahead of a reader
 *     that does not read, whose process then ends: after a close (the
 *     reader wakes past the close's 10 s wait), after rb2-run's close
 *     behind a slow reader (rb2_stream_close_would_wait() says so at once;
 *     the rest stepped as its closer steps it, rb2_stream_close_step(),
 *     the landing of the end included, on a duplicate of the bell's
 *     socket), after
 *     rb2_stream_end_at_exit() (rb2-run's exit; the reader wakes within
 *     its wait), after one whose 300 ms run out first (it must return
 *     -ETIMEDOUT within 1 s), and with neither. The reader gets every
 *     byte and the end, or a reset, never the end after part of them: all
 *     and the end after the exit's and the close behind, a reset after the
 *     exit out of time and after neither;
 *   - wait names (rb2_stream_wait_id()) carry the process's pid above a
 *     count, so no two waits of live processes share one: a parent's and
 *     its fork child's differ, and one process's never repeat in a row.
 */

#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rb2_noeal.h>
#include <rb2_xport.h>

#include "rb2_stream.h"

#define BULK (32u << 20)
#define RTE_MIN_SZ(a, b) ((a) < (b) ? (a) : (b))

static _Atomic int fails;

#define CHECK(cond, ...) do {                                        \
	if (!(cond)) {                                                \
		printf("FAILED: " __VA_ARGS__);                       \
		printf("\n");                                         \
		fails++;                                              \
	}                                                             \
} while (0)

static __thread uint64_t rng = 12345;

static uint32_t
rnd(uint32_t n)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)((rng >> 33) % n);
}

static uint8_t
pat(uint64_t off, int dir)
{
	return (uint8_t)((off * 2654435761u) >> 13) ^ (uint8_t)dir;
}

/* A test stuck past RB2_TEST_STUCK_S seconds (default 120) prints where
 * each end stands (its pointers, who sleeps) and fails, rather than wait
 * for the harness's timeout to kill it without a word. Diagnosis only: the
 * dump is not async-signal-safe. */
static struct rb2_stream *watched_end[2];

static void
stuck(int sig)
{
	(void)sig;
	printf("FAILED: stuck; the two ends:\n");
	for (int i = 0; i < 2; i++)
		if (watched_end[i] != NULL)
			rb2_stream_dump(watched_end[i], -1, stdout);
	fflush(stdout);
	_exit(3);
}

static void
watch(struct rb2_stream *s, int end)
{
	const char *t = getenv("RB2_TEST_STUCK_S");

	watched_end[end] = s;
	signal(SIGALRM, stuck);
	alarm(t != NULL ? (unsigned int)atoi(t) : 120);
}

static int efd_only;     /* shm-efd: sleep on the eventfd alone */
static int batch;        /* remote-verbs: the ends batch (rb2_stream_batch()) */
static int verbs;        /* remote-verbs: the ends sleep for credits (a doorbell) */

/* Block until @events, as rb2-run does: send what is held, arm, then poll
 * the bell. */
static void
wait_for(struct rb2_stream *s, int bell, int events)
{
	int sev;

	if (batch)
		CHECK(rb2_stream_flush(s) == 0, "flushing what batching held");
	/* With a publication held for the peer's credits, for those too. */
	sev = rb2_stream_sleep_events(s, events);
	if (rb2_stream_arm(s, sev, rb2_stream_wait_id()) == 0) {
		/* Across hosts, a reader or a writer sleeps on its completion
		 * channels too; on one host with eventfds, on that alone. */
		struct pollfd p[3] = { { .fd = bell, .events = POLLIN },
				       { .fd = rb2_stream_wake_fd(s, sev), .events = POLLIN },
				       { .fd = -1, .events = POLLIN } };
		int n;

		if ((sev & POLLIN) && (sev & (POLLOUT | RB2_STREAM_HELD)) &&
		    rb2_stream_wake_fd(s, POLLOUT) != p[1].fd)
			p[2].fd = rb2_stream_wake_fd(s, POLLOUT);
		if (efd_only) {
			n = poll(&p[1], 1, 5000);
			CHECK(n == 1, "asleep on the eventfd for %s, no bell came in 5 s",
			      events & POLLIN ? "data" : "room");
		} else {
			poll(p, 3, 5000);         /* poll skips fd -1 */
			if (p[0].revents)
				rb2_stream_heard(s, RB2_STREAM_HEARD_SOCK);
		}
		rb2_stream_disarm(s, sev);
	}
}

static ssize_t
send_all(struct rb2_stream *s, int bell, const uint8_t *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		/* Up to three iovecs of random lengths. */
		struct iovec iov[3];
		size_t r = 1 + rnd(200000);   /* once: RTE_MIN_SZ evaluates twice */
		size_t want = RTE_MIN_SZ(len - done, r), a = rnd((uint32_t)want + 1),
		       b = rnd((uint32_t)(want - a) + 1);
		ssize_t n;

		iov[0] = (struct iovec){ (void *)(buf + done), a };
		iov[1] = (struct iovec){ (void *)(buf + done + a), b };
		iov[2] = (struct iovec){ (void *)(buf + done + a + b), want - a - b };
		n = rb2_stream_send(s, iov, 3);
		if (n == -EAGAIN) {
			wait_for(s, bell, POLLOUT);
			continue;
		}
		if (n < 0)
			return n;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/* Read @len bytes (or to the end) in random pieces; count bytes off the
 * pattern. @end, if not NULL: the read that stopped it short (0, the end,
 * or an error), else 1. */
static size_t
recv_check(struct rb2_stream *s, int bell, size_t len, int dir, size_t *bad, ssize_t *end)
{
	static __thread uint8_t buf[300000];
	size_t got = 0;
	ssize_t n = 1;

	while (got < len) {
		struct iovec iov = { buf, 1 + rnd(sizeof(buf) - 1) };

		n = rb2_stream_recv(s, &iov, 1, 0);
		if (n == -EAGAIN) {
			wait_for(s, bell, POLLIN);
			continue;
		}
		if (n <= 0)
			break;
		for (ssize_t i = 0; i < n; i++)
			*bad += buf[i] != pat(got + (size_t)i, dir);
		got += (size_t)n;
	}
	if (end != NULL)
		*end = n > 0 ? 1 : n;
	return got;
}

/*
 * A writer ahead of a reader that does not read (the server sleeps first):
 * small writes use up the reader's credits (one a publication, 64) long
 * before they fill its ring. Across hosts with batching, as rb2-run's
 * streams run, no write may wait for them, and the writer, waiting for the
 * answer, sleeps until their return wakes it rather than looking again at
 * full speed.
 */
#define AHEAD_WRITES 600
#define AHEAD_SIZE 16
#define AHEAD_READER_SLEEP_US 1500000

static uint64_t
now_us(int thread_cpu)
{
	struct timespec t;

	clock_gettime(thread_cpu ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000 + (uint64_t)t.tv_nsec / 1000;
}

static void
ahead_writer(struct rb2_stream *s, int bell)
{
	uint64_t worst = 0, t0, c0, wall, cpu, wwall, wcpu;
	struct rb2_stream_stats st;
	uint8_t m[AHEAD_SIZE];
	char ack = 0;
	ssize_t n;

	wwall = now_us(0);
	wcpu = now_us(1);
	for (uint32_t i = 0; i < AHEAD_WRITES; i++) {
		struct iovec iov = { m, sizeof(m) };

		for (uint32_t j = 0; j < AHEAD_SIZE; j++)
			m[j] = pat((uint64_t)i * AHEAD_SIZE + j, 2);
		for (;;) {
			t0 = now_us(0);
			n = rb2_stream_send(s, &iov, 1);
			if (now_us(0) - t0 > worst)
				worst = now_us(0) - t0;
			if (n != -EAGAIN)
				break;
			wait_for(s, bell, POLLOUT);      /* one host: a ring of 2047 slots */
		}
		CHECK(n == AHEAD_SIZE, "client: write %u of %u ahead of the reader: %zd", i + 1,
		      AHEAD_WRITES, n);
	}
	wwall = now_us(0) - wwall;
	wcpu = now_us(1) - wcpu;
	t0 = now_us(0);
	c0 = now_us(1);
	for (;;) {
		struct iovec iov = { &ack, 1 };

		n = rb2_stream_recv(s, &iov, 1, 0);
		if (n != -EAGAIN)
			break;
		wait_for(s, bell, POLLIN);
	}
	wall = now_us(0) - t0;
	cpu = now_us(1) - c0;
	CHECK(n == 1 && ack == 'k', "client: the reader's answer: %zd", n);
	rb2_stream_stats(s, &st);
	printf("client: %u writes ahead of the reader took %" PRIu64 " ms (%" PRIu64 " ms of "
	       "CPU), the longest %" PRIu64 " us; %" PRIu64 " ms waiting for its answer took %"
	       PRIu64 " ms of CPU; %" PRIu64 " credit waits, %" PRIu64 " sleeps with a "
	       "publication held\n", AHEAD_WRITES, wwall / 1000, wcpu / 1000, worst, wall / 1000,
	       cpu / 1000, st.credit_waits, st.held_sleeps);
	if (!batch) {
		/* One host: writes wait for room, not credits. A remote pair
		 * on shm has no doorbell to sleep on for them. */
		if (!verbs)
			return;
		/* Each write publishes, so one waits for the credits the
		 * sleeping reader holds: asleep until their return rings. */
		CHECK(st.credit_waits > 0 && wwall > AHEAD_READER_SLEEP_US / 2,
		      "client: the writes never waited for the reader's credits (%" PRIu64
		      " ms): the check did not test what it is for", wwall / 1000);
		CHECK(wcpu < wwall / 4, "client: %" PRIu64 " ms of CPU in %" PRIu64 " ms of writes: "
		      "a write waited for credits at full speed", wcpu / 1000, wwall / 1000);
		return;
	}
	CHECK(st.credit_waits > 0, "client: the reader's credits never ran out: the check "
	      "did not test what it is for");
	CHECK(st.held_sleeps > 0, "client: never slept with a publication held for credits");
	CHECK(worst < 200000, "client: a write took %" PRIu64 " us: it waited for credits",
	      worst);
	CHECK(cpu < wall / 4, "client: %" PRIu64 " ms of CPU in %" PRIu64 " ms waiting: it "
	      "looked again instead of sleeping", cpu / 1000, wall / 1000);
}

static void
ahead_reader(struct rb2_stream *s, int bell)
{
	size_t bad = 0, got;
	struct iovec iov = { (void *)"k", 1 };

	usleep(AHEAD_READER_SLEEP_US);
	got = recv_check(s, bell, (size_t)AHEAD_WRITES * AHEAD_SIZE, 2, &bad, NULL);
	CHECK(got == (size_t)AHEAD_WRITES * AHEAD_SIZE && bad == 0,
	      "server: %zu of %u bytes written ahead, %zu bad", got,
	      AHEAD_WRITES * AHEAD_SIZE, bad);
	CHECK(rb2_stream_send(s, &iov, 1) == 1, "server: the answer");
}

static int
client(struct rb2_stream *s, int bell)
{
	struct rb2_stream_stats st;
	uint8_t *buf = malloc(BULK);
	size_t bad = 0, got;
	char tiny[64];
	ssize_t n;

	watch(s, 0);
	if (s == NULL || buf == NULL) {
		printf("FAILED: client open: %s\n", strerror(errno));
		return 1;
	}
	for (size_t i = 0; i < BULK; i++)
		buf[i] = pat(i, 0);
	CHECK(send_all(s, bell, buf, BULK) == BULK, "client: bulk send");
	got = recv_check(s, bell, BULK, 1, &bad, NULL);
	CHECK(got == BULK && bad == 0, "client: %zu of %u bytes back, %zu bad", got, BULK, bad);
	ahead_writer(s, bell);
	/* Boundaries: three writes of 10, then half-close. */
	for (int k = 0; k < 3; k++) {
		struct iovec iov = { (void *)"0123456789", 10 };

		CHECK(rb2_stream_send(s, &iov, 1) == 10, "client: a write of 10");
	}
	rb2_stream_shutdown_wr(s);
	{
		struct iovec iov = { tiny, 1 };

		CHECK(rb2_stream_send(s, &iov, 1) == -EPIPE, "client: a write after SHUT_WR: EPIPE");
	}
	/* The server still talks after our SHUT_WR, then closes. */
	n = 0;
	for (;;) {
		struct iovec iov = { tiny + n, sizeof(tiny) - (size_t)n };
		ssize_t r = rb2_stream_recv(s, &iov, 1, 0);

		if (r == -EAGAIN) {
			wait_for(s, bell, POLLIN);
			continue;
		}
		if (r <= 0)
			break;
		n += r;
	}
	CHECK(n == 5 && memcmp(tiny, "after", 5) == 0, "client: %zd bytes after half-close", n);
	rb2_stream_stats(s, &st);
	printf("client: %llu bytes out, %llu in, %llu bells rung, %llu sleeps\n",
	       (unsigned long long)st.bytes_out, (unsigned long long)st.bytes_in,
	       (unsigned long long)st.bells_rung, (unsigned long long)st.sleeps);
	CHECK(st.sleeps > 0, "client: never slept, so the bell went untested");
	if (batch) {
		printf("client: %llu writes held back, %llu flushes of them\n",
		       (unsigned long long)st.held, (unsigned long long)st.flushes);
	}
	rb2_stream_close(s);
	free(buf);
	return fails != 0;
}

static int
server(struct rb2_stream *s, int bell)
{
	uint8_t *buf = malloc(BULK);
	char b[32], p[32];
	size_t bad = 0, got;
	struct iovec iov;
	ssize_t n;

	watch(s, 1);
	if (s == NULL || buf == NULL) {
		printf("FAILED: server open: %s\n", strerror(errno));
		return 1;
	}
	got = recv_check(s, bell, BULK, 0, &bad, NULL);
	CHECK(got == BULK && bad == 0, "server: %zu of %u bytes, %zu bad", got, BULK, bad);
	for (size_t i = 0; i < BULK; i++)
		buf[i] = pat(i, 1);
	CHECK(send_all(s, bell, buf, BULK) == BULK, "server: bulk send");
	ahead_reader(s, bell);
	/* The three writes of 10 are there: read 25, then 5. */
	while (rb2_stream_nread(s) < 30 && !(rb2_stream_poll(s) & POLLRDHUP))
		wait_for(s, bell, POLLIN);
	CHECK(rb2_stream_nread(s) == 30, "server: FIONREAD %zu, not 30", rb2_stream_nread(s));
	iov = (struct iovec){ p, 25 };
	CHECK(rb2_stream_recv(s, &iov, 1, 1) == 25, "server: peek 25");
	iov = (struct iovec){ b, 25 };
	CHECK(rb2_stream_recv(s, &iov, 1, 0) == 25 && memcmp(b, p, 25) == 0 &&
	      memcmp(b, "0123456789012345678901234", 25) == 0, "server: read 25 = peek 25");
	iov = (struct iovec){ b, sizeof(b) };
	n = rb2_stream_recv(s, &iov, 1, 0);
	CHECK(n == 5 && memcmp(b, "56789", 5) == 0, "server: then 5, got %zd", n);
	/* The end may still be on its way (across hosts, a mark behind the
	 * data): wait for it, as a blocking read does. */
	while (!(rb2_stream_poll(s) & POLLRDHUP))
		wait_for(s, bell, POLLIN);
	n = rb2_stream_recv(s, &iov, 1, 0);
	CHECK(n == 0, "server: then the end (0), got %zd", n);
	CHECK(rb2_stream_poll(s) & POLLRDHUP, "server: POLLRDHUP after the client's SHUT_WR");
	iov = (struct iovec){ (void *)"after", 5 };
	CHECK(rb2_stream_send(s, &iov, 1) == 5, "server: a write after the client's SHUT_WR");
	rb2_stream_close(s);
	free(buf);
	return fails != 0;
}

/*
 * A writer that ends ahead of a reader that does not read (across hosts):
 * 200 writes of 16 B, each its own publication, use up the reader's 64
 * credits, and the writer's process ends, in one of three ways (enum
 * ahead_end). The reader, awake later, must get every byte and then the
 * end, or a reset: never the end after part of them, which is what a
 * close that gave up on its unpublished bytes, or an exit with the
 * stream open, made of them without a word.
 */
#define CLOSE_AHEAD_WRITES 200

enum ahead_end {
	AHEAD_CLOSE,     /* rb2_stream_close(); the reader sleeps past its 10 s */
	AHEAD_BEHIND,    /* rb2-run's close behind a slow reader: the first step
			    returns at once, the rest on a duplicate bell */
	AHEAD_EXIT,      /* rb2_stream_end_at_exit() (rb2-run's exit), read within it */
	AHEAD_EXIT_LATE, /* rb2_stream_end_at_exit() with 300 ms: out of time, a reset */
	AHEAD_DIE,       /* neither: the reader must get a reset */
};

static const char *const ahead_end_name[] = {
	[AHEAD_CLOSE] = "close ahead",
	[AHEAD_BEHIND] = "close behind",
	[AHEAD_EXIT] = "exit ahead",
	[AHEAD_EXIT_LATE] = "exit ahead, out of time",
	[AHEAD_DIE] = "die ahead",
};

static int
end_ahead_writer(struct rb2_stream *s, int bell, enum ahead_end how)
{
	const char *what = ahead_end_name[how];
	uint8_t m[AHEAD_SIZE];

	if (s == NULL) {
		printf("FAILED: %s: the writer's open: %s\n", what, strerror(errno));
		return 1;
	}
	for (uint32_t i = 0; i < CLOSE_AHEAD_WRITES; i++) {
		struct iovec iov = { m, sizeof(m) };
		ssize_t n;

		for (uint32_t j = 0; j < AHEAD_SIZE; j++)
			m[j] = pat((uint64_t)i * AHEAD_SIZE + j, 3);
		while ((n = rb2_stream_send(s, &iov, 1)) == -EAGAIN)
			wait_for(s, bell, POLLIN);
		CHECK(n == AHEAD_SIZE, "%s: write %u: %zd", what, i + 1, n);
		if (batch)
			(void)rb2_stream_flush(s);
	}
	if (how == AHEAD_BEHIND) {
		uint64_t t0 = now_us(0);
		int w = rb2_stream_close_would_wait(s), dup_bell;
		long ms = (long)((now_us(0) - t0) / 1000);

		CHECK(w == 1, "%s: the close would not wait for a reader out of credits", what);
		CHECK(ms < 500, "%s: its first step took %ld ms: it waited for a credit", what, ms);
		dup_bell = dup(bell);
		rb2_stream_move_bell(s, dup_bell);
		close(bell);
		bell = dup_bell;
	}
	if (how == AHEAD_BEHIND) {
		/* As rb2-run's closer: step it until the close would not
		 * wait, the landing of the end included; only then close. */
		uint64_t t0 = now_us(0);
		unsigned int steps = 0;
		int r;

		while ((r = rb2_stream_close_step(s)) != 0 && now_us(0) - t0 < 30000000) {
			steps++;
			usleep(r == 2 ? 100 : 1000);
		}
		printf("%s: the close stepped %u times in %" PRIu64 " ms\n", what, steps,
		       (now_us(0) - t0) / 1000);
		CHECK(r == 0, "%s: still stepping after 30 s", what);
	}
	if (how == AHEAD_CLOSE || how == AHEAD_BEHIND)
		rb2_stream_close(s);
	else if (how == AHEAD_EXIT)
		CHECK(rb2_stream_end_at_exit(s, 10000) == 0, "%s: the end did not go", what);
	if (how == AHEAD_EXIT_LATE) {
		uint64_t t0 = now_us(0);
		int r = rb2_stream_end_at_exit(s, 300);
		long ms = (long)((now_us(0) - t0) / 1000);

		printf("%s: the exit's end returned %d after %ld ms\n", what, r, ms);
		CHECK(r == -ETIMEDOUT, "%s: %d, not -ETIMEDOUT, with the reader asleep", what, r);
		CHECK(ms < 1000, "%s: it took %ld ms for a bound of 300", what, ms);
	}
	close(bell);                     /* the process's end, as at its exit */
	return fails != 0;
}

static void
end_ahead_reader(struct rb2_stream *s, int bell, enum ahead_end how)
{
	const char *what = ahead_end_name[how];
	const size_t total = (size_t)CLOSE_AHEAD_WRITES * AHEAD_SIZE;
	size_t got, bad = 0;
	ssize_t n;

	if (s == NULL) {
		printf("FAILED: %s: the reader's open: %s\n", what, strerror(errno));
		fails++;
		return;
	}
	/* Past the close's 10 s without progress; within the exit's wait and
	 * the close's behind it. */
	usleep(how == AHEAD_CLOSE ? 16000000 : 1000000);
	got = recv_check(s, bell, SIZE_MAX, 3, &bad, &n);   /* to the end */
	printf("%s: the reader got %zu of %zu bytes, then %s\n", what, got, total,
	       n == 0 ? "the end" : strerror((int)-n));
	CHECK(bad == 0, "%s: %zu bytes off the pattern", what, bad);
	CHECK((n == 0 && got == total) || n == -ECONNRESET,
	      "%s: the end after %zu of %zu bytes, with no reset: the rest was lost "
	      "without a word", what, got, total);
	/* The exit, and the close behind, send everything to a reader that
	 * reads; a process that died leaves a reset, whatever arrived. */
	CHECK((how != AHEAD_EXIT && how != AHEAD_BEHIND) || n == 0, "%s: %s, not the end", what,
	      strerror((int)-n));
	CHECK((how != AHEAD_DIE && how != AHEAD_EXIT_LATE) || n == -ECONNRESET,
	      "%s: the end, not a reset", what);
	rb2_stream_close(s);
}
/* remote-shm: the client on a thread of its own. */
struct end {
	struct rb2_stream *s;
	int bell;
	struct rb2_noeal_arena *a;
};

static void *
client_thread(void *arg)
{
	struct end *e = arg;

	rb2_noeal_arena_use(e->a);
	rng = 777;
	client(e->s, e->bell);
	return NULL;
}

static struct rb2_stream *open_verbs(int is_client, int bell, struct rb2_xport **xp);

/* The writer that ends ahead, on a stream pair of its own (across hosts
 * with batching, as rb2-run's: without it each write would wait up to a
 * second for the credits, and the end would come after the reader woke). */
static void
end_ahead(enum ahead_end how)
{
	struct rb2_xport *xp = NULL;
	int sv[2], status = 0;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
		printf("FAILED: %s: socketpair: %s\n", ahead_end_name[how], strerror(errno));
		fails++;
		return;
	}
	pid = fork();
	if (pid == 0) {
		struct rb2_xport *cxp = NULL;

		/* An arena of its own, as an rb2-run process has for its
		 * streams to other hosts: what an exit leaves in it goes with
		 * the process, not into the test's. */
		close(sv[1]);
		if (rb2_noeal_arena_create(2 * RB2_STREAM_ARENA_SIZE,
					   RB2_NOEAL_ARENA_ADDR + (1ull << 36), 0) == NULL) {
			printf("FAILED: %s: the writer's arena: %s\n", ahead_end_name[how],
			       strerror(errno));
			_exit(1);
		}
		_exit(end_ahead_writer(open_verbs(1, sv[0], &cxp), sv[0], how));
	}
	close(sv[0]);
	end_ahead_reader(open_verbs(0, sv[1], &xp), sv[1], how);
	close(sv[1]);
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: the writer failed",
	      ahead_end_name[how]);
	if (xp != NULL)
		rb2_xport_close(xp);
}

/* A process's end over verbs: its transport, then the stream over @bell. */
static struct rb2_stream *
open_verbs(int is_client, int bell, struct rb2_xport **xp)
{
	struct rb2_stream *s;

	*xp = rb2_xport_open("verbs", "cm=0");
	if (*xp == NULL)
		return NULL;
	s = rb2_stream_open_remote(*xp, is_client, bell, 10000);
	if (s != NULL && batch && rb2_stream_batch(s, 1) != 0) {
		printf("FAILED: batching refused over verbs\n");
		fails++;
	}
	return s;
}

/* The names a peer's bells are spared by (rb2_stream_wait_id()). */
static void
check_wait_ids(void)
{
	uint64_t a = rb2_stream_wait_id(), b = rb2_stream_wait_id();
	int fd[2], status = 0;
	uint64_t kid;
	pid_t pid;

	CHECK(a != 0 && b != 0 && a != b, "wait ids %#lx then %#lx", (unsigned long)a,
	      (unsigned long)b);
	CHECK(a >> 42 == (uint64_t)getpid(), "wait id %#lx does not carry pid %d",
	      (unsigned long)a, (int)getpid());
	if (pipe(fd) != 0)
		return;
	pid = fork();
	if (pid == 0) {
		kid = rb2_stream_wait_id();
		_exit(write(fd[1], &kid, sizeof(kid)) == sizeof(kid) ? 0 : 1);
	}
	CHECK(read(fd[0], &kid, sizeof(kid)) == sizeof(kid) && kid >> 42 == (uint64_t)pid,
	      "a fork child's wait id %#lx does not carry its pid %d", (unsigned long)kid,
	      (int)pid);
	waitpid(pid, &status, 0);
	close(fd[0]);
	close(fd[1]);
}

int
main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "shm";
	struct rb2_noeal_arena *a = rb2_noeal_arena_create(2 * RB2_STREAM_ARENA_SIZE, 0, 0);
	struct rb2_xport *xp = NULL;
	struct rb2_stream *s;
	int sv[2], status = 0;
	pid_t pid;

	setvbuf(stdout, NULL, _IOLBF, 0);
	check_wait_ids();
	if (a == NULL || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
		printf("FAILED: arena or socketpair: %s\n", strerror(errno));
		return 1;
	}
	if (strcmp(mode, "remote-verbs") == 0) {
		struct rb2_xport *probe = rb2_xport_open("verbs", "cm=0");

		if (probe == NULL) {
			printf("SKIP: no RDMA device (verbs): run it in the verbs guest "
			       "(tests/verbs-vm/run.sh)\n");
			return 77;
		}
		rb2_xport_close(probe);
		verbs = 1;
		batch = getenv("RB2_TEST_BATCH") == NULL || strcmp(getenv("RB2_TEST_BATCH"), "0") != 0;
	}
	if (strcmp(mode, "remote-shm") == 0) {
		struct end c = { .bell = sv[0], .a = a };
		pthread_t t;

		xp = rb2_xport_open("shm", NULL);
		if (xp == NULL || rb2_stream_pair_remote(xp, sv[0], sv[1], &c.s, &s) != 0) {
			printf("FAILED: a remote pair on shm: %s\n", strerror(errno));
			return 1;
		}
		/* No completion wakes on shm: nothing would bound a hold. */
		CHECK(rb2_stream_batch(s, 1) == -ENOTSUP, "batching taken on shm");
		pthread_create(&t, NULL, client_thread, &c);
		server(s, sv[1]);
		pthread_join(t, NULL);
		rb2_xport_close(xp);
	} else {
		int efd[2] = { -1, -1 }, *bells = NULL;

		if (strcmp(mode, "shm-efd") == 0) {
			efd[0] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
			efd[1] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
			if (efd[0] < 0 || efd[1] < 0) {
				printf("FAILED: eventfd: %s\n", strerror(errno));
				return 1;
			}
			bells = efd;
			efd_only = 1;
		}
		pid = fork();
		if (pid == 0) {
			close(sv[1]);
			s = strcmp(mode, "remote-verbs") != 0 ?
				rb2_stream_open("t1", 1, sv[0], bells, 5000) :
				open_verbs(1, sv[0], &xp);
			if (s == NULL) {
				printf("FAILED: client open: %s\n", strerror(errno));
				_exit(1);
			}
			_exit(client(s, sv[0]));
		}
		close(sv[0]);
		s = strcmp(mode, "remote-verbs") != 0 ? rb2_stream_open("t1", 0, sv[1], bells, 5000) :
			open_verbs(0, sv[1], &xp);
		if (s == NULL)
			printf("FAILED: server open: %s\n", strerror(errno));
		else
			fails += server(s, sv[1]);
		waitpid(pid, &status, 0);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the client failed");
		if (xp != NULL)
			rb2_xport_close(xp);
		if (batch) {
			end_ahead(AHEAD_CLOSE);
			end_ahead(AHEAD_BEHIND);
			end_ahead(AHEAD_EXIT);
			end_ahead(AHEAD_EXIT_LATE);
			end_ahead(AHEAD_DIE);
		}
	}
	CHECK(rb2_noeal_arena_zones(a) == 0, "%u zones left in the arena after both closed",
	      rb2_noeal_arena_zones(a));
	rb2_noeal_arena_detach(a);
	printf("stream (%s): %d failure(s)\n", mode, fails);
	return fails != 0;
}
