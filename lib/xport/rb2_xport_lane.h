/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_XPORT_LANE_H
#define RB2_XPORT_LANE_H

/**
 * @file
 * Lanes: many queues of one lcore over one real QP, one doorbell per loop
 * pass (Kalia's doorbell batching, RDMAbox's request chaining).
 *
 * A queue created with rb2_xport_qp_attr.lane posts into its lane: its WRs
 * wait there, in order, behind those of the lane's other queues, until
 * rb2_xport_lane_flush() posts them all as one chain on the lane's QP,
 * behind one doorbell. Before posting, the chain is tightened:
 *  - a WRITE that continues the one before it (adjacent local and remote
 *    addresses, same keys, the first unsignaled) is merged into it: one WR;
 *  - an unsignaled inline WRITE that a later WRITE of the chain overwrites
 *    entirely, with only WRITEs between them (a pointer WRITTEN twice in one
 *    pass: a channel's tail, a receiver's head), is dropped: over RC the
 *    peer cannot tell it from having looked only after the later one.
 * Inline payloads are captured when posted to the lane, as a NIC captures
 * them at ibv_post_send, so a source word may change before the flush.
 * Completions come back to the queue whose WR it was.
 *
 * An admission window (max_inflight; RDMAbox's traffic regulator, per QP)
 * caps the WRs the lane has posted on its QP and not yet seen complete,
 * whichever queue they came from: the lane then signals every WR it posts
 * (a completion is how it counts), and what the window has no room for
 * waits in the lane, where the queues' later WRs join it and adjacent
 * WRITEs merge before they go (RDMAbox's merging behind its regulator). A
 * queue's own window (rb2_chan_params.max_inflight) still applies too.
 *
 * The lcore must flush its lanes at the end of every loop pass (an empty
 * lane's flush is one compare). A queue that keeps polling while WRs of its
 * own wait in the lane (a wait: a full queue, a full ring) flushes it, so
 * nothing waiting on its own completion can deadlock. Lanes carry one-sided
 * WRs only: no receives (WRITE_WITH_IMM natively, a sleeping receiver's
 * wake-up), no load/store transport (shm in loadstore mode posts nothing).
 *
 * Queues of a lane connect in one process (rb2_xport_qp_connect_local():
 * both lanes connect on the first pair), or to another process's or host's
 * lane (rb2_xport_qp_exchange(), through rb2_tx_connect()/rb2_rx_connect()):
 * each queue's blob goes out of band (verbs: TCP to the same ip:port) in a
 * hello naming both lanes, the first connects the lanes' QPs at the same
 * rendezvous, and every later one must come from that same peer lane.
 * Connect a lane's queues one at a time.
 *
 * @code
 * struct rb2_xport_lane *la = rb2_xport_lane_create(xp, &(struct rb2_xport_lane_params){
 *         .lcore_id = 1 });
 * chan_params.lane = la;     // every channel of lcore 1
 * ...
 * for (;;) {
 *         for (c = 0; c < n; c++) { send on channel c; rb2_tx_flush(tx[c]); }
 *         rb2_xport_lane_flush(la);   // one doorbell for all of them
 * }
 * @endcode
 */

#include <stdint.h>

#include <rb2_xport_core.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rb2_xport;
struct rb2_xport_lane;

/** Lane configuration. */
struct rb2_xport_lane_params {
	unsigned int lcore_id;  /**< the lcore that posts on it */
	uint32_t max_pending;   /**< WRs held until the flush (default 256) */
	uint32_t sq_depth;      /**< the real QP's; 0: 4 x max_pending */
	uint32_t cq_depth;      /**< the real QP's; 0: the driver's default */
	uint32_t max_chain;     /**< WRs per doorbell at most; 0: what the QP takes */
	int no_merge;           /**< 1: post the chain as it came (a baseline) */
	uint32_t max_inflight;  /**< admission window: WRs posted on the QP and not
				     completed, at most, all queues together (0:
				     none); at most the QP's send and completion
				     queue depths */
};

/**
 * @return a lane, or NULL with rte_errno: ENOTSUP (a load/store transport:
 *   nothing is posted), EINVAL (also a window deeper than the QP's queues),
 *   ENOMEM, or the QP's error.
 */
struct rb2_xport_lane *rb2_xport_lane_create(struct rb2_xport *xp,
					     const struct rb2_xport_lane_params *p);

/** Free a lane; its queues must be destroyed first. */
void rb2_xport_lane_destroy(struct rb2_xport_lane *lane);

/**
 * Post every WR waiting in the lane as one chain, behind one doorbell.
 *
 * @return 0 (also when nothing waits), -ENOSPC (the QP is full, or the
 *   admission window: what did not go waits; flush again later, or poll the
 *   lane's queues), or the QP's error.
 */
int rb2_xport_lane_flush(struct rb2_xport_lane *lane);

/**
 * Room in the lane's admission window for @p want more WRs: its window less
 * what is in flight and what waits in the lane. When that is short of
 * @p want it first looks for completions, and if WRs wait, posts what the
 * window takes (a wait, so no flush of a later pass is waited for).
 * Channels on a lane with a window ask it before each transmission, so
 * that a full window defers in their rings, where messages merge.
 *
 * @return the room (UINT32_MAX without a window).
 */
uint32_t rb2_xport_lane_room(struct rb2_xport_lane *lane, uint32_t want);

/** @return the lane's admission window (0: none). */
uint32_t rb2_xport_lane_window(const struct rb2_xport_lane *lane);

/** What a lane did. */
struct rb2_xport_lane_stats {
	uint64_t doorbells;     /**< chains posted on the real QP */
	uint64_t wrs_in;        /**< WRs its queues posted into it */
	uint64_t wrs_out;       /**< WRs it posted on the real QP */
	uint64_t merged;        /**< WRITEs merged into the one before */
	uint64_t superseded;    /**< WRITEs dropped: overwritten later in the chain */
	uint64_t forced;        /**< flushes forced: lane full, or a queue waiting */
	uint64_t deferrals;     /**< posts the admission window held back */
	uint32_t max_inflight_seen; /**< most WRs in flight at once (with a window) */
	uint32_t queues;        /**< queues on it now */
};

void rb2_xport_lane_stats_get(const struct rb2_xport_lane *lane,
			      struct rb2_xport_lane_stats *st);

#ifdef __cplusplus
}
#endif

#endif /* RB2_XPORT_LANE_H */
