/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* RB² channel: creation, connection, and the out-of-line halves of the
 * sender's and receiver's algorithms (pointer advancement, slot transmission,
 * lazy and idle push). The per-message fast path is inline in rb2_chan.h. */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <rte_string_fns.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_malloc.h>
#include <rte_spinlock.h>

#include "rb2_chan.h"
#include "rb2_chan_private.h"

RTE_LOG_REGISTER(rb2_chan_logtype, rb2.chan, INFO);

/* Every half of this process, for telemetry and name checks. */
struct rb2_chan_list rb2_chan_list = {
	.lock = RTE_SPINLOCK_INITIALIZER,
	.tx = TAILQ_HEAD_INITIALIZER(rb2_chan_list.tx),
	.rx = TAILQ_HEAD_INITIALIZER(rb2_chan_list.rx),
};

#define WRID_TAIL 1
#define WRID_HEAD 2
#define WRID_PULL 3
#define RB2_POST_SPINS 10000000u /* reaps before a full queue is an error */
#define STATUS_CHECK_US 1000     /* idle halves ask after their peer this often */
#define RB2_GONE_GRACE_US 2000   /* a dead sender's last WRITEs may still land */

void
rb2_chan_params_init(struct rb2_chan_params *p)
{
	memset(p, 0, sizeof(*p));
	p->slots = 1024;
	p->slot_size = 64;
	p->alpha = 32;
	p->beta = 16;
	p->gamma = 32;
	p->head_sync = RB2_HEAD_LAZY_PUSH;
	p->tail_sync = RB2_TAIL_WRITE_TWICE;
	p->socket_id = SOCKET_ID_ANY;
	p->lcore_id = LCORE_ID_ANY;
}

int
rb2_chan_params_preset(struct rb2_chan_params *p, const char *name)
{
	uint32_t unbatched = strcmp(name, "l5") == 0 || strcmp(name, "farm") == 0;

	if (strcmp(name, "socksdirect") == 0) {
		/* WRITE_WITH_IMM + CQ polling, at most 10 messages per batch. */
		p->head_sync = RB2_HEAD_LAZY_PUSH;
		p->tail_sync = RB2_TAIL_WRITE_IMM;
		p->alpha = p->beta = p->gamma = RTE_MIN(10u, p->slots - 1);
		return 0;
	}
	if (!unbatched && strcmp(name, "rb2") != 0)
		return -ENOENT;
	p->head_sync = RB2_HEAD_LAZY_PUSH;
	p->tail_sync = strcmp(name, "farm") == 0 ? RB2_TAIL_POLL_MSG : RB2_TAIL_WRITE_TWICE;
	p->alpha = unbatched ? 1 : RTE_MIN(32u, p->slots - 1);
	p->beta = unbatched ? 1 : RTE_MIN(16u, p->alpha);
	p->gamma = unbatched ? 1 : RTE_MIN(32u, p->slots - 1);
	return 0;
}

uint32_t
rb2_chan_max_msg(const struct rb2_chan_params *p)
{
	uint32_t trailer = p->tail_sync == RB2_TAIL_POLL_MSG ? RB2_MARKER_SIZE : 0;

	if (p->msg_size != 0)
		return p->msg_size;
	return (uint32_t)((uint64_t)(p->slots / 2) * p->slot_size) - trailer;
}

#define WHY(...) do { if (why) snprintf(why, len, __VA_ARGS__); } while (0)

int
rb2_chan_params_check(const struct rb2_chan_params *p, char *why, size_t len)
{
	if (p == NULL) {
		WHY("no parameters");
		return -EINVAL;
	}
	if (p->slots < 2 || p->slots > (1u << 24) || !rte_is_power_of_2(p->slots)) {
		WHY("invalid slots=%u: need a power of two in [2, 2^24]", p->slots);
		return -EINVAL;
	}
	if (p->flags & ~(RB2_CHAN_F_NO_ELASTIC | RB2_CHAN_F_UNALIGNED)) {
		WHY("invalid flags=0x%x: only RB2_CHAN_F_NO_ELASTIC and RB2_CHAN_F_UNALIGNED exist",
		    p->flags);
		return -EINVAL;
	}
	if (p->slot_size == 0 || (p->flags & RB2_CHAN_F_UNALIGNED ?
				  p->slot_size % 8 : p->slot_size % RTE_CACHE_LINE_SIZE) != 0) {
		WHY("invalid slot_size=%u: need a non-zero multiple of %d (%s)", p->slot_size,
		    p->flags & RB2_CHAN_F_UNALIGNED ? 8 : RTE_CACHE_LINE_SIZE,
		    p->flags & RB2_CHAN_F_UNALIGNED ? "unaligned ablation: 8-byte words" :
		    "cache-line slots");
		return -EINVAL;
	}
	if ((uint64_t)(p->slots / 2) * p->slot_size >= RB2_LEN_SKIP) {
		WHY("invalid slot_size=%u with slots=%u: the largest message (slots/2 * slot_size) must stay below 4 GiB",
		    p->slot_size, p->slots);
		return -EINVAL;
	}
	if (p->alpha < 1 || p->alpha >= p->slots) {
		WHY("invalid alpha=%u: need 1 <= beta <= alpha < slots (slots=%u)",
		    p->alpha, p->slots);
		return -EINVAL;
	}
	if (p->beta < 1 || p->beta > p->alpha) {
		WHY("invalid beta=%u: need 1 <= beta <= alpha (alpha=%u)",
		    p->beta, p->alpha);
		return -EINVAL;
	}
	if (p->gamma < 1 || p->gamma >= p->slots) {
		WHY("invalid gamma=%u: need 1 <= gamma < slots (slots=%u)",
		    p->gamma, p->slots);
		return -EINVAL;
	}
	if (p->msg_size > p->slot_size) {
		WHY("invalid msg_size=%u: a fixed-size channel holds one message per slot (msg_size <= slot_size=%u; 0 for variable-length messages)",
		    p->msg_size, p->slot_size);
		return -EINVAL;
	}
	if (p->head_sync != RB2_HEAD_LAZY_PUSH && p->head_sync != RB2_HEAD_LAZY_PULL) {
		WHY("head_sync=%d: expected lazy push (0) or lazy pull (1)", (int)p->head_sync);
		return -EINVAL;
	}
	if (p->tail_sync != RB2_TAIL_WRITE_TWICE && p->tail_sync != RB2_TAIL_POLL_MSG &&
	    p->tail_sync != RB2_TAIL_WRITE_IMM) {
		WHY("tail_sync=%d: expected write-twice (0), WRITE_WITH_IMM (1) or poll message (2)",
		    (int)p->tail_sync);
		return -EINVAL;
	}
	if (p->tail_sync == RB2_TAIL_POLL_MSG && p->msg_size > p->slot_size - RB2_MARKER_SIZE) {
		WHY("invalid msg_size=%u: with poll-message sync a slot also holds the %d-byte "
		    "marker (msg_size <= slot_size - %d = %u)", p->msg_size, RB2_MARKER_SIZE,
		    RB2_MARKER_SIZE, p->slot_size - RB2_MARKER_SIZE);
		return -EINVAL;
	}
	if (p->lcore_id != LCORE_ID_ANY && p->lcore_id >= RTE_MAX_LCORE) {
		WHY("invalid lcore_id=%u", p->lcore_id);
		return -EINVAL;
	}
	return 0;
}

size_t
rb2_region_slots_off(uint32_t slots, uint32_t flags)
{
	return RTE_ALIGN_CEIL(RB2_REGION_LENS_OFF + (size_t)slots * sizeof(uint32_t),
			      RTE_CACHE_LINE_SIZE) +
		(flags & RB2_CHAN_F_UNALIGNED ? RB2_UNALIGNED_OFF : 0);
}

/* The completion ring of a region (WRITE_WITH_IMM sync): after the slots,
 * on a cache line of its own. */
static size_t
region_cq_off(uint32_t slots, uint32_t slot_size, uint32_t flags)
{
	return RTE_ALIGN_CEIL(rb2_region_slots_off(slots, flags) + (size_t)slots * slot_size,
			      RTE_CACHE_LINE_SIZE);
}

