/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* rb2-kv's protocol for the apps' server loop (kv_server.h). */

#include <errno.h>

#include "kv_bin.h"
#include "kv_proto.h"
#include "kv_server.h"
#include "kv_text.h"

enum { PROTO_UNKNOWN, PROTO_BIN, PROTO_TEXT };

static int
kv_exec(void *ctx, void *conn, const uint8_t *in, uint32_t len, const struct app_out *out)
{
	struct kv_serve_ctx *k = ctx;
	uint8_t *proto = conn;
	uint32_t n;
	int ret;

	/* A binary request never starts with printable ASCII. */
	if (*proto == PROTO_UNKNOWN)
		*proto = in[0] >= 0x80 ? PROTO_BIN : PROTO_TEXT;
	if (*proto == PROTO_TEXT) {
		ret = kv_text_exec(k->store, (const char *)in, len, out);
		k->bad_requests += ret == -EPIPE;
		return ret;
	}
	if (len < KV_HDR_LEN || len < (n = kv_bin_req_len(in)))
		return 0;
	ret = kv_bin_exec(k->store, in, n, out);
	if (ret == -EAGAIN)
		return ret;
	/* Framed by its own header, a request is never -EPROTO here. */
	if (in[0] < KV_OP_GET || in[0] > KV_OP_DEL || in[1] == 0)
		k->bad_requests++;
	return (int)n;
}

const struct app_proto kv_proto = {
	.name = "rb2-kv",
	.conn_size = 1,
	/* The longest request: a text set of the largest value. */
	.in_max = KV_VALUE_MAX + 2 * KV_TEXT_LINE_MAX + 64,
	.exec = kv_exec,
};
