/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_CHAN_CORE_H
#define RB2_CHAN_CORE_H

/**
 * @file
 * RB² channel: memory layout, pointer state and the inline fast path.
 *
 * @internal Included by rb2_chan.h; do not include directly.
 *
 * Memory (the paper's Fig. 2). Both halves own one registered region of the
 * same shape; the sender's mirror RB_S is left out in load/store mode, where
 * the sender stores straight into RB_R.
 *
 * @verbatim
 *   region (64-byte lines)
 *   +0    [ptr line   ] written by the PEER: RB_R: local_tail  RB_S: local_head,
 *                       +8 credits (WRITE_WITH_IMM), +16 the receiver's notices
 *   +64   [shadow line] source of our own pointer WRITE to the peer
 *   +128  [lens[0..N) ] u32 per slot: length of the message starting there,
 *                       RB2_LEN_SKIP for wrap padding, unused inside a message
 *   +L    [slot 0 ][slot 1 ] ... [slot N-1]   S bytes each, S % 64 == 0
 *                       (RB2_CHAN_F_UNALIGNED: at +L+8, S % 8 == 0)
 *   A poll message (RB2_TAIL_POLL_MSG) ends its last slot with an 8-byte
 *   marker. With RB2_CHAN_F_LEN_IN_SLOT a message starts its first slot
 *   with an 8-byte header, [u32 length][u32 low word of the marker, or 0
 *   under a tail], and lens[] is not used:
 *                       [hdr][payload ...            ][marker]
 *
 *   Sender (four pointers, free-running u64, masked at slot access):
 *
 *     local_head      esc_tail         tail
 *        |  in flight   |  committed,    |     free      |
 *        v  or unread   v  untransmitted v               v
 *   RB_S ...[#########][##########][....][...............]...
 *                     ^
 *                 synced_tail (last pointer advancement)
 *
 *   Receiver (three pointers):
 *
 *        synced_head   head            local_tail
 *            |  read,    |   readable    |
 *            v  unpushed v               v
 *   RB_R ...[::::::::::][###############][ sent, not yet visible ]...
 * @endverbatim
 *
 * Sender (Algorithm 1 WRITEMSG, with the errata fixed): a message of k slots
 * is committed at tail (a wrap first skips to slot 0, so a message is always
 * contiguous). Then:
 *  - tail - synced_tail >= alpha: pointer advancement. Transmit
 *    [esc_tail, tail), esc_tail = synced_tail = tail; if the previous tail
 *    WRITE has completed, WRITE tail into the receiver's local_tail (the only
 *    signaled WR), behind the same doorbell; else defer it (elastic
 *    threshold).
 *  - else tail - esc_tail >= beta: slot transmission of [esc_tail, tail).
 *  - full when tail - local_head == N - 1 (the paper's "(tail+1)%N == head").
 *
 * Receiver (READMSG): reads [head, local_tail) in place; release advances
 * head; every gamma released slots, head is WRITTEN into the sender's
 * local_head (lazy push). When it finds the ring drained with head !=
 * synced_head it pushes at once (idle push), or, with RB2_CHAN_F_LAZY_HEAD
 * (the default), stores it for a sender that READs it when no push is due.
 */

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include <rte_branch_prediction.h>
#include <rte_common.h>
#include <rte_prefetch.h>

#include <rb2_xport.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Longest channel name (memzones are named "rb2r.<name>"). */
#define RB2_CHAN_NAMESIZE 24

/** The most WRs one transmission posts: 2 ranges x (lens + slots), a tail,
 * and a wake-up. */
#define RB2_TX_CHAIN_MAX 6

/** Messages a single reservation prefetches ahead (see rb2_tx_reserve_burst()). */
#define RB2_TX_PREFETCH_AHEAD 8

/** lens[] value of a slot padded away at the wrap point. */
#define RB2_LEN_SKIP UINT32_MAX
/** Poll-message sync: a lens[] entry the receiver has consumed (0 is a valid length). */
#define RB2_LEN_EMPTY (UINT32_MAX - 1)
/**
 * The sender's mark: one bit a variable-size channel carries for its user
 * beside each message's length, in lens[] (rb2_tx_commit(tx, len |
 * RB2_MSG_MARK)), as an immediate carries a word beside a WRITE. It comes
 * out in rb2_msg.len; rb2_msg_len() strips it. A channel whose sender never
 * marks never shows it; a fixed-size channel drops it (it keeps no lens[]).
 * The connection layer marks a frame that continues the previous frame's
 * connection and so needs no header (lib/conn).
 */
#define RB2_MSG_MARK (UINT32_C(1) << 31)

/** Region layout offsets. */
#define RB2_REGION_PTR_OFF 0
#define RB2_REGION_SHADOW_OFF RTE_CACHE_LINE_SIZE
#define RB2_REGION_LENS_OFF (2 * RTE_CACHE_LINE_SIZE)

