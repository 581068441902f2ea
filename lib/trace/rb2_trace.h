/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_TRACE_H
#define RB2_TRACE_H

/**
 * @file
 * Packet traces as the measurement NF sees them: one fixed 64-byte record per
 * packet (the paper's Case#1: flow key, timestamp, sequence and size; and
 * what a flow exporter needs besides: whole IPv6 addresses, the TCP flags
 * and the ingress port).
 *
 * @code
 * char err[256];
 * struct rb2_trace *t = rb2_trace_open("caida.pcap", err, sizeof(err));
 * struct rb2_rec r;
 * while (rb2_trace_next(t, &r) == 1)
 *	use(&r);
 * struct rb2_trace_stats st;
 * rb2_trace_stats_get(t, &st);    // every packet: by kind, fragments, truncated
 * rb2_trace_close(t);
 * @endcode
 *
 * Record layout (one cache line, little-endian host):
 *
 * @verbatim
 *   0             16            32   34   36 37 38   40       44 45 46   48       56  60  64
 *   +-------------+-------------+----+----+--+--+----+--------+--+--+----+--------+---+---+
 *   |    src      |    dst      |sprt|dprt|pr|kd|flgs|wire_len|tf|  |port| ts_ns  |seq|ip |
 *   +-------------+-------------+----+----+--+--+----+--------+--+--+----+--------+---+---+
 *   Addresses in network order: IPv6 whole, IPv4 in bytes 0-3 (the rest 0).
 *   Ports in host order, 0 where the packet has none (a fragment, ICMP).
 *   tf: TCP's flag byte (FIN 0x01, SYN 0x02, RST 0x04, ...); port: ingress;
 *   ip: the IP length from the header (a flow's bytes); wire_len: the frame's.
 *   Non-IP and malformed packets get a record of their own kind (key zero), so
 *   the NF counts every packet of a trace.
 * @endverbatim
 *
 * A record fills one 64-byte slot of the NF's channels and never straddles
 * a cache line. It is what a flow exporter reports (IPFIX: both addresses,
 * the ports, the TCP flags, the ingress interface), so nothing the records
 * leave out has to be looked up again later.
 *
 * Reading: classic pcap files with rb2's own reader (in place, from big
 * reads), pcapng and the rest with libpcap; microsecond and nanosecond
 * timestamps, link types RAW, Ethernet (with 802.1Q/802.1ad tags, PPPoE
 * sessions and MPLS label stacks), PPP and PPP_SERIAL (with MPLS), Linux SLL
 * and SLL2, NULL and LOOP. Captures truncated to 40-96 bytes (CAIDA) keep
 * their key when the transport ports were captured, else are flagged.
 */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Record kinds. */
enum rb2_rec_kind {
	RB2_REC_IPV4 = 1,
	RB2_REC_IPV6 = 2,
	RB2_REC_NONIP = 3,     /**< a frame that carries no IP packet */
	RB2_REC_MALFORMED = 4, /**< IP, but a header is inconsistent or cut short */
};

/** Record flags. */
#define RB2_REC_F_FRAG (1u << 0)  /**< a non-first fragment: no ports */
#define RB2_REC_F_TRUNC (1u << 1) /**< the capture stops before the ports */
/** Non-IP records: why, an enum rb2_rec_nonip, in flags bits 8-11. */
#define RB2_REC_WHY_SHIFT 8
#define RB2_REC_WHY_MASK (0xfu << RB2_REC_WHY_SHIFT)
#define RB2_REC_WHY(r) (((r)->flags & RB2_REC_WHY_MASK) >> RB2_REC_WHY_SHIFT)

/** What a non-IP record carries instead (rb2_rec_nonip_name() names it). */
enum rb2_rec_nonip {
	RB2_NONIP_ETHERTYPE = 0, /**< another ethertype (LLDP, ...) */
	RB2_NONIP_ARP,           /**< ARP */
	RB2_NONIP_LLC,           /**< an 802.3 length field: LLC (STP, ...) */
	RB2_NONIP_PPPOE_DISC,    /**< PPPoE discovery (PADI ... PADT) */
	RB2_NONIP_PPP_CTRL,      /**< a PPPoE session frame of LCP, IPCP, ... */
	RB2_NONIP_MPLS,          /**< an MPLS stack over neither IPv4 nor IPv6 */
	RB2_NONIP_VERSION,       /**< a raw-IP link type, version neither 4 nor 6 */
	RB2_NONIP_FAMILY,        /**< NULL/LOOP: an address family other than IP */
	RB2_NONIP_KINDS
};

/** One packet: 64 bytes. */
struct rb2_rec {
	union {
		uint32_t src;     /**< IPv4 source address (network order) */
		uint8_t src6[16]; /**< IPv6 source address */
	};
	union {
		uint32_t dst;     /**< IPv4 destination address */
		uint8_t dst6[16]; /**< IPv6 destination address */
	};
	uint16_t sport;    /**< source port (host order) */
	uint16_t dport;    /**< destination port */
	uint8_t proto;     /**< IP protocol (IPv6: the upper-layer header) */
	uint8_t kind;      /**< enum rb2_rec_kind */
	uint16_t flags;    /**< RB2_REC_F_* */
	uint32_t wire_len; /**< the packet's length on the wire */
	uint8_t tcp_flags; /**< TCP: the header's flag byte; else 0 */
	uint8_t rsvd;
	uint16_t in_port;  /**< the port it arrived on (a trace file: 0) */
	uint64_t ts_ns;    /**< capture timestamp, ns since the epoch */
	uint32_t seq;      /**< 0-based position in the trace (mod 2^32) */
	/**
	 * The IP packet's length from its header (IPv4 total length, IPv6 40
	 * + payload length), whatever the capture kept: what a flow's bytes
	 * count, as IPFIX's octetDeltaCount and every flow tool do; 0 for a
	 * record that is not IP. wire_len counts the link layer too.
	 */
	uint32_t ip_len;
};

