/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * The relay core: frames towards a link (rb2_conn_relay_pvt.h). Onto its
 * ring when nothing waits for it, else behind what waits, in its queue
 * (bounded: beyond it the source waits), so that a destination that stops
 * polling holds up only the connections to it; and the answers owed to it
 * about lent buffers, sent as its ring has room.
 */

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_errno.h>
#include <rte_malloc.h>

#include <rb2_bulk.h>
#include <rb2_mr_cache.h>

#include "rb2_conn_relay_pvt.h"
#include "rb2_conn_service.h"

/* Keep a copy of @p f behind what @p l's queue holds. @return 0, or
 * -EAGAIN (the queue is full, or cannot be had: the source waits). */
static int
queue_put(struct rb2_conn_relay *R, struct link *l, const void *f, uint32_t len)
{
	struct frame_queue *q = &l->q;
	uint32_t need = qrec_size(len), at = q->tail;

	if (q->buf == NULL) {
		if (R->p.queue_bytes == 0 || q->no_memory)
			goto full;              /* --queue-kb 0: no queues */
		q->buf = rte_malloc("rb2_raasd_queue", R->p.queue_bytes, 8);
		if (q->buf == NULL) {
			q->no_memory = 1;
			RELAY_ERR(R, "no memory for a %u KiB queue for %s: its sources "
				"wait for its ring instead (give the service more memory, -m, or a "
				"smaller --queue-kb)\n", R->p.queue_bytes / 1024, l->name);
			goto full;
		}
		q->cap = R->p.queue_bytes;
		q->head = q->tail = q->bytes = 0;
	}
	/* One more record, and the skipped end if it has to wrap; the
	 * tail never catches up with the head. */
	if (at + need > q->cap) {
		if (q->bytes + (q->cap - at) + need >= q->cap)
			goto full;
		if (q->cap - at >= sizeof(uint32_t))
			*(uint32_t *)(q->buf + at) = QREC_WRAP;
		q->bytes += q->cap - at;
		at = 0;
	}
	if (q->bytes + need >= q->cap)
		goto full;
	*(uint32_t *)(q->buf + at) = len;
	memcpy(q->buf + at + sizeof(uint32_t), f, len);
	q->tail = at + need;
	q->bytes += need;
	R->queued_all++;
	__atomic_store_n(&q->frames, q->frames + 1, __ATOMIC_RELAXED);
	if (q->bytes > q->peak_bytes)
		__atomic_store_n(&q->peak_bytes, q->bytes, __ATOMIC_RELAXED);
	return 0;
full:
	__atomic_fetch_add(&R->held, 1, __ATOMIC_RELAXED);
	return -EAGAIN;
}

/*
 * Everything to link @p l goes through here: onto its ring when nothing is
 * waiting for it, else (or when its ring is full) behind what waits.
 * @return 0, -EAGAIN (not taken: the caller's source waits and offers it
 * again), or the link's error.
 */
int
__rb2_relay_link_put(struct rb2_conn_relay *R, struct link *l, const void *f, uint32_t len)
{
	int ret = -EAGAIN;

	if (l->q.bytes == 0)
		ret = rb2_conn_ep_forward(l->ep, f, len);
	if (ret == -EAGAIN)
		ret = queue_put(R, l, f, len);
	if (ret == 0)
		count(&l->frames_out, &l->bytes_out, len);
	return ret;
}

/* Move what waits for @p l onto its ring, as far as there is room. A link
 * that failed drops it, counted (the next pass resets its connections). */
void
__rb2_relay_link_drain(struct rb2_conn_relay *R, struct link *l)
{
	struct frame_queue *q = &l->q;

	while (q->bytes > 0) {
		uint32_t len = q->cap - q->head >= sizeof(uint32_t) ?
			*(uint32_t *)(q->buf + q->head) : QREC_WRAP;
		int ret;

		if (len == QREC_WRAP) {
			q->bytes -= q->cap - q->head;
			q->head = 0;
			continue;
		}
		ret = rb2_conn_ep_forward(l->ep, q->buf + q->head + sizeof(uint32_t), len);
		if (ret == -EAGAIN)
			return;
		if (ret < 0)
			__atomic_fetch_add(&R->undeliverable, 1, __ATOMIC_RELAXED);
		q->head += qrec_size(len);
		q->bytes -= qrec_size(len);
		__atomic_store_n(&q->frames, q->frames - 1, __ATOMIC_RELAXED);
	}
	q->head = q->tail = 0;
}

