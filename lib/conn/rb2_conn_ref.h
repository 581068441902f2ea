/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_CONN_REF_H
#define RB2_CONN_REF_H

/**
 * @file
 * Large messages on a connection, from the application's memory: RaaS's
 * registered sends (§IV-C: above a threshold, the buffer is registered
 * instead of copied), with zero copy on both sides.
 *
 * rb2_conn_send_ref() copies a message shorter than the threshold into the
 * ring, as rb2_conn_send() does. A longer one stays where the application
 * has it: it is registered through the endpoint's registration cache
 * (rb2_mr_cache.h: a buffer sent again is a hit) and a descriptor goes on
 * the connection instead (a REF frame, in order with its data frames, its
 * credit its descriptor's footprint). The receiver's rb2_conn_recv() READs
 * the payload straight into the buffer it is given (registered through its
 * own cache) and returns -EINPROGRESS until the READ completes. Then it
 * tells the sender (a REFDONE frame), whose rb2_conn_ref_done() gives the
 * buffer's cookie back.
 *
 * Every lent buffer comes back exactly once:
 * - status 0: the receiver READ it;
 * - -ECONNABORTED: the receiver discarded it unread (its application closed
 *   the connection, the connection was reset, or it was gone already);
 * - the endpoint's error: the channel failed, and no READ can come.
 * A buffer about to be freed is forgotten first (rb2_conn_ref_forget()),
 * so that the cache never hands its dead registration to a later buffer.
 *
 * Needs a transport whose peer can READ application memory
 * (RB2_XPORT_CAP_READ: verbs, loop). On shm (other processes) every
 * message is copied, and the endpoint says so once. Through a host service
 * (rb2_conn_service.h) buffers of the process group's shared memory are
 * lent (rte_malloc(): rb2_conn_service_shared()); the service registers
 * them for the peer host, and READs for the receiver, in place where the
 * receiver's buffer is shared memory too, else through a bounce buffer.
 *
 * @code
 * rb2_conn_send_ref(ep, cd, buf, len, cookie);   // 1: lent, 0: copied
 * struct rb2_conn_ref_done d[8];
 * int n = rb2_conn_ref_done(ep, d, 8);           // buffers given back
 *
 * int len = rb2_conn_next_len(ep, cd);           // on the peer
 * while ((r = rb2_conn_recv(ep, cd, dst, cap)) == -EINPROGRESS)
 *         ;                                      // same dst until done
 * @endcode
 */

#include <stddef.h>
#include <stdint.h>

#include <rb2_conn.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rb2_mr_cache;

/** Default threshold: messages of this many bytes and more are lent (RaaS's
 *  128 KB, measured on an RNIC; over rxe here lending pays from about
 *  16 KiB: doc/eval/conn.md). */
#define RB2_CONN_REF_MIN_DEFAULT (128u << 10)

/** Lending parameters of an endpoint. */
struct rb2_conn_ref_params {
	/** Messages shorter than this are copied (default
	 *  RB2_CONN_REF_MIN_DEFAULT; 0: all are lent). */
	uint32_t ref_min;
	/** Buffers lent and not yet given back, at most (default 64, at
	 *  most 65536). */
	uint32_t max_refs;
	/** Registration caches to use (the caller's to destroy, after the
	 *  endpoint), or NULL for the endpoint's own over its transport. */
	struct rb2_mr_cache *tx_cache, *rx_cache;
};

/** Fill @p p with the defaults. */
void rb2_conn_ref_params_init(struct rb2_conn_ref_params *p);

/**
 * Set @p ep's lending parameters, before its first rb2_conn_send_ref()
 * (which otherwise takes the defaults). A receiver needs no set-up.
 * @return 0; -EBUSY (already set up); -EINVAL; -ENOMEM.
 */
int rb2_conn_ref_setup(struct rb2_conn_ep *ep, const struct rb2_conn_ref_params *p);

/**
 * Send @p len bytes at @p buf on @p cd: copied below the threshold, lent
 * above it.
 *
 * @param cookie  returned by rb2_conn_ref_done() once a lent buffer is free.
 * @return
 *   0: copied, @p buf is free now;
 *   1: lent: @p buf must stay untouched until rb2_conn_ref_done() gives
 *   @p cookie back;
 *   -EAGAIN: as rb2_conn_send() (no credit, not accepted yet), or every
 *   lending slot or the cache is in use (reap rb2_conn_ref_done() and
 *   retry); -EMSGSIZE: a copy over the largest message, or a lent one over
 *   2 GiB - 1; otherwise as rb2_conn_send().
 */
int rb2_conn_send_ref(struct rb2_conn_ep *ep, int cd, const void *buf, size_t len,
		      uint64_t cookie);

/** A lent buffer given back. */
struct rb2_conn_ref_done {
	uint64_t cookie;
	/** 0 (READ by the receiver), -ECONNABORTED (discarded unread),
	 *  -ECONNRESET (through a service: it lost the receiver's host), or
	 *  the endpoint's error (the channel failed). */
	int status;
};

/**
 * Lent buffers given back, in the order the receiver finished with them.
 * Polls the endpoint when buffers are out and none is back yet.
 * @return the number written to @p done (0: none yet).
 */
int rb2_conn_ref_done(struct rb2_conn_ep *ep, struct rb2_conn_ref_done *done, unsigned int n);

/**
 * The application will free or unmap [@p buf, @p buf + @p len): drop its
 * registrations from both caches, so that no later send or receive finds
 * them.
 * @return 0, or -EBUSY (part of it is lent, or a READ into it is in flight).
 */
int rb2_conn_ref_forget(struct rb2_conn_ep *ep, void *buf, size_t len);

/** The endpoint's registration caches (NULL: none yet, or it copies). */
struct rb2_mr_cache *rb2_conn_ref_tx_cache(const struct rb2_conn_ep *ep);
struct rb2_mr_cache *rb2_conn_ref_rx_cache(const struct rb2_conn_ep *ep);

#ifdef __cplusplus
}
#endif

#endif /* RB2_CONN_REF_H */
