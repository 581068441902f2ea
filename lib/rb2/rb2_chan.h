/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_CHAN_H
#define RB2_CHAN_H

/**
 * @file
 * RB² channel: a single-producer, single-consumer distributed ring buffer
 * (Sun et al., "RB²: Narrow the Gap between RDMA Abstraction and Performance
 * via a Middle Layer"). The sender and receiver halves may sit on two lcores,
 * two processes, or two hosts; they talk only through a transport.
 *
 * @code
 * struct rb2_chan_params p;
 * rb2_chan_params_init(&p);                 // alpha=32 beta=16 gamma=32
 * struct rb2_xport *xp = rb2_xport_open("shm", NULL);
 * struct rb2_tx *tx = rb2_tx_create("c0", xp, &p);
 * struct rb2_rx *rx = rb2_rx_create("c0", xp, &p);
 * rb2_chan_pair(tx, rx);                    // or rb2_{tx,rx}_connect()
 *
 * void *slot;                               // sender: zero copy
 * if (rb2_tx_reserve(tx, 40, &slot) == 0) {
 *	fill(slot);
 *	rb2_tx_commit(tx, 40);
 * }
 * rb2_tx_flush(tx);                          // when idle
 *
 * struct rb2_msg m[32];                      // receiver: in place
 * int n = rb2_rx_peek_burst(rx, m, 32);
 * for (int i = 0; i < n; i++)
 *	use(m[i].data, m[i].len);
 * if (n > 0)
 *	rb2_rx_release_burst(rx, m, n);
 * @endcode
 *
 * Liveness: a committed message becomes visible at the next pointer
 * advancement (every alpha slots) or at rb2_tx_flush(). Call rb2_tx_flush()
 * whenever the sending loop is idle; it costs one compare when nothing is
 * pending.
 */

#include <errno.h>
#include <string.h>

#include <rte_memcpy.h>

#include <rb2_chan_core.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Fill @p p with the paper's configuration: N=1024, S=64, α=32, β=16, γ=32. */
void rb2_chan_params_init(struct rb2_chan_params *p);

/**
 * Check channel parameters.
 *
 * @param why
 *   If not NULL, receives a message naming the bad parameter and the rule.
 * @return
 *   0, or -EINVAL (a parameter out of range; @p why names it).
 */
int rb2_chan_params_check(const struct rb2_chan_params *p, char *why,
			  size_t len);

/**
 * Apply a design of the paper's evaluation (§V-A) to @p p, keeping its ring
 * geometry (slots, slot_size, msg_size):
 *  - "rb2": lazy push, write-twice, alpha=32 beta=16 gamma=32, the head
 *    pushed only every gamma (RB2_CHAN_F_LAZY_HEAD: a sender short of room
 *    READs it when no push is due), and on load/store transports the
 *    first commit after an idle flush published at once (eager =
 *    RB2_EAGER_AUTO): rb2_chan_params_init()'s defaults, and a variable
 *    length in the message's slot (RB2_CHAN_F_LEN_IN_SLOT). Every "rb2-"
 *    preset carries its lengths so too;
 *  - "rb2-noeager": rb2 without eager publication (eager = 0): the paper's
 *    adaptive batching alone;
 *  - "rb2-unbatched": rb2 with batching turned off (alpha = beta = gamma = 1,
 *    Table II's M2), as the paper runs its HTTP case study (Fig. 10);
 *  - "rb2-idlepush": rb2 whose receiver also pushes its head whenever it
 *    finds the ring drained (rb2's default before RB2_CHAN_F_LAZY_HEAD): a
 *    head WRITE per message in a ping-pong;
 *  - "l5": write-twice with no batching (alpha = beta = gamma = 1), the head
 *    READ by the sender when short of room (lazy pull), as pfent/L5RDMA;
 *  - "farm": poll message (marker after each message, its length in a second
 *    WRITE), no batching;
 *  - "socksdirect": WRITE_WITH_IMM with CQ polling, a WRITE per message and a
 *    completion for every WRITE, at most 10 in flight (max_inflight): while
 *    the window is full messages accumulate and go out together (its
 *    adaptive batching); each message behind a header with its length, as
 *    SocksDirect's ring holds them (RB2_CHAN_F_LEN_IN_SLOT);
 *  - "lean": RB²'s latency mode: poll message with the length in the slot
 *    (RB2_CHAN_F_LEN_IN_SLOT: a message, its length and its marker, and so
 *    its publication, are one WRITE), no batching, the head pushed only
 *    every half ring (RB2_CHAN_F_LAZY_HEAD).
 * What each copies is the application's: doc/guides/prog_guide/chan.md says, and rb2-perf
 * copies as each does.
 *
 * @return 0, or -ENOENT (no such preset).
 */
int rb2_chan_params_preset(struct rb2_chan_params *p, const char *name);

/** The names rb2_chan_params_preset() knows, for messages and --help. */
#define RB2_CHAN_PRESET_NAMES "rb2, rb2-noeager, rb2-unbatched, rb2-idlepush, l5, farm, socksdirect, lean"

/** @return the largest message a channel with @p p carries: msg_size if set,
 * else N/2 * S less rb2_chan_msg_overhead(). */
uint32_t rb2_chan_max_msg(const struct rb2_chan_params *p);

/** @return whether a channel with @p p carries each message's length in its
 * slot (RB2_CHAN_F_LEN_IN_SLOT on a variable-size channel). */
int rb2_chan_len_in_slot(const struct rb2_chan_params *p);

/** @return the bytes a message on a channel with @p p takes in its slots
 * besides its payload: its header (rb2_chan_len_in_slot()) and a poll
 * message's marker. A message of len bytes fits one slot when len plus
 * this is at most slot_size. */