/** Offset of the receiver's notices in RB_S (rb2_rx_notify()). */
#define RB2_REGION_NOTICE_OFF (RB2_REGION_PTR_OFF + 16)
/** Offset in RB_S of the receiver's sleep word (RB2_CHAN_F_SLEEP): 0 while it
 * polls; asleep, 1 + the position up to which it has seen everything (its
 * head), so the sender wakes it once it has published past that. */
#define RB2_REGION_SLEEP_OFF (RB2_REGION_PTR_OFF + 24)
/** Offset in RB_R of the receiver's doorbell (RB2_CHAN_F_SLEEP): a 32-bit
 * word the sender's transport changes to wake it (rb2_xport_wake()); in
 * RB_S, the sender's (RB2_CHAN_F_ROOM_WAKE), which the receiver's changes. */
#define RB2_REGION_DOORBELL_OFF (RB2_REGION_PTR_OFF + 32)

/**
 * Notices a receiver raises for its sender (rb2_rx_notify()), the one thing
 * that travels upstream besides the head.
 */
#define RB2_NOTICE_STOP (1u << 0) /**< stop sending and end the stream */

/** Head synchronisation policies (§IV-A). */
enum rb2_head_sync {
	RB2_HEAD_LAZY_PUSH = 0, /**< receiver WRITEs head every gamma (default) */
	RB2_HEAD_LAZY_PULL = 1, /**< sender READs head when short of room */
};

/** Tail synchronisation policies (§IV-A). */
enum rb2_tail_sync {
	RB2_TAIL_WRITE_TWICE = 0, /**< data WRITE, then tail WRITE (default) */
	RB2_TAIL_WRITE_IMM = 1,   /**< WRITE_WITH_IMM, receiver polls its CQ */
	RB2_TAIL_POLL_MSG = 2,    /**< FaRM-style marker at the message end */
};

/** Channel parameters. rb2_chan_params_init() fills the paper's defaults. */
struct rb2_chan_params {
	uint32_t slots;     /**< N: power of two, 2..2^24 */
	uint32_t slot_size; /**< S: bytes, a multiple of 64 */
	uint32_t alpha;     /**< pointer advancement threshold, slots */
	uint32_t beta;      /**< slot transmission threshold, slots */
	uint32_t gamma;     /**< lazy push threshold, slots */
	/**
	 * 0: messages of any length up to N/2 slots (lengths travel in
	 * lens[]). Otherwise a fixed-size channel: every message is msg_size
	 * bytes, at most one slot, both halves know it and no length ever
	 * crosses the link (the paper's setting: slot size = message size).
	 */
	uint32_t msg_size;
	enum rb2_head_sync head_sync;
	enum rb2_tail_sync tail_sync;
	uint32_t flags;       /**< RB2_CHAN_F_*: ablations of Table II; 0 */
	/**
	 * Admission window (RDMAbox's traffic regulator, SocksDirect's
	 * in-flight cap): how many WRs the sender may have posted and not yet
	 * seen complete; 0 (the default): no window. With one, every WR the
	 * sender posts is signaled (its completion is how it knows), and a slot
	 * transmission or pointer advancement that would exceed the window is
	 * deferred (counted), its messages accumulating into the next, larger
	 * WRITE; a flush waits for room. At least RB2_TX_CHAIN_MAX. The sender's
	 * alone: not in the descriptor. rb2_tx_admission_hook() replaces the
	 * rule. On a lane with a window (rb2_xport_lane_params.max_inflight)
	 * the window is the lane's QP's, shared by its channels, and this one
	 * is not used.
	 */
	uint32_t max_inflight;
	/**
	 * Eager publication (rb2's own; not in the paper): after a flush
	 * that found nothing to publish (the sending loop went idle), the
	 * next @c eager commits are published at once, as with alpha = 1;
	 * the ones after them batch as alpha and beta say, until the next
	 * idle flush. A sender that was idle has a receiver waiting for its
	 * next message, and batching only delays it: in a closed loop of
	 * requests, answers held to the end of the server's pass leave the
	 * client idle meanwhile (rb2-kv with 4 outstanding on shm: 1.8-1.9x the
	 * requests per second with it, doc/eval/chan.md). A sender that never
	 * idles, a stream, batches exactly as before. 0: off (the paper's
	 * batching alone, preset "rb2-noeager"); at most RB2_EAGER_MAX; or
	 * RB2_EAGER_AUTO (the default): 1 where a publication is a store
	 * (RB2_XPORT_CAP_LOADSTORE), 0 where it is a WR, since over rxe each
	 * eager publication was a tail WRITE and rb2-kv with 16 outstanding
	 * ran at 0.40x. One, not more: the first gives the waiting receiver
	 * its work, and each further one is a store into the tail's line,
	 * which the receiver polling it takes back in between, so the
	 * sender's stores behind it wait (rb2-kv with 8 to 32 outstanding
	 * ran 5-10% faster with 1 than with 4 in two A/B sessions of three,
	 * 1-3% slower at 16 and 32 in the third, and the same with 1 to 4
	 * outstanding: doc/eval/chan.md). The sender's alone: not in the
	 * descriptor.
	 */
	uint32_t eager;
	int socket_id;        /**< memory socket; SOCKET_ID_ANY: the transport's */
	unsigned int lcore_id; /**< lcore using this half; LCORE_ID_ANY: caller */
	/**
	 * Post through this lane (rb2_xport_lane.h: the channels of an lcore
	 * over one QP, one doorbell per loop pass), or NULL (the default): a
	 * QP of the half's own. The half's alone: not in the descriptor.
	 */
	struct rb2_xport_lane *lane;
};

