/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * The "shard" stage: spreads the measurement NF's records over measure
 * stages by flow hash, as RSS spreads a NIC's packets over queues, so that
 * each flow is measured whole by one shard and N shards give the records of
 * one (records of the same flow keep their order). Edges s0..s7: the linked
 * ones, which must be s0..sN-1, are the shards. Non-IP records, which belong
 * to no flow, go to s0 (they count in its totals).
 *
 *   batch = K    records per message out (default 32, at most 64)
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rb2_flowtab.h>
#include <rb2_stage.h>
#include <rb2_trace.h>

#define SHARDS_MAX 8
#define REC ((uint32_t)sizeof(struct rb2_rec))

struct shard {
	unsigned int n;              /* shards linked */
	uint64_t batch;
	struct rb2_rec *buf[SHARDS_MAX];
	unsigned int len[SHARDS_MAX];
	uint64_t *c_records[SHARDS_MAX];
	uint64_t *c_bad;
};

static int
shard_init(struct rb2_stage *st, struct rb2_stage_args *a)
{
	struct shard *s = rb2_stage_priv(st);

	if (rb2_stage_arg_u64(a, "batch", 32, 1, RB2_REC_BATCH_MAX, &s->batch) < 0)
		return -EINVAL;
	s->c_bad = rb2_stage_counter(st, "bad_msgs");
	return 0;
}

static int
shard_start(struct rb2_stage *st)
{
	struct shard *s = rb2_stage_priv(st);
	static const char *names[SHARDS_MAX] = { "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7" };

	while (s->n < SHARDS_MAX && rb2_stage_edge_linked(st, s->n))
		s->n++;
	for (unsigned int i = s->n; i < SHARDS_MAX; i++)
		if (rb2_stage_edge_linked(st, i)) {
			rb2_stage_err(st, "edge %s is linked but s%u is not: link s0..sN-1",
				      names[i], s->n);
			return -EINVAL;
		}
	if (s->n == 0) {
		rb2_stage_err(st, "no shard: link edge s0 (and s1, ...) to measure stages");
		return -EINVAL;
	}
	for (unsigned int i = 0; i < s->n; i++) {
		s->buf[i] = calloc(s->batch, REC);
		if (s->buf[i] == NULL)
			return -ENOMEM;
		s->c_records[i] = rb2_stage_counter(st, names[i]);
	}
	return 0;
}

static void
shard_fini(struct rb2_stage *st)
{
	struct shard *s = rb2_stage_priv(st);

	for (unsigned int i = 0; i < SHARDS_MAX; i++) {
		free(s->buf[i]);
		s->buf[i] = NULL;
	}
}

static void
out(struct rb2_stage *st, struct shard *s, unsigned int i)
{
	if (s->len[i] == 0)
		return;
	/* A failure is counted by the pipeline, and fails the run. */
	if (rb2_stage_emit(st, i, s->buf[i], s->len[i] * REC) == 0)
		rb2_stage_count(s->c_records[i], s->len[i]);
	s->len[i] = 0;
}

static void
shard_process(struct rb2_stage *st, const struct rb2_msg *msgs, unsigned int n)
{
	struct shard *s = rb2_stage_priv(st);

	for (unsigned int m = 0; m < n; m++) {
		const struct rb2_rec *r = msgs[m].data;
		uint32_t nr = msgs[m].len / REC;

		if (unlikely(msgs[m].len % REC != 0)) {
			rb2_stage_count(s->c_bad, 1);
			rb2_stage_fail(st, "a message of %u bytes is not whole records", msgs[m].len);
			continue;
		}
		for (uint32_t j = 0; j < nr; j++) {
			unsigned int i = 0;

			if (r[j].kind == RB2_REC_IPV4 || r[j].kind == RB2_REC_IPV6)
				i = rb2_flow_shard(rb2_flowtab_hash(&r[j]), s->n);
			s->buf[i][s->len[i]++] = r[j];
			if (s->len[i] == s->batch)
				out(st, s, i);
		}
	}
	/* Nothing waits for a next burst: a record's latency stays one pass. */
	for (unsigned int i = 0; i < s->n; i++)
		out(st, s, i);
}

static const char *const shard_edges[] = { "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", NULL };

static const struct rb2_stage_ops shard_ops = {
	.api_version = RB2_STAGE_API_VERSION,
	.name = "shard",
	.summary = "spreads records over measure stages by flow hash, as RSS does (batch); "
		   "edges s0..s7",
	.edges = shard_edges,
	.optional_edges = 0xff,
	.priv_size = sizeof(struct shard),
	.init = shard_init,
	.start = shard_start,
	.fini = shard_fini,
	.process = shard_process,
};

RB2_STAGE_REGISTER(shard_ops);
