/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * The shm transport: peers are lcores of one process, or processes of one
 * DPDK multi-process group (primary and secondaries map every memzone at the
 * same virtual address, so a peer's address is usable as is).
 *
 * It behaves as a NIC that executes each WR at the doorbell, in posting
 * order:
 *   - a WRITE lands as a NIC's DMA does, in increasing address order, each
 *     byte once, by release stores (rb2_xport_dma_write()), so a peer that
 *     acquires a word of it (a ring pointer, a marker) sees every byte
 *     written before; a READ is its mirror (rb2_xport_dma_read());
 *   - a signaled WR leaves a completion in the queue's completion ring.
 *
 * Modes (open argument mode=):
 *   loadstore  (default) also advertises RB2_XPORT_CAP_LOADSTORE: RB² then
 *              writes slots straight into the peer's ring, and posts only the
 *              pointer WRITEs.
 *   copy       the faithful "NIC copy" mode: every slot goes through a
 *              WRITE, as on RDMA, so the algorithm itself can be measured.
 *
 * A sleeping peer is woken through a futex on a doorbell word in its memory
 * (RB2_WR_WAKE; RB2_XPORT_CAP_WAKE); the sleeper waits with the layer's
 * default doorbell, the futex.
 *
 * A peer in another process is watched as a NIC watches its link: the
 * rendezvous records its pid and start time, and the status check (idle
 * halves, at most every millisecond) reports it gone once /proc says it
 * exited, became a zombie, or the pid now names another process.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <limits.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/syscall.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_memcpy.h>
#include <rte_memory.h>
#include <rte_memzone.h>
#include <rte_pause.h>

#include <rb2_xport_driver.h>

#define SHM_DEFAULT_CQ_DEPTH 1024
#define SHM_DEFAULT_SQ_DEPTH 4096
#define SHM_MAX_INLINE 1024

enum shm_mode { SHM_LOADSTORE, SHM_COPY };

struct shm_priv {
	enum shm_mode mode;
};

/* Per-queue state: the completion ring of signaled WRs. Single-threaded:
 * only the queue's own lcore posts and polls. */
struct shm_qp {
	int32_t peer_pid;        /* another process's, or 0 */
	uint64_t peer_start;     /* its start time, in clock ticks after boot */
	uint32_t cq_mask;
	uint32_t cq_head; /* next completion to hand out */
	uint32_t cq_tail; /* next free entry */
	struct rb2_xport_wc cq[];
};

static uint32_t
name_key(const char *name)
{
	uint32_t h = 2166136261u; /* FNV-1a: a key that identifies the zone */

	for (; *name; name++)
		h = (h ^ (uint8_t)*name) * 16777619u;
	return h;
}

static int
shm_open(struct rb2_xport *xp, const char *args)
{
	static const char *const keys[] = {"mode", NULL};
	struct shm_priv *priv;
	char mode[16];
	int ret;

	ret = rb2_xport_args_check("shm", args, keys);
	if (ret < 0)
		return ret;
	priv = rte_zmalloc("shm_priv", sizeof(*priv), 0);
	if (priv == NULL)
		return -ENOMEM;
	priv->mode = SHM_LOADSTORE;
	ret = rb2_xport_arg(args, "mode", mode, sizeof(mode));
	if (ret > 0 && strcmp(mode, "copy") == 0) {
		priv->mode = SHM_COPY;
	} else if (ret != 0 && (ret < 0 || strcmp(mode, "loadstore") != 0)) {
		RB2_XPORT_LOG(ERR, "shm: bad mode '%s': use mode=loadstore or mode=copy",
			      ret > 0 ? mode : "(too long)");
		rte_free(priv);
		return -EINVAL;
	}
	xp->priv = priv;
	xp->caps = RB2_XPORT_CAP_MULTIPROC | RB2_XPORT_CAP_READ | RB2_XPORT_CAP_WAKE;
	if (priv->mode == SHM_LOADSTORE)
		xp->caps |= RB2_XPORT_CAP_LOADSTORE;
	/* Shared memory lives wherever the opening lcore runs. */
	xp->socket_id = (int)rte_socket_id();
	if (xp->socket_id < 0 || (unsigned int)xp->socket_id >= RTE_MAX_NUMA_NODES)
		xp->socket_id = 0;
	return 0;
}

static void
shm_close(struct rb2_xport *xp)
{
	rte_free(xp->priv);
	xp->priv = NULL;
}

/* A process's start time (field 22 of /proc/PID/stat), or 0 once it is
 * gone: no such process, or a zombie that has exited. */
static uint64_t
proc_start(int32_t pid)
{
	char path[32], buf[512], *p;
	unsigned long long start = 0;
	ssize_t n;
	int fd;

	/* One read (the file is generated whole at it), not stdio's fstat and
	 * second read. */
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* After the command's closing parenthesis: state, then 19 fields to
	 * the start time. */
	p = strrchr(buf, ')');
	if (p == NULL || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')
		return 0;
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
		   &start) != 1)
		return 0;
	return start;
}

