/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * rb2 channels between two processes that run no DPDK EAL (lib/noeal: the
 * application side of rb2-run). The same channel, transport and shm driver
 * code as everywhere, with an arena (a memfd at one address in both
 * processes) in place of the EAL's shared memzones:
 *
 *   - this process links no EAL (rte_eal_init is not even there);
 *   - the TSC's rate, taken at the first use from the span since the load,
 *     then kept from 50 ms on: within 1% of the clock over 100 ms, and
 *     the same at every later use;
 *   - on an arena of hugepages (where free), then of 4 KiB pages:
 *   - a reserved range: arenas map into it and give their piece back,
 *     nothing else lands there, and the page tables above an arena
 *     outlive it (the next one made there adds fewer than outside);
 *   - the arena's zones: reserve, look up, refuse a second of one name,
 *     free, zero, reuse; a second attach in one process is refused (its
 *     range is taken), never mapped over; an arena marked no_reuse leaves
 *     what it frees unzeroed;
 *   - a sender spawned with only the arena's fd (a fresh exec: another
 *     address-space layout) sends 1 million messages of 9-208 bytes to a
 *     receiver here, exactly once and in order, in both shm modes; after
 *     both let go, the rings are freed;
 *   - a sender SIGKILLed after publishing: every message it published is
 *     delivered, then -ECONNRESET within a bounded time, and the dead
 *     sender's ring is freed by the survivor.
 *
 *   test_noeal                                    the tests above
 *   test_noeal --sender FD SPEC NAME COUNT live|die   (the spawned sender)
 */

#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rte_errno.h>
#include <rte_memzone.h>

#include <rb2_chan.h>
#include <rb2_noeal.h>
#include <rb2_xport.h>
#include <rb2_xport_driver.h>

#include "rb2_chan_traffic.h"

#define MSGS 1000000ull
#define KILLED_AFTER 100000ull

extern char **environ;

static uintptr_t
arena_addr(void)
{
	const char *e = getenv("RB2_ARENA_ADDR");

	return e != NULL ? (uintptr_t)strtoull(e, NULL, 0) : 0;
}

static void
params_of(struct rb2_chan_params *p)
{
	rb2_chan_params_init(p);
	p->slot_size = 128;
}

/* The sender's side in the current arena: @p count messages of @p name,
 * then (unless @p die: killed) wait until they were taken. */
static int
send_all(const char *spec, const char *name, uint64_t count, int die)
{
	struct rb2_xport *xp = rb2_xport_open_spec(spec);
	struct rb2_chan_params p;
	struct rb2_tx *tx;
	int ret;

	params_of(&p);
	tx = xp ? rb2_tx_create(name, xp, &p) : NULL;
	if (tx == NULL || rb2_tx_connect(tx, name, 20000) != 0) {
		fprintf(stderr, "sender: cannot connect '%s': %s\n", name, rte_strerror(rte_errno));
		return 1;
	}
	ret = chan_traffic_send(tx, count);
	if (ret != 0) {
		fprintf(stderr, "sender: send: %s\n", strerror(-ret));
		return 1;
	}
	if (die)
		raise(SIGKILL);
	while ((ret = rb2_tx_drained(tx)) == 0)
		;
	if (ret < 0) {
		fprintf(stderr, "sender: waiting for the receiver: %s\n", strerror(-ret));
		return 1;
	}
	rb2_tx_destroy(tx);
	rb2_xport_close(xp);
	return 0;
}

static int
run_sender(int fd, const char *spec, const char *name, uint64_t count, int die)
{
	/* Mapped with no descriptor of its own, as rb2-run's ends map theirs. */
	struct rb2_noeal_arena *a = rb2_noeal_arena_map(fd);
	int ret;

	if (a == NULL) {
		fprintf(stderr, "sender: cannot map the arena: %s\n", strerror(errno));
		return 1;
	}
	if (rb2_noeal_arena_fd(a) != -1 || fcntl(fd, F_GETFD) < 0) {
		fprintf(stderr, "sender: rb2_noeal_arena_map() kept a descriptor, or took ours\n");
		return 1;
	}
	close(fd);
	ret = send_all(spec, name, count, die);
	rb2_noeal_arena_detach(a);
	return ret;
}

static int fails;

#define CHECK(cond, ...) do {                                        \
	if (!(cond)) {                                                \
		printf("FAILED: " __VA_ARGS__);                       \
		printf("\n");                                         \
		fails++;                                              \
	}                                                             \
} while (0)

