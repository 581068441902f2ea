/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Pipelines with stages of the test's own: same-lcore links queue (a stage
 * never runs inside another's callback), bursts that span many queued
 * chunks and a message larger than a chunk arrive whole and in order, over
 * channels too; a refused emit is counted and fails the run; a stage whose
 * output goes nowhere is a load error.
 */

#include <rte_cycles.h>

#include <rb2_pipeline.h>

#include "rb2_test.h"

TestSuite(rb2_pipeline, .init = rb2_test_eal_init, .fini = rb2_test_eal_fini,
	  .timeout = 120);

/* The length of message @seq: 1..300 bytes, and every 1000th is 100 000
 * bytes (larger than a same-lcore queue chunk) when giants are on. */
static uint32_t
len_of(uint64_t seq, int giants)
{
	if (giants && seq % 1000 == 999)
		return 100000;
	return 8 + (uint32_t)(seq * 7919 % 293);
}

/* Stage callbacks running on each lcore now, and the most seen at once. */
static int depth[RTE_MAX_LCORE], max_depth[RTE_MAX_LCORE];

static void
enter(void)
{
	unsigned int l = rte_lcore_id();

	if (++depth[l] > max_depth[l])
		max_depth[l] = depth[l];
}

static void
leave(void)
{
	depth[rte_lcore_id()]--;
}

/* ---- seqsrc: count = N, per_poll = K, giants = yes|no, bad_edge = yes|no,
 * gap_us = G (sleep that long after each poll: a paced source) */

struct seqsrc {
	uint64_t count, per_poll, sent, gap_us, due;
	int giants, bad_edge;
};

static int
seqsrc_init(struct rb2_stage *st, struct rb2_stage_args *a)
{
	struct seqsrc *s = rb2_stage_priv(st);

	return rb2_stage_arg_u64(a, "count", 100000, 1, UINT32_MAX, &s->count) < 0 ||
		rb2_stage_arg_u64(a, "per_poll", 64, 1, 1000000, &s->per_poll) < 0 ||
		rb2_stage_arg_bool(a, "giants", 0, &s->giants) < 0 ||
		rb2_stage_arg_bool(a, "bad_edge", 0, &s->bad_edge) < 0 ||
		rb2_stage_arg_u64(a, "gap_us", 0, 0, 1000000, &s->gap_us) < 0 ? -EINVAL : 0;
}

static int
seqsrc_poll(struct rb2_stage *st)
{
	struct seqsrc *s = rb2_stage_priv(st);
	uint8_t buf[100000];
	uint64_t k = 0;

	if (s->gap_us > 0 && rte_get_timer_cycles() < s->due)
		return 0;           /* paced: idle until due (the worker flushes) */
	enter();
	if (s->sent == s->count) {
		leave();
		return -ENODATA;
	}
	if (s->bad_edge && s->sent == 0)
		cr_expect_eq(rb2_stage_emit(st, 7, buf, 8), -EINVAL, "edge 7 does not exist");
	for (; k < s->per_poll && s->sent < s->count; k++, s->sent++) {
		uint32_t len = len_of(s->sent, s->giants);

		rb2_test_fill(buf, len, s->sent);
		if (rb2_stage_emit(st, 0, buf, len) != 0)
			break;
	}
	leave();
	if (s->gap_us > 0)
		s->due = rte_get_timer_cycles() + s->gap_us * rte_get_timer_hz() / 1000000;
	return (int)k;
}

static const char *const seqsrc_edges[] = { "out", NULL };
static const struct rb2_stage_ops seqsrc_ops = {
	.api_version = RB2_STAGE_API_VERSION, .name = "seqsrc",
	.edges = seqsrc_edges, .priv_size = sizeof(struct seqsrc),
	.init = seqsrc_init, .poll = seqsrc_poll,
};
RB2_STAGE_REGISTER(seqsrc_ops);

/* ---- relay: forwards every message, zero copy (reserve/commit) */

