/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * A pipeline's configuration as a graph (rb2_pipeline_private.h): stages
 * and links from their sections, checked and ranked, each link of a kind
 * (rb2_link.h). rb2_pipeline.c then populates it: the stages' init(), the
 * links' halves, the workers.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_lcore.h>

#include "rb2_link.h"
#include "rb2_pipeline_private.h"

/* The link kinds ([link] via =), the default first (rb2_link.h). */
const struct rb2_link_ops *const rb2_link_kinds[] = {
	&rb2_link_chan_ops,
	&rb2_link_ring_ops,
	&rb2_link_l5_ops,
	NULL,
};

int
rb2_pipeline_cfg_err(struct rb2_pipeline *pl, char *err, size_t errlen, unsigned int line,
	const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (line != 0)
		snprintf(err, errlen, "%s:%u: %s", pl->cfg->path, line, msg);
	else
		snprintf(err, errlen, "%s: %s", pl->cfg->path, msg);
	return -EINVAL;
}

static struct rb2_stage *
stage_by_name(struct rb2_pipeline *pl, const char *name, size_t len)
{
	for (unsigned int i = 0; i < pl->nstages; i++)
		if (strlen(pl->stages[i].name) == len && strncmp(pl->stages[i].name, name, len) == 0)
			return &pl->stages[i];
	return NULL;
}

struct rb2_stage *
rb2_pipeline_stage(struct rb2_pipeline *pl, const char *name)
{
	struct rb2_stage *st = stage_by_name(pl, name, strlen(name));

	return st != NULL && st->local ? st : NULL;
}

