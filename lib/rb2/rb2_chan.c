/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * RB² channel: parameters, creating the two halves (one shared half and the
 * role's own layout), connecting them, teardown and introspection. The
 * per-message fast path is inline in rb2_chan.h; the slow paths are in
 * rb2_chan_tx.c, rb2_chan_rx.c and the sync policies' rb2_sync_*.c.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#if RB2_HAS_NUMA
#include <numaif.h>
#endif

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_string_fns.h>

#include <rb2_xport_lane.h>

#include "rb2_chan_pvt.h"

RTE_LOG_REGISTER(rb2_chan_logtype, rb2.chan, INFO);

struct rb2_chan_list rb2_chan_list = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.halves = TAILQ_HEAD_INITIALIZER(rb2_chan_list.halves),
};

void
rb2_chan_params_init(struct rb2_chan_params *p)
{
	memset(p, 0, sizeof(*p));
	p->slots = 1024;
	p->slot_size = 64;
	p->alpha = 32;
	p->beta = 16;
	p->gamma = 32;
	p->eager = RB2_EAGER_AUTO;
	p->head_sync = RB2_HEAD_LAZY_PUSH;
	p->tail_sync = RB2_TAIL_WRITE_TWICE;
	p->flags = RB2_CHAN_F_LAZY_HEAD;
	p->socket_id = SOCKET_ID_ANY;
	p->lcore_id = LCORE_ID_ANY;
}

int
rb2_chan_params_preset(struct rb2_chan_params *p, const char *name)
{
	uint32_t unbatched = strcmp(name, "l5") == 0 || strcmp(name, "farm") == 0 ||
			     strcmp(name, "rb2-unbatched") == 0;
	uint32_t idlepush = strcmp(name, "rb2-idlepush") == 0;
	uint32_t noeager = strcmp(name, "rb2-noeager") == 0;

	p->max_inflight = 0;
	/* Without batching every commit is published anyway. */
	p->eager = 0;
	p->flags &= ~(RB2_CHAN_F_LAZY_HEAD | RB2_CHAN_F_LEN_IN_SLOT);
	if (strcmp(name, "lean") == 0) {
		/* Latency: one WRITE per message (the message, its length in
		 * the slot's header and its marker are contiguous: no lens[],
		 * no tail), the head pushed only every half ring. */
		p->head_sync = RB2_HEAD_LAZY_PUSH;
		p->tail_sync = RB2_TAIL_POLL_MSG;
		p->alpha = p->beta = 1;
		p->gamma = RTE_MAX(1u, p->slots / 2);
		p->flags |= RB2_CHAN_F_LAZY_HEAD | RB2_CHAN_F_LEN_IN_SLOT;
		return 0;
	}
	if (strcmp(name, "socksdirect") == 0) {
		/* WRITE_WITH_IMM + CQ polling; a WRITE per message, each
		 * signaled, at most 10 in flight; the head pushed every 10. */
		p->head_sync = RB2_HEAD_LAZY_PUSH;
		p->tail_sync = RB2_TAIL_WRITE_IMM;
		p->alpha = p->beta = 1;
		p->gamma = RTE_MIN(10u, p->slots - 1);
		p->max_inflight = 10;
		/* Its ring holds each message behind a header with its size
		 * (bojieli/SocksDirect, locklessq_v2_rdma.hpp: a 16-byte
		 * element, size first, then the payload), so the length is
		 * not a WRITE of its own. */
		p->flags |= RB2_CHAN_F_LEN_IN_SLOT;
		return 0;
	}
	if (!unbatched && !idlepush && !noeager && strcmp(name, "rb2") != 0)
		return -ENOENT;
	/* rb2-unbatched keeps rb2's synchronization (lazy push, write-twice)
	 * with every threshold at 1: the paper's "batching turned off". */
	p->head_sync = strcmp(name, "l5") == 0 ? RB2_HEAD_LAZY_PULL : RB2_HEAD_LAZY_PUSH;
	p->tail_sync = strcmp(name, "farm") == 0 ? RB2_TAIL_POLL_MSG : RB2_TAIL_WRITE_TWICE;
	p->alpha = unbatched ? 1 : RTE_MIN(32u, p->slots - 1);
	p->beta = unbatched ? 1 : RTE_MIN(16u, p->alpha);
	p->gamma = unbatched ? 1 : RTE_MIN(32u, p->slots - 1);
	/* rb2 pushes its head every gamma and never because the ring drained
	 * (a sender short of room READs it when no push is due);
	 * rb2-idlepush also pushes at every drain, as before. */
	if (strcmp(name, "rb2") == 0 || noeager)
		p->flags |= RB2_CHAN_F_LAZY_HEAD;
	/* Every RB² configuration carries a message's length in its slot;
	 * L5's channel form and FaRM as the paper built it (§V-A: "the second
	 * [WRITE] writes the message length") keep lens[]. */
	if (strcmp(name, "l5") != 0 && strcmp(name, "farm") != 0)
		p->flags |= RB2_CHAN_F_LEN_IN_SLOT;
	/* rb2-noeager is rb2 with the paper's batching alone. */
	if (!unbatched && !noeager)
		p->eager = RB2_EAGER_AUTO;
	return 0;
}