uint32_t rb2_chan_msg_overhead(const struct rb2_chan_params *p);

/**
 * Create the sender's half: allocates and registers RB_S on the socket the
 * transport names, and the lcore's queue.
 *
 * @param name
 *   Channel name, at most RB2_CHAN_NAMESIZE - 1 characters, unique per
 *   process group; both halves use the same.
 * @return
 *   The half, or NULL with rte_errno: EINVAL (bad parameters; the log names
 *   the parameter), ENOTSUP, ENAMETOOLONG, EEXIST, ENOMEM.
 */
struct rb2_tx *rb2_tx_create(const char *name, struct rb2_xport *xp,
			     const struct rb2_chan_params *p);

/** Create the receiver's half: allocates and registers RB_R. As rb2_tx_create(). */
struct rb2_rx *rb2_rx_create(const char *name, struct rb2_xport *xp,
			     const struct rb2_chan_params *p);

/**
 * Connect two halves created in this process on one transport.
 *
 * @return 0, or -EINVAL (different transports or parameters), -EISCONN.
 */
int rb2_chan_pair(struct rb2_tx *tx, struct rb2_rx *rx);

/**
 * Connect the sender to its receiver through the transport's rendezvous
 * (shm: another lcore or process using the same @p peer name; verbs:
 * "ip:port"). Blocks up to @p timeout_ms.
 *
 * @return 0, or -ETIMEDOUT, -ECONNREFUSED (the peer's descriptor is invalid;
 *   the log says why), -EISCONN.
 */
int rb2_tx_connect(struct rb2_tx *tx, const char *peer, unsigned int timeout_ms);

/** Connect the receiver (the passive side). As rb2_tx_connect(). */
int rb2_rx_connect(struct rb2_rx *rx, const char *peer, unsigned int timeout_ms);

/**
 * Connect both directions of one end at once: @p tx and @p rx to the peer's
 * @p rx and @p tx over the stream socket @p peer ("fd:N"), with @p n_more
 * queues of the caller's beside them (their blobs its own), in one exchange
 * of the transport's (rb2_xport_qp_exchange_n(): one round trip over
 * verbs). The @p active end's sender goes first, the other's receiver, so
 * the queues pair as rb2_tx_connect() then rb2_rx_connect() on the active
 * end and the reverse on the other would pair them; both ends call this.
 *
 * @return 0, or as rb2_tx_connect(), or -EINVAL (@p peer is no "fd:N"),
 *   -E2BIG (more queues than the transport exchanges at once); the caller
 *   then destroys all of them.
 */
int rb2_chan_connect_both(struct rb2_tx *tx, struct rb2_rx *rx, int active, const char *peer,
			  struct rb2_xport_exch *more, unsigned int n_more,
			  unsigned int timeout_ms);

/**
 * Flush if the admission window (params.max_inflight, or its hook) takes the
 * transmission now; else leave what is committed for a later flush or
 * publication, and count an admission deferral. Where a flush waits for
 * room in the window, this never waits: a sender that writes again while
 * its last publication is in flight batches the two (Linux's TCP autocork
 * does the same while a segment waits to leave). Nor does it wait for the
 * receiver's credits (WRITE_WITH_IMM sync), which rb2_tx_flush() waits up
 * to a second for: the slots go out, and their publication waits (a credit
 * wait counted). Whoever calls it must flush later, or the messages wait
 * for the next publication; under RB2_CHAN_F_ROOM_WAKE, rb2_tx_wait_arm()
 * sleeps until that can go.
 *
 * @return 0 (published, or nothing to publish), 1 (deferred, or published
 *   in part), or the error that failed the channel.
 */
int rb2_tx_flush_or_defer(struct rb2_tx *tx);

/**
 * Flush, then wait until everything the sender posted has landed in the
 * receiver's memory: one signaled READ of the receiver's head, whose
 * completion comes after every WRITE posted before it (RC executes a
 * queue's requests in order). Before destroying a sender whose receiver
 * must get every byte (a stream's close): destroying the queue drops the
 * WRs the NIC has not sent yet. Nothing to wait for on load/store
 * transports. Under RB2_CHAN_F_ROOM_WAKE, a signaled zero-length WRITE
 * instead of the READ (RC acknowledges in order).
 *
 * @return 0, or the error that failed the channel (-ETIMEDOUT: no answer).
 */
int rb2_tx_drain(struct rb2_tx *tx);

/**
 * rb2_tx_drain() without the wait, for a caller that finishes many senders
 * at once and must not hold the others up while one waits (rb2-run's
 * closer): flush without waiting for credits (rb2_tx_flush_or_defer()), and
 * post a signaled zero-length WRITE, whose completion comes after every
 * WRITE posted before it. Then call rb2_tx_drain_done() until it is not 0.
 * What the flush left unpublished is not covered: call it once everything
 * committed is published. Not on a sender with a drain already started.
 *
 * @return 0, or the error that failed the channel.
 */
int rb2_tx_drain_start(struct rb2_tx *tx);

/**
 * Never waits: has what rb2_tx_drain_start() covers landed? After
 * RB2_POST_WAIT_MS (10 s) without, the sender fails, as rb2_tx_drain()'s
 * wait does.
 *
 * @return 1: landed (at once on load/store transports); 0: not yet; or the
 *   channel's error (-ETIMEDOUT: no answer within the bound).
 */
int rb2_tx_drain_done(struct rb2_tx *tx);

/** Destroy a half (flushing a sender first). */
void rb2_tx_destroy(struct rb2_tx *tx);
/** Destroy a half. */
void rb2_rx_destroy(struct rb2_rx *rx);

