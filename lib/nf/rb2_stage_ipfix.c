/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * The "ipfix" stage: the measurement NF's exporter. It takes the flow
 * records the measure stage ends (messages of struct rb2_flow_rec, edge
 * "records") and sends them as IPFIX (RFC 7011) over UDP to a collector
 * (nfcapd, nfacctd, ...), and/or writes them to an IPFIX file (RFC 5655).
 *
 *   collector = HOST:PORT  UDP collector: 192.0.2.1:4739, [2001:db8::1]:4739,
 *                          or a name
 *   file = PATH            IPFIX file
 *   version = 10|9         10: IPFIX (default); 9: NetFlow v9 (RFC 3954) to
 *                          the collector, for one that reads only v9 (the
 *                          same records and templates; no file: v9 has no
 *                          file format)
 *   domain = N             observation domain ID (default 1)
 *   mtu = BYTES            path MTU: messages fit one datagram (default 1500)
 *   rate = N               messages per second at most (default 10000; 0: no
 *                          limit): a collector reads a burst from a socket
 *                          buffer of a few hundred KB, and the end of a run
 *                          ends every flow at once
 *   backlog = N            messages held while the rate holds them back
 *                          (default 8192); past it, dropped and counted
 *   flush_ms = T           a message waits at most T ms for more records
 *                          (default 1000)
 *   refresh_msgs = N       templates again every N messages (default 20)
 *   refresh_s = T          ... and every T seconds (default 600)
 *   sndbuf = BYTES         the socket's send buffer (default: the kernel's)
 *
 * It sits on its own lcore or on the measure stage's; either way the measure
 * stage never waits on the socket: sends never block (MSG_DONTWAIT), and a
 * collector that is down, slow or unreachable costs dropped messages,
 * counted, with one warning, and a run that ends in failure naming them.
 * Only the records of the run's end (reason "forced") wait for the rate
 * instead of being dropped: measurement is over by then.
 */

#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_log.h>

#include <rb2_flowtab.h>
#include <rb2_ipfix.h>
#include <rb2_stage.h>

RTE_LOG_REGISTER(ipfix_logtype, rb2.nf.ipfix, INFO);
#define IPFIX_LOG(level, ...) rte_log(RTE_LOG_##level, ipfix_logtype, "ipfix: " __VA_ARGS__)

#define REC ((uint32_t)sizeof(struct rb2_flow_rec))
#define FILE_IOBUF (1u << 20)

struct held {                 /* a message the rate holds back */
	uint32_t len, records;
	uint8_t *msg;
};

struct ipfix {
	struct rb2_stage *st;
	struct rb2_ipfix_enc *enc;
	const char *collector, *path;
	char *iobuf;                 /* the file's stdio buffer */
	char where[160];             /* the collector, as resolved, for messages */
	const char *proto;           /* "IPFIX" or "NetFlow v9", for messages */
	int fd;
	FILE *file;
	uint64_t rate, backlog_max, flush_cycles, sndbuf;
	/* The rate: a token per message; at most `burst` saved, so that a
	 * quiet spell does not turn into a burst the collector's socket
	 * buffer cannot hold. */
	double tokens, burst;
	uint64_t tok_tsc;
	/* Messages held back: a ring. */
	struct held *q;
	uint64_t qhead, qlen;
	uint64_t last_records;       /* encoder's count at the last message out */
	uint64_t pending_since;      /* timer cycles when the message in progress began */
	int lossless;                /* the run's end: wait for the rate, never drop */
	int warned;
	int last_err;
	uint64_t *c_records, *c_sent, *c_dropped, *c_dropped_recs, *c_file_msgs;
	uint64_t sent_bytes;
};

static uint32_t
export_time(void)
{
	return (uint32_t)time(NULL);
}

