/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_CONN_PVT_H
#define RB2_CONN_PVT_H

/*
 * Connections: what lib/conn's files share and nothing else sees. By job:
 *   rb2_conn_ep.c         the endpoint: create, destroy, slots, failure, counters
 *   rb2_conn_out.c        frames out: control frames, what is owed the peer
 *   rb2_conn_in.c         frames in, and the poll
 *   rb2_conn_wait.c       blocking mode: the doorbell, arm, wait
 *   rb2_conn_open.c       set-up and teardown: listen, connect, accept, close, goodbye
 *   rb2_conn_data.c       the data calls' slow paths (rb2_conn.h has the fast ones)
 *   rb2_conn_ref.c        lending buffers (zero copy), rb2_conn_ref.h
 *   rb2_conn_relay*.c     a host service's relay core, rb2_conn_relay.h (its
 *                         files: rb2_conn_relay_pvt.h)
 *   rb2_conn_service.c    joining a host service, rb2_conn_service.h
 *   rb2_conn_telemetry.c  the /rb2/conn telemetry commands
 * The wire format is rb2_conn_wire.h.
 */

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_log.h>

#include "rb2_conn.h"

#define CONN_STAT_ADD(ep, f, v)                                           \
	atomic_store_explicit(&(ep)->ctr.f,                               \
		atomic_load_explicit(&(ep)->ctr.f, memory_order_relaxed) + (v), \
		memory_order_relaxed)

/* Every endpoint of the process, for telemetry. */
struct rb2_conn_ep_list {
	pthread_mutex_t lock;
	TAILQ_HEAD(, rb2_conn_ep) eps;
};
extern struct rb2_conn_ep_list rb2_conn_eps;

#define CONN_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_ ## level, rb2_conn_logtype, "rb2.conn: " fmt "\n", ## __VA_ARGS__)

/* The reasons' words, by RB2_CONN_REFUSE_* and RB2_CONN_RST_* (rb2_conn_ep.c). */
extern const char *const __rb2_conn_refuse_why[RB2_CONN_REFUSE_MAX];
extern const char *const __rb2_conn_rst_why[RB2_CONN_RST_MAX];

/* ---- small helpers, inline ---------------------------------------------- */

/*
 * @p n x @p size bytes in whole cache lines of their own, zeroed (@p zero)
 * or not; free() frees them. An endpoint's state is written by its lcore on
 * every message, and calloc() puts the next allocation in its last line:
 * with two endpoints made one after the other (a client and a server in one
 * process, on two lcores), their ready lists and receive buffers shared
 * lines that both lcores wrote.
 */
static inline void *
conn_alloc_lines(size_t n, size_t size, int zero)
{
	size_t bytes;
	void *p;

	if (size != 0 && n > (SIZE_MAX - RTE_CACHE_LINE_SIZE) / size)
		return NULL;
	bytes = RTE_ALIGN_CEIL(RTE_MAX(n * size, (size_t)1), RTE_CACHE_LINE_SIZE);
	p = aligned_alloc(RTE_CACHE_LINE_SIZE, bytes);
	if (p != NULL && zero)
		memset(p, 0, bytes);
	return p;
}

static inline struct rb2_conn_slot *
slot_of(struct rb2_conn_ep *ep, uint32_t cid)
{
	return __rb2_conn_slot_of(ep, cid);
}

/* The connection an application's descriptor names, or NULL (-EBADF). */
static inline struct rb2_conn_slot *
conn_of(struct rb2_conn_ep *ep, int cd)
{
	return __rb2_conn_of(ep, cd);
}

/* Queue @p c for rb2_conn_ep_ready(): it has news for its application. */
static inline void
mark_ready(struct rb2_conn_ep *ep, struct rb2_conn_slot *c)
{
	if (c->in_ready || c->app_closed || c->state == RB2_CONN_ST_BACKLOG)
		return;
	c->in_ready = 1;
	ep->ready[(ep->ready_head + ep->n_ready++) & ep->ready_mask] = c->cd & 0xffff;
}

/* @p c owes the peer @p what (RB2_CONN_OWE_*): the poll sends it. */
static inline void
owe(struct rb2_conn_ep *ep, struct rb2_conn_slot *c, uint8_t what)
{
	c->owed |= what;
	if (!c->in_owed_list) {
		c->in_owed_list = 1;
		ep->owed[ep->n_owed++] = c->cd & 0xffff;
	}
}

static inline struct rb2_conn_listener *
listener_of(struct rb2_conn_ep *ep, uint16_t port)
{
	for (uint32_t i = 0; i < RB2_CONN_LISTEN_MAX; i++)
		if (ep->listeners[i].used && ep->listeners[i].port == port)
			return &ep->listeners[i];
	return NULL;
}

/* Parse the frame @p m off the ring (rb2_conn_wire_parse()). */
static __rte_always_inline uint32_t
conn_frame_get(const struct rb2_msg *m, uint32_t run, struct rb2_conn_frame *fr)
{
	return rb2_conn_wire_parse(m->data, rb2_msg_len(m), rb2_msg_marked(m), run, fr);
}

/* ---- the endpoint (rb2_conn_ep.c) --------------------------------------- */

