/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * librb2_preload.so: TCP sockets of an unmodified program over rb2 streams
 * (doc/guides/prog_guide/preload.md). rb2-run puts it in LD_PRELOAD.
 *
 * Every socket stays a real kernel socket: the program's fd numbers, close,
 * dup, select's FD_SETSIZE and /proc/PID/fd are the kernel's. A connection
 * between two programs under rb2-run on this host is paired by rb2-sockd at
 * connect and accept (rb2_sockd.h) and its bytes then go through an
 * rb2_stream in an arena the two share; its kernel socket stays connected,
 * idle, as the stream's bell (a byte on it wakes a sleeping peer) and as
 * what the program's own poll, epoll and select wait on. Any other
 * connection is left to the kernel, counted with the reason.
 *
 * The calls below keep the kernel's semantics and errnos for the sockets
 * they take over; for every other fd they are the libc call they wrap.
 */

#define _GNU_SOURCE
/* fcntl and fcntl64, sendfile and sendfile64 are each exported under both
 * names: with 64-bit file offsets the headers would rename our fcntl to
 * fcntl64. (off_t is 64 bits on this ABI either way.) */
#undef _FILE_OFFSET_BITS
#include <dirent.h>
#include <dlfcn.h>
#include <linux/kcmp.h>
#include <linux/seccomp.h>
#include <linux/sched.h>        /* struct clone_args */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/errqueue.h>     /* MSG_ZEROCOPY's reports; after time.h */

#include <rte_log.h>

#include <rb2_noeal.h>
#include <rb2_xport.h>

#include "rb2_sockd.h"
#include "rb2_stream.h"

#define EXPORT __attribute__((visibility("default")))

/* ---- The libc calls underneath -------------------------------------------- */

static struct {
	int (*socket)(int, int, int);
	int (*close)(int);
	int (*listen)(int, int);
	int (*accept)(int, struct sockaddr *, socklen_t *);
	int (*accept4)(int, struct sockaddr *, socklen_t *, int);
	int (*connect)(int, const struct sockaddr *, socklen_t);
	int (*bind)(int, const struct sockaddr *, socklen_t);
	ssize_t (*read)(int, void *, size_t);
	ssize_t (*readv)(int, const struct iovec *, int);
	ssize_t (*write)(int, const void *, size_t);
	ssize_t (*writev)(int, const struct iovec *, int);
	ssize_t (*recv)(int, void *, size_t, int);
	ssize_t (*recvfrom)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
	ssize_t (*recvmsg)(int, struct msghdr *, int);
	ssize_t (*send)(int, const void *, size_t, int);
	ssize_t (*sendto)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
	ssize_t (*sendmsg)(int, const struct msghdr *, int);
	ssize_t (*sendfile)(int, int, off_t *, size_t);
	int (*shutdown)(int, int);
	int (*poll)(struct pollfd *, nfds_t, int);
	int (*ppoll)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
	int (*select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
	int (*pselect)(int, fd_set *, fd_set *, fd_set *, const struct timespec *,
		       const sigset_t *);
	int (*epoll_ctl)(int, int, int, struct epoll_event *);
	int (*epoll_wait)(int, struct epoll_event *, int, int);
	int (*epoll_pwait)(int, struct epoll_event *, int, int, const sigset_t *);
	int (*fcntl)(int, int, ...);
	int (*ioctl)(int, unsigned long, ...);
	int (*dup)(int);
	int (*dup2)(int, int);
	int (*dup3)(int, int, int);
	int (*execve)(const char *, char *const[], char *const[]);
	int (*execvpe)(const char *, char *const[], char *const[]);
	int (*fexecve)(int, char *const[], char *const[]);
	pid_t (*fork)(void);
	long (*syscall)(long, ...);
	int (*close_range)(unsigned int, unsigned int, int);
	void (*closefrom)(int);
	int (*sendmmsg)(int, struct mmsghdr *, unsigned int, int);
	int (*recvmmsg)(int, struct mmsghdr *, unsigned int, int, struct timespec *);
	ssize_t (*splice)(int, loff_t *, int, loff_t *, size_t, unsigned int);
	int (*setsockopt)(int, int, int, const void *, socklen_t);
	int (*getsockopt)(int, int, int, void *, socklen_t *);
	FILE *(*fdopen)(int, const char *);
	int (*prctl)(int, ...);
	int (*posix_spawn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
			   const posix_spawnattr_t *, char *const[], char *const[]);
	int (*posix_spawnp)(pid_t *, const char *, const posix_spawn_file_actions_t *,
			    const posix_spawnattr_t *, char *const[], char *const[]);
	int (*system)(const char *);
} real;

static void
real_resolve(void)
{
#define RESOLVE(f) real.f = dlsym(RTLD_NEXT, #f)
	RESOLVE(socket); RESOLVE(close); RESOLVE(listen); RESOLVE(accept); RESOLVE(accept4);
	RESOLVE(connect); RESOLVE(bind); RESOLVE(read); RESOLVE(readv); RESOLVE(write);
	RESOLVE(writev); RESOLVE(recv); RESOLVE(recvfrom); RESOLVE(recvmsg); RESOLVE(send);
	RESOLVE(sendto); RESOLVE(sendmsg); RESOLVE(sendfile); RESOLVE(shutdown); RESOLVE(poll);
	RESOLVE(ppoll); RESOLVE(select); RESOLVE(pselect); RESOLVE(epoll_ctl); RESOLVE(epoll_wait);
	RESOLVE(epoll_pwait); RESOLVE(fcntl); RESOLVE(ioctl); RESOLVE(dup); RESOLVE(dup2);
	RESOLVE(dup3); RESOLVE(execve); RESOLVE(execvpe); RESOLVE(fexecve); RESOLVE(fork);
	RESOLVE(syscall); RESOLVE(close_range); RESOLVE(closefrom);
	RESOLVE(sendmmsg); RESOLVE(recvmmsg);
	RESOLVE(splice); RESOLVE(setsockopt); RESOLVE(getsockopt); RESOLVE(fdopen); RESOLVE(prctl);
	RESOLVE(posix_spawn); RESOLVE(posix_spawnp); RESOLVE(system);
#undef RESOLVE
}

/* The libc call underneath wrapper f. A wrapper may run before our
 * constructor: the preloaded library is initialised after the libraries
 * the program links, and their constructors may read, close or fork
 * (libcap-ng's reads /proc/sys/kernel/cap_last_cap, so every program
 * linked with it, PostgreSQL's server among them, called a null read()).
 * So the first call before it resolves them all. Until the constructor
 * has run, the wrappers' tables are empty and every fd is libc's. */
#define REAL(f) (__builtin_expect(real.f != NULL, 1) ? real.f : (real_resolve(), real.f))

/* ---- What this process knows of its sockets -------------------------------- */

struct psock {
	_Atomic int refs;            /* fds that name it (dup) */
	/* Reads and writes under way in it (psock_enter()): its last fd's
	 * close leaves it to the last of them (psock_leave()), as the
	 * kernel's socket lives on while a call holds its file. gone: the
	 * last fd closed; then, under life_lock, keep_fd (a copy of the
	 * socket the stream uses from then on, past the program's fds) and
	 * ended (its end is under way, once). */
	_Atomic int users, gone;
	pthread_mutex_t life_lock;
	int keep_fd, ended;
	struct psock *kept_next;     /* in kept_head's list while keep_fd is its copy */
	struct psock *limbo_next;    /* freed: in the limbo queue (psock_free()) */
	uint64_t limbo_ns;           /* freed: when */
	int nonblock;                /* O_NONBLOCK, shared by dups as the kernel's */
	int reg_fd;                  /* a listener's registration with rb2-sockd, or -1 */
	int handed_on;               /* ... which a fork, spawn, exec or SCM_RIGHTS may
				      * have given another process (lone_listener()) */
	int defer_kept, defer_val;   /* its TCP_DEFER_ACCEPT, kept off the kernel's (keep_defer()) */
	int inherited;               /* from before a fork: the stream is the parent's */
	int uncounted;               /* ... and the fork took no hold for this copy */
	uint64_t held_fork;          /* the fork that took a hold for the child's copy */
	int exec_stood_in;           /* an exec gave this process's copy up: stand-ins */
	/* A fork child's copy of its parent's stream to another host, which
	 * only the parent can post on (away_begin()): put aside, its fds
	 * given stand-ins. */
	struct rb2_stream *away_st;
	_Atomic int away_told;       /* a call used it: said, and the end reset */
	uint64_t away_fork;          /* the fork that put it aside (this_fork) */
	uint64_t base_in, base_out;  /* its bytes at the fork: the parent's, not counted here */
	struct rb2_stream *st;       /* NULL: kernel TCP */
	struct rb2_noeal_arena *arena;
	int rslot;                   /* across hosts: its arena's place (remote_arena()), else -1 */
	pthread_mutex_t rx_lock, tx_lock;
	int rcvtimeo_ms, sndtimeo_ms;   /* 0: none */
	/* Times a read found nothing and a write found no room: after one,
	 * an edge-triggered entry reports the event again once it stands, as
	 * the kernel's does (a writer may see room only after its own look
	 * refreshed its view of the reader's head, with no new edge). */
	_Atomic uint32_t rx_dry, tx_full;
	/* A set-up that goes on in the background (pend_start()): until it
	 * is done the socket is neither readable nor writable, and its calls
	 * say EAGAIN, or wait if it blocks. pend_efd becomes readable then. */
	_Atomic int pending;
	int pend_efd;                /* an eventfd, -1 if none was made */
	int pend_cancel_fd;          /* what a close shuts down to end it early */
	int pend_cancelled;          /* ... and did: PEND_CLOSE or PEND_SHUTDOWN */
	int pend_on_host;            /* the set-up is one host's (PEND_PAIR) */
	struct psock *held_next;     /* on the held list (held_add()) ... */
	int held_listed;             /* ... while this says so */
	/* MSG_ZEROCOPY under SO_ZEROCOPY (zc_sent()): each send that took
	 * bytes is given the next id; those not reported yet, zc_lo to
	 * zc_hi, wait on the error queue. Changed under zc_lock; a poll
	 * looks at zc_waiting alone, without it. */
	pthread_mutex_t zc_lock;
	uint32_t zc_next, zc_lo, zc_hi;
	_Atomic int zc_waiting;
};

static struct psock *_Atomic *tab;
static unsigned int tab_size;
/*
 * The process (not the thread) this image runs in: a vfork child runs in
 * its parent's memory with a pid of its own, and must leave that memory as
 * it found it (in_vfork_child()).
 */
static pid_t image_pid;
static int active;               /* the service's path is known: pair through it */
static uint32_t ask_flags;       /* RB2_SOCKD_F_VERBS: this host has an RDMA device */
static _Atomic int used;         /* this process made or accepted a TCP socket */
static char sockd_path[108];
static int want_stats;           /* RB2_RUN_STATS=1, or a file's path */
static char stats_path[4096];    /* RB2_RUN_STATS=/PATH: the file the line goes to */
static int use_efd = 1;          /* RB2_RUN_BELL=socket: 0, bells on the socket alone */
static unsigned int connect_timeout_ms = 5000;
/* RB2_RUN_FAULT_FLIP=N (tests only): flip a bit of the N-th byte this
 * process receives over rb2, so a test can show that it catches one. */
static uint64_t flip_at;
static _Atomic uint64_t rx_seen;
/* RB2_RUN_FAULT_PAIR_LATE_MS=N (tests only): a set-up in the background
 * takes the service's answer N ms after it came, so that a test can close
 * the socket between the pairing and the thread's use of it. */
static unsigned int pair_late_ms;
/* RB2_RUN_FAULT_ADOPT_LATE_MS=N (tests only): a set-up that ends with the
 * stream up waits N ms between waking the program's epoll waits and
 * clearing its mark, the window pend_still() covers. */
static unsigned int adopt_late_ms;

/* Counters for the stats line. */
#define REASONS 8
static struct {
	pthread_mutex_t lock;
	uint64_t offloaded, remote, bytes_in, bytes_out, failed;
	struct { char why[96]; uint64_t n; } plain[REASONS];
	uint64_t plain_other;
	uint64_t exec_ended;
	uint64_t closes_behind;          /* across hosts: closes finished in the background */
	uint64_t foreign_resets, foreign_bytes;   /* bytes past our calls: reset */
	uint64_t wrs, doorbells;         /* across hosts: send WRs, and their posts */
	uint64_t held, held_flushes;     /* across hosts: writes batched, and sent by a flush */
	uint64_t sleeps, wake_requests;  /* across hosts: sleeps, and the CQ arms they made, */
	uint64_t wake_reads;             /* ... and the reads of channels on waking, */
	uint64_t held_sleeps;            /* ... and those with a write held for credits */
	/* Across hosts, where a stream's set-up went, summed over the streams
	 * opened (stats.remote): asking our service, the kernel's connect (the
	 * client's), the arena, then rb2_stream_open_remote() (this end's
	 * queues; connecting them to the peer's), and prefaulting the arena. */
	uint64_t su_service, su_kernel, su_arena, su_open, su_connect, su_prefault;
} stats = { .lock = PTHREAD_MUTEX_INITIALIZER };

static uint64_t now_ns(void);

/*
 * Batching across hosts (rb2_stream_batch()): a write made while the
 * stream's last publication is unacknowledged is held in the ring and goes
 * with the next one, so a program writing many small messages moves them
 * in few WRITEs, as kernel TCP moves them in few segments. Held bytes go
 * out at the latest when this process waits (poll, epoll, select, a
 * blocking read or write: a request is never held while its sender waits
 * for the answer), when the ring is full, at close and exit, or after
 * RB2_RUN_BATCH_US (default 500 µs; 0 turns batching off), sent by a thread
 * of ours that sleeps while nothing is held: a program that writes and
 * then computes, or sleeps, is not held up longer than that.
 */
static _Atomic uint64_t batch_ns = 500000;   /* 0: off (also when no thread starts) */
static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t held_cond = PTHREAD_COND_INITIALIZER;
static struct psock *held_head;
static _Atomic int held_n;               /* streams on the list: the waits' quick look */
static pid_t held_thread_pid;            /* the process whose thread sends them */

/* Add what stream @p moved to the process's figures (caller holds the lock
 * or is alone). A fork child's copy counts bytes since the fork, and no
 * WRs: it cannot post on its parent's queues. */
static void
stats_add_stream(struct psock *p)
{
	struct rb2_stream_stats st;

	rb2_stream_stats(p->st, &st);
	stats.bytes_in += st.bytes_in - p->base_in;
	stats.bytes_out += st.bytes_out - p->base_out;
	stats.foreign_resets += st.foreign_bytes != 0;
	stats.foreign_bytes += st.foreign_bytes;
	if (!p->inherited) {
		stats.wrs += st.wrs;
		stats.doorbells += st.doorbells;
		stats.held += st.held;
		stats.held_flushes += st.flushes;
		if (p->rslot >= 0) {
			stats.sleeps += st.sleeps;
			stats.wake_requests += st.wake_requests;
			stats.wake_reads += st.wake_reads;
			stats.held_sleeps += st.held_sleeps;
		}
	}
}

static void
count_plain(const char *why)
{
	pthread_mutex_lock(&stats.lock);
	for (unsigned int i = 0; i < REASONS; i++) {
		if (stats.plain[i].n != 0 && strcmp(stats.plain[i].why, why) != 0)
			continue;
		if (stats.plain[i].n == 0)
			snprintf(stats.plain[i].why, sizeof(stats.plain[i].why), "%s", why);
		stats.plain[i].n++;
		pthread_mutex_unlock(&stats.lock);
		return;
	}
	stats.plain_other++;
	pthread_mutex_unlock(&stats.lock);
}

static struct psock *
get(int fd)
{
	if (fd < 0 || (unsigned int)fd >= tab_size || tab == NULL)
		return NULL;
	return atomic_load_explicit(&tab[fd], memory_order_acquire);
}

static struct psock *
track(int fd)
{
	struct psock *p;

	if (fd < 0 || (unsigned int)fd >= tab_size)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return NULL;
	p->refs = 1;
	p->reg_fd = -1;
	p->rslot = -1;
	p->pend_efd = -1;
	p->pend_cancel_fd = -1;
	atomic_store_explicit(&used, 1, memory_order_relaxed);
	pthread_mutex_init(&p->life_lock, NULL);
	p->keep_fd = -1;
	pthread_mutex_init(&p->rx_lock, NULL);
	pthread_mutex_init(&p->tx_lock, NULL);
	pthread_mutex_init(&p->zc_lock, NULL);
	atomic_store_explicit(&tab[fd], p, memory_order_release);
	return p;
}

/* ---- Other hosts: this process's verbs transport and arenas ---------------- */

/* Below a soft descriptor limit of this, our descriptors stay where the
 * kernel puts them (preload_init()). */
#define RB2_RUN_FD_FLOOR_MIN 64

/* Streams to other hosts keep their rings in arenas of this process's own
 * (nobody else maps them), past rb2-sockd's 65536 slots of 4 MiB. */
#define REMOTE_SLOTS 4096
#define REMOTE_ARENA_BASE (RB2_NOEAL_ARENA_ADDR + ((uint64_t)RB2_STREAM_ARENA_SLOTS << 22))
static pthread_mutex_t remote_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rb2_xport *remote_xp;
static pid_t remote_pid;
static uint64_t remote_used[REMOTE_SLOTS / 64];

/* The process's verbs transport, opened at its first stream to another
 * host. A device context of its own (cm=0): a child must not use its
 * parent's (the kernel refuses it), so after a fork it opens another. */
static struct rb2_xport *
remote_xport(void)
{
	struct rb2_xport *xp;

	pthread_mutex_lock(&remote_lock);
	if (remote_xp != NULL && remote_pid != getpid())
		remote_xp = NULL;     /* the parent's, left to it */
	if (remote_xp == NULL) {
		const char *dev = getenv("RB2_RUN_RDMA_DEV");
		const char *more = getenv("RB2_RUN_VERBS_ARGS");
		char args[256];

		/* 7 retries, which Soft-RoCE takes as no limit: it counts
		 * each NAK for a reordered packet as a retry and starts the
		 * count again only at an ACK, which it asks for at the end
		 * of a WR, so a WRITE of many packets failed under netem's
		 * reordering between two guests. The stream's kernel socket
		 * finds a dead host instead (RB2_STREAM_KEEPIDLE_S).
		 * With retries that never end, the ACK timeout only says how
		 * soon what a reordered or lost packet left unacknowledged
		 * goes again: 1 MB each way under reordering took 24.6 s at
		 * 0.54 s (17), 5.4 s at 67 ms (14; doc/eval/rb2-run-two.md).
		 * RB2_RUN_VERBS_ARGS comes first: a key given twice takes
		 * its first value, so the user's overrides these. */
		snprintf(args, sizeof(args), "%s%scm=0,ack_timeout=14,retry_cnt=7%s%s",
			 more != NULL ? more : "", more != NULL && *more ? "," : "",
			 dev != NULL ? ",dev=" : "", dev != NULL ? dev : "");
		remote_xp = rb2_xport_open("verbs", args);
		remote_pid = getpid();
	}
	xp = remote_xp;
	pthread_mutex_unlock(&remote_lock);
	return xp;
}

/* The ranges where this process maps its streams' arenas, reserved
 * (rb2_noeal_reserve()): a connection's arena then maps and unmaps without
 * the kernel allocating, clearing and freeing the page tables above it
 * each time: a third less CPU a connection, at both ends and in the
 * service, under a loop of connects. Done at the first stream, so a process that has none shows no
 * such range in its maps. Where it cannot be (RLIMIT_AS set), arenas map as
 * they would without. */
static void
reserve_arena_ranges(void)
{
	(void)rb2_noeal_reserve(RB2_STREAM_ARENA_BASE,
				(size_t)RB2_STREAM_ARENA_SLOTS * RB2_STREAM_ARENA_SIZE);
	(void)rb2_noeal_reserve(REMOTE_ARENA_BASE, (size_t)REMOTE_SLOTS * RB2_STREAM_ARENA_SIZE);
}

static pthread_once_t arena_ranges_once = PTHREAD_ONCE_INIT;

/* An arena for one stream to another host, at a free place of ours. */
static struct rb2_noeal_arena *
remote_arena(int *slot)
{
	pthread_once(&arena_ranges_once, reserve_arena_ranges);
	pthread_mutex_lock(&remote_lock);
	for (int k = 0; k < REMOTE_SLOTS; k++) {
		struct rb2_noeal_arena *a;

		if (remote_used[k / 64] & (1ull << (k % 64)))
			continue;
		a = rb2_noeal_arena_create(RB2_STREAM_ARENA_SIZE, REMOTE_ARENA_BASE +
					   ((uint64_t)k << 22), 0);
		if (a == NULL && errno == EEXIST)
			continue;            /* taken here by something else */
		if (a != NULL) {
			rb2_noeal_arena_drop_fd(a);   /* nobody else maps it */
			rb2_noeal_arena_no_reuse(a);  /* one stream's, unmapped after */
			remote_used[k / 64] |= 1ull << (k % 64);
			*slot = k;
		}
		pthread_mutex_unlock(&remote_lock);
		return a;
	}
	pthread_mutex_unlock(&remote_lock);
	errno = ENOSPC;
	return NULL;
}

static void
remote_arena_free(int slot)
{
	pthread_mutex_lock(&remote_lock);
	remote_used[slot / 64] &= ~(1ull << (slot % 64));
	pthread_mutex_unlock(&remote_lock);
}

/* In a thread of ours: the program's signals go to its own threads. */
static void
block_signals(void)
{
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
}

/* ---- Other hosts: ends made ahead ------------------------------------------ */

/*
 * A thread of the process's own makes ends of streams to other hosts
 * before their connections (rb2_stream_make_remote()), each in an arena of
 * its own, prefaulted: a connect or an accept takes one and only joins it
 * to the peer's, the device's system calls off its way. RB2_RUN_AHEAD ends
 * wait (at most AHEAD_MAX; 0, the default: none). Off by default: between
 * two TCG guests, whose four vCPUs share the host's two cores, the work
 * only moved, and set-up took as long (doc/eval/rb2-run-two.md, "Ends made
 * ahead"). It pays only where a core is idle while the program connects.
 * The thread starts at the
 * process's second stream to another host: a client of one connection
 * (redis-cli, curl) makes none it would not use. It stops for good at its
 * first failure (out of arenas, or of memory the device may pin:
 * RLIMIT_MEMLOCK); the ends it made are still taken, and connects make
 * their own, failing as they would have.
 */
#define AHEAD_MAX 16
struct made {
	struct rb2_stream *st;
	struct rb2_noeal_arena *arena;
	int slot;
};
static struct {
	pthread_mutex_t lock;
	pthread_cond_t taken;            /* the maker waits for a take */
	pthread_cond_t idle;             /* a fork waits for the maker */
	struct made m[AHEAD_MAX];
	unsigned int n, want;
	int making;                      /* the maker is in the transport's calls */
	pid_t pid;                       /* whose maker runs: a fork child starts its own */
	uint64_t asked;                  /* ends needed before the maker started */
	uint64_t used;                   /* ends taken (the stats line) */
} ahead = { .lock = PTHREAD_MUTEX_INITIALIZER, .taken = PTHREAD_COND_INITIALIZER,
	    .idle = PTHREAD_COND_INITIALIZER, .want = 0 };

static void *
ahead_main(void *arg)
{
	struct rb2_xport *xp = arg;

	block_signals();
	for (;;) {
		struct made m;

		pthread_mutex_lock(&ahead.lock);
		while (ahead.n >= ahead.want)
			pthread_cond_wait(&ahead.taken, &ahead.lock);
		ahead.making = 1;
		pthread_mutex_unlock(&ahead.lock);
		m.st = NULL;
		m.arena = remote_arena(&m.slot);
		if (m.arena != NULL) {
			rb2_noeal_arena_use(m.arena);
			m.st = rb2_stream_make_remote(xp);
			if (m.st == NULL) {
				rb2_noeal_arena_detach(m.arena);
				remote_arena_free(m.slot);
			} else {
				(void)rb2_noeal_arena_prefault(m.arena);
			}
		}
		pthread_mutex_lock(&ahead.lock);
		if (m.st != NULL)
			ahead.m[ahead.n++] = m;
		else
			ahead.want = 0;
		ahead.making = 0;
		pthread_cond_broadcast(&ahead.idle);
		pthread_mutex_unlock(&ahead.lock);
		if (m.st == NULL)
			return NULL;
	}
}

/* A fork waits until the maker is out of the transport's calls, whose
 * locks the child would otherwise find taken for good, and keeps it out
 * (ahead.lock held) until the fork is done. */
static void
ahead_prefork(void)
{
	pthread_mutex_lock(&ahead.lock);
	while (ahead.making)
		pthread_cond_wait(&ahead.idle, &ahead.lock);
}

static void
ahead_postfork_parent(void)
{
	pthread_mutex_unlock(&ahead.lock);
}

/* An end made ahead for @xp, the process's transport, into @m, and the
 * maker started if it is not running. @return 1, or 0: none waits. */
static int
ahead_take(struct rb2_xport *xp, struct made *m)
{
	int got = 0;

	pthread_mutex_lock(&ahead.lock);
	if (ahead.want > 0 && ahead.pid != getpid() && ++ahead.asked >= 2) {
		pthread_t t;
		pthread_attr_t a;

		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&t, &a, ahead_main, xp) == 0)
			ahead.pid = getpid();
		else
			ahead.want = 0;      /* every connect makes its own */
		pthread_attr_destroy(&a);
	}
	if (ahead.n > 0) {
		*m = ahead.m[--ahead.n];
		ahead.used++;
		got = 1;
	}
	pthread_cond_signal(&ahead.taken);
	pthread_mutex_unlock(&ahead.lock);
	return got;
}

/* REMOTE: open our end of a stream to another host over socket @fd, its
 * queues connected over the socket itself; @service_ns and @kernel_ns are
 * what asking the service and the kernel's connect took before (the stats
 * line's set-up figures). @return 0 or -errno. */
static int
open_remote(struct psock *p, int fd, int is_client, uint64_t service_ns, uint64_t kernel_ns)
{
	struct rb2_xport *xp = remote_xport();
	struct rb2_stream_stats st;
	uint64_t t0 = now_ns(), t1 = t0, t2 = 0, t3 = 0;
	struct made m;
	int ret, here = 0;               /* made on this thread, not ahead */

	if (xp == NULL)
		return -ENODEV;
	if (!ahead_take(xp, &m)) {
		m.arena = remote_arena(&m.slot);
		if (m.arena == NULL)
			return -errno;
		t1 = now_ns();
		rb2_noeal_arena_use(m.arena);
		m.st = rb2_stream_make_remote(xp);
		if (m.st == NULL) {
			ret = -errno;
			rb2_noeal_arena_detach(m.arena);
			remote_arena_free(m.slot);
			return ret;
		}
		here = 1;
	}
	rb2_noeal_arena_use(m.arena);
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
	/* The peer is told to connect at once; it waits at most this long for
	 * our half, as we for its. */
	ret = rb2_stream_join_remote(m.st, is_client, fd, RB2_SOCKD_EXPECT_MS);
	if (ret < 0) {
		rb2_noeal_arena_detach(m.arena);
		remote_arena_free(m.slot);
		return ret;
	}
	p->arena = m.arena;
	p->rslot = m.slot;
	p->st = m.st;
	if (atomic_load_explicit(&batch_ns, memory_order_relaxed) != 0)
		(void)rb2_stream_batch(p->st, 1);
	if (here) {                      /* an end made ahead was prefaulted */
		t2 = now_ns();
		(void)rb2_noeal_arena_prefault(p->arena);
		t3 = now_ns();
	}
	rb2_stream_stats(p->st, &st);
	pthread_mutex_lock(&stats.lock);
	stats.offloaded++;
	stats.remote++;
	stats.su_service += service_ns;
	stats.su_kernel += kernel_ns;
	stats.su_arena += t1 - t0;
	stats.su_open += here ? st.open_ns : 0;
	stats.su_connect += st.connect_ns;
	stats.su_prefault += t3 - t2;
	pthread_mutex_unlock(&stats.lock);
	return 0;
}

static void ep_drop_wake(int wfd);

/* Send what every listed stream holds. A stream whose writer is inside a
 * call now (its lock taken) stays listed: that call sends it or lists it
 * again. So does one whose publication waits for the peer's credits: the
 * thread tries it again (held_main()), and a wait on it sleeps until the
 * credits come (rb2_stream_sleep_events()). @return how many streams left
 * the list. */
static unsigned int
held_flush_pass(void)
{
	unsigned int sent = 0;
	struct psock **pp;

	if (atomic_load_explicit(&held_n, memory_order_acquire) == 0)
		return 0;
	pthread_mutex_lock(&held_lock);
	for (pp = &held_head; *pp != NULL;) {
		struct psock *p = *pp;
		int still;

		if (pthread_mutex_trylock(&p->tx_lock) != 0) {
			pp = &p->held_next;
			continue;
		}
		(void)rb2_stream_flush(p->st);
		still = rb2_stream_held(p->st);
		pthread_mutex_unlock(&p->tx_lock);
		if (still) {
			pp = &p->held_next;
			continue;
		}
		*pp = p->held_next;
		p->held_listed = 0;
		sent++;
		atomic_fetch_sub_explicit(&held_n, 1, memory_order_release);
	}
	pthread_mutex_unlock(&held_lock);
	return sent;
}

static void
held_flush_all(void)
{
	(void)held_flush_pass();
}

/* ---- Closes that wait for the reader, finished in the background ----------- */

/*
 * A close across hosts whose writes wait for the reader's credits, or whose
 * end waits for room, would block the program for as long as the reader
 * takes to read (up to RB2_STREAM_LINGER_MS without progress). Kernel TCP's
 * close returns at once and sends the rest behind it. So such a close goes
 * on in the background, and the program's fd is free at once. One thread,
 * the closer, finishes all of them: it steps each (rb2_stream_close_step(),
 * which sends what the reader's credits and room let go, without waiting)
 * and naps between passes, from CLOSER_NAP_MIN_NS doubling up to
 * CLOSER_NAP_MAX_NS while none moves, as the flusher backs off (held_main()).
 * A thread per close, each asleep on its sender's completion channel, would
 * learn of the credits sooner, but a server closing on a thousand slow
 * readers would run a thousand threads; kernel TCP runs none. The closer
 * exits when the last close is done. Each close holds a duplicate of the
 * kernel socket, so that the FIN still comes after the end (the reader
 * takes a FIN with no end for a process that died), and closes it last. A
 * program that set SO_LINGER gets the blocking close it asked for. The exit
 * handler waits for these closes (streams_end_at_exit()).
 */
