/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * A host service's relay core (rb2_conn_relay.h): RaaS's model. Each link
 * is one endpoint, to an application of this host (shm) or to a peer
 * service (verbs); a connect names a host and a port; the relay finds the
 * application listening there (or the peer service of that host, which
 * does), gives the connection a relay id on each side (the vQPN each end
 * puts in its frames), and from then on moves frames between the two links,
 * rewriting only the id in the header (rb2_conn_wire.h). Credits are end to
 * end. A frame for a destination whose ring is full waits in that
 * destination's queue (bounded; beyond it, its source waits), so that one
 * application that stops polling holds up only the connections to it.
 * Lent buffers (rb2_conn_ref.h) pass through it as loans.
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

/* The relay and side an id names, or NULL. */
static struct relay *
relay_of(struct rb2_conn_relay *R, uint32_t id, int *side)
{
	uint32_t idx = (id & 0xffff) >> 1;
	struct relay *r;

	if (idx >= R->p.max_relays)
		return NULL;
	r = &R->relays[idx];
	*side = (int)(id & 1);
	return r->used && r->gen == (id >> 16) ? r : NULL;
}

void
__rb2_relay_free(struct rb2_conn_relay *R, struct relay *r)
{
	for (int side = 0; side < 2; side++)
		if (r->l[side] != NULL)
			__atomic_fetch_sub(&r->l[side]->conns, 1, __ATOMIC_RELAXED);
	r->used = 0;
	R->free_idx[R->nfree++] = (uint32_t)(r - R->relays);
}

static struct link *
listener(struct rb2_conn_relay *R, uint16_t port)
{
	for (unsigned int i = 0; i < R->nlinks; i++)
		for (unsigned int j = 0; j < R->links[i]->nlistens; j++)
			if (R->links[i]->listens[j] == port)
				return R->links[i];
	return NULL;
}

static struct link *
peer_of(struct rb2_conn_relay *R, uint32_t host)
{
	for (unsigned int i = 0; i < R->nlinks; i++)
		if (R->links[i]->host == host)
			return R->links[i];
	return NULL;
}

static int
syn_in(struct rb2_conn_relay *R, struct link *from, uint8_t *f, uint32_t len, uint16_t port)
{
	struct rb2_conn_hello h;
	struct link *to;
	struct relay *r;
	uint16_t why = 0;
	uint32_t idx;
	int ret;

	if (len != RB2_CONN_HDR_LEN + sizeof(h))
		return 0;                   /* the application's ep counts it */
	memcpy(&h, f + RB2_CONN_HDR_LEN, sizeof(h));
	/* Here (an application listening), or on to that host's service. */
	if (h.host == 0 || h.host == R->p.host_id) {
		to = listener(R, port);
		why = RB2_CONN_REFUSE_NO_LISTENER;
	} else {
		to = from->host == 0 ? peer_of(R, h.host) : NULL;
		why = RB2_CONN_REFUSE_NO_ROUTE;
	}
	if (to == NULL || R->nfree == 0) {
		ret = __rb2_relay_send_ctrl(R, from, h.src_cd, RB2_CONN_FR_REFUSE,
				to == NULL ? why : RB2_CONN_REFUSE_TOO_MANY);
		__atomic_fetch_add(&R->refused, ret == 0, __ATOMIC_RELAXED);
		return ret;
	}
	idx = R->free_idx[R->nfree - 1];
	r = &R->relays[idx];
	r->gen = (uint16_t)(r->gen % 0x7fff + 1);
	/* The acceptor addresses the connection as side 1's id; the next
	 * hop's host is its own. */
	struct rb2_conn_hello fwd = h;

	fwd.src_cd = relay_id(R, idx, 1);
	fwd.host = 0;
	memcpy(f + RB2_CONN_HDR_LEN, &fwd, sizeof(fwd));
	ret = __rb2_relay_link_put(R, to, f, len);
	memcpy(f + RB2_CONN_HDR_LEN, &h, sizeof(h));   /* as it was, for a retry */
	if (ret == -EAGAIN)
		return ret;
	if (ret < 0) {
		/* The listener's link failed: the next pass takes it away. */
		ret = __rb2_relay_send_ctrl(R, from, h.src_cd, RB2_CONN_FR_REFUSE, RB2_CONN_REFUSE_NO_LISTENER);
		__atomic_fetch_add(&R->refused, ret == 0, __ATOMIC_RELAXED);
		return ret;
	}
	uint32_t theirs = h.src_cd;
	R->nfree--;
	r->used = 1;
	r->l[0] = from;
	r->l[1] = to;
	__atomic_fetch_add(&from->conns, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&to->conns, 1, __ATOMIC_RELAXED);
	r->cd[0] = theirs;
	r->cd[1] = UINT32_MAX;
	r->fin[0] = r->fin[1] = 0;
	return 0;
}

