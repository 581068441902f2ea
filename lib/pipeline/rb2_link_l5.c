/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * A link via = l5 (rb2_link.h): L5's own ring (lib/baseline/rb2_l5.h)
 * between two lcores of one process, a baseline. Its ring is slots x
 * slot_size bytes (as rb2-perf sizes it), and its largest message half of
 * it, as a channel's is. The sender builds each message in a buffer of its
 * own and L5 copies it in (L5's send()); the receiver copies messages out
 * into another (L5's receive()). L5 has no end of stream (a zero length is
 * "nothing yet"): once the receiver has taken every message, which its read
 * position tells, a flag says no more will come.
 */

#include <errno.h>
#include <stdatomic.h>

#include <jansson.h>

#include <rte_errno.h>
#include <rte_malloc.h>
#include <rte_pause.h>

#include <rb2_l5.h>

#include "rb2_link.h"
#include "rb2_pipeline_private.h"

/* The receive buffer: at least this, or the largest message. */
#define L5_RX_BUF (64u * 1024)

struct l5_link {
	struct rb2_l5 *l5;
	uint32_t max;               /* its largest message */
	uint8_t *msg;               /* where the sender builds a message */
	uint8_t *buf;               /* where the receiver copies messages out */
	size_t cap;                 /* ... of this many bytes */
	_Atomic bool eos;           /* end of stream: set once the receiver took all */
};

static const char *
l5_check(const struct rb2_link *lk)
{
	if (lk->pkts || lk->direct || !lk->from->local || !lk->to->local)
		return "via = l5 carries messages between two lcores of this process (L5's "
		       "ring connects its halves in one process): it needs a message edge and "
		       "stages on two lcores of one proc";
	return NULL;
}

static void
l5_close(struct rb2_link *lk)
{
	struct l5_link *k = lk->priv;

	if (k == NULL)
		return;
	rte_free(k->msg);
	rte_free(k->buf);
	rb2_l5_destroy(k->l5);
	rte_free(k);
	lk->priv = NULL;
}

static int
l5_open(struct rb2_pipeline *pl, struct rb2_link *lk, char *err, size_t errlen)
{
	size_t bytes = rb2_l5_ring_bytes(lk->params.slots, lk->params.slot_size);
	struct rb2_edge *e = &lk->from->edges[lk->edge];
	struct rb2_xport *xp = rb2_pipeline_xport_get(pl, lk->transport);
	struct l5_link *k;

	if (xp == NULL)
		return rb2_pipeline_cfg_err(pl, err, errlen, lk->line, "link '%s': cannot open "
					    "transport '%s': %s (the log says more)", lk->name,
					    lk->transport, rte_strerror(rte_errno));
	k = rte_zmalloc_socket("rb2_l5_link", sizeof(*k), RTE_CACHE_LINE_SIZE, lk->to->socket);
	if (k == NULL)
		return rb2_pipeline_cfg_err(pl, err, errlen, lk->line, "link '%s': out of memory: "
					    "raise the EAL's memory (-m)", lk->name);
	lk->priv = k;
	k->max = (uint32_t)RTE_MIN(bytes / 2 - 16, (size_t)UINT32_MAX / 2);
	k->l5 = rb2_l5_create(xp, lk->name, bytes, k->max, lk->from->lcore, lk->to->lcore);
	if (k->l5 == NULL)
		return rb2_pipeline_cfg_err(pl, err, errlen, lk->line, "link '%s': cannot create "
					    "L5's ring (%zu B) over '%s': %s (the log says more)",
					    lk->name, bytes, lk->transport, rte_strerror(rte_errno));
	k->cap = RTE_MAX((size_t)L5_RX_BUF, (size_t)k->max);
	k->buf = rte_malloc_socket("rb2_l5_rx", k->cap, RTE_CACHE_LINE_SIZE, lk->to->socket);
	k->msg = rte_malloc_socket("rb2_l5_tx", k->max, RTE_CACHE_LINE_SIZE, lk->from->socket);
	if (k->buf == NULL || k->msg == NULL)
		return rb2_pipeline_cfg_err(pl, err, errlen, lk->line, "link '%s': out of memory "
					    "for L5's buffers (%zu B): raise the EAL's memory (-m)",
					    lk->name, k->cap + k->max);
	e->xops = &rb2_link_l5_ops;
	e->xpriv = k;
	return 0;
}

static bool
l5_is_input(const struct rb2_link *lk)
{
	return lk->priv != NULL;
}

/* L5's receive(), each message copied out (and cleared in the ring) into
 * the link's buffer while a burst's worth fits, then the stage runs on
 * them. The end: the flag, then an empty ring. */
static int
l5_poll(struct rb2_worker *w, struct rb2_link *l)
{
	struct l5_link *k = l->priv;
	struct rb2_msg msgs[RB2_STAGE_BURST_MAX];
	unsigned int n = 0, max = RTE_MIN(w->pl->burst, (unsigned int)RB2_STAGE_BURST_MAX);
	size_t used = 0;
	bool eos = atomic_load_explicit(&k->eos, memory_order_acquire);

	while (n < max) {
		int len = rb2_l5_recv(k->l5, k->buf + used, (uint32_t)(k->cap - used));

		if (len == -EAGAIN || (len == -EMSGSIZE && n > 0))
			break;
		if (unlikely(len < 0)) {
			PL_LOG(ERR, "link '%s' (L5's ring) failed: %s; what stage '%s' had not sent "
			       "is lost (its summary says how much it sent)", l->name,
			       strerror(-len), l->from->name);
			w->pl->failed = 1;
			l->err = len;
			l->ended = true;
			l->to->n_in_done++;
			break;
		}
		msgs[n].data = k->buf + used;
		msgs[n++].len = (uint32_t)len;
		used += RTE_ALIGN_CEIL((size_t)len, 8);
	}
	if (n > 0) {
		rb2_stage_run(l->to, msgs, n);
		rb2_worker_run_queued(w);
		return 1;
	}
	/* Set once everything sent was taken: nothing can follow it. */
	if (eos && !l->ended) {
		l->ended = true;
		l->to->n_in_done++;
	}
	return 0;
}

/* Over verbs the read position is READ, so nothing is still on the wire
 * when the flag is set. */
static void
l5_end(struct rb2_stage *st, struct rb2_edge *e)
{
	struct l5_link *k = e->xpriv;
	int ret;

	while ((ret = rb2_l5_drained(k->l5)) == 0 && st->pl->stop < 2)
		rte_pause();
	if (ret < 0 && e->err == 0) {
		PL_LOG(ERR, "stage '%s': link '%s' (L5's ring) failed at its end: %s", st->name,
		       e->link->name, strerror(-ret));
		e->err = ret;
		st->pl->failed = 1;
	}
	atomic_store_explicit(&k->eos, true, memory_order_release);
}

/* The messages are built in the edge's buffer once L5's ring has room for
 * them (so that the commit, L5's send() of each, never waits), as L5's
 * send() copies from the application's buffer. */
static int
l5_reserve(struct rb2_stage *st, struct rb2_edge *e, uint32_t len, unsigned int n,
	   void **first, size_t *stride)
{
	struct l5_link *k = e->xpriv;
	size_t s = RTE_ALIGN_CEIL(len, 8);
	int ret;

	if (len > k->max) {
		STAT_ADD(e->failed, 1);
		return -EMSGSIZE;
	}
	n = (unsigned int)RTE_MIN((size_t)n, k->max / s);
	while ((ret = rb2_l5_room(k->l5, len, n)) == -ENOBUFS && st->pl->stop < 2) {
		STAT_ADD(e->waits, 1);
		rte_pause();
	}
	if (ret < 0) {
		STAT_ADD(e->failed, 1);
		if (ret == -ENOBUFS)
			return -ECANCELED;
		if (e->err == 0) {
			e->err = ret;
			st->pl->failed = 1;
		}
		return ret;
	}
	*first = k->msg;
	*stride = s;
	return ret;
}

/* One L5 message each; l5_reserve() found the room. */
static void
l5_commit(struct rb2_stage *st, struct rb2_edge *e, uint32_t len, unsigned int n)
{
	struct l5_link *k = e->xpriv;
	size_t s = RTE_ALIGN_CEIL(len, 8);

	for (unsigned int i = 0; i < n; i++) {
		int ret = rb2_l5_send(k->l5, k->msg + i * s, len);

		if (ret < 0) {
			STAT_ADD(e->failed, n - i);
			if (e->err == 0) {
				e->err = ret;
				st->pl->failed = 1;
			}
			return;
		}
		STAT_ADD(e->msgs, 1);
		STAT_ADD(e->bytes, (uint64_t)len);
	}
}

static void
l5_report(const struct rb2_link *lk, FILE *out)
{
	const struct l5_link *k = lk->priv;
	struct rb2_l5_stats ls;

	rb2_l5_stats_get(k->l5, &ls);
	fprintf(out, "  link '%s': L5's own ring (via = l5): %" PRIu64 " messages sent, %"
		PRIu64 " received; %" PRIu64 " WRITEs in %" PRIu64 " posts, %" PRIu64
		" signaled, %" PRIu64 " reads of its read position; %" PRIu64 " bytes "
		"copied in and out, %" PRIu64 " cleared\n", lk->name, ls.messages,
		ls.received, ls.writes, ls.posts, ls.signaled, ls.head_reads,
		ls.copied_bytes, ls.cleared_bytes);
}

static json_t *
l5_report_json(const struct rb2_link *lk)
{
	const struct l5_link *k = lk->priv;
	struct rb2_l5_stats ls;

	rb2_l5_stats_get(k->l5, &ls);
	return json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "name", lk->name,
			 "messages", (json_int_t)ls.messages, "received", (json_int_t)ls.received,
			 "writes", (json_int_t)ls.writes, "posts", (json_int_t)ls.posts,
			 "signaled", (json_int_t)ls.signaled, "head_reads", (json_int_t)ls.head_reads,
			 "wrapped", (json_int_t)ls.wrapped, "copied_bytes",
			 (json_int_t)ls.copied_bytes, "cleared_bytes", (json_int_t)ls.cleared_bytes);
}

const struct rb2_link_ops rb2_link_l5_ops = {
	.via = "l5",
	.about = "L5's own ring, a baseline",
	.check = l5_check,
	.open = l5_open,
	.close = l5_close,
	.is_input = l5_is_input,
	.poll = l5_poll,
	.end = l5_end,
	.reserve = l5_reserve,
	.commit = l5_commit,
	.report = l5_report,
	.json_key = "l5_links",
	.report_json = l5_report_json,
	.no_sleep = "is L5's ring, which cannot wake a sleeper",
};
