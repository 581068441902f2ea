/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_BULK_H
#define RB2_BULK_H

/**
 * @file
 * Large messages from application memory, on an RB² channel (zero copy on
 * both sides).
 *
 * A message below the crossover (params.inline_max) is copied into the ring
 * as usual. A larger one stays where the application has it: the sender
 * registers the buffer through the registration cache (rb2_mr_cache.h) and
 * puts a small descriptor into the ring (address, length and key of up to
 * RB2_BULK_MAX_SEGS registered segments); the receiver registers its own
 * destination through its cache and READs the payload straight into it.
 * Neither CPU touches the payload.
 *
 * The sender learns that the receiver has finished with a buffer from the
 * ring itself: the receiver releases a descriptor's slot only once its READs
 * have completed, and pushes its head at once; a descriptor behind the head
 * the sender sees is a buffer the application may reuse or free. Its cookie
 * comes back from rb2_bulk_tx_done(). A buffer about to be freed is
 * forgotten first (rb2_bulk_tx_forget()), so that the cache never hands a
 * dead registration to a later buffer at the same address.
 *
 * Needs a transport that registers application memory and READs
 * (RB2_XPORT_CAP_READ and rb2_xport_mr_reg(): verbs, loop). Elsewhere
 * (shm, whose peers are other processes) every message is copied through
 * the ring, and the sender says so once.
 *
 * @code
 * struct rb2_bulk_tx *b = rb2_bulk_tx_create(tx, NULL);
 * int r = rb2_bulk_send(b, buf, len, cookie);  // 0: copied, 1: by reference
 * struct rb2_bulk_done d[8];
 * int n = rb2_bulk_tx_done(b, d, 8);           // buffers given back
 *
 * struct rb2_bulk_rx *br = rb2_bulk_rx_create(rx, NULL);
 * int len;
 * while ((len = rb2_bulk_recv(br, dst, cap)) == -EAGAIN || len == -EINPROGRESS)
 *         ;                                    // same dst until it completes
 * @endcode
 *
 * The descriptor and the inline header are the channel's wire format for
 * this layer: a channel is either a bulk channel on both ends or on neither.
 * Not thread-safe: each half belongs to its channel half's lcore.
 */

#include <stddef.h>
#include <stdint.h>

#include <rb2_chan.h>
#include <rb2_mr_cache.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rb2_mr_cache;

/** Segments one message may span, on either side (the cache's pieces). */
#define RB2_BULK_MAX_SEGS 4

/** Default crossover: messages of this many bytes and more go by reference. */
#define RB2_BULK_INLINE_MAX_DEFAULT (64u << 10)

/** Configuration of either half. */
struct rb2_bulk_params {
	/**
	 * Sender: messages shorter than this are copied into the ring; others
	 * go by reference (default RB2_BULK_INLINE_MAX_DEFAULT; 0: every
	 * message by reference; UINT32_MAX: none, the copying baseline).
	 * Receiver: unused.
	 */
	uint32_t inline_max;
	/** Sender: buffers lent and not yet given back, at most (default 64). */
	uint32_t max_refs;
	/** The registration cache to use, or NULL for one of the half's own
	 *  over the channel's transport. A shared cache is the caller's to
	 *  destroy, after the halves. */
	struct rb2_mr_cache *cache;
};

/** Fill @p p with the defaults. */
void rb2_bulk_params_init(struct rb2_bulk_params *p);

struct rb2_bulk_tx;
struct rb2_bulk_rx;

/**
 * Make @p tx a bulk sender.
 *
 * @param p  NULL for the defaults.
 * @return NULL with rte_errno: EINVAL (a fixed-size channel, or a head the
 *   receiver does not push: lazy pull, RB2_CHAN_F_LAZY_HEAD), ENOMEM.
 */
struct rb2_bulk_tx *rb2_bulk_tx_create(struct rb2_tx *tx, const struct rb2_bulk_params *p);

/**
 * Free a bulk sender. Buffers still lent are given up (their registrations
 * released): call it once the channel is drained or dead.
 */
void rb2_bulk_tx_destroy(struct rb2_bulk_tx *b);