/* No EAL anywhere in this process. */
static void
test_no_eal(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int eal = 0;

	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		eal |= strstr(line, "librte_eal") != NULL;
	if (f != NULL)
		fclose(f);
	CHECK(dlsym(RTLD_DEFAULT, "rte_eal_init") == NULL && !eal,
	      "this process has the EAL in it");
	printf("no EAL: rte_eal_init absent, no librte_eal mapped\n");
}

static uint64_t
clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void
test_tsc_rate(void)
{
	uint64_t first = rte_get_tsc_hz(), hz, c0, n0, c1, n1;
	struct timespec ts = { 0, 100000000 };
	double err;

	n0 = clock_ns();
	c0 = rte_get_tsc_cycles();
	nanosleep(&ts, NULL);
	n1 = clock_ns();
	c1 = rte_get_tsc_cycles();
	hz = rte_get_tsc_hz();
	err = ((double)(c1 - c0) / (double)hz * 1e9 - (double)(n1 - n0)) / (double)(n1 - n0);
	CHECK(first > 0 && err > -0.01 && err < 0.01,
	      "the TSC at %" PRIu64 " Hz (first use: %" PRIu64 ") timed 100 ms of the clock "
	      "%.3f%% off", hz, first, err * 100);
	CHECK(rte_get_tsc_hz() == hz, "the rate is kept after 50 ms");
}

static void
test_zones(struct rb2_noeal_arena *a)
{
	const struct rte_memzone *z1, *z2, *z3;
	struct rb2_noeal_arena *again;
	unsigned int zones0 = rb2_noeal_arena_zones(a);
	int fd2;

	z1 = rte_memzone_reserve("zone-one", 1000, 0, 0);
	CHECK(z1 != NULL && z1->len >= 1000 && ((uintptr_t)z1->addr & 63) == 0,
	      "reserve: %s", rte_strerror(rte_errno));
	if (z1 == NULL)
		return;
	memset(z1->addr, 0xab, 1000);
	CHECK(rte_memzone_lookup("zone-one") == z1, "lookup finds the zone");
	CHECK(rte_memzone_reserve("zone-one", 10, 0, 0) == NULL && rte_errno == EEXIST,
	      "a second zone of one name is refused with EEXIST");
	CHECK(rte_mem_virt2memseg_list(z1->addr) != NULL, "a zone is arena memory");
	CHECK(rte_mem_virt2memseg_list(&fails) == NULL, "a global is not arena memory");
	CHECK(rte_memzone_free(z1) == 0 && rte_memzone_lookup("zone-one") == NULL,
	      "free, then lookup finds nothing");
	z2 = rte_memzone_reserve_aligned("zone-two", 900, 0, 0, 64);
	CHECK(z2 != NULL && z2->addr == z1->addr, "a freed zone is reused");
	if (z2 != NULL) {
		int zero = 1;

		for (unsigned int i = 0; i < 900; i++)
			zero &= ((const uint8_t *)z2->addr)[i] == 0;
		CHECK(zero, "a reused zone's memory is zero, as DPDK's freed memory is");
	}
	z3 = rte_memzone_reserve("x123456789012345678901234567890123", 8, 0, 0);
	CHECK(z3 == NULL && rte_errno == ENAMETOOLONG, "a 34-character name is refused");
	z3 = rte_memzone_reserve("too-big", rb2_noeal_arena_size(a), 0, 0);
	CHECK(z3 == NULL && rte_errno == ENOMEM, "a zone bigger than the arena: ENOMEM");
	if (z2 != NULL)
		rte_memzone_free(z2);
	CHECK(rb2_noeal_arena_zones(a) == zones0, "every zone freed");
	/* The arena's range is taken here: a second mapping is refused. */
	fd2 = dup(rb2_noeal_arena_fd(a));
	again = rb2_noeal_arena_attach(fd2);
	CHECK(again == NULL && errno == EEXIST, "attaching twice in one process: EEXIST");
	close(fd2);
	/* An arena never reserved from again (rb2-run's stream's): its frees
	 * leave the memory as it was. One of its own, so that this one's
	 * later zones are still zeroed. */
	again = rb2_noeal_arena_create(2u << 20, RB2_NOEAL_ARENA_ADDR + (1ull << 36),
				       RB2_NOEAL_ARENA_NO_HUGE);
	CHECK(again != NULL, "a second arena: %s", strerror(errno));
	if (again != NULL) {
		rb2_noeal_arena_no_reuse(again);
		z3 = rte_memzone_reserve("kept", 4096, 0, 0);
		CHECK(z3 != NULL, "reserve in the second arena");
		if (z3 != NULL) {
			uint8_t *m = z3->addr;
			int kept = 1;

			memset(m, 0xcd, 4096);
			CHECK(rte_memzone_free(z3) == 0, "free in the second arena");
			for (unsigned int i = 0; i < 4096; i++)
				kept &= m[i] == 0xcd;
			CHECK(kept, "a zone freed in an arena marked no_reuse is left as it was");
			/* Reserved again all the same: zeroed then. */
			z3 = rte_memzone_reserve("again", 4096, 0, 0);
			kept = z3 != NULL && z3->addr == (void *)m;
			for (unsigned int i = 0; kept && i < 4096; i++)
				kept &= m[i] == 0;
			CHECK(kept && (z3->flags & RB2_MEMZONE_F_ZEROED),
			      "reused after all, it reads zero, and says so (RB2_MEMZONE_F_ZEROED)");
			if (z3 != NULL)
				rte_memzone_free(z3);
		}
		rb2_noeal_arena_detach(again);
	}
	rb2_noeal_arena_use(a);
	printf("zones: reserve, lookup, EEXIST, free, zeroed reuse, ENAMETOOLONG, ENOMEM, "
	       "double attach refused, no zeroing where no zone is reused\n");
}

