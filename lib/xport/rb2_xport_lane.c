/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Lanes (rb2_xport_lane.h): queues of one lcore multiplexed over one real QP,
 * their WRs chained until the lane's flush. The queues are ordinary struct
 * rb2_xport_qp whose post and poll are this file's; rb2_xport.c hands a
 * queue with a lane to the functions of rb2_xport_lane_pvt.h.
 */

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <rte_errno.h>
#include <rte_malloc.h>
#include <rte_random.h>

#include "rb2_xport_driver.h"
#include "rb2_xport_lane.h"
#include "rb2_xport_lane_pvt.h"

#define LANE_MAX_QUEUES 1024
#define LANE_STAGE 256       /* inline bytes captured per waiting WR, at most */
#define LANE_WAIT_POLLS 16   /* empty polls with WRs waiting: a wait, flush */
#define LANE_LOOK 32         /* later WRITEs a superseded one is looked for in */
#define LANE_NOBODY UINT16_MAX /* lane_sig.vq of a WR signaled for the window only */

/* A queue of the lane: its completions, handed over by whichever queue
 * polled the real QP. */
struct lane_vq {
	struct rb2_xport_lane *lane;
	uint16_t idx;
	uint32_t id;                /* unique in the lane: a slot is reused */
	uint64_t pend_gen;          /* == lane->gen: it has WRs in the lane */
	uint32_t waiting;           /* polls that found nothing, WRs waiting */
	uint32_t mask, head, tail;  /* its completion ring */
	struct rb2_xport_wc cq[];
};

/* Whose a signaled WR on the real QP is. */
struct lane_sig {
	uint16_t vq;                /* LANE_NOBODY: signaled for the window */
	uint32_t id;                /* the queue's, not a later one's in its slot */
	uint64_t wr_id;
};

struct rb2_xport_lane {
	struct rb2_xport_qp *qp;    /* the real one */
	struct rb2_xport_lane *peer; /* connected in this process */
	uint64_t token;             /* names it to a peer in another process */
	uint64_t peer_token;        /* connected to that peer's lane (0: not) */
	uint32_t max_pending, npend;
	uint32_t nout, out_pos;     /* the chain, and how much of it is posted */
	uint32_t max_chain;         /* WRs per post */
	uint64_t gen;               /* flushes so far */
	uint32_t next_id;           /* of the next queue */
	int no_merge;
	int err;
	uint32_t window, inflight;  /* admission window (0: none), WRs in it */
	uint32_t sig_mask;
	uint64_t sig_next;          /* the next signaled WR's number (its wr_id) */
	struct rb2_xport_lane_stats st;
	struct rb2_xport_wr *pend;  /* waiting, in order; wr_id: the index */
	uint64_t *pend_wr_id;       /* ... their own wr_id */
	uint16_t *pend_vq;          /* ... whose */
	uint8_t *drop;              /* ... superseded (the flush's scratch) */
	uint8_t *stage;             /* ... captured inline payloads (two halves) */
	struct rb2_xport_wr *out;   /* the chain being built */
	struct lane_sig *sig;       /* signaled WRs in flight, by number */
	struct lane_vq *vqs[LANE_MAX_QUEUES];
};

