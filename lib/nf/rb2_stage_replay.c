/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * The "replay" source stage: reads a pcap/pcapng trace as 64-byte records and
 * emits them on edge "out", at top speed or paced (tcpreplay's conventions).
 * Paced or looped, the trace is preloaded into hugepage memory before any
 * timing, so reading the file never shows in the replay's timing; else it is
 * streamed, read a window at a time while the records before it are being
 * measured, so a capture's flows come out in one pass over the file:
 *
 *   trace = FILE          the capture (required)
 *   preload = auto|yes|no yes: preload; no: stream; auto (the default):
 *                         preload when paced (pps, multiplier) or looping
 *   pps = N               N records per second
 *   multiplier = X        the capture's own timing, X times faster
 *   maxsleep_ms = T       with multiplier: wait at most T ms between two
 *                         records (tcpreplay's --maxsleep); without it, a
 *                         gap that would take over a minute is refused
 *   loop = N              replay N times (0: until stopped); each loop's
 *                         timestamps and sequence numbers continue the last
 *   batch = K             records per message (1: one message per packet,
 *                         as the paper; up to 64)
 *   progress = yes|no     a progress bar while loading or streaming
 *                         (default: on a tty)
 *   allow_truncated = yes a capture cut short is replayed up to the cut
 *                         either way; without this, the run then fails
 *   allow_non_ip = yes    a capture in which no packet decodes as IP (a
 *                         wrong link type, usually) is refused without it;
 *                         a streamed one when none of its first window does
 */

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_log.h>
#include <rte_malloc.h>

#include <rb2_stage.h>
#include <rb2_trace.h>

RTE_LOG_REGISTER(replay_logtype, rb2.nf.replay, INFO);

#define CHUNK_SHIFT 20                       /* 1 Mi records (64 MiB) per chunk */
#define CHUNK (1u << CHUNK_SHIFT)
#define BURST_MSGS 32
/* Streaming: records read from the file at a time (4 MiB, out of the way of
 * the measure lcore's cache), and what the link-type check looks at. */
#define WINDOW (1u << 16)
/* Records read and counted at a time (CHUNK and WINDOW are multiples). */
#define READ_BURST 256u

struct chunk {
	struct rb2_rec *recs;
	int huge;                               /* rte_malloc'd (else malloc) */
};

struct replay {
	struct chunk *chunks;
	unsigned int nchunks;
	uint64_t n;                             /* records */
	uint64_t idx;                           /* next record of this loop */
	uint64_t loops, loop;                   /* loop counts from 0 */
	uint64_t batch;
	double pps, mult;
	uint64_t maxsleep_ms;
	uint64_t ts_shift;                      /* trace time skipped by maxsleep */
	uint64_t hz, t0;                        /* first poll */
	uint64_t sent;                          /* records, all loops */
	uint64_t ts_first, ts_span;             /* of the trace, ns */
	uint64_t *c_records, *c_loops, *c_paced;
	struct rb2_trace_stats tst;
	char trace_err[200];
	/* Streaming: the open trace (NULL once read to its end), and the
	 * window of records [n - win_n, n) read from it, win_idx emitted. */
	struct rb2_trace *t;
	struct rb2_rec *win;
	uint32_t win_n, win_idx;
	int allow_truncated, bar;
	uint64_t size, next_bar;
	const char *path;
};

static struct rb2_rec *
rec_at(const struct replay *r, uint64_t i)
{
	return &r->chunks[i >> CHUNK_SHIFT].recs[i & (CHUNK - 1)];
}

static void
progress(const char *path, uint64_t done, uint64_t total, uint64_t recs, int final)
{
	int pct = total ? (int)(100.0 * (double)done / (double)total) : 100;
	int bars = pct / 5;

	fprintf(stderr, "\rreplay: loading %s [%.*s%*s] %3d%% %8.2f M records%s", path,
		bars, "####################", 20 - bars, "", final ? 100 : pct,
		(double)recs / 1e6, final ? "\n" : "");
}

/* The trace has been read to its end (@ret 0) or to an error (@ret < 0):
 * keep its statistics, say what cut it short, close it. */
static void
trace_done(struct rb2_stage *st, struct replay *r, struct rb2_trace *t, int ret)
{
	rb2_trace_stats_get(t, &r->tst);
	if (ret < 0) {
		/* The records so far stand, and are replayed; say what happened,
		 * and fail the run unless a cut capture is expected. */
		snprintf(r->trace_err, sizeof(r->trace_err), "%s", rb2_trace_error(t));
		rte_log(RTE_LOG_WARNING, replay_logtype, "replay: %s is truncated or corrupt %s; replaying the "
			"%" PRIu64 " records before that\n", r->path, r->trace_err, r->n);
		if (!r->allow_truncated && r->n > 0)
			rb2_stage_fail(st, "%s is cut short (%s): only the %" PRIu64 " records "
				       "before the cut were replayed (allow_truncated = yes, or rb2-nf "
				       "--allow-truncated, accepts that)", r->path, r->trace_err, r->n);
	}
	if (r->bar)
		progress(r->path, r->size, r->size, r->n, 1);
	rb2_trace_close(t);
}

/* Refuse a capture with no packet, or none that decodes as IP under its
 * link type (of its first window, when streamed and not yet read whole). */
static int
check_trace(struct rb2_stage *st, struct replay *r, int linktype, int whole, int allow_non_ip)
{
	if (r->n == 0) {
		rb2_stage_err(st, "%s holds no packet%s%s", r->path, r->trace_err[0] ? ": " : "",
			      r->trace_err);
		return -ENODATA;
	}
	if (r->tst.ipv4 + r->tst.ipv6 == 0 && !allow_non_ip) {
		/* Nothing to measure: most likely a capture whose header names
		 * the wrong link type. Say what the packets look like. */
		uint64_t looks = RTE_MAX(r->tst.looks_ethernet, r->tst.looks_raw_ip);

		rb2_stage_err(st, "none of the %s%" PRIu64 " packets of %s decodes as IP under its "
			      "link type, %s%s%s%s; rewrite its link type (editcap -T ether|rawip IN "
			      "OUT), or set allow_non_ip = yes (rb2-nf --allow-non-ip) to count them "
			      "as they are", whole ? "" : "first ", r->n, r->path,
			      rb2_trace_linktype_name(linktype),
			      looks > 0 ? ": " : "",
			      looks == 0 ? "" : r->tst.looks_ethernet >= r->tst.looks_raw_ip ?
			      "they look like Ethernet frames (an IP ethertype at byte 12)" :
			      "they look like raw IP packets (an IP header at byte 0)",
			      looks > 0 ? ", so the link type is probably wrong" : "");
		return -EINVAL;
	}
	if (r->tst.looks_ethernet + r->tst.looks_raw_ip > r->n / 2)
		rte_log(RTE_LOG_WARNING, replay_logtype, "replay: %" PRIu64 " of %s's %s%" PRIu64
			" packets do not decode as IP under its link type (%s) but look like %s: "
			"is the link type wrong?\n", r->tst.looks_ethernet + r->tst.looks_raw_ip,
			r->path, whole ? "" : "first ", r->n, rb2_trace_linktype_name(linktype),
			r->tst.looks_ethernet >= r->tst.looks_raw_ip ? "Ethernet frames" : "raw IP");
	return 0;
}

static struct rb2_trace *
trace_open(struct rb2_stage *st, struct replay *r)
{
	char err[320];
	struct rb2_trace *t = rb2_trace_open(r->path, err, sizeof(err));
	struct stat sb;

	if (t == NULL) {
		rb2_stage_err(st, "%s", err);
		return NULL;
	}
	if (stat(r->path, &sb) == 0)
		r->size = (uint64_t)sb.st_size;
	return t;
}

/* Every 64 Ki records, the bar at most ten times a second. */
static void
progress_tick(struct replay *r, struct rb2_trace *t)
{
	uint64_t now;

	if (!r->bar || (r->n & 0xffff) >= READ_BURST)
		return;
	now = rte_rdtsc();
	if (now >= r->next_bar) {
		progress(r->path, rb2_trace_offset(t), r->size, r->n, 0);
		r->next_bar = now + rte_get_tsc_hz() / 10;
	}
}

/* Read the whole trace into chunks of hugepage memory. */
static int
preload(struct rb2_stage *st, struct replay *r, int allow_non_ip)
{
	struct rb2_trace *t = trace_open(st, r);
	uint64_t t0 = rte_rdtsc();
	int warned = 0, ret, linktype;

	if (t == NULL)
		return -EINVAL;
	for (;;) {
		struct chunk *c;

		if ((r->n & (CHUNK - 1)) == 0) {
			struct chunk *cs = realloc(r->chunks, (r->nchunks + 1) * sizeof(*cs));

			if (cs == NULL)
				goto oom;
			r->chunks = cs;
			c = &cs[r->nchunks];
			c->huge = 1;
			c->recs = rte_malloc_socket("rb2_replay", (size_t)CHUNK * sizeof(*c->recs),
						    RTE_CACHE_LINE_SIZE, rb2_stage_socket(st));
			if (c->recs == NULL) {
				c->huge = 0;
				if (posix_memalign((void **)&c->recs, 64,
						   (size_t)CHUNK * sizeof(*c->recs)) != 0)
					goto oom;
				if (!warned++)
					rte_log(RTE_LOG_WARNING, replay_logtype, "replay: hugepage memory ran out after "
						"%" PRIu64 " records; the rest goes to ordinary pages "
						"(reserve more: dpdk-hugepages.py -p 2M -r 4G)\n", r->n);
			}
			r->nchunks++;
		}
		c = &r->chunks[r->nchunks - 1];
		ret = rb2_trace_next_burst(t, &c->recs[r->n & (CHUNK - 1)], READ_BURST);
		if (ret <= 0)
			break;
		r->n += (uint64_t)ret;
		progress_tick(r, t);
	}
	linktype = rb2_trace_linktype(t);
	trace_done(st, r, t, ret);
	ret = check_trace(st, r, linktype, 1, allow_non_ip);
	if (ret != 0)
		return ret;
	rte_log(RTE_LOG_INFO, replay_logtype, "replay: %s: %" PRIu64 " records (%" PRIu64 " IPv4, %" PRIu64
		" IPv6, %" PRIu64 " non-IP, %" PRIu64 " malformed) preloaded in %.2f s\n", r->path,
		r->n, r->tst.ipv4, r->tst.ipv6, r->tst.nonip, r->tst.malformed,
		(double)(rte_rdtsc() - t0) / (double)rte_get_tsc_hz());
	return 0;
oom:
	rb2_trace_close(t);
	rb2_stage_err(st, "out of memory after %" PRIu64 " records of %s", r->n, r->path);
	return -ENOMEM;
}

/* Streaming: the next window of records from the file; 0 at its end. */
static uint32_t
stream_fill(struct rb2_stage *st, struct replay *r)
{
	uint32_t n = 0;
	int ret = 1;

	if (r->t == NULL)
		return 0;
	while (n < WINDOW && (ret = rb2_trace_next_burst(r->t, &r->win[n], READ_BURST)) > 0) {
		n += (uint32_t)ret;
		r->n += (uint64_t)ret;
		progress_tick(r, r->t);
	}
	if (ret <= 0) {
		trace_done(st, r, r->t, ret);
		r->t = NULL;
	} else {
		rb2_trace_stats_get(r->t, &r->tst);
	}
	r->win_n = n;
	r->win_idx = 0;
	return n;
}

/* Open the trace and read its first window, which the checks look at. */
static int
stream_open(struct rb2_stage *st, struct replay *r, int allow_non_ip)
{
	int linktype;

	if (posix_memalign((void **)&r->win, 64, (size_t)WINDOW * sizeof(*r->win)) != 0) {
		rb2_stage_err(st, "out of memory for a window of %u records", WINDOW);
		return -ENOMEM;
	}
	r->t = trace_open(st, r);
	if (r->t == NULL)
		return -EINVAL;
	linktype = rb2_trace_linktype(r->t);
	stream_fill(st, r);
	return check_trace(st, r, linktype, r->t == NULL, allow_non_ip);
}

static void
replay_fini(struct rb2_stage *st)
{
	struct replay *r = rb2_stage_priv(st);

	for (unsigned int i = 0; i < r->nchunks; i++) {
		if (r->chunks[i].huge)
			rte_free(r->chunks[i].recs);
		else
			free(r->chunks[i].recs);
	}
	free(r->chunks);
	r->chunks = NULL;
	r->nchunks = 0;
	rb2_trace_close(r->t);
	r->t = NULL;
	free(r->win);
	r->win = NULL;
}

/*
 * Paced by the capture's timing, one corrupt timestamp (a year ahead of the
 * others) would make the replay wait that long, silently. A gap that would
 * take over a minute of real time is refused, naming the record; maxsleep_ms
 * caps each wait instead (tcpreplay's --maxsleep).
 */
#define REPLAY_MAX_WAIT_S 60

static int
check_gaps(struct rb2_stage *st, struct replay *r, const char *path)
{
	uint64_t worst = 0, at = 0;

	for (uint64_t i = 1; i < r->n; i++) {
		uint64_t a = rec_at(r, i - 1)->ts_ns, b = rec_at(r, i)->ts_ns;

		if (b > a && b - a > worst) {
			worst = b - a;
			at = i;
		}
	}
	if ((double)worst / 1e9 / r->mult <= REPLAY_MAX_WAIT_S)
		return 0;
	rb2_stage_err(st, "record %" PRIu64 " of %s comes %.0f s of capture time after the one "
		      "before: at multiplier %g the replay would wait %.0f s for it (its timestamp "
		      "looks corrupt); cap each wait with maxsleep_ms (rb2-nf --maxsleep-ms), or "
		      "pace with pps", at, path, (double)worst / 1e9, r->mult,
		      (double)worst / 1e9 / r->mult);
	return -EINVAL;
}

static int
replay_init(struct rb2_stage *st, struct rb2_stage_args *a)
{
	struct replay *r = rb2_stage_priv(st);
	const char *mode;
	int ret, allow_non_ip, stream;

	if (rb2_stage_arg_str(a, "trace", NULL, &r->path) < 0 ||
	    rb2_stage_arg_str(a, "preload", "auto", &mode) < 0 ||
	    rb2_stage_arg_double(a, "pps", 0, 0, 1e12, &r->pps) < 0 ||
	    rb2_stage_arg_double(a, "multiplier", 0, 0, 1e9, &r->mult) < 0 ||
	    rb2_stage_arg_u64(a, "maxsleep_ms", 0, 0, 86400000, &r->maxsleep_ms) < 0 ||
	    rb2_stage_arg_u64(a, "loop", 1, 0, UINT32_MAX, &r->loops) < 0 ||
	    rb2_stage_arg_u64(a, "batch", 1, 1, RB2_REC_BATCH_MAX, &r->batch) < 0 ||
	    rb2_stage_arg_bool(a, "progress", isatty(STDERR_FILENO), &r->bar) < 0 ||
	    rb2_stage_arg_bool(a, "allow_truncated", 0, &r->allow_truncated) < 0 ||
	    rb2_stage_arg_bool(a, "allow_non_ip", 0, &allow_non_ip) < 0)
		return -EINVAL;
	if (r->path == NULL) {
		rb2_stage_err(st, "no trace: set trace = FILE (rb2-nf: --trace FILE)");
		return -EINVAL;
	}
	if (r->pps > 0 && r->mult > 0) {
		rb2_stage_err(st, "pps and multiplier both set: pace by one of them");
		return -EINVAL;
	}
	if (strcmp(mode, "auto") == 0) {
		stream = r->pps == 0 && r->mult == 0 && r->loops == 1;
	} else if (strcmp(mode, "no") == 0) {
		stream = 1;
		if (r->pps > 0 || r->mult > 0 || r->loops != 1) {
			rb2_stage_err(st, "preload = no with %s: a paced or looped replay reads "
				      "the trace from memory; drop preload = no",
				      r->loops != 1 ? "loop" : r->pps > 0 ? "pps" : "multiplier");
			return -EINVAL;
		}
	} else if (strcmp(mode, "yes") == 0) {
		stream = 0;
	} else {
		rb2_stage_err(st, "preload = %s: expected auto, yes or no", mode);
		return -EINVAL;
	}
	r->c_records = rb2_stage_counter(st, "records");
	r->c_loops = rb2_stage_counter(st, "loops");
	r->c_paced = rb2_stage_counter(st, "paced_waits");
	if (stream) {
		ret = stream_open(st, r, allow_non_ip);
	} else {
		ret = preload(st, r, allow_non_ip);
		if (ret == 0 && r->mult > 0 && r->maxsleep_ms == 0)
			ret = check_gaps(st, r, r->path);
	}
	if (ret != 0) {
		replay_fini(st);
		return ret;
	}
	if (!stream) {
		r->ts_first = rec_at(r, 0)->ts_ns;
		r->ts_span = rec_at(r, r->n - 1)->ts_ns - r->ts_first;
		/* A loop starts one mean gap after the last ended. */
		r->ts_span += r->n > 1 ? r->ts_span / (r->n - 1) : 1000;
	}
	r->hz = rte_get_tsc_hz();
	return 0;
}

/* How many of the next @p want records are due now. */
static uint64_t
due(struct replay *r, uint64_t want)
{
	double el = (double)(rte_rdtsc() - r->t0) / (double)r->hz;

	if (r->pps > 0) {
		double d = el * r->pps - (double)r->sent;

		return d <= 0 ? 0 : RTE_MIN(want, (uint64_t)d + 1);
	}
	if (r->mult > 0) {
		/* Capture time reached: first + elapsed * multiplier (+ the gaps
		 * maxsleep cut short). Later loops continue the timeline. */
		uint64_t base = r->loop * r->ts_span;
		uint64_t lim = r->ts_first + r->ts_shift + (uint64_t)(el * r->mult * 1e9);
		uint64_t k = 0;

		while (k < want && rec_at(r, r->idx + k)->ts_ns + base <= lim)
			k++;
		if (k == 0 && r->maxsleep_ms > 0) {
			/* Never wait longer than maxsleep for the next record:
			 * move the clock past the rest of the gap. */
			uint64_t next = rec_at(r, r->idx)->ts_ns + base;
			uint64_t cap = (uint64_t)((double)r->maxsleep_ms * 1e6 * r->mult);

			if (next > lim + cap)
				r->ts_shift += next - (lim + cap);
		}
		return k;
	}
	return want;
}

/* Emit up to @p want records from @p src (contiguous), in messages of
 * batch records (the last one shorter); @return the messages emitted. */
static int
emit_from(struct rb2_stage *st, struct replay *r, const struct rb2_rec *src, uint64_t want)
{
	uint32_t rsz = sizeof(struct rb2_rec);
	uint64_t take, per;
	uint32_t len;
	size_t stride;
	void *first;
	int k;

	if (want >= r->batch) {
		len = (uint32_t)(r->batch * rsz);
		take = want / r->batch;
	} else {
		len = (uint32_t)(want * rsz);   /* the last, short message */
		take = 1;
	}
	per = len / rsz;
	k = rb2_stage_emit_reserve(st, 0, len, (unsigned int)take, &first, &stride);
	if (k < 0)
		return k;
	for (int i = 0; i < k; i++) {
		struct rb2_rec *dst = (struct rb2_rec *)((uint8_t *)first + (size_t)i * stride);

		memcpy(dst, src + (uint64_t)i * per, len);
		if (r->loop > 0)
			for (uint32_t j = 0; j < per; j++) {
				dst[j].ts_ns += r->loop * r->ts_span;
				dst[j].seq += (uint32_t)(r->loop * r->n);
			}
	}
	rb2_stage_emit_commit(st, 0, len, (unsigned int)k);
	r->sent += (uint64_t)k * per;
	rb2_stage_count(r->c_records, (uint64_t)k * per);
	return k;
}

/* Streaming: the window's next burst; the next window once it is all out. */
static int
stream_poll(struct rb2_stage *st, struct replay *r)
{
	uint64_t before = r->sent;
	int k;

	if (r->win_idx == r->win_n && stream_fill(st, r) == 0)
		return -ENODATA;
	k = emit_from(st, r, &r->win[r->win_idx],
		      RTE_MIN((uint64_t)(r->win_n - r->win_idx), (uint64_t)BURST_MSGS * r->batch));
	if (k > 0)
		r->win_idx += (uint32_t)(r->sent - before);
	return k;
}

static int
replay_poll(struct rb2_stage *st)
{
	struct replay *r = rb2_stage_priv(st);
	uint64_t want, left, chunk_left, before;
	int k;

	if (r->win != NULL)
		return stream_poll(st, r);
	if (r->idx == r->n) {
		if (r->loops != 0 && r->loop + 1 >= r->loops)
			return -ENODATA;
		r->loop++;
		r->idx = 0;
		rb2_stage_count(r->c_loops, 1);
	}
	if (r->t0 == 0)
		r->t0 = rte_rdtsc();
	/* A burst of messages never crosses a chunk (so it is one copy). */
	left = r->n - r->idx;
	chunk_left = CHUNK - (r->idx & (CHUNK - 1));
	want = RTE_MIN(RTE_MIN(left, chunk_left), (uint64_t)BURST_MSGS * r->batch);
	if (r->pps > 0 || r->mult > 0) {
		want = due(r, want);
		if (want == 0) {
			rb2_stage_count(r->c_paced, 1);
			return 0;
		}
	}
	before = r->sent;
	k = emit_from(st, r, rec_at(r, r->idx), want);
	r->idx += r->sent - before;
	return k;
}

static void
replay_report(struct rb2_stage *st, FILE *out)
{
	struct replay *r = rb2_stage_priv(st);

	uint64_t planned = r->n * (r->loops ? r->loops : r->loop + 1);

	fprintf(out, "replay '%s': %" PRIu64 " records sent (%" PRIu64 " in the trace x %" PRIu64
		" loop(s)%s)", rb2_stage_name(st), r->sent, r->n, r->loop + 1,
		r->loops == 0 ? ", looping until stopped" : "");
	if (r->win != NULL && (r->t != NULL || r->win_idx < r->win_n))
		fprintf(out, "; stopped early: the trace was streamed, and not to its end "
			"(%" PRIu64 " records read)", r->n);
	else if (r->loops != 0 && r->sent < planned)
		fprintf(out, "; stopped early: %" PRIu64 " of the %" PRIu64 " records to send were "
			"not sent", planned - r->sent, planned);
	fprintf(out, "%s%s\n", r->trace_err[0] ? "; trace cut short " : "", r->trace_err);
	fprintf(out, "  trace: %" PRIu64 " IPv4, %" PRIu64 " IPv6, %" PRIu64 " non-IP, %" PRIu64
		" malformed; %" PRIu64 " non-first fragments, %" PRIu64 " without ports (snaplen)\n",
		r->tst.ipv4, r->tst.ipv6, r->tst.nonip, r->tst.malformed, r->tst.fragments,
		r->tst.truncated);
	if (r->tst.nonip > 0) {
		char why[256];

		rb2_trace_nonip_format(&r->tst, why, sizeof(why));
		fprintf(out, "  non-IP by kind: %s\n", why);
	}
}

static const char *const replay_edges[] = { "out", NULL };

static const struct rb2_stage_ops replay_ops = {
	.api_version = RB2_STAGE_API_VERSION,
	.name = "replay",
	.summary = "replays a pcap/pcapng trace as 64-byte records (trace, pps, multiplier, "
		   "loop, batch)",
	.edges = replay_edges,
	.priv_size = sizeof(struct replay),
	.init = replay_init,
	.fini = replay_fini,
	.poll = replay_poll,
	.report = replay_report,
};

RB2_STAGE_REGISTER(replay_ops);
