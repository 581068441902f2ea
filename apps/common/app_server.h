/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef APP_SERVER_H
#define APP_SERVER_H

/*
 * One lcore's server loop for the case-study apps, over both transports:
 * the connections of one rb2 endpoint (answers written into the ring: zero
 * copy) and of one TCP listener, run to completion by app_server_poll().
 * The protocol (rb2-kv's, HTTP) is a struct app_proto: it sees each
 * connection as a byte stream, whatever the messages it came in, and
 * executes one request at a time.
 *
 * It also serves L5 connections (app_net.h), for the benchmarks: their
 * messages are copied out of the ring into the connection's input and each
 * answer is copied into the ring, as L5 does.
 *
 * Nothing waits on a slow client: an rb2 connection out of credit keeps
 * its input (a zero-copy view) until the client reads; a TCP client whose
 * answers pile up past APP_SERVER_TCP_BACKLOG is not read from until it
 * takes them. Other connections go on meanwhile.
 */

#include <stdint.h>

#include <rb2_conn.h>

#include "app_net.h"

#define APP_SERVER_TCP_BACKLOG (1u << 20)  /* unsent answer bytes per TCP client */
#define APP_SERVER_TCP_MAX 1024            /* TCP clients per lcore */
#define APP_SERVER_L5_MAX 64               /* L5 connections per server */

/*
 * Where a protocol writes its answer: room for @p len bytes (NULL: none
 * now; over rb2 also when @p len is over max), then the length used (at
 * least 1), or cancel (nothing to send: over rb2 an open reservation holds
 * back the connection's credits). Reserving again before committing hands
 * the same room out again.
 */
struct app_out {
	void *(*reserve)(void *ctx, uint32_t len);
	void (*commit)(void *ctx, uint32_t len);
	void (*cancel)(void *ctx);
	void *ctx;
	uint32_t max;            /* the most one reservation can have */
};

/* A protocol. @p ctx is the one given to app_server_create(); @p conn the
 * connection's own conn_size bytes, zeroed when it opens. */
struct app_proto {
	const char *name;
	size_t conn_size;
	uint32_t in_max;         /* the longest request (a connection whose
				  * input holds this much and no request
				  * is closed) */
	/*
	 * Execute the first request in @p in (@p len bytes so far).
	 * @return the bytes consumed (> 0); 0 (incomplete: more input
	 *   needed); -EAGAIN (no room for its answer: call again with the
	 *   same input later); -EPIPE (close the connection once what was
	 *   committed is sent).
	 */
	int (*exec)(void *ctx, void *conn, const uint8_t *in, uint32_t len,
		    const struct app_out *out);
	/*
	 * Go on with an answer exec() left unfinished (NULL: a protocol
	 * whose answers always fit). @return 0 (finished), -EAGAIN (not
	 * yet: no room), -EPIPE.
	 */
	int (*resume)(void *ctx, void *conn, const struct app_out *out);
	/* A connection ends (NULL: nothing to free). */
	void (*fini)(void *ctx, void *conn);
};

struct app_server_stats {
	uint64_t requests;          /* executed */
	uint64_t conns_accepted, conns_closed, conns_failed; /* rb2 and TCP */
	uint64_t closed_by_protocol; /* -EPIPE, or a request over in_max */
	uint64_t tcp_refused;       /* over APP_SERVER_TCP_MAX */
	uint64_t waits;             /* answers that had to wait for room */
};

struct app_server;

/*
 * @param ep      an endpoint to serve (NULL: none): the server listens on
 *                @p port on it (the caller keeps and destroys it)
 * @param tcp_fd  a listening TCP socket (-1: none), made non-blocking; the
 *                server's from here on (app_server_free() closes it)
 * @return the server, or NULL (printed why)
 */
struct app_server *app_server_create(const struct app_proto *proto, void *ctx,
				     struct rb2_conn_ep *ep, uint16_t port, int tcp_fd);
void app_server_free(struct app_server *sv);

/* Serve L5 connection @p c (its rings stay the caller's, to destroy after
 * app_server_free()). @return 0, or -1 (APP_SERVER_L5_MAX reached, or no
 * memory: printed why). */
int app_server_add_l5(struct app_server *sv, const struct app_l5_conn *c);

/* One pass over everything: accept, read, execute, answer, flush.
 * @return the requests executed, or the endpoint's error (its peer, the
 *   service or the client, is gone: TCP goes on being served). */
int app_server_poll(struct app_server *sv);

/* Counters (plain loads: for telemetry, a moment's view). */
void app_server_stats_get(const struct app_server *sv, struct app_server_stats *st);

#endif /* APP_SERVER_H */
