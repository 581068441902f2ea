/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * rb2-tracegen: CAIDA-like pcaps, seedable.
 *
 *   rb2-tracegen -o trace.pcap --packets 30000000 --flows 1000000 --seed 7
 *
 * RAW link type (IP first, as CAIDA's), microsecond timestamps (--nano for
 * ns) over --duration seconds; --flows flows whose sizes follow a Zipf law
 * (--zipf); a packet-size mix of ACKs, mid-size and near-MTU packets;
 * captures cut at --snaplen bytes (CAIDA keeps 40-96); optional --ipv6 and
 * --nonip fractions (non-IP packets are ARP frames, so such a trace is
 * Ethernet). --expect FILE writes what was generated (the ground truth the
 * tests compare a reader against).
 *
 * Every packet is valid for standard tools (tshark, nfdump, tcpdump): IPv4
 * header checksums, UDP lengths, and TCP and UDP checksums over the
 * pseudo-header and a zero payload (the part past the snap length is zeros
 * on the wire too).
 */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <pcap/pcap.h>

#define MIN_U32(a, b) ((a) < (b) ? (a) : (b))

struct flow {
	uint8_t v6;
	uint8_t proto;
	uint16_t sport, dport;
	uint32_t seq, ack;  /* TCP: the next sequence number, and the ack sent */
	uint8_t src[16], dst[16];
};

static uint64_t rng_state;