/**
 * Check a peer's connection descriptor against local parameters.
 *
 * @param role
 *   The role the peer must have: 0 (receiver) or 1 (sender).
 * @param why
 *   If not NULL, receives the reason for a refusal.
 * @return 0, or -EPROTO (malformed: short, oversized, bad magic or version,
 *   inconsistent with @p p).
 */
int rb2_chan_desc_check(const void *blob, size_t len, int role,
			const struct rb2_chan_params *p, char *why, size_t whylen);

/** Pointer snapshot of a sender (free-running; mask with N - 1 for slots). */
struct rb2_tx_ptrs {
	uint64_t tail, synced_tail, esc_tail, local_head;
};
/** Pointer snapshot of a receiver. */
struct rb2_rx_ptrs {
	uint64_t head, synced_head, local_tail;
};
/** Read the sender's four pointers (local_head as the receiver last wrote it). */
void rb2_tx_pointers(const struct rb2_tx *tx, struct rb2_tx_ptrs *ptrs);
/** Read the receiver's three pointers (local_tail as the sender last wrote it). */
void rb2_rx_pointers(const struct rb2_rx *rx, struct rb2_rx_ptrs *ptrs);

/**
 * Raise notices for the sender (RB2_NOTICE_*, ORed into what was raised
 * before): one WRITE of a word in the sender's region, or a store on a
 * load/store transport. Slow path: a pipeline asks its upstream process or
 * host to stop with RB2_NOTICE_STOP.
 *
 * @return 0, -ENOTCONN, or the channel's error.
 */
int rb2_rx_notify(struct rb2_rx *rx, uint64_t flags);

/**
 * Adaptive polling (RDMAbox's hybrid), the receiver's half; the channel
 * needs RB2_CHAN_F_SLEEP on both halves. A receiver that has found nothing
 * for a while says that it sleeps (a word in the sender's region, which the
 * sender looks at after every publication and in its idle rb2_tx_flush()),
 * then looks at the ring once more; if it is still empty, it may block on the
 * doorbell @p db names, with rb2_xport_doorbell_wait() (one call for every
 * channel of an lcore). The sender rings it when it publishes. On shm either
 * the sender sees the sleep or this last look sees the message; over a
 * network a publication that lands after the last look is caught by the
 * sender's next look, so a sender must flush when idle. Slow path.
 *
 * @code
 * struct rb2_xport_doorbell db;
 * if (rb2_rx_sleep_arm(rx, &db) == 0) {
 *	rb2_xport_doorbell_wait(&db, 1, 10000);
 *	rb2_rx_sleep_disarm(rx);
 * }
 * @endcode
 *
 * @return 0 (armed: sleep on @p db, then disarm); -EAGAIN (a message is
 *   there: read it; nothing to disarm); -ENOTSUP (no RB2_CHAN_F_SLEEP); or
 *   the channel's error.
 */
int rb2_rx_sleep_arm(struct rb2_rx *rx, struct rb2_xport_doorbell *db);

/** Say that the receiver polls again (after rb2_rx_sleep_arm() returned 0,
 * once awake, or when another channel's message called the sleep off). */
void rb2_rx_sleep_disarm(struct rb2_rx *rx);

/**
 * Block until the data itself comes: for a receiver whose every
 * publication raises a completion here (RB2_TAIL_WRITE_IMM on a transport
 * with RB2_XPORT_CAP_IMM) and whose queue can wake (RB2_CHAN_F_SLEEP). Arms
 * the queue's completion notification, then looks once more: a publication
 * that lands after the look raises the doorbell @p db names, so no word
 * goes to the sender and the sender need not look for sleepers (unlike
 * rb2_rx_sleep_arm(), whose sleep word a remote sender sees only at its
 * next look). What a receiver in a program that blocks in its own calls
 * needs (rb2-run's streams across hosts). Slow path.
 *
 * @return 0 (armed: sleep on @p db, then rb2_rx_wait_done()); -EAGAIN (a
 *   message is there: nothing to undo); -ENOTSUP (not such a channel); or
 *   the channel's error.
 */
int rb2_rx_wait_arm(struct rb2_rx *rx, struct rb2_xport_doorbell *db);

/** Awake after rb2_rx_wait_arm(): consume the doorbell's events. */
void rb2_rx_wait_done(struct rb2_rx *rx);

/** Awake after rb2_rx_wait_arm(), from a wait that held the doorbell's
 *  descriptor and did not see it ready: read nothing
 *  (rb2_xport_doorbell_leave()). What came since keeps it ready for the
 *  next wait. */
void rb2_rx_wait_leave(struct rb2_rx *rx);

/** The doorbell's descriptor was seen ready by a wait that did not arm it
 *  (an edge-triggered epoll set): consume its events, so that the next
 *  rb2_rx_wait_arm() asks the device anew (rb2_xport_doorbell_drain()). */
void rb2_rx_wait_drain(struct rb2_rx *rx);

/**
 * Block until the receiver frees room, or takes what this sender holds: for
 * a sender of a channel with RB2_CHAN_F_ROOM_WAKE, whose receiver follows
 * each head push, and each return of credits (WRITE_WITH_IMM sync) of half
 * its completion entries or more, with a wake-up into this sender's
 * doorbell. Flushes as rb2_tx_flush_or_defer() does, arms the doorbell
 * @p db names, then looks once more: for the credits a held publication
 * waits for, else for room for a one-slot message. What lands after the
 * look raises the doorbell. Nothing is READ and no word goes to the
 * receiver: a sender short of room with everything published is always
 * owed a push (rb2_chan_max_msg() leaves gamma slots for it), and one out
 * of credits a return, each with its wake-up. A larger message may need
 * more than one wake-up. Slow path.
 *
 * @return 0 (armed: sleep on @p db, then rb2_tx_wait_done(); awake,
 *   flush again); -EAGAIN (everything is published and there is room:
 *   nothing to undo); -ENOTSUP (no RB2_CHAN_F_ROOM_WAKE); or the channel's
 *   error.
 */
