/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_CHAN_PVT_H
#define RB2_CHAN_PVT_H

/*
 * @internal What the files of lib/rb2 share; not installed.
 *
 *   rb2_chan.c            parameters, the two halves' creation (one shared
 *                         half), connection, peer checks, teardown,
 *                         introspection
 *   rb2_chan_tx.c         the sender's slow path: slot transmission, pointer
 *                         advancement, flush, waiting for room
 *   rb2_chan_rx.c         the receiver's slow path: idle, the peer's death,
 *                         head publication, completions
 *   rb2_sync_push.c       head sync: lazy push (the default)
 *   rb2_sync_pull.c       head sync: lazy pull
 *   rb2_sync_wt.c         tail sync: write-twice, with the elastic threshold
 *                         (the default)
 *   rb2_sync_imm.c        tail sync: WRITE_WITH_IMM with CQ polling (SocksDirect)
 *   rb2_sync_poll.c       tail sync: poll message (FaRM)
 *   rb2_chan_telemetry.c  /rb2/channels and /rb2/channel
 *
 * A sync policy is a const ops table (struct rb2_head_ops, rb2_tail_ops) in
 * a file of its own, as DPDK's ring keeps one private header per sync mode.
 * The inline fast path (rb2_chan.h) never calls through them: it tests one
 * flag per burst for the policies that change it (poll message's markers,
 * WRITE_WITH_IMM's completion ring); everything else happens on the slow
 * path, every beta slots at most.
 */

#include <errno.h>
#include <pthread.h>

#include <rte_cycles.h>
#include <rte_log.h>

#include "rb2_chan.h"

