/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_FLOWTAB_H
#define RB2_FLOWTAB_H

/**
 * @file
 * The measurement NF's flow table: a flow cache of bounded size, as flow
 * exporters keep one (VPP's flowprobe, softflowd, nfpcapd). Each flow counts
 * packets and bytes (IP bytes, rb2_rec.ip_len, as IPFIX's octetDeltaCount;
 * the totals count bytes on the wire), first and last timestamps and the OR
 * of its TCP flags,
 * until its record ends:
 *  - idle timeout: no packet for @c idle_ns;
 *  - active timeout: the record is @c active_ns old (a long flow is then
 *    reported in pieces, and its next packet starts a new record);
 *  - end of flow: a TCP packet with FIN or RST (that packet included);
 *  - lack of resources: the table holds @c max_flows and a new flow comes;
 *    the flow whose record started first is ended to make room;
 *  - forced end: rb2_flowtab_flush(), at the end of a run.
 * When both timeouts have passed, the reason is the one that came due
 * first, so it does not depend on when the table notices.
 * An ended record goes to the @c end callback, once. Every packet of an IP
 * kind is in exactly one record; totals by kind count every packet.
 *
 * @code
 * struct rb2_flowtab_params p;
 * rb2_flowtab_params_init(&p);        // 1M flows, 300 s active, 60 s idle
 * p.end = on_record;                  // void on_record(void *arg, const struct rb2_flow_rec *)
 * struct rb2_flowtab *ft = rb2_flowtab_create(&p);
 * rb2_flowtab_add_burst(ft, recs, n); // on the measure lcore
 * rb2_flowtab_flush(ft, RB2_FLOW_END_FORCED, 0);
 * @endcode
 *
 * Time is the records' own (a trace's time under replay, the receive time
 * on a port), never the clock: the same records give the same flow records
 * at any replay speed. A record's timeouts are checked when its flow's next
 * packet comes, so where a flow is cut depends on its packets alone; a sweep
 * (rb2_flowtab_expire(), and a share of it with every burst) ends the flows
 * that get no further packet.
 *
 * Layout: open addressing with linear probing, one 64-byte line per flow
 * (key, counters, timestamps): a packet of a known flow touches that line
 * alone. Beside it, off the per-packet path, a 16-byte line share per slot
 * links the flows in the order their records started (eviction and the
 * active timeout take the oldest in O(1)), and a pool holds the addresses
 * and ports of IPv6 flows, whose key in the line is a 160-bit digest. The
 * table starts small and doubles (a rehash of its flows, in the order they
 * started) each time it holds 0.7 of its slots, up to its size for
 * @c max_flows (rb2_flowtab_memory() says how much that is): a capture of a
 * few flows costs a few MiB, not the cap's. @c prealloc sizes it for the cap
 * at once, as a port wants: a rehash of a million flows stops the lcore for
 * tens of milliseconds, while packets back up.
 */

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <rb2_trace.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Why a flow record ended: IPFIX's flowEndReason (RFC 7012, IE 136). */
enum rb2_flow_end {
	RB2_FLOW_END_IDLE = 1,      /**< idle timeout */
	RB2_FLOW_END_ACTIVE = 2,    /**< active timeout */
	RB2_FLOW_END_DETECTED = 3,  /**< end of flow detected: TCP FIN or RST */
	RB2_FLOW_END_FORCED = 4,    /**< forced end: the run ended */
	RB2_FLOW_END_RESOURCES = 5, /**< lack of resources: evicted from a full table */
};
/** Reasons are 1..RB2_FLOW_END_MAX - 1. */
#define RB2_FLOW_END_MAX 6

/** @return the reason's name ("idle", "active", "end", "forced", "evicted"). */
const char *rb2_flow_end_name(unsigned int reason);