#define CLOSER_NAP_MIN_NS 1000000ull
#define CLOSER_NAP_MAX_NS 20000000ull

struct closer {
	struct rb2_stream *st;
	struct rb2_noeal_arena *arena;
	int rslot, fd;           /* fd: the duplicate of the kernel socket */
	_Atomic int await;       /* a fork child still holds the end: not yet */
	struct closer *next;
};
static pthread_mutex_t closer_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t closer_done;       /* a close ended; on CLOCK_MONOTONIC (closer_init()) */
static pthread_cond_t closer_more;       /* a close was added, for the closer */
static struct closer *closers;           /* under closer_lock: still closing, newest first */
static pid_t closer_pid;                 /* under closer_lock: the process whose closer runs */
static uint64_t closer_added;            /* under closer_lock: closes ever listed */

static void
closer_init(void)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&closer_done, &ca);
	pthread_cond_init(&closer_more, &ca);
	pthread_condattr_destroy(&ca);
}

/* @c's close will not wait any more: finish it, off the list, and the exit
 * handler told. */
static void
closer_finish(struct closer *c)
{
	rb2_stream_close(c->st);
	REAL(close)(c->fd);               /* the FIN, behind the end */
	rb2_noeal_arena_detach(c->arena);
	remote_arena_free(c->rslot);
	pthread_mutex_lock(&closer_lock);
	for (struct closer **cc = &closers; *cc != NULL; cc = &(*cc)->next) {
		if (*cc == c) {
			*cc = c->next;
			break;
		}
	}
	pthread_cond_broadcast(&closer_done);
	pthread_mutex_unlock(&closer_lock);
	free(c);
}

static void *
closer_main(void *arg)
{
	uint64_t nap_ns = CLOSER_NAP_MIN_NS;

	(void)arg;
	block_signals();
	pthread_mutex_lock(&closer_lock);
	while (closers != NULL) {
		struct closer *c = closers, *next;
		uint64_t added = closer_added, t;
		struct timespec until;
		int moved = 0;

		/* Stepped outside the lock, which the program's closes take
		 * to add theirs at the head: the rest of the list is this
		 * thread's alone to change. */
		pthread_mutex_unlock(&closer_lock);
		for (; c != NULL; c = next) {
			int r;

			/* A fork child holds the end on: the close begins once
			 * it let its copy go, or ended. */
			if (c->await && !rb2_stream_fork_others(c->st))
				c->await = 0;
			r = c->await ? 1 : rb2_stream_close_step(c->st);
			next = c->next;
			if (r == 0)
				closer_finish(c);
			moved |= r != 1;
		}
		nap_ns = moved ? CLOSER_NAP_MIN_NS : RTE_MIN(nap_ns * 2, CLOSER_NAP_MAX_NS);
		clock_gettime(CLOCK_MONOTONIC, &until);
		t = (uint64_t)until.tv_nsec + nap_ns;
		until.tv_sec += (time_t)(t / 1000000000ull);
		until.tv_nsec = (long)(t % 1000000000ull);
		pthread_mutex_lock(&closer_lock);
		/* A close added meanwhile is stepped at once. */
		while (closers != NULL && closer_added == added &&
		       pthread_cond_timedwait(&closer_more, &closer_lock, &until) != ETIMEDOUT)
			;
	}
	closer_pid = 0;
	pthread_mutex_unlock(&closer_lock);
	return NULL;
}

/* Close @p, the last of @fd's psock, in the background if it would wait for
 * its reader, or (across hosts) for a fork child that holds the end: the
 * child cannot post on this process's queues, so this process ends the
 * stream once the child let its copy go (its close, exec or end), and not
 * before: an end sent now would read at the peer as a close while the
 * child still holds the connection (a forking server's parent closes its
 * copy at once). @return 1 if it does (p's stream is gone from it), else 0. */
static int
close_in_background(struct psock *p, int fd)
{
	struct linger l = { 0, 0 };
	socklen_t len = sizeof(l);
	struct closer *c;
	int ret, await;

	if (p->st == NULL || p->rslot < 0 || p->inherited)
		return 0;
	await = !p->uncounted && rb2_stream_fork_others(p->st);
	if (!await && getsockopt(fd, SOL_SOCKET, SO_LINGER, &l, &len) == 0 && l.l_onoff)
		return 0;                /* the program asked to wait */
	if (!await && !rb2_stream_close_would_wait(p->st))
		return 0;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return 0;
	/* Past the program's descriptors, as keep_fd: a range it closes
	 * leaves it (close_around_ours()), and must not leave it on a number
	 * the program counts on. */
	c->fd = rb2_xport_fd_raise(REAL(fcntl)(fd, F_DUPFD_CLOEXEC, 0));
	if (c->fd < 0) {
		free(c);
		return 0;
	}
	c->st = p->st;
	c->arena = p->arena;
	c->rslot = p->rslot;
	c->await = await;
	rb2_stream_move_bell(c->st, c->fd);
	pthread_mutex_lock(&closer_lock);
	ret = 0;
	if (closer_pid != getpid()) {
		pthread_attr_t attr;
		pthread_t t;

		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		ret = pthread_create(&t, &attr, closer_main, NULL);
		pthread_attr_destroy(&attr);
		if (ret == 0)
			closer_pid = getpid();
	}
	if (ret != 0) {
		/* No closer: the close blocks, as the program's own. */
		pthread_mutex_unlock(&closer_lock);
		rb2_stream_move_bell(c->st, fd);
		REAL(close)(c->fd);
		free(c);
		return 0;
	}
	/* Its completion channels and the kernel socket leave the program's
	 * epoll sets: they live on, and with the duplicate the kernel would
	 * keep the socket's entries, reporting a closed fd. All before the
	 * closer, which may finish the stream at once, sees it listed; a
	 * closer just started waits for the lock. */
	ep_drop_wake(rb2_stream_wake_fd(p->st, POLLIN));
	ep_drop_wake(rb2_stream_wake_fd(p->st, POLLOUT));
	ep_drop_wake(fd);
	pthread_mutex_lock(&stats.lock);
	stats_add_stream(p);
	stats.closes_behind++;
	pthread_mutex_unlock(&stats.lock);
	c->next = closers;
	closers = c;
	closer_added++;
	pthread_cond_signal(&closer_more);
	pthread_mutex_unlock(&closer_lock);
	p->st = NULL;
	p->arena = NULL;
	p->rslot = -1;
	return 1;
}

/*
 * The process exits with connections to other hosts open. The kernel
 * closes its sockets and keeps sending their bytes, then the FIN; but a
 * stream's writes held for the reader's credits, and what its NIC has not
 * sent, die with the process's queues. So each stream sends what a close
 * would (rb2_stream_end_at_exit()), all of them within EXIT_END_MS, which
 * bounds how long a reader that reads nothing can keep the process (the
 * last stream's wait for its WRITEs to land, a fence, may add its own
 * bound; streams left when the time is up are not tried). A
 * stream that does not end in time, or whose lock another thread holds,
 * is reset at its reader, never taken for a clean end, and said here.
 * Runs first of our exit handlers: the stats line counts its WRs. A
 * process that dies by a signal or _exit() runs none of this: its readers
 * get a reset (rb2_stream.c, at_eof()). A stream that a fork child still
 * holds is not ended, nor waited for: the child cannot post on this
 * process's queues, which end with it, so the end would read at the peer
 * as a close while the child holds the connection on; the peer gets a
 * reset once the child lets the kernel socket go.
 */
#define EXIT_END_MS 10000

/* Under closer_lock: closes in the background that do not wait for a fork
 * child. */
static unsigned int
closers_ending(void)
{
	unsigned int n = 0;

	for (struct closer *c = closers; c != NULL; c = c->next)
		n += !c->await;
	return n;
}

static void pend_drain_how(int cancel);

static void
streams_end_at_exit(void)
{
	uint64_t until = now_ns() + EXIT_END_MS * 1000000ull;
	unsigned int ended = 0, cut = 0;

	pend_drain_how(1);               /* set-ups under way end here */
	held_flush_all();
	if (remote_xp == NULL || remote_pid != getpid())
		return;                  /* no stream of this process is remote */
	/* Closes going on in the background first: they were made first. */
	pthread_mutex_lock(&closer_lock);
	while (closers_ending() > 0) {
		struct timespec ts = { (time_t)(until / 1000000000ull),
				       (long)(until % 1000000000ull) };

		if (pthread_cond_timedwait(&closer_done, &closer_lock, &ts) == ETIMEDOUT)
			break;
	}
	cut += closers_ending();
	pthread_mutex_unlock(&closer_lock);
	for (unsigned int fd = 0; tab != NULL && fd < tab_size; fd++) {
		struct psock *p = atomic_load(&tab[fd]);
		uint64_t now = now_ns();
		int ret = -EBUSY;

		if (p == NULL || p->st == NULL || p->rslot < 0 || p->inherited ||
		    (!p->uncounted && rb2_stream_fork_others(p->st)))
			continue;
		if (now < until && pthread_mutex_trylock(&p->tx_lock) == 0) {
			if (pthread_mutex_trylock(&p->rx_lock) == 0) {
				ret = rb2_stream_end_at_exit(p->st,
					(unsigned int)((until - now) / 1000000) + 1);
				pthread_mutex_unlock(&p->rx_lock);
			}
			pthread_mutex_unlock(&p->tx_lock);
		}
		if (ret == 0)
			ended++;
		else
			cut++;
	}
	if (cut > 0)
		fprintf(stderr, "rb2-run: pid %d: exit: %u of %u connection(s) to other hosts "
			"could not send their end (another thread in a call, or no room or "
			"answer within %d s, or a close still waiting for its reader): their "
			"readers get a reset\n", (int)getpid(), cut, cut + ended,
			EXIT_END_MS / 1000);
}

/*
 * The thread that bounds how long a write is held: asleep while nothing
 * is, else it flushes every RB2_RUN_BATCH_US. A pass that sends nothing
 * leaves only streams whose publication waits for the reader's credits:
 * the next pass then comes twice as late, up to HELD_IDLE_MAX_NS, until one
 * sends something or a write is newly held. Such a stream needs the thread
 * only while its program waits elsewhere: a wait of ours on it sleeps until
 * the credits' return wakes it. Retrying every RB2_RUN_BATCH_US for as long
 * as a reader did not read cost a program asleep in its own calls 2000
 * wake-ups a second. (Kernel TCP, facing a closed window, probes at
 * intervals that grow from 200 ms.)
 */
#define HELD_IDLE_MAX_NS 20000000ull
static uint64_t held_added;              /* under held_lock: streams ever listed */

static void *
held_main(void *arg)
{
	uint64_t idle_ns = 0;            /* the back-off; 0 while passes send */

	(void)arg;
	block_signals();
	for (;;) {
		uint64_t ns = atomic_load_explicit(&batch_ns, memory_order_relaxed);
		struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };

		pthread_mutex_lock(&held_lock);
		while (held_head == NULL) {
			pthread_cond_wait(&held_cond, &held_lock);
			idle_ns = 0;
		}
		if (idle_ns > ns) {
			/* Backing off, unless a write is held anew: it is owed
			 * its RB2_RUN_BATCH_US, no more. */
			uint64_t added = held_added, t;
			struct timespec until;

			clock_gettime(CLOCK_MONOTONIC, &until);
			t = (uint64_t)until.tv_nsec + idle_ns;
			until.tv_sec += (time_t)(t / 1000000000ull);
			until.tv_nsec = (long)(t % 1000000000ull);
			while (held_added == added &&
			       pthread_cond_clockwait(&held_cond, &held_lock, CLOCK_MONOTONIC,
						      &until) != ETIMEDOUT)
				;
			if (held_added != added)
				idle_ns = 0;
		}
		pthread_mutex_unlock(&held_lock);
		if (idle_ns <= ns)
			nanosleep(&ts, NULL);
		if (held_flush_pass() > 0)
			idle_ns = 0;
		else
			idle_ns = RTE_MIN(RTE_MAX(idle_ns, ns) * 2, HELD_IDLE_MAX_NS);
	}
	return NULL;
}

/* Stream @p holds bytes back (its writer holds its tx_lock): list it, and
 * make sure the thread runs. @return 0, or -1: no thread bounds a hold, so
 * the caller must send it now, and stop batching. */
static int
held_add(struct psock *p)
{
	int err = 0;

	pthread_mutex_lock(&held_lock);
	if (held_thread_pid != getpid()) {
		pthread_t t;
		pthread_attr_t a;

		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		err = pthread_create(&t, &a, held_main, NULL);
		pthread_attr_destroy(&a);
		if (err != 0) {
			pthread_mutex_unlock(&held_lock);
			fprintf(stderr, "rb2-run: pid %d: no thread to bound batching (%s): writes "
				"go out one by one\n", (int)getpid(), strerror(err));
			atomic_store_explicit(&batch_ns, 0, memory_order_relaxed);
			return -1;
		}
		held_thread_pid = getpid();
	}
	if (!p->held_listed) {
		p->held_listed = 1;
		p->held_next = held_head;
		held_head = p;
		held_added++;
		atomic_fetch_add_explicit(&held_n, 1, memory_order_release);
		pthread_cond_signal(&held_cond);
	}
	pthread_mutex_unlock(&held_lock);
	return 0;
}

/* @p is closing: off the list (under the list's lock, so that no flush
 * uses it after). */
static void
held_forget(struct psock *p)
{
	pthread_mutex_lock(&held_lock);
	for (struct psock **pp = &held_head; p->held_listed && *pp != NULL;
	     pp = &(*pp)->held_next) {
		if (*pp == p) {
			*pp = p->held_next;
			p->held_listed = 0;
			atomic_fetch_sub_explicit(&held_n, 1, memory_order_release);
			break;
		}
	}
	pthread_mutex_unlock(&held_lock);
}

/* Across hosts: this process's mapping of @p's arena goes, and its place is
 * free for a later connection. */
static void
remote_unmap(struct psock *p)
{
	rb2_noeal_arena_detach(p->arena);
	remote_arena_free(p->rslot);
	p->rslot = -1;
	p->arena = NULL;
}

/* This process is done with @p's stream: it ends, or (one host) only this
 * process's copy goes while a fork's lives on elsewhere. @return 1 if it
 * lives on elsewhere, else 0. */
static int
stream_end(struct psock *p)
{
	int shared = 0;

	if (p->st == NULL)
		return 0;
	pthread_mutex_lock(&stats.lock);
	stats_add_stream(p);
	pthread_mutex_unlock(&stats.lock);
	if (p->rslot >= 0) {
		/* Across hosts: the arena is this process's alone. The
		 * child of a fork past libc (no atfork handler put its copy
		 * aside: away_begin()) cannot post on the parent's queues
		 * (the kernel refuses another process): it only unmaps. */
		if (!p->inherited)
			rb2_stream_close(p->st);
		remote_unmap(p);
	} else {
		/* One host: the eventfd leaves this process's epoll sets
		 * either way (another holder keeps its file open). */
		ep_drop_wake(rb2_stream_wake_fd(p->st, POLLIN));
		if (!p->uncounted && !rb2_stream_fork_release(p->st)) {
			/* No other process holds the end: this close is its end.
			 * The service reuses the arena's address once both ends
			 * released. */
			rb2_stream_close(p->st);
			rb2_noeal_arena_release(p->arena);
		} else {
			/* A fork's copy lives on in another process (parent or
			 * child), which still uses the stream, so nothing of it
			 * is closed but this process's descriptors. Only this
			 * process's mapping goes, so that the address is free
			 * here for a later connection (the stream's small local
			 * state is left behind). */
			rb2_stream_forget(p->st);
			rb2_noeal_arena_detach(p->arena);
			shared = 1;
		}
	}
	p->st = NULL;
	p->arena = NULL;
	return shared;
}

/* Which fork took holds (rb2_stream_fork_hold()) for the calling thread's
 * fork: the child counts its copies by it, and a fork that fails gives
 * them back (fork()). */
static _Atomic uint64_t forks_made;
static __thread uint64_t this_fork;

/*
 * Put, in place of @fd (keeping its FD_CLOEXEC), a socket whose peer is
 * closed: a read gets 0, or with @reset, ECONNRESET once and then 0, as a
 * reset TCP socket's; a write EPIPE. Only this process's fd table changes
 * (the kernel socket underneath stays open for the processes that share
 * it), and only plain system calls run: what a vfork child, or an atfork
 * handler, may do.
 */
static void
stand_in(int fd, int reset)
{
	int sv[2], fl = REAL(fcntl)(fd, F_GETFD);

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
		REAL(close)(fd);          /* no stand-in: no fd, never the bells */
		return;
	}
	/* sv[1] closing with a byte unread makes sv[0]'s next read fail with
	 * ECONNRESET, as a unix socket's does. */
	if (reset)
		(void)REAL(write)(sv[0], "r", 1);
	REAL(close)(sv[1]);
	REAL(dup3)(sv[0], fd, fl >= 0 && (fl & FD_CLOEXEC) ? O_CLOEXEC : 0);
	REAL(close)(sv[0]);
}

/*
 * A fork child's copy of its parent's stream to another host. The kernel
 * takes a device context's commands only from the process that opened it
 * (ib_uverbs_write() refuses others with EACCES), so only the parent can
 * post on the stream's queues. So in the child the copy is put aside, and
 * each fd that names it gets a stand-in that reads as a reset connection
 * (stand_in()): the kernel socket's bells never read as data here.
 * The child holds the end, as on one host, until its close, exec or end,
 * and the parent ends the stream only then (close_in_background()). A call
 * that would use it says so once, and marks the end for a reset
 * (away_used()): the peer gets a reset, not the end, when the parent
 * closes, so a connection the child was to serve never reads as closed
 * cleanly.
 */
static void
away_begin(struct psock *p)
{
	p->away_st = p->st;
	p->st = NULL;
	p->away_fork = this_fork;
	atomic_store(&p->away_told, 0);
}

static void
away_used(struct psock *p, int fd)
{
	if (atomic_exchange(&p->away_told, 1))
		return;
	fprintf(stderr, "rb2-run: pid %d: fd %d: a fork child cannot use its parent's connection "
		"to another host (only the process that opened it can post on its queues): it "
		"reads as reset here, and the peer gets a reset once the parent closes it\n",
		(int)getpid(), fd);
	rb2_stream_fork_reset(p->away_st);
	pthread_mutex_lock(&stats.lock);
	stats.failed++;
	pthread_mutex_unlock(&stats.lock);
}

/* The child lets its copy go (close, exec): its hold goes back. */
static void
away_end(struct psock *p)
{
	if (p->away_st == NULL)
		return;
	if (!p->uncounted)
		(void)rb2_stream_fork_release(p->away_st);
	p->uncounted = 1;
	remote_unmap(p);
	p->away_st = NULL;
}

/* Freed psocks wait here a second before their memory goes: a call that
 * found one in the table just before its last fd closed may still take
 * its life_lock, and then finds it gone (psock_enter()). A queue in the
 * order they were freed, so each free lets go of those past their second
 * from the head and stops at the first that is not: a list walked whole at
 * each free cost O(frees in the last second) a close: node's top symbol,
 * 1.45% of all CPU samples, under nginx's connection a request (500 closes
 * a second). */
static struct psock *limbo_head, *limbo_tail;
static pthread_mutex_t limbo_lock = PTHREAD_MUTEX_INITIALIZER;

static void
psock_free(struct psock *p)
{
	uint64_t now = now_ns();
	struct psock *gone = NULL;

	pthread_mutex_lock(&limbo_lock);
	while (limbo_head != NULL && now - limbo_head->limbo_ns > 1000000000ull) {
		struct psock *k = limbo_head;

		limbo_head = k->limbo_next;
		k->limbo_next = gone;        /* freed below, unlocked */
		gone = k;
	}
	if (limbo_head == NULL)
		limbo_tail = NULL;
	p->limbo_ns = now;
	p->limbo_next = NULL;
	if (limbo_tail != NULL)
		limbo_tail->limbo_next = p;
	else
		limbo_head = p;
	limbo_tail = p;
	pthread_mutex_unlock(&limbo_lock);
	while (gone != NULL) {
		struct psock *next = gone->limbo_next;

		free(gone);
		gone = next;
	}
}

/*
 * Psocks whose last fd closed under a call (psock_release()): no fd of the
 * program names them, so close_range() and closefrom() learn of their
 * copies and streams here (keep_collect()), and leave them to the call.
 */
static struct psock *kept_head;
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;

static void
kept_add(struct psock *p)
{
	pthread_mutex_lock(&kept_lock);
	p->kept_next = kept_head;
	kept_head = p;
	pthread_mutex_unlock(&kept_lock);
}

static void
kept_remove(struct psock *p)
{
	pthread_mutex_lock(&kept_lock);
	for (struct psock **q = &kept_head; *q != NULL; q = &(*q)->kept_next)
		if (*q == p) {
			*q = p->kept_next;
			break;
		}
	pthread_mutex_unlock(&kept_lock);
}

/* The end of @p, whose last fd (@fd, or keep_fd) closed, with no call in it. */
static void
psock_end(struct psock *p, int fd)
{
	kept_remove(p);                  /* before its descriptors close */
	held_forget(p);                  /* its close sends what it holds */
	away_end(p);
	if (!close_in_background(p, fd))
		stream_end(p);
	if (p->reg_fd >= 0)
		REAL(close)(p->reg_fd);
	if (p->pend_efd >= 0)
		REAL(close)(p->pend_efd);
	if (p->keep_fd >= 0)
		REAL(close)(p->keep_fd);
	p->st = NULL;
	psock_free(p);
}

/* @p's last fd, @fd, closes. A read or write under way in another thread
 * (asleep in recv(), say) keeps it: the stream moves to a copy of the
 * socket, since the program's fd closes now, and the last such call ends
 * it. Ended here, it would be freed under that call; the kernel's socket
 * lives on while a call holds its file, and the call gets what comes. */
static void
psock_release(struct psock *p, int fd)
{
	int end;

	pthread_mutex_lock(&p->life_lock);
	/* Seq-cst, as psock_enter()'s: either a call that comes now sees
	 * gone, or this sees its count. */
	atomic_store(&p->gone, 1);
	/* A call under way: a read or write, or a blocking connect waiting
	 * for its pairing (no stream yet: connect_local() opens it on the
	 * copy). */
	if (atomic_load(&p->users) > 0) {
		p->keep_fd = rb2_xport_fd_raise(REAL(fcntl)(fd, F_DUPFD_CLOEXEC, 0));
		if (p->keep_fd >= 0 && p->st != NULL)
			rb2_stream_move_bell(p->st, p->keep_fd);
		kept_add(p);
		/* The copy keeps the socket's entries in the program's epoll
		 * sets, which would report a closed fd: out, as the closer's
		 * (close_in_background()). */
		if (p->st != NULL) {
			ep_drop_wake(rb2_stream_wake_fd(p->st, POLLIN));
			ep_drop_wake(rb2_stream_wake_fd(p->st, POLLOUT));
		}
		ep_drop_wake(fd);
	}
	/* The last call may have left meanwhile, having seen gone: whoever
	 * finds no call left under the lock ends it, once. */
	end = atomic_load(&p->users) == 0 && !p->ended;
	p->ended |= end;
	pthread_mutex_unlock(&p->life_lock);
	if (end)
		psock_end(p, p->keep_fd >= 0 ? p->keep_fd : fd);
}

static void psock_leave(struct psock *p);

/* A read or write of @p begins: 0, or -1 if its last fd has closed. Two
 * atomic steps and no lock on the way (a call costs tens of ns). */
static inline int
psock_enter(struct psock *p)
{
	atomic_fetch_add(&p->users, 1);
	if (likely(!atomic_load(&p->gone)))
		return 0;
	psock_leave(p);
	return -1;
}

static inline void
psock_leave(struct psock *p)
{
	int end;

	if (likely(atomic_fetch_sub(&p->users, 1) != 1 || !atomic_load(&p->gone)))
		return;
	pthread_mutex_lock(&p->life_lock);   /* after psock_release()'s copy */
	end = atomic_load(&p->users) == 0 && !p->ended;
	p->ended |= end;
	pthread_mutex_unlock(&p->life_lock);
	if (end)
		psock_end(p, p->keep_fd);
}

/* @fd, closing, was one of several that name @p: if its stream rings and
 * sleeps on that descriptor, it moves to another of them. An inetd-style
 * dup2(s, 0) then close(s) left the stream on the closed number: every
 * read and write failed with EBADF. */
static void
bell_leaves(struct psock *p, int fd)
{
	if (p->st == NULL || rb2_stream_bell_fd(p->st) != fd)
		return;
	for (unsigned int x = 0; x < tab_size; x++)
		if ((int)x != fd && atomic_load_explicit(&tab[x], memory_order_acquire) == p) {
			rb2_stream_move_bell(p->st, (int)x);
			return;
		}
}

static void
untrack(int fd)
{
	struct psock *p;

	if (fd < 0 || (unsigned int)fd >= tab_size)
		return;
	p = atomic_exchange_explicit(&tab[fd], NULL, memory_order_acq_rel);
	if (p == NULL)
		return;
	if (atomic_fetch_sub(&p->refs, 1) != 1) {
		bell_leaves(p, fd);
		return;
	}
	psock_release(p, fd);
}

struct ep_set;
static struct ep_set *_Atomic *eps;     /* by epoll fd: its stream entries */
static struct psock *stream_of(int fd);
static void ep_forget_fd(int fd);
static void ep_adopt(int fd);
static void ep_mark_nested(struct ep_set *e, int fd);
static void ep_forget_set(int epfd);
static void ep_poke_sets_of(int fd);

/* RB2_RUN_DEBUG=1: the last calls on streams, kept for dump_streams(). */
static int debug_trace;
static struct { char op; int fd; long ret; unsigned int x; } trace_ring[512];
static _Atomic unsigned int trace_pos;

static void
trace(char op, int fd, long ret, unsigned int x)
{
	unsigned int k;

	if (!debug_trace)
		return;
	k = atomic_fetch_add_explicit(&trace_pos, 1, memory_order_relaxed) % 512;
	trace_ring[k].op = op;
	trace_ring[k].fd = fd;
	trace_ring[k].ret = ret;
	trace_ring[k].x = x;
}

/* ---- Talking to rb2-sockd ------------------------------------------------- */

static int
sockd_open(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = REAL(socket)(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sockd_path);
	if (fd >= 0 && REAL(connect)(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		REAL(close)(fd);
		fd = -1;
	}
	return fd;
}

/* A request with @flags beside ask_flags, with no wait for its reply.
 * @return 0 or -errno. */
static int
sockd_tell(int conn, uint16_t op, uint32_t flags, int fd, const struct sockaddr *addr,
	   socklen_t alen)
{
	struct rb2_sockd_msg m;

	memset(&m, 0, sizeof(m));
	m.magic = RB2_SOCKD_MAGIC;
	m.version = RB2_SOCKD_VERSION;
	m.op = op;
	m.flags = ask_flags | flags;
	if (addr != NULL)
		memcpy(&m.addr, addr, alen < sizeof(m.addr) ? alen : sizeof(m.addr));
	return rb2_sockd_send(conn, &m, &fd, fd >= 0 ? 1 : 0);
}

/* The service's reply, readable now on @conn. @return 0 or -errno. */
static int
sockd_recv_reply(int conn, struct rb2_sockd_msg *out, int out_fds[RB2_SOCKD_MAX_FDS])
{
	int ret = rb2_sockd_recv(conn, out, out_fds, RB2_SOCKD_MAX_FDS);

	/* The service closed our connection with a request of ours unread
	 * (a pipelined CONNECTED behind the CONNECT it answered with PLAIN):
	 * the kernel reports that once, as ECONNRESET, ahead of the reply
	 * queued before it. The next read finds the reply, or the end. */
	if (ret == -ECONNRESET)
		ret = rb2_sockd_recv(conn, out, out_fds, RB2_SOCKD_MAX_FDS);
	return ret;
}

/* The service's next reply within @timeout_ms. @return 0 or -errno. */
static int
sockd_reply(int conn, struct rb2_sockd_msg *out, int out_fds[RB2_SOCKD_MAX_FDS],
	    unsigned int timeout_ms)
{
	struct pollfd p = { .fd = conn, .events = POLLIN };
	int ret;

	for (unsigned int i = 0; i < RB2_SOCKD_MAX_FDS; i++)
		out_fds[i] = -1;
	do
		ret = REAL(poll)(&p, 1, (int)timeout_ms);
	while (ret < 0 && errno == EINTR);
	if (ret == 0)
		return -ETIMEDOUT;
	return sockd_recv_reply(conn, out, out_fds);
}

/* A request and its reply within @timeout_ms. A request the service could
 * not take (it closed our connection) may have been answered before: a
 * pipelined CONNECT's PLAIN (RB2_SOCKD_F_PIPE). @return 0 or -errno. */
static int
sockd_ask_flags(int conn, uint16_t op, uint32_t flags, int fd, const struct sockaddr *addr,
		socklen_t alen, struct rb2_sockd_msg *out, int out_fds[RB2_SOCKD_MAX_FDS],
		unsigned int timeout_ms)
{
	int ret = sockd_tell(conn, op, flags, fd, addr, alen);

	if (ret != 0) {
		int got = sockd_reply(conn, out, out_fds, 0);

		return got == 0 ? 0 : ret;
	}
	return sockd_reply(conn, out, out_fds, timeout_ms);
}

static int
sockd_ask(int conn, uint16_t op, int fd, const struct sockaddr *addr, socklen_t alen,
	  struct rb2_sockd_msg *out, int out_fds[RB2_SOCKD_MAX_FDS], unsigned int timeout_ms)
{
	return sockd_ask_flags(conn, op, 0, fd, addr, alen, out, out_fds, timeout_ms);
}

/* The fds a reply brought that nobody took. */
static void
close_fds(int fds[RB2_SOCKD_MAX_FDS])
{
	for (unsigned int i = 0; i < RB2_SOCKD_MAX_FDS; i++) {
		if (fds[i] >= 0)
			REAL(close)(fds[i]);
		fds[i] = -1;
	}
}

/* The port of IPv4 or IPv6 address @a, in network order. */
static in_port_t
port_of_addr(const struct sockaddr *a)
{
	return a->sa_family == AF_INET ? ((const struct sockaddr_in *)a)->sin_port :
		((const struct sockaddr_in6 *)a)->sin6_port;
}

/* Whether @a is a loopback address (127.0.0.0/8, ::1, ::ffff:127.0.0.0/104),
 * which no other host can have: a connect there is paired on this host, and
 * need not wait for the service's GO before its SYN (RB2_SOCKD_F_PIPE). */
static int
loopback_addr(const struct sockaddr *a, socklen_t len)
{
	if (a->sa_family == AF_INET && len >= sizeof(struct sockaddr_in))
		return (ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr) >> 24) == 127;
	if (a->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		const struct in6_addr *x = &((const struct sockaddr_in6 *)a)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(x) || (IN6_IS_ADDR_V4MAPPED(x) && x->s6_addr[12] == 127);
	}
	return 0;
}