size_t
rb2_region_size(uint32_t slots, uint32_t slot_size, uint32_t flags, int with_ring,
		int with_cq)
{
	if (!with_ring)
		return rb2_region_slots_off(slots, 0);
	return region_cq_off(slots, slot_size, flags) +
		(with_cq ? RB2_CQ_ENTRIES * sizeof(struct rb2_cqe) : 0);
}

/* Common part of creating a half: validate, name, memory, queue. */
static int
half_init(const char *name, struct rb2_xport *xp,
	  const struct rb2_chan_params *in, struct rb2_chan_params *p,
	  const char *side, char zone_tag, int with_ring,
	  struct rb2_xport_mr *mr, struct rb2_xport_qp **qp)
{
	char why[160], zname[RTE_MEMZONE_NAMESIZE];
	struct rb2_xport_qp_attr attr;
	unsigned int lcore;
	int ret, socket;

	if (name == NULL || xp == NULL || in == NULL)
		return -EINVAL;
	if (strlen(name) == 0 || strlen(name) >= RB2_CHAN_NAMESIZE) {
		RB2_CHAN_LOG(ERR, "channel name '%s' must have 1 to %d characters",
			     name, RB2_CHAN_NAMESIZE - 1);
		return -ENAMETOOLONG;
	}
	ret = rb2_chan_params_check(in, why, sizeof(why));
	if (ret < 0) {
		RB2_CHAN_LOG(ERR, "channel '%s': %s", name, why);
		return ret;
	}
	*p = *in;
	lcore = p->lcore_id == LCORE_ID_ANY ? rte_lcore_id() : p->lcore_id;
	socket = p->socket_id == SOCKET_ID_ANY ? rb2_xport_socket(xp) : p->socket_id;
	if (lcore != LCORE_ID_ANY && socket != SOCKET_ID_ANY &&
	    (int)rte_lcore_to_socket_id(lcore) != socket)
		RB2_CHAN_LOG(WARNING, "channel '%s' %s: lcore %u is on socket %u but the ring memory is on socket %d (the transport's); every access crosses the interconnect; pin the %s to an lcore of socket %d",
			     name, side, lcore, rte_lcore_to_socket_id(lcore),
			     socket, side, socket);

	snprintf(zname, sizeof(zname), "rb2%c.%s", zone_tag, name);
	ret = rb2_xport_mr_alloc(xp, zname,
				 rb2_region_size(p->slots, p->slot_size, p->flags, with_ring,
						 p->tail_sync == RB2_TAIL_WRITE_IMM),
				 socket, mr);
	if (ret < 0) {
		if (ret == -EEXIST)
			RB2_CHAN_LOG(ERR, "channel '%s' already has a %s in this process group", name, side);
		return ret;
	}
	memset(&attr, 0, sizeof(attr));
	attr.lcore_id = lcore;
	/* A hint: eight pointer-advancement periods of chains (alpha/beta + 1
	 * transmissions of at most 2 ranges x (lens + slots), and a tail).
	 * A fuller queue is reaped (see tx_post()); drivers clamp to their
	 * device's limits. */
	attr.sq_depth = RTE_MAX(64u, 8 * (4 * (p->alpha / p->beta + 1) + 1));
	attr.cq_depth = 64;
	if (zone_tag == 'r' && p->tail_sync == RB2_TAIL_WRITE_IMM &&
	    (rb2_xport_caps(xp) & RB2_XPORT_CAP_IMM))
		attr.recv_depth = RB2_CQ_ENTRIES; /* one per credit */
	*qp = rb2_xport_qp_create(xp, &attr);
	if (*qp == NULL) {
		ret = -rte_errno;
		RB2_CHAN_LOG(ERR, "channel '%s' %s: cannot create a %s queue: %s",
			     name, side, rb2_xport_name(xp), rte_strerror(rte_errno));
		rb2_xport_mr_free(xp, mr);
		return ret;
	}
	return 0;
}

static void
fill_desc(struct rb2_chan_desc *d, const struct rb2_chan_params *p, int role,
	  const struct rb2_xport_mr *mr)
{
	memset(d, 0, sizeof(*d));
	d->magic = RB2_DESC_MAGIC;
	d->version = RB2_DESC_VERSION;
	d->role = (uint8_t)role;
	d->policy = (uint8_t)(p->head_sync | (p->tail_sync << 4));
	d->slots = p->slots;
	d->slot_size = p->slot_size;
	d->alpha = p->alpha;
	d->beta = p->beta;
	d->gamma = p->gamma;
	d->rkey = mr->rkey;
	d->addr = (uint64_t)(uintptr_t)mr->addr;
	d->len = mr->len;
	d->msg_size = p->msg_size;
	d->flags = p->flags & RB2_CHAN_F_WIRE;
}

struct rb2_tx *
rb2_tx_create(const char *name, struct rb2_xport *xp,
	      const struct rb2_chan_params *in)
{
	struct rb2_chan_params p;
	struct rb2_xport_mr mr;
	struct rb2_xport_qp *qp;
	struct rb2_tx *tx;
	int loadstore = xp != NULL &&
		(rb2_xport_caps(xp) & RB2_XPORT_CAP_LOADSTORE) != 0;
	int ret;

	ret = half_init(name, xp, in, &p, "sender", 's', !loadstore, &mr, &qp);
	if (ret < 0) {
		rte_errno = -ret;
		return NULL;
	}
	tx = rte_zmalloc_socket("rb2_tx", sizeof(*tx), RTE_CACHE_LINE_SIZE,
				mr.socket_id);
	if (tx == NULL) {
		rb2_xport_qp_destroy(qp);
		rb2_xport_mr_free(xp, &mr);
		rte_errno = ENOMEM;
		return NULL;
	}
	tx->p = p;
	tx->xp = xp;
	tx->qp = qp;
	tx->mr = mr;
	tx->loadstore = (uint32_t)loadstore;
	tx->pull = p.head_sync == RB2_HEAD_LAZY_PULL;
	tx->trailer = p.tail_sync == RB2_TAIL_POLL_MSG ? RB2_MARKER_SIZE : 0;
	if (p.tail_sync == RB2_TAIL_WRITE_IMM) {
		/* WRs: entries are built in our mirror ring; load/store maps
		 * the receiver's at connection. */
		tx->cq = loadstore ? NULL :
			RTE_PTR_ADD(mr.addr, region_cq_off(p.slots, p.slot_size, p.flags));
		tx->cq_credit = (_Atomic uint64_t *)RTE_PTR_ADD(mr.addr, RB2_REGION_PTR_OFF + 8);
		atomic_store_explicit(tx->cq_credit, 0, memory_order_relaxed);
		tx->imm_native = !loadstore && (rb2_xport_caps(xp) & RB2_XPORT_CAP_IMM);
	}
	tx->mask = p.slots - 1;
	tx->slot_size = p.slot_size;
	tx->max_len = rb2_chan_max_msg(&p);
	tx->alpha = p.alpha;
	tx->beta = p.beta;
	tx->msg_size = p.msg_size;
	tx->limit = 0; /* nothing may be reserved until connected */
	tx->err = -ENOTCONN;
	tx->local_head = RTE_PTR_ADD(mr.addr, RB2_REGION_PTR_OFF);
	tx->tail_shadow = RTE_PTR_ADD(mr.addr, RB2_REGION_SHADOW_OFF);
	/* lens[] always goes through the local mirror and slot transmission,
	 * even in load/store mode: stored one entry per message into the
	 * receiver's ring, its lines would bounce between the cores (the
	 * receiver's prefetcher pulls the line the sender is filling), which
	 * measured 4x slower at 64 B. */
	tx->lens = RTE_PTR_ADD(mr.addr, RB2_REGION_LENS_OFF);
	/* Fixed size: the mirror holds msg_size everywhere, so commits never
	 * store into it, and transmission leaves it out. */
	for (uint32_t i = 0; p.msg_size != 0 && i < p.slots; i++)
		tx->lens[i] = p.msg_size;
	if (!loadstore)
		tx->slots = RTE_PTR_ADD(mr.addr, rb2_region_slots_off(p.slots, p.flags));
	strlcpy(tx->name, name, sizeof(tx->name));
	rte_spinlock_lock(&rb2_chan_list.lock);
	TAILQ_INSERT_TAIL(&rb2_chan_list.tx, tx, next);
	rte_spinlock_unlock(&rb2_chan_list.lock);
	return tx;
}

