/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Trace reading. The classic pcap format (the one CAIDA and tcpdump -w
 * write) is read here: big read()s into a buffer, each record parsed where it
 * lies. libpcap reads the rest (pcapng, the modified formats, link types
 * with FCS bits). Our own parser reads the frames.
 *
 * Why not libpcap for all: it copies each record out of stdio's buffer with
 * two fread() calls: nearly half of its time reading a capture into records
 * (rb2-flowbench --reader both; doc/eval/shm-layers/layers.md has the
 * figures).
 */

#define _GNU_SOURCE    /* fopencookie() */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>

#include <pcap/pcap.h>

#include "rb2_trace.h"

struct rb2_trace {
	pcap_t *pcap;            /* libpcap reads it; else the classic reader: */
	FILE *f;
	uint8_t *buf;            /* [pos, have) read and not yet parsed */
	size_t pos, have;
	uint64_t buf_off;        /* the file offset of buf[0] */
	int swap;                /* the file's byte order is not ours */
	int linktype;
	int nano;                /* timestamps in ns */
	int pending;             /* an error the next burst returns */
	uint64_t seq;
	struct rb2_trace_stats st;
	char *iobuf;             /* the FILE's buffer (rb2_trace_open()) */
	char err[PCAP_ERRBUF_SIZE + 64];
};

/* Classic pcap: a 24-byte file header, then a 16-byte header per record. */
#define PCAP_MAGIC_US 0xa1b2c3d4u
#define PCAP_MAGIC_NS 0xa1b23c4du
#define PCAP_MAX_CAPLEN 262144u  /* libpcap's MAXIMUM_SNAPLEN */
#define CLASSIC_BUF ((1u << 20) + PCAP_MAX_CAPLEN + 16)

/*
 * libpcap reads a file through stdio, two fread() calls a packet. With
 * stdio's own buffer (st_blksize: 4 KiB) that is a read() system call every
 * 40 or so packets, and each fread() takes the FILE's lock. A 1 MiB buffer
 * and no locking (one thread reads a trace) cut both.
 */
#define TRACE_IOBUF (1u << 20)

/* Link types we know, with their DLT_ numbers (some differ from LINKTYPE_). */
#define LT_NULL 0
#define LT_EN10MB 1
#define LT_PPP 9
#define LT_PPP_SERIAL 50
#define LT_RAW_A 12
#define LT_RAW_B 14
#define LT_LOOP 108
#define LT_LINUX_SLL 113
#define LT_RAW 101
#define LT_IPV4 228
#define LT_IPV6 229
#define LT_LINUX_SLL2 276

static int
known_linktype(int lt)
{
	switch (lt) {
	case LT_NULL: case LT_EN10MB: case LT_RAW_A: case LT_RAW_B: case LT_LOOP:
	case LT_LINUX_SLL: case LT_RAW: case LT_IPV4: case LT_IPV6: case LT_LINUX_SLL2:
	case LT_PPP: case LT_PPP_SERIAL:
		return 1;
	}
	return 0;
}

static uint16_t
be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t
le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
		(uint32_t)p[3] << 24;
}

static void
ports(const uint8_t *l4, uint32_t avail, uint8_t proto, struct rb2_rec *r)
{
	/* TCP, UDP, SCTP, DCCP, UDP-Lite: ports are the first four bytes. */
	if (proto != 6 && proto != 17 && proto != 132 && proto != 33 && proto != 136)
		return;
	if (avail < 4) {
		r->flags |= RB2_REC_F_TRUNC;
		return;
	}
	r->sport = be16(l4);
	r->dport = be16(l4 + 2);
	/* TCP's flags (byte 13): a capture cut before them reads as none. */
	if (proto == 6 && avail >= 14)
		r->tcp_flags = l4[13];
}

static void
parse_ipv4(const uint8_t *p, uint32_t len, struct rb2_rec *r)
{
	uint32_t ihl;
	uint16_t frag;

	if (len < 20 || (p[0] >> 4) != 4 || (ihl = (uint32_t)(p[0] & 15) * 4) < 20) {
		r->kind = RB2_REC_MALFORMED;
		return;
	}
	r->kind = RB2_REC_IPV4;
	r->proto = p[9];
	r->ip_len = be16(p + 2);
	memcpy(&r->src, p + 12, 4);
	memcpy(&r->dst, p + 16, 4);
	frag = be16(p + 6);
	if ((frag & 0x1fff) != 0) { /* a non-first fragment carries no ports */
		r->flags |= RB2_REC_F_FRAG;
		return;
	}
	if (len < ihl) {
		r->flags |= RB2_REC_F_TRUNC;
		return;
	}
	ports(p + ihl, len - ihl, r->proto, r);
}