/**
 * Ablation switches (the paper's Table II), off in every real deployment.
 * NO_ELASTIC (M4, sender only): WRITE the tail at every pointer advancement,
 * even while the previous tail WRITE is in flight.
 * UNALIGNED (M7, both halves): the slots start 8 bytes past a cache line and
 * slot_size need only be a multiple of 8, so messages sit back to back and
 * straddle cache lines, sharing them with their neighbours.
 */
#define RB2_CHAN_F_NO_ELASTIC (1u << 0)
#define RB2_CHAN_F_UNALIGNED (1u << 1)
/**
 * SLEEP (both halves; not an ablation): the receiver may sleep instead of
 * polling an idle ring (adaptive polling, rb2_rx_sleep_arm()). The sender
 * then looks, after every publication and when idle (rb2_tx_flush()), whether
 * its receiver sleeps having seen less than it published, and wakes it with
 * an RB2_WR_WAKE. Needs a transport with RB2_XPORT_CAP_WAKE (shm, verbs).
 */
#define RB2_CHAN_F_SLEEP (1u << 2)
/**
 * LAZY_HEAD (the receiver's; the default, and the "rb2" and "lean" presets):
 * push the head only every gamma slots, not also whenever the ring drains
 * (the idle push). In a ping-pong, the idle push is a WRITE per message that
 * nobody waits for. A drained receiver instead stores its head, with its
 * complement, in its own shadow line, as lazy pull does; a sender short of
 * room with fewer than gamma published slots beyond the head it has (so no
 * push may ever come) READs it. Messages keep their half ring. The flag
 * travels in the descriptor: a sender follows its receiver's.
 */
#define RB2_CHAN_F_LAZY_HEAD (1u << 3)
/**
 * LEN_IN_SLOT (both halves; variable-size channels; the "rb2", "lean" and
 * "socksdirect" presets): each message's length travels in an 8-byte header
 * at the start of its first slot, not in lens[]. A message and its length
 * are then one WRITE, or one cache line on load/store where the message
 * and its header fit 64 bytes; without it the length is a WRITE of lens[]
 * more per transmission, and on load/store a line of lens[] more for the
 * receiver to miss on.
 * - Poll message: the header's other half is the low word of the
 *   message's marker, so a header from an earlier lap never passes for
 *   this one; the message, its length and its publication (the marker)
 *   are one WRITE.
 * - A tail (write-twice, WRITE_WITH_IMM): the header is [u32 length][u32 0];
 *   the tail orders it as it orders the payload, and the receiver reads
 *   headers only below the tail, so old ones need no clearing.
 * The payload starts 8 bytes into the slot: reservations and views are
 * 8-byte aligned. No effect on a fixed-size channel (its length is known).
 */
#define RB2_CHAN_F_LEN_IN_SLOT (1u << 4)
/**
 * ROOM_WAKE (both halves; lazy push): the sender may sleep until the
 * receiver frees room (rb2_tx_wait_arm()), and nothing is READ. Every head
 * push is followed, in its chain, by an RB2_WR_WAKE into the sender's
 * doorbell word (RB_S + RB2_REGION_DOORBELL_OFF): on verbs a zero-length
 * WRITE_WITH_IMM whose receive completion raises the sender's completion
 * channel, so room wakes a writer as WRITE_WITH_IMM data wakes a reader.
 * Under WRITE_WITH_IMM tail sync a return of credits of half the entries
 * or more is followed by one too, so a sender whose publication waits for
 * credits sleeps as well. With RB2_CHAN_F_LAZY_HEAD the sender never READs the head either: gamma
 * plus the slots of the largest message must fit the ring, so that a
 * sender short of room with everything published is always owed a push.
 * A channel without READs survives what a READ may not: Soft-RoCE (Debian
 * 12's kernel) leaves a READ uncompleted under reordering on the link,
 * though its QP retries without limit. Needs RB2_XPORT_CAP_WAKE.
 */
