/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Transport layer: driver registry and the slow-path wrappers.
 *
 * Every open transport and the queues on it are in DPDK telemetry:
 *   --> /rb2/xports
 */

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include <rte_errno.h>
#include <rte_kvargs.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_telemetry.h>

#include "rb2_xport_driver.h"
#include "rb2_xport_lane_pvt.h"
#include "rb2_xport_oob.h"

RTE_LOG_REGISTER(rb2_xport_logtype, rb2.xport, INFO);

#define MAX_DRIVERS 16
static struct rb2_xport_driver *drivers[MAX_DRIVERS];
static unsigned int n_drivers;

/* Open transports, for telemetry. */
static struct {
	pthread_mutex_t lock;
	TAILQ_HEAD(, rb2_xport) open;
} xports = { PTHREAD_MUTEX_INITIALIZER, TAILQ_HEAD_INITIALIZER(xports.open) };

/* The -ENOTSUP table every driver is overlaid on. */
static int
dummy_open(struct rb2_xport *xp __rte_unused, const char *args __rte_unused)
{
	return 0;
}
static void dummy_close(struct rb2_xport *xp __rte_unused) {}
static int
dummy_mr_alloc(struct rb2_xport *xp __rte_unused, const char *n __rte_unused,
	       size_t l __rte_unused, int s __rte_unused,
	       struct rb2_xport_mr *mr __rte_unused)
{
	return -ENOTSUP;
}
static void
dummy_mr_free(struct rb2_xport *xp __rte_unused,
	      struct rb2_xport_mr *mr __rte_unused) {}
/* Nothing to hold where a freed region's rkey is revoked (RDMA). */
static int
dummy_peer_hold(struct rb2_xport *xp __rte_unused, uint64_t r __rte_unused,
		uint32_t k __rte_unused)
{
	return 0;
}
static void
dummy_peer_release(struct rb2_xport *xp __rte_unused, uint64_t r __rte_unused,
		   uint32_t k __rte_unused) {}
static int
dummy_qp_create(struct rb2_xport *xp __rte_unused,
		struct rb2_xport_qp *qp __rte_unused,
		const struct rb2_xport_qp_attr *a __rte_unused)
{
	return -ENOTSUP;
}
static void dummy_qp_destroy(struct rb2_xport_qp *qp __rte_unused) {}
static int
dummy_qp_connect_local(struct rb2_xport_qp *a __rte_unused,
		       struct rb2_xport_qp *b __rte_unused)
{
	return -ENOTSUP;
}
static int
dummy_qp_exchange(struct rb2_xport_qp *qp __rte_unused,
		  const char *peer __rte_unused,
		  enum rb2_xport_role role __rte_unused,
		  const void *blob __rte_unused, size_t len __rte_unused,
		  void *pb __rte_unused, size_t pc __rte_unused,
		  unsigned int t __rte_unused)
{
	return -ENOTSUP;
}
static int
dummy_oob_exchange(struct rb2_xport *xp __rte_unused, const char *peer __rte_unused,
		   enum rb2_xport_role role __rte_unused, const void *blob __rte_unused,
		   size_t len __rte_unused, void *pb __rte_unused, size_t pc __rte_unused,
		   unsigned int t __rte_unused)
{
	return -ENOTSUP;
}
static void *
dummy_peer_ptr(struct rb2_xport_qp *qp __rte_unused, uint64_t r __rte_unused,
	       uint32_t k __rte_unused, size_t l __rte_unused)
{
	return NULL;
}
static int
dummy_qp_status(struct rb2_xport_qp *qp __rte_unused)
{
	return 0;
}
static int
dummy_post_recv(struct rb2_xport_qp *qp __rte_unused, unsigned int n __rte_unused)
{
	return -ENOTSUP;
}
/* The default doorbell: a futex on a word of shared memory. */
static int
futex_doorbell_arm(struct rb2_xport_qp *qp __rte_unused, uint32_t *word,
		   struct rb2_xport_doorbell *db)
{
	db->word = word;
	db->seen = __atomic_load_n(word, __ATOMIC_ACQUIRE);
	db->fd = -1;
	return 0;
}
static void dummy_doorbell_done(struct rb2_xport_qp *qp __rte_unused) {}
static const char *
dummy_wc_status_str(int status)
{
	return status == RB2_WC_SUCCESS ? "success" : "error";
}

