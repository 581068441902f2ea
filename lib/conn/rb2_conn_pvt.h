/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_CONN_PVT_H
#define RB2_CONN_PVT_H

/* Connections: what only rb2_conn.c and rb2_conn_telemetry.c share. */

#include <pthread.h>

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

/* rb2_conn.c, for rb2_conn_ref.c. */
int __rb2_conn_frame_out(struct rb2_conn_ep *ep, uint32_t cid, uint8_t type, uint16_t aux,
			 const void *body, uint32_t blen);
void __rb2_conn_bad_frame(struct rb2_conn_ep *ep, const char *what, uint32_t len,
			  unsigned int type);

/* Lending (rb2_conn_ref.c), for rb2_conn.c. */
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
