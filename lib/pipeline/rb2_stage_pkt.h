/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_STAGE_PKT_H
#define RB2_STAGE_PKT_H

/**
 * @file
 * Packets on a pipeline's edges: DPDK mbufs, with zero copy wherever the two
 * ends share memory. A stage declares the edges that carry packets
 * (rb2_stage_ops.pkt_edges) and whether its input is packets
 * (rb2_stage_ops.takes_pkts); the pipeline refuses a link between the two
 * kinds.
 *
 * Who owns an mbuf, at every step:
 *  1. A source (the port's rx stage) gets mbufs from rte_eth_rx_burst(): it
 *     owns them.
 *  2. rb2_stage_emit_pkts() takes every mbuf it is given, delivered or not;
 *     the caller must not touch them after the call. How they travel is the
 *     link's `carry`:
 *     - `pointers` (the default on a same-lcore edge and on shm, between the
 *       lcores of a process or the processes of one DPDK process group):
 *       the mbufs travel, zero copy. On a same-lcore edge as pointers; on an
 *       RB2 channel each in a 40-byte descriptor (the mbuf, its data
 *       address, lengths, port, receive time, and its pool when it is
 *       plain: direct, one segment, refcnt 1), up to 64 in one message, so
 *       that the receiving lcore reads no mbuf header and puts plain mbufs
 *       back in their pool unread. (`descriptors` is the same; it matters
 *       only for `via = rte_ring`, whose ring then holds descriptors, not
 *       pointers.)
 *     - `bytes` (the default across hosts, over verbs): each packet's bytes
 *       travel in the ring after a 16-byte header (struct rb2_pkt_hdr), and
 *       the mbuf is freed once copied.
 *     When it cannot deliver (the pipeline aborted, the link failed), it
 *     frees what it could not deliver and counts it (the pipeline's run
 *     then fails, as for any failed emit).
 *  3. The next stage's process() sees one message per packet, read in
 *     place: msgs[i].data and len are the packet's first segment (pointers)
 *     or its bytes in the ring (bytes). rb2_stage_pkts() gives each one's
 *     mbuf, receive time, length and port.
 *  4. During process() the stage may take packet i with
 *     rb2_stage_pkt_take(): it then owns the mbuf (on a byte link, a new
 *     one from the stage's socket's pool, the bytes copied in), and must
 *     emit, transmit or free it.
 *  5. When process() returns, the pipeline frees every mbuf of the burst
 *     that was not taken. A stage that only reads (parse, counting) never
 *     frees anything, and never copies a packet. A stage must not change
 *     an mbuf it did not take (its refcnt, segments or data): a plain one
 *     goes back to its pool as the sender described it.
 *
 * Size a pointer link's ring below the pool: it holds up to slots x
 * (slot size / 40) mbufs. A ring that can hold the whole pool turns a slow
 * consumer into an rx stage without mbufs (the port drops, counting
 * rx_nombuf) instead of backpressure (rx waits, the port's queue holds).
 */

#include <stdint.h>

#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>

#include <rb2_stage.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Packet pointers one ring message carries at most. */
#define RB2_PKT_PTRS_MAX 64u

/** A packet in process(), beside msgs[i] (rb2_stage_pkts()). */
struct rb2_pkt {
	struct rte_mbuf *m; /**< its mbuf; NULL on a byte link (take makes one) */
	uint64_t ts_ns;     /**< receive time, ns since the epoch */
	uint32_t pkt_len;   /**< the whole packet (msgs[i].len: its first segment) */
	uint16_t port;      /**< the port it arrived on */
	uint16_t rsvd;
};

/** What precedes a packet's bytes in the ring on a byte link. */
struct rb2_pkt_hdr {
	uint64_t ts_ns;
	uint32_t pkt_len;
	uint16_t port;
	uint16_t rsvd;
};

/**
 * In process() of a stage that takes packets: the packets of this burst,
 * one per message (packet i is msgs[i]).
 */
