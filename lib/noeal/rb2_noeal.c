/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * The EAL services rb2's ring, transport and shm driver call, for a process
 * without the EAL, and the arenas that stand in for its shared memzones
 * (rb2_noeal.h says which call goes where, and why).
 *
 * Linked only into the rb2_noeal build of those sources (never beside the
 * real EAL): the rte_* functions below are the EAL's API, so the same
 * objects' calls land here. Users of rb2_noeal that go into another
 * program's address space (the preload library) hide them with a version
 * script, so a program that links DPDK itself keeps its own.
 */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>
#include <linux/magic.h>
#include <linux/memfd.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_malloc.h>
#include <rte_memory.h>
#include <rte_memzone.h>
#include <rte_random.h>
#include <rte_ring.h>

#include <rb2_xport_driver.h>

#include "rb2_noeal.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define HUGE_2M (2ull << 20)

/* ---- Thread-locals the inline EAL headers read ---------------------------- */

RTE_DEFINE_PER_LCORE(int, _rte_errno);
/* No thread here is an lcore: LCORE_ID_ANY, as a non-EAL thread's. */
RTE_DEFINE_PER_LCORE(unsigned int, _lcore_id) = LCORE_ID_ANY;

const char *
rte_strerror(int errnum)
{
	static __thread char buf[128];

	/* GNU strerror_r: the message, in buf or static. */
	return strerror_r(errnum, buf, sizeof(buf));
}

/* ---- Heap ----------------------------------------------------------------- */

/* rte_malloc's contract: align 0 means a cache line; a power of two otherwise. */
static void *
heap_alloc(size_t size, unsigned int align, int zero)
{
	void *p = NULL;

	if (align == 0)
		align = RTE_CACHE_LINE_SIZE;
	if (size == 0 || (align & (align - 1)) != 0)
		return NULL;
	if (align < sizeof(void *))
		align = sizeof(void *);
	if (posix_memalign(&p, align, size) != 0)
		return NULL;
	if (zero)
		memset(p, 0, size);
	return p;
}

void *
rte_malloc(const char *type __rte_unused, size_t size, unsigned int align)
{
	return heap_alloc(size, align, 0);
}

void *
rte_zmalloc(const char *type __rte_unused, size_t size, unsigned int align)
{
	return heap_alloc(size, align, 1);
}

void *
rte_malloc_socket(const char *type __rte_unused, size_t size, unsigned int align,
		  int socket __rte_unused)
{
	return heap_alloc(size, align, 0);
}

void *
rte_zmalloc_socket(const char *type __rte_unused, size_t size, unsigned int align,
		   int socket __rte_unused)
{
	return heap_alloc(size, align, 1);
}

void
rte_free(void *ptr)
{
	free(ptr);
}

/* ---- Lcores, sockets, time, randomness ------------------------------------ */

unsigned int
rte_socket_id(void)
{
	return 0;
}

unsigned int
rte_socket_count(void)
{
	return 1;
}

unsigned int
rte_lcore_to_socket_id(unsigned int lcore_id __rte_unused)
{
	return 0;
}

static uint64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A TSC reading and the monotonic clock's at the same moment: the clock
 * read on both sides of the TSC, within a microsecond (a preemption in
 * between spoils the pair: read again), and their midpoint taken. */
struct tsc_pair {
	uint64_t ns, tsc;
};

static struct tsc_pair
tsc_pair_now(void)
{
	struct tsc_pair p = { 0, 0 };

	for (int i = 0; i < 8; i++) {
		uint64_t a = mono_ns(), b;

		p.tsc = rte_get_tsc_cycles();
		b = mono_ns();
		p.ns = a + (b - a) / 2;
		if (b - a < 1000)
			break;
	}
	return p;
}

/*
 * The TSC's rate, measured against the monotonic clock from a pair taken
 * when the library loads. Its first use is usually a program's first
 * connection, a millisecond or so after the load: a measurement made then,
 * over 5 ms, was 5 ms of that connection's set-up. So the first uses take
 * the span so far (at least 200 us: each pair is off by at most half a
 * microsecond, so the rate by at most 0.5%, plenty for the timeouts and
 * pacing it serves), and the rate is measured again on each use until the
 * span reaches 50 ms (0.002%), and kept from then on.
 */
static struct tsc_pair tsc_loaded;
static pthread_once_t tsc_once = PTHREAD_ONCE_INIT;
static _Atomic uint64_t tsc_hz;          /* final once tsc_final */
static _Atomic int tsc_final;

