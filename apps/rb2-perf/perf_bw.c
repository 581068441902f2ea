/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Streaming throughput: one sender lcore, one receiver lcore, RB² next to
 * DPDK's rte_ring (element copy API and zero-copy API) for the same message
 * size and burst. Rounds of the variants are interleaved (A B C A B C ...)
 * and medians reported: on a machine whose vCPUs wander between near and far
 * host cores only ratios measured side by side mean anything.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_pause.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>
#include <rte_ring_peek_zc.h>

#include <rb2_lcore.h>

#include "perf.h"
#include <rb2_l5.h>
#include "../common/bench.h"

/* What the two lcores of one round share. Each side's writes sit in a cache
 * line of their own, away from the sender's stack, so that the receiver's
 * polling of @total never steals a line the sender is writing. */
struct round_ctl {
	struct perf_variant *v;
	const struct perf_opts *o;
	_Atomic int go;             /* start */
	_Atomic uint64_t total;     /* messages that will be sent */
	uint64_t count;             /* --pairs senders: this round's count, */
	double duration;            /* or its duration */
	/* Written by the receiver. */
	_Atomic int rx_ready __rte_cache_aligned; /* waiting at the start line */
	uint64_t t_start, t_end;    /* receiver's TSC at go and at the last message */
	uint64_t got, errors;
	int fail;                   /* a channel error (negative errno) */
	int tx_fail;                /* the sender's (L5: a failed WRITE or READ) */
	uint8_t *bounce_tx, *bounce_rx; /* --bounce: one message each */
} __rte_cache_aligned;

static struct round_ctl round_ctl;

static uint32_t
ring_esize(uint32_t size)
{
	return RTE_ALIGN_CEIL(size, 4); /* rte_ring elements are 4-byte multiples */
}

/* ---- receivers (worker lcore) -------------------------------------------- */

static void
recv_rb2(struct round_ctl *c)
{
	const uint32_t size = c->o->size;
	unsigned int burst = c->o->burst;
	struct rb2_rx *rx = c->v->rx;
	struct rb2_msg m[256];
	uint64_t got = 0, total = atomic_load(&c->total), errors = 0;

	while (got < total) {
		int n = rb2_rx_peek_burst(rx, m, burst);

		if (unlikely(n <= 0)) {
			if (n < 0) {
				c->fail = n;
				break;
			}
			total = atomic_load_explicit(&c->total, memory_order_acquire);
			continue;
		}
		for (int i = 0; i < n; i++) {
			const void *data = m[i].data;

			/* M6, or a design that copies out: copy first. */
			if (unlikely(c->o->bounce || c->v->copies.out)) {
				rb2_msg_copy(c->bounce_rx, data, RTE_MIN(m[i].len, size));
				data = c->bounce_rx;
			}
			errors += m[i].len != size || !perf_check(data, size, got + (uint64_t)i);
			if (unlikely(c->v->copies.zero))   /* L5 clears what it read */
				memset(m[i].data, 0, m[i].len);
		}
		rb2_rx_release_burst(rx, m, (unsigned int)n);
		got += (uint64_t)n;
	}
	c->got = got;
	c->errors = errors;
}

/* L5's receive(): copy out and clear (rb2_l5.c), one message at a time. */
static void
recv_l5(struct round_ctl *c)
{
	const uint32_t size = c->o->size;
	uint64_t got = 0, total = atomic_load(&c->total), errors = 0;

	while (got < total) {
		int n = rb2_l5_recv(c->v->l5, c->bounce_rx, size);

		if (unlikely(n < 0)) {
			if (n != -EAGAIN) {
				c->fail = n;
				break;
			}
			total = atomic_load_explicit(&c->total, memory_order_acquire);
			continue;
		}
		errors += (uint32_t)n != size || !perf_check(c->bounce_rx, size, got);
		got++;
	}
	c->got = got;
	c->errors = errors;
}

static void
recv_ring_elem(struct round_ctl *c)
{
	const uint32_t size = c->o->size, esize = ring_esize(size);
	unsigned int burst = c->o->burst;
	struct rte_ring *r = c->v->ring;
	uint8_t *buf = rte_malloc(NULL, (size_t)burst * esize, RTE_CACHE_LINE_SIZE);
	uint64_t got = 0, total = atomic_load(&c->total), errors = 0;

	while (buf != NULL && got < total) {
		unsigned int n = rte_ring_sc_dequeue_burst_elem(r, buf, esize, burst, NULL);

		if (unlikely(n == 0)) {
			total = atomic_load_explicit(&c->total, memory_order_acquire);
			continue;
		}
		for (unsigned int i = 0; i < n; i++)
			errors += !perf_check(buf + (size_t)i * esize, size, got + i);
		got += n;
	}
	rte_free(buf);
	c->got = got;
	c->errors = errors;
}

