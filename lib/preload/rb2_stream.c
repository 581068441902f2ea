/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* A byte stream over an RB² channel pair in an arena (rb2_stream.h). */

#define _GNU_SOURCE             /* POLLRDHUP */

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_errno.h>
#include <rte_memzone.h>
#include <rte_cycles.h>

#include <rb2_chan.h>
#include <rb2_xport.h>
#include <rb2_xport_driver.h>

#include "rb2_stream.h"

/* The words both ends share. Direction 0 carries the client's bytes, 1 the
 * server's; end 0 is the client, 1 the server: end e writes direction e. */
/* Laid out by who writes what, how often: every poll reads the state line,
 * and each end bumps its own counters per message, so the state stays in
 * both caches and one end's bumps do not take the other's line away. With
 * all of it in one line, a 64 B round trip through send() and recv() took
 * 340 ns against a bare channel's 150 ns; laid out so, 250-270 ns
 * (tests/rb2run_pingpong, 4 interleaved rounds). */
struct stream_ctl {
	/* State, written once or twice in a stream's life. */
	_Atomic uint32_t shut[2];        /* direction d's writer sent its last byte */
	_Atomic uint32_t closed[2];      /* end e closed: its reads are over */
	_Atomic uint32_t reset[2];       /* end e closed with bytes unread: TCP's RST
					  * (across hosts, first in e's own copy
					  * from a fork child:
					  * rb2_stream_fork_reset()) */
	_Atomic uint32_t ends;           /* ends open; the last to close frees this */
	_Atomic uint32_t forks[2];       /* processes holding end e, past one */
	/* ... and which ones, as far as known (rb2_stream_fork_hold(),
	 * rb2_stream_fork_child()), so that a release can count out those a
	 * signal killed; 0: a free slot. */
	_Atomic int32_t holders[2][RB2_STREAM_HOLDERS];
	_Atomic uint32_t efd_listen[2];  /* end e sleeps on its eventfd too: ring it there */
	_Atomic uint32_t joined[2];      /* one host: end e's channels are connected */
	_Atomic uint32_t join_waits[2];  /* ... and the other end sleeps on joined[e] */
	/* Who sleeps: set by a sleeper, cleared by whoever rings it. */
	alignas(64) _Atomic uint32_t rd_sleeps[2]; /* direction d's reader wants a bell for data */
	_Atomic uint32_t wr_sleeps[2];   /* direction d's writer wants a bell for room */
	/* ... in which wait (rb2_stream_wait_id()), one host only: stored
	 * before the flag, read after it. */
	_Atomic uint64_t rd_wait[2], wr_wait[2];
	/* Per end e, written by e alone: events for edge-triggered waiters, as
	 * the kernel's wake-ups, and its bells. */
	alignas(64) struct {
		_Atomic uint32_t pub;    /* e published on direction e, or shut it down */
		_Atomic uint32_t rel;    /* e freed room on direction !e, or closed */
		_Atomic uint64_t rung;   /* bells e sent on its socket, counted before each */
		_Atomic uint64_t efd_rung; /* ... and on the peer's eventfd */
		/* Across hosts, where the peer READs them (below): */
		_Atomic uint64_t published; /* e's tail on direction e as published (slots) */
		_Atomic uint64_t freed;  /* messages e released of direction !e */
		char pad[24];
	} by[2];
	/* Across hosts: where this end's READs land (one at a time, under the
	 * control queue's lock), and the words its flag WRITEs come from
	 * (registered memory, never the peer's). */
	alignas(64) uint64_t got;
	uint32_t one, zero;
};

/* On one host, slots of 256 B as across hosts: a small write takes a slot
 * whole, so the ring holds 2047 small writes, where 2 KiB slots held 255
 * (the kernel's buffers hold megabytes of them); a large write spans
 * slots. */
#define RB2_STREAM_SLOTS 2048
#define RB2_STREAM_SLOT_SIZE 256
/* Across hosts, how long a control READ may take: the peer's flag, count or
 * bell count (a peer host that answers nothing is the kernel socket's to
 * find, in about 10 s); and after the peer's FIN, what it published, which
 * its process's queues, gone with it, never answer: a short wait, once, so
 * a server's one thread does not stall on each client that exited. */
#define RB2_STREAM_CTL_MS 6000
#define RB2_STREAM_GONE_MS 200
/* A close waits this long for a reader that takes nothing (linger()). */
#define RB2_STREAM_LINGER_MS 10000
/* The fence's bound, RB2_POST_WAIT_MS in lib/rb2 (rb2_tx_drain_done()). */
#define RB2_STREAM_FENCE_MS 10000
/* Across hosts, slots of 256 B: a slot goes whole on the wire, so a 64 B
 * write is one WRITE of 256 B, one packet, where a 2 KiB slot made two. */
#define RB2_STREAM_REMOTE_SLOTS 2048
#define RB2_STREAM_REMOTE_SLOT_SIZE 256

/* The socket options that make the kernel socket tell a silent peer host
 * (rb2_stream.h): the socket carries no data, so nothing else would. */
static const struct { int level, name, val; } liveness[] = {
	{ SOL_SOCKET, SO_KEEPALIVE, 1 },
	{ IPPROTO_TCP, TCP_KEEPIDLE, RB2_STREAM_KEEPIDLE_S },
	{ IPPROTO_TCP, TCP_KEEPINTVL, RB2_STREAM_KEEPINTVL_S },
	{ IPPROTO_TCP, TCP_KEEPCNT, RB2_STREAM_KEEPCNT },
	{ IPPROTO_TCP, TCP_USER_TIMEOUT, RB2_STREAM_USER_TIMEOUT_MS },
};

/*
 * **Across hosts** (rb2_stream_open_remote()) each end has its own copy of
 * the control words, in its own registered memory, and no word is shared:
 * - the peer's end of the data comes in the ring, ordered with the data: a
 *   shutdown is a marked empty message (RB2_MSG_MARK), the last one;
 * - a close, and a reset, are WRITEs into the peer's copy (closed[],
 *   reset[]): the peer's reads still drain the ring up to the mark;
 * - a sleeper's flag (rd_sleeps[], wr_sleeps[]) is a WRITE into the copy of
 *   the end that must ring it, which reads it there with a load;
 * - edges are counted by each end from what it sees arrive (the ring's
 *   tail, its head), not from the peer's counters.
 *
 * A reader waiting for data sleeps on its receiver's completion channel
 * where every publication completes there (verbs, WRITE_WITH_IMM:
 * rb2_rx_wait_arm()): the data wakes it, and nobody rings. A writer waiting
 * for room sleeps on its sender's (RB2_CHAN_F_ROOM_WAKE: rb2_tx_wait_arm()):
 * the reader's head push, every quarter ring, comes with a wake-up. So on
 * verbs nothing is READ on the way of the data: Soft-RoCE leaves a READ
 * uncompleted under reordering on the link, where WRITEs get through.
 *
 * Where nothing completes (shm, in the tests), a sleeper must not miss the
 * one bell it asks for, and a WRITE of its flag lands some time later.
 * Dekker across hosts: the sleeper WRITEs its flag, then READs the peer's
 * count (by[].published for data, by[].freed for room) on the same queue,
 * so the READ executes at the peer after the flag landed (RC orders a READ
 * after the WRITEs before it). The peer bumps its
 * count locally and then loads the flag. Either its load saw the flag (it
 * rings), or its bump came before the flag landed, so before the READ: the
 * sleeper then sees the count moved, and does not sleep: the data or the
 * room is on its way and comes without a bell.
 *
 * The control queue is a QP of its own: its WRs never take room the
 * channels counted on, and its completions (the READs) come back to it
 * alone. So a stream across hosts has three QPs each side.
 */
struct stream_remote {
	struct rb2_xport *xp;            /* the caller's: not closed with the stream */
	struct rb2_xport_qp *qp;         /* control: flag WRITEs and count READs */
	struct rb2_xport_mr mr;          /* this end's struct stream_ctl */
	uint64_t peer_ctl;               /* the peer's, and its key */
	uint32_t peer_rkey;
	pthread_mutex_t lock;            /* the control queue: a reader and a writer may arm at once */
	uint64_t msgs_freed;             /* messages this end released (what by[me].freed says) */
	uint64_t freed_known;            /* the peer's by[].freed at our last READ */
	uint64_t rung_known;             /* the peer's by[].rung at our last READ */
	int eof;                         /* the end: the peer's mark was read, or its process
					    ended and all it published is here */
	int wake_fd;                     /* our receiver's completion channel, or -1 */
	_Atomic int rx_armed;            /* a reader waits on it (rb2_rx_wait_arm()) */
	int room_fd;                     /* our sender's completion channel, or -1 */
	_Atomic int tx_armed;            /* a writer waits on it (rb2_tx_wait_arm()) */
	int mark_pending;                /* shut down writing; the mark waits for room */
	struct rb2_msg *scratch;         /* RB2_STREAM_REMOTE_SLOTS views: FIONREAD's */
	int ctl_stuck;                   /* a READ timed out: no more READs */
	uint64_t ctl_wrs, ctl_posts;     /* WRs and posts on the control queue */
	int batch;                       /* rb2_stream_batch(): writes may be held back ... */
	int batching;                    /* ... this flush may be (stream_admit()) ... */
	int held;                        /* ... and some are now */
	int live;                        /* the socket is TCP, with the stream's liveness[] */
	int app_opt[RTE_DIM(liveness)];  /* the program's values of those (rb2_stream_opt()) */
};

struct rb2_stream {
	struct rb2_xport *xp;
	struct rb2_tx *tx;
	struct rb2_rx *rx;
	const struct rte_memzone *ctl_mz;
	struct stream_ctl *ctl;
	int me;                  /* 0: client, 1: server */
	int bell;
	int fd_shown;            /* the program's fd, for messages (the bell may move) */
	int wake_efd;            /* one host: the eventfd we sleep on; across hosts, the
				    one our own SHUT_RD rings (rb2_stream_shut_fd()) */
	int ring_efd;            /* ... and the peer's, which we ring */
	_Atomic uint64_t efd_heard; /* rings of our eventfd read away */
	_Atomic uint64_t efd_self;  /* ... of them our own (rb2_stream_shutdown_rd()) */
	_Atomic int heard;       /* RB2_STREAM_HEARD_*: the kernel said so (rb2_stream_heard()) */
	_Atomic int asleep[2];   /* this process's waits armed for reading, for writing */
	int wr_shut;
	_Atomic int rd_shut;     /* SHUT_RD: an empty read is the end (TCP's RCV_SHUTDOWN) */
	int reset;               /* a write after the peer's close was taken */
	int rst_seen;            /* a read reported the peer's reset */
	int corked;              /* the program set TCP_CORK on the bell's socket */
	int broken;              /* bytes came on the bell's socket that no bell sent */
	int peer_gone;           /* the peer's kernel socket closed: its process ended */
	int dead;                /* across hosts, the peer's host stopped answering: the
				    kernel socket's error (ETIMEDOUT), with peer_gone */
	int dead_told;           /* a call returned it: reads get 0, writes EPIPE */
	int cut;                 /* across hosts, the peer's process ended with no mark,
				    and what it published can no longer be asked: reset */
	int close_sent;          /* send_close() ran */
	int close_draining;      /* rb2_stream_close_step() waits for rb2_tx_drain_done() */
	uint64_t fence_lost_until; /* RB2_RUN_FAULT_FENCE_LOST: the bound (cycles), or 0 */
	int fork_reset_sent;     /* a fork child's reset went ahead of the end (put_mark()) */
	uint64_t close_moved;    /* rb2_stream_close_step(): what had gone at ... */
	uint64_t close_moved_at; /* ... this time (cycles), or 0 before its first step */
	uint64_t bell_bytes;     /* bytes read off the bell's socket */
	uint32_t off;            /* bytes of the first unreleased message already read */
	struct rb2_stream_stats st;
	struct stream_remote *rm; /* across hosts, or NULL */
	/* On one host, RB2_STREAM_SLOTS views for FIONREAD (rb2_stream_nread()),
	 * made at its first use: 32 KiB, too much for a small thread's stack. */
	struct rb2_msg *_Atomic scratch;
};

static void
params(struct rb2_chan_params *p)
{
	rb2_chan_params_init(p);
	p->slots = RB2_STREAM_SLOTS;   /* 512 KiB each way: a 64 KiB write is an eighth */
	p->slot_size = RB2_STREAM_SLOT_SIZE;
}