_Static_assert(sizeof(struct rb2_rec) == 64, "the record is one 64-byte line");

/** What a reader has seen. */
struct rb2_trace_stats {
	uint64_t packets;   /**< records produced */
	uint64_t bytes;     /**< sum of wire lengths */
	uint64_t ipv4, ipv6, nonip, malformed; /**< by kind */
	uint64_t nonip_by[RB2_NONIP_KINDS];    /**< non-IP, by enum rb2_rec_nonip */
	uint64_t fragments; /**< non-first fragments (no ports) */
	uint64_t truncated; /**< captured without their ports */
	/**
	 * Of the packets not decoded as IP, how many would be under another
	 * link type: they start as an IP header (the capture says Ethernet or
	 * SLL, but it is raw IP), or carry an IP ethertype at byte 12 (the
	 * capture says raw IP, but they are Ethernet frames). A wrong link type
	 * in a capture's header is a common mistake; this names it.
	 */
	uint64_t looks_raw_ip, looks_ethernet;
};

struct rb2_trace;

/**
 * Open a pcap or pcapng file (nanosecond timestamps are kept as such).
 *
 * @return The reader, or NULL with the reason in @p err (missing, empty,
 *   not a capture, an unsupported link type).
 */
struct rb2_trace *rb2_trace_open(const char *path, char *err, size_t errlen);

/**
 * As rb2_trace_open(), but through libpcap whatever the format: classic pcap
 * files are otherwise read by rb2's own reader, which is faster; the tests
 * and rb2-flowbench --reader libpcap compare the two.
 */
struct rb2_trace *rb2_trace_open_libpcap(const char *path, char *err, size_t errlen);

/**
 * As rb2_trace_open(), from an open stream (a pipe, memory): the reader owns
 * @p f from now on (it is closed on failure too). @p name is for messages.
 */
struct rb2_trace *rb2_trace_open_file(FILE *f, const char *name, char *err, size_t errlen);

/**
 * Read the next packet as a record.
 *
 * @return 1, 0 at the end, or -EBADMSG if the file is truncated or corrupt
 *   mid-way (rb2_trace_error() says where; the records so far stand).
 */
int rb2_trace_next(struct rb2_trace *t, struct rb2_rec *rec);

/**
 * Read up to @p n packets as records, counted at once (cheaper per packet
 * than rb2_trace_next()).
 *
 * @return the records read (1..n; fewer at the end of the file); 0 at the
 *   end; or -EBADMSG as rb2_trace_next(). The records read before an error
 *   are returned first, the error by the next call.
 */
int rb2_trace_next_burst(struct rb2_trace *t, struct rb2_rec *recs, unsigned int n);

/** @return the reason of the last -EBADMSG, or "". */
const char *rb2_trace_error(const struct rb2_trace *t);

/** @return the file's link type (a DLT_* value). */
int rb2_trace_linktype(const struct rb2_trace *t);

/** Copy the reader's counters. */
void rb2_trace_stats_get(const struct rb2_trace *t, struct rb2_trace_stats *st);

/** @return bytes of the file consumed so far (for progress bars). */
uint64_t rb2_trace_offset(const struct rb2_trace *t);

/** Close a reader. */
void rb2_trace_close(struct rb2_trace *t);

/**
 * Parse one captured frame (pure: used by the reader, tests and fuzzers).
 *
 * @param linktype A DLT_* value.
 * @param pkt, caplen The captured bytes.
 * @param wire_len The length on the wire.
 * @param[out] rec Key, kind, flags, wire_len (ts_ns and seq are the caller's).
 * @return 0, or -ENOTSUP for a link type it does not know.
 */
int rb2_trace_parse(int linktype, const uint8_t *pkt, uint32_t caplen,
		    uint32_t wire_len, struct rb2_rec *rec);

/** @return the name of an enum rb2_rec_nonip value ("pppoe_discovery"). */
const char *rb2_rec_nonip_name(unsigned int why);

/**
 * Format the non-IP counts by kind ("arp 3, pppoe_discovery 4"; "" when
 * none), as snprintf() does.
 * @return the length the whole text needs.
 */
size_t rb2_trace_nonip_format(const struct rb2_trace_stats *st, char *buf, size_t size);

/** Add a record to counters (as the reader does). */
void rb2_trace_count(struct rb2_trace_stats *st, const struct rb2_rec *rec);

/** Add @n consecutive records to counters: what rb2_trace_count() of each
 * would, summed in registers first (the per-packet path's version). */
void rb2_trace_count_burst(struct rb2_trace_stats *st, const struct rb2_rec *recs,
			   unsigned int n);

/**
 * Of a packet that did not decode as IP under its link type, what it looks
 * like: DLT_RAW (an IPv4 or IPv6 header at byte 0), DLT_EN10MB (an IP
 * ethertype at byte 12), or -1.
 */
int rb2_trace_looks_like(const uint8_t *pkt, uint32_t caplen);

/** @return the name of a link type ("RAW", "EN10MB", ...), or "unknown". */
const char *rb2_trace_linktype_name(int linktype);

/**
 * The messages of the measurement NF's stages: the replay stage emits, and
 * the measure stage takes, messages of whole records, 1 to `batch` (at most
 * 64) struct rb2_rec each; measure counts any other length as a bad message.
 */
#define RB2_REC_BATCH_MAX 64

#ifdef __cplusplus
}
#endif

#endif /* RB2_TRACE_H */
