/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_XPORT_DRIVER_H
#define RB2_XPORT_DRIVER_H

/**
 * @file
 * Interface between the transport layer and its drivers.
 *
 * A driver fills a const ops table and registers it with
 * RB2_XPORT_REGISTER(), a constructor, so the same code works linked in or
 * dlopen()ed:
 *
 * @code
 * static const struct rb2_xport_ops loop_ops = {
 *	.open = loop_open,
 *	.mr_alloc = loop_mr_alloc,
 *	.qp_create = loop_qp_create,
 *	.qp_connect_local = loop_qp_connect_local,
 *	...
 * };
 * RB2_XPORT_REGISTER(loop, loop_ops);
 * @endcode
 *
 * drivers/xport/loop/ is the smallest complete driver: copy it to start a new
 * one. Entries left NULL fall back to a default that returns -ENOTSUP (as
 * rdma-core's verbs_dummy_ops), so call sites never test for NULL.
 *
 * A queue's life: qp_create() sets up its state (qp->drv, depths,
 * max_inline); the layer has already set qp->post and qp->poll to defaults
 * that refuse to post (-ENOTCONN) and find no completion. The queue goes
 * live when it connects: qp_connect_local() or qp_exchange() set qp->post,
 * qp->poll and qp->connected. qp_destroy() releases what qp_create() took,
 * disconnecting first if connected.
 */

#include <stdatomic.h>
#include <limits.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/syscall.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_log.h>

