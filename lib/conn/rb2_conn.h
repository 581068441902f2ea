/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_CONN_H
#define RB2_CONN_H

/**
 * @file
 * Two-way connections over RB² channels, many per channel pair: RaaS's
 * shared QP (Wang et al., "Toward Deploying Scalable and Effective RDMA as a
 * Service at End-hosts through Reliable Connection", §IV) on the ring.
 *
 * An endpoint is one end of a channel pair to one peer (an rb2_tx to it and
 * an rb2_rx from it), driven by one lcore or thread. Any number of
 * connections, up to rb2_conn_ep_params.max_conns, share it: every frame on
 * the ring starts with an 8-byte header naming the receiver's connection
 * (its descriptor, RaaS's vQPN). The channel count, and with it the QP count
 * over verbs, stays one pair per (lcore, peer) however many connections
 * there are.
 *
 * No head-of-line blocking: the receiving endpoint always drains the shared
 * ring, copying each message into its connection's receive buffer of
 * rb2_conn_ep_params.window bytes, and a sender may only have a window's
 * worth unconsumed (credits, returned as the application reads). A reader
 * that stalls holds at most its window of memory and no ring slots.
 *
 * Messages keep their boundaries (SOCK_SEQPACKET): one send is one recv.
 *
 * @code
 * // Server: the endpoint's lcore.                 Client: its peer's lcore.
 * rb2_conn_listen(ep, 80, 0);                      int cd = rb2_conn_connect(ep, 80);
 * for (;;) {                                       while (rb2_conn_send(ep, cd, "hi", 2) < 0)
 *	rb2_conn_ep_poll(ep);                              ;   // -EAGAIN: not accepted yet
 *	int cd = rb2_conn_accept(ep, 80);               rb2_conn_flush(ep);
 *	if (cd >= 0)
 *		... rb2_conn_recv(ep, cd, buf, sizeof(buf)) ...
 * }
 * @endcode
 *
 * Threading: an endpoint and its connections belong to one thread at a
 * time; nothing in this API locks. Telemetry reads the counters from its
 * own thread (relaxed loads).
 */

#include <stdint.h>

#include <rb2_conn_core.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Fill @p p with the defaults. */
void rb2_conn_ep_params_init(struct rb2_conn_ep_params *p);

struct rb2_conn_ep;

/**
 * Make an endpoint of a connected channel pair. The endpoint owns the two
 * halves from here on and destroys them with itself. The two ends may have
 * different parameters: each tells the other its window and largest message
 * when a connection opens.
 *
 * @param name
 *   Unique in the process, for logs and telemetry.
 * @return
 *   The endpoint, or NULL with rte_errno: EINVAL (bad parameters; the log
 *   names the parameter), EMSGSIZE (the channel cannot carry max_msg),
 *   ENOMEM.
 */
struct rb2_conn_ep *rb2_conn_ep_create(const char *name, struct rb2_tx *tx,
				       struct rb2_rx *rx,
				       const struct rb2_conn_ep_params *p);

/**
 * Destroy an endpoint: every connection still open is reset, and the
 * channel halves are destroyed. A healthy endpoint says goodbye first and
 * waits up to 100 ms for the answer (none when the peer is in this
 * process): the peer's endpoint then ends with -ESHUTDOWN, its connections
 * with -ECONNRESET, and nothing is logged as a failure. An endpoint that
 * exits without this is reported gone by its channel instead.
 */
void rb2_conn_ep_destroy(struct rb2_conn_ep *ep);

/** @return the largest message the endpoint sends or receives. */
uint32_t rb2_conn_max_msg(const struct rb2_conn_ep *ep);

/**
 * Make progress: read every frame the peer has sent (data into connection
 * buffers, connects, accepts, credits, closes), send owed control frames
 * (credits, accepts, closes) and flush the ring. Call it in the lcore's loop;
 * send, recv and accept call it when they would otherwise fail with
 * -EAGAIN.
 *
 * @return the number of frames read (0: nothing new), or the error that
 *   ended the endpoint: -ESHUTDOWN (the peer destroyed its endpoint: it
 *   said goodbye), -ECONNRESET (the peer is gone without one), or another
 *   channel error. Every connection then fails, with -ECONNRESET or that
 *   error.
 */
