/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_PIPELINE_PRIVATE_H
#define RB2_PIPELINE_PRIVATE_H

/*
 * @internal What the files of lib/pipeline share; not installed. As DPDK's
 * lib/graph, one file per job:
 *
 *   rb2_stage_registry.c   stage types and plugins      (rb2_stage_registry.h)
 *   rb2_stage.c            an instance: state, counters, errors (rb2_stage.h)
 *   rb2_stage_args.c       an instance's key = value arguments  (rb2_stage.h)
 *   rb2_stage_emit.c       emitting on next edges, the fast path (rb2_stage.h)
 *   rb2_stage_pkt.c        packets (mbufs) on edges             (rb2_stage_pkt.h)
 *   rb2_pipeline_graph.c   a configuration as a graph: stages, links, checks
 *   rb2_pipeline.c         populating it (init, links' halves, workers), freeing it
 *                                                             (rb2_pipeline.h)
 *   rb2_link_chan.c        a link that is an RB2 channel, the default   (rb2_link.h)
 *   rb2_link_ring.c        a link that is an rte_ring, a baseline       (rb2_link.h)
 *   rb2_link_l5.c          a link that is L5's ring, a baseline         (rb2_link.h)
 *   rb2_pipeline_worker.c  the lcore workers: run, stop, end of stream
 *                                                             (rb2_pipeline.h)
 *   rb2_pipeline_stats.c   the summary, JSON and telemetry    (rb2_pipeline.h)
 *   rb2_config.c           the INI parser                       (rb2_config.h)
 */

#include <stdbool.h>

#include <rte_common.h>
#include <rte_log.h>

#include "rb2_config.h"
#include "rb2_pipeline.h"
#include "rb2_stage.h"
#include "rb2_stage_pkt.h"

struct rb2_xport_lane;

/* Statistics: written by their stage's lcore only, read meanwhile by the
 * telemetry thread. Relaxed atomics, the same plain add and load on x86. */
#define STAT_ADD(field, n) rb2_stage_count(&(field), (n))
#define STAT_READ(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)

/*
 * A stage's cycles are timed on one call (process() or poll()) in
 * CYCLES_SAMPLE, the first of each run of them: two rdtsc per call cost
 * 8-10% of the NF's packet rate on net_null (23 cycles each here, two per
 * stage per burst of 32). rb2_stage_cycles() scales the timed ones up.
 */
#define CYCLES_SAMPLE 8u

extern int rb2_pipeline_logtype;
#define PL_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_ ## level, rb2_pipeline_logtype, "rb2.pipeline: " fmt "\n", \
		##__VA_ARGS__)

#define STAGES_MAX 64
#define LINKS_MAX 128
#define XPORTS_MAX 8
#define LANES_MAX 64             /* [pipeline] lanes: one per (lcore, peer process and lcore, transport) */
#define WORKER_LANES_MAX 16
#define STAGE_COUNTERS_MAX 16
#define STAGE_NAME_MAX 32
#define CHUNK_ARENA (64u << 10) /* bytes of one queued burst's messages */
#define RB2_PKT_POOL_DEFAULT 8191 /* mbufs of a pool no port stage sized */

struct rb2_link;
struct rb2_worker;
struct rb2_l5;

/*
 * A burst queued on a same-lcore edge: up to RB2_STAGE_BURST_MAX views of
 * messages copied into its arena (one message larger than CHUNK_ARENA gets a
 * chunk of its own size). Chunks are recycled through their worker's pool.
 */
struct rb2_chunk {
	struct rb2_chunk *next;
	unsigned int n;             /* messages */
	size_t used, cap;           /* arena bytes */
	struct rb2_msg msgs[RB2_STAGE_BURST_MAX];
	uint8_t arena[] __rte_cache_aligned;
};

/* One next edge of an instance. */
struct rb2_edge {
	const char *name;
	struct rb2_link *link;      /* NULL: unlinked */
	struct rb2_tx *tx;          /* next stage elsewhere: the channel's sender */
	struct rb2_stage *next;     /* next stage on this lcore (direct) */
	/* Direct edges: bursts queued for the next stage, oldest first; the
	 * last one is being filled. */
	struct rb2_chunk *q_head, *q_tail;
	size_t q_bytes;             /* queued since the worker last ran it */
	uint64_t msgs, bytes;       /* delivered */
	uint64_t failed;            /* emits that failed (counted, never silent) */
	uint64_t waits;             /* times the next channel was full */
	int err;                    /* the error that failed its channel, or 0 */
	/* A link of another kind than a channel (rb2_link.h): its ops and
	 * state; NULL for a channel and a direct edge, which the emit calls
	 * handle inline. */
	const struct rb2_link_ops *xops;
	void *xpriv;
	uint64_t pad_to_128;        /* below */
	bool pkts;                  /* carries packets (ops->pkt_edges) */
	bool ptrs;                  /* ... as mbuf pointers (else as bytes) */
	bool desc;                  /* ... each with its descriptor (a channel) */
	unsigned int ptrs_max;      /* pointers (or descriptors) in one message */
};
/* A power of two, so that finding edge i is a shift: at 120 bytes every
 * emit cost two instructions more (callgrind, rb2-nf on one lcore). */