/* "host:port", "[v6]:port". 0, or -EINVAL after rb2_stage_err(). */
static int
open_collector(struct ipfix *x, uint64_t mtu, struct rb2_ipfix_params *ip)
{
	struct addrinfo hints = { .ai_socktype = SOCK_DGRAM, .ai_flags = AI_NUMERICSERV };
	struct addrinfo *res = NULL, *ai;
	char host[128], serv[16], why[160] = "";
	const char *c = x->collector, *colon;
	size_t hl;
	int ret;

	if (c[0] == '[') {
		const char *close = strchr(c, ']');

		if (close == NULL || close[1] != ':') {
			rb2_stage_err(x->st, "collector = %s: an IPv6 address goes in brackets, as "
				      "[2001:db8::1]:4739", c);
			return -EINVAL;
		}
		hl = (size_t)(close - c - 1);
		colon = close + 1;
		c++;
	} else {
		colon = strrchr(c, ':');
		if (colon != NULL && strchr(c, ':') != colon) {
			rb2_stage_err(x->st, "collector = %s: an IPv6 address goes in brackets, as "
				      "[%s]:4739", c, c);
			return -EINVAL;
		}
		hl = colon != NULL ? (size_t)(colon - c) : 0;
	}
	if (colon == NULL || hl == 0 || hl >= sizeof(host) || strlen(colon + 1) == 0 ||
	    strlen(colon + 1) >= sizeof(serv) || strspn(colon + 1, "0123456789") !=
	    strlen(colon + 1) || atoi(colon + 1) < 1 || atoi(colon + 1) > 65535) {
		rb2_stage_err(x->st, "collector = %s: expected HOST:PORT (port 1-65535), as "
			      "127.0.0.1:4739 or [::1]:4739", x->collector);
		return -EINVAL;
	}
	memcpy(host, c, hl);
	host[hl] = '\0';
	snprintf(serv, sizeof(serv), "%s", colon + 1);
	ret = getaddrinfo(host, serv, &hints, &res);
	if (ret != 0) {
		rb2_stage_err(x->st, "collector = %s: cannot resolve %s: %s", x->collector, host,
			      gai_strerror(ret));
		return -EINVAL;
	}
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		x->fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (x->fd < 0) {
			snprintf(why, sizeof(why), "socket: %s", strerror(errno));
			continue;
		}
		/* Connected: the kernel then reports a collector that is not
		 * listening (ECONNREFUSED) to the next send. */
		if (connect(x->fd, ai->ai_addr, ai->ai_addrlen) == 0) {
			char h[NI_MAXHOST] = "?";

			getnameinfo(ai->ai_addr, ai->ai_addrlen, h, sizeof(h), NULL, 0,
				    NI_NUMERICHOST);
			snprintf(x->where, sizeof(x->where), ai->ai_family == AF_INET6 ?
				 "[%s]:%s" : "%s:%s", h, serv);
			/* Fit a datagram: the MTU less the IP and UDP headers. */
			ip->max_msg = (uint32_t)(mtu - (ai->ai_family == AF_INET6 ? 48 : 28));
			break;
		}
		snprintf(why, sizeof(why), "connect: %s", strerror(errno));
		close(x->fd);
		x->fd = -1;
	}
	freeaddrinfo(res);
	if (x->fd < 0) {
		rb2_stage_err(x->st, "collector = %s: %s", x->collector, why);
		return -EINVAL;
	}
	if (x->sndbuf != 0 && setsockopt(x->fd, SOL_SOCKET, SO_SNDBUF, &(int){ (int)x->sndbuf },
					 sizeof(int)) != 0) {
		rb2_stage_err(x->st, "sndbuf = %" PRIu64 ": %s", x->sndbuf, strerror(errno));
		return -EINVAL;
	}
	return 0;
}