/* The bell's system calls, not libc's functions: under rb2-run, libc's
 * send and recv on this socket are the preload library's own, which would
 * come back here. */
static void
ring(struct rb2_stream *s)
{
	static const int off = 0, on = 1;
	static const uint64_t one = 1;

	s->st.bells_rung++;
	/* The peer's eventfd: a wake-up that never crosses the TCP stack. A
	 * byte on loopback TCP (below) went through tcp_sendmsg and the
	 * softirq to the peer's socket: 11% of all samples under memcslap. */
	if (s->ring_efd >= 0 &&
	    atomic_load_explicit(&s->ctl->efd_listen[!s->me], memory_order_acquire)) {
		/* Counted first: the peer reads its eventfd only while the
		 * count is ahead of what it read. */
		atomic_fetch_add_explicit(&s->ctl->by[s->me].efd_rung, 1, memory_order_release);
		(void)syscall(SYS_write, s->ring_efd, &one, sizeof(one));
		return;
	}
	/* One byte makes the peer's socket readable; if its buffer is full,
	 * the bytes already there do the same. A program that corks its
	 * socket (nginx's tcp_nopush) would hold the byte for up to 200 ms:
	 * uncorking sends it, and the cork goes back on. */
	if (s->corked)
		(void)syscall(SYS_setsockopt, s->bell, IPPROTO_TCP, TCP_CORK, &off, sizeof(off));
	/* Counted first: the peer never reads more bells than this says. */
	atomic_fetch_add_explicit(&s->ctl->by[s->me].rung, 1, memory_order_release);
	(void)syscall(SYS_sendto, s->bell, "", 1, MSG_DONTWAIT | MSG_NOSIGNAL, NULL, 0);
	if (s->corked)
		(void)syscall(SYS_setsockopt, s->bell, IPPROTO_TCP, TCP_CORK, &on, sizeof(on));
}

void
rb2_stream_corked(struct rb2_stream *s, int corked)
{
	s->corked = corked != 0;
}

/* The wait this thread rang last (rb2_stream_wait_id()). */
static __thread uint64_t rang_wait;

/* After publishing data (@flag: our direction's reader's) or freeing room
 * (the peer's writer's): ring the peer if it asked, unless this thread rang
 * the same wait of its already (@wait: where the sleeper names it; NULL
 * across hosts). Seq-cst: our publication before our look at its flag, as
 * its flag before its last look at the ring (Dekker).
 *
 * Not ringing a wait rung before is safe: the first bell wakes it (or found
 * it awake), and it looks at every stream it waits on after it disarms;
 * what it missed of ours there, its next arming's look sees, by the same
 * Dekker (our look at the flag came before its new flag). */
static void
ring_if(struct rb2_stream *s, _Atomic uint32_t *flag, _Atomic uint64_t *wait)
{
	uint64_t w;

	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(flag, memory_order_relaxed) == 0 ||
	    atomic_exchange_explicit(flag, 0, memory_order_acq_rel) == 0)
		return;
	w = wait != NULL ? atomic_load_explicit(wait, memory_order_relaxed) : 0;
	if (w != 0 && w == rang_wait)
		return;
	rang_wait = w;
	ring(s);
}

/* ring_if() for the reader of direction @d, and for the writer. */
static void
ring_reader(struct rb2_stream *s, int d)
{
	ring_if(s, &s->ctl->rd_sleeps[d], s->rm == NULL ? &s->ctl->rd_wait[d] : NULL);
}

static void
ring_writer(struct rb2_stream *s, int d)
{
	ring_if(s, &s->ctl->wr_sleeps[d], s->rm == NULL ? &s->ctl->wr_wait[d] : NULL);
}

/* A wait's name: this process's pid in the top 22 bits (Linux's pids stay
 * below 2^22, PID_MAX_LIMIT), a count in the low 42, from a random start.
 * Two live processes of one pid namespace never share a name, and a
 * process repeats one only after 2^42 waits. */
#define WAIT_COUNT_BITS 42
#define WAIT_COUNT_MASK ((UINT64_C(1) << WAIT_COUNT_BITS) - 1)

static _Atomic uint64_t wait_pid;   /* this process's pid << WAIT_COUNT_BITS */
static _Atomic uint64_t wait_count;

/* Names this process's waits by its pid, from a random count: a pid used
 * again (by a process that ended, or in another pid namespace) counts
 * elsewhere. Runs once, and again in a child after fork. */
static void
wait_ids_seed(void)
{
	uint64_t start;

	if (getrandom(&start, sizeof(start), GRND_NONBLOCK) != (ssize_t)sizeof(start))
		start = rte_get_timer_cycles();
	atomic_store_explicit(&wait_count, start, memory_order_relaxed);
	atomic_store_explicit(&wait_pid, (uint64_t)getpid() << WAIT_COUNT_BITS,
			      memory_order_relaxed);
}

static void
wait_ids_init(void)
{
	wait_ids_seed();
	(void)pthread_atfork(NULL, NULL, wait_ids_seed);
}

uint64_t
rb2_stream_wait_id(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	uint64_t count;

	(void)pthread_once(&once, wait_ids_init);
	count = atomic_fetch_add_explicit(&wait_count, 1, memory_order_relaxed) &
		WAIT_COUNT_MASK;
	/* This thread is about to wait, so what it rang before belongs to a
	 * pass over its streams that is over: ring afresh in the next. */
	rang_wait = 0;
	/* Never 0, which names no wait: no process has pid 0. */
	return atomic_load_explicit(&wait_pid, memory_order_relaxed) | count;
}

/* One more event on @ctr: only this end writes it (its caller holds the
 * end's lock), so a plain increment, published for the peer's next look. */
static void
bump(_Atomic uint32_t *ctr)
{
	atomic_store_explicit(ctr, atomic_load_explicit(ctr, memory_order_relaxed) + 1,
			      memory_order_release);
}

/* ---- Across hosts: the control queue ---------------------------------------- */

/* Where @field of our copy sits in the peer's. */
static inline uint64_t
peer_addr(const struct rb2_stream *s, const volatile void *field)
{
	return s->rm->peer_ctl + ((uintptr_t)field - (uintptr_t)s->ctl);
}

/* Post @n WRs on the control queue and wait for the last, signaled one
 * (@wait), reaping the driver's own completions meanwhile, for at most
 * @ms. Under rm->lock. @return 0, or -errno: the queue failed, or no answer
 * within @ms (rb2-run's queues retry without limit on Soft-RoCE, so a peer
 * that stopped answering never fails them there). */
static int
ctl_post(struct rb2_stream *s, struct rb2_xport_wr *wr, unsigned int n, int wait,
	 unsigned int ms)
{
	struct stream_remote *r = s->rm;
	struct rb2_xport_wc wc[4];
	uint64_t deadline = rte_get_timer_cycles() + rte_get_timer_hz() * ms / 1000;
	int ret, got = 0;

	while ((ret = rb2_xport_post(r->qp, wr, n)) == -ENOSPC) {
		(void)rb2_xport_poll(r->qp, wc, RTE_DIM(wc));
		if (rte_get_timer_cycles() > deadline)
			return -ETIMEDOUT;
	}
	if (ret < 0)
		return ret;
	r->ctl_wrs += n;
	r->ctl_posts++;
	while (wait && !got) {
		int k = rb2_xport_poll(r->qp, wc, RTE_DIM(wc));

		if (k < 0)
			return k;
		for (int i = 0; i < k; i++) {
			if (wc[i].status != RB2_WC_SUCCESS)
				return -EIO;
			got |= wc[i].wr_id == 1;
		}
		if (!got && rte_get_timer_cycles() > deadline) {
			/* Its completion may still come: no READ after it
			 * could tell its own from this one's. */
			r->ctl_stuck = 1;
			return -ETIMEDOUT;
		}
	}
	if (!wait)
		(void)rb2_xport_poll(r->qp, wc, RTE_DIM(wc));  /* the driver's own */
	return 0;
}

static void read_bells(struct rb2_stream *s);

/* Across hosts, a queue failed: the peer's process or its host is gone.
 * A process that ended closed its kernel socket first (a FIN): then the
 * stream reads to its end. With no FIN, its host stopped answering: reads
 * and writes fail with ETIMEDOUT, as TCP's after its timeout. Said once. */
static void
peer_failed(struct rb2_stream *s, int err, const char *what)
{
	if (s->peer_gone)
		return;
	rb2_stream_heard(s, RB2_STREAM_HEARD_SOCK);    /* a FIN there, maybe */
	read_bells(s);
	if (s->peer_gone)
		return;
	s->peer_gone = 1;
	s->dead = ETIMEDOUT;
	fprintf(stderr, "rb2-run: pid %d: fd %d: %s to the other host failed (%s) with no end "
		"from the peer: its host stopped answering; the connection times out\n",
		(int)getpid(), s->fd_shown, what, strerror(-err));
}

/* Run @n WRs on the control queue, under its lock; when @out is given, the
 * last is a signaled READ into ctl->got, waited for (at most @ms), and *@out
 * its value. A failure means the peer is gone (peer_failed()). */
static int
ctl_exec(struct rb2_stream *s, struct rb2_xport_wr *w, unsigned int n, uint64_t *out,
	 unsigned int ms)
{
	int ret;

	/* A dead host answers nothing: each WR would wait out the deadline. */
	if (s->dead || (out != NULL && s->rm->ctl_stuck))
		return -ENOTCONN;
	pthread_mutex_lock(&s->rm->lock);
	ret = ctl_post(s, w, n, out != NULL, ms);
	if (ret == 0 && out != NULL)
		*out = atomic_load_explicit((_Atomic uint64_t *)&s->ctl->got,
					    memory_order_acquire);
	pthread_mutex_unlock(&s->rm->lock);
	if (ret < 0)
		peer_failed(s, ret, "the stream's control queue");
	return ret;
}

/* Store @val in our @field and WRITE it to the peer's copy of it. */
static void
publish_word(struct rb2_stream *s, _Atomic uint32_t *field, uint32_t val)
{
	atomic_store_explicit(field, val, memory_order_release);
	if (s->rm != NULL && s->rm->peer_ctl != 0) {
		struct rb2_xport_wr w = {
			.local = (void *)field, .lkey = s->rm->mr.lkey,
			.remote = peer_addr(s, field), .rkey = s->rm->peer_rkey,
			.len = sizeof(uint32_t), .opcode = RB2_WR_WRITE, .flags = RB2_WR_INLINE,
		};

		(void)ctl_exec(s, &w, 1, NULL, RB2_STREAM_CTL_MS);
	}
}

/* WRITE @val (0 or 1) to the peer's @flag (a word of our layout), then, if
 * @count, READ the peer's @count into *@out: one chain, one doorbell; the
 * READ executes at the peer after the WRITE landed. */
static int
flag_then_read(struct rb2_stream *s, const void *flag, uint32_t val, const void *count,
	       uint64_t *out)
{
	struct stream_remote *r = s->rm;
	struct rb2_xport_wr w[2] = {
		{ .local = val ? &s->ctl->one : &s->ctl->zero, .lkey = r->mr.lkey,
		  .remote = peer_addr(s, flag), .rkey = r->peer_rkey, .len = sizeof(uint32_t),
		  .opcode = RB2_WR_WRITE, .flags = RB2_WR_INLINE },
		{ .wr_id = 1, .local = &s->ctl->got, .lkey = r->mr.lkey,
		  .remote = count != NULL ? peer_addr(s, count) : 0, .rkey = r->peer_rkey,
		  .len = sizeof(uint64_t), .opcode = RB2_WR_READ, .flags = RB2_WR_SIGNALED },
	};

	return ctl_exec(s, w, count != NULL ? 2 : 1, count != NULL ? out : NULL,
			RB2_STREAM_CTL_MS);
}

/* READ the peer's 64-bit @count, waiting at most @ms. */
static int
read_peer(struct rb2_stream *s, const void *count, uint64_t *out, unsigned int ms)
{
	struct stream_remote *r = s->rm;
	struct rb2_xport_wr w = {
		.wr_id = 1, .local = &s->ctl->got, .lkey = r->mr.lkey,
		.remote = peer_addr(s, count), .rkey = r->peer_rkey,
		.len = sizeof(uint64_t), .opcode = RB2_WR_READ, .flags = RB2_WR_SIGNALED,
	};

	return ctl_exec(s, &w, 1, out, ms);
}

/* How far the peer's tail has come here (slots), to set against what it
 * says it published (by[].published). */