/* A free slot, its descriptor's generation advanced; NULL if none. */
struct rb2_conn_slot *__rb2_conn_slot_alloc(struct rb2_conn_ep *ep);
/* Free a closed connection's slot once nothing more can come for it. */
void __rb2_conn_maybe_free(struct rb2_conn_ep *ep, struct rb2_conn_slot *c);
/* @p c fails with @p err (its first error stays), and says @p why. */
void __rb2_conn_fail(struct rb2_conn_ep *ep, struct rb2_conn_slot *c, int err, const char *why);
/* The endpoint ends with @p err, every connection with @p conn_err and
 * @p why; the log says @p what at @p level. */
void __rb2_conn_ep_end(struct rb2_conn_ep *ep, int err, int conn_err, const char *why,
		       const char *what, uint32_t level);
/* The channel failed with @p err: every connection fails with it. */
void __rb2_conn_ep_fail(struct rb2_conn_ep *ep, int err);

/* ---- frames out (rb2_conn_out.c) ---------------------------------------- */

/* Put one control frame on the ring: 0, -EAGAIN (the ring is full: the
 * caller keeps it owed), or the error that failed the endpoint. */
int __rb2_conn_frame_out(struct rb2_conn_ep *ep, uint32_t cid, uint8_t type, uint16_t aux,
			 const void *body, uint32_t blen);
/* Send what is owed, as much as the ring takes. */
void __rb2_conn_send_owed(struct rb2_conn_ep *ep);

/* ---- frames in (rb2_conn_in.c) ------------------------------------------ */

/* Count and log a malformed frame, which is dropped. */
void __rb2_conn_bad_frame(struct rb2_conn_ep *ep, const char *what, uint32_t len,
			  unsigned int type);
/* __rb2_conn_progress()'s flags. */
#define POLL_CHECK_PEER 1u   /* nothing came: ask whether the peer lives */
#define POLL_LAZY 2u         /* a run of one connection's data may stay in the ring */
/* The poll: frames in, owed frames out, the doorbell. @return frames
 * taken, or the endpoint's error. */
int __rb2_conn_progress(struct rb2_conn_ep *ep, unsigned int flags);
/* File what is left of the run left in the ring (ep->pend) into its
 * receive buffer, and release it. @return the frames filed. */
unsigned int __rb2_conn_pend_flush(struct rb2_conn_ep *ep);

/* ---- blocking mode (rb2_conn_wait.c) ------------------------------------ */

/* The peer sleeps: ring its doorbell if the ring holds what it has not read. */
void __rb2_conn_ring_if_due(struct rb2_conn_ep *ep);
/* A SLEEP frame's body came: the peer's doorbell, and where it sleeps. */
void __rb2_conn_sleep_in(struct rb2_conn_ep *ep, const uint8_t *body, uint32_t blen);
/* Awake again after a sleep: drain our doorbell, tell the peer. */
void __rb2_conn_disarm(struct rb2_conn_ep *ep);

/* ---- set-up and teardown (rb2_conn_open.c) ------------------------------ */

/* The peer said goodbye: answer it, then end. */
void __rb2_conn_bye_in(struct rb2_conn_ep *ep);
/* Say goodbye before the channel goes (rb2_conn_ep_destroy()). */
void __rb2_conn_goodbye(struct rb2_conn_ep *ep);

/* ---- lending (rb2_conn_ref.c) ------------------------------------------- */

/* Free the lending state: wait for READs in flight, give registrations back. */
void __rb2_conn_refs_destroy(struct rb2_conn_ep *ep);
/* Owe the peer a REFDONE for its lent buffer @id. */
void __rb2_conn_refdone_owe(struct rb2_conn_ep *ep, uint32_t id, int status);
/* Send the REFDONEs owed: 0, or -EAGAIN (the ring is full). */
int __rb2_conn_refdone_send(struct rb2_conn_ep *ep);
/* A REFDONE frame's @n entries came: give those buffers back. */
void __rb2_conn_refdone_in(struct rb2_conn_ep *ep, const uint8_t *body, uint32_t blen,
			   uint16_t n);
/* rb2_conn_recv() of the lent message at the head of @c (its record @rec). */
int __rb2_conn_ref_recv(struct rb2_conn_ep *ep, struct rb2_conn_slot *c, const uint8_t *rec,
			void *buf, uint32_t cap);
/* A READDONE frame's @n entries came from the service: those READs are over. */
void __rb2_conn_readdone_in(struct rb2_conn_ep *ep, const uint8_t *body, uint32_t blen,
			    uint16_t n);
/* Through a service: wait until no READ it does for us lands in @cd's
 * buffer any more (@cd -1: any connection's), polling the endpoint. Before
 * a close or a destroy, which poll nothing afterwards. */
void __rb2_conn_ref_quiesce(struct rb2_conn_ep *ep, int cd);
/* The lent message of record @rec is discarded unread (@c closed or
 * reset): its READ in flight, if any, is waited for; the peer is told. */
void __rb2_conn_ref_discard(struct rb2_conn_ep *ep, struct rb2_conn_slot *c,
			    const uint8_t *rec);

#endif /* RB2_CONN_PVT_H */