static int
ipfix_init(struct rb2_stage *st, struct rb2_stage_args *a)
{
	struct ipfix *x = rb2_stage_priv(st);
	struct rb2_ipfix_params ip;
	uint64_t domain, mtu, refresh_msgs, refresh_s, flush_ms, version;

	rb2_ipfix_params_init(&ip);
	x->st = st;
	x->fd = -1;
	if (rb2_stage_arg_str(a, "collector", NULL, &x->collector) < 0 ||
	    rb2_stage_arg_str(a, "file", NULL, &x->path) < 0 ||
	    rb2_stage_arg_u64(a, "version", RB2_IPFIX_VERSION, RB2_NFV9_VERSION,
			      RB2_IPFIX_VERSION, &version) < 0 ||
	    rb2_stage_arg_u64(a, "domain", 1, 0, UINT32_MAX, &domain) < 0 ||
	    rb2_stage_arg_u64(a, "mtu", 1500, 576, 65535, &mtu) < 0 ||
	    rb2_stage_arg_u64(a, "rate", 10000, 0, 100000000, &x->rate) < 0 ||
	    rb2_stage_arg_u64(a, "backlog", 8192, 1, 1 << 24, &x->backlog_max) < 0 ||
	    rb2_stage_arg_u64(a, "flush_ms", 1000, 1, 3600000, &flush_ms) < 0 ||
	    rb2_stage_arg_u64(a, "refresh_msgs", 20, 0, UINT32_MAX, &refresh_msgs) < 0 ||
	    rb2_stage_arg_u64(a, "refresh_s", 600, 0, 86400, &refresh_s) < 0 ||
	    rb2_stage_arg_u64(a, "sndbuf", 0, 0, INT32_MAX, &x->sndbuf) < 0)
		return -EINVAL;
	if (x->collector == NULL && x->path == NULL) {
		rb2_stage_err(st, "nowhere to export to: give collector = HOST:PORT, file = PATH, "
			      "or both");
		return -EINVAL;
	}
	if (version == RB2_NFV9_VERSION && x->path != NULL) {
		rb2_stage_err(st, "version = 9 with file = %s: NetFlow v9 has no file format; "
			      "write IPFIX to the file (version = 10), or send v9 to a collector "
			      "only", x->path);
		return -EINVAL;
	}
	if (version == RB2_NFV9_VERSION && x->collector == NULL) {
		rb2_stage_err(st, "version = 9 needs collector = HOST:PORT: NetFlow v9 goes "
			      "over UDP only");
		return -EINVAL;
	}
	ip.version = (uint32_t)version;
	x->proto = version == RB2_NFV9_VERSION ? "NetFlow v9" : "IPFIX";
	ip.domain = (uint32_t)domain;
	ip.refresh_msgs = (uint32_t)refresh_msgs;
	ip.refresh_s = (uint32_t)refresh_s;
	ip.max_msg = (uint32_t)(mtu - 28);
	x->flush_cycles = flush_ms * rte_get_timer_hz() / 1000;
	if (x->collector != NULL && open_collector(x, mtu, &ip) < 0)
		return -EINVAL;
	if (x->path != NULL && (x->file = fopen(x->path, "w")) == NULL) {
		rb2_stage_err(st, "file = %s: %s", x->path, strerror(errno));
		return -errno;
	}
	/* A write() per 1 MiB, not per 4 KiB (three messages), and no lock:
	 * one lcore writes. */
	if (x->file != NULL) {
		x->iobuf = malloc(FILE_IOBUF);
		if (x->iobuf != NULL)
			setvbuf(x->file, x->iobuf, _IOFBF, FILE_IOBUF);
		__fsetlocking(x->file, FSETLOCKING_BYCALLER);
	}
	x->enc = rb2_ipfix_enc_create(&ip);
	x->q = calloc(x->backlog_max, sizeof(*x->q));
	if (x->enc == NULL || x->q == NULL) {
		rb2_stage_err(st, "out of memory");
		return -ENOMEM;
	}
	x->c_records = rb2_stage_counter(st, "records");
	x->c_sent = rb2_stage_counter(st, "messages_sent");
	x->c_dropped = rb2_stage_counter(st, "messages_dropped");
	x->c_dropped_recs = rb2_stage_counter(st, "records_dropped");
	x->c_file_msgs = rb2_stage_counter(st, "messages_written");
	x->tok_tsc = rte_get_timer_cycles();
	x->tokens = 1;
	/* 10 ms' worth, at most 32 messages (~47 KB): a socket buffer of the
	 * usual 208 KB holds it with room to spare. */
	x->burst = RTE_MAX(1.0, RTE_MIN((double)x->rate / 100, 32.0));
	return 0;
}

