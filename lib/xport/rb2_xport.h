/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_XPORT_H
#define RB2_XPORT_H

/**
 * @file
 * The transport API: what RB² needs from a NIC.
 *
 * A transport ("shm", "verbs", ...) registers memory that a peer can WRITE,
 * connects one queue per lcore per peer by exchanging an opaque blob, posts
 * chains of one-sided WRITEs (signaled or inline per entry) behind one
 * doorbell, and polls completions.
 *
 * @code
 * struct rb2_xport *xp = rb2_xport_open("shm", "mode=copy");
 * struct rb2_xport_mr mr;
 * rb2_xport_mr_alloc(xp, "ring0", 1 << 20, SOCKET_ID_ANY, &mr);
 * struct rb2_xport_qp_attr attr = { .lcore_id = rte_lcore_id() };
 * struct rb2_xport_qp *qp = rb2_xport_qp_create(xp, &attr);
 * rb2_xport_qp_exchange(qp, "ring0", RB2_XPORT_ACTIVE, &desc, sizeof(desc),
 *                       &peer, sizeof(peer), 5000);
 * struct rb2_xport_wr wr[2] = { ...data..., ...pointer, RB2_WR_SIGNALED... };
 * rb2_xport_post(qp, wr, 2);                 // one doorbell
 * struct rb2_xport_wc wc;
 * while (rb2_xport_poll(qp, &wc, 1) == 0) ;  // the pointer WRITE completed
 * @endcode
 *
 * Error convention: constructors return NULL and set rte_errno; integer
 * functions return 0 (or a count) on success and a negative errno value.
 */

#include <rb2_xport_core.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Open a transport.
 *
 * @param name
 *   Driver name ("shm", "verbs").
 * @param args
 *   Driver arguments, "key=value,key=value" (NULL or "" for defaults).
 *   shm: mode=loadstore|copy. verbs: dev=NAME,port=N,gid=N.
 * @return
 *   The transport, or NULL with rte_errno: ENOENT (no such driver),
 *   EINVAL (bad arguments), ENODEV (no device), ENOMEM.
 */
struct rb2_xport *rb2_xport_open(const char *name, const char *args);

/**
 * Open a transport from one spec string "name[,key=value...]", the form
 * apps take on their command line (--transport shm,mode=copy).
 *
 * @return As rb2_xport_open().
 */
struct rb2_xport *rb2_xport_open_spec(const char *spec);

/** Close a transport. Its queues and regions must be freed first. */
void rb2_xport_close(struct rb2_xport *xp);

/** @return the driver name of a transport. */
const char *rb2_xport_name(const struct rb2_xport *xp);

/** @return the RB2_XPORT_CAP_* flags of a transport. */
uint32_t rb2_xport_caps(const struct rb2_xport *xp);

/**
 * @return the NUMA socket the transport's memory belongs on (the device's
 * node for verbs; the caller's socket for shm), or SOCKET_ID_ANY.
 */
int rb2_xport_socket(const struct rb2_xport *xp);

/**
 * Allocate memory on a socket and register it with the transport.
 *
 * @param name
 *   Unique name (at most RTE_MEMZONE_NAMESIZE - 1 bytes); other processes
 *   of a DPDK multi-process group can find the memory by it.
 * @param len
 *   Bytes; the memory is zeroed and cache-line aligned.
 * @param socket_id
 *   NUMA socket, or SOCKET_ID_ANY for the transport's own.
 * @param[out] mr
 *   The registered region.
 * @return
 *   0, or -EEXIST (name in use), -ENOMEM, -EINVAL.
 */
int rb2_xport_mr_alloc(struct rb2_xport *xp, const char *name, size_t len,
		       int socket_id, struct rb2_xport_mr *mr);

/**
 * Deregister and free a region from rb2_xport_mr_alloc(). A region a peer
 * holds (rb2_xport_peer_hold()) stays allocated until the peer releases it
 * too, or dies.
 */
void rb2_xport_mr_free(struct rb2_xport *xp, struct rb2_xport_mr *mr);