static const struct rb2_xport_ops dummy_ops = {
	.open = dummy_open,
	.close = dummy_close,
	.mr_alloc = dummy_mr_alloc,
	.mr_free = dummy_mr_free,
	.peer_hold = dummy_peer_hold,
	.peer_release = dummy_peer_release,
	.qp_create = dummy_qp_create,
	.qp_destroy = dummy_qp_destroy,
	.qp_connect_local = dummy_qp_connect_local,
	.qp_exchange = dummy_qp_exchange,
	.oob_exchange = dummy_oob_exchange,
	.peer_ptr = dummy_peer_ptr,
	.qp_status = dummy_qp_status,
	.wc_status_str = dummy_wc_status_str,
	.post_recv = dummy_post_recv,
	.doorbell_arm = futex_doorbell_arm,
	.doorbell_done = dummy_doorbell_done,
	.doorbell_drain = dummy_doorbell_done,
};

#define OVERLAY(f) (drv->full.f = drv->ops->f ? drv->ops->f : dummy_ops.f)

void
rb2_xport_driver_register(struct rb2_xport_driver *drv)
{
	if (n_drivers == MAX_DRIVERS) {
		RB2_XPORT_LOG(ERR, "driver table full, %s not registered",
			      drv->name);
		return;
	}
	OVERLAY(open);
	OVERLAY(close);
	OVERLAY(mr_alloc);
	OVERLAY(mr_free);
	OVERLAY(peer_hold);
	OVERLAY(peer_release);
	OVERLAY(mr_reg);        /* optional: NULL where there is nothing to register */
	OVERLAY(mr_dereg);
	OVERLAY(qp_create);
	OVERLAY(qp_destroy);
	OVERLAY(qp_connect_local);
	OVERLAY(qp_exchange);
	OVERLAY(oob_exchange);
	OVERLAY(peer_ptr);
	OVERLAY(qp_status);
	OVERLAY(wc_status_str);
	OVERLAY(post_recv);
	OVERLAY(doorbell_arm);
	OVERLAY(doorbell_done);
	OVERLAY(doorbell_drain);
	drv->full.qp_exchange_fd_n = drv->ops->qp_exchange_fd_n;  /* optional: NULL */
	/* Without a leave of its own, a driver's leave is its done. */
	drv->full.doorbell_leave = drv->ops->doorbell_leave ? drv->ops->doorbell_leave :
		drv->full.doorbell_done;
	drivers[n_drivers++] = drv;
}

unsigned int
rb2_xport_drivers(const char **names, unsigned int n)
{
	for (unsigned int i = 0; i < n_drivers && i < n; i++)
		names[i] = drivers[i]->name;
	return n_drivers;
}

static const struct rb2_xport_driver *
find_driver(const char *name)
{
	for (unsigned int i = 0; i < n_drivers; i++)
		if (strcmp(drivers[i]->name, name) == 0)
			return drivers[i];
	return NULL;
}