int rb2_tx_wait_arm(struct rb2_tx *tx, struct rb2_xport_doorbell *db);

/** Awake after rb2_tx_wait_arm(): consume the doorbell's events and the
 *  wake-ups' receive completions (posted again). */
void rb2_tx_wait_done(struct rb2_tx *tx);

/** As rb2_rx_wait_leave(), for the sender's doorbell (the wake-ups'
 *  receive completions that came are still taken and posted again). */
void rb2_tx_wait_leave(struct rb2_tx *tx);

/** As rb2_rx_wait_drain(), for the sender's doorbell. The completions stay
 *  in the queue for the sender's next reap. */
void rb2_tx_wait_drain(struct rb2_tx *tx);

/**
 * Arm, sleep at most @p timeout_us, disarm: the whole of adaptive polling's
 * sleep for a receiver with one channel.
 *
 * @return 0 (woken, or timed out: peek again), -EAGAIN (a message was
 *   there), -ENOTSUP, or the channel's error.
 */
int rb2_rx_sleep(struct rb2_rx *rx, unsigned int timeout_us);

/**
 * @return the notices the receiver has raised (RB2_NOTICE_*): a load from
 *   the sender's own memory, cheap enough for a worker's every loop.
 */
static inline uint64_t
rb2_tx_notices(const struct rb2_tx *tx)
{
	/* Acquire: pairs with the receiver's release store (shm) or WRITE. */
	return atomic_load_explicit(tx->notices, memory_order_acquire);
}

/** @internal rb2_tx_check() on a due call: the clock, the transport. */
int __rb2_tx_check_due(struct rb2_tx *tx);

/**
 * Is the sender's peer still there? For idle loops (a paced sender may not
 * fill its ring, where a reservation would find out): asks the transport at
 * most every millisecond, and fails the channel if the receiver is gone.
 *
 * @return 0, or the channel's error (-ECONNRESET: the receiver is gone).
 */
static inline int
rb2_tx_check(struct rb2_tx *tx)
{
	/* Inline, for an idle loop calls it on every pass: the clock is
	 * read, and the transport asked, on a due call only. */
	if (unlikely(tx->h.err != 0))
		return tx->h.err;
	return __rb2_peer_check_due(&tx->h) ? __rb2_tx_check_due(tx) : 0;
}

/**
 * Has the receiver released everything this sender committed? For the end of
 * a stream (before rb2_tx_destroy(), or to stop a clock): flushes as
 * rb2_tx_flush() (which also wakes a receiver that sleeps having seen less
 * than was published), reaps completions and looks after the peer, as
 * rb2_tx_check(). A receiver with RB2_CHAN_F_LAZY_HEAD (the default) does not
 * push its head when it drains, and lazy pull never does: then, while the
 * head it last pushed is behind, this READs the head (one round trip on
 * verbs per call). Poll it; do not spin on tx->local_head. Under
 * RB2_CHAN_F_ROOM_WAKE nothing is READ: with a lazy head, 1 comes only once
 * a push covers everything.
 *
 * @return 1: every committed message was released; 0: not yet; or the
 *   channel's error (-ECONNRESET: the receiver is gone).
 */
int rb2_tx_drained(struct rb2_tx *tx);

/**
 * An admission rule (RDMAbox's hook for applications): may a transmission of
 * @p want WRs go out with @p inflight in flight, under the channel's window
 * (params.max_inflight)? Return non-zero to admit. Called on the sender's
 * lcore; it must admit when @p inflight is 0, or a flush waits for ever
 * (it fails the channel after a bounded wait).
 */
typedef int (*rb2_tx_admit_t)(void *arg, uint32_t inflight, uint32_t want,
			      uint32_t window);

/**
 * Replace the admission window's rule ("inflight + want <= window") with
 * @p fn, or restore it (NULL). The sender must have a window (max_inflight).
 *
 * @return 0, or -EINVAL (no window).
 */
int rb2_tx_admission_hook(struct rb2_tx *tx, rb2_tx_admit_t fn, void *arg);

/** Copy a sender's counters. */
void rb2_tx_stats_get(const struct rb2_tx *tx, struct rb2_tx_stats *st);
/** Copy a receiver's counters. */
void rb2_rx_stats_get(const struct rb2_rx *rx, struct rb2_rx_stats *st);

/** @return the largest message this sender accepts. */
static inline uint32_t
rb2_tx_max_msg(const struct rb2_tx *tx)
{
	return tx->max_len;
}

/*
 * Read-only accessors: what a layer above the channel (lib/conn) may know
 * of one, so that it never reads the structures of rb2_chan_core.h.
 * Positions count slots from the channel's start; they only grow.
 */

/** @return the largest message this receiver takes. */
static inline uint32_t
rb2_rx_max_msg(const struct rb2_rx *rx)
{
	return rx->max_len;
}

/** @return the fixed message size of the sender's channel, or 0 (any length). */
static inline uint32_t
rb2_tx_msg_size(const struct rb2_tx *tx)
{
	return tx->msg_size;
}

/** @return the fixed message size of the receiver's channel, or 0 (any length). */
static inline uint32_t
rb2_rx_msg_size(const struct rb2_rx *rx)
{
	return rx->msg_size;
}

/** @return the sender's parameters, as the channel was made with them. */
static inline const struct rb2_chan_params *
rb2_tx_params(const struct rb2_tx *tx)
{
	return &tx->h.p;
}

/** @return the receiver's parameters, as the channel was made with them. */
static inline const struct rb2_chan_params *
rb2_rx_params(const struct rb2_rx *rx)
{
	return &rx->h.p;
}

