/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * The "loop" transport: the smallest complete driver, and the one to copy
 * when writing a new one. Its "NIC" is the posting lcore itself: a WR chain
 * executes at the doorbell, in order, between queues of one process, over
 * plain DPDK heap memory. Everything RB² needs is here; nothing else is.
 *
 * To write a driver: copy this folder to drivers/xport/NAME/, rename, and
 * fill in the ops. The build finds the folder by itself (its meson.build only
 * lists sources and deps, and may switch the driver off with a reason).
 * What each op must do is in lib/xport/rb2_xport_driver.h; ops left out
 * default to -ENOTSUP. tests/test_xport.c and tests/test_property.c run
 * every registered driver that can pair two local queues.
 *
 * One argument, for tests: "lag=N" lets a queue's polls find its completions
 * only every N-th time, as a NIC that takes its time. A WR still executes
 * at the doorbell; only its completion is late, so admission windows, which
 * count completions, bind here as they do across a wire.
 */

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <rte_lcore.h>
#include <rte_malloc.h>

#include <rb2_xport_driver.h>

/* A queue's completions of signaled WRs. Only its lcore posts and polls. */
struct loop_qp {
	uint32_t mask, head, tail;
	uint32_t lag, polls;        /* "lag=N": completions seen every N-th poll */
	struct rb2_xport_wc cq[];
};

struct loop_priv {
	uint32_t lag;
};

static int
loop_open(struct rb2_xport *xp, const char *args)
{
	static const char *const keys[] = {"lag", NULL};
	struct loop_priv *priv;
	char val[16], *end;
	unsigned long lag = 1;
	int ret = rb2_xport_args_check("loop", args, keys);

	if (ret < 0)
		return ret;
	ret = rb2_xport_arg(args, "lag", val, sizeof(val));
	if (ret != 0) {
		errno = 0;
		lag = ret > 0 ? strtoul(val, &end, 10) : 0;
		if (ret < 0 || errno != 0 || *end != '\0' || lag < 1 || lag > 1000000) {
			RB2_XPORT_LOG(ERR, "loop: bad lag '%s': use lag=N, 1 <= N <= 1000000 (polls per completion seen)",
				      ret > 0 ? val : "(too long)");
			return -EINVAL;
		}
	}
	priv = rte_zmalloc("loop_priv", sizeof(*priv), 0);
	if (priv == NULL)
		return -ENOMEM;
	priv->lag = (uint32_t)lag;
	xp->priv = priv;
	xp->caps = RB2_XPORT_CAP_READ;
	xp->socket_id = (int)rte_socket_id();
	return 0;
}

static void
loop_close(struct rb2_xport *xp)
{
	rte_free(xp->priv);
	xp->priv = NULL;
}

/*
 * A region (ring memory) starts one cache line after its header. The header
 * counts who may still store into it: its owner, and the peer half that
 * holds it (loop_peer_hold()). A NIC revokes a freed region's key, so a
 * late WRITE fails; here the WRITE is a store, so the memory itself must
 * outlive the last queue that may write into it. A lane flushes a queue's
 * waiting WRs when that queue is destroyed, which may be after the peer
 * half freed its ring: the hold keeps that ring allocated until then.
 */
#define LOOP_REGION_MAGIC 0x6c6f6f7052454731ull /* "loopREG1" */

struct loop_region {
	_Atomic uint64_t magic;
	_Atomic uint32_t refs;      /* the owner, and the holder if any */
	_Atomic uint32_t held;      /* a peer holds it (one at a time) */
	uint32_t rkey;
};

static _Atomic uint32_t loop_next_key; /* both halves' lcores register */

static uint32_t
loop_key(void)
{
	return atomic_fetch_add_explicit(&loop_next_key, 1, memory_order_relaxed) + 1;
}

static void
region_put(struct loop_region *r)
{
	if (atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) == 1) {
		atomic_store_explicit(&r->magic, 0, memory_order_relaxed);
		rte_free(r);
	}
}