/** One flow record: what an exporter sends. */
struct rb2_flow_rec {
	uint8_t src[16];      /**< IPv6, or IPv4 in bytes 0-3 (network order) */
	uint8_t dst[16];
	uint16_t sport, dport;
	uint8_t proto;
	uint8_t kind;         /**< RB2_REC_IPV4 or RB2_REC_IPV6 */
	uint8_t tcp_flags;    /**< OR of the record's packets' */
	uint8_t end_reason;   /**< enum rb2_flow_end; 0 while the flow is live */
	uint16_t in_port;     /**< ingress port */
	uint16_t rsvd;
	uint32_t rsvd2;
	uint64_t packets;
	uint64_t bytes;
	uint64_t first_ns;
	uint64_t last_ns;
};

_Static_assert(sizeof(struct rb2_flow_rec) == 80, "a flow record is 80 bytes");

/** One flow in the table (a cache line). The key is opaque: see
 * rb2_flowtab_rec() for the flow it stands for. */
struct rb2_flow {
	uint64_t k0, k1, k2;  /**< key: addresses, ports/proto/kind/port; IPv6: a digest */
	uint64_t packets;
	uint64_t bytes;
	uint64_t first_ns;
	uint64_t last_ns;
	uint32_t hash;        /**< 0: empty slot */
	uint8_t tcp_flags;
	uint8_t rsvd[3];
};

_Static_assert(sizeof(struct rb2_flow) == 64, "a flow is one cache line");

/** Totals over every record, by kind. */
struct rb2_nf_totals {
	uint64_t packets, bytes;
	uint64_t ipv4, ipv6, nonip, malformed;
	uint64_t first_ns, last_ns;
	uint64_t records;                   /**< flow records ended */
	uint64_t ended[RB2_FLOW_END_MAX];   /**< ... by enum rb2_flow_end */
	uint64_t peak_flows;                /**< the most flows held at once */
};

/** Where the table's memory comes from (rb2_flowtab_params.socket_id). */
#define RB2_FLOWTAB_LIBC (-2)   /**< plain allocation: no EAL needed */

/** Flow table parameters: rb2_flowtab_params_init() fills the defaults. */
struct rb2_flowtab_params {
	uint64_t max_flows;   /**< flows held at once, at least 1 (default 1M) */
	/** Active timeout, ns; 0: none. Default 300 s, nfpcapd's: the
	 * collector's files rotate every 300 s, so a long flow shows in each. */
	uint64_t active_ns;
	/** Idle timeout, ns; 0: none. Default 60 s, nfpcapd's. */
	uint64_t idle_ns;
	uint32_t cm_width;    /**< 0: no count-min sketch; else its width (4 rows) */
	/** DPDK heap on this NUMA socket (hugepages when the EAL has them;
	 * SOCKET_ID_ANY = -1 for any), or RB2_FLOWTAB_LIBC. Default LIBC. */
	int socket_id;
	/** Nonzero: allocate the table for @c max_flows now (no rehash later). */
	int prealloc;
	/** Called for every record that ends, once, on the adding thread. */
	void (*end)(void *arg, const struct rb2_flow_rec *rec);
	void *end_arg;
};

struct rb2_flowtab;

/** Fill @p p with the defaults. */
void rb2_flowtab_params_init(struct rb2_flowtab_params *p);

/**
 * @return The table, or NULL: -EINVAL (max_flows 0 or over 2^31) or
 *   -ENOMEM in errno.
 */
struct rb2_flowtab *rb2_flowtab_create(const struct rb2_flowtab_params *p);
void rb2_flowtab_free(struct rb2_flowtab *ft);

/** @return the most bytes the table may hold: its size for max_flows. */
uint64_t rb2_flowtab_memory(const struct rb2_flowtab *ft);

/** @return the bytes the table held at its largest so far. */
uint64_t rb2_flowtab_memory_peak(const struct rb2_flowtab *ft);

/** Account @p n records (IP kinds go in flows; every kind is in the totals). */
void rb2_flowtab_add_burst(struct rb2_flowtab *ft, const struct rb2_rec *recs,
			   unsigned int n);

/** As rb2_flowtab_add_burst(), for records scattered in memory (in place in
 * the messages that carried them). */
void rb2_flowtab_add_ptrs(struct rb2_flowtab *ft, const struct rb2_rec *const *recs,
			  unsigned int n);