static int lone_listener(in_port_t port);

/*
 * A pipelined connect's reply to its CONNECTED (@ret, @m: sockd_ask_flags()'s)
 * that is GO. With RB2_SOCKD_F_SELF the service asks, as its GO to the
 * CONNECT would have said, whether this process, whose registration the
 * listener at @port is, holds it alone: a second CONNECTED answers, and its
 * reply comes within @timeout_ms (a connect that waits for nothing waits
 * for that one in full: the service answers it at once). Without, the
 * service knows no RB2_SOCKD_F_PIPE and said GO to the CONNECT: the answer
 * to the CONNECTED follows. @return the reply's sockd_*() result.
 */
static int
pipe_go(int conn, int fd, in_port_t port, int ret, struct rb2_sockd_msg *m,
	int afd[RB2_SOCKD_MAX_FDS], unsigned int timeout_ms)
{
	for (int asked = 0; ret == 0 && m->op == RB2_SOCKD_GO && asked < 2; asked++) {
		close_fds(afd);
		if (m->flags & RB2_SOCKD_F_SELF) {
			int self = lone_listener(port);

			ret = sockd_ask_flags(conn, RB2_SOCKD_CONNECTED, self ? RB2_SOCKD_F_SELF : 0,
					      fd, NULL, 0, m, afd,
					      self ? connect_timeout_ms + 1000 : timeout_ms);
		} else {
			ret = sockd_reply(conn, m, afd, timeout_ms);
		}
	}
	return ret;
}

/* PAIR: map the arena (@fds[0]) and open our end of the stream on socket
 * @fd, with the pair's bells (@fds[1], @fds[2]) if they came. The fds are
 * taken. */
static int
open_stream(struct psock *p, int fd, int fds[RB2_SOCKD_MAX_FDS], const char *name,
	    int is_client)
{
	int err, efd[2];

	pthread_once(&arena_ranges_once, reserve_arena_ranges);
	p->arena = rb2_noeal_arena_map(fds[0]); /* mapped: no descriptor of ours stays */
	err = errno;
	REAL(close)(fds[0]);
	if (p->arena == NULL) {
		fds[0] = -1;
		close_fds(fds);
		return -err;
	}
	rb2_noeal_arena_no_reuse(p->arena); /* one stream's, unmapped at its close */
	rb2_noeal_arena_use(p->arena);
	/* The bells go past the program's soft limit (rb2_xport_fd_raise()):
	 * its own descriptors are numbered as without rb2-run. */
	for (int i = 0; i < 2; i++) {
		if (!use_efd && fds[1 + i] >= 0)
			REAL(close)(fds[1 + i]);
		efd[i] = use_efd ? rb2_xport_fd_raise(fds[1 + i]) : -1;
	}
	/* A bell on the socket is one byte, and must go at once: Nagle would
	 * hold it for the last one's ACK, which a delayed ACK sends up to
	 * 40 ms late. */
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
	p->st = rb2_stream_open(name, is_client, fd, efd, connect_timeout_ms);
	if (p->st == NULL) {
		err = errno;
		rb2_noeal_arena_detach(p->arena);
		p->arena = NULL;
		return -err;
	}
	/* Both rings' pages now, in one call: a page fault on each first touch
	 * took a tenth of nginx's CPU under wrk (a new connection every 1000
	 * requests); prefaulted, it served 17-25% more (3 interleaved runs). */
	(void)rb2_noeal_arena_prefault(p->arena);
	{
		int cork = 0;
		socklen_t cl = sizeof(cork);

		if (getsockopt(fd, IPPROTO_TCP, TCP_CORK, &cork, &cl) == 0 && cork)
			rb2_stream_corked(p->st, 1);
	}
	pthread_mutex_lock(&stats.lock);
	stats.offloaded++;
	pthread_mutex_unlock(&stats.lock);
	return 0;
}

/* A pairing that failed half-way: the peer may have its end, so this
 * connection cannot go on as kernel TCP either. Reset it, as a peer that
 * vanished would. */
static void
reset_kernel(int fd)
{
	struct linger l = { 1, 0 };

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	REAL(shutdown)(fd, SHUT_RDWR);
	pthread_mutex_lock(&stats.lock);
	stats.failed++;
	pthread_mutex_unlock(&stats.lock);
}

/* ---- Set-ups in the background ---------------------------------------------- */

/*
 * A non-blocking connect() says EINPROGRESS and returns; the connection is
 * writable once it is up. rb2-run's part of it may take long: on one host
 * the pairing waits for the server's accept(), across hosts both ends make
 * their queues and swap their addresses (65-76 ms a connection between the
 * two TCG guests). Done inside the call, that time was the caller's: an
 * event loop (nginx to its upstreams, redis-benchmark's 50 clients) served
 * nobody meanwhile. So such a set-up goes on in a thread of its own
 * (pend_start()), and an accept() across hosts returns at once too, the
 * server's half made the same way. Until it is done (pending):
 * - reads and writes say EAGAIN, or wait if the socket blocks
 *   (pend_blocks()): a write must not go to the kernel socket under a
 *   stream, and a read must not take the peer's bells for data;
 * - poll and select wait on pend_efd instead of the socket, and report
 *   nothing for it;
 * - the kernel's epoll entries for the socket are muted (pend_entries()):
 *   edge-triggered on EPOLLIN, tagged as a bell, which the wait drops;
 * - a close ends the set-up early (shuts down what it waits on) and waits
 *   for the thread; fork waits for every set-up (pend_drain()), a new
 *   program for those it keeps (pend_drain_kept()).
 * When it is done, the entries become the stream's (ep_adopt(), which
 * pokes their sets' sleepers) or the kernel's again, and pend_efd is
 * written: a poll wakes, and finds the socket writable.
 */
enum pend_kind {
	PEND_PAIR,        /* one host: the service's answer to CONNECTED */
	PEND_REMOTE,      /* another host: open_remote() */
};

/* What ends a set-up early, if anything (pend_end()). */
enum { PEND_WAIT, PEND_CLOSE, PEND_SHUTDOWN };

struct pend_job {
	struct psock *p;
	int fd;
	enum pend_kind kind;
	int is_client;
	int conn;                    /* PEND_PAIR: the question's socket */
	uint64_t t0;                 /* PEND_PAIR: when the question went */
	int pipelined;               /* PEND_PAIR: its CONNECT waited for no GO */
	in_port_t port;              /* PEND_PAIR: the port connected to */
	uint64_t service_ns, kernel_ns;   /* PEND_REMOTE: open_remote()'s */
};

static int setup_inline;                 /* RB2_RUN_SETUP=inline: none in the background */
static pthread_mutex_t pend_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pend_done = PTHREAD_COND_INITIALIZER;
static _Atomic int pend_count;           /* set-ups going on */

static void pend_entries(int fd, int mute);
static int open_remote(struct psock *p, int fd, int is_client, uint64_t service_ns,
		       uint64_t kernel_ns);

/* The set-up of @j, done: the stream is up (@ok), or the socket is the
 * kernel's (a fall-back) or reset. */
static void
pend_finish(struct pend_job *j, int ok)
{
	static const uint64_t one = 1;
	struct psock *p = j->p;

	pthread_mutex_lock(&pend_lock);
	if (ok)
		ep_adopt(j->fd);
	else
		pend_entries(j->fd, 0);
	if (ok && adopt_late_ms > 0)
		usleep(adopt_late_ms * 1000u);
	p->pend_cancel_fd = -1;
	atomic_store_explicit(&p->pending, 0, memory_order_release);
	(void)syscall(SYS_write, p->pend_efd, &one, sizeof(one));
	atomic_fetch_sub(&pend_count, 1);
	pthread_cond_broadcast(&pend_done);
	pthread_mutex_unlock(&pend_lock);
}

/* Whether the peer of TCP socket @fd has closed or reset it. */
static int
peer_closed(int fd)
{
	struct pollfd pf = { .fd = fd, .events = POLLRDHUP };

	return REAL(poll)(&pf, 1, 0) == 1 && (pf.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static void
pend_run(struct pend_job *j)
{
	int ret, ok = 0;

	if (j->kind == PEND_PAIR) {
		struct rb2_sockd_msg m;
		int afd[RB2_SOCKD_MAX_FDS];
		struct pollfd pf = { .fd = j->conn, .events = POLLIN };
		uint64_t spent = (now_ns() - j->t0) / 1000000ull;
		int left = (int)(connect_timeout_ms + 1000 - (spent < connect_timeout_ms + 1000 ?
							       spent : connect_timeout_ms + 1000));

		for (unsigned int i = 0; i < RB2_SOCKD_MAX_FDS; i++)
			afd[i] = -1;
		do
			ret = REAL(poll)(&pf, 1, left);
		while (ret < 0 && errno == EINTR);
		if (ret > 0 && pair_late_ms > 0)
			usleep(pair_late_ms * 1000u);
		ret = ret > 0 ? sockd_recv_reply(j->conn, &m, afd) : -ETIMEDOUT;
		if (j->pipelined)
			ret = pipe_go(j->conn, j->fd, j->port, ret, &m, afd, (unsigned int)left);
		pthread_mutex_lock(&pend_lock);
		j->p->pend_cancel_fd = -1;      /* a close no longer shuts it down */
		pthread_mutex_unlock(&pend_lock);
		REAL(close)(j->conn);
		if (ret == 0 && m.op == RB2_SOCKD_PAIR && afd[0] >= 0) {
			/* Paired, even if the program has closed the socket
			 * since (a queued answer reads after the shutdown): the
			 * server has its end, and its accept() waits for ours.
			 * So ours opens, and the close that waits for this
			 * thread ends it: the server reads the end at once, where
			 * an answer dropped here kept its accept waiting for our
			 * channels until the timeout, then reset. */
			ret = open_stream(j->p, j->fd, afd, m.name, 1);
			ok = ret == 0;
			if (!ok)
				reset_kernel(j->fd);
		} else if (j->p->pend_cancelled) {
			close_fds(afd);
			count_plain(j->p->pend_cancelled == PEND_SHUTDOWN ?
				    "shut down by the program before the pairing" :
				    "closed by the program before the pairing");
		} else {
			close_fds(afd);
			count_plain(ret == 0 && m.op == RB2_SOCKD_PLAIN ? m.why :
				    "rb2-sockd did not answer");
		}
	} else {
		ret = open_remote(j->p, j->fd, j->is_client, j->service_ns, j->kernel_ns);
		ok = ret == 0;
		if (!ok && j->p->pend_cancelled) {
			count_plain("closed by the program before the pairing");
		} else if (!ok && (ret == -ECONNRESET || ret == -EPIPE) && peer_closed(j->fd)) {
			/* The peer closed its socket before its half came (a
			 * client that gave up, a server that closed what it
			 * accepted): nothing was sent over rb2, so the socket
			 * is the kernel's, and reads the end as TCP's would.
			 * Which error the exchange met depends on its first
			 * call after the close: a read, ECONNRESET; a write
			 * the peer's kernel answered with a reset, EPIPE. */
			count_plain(j->is_client ? "the server closed it before the pairing" :
				    "the client closed it before the pairing");
		} else if (!ok) {
			fprintf(stderr, "rb2-run: pid %d: fd %d: the stream %s another host failed "
				"(%s): the connection is reset\n", (int)getpid(), j->fd,
				j->is_client ? "to" : "from", strerror(-ret));
			reset_kernel(j->fd);
		}
	}
	pend_finish(j, ok);
}

static void *
pend_main(void *arg)
{
	struct pend_job *j = arg;

	pend_run(j);
	free(j);
	return NULL;
}

/* Go on with @job in the background: @return 1, the socket pending; or 0,
 * done here already (no thread could start: the caller's call waits, as
 * before). */
static int
pend_start(struct pend_job *job)
{
	struct pend_job *j = malloc(sizeof(*j));
	struct psock *p = job->p;
	sigset_t all, old;
	pthread_attr_t at;
	pthread_t t;
	int err;

	if (p->pend_efd < 0 && !setup_inline)
		p->pend_efd = rb2_xport_fd_raise(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
	if (j == NULL || p->pend_efd < 0) {
		free(j);
		atomic_fetch_add(&pend_count, 1);
		atomic_store(&p->pending, 1);
		pend_run(job);
		return 0;
	}
	*j = *job;
	pthread_mutex_lock(&pend_lock);
	atomic_fetch_add(&pend_count, 1);
	atomic_store(&p->pending, 1);
	p->pend_cancel_fd = j->kind == PEND_PAIR ? j->conn : j->fd;
	p->pend_on_host = j->kind == PEND_PAIR;
	pend_entries(j->fd, 1);
	pthread_mutex_unlock(&pend_lock);
	/* The thread takes no signal of the program's. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&t, &at, pend_main, j);
	pthread_attr_destroy(&at);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err != 0) {
		pend_run(j);
		free(j);
		return 0;
	}
	return 1;
}

/* Wait until @p's set-up is done. @return 0, or -1 with errno EINTR. */
static int
pend_wait(struct psock *p)
{
	while (atomic_load_explicit(&p->pending, memory_order_acquire)) {
		struct pollfd pf = { .fd = p->pend_efd, .events = POLLIN };

		if (REAL(poll)(&pf, 1, -1) < 0 && errno == EINTR) {
			errno = EINTR;
			return -1;
		}
	}
	return 0;
}

/*
 * Whether @p's set-up is still under way, for an answer the program acts
 * on (EALREADY, EAGAIN). pend_finish() makes the program's epoll entries
 * the stream's, which wakes its waits, before it clears the mark, under
 * pend_lock: a program woken there with EPOLLOUT that called connect()
 * again (ab does, to learn the result) got EALREADY, and counted the
 * connection failed (ab: 0.4% of connections to Python's http.server).
 * An edge-triggered writer told EAGAIN there would wait for an edge that
 * never comes. So a set-up marked is looked at again under the lock,
 * which waits out that window.
 */
static int
pend_still(struct psock *p)
{
	int still;

	if (!atomic_load_explicit(&p->pending, memory_order_acquire))
		return 0;
	pthread_mutex_lock(&pend_lock);
	still = atomic_load_explicit(&p->pending, memory_order_acquire);
	pthread_mutex_unlock(&pend_lock);
	return still;
}

/* Whether a call on @fd must not go on now: its set-up is under way, and
 * the call may not wait (@dontwait, or a non-blocking socket): EAGAIN, as
 * on a TCP socket still connecting. A blocking socket waits for it. */
static int
pend_blocks(int fd, int dontwait)
{
	struct psock *p;

	if (atomic_load_explicit(&pend_count, memory_order_relaxed) == 0)
		return 0;
	p = get(fd);
	if (p == NULL || !pend_still(p))
		return 0;
	if (dontwait || p->nonblock) {
		errno = EAGAIN;
		return 1;
	}
	return pend_wait(p) != 0;
}

static int
pending(int fd)
{
	struct psock *p;

	if (atomic_load_explicit(&pend_count, memory_order_relaxed) == 0)
		return 0;
	p = get(fd);
	return p != NULL && atomic_load_explicit(&p->pending, memory_order_acquire);
}

/* End @p's set-up early, for a close or a shutdown (@by): shut down what
 * it waits on, and the thread finds out at once. The caller holds
 * pend_lock. */
static void
pend_cancel(struct psock *p, int by)
{
	if (p->pend_cancel_fd < 0)
		return;
	p->pend_cancelled = by;
	REAL(shutdown)(p->pend_cancel_fd, SHUT_RDWR);
}

/* @fd closes (@how PEND_CLOSE), is shut down (PEND_SHUTDOWN), or the
 * process forks or execs (PEND_WAIT): a set-up under way on it ends first.
 * Closing the last fd of it ends it early: what it waits on (the service's
 * answer, or the peer's addresses over the socket) is shut down, and the
 * thread finds out at once. So does a shutdown on one host, where what is
 * shut down is the connection to the service, not the socket: it need not
 * wait for the server's accept, which the kernel's does not either, and
 * the connection stays the kernel's (or the stream's, if the service had
 * paired it already). Across hosts the thread's wait is the socket itself,
 * which a shutdown of one way must leave: it waits. */
static void
pend_end(int fd, int how)
{
	struct psock *p = get(fd);

	if (p == NULL || !atomic_load_explicit(&p->pending, memory_order_acquire))
		return;
	pthread_mutex_lock(&pend_lock);
	if ((how == PEND_CLOSE && atomic_load(&p->refs) == 1) ||
	    (how == PEND_SHUTDOWN && p->pend_on_host))
		pend_cancel(p, how);
	while (atomic_load(&p->pending))
		pthread_cond_wait(&pend_done, &pend_lock);
	pthread_mutex_unlock(&pend_lock);
}

/* Every set-up under way, done (fork: the threads do not go with the
 * child; exec: the new program would not know of them). At exit (@cancel)
 * each is ended early first, as by its close. */
static void
pend_drain_how(int cancel)
{
	if (atomic_load(&pend_count) == 0)
		return;
	pthread_mutex_lock(&pend_lock);
	for (unsigned int fd = 0; cancel && tab != NULL && fd < tab_size; fd++) {
		struct psock *p = atomic_load(&tab[fd]);

		if (p != NULL && atomic_load(&p->pending))
			pend_cancel(p, PEND_CLOSE);
	}
	while (atomic_load(&pend_count) > 0)
		pthread_cond_wait(&pend_done, &pend_lock);
	pthread_mutex_unlock(&pend_lock);
}

static void
pend_drain(void)
{
	pend_drain_how(0);
}

/* Before a new program: a set-up under way on a descriptor it keeps (open,
 * without FD_CLOEXEC) ends first, as pend_drain()'s. One whose every
 * descriptor is FD_CLOEXEC or closed, the new program never sees, so
 * nothing waits for it (a server that accepts late held a spawn up to its
 * accept): in this process's own exec (@cancel) it ends early, as by the
 * close the exec is; in a spawn without file actions (whose dup2 would
 * clear the flag: stand_in_entry()), or the exec of a child that shares
 * our memory (vfork: Python's subprocess), it goes on in this process. */
static void
pend_drain_kept(int cancel)
{
	if (atomic_load(&pend_count) == 0)
		return;
	pthread_mutex_lock(&pend_lock);
	for (unsigned int fd = 0; tab != NULL && fd < tab_size; fd++) {
		struct psock *p = atomic_load(&tab[fd]);
		int fl;

		if (p == NULL || !atomic_load(&p->pending))
			continue;
		/* Not open here: a vfork child closed it (Python's, past our
		 * close, with close_range). */
		fl = REAL(fcntl)((int)fd, F_GETFD);
		if (fl < 0 || (fl & FD_CLOEXEC))
			continue;
		while (atomic_load(&p->pending))
			pthread_cond_wait(&pend_done, &pend_lock);
	}
	for (unsigned int fd = 0; cancel && tab != NULL && fd < tab_size; fd++) {
		struct psock *p = atomic_load(&tab[fd]);

		if (p == NULL || !atomic_load(&p->pending))
			continue;
		pend_cancel(p, PEND_CLOSE);
		while (atomic_load(&p->pending))
			pthread_cond_wait(&pend_done, &pend_lock);
	}
	pthread_mutex_unlock(&pend_lock);
}

/* ---- Socket calls ----------------------------------------------------------- */

static int
is_tcp(int domain, int type, int protocol)
{
	return (domain == AF_INET || domain == AF_INET6) &&
	       (type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC)) == SOCK_STREAM &&
	       (protocol == 0 || protocol == IPPROTO_TCP);
}

EXPORT int
socket(int domain, int type, int protocol)
{
	int fd = REAL(socket)(domain, type, protocol);

	if (fd >= 0 && active && is_tcp(domain, type, protocol)) {
		struct psock *p = track(fd);

		if (p != NULL)
			p->nonblock = (type & SOCK_NONBLOCK) != 0;
	}
	return fd;
}

/*
 * TCP_DEFER_ACCEPT (Apache's AcceptFilter, nginx's `listen ... deferred`,
 * haproxy's defer-accept) keeps a connection out of accept() until its
 * first bytes come. An rb2 client sends none before the pairing, which
 * waits for the accept: every connection waited for the service's 2 s,
 * then went kernel TCP (Apache's event MPM: 41 requests a second). So a
 * registered listener keeps the option's value for getsockopt, as the
 * kernel rounded it, and the kernel's goes to 0: every client, rb2 or not,
 * is accepted at once, as if the option had not been set, which a server
 * that sets it must handle anyway (its timer can expire with no bytes).
 */
static void
keep_defer(int fd, struct psock *p)
{
	socklen_t l = sizeof(p->defer_val);

	if (REAL(getsockopt)(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &p->defer_val, &l) != 0)
		return;
	p->defer_kept = 1;
	if (p->defer_val != 0)
		(void)REAL(setsockopt)(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &(int){ 0 }, sizeof(int));
}

/* Listener @fd, ours as @p, registered with the service: its clients
 * under rb2-run pair with this process's accepts. Registered as long as
 * this connection to the service is open: it closes with the listener, or
 * with the last process holding it. */
static void
listener_register(int fd, struct psock *p)
{
	struct rb2_sockd_msg m;
	int got[RB2_SOCKD_MAX_FDS], conn = sockd_open();

	if (conn < 0) {
		count_plain("rb2-sockd is not running");
		return;
	}
	if (sockd_ask(conn, RB2_SOCKD_LISTEN, fd, NULL, 0, &m, got, 2000) == 0 &&
	    m.op == RB2_SOCKD_OK) {
		p->reg_fd = conn;
		keep_defer(fd, p);
	} else {
		REAL(close)(conn);
	}
	close_fds(got);
}

EXPORT int
listen(int fd, int backlog)
{
	struct psock *p = get(fd);
	int ret = REAL(listen)(fd, backlog);

	if (ret == 0 && p != NULL && p->reg_fd < 0)
		listener_register(fd, p);
	return ret;
}

/*
 * Listeners this program got already listening, across an exec: systemd's
 * or inetd's socket activation, a supervisor's, nginx's binary upgrade (its
 * new master inherits the old one's). The program never calls listen() on
 * them, so without this its accepts would not ask the service, and a client
 * under rb2-run that the service sent to pair (another process had
 * registered the port) would wait out the accept timeout. Each is tracked
 * and registered as a listen() would; marked handed on, since the process
 * that passed it may hold it still (lone_listener()).
 */
static void
adopt_inherited_listeners(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	while (d != NULL && (e = readdir(d)) != NULL) {
		int fd = atoi(e->d_name), v[3] = { 0, 0, 0 };
		socklen_t l0 = sizeof(int), l1 = sizeof(int), l2 = sizeof(int);
		struct stat st;
		struct psock *p;

		if (e->d_name[0] < '0' || e->d_name[0] > '9' || fd == dirfd(d) ||
		    fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode) ||
		    REAL(getsockopt)(fd, SOL_SOCKET, SO_ACCEPTCONN, &v[0], &l0) != 0 || !v[0] ||
		    REAL(getsockopt)(fd, SOL_SOCKET, SO_DOMAIN, &v[1], &l1) != 0 ||
		    (v[1] != AF_INET && v[1] != AF_INET6) ||
		    REAL(getsockopt)(fd, SOL_SOCKET, SO_PROTOCOL, &v[2], &l2) != 0 ||
		    v[2] != IPPROTO_TCP || get(fd) != NULL)
			continue;
		p = track(fd);
		if (p == NULL)
			continue;
		p->handed_on = 1;
		listener_register(fd, p);
	}
	if (d != NULL)
		closedir(d);
}

/* After the kernel's accept: a socket of ours, over rb2 if its client is. */
static int
accepted(int lfd, int fd, int flags)
{
	struct psock *l = get(lfd), *p;
	struct rb2_sockd_msg m;
	int conn, afd[RB2_SOCKD_MAX_FDS], ret;
	uint64_t t0;

	if (l == NULL || fd < 0)
		return fd;
	p = track(fd);
	if (p == NULL)
		return fd;
	p->nonblock = (flags & SOCK_NONBLOCK) != 0;
	if (l->reg_fd < 0)
		return fd;              /* not registered: nobody paired through it */
	t0 = now_ns();
	conn = sockd_open();
	if (conn < 0) {
		count_plain("rb2-sockd is not running");
		return fd;
	}
	ret = sockd_ask(conn, RB2_SOCKD_ACCEPTED, fd, NULL, 0, &m, afd,
			connect_timeout_ms + 1000);
	REAL(close)(conn);
	if (ret == 0 && m.op == RB2_SOCKD_PAIR && afd[0] >= 0) {
		ret = open_stream(p, fd, afd, m.name, 0);
		if (ret != 0)
			reset_kernel(fd);
	} else if (ret == 0 && m.op == RB2_SOCKD_REMOTE) {
		/* The client's service asked ours first: our end is made and
		 * joined to the client's in the background, and the program
		 * has its socket now (pend_start()). */
		struct pend_job j = { .p = p, .fd = fd, .kind = PEND_REMOTE,
				      .service_ns = now_ns() - t0 };

		(void)pend_start(&j);
	} else {
		close_fds(afd);
		count_plain(ret == 0 && m.op == RB2_SOCKD_PLAIN ? m.why :
			    "rb2-sockd did not answer");
	}
	return fd;
}

EXPORT int
accept(int fd, struct sockaddr *addr, socklen_t *len)
{
	return accepted(fd, REAL(accept)(fd, addr, len), 0);
}

EXPORT int
accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
	return accepted(fd, REAL(accept4)(fd, addr, len, flags), flags);
}

/* Whether this process alone holds its listeners at @port (the service
 * said one is its own registration): none has been handed on by a fork,
 * spawn, exec or SCM_RIGHTS, so only its own accept can take a
 * connection to them. A scan of the table, made only then. */
static int
lone_listener(in_port_t port)
{
	int found = 0;

	for (unsigned int fd = 0; tab != NULL && fd < tab_size; fd++) {
		struct psock *p = atomic_load(&tab[fd]);
		struct sockaddr_storage a;
		socklen_t al = sizeof(a);

		if (p == NULL || p->reg_fd < 0 ||
		    getsockname((int)fd, (struct sockaddr *)&a, &al) != 0 ||
		    port_of_addr((struct sockaddr *)&a) != port)
			continue;
		if (p->handed_on)
			return 0;
		found = 1;
	}
	return found;
}

/* Listeners of ours that may now be in another process too (@fd: one
 * passed over SCM_RIGHTS; -1: all, at a spawn or system(); before_fork()
 * and before_exec() mark them in their own walks of the table). */
static void
listeners_handed_on(int fd)
{
	for (unsigned int x = fd < 0 ? 0 : (unsigned int)fd;
	     tab != NULL && x < tab_size && (fd < 0 || x == (unsigned int)fd); x++) {
		struct psock *p = atomic_load(&tab[x]);

		if (p != NULL && p->reg_fd >= 0)
			p->handed_on = 1;
	}
}

/* The kernel's connect, waited for here even on a non-blocking socket, so
 * that the service can see it connected. @return 0, -errno, or 1: connected,
 * and the kernel had said EINPROGRESS (which the caller says too). */
static int
connect_kernel(int fd, const struct sockaddr *addr, socklen_t len)
{
	struct pollfd pf = { .fd = fd, .events = POLLOUT };
	int err = 0;
	socklen_t el = sizeof(err);

	if (REAL(connect)(fd, addr, len) == 0)
		return 0;
	if (errno != EINPROGRESS)
		return -errno;
	while (REAL(poll)(&pf, 1, (int)connect_timeout_ms) < 0 && errno == EINTR)
		;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0)
		return -errno;
	return err == 0 && (pf.revents & POLLOUT) ? 1 : -(err ? err : ETIMEDOUT);
}

/* open_remote() for a blocking connect(), which counts itself in @p
 * (psock_enter()), on a copy of @fd's socket of its own: it waits up to
 * the server's accept (15 s), and another thread's close of @fd meanwhile
 * must leave the socket to it, as the kernel's connect holds the socket's
 * file. Not under life_lock, which would hold that close as long. Then
 * the stream moves to @fd or, if that closed (@gone), to psock_release()'s
 * copy, and the call's psock_leave() ends it. A failure resets the socket.
 * @return as open_remote(). */
static int
open_remote_held(struct psock *p, int fd, uint64_t service_ns, uint64_t kernel_ns, int *gone)
{
	int dfd = rb2_xport_fd_raise(REAL(fcntl)(fd, F_DUPFD_CLOEXEC, 0)), ret;

	ret = open_remote(p, dfd >= 0 ? dfd : fd, 1, service_ns, kernel_ns);
	pthread_mutex_lock(&p->life_lock);
	*gone = atomic_load(&p->gone);
	if (ret != 0) {
		if (dfd >= 0 || !*gone)
			reset_kernel(dfd >= 0 ? dfd : fd);
	} else if (*gone && p->keep_fd < 0) {
		p->keep_fd = dfd;            /* the close made no copy: ours it is */
		dfd = -1;
	} else if (dfd >= 0) {
		rb2_stream_move_bell(p->st, *gone ? p->keep_fd : fd);
	}
	pthread_mutex_unlock(&p->life_lock);
	if (dfd >= 0)
		REAL(close)(dfd);
	return ret;
}