static void
tsc_load_pair(void)
{
	tsc_loaded = tsc_pair_now();
}

__attribute__((constructor)) static void
tsc_load(void)
{
	pthread_once(&tsc_once, tsc_load_pair);
}

uint64_t
rte_get_tsc_hz(void)
{
	const uint64_t least_ns = 200000, final_ns = 50000000;
	struct tsc_pair now;
	uint64_t hz;

	if (atomic_load_explicit(&tsc_final, memory_order_acquire))
		return atomic_load_explicit(&tsc_hz, memory_order_relaxed);
	pthread_once(&tsc_once, tsc_load_pair);   /* no constructor ran: now */
	now = tsc_pair_now();
	if (now.ns < tsc_loaded.ns + least_ns) {
		rte_delay_us_sleep((unsigned int)((tsc_loaded.ns + least_ns - now.ns) / 1000) + 1);
		now = tsc_pair_now();
	}
	hz = now.tsc > tsc_loaded.tsc ? (uint64_t)((double)(now.tsc - tsc_loaded.tsc) * 1e9 /
						   (double)(now.ns - tsc_loaded.ns)) : 0;
	if (hz == 0)
		hz = 1000000000ull;
	atomic_store_explicit(&tsc_hz, hz, memory_order_relaxed);
	if (now.ns >= tsc_loaded.ns + final_ns)
		atomic_store_explicit(&tsc_final, 1, memory_order_release);
	return hz;
}