/** @return the next slot the sender writes (its tail, reservations included). */
static inline uint64_t
rb2_tx_tail(const struct rb2_tx *tx)
{
	return tx->tail;
}

/** @return the tail the sender last published to the receiver. */
static inline uint64_t
rb2_tx_published(const struct rb2_tx *tx)
{
	return tx->pub_tail;
}

/** @return the next slot the receiver reads (its head). */
static inline uint64_t
rb2_rx_head(const struct rb2_rx *rx)
{
	return rx->head;
}

/** @return the transport the sender's channel runs on. */
static inline struct rb2_xport *
rb2_tx_xport(const struct rb2_tx *tx)
{
	return tx->h.xp;
}

/** @return the transport the receiver's channel runs on. */
static inline struct rb2_xport *
rb2_rx_xport(const struct rb2_rx *rx)
{
	return rx->h.xp;
}

/** @return the sender's channel name. */
static inline const char *
rb2_tx_name(const struct rb2_tx *tx)
{
	return tx->h.name;
}

/** @return the receiver's channel name. */
static inline const char *
rb2_rx_name(const struct rb2_rx *rx)
{
	return rx->h.name;
}

/** @return whether the sender's peer is in this process (rb2_xport_qp_connect_local()). */
static inline int
rb2_tx_peer_local(const struct rb2_tx *tx)
{
	return tx->h.qp != NULL && tx->h.qp->peer_local;
}

/**
 * Reserve room for up to @p n messages of @p len bytes each, laid out
 * contiguously (zero copy, the burst form of rb2_tx_reserve()): message i
 * starts at @p *first + i * rb2_tx_stride(tx, len). A burst stops short at
 * the end of the ring, so that it never wraps; the next call starts at slot 0.
 *
 * @param[out] first
 *   64-byte aligned start of the first message (8-byte with
 *   RB2_CHAN_F_UNALIGNED or RB2_CHAN_F_LEN_IN_SLOT).
 * @return
 *   The number of messages reserved (1..n); -ENOBUFS when not even one fits;
 *   -EMSGSIZE; or the channel's error. Commit with rb2_tx_commit_burst().
 */
static inline int
rb2_tx_reserve_burst(struct rb2_tx *tx, uint32_t len, unsigned int n,
		     void **first)
{
	uint64_t t = tx->tail;
	uint32_t pos = (uint32_t)t & tx->mask;
	uint32_t need, skip = 0, fit;
	unsigned int ahead;
	uint64_t room;

	if (unlikely(len > tx->max_len))
		return -EMSGSIZE;
	need = __rb2_nslots(len + tx->trailer, tx->slot_size);
	if (unlikely(pos + need > tx->mask + 1))
		skip = tx->mask + 1 - pos;
	if (unlikely(t + skip + need > tx->limit)) {
		int ret = __rb2_tx_make_room(tx, skip + need);
		if (ret < 0)
			return ret;
	}
	/* Stores are the sender's scarce resource: every store, even an L1
	 * hit, holds a store-buffer entry behind the slot store that misses,
	 * so fewer of those misses overlap. Write only what changes. */
	if (unlikely(skip != tx->resv_skip))
		tx->resv_skip = skip;
	pos = (pos + skip) & tx->mask;
	room = tx->limit - t - skip;                  /* messages that fit */
	fit = tx->mask + 1 - pos;                    /* ... before the wrap */
	if (unlikely(need > 1)) {                    /* no divide for 1 slot */
		fit /= need;
		room /= need;
	}
	/* RB2_CHAN_F_LEN_IN_SLOT: the payload follows the length header. */
	*first = tx->slots + (size_t)pos * tx->slot_size + tx->leader;
	/* Ask now for ownership of the slots of the next burst (or, for
	 * single messages, a few ahead), so that their RFO misses overlap
	 * this burst's fill instead of stalling the next one. Only free
	 * slots: an unread one would be pulled from under the receiver.
	 * Measured +20-35% at 40-64 B against the same code without. */
	ahead = RTE_MAX(n, (unsigned int)RB2_TX_PREFETCH_AHEAD);
	for (uint64_t i = ahead; i < ahead + n && i < room; i++)
		__rb2_prefetch_w(tx->slots + (size_t)((pos + i * need) &
			tx->mask) * tx->slot_size);
	return (int)RTE_MIN((uint64_t)n, RTE_MIN((uint64_t)fit, room));
}

/** @return the distance between consecutive messages of a reserved burst. */
static inline size_t
rb2_tx_stride(const struct rb2_tx *tx, uint32_t len)
{
	return (size_t)__rb2_nslots(len + tx->trailer, tx->slot_size) * tx->slot_size;
}

/* RB2_CHAN_F_LEN_IN_SLOT under a tail: head each of @p n messages of @p len
 * bytes, @p need slots each, from free-running slot @p t (after a wrap skip
 * of @p skip slots, whose header says so) with [u32 length][u32 0]. Plain
 * stores: the tail's publication orders them, as it orders the payload (and
 * on load/store they go straight into the receiver's ring, in the lines the
 * payload fills anyway). */
static __rte_always_inline void
__rb2_tx_put_lens(struct rb2_tx *tx, uint64_t t, uint32_t skip, uint32_t len, uint32_t need,
		  unsigned int n)
{
	uint32_t hdr[2] = { RB2_LEN_SKIP, 0 };

	if (unlikely(skip != 0)) {
		memcpy(tx->slots + (size_t)((uint32_t)t & tx->mask) * tx->slot_size, hdr,
		       sizeof(hdr));
		t += skip;
	}
	hdr[0] = len;
	for (unsigned int i = 0; i < n; i++, t += need)
		memcpy(tx->slots + (size_t)((uint32_t)t & tx->mask) * tx->slot_size, hdr,
		       sizeof(hdr));
}