/* REMOTE: the kernel connects, then both ends open the stream over the
 * socket; non-blocking as the kernel's, EINPROGRESS once it is up. */
static int
connect_remote(struct psock *p, int fd, const struct sockaddr *addr, socklen_t len,
	       uint64_t service_ns)
{
	uint64_t t0 = now_ns();
	int ret = connect_kernel(fd, addr, len), inprogress = ret == 1, gone;

	if (ret < 0) {
		errno = -ret;
		return -1;
	}
	if (p->nonblock) {
		/* In the background (pend_start()): EINPROGRESS now, and
		 * writable once the stream is up. */
		struct pend_job j = { .p = p, .fd = fd, .kind = PEND_REMOTE, .is_client = 1,
				      .service_ns = service_ns, .kernel_ns = now_ns() - t0 };

		if (!pend_start(&j) && p->st == NULL) {
			errno = ECONNREFUSED;
			return -1;
		}
		errno = EINPROGRESS;
		return -1;
	}
	if (psock_enter(p) != 0) {
		errno = EBADF;
		return -1;
	}
	ret = open_remote_held(p, fd, service_ns, now_ns() - t0, &gone);
	psock_leave(p);
	if (ret != 0) {
		fprintf(stderr, "rb2-run: pid %d: fd %d: the stream to another host failed (%s): "
			"the connection is reset\n", (int)getpid(), fd, strerror(-ret));
		errno = -ret == ETIMEDOUT ? ETIMEDOUT : ECONNREFUSED;
		return -1;
	}
	if (!gone)
		ep_adopt(fd);
	if (inprogress) {
		errno = EINPROGRESS;
		return -1;
	}
	return 0;
}

/* connect() to a listener under rb2-run on this host, which the service
 * said GO to (@go_flags) on @conn, or to a loopback address, whose CONNECT
 * went without waiting for GO (@go_flags RB2_SOCKD_F_PIPE): the kernel
 * connects, then the pairing, or the service's PLAIN. */
static int
connect_local(struct psock *p, int fd, const struct sockaddr *addr, socklen_t len, int conn,
	      uint32_t go_flags)
{
	struct rb2_sockd_msg m;
	int afd[RB2_SOCKD_MAX_FDS], ret, inprogress, self, gone, sfd;

	ret = connect_kernel(fd, addr, len);
	if (ret < 0) {
		REAL(close)(conn);          /* the service forgets it */
		/* Refused: nobody listens there, so none under rb2-run, which
		 * the service's answer, not awaited (RB2_SOCKD_F_PIPE), says. */
		if (ret == -ECONNREFUSED && (go_flags & RB2_SOCKD_F_PIPE))
			count_plain("no program under rb2-run listens there");
		errno = -ret;
		return -1;
	}
	inprogress = ret == 1;
	/* The answer comes when the server has accepted. A non-blocking
	 * connect waits a millisecond for it, and then goes on without it
	 * (pend_start()): EINPROGRESS now, writable once it is paired. To a
	 * listener of this process's own that no other holds, it is kernel
	 * TCP at once: only this process's accept could take it. */
	self = (go_flags & RB2_SOCKD_F_SELF) && lone_listener(port_of_addr(addr));
	ret = sockd_ask_flags(conn, RB2_SOCKD_CONNECTED, self ? RB2_SOCKD_F_SELF : 0, fd,
			      NULL, 0, &m, afd, p->nonblock && !self ? 1 : connect_timeout_ms + 1000);
	if (go_flags & RB2_SOCKD_F_PIPE)
		ret = pipe_go(conn, fd, port_of_addr(addr), ret, &m, afd,
			      p->nonblock ? 1 : connect_timeout_ms + 1000);
	if (ret == -ETIMEDOUT && p->nonblock) {
		struct pend_job j = { .p = p, .fd = fd, .kind = PEND_PAIR, .is_client = 1,
				      .conn = conn, .t0 = now_ns(),
				      .pipelined = (go_flags & RB2_SOCKD_F_PIPE) != 0,
				      .port = port_of_addr(addr) };

		(void)pend_start(&j);
		errno = EINPROGRESS;
		return -1;
	}
	REAL(close)(conn);
	if (ret == 0 && m.op == RB2_SOCKD_PAIR && afd[0] >= 0) {
		/* Its fd closed meanwhile (a blocking connect's): the stream
		 * goes on the copy psock_release() made, and ends as this call
		 * leaves. Under life_lock, so that a close now waits for the
		 * stream, and moves it to its copy as a read's. */
		pthread_mutex_lock(&p->life_lock);
		gone = atomic_load(&p->gone);
		sfd = gone ? p->keep_fd : fd;
		if (sfd >= 0) {
			ret = open_stream(p, sfd, afd, m.name, 1);
		} else {
			close_fds(afd);
			ret = -EBADF;
		}
		pthread_mutex_unlock(&p->life_lock);
		if (ret != 0) {
			if (sfd >= 0)
				reset_kernel(sfd);
			errno = ECONNREFUSED;
			return -1;
		}
		if (!gone)
			ep_adopt(fd);
	} else {
		close_fds(afd);
		count_plain(ret == 0 && m.op == RB2_SOCKD_PLAIN ? m.why : "rb2-sockd did not answer");
	}
	/* Connected already, but a non-blocking connect says what the
	 * kernel said: the program then polls for POLLOUT, which is there. */
	if (inprogress) {
		errno = EINPROGRESS;
		return -1;
	}
	return 0;
}

EXPORT int
connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	struct psock *p = get(fd);
	struct sockaddr_storage local;
	socklen_t ll = sizeof(local);
	struct rb2_sockd_msg m;
	int conn, afd[RB2_SOCKD_MAX_FDS], ret, e;
	uint32_t go_flags;
	uint64_t t0;

	if (pending(fd) && pend_still(p)) {
		errno = EALREADY;            /* as the kernel's, still connecting */
		return -1;
	}
	if (p == NULL || p->st != NULL || addr == NULL ||
	    (addr->sa_family != AF_INET && addr->sa_family != AF_INET6))
		return REAL(connect)(fd, addr, len);
	conn = sockd_open();
	if (conn < 0) {
		count_plain("rb2-sockd is not running");
		return REAL(connect)(fd, addr, len);
	}
	/* The service checks our port with the kernel: bind it now if the
	 * connect would have. */
	if (getsockname(fd, (struct sockaddr *)&local, &ll) == 0 &&
	    ((local.ss_family == AF_INET && ((struct sockaddr_in *)&local)->sin_port == 0) ||
	     (local.ss_family == AF_INET6 && ((struct sockaddr_in6 *)&local)->sin6_port == 0))) {
		struct sockaddr_storage any;

		memset(&any, 0, sizeof(any));
		any.ss_family = local.ss_family;
		if (REAL(bind)(fd, (struct sockaddr *)&any, local.ss_family == AF_INET ?
			      sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6)) != 0) {
			REAL(close)(conn);
			count_plain("binding a port before pairing failed");
			return REAL(connect)(fd, addr, len);
		}
	}
	if (loopback_addr(addr, len)) {
		/* Paired on this host, if at all: the kernel connects at once,
		 * and the CONNECTED goes right behind the CONNECT, with no GO
		 * awaited between (RB2_SOCKD_F_PIPE). */
		if (sockd_tell(conn, RB2_SOCKD_CONNECT, RB2_SOCKD_F_PIPE, fd, addr, len) != 0) {
			REAL(close)(conn);
			count_plain("rb2-sockd did not answer");
			return REAL(connect)(fd, addr, len);
		}
		go_flags = RB2_SOCKD_F_PIPE;
	} else {
		t0 = now_ns();
		ret = sockd_ask(conn, RB2_SOCKD_CONNECT, fd, addr, len, &m, afd, 2000);
		close_fds(afd);
		if (ret == 0 && m.op == RB2_SOCKD_REMOTE) {
			/* Another host's service expects this connection over rb2. */
			REAL(close)(conn);
			return connect_remote(p, fd, addr, len, now_ns() - t0);
		}
		if (ret != 0 || m.op != RB2_SOCKD_GO) {
			REAL(close)(conn);
			count_plain(ret == 0 && m.op == RB2_SOCKD_PLAIN ? m.why :
				    "rb2-sockd did not answer");
			return REAL(connect)(fd, addr, len);
		}
		go_flags = m.flags & ~RB2_SOCKD_F_PIPE;
	}
	if (p->nonblock)
		return connect_local(p, fd, addr, len, conn, go_flags);
	/* A blocking connect waits for the server's accept: a close of its fd
	 * in another thread meanwhile leaves the socket to it, as the
	 * kernel's connect holds the socket's file, and the connection ends
	 * when it returns (psock_release()'s copy). */
	if (psock_enter(p) != 0) {
		REAL(close)(conn);
		errno = EBADF;
		return -1;
	}
	ret = connect_local(p, fd, addr, len, conn, go_flags);
	e = errno;
	psock_leave(p);
	errno = e;
	return ret;
}

/* A vfork child: its descriptor table is its own, its memory its parent's.
 * A child of clone() without CLONE_VM also runs past our fork handlers,
 * with memory of its own: kcmp tells them apart, and where it cannot, the
 * child is taken to share its parent's. */
static int
in_vfork_child(void)
{
	pid_t me = getpid();
	int e = errno, shared;
	long r;

	if (me == image_pid)
		return 0;
	r = REAL(syscall)(SYS_kcmp, (long)me, (long)image_pid, (long)KCMP_VM, 0L, 0L);
	shared = r == 0 || (r < 0 && errno != ESRCH);
	errno = e;
	return shared;
}

/* @fd is about to close: its stream ends, and it leaves our epoll sets. In
 * a vfork child nothing of ours changes: the fd closes in its own table,
 * and the stream, the parent's, goes on there (Python's subprocess sweeps
 * the child's descriptors with close_range() before its exec, which would
 * otherwise end every connection of the parent). */
static void
closing(int fd)
{
	struct psock *p = get(fd);
	int epfd = eps != NULL && fd >= 0 && (unsigned int)fd < tab_size && atomic_load(&eps[fd]) != NULL;

	/* Only for ours: getpid() is a system call, and close() is common. */
	if ((p != NULL || epfd) && in_vfork_child())
		return;
	pend_end(fd, PEND_CLOSE);
	p = get(fd);

	if (p != NULL) {
		if (p->st != NULL)
			ep_forget_fd(fd);
		untrack(fd);
	}
	if (epfd)
		ep_forget_set(fd);
}

EXPORT int
close(int fd)
{
	closing(fd);
	return REAL(close)(fd);
}

static void before_fork(void);
static void fork_made(pid_t pid);
static void child_after_fork(void);

/*
 * A seccomp filter (sshd's privilege-separated child, a browser's sandbox,
 * systemd's SystemCallFilter=) allows the calls its program makes, and
 * fails the others or kills the process. A stream's calls are not the
 * program's: sendto and recvfrom on the bell's socket, the peer's state
 * read in /proc, a poll over the eventfd beside the socket (sshd's child
 * also sets RLIMIT_NOFILE so low that a poll of two fds fails with EINVAL,
 * and the kernel killed it with SIGSYS at its next read of a connection
 * over rb2). Nothing can be done about a filter once it is in, and a
 * connection that has carried data cannot go back to the kernel's TCP; so
 * a process that installs one with connections over rb2 open says so, on
 * stderr, before the filter goes in, naming the cause.
 */
static void
seccomp_filter_said(const char *how)
{
	struct sigaction ign = { .sa_handler = SIG_IGN }, old;
	unsigned int n = 0;

	for (unsigned int fd = 0; tab != NULL && fd < tab_size; fd++) {
		struct psock *p = atomic_load(&tab[fd]);

		n += p != NULL && p->st != NULL;
	}
	if (n == 0)
		return;
	/* A sandbox sets RLIMIT_FSIZE to 0 first (sshd's does): a line to a
	 * stderr that is a file would raise SIGXFSZ, and the line must not be
	 * what kills the program. */
	sigaction(SIGXFSZ, &ign, &old);
	fprintf(stderr, "rb2-run: pid %d: %s installs a seccomp filter with %u connection(s) "
		"over rb2 open: a filter that forbids rb2-run's calls on them (sendto, "
		"recvfrom, /proc reads, eventfds) fails them or kills the process (sshd's "
		"sandboxed child: run sshd without rb2-run)\n", (int)getpid(), how, n);
	fflush(stderr);
	sigaction(SIGXFSZ, &old, NULL);
}

EXPORT int
prctl(int option, ...)
{
	va_list ap;
	unsigned long a[4];

	va_start(ap, option);
	for (int i = 0; i < 4; i++)
		a[i] = va_arg(ap, unsigned long);
	va_end(ap);
	if (option == PR_SET_SECCOMP && a[0] == SECCOMP_MODE_FILTER)
		seccomp_filter_said("prctl(PR_SET_SECCOMP)");
	return REAL(prctl)(option, a[0], a[1], a[2], a[3]);
}

/* A fork made with syscall(): SYS_fork, or SYS_clone or SYS_clone3 that
 * makes a process (no CLONE_VM, CLONE_THREAD or CLONE_VFORK) on the
 * caller's stack, so that the child returns here as from fork(). */
static int
is_raw_fork(long nr, const long *a)
{
	const uint64_t shares = CLONE_VM | CLONE_THREAD | CLONE_VFORK;

	if (nr == SYS_fork)
		return 1;
	if (nr == SYS_clone)            /* flags, stack, ... */
		return !((uint64_t)a[0] & shares) && a[1] == 0;
	if (nr == SYS_clone3) {         /* struct clone_args *, its size */
		const struct clone_args *ca = (const struct clone_args *)a[0];

		return ca != NULL && (size_t)a[1] >= CLONE_ARGS_SIZE_VER0 &&
		       !(ca->flags & shares) && ca->stack == 0;
	}
	return 0;
}

/*
 * libuv (node, and every program built on it) closes its descriptors with
 * syscall(SYS_close, fd), past close(): the stream stayed, and its epoll
 * entries with it, and the next socket of that number inherited them, so
 * its bells woke nothing (node under wrk with 2 connections slept a second
 * at a time). So syscall() is wrapped, for that number and for a fork
 * (is_raw_fork()); the others go to libc's as they came (six arguments:
 * what the kernel takes at most).
 */
EXPORT long
syscall(long nr, ...)
{
	va_list ap;
	long a[6], r;

	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (nr == SYS_close)
		closing((int)a[0]);
	if (nr == SYS_seccomp && a[0] == SECCOMP_SET_MODE_FILTER)
		seccomp_filter_said("seccomp()");
	if (!is_raw_fork(nr, a))
		return REAL(syscall)(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	/* No atfork handler runs for a fork made past libc's fork(): ours
	 * run around it here, so that each process holds its copy of every
	 * stream as after fork(), and either's close leaves the other's. */
	before_fork();
	r = REAL(syscall)(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	if (r == 0) {
		child_after_fork();
	} else {
		int e = errno;

		ahead_postfork_parent();
		fork_made(r < 0 ? -1 : (pid_t)r);
		errno = e;
	}
	return r;
}

/* ---- Closing a range of descriptors ----------------------------------------- */

/*
 * close_range() and closefrom() close every descriptor of their range, and
 * ours may be in it: a connection's eventfds and completion channels sit
 * past the program's soft limit, and a sweep to the top (closefrom(3)) takes
 * them. A connection the sweep keeps (below it: on fd 0, say) would lose
 * them, and every wait on it would spin a core. So the range closes around
 * what the connections it keeps still use (fd_keep): the same numbers are
 * closed as without rb2-run, but for those, which the program never named.
 */
struct fd_keep {
	unsigned int first, last;    /* the range asked */
	int *fd;                     /* ours in it, still in use; unsorted */
	unsigned int n, cap;
	int remote;                  /* a kept stream goes to another host */
};

static void
keep_add(struct fd_keep *k, int fd)
{
	if (fd < 0 || (unsigned int)fd < k->first || (unsigned int)fd > k->last)
		return;
	if (k->n == k->cap) {
		unsigned int cap = k->cap != 0 ? k->cap * 2 : 16;
		int *m = realloc(k->fd, cap * sizeof(*m));

		if (m == NULL)
			return;       /* it closes: its waits spin, as before */
		k->fd = m;
		k->cap = cap;
	}
	k->fd[k->n++] = fd;
}

static void
keep_stream(struct fd_keep *k, const struct rb2_stream *st, const struct rb2_noeal_arena *a)
{
	int fds[RB2_STREAM_OWN_FDS];
	unsigned int n = st != NULL ? rb2_stream_own_fds(st, fds) : 0;

	for (unsigned int i = 0; i < n; i++)
		keep_add(k, fds[i]);
	if (a != NULL)
		keep_add(k, rb2_noeal_arena_fd(a));
}

/* Across hosts, the device's descriptors (the verbs context's, its event
 * channels), which the transport opened and does not list: by their names
 * in /proc. */
static void
keep_device_fds(struct fd_keep *k)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		char path[64], to[128];
		int fd = atoi(e->d_name);
		ssize_t n;

		if (e->d_name[0] < '0' || e->d_name[0] > '9' || fd == dirfd(d))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n = readlink(path, to, sizeof(to) - 1);
		if (n <= 0)
			continue;
		to[n] = '\0';
		if (strncmp(to, "/dev/infiniband/", 16) == 0 || strstr(to, "[infinibandevent]") != NULL)
			keep_add(k, fd);
	}
	closedir(d);
}

static void ep_keep_pokes(struct fd_keep *k);

/* Ours in [first, last] that what stays open still uses, after the range's
 * own sockets ended (closing()). */
static void
keep_collect(struct fd_keep *k)
{
	for (unsigned int fd = 0; fd < tab_size; fd++) {
		struct psock *p;

		if (fd == k->first) {
			if (k->last >= tab_size - 1)
				break;
			fd = k->last;
			continue;
		}
		p = get((int)fd);
		if (p == NULL)
			continue;
		keep_add(k, p->reg_fd);
		keep_add(k, p->pend_efd);
		keep_add(k, p->pend_cancel_fd);
		keep_add(k, p->keep_fd);
		keep_stream(k, p->st, p->arena);
		keep_stream(k, p->away_st, NULL);
		k->remote |= p->st != NULL && p->rslot >= 0;
	}
	/* Psocks whose last fd closed under a call, which still uses them. */
	pthread_mutex_lock(&kept_lock);
	for (struct psock *p = kept_head; p != NULL; p = p->kept_next) {
		keep_add(k, p->keep_fd);
		keep_stream(k, p->st, p->arena);
		k->remote |= p->st != NULL && p->rslot >= 0;
	}
	pthread_mutex_unlock(&kept_lock);
	/* Closes finished in the background, and the epoll sets' pokes. */
	pthread_mutex_lock(&closer_lock);
	for (struct closer *c = closers; c != NULL; c = c->next) {
		keep_add(k, c->fd);
		keep_stream(k, c->st, c->arena);
		k->remote = 1;
	}
	pthread_mutex_unlock(&closer_lock);
	ep_keep_pokes(k);
	if (k->remote)
		keep_device_fds(k);
}

static int
int_order(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* close_range(@first, @last, @flags) but for ours still in use: one call
 * for each stretch between them. -1 and errno if one failed. */
static int
close_around_ours(unsigned int first, unsigned int last, int flags)
{
	struct fd_keep k = { .first = first, .last = last };
	unsigned int lo = first;
	int ret = 0, err = 0;

	keep_collect(&k);
	if (k.n == 0)
		return (int)REAL(syscall)(SYS_close_range, first, last, flags);
	qsort(k.fd, k.n, sizeof(*k.fd), int_order);
	for (unsigned int i = 0; i < k.n; i++) {
		unsigned int f = (unsigned int)k.fd[i];

		if (f < lo)
			continue;     /* named twice */
		if (f > lo && REAL(syscall)(SYS_close_range, lo, f - 1, flags) != 0) {
			ret = -1;
			err = errno;
		}
		lo = f + 1;       /* f < tab_size: no wrap */
	}
	if (lo <= last && REAL(syscall)(SYS_close_range, lo, last, flags) != 0) {
		ret = -1;
		err = errno;
	}
	free(k.fd);
	errno = err != 0 ? err : errno;
	return ret;
}

/* Closing every descriptor of a range (a daemon's start, a child before
 * exec): each of ours ends as in close(), and what the kept ones use stays
 * (close_around_ours()). With CLOSE_RANGE_CLOEXEC nothing closes here:
 * exec's wrapper deals with those. */
EXPORT int
close_range(unsigned int first, unsigned int last, int flags)
{
	if ((flags & CLOSE_RANGE_CLOEXEC) || first > last || tab == NULL || in_vfork_child())
		return REAL(close_range)(first, last, flags);
	for (unsigned int fd = first; fd <= last && fd < tab_size; fd++)
		closing((int)fd);
	return close_around_ours(first, last, flags);
}

/* glibc's closefrom() closes through its own close_range, past the one
 * above: so it is wrapped too, or a stream's entry would outlive its fd,
 * and the next file on that number would read from the stream. */
EXPORT void
closefrom(int first)
{
	unsigned int from = first > 0 ? (unsigned int)first : 0;

	if (tab == NULL || in_vfork_child()) {
		if (REAL(closefrom) != NULL)
			REAL(closefrom)(first);
		return;
	}
	for (unsigned int fd = from; fd < tab_size; fd++)
		closing((int)fd);
	/* Before Linux 5.9, no close_range: glibc's, which falls back to
	 * closing one at a time, ours too. */
	if (close_around_ours(from, ~0u, 0) != 0 && errno == ENOSYS && REAL(closefrom) != NULL)
		REAL(closefrom)(first);
}

EXPORT int
shutdown(int fd, int how)
{
	struct psock *p;

	/* Of a set-up under way, after it: its stream's, or the kernel's. */
	if (how == SHUT_RD || how == SHUT_WR || how == SHUT_RDWR)
		pend_end(fd, PEND_SHUTDOWN);
	p = get(fd);

	if (p == NULL || p->st == NULL)
		return REAL(shutdown)(fd, how);
	if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR) {
		errno = EINVAL;
		return -1;
	}
	/* Both ways shut down: TCP's socket is closed by now (TIME_WAIT). */
	if (rb2_stream_poll(p->st) & POLLHUP) {
		errno = ENOTCONN;
		return -1;
	}
	/* The kernel socket stays up: it is the bell both ways. Not under
	 * rx_lock, which a reader asleep in recv() holds. */
	if (how != SHUT_WR) {
		rb2_stream_shutdown_rd(p->st);
		/* Across hosts the device alone rings the readers' channels:
		 * a poll or a blocking read also sleeps on the stream's
		 * eventfd, which the call above rang, and the epoll sets that
		 * hold the connection are poked. */
		if (p->rslot >= 0)
			ep_poke_sets_of(fd);
	}
	if (how != SHUT_RD) {
		pthread_mutex_lock(&p->tx_lock);
		rb2_stream_shutdown_wr(p->st);
		pthread_mutex_unlock(&p->tx_lock);
	}
	return 0;
}

/* ---- Waiting ---------------------------------------------------------------- */

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* How long to look before sleeping: a peer on another core usually answers
 * within this; past it, a sleeper costs no CPU. */
static uint64_t spin_ns = 20000;    /* RB2_RUN_SPIN_NS */

/* Spinners: threads of this process spinning now. More than the CPUs
 * can run besides the peer, and a spinner only takes a CPU from the thread
 * that would answer it (memcached's 4 threads and memcslap's 4 on 2 vCPUs
 * ran at half kernel TCP's speed): then a waiter sleeps at once. */
static _Atomic int spinners;
static int spin_max = 1;

/* One wait's spin: how long it may spin, whether it counts among the
 * spinners (until it sleeps or returns), and whether it looked in vain at
 * least once (else it did not wait). */
struct spin {
	uint64_t ns;
	int counted;
	int empty;
};

/*
 * Spinning pays where the peer runs meanwhile on a core of its own. Where
 * threads outnumber the cores, a spin mostly ends asleep anyway, having
 * taken the core from the thread that would answer: memcached -t 4 under
 * memcslap --concurrency=4 on 2 vCPUs took 2.4 s with every wait spinning,
 * 2.0-2.1 s with none (3 interleaved runs). So each thread counts its spins
 * that ended asleep in a row; after SPIN_MISSES of them it spins on every
 * SPIN_PROBE-th wait only, which tells it when spinning pays again (one
 * spin answered in time resets the count).
 */
#define SPIN_MISSES 4
#define SPIN_PROBE 16
static __thread unsigned int spin_misses, spin_waits;

static void
spin_begin(struct spin *sp)
{
	int room = atomic_fetch_add_explicit(&spinners, 1, memory_order_relaxed) < spin_max;

	sp->counted = 1;
	sp->empty = 0;
	sp->ns = room && (spin_misses < SPIN_MISSES || ++spin_waits % SPIN_PROBE == 0) ?
		spin_ns : 0;
}

/* Done spinning: about to sleep (@slept), or to return. */
static void
spin_end(struct spin *sp, int slept)
{
	if (!sp->counted)
		return;
	atomic_fetch_sub_explicit(&spinners, 1, memory_order_relaxed);
	if (sp->ns != 0 && (slept || sp->empty))
		spin_misses = slept ? spin_misses + 1 : 0;
	sp->counted = 0;
}

static void
spin_done(struct spin *sp)
{
	spin_end(sp, 0);
}

static int wait_stream_spun(struct psock *p, int events, uint64_t t0, uint64_t until,
			    struct spin *sp);

/* What a wait saw of stream @p's socket (@sock) and wake fds, for reading
 * (@rx) and writing (@tx): their revents, or -1 if it cannot tell (it
 * failed). The stream's next disarm reads what was readable
 * (rb2_stream_heard()): across hosts, only the completion channels named
 * here, if it is rb2_stream_disarm_seen(). */
static void
heard(struct psock *p, int sock, int rx, int tx)
{
	int what = (sock != 0 ? RB2_STREAM_HEARD_SOCK : 0) |
		   (rx != 0 || tx != 0 ? RB2_STREAM_HEARD_WAKE : 0) |
		   (rx != 0 ? RB2_STREAM_HEARD_RX_EDGE : 0) | (tx != 0 ? RB2_STREAM_HEARD_TX_EDGE : 0);

	if (what != 0)
		rb2_stream_heard(p->st, what);
}

/* Block until the stream of @p has @events, or @timeout_ms
 * passes (-1: never). @return 0, -EINTR, -ETIMEDOUT. */
static int
wait_stream(struct psock *p, int events, int timeout_ms)
{
	uint64_t t0 = now_ns(), until = timeout_ms < 0 ? UINT64_MAX :
		t0 + (uint64_t)timeout_ms * 1000000ull;
	struct spin sp;
	int r;

	held_flush_all();       /* nothing of ours is held while we wait */
	if (events & POLLOUT)
		(void)rb2_stream_flush(p->st);   /* ours: the caller holds its lock */
	spin_begin(&sp);
	r = wait_stream_spun(p, events, t0, until, &sp);
	spin_done(&sp);
	return r;
}

/* A sleeper's slices (wait_stream_spun()): the first is short, each that
 * passes quiet doubles the next, up to the longest. */
#define SLICE_FIRST_MS 50
#define SLICE_MAX_MS 500

static int
wait_stream_spun(struct psock *p, int events, uint64_t t0, uint64_t until,
		 struct spin *sp)
{
	int slice = SLICE_FIRST_MS;

	for (;;) {
		uint64_t now = now_ns();
		int left, r, sev;

		if (rb2_stream_poll(p->st) & (events | POLLERR | POLLHUP))
			return 0;
		if (now >= until)
			return -ETIMEDOUT;
		sp->empty = 1;
		if (now - t0 < sp->ns)
			continue;
		spin_end(sp, 1);
		/* The bell, and across hosts the completion channels the data
		 * (reading) or the freed room or credits (writing, or a held
		 * publication) themselves make readable. */
		sev = rb2_stream_sleep_events(p->st, events);
		/* Across hosts a reader also holds the eventfd of our own
		 * SHUT_RD (the device alone rings the channel). */
		struct pollfd pf[4] = { { .fd = rb2_stream_bell_fd(p->st), .events = POLLIN },
					{ .fd = rb2_stream_wake_fd(p->st, sev & POLLIN),
					  .events = POLLIN },
					{ .fd = rb2_stream_wake_fd(p->st, sev & (POLLOUT |
										    RB2_STREAM_HELD)),
					  .events = POLLIN },
					{ .fd = sev & POLLIN ? rb2_stream_shut_fd(p->st) : -1,
					  .events = POLLIN } };

		if (rb2_stream_arm(p->st, sev, 0) != 0)
			return 0;
		/* In slices: a bell read away by another thread waiting on
		 * this socket costs at most one. Everything that ends the wait
		 * rings one of these fds (the data, freed room, the peer's end
		 * and its host's silence, on the socket), so a slice that ends
		 * quiet finds nothing as a rule, and its look costs the CPU:
		 * across hosts, 0.9 ms of a TCG guest's (a status check of
		 * each queue, a liveness probe), so a reader asleep in 50 ms
		 * slices took 1-1.75% of a core. Doubling them while quiet, to
		 * 500 ms, makes that about 0.2% after the first second. */
		left = until == UINT64_MAX ? slice : (int)((until - now) / 1000000ull) + 1;
		r = REAL(poll)(pf, 4, left < slice ? left : slice);   /* poll skips fd -1 */
		slice = r == 0 ? RTE_MIN(slice * 2, SLICE_MAX_MS) : SLICE_FIRST_MS;
		if (r < 0) {
			heard(p, -1, -1, -1);
			rb2_stream_disarm(p->st, sev);    /* keeps errno */
		} else {
			heard(p, pf[0].revents, pf[1].revents, pf[2].revents);
			rb2_stream_disarm_seen(p->st, sev);
		}
		if (r < 0 && errno == EINTR)
			return -EINTR;
	}
}