struct rb2_xport_lane *
rb2_xport_lane_create(struct rb2_xport *xp, const struct rb2_xport_lane_params *p)
{
	struct rb2_xport_qp_attr attr = {0};
	struct rb2_xport_lane *la;
	uint32_t maxp;

	if (xp == NULL || p == NULL) {
		rte_errno = EINVAL;
		return NULL;
	}
	if (rb2_xport_caps(xp) & RB2_XPORT_CAP_LOADSTORE) {
		RB2_XPORT_LOG(ERR, "lane on '%s': a load/store transport posts nothing to batch; use the queues directly",
			      rb2_xport_name(xp));
		rte_errno = ENOTSUP;
		return NULL;
	}
	maxp = p->max_pending ? p->max_pending : 256;
	la = rte_zmalloc("rb2_lane", sizeof(*la), RTE_CACHE_LINE_SIZE);
	if (la == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	attr.lcore_id = p->lcore_id;
	attr.sq_depth = p->sq_depth ? p->sq_depth : 4 * maxp;
	attr.cq_depth = p->cq_depth;
	la->qp = rb2_xport_qp_create(xp, &attr);
	if (la->qp == NULL) {
		int err = rte_errno;

		rte_free(la);
		rte_errno = err;
		return NULL;
	}
	la->max_pending = maxp;
	la->max_chain = la->qp->max_chain ? la->qp->max_chain : maxp;
	if (p->max_chain != 0)
		la->max_chain = RTE_MIN(la->max_chain, p->max_chain);
	la->no_merge = p->no_merge;
	la->token = rte_rand() | 1;
	la->window = p->max_inflight;
	if (la->window > RTE_MIN(la->qp->sq_depth, la->qp->cq_depth)) {
		RB2_XPORT_LOG(ERR, "lane: an admission window of %u WRs is deeper than its QP's send queue (%u) or completion queue (%u): lower max_inflight, or raise sq_depth/cq_depth",
			      la->window, la->qp->sq_depth, la->qp->cq_depth);
		rb2_xport_lane_destroy(la);
		rte_errno = EINVAL;
		return NULL;
	}
	/* Signaled WRs numbered and not completed: what the send queue
	 * holds, and a chain not yet posted. */
	la->sig_mask = rte_align32pow2(la->qp->sq_depth + maxp) - 1;
	la->pend = rte_zmalloc("rb2_lane_pend", maxp * sizeof(la->pend[0]), 0);
	la->out = rte_zmalloc("rb2_lane_out", maxp * sizeof(la->out[0]), 0);
	la->pend_vq = rte_zmalloc("rb2_lane_pvq", maxp * sizeof(la->pend_vq[0]), 0);
	la->pend_wr_id = rte_zmalloc("rb2_lane_pid", maxp * sizeof(la->pend_wr_id[0]), 0);
	la->drop = rte_zmalloc("rb2_lane_drop", maxp, 0);
	la->stage = rte_zmalloc("rb2_lane_stage", 2 * (size_t)maxp * LANE_STAGE,
				RTE_CACHE_LINE_SIZE);
	la->sig = rte_zmalloc("rb2_lane_sig", (la->sig_mask + 1) * sizeof(la->sig[0]), 0);
	if (la->pend == NULL || la->out == NULL || la->pend_vq == NULL || la->stage == NULL ||
	    la->sig == NULL || la->pend_wr_id == NULL || la->drop == NULL) {
		rb2_xport_lane_destroy(la);
		rte_errno = ENOMEM;
		return NULL;
	}
	return la;
}

void
rb2_xport_lane_destroy(struct rb2_xport_lane *la)
{
	if (la == NULL)
		return;
	if (la->st.queues > 0)
		RB2_XPORT_LOG(ERR, "lane destroyed with %u queues still on it", la->st.queues);
	if (la->peer != NULL)
		la->peer->peer = NULL;
	rb2_xport_qp_destroy(la->qp);
	rte_free(la->pend);
	rte_free(la->out);
	rte_free(la->pend_vq);
	rte_free(la->pend_wr_id);
	rte_free(la->drop);
	rte_free(la->stage);
	rte_free(la->sig);
	rte_free(la);
}

static int lane_reap(struct rb2_xport_lane *la);

/* May @b continue @a as one WRITE? */
static int
mergeable(const struct rb2_xport_wr *a, const struct rb2_xport_wr *b)
{
	return a->opcode == RB2_WR_WRITE && b->opcode == RB2_WR_WRITE &&
	       !(a->flags & (RB2_WR_SIGNALED | RB2_WR_INLINE)) && !(b->flags & RB2_WR_INLINE) &&
	       a->lkey == b->lkey && a->rkey == b->rkey &&
	       (const uint8_t *)a->local + a->len == b->local &&
	       a->remote + a->len == b->remote && (uint64_t)a->len + b->len <= (1u << 30);
}

/* Does @b overwrite all of @a? */
static int
covers(const struct rb2_xport_wr *b, const struct rb2_xport_wr *a)
{
	return a->rkey == b->rkey && b->remote <= a->remote &&
	       a->remote + a->len <= b->remote + b->len;
}

/*
 * Mark in la->drop the WRs a later one makes invisible: an unsignaled
 * inline WRITE (a pointer, a length word) that a later WRITE of the chain
 * overwrites entirely, with only WRITEs between them (a READ or a wake-up
 * between could observe it). Over RC the peer cannot tell: it might as well
 * have looked at the memory only after the later WRITE. The later WRITEs
 * looked at are the LANE_LOOK nearest.
 */
static void
mark_superseded(struct rb2_xport_lane *la)
{
	const struct rb2_xport_wr *later[LANE_LOOK];
	unsigned int nl = 0, next = 0;

	for (uint32_t i = la->npend; i-- > 0;) {
		const struct rb2_xport_wr *w = &la->pend[i];

		la->drop[i] = 0;
		if (w->opcode != RB2_WR_WRITE) {
			nl = next = 0;
			continue;
		}
		if ((w->flags & (RB2_WR_SIGNALED | RB2_WR_INLINE)) == RB2_WR_INLINE) {
			for (unsigned int j = 0; j < nl; j++)
				if (covers(later[j], w)) {
					la->drop[i] = 1;
					break;
				}
			if (la->drop[i])
				continue;
		}
		later[next] = w;                   /* the nearest LANE_LOOK */
		next = (next + 1) % LANE_LOOK;
		nl = RTE_MIN(nl + 1, (unsigned int)LANE_LOOK);
	}
}

/*
 * Move what waits in pend[] into the chain out[], tightened, and number its
 * signaled WRs (a signaled WR's number is its wr_id on the real QP, and
 * finds its owner in sig[]). An out WR keeps, until numbered, the index in
 * pend[] of the WR whose flags it has. Under an admission window every WR
 * is signaled, those no queue asked about for the lane alone: merging is
 * decided first, on the queues' own flags, so the window does not stop it.
 */
static void
build_chain(struct rb2_xport_lane *la)
{
	uint32_t nout = 0;

	if (!la->no_merge)
		mark_superseded(la);
	for (uint32_t i = 0; i < la->npend; i++) {
		const struct rb2_xport_wr *w = &la->pend[i];
		struct rb2_xport_wr *last = nout > 0 ? &la->out[nout - 1] : NULL;

		if (!la->no_merge && la->drop[i]) {
			la->st.superseded++;
		} else if (last != NULL && !la->no_merge && mergeable(last, w)) {
			last->len += w->len;
			last->flags = w->flags;
			last->wr_id = w->wr_id;
			la->st.merged++;
		} else {
			la->out[nout++] = *w;
		}
	}
	for (uint32_t i = 0; i < nout; i++) {
		struct rb2_xport_wr *w = &la->out[i];

		if (w->flags & RB2_WR_SIGNALED) {
			uint32_t k = (uint32_t)w->wr_id;
			struct lane_sig *sg = &la->sig[la->sig_next & la->sig_mask];

			sg->vq = la->pend_vq[k];
			sg->id = la->vqs[sg->vq] != NULL ? la->vqs[sg->vq]->id : UINT32_MAX;
			sg->wr_id = la->pend_wr_id[k];
			w->wr_id = la->sig_next++;
		} else if (la->window != 0) {
			struct lane_sig *sg = &la->sig[la->sig_next & la->sig_mask];

			sg->vq = LANE_NOBODY;
			w->flags |= RB2_WR_SIGNALED;
			w->wr_id = la->sig_next++;
		} else {
			w->wr_id = UINT64_MAX;
		}
	}
	la->nout = nout;
	la->out_pos = 0;
	la->npend = 0;
	la->gen++;
}

/* Post out[] from out_pos, in pieces the QP takes in one post (a doorbell
 * each); what the send queue, or the admission window, cannot take yet
 * stays for the next flush. */
static int
post_chain(struct rb2_xport_lane *la)
{
	uint32_t max = la->max_chain;

	while (la->out_pos < la->nout) {
		uint32_t n = RTE_MIN(la->nout - la->out_pos, max);
		int ret;

		if (la->window != 0) {
			/* The window counts completions: look for them only
			 * when it is short of room, as a sender looks at its
			 * CQ when it must. */
			if (la->inflight + n > la->window && lane_reap(la) < 0)
				return la->err;
			n = RTE_MIN(n, la->window - la->inflight);
			if (n == 0) {
				la->st.deferrals++;
				return -ENOSPC;
			}
		}
		ret = rb2_xport_post(la->qp, la->out + la->out_pos, n);

		/* The send queue frees as its completions are polled, and the
		 * lane's queues may never poll (nothing of theirs signaled). */
		if (ret == -ENOSPC && lane_reap(la) == 0)
			ret = rb2_xport_post(la->qp, la->out + la->out_pos, n);
		if (ret < 0) {
			if (ret != -ENOSPC)
				la->err = ret;
			return ret;
		}
		la->out_pos += n;
		la->st.doorbells++;
		la->st.wrs_out += n;
		if (la->window != 0) {
			la->inflight += n;
			la->st.max_inflight_seen = RTE_MAX(la->st.max_inflight_seen, la->inflight);
		}
	}
	return 0;
}

int
rb2_xport_lane_flush(struct rb2_xport_lane *la)
{
	int ret;

	if (la->err != 0)
		return la->err;
	/* First what an earlier flush could not post: the order is the
	 * chain's. */
	ret = post_chain(la);
	if (ret < 0 || la->npend == 0)
		return ret;
	build_chain(la);
	return post_chain(la);
}

/* ---- the lane's queues ---------------------------------------------------- */

/* Hand the real QP's completions to their queues. */
static int
lane_reap(struct rb2_xport_lane *la)
{
	struct rb2_xport_wc wc[32];
	int n;

	do {
		n = rb2_xport_poll(la->qp, wc, RTE_DIM(wc));
		if (n < 0) {
			la->err = n;
			return n;
		}
		for (int i = 0; i < n; i++) {
			const struct lane_sig *s = &la->sig[wc[i].wr_id & la->sig_mask];
			struct lane_vq *q;

			if (wc[i].wr_id == UINT64_MAX) {
				/* An unsignaled WR completing in error: the
				 * lane has failed. */
				if (wc[i].status != RB2_WC_SUCCESS)
					la->err = -EIO;
				continue;
			}
			if (la->window != 0 && la->inflight > 0)
				la->inflight--;  /* with a window, every WR completes */
			if (s->vq == LANE_NOBODY) {
				if (wc[i].status != RB2_WC_SUCCESS)
					la->err = -EIO;
				continue;
			}
			q = la->vqs[s->vq];
			if (q == NULL || q->id != s->id)
				continue;        /* destroyed since it posted */
			if (q->tail - q->head > q->mask) {
				la->err = -EOVERFLOW; /* a queue that never polls */
				continue;
			}
			wc[i].wr_id = s->wr_id;
			q->cq[q->tail++ & q->mask] = wc[i];
			if (wc[i].status != RB2_WC_SUCCESS && la->err == 0)
				la->err = -EIO;
		}
	} while (n == (int)RTE_DIM(wc));
	return 0;
}

static int
lane_vq_post(struct rb2_xport_qp *qp, const struct rb2_xport_wr *wrs, unsigned int n)
{
	struct lane_vq *q = qp->drv;
	struct rb2_xport_lane *la = q->lane;

	if (unlikely(la->err != 0))
		return la->err;
	if (unlikely(n > la->max_pending))
		return -EINVAL;
	/* Room in this queue's completion ring for what it has not polled
	 * yet. A queue that posts much and polls little (a channel reaps when
	 * it needs to) filled its ring as the lane reaped for it, and the lane
	 * failed with EOVERFLOW (the soak's seed 346433978114). -ENOSPC: the
	 * caller polls, which empties the ring, and retries. */
	if (unlikely(q->tail - q->head > q->mask / 2))
		return -ENOSPC;
	if (la->npend + n > la->max_pending) {
		int ret = rb2_xport_lane_flush(la);

		la->st.forced++;
		if (ret < 0)
			return ret;      /* -ENOSPC: the caller polls and retries */
	}
	for (unsigned int i = 0; i < n; i++) {
		uint32_t k = la->npend++;
		struct rb2_xport_wr *w = &la->pend[k];

		*w = wrs[i];
		if (w->flags & RB2_WR_INLINE) {
			/* Capture it now, as the NIC would at post time. */
			/* Two halves, by generation: the chain built last
			 * may still wait, in part, for room in the QP. */
			uint8_t *st = la->stage +
				((la->gen & 1) * la->max_pending + k) * (size_t)LANE_STAGE;

			if (w->len > LANE_STAGE || w->len > qp->max_inline) {
				la->npend -= i + 1;
				return -EINVAL;
			}
			memcpy(st, w->local, w->len);
			w->local = st;
		}
		la->pend_wr_id[k] = w->wr_id;
		la->pend_vq[k] = q->idx;
		w->wr_id = k;
	}
	q->pend_gen = la->gen;
	la->st.wrs_in += n;
	return 0;
}

static int
lane_vq_poll(struct rb2_xport_qp *qp, struct rb2_xport_wc *wcs, unsigned int n)
{
	struct lane_vq *q = qp->drv;
	struct rb2_xport_lane *la = q->lane;
	unsigned int i = 0;

	/* A queue that keeps polling while WRs of its own wait in the lane
	 * is waiting for them (a full queue, a full ring, a flush): it must
	 * not wait on a flush its lcore would only make after the wait. One
	 * poll is not a wait: a sender looks at its completions at every
	 * pointer advancement, and flushing then would undo the batching. */
	if (((q->pend_gen == la->gen && la->npend > 0) || la->out_pos < la->nout) &&
	    ++q->waiting >= LANE_WAIT_POLLS) {
		la->st.forced++;
		(void)rb2_xport_lane_flush(la);
	}
	if (q->head == q->tail)
		(void)lane_reap(la);
	while (i < n && q->head != q->tail)
		wcs[i++] = q->cq[q->head++ & q->mask];
	if (i > 0 || (q->pend_gen != la->gen && la->out_pos == la->nout))
		q->waiting = 0;
	if (i == 0 && la->err != 0)
		return la->err;
	return (int)i;
}

int
rb2_xport_lane_qp_create(struct rb2_xport_qp *qp, const struct rb2_xport_qp_attr *attr)
{
	struct rb2_xport_lane *la = attr->lane;
	struct lane_vq *q;
	uint16_t idx;

	if (la->qp->xp != qp->xp) {
		RB2_XPORT_LOG(ERR, "a queue and its lane come from different transports");
		return -EINVAL;
	}
	if (attr->recv_depth != 0 || attr->wake) {
		RB2_XPORT_LOG(ERR, "a queue of a lane cannot take receives (WRITE_WITH_IMM natively, or a sleeping receiver's wake-ups): give it a QP of its own");
		return -ENOTSUP;
	}
	for (idx = 0; idx < LANE_MAX_QUEUES && la->vqs[idx] != NULL; idx++)
		;
	if (idx == LANE_MAX_QUEUES) {
		RB2_XPORT_LOG(ERR, "a lane carries %d queues at most", LANE_MAX_QUEUES);
		return -ENOSPC;
	}
	q = rte_zmalloc("rb2_lane_vq", sizeof(*q) + (la->sig_mask + 1) * sizeof(q->cq[0]),
			RTE_CACHE_LINE_SIZE);
	if (q == NULL)
		return -ENOMEM;
	q->lane = la;
	q->idx = idx;
	q->id = la->next_id++;
	q->mask = la->sig_mask;
	q->pend_gen = UINT64_MAX;
	la->vqs[idx] = q;
	la->st.queues++;
	qp->drv = q;
	qp->lane = la;
	qp->max_inline = RTE_MIN(la->qp->max_inline, (uint32_t)LANE_STAGE);
	qp->sq_depth = la->qp->sq_depth;
	qp->cq_depth = la->sig_mask + 1;
	qp->max_chain = la->max_pending;
	return 0;
}

void
rb2_xport_lane_qp_destroy(struct rb2_xport_qp *qp)
{
	struct lane_vq *q = qp->drv;
	struct rb2_xport_lane *la = q->lane;

	/* Its waiting WRs read memory its owner is about to free. */
	int ret = rb2_xport_lane_flush(la);

	for (int i = 0; i < 1000000 && ret == -ENOSPC; i++) {
		(void)lane_reap(la);
		ret = rb2_xport_lane_flush(la);
	}
	if (ret < 0 && la->err == 0)
		RB2_XPORT_LOG(ERR, "lane: a queue destroyed with WRs its QP never took (%s)",
			      rte_strerror(-ret));
	la->vqs[q->idx] = NULL;
	la->st.queues--;
	rte_free(q);
}

int
rb2_xport_lane_qp_connect_local(struct rb2_xport_qp *a, struct rb2_xport_qp *b)
{
	struct rb2_xport_lane *la = a->lane, *lb = b->lane;

	if (la == NULL || lb == NULL || la == lb) {
		RB2_XPORT_LOG(ERR, "a queue of a lane connects to a queue of another lane");
		return -EINVAL;
	}
	if (la->peer_token != 0 || lb->peer_token != 0) {
		RB2_XPORT_LOG(ERR, "a lane connected to another process's lane carries queues to that process only");
		return -EINVAL;
	}
	if (la->peer == NULL && lb->peer == NULL) {
		int ret = rb2_xport_qp_connect_local(la->qp, lb->qp);

		if (ret < 0)
			return ret;
		la->peer = lb;
		lb->peer = la;
	} else if (la->peer != lb) {
		RB2_XPORT_LOG(ERR, "these lanes are connected to other lanes: every queue of a lane goes to the same peer lane");
		return -EINVAL;
	}
	a->post = b->post = lane_vq_post;
	a->poll = b->poll = lane_vq_poll;
	a->connected = b->connected = 1;
	return 0;
}

/*
 * Across processes (and hosts), each queue's blob goes to its peer out of
 * band (the driver's oob_exchange), in a hello that names both lanes: the
 * first queue's exchange connects the lanes' QPs, over the transport's
 * rendezvous at the same address (their private data: the two names,
 * checked), and every later queue's must come from that same peer lane. A
 * queue whose peer is on another lane, or on none, is refused: its WRs
 * would travel a QP that does not reach its peer's memory.
 */
#define LANE_HELLO_MAGIC 0x4c324252u /* "RB2L" */

struct lane_hello {
	uint32_t magic;
	uint32_t len;               /* of blob */
	uint64_t lane;              /* the sender's lane */
	uint64_t peer_lane;         /* the lane it is connected to, 0: none yet */
	uint8_t blob[RB2_XPORT_BLOB_MAX];
};

int
rb2_xport_lane_qp_exchange(struct rb2_xport_qp *qp, const char *peer, enum rb2_xport_role role,
			   const void *blob, size_t len, void *peer_blob, size_t peer_cap,
			   unsigned int timeout_ms)
{
	struct lane_vq *q = qp->drv;
	struct rb2_xport_lane *la = q->lane;
	struct rb2_xport *xp = la->qp->xp;
	struct lane_hello mine = {
		.magic = LANE_HELLO_MAGIC, .len = (uint32_t)len,
		.lane = la->token, .peer_lane = la->peer_token,
	}, theirs;
	const size_t head = offsetof(struct lane_hello, blob);
	int n;

	if (la->peer != NULL) {
		RB2_XPORT_LOG(ERR, "lane: connected to a lane of this process, it cannot reach '%s': give the queue another lane",
			      peer);
		return -EINVAL;
	}
	memcpy(mine.blob, blob, len);
	n = xp->ops->oob_exchange(xp, peer, role, &mine, head + len, &theirs, sizeof(theirs),
				  timeout_ms);
	if (n == -ENOTSUP) {
		RB2_XPORT_LOG(ERR, "lane: transport '%s' cannot exchange out of band, so its lanes connect in one process only: to reach '%s', give the queue a QP of its own",
			      rb2_xport_name(xp), peer);
		return -ENOTSUP;
	}
	if (n < 0)
		return n;
	if ((size_t)n < head || theirs.magic != LANE_HELLO_MAGIC ||
	    theirs.len > RB2_XPORT_BLOB_MAX || (size_t)n != head + theirs.len) {
		RB2_XPORT_LOG(ERR, "lane: the peer at '%s' is not a queue of a lane: put both halves on lanes, or neither",
			      peer);
		return -EPROTO;
	}
	if (la->peer_token == 0) {
		uint64_t names[2] = {la->token, theirs.lane}, back[2] = {0, 0};
		int ret;

		if (theirs.peer_lane != 0) {
			RB2_XPORT_LOG(ERR, "lane: the peer's lane at '%s' is already connected to another lane: every queue between two lanes goes over that pair",
				      peer);
			return -ECONNREFUSED;
		}
		/* The lanes' QPs meet at the same rendezvous. */
		ret = rb2_xport_qp_exchange(la->qp, peer, role, names, sizeof(names), back,
					    sizeof(back), timeout_ms);
		if (ret < 0)
			return ret;
		if (ret != (int)sizeof(back) || back[0] != theirs.lane || back[1] != la->token) {
			RB2_XPORT_LOG(ERR, "lane: the QP that answered at '%s' is not the one of the lane that sent the hello",
				      peer);
			return -EPROTO;
		}
		la->peer_token = theirs.lane;
	} else if (theirs.lane != la->peer_token || theirs.peer_lane != la->token) {
		RB2_XPORT_LOG(ERR, "lane: the peer at '%s' is on %s, not on the lane this one is connected to: put every queue between the two lcores on the one pair of lanes",
			      peer, theirs.peer_lane == 0 ? "a lane not connected yet" : "another lane");
		return -ECONNREFUSED;
	}
	memcpy(peer_blob, theirs.blob, RTE_MIN((size_t)theirs.len, peer_cap));
	qp->post = lane_vq_post;
	qp->poll = lane_vq_poll;
	qp->connected = 1;
	return (int)theirs.len;
}

int
rb2_xport_lane_qp_status(struct rb2_xport_qp *qp)
{
	struct rb2_xport_lane *la = qp->lane;

	return la->err != 0 ? la->err : rb2_xport_qp_status(la->qp);
}

static uint32_t
lane_used(const struct rb2_xport_lane *la)
{
	return la->inflight + la->npend + (la->nout - la->out_pos);
}

uint32_t
rb2_xport_lane_room(struct rb2_xport_lane *la, uint32_t want)
{
	if (la->window == 0)
		return UINT32_MAX;
	if (lane_used(la) + want > la->window) {
		(void)lane_reap(la);
		if (lane_used(la) + want > la->window && lane_used(la) > la->inflight) {
			(void)rb2_xport_lane_flush(la);
			(void)lane_reap(la);
		}
	}
	return lane_used(la) < la->window ? la->window - lane_used(la) : 0;
}

uint32_t
rb2_xport_lane_window(const struct rb2_xport_lane *la)
{
	return la->window;
}

void
rb2_xport_lane_stats_get(const struct rb2_xport_lane *la, struct rb2_xport_lane_stats *st)
{
	*st = la->st;
}
