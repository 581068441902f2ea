/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* A plugin whose init() faults: rb2-nf must name the stage.
 *
 * It reads a page mapped PROT_NONE, not NULL: a NULL load is undefined
 * behaviour that UBSan reports and halts on before any SIGSEGV, so the
 * ASan/UBSan build would test the sanitizer, not rb2's handler.
 */

#include <stddef.h>
#include <sys/mman.h>

#include <rb2_stage.h>

static int
crash(struct rb2_stage *st, struct rb2_stage_args *args)
{
	volatile int *guard = mmap(NULL, 4096, PROT_NONE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	(void)st; (void)args;
	if (guard == MAP_FAILED)
		return -1;
	return *guard;
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