static void
recv_ring_zc(struct round_ctl *c)
{
	const uint32_t size = c->o->size, esize = ring_esize(size);
	unsigned int burst = c->o->burst;
	struct rte_ring *r = c->v->ring;
	uint64_t got = 0, total = atomic_load(&c->total), errors = 0;
	struct rte_ring_zc_data zcd;

	while (got < total) {
		unsigned int n = rte_ring_dequeue_zc_burst_elem_start(r, esize, burst,
								      &zcd, NULL);
		if (unlikely(n == 0)) {
			total = atomic_load_explicit(&c->total, memory_order_acquire);
			continue;
		}
		for (unsigned int i = 0; i < zcd.n1; i++)
			errors += !perf_check((uint8_t *)zcd.ptr1 + (size_t)i * esize,
					      size, got + i);
		for (unsigned int i = zcd.n1; i < n; i++)
			errors += !perf_check((uint8_t *)zcd.ptr2 +
					      (size_t)(i - zcd.n1) * esize, size, got + i);
		rte_ring_dequeue_zc_elem_finish(r, n);
		got += n;
	}
	c->got = got;
	c->errors = errors;
}

static int
receiver_main(void *arg)
{
	struct round_ctl *c = arg;

	atomic_store_explicit(&c->rx_ready, 1, memory_order_release);
	while (!atomic_load_explicit(&c->go, memory_order_acquire))
		rte_pause();
	c->t_start = rte_rdtsc();
	switch (c->v->kind) {
	case VAR_RB2: recv_rb2(c); break;
	case VAR_L5: recv_l5(c); break;
	case VAR_RING_ELEM: recv_ring_elem(c); break;
	default: recv_ring_zc(c); break;
	}
	c->t_end = rte_rdtsc();
	return 0;
}

/* ---- senders (main lcore) ------------------------------------------------ */

/* A sender stops at @count, or at @deadline (TSC, 0: none), checked every
 * 1024 messages. Returns the number sent. */
#define PAST(deadline, seq) \
	((deadline) != 0 && ((seq) & 1023) == 0 && rte_rdtsc() > (deadline))

static uint64_t
send_rb2(struct round_ctl *c, uint64_t count, uint64_t deadline)
{
	const uint32_t size = c->o->size;
	struct rb2_tx *tx = c->v->tx;
	uint64_t seq = 0;

	const size_t stride = rb2_tx_stride(tx, size);
	const unsigned int burst = c->o->burst;
	uint8_t *bounce = c->o->bounce || c->v->copies.in ? c->bounce_tx : NULL;

	while (seq < count) {
		unsigned int k = (unsigned int)RTE_MIN((uint64_t)burst, count - seq);
		uint8_t *first;
		int n = rb2_tx_reserve_burst(tx, size, k, (void **)&first);

		if (unlikely(n < 0)) {
			if (n != -ENOBUFS) {
				c->fail = n;
				break;
			}
			rte_pause();
			continue;
		}
		if (unlikely(bounce != NULL)) {
			/* Ablation M6, no zero copy, or a design that copies
			 * in: build each message in a buffer of its own, then
			 * copy it into the ring (rb2_msg_copy(): libc's memcpy
			 * above two lines, which at 1 MB can beat writing in
			 * place, the zero-copy fill's read for ownership). */
			for (int i = 0; i < n; i++) {
				perf_fill(bounce, size, seq + (uint64_t)i);
				rb2_msg_copy(first + (size_t)i * stride, bounce, size);
			}
		} else {
			for (int i = 0; i < n; i++)
				perf_fill(first + (size_t)i * stride, size, seq + (uint64_t)i);
		}
		rb2_tx_commit_burst(tx, size, (unsigned int)n);
		seq += (uint64_t)n;
		if (deadline != 0 && rte_rdtsc() > deadline)
			break;
	}
	rb2_tx_flush(tx);
	return seq;
}

/* L5's send(): the application builds each message, send() copies it into
 * the ring's send buffer and WRITEs it, one message per call. */
static uint64_t
send_l5(struct round_ctl *c, uint64_t count, uint64_t deadline)
{
	const uint32_t size = c->o->size;
	uint64_t seq;

	for (seq = 0; seq < count && !PAST(deadline, seq); seq++) {
		int ret;

		perf_fill(c->bounce_tx, size, seq);
		ret = rb2_l5_send(c->v->l5, c->bounce_tx, size);
		if (unlikely(ret < 0)) {
			c->tx_fail = ret;
			break;
		}
	}
	return seq;
}

