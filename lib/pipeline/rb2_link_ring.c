/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * A link via = rte_ring (rb2_link.h): DPDK's SP/SC ring of mbuf pointers
 * between two lcores of one process, a baseline. With carry = descriptors
 * its elements are the RB² channel's packet descriptors (struct
 * rb2_pkt_desc) instead of pointers, to tell the ring from what it
 * carries. The end of stream is an element that is no mbuf's address.
 */

#include <errno.h>
#include <string.h>

#include <rte_errno.h>
#include <rte_pause.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "rb2_link.h"
#include "rb2_pipeline_private.h"

/* The end of stream: never an mbuf's address. */
#define RING_EOS ((void *)(uintptr_t)1)

static const char *
ring_check(const struct rb2_link *lk)
{
	if (!lk->pkts || lk->direct || !lk->from->local || !lk->to->local ||
	    lk->carry == LINK_CARRY_BYTES)
		return "via = rte_ring carries mbuf pointers between two lcores of this "
		       "process: it needs a packet edge, stages on two lcores of one proc, "
		       "and carry = pointers";
	return NULL;
}

static int
ring_open(struct rb2_pipeline *pl, struct rb2_link *lk, char *err, size_t errlen)
{
	struct rb2_edge *e = &lk->from->edges[lk->edge];
	char rname[RTE_RING_NAMESIZE];
	struct rte_ring *r;

	snprintf(rname, sizeof(rname), "rb2q.%s", lk->name);
	r = rte_ring_create_elem(rname, lk->carry_desc ? sizeof(struct rb2_pkt_desc) :
				 sizeof(void *), rte_align32pow2(lk->params.slots), lk->to->socket,
				 RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (r == NULL)
		return rb2_pipeline_cfg_err(pl, err, errlen, lk->line, "link '%s': cannot create "
					    "rte_ring '%s': %s", lk->name, rname,
					    rte_strerror(rte_errno));
	lk->priv = r;
	lk->carry = LINK_CARRY_PTRS;
	e->xops = &rb2_link_ring_ops;
	e->xpriv = r;
	e->ptrs = true;
	e->desc = lk->carry_desc;
	e->ptrs_max = RB2_PKT_PTRS_MAX;
	return 0;
}

static void
ring_close(struct rb2_link *lk)
{
	rte_ring_free(lk->priv);
	lk->priv = NULL;
}

static bool
ring_is_input(const struct rb2_link *lk)
{
	return lk->priv != NULL;
}

/* A burst of mbuf pointers (or descriptors), given to the stage as one
 * carrier; the end-of-stream mark ends the input. */
static int
ring_poll(struct rb2_worker *w, struct rb2_link *l)
{
	void *ptrs[RB2_STAGE_BURST_MAX];
	struct rb2_pkt_desc descs[RB2_STAGE_BURST_MAX];
	struct rb2_msg m = { .data = l->carry_desc ? (void *)descs : (void *)ptrs };
	struct rte_ring *r = l->priv;
	unsigned int n, k;

	if (l->carry_desc) {
		n = rte_ring_sc_dequeue_burst_elem(r, descs, sizeof(descs[0]),
						   RB2_STAGE_BURST_MAX, NULL);
		for (k = 0; k < n && descs[k].m != RING_EOS; k++)
			;
	} else {
		n = rte_ring_sc_dequeue_burst(r, ptrs, RB2_STAGE_BURST_MAX, NULL);
		for (k = 0; k < n && ptrs[k] != RING_EOS; k++)
			;
	}
	if (n == 0)
		return 0;
	if (k > 0) {
		m.len = k * (uint32_t)(l->carry_desc ? sizeof(descs[0]) : sizeof(void *));
		rb2_pkt_deliver(w, l->to, &m, 1, l->carry_desc ? RB2_PKTS_DESC : RB2_PKTS_PTRS);
		rb2_worker_run_queued(w);
	}
	if (k < n) {
		l->ended = true;
		l->to->n_in_done++;
	}
	return 1;
}

static void
ring_end(struct rb2_stage *st, struct rb2_edge *e)
{
	struct rb2_pkt_desc eos = { .m = RING_EOS };
	void *eos_ptr = RING_EOS;

	while (rte_ring_sp_enqueue_elem(e->xpriv, e->desc ? (void *)&eos : (void *)&eos_ptr,
					e->desc ? sizeof(eos) : sizeof(eos_ptr)) != 0 &&
	       st->pl->stop < 2)
		rte_pause();
}

/* The pointers (or descriptors) into the ring, waiting for room as an RB²
 * channel's emit does. */
static int
ring_emit_pkts(struct rb2_stage *st, struct rb2_edge *e, struct rte_mbuf **pkts, unsigned int n)
{
	struct rb2_pkt_desc d[RB2_PKT_PTRS_MAX];
	struct rte_ring *r = e->xpriv;
	unsigned int off = 0, k = 0;

	while (off < n) {
		if (e->desc) {              /* elements of struct rb2_pkt_desc */
			if (k == 0) {
				k = RTE_MIN(n - off, RB2_PKT_PTRS_MAX);
				for (unsigned int j = 0; j < k; j++)
					rb2_pkt_desc_fill(&d[j], pkts[off + j]);
			}
			unsigned int sent = rte_ring_sp_enqueue_burst_elem(r, d, sizeof(d[0]), k,
									    NULL);
			memmove(d, d + sent, (k - sent) * sizeof(d[0]));
			k -= sent;
			off += sent;
		} else {
			off += rte_ring_sp_enqueue_burst(r, (void *const *)(pkts + off), n - off,
							 NULL);
		}
		if (off == n)
			break;
		if (st->pl->stop >= 2) {
			STAT_ADD(e->failed, 1);
			rb2_pkt_drop(st, pkts + off, n - off);
			return -ECANCELED;
		}
		STAT_ADD(e->waits, 1);
		rte_pause();
	}
	STAT_ADD(e->msgs, n);
	STAT_ADD(e->bytes, (uint64_t)n * (e->desc ? sizeof(*d) : sizeof(*pkts)));
	return (int)n;
}

const struct rb2_link_ops rb2_link_ring_ops = {
	.via = "rte_ring",
	.about = "DPDK's ring of mbuf pointers, a baseline",
	.check = ring_check,
	.open = ring_open,
	.close = ring_close,
	.is_input = ring_is_input,
	.poll = ring_poll,
	.end = ring_end,
	.emit_pkts = ring_emit_pkts,
	.no_sleep = "is an rte_ring, which cannot wake a sleeper",
};
