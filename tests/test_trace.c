/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* lib/trace: the frame parser on hand-built packets of every link type, and
 * the reader against rb2-tracegen's own ground truth, plus truncated, empty
 * and nanosecond files. RB2_TRACEGEN is the generator's path (set by meson). */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <criterion/criterion.h>

#include <rb2_trace.h>

static const uint8_t ipv4_tcp[] = {
	0x45, 0, 0, 40, 0, 0, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
	0x30, 0x39, 0x01, 0xbb, /* ports 12345 -> 443 */
	0, 0, 0, 0, 0, 0, 0, 0, 0x50, 0, 0, 0, 0, 0, 0, 0,
};

static void
expect_v4(const struct rb2_rec *r, uint16_t flags)
{
	cr_expect_eq(r->kind, RB2_REC_IPV4);
	cr_expect_eq(r->proto, 6);
	cr_expect_eq(ntohl(r->src), 0x0a000001);
	cr_expect_eq(ntohl(r->dst), 0x0a000002);
	cr_expect_eq(r->flags, flags);
	if (!flags) {
		cr_expect_eq(r->sport, 12345);
		cr_expect_eq(r->dport, 443);
	}
}

Test(rb2_trace, raw_ipv4_tcp_key)
{
	struct rb2_rec r;

	cr_assert_eq(rb2_trace_parse(101, ipv4_tcp, sizeof(ipv4_tcp), 1500, &r), 0);
	expect_v4(&r, 0);
	cr_expect_eq(r.wire_len, 1500);
	cr_expect_eq(r.ip_len, 40, "the header's total length, not the frame's");
	for (unsigned int i = 4; i < 16; i++)
		cr_expect_eq(r.src6[i] | r.dst6[i], 0, "IPv4 leaves address byte %u zero", i);
	cr_expect_eq(r.tcp_flags, 0);
}

Test(rb2_trace, tcp_flags_unless_cut_before_them)
{
	uint8_t p[sizeof(ipv4_tcp)];
	struct rb2_rec r;

	memcpy(p, ipv4_tcp, sizeof(p));
	p[20 + 13] = 0x11;   /* FIN + ACK */
	rb2_trace_parse(101, p, sizeof(p), 40, &r);
	cr_expect_eq(r.tcp_flags, 0x11);
	rb2_trace_parse(101, p, 20 + 13, 40, &r);  /* ports, but no flags */
	cr_expect_eq(r.tcp_flags, 0);
	cr_expect_eq(r.sport, 12345);
	p[9] = 17;           /* UDP: byte 13 is payload */
	rb2_trace_parse(101, p, sizeof(p), 40, &r);
	cr_expect_eq(r.tcp_flags, 0);
}

Test(rb2_trace, ethernet_with_stacked_vlan_tags)
{
	uint8_t f[14 + 8 + sizeof(ipv4_tcp)] = {0};
	struct rb2_rec r;

	f[12] = 0x88; f[13] = 0xa8; /* 802.1ad */
	f[16] = 0x81; f[17] = 0x00; /* 802.1Q */
	f[20] = 0x08; f[21] = 0x00;
	memcpy(f + 22, ipv4_tcp, sizeof(ipv4_tcp));
	cr_assert_eq(rb2_trace_parse(1, f, sizeof(f), sizeof(f), &r), 0);
	expect_v4(&r, 0);
	f[20] = 0x08; f[21] = 0x06; /* ARP */
	rb2_trace_parse(1, f, sizeof(f), sizeof(f), &r);
	cr_expect_eq(r.kind, RB2_REC_NONIP);
	rb2_trace_parse(1, f, 18, 60, &r); /* tags cut short */
	cr_expect_eq(r.kind, RB2_REC_MALFORMED);
}

Test(rb2_trace, linux_sll_and_null_loop)
{
	uint8_t sll[16 + sizeof(ipv4_tcp)] = {0}, nul[4 + sizeof(ipv4_tcp)];
	struct rb2_rec r;

	sll[14] = 0x08;
	memcpy(sll + 16, ipv4_tcp, sizeof(ipv4_tcp));
	rb2_trace_parse(113, sll, sizeof(sll), sizeof(sll), &r);
	expect_v4(&r, 0);
	/* NULL in the writer's (little-endian) order, LOOP in network order. */
	memcpy(nul + 4, ipv4_tcp, sizeof(ipv4_tcp));
	nul[0] = 2; nul[1] = nul[2] = nul[3] = 0;
	rb2_trace_parse(0, nul, sizeof(nul), sizeof(nul), &r);
	expect_v4(&r, 0);
	nul[0] = nul[1] = nul[2] = 0; nul[3] = 2;
	rb2_trace_parse(108, nul, sizeof(nul), sizeof(nul), &r);
	expect_v4(&r, 0);
}