static void
ipfix_fini(struct rb2_stage *st)
{
	struct ipfix *x = rb2_stage_priv(st);

	for (uint64_t i = 0; x->q != NULL && i < x->qlen; i++)
		free(x->q[(x->qhead + i) % x->backlog_max].msg);
	free(x->q);
	x->q = NULL;
	rb2_ipfix_enc_free(x->enc);
	x->enc = NULL;
	if (x->fd >= 0)
		close(x->fd);
	x->fd = -1;
	if (x->file != NULL)
		fclose(x->file);
	x->file = NULL;
	free(x->iobuf);         /* after the FILE that used it */
	x->iobuf = NULL;
}

static void
dropped(struct ipfix *x, uint32_t records, int err)
{
	rb2_stage_count(x->c_dropped, 1);
	rb2_stage_count(x->c_dropped_recs, records);
	x->last_err = err;
	if (!x->warned) {
		x->warned = 1;
		IPFIX_LOG(WARNING, "'%s': messages to the collector %s are being dropped (%s); "
			  "measurement goes on, and the summary counts them\n",
			  rb2_stage_name(x->st), x->where, err ? strerror(err) : "backlog full");
	}
}

/* Send one message now: it is delivered to the socket, or counted lost. */
static void
send_now(struct ipfix *x, const uint8_t *msg, uint32_t len, uint32_t records)
{
	ssize_t n = send(x->fd, msg, len, MSG_DONTWAIT | MSG_NOSIGNAL);

	if (n == (ssize_t)len) {
		rb2_stage_count(x->c_sent, 1);
		x->sent_bytes += len;
	} else {
		dropped(x, records, n < 0 ? errno : EMSGSIZE);
	}
}

/* Take a token if one is due. */
static int
token(struct ipfix *x)
{
	uint64_t t = rte_get_timer_cycles();

	if (x->rate == 0)
		return 1;
	x->tokens += (double)(t - x->tok_tsc) * (double)x->rate / (double)rte_get_timer_hz();
	x->tok_tsc = t;
	if (x->tokens > x->burst)
		x->tokens = x->burst;
	if (x->tokens < 1)
		return 0;
	x->tokens -= 1;
	return 1;
}

/* Send what the rate allows of the held messages. @wait: all of them. */
static void
send_held(struct ipfix *x, int wait)
{
	while (x->qlen > 0) {
		struct held *h = &x->q[x->qhead];

		if (!token(x)) {
			if (!wait)
				return;
			rte_delay_us_sleep(100);
			continue;
		}
		send_now(x, h->msg, h->len, h->records);
		free(h->msg);
		h->msg = NULL;
		x->qhead = (x->qhead + 1) % x->backlog_max;
		x->qlen--;
	}
}

/* The encoder's output: a finished message. */
static void
on_msg(void *arg, const uint8_t *msg, size_t len)
{
	struct ipfix *x = arg;
	struct rb2_ipfix_enc_stats es;
	uint32_t records;

	rb2_ipfix_enc_stats(x->enc, &es);
	records = (uint32_t)(es.records - x->last_records);
	x->last_records = es.records;
	x->pending_since = 0;
	if (x->file != NULL) {
		if (fwrite(msg, 1, len, x->file) != len)
			rb2_stage_fail(x->st, "file = %s: %s", x->path, strerror(errno));
		else
			rb2_stage_count(x->c_file_msgs, 1);
	}
	if (x->fd < 0)
		return;
	if (x->qlen == 0 && token(x)) {
		send_now(x, msg, (uint32_t)len, records);
		return;
	}
	while (x->qlen == x->backlog_max) {
		if (!x->lossless) {
			dropped(x, records, 0);
			return;
		}
		send_held(x, 0);
		if (x->qlen == x->backlog_max)
			rte_delay_us_sleep(100);
	}
	{
		struct held *h = &x->q[(x->qhead + x->qlen) % x->backlog_max];

		h->msg = malloc(len);
		if (h->msg == NULL) {
			dropped(x, records, ENOMEM);
			return;
		}
		memcpy(h->msg, msg, len);
		h->len = (uint32_t)len;
		h->records = records;
		x->qlen++;
	}
}