/*
 * A region's lifetime. RDMA revokes a freed region's rkey, so a peer's late
 * WRITE fails at the NIC; shared memory has no such check, and a peer's
 * store into a freed region would land in whatever the group allocates
 * there next (another channel's ring, read by its receiver as messages).
 * So a region lives until its owner (shm_mr_free()) and its one holder
 * (shm_peer_hold(): the peer that stores into it) have both let go, or the
 * other of the two has died. Its header, the cache line before the region,
 * is in the group's shared memory: the last one frees the memzone, from
 * whichever process it is.
 */
#define SHM_REGION_MAGIC 0x52423248u /* "RB2H" */

struct shm_region {
	_Atomic uint32_t magic;        /* 0 once freed */
	uint32_t rkey;
	_Atomic uint32_t refs;         /* the owner's, and the holder's */
	int32_t owner_pid;
	uint64_t owner_start;          /* proc_start(owner_pid) */
	_Atomic int32_t holder_pid;    /* 0: nobody holds it */
	uint32_t pad;
	uint64_t holder_start;
	const struct rte_memzone *mz;  /* the same in every process */
};

static struct shm_region *
region_of(void *addr)
{
	return RTE_PTR_SUB(addr, RTE_CACHE_LINE_SIZE);
}

/* This process's start time, read once per process (0 where /proc cannot
 * tell): a fork child that took its parent's would be taken for dead by
 * every peer that checks it, and its regions freed under it. */
static uint64_t
self_start(void)
{
	static _Atomic uint64_t start;
	static _Atomic int32_t start_pid;
	int32_t me = (int32_t)getpid();
	uint64_t s;

	if (atomic_load_explicit(&start_pid, memory_order_acquire) == me &&
	    (s = atomic_load_explicit(&start, memory_order_relaxed)) != 0)
		return s;
	s = proc_start(me);
	atomic_store_explicit(&start, s, memory_order_relaxed);
	atomic_store_explicit(&start_pid, me, memory_order_release);
	return s;
}

/*
 * Whether the process @pid that started at @start lives, for a qp's status.
 * Every idle channel half asks every millisecond or so, and a look at /proc
 * costs an open, a read and a close (10-20 us on the 2-vCPU VM here): with
 * 50 connections to one peer, 100 halves per process asked, and the looks
 * took 8% of both redis-server's and redis-benchmark's CPU (perf, -c 50
 * under rb2-run). So a process that was seen alive is taken to be alive
 * for PEER_SEEN_US more, for every qp of this process: one look per peer
 * and interval, whatever the number of qps. Only life is remembered; a
 * death is always looked up, so it is never reported late by more than
 * PEER_SEEN_US. The table is tried, never waited for: a thread that finds
 * it busy (or a fork child that inherited it mid-update) looks at /proc.
 */
#define PEER_SEEN_US 500
#define PEER_SEEN_SLOTS 16

static struct {
	int32_t pid;
	uint64_t start, at;
} peer_seen[PEER_SEEN_SLOTS];
static atomic_flag peer_seen_busy = ATOMIC_FLAG_INIT;

static void
peer_seen_note(int32_t pid, uint64_t start, uint64_t now)
{
	unsigned int k = (unsigned int)pid % PEER_SEEN_SLOTS;

	if (!atomic_flag_test_and_set_explicit(&peer_seen_busy, memory_order_acquire)) {
		peer_seen[k].pid = pid;
		peer_seen[k].start = start;
		peer_seen[k].at = now;
		atomic_flag_clear_explicit(&peer_seen_busy, memory_order_release);
	}
}

/* What the table says of @pid: its start time if seen alive within @us
 * microseconds of @now, else 0. */