/* A link taken away: what still waited for it is counted undeliverable
 * (its connections were reset at their other ends). */
void
__rb2_relay_link_free(struct rb2_conn_relay *R, struct link *l)
{
	if (l->q.frames > 0) {
		__atomic_fetch_add(&R->undeliverable, l->q.frames, __ATOMIC_RELAXED);
		RELAY_ERR(R, "%" PRIu64 " frame(s) queued for %s not delivered: it "
			"is gone\n", l->q.frames, l->name);
	}
	if (l->refdone.n + l->readdone.n > 0)
		RELAY_ERR(R, "%u answer(s) about lent buffers owed to %s not sent: it "
			"is gone\n", l->refdone.n + l->readdone.n, l->name);
	free(l->refdone.e);
	free(l->readdone.e);
	rte_free(l->q.buf);
	free(l);
}

/* Put a header-only control frame towards @p l. */
int
__rb2_relay_send_ctrl(struct rb2_conn_relay *R, struct link *l, uint32_t cid, uint8_t type, uint16_t aux)
{
	uint8_t f[RB2_CONN_HDR_LEN];
	uint64_t h = (uint64_t)cid | (uint64_t)type << 32 | (uint64_t)aux << 48;

	memcpy(f, &h, sizeof(h));
	return __rb2_relay_link_put(R, l, f, sizeof(f));
}

void
__rb2_relay_owe(struct link *l, struct owed *o, uint32_t id, int status, const char *what)
{
	if (o->n == o->cap) {
		uint32_t cap = o->cap != 0 ? 2 * o->cap : 64;
		void *e = realloc(o->e, cap * sizeof(*o->e));

		if (e == NULL) {
			/* Lost: its lender's buffer stays lent, or its
			 * reader waits, until that link goes. */
			RELAY_ERR(l->R, "%s: out of memory for a %s about buffer %#x\n",
				l->name, what, id);
			return;
		}
		o->e = e;
		o->cap = cap;
	}
	o->e[o->n++] = (struct rb2_conn_refdone){ .id = id, .status = status };
}

/* Send what is owed to @p l, as far as its ring and queue take it. */
void
__rb2_relay_owed_flush(struct rb2_conn_relay *R, struct link *l)
{
	struct owed *o[2] = { &l->refdone, &l->readdone };
	const uint8_t type[2] = { RB2_CONN_FR_REFDONE, RB2_CONN_FR_READDONE };

	for (int k = 0; k < 2; k++) {
		uint32_t sent = 0;

		while (sent < o[k]->n) {
			uint8_t f[RB2_CONN_HDR_LEN + RB2_CONN_REFDONES_PER_FRAME *
				  sizeof(struct rb2_conn_refdone)];
			uint32_t m = RTE_MIN(o[k]->n - sent, RB2_CONN_REFDONES_PER_FRAME);
			uint64_t h = (uint64_t)RB2_CONN_CID_NONE | (uint64_t)type[k] << 32 |
				(uint64_t)m << 48;

			memcpy(f, &h, sizeof(h));
			memcpy(f + RB2_CONN_HDR_LEN, o[k]->e + sent, m * sizeof(*o[k]->e));
			/* Taken, or the link failed: __rb2_relay_link_settle() then ends
			 * its loans. */
			if (__rb2_relay_link_put(R, l, f, RB2_CONN_HDR_LEN + m * sizeof(*o[k]->e)) == -EAGAIN)
				break;
			sent += m;
		}
		if (sent == 0)
			continue;               /* none owed, or no room: e may be NULL */
		memmove(o[k]->e, o[k]->e + sent, (o[k]->n - sent) * sizeof(*o[k]->e));
		o[k]->n -= sent;
	}
}