uint32_t
rb2_chan_msg_overhead(const struct rb2_chan_params *p)
{
	return (p->tail_sync == RB2_TAIL_POLL_MSG ? RB2_MARKER_SIZE : 0) +
	       (rb2_chan_len_in_slot(p) ? RB2_LEN_HDR_SIZE : 0);
}

int
rb2_chan_len_in_slot(const struct rb2_chan_params *p)
{
	return (p->flags & RB2_CHAN_F_LEN_IN_SLOT) && p->msg_size == 0;
}

uint32_t
rb2_chan_max_msg(const struct rb2_chan_params *p)
{
	uint32_t most = p->slots / 2;

	if (p->msg_size != 0)
		return p->msg_size;
	/* RB2_CHAN_F_ROOM_WAKE with a lazy head: a message and its wrap skip
	 * (2 x its slots at most) leave gamma slots, so that a sender short
	 * of room is owed a push (rb2_chan_core.h). */
	if ((p->flags & (RB2_CHAN_F_ROOM_WAKE | RB2_CHAN_F_LAZY_HEAD)) ==
	    (RB2_CHAN_F_ROOM_WAKE | RB2_CHAN_F_LAZY_HEAD))
		most = RTE_MIN(most, (p->slots - p->gamma) / 2);
	return (uint32_t)((uint64_t)most * p->slot_size) - rb2_chan_msg_overhead(p);
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
	if (p->flags & ~(RB2_CHAN_F_NO_ELASTIC | RB2_CHAN_F_UNALIGNED | RB2_CHAN_F_SLEEP |
			 RB2_CHAN_F_LAZY_HEAD | RB2_CHAN_F_LEN_IN_SLOT | RB2_CHAN_F_ROOM_WAKE)) {
		WHY("invalid flags=0x%x: only RB2_CHAN_F_NO_ELASTIC, RB2_CHAN_F_UNALIGNED, RB2_CHAN_F_SLEEP, RB2_CHAN_F_LAZY_HEAD, RB2_CHAN_F_LEN_IN_SLOT and RB2_CHAN_F_ROOM_WAKE exist",
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
	if ((uint64_t)(p->slots / 2) * p->slot_size >= RB2_MSG_MARK) {
		WHY("invalid slot_size=%u with slots=%u: the largest message (slots/2 * slot_size) must stay below 2 GiB (bit 31 of a length is the sender's mark)",
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
	if ((p->flags & RB2_CHAN_F_ROOM_WAKE) && p->head_sync != RB2_HEAD_LAZY_PUSH) {
		WHY("RB2_CHAN_F_ROOM_WAKE wakes the sender with the head's push: it needs lazy push (head_sync 0), not lazy pull");
		return -EINVAL;
	}
	if ((p->flags & RB2_CHAN_F_ROOM_WAKE) && (p->flags & RB2_CHAN_F_LAZY_HEAD) &&
	    p->msg_size == 0 && (p->slots - p->gamma) / 2 == 0) {
		WHY("invalid gamma=%u with RB2_CHAN_F_ROOM_WAKE and a lazy head: a message and gamma must fit the %u slots (gamma <= slots - 2)",
		    p->gamma, p->slots);
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
	if (p->eager > RB2_EAGER_MAX && p->eager != RB2_EAGER_AUTO) {
		WHY("invalid eager=%u: at most %d commits after an idle flush are published at once (0: off; %d: %d on load/store transports, 0 over WRs)",
		    p->eager, RB2_EAGER_MAX, RB2_EAGER_AUTO, RB2_EAGER_LOADSTORE);
		return -EINVAL;
	}
	if (p->max_inflight != 0 && p->max_inflight < RB2_TX_CHAIN_MAX) {
		WHY("invalid max_inflight=%u: an admission window holds at least one transmission's %d WRs (0: no window)",
		    p->max_inflight, RB2_TX_CHAIN_MAX);
		return -EINVAL;
	}
	if (p->lane != NULL && rb2_xport_lane_window(p->lane) != 0 &&
	    rb2_xport_lane_window(p->lane) < RB2_TX_CHAIN_MAX) {
		WHY("the lane's admission window (%u WRs) cannot hold one transmission's %d WRs: give the lane max_inflight >= %d",
		    rb2_xport_lane_window(p->lane), RB2_TX_CHAIN_MAX, RB2_TX_CHAIN_MAX);
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

size_t
rb2_region_cq_off(uint32_t slots, uint32_t slot_size, uint32_t flags)
{
	return RTE_ALIGN_CEIL(rb2_region_slots_off(slots, flags) + (size_t)slots * slot_size,
			      RTE_CACHE_LINE_SIZE);
}

size_t
rb2_region_size(const struct rb2_chan_params *p, int with_ring)
{
	if (!with_ring)
		return rb2_region_slots_off(p->slots, 0);
	return rb2_region_cq_off(p->slots, p->slot_size, p->flags) +
		rb2_tail_ops_of(p)->region_extra;
}

/* ---- creating a half ----------------------------------------------------- */

/*
 * Where are the ring's pages, really? DPDK asks the kernel for the socket
 * the memzone names, but without hugepages (--no-huge) pages land where they
 * are first touched. move_pages(2) with no target nodes only reports the
 * node of each page; warn when it is not the lcore's (ablation M9 on
 * purpose, a misplaced lcore by accident). One node: nothing to check.
 */
static void
check_numa(const char *name, const char *side, const struct rb2_xport_mr *mr,
	   unsigned int lcore, int asked)
{
#if RB2_HAS_NUMA
	void *page = mr->addr;
	int node = -1;

	/* A request for another node was warned about already. */
	if (rte_socket_count() < 2 || lcore == LCORE_ID_ANY ||
	    (int)rte_lcore_to_socket_id(lcore) != asked ||
	    move_pages(0, 1, &page, NULL, &node, 0) != 0 || node < 0)
		return;
	if ((unsigned int)node != rte_lcore_to_socket_id(lcore))
		RB2_CHAN_LOG(WARNING, "channel '%s' %s: its ring is on NUMA node %d but lcore %u is on node %u: every access crosses the interconnect; pin the %s to an lcore of node %d (or give the EAL hugepages on node %u)",
			     name, side, node, lcore, rte_lcore_to_socket_id(lcore), side, node,
			     rte_lcore_to_socket_id(lcore));
#else
	RTE_SET_USED(name);
	RTE_SET_USED(side);
	RTE_SET_USED(mr);
	RTE_SET_USED(lcore);
	RTE_SET_USED(asked);
#endif
}

/*
 * What the two halves' creation shares: validate, allocate the half (of
 * @size bytes, the shared part at @h_off), register its region (with the
 * ring when @with_ring), create the lcore's queue, pick the sync policies.
 * Returns the half, or NULL with rte_errno.
 */
static void *
half_create(const char *name, struct rb2_xport *xp, const struct rb2_chan_params *in,
	    int is_tx, size_t size, size_t h_off)
{
	const char *side = is_tx ? "sender" : "receiver";
	char why[160], zname[RTE_MEMZONE_NAMESIZE];
	struct rb2_xport_qp_attr attr;
	struct rb2_chan_params p;
	struct rb2_chan_half *h;
	struct rb2_xport_mr mr;
	struct rb2_xport_qp *qp;
	unsigned int lcore;
	int ret, socket, loadstore;
	void *half;

	if (name == NULL || xp == NULL || in == NULL) {
		rte_errno = EINVAL;
		return NULL;
	}
	if (strlen(name) == 0 || strlen(name) >= RB2_CHAN_NAMESIZE) {
		RB2_CHAN_LOG(ERR, "channel name '%s' must have 1 to %d characters",
			     name, RB2_CHAN_NAMESIZE - 1);
		rte_errno = ENAMETOOLONG;
		return NULL;
	}
	ret = rb2_chan_params_check(in, why, sizeof(why));
	if (ret < 0) {
		RB2_CHAN_LOG(ERR, "channel '%s': %s", name, why);
		rte_errno = -ret;
		return NULL;
	}
	p = *in;
	if ((p.flags & RB2_CHAN_F_ROOM_WAKE) && !(rb2_xport_caps(xp) & RB2_XPORT_CAP_WAKE)) {
		RB2_CHAN_LOG(ERR, "channel '%s': RB2_CHAN_F_ROOM_WAKE needs a transport that can wake a sleeping sender; %s cannot: drop the flag, or use shm or verbs",
			     name, rb2_xport_name(xp));
		rte_errno = ENOTSUP;
		return NULL;
	}
	if ((p.flags & RB2_CHAN_F_SLEEP) && !(rb2_xport_caps(xp) & RB2_XPORT_CAP_WAKE)) {
		RB2_CHAN_LOG(ERR, "channel '%s': RB2_CHAN_F_SLEEP (adaptive polling) needs a transport that can wake a sleeping receiver; %s cannot yet: keep the receiver polling (no sleep flag), or use shm",
			     name, rb2_xport_name(xp));
		rte_errno = ENOTSUP;
		return NULL;
	}
	if (p.flags & RB2_CHAN_F_SLEEP)
		rb2_sleep_fence_init();
	loadstore = (rb2_xport_caps(xp) & RB2_XPORT_CAP_LOADSTORE) != 0;
	lcore = p.lcore_id == LCORE_ID_ANY ? rte_lcore_id() : p.lcore_id;
	socket = p.socket_id == SOCKET_ID_ANY ? rb2_xport_socket(xp) : p.socket_id;
	if (lcore != LCORE_ID_ANY && socket != SOCKET_ID_ANY &&
	    (int)rte_lcore_to_socket_id(lcore) != socket)
		RB2_CHAN_LOG(WARNING, "channel '%s' %s: lcore %u is on socket %u but the ring memory is on socket %d (the transport's); every access crosses the interconnect; pin the %s to an lcore of socket %d",
			     name, side, lcore, rte_lcore_to_socket_id(lcore),
			     socket, side, socket);

	/* A load/store sender writes straight into RB_R: its region is the
	 * control lines and its lens[] mirror only. */
	snprintf(zname, sizeof(zname), "rb2%c.%s", is_tx ? 's' : 'r', name);
	ret = rb2_xport_mr_alloc(xp, zname, rb2_region_size(&p, !(is_tx && loadstore)),
				 socket, &mr);
	if (ret < 0) {
		if (ret == -EEXIST)
			RB2_CHAN_LOG(ERR, "channel '%s' already has a %s in this process group", name, side);
		rte_errno = -ret;
		return NULL;
	}
	check_numa(name, side, &mr, lcore, socket);
	memset(&attr, 0, sizeof(attr));
	attr.lcore_id = lcore;
	attr.lane = p.lane;
	/* A hint: eight pointer-advancement periods of chains (alpha/beta + 1
	 * transmissions of at most 2 ranges x (lens + slots), and a tail).
	 * A fuller queue is reaped (rb2_chan_post()); drivers clamp to their
	 * device's limits. */
	attr.sq_depth = RTE_MAX(64u, 8 * (4 * (p.alpha / p.beta + 1) + 1));
	attr.cq_depth = 64;
	if (!is_tx && p.tail_sync == RB2_TAIL_WRITE_IMM &&
	    (rb2_xport_caps(xp) & RB2_XPORT_CAP_IMM))
		attr.recv_depth = RB2_CQ_ENTRIES; /* one per credit */
	if (!is_tx && (p.flags & RB2_CHAN_F_SLEEP)) {
		attr.wake = 1;
		if (rb2_xport_caps(xp) & RB2_XPORT_CAP_IMM)
			attr.recv_depth += RB2_WAKE_RECVS;
	}
	if (is_tx && (p.flags & RB2_CHAN_F_ROOM_WAKE)) {
		attr.wake = 1;     /* the receiver's pushes wake us */
		if (rb2_xport_caps(xp) & RB2_XPORT_CAP_IMM)
			attr.recv_depth = RB2_ROOM_WAKE_RECVS;
	}
	qp = rb2_xport_qp_create(xp, &attr);
	if (qp == NULL) {
		ret = rte_errno;
		RB2_CHAN_LOG(ERR, "channel '%s' %s: cannot create a %s queue: %s",
			     name, side, rb2_xport_name(xp), rte_strerror(ret));
		rb2_xport_mr_free(xp, &mr);
		rte_errno = ret;
		return NULL;
	}
	half = rte_zmalloc_socket(is_tx ? "rb2_tx" : "rb2_rx", size, RTE_CACHE_LINE_SIZE,
				  mr.socket_id);
	if (half == NULL) {
		rb2_xport_qp_destroy(qp);
		rb2_xport_mr_free(xp, &mr);
		rte_errno = ENOMEM;
		return NULL;
	}
	h = RTE_PTR_ADD(half, h_off);
	h->p = p;
	h->xp = xp;
	h->qp = qp;
	h->mr = mr;
	h->err = -ENOTCONN;          /* nothing moves until connected */
	h->loadstore = (uint32_t)loadstore;
	h->is_tx = (uint32_t)is_tx;
	h->head = rb2_head_ops_of(&p);
	h->tail = rb2_tail_ops_of(&p);
	strlcpy(h->name, name, sizeof(h->name));
	return half;
}

/* ---- adaptive polling's asymmetric fence (rb2_chan_pvt.h) ---------------- */

int rb2_sleep_fence_asym;
static pthread_once_t sleep_fence_once = PTHREAD_ONCE_INIT;

static void
sleep_fence_setup(void)
{
	long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);

	if (cmds < 0 || !(cmds & MEMBARRIER_CMD_GLOBAL_EXPEDITED) ||
	    syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) < 0) {
		RB2_CHAN_LOG(NOTICE, "membarrier(2) GLOBAL_EXPEDITED is not available: senders of "
			     "channels whose receivers may sleep fence at every publication");
		return;
	}
	__atomic_store_n(&rb2_sleep_fence_asym, 1, __ATOMIC_RELEASE);
}

void
rb2_sleep_fence_init(void)
{
	pthread_once(&sleep_fence_once, sleep_fence_setup);
}

void
rb2_sleep_fence_heavy(void)
{
	if (__atomic_load_n(&rb2_sleep_fence_asym, __ATOMIC_ACQUIRE) &&
	    syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0) == 0)
		return;
	atomic_thread_fence(memory_order_seq_cst);
}

/* The half is complete: list it (telemetry, name checks). */
static void
half_publish(struct rb2_chan_half *h)
{
	pthread_mutex_lock(&rb2_chan_list.lock);
	TAILQ_INSERT_TAIL(&rb2_chan_list.halves, h, next);
	pthread_mutex_unlock(&rb2_chan_list.lock);
}

static void
half_destroy(void *half, struct rb2_chan_half *h)
{
	pthread_mutex_lock(&rb2_chan_list.lock);
	TAILQ_REMOVE(&rb2_chan_list.halves, h, next);
	pthread_mutex_unlock(&rb2_chan_list.lock);
	/* The queue first: once it is gone, nothing of ours stores into the
	 * peer's region, and we can let go of it. */
	rb2_xport_qp_destroy(h->qp);
	if (h->peer_held)
		rb2_xport_peer_release(h->xp, h->peer.addr, h->peer.rkey);
	rb2_xport_mr_free(h->xp, &h->mr);
	rte_free(half);
}

struct rb2_tx *
rb2_tx_create(const char *name, struct rb2_xport *xp,
	      const struct rb2_chan_params *in)
{
	struct rb2_tx *tx = half_create(name, xp, in, 1, sizeof(*tx),
					offsetof(struct rb2_tx, h));
	const struct rb2_chan_params *p;
	void *base;

	if (tx == NULL)
		return NULL;
	p = &tx->h.p;
	base = tx->h.mr.addr;
	tx->mask = p->slots - 1;
	tx->slot_size = p->slot_size;
	tx->max_len = rb2_chan_max_msg(p);
	tx->alpha = p->alpha;
	tx->beta = p->beta;
	tx->eager = (uint8_t)(p->eager != RB2_EAGER_AUTO ? p->eager :
			      tx->h.loadstore ? RB2_EAGER_LOADSTORE : 0);
	tx->eager_left = tx->eager;
	tx->msg_size = p->msg_size;
	tx->limit = 0; /* nothing may be reserved until connected */
	tx->skip_at = UINT64_MAX;
	tx->local_head = RTE_PTR_ADD(base, RB2_REGION_PTR_OFF);
	tx->notices = RTE_PTR_ADD(base, RB2_REGION_NOTICE_OFF);
	tx->max_inflight = p->max_inflight;
	if (p->lane != NULL && rb2_xport_lane_window(p->lane) != 0) {
		/* The lane's QP has a window for all its channels: each asks
		 * it before a transmission, so that a full window defers in
		 * its ring, where messages merge (and signals every WR, as a
		 * window needs). */
		tx->lane_window = p->lane;
		tx->max_inflight = rb2_xport_lane_window(p->lane);
	}
	if (p->flags & RB2_CHAN_F_SLEEP)
		tx->rx_sleep = RTE_PTR_ADD(base, RB2_REGION_SLEEP_OFF);
	if (p->flags & RB2_CHAN_F_ROOM_WAKE)
		tx->room_bell = RTE_PTR_ADD(base, RB2_REGION_DOORBELL_OFF);
	tx->tail_shadow = RTE_PTR_ADD(base, RB2_REGION_SHADOW_OFF);
	/* lens[] always goes through the local mirror and slot transmission,
	 * even in load/store mode: stored one entry per message into the
	 * receiver's ring, its lines would bounce between the cores (the
	 * receiver's prefetcher pulls the line the sender is filling), which
	 * measured 4x slower at 64 B. */
	tx->lens = RTE_PTR_ADD(base, RB2_REGION_LENS_OFF);
	/* Fixed size: the mirror holds msg_size everywhere, so commits never
	 * store into it, and transmission leaves it out. */
	for (uint32_t i = 0; p->msg_size != 0 && i < p->slots; i++)
		tx->lens[i] = p->msg_size;
	/* Load/store: the slots are the receiver's, known at connection. */
	if (!tx->h.loadstore)
		tx->slots = RTE_PTR_ADD(base, rb2_region_slots_off(p->slots, p->flags));
	/* RB2_CHAN_F_LEN_IN_SLOT: the header before the payload (a poll
	 * message's marker is added by its policy's tx_init). */
	tx->leader = rb2_chan_len_in_slot(p) ? RB2_LEN_HDR_SIZE : 0;
	tx->trailer = tx->leader;
	if (tx->h.tail->tx_init != NULL)
		tx->h.tail->tx_init(tx);
	half_publish(&tx->h);
	return tx;
}

struct rb2_rx *
rb2_rx_create(const char *name, struct rb2_xport *xp,
	      const struct rb2_chan_params *in)
{
	struct rb2_rx *rx = half_create(name, xp, in, 0, sizeof(*rx),
					offsetof(struct rb2_rx, h));
	const struct rb2_chan_params *p;
	void *base;

	if (rx == NULL)
		return NULL;
	p = &rx->h.p;
	base = rx->h.mr.addr;
	rx->mask = p->slots - 1;
	rx->slot_size = p->slot_size;
	rx->gamma = p->gamma;
	rx->max_len = rb2_chan_max_msg(p);
	rx->msg_size = p->msg_size;
	rx->leader = rb2_chan_len_in_slot(p) ? RB2_LEN_HDR_SIZE : 0;
	/* A fixed-size channel's messages fill their slot; the others learn
	 * it from the messages (rb2_rx_peek_burst()). */
	rx->idle_lines = RTE_MIN(RB2_IDLE_LINES_MAX,
				 rx->msg_size != 0 ? RTE_ALIGN_CEIL(rx->slot_size, RTE_CACHE_LINE_SIZE) /
				 RTE_CACHE_LINE_SIZE : 1u);
	rx->local_tail = RTE_PTR_ADD(base, RB2_REGION_PTR_OFF);
	rx->head_shadow = RTE_PTR_ADD(base, RB2_REGION_SHADOW_OFF);
	rx->head_shadow[RB2_PULL_CHECK] = ~0ull; /* head 0, published */
	rx->lens = RTE_PTR_ADD(base, RB2_REGION_LENS_OFF);
	rx->slots = RTE_PTR_ADD(base, rb2_region_slots_off(p->slots, p->flags));
	if (p->flags & RB2_CHAN_F_SLEEP)
		rx->doorbell = RTE_PTR_ADD(base, RB2_REGION_DOORBELL_OFF);
	if (p->msg_size != 0) {
		/* Fixed size: lengths are known, read from local memory. */
		rx->own_lens = rte_malloc_socket("rb2_rx_lens",
						 (size_t)p->slots * sizeof(uint32_t),
						 RTE_CACHE_LINE_SIZE, rx->h.mr.socket_id);
		if (rx->own_lens == NULL) {
			half_destroy(rx, &rx->h);
			rte_errno = ENOMEM;
			return NULL;
		}
		for (uint32_t i = 0; i < p->slots; i++)
			rx->own_lens[i] = p->msg_size;
		rx->lens = rx->own_lens;
	}
	if (rx->h.tail->rx_init != NULL)
		rx->h.tail->rx_init(rx);
	half_publish(&rx->h);
	return rx;
}

int
rb2_tx_drain(struct rb2_tx *tx)
{
	int ret = rb2_tx_flush(tx);

	if (ret < 0)
		return ret;
	if (tx->room_bell != NULL)
		rb2_tx_fence(tx);       /* no READ on such a channel */
	else if (tx->peer_head_pub == NULL)
		(void)rb2_tx_read_head(tx, atomic_load_explicit(tx->local_head,
								memory_order_relaxed));
	return tx->h.err;
}

int
rb2_tx_drain_start(struct rb2_tx *tx)
{
	int ret = rb2_tx_flush_or_defer(tx);

	if (ret < 0)
		return ret;
	tx->drain_until = 0;
	if (tx->peer_head_pub != NULL && tx->room_bell == NULL)
		return 0;                /* load/store: landed as written */
	/* The fence on every remote channel, where rb2_tx_drain() READs the
	 * head on some: a READ's answer would have to be waited for, and
	 * the fence's completion proves as much. */
	ret = rb2_tx_fence_post(tx);
	if (ret == 0)
		tx->drain_until = rte_get_timer_cycles() +
				  rte_get_timer_hz() * RB2_POST_WAIT_MS / 1000;
	return ret;
}

int
rb2_tx_drain_done(struct rb2_tx *tx)
{
	if (tx->drain_until == 0)
		return tx->h.err != 0 ? tx->h.err : 1;
	if (rb2_tx_reap(&tx->h) != 0)
		return tx->h.err;
	if (tx->pull_inflight == 0) {
		tx->drain_until = 0;
		return 1;
	}
	if (rte_get_timer_cycles() > tx->drain_until)
		rb2_tx_fail(tx, -ETIMEDOUT, RB2_FENCE_LATE);
	return tx->h.err;
}

void
rb2_tx_destroy(struct rb2_tx *tx)
{
	if (tx == NULL)
		return;
	if (tx->h.err == 0)
		rb2_tx_flush(tx);
	half_destroy(tx, &tx->h);
}

void
rb2_rx_destroy(struct rb2_rx *rx)
{
	if (rx == NULL)
		return;
	rte_free(rx->own_lens);
	half_destroy(rx, &rx->h);
}

/* ---- connecting ---------------------------------------------------------- */

static void
fill_desc(struct rb2_chan_desc *d, const struct rb2_chan_half *h)
{
	const struct rb2_chan_params *p = &h->p;

	memset(d, 0, sizeof(*d));
	d->magic = RB2_DESC_MAGIC;
	d->version = RB2_DESC_VERSION;
	d->role = (uint8_t)h->is_tx;
	d->policy = (uint8_t)(p->head_sync | (p->tail_sync << 4));
	d->slots = p->slots;
	d->slot_size = p->slot_size;
	d->alpha = p->alpha;
	d->beta = p->beta;
	d->gamma = p->gamma;
	d->rkey = h->mr.rkey;
	d->addr = (uint64_t)(uintptr_t)h->mr.addr;
	d->len = h->mr.len;
	d->msg_size = p->msg_size;
	/* LAZY_HEAD travels too, not to be matched: a receiver's tells its
	 * sender to keep its messages smaller (tx_attach()). */
	d->flags = p->flags & (RB2_CHAN_F_WIRE | RB2_CHAN_F_LAZY_HEAD);
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
	if ((d.flags & ~RB2_CHAN_F_LAZY_HEAD) != (p->flags & RB2_CHAN_F_WIRE)) {
		WHYD("peer flags 0x%x differ from ours 0x%x (both halves must set RB2_CHAN_F_UNALIGNED, RB2_CHAN_F_SLEEP, RB2_CHAN_F_LEN_IN_SLOT and RB2_CHAN_F_ROOM_WAKE alike)",
		     d.flags & ~RB2_CHAN_F_LAZY_HEAD, p->flags & RB2_CHAN_F_WIRE);
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
	need = rb2_region_size(p, role == 0); /* p's geometry and flags are d's */
	if (d.addr == 0 || d.addr % RTE_CACHE_LINE_SIZE != 0 || d.len < need) {
		WHYD("peer region 0x%" PRIx64 "+%" PRIu64 " is misaligned or smaller than the %zu bytes its ring needs",
		     d.addr, d.len, need);
		return -EPROTO;
	}
	return 0;
}

/* We store into the peer's region from now on: keep it allocated until we
 * are destroyed (on shm nothing else would stop a late store from landing in
 * memory the group has reused; rb2_xport_peer_hold()). */
static int
peer_hold(struct rb2_chan_half *h, const struct rb2_chan_desc *peer)
{
	int ret;

	if (h->peer_held) {
		RB2_CHAN_LOG(ERR, "channel '%s' is already connected", h->name);
		return -EISCONN;
	}
	ret = rb2_xport_peer_hold(h->xp, peer->addr, peer->rkey);
	if (ret < 0) {
		RB2_CHAN_LOG(ERR, "channel '%s': the peer's ring at 0x%" PRIx64 " %s", h->name,
			     peer->addr, ret == -EBUSY ? "is already held by another sender or receiver" :
			     "is gone (its owner destroyed it before we connected)");
		return ret;
	}
	h->peer = *peer;
	h->peer_held = 1;
	return 0;
}

/* A sleeping half's wake-ups are receive completions where there are
 * (RB2_XPORT_CAP_IMM): post @n receives for them, once (*@posted). */
static int
post_wake_recvs(struct rb2_chan_half *h, uint32_t *posted, uint32_t n, const char *what)
{
	int ret;

	if (!(rb2_xport_caps(h->xp) & RB2_XPORT_CAP_IMM) || *posted != 0)
		return 0;
	ret = rb2_xport_post_recv(h->qp, n);
	if (ret < 0) {
		RB2_CHAN_LOG(ERR, "channel '%s': posting %u receives for %s: %s", h->name, n, what,
			     rte_strerror(-ret));
		return ret;
	}
	*posted = n;
	return 0;
}

/* Both halves know their peer: derive remote addresses and go live. */
static int
tx_attach(struct rb2_tx *tx, const struct rb2_chan_desc *peer)
{
	void *base = NULL;
	int ret = peer_hold(&tx->h, peer);

	if (ret < 0)
		return ret;
	if (tx->h.loadstore) {
		base = rb2_xport_peer_ptr(tx->h.qp, peer->addr, peer->rkey, peer->len);
		if (base == NULL) {
			RB2_CHAN_LOG(ERR, "channel '%s': cannot map the receiver's ring for load/store",
				     tx->h.name);
			return -EFAULT;
		}
		tx->slots = RTE_PTR_ADD(base, rb2_region_slots_off(peer->slots, peer->flags));
		tx->peer_lens = RTE_PTR_ADD(base, RB2_REGION_LENS_OFF);
		tx->peer_tail = RTE_PTR_ADD(base, RB2_REGION_PTR_OFF);
		tx->peer_head_pub = RTE_PTR_ADD(base, RB2_REGION_SHADOW_OFF);
	}
	/* A receiver with RB2_CHAN_F_LAZY_HEAD does not push its head when it
	 * drains: when no push is due, we READ it (__rb2_tx_make_room()). */
	tx->peer_gamma = peer->flags & RB2_CHAN_F_LAZY_HEAD ? RTE_MAX(peer->gamma, 1u) : 0;
	if (tx->room_bell != NULL) {
		/* Its pushes wake us: no READ ever. What we may send leaves
		 * its gamma (rb2_chan_max_msg(), with the receiver's). */
		if (tx->peer_gamma != 0) {
			struct rb2_chan_params q = tx->h.p;

			q.slots = peer->slots;
			q.gamma = peer->gamma;
			q.flags |= RB2_CHAN_F_LAZY_HEAD;
			tx->max_len = RTE_MIN(tx->max_len, rb2_chan_max_msg(&q));
		}
		tx->peer_gamma = 0;
		ret = post_wake_recvs(&tx->h, &tx->wake_recvs, RB2_ROOM_WAKE_RECVS, "room wake-ups");
		if (ret < 0)
			return ret;
	}
	if (tx->h.tail->tx_attach != NULL)
		tx->h.tail->tx_attach(tx, base);
	/* Capacity N - 1: full when tail - local_head == N - 1. */
	tx->limit = atomic_load_explicit(tx->local_head, memory_order_acquire) + tx->mask;
	tx->h.err = 0;
	return 0;
}

static int
rx_attach(struct rb2_rx *rx, const struct rb2_chan_desc *peer)
{
	int ret = peer_hold(&rx->h, peer);

	if (ret < 0)
		return ret;
	rx->peer_head = NULL;
	if (rx->h.loadstore) {
		rx->peer_head = rb2_xport_peer_ptr(rx->h.qp, peer->addr + RB2_REGION_PTR_OFF,
						   peer->rkey, sizeof(uint64_t));
		rx->peer_notices = rb2_xport_peer_ptr(rx->h.qp, peer->addr + RB2_REGION_NOTICE_OFF,
						      peer->rkey, sizeof(uint64_t));
		rx->peer_sleep = rb2_xport_peer_ptr(rx->h.qp, peer->addr + RB2_REGION_SLEEP_OFF,
						    peer->rkey, sizeof(uint64_t));
	}
	if (rx->h.tail->rx_attach != NULL && (ret = rx->h.tail->rx_attach(rx)) < 0)
		return ret;
	/* A sleeper's wake-ups are receive completions where there are. */
	if (rx->doorbell != NULL &&
	    (ret = post_wake_recvs(&rx->h, &rx->wake_recvs, RB2_WAKE_RECVS, "wake-ups")) < 0)
		return ret;
	rx->h.err = 0;
	return 0;
}

int
rb2_chan_pair(struct rb2_tx *tx, struct rb2_rx *rx)
{
	struct rb2_chan_desc dt, dr;
	char why[160];
	int ret;

	if (tx == NULL || rx == NULL || tx->h.xp != rx->h.xp)
		return -EINVAL;
	fill_desc(&dt, &tx->h);
	fill_desc(&dr, &rx->h);
	if (rb2_chan_desc_check(&dr, sizeof(dr), 0, &tx->h.p, why, sizeof(why)) < 0 ||
	    rb2_chan_desc_check(&dt, sizeof(dt), 1, &rx->h.p, why, sizeof(why)) < 0) {
		RB2_CHAN_LOG(ERR, "cannot pair '%s' with '%s': %s", tx->h.name,
			     rx->h.name, why);
		return -EINVAL;
	}
	ret = rb2_xport_qp_connect_local(tx->h.qp, rx->h.qp);
	if (ret < 0)
		return ret;
	ret = tx_attach(tx, &dr);
	if (ret < 0)
		return ret;
	return rx_attach(rx, &dt);
}

/* The peer's descriptor @blob (@n bytes) for half @h, checked, into @out. */
static int
half_peer_desc(struct rb2_chan_half *h, const char *peer, const void *blob, size_t n,
	       struct rb2_chan_desc *out)
{
	char why[160];

	if (rb2_chan_desc_check(blob, n, !h->is_tx, &h->p, why, sizeof(why)) < 0) {
		RB2_CHAN_LOG(ERR, "channel '%s': refusing peer '%s': %s", h->name, peer, why);
		return -ECONNREFUSED;
	}
	memcpy(out, blob, sizeof(*out));
	return 0;
}

/* Exchange descriptors with the peer through the transport's rendezvous. */
static int
half_connect(struct rb2_chan_half *h, const char *peer, unsigned int timeout_ms,
	     struct rb2_chan_desc *out)
{
	struct rb2_chan_desc mine;
	uint8_t blob[RB2_XPORT_BLOB_MAX];
	int n;

	fill_desc(&mine, h);
	n = rb2_xport_qp_exchange(h->qp, peer, h->is_tx ? RB2_XPORT_ACTIVE : RB2_XPORT_PASSIVE,
				  &mine, sizeof(mine), blob, sizeof(blob), timeout_ms);
	if (n < 0) {
		RB2_CHAN_LOG(ERR, "channel '%s': connecting to '%s' failed: %s",
			     h->name, peer, rte_strerror(-n));
		return n;
	}
	return half_peer_desc(h, peer, blob, (size_t)n, out);
}

int
rb2_chan_connect_both(struct rb2_tx *tx, struct rb2_rx *rx, int active, const char *peer,
		      struct rb2_xport_exch *more, unsigned int n_more, unsigned int timeout_ms)
{
	enum { MOST = 8 };
	struct rb2_xport_exch x[MOST];
	struct rb2_chan_desc mine[2], theirs[2];
	uint8_t blob[2][RB2_XPORT_BLOB_MAX];
	struct rb2_chan_half *h[2];
	int ret;

	if (tx == NULL || rx == NULL || peer == NULL || (n_more > 0 && more == NULL))
		return -EINVAL;
	if (n_more > MOST - 2)
		return -E2BIG;
	h[0] = active ? &tx->h : &rx->h;
	h[1] = active ? &rx->h : &tx->h;
	for (unsigned int i = 0; i < 2; i++) {
		fill_desc(&mine[i], h[i]);
		x[i] = (struct rb2_xport_exch){
			.qp = h[i]->qp, .role = h[i]->is_tx ? RB2_XPORT_ACTIVE : RB2_XPORT_PASSIVE,
			.blob = &mine[i], .len = sizeof(mine[i]),
			.peer_blob = blob[i], .peer_cap = sizeof(blob[i]) };
	}
	if (n_more > 0)
		memcpy(&x[2], more, n_more * sizeof(*more));
	ret = rb2_xport_qp_exchange_n(x, 2 + n_more, peer, timeout_ms);
	if (ret < 0) {
		RB2_CHAN_LOG(ERR, "channels '%s' and '%s': connecting to '%s' failed: %s",
			     tx->h.name, rx->h.name, peer, rte_strerror(-ret));
		return ret;
	}
	if (n_more > 0)
		memcpy(more, &x[2], n_more * sizeof(*more));
	for (unsigned int i = 0; i < 2; i++)
		if ((ret = half_peer_desc(h[i], peer, blob[i], (size_t)x[i].peer_len,
					  &theirs[i])) < 0)
			return ret;
	ret = tx_attach(tx, &theirs[active ? 0 : 1]);
	return ret < 0 ? ret : rx_attach(rx, &theirs[active ? 1 : 0]);
}

int
rb2_tx_connect(struct rb2_tx *tx, const char *peer, unsigned int timeout_ms)
{
	struct rb2_chan_desc d;
	int ret;

	if (tx == NULL || peer == NULL)
		return -EINVAL;
	ret = half_connect(&tx->h, peer, timeout_ms, &d);
	return ret < 0 ? ret : tx_attach(tx, &d);
}

int
rb2_rx_connect(struct rb2_rx *rx, const char *peer, unsigned int timeout_ms)
{
	struct rb2_chan_desc d;
	int ret;

	if (rx == NULL || peer == NULL)
		return -EINVAL;
	ret = half_connect(&rx->h, peer, timeout_ms, &d);
	return ret < 0 ? ret : rx_attach(rx, &d);
}

int
__rb2_chan_peer_check_clock(struct rb2_chan_half *h)
{
	uint64_t now = rte_get_timer_cycles();
	int ret;

	if (now < h->next_check)
		return 0;
	h->next_check = now + rte_get_timer_hz() / (1000000 / RB2_STATUS_CHECK_US);
	ret = rb2_xport_qp_status(h->qp);
	return ret == -ENOTCONN ? 0 : ret;
}

void
rb2_msg_copy_long(void *dst, const void *src, size_t n)
{
	memcpy(dst, src, n);
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