static uint64_t
arrived(struct rb2_stream *s)
{
	struct rb2_rx_ptrs rp;

	rb2_rx_look_again(s->rx);
	rb2_rx_pointers(s->rx, &rp);
	return rp.local_tail;
}

/* Across hosts: what our sender has published, for a sleeping reader's
 * READ; before our look at its flag (ring_if()'s fence). */
static inline void
note_published(struct rb2_stream *s)
{
	atomic_store_explicit(&s->ctl->by[s->me].published, rb2_tx_published(s->tx),
			      memory_order_release);
}

/* The peer closed its end, or its kernel socket closed without that: the
 * kernel closes a process's sockets when it ends, and the FIN reaches this
 * end's bell (read by rb2_stream_disarm()). A sleeper learns of a dead peer
 * so at once, where the channel's liveness look runs only while it polls. */
static inline int
peer_closed(const struct rb2_stream *s)
{
	return s->peer_gone || atomic_load_explicit(&s->ctl->closed[!s->me], memory_order_acquire);
}

/* The connection is reset: the peer closed with our bytes unread (TCP's
 * RST), or this end found bytes on its bell's socket that no bell sent. */
static inline int
peer_reset(const struct rb2_stream *s)
{
	return s->broken || s->cut ||
		atomic_load_explicit(&s->ctl->reset[!s->me], memory_order_acquire);
}

/* A read of a reset connection: as TCP's RST, one read fails with
 * ECONNRESET (a peek does not take it), then the end. */
static ssize_t
reset_told(struct rb2_stream *s, int peek)
{
	if (s->rst_seen || peek)
		return s->rst_seen ? 0 : -ECONNRESET;
	s->rst_seen = 1;
	return -ECONNRESET;
}

/* What poll says of a reset connection: POLLERR until a read took it. */
static int
reset_events(const struct rb2_stream *s)
{
	return POLLIN | POLLOUT | POLLRDHUP | POLLHUP | (s->rst_seen ? 0 : POLLERR);
}

/* A channel call of ours returned @err. Across hosts, a channel that
 * failed (not for room, not the peer's reset) with no end from the peer
 * means its host is gone, unless its process's FIN is here (peer_failed()).
 * @return whether the peer's host is gone. */
static int
channel_dead(struct rb2_stream *s, int err)
{
	if (err < 0 && err != -ENOBUFS && err != -ECONNRESET && s->rm != NULL)
		peer_failed(s, err, "a channel");
	return s->dead;
}

/* The peer's host stopped answering: the first call to ask gets the
 * error, as from TCP after its timeout; then reads get @after (0: the
 * end), writes -EPIPE. */
static inline int
dead_told(struct rb2_stream *s, int after)
{
	if (s->dead_told)
		return after;
	s->dead_told = 1;
	return -s->dead;
}

/* Close @fd past libc's close, which rb2-run's is. */
static void
close_fd(int *fd)
{
	if (*fd >= 0)
		(void)syscall(SYS_close, *fd);
	*fd = -1;
}

/* One host: until the peer's end says its channels are connected, at most
 * @p timeout_ms. It connects right after ours exist, so this is short: an
 * end sleeps on the peer's flag (a futex, woken by the peer's
 * rb2_xport_flag_set()), where naps of 20 us woke up to 70 us late (the
 * timer's slack) in about half of the set-ups. */
static int
wait_joined(const struct rb2_stream *s, unsigned int timeout_ms)
{
	uint64_t until = rte_get_timer_cycles() + rte_get_timer_hz() * timeout_ms / 1000;

	while (!atomic_load_explicit(&s->ctl->joined[!s->me], memory_order_acquire)) {
		if (rte_get_timer_cycles() > until)
			return -ETIMEDOUT;
		rb2_xport_flag_wait(&s->ctl->joined[!s->me], &s->ctl->join_waits[!s->me], until);
	}
	return 0;
}

struct rb2_stream *
rb2_stream_open(const char *name, int is_client, int bell_fd, const int efd[2],
		unsigned int timeout_ms)
{
	struct rb2_stream *s = calloc(1, sizeof(*s));
	struct rb2_chan_params p;
	char up[RB2_CHAN_NAMESIZE], down[RB2_CHAN_NAMESIZE], cz[RTE_MEMZONE_NAMESIZE];
	int ret = -ENOMEM, wake = -1, peer = -1;

	/* The bells, taken: both, or neither. */
	if (efd != NULL) {
		wake = efd[is_client ? 0 : 1];
		peer = efd[is_client ? 1 : 0];
		if (wake < 0 || peer < 0) {
			close_fd(&wake);
			close_fd(&peer);
		}
	}
	if (s == NULL) {
		close_fd(&wake);
		close_fd(&peer);
		goto fail;
	}
	s->me = is_client ? 0 : 1;
	s->bell = s->fd_shown = bell_fd;
	s->wake_efd = wake;
	s->ring_efd = peer;
	snprintf(up, sizeof(up), "%s.u", name);
	snprintf(down, sizeof(down), "%s.d", name);
	snprintf(cz, sizeof(cz), "%s.c", name);
	/* Whichever end comes first makes the control zone. */
	s->ctl_mz = rte_memzone_reserve(cz, sizeof(struct stream_ctl), 0, 0);
	if (s->ctl_mz == NULL && rte_errno == EEXIST)
		s->ctl_mz = rte_memzone_lookup(cz);
	if (s->ctl_mz == NULL)
		goto fail;
	s->ctl = s->ctl_mz->addr;
	atomic_fetch_add(&s->ctl->ends, 1);
	/* Before our first sleep: the peer rings our eventfd from then on. */
	if (s->wake_efd >= 0)
		atomic_store_explicit(&s->ctl->efd_listen[s->me], 1, memory_order_release);
	params(&p);
	s->xp = rb2_xport_open("shm", NULL);
	if (s->xp == NULL)
		goto fail;
	/* Both ends connect "up" first, then "down": no end waits on the
	 * other's second channel before its first. */
	if (is_client) {
		s->tx = rb2_tx_create(up, s->xp, &p);
		s->rx = rb2_rx_create(down, s->xp, &p);
		if (s->tx == NULL || s->rx == NULL)
			goto fail;
		if ((ret = rb2_tx_connect(s->tx, up, timeout_ms)) != 0 ||
		    (ret = rb2_rx_connect(s->rx, down, timeout_ms)) != 0)
			goto fail;
	} else {
		s->rx = rb2_rx_create(up, s->xp, &p);
		s->tx = rb2_tx_create(down, s->xp, &p);
		if (s->tx == NULL || s->rx == NULL)
			goto fail;
		if ((ret = rb2_rx_connect(s->rx, up, timeout_ms)) != 0 ||
		    (ret = rb2_tx_connect(s->tx, down, timeout_ms)) != 0)
			goto fail;
	}
	/* Return only once the peer's channels are connected too. An end that
	 * returned first could write, then close (or exec) and destroy its
	 * channels while the peer was still connecting to them: the peer's
	 * open failed, and the bytes written were lost without a word (the
	 * exec check of test_rb2run.sh, about once in 30 runs). */
	rb2_xport_flag_set(&s->ctl->joined[s->me], &s->ctl->join_waits[s->me]);
	if ((ret = wait_joined(s, timeout_ms)) != 0)
		goto fail;
	return s;
fail:
	if (ret == -ENOMEM && rte_errno != 0)
		ret = -rte_errno;
	if (s != NULL)
		rb2_stream_close(s);
	errno = -ret;
	return NULL;
}

/* A fork child marked our end for a reset (rb2_stream_fork_reset()): the
 * peer's reset word, landed (a signaled WRITE, waited for) before the end
 * goes in the ring, which another queue carries: a read there that took
 * the end first would report a clean close. */
static void
fork_reset_first(struct rb2_stream *s)
{
	struct stream_remote *r = s->rm;
	uint64_t unused;
	struct rb2_xport_wr w = {
		.wr_id = 1, .local = (void *)&s->ctl->reset[s->me], .lkey = r->mr.lkey,
		.remote = peer_addr(s, &s->ctl->reset[s->me]), .rkey = r->peer_rkey,
		.len = sizeof(uint32_t), .opcode = RB2_WR_WRITE,
		.flags = RB2_WR_INLINE | RB2_WR_SIGNALED,
	};

	s->fork_reset_sent = 1;
	/* ctl_exec() waits for the last WR (wr_id 1) when given somewhere
	 * for a READ's value; after a WRITE it holds nothing of use. */
	(void)ctl_exec(s, &w, 1, &unused, RB2_STREAM_CTL_MS);
}

/* Across hosts: put the mark (the end of our bytes) in the ring, once
 * there is room for it, and publish it, waiting up to a second for a
 * credit if @wait (rb2_tx_flush()), else as far as the credits go now.
 * @return whether it is in the ring. */
static int
put_mark(struct rb2_stream *s, int wait)
{
	void *slot;

	if (!s->rm->mark_pending)
		return 1;
	if (!s->fork_reset_sent && s->rm->peer_ctl != 0 &&
	    atomic_load_explicit(&s->ctl->reset[s->me], memory_order_acquire))
		fork_reset_first(s);
	(void)rb2_stream_flush(s);       /* held bytes: before the mark, and room for it */
	if (rb2_tx_reserve(s->tx, 0, &slot) == -ENOBUFS)
		return 0;
	rb2_tx_commit(s->tx, 0 | RB2_MSG_MARK);
	if (wait)
		(void)rb2_tx_flush(s->tx);
	else
		(void)rb2_tx_flush_or_defer(s->tx);
	s->rm->mark_pending = 0;
	note_published(s);
	bump(&s->ctl->by[s->me].pub);
	ring_reader(s, s->me);
	return 1;
}

static int
try_mark(struct rb2_stream *s)
{
	return put_mark(s, 1);
}

/* The sender's admission rule across hosts (rb2_tx_admission_hook()): a
 * write that may batch goes out only with nothing of ours in flight; any
 * other transmission goes out at once. */
static int
stream_admit(void *arg, uint32_t inflight, uint32_t want, uint32_t window)
{
	const struct rb2_stream *s = arg;

	RTE_SET_USED(want);
	RTE_SET_USED(window);
	return !s->rm->batching || inflight == 0;
}

/* One end across hosts, not connected yet, for either role: its rings and
 * control words in the current arena, registered with @xp, their zones
 * named with @tag (both ends share an arena in tests). */