#define RB2_CHAN_F_ROOM_WAKE (1u << 5)
/** The largest rb2_chan_params.eager. */
#define RB2_EAGER_MAX 255
/** rb2_chan_params.eager: 1 on load/store transports, 0 over WRs. */
#define RB2_EAGER_AUTO 256
/** What RB2_EAGER_AUTO is on a load/store transport. */
#define RB2_EAGER_LOADSTORE 1

/** Flags both halves must agree on (they travel in the descriptor). */
#define RB2_CHAN_F_WIRE (RB2_CHAN_F_UNALIGNED | RB2_CHAN_F_SLEEP | RB2_CHAN_F_LEN_IN_SLOT | \
			 RB2_CHAN_F_ROOM_WAKE)
/** Where the slots start in an UNALIGNED region, past the cache line. */
#define RB2_UNALIGNED_OFF 8

/**
 * Connection descriptor: the opaque blob a half sends its peer. 56 bytes, so
 * it fits rdma_cm's private data. Host byte order (both peers are x86_64).
 */
struct rb2_chan_desc {
	uint32_t magic;     /**< RB2_DESC_MAGIC */
	uint16_t version;   /**< RB2_DESC_VERSION */
	uint8_t role;       /**< 0: receiver's region, 1: sender's */
	uint8_t policy;     /**< head_sync | tail_sync << 4 */
	uint32_t slots;
	uint32_t slot_size;
	uint32_t alpha;
	uint32_t beta;
	uint32_t gamma;
	uint32_t rkey;      /**< key of the region */
	uint64_t addr;      /**< region base in the owner's address space */
	uint64_t len;       /**< region length */
	uint32_t msg_size;  /**< 0, or the fixed message size */
	uint32_t flags;     /**< RB2_CHAN_F_WIRE bits of the params */
};

#define RB2_DESC_MAGIC 0x44324252u /* "RB2D" */
#define RB2_DESC_VERSION 1

/** Counters, declared once (X-macro) for the struct, names and telemetry. */
#define RB2_TX_STATS(X)                                                        \
	X(messages, "messages committed (fixed size: transmitted)")          \
	X(bytes, "payload bytes committed (fixed size: transmitted)")          \
	X(marked, "of which messages the sender marked (RB2_MSG_MARK)")        \
	X(slot_writes, "data WRITEs posted (slot transmissions)")              \
	X(tail_writes, "tail WRITEs posted (pointer advancements)")            \
	X(deferred_tail_syncs, "tail syncs deferred by the elastic threshold") \
	X(head_reads, "head READs (lazy pull)") \
	X(torn_head_reads, "head READs refused: head and complement disagree") \
	X(cqes, "completion entries sent (WRITE_WITH_IMM sync)") \
	X(credit_waits, "tail syncs deferred: no receive-queue credit") \
	X(flushes, "explicit or idle flushes that sent something")             \
	X(eager_advances, "pointer advancements at commit after an idle flush (params.eager)") \
	X(full_events, "reservations refused: ring full") \
	X(wakeups, "sleeping receivers woken (RB2_CHAN_F_SLEEP)") \
	X(room_sleeps, "times the sender slept for room (RB2_CHAN_F_ROOM_WAKE)") \
	X(held_sleeps, "of which with a publication held: for the receiver's credits, or the admission window") \
	X(room_wakeups, "room wake-ups received (a receive completion: verbs)") \
	X(wrs, "WRs posted (each a WRITE, READ or wake-up)") \
	X(chains, "WR chains posted (a doorbell each; on a lane, the lane rings)") \
	X(signaled_wrs, "of which signaled (a completion each)") \
	X(admission_deferrals, "transmissions deferred: the admission window was full") \
	X(max_inflight_seen, "most WRs in flight at once (admission window set)") \
	X(wake_requests, "wake-ups asked of the device for its queue (verbs: CQ arms)") \
	X(wake_reads, "reads of its queue's doorbell descriptor on waking (verbs: a system call each)")

#define RB2_RX_STATS(X)                                       \
	X(messages, "messages released")                      \
	X(bytes, "payload bytes released")                    \
	X(head_pushes, "head WRITEs posted (lazy or idle push), each with a wake-up under RB2_CHAN_F_ROOM_WAKE") \
	X(idle_pushes, "of which pushed because the ring drained") \
	X(cqes, "completion entries polled (WRITE_WITH_IMM sync)") \
	X(cq_returns, "receive-queue replenishments WRITTEN back (under RB2_CHAN_F_ROOM_WAKE, half a ring or more with a wake-up)") \
	X(wrs, "WRs posted (head WRITEs, notices, sleep words, credit returns, bulk READs)") \
	X(chains, "WR chains posted (a doorbell each)") \
	X(empty_events, "polls that found the ring empty") \
	X(sleeps, "times the receiver went to sleep (RB2_CHAN_F_SLEEP)") \
	X(sleep_aborts, "sleeps called off: a message came as it said it sleeps") \
	X(wakeups, "wake-ups received (a receive completion: verbs)") \
	X(wake_requests, "wake-ups asked of the device for its queue (verbs: CQ arms)") \
	X(wake_reads, "reads of its queue's doorbell descriptor on waking (verbs: a system call each)")