static uint64_t
send_ring_elem(struct round_ctl *c, uint64_t count, uint64_t deadline)
{
	const uint32_t size = c->o->size, esize = ring_esize(size);
	unsigned int burst = c->o->burst;
	struct rte_ring *r = c->v->ring;
	uint8_t *buf = rte_malloc(NULL, (size_t)burst * esize, RTE_CACHE_LINE_SIZE);
	uint64_t seq = 0;

	while (buf != NULL && seq < count) {
		unsigned int k = (unsigned int)RTE_MIN((uint64_t)burst, count - seq);
		unsigned int sent = 0;

		for (unsigned int i = 0; i < k; i++)
			perf_fill(buf + (size_t)i * esize, size, seq + i);
		while (sent < k) {
			unsigned int n = rte_ring_sp_enqueue_burst_elem(r,
					buf + (size_t)sent * esize, esize, k - sent, NULL);
			if (n == 0)
				rte_pause();
			sent += n;
		}
		seq += k;
		if (deadline != 0 && rte_rdtsc() > deadline)
			break;
	}
	rte_free(buf);
	return seq;
}

static uint64_t
send_ring_zc(struct round_ctl *c, uint64_t count, uint64_t deadline)
{
	const uint32_t size = c->o->size, esize = ring_esize(size);
	unsigned int burst = c->o->burst;
	struct rte_ring *r = c->v->ring;
	struct rte_ring_zc_data zcd;
	uint64_t seq = 0;

	while (seq < count) {
		unsigned int k = (unsigned int)RTE_MIN((uint64_t)burst, count - seq);
		unsigned int n = rte_ring_enqueue_zc_burst_elem_start(r, esize, k,
								      &zcd, NULL);
		if (unlikely(n == 0)) {
			rte_pause();
			continue;
		}
		for (unsigned int i = 0; i < zcd.n1; i++)
			perf_fill((uint8_t *)zcd.ptr1 + (size_t)i * esize, size, seq + i);
		for (unsigned int i = zcd.n1; i < n; i++)
			perf_fill((uint8_t *)zcd.ptr2 + (size_t)(i - zcd.n1) * esize,
				  size, seq + i);
		rte_ring_enqueue_zc_elem_finish(r, n);
		seq += n;
		if (deadline != 0 && rte_rdtsc() > deadline)
			break;
	}
	return seq;
}

/* One round of one variant; returns million messages per second. */
static double
run_round(struct perf_variant *v, const struct perf_opts *o, uint64_t count,
	  double duration)
{
	struct round_ctl *cp = &round_ctl;
	uint64_t deadline = 0, sent;
	int ret;
#define c (*cp)

	static uint8_t *bounce[2];

	if ((o->bounce || v->copies.in || v->copies.out) && bounce[0] == NULL) {
		bounce[0] = rte_malloc_socket("perf_bounce", o->size, RTE_CACHE_LINE_SIZE,
					      (int)rte_lcore_to_socket_id(o->tx_lcore));
		bounce[1] = rte_malloc_socket("perf_bounce", o->size, RTE_CACHE_LINE_SIZE,
					      (int)rte_lcore_to_socket_id(o->rx_lcore));
		if (bounce[0] == NULL || bounce[1] == NULL) {
			fprintf(stderr, "rb2-perf: out of memory for --bounce buffers\n");
			exit(EXIT_FAILURE);
		}
	}
	memset(&c, 0, sizeof(c));
	c.v = v;
	c.o = o;
	c.bounce_tx = bounce[0];
	c.bounce_rx = bounce[1];
	c.total = duration > 0 ? UINT64_MAX : count;
	ret = rb2_lcore_launch(receiver_main, &c, o->rx_lcore);
	if (ret != 0) {
		fprintf(stderr, "rb2-perf: cannot launch the receiver on lcore %u: %s\n",
			o->rx_lcore, strerror(-ret));
		exit(EXIT_FAILURE);
	}
	while (!atomic_load_explicit(&c.rx_ready, memory_order_acquire))
		rte_pause();
	if (duration > 0) {
		deadline = rte_rdtsc() + (uint64_t)(duration * (double)rte_get_tsc_hz());
		count = UINT64_MAX;
	}
	atomic_store_explicit(&c.go, 1, memory_order_release);
	switch (v->kind) {
	case VAR_RB2: sent = send_rb2(&c, count, deadline); break;
	case VAR_L5: sent = send_l5(&c, count, deadline); break;
	case VAR_RING_ELEM: sent = send_ring_elem(&c, count, deadline); break;
	default: sent = send_ring_zc(&c, count, deadline); break;
	}
	/* Release: the final count after every message; pairs with the
	 * receiver's acquire load when it runs dry. */
	atomic_store_explicit(&c.total, sent, memory_order_release);
	rb2_lcore_wait(o->rx_lcore);

	if (c.fail != 0 || c.tx_fail != 0) {
		fprintf(stderr, "rb2-perf: %s failed: %s\n", v->name,
			strerror(-(c.fail != 0 ? c.fail : c.tx_fail)));
		exit(EXIT_FAILURE);
	}
	v->errors += c.errors + (c.got != sent ? 1 : 0);
	v->copied_bytes += (uint64_t)o->size * (sent * (uint64_t)(o->bounce || v->copies.in) +
						c.got * (uint64_t)(o->bounce || v->copies.out));
	if (c.got != sent)
		fprintf(stderr, "rb2-perf: %s: sent %" PRIu64 " but received %" PRIu64 "\n",
			v->name, sent, c.got);
	return (double)c.got / ((double)(c.t_end - c.t_start) /
				(double)rte_get_tsc_hz()) / 1e6;
#undef c
}