static void
parse_ipv6(const uint8_t *p, uint32_t len, struct rb2_rec *r)
{
	uint8_t nh;
	uint32_t off = 40;

	if (len < 40 || (p[0] >> 4) != 6) {
		r->kind = RB2_REC_MALFORMED;
		return;
	}
	r->kind = RB2_REC_IPV6;
	r->ip_len = 40 + be16(p + 4);
	memcpy(r->src6, p + 8, 16);
	memcpy(r->dst6, p + 24, 16);
	nh = p[6];
	/* Walk the extension headers to the upper layer. */
	for (int hops = 0; hops < 8; hops++) {
		if (nh == 0 || nh == 43 || nh == 60) { /* hop-by-hop, routing, dest */
			if (len < off + 8) {
				r->flags |= RB2_REC_F_TRUNC;
				break;
			}
			nh = p[off];
			off += 8 + (uint32_t)p[off + 1] * 8;
		} else if (nh == 44) { /* fragment */
			if (len < off + 8) {
				r->flags |= RB2_REC_F_TRUNC;
				break;
			}
			if ((be16(p + off + 2) & 0xfff8) != 0)
				r->flags |= RB2_REC_F_FRAG;
			nh = p[off];
			off += 8;
		} else {
			break;
		}
	}
	r->proto = nh;
	if (!(r->flags & (RB2_REC_F_FRAG | RB2_REC_F_TRUNC))) {
		if (len < off)
			r->flags |= RB2_REC_F_TRUNC;
		else
			ports(p + off, len - off, nh, r);
	}
}

/* Not IP, for reason @why (enum rb2_rec_nonip). */
static void
nonip(struct rb2_rec *r, unsigned int why)
{
	r->kind = RB2_REC_NONIP;
	r->flags = (uint16_t)((r->flags & ~RB2_REC_WHY_MASK) | why << RB2_REC_WHY_SHIFT);
}

/* An IP packet at @p: v4 or v6 by its version nibble. */
static void
parse_ip(const uint8_t *p, uint32_t len, struct rb2_rec *r, unsigned int why)
{
	if (len < 1) {
		r->kind = RB2_REC_MALFORMED;
		return;
	}
	switch (p[0] >> 4) {
	case 4: parse_ipv4(p, len, r); break;
	case 6: parse_ipv6(p, len, r); break;
	default: nonip(r, why); break;
	}
}

static void parse_mpls(const uint8_t *p, uint32_t len, struct rb2_rec *r);

/*
 * A PPP frame (RFC 1661): the HDLC address and control bytes (0xff 0x03,
 * RFC 1662) when present, then the protocol field, one byte when
 * compressed (§6.5: an odd first byte). IPv4, IPv6 and MPLS (RFC 3032 §5)
 * are decoded; every other protocol (LCP, IPCP, ...) is named.
 */
static void
parse_ppp(const uint8_t *p, uint32_t len, struct rb2_rec *r)
{
	uint32_t off = 0;
	uint16_t proto;

	if (len >= 2 && p[0] == 0xff && p[1] == 0x03)
		off = 2;
	if (len < off + 1) {
		r->kind = RB2_REC_MALFORMED;
		return;
	}
	proto = p[off];
	if ((proto & 1) == 0) {
		if (len < off + 2) {
			r->kind = RB2_REC_MALFORMED;
			return;
		}
		proto = be16(p + off);
		off += 2;
	} else {
		off += 1;
	}
	switch (proto) {
	case 0x0021: parse_ipv4(p + off, len - off, r); break;
	case 0x0057: parse_ipv6(p + off, len - off, r); break;
	case 0x0281: case 0x0283: parse_mpls(p + off, len - off, r); break;
	default: nonip(r, RB2_NONIP_PPP_CTRL); break;
	}
}

/* A PPPoE session frame (RFC 2516): version/type, code, session, length,
 * then a PPP frame without address and control. */