/* Pages there now, of @len bytes at @addr (mincore()), or -1. */
static int
pages_there(const void *addr, size_t len)
{
	unsigned char vec[256];
	int n = 0;

	if (len / 4096 > sizeof(vec) || mincore((void *)addr, len, vec) != 0)
		return -1;
	for (size_t i = 0; i < len / 4096; i++)
		n += vec[i] & 1;
	return n;
}

/* Prefault: a zone of a ring's size is all there once reserved; a small
 * one is there after rb2_noeal_arena_prefault(), and not before. */
static void
test_prefault(struct rb2_noeal_arena *a)
{
	const size_t pg = rb2_noeal_arena_huge(a) ? 2u << 20 : 4096;
	const struct rte_memzone *big = rte_memzone_reserve_aligned("prefault-big", 1u << 20, 0,
								      0, pg);
	const struct rte_memzone *small = rte_memzone_reserve_aligned("prefault-small", 32768, 0,
									0, pg);
	int big_n, before, after, ret;

	CHECK(big != NULL && small != NULL, "reserve: %s", rte_strerror(rte_errno));
	if (big == NULL || small == NULL)
		return;
	big_n = pages_there(big->addr, 1u << 20);
	before = pages_there(small->addr, 32768);
	ret = rb2_noeal_arena_prefault(a);
	after = pages_there(small->addr, 32768);
	if (ret == -EINVAL) {
		printf("prefault: this kernel has no MADV_POPULATE_WRITE (before 5.14): not checked\n");
	} else {
		CHECK(ret == 0, "prefault: %s", strerror(-ret));
		CHECK(big_n == 256, "a reserved 1 MiB zone: %d of 256 pages there", big_n);
		CHECK(after == 8 && (pg != 4096 || before == 0),
		      "prefault: %d of 8 pages there before, %d after", before, after);
		printf("prefault: a 1 MiB zone reserved: %d of 256 pages there; a 32 KiB one: %d of "
		       "8, then %d after rb2_noeal_arena_prefault()\n", big_n, before, after);
	}
	rte_memzone_free(small);
	rte_memzone_free(big);
}

/* This process's page tables, in kB (/proc/self/status). */
static long
vm_pte_kb(void)
{
	char line[128];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "VmPTE: %ld", &kb) == 1)
			break;
	if (f != NULL)
		fclose(f);
	return kb;
}

/* Page tables an arena made at @at adds, after one made and detached there
 * before (whose tables were freed again, unless the range is reserved). */
static long
arena_tables_kb(uintptr_t at, unsigned int flags)
{
	struct rb2_noeal_arena *a;
	long v0 = 0, v1 = 0;

	for (int i = 0; i < 2; i++) {
		v0 = vm_pte_kb();
		a = rb2_noeal_arena_create(4 << 20, at, flags);
		if (a == NULL)
			return -1;
		v1 = vm_pte_kb();
		rb2_noeal_arena_detach(a);
	}
	return v1 - v0;
}