struct rb2_rx *
rb2_rx_create(const char *name, struct rb2_xport *xp,
	      const struct rb2_chan_params *in)
{
	struct rb2_chan_params p;
	struct rb2_xport_mr mr;
	struct rb2_xport_qp *qp;
	struct rb2_rx *rx;
	int ret;

	ret = half_init(name, xp, in, &p, "receiver", 'r', 1, &mr, &qp);
	if (ret < 0) {
		rte_errno = -ret;
		return NULL;
	}
	rx = rte_zmalloc_socket("rb2_rx", sizeof(*rx), RTE_CACHE_LINE_SIZE,
				mr.socket_id);
	if (rx == NULL) {
		rb2_xport_qp_destroy(qp);
		rb2_xport_mr_free(xp, &mr);
		rte_errno = ENOMEM;
		return NULL;
	}
	rx->p = p;
	rx->xp = xp;
	rx->qp = qp;
	rx->mr = mr;
	rx->mask = p.slots - 1;
	rx->slot_size = p.slot_size;
	rx->gamma = p.gamma;
	rx->max_len = rb2_chan_max_msg(&p);
	rx->msg_size = p.msg_size;
	rx->err = -ENOTCONN;
	rx->local_tail = RTE_PTR_ADD(mr.addr, RB2_REGION_PTR_OFF);
	rx->head_shadow = RTE_PTR_ADD(mr.addr, RB2_REGION_SHADOW_OFF);
	rx->pull = p.head_sync == RB2_HEAD_LAZY_PULL;
	rx->poll_msg = p.tail_sync == RB2_TAIL_POLL_MSG;
	if (p.tail_sync == RB2_TAIL_WRITE_IMM) {
		rx->cq = RTE_PTR_ADD(mr.addr, region_cq_off(p.slots, p.slot_size, p.flags));
		memset(rx->cq, 0, RB2_CQ_ENTRIES * sizeof(*rx->cq));
		rx->cq_next = 1;
		rx->imm_native = (rb2_xport_caps(xp) & RB2_XPORT_CAP_IMM) != 0;
	}
	/* Poll message: every lens[] entry starts consumed. */
	for (uint32_t i = 0; rx->poll_msg && p.msg_size == 0 && i < p.slots; i++)
		((uint32_t *)RTE_PTR_ADD(mr.addr, RB2_REGION_LENS_OFF))[i] = RB2_LEN_EMPTY;
	*rx->head_shadow = 0;
	rx->lens = RTE_PTR_ADD(mr.addr, RB2_REGION_LENS_OFF);
	rx->slots = RTE_PTR_ADD(mr.addr, rb2_region_slots_off(p.slots, p.flags));
	if (p.msg_size != 0) {
		/* Fixed size: lengths are known, read from local memory. */
		rx->own_lens = rte_malloc_socket("rb2_rx_lens",
						 (size_t)p.slots * sizeof(uint32_t),
						 RTE_CACHE_LINE_SIZE, mr.socket_id);
		if (rx->own_lens == NULL) {
			rb2_xport_qp_destroy(qp);
			rb2_xport_mr_free(xp, &mr);
			rte_free(rx);
			rte_errno = ENOMEM;
			return NULL;
		}
		for (uint32_t i = 0; i < p.slots; i++)
			rx->own_lens[i] = p.msg_size;
		rx->lens = rx->own_lens;
	}
	strlcpy(rx->name, name, sizeof(rx->name));
	rte_spinlock_lock(&rb2_chan_list.lock);
	TAILQ_INSERT_TAIL(&rb2_chan_list.rx, rx, next);
	rte_spinlock_unlock(&rb2_chan_list.lock);
	return rx;
}

#define WHYD(...) do { if (why) snprintf(why, whylen, __VA_ARGS__); } while (0)

int
rb2_chan_desc_check(const void *blob, size_t len, int role,
		    const struct rb2_chan_params *p, char *why, size_t whylen)
{
	struct rb2_chan_desc d;
	size_t need;

	/* Transports may pad (rdma_cm does, to 56 or 196 bytes): zeros past
	 * the descriptor are padding, anything else makes it oversized. */
	int trailing = 0;

	for (size_t i = sizeof(d); i < len; i++)
		trailing |= ((const uint8_t *)blob)[i] != 0;
	if (len < sizeof(d) || trailing) {
		WHYD("descriptor of %zu bytes, expected %zu (%s)", len, sizeof(d),
		     len < sizeof(d) ? "short" : "oversized: data past its end");
		return -EPROTO;
	}
	memcpy(&d, blob, sizeof(d));
	if (d.magic != RB2_DESC_MAGIC) {
		WHYD("bad magic 0x%08x (not an rb2 channel peer?)", d.magic);
		return -EPROTO;
	}
	if (d.version != RB2_DESC_VERSION) {
		WHYD("descriptor version %u, this build speaks %u", d.version,
		     RB2_DESC_VERSION);
		return -EPROTO;
	}
	if (d.role != role) {
		WHYD("peer is a %s, expected a %s", d.role ? "sender" : "receiver",
		     role ? "sender" : "receiver");
		return -EPROTO;
	}
	if (d.slots != p->slots || d.slot_size != p->slot_size) {
		WHYD("peer ring is %u x %u B, ours is %u x %u B: both halves need the same slots and slot_size",
		     d.slots, d.slot_size, p->slots, p->slot_size);
		return -EPROTO;
	}
	if (d.msg_size != p->msg_size) {
		WHYD("peer msg_size=%u differs from ours (%u): both halves of a fixed-size channel need the same, or 0",
		     d.msg_size, p->msg_size);
		return -EPROTO;
	}
	if (d.flags != (p->flags & RB2_CHAN_F_WIRE)) {
		WHYD("peer flags 0x%x differ from ours 0x%x (both halves must set RB2_CHAN_F_UNALIGNED, or neither)",
		     d.flags, p->flags & RB2_CHAN_F_WIRE);
		return -EPROTO;
	}
	if (d.policy != (uint8_t)(p->head_sync | (p->tail_sync << 4))) {
		WHYD("peer sync policy 0x%02x differs from ours 0x%02x", d.policy,
		     (unsigned int)(p->head_sync | (p->tail_sync << 4)));
		return -EPROTO;
	}
	if (d.alpha < 1 || d.alpha >= d.slots || d.beta < 1 || d.beta > d.alpha ||
	    d.gamma < 1 || d.gamma >= d.slots) {
		WHYD("peer thresholds alpha=%u beta=%u gamma=%u are invalid for %u slots",
		     d.alpha, d.beta, d.gamma, d.slots);
		return -EPROTO;
	}
	need = rb2_region_size(d.slots, d.slot_size, d.flags, role == 0,
			       p->tail_sync == RB2_TAIL_WRITE_IMM);
	if (d.addr == 0 || d.addr % RTE_CACHE_LINE_SIZE != 0 || d.len < need) {
		WHYD("peer region 0x%" PRIx64 "+%" PRIu64 " is misaligned or smaller than the %zu bytes its ring needs",
		     d.addr, d.len, need);
		return -EPROTO;
	}
	return 0;
}

/* Both halves know their peer: derive remote addresses and go live. */
static int
tx_attach(struct rb2_tx *tx, const struct rb2_chan_desc *peer)
{
	tx->peer = *peer;
	if (tx->loadstore) {
		void *base = rb2_xport_peer_ptr(tx->qp, peer->addr, peer->rkey,
						peer->len);
		if (base == NULL) {
			RB2_CHAN_LOG(ERR, "channel '%s': cannot map the receiver's ring for load/store",
				     tx->name);
			return -EFAULT;
		}
		tx->slots = RTE_PTR_ADD(base, rb2_region_slots_off(peer->slots, peer->flags));
		tx->peer_lens = RTE_PTR_ADD(base, RB2_REGION_LENS_OFF);
		tx->peer_tail = RTE_PTR_ADD(base, RB2_REGION_PTR_OFF);
		tx->peer_head_pub = RTE_PTR_ADD(base, RB2_REGION_SHADOW_OFF);
		if (tx->p.tail_sync == RB2_TAIL_WRITE_IMM)
			tx->cq = RTE_PTR_ADD(base, region_cq_off(peer->slots, peer->slot_size,
								 peer->flags));
	}
	/* Capacity N - 1: full when tail - local_head == N - 1. */
	tx->limit = atomic_load_explicit(tx->local_head, memory_order_acquire) +
		tx->mask;
	tx->err = 0;
	return 0;
}