/**
 * Send @p len bytes at @p buf.
 *
 * @param cookie  returned by rb2_bulk_tx_done() once a lent buffer is free.
 * @return
 *   0: copied into the ring, @p buf is free now (the message goes at the
 *   channel's next transmission or flush);
 *   1: lent: the descriptor is published, @p buf must stay untouched until
 *   rb2_bulk_tx_done() gives @p cookie back;
 *   -EAGAIN: no room (the ring, the lent buffers, or the cache: reap
 *   rb2_bulk_tx_done() and retry; nothing was taken);
 *   -EMSGSIZE (inline: above the ring's largest message); the
 *   registration's error (-EINVAL: a piece over 4 GiB); or the channel's
 *   error.
 */
int rb2_bulk_send(struct rb2_bulk_tx *b, const void *buf, size_t len, uint64_t cookie);

/** A lent buffer given back. */
struct rb2_bulk_done {
	uint64_t cookie;
	/** 0: the receiver has its copy; else the channel's error (the
	 *  buffer is free, the message lost and counted: ref_failed). */
	int status;
};

/**
 * Buffers the receiver has finished with, oldest first.
 *
 * @return the number written to @p done (0: none yet).
 */
int rb2_bulk_tx_done(struct rb2_bulk_tx *b, struct rb2_bulk_done *done, unsigned int n);

/**
 * The application will free or unmap [@p buf, @p buf + @p len): drop its
 * registrations, so that no later send finds them.
 *
 * @return 0, or -EBUSY (part of it is lent: wait for rb2_bulk_tx_done()).
 */
int rb2_bulk_tx_forget(struct rb2_bulk_tx *b, void *buf, size_t len);

/**
 * Make @p rx a bulk receiver.
 *
 * @return NULL with rte_errno EINVAL (a fixed-size channel) or ENOMEM.
 */
struct rb2_bulk_rx *rb2_bulk_rx_create(struct rb2_rx *rx, const struct rb2_bulk_params *p);

/** Free a bulk receiver (waiting for a READ in flight, if any). */
void rb2_bulk_rx_destroy(struct rb2_bulk_rx *b);

/**
 * Receive the next message into @p dst.
 *
 * An inline message is copied out at once. A lent one is READ into @p dst
 * by the NIC: the call returns -EINPROGRESS, and the caller calls again with
 * the same @p dst until the length comes back. All of [@p dst, @p dst +
 * @p cap) is registered (through the cache: a destination used again is a
 * hit), so it must be memory the caller owns.
 *
 * @return
 *   The message's length; -EAGAIN (nothing yet); -EINPROGRESS (a READ into
 *   @p dst is in flight); -EMSGSIZE (larger than @p cap: it stays in the
 *   ring); -EBUSY (another @p dst has a READ in flight); -EPROTO (not a
 *   bulk message: the channel fails); or the channel's error.
 */
int rb2_bulk_recv(struct rb2_bulk_rx *b, void *dst, size_t cap);

/** The receiver will free [@p dst, @p dst + @p len): as rb2_bulk_tx_forget(). */
int rb2_bulk_rx_forget(struct rb2_bulk_rx *b, void *dst, size_t len);

/**
 * @name Lending, one buffer at a time
 * The pieces rb2_bulk_send() and rb2_bulk_recv() are made of, for a layer
 * that frames its own messages (lib/conn lends buffers on a connection):
 * describe a registered buffer, check a descriptor from the wire, and READ
 * one over a channel's queue.
 * @{
 */

/** One registered piece of a lent buffer, as the peer READs it (wire format). */
struct rb2_bulk_seg {
	uint64_t addr;   /**< in the lender's address space */
	uint32_t len;
	uint32_t rkey;
};

/** A lent buffer's descriptor (wire format: RB2_BULK_REF_SIZE(nsegs) bytes). */
struct rb2_bulk_ref {
	uint32_t tag;    /**< the framing layer's (a kind, an id): not read here */
	uint32_t nsegs;  /**< 1 to RB2_BULK_MAX_SEGS */
	uint64_t len;    /**< payload bytes: the sum of the segments' */
	struct rb2_bulk_seg segs[RB2_BULK_MAX_SEGS];
};