void
rte_delay_us_sleep(unsigned int us)
{
	struct timespec ts = { us / 1000000, (long)(us % 1000000) * 1000 };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

uint64_t
rte_rand(void)
{
	static __thread uint64_t s;
	uint64_t x;

	while (s == 0 && getrandom(&s, sizeof(s), 0) != sizeof(s))
		;
	/* xorshift64*: the code wants tokens, not cryptography. */
	x = s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	s = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* ---- Logging -------------------------------------------------------------- */

#define LOG_TYPES 64

static struct {
	pthread_mutex_t lock;
	unsigned int n;
	char name[LOG_TYPES][48];
	int max;                     /* RB2_NOEAL_LOG, or WARNING */
} logs = { .lock = PTHREAD_MUTEX_INITIALIZER, .max = -1 };

int
rte_log_register_type_and_pick_level(const char *name, uint32_t level_def __rte_unused)
{
	int id = -1;

	pthread_mutex_lock(&logs.lock);
	for (unsigned int i = 0; i < logs.n; i++)
		if (strcmp(logs.name[i], name) == 0)
			id = (int)i;
	if (id < 0 && logs.n < LOG_TYPES) {
		id = (int)logs.n++;
		snprintf(logs.name[id], sizeof(logs.name[id]), "%s", name);
	}
	pthread_mutex_unlock(&logs.lock);
	/* Past the table: the EAL's own type (0), as the real call falls back. */
	return id < 0 ? 0 : id;
}

void
rte_log_set_global_level(uint32_t level)
{
	logs.max = (int)level;
}

int
rte_log(uint32_t level, uint32_t logtype, const char *format, ...)
{
	va_list ap;

	if (logs.max < 0) {
		const char *e = getenv("RB2_NOEAL_LOG");

		logs.max = e != NULL && atoi(e) > 0 ? atoi(e) : (int)RTE_LOG_WARNING;
	}
	(void)logtype;              /* one threshold for all types */
	if ((int)level > logs.max)
		return 0;
	va_start(ap, format);
	vfprintf(stderr, format, ap);
	va_end(ap);
	return 0;
}

/* ---- Arenas --------------------------------------------------------------- */

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23   /* Linux 5.14; older headers lack it */
#endif
/* Zones from this size on are faulted in when reserved, in one call. */
#define PREFAULT_MIN (64u << 10)

#define ARENA_MAGIC 0x72623261726e6131ull   /* "rb2arna1" */
#define ARENA_ZONES 512
#define ARENAS_MAX 16384         /* one per connection under rb2-run */

struct zone {
	struct rte_memzone mz;       /* what callers get: valid in every process */
	uint64_t cap;                /* bytes behind it (>= mz.len) */
	uint32_t used;
	uint32_t dirty;              /* freed unzeroed (rb2_noeal_arena_no_reuse()) */
};

/* The arena's first pages: the same bytes in every process. */
struct arena_hdr {
	uint64_t magic;
	uint64_t addr, size;
	uint64_t huge;
	pthread_mutex_t lock;        /* robust, process-shared */
	uint64_t brk;                /* next byte never handed out */
	uint32_t nzones;
	uint32_t live;
	_Atomic uint32_t holders;   /* rb2_noeal_arena_hold() */
	uint32_t pad2;
	struct zone zones[ARENA_ZONES];
};

#define HDR_BYTES RTE_ALIGN_CEIL(sizeof(struct arena_hdr), 4096)

struct rb2_noeal_arena {
	struct arena_hdr *h;
	size_t size;
	int fd;
	int no_reuse;                /* frees here leave memory as it is */
	struct rte_memseg_list msl;  /* rte_mem_virt2memseg_list()'s answer */
};

/* Attached arenas, for rte_mem_virt2memseg_list(); each thread's current
 * one for zones (threads of one process set up different connections). */
static struct rb2_noeal_arena *_Atomic arenas[ARENAS_MAX];
static _Atomic unsigned int arenas_hi;   /* no arena at or above this index */
static __thread struct rb2_noeal_arena *cur;

static int
arena_lock(struct arena_hdr *h)
{
	int r = pthread_mutex_lock(&h->lock);

	/* Its last holder died inside: the directory is only ever changed
	 * whole-entry by whole-entry, so it is consistent as it stands. */
	if (r == EOWNERDEAD)
		r = pthread_mutex_consistent(&h->lock);
	return r;
}

/* The table's slots are looked at with plain loads, and only a slot that
 * looks right is taken with a compare-and-swap: a locked instruction on
 * each of the 16384 slots took a connection's close 0.1-0.2 ms. */
static int
arena_register(struct rb2_noeal_arena *a)
{
	for (unsigned int i = 0; i < ARENAS_MAX; i++) {
		struct rb2_noeal_arena *none = NULL;

		if (atomic_load_explicit(&arenas[i], memory_order_relaxed) == NULL &&
		    atomic_compare_exchange_strong(&arenas[i], &none, a)) {
			unsigned int hi = atomic_load(&arenas_hi);

			while (hi < i + 1 && !atomic_compare_exchange_weak(&arenas_hi, &hi, i + 1))
				;
			cur = a;
			return 0;
		}
	}
	return -ENOSPC;
}

/*
 * Reserved ranges (rb2_noeal_reserve()). An arena's mmap allocates the page
 * tables above its pages (on x86-64 a PMD table a GiB, a PUD table 512 GiB)
 * and its munmap frees them again when nothing else maps their span, as
 * rb2-run's arenas, one a connection, each alone in its GiB: so every
 * connection's first touch cleared fresh table pages (6.5% of all CPU
 * samples under a loop of connects, in huge_pte_alloc()), and its close
 * freed them. In a range kept mapped PROT_NONE, an arena replaces a piece
 * of the reservation (MAP_FIXED) and its detach puts the piece back, so the
 * tables stay. The state of each 2 MiB granule says what is there: MAP_FIXED
 * must never land on an arena still mapped, nor on a hole that something
 * else of the process may since have taken.
 */
enum { GR_RESERVED, GR_ARENA, GR_HOLE };
#define RESERVED_MAX 4

struct reserved {
	uintptr_t base;
	size_t len;
	uint8_t *gr;                 /* one state per 2 MiB */
};

static struct reserved reserved[RESERVED_MAX];
static _Atomic unsigned int nreserved;
static pthread_mutex_t reserved_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * A fork while another thread holds the lock leaves it held in the child,
 * whose only thread is the forking one: the child makes it anew. Taking the
 * lock before the fork instead (a prepare handler) deadlocked rb2-run: its
 * own prepare handler waits for the set-ups under way, one of them in
 * map_at() waiting for this lock. A granule's state is on the safe side at
 * every instant (an arena from before its mapping until it is unmapped), so
 * a child that forked mid-way never maps over a live mapping.
 */
static void
reserved_child(void)
{
	pthread_mutex_init(&reserved_lock, NULL);
}

__attribute__((constructor)) static void
reserved_atfork(void)
{
	pthread_atfork(NULL, NULL, reserved_child);
}

/* The reserved range holding all of [@addr, @addr + @size), or NULL. */
static struct reserved *
reserved_of(uintptr_t addr, size_t size)
{
	unsigned int n = atomic_load_explicit(&nreserved, memory_order_acquire);

	for (unsigned int i = 0; i < n; i++)
		if (addr >= reserved[i].base && addr - reserved[i].base <= reserved[i].len &&
		    size <= reserved[i].len - (addr - reserved[i].base))
			return &reserved[i];
	return NULL;
}

int
rb2_noeal_reserve(uintptr_t base, size_t len)
{
	struct rlimit as;
	struct reserved *r;
	void *p;
	int ret = 0;

	if (base % HUGE_2M != 0 || len == 0 || len % HUGE_2M != 0)
		return -EINVAL;
	/* PROT_NONE costs no memory, but it counts against RLIMIT_AS. */
	if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY)
		return -ENOMEM;
	pthread_mutex_lock(&reserved_lock);
	if (reserved_of(base, len) != NULL)
		goto out;
	if (atomic_load_explicit(&nreserved, memory_order_relaxed) == RESERVED_MAX) {
		ret = -ENOSPC;
		goto out;
	}
	r = &reserved[atomic_load_explicit(&nreserved, memory_order_relaxed)];
	r->gr = calloc(len / HUGE_2M, 1);
	if (r->gr == NULL) {
		ret = -ENOMEM;
		goto out;
	}
	p = mmap((void *)base, len, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
	if (p == MAP_FAILED || (uintptr_t)p != base) {
		ret = p == MAP_FAILED ? -errno : -EEXIST;
		if (p != MAP_FAILED)
			munmap(p, len);
		free(r->gr);
		r->gr = NULL;
		goto out;
	}
	r->base = base;
	r->len = len;
	atomic_fetch_add_explicit(&nreserved, 1, memory_order_release);
out:
	pthread_mutex_unlock(&reserved_lock);
	return ret;
}

/* Whether every granule of [@addr, @addr + @size) in @r is in state @st. */
static int
granules_are(const struct reserved *r, uintptr_t addr, size_t size, uint8_t st)
{
	for (size_t g = (addr - r->base) / HUGE_2M; g < (addr - r->base + size) / HUGE_2M; g++)
		if (r->gr[g] != st)
			return 0;
	return 1;
}

static void
granules_set(struct reserved *r, uintptr_t addr, size_t size, uint8_t st)
{
	memset(r->gr + (addr - r->base) / HUGE_2M, st, size / HUGE_2M);
}

/* After a failed MAP_FIXED over the reservation (a hugetlb file short of
 * pages): a kernel may have put the old mapping back, or unmapped it
 * before it failed. Keeps errno. @return the granules' state. */
static uint8_t
reserve_again(uintptr_t addr, size_t size)
{
	int err = errno;
	void *q = mmap((void *)addr, size, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
	uint8_t st = GR_RESERVED;

	/* EEXIST: the reservation came back. Something else of the process
	 * taking the hole in the microseconds between (the kernel places
	 * mappings top-down from far above) is not guarded against. */
	if (q == MAP_FAILED && errno != EEXIST)
		st = GR_HOLE;
	else if (q != MAP_FAILED && (uintptr_t)q != addr) {
		munmap(q, size);
		st = GR_HOLE;
	}
	errno = err;
	return st;
}

/* Map @fd's @size bytes at @addr exactly, or fail with EEXIST. */
static void *
map_at(int fd, uintptr_t addr, size_t size)
{
	struct reserved *r = reserved_of(addr, size);
	int how = MAP_FIXED_NOREPLACE;
	void *p;

	if (r != NULL) {
		pthread_mutex_lock(&reserved_lock);
		if (granules_are(r, addr, size, GR_RESERVED)) {
			how = MAP_FIXED;
		} else if (!granules_are(r, addr, size, GR_HOLE)) {
			pthread_mutex_unlock(&reserved_lock);
			errno = EEXIST;      /* an arena of ours, or part of one */
			return NULL;
		}
		granules_set(r, addr, size, GR_ARENA);     /* before it is one */
	}
	p = mmap((void *)addr, size, PROT_READ | PROT_WRITE, MAP_SHARED | how, fd, 0);
	if (p != MAP_FAILED && (uintptr_t)p != addr) {   /* a kernel that took it as a hint */
		munmap(p, size);
		p = MAP_FAILED;
		errno = EEXIST;
	}
	if (r != NULL) {
		if (p == MAP_FAILED)
			granules_set(r, addr, size,
				     how == MAP_FIXED ? reserve_again(addr, size) : GR_HOLE);
		pthread_mutex_unlock(&reserved_lock);
	}
	return p == MAP_FAILED ? NULL : p;
}

/* Unmap what map_at() mapped: in a reserved range, the reservation again. */
static void
unmap_at(void *h, size_t size)
{
	struct reserved *r = reserved_of((uintptr_t)h, size);
	void *p;

	if (r == NULL) {
		munmap(h, size);
		return;
	}
	pthread_mutex_lock(&reserved_lock);
	p = mmap(h, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED,
		 -1, 0);
	if (p == h) {
		granules_set(r, (uintptr_t)h, size, GR_RESERVED);
	} else {
		munmap(h, size);     /* out of map count: a plain hole then */
		granules_set(r, (uintptr_t)h, size, GR_HOLE);
	}
	pthread_mutex_unlock(&reserved_lock);
}

static struct rb2_noeal_arena *
arena_wrap(struct arena_hdr *h, size_t size, int fd)
{
	struct rb2_noeal_arena *a = calloc(1, sizeof(*a));

	if (a == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	a->h = h;
	a->size = size;
	a->fd = fd;
	a->msl.base_va = h;
	a->msl.len = size;
	a->msl.page_sz = h->huge ? HUGE_2M : 4096;
	if (arena_register(a) != 0) {
		free(a);
		errno = ENOSPC;
		return NULL;
	}
	return a;
}

/* An arena's size: room for the header and a page, in whole 2 MiB. */
static size_t
arena_size(size_t size)
{
	return RTE_ALIGN_CEIL(RTE_MAX(size, (size_t)HDR_BYTES + 4096), HUGE_2M);
}

/* Write the header of a fresh arena mapped at @h, and wrap it. On failure
 * the mapping and @fd go. */
static struct rb2_noeal_arena *
arena_init(struct arena_hdr *h, uintptr_t addr, size_t size, int fd, int huge)
{
	pthread_mutexattr_t ma;
	struct rb2_noeal_arena *a;
	int err;

	h->addr = addr;
	h->size = size;
	h->huge = (uint64_t)huge;
	h->brk = HDR_BYTES;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&h->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	/* Release: a process that attaches checks the magic last. */
	atomic_store_explicit((_Atomic uint64_t *)&h->magic, ARENA_MAGIC, memory_order_release);
	a = arena_wrap(h, size, fd);
	if (a == NULL) {
		err = errno;
		unmap_at(h, size);
		close(fd);
		errno = err;
	}
	return a;
}

struct rb2_noeal_arena *
rb2_noeal_arena_create(size_t size, uintptr_t addr, unsigned int flags)
{
	struct arena_hdr *h = NULL;
	int fd = -1, err;

	if (addr == 0)
		addr = RB2_NOEAL_ARENA_ADDR;
	if (addr % HUGE_2M != 0) {
		errno = EINVAL;
		return NULL;
	}
	size = arena_size(size);
	/* Hugepages where there are free ones: a hugetlb memfd's mmap fails
	 * at once when the pool is short, so trying costs nothing. */
	if (!(flags & RB2_NOEAL_ARENA_NO_HUGE))
		fd = memfd_create("rb2-arena", MFD_CLOEXEC | MFD_HUGETLB);
	if (fd >= 0 && (ftruncate(fd, (off_t)size) != 0 || (h = map_at(fd, addr, size)) == NULL)) {
		err = errno;
		close(fd);
		fd = -1;
		if (err == EEXIST) {
			errno = EEXIST;
			return NULL;
		}
	}
	if (fd >= 0)
		return arena_init(h, addr, size, fd, 1);
	fd = memfd_create("rb2-arena", MFD_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (ftruncate(fd, (off_t)size) != 0 || (h = map_at(fd, addr, size)) == NULL) {
		err = errno;
		close(fd);
		errno = err;
		return NULL;
	}
	return arena_init(h, addr, size, fd, 0);
}

int
rb2_noeal_arena_prepare(size_t size)
{
	int fd = memfd_create("rb2-arena", MFD_CLOEXEC | MFD_HUGETLB), err;

	if (fd < 0)
		return -errno;
	/* The header's hugepage allocated, and zeroed, into the file now: the
	 * arena's first touch later maps it as it is. Where the pool has no
	 * free page, fallocate says ENOSPC. */
	if (ftruncate(fd, (off_t)arena_size(size)) != 0 || fallocate(fd, 0, 0, (off_t)HUGE_2M) != 0) {
		err = errno;
		close(fd);
		return err == ENOSPC ? -ENOMEM : -err;
	}
	return fd;
}

struct rb2_noeal_arena *
rb2_noeal_arena_create_on(int fd, size_t size, uintptr_t addr)
{
	struct arena_hdr *h;
	struct statfs sfs;
	struct stat st;
	int err;

	if (addr == 0)
		addr = RB2_NOEAL_ARENA_ADDR;
	size = arena_size(size);
	if (addr % HUGE_2M != 0 || fstat(fd, &st) != 0 || (size_t)st.st_size != size ||
	    fstatfs(fd, &sfs) != 0 || sfs.f_type != HUGETLBFS_MAGIC) {
		close(fd);
		errno = EINVAL;
		return NULL;
	}
	h = map_at(fd, addr, size);
	if (h == NULL) {
		err = errno;
		close(fd);
		errno = err;
		return NULL;
	}
	/* Never handed out before: the header reads zero, as a fresh one. */
	if (h->magic != 0) {
		unmap_at(h, size);
		close(fd);
		errno = EINVAL;
		return NULL;
	}
	return arena_init(h, addr, size, fd, 1);
}

/* Attach the arena behind @fd, with a descriptor of its own if @keep_fd. */
static struct rb2_noeal_arena *
attach_how(int fd, int keep_fd)
{
	struct arena_hdr probe, *h;
	struct rb2_noeal_arena *a;
	int own, err;

	/* The header says where the arena goes and how big it is. */
	if (pread(fd, &probe, offsetof(struct arena_hdr, lock), 0) !=
	    (ssize_t)offsetof(struct arena_hdr, lock)) {
		/* A file that does not read(): map its first page instead. */
		size_t plen = HUGE_2M;
		void *p = mmap(NULL, plen, PROT_READ, MAP_SHARED, fd, 0);

		if (p == MAP_FAILED) {
			plen = 4096;
			p = mmap(NULL, plen, PROT_READ, MAP_SHARED, fd, 0);
		}
		if (p == MAP_FAILED) {
			errno = EINVAL;
			return NULL;
		}
		memcpy(&probe, p, offsetof(struct arena_hdr, lock));
		munmap(p, plen);
	}
	if (probe.magic != ARENA_MAGIC || probe.size == 0 || probe.addr % HUGE_2M != 0) {
		errno = EINVAL;
		return NULL;
	}
	own = keep_fd ? fcntl(fd, F_DUPFD_CLOEXEC, 3) : fd;
	if (own < 0)
		return NULL;
	h = map_at(own, (uintptr_t)probe.addr, (size_t)probe.size);
	if (h == NULL) {
		err = errno;
		if (keep_fd)
			close(own);
		errno = err;
		return NULL;
	}
	a = arena_wrap(h, (size_t)probe.size, keep_fd ? own : -1);
	if (a == NULL) {
		err = errno;
		unmap_at(h, (size_t)probe.size);
		if (keep_fd)
			close(own);
		errno = err;
	}
	return a;
}

struct rb2_noeal_arena *
rb2_noeal_arena_attach(int fd)
{
	return attach_how(fd, 1);
}

struct rb2_noeal_arena *
rb2_noeal_arena_map(int fd)
{
	return attach_how(fd, 0);
}

void
rb2_noeal_arena_detach(struct rb2_noeal_arena *a)
{
	if (a == NULL)
		return;
	/* Registered once, below arenas_hi (arena_register()). */
	unsigned int hi = atomic_load(&arenas_hi);

	for (unsigned int i = 0; i < hi; i++) {
		struct rb2_noeal_arena *me = a;

		if (atomic_load_explicit(&arenas[i], memory_order_relaxed) == a &&
		    atomic_compare_exchange_strong(&arenas[i], &me, NULL))
			break;
	}
	if (cur == a)
		cur = NULL;
	unmap_at(a->h, a->size);
	if (a->fd >= 0)
		close(a->fd);
	free(a);
}

void
rb2_noeal_arena_no_reuse(struct rb2_noeal_arena *a)
{
	a->no_reuse = 1;
}

void
rb2_noeal_arena_hold(struct rb2_noeal_arena *a, uint32_t holders)
{
	atomic_store_explicit(&a->h->holders, holders, memory_order_release);
}

void
rb2_noeal_arena_release(struct rb2_noeal_arena *a)
{
	uint32_t n;

	if (a == NULL)
		return;
	n = atomic_load_explicit(&a->h->holders, memory_order_relaxed);
	while (n > 0 && !atomic_compare_exchange_weak_explicit(&a->h->holders, &n, n - 1,
							       memory_order_acq_rel,
							       memory_order_relaxed))
		;
	rb2_noeal_arena_detach(a);
}

int
rb2_noeal_arena_holders(int fd)
{
	struct arena_hdr h;

	/* A plain read of the shared page: the count is one aligned word. */
	if (pread(fd, &h, offsetof(struct arena_hdr, zones), 0) !=
	    (ssize_t)offsetof(struct arena_hdr, zones))
		return -EINVAL;
	if (h.magic != ARENA_MAGIC)
		return -EINVAL;
	return (int)atomic_load_explicit(&h.holders, memory_order_relaxed);
}

int
rb2_noeal_arena_fd(const struct rb2_noeal_arena *a)
{
	return a->fd;
}

void
rb2_noeal_arena_drop_fd(struct rb2_noeal_arena *a)
{
	if (a->fd >= 0)
		close(a->fd);
	a->fd = -1;
}

void *
rb2_noeal_arena_base(const struct rb2_noeal_arena *a)
{
	return a->h;
}

size_t
rb2_noeal_arena_size(const struct rb2_noeal_arena *a)
{
	return a->size;
}

int
rb2_noeal_arena_huge(const struct rb2_noeal_arena *a)
{
	return a->h->huge != 0;
}

void
rb2_noeal_arena_use(struct rb2_noeal_arena *a)
{
	cur = a;
}

unsigned int
rb2_noeal_arena_zones(struct rb2_noeal_arena *a)
{
	unsigned int n;

	arena_lock(a->h);
	n = a->h->live;
	pthread_mutex_unlock(&a->h->lock);
	return n;
}

size_t
rb2_noeal_arena_used(struct rb2_noeal_arena *a)
{
	size_t n;

	arena_lock(a->h);
	n = a->h->brk - HDR_BYTES;
	pthread_mutex_unlock(&a->h->lock);
	return n;
}


int
rb2_noeal_arena_prefault(struct rb2_noeal_arena *a)
{
	size_t n;

	arena_lock(a->h);
	n = a->h->brk;
	pthread_mutex_unlock(&a->h->lock);
	n = RTE_ALIGN_CEIL(n, a->h->huge ? HUGE_2M : 4096);
	return madvise(a->h, RTE_MIN(n, a->size), MADV_POPULATE_WRITE) == 0 ? 0 : -errno;
}

/* The zone named @name in @h, or NULL. Under the lock. */
static struct zone *
zone_find(struct arena_hdr *h, const char *name)
{
	for (uint32_t i = 0; i < h->nzones; i++)
		if (h->zones[i].used && strncmp(h->zones[i].mz.name, name, RTE_MEMZONE_NAMESIZE) == 0)
			return &h->zones[i];
	return NULL;
}

const struct rte_memzone *
rte_memzone_reserve_aligned(const char *name, size_t len, int socket_id __rte_unused,
			    unsigned int flags __rte_unused, unsigned int align)
{
	struct rb2_noeal_arena *a = cur;
	struct zone *z = NULL;
	struct arena_hdr *h;
	uint64_t off;

	if (a == NULL || name == NULL || len == 0) {
		rte_errno = a == NULL ? ENOMEM : EINVAL;
		return NULL;
	}
	if (strlen(name) >= RTE_MEMZONE_NAMESIZE) {
		rte_errno = ENAMETOOLONG;
		return NULL;
	}
	if (align < RTE_CACHE_LINE_SIZE)
		align = RTE_CACHE_LINE_SIZE;
	if ((align & (align - 1)) != 0) {
		rte_errno = EINVAL;
		return NULL;
	}
	len = RTE_ALIGN_CEIL(len, RTE_CACHE_LINE_SIZE);
	h = a->h;
	arena_lock(h);
	if (zone_find(h, name) != NULL) {
		pthread_mutex_unlock(&h->lock);
		rte_errno = EEXIST;
		return NULL;
	}
	/* A free zone big enough and aligned (freed memory is zero), the
	 * smallest such; else fresh memory past brk. */
	for (uint32_t i = 0; i < h->nzones; i++) {
		struct zone *f = &h->zones[i];

		if (!f->used && f->cap >= len && f->mz.addr_64 % align == 0 &&
		    (z == NULL || f->cap < z->cap))
			z = f;
	}
	if (z == NULL) {
		off = RTE_ALIGN_CEIL(h->brk, (uint64_t)align);
		if (off + len > h->size) {
			pthread_mutex_unlock(&h->lock);
			rte_errno = ENOMEM;
			return NULL;
		}
		for (uint32_t i = 0; i < h->nzones && z == NULL; i++)
			if (!h->zones[i].used && h->zones[i].cap == 0)
				z = &h->zones[i];
		if (z == NULL) {
			if (h->nzones == ARENA_ZONES) {
				pthread_mutex_unlock(&h->lock);
				rte_errno = ENOSPC;
				return NULL;
			}
			z = &h->zones[h->nzones++];
		}
		z->cap = len;
		z->mz.addr_64 = h->addr + off;
		h->brk = off + len;
	}
	/* Every zone reads zero: fresh memory past brk, a freed one zeroed at
	 * its free, or here if its freer left it (a broken no_reuse promise).
	 * The drivers then skip their own zeroing (RB2_MEMZONE_F_ZEROED). */
	if (z->dirty) {
		memset((void *)(uintptr_t)z->mz.addr_64, 0, z->cap);
		z->dirty = 0;
	}
	snprintf(z->mz.name, sizeof(z->mz.name), "%s", name);
	z->mz.len = len;
	z->mz.iova = RTE_BAD_IOVA;
	z->mz.hugepage_sz = h->huge ? HUGE_2M : 4096;
	z->mz.socket_id = 0;
	z->mz.flags = RB2_MEMZONE_F_ZEROED;
	z->used = 1;
	h->live++;
	pthread_mutex_unlock(&h->lock);
	/* A ring's pages in one call, before whoever reserved it writes it
	 * all (the shm driver zeroes each region): a fault per page costs far
	 * more on a VM (rb2_noeal_arena_prefault()). */
	if (len >= PREFAULT_MIN)
		(void)madvise((void *)RTE_ALIGN_FLOOR(z->mz.addr_64, 4096),
			      RTE_ALIGN_CEIL(len + (z->mz.addr_64 & 4095), 4096), MADV_POPULATE_WRITE);
	return &z->mz;
}

const struct rte_memzone *
rte_memzone_reserve(const char *name, size_t len, int socket_id, unsigned int flags)
{
	return rte_memzone_reserve_aligned(name, len, socket_id, flags, RTE_CACHE_LINE_SIZE);
}

const struct rte_memzone *
rte_memzone_lookup(const char *name)
{
	struct rb2_noeal_arena *a = cur;
	struct zone *z;

	if (a == NULL)
		return NULL;
	arena_lock(a->h);
	z = zone_find(a->h, name);
	pthread_mutex_unlock(&a->h->lock);
	return z != NULL ? &z->mz : NULL;
}

/* The attached arena that holds @p, or NULL. */
static struct rb2_noeal_arena *
arena_of(const void *p)
{
	unsigned int hi = atomic_load(&arenas_hi);

	for (unsigned int i = 0; i < hi; i++) {
		struct rb2_noeal_arena *a = atomic_load(&arenas[i]);

		if (a != NULL && (uintptr_t)p >= (uintptr_t)a->h + HDR_BYTES &&
		    (uintptr_t)p < (uintptr_t)a->h + a->size)
			return a;
	}
	return NULL;
}

int
rte_memzone_free(const struct rte_memzone *mz)
{
	struct rb2_noeal_arena *a = mz != NULL ? arena_of(mz->addr) : NULL;
	struct zone *z = NULL;

	if (a == NULL)
		return -EINVAL;
	arena_lock(a->h);
	/* Only a descriptor of this arena's directory is freed. */
	for (uint32_t i = 0; i < a->h->nzones && z == NULL; i++)
		if (&a->h->zones[i].mz == mz)
			z = &a->h->zones[i];
	if (z == NULL || !z->used) {
		pthread_mutex_unlock(&a->h->lock);
		return -EINVAL;
	}
	/* Zeroed as DPDK's heap zeroes what it frees: a reused zone's
	 * readers (the rendezvous' magic) never see stale contents. */
	if (!a->no_reuse)
		memset(mz->addr, 0, z->cap);
	z->dirty = a->no_reuse != 0;
	memset(z->mz.name, 0, sizeof(z->mz.name));
	z->used = 0;
	a->h->live--;
	pthread_mutex_unlock(&a->h->lock);
	return 0;
}

struct rte_memseg_list *
rte_mem_virt2memseg_list(const void *virt)
{
	struct rb2_noeal_arena *a = arena_of(virt);

	return a != NULL ? &a->msl : NULL;
}

/* Asked of an arena's list only (rb2_conn_service_shared()): an arena is
 * mapped whole, so every page of it is in use. */
int
rte_fbarray_is_used(struct rte_fbarray *arr, unsigned int idx __rte_unused)
{
	return arr != NULL;
}

/* ---- What a process without the EAL has none of ---------------------------- */

/* rb2-raasd's request ring lives in an EAL process group: there is none
 * here, so joining the service says so (rb2_conn_service_join()). */
struct rte_ring *
rte_ring_lookup(const char *name __rte_unused)
{
	rte_errno = ENOENT;
	return NULL;
}
