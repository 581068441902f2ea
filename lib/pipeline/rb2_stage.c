/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* A stage instance as its callbacks see it (rb2_stage.h): private state,
 * identity, errors, counters. Arguments are in rb2_stage_args.c, emitting in
 * rb2_stage_emit.c. */

#include <stdarg.h>
#include <stdio.h>

#include "rb2_pipeline_private.h"

void *
rb2_stage_priv(struct rb2_stage *st)
{
	return st->priv;
}

const char *
rb2_stage_name(const struct rb2_stage *st)
{
	return st->name;
}

int
rb2_stage_edge_linked(const struct rb2_stage *st, unsigned int edge)
{
	return edge < st->nedges && st->edges[edge].link != NULL;
}

unsigned int
rb2_stage_lcore(const struct rb2_stage *st)
{
	return st->lcore;
}

int
rb2_stage_socket(const struct rb2_stage *st)
{
	return st->socket;
}

void
rb2_stage_err(struct rb2_stage *st, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(st->err, sizeof(st->err), fmt, ap);
	va_end(ap);
	if (st->inited)
		PL_LOG(ERR, "stage '%s': %s", st->name, st->err);
}

void
rb2_stage_fail(struct rb2_stage *st, const char *fmt, ...)
{
	char why[sizeof(st->failure)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	PL_LOG(ERR, "stage '%s': %s", st->name, why);
	if (st->failure[0] == '\0')
		snprintf(st->failure, sizeof(st->failure), "%s", why);
}

uint64_t *
rb2_stage_counter(struct rb2_stage *st, const char *name)
{
	struct rb2_stage_counter *c;

	if (st->ncounters == STAGE_COUNTERS_MAX)
		return NULL;
	c = &st->counters[st->ncounters++];
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->value = 0;
	return &c->value;
}

int
rb2_stage_stopping(const struct rb2_stage *st)
{
	return st->pl->stop != 0;
}