int rb2_conn_ep_poll(struct rb2_conn_ep *ep);

/**
 * Connections with news since they were last handed out here, oldest
 * first: data or the end of the stream to read, a connect accepted or
 * refused, an error. Edge-triggered, as EPOLLET: read each until -EAGAIN,
 * or while rb2_conn_recv_ready() says so (which saves the last receive's
 * poll), for it is handed out again only when more arrives. Polls once when
 * none are pending, so that an event loop needs no other call to receive.
 *
 * @return the number of descriptors written to @p cds (0: none), or the
 *   endpoint's error.
 */
int rb2_conn_ep_ready(struct rb2_conn_ep *ep, int *cds, unsigned int n);

/**
 * Make committed messages visible to the peer now (the ring otherwise
 * batches them; rb2_conn_ep_poll() flushes too).
 * @return 0 or the endpoint's error.
 */
int rb2_conn_flush(struct rb2_conn_ep *ep);

/**
 * @name Blocking mode (RaaS's blocking-interrupted-running)
 * For ordinary threads: poll for a while, then sleep until the peer has
 * sent something. A sleeping endpoint tells its peer so (one frame); the
 * peer then rings its doorbell, an eventfd, when it next publishes data
 * (rb2_conn_flush() or a poll): a write(2) once per sleep. A busy peer
 * pays one load and a branch per poll. On shm only (the doorbell of
 * another process is taken with pidfd_getfd(2)); across hosts nobody can
 * ring it, and a waiting endpoint naps a millisecond at a time instead.
 * @{
 */

/** @return the endpoint's doorbell, an eventfd for epoll(7), or -errno. */
int rb2_conn_ep_fd(struct rb2_conn_ep *ep);

/**
 * Tell the peer this endpoint is about to sleep on rb2_conn_ep_fd(). For
 * an application's own epoll loop: arm, then epoll_wait() if it returned
 * 0, then rb2_conn_ep_ready() or rb2_conn_ep_poll() (which disarm).
 *
 * @return 0 (armed: sleep now), 1 (news already: do not sleep), or the
 *   endpoint's error.
 */
int rb2_conn_ep_arm(struct rb2_conn_ep *ep);

/**
 * Wait for frames from the peer: poll for @p spin_us, then sleep on the
 * doorbell until the peer sends, for at most @p timeout_ms (-1: no limit).
 * Connections already in the ready list do not count: take them with
 * rb2_conn_ep_ready() first. A dead peer is found within 100 ms of its
 * transport knowing. A sender held by -ENOBUFS (its ring to the peer is
 * full) cannot sleep here: the notice that it sleeps needs room in that
 * very ring, so this returns at once; poll (and sched_yield()) until the
 * peer has read. -EAGAIN (no credit) sleeps well: the credit is a frame.
 *
 * @return 1 (frames came: rb2_conn_ep_ready() has the connections they
 *   were for), 0 (timed out), or the endpoint's error.
 */
int rb2_conn_ep_wait(struct rb2_conn_ep *ep, unsigned int spin_us, int timeout_ms);

/** @} */

/**
 * Accept connections to @p port.
 * @param backlog 0 for the endpoint's default.
 * @return 0, -EADDRINUSE (already listening), -ENOSPC (64 ports listen
 *   already).
 */
int rb2_conn_listen(struct rb2_conn_ep *ep, uint16_t port, uint32_t backlog);

/** Stop accepting on @p port; connections waiting to be accepted are reset. */
int rb2_conn_unlisten(struct rb2_conn_ep *ep, uint16_t port);

/**
 * Take one connection to @p port that the peer opened.
 * @return its descriptor (>= 0), -EAGAIN (none yet), -EINVAL (not
 *   listening on @p port), or the endpoint's error.
 */
int rb2_conn_accept(struct rb2_conn_ep *ep, uint16_t port);

/**
 * How many connections to @p port wait to be accepted, as the polls so far
 * filed them; it does not poll. rb2_conn_accept() with none waiting polls
 * the ring first, which a loop that has just polled (rb2_conn_ep_ready())
 * need not pay for again on every idle pass.
 * @return the count (>= 0), or -EINVAL (not listening on @p port).
 */
int rb2_conn_backlog(struct rb2_conn_ep *ep, uint16_t port);