/* ---- Reading and writing ------------------------------------------------------ */

static ssize_t
fail(int err)
{
	errno = err;
	return -1;
}

/* A use an rb2 connection cannot carry: EOPNOTSUPP, and a line that names
 * it, so that nothing is silently different from TCP. */
static ssize_t
refuse_call(int fd, const char *what)
{
	fprintf(stderr, "rb2-run: fd %d is a connection over rb2: %s is not supported: "
		"EOPNOTSUPP\n", fd, what);
	return fail(EOPNOTSUPP);
}

/* Step @v (@n entries) past @done bytes, in one move: @return the entries left. */
static int
iov_skip(struct iovec *v, int n, size_t done)
{
	int i = 0;

	while (i < n && done >= v[i].iov_len) {
		done -= v[i].iov_len;
		i++;
	}
	if (i < n) {
		v[i].iov_base = (uint8_t *)v[i].iov_base + done;
		v[i].iov_len -= done;
	}
	memmove(v, v + i, (size_t)(n - i) * sizeof(*v));
	return n - i;
}

/*
 * Whether the signal that just ended a wait asked for its call to go on
 * (SA_RESTART): the kernel restarts a blocking recv or send on a socket
 * with no timeout for that direction, and a program whose handlers all
 * set it (glibc's signal() does) never sees EINTR there; an rb2-run wait
 * that said it, where the kernel's would have gone on, made such a program
 * drop its connection. Which signal came is not told, so: every signal
 * with a handler that this thread does not block has SA_RESTART. A system
 * call per signal, on this path only.
 */
static int
signal_restarts(void)
{
	sigset_t blocked;

	if (pthread_sigmask(SIG_SETMASK, NULL, &blocked) != 0)
		return 0;
	for (int sig = 1; sig < NSIG; sig++) {
		struct sigaction sa;

		if (sig == SIGKILL || sig == SIGSTOP || sigismember(&blocked, sig) == 1 ||
		    sigaction(sig, NULL, &sa) != 0 ||
		    (!(sa.sa_flags & SA_SIGINFO) &&
		     (sa.sa_handler == SIG_DFL || sa.sa_handler == SIG_IGN)))
			continue;
		if (!(sa.sa_flags & SA_RESTART))
			return 0;
	}
	return 1;
}

static ssize_t s_recv(struct psock *p, int fd, const struct iovec *iov, int iovcnt, int flags);

/* TCP's MSG_PEEK | MSG_WAITALL on a blocking socket waits until @want bytes
 * are there, or the end, or the receive timeout, and then shows them (a
 * protocol sniffer peeks a whole header so). A peek returns what is there
 * at once, so this naps 100 us at a time until then: a rare use, which
 * the wait for a new publication that a sleep needs would not repay. */
static void
peek_wait_all(struct psock *p, size_t want)
{
	uint64_t until = p->rcvtimeo_ms ? now_ns() + (uint64_t)p->rcvtimeo_ms * 1000000ull :
					  UINT64_MAX;

	for (;;) {
		size_t n;
		int ev;

		pthread_mutex_lock(&p->rx_lock);
		n = rb2_stream_nread(p->st);
		ev = rb2_stream_poll(p->st);
		pthread_mutex_unlock(&p->rx_lock);
		if (n >= want || (ev & (POLLRDHUP | POLLHUP | POLLERR)) || now_ns() >= until)
			return;
		usleep(100);
	}
}

/* TCP's MSG_TRUNC: up to @want bytes read and dropped, none copied to the
 * caller, whose buffer may be NULL (HAProxy drains a connection so, with
 * INT_MAX). As a read: it waits for the first bytes if it may, and after
 * them takes only what is there, unless MSG_WAITALL. */
static ssize_t
s_recv_drop(struct psock *p, int fd, size_t want, int flags)
{
	char junk[4096];
	size_t total = 0;
	ssize_t r;

	flags &= ~MSG_TRUNC;
	do {
		struct iovec j = { junk, RTE_MIN(sizeof(junk), want - total) };

		r = s_recv(p, fd, &j, 1, total > 0 && !(flags & MSG_WAITALL) ?
			   flags | MSG_DONTWAIT : flags);
		if (r > 0)
			total += (size_t)r;
	} while (r > 0 && total < want);
	return total > 0 ? (ssize_t)total : r;
}

static ssize_t s_recv_in(struct psock *p, int fd, const struct iovec *iov, int iovcnt,
			 int flags);

/* A read of @p, which a close of its last fd in another thread meanwhile
 * leaves in place (psock_enter()). */
static ssize_t
s_recv(struct psock *p, int fd, const struct iovec *iov, int iovcnt, int flags)
{
	ssize_t r;
	int e;

	if (psock_enter(p) != 0)
		return fail(EBADF);
	r = s_recv_in(p, fd, iov, iovcnt, flags);
	e = errno;
	psock_leave(p);
	errno = e;
	return r;
}

static ssize_t
s_recv_in(struct psock *p, int fd, const struct iovec *iov, int iovcnt, int flags)
{
	int nb = p->nonblock || (flags & MSG_DONTWAIT), peek = flags & MSG_PEEK;
	struct iovec v[1024];        /* IOV_MAX */
	size_t want = 0, total = 0;
	ssize_t r = 0;

	if (flags & MSG_OOB)
		return refuse_call(fd, "recv with MSG_OOB (no urgent data on a stream)");
	if (iovcnt < 0 || iovcnt > 1024)
		return fail(EINVAL);
	for (int i = 0; i < iovcnt; i++) {
		v[i] = iov[i];
		want += iov[i].iov_len;
	}
	if (flags & MSG_ERRQUEUE) {
		/* The socket's error queue (timestamps, zero-copy reports):
		 * the kernel's, which never waits for the stream's bytes. */
		struct msghdr mh = { .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt };

		return REAL(recvmsg)(fd, &mh, flags);
	}
	if (want == 0)
		return 0;
	if ((flags & MSG_TRUNC) && !peek)
		return s_recv_drop(p, fd, want, flags);
	if (peek && (flags & MSG_WAITALL) && !nb)
		peek_wait_all(p, want);
	pthread_mutex_lock(&p->rx_lock);
	for (;;) {
		r = rb2_stream_recv(p->st, v, iovcnt, peek);
		if (r > 0) {
			total += (size_t)r;
			if (!(flags & MSG_WAITALL) || peek || total == want)
				break;
			/* MSG_WAITALL: on past what came */
			iovcnt = iov_skip(v, iovcnt, (size_t)r);
			continue;
		}
		/* Nothing now: return what came, but MSG_WAITALL waits on. */
		if (r == 0 || (r < 0 && r != -EAGAIN) || (total > 0 && !(flags & MSG_WAITALL)))
			break;
		atomic_fetch_add_explicit(&p->rx_dry, 1, memory_order_relaxed);
		if (nb) {
			/* A program that polls by reading waits as well. */
			held_flush_all();
			break;
		}
		r = wait_stream(p, POLLIN, p->rcvtimeo_ms ? p->rcvtimeo_ms : -1);
		if (r == -EINTR && p->rcvtimeo_ms == 0 && signal_restarts())
			continue;
		if (r == -ETIMEDOUT) {
			r = -EAGAIN;
			break;
		}
		if (r < 0)
			break;
	}
	pthread_mutex_unlock(&p->rx_lock);
	if (flip_at != 0 && total > 0 && !peek) {
		uint64_t at = atomic_fetch_add(&rx_seen, total);

		if (flip_at > at && flip_at <= at + total) {
			size_t k = (size_t)(flip_at - at - 1);

			for (int i = 0; i < iovcnt; k -= iov[i].iov_len, i++)
				if (k < iov[i].iov_len) {
					((uint8_t *)iov[i].iov_base)[k] ^= 0x20;
					break;
				}
		}
	}
	trace('r', fd, total > 0 ? (long)total : (long)r, (unsigned int)want);
	if (total > 0)
		return (ssize_t)total;
	return r < 0 ? fail((int)-r) : 0;
}

static ssize_t s_send_in(struct psock *p, int fd, const struct iovec *iov, int iovcnt,
			 int flags);

#ifndef SO_ZEROCOPY
#define SO_ZEROCOPY 60
#endif

/*
 * MSG_ZEROCOPY. The kernel takes it only on a socket with SO_ZEROCOPY set
 * (else it ignores the flag), and reports each send that took bytes on the
 * socket's error queue, by a 32-bit id counted from 0, once the pages are
 * free again; over loopback it copies them, and says so
 * (SO_EE_CODE_ZEROCOPY_COPIED). A stream copies every byte into the ring
 * before the call returns, so the report is due at once: the ids wait
 * here, one range as the kernel's coalesce, for recvmsg(MSG_ERRQUEUE)
 * (zc_report()), and poll and epoll say POLLERR meanwhile. A program
 * that waits for them before it reuses a buffer would otherwise wait
 * for good.
 */
static void
zc_sent(struct psock *p, int fd)
{
	int on = 0;
	socklen_t l = sizeof(on);

	if (syscall(SYS_getsockopt, fd, SOL_SOCKET, SO_ZEROCOPY, &on, &l) != 0 || !on)
		return;
	pthread_mutex_lock(&p->zc_lock);
	if (!p->zc_waiting)
		p->zc_lo = p->zc_next;
	p->zc_hi = p->zc_next++;
	p->zc_waiting = 1;
	pthread_mutex_unlock(&p->zc_lock);
}

/* A poll's look: one load, no lock (every poll and epoll wait makes it
 * for each stream). */
static inline int
zc_waiting(struct psock *p)
{
	return atomic_load_explicit(&p->zc_waiting, memory_order_relaxed);
}

/* recvmsg(MSG_ERRQUEUE) with ids waiting: one report of them all, in
 * IP_RECVERR's (IPV6_RECVERR's) form, the kernel's. @return 0 (no data),
 * or -1 with errno EAGAIN if none wait (the caller asks the kernel's queue
 * then). */
static ssize_t
zc_report(struct psock *p, int fd, struct msghdr *mh)
{
	struct {
		struct sock_extended_err ee;
		struct sockaddr_in6 offender;       /* none: zeroes */
	} err;
	struct sockaddr_storage me;
	socklen_t ml = sizeof(me);
	size_t len = sizeof(err.ee);
	int v6;

	pthread_mutex_lock(&p->zc_lock);
	if (!p->zc_waiting) {
		pthread_mutex_unlock(&p->zc_lock);
		return fail(EAGAIN);
	}
	memset(&err, 0, sizeof(err));
	err.ee.ee_origin = SO_EE_ORIGIN_ZEROCOPY;
	err.ee.ee_code = SO_EE_CODE_ZEROCOPY_COPIED;
	err.ee.ee_info = p->zc_lo;
	err.ee.ee_data = p->zc_hi;
	v6 = syscall(SYS_getsockname, fd, &me, &ml) == 0 && me.ss_family == AF_INET6;
	len += v6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
	if (mh->msg_control != NULL && mh->msg_controllen >= CMSG_SPACE(len)) {
		struct cmsghdr *c = (struct cmsghdr *)mh->msg_control;

		c->cmsg_level = v6 ? SOL_IPV6 : SOL_IP;
		c->cmsg_type = v6 ? IPV6_RECVERR : IP_RECVERR;
		c->cmsg_len = CMSG_LEN(len);
		memcpy(CMSG_DATA(c), &err, len);
		mh->msg_controllen = CMSG_SPACE(len);
		mh->msg_flags = MSG_ERRQUEUE;
	} else {
		mh->msg_controllen = 0;
		mh->msg_flags = MSG_ERRQUEUE | MSG_CTRUNC;
	}
	p->zc_waiting = 0;
	pthread_mutex_unlock(&p->zc_lock);
	mh->msg_namelen = 0;
	return 0;
}

/* A write of @p, as s_recv() a read. */
static ssize_t
s_send(struct psock *p, int fd, const struct iovec *iov, int iovcnt, int flags)
{
	ssize_t r;
	int e;

	if (psock_enter(p) != 0)
		return fail(EBADF);
	r = s_send_in(p, fd, iov, iovcnt, flags);
	e = errno;
	if (r > 0 && (flags & MSG_ZEROCOPY))
		zc_sent(p, fd);
	psock_leave(p);
	errno = e;
	return r;
}

static ssize_t
s_send_in(struct psock *p, int fd, const struct iovec *iov, int iovcnt, int flags)
{
	int nb = p->nonblock || (flags & MSG_DONTWAIT);
	struct iovec v[1024];        /* IOV_MAX */
	size_t want = 0, total = 0;
	ssize_t r = 0;

	if (flags & MSG_OOB)
		return refuse_call(fd, "send with MSG_OOB (no urgent data on a stream)");
	if (iovcnt < 0 || iovcnt > 1024)
		return fail(EINVAL);
	for (int i = 0; i < iovcnt; i++) {
		v[i] = iov[i];
		want += iov[i].iov_len;
	}
	pthread_mutex_lock(&p->tx_lock);
	while (total < want) {
		r = rb2_stream_send(p->st, v, iovcnt);
		if (r > 0) {
			total += (size_t)r;
			iovcnt = iov_skip(v, iovcnt, (size_t)r);
			continue;
		}
		if (r != -EAGAIN)
			break;
		atomic_fetch_add_explicit(&p->tx_full, 1, memory_order_relaxed);
		if (nb)
			break;
		r = wait_stream(p, POLLOUT, p->sndtimeo_ms ? p->sndtimeo_ms : -1);
		if (r == -EINTR && p->sndtimeo_ms == 0 && signal_restarts())
			continue;
		if (r == -ETIMEDOUT)
			r = -EAGAIN;
		if (r < 0)
			break;
	}
	if (total > 0 && rb2_stream_held(p->st) && held_add(p) != 0)
		(void)rb2_stream_batch(p->st, 0);   /* sends what it holds */
	pthread_mutex_unlock(&p->tx_lock);
	trace('w', fd, total > 0 ? (long)total : (long)r, (unsigned int)want);
	if (total > 0)
		return (ssize_t)total;
	if (r == -EPIPE && !(flags & MSG_NOSIGNAL))
		raise(SIGPIPE);         /* as the kernel does on a broken stream */
	return want == 0 ? 0 : fail((int)(r < 0 ? -r : EAGAIN));
}

/* A stream socket of ours that is up, or NULL. Asked by every call that
 * would use one: a fork child's use of its parent's stream to another host
 * resets it (away_used()). */
static struct psock *
stream_of(int fd)
{
	struct psock *p = get(fd);

	if (p != NULL && p->away_st != NULL && !p->away_told)
		away_used(p, fd);
	return p != NULL && p->st != NULL ? p : NULL;
}

EXPORT ssize_t
read(int fd, void *buf, size_t len)
{
	struct psock *p;
	struct iovec v = { buf, len };

	if (pend_blocks(fd, 0))
		return -1;
	p = stream_of(fd);
	return p != NULL ? s_recv(p, fd, &v, 1, 0) : REAL(read)(fd, buf, len);
}

EXPORT ssize_t
__read_chk(int fd, void *buf, size_t len, size_t buflen)
{
	if (len > buflen)
		abort();
	return read(fd, buf, len);
}

EXPORT ssize_t
readv(int fd, const struct iovec *iov, int iovcnt)
{
	struct psock *p;

	if (pend_blocks(fd, 0))
		return -1;
	p = stream_of(fd);
	return p != NULL ? s_recv(p, fd, iov, iovcnt, 0) : REAL(readv)(fd, iov, iovcnt);
}

EXPORT ssize_t
recv(int fd, void *buf, size_t len, int flags)
{
	struct psock *p;
	struct iovec v = { buf, len };

	if (pend_blocks(fd, flags & MSG_DONTWAIT))
		return -1;
	p = stream_of(fd);
	return p != NULL ? s_recv(p, fd, &v, 1, flags) : REAL(recv)(fd, buf, len, flags);
}

EXPORT ssize_t
__recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags)
{
	if (len > buflen)
		abort();
	return recv(fd, buf, len, flags);
}

EXPORT ssize_t
recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *from, socklen_t *fl)
{
	struct psock *p;
	struct iovec v = { buf, len };
	ssize_t r;

	if (pend_blocks(fd, flags & MSG_DONTWAIT))
		return -1;
	p = stream_of(fd);
	if (p == NULL)
		return REAL(recvfrom)(fd, buf, len, flags, from, fl);
	r = s_recv(p, fd, &v, 1, flags);
	/* TCP gives no source address: the kernel leaves @from alone and
	 * sets its length to 0. */
	if (r >= 0 && from != NULL && fl != NULL)
		*fl = 0;
	return r;
}

EXPORT ssize_t
__recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags,
	       struct sockaddr *from, socklen_t *fl)
{
	if (len > buflen)
		abort();
	return recvfrom(fd, buf, len, flags, from, fl);
}

EXPORT ssize_t
recvmsg(int fd, struct msghdr *mh, int flags)
{
	struct psock *p;
	ssize_t r;

	if (pend_blocks(fd, flags & MSG_DONTWAIT))
		return -1;
	p = stream_of(fd);
	/* MSG_ZEROCOPY's reports are ours; the rest of the error queue is
	 * the kernel socket's. */
	if (p != NULL && (flags & MSG_ERRQUEUE) && zc_report(p, fd, mh) == 0)
		return 0;
	if (p == NULL || (flags & MSG_ERRQUEUE))   /* the kernel's queue, its control too */
		return REAL(recvmsg)(fd, mh, flags);
	r = s_recv(p, fd, mh->msg_iov, (int)mh->msg_iovlen, flags);
	if (r >= 0) {
		mh->msg_controllen = 0;
		mh->msg_flags = 0;
		mh->msg_namelen = 0;        /* as TCP's: no source address */
	}
	return r;
}

EXPORT ssize_t
write(int fd, const void *buf, size_t len)
{
	struct psock *p;
	struct iovec v = { (void *)buf, len };

	if (pend_blocks(fd, 0))
		return -1;
	p = stream_of(fd);
	return p != NULL ? s_send(p, fd, &v, 1, 0) : REAL(write)(fd, buf, len);
}

EXPORT ssize_t
writev(int fd, const struct iovec *iov, int iovcnt)
{
	struct psock *p;

	if (pend_blocks(fd, 0))
		return -1;
	p = stream_of(fd);
	return p != NULL ? s_send(p, fd, iov, iovcnt, 0) : REAL(writev)(fd, iov, iovcnt);
}

EXPORT ssize_t
send(int fd, const void *buf, size_t len, int flags)
{
	struct psock *p;
	struct iovec v = { (void *)buf, len };

	if (pend_blocks(fd, flags & MSG_DONTWAIT))
		return -1;
	p = stream_of(fd);
	return p != NULL ? s_send(p, fd, &v, 1, flags) : REAL(send)(fd, buf, len, flags);
}

EXPORT ssize_t
sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *to, socklen_t tl)
{
	struct psock *p;
	struct iovec v = { (void *)buf, len };

	if (pend_blocks(fd, flags & MSG_DONTWAIT))
		return -1;
	p = stream_of(fd);
	/* A connected stream ignores the address, as TCP does. */
	return p != NULL ? s_send(p, fd, &v, 1, flags) :
		REAL(sendto)(fd, buf, len, flags, to, tl);
}

EXPORT ssize_t
sendmsg(int fd, const struct msghdr *mh, int flags)
{
	struct psock *p;

	if (pend_blocks(fd, flags & MSG_DONTWAIT))
		return -1;
	p = stream_of(fd);
	if (p == NULL) {
		/* An rb2 connection passed to another process (SCM_RIGHTS over
		 * a unix socket) would arrive as its idle kernel socket: the
		 * receiver would read nothing, or the bells. Refused, and said. */
		for (struct cmsghdr *c = mh != NULL && mh->msg_controllen >= sizeof(struct cmsghdr) ?
			     CMSG_FIRSTHDR((struct msghdr *)mh) : NULL;
		     c != NULL; c = CMSG_NXTHDR((struct msghdr *)mh, c)) {
			size_t nfd;

			if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
			    c->cmsg_len < CMSG_LEN(0))
				continue;
			nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (size_t k = 0; k < nfd; k++) {
				int x;

				memcpy(&x, CMSG_DATA(c) + k * sizeof(int), sizeof(int));
				listeners_handed_on(x);
				if (stream_of(x) != NULL) {
					fprintf(stderr, "rb2-run: sendmsg on fd %d: fd %d is a connection "
						"over rb2, which cannot be passed to another process "
						"(SCM_RIGHTS): EOPNOTSUPP\n", fd, x);
					return fail(EOPNOTSUPP);
				}
			}
		}
		return REAL(sendmsg)(fd, mh, flags);
	}
	if (mh->msg_controllen != 0)
		return fail(EOPNOTSUPP);   /* control messages: not over a stream */
	return s_send(p, fd, mh->msg_iov, (int)mh->msg_iovlen, flags);
}

EXPORT ssize_t
sendfile(int out, int in, off_t *off, size_t count)
{
	struct psock *p;
	enum { BOUNCE = 65536 };
	/* From the heap, not a static thread-local buffer: static TLS is
	 * carved from every thread's stack, and 64 KiB more of it made
	 * pthread_create() fail with EINVAL for threads with small stacks
	 * (node's 32 KiB signal thread) in every program under rb2-run. */
	char *buf;
	size_t done = 0;
	int err = 0;

	if (pend_blocks(out, 0))
		return -1;
	p = stream_of(out);
	if (p == NULL)
		return REAL(sendfile)(out, in, off, count);
	buf = malloc(BOUNCE);
	if (buf == NULL)
		return fail(ENOMEM);
	while (done < count) {
		size_t want = count - done < BOUNCE ? count - done : BOUNCE;
		ssize_t n = off != NULL ? pread(in, buf, want, *off) : REAL(read)(in, buf, want);
		struct iovec v = { buf, 0 };
		ssize_t w;

		if (n <= 0) {
			err = n < 0 ? errno : 0;
			break;
		}
		v.iov_len = (size_t)n;
		w = s_send(p, out, &v, 1, 0);
		if (w <= 0) {
			err = errno;
			break;
		}
		/* What was read but not sent is read again next time. */
		if (off != NULL)
			*off += w;
		else if (w < n)
			lseek(in, w - n, SEEK_CUR);
		done += (size_t)w;
		if (w < n)
			break;
	}
	free(buf);
	/* An error with nothing sent is the call's; after some, a short count. */
	return done == 0 && err != 0 ? fail(err) : (ssize_t)done;
}

/* sendmmsg and recvmmsg on a stream: one sendmsg or recvmsg a message, as
 * the kernel's do on TCP. sendmmsg stops at the first error (the count so
 * far, if any) or short message; recvmmsg at the first error. Its
 * MSG_WAITFORONE makes the messages after the first non-blocking, and its
 * timeout is checked between messages, as the kernel's is. */
EXPORT int
sendmmsg(int fd, struct mmsghdr *v, unsigned int n, int flags)
{
	unsigned int i;

	if (pend_blocks(fd, flags & MSG_DONTWAIT))
		return -1;
	if (stream_of(fd) == NULL)
		return REAL(sendmmsg)(fd, v, n, flags);
	for (i = 0; i < n && i < UIO_MAXIOV; i++) {
		ssize_t r = sendmsg(fd, &v[i].msg_hdr, flags);
		size_t want = 0;

		if (r < 0)
			return i > 0 ? (int)i : -1;
		v[i].msg_len = (unsigned int)r;
		for (size_t k = 0; k < v[i].msg_hdr.msg_iovlen; k++)
			want += v[i].msg_hdr.msg_iov[k].iov_len;
		if ((size_t)r < want)
			return (int)i + 1;
	}
	return (int)i;
}

EXPORT int
recvmmsg(int fd, struct mmsghdr *v, unsigned int n, int flags, struct timespec *timeout)
{
	uint64_t until = 0;
	unsigned int i;

	if (pend_blocks(fd, flags & MSG_DONTWAIT))
		return -1;
	if (stream_of(fd) == NULL)
		return REAL(recvmmsg)(fd, v, n, flags, timeout);
	if (timeout != NULL)
		until = now_ns() + (uint64_t)timeout->tv_sec * 1000000000ull +
			(uint64_t)timeout->tv_nsec;
	for (i = 0; i < n && i < UIO_MAXIOV; i++) {
		int f = (flags & ~MSG_WAITFORONE) | (i > 0 && (flags & MSG_WAITFORONE) ?
						       MSG_DONTWAIT : 0);
		ssize_t r = recvmsg(fd, &v[i].msg_hdr, f);

		if (r < 0)
			return i > 0 ? (int)i : -1;
		v[i].msg_len = (unsigned int)r;
		if (timeout != NULL && now_ns() >= until)
			return (int)i + 1;
	}
	return (int)i;
}

/*
 * splice() between an rb2 connection and a pipe. The kernel moves a
 * socket's bytes by reference; a stream's are in its ring, so they are
 * copied through a buffer here, with the kernel's rules: one end must be
 * a pipe (else EINVAL), a pipe takes no offset (ESPIPE) and a socket none
 * either (EINVAL); the call waits for room in the pipe, or for bytes in
 * it, unless SPLICE_F_NONBLOCK (EAGAIN), and for the socket as its
 * O_NONBLOCK says; a pipe with no writer left and nothing in it gives 0.
 * Nothing is lost on the way: from a stream, the bytes are peeked, written
 * to the pipe through a non-blocking open of it of our own (the program's
 * may block, and its flags are its own), and only what the pipe took is
 * read off the stream; into a stream, the pipe's bytes are copied by
 * tee() into a pipe of our own and read from there, and only what the
 * stream took is read off the program's pipe. Another thread reading the
 * same socket or pipe meanwhile could take the bytes between the look and
 * the take, where the kernel's splice is one step: programs splice a
 * connection from one thread. Before, such a splice failed with EINVAL
 * (HAProxy then copied through its own buffers).
 */
enum { SPLICE_CHUNK = 65536 };

/* @fd's pipe capacity, or -1 if it is not a pipe. */
static int
pipe_capacity(int fd)
{
	return REAL(fcntl)(fd, F_GETPIPE_SZ);
}

/* Wait until pipe @fd has @ev (POLLOUT: room; POLLIN: bytes, or no writer
 * left), unless @flags says SPLICE_F_NONBLOCK. @return 0, or -errno. */
static int
pipe_wait(int fd, short ev, unsigned int flags)
{
	for (;;) {
		struct pollfd pf = { .fd = fd, .events = ev };
		int r = REAL(poll)(&pf, 1, 0);

		if (r > 0 && (pf.revents & (ev | POLLHUP | POLLERR)))
			return 0;
		if (flags & SPLICE_F_NONBLOCK)
			return -EAGAIN;
		r = REAL(poll)(&pf, 1, -1);
		if (r < 0 && errno == EINTR)
			return -EINTR;
	}
}