/**
 * Commit @p n messages of @p len bytes reserved by rb2_tx_reserve_burst()
 * (@p n at most the count it returned).
 */
static inline void
rb2_tx_commit_burst(struct rb2_tx *tx, uint32_t len, unsigned int n)
{
	uint32_t need = __rb2_nslots((len & ~RB2_MSG_MARK) + tx->trailer, tx->slot_size);
	uint64_t t = tx->tail;

	/* alpha = 1 is "no batching" (L5, FaRM): every message gets its own
	 * pointer advancement, even when committed in a burst. */
	if (unlikely(tx->alpha == 1 && n > 1)) {
		for (unsigned int i = 0; i < n; i++)
			rb2_tx_commit_burst(tx, len, 1);
		return;
	}
	if (unlikely(tx->trailer != 0)) {
		if (tx->trailer != tx->leader) /* poll message: mark each one */
			__rb2_tx_mark(tx, t, tx->resv_skip, len, n);
		else                           /* a tail: headers only */
			__rb2_tx_put_lens(tx, t, tx->resv_skip, len, need, n);
	}
	if (unlikely(tx->resv_skip != 0)) {
		tx->lens[t & tx->mask] = RB2_LEN_SKIP;
		tx->skip_at = t;           /* for transmission: not sent */
		t += tx->resv_skip;
		tx->resv_skip = 0;
	}
	/* Variable sizes are counted here, where the length is in hand: two
	 * adds a commit, against a walk of lens[] at every transmission that
	 * cost 28 instructions a message and 30 a call (callgrind), most of a
	 * publication's cost in a closed loop of requests. A fixed size is
	 * counted per transmission, by its slot count: no work a message. */
	if (tx->msg_size == 0) {
		RB2_STAT_ADD(&tx->stats, messages, n);
		RB2_STAT_ADD(&tx->stats, bytes, (uint64_t)(len & ~RB2_MSG_MARK) * n);
		if (unlikely(len & RB2_MSG_MARK))
			RB2_STAT_ADD(&tx->stats, marked, n);
	}
	/* lens[] is the sender's private mirror: steady traffic finds the
	 * same length there from the previous lap and stores nothing; a
	 * fixed-size channel holds msg_size there from the start. */
	if (tx->msg_size != 0)
		t += (uint64_t)n * need;
	for (unsigned int i = 0; tx->msg_size == 0 && i < n; i++, t += need)
		if (unlikely(tx->lens[t & tx->mask] != len))
			tx->lens[t & tx->mask] = len;
	RB2_POS_STORE(tx->tail, t);

	if (unlikely(t - tx->synced_tail >= tx->alpha))
		__rb2_tx_advance(tx);      /* pointer advancement */
	else if (unlikely(tx->eager_left != 0))
		__rb2_tx_advance_eager(tx); /* the sender was idle: publish now */
	else if (unlikely(t - tx->esc_tail >= tx->beta))
		__rb2_tx_transmit(tx);     /* slot transmission */
}

/**
 * Reserve room for one message of @p len bytes (zero copy). Write the payload
 * at @p *slot, then call rb2_tx_commit(). Reserving again without a commit
 * returns the same room.
 *
 * @param[out] slot
 *   64-byte aligned (8-byte with RB2_CHAN_F_UNALIGNED or
 *   RB2_CHAN_F_LEN_IN_SLOT), @p len contiguous bytes (never split at the
 *   wrap).
 * @return
 *   0; -ENOBUFS (full: retry later, nothing was taken); -EMSGSIZE (@p len
 *   exceeds rb2_tx_max_msg()); or the error that failed the channel
 *   (-EIO, -ECONNRESET).
 */
static inline int
rb2_tx_reserve(struct rb2_tx *tx, uint32_t len, void **slot)
{
	int n = rb2_tx_reserve_burst(tx, len, 1, slot);

	return n < 0 ? n : 0;
}

/**
 * Commit the reserved message with its final length (at most the reserved
 * one). The message becomes visible to the receiver at the next pointer
 * advancement or flush. In a fixed-size channel the receiver always sees
 * msg_size bytes. @p len | RB2_MSG_MARK marks the message: the receiver's
 * view carries the mark in its length (rb2_msg_marked()).
 */
static inline void
rb2_tx_commit(struct rb2_tx *tx, uint32_t len)
{
	rb2_tx_commit_burst(tx, len, 1);
}

/** rb2_msg_copy() above two lines: libc's memcpy, out of line (the call
 *  is nothing beside such a copy, and callers that bound @p n by a small
 *  buffer are not warned of a path they never take). */
void rb2_msg_copy_long(void *dst, const void *src, size_t n);

/**
 * Copy a message into a slot or out of one, as fast as this machine was
 * measured to: rte_memcpy's inline vector copy up to two cache lines,
 * libc's memcpy above. Into lines that the other core holds, rte_memcpy
 * ran at about half libc's speed from a few hundred bytes (a 4 KiB round
 * trip over a connection took 5.0 us against 2.4 us), and at two lines or
 * less it moved 6-9% more small messages (doc/eval/conn.md, *Copies*). The
 * connection layer copies with it, and so do rb2-perf's copying baselines.
 */
static __rte_always_inline void
rb2_msg_copy(void *dst, const void *src, size_t n)
{
	if (n <= 2 * RTE_CACHE_LINE_SIZE)
		rte_memcpy(dst, src, n);
	else
		rb2_msg_copy_long(dst, src, n);
}

/**
 * Copy one message in (reserve + copy + commit).
 *
 * @return 0, -ENOBUFS, -EMSGSIZE, or the channel's error.
 */