/**
 * Open a connection to @p port at the peer. Returns at once: sends fail
 * with -EAGAIN until the peer accepts, and rb2_conn_status() says how it
 * went (a refusal with its reason in rb2_conn_why()).
 *
 * @return the descriptor (>= 0), -EMFILE (max_conns connections open
 *   here), or the endpoint's error.
 */
int rb2_conn_connect(struct rb2_conn_ep *ep, uint16_t port);

/**
 * Open a connection to @p port on @p host through a host service
 * (rb2_conn_ep_params.service): @p host the service's host id there
 * (rb2-raasd --host-id; by default its IPv4 address as a number, in host
 * byte order), 0 for this host. Otherwise as rb2_conn_connect().
 * @return as rb2_conn_connect(); -EINVAL (a host without a service).
 */
int rb2_conn_connect_host(struct rb2_conn_ep *ep, uint32_t host, uint16_t port);

/**
 * @name Relays
 * For a host service (rb2-raasd): an endpoint whose frames are handed to
 * @p fn instead of being taken as its own connections' (it keeps its own
 * blocking-mode frames), and frames put on its ring as they are.
 * @{
 */
void rb2_conn_ep_set_relay(struct rb2_conn_ep *ep, rb2_conn_relay_fn fn, void *arg);

/** @return 0, -EAGAIN (the ring is full), or the endpoint's error. */
int rb2_conn_ep_forward(struct rb2_conn_ep *ep, const void *frame, uint32_t len);
/** @} */

/**
 * @return 0 (open), -EINPROGRESS (connecting), -ECONNREFUSED (refused; the
 *   reason is in rb2_conn_why()), -ECONNRESET (reset or the peer is gone),
 *   -EPROTO (the peer broke the protocol on it), -EBADF.
 */
int rb2_conn_status(struct rb2_conn_ep *ep, int cd);

/** @return why the connection failed ("" while it has not). */
const char *rb2_conn_why(struct rb2_conn_ep *ep, int cd);

/** @internal The slow half of a reservation: checks, polls, errors.
 *  @return as __rb2_conn_reserve(). */
int __rb2_conn_reserve_slow(struct rb2_conn_ep *ep, int cd, uint32_t len, void **buf);
/** @internal The slow half of a receive (empty, views held, errors). */
int __rb2_conn_recv_slow(struct rb2_conn_ep *ep, int cd, void *buf, uint32_t cap, int zc);

/**
 * @internal The header a DATA frame of @p len bytes for @p c needs now:
 * none (0) when it directly follows one of @p c's in the ring and fits one
 * slot of whole cache lines, so that the ring's mark says whose it is
 * (rb2_conn_core.h); else RB2_CONN_HDR_LEN.
 */
static __rte_always_inline uint32_t
__rb2_conn_hdr_len(const struct rb2_conn_ep *ep, const struct rb2_conn_slot *c, uint32_t len)
{
	return len <= ep->tx_mark_max && ep->tx_run_cid == c->peer_cd ? 0 : RB2_CONN_HDR_LEN;
}

/**
 * @internal Room for @p len bytes on @p cd in the ring, behind room for
 * the header, which __rb2_conn_commit() stores: nothing is stored here.
 * @return the header's length (0 or RB2_CONN_HDR_LEN, for
 *   __rb2_conn_commit()), or a negative errno as rb2_conn_send().
 */
static __rte_always_inline int
__rb2_conn_reserve(struct rb2_conn_ep *ep, int cd, uint32_t len, uint8_t **payload)
{
	struct rb2_conn_slot *c = __rb2_conn_of(ep, cd);
	uint32_t hl;
	uint8_t *slot;

	/* Fast path: open, credit for it, and room in the ring. Anything
	 * else (connecting, no credit, errors, full) is the slow path's. */
	if (likely(c != NULL && c->state == RB2_CONN_ST_OPEN && c->err == 0 &&
		   !c->wr_shut && !(c->owed & RB2_CONN_OWE_SYNACK) && len - 1 < c->max_send &&
		   c->sent + rb2_conn_footprint(len) - c->acked <= c->peer_window &&
		   rb2_tx_reserve(ep->tx, (hl = __rb2_conn_hdr_len(ep, c, len)) + len,
				  (void **)&slot) == 0)) {
		*payload = slot + hl;
		return (int)hl;
	}
	return __rb2_conn_reserve_slow(ep, cd, len, (void **)payload);
}