struct rb2_xport *
rb2_xport_open(const char *name, const char *args)
{
	const struct rb2_xport_driver *drv = find_driver(name);
	struct rb2_xport *xp;
	int ret;

	if (drv == NULL) {
		char list[128] = "";
		for (unsigned int i = 0; i < n_drivers; i++) {
			strncat(list, i ? ", " : "", sizeof(list) - strlen(list) - 1);
			strncat(list, drivers[i]->name,
				sizeof(list) - strlen(list) - 1);
		}
		RB2_XPORT_LOG(ERR,
			      "no transport named '%s' (built-in: %s); a driver switched off at build time is listed by 'meson configure'",
			      name, list);
		rte_errno = ENOENT;
		return NULL;
	}
	xp = rte_zmalloc("rb2_xport", sizeof(*xp), 0);
	if (xp == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	xp->drv = drv;
	xp->ops = &drv->full;
	xp->socket_id = SOCKET_ID_ANY;
	ret = xp->ops->open(xp, args ? args : "");
	if (ret < 0) {
		rte_free(xp);
		rte_errno = -ret;
		return NULL;
	}
	if (drv->ops->oob_exchange != NULL)
		xp->caps |= RB2_XPORT_CAP_OOB;
	snprintf(xp->args, sizeof(xp->args), "%s", args ? args : "");
	pthread_mutex_lock(&xports.lock);
	TAILQ_INSERT_TAIL(&xports.open, xp, next);
	pthread_mutex_unlock(&xports.lock);
	return xp;
}

struct rb2_xport *
rb2_xport_open_spec(const char *spec)
{
	char name[32];
	const char *comma = strchr(spec, ',');
	size_t n = comma ? (size_t)(comma - spec) : strlen(spec);

	if (n == 0 || n >= sizeof(name)) {
		RB2_XPORT_LOG(ERR, "bad transport spec '%s': expected NAME[,key=value...]",
			      spec);
		rte_errno = EINVAL;
		return NULL;
	}
	memcpy(name, spec, n);
	name[n] = '\0';
	return rb2_xport_open(name, comma ? comma + 1 : "");
}

void
rb2_xport_close(struct rb2_xport *xp)
{
	if (xp == NULL)
		return;
	pthread_mutex_lock(&xports.lock);
	TAILQ_REMOVE(&xports.open, xp, next);
	pthread_mutex_unlock(&xports.lock);
	xp->ops->close(xp);
	rte_free(xp);
}

const char *
rb2_xport_name(const struct rb2_xport *xp)
{
	return xp->drv->name;
}

uint32_t
rb2_xport_caps(const struct rb2_xport *xp)
{
	return xp->caps;
}

int
rb2_xport_socket(const struct rb2_xport *xp)
{
	return xp->socket_id;
}

int
rb2_xport_mr_alloc(struct rb2_xport *xp, const char *name, size_t len,
		   int socket_id, struct rb2_xport_mr *mr)
{
	if (name == NULL || len == 0 || mr == NULL ||
	    strlen(name) >= RTE_MEMZONE_NAMESIZE) {
		RB2_XPORT_LOG(ERR, "mr_alloc: bad name or length (name '%s', %zu bytes; names are at most %d characters)",
			      name ? name : "(null)", len,
			      RTE_MEMZONE_NAMESIZE - 1);
		return -EINVAL;
	}
	memset(mr, 0, sizeof(*mr));
	if (socket_id == SOCKET_ID_ANY)
		socket_id = xp->socket_id;
	return xp->ops->mr_alloc(xp, name, len, socket_id, mr);
}

void
rb2_xport_mr_free(struct rb2_xport *xp, struct rb2_xport_mr *mr)
{
	if (mr == NULL || mr->addr == NULL)
		return;
	xp->ops->mr_free(xp, mr);
	memset(mr, 0, sizeof(*mr));
}

int
rb2_xport_peer_hold(struct rb2_xport *xp, uint64_t remote, uint32_t rkey)
{
	return xp->ops->peer_hold(xp, remote, rkey);
}

void
rb2_xport_peer_release(struct rb2_xport *xp, uint64_t remote, uint32_t rkey)
{
	xp->ops->peer_release(xp, remote, rkey);
}

int
rb2_xport_mr_reg(struct rb2_xport *xp, void *addr, size_t len, struct rb2_xport_mr *mr)
{
	if (addr == NULL || len == 0 || mr == NULL)
		return -EINVAL;
	if (xp->ops->mr_reg == NULL)
		return -ENOTSUP;
	memset(mr, 0, sizeof(*mr));
	return xp->ops->mr_reg(xp, addr, len, mr);
}

void
rb2_xport_mr_dereg(struct rb2_xport *xp, struct rb2_xport_mr *mr)
{
	if (mr == NULL || mr->addr == NULL || xp->ops->mr_dereg == NULL)
		return;
	xp->ops->mr_dereg(xp, mr);
	memset(mr, 0, sizeof(*mr));
}

/* A queue that is not connected refuses to post. */
static int
unconnected_post(struct rb2_xport_qp *qp __rte_unused,
		 const struct rb2_xport_wr *wrs __rte_unused,
		 unsigned int n __rte_unused)
{
	return -ENOTCONN;
}

static int
unconnected_poll(struct rb2_xport_qp *qp __rte_unused,
		 struct rb2_xport_wc *wcs __rte_unused,
		 unsigned int n __rte_unused)
{
	return 0;
}

struct rb2_xport_qp *
rb2_xport_qp_create(struct rb2_xport *xp, const struct rb2_xport_qp_attr *attr)
{
	struct rb2_xport_qp *qp;
	int socket, ret;

	if (attr == NULL || (attr->lcore_id != LCORE_ID_ANY &&
			     attr->lcore_id >= RTE_MAX_LCORE)) {
		rte_errno = EINVAL;
		return NULL;
	}
	socket = attr->lcore_id == LCORE_ID_ANY ? xp->socket_id :
		(int)rte_lcore_to_socket_id(attr->lcore_id);
	qp = rte_zmalloc_socket("rb2_xport_qp", sizeof(*qp),
				RTE_CACHE_LINE_SIZE, socket);
	if (qp == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	qp->xp = xp;
	qp->lcore_id = attr->lcore_id;
	qp->post = unconnected_post;
	qp->poll = unconnected_poll;
	ret = attr->lane != NULL ? rb2_xport_lane_qp_create(qp, attr) :
		xp->ops->qp_create(xp, qp, attr);
	if (ret < 0) {
		rte_free(qp);
		rte_errno = -ret;
		return NULL;
	}
	if (attr->lane != NULL) {
		atomic_fetch_add_explicit(&xp->lane_queues, 1, memory_order_relaxed);
	} else {
		atomic_fetch_add_explicit(&xp->qps, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&xp->qps_created, 1, memory_order_relaxed);
	}
	return qp;
}

void
rb2_xport_qp_destroy(struct rb2_xport_qp *qp)
{
	if (qp == NULL)
		return;
	if (qp->lane != NULL) {
		rb2_xport_lane_qp_destroy(qp);
		atomic_fetch_sub_explicit(&qp->xp->lane_queues, 1, memory_order_relaxed);
	} else {
		qp->xp->ops->qp_destroy(qp);
		atomic_fetch_sub_explicit(&qp->xp->qps, 1, memory_order_relaxed);
	}
	rte_free(qp);
}

int
rb2_xport_qp_connect_local(struct rb2_xport_qp *a, struct rb2_xport_qp *b)
{
	int ret;

	if (a == NULL || b == NULL || a == b || a->xp != b->xp)
		return -EINVAL;
	if (a->connected || b->connected)
		return -EISCONN;
	ret = a->lane != NULL || b->lane != NULL ? rb2_xport_lane_qp_connect_local(a, b) :
		a->xp->ops->qp_connect_local(a, b);
	if (ret == 0)
		a->peer_local = b->peer_local = 1;
	return ret;
}

int
rb2_xport_qp_exchange(struct rb2_xport_qp *qp, const char *peer,
		      enum rb2_xport_role role, const void *blob, size_t len,
		      void *peer_blob, size_t peer_cap, unsigned int timeout_ms)
{
	if (qp == NULL || peer == NULL || peer[0] == '\0' || blob == NULL ||
	    peer_blob == NULL)
		return -EINVAL;
	if (len > RB2_XPORT_BLOB_MAX)
		return -EMSGSIZE;
	if (qp->connected)
		return -EISCONN;
	if (qp->lane != NULL)
		return rb2_xport_lane_qp_exchange(qp, peer, role, blob, len, peer_blob, peer_cap,
						  timeout_ms);
	return qp->xp->ops->qp_exchange(qp, peer, role, blob, len, peer_blob,
					peer_cap, timeout_ms);
}

int
rb2_xport_qp_exchange_n(struct rb2_xport_exch *x, unsigned int n, const char *peer,
			unsigned int timeout_ms)
{
	int fd, one_by_one = 0;

	if (x == NULL || n == 0 || peer == NULL || peer[0] == '\0')
		return -EINVAL;
	fd = rb2_xport_peer_fd(peer);
	if (fd < 0) {
		RB2_XPORT_LOG(ERR, "several queues connect over a stream socket (fd:N), not at '%s'",
			      peer);
		return -EINVAL;
	}
	for (unsigned int i = 0; i < n; i++) {
		if (x[i].qp == NULL || x[i].blob == NULL || x[i].peer_blob == NULL ||
		    x[i].qp->xp != x[0].qp->xp)
			return -EINVAL;
		if (x[i].len > RB2_XPORT_BLOB_MAX)
			return -EMSGSIZE;
		if (x[i].qp->connected)
			return -EISCONN;
		one_by_one |= x[i].qp->lane != NULL;
	}
	if (!one_by_one && x[0].qp->xp->ops->qp_exchange_fd_n != NULL)
		return x[0].qp->xp->ops->qp_exchange_fd_n(x, n, fd, timeout_ms);
	for (unsigned int i = 0; i < n; i++) {
		int ret = rb2_xport_qp_exchange(x[i].qp, peer, x[i].role, x[i].blob, x[i].len,
						x[i].peer_blob, x[i].peer_cap, timeout_ms);

		if (ret < 0)
			return ret;
		x[i].peer_len = ret;
	}
	return 0;
}

void *
rb2_xport_peer_ptr(struct rb2_xport_qp *qp, uint64_t remote, uint32_t rkey,
		   size_t len)
{
	if (!(qp->xp->caps & RB2_XPORT_CAP_LOADSTORE) || !qp->connected)
		return NULL;
	return qp->xp->ops->peer_ptr(qp, remote, rkey, len);
}

int
rb2_xport_qp_status(struct rb2_xport_qp *qp)
{
	if (!qp->connected)
		return -ENOTCONN;
	return qp->lane != NULL ? rb2_xport_lane_qp_status(qp) : qp->xp->ops->qp_status(qp);
}

int
rb2_xport_post_recv(struct rb2_xport_qp *qp, unsigned int n)
{
	if (!(qp->xp->caps & RB2_XPORT_CAP_IMM) || qp->lane != NULL)
		return -ENOTSUP;
	return n == 0 ? 0 : qp->xp->ops->post_recv(qp, n);
}

int
rb2_xport_doorbell_arm(struct rb2_xport_qp *qp, uint32_t *word, struct rb2_xport_doorbell *db)
{
	if (!(qp->xp->caps & RB2_XPORT_CAP_WAKE) || qp->lane != NULL)
		return -ENOTSUP;
	return qp->xp->ops->doorbell_arm(qp, word, db);
}

void
rb2_xport_doorbell_done(struct rb2_xport_qp *qp)
{
	qp->xp->ops->doorbell_done(qp);
}

void
rb2_xport_doorbell_leave(struct rb2_xport_qp *qp)
{
	qp->xp->ops->doorbell_leave(qp);
}

void
rb2_xport_doorbell_drain(struct rb2_xport_qp *qp)
{
	if ((qp->xp->caps & RB2_XPORT_CAP_WAKE) && qp->lane == NULL)
		qp->xp->ops->doorbell_drain(qp);
}

static int
words_changed(const struct rb2_xport_doorbell *db, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		if (db[i].word != NULL && __atomic_load_n(db[i].word, __ATOMIC_ACQUIRE) != db[i].seen)
			return 1;
	return 0;
}

static uint64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* Some doorbells are descriptors: poll(2) them, and look at the words every
 * millisecond (a sleeper mixing the two is not the common case). */
static int
wait_fds(const struct rb2_xport_doorbell *db, unsigned int n, unsigned int timeout_us)
{
	struct pollfd pfd[FUTEX_WAITV_MAX];
	unsigned int nfd = 0, words = 0;
	uint64_t deadline = now_us() + timeout_us;

	for (unsigned int i = 0; i < n; i++) {
		if (db[i].fd >= 0)
			pfd[nfd++] = (struct pollfd){ .fd = db[i].fd, .events = POLLIN };
		words += db[i].word != NULL;
	}
	for (;;) {
		uint64_t t = now_us();
		int ret;

		if (words > 0 && words_changed(db, n))
			return 0;
		if (t >= deadline)
			return -ETIMEDOUT;
		ret = poll(pfd, nfd, words > 0 ? 1 : (int)RTE_MIN((deadline - t + 999) / 1000,
								  (uint64_t)INT_MAX));
		if (ret > 0)
			return 0;
		if (ret < 0)
			return -errno;
	}
}

int
rb2_xport_doorbell_wait(const struct rb2_xport_doorbell *db, unsigned int n,
			unsigned int timeout_us)
{
	struct futex_waitv wv[FUTEX_WAITV_MAX];
	struct timespec ts;
	long ret;

	if (n == 0 || n > FUTEX_WAITV_MAX)
		return -EINVAL;
	for (unsigned int i = 0; i < n; i++)
		if (db[i].fd >= 0)
			return wait_fds(db, n, timeout_us);
	if (n == 1) {
		/* Not FUTEX_PRIVATE: the word may be shared with a process
		 * that rings it (a memzone of a multi-process group). */
		ts.tv_sec = timeout_us / 1000000;
		ts.tv_nsec = (long)(timeout_us % 1000000) * 1000;
		ret = syscall(SYS_futex, db[0].word, FUTEX_WAIT, db[0].seen, &ts, NULL, 0);
	} else {
		for (unsigned int i = 0; i < n; i++)
			wv[i] = (struct futex_waitv){ .val = db[i].seen,
				.uaddr = (uint64_t)(uintptr_t)db[i].word, .flags = FUTEX_32 };
		/* futex_waitv's timeout is absolute. */
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += timeout_us / 1000000;
		ts.tv_nsec += (long)(timeout_us % 1000000) * 1000;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		ret = syscall(SYS_futex_waitv, wv, n, 0, &ts, CLOCK_MONOTONIC);
	}
	if (ret >= 0 || errno == EAGAIN)   /* rung, or changed before we slept */
		return 0;
	return -errno;
}

const char *
rb2_xport_wc_status_str(const struct rb2_xport *xp, int status)
{
	return xp->ops->wc_status_str(status);
}

/*
 * Transport arguments are DPDK's devargs convention, "key=value,key=value",
 * parsed by rte_kvargs (which also takes [a,b] lists as one value). The
 * arguments are parsed again per lookup: they are read at open time only.
 */

/* @args parsed, every key with a value; NULL (and an error logged for
 * @drv) if it is not key=value,... */
static struct rte_kvargs *
args_parse(const char *drv, const char *args)
{
	struct rte_kvargs *kv = rte_kvargs_parse(args != NULL ? args : "", NULL);

	if (kv == NULL) {
		RB2_XPORT_LOG(ERR, "%s: bad arguments '%s': expected key=value[,key=value...]",
			      drv, args);
		return NULL;
	}
	for (unsigned int i = 0; i < kv->count; i++)
		if (kv->pairs[i].value == NULL || kv->pairs[i].value[0] == '\0') {
			RB2_XPORT_LOG(ERR, "%s: bad argument '%s': expected key=value", drv,
				      kv->pairs[i].key);
			rte_kvargs_free(kv);
			return NULL;
		}
	return kv;
}

int
rb2_xport_arg(const char *args, const char *key, char *val, size_t len)
{
	struct rte_kvargs *kv = args != NULL && args[0] != '\0' ?
		rte_kvargs_parse(args, NULL) : NULL;
	const char *v = kv != NULL ? rte_kvargs_get(kv, key) : NULL;
	int ret = 0;

	if (v != NULL) {
		ret = strlen(v) < len ? 1 : -E2BIG;
		if (ret > 0)
			memcpy(val, v, strlen(v) + 1);
	}
	rte_kvargs_free(kv);
	return ret;
}

int
rb2_xport_arg_u32(const char *drv, const char *args, const char *key, uint32_t min,
		  uint32_t max, uint32_t *val)
{
	char buf[32], *end;
	unsigned long long v;
	int ret = rb2_xport_arg(args, key, buf, sizeof(buf));

	if (ret == 0)
		return 0;
	errno = 0;
	v = ret > 0 && buf[0] != '-' ? strtoull(buf, &end, 0) : 0;
	if (ret < 0 || buf[0] == '-' || errno != 0 || end == buf || *end != '\0' || v < min ||
	    v > max) {
		RB2_XPORT_LOG(ERR, "%s: %s=%s: a whole number from %u to %u expected", drv, key,
			      ret > 0 ? buf : "(too long)", min, max);
		return -EINVAL;
	}
	*val = (uint32_t)v;
	return 1;
}

static _Atomic int fd_floor, fd_grow;
/* Where raises landed once the floor had no room and the limit could not
 * grow (0: not so far): the next go there at once, one fcntl() where the
 * way there took four system calls a descriptor (nginx sets its soft limit
 * to its hard one). */
static _Atomic int fd_top_quarter;

void
rb2_xport_fd_floor_set(int floor, int grow)
{
	atomic_store_explicit(&fd_floor, floor > 0 ? floor : 0, memory_order_relaxed);
	atomic_store_explicit(&fd_grow, grow != 0, memory_order_relaxed);
}

/* Room for our descriptors at @floor: the soft limit doubled (at least
 * 64 past the floor), up to the hard one. @return whether it grew. */
static int
fd_room(int floor)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	struct rlimit rl;
	int grew = 0;

	pthread_mutex_lock(&lock);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rlim_t want = RTE_MAX(rl.rlim_cur * 2, (rlim_t)floor + 64);

		rl.rlim_cur = RTE_MIN(want, rl.rlim_max);
		grew = setrlimit(RLIMIT_NOFILE, &rl) == 0;
	}
	pthread_mutex_unlock(&lock);
	return grew;
}