static void
relay_process(struct rb2_stage *st, const struct rb2_msg *msgs, unsigned int n)
{
	enter();
	for (unsigned int i = 0; i < n; i++) {
		size_t stride;
		void *slot;

		if (rb2_stage_emit_reserve(st, 0, msgs[i].len, 1, &slot, &stride) == 1) {
			memcpy(slot, msgs[i].data, msgs[i].len);
			rb2_stage_emit_commit(st, 0, msgs[i].len, 1);
		}
	}
	leave();
}

static const char *const relay_edges[] = { "out", NULL };
static const struct rb2_stage_ops relay_ops = {
	.api_version = RB2_STAGE_API_VERSION, .name = "relay",
	.edges = relay_edges, .process = relay_process,
};
RB2_STAGE_REGISTER(relay_ops);

/* ---- check: giants = yes|no; every message in order and intact */

struct check {
	uint64_t next, bad;
	int giants;
};

static int
check_init(struct rb2_stage *st, struct rb2_stage_args *a)
{
	struct check *c = rb2_stage_priv(st);

	return rb2_stage_arg_bool(a, "giants", 0, &c->giants) < 0 ? -EINVAL : 0;
}

static void
check_process(struct rb2_stage *st, const struct rb2_msg *msgs, unsigned int n)
{
	struct check *c = rb2_stage_priv(st);

	enter();
	for (unsigned int i = 0; i < n; i++, c->next++)
		c->bad += msgs[i].len != len_of(c->next, c->giants) ||
			!rb2_test_check(msgs[i].data, msgs[i].len, c->next);
	leave();
}

static const struct rb2_stage_ops check_ops = {
	.api_version = RB2_STAGE_API_VERSION, .name = "check",
	.priv_size = sizeof(struct check), .init = check_init, .process = check_process,
};
RB2_STAGE_REGISTER(check_ops);

/* Load @text (a configuration), run it, and return run()'s result; @c gets
 * the check stage's state. */
static int
run_text(const char *text, struct check *c, struct rb2_pipeline **out)
{
	struct rb2_pipeline_opts o = { .text = text };
	char err[512] = "";
	struct rb2_pipeline *pl = rb2_pipeline_load("test.ini", &o, err, sizeof(err));
	int ret;

	cr_assert_not_null(pl, "load: %s", err);
	memset(depth, 0, sizeof(depth));
	memset(max_depth, 0, sizeof(max_depth));
	ret = rb2_pipeline_run(pl);
	*c = *(struct check *)rb2_stage_priv(rb2_pipeline_stage(pl, "check"));
	*out = pl;
	return ret;
}

Test(rb2_pipeline, same_lcore_stages_never_nest_and_see_everything_in_order)
{
	/* 5000 messages per poll: every poll fills many queued chunks. */
	static const char cfg[] =
		"[stage src]\ntype = seqsrc\nlcore = 0\ncount = 200000\nper_poll = 5000\n"
		"[stage r1]\ntype = relay\nlcore = 0\n"
		"[stage r2]\ntype = relay\nlcore = 0\n"
		"[stage check]\ntype = check\nlcore = 0\n"
		"[link a]\nfrom = src\nto = r1\n"
		"[link b]\nfrom = r1\nto = r2\n"
		"[link c]\nfrom = r2\nto = check\n";
	struct rb2_pipeline *pl;
	struct check c;

	cr_assert_eq(run_text(cfg, &c, &pl), 0);
	cr_expect_eq(c.next, 200000, "every message arrived: %" PRIu64, c.next);
	cr_expect_eq(c.bad, 0, "%" PRIu64 " out of order or corrupt", c.bad);
	cr_expect_eq(max_depth[0], 1, "a stage ran inside another's callback (depth %d)",
		     max_depth[0]);
	rb2_pipeline_free(pl);
}