/* A reserved range (rb2_noeal_reserve()): arenas replace a piece of it and
 * give it back; nothing else lands there meanwhile; a second arena over a
 * mapped one is refused as anywhere; and the page tables above an arena
 * outlive it. */
static void
test_reserve(struct rb2_noeal_arena *cur, unsigned int flags)
{
	const uintptr_t in = 0x330000000000ull, out = 0x338000000000ull;  /* 512 GiB apart */
	struct rb2_noeal_arena *a, *b;
	unsigned char vec;
	long kept, freed;
	void *p;
	int ret = rb2_noeal_reserve(in, 1ull << 30);

	CHECK(ret == 0, "reserve: %s", strerror(-ret));
	CHECK(rb2_noeal_reserve(in + (4 << 20), 8 << 20) == 0, "reserving inside again");
	CHECK(rb2_noeal_reserve(in + 4096, 2 << 20) == -EINVAL, "an unaligned reservation");
	p = mmap((void *)in, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
		 -1, 0);
	CHECK(p == MAP_FAILED && errno == EEXIST, "a mapping landed in the reserved range");
	a = rb2_noeal_arena_create(4 << 20, in, flags);
	CHECK(a != NULL, "an arena in the reserved range: %s", strerror(errno));
	if (a == NULL)
		return;
	memset((char *)rb2_noeal_arena_base(a) + (2 << 20), 1, 4096);   /* writable */
	b = rb2_noeal_arena_create(4 << 20, in + (2 << 20), flags);
	CHECK(b == NULL && errno == EEXIST, "an arena over half of a mapped one: %s",
	      b == NULL ? strerror(errno) : "mapped");
	b = rb2_noeal_arena_attach(rb2_noeal_arena_fd(a));
	CHECK(b == NULL && errno == EEXIST, "the same arena attached twice: %s",
	      b == NULL ? strerror(errno) : "mapped");
	rb2_noeal_arena_detach(a);
	CHECK(mincore((void *)in, 4096, &vec) == 0, "the range after a detach: %s",
	      strerror(errno));
	p = mmap((void *)in, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
		 -1, 0);
	CHECK(p == MAP_FAILED && errno == EEXIST, "the range was left a hole by a detach");
	kept = arena_tables_kb(in, flags);
	freed = arena_tables_kb(out, flags);
	CHECK(kept >= 0 && freed >= kept + 4,
	      "an arena made added %ld kB of page tables in the reserved range, %ld kB "
	      "outside: the tables above it were not kept", kept, freed);
	printf("reserve (%s pages): an arena made adds %ld kB of page tables in a reserved "
	       "range, %ld kB outside one\n", flags ? "4 KiB" : "2 MiB", kept, freed);
	rb2_noeal_arena_use(cur);    /* the test's arena, for the zones after */
}

/* The hugepages behind a hugetlbfs file (its st_blocks count them). */
static long
huge_held(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 ? (long)(st.st_blocks / ((2 << 20) / 512)) : -1;
}

/* An arena made ahead (rb2_noeal_arena_prepare()): its first hugepage is
 * taken from the pool at the preparation, not at the arena's first touch;
 * its zones read zero; and a memfd that is not one, or one already made
 * an arena, is refused. */