static uint64_t
peer_seen_get(int32_t pid, uint64_t now, unsigned int us)
{
	unsigned int k = (unsigned int)pid % PEER_SEEN_SLOTS;
	uint64_t fresh = rte_get_timer_hz() * us / 1000000;
	uint64_t start = 0;

	if (!atomic_flag_test_and_set_explicit(&peer_seen_busy, memory_order_acquire)) {
		if (peer_seen[k].pid == pid && now - peer_seen[k].at < fresh)
			start = peer_seen[k].start;
		atomic_flag_clear_explicit(&peer_seen_busy, memory_order_release);
	}
	return start;
}

/* Whether @pid, started at @start, lives: seen so within @us, or found so
 * in /proc now. */
static int
peer_lives(int32_t pid, uint64_t start, unsigned int us)
{
	uint64_t now = rte_get_timer_cycles();

	if (peer_seen_get(pid, now, us) == start)
		return 1;
	if (proc_start(pid) != start)
		return 0;
	peer_seen_note(pid, start, now);
	return 1;
}

/* Whether a process may still store: without /proc to tell (start 0), it
 * is taken to be there, and the region outlives it rather than risk it.
 * A close puts two regions of one peer back to back (the one it held, its
 * own), each asking: the second takes the first's look, if that was within
 * PUT_SEEN_US. A shorter bound than PEER_SEEN_US: a peer taken for alive
 * that has just died leaves its region to nobody. */
#define PUT_SEEN_US 50

static int
still_there(int32_t pid, uint64_t start)
{
	return pid == (int32_t)getpid() || start == 0 || peer_lives(pid, start, PUT_SEEN_US);
}

/* Drop one reference; the last frees the region. When one is left and the
 * process that owes it has died, it is dropped for that process: nobody
 * else ever will. */
static void
region_put(struct shm_region *r, int as_holder)
{
	uint32_t left = atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) - 1;

	if (left == 1) {
		int32_t pid = as_holder ? r->owner_pid :
			atomic_load_explicit(&r->holder_pid, memory_order_relaxed);
		uint64_t start = as_holder ? r->owner_start : r->holder_start;
		uint32_t one = 1;

		if (still_there(pid, start) ||
		    !atomic_compare_exchange_strong_explicit(&r->refs, &one, 0,
							     memory_order_acq_rel,
							     memory_order_relaxed))
			return;
		RB2_XPORT_LOG(DEBUG, "shm: '%s' freed for its %s, process %d, which is gone",
			      r->mz->name, as_holder ? "owner" : "holder", (int)pid);
		left = 0;
	}
	if (left == 0) {
		/* A stale handle never matches again. */
		atomic_store_explicit(&r->magic, 0, memory_order_relaxed);
		rte_memzone_free(r->mz);
	}
}

static int
shm_mr_alloc(struct rb2_xport *xp __rte_unused, const char *name, size_t len,
	     int socket, struct rb2_xport_mr *mr)
{
	size_t zlen = len + RTE_CACHE_LINE_SIZE; /* the header line first */
	const struct rte_memzone *mz;
	struct shm_region *r;

	mz = rte_memzone_reserve_aligned(name, zlen, socket, 0,
					 RTE_CACHE_LINE_SIZE);
	if (mz == NULL && rte_errno == ENOMEM && socket != SOCKET_ID_ANY) {
		RB2_XPORT_LOG(WARNING, "shm: no %zu bytes on socket %d for '%s', trying any socket",
			      len, socket, name);
		mz = rte_memzone_reserve_aligned(name, zlen, SOCKET_ID_ANY, 0,
						 RTE_CACHE_LINE_SIZE);
	}
	if (mz == NULL) {
		int err = rte_errno;
		RB2_XPORT_LOG(ERR, "shm: cannot reserve %zu bytes for '%s': %s%s",
			      len, name, rte_strerror(err),
			      err == ENOMEM ? " (give the EAL more memory: -m MB, or reserve hugepages)" :
			      err == EEXIST ? " (in use: by a live channel, or by one whose peer still holds it)" : "");
		return err == EEXIST ? -EEXIST : -ENOMEM;
	}
	if (!(mz->flags & RB2_MEMZONE_F_ZEROED))
		memset(mz->addr, 0, zlen);
	r = mz->addr;
	r->mz = mz;
	r->owner_pid = (int32_t)getpid();
	r->owner_start = self_start();
	/* A key no earlier region of this name had: a peer still holding the
	 * last one's handle never matches this one. */
	r->rkey = name_key(name) ^ (uint32_t)(rte_get_tsc_cycles() * 2654435761u);
	atomic_store_explicit(&r->refs, 1, memory_order_relaxed);
	atomic_store_explicit(&r->magic, SHM_REGION_MAGIC, memory_order_relaxed);
	mr->addr = RTE_PTR_ADD(mz->addr, RTE_CACHE_LINE_SIZE);
	mr->len = len;
	mr->lkey = mr->rkey = r->rkey;
	mr->socket_id = mz->socket_id;
	mr->mz = mz;
	return 0;
}