int
rb2_xport_fd_raise(int fd)
{
	int floor = atomic_load_explicit(&fd_floor, memory_order_relaxed);
	int hi;

	if (fd < 0 || floor == 0 || fd >= floor)
		return fd;
	hi = atomic_load_explicit(&fd_top_quarter, memory_order_relaxed);
	if (hi > fd) {
		hi = fcntl(fd, F_DUPFD_CLOEXEC, hi);
		if (hi >= 0) {
			close(fd);
			return hi;
		}
	}
	hi = fcntl(fd, F_DUPFD_CLOEXEC, floor);
	/* EINVAL: the floor is at the soft limit or past it; EMFILE: full
	 * from there up. */
	if (hi < 0 && (errno == EINVAL || errno == EMFILE) &&
	    atomic_load_explicit(&fd_grow, memory_order_relaxed) && fd_room(floor))
		hi = fcntl(fd, F_DUPFD_CLOEXEC, floor);
	/* No room past the floor, and the limit cannot grow: its top quarter,
	 * where the program's own come last. */
	if (hi < 0) {
		struct rlimit rl;

		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
		    rl.rlim_cur / 4 * 3 > (rlim_t)fd && rl.rlim_cur / 4 * 3 < (rlim_t)floor) {
			hi = fcntl(fd, F_DUPFD_CLOEXEC, (int)(rl.rlim_cur / 4 * 3));
			if (hi >= 0)
				atomic_store_explicit(&fd_top_quarter, (int)(rl.rlim_cur / 4 * 3),
						      memory_order_relaxed);
		}
	}
	if (hi < 0)
		return fd;
	close(fd);
	return hi;
}

