/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef KV_SERVER_H
#define KV_SERVER_H

/*
 * One lcore's share of rb2-kv's server: the connections of one rb2
 * endpoint (binary protocol, answers written into the ring) and of one TCP
 * listener (binary or memcached text, told apart by the first byte), all
 * on one table. Run-to-completion: kv_server_poll() in the lcore's loop.
 *
 * Nothing waits on a slow client: an rb2 connection out of credit keeps
 * its request (a zero-copy view) until the client reads; a TCP client
 * whose answers pile up past KV_SERVER_TCP_BACKLOG is not read from until
 * it takes them.
 */

#include <stdint.h>

#include <rb2_conn.h>

#include "kv_store.h"

#define KV_SERVER_TCP_BACKLOG (1u << 20)   /* unsent answer bytes per TCP client */
#define KV_SERVER_TCP_MAX 1024             /* TCP clients per lcore */

struct kv_server_stats {
	uint64_t requests;          /* executed, any status */
	uint64_t bad_requests;      /* answered KV_BAD_REQUEST / a text error */
	uint64_t conns_accepted, conns_closed, conns_failed; /* rb2 and TCP */
	uint64_t tcp_refused;       /* over KV_SERVER_TCP_MAX */
	uint64_t waits;             /* answers that had to wait for room */
};

struct kv_server;

/*
 * @param ep      an endpoint to serve (NULL: none); the server listens on
 *                @p port on it (the caller keeps and destroys it)
 * @param tcp_fd  a listening TCP socket (-1: none), made non-blocking here
 * @return the server, or NULL (the log says why)
 */
struct kv_server *kv_server_create(struct kv_store *s, struct rb2_conn_ep *ep, uint16_t port,
				   int tcp_fd);
void kv_server_free(struct kv_server *sv);

/* One pass over everything: accept, read, execute, answer, flush.
 * @return the requests executed, or the endpoint's error (its peer, the
 *   service or the client, is gone: TCP goes on being served). */
int kv_server_poll(struct kv_server *sv);

void kv_server_stats_get(const struct kv_server *sv, struct kv_server_stats *st);

#endif /* KV_SERVER_H */
