/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Cross-process: a DPDK primary (the receiver) starts a secondary of itself
 * (the sender); they find the channel by name in shared hugepage memzones and
 * exchange 1 million messages, exactly once and in order, in each shm mode.
 * Then a sender killed mid-stream (SIGKILL, no clean-up): the receiver must
 * deliver everything published before the kill, then fail with
 * -ECONNRESET, not wait forever. Either way both rings are freed at the end,
 * the dead sender's by the surviving receiver.
 *
 *   test_multiprocess                    the tests above
 *   test_multiprocess --kill-stress N    the kill test N times, under CPU load
 *                                        (one busy process per CPU), each time
 *                                        with another message count, shm mode
 *                                        and sync policy (the long suite)
 *
 * Connections across processes (lib/conn): two client applications, each a
 * secondary with its own channel pair to the primary, open 200 connections
 * each and send interleaved messages of random sizes. One is SIGKILLed
 * half-way, connections open: all of its connections must fail within a bounded time and be
 * closed with nothing left open, while the other's deliver every message
 * exactly once and in order, and close cleanly.
 *
 * DPDK multi-process needs hugepages. Without them this test skips (exit 77)
 * and says how to reserve them; where they can be reserved (CI runs as root
 * and the README's test command reserves them) it runs.
 *
 * Built a second time with RB2_TEST_NOEAL as test_multiprocess_noeal: the
 * same tests between processes that run no EAL (lib/noeal, rb2-run's
 * application side). The primary makes an arena instead of starting the
 * EAL, and hands its children the arena's fd instead of a file prefix;
 * everything else is the same code. That build needs no hugepages.
 */

#include <errno.h>
#include <glob.h>
#include <inttypes.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rte_errno.h>
#include <rte_memzone.h>

#include <rb2_chan.h>
#include <rb2_conn.h>
#ifdef RB2_TEST_NOEAL
#include <fcntl.h>

#include <rb2_noeal.h>
#else
#include <rte_eal.h>
#include <rte_lcore.h>

#include <rb2_lcore.h>
#endif

#include "rb2_chan_traffic.h"
#include "rb2_conn_traffic.h"
#include <rb2_xport.h>

#define SKIP 77
#define MSGS 1000000ull
#define KILLED_AFTER 100000ull /* messages a killed sender publishes first */

extern char **environ;


/* Channel parameters of a run: 128-byte slots, and a sync policy by name
 * ("rb2", or one of the paper's designs). */
static void
params_of(struct rb2_chan_params *p, const char *preset)
{
	rb2_chan_params_init(p);
	p->slot_size = 128;
	if (rb2_chan_params_preset(p, preset) != 0)
		abort();
}

/* The secondary: send @count messages, flush, then either die (SIGKILL: no
 * destroy, no EAL clean-up, a crash) or wait until all are consumed. */
static int
run_sender(const char *spec, const char *name, const char *preset, uint64_t count,
	   int die)
{
	struct rb2_xport *xp = rb2_xport_open_spec(spec);
	struct rb2_chan_params p;
	struct rb2_tx *tx;
	int ret;

	params_of(&p, preset);
	tx = xp ? rb2_tx_create(name, xp, &p) : NULL;
	if (tx == NULL || (ret = rb2_tx_connect(tx, name, 20000)) != 0) {
		fprintf(stderr, "secondary: cannot connect '%s': %s\n", name,
			rte_strerror(rte_errno));
		return 1;
	}
	ret = chan_traffic_send(tx, count);
	if (ret != 0) {
		fprintf(stderr, "secondary: send: %s\n", strerror(-ret));
		return 1;
	}
	if (die)
		raise(SIGKILL);     /* everything is published: now crash */
	/* The receiver's region outlives us; wait until it has everything. */
	while ((ret = rb2_tx_drained(tx)) == 0)
		;
	if (ret < 0) {
		fprintf(stderr, "secondary: waiting for the receiver: %s\n", strerror(-ret));
		return 1;
	}
	rb2_tx_destroy(tx);
	rb2_xport_close(xp);
	return 0;
}

/*
 * The primary: receive from a secondary that sends @count messages under
 * @preset. With @die, the sender is SIGKILLed right after flushing them: the
 * receiver must deliver every one (the sender published them all), then
 * report the sender gone (-ECONNRESET). @quiet: print only failures.
 */
static int
run_receiver(const char *self, const char *prefix, const char *spec, const char *name,
	     const char *preset, uint64_t count, int die, int quiet)
{
	struct rb2_xport *xp = rb2_xport_open_spec(spec);
	struct rb2_chan_params p;
	struct rb2_rx *rx;
	struct rb2_msg m[32];
	uint64_t got = 0, bad = 0;
	char cnt[24];
	char *args[] = {(char *)self, "--secondary", (char *)prefix, (char *)spec,
			(char *)name, (char *)preset, cnt, die ? "die" : "live", NULL};
	pid_t pid;
	int status, n = 0, ok;
	time_t t0;

	snprintf(cnt, sizeof(cnt), "%" PRIu64, count);
	params_of(&p, preset);
	rx = xp ? rb2_rx_create(name, xp, &p) : NULL;
	if (rx == NULL) {
		fprintf(stderr, "primary: rx_create: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	if (posix_spawn(&pid, self, NULL, NULL, args, environ) != 0) {
		perror("posix_spawn");
		return 1;
	}
	if (rb2_rx_connect(rx, name, 20000) != 0) {
		waitpid(pid, &status, 0);
		return 1;
	}
	t0 = time(NULL);
	n = chan_traffic_recv(rx, count, die, 60, &got, &bad);
	if (die) {
		ok = got == count && bad == 0 && n == -ECONNRESET;
		if (!quiet || !ok)
			printf("%s %s%s: sender killed after publishing %" PRIu64 " messages: %"
			       PRIu64 " delivered, %" PRIu64 " bad, then %s after %ld s\n", spec,
			       preset, ok ? "" : " FAILED", count, got, bad,
			       n < 0 ? strerror(-n) : "no error", (long)(time(NULL) - t0));
		waitpid(pid, &status, 0);
		rb2_rx_destroy(rx);
		rb2_xport_close(xp);
		ok &= chan_traffic_rings_freed(name);
		return ok ? 0 : 1;
	}
	/* Keep polling so the idle push hands the last slots back. */
	for (int i = 0; i < 1000 && waitpid(pid, &status, WNOHANG) == 0; i++) {
		rb2_rx_peek_burst(rx, m, 32);
		usleep(1000);
	}
	if (waitpid(pid, &status, 0) == pid && (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
		fprintf(stderr, "primary: the secondary failed (status %d)\n", status);
		bad++;
	}
	printf("%s %s: %" PRIu64 " messages across processes, %" PRIu64 " bad\n", spec, preset,
	       got, bad);
	rb2_rx_destroy(rx);
	rb2_xport_close(xp);
	return got == count && bad == 0 && chan_traffic_rings_freed(name) ? 0 : 1;
}

/* One busy process per CPU until killed: the load under which a race shows. */
static void
start_load(pid_t *hogs, int n)
{
	for (int i = 0; i < n; i++) {
		hogs[i] = fork();
		if (hogs[i] == 0) {
			volatile uint64_t x = 0;

			for (;;)
				x++;
		}
	}
}

static void
stop_load(pid_t *hogs, int n)
{
	for (int i = 0; i < n; i++) {
		if (hogs[i] > 0) {
			kill(hogs[i], SIGKILL);
			waitpid(hogs[i], NULL, 0);
		}
	}
}

/*
 * The kill test @reps times under CPU load, each with a random message count
 * (1 to 200 000), shm mode and sync policy: every repetition must deliver
 * exactly what the sender published before it was killed.
 */
static int
kill_stress(const char *self, const char *prefix, unsigned int reps)
{
	static const char *const specs[] = {"shm,mode=loadstore", "shm,mode=copy"};
	static const char *const presets[] = {"rb2", "l5", "farm", "socksdirect"};
	uint64_t seed = 0x5eed ^ (uint64_t)time(NULL), total = 0;
	int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN), failed = 0;
	pid_t hogs[64] = {0};
	time_t t0 = time(NULL);

	ncpu = ncpu < 1 ? 1 : ncpu > 64 ? 64 : ncpu;
	printf("kill stress: %u repetitions, %d busy processes, seed %" PRIu64 "\n", reps, ncpu,
	       seed);
	start_load(hogs, ncpu);
	for (unsigned int r = 0; r < reps; r++) {
		char name[16];
		uint64_t count;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		count = 1 + (seed >> 33) % 200000;
		snprintf(name, sizeof(name), "ks%u", r);
		if (run_receiver(self, prefix, specs[(seed >> 20) & 1], name,
				 presets[(seed >> 24) % 4], count, 1, 1) != 0)
			failed++;
		total += count;
		if ((r + 1) % 50 == 0)
			printf("kill stress: %u/%u, %d failed, %ld s\n", r + 1, reps, failed,
			       (long)(time(NULL) - t0));
		fflush(stdout);
	}
	stop_load(hogs, ncpu);
	printf("kill stress: %u repetitions, %" PRIu64 " messages, %d failed, %ld s\n", reps,
	       total, failed, (long)(time(NULL) - t0));
	return failed == 0 ? 0 : 1;
}

/*
 * A secondary must map the primary's memory at the same addresses. Left to
 * chance, the primary's range sometimes collides with what ASLR (or ASan's
 * shadow memory) gave the secondary; --base-virtaddr puts it where neither
 * maps anything (ASan leaves [0x10007fff8000, 0x7fffffffffff) to the app).
 */
/* ---- connections across processes -------------------------------------- */

#define CONN_N 200          /* connections per client */
#define CONN_PER 100        /* messages per connection */
#define CONN_KILL_AT 50     /* the dying client stops after this many each */

/* Make an endpoint over channels "cc<k>" (client to server) and "cs<k>". */
static struct rb2_conn_ep *
conn_ep(struct rb2_xport *xp, unsigned int k, int server)
{
	struct rb2_chan_params p;
	struct rb2_conn_ep_params cp;
	char up[16], down[16], name[16];
	struct rb2_tx *tx;
	struct rb2_rx *rx;

	rb2_chan_params_init(&p);
	p.slots = 4096;
	snprintf(up, sizeof(up), "cc%u", k);
	snprintf(down, sizeof(down), "cs%u", k);
	rb2_conn_ep_params_init(&cp);
	cp.window = 16384;
	if (server) {
		rx = rb2_rx_create(up, xp, &p);
		tx = rb2_tx_create(down, xp, &p);
		if (rx == NULL || tx == NULL || rb2_rx_connect(rx, up, 20000) != 0 ||
		    rb2_tx_connect(tx, down, 20000) != 0)
			return NULL;
	} else {
		tx = rb2_tx_create(up, xp, &p);
		rx = rb2_rx_create(down, xp, &p);
		if (rx == NULL || tx == NULL || rb2_tx_connect(tx, up, 20000) != 0 ||
		    rb2_rx_connect(rx, down, 20000) != 0)
			return NULL;
	}
	snprintf(name, sizeof(name), "%s%u", server ? "srv" : "cli", k);
	return rb2_conn_ep_create(name, tx, rx, &cp);
}

/* A client application (secondary): CONN_N connections, CONN_PER messages
 * each, sent in random order; with @die, CONN_KILL_AT each, then wait for
 * the server to SIGKILL it. Otherwise half-close every connection and wait
 * for the server's close. */
static int
run_conn_client(unsigned int k, int die)
{
	struct rb2_xport *xp = rb2_xport_open("shm", NULL);
	static struct traffic_tx t;
	struct rb2_conn_ep *ep = xp ? conn_ep(xp, k, 0) : NULL;
	uint32_t open_left = CONN_N;
	const char *why = "";
	time_t t0 = time(NULL);
	int ret;

	if (ep == NULL) {
		fprintf(stderr, "client %u: no endpoint: %s\n", k, rte_strerror(rte_errno));
		return 1;
	}
	t.conns = CONN_N;
	t.rng = 77 + k;
	for (uint32_t i = 0; i < CONN_N; i++)
		t.cd[i] = rb2_conn_connect(ep, 7);
	ret = traffic_send(ep, &t, die ? CONN_KILL_AT : CONN_PER, 60, &why);
	if (ret < 0) {
		fprintf(stderr, "client %u: send: %s (%s)\n", k, strerror(-ret), why);
		return 1;
	}
	if (die) {
		/* Wait, connections open, for the server's SIGKILL. */
		while (time(NULL) - t0 < 60)
			rb2_conn_ep_poll(ep);
		return 1;
	}
	for (uint32_t i = 0; i < CONN_N; i++)
		rb2_conn_shutdown(ep, t.cd[i]);
	/* The server closes each connection once it has read everything. */
	while (open_left > 0 && time(NULL) - t0 < 60) {
		static uint8_t buf[16];
		int ready[32];
		int n = rb2_conn_ep_ready(ep, ready, 32);

		for (int j = 0; j < n; j++)
			if (rb2_conn_recv(ep, ready[j], buf, sizeof(buf)) == 0) {
				rb2_conn_close(ep, ready[j]);
				open_left--;
			}
	}
	rb2_conn_ep_destroy(ep);
	rb2_xport_close(xp);
	if (open_left != 0)
		fprintf(stderr, "client %u: %u connections not closed by the server after "
			"%ld s\n", k, open_left, (long)(time(NULL) - t0));
	return open_left == 0 ? 0 : 1;
}

struct conn_server_side {
	struct rb2_conn_ep *ep;
	pid_t pid;
	struct traffic_rx r;
	uint32_t failed;
	double dead_at, failed_at;
};

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * The primary: two clients; it kills one (SIGKILL) once it has all that
 * one sent. The killed one's connections fail within 2 s, and all close;
 * the other's deliver exactly once, in order, and close.
 */
static int
run_conn_server(const char *self, const char *prefix)
{
	struct rb2_xport *xp = rb2_xport_open("shm", NULL);
	static struct conn_server_side side[2];
	struct rb2_conn_ep_stats st[2];
	double t0 = now_s();
	int ok, status;

	for (unsigned int k = 0; k < 2; k++) {
		char kk[4];
		char *args[] = {(char *)self, "--conn-client", (char *)prefix, kk,
				k == 1 ? "die" : "live", NULL};

		snprintf(kk, sizeof(kk), "%u", k);
		if (posix_spawn(&side[k].pid, self, NULL, NULL, args, environ) != 0) {
			perror("posix_spawn");
			return 1;
		}
	}
	for (unsigned int k = 0; k < 2; k++) {
		side[k].ep = xp ? conn_ep(xp, k, 1) : NULL;
		if (side[k].ep == NULL || rb2_conn_listen(side[k].ep, 7, CONN_N) != 0) {
			fprintf(stderr, "primary: endpoint %u: %s\n", k, rte_strerror(rte_errno));
			return 1;
		}
	}
	while (now_s() - t0 < 60) {
		for (unsigned int k = 0; k < 2; k++) {
			traffic_serve(side[k].ep, 7, &side[k].r, NULL, NULL);
			if (side[k].r.ep_err != 0 && side[k].failed_at == 0)
				side[k].failed_at = now_s();
		}
		/* Everything the dying client sent is in: kill it now. */
		if (side[1].dead_at == 0 && side[1].r.delivered == (uint64_t)CONN_N * CONN_KILL_AT) {
			kill(side[1].pid, SIGKILL);
			side[1].dead_at = now_s();
			waitpid(side[1].pid, &status, 0);
		}
		if (side[0].r.eof == CONN_N && side[1].r.ep_err != 0)
			break;
	}
	/* The dying client's connections: each has the error; close them. */
	for (uint32_t i = 0; i < side[1].r.accepted && i < CONN_N; i++) {
		if (rb2_conn_status(side[1].ep, side[1].r.cd_of[i]) == -ECONNRESET)
			side[1].failed++;
		rb2_conn_close(side[1].ep, side[1].r.cd_of[i]);
	}
	for (unsigned int k = 0; k < 2; k++)
		rb2_conn_ep_stats_get(side[k].ep, &st[k]);
	waitpid(side[0].pid, &status, 0);
	ok = side[0].r.delivered == (uint64_t)CONN_N * CONN_PER && side[0].r.bad == 0 &&
	     side[0].r.eof == CONN_N && st[0].conns_open == 0 &&
	     side[1].r.bad == 0 && side[1].r.delivered == (uint64_t)CONN_N * CONN_KILL_AT &&
	     side[1].r.ep_err == -ECONNRESET && side[1].failed == CONN_N &&
	     st[1].conns_open == 0 && side[1].dead_at > 0 &&
	     side[1].failed_at - side[1].dead_at < 2.0;
	printf("connections%s (%.1f s): live client: %" PRIu64 " of %u messages in order on %u "
	       "connections, %u closed, %" PRIu64 " left open; killed client: %" PRIu64
	       " delivered (%u published), %u of %u connections failed (%s) %.3f s after "
	       "the kill, %" PRIu64 " left open\n", ok ? "" : " FAILED", now_s() - t0,
	       side[0].r.delivered,
	       CONN_N * CONN_PER, CONN_N, side[0].r.eof, st[0].conns_open, side[1].r.delivered,
	       CONN_N * CONN_KILL_AT, side[1].failed, CONN_N,
	       side[1].r.ep_err ? strerror(-side[1].r.ep_err) : "no error",
	       side[1].failed_at - side[1].dead_at, st[1].conns_open);
	for (unsigned int k = 0; k < 2; k++)
		rb2_conn_ep_destroy(side[k].ep);
	rb2_xport_close(xp);
	return ok ? 0 : 1;
}

#ifndef RB2_TEST_NOEAL
/* ---- the environment: DPDK multi-process ---------------------------------- */

static int
hugepages_usable(char *why, size_t len)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[128];
	long free_pages = 0;

	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		sscanf(line, "HugePages_Free: %ld", &free_pages);
	if (f != NULL)
		fclose(f);
	if (free_pages < 128) {
		snprintf(why, len, "%ld free hugepages (need 128 x 2 MiB); as root: usertools/rb2-hugepages.sh 1024",
			 free_pages);
		return 0;
	}
	return 1;
}

#ifdef __SANITIZE_THREAD__
/* ThreadSanitizer keeps [0x7e8000000000, 0x800000000000) for the app, below
 * the libraries and stacks the kernel maps from the top. */
#define BASE_VIRTADDR "--base-virtaddr=0x7e8100000000"
#else
#define BASE_VIRTADDR "--base-virtaddr=0x200000000000"
#endif

static int
eal_init(const char *prefix, int secondary, const char *lcores)
{
	char *argv[] = {"rb2-test-mp", "-l", (char *)lcores, "--no-pci", "-m", "256",
			"--file-prefix", (char *)prefix, "--log-level", "lib.eal:error",
			secondary ? "--proc-type=secondary" : "--proc-type=primary",
			BASE_VIRTADDR, NULL};

	if (secondary) /* -m is the primary's to give */
		argv[4] = "--log-level", argv[5] = "rb2.*:info";
	return rte_eal_init((int)(sizeof(argv) / sizeof(argv[0])) - 1, argv);
}

/* A primary's hugepage files outlive it (the secondaries open them, so
 * --huge-unlink is not an option): remove ours, or every run leaks 256 MB of
 * hugepages. */
static void
remove_hugepage_files(const char *prefix)
{
	char mnt[256], fs[64], pattern[512];
	FILE *f = fopen("/proc/mounts", "r");

	while (f != NULL && fscanf(f, "%*s %255s %63s %*[^\n]", mnt, fs) == 2) {
		glob_t g;

		if (strcmp(fs, "hugetlbfs") != 0)
			continue;
		snprintf(pattern, sizeof(pattern), "%s/%smap_*", mnt, prefix);
		if (glob(pattern, 0, NULL, &g) == 0)
			for (size_t i = 0; i < g.gl_pathc; i++)
				unlink(g.gl_pathv[i]);
		globfree(&g);
	}
	if (f != NULL)
		fclose(f);
}

/* The primary: name the group in @prefix and start the EAL. @return 0,
 * or SKIP with the reason printed. */
static int
env_primary(char *prefix, size_t len)
{
	char why[160];

	if (!hugepages_usable(why, sizeof(why))) {
		printf("SKIP: DPDK multi-process needs hugepages: %s\n", why);
		return SKIP;
	}
	snprintf(prefix, len, "rb2mp%d", (int)getpid());
	if (eal_init(prefix, 0, "0") < 0) {
		printf("SKIP: EAL with hugepages failed (%s); multi-process cannot run here\n",
		       rte_strerror(rte_errno));
		return SKIP;
	}
	return 0;
}

/* A child: join the group @prefix names. */
static int
env_secondary(const char *prefix)
{
	if (eal_init(prefix, 1, "1") < 0) {
		fprintf(stderr, "secondary: EAL: %s\n", rte_strerror(rte_errno));
		return -1;
	}
	return 0;
}

static void
env_cleanup(const char *prefix, int primary)
{
	rb2_eal_cleanup();
	if (primary)
		remove_hugepage_files(prefix);
}
#else
/* ---- the environment: no EAL (lib/noeal) ---------------------------------- */

/* The primary makes an arena; its children get the arena's fd where the
 * EAL's children get the group's file prefix. */
static struct rb2_noeal_arena *arena;

static int
env_primary(char *prefix, size_t len)
{
	int fd;

	arena = rb2_noeal_arena_create(256 << 20, 0, 0);
	fd = arena != NULL ? fcntl(rb2_noeal_arena_fd(arena), F_DUPFD, 10) : -1;
	if (fd < 0) {
		printf("FAILED: cannot make an arena: %s\n", strerror(errno));
		return 1;
	}
	snprintf(prefix, len, "%d", fd);
	return 0;
}

static int
env_secondary(const char *prefix)
{
	arena = rb2_noeal_arena_attach(atoi(prefix));
	if (arena == NULL) {
		fprintf(stderr, "child: cannot attach the arena: %s\n", strerror(errno));
		return -1;
	}
	close(atoi(prefix));
	return 0;
}

static void
env_cleanup(const char *prefix, int primary)
{
	if (primary)
		close(atoi(prefix));
	rb2_noeal_arena_detach(arena);
}
#endif

int
main(int argc, char **argv)
{
	static const char *const specs[] = {"shm,mode=loadstore", "shm,mode=copy"};
	char prefix[32], self[4096];
	unsigned int stress = 0;
	ssize_t n;
	int rc = 0;

	if (argc == 8 && strcmp(argv[1], "--secondary") == 0) {
		if (env_secondary(argv[2]) != 0)
			return 1;
		rc = run_sender(argv[3], argv[4], argv[5], strtoull(argv[6], NULL, 10),
				strcmp(argv[7], "die") == 0);
		env_cleanup(argv[2], 0);
		return rc;
	}
	if (argc == 5 && strcmp(argv[1], "--conn-client") == 0) {
		if (env_secondary(argv[2]) != 0)
			return 1;
		rc = run_conn_client((unsigned int)atoi(argv[3]), strcmp(argv[4], "die") == 0);
		env_cleanup(argv[2], 0);
		return rc;
	}
	if (argc == 3 && strcmp(argv[1], "--kill-stress") == 0) {
		stress = (unsigned int)strtoul(argv[2], NULL, 10);
	} else if (argc != 1) {
		fprintf(stderr, "usage: %s [--kill-stress N]\n", argv[0]);
		return 2;
	}
	rc = env_primary(prefix, sizeof(prefix));
	if (rc != 0)
		return rc;
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return 1;
	self[n] = '\0';
	if (stress > 0) {
		rc = kill_stress(self, prefix, stress);
	} else {
		for (unsigned int i = 0; i < 2; i++) {
			char name[16];
			snprintf(name, sizeof(name), "mp%u", i);
			rc |= run_receiver(self, prefix, specs[i], name, "rb2", MSGS, 0, 0);
		}
		rc |= run_receiver(self, prefix, specs[0], "mpkill", "rb2", KILLED_AFTER, 1, 0);
		rc |= run_conn_server(self, prefix);
	}
	env_cleanup(prefix, 1);
	return rc;
}