static int
rx_attach(struct rb2_rx *rx, const struct rb2_chan_desc *peer)
{
	int ret;

	rx->peer = *peer;
	rx->peer_head = NULL;
	if (rb2_xport_caps(rx->xp) & RB2_XPORT_CAP_LOADSTORE)
		rx->peer_head = rb2_xport_peer_ptr(rx->qp, peer->addr + RB2_REGION_PTR_OFF,
						   peer->rkey, sizeof(uint64_t));
	rx->peer_credit = NULL;
	if (rx->peer_head != NULL && rx->cq != NULL)
		rx->peer_credit = rb2_xport_peer_ptr(rx->qp, peer->addr + RB2_REGION_PTR_OFF + 8,
						     peer->rkey, sizeof(uint64_t));
	/* Native WRITE_WITH_IMM: the sender starts with RB2_CQ_ENTRIES
	 * credits, one posted receive each. A WRITE_WITH_IMM that arrives
	 * before them is retried by the NIC (RNR), not lost. */
	if (rx->imm_native) {
		ret = rb2_xport_post_recv(rx->qp, RB2_CQ_ENTRIES);
		if (ret < 0) {
			RB2_CHAN_LOG(ERR, "channel '%s': posting %d receives for WRITE_WITH_IMM: %s",
				     rx->name, RB2_CQ_ENTRIES, rte_strerror(-ret));
			return ret;
		}
	}
	rx->err = 0;
	return 0;
}

int
rb2_chan_pair(struct rb2_tx *tx, struct rb2_rx *rx)
{
	struct rb2_chan_desc dt, dr;
	char why[160];
	int ret;

	if (tx == NULL || rx == NULL || tx->xp != rx->xp)
		return -EINVAL;
	fill_desc(&dt, &tx->p, 1, &tx->mr);
	fill_desc(&dr, &rx->p, 0, &rx->mr);
	if (rb2_chan_desc_check(&dr, sizeof(dr), 0, &tx->p, why, sizeof(why)) < 0 ||
	    rb2_chan_desc_check(&dt, sizeof(dt), 1, &rx->p, why, sizeof(why)) < 0) {
		RB2_CHAN_LOG(ERR, "cannot pair '%s' with '%s': %s", tx->name,
			     rx->name, why);
		return -EINVAL;
	}
	ret = rb2_xport_qp_connect_local(tx->qp, rx->qp);
	if (ret < 0)
		return ret;
	ret = tx_attach(tx, &dr);
	if (ret < 0)
		return ret;
	return rx_attach(rx, &dt);
}

static int
half_connect(const char *name, struct rb2_xport_qp *qp,
	     const struct rb2_chan_params *p, const struct rb2_xport_mr *mr,
	     int role, const char *peer, unsigned int timeout_ms,
	     struct rb2_chan_desc *out)
{
	struct rb2_chan_desc mine;
	uint8_t blob[RB2_XPORT_BLOB_MAX];
	char why[160];
	int n;

	fill_desc(&mine, p, role, mr);
	n = rb2_xport_qp_exchange(qp, peer,
				  role ? RB2_XPORT_ACTIVE : RB2_XPORT_PASSIVE,
				  &mine, sizeof(mine), blob, sizeof(blob),
				  timeout_ms);
	if (n < 0) {
		RB2_CHAN_LOG(ERR, "channel '%s': connecting to '%s' failed: %s",
			     name, peer, rte_strerror(-n));
		return n;
	}
	if (rb2_chan_desc_check(blob, (size_t)n, !role, p, why, sizeof(why)) < 0) {
		RB2_CHAN_LOG(ERR, "channel '%s': refusing peer '%s': %s", name,
			     peer, why);
		return -ECONNREFUSED;
	}
	memcpy(out, blob, sizeof(*out));
	return 0;
}

int
rb2_tx_connect(struct rb2_tx *tx, const char *peer, unsigned int timeout_ms)
{
	struct rb2_chan_desc d;
	int ret;

	if (tx == NULL || peer == NULL)
		return -EINVAL;
	ret = half_connect(tx->name, tx->qp, &tx->p, &tx->mr, 1, peer,
			   timeout_ms, &d);
	return ret < 0 ? ret : tx_attach(tx, &d);
}

int
rb2_rx_connect(struct rb2_rx *rx, const char *peer, unsigned int timeout_ms)
{
	struct rb2_chan_desc d;
	int ret;

	if (rx == NULL || peer == NULL)
		return -EINVAL;
	ret = half_connect(rx->name, rx->qp, &rx->p, &rx->mr, 0, peer,
			   timeout_ms, &d);
	if (ret == 0)
		ret = rx_attach(rx, &d);
	return ret;
}

void
rb2_tx_destroy(struct rb2_tx *tx)
{
	if (tx == NULL)
		return;
	if (tx->err == 0)
		rb2_tx_flush(tx);
	rte_spinlock_lock(&rb2_chan_list.lock);
	TAILQ_REMOVE(&rb2_chan_list.tx, tx, next);
	rte_spinlock_unlock(&rb2_chan_list.lock);
	rb2_xport_qp_destroy(tx->qp);
	rb2_xport_mr_free(tx->xp, &tx->mr);
	rte_free(tx);
}

void
rb2_rx_destroy(struct rb2_rx *rx)
{
	if (rx == NULL)
		return;
	rte_spinlock_lock(&rb2_chan_list.lock);
	TAILQ_REMOVE(&rb2_chan_list.rx, rx, next);
	rte_spinlock_unlock(&rb2_chan_list.lock);
	rb2_xport_qp_destroy(rx->qp);
	rb2_xport_mr_free(rx->xp, &rx->mr);
	rte_free(rx->own_lens);
	rte_free(rx);
}

/* ---- sender slow path ---------------------------------------------------- */

static int peer_gone(struct rb2_xport_qp *qp, uint64_t *next_check);

static void
tx_fail(struct rb2_tx *tx, int err, const char *what)
{
	if (tx->err == 0)
		RB2_CHAN_LOG(ERR, "channel '%s' sender failed: %s: %s; committed messages past the last published tail (%" PRIu64 " slots) are not delivered",
			     tx->name, what, rte_strerror(-err),
			     tx->tail - tx->pub_tail);
	tx->err = err;
	tx->limit = 0; /* every reserve now takes the slow path and fails */
}

/* Reap completions of tail WRITEs; a failed one fails the channel. */
static void
tx_reap(struct rb2_tx *tx)
{
	struct rb2_xport_wc wc[8];
	int n;

	/* Also the driver's own completions (a NIC recycles its send queue
	 * through them), so poll even with no tail WRITE in flight. */
	while ((n = rb2_xport_poll(tx->qp, wc, RTE_DIM(wc))) != 0) {
		if (n < 0) {
			tx_fail(tx, n, "polling completions");
			return;
		}
		for (int i = 0; i < n; i++) {
			if (wc[i].status != RB2_WC_SUCCESS) {
				char what[96];
				snprintf(what, sizeof(what), "tail WRITE completed with '%s'",
					 rb2_xport_wc_status_str(tx->xp, wc[i].status));
				tx_fail(tx, -EIO, what);
			}
			if (wc[i].wr_id == WRID_TAIL && tx->tail_inflight > 0)
				tx->tail_inflight--;
			if (wc[i].wr_id == WRID_PULL && tx->pull_inflight > 0)
				tx->pull_inflight--;
		}
	}
}

/* One contiguous range of slots [a, a+k): its lens entries (unless the
 * channel is fixed-size), then its slots. */
