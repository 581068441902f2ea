/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * The verbs transport, on rdma-core: one RC QP per lcore per peer, connected
 * with librdmacm; WR chains linked and posted with one ibv_post_send (one
 * doorbell); IBV_SEND_INLINE when the payload fits max_inline_data; only the
 * WRs the caller asks for are signaled, plus one every sq_depth/2 so the
 * send queue recycles (those completions are swallowed here).
 *
 * Incoming WRITE_WITH_IMM consume receives posted with rb2_xport_post_recv()
 * (zero-length: the immediate is the message) and complete as
 * RB2_WC_RECV_IMM on the same poll as the send completions.
 *
 * Two queues of one process (rb2_chan_pair(), rb2-perf on one host) are
 * connected directly, without rdma_cm: both QPs are moved to RTS with each
 * other's QP number and the device's own GID, the loopback path perftest
 * also takes.
 *
 * A sleeping receiver (RB2_XPORT_CAP_WAKE): its queue's CQ has a completion
 * channel; it arms the CQ (ibv_req_notify_cq) and sleeps on the channel's
 * descriptor; a sender's RB2_WR_WAKE is a zero-length WRITE_WITH_IMM of
 * RB2_IMM_WAKE, whose receive completion raises the channel (RDMAbox's
 * event mode: a one-sided WRITE alone completes nowhere on the receiver).
 *
 * Liveness: a peer that exits is reported by rdma_cm (DISCONNECTED); a peer
 * that goes with its host (a power cut, a killed VM) sends nothing, and its
 * QP only learns when a WR's retries run out. So the status check, which an
 * idle channel makes, also probes the peer every VERBS_PROBE_MS (see
 * verbs_probe()): a dead peer is reported within about a second.
 *
 * Open arguments: dev=NAME (default: the first device with an active port),
 * port=N (default 1), gid=N (default: the IPv4-mapped RoCE GID), srq=N,
 * cm=0 (no rdma_cm: a device context of the transport's own, whose queues
 * connect over the caller's socket, "fd:N", or locally; see open_own()),
 * ack_timeout=N (the QPs it connects without rdma_cm wait 4.096 us x 2^N
 * for an ACK, VERBS_RETRY_CNT times, before they fail; default 14: 67 ms),
 * retry_cnt=N (their retries, 1..7, default VERBS_RETRY_CNT; 7 is "without
 * limit" on Soft-RoCE: for a caller that learns of a dead peer another way),
 * rearm=1 (arm a sleeper's CQ at every sleep, even with an arm outstanding:
 * for comparison; see verbs_doorbell_arm()), readall=1 (a sleeper reads
 * its completion channel when it wakes, whether its wait saw it ready or
 * not: for comparison; see verbs_doorbell_leave()), onebyone=1 (queues
 * connected together over "fd:N" go one exchange each, one round trip
 * each: for comparison; both sides must say so; see
 * verbs_qp_exchange_fd_n()).
 *
 * srq=N: the queues that take receives (WRITE_WITH_IMM tail sync, sleepers'
 * wake-ups) share one shared receive queue of N entries instead of a
 * receive queue each (RaaS's receive side). Each queue still posts what its
 * channel's credits need, so no sender ever meets an empty SRQ; the
 * receives a destroyed queue leaves in it go to the next queue's posts
 * (verbs_qp_destroy() counts them once the QP is in error and its CQ
 * drained: an SRQ's entries are not flushed).
 *
 * Fault injection, for tests: RB2_VERBS_INJECT_QP_ERROR_MS=N moves each QP
 * to the error state N ms after it connects, as a NIC or driver fault would.
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_memzone.h>
#include <rte_random.h>
#include <rte_spinlock.h>

#include <rb2_xport_driver.h>
#include <rb2_xport_oob.h>

#include "rb2_xport_verbs.h"

#define VERBS_MAX_CHAIN 64     /* WRs in one doorbell (a lane posts longer chains in pieces) */
#define VERBS_INTERNAL_WRID (1ull << 63) /* forced-signal completions */
#define VERBS_RECV_WRID (1ull << 62)     /* receives for WRITE_WITH_IMM */
#define VERBS_CM_TIMEOUT_MS 2000
#define VERBS_PROBE_MS 100     /* liveness probes of an idle QP */
#define VERBS_ACK_TIMEOUT 14   /* 4.096 us x 2^14: 67 ms per retry */
/* Retries before a WR without an ACK fails the QP. Not 7: Soft-RoCE takes 7
 * as "retry forever" (as the spec does for the RNR retry count only), and a
 * peer whose host died would never be reported. */
#define VERBS_RETRY_CNT 6

struct verbs_dev {
	struct ibv_context **list;  /* rdma_get_devices(), for rdma_free_devices() */
	struct ibv_context *ctx;    /* the chosen device (shared with rdma_cm, unless own) */
	int own;                    /* cm=0: ctx is ours alone (ibv_open_device()) */
	uint8_t ack_timeout;        /* ack_timeout=N of the QPs it connects directly */
	uint8_t retry_cnt;          /* retry_cnt=N of those */
	uint8_t rearm;              /* rearm=1: arm CQs at every sleep */
	uint8_t readall;            /* readall=1: a leave reads the channel as a done */
	uint8_t onebyone;           /* onebyone=1: "fd:N" queues one exchange each */
	struct ibv_pd *pd;
	struct ibv_device_attr attr;
	uint8_t port;
	int gid_index;
	int numa_node;
	/* srq=N: the shared receive queue, and the receives in it that no
	 * live queue counts as its own (left by destroyed ones). Posted to
	 * by every lcore with a queue on it, so under the lock. */
	struct ibv_srq *srq;
	uint32_t srq_size;
	rte_spinlock_t srq_lock;
	uint64_t srq_spare;
};

/* Per-queue state. Only the owning lcore posts and polls. */
struct verbs_qp {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct rdma_cm_id *id;        /* connected id */
	struct rdma_cm_id *listen_id; /* passive side, until accepted */
	struct rdma_event_channel *ec;
	struct rb2_verbs_sq sq;       /* send-queue accounting */
	struct ibv_comp_channel *cc;  /* attr.wake: the sleeper's channel, or NULL */
	unsigned int cc_events;       /* events got, not yet acknowledged */
	/* Sleepers may be threads of their own (rb2-run's streams), so arm
	 * and done are under cc_lock (a mutex: both make system calls under
	 * it). cc_armed: the CQ was armed and no event
	 * has been got since, so a completion raises the channel, or has
	 * (verbs_doorbell_arm()). cc_sleepers: arms not yet done. */
	pthread_mutex_t cc_lock;
	uint8_t cc_armed;
	uint32_t cc_sleepers;
	uint32_t recv_depth;          /* receives that may be posted */
	uint8_t on_srq;               /* its receives are the device's SRQ's */
	uint64_t srq_held;            /* ... posted for it there, not yet consumed */
	int failed;                   /* -errno once the QP is unusable */
	uint64_t next_probe;          /* TSC of the next liveness probe */
	uint64_t probed;              /* probes posted */
	/* Completions a probe reaped for the caller, returned first. */
	struct rb2_xport_wc stash[16];
	unsigned int nstash, stash_head;
	uint64_t inject_err;          /* TSC to move the QP to error (tests), or 0 */
	struct ibv_send_wr wr[VERBS_MAX_CHAIN];
	struct ibv_sge sge[VERBS_MAX_CHAIN];
};

/* ---- device ------------------------------------------------------------------ */

static int
port_active(struct ibv_context *ctx, uint8_t port)
{
	struct ibv_port_attr pa;

	return ibv_query_port(ctx, port, &pa) == 0 && pa.state == IBV_PORT_ACTIVE;
}

/* The IPv4-mapped RoCE v2 GID (::ffff:a.b.c.d), or -1. */
static int
ipv4_gid_index(struct ibv_context *ctx, uint8_t port)
{
	struct ibv_port_attr pa;

	if (ibv_query_port(ctx, port, &pa) != 0)
		return -1;
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		union ibv_gid gid;
		static const uint8_t v4map[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

		if (ibv_query_gid(ctx, port, i, &gid) == 0 &&
		    memcmp(gid.raw, v4map, sizeof(v4map)) == 0)
			return i;
	}
	return -1;
}

static int
sysfs_numa_node(struct ibv_context *ctx)
{
	char path[IBV_SYSFS_PATH_MAX + 32];
	FILE *f;
	int node = -1;

	snprintf(path, sizeof(path), "%s/device/numa_node", ctx->device->ibdev_path);
	f = fopen(path, "r");
	if (f != NULL) {
		if (fscanf(f, "%d", &node) != 1)
			node = -1;
		fclose(f);
	}
	return node;
}

/* cm=0: open the device for this transport alone, not rdma_cm's shared
 * context. rdma_cm keeps one context per device for the whole process, and
 * a child inherits its parent's: the kernel refuses every command on a
 * context another process opened (EACCES), so a child could never post.
 * A transport of its own is opened anew after a fork. */
static struct ibv_context *
open_own(const char *dev, uint8_t port, int *n)
{
	struct ibv_device **dl = ibv_get_device_list(n);
	struct ibv_context *ctx = NULL;

	for (int i = 0; dl != NULL && i < *n && ctx == NULL; i++) {
		if (dev[0] != '\0' && strcmp(ibv_get_device_name(dl[i]), dev) != 0)
			continue;
		ctx = ibv_open_device(dl[i]);
		if (ctx != NULL && dev[0] == '\0' && !port_active(ctx, port)) {
			ibv_close_device(ctx);
			ctx = NULL;
		}
	}
	if (dl != NULL)
		ibv_free_device_list(dl);
	return ctx;
}

static void
dev_release(struct verbs_dev *d)
{
	if (d->own)
		ibv_close_device(d->ctx);
	else if (d->list != NULL)
		rdma_free_devices(d->list);
}

/* srq=N: the device's shared receive queue (zero-length receives). */
static int
srq_open(struct verbs_dev *d)
{
	struct ibv_srq_init_attr sa = {.attr = {.max_wr = d->srq_size, .max_sge = 1}};
	const char *name = ibv_get_device_name(d->ctx->device);

	if (d->attr.max_srq <= 0 || d->attr.max_srq_wr <= 0) {
		RB2_XPORT_LOG(ERR, "verbs: %s has no shared receive queues: leave out srq=", name);
		return -ENOTSUP;
	}
	if (d->srq_size > (uint32_t)d->attr.max_srq_wr) {
		RB2_XPORT_LOG(ERR, "verbs: srq=%u: %s holds at most %d in a shared receive queue",
			      d->srq_size, name, d->attr.max_srq_wr);
		return -EINVAL;
	}
	d->srq = ibv_create_srq(d->pd, &sa);
	if (d->srq == NULL) {
		RB2_XPORT_LOG(ERR, "verbs: ibv_create_srq(%u) on %s: %s", d->srq_size, name,
			      strerror(errno));
		return -errno;
	}
	rte_spinlock_init(&d->srq_lock);
	RB2_XPORT_LOG(INFO, "verbs: %s: a shared receive queue of %u (device maximum %d)",
		      name, d->srq_size, d->attr.max_srq_wr);
	return 0;
}

static int
verbs_open(struct rb2_xport *xp, const char *args)
{
	static const char *const keys[] = {"dev", "port", "gid", "srq", "cm", "ack_timeout",
					   "retry_cnt", "rearm", "readall", "onebyone",
					   NULL};
	char dev[64] = "";
	uint32_t port = 1, gid = UINT32_MAX, srq = 0, cm = 1, ack = VERBS_ACK_TIMEOUT;
	uint32_t retry = VERBS_RETRY_CNT, rearm = 0, readall = 0, onebyone = 0;
	struct verbs_dev *d;
	int n = 0, ret;

	ret = rb2_xport_args_check("verbs", args, keys);
	if (ret < 0)
		return ret;
	d = rte_zmalloc("verbs_dev", sizeof(*d), 0);
	if (d == NULL)
		return -ENOMEM;
	if (rb2_xport_arg(args, "dev", dev, sizeof(dev)) < 0 ||
	    rb2_xport_arg_u32("verbs", args, "port", 1, 255, &port) < 0 ||
	    rb2_xport_arg_u32("verbs", args, "gid", 0, 255, &gid) < 0 ||
	    rb2_xport_arg_u32("verbs", args, "srq", 1, 1u << 20, &srq) < 0 ||
	    rb2_xport_arg_u32("verbs", args, "cm", 0, 1, &cm) < 0 ||
	    rb2_xport_arg_u32("verbs", args, "ack_timeout", 8, 24, &ack) < 0 ||
	    rb2_xport_arg_u32("verbs", args, "retry_cnt", 1, 7, &retry) < 0 ||
	    rb2_xport_arg_u32("verbs", args, "rearm", 0, 1, &rearm) < 0 ||
	    rb2_xport_arg_u32("verbs", args, "readall", 0, 1, &readall) < 0 ||
	    rb2_xport_arg_u32("verbs", args, "onebyone", 0, 1, &onebyone) < 0) {
		RB2_XPORT_LOG(ERR, "verbs: bad arguments '%s': expected dev=NAME,port=N (>= 1),gid=N,srq=N (>= 1),cm=0|1,ack_timeout=8..24,retry_cnt=1..7,rearm=0|1,readall=0|1,onebyone=0|1", args);
		rte_free(d);
		return -EINVAL;
	}
	d->port = (uint8_t)port;
	d->ack_timeout = (uint8_t)ack;
	d->retry_cnt = (uint8_t)retry;
	d->rearm = (uint8_t)rearm;
	d->readall = (uint8_t)readall;
	d->onebyone = (uint8_t)onebyone;
	d->gid_index = gid == UINT32_MAX ? -1 : (int)gid;
	d->srq_size = srq;
	if (!cm) {
		d->own = 1;
		d->ctx = open_own(dev, d->port, &n);
	} else {
		d->list = rdma_get_devices(&n);
	}
	for (int i = 0; cm && d->list != NULL && i < n && d->ctx == NULL; i++) {
		const char *name = ibv_get_device_name(d->list[i]->device);

		if (dev[0] != '\0' ? strcmp(name, dev) == 0 :
		    port_active(d->list[i], d->port))
			d->ctx = d->list[i];
	}
	if (d->ctx == NULL) {
		RB2_XPORT_LOG(ERR, "verbs: no RDMA device %s%s%s (rdma_get_devices: %d device%s); use --transport shm, or load rdma_rxe: modprobe rdma_rxe && rdma link add rxe0 type rxe netdev eth0",
			      dev[0] ? "named " : "with an active port ",
			      dev[0] ? dev : "", dev[0] ? "" : "", n, n == 1 ? "" : "s");
		dev_release(d);
		rte_free(d);
		return -ENODEV;
	}
	if (ibv_query_device(d->ctx, &d->attr) != 0 ||
	    (d->pd = ibv_alloc_pd(d->ctx)) == NULL) {
		RB2_XPORT_LOG(ERR, "verbs: cannot query %s or allocate its PD: %s",
			      ibv_get_device_name(d->ctx->device), strerror(errno));
		dev_release(d);
		rte_free(d);
		return -ENODEV;
	}
	if (d->srq_size > 0) {
		ret = srq_open(d);
		if (ret < 0) {
			ibv_dealloc_pd(d->pd);
			dev_release(d);
			rte_free(d);
			return ret;
		}
	}
	if (d->gid_index < 0)
		d->gid_index = ipv4_gid_index(d->ctx, d->port);
	d->numa_node = sysfs_numa_node(d->ctx);
	xp->priv = d;
	xp->caps = RB2_XPORT_CAP_REMOTE | RB2_XPORT_CAP_READ | RB2_XPORT_CAP_IMM |
		RB2_XPORT_CAP_WAKE;
	xp->socket_id = d->numa_node >= 0 ? d->numa_node : (int)rte_socket_id();
	RB2_XPORT_LOG(INFO, "verbs: %s port %u gid %d, NUMA node %d, max_qp_wr %d",
		      ibv_get_device_name(d->ctx->device), d->port, d->gid_index,
		      d->numa_node, d->attr.max_qp_wr);
	return 0;
}

static void
verbs_close(struct rb2_xport *xp)
{
	struct verbs_dev *d = xp->priv;

	if (d == NULL)
		return;
	if (d->srq != NULL)
		ibv_destroy_srq(d->srq);
	ibv_dealloc_pd(d->pd);
	dev_release(d);
	rte_free(d);
	xp->priv = NULL;
}

static int
verbs_mr_alloc(struct rb2_xport *xp, const char *name, size_t len, int socket,
	       struct rb2_xport_mr *mr)
{
	struct verbs_dev *d = xp->priv;
	const struct rte_memzone *mz;
	struct ibv_mr *ibmr;

	mz = rte_memzone_reserve_aligned(name, len, socket, 0, RTE_CACHE_LINE_SIZE);
	if (mz == NULL && socket != SOCKET_ID_ANY)
		mz = rte_memzone_reserve_aligned(name, len, SOCKET_ID_ANY, 0,
						 RTE_CACHE_LINE_SIZE);
	if (mz == NULL)
		return rte_errno == EEXIST ? -EEXIST : -ENOMEM;
	if (!(mz->flags & RB2_MEMZONE_F_ZEROED))
		memset(mz->addr, 0, len);
	ibmr = ibv_reg_mr(d->pd, mz->addr, len, IBV_ACCESS_LOCAL_WRITE |
			  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (ibmr == NULL) {
		RB2_XPORT_LOG(ERR, "verbs: ibv_reg_mr of %zu bytes for '%s': %s (raise the memlock limit: ulimit -l unlimited)",
			      len, name, strerror(errno));
		rte_memzone_free(mz);
		return -errno;
	}
	mr->addr = mz->addr;
	mr->len = len;
	mr->lkey = ibmr->lkey;
	mr->rkey = ibmr->rkey;
	mr->socket_id = mz->socket_id;
	mr->mz = mz;
	mr->drv = ibmr;
	return 0;
}

static void
verbs_mr_free(struct rb2_xport *xp __rte_unused, struct rb2_xport_mr *mr)
{
	ibv_dereg_mr(mr->drv);
	rte_memzone_free(mr->mz);
}

/* The application's memory: pinned and registered where it is. */
static int
verbs_mr_reg(struct rb2_xport *xp, void *addr, size_t len, struct rb2_xport_mr *mr)
{
	struct verbs_dev *d = xp->priv;
	struct ibv_mr *ibmr = ibv_reg_mr(d->pd, addr, len, IBV_ACCESS_LOCAL_WRITE |
					 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);

	if (ibmr == NULL) {
		RB2_XPORT_LOG(ERR, "verbs: ibv_reg_mr of %zu bytes at %p: %s (raise the memlock limit: ulimit -l unlimited)",
			      len, addr, strerror(errno));
		return -errno;
	}
	mr->addr = addr;
	mr->len = len;
	mr->lkey = ibmr->lkey;
	mr->rkey = ibmr->rkey;
	mr->socket_id = SOCKET_ID_ANY;
	mr->drv = ibmr;
	return 0;
}

static void
verbs_mr_dereg(struct rb2_xport *xp __rte_unused, struct rb2_xport_mr *mr)
{
	ibv_dereg_mr(mr->drv);
}

/* ---- fast path -------------------------------------------------------------- */

static int
verbs_post(struct rb2_xport_qp *qp, const struct rb2_xport_wr *wrs,
	   unsigned int n)
{
	static const enum ibv_wr_opcode op[] = {
		[RB2_WR_WRITE] = IBV_WR_RDMA_WRITE,
		[RB2_WR_WRITE_IMM] = IBV_WR_RDMA_WRITE_WITH_IMM,
		[RB2_WR_READ] = IBV_WR_RDMA_READ,
		[RB2_WR_WAKE] = IBV_WR_RDMA_WRITE_WITH_IMM,
	};
	struct verbs_qp *v = qp->drv;
	uint32_t flags[VERBS_MAX_CHAIN];
	struct ibv_send_wr *bad;
	int ret;

	if (unlikely(v->failed))
		return v->failed;
	if (unlikely(n == 0 || n > VERBS_MAX_CHAIN))
		return n == 0 ? 0 : -EINVAL;
	ret = rb2_verbs_sq_plan(&v->sq, wrs, n, qp->max_inline, flags);
	if (unlikely(ret < 0))
		return ret;
	for (unsigned int i = 0; i < n; i++) {
		struct ibv_send_wr *w = &v->wr[i];

		if (unlikely(wrs[i].opcode > RB2_WR_WAKE))
			return -ENOTSUP;
		v->sge[i] = (struct ibv_sge){
			.addr = (uintptr_t)wrs[i].local,
			.length = wrs[i].len,
			.lkey = wrs[i].lkey,
		};
		w->wr_id = (flags[i] & RB2_VERBS_F_INTERNAL) ?
			VERBS_INTERNAL_WRID : wrs[i].wr_id;
		w->next = i + 1 < n ? &v->wr[i + 1] : NULL;
		w->sg_list = &v->sge[i];
		w->num_sge = 1;
		w->opcode = op[wrs[i].opcode];
		w->send_flags = ((flags[i] & RB2_VERBS_F_SIGNALED) ? IBV_SEND_SIGNALED : 0) |
			((flags[i] & RB2_VERBS_F_INLINE) ? IBV_SEND_INLINE : 0);
		w->imm_data = htonl(wrs[i].imm);
		if (unlikely(wrs[i].opcode == RB2_WR_WAKE)) {
			w->num_sge = 0;        /* no payload: the receive completes */
			w->imm_data = htonl(RB2_IMM_WAKE);
		}
		w->wr.rdma.remote_addr = wrs[i].remote;
		w->wr.rdma.rkey = wrs[i].rkey;
	}
	/* One doorbell for the whole chain. */
	ret = ibv_post_send(v->qp, v->wr, &bad);
	if (unlikely(ret != 0)) {
		RB2_XPORT_LOG(ERR, "verbs: ibv_post_send: %s", strerror(ret));
		return -ret;
	}
	rb2_verbs_sq_posted(&v->sq, flags, n);
	return 0;
}

/* Up to @n completions from the CQ, translated; internal ones swallowed. */
static int
verbs_reap(struct verbs_qp *v, struct rb2_xport_wc *wcs, unsigned int n)
{
	struct ibv_wc wc[16];
	unsigned int out = 0;
	int got;

	while (out < n) {
		got = ibv_poll_cq(v->cq, (int)RTE_MIN(n - out, (unsigned int)RTE_DIM(wc)), wc);
		if (got <= 0) {
			if (got < 0)
				return v->failed = -EIO;
			break;
		}
		for (int i = 0; i < got; i++) {
			/* By wr_id: an error completion's opcode is undefined. */
			if (wc[i].wr_id == VERBS_RECV_WRID) {
				if (v->on_srq && v->srq_held > 0)
					v->srq_held--;
				if (wc[i].status != IBV_WC_SUCCESS) {
					RB2_XPORT_LOG(ERR, "verbs: receive completion error: %s (vendor error 0x%x)",
						      ibv_wc_status_str(wc[i].status), wc[i].vendor_err);
					v->failed = -EIO;
				}
				wcs[out++] = (struct rb2_xport_wc){
					.wr_id = 0, .status = wc[i].status,
					.opcode = RB2_WC_RECV_IMM,
					.imm = ntohl(wc[i].imm_data),
					.byte_len = wc[i].byte_len,
				};
				continue;
			}
			rb2_verbs_sq_completed(&v->sq);
			if (wc[i].status != IBV_WC_SUCCESS) {
				RB2_XPORT_LOG(ERR, "verbs: completion error: %s (vendor error 0x%x)",
					      ibv_wc_status_str(wc[i].status), wc[i].vendor_err);
				v->failed = -EIO;
			} else if (wc[i].wr_id == VERBS_INTERNAL_WRID) {
				continue; /* a forced signal: SQ bookkeeping only */
			}
			wcs[out++] = (struct rb2_xport_wc){
				.wr_id = wc[i].wr_id, .status = wc[i].status,
				.opcode = wc[i].opcode == IBV_WC_RDMA_READ ?
					RB2_WR_READ : RB2_WR_WRITE,
				.byte_len = wc[i].byte_len,
			};
		}
		if ((unsigned int)got < RTE_DIM(wc))
			break;
	}
	return (int)out;
}

static int
verbs_poll(struct rb2_xport_qp *qp, struct rb2_xport_wc *wcs, unsigned int n)
{
	struct verbs_qp *v = qp->drv;
	unsigned int out = 0;
	int ret;

	/* A probe reaped these while the caller was idle: older, so first. */
	while (unlikely(v->nstash > 0) && out < n) {
		wcs[out++] = v->stash[v->stash_head++];
		v->nstash--;
	}
	if (out == n)
		return (int)out;
	ret = verbs_reap(v, wcs + out, n - out);
	return ret < 0 ? ret : (int)out + ret;
}

/* ---- control path ----------------------------------------------------------- */

static int
verbs_qp_create(struct rb2_xport *xp, struct rb2_xport_qp *qp,
		const struct rb2_xport_qp_attr *attr)
{
	struct verbs_dev *d = xp->priv;
	struct verbs_qp *v;
	uint32_t dev_max = (uint32_t)RTE_MIN(d->attr.max_qp_wr, d->attr.max_cqe - 1);
	uint32_t depth = rb2_verbs_sq_depth(attr->sq_depth ? attr->sq_depth : 256,
					    dev_max);
	int ret;

	v = rte_zmalloc_socket("verbs_qp", sizeof(*v), RTE_CACHE_LINE_SIZE,
			       xp->socket_id);
	if (v == NULL)
		return -ENOMEM;
	ret = rb2_verbs_sq_init(&v->sq, depth);
	if (ret < 0) {
		rte_free(v);
		return ret;
	}
	/* A sleeper's completion channel, read without blocking (poll(2)
	 * does the waiting). */
	pthread_mutex_init(&v->cc_lock, NULL);
	if (attr->wake) {
		v->cc = ibv_create_comp_channel(d->ctx);
		/* At the process's floor for our descriptors, if it set one,
		 * before the CQ names it (the kernel takes the file then). */
		if (v->cc != NULL)
			v->cc->fd = rb2_xport_fd_raise(v->cc->fd);
		if (v->cc == NULL ||
		    fcntl(v->cc->fd, F_SETFL, fcntl(v->cc->fd, F_GETFL) | O_NONBLOCK) < 0) {
			RB2_XPORT_LOG(ERR, "verbs: ibv_create_comp_channel: %s", strerror(errno));
			if (v->cc != NULL)
				ibv_destroy_comp_channel(v->cc);
			rb2_verbs_sq_fini(&v->sq);
			rte_free(v);
			return -ENOMEM;
		}
	}
	/* Every send WR may complete; receives of WRITE_WITH_IMM too. */
	v->cq = ibv_create_cq(d->ctx, (int)(depth + attr->recv_depth + 1), NULL, v->cc, 0);
	if (v->cq == NULL) {
		RB2_XPORT_LOG(ERR, "verbs: ibv_create_cq(%u): %s", depth, strerror(errno));
		if (v->cc != NULL)
			ibv_destroy_comp_channel(v->cc);
		rb2_verbs_sq_fini(&v->sq);
		rte_free(v);
		return -ENOMEM;
	}
	qp->drv = v;
	v->recv_depth = attr->recv_depth;
	v->on_srq = d->srq != NULL && attr->recv_depth > 0;
	qp->sq_depth = depth;
	qp->cq_depth = depth;
	qp->max_chain = VERBS_MAX_CHAIN;
	qp->max_inline = attr->max_inline ? attr->max_inline : 64;
	return 0;
}

/*
 * A queue on the SRQ goes: what was posted for it and not consumed stays
 * in the SRQ (its entries are not flushed with the QP), for the next posts.
 * Consumed is only known once nothing more can arrive: the QP in error,
 * then every receive completion left in its CQ counted.
 */
static void
srq_leave(struct verbs_dev *d, struct verbs_qp *v)
{
	struct ibv_qp_attr qa = {.qp_state = IBV_QPS_ERR};
	struct ibv_wc wc[16];
	int got, rounds = 0;

	if (v->qp != NULL && ibv_modify_qp(v->qp, &qa, IBV_QP_STATE) != 0) {
		/* Not known to be quiet: its share is given up, not reused. */
		RB2_XPORT_LOG(WARNING, "verbs: a queue leaving the SRQ could not be stopped (%s): %" PRIu64 " of its receives are not reused",
			      strerror(errno), v->srq_held);
		return;
	}
	while (rounds++ < 1000 && (got = ibv_poll_cq(v->cq, RTE_DIM(wc), wc)) > 0)
		for (int i = 0; i < got; i++)
			if (wc[i].wr_id == VERBS_RECV_WRID && v->srq_held > 0)
				v->srq_held--;
	rte_spinlock_lock(&d->srq_lock);
	d->srq_spare += v->srq_held;
	rte_spinlock_unlock(&d->srq_lock);
	v->srq_held = 0;
}

static void
verbs_qp_destroy(struct rb2_xport_qp *qp)
{
	struct verbs_qp *v = qp->drv;

	if (v == NULL)
		return;
	if (v->on_srq)
		srq_leave(qp->xp->priv, v);
	if (v->id != NULL) {
		rdma_disconnect(v->id); /* both sides must, on RoCE */
		rdma_destroy_qp(v->id);
		rdma_destroy_id(v->id);
	} else if (v->qp != NULL) {
		ibv_destroy_qp(v->qp);  /* a local pair's */
	}
	if (v->listen_id != NULL)
		rdma_destroy_id(v->listen_id);
	if (v->ec != NULL)
		rdma_destroy_event_channel(v->ec);
	if (v->cc_events > 0)
		ibv_ack_cq_events(v->cq, v->cc_events);
	ibv_destroy_cq(v->cq);
	if (v->cc != NULL)
		ibv_destroy_comp_channel(v->cc);
	rb2_verbs_sq_fini(&v->sq);
	pthread_mutex_destroy(&v->cc_lock);
	rte_free(v);
	qp->drv = NULL;
}

/* Arm the CQ for its next completion. Under cc_lock. */
static int
cq_arm(struct rb2_xport_qp *qp, struct verbs_qp *v)
{
	int ret = ibv_req_notify_cq(v->cq, 0);

	if (ret != 0) {
		v->cc_armed = 0;
		RB2_XPORT_LOG(ERR, "verbs: ibv_req_notify_cq: %s", strerror(ret));
		return -ret;
	}
	v->cc_armed = 1;
	qp->wake_requests++;
	return 0;
}

/*
 * Sleep on the completion channel: armed for the next completion, so one
 * that comes after this call raises the descriptor.
 *
 * A CQ armed before and without an event since is not armed again: a
 * completion raises the channel, or raised it already, and the event stays
 * there until a done takes it. A wait over many queues where few complete
 * (rb2-run's epoll over idle streams) so asks again only of those that
 * did. On Soft-RoCE each request is a system call (ibv_cmd_req_notify_cq).
 * rearm=1 asks at every arm, to measure what this saves.
 */
static int
verbs_doorbell_arm(struct rb2_xport_qp *qp, uint32_t *word __rte_unused,
		   struct rb2_xport_doorbell *db)
{
	struct verbs_qp *v = qp->drv;
	int ret = 0;

	if (v->cc == NULL)
		return -EINVAL;     /* not created with attr.wake */
	pthread_mutex_lock(&v->cc_lock);
	if (!v->cc_armed || ((struct verbs_dev *)qp->xp->priv)->rearm)
		ret = cq_arm(qp, v);
	if (ret == 0)
		v->cc_sleepers++;
	pthread_mutex_unlock(&v->cc_lock);
	if (ret != 0)
		return ret;
	db->word = NULL;
	db->seen = 0;
	db->fd = v->cc->fd;
	return 0;
}

/* Take the channel's events (acknowledged in batches: each acknowledgement
 * takes the CQ's lock) if @read, @sleeper: one sleeper less. The
 * completions themselves stay in the CQ for the caller's poll. An event
 * taken disarmed the CQ: it is armed again at once if a sleeper still
 * counts on it, else at the next arm. */
static void
take_events(struct rb2_xport_qp *qp, int sleeper, int read)
{
	struct verbs_qp *v = qp->drv;
	struct ibv_cq *cq;
	void *ctx;
	unsigned int got = 0;

	if (v->cc == NULL)
		return;
	pthread_mutex_lock(&v->cc_lock);
	if (read) {
		qp->wake_reads++;
		while (ibv_get_cq_event(v->cc, &cq, &ctx) == 0)
			got++;
	}
	v->cc_events += got;
	if (sleeper && v->cc_sleepers > 0)
		v->cc_sleepers--;
	if (got > 0) {
		if (v->cc_sleepers > 0)
			(void)cq_arm(qp, v);
		else
			v->cc_armed = 0;
	}
	if (v->cc_events >= 64) {
		ibv_ack_cq_events(v->cq, v->cc_events);
		v->cc_events = 0;
	}
	pthread_mutex_unlock(&v->cc_lock);
}

/* Awake after an arm. */
static void
verbs_doorbell_done(struct rb2_xport_qp *qp)
{
	take_events(qp, 1, 1);
}

/* Awake, the channel not seen readable: reading it would be a system call
 * (a read(2) that finds nothing, for each idle stream of rb2-run's epoll
 * set at every wake). An event that came since stays in the channel, the
 * CQ counted as armed, as after an arm that did not fire: the channel is
 * readable, so the next wait that holds it sees it at once. */
static void
verbs_doorbell_leave(struct rb2_xport_qp *qp)
{
	take_events(qp, 1, ((struct verbs_dev *)qp->xp->priv)->readall);
}

/* The channel was seen readable by a wait that did not arm this queue (an
 * edge-triggered epoll set reports the edge once): its event, left unread,
 * would keep cc_armed set while the CQ is disarmed, and no later
 * completion would raise the channel again. */
static void
verbs_doorbell_drain(struct rb2_xport_qp *qp)
{
	take_events(qp, 0, 1);
}

/*
 * The QP's local ACK timeout, as the directly connected pairs have it
 * (local_qp_rts()): 4.096 us x 2^14 = 67 ms, so with 6 retries a peer that
 * stops answering fails the QP in about half a second. Left to rdma_cm, it
 * comes from the path's packet lifetime, which RoCE does not measure.
 */
static int
set_ack_timeout(struct rdma_cm_id *id)
{
	uint8_t t = VERBS_ACK_TIMEOUT;

	if (rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &t, sizeof(t)) != 0) {
		RB2_XPORT_LOG(ERR, "verbs: cannot set the ACK timeout: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

/* Milliseconds until the TSC @deadline, 0 once it passed. */
static unsigned int
ms_left(uint64_t deadline)
{
	uint64_t now = rte_get_timer_cycles();

	return now >= deadline ? 0 :
		(unsigned int)((deadline - now) * 1000 / rte_get_timer_hz());
}

/* Wait for one CM event of type @want; returns it (to be acked) or NULL. */
static struct rdma_cm_event *
cm_wait(struct rdma_event_channel *ec, enum rdma_cm_event_type want,
	unsigned int timeout_ms, int *err)
{
	struct pollfd pfd = {.fd = ec->fd, .events = POLLIN};
	struct rdma_cm_event *ev;

	if (poll(&pfd, 1, (int)timeout_ms) <= 0) {
		*err = -ETIMEDOUT;
		return NULL;
	}
	if (rdma_get_cm_event(ec, &ev) != 0) {
		*err = -errno;
		return NULL;
	}
	if (ev->event != want) {
		/* A refusal is retried by the active side: not an error yet. */
		if (ev->event == RDMA_CM_EVENT_REJECTED)
			RB2_XPORT_LOG(DEBUG, "verbs: %s refused (status %d): no listener yet?",
				      rdma_event_str(want), ev->status);
		else
			RB2_XPORT_LOG(ERR, "verbs: expected %s, got %s (status %d)",
				      rdma_event_str(want), rdma_event_str(ev->event), ev->status);
		*err = ev->event == RDMA_CM_EVENT_REJECTED ? -ECONNREFUSED :
			ev->event == RDMA_CM_EVENT_UNREACHABLE ? -EHOSTUNREACH : -ECONNABORTED;
		rdma_ack_cm_event(ev);
		return NULL;
	}
	return ev;
}

static int
parse_peer(const char *peer, struct addrinfo **ai, int passive)
{
	char host[128], *colon;
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM,
				 .ai_flags = passive ? AI_PASSIVE : 0};

	if (strlen(peer) >= sizeof(host))
		return -EINVAL;
	strcpy(host, peer);
	colon = strrchr(host, ':');
	if (colon == NULL) {
		RB2_XPORT_LOG(ERR, "verbs: peer '%s': expected ip:port", peer);
		return -EINVAL;
	}
	*colon = '\0';
	if (getaddrinfo(host[0] ? host : NULL, colon + 1, &hints, ai) != 0) {
		RB2_XPORT_LOG(ERR, "verbs: cannot resolve '%s'", peer);
		return -EINVAL;
	}
	return 0;
}

static struct ibv_qp_init_attr
qp_init_attr(const struct rb2_xport_qp *qp, const struct verbs_qp *v)
{
	const struct verbs_dev *d = qp->xp->priv;

	return (struct ibv_qp_init_attr){
		.send_cq = v->cq, .recv_cq = v->cq,
		.srq = v->on_srq ? d->srq : NULL,
		.cap = {.max_send_wr = v->sq.depth,
			.max_recv_wr = v->on_srq ? 0 : v->recv_depth > 0 ? v->recv_depth : 1,
			.max_send_sge = 1, .max_recv_sge = 1,
			.max_inline_data = qp->max_inline},
		.qp_type = IBV_QPT_RC, .sq_sig_all = 0,
	};
}

static int
make_qp(struct rb2_xport_qp *qp, struct verbs_qp *v, struct rdma_cm_id *id)
{
	struct verbs_dev *d = qp->xp->priv;
	struct ibv_qp_init_attr ia = qp_init_attr(qp, v);

	if (id->verbs != d->ctx) {
		RB2_XPORT_LOG(ERR, "verbs: the peer is reached through %s, not the opened %s (pick the device with dev=)",
			      ibv_get_device_name(id->verbs->device),
			      ibv_get_device_name(d->ctx->device));
		return -ENODEV;
	}
	if (rdma_create_qp(id, d->pd, &ia) != 0) {
		RB2_XPORT_LOG(ERR, "verbs: rdma_create_qp(send %u, inline %u): %s",
			      v->sq.depth, qp->max_inline, strerror(errno));
		return -errno;
	}
	v->qp = id->qp;
	qp->max_inline = ia.cap.max_inline_data;
	return 0;
}

static void
set_connected(struct rb2_xport_qp *qp, struct verbs_qp *v, struct rdma_cm_id *id)
{
	const char *inject = getenv("RB2_VERBS_INJECT_QP_ERROR_MS");

	v->id = id;
	/* Later CM events (DISCONNECTED) are read without blocking. */
	if (v->ec != NULL)
		fcntl(v->ec->fd, F_SETFL, fcntl(v->ec->fd, F_GETFL) | O_NONBLOCK);
	qp->post = verbs_post;
	qp->poll = verbs_poll;
	qp->connected = 1;
	if (inject != NULL && atoi(inject) > 0) {
		v->inject_err = rte_get_timer_cycles() +
			rte_get_timer_hz() * (uint64_t)atoi(inject) / 1000;
		RB2_XPORT_LOG(WARNING, "verbs: fault injection: this QP goes to the error state in %d ms (RB2_VERBS_INJECT_QP_ERROR_MS)",
			      atoi(inject));
	}
}

/* READs a queue keeps in flight, both ways (a bulk receiver's READs of a
 * lent buffer, lazy pull's head READs): what the device allows, up to 16. */
static uint8_t
verbs_rd_depth(const struct verbs_dev *d)
{
	int depth = RTE_MIN(d->attr.max_qp_rd_atom, d->attr.max_qp_init_rd_atom);

	return (uint8_t)RTE_MAX(1, RTE_MIN(depth, 16));
}

static int verbs_qp_exchange_fd(struct rb2_xport_qp *qp, int fd, const void *blob, size_t len,
				void *peer_blob, size_t peer_cap, unsigned int timeout_ms);

static int
verbs_qp_exchange(struct rb2_xport_qp *qp, const char *peer,
		  enum rb2_xport_role role, const void *blob, size_t len,
		  void *peer_blob, size_t peer_cap, unsigned int timeout_ms)
{
	struct verbs_qp *v = qp->drv;
	struct rdma_conn_param cp = {
		.private_data = blob, .private_data_len = (uint8_t)len,
		.responder_resources = verbs_rd_depth(qp->xp->priv),
		.initiator_depth = verbs_rd_depth(qp->xp->priv),
		.retry_count = VERBS_RETRY_CNT, .rnr_retry_count = 7,
	};
	struct rdma_cm_event *ev = NULL;
	struct rdma_cm_id *id = NULL;
	struct addrinfo *ai = NULL;
	int err = 0;
	size_t plen;
	int sfd = rb2_xport_peer_fd(peer);

	if (sfd >= 0)
		return verbs_qp_exchange_fd(qp, sfd, blob, len, peer_blob, peer_cap, timeout_ms);
	if (((struct verbs_dev *)qp->xp->priv)->own) {
		RB2_XPORT_LOG(ERR, "verbs: cm=0 connects over a socket only (fd:N), not to '%s'",
			      peer);
		return -EINVAL;
	}
	if (len > 56) /* rdma_cm's RC private data */
		return -EMSGSIZE;
	if (parse_peer(peer, &ai, role == RB2_XPORT_PASSIVE) < 0)
		return -EINVAL;
	v->ec = rdma_create_event_channel();
	if (v->ec == NULL || rdma_create_id(v->ec, &id, NULL, RDMA_PS_TCP) != 0) {
		freeaddrinfo(ai);
		return -errno;
	}
	if (role == RB2_XPORT_PASSIVE) {
		v->listen_id = id;
		if (rdma_bind_addr(id, ai->ai_addr) != 0 || rdma_listen(id, 1) != 0) {
			RB2_XPORT_LOG(ERR, "verbs: cannot listen on %s: %s", peer, strerror(errno));
			err = -errno;
			goto out;
		}
		uint64_t deadline = rte_get_timer_cycles() +
			rte_get_timer_hz() * timeout_ms / 1000;

		/* A handshake whose messages are lost (a lossy link) ends in a
		 * reject or a timeout after the request: the active side retries,
		 * so listen again until the timeout. */
		for (;;) {
			ev = cm_wait(v->ec, RDMA_CM_EVENT_CONNECT_REQUEST, ms_left(deadline), &err);
			if (ev == NULL)
				goto out;
			id = ev->id;
			plen = ev->param.conn.private_data_len;
			if (plen > peer_cap)
				plen = peer_cap;
			memcpy(peer_blob, ev->param.conn.private_data, plen);
			rdma_ack_cm_event(ev);
			if ((err = make_qp(qp, v, id)) < 0 || set_ack_timeout(id) < 0 ||
			    rdma_accept(id, &cp) != 0) {
				rdma_reject(id, NULL, 0);
				rdma_destroy_id(id);
				err = err < 0 ? err : -errno;
				goto out;
			}
			ev = cm_wait(v->ec, RDMA_CM_EVENT_ESTABLISHED, ms_left(deadline), &err);
			if (ev != NULL)
				break;
			rdma_destroy_qp(id);
			rdma_destroy_id(id);
			id = NULL;
			if (ms_left(deadline) == 0)
				goto out;
			RB2_XPORT_LOG(NOTICE, "verbs: a connection on %s did not complete (%s): listening again",
				      peer, strerror(-err));
		}
		rdma_ack_cm_event(ev);
		rdma_destroy_id(v->listen_id);
		v->listen_id = NULL;
	} else {
		uint64_t deadline = rte_get_timer_cycles() +
			rte_get_timer_hz() * timeout_ms / 1000;

		/* A peer that is not listening yet refuses the connection:
		 * retry until the timeout, as the passive side waits. */
		for (;;) {
			err = 0;
			if (rdma_resolve_addr(id, NULL, ai->ai_addr, VERBS_CM_TIMEOUT_MS) != 0 ||
			    (ev = cm_wait(v->ec, RDMA_CM_EVENT_ADDR_RESOLVED, timeout_ms,
					  &err)) == NULL)
				goto fail_active;
			rdma_ack_cm_event(ev);
			if (rdma_resolve_route(id, VERBS_CM_TIMEOUT_MS) != 0 ||
			    (ev = cm_wait(v->ec, RDMA_CM_EVENT_ROUTE_RESOLVED, timeout_ms,
					  &err)) == NULL)
				goto fail_active;
			rdma_ack_cm_event(ev);
			if ((err = make_qp(qp, v, id)) < 0)
				goto fail_active;
			if (set_ack_timeout(id) == 0 && rdma_connect(id, &cp) == 0 &&
			    (ev = cm_wait(v->ec, RDMA_CM_EVENT_ESTABLISHED, timeout_ms,
					  &err)) != NULL)
				break;
			rdma_destroy_qp(id);
			if (err != -ECONNREFUSED ||
			    rte_get_timer_cycles() + rte_get_timer_hz() / 10 >= deadline)
				goto fail_active;
			rdma_destroy_id(id);
			id = NULL;
			rte_delay_us_sleep(100 * 1000);
			if (rdma_create_id(v->ec, &id, NULL, RDMA_PS_TCP) != 0) {
				err = -errno;
				goto out;
			}
		}
		plen = ev->param.conn.private_data_len;
		if (plen > peer_cap)
			plen = peer_cap;
		memcpy(peer_blob, ev->param.conn.private_data, plen);
		rdma_ack_cm_event(ev);
	}
	freeaddrinfo(ai);
	set_connected(qp, v, id);
	/* rdma_cm pads private data: the caller checks the blob's own size. */
	return (int)plen;

fail_active:
	if (err == 0)
		err = errno ? -errno : -ECONNREFUSED;
	RB2_XPORT_LOG(ERR, "verbs: connecting to %s failed: %s", peer, strerror(-err));
	rdma_destroy_id(id);
	id = NULL;
out:
	freeaddrinfo(ai);
	if (v->listen_id != NULL) {
		rdma_destroy_id(v->listen_id);
		v->listen_id = NULL;
	}
	rdma_destroy_event_channel(v->ec);
	v->ec = NULL;
	return err != 0 ? err : -ECONNABORTED;
}

/* Where a queue is, for a peer that connects to it without rdma_cm. */
struct qp_addr {
	union ibv_gid gid;
	uint32_t qpn;
	uint32_t psn;     /* the first PSN of what this QP sends */
	uint32_t mtu;     /* enum ibv_mtu of its port */
};

/* Move @qp to RTS, connected to @peer (a QP of this device, or of another
 * host's, by its GID); @my_psn: the first PSN this QP sends. */
static int
qp_rts(struct verbs_dev *d, struct ibv_qp *qp, const struct qp_addr *peer, uint32_t my_psn,
       int remote)
{
	struct ibv_port_attr pa;
	struct ibv_qp_attr a;
	int ret;

	if (ibv_query_port(d->ctx, d->port, &pa) != 0)
		return -errno;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = d->port;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		IBV_ACCESS_REMOTE_READ;
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			    IBV_QP_ACCESS_FLAGS);
	if (ret != 0)
		return -ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	/* The smaller of the two ports' MTUs, as rdma_cm's path would be. */
	a.path_mtu = RTE_MIN(pa.active_mtu, (enum ibv_mtu)peer->mtu);
	a.dest_qp_num = peer->qpn;
	a.rq_psn = peer->psn;
	a.max_dest_rd_atomic = verbs_rd_depth(d);
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1; /* RoCE: addressed by GID */
	a.ah_attr.grh.dgid = peer->gid;
	a.ah_attr.grh.sgid_index = (uint8_t)d->gid_index;
	a.ah_attr.grh.hop_limit = remote ? 64 : 1;
	a.ah_attr.port_num = d->port;
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			    IBV_QP_MIN_RNR_TIMER);
	if (ret != 0)
		return -ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = d->ack_timeout;
	a.retry_cnt = d->retry_cnt;
	a.rnr_retry = 7;
	a.sq_psn = my_psn;
	a.max_rd_atomic = verbs_rd_depth(d);
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			    IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	return -ret;
}

/* This device's address of @qp (PSN 0: a local pair). */
static int
qp_addr_of(struct verbs_dev *d, struct ibv_qp *qp, uint32_t psn, struct qp_addr *out)
{
	struct ibv_port_attr pa;

	if (ibv_query_port(d->ctx, d->port, &pa) != 0 ||
	    ibv_query_gid(d->ctx, d->port, d->gid_index, &out->gid) != 0)
		return -errno;
	out->qpn = qp->qp_num;
	out->psn = psn;
	out->mtu = pa.active_mtu;
	return 0;
}

/* Move a local pair's QP to RTS, connected to @peer_qp on this device. */
static int
local_qp_rts(struct verbs_dev *d, struct ibv_qp *qp, struct ibv_qp *peer_qp)
{
	struct qp_addr pa;
	int ret = qp_addr_of(d, peer_qp, 0, &pa);

	return ret < 0 ? ret : qp_rts(d, qp, &pa, 0, 0);
}

/*
 * "fd:N": the queue is connected over the caller's own stream socket N,
 * already connected to the peer, without rdma_cm, as perftest does without
 * -R: each side creates its QP, sends its GID, QP number, first PSN and MTU
 * with the caller's blob (rb2_xport_fd_exchange()), and moves the QP to RTS
 * towards the peer's. rb2-run connects its streams across hosts so, over
 * the program's own TCP connection: no port to listen on, nothing to find.
 *
 * Several queues (rb2_xport_qp_exchange_n(), up to FD_EXCH_MAX) go in one
 * message each way: each side creates all its QPs, sends their addresses
 * and blobs together, and moves them all to RTS once the peer's came. A
 * stream's three QPs so cost one round trip on the socket, not three, and
 * neither side waits for the other's QP creations one by one. Each is
 * ready only when all are: on any failure every QP made here goes.
 *
 * The device is the one this transport opened (dev=, or the first with an
 * active port), not the route's, as rdma_cm would pick: a host with two
 * RDMA devices names the right one. With no CM, a peer's process that ends
 * is seen by the liveness probe (its QP is gone, so no ACK comes) once the
 * retries run out (ack_timeout), or sooner by whoever owns the socket.
 */
#define FD_EXCH_MAX 8

/* One queue's part of the message each side sends: its address, then its
 * blob of @len bytes. */
struct fd_exch_head {
	struct qp_addr a;
	uint32_t len;
};

static int
verbs_qp_exchange_fd_n(struct rb2_xport_exch *x, unsigned int n, int fd, unsigned int timeout_ms)
{
	struct verbs_dev *d = x[0].qp->xp->priv;
	uint8_t mine[FD_EXCH_MAX * (sizeof(struct fd_exch_head) + RB2_XPORT_BLOB_MAX)] = { 0 };
	uint8_t theirs[sizeof(mine)];
	struct qp_addr pa[FD_EXCH_MAX];
	uint32_t psn[FD_EXCH_MAX];
	size_t at = 0;
	unsigned int made = 0, i;
	int got, ret = 0;

	if (n > FD_EXCH_MAX)
		return -E2BIG;
	if (d->onebyone && n > 1) {
		for (i = 0; i < n; i++)
			if ((ret = verbs_qp_exchange_fd_n(&x[i], 1, fd, timeout_ms)) < 0)
				return ret;
		return 0;
	}
	if (d->gid_index < 0) {
		RB2_XPORT_LOG(ERR, "verbs: %s has no IPv4 RoCE GID to be reached by (give one: gid=N)",
			      ibv_get_device_name(d->ctx->device));
		return -ENODEV;
	}
	/* Every queue made before the one round trip: the peer makes its own
	 * meanwhile. */
	for (made = 0; made < n; made++) {
		struct rb2_xport_qp *qp = x[made].qp;
		struct verbs_qp *v = qp->drv;
		struct ibv_qp_init_attr ia = qp_init_attr(qp, v);
		struct fd_exch_head h = { .len = (uint32_t)x[made].len };

		v->qp = ibv_create_qp(d->pd, &ia);
		if (v->qp == NULL) {
			ret = -errno;
			RB2_XPORT_LOG(ERR, "verbs: ibv_create_qp(send %u, inline %u): %s",
				      v->sq.depth, qp->max_inline, strerror(errno));
			goto fail;
		}
		qp->max_inline = ia.cap.max_inline_data;
		psn[made] = (uint32_t)rte_rand() & 0xffffff;
		memset(&h.a, 0, sizeof(h.a));
		ret = qp_addr_of(d, v->qp, psn[made], &h.a);
		if (ret < 0) {
			made++;                  /* its QP goes too */
			goto fail;
		}
		memcpy(mine + at, &h, sizeof(h));
		memcpy(mine + at + sizeof(h), x[made].blob, x[made].len);
		at += sizeof(h) + x[made].len;
	}
	got = rb2_xport_fd_exchange(fd, mine, at, theirs, sizeof(theirs), timeout_ms);
	if (got < 0) {
		ret = got;
		RB2_XPORT_LOG(ERR, "verbs: exchanging QP addresses over fd %d: %s", fd,
			      strerror(-ret));
		goto fail;
	}
	/* The peer's message: as many queues as ours, each blob within its
	 * caller's room, each MTU one of the IB's. */
	at = 0;
	for (i = 0; i < n; i++) {
		struct fd_exch_head h;

		if ((size_t)got - at < sizeof(h))
			break;
		memcpy(&h, theirs + at, sizeof(h));
		if (h.len > x[i].peer_cap || (size_t)got - at - sizeof(h) < h.len ||
		    h.a.mtu < IBV_MTU_256 || h.a.mtu > IBV_MTU_4096)
			break;
		pa[i] = h.a;
		memcpy(x[i].peer_blob, theirs + at + sizeof(h), h.len);
		x[i].peer_len = (int)h.len;
		at += sizeof(h) + h.len;
	}
	if (i < n || at != (size_t)got) {
		RB2_XPORT_LOG(ERR, "verbs: the peer on fd %d sent a malformed message of QP addresses (%d bytes for %u queues)",
			      fd, got, n);
		ret = -EPROTO;
		goto fail;
	}
	for (i = 0; i < n; i++) {
		struct ibv_qp *q = ((struct verbs_qp *)x[i].qp->drv)->qp;

		ret = qp_rts(d, q, &pa[i], psn[i], 1);
		if (ret < 0) {
			RB2_XPORT_LOG(ERR, "verbs: connecting QP %u to the peer's QP %u: %s",
				      q->qp_num, pa[i].qpn, strerror(-ret));
			goto fail;
		}
	}
	for (i = 0; i < n; i++)
		set_connected(x[i].qp, x[i].qp->drv, NULL);
	return 0;
fail:
	for (i = 0; i < made; i++) {
		struct verbs_qp *v = x[i].qp->drv;

		ibv_destroy_qp(v->qp);
		v->qp = NULL;
	}
	return ret;
}

static int
verbs_qp_exchange_fd(struct rb2_xport_qp *qp, int fd, const void *blob, size_t len,
		     void *peer_blob, size_t peer_cap, unsigned int timeout_ms)
{
	struct rb2_xport_exch x = { .qp = qp, .blob = blob, .len = len,
				    .peer_blob = peer_blob, .peer_cap = peer_cap };
	int ret = verbs_qp_exchange_fd_n(&x, 1, fd, timeout_ms);

	return ret < 0 ? ret : x.peer_len;
}

static int
verbs_qp_connect_local(struct rb2_xport_qp *a, struct rb2_xport_qp *b)
{
	struct verbs_dev *d = a->xp->priv;
	struct rb2_xport_qp *qps[2] = {a, b};
	int ret = 0;

	if (d->gid_index < 0) {
		RB2_XPORT_LOG(ERR, "verbs: %s has no IPv4 RoCE GID to loop back through (give one: gid=N)",
			      ibv_get_device_name(d->ctx->device));
		return -ENODEV;
	}
	for (int i = 0; i < 2; i++) {
		struct verbs_qp *v = qps[i]->drv;
		struct ibv_qp_init_attr ia = qp_init_attr(qps[i], v);

		v->qp = ibv_create_qp(d->pd, &ia);
		if (v->qp == NULL) {
			ret = -errno;
			RB2_XPORT_LOG(ERR, "verbs: ibv_create_qp(send %u, inline %u): %s",
				      v->sq.depth, qps[i]->max_inline, strerror(errno));
			break;
		}
		qps[i]->max_inline = ia.cap.max_inline_data;
	}
	for (int i = 0; i < 2 && ret == 0; i++) {
		struct verbs_qp *v = qps[i]->drv, *peer = qps[1 - i]->drv;

		ret = local_qp_rts(d, v->qp, peer->qp);
		if (ret < 0)
			RB2_XPORT_LOG(ERR, "verbs: connecting a local QP pair on %s: %s",
				      ibv_get_device_name(d->ctx->device), strerror(-ret));
	}
	if (ret < 0) {
		for (int i = 0; i < 2; i++) {
			struct verbs_qp *v = qps[i]->drv;

			if (v->qp != NULL)
				ibv_destroy_qp(v->qp);
			v->qp = NULL;
		}
		return ret;
	}
	set_connected(a, a->drv, NULL);
	set_connected(b, b->drv, NULL);
	return 0;
}

/* @p n receives for queue @p v, on the SRQ: first those that destroyed
 * queues left there, then new ones. */
static int
srq_post(struct verbs_dev *d, struct verbs_qp *v, unsigned int n)
{
	struct ibv_recv_wr wr[16], *bad;
	unsigned int want = n;
	int ret = 0;

	rte_spinlock_lock(&d->srq_lock);
	if (d->srq_spare > 0) {
		unsigned int take = (unsigned int)RTE_MIN((uint64_t)want, d->srq_spare);

		d->srq_spare -= take;
		want -= take;
	}
	while (want > 0 && ret == 0) {
		unsigned int k = RTE_MIN(want, (unsigned int)RTE_DIM(wr));

		for (unsigned int i = 0; i < k; i++)
			wr[i] = (struct ibv_recv_wr){
				.wr_id = VERBS_RECV_WRID,
				.next = i + 1 < k ? &wr[i + 1] : NULL,
			};
		ret = ibv_post_srq_recv(d->srq, wr, &bad);
		if (ret == 0)
			want -= k;
	}
	rte_spinlock_unlock(&d->srq_lock);
	v->srq_held += n - want;       /* a chunk refused was not posted */
	if (ret != 0) {
		RB2_XPORT_LOG(ERR, "verbs: ibv_post_srq_recv: %s: the shared receive queue of %u is full; give more (srq=N: each channel that takes WRITE_WITH_IMM needs %u)",
			      strerror(ret), d->srq_size, v->recv_depth);
		return -ret;
	}
	return 0;
}

static int
verbs_post_recv(struct rb2_xport_qp *qp, unsigned int n)
{
	struct verbs_qp *v = qp->drv;
	struct ibv_recv_wr wr[16], *bad;

	if (v->qp == NULL)
		return -ENOTCONN;
	if (v->failed)
		return v->failed;
	if (v->on_srq)
		return srq_post(qp->xp->priv, v, n);
	/* Zero-length: a WRITE_WITH_IMM's payload goes where it was
	 * addressed; its receive only carries the immediate. */
	while (n > 0) {
		unsigned int k = RTE_MIN(n, (unsigned int)RTE_DIM(wr));
		int ret;

		for (unsigned int i = 0; i < k; i++)
			wr[i] = (struct ibv_recv_wr){
				.wr_id = VERBS_RECV_WRID,
				.next = i + 1 < k ? &wr[i + 1] : NULL,
			};
		ret = ibv_post_recv(v->qp, wr, &bad);
		if (ret != 0) {
			RB2_XPORT_LOG(ERR, "verbs: ibv_post_recv(%u): %s", k, strerror(ret));
			return -ret;
		}
		n -= k;
	}
	return 0;
}

/*
 * Probe the peer (from the status check, so on the QP's own lcore, when its
 * channel is idle), at most every VERBS_PROBE_MS:
 *  - a QP in the error state fails, whatever put it there: retries that ran
 *    out (timeout 14 x 6 retries: about 0.5 s without an ACK), or a fault;
 *  - otherwise post a signaled zero-length RDMA WRITE. It touches no memory
 *    and needs no rkey (IB spec C9-88), so it only asks the peer's NIC for an
 *    ACK; when none comes, the retries run out and the next probe finds the
 *    QP in error. Its completion is swallowed by verbs_poll() like a forced
 *    signal (VERBS_INTERNAL_WRID), or fails the QP there.
 */
static void
verbs_probe(struct verbs_qp *v)
{
	uint32_t flags = RB2_VERBS_F_SIGNALED | RB2_VERBS_F_INTERNAL;
	uint64_t now = rte_get_timer_cycles();
	struct ibv_send_wr w, *bad;
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;
	int ret;

	if (v->qp == NULL || now < v->next_probe)
		return;
	v->next_probe = now + rte_get_timer_hz() * VERBS_PROBE_MS / 1000;
	if (v->inject_err != 0 && now >= v->inject_err) {
		v->inject_err = 0;
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_ERR;
		if (ibv_modify_qp(v->qp, &a, IBV_QP_STATE) == 0)
			RB2_XPORT_LOG(WARNING, "verbs: fault injection: QP %u moved to the error state",
				      v->qp->qp_num);
	}
	if (ibv_query_qp(v->qp, &a, IBV_QP_STATE, &ia) == 0 && a.qp_state == IBV_QPS_ERR) {
		RB2_XPORT_LOG(ERR, "verbs: QP %u is in the error state: the peer stopped acknowledging (dead or unreachable for its retry time), or a fault moved it there",
			      v->qp->qp_num);
		v->failed = -EIO;
		return;
	}
	/* An idle caller does not poll: reap (into the stash, for it) what
	 * completed, so that earlier probes give their SQ entries back. */
	if (v->nstash == 0) {
		int got = verbs_reap(v, v->stash, RTE_DIM(v->stash));

		v->stash_head = 0;
		v->nstash = got > 0 ? (unsigned int)got : 0;
	}
	if (v->failed || v->sq.free == 0)
		return; /* WRs in flight will complete or fail: they probe for us */
	memset(&w, 0, sizeof(w));
	w.wr_id = VERBS_INTERNAL_WRID;
	w.opcode = IBV_WR_RDMA_WRITE;
	w.send_flags = IBV_SEND_SIGNALED;
	ret = ibv_post_send(v->qp, &w, &bad);
	if (ret != 0) {
		RB2_XPORT_LOG(ERR, "verbs: QP %u: cannot post a liveness probe: %s", v->qp->qp_num,
			      strerror(ret));
		v->failed = -ret;
		return;
	}
	rb2_verbs_sq_posted(&v->sq, &flags, 1);
	if (!v->probed++)
		RB2_XPORT_LOG(INFO, "verbs: QP %u idle: probing the peer every %d ms",
			      v->qp->qp_num, VERBS_PROBE_MS);
}

static int
verbs_qp_status(struct rb2_xport_qp *qp)
{
	struct verbs_qp *v = qp->drv;
	struct rdma_cm_event *ev;

	if (v->failed)
		return v->failed;
	if (qp->connected)
		verbs_probe(v);
	if (v->failed)
		return v->failed;
	if (v->ec != NULL && rdma_get_cm_event(v->ec, &ev) == 0) {
		if (ev->event == RDMA_CM_EVENT_DISCONNECTED ||
		    ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL ||
		    ev->event == RDMA_CM_EVENT_TIMEWAIT_EXIT) {
			RB2_XPORT_LOG(ERR, "verbs: peer gone: %s", rdma_event_str(ev->event));
			v->failed = -ECONNRESET;
		}
		rdma_ack_cm_event(ev);
	}
	return v->failed;
}

static const char *
verbs_wc_status_str(int status)
{
	return ibv_wc_status_str((enum ibv_wc_status)status);
}

/* Blobs without a queue, for lanes' later queues: over TCP to the same
 * ip:port, as perftest exchanges its QPs' details. */
static int
verbs_oob_exchange(struct rb2_xport *xp __rte_unused, const char *peer,
		   enum rb2_xport_role role, const void *blob, size_t len, void *peer_blob,
		   size_t peer_cap, unsigned int timeout_ms)
{
	return rb2_xport_tcp_exchange(peer, role, blob, len, peer_blob, peer_cap, timeout_ms);
}

static const struct rb2_xport_ops verbs_ops = {
	.open = verbs_open,
	.close = verbs_close,
	.mr_alloc = verbs_mr_alloc,
	.mr_free = verbs_mr_free,
	.mr_reg = verbs_mr_reg,
	.mr_dereg = verbs_mr_dereg,
	.qp_create = verbs_qp_create,
	.qp_destroy = verbs_qp_destroy,
	.qp_connect_local = verbs_qp_connect_local,
	.qp_exchange = verbs_qp_exchange,
	.qp_exchange_fd_n = verbs_qp_exchange_fd_n,
	.oob_exchange = verbs_oob_exchange,
	.post_recv = verbs_post_recv,
	.doorbell_arm = verbs_doorbell_arm,
	.doorbell_done = verbs_doorbell_done,
	.doorbell_drain = verbs_doorbell_drain,
	.doorbell_leave = verbs_doorbell_leave,
	.qp_status = verbs_qp_status,
	.wc_status_str = verbs_wc_status_str,
};

RB2_XPORT_REGISTER(verbs, verbs_ops);