Test(rb2_pipeline, messages_larger_than_a_chunk_cross_same_lcore_links_and_channels)
{
	/* src -> r1 on lcore 0 (queued), r1 -> check across a channel whose
	 * slots hold the 100 000-byte giants. */
	static const char cfg[] =
		"[stage src]\ntype = seqsrc\nlcore = 0\ncount = 20000\nper_poll = 300\ngiants = yes\n"
		"[stage r1]\ntype = relay\nlcore = 0\n"
		"[stage check]\ntype = check\nlcore = 1\ngiants = yes\n"
		"[link a]\nfrom = src\nto = r1\n"
		"[link b]\nfrom = r1\nto = check\nslots = 1024\nslot_size = 512\n";
	struct rb2_pipeline *pl;
	struct check c;

	cr_assert_eq(run_text(cfg, &c, &pl), 0);
	cr_expect_eq(c.next, 20000);
	cr_expect_eq(c.bad, 0);
	rb2_pipeline_free(pl);
}

Test(rb2_pipeline, a_refused_emit_is_counted_and_fails_the_run)
{
	static const char cfg[] =
		"[stage src]\ntype = seqsrc\nlcore = 0\ncount = 1000\nbad_edge = yes\n"
		"[stage check]\ntype = check\nlcore = 1\n"
		"[link a]\nfrom = src\nto = check\n";
	struct rb2_pipeline *pl;
	struct check c;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	cr_expect_eq(run_text(cfg, &c, &pl), -EIO, "the run fails");
	cr_expect_eq(c.next, 1000, "the good messages still arrive");
	f = open_memstream(&buf, &len);
	cr_expect_eq(rb2_pipeline_report(pl, f), 0);
	fclose(f);
	cr_expect(strstr(buf, "NOT CLEAN") != NULL && strstr(buf, "1 emit(s) refused") != NULL,
		  "the summary says so:\n%s", buf);
	free(buf);
	rb2_pipeline_free(pl);
}

Test(rb2_pipeline, a_stage_whose_output_goes_nowhere_is_a_load_error)
{
	static const char cfg[] =
		"[stage src]\ntype = seqsrc\nlcore = 0\n"
		"[stage check]\ntype = check\nlcore = 1\n";
	struct rb2_pipeline_opts o = { .text = cfg };
	char err[512] = "";

	cr_expect_null(rb2_pipeline_load("test.ini", &o, err, sizeof(err)));
	cr_expect(strstr(err, "test.ini:1: stage 'src' (type seqsrc) sends its output nowhere") !=
		  NULL, "%s", err);
}

/* Adaptive polling: a worker whose input is paced (a message every
 * millisecond) sleeps between messages, is woken by each, and loses none. */
Test(rb2_pipeline, an_idle_worker_sleeps_and_wakes_on_the_next_message)
{
	static const char cfg[] =
		"[pipeline]\nidle_sleep = 120\nsleep_max_us = 1000000\n"
		"[stage src]\ntype = seqsrc\nlcore = 0\ncount = 300\nper_poll = 1\ngap_us = 1000\n"
		"[stage check]\ntype = check\nlcore = 1\n"
		"[link a]\nfrom = src\nto = check\n";
	struct rb2_pipeline *pl;
	struct check c;
	unsigned long sleeps = 0;
	unsigned long long cyc;
	char *json = NULL, *at;
	size_t len = 0;
	FILE *f;

	cr_assert_eq(run_text(cfg, &c, &pl), 0);
	cr_expect_eq(c.next, 300, "every message arrived: %" PRIu64, c.next);
	cr_expect_eq(c.bad, 0, "%" PRIu64 " out of order or corrupt", c.bad);
	f = open_memstream(&json, &len);
	cr_assert_not_null(f);
	rb2_pipeline_stats_json(pl, f);
	fclose(f);
	at = strstr(json, "\"lcore\": 1, \"adaptive\": true, \"sleeps\": ");
	cr_assert_not_null(at, "lcore 1 is adaptive: %s", json);
	sscanf(strchr(at, ':') + 1, "%*u, \"adaptive\": true, \"sleeps\": %lu", &sleeps);
	/* A message a millisecond, a sleep of at most a second: a lost
	 * wake-up would stretch the run far beyond 0.3 s; a worker that never
	 * slept would show no sleeps. */
	cr_expect_gt(sleeps, 100, "the worker slept %lu times between 300 paced messages", sleeps);
	/* Cycles are timed on one call in eight and scaled up: a stage's
	 * figure is still there, and no larger than the lcore's whole run. */
	at = strstr(json, "{\"name\": \"check\"");
	cr_assert_not_null(at, "%s", json);
	at = strstr(at, "\"cycles\": ");
	cr_assert_not_null(at, "%s", json);
	cyc = strtoull(at + strlen("\"cycles\": "), NULL, 10);
	cr_expect_gt(cyc, 0, "check: no cycles counted");
	cr_expect_lt(cyc, rte_get_tsc_hz() * 10, "check: %llu cycles in a 0.3 s run", cyc);
	free(json);
	rb2_pipeline_free(pl);
}

