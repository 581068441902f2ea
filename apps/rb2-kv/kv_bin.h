/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef KV_BIN_H
#define KV_BIN_H

/* The server side of rb2-kv's binary protocol (kv_proto.h). */

#include <stdint.h>

#include "app_server.h"
#include "kv_proto.h"
#include "kv_store.h"

/* @return the length of the request that starts at @p p (its 8-byte
 *   header read): what a stream reader must have before executing it. */
static inline uint32_t
kv_bin_req_len(const uint8_t *p)
{
	const struct kv_hdr *h = (const struct kv_hdr *)p;

	return KV_HDR_LEN + h->klen + h->vlen;
}

/*
 * Execute the request of @p len bytes at @p req and write its response to
 * @p out. The answer's room is reserved before the store is touched, so a
 * request that finds no room changed nothing and runs again later.
 *
 * @return 0 (answered: KV_OK or an error status, KV_BAD_REQUEST for an
 *   unknown op), -EAGAIN (no room: call again with the same request),
 *   -EPROTO (@p len is not what the header says: answered KV_BAD_REQUEST;
 *   a stream cannot be trusted after it).
 */
int kv_bin_exec(struct kv_store *s, const uint8_t *req, uint32_t len, const struct app_out *out);

#endif /* KV_BIN_H */