static void
shm_mr_free(struct rb2_xport *xp __rte_unused, struct rb2_xport_mr *mr)
{
	region_put(region_of(mr->addr), 0);
}

/* The header of the region a peer advertised at @p remote with @p rkey, or
 * NULL if there is none (any more). */
static struct shm_region *
region_lookup(uint64_t remote, uint32_t rkey)
{
	void *p = (void *)(uintptr_t)remote;
	struct shm_region *r;

	if (remote < RTE_CACHE_LINE_SIZE || remote % RTE_CACHE_LINE_SIZE != 0)
		return NULL;
	r = region_of(p);
	if (rte_mem_virt2memseg_list(r) == NULL ||
	    atomic_load_explicit(&r->magic, memory_order_relaxed) != SHM_REGION_MAGIC ||
	    r->rkey != rkey)
		return NULL;
	return r;
}

static int
shm_peer_hold(struct rb2_xport *xp __rte_unused, uint64_t remote, uint32_t rkey)
{
	struct shm_region *r = region_lookup(remote, rkey);
	int32_t nobody = 0;
	uint32_t one = 1;

	if (r == NULL)
		return -ESTALE;
	if (!atomic_compare_exchange_strong_explicit(&r->holder_pid, &nobody,
						     (int32_t)getpid(),
						     memory_order_relaxed,
						     memory_order_relaxed))
		return -EBUSY;
	r->holder_start = self_start();
	/* Release: the holder's pid and start before its reference; the
	 * owner reads them only after seeing it (region_put()). */
	if (!atomic_compare_exchange_strong_explicit(&r->refs, &one, 2,
						     memory_order_acq_rel,
						     memory_order_relaxed)) {
		atomic_store_explicit(&r->holder_pid, 0, memory_order_relaxed);
		return -ESTALE; /* its owner let go meanwhile */
	}
	return 0;
}

static void
shm_peer_release(struct rb2_xport *xp __rte_unused, uint64_t remote, uint32_t rkey)
{
	struct shm_region *r = region_lookup(remote, rkey);

	if (r == NULL) {
		RB2_XPORT_LOG(ERR, "shm: releasing a region at 0x%" PRIx64 " that is not held (key 0x%x)",
			      remote, rkey);
		return;
	}
	region_put(r, 1);
}

/*
 * Ring a sleeping peer's doorbell: change the word, then wake whoever sleeps
 * on it. The change comes first, so a peer that has not yet called
 * FUTEX_WAIT finds the word changed and does not sleep. Not FUTEX_PRIVATE:
 * the peer may be another process mapping the same memzone. (A failed wake
 * leaves the peer to its sleep's timeout; FUTEX_WAKE on mapped memory does
 * not fail.)
 */