static unsigned int
range_wrs(struct rb2_tx *tx, struct rb2_xport_wr *w, uint32_t a, uint32_t k)
{
	const struct rb2_chan_desc *pd = &tx->peer;
	uint64_t peer_lens = pd->addr + RB2_REGION_LENS_OFF;
	uint64_t peer_slots = pd->addr + rb2_region_slots_off(pd->slots, pd->flags);
	uint32_t llen = k * (uint32_t)sizeof(uint32_t);
	unsigned int n = 0;

	if (tx->p.msg_size == 0)
		w[n++] = (struct rb2_xport_wr){
		.local = &tx->lens[a], .remote = peer_lens + (uint64_t)a * 4,
		.len = llen, .lkey = tx->mr.lkey, .rkey = pd->rkey,
		.opcode = RB2_WR_WRITE,
		.flags = llen <= tx->qp->max_inline ? RB2_WR_INLINE : 0,
	};
	w[n++] = (struct rb2_xport_wr){
		.local = tx->slots + (size_t)a * tx->slot_size,
		.remote = peer_slots + (uint64_t)a * tx->slot_size,
		.len = k * tx->slot_size, .lkey = tx->mr.lkey, .rkey = pd->rkey,
		.opcode = RB2_WR_WRITE,
		.flags = k * tx->slot_size <= tx->qp->max_inline ? RB2_WR_INLINE : 0,
	};
	RB2_STAT_ADD(&tx->stats, slot_writes, 1);
	return n;
}

/* Count the messages and bytes of [from, to) from the lens[] mirror (kept
 * off the per-message path; see rb2_tx_commit()). */
static void
count_range(struct rb2_tx *tx, uint64_t from, uint64_t to)
{
	uint64_t msgs = 0, bytes = 0;

	if (tx->msg_size != 0) { /* one slot per message, all the same size */
		RB2_STAT_ADD(&tx->stats, messages, to - from);
		RB2_STAT_ADD(&tx->stats, bytes, (to - from) * tx->msg_size);
		return;
	}
	while (from < to) {
		uint32_t pos = (uint32_t)from & tx->mask;
		uint32_t len = tx->lens[pos];

		if (len == RB2_LEN_SKIP) {
			from += tx->mask + 1 - pos;
			continue;
		}
		msgs++;
		bytes += len;
		from += __rb2_nslots(len + tx->trailer, tx->slot_size);
	}
	RB2_STAT_ADD(&tx->stats, messages, msgs);
	RB2_STAT_ADD(&tx->stats, bytes, bytes);
}

/* WRs that move [esc_tail, tail) to the same slots of RB_R. Advances
 * esc_tail. */
static unsigned int
transmit_wrs(struct rb2_tx *tx, struct rb2_xport_wr *w)
{
	uint64_t from = tx->esc_tail, cnt = tx->tail - from;
	uint32_t a = (uint32_t)from & tx->mask;
	uint32_t first = (uint32_t)RTE_MIN(cnt, (uint64_t)(tx->mask + 1 - a));
	unsigned int n = 0;

	tx->esc_tail = tx->tail;
	if (cnt == 0)
		return 0;
	count_range(tx, from, tx->tail);
	n += range_wrs(tx, w, a, first);
	if (cnt > first)
		n += range_wrs(tx, w + n, 0, (uint32_t)(cnt - first));
	return n;
}

/* Append the tail WRITE (the only signaled WR) to a chain. */
static unsigned int
tail_wr(struct rb2_tx *tx, struct rb2_xport_wr *w)
{
	*tx->tail_shadow = tx->tail;
	w[0] = (struct rb2_xport_wr){
		.wr_id = WRID_TAIL,
		.local = tx->tail_shadow,
		.remote = tx->peer.addr + RB2_REGION_PTR_OFF,
		.len = sizeof(uint64_t), .lkey = tx->mr.lkey, .rkey = tx->peer.rkey,
		.opcode = RB2_WR_WRITE,
		.flags = RB2_WR_SIGNALED |
			(tx->qp->max_inline >= sizeof(uint64_t) ? RB2_WR_INLINE : 0),
	};
	tx->pub_tail = tx->tail;
	tx->tail_inflight++;
	RB2_STAT_ADD(&tx->stats, tail_writes, 1);
	return 1;
}

/*
 * WRITE_WITH_IMM sync: the completion entry of [pub_tail, tail), if the
 * receiver has a receive-queue credit left; else the sync waits for the
 * receiver to replenish (counted). Returns the WRs appended (WR mode): the
 * entry's WRITE, a WRITE_WITH_IMM carrying the slot count when the
 * transport has them (the receiver then reads the immediate from its receive
 * completion, not the entry).
 */
static unsigned int
cqe_wr(struct rb2_tx *tx, struct rb2_xport_wr *w)
{
	uint64_t credit = atomic_load_explicit(tx->cq_credit, memory_order_acquire);
	struct rb2_cqe *e;

	if (tx->tail == tx->pub_tail)
		return 0;
	if (tx->cqes - credit >= RB2_CQ_ENTRIES) {
		RB2_STAT_ADD(&tx->stats, credit_waits, 1);
		return 0;
	}
	e = &tx->cq[tx->cqes % RB2_CQ_ENTRIES];
	tx->cqes++;
	RB2_STAT_ADD(&tx->stats, cqes, 1);
	RB2_STAT_ADD(&tx->stats, tail_writes, 1);
	if (tx->loadstore) {
		e->imm = (uint32_t)(tx->tail - tx->pub_tail);
		/* Release: the slots and lens[] before the entry's tag. */
		atomic_store_explicit((_Atomic uint64_t *)&e->seq, tx->cqes, memory_order_release);
		tx->pub_tail = tx->tail;
		return 0;
	}
	e->imm = (uint32_t)(tx->tail - tx->pub_tail);
	e->seq = tx->cqes;
	w[0] = (struct rb2_xport_wr){
		.local = e,
		.remote = tx->peer.addr + region_cq_off(tx->peer.slots, tx->peer.slot_size,
							tx->peer.flags) +
			(uint64_t)((uintptr_t)e - (uintptr_t)tx->cq),
		.len = sizeof(*e), .lkey = tx->mr.lkey, .rkey = tx->peer.rkey,
		.opcode = tx->imm_native ? RB2_WR_WRITE_IMM : RB2_WR_WRITE,
		.imm = e->imm,
		.flags = tx->qp->max_inline >= sizeof(*e) ? RB2_WR_INLINE : 0,
	};
	tx->pub_tail = tx->tail;
	return 1;
}

static void
tx_post(struct rb2_tx *tx, struct rb2_xport_wr *w, unsigned int n)
{
	int ret;

	if (n == 0)
		return;
	ret = rb2_xport_post(tx->qp, w, n);
	/* Send or completion queue full: reap until it takes the chain. A NIC
	 * completes in microseconds; a bound turns a wedged one into an error. */
	for (uint32_t spins = 0; unlikely(ret == -ENOSPC) && tx->err == 0 &&
	     spins < RB2_POST_SPINS; spins++) {
		tx_reap(tx);
		ret = rb2_xport_post(tx->qp, w, n);
	}
	if (unlikely(ret < 0))
		tx_fail(tx, ret, "posting WRITEs");
}

/*
 * Load/store transports: the slots are in RB_R already; copy the lens[]
 * entries of [esc_tail, tail) and, if @publish, store the tail. Same order as
 * the WR chain (lens, then tail), without building WRs or completions.
 */
static void
ls_publish(struct rb2_tx *tx, int publish)
{
	uint64_t from = tx->esc_tail, cnt = tx->tail - from;
	uint32_t a = (uint32_t)from & tx->mask;
	uint32_t first = (uint32_t)RTE_MIN(cnt, (uint64_t)(tx->mask + 1 - a));

	if (cnt != 0) {
		count_range(tx, from, tx->tail);
		/* Poll message: lengths and markers were stored at commit. */
		if (tx->p.msg_size == 0 && tx->trailer == 0) {
			memcpy(&tx->peer_lens[a], &tx->lens[a],
			       first * sizeof(uint32_t));
			if (cnt > first)
				memcpy(tx->peer_lens, tx->lens,
				       (size_t)(cnt - first) * sizeof(uint32_t));
		}
		tx->esc_tail = tx->tail;
	}
	if (tx->trailer != 0) {
		tx->pub_tail = tx->tail;    /* the markers published it */
		return;
	}
	if (tx->p.tail_sync == RB2_TAIL_WRITE_IMM) {
		if (publish)
			cqe_wr(tx, NULL);
		return;
	}
	if (publish && tx->pub_tail != tx->tail) {
		/* Release: the slots and lens[] before the tail; pairs with
		 * the acquire load of local_tail in rb2_rx_peek_burst(). */
		atomic_store_explicit(tx->peer_tail, tx->tail, memory_order_release);
		tx->pub_tail = tx->tail;
		RB2_STAT_ADD(&tx->stats, tail_writes, 1);
	}
}