static ssize_t
splice_from_stream(struct psock *p, int in, int out, size_t len, unsigned int flags)
{
	int cap = pipe_capacity(out), wfd, err;
	char path[40], *buf;
	ssize_t n, w = -1;
	struct iovec v;

	if (cap < 0)
		return fail(EINVAL);
	if (len == 0)
		return 0;
	if ((err = pipe_wait(out, POLLOUT, flags)) != 0)
		return fail(-err);
	buf = malloc(SPLICE_CHUNK);
	if (buf == NULL)
		return fail(ENOMEM);
	v = (struct iovec){ buf, RTE_MIN(len, RTE_MIN((size_t)cap, (size_t)SPLICE_CHUNK)) };
	n = s_recv(p, in, &v, 1, MSG_PEEK);
	if (n <= 0) {
		err = errno;
		free(buf);
		return n == 0 ? 0 : fail(err);
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", out);
	wfd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	for (;;) {
		w = REAL(write)(wfd >= 0 ? wfd : out, buf, (size_t)n);
		if (w >= 0 || errno != EAGAIN || (flags & SPLICE_F_NONBLOCK) ||
		    pipe_wait(out, POLLOUT, 0) != 0)
			break;
	}
	err = errno;
	if (wfd >= 0)
		REAL(close)(wfd);
	if (w > 0) {
		/* What the pipe took, off the stream: there, peeked. */
		v.iov_len = (size_t)w;
		(void)s_recv(p, in, &v, 1, MSG_DONTWAIT);
	}
	free(buf);
	if (w < 0 && err == ENXIO)
		err = EPIPE;             /* no reader: the open says ENXIO */
	if (w < 0 && err == EPIPE)
		raise(SIGPIPE);
	return w < 0 ? fail(err) : w;
}

static ssize_t
splice_to_stream(struct psock *p, int in, int out, size_t len, unsigned int flags)
{
	int cap = pipe_capacity(in), tp[2], avail = 0, err;
	ssize_t n, w;
	struct iovec v;
	char *buf;

	if (cap < 0)
		return fail(EINVAL);
	if (len == 0)
		return 0;
	for (;;) {
		struct pollfd pf = { .fd = in, .events = POLLIN };

		if (REAL(ioctl)(in, FIONREAD, &avail) == 0 && avail > 0)
			break;
		if (REAL(poll)(&pf, 1, 0) > 0 && (pf.revents & POLLHUP) && !(pf.revents & POLLIN))
			return 0;        /* no writer left, nothing in it */
		if ((err = pipe_wait(in, POLLIN, flags)) != 0)
			return fail(-err);
		if (REAL(ioctl)(in, FIONREAD, &avail) == 0 && avail == 0 &&
		    REAL(poll)(&pf, 1, 0) > 0 && (pf.revents & POLLHUP))
			return 0;
	}
	if (pipe2(tp, O_CLOEXEC | O_NONBLOCK) != 0)
		return -1;
	buf = malloc(SPLICE_CHUNK);
	if (buf == NULL) {
		REAL(close)(tp[0]);
		REAL(close)(tp[1]);
		return fail(ENOMEM);
	}
	/* A copy of the pipe's first bytes, which stay in it. */
	n = tee(in, tp[1], RTE_MIN(len, RTE_MIN((size_t)avail, (size_t)SPLICE_CHUNK)),
		SPLICE_F_NONBLOCK);
	n = n > 0 ? REAL(read)(tp[0], buf, (size_t)n) : n;
	err = errno;
	REAL(close)(tp[0]);
	REAL(close)(tp[1]);
	if (n <= 0) {
		free(buf);
		return n == 0 ? 0 : fail(err);
	}
	v = (struct iovec){ buf, (size_t)n };
	w = s_send(p, out, &v, 1, flags & SPLICE_F_MORE ? MSG_MORE : 0);
	err = errno;
	if (w > 0) {
		/* What the stream took, off the program's pipe. */
		size_t gone = 0;

		while (gone < (size_t)w) {
			ssize_t r = REAL(read)(in, buf, (size_t)w - gone);

			if (r <= 0)
				break;
			gone += (size_t)r;
		}
	}
	free(buf);
	return w < 0 ? fail(err) : w;
}

EXPORT ssize_t
splice(int in, loff_t *off_in, int out, loff_t *off_out, size_t len, unsigned int flags)
{
	struct psock *pi, *po;

	if (pend_blocks(in, flags & SPLICE_F_NONBLOCK) || pend_blocks(out, flags & SPLICE_F_NONBLOCK))
		return -1;
	pi = stream_of(in);
	po = stream_of(out);
	if (pi == NULL && po == NULL)
		return REAL(splice)(in, off_in, out, off_out, len, flags);
	if (pi != NULL && po != NULL)
		return fail(EINVAL);             /* neither end a pipe */
	if (pi != NULL) {
		if (pipe_capacity(out) < 0)
			return fail(EINVAL);
		if (off_out != NULL)
			return fail(ESPIPE);
		if (off_in != NULL)
			return fail(EINVAL);
		return splice_from_stream(pi, in, out, len, flags);
	}
	if (pipe_capacity(in) < 0)
		return fail(EINVAL);
	if (off_in != NULL)
		return fail(ESPIPE);
	if (off_out != NULL)
		return fail(EINVAL);
	return splice_to_stream(po, in, out, len, flags);
}

EXPORT ssize_t
sendfile64(int out, int in, off_t *off, size_t count)
{
	return sendfile(out, in, off, count);
}

/* ---- stdio ---------------------------------------------------------------------- */

/*
 * A FILE reads, writes and closes through libc's internal calls, past
 * read(), write() and close(): on a stream, fdopen()'s FILE would wait on the
 * idle kernel socket for bytes that never come there, put its writes past
 * the stream (a reset, for the bells' count: "Past the wrappers" in the
 * guide), and close the fd without ending the stream. So the FILE of any
 * TCP socket we track is glibc's cookie FILE, whose calls are these, each
 * through our wrapper: also one made before connect(), whose socket may
 * become a stream under it (its fclose() would otherwise leave the stream's
 * entry to the fd number's next file).
 */
static ssize_t
file_read(void *cookie, char *buf, size_t len)
{
	return read((int)(intptr_t)cookie, buf, len);
}

/* The whole buffer, as libc's file write loops; what went, never -1
 * (fopencookie's contract: less than asked is the error). */
static ssize_t
file_write(void *cookie, const char *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t w = write((int)(intptr_t)cookie, buf + done, len - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		done += (size_t)w;
	}
	return (ssize_t)done;
}

static int
file_seek(void *cookie, off64_t *off, int whence)
{
	(void)cookie, (void)off, (void)whence;
	errno = ESPIPE;         /* a socket's lseek() */
	return -1;
}

static int
file_close(void *cookie)
{
	return close((int)(intptr_t)cookie);
}

EXPORT FILE *
fdopen(int fd, const char *mode)
{
	static const cookie_io_functions_t io = {
		.read = file_read, .write = file_write, .seek = file_seek, .close = file_close,
	};
	FILE *f;

	if (get(fd) == NULL || mode == NULL)
		return REAL(fdopen)(fd, mode);
	f = fopencookie((void *)(intptr_t)fd, mode, io);
	if (f == NULL)
		return NULL;
	/* glibc marks a cookie FILE's descriptor -2: "none, but open", so
	 * fileno() fails. This one has one, which a program polls or hands
	 * on: fileno() must name it, as fdopen()'s FILE's does. No call of
	 * the cookie FILE's reads it (its calls are the cookie's). */
	f->_fileno = fd;
	if (strchr(mode, 'e') != NULL)
		fcntl(fd, F_SETFD, FD_CLOEXEC);
	return f;
}

/* ---- poll, select, epoll ------------------------------------------------------- */

/* The events of a stream socket now, as poll reports them. */
/* POLLRDNORM and POLLWRNORM, which TCP's poll sets with POLLIN and
 * POLLOUT: POSIX's normal-data readiness, which portable code may ask for
 * alone (curl asks for both kinds). */
static inline int
with_norm(int ev)
{
	return ev | (ev & POLLIN ? POLLRDNORM : 0) | (ev & POLLOUT ? POLLWRNORM : 0);
}

/* The directions @events asks for, POLLRDNORM's and POLLWRNORM's too. */
static inline int
io_asked(int events)
{
	return (events & (POLLIN | POLLOUT)) | (events & POLLRDNORM ? POLLIN : 0) |
	       (events & POLLWRNORM ? POLLOUT : 0);
}

static short
stream_revents(struct psock *p, short events)
{
	int ev = with_norm(rb2_stream_poll(p->st)) | (zc_waiting(p) ? POLLERR : 0);

	return (short)(ev & (events | POLLERR | POLLHUP | POLLNVAL));
}

static int poll_spun(struct pollfd *fds, nfds_t n, int timeout_ms, const sigset_t *mask,
		     struct spin *sp);

static int
poll_impl(struct pollfd *fds, nfds_t n, int timeout_ms, const sigset_t *mask)
{
	struct spin sp;
	int r;

	held_flush_all();
	spin_begin(&sp);
	r = poll_spun(fds, n, timeout_ms, mask, &sp);
	spin_done(&sp);
	return r;
}

static int
poll_spun(struct pollfd *fds, nfds_t n, int timeout_ms, const sigset_t *mask, struct spin *sp)
{
	struct pollfd *k = NULL;
	uint64_t t0 = now_ns();
	int streams = 0, pends = 0, *wx, *aev, *pd;

	for (nfds_t i = 0; i < n; i++) {
		struct psock *p = stream_of(fds[i].fd);

		streams += p != NULL;
		pends += pending(fds[i].fd);
	}
	if (streams == 0 && pends == 0) {
		if (mask == NULL)
			return REAL(poll)(fds, n, timeout_ms);
		struct timespec ts = { timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000 };

		return REAL(ppoll)(fds, n, timeout_ms < 0 ? NULL : &ts, mask);
	}
	/* Room for three more fds per stream: across hosts, its completion
	 * channels (reading and writing), and where each went (wx[2i],
	 * wx[2i+1]: their places in k, or -1), and the eventfd of our own
	 * SHUT_RD (rb2_stream_shut_fd()); and what each stream armed
	 * (aev[i], rb2_stream_sleep_events()), which its disarm takes; and
	 * which fds were set up in the background (pd[i]: pend_start()), whose
	 * place in k their pend_efd takes. */
	k = malloc(4 * n * sizeof(*k) + 4 * n * sizeof(int));
	if (k == NULL)
		return (int)fail(ENOMEM);
	wx = (int *)(k + 4 * n);
	aev = wx + 2 * n;
	pd = aev + n;
	for (;;) {
		int ready = 0, armed = 0, r = 0, left, again = 0, kern = 0;
		nfds_t extra = 0;
		uint64_t wait;
		uint64_t now = now_ns();

		/* The kernel's fds, without waiting (none: no system call). */
		for (nfds_t i = 0; i < n; i++) {
			k[i] = fds[i];
			k[i].revents = 0;
			aev[i] = 0;
			pd[i] = 0;
			if (stream_of(fds[i].fd) != NULL) {
				k[i].fd = -1;
			} else if (pending(fds[i].fd)) {
				k[i] = (struct pollfd){ .fd = get(fds[i].fd)->pend_efd,
							.events = POLLIN };
				pd[i] = 1;
			}
			kern += k[i].fd >= 0;
		}
		/* Counted each time: a stream closed by another thread while
		 * this slept is the kernel's fd now, which reports POLLNVAL. */
		if (kern > 0)
			r = REAL(poll)(k, n, 0);
		if (r < 0) {
			free(k);
			return r;
		}
		for (nfds_t i = 0; i < n; i++) {
			struct psock *p = stream_of(fds[i].fd);

			if (pd[i]) {
				/* Still connecting: nothing yet. Done since? */
				fds[i].revents = 0;
				again |= k[i].revents != 0;
				continue;
			}
			fds[i].revents = p != NULL ? stream_revents(p, fds[i].events) : k[i].revents;
			ready += fds[i].revents != 0;
		}
		if (ready == 0 && again)
			continue;            /* a set-up done: look again */
		if (ready > 0 || timeout_ms == 0) {
			free(k);
			return ready;
		}
		left = timeout_ms < 0 ? -1 : timeout_ms - (int)((now - t0) / 1000000ull);
		if (timeout_ms > 0 && left <= 0) {
			free(k);
			return 0;
		}
		sp->empty = 1;
		if (now - t0 < sp->ns)
			continue;
		spin_end(sp, 1);
		/* Sleep: every stream armed, then the kernel waits on all; one
		 * bell wakes this wait, so one is all a peer rings. */
		wait = rb2_stream_wait_id();
		for (nfds_t i = 0; i < n; i++) {
			struct psock *p = stream_of(fds[i].fd);

			k[i] = fds[i];
			wx[2 * i] = wx[2 * i + 1] = -1;
			if (p == NULL && pending(fds[i].fd))
				k[i] = (struct pollfd){ .fd = get(fds[i].fd)->pend_efd,
							.events = POLLIN };
			if (p == NULL)
				continue;
			aev[i] = rb2_stream_sleep_events(p->st, io_asked(fds[i].events));
			if (rb2_stream_arm(p->st, aev[i], wait) != 0) {
				aev[i] = 0;              /* nothing is left armed */
				armed = -1;
				break;
			}
			k[i].fd = rb2_stream_bell_fd(p->st);   /* -1 at its end */
			k[i].events = POLLIN;
			for (int w = 0; w < 2; w++) {
				int ev = w == 0 ? POLLIN : POLLOUT | RB2_STREAM_HELD;

				if (!(aev[i] & ev) || rb2_stream_wake_fd(p->st, ev) < 0)
					continue;
				wx[2 * i + w] = (int)(n + extra);
				k[n + extra++] = (struct pollfd){
					.fd = rb2_stream_wake_fd(p->st, ev), .events = POLLIN };
			}
			if ((aev[i] & POLLIN) && rb2_stream_shut_fd(p->st) >= 0)
				k[n + extra++] = (struct pollfd){
					.fd = rb2_stream_shut_fd(p->st), .events = POLLIN };
			armed++;
		}
		if (armed >= 0) {
			if (mask != NULL) {
				struct timespec ts = { left / 1000, (long)(left % 1000) * 1000000 };

				r = REAL(ppoll)(k, n + extra, left < 0 ? NULL : &ts, mask);
			} else {
				r = REAL(poll)(k, n + extra, left);
			}
		}
		for (nfds_t i = 0; i < n; i++) {
			struct psock *p = stream_of(fds[i].fd);

			if (p == NULL)
				continue;
			/* The socket as the kernel saw it, and across hosts its
			 * completion channels: only those readable are read.
			 * (One host's eventfd is read while the peer's count of
			 * rings is ahead of what was read.) */
			if (armed < 0 || r < 0) {
				heard(p, -1, 0, 0);
				rb2_stream_disarm(p->st, aev[i]);
				continue;
			}
			heard(p, k[i].revents, wx[2 * i] >= 0 ? k[wx[2 * i]].revents : 0,
			      wx[2 * i + 1] >= 0 ? k[wx[2 * i + 1]].revents : 0);
			rb2_stream_disarm_seen(p->st, aev[i]);
		}
		if (armed >= 0 && r < 0) {
			free(k);
			return r;
		}
	}
}

EXPORT int
poll(struct pollfd *fds, nfds_t n, int timeout_ms)
{
	return poll_impl(fds, n, timeout_ms, NULL);
}

EXPORT int
ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask)
{
	int ms = ts == NULL ? -1 : (int)(ts->tv_sec * 1000 + ts->tv_nsec / 1000000);

	return poll_impl(fds, n, ms, mask);
}

/* glibc's fortified poll and ppoll (_FORTIFY_SOURCE, where the array's size
 * is known: Debian's memcached calls __poll_chk): the same, after the same
 * check. */
EXPORT int
__poll_chk(struct pollfd *fds, nfds_t n, int timeout_ms, size_t fdslen)
{
	if (fdslen / sizeof(*fds) < n)
		abort();
	return poll(fds, n, timeout_ms);
}

EXPORT int
__ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask,
	    size_t fdslen)
{
	if (fdslen / sizeof(*fds) < n)
		abort();
	return ppoll(fds, n, ts, mask);
}

/* select and pselect over streams: the sets as a poll (@ms: -1 for ever). */
static int
select_impl(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, int ms, const sigset_t *mask)
{
	struct pollfd pf[FD_SETSIZE];
	nfds_t n = 0;
	int r, count = 0;

	for (int fd = 0; fd < nfds && fd < FD_SETSIZE; fd++) {
		short ev = (short)((rd && FD_ISSET(fd, rd) ? POLLIN : 0) |
				   (wr && FD_ISSET(fd, wr) ? POLLOUT : 0) |
				   (ex && FD_ISSET(fd, ex) ? POLLPRI : 0));

		if (ev != 0)
			pf[n++] = (struct pollfd){ .fd = fd, .events = ev };
	}
	r = poll_impl(pf, n, ms, mask);
	if (r < 0)
		return r;
	if (rd)
		FD_ZERO(rd);
	if (wr)
		FD_ZERO(wr);
	if (ex)
		FD_ZERO(ex);
	for (nfds_t i = 0; i < n; i++) {
		short re = pf[i].revents;

		if (rd && (re & (POLLIN | POLLHUP | POLLERR))) {
			FD_SET(pf[i].fd, rd);
			count++;
		}
		if (wr && (re & (POLLOUT | POLLERR))) {
			FD_SET(pf[i].fd, wr);
			count++;
		}
		if (ex && (re & POLLPRI)) {
			FD_SET(pf[i].fd, ex);
			count++;
		}
	}
	return count;
}

/* Whether any fd of the sets is a stream: else the call is libc's. */
static int
select_streams(int nfds, fd_set *rd, fd_set *wr, fd_set *ex)
{
	for (int fd = 0; fd < nfds && fd < FD_SETSIZE; fd++)
		if (((rd && FD_ISSET(fd, rd)) || (wr && FD_ISSET(fd, wr)) ||
		     (ex && FD_ISSET(fd, ex))) && (stream_of(fd) != NULL || pending(fd)))
			return 1;
	return 0;
}

EXPORT int
select(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *tv)
{
	held_flush_all();
	if (!select_streams(nfds, rd, wr, ex))
		return REAL(select)(nfds, rd, wr, ex, tv);
	return select_impl(nfds, rd, wr, ex,
			   tv == NULL ? -1 : (int)(tv->tv_sec * 1000 + tv->tv_usec / 1000), NULL);
}

EXPORT int
pselect(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, const struct timespec *ts,
	const sigset_t *mask)
{
	held_flush_all();
	if (!select_streams(nfds, rd, wr, ex))
		return REAL(pselect)(nfds, rd, wr, ex, ts, mask);
	return select_impl(nfds, rd, wr, ex,
			   ts == NULL ? -1 : (int)(ts->tv_sec * 1000 + ts->tv_nsec / 1000000), mask);
}

/*
 * The sleeps on one set that armed one stream entry, counted by what each
 * asked the stream for. Two threads may sleep on one set, and what a sleep
 * asks for changes between them (rb2_stream_sleep_events() adds
 * RB2_STREAM_HELD while writes are held). The stream counts its sleepers
 * per direction (rb2_stream_want()), so each disarm gives back one arm's
 * direction: keeping only the last arm's events would give back the wrong
 * one, and leave a direction counted asleep for good (its flag up, and its
 * peer ringing for nobody).
 */
struct ep_arms {
	uint16_t in;                /* arms with POLLIN */
	uint16_t out;               /* ... with POLLOUT */
	uint16_t held;              /* ... with RB2_STREAM_HELD and not POLLOUT */
};

static void
ep_arms_add(struct ep_arms *a, int events)
{
	a->in += (events & POLLIN) != 0;
	a->out += (events & POLLOUT) != 0;
	a->held += (events & (POLLOUT | RB2_STREAM_HELD)) == RB2_STREAM_HELD;
}

/* One arm's events, for its disarm, and no longer counted; 0: none left. */
static int
ep_arms_take(struct ep_arms *a)
{
	int ev = 0;

	if (a->in > 0) {
		a->in--;
		ev |= POLLIN;
	}
	if (a->out > 0) {
		a->out--;
		ev |= POLLOUT;
	} else if (a->held > 0) {
		a->held--;
		ev |= RB2_STREAM_HELD;
	}
	return ev;
}

/*
 * epoll: the kernel's epoll set holds every fd, stream sockets included
 * (their kernel sockets: readable when a bell rings). What a stream
 * socket's entry asks for is kept here, and its readiness is the
 * stream's; the kernel's events for it only wake the wait.
 */
struct ep_item {
	int fd;
	int kernel;                 /* the kernel's entry as asked: a TCP socket
				     * added before it was connected, or ... */
	int nested;                 /* ... an epoll fd, whose streams count */
	uint32_t events;            /* as the program asked */
	epoll_data_t data;
	int last;                   /* EPOLLET: the events seen last ... */
	uint32_t in, out;           /* ... the stream's edges then ... */
	uint32_t rx_dry, tx_full;   /* ... and the socket's EAGAINs */
	int off;                    /* EPOLLONESHOT fired */
	int gone;                   /* a stream's entry the program deleted: the
				     * kernel's bell entry stays, for a later ADD */
	int excl;                   /* added with EPOLLEXCLUSIVE */
	struct ep_arms arms;        /* the sleeps on the set that armed it */
	struct ep_arms set_arms;    /* armed by its add, for the set's sleepers (ep_poke()) */
};

struct ep_set {
	int epfd;
	_Atomic unsigned int fair;  /* waits that found streams ready */
	_Atomic int sleepers;       /* threads blocked in the kernel's wait on it */
	_Atomic int nested_in;      /* it is in another set (ep_mark_nested()) */
	int poke_fd;                /* its poke (ep_poke()), or -1 until one is needed */
	pthread_mutex_t lock;
	struct ep_item *it;
	unsigned int n, cap;
	struct ep_set *next;        /* every set, for a closed socket's entries */
};

static struct ep_set *ep_all;
static pthread_mutex_t ep_all_lock = PTHREAD_MUTEX_INITIALIZER;

#define EP_TAG 0x7262320000000000ull  /* "rb2" in the kernel's data: a stream's socket */
#define EP_TAG_WAKE 0x7262330000000000ull /* "rb3": its wake fd (ep_add_wake()) */
#define EP_TAG_ROOM 0x7262340000000000ull /* "rb4": across hosts, its sender's */
#define EP_TAG_POKE 0x7262350000000000ull /* "rb5": the set's poke (ep_poke()) */

static struct ep_set *
ep_get(int epfd, int make)
{
	struct ep_set *e;

	if (epfd < 0 || (unsigned int)epfd >= tab_size || eps == NULL)
		return NULL;
	e = atomic_load(&eps[epfd]);
	if (e == NULL && make) {
		struct ep_set *x = calloc(1, sizeof(*x)), *none = NULL;

		if (x == NULL)
			return NULL;
		pthread_mutex_init(&x->lock, NULL);
		x->epfd = epfd;
		x->poke_fd = -1;
		if (!atomic_compare_exchange_strong(&eps[epfd], &none, x)) {
			free(x);
			return none;
		}
		pthread_mutex_lock(&ep_all_lock);
		x->next = ep_all;
		ep_all = x;
		pthread_mutex_unlock(&ep_all_lock);
		e = x;
	}
	return e;
}

static void
ep_remove(struct ep_set *e, int fd)
{
	pthread_mutex_lock(&e->lock);
	for (unsigned int i = 0; i < e->n; i++)
		if (e->it[i].fd == fd)
			e->it[i--] = e->it[--e->n];
	pthread_mutex_unlock(&e->lock);
}

/* A socket closes: the kernel drops it from every epoll set, and so do we. */
static void
ep_forget_fd(int fd)
{
	pthread_mutex_lock(&ep_all_lock);
	for (struct ep_set *e = ep_all; e != NULL; e = e->next)
		ep_remove(e, fd);
	pthread_mutex_unlock(&ep_all_lock);
}

/* A stream on one host ends: its eventfd leaves every set it was added to
 * (ep_add_wake()). The kernel would keep the entries: the peer holds the
 * same eventfd, so its file stays open when ours closes. */
static void
ep_drop_wake(int wfd)
{
	if (wfd < 0)
		return;
	pthread_mutex_lock(&ep_all_lock);
	for (struct ep_set *e = ep_all; e != NULL; e = e->next)
		(void)REAL(epoll_ctl)(e->epfd, EPOLL_CTL_DEL, wfd, NULL);
	pthread_mutex_unlock(&ep_all_lock);
}

/* The pokes of the sets a range of descriptors leaves open (close_range()). */
static void
ep_keep_pokes(struct fd_keep *k)
{
	pthread_mutex_lock(&ep_all_lock);
	for (struct ep_set *e = ep_all; e != NULL; e = e->next) {
		pthread_mutex_lock(&e->lock);
		if (e->poke_fd >= 0 && ((unsigned int)e->epfd < k->first || (unsigned int)e->epfd > k->last))
			keep_add(k, e->poke_fd);
		pthread_mutex_unlock(&e->lock);
	}
	pthread_mutex_unlock(&ep_all_lock);
}

/* An epoll fd closes: its set goes (it stays listed, empty, for reuse). */
static void
ep_forget_set(int epfd)
{
	struct ep_set *e = ep_get(epfd, 0);

	if (e != NULL) {
		pthread_mutex_lock(&e->lock);
		e->n = 0;
		if (e->poke_fd >= 0)
			REAL(close)(e->poke_fd);   /* its entry went with the set */
		e->poke_fd = -1;
		atomic_store(&e->nested_in, 0);
		pthread_mutex_unlock(&e->lock);
	}
}

/*
 * A stream entry added to @e, or changed, while a thread sleeps in the
 * kernel's wait on it: that sleep asked the streams it knew for bells
 * before it blocked (ep_arm()), or, on a set of kernel fds alone, none at
 * all, so the new entry's peer rings nobody, and data already there wakes
 * nobody, where the kernel would have woken the wait at once. Apache's
 * event MPM does this on every request: a worker adds the connection to
 * the set its listener thread sleeps in, and each request on a kept-alive
 * connection waited for some other event (up to Apache's seconds). So the
 * add arms the new entry for the set's sleepers, or, where that cannot do,
 * pokes the set: an eventfd in the kernel's set, written, which wakes a
 * sleeper; it loops, arms every stream entry, looks, and sleeps again. A
 * set nested in another is poked whatever its own sleepers: a sleeper on
 * the outer set armed the streams it saw, and the poke makes the inner set
 * readable in the outer (once: the poke is edge-triggered).
 */
static void
ep_poke(struct ep_set *e, int fd)
{
	static const uint64_t one = 1;
	struct psock *p = stream_of(fd);
	int wake = 1;

	if (atomic_load(&e->sleepers) == 0 && !atomic_load(&e->nested_in))
		return;
	pthread_mutex_lock(&e->lock);
	/* The common case, a sleeper of this set's own and nothing there yet
	 * (Apache's kept-alive connection, its next request to come): the add
	 * arms the entry for the sleepers, and wakes nobody; the peer's bell
	 * will. The last sleeper to leave the set gives the arms back
	 * (ep_sleep_end()). Poked all the same: a nested set (its sleepers are
	 * the outer set's), something already there, or on its way without a
	 * bell (across hosts). */
	for (unsigned int i = 0; p != NULL && atomic_load(&e->sleepers) > 0 && i < e->n; i++) {
		struct ep_item *it = &e->it[i];
		int ev;

		if (it->fd != fd || it->kernel || it->nested || it->gone || it->off)
			continue;
		ev = rb2_stream_sleep_events(p->st, io_asked((int)it->events));
		ep_arms_add(&it->set_arms, ev);
		wake = rb2_stream_want(p->st, ev, rb2_stream_wait_id()) != 0 ||
		       (rb2_stream_poll(p->st) & (ev | POLLERR | POLLHUP)) != 0;
		break;
	}
	if (!wake) {
		pthread_mutex_unlock(&e->lock);
		return;
	}
	if (e->poke_fd < 0) {
		int fd = rb2_xport_fd_raise(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
		struct epoll_event kev = { .events = EPOLLIN | EPOLLET,
					   .data.u64 = EP_TAG_POKE | (uint32_t)e->epfd };

		if (fd >= 0 && REAL(epoll_ctl)(e->epfd, EPOLL_CTL_ADD, fd, &kev) != 0) {
			REAL(close)(fd);
			fd = -1;
		}
		e->poke_fd = fd;
	}
	if (e->poke_fd >= 0)
		(void)syscall(SYS_write, e->poke_fd, &one, sizeof(one));
	pthread_mutex_unlock(&e->lock);
}

/* Every set that holds stream @fd, poked: its sleepers look again. */
static void
ep_poke_sets_of(int fd)
{
	pthread_mutex_lock(&ep_all_lock);
	for (struct ep_set *e = ep_all; e != NULL; e = e->next) {
		int in = 0;

		pthread_mutex_lock(&e->lock);
		for (unsigned int i = 0; i < e->n && !in; i++)
			in = e->it[i].fd == fd && !e->it[i].gone;
		pthread_mutex_unlock(&e->lock);
		if (in)
			ep_poke(e, fd);
	}
	pthread_mutex_unlock(&ep_all_lock);
}

/* Record @fd's entry in @e as the program asked (@kernel: as the kernel
 * holds it). @return 0 or -ENOMEM. */
static int
ep_put(struct ep_set *e, int fd, const struct epoll_event *ev, int kernel)
{
	unsigned int i;

	pthread_mutex_lock(&e->lock);
	for (i = 0; i < e->n && e->it[i].fd != fd; i++)
		;
	if (i == e->n) {
		if (e->n == e->cap) {
			unsigned int cap = e->cap ? 2 * e->cap : 16;
			struct ep_item *it = realloc(e->it, cap * sizeof(*it));

			if (it == NULL) {
				pthread_mutex_unlock(&e->lock);
				return -ENOMEM;
			}
			e->it = it;
			e->cap = cap;
		}
		e->n++;
	}
	e->it[i] = (struct ep_item){ .fd = fd, .kernel = kernel, .events = ev->events,
				     .data = ev->data, .excl = !!(ev->events & EPOLLEXCLUSIVE) };
	pthread_mutex_unlock(&e->lock);
	return 0;
}

/* Whether @fd is an epoll fd (one readlink, on ADD of a non-socket). */
static int
is_epoll_fd(int fd)
{
	char path[64], link[32];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return 0;
	link[n] = '\0';
	return strcmp(link, "anon_inode:[eventpoll]") == 0;
}

static int ep_stream_ctl(struct ep_set *e, int op, int fd, const struct epoll_event *ev);

/* Across hosts, stream @fd's other bells, its receiver's and its sender's
 * completion channels, go into the kernel's set beside the socket, tagged
 * as the socket's bell. They leave the set when the stream closes (the
 * kernel drops an entry whose file is closed). */
static void
ep_add_wake(int epfd, int fd)
{
	struct psock *p = stream_of(fd);

	for (int w = 0; p != NULL && w < 2; w++) {
		int wfd = rb2_stream_wake_fd(p->st, w == 0 ? POLLIN : POLLOUT);
		struct epoll_event kev = { .events = EPOLLIN | EPOLLET,
					   .data.u64 = (w == 0 ? EP_TAG_WAKE : EP_TAG_ROOM) |
						   (uint32_t)fd };

		/* On one host both are the eventfd: the second ADD fails. */
		if (wfd >= 0)
			(void)REAL(epoll_ctl)(epfd, EPOLL_CTL_ADD, wfd, &kev);
	}
}

EXPORT int
epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	struct psock *p = stream_of(fd);
	struct epoll_event kev;
	struct ep_set *e;
	int ret;

	/* An epoll set inside another: the kernel's entry as asked (the inner
	 * set is readable when a bell in it is), and remembered, so that a
	 * wait on the outer set looks at the inner set's streams and asks
	 * them for bells. */
	if (p == NULL && get(fd) == NULL && op != EPOLL_CTL_DEL && ev != NULL &&
	    (ep_get(fd, 0) != NULL || (op == EPOLL_CTL_ADD && is_epoll_fd(fd)))) {
		ret = REAL(epoll_ctl)(epfd, op, fd, ev);
		if (ret == 0 && (e = ep_get(epfd, 1)) != NULL && ep_get(fd, 1) != NULL) {
			if (ep_put(e, fd, ev, 1) != 0)
				ep_remove(e, fd);
			else
				ep_mark_nested(e, fd);
		}
		return ret;
	}
	if (p == NULL) {
		/* A kernel fd: the kernel's entry. A TCP socket of ours is
		 * remembered too: if it connects over rb2 later (nginx adds
		 * its upstream sockets before connect()), its entry becomes a
		 * stream's (ep_adopt()). One whose set-up is under way is
		 * muted until it is done (pend_entries()). */
		if (op != EPOLL_CTL_DEL && ev != NULL && pending(fd)) {
			/* Without EPOLLEXCLUSIVE, which would refuse the MOD
			 * that makes it the stream's (ep_adopt()); the entry
			 * keeps it (pend_entries()). */
			struct epoll_event mev = { .events = EPOLLIN | EPOLLET,
						   .data.u64 = EP_TAG | (uint32_t)fd };

			pthread_mutex_lock(&pend_lock);
			if (pending(fd) && (e = ep_get(epfd, 1)) != NULL) {
				ret = REAL(epoll_ctl)(epfd, op, fd, &mev);
				if (ret == 0 && ep_put(e, fd, ev, 1) != 0) {
					(void)REAL(epoll_ctl)(epfd, EPOLL_CTL_DEL, fd, &mev);
					ep_remove(e, fd);
					ret = (int)fail(ENOMEM);
				}
				pthread_mutex_unlock(&pend_lock);
				return ret;
			}
			pthread_mutex_unlock(&pend_lock);
			p = stream_of(fd);       /* done meanwhile */
			if (p != NULL)
				goto stream;
		}
		ret = REAL(epoll_ctl)(epfd, op, fd, ev);
		e = ep_get(epfd, ret == 0 && get(fd) != NULL && op != EPOLL_CTL_DEL);
		if (ret != 0 || e == NULL)
			return ret;
		if (op == EPOLL_CTL_DEL || get(fd) == NULL)
			ep_remove(e, fd);    /* also a closed stream's number, reused */
		else if (ev != NULL && ep_put(e, fd, ev, 1) != 0)
			ep_remove(e, fd);    /* no memory: it stays the kernel's */
		return 0;
	}
stream:
	e = ep_get(epfd, op != EPOLL_CTL_DEL);
	if (e == NULL)
		return REAL(epoll_ctl)(epfd, op, fd, ev);
	if (op == EPOLL_CTL_DEL || op == EPOLL_CTL_MOD) {
		ret = ep_stream_ctl(e, op, fd, ev);
		if (ret == 0 && op == EPOLL_CTL_MOD)
			ep_poke(e, fd);
		return ret;
	}
	if (ev == NULL)
		return (int)fail(EFAULT);
	/* EPOLLEXCLUSIVE's rule, which the kernel cannot see below: with it,
	 * only these bits. (It goes down, for the kernel's other rules: not
	 * with MOD, not on an entry made with it.) */
	if (op == EPOLL_CTL_ADD && (ev->events & EPOLLEXCLUSIVE) &&
	    (ev->events & ~(uint32_t)(EPOLLIN | EPOLLOUT | EPOLLERR | EPOLLHUP | EPOLLWAKEUP |
				      EPOLLET | EPOLLEXCLUSIVE)))
		return (int)fail(EINVAL);
	if ((ret = ep_stream_ctl(e, op, fd, ev)) != 1) {
		if (ret == 0)
			ep_poke(e, fd);  /* a deleted entry back */
		return ret;
	}
	/* The kernel waits for the bell, edge-triggered: each bell wakes one
	 * wait, and a kernel socket at its end (the peer closed; it stays
	 * readable) wakes one, not every wait after it. */
	kev.events = EPOLLIN | EPOLLET | (ev->events & EPOLLEXCLUSIVE);
	kev.data.u64 = EP_TAG | (uint32_t)fd;
	ret = REAL(epoll_ctl)(epfd, op, fd, &kev);
	if (ret != 0)
		return ret;
	ep_add_wake(epfd, fd);
	if (ep_put(e, fd, ev, 0) != 0) {
		REAL(epoll_ctl)(epfd, EPOLL_CTL_DEL, fd, &kev);
		return (int)fail(ENOMEM);
	}
	ep_poke(e, fd);
	return 0;
}