static struct loop_region *
region_lookup(uint64_t remote, uint32_t rkey)
{
	struct loop_region *r;

	if (remote < RTE_CACHE_LINE_SIZE || remote % RTE_CACHE_LINE_SIZE != 0)
		return NULL;
	r = (struct loop_region *)(uintptr_t)(remote - RTE_CACHE_LINE_SIZE);
	if (atomic_load_explicit(&r->magic, memory_order_relaxed) != LOOP_REGION_MAGIC ||
	    r->rkey != rkey)
		return NULL;
	return r;
}

static int
loop_mr_alloc(struct rb2_xport *xp __rte_unused, const char *name, size_t len, int socket,
	      struct rb2_xport_mr *mr)
{
	size_t size = RTE_CACHE_LINE_SIZE + len;
	struct loop_region *r = rte_zmalloc_socket(name, size, RTE_CACHE_LINE_SIZE, socket);

	if (r == NULL)
		r = rte_zmalloc(name, size, RTE_CACHE_LINE_SIZE);
	if (r == NULL)
		return -ENOMEM;
	r->rkey = loop_key();
	atomic_store_explicit(&r->refs, 1, memory_order_relaxed);
	atomic_store_explicit(&r->magic, LOOP_REGION_MAGIC, memory_order_release);
	mr->addr = (uint8_t *)r + RTE_CACHE_LINE_SIZE;
	mr->len = len;
	mr->lkey = mr->rkey = r->rkey;
	mr->socket_id = socket;
	return 0;
}

static void
loop_mr_free(struct rb2_xport *xp __rte_unused, struct rb2_xport_mr *mr)
{
	region_put((struct loop_region *)((uint8_t *)mr->addr - RTE_CACHE_LINE_SIZE));
}

/* One holder at a time, as on shm: the half paired with the region's
 * owner. A holder keeps it after the owner's free (refs 1), until it lets
 * go; a second holder is refused all the same. The reference first: a
 * failed compare-exchange stores nothing, so a region freed meanwhile is
 * never written. */
static int
loop_peer_hold(struct rb2_xport *xp __rte_unused, uint64_t remote, uint32_t rkey)
{
	struct loop_region *r = region_lookup(remote, rkey);
	uint32_t one = 1, nobody = 0;

	if (r == NULL)
		return -ESTALE;
	if (!atomic_compare_exchange_strong_explicit(&r->refs, &one, 2, memory_order_acq_rel,
						     memory_order_relaxed))
		return one == 0 ? -ESTALE : -EBUSY;
	if (!atomic_compare_exchange_strong_explicit(&r->held, &nobody, 1, memory_order_relaxed,
						     memory_order_relaxed)) {
		region_put(r);  /* its owner gone, another half holds it */
		return -EBUSY;
	}
	return 0;
}

static void
loop_peer_release(struct rb2_xport *xp __rte_unused, uint64_t remote, uint32_t rkey)
{
	struct loop_region *r = region_lookup(remote, rkey);

	if (r != NULL)
		region_put(r);
}

/* The application's memory: nothing to pin; a key names the region, so
 * that a cache's segments can be told apart. */
static int
loop_mr_reg(struct rb2_xport *xp __rte_unused, void *addr, size_t len,
	    struct rb2_xport_mr *mr)
{
	mr->addr = addr;
	mr->len = len;
	mr->lkey = mr->rkey = loop_key();
	mr->socket_id = SOCKET_ID_ANY;
	return 0;
}

static void
loop_mr_dereg(struct rb2_xport *xp __rte_unused, struct rb2_xport_mr *mr __rte_unused)
{
}

/*
 * The doorbell. A NIC lands a WRITE front to back, each byte once, and the
 * WRs of a queue in order (RC); so do rb2_xport_dma_write() and
 * rb2_xport_dma_read(), WR after WR (their release stores and acquire loads
 * are what the peer's acquire of a pointer pairs with). All or nothing: a
 * chain that cannot complete is refused before any of it runs.
 */