/** @internal Commit @p len bytes at @p payload, reserved on @p cd behind
 *  room for a header of @p hl bytes (0: marked, none), of frame @p type. */
static __rte_always_inline void
__rb2_conn_commit(struct rb2_conn_ep *ep, int cd, uint8_t *payload, uint32_t len, uint32_t hl,
		  uint8_t type)
{
	struct rb2_conn_slot *c = &ep->conns[cd & 0xffff];

	/* Nothing else is counted or stored per frame: every store holds a
	 * store-buffer entry behind the slot's, which miss
	 * (rb2_tx_reserve_burst()). The endpoint's counts come from the
	 * ring's (which counts the marked frames too). The header is stored
	 * here, beside the payload's last stores, not at the reservation: a
	 * store into the ring left pending while the caller fills its room
	 * waits for a line that the receiver's empty looks keep taking back,
	 * and holds up every store behind it (doc/eval/conn.md). */
	if (hl != 0) {
		*(uint64_t *)(payload - hl) = rb2_conn_wire_hdr(c->peer_cd, type, 0);
		rb2_tx_commit(ep->tx, hl + len);
		if (ep->tx_run_cid != c->peer_cd)
			ep->tx_run_cid = c->peer_cd;
	} else {
		rb2_tx_commit(ep->tx, len | RB2_MSG_MARK);
	}
	c->sent += rb2_conn_footprint(len);
}

/** @internal rb2_conn_reserve() of the room reserved last, again: what
 *  was written stays where it is, moved into the ring if it has grown
 *  past the staging lines. @return where the caller writes. */
static __rte_always_inline void *
__rb2_conn_reserve_again(struct rb2_conn_ep *ep, uint8_t *room, uint32_t len)
{
	if (!ep->resv_staged)
		return room;
	if (len <= RB2_CONN_STAGE_MAX)
		return ep->stage;
	rb2_msg_copy(room, ep->stage, ep->resv_len);
	ep->resv_staged = 0;
	return room;
}

/**
 * Zero-copy send: room for a message of up to @p len bytes. Fill it and
 * rb2_conn_commit(), or give it up with rb2_conn_cancel(). Reserving again
 * (the same room: what was written stays), or sending, ends it; receives
 * in between are fine.
 *
 * The room is in the ring itself, except for a message of up to
 * RB2_CONN_STAGE_MAX bytes that starts where the ring was last published:
 * that one is handed out in the endpoint's own lines and copied in at the
 * commit, because a receiver polling the drained ring prefetches those
 * slots (rb2_conn_core.h). Either way nothing is stored into the ring
 * before the commit.
 *
 * @param[out] buf 8-byte aligned.
 * @return as rb2_conn_send().
 */
static __rte_always_inline int
rb2_conn_reserve(struct rb2_conn_ep *ep, int cd, uint32_t len, void **buf)
{
	uint8_t *room;
	int ret = __rb2_conn_reserve(ep, cd, len, &room);

	if (likely(ret >= 0)) {
		uint64_t t = rb2_tx_tail(ep->tx);

		if (unlikely(ep->resv_cd == cd && ep->resv_tail == t)) {
			*buf = __rb2_conn_reserve_again(ep, room, len);
		} else if (len <= RB2_CONN_STAGE_MAX && t == rb2_tx_published(ep->tx)) {
			ep->resv_staged = 1;
			*buf = ep->stage;
		} else {
			ep->resv_staged = 0;
			*buf = room;
		}
		ep->resv_cd = cd;
		ep->resv_len = len;
		ep->resv_tail = t;
		ep->resv_hl = (uint32_t)ret;
		ep->resv_payload = room;
		ret = 0;
	}
	return ret;
}

/**
 * Commit the message reserved on @p cd with its final length (1 up to the
 * reserved length).
 * @return 0, -EINVAL (nothing reserved on @p cd, a bad length, or the room
 *   was handed out again since).
 */