/*
 * A stream's entry changes without the kernel: its kernel half is a bell,
 * the same whatever the program asks, so MOD changes only what the scan
 * reads, DEL marks the entry gone and keeps the bell's, and a later ADD
 * takes it back. redis-benchmark deletes and adds an entry per request:
 * the two system calls (each allocating or freeing the kernel's item) took
 * a quarter of its CPU at -c 50 (perf). The kernel's rules, which it no
 * longer sees, are kept here: EEXIST, ENOENT, and no EPOLLEXCLUSIVE with
 * MOD or on an entry added with it. A gone entry's bells can still wake a
 * wait (a thread blocked in recv() on the socket asks for them): the wait
 * drops bells, so it only looks once more.
 * @return 0 or -1 (errno) when done here; 1: the caller adds the entry.
 */
static int
ep_stream_ctl(struct ep_set *e, int op, int fd, const struct epoll_event *ev)
{
	struct ep_item *it = NULL;
	int err = 0;

	pthread_mutex_lock(&e->lock);
	for (unsigned int i = 0; i < e->n && it == NULL; i++)
		if (e->it[i].fd == fd && !e->it[i].kernel && !e->it[i].nested)
			it = &e->it[i];
	switch (op) {
	case EPOLL_CTL_ADD:
		if (it == NULL) {
			pthread_mutex_unlock(&e->lock);
			return 1;
		}
		if (!it->gone)
			err = EEXIST;
		else if (ev->events & EPOLLEXCLUSIVE)
			err = 1;             /* the kernel's entry was made without it */
		else
			*it = (struct ep_item){ .fd = fd, .events = ev->events, .data = ev->data,
						.arms = it->arms,     /* a sleep's */
						.set_arms = it->set_arms };
		break;
	case EPOLL_CTL_MOD:
		/* In the kernel's order of checks. */
		if (ev == NULL)
			err = EFAULT;
		else if (ev->events & EPOLLEXCLUSIVE)
			err = EINVAL;
		else if (it == NULL || it->gone)
			err = ENOENT;
		else if (it->excl)
			err = EINVAL;
		else
			*it = (struct ep_item){ .fd = fd, .events = ev->events, .data = ev->data,
						.arms = it->arms,     /* a sleep's */
						.set_arms = it->set_arms };
		break;
	default:                         /* DEL */
		if (it == NULL || it->gone)
			err = ENOENT;
		else if (it->excl)
			err = 1;             /* the kernel's EPOLLEXCLUSIVE entry goes too */
		else
			it->gone = 1;
		break;
	}
	pthread_mutex_unlock(&e->lock);
	if (err == 1) {                  /* the kernel's entry goes, then as asked */
		struct epoll_event kev = { 0 };

		ep_remove(e, fd);
		if (REAL(epoll_ctl)(e->epfd, EPOLL_CTL_DEL, fd, &kev) != 0)
			return -1;
		return op == EPOLL_CTL_DEL ? 0 : 1;   /* (MOD never comes here) */
	}
	if (err != 0)
		return (int)fail(err);
	return 0;
}

static void
ep_mark_nested(struct ep_set *e, int fd)
{
	struct ep_set *in = ep_get(fd, 0);

	pthread_mutex_lock(&e->lock);
	for (unsigned int i = 0; i < e->n; i++)
		if (e->it[i].fd == fd)
			e->it[i].nested = 1;
	pthread_mutex_unlock(&e->lock);
	if (in != NULL)
		atomic_store(&in->nested_in, 1);
}

/* Socket @fd has just become a stream: each epoll entry the program made
 * for it before becomes a stream entry, its kernel half a bell. */
static void
ep_adopt(int fd)
{
	pthread_mutex_lock(&ep_all_lock);
	for (struct ep_set *e = ep_all; e != NULL; e = e->next) {
		int adopted = 0;

		pthread_mutex_lock(&e->lock);
		for (unsigned int i = 0; i < e->n; i++) {
			struct ep_item *it = &e->it[i];
			struct epoll_event kev = { .events = EPOLLIN | EPOLLET,
						   .data.u64 = EP_TAG | (uint32_t)fd };

			if (it->fd != fd || !it->kernel)
				continue;
			if (REAL(epoll_ctl)(e->epfd, EPOLL_CTL_MOD, fd, &kev) == 0) {
				*it = (struct ep_item){ .fd = fd, .events = it->events,
							.data = it->data };
				ep_add_wake(e->epfd, fd);
				adopted = 1;
			}
		}
		pthread_mutex_unlock(&e->lock);
		if (adopted)
			ep_poke(e, fd);
	}
	pthread_mutex_unlock(&ep_all_lock);
}

/* A set-up of socket @fd goes on in the background (pend_start()): with
 * @mute, each kernel entry of it waits for nothing the program sees,
 * edge-triggered on EPOLLIN and tagged as a bell, which the waits drop.
 * Without, it stays the kernel's (a fall-back, or reset): the entries as
 * the program made them, and the kernel reports what is ready at the MOD.
 * An entry made with EPOLLEXCLUSIVE takes no MOD: it is made again. The
 * caller holds pend_lock. */
static void
pend_entries(int fd, int mute)
{
	pthread_mutex_lock(&ep_all_lock);
	for (struct ep_set *e = ep_all; e != NULL; e = e->next) {
		pthread_mutex_lock(&e->lock);
		for (unsigned int i = 0; i < e->n; i++) {
			const struct ep_item *it = &e->it[i];
			struct epoll_event kev = { .events = it->events, .data = it->data };

			if (it->fd != fd || !it->kernel)
				continue;
			if (mute)
				kev = (struct epoll_event){ .events = EPOLLIN | EPOLLET,
							    .data.u64 = EP_TAG | (uint32_t)fd };
			if (mute || !it->excl) {
				(void)REAL(epoll_ctl)(e->epfd, EPOLL_CTL_MOD, fd, &kev);
			} else {
				(void)REAL(epoll_ctl)(e->epfd, EPOLL_CTL_DEL, fd, &kev);
				(void)REAL(epoll_ctl)(e->epfd, EPOLL_CTL_ADD, fd, &kev);
			}
		}
		pthread_mutex_unlock(&e->lock);
	}
	pthread_mutex_unlock(&ep_all_lock);
}

/* Whether @e holds a stream entry, itself or in a set nested in it (the
 * kernel allows 4 levels): else a wait is the kernel's alone. */
static int
ep_streams_at(struct ep_set *e, int depth)
{
	int yes = 0;

	pthread_mutex_lock(&e->lock);
	for (unsigned int i = 0; i < e->n && !yes; i++) {
		const struct ep_item *it = &e->it[i];

		if (it->nested) {
			struct ep_set *in = ep_get(it->fd, 0);

			if (depth < 4 && in != NULL && in != e) {
				pthread_mutex_unlock(&e->lock);
				yes = ep_streams_at(in, depth + 1);
				pthread_mutex_lock(&e->lock);
			}
		} else {
			yes = !it->kernel && stream_of(it->fd) != NULL;
		}
	}
	pthread_mutex_unlock(&e->lock);
	return yes;
}

static int
ep_streams(struct ep_set *e)
{
	return ep_streams_at(e, 0);
}

static int ep_ready_at(struct ep_set *e, struct epoll_event *out, int max, int look, int depth);

/* The stream entries of @e ready now, into @out (up to @max), and each
 * nested set with one ready, as readable. */
static int
ep_ready(struct ep_set *e, struct epoll_event *out, int max)
{
	return ep_ready_at(e, out, max, 0, 0);
}

/* @look: only whether something is ready (1 or 0), changing nothing. */
static int
ep_ready_at(struct ep_set *e, struct epoll_event *out, int max, int look, int depth)
{
	int n = 0;

	pthread_mutex_lock(&e->lock);
	for (unsigned int i = 0; i < e->n && n < max; i++) {
		struct ep_item *it = &e->it[i];
		struct psock *p = stream_of(it->fd);
		int want = (int)(it->events & (EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLPRI |
					       EPOLLRDNORM | EPOLLWRNORM));
		int ev;

		if (it->nested && !it->off && (it->events & EPOLLIN) && depth < 4) {
			struct ep_set *in = ep_get(it->fd, 0);
			int ready;

			if (in == NULL || in == e)
				continue;
			/* The inner set's own lock, never two at once. */
			pthread_mutex_unlock(&e->lock);
			ready = ep_ready_at(in, NULL, 1, 1, depth + 1);
			pthread_mutex_lock(&e->lock);
			if (i >= e->n || e->it[i].fd != it->fd || !ready)
				continue;
			if (look)
				n++;
			else {
				out[n].events = EPOLLIN;
				out[n].data = it->data;
				n++;
				if (it->events & EPOLLONESHOT)
					it->off = 1;
			}
			continue;
		}
		if (p == NULL || it->off || it->gone || it->kernel)
			continue;
		ev = (with_norm(rb2_stream_poll(p->st)) | (zc_waiting(p) ? POLLERR : 0)) &
			(want | POLLERR | POLLHUP);
		if (it->events & EPOLLET) {
			uint32_t in, out;
			uint32_t dry = atomic_load_explicit(&p->rx_dry, memory_order_relaxed);
			uint32_t full = atomic_load_explicit(&p->tx_full, memory_order_relaxed);
			int seen = it->last;

			/* Seen before, and since then nothing arrived or was
			 * freed, and no read or write ran short: no new edge. (The
			 * kernel's EPOLLET fires on each arrival, read or not,
			 * and nginx relies on it.) */
			rb2_stream_edges(p->st, &in, &out);
			if (in != it->in || dry != it->rx_dry)
				seen &= ~(EPOLLIN | EPOLLRDHUP);
			if (out != it->out || full != it->tx_full)
				seen &= ~EPOLLOUT;
			if (look) {
				n += (ev & ~seen) != 0;
				continue;
			}
			it->last = ev;
			it->in = in;
			it->out = out;
			it->rx_dry = dry;
			it->tx_full = full;
			/* A new edge reports every event that stands, as the
			 * kernel's does; none new, nothing. */
			if ((ev & ~seen) == 0)
				ev = 0;
		}
		if (ev == 0)
			continue;
		if (look) {
			n++;
			continue;
		}
		trace('e', it->fd, ev, it->in);
		out[n].events = (uint32_t)ev;
		out[n].data = it->data;
		n++;
		if (it->events & EPOLLONESHOT)
			it->off = 1;
	}
	pthread_mutex_unlock(&e->lock);
	return n;
}

/* About to sleep (@on) in the wait named @wait (rb2_stream_wait_id()): ask
 * every stream entry of @e, and of the sets nested in it, for a bell;
 * awake (!@on): no more bells. @return how many entries have something on
 * its way that comes without a bell (across hosts): then the caller must
 * not block. */
static int
ep_arm(struct ep_set *e, int on, uint64_t wait, int depth)
{
	int soon = 0;

	pthread_mutex_lock(&e->lock);
	for (unsigned int i = 0; i < e->n; i++) {
		struct ep_item *it = &e->it[i];
		struct psock *p = stream_of(it->fd);
		int ev = io_asked((int)it->events);

		if (it->nested && depth < 4) {
			struct ep_set *in = ep_get(it->fd, 0);
			int fd = it->fd;

			if (in == NULL || in == e || (on && it->off))
				continue;
			pthread_mutex_unlock(&e->lock);
			soon += ep_arm(in, on, wait, depth + 1);
			pthread_mutex_lock(&e->lock);
			if (i >= e->n || e->it[i].fd != fd)
				break;               /* changed meanwhile: the next wait arms anew */
			continue;
		}
		if (p == NULL || it->kernel || (on && (it->off || it->gone)))
			continue;
		if (on) {
			ev = rb2_stream_sleep_events(p->st, ev);
			ep_arms_add(&it->arms, ev);
			soon += rb2_stream_want(p->st, ev, wait) != 0;
		} else {
			ev = ep_arms_take(&it->arms);
			/* A nested set's kernel events are its own, unseen
			 * here: its sockets and channels are read. This set's
			 * were reported to the wait (an edge each, which
			 * epoll_spun() told the stream of); one that came
			 * after stays for a later wait to report. */
			if (depth > 0) {
				rb2_stream_heard(p->st, RB2_STREAM_HEARD_SOCK);
				rb2_stream_disarm(p->st, ev);
			} else {
				rb2_stream_disarm_seen(p->st, ev);
			}
		}
	}
	pthread_mutex_unlock(&e->lock);
	return soon;
}

static void
ep_disarm(struct ep_set *e)
{
	(void)ep_arm(e, 0, 0, 0);
}

static int epoll_spun(int epfd, struct epoll_event *evs, int max, int timeout_ms,
		      const sigset_t *mask, struct spin *sp);

/* A sleeper leaves @e's kernel wait. The last gives back the arms the
 * set's adds took for its sleepers (ep_poke()): a later sleep arms for
 * itself. */
static void
ep_sleep_end(struct ep_set *e)
{
	if (atomic_fetch_sub(&e->sleepers, 1) != 1)
		return;
	pthread_mutex_lock(&e->lock);
	for (unsigned int i = 0; i < e->n; i++) {
		struct ep_item *it = &e->it[i];
		struct psock *p;
		int ev;

		if (it->set_arms.in == 0 && it->set_arms.out == 0 && it->set_arms.held == 0)
			continue;
		p = stream_of(it->fd);
		while ((ev = ep_arms_take(&it->set_arms)) != 0)
			if (p != NULL && !it->kernel)
				rb2_stream_disarm_seen(p->st, ev);
	}
	pthread_mutex_unlock(&e->lock);
}

/* The kernel's wait returned evs[@n..@n+@k): a stream's socket or wake fd
 * readable is what its disarm reads (or, for a wait that armed nothing,
 * @slept 0, read at once: the kernel reports an edge once, and a FIN seen
 * here and left unread would be seen by no later sleep). */
static void
ep_bells_heard(struct epoll_event *evs, int n, int k, int slept)
{
	for (int i = n; i < n + k; i++) {
		uint64_t tag = evs[i].data.u64 & ~0xffffffffull;
		struct psock *p;

		if (tag != EP_TAG && tag != EP_TAG_WAKE && tag != EP_TAG_ROOM)
			continue;
		p = stream_of((int)(uint32_t)evs[i].data.u64);
		if (p == NULL)
			continue;
		rb2_stream_heard(p->st, tag == EP_TAG ? RB2_STREAM_HEARD_SOCK :
				 tag == EP_TAG_WAKE ? RB2_STREAM_HEARD_WAKE | RB2_STREAM_HEARD_RX_EDGE :
				 RB2_STREAM_HEARD_TX_EDGE);
		if (!slept)
			rb2_stream_disarm(p->st, 0);
	}
}

/* Out of evs[@n..@n+@k): every bell and poke of ours (their streams are
 * looked at next round), and what duplicates one of the first @n (a nested
 * set's kernel event already reported). @return what is left of @k. */
static int
ep_drop_bells(struct epoll_event *evs, int n, int k)
{
	for (int i = n; i < n + k;) {
		uint64_t tag = evs[i].data.u64 & ~0xffffffffull;
		int dup = 0;

		for (int j = 0; j < n && !dup; j++)
			dup = evs[j].data.u64 == evs[i].data.u64;
		if (tag == EP_TAG || tag == EP_TAG_WAKE || tag == EP_TAG_ROOM ||
		    tag == EP_TAG_POKE || dup) {
			evs[i] = evs[n + k - 1];
			k--;
		} else {
			i++;
		}
	}
	return k;
}

static int
epoll_impl(int epfd, struct epoll_event *evs, int max, int timeout_ms, const sigset_t *mask)
{
	struct spin sp;
	int r;

	held_flush_all();
	spin_begin(&sp);
	r = epoll_spun(epfd, evs, max, timeout_ms, mask, &sp);
	spin_done(&sp);
	return r;
}

static int
epoll_spun(int epfd, struct epoll_event *evs, int max, int timeout_ms, const sigset_t *mask,
	   struct spin *sp)
{
	/* A set of a process with TCP sockets of ours is known, even while
	 * it holds kernel fds alone: a stream added while this wait sleeps
	 * must find it counted (ep_poke()). */
	struct ep_set *e = ep_get(epfd, atomic_load_explicit(&used, memory_order_relaxed));
	uint64_t t0 = now_ns();
	unsigned int spins = 0;

	if (e == NULL)
		return mask ? REAL(epoll_pwait)(epfd, evs, max, timeout_ms, mask) :
			REAL(epoll_wait)(epfd, evs, max, timeout_ms);
	if (!ep_streams(e)) {
		int k;

		/* Counted before the last look: an add after it arms for it,
		 * or pokes. */
		atomic_fetch_add(&e->sleepers, 1);
		if (ep_streams(e)) {
			ep_sleep_end(e);
		} else {
			k = mask ? REAL(epoll_pwait)(epfd, evs, max, timeout_ms, mask) :
				REAL(epoll_wait)(epfd, evs, max, timeout_ms);
			/* A stream added meanwhile: its bells, which are not
			 * the program's events. */
			if (k > 0)
				ep_bells_heard(evs, 0, k, 0);
			ep_sleep_end(e);
			if (k <= 0 || (k = ep_drop_bells(evs, 0, k)) > 0 || timeout_ms == 0)
				return k;
			/* Woken by a stream added meanwhile: the loop looks,
			 * and waits the rest. */
		}
	}
	for (;;) {
		int n = ep_ready(e, evs, max), k, left, sleep = 0;
		uint64_t now = now_ns();

		left = timeout_ms < 0 ? -1 : timeout_ms - (int)((now - t0) / 1000000ull);
		if (left < 0 && timeout_ms >= 0)
			left = 0;
		if (n == 0)
			sp->empty = 1;
		if (n == 0 && left != 0 && now - t0 >= sp->ns) {
			spin_end(sp, 1);
			/* Sleep: ask every stream entry for a bell, then look once
			 * more (an edge-triggered entry may hold data already
			 * reported: that is no reason not to sleep). Counted as a
			 * sleeper first: an entry added after the arm is armed by
			 * its add, or pokes (ep_poke()). */
			atomic_fetch_add(&e->sleepers, 1);
			sleep = ep_arm(e, 1, rb2_stream_wait_id(), 0) > 0 ? -1 : 1;
			n = ep_ready(e, evs, max);
			if (n > 0)
				sleep = -1;
		}
		if (n == max) {
			if (sleep != 0) {
				ep_disarm(e);
				ep_sleep_end(e);
			}
			return n;
		}
		/* The kernel's fds cost a system call to look at: with streams
		 * ready, or while spinning, only every 8th time (a kernel fd
		 * waits at most 8 returns; epoll may return part of what is
		 * ready). A wait that may not block looks every time. */
		if (sleep == 0 && left != 0) {
			if (n > 0 && (atomic_fetch_add_explicit(&e->fair, 1,
								memory_order_relaxed) & 7) != 7)
				return n;
			if (n == 0 && (++spins & 7) != 0)
				continue;
		}
		k = mask ? REAL(epoll_pwait)(epfd, evs + n, max - n, sleep > 0 ? left : 0, mask) :
			REAL(epoll_wait)(epfd, evs + n, max - n, sleep > 0 ? left : 0);
		if (k > 0)
			ep_bells_heard(evs, n, k, sleep != 0);
		if (sleep != 0) {
			ep_disarm(e);
			ep_sleep_end(e);
		}
		if (k < 0)
			return n > 0 ? n : k;
		n += ep_drop_bells(evs, n, k);
		if (n > 0 || left == 0)
			return n;
	}
}

EXPORT int
epoll_wait(int epfd, struct epoll_event *evs, int max, int timeout_ms)
{
	return epoll_impl(epfd, evs, max, timeout_ms, NULL);
}

EXPORT int
epoll_pwait(int epfd, struct epoll_event *evs, int max, int timeout_ms, const sigset_t *mask)
{
	return epoll_impl(epfd, evs, max, timeout_ms, mask);
}

/* epoll_pwait2 (glibc 2.35; systemd's sd-event waits so): its timeout is a
 * timespec. Unwrapped, it waited on the kernel's entries of a stream, its
 * idle socket and its bell, and missed its data. In a process with no TCP
 * socket of ours it is the kernel's, to the nanosecond; else the wait is
 * epoll_pwait's, its timeout rounded up to the millisecond, as
 * epoll_wait's is. */
EXPORT int
epoll_pwait2(int epfd, struct epoll_event *evs, int max, const struct timespec *timeout,
	     const sigset_t *mask)
{
	long long ms = -1;

	if (!atomic_load_explicit(&used, memory_order_relaxed))
		return (int)REAL(syscall)(SYS_epoll_pwait2, epfd, evs, max, timeout, mask,
					  mask != NULL ? _NSIG / 8 : 0);
	if (timeout != NULL) {
		if (timeout->tv_sec < 0 || timeout->tv_nsec < 0 || timeout->tv_nsec >= 1000000000L)
			return (int)fail(EINVAL);
		ms = (long long)timeout->tv_sec * 1000 + (timeout->tv_nsec + 999999) / 1000000;
		if (ms > INT_MAX)
			ms = INT_MAX;
	}
	return epoll_impl(epfd, evs, max, (int)ms, mask);
}

/* ---- fcntl, ioctl, dup, socket options ------------------------------------------- */

static void
share(int oldfd, int newfd)
{
	struct psock *p = get(oldfd);

	if (newfd < 0 || p == NULL || (unsigned int)newfd >= tab_size)
		return;
	/* A vfork child's copy (a spawn's stdin, say) is for the program it
	 * execs, which could not read the stream: it gets its stand-in now,
	 * as before_exec() gives every stream the new program inherits, and
	 * the table, the parent's, stays as it is. */
	if (in_vfork_child()) {
		if (p->st != NULL || p->exec_stood_in)
			stand_in(newfd, 0);
		return;
	}
	if (get(newfd) != NULL)
		untrack(newfd);
	atomic_fetch_add(&p->refs, 1);
	atomic_store(&tab[newfd], p);
}

EXPORT int
fcntl(int fd, int cmd, ...)
{
	va_list ap;
	long arg;
	int ret;

	va_start(ap, cmd);
	arg = va_arg(ap, long);
	va_end(ap);
	ret = REAL(fcntl)(fd, cmd, arg);
	if (ret >= 0 && cmd == F_SETFL && get(fd) != NULL)
		get(fd)->nonblock = (arg & O_NONBLOCK) != 0;
	if (ret >= 0 && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC))
		share(fd, ret);
	return ret;
}

EXPORT int
fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	long arg;

	va_start(ap, cmd);
	arg = va_arg(ap, long);
	va_end(ap);
	return fcntl(fd, cmd, arg);
}

EXPORT int
ioctl(int fd, unsigned long req, ...)
{
	struct psock *p = get(fd);
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (p != NULL && req == FIONBIO && arg != NULL)
		p->nonblock = *(int *)arg != 0;
	if (req == FIONREAD && arg != NULL && pending(fd)) {
		*(int *)arg = 0;            /* still connecting: nothing yet */
		return 0;
	}
	if (p != NULL && p->st != NULL && req == FIONREAD && arg != NULL) {
		pthread_mutex_lock(&p->rx_lock);
		*(int *)arg = (int)rb2_stream_nread(p->st);
		pthread_mutex_unlock(&p->rx_lock);
		trace('n', fd, *(int *)arg, 0);
		return 0;
	}
	return REAL(ioctl)(fd, req, arg);
}

EXPORT int
dup(int fd)
{
	int n = REAL(dup)(fd);

	share(fd, n);
	return n;
}

EXPORT int
dup2(int fd, int nfd)
{
	int n;

	if (fd != nfd && get(nfd) != NULL && !in_vfork_child()) {
		pend_end(nfd, PEND_CLOSE);
		untrack(nfd);
	}
	n = REAL(dup2)(fd, nfd);
	if (fd != nfd)
		share(fd, n);
	return n;
}

EXPORT int
dup3(int fd, int nfd, int flags)
{
	int n;

	if (get(nfd) != NULL && !in_vfork_child()) {
		pend_end(nfd, PEND_CLOSE);
		untrack(nfd);
	}
	n = REAL(dup3)(fd, nfd, flags);
	share(fd, n);
	return n;
}

EXPORT int
setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	struct psock *p = get(fd);
	int ret;

	/* Timeouts a stream honours itself; everything goes to the kernel
	 * socket too, so getsockopt reads it back. */
	if (p != NULL && level == SOL_SOCKET && (name == SO_RCVTIMEO || name == SO_SNDTIMEO) &&
	    val != NULL && len >= sizeof(struct timeval)) {
		const struct timeval *tv = val;
		int ms = (int)(tv->tv_sec * 1000 + tv->tv_usec / 1000);

		if (ms == 0 && (tv->tv_sec != 0 || tv->tv_usec != 0))
			ms = 1;
		if (name == SO_RCVTIMEO)
			p->rcvtimeo_ms = ms;
		else
			p->sndtimeo_ms = ms;
	}
	if (p != NULL && p->st != NULL && level == IPPROTO_TCP && name == TCP_REPAIR)
		return (int)refuse_call(fd, "TCP_REPAIR");
	ret = REAL(setsockopt)(fd, level, name, val, len);
	if (ret == 0 && p != NULL && p->reg_fd >= 0 && level == IPPROTO_TCP &&
	    name == TCP_DEFER_ACCEPT)
		keep_defer(fd, p);
	if (ret == 0 && p != NULL && p->st != NULL && val != NULL && len >= sizeof(int)) {
		if (level == IPPROTO_TCP && name == TCP_CORK)
			rb2_stream_corked(p->st, *(const int *)val);
		/* Across hosts, the kernel took the program's keepalive: the
		 * stream's own goes back, the program's is kept to read. */
		(void)rb2_stream_keep_opt(p->st, level, name, *(const int *)val);
	}
	return ret;
}

/* The kernel's answer, but for what a stream holds itself: the error that
 * ended it (SO_ERROR: across hosts, a peer host that stopped answering),
 * and the program's own values of the options that tell it
 * (rb2_stream_keep_opt()). */
EXPORT int
getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	struct psock *p = get(fd);
	int v, err;

	if (p != NULL && p->defer_kept && level == IPPROTO_TCP && name == TCP_DEFER_ACCEPT &&
	    val != NULL && len != NULL && *len >= sizeof(int)) {
		*(int *)val = p->defer_val;
		*len = sizeof(int);
		return 0;
	}
	if (p != NULL && p->st != NULL && val != NULL && len != NULL && *len >= sizeof(int)) {
		if (level == SOL_SOCKET && name == SO_ERROR &&
		    (err = rb2_stream_take_error(p->st)) != 0) {
			*(int *)val = err;
			*len = sizeof(int);
			return 0;
		}
		if (rb2_stream_opt(p->st, level, name, &v)) {
			*(int *)val = v;
			*len = sizeof(int);
			return 0;
		}
	}
	return REAL(getsockopt)(fd, level, name, val, len);
}

/* ---- exec ----------------------------------------------------------------------------- */

static void print_stats(void);

/* In a vfork child: whether @fd still holds the file its parent has on
 * that number, or the child put another there (a spawn's dup2 onto its
 * stdout). Where the kernel cannot tell (no kcmp), it is taken to. */
static int
parent_file_at(int fd)
{
	long r = REAL(syscall)(SYS_kcmp, (long)getpid(), (long)image_pid, (long)KCMP_FILE,
			       (long)fd, (long)fd);

	return r != 1 && r != 2;
}