_Static_assert(sizeof(struct rb2_edge) == 128, "struct rb2_edge: keep it 128 bytes");

/*
 * What a channel of mbuf pointers carries per packet: the mbuf, and all the
 * receiving lcore needs of it. The sender's lcore wrote the mbuf's header
 * (the PMD's rx reset it); reading it on the receiver costs a cross-core
 * miss per line, and freeing it there sends its lines back again. With the
 * descriptor the receiver reads neither, and a plain mbuf (direct, one
 * segment, refcnt 1, checked by the sender while its header is in its
 * cache) goes back to its pool with rte_mempool_put(), the header unread:
 * the mbuf's lines never leave the sender's lcore.
 */
struct rb2_pkt_desc {
	struct rte_mbuf *m;
	void *data;                 /* its first segment's data */
	struct rte_mempool *pool;   /* plain: its pool; NULL: rte_pktmbuf_free() it */
	uint64_t ts_ns;
	uint32_t pkt_len;
	uint16_t data_len;
	uint16_t port;
};

struct rb2_stage_counter {
	char name[STAGE_NAME_MAX];
	uint64_t value;
};

struct rb2_stage {
	const struct rb2_stage_ops *ops;
	struct rb2_pipeline *pl;
	struct rb2_worker *w;       /* the worker of its lcore (local stages) */
	char name[STAGE_NAME_MAX];
	char proc[STAGE_NAME_MAX];
	unsigned int line;          /* of its [stage] section */
	unsigned int lcore;
	int socket;
	bool local;                 /* runs in this process */
	bool inited;
	void *priv;
	struct rb2_edge *edges;
	unsigned int nedges;
	unsigned int topo;          /* topological rank */
	/* End of stream: the stage is done when every input has ended. */
	unsigned int n_in, n_in_done;
	bool done;
	/* Statistics (STAT_ADD by the stage's lcore only; done: its end). */
	uint64_t in_msgs, in_bytes, bursts, produced;
	uint64_t calls, cycles;     /* process() and poll() calls; cycles of the timed ones */
	uint64_t emit_errors;       /* emits refused before any edge: bad edge, len 0 */
	uint64_t pkt_drops;         /* packets freed undelivered (rb2_stage_pkt.c) */
	struct rb2_stage_counter counters[STAGE_COUNTERS_MAX];
	unsigned int ncounters;
	char err[256];
	char failure[256];          /* rb2_stage_fail(): why its job is not whole */
};

struct rb2_link {
	char name[RB2_CHAN_NAMESIZE];
	unsigned int line;
	struct rb2_stage *from, *to;
	unsigned int edge;
	char transport[128];
	char peer[128];
	unsigned int timeout_ms;
	struct rb2_chan_params params;
	bool direct;                /* both ends on one lcore of this process */
	struct rb2_tx *tx;          /* when `from` is local */
	struct rb2_rx *rx;          /* when `to` is local */
	struct rb2_xport_lane *tx_lane, *rx_lane; /* [pipeline] lanes: its halves' */
	bool pkts;                  /* carries packets */
	int carry;                  /* LINK_CARRY_*: how packets travel */
	unsigned int peek;          /* messages read at once (packet links: <= 256 packets) */
	const struct rb2_link_ops *ops; /* its kind, [link] via = (rb2_link.h) */
	void *priv;                 /* ... and that kind's state, made by its open() */
	bool carry_desc;            /* carry = descriptors: on an rte_ring, 40-byte
				     * elements (struct rb2_pkt_desc), not pointers */
	bool sleep;                 /* its channel has RB2_CHAN_F_SLEEP */
	bool ended;                 /* end of stream received */
	bool notified;              /* we asked its (remote) sender to stop */
	int err;                    /* the error that failed it as an input, or 0 */
};

/* A link's `carry` of packets: pointers where the transport's peers share
 * memory (auto), or as asked. */
enum { LINK_CARRY_AUTO, LINK_CARRY_PTRS, LINK_CARRY_BYTES };