static __rte_always_inline int
rb2_conn_commit(struct rb2_conn_ep *ep, int cd, uint32_t len)
{
	/* A send or control frame since the reservation moved the tail:
	 * the room was handed out again. */
	if (unlikely(ep->resv_cd != cd || cd < 0 || len == 0 || len > ep->resv_len ||
		     ep->resv_tail != rb2_tx_tail(ep->tx))) {
		ep->resv_cd = -1;
		return -EINVAL;
	}
	ep->resv_cd = -1;
	if (ep->resv_staged) {
		rb2_msg_copy(ep->resv_payload, ep->stage, len);
		ep->resv_staged = 0;
	}
	__rb2_conn_commit(ep, cd, ep->resv_payload, len, ep->resv_hl, RB2_CONN_FR_DATA);
	return 0;
}

/**
 * Give up the room reserved on @p cd: nothing is sent. An open reservation
 * holds back the endpoint's own control frames (credits, closes: they
 * would take its room), so one that will not be committed must be given
 * up, or the peer may wait for credit forever. Reserving again, or
 * sending, also ends it.
 */
static __rte_always_inline void
rb2_conn_cancel(struct rb2_conn_ep *ep, int cd)
{
	if (ep->resv_cd == cd) {
		ep->resv_cd = -1;
		ep->resv_staged = 0;
	}
}

/**
 * Send one message (copied into the ring).
 *
 * @return 0; -EAGAIN (no credit on this connection: the peer has not read
 *   enough, or it is still connecting; poll and retry); -ENOBUFS (the
 *   channel's ring is full: every connection of the endpoint waits; poll
 *   and retry); -EMSGSIZE (over
 *   rb2_conn_max_msg(), or the peer's); -EINVAL (@p len 0); -EPIPE (this
 *   side was shut down for writing); -EBADF (not an open descriptor); or
 *   the connection's error (rb2_conn_status()).
 */
static __rte_always_inline int
rb2_conn_send(struct rb2_conn_ep *ep, int cd, const void *buf, uint32_t len)
{
	uint8_t *p;
	int hl = __rb2_conn_reserve(ep, cd, len, &p);

	if (unlikely(hl < 0))
		return hl;
	rb2_msg_copy(p, buf, len);
	__rb2_conn_commit(ep, cd, p, len, (uint32_t)hl, RB2_CONN_FR_DATA);
	return 0;
}

/**
 * Receive one message (copied out).
 *
 * A message the peer lent (rb2_conn_send_ref()) is READ into @p buf by
 * the NIC: the call returns -EINPROGRESS, and the caller calls again with
 * the same @p buf until the length comes back (rb2_conn_ref.h). All of
 * [@p buf, @p buf + @p cap) is registered for it (through a cache: a buffer
 * used again is a hit), so it must be memory the caller owns. Through a
 * host service, the service READs for us: in place into a @p buf of the
 * process group's shared memory (rte_malloc()), else into a bounce buffer
 * copied to @p buf.
 *
 * @return its length (> 0); 0 at the end of the stream (the peer shut down
 *   its side and everything it sent was read); -EAGAIN; -EMSGSIZE (longer
 *   than @p cap: it stays, for a larger buffer; rb2_conn_next_len() says
 *   how long); -EBUSY (zero-copy views are unreleased, or a READ into
 *   another buffer is in flight); -EINPROGRESS (a READ into @p buf is in
 *   flight); -EBADF; or the connection's error once its messages are read.
 */
static __rte_always_inline int
rb2_conn_recv(struct rb2_conn_ep *ep, int cd, void *buf, uint32_t cap)
{
	struct rb2_conn_slot *c = __rb2_conn_of(ep, cd);

	/* Fast path: a record of data buffered and no views held. */
	if (likely(c != NULL && c->vpos == c->rpos && c->rpos != c->wpos)) {
		const uint8_t *rec = __rb2_conn_rec(ep, c, c->rpos);
		uint64_t h = *(const uint64_t *)rec;    /* length, kind */
		uint32_t len = (uint32_t)h;

		if (unlikely(len > cap || (h >> 32) != RB2_CONN_REC_DATA))
			return __rb2_conn_recv_slow(ep, cd, buf, cap, 0);
		rb2_msg_copy(buf, rec + RB2_CONN_HDR_LEN, len);
		__rb2_conn_consumed(ep, c, rb2_conn_footprint(len));
		return (int)len;
	}
	/* Nothing buffered and its frame next in the ring, where the poll
	 * left it: one copy, straight out. */
	if (likely(c != NULL && c->rpos == c->wpos && ep->pend_i < ep->pend_n)) {
		uint32_t len;
		const uint8_t *p = __rb2_conn_payload(&ep->pend[ep->pend_i], &len);

		/* (cap first and on its own: the compiler then knows the
		 * copy's bound, and says nothing of small buffers.) */
		if (unlikely(len > cap))
			return __rb2_conn_recv_slow(ep, cd, buf, cap, 0);
		if (likely(__rb2_conn_pend_mine(ep, c, len))) {
			rb2_msg_copy(buf, p, len);
			__rb2_conn_pend_taken(ep, c, len);
			return (int)len;
		}
	}
	return __rb2_conn_recv_slow(ep, cd, buf, cap, 0);
}

