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
 * --nonip fractions. --expect FILE writes what was generated (the ground
 * truth the tests compare a reader against).
 */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pcap/pcap.h>

struct flow {
	uint8_t v6;
	uint8_t proto;
	uint16_t sport, dport;
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
"  --nonip F           fraction of packets that are not IP (default 0)\n"
"  --snaplen L         bytes kept per packet, 40..65535 (default 64; CAIDA: 40-96)\n"
"  --nano              nanosecond timestamps (default: microseconds)\n"
"  --expect FILE       write the generated totals as JSON\n"
"  -h, --help          this text\n", prog);
}

static int
num(const char *opt, const char *arg, double lo, double hi, double *out)
{
	char *end;
	double v = strtod(arg, &end);

	if (end == arg || *end != '\0' || !(v >= lo && v <= hi)) {
		fprintf(stderr, "rb2-tracegen: invalid --%s '%s': expected a number in [%g, %g]\n",
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

/* Build the captured bytes of one packet of flow @f (headers, zero payload). */
static uint32_t
build(uint8_t *b, const struct flow *f, uint32_t len, uint32_t snap)
{
	uint32_t cap = len < snap ? len : snap, ip;

	memset(b, 0, cap);
	if (!f->v6) {
		b[0] = 0x45;
		b[2] = (uint8_t)(len >> 8);
		b[3] = (uint8_t)len;
		b[8] = 64;
		b[9] = f->proto;
		memcpy(b + 12, f->src, 4);
		memcpy(b + 16, f->dst, 4);
		ip = 20;
	} else {
		b[0] = 0x60;
		b[4] = (uint8_t)((len - 40) >> 8);
		b[5] = (uint8_t)(len - 40);
		b[6] = f->proto;
		b[7] = 64;
		memcpy(b + 8, f->src, 16);
		memcpy(b + 24, f->dst, 16);
		ip = 40;
	}
	if (cap >= ip + 4) {
		b[ip] = (uint8_t)(f->sport >> 8);
		b[ip + 1] = (uint8_t)f->sport;
		b[ip + 2] = (uint8_t)(f->dport >> 8);
		b[ip + 3] = (uint8_t)f->dport;
	}
	if (f->proto == 6 && cap >= ip + 13)
		b[ip + 12] = 0x50; /* TCP data offset */
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

	uint64_t np = (uint64_t)packets, nf = (uint64_t)flows;
	struct flow *fl = calloc(nf, sizeof(*fl));
	double *cdf = malloc(nf * sizeof(*cdf)), sum = 0;
	uint8_t buf[65536];
	pcap_t *dead = pcap_open_dead_with_tstamp_precision(DLT_RAW, (int)snap,
		nano ? PCAP_TSTAMP_PRECISION_NANO : PCAP_TSTAMP_PRECISION_MICRO);
	pcap_dumper_t *d = dead ? pcap_dump_open(dead, out) : NULL;

	if (fl == NULL || cdf == NULL || d == NULL) {
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
			/* Not IP: a frame whose version nibble is neither 4 nor 6. */
			len = 60;
			memset(buf, 0, 60);
			buf[0] = 0x00;
			h.caplen = len < (uint32_t)snap ? len : (uint32_t)snap;
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
			len = wire_len(fl[lo2].v6);
			h.caplen = build(buf, &fl[lo2], len, (uint32_t)snap);
			if (fl[lo2].v6)
				n6++;
			else
				n4++;
		}
		h.len = len;
		bytes += len;
		pcap_dump((u_char *)d, &h, buf);
		if (tty && (i % (np / 100 + 1)) == 0)
			fprintf(stderr, "\rrb2-tracegen: %3.0f%%", 100.0 * (double)i / (double)np);
	}
	if (tty)
		fprintf(stderr, "\rrb2-tracegen: 100%%\n");
	pcap_dump_close(d);
	pcap_close(dead);
	printf("rb2-tracegen: %s: %" PRIu64 " packets (%" PRIu64 " IPv4, %" PRIu64 " IPv6, %" PRIu64
	       " non-IP), %" PRIu64 " flows, %" PRIu64 " bytes on the wire\n",
	       out, np, n4, n6, nn, nf, bytes);
	if (expect != NULL) {
		FILE *e = fopen(expect, "w");
		if (e == NULL) {
			fprintf(stderr, "rb2-tracegen: cannot write %s: %s\n", expect, strerror(errno));
			return 1;
		}
		fprintf(e, "{\"packets\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"ipv4\": %" PRIu64
			", \"ipv6\": %" PRIu64 ", \"nonip\": %" PRIu64 ", \"flows\": %" PRIu64 "}\n",
			np, bytes, n4, n6, nn, nf);
		fclose(e);
	}
	free(fl);
	free(cdf);
	return 0;
}