static void
test_prepared(struct rb2_noeal_arena *cur)
{
	const uintptr_t at = 0x334000000000ull;
	const struct rte_memzone *z;
	struct rb2_noeal_arena *a;
	int fd = rb2_noeal_arena_prepare(4 << 20), again, plain;
	long ready, touched;

	if (fd == -ENOMEM) {
		printf("an arena made ahead: no free hugepage here: not checked\n");
		return;
	}
	CHECK(fd >= 0, "rb2_noeal_arena_prepare: %s", strerror(-fd));
	if (fd < 0)
		return;
	again = dup(fd);
	ready = huge_held(again);
	a = rb2_noeal_arena_create_on(fd, 4 << 20, at);
	CHECK(a != NULL && rb2_noeal_arena_huge(a), "an arena on a prepared memfd: %s",
	      a == NULL ? strerror(errno) : "not on hugepages");
	if (a == NULL) {
		close(again);
		return;
	}
	z = rte_memzone_reserve("ahead", 65536, SOCKET_ID_ANY, 0);
	CHECK(z != NULL && ((const uint64_t *)z->addr)[0] == 0 &&
	      ((const uint64_t *)z->addr)[8191] == 0, "a zone of the prepared arena reads zero");
	if (z != NULL)
		memset(z->addr, 0x5a, 65536);
	touched = huge_held(again);
	CHECK(ready == 1 && touched == 1, "hugepages behind the memfd: %ld once prepared, %ld "
	      "once the arena was written (1 and 1: the preparation took its first page)",
	      ready, touched);
	printf("an arena made ahead: %ld hugepage behind it once prepared, %ld once written\n",
	       ready, touched);
	if (z != NULL)
		rte_memzone_free(z);
	rb2_noeal_arena_detach(a);
	a = rb2_noeal_arena_create_on(again, 4 << 20, at);
	CHECK(a == NULL && errno == EINVAL, "a memfd made an arena before, made one again: %s",
	      a == NULL ? strerror(errno) : "mapped");
	plain = memfd_create("not-an-arena", MFD_CLOEXEC);
	a = plain < 0 ? NULL : rb2_noeal_arena_create_on(plain, 4 << 20, at);
	CHECK(plain >= 0 && a == NULL && errno == EINVAL, "an empty memfd made an arena: %s",
	      a == NULL ? strerror(errno) : "mapped");
	/* Of the right size, but on 4 KiB pages: not one prepared. */
	plain = memfd_create("not-an-arena", MFD_CLOEXEC);
	a = plain < 0 || ftruncate(plain, 4 << 20) != 0 ? NULL :
		rb2_noeal_arena_create_on(plain, 4 << 20, at);
	CHECK(plain >= 0 && a == NULL && errno == EINVAL,
	      "a memfd of 4 KiB pages made a hugepage arena: %s",
	      a == NULL ? strerror(errno) : "mapped");
	rb2_noeal_arena_use(cur);
}

/* A sender in another process: spawned with nothing but the arena's fd
 * (a fresh exec), or with @p forked a fork child of this process, which
 * has used shm before (so a start time of its own, the child's, must be
 * what the child tells its peer). */
static void
run_pair(const char *self, struct rb2_noeal_arena *a, const char *spec, const char *name,
	 uint64_t count, int die, int forked)
{
	struct rb2_xport *xp = rb2_xport_open_spec(spec);
	struct rb2_chan_params p;
	struct rb2_msg m[32];
	struct rb2_rx *rx;
	uint64_t got = 0, bad = 0;
	char cnt[24], fds[16];
	char *args[] = { (char *)self, "--sender", fds, (char *)spec, (char *)name, cnt,
			 die ? "die" : "live", NULL };
	posix_spawn_file_actions_t fa;
	int status, n = 0, fd;
	pid_t pid;
	time_t t0;

	params_of(&p);
	rx = xp ? rb2_rx_create(name, xp, &p) : NULL;
	CHECK(rx != NULL, "%s: rx_create: %s", spec, rte_strerror(rte_errno));
	if (rx == NULL)
		return;
	/* The sender gets the arena's fd and nothing else of ours. */
	fd = fcntl(rb2_noeal_arena_fd(a), F_DUPFD, 10);
	snprintf(fds, sizeof(fds), "%d", fd);
	snprintf(cnt, sizeof(cnt), "%" PRIu64, count);
	if (forked) {
		pid = fork();
		if (pid == 0) {
			close(fd);
			_exit(send_all(spec, name, count, die));
		}
	} else {
		posix_spawn_file_actions_init(&fa);
		if (posix_spawn(&pid, self, &fa, NULL, args, environ) != 0)
			pid = -1;
		posix_spawn_file_actions_destroy(&fa);
	}
	if (pid < 0) {
		perror(forked ? "fork" : "posix_spawn");
		fails++;
		return;
	}
	close(fd);
	if (rb2_rx_connect(rx, name, 20000) != 0) {
		CHECK(0, "%s: rx_connect: %s", spec, rte_strerror(rte_errno));
		waitpid(pid, &status, 0);
		return;
	}
	t0 = time(NULL);
	n = chan_traffic_recv(rx, count, die, 60, &got, &bad);
	if (die) {
		CHECK(got == count && bad == 0 && n == -ECONNRESET,
		      "%s: sender killed after publishing %" PRIu64 ": %" PRIu64 " delivered, %"
		      PRIu64 " bad, then %s", spec, count, got, bad,
		      n < 0 ? strerror(-n) : "no error");
		printf("%s: sender killed after publishing %" PRIu64 " messages: %" PRIu64
		       " delivered, then %s after %ld s\n", spec, count, got,
		       n < 0 ? strerror(-n) : "no error", (long)(time(NULL) - t0));
		waitpid(pid, &status, 0);
	} else {
		int ended = 0;

		/* Keep polling so the idle push hands the last slots back. A
		 * sender whose receiver gave up waits for good: killed. */
		for (int i = 0; i < 5000 && !ended; i++) {
			ended = waitpid(pid, &status, WNOHANG) == pid;
			rb2_rx_peek_burst(rx, m, 32);
			usleep(1000);
		}
		if (!ended) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
		}
		CHECK(ended, "%s: the sender did not end within 5 s (killed)", spec);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "%s: the sender failed (status %d)", spec, status);
		CHECK(got == count && bad == 0, "%s: %" PRIu64 " of %" PRIu64 " messages, %"
		      PRIu64 " bad (%s)", spec, got, count, bad, n < 0 ? strerror(-n) : "no error");
		printf("%s: %" PRIu64 " messages between two processes without the EAL%s, %"
		       PRIu64 " bad\n", spec, got, forked ? " (a fork child sending)" : "", bad);
	}
	rb2_rx_destroy(rx);
	rb2_xport_close(xp);
	CHECK(chan_traffic_rings_freed(name), "%s: a ring of '%s' is still reserved after both let go",
	      spec, name);
}