#include <rb2_xport.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Set in a memzone's flags (rte_memzone.flags) by an allocator whose zones
 * read zero when reserved: lib/noeal's arenas. A driver's mr_alloc zeroes a
 * zone only without it (DPDK's EAL sets no such bit), so that rb2-run's
 * rings, on pages the kernel has just zeroed, are not written over twice.
 */
#define RB2_MEMZONE_F_ZEROED (1u << 30)

/*
 * A flag in shared memory that another process may sleep on, for the
 * short waits of a connection's set-up (the shm rendezvous, rb2-run's
 * streams joining). A nap at a time woke late by up to the nap, and a
 * set-up waits several times. So the waiter sleeps on the flag's futex
 * (shared memory: not FUTEX_PRIVATE), and the setter wakes it if it said
 * it sleeps (@p waiting, a word beside the flag). Dekker, sequentially
 * consistent: either the setter sees @p waiting and wakes, or the
 * waiter's load sees the flag and does not sleep (and a wake that comes
 * before the FUTEX_WAIT finds the word changed, so the wait returns at
 * once).
 */

/** Set @p flag to 1, and wake whoever sleeps on it. */
static inline void
rb2_xport_flag_set(_Atomic uint32_t *flag, _Atomic uint32_t *waiting)
{
	atomic_store_explicit(flag, 1, memory_order_seq_cst);
	if (atomic_load_explicit(waiting, memory_order_seq_cst))
		(void)syscall(SYS_futex, flag, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/** Sleep until @p flag is not 0, or @p deadline (rte_get_timer_cycles()),
 *  or 10 ms at most: a peer that died never sets it. The caller checks
 *  which (and a spurious wake-up returns early too). */
static inline void
rb2_xport_flag_wait(_Atomic uint32_t *flag, _Atomic uint32_t *waiting, uint64_t deadline)
{
	uint64_t now = rte_get_timer_cycles(), hz = rte_get_timer_hz();
	/* Capped before the product, which a long deadline would overflow. */
	uint64_t ns = now >= deadline ? 0 : RTE_MIN(deadline - now, hz / 100) * 1000000000ull / hz;
	struct timespec ts = { 0, (long)ns };

	atomic_store_explicit(waiting, 1, memory_order_seq_cst);
	if (atomic_load_explicit(flag, memory_order_seq_cst) == 0 && ns > 0)
		(void)syscall(SYS_futex, flag, FUTEX_WAIT, 0, &ts, NULL, 0);
}

/** Control operations of a driver. The fast path is per queue (post/poll). */
struct rb2_xport_ops {
	/** Parse @p args, probe the device, fill xp->caps/socket_id/priv. */
	int (*open)(struct rb2_xport *xp, const char *args);
	/** Release what open() took. */
	void (*close)(struct rb2_xport *xp);
	/** Allocate @p len bytes (zeroed) on @p socket and register them. */
	int (*mr_alloc)(struct rb2_xport *xp, const char *name, size_t len,
			int socket, struct rb2_xport_mr *mr);
	/** Deregister and free (once no peer holds it: peer_hold). */
	void (*mr_free)(struct rb2_xport *xp, struct rb2_xport_mr *mr);
	/** Keep a peer's region allocated until peer_release(): transports
	 *  without rkey revocation (rb2_xport_peer_hold()); NULL elsewhere. */
	int (*peer_hold)(struct rb2_xport *xp, uint64_t remote, uint32_t rkey);
	/** Let go of a held peer region. */
	void (*peer_release)(struct rb2_xport *xp, uint64_t remote, uint32_t rkey);
	/** Register the application's memory (optional: NULL where there is
	 *  nothing to register). */
	int (*mr_reg)(struct rb2_xport *xp, void *addr, size_t len,
		      struct rb2_xport_mr *mr);
	/** Deregister what mr_reg() registered. */
	void (*mr_dereg)(struct rb2_xport *xp, struct rb2_xport_mr *mr);
	/** Set a new queue up: qp->drv, qp->sq_depth, cq_depth, max_inline,
	 * and max_chain if one post takes a limited number of WRs.
	 * Not post/poll: those are set when the queue connects. */
	int (*qp_create)(struct rb2_xport *xp, struct rb2_xport_qp *qp,
			 const struct rb2_xport_qp_attr *attr);
	/** Tear a queue down. */
	void (*qp_destroy)(struct rb2_xport_qp *qp);
	/** Connect two queues of this process to each other; set both
	 * queues' post, poll and connected. */
	int (*qp_connect_local)(struct rb2_xport_qp *a, struct rb2_xport_qp *b);
	/** Rendezvous with a peer and connect (then set the queue's post,
	 * poll and connected); returns the peer blob length. */
	int (*qp_exchange)(struct rb2_xport_qp *qp, const char *peer,
			   enum rb2_xport_role role, const void *blob, size_t len,
			   void *peer_blob, size_t peer_cap,
			   unsigned int timeout_ms);
	/** Optional: connect @n queues over the stream socket @fd in one
	 *  exchange each way (rb2_xport_qp_exchange_n(), which checks the
	 *  arguments and calls it for queues of no lane only); each queue's post, poll and connected set as qp_exchange's,
	 *  each x[i].peer_len set. Without it the queues go one by one. */
	int (*qp_exchange_fd_n)(struct rb2_xport_exch *x, unsigned int n, int fd,
				unsigned int timeout_ms);
	/** Exchange blobs with a peer at the same rendezvous, connecting no
	 *  queue (optional: rb2_xport_oob.h has one over TCP for drivers whose
	 *  rendezvous is "ip:port"); returns the peer blob length. Lanes tell
	 *  each other their later queues' blobs with it. */
	int (*oob_exchange)(struct rb2_xport *xp, const char *peer,
			    enum rb2_xport_role role, const void *blob, size_t len,
			    void *peer_blob, size_t peer_cap, unsigned int timeout_ms);
	/** Map a peer address (load/store transports). */
	void *(*peer_ptr)(struct rb2_xport_qp *qp, uint64_t remote,
			  uint32_t rkey, size_t len);
	/** 0 while the peer is there; -ECONNRESET (or the failure) once not. */
	int (*qp_status)(struct rb2_xport_qp *qp);
	/** Name a completion status. */
	const char *(*wc_status_str)(int status);
	/** Post @p n receives for incoming WRITE_WITH_IMM (RB2_XPORT_CAP_IMM). */
	int (*post_recv)(struct rb2_xport_qp *qp, unsigned int n);
	/** Arm a sleep on @p qp (RB2_XPORT_CAP_WAKE): see
	 *  rb2_xport_doorbell_arm(). Default: the futex @p word. */
	int (*doorbell_arm)(struct rb2_xport_qp *qp, uint32_t *word,
			    struct rb2_xport_doorbell *db);
	/** Awake: consume what woke us (optional). */
	void (*doorbell_done)(struct rb2_xport_qp *qp);
	/** Consume what a wait that did not arm saw (optional): see
	 *  rb2_xport_doorbell_drain(). */
	void (*doorbell_drain)(struct rb2_xport_qp *qp);
	/** Awake without having seen the doorbell ready (optional; default:
	 *  doorbell_done): see rb2_xport_doorbell_leave(). */
	void (*doorbell_leave)(struct rb2_xport_qp *qp);
};

/** A registered driver. */
struct rb2_xport_driver {
	const char *name;                /**< "shm", "verbs" */
	const struct rb2_xport_ops *ops; /**< as the driver wrote it */
	struct rb2_xport_ops full;       /**< overlaid on the -ENOTSUP table */
};

/** An open transport (the driver's view). */
struct rb2_xport {
	const struct rb2_xport_driver *drv;
	const struct rb2_xport_ops *ops; /**< == &drv->full, never NULL entries */
	uint32_t caps;                   /**< RB2_XPORT_CAP_* */
	int socket_id;                   /**< NUMA socket of the device */
	void *priv;                      /**< driver private */
	/* Telemetry (/rb2/xports), kept by rb2_xport.c. */
	char args[64];                   /**< as opened (truncated) */
	_Atomic uint32_t qps;            /**< the driver's queues (QPs) now */
	_Atomic uint32_t lane_queues;    /**< queues posting into lanes now */
	_Atomic uint64_t qps_created;    /**< ever */
	TAILQ_ENTRY(rb2_xport) next;     /**< in the process's list */
};

/** Register a driver (called from a constructor; see RB2_XPORT_REGISTER). */
void rb2_xport_driver_register(struct rb2_xport_driver *drv);

/** Declare and register a driver named @p nm with the ops table @p o. */
#define RB2_XPORT_REGISTER(nm, o)					\
	static struct rb2_xport_driver rb2_xport_drv_##nm = {		\
		.name = RTE_STR(nm),					\
		.ops = &(o),						\
	};								\
	RTE_INIT(rb2_xport_drv_init_##nm)				\
	{								\
		rb2_xport_driver_register(&rb2_xport_drv_##nm);		\
	}

/**
 * Find the value of @p key in "k=v,k=v" @p args (DPDK's devargs
 * convention, parsed by rte_kvargs).
 *
 * @return 1 and the value in @p val (NUL-terminated) if present, 0 if not,
 * -E2BIG if it does not fit @p len.
 */
int rb2_xport_arg(const char *args, const char *key, char *val, size_t len);

/**
 * The value of @p key in @p args as a whole number from @p min to @p max
 * (decimal or 0x hex, nothing after it: "1x" is refused, not read as 1).
 *
 * @return 1 and the number in *val if present, 0 if not (*val unchanged),
 * -EINVAL after logging "DRV: KEY=VALUE: a whole number from MIN to MAX".
 */
int rb2_xport_arg_u32(const char *drv, const char *args, const char *key, uint32_t min,
		      uint32_t max, uint32_t *val);

/**
 * Check that every key in @p args is one of @p keys (NULL-terminated).
 *
 * @return 0, or -EINVAL after logging the unknown key and the valid ones.
 */
int rb2_xport_args_check(const char *drv, const char *args,
			 const char *const *keys);

/*
 * WRITEs and READs for drivers that execute them with the CPU (shm, loop),
 * as a NIC's DMA moves them: in increasing address order, each byte once.
 *
 * Not memcpy: its small-size paths store overlapping heads and tails, some
 * bytes twice. A peer that acts on the first store and then writes there
 * itself loses its write to the second: the poll-message receiver, which
 * consumes a wrap skip on sight and marks its length entry consumed, saw the
 * skip come back (glibc writes a 4-byte copy twice) and skipped a message a
 * lap later. Nor may the bytes land out of order: poll-message sync takes a
 * marker in a message's last bytes to mean the rest has landed.
 *
 * The remote side is accessed in naturally aligned 8- and 4-byte words, and
 * bytes at unaligned edges: by release stores (a WRITE) or acquire loads (a
 * READ). On x86 these are plain moves, and in C11's terms they are exactly
 * the promise the ring relies on: whoever acquires a word a WRITE carried (a
 * ring pointer, a marker, a completion's tag) sees every word before it, and
 * a READ of a pointer sees what was written before that pointer. Drivers
 * need no fences around them, and ThreadSanitizer checks the promise
 * instead of reporting the copies as races.
 */

/* One unit of a DMA: @d, @s of @type's size; the remote one is aligned. */
#define __RB2_DMA_MOVE(type, d, s, read) do {					\
	type v_;								\
	if (read) {								\
		v_ = atomic_load_explicit((const _Atomic type *)(uintptr_t)(s),	\
					  memory_order_acquire);		\
		memcpy((d), &v_, sizeof(v_));					\
	} else {								\
		memcpy(&v_, (s), sizeof(v_));					\
		atomic_store_explicit((_Atomic type *)(uintptr_t)(d), v_,	\
				      memory_order_release);			\
	}									\
} while (0)

/* Whole 8-byte words, the remote side aligned. Addressing the source from
 * the destination lets gcc keep one induction variable: 5 instructions a
 * word. @return the end of the destination. */
static __rte_always_inline uint8_t *
__rb2_xport_dma_words(uint8_t *d, const uint8_t *s, uint32_t words, const int read)
{
	uintptr_t delta = (uintptr_t)s - (uintptr_t)d;

	for (uint8_t *end = d + 8 * (size_t)words; d < end; d += 8)
		__RB2_DMA_MOVE(uint64_t, d, (const uint8_t *)((uintptr_t)d + delta), read);
	return d;
}

static __rte_always_inline void
__rb2_xport_dma(uint8_t *d, const uint8_t *s, uint32_t len, const int read)
{
#define REMOTE ((uintptr_t)(read ? (const void *)s : (const void *)d))
	uint8_t *e;

	/* A ring's slots and lens[]: whole words, aligned. */
	if (likely(((REMOTE | len) & 7) == 0)) {
		__rb2_xport_dma_words(d, s, len / 8, read);
		return;
	}
	/* The remote side's unaligned head: bytes, or a 4-byte word. */
	for (; len > 0 && (REMOTE & 7) != 0; len -= 1, d += 1, s += 1) {
		if ((REMOTE & 3) == 0 && len >= 4) {
			__RB2_DMA_MOVE(uint32_t, d, s, read);
			len -= 3, d += 3, s += 3;
		} else {
			__RB2_DMA_MOVE(uint8_t, d, s, read);
		}
	}
	e = __rb2_xport_dma_words(d, s, len / 8, read);
	s += e - d, d = e, len &= 7;
	if (len >= 4) {
		__RB2_DMA_MOVE(uint32_t, d, s, read);
		len -= 4, d += 4, s += 4;
	}
	for (; len > 0; len--, d++, s++)
		__RB2_DMA_MOVE(uint8_t, d, s, read);
#undef REMOTE
}

/** Execute a WRITE of @p len bytes from @p local to @p remote (see above). */
static inline void
rb2_xport_dma_write(void *remote, const void *local, uint32_t len)
{
	/* A ring pointer: one release store. */
	if (likely(len == 8 && ((uintptr_t)remote & 7) == 0)) {
		__RB2_DMA_MOVE(uint64_t, (uint8_t *)remote, (const uint8_t *)local, 0);
		return;
	}
	__rb2_xport_dma(remote, local, len, 0);
}

/** Execute a READ of @p len bytes from @p remote into @p local (see above). */
static inline void
rb2_xport_dma_read(void *local, const void *remote, uint32_t len)
{
	__rb2_xport_dma(local, remote, len, 1);
}

/** Log from the transport layer and its drivers; no newline in @p fmt. */
#define RB2_XPORT_LOG(level, fmt, ...)					\
	rte_log(RTE_LOG_##level, rb2_xport_logtype, "rb2_xport: " fmt "\n",	\
		##__VA_ARGS__)

#ifdef __cplusplus
}
#endif

#endif /* RB2_XPORT_DRIVER_H */