const struct rb2_pkt *rb2_stage_pkts(const struct rb2_stage *st);

/**
 * In process(): take packet @p i of this burst. The caller owns the result.
 *
 * @return The mbuf, or NULL (already taken; or, on a byte link, the pool is
 *   empty: the packet is then counted as dropped by the stage).
 */
struct rte_mbuf *rb2_stage_pkt_take(struct rb2_stage *st, unsigned int i);

/**
 * Emit @p n packets on edge @p edge (a packet edge), taking every one of
 * them (see above). Waits for room as rb2_stage_emit() does.
 *
 * @return How many were delivered: @p n, less any larger than a byte link
 *   carries (freed and counted); or a negative errno as rb2_stage_emit(),
 *   after the packets it could not deliver were freed and counted.
 */
int rb2_stage_emit_pkts(struct rb2_stage *st, unsigned int edge, struct rte_mbuf **pkts,
			unsigned int n);

/**
 * The packet mempool of a NUMA socket: "rb2_pkts_s<socket>", or @p name,
 * created by the first caller in the process group with @p size mbufs, a
 * per-lcore cache of @p cache and @p data_room bytes of buffer, and found
 * by name by the others (DPDK secondaries too).
 *
 * @return The pool, or NULL with rte_errno set (ENOMEM: hugepage memory too
 *   small for @p size).
 */
struct rte_mempool *rb2_pkt_pool(const char *name, int socket, unsigned int size,
				 unsigned int cache, uint16_t data_room);

/**
 * The DLT_* link type of the packets port @p port receives (what
 * rb2_trace_parse() takes): Ethernet (1), except for a net_pcap port that
 * reads a capture file (rx_pcap=FILE), which hands each of the file's
 * records up as it is: the file's own link type then (raw IP for
 * rb2-tracegen's default output). Found once per port (it opens the file),
 * then remembered; see rb2_pkt_linktype() for the fast path.
 */
int rb2_pkt_port_linktype(uint16_t port);

/** @internal Each port's link type plus one, 0 until rb2_pkt_port_linktype() found it. */
extern uint16_t rb2_pkt_port_lt[RTE_MAX_ETHPORTS];

/** In process(): the link type of packet @p pk's bytes (rb2_pkt_port_linktype()). */
static inline int
rb2_pkt_linktype(const struct rb2_pkt *pk)
{
	uint16_t v = pk->port < RTE_MAX_ETHPORTS ?
		     __atomic_load_n(&rb2_pkt_port_lt[pk->port], __ATOMIC_RELAXED) : 0;

	return likely(v != 0) ? v - 1 : rb2_pkt_port_linktype(pk->port);
}

/** @internal The mbuf rx-timestamp field and flag (registered by rb2_pkt_pool()). */
extern int rb2_pkt_ts_offset;
extern uint64_t rb2_pkt_ts_flag;

/** @return the receive timestamp an rx stage or PMD gave @p m, or 0. */
static inline uint64_t
rb2_pkt_ts(const struct rte_mbuf *m)
{
	if (rb2_pkt_ts_offset < 0 || (m->ol_flags & rb2_pkt_ts_flag) == 0)
		return 0;
	return *RTE_MBUF_DYNFIELD(m, rb2_pkt_ts_offset, const rte_mbuf_timestamp_t *);
}

/** Stamp @p m with receive time @p ns (an rx stage, for a PMD that does not). */
static inline void
rb2_pkt_ts_set(struct rte_mbuf *m, uint64_t ns)
{
	if (rb2_pkt_ts_offset < 0)
		return;
	*RTE_MBUF_DYNFIELD(m, rb2_pkt_ts_offset, rte_mbuf_timestamp_t *) = ns;
	m->ol_flags |= rb2_pkt_ts_flag;
}

#ifdef __cplusplus
}
#endif

#endif /* RB2_STAGE_PKT_H */
