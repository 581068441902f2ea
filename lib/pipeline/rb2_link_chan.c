/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * A link via = rb2, the default (rb2_link.h): an RB² channel over the link's
 * transport, its halves in this process or across processes and hosts. Its
 * fast paths are inline where they run (the worker's loop peeks and
 * releases, rb2_stage_emit_reserve() and _commit() reserve and commit);
 * this file makes and connects the channel, puts it on a lane where it
 * can share a QP ([pipeline] lanes), and decides how packets travel on it.
 */

#include <errno.h>
#include <string.h>

#include <rte_errno.h>

#include <rb2_xport.h>
#include <rb2_xport_lane.h>

#include "rb2_link.h"
#include "rb2_pipeline_private.h"

/*
 * How a packet link carries its packets: mbuf pointers where both ends share
 * memory (a transport without RB2_XPORT_CAP_REMOTE: the lcores of a process,
 * or a DPDK process group, where every hugepage is mapped at the same
 * address), else their bytes; `carry` may ask for either.
 */
static int
link_carry(struct rb2_pipeline *pl, struct rb2_link *lk, struct rb2_xport *xp,
	   char *err, size_t errlen)
{
	bool shared = (rb2_xport_caps(xp) & RB2_XPORT_CAP_REMOTE) == 0;
	struct rb2_edge *e = &lk->from->edges[lk->edge];

	if (!lk->pkts)
		return 0;
	if (lk->carry == LINK_CARRY_PTRS && !shared)
		return rb2_pipeline_cfg_err(pl, err, errlen, lk->line, "link '%s': carry = %s, but over "
			       "transport '%s' the peers do not share memory: use carry = bytes "
			       "(or auto)", lk->name, lk->carry_desc ? "descriptors" : "pointers",
			       lk->transport);
	if (lk->carry == LINK_CARRY_AUTO)
		lk->carry = shared ? LINK_CARRY_PTRS : LINK_CARRY_BYTES;
	if (lk->carry == LINK_CARRY_PTRS) {
		/* A read of the ring gives the stage at most a burst of packets:
		 * holding more only spreads the consumer over more mbufs. */
		unsigned int per = lk->tx != NULL ?
			RTE_MIN(RB2_PKT_PTRS_MAX, rb2_tx_max_msg(lk->tx) /
				(unsigned int)sizeof(struct rb2_pkt_desc)) : RB2_PKT_PTRS_MAX;

		lk->peek = RTE_MAX(1u, RTE_MIN(pl->burst, RB2_STAGE_BURST_MAX / RTE_MAX(per, 1u)));
	}
	if (lk->tx == NULL)
		return 0;
	e->ptrs = lk->carry == LINK_CARRY_PTRS;
	e->desc = e->ptrs;
	e->ptrs_max = RTE_MIN(RB2_PKT_PTRS_MAX,
			      rb2_tx_max_msg(lk->tx) / (unsigned int)sizeof(struct rb2_pkt_desc));
	if (e->ptrs && e->ptrs_max == 0)
		return rb2_pipeline_cfg_err(pl, err, errlen, lk->line, "link '%s': a message cannot hold one "
			       "packet's descriptor (%zu bytes): raise slot_size", lk->name,
			       sizeof(struct rb2_pkt_desc));
	return 0;
}

/*
 * [pipeline] lanes: the lane this process's @lcore posts into towards the
 * lcore of stage @peer (here or in another process) on @xp, made on first
 * use. A lane's QP connects to one other lane's QP, so there is one per
 * (lcore, peer process and lcore, transport); both directions between two
 * lcores share that QP pair. Across processes the peer's own lane is the
 * other end: the first channel's connect joins the two lanes' QPs, and the
 * others' descriptors go out of band (rb2_xport_lane.h). NULL (with the
 * reason logged) where the link keeps a QP of its own.
 */
static struct rb2_xport_lane *
lane_get(struct rb2_pipeline *pl, struct rb2_xport *xp, unsigned int lcore,
	 const struct rb2_stage *peer)
{
	struct rb2_worker *w = &pl->workers[lcore];
	struct rb2_xport_lane *la;

	for (unsigned int i = 0; i < pl->nlanes; i++)
		if (pl->lane_tab[i].xp == xp && pl->lane_tab[i].lcore == lcore &&
		    pl->lane_tab[i].peer == peer->lcore &&
		    strcmp(pl->lane_tab[i].peer_proc, peer->proc) == 0)
			return pl->lane_tab[i].lane;
	if (pl->nlanes == LANES_MAX || w->nlanes == WORKER_LANES_MAX) {
		PL_LOG(NOTICE, "lanes: lcore %u has %u lanes (at most %d, %d in all): its link to lcore %u keeps a QP of its own",
		       lcore, w->nlanes, WORKER_LANES_MAX, LANES_MAX, peer->lcore);
		return NULL;
	}
	la = rb2_xport_lane_create(xp, &(struct rb2_xport_lane_params){ .lcore_id = lcore });
	if (la == NULL) {
		PL_LOG(NOTICE, "lanes: no lane on transport '%s' for lcore %u (%s): its channels keep QPs of their own",
		       rb2_xport_name(xp), lcore, rte_strerror(rte_errno));
		return NULL;
	}
	pl->lane_tab[pl->nlanes].xp = xp;
	pl->lane_tab[pl->nlanes].lcore = lcore;
	pl->lane_tab[pl->nlanes].peer = peer->lcore;
	pl->lane_tab[pl->nlanes].peer_proc = peer->proc;
	pl->lane_tab[pl->nlanes++].lane = la;
	w->lanes[w->nlanes++] = la;
	return la;
}