static void
parse_pppoe(const uint8_t *p, uint32_t len, struct rb2_rec *r)
{
	if (len < 6 + 1 || p[0] != 0x11) {
		r->kind = RB2_REC_MALFORMED;
		return;
	}
	parse_ppp(p + 6, len - 6, r);
}

/*
 * An MPLS label stack (RFC 3032): 4-byte entries down to the one with the
 * bottom-of-stack bit. The payload's type is not in the stack: explicit
 * null labels (0: IPv4, 2: IPv6) say it, else the first nibble does, as
 * routers and tshark guess it.
 */
static void
parse_mpls(const uint8_t *p, uint32_t len, struct rb2_rec *r)
{
	uint32_t off = 0, label;

	for (;;) {
		if (len < off + 4) {
			r->kind = RB2_REC_MALFORMED; /* stack cut short */
			return;
		}
		label = (uint32_t)be16(p + off) << 4 | p[off + 2] >> 4;
		off += 4;
		if (p[off - 2] & 1)
			break;
	}
	if (label == 0)
		parse_ipv4(p + off, len - off, r);
	else if (label == 2)
		parse_ipv6(p + off, len - off, r);
	else
		parse_ip(p + off, len - off, r, RB2_NONIP_MPLS);
}

/* By ethertype: IP, possibly inside PPPoE or MPLS; else a named non-IP. */
static void
parse_ethertype(uint16_t et, const uint8_t *p, uint32_t len, struct rb2_rec *r)
{
	switch (et) {
	case 0x0800: parse_ipv4(p, len, r); break;
	case 0x86dd: parse_ipv6(p, len, r); break;
	case 0x8864: parse_pppoe(p, len, r); break;
	case 0x8847: case 0x8848: parse_mpls(p, len, r); break;
	case 0x8863: nonip(r, RB2_NONIP_PPPOE_DISC); break;
	case 0x0806: nonip(r, RB2_NONIP_ARP); break;
	default: nonip(r, et < 0x0600 ? RB2_NONIP_LLC : RB2_NONIP_ETHERTYPE); break;
	}
}

int
rb2_trace_parse(int lt, const uint8_t *p, uint32_t caplen, uint32_t wire_len,
		struct rb2_rec *r)
{
	memset(r, 0, sizeof(*r));
	r->wire_len = wire_len;
	switch (lt) {
	case LT_RAW: case LT_RAW_A: case LT_RAW_B: case LT_IPV4: case LT_IPV6:
		parse_ip(p, caplen, r, RB2_NONIP_VERSION);
		return 0;
	case LT_EN10MB: {
		uint32_t off = 12;
		uint16_t et;

		if (caplen < 14) {
			r->kind = RB2_REC_MALFORMED;
			return 0;
		}
		et = be16(p + off);
		/* 802.1Q / 802.1ad / QinQ tags, stacked. */
		while ((et == 0x8100 || et == 0x88a8 || et == 0x9100) && caplen >= off + 6) {
			off += 4;
			et = be16(p + off);
		}
		if (et == 0x8100 || et == 0x88a8 || et == 0x9100) {
			r->kind = RB2_REC_MALFORMED; /* tags cut short */
			return 0;
		}
		parse_ethertype(et, p + off + 2, caplen - off - 2, r);
		return 0;
	}
	case LT_LINUX_SLL:
		if (caplen < 16) {
			r->kind = RB2_REC_MALFORMED;
			return 0;
		}
		parse_ethertype(be16(p + 14), p + 16, caplen - 16, r);
		return 0;
	case LT_LINUX_SLL2:
		if (caplen < 20) {
			r->kind = RB2_REC_MALFORMED;
			return 0;
		}
		parse_ethertype(be16(p), p + 20, caplen - 20, r);
		return 0;
	case LT_PPP: case LT_PPP_SERIAL:
		/* PPP_SERIAL is HDLC-framed PPP: the same 0xff 0x03 in front. */
		parse_ppp(p, caplen, r);
		return 0;
	case LT_NULL: case LT_LOOP: {
		uint32_t af;

		if (caplen < 4) {
			r->kind = RB2_REC_MALFORMED;
			return 0;
		}
		/* NULL is in the writer's byte order, LOOP in network order;
		 * both forms are accepted. AF_INET is 2 everywhere; AF_INET6
		 * is 10, 24, 28 or 30 depending on the OS. */
		af = le32(p);
		if (af > 0xffff)
			af = (uint32_t)be16(p + 2) | (uint32_t)be16(p) << 16;
		if (af == 2)
			parse_ipv4(p + 4, caplen - 4, r);
		else if (af == 10 || af == 24 || af == 28 || af == 30)
			parse_ipv6(p + 4, caplen - 4, r);
		else
			nonip(r, RB2_NONIP_FAMILY);
		return 0;
	}
	default:
		return -ENOTSUP;
	}
}