#define IS_RTE_RING(kind) ((kind) == VAR_RING_ELEM || (kind) == VAR_RING_ZC)

/* ---- set-up ---------------------------------------------------------------- */

static int
variant_open_rb2(struct perf_variant *v, const struct perf_opts *o,
		 const char *spec, const char *chan, int fixed, const char *preset)
{
	struct rb2_chan_params p = o->chan;
	char why[256];

	if (fixed)
		p.msg_size = o->size;
	if (preset != NULL && perf_apply_preset(&p, preset, o) != 0)
		return -1;          /* refused by the option parser already */
	if (preset != NULL)
		v->copies = perf_design_copies(preset);
	if (rb2_chan_params_check(&p, why, sizeof(why)) != 0) {
		fprintf(stderr, "rb2-perf: %s%s%s: %s\n", v->name, preset ? " preset " : "",
			preset ? preset : "", why);
		return -1;
	}

	v->kind = VAR_RB2;
	v->xp = rb2_xport_open_spec(spec);
	if (v->xp == NULL) {
		fprintf(stderr, "rb2-perf: cannot open transport '%s': %s\n", spec,
			rte_strerror(rte_errno));
		return -1;
	}
	p.lcore_id = o->tx_lcore;
	v->tx = rb2_tx_create(chan, v->xp, &p);
	p.lcore_id = o->rx_lcore;
	v->rx = rb2_rx_create(chan, v->xp, &p);
	if (v->tx == NULL || v->rx == NULL || rb2_chan_pair(v->tx, v->rx) != 0) {
		fprintf(stderr, "rb2-perf: cannot set up channel '%s' on %s: %s\n",
			chan, spec, rte_strerror(rte_errno));
		return -1;
	}
	return 0;
}

/* L5 as its code builds it (rb2_l5.h): a ring of slots x size bytes, the
 * paper's 128 x message size. */
static int
variant_open_l5(struct perf_variant *v, const struct perf_opts *o, const char *spec,
		const char *name)
{
	v->kind = VAR_L5;
	v->copies = perf_design_copies("l5");
	v->xp = rb2_xport_open_spec(spec);
	if (v->xp == NULL) {
		fprintf(stderr, "rb2-perf: cannot open transport '%s': %s\n", spec,
			rte_strerror(rte_errno));
		return -1;
	}
	v->l5 = rb2_l5_create(v->xp, name, rb2_l5_ring_bytes(o->chan.slots, o->size),
			       o->size, o->tx_lcore, o->rx_lcore);
	return v->l5 != NULL ? 0 : -1;
}