/** Bytes of a descriptor with @p n segments on the wire. */
#define RB2_BULK_REF_SIZE(n) (16u + 16u * (unsigned int)(n))

/**
 * A registration cache for lending over @p tx (or receiving READs over
 * @p rx: pass one half, the other NULL), called @p name in telemetry
 * (NULL: after the half, bulk-tx.<channel> or bulk-rx.<channel>).
 * @return NULL where the transport cannot lend application memory to its
 *   peer (shm: its peers are other processes), or out of memory.
 */
struct rb2_mr_cache *rb2_bulk_cache_create(struct rb2_tx *tx, struct rb2_rx *rx,
					   const char *name);

/**
 * Register [@p buf, @p buf + @p len) through @p c and describe it in
 * @p ref (its tag untouched). The segments to give back with
 * rb2_mr_cache_put() once the peer is done are written to @p held.
 * @return the segment count, or -EAGAIN (the cache is full of buffers in
 *   use), or the registration's error.
 */
int rb2_bulk_ref_make(struct rb2_mr_cache *c, const void *buf, size_t len,
		      struct rb2_bulk_ref *ref, struct rb2_mr_seg *held);

/** @return 1 if @p size bytes at @p desc are a well-formed descriptor, else 0. */
int rb2_bulk_ref_valid(const void *desc, uint32_t size);

/** A READ of a lent buffer in flight (the caller's memory). */
struct rb2_bulk_read {
	void *dst;
	uint64_t len;
	uint64_t target;          /* done when the queue has completed this many */
	unsigned int ndsegs;
	struct rb2_mr_seg dsegs[RB2_BULK_MAX_SEGS];
};

/**
 * READ the buffer @p ref describes into @p dst over @p rx's queue. All of
 * [@p dst, @p dst + @p cap) is registered through @p c (a destination used
 * again is a hit).
 * @return the READ WRs posted (> 0), -EMSGSIZE (longer than @p cap),
 *   -EAGAIN (the cache is full), or the error that failed the channel.
 */
int rb2_bulk_read_start(struct rb2_rx *rx, struct rb2_mr_cache *c, const struct rb2_bulk_ref *ref,
			void *dst, size_t cap, struct rb2_bulk_read *rd);

/**
 * Has the READ of @p rd completed? Reaps @p rx's completions.
 * @return 0 (done: @p dst holds the payload, its registration is given
 *   back), -EINPROGRESS, or the channel's error (given back too: a failed
 *   queue READs no more).
 */
int rb2_bulk_read_poll(struct rb2_rx *rx, struct rb2_mr_cache *c, struct rb2_bulk_read *rd);
/** @} */

/** Counters of a bulk half (the sender's, then the receiver's). */
#define RB2_BULK_STATS(X)                                                       \
	X(inline_msgs, "messages copied through the ring")                      \
	X(inline_bytes, "their payload bytes")                                  \
	X(ref_msgs, "messages lent by reference (sender) or READ (receiver)")   \
	X(ref_bytes, "their payload bytes")                                     \
	X(ref_done, "lent buffers given back (sender)")                         \
	X(ref_failed, "lent buffers given back by a failed channel (sender)")   \
	X(ref_waits, "sends refused: every lent buffer still out (sender)")     \
	X(reads, "READ WRs posted (receiver)")

#define RB2_BULK_STAT_FIELD(n, d) uint64_t n;
struct rb2_bulk_stats { RB2_BULK_STATS(RB2_BULK_STAT_FIELD) };
#undef RB2_BULK_STAT_FIELD

/** Counters of a half (its cache's: rb2_mr_cache_stats_get() on rb2_bulk_*_cache()). */
void rb2_bulk_tx_stats_get(const struct rb2_bulk_tx *b, struct rb2_bulk_stats *st);
void rb2_bulk_rx_stats_get(const struct rb2_bulk_rx *b, struct rb2_bulk_stats *st);

/** The registration cache a half uses (NULL: it copies everything). */
struct rb2_mr_cache *rb2_bulk_tx_cache(const struct rb2_bulk_tx *b);
struct rb2_mr_cache *rb2_bulk_rx_cache(const struct rb2_bulk_rx *b);

#ifdef __cplusplus
}
#endif

#endif /* RB2_BULK_H */