#define RB2_STAT_FIELD(n, d) _Atomic uint64_t n;
/** Sender counters. Written only by the sender's lcore. */
struct rb2_tx_stats { RB2_TX_STATS(RB2_STAT_FIELD) };
/** Receiver counters. Written only by the receiver's lcore. */
struct rb2_rx_stats { RB2_RX_STATS(RB2_STAT_FIELD) };
#undef RB2_STAT_FIELD

/**
 * Add to a single-writer counter. A relaxed load and store (no lock prefix):
 * telemetry may read it concurrently and sees a whole value.
 */
#define RB2_STAT_ADD(s, f, v)                                            \
	atomic_store_explicit(&(s)->f,                                   \
		atomic_load_explicit(&(s)->f, memory_order_relaxed) + (v), \
		memory_order_relaxed)

/** The queue's counts of wake-ups asked of the device and of reads of its
 *  doorbell (rb2_xport_qp's wake_requests and wake_reads, kept by the
 *  driver's arm, done and drain), into @p s. */
#define RB2_STAT_WAKE_REQUESTS(s, qp) do {                              \
	atomic_store_explicit(&(s)->wake_requests, (qp)->wake_requests,  \
			      memory_order_relaxed);                      \
	atomic_store_explicit(&(s)->wake_reads, (qp)->wake_reads,        \
			      memory_order_relaxed);                      \
} while (0)

/**
 * Store a position (tail, pub_tail, head) that only its half's lcore writes
 * and telemetry reads: a relaxed store, the same plain store on x86.
 */
#define RB2_POS_STORE(field, v) __atomic_store_n(&(field), (v), __ATOMIC_RELAXED)
/** Read one from another thread (telemetry). */
#define RB2_POS_READ(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)

struct rb2_head_ops;
struct rb2_tail_ops;

/* Peer checks per read of the clock: idle poll loops ask on every empty
 * look, and reading the TSC each time made a third of an idle pass on a VM
 * here (rdtsc 12 ns and more). A death is still seen within
 * RB2_STATUS_CHECK_US and this many looks. */
#define RB2_CHECK_CALLS 16

/**
 * @internal The slow-path state both halves of a channel keep: identity,
 * transport, memory, peer, sync policies, failure. The fast path reads only
 * @c err (through rb2_tx_flush()).
 */
struct rb2_chan_half {
	int err;                      /**< 0, or the -errno that failed the half */
	int peer_gone;                /**< receiver: the sender's death, seen, not yet final */
	uint64_t gone_tsc;            /**< when it was seen */
	uint64_t next_check;          /**< TSC of the next peer check */
	uint32_t check_calls;         /**< peer checks asked for (the clock is
				       * read on every RB2_CHECK_CALLS-th) */
	struct rb2_xport *xp;
	struct rb2_xport_qp *qp;
	struct rb2_xport_mr mr;       /**< our region: RB_S or RB_R */
	struct rb2_chan_desc peer;    /**< the peer's descriptor */
	struct rb2_chan_params p;
	const struct rb2_head_ops *head; /**< head sync policy (lib/rb2/rb2_sync_*.c) */
	const struct rb2_tail_ops *tail; /**< tail sync policy */
	uint32_t loadstore;           /**< the transport maps the peer: stores, no WRs */
	uint32_t is_tx;               /**< 1: sender, 0: receiver */
	uint32_t peer_held;           /**< we hold the peer's region (rb2_xport_peer_hold()) */
	char name[RB2_CHAN_NAMESIZE];
	TAILQ_ENTRY(rb2_chan_half) next; /**< every half of this process */
};

/** @internal Is this empty look one that asks after the peer (every
 *  RB2_CHECK_CALLS-th)? Inline: an idle loop asks on every pass. */
static __rte_always_inline int
__rb2_peer_check_due(struct rb2_chan_half *h)
{
	return ++h->check_calls % RB2_CHECK_CALLS == 0;
}

/** The sender's half of a channel. Use from one lcore only. */
struct rb2_tx {
	/* Line 0: what reserve/commit read on every message. */
	uint8_t *slots;    /**< where payload goes: RB_S, or RB_R (load/store) */
	uint32_t *lens;    /**< lens[] of the same ring */
	uint64_t limit;    /**< tail may reach this: rb2_tx_head() + N - 1; 0 = failed */
	uint32_t mask;     /**< N - 1 */
	uint32_t slot_size;
	uint32_t max_len;  /**< largest message: N/2 slots */
	uint32_t alpha;
	uint32_t beta;
	uint32_t resv_skip; /**< slots the pending reservation skips at the wrap */
	uint32_t msg_size; /**< 0, or the fixed message size */
	uint32_t trailer;  /**< bytes a message carries besides its payload: its header (RB2_CHAN_F_LEN_IN_SLOT) and its marker (poll message) */
	uint32_t leader;   /**< RB2_CHAN_F_LEN_IN_SLOT: the header's bytes before the payload */
	uint8_t eager_left; /**< commits still to publish at once (params.eager) */
	uint8_t eager;      /**< params.eager: eager_left after an idle flush */

