/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_L5_H
#define RB2_L5_H

/*
 * The L5 baseline as its authors' code builds it (pfent/L5RDMA,
 * datastructures/VirtualRDMARingBuffer.h), on rb2's transports, so that
 * rb2-perf and the pipeline's `via = l5` links (rb2-nf --preset l5, Fig. 8)
 * measure L5's own ring next to RB²'s and not an RB² channel configured to
 * look like it. A baseline, not an API to build on: it has no end of stream,
 * no peer checks and no wake-ups.
 *
 * The ring is one byte array of a power-of-two size, with no slots and no
 * tail pointer. Each message sits where the last one ended:
 *
 *     [ length: 8 B ][ payload: length B ][ validity: 8 B = 0xDEADDEADBEEFBEEF ]
 *
 * - The sender copies the message into its send buffer (L5's send()), then
 *   WRITEs it: payload and validity first, then the length, in a second
 *   WRITE and a second post (sendParanoid(), the form the RB² paper ran:
 *   its RNICs do not write front to back). Every 4096th message's length
 *   WRITE is signaled and the sender waits for it. Short of room, it READs
 *   the receiver's read position and waits for that READ.
 * - The receiver polls the length at its read position and the validity word
 *   behind the payload until the validity matches, copies the payload out,
 *   zeroes the whole message in the ring (std::fill) and advances its read
 *   position, which the sender READs.
 * - On a load/store transport (shm) the copy into the send buffer is the
 *   WRITE: the sender copies into the receiver's ring and stores the length
 *   last; the READ is a load.
 *
 * What differs from the authors' code:
 * - L5 maps its ring twice in virtual memory so that a message that runs
 *   past the end continues at the start; rb2's regions are DPDK memzones, so
 *   a message that wraps is written in two pieces instead, as L5's older
 *   RDMAMessageBuffer does (counted: wrapped).
 * - The next message starts 8-byte aligned (a message takes its 16 bytes
 *   plus its length rounded up to 8), so that its length is one aligned
 *   word, stored and loaded whole (L5 packs messages byte to byte); the
 *   reader takes a zero length as "nothing yet", so a message is at least a
 *   byte long.
 *
 * One direction, both halves in one process (the sender on one lcore, the
 * receiver on another), as rb2-perf's bw and lat modes run every design.
 * Errors are logged (log type rb2.l5) and returned.
 */

#include <stdint.h>

#include <rb2_xport.h>

/** Signal (and wait for) every this many messages, as L5 does. */
#define RB2_L5_SIGNAL_EVERY 4096

struct rb2_l5;

struct rb2_l5_stats {
	uint64_t messages;   /**< sent */
	uint64_t received;   /**< received, copied out and cleared */
	uint64_t writes;     /**< WRITE WRs posted (0 on load/store) */
	uint64_t posts;      /**< doorbells: rb2_xport_post() calls */
	uint64_t signaled;   /**< signaled WRITEs the sender waited for */
	uint64_t head_reads; /**< READs of the receiver's position */
	uint64_t wrapped;    /**< messages split at the ring's end */
	uint64_t copied_bytes; /**< into the send buffer and out of the ring */
	uint64_t cleared_bytes; /**< zeroed by the receiver */
};

/**
 * Create one L5 ring over @p xp: a sender half for @p tx_lcore and a
 * receiver half for @p rx_lcore, connected to each other.
 *
 * @param bytes
 *   Ring size, rounded up to a power of two (L5 requires one). A message
 *   takes 16 bytes more than its payload.
 * @param max_msg
 *   The largest payload to be sent: refused (NULL) if it cannot fit.
 * @return The ring, or NULL with rte_errno set (the reason is logged).
 */
struct rb2_l5 *rb2_l5_create(struct rb2_xport *xp, const char *name, size_t bytes,
			       uint32_t max_msg, unsigned int tx_lcore, unsigned int rx_lcore);

void rb2_l5_destroy(struct rb2_l5 *r);

/**
 * Send @p len bytes from @p data (sender lcore only): waits while the ring
 * is full, as L5's send() does.
 *
 * @return 0, -EINVAL (@p len 0), -EMSGSIZE (the message does not fit the
 *   ring), or the transport's error (a failed WRITE or READ).
 */
int rb2_l5_send(struct rb2_l5 *r, const void *data, uint32_t len);

/**
 * How many messages of @p len bytes, up to @p n, fit now (sender lcore
 * only), for callers that must see a stop while they wait: where the ring
 * looks full it reads the receiver's position once (a READ, waited for, as
 * L5 does). rb2_l5_send() of that many then finds the room without waiting.
 *
 * @return 1..n, -ENOBUFS (not even one yet), -EINVAL, -EMSGSIZE, or the
 *   transport's error.
 */
int rb2_l5_room(struct rb2_l5 *r, uint32_t len, unsigned int n);

/**
 * Whether the receiver has taken every message sent (sender lcore only):
 * reads its position once (a READ over verbs). L5 has no end of stream;
 * a caller that needs one says so out of band once this is 1.
 *
 * @return 1, 0 (not yet), or the transport's error.
 */
int rb2_l5_drained(struct rb2_l5 *r);

/**
 * Receive one message into @p dst (receiver lcore only), without waiting.
 *
 * @return The message's length, -EAGAIN (none yet), -EMSGSIZE (longer
 *   than @p cap: L5 refuses it too; the message stays), or -EPROTO (a
 *   length no message can have: the ring was overwritten).
 */
int rb2_l5_recv(struct rb2_l5 *r, void *dst, uint32_t cap);

void rb2_l5_stats_get(const struct rb2_l5 *r, struct rb2_l5_stats *st);

/** Ring bytes for @p slots messages of @p size: the paper's 128 x size. */
size_t rb2_l5_ring_bytes(uint32_t slots, uint32_t size);

#endif /* RB2_L5_H */