int
main(int argc, char **argv)
{
	static const char *const specs[] = { "shm,mode=loadstore", "shm,mode=copy" };
	struct rb2_noeal_arena *a;

	if (argc == 7 && strcmp(argv[1], "--sender") == 0)
		return run_sender(atoi(argv[2]), argv[3], argv[4], strtoull(argv[5], NULL, 10),
				  strcmp(argv[6], "die") == 0);
	setvbuf(stdout, NULL, _IOLBF, 0);
	test_tsc_rate();
	test_no_eal();
	/* On hugepages where there are free ones, then on 4 KiB pages. */
	for (unsigned int flags = 0; flags <= RB2_NOEAL_ARENA_NO_HUGE; flags++) {
		a = rb2_noeal_arena_create(64 << 20, arena_addr(), flags);
		if (a == NULL) {
			printf("FAILED: cannot create an arena: %s\n", strerror(errno));
			return 1;
		}
		printf("an arena of %zu MiB on %s pages at %p\n", rb2_noeal_arena_size(a) >> 20,
		       rb2_noeal_arena_huge(a) ? "2 MiB" : "4 KiB", rb2_noeal_arena_base(a));
		CHECK(!(flags & RB2_NOEAL_ARENA_NO_HUGE) || !rb2_noeal_arena_huge(a),
		      "RB2_NOEAL_ARENA_NO_HUGE gave hugepages");
		test_zones(a);
		test_prefault(a);
		test_reserve(a, flags);
		if (flags == 0)
			test_prepared(a);
		for (unsigned int i = 0; i < 2; i++) {
			char name[32];

			snprintf(name, sizeof(name), "noeal%u", i);
			run_pair(argv[0], a, specs[i], name, MSGS, 0, 0);
			snprintf(name, sizeof(name), "noealk%u", i);
			run_pair(argv[0], a, specs[i], name, KILLED_AFTER, 1, 0);
		}
		run_pair(argv[0], a, specs[0], "noealf", MSGS, 0, 1);
		CHECK(rb2_noeal_arena_zones(a) == 0, "%u zones left in the arena",
		      rb2_noeal_arena_zones(a));
		/* Its memfd dropped (rb2-run's side): the mapping stays. */
		{
			int fd = rb2_noeal_arena_fd(a);
			const struct rte_memzone *z;

			rb2_noeal_arena_drop_fd(a);
			CHECK(rb2_noeal_arena_fd(a) == -1 && fcntl(fd, F_GETFD) == -1,
			      "the dropped memfd is closed");
			z = rte_memzone_reserve("dropped", 4096, SOCKET_ID_ANY, 0);
			CHECK(z != NULL, "a zone in an arena whose memfd was dropped");
			if (z != NULL) {
				memset(z->addr, 0x5a, 4096);
				rte_memzone_free(z);
			}
		}
		rb2_noeal_arena_detach(a);
	}
	printf("noeal: %d failure(s)\n", fails);
	return fails != 0;
}