const char *
rb2_rec_nonip_name(unsigned int why)
{
	static const char *const names[RB2_NONIP_KINDS] = {
		[RB2_NONIP_ETHERTYPE] = "ethertype",
		[RB2_NONIP_ARP] = "arp",
		[RB2_NONIP_LLC] = "llc",
		[RB2_NONIP_PPPOE_DISC] = "pppoe_discovery",
		[RB2_NONIP_PPP_CTRL] = "ppp_control",
		[RB2_NONIP_MPLS] = "mpls_payload",
		[RB2_NONIP_VERSION] = "ip_version",
		[RB2_NONIP_FAMILY] = "address_family",
	};

	return why < RB2_NONIP_KINDS && names[why] != NULL ? names[why] : "unknown";
}

size_t
rb2_trace_nonip_format(const struct rb2_trace_stats *st, char *buf, size_t size)
{
	size_t n = 0;

	if (size > 0)
		buf[0] = '\0';
	for (unsigned int i = 0; i < RB2_NONIP_KINDS; i++) {
		int w;

		if (st->nonip_by[i] == 0)
			continue;
		w = snprintf(buf + n, size > n ? size - n : 0, "%s%s %" PRIu64,
			     n == 0 ? "" : ", ", rb2_rec_nonip_name(i), st->nonip_by[i]);
		n += w > 0 ? (size_t)w : 0;
	}
	return n;
}

void
rb2_trace_count_burst(struct rb2_trace_stats *st, const struct rb2_rec *r, unsigned int n)
{
	/*
	 * Sums in locals, not in @st: incrementing @st's fields record by
	 * record makes each increment wait for the store of the one before
	 * (a chain through memory), which cost the parse stage 7 of its 26
	 * cycles per packet (doc/eval/port.md). The non-IP kinds are counted
	 * as runs of one kind, for the same reason.
	 */
	uint64_t bytes = 0, ipv4 = 0, ipv6 = 0, nonip = 0, frag = 0, trunc = 0, run = 0;
	unsigned int why = 0;

	for (unsigned int i = 0; i < n; i++) {
		unsigned int kind = r[i].kind, flags = r[i].flags;

		bytes += r[i].wire_len;
		ipv4 += kind == RB2_REC_IPV4;
		ipv6 += kind == RB2_REC_IPV6;
		if (kind == RB2_REC_NONIP) {
			unsigned int w = RB2_REC_WHY(&r[i]);

			if (w != why) {
				st->nonip_by[why] += run;
				run = 0;
				why = w;
			}
			run++;
			nonip++;
		}
		frag += (flags & RB2_REC_F_FRAG) != 0;
		trunc += (flags & RB2_REC_F_TRUNC) != 0;
	}
	st->nonip_by[why] += run;
	st->packets += n;
	st->bytes += bytes;
	st->ipv4 += ipv4;
	st->ipv6 += ipv6;
	st->nonip += nonip;
	st->malformed += n - ipv4 - ipv6 - nonip;
	st->fragments += frag;
	st->truncated += trunc;
}

void
rb2_trace_count(struct rb2_trace_stats *st, const struct rb2_rec *r)
{
	rb2_trace_count_burst(st, r, 1);
}

static uint32_t
file32(const struct rb2_trace *t, const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return t->swap ? __builtin_bswap32(v) : v;
}

/* The classic reader takes the link types whose LINKTYPE_ value is the
 * DLT_ value rb2_trace_parse() knows (RAW's differ: 101 and 12); libpcap
 * maps and refuses the others. */
static int
classic_linktype(uint32_t lt)
{
	switch (lt) {
	case LT_NULL: case LT_EN10MB: case LT_PPP: case LT_PPP_SERIAL: case LT_LOOP:
	case LT_LINUX_SLL: case LT_IPV4: case LT_IPV6: case LT_LINUX_SLL2:
		return (int)lt;
	case 101:
		return DLT_RAW;
	default:
		return -1;
	}
}