static int
parse_uint(const struct rb2_cfg_entry *e, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(e->value, &end, 0);
	if (errno != 0 || end == e->value || *end != '\0' || e->value[0] == '-' ||
	    v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* key = unsigned integer, with its line in the error. */
static int
get_uint(struct rb2_pipeline *pl, struct rb2_cfg_section *s, const char *key,
	 uint64_t def, uint64_t min, uint64_t max, uint64_t *out, char *err, size_t errlen)
{
	struct rb2_cfg_entry *e = rb2_cfg_get(s, key);

	*out = def;
	if (e == NULL)
		return 0;
	if (parse_uint(e, min, max, out) != 0)
		return rb2_pipeline_cfg_err(pl, err, errlen, e->line,
			       "[%s]: invalid %s = '%s': expected an integer in [%" PRIu64
			       ", %" PRIu64 "]", s->name, key, e->value, min, max);
	return 0;
}

static int
no_other_keys(struct rb2_pipeline *pl, struct rb2_cfg_section *s, const char *known,
	      char *err, size_t errlen)
{
	for (unsigned int i = 0; i < s->n; i++)
		if (!s->entries[i].used)
			return rb2_pipeline_cfg_err(pl, err, errlen, s->entries[i].line,
				       "[%s]: unknown key '%s' (known: %s)", s->name,
				       s->entries[i].key, known);
	return 0;
}

static int
add_stage(struct rb2_pipeline *pl, struct rb2_cfg_section *s, const char *name,
	  char *err, size_t errlen)
{
	struct rb2_stage *st = &pl->stages[pl->nstages];
	struct rb2_cfg_entry *type = rb2_cfg_get(s, "type");
	struct rb2_cfg_entry *proc = rb2_cfg_get(s, "proc");
	struct rb2_cfg_entry *lc = rb2_cfg_get(s, "lcore");
	uint64_t lcore;

	if (pl->nstages == STAGES_MAX)
		return rb2_pipeline_cfg_err(pl, err, errlen, s->line, "more than %d stages", STAGES_MAX);
	if (strlen(name) >= STAGE_NAME_MAX || strchr(name, '.') != NULL || strchr(name, ' '))
		return rb2_pipeline_cfg_err(pl, err, errlen, s->line,
			       "stage name '%s': at most %d characters, no '.' or blank",
			       name, STAGE_NAME_MAX - 1);
	if (stage_by_name(pl, name, strlen(name)) != NULL)
		return rb2_pipeline_cfg_err(pl, err, errlen, s->line, "stage '%s' is defined twice", name);
	memset(st, 0, sizeof(*st));
	snprintf(st->name, sizeof(st->name), "%s", name);
	snprintf(st->proc, sizeof(st->proc), "%s", proc != NULL ? proc->value : "main");
	st->line = s->line;
	st->pl = pl;
	st->local = strcmp(st->proc, pl->proc) == 0;
	if (type == NULL)
		return rb2_pipeline_cfg_err(pl, err, errlen, s->line, "stage '%s' has no 'type'", name);
	st->ops = rb2_stage_find(type->value);
	if (st->ops == NULL && st->local)
		return rb2_pipeline_cfg_err(pl, err, errlen, type->line,
			       "stage '%s': unknown type '%s' (rb2-nf --list-stages lists them; "
			       "a plugin's stage needs --plugin PATH)", name, type->value);
	if (lc == NULL)
		return rb2_pipeline_cfg_err(pl, err, errlen, s->line, "stage '%s' has no 'lcore'", name);
	if (parse_uint(lc, 0, RTE_MAX_LCORE - 1, &lcore) != 0)
		return rb2_pipeline_cfg_err(pl, err, errlen, lc->line, "stage '%s': invalid lcore '%s'",
			       name, lc->value);
	st->lcore = (unsigned int)lcore;
	if (st->local && !rte_lcore_is_enabled(st->lcore)) {
		char list[128] = "";
		size_t n = 0;
		unsigned int l;

		RTE_LCORE_FOREACH(l)
			if (n < sizeof(list))
				n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%u", n ? "," : "", l);
		return rb2_pipeline_cfg_err(pl, err, errlen, lc->line,
			       "stage '%s' is placed on lcore %u, which this EAL does not run "
			       "(its lcores: %s): add it to -l, or change 'lcore'",
			       name, st->lcore, list);
	}
	st->socket = st->local ? (int)rte_lcore_to_socket_id(st->lcore) : SOCKET_ID_ANY;
	if (st->ops != NULL) {
		while (st->ops->edges != NULL && st->ops->edges[st->nedges] != NULL)
			st->nedges++;
		st->edges = calloc(st->nedges + 1, sizeof(*st->edges));
		if (st->edges == NULL)
			return rb2_pipeline_cfg_err(pl, err, errlen, s->line, "out of memory");
		for (unsigned int i = 0; i < st->nedges; i++) {
			st->edges[i].name = st->ops->edges[i];
			st->edges[i].pkts = (st->ops->pkt_edges >> i) & 1;
		}
	}
	pl->nstages++;
	return 0;
}

/* "inst.edge" (or "inst" for a single-edge stage) of a link's 'from'. */
static int
resolve_from(struct rb2_pipeline *pl, struct rb2_link *lk, const struct rb2_cfg_entry *e,
	     char *err, size_t errlen)
{
	const char *dot = strchr(e->value, '.');
	size_t n = dot != NULL ? (size_t)(dot - e->value) : strlen(e->value);
	struct rb2_stage *st = stage_by_name(pl, e->value, n);

	if (st == NULL)
		return rb2_pipeline_cfg_err(pl, err, errlen, e->line, "link '%s': no stage named '%.*s'",
			       lk->name, (int)n, e->value);
	lk->from = st;
	if (st->ops == NULL)        /* another process's stage of a type we lack */
		return 0;
	if (st->nedges == 0)
		return rb2_pipeline_cfg_err(pl, err, errlen, e->line,
			       "link '%s': stage '%s' (type %s) is a sink: it has no next edge",
			       lk->name, st->name, st->ops->name);
	if (dot == NULL) {
		if (st->nedges > 1)
			return rb2_pipeline_cfg_err(pl, err, errlen, e->line,
				       "link '%s': stage '%s' has several edges: name one, as %s.%s",
				       lk->name, st->name, st->name, st->edges[0].name);
		lk->edge = 0;
	} else {
		unsigned int i;

		for (i = 0; i < st->nedges && strcmp(st->edges[i].name, dot + 1) != 0; i++)
			;
		if (i == st->nedges)
			return rb2_pipeline_cfg_err(pl, err, errlen, e->line,
				       "link '%s': stage '%s' (type %s) has no edge '%s'",
				       lk->name, st->name, st->ops->name, dot + 1);
		lk->edge = i;
	}
	if (st->edges[lk->edge].link != NULL)
		return rb2_pipeline_cfg_err(pl, err, errlen, e->line,
			       "link '%s': edge %s.%s is already linked by link '%s' (line %u); "
			       "an edge has one next stage",
			       lk->name, st->name, st->edges[lk->edge].name,
			       st->edges[lk->edge].link->name, st->edges[lk->edge].link->line);
	st->edges[lk->edge].link = lk;
	return 0;
}

static int
add_link(struct rb2_pipeline *pl, struct rb2_cfg_section *s, const char *name,
	 char *err, size_t errlen)
{
	struct rb2_link *lk = &pl->links[pl->nlinks];
	struct rb2_cfg_entry *from = rb2_cfg_get(s, "from");
	struct rb2_cfg_entry *to = rb2_cfg_get(s, "to");
	struct rb2_cfg_entry *xp = rb2_cfg_get(s, "transport");
	struct rb2_cfg_entry *peer = rb2_cfg_get(s, "peer");
	struct rb2_cfg_entry *carry = rb2_cfg_get(s, "carry");
	struct rb2_cfg_entry *via = rb2_cfg_get(s, "via");
	struct rb2_cfg_entry *preset;
	uint64_t v[7];
	char why[256];
	int ret;

	if (pl->nlinks == LINKS_MAX)
		return rb2_pipeline_cfg_err(pl, err, errlen, s->line, "more than %d links", LINKS_MAX);
	memset(lk, 0, sizeof(*lk));
	if (strlen(name) >= sizeof(lk->name) || strchr(name, ' ') != NULL)
		return rb2_pipeline_cfg_err(pl, err, errlen, s->line,
			       "link name '%s': at most %zu characters, no blank (it names the "
			       "channel)", name, sizeof(lk->name) - 1);
	for (unsigned int i = 0; i < pl->nlinks; i++)
		if (strcmp(pl->links[i].name, name) == 0)
			return rb2_pipeline_cfg_err(pl, err, errlen, s->line, "link '%s' is defined twice", name);
	snprintf(lk->name, sizeof(lk->name), "%s", name);
	lk->line = s->line;
	if (from == NULL || to == NULL)
		return rb2_pipeline_cfg_err(pl, err, errlen, s->line, "link '%s' needs 'from = STAGE[.EDGE]' "
			       "and 'to = STAGE'", name);
	ret = resolve_from(pl, lk, from, err, errlen);
	if (ret != 0)
		return ret;
	lk->to = stage_by_name(pl, to->value, strlen(to->value));
	if (lk->to == NULL)
		return rb2_pipeline_cfg_err(pl, err, errlen, to->line, "link '%s': no stage named '%s'",
			       name, to->value);
	if (lk->to->ops != NULL && lk->to->ops->process == NULL)
		return rb2_pipeline_cfg_err(pl, err, errlen, to->line,
			       "link '%s': stage '%s' (type %s) is a source: it takes no input",
			       name, lk->to->name, lk->to->ops->name);
	if (lk->to == lk->from)
		return rb2_pipeline_cfg_err(pl, err, errlen, to->line, "link '%s' loops on stage '%s'",
			       name, lk->to->name);
	snprintf(lk->transport, sizeof(lk->transport), "%s", xp != NULL ? xp->value : "shm");
	snprintf(lk->peer, sizeof(lk->peer), "%s", peer != NULL ? peer->value : name);
	rb2_chan_params_init(&lk->params);
	if (get_uint(pl, s, "slots", lk->params.slots, 2, 1u << 24, &v[0], err, errlen) ||
	    get_uint(pl, s, "slot_size", lk->params.slot_size, 64, 1u << 30, &v[1], err, errlen) ||
	    get_uint(pl, s, "alpha", lk->params.alpha, 1, 1u << 24, &v[2], err, errlen) ||
	    get_uint(pl, s, "beta", lk->params.beta, 1, 1u << 24, &v[3], err, errlen) ||
	    get_uint(pl, s, "gamma", lk->params.gamma, 1, 1u << 24, &v[4], err, errlen) ||
	    get_uint(pl, s, "timeout_ms", 60000, 1, 3600000, &v[5], err, errlen) ||
	    get_uint(pl, s, "eager", lk->params.eager, 0, RB2_EAGER_AUTO, &v[6], err, errlen))
		return -EINVAL;
	lk->params.slots = (uint32_t)v[0];
	lk->params.slot_size = (uint32_t)v[1];
	lk->params.alpha = (uint32_t)v[2];
	lk->params.beta = (uint32_t)v[3];
	lk->params.gamma = (uint32_t)v[4];
	lk->timeout_ms = (unsigned int)v[5];
	lk->params.eager = (uint32_t)v[6];
	/* A design of the paper instead of alpha/beta/gamma and policies. */
	if ((preset = rb2_cfg_get(s, "preset")) != NULL &&
	    rb2_chan_params_preset(&lk->params, preset->value) != 0)
		return rb2_pipeline_cfg_err(pl, err, errlen, preset->line, "link '%s': unknown preset '%s' "
			       "(" RB2_CHAN_PRESET_NAMES ")", name, preset->value);
	if (rb2_chan_params_check(&lk->params, why, sizeof(why)) != 0)
		return rb2_pipeline_cfg_err(pl, err, errlen, s->line, "link '%s': %s", name, why);
	if (carry != NULL) {
		if (strcmp(carry->value, "pointers") == 0)
			lk->carry = LINK_CARRY_PTRS;
		else if (strcmp(carry->value, "descriptors") == 0) {
			lk->carry = LINK_CARRY_PTRS;
			lk->carry_desc = true;
		}
		else if (strcmp(carry->value, "bytes") == 0)
			lk->carry = LINK_CARRY_BYTES;
		else if (strcmp(carry->value, "auto") != 0)
			return rb2_pipeline_cfg_err(pl, err, errlen, carry->line, "link '%s': carry = '%s': "
				       "expected auto, pointers, descriptors or bytes", name,
				       carry->value);
	}
	lk->ops = &rb2_link_chan_ops;
	if (via != NULL) {
		char kinds[256];
		size_t at = 0;

		lk->ops = NULL;
		for (unsigned int k = 0; rb2_link_kinds[k] != NULL && lk->ops == NULL; k++)
			if (strcmp(via->value, rb2_link_kinds[k]->via) == 0)
				lk->ops = rb2_link_kinds[k];
		for (unsigned int k = 0; rb2_link_kinds[k] != NULL && lk->ops == NULL; k++)
			at += (size_t)snprintf(kinds + at, at < sizeof(kinds) ? sizeof(kinds) - at : 0,
					       "%s%s (%s)", k == 0 ? "" : rb2_link_kinds[k + 1] ?
					       ", " : " or ", rb2_link_kinds[k]->via,
					       rb2_link_kinds[k]->about);
		if (lk->ops == NULL)
			return rb2_pipeline_cfg_err(pl, err, errlen, via->line, "link '%s': via = "
						    "'%s': expected %s", name, via->value, kinds);
	}
	ret = no_other_keys(pl, s, "from, to, transport, peer, slots, slot_size, alpha, beta, "
			    "gamma, eager, preset, timeout_ms, carry, via", err, errlen);
	if (ret != 0)
		return ret;
	lk->to->n_in++;
	pl->nlinks++;
	return 0;
}

/* Kahn's algorithm over every stage (all processes): ranks, or a cycle. */
static int
rank_stages(struct rb2_pipeline *pl, char *err, size_t errlen)
{
	unsigned int indeg[STAGES_MAX] = { 0 }, done = 0, rank = 0;
	bool placed[STAGES_MAX] = { false };

	for (unsigned int i = 0; i < pl->nlinks; i++)
		indeg[pl->links[i].to - pl->stages]++;
	while (done < pl->nstages) {
		unsigned int found = 0;

		for (unsigned int i = 0; i < pl->nstages; i++) {
			if (placed[i] || indeg[i] != 0)
				continue;
			placed[i] = true;
			pl->stages[i].topo = rank++;
			found++;
			for (unsigned int j = 0; j < pl->nlinks; j++)
				if (pl->links[j].from == &pl->stages[i])
					indeg[pl->links[j].to - pl->stages]--;
		}
		if (found == 0) {
			for (unsigned int i = 0; i < pl->nstages; i++)
				if (!placed[i])
					return rb2_pipeline_cfg_err(pl, err, errlen, pl->stages[i].line,
						       "the links form a cycle through stage '%s'",
						       pl->stages[i].name);
		}
		done += found;
	}
	return 0;
}

/* A link between a packet edge and a stage that takes packets, or between
 * neither: anything else is refused, naming both ends. */
static int
type_links(struct rb2_pipeline *pl, char *err, size_t errlen)
{
	for (unsigned int i = 0; i < pl->nlinks; i++) {
		struct rb2_link *lk = &pl->links[i];
		const char *why;
		int out = lk->from->ops != NULL ? (int)((lk->from->ops->pkt_edges >> lk->edge) & 1) : -1;
		int in = lk->to->ops != NULL ? (lk->to->ops->takes_pkts != 0) : -1;

		if (out >= 0 && in >= 0 && out != in)
			return rb2_pipeline_cfg_err(pl, err, errlen, lk->line,
				       "link '%s': %s.%s emits %s, but stage '%s' (type %s) takes %s",
				       lk->name, lk->from->name, lk->from->edges[lk->edge].name,
				       out ? "packets" : "messages", lk->to->name, lk->to->ops->name,
				       in ? "packets (put a parse stage between them?)" : "messages");
		lk->pkts = out == 1 || in == 1;
		why = lk->ops->check != NULL ? lk->ops->check(lk) : NULL;
		if (why != NULL)
			return rb2_pipeline_cfg_err(pl, err, errlen, lk->line, "link '%s': %s",
						    lk->name, why);
		if (lk->direct) {
			lk->from->edges[lk->edge].ptrs = true;
			lk->from->edges[lk->edge].ptrs_max = RB2_PKT_PTRS_MAX;
		}
	}
	return 0;
}

/*
 * A stage with next edges of which none is linked sends its output nowhere:
 * a configuration error (a source would run and measure nothing). One with
 * some edges unlinked may mean it (a filter's rejects): a warning, and what
 * it emits there fails the run.
 */
static int
check_edges(struct rb2_pipeline *pl, char *err, size_t errlen)
{
	for (unsigned int i = 0; i < pl->nstages; i++) {
		struct rb2_stage *st = &pl->stages[i];
		unsigned int linked = 0, optional = 0;

		if (!st->local || st->nedges == 0)
			continue;
		for (unsigned int j = 0; j < st->nedges; j++) {
			linked += st->edges[j].link != NULL;
			optional += (st->ops->optional_edges >> j & 1) != 0;
		}
		if (linked == 0 && optional < st->nedges)
			return rb2_pipeline_cfg_err(pl, err, errlen, st->line,
				       "stage '%s' (type %s) sends its output nowhere: no [link] has "
				       "from = %s.%s%s; link it to a stage", st->name, st->ops->name,
				       st->name, st->edges[0].name, st->nedges > 1 ? " (or another edge)" : "");
		for (unsigned int j = 0; j < st->nedges; j++)
			if (st->edges[j].link == NULL && !(st->ops->optional_edges >> j & 1))
				PL_LOG(WARNING, "%s:%u: edge %s.%s is not linked: what the stage emits "
				       "there is not delivered, and fails the run", pl->cfg->path,
				       st->line, st->name, st->edges[j].name);
	}
	return 0;
}

/*
 * The configuration (pl->cfg) as a graph: its stages (@secs[i] the section
 * of stage i) and links, [pipeline]'s settings, the stages ranked, this
 * process's stages found, every edge linked once, same-lcore links made
 * queues, and every link's two ends of one type (packets or messages) and
 * of a kind that can join them. Nothing is opened or started here.
 */
/*
 * "enabled = no" leaves a [stage] or [link] section out, as if it were not
 * written (a configuration's optional part, switched by a variable:
 * enabled = ${export:-no}); so does naming a stage that is left out, for a
 * link. @return 1 (in), 0 (left out) or -EINVAL.
 */
static int
yes_no(const char *v)
{
	if (strcmp(v, "yes") == 0 || strcmp(v, "true") == 0 || strcmp(v, "1") == 0)
		return 1;
	if (strcmp(v, "no") == 0 || strcmp(v, "false") == 0 || strcmp(v, "0") == 0)
		return 0;
	return -1;
}

static int
section_enabled(struct rb2_pipeline *pl, struct rb2_cfg_section *s, char *err, size_t errlen)
{
	struct rb2_cfg_entry *e = rb2_cfg_get(s, "enabled");
	const char *ends[2] = { "from", "to" };

	if (e != NULL && yes_no(e->value) < 0)
		return rb2_pipeline_cfg_err(pl, err, errlen, e->line, "[%s]: enabled = %s: "
			       "expected yes or no", s->name, e->value);
	if (e != NULL && yes_no(e->value) == 0)
		return 0;
	if (strncmp(s->name, "link ", 5) != 0)
		return 1;
	for (unsigned int k = 0; k < 2; k++) {
		struct rb2_cfg_entry *end = rb2_cfg_get(s, ends[k]);
		size_t n;

		if (end == NULL)
			continue;
		n = strcspn(end->value, ".");
		for (unsigned int i = 0; i < pl->cfg->n; i++) {
			struct rb2_cfg_section *t = &pl->cfg->sections[i];
			struct rb2_cfg_entry *te;

			if (strncmp(t->name, "stage ", 6) != 0 || strlen(t->name + 6) != n ||
			    strncmp(t->name + 6, end->value, n) != 0)
				continue;
			te = rb2_cfg_get(t, "enabled");
			if (te != NULL && yes_no(te->value) == 0)
				return 0;
		}
	}
	return 1;
}

int
rb2_pipeline_graph(struct rb2_pipeline *pl, struct rb2_cfg_section **secs, char *err,
		   size_t errlen)
{
	struct rb2_cfg_section *top = NULL;
	unsigned int nlocal = 0;
	uint64_t burst, stop_ms, idle_sleep, sleep_max_us, lanes;

	/* Stages first (links name them), then links. */
	for (int pass = 0; pass < 2; pass++)
		for (unsigned int i = 0; i < pl->cfg->n; i++) {
			struct rb2_cfg_section *s = &pl->cfg->sections[i];
			int ret = section_enabled(pl, s, err, errlen);

			if (ret < 0)
				return -EINVAL;
			if (ret == 0)
				continue;
			ret = 0;
			if (strncmp(s->name, "stage ", 6) == 0) {
				if (pass == 0) {
					secs[pl->nstages] = s;
					ret = add_stage(pl, s, s->name + 6, err, errlen);
				}
			} else if (strncmp(s->name, "link ", 5) == 0) {
				if (pass == 1)
					ret = add_link(pl, s, s->name + 5, err, errlen);
			} else if (strcmp(s->name, "pipeline") == 0) {
				top = s;
			} else if (pass == 0) {
				ret = rb2_pipeline_cfg_err(pl, err, errlen, s->line, "unknown section [%s]: expected "
					      "[pipeline], [stage NAME] or [link NAME]", s->name);
			}
			if (ret != 0)
				return -EINVAL;
		}
	if (pl->nstages == 0)
		return rb2_pipeline_cfg_err(pl, err, errlen, 0, "no [stage NAME] section");
	burst = 32;
	stop_ms = 10000;
	idle_sleep = 0;
	sleep_max_us = 10000;
	lanes = 0;
	if (top != NULL && (get_uint(pl, top, "burst", 32, 1, RB2_STAGE_BURST_MAX, &burst,
				     err, errlen) != 0 ||
			    get_uint(pl, top, "stop_timeout_ms", 10000, 1, 3600000, &stop_ms,
				     err, errlen) != 0 ||
			    get_uint(pl, top, "idle_sleep", 0, 0, UINT32_MAX, &idle_sleep,
				     err, errlen) != 0 ||
			    get_uint(pl, top, "sleep_max_us", 10000, 1, 1000000, &sleep_max_us,
				     err, errlen) != 0 ||
			    get_uint(pl, top, "lanes", 0, 0, 1, &lanes, err, errlen) != 0 ||
			    no_other_keys(pl, top, "burst, stop_timeout_ms, idle_sleep, sleep_max_us, "
					  "lanes", err, errlen) != 0))
		return -EINVAL;
	pl->lanes = lanes != 0;
	pl->burst = (unsigned int)burst;
	pl->stop_timeout_ms = (unsigned int)stop_ms;
	pl->idle_sleep = (unsigned int)idle_sleep;
	pl->sleep_max_us = (unsigned int)sleep_max_us;
	if (rank_stages(pl, err, errlen) != 0)
		return -EINVAL;
	for (unsigned int i = 0; i < pl->nstages; i++)
		nlocal += pl->stages[i].local;
	if (nlocal == 0) {
		rb2_pipeline_cfg_err(pl, err, errlen, 0, "no stage has proc = %s (the --proc of this process)",
			pl->proc);
		return -EINVAL;
	}
	if (check_edges(pl, err, errlen) != 0)
		return -EINVAL;
	/* Same-lcore links are queues, not channels. */
	for (unsigned int i = 0; i < pl->nlinks; i++) {
		struct rb2_link *lk = &pl->links[i];

		if (lk->from->local && lk->to->local && lk->from->lcore == lk->to->lcore) {
			lk->direct = true;
			lk->from->edges[lk->edge].next = lk->to;
		}
	}
	if (type_links(pl, err, errlen) != 0)
		return -EINVAL;
	return 0;
}