	/* Each pointer in its own cache line (§IV-C). */
	uint64_t tail __rte_cache_aligned;        /**< next slot to write */
	uint64_t synced_tail __rte_cache_aligned; /**< tail at last advancement */
	uint64_t esc_tail __rte_cache_aligned;    /**< first untransmitted slot */
	struct rb2_tx_stats stats __rte_cache_aligned;

	/* Slow path. */
	_Atomic uint64_t *local_head; /**< in RB_S, written by the receiver */
	_Atomic uint64_t *notices;    /**< in RB_S: the receiver's RB2_NOTICE_* */
	uint64_t *tail_shadow;        /**< source of the tail WRITE */
	uint64_t pub_tail;            /**< last tail value WRITTEN to the peer */
	uint64_t skip_at;             /**< where the last wrap padding starts (free-running) */
	uint32_t tail_inflight;       /**< signaled tail WRITEs not completed */
	uint32_t pull_inflight;       /**< head READs not completed */
	uint64_t drain_until;         /**< rb2_tx_drain_start()'s bound (TSC), or 0 */
	/* Lazy pull on load/store transports: the receiver's published head. */
	_Atomic uint64_t *peer_head_pub;
	/* The receiver's gamma if it has RB2_CHAN_F_LAZY_HEAD (we READ its
	 * head when no push is due), else 0 (it pushes when it drains); the
	 * head last READ so (rb2_tx_head()). */
	uint32_t peer_gamma;
	uint64_t read_head;
	/* WRITE_WITH_IMM sync: completion entries posted, our mirror of the
	 * ring (WRs) or the receiver's, mapped (load/store), and the
	 * receive-queue credits the receiver WRITEs back (RB_S + 8). With
	 * imm_native the entry's WRITE is a real WRITE_WITH_IMM. */
	struct rb2_cqe *cq;           /**< NULL: another tail sync */
	uint64_t cqes;
	uint32_t imm_native;          /**< the transport has RB2_XPORT_CAP_IMM */
	_Atomic uint64_t *cq_credit;
	/* Load/store transports: the receiver's lens[] and local_tail, mapped,
	 * so publishing is a memcpy and a release store, not a WR chain. */
	uint32_t *peer_lens;
	_Atomic uint64_t *peer_tail;
	/* RB2_CHAN_F_SLEEP: the receiver's sleep word (in RB_S), and the
	 * sleep we last woke it from. NULL: the receiver never sleeps. */
	_Atomic uint64_t *rx_sleep;
	uint64_t woken;
	/* RB2_CHAN_F_ROOM_WAKE: our doorbell (in RB_S), which the receiver's
	 * wake-up behind each head push changes; receives posted for those
	 * wake-ups (verbs). NULL: we never sleep for room. */
	uint32_t *room_bell;
	uint32_t wake_recvs;
	/* Admission window (params.max_inflight, 0: none): WRs posted and not
	 * seen complete, and the application's rule, if it gave one. */
	uint32_t max_inflight;
	uint32_t wr_inflight;
	int (*admit)(void *arg, uint32_t inflight, uint32_t want, uint32_t window);
	void *admit_arg;
	struct rb2_xport_lane *lane_window; /* on a lane with a window: admit by its room */
	struct rb2_chan_half h;       /**< name, transport, memory, peer, policies */
} __rte_cache_aligned;

/** The receiver's half of a channel. Use from one lcore only. */
struct rb2_rx {
	/* Line 0: what peek/release read on every burst. */
	const uint8_t *slots;         /**< RB_R slots */
	const uint32_t *lens;         /**< RB_R lens[] */
	_Atomic uint64_t *local_tail; /**< in RB_R, written by the sender */
	uint64_t tail_seen;           /**< local_tail at the last refresh */
	uint32_t mask;
	uint32_t slot_size;
	uint32_t gamma;
	uint32_t max_len;
	uint32_t msg_size;            /**< 0, or the fixed message size */
	uint32_t poll_msg;            /**< poll-message sync: no tail pointer */
	uint32_t leader;              /**< RB2_CHAN_F_LEN_IN_SLOT: header bytes before the payload */
	uint32_t idle_lines;          /**< lines an empty look prefetches at the head (1-4) */

	uint64_t head __rte_cache_aligned;        /**< next slot to read */
	uint64_t synced_head __rte_cache_aligned; /**< head at the last push */
	struct rb2_rx_stats stats __rte_cache_aligned;