/* [pipeline] lanes: two channels from lcore 0 to lcore 1 post into one lane
 * per lcore (one QP each way over loop: the data one way, the receivers' head
 * pushes the other), a doorbell per loop pass for all of them; every message
 * still arrives once, in order, intact. (Not a cycle between the lcores:
 * emits wait while a ring is full, so a cycle could wait on itself, lanes or
 * not.) */
Test(rb2_pipeline, channels_on_lanes_share_a_doorbell_per_pass_and_lose_nothing)
{
	static const char cfg[] =
		"[pipeline]\nlanes = 1\n"
		"[stage src]\ntype = seqsrc\nlcore = 0\ncount = 100000\nper_poll = 64\n"
		"[stage src2]\ntype = seqsrc\nlcore = 0\ncount = 50000\nper_poll = 16\n"
		"[stage check]\ntype = check\nlcore = 1\n"
		"[stage check2]\ntype = check\nlcore = 1\n"
		"[link a]\nfrom = src\nto = check\ntransport = loop\n"
		"[link b]\nfrom = src2\nto = check2\ntransport = loop\n";
	unsigned long lc, peer, queues, wrs_in, doorbells, found = 0;
	struct rb2_pipeline *pl;
	struct check c, *c2;
	char *json = NULL, *at;
	size_t len = 0;
	FILE *f;

	cr_assert_eq(run_text(cfg, &c, &pl), 0);
	c2 = rb2_stage_priv(rb2_pipeline_stage(pl, "check2"));
	cr_expect_eq(c.next, 100000, "every message arrived: %" PRIu64, c.next);
	cr_expect_eq(c2->next, 50000, "every message arrived: %" PRIu64, c2->next);
	cr_expect_eq(c.bad + c2->bad, 0, "%" PRIu64 " out of order or corrupt", c.bad + c2->bad);
	f = open_memstream(&json, &len);
	cr_assert_not_null(f);
	rb2_pipeline_stats_json(pl, f);
	fclose(f);
	at = strstr(json, "\"lanes\": [");
	cr_assert_not_null(at, "%s", json);
	/* Two lanes: lcore 0 towards 1 (both senders), 1 towards 0 (both
	 * receivers); fewer doorbells than WRs on the senders' side. */
	while ((at = strstr(at, "{\"lcore\": ")) != NULL) {
		cr_assert_eq(sscanf(at, "{\"lcore\": %lu, \"peer_lcore\": %lu, \"peer_proc\": \"main\", "
				    "\"transport\": \"loop\", "
				    "\"queues\": %lu, \"wrs_in\": %lu, \"doorbells\": %lu", &lc, &peer,
				    &queues, &wrs_in, &doorbells), 5, "%s", at);
		cr_expect_eq(lc + peer, 1, "lanes between lcores 0 and 1: %s", at);
		cr_expect_eq(queues, 2, "lcore %lu's lane carries both links' halves", lc);
		cr_expect_gt(wrs_in, 0);
		if (lc == 0)
			cr_expect_lt(doorbells, wrs_in, "lcore 0: %lu doorbells for %lu WRs",
				     doorbells, wrs_in);
		found++;
		at++;
	}
	cr_expect_eq(found, 2, "%s", json);
	free(json);
	rb2_pipeline_free(pl);
}