/* Point-to-point links (DLT_PPP, PPP_SERIAL): with and without the HDLC
 * address and control bytes, a compressed protocol field, MPLS over PPP (as
 * on the PPP links of tcpdump's lspping captures), and LCP named. */
Test(rb2_trace, ppp_links_ip_mpls_and_control)
{
	uint8_t f[4 + 4 + sizeof(ipv4_tcp)];
	struct rb2_rec r;

	f[0] = 0xff; f[1] = 0x03; f[2] = 0x00; f[3] = 0x21;   /* IPv4 */
	memcpy(f + 4, ipv4_tcp, sizeof(ipv4_tcp));
	cr_assert_eq(rb2_trace_parse(9, f, 4 + sizeof(ipv4_tcp), 4 + sizeof(ipv4_tcp), &r), 0);
	expect_v4(&r, 0);
	cr_assert_eq(rb2_trace_parse(50, f, 4 + sizeof(ipv4_tcp), 4 + sizeof(ipv4_tcp), &r), 0);
	expect_v4(&r, 0);
	f[2] = 0x21;                                           /* compressed, no HDLC bytes */
	memmove(f + 3, f + 4, sizeof(ipv4_tcp));
	rb2_trace_parse(9, f + 2, 1 + sizeof(ipv4_tcp), 1 + sizeof(ipv4_tcp), &r);
	expect_v4(&r, 0);
	/* MPLS unicast, one label (bottom of stack), then IPv4. */
	f[0] = 0xff; f[1] = 0x03; f[2] = 0x02; f[3] = 0x81;
	f[4] = 0x00; f[5] = 0x01; f[6] = 0x01; f[7] = 0x40;   /* label 16, S=1, TTL 64 */
	memcpy(f + 8, ipv4_tcp, sizeof(ipv4_tcp));
	rb2_trace_parse(9, f, sizeof(f), sizeof(f), &r);
	expect_v4(&r, 0);
	f[2] = 0xc0; f[3] = 0x21;                              /* LCP */
	rb2_trace_parse(9, f, sizeof(f), sizeof(f), &r);
	cr_expect_eq(r.kind, RB2_REC_NONIP);
	cr_expect_str_eq(rb2_rec_nonip_name(RB2_REC_WHY(&r)), "ppp_control");
	rb2_trace_parse(9, f, 3, 3, &r);                       /* protocol cut short */
	cr_expect_eq(r.kind, RB2_REC_MALFORMED);
}

Test(rb2_trace, ipv6_extension_headers_whole_addresses_and_ports)
{
	uint8_t p[40 + 8 + 8] = {0}, q[sizeof(p)];
	struct rb2_rec a, b;

	p[0] = 0x60;
	p[6] = 0;    /* hop-by-hop first */
	p[8] = 0x20; /* src 2000:: */
	p[24] = 0x20; p[39] = 1;
	p[40] = 17;  /* then UDP */
	p[48] = 0x04; p[49] = 0xd2; p[50] = 0x00; p[51] = 0x35; /* 1234 -> 53 */
	rb2_trace_parse(101, p, sizeof(p), 200, &a);
	cr_expect_eq(a.kind, RB2_REC_IPV6);
	cr_expect_eq(a.proto, 17);
	cr_expect_eq(a.flags, 0);
	cr_expect_eq(memcmp(a.src6, p + 8, 16), 0);
	cr_expect_eq(memcmp(a.dst6, p + 24, 16), 0);
	cr_expect_eq(a.sport, 1234);
	cr_expect_eq(a.dport, 53);
	memcpy(q, p, sizeof(p));
	q[51] = 0x36; /* another port: another flow */
	rb2_trace_parse(101, q, sizeof(q), 200, &b);
	cr_expect_eq(b.dport, 54);
	rb2_trace_parse(101, p, 44, 200, &b); /* cut inside the extension */
	cr_expect_eq(b.kind, RB2_REC_IPV6);
	cr_expect_eq(b.flags, RB2_REC_F_TRUNC);
}