static inline int
rb2_tx_send(struct rb2_tx *tx, const void *buf, uint32_t len)
{
	void *slot = NULL;
	int ret = rb2_tx_reserve(tx, len, &slot);

	if (ret < 0)
		return ret;
	memcpy(slot, buf, len);
	rb2_tx_commit(tx, len);
	return 0;
}

/**
 * Transmit every committed slot and WRITE the tail, overriding the batching
 * thresholds. Call when the sending loop is idle: with nothing pending it is
 * one compare. Under WRITE_WITH_IMM tail sync the publication needs one of
 * the receiver's credits: the flush waits up to a second for its return,
 * asleep on the sender's doorbell under RB2_CHAN_F_ROOM_WAKE, else looking
 * again; after that, the next flush or publication tries again.
 *
 * @return 0, or the error that failed the channel.
 */
static inline int
rb2_tx_flush(struct rb2_tx *tx)
{
	/* rx_sleep: a sleeping receiver may not have seen our last
	 * publication yet (verbs: it landed after its last look). */
	if (likely(tx->tail == tx->pub_tail && tx->h.err == 0 && tx->rx_sleep == NULL)) {
		/* Idle: the next commits go out at once (params.eager). Stored
		 * only when it changes: this runs on every idle loop pass. */
		if (unlikely(tx->eager_left != tx->eager))
			tx->eager_left = tx->eager;
		return 0;
	}
	return __rb2_tx_flush(tx);
}

/**
 * Take in what the sender published since the receiver last looked, even
 * though messages it saw then are still unread: rb2_rx_peek_burst() reads
 * the sender's tail only once everything it saw is released (one load per
 * drained view, not per call). For a count of everything readable now
 * (a stream's FIONREAD). Under WRITE_WITH_IMM sync it polls the
 * completions first; with marker sync it does nothing.
 */
static inline void
rb2_rx_look_again(struct rb2_rx *rx)
{
	uint64_t t;

	if (rx->poll_msg)
		return;
	/* WRITE_WITH_IMM: the tail is what the completions say; take in
	 * those that came (and give credits back, as an empty look does). */
	if (rx->cq != NULL)
		__rb2_rx_poll_cq(rx);
	/* Acquire, as in rb2_rx_peek_burst(); a torn read (verbs) never runs
	 * ahead of the new value, and one behind what we hold is ignored. */
	t = atomic_load_explicit(rx->local_tail, memory_order_acquire);
	if ((int64_t)(t - rx->tail_seen) > 0)
		rx->tail_seen = t;
}

/**
 * Look at up to @p n messages in place, oldest first, without releasing them.
 * Peeking again returns the same messages.
 *
 * @return
 *   The number of views written (0: empty), or, once the ring is drained,
 *   the negative errno value that failed the channel.
 */
static inline int
rb2_rx_peek_burst(struct rb2_rx *rx, struct rb2_msg *msgs, unsigned int n)
{
	uint64_t h = rx->head;
	uint64_t t = rx->tail_seen;
	unsigned int i = 0;

	if (unlikely(rx->poll_msg))          /* no tail: poll the markers */
		return __rb2_rx_peek_poll(rx, msgs, n);
	if (h == t) {
		/* WRITE_WITH_IMM sync: the tail comes from the completion
		 * ring, which the receiver polls itself. */
		if (unlikely(rx->cq != NULL))
			__rb2_rx_poll_cq(rx);
		/* Start the misses of the next message's lines beside the
		 * tail's: when the tail has moved, they all come in one wait,
		 * not a second one after it (as a poll-message ring reads its
		 * message's line). As many lines as the last message took, up
		 * to 4 (rx->idle_lines): a 136 B message on 64 B slots spans
		 * three, and a round trip through a connection took 900-910
		 * ns with its first line prefetched here, 690-720 ns with all
		 * three (doc/eval/conn.md). A line still being written is
		 * fetched again after; an idle loop's prefetch of a line it
		 * will read anyway costs the sender no more than a
		 * poll-message receiver's polling does. */
		__rb2_rx_prefetch_lines(rx->slots + (size_t)((uint32_t)h & rx->mask) * rx->slot_size,
					rx->idle_lines);
		/* Acquire: pairs with the sender's release store (shm) or
		 * ordered WRITE (verbs) of local_tail after the slots. */
		t = atomic_load_explicit(rx->local_tail, memory_order_acquire);
		/* Nothing new, or a tail read behind what we hold: an 8-byte
		 * WRITE may be seen torn (byte-wise DMA, as rxe under QEMU
		 * does), and a torn read never runs ahead of the new value. */
		if (unlikely((int64_t)(t - h) <= 0))
			return rb2_rx_idle(rx);
		rx->tail_seen = t;
	}
	if (rx->msg_size != 0) {
		/* Fixed size: one slot per message, lengths known. */
		unsigned int k = (unsigned int)RTE_MIN((uint64_t)n, t - h);

		for (; i < k; i++, h++) {
			msgs[i].data = (void *)(uintptr_t)(rx->slots +
				(size_t)((uint32_t)h & rx->mask) * rx->slot_size);
			rte_prefetch0(msgs[i].data);
			msgs[i].len = rx->msg_size;
			msgs[i].next_lo = (uint32_t)(h + 1);
		}
		return (int)k;
	}
	while (i < n && h != t) {
		uint32_t pos = (uint32_t)h & rx->mask;
		const uint8_t *slot = rx->slots + (size_t)pos * rx->slot_size;
		/* RB2_CHAN_F_LEN_IN_SLOT: the length heads the slot, below
		 * the tail, so landed (the tail orders it). Each header's
		 * load misses, but the fast path's next slot is h + 1 with no
		 * dependence on the length, so the CPU runs ahead and the
		 * misses of a burst overlap as lens[]'s prefetches did. */
		uint32_t len = rx->leader != 0 ? *(const uint32_t *)slot : rx->lens[pos];
		uint64_t end = h + 1;

		/* Fast path: a message within one slot cannot run past t. A
		 * skip marker (> any slot size), marked messages (the mark is
		 * bit 31) and multi-slot messages take the branch. */
		if (unlikely(len > rx->slot_size - rx->leader)) {
			uint32_t bytes = len & ~RB2_MSG_MARK;

			if (unlikely(len != RB2_LEN_SKIP && bytes > rx->max_len))
				return i > 0 ? (int)i : __rb2_rx_corrupt(rx, h, len);
			end = len == RB2_LEN_SKIP ? h + rx->mask + 1 - pos + 1 :
				h + __rb2_nslots(bytes + rx->leader, rx->slot_size);
			/* A message (or a skip and the message after it) past
			 * the tail was cut by a torn tail read: it is not
			 * published yet; refresh the tail on the next call. */
			if (unlikely(end > t)) {
				rx->tail_seen = h;
				return (int)i;
			}
			if (len == RB2_LEN_SKIP) {
				h += rx->mask + 1 - pos;
				continue;
			}
		}
		msgs[i].data = (void *)(uintptr_t)(slot + rx->leader);
		/* Start the payload's miss now, not when the caller reads. */
		rte_prefetch0(msgs[i].data);
		/* The first message's later lines too, and their count for
		 * the next empty look. Only the first: a streaming burst's
		 * extra prefetches cost 6% of the 136 B rate (20.4 to 19.2
		 * Mmsg/s), and its lines come in sequence anyway. */
		if (i == 0) {
			uint32_t lines = (rx->leader + (len & ~RB2_MSG_MARK) + RTE_CACHE_LINE_SIZE - 1) /
					 RTE_CACHE_LINE_SIZE;

			lines = RTE_MIN(RTE_MAX(lines, 1u), RB2_IDLE_LINES_MAX);
			__rb2_rx_prefetch_lines(slot + RTE_CACHE_LINE_SIZE, lines - 1);
			if (unlikely(lines != rx->idle_lines))
				rx->idle_lines = lines;
		}
		msgs[i].len = len;
		msgs[i].next_lo = (uint32_t)end;
		i++;
		h = end;
	}
	return (int)i;
}

