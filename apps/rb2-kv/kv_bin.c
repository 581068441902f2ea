/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* rb2-kv's binary protocol, the server side (kv_bin.h). */

#include <errno.h>

#include <rte_branch_prediction.h>

#include "kv_bin.h"

static inline void
answer(const struct app_out *out, uint8_t *r, uint8_t status, uint32_t tag, uint32_t vlen)
{
	struct kv_hdr *h = (struct kv_hdr *)r;

	h->op = status;
	h->klen = KV_RESP_MAGIC;
	h->vlen = (uint16_t)vlen;
	h->tag = tag;
	out->commit(out->ctx, KV_HDR_LEN + vlen);
}

static int
get(struct kv_store *s, const struct kv_hdr *h, const uint8_t *key, const struct app_out *out)
{
	/* Reserve what the value took when last seen; if it grew in
	 * between, reserve again (the same room, larger). */
	uint32_t guess = 128, need;
	uint8_t *r;
	int n;

	for (;;) {
		r = out->reserve(out->ctx, KV_HDR_LEN + guess);
		if (r == NULL)
			return -EAGAIN;
		n = kv_store_get(s, key, h->klen, r + KV_HDR_LEN, guess, &need, NULL);
		if (n != -EMSGSIZE)
			break;
		guess = need;
	}
	if (n >= 0)
		answer(out, r, KV_OK, h->tag, (uint32_t)n);
	else
		answer(out, r, n == -ENOENT ? KV_NOT_FOUND : KV_KEY_TOO_LONG, h->tag, 0);
	return 0;
}

int
kv_bin_exec(struct kv_store *s, const uint8_t *req, uint32_t len, const struct app_out *out)
{
	const struct kv_hdr *h = (const struct kv_hdr *)req;
	const uint8_t *key = req + KV_HDR_LEN;
	uint8_t *r;
	int ret;

	if (likely(len >= KV_HDR_LEN && len == kv_bin_req_len(req) && h->klen > 0)) {
		if (likely(h->op == KV_OP_GET && h->vlen == 0))
			return get(s, h, key, out);
		if (h->op == KV_OP_PUT || (h->op == KV_OP_DEL && h->vlen == 0)) {
			r = out->reserve(out->ctx, KV_HDR_LEN);
			if (r == NULL)
				return -EAGAIN;
			if (h->op == KV_OP_PUT)
				ret = kv_store_put(s, key, h->klen, key + h->klen, h->vlen, 0,
						   KV_PUT_SET);
			else
				ret = kv_store_del(s, key, h->klen);
			answer(out, r, ret == 0 ? KV_OK : ret == -ENOENT ? KV_NOT_FOUND :
			       ret == -E2BIG ? KV_VALUE_TOO_LARGE :
			       ret == -ENAMETOOLONG ? KV_KEY_TOO_LONG : KV_NO_SPACE, h->tag, 0);
			return 0;
		}
	}
	r = out->reserve(out->ctx, KV_HDR_LEN);
	if (r == NULL)
		return -EAGAIN;
	answer(out, r, KV_BAD_REQUEST, len >= KV_HDR_LEN ? h->tag : 0, 0);
	/* A bad op over a well-framed message is only that request's
	 * problem; a length that lies breaks the framing. */
	return len >= KV_HDR_LEN && len == kv_bin_req_len(req) ? 0 : -EPROTO;
}