Test(rb2_trace, fragments_truncation_and_malformed_are_flagged)
{
	uint8_t p[sizeof(ipv4_tcp)];
	struct rb2_rec r;

	memcpy(p, ipv4_tcp, sizeof(p));
	p[6] = 0x00; p[7] = 0x10; /* fragment offset 16: no ports */
	rb2_trace_parse(101, p, sizeof(p), 1500, &r);
	expect_v4(&r, RB2_REC_F_FRAG);
	rb2_trace_parse(101, ipv4_tcp, 22, 1500, &r); /* snapped inside the ports */
	expect_v4(&r, RB2_REC_F_TRUNC);
	memcpy(p, ipv4_tcp, sizeof(p));
	p[0] = 0x43; /* IHL 3 words */
	rb2_trace_parse(101, p, sizeof(p), 1500, &r);
	cr_expect_eq(r.kind, RB2_REC_MALFORMED);
	rb2_trace_parse(101, ipv4_tcp, 10, 1500, &r);
	cr_expect_eq(r.kind, RB2_REC_MALFORMED);
	cr_expect_eq(rb2_trace_parse(147, ipv4_tcp, 10, 10, &r), -ENOTSUP);
}

/* The per-packet path counts a message's records at once, in registers:
 * it must give what counting each one does, on every kind, flag and run of
 * non-IP kinds. */
Test(rb2_trace, counting_a_burst_equals_counting_each_record)
{
	enum { N = 257 };
	struct rb2_rec recs[N];
	struct rb2_trace_stats one = {0}, burst = {0};
	uint64_t x = 88172645463325252ull;
	unsigned int i, k, step;

	for (i = 0; i < N; i++) {
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		memset(&recs[i], 0, sizeof(recs[i]));
		recs[i].kind = (uint8_t)(x % 5);          /* 0 (never made) .. 4 */
		recs[i].wire_len = (uint32_t)(x >> 20) % 9000;
		recs[i].flags = (uint16_t)((x >> 40) & (RB2_REC_F_FRAG | RB2_REC_F_TRUNC));
		if (recs[i].kind == RB2_REC_NONIP)  /* runs: the kind changes every 4th */
			recs[i].flags |= (uint16_t)(((i / 4) % RB2_NONIP_KINDS) << RB2_REC_WHY_SHIFT);
		rb2_trace_count(&one, &recs[i]);
	}
	/* In uneven pieces, as messages of different sizes come. */
	for (i = 0, step = 1; i < N; i += k, step = step % 37 + 5) {
		k = step < N - i ? step : N - i;
		rb2_trace_count_burst(&burst, &recs[i], k);
	}
	cr_expect_eq(memcmp(&one, &burst, sizeof(one)), 0);
	cr_expect_eq(burst.packets, N);
	cr_expect_eq(burst.ipv4 + burst.ipv6 + burst.nonip + burst.malformed, burst.packets);
	cr_expect_gt(burst.nonip, 0);
	cr_expect_gt(burst.fragments, 0);
}

/* ---- files ----------------------------------------------------------------- */

static void
gen(const char *out, const char *expect, const char *extra)
{
	const char *tg = getenv("RB2_TRACEGEN");
	char cmd[1024];

	cr_assert_not_null(tg, "RB2_TRACEGEN is not set");
	snprintf(cmd, sizeof(cmd), "%s -o %s --expect %s %s > /dev/null", tg, out, expect, extra);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
}

static uint64_t
jnum(const char *json, const char *key)
{
	char k[64];
	const char *p;

	snprintf(k, sizeof(k), "\"%s\": ", key);
	p = strstr(json, k);
	cr_assert_not_null(p, "%s missing", key);
	return strtoull(p + strlen(k), NULL, 10);
}