/**
 * Release the first @p n messages of the last peek (the receiver's head
 * advances past them; their slots return to the sender at the next push).
 *
 * @param msgs
 *   The views of the last rb2_rx_peek_burst(), @p n at most its count.
 */
static inline void
rb2_rx_release_burst(struct rb2_rx *rx, const struct rb2_msg *msgs,
		     unsigned int n)
{
	uint64_t bytes = 0;

	if (n == 0)
		return;
	if (unlikely(rx->poll_msg))
		__rb2_rx_release_poll(rx, msgs, n);
	if (rx->msg_size != 0)
		bytes = (uint64_t)n * rx->msg_size;
	for (unsigned int i = 0; rx->msg_size == 0 && i < n; i++)
		bytes += rb2_msg_len(&msgs[i]);
	/* A burst spans less than one ring (< 2^24 slots): the low 32 bits of
	 * the next head pin down the whole 64-bit value. */
	RB2_POS_STORE(rx->head, rx->head + (uint32_t)(msgs[n - 1].next_lo - (uint32_t)rx->head));
	RB2_STAT_ADD(&rx->stats, messages, n);
	RB2_STAT_ADD(&rx->stats, bytes, bytes);
	if (unlikely(rx->head - rx->synced_head >= rx->gamma))
		__rb2_rx_push(rx);          /* lazy push */
}

/** Callback for rb2_rx_read_burst(): the message at @p data, in place. */
typedef void (*rb2_rx_cb_t)(void *arg, const void *data, uint32_t len);

/**
 * Hand up to @p n messages to @p cb in place, then release them.
 *
 * @return The number handled, or a negative errno as rb2_rx_peek_burst().
 */
static inline int
rb2_rx_read_burst(struct rb2_rx *rx, rb2_rx_cb_t cb, void *arg, unsigned int n)
{
	struct rb2_msg m[32];
	int total = 0;

	while ((unsigned int)total < n) {
		unsigned int want = RTE_MIN(n - (unsigned int)total, 32u);
		int got = rb2_rx_peek_burst(rx, m, want);

		if (got <= 0)
			return total > 0 ? total : got;
		for (int i = 0; i < got; i++)
			cb(arg, m[i].data, rb2_msg_len(&m[i]));
		rb2_rx_release_burst(rx, m, (unsigned int)got);
		total += got;
		if ((unsigned int)got < want)
			break;
	}
	return total;
}

/**
 * Copy one message out.
 *
 * @return
 *   Its length; -EAGAIN (empty); -EMSGSIZE (larger than @p cap: the message
 *   stays in the ring); or the channel's error once drained.
 */
static inline int
rb2_rx_recv(struct rb2_rx *rx, void *buf, uint32_t cap)
{
	struct rb2_msg m = {0};
	int n = rb2_rx_peek_burst(rx, &m, 1);

	if (n <= 0)
		return n == 0 ? -EAGAIN : n;
	if (rb2_msg_len(&m) > cap)
		return -EMSGSIZE;
	memcpy(buf, m.data, rb2_msg_len(&m));
	rb2_rx_release_burst(rx, &m, 1);
	return (int)rb2_msg_len(&m);
}

/** Log type of the channel library. */
extern int rb2_chan_logtype;

#ifdef __cplusplus
}
#endif

#endif /* RB2_CHAN_H */