static void
ipfix_process(struct rb2_stage *st, const struct rb2_msg *msgs, unsigned int n)
{
	struct ipfix *x = rb2_stage_priv(st);
	uint32_t now = export_time();
	uint64_t total = 0;

	for (unsigned int i = 0; i < n; i++) {
		const struct rb2_flow_rec *r = msgs[i].data;
		uint32_t nr = msgs[i].len / REC;

		if (unlikely(msgs[i].len % REC != 0)) {
			rb2_stage_fail(st, "a message of %u bytes is not whole flow records (%u bytes "
				       "each): is this stage linked to measure.records?",
				       msgs[i].len, REC);
			continue;
		}
		for (uint32_t j = 0; j < nr; j++) {
			/* The run's end ends every flow: from then on, wait for
			 * the rate rather than drop. */
			if (r[j].end_reason == RB2_FLOW_END_FORCED)
				x->lossless = 1;
			rb2_ipfix_enc_add(x->enc, &r[j], now, on_msg, x);
			/* The record is in the message in progress (a full one
			 * went out first): flush_ms counts from its first. */
			if (x->pending_since == 0)
				x->pending_since = rte_get_timer_cycles();
		}
		total += nr;
	}
	rb2_stage_count(x->c_records, total);
	send_held(x, 0);
}

/* A quiet pass: send what the rate now allows, and a message that has
 * waited flush_ms for more records. */
static void
ipfix_idle(struct rb2_stage *st)
{
	struct ipfix *x = rb2_stage_priv(st);

	send_held(x, 0);
	if (x->pending_since != 0 &&
	    rte_get_timer_cycles() - x->pending_since >= x->flush_cycles)
		rb2_ipfix_enc_flush(x->enc, export_time(), on_msg, x);
}

static int
ipfix_drain(struct rb2_stage *st)
{
	struct ipfix *x = rb2_stage_priv(st);

	x->lossless = 1;
	rb2_ipfix_enc_flush(x->enc, export_time(), on_msg, x);
	send_held(x, 1);
	return 0;
}

static void
ipfix_report(struct rb2_stage *st, FILE *out)
{
	struct ipfix *x = rb2_stage_priv(st);
	struct rb2_ipfix_enc_stats es;

	/* Stopped before the end of its input: what it holds goes now. */
	x->lossless = 1;
	rb2_ipfix_enc_flush(x->enc, export_time(), on_msg, x);
	send_held(x, 1);
	rb2_ipfix_enc_stats(x->enc, &es);
	fprintf(out, "ipfix '%s': %" PRIu64 " flow records in %" PRIu64 " %s messages (%" PRIu64
		" with templates)\n", rb2_stage_name(st), es.records, es.messages, x->proto,
		es.templates);
	if (x->fd >= 0)
		fprintf(out, "  to %s: %" PRIu64 " messages sent (%.1f KB), %" PRIu64 " dropped (%"
			PRIu64 " records)%s%s\n", x->where, *x->c_sent, (double)x->sent_bytes / 1e3,
			*x->c_dropped, *x->c_dropped_recs, x->last_err ? ": " : "",
			x->last_err ? strerror(x->last_err) : "");
	if (x->file != NULL) {
		int bad = fflush(x->file) != 0 || ferror(x->file);

		fprintf(out, "  to %s: %" PRIu64 " messages%s\n", x->path, *x->c_file_msgs,
			bad ? " (a write failed)" : "");
		if (bad)
			rb2_stage_fail(st, "file = %s: %s", x->path, strerror(errno));
	}
	if (*x->c_dropped > 0)
		rb2_stage_fail(st, "%" PRIu64 " %s messages (%" PRIu64 " flow records) did not "
			       "reach the collector %s", *x->c_dropped, x->proto,
			       *x->c_dropped_recs, x->where);
}

static const struct rb2_stage_ops ipfix_ops = {
	.api_version = RB2_STAGE_API_VERSION,
	.name = "ipfix",
	.summary = "exports measure's flow records as IPFIX (or NetFlow v9) over UDP and/or "
		   "to a file (collector, file, version, domain, mtu, rate, backlog, flush_ms, "
		   "refresh_msgs, "
		   "refresh_s, sndbuf)",
	.priv_size = sizeof(struct ipfix),
	.init = ipfix_init,
	.fini = ipfix_fini,
	.process = ipfix_process,
	.idle = ipfix_idle,
	.drain = ipfix_drain,
	.report = ipfix_report,
};

RB2_STAGE_REGISTER(ipfix_ops);