int
rb2_xport_args_check(const char *drv, const char *args,
		     const char *const *keys)
{
	struct rte_kvargs *kv;

	if (args == NULL || args[0] == '\0')
		return 0;
	kv = args_parse(drv, args);
	if (kv == NULL)
		return -EINVAL;
	for (unsigned int i = 0; i < kv->count; i++) {
		unsigned int k = 0;

		while (keys[k] != NULL && strcmp(keys[k], kv->pairs[i].key) != 0)
			k++;
		if (keys[k] == NULL) {
			char valid[128] = "";

			for (k = 0; keys[k] != NULL; k++) {
				strncat(valid, k ? ", " : "", sizeof(valid) - strlen(valid) - 1);
				strncat(valid, keys[k], sizeof(valid) - strlen(valid) - 1);
			}
			RB2_XPORT_LOG(ERR, "%s: bad argument '%s=%s': expected key=value with key "
				      "one of: %s", drv, kv->pairs[i].key, kv->pairs[i].value, valid);
			rte_kvargs_free(kv);
			return -EINVAL;
		}
	}
	rte_kvargs_free(kv);
	return 0;
}

/* ---- telemetry ----------------------------------------------------------- */

/* /rb2/xports: each open transport, by its place in the list. */
static int
tel_xports(const char *cmd __rte_unused, const char *params __rte_unused,
	   struct rte_tel_data *d)
{
	struct rb2_xport *xp;
	unsigned int i = 0;