/* A burst of packets being given to a stage (rb2_stage_pkt.c): one message
 * per packet, its rb2_pkt, and the mbufs to free after (NULL: taken). */
struct rb2_pkt_burst {
	struct rb2_stage *to;       /* the stage running on it, or NULL */
	unsigned int n;
	struct rte_mempool *pool;   /* for takes on byte links */
	struct rb2_msg msg[RB2_STAGE_BURST_MAX];
	struct rb2_pkt pkt[RB2_STAGE_BURST_MAX];
	struct rte_mbuf *free[RB2_STAGE_BURST_MAX];
	struct rte_mempool *put[RB2_STAGE_BURST_MAX]; /* a plain mbuf's pool, or NULL */
	bool taken[RB2_STAGE_BURST_MAX];
	unsigned int ntaken;        /* takes in this burst */
	unsigned int nbytes;        /* byte carriers in it (nothing to free) */
	unsigned int nplain;        /* plain mbufs (descriptors with a pool) */
	struct rte_mempool *pool0;  /* the first one's pool ... */
	bool pools_mixed;           /* ... and whether another has another */
};

/* What one lcore runs. */
struct rb2_worker {
	struct rb2_pipeline *pl;
	unsigned int lcore;
	struct rb2_stage *stages[STAGES_MAX];   /* topological order */
	unsigned int nstages;
	struct rb2_link *inputs[LINKS_MAX];     /* channels it reads */
	unsigned int ninputs;
	struct rb2_tx *outputs[LINKS_MAX];      /* channels it writes */
	struct rb2_link *out_links[LINKS_MAX];  /* ... and their links */
	unsigned int noutputs;
	unsigned int queued;                    /* chunks queued on direct edges */
	struct rb2_chunk *pool;                 /* free chunks of CHUNK_ARENA */
	struct rb2_pkt_burst *pkb;              /* a stage here takes packets */
	uint64_t stop_deadline;                 /* TSC: remote inputs must have ended */
	/* Adaptive polling ([pipeline] idle_sleep): may it sleep, empty
	 * passes so far, and (telemetry reads them) sleeps and time asleep. */
	bool can_sleep;
	unsigned int idle;
	uint64_t sleeps, slept_cycles;
	/* [pipeline] lanes: the lanes its channels post into, flushed at
	 * the end of every loop pass (one doorbell each for all of them). */
	struct rb2_xport_lane *lanes[WORKER_LANES_MAX];
	unsigned int nlanes;
	int ret;
};

struct rb2_pipeline {
	struct rb2_cfg *cfg;
	char proc[STAGE_NAME_MAX];
	unsigned int burst;
	struct rb2_stage stages[STAGES_MAX];
	unsigned int nstages;
	struct rb2_link links[LINKS_MAX];
	unsigned int nlinks;
	struct { char spec[128]; struct rb2_xport *xp; } xports[XPORTS_MAX];
	unsigned int nxports;
	bool lanes;                             /* [pipeline] lanes = 1 */
	struct {
		struct rb2_xport *xp;
		unsigned int lcore, peer;       /* posted by lcore, towards peer's */
		const char *peer_proc;          /* ... in that process */
		struct rb2_xport_lane *lane;
	} lane_tab[LANES_MAX];
	unsigned int nlanes;
	struct rb2_worker workers[RTE_MAX_LCORE];
	/* Set by any lcore or a signal handler, read by every worker: atomics
	 * (lock-free, so signal-safe; a read is a plain load on x86). */
	_Atomic int stop;                       /* 1: drain, 2: abort */
	_Atomic int stop_by_peer;               /* stop 1 came as a receiver's notice */
	unsigned int stop_timeout_ms;           /* for a remote sender's end of stream */
	unsigned int idle_sleep;                /* empty passes before a worker sleeps; 0: never */
	unsigned int sleep_max_us;              /* longest sleep (stop, peer checks) */
	uint64_t run_cycles;
	_Atomic int failed;                     /* a link failed */
};

struct rb2_stage_args {
	struct rb2_stage *st;
	struct rb2_cfg_section *sec;
	const char *asked[32];      /* keys the stage read, for error messages */
	unsigned int nasked;
};

/* rb2_stage_args.c: the first key of @a the stage never read, as an error
 * ("line N: ..."), or 0. */
int rb2_stage_args_unused(struct rb2_stage_args *a, char *err, size_t errlen);

/* rb2_pipeline_worker.c: run @st's process() on a burst, with its stats. */
void rb2_stage_run(struct rb2_stage *st, const struct rb2_msg *msgs, unsigned int n);