/* Make [pos, pos + need) readable: @return 1, 0 at a clean end (nothing
 * left), -1 when the file ends inside it. */
static int
classic_fill(struct rb2_trace *t, size_t need)
{
	while (t->have - t->pos < need) {
		size_t n;

		if (t->pos > 0) {
			memmove(t->buf, t->buf + t->pos, t->have - t->pos);
			t->buf_off += t->pos;
			t->have -= t->pos;
			t->pos = 0;
		}
		n = fread(t->buf + t->have, 1, CLASSIC_BUF - t->have, t->f);
		if (n == 0)
			return t->have == t->pos ? 0 : -1;
		t->have += n;
	}
	return 1;
}

/* The next record of a classic pcap file, in place. */
static int
classic_next(struct rb2_trace *t, const uint8_t **data, uint32_t *caplen, uint32_t *len,
	     uint64_t *ts_ns)
{
	const uint8_t *h;
	int ret = classic_fill(t, 16);

	if (ret <= 0) {
		if (ret < 0)
			snprintf(t->err, sizeof(t->err), "after %llu packets: truncated dump file; "
				 "a record header cut short", (unsigned long long)t->seq);
		return ret < 0 ? -EBADMSG : 0;
	}
	h = t->buf + t->pos;
	*caplen = file32(t, h + 8);
	*len = file32(t, h + 12);
	*ts_ns = (uint64_t)file32(t, h) * 1000000000ull +
		(uint64_t)file32(t, h + 4) * (t->nano ? 1 : 1000);
	if (*caplen > PCAP_MAX_CAPLEN) {
		snprintf(t->err, sizeof(t->err), "after %llu packets: invalid packet capture "
			 "length %u, bigger than %u (a corrupt file)", (unsigned long long)t->seq,
			 *caplen, PCAP_MAX_CAPLEN);
		return -EBADMSG;
	}
	if (classic_fill(t, 16 + (size_t)*caplen) <= 0) {
		snprintf(t->err, sizeof(t->err), "after %llu packets: truncated dump file; tried "
			 "to read %u captured bytes, only got %zu", (unsigned long long)t->seq,
			 *caplen, t->have - t->pos - 16);
		return -EBADMSG;
	}
	*data = t->buf + t->pos + 16;
	t->pos += 16 + (size_t)*caplen;
	return 1;
}

/* A classic pcap file whose header is @p hdr (24 bytes, read from @p f):
 * its reader, or NULL when libpcap must read it (errno 0), or on failure
 * (errno set). */
static struct rb2_trace *
classic_open(FILE *f, const uint8_t *hdr)
{
	struct rb2_trace *t;
	uint32_t magic, lt;
	uint16_t major;
	int swap, nano, dlt;

	memcpy(&magic, hdr, 4);
	swap = magic == __builtin_bswap32(PCAP_MAGIC_US) || magic == __builtin_bswap32(PCAP_MAGIC_NS);
	magic = swap ? __builtin_bswap32(magic) : magic;
	if (magic != PCAP_MAGIC_US && magic != PCAP_MAGIC_NS)
		return NULL;
	nano = magic == PCAP_MAGIC_NS;
	memcpy(&major, hdr + 4, 2);
	memcpy(&lt, hdr + 20, 4);
	major = swap ? __builtin_bswap16(major) : major;
	lt = swap ? __builtin_bswap32(lt) : lt;
	dlt = classic_linktype(lt);
	if (major != 2 || dlt < 0)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (t != NULL)
		t->buf = malloc(CLASSIC_BUF);
	if (t == NULL || t->buf == NULL) {
		free(t);
		errno = ENOMEM;
		return NULL;
	}
	t->f = f;
	t->swap = swap;
	t->nano = nano;
	t->linktype = dlt;
	t->buf_off = 24;
	return t;
}

/* libpcap reads from the start of the stream: from a pipe, the header
 * bytes already read are handed back first, then the rest. */
struct replay_stream {
	FILE *f;
	uint8_t hdr[24];
	size_t n, at;
};

static ssize_t
replay_read(void *c, char *buf, size_t size)
{
	struct replay_stream *r = c;

	if (r->at < r->n) {
		size_t k = r->n - r->at < size ? r->n - r->at : size;

		memcpy(buf, r->hdr + r->at, k);
		r->at += k;
		return (ssize_t)k;
	}
	return (ssize_t)fread(buf, 1, size, r->f);
}