#define RB2_CHAN_LOG(level, fmt, ...)                                   \
	rte_log(RTE_LOG_##level, rb2_chan_logtype, "rb2_chan: " fmt "\n", \
		##__VA_ARGS__)

/* Work request ids of the channel's signaled WRs. */
#define WRID_TAIL 1
#define WRID_HEAD 2
#define WRID_PULL 3
#define WRID_SLEEP 4
#define WRID_DATA 5 /* a slot or lens[] WRITE, signaled for an admission window */
#define WRID_BULK 6 /* the receiver's READ of a lent buffer (rb2_bulk.c) */

/* Receives a sleeping receiver keeps posted for the sender's wake-ups
 * (RB2_CHAN_F_SLEEP on a transport with RB2_XPORT_CAP_IMM), re-posted as
 * they are consumed; a sender wakes a sleep once. */
#define RB2_WAKE_RECVS 4
/* Receives a sender keeps posted for its receiver's wake-ups behind head
 * pushes (RB2_CHAN_F_ROOM_WAKE), re-posted whenever it reaps. A push comes
 * per gamma slots released, and the sender reaps at every publication. */
#define RB2_ROOM_WAKE_RECVS 16

/* The receiver's shadow line (rx->head_shadow): [0] its head (the lazy push
 * WRITE's source, or what lazy pull READs), [RB2_PULL_CHECK] the head's
 * complement (lazy pull READs [0, 2) at once, so nothing else may live in
 * it), [RB2_SHADOW_CREDITS], [RB2_SHADOW_NOTICES] and [RB2_SHADOW_SLEEP]
 * the sources of those WRITEs. */
#define RB2_PULL_CHECK 1
#define RB2_SHADOW_CREDITS 2
#define RB2_SHADOW_NOTICES 3
#define RB2_SHADOW_SLEEP 4

/* How long the channel waits, reaping, for a completion of its own (room
 * in a full queue, a head READ, the sleep word's WRITE) before it fails: a
 * time, not a count of reaps, and longer than a transport's own retries,
 * which fail the queue first when the peer is gone (verbs: 7 tries of up to
 * 0.54 s at ack_timeout=17). A count of reaps is no bound in time: what a
 * reap costs depends on the transport and the machine, and a retransmission
 * waits out an ack timeout. */
#define RB2_POST_WAIT_MS 10000

/* The wait's clock, read every 1024th call (@p spins counts them): nonzero
 * once RB2_POST_WAIT_MS passed since the first read, kept in *@p until
 * (0 before it). */
static inline int
rb2_post_wait_over(uint64_t *until, uint32_t spins)
{
	uint64_t now;

	if ((spins & 1023) != 1023)
		return 0;
	now = rte_get_timer_cycles();
	if (*until == 0)
		*until = now + rte_get_timer_hz() * RB2_POST_WAIT_MS / 1000;
	return now > *until;
}
#define RB2_STATUS_CHECK_US 1000 /* idle halves ask after their peer this often */
#define RB2_GONE_GRACE_US 2000   /* a dead sender's last WRITEs may still land */

/* Region offsets beyond rb2_chan_core.h's: the sender's credit word (WRITE
 * by the receiver, WRITE_WITH_IMM sync) next to its local_head. */
#define RB2_REGION_CREDIT_OFF (RB2_REGION_PTR_OFF + 8)

/* ---- rb2_chan.c ---------------------------------------------------------- */

/* Every half of this process (telemetry walks it under the lock). A mutex,
 * not an rte_spinlock: the telemetry thread takes it too, it is never on a
 * fast path, and ThreadSanitizer sees a mutex (DPDK's x86 spinlock is
 * inline assembly, which it cannot). */
struct rb2_chan_list {
	pthread_mutex_t lock;
	TAILQ_HEAD(, rb2_chan_half) halves;
};
extern struct rb2_chan_list rb2_chan_list;

static inline struct rb2_tx *
rb2_half_tx(struct rb2_chan_half *h)
{
	return container_of(h, struct rb2_tx, h);
}

static inline struct rb2_rx *
rb2_half_rx(struct rb2_chan_half *h)
{
	return container_of(h, struct rb2_rx, h);
}

/* Offset of slot 0 in a region. */
size_t rb2_region_slots_off(uint32_t slots, uint32_t flags);
/* Offset of the completion ring (WRITE_WITH_IMM sync): after the slots. */
size_t rb2_region_cq_off(uint32_t slots, uint32_t slot_size, uint32_t flags);
/* Bytes of a region: control lines and lens[], plus the slots (and the
 * completion ring if the policy has one) when @with_ring. */
size_t rb2_region_size(const struct rb2_chan_params *p, int with_ring);

/*
 * Adaptive polling's handshake (RB2_CHAN_F_SLEEP) is Dekker's: the sender
 * publishes then reads the sleep word, the receiver writes the sleep word
 * then reads the ring, each needing a full fence between its store and its
 * load. A full fence on the sender's every publication drains its store
 * buffer of slot stores still missing in the receiver's cache (measured 4-6%
 * of a busy stream at 64 B). So the fence is made asymmetric, as liburcu
 * does: the sender only stops the compiler, and the receiver, about to sleep
 * anyway, makes every running thread of every registered process execute a
 * full barrier (membarrier(2) GLOBAL_EXPEDITED: across the processes of a
 * DPDK group too). Where the kernel lacks it, both sides fence.
 */
/* Register this process (once; at every half created with the flag). */
void rb2_sleep_fence_init(void);
/* 1: membarrier works, senders need only a compiler barrier. */
extern int rb2_sleep_fence_asym;
/* The receiver's side: a barrier on every thread, or a fence here. */
void rb2_sleep_fence_heavy(void);

/* The clock's half of rb2_chan_peer_check(), on a due call. */
int __rb2_chan_peer_check_clock(struct rb2_chan_half *h);

/* Is the peer still there? Asks the transport at most every
 * RB2_STATUS_CHECK_US, and reads the clock on every RB2_CHECK_CALLS-th
 * call only. @return 0, or why it is gone (-ECONNRESET, -EIO). */
static inline int
rb2_chan_peer_check(struct rb2_chan_half *h)
{
	return __rb2_peer_check_due(h) ? __rb2_chan_peer_check_clock(h) : 0;
}

/* ---- posting (inline: with alpha = 1 it runs per message) --------------- */

/* Reap a half's completions to make room in its queue; < 0: the half failed. */
typedef int (*rb2_reap_t)(struct rb2_chan_half *h);

/*
 * Post a chain, reaping completions while the send or completion queue is
 * full: the one post -> reap -> retry loop of the channel. A NIC completes in
 * microseconds; RB2_POST_WAIT_MS turns a wedged one into an error.
 * @return 0, or the error (the caller fails the half).
 */
static inline int
rb2_chan_post(struct rb2_chan_half *h, const struct rb2_xport_wr *w, unsigned int n,
	      rb2_reap_t reap)
{
	int ret = rb2_xport_post(h->qp, w, n);
	uint64_t until = 0;

	for (uint32_t spins = 0; unlikely(ret == -ENOSPC) && !rb2_post_wait_over(&until, spins);
	     spins++) {
		int got = reap(h);

		ret = got < 0 ? got : rb2_xport_post(h->qp, w, n);
	}
	return ret;
}

/* Fill @w with a one-word WRITE of @local to @remote_off in the peer's
 * region (a pointer, a credit), inline where the queue allows. Field by
 * field: a compound literal would be built on the stack and copied. */
static inline void
rb2_chan_word_wr(struct rb2_xport_wr *w, const struct rb2_chan_half *h, void *local,
		 uint64_t remote_off, uint64_t wr_id, uint16_t flags)
{
	w->wr_id = wr_id;
	w->local = local;
	w->remote = h->peer.addr + remote_off;
	w->len = sizeof(uint64_t);
	w->lkey = h->mr.lkey;
	w->rkey = h->peer.rkey;
	w->opcode = RB2_WR_WRITE;
	w->flags = flags | (h->qp->max_inline >= sizeof(uint64_t) ? RB2_WR_INLINE : 0);
	w->imm = 0;
}

/* Fill @w with a wake-up (RB2_WR_WAKE) into the peer's doorbell: behind a
 * publication for a sleeping receiver, behind a head push or a credit
 * return for a sender asleep for room or credits (RB2_CHAN_F_ROOM_WAKE). */
static inline void
rb2_chan_wake_wr(struct rb2_xport_wr *w, const struct rb2_chan_half *h)
{
	*w = (struct rb2_xport_wr){
		.remote = h->peer.addr + RB2_REGION_DOORBELL_OFF,
		.rkey = h->peer.rkey, .opcode = RB2_WR_WAKE,
	};
}

/* ---- rb2_chan_tx.c ------------------------------------------------------- */

/* Fail the sender with @err (once, logged with @what); reservations fail. */
void rb2_tx_fail(struct rb2_tx *tx, int err, const char *what);
/* Reap the sender's completions (tail WRITEs, head READs). */
int rb2_tx_reap(struct rb2_chan_half *h);
/* Under RB2_CHAN_F_ROOM_WAKE: flush; while a publication still waits for
 * the receiver's credits, sleep on the sender's doorbell until their return
 * rings it, at most @p timeout_us. @return 0 (woken, or timed out: look
 * again), -EAGAIN (nothing held), -ENOTSUP (no doorbell), or the channel's
 * error. */
int rb2_tx_credit_sleep(struct rb2_tx *tx, unsigned int timeout_us);
/* Post a chain on the sender's queue; a failure fails the sender. */
void rb2_tx_post(struct rb2_tx *tx, const struct rb2_xport_wr *w, unsigned int n);
/* Post the receiver's own WRs (head WRITEs, notices, sleep words, credit
 * returns, bulk READs) on its half, and count them. @return 0 or -errno. */
int rb2_rx_post(struct rb2_rx *rx, const struct rb2_xport_wr *w, unsigned int n);

/* ---- rb2_chan_rx.c ------------------------------------------------------- */

/* Fail the receiver with @err, logging why. */
void rb2_rx_fail(struct rb2_rx *rx, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Reap the receiver's completions: WRITE_WITH_IMM receives (handed to the
 * tail policy) and failed head or credit WRITEs. @return receives, or < 0. */
int rb2_rx_reap(struct rb2_chan_half *h);

/* ---- the sync policies: rb2_sync_*.c ----------------------------------- */

/* When a sender publishes (see rb2_tail_ops.tx_publish). */
enum rb2_publish {
	RB2_PUBLISH_NONE,    /* slot transmission only (every beta slots) */
	RB2_PUBLISH_ADVANCE, /* pointer advancement (every alpha): may defer */
	RB2_PUBLISH_FLUSH,   /* rb2_tx_flush(): now */
};

/* A head sync policy (§IV-A): how the receiver's head reaches the sender. */
struct rb2_head_ops {
	const char *name;
	/* Receiver: make rx->head visible to the sender. @return 0 or -errno. */
	int (*rx_publish)(struct rb2_rx *rx);
	/* Sender short of room: bring local_head up to date (optional). */
	void (*tx_refresh)(struct rb2_tx *tx);
};

/* A tail sync policy (§IV-A): how the receiver learns what was sent. */
struct rb2_tail_ops {
	const char *name;
	/* Lengths and markers are stored at commit (load/store): slot
	 * transmission does not copy lens[]. */
	int lens_at_commit;
	/* Bytes the receiver's region needs after its slots. */
	size_t region_extra;
	/* Sender, half created: set up the policy's state (optional). */
	void (*tx_init)(struct rb2_tx *tx);
	/* Receiver, half created (optional). */
	void (*rx_init)(struct rb2_rx *rx);
	/* Sender connected, the receiver's region known (optional). */
	void (*tx_attach)(struct rb2_tx *tx, void *peer_base);
	/* Receiver connected (optional). @return 0 or -errno. */
	int (*rx_attach)(struct rb2_rx *rx);
	/*
	 * Sender, right after slot transmission up to tail: publish
	 * [pub_tail, tail) as @how says, appending at most one WR to @w
	 * (load/store halves store instead). @return the WRs appended.
	 */
	unsigned int (*tx_publish)(struct rb2_tx *tx, struct rb2_xport_wr *w,
				   enum rb2_publish how);
	/* Sender, after a flush's chain was posted: see it through (optional). */
	void (*tx_flushed)(struct rb2_tx *tx);
	/* Receiver: @n receive completions of WRITE_WITH_IMM, their
	 * immediates summing to @slots (optional: others get none). */
	void (*rx_received)(struct rb2_rx *rx, unsigned int n, uint64_t slots);
};

/* Lazy pull's two halves (rb2_sync_pull.c), also RB2_CHAN_F_LAZY_HEAD's
 * fallback: the receiver stores its head (and its complement) where the
 * sender READs it; the sender READs it, @return the head READ, or @had (the
 * head it had) when the READ failed or came back torn. */
void rb2_rx_store_head(struct rb2_rx *rx);
uint64_t rb2_tx_read_head(struct rb2_tx *tx, uint64_t had);
/* Wait until everything posted has landed at the peer, without a READ: a
 * zero-length signaled WRITE, waited for (rb2_tx_drain() under
 * RB2_CHAN_F_ROOM_WAKE). Fails the sender if it does not complete. */
void rb2_tx_fence(struct rb2_tx *tx);
/* The fence's WRITE, posted and counted in pull_inflight, not waited for
 * (rb2_tx_drain_start()). @return 0, or the channel's error. */
int rb2_tx_fence_post(struct rb2_tx *tx);
#define RB2_FENCE_LATE "the fence's WRITE did not complete"

/* The sender's view of the head: what the receiver pushed (local_head), or
 * what we READ (RB2_CHAN_F_LAZY_HEAD's fallback), whichever is further.
 * The READ is kept apart because a READ that stored into local_head could
 * undo a push landing meanwhile, and wait for a push already made.
 * Acquire: pairs with the receiver's head WRITE (a release store on shm), so
 * its reads of the freed slots are done before we reuse them. */
static inline uint64_t
rb2_tx_head(const struct rb2_tx *tx)
{
	return RTE_MAX(atomic_load_explicit(tx->local_head, memory_order_acquire),
		       tx->read_head);
}

extern const struct rb2_head_ops rb2_head_push_ops;    /* rb2_sync_push.c */
extern const struct rb2_head_ops rb2_head_pull_ops;    /* rb2_sync_pull.c */
extern const struct rb2_tail_ops rb2_tail_wt_ops;      /* rb2_sync_wt.c */
extern const struct rb2_tail_ops rb2_tail_imm_ops;     /* rb2_sync_imm.c */
extern const struct rb2_tail_ops rb2_tail_poll_ops;    /* rb2_sync_poll.c */

/* The policies of a parameter set (params already checked). */
static inline const struct rb2_head_ops *
rb2_head_ops_of(const struct rb2_chan_params *p)
{
	return p->head_sync == RB2_HEAD_LAZY_PULL ? &rb2_head_pull_ops : &rb2_head_push_ops;
}

static inline const struct rb2_tail_ops *
rb2_tail_ops_of(const struct rb2_chan_params *p)
{
	return p->tail_sync == RB2_TAIL_WRITE_IMM ? &rb2_tail_imm_ops :
		p->tail_sync == RB2_TAIL_POLL_MSG ? &rb2_tail_poll_ops : &rb2_tail_wt_ops;
}

#endif /* RB2_CHAN_PVT_H */