void
__rb2_tx_transmit(struct rb2_tx *tx)
{
	if (tx->loadstore) {
		ls_publish(tx, 0);
		return;
	}
	struct rb2_xport_wr w[4];

	tx_post(tx, w, transmit_wrs(tx, w));
	if (tx->trailer != 0)
		tx->pub_tail = tx->tail;    /* the markers publish: no tail */
}

void
__rb2_tx_advance(struct rb2_tx *tx)
{
	struct rb2_xport_wr w[5];
	unsigned int n;

	if (tx->loadstore) {
		/* A store completes at once: the elastic threshold never
		 * defers here. */
		ls_publish(tx, 1);
		tx->synced_tail = tx->tail;
		return;
	}
	n = transmit_wrs(tx, w);

	tx->synced_tail = tx->tail;
	tx_reap(tx);
	/* Elastic threshold: WRITE the tail only once the previous tail WRITE
	 * has completed; otherwise the network is busy, keep batching. With
	 * poll-message sync there is no tail to WRITE. */
	if (tx->trailer != 0)
		tx->pub_tail = tx->tail;
	else if (tx->cq != NULL)
		n += cqe_wr(tx, w + n);
	else if (tx->tail_inflight == 0 || (tx->p.flags & RB2_CHAN_F_NO_ELASTIC))
		n += tail_wr(tx, w + n);
	else
		RB2_STAT_ADD(&tx->stats, deferred_tail_syncs, 1);
	tx_post(tx, w, n); /* one doorbell: slots, then tail */
}

/*
 * WRITE_WITH_IMM sync: a flush must publish, but the completion entry needs
 * a receive-queue credit. The receiver hands credits back when it drains, so
 * wait for one (up to a second; the next flush tries again after that). A
 * sender that finishes with a flush, as a pipeline stage sending its end of
 * stream, would otherwise leave its last messages unpublished.
 */
static void
imm_wait_credit(struct rb2_tx *tx)
{
	uint64_t deadline = rte_get_timer_cycles() + rte_get_timer_hz();

	while (tx->pub_tail != tx->tail && tx->err == 0 &&
	       rte_get_timer_cycles() < deadline) {
		struct rb2_xport_wr w;
		int gone;

		rte_pause();
		if (tx->loadstore) {
			cqe_wr(tx, NULL);
		} else {
			tx_reap(tx);
			tx_post(tx, &w, cqe_wr(tx, &w));
		}
		gone = peer_gone(tx->qp, &tx->next_check);
		if (gone < 0)
			tx_fail(tx, gone, "the receiver is gone");
	}
}

int
__rb2_tx_flush(struct rb2_tx *tx)
{
	struct rb2_xport_wr w[5];
	unsigned int n;

	if (tx->err != 0)
		return tx->err;
	RB2_STAT_ADD(&tx->stats, flushes, 1);
	if (tx->loadstore) {
		ls_publish(tx, 1);
		tx->synced_tail = tx->tail;
		if (tx->cq != NULL)
			imm_wait_credit(tx);
		return tx->err;
	}
	n = transmit_wrs(tx, w);
	tx->synced_tail = tx->tail;
	tx_reap(tx);
	if (tx->trailer != 0)
		tx->pub_tail = tx->tail;
	else if (tx->cq != NULL)
		n += cqe_wr(tx, w + n);
	else
		n += tail_wr(tx, w + n);
	tx_post(tx, w, n);
	if (tx->cq != NULL)
		imm_wait_credit(tx);
	return tx->err;
}

/*
 * Lazy pull (§IV-A): the receiver only publishes its head in its own region
 * (a local store); the sender, short of room, READs it into local_head and
 * waits for the READ. One round trip per refresh, on the sender's path: the
 * cost the paper measures against lazy push.
 */
static void
pull_head(struct rb2_tx *tx)
{
	struct rb2_xport_wr w = {
		.wr_id = WRID_PULL,
		.local = (void *)(uintptr_t)tx->local_head,
		.remote = tx->peer.addr + RB2_REGION_SHADOW_OFF,
		.len = sizeof(uint64_t), .lkey = tx->mr.lkey, .rkey = tx->peer.rkey,
		.opcode = RB2_WR_READ, .flags = RB2_WR_SIGNALED,
	};
	uint32_t spins;

	RB2_STAT_ADD(&tx->stats, head_reads, 1);
	if (tx->peer_head_pub != NULL) {
		/* Load/store: the READ is an acquire load, pairing with the
		 * receiver's release store of its head. */
		atomic_store_explicit(tx->local_head,
				      atomic_load_explicit(tx->peer_head_pub, memory_order_acquire),
				      memory_order_relaxed);
		return;
	}
	tx_post(tx, &w, 1);
	if (tx->err != 0)
		return;
	tx->pull_inflight++;
	for (spins = 0; tx->pull_inflight > 0 && tx->err == 0 && spins < RB2_POST_SPINS; spins++)
		tx_reap(tx);
	if (tx->pull_inflight > 0 && tx->err == 0)
		tx_fail(tx, -ETIMEDOUT, "the head READ did not complete");
}

int
__rb2_tx_make_room(struct rb2_tx *tx, uint64_t need)
{
	uint64_t h;

	if (tx->err != 0)
		return tx->err;
	if (tx->pull)
		pull_head(tx);  /* lazy pull: READ the head into local_head */
	/* Acquire: pairs with the receiver's head WRITE (a release store on
	 * shm), so its reads of the freed slots are done before we reuse them. */
	h = atomic_load_explicit(tx->local_head, memory_order_acquire);
	tx->limit = h + tx->mask;
	if (tx->tail + need <= tx->limit)
		return 0;

	tx_reap(tx);
	if (tx->err == 0) {
		int gone = peer_gone(tx->qp, &tx->next_check);
		if (gone < 0)
			tx_fail(tx, gone, "the receiver is gone");
	}
	/* Liveness: if the receiver has consumed everything we published, only
	 * a tail WRITE can free room; so can a tail deferred by the elastic
	 * threshold once its predecessor has completed. */
	if (tx->tail != tx->pub_tail &&
	    (h == tx->pub_tail ||
	     (tx->tail_inflight == 0 && tx->pub_tail != tx->synced_tail)))
		__rb2_tx_flush(tx);
	RB2_STAT_ADD(&tx->stats, full_events, 1);
	return tx->err != 0 ? tx->err : -ENOBUFS;
}

/*
 * Poll-message sync (§IV-A, FaRM's design): no tail pointer crosses the link.
 * Each message ends, in its last slot, with an 8-byte marker the receiver
 * polls for; its length goes first (in the lens[] WRITE, or stored first on
 * load/store), so a marker seen means length and payload are there. The
 * receiver zeroes both after use.
 */
void
__rb2_tx_mark(struct rb2_tx *tx, uint64_t t, uint32_t skip, uint32_t len, unsigned int n)
{
	uint32_t need = __rb2_nslots(len + RB2_MARKER_SIZE, tx->slot_size);

	/* With WRITEs, lens[] travels by ranges from the mirror, inner entries
	 * of multi-slot messages and of the wrap padding included: those must
	 * read "consumed", or a stale length (or skip) from an earlier lap
	 * would be taken for a new one. (Load/store stores only the entries
	 * that start something, and the receiver consumes each of them.) */
	int ranges = !tx->loadstore && tx->msg_size == 0;

	if (skip != 0) {
		if (tx->loadstore && tx->msg_size == 0)
			tx->peer_lens[t & tx->mask] = RB2_LEN_SKIP;
		for (uint32_t q = ((uint32_t)t & tx->mask) + 1; ranges && q <= tx->mask; q++)
			tx->lens[q] = RB2_LEN_EMPTY;
		t += skip;
	}
	for (unsigned int i = 0; i < n; i++, t += need) {
		uint32_t pos = (uint32_t)t & tx->mask;
		void *mark = tx->slots + (size_t)(pos + need) * tx->slot_size - RB2_MARKER_SIZE;

		if (!tx->loadstore) {     /* travels with the slots' WRITE */
			for (uint32_t j = 1; ranges && j < need; j++)
				tx->lens[pos + j] = RB2_LEN_EMPTY;
			*(uint64_t *)mark = __rb2_marker(t);
			continue;
		}
		if (tx->msg_size == 0)
			tx->peer_lens[pos] = len;
		/* Release: the payload and its length before the marker. */
		atomic_store_explicit((_Atomic uint64_t *)mark, __rb2_marker(t),
				      memory_order_release);
	}
}