/**
 * Zero-copy receive (RaaS's recv_zero_copy): a view of the next message in
 * the connection's receive buffer, valid until rb2_conn_release(). Views
 * are handed out in order and released in order; a held view keeps its
 * bytes out of the sender's credit.
 *
 * @return as rb2_conn_recv(), without -EBUSY and -EINPROGRESS; -EMSGSIZE
 *   only for a message the peer lent, which has no view here: read it with
 *   rb2_conn_recv().
 */
static __rte_always_inline int
rb2_conn_recv_zc(struct rb2_conn_ep *ep, int cd, const void **data)
{
	struct rb2_conn_slot *c = __rb2_conn_of(ep, cd);

	/* Fast path: a record of data not yet viewed. */
	if (likely(c != NULL && c->vpos != c->wpos)) {
		const uint8_t *rec = __rb2_conn_rec(ep, c, c->vpos);
		uint64_t h = *(const uint64_t *)rec;    /* length, kind */
		uint32_t len = (uint32_t)h;

		if (likely((h >> 32) == RB2_CONN_REC_DATA)) {
			*data = rec + RB2_CONN_HDR_LEN;
			c->vpos += rb2_conn_footprint(len);
			return (int)len;
		}
	}
	return __rb2_conn_recv_slow(ep, cd, (void *)data, 0, 1);
}

/**
 * Would a receive on @p cd return without polling the ring? For a loop
 * driven by rb2_conn_ep_ready(): it takes what the last poll filed, answers,
 * and flushes the answers before it polls again, as a socket server reads
 * what epoll reported. A receive on an empty connection polls (that is how
 * a program with one connection needs no poll of its own), so a loop that
 * receives until -EAGAIN polls once more per pass; at rb2-kv's depth 16
 * that extra poll per pass, with the answers waiting on it, cost a tenth
 * of the rate (doc/eval/conn.md, "rb2-kv against L5").
 *
 * @return 1: a message is buffered (or is next in the run the poll left in
 *   the ring), or the stream has ended or failed, or @p cd is not open
 *   (the receive says which); 0: a receive would poll.
 */
static __rte_always_inline int
rb2_conn_recv_ready(struct rb2_conn_ep *ep, int cd)
{
	const struct rb2_conn_slot *c = __rb2_conn_of(ep, cd);

	return c == NULL || c->vpos != c->wpos || c->err != 0 || c->rd_eof ||
	       (ep->pend_i < ep->pend_n && ep->pend_cid == c->cd);
}

/**
 * The length of the next message on @p cd (the next view's, while views
 * are held), lent or not, without taking it: to size a buffer.
 * @return its length (> 0), or as rb2_conn_recv() when there is none.
 */
int rb2_conn_next_len(struct rb2_conn_ep *ep, int cd);

/** @internal rb2_conn_release() past its fast path (@p n 0: only send
 *  what is owed). */
int __rb2_conn_release_slow(struct rb2_conn_ep *ep, int cd, unsigned int n);

/**
 * Release the oldest @p n views of rb2_conn_recv_zc().
 * @return 0, -EINVAL (fewer than @p n views held), -EBADF.
 */