/* Credits name the relay id; each entry goes to its relay's other side,
 * as a credit frame of its own (credits are cumulative: a retry after a
 * partial forward repeats nothing harmful). */
static int
credit_in(struct rb2_conn_relay *R, struct link *from, uint8_t *f, uint32_t len, uint16_t n)
{
	struct rb2_conn_credit cr;

	if (len != RB2_CONN_HDR_LEN + (uint32_t)n * sizeof(cr))
		return 0;
	for (uint16_t i = 0; i < n; i++) {
		uint8_t out[RB2_CONN_HDR_LEN + sizeof(cr)];
		uint64_t hdr = (uint64_t)RB2_CONN_CID_NONE | (uint64_t)RB2_CONN_FR_CREDIT << 32 |
			(uint64_t)1 << 48;
		struct relay *r;
		int side, ret;

		memcpy(&cr, f + RB2_CONN_HDR_LEN + i * sizeof(cr), sizeof(cr));
		r = relay_of(R, cr.cid, &side);
		if (r == NULL || r->l[side] != from || r->cd[!side] == UINT32_MAX)
			continue;           /* after both closed: nothing to deliver */
		cr.cid = r->cd[!side];
		memcpy(out, &hdr, sizeof(hdr));
		memcpy(out + RB2_CONN_HDR_LEN, &cr, sizeof(cr));
		ret = __rb2_relay_link_put(R, r->l[!side], out, sizeof(out));
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* A frame from link @p arg: relayed, answered, or counted and dropped.
 * @return 0, or -EAGAIN (not now: offered again). */
static int
frame_from(struct rb2_conn_relay *R, void *arg, uint8_t *f, uint32_t len)
{
	struct link *from = arg;
	struct rb2_conn_hello h;
	uint32_t cid, orig;
	struct relay *r;
	uint16_t aux;
	uint8_t type;
	int side, ret;

	struct rb2_conn_frame fr;

	/* Marked frames come with their header restored (rb2_conn_in.c's
	 * relay_headed()): every frame here has one. */
	rb2_conn_wire_parse(f, len, 0, RB2_CONN_CID_NONE, &fr);
	if (fr.type == 0)
		return 0;
	cid = fr.cid;
	type = fr.type;
	aux = fr.aux;
	switch (type) {
	case RB2_CONN_FR_LISTEN:
		if (from->nlistens < MAX_LISTENS && listener(R, aux) == NULL)
			from->listens[from->nlistens++] = aux;
		else
			RELAY_ERR(R, "%s: cannot listen on %u (taken, or %d ports)\n",
				from->name, aux, MAX_LISTENS);
		return 0;
	case RB2_CONN_FR_UNLISTEN:
		for (unsigned int j = 0; j < from->nlistens; j++)
			if (from->listens[j] == aux)
				from->listens[j] = from->listens[--from->nlistens];
		return 0;
	case RB2_CONN_FR_SYN:
		return syn_in(R, from, f, len, aux);
	case RB2_CONN_FR_CREDIT:
		return credit_in(R, from, f, len, aux);
	case RB2_CONN_FR_REFDONE:
		return __rb2_relay_refdone_in(R, from, f, len, aux);
	case RB2_CONN_FR_READREQ:
		return __rb2_relay_readreq_in(R, from, f, len);
	case RB2_CONN_FR_READDONE:
		__rb2_relay_bad_lend(R, from, "a READDONE frame, which only a service sends");
		return 0;
	default:
		break;
	}
	r = relay_of(R, cid, &side);
	if (r == NULL || r->l[side] != from) {
		__atomic_fetch_add(&R->unknown, 1, __ATOMIC_RELAXED);
		/* A lent buffer for no connection goes back to its lender. */
		if (type == RB2_CONN_FR_REF && len >= RB2_CONN_HDR_LEN + RB2_BULK_REF_SIZE(1)) {
			uint32_t tag;

			memcpy(&tag, f + RB2_CONN_HDR_LEN, sizeof(tag));
			__rb2_relay_owe(from, &from->refdone, tag, -ECONNABORTED, "REFDONE");
		}
		return 0;
	}
	if (type == RB2_CONN_FR_REF)
		return __rb2_relay_lend_in(R, from, r, side, f, len);
	if (r->l[!side] == NULL) {
		/* The connector died before this accept: reset it here. */
		if (type == RB2_CONN_FR_SYNACK && len == RB2_CONN_HDR_LEN + sizeof(h)) {
			memcpy(&h, f + RB2_CONN_HDR_LEN, sizeof(h));
			ret = __rb2_relay_send_ctrl(R, from, h.src_cd, RB2_CONN_FR_RST, RB2_CONN_RST_PEER_GONE);
			if (ret == -EAGAIN)
				return ret;
		}
		__rb2_relay_free(R, r);
		return 0;
	}
	if (type == RB2_CONN_FR_SYNACK) {
		if (side != 1 || len != RB2_CONN_HDR_LEN + sizeof(h))
			return 0;
		memcpy(&h, f + RB2_CONN_HDR_LEN, sizeof(h));
		r->cd[1] = h.src_cd;
		h.src_cd = relay_id(R, (uint32_t)(r - R->relays), 0);
		memcpy(f + RB2_CONN_HDR_LEN, &h, sizeof(h));
	}
	/* The frame as it is, to the other side's descriptor. */
	orig = cid;
	rb2_conn_wire_set_cid(f, r->cd[!side]);
	ret = __rb2_relay_link_put(R, r->l[!side], f, len);
	rb2_conn_wire_set_cid(f, orig);
	if (ret == -EAGAIN) {
		if (type == RB2_CONN_FR_SYNACK)
			r->cd[1] = UINT32_MAX;
		return ret;
	}
	if (ret < 0) {
		/* Its link failed: the next pass resets this relay. */
		__atomic_fetch_add(&R->undeliverable, 1, __ATOMIC_RELAXED);
		return 0;
	}
	__atomic_fetch_add(&R->relayed, 1, __ATOMIC_RELAXED);
	if (type == RB2_CONN_FR_FIN)
		r->fin[side] = 1;
	if (type == RB2_CONN_FR_REFUSE || type == RB2_CONN_FR_RST || (r->fin[0] && r->fin[1]))
		__rb2_relay_free(R, r);
	return 0;
}

/* Every frame from a link (rb2_conn_relay_fn), counted once taken. */
static int
relay_frame(void *arg, struct rb2_conn_ep *ep __rte_unused, uint8_t *f, uint32_t len)
{
	struct link *from = arg;
	int ret = frame_from(from->R, arg, f, len);

	if (ret != -EAGAIN)
		count(&from->frames_in, &from->bytes_in, len);
	return ret;
}

/* An application's or a peer service's link ended: @err is the endpoint's
 * error, -ESHUTDOWN when the other side closed it (an application exited,
 * a service stopped). Reset the other end of each of its connections.
 * @return 0, or -EAGAIN (some other end's ring is full: again on the next
 * pass). */
static int
link_gone(struct rb2_conn_relay *R, struct link *l, int err)
{
	uint16_t why = err == -ESHUTDOWN ? RB2_CONN_RST_PEER_LEFT : RB2_CONN_RST_PEER_GONE;
	unsigned int n = 0;

	for (uint32_t i = 0; i < R->p.max_relays; i++) {
		struct relay *r = &R->relays[i];
		int side, other;

		if (!r->used || (r->l[0] != l && r->l[1] != l))
			continue;
		side = r->l[0] == l ? 0 : 1;
		other = !side;
		if (r->l[other] != NULL && r->l[other] != l && r->cd[other] == UINT32_MAX) {
			/* Its accept is still to come: answered with a reset. */
			r->l[side] = NULL;
			n++;
			continue;
		}
		if (r->l[other] != NULL && r->l[other] != l &&
		    __rb2_relay_send_ctrl(R, r->l[other], r->cd[other], RB2_CONN_FR_RST, why) == -EAGAIN)
			return -EAGAIN;
		__rb2_relay_free(R, r);
		n++;
		__atomic_fetch_add(&R->resets, 1, __ATOMIC_RELAXED);
	}
	if (l->host != 0)
		RELAY_SAY(R, "peer service %s %s: %u connection(s) reset at this end\n",
		       l->name, err == -ESHUTDOWN ? "stopped" : "failed (its link is down)", n);
	else
		RELAY_SAY(R, "application %s (pid %u) %s: %u connection(s) reset at the "
		       "other end\n", l->name, l->pid,
		       err == -ESHUTDOWN ? "left" : "is gone (it exited without closing)", n);
	fflush(R->p.out);
	return 0;
}

void
rb2_conn_relay_params_init(struct rb2_conn_relay_params *p)
{
	memset(p, 0, sizeof(*p));
	p->name = "rb2-relay";
	p->out = stdout;
	p->err = stderr;
	p->max_relays = 16384;
	p->max_loans = 4096;
	p->queue_bytes = 4096 * 1024;
}

struct rb2_conn_relay *
rb2_conn_relay_create(const struct rb2_conn_relay_params *p)
{
	struct rb2_conn_relay *R;

	if (p == NULL || p->max_relays == 0 || p->max_relays > (1u << 15) ||
	    p->max_loans == 0 || p->max_loans > (1u << 16) ||
	    (p->queue_bytes != 0 && p->queue_bytes < 256 * 1024)) {
		rte_errno = EINVAL;
		return NULL;
	}
	R = calloc(1, sizeof(*R));
	if (R == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	R->p = *p;
	if (R->p.out == NULL)
		R->p.out = stdout;
	if (R->p.err == NULL)
		R->p.err = stderr;
	if (R->p.name == NULL)
		R->p.name = "rb2-relay";
	pthread_mutex_init(&R->lock, NULL);
	R->relays = calloc(R->p.max_relays, sizeof(*R->relays));
	R->free_idx = calloc(R->p.max_relays, sizeof(*R->free_idx));
	R->loans = calloc(R->p.max_loans, sizeof(*R->loans));
	R->loan_free = calloc(R->p.max_loans, sizeof(*R->loan_free));
	R->reading = calloc(R->p.max_loans, sizeof(*R->reading));
	if (R->relays == NULL || R->free_idx == NULL || R->loans == NULL ||
	    R->loan_free == NULL || R->reading == NULL) {
		rb2_conn_relay_destroy(R);
		rte_errno = ENOMEM;
		return NULL;
	}
	for (uint32_t i = 0; i < R->p.max_relays; i++)
		R->free_idx[i] = R->p.max_relays - 1 - i;
	R->nfree = R->p.max_relays;
	for (uint32_t i = 0; i < R->p.max_loans; i++)
		R->loan_free[i] = R->p.max_loans - 1 - i;
	R->nloan_free = R->p.max_loans;
	return R;
}

int
rb2_conn_relay_add(struct rb2_conn_relay *R, struct rb2_conn_ep *ep, const char *name,
		   uint32_t pid, uint32_t host)
{
	struct link *l;

	if (R->nlinks == RB2_CONN_RELAY_MAX_LINKS)
		return -ENOSPC;
	l = calloc(1, sizeof(*l));
	if (l == NULL)
		return -ENOMEM;
	l->R = R;
	l->ep = ep;
	l->pid = pid;
	l->host = host;
	snprintf(l->name, sizeof(l->name), "%s", name);
	rb2_conn_ep_set_relay(ep, relay_frame, l);
	pthread_mutex_lock(&R->lock);
	R->links[R->nlinks++] = l;
	pthread_mutex_unlock(&R->lock);
	return 0;
}

void
rb2_conn_relay_poll(struct rb2_conn_relay *R)
{
	/* What waits for a destination goes before anything new. */
	for (unsigned int i = 0; i < R->nlinks; i++)
		__rb2_relay_link_drain(R, R->links[i]);
	/* Each link's frames, relayed as they come. */
	for (unsigned int i = 0; i < R->nlinks; i++) {
		struct link *l = R->links[i];
		int err = rb2_conn_ep_poll(l->ep);

		if (err >= 0 || link_gone(R, l, err) < 0)
			continue;
		__rb2_relay_link_settle(R, l);
		rb2_conn_ep_destroy(l->ep);
		pthread_mutex_lock(&R->lock);
		R->links[i--] = R->links[--R->nlinks];
		pthread_mutex_unlock(&R->lock);
		__rb2_relay_link_free(R, l);
	}
	/* Our READs for applications; then the answers about lent buffers,
	 * and what was relayed onto links polled before it, out now. */
	if (R->nreading > 0)
		__rb2_relay_reads_poll(R);
	for (unsigned int i = 0; i < R->nlinks; i++) {
		if (R->links[i]->refdone.n + R->links[i]->readdone.n > 0)
			__rb2_relay_owed_flush(R, R->links[i]);
		rb2_conn_flush(R->links[i]->ep);
	}
}

void
rb2_conn_relay_destroy(struct rb2_conn_relay *R)
{
	if (R == NULL)
		return;
	if (R->relays != NULL) {
		RELAY_SAY(R, "stopping: %u link(s) (applications and peers), %" PRIu64
			  " frames relayed, %" PRIu64 " of them queued for a full destination, "
			  "a source held %" PRIu64 " time(s)\n", R->nlinks, R->relayed,
			  R->queued_all, R->held);
		RELAY_SAY(R, "lent buffers: %" PRIu64 " lent (%" PRIu64 " bytes); %" PRIu64
			  " copied here, lender to reader; %" PRIu64 " READ from peers (%" PRIu64
			  " bytes); %" PRIu64 " given back unread or failed; %" PRIu64
			  " bad frame(s)\n", R->lent, R->lent_bytes, R->copied_here, R->reads,
			  R->read_bytes, R->loans_failed, R->bad_lends);
	}
	for (unsigned int i = 0; i < R->nlinks; i++) {
		struct rb2_mr_cache *c[2] = { R->links[i]->tx_cache, R->links[i]->rx_cache };

		for (int k = 0; k < 2; k++) {
			struct rb2_mr_cache_stats st;

			if (c[k] == NULL)
				continue;
			rb2_mr_cache_stats_get(c[k], &st);
			RELAY_SAY(R, "registrations %s: %" PRIu64 " gets, %" PRIu64 " hits, %"
				  PRIu64 " misses, %" PRIu64 " registrations, %" PRIu64
				  " evictions\n", rb2_mr_cache_name(c[k]), st.gets, st.hits,
				  st.misses, st.registrations, st.evictions);
		}
	}
	fflush(R->p.out);
	for (unsigned int i = 0; i < R->nlinks; i++)
		__rb2_relay_link_settle(R, R->links[i]);
	for (unsigned int i = 0; i < R->nlinks; i++) {
		rb2_conn_ep_destroy(R->links[i]->ep);
		__rb2_relay_link_free(R, R->links[i]);
	}
	free(R->relays);
	free(R->free_idx);
	free(R->loans);
	free(R->loan_free);
	free(R->reading);
	pthread_mutex_destroy(&R->lock);
	free(R);
}

void
rb2_conn_relay_stats_get(const struct rb2_conn_relay *R, struct rb2_conn_relay_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->links = TEL_LOAD(R->nlinks);
	st->relays_in_use = R->p.max_relays - TEL_LOAD(R->nfree);
	st->max_relays = R->p.max_relays;
	st->frames_relayed = TEL_LOAD(R->relayed);
	st->unknown_frames = TEL_LOAD(R->unknown);
	st->refused = TEL_LOAD(R->refused);
	st->resets = TEL_LOAD(R->resets);
	st->undeliverable = TEL_LOAD(R->undeliverable);
	st->queued = TEL_LOAD(R->queued_all);
	st->sources_held = TEL_LOAD(R->held);
	st->loans_in_use = R->p.max_loans - TEL_LOAD(R->nloan_free);
	st->max_loans = R->p.max_loans;
	st->lent = TEL_LOAD(R->lent);
	st->lent_bytes = TEL_LOAD(R->lent_bytes);
	st->copied_here = TEL_LOAD(R->copied_here);
	st->copied_here_bytes = TEL_LOAD(R->copied_bytes);
	st->reads = TEL_LOAD(R->reads);
	st->read_bytes = TEL_LOAD(R->read_bytes);
	st->loans_failed = TEL_LOAD(R->loans_failed);
	st->bad_lend_frames = TEL_LOAD(R->bad_lends);
}

unsigned int
rb2_conn_relay_links_get(struct rb2_conn_relay *R, struct rb2_conn_relay_link_stats *ls,
			 unsigned int n)
{
	unsigned int k = 0;

	pthread_mutex_lock(&R->lock);
	for (; k < R->nlinks && k < n; k++) {
		const struct link *l = R->links[k];

		snprintf(ls[k].name, sizeof(ls[k].name), "%s", l->name);
		ls[k].pid = l->pid;
		ls[k].host = l->host;
		ls[k].conns = TEL_LOAD(l->conns);
		ls[k].queued_frames = TEL_LOAD(l->q.frames);
		ls[k].queue_peak_bytes = TEL_LOAD(l->q.peak_bytes);
		ls[k].frames_in = TEL_LOAD(l->frames_in);
		ls[k].bytes_in = TEL_LOAD(l->bytes_in);
		ls[k].frames_out = TEL_LOAD(l->frames_out);
		ls[k].bytes_out = TEL_LOAD(l->bytes_out);
	}
	pthread_mutex_unlock(&R->lock);
	return k;
}