/**
 * Keep a peer's region (from its rb2_xport_mr_alloc()) allocated while this
 * process may store into it: hold it once connected, and release it after
 * destroying the queue that stores into it.
 *
 * Why: on RDMA, freeing a region revokes its rkey, so a WRITE that arrives
 * late fails at the NIC; there nothing needs holding. shm has no such check:
 * a store into freed memory would land in whatever the group allocated there
 * since (another channel's ring). So an shm region lives until both its
 * owner and its one holder have let go, or the other of the two has died.
 *
 * @param remote, rkey
 *   The region's address and key, as its owner advertised them.
 * @return
 *   0 (also where nothing needs holding), -ESTALE (no region with @p rkey
 *   at @p remote any more: its owner freed it), -EBUSY (another peer holds
 *   it).
 */
int rb2_xport_peer_hold(struct rb2_xport *xp, uint64_t remote, uint32_t rkey);

/** Let go of a region held by rb2_xport_peer_hold(); its last user frees it. */
void rb2_xport_peer_release(struct rb2_xport *xp, uint64_t remote, uint32_t rkey);

/**
 * Register memory the application owns (a send buffer outside any ring).
 * Slow (verbs: ibv_reg_mr pins the pages): rb2_mr_cache.h keeps them.
 *
 * @return 0, -ENOTSUP (the transport has nothing to register: shm), or
 *   the driver's error.
 */
int rb2_xport_mr_reg(struct rb2_xport *xp, void *addr, size_t len,
		     struct rb2_xport_mr *mr);

/** Deregister a region from rb2_xport_mr_reg(). */
void rb2_xport_mr_dereg(struct rb2_xport *xp, struct rb2_xport_mr *mr);

/**
 * Create a queue for one lcore.
 *
 * @return The queue, or NULL with rte_errno set (EINVAL, ENOMEM, ENOTSUP).
 */
struct rb2_xport_qp *rb2_xport_qp_create(struct rb2_xport *xp,
					 const struct rb2_xport_qp_attr *attr);

/** Destroy a queue (disconnecting it first if needed). */
void rb2_xport_qp_destroy(struct rb2_xport_qp *qp);

/**
 * Connect two queues of this process to each other (a loopback pair), as an
 * in-process channel does. Both must come from the same transport.
 *
 * @return 0, or -EINVAL, -EISCONN, -ENOTSUP.
 */
int rb2_xport_qp_connect_local(struct rb2_xport_qp *a, struct rb2_xport_qp *b);

/**
 * Connect a queue to a peer found by @p peer, exchanging blobs with it.
 * Blocks until the peer has answered or @p timeout_ms passed.
 *
 * @param peer
 *   Driver-specific rendezvous: shm: a name both sides use (the peer may be
 *   another lcore or another process of the group); verbs: "ip:port".
 * @param role
 *   RB2_XPORT_PASSIVE (waits / listens) or RB2_XPORT_ACTIVE (connects).
 * @param blob, len
 *   Local blob, at most RB2_XPORT_BLOB_MAX bytes.
 * @param[out] peer_blob, peer_cap
 *   Buffer receiving the peer's blob.
 * @return
 *   The peer blob's length, or -ETIMEDOUT, -ECONNREFUSED, -EMSGSIZE
 *   (a blob too large), -EADDRINUSE (two sides of one role: shm), -ENOTSUP.
 */
int rb2_xport_qp_exchange(struct rb2_xport_qp *qp, const char *peer,
			  enum rb2_xport_role role, const void *blob, size_t len,
			  void *peer_blob, size_t peer_cap, unsigned int timeout_ms);

/** One queue of rb2_xport_qp_exchange_n(): what it sends, and where the
 *  peer's blob for it lands. */
struct rb2_xport_exch {
	struct rb2_xport_qp *qp;
	enum rb2_xport_role role;       /* as rb2_xport_qp_exchange()'s */
	const void *blob;               /* at most RB2_XPORT_BLOB_MAX bytes */
	size_t len;
	void *peer_blob;
	size_t peer_cap;
	int peer_len;                   /* [out] the peer's blob's length */
};