static int
loop_post(struct rb2_xport_qp *qp, const struct rb2_xport_wr *wrs, unsigned int n)
{
	struct loop_qp *q = qp->drv;
	unsigned int signaled = 0;

	for (unsigned int i = 0; i < n; i++) {
		if (wrs[i].opcode != RB2_WR_WRITE && wrs[i].opcode != RB2_WR_READ)
			return -ENOTSUP;
		signaled += (wrs[i].flags & RB2_WR_SIGNALED) != 0;
	}
	if (signaled > q->mask + 1 - (q->tail - q->head))
		return -ENOSPC;
	for (unsigned int i = 0; i < n; i++) {
		const struct rb2_xport_wr *wr = &wrs[i];
		void *remote = (void *)(uintptr_t)wr->remote;

		if (wr->opcode == RB2_WR_READ)
			rb2_xport_dma_read(wr->local, remote, wr->len);
		else
			rb2_xport_dma_write(remote, wr->local, wr->len);
		if (wr->flags & RB2_WR_SIGNALED)
			q->cq[q->tail++ & q->mask] = (struct rb2_xport_wc){
				.wr_id = wr->wr_id, .status = RB2_WC_SUCCESS,
				.opcode = wr->opcode, .byte_len = wr->len,
			};
	}
	return 0;
}

static int
loop_poll(struct rb2_xport_qp *qp, struct rb2_xport_wc *wcs, unsigned int n)
{
	struct loop_qp *q = qp->drv;
	unsigned int i = 0;

	if (q->lag > 1 && ++q->polls % q->lag != 0)
		return 0;         /* the NIC has not got there yet */

	while (i < n && q->head != q->tail)
		wcs[i++] = q->cq[q->head++ & q->mask];
	return (int)i;
}

static int
loop_qp_create(struct rb2_xport *xp, struct rb2_xport_qp *qp,
	       const struct rb2_xport_qp_attr *attr)
{
	uint32_t depth = rte_align32pow2(attr->cq_depth ? attr->cq_depth : 256);
	struct loop_qp *q = rte_zmalloc("loop_qp", sizeof(*q) + depth * sizeof(q->cq[0]),
					RTE_CACHE_LINE_SIZE);

	if (q == NULL)
		return -ENOMEM;
	q->mask = depth - 1;
	q->lag = ((const struct loop_priv *)xp->priv)->lag;
	qp->drv = q;
	qp->cq_depth = depth;
	qp->sq_depth = attr->sq_depth ? attr->sq_depth : 1024;
	qp->max_inline = 256;
	return 0;
}

static void
loop_qp_destroy(struct rb2_xport_qp *qp)
{
	rte_free(qp->drv);
}

/* Connecting is where a queue goes live: post and poll are set here. */
static int
loop_qp_connect_local(struct rb2_xport_qp *a, struct rb2_xport_qp *b)
{
	struct rb2_xport_qp *qps[2] = {a, b};

	for (int i = 0; i < 2; i++) {
		qps[i]->post = loop_post;
		qps[i]->poll = loop_poll;
		qps[i]->connected = 1;
	}
	return 0;
}

static const struct rb2_xport_ops loop_ops = {
	.open = loop_open,
	.close = loop_close,
	.mr_alloc = loop_mr_alloc,
	.mr_free = loop_mr_free,
	.mr_reg = loop_mr_reg,            /* optional */
	.mr_dereg = loop_mr_dereg,
	.peer_hold = loop_peer_hold,      /* optional: where memory outlives no key */
	.peer_release = loop_peer_release,
	.qp_create = loop_qp_create,
	.qp_destroy = loop_qp_destroy,
	.qp_connect_local = loop_qp_connect_local,
};

RB2_XPORT_REGISTER(loop, loop_ops);