/**
 * End the records whose timeouts have passed at @p now_ns (a time later
 * than every record's: the clock on a quiet port), visiting at most
 * @p slots slots from where the last sweep stopped; 0: the whole table.
 * @return the records ended.
 */
uint64_t rb2_flowtab_expire(struct rb2_flowtab *ft, uint64_t now_ns, uint64_t slots);

/** End the @p max oldest records (0: every one), for @p reason
 * (RB2_FLOW_END_FORCED at the end of a run); a record whose timeout has
 * passed by the latest record's time ends for that timeout instead.
 * @return the records ended. */
uint64_t rb2_flowtab_flush(struct rb2_flowtab *ft, unsigned int reason, uint64_t max);

/**
 * The flow hash of a record (IP kinds; 32 bits, never 0): what the table
 * places the flow by, in its low bits. The shard stage spreads flows by its
 * high bits (rb2_flow_shard()), so a shard's table sees low bits as evenly
 * spread as one table would.
 */
uint32_t rb2_flowtab_hash(const struct rb2_rec *rec);

/** @return the shard, of @p n, of a flow of hash @p hash. */
static inline unsigned int
rb2_flow_shard(uint32_t hash, unsigned int n)
{
	return (unsigned int)(((uint64_t)hash * n) >> 32);
}

/** @return the number of flows held now. */
uint64_t rb2_flowtab_count(const struct rb2_flowtab *ft);

/** Copy the totals. */
void rb2_flowtab_totals(const struct rb2_flowtab *ft, struct rb2_nf_totals *t);

/** Look a record's flow up; NULL if it has none now. */
const struct rb2_flow *rb2_flowtab_find(const struct rb2_flowtab *ft,
					const struct rb2_rec *rec);

/** The flow record a held flow stands for (end_reason 0). */
void rb2_flowtab_rec(const struct rb2_flowtab *ft, const struct rb2_flow *f,
		     struct rb2_flow_rec *out);

/**
 * Call @p cb for every flow held, in table order.
 * @return the number of flows visited.
 */
uint64_t rb2_flowtab_walk(const struct rb2_flowtab *ft,
			  void (*cb)(void *arg, const struct rb2_flow_rec *r), void *arg);

/**
 * @return nonzero if @p a is heavier than @p b: more bytes, then more
 *   packets; ties go to the earlier record, then to the lower flow key, so
 *   that the top-K is one list whatever order the records came in (one
 *   measure stage's, or shards' merged).
 */
static inline int
rb2_flow_rec_heavier(const struct rb2_flow_rec *a, const struct rb2_flow_rec *b)
{
	if (a->bytes != b->bytes)
		return a->bytes > b->bytes;
	if (a->packets != b->packets)
		return a->packets > b->packets;
	if (a->first_ns != b->first_ns)
		return a->first_ns < b->first_ns;
	return memcmp(a, b, offsetof(struct rb2_flow_rec, tcp_flags)) < 0;
}

/**
 * Keep the @p k heaviest records in @p top (heaviest first; @p *n of them
 * so far): offer @p r. O(k) at worst, O(1) for a record lighter than all.
 */
void rb2_flow_top_offer(struct rb2_flow_rec *top, unsigned int k, unsigned int *n,
			const struct rb2_flow_rec *r);

/** The sketch's error against the exact counts (packets). */
struct rb2_cm_error {
	double mean_rel;   /**< mean over flows of (estimate - exact) / exact */
	double max_rel;
	uint64_t exact;    /**< flows estimated exactly */
};

/**
 * @return 0; -ENOENT if the table has no sketch; -ESTALE once a record has
 *   ended (the sketch counts a flow over the run, the table only its live
 *   record, so they no longer compare).
 */
int rb2_flowtab_cm_error(const struct rb2_flowtab *ft, struct rb2_cm_error *e);

/** The sketch's packet estimate for a flow's key (0 if no sketch). */
uint64_t rb2_flowtab_cm_estimate(const struct rb2_flowtab *ft, const struct rb2_flow *f);

#ifdef __cplusplus
}
#endif

#endif /* RB2_FLOWTAB_H */
