/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_XPORT_CORE_H
#define RB2_XPORT_CORE_H

/**
 * @file
 * Transport layer: structure layouts and flags.
 *
 * @internal Included by rb2_xport.h; do not include directly.
 */

#include <stddef.h>
#include <stdint.h>

#include <rte_common.h>
#include <rte_memzone.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rb2_xport;
struct rb2_xport_qp;
struct rb2_xport_lane;

/** Work request opcodes, as the RDMA verbs that carry them. */
enum rb2_wr_opcode {
	RB2_WR_WRITE = 0,     /**< one-sided WRITE of local -> remote */
	RB2_WR_WRITE_IMM = 1, /**< WRITE that also raises a peer completion */
	RB2_WR_READ = 2,      /**< one-sided READ of remote -> local */
	/**
	 * Wake a peer that sleeps on this queue's doorbell (RB2_XPORT_CAP_WAKE);
	 * @c remote is its doorbell word, no payload. In chain order, so it
	 * lands after every WRITE before it. shm: the word changes and a
	 * futex wakes its sleeper; verbs: a zero-length WRITE_WITH_IMM of
	 * RB2_IMM_WAKE, whose receive completion raises the peer's completion
	 * channel.
	 */
	RB2_WR_WAKE = 3,
};

/** Immediate of a wake-up (RB2_WR_WAKE on verbs): never a slot count. */
#define RB2_IMM_WAKE UINT32_MAX

/** Work request flags. */
#define RB2_WR_SIGNALED (1u << 0) /**< report a completion for this WR */
#define RB2_WR_INLINE (1u << 1)   /**< copy the payload at post time */

/**
 * One work request. A chain is an array of them, posted behind one doorbell
 * by rb2_xport_post(); a chain executes in array order.
 */
struct rb2_xport_wr {
	uint64_t wr_id;  /**< returned in the completion, if signaled */
	void *local;     /**< source of a WRITE, destination of a READ */
	uint64_t remote; /**< address in the peer's registered memory */
	uint32_t len;    /**< bytes */
	uint32_t lkey;   /**< key of the region holding @c local */
	uint32_t rkey;   /**< peer's key of the region holding @c remote */
	uint16_t opcode; /**< enum rb2_wr_opcode */
	uint16_t flags;  /**< RB2_WR_* */
	uint32_t imm;    /**< immediate data (RB2_WR_WRITE_IMM) */
};

/** Completion status: 0 is success; other values are driver-specific. */
#define RB2_WC_SUCCESS 0

/** One completion. */
struct rb2_xport_wc {
	uint64_t wr_id;   /**< of the completed signaled WR */
	int32_t status;   /**< RB2_WC_SUCCESS or a driver status code */
	uint16_t opcode;  /**< enum rb2_wr_opcode, or RB2_WC_RECV_IMM */
	uint16_t pad;
	uint32_t imm;     /**< immediate of a received WRITE_WITH_IMM */
	uint32_t byte_len;
};

/** Opcode of a completion for an incoming WRITE_WITH_IMM. */
#define RB2_WC_RECV_IMM 0x100

/** Capability flags of a transport (rb2_xport_caps()). */
/** The sender may store straight into the peer's memory (rb2_xport_peer_ptr()). */
#define RB2_XPORT_CAP_LOADSTORE (1u << 0)
/** Peers may live in other processes (named rendezvous). */
#define RB2_XPORT_CAP_MULTIPROC (1u << 1)
/** Peers may live on other hosts. */
#define RB2_XPORT_CAP_REMOTE (1u << 2)
/** WRITE_WITH_IMM and receive completions are supported. */
#define RB2_XPORT_CAP_IMM (1u << 3)
/** READ is supported. */
#define RB2_XPORT_CAP_READ (1u << 4)
/** A sleeping peer can be woken (RB2_WR_WAKE, rb2_xport_doorbell_arm()). */
#define RB2_XPORT_CAP_WAKE (1u << 5)
/** Descriptors go to a peer out of band (the driver's oob_exchange): a lane
 *  reaches lanes of other processes and hosts (rb2_xport_lane.h). */
#define RB2_XPORT_CAP_OOB (1u << 6)