	/* Slow path. */
	uint64_t *head_shadow;        /**< sources of the WRITEs of [0] the head
					   (lazy pull: the head the sender READs,
					   with its complement at [1]), [2] credits
					   and [3] notices (rb2_chan_pvt.h) */
	/* WRITE_WITH_IMM sync: our completion ring (emulated), the next CQE's
	 * number, CQEs consumed and how many of them were given back. With
	 * imm_native the CQEs are receive completions on our queue, and giving
	 * them back re-posts the receives. */
	struct rb2_cqe *cq;           /**< NULL: another tail sync */
	uint64_t cq_next, cq_consumed, cq_returned;
	uint32_t imm_native;          /**< the transport has RB2_XPORT_CAP_IMM */
	_Atomic uint64_t *peer_credit; /**< sender's credit word, mapped (load/store) */
	uint32_t *own_lens;           /**< fixed-size channel: lens[] kept locally */
	_Atomic uint64_t *peer_head;  /**< sender's local_head, mapped (load/store) */
	_Atomic uint64_t *peer_notices; /**< sender's notice word, mapped (load/store) */
	uint64_t notices;             /**< RB2_NOTICE_* raised so far */
	/* RB2_CHAN_F_SLEEP: our doorbell (in RB_R; NULL without the flag),
	 * the sender's sleep word, mapped (load/store), the acknowledged
	 * WRITEs of it (verbs: a sleep waits until its word has landed), and
	 * the wake-up receives we keep posted (verbs). */
	uint32_t *doorbell;
	_Atomic uint64_t *peer_sleep;
	uint64_t sleep_writes, sleep_acked;
	uint32_t wake_recvs;
	/* rb2_bulk.h: READs of lent buffers, signaled ones posted and
	 * completed (a bulk receiver waits for its own). */
	uint64_t bulk_reads_posted, bulk_reads_done;
	struct rb2_chan_half h;       /**< name, transport, memory, peer, policies */
} __rte_cache_aligned;

static_assert(offsetof(struct rb2_tx, tail) % RTE_CACHE_LINE_SIZE == 0 &&
	      offsetof(struct rb2_tx, synced_tail) - offsetof(struct rb2_tx, tail) >= RTE_CACHE_LINE_SIZE &&
	      offsetof(struct rb2_tx, esc_tail) - offsetof(struct rb2_tx, synced_tail) >= RTE_CACHE_LINE_SIZE,
	      "sender pointers must sit in their own cache lines");
static_assert(offsetof(struct rb2_rx, head) % RTE_CACHE_LINE_SIZE == 0 &&
	      offsetof(struct rb2_rx, synced_head) - offsetof(struct rb2_rx, head) >= RTE_CACHE_LINE_SIZE,
	      "receiver pointers must sit in their own cache lines");
static_assert(sizeof(struct rb2_chan_desc) == 56, "descriptor is wire format");

/** A message read in place: valid until released. 16 bytes, 4 per line. */
struct rb2_msg {
	void *data;       /**< first byte, 64-byte aligned (8: UNALIGNED) */
	uint32_t len;     /**< bytes, with RB2_MSG_MARK if the sender marked it */
	uint32_t next_lo; /**< @internal low 32 bits of the head after it */
};

/** The bytes of @p m, without the sender's mark. */
static inline uint32_t
rb2_msg_len(const struct rb2_msg *m)
{
	return m->len & ~RB2_MSG_MARK;
}

/** Did the sender mark @p m (RB2_MSG_MARK)? */
static inline int
rb2_msg_marked(const struct rb2_msg *m)
{
	return (m->len & RB2_MSG_MARK) != 0;
}

/*
 * Out-of-line slow paths, called from the inline fast path (so exported):
 * the sender's (rb2_chan_tx.c), the receiver's (rb2_chan_rx.c), and those of
 * the poll-message (rb2_sync_poll.c) and WRITE_WITH_IMM (rb2_sync_imm.c)
 * tail syncs.
 */
int __rb2_tx_make_room(struct rb2_tx *tx, uint64_t need);
void __rb2_tx_transmit(struct rb2_tx *tx);
void __rb2_tx_advance(struct rb2_tx *tx);
void __rb2_tx_advance_eager(struct rb2_tx *tx);
int __rb2_tx_flush(struct rb2_tx *tx);
int __rb2_rx_idle(struct rb2_rx *rx, int check_due);

/*
 * An empty look (every tail sync's): counted, and what an idle receiver
 * owes done (the peer asked after, the head handed back). Inline, for an
 * idle loop looks on every pass: a pass's length is how late it sees the
 * next message. The common look owes nothing and calls nothing.
 */