static __rte_always_inline int
rb2_conn_release(struct rb2_conn_ep *ep, int cd, unsigned int n)
{
	struct rb2_conn_slot *c = __rb2_conn_of(ep, cd);

	/* Fast path: one view, whose record header says its length. A
	 * server releases each request's view once answered: a call out
	 * of line there cost more than the release itself. */
	if (likely(c != NULL && n == 1 && c->rpos != c->vpos)) {
		uint32_t len = *(const uint32_t *)__rb2_conn_rec(ep, c, c->rpos);

		__rb2_conn_consumed(ep, c, rb2_conn_footprint(len));
		/* A credit the ring had no room for waits in the owed list. */
		return likely(ep->n_owed == 0) ? 0 : __rb2_conn_release_slow(ep, cd, 0);
	}
	return __rb2_conn_release_slow(ep, cd, n);
}

/**
 * Half-close: send no more (the peer reads the end of the stream once it
 * has read everything before it). Receiving goes on.
 * @return 0, -EBADF, or the connection's error.
 */
int rb2_conn_shutdown(struct rb2_conn_ep *ep, int cd);

/**
 * Close: shut down writing if not done, and stop reading. Unread messages
 * (views of rb2_conn_recv_zc() too: they are invalid from here), and any
 * that arrive until the peer closes its side, are discarded and counted
 * (rb2_conn_ep_stats.discarded_msgs). The descriptor is invalid at
 * once; its slot is reused once the peer has closed too.
 * @return 0, -EBADF.
 */
int rb2_conn_close(struct rb2_conn_ep *ep, int cd);

/** An endpoint's counters. */
struct rb2_conn_ep_stats {
	uint64_t conns_open;      /**< slots in use (open, connecting, closing) */
	uint64_t conns_opened;    /**< connections established, ever */
	uint64_t refused_sent;    /**< connects from the peer refused here */
	uint64_t refused_recv;    /**< connects from here the peer refused */
	uint64_t tx_msgs, tx_bytes;      /**< data messages sent */
	uint64_t rx_msgs, rx_bytes;      /**< data messages received */
	uint64_t ctrl_frames_tx, ctrl_frames_rx; /**< connects, credits, closes */
	uint64_t credit_waits;    /**< sends refused for want of credit */
	uint64_t ring_full;       /**< sends refused for a full ring */
	uint64_t discarded_msgs;  /**< data the application closed unread */
	uint64_t discarded_bytes;
	uint64_t unknown_conn;    /**< frames for no connection (dropped) */
	uint64_t bad_frames;      /**< malformed frames (dropped) */
	uint64_t window_violations; /**< data beyond the credit (conn reset) */
	uint64_t sleeps;          /**< blocking waits that slept */
	uint64_t doorbells_rung;  /**< the peer's doorbell rung (it slept) */
	/* Large messages by reference (rb2_conn_ref.h); tx_* and rx_* above
	 * count them too, with their payload's bytes. */
	uint64_t ref_tx_msgs, ref_tx_bytes; /**< buffers lent */
	uint64_t ref_rx_msgs, ref_rx_bytes; /**< lent buffers READ here */
	uint64_t ref_reads;       /**< READ WRs posted for them */
	uint64_t ref_waits;       /**< lends refused: every slot or the cache in use */
	uint64_t ref_discarded;   /**< lent messages discarded unread (either side's count) */
	/** Receive buffers allocated, of window bytes plus the largest
	 *  record each: lent to connections while they hold unread data,
	 *  so at most the number of connections with data at once. */
	uint64_t rx_buffers;
};

/** Copy an endpoint's counters. */
void rb2_conn_ep_stats_get(const struct rb2_conn_ep *ep,
			   struct rb2_conn_ep_stats *st);

/** One connection's counters and state. */
struct rb2_conn_info {
	uint16_t port;
	int status;               /**< rb2_conn_status() */
	uint32_t peer_cd;         /**< the peer's descriptor (vQPN) */
	/** Credit this side has used: 8 bytes a message plus its length
	 *  rounded up to 8 (per-connection send counts would cost the send
	 *  path stores; the endpoint counts messages and bytes). */
	uint64_t tx_credit_used;
	uint64_t rx_msgs, rx_bytes;
	uint32_t credit;          /**< bytes this side may still send */
	uint32_t buffered;        /**< bytes received and not yet read */
};

/** @return 0, -EBADF. */
int rb2_conn_info_get(struct rb2_conn_ep *ep, int cd, struct rb2_conn_info *info);

/** Log type of the connection library (rb2.conn). */
extern int rb2_conn_logtype;

#ifdef __cplusplus
}
#endif

#endif /* RB2_CONN_H */