/**
 * Connect @p n queues to a peer's over a stream socket (@p peer "fd:N"),
 * the i-th to the peer's i-th: what @p n calls of rb2_xport_qp_exchange()
 * in this order would do, on both sides. A driver may send all the queues'
 * addresses and blobs in one message each way (verbs does), so the set-up
 * waits for one round trip, not @p n, and both ends create their queues
 * before it rather than one at a time between them. Other drivers, and
 * lanes, exchange the queues one after another over the socket, whose
 * bytes keep their order. A named rendezvous is refused: taken back to
 * back, shm's would find the last exchange's zone. Both sides must call
 * this.
 *
 * @return
 *   0, or the first failure's -errno (as rb2_xport_qp_exchange()'s; and
 *   -EINVAL for a peer that is no "fd:N"); the queues before it may be
 *   connected: the caller destroys them all.
 */
int rb2_xport_qp_exchange_n(struct rb2_xport_exch *x, unsigned int n, const char *peer,
			    unsigned int timeout_ms);

/**
 * Map a peer address for direct stores (transports with
 * RB2_XPORT_CAP_LOADSTORE only).
 *
 * @return A local pointer to @p len bytes at @p remote, or NULL.
 */
void *rb2_xport_peer_ptr(struct rb2_xport_qp *qp, uint64_t remote,
			 uint32_t rkey, size_t len);

/**
 * Post a chain of work requests behind one doorbell. They execute in array
 * order; the receiver observes a WRITE only after every earlier WRITE of the
 * chain (and of earlier chains) on this queue.
 *
 * @return
 *   0, or -ENOSPC (send queue full: poll completions first), -ENOTCONN,
 *   -EINVAL, or a driver error; nothing of the chain is posted then.
 */
static inline int
rb2_xport_post(struct rb2_xport_qp *qp, const struct rb2_xport_wr *wrs,
	       unsigned int n)
{
	return qp->post(qp, wrs, n);
}

/**
 * Poll up to @p n completions.
 *
 * @return
 *   The number of completions written to @p wcs (0 if none), or a negative
 *   errno value if the queue failed. A completion with a non-zero status
 *   reports a failed WR; rb2_xport_wc_status_str() names it.
 */
static inline int
rb2_xport_poll(struct rb2_xport_qp *qp, struct rb2_xport_wc *wcs,
	       unsigned int n)
{
	return qp->poll(qp, wcs, n);
}

/**
 * Is the peer of a connected queue still there? Slow path: call it from idle
 * loops, not per message (verbs reads its connection events).
 *
 * @return 0, or -ECONNRESET (peer gone), -EIO (the queue failed), -ENOTCONN.
 */
int rb2_xport_qp_status(struct rb2_xport_qp *qp);

/**
 * Post @p n receives, each consumed by one incoming WRITE_WITH_IMM (which
 * then completes on this queue's poll as RB2_WC_RECV_IMM with its
 * immediate). Transports with RB2_XPORT_CAP_IMM only; at most the queue's
 * recv_depth may be outstanding. Not a per-message call: the channel posts
 * receives in batches as it consumes their completions.
 *
 * @return 0, -ENOTSUP (no RB2_XPORT_CAP_IMM), -ENOSPC, or a driver error.
 */
int rb2_xport_post_recv(struct rb2_xport_qp *qp, unsigned int n);

/**
 * Get ready to sleep on queue @p qp (created with attr.wake): fill @p db with
 * what to wait on. @p word is a doorbell word in our registered memory, the
 * one a peer's RB2_WR_WAKE names. shm: the word and its value now; verbs:
 * the completion channel, armed for the next completion (not asked again
 * while an arm is outstanding: its event raises the channel, or has).
 * Anything that rings after this call ends the wait, so: arm, look once
 * more for work, then wait. Every arm that returned 0 is matched by one
 * rb2_xport_doorbell_done(). Slow path.
 *
 * @return 0, -ENOTSUP (no RB2_XPORT_CAP_WAKE), or a driver error.
 */