/** Memory registered with a transport. Peers address it by (addr, rkey). */
struct rb2_xport_mr {
	void *addr;       /**< local virtual address */
	size_t len;       /**< bytes */
	uint32_t lkey;    /**< key for local use in WRs */
	uint32_t rkey;    /**< key a peer uses to access it */
	int socket_id;    /**< NUMA socket of the memory */
	const struct rte_memzone *mz; /**< backing memzone */
	void *drv;        /**< driver private (e.g. struct ibv_mr) */
};

/** Per-queue fast-path function types (see rb2_xport_post()). */
typedef int (*rb2_xport_post_t)(struct rb2_xport_qp *qp,
				const struct rb2_xport_wr *wrs, unsigned int n);
typedef int (*rb2_xport_poll_t)(struct rb2_xport_qp *qp,
				struct rb2_xport_wc *wcs, unsigned int n);

/**
 * A queue: one per lcore per peer. Nothing in it is shared between lcores.
 * The first cache line holds what the fast path touches on every call, in
 * the manner of ibv_context's ops: the inline rb2_xport_post() calls
 * straight through @c post.
 */
struct rb2_xport_qp {
	rb2_xport_post_t post; /**< hot: post a WR chain */
	rb2_xport_poll_t poll; /**< hot: poll completions */
	void *drv;             /**< driver private queue state */
	struct rb2_xport *xp;  /**< owning transport */
	unsigned int lcore_id; /**< lcore that posts on this queue */
	uint32_t max_inline;   /**< largest payload accepted with RB2_WR_INLINE */
	uint32_t sq_depth;     /**< WRs that may be outstanding */
	uint32_t cq_depth;     /**< completions that may be pending */
	uint32_t max_chain;    /**< WRs one post takes, at most; 0: any number */
	int connected;         /**< 1 once connected to a peer */
	/** 1: the peer is in this process (rb2_xport_qp_connect_local()), so
	 *  it cannot see us exit; 0: exchanged, wherever the peer is. */
	int peer_local;
	struct rb2_xport_lane *lane; /**< the lane it posts into, or NULL (rb2_xport_lane.h) */
	/** Requests for a wake-up the driver made of the device (verbs: CQ
	 *  arms, ibv_req_notify_cq()); rb2_xport_doorbell_arm() makes one only
	 *  when none is outstanding. */
	uint64_t wake_requests;
	/** Reads of its doorbell's descriptor (verbs: of the completion
	 *  channel, a system call each) by rb2_xport_doorbell_done() and
	 *  rb2_xport_doorbell_drain(); rb2_xport_doorbell_leave() makes none
	 *  (verbs with readall=1: one). */
	uint64_t wake_reads;
} __rte_cache_aligned;

/** Attributes of a new queue. */
struct rb2_xport_qp_attr {
	unsigned int lcore_id; /**< lcore that will post on it */
	uint32_t sq_depth;     /**< outstanding WRs needed; 0: driver default */
	uint32_t cq_depth;     /**< pending completions needed; 0: driver default */
	uint32_t max_inline;   /**< inline bytes needed; 0: driver default */
	uint32_t recv_depth;   /**< receive WRs for WRITE_WITH_IMM; 0: none */
	uint32_t wake;         /**< 1: its owner may sleep on it (RB2_XPORT_CAP_WAKE) */
	/** Post into this lane instead of a QP of its own (rb2_xport_lane.h);
	 *  NULL: its own QP. */
	struct rb2_xport_lane *lane;
};

/** What a sleeper waits on (rb2_xport_doorbell_arm()): a 32-bit word that
 * changes, or a file descriptor that becomes readable. */
struct rb2_xport_doorbell {
	uint32_t *word; /**< futex word in our own memory, or NULL */
	uint32_t seen;  /**< a change from this value ends the wait */
	int fd;         /**< or: readable ends the wait (verbs: a completion channel) */
};

/** Which side of a connection this is. */
enum rb2_xport_role {
	RB2_XPORT_PASSIVE = 0, /**< listens / waits (a server) */
	RB2_XPORT_ACTIVE = 1,  /**< connects (a client) */
};

/** Largest blob carried by a connection exchange. */
#define RB2_XPORT_BLOB_MAX 192

#ifdef __cplusplus
}
#endif

#endif /* RB2_XPORT_CORE_H */