static int
replay_close(void *c)
{
	struct replay_stream *r = c;
	int ret = fclose(r->f);

	free(r);
	return ret;
}

/* Wrap an opened pcap handle (or report why there is none). */
static struct rb2_trace *
wrap(pcap_t *p, const char *name, const char *perr, char *err, size_t errlen)
{
	struct rb2_trace *t;

	if (p == NULL) {
		snprintf(err, errlen, "%s: cannot read it as pcap or pcapng: %s", name,
			 perr[0] ? perr : "unknown error");
		return NULL;
	}
	if (!known_linktype(pcap_datalink(p))) {
		snprintf(err, errlen, "%s: link type %d (%s) is not supported: use RAW, Ethernet, Linux SLL, PPP or NULL/LOOP",
			 name, pcap_datalink(p),
			 pcap_datalink_val_to_name(pcap_datalink(p)) ?
			 pcap_datalink_val_to_name(pcap_datalink(p)) : "unknown");
		pcap_close(p);
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (t == NULL) {
		snprintf(err, errlen, "out of memory");
		pcap_close(p);
		return NULL;
	}
	t->pcap = p;
	t->linktype = pcap_datalink(p);
	t->nano = pcap_get_tstamp_precision(p) == PCAP_TSTAMP_PRECISION_NANO;
	return t;
}

/* Open the capture that @p f reads (the reader owns @p f from here);
 * @p libpcap: through libpcap whatever its format. */
static struct rb2_trace *
open_stream(FILE *f, const char *name, int libpcap, char *err, size_t errlen)
{
	char perr[PCAP_ERRBUF_SIZE] = "";
	cookie_io_functions_t io = { .read = replay_read, .close = replay_close };
	struct replay_stream *rs;
	struct rb2_trace *t;
	uint8_t hdr[24];
	size_t n = fread(hdr, 1, sizeof(hdr), f);
	FILE *again;
	pcap_t *p;

	if (n == sizeof(hdr) && !libpcap) {
		errno = 0;
		t = classic_open(f, hdr);
		if (t != NULL)
			return t;
		if (errno == ENOMEM) {
			snprintf(err, errlen, "%s: out of memory", name);
			fclose(f);
			return NULL;
		}
	}
	if (fseek(f, 0, SEEK_SET) == 0) {
		again = f;      /* a file: libpcap reads it from the start */
	} else {
		/* A pipe: the bytes read are handed back first. */
		rs = calloc(1, sizeof(*rs));
		again = rs != NULL ? fopencookie(rs, "rb", io) : NULL;
		if (again == NULL) {
			snprintf(err, errlen, "%s: out of memory", name);
			free(rs);
			fclose(f);
			return NULL;
		}
		__fsetlocking(again, FSETLOCKING_BYCALLER);
		rs->f = f;
		memcpy(rs->hdr, hdr, n);
		rs->n = n;
	}
	p = pcap_fopen_offline_with_tstamp_precision(again, PCAP_TSTAMP_PRECISION_NANO, perr);
	if (p == NULL)
		fclose(again);
	return wrap(p, name, perr, err, errlen);
}

static struct rb2_trace *
open_path(const char *path, int libpcap, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	char *iobuf = malloc(TRACE_IOBUF);
	struct rb2_trace *t;

	if (f == NULL || iobuf == NULL) {
		snprintf(err, errlen, "%s: cannot read it as pcap or pcapng: %s", path,
			 strerror(f == NULL ? errno : ENOMEM));
		if (f != NULL)
			fclose(f);
		free(iobuf);
		return NULL;
	}
	setvbuf(f, iobuf, _IOFBF, TRACE_IOBUF);
	__fsetlocking(f, FSETLOCKING_BYCALLER);
	(void)posix_fadvise(fileno(f), 0, 0, POSIX_FADV_SEQUENTIAL);
	t = open_stream(f, path, libpcap, err, errlen);
	if (t == NULL)
		free(iobuf);    /* the FILE that used it is closed */
	else
		t->iobuf = iobuf;
	return t;
}

struct rb2_trace *
rb2_trace_open(const char *path, char *err, size_t errlen)
{
	return open_path(path, 0, err, errlen);
}

struct rb2_trace *
rb2_trace_open_libpcap(const char *path, char *err, size_t errlen)
{
	return open_path(path, 1, err, errlen);
}

struct rb2_trace *
rb2_trace_open_file(FILE *f, const char *name, char *err, size_t errlen)
{
	return open_stream(f, name, 0, err, errlen);
}

int
rb2_trace_looks_like(const uint8_t *p, uint32_t caplen)
{
	if (caplen >= 20 && (p[0] == 0x45 || (p[0] >> 4 == 6 && caplen >= 40)))
		return DLT_RAW;
	if (caplen >= 34) {
		uint16_t et = be16(p + 12);

		if (et == 0x0800 || et == 0x86dd || et == 0x8100 || et == 0x88a8)
			return DLT_EN10MB;
	}
	return -1;
}

const char *
rb2_trace_linktype_name(int linktype)
{
	const char *n = pcap_datalink_val_to_name(linktype);

	return n != NULL ? n : "unknown";
}

/* One record, not yet in the counters. */
static int
next_uncounted(struct rb2_trace *t, struct rb2_rec *rec)
{
	const uint8_t *data;
	uint32_t caplen, len;
	uint64_t ts_ns;

	if (t->pcap != NULL) {
		struct pcap_pkthdr *h;
		int ret = pcap_next_ex(t->pcap, &h, &data);

		if (ret == PCAP_ERROR_BREAK)
			return 0;
		if (ret != 1) {
			snprintf(t->err, sizeof(t->err), "after %llu packets: %s",
				 (unsigned long long)t->seq, pcap_geterr(t->pcap));
			return -EBADMSG;
		}
		caplen = h->caplen;
		len = h->len;
		ts_ns = (uint64_t)h->ts.tv_sec * 1000000000ull +
			(uint64_t)h->ts.tv_usec * (t->nano ? 1 : 1000);
	} else {
		int ret = classic_next(t, &data, &caplen, &len, &ts_ns);

		if (ret <= 0)
			return ret;
	}
	rb2_trace_parse(t->linktype, data, caplen, len, rec);
	if (rec->kind == RB2_REC_NONIP || rec->kind == RB2_REC_MALFORMED) {
		int lt = rb2_trace_looks_like(data, caplen);

		t->st.looks_raw_ip += lt == DLT_RAW && t->linktype != DLT_RAW;
		t->st.looks_ethernet += lt == DLT_EN10MB && t->linktype != DLT_EN10MB;
	}
	rec->ts_ns = ts_ns;
	rec->seq = (uint32_t)t->seq++;
	return 1;
}

int
rb2_trace_next(struct rb2_trace *t, struct rb2_rec *rec)
{
	return rb2_trace_next_burst(t, rec, 1);
}

int
rb2_trace_next_burst(struct rb2_trace *t, struct rb2_rec *recs, unsigned int n)
{
	unsigned int k = 0;
	int ret = 1;

	if (t->pending != 0) {          /* the error after the last burst */
		ret = t->pending;
		t->pending = 0;
		return ret;
	}
	while (k < n && (ret = next_uncounted(t, &recs[k])) == 1)
		k++;
	rb2_trace_count_burst(&t->st, recs, k);
	if (k > 0) {
		t->pending = ret < 0 ? ret : 0;
		return (int)k;
	}
	return ret;
}

uint64_t
rb2_trace_offset(const struct rb2_trace *t)
{
	FILE *f = t->pcap != NULL ? pcap_file(t->pcap) : NULL;

	if (t->pcap == NULL)
		return t->buf_off + t->pos;
	long off = f != NULL ? ftell(f) : -1;

	return off < 0 ? 0 : (uint64_t)off;
}

const char *
rb2_trace_error(const struct rb2_trace *t)
{
	return t->err;
}

int
rb2_trace_linktype(const struct rb2_trace *t)
{
	return t->linktype;
}

void
rb2_trace_stats_get(const struct rb2_trace *t, struct rb2_trace_stats *st)
{
	*st = t->st;
}

void
rb2_trace_close(struct rb2_trace *t)
{
	if (t == NULL)
		return;
	if (t->pcap != NULL)
		pcap_close(t->pcap);    /* closes the FILE: then its buffer can go */
	else
		fclose(t->f);
	free(t->buf);
	free(t->iobuf);
	free(t);
}