static __rte_always_inline int
rb2_rx_idle(struct rb2_rx *rx)
{
	int due = 0;

	RB2_STAT_ADD(&rx->stats, empty_events, 1);
	if (likely(rx->h.err == 0 && rx->h.peer_gone == 0)) {
		due = __rb2_peer_check_due(&rx->h);
		if (likely(!due && rx->head == ((rx->h.p.flags & RB2_CHAN_F_LAZY_HEAD) ?
						rx->head_shadow[0] : rx->synced_head)))
			return 0;
	}
	return __rb2_rx_idle(rx, due);
}
int __rb2_rx_corrupt(struct rb2_rx *rx, uint64_t pos, uint32_t len);
void __rb2_rx_push(struct rb2_rx *rx);
void __rb2_tx_mark(struct rb2_tx *tx, uint64_t t, uint32_t skip, uint32_t len,
		   unsigned int n);
int __rb2_rx_peek_poll(struct rb2_rx *rx, struct rb2_msg *msgs, unsigned int n);
void __rb2_rx_release_poll(struct rb2_rx *rx, const struct rb2_msg *msgs,
			   unsigned int n);
void __rb2_rx_poll_cq(struct rb2_rx *rx);

/** @internal Prefetch a line for writing (rte_prefetch0_write() is still
 * experimental in DPDK 22.11, and public headers must not need
 * ALLOW_EXPERIMENTAL_API). */
static inline void
__rb2_prefetch_w(const void *p)
{
	__builtin_prefetch(p, 1, 3);
}

/** @internal The most lines an empty look prefetches (struct rb2_rx's
 * idle_lines): a small message's; a larger one streams in anyway. */
#define RB2_IDLE_LINES_MAX 4u

/** @internal Prefetch @p n (at most RB2_IDLE_LINES_MAX) lines from @p p. */
static __rte_always_inline void
__rb2_rx_prefetch_lines(const uint8_t *p, uint32_t n)
{
	if (n > 0)
		rte_prefetch0(p);
	if (n > 1)
		rte_prefetch0(p + RTE_CACHE_LINE_SIZE);
	if (n > 2)
		rte_prefetch0(p + 2 * RTE_CACHE_LINE_SIZE);
	if (n > 3)
		rte_prefetch0(p + 3 * RTE_CACHE_LINE_SIZE);
}

/** @internal Slots a message of @p len bytes occupies. A power-of-two
 * slot size (every preset's) is a shift, not a divide: reserve, commit and
 * peek each count the slots of a multi-slot message. 136-byte messages on
 * 64-byte slots took 13.3 cycles each against 13.8 with the divide (5
 * alternating runs of rb2-perf --mode ops --size 136). */
static inline uint32_t
__rb2_nslots(uint32_t len, uint32_t slot_size)
{
	if (likely(len <= slot_size))
		return 1;
	if (likely((slot_size & (slot_size - 1)) == 0))
		return (len + slot_size - 1) >> __builtin_ctz(slot_size);
	return (len + slot_size - 1) / slot_size;
}

/**
 * WRITE_WITH_IMM sync. On a transport with RB2_XPORT_CAP_IMM (verbs), the
 * last WRITE of a tail sync is a WRITE_WITH_IMM whose immediate is the slots
 * it publishes; the receiver polls its queue's receive completions, adds
 * each immediate to its tail, re-posts the receives and WRITEs back how many
 * it consumed (the sender's credits). Elsewhere (shm) it is emulated: the
 * same 16-byte entry goes into the receiver's completion ring (after RB_R's
 * slots) with a plain WRITE or store, and the receiver polls that ring;
 * credits work the same way.
 */
#define RB2_CQ_ENTRIES 64
/** One completion entry: seq is written last and tags the entry's lap. */
struct rb2_cqe {
	uint32_t imm;   /**< slots the WRITEs before it published */
	uint32_t rsvd;
	uint64_t seq;   /**< 1, 2, ...: the CQE's number */
};

/** Poll-message sync: bytes of the marker that ends every message. */
#define RB2_MARKER_SIZE 8
/** RB2_CHAN_F_LEN_IN_SLOT: bytes of the header that starts every message
 * (its length, then the low word of its marker). */
#define RB2_LEN_HDR_SIZE 8

/** The marker of the message starting at free-running slot @p t: odd, so
 * never the zero the receiver leaves, and different on every lap. */
static inline uint64_t
__rb2_marker(uint64_t t)
{
	return t << 1 | 1;
}

/** RB2_CHAN_F_LEN_IN_SLOT: the header of a message of @p len (its mark
 * included) starting at free-running slot @p t. Never 0, which the
 * receiver leaves: the marker's low word is odd. */
static inline uint64_t
__rb2_len_hdr(uint64_t t, uint32_t len)
{
	return (uint64_t)(uint32_t)__rb2_marker(t) << 32 | len;
}

#ifdef __cplusplus
}
#endif

#endif /* RB2_CHAN_CORE_H */