Test(rb2_trace, reader_matches_the_generators_ground_truth)
{
	char pcap[] = "/tmp/rb2tXXXXXX", json[512], exp[64], err[256];
	struct rb2_trace_stats st;
	struct rb2_rec r;
	uint64_t seq = 0, last_ts = 0, n = 0;
	struct rb2_trace *t;
	FILE *f;

	close(mkstemp(pcap));
	snprintf(exp, sizeof(exp), "%s.json", pcap);
	gen(pcap, exp, "--packets 300000 --flows 20000 --ipv6 0.2 --nonip 0.02 --snaplen 40 --seed 3");
	f = fopen(exp, "r");
	cr_assert_not_null(f);
	json[fread(json, 1, sizeof(json) - 1, f)] = '\0';
	fclose(f);
	t = rb2_trace_open(pcap, err, sizeof(err));
	cr_assert_not_null(t, "%s", err);
	while (rb2_trace_next(t, &r) == 1) {
		cr_assert_eq(r.seq, seq++);
		cr_assert_geq(r.ts_ns, last_ts, "timestamps in order");
		last_ts = r.ts_ns;
		n++;
	}
	rb2_trace_stats_get(t, &st);
	cr_expect_eq(n, jnum(json, "packets"));
	cr_expect_eq(st.packets, jnum(json, "packets"));
	cr_expect_eq(st.bytes, jnum(json, "bytes"));
	cr_expect_eq(st.ipv4, jnum(json, "ipv4"));
	cr_expect_eq(st.ipv6, jnum(json, "ipv6"));
	cr_expect_eq(st.nonip, jnum(json, "nonip"));
	cr_expect_eq(st.malformed, 0);
	/* A 40-byte snap keeps IPv4 ports (20 + 4) but cuts IPv6 (40 + 4). */
	cr_expect_eq(st.truncated, st.ipv6);
	rb2_trace_close(t);
	unlink(pcap);
	unlink(exp);
}

/* Every record of @p t, in bursts of @p burst; *n is their count. */
static struct rb2_rec *
read_all(struct rb2_trace *t, unsigned int burst, uint64_t *n, int *end)
{
	uint64_t cap = 1024;
	struct rb2_rec *v = malloc(cap * sizeof(*v));
	int k;

	*n = 0;
	while ((k = rb2_trace_next_burst(t, &v[*n], (unsigned int)(cap - *n < burst ? cap - *n :
								    burst))) > 0)
		if ((*n += (uint64_t)k) == cap) {
			cap *= 2;
			v = realloc(v, cap * sizeof(*v));
			cr_assert_not_null(v);
		}
	*end = k;
	return v;
}

/* Read @p path (a command's output when @p pipe_cmd) with rb2's reader, in
 * bursts of @p burst, and expect @p want's records and end. */
static void
expect_records(const char *path, const char *pipe_cmd, unsigned int burst,
	       const struct rb2_rec *want, uint64_t nwant, int want_end)
{
	char err[256];
	struct rb2_trace *t;
	struct rb2_rec *got;
	uint64_t n;
	int end;

	if (pipe_cmd != NULL) {
		FILE *f = popen(pipe_cmd, "r");

		cr_assert_not_null(f);
		t = rb2_trace_open_file(f, pipe_cmd, err, sizeof(err));
	} else {
		t = rb2_trace_open(path, err, sizeof(err));
	}
	cr_assert_not_null(t, "%s", err);
	got = read_all(t, burst, &n, &end);
	cr_expect_eq(n, nwant, "%s: %" PRIu64 " records, libpcap %" PRIu64,
		     pipe_cmd ? pipe_cmd : path, n, nwant);
	cr_expect_eq(end, want_end, "%s: the end", pipe_cmd ? pipe_cmd : path);
	cr_expect(n == nwant && memcmp(got, want, n * sizeof(*got)) == 0,
		  "%s: the records of rb2's reader differ from libpcap's", pipe_cmd ? pipe_cmd : path);
	rb2_trace_close(t);
	free(got);
}