/*
 * The line that says a new program got connections it cannot use, so that
 * a server which hands each connection to a program it execs (inetd-style:
 * git daemon's per-connection "git daemon --serve") is told why its
 * clients see the end, rather than failing silently. Built with snprintf
 * and written with write(2): a vfork child runs in its parent's memory,
 * where stdio's locks may be held.
 */
struct exec_notice {
	char line[640];
	size_t n;
	unsigned int fds;
};

static void
exec_notice_add(struct exec_notice *x, int fd, const char *how)
{
	int k;

	if (x->n >= sizeof(x->line) - 80)
		return;
	k = snprintf(x->line + x->n, sizeof(x->line) - x->n, "%s%d (%s)", x->fds ? ", " : "",
		     fd, how);
	if (k > 0)
		x->n += (size_t)k;
	x->fds++;
}

/* @who: "exec" or "spawned". */
static void
exec_notice_print(struct exec_notice *x, const char *who)
{
	char out[1024];
	int k;

	if (x->fds == 0)
		return;
	x->line[x->n] = '\0';
	k = snprintf(out, sizeof(out), "rb2-run: pid %d: %s: fd%s %s name%s over rb2, which a "
		     "new program cannot take over: in it %s the end, and writes fail with EPIPE. "
		     "A server that hands each connection to a program it execs (inetd-style, such "
		     "as git daemon) must run without rb2-run\n",
		     (int)getpid(), who, x->fds > 1 ? "s" : "", x->line,
		     x->fds > 1 ? " connections" : "s a connection",
		     x->fds > 1 ? "they read" : "it reads");
	if (k > 0)
		(void)REAL(write)(2, out, RTE_MIN((size_t)k, sizeof(out) - 1));
}

/*
 * A new program knows nothing of a stream: its fd would be the idle kernel
 * socket, and the bells on it would read as data. So before an exec, every
 * rb2 connection without FD_CLOEXEC ends: the peer reads what was sent and
 * then the end, and the kernel socket is shut down both ways, so that the
 * new program reads 0 and its writes fail with EPIPE. (If the exec fails,
 * those connections stay ended.) A connection another process still holds
 * (a fork's parent or child on one host; in a vfork child, which runs in
 * the parent's memory, every one) goes on there: the new program gets a
 * stand-in that reads 0 and fails writes with EPIPE, and a vfork parent's
 * memory is not touched. A fork child's copy of its parent's connection to
 * another host has had its stand-in since the fork (away_begin()), which
 * the new program keeps; the child's hold goes back here. glibc's
 * exec functions call each other inside libc, so each is
 * wrapped; posix_spawn() and system() call none of them (spawned_stand_ins()).
 */
static void
before_exec(void)
{
	/* Any process our fork handlers did not see (a vfork child, a child
	 * of clone()) leaves the streams to the one that opened them. */
	int shared_vm = getpid() != image_pid;
	struct exec_notice told = { .n = 0, .fds = 0 };

	pend_drain_kept(!shared_vm);
	for (unsigned int fd = 0; tab != NULL && fd < tab_size; fd++) {
		struct psock *p = atomic_load(&tab[fd]);
		int fl, shared;

		/* The new program may hold it (a vfork child's mark is its
		 * parent's). */
		if (p != NULL && p->reg_fd >= 0)
			p->handed_on = 1;

		/* A parent's stream put aside here (its fds have stand-ins
		 * already): the hold goes back, CLOEXEC or not. */
		if (p != NULL && !shared_vm)
			away_end(p);
		if (p == NULL || (p->st == NULL && !p->exec_stood_in))
			continue;
		fl = REAL(fcntl)((int)fd, F_GETFD);
		if (fl < 0 || (fl & FD_CLOEXEC) || (shared_vm && !parent_file_at((int)fd)))
			continue;
		/* p->exec_stood_in: a dup of an fd given a stand-in below. */
		if (shared_vm || p->exec_stood_in || (p->inherited && p->rslot >= 0)) {
			stand_in((int)fd, 0);
			exec_notice_add(&told, (int)fd, "it goes on in the process that shares it");
			continue;
		}
		pthread_mutex_lock(&p->tx_lock);
		pthread_mutex_lock(&p->rx_lock);
		shared = stream_end(p);
		pthread_mutex_unlock(&p->rx_lock);
		pthread_mutex_unlock(&p->tx_lock);
		if (shared) {
			/* It goes on in the process that shares it: a shutdown
			 * of the kernel socket would end it there too. */
			p->exec_stood_in = 1;
			stand_in((int)fd, 0);
			exec_notice_add(&told, (int)fd, "it goes on in the process that shares it");
			continue;
		}
		REAL(shutdown)((int)fd, SHUT_RDWR);
		exec_notice_add(&told, (int)fd, "ended: the peer read what was sent, then the end");
		pthread_mutex_lock(&stats.lock);
		stats.exec_ended++;
		pthread_mutex_unlock(&stats.lock);
	}
	exec_notice_print(&told, "exec");
	if (!shared_vm)
		print_stats();
}

EXPORT int
execve(const char *path, char *const argv[], char *const envp[])
{
	before_exec();
	return REAL(execve)(path, argv, envp);
}

EXPORT int
execv(const char *path, char *const argv[])
{
	before_exec();
	return REAL(execve)(path, argv, environ);
}

EXPORT int
execvpe(const char *file, char *const argv[], char *const envp[])
{
	before_exec();
	return REAL(execvpe)(file, argv, envp);
}

EXPORT int
execvp(const char *file, char *const argv[])
{
	before_exec();
	return REAL(execvpe)(file, argv, environ);
}

EXPORT int
fexecve(int fd, char *const argv[], char *const envp[])
{
	before_exec();
	return REAL(fexecve)(fd, argv, envp);
}

/* The list forms: their arguments into a vector (@envp_too: execle). */
static int
exec_list(int search, const char *file, const char *arg0, va_list ap, int envp_too)
{
	const char *argv[1024];
	char *const *envp = environ;
	int n = 0;

	argv[n++] = arg0;
	while (argv[n - 1] != NULL && n < 1024)
		argv[n++] = va_arg(ap, const char *);
	if (argv[n - 1] != NULL)
		return (int)fail(E2BIG);
	if (envp_too)
		envp = va_arg(ap, char *const *);
	before_exec();
	return search ? REAL(execvpe)(file, (char *const *)argv, envp) :
		REAL(execve)(file, (char *const *)argv, envp);
}

EXPORT int
execl(const char *path, const char *arg, ...)
{
	va_list ap;
	int r;

	va_start(ap, arg);
	r = exec_list(0, path, arg, ap, 0);
	va_end(ap);
	return r;
}

EXPORT int
execlp(const char *file, const char *arg, ...)
{
	va_list ap;
	int r;

	va_start(ap, arg);
	r = exec_list(1, file, arg, ap, 0);
	va_end(ap);
	return r;
}

EXPORT int
execle(const char *path, const char *arg, ...)
{
	va_list ap;
	int r;

	va_start(ap, arg);
	r = exec_list(0, path, arg, ap, 1);
	va_end(ap);
	return r;
}

/*
 * posix_spawn() and system() make their child with clone(CLONE_VM |
 * CLONE_VFORK) and exec inside libc, past every wrapper here, and the
 * parent's connections go on: as for an exec in a vfork child, the new
 * program must get a stand-in on each fd that names one, not the idle
 * kernel socket (whose reads would wait for good, and whose writes would
 * reset the parent's connection). Nothing can run in that child, so the
 * new program's own copy of this library does it, first thing
 * (spawned_stand_ins()): the spawn adds to its environment the inodes of
 * the kernel sockets under this process's rb2 connections that it may
 * inherit. Inodes, not fd numbers: the spawn's file actions may dup one
 * anywhere (an inetd-style child on stdin and stdout). A new program
 * without this library (a set-user-ID one) gets the kernel socket.
 */
#define STAND_IN_VAR "RB2_RUN_STAND_IN"
#define STAND_IN_ENV STAND_IN_VAR "="
#define STAND_IN_MAX 256                 /* inodes told: the rest keep their sockets */

/* "RB2_RUN_STAND_IN=ino,ino,..." for this process's connections without
 * FD_CLOEXEC, in @buf, or NULL if there are none. With @dups (a spawn with
 * file actions), those with FD_CLOEXEC too: an action's dup2 clears the flag
 * on its copy (Python's sockets are all close-on-exec, and an inetd-style
 * spawn dups one onto stdin and stdout), and an inode no fd of the new
 * program names costs it nothing. */
static char *
stand_in_entry(char *buf, size_t size, int dups)
{
	size_t n = strlen(STAND_IN_ENV), first = n;
	unsigned int told = 0;

	/* Each connection it may keep a stream, or not. */
	if (dups)
		pend_drain();
	else
		pend_drain_kept(0);
	memcpy(buf, STAND_IN_ENV, n + 1);
	for (unsigned int fd = 0; used && tab != NULL && fd < tab_size; fd++) {
		struct psock *p = atomic_load(&tab[fd]);
		struct stat st;
		int fl;

		if (p == NULL || p->st == NULL || p->exec_stood_in)
			continue;
		fl = REAL(fcntl)((int)fd, F_GETFD);
		if (fl < 0 || ((fl & FD_CLOEXEC) && !dups) || fstat((int)fd, &st) != 0)
			continue;
		if (told++ == STAND_IN_MAX || n + 22 > size)
			break;              /* the rest keep their kernel sockets */
		n += (size_t)snprintf(buf + n, size - n, "%s%lu", n > first ? "," : "",
				      (unsigned long)st.st_ino);
	}
	return n > first ? buf : NULL;
}

/* @envp with our entry put in (an old one left out), in @out; or @envp. */
static char *const *
spawn_env(char *const envp[], char *entry, char ***out)
{
	size_t k = 0, n = 0;

	*out = NULL;
	if (entry == NULL || envp == NULL)
		return envp;
	while (envp[n] != NULL)
		n++;
	*out = malloc((n + 2) * sizeof(char *));
	if (*out == NULL)
		return envp;
	for (size_t i = 0; i < n; i++)
		if (strncmp(envp[i], STAND_IN_ENV, strlen(STAND_IN_ENV)) != 0)
			(*out)[k++] = envp[i];
	(*out)[k++] = entry;
	(*out)[k] = NULL;
	return *out;
}

static int
spawn(int search, pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
      const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	char buf[sizeof(STAND_IN_ENV) + STAND_IN_MAX * 21], **mine;
	char *const *env;
	int ret;

	listeners_handed_on(-1);
	env = spawn_env(envp, stand_in_entry(buf, sizeof(buf), fa != NULL), &mine);
	ret = search ? REAL(posix_spawnp)(pid, path, fa, attr, argv, env) :
		REAL(posix_spawn)(pid, path, fa, attr, argv, env);

	free(mine);
	return ret;
}

EXPORT int
posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
	    const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	return spawn(0, pid, path, fa, attr, argv, envp);
}

EXPORT int
posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
	     const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	return spawn(1, pid, file, fa, attr, argv, envp);
}

/*
 * system() as POSIX gives it, through spawn() so that its shell learns of
 * our connections; libc's own is used when there are none to tell. SIGINT
 * and SIGQUIT are ignored and SIGCHLD blocked while the command runs, and
 * the child gets them back; threads that run system() at once share the
 * ignoring (the first sets it, the last restores it), as glibc's does.
 */
static pthread_mutex_t system_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned int system_users;
static struct sigaction system_int, system_quit;

EXPORT int
system(const char *cmd)
{
	struct sigaction ign = { .sa_handler = SIG_IGN };
	char buf[sizeof(STAND_IN_ENV) + STAND_IN_MAX * 21], **mine;
	char *argv[] = { "sh", "-c", (char *)cmd, NULL };
	char *entry = cmd != NULL ? stand_in_entry(buf, sizeof(buf), 0) : NULL;
	sigset_t chld, omask, dflt;
	posix_spawnattr_t a;
	pid_t pid;
	int status = -1, ret;

	listeners_handed_on(-1);
	if (entry == NULL)
		return REAL(system)(cmd);
	sigemptyset(&ign.sa_mask);
	pthread_mutex_lock(&system_lock);
	if (system_users++ == 0) {
		sigaction(SIGINT, &ign, &system_int);
		sigaction(SIGQUIT, &ign, &system_quit);
	}
	pthread_mutex_unlock(&system_lock);
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &omask);
	sigemptyset(&dflt);
	if (system_int.sa_handler != SIG_IGN)
		sigaddset(&dflt, SIGINT);
	if (system_quit.sa_handler != SIG_IGN)
		sigaddset(&dflt, SIGQUIT);
	posix_spawnattr_init(&a);
	posix_spawnattr_setsigdefault(&a, &dflt);
	posix_spawnattr_setsigmask(&a, &omask);
	posix_spawnattr_setflags(&a, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
	ret = REAL(posix_spawn)(&pid, "/bin/sh", NULL, &a, argv,
				spawn_env(environ, entry, &mine));
	posix_spawnattr_destroy(&a);
	free(mine);
	if (ret == 0) {
		while (waitpid(pid, &status, 0) < 0)
			if (errno != EINTR) {
				status = -1;
				break;
			}
	} else {
		status = W_EXITCODE(127, 0);    /* as the shell's "not found" */
	}
	pthread_mutex_lock(&system_lock);
	if (--system_users == 0) {
		sigaction(SIGINT, &system_int, NULL);
		sigaction(SIGQUIT, &system_quit, NULL);
	}
	pthread_mutex_unlock(&system_lock);
	sigprocmask(SIG_SETMASK, &omask, NULL);
	if (ret != 0)
		errno = ret;
	return status;
}

/* A spawned program's first step: stand-ins on the fds its spawner named
 * (posix_spawn() above), and the entry out of its environment, so that
 * what it starts in turn is not told of sockets it may not have. */
static void
spawned_stand_ins(void)
{
	const char *v = getenv(STAND_IN_VAR);
	struct rlimit rl;
	unsigned long ino[STAND_IN_MAX];
	unsigned int n = 0, limit;
	struct exec_notice told = { .n = 0, .fds = 0 };

	if (v == NULL)
		return;
	while (*v != '\0' && n < RTE_DIM(ino)) {
		char *end;

		ino[n++] = strtoul(v, &end, 10);
		v = *end == ',' ? end + 1 : end + strlen(end);
	}
	limit = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 65536 ? (unsigned int)rl.rlim_cur : 65536;
	for (unsigned int fd = 0; fd < limit; fd++) {
		struct stat st;

		if (fstat((int)fd, &st) != 0 || !S_ISSOCK(st.st_mode))
			continue;
		for (unsigned int i = 0; i < n; i++)
			if (ino[i] == (unsigned long)st.st_ino) {
				stand_in((int)fd, 0);
				exec_notice_add(&told, (int)fd,
						"it goes on in the program that spawned this one");
				break;
			}
	}
	exec_notice_print(&told, "spawned");
	unsetenv(STAND_IN_VAR);
}

/* ---- Start, fork, exit ------------------------------------------------------------ */

static void
before_fork(void)
{
	pend_drain();
	this_fork = atomic_fetch_add(&forks_made, 1) + 1;
	for (unsigned int fd = 0; tab != NULL && fd < tab_size; fd++) {
		struct psock *p = atomic_load(&tab[fd]);

		if (p != NULL && p->reg_fd >= 0)
			p->handed_on = 1;        /* the child holds it too */

		/* Once a stream, however many fds name it (dup). */
		if (p != NULL && p->st != NULL && !p->uncounted &&
		    p->held_fork != this_fork) {
			rb2_stream_fork_hold(p->st);
			p->held_fork = this_fork;
		}
	}
	ahead_prefork();
}

/* The calling thread's fork returned @pid in the parent: a child takes the
 * holds its fork took, by name, before the program can close its own copy;
 * a fork that failed (@pid < 0) gives them back. */
static void
fork_made(pid_t pid)
{
	for (unsigned int fd = 0; tab != NULL && fd < tab_size; fd++) {
		struct psock *p = atomic_load(&tab[fd]);

		if (p == NULL || p->st == NULL || p->held_fork != this_fork)
			continue;
		if (pid > 0) {
			rb2_stream_fork_child(p->st, pid);
		} else {
			p->held_fork = 0;
			rb2_stream_fork_unhold(p->st);
		}
	}
}

EXPORT pid_t
fork(void)
{
	pid_t pid;

	pid = REAL(fork)();
	if (pid != 0) {
		int e = errno;

		fork_made(pid);
		errno = e;
	}
	return pid;
}

static void
child_after_fork(void)
{
	/* The child holds its copy of each stream as the parent holds its
	 * own (before_fork()). On one host whichever lets it go last ends
	 * it; across hosts only the parent can post on the stream's queues,
	 * so the child's copy is put aside (away_begin()) and the parent
	 * ends the stream once the child let its copy go. */
	image_pid = getpid();
	/* Calls under way in the parent's other threads are not the child's. */
	for (unsigned int fd = 0; tab != NULL && fd < tab_size; fd++) {
		struct psock *p = atomic_load(&tab[fd]);

		if (p != NULL) {
			pthread_mutex_init(&p->life_lock, NULL);
			pthread_mutex_init(&p->zc_lock, NULL);
			p->users = 0;
		}
	}
	/* The parent's thread sends what the parent held; the list's lock
	 * may have been taken at the fork. */
	pthread_mutex_init(&held_lock, NULL);
	pthread_cond_init(&held_cond, NULL);
	held_head = NULL;
	atomic_store(&held_n, 0);
	/* The parent's closes in the background are its threads': the child
	 * drops its copies of their sockets, which would hold their FINs. */
	pthread_mutex_init(&closer_lock, NULL);
	closer_init();
	for (struct closer *c = closers; c != NULL; c = c->next)
		REAL(close)(c->fd);
	closers = NULL;
	closer_pid = 0;
	/* The ends made ahead hold the parent's queues: the child's first
	 * stream to another host starts a maker of its own. */
	pthread_mutex_init(&ahead.lock, NULL);
	pthread_cond_init(&ahead.taken, NULL);
	pthread_cond_init(&ahead.idle, NULL);
	ahead.making = 0;
	ahead.n = 0;
	ahead.pid = 0;
	ahead.asked = ahead.used = 0;
	/* Its stats line counts what it does itself. */
	stats.offloaded = stats.remote = stats.bytes_in = stats.bytes_out = stats.failed = 0;
	stats.plain_other = stats.exec_ended = stats.foreign_resets = stats.foreign_bytes = 0;
	stats.closes_behind = 0;
	stats.wrs = stats.doorbells = stats.held = stats.held_flushes = 0;
	stats.sleeps = stats.wake_requests = stats.wake_reads = stats.held_sleeps = 0;
	stats.su_service = stats.su_kernel = stats.su_arena = stats.su_open = 0;
	stats.su_connect = stats.su_prefault = 0;
	memset(stats.plain, 0, sizeof(stats.plain));
	for (unsigned int fd = 0; tab != NULL && fd < tab_size; fd++) {
		struct psock *p = atomic_load(&tab[fd]);

		if (p != NULL)
			p->held_listed = 0;
		/* Put aside in the parent, itself a fork child: nothing held. */
		if (p != NULL && p->away_st != NULL && p->away_fork != this_fork)
			p->uncounted = 1;
		if (p != NULL && p->st != NULL) {
			struct rb2_stream_stats st;

			p->inherited = 1;
			/* Made while the fork took its holds: not counted. */
			p->uncounted = p->uncounted || p->held_fork != this_fork;
			/* The child names itself too: the parent's fork()
			 * wrapper does not run for a fork made inside libc
			 * (daemon()), which still runs these handlers. */
			if (p->held_fork == this_fork)
				rb2_stream_fork_child(p->st, image_pid);
			rb2_stream_stats(p->st, &st);
			p->base_in = st.bytes_in;
			p->base_out = st.bytes_out;
			if (p->rslot >= 0)
				away_begin(p);
		}
		/* Each fd that names it, dups too. */
		if (p != NULL && p->away_st != NULL && p->away_fork == this_fork)
			stand_in((int)fd, 1);
	}
}

/* RB2_RUN_DEBUG=1: signal SIGRTMIN+3 (nginx takes SIGUSR2) prints every stream's state (not
 * async-signal-safe: a diagnosis aid for a process that is stuck). */
static void
dump_streams(int sig)
{
	(void)sig;
	for (unsigned int fd = 0; tab != NULL && fd < tab_size; fd++) {
		struct psock *p = atomic_load(&tab[fd]);

		if (p != NULL && p->st != NULL)
			rb2_stream_dump(p->st, (int)fd, stderr);
	}
	for (unsigned int i = 0, at = trace_pos; i < 512 && i < at; i++) {
		unsigned int k = (at - 1 - i) % 512;

		fprintf(stderr, "rb2 trace -%u: %c fd %d ret %ld x %u\n", i, trace_ring[k].op,
			trace_ring[k].fd, trace_ring[k].ret, trace_ring[k].x);
		if (i == 40)
			break;
	}
	for (struct ep_set *e = ep_all; e != NULL; e = e->next)
		for (unsigned int i = 0; i < e->n; i++)
			fprintf(stderr, "rb2 epoll %d: fd %d%s events 0x%x last 0x%x in %u out %u%s%s\n",
				e->epfd, e->it[i].fd, e->it[i].kernel ? " (kernel)" : "",
				e->it[i].events, e->it[i].last, e->it[i].in, e->it[i].out,
				e->it[i].off ? " one-shot fired" : "",
				e->it[i].gone ? " deleted (the bell's entry kept)" : "");
}

static void
print_stats(void)
{
	static int printed;
	char line[2048];
	int n;

	/* A process that never touched TCP (a shell, a helper) has nothing to say. */
	if (!active || !used || !want_stats || printed)
		return;
	printed = 1;
	/* Streams still open at exit: their bytes count too. */
	for (unsigned int fd = 0; tab != NULL && fd < tab_size; fd++) {
		struct psock *p = atomic_load(&tab[fd]);

		if (p != NULL && p->st != NULL)
			stats_add_stream(p);
	}
	n = snprintf(line, sizeof(line), "rb2-run: pid %d: %" PRIu64 " connections over rb2 (%"
		     PRIu64 " bytes in, %" PRIu64 " out), %" PRIu64 " failed", (int)getpid(),
		     stats.offloaded, stats.bytes_in, stats.bytes_out, stats.failed);
	if (stats.remote) {
		double k = 1e6 * (double)stats.remote;

		n += snprintf(line + n, sizeof(line) - (size_t)n, "; %" PRIu64 " of them to other "
			      "hosts, over verbs (%" PRIu64 " WRs in %" PRIu64 " doorbells; set-up "
			      "per stream, mean ms: service %.2f, kernel connect %.2f, arena %.2f, "
			      "queues %.2f, connecting them %.2f, prefault %.2f)",
			      stats.remote, stats.wrs, stats.doorbells, stats.su_service / k,
			      stats.su_kernel / k, stats.su_arena / k, stats.su_open / k,
			      stats.su_connect / k, stats.su_prefault / k);
		n += snprintf(line + n, sizeof(line) - (size_t)n, "; %" PRIu64 " of their ends "
			      "made ahead", ahead.used);
		n += snprintf(line + n, sizeof(line) - (size_t)n, "; %" PRIu64 " writes batched "
			      "(%" PRIu64 " batches sent by a flush); %" PRIu64 " sleeps asked the "
			      "device for %" PRIu64 " wake-ups and read its channels %" PRIu64
			      " times, %" PRIu64 " of them with a write held for the reader's "
			      "credits", stats.held, stats.held_flushes, stats.sleeps,
			      stats.wake_requests, stats.wake_reads, stats.held_sleeps);
	}
	for (unsigned int i = 0; i < REASONS && stats.plain[i].n; i++)
		n += snprintf(line + n, sizeof(line) - (size_t)n, "; %" PRIu64 " kernel TCP: %s",
			      stats.plain[i].n, stats.plain[i].why);
	if (stats.plain_other)
		n += snprintf(line + n, sizeof(line) - (size_t)n, "; %" PRIu64 " kernel TCP: other",
			      stats.plain_other);
	if (stats.exec_ended)
		n += snprintf(line + n, sizeof(line) - (size_t)n, "; %" PRIu64
			      " ended at exec (not FD_CLOEXEC)", stats.exec_ended);
	if (stats.closes_behind)
		n += snprintf(line + n, sizeof(line) - (size_t)n, "; %" PRIu64 " closed while "
			      "their readers lagged, finished in the background", stats.closes_behind);
	if (stats.foreign_resets)
		n += snprintf(line + n, sizeof(line) - (size_t)n, "; %" PRIu64 " reset for %" PRIu64
			      " bytes written past rb2-run's calls (lost)", stats.foreign_resets,
			      stats.foreign_bytes);
	line[n < (int)sizeof(line) - 1 ? n : (int)sizeof(line) - 2] = '\n';
	n = n < (int)sizeof(line) - 1 ? n + 1 : (int)sizeof(line) - 1;
	/* A daemon closes or redirects its stderr (haproxy, nginx with
	 * `daemon on`, redis-server --daemonize yes): the line goes to a file
	 * of the user's, one write with O_APPEND, so the lines of many
	 * processes stay whole. A process that cannot open it (one that
	 * dropped its privileges) says it on its stderr, as without one. */
	if (stats_path[0] != '\0') {
		int fd = open(stats_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);

		if (fd >= 0) {
			ssize_t w = REAL(write)(fd, line, (size_t)n);

			REAL(close)(fd);
			if (w == n)
				return;
		}
	}
	(void)!fwrite(line, 1, (size_t)n, stderr);
	fflush(stderr);
}

__attribute__((constructor)) static void
preload_init(void)
{
	struct rlimit rl;
	const char *t;

	real_resolve();
	spawned_stand_ins();
	image_pid = getpid();
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_max == RLIM_INFINITY || rl.rlim_max > (1u << 20))
		rl.rlim_max = 1u << 20;
	tab_size = (unsigned int)rl.rlim_max;
	/* Our own descriptors (two completion channels a connection to
	 * another host) go past the program's soft limit, which grows for
	 * them (up to the hard one): the program's own are numbered as
	 * without rb2-run (wrk sizes its event loop by its connection count,
	 * 10 + 3 a connection, and refuses a socket numbered past it), and it
	 * keeps its whole limit for its connections. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur >= RB2_RUN_FD_FLOOR_MIN && rl.rlim_cur < ((rlim_t)1 << 20))
		rb2_xport_fd_floor_set((int)rl.rlim_cur, 1);
	tab = calloc(tab_size, sizeof(*tab));
	eps = calloc(tab_size, sizeof(*eps));
	if (tab == NULL || eps == NULL || rb2_sockd_path(sockd_path, sizeof(sockd_path)) != 0)
		return;
	t = getenv("RB2_RUN_CONNECT_TIMEOUT_MS");
	if (t != NULL && atoi(t) > 0)
		connect_timeout_ms = (unsigned int)atoi(t);
	/* The program's stderr is its own: a peer that exits with connections
	 * open is an end of stream here, as with the kernel, not a message.
	 * RB2_NOEAL_LOG=8 shows everything. */
	if (getenv("RB2_NOEAL_LOG") == NULL)
		rte_log_set_global_level(RTE_LOG_CRIT);
	/* Read now: nginx clears its workers' environment. */
	t = getenv("RB2_RUN_STATS");
	want_stats = t != NULL && (strcmp(t, "1") == 0 || t[0] == '/');
	if (t != NULL && t[0] == '/' && strlen(t) < sizeof(stats_path))
		strcpy(stats_path, t);
	/* Spinners at once: the CPUs less one for the peer, at least 1. */
	{
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);

		spin_max = cpus > 2 ? (int)cpus - 1 : 1;
	}
	t = getenv("RB2_RUN_BATCH_US");
	if (t != NULL)
		atomic_store(&batch_ns, strtoull(t, NULL, 10) * 1000ull);
	t = getenv("RB2_RUN_SPIN_NS");
	if (t != NULL)
		spin_ns = strtoull(t, NULL, 10);
	/* The old bell, for comparison: a byte on the connection's socket. */
	t = getenv("RB2_RUN_BELL");
	use_efd = t == NULL || strcmp(t, "socket") != 0;
	t = getenv("RB2_RUN_DEBUG");
	if (t != NULL && strcmp(t, "1") == 0) {
		debug_trace = 1;
		signal(SIGRTMIN + 3, dump_streams);
	}
	/* Streams to other hosts need an RDMA device here; RB2_RUN_VERBS=0
	 * keeps every connection to another host kernel TCP. */
	t = getenv("RB2_RUN_VERBS");
	if (t == NULL || strcmp(t, "0") != 0) {
		DIR *d = opendir("/sys/class/infiniband");
		struct dirent *e;

		while (d != NULL && (e = readdir(d)) != NULL)
			if (e->d_name[0] != '.')
				ask_flags |= RB2_SOCKD_F_VERBS;
		if (d != NULL)
			closedir(d);
	}
	/* Set-ups inside the calls, as before they went to the background,
	 * for comparison (pend_start()). */
	t = getenv("RB2_RUN_SETUP");
	setup_inline = t != NULL && strcmp(t, "inline") == 0;
	t = getenv("RB2_RUN_AHEAD");
	if (t != NULL)
		ahead.want = (unsigned int)RTE_MIN(strtoul(t, NULL, 10), (unsigned long)AHEAD_MAX);
	t = getenv("RB2_RUN_FAULT_FLIP");
	if (t != NULL)
		flip_at = strtoull(t, NULL, 10);
	t = getenv("RB2_RUN_FAULT_PAIR_LATE_MS");
	if (t != NULL)
		pair_late_ms = (unsigned int)strtoul(t, NULL, 10);
	t = getenv("RB2_RUN_FAULT_ADOPT_LATE_MS");
	if (t != NULL)
		adopt_late_ms = (unsigned int)strtoul(t, NULL, 10);
	active = 1;
	adopt_inherited_listeners();
	closer_init();
	pthread_atfork(before_fork, ahead_postfork_parent, child_after_fork);
	atexit(print_stats);
	atexit(streams_end_at_exit);     /* runs first: the stats count its WRs */
}
