/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* A plugin whose stage takes a name already registered (a built-in's). */

#include <rb2_stage.h>

static void
noop(struct rb2_stage *st, const struct rb2_msg *msgs, unsigned int n)
{
	(void)st; (void)msgs; (void)n;
}

static const struct rb2_stage_ops dup_ops = {
	.api_version = RB2_STAGE_API_VERSION,
	.name = "measure",
	.process = noop,
};

RB2_STAGE_REGISTER(dup_ops);
