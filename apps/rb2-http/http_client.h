/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef HTTP_CLIENT_H
#define HTTP_CLIENT_H

/*
 * rb2-http's load generator: a closed loop, as the RB² paper's (§V-C): each
 * connection sends a GET, waits for the whole answer, checks it (status
 * 200, and the body byte for byte against the file it asked for), then
 * sends the next. Over rb2 connections or TCP.
 */

#include <stddef.h>
#include <signal.h>
#include <stdint.h>

#include <rb2_conn.h>

#include "app_hist.h"
#include "app_net.h"

/* A file to ask for, and what its body must be (NULL: not checked). */
struct http_target {
	char path[256];
	uint8_t *body;
	size_t len;
};

struct http_result {
	struct app_hist lat;
	uint64_t ok;               /* 200 with the right body */
	uint64_t bad_status, bad_body;
	uint64_t t_start_ns, t_end_ns;
	char first_failure[320];
};

struct http_client;

/* @p targets are asked for in turn, starting at connection @p idx's. */
struct http_client *http_client_rb2(struct rb2_conn_ep *ep, int via_service, uint32_t host,
				    uint16_t port, unsigned int conns,
				    const struct http_target *targets, unsigned int n_targets,
				    unsigned int idx);
struct http_client *http_client_tcp(const char *addr, unsigned int conns,
				    const struct http_target *targets, unsigned int n_targets,
				    unsigned int idx);
/* Over L5's own rings (the bench's "l5"): @p conns connections @p l5, the
 * client's halves on this lcore. */
struct http_client *http_client_l5(const struct app_l5_conn *l5, unsigned int conns,
				   const struct http_target *targets, unsigned int n_targets,
				   unsigned int idx);
void http_client_free(struct http_client *c);

/* Set (by a signal handler) to end every running client at its next pass:
 * http_client_run() then returns the results so far. */
extern volatile sig_atomic_t http_client_stop;

/* Make @p requests requests, saying how far it is once a second (unless
 * @p quiet), however slow the answers. @return 0, or -errno (a connection
 * failed: why in res->first_failure). Wrong answers are counted, not fatal. */
int http_client_run(struct http_client *c, uint64_t requests, int quiet,
		    struct http_result *res);

/* Read every regular file of @p dir (not below) as a target.
 * @return the count, or -1 (printed why). */
int http_targets_load(const char *dir, struct http_target **t);
void http_targets_free(struct http_target *t, int n);

#endif /* HTTP_CLIENT_H */
