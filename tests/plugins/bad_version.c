/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* A plugin built for a stage API this rb2 does not implement. */

#include <rb2_stage.h>

static void
noop(struct rb2_stage *st, const struct rb2_msg *msgs, unsigned int n)
{
	(void)st; (void)msgs; (void)n;
}

static const struct rb2_stage_ops future_ops = {
	.api_version = RB2_STAGE_API_VERSION + 98,
	.name = "future",
	.process = noop,
};

RB2_STAGE_REGISTER(future_ops);