static uint64_t
rnd(void)
{
	/* xorshift64*: seedable, fast, good enough for synthetic traffic. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

static double
unif(void)
{
	return (double)(rnd() >> 11) / 9007199254740992.0;
}

static void
usage(FILE *f, const char *prog)
{
	fprintf(f,
"usage: %s -o FILE [options]\n"
"  -o, --output FILE   pcap to write\n"
"  --packets N         packets (default 1000000)\n"
"  --flows M           flows (default 100000)\n"
"  --duration S        capture span in seconds (default 60)\n"
"  --zipf A            Zipf exponent of flow sizes (default 1.1)\n"
"  --seed S            random seed (default 1)\n"
"  --ipv6 F            fraction of flows over IPv6 (default 0)\n"
"  --nonip F           fraction of packets that are not IP (default 0): ARP\n"
"                      frames, so that the trace is Ethernet, not raw IP\n"
"  --snaplen L         bytes of IP kept per packet, 40..65535 (default 64;\n"
"                      CAIDA: 40-96); an Ethernet trace keeps 14 more\n"
"  --nano              nanosecond timestamps (default: microseconds)\n"
"  --expect FILE       write the generated totals as JSON (flows: those with\n"
"                      packets; flows_drawn: the population they come from)\n"
"  -h, --help          this text\n", prog);
}

static int
num(const char *opt, const char *arg, double lo, double hi, double *out)
{
	char *end;
	double v = strtod(arg, &end);

	/* k, M and G, as rb2-nf takes them (--packets 10M). */
	if (end != arg && *end != '\0' && end[1] == '\0' && strchr("kKMG", *end) != NULL) {
		v *= *end == 'k' || *end == 'K' ? 1e3 : *end == 'M' ? 1e6 : 1e9;
		end++;
	}
	if (end == arg || *end != '\0' || !(v >= lo && v <= hi)) {
		fprintf(stderr, "rb2-tracegen: invalid --%s '%s': expected a number in [%g, %g] (k, M, G: thousands, millions, billions)\n",
			opt, arg, lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}

/* A wire length from the mix: ACK-sized, mid-size, near-MTU. */
static uint32_t
wire_len(int v6)
{
	double u = unif();
	uint32_t min = v6 ? 60 : 40;

	if (u < 0.45)
		return min + (uint32_t)(rnd() % 41);
	if (u < 0.62)
		return 100 + (uint32_t)(rnd() % 500);
	if (u < 0.70)
		return 600 + (uint32_t)(rnd() % 700);
	return 1300 + (uint32_t)(rnd() % 201);
}

/* The Internet checksum's one's-complement sum of @n bytes, added to @sum. */
static uint32_t
csum_add(uint32_t sum, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (n & 1)
		sum += (uint32_t)p[n - 1] << 8;
	return sum;
}

static uint16_t
csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/*
 * Build the captured bytes of one packet of flow @f: its IP and transport
 * headers (checksums included) and a zero payload, an IP packet of @len
 * bytes, the first @snap of its bytes kept; in an Ethernet frame if @ether
 * (14 bytes more of both). Non-IP packets (@f NULL) are ARP requests, a
 * 60-byte frame. *@wire gets the length on the wire.
 */
static uint32_t
build(uint8_t *b, struct flow *f, uint32_t len, uint32_t snap, int ether,
      uint32_t *wire)
{
	uint8_t h[80] = {0}; /* the headers, whole, before the snap length cuts */
	uint32_t hl, ip, l4len, eth = ether ? 14 : 0, cap;
	uint32_t sum;

	if (f == NULL) {          /* ARP request, broadcast */
		memset(h, 0xff, 6);
		h[6] = 0x02;      /* a locally administered source */
		put16(h + 12, 0x0806);
		put16(h + 14, 1);
		put16(h + 16, 0x0800);
		h[18] = 6;
		h[19] = 4;
		put16(h + 20, 1);
		memcpy(h + 22, h + 6, 6);
		hl = 42;
		len = 60;         /* padded to the least Ethernet frame */
		goto out;
	}
	if (ether) {
		h[0] = 0x02;
		h[6] = 0x02;
		h[11] = 1;
		put16(h + 12, f->v6 ? 0x86dd : 0x0800);
	}
	ip = f->v6 ? 40 : 20;
	l4len = len - ip;
	if (!f->v6) {
		h[eth] = 0x45;
		put16(h + eth + 2, (uint16_t)len);
		h[eth + 6] = 0x40;  /* DF */
		h[eth + 8] = 64;
		h[eth + 9] = f->proto;
		memcpy(h + eth + 12, f->src, 4);
		memcpy(h + eth + 16, f->dst, 4);
		put16(h + eth + 10, csum_fold(csum_add(0, h + eth, 20)));
	} else {
		h[eth] = 0x60;
		put16(h + eth + 4, (uint16_t)l4len);
		h[eth + 6] = f->proto;
		h[eth + 7] = 64;
		memcpy(h + eth + 8, f->src, 16);
		memcpy(h + eth + 24, f->dst, 16);
	}
	put16(h + eth + ip, f->sport);
	put16(h + eth + ip + 2, f->dport);
	if (f->proto == 6) {
		/* In sequence: each segment starts where the last one ended. */
		put16(h + eth + ip + 4, (uint16_t)(f->seq >> 16));
		put16(h + eth + ip + 6, (uint16_t)f->seq);
		put16(h + eth + ip + 8, (uint16_t)(f->ack >> 16));
		put16(h + eth + ip + 10, (uint16_t)f->ack);
		f->seq += l4len - 20;
		h[eth + ip + 12] = 0x50;          /* data offset: 20 bytes */
		h[eth + ip + 13] = 0x10;          /* ACK */
		put16(h + eth + ip + 14, 65535);  /* window */
		hl = eth + ip + 20;
	} else {
		put16(h + eth + ip + 4, (uint16_t)l4len);
		hl = eth + ip + 8;
	}
	/* Pseudo-header, then the transport header; the payload is zeros. */
	sum = f->v6 ? csum_add(0, h + eth + 8, 32) : csum_add(0, h + eth + 12, 8);
	sum += f->proto + (l4len & 0xffff) + (l4len >> 16);
	sum = csum_add(sum, h + eth + ip, hl - eth - ip);
	put16(h + eth + ip + (f->proto == 6 ? 16 : 6),
	      csum_fold(sum) == 0 && f->proto == 17 ? 0xffff : csum_fold(sum));
	len += eth;
	snap += eth;
out:
	cap = len < snap ? len : snap;
	memset(b, 0, cap);
	memcpy(b, h, MIN_U32(hl, cap));
	*wire = len;
	return cap;
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"output", required_argument, NULL, 'o'}, {"packets", required_argument, NULL, 'n'},
		{"flows", required_argument, NULL, 'm'}, {"duration", required_argument, NULL, 'd'},
		{"zipf", required_argument, NULL, 'z'}, {"seed", required_argument, NULL, 's'},
		{"ipv6", required_argument, NULL, '6'}, {"nonip", required_argument, NULL, 'x'},
		{"snaplen", required_argument, NULL, 'l'}, {"nano", no_argument, NULL, 'N'},
		{"expect", required_argument, NULL, 'e'}, {"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	double packets = 1e6, flows = 1e5, duration = 60, zipf = 1.1, seed = 1;
	double v6frac = 0, nonip = 0, snap = 64;
	const char *out = NULL, *expect = NULL;
	uint64_t n4 = 0, n6 = 0, nn = 0, bytes = 0;
	int nano = 0, opt, tty = isatty(2);

	while ((opt = getopt_long(argc, argv, "o:h", lo, NULL)) != -1) {
		int bad = 0;
		switch (opt) {
		case 'o': out = optarg; break;
		case 'n': bad = num("packets", optarg, 1, 1e10, &packets); break;
		case 'm': bad = num("flows", optarg, 1, 1e8, &flows); break;
		case 'd': bad = num("duration", optarg, 1e-6, 1e6, &duration); break;
		case 'z': bad = num("zipf", optarg, 0, 10, &zipf); break;
		case 's': bad = num("seed", optarg, 0, 1e18, &seed); break;
		case '6': bad = num("ipv6", optarg, 0, 1, &v6frac); break;
		case 'x': bad = num("nonip", optarg, 0, 1, &nonip); break;
		case 'l': bad = num("snaplen", optarg, 40, 65535, &snap); break;
		case 'N': nano = 1; break;
		case 'e': expect = optarg; break;
		case 'h': usage(stdout, argv[0]); return 0;
		default: usage(stderr, argv[0]); return 2;
		}
		if (bad)
			return 2;
	}
	if (out == NULL || optind < argc) {
		fprintf(stderr, "rb2-tracegen: %s; see --help\n",
			out == NULL ? "-o FILE is required" : "unexpected argument");
		return 2;
	}

	uint64_t np = (uint64_t)packets, nf = (uint64_t)flows, nseen = 0;
	int ether = nonip > 0;
	struct flow *fl = calloc(nf, sizeof(*fl));
	uint8_t *seen = calloc(nf / 8 + 1, 1);   /* flows that got a packet */
	double *cdf = malloc(nf * sizeof(*cdf)), sum = 0;
	uint8_t buf[65536 + 14];
	pcap_t *dead = pcap_open_dead_with_tstamp_precision(ether ? DLT_EN10MB : DLT_RAW,
		(int)snap + (ether ? 14 : 0),
		nano ? PCAP_TSTAMP_PRECISION_NANO : PCAP_TSTAMP_PRECISION_MICRO);
	pcap_dumper_t *d = dead ? pcap_dump_open(dead, out) : NULL;

	if (fl == NULL || cdf == NULL || seen == NULL || d == NULL) {
		fprintf(stderr, "rb2-tracegen: cannot write %s: %s\n", out,
			d == NULL && dead ? pcap_geterr(dead) : strerror(ENOMEM));
		return 1;
	}
	rng_state = (uint64_t)seed * 0x9e3779b97f4a7c15ull + 1;
	for (uint64_t i = 0; i < nf; i++) {
		struct flow *f = &fl[i];
		f->v6 = unif() < v6frac;
		f->proto = unif() < 0.85 ? 6 : 17;
		f->sport = (uint16_t)(1024 + rnd() % 64000);
		f->dport = (uint16_t)(unif() < 0.6 ? 443 : rnd() % 65536);
		f->seq = (uint32_t)rnd();
		f->ack = (uint32_t)rnd() | 1;
		for (int k = 0; k < 16; k++) {
			f->src[k] = (uint8_t)rnd();
			f->dst[k] = (uint8_t)rnd();
		}
		sum += 1.0 / pow((double)(i + 1), zipf);
		cdf[i] = sum;
	}
	for (uint64_t i = 0; i < nf; i++)
		cdf[i] /= sum;

	for (uint64_t i = 0; i < np; i++) {
		struct pcap_pkthdr h;
		uint64_t t = (uint64_t)((double)i * duration * 1e9 / (double)np) +
			1700000000ull * 1000000000ull;
		uint32_t len;

		h.ts.tv_sec = (time_t)(t / 1000000000ull);
		h.ts.tv_usec = (suseconds_t)(nano ? t % 1000000000ull : t % 1000000000ull / 1000);
		if (unif() < nonip) {
			h.caplen = build(buf, NULL, 0, (uint32_t)snap, ether, &len);
			nn++;
		} else {
			double u = unif();
			uint64_t lo2 = 0, hi2 = nf - 1;
			while (lo2 < hi2) { /* Zipf rank by inverse CDF */
				uint64_t mid = (lo2 + hi2) / 2;
				if (cdf[mid] < u)
					lo2 = mid + 1;
				else
					hi2 = mid;
			}
			h.caplen = build(buf, &fl[lo2], wire_len(fl[lo2].v6), (uint32_t)snap, ether,
					 &len);
			if (fl[lo2].v6)
				n6++;
			else
				n4++;
			if (!(seen[lo2 / 8] & (1u << (lo2 % 8)))) {
				seen[lo2 / 8] |= (uint8_t)(1u << (lo2 % 8));
				nseen++;
			}
		}
		h.len = len;
		bytes += len;
		pcap_dump((u_char *)d, &h, buf);
		/* Fail early on a full disk: libpcap buffers through stdio. */
		if ((i & 0xffff) == 0 && ferror(pcap_dump_file(d))) {
			fprintf(stderr, "rb2-tracegen: writing %s: %s\n", out, strerror(errno));
			return 1;
		}
		if (tty && (i % (np / 100 + 1)) == 0)
			fprintf(stderr, "\rrb2-tracegen: %3.0f%%", 100.0 * (double)i / (double)np);
	}
	if (tty)
		fprintf(stderr, "\rrb2-tracegen: 100%%\n");
	/* The last buffered writes: a full disk shows here at the latest. */
	if (pcap_dump_flush(d) != 0 || ferror(pcap_dump_file(d))) {
		fprintf(stderr, "rb2-tracegen: writing %s: %s\n", out, strerror(errno));
		return 1;
	}
	pcap_dump_close(d);
	pcap_close(dead);
	printf("rb2-tracegen: %s: %" PRIu64 " packets (%" PRIu64 " IPv4, %" PRIu64 " IPv6, %" PRIu64
	       " non-IP), %" PRIu64 " flows with packets (of %" PRIu64 " drawn), %" PRIu64
	       " bytes on the wire, %s\n", out, np, n4, n6, nn, nseen, nf, bytes,
	       ether ? "Ethernet" : "raw IP");
	if (expect != NULL) {
		FILE *e = fopen(expect, "w");
		if (e == NULL) {
			fprintf(stderr, "rb2-tracegen: cannot write %s: %s\n", expect, strerror(errno));
			return 1;
		}
		json_t *doc = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
					"packets", (json_int_t)np, "bytes", (json_int_t)bytes,
					"ipv4", (json_int_t)n4, "ipv6", (json_int_t)n6,
					"nonip", (json_int_t)nn, "flows", (json_int_t)nseen,
					"flows_drawn", (json_int_t)nf);
		int bad = doc == NULL || json_dumpf(doc, e, 0) < 0 || fputc('\n', e) == EOF;

		json_decref(doc);
		if (bad | ferror(e) | fclose(e)) {
			fprintf(stderr, "rb2-tracegen: writing %s: %s\n", expect, strerror(errno));
			return 1;
		}
	}
	free(fl);
	free(seen);
	free(cdf);
	return 0;
}