/* ---- receiver slow path -------------------------------------------------- */

/*
 * Completions on the receiver's queue: native WRITE_WITH_IMM receives (each
 * immediate is published slots: the tail moves), and failed sends (the
 * head or credit WRITEs are unsignaled, so only failures come back).
 * Returns the receives consumed, or -EIO.
 */
static int
rx_completions(struct rb2_rx *rx, const struct rb2_xport_wc *wc, int n)
{
	uint64_t t = atomic_load_explicit(rx->local_tail, memory_order_relaxed);
	int got = 0, ret = 0;

	if (n < 0)
		return n;
	for (int i = 0; i < n; i++) {
		if (wc[i].status != RB2_WC_SUCCESS) {
			RB2_CHAN_LOG(ERR, "channel '%s' receiver failed: %s completion error: %s",
				     rx->name, wc[i].opcode == RB2_WC_RECV_IMM ?
				     "WRITE_WITH_IMM receive" : "head/credit WRITE",
				     rb2_xport_wc_status_str(rx->xp, wc[i].status));
			ret = -EIO;
		} else if (wc[i].opcode == RB2_WC_RECV_IMM) {
			t += wc[i].imm;
			got++;
		}
	}
	if (got > 0) {
		rx->cq_consumed += (uint64_t)got;
		RB2_STAT_ADD(&rx->stats, cqes, (uint64_t)got);
		/* Only this lcore writes the tail under this sync: the
		 * receive completion ordered the WRITEs before it. */
		atomic_store_explicit(rx->local_tail, t, memory_order_relaxed);
	}
	return ret < 0 ? ret : got;
}

/* Reap the receiver's queue (send queue full): every completion counts. */
static int
rx_reap(struct rb2_rx *rx)
{
	struct rb2_xport_wc wc[16];
	int ret = rx_completions(rx, wc, rb2_xport_poll(rx->qp, wc, RTE_DIM(wc)));

	if (ret < 0)
		rx->err = ret;
	return ret;
}

/* Give the sender its receive-queue credits back: one WRITE of the count
 * (native WRITE_WITH_IMM: after re-posting the receives they stand for). */
static void
rx_return_credits(struct rb2_rx *rx)
{
	struct rb2_xport_wr w = {
		.local = &rx->head_shadow[1],
		.remote = rx->peer.addr + RB2_REGION_PTR_OFF + 8,
		.len = sizeof(uint64_t), .lkey = rx->mr.lkey, .rkey = rx->peer.rkey,
		.opcode = RB2_WR_WRITE,
		.flags = rx->qp->max_inline >= sizeof(uint64_t) ? RB2_WR_INLINE : 0,
	};
	int ret;

	if (rx->imm_native) {
		ret = rb2_xport_post_recv(rx->qp, (unsigned int)(rx->cq_consumed - rx->cq_returned));
		if (unlikely(ret < 0)) {
			RB2_CHAN_LOG(ERR, "channel '%s' receiver failed: re-posting receives: %s",
				     rx->name, rte_strerror(-ret));
			rx->err = ret;
			return;
		}
	}
	rx->cq_returned = rx->cq_consumed;
	RB2_STAT_ADD(&rx->stats, cq_returns, 1);
	if (rx->peer_credit != NULL) {
		atomic_store_explicit(rx->peer_credit, rx->cq_consumed, memory_order_release);
		return;
	}
	rx->head_shadow[1] = rx->cq_consumed;
	ret = rb2_xport_post(rx->qp, &w, 1);
	for (uint32_t spins = 0; unlikely(ret == -ENOSPC) && spins < RB2_POST_SPINS; spins++) {
		int got = rx_reap(rx);

		ret = got < 0 ? got : rb2_xport_post(rx->qp, &w, 1);
	}
	if (unlikely(ret < 0)) {
		RB2_CHAN_LOG(ERR, "channel '%s' receiver failed: posting the credit WRITE: %s",
			     rx->name, rte_strerror(-ret));
		rx->err = ret;
	}
}

/* WRITE_WITH_IMM sync, emulated: consume the completion ring's new entries
 * and add their immediates to the tail. Returns the entries consumed. */
static unsigned int
rx_poll_cq_ring(struct rb2_rx *rx)
{
	uint64_t t = atomic_load_explicit(rx->local_tail, memory_order_relaxed);
	unsigned int got = 0;

	for (;;) {
		struct rb2_cqe *e = &rx->cq[(rx->cq_next - 1) % RB2_CQ_ENTRIES];

		/* Acquire: pairs with the release store (or ordered WRITE)
		 * of the tag after the slots, lens[] and the immediate. */
		if (atomic_load_explicit((_Atomic uint64_t *)&e->seq, memory_order_acquire) !=
		    rx->cq_next)
			break;
		t += e->imm;
		rx->cq_next++;
		rx->cq_consumed++;
		got++;
	}
	if (got > 0) {
		RB2_STAT_ADD(&rx->stats, cqes, got);
		atomic_store_explicit(rx->local_tail, t, memory_order_relaxed);
	}
	return got;
}

/*
 * WRITE_WITH_IMM sync: poll the receive completions (native) or the
 * completion ring (emulated), add each immediate to the tail, and replenish
 * the receive queue every half ring (or when the ring has run dry, so that a
 * sender out of credits goes on).
 */
void
__rb2_rx_poll_cq(struct rb2_rx *rx)
{
	int got = rx->imm_native ? rx_reap(rx) : (int)rx_poll_cq_ring(rx);

	if (rx->cq_consumed - rx->cq_returned >= RB2_CQ_ENTRIES / 2 ||
	    (got <= 0 && rx->cq_consumed != rx->cq_returned))
		rx_return_credits(rx);
}

/* Poll message: does an impossible length at @lp change within 100 ms? A
 * length WRITE still landing does; a corrupt ring does not. */
static int
poll_len_settles(const _Atomic uint32_t *lp, uint32_t len)
{
	uint64_t deadline = rte_get_timer_cycles() + rte_get_timer_hz() / 10;

	while (atomic_load_explicit(lp, memory_order_relaxed) == len) {
		if (rte_get_timer_cycles() > deadline)
			return 0;
		rte_pause();
	}
	return 1;
}

int
__rb2_rx_peek_poll(struct rb2_rx *rx, struct rb2_msg *msgs, unsigned int n)
{
	uint64_t h = rx->head;
	unsigned int i = 0;

	while (i < n) {
		uint32_t pos = (uint32_t)h & rx->mask;
		uint32_t len = rx->msg_size, need = 1;
		_Atomic uint32_t *lp = (_Atomic uint32_t *)(uintptr_t)&rx->lens[pos];
		const _Atomic uint64_t *mark;

		if (rx->msg_size == 0) {
			len = atomic_load_explicit(lp, memory_order_relaxed);
			if (len == RB2_LEN_EMPTY)
				break;                /* nothing (yet) */
			if (len == RB2_LEN_SKIP) {
				/* Wrap padding: nothing to deliver; free it now
				 * (only the first message of a peek may follow). */
				if (i > 0)
					break;
				atomic_store_explicit(lp, RB2_LEN_EMPTY, memory_order_relaxed);
				h += rx->mask + 1 - pos;
				rx->head = h;
				continue;
			}
			need = __rb2_nslots(len + RB2_MARKER_SIZE, rx->slot_size);
			if (unlikely(len > rx->max_len || pos + need > rx->mask + 1)) {
				/* Torn (a WRITE landing on the empty mark byte by
				 * byte, as rxe does) or corrupt: only a torn one
				 * changes. */
				if (poll_len_settles(lp, len))
					continue;
				return i > 0 ? (int)i : __rb2_rx_corrupt(rx, h, len);
			}
		}
		mark = (const _Atomic uint64_t *)(uintptr_t)(rx->slots +
			(size_t)(pos + need) * rx->slot_size - RB2_MARKER_SIZE);
		/* Acquire: pairs with the sender's release store (or ordered
		 * WRITE) of the marker after payload and length. */
		if (atomic_load_explicit(mark, memory_order_acquire) != __rb2_marker(h))
			break;                        /* not all there yet */
		/* A length read before the marker may have been torn (a NIC
		 * writes byte-wise); it is final now. */
		if (rx->msg_size == 0 && atomic_load_explicit(lp, memory_order_relaxed) != len)
			continue;
		msgs[i].data = (void *)(uintptr_t)(rx->slots + (size_t)pos * rx->slot_size);
		rte_prefetch0(msgs[i].data);
		msgs[i].len = len;
		msgs[i].next_lo = (uint32_t)(h + need);
		i++;
		h += need;
	}
	return i > 0 ? (int)i : __rb2_rx_idle(rx);
}