static int
variant_open_ring(struct perf_variant *v, const struct perf_opts *o, int kind,
		  const char *name)
{
	v->kind = kind;
	v->ring = rte_ring_create_elem(name, ring_esize(o->size), o->chan.slots,
				       (int)rte_socket_id(),
				       RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (v->ring == NULL) {
		fprintf(stderr, "rb2-perf: rte_ring_create_elem(%u x %u B): %s\n",
			o->chan.slots, ring_esize(o->size), rte_strerror(rte_errno));
		return -1;
	}
	return 0;
}

static void
variant_close(struct perf_variant *v)
{
	rb2_l5_destroy(v->l5);
	rb2_tx_destroy(v->tx);
	rb2_rx_destroy(v->rx);
	rb2_xport_close(v->xp);
	rte_ring_free(v->ring);
}

static json_t *
json_tx_stats(const struct perf_variant *v)
{
	json_t *tx = json_object(), *rx = json_object();
	struct rb2_tx_stats t;
	struct rb2_rx_stats r;

	rb2_tx_stats_get(v->tx, &t);
	rb2_rx_stats_get(v->rx, &r);
#define J(n, d) json_object_set_new(tx, #n, json_integer((json_int_t)t.n));
	RB2_TX_STATS(J)
#undef J
#define J(n, d) json_object_set_new(rx, #n, json_integer((json_int_t)r.n));
	RB2_RX_STATS(J)
#undef J
	return json_pack("{s:o, s:o}", "tx", tx, "rx", rx);
}

/* L5's counters in the channels' shape: per side, "messages" first. */
static json_t *
json_l5_stats(const struct perf_variant *v)
{
	struct rb2_l5_stats st;

	rb2_l5_stats_get(v->l5, &st);
	return json_pack("{s:{s:I, s:I, s:I, s:I, s:I, s:I}, s:{s:I, s:I}}",
			 "tx", "messages", (json_int_t)st.messages, "writes", (json_int_t)st.writes,
			 "posts", (json_int_t)st.posts, "signaled", (json_int_t)st.signaled,
			 "head_reads", (json_int_t)st.head_reads, "wrapped", (json_int_t)st.wrapped,
			 "rx", "messages", (json_int_t)st.received,
			 "cleared_bytes", (json_int_t)st.cleared_bytes);
}

/* "A/B": the ratio of the medians, or null when B measured nothing. */
static void
json_ratio(json_t *ratios, const struct perf_variant *a, const struct perf_variant *b)
{
	char key[80];

	snprintf(key, sizeof(key), "%s/%s", a->name, b->name);
	json_object_set_new(ratios, key, b->median > 0 ? bench_json_real(a->median / b->median) :
			    json_null());
}

int
perf_bw_run(const struct perf_opts *o, json_t *doc)
{
	struct perf_variant vars[PERF_MAX_VARIANTS];
	unsigned int nv = 0, i, r;
	int is_shm = strncmp(o->transport, "shm", 3) == 0 &&
		(o->transport[3] == '\0' || o->transport[3] == ',');
	int rc = 0, ref = -1;

	memset(vars, 0, sizeof(vars));
	if (o->compare && is_shm) {
		/* Both shm modes; each also as a fixed-size channel (lengths
		 * never travel, as rte_ring's fixed elements) unless --fixed
		 * already made every channel fixed. */
		int both = o->chan.msg_size == 0 && o->size <= o->chan.slot_size;
		static const struct {
			const char *name, *spec, *chan, *desc;
			int fixed;
		} rb2v[] = {
			{"rb2-shm-loadstore", "shm,mode=loadstore", "perf-ls", "RB2 over shm, load/store (payload stored in the peer ring)", 0},
			{"rb2-shm-ls-fixed", "shm,mode=loadstore", "perf-lsf", "the same, fixed-size channel (no lengths on the link)", 1},
			{"rb2-shm-copy", "shm,mode=copy", "perf-copy", "RB2 over shm, NIC-copy (every slot through a WRITE)", 0},
			{"rb2-shm-copy-fixed", "shm,mode=copy", "perf-copyf", "the same, fixed-size channel", 1},
		};
		for (i = 0; i < RTE_DIM(rb2v); i++) {
			if (rb2v[i].fixed && !both)
				continue;
			vars[nv].name = rb2v[i].name;
			vars[nv].desc = rb2v[i].desc;
			if (variant_open_rb2(&vars[nv++], o, rb2v[i].spec,
					     rb2v[i].chan, rb2v[i].fixed, NULL) < 0)
				return -1;
		}
	} else if (o->npresets > 0) {
		static const char *const what[][2] = {
			{"rb2", "RB2: lazy push (every gamma, READ when no push is due), write-twice, alpha=32 beta=16 gamma=32, eager (shm: 4)"},
			{"rb2-noeager", "RB2 without eager publication: the paper's batching alone"},
			{"rb2-unbatched", "RB2 with batching turned off: lazy push, write-twice, alpha=beta=gamma=1"},
			{"rb2-idlepush", "RB2 whose receiver also pushes its head whenever the ring drains"},
			{"l5", "L5's own ring (pfent/L5RDMA): length, payload, validity word back to back; data then length WRITE, head READ when full; copies in, out, clears"},
			{"l5:fixed", "L5's own ring (pfent/L5RDMA; its length always travels): data then length WRITE, head READ when full; copies in, out, clears"},
			{"farm", "FaRM: poll message (marker + length WRITE), no batching; copies in"},
			{"socksdirect", "SocksDirect: WRITE_WITH_IMM + CQ polling, a completion per WRITE, 10 in flight; copies in and out"},
			{"lean", "RB2 latency mode: poll message, one WRITE per message, lazy head"},
		};
		for (i = 0; i < o->npresets; i++) {
			char chan[RB2_CHAN_NAMESIZE];

			vars[nv].name = o->presets[i];
			vars[nv].desc = o->presets[i];
			for (unsigned int k = 0; k < RTE_DIM(what); k++)
				if (strcmp(what[k][0], o->presets[i]) == 0)
					vars[nv].desc = what[k][1];
			/* Preset names are at most 18 characters (main.c). */
			snprintf(chan, sizeof(chan), "perf-%.18s", o->presets[i]);
			if (perf_preset_is_l5(o->presets[i]) ?
			    variant_open_l5(&vars[nv++], o, o->transport, chan) < 0 :
			    variant_open_rb2(&vars[nv++], o, o->transport, chan, o->fixed,
					     o->presets[i]) < 0)
				return -1;
		}
	} else {
		vars[nv].name = "rb2";
		vars[nv].desc = o->transport;
		if (variant_open_rb2(&vars[nv++], o, o->transport, "perf", 0, NULL) < 0)
			return -1;
	}
	if (o->compare) {
		vars[nv].name = "ring-elem";
		vars[nv].desc = "rte_ring SP/SC, element copy API (enqueue/dequeue_burst_elem)";
		if (variant_open_ring(&vars[nv++], o, VAR_RING_ELEM, "perf-ring-elem") < 0)
			return -1;
		vars[nv].name = "ring-zc";
		vars[nv].desc = "rte_ring SP/SC, zero-copy API (enqueue/dequeue_zc_burst_elem_start/finish)";
		if (variant_open_ring(&vars[nv++], o, VAR_RING_ZC, "perf-ring-zc") < 0)
			return -1;
	}

	printf("rb2-perf bw: %u B %s messages, %u slots x %u B, alpha=%u beta=%u gamma=%u, burst %u, %u rounds of %s\n",
	       o->size, o->chan.msg_size ? "fixed-size" : "variable-length",
	       o->chan.slots, o->chan.slot_size, o->chan.alpha,
	       o->chan.beta, o->chan.gamma, o->burst, o->rounds,
	       o->duration > 0 ? "a fixed duration" : "a fixed count");
	/* Warm-up: caches, TLBs, page faults; not recorded. A tenth of a
	 * round: of its count, or of its duration (a count-based warm-up of
	 * 1 MB messages took a minute before each half-second round). */
	for (i = 0; i < nv; i++)
		run_round(&vars[i], o, RTE_MAX(o->count / 10, (uint64_t)1000),
			  o->duration / 10);
	for (r = 0; r < o->rounds; r++) {
		for (i = 0; i < nv; i++) {
			struct perf_variant *v = &vars[i];
			v->mps[v->n++] = run_round(v, o, o->count, o->duration);
		}
		printf("  round %u/%u:", r + 1, o->rounds);
		for (i = 0; i < nv; i++)
			printf(" %s %.2f", vars[i].name, vars[i].mps[vars[i].n - 1]);
		printf(" Mmsg/s\n");
		fflush(stdout);
	}

	printf("\n%-20s %12s %10s %8s  %s\n", "variant", "Mmsg/s(med)", "Gbit/s",
	       "errors", "what");
	for (i = 0; i < nv; i++) {
		double mps[PERF_MAX_ROUNDS];
		memcpy(mps, vars[i].mps, sizeof(mps));
		vars[i].median = bench_median(mps, vars[i].n);
		printf("%-20s %12.2f %10.2f %8" PRIu64 "  %s\n", vars[i].name,
		       vars[i].median, vars[i].median * o->size * 8 / 1e3,
		       vars[i].errors, vars[i].desc);
		if (vars[i].errors != 0)
			rc = -1;
	}
	/* Presets: the first RB2 variant over each other design. */
	for (i = 0; o->npresets > 0 && i < nv && !perf_preset_is_rb2(vars[i].name); i++)
		;
	ref = i < nv ? (int)i : -1;
	if (ref >= 0) {
		printf("\n%s's throughput over each design (medians, same run):\n", vars[ref].name);
		for (unsigned int j = 0; j < nv; j++)
			if ((int)j != ref)
				printf("  %s / %-17s = %.2fx\n", vars[ref].name, vars[j].name,
				       vars[ref].median / vars[j].median);
	}
	if (nv > 1 && o->npresets == 0) {
		printf("\nratios of medians (side by side, same run):\n");
		for (i = 0; i < nv; i++)
			for (unsigned int j = 0; j < nv; j++)
				if (vars[i].kind == VAR_RB2 && IS_RTE_RING(vars[j].kind))
					printf("  %-18s / %-10s = %.2fx\n", vars[i].name,
					       vars[j].name, vars[i].median / vars[j].median);
	}
	for (i = 0; i < nv; i++) {
		struct rb2_l5_stats l5;

		if (vars[i].kind == VAR_L5) {
			rb2_l5_stats_get(vars[i].l5, &l5);
			printf("\n%s ring counters: %" PRIu64 " messages, %" PRIu64 " WRITEs in %" PRIu64
			       " posts, %" PRIu64 " waited-for signals, %" PRIu64 " head READs, %" PRIu64
			       " split at the end\n", vars[i].name, l5.messages, l5.writes, l5.posts,
			       l5.signaled, l5.head_reads, l5.wrapped);
		}
		if (vars[i].kind != VAR_RB2)
			continue;
		struct rb2_tx_stats t;
		struct rb2_rx_stats rs;
		rb2_tx_stats_get(vars[i].tx, &t);
		rb2_rx_stats_get(vars[i].rx, &rs);
		printf("\n%s channel counters: %" PRIu64 " messages, %" PRIu64
		       " slot WRITEs, %" PRIu64 " tail WRITEs, %" PRIu64
		       " deferred tail syncs, %" PRIu64 " head pushes (%" PRIu64
		       " idle), %" PRIu64 " head READs, %" PRIu64 " full, %" PRIu64 " empty\n",
		       vars[i].name, (uint64_t)t.messages, (uint64_t)t.slot_writes,
		       (uint64_t)t.tail_writes, (uint64_t)t.deferred_tail_syncs,
		       (uint64_t)rs.head_pushes, (uint64_t)rs.idle_pushes,
		       (uint64_t)t.head_reads,
		       (uint64_t)t.full_events, (uint64_t)rs.empty_events);
	}

	if (doc != NULL) {
		json_t *vs = json_array(), *ratios = json_object();

		for (i = 0; i < nv; i++) {
			const struct perf_variant *v = &vars[i];
			json_t *j = json_pack("{s:s, s:s, s:o, s:o, s:I, s:o, s:s, s:I}", "name", v->name,
				      "desc", v->desc, "median_mmsg_s", bench_json_real(v->median),
				      "median_gbit_s", bench_json_real(v->median * o->size * 8 / 1e3),
				      "errors", (json_int_t)v->errors,
				      "rounds_mmsg_s", bench_json_reals(v->mps, v->n),
				      "copies", perf_copies_name(v->copies),
				      "copied_bytes", (json_int_t)v->copied_bytes);
			if (v->kind == VAR_RB2)
				json_object_set_new(j, "stats", json_tx_stats(v));
			else if (v->kind == VAR_L5)
				json_object_set_new(j, "stats", json_l5_stats(v));
			json_array_append_new(vs, j);
		}
		for (i = 0; i < nv; i++)
			for (unsigned int j = 0; j < nv; j++)
				if (vars[i].kind == VAR_RB2 && IS_RTE_RING(vars[j].kind))
					json_ratio(ratios, &vars[i], &vars[j]);
		/* Presets: the first RB2 variant over each design. */
		for (unsigned int j = 0; ref >= 0 && j < nv; j++)
			if ((int)j != ref && !IS_RTE_RING(vars[j].kind))
				json_ratio(ratios, &vars[ref], &vars[j]);
		json_object_set_new(doc, "rounds", json_integer(o->rounds));
		json_object_set_new(doc, "variants", vs);
		json_object_set_new(doc, "ratios", ratios);
	}
	for (i = 0; i < nv; i++)
		variant_close(&vars[i]);
	return rc;
}

/* ---- Fig. 7: k channel pairs on k lcore pairs ------------------------------ */

static struct round_ctl pair_ctl[PERF_MAX_PAIRS];

/* A pair's sender on its own lcore: waits for the start, sends, and
 * publishes its final count for the receiver. */
static int
sender_main(void *arg)
{
	struct round_ctl *c = arg;
	uint64_t deadline = 0, count = c->count, sent;

	while (!atomic_load_explicit(&c->go, memory_order_acquire))
		rte_pause();
	if (c->duration > 0) {
		deadline = rte_rdtsc() + (uint64_t)(c->duration * (double)rte_get_tsc_hz());
		count = UINT64_MAX;
	}
	sent = send_rb2(c, count, deadline);
	/* Release: pairs with the receiver's acquire load when it runs dry. */
	atomic_store_explicit(&c->total, sent, memory_order_release);
	return 0;
}

/* One round of every pair at once: the sum of the pairs' rates, and each
 * pair's in @per. */
static double
pairs_round(struct perf_variant *v, const struct perf_opts *po, unsigned int k,
	    uint64_t count, double duration, double *per)
{
	double sum = 0;

	for (unsigned int i = 0; i < k; i++) {
		struct round_ctl *c = &pair_ctl[i];

		memset(c, 0, sizeof(*c));
		c->v = &v[i];
		c->o = &po[i];
		c->total = duration > 0 ? UINT64_MAX : count;
		c->count = count;
		c->duration = duration;
		if (rb2_lcore_launch(receiver_main, c, po[i].rx_lcore) != 0 ||
		    (i > 0 && rb2_lcore_launch(sender_main, c, po[i].tx_lcore) != 0)) {
			fprintf(stderr, "rb2-perf: cannot launch pair %u on lcores %u and %u\n",
				i, po[i].tx_lcore, po[i].rx_lcore);
			exit(EXIT_FAILURE);
		}
	}
	for (unsigned int i = 0; i < k; i++)
		while (!atomic_load_explicit(&pair_ctl[i].rx_ready, memory_order_acquire))
			rte_pause();
	for (unsigned int i = 0; i < k; i++)
		atomic_store_explicit(&pair_ctl[i].go, 1, memory_order_release);
	sender_main(&pair_ctl[0]);       /* pair 0 sends from the main lcore */
	rb2_lcore_wait_all();
	for (unsigned int i = 0; i < k; i++) {
		struct round_ctl *c = &pair_ctl[i];
		uint64_t sent = atomic_load_explicit(&c->total, memory_order_relaxed);

		if (c->fail != 0) {
			fprintf(stderr, "rb2-perf: pair %u failed: %s\n", i, strerror(-c->fail));
			exit(EXIT_FAILURE);
		}
		v[i].errors += c->errors + (c->got != sent ? 1 : 0);
		if (c->got != sent)
			fprintf(stderr, "rb2-perf: pair %u: sent %" PRIu64 " but received %" PRIu64 "\n",
				i, sent, c->got);
		per[i] = (double)c->got / ((double)(c->t_end - c->t_start) /
					   (double)rte_get_tsc_hz()) / 1e6;
		sum += per[i];
	}
	return sum;
}

int
perf_pairs_run(const struct perf_opts *o, json_t *doc)
{
	static struct perf_opts po[PERF_MAX_PAIRS];
	static struct perf_variant v[PERF_MAX_PAIRS];
	unsigned int lcores[2 * PERF_MAX_PAIRS], nl = 0, lc, k = o->pairs;
	static double per[PERF_MAX_ROUNDS][PERF_MAX_PAIRS];
	double tot[PERF_MAX_ROUNDS], x[RTE_MAX(PERF_MAX_ROUNDS, PERF_MAX_PAIRS)];
	const char *preset = o->npresets == 1 ? o->presets[0] : NULL;
	uint64_t errors = 0;
	double med;

	lcores[nl++] = rte_get_main_lcore();
	RTE_LCORE_FOREACH_WORKER(lc)
		if (nl < RTE_DIM(lcores))
			lcores[nl++] = lc;
	if (nl < 2 * k) {
		fprintf(stderr, "rb2-perf: --pairs %u needs %u lcores, the EAL has %u (-l 0-%u)\n",
			k, 2 * k, nl, 2 * k - 1);
		return -1;
	}
	memset(v, 0, sizeof(v));
	for (unsigned int i = 0; i < k; i++) {
		char chan[RB2_CHAN_NAMESIZE];

		po[i] = *o;
		po[i].tx_lcore = lcores[2 * i];
		po[i].rx_lcore = lcores[2 * i + 1];
		snprintf(chan, sizeof(chan), "perf-pair%u", i);
		v[i].name = "rb2";
		v[i].desc = preset ? preset : o->transport;
		if (variant_open_rb2(&v[i], &po[i], o->transport, chan, o->fixed, preset) < 0)
			return -1;
	}
	printf("rb2-perf: %u channel pair%s (sender, receiver lcores:", k, k == 1 ? "" : "s");
	for (unsigned int i = 0; i < k; i++)
		printf(" %u>%u", po[i].tx_lcore, po[i].rx_lcore);
	printf("), %u B messages, %u rounds\n", o->size, o->rounds);
	pairs_round(v, po, k, RTE_MAX(o->count / 10, (uint64_t)1000), o->duration / 10,
		    per[0]);                      /* warm-up */
	for (unsigned int r = 0; r < o->rounds; r++) {
		tot[r] = pairs_round(v, po, k, o->count, o->duration, per[r]);
		printf("  round %u/%u: %.2f Mmsg/s in all\n", r + 1, o->rounds, tot[r]);
		fflush(stdout);
	}
	memcpy(x, tot, o->rounds * sizeof(double));
	med = bench_median(x, o->rounds);
	printf("\n%u pair%s: %.2f Mmsg/s (median of the rounds' sums), %.2f Gbit/s\n", k,
	       k == 1 ? "" : "s", med, med * o->size * 8 / 1e3);
	for (unsigned int i = 0; i < k; i++)
		errors += v[i].errors;
	if (doc != NULL) {
		json_t *per_pair = json_array();

		for (unsigned int i = 0; i < k; i++) {
			for (unsigned int r = 0; r < o->rounds; r++)
				x[r] = per[r][i];
			json_array_append_new(per_pair, bench_json_real(bench_median(x, o->rounds)));
		}
		bench_json_merge(doc, json_pack("{s:I, s:I, s:o, s:I, s:o, s:o}",
			"rounds", (json_int_t)o->rounds, "pairs", (json_int_t)k,
			"median_mmsg_s", bench_json_real(med), "errors", (json_int_t)errors,
			"rounds_mmsg_s", bench_json_reals(tot, o->rounds), "per_pair_median_mmsg_s",
			per_pair));
	}
	for (unsigned int i = 0; i < k; i++)
		variant_close(&v[i]);
	if (errors != 0)
		fprintf(stderr, "rb2-perf: %" PRIu64 " messages lost or corrupt\n", errors);
	return errors != 0 ? -1 : 0;
}