Test(rb2_trace, own_reader_gives_libpcaps_records_from_files_and_pipes)
{
	const char *const extra[] = {
		"--packets 50000 --flows 3000 --ipv6 0.2 --nonip 0.05 --snaplen 96 --seed 5",
		"--packets 20000 --flows 500 --ipv6 0.3 --snaplen 1600 --nano --seed 6",
	};

	for (unsigned int e = 0; e < 2; e++) {
		char pcap[] = "/tmp/rb2tXXXXXX", exp[64], err[256], cmd[256], cut[80];
		struct rb2_trace *t;
		struct rb2_rec *want;
		uint64_t n;
		int end;
		FILE *f;

		close(mkstemp(pcap));
		snprintf(exp, sizeof(exp), "%s.json", pcap);
		gen(pcap, exp, extra[e]);
		t = rb2_trace_open_libpcap(pcap, err, sizeof(err));
		cr_assert_not_null(t, "%s", err);
		want = read_all(t, 1, &n, &end);
		rb2_trace_close(t);
		cr_assert_eq(end, 0);
		expect_records(pcap, NULL, 1, want, n, 0);
		expect_records(pcap, NULL, 256, want, n, 0);
		snprintf(cmd, sizeof(cmd), "cat %s", pcap);
		expect_records(NULL, cmd, 100, want, n, 0);
		/* pcapng, from a pipe: libpcap reads it, after the bytes the
		 * format check took are handed back. */
		snprintf(cmd, sizeof(cmd), "editcap -F pcapng %s - 2>/dev/null", pcap);
		if (system("command -v editcap > /dev/null") == 0)
			expect_records(NULL, cmd, 64, want, n, 0);
		else
			cr_log_warn("no editcap (wireshark-common): pcapng from a pipe not checked");
		/* Cut inside a record: the records before it, then the error. */
		f = fopen(pcap, "r+");
		cr_assert_not_null(f);
		fseek(f, 0, SEEK_END);
		cr_assert_eq(ftruncate(fileno(f), ftell(f) - 10), 0);
		fclose(f);
		expect_records(pcap, NULL, 256, want, n - 1, -EBADMSG);
		snprintf(cut, sizeof(cut), "after %" PRIu64 " packets", n - 1);
		t = rb2_trace_open(pcap, err, sizeof(err));
		free(read_all(t, 256, &n, &end));
		cr_expect(strstr(rb2_trace_error(t), cut) != NULL, "%s", rb2_trace_error(t));
		rb2_trace_close(t);
		free(want);
		unlink(pcap);
		unlink(exp);
	}
}

Test(rb2_trace, nanosecond_timestamps_are_kept)
{
	char pcap[] = "/tmp/rb2tXXXXXX", exp[64], err[256];
	struct rb2_trace *t;
	struct rb2_rec r;
	int sub_us = 0;

	close(mkstemp(pcap));
	snprintf(exp, sizeof(exp), "%s.json", pcap);
	gen(pcap, exp, "--packets 1000 --duration 0.0001 --nano");
	t = rb2_trace_open(pcap, err, sizeof(err));
	cr_assert_not_null(t, "%s", err);
	while (rb2_trace_next(t, &r) == 1)
		sub_us |= r.ts_ns % 1000 != 0;
	cr_expect(sub_us, "100 ns apart: the nanoseconds survive");
	rb2_trace_close(t);
	unlink(pcap);
	unlink(exp);
}

Test(rb2_trace, truncated_corrupt_and_empty_files_give_clear_errors)
{
	char pcap[] = "/tmp/rb2tXXXXXX", exp[64], err[256];
	struct rb2_trace *t;
	struct rb2_rec r;
	uint64_t n = 0;
	long size;
	int ret;
	FILE *f;

	close(mkstemp(pcap));
	snprintf(exp, sizeof(exp), "%s.json", pcap);
	gen(pcap, exp, "--packets 1000");
	f = fopen(pcap, "r+");
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	cr_assert_eq(ftruncate(fileno(f), size - 10), 0); /* cut the last record */
	fclose(f);
	t = rb2_trace_open(pcap, err, sizeof(err));
	cr_assert_not_null(t, "%s", err);
	while ((ret = rb2_trace_next(t, &r)) == 1)
		n++;
	cr_expect_eq(ret, -EBADMSG, "a cut record is an error, not an end");
	cr_expect_eq(n, 999);
	cr_expect(strstr(rb2_trace_error(t), "999") != NULL, "%s", rb2_trace_error(t));
	rb2_trace_close(t);

	f = fopen(pcap, "w"); /* empty */
	fclose(f);
	cr_expect_null(rb2_trace_open(pcap, err, sizeof(err)));
	cr_expect(strstr(err, pcap) != NULL, "%s", err);
	f = fopen(pcap, "w");
	fputs("this is not a capture file at all, not even close\n", f);
	fclose(f);
	cr_expect_null(rb2_trace_open(pcap, err, sizeof(err)));
	cr_expect(strstr(err, "pcap") != NULL, "%s", err);
	cr_expect_null(rb2_trace_open("/nonexistent/x.pcap", err, sizeof(err)));
	unlink(pcap);
	unlink(exp);
}
