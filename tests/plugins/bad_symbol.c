/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* A plugin that needs a function nothing provides. */

#include <rb2_stage.h>

void rb2_function_that_does_not_exist(void);

static void
calls_missing(struct rb2_stage *st, const struct rb2_msg *msgs, unsigned int n)
{
	(void)st; (void)msgs; (void)n;
	rb2_function_that_does_not_exist();
}

static const struct rb2_stage_ops missing_ops = {
	.api_version = RB2_STAGE_API_VERSION,
	.name = "missing",
	.process = calls_missing,
};

RB2_STAGE_REGISTER(missing_ops);