/* May this link's halves post into lanes? A transport that posts WRs (not
 * load/store), one that exchanges descriptors out of band if the other half
 * is in another process, and a channel that needs no receives
 * (WRITE_WITH_IMM, a sleeping receiver's wake-up): lanes carry one-sided
 * WRs only. Both processes of a link read the same configuration and open
 * the same transport, so both halves agree. */
static bool
link_on_lanes(const struct rb2_pipeline *pl, const struct rb2_link *lk, struct rb2_xport *xp,
	      const struct rb2_chan_params *p)
{
	const char *why = NULL;

	if (!pl->lanes)
		return false;
	if (rb2_xport_caps(xp) & RB2_XPORT_CAP_LOADSTORE)
		why = "its transport stores straight into the peer's memory and posts nothing";
	else if ((!lk->from->local || !lk->to->local) && !(rb2_xport_caps(xp) & RB2_XPORT_CAP_OOB))
		why = "its other half is in another process, which its transport's lanes do not reach";
	else if (p->tail_sync == RB2_TAIL_WRITE_IMM || (p->flags & RB2_CHAN_F_SLEEP))
		why = "it needs receive completions (WRITE_WITH_IMM, or idle_sleep's wake-ups)";
	if (why != NULL)
		PL_LOG(INFO, "link '%s' keeps a QP of its own: %s", lk->name, why);
	return why == NULL;
}

/* Create this process's halves of the link's channel and connect them. */
static int
chan_open(struct rb2_pipeline *pl, struct rb2_link *lk, char *err, size_t errlen)
{
	bool tx_here = lk->from->local, rx_here = lk->to->local;
	struct rb2_chan_params p = lk->params;
	struct rb2_xport *xp;
	int ret = 0;

	xp = rb2_pipeline_xport_get(pl, lk->transport);
	if (xp == NULL)
		return rb2_pipeline_cfg_err(pl, err, errlen, lk->line,
			       "link '%s': cannot open transport '%s': %s (the log says more)",
			       lk->name, lk->transport, rte_strerror(rte_errno));
	/* Adaptive polling: the receiver may sleep where the transport can
	 * wake it. Both processes of a link read the same config, so both
	 * halves agree. */
	if (pl->idle_sleep > 0 && (rb2_xport_caps(xp) & RB2_XPORT_CAP_WAKE)) {
		p.flags |= RB2_CHAN_F_SLEEP;
		lk->sleep = true;
	}
	if (link_on_lanes(pl, lk, xp, &p)) {
		if (tx_here)
			lk->tx_lane = lane_get(pl, xp, lk->from->lcore, lk->to);
		if (rx_here)
			lk->rx_lane = lane_get(pl, xp, lk->to->lcore, lk->from);
		/* Both halves on lanes or neither: a lane's channel connects
		 * only to another lane's. Across processes a half that could
		 * not have one fails to connect, saying so (the limits in
		 * the log above). */
		if ((tx_here && lk->tx_lane == NULL) || (rx_here && lk->rx_lane == NULL))
			lk->tx_lane = lk->rx_lane = NULL;
	}
	if (tx_here) {
		p.lcore_id = lk->from->lcore;
		p.lane = lk->tx_lane;
		lk->tx = rb2_tx_create(lk->name, xp, &p);
	}
	if (rx_here) {
		p.lcore_id = lk->to->lcore;
		p.lane = lk->rx_lane;
		lk->rx = rb2_rx_create(lk->name, xp, &p);
	}
	if ((tx_here && lk->tx == NULL) || (rx_here && lk->rx == NULL))
		return rb2_pipeline_cfg_err(pl, err, errlen, lk->line, "link '%s': cannot create the channel: %s",
			       lk->name, rte_strerror(rte_errno));
	if (tx_here && rx_here) {
		ret = rb2_chan_pair(lk->tx, lk->rx);
	} else {
		PL_LOG(INFO, "link '%s': waiting up to %u ms for %s '%s' (proc %s) at '%s'",
		       lk->name, lk->timeout_ms, tx_here ? "receiver" : "sender",
		       tx_here ? lk->to->name : lk->from->name,
		       tx_here ? lk->to->proc : lk->from->proc, lk->peer);
		ret = tx_here ? rb2_tx_connect(lk->tx, lk->peer, lk->timeout_ms) :
			rb2_rx_connect(lk->rx, lk->peer, lk->timeout_ms);
	}
	if (ret != 0)
		return rb2_pipeline_cfg_err(pl, err, errlen, lk->line, "link '%s': cannot connect: %s%s",
			       lk->name, strerror(-ret), ret == -ETIMEDOUT ?
			       " (is the peer process running with the same config, --file-prefix "
			       "and its --proc?)" : "");
	if (tx_here)
		lk->from->edges[lk->edge].tx = lk->tx;
	return link_carry(pl, lk, xp, err, errlen);
}

static void
chan_close(struct rb2_link *lk)
{
	rb2_tx_destroy(lk->tx);
	rb2_rx_destroy(lk->rx);
	lk->tx = NULL;
	lk->rx = NULL;
}

static bool
chan_is_input(const struct rb2_link *lk)
{
	return lk->rx != NULL;
}

const struct rb2_link_ops rb2_link_chan_ops = {
	.via = "rb2",
	.about = "an RB2 channel",
	.open = chan_open,
	.close = chan_close,
	.is_input = chan_is_input,
};
