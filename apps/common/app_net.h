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
#include <sys/socket.h>

#include <rb2_conn.h>
#include <rb2_xport.h>

/* Parse "IP:PORT" (IPv4). @return 0, or -1 (printed why, naming @p what). */
int app_parse_addr(const char *what, const char *addr, struct sockaddr_storage *sa);

/* A non-blocking listening TCP socket on @p addr (port 0: any; SO_REUSEPORT,
 * so several lcores can listen on one port). @return the fd, or -1
 * (printed why). Its port in *port when not NULL. */
int app_tcp_listen(const char *addr, uint16_t *port);

/* A blocking TCP connection to @p addr with TCP_NODELAY. @return the fd,
 * or -1 (printed why). */
int app_tcp_connect(const char *addr);

/*
 * Two endpoints connected over two channels made in this process, each
 * channel built as @p design (rb2_chan_params_preset(): rb2, l5, farm,
 * socksdirect) on the geometry of a host-service link.
 * @return 0, or -1 (printed why).
 */
int app_ep_pair(const char *name, struct rb2_xport *xp, const char *design,
		struct rb2_conn_ep **client, struct rb2_conn_ep **server);

#endif /* APP_NET_H */