static struct rb2_stream *
remote_new(struct rb2_xport *xp, char tag)
{
	struct rb2_stream *s = calloc(1, sizeof(*s));
	struct rb2_xport_qp_attr qa = { .lcore_id = rte_lcore_id(), .sq_depth = 16,
					.cq_depth = 16, .max_inline = 16 };
	struct rb2_chan_params p;
	char tn[RB2_CHAN_NAMESIZE], rn[RB2_CHAN_NAMESIZE], cz[RTE_MEMZONE_NAMESIZE];
	int ret;

	if (s == NULL || (s->rm = calloc(1, sizeof(*s->rm))) == NULL ||
	    (s->rm->scratch = calloc(RB2_STREAM_REMOTE_SLOTS, sizeof(struct rb2_msg))) == NULL) {
		if (s != NULL)
			free(s->rm);
		free(s);
		errno = ENOMEM;
		return NULL;
	}
	s->bell = s->fd_shown = -1;
	s->ring_efd = -1;
	s->rm->xp = xp;
	s->rm->wake_fd = -1;
	s->rm->room_fd = -1;
	pthread_mutex_init(&s->rm->lock, NULL);
	/* Past the program's fds, as the device's are. */
	s->wake_efd = rb2_xport_fd_raise(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
	if (s->wake_efd < 0) {
		ret = -errno;
		goto fail;
	}
	/* This end's sender, receiver and control words. */
	snprintf(tn, sizeof(tn), "rs.%c.t", tag);
	snprintf(rn, sizeof(rn), "rs.%c.r", tag);
	snprintf(cz, sizeof(cz), "rs.%c.k", tag);
	ret = rb2_xport_mr_alloc(xp, cz, sizeof(struct stream_ctl), SOCKET_ID_ANY, &s->rm->mr);
	if (ret < 0)
		goto fail;
	s->ctl = s->rm->mr.addr;
	s->ctl->one = 1;
	params(&p);
	p.slots = RB2_STREAM_REMOTE_SLOTS;
	p.slot_size = RB2_STREAM_REMOTE_SLOT_SIZE;
	/* Where completions wake (verbs), the head is pushed every quarter
	 * ring with a wake-up behind it, and a writer short of room sleeps
	 * until then: nothing is READ. Elsewhere the sender READs the head
	 * when short of room (remote_want()). */
	if (rb2_xport_caps(xp) & RB2_XPORT_CAP_IMM) {
		p.head_sync = RB2_HEAD_LAZY_PUSH;
		p.gamma = p.slots / 4;
		p.flags |= RB2_CHAN_F_LAZY_HEAD | RB2_CHAN_F_ROOM_WAKE;
		/* A window, so that completions count what is in flight
		 * (every WR signaled): rb2_stream_batch() batches by it. Its
		 * size is the send queue's; stream_admit() is the rule. */
		p.max_inflight = 64;
	} else {
		p.head_sync = RB2_HEAD_LAZY_PULL;
	}
	/* Every publication a WRITE_WITH_IMM, whose completion wakes a reader
	 * asleep in the kernel on its queue's completion channel
	 * (rb2_rx_wait_arm()): the data itself rings, as rsocket's do. */
	p.tail_sync = RB2_TAIL_WRITE_IMM;
	p.flags |= RB2_CHAN_F_SLEEP;
	/* The length in the slot: a message is one WRITE (with the
	 * immediate), not a lens[] WRITE beside it. */
	p.flags |= RB2_CHAN_F_LEN_IN_SLOT;
	s->tx = rb2_tx_create(tn, xp, &p);
	s->rx = rb2_rx_create(rn, xp, &p);
	s->rm->qp = rb2_xport_qp_create(xp, &qa);
	if (s->tx == NULL || s->rx == NULL || s->rm->qp == NULL) {
		ret = -(rte_errno ? rte_errno : ENOMEM);
		goto fail;
	}
	if (p.max_inflight != 0 && (ret = rb2_tx_admission_hook(s->tx, stream_admit, s)) < 0)
		goto fail;
	return s;
fail:
	rb2_stream_close(s);
	errno = -ret;
	return NULL;
}

/* The peer's control words: @peer_ctl, @rkey; held while we may WRITE them. */
static int
remote_attach(struct rb2_stream *s, uint64_t peer_ctl, uint32_t rkey)
{
	int ret = rb2_xport_peer_hold(s->rm->xp, peer_ctl, rkey);

	if (ret < 0)
		return ret;
	s->rm->peer_rkey = rkey;
	s->rm->peer_ctl = peer_ctl;    /* last: connected */
	return 0;
}

/* The fds a reader and a writer sleep on, known before their first sleep
 * (a program's epoll set holds them from the start). */
static void
remote_learn_wake_fd(struct rb2_stream *s)
{
	struct rb2_xport_doorbell db = { .fd = -1 };
	int ret = rb2_rx_wait_arm(s->rx, &db);

	/* The fd comes with the arming, before the look: data that came
	 * already (the client's first request, at the server's accept) does
	 * not hide it. An epoll set that missed it would sleep past data. */
	if (ret == 0)
		rb2_rx_wait_done(s->rx);
	if (ret == 0 || ret == -EAGAIN)
		s->rm->wake_fd = db.fd;
	db.fd = -1;
	ret = rb2_tx_wait_arm(s->tx, &db);
	if (ret == 0)
		rb2_tx_wait_done(s->tx);
	if (ret == 0 || ret == -EAGAIN)
		s->rm->room_fd = db.fd;
}

/* Is @fd a TCP socket? */
static int
is_tcp(int fd)
{
	int proto = 0;
	socklen_t l = sizeof(proto);

	return syscall(SYS_getsockopt, fd, SOL_SOCKET, SO_PROTOCOL, &proto, &l) == 0 &&
		proto == IPPROTO_TCP;
}

/* Which of liveness[] (level, name) is, or -1. */
static int
liveness_index(int level, int name)
{
	for (unsigned int i = 0; i < RTE_DIM(liveness); i++)
		if (liveness[i].level == level && liveness[i].name == name)
			return (int)i;
	return -1;
}

int
rb2_stream_keep_opt(struct rb2_stream *s, int level, int name, int val)
{
	int i = s->rm != NULL && s->rm->live ? liveness_index(level, name) : -1;

	if (i < 0)
		return 0;
	s->rm->app_opt[i] = name == SO_KEEPALIVE && level == SOL_SOCKET ? val != 0 : val;
	(void)syscall(SYS_setsockopt, s->bell, level, name, &liveness[i].val, sizeof(int));
	return 1;
}

int
rb2_stream_opt(const struct rb2_stream *s, int level, int name, int *val)
{
	int i = s->rm != NULL && s->rm->live ? liveness_index(level, name) : -1;

	if (i < 0)
		return 0;
	*val = s->rm->app_opt[i];
	return 1;
}

static uint64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* rb2_stream_make_remote(), its zones named with @tag. */
static struct rb2_stream *
make_remote(struct rb2_xport *xp, char tag)
{
	uint64_t t0 = mono_ns();
	struct rb2_stream *s = remote_new(xp, tag);

	if (s != NULL)
		s->st.open_ns = mono_ns() - t0;
	return s;
}

struct rb2_stream *
rb2_stream_make_remote(struct rb2_xport *xp)
{
	return make_remote(xp, 'e');
}

int
rb2_stream_join_remote(struct rb2_stream *s, int is_client, int sock_fd, unsigned int timeout_ms)
{
	uint64_t t0 = mono_ns();
	struct { uint64_t addr; uint32_t rkey, magic; } mine, theirs;
	struct rb2_xport_exch ctl;
	char peer[32];
	int ret;

	s->me = is_client ? 0 : 1;
	s->bell = s->fd_shown = sock_fd;
	/* What the program would read back from kernel TCP, then ours, on a
	 * TCP socket (the tests' unix socket pairs have no keepalive).
	 * System calls, not libc's: rb2-run's own would keep them from the
	 * kernel. */
	s->rm->live = is_tcp(sock_fd);
	for (unsigned int i = 0; s->rm->live && i < RTE_DIM(liveness); i++) {
		socklen_t l = sizeof(int);

		if (syscall(SYS_getsockopt, sock_fd, liveness[i].level, liveness[i].name,
			    &s->rm->app_opt[i], &l) != 0 ||
		    syscall(SYS_setsockopt, sock_fd, liveness[i].level, liveness[i].name,
			    &liveness[i].val, sizeof(int)) != 0) {
			ret = -errno;
			goto fail;
		}
	}
	snprintf(peer, sizeof(peer), "fd:%d", sock_fd);
	/* Over the socket, the three queues in one exchange (one round trip
	 * over verbs), in one order on both ends: "up", "down", control. */
	mine = (typeof(mine)){ (uint64_t)(uintptr_t)s->ctl, s->rm->mr.rkey, 0x72623263 };
	ctl = (struct rb2_xport_exch){
		.qp = s->rm->qp, .role = is_client ? RB2_XPORT_ACTIVE : RB2_XPORT_PASSIVE,
		.blob = &mine, .len = sizeof(mine), .peer_blob = &theirs,
		.peer_cap = sizeof(theirs) };
	ret = rb2_chan_connect_both(s->tx, s->rx, is_client, peer, &ctl, 1, timeout_ms);
	if (ret != 0)
		goto fail;
	if (ctl.peer_len != (int)sizeof(theirs) || theirs.magic != mine.magic) {
		ret = -EPROTO;
		goto fail;
	}
	if ((ret = remote_attach(s, theirs.addr, theirs.rkey)) < 0)
		goto fail;
	remote_learn_wake_fd(s);
	s->st.connect_ns = mono_ns() - t0;
	return 0;
fail:
	rb2_stream_close(s);
	return ret;
}

struct rb2_stream *
rb2_stream_open_remote(struct rb2_xport *xp, int is_client, int sock_fd, unsigned int timeout_ms)
{
	/* Named by role: the two ends may share an arena (a test's, made
	 * before its fork). */
	struct rb2_stream *s = make_remote(xp, is_client ? 'c' : 's');
	int ret;

	if (s == NULL)
		return NULL;
	ret = rb2_stream_join_remote(s, is_client, sock_fd, timeout_ms);
	if (ret < 0) {
		errno = -ret;
		return NULL;
	}
	return s;
}

int
rb2_stream_pair_remote(struct rb2_xport *xp, int bell_a, int bell_b, struct rb2_stream **a,
		       struct rb2_stream **b)
{
	struct rb2_stream *c = remote_new(xp, 'c'), *v = remote_new(xp, 's');
	int ret = -ENOMEM;

	if (c == NULL || v == NULL)
		goto fail;
	c->me = 0;
	c->bell = c->fd_shown = bell_a;
	v->me = 1;
	v->bell = v->fd_shown = bell_b;
	if ((ret = rb2_chan_pair(c->tx, v->rx)) < 0 || (ret = rb2_chan_pair(v->tx, c->rx)) < 0 ||
	    (ret = rb2_xport_qp_connect_local(c->rm->qp, v->rm->qp)) < 0 ||
	    (ret = remote_attach(c, (uint64_t)(uintptr_t)v->ctl, v->rm->mr.rkey)) < 0 ||
	    (ret = remote_attach(v, (uint64_t)(uintptr_t)c->ctl, c->rm->mr.rkey)) < 0)
		goto fail;
	remote_learn_wake_fd(c);
	remote_learn_wake_fd(v);
	*a = c;
	*b = v;
	return 0;
fail:
	if (c != NULL)
		rb2_stream_close(c);
	if (v != NULL)
		rb2_stream_close(v);
	return ret;
}

/* Our sender published: the count a sleeping reader READs across hosts,
 * before our look at its flag (ring_if()'s fence), and its bell. */
static void
published(struct rb2_stream *s)
{
	if (s->rm != NULL)
		note_published(s);
	bump(&s->ctl->by[s->me].pub);
	ring_reader(s, s->me);
}

int
rb2_stream_batch(struct rb2_stream *s, int on)
{
	if (s->rm == NULL || !(rb2_xport_caps(s->rm->xp) & RB2_XPORT_CAP_IMM))
		return -ENOTSUP;
	if (!on && s->rm->held)
		(void)rb2_stream_flush(s);
	s->rm->batch = on != 0;
	return 0;
}

int
rb2_stream_flush(struct rb2_stream *s)
{
	int f;

	if (s->rm == NULL || !s->rm->held)
		return 0;
	s->st.flushes++;
	/* Not batching: stream_admit() admits. What waits for the reader's
	 * credits stays held, for a wait to sleep on (rb2_stream_sleep_events()). */
	f = rb2_tx_flush_or_defer(s->tx);
	s->rm->held = f == 1;
	published(s);
	if (f < 0)
		(void)channel_dead(s, f);
	return f < 0 ? f : 0;
}

int
rb2_stream_held(const struct rb2_stream *s)
{
	return s->rm != NULL && s->rm->held;
}

ssize_t
rb2_stream_send(struct rb2_stream *s, const struct iovec *iov, int iovcnt)
{
	size_t total = 0, left = 0;
	int i = 0, ret = 0;
	size_t ioff = 0;

	for (int k = 0; k < iovcnt; k++)
		left += iov[k].iov_len;
	if (s->wr_shut || peer_reset(s))
		return -EPIPE;
	if (s->dead)
		return dead_told(s, -EPIPE);
	if (peer_closed(s)) {
		/* As TCP: the first write after the peer closed is taken (and
		 * answered with a reset), the next ones fail. */
		if (s->reset)
			return -EPIPE;
		s->reset = 1;
		return (ssize_t)left;
	}
	while (left > 0) {
		uint32_t len = (uint32_t)RTE_MIN(left, (size_t)RB2_STREAM_CHUNK);
		uint8_t *slot;
		uint32_t done = 0;

		/* A big write that does not fit whole goes in what fits, down
		 * to one byte: whenever rb2_stream_poll() says POLLOUT (a byte
		 * fits), a send takes something, or a writer would spin. */
		while ((ret = rb2_tx_reserve(s->tx, len, (void **)&slot)) == -ENOBUFS && len > 1)
			len /= 2;
		if (ret < 0)
			break;
		while (done < len) {            /* gather from the iovecs */
			size_t n = RTE_MIN((size_t)(len - done), iov[i].iov_len - ioff);

			rb2_msg_copy(slot + done, (const uint8_t *)iov[i].iov_base + ioff, n);
			done += (uint32_t)n;
			ioff += n;
			if (ioff == iov[i].iov_len) {
				i++;
				ioff = 0;
			}
		}
		rb2_tx_commit(s->tx, len);
		total += len;
		left -= len;
	}
	if (channel_dead(s, ret) && total == 0)
		return dead_told(s, -EPIPE);
	if (total > 0) {
		int f;

		s->st.bytes_out += total;
		if (s->rm != NULL && s->rm->batch) {
			s->rm->batching = 1;
			f = rb2_tx_flush_or_defer(s->tx);
			s->rm->batching = 0;
			if (f == 1) {
				/* Held: it goes with the next write, or
				 * rb2_stream_flush(). */
				s->rm->held = 1;
				s->st.held++;
				return (ssize_t)total;
			}
			s->rm->held = 0;
		} else {
			f = rb2_tx_flush(s->tx);
		}
		published(s);
		if (f < 0 && channel_dead(s, f))
			return dead_told(s, -EPIPE);
		if (f < 0)
			return f;
		return (ssize_t)total;
	}
	/* No room: what was held goes now, or the reader never frees any. */
	if (ret == -ENOBUFS && s->rm != NULL && s->rm->held)
		(void)rb2_stream_flush(s);
	if (ret == -ECONNRESET) {
		/* The peer's process is gone: its sockets closed with it. */
		if (s->reset)
			return -EPIPE;
		s->reset = 1;
		return (ssize_t)left;
	}
	return ret == -ENOBUFS ? -EAGAIN : ret;
}

/* The peer shut its direction down, and everything it sent is read. */
static int
at_eof(struct rb2_stream *s)
{
	struct rb2_msg m;

	if (s->rm != NULL) {
		uint64_t v;

		/* Across hosts the end is the peer's mark, in order behind its
		 * data: a close sends it, and so does an exit under rb2-run
		 * (rb2_stream_end_at_exit()). Without it, the kernel socket's
		 * FIN (the peer's process ended) is the end once nothing more
		 * is on its way: the FIN may overtake the last WRITEs, so ask
		 * the peer what it sent. If its queue is gone with its
		 * process, nobody can say whether all it wrote is here:
		 * writes held for credits, or never sent by its NIC, went
		 * with it. A clean end would pass that loss off as the whole
		 * stream, so it is a reset, said once (the kernel, which
		 * keeps a dead process's bytes, would give a FIN). */
		if (s->rm->eof)
			return 1;
		if (s->dead || s->cut || !s->peer_gone || rb2_rx_peek_burst(s->rx, &m, 1) != 0)
			return 0;
		if (read_peer(s, &s->ctl->by[!s->me].published, &v, RB2_STREAM_GONE_MS) < 0) {
			s->cut = 1;
			fprintf(stderr, "rb2-run: pid %d: fd %d: the process on the other host "
				"ended without the end of its bytes, and its queues went with it: "
				"what it wrote may not all be here; the connection is reset\n",
				(int)getpid(), s->fd_shown);
			return 0;
		}
		if (v <= arrived(s)) {
			s->rm->eof = 1;      /* once: the READ is not asked again */
			return 1;
		}
		return 0;
	}
	if (!s->peer_gone && !atomic_load_explicit(&s->ctl->shut[!s->me], memory_order_acquire))
		return 0;
	/* It shut down after its last publication: look once more. */
	return rb2_rx_peek_burst(s->rx, &m, 1) == 0;
}

ssize_t
rb2_stream_recv(struct rb2_stream *s, const struct iovec *iov, int iovcnt, int peek)
{
	struct rb2_msg m[32];
	size_t total = 0, ioff = 0;
	uint32_t off = s->off;
	unsigned int released = 0;
	int n, i = 0, marked = 0;

	/* The peer closed with our bytes unread: as TCP's RST, one read fails
	 * with ECONNRESET, and what it had sent is dropped; then the end. */
	if (peer_reset(s))
		return reset_told(s, peek);
	while (i < iovcnt && iov[i].iov_len == 0)
		i++;
	if (i == iovcnt)
		return 0;
	/* Rounds of up to 32 messages: a peek shows what the receiver last
	 * saw of the tail, and looks again only once that is read, so one
	 * read takes what arrived meanwhile too, as the kernel's does. */
	for (;;) {
		unsigned int done_msgs = 0;

		n = rb2_rx_peek_burst(s->rx, m, 32);
		if (n <= 0)
			break;
		for (int k = 0; k < n && i < iovcnt; k++) {
			uint32_t mlen = rb2_msg_len(&m[k]);

			if (s->rm != NULL && rb2_msg_marked(&m[k])) {
				/* The peer's end, behind its last byte. */
				marked = 1;
				if (!peek) {
					s->rm->eof = 1;
					done_msgs++;
				}
				break;
			}

			while (off < mlen && i < iovcnt) {
				size_t c = RTE_MIN((size_t)(mlen - off), iov[i].iov_len - ioff);

				rb2_msg_copy((uint8_t *)iov[i].iov_base + ioff,
					     (const uint8_t *)m[k].data + off, c);
				off += (uint32_t)c;
				ioff += c;
				total += c;
				if (ioff == iov[i].iov_len) {
					i++;
					ioff = 0;
					while (i < iovcnt && iov[i].iov_len == 0)
						i++;
				}
			}
			if (off < mlen)
				break;               /* the buffer is full mid-message */
			done_msgs++;
			off = 0;
		}
		if (peek)
			break;
		s->off = off;
		if (done_msgs > 0) {
			rb2_rx_release_burst(s->rx, m, done_msgs);
			released += done_msgs;
		}
		if (i == iovcnt || done_msgs < (unsigned int)n || marked)
			break;               /* full, stopped mid-message, or the end */
	}
	if (released > 0) {
		/* The writer learns of freed room from the head the receiver
		 * stores when a look finds the ring drained (lazy head: no push
		 * until gamma slots). So look once more, which stores it if
		 * drained, and only then wake a writer short of room: woken
		 * first, it could read the old head and sleep for good. */
		if (n > 0 && !marked)
			(void)rb2_rx_peek_burst(s->rx, m, 1);
		if (s->rm != NULL) {
			/* What a writer short of room READs: before our look at
			 * its flag. */
			s->rm->msgs_freed += released;
			atomic_store_explicit(&s->ctl->by[s->me].freed, s->rm->msgs_freed,
					      memory_order_release);
		}
		bump(&s->ctl->by[s->me].rel);
		ring_writer(s, !s->me);
	}
	if (total > 0) {
		if (!peek)
			s->st.bytes_in += total;
		return (ssize_t)total;
	}
	if (marked || (s->rm != NULL && s->rm->eof))
		return 0;
	if (channel_dead(s, n))
		return dead_told(s, 0);
	if (n == 0 || n == -ECONNRESET) {
		if (at_eof(s))
			return 0;
		if (peer_reset(s))
			return reset_told(s, peek);  /* at_eof() found the end cut */
		/* -ECONNRESET: the peer's process is gone and we read all it
		 * sent: the end, as the kernel's FIN when a process exits with
		 * its sockets open. Shut down for reading, a read with nothing
		 * there is the end too, as the kernel's (what comes later is
		 * still read, as there). */
		return n == 0 && !atomic_load_explicit(&s->rd_shut, memory_order_relaxed) ?
		       -EAGAIN : 0;
	}
	return at_eof(s) ? 0 : n;
}

size_t
rb2_stream_nread(struct rb2_stream *s)
{
	/* A message takes a slot at least: room for every one published. */
	struct rb2_msg *m = s->rm != NULL ? s->rm->scratch : atomic_load(&s->scratch);
	unsigned int max = s->rm != NULL ? RB2_STREAM_REMOTE_SLOTS : RB2_STREAM_SLOTS;
	size_t bytes = 0;
	int n;

	if (m == NULL) {
		struct rb2_msg *none = NULL;

		m = calloc(RB2_STREAM_SLOTS, sizeof(*m));
		if (m == NULL)
			return 0;     /* no memory: nothing counted, nothing lost */
		if (!atomic_compare_exchange_strong(&s->scratch, &none, m)) {
			free(m);      /* another thread's came first */
			m = none;
		}
	}

	/* Everything published, not only what the last read saw: nginx
	 * reads exactly FIONREAD's count after a full read, then waits for
	 * the next edge, which never comes if the count fell short. */
	rb2_rx_look_again(s->rx);
	n = rb2_rx_peek_burst(s->rx, m, max);
	for (int k = 0; k < n; k++)
		bytes += rb2_msg_len(&m[k]);
	return bytes > s->off ? bytes - s->off : 0;
}

int
rb2_stream_poll(struct rb2_stream *s)
{
	struct rb2_msg m;
	void *slot;
	int ev = 0, n, w;

	if (peer_reset(s))
		return reset_events(s);
	if (s->dead)
		return POLLIN | POLLOUT | POLLHUP | (s->dead_told ? 0 : POLLERR);
	if (s->rm != NULL && s->rm->mark_pending)
		(void)try_mark(s);
	n = rb2_rx_peek_burst(s->rx, &m, 1);

	if (n > 0)
		ev |= POLLIN | (s->rm != NULL && rb2_msg_marked(&m) ? POLLRDHUP : 0);
	else if (n < 0)
		ev |= at_eof(s) || n == -ECONNRESET ? POLLIN | POLLRDHUP : POLLIN | POLLERR | POLLHUP;
	else if (at_eof(s) || atomic_load_explicit(&s->rd_shut, memory_order_relaxed))
		ev |= POLLIN | POLLRDHUP;
	if (s->cut)
		return reset_events(s);          /* at_eof() found the end cut */
	/* A write fails at once. Both ways shut (POLLHUP) once the peer's end
	 * is here: across hosts, its FIN or its closed word may overtake
	 * the last WRITEs, and a reader must wait for them. */
	if (peer_closed(s))
		ev |= POLLOUT | (s->wr_shut && s->rm == NULL ? POLLHUP : 0);
	else if (!s->wr_shut && (w = rb2_tx_reserve(s->tx, 1, &slot)) != -ENOBUFS)
		ev |= POLLOUT | (w < 0 ? POLLERR : 0);     /* reserving again returns it */
	if (s->wr_shut && (ev & POLLRDHUP))
		ev |= POLLHUP;
	return ev;
}

void
rb2_stream_edges(const struct rb2_stream *s, uint32_t *in, uint32_t *out)
{
	if (s->rm != NULL) {
		struct rb2_tx_ptrs tp;
		struct rb2_rx_ptrs rp;
		uint32_t gone = (uint32_t)s->peer_gone +
			atomic_load_explicit(&s->ctl->closed[!s->me], memory_order_acquire);

		/* Across hosts, from what arrived here: the peer's tail as our
		 * receiver last saw it (the mark is a message too), the head as
		 * our sender last learnt it. */
		rb2_tx_pointers(s->tx, &tp);
		rb2_rx_pointers(s->rx, &rp);
		*in = (uint32_t)rp.local_tail + gone;
		*out = (uint32_t)tp.local_head + gone;
		return;
	}
	*in = atomic_load_explicit(&s->ctl->by[!s->me].pub, memory_order_acquire);
	*out = atomic_load_explicit(&s->ctl->by[!s->me].rel, memory_order_acquire);
}

/* Across hosts: the flags are WRITEs into the peer's copy, each followed
 * by a READ of what the peer counts (see struct stream_remote). */
static int
remote_want(struct rb2_stream *s, int events)
{
	struct stream_remote *r = s->rm;
	int soon = 0, held;
	uint64_t v;

	s->st.sleeps++;
	/* A publication of ours that waits for the peer's credits goes out
	 * only when we look again, or both ends could wait on each other
	 * (the peer for that data, we for room or for its answer). The
	 * credits' return rings our sender (rb2_tx_wait_arm()): a wait that
	 * asks for it (rb2_stream_sleep_events()) sleeps until then; one
	 * that does not, or a sender that cannot sleep, looks again. */
	held = rb2_tx_flush_or_defer(s->tx) == 1;
	if (held && (!(events & (POLLOUT | RB2_STREAM_HELD)) ||
		     !(rb2_xport_caps(r->xp) & RB2_XPORT_CAP_IMM)))
		return events;
	if (events & POLLIN) {
		struct rb2_xport_doorbell db;
		/* The data wakes us: no word to the peer. */
		int ret = rb2_rx_wait_arm(s->rx, &db);

		if (ret == 0) {
			r->wake_fd = db.fd;
			atomic_fetch_add(&r->rx_armed, 1);
		} else if (ret != -ENOTSUP) {
			soon |= POLLIN;          /* there already, or the channel failed */
		} else if (flag_then_read(s, &s->ctl->rd_sleeps[!s->me], 1,
					  &s->ctl->by[!s->me].published, &v) < 0 ||
			   v > arrived(s)) {
			/* No completions here (shm): a flag, then the count;
			 * in flight, it comes without a bell. */
			soon |= POLLIN;
		}
	}
	if ((events & POLLOUT) || (held && (events & RB2_STREAM_HELD))) {
		struct rb2_xport_doorbell db;
		/* The reader's head push, or its return of credits, wakes us:
		 * no word to the peer. */
		int ret = rb2_tx_wait_arm(s->tx, &db);

		if (ret == 0) {
			r->room_fd = db.fd;
			atomic_fetch_add(&r->tx_armed, 1);
		} else if (ret == -EAGAIN && !(events & POLLOUT)) {
			/* Held alone: out now, nothing to wait for here. */
		} else if (ret != -ENOTSUP) {
			soon |= POLLOUT;         /* room, or the channel failed */
		} else if (flag_then_read(s, &s->ctl->wr_sleeps[s->me], 1,
					  &s->ctl->by[!s->me].freed, &v) < 0) {
			soon |= POLLOUT;
		} else if (v != r->freed_known) {
			/* The reader freed room since we last asked: our
			 * sender's next head READ (lazy pull) finds it. */
			r->freed_known = v;
			soon |= POLLOUT;
		}
	}
	return soon;
}

int
rb2_stream_sleep_events(const struct rb2_stream *s, int events)
{
	if (s->rm != NULL && rb2_tx_tail(s->tx) != rb2_tx_published(s->tx))
		events |= RB2_STREAM_HELD;
	return events;
}

int
rb2_stream_want(struct rb2_stream *s, int events, uint64_t wait)
{
	/* Counted before anything is armed: a disarm that sees us here
	 * leaves what it woke for readable (disarm()). */
	if (events & POLLIN)
		atomic_fetch_add_explicit(&s->asleep[0], 1, memory_order_acq_rel);
	if (events & (POLLOUT | RB2_STREAM_HELD))
		atomic_fetch_add_explicit(&s->asleep[1], 1, memory_order_acq_rel);
	if (s->rm != NULL)
		return remote_want(s, events);
	/* The wait's name, then the flag: a ringer that sees the flag sees
	 * this name (or a later one's). */
	if (events & POLLIN) {
		atomic_store_explicit(&s->ctl->rd_wait[!s->me], wait, memory_order_relaxed);
		atomic_store_explicit(&s->ctl->rd_sleeps[!s->me], 1, memory_order_release);
	}
	if (events & POLLOUT) {
		atomic_store_explicit(&s->ctl->wr_wait[s->me], wait, memory_order_relaxed);
		atomic_store_explicit(&s->ctl->wr_sleeps[s->me], 1, memory_order_release);
	}
	s->st.sleeps++;
	/* The flag before the caller's last look (ring_if()'s other half). */
	atomic_thread_fence(memory_order_seq_cst);
	return 0;
}

int
rb2_stream_arm(struct rb2_stream *s, int events, uint64_t wait)
{
	int ev;

	ev = rb2_stream_want(s, events, wait);
	/* Not POLLRDHUP: a reader gets POLLIN with it, and a writer must
	 * not wake for the peer's half-close, or it would look at once,
	 * again and again, for the room it waits for. */
	ev |= rb2_stream_poll(s) & (events | POLLERR | POLLHUP);
	if (ev != 0)
		rb2_stream_disarm_seen(s, events);   /* no wait: nothing seen */
	return ev;
}

/* Reset the connection both ways, count what was lost, and say why. */
static void
found_foreign(struct rb2_stream *s)
{
	uint64_t rung = atomic_load_explicit(&s->ctl->by[!s->me].rung, memory_order_acquire);

	if (s->rm != NULL)
		rung = s->rm->rung_known;
	s->broken = 1;
	s->st.foreign_bytes = s->bell_bytes - rung;
	publish_word(s, &s->ctl->reset[s->me], 1);
	publish_word(s, &s->ctl->closed[s->me], 1);
	bump(&s->ctl->by[s->me].pub);
	bump(&s->ctl->by[s->me].rel);
	ring_reader(s, s->me);
	ring_writer(s, !s->me);
	fprintf(stderr, "rb2-run: pid %d: fd %d: at least %" PRIu64 " bytes came on the kernel "
		"socket under an rb2 connection, past rb2-run's calls (io_uring, a raw system "
		"call, or a program started without rb2-run's library); they cannot join the "
		"stream in order, so the connection is reset\n", (int)getpid(), s->fd_shown,
		s->st.foreign_bytes);
}

/* The bells: read them away, so that the socket and the eventfd stop
 * being readable. Each costs a system call, and a thread that sleeps on 50
 * streams disarms them all on each wake: 100 calls before it looked at
 * anything, long enough for the peer to finish its whole batch and sleep
 * too, so that the two fell into step (Redis and redis-benchmark -c 50: one
 * sleep each per 50 requests, a quarter of the rate). So on one host the
 * eventfd is read only while the peer's count of rings is ahead of what was
 * read, and the socket only when the caller's wait saw it readable
 * (rb2_stream_heard()), across hosts too (its error, keepalive's ETIMEDOUT,
 * makes it readable).
 *
 * A socket read that did not fill the buffer found every byte: no second
 * call to learn so (a bell after it makes the socket readable again, and a
 * kernel epoll entry fires anew). The socket's end is the peer's process's;
 * its error (keepalive's ETIMEDOUT, across hosts) is the peer's host's. */
static void
read_bells(struct rb2_stream *s)
{
	int heard = atomic_fetch_and_explicit(&s->heard, ~(RB2_STREAM_HEARD_SOCK |
							   RB2_STREAM_HEARD_WAKE),
					      memory_order_acquire);
	char buf[64];
	long n;

	/* Across hosts the eventfd holds only our own SHUT_RD's ring: a
	 * completion channel's wake-up (HEARD_WAKE) says nothing of it. */
	if (s->wake_efd >= 0 &&
	    (((heard & RB2_STREAM_HEARD_WAKE) && s->rm == NULL) ||
	     atomic_load_explicit(&s->ctl->by[!s->me].efd_rung, memory_order_acquire) +
	     atomic_load_explicit(&s->efd_self, memory_order_acquire) !=
	     atomic_load_explicit(&s->efd_heard, memory_order_relaxed))) {
		uint64_t v;

		if (syscall(SYS_read, s->wake_efd, &v, sizeof(v)) == (long)sizeof(v))
			atomic_fetch_add_explicit(&s->efd_heard, v, memory_order_relaxed);
	}
	if (!(heard & RB2_STREAM_HEARD_SOCK))
		return;
	do {
		n = syscall(SYS_recvfrom, s->bell, buf, sizeof(buf), MSG_DONTWAIT, NULL, NULL);
		if (n > 0) {
			s->bell_bytes += (uint64_t)n;
		} else if (n == 0 || errno == ECONNRESET) {
			s->peer_gone = 1;    /* every holder of the peer's socket closed it */
		} else if (errno != EAGAIN && errno != EINTR && !s->peer_gone) {
			s->peer_gone = 1;
			s->dead = errno;
			fprintf(stderr, "rb2-run: pid %d: fd %d: the kernel socket under the "
				"stream failed (%s): the other host stopped answering\n",
				(int)getpid(), s->fd_shown, strerror(errno));
		}
	} while (n == (long)sizeof(buf));
}

void
rb2_stream_heard(struct rb2_stream *s, int what)
{
	atomic_fetch_or_explicit(&s->heard, what, memory_order_release);
}

/* Awake (rb2_stream_disarm()); @seen: the caller's wait told of every
 * completion channel it saw readable (rb2_stream_disarm_seen()).
 *
 * Two threads of the program may sleep on one stream (two polls, or a
 * blocking recv beside an epoll): on the same fds, which the kernel wakes
 * together. Each looks at its fds again before it returns; had the first
 * read the bell away by then, the second would sleep on, though there is
 * data for it, as the kernel's second waiter on a TCP socket never does.
 * So while another reader sleeps here and there is something to read
 * (or an end, or an error), the bell stays readable: the others return,
 * and the last of them reads it. The stream is readable then, so no
 * wait arms again meanwhile and none loops on the bell: a wait that
 * finds data returns before it sleeps. Once the data is read, the next
 * disarm reads the bell, and a waiter still asleep sleeps on, as it would
 * on TCP. The sleep flags likewise stay up, for a bell to come, while a
 * waiter of their direction sleeps. */
static void
disarm(struct rb2_stream *s, int events, int seen)
{
	int err = errno;         /* the caller's wait's errno (EINTR) survives */
	int rx_left = (events & POLLIN) ?
		atomic_fetch_sub_explicit(&s->asleep[0], 1, memory_order_acq_rel) - 1 :
		atomic_load_explicit(&s->asleep[0], memory_order_acquire);
	int tx_left = (events & (POLLOUT | RB2_STREAM_HELD)) ?
		atomic_fetch_sub_explicit(&s->asleep[1], 1, memory_order_acq_rel) - 1 :
		atomic_load_explicit(&s->asleep[1], memory_order_acquire);
	int spare = rx_left > 0 && (rb2_stream_poll(s) & (POLLIN | POLLERR | POLLHUP));
	/* A completion channel an epoll set reported (edge-triggered: once)
	 * is read by whoever heard it, armed or not (unless spared): its
	 * event, left there with nobody to read it, would stand for an arm
	 * the device no longer holds (rb2_rx_wait_drain()), and the next
	 * sleep would never be woken. Each bit is taken by one disarm
	 * (read_bells() takes the others). */
	int heard = atomic_fetch_and_explicit(&s->heard,
					      ~((spare ? 0 : RB2_STREAM_HEARD_RX_EDGE) |
						RB2_STREAM_HEARD_TX_EDGE),
					      memory_order_acquire);

	if (spare)
		heard &= ~RB2_STREAM_HEARD_RX_EDGE;
	if (s->rm != NULL) {
		/* Our flags live in the peer's copy. */
		/* An armed half whose channel the wait did not see readable
		 * reads nothing (seen): a system call saved per idle stream;
		 * nor does one that spares it for another reader. */
		if ((events & POLLIN) && atomic_load(&s->rm->rx_armed) > 0) {
			atomic_fetch_sub(&s->rm->rx_armed, 1);
			if (spare || (seen && !(heard & RB2_STREAM_HEARD_RX_EDGE)))
				rb2_rx_wait_leave(s->rx);
			else
				rb2_rx_wait_done(s->rx);
		} else {
			if ((events & POLLIN) && s->rm->wake_fd < 0 && rx_left == 0)
				(void)flag_then_read(s, &s->ctl->rd_sleeps[!s->me], 0, NULL, NULL);
			if (heard & RB2_STREAM_HEARD_RX_EDGE)
				rb2_rx_wait_drain(s->rx);
		}
		if ((events & (POLLOUT | RB2_STREAM_HELD)) && atomic_load(&s->rm->tx_armed) > 0) {
			atomic_fetch_sub(&s->rm->tx_armed, 1);
			if (seen && !(heard & RB2_STREAM_HEARD_TX_EDGE))
				rb2_tx_wait_leave(s->tx);
			else
				rb2_tx_wait_done(s->tx);
		} else {
			if ((events & POLLOUT) && tx_left == 0)
				(void)flag_then_read(s, &s->ctl->wr_sleeps[s->me], 0, NULL, NULL);
			if (heard & RB2_STREAM_HEARD_TX_EDGE)
				rb2_tx_wait_drain(s->tx);
		}
	} else {
		/* An exchange: a ringer that spared us its bell (ring_if())
		 * published before its exchange, which ours then follows, so
		 * the caller's look after this sees what it published. While
		 * another waiter sleeps the flag stays up for its bell, and a
		 * load orders our look the same way. */
		if ((events & POLLIN) && rx_left == 0)
			(void)atomic_exchange_explicit(&s->ctl->rd_sleeps[!s->me], 0,
						       memory_order_acq_rel);
		if ((events & POLLOUT) && tx_left == 0)
			(void)atomic_exchange_explicit(&s->ctl->wr_sleeps[s->me], 0,
						       memory_order_acq_rel);
		atomic_thread_fence(memory_order_acquire);
	}
	/* One host's eventfd serves both directions, and the socket both
	 * too: neither is read while spared. */
	if (spare) {
		errno = err;
		return;
	}
	read_bells(s);
	/* More than the peer rang: someone wrote on the kernel socket past
	 * rb2-run's calls, and those bytes cannot join the stream in order.
	 * Across hosts the peer's count is READ, and only then: the peer
	 * counts a bell before it sends it, so the READ of a bell that came
	 * counts it. */
	if (s->rm != NULL) {
		uint64_t v;

		if (!s->broken && s->bell_bytes > s->rm->rung_known &&
		    read_peer(s, &s->ctl->by[!s->me].rung, &v, RB2_STREAM_CTL_MS) == 0) {
			s->rm->rung_known = v;
			if (s->bell_bytes > v)
				found_foreign(s);
		}
	} else if (!s->broken &&
		   s->bell_bytes > atomic_load_explicit(&s->ctl->by[!s->me].rung,
							memory_order_acquire)) {
		found_foreign(s);
	}
	errno = err;
}

void
rb2_stream_disarm(struct rb2_stream *s, int events)
{
	disarm(s, events, 0);
}

void
rb2_stream_disarm_seen(struct rb2_stream *s, int events)
{
	disarm(s, events, 1);
}

/* A thread of ours asleep reading (a blocking recv, a poll or an epoll set
 * waiting for POLLIN) wakes at once, as the kernel wakes it for TCP's
 * SHUT_RD: a common way to stop a reader thread. We ring our own eventfd:
 * on one host every such wait sleeps on it. Across hosts the readers sleep
 * on the data's completion channel, which only the device rings, so a
 * blocking recv or a poll holds this eventfd beside it
 * (rb2_stream_shut_fd()), and the library pokes the epoll sets that hold
 * the connection. Seq-cst: the flag before our look at the sleepers, as a
 * sleeper's count before its last look at the flag (rb2_stream_want(),
 * then rb2_stream_arm()'s look). */
void
rb2_stream_shutdown_rd(struct rb2_stream *s)
{
	static const uint64_t one = 1;

	atomic_store_explicit(&s->rd_shut, 1, memory_order_seq_cst);
	if (s->wake_efd < 0 || atomic_load_explicit(&s->asleep[0], memory_order_seq_cst) == 0)
		return;
	/* Counted first: read_bells() reads the eventfd while the rings it
	 * knows of are ahead of what it read. */
	atomic_fetch_add_explicit(&s->efd_self, 1, memory_order_release);
	(void)syscall(SYS_write, s->wake_efd, &one, sizeof(one));
}

void
rb2_stream_shutdown_wr(struct rb2_stream *s)
{
	if (s->wr_shut)
		return;
	rb2_tx_flush(s->tx);
	s->wr_shut = 1;
	if (s->rm != NULL) {
		/* Across hosts the end goes in the ring, behind the data. */
		if (s->rm->peer_ctl == 0)
			return;              /* never connected */
		s->rm->mark_pending = 1;
		(void)try_mark(s);
		return;
	}
	/* Release: every byte published before the flag. */
	atomic_store_explicit(&s->ctl->shut[s->me], 1, memory_order_release);
	bump(&s->ctl->by[s->me].pub);
	/* A reader asleep must wake to see the end. */
	ring_reader(s, s->me);
}

/* Across hosts: asleep until the reader frees room or returns credits
 * (rb2_tx_wait_arm()), at most @p us. @return 0 (woken, or timed out),
 * -EAGAIN (room, and nothing held: nothing to wait for), or the channel's
 * error. */
static int
tx_sleep(struct rb2_stream *s, unsigned int us)
{
	struct rb2_xport_doorbell db;
	int ret = rb2_tx_wait_arm(s->tx, &db);

	if (ret == 0) {
		(void)rb2_xport_doorbell_wait(&db, 1, us);
		rb2_tx_wait_done(s->tx);
	} else if (ret == -ENOTSUP) {
		usleep(RTE_MIN(us, 1000u));  /* no doorbell for the sender */
		ret = 0;
	}
	return ret;
}

/* Across hosts, closing with writes that wait for the reader's credits: as
 * kernel TCP goes on sending after a close, wait for them while the reader
 * reads, asleep until its return of credits rings (rb2_tx_wait_arm()). A
 * reader that takes nothing for RB2_STREAM_LINGER_MS is given up on, and
 * so is any once the cycle count passes @until (0: no such bound). */
static void
linger(struct rb2_stream *s, uint64_t until)
{
	uint64_t hz = rte_get_timer_hz(), pub = rb2_tx_published(s->tx);
	uint64_t last = rte_get_timer_cycles();

	while (!peer_closed(s) && rb2_tx_tail(s->tx) != rb2_tx_published(s->tx)) {
		uint64_t now = rte_get_timer_cycles(), us = 100000;
		int ret;

		if (rb2_tx_published(s->tx) != pub) {
			pub = rb2_tx_published(s->tx);
			last = now;
		} else if (now - last > hz * RB2_STREAM_LINGER_MS / 1000) {
			break;
		}
		if (until != 0 && now >= until)
			break;
		if (until != 0)
			us = RTE_MIN(us, (until - now) * 1000000 / hz + 1);
		ret = tx_sleep(s, (unsigned int)us);
		if (ret < 0 && ret != -EAGAIN)
			break;                   /* the channel failed */
		if (rb2_tx_flush_or_defer(s->tx) < 0)
			break;
	}
}

/* Across hosts, connected: rb2_stream_shutdown_wr() without its flushes'
 * wait for a credit. The held writes and the end go as far as the reader's
 * credits and room let them now; the rest is the close's to wait for. */
static void
shut_wr_now(struct rb2_stream *s)
{
	if (!s->wr_shut) {
		s->wr_shut = 1;
		s->rm->mark_pending = 1;
	}
	if (peer_closed(s))
		return;
	(void)put_mark(s, 0);
	(void)rb2_tx_flush_or_defer(s->tx);
	published(s);
}

/*
 * What a close sends the peer (rb2_stream_close(), rb2_stream_end_at_exit(),
 * rb2_stream_close_step()): the end behind the last byte written, or a
 * reset where bytes cannot be delivered; the closed word. Across hosts the
 * waits for room and credits end at @until (cycles; 0: the mark waits a
 * second, the writes RB2_STREAM_LINGER_MS without progress); @waited names
 * that wait in the message of a reset. Once per stream, by send_close().
 * @return 0, or -ETIMEDOUT: some writes did not go (the peer is told of a
 * reset).
 */
static int
close_put(struct rb2_stream *s, uint64_t until, const char *waited)
{
	struct rb2_msg m;
	int ret = 0;

	s->close_sent = 1;
	if (s->tx != NULL && until != 0 && s->rm != NULL && s->rm->peer_ctl != 0)
		shut_wr_now(s);              /* no wait past @until for a credit */
	else if (s->tx != NULL)
		rb2_stream_shutdown_wr(s);
	if (s->rm != NULL && s->rm->peer_ctl != 0) {
		/* The mark waits for room: a reader that reads gives it
		 * soon; one that does not is told of the close below. */
		uint64_t hz = rte_get_timer_hz();
		uint64_t mark_until = until != 0 ? until : rte_get_timer_cycles() + hz;

		while (!put_mark(s, until == 0) && !s->peer_gone && !peer_closed(s)) {
			uint64_t now = rte_get_timer_cycles();
			int r;

			if (now >= mark_until)
				break;
			r = tx_sleep(s, (unsigned int)((mark_until - now) * 1000000 / hz));
			if (r < 0 && r != -EAGAIN)
				break;           /* the channel failed */
		}
		linger(s, until);
		/* Published in part: the reader has not returned the credits
		 * for the rest (it read nothing for RB2_STREAM_LINGER_MS, or
		 * not enough before @until). The bytes are in its memory, but
		 * no tail says so: a reader that took our FIN for the end
		 * would miss them without a word. TCP's answer to bytes it
		 * cannot deliver is a reset: the reader's next read fails
		 * with ECONNRESET, and we say what was lost. */
		if (!peer_closed(s) && rb2_tx_tail(s->tx) != rb2_tx_published(s->tx)) {
			fprintf(stderr, "rb2-run: pid %d: fd %d: closed with the last %" PRIu64
				" ring slots of its writes unpublished: the reader on the other "
				"host did not read them in the %s; they are lost, and the "
				"connection is reset\n", (int)getpid(), s->fd_shown,
				rb2_tx_tail(s->tx) - rb2_tx_published(s->tx), waited);
			publish_word(s, &s->ctl->reset[s->me], 1);
			ret = -ETIMEDOUT;
		}
	}
	/* Bytes the peer sent that nobody read: TCP answers with a
	 * reset, not a FIN. So does an end that a fork child was to use
	 * and could not (rb2_stream_fork_reset()). */
	if ((s->rx != NULL && (s->off > 0 || rb2_rx_peek_burst(s->rx, &m, 1) > 0)) ||
	    atomic_load_explicit(&s->ctl->reset[s->me], memory_order_acquire))
		publish_word(s, &s->ctl->reset[s->me], 1);
	publish_word(s, &s->ctl->closed[s->me], 1);
	bump(&s->ctl->by[s->me].rel);
	/* A writer waiting for room learns that nobody will read. */
	ring_writer(s, !s->me);
	return ret;
}

/* After close_put() returned @put: across hosts, what the NIC has not sent
 * yet would go with the queue, so the close must wait until the peer's
 * memory holds it all. Not after a reset: the reader drops what it has,
 * and the drain's flush would wait another second for a credit. */
static int
close_needs_drain(struct rb2_stream *s, int put)
{
	return s->rm != NULL && s->rm->peer_ctl != 0 && !peer_closed(s) && put == 0;
}

/*
 * Has the peer closed its end, by its closed word or by its kernel
 * socket's FIN (which comes after its queues are gone, or with its
 * process)? Then what a close still waits to land is owed to nobody: a
 * peer that closed reads nothing more, and it destroys its queues as soon
 * as its own close is done, after which nothing of ours is acknowledged.
 * The two ends close at about the same time whenever one closes on the
 * other's end, and a fence whose packet or ACK the wire lost goes again an
 * ACK timeout later, when the peer may have closed on the end that came
 * before it: nothing answers, and our queues retry without limit
 * (retry_cnt=7), so the fence neither completes nor fails. Waited for
 * alone, it held the close for the whole RB2_POST_WAIT_MS in about one
 * round in ten of eight connections closed between the TCG guests
 * (doc/eval/rb2-run-two.md, "A close on a peer's close"). The closed word
 * comes over the control queue, not the data's, and may be lost with the
 * peer's queues: the FIN settles it.
 */
static int
drain_owed_to_nobody(struct rb2_stream *s)
{
	if (peer_closed(s))
		return 1;
	rb2_stream_heard(s, RB2_STREAM_HEARD_SOCK);
	read_bells(s);
	return peer_closed(s);
}

/* RB2_RUN_FAULT_FENCE_LOST=1 (tests only): every close's fence is taken
 * for one that never completes, as Soft-RoCE left some: the close ends by
 * the peer's close, or fails at the fence's bound (the two-guest suite's
 * close_on_the_peers_close). */
static int
fault_fence_lost(void)
{
	static _Atomic int on = -1;
	int v = atomic_load_explicit(&on, memory_order_relaxed);

	if (v < 0) {
		const char *e = getenv("RB2_RUN_FAULT_FENCE_LOST");

		v = e != NULL && strcmp(e, "1") == 0;
		atomic_store_explicit(&on, v, memory_order_relaxed);
	}
	return v;
}

/* rb2_tx_drain_start() for a close. */
static int
close_fence_post(struct rb2_stream *s)
{
	s->fence_lost_until = fault_fence_lost() ?
		rte_get_timer_cycles() + rte_get_timer_hz() * RB2_STREAM_FENCE_MS / 1000 : 0;
	return rb2_tx_drain_start(s->tx);
}

/* rb2_tx_drain_done() for a close: 1 landed, 0 not yet, or the error. */
static int
close_fence_done(struct rb2_stream *s)
{
	int ret = rb2_tx_drain_done(s->tx);

	if (s->fence_lost_until != 0 && ret == 1)
		ret = rte_get_timer_cycles() > s->fence_lost_until ? -ETIMEDOUT : 0;
	return ret;
}

/* The fence's usual round trip between the guests is 10-20 ms: the first
 * polls spin, then each nap waits for the peer's FIN on the kernel socket
 * (drain_owed_to_nobody()), at most CLOSE_DRAIN_NAP_MS. */
#define CLOSE_DRAIN_SPINS 256
#define CLOSE_DRAIN_NAP_MS 1

/* Wait for what close_put() sent to land (rb2_tx_drain_start(): a fence,
 * bounded by RB2_POST_WAIT_MS), or for the peer's close.
 * @return 0, or -ETIMEDOUT: the fence failed or came too late. */
static int
close_drain(struct rb2_stream *s)
{
	int ret = close_fence_post(s);

	for (unsigned int i = 0; ret == 0; i++) {
		ret = close_fence_done(s);
		if (ret != 0 || drain_owed_to_nobody(s))
			break;
		if (i >= CLOSE_DRAIN_SPINS) {
			struct pollfd pfd = { .fd = s->bell, .events = POLLRDHUP };

			(void)syscall(SYS_poll, &pfd, 1, CLOSE_DRAIN_NAP_MS);
		}
	}
	return ret < 0 ? -ETIMEDOUT : 0;
}

/* close_put(), then the wait for what it sent to land. @return 0, or
 * -ETIMEDOUT: some writes did not go, or the end may not have reached the
 * peer. */
static int
send_close(struct rb2_stream *s, uint64_t until, const char *waited)
{
	int ret;

	if (s->close_sent)
		return 0;
	ret = close_put(s, until, waited);
	if (close_needs_drain(s, ret))
		ret = close_drain(s);
	return ret;
}

int
rb2_stream_close_would_wait(struct rb2_stream *s)
{
	if (s->ctl == NULL || s->rm == NULL || s->rm->peer_ctl == 0 || s->tx == NULL)
		return 0;
	shut_wr_now(s);
	if (peer_closed(s))
		return 0;
	return s->rm->mark_pending || rb2_tx_tail(s->tx) != rb2_tx_published(s->tx);
}

int
rb2_stream_close_step(struct rb2_stream *s)
{
	uint64_t now = rte_get_timer_cycles(), moved;

	if (s->close_draining) {
		/* Bounded by rb2_tx_drain_done() itself (RB2_POST_WAIT_MS),
		 * which fails the sender when the fence is that late, and
		 * over once the peer closed (drain_owed_to_nobody()). */
		if (close_fence_done(s) == 0 && !drain_owed_to_nobody(s))
			return 1;
		s->close_draining = 0;
		return 0;
	}
	if (s->close_sent)
		return 0;
	if (!rb2_stream_close_would_wait(s)) {
		/* Nothing waits for the reader any more: the end goes now,
		 * and its landing is stepped like the rest, so that one
		 * close's slow fence does not hold up the closer's others. */
		if (s->ctl == NULL || s->rm == NULL || s->tx == NULL)
			return 0;
		if (close_needs_drain(s, close_put(s, 0, "10 s the close waited")) &&
		    close_fence_post(s) == 0) {
			s->close_draining = 1;
			return 2;
		}
		return 0;
	}
	/* Progress: a publication, or the end put in the ring. */
	moved = 2 * rb2_tx_published(s->tx) + !s->rm->mark_pending;
	if (s->close_moved_at == 0 || moved != s->close_moved) {
		s->close_moved = moved;
		s->close_moved_at = now;
		return 2;
	}
	if (now - s->close_moved_at <= rte_get_timer_hz() * RB2_STREAM_LINGER_MS / 1000)
		return 1;
	/* As the blocking close's linger(): the reader took nothing for
	 * that long, so what is left is lost and the reader is reset. */
	(void)send_close(s, now + 1, "10 s the close waited");
	return 0;
}

void
rb2_stream_move_bell(struct rb2_stream *s, int fd)
{
	s->bell = fd;
}

int
rb2_stream_end_at_exit(struct rb2_stream *s, unsigned int ms)
{
	if (s->ctl == NULL || s->rm == NULL)
		return 0;
	return send_close(s, rte_get_timer_cycles() + (uint64_t)ms * rte_get_timer_hz() / 1000 + 1,
			  "time its process's exit waited");
}

void
rb2_stream_close(struct rb2_stream *s)
{
	if (s->ctl != NULL)
		(void)send_close(s, 0, "10 s the close waited");
	if (s->tx != NULL)
		rb2_tx_destroy(s->tx);
	if (s->rx != NULL)
		rb2_rx_destroy(s->rx);
	if (s->rm != NULL) {
		if (s->rm->qp != NULL)
			rb2_xport_qp_destroy(s->rm->qp);
		if (s->rm->peer_ctl != 0)
			rb2_xport_peer_release(s->rm->xp, s->rm->peer_ctl, s->rm->peer_rkey);
		if (s->rm->mr.addr != NULL)
			rb2_xport_mr_free(s->rm->xp, &s->rm->mr);
		pthread_mutex_destroy(&s->rm->lock);
		free(s->rm->scratch);
		free(s->rm);
	} else {
		if (s->xp != NULL)
			rb2_xport_close(s->xp);
		if (s->ctl != NULL && atomic_fetch_sub(&s->ctl->ends, 1) == 1)
			rte_memzone_free(s->ctl_mz);
	}
	rb2_stream_forget(s);
	free(atomic_load(&s->scratch));
	free(s);
}

/* List @pid among end e's holders, once; a full list leaves it out (it is
 * then never counted out: its hold stays, as a holder's still alive). */
static void
holder_list(struct rb2_stream *s, int32_t pid)
{
	_Atomic int32_t *h = s->ctl->holders[s->me];

	for (unsigned int i = 0; i < RB2_STREAM_HOLDERS; i++)
		if (atomic_load_explicit(&h[i], memory_order_relaxed) == pid)
			return;
	for (unsigned int i = 0; i < RB2_STREAM_HOLDERS; i++) {
		int32_t free_slot = 0;

		if (atomic_compare_exchange_strong(&h[i], &free_slot, pid))
			return;
	}
}

/* Take one hold off end e's count, if any. @return whether there was one. */
static int
holds_drop(struct rb2_stream *s)
{
	/* acq_rel: the last holder's close follows what the others did. */
	uint32_t n = atomic_load_explicit(&s->ctl->forks[s->me], memory_order_acquire);

	while (n > 0 && !atomic_compare_exchange_weak_explicit(&s->ctl->forks[s->me], &n, n - 1,
							       memory_order_acq_rel,
							       memory_order_acquire))
		;
	return n > 0;
}

/* Has process @pid ended? A zombie has: its files are closed, and only its
 * parent's wait is left. A pid another process took since reads as alive,
 * so a hold is never given up for a process that lives on. */
static int
holder_dead(int32_t pid)
{
	char path[40], buf[256], *rp;
	FILE *f;
	size_t n;

	if (kill(pid, 0) != 0 && errno == ESRCH)
		return 1;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return errno == ENOENT;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	rp = strrchr(buf, ')');          /* the name may hold spaces and parentheses */
	return rp != NULL && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X');
}

/* Count out the named holders that have ended, and with @me_too, the
 * calling process's name. */
static void
holders_sweep(struct rb2_stream *s, int me_too)
{
	_Atomic int32_t *h = s->ctl->holders[s->me];
	int32_t me = (int32_t)getpid();

	for (unsigned int i = 0; i < RB2_STREAM_HOLDERS; i++) {
		int32_t pid = atomic_load_explicit(&h[i], memory_order_relaxed);

		if (pid == 0)
			continue;
		if (pid == me) {
			if (me_too)
				atomic_store_explicit(&h[i], 0, memory_order_relaxed);
			continue;
		}
		/* A holder killed by a signal never released its hold: count
		 * it out here. The slot's exchange makes one process do it. */
		if (holder_dead(pid) && atomic_compare_exchange_strong(&h[i], &pid, 0))
			(void)holds_drop(s);
	}
}

void
rb2_stream_fork_hold(struct rb2_stream *s)
{
	/* Holders that ended give their slots back first: a connection that
	 * outlives many forks (Redis's BGSAVE children) keeps naming each. */
	holders_sweep(s, 0);
	atomic_fetch_add_explicit(&s->ctl->forks[s->me], 1, memory_order_relaxed);
	holder_list(s, (int32_t)getpid());
}

void
rb2_stream_fork_child(struct rb2_stream *s, pid_t child)
{
	holder_list(s, (int32_t)child);
}

void
rb2_stream_fork_unhold(struct rb2_stream *s)
{
	(void)holds_drop(s);
}

int
rb2_stream_fork_release(struct rb2_stream *s)
{
	holders_sweep(s, 1);
	return holds_drop(s);
}

void
rb2_stream_fork_reset(struct rb2_stream *s)
{
	/* Our own copy's word: published by the close (close_put()). */
	atomic_store_explicit(&s->ctl->reset[s->me], 1, memory_order_release);
}

int
rb2_stream_fork_others(struct rb2_stream *s)
{
	holders_sweep(s, 0);
	return atomic_load_explicit(&s->ctl->forks[s->me], memory_order_acquire) > 0;
}

void
rb2_stream_forget(struct rb2_stream *s)
{
	close_fd(&s->wake_efd);
	close_fd(&s->ring_efd);
}

int
rb2_stream_take_error(struct rb2_stream *s)
{
	return s->dead ? -dead_told(s, 0) : 0;
}

void
rb2_stream_stats(const struct rb2_stream *s, struct rb2_stream_stats *st)
{
	*st = s->st;
	if (s->rm != NULL) {
		struct rb2_tx_stats ts;
		struct rb2_rx_stats rs;

		rb2_tx_stats_get(s->tx, &ts);
		rb2_rx_stats_get(s->rx, &rs);
		st->wrs = ts.wrs + rs.wrs + s->rm->ctl_wrs;
		st->doorbells = ts.chains + rs.chains + s->rm->ctl_posts;
		st->wake_requests = ts.wake_requests + rs.wake_requests;
		st->wake_reads = ts.wake_reads + rs.wake_reads;
		st->credit_waits = ts.credit_waits;
		st->held_sleeps = ts.held_sleeps;
	}
}

void
rb2_stream_dump(struct rb2_stream *s, int fd, FILE *f)
{
	struct rb2_tx_ptrs tp;
	struct rb2_rx_ptrs rp;
	struct stream_ctl *c = s->ctl;
	int d = s->me, e = !s->me;

	rb2_tx_pointers(s->tx, &tp);
	rb2_rx_pointers(s->rx, &rp);
	fprintf(f, "rb2 stream fd %d (%s): poll 0x%x; out: tail %" PRIu64 " synced %" PRIu64
		" head seen %" PRIu64 ", peer reader sleeps %u, writer (us) sleeps %u, pub %u rel %u;"
		" in: head %" PRIu64 " synced %" PRIu64 " tail seen %" PRIu64 ", reader (us) sleeps %u,"
		" peer writer sleeps %u, pub %u rel %u; shut %u/%u closed %u/%u; off %u\n",
		fd, s->me ? "server" : "client", rb2_stream_poll(s), tp.tail, tp.synced_tail,
		tp.local_head, c->rd_sleeps[d], c->wr_sleeps[d], c->by[d].pub, c->by[e].rel, rp.head,
		rp.synced_head, rp.local_tail, c->rd_sleeps[e], c->wr_sleeps[e], c->by[e].pub, c->by[d].rel,
		c->shut[d], c->shut[e], c->closed[d], c->closed[e], s->off);
}

int
rb2_stream_bell_fd(const struct rb2_stream *s)
{
	return s->peer_gone ? -1 : s->bell;
}

unsigned int
rb2_stream_own_fds(const struct rb2_stream *s, int fds[RB2_STREAM_OWN_FDS])
{
	int have[RB2_STREAM_OWN_FDS] = {
		s->bell,
		s->rm == NULL ? s->wake_efd : s->rm->wake_fd,
		s->rm == NULL ? s->ring_efd : s->rm->room_fd,
		s->rm == NULL ? -1 : s->wake_efd,
	};
	unsigned int n = 0;

	for (unsigned int i = 0; i < RB2_STREAM_OWN_FDS; i++)
		if (have[i] >= 0)
			fds[n++] = have[i];
	return n;
}

int
rb2_stream_shut_fd(const struct rb2_stream *s)
{
	return s->rm != NULL ? s->wake_efd : -1;
}

int
rb2_stream_wake_fd(const struct rb2_stream *s, int events)
{
	if (s->rm == NULL)
		return events & (POLLIN | POLLOUT) ? s->wake_efd : -1;
	return events & POLLIN ? s->rm->wake_fd :
		events & (POLLOUT | RB2_STREAM_HELD) ? s->rm->room_fd : -1;
}