/* Count a call of @st's; whether to time it (CYCLES_SAMPLE). */
static inline bool
stage_timed(struct rb2_stage *st)
{
	uint64_t c = st->calls;

	STAT_ADD(st->calls, 1);
	return c % CYCLES_SAMPLE == 0;
}

/* rb2_pipeline_stats.c: @st's cycles, estimated from its timed calls. */
uint64_t rb2_stage_cycles(const struct rb2_stage *st);

/* What the messages given to rb2_pkt_deliver() carry. */
enum rb2_pkt_carrier {
	RB2_PKTS_LOCAL,  /* mbuf pointers from a stage of this lcore (hot in cache) */
	RB2_PKTS_PTRS,   /* mbuf pointers from another lcore: prefetched ahead */
	RB2_PKTS_DESC,   /* struct rb2_pkt_desc, from a channel */
	RB2_PKTS_BYTES,  /* a header and the packet's bytes */
};

/* rb2_stage_pkt.c: run @to on messages that carry packets, one message per
 * packet; free what it did not take. */
void rb2_pkt_deliver(struct rb2_worker *w, struct rb2_stage *to, const struct rb2_msg *msgs,
		     unsigned int n, enum rb2_pkt_carrier carrier);
/* rb2_stage_pkt.c: free @n packets that cannot be delivered, counted
 * against @st. */
void rb2_pkt_drop(struct rb2_stage *st, struct rte_mbuf **pkts, unsigned int n);

/* A plain mbuf's pool (direct, one segment, refcnt 1: what
 * rte_pktmbuf_free() would put back as it is), or NULL. */
static inline struct rte_mempool *
rb2_pkt_plain_pool(const struct rte_mbuf *m)
{
	return RTE_MBUF_DIRECT(m) && m->nb_segs == 1 && m->next == NULL &&
		rte_mbuf_refcnt_read(m) == 1 ? m->pool : NULL;
}

/* The descriptor a channel of pointers carries for @m, written while its
 * header is in this lcore's cache. */
static inline void
rb2_pkt_desc_fill(struct rb2_pkt_desc *d, struct rte_mbuf *m)
{
	*d = (struct rb2_pkt_desc){ .m = m, .data = rte_pktmbuf_mtod(m, void *),
				    .pool = rb2_pkt_plain_pool(m), .ts_ns = rb2_pkt_ts(m),
				    .pkt_len = m->pkt_len, .data_len = m->data_len,
				    .port = m->port };
}

/* rb2_pipeline_worker.c: run what was queued on same-lcore edges (for the
 * link kinds' polls, out of the worker's loop). */
void rb2_worker_run_queued(struct rb2_worker *w);

/* rb2_pipeline_graph.c: pl->cfg as a graph, checked (@secs[i]: stage i's
 * section); 0, or -EINVAL with the error in @err. */
int rb2_pipeline_graph(struct rb2_pipeline *pl, struct rb2_cfg_section **secs, char *err,
		       size_t errlen);
/* rb2_pipeline_graph.c: a configuration error at @line (0: the file), in @err;
 * -EINVAL. */
int rb2_pipeline_cfg_err(struct rb2_pipeline *pl, char *err, size_t errlen, unsigned int line,
			 const char *fmt, ...) __rte_format_printf(5, 6);
/* rb2_pipeline.c: the transport @spec, opened once per pipeline; NULL
 * (rte_errno) if it cannot be. */
struct rb2_xport *rb2_pipeline_xport_get(struct rb2_pipeline *pl, const char *spec);

/* rb2_stage_pkt.c: find (or register) the mbuf rx-timestamp field. */
void rb2_pkt_init(void);
/* rb2_stage_pkt.c: free the mbufs of pointer carriers never delivered. */
void rb2_pkt_free_carriers(const struct rb2_msg *msgs, unsigned int n);

/* rb2_stage_emit.c: give a drained chunk back to its worker's pool. */
void rb2_chunk_put(struct rb2_worker *w, struct rb2_chunk *c);
/* rb2_stage_emit.c: free a worker's pool (and nothing queued). */
void rb2_chunk_pool_free(struct rb2_worker *w);

/* rb2_pipeline_stats.c: emits that failed, over this process's stages. */
uint64_t rb2_pipeline_lost(const struct rb2_pipeline *pl);
/* rb2_pipeline_stats.c: local stages that called rb2_stage_fail(). */
unsigned int rb2_pipeline_stage_failures(const struct rb2_pipeline *pl);
/* rb2_pipeline_stats.c: the pipeline telemetry shows (one per process). */
void rb2_pipeline_telemetry_set(struct rb2_pipeline *pl);
void rb2_pipeline_telemetry_clear(struct rb2_pipeline *pl);

#endif /* RB2_PIPELINE_PRIVATE_H */
