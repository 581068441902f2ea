/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* A plugin whose init() dereferences NULL: rb2-nf must name the stage. */

#include <stddef.h>

#include <rb2_stage.h>

static int
crash(struct rb2_stage *st, struct rb2_stage_args *args)
{
	volatile int *nowhere = NULL;

	(void)st; (void)args;
	return *nowhere;
}

static void
sink(struct rb2_stage *st, const struct rb2_msg *msgs, unsigned int n)
{
	(void)st; (void)msgs; (void)n;
}

static const struct rb2_stage_ops crash_ops = {
	.api_version = RB2_STAGE_API_VERSION,
	.name = "crasher",
	.init = crash,
	.process = sink,
};

RB2_STAGE_REGISTER(crash_ops);
