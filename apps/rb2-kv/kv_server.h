/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef KV_SERVER_H
#define KV_SERVER_H

/*
 * rb2-kv's protocol for the apps' server loop (app_server.h): each
 * connection speaks rb2-kv's binary protocol or memcached's text one, told
 * apart by its first byte, on one table.
 */

#include <stdint.h>

#include "app_server.h"
#include "kv_store.h"

/* An lcore's server context: its table, and what it counted. */
struct kv_serve_ctx {
	struct kv_store *store;
	uint64_t bad_requests;   /* answered BAD_REQUEST or a text error */
};

extern const struct app_proto kv_proto;

#endif /* KV_SERVER_H */
