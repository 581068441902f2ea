/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef APP_NET_H
#define APP_NET_H

/*
 * What the case-study apps (rb2-kv, rb2-http) share to run over either
 * transport: kernel TCP sockets, and, for their in-process benchmarks, a
 * connected pair of rb2 endpoints built as one of the paper's ring designs.
 */

#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include <rb2_conn.h>
#include <rb2_l5.h>
#include <rb2_xport.h>

/* The app's name, which every message here starts with (set by
 * app_cli_main()). */
extern const char *app_name;

/* An error line on stderr, after the app's name, as every rb2 app writes them. */
#define app_err(fmt, ...) fprintf(stderr, "%s: " fmt, app_name, ##__VA_ARGS__)

/* Parse "IP:PORT" (IPv4). @return 0, or -1 (printed why, naming @p what). */
int app_parse_addr(const char *what, const char *addr, struct sockaddr_storage *sa);

/* A non-blocking listening TCP socket on @p addr (port 0: any). A port
 * another socket listens on is refused (EADDRINUSE): the lcores of one
 * server share this socket, and no other process can join them. @return
 * the fd, or -1 (printed why). Its port in *port when not NULL. */
int app_tcp_listen(const char *addr, uint16_t *port);

/* A blocking TCP connection to @p addr with TCP_NODELAY. @return the fd,
 * or -1 (printed why). */
int app_tcp_connect(const char *addr);

/* The channel halves under an endpoint pair: [0] carries client to
 * server, [1] server to client. */
struct app_ep_chans {
	struct rb2_tx *tx[2];
	struct rb2_rx *rx[2];
};

/*
 * Two endpoints connected over two channels made in this process, each
 * channel built as @p design (rb2_chan_params_preset()) on the geometry of a
 * host-service link; the halves in @p chans when not NULL.
 * @return 0, or -1 (printed why).
 */
int app_ep_pair(const char *name, struct rb2_xport *xp, const char *design,
		struct rb2_conn_ep **client, struct rb2_conn_ep **server,
		struct app_ep_chans *chans);

/*
 * A connection of L5 as pfent/L5RDMA builds it: its own ring each way
 * (lib/baseline/rb2_l5.h), no multiplexing, no end of stream. [0] carries
 * client to server, [1] server to client. The case studies' benchmarks run
 * their "l5" design on these; "l5-chan" is an RB² channel set up as L5.
 */
struct app_l5_conn {
	struct rb2_l5 *ring[2];
};

#define APP_L5_RING_BYTES (256u << 10)  /* each way: as a host-service link */
#define APP_L5_MAX_MSG (128u << 10)     /* the longest message */

/*
 * One L5 connection made in this process: the client's halves on
 * @p client_lcore, the server's on @p server_lcore.
 * @return 0, or -1 (printed why).
 */
int app_l5_conn_create(const char *name, struct rb2_xport *xp, unsigned int client_lcore,
		       unsigned int server_lcore, struct app_l5_conn *c);
void app_l5_conn_destroy(struct app_l5_conn *c);

/*
 * Open @p n connections on @p ep to ports @p port .. @p port + nports - 1
 * (round robin), on @p host through a host service (@p via_service) or to
 * the endpoint's peer, and wait up to 10 s for all to be accepted.
 * @return 0 with the descriptors in @p cds, or -1 (printed why: refused,
 *   with the reason, or no answer).
 */
int app_conns_open(struct rb2_conn_ep *ep, int via_service, uint32_t host, uint16_t port,
		   unsigned int nports, unsigned int first, int *cds, unsigned int n);

#endif /* APP_NET_H */