	rte_tel_data_start_dict(d);
	pthread_mutex_lock(&xports.lock);
	TAILQ_FOREACH(xp, &xports.open, next) {
		struct rte_tel_data *x = rte_tel_data_alloc();
		char key[16];

		if (x == NULL)
			break;
		rte_tel_data_start_dict(x);
		rte_tel_data_add_dict_string(x, "driver", xp->drv->name);
		rte_tel_data_add_dict_string(x, "args", xp->args);
		rte_tel_data_add_dict_int(x, "socket", xp->socket_id);
		rte_tel_data_add_dict_u64(x, "caps", xp->caps);
		/* QPs (shm: queues) in use now: what sharing keeps down. */
		rte_tel_data_add_dict_u64(x, "qps",
			atomic_load_explicit(&xp->qps, memory_order_relaxed));
		rte_tel_data_add_dict_u64(x, "lane_queues",
			atomic_load_explicit(&xp->lane_queues, memory_order_relaxed));
		rte_tel_data_add_dict_u64(x, "qps_created",
			atomic_load_explicit(&xp->qps_created, memory_order_relaxed));
		snprintf(key, sizeof(key), "%u", i++);
		if (rte_tel_data_add_dict_container(d, key, x, 0) != 0)
			rte_tel_data_free(x);
	}
	pthread_mutex_unlock(&xports.lock);
	return 0;
}

RTE_INIT(rb2_xport_telemetry_init)
{
	rte_telemetry_register_cmd("/rb2/xports", tel_xports,
		"Returns each open transport: driver, arguments, QPs in use and queues on lanes. Takes no parameters");
}