static void
shm_wake(uint32_t *word)
{
	__atomic_fetch_add(word, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/*
 * The doorbell: execute the chain now, in order.
 * Cost: the copies themselves; the pointer WRITE is one release store.
 */
static int
shm_post(struct rb2_xport_qp *qp, const struct rb2_xport_wr *wrs,
	 unsigned int n)
{
	struct shm_qp *s = qp->drv;
	unsigned int i, signaled = 0;

	/* Refuse the whole chain before running any of it. */
	for (i = 0; i < n; i++) {
		if (unlikely(wrs[i].opcode != RB2_WR_WRITE &&
			     wrs[i].opcode != RB2_WR_READ && wrs[i].opcode != RB2_WR_WAKE))
			return -ENOTSUP;
		signaled += (wrs[i].flags & RB2_WR_SIGNALED) != 0;
	}
	if (unlikely(signaled > s->cq_mask + 1 - (s->cq_tail - s->cq_head)))
		return -ENOSPC; /* completion ring full: poll first */

	for (i = 0; i < n; i++) {
		const struct rb2_xport_wr *wr = &wrs[i];

		switch (wr->opcode) {
		case RB2_WR_WRITE:
			rb2_xport_dma_write((void *)(uintptr_t)wr->remote, wr->local, wr->len);
			break;
		case RB2_WR_READ:
			rb2_xport_dma_read(wr->local, (const void *)(uintptr_t)wr->remote, wr->len);
			break;
		case RB2_WR_WAKE:
			shm_wake((uint32_t *)(uintptr_t)wr->remote);
			break;
		default: /* refused above */
			break;
		}
		if (wr->flags & RB2_WR_SIGNALED) {
			struct rb2_xport_wc *wc =
				&s->cq[s->cq_tail++ & s->cq_mask];
			wc->wr_id = wr->wr_id;
			wc->status = RB2_WC_SUCCESS;
			wc->opcode = wr->opcode;
			wc->imm = 0;
			wc->byte_len = wr->len;
		}
	}
	return 0;
}

static int
shm_poll(struct rb2_xport_qp *qp, struct rb2_xport_wc *wcs, unsigned int n)
{
	struct shm_qp *s = qp->drv;
	unsigned int i = 0;

	while (i < n && s->cq_head != s->cq_tail)
		wcs[i++] = s->cq[s->cq_head++ & s->cq_mask];
	return (int)i;
}

static int
shm_qp_create(struct rb2_xport *xp __rte_unused, struct rb2_xport_qp *qp,
	      const struct rb2_xport_qp_attr *attr)
{
	uint32_t depth = attr->cq_depth ? attr->cq_depth : SHM_DEFAULT_CQ_DEPTH;
	struct shm_qp *s;

	if (attr->max_inline > SHM_MAX_INLINE) {
		RB2_XPORT_LOG(ERR, "shm: max_inline %u exceeds %u",
			      attr->max_inline, SHM_MAX_INLINE);
		return -EINVAL;
	}
	depth = rte_align32pow2(depth);
	s = rte_zmalloc_socket("shm_qp", sizeof(*s) + depth * sizeof(s->cq[0]),
			       RTE_CACHE_LINE_SIZE,
			       attr->lcore_id == LCORE_ID_ANY ? SOCKET_ID_ANY :
			       (int)rte_lcore_to_socket_id(attr->lcore_id));
	if (s == NULL)
		return -ENOMEM;
	s->cq_mask = depth - 1;
	qp->drv = s;
	qp->cq_depth = depth;
	qp->sq_depth = attr->sq_depth ? attr->sq_depth : SHM_DEFAULT_SQ_DEPTH;
	qp->max_inline = SHM_MAX_INLINE;
	return 0;
}

static void
shm_qp_destroy(struct rb2_xport_qp *qp)
{
	rte_free(qp->drv);
	qp->drv = NULL;
}

static int
shm_qp_status(struct rb2_xport_qp *qp)
{
	struct shm_qp *s = qp->drv;

	if (s->peer_pid == 0)
		return 0;
	if (!peer_lives(s->peer_pid, s->peer_start, PEER_SEEN_US)) {
		RB2_XPORT_LOG(ERR, "shm: the peer process %d is gone", (int)s->peer_pid);
		s->peer_pid = 0; /* say it once */
		return -ECONNRESET;
	}
	return 0;
}

static void
shm_set_connected(struct rb2_xport_qp *qp)
{
	qp->post = shm_post;
	qp->poll = shm_poll;
	qp->connected = 1;
}

static int
shm_qp_connect_local(struct rb2_xport_qp *a, struct rb2_xport_qp *b)
{
	shm_set_connected(a);
	shm_set_connected(b);
	return 0;
}

/*
 * Rendezvous by name: a memzone "rb2rv.<peer>" with one blob per role. The
 * passive side creates it; the active side looks it up. Each writes its blob
 * and raises its flag (release), then waits for the other's (acquire). The
 * second side to finish reading frees the zone.
 */
#define RV_MAGIC 0x52423252u /* "RB2R" */

struct shm_rv {
	_Atomic uint32_t magic;
	_Atomic uint32_t ready[2];
	_Atomic uint32_t done;
	_Atomic uint32_t waiting[2];  /* a side sleeps on ready[i] (rb2_xport_flag_wait()) */
	_Atomic uint32_t claimed[2];  /* role i's side is here (rv_join()) */
	uint32_t len[2];
	int32_t pid[2];
	uint64_t start[2];            /* each side's own start time (self_start()) */
	uint8_t blob[2][RB2_XPORT_BLOB_MAX];
};

static int
deadline_passed(uint64_t deadline)
{
	return rte_get_timer_cycles() > deadline;
}

static void
rv_release(const struct rte_memzone *mz)
{
	struct shm_rv *rv = mz->addr;

	/* Last user: clear the magic so a reused zone never looks ready. */
	if (atomic_fetch_add_explicit(&rv->done, 1, memory_order_acq_rel) == 1) {
		atomic_store_explicit(&rv->magic, 0, memory_order_relaxed);
		rte_memzone_free(mz);
	}
}

/* A side's flag, and the other side's sleep on it: a futex
 * (rb2_xport_flag_set(), rb2_xport_flag_wait()). The two sides of a
 * rendezvous are two processes of one connection's set-up, each on its
 * way, and a set-up waits here twice at each end. */
static void
rv_ready_set(struct shm_rv *rv, int role)
{
	rb2_xport_flag_set(&rv->ready[role], &rv->waiting[role]);
}


/*
 * The rendezvous zone of @zname: made by whichever side comes first, and
 * found by the other, so that neither waits for the other to make it (on
 * one host a stream's second channel's active end comes first about every
 * time, its peer still finishing the first channel). Both then sleep on
 * the flags' futexes (rb2_xport_flag_wait()). Each role claims its place
 * once: a second side of one role (two receivers with one name) is
 * refused.
 * @return 0 with the zone in @out, or -EADDRINUSE, -ENOMEM, -ETIMEDOUT.
 */
static int
rv_join(const char *zname, const char *peer, enum rb2_xport_role role, uint64_t deadline,
	unsigned int timeout_ms, const struct rte_memzone **out)
{
	const struct rte_memzone *mz;
	struct shm_rv *rv;

	for (;;) {
		mz = rte_memzone_reserve(zname, sizeof(*rv), SOCKET_ID_ANY, 0);
		if (mz != NULL) {
			rv = mz->addr;
			/* The other side may find the zone by name and poll
			 * magic from this moment on, so magic is only ever
			 * written atomically (a freed zone's memory comes back
			 * zeroed, and every release clears magic first). The
			 * atomics are reset one by one; only the plain fields,
			 * which nobody reads before the acquire of magic, are
			 * cleared in bulk. */
			for (int i = 0; i < 2; i++) {
				atomic_store_explicit(&rv->ready[i], 0, memory_order_relaxed);
				atomic_store_explicit(&rv->waiting[i], 0, memory_order_relaxed);
				atomic_store_explicit(&rv->claimed[i], i == (int)role,
						      memory_order_relaxed);
			}
			atomic_store_explicit(&rv->done, 0, memory_order_relaxed);
			memset(rv->len, 0, sizeof(*rv) - offsetof(struct shm_rv, len));
			/* Release: the cleared zone before the magic; pairs
			 * with the other side's acquire load of magic. */
			atomic_store_explicit(&rv->magic, RV_MAGIC, memory_order_release);
			*out = mz;
			return 0;
		}
		if (rte_errno != EEXIST)
			return -ENOMEM;
		mz = rte_memzone_lookup(zname);
		if (mz != NULL && atomic_load_explicit(&((struct shm_rv *)mz->addr)->magic,
						       memory_order_acquire) == RV_MAGIC) {
			rv = mz->addr;
			if (atomic_exchange_explicit(&rv->claimed[role], 1, memory_order_acq_rel)) {
				RB2_XPORT_LOG(ERR, "shm: '%s' already has its %s side (two %s with one name?)",
					      peer, role == RB2_XPORT_PASSIVE ? "passive" : "active",
					      role == RB2_XPORT_PASSIVE ? "receivers" : "senders");
				return -EADDRINUSE;
			}
			*out = mz;
			return 0;
		}
		/* Made and not yet published, or a last rendezvous of the
		 * name on its way out: a moment. */
		if (deadline_passed(deadline)) {
			RB2_XPORT_LOG(ERR, "shm: the rendezvous '%s' stayed unready for %u ms",
				      peer, timeout_ms);
			return -ETIMEDOUT;
		}
		rte_delay_us_sleep(10);
	}
}

static int
shm_qp_exchange(struct rb2_xport_qp *qp, const char *peer,
		enum rb2_xport_role role, const void *blob, size_t len,
		void *peer_blob, size_t peer_cap, unsigned int timeout_ms)
{
	char zname[RTE_MEMZONE_NAMESIZE];
	const struct rte_memzone *mz = NULL;
	uint64_t deadline = rte_get_timer_cycles() +
		rte_get_timer_hz() * timeout_ms / 1000;
	struct shm_rv *rv;
	int other = !role, ret;
	size_t plen;

	if (snprintf(zname, sizeof(zname), "rb2rv.%s", peer) >=
	    (int)sizeof(zname)) {
		RB2_XPORT_LOG(ERR, "shm: rendezvous name '%s' too long (at most %zu characters)",
			      peer, sizeof(zname) - 7);
		return -ENAMETOOLONG;
	}
	ret = rv_join(zname, peer, role, deadline, timeout_ms, &mz);
	if (ret != 0)
		return ret;
	rv = mz->addr;

	memcpy(rv->blob[role], blob, len);
	rv->len[role] = (uint32_t)len;
	rv->pid[role] = (int32_t)getpid();
	rv->start[role] = self_start();
	/* Release: our blob before our flag; pairs with the acquire below on
	 * the other side. */
	rv_ready_set(rv, role);

	while (!atomic_load_explicit(&rv->ready[other], memory_order_acquire)) {
		if (deadline_passed(deadline)) {
			RB2_XPORT_LOG(ERR, "shm: no peer joined '%s' within %u ms (start the other side, or check the --file-prefix of both processes)",
				      peer, timeout_ms);
			/* Nobody else will ever release it: withdraw. */
			atomic_store_explicit(&rv->magic, 0,
					      memory_order_relaxed);
			rte_memzone_free(mz);
			return -ETIMEDOUT;
		}
		rb2_xport_flag_wait(&rv->ready[other], &rv->waiting[other], deadline);
	}
	plen = rv->len[other];
	if (plen > peer_cap) {
		rv_release(mz);
		return -EMSGSIZE;
	}
	memcpy(peer_blob, rv->blob[other], plen);
	if (rv->pid[other] != (int32_t)getpid()) {
		struct shm_qp *s = qp->drv;

		/* Watched only where /proc tells. The peer says its start time
		 * itself, as it says its pid: a look at /proc here cost each
		 * end two opens a connection (one per channel). A peer that
		 * lied would only have itself reported gone. One that is gone
		 * already (it may have sent everything and died before we got
		 * here) is reported by the first check. */
		s->peer_pid = rv->pid[other];
		s->peer_start = rv->start[other];
		if (s->peer_start == 0)
			s->peer_pid = 0;
	}
	rv_release(mz);
	shm_set_connected(qp);
	return (int)plen;
}

static void *
shm_peer_ptr(struct rb2_xport_qp *qp __rte_unused, uint64_t remote,
	     uint32_t rkey __rte_unused, size_t len)
{
	void *p = (void *)(uintptr_t)remote;

	/* The address must be DPDK memory mapped in this process. */
	if (rte_mem_virt2memseg_list(p) == NULL ||
	    rte_mem_virt2memseg_list(RTE_PTR_ADD(p, len - 1)) == NULL)
		return NULL;
	return p;
}

static const char *
shm_wc_status_str(int status)
{
	return status == RB2_WC_SUCCESS ? "success" : "shm error";
}

static const struct rb2_xport_ops shm_ops = {
	.open = shm_open,
	.close = shm_close,
	.mr_alloc = shm_mr_alloc,
	.mr_free = shm_mr_free,
	.peer_hold = shm_peer_hold,
	.peer_release = shm_peer_release,
	.qp_create = shm_qp_create,
	.qp_destroy = shm_qp_destroy,
	.qp_connect_local = shm_qp_connect_local,
	.qp_exchange = shm_qp_exchange,
	.peer_ptr = shm_peer_ptr,
	.qp_status = shm_qp_status,
	.wc_status_str = shm_wc_status_str,
};

RB2_XPORT_REGISTER(shm, shm_ops);