void
__rb2_rx_release_poll(struct rb2_rx *rx, const struct rb2_msg *msgs, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		uint32_t pos = (uint32_t)(((const uint8_t *)msgs[i].data - rx->slots) /
					  rx->slot_size);
		uint32_t end = (msgs[i].next_lo - 1) & rx->mask;   /* last slot */
		uint64_t *mark = (uint64_t *)(uintptr_t)(rx->slots + (size_t)(end + 1) *
							rx->slot_size - RB2_MARKER_SIZE);

		*mark = 0;
		if (rx->msg_size == 0)
			((uint32_t *)(uintptr_t)rx->lens)[pos] = RB2_LEN_EMPTY;
	}
}


void
__rb2_rx_push(struct rb2_rx *rx)
{
	struct rb2_xport_wr w = {
		.wr_id = WRID_HEAD,
		.local = rx->head_shadow,
		.remote = rx->peer.addr + RB2_REGION_PTR_OFF,
		.len = sizeof(uint64_t), .lkey = rx->mr.lkey, .rkey = rx->peer.rkey,
		.opcode = RB2_WR_WRITE,
		.flags = rx->qp->max_inline >= sizeof(uint64_t) ? RB2_WR_INLINE : 0,
	};
	int ret;

	if (rx->err != 0)
		return;
	if (rx->pull) {
		/* Lazy pull: publish the head where the sender READs it.
		 * Release: our reads of the freed slots before the head. */
		atomic_store_explicit((_Atomic uint64_t *)rx->head_shadow, rx->head,
				      memory_order_release);
		rx->synced_head = rx->head;
		RB2_STAT_ADD(&rx->stats, head_pushes, 1);
		return;
	}
	if (rx->peer_head != NULL) {
		/* Release: our reads of the freed slots before the head;
		 * pairs with the acquire load in __rb2_tx_make_room(). */
		atomic_store_explicit(rx->peer_head, rx->head, memory_order_release);
		rx->synced_head = rx->head;
		RB2_STAT_ADD(&rx->stats, head_pushes, 1);
		return;
	}
	*rx->head_shadow = rx->head;
	ret = rb2_xport_post(rx->qp, &w, 1);
	for (uint32_t spins = 0; unlikely(ret == -ENOSPC) && spins < RB2_POST_SPINS;
	     spins++) {
		/* Reaping the driver's forced-signal completions frees the
		 * send queue (receives of WRITE_WITH_IMM are counted). */
		int got = rx_reap(rx);

		ret = got < 0 ? got : rb2_xport_post(rx->qp, &w, 1);
	}
	if (unlikely(ret < 0)) {
		RB2_CHAN_LOG(ERR, "channel '%s' receiver failed: posting the head WRITE: %s",
			     rx->name, rte_strerror(-ret));
		rx->err = ret;
		return;
	}
	rx->synced_head = rx->head;
	RB2_STAT_ADD(&rx->stats, head_pushes, 1);
}

/* Ask the transport after the peer, at most every STATUS_CHECK_US. */
static int
peer_gone(struct rb2_xport_qp *qp, uint64_t *next_check)
{
	uint64_t now = rte_get_timer_cycles();
	int ret;

	if (now < *next_check)
		return 0;
	*next_check = now + rte_get_timer_hz() / (1000000 / STATUS_CHECK_US);
	ret = rb2_xport_qp_status(qp);
	return ret == -ENOTCONN ? 0 : ret;
}

/*
 * The receiver found its ring empty: is the sender still there? Its death is
 * only final once the ring has been found empty by a look that started after
 * the death was seen: the sender may have published its last messages (and
 * died) between our look at the tail and the status check. So the first
 * sighting only arms the verdict; the caller's next empty peek, which reads
 * the tail (or the markers, or the completions) again, delivers it, once
 * RB2_GONE_GRACE_US have passed for WRITEs still landing from the wire.
 */
static void
rx_check_peer(struct rb2_rx *rx)
{
	uint64_t now;
	int gone;

	if (rx->peer_gone == 0) {
		gone = peer_gone(rx->qp, &rx->next_check);
		if (gone < 0) {
			rx->peer_gone = gone;
			rx->gone_tsc = rte_get_timer_cycles();
		}
		return;
	}
	now = rte_get_timer_cycles();
	if (now - rx->gone_tsc < rte_get_timer_hz() / (1000000 / RB2_GONE_GRACE_US))
		return;
	RB2_CHAN_LOG(ERR, "channel '%s' receiver: the sender is gone (%s); everything it published was delivered",
		     rx->name, rte_strerror(-rx->peer_gone));
	rx->err = rx->peer_gone;
}

int
__rb2_rx_idle(struct rb2_rx *rx)
{
	RB2_STAT_ADD(&rx->stats, empty_events, 1);
	if (rx->err == 0)
		rx_check_peer(rx);
	/* Idle push: the ring is drained, so the sender may be blocked on a
	 * stale local_head; give it all the room back now. */
	if (rx->head != rx->synced_head) {
		__rb2_rx_push(rx);
		RB2_STAT_ADD(&rx->stats, idle_pushes, 1);
	}
	return rx->err == -ENOTCONN ? 0 : rx->err;
}

int
__rb2_rx_corrupt(struct rb2_rx *rx, uint64_t pos, uint32_t len)
{
	if (rx->err == 0)
		RB2_CHAN_LOG(ERR, "channel '%s' receiver: slot %" PRIu64 " holds length %u, which runs past the published tail %" PRIu64 " or the %u-byte limit: the peer wrote a corrupt ring",
			     rx->name, pos & rx->mask, len, rx->tail_seen & rx->mask,
			     rx->max_len);
	rx->err = -EPROTO;
	return -EPROTO;
}

/* ---- introspection ------------------------------------------------------- */

void
rb2_tx_pointers(const struct rb2_tx *tx, struct rb2_tx_ptrs *p)
{
	p->tail = tx->tail;
	p->synced_tail = tx->synced_tail;
	p->esc_tail = tx->esc_tail;
	p->local_head = atomic_load_explicit(tx->local_head, memory_order_acquire);
}

void
rb2_rx_pointers(const struct rb2_rx *rx, struct rb2_rx_ptrs *p)
{
	p->head = rx->head;
	p->synced_head = rx->synced_head;
	p->local_tail = atomic_load_explicit(rx->local_tail, memory_order_acquire);
}

#define COPY_STAT(n, d) \
	atomic_store_explicit(&st->n, atomic_load_explicit(&src->n, memory_order_relaxed), \
			      memory_order_relaxed);

void
rb2_tx_stats_get(const struct rb2_tx *tx, struct rb2_tx_stats *st)
{
	const struct rb2_tx_stats *src = &tx->stats;
	RB2_TX_STATS(COPY_STAT)
}

void
rb2_rx_stats_get(const struct rb2_rx *rx, struct rb2_rx_stats *st)
{
	const struct rb2_rx_stats *src = &rx->stats;
	RB2_RX_STATS(COPY_STAT)
}
