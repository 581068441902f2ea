/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Emitting on a stage's next edges (rb2_stage.h), the pipeline's fast path.
 *
 * An edge to a stage on another lcore, process or host is an RB² channel:
 * emit reserves in it (zero copy), waiting for room. An edge to a stage on
 * the same lcore is a queue, as rte_graph's node streams are: the messages
 * are copied into a chunk, chunks queue on the edge, and the worker runs the
 * next stage on them once the emitting call has returned
 * (rb2_pipeline_worker.c). A stage is therefore never entered from inside
 * another stage's callback, and the stack stays one stage deep.
 */

#include <errno.h>
#include <string.h>

#include <rte_malloc.h>
#include <rte_pause.h>


#include "rb2_link.h"
#include "rb2_pipeline_private.h"

/* A chunk for @need bytes: from the pool, or allocated on the lcore's
 * socket (CHUNK_ARENA, or @need if one message is larger). */
static struct rb2_chunk *
chunk_get(struct rb2_stage *st, size_t need)
{
	struct rb2_worker *w = st->w;
	struct rb2_chunk *c = w->pool;
	size_t cap = RTE_MAX((size_t)CHUNK_ARENA, need);

	if (c != NULL && need <= CHUNK_ARENA) {
		w->pool = c->next;
	} else {
		c = rte_malloc_socket("rb2_chunk", sizeof(*c) + cap, RTE_CACHE_LINE_SIZE,
				      st->socket);
		if (c == NULL)
			return NULL;
		c->cap = cap;
	}
	c->next = NULL;
	c->n = 0;
	c->used = 0;
	return c;
}

void
rb2_chunk_put(struct rb2_worker *w, struct rb2_chunk *c)
{
	if (c->cap != CHUNK_ARENA) { /* a one-message giant */
		rte_free(c);
		return;
	}
	c->next = w->pool;
	w->pool = c;
}

void
rb2_chunk_pool_free(struct rb2_worker *w)
{
	while (w->pool != NULL) {
		struct rb2_chunk *c = w->pool;

		w->pool = c->next;
		rte_free(c);
	}
}

/* The chunk the next @s bytes go into on direct edge @e: the one being
 * filled, or a new one queued behind it. NULL: out of memory, or the
 * call queued more than RB2_STAGE_DIRECT_MAX. */
static struct rb2_chunk *
edge_room(struct rb2_stage *st, struct rb2_edge *e, size_t s)
{
	struct rb2_chunk *c = e->q_tail;

	if (c != NULL && c->n < RB2_STAGE_BURST_MAX && c->used + s <= c->cap)
		return c;
	if (e->q_bytes + s > RB2_STAGE_DIRECT_MAX) {
		rb2_stage_err(st, "emitted more than %u MiB on edge '%s' in one call; the next "
			      "stage, on the same lcore, only runs after the call returns: emit "
			      "less per call (or place the stages on two lcores)",
			      RB2_STAGE_DIRECT_MAX >> 20, e->name);
		return NULL;
	}
	c = chunk_get(st, s);
	if (c == NULL) {
		rb2_stage_err(st, "out of memory queueing %zu bytes on edge '%s'", s, e->name);
		return NULL;
	}
	if (e->q_tail != NULL)
		e->q_tail->next = c;
	else
		e->q_head = c;
	e->q_tail = c;
	st->w->queued++;
	return c;
}

static struct rb2_edge *
edge_of(struct rb2_stage *st, unsigned int edge, uint32_t len, int *ret)
{
	struct rb2_edge *e;

	if (unlikely(edge >= st->nedges || len == 0)) {
		STAT_ADD(st->emit_errors, 1);
		*ret = -EINVAL;
		return NULL;
	}
	e = &st->edges[edge];
	if (unlikely(e->link == NULL)) {
		STAT_ADD(e->failed, 1);
		*ret = -ENOTCONN;
		return NULL;
	}
	return e;
}

/* A link of another kind than a channel (rb2_link.h). Out of line, so that
 * its indirect call costs the channel's path nothing, not even registers. */
static __rte_noinline int
xreserve(struct rb2_stage *st, struct rb2_edge *e, uint32_t len, unsigned int n,
	 void **first, size_t *stride)
{
	return e->xops->reserve(st, e, len, n, first, stride);
}

static __rte_noinline void
xcommit(struct rb2_stage *st, struct rb2_edge *e, uint32_t len, unsigned int n)
{
	e->xops->commit(st, e, len, n);
}

int
rb2_stage_emit_reserve(struct rb2_stage *st, unsigned int edge, uint32_t len,
		       unsigned int n, void **first, size_t *stride)
{
	struct rb2_edge *e;
	int ret;

	e = edge_of(st, edge, len, &ret);
	if (e == NULL)
		return ret;
	if (unlikely(n == 0)) {
		STAT_ADD(st->emit_errors, 1);
		return -EINVAL;
	}
	if (e->next != NULL) {
		size_t s = RTE_ALIGN_CEIL(len, 8);
		struct rb2_chunk *c = edge_room(st, e, s);

		if (unlikely(c == NULL)) {
			STAT_ADD(e->failed, 1);
			return -ENOBUFS;
		}
		*first = c->arena + c->used;
		*stride = s;
		return (int)RTE_MIN((size_t)n, RTE_MIN((size_t)(RB2_STAGE_BURST_MAX - c->n),
						      (c->cap - c->used) / s));
	}
	if (unlikely(e->xops != NULL))     /* a link of another kind (rb2_link.h) */
		return xreserve(st, e, len, n, first, stride);
	for (;;) {
		ret = rb2_tx_reserve_burst(e->tx, len, n, first);
		if (likely(ret > 0)) {
			*stride = rb2_tx_stride(e->tx, len);
			return ret;
		}
		if (ret != -ENOBUFS || st->pl->stop >= 2) {
			STAT_ADD(e->failed, 1);
			if (ret == -ENOBUFS)
				return -ECANCELED;
			if (ret != -EMSGSIZE && e->err == 0) { /* the link failed */
				e->err = ret;
				st->pl->failed = 1;
			}
			return ret;
		}
		/* Full: make sure what we hold is visible, then wait. */
		STAT_ADD(e->waits, 1);
		rb2_tx_flush(e->tx);
		rte_pause();
	}
}

void
rb2_stage_emit_commit(struct rb2_stage *st, unsigned int edge, uint32_t len,
		      unsigned int n)
{
	struct rb2_edge *e = &st->edges[edge];

	if (unlikely(e->xops != NULL)) {   /* a link of another kind (rb2_link.h) */
		xcommit(st, e, len, n);
		return;
	}
	STAT_ADD(e->msgs, n);
	STAT_ADD(e->bytes, (uint64_t)n * len);
	if (e->next != NULL) {
		struct rb2_chunk *c = e->q_tail;
		size_t s = RTE_ALIGN_CEIL(len, 8);

		for (unsigned int i = 0; i < n; i++) {
			c->msgs[c->n].data = c->arena + c->used;
			c->msgs[c->n].len = len;
			c->n++;
			c->used += s;
		}
		e->q_bytes += (size_t)n * s;
		return;
	}
	rb2_tx_commit_burst(e->tx, len, n);
}

int
rb2_stage_emit(struct rb2_stage *st, unsigned int edge, const void *data, uint32_t len)
{
	size_t stride;
	void *slot;
	int ret;

	ret = rb2_stage_emit_reserve(st, edge, len, 1, &slot, &stride);
	if (ret < 0)
		return ret;
	memcpy(slot, data, len);
	rb2_stage_emit_commit(st, edge, len, 1);
	return 0;
}