int rb2_xport_doorbell_arm(struct rb2_xport_qp *qp, uint32_t *word,
			   struct rb2_xport_doorbell *db);

/** Awake again: consume what woke us (verbs: the channel's events). */
void rb2_xport_doorbell_done(struct rb2_xport_qp *qp);

/**
 * Awake again, from a wait that held @p qp's doorbell descriptor and did
 * not see it ready: one sleeper less, and nothing read. What came since
 * stays and keeps the descriptor ready (verbs: the channel's event, with
 * the CQ still counted as armed), so the next wait that holds it returns at
 * once and calls rb2_xport_doorbell_done(), and an edge-triggered epoll set
 * that holds it reports it to a later wait (which drains it). A wait over
 * many queues (an epoll set over idle streams) so reads only the channels
 * that fired, where done would read each: a system call on verbs. Only for
 * a wait that knows which descriptors it saw ready; any other calls done.
 * Where nothing is read (shm), the same as done.
 */
void rb2_xport_doorbell_leave(struct rb2_xport_qp *qp);

/**
 * The descriptor of @p qp's doorbell was seen ready by a wait that did not
 * arm it, and will not be reported again: an edge-triggered epoll set that
 * holds it reports each edge once, to whichever wait comes first. Consume
 * what raised it (verbs: the channel's events), so that the next arm asks
 * the device anew; an event left unread would keep the CQ counted as armed
 * while the device, having raised it, is not, and no later completion
 * would raise the descriptor again. Not counted as a sleeper's done.
 */
void rb2_xport_doorbell_drain(struct rb2_xport_qp *qp);

/**
 * Sleep until one of @p n doorbells (at most 128) rings, or @p timeout_us
 * passed. A doorbell that rang already ends the wait at once. Words alone:
 * futex_waitv (Linux 5.16; FUTEX_WAIT for one); with descriptors, poll(2),
 * words looked at every millisecond.
 *
 * @return 0 (rung, or spurious: look again), -ETIMEDOUT, -EINTR, -EINVAL.
 */
int rb2_xport_doorbell_wait(const struct rb2_xport_doorbell *db, unsigned int n,
			    unsigned int timeout_us);

/** @return a readable name for a completion status of this transport. */
const char *rb2_xport_wc_status_str(const struct rb2_xport *xp, int status);

/**
 * List the registered drivers.
 *
 * @param names
 *   Filled with up to @p n driver names.
 * @return The number of registered drivers.
 */
unsigned int rb2_xport_drivers(const char **names, unsigned int n);

/**
 * Descriptors of the transport's own (a sleeper's completion channel) go
 * at @p floor or above from now on, process-wide (0, the
 * default: where the kernel puts them, the lowest free). For a library
 * inside someone else's program (rb2-run): the program's own descriptors
 * are then numbered as they would be without it, and an event loop sized
 * by its connection count (wrk: 10 + 3 per connection) or a select() set
 * does not meet numbers it never expected. With @p grow, a floor at or
 * past the soft RLIMIT_NOFILE raises the soft limit (up to the hard one)
 * when ours need room there: the program keeps every descriptor below its
 * limit for itself, as many connections as over kernel TCP. Where the soft
 * limit cannot grow (it is the hard one), ours go in its top quarter
 * instead, which a program meets only past three quarters of its limit.
 */
void rb2_xport_fd_floor_set(int floor, int grow);

/**
 * Move @p fd to the lowest free descriptor at or above the floor
 * (rb2_xport_fd_floor_set()), or in the soft limit's top quarter where the
 * floor is past the limit and the limit cannot grow; close-on-exec; and
 * close @p fd.
 * @return the new descriptor, or @p fd itself: no floor, @p fd above it
 *   already, or nothing free there (EMFILE).
 */
int rb2_xport_fd_raise(int fd);

/** Log type of the transport layer (for rte_log_set_level()). */
extern int rb2_xport_logtype;

#ifdef __cplusplus
}
#endif

#endif /* RB2_XPORT_H */
