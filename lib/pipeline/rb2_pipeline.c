/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Pipelines from configurations (rb2_pipeline_load(), rb2_pipeline_free()):
 * the stages and links of a file, checked with the file's lines in every
 * error, ranked, initialised, connected and placed on their lcores' workers.
 * Running is rb2_pipeline_worker.c's, statistics rb2_pipeline_stats.c's.
 */

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_ring.h>
#include <rte_string_fns.h>

#include <rb2_l5.h>
#include <rb2_xport.h>
#include <rb2_xport_lane.h>

#include "rb2_pipeline_private.h"

RTE_LOG_REGISTER(rb2_pipeline_logtype, rb2.pipeline, INFO);

static int
cfg_err(struct rb2_pipeline *pl, char *err, size_t errlen, unsigned int line,
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
		return cfg_err(pl, err, errlen, e->line,
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
			return cfg_err(pl, err, errlen, s->entries[i].line,
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
		return cfg_err(pl, err, errlen, s->line, "more than %d stages", STAGES_MAX);
	if (strlen(name) >= STAGE_NAME_MAX || strchr(name, '.') != NULL || strchr(name, ' '))
		return cfg_err(pl, err, errlen, s->line,
			       "stage name '%s': at most %d characters, no '.' or blank",
			       name, STAGE_NAME_MAX - 1);
	if (stage_by_name(pl, name, strlen(name)) != NULL)
		return cfg_err(pl, err, errlen, s->line, "stage '%s' is defined twice", name);
	memset(st, 0, sizeof(*st));
	snprintf(st->name, sizeof(st->name), "%s", name);
	snprintf(st->proc, sizeof(st->proc), "%s", proc != NULL ? proc->value : "main");
	st->line = s->line;
	st->pl = pl;
	st->local = strcmp(st->proc, pl->proc) == 0;
	if (type == NULL)
		return cfg_err(pl, err, errlen, s->line, "stage '%s' has no 'type'", name);
	st->ops = rb2_stage_find(type->value);
	if (st->ops == NULL && st->local)
		return cfg_err(pl, err, errlen, type->line,
			       "stage '%s': unknown type '%s' (rb2-nf --list-stages lists them; "
			       "a plugin's stage needs --plugin PATH)", name, type->value);
	if (lc == NULL)
		return cfg_err(pl, err, errlen, s->line, "stage '%s' has no 'lcore'", name);
	if (parse_uint(lc, 0, RTE_MAX_LCORE - 1, &lcore) != 0)
		return cfg_err(pl, err, errlen, lc->line, "stage '%s': invalid lcore '%s'",
			       name, lc->value);
	st->lcore = (unsigned int)lcore;
	if (st->local && !rte_lcore_is_enabled(st->lcore)) {
		char list[128] = "";
		size_t n = 0;
		unsigned int l;

		RTE_LCORE_FOREACH(l)
			if (n < sizeof(list))
				n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%u", n ? "," : "", l);
		return cfg_err(pl, err, errlen, lc->line,
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
			return cfg_err(pl, err, errlen, s->line, "out of memory");
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
		return cfg_err(pl, err, errlen, e->line, "link '%s': no stage named '%.*s'",
			       lk->name, (int)n, e->value);
	lk->from = st;
	if (st->ops == NULL)        /* another process's stage of a type we lack */
		return 0;
	if (st->nedges == 0)
		return cfg_err(pl, err, errlen, e->line,
			       "link '%s': stage '%s' (type %s) is a sink: it has no next edge",
			       lk->name, st->name, st->ops->name);
	if (dot == NULL) {
		if (st->nedges > 1)
			return cfg_err(pl, err, errlen, e->line,
				       "link '%s': stage '%s' has several edges: name one, as %s.%s",
				       lk->name, st->name, st->name, st->edges[0].name);
		lk->edge = 0;
	} else {
		unsigned int i;

		for (i = 0; i < st->nedges && strcmp(st->edges[i].name, dot + 1) != 0; i++)
			;
		if (i == st->nedges)
			return cfg_err(pl, err, errlen, e->line,
				       "link '%s': stage '%s' (type %s) has no edge '%s'",
				       lk->name, st->name, st->ops->name, dot + 1);
		lk->edge = i;
	}
	if (st->edges[lk->edge].link != NULL)
		return cfg_err(pl, err, errlen, e->line,
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
		return cfg_err(pl, err, errlen, s->line, "more than %d links", LINKS_MAX);
	memset(lk, 0, sizeof(*lk));
	if (strlen(name) >= sizeof(lk->name) || strchr(name, ' ') != NULL)
		return cfg_err(pl, err, errlen, s->line,
			       "link name '%s': at most %zu characters, no blank (it names the "
			       "channel)", name, sizeof(lk->name) - 1);
	for (unsigned int i = 0; i < pl->nlinks; i++)
		if (strcmp(pl->links[i].name, name) == 0)
			return cfg_err(pl, err, errlen, s->line, "link '%s' is defined twice", name);
	snprintf(lk->name, sizeof(lk->name), "%s", name);
	lk->line = s->line;
	if (from == NULL || to == NULL)
		return cfg_err(pl, err, errlen, s->line, "link '%s' needs 'from = STAGE[.EDGE]' "
			       "and 'to = STAGE'", name);
	ret = resolve_from(pl, lk, from, err, errlen);
	if (ret != 0)
		return ret;
	lk->to = stage_by_name(pl, to->value, strlen(to->value));
	if (lk->to == NULL)
		return cfg_err(pl, err, errlen, to->line, "link '%s': no stage named '%s'",
			       name, to->value);
	if (lk->to->ops != NULL && lk->to->ops->process == NULL)
		return cfg_err(pl, err, errlen, to->line,
			       "link '%s': stage '%s' (type %s) is a source: it takes no input",
			       name, lk->to->name, lk->to->ops->name);
	if (lk->to == lk->from)
		return cfg_err(pl, err, errlen, to->line, "link '%s' loops on stage '%s'",
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
		return cfg_err(pl, err, errlen, preset->line, "link '%s': unknown preset '%s' "
			       "(" RB2_CHAN_PRESET_NAMES ")", name, preset->value);
	if (rb2_chan_params_check(&lk->params, why, sizeof(why)) != 0)
		return cfg_err(pl, err, errlen, s->line, "link '%s': %s", name, why);
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
			return cfg_err(pl, err, errlen, carry->line, "link '%s': carry = '%s': "
				       "expected auto, pointers, descriptors or bytes", name,
				       carry->value);
	}
	if (via != NULL) {
		if (strcmp(via->value, "rte_ring") == 0)
			lk->via_ring = true;
		else if (strcmp(via->value, "l5") == 0)
			lk->via_l5 = true;
		else if (strcmp(via->value, "rb2") != 0)
			return cfg_err(pl, err, errlen, via->line, "link '%s': via = '%s': expected "
				       "rb2 (an RB2 channel), rte_ring (DPDK's ring of mbuf "
				       "pointers, a baseline) or l5 (L5's own ring, a baseline)",
				       name, via->value);
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
					return cfg_err(pl, err, errlen, pl->stages[i].line,
						       "the links form a cycle through stage '%s'",
						       pl->stages[i].name);
		}
		done += found;
	}
	return 0;
}

static struct rb2_xport *
xport_get(struct rb2_pipeline *pl, const char *spec)
{
	for (unsigned int i = 0; i < pl->nxports; i++)
		if (strcmp(pl->xports[i].spec, spec) == 0)
			return pl->xports[i].xp;
	if (pl->nxports == XPORTS_MAX)
		return NULL;
	pl->xports[pl->nxports].xp = rb2_xport_open_spec(spec);
	if (pl->xports[pl->nxports].xp == NULL)
		return NULL;
	/* Not snprintf: spec may be a field of *pl (a link's transport). */
	rte_strscpy(pl->xports[pl->nxports].spec, spec, sizeof(pl->xports[0].spec));
	return pl->xports[pl->nxports++].xp;
}

/*
 * How a packet link carries its packets: mbuf pointers where both ends share
 * memory (a transport without RB2_XPORT_CAP_REMOTE: the lcores of a process,
 * or a DPDK process group, where every hugepage is mapped at the same
 * address), else their bytes; `carry` may ask for either.
 */
static int
link_carry(struct rb2_pipeline *pl, struct rb2_link *lk, struct rb2_xport *xp,
	   char *err, size_t errlen)
{
	bool shared = (rb2_xport_caps(xp) & RB2_XPORT_CAP_REMOTE) == 0;
	struct rb2_edge *e = &lk->from->edges[lk->edge];

	if (!lk->pkts)
		return 0;
	if (lk->carry == LINK_CARRY_PTRS && !shared)
		return cfg_err(pl, err, errlen, lk->line, "link '%s': carry = %s, but over "
			       "transport '%s' the peers do not share memory: use carry = bytes "
			       "(or auto)", lk->name, lk->carry_desc ? "descriptors" : "pointers",
			       lk->transport);
	if (lk->carry == LINK_CARRY_AUTO)
		lk->carry = shared ? LINK_CARRY_PTRS : LINK_CARRY_BYTES;
	if (lk->carry == LINK_CARRY_PTRS) {
		/* A read of the ring gives the stage at most a burst of packets:
		 * holding more only spreads the consumer over more mbufs. */
		unsigned int per = lk->tx != NULL ?
			RTE_MIN(RB2_PKT_PTRS_MAX, rb2_tx_max_msg(lk->tx) /
				(unsigned int)sizeof(struct rb2_pkt_desc)) : RB2_PKT_PTRS_MAX;

		lk->peek = RTE_MAX(1u, RTE_MIN(pl->burst, RB2_STAGE_BURST_MAX / RTE_MAX(per, 1u)));
	}
	if (lk->tx == NULL)
		return 0;
	e->ptrs = lk->carry == LINK_CARRY_PTRS;
	e->desc = e->ptrs;
	e->ptrs_max = RTE_MIN(RB2_PKT_PTRS_MAX,
			      rb2_tx_max_msg(lk->tx) / (unsigned int)sizeof(struct rb2_pkt_desc));
	if (e->ptrs && e->ptrs_max == 0)
		return cfg_err(pl, err, errlen, lk->line, "link '%s': a message cannot hold one "
			       "packet's descriptor (%zu bytes): raise slot_size", lk->name,
			       sizeof(struct rb2_pkt_desc));
	return 0;
}

/* A link between a packet edge and a stage that takes packets, or between
 * neither: anything else is refused, naming both ends. */
static int
type_links(struct rb2_pipeline *pl, char *err, size_t errlen)
{
	for (unsigned int i = 0; i < pl->nlinks; i++) {
		struct rb2_link *lk = &pl->links[i];
		int out = lk->from->ops != NULL ? (int)((lk->from->ops->pkt_edges >> lk->edge) & 1) : -1;
		int in = lk->to->ops != NULL ? (lk->to->ops->takes_pkts != 0) : -1;

		if (out >= 0 && in >= 0 && out != in)
			return cfg_err(pl, err, errlen, lk->line,
				       "link '%s': %s.%s emits %s, but stage '%s' (type %s) takes %s",
				       lk->name, lk->from->name, lk->from->edges[lk->edge].name,
				       out ? "packets" : "messages", lk->to->name, lk->to->ops->name,
				       in ? "packets (put a parse stage between them?)" : "messages");
		lk->pkts = out == 1 || in == 1;
		if (lk->via_ring && (!lk->pkts || lk->direct || !lk->from->local || !lk->to->local ||
				     lk->carry == LINK_CARRY_BYTES))
			return cfg_err(pl, err, errlen, lk->line, "link '%s': via = rte_ring carries "
				       "mbuf pointers between two lcores of this process: it needs a "
				       "packet edge, stages on two lcores of one proc, and carry = "
				       "pointers", lk->name);
		if (lk->via_l5 && (lk->pkts || lk->direct || !lk->from->local || !lk->to->local))
			return cfg_err(pl, err, errlen, lk->line, "link '%s': via = l5 carries "
				       "messages between two lcores of this process (L5's ring "
				       "connects its halves in one process): it needs a message edge "
				       "and stages on two lcores of one proc", lk->name);
		if (lk->direct) {
			lk->from->edges[lk->edge].ptrs = true;
			lk->from->edges[lk->edge].ptrs_max = RB2_PKT_PTRS_MAX;
		}
	}
	return 0;
}

/* Start the stages that have a start() (ports), upstream first; give the
 * workers of stages that take packets their burst. */
static int
start_stages(struct rb2_pipeline *pl, char *err, size_t errlen)
{
	for (unsigned int i = 0; i < pl->nstages; i++) {
		struct rb2_stage *st = &pl->stages[i];

		if (!st->local || !st->ops->takes_pkts || st->w->pkb != NULL)
			continue;
		rb2_pkt_init();
		st->w->pkb = rte_zmalloc_socket("rb2_pkt_burst", sizeof(*st->w->pkb),
						RTE_CACHE_LINE_SIZE, st->socket);
		if (st->w->pkb == NULL)
			return cfg_err(pl, err, errlen, st->line, "out of memory");
	}
	for (unsigned int r = 0; r < pl->nstages; r++)
		for (unsigned int i = 0; i < pl->nstages; i++) {
			struct rb2_stage *st = &pl->stages[i];
			int ret;

			if (st->topo != r || !st->local || st->ops->start == NULL)
				continue;
			ret = st->ops->start(st);
			if (ret < 0)
				return cfg_err(pl, err, errlen, st->line, "stage '%s' (type %s) cannot "
					       "start: %s", st->name, st->ops->name,
					       st->err[0] ? st->err : strerror(-ret));
		}
	return 0;
}

/*
 * [pipeline] lanes: the lane this process's @lcore posts into towards the
 * lcore of stage @peer (here or in another process) on @xp, made on first
 * use. A lane's QP connects to one other lane's QP, so there is one per
 * (lcore, peer process and lcore, transport); both directions between two
 * lcores share that QP pair. Across processes the peer's own lane is the
 * other end: the first channel's connect joins the two lanes' QPs, and the
 * others' descriptors go out of band (rb2_xport_lane.h). NULL (with the
 * reason logged) where the link keeps a QP of its own.
 */
static struct rb2_xport_lane *
lane_get(struct rb2_pipeline *pl, struct rb2_xport *xp, unsigned int lcore,
	 const struct rb2_stage *peer)
{
	struct rb2_worker *w = &pl->workers[lcore];
	struct rb2_xport_lane *la;

	for (unsigned int i = 0; i < pl->nlanes; i++)
		if (pl->lane_tab[i].xp == xp && pl->lane_tab[i].lcore == lcore &&
		    pl->lane_tab[i].peer == peer->lcore &&
		    strcmp(pl->lane_tab[i].peer_proc, peer->proc) == 0)
			return pl->lane_tab[i].lane;
	if (pl->nlanes == LANES_MAX || w->nlanes == WORKER_LANES_MAX) {
		PL_LOG(NOTICE, "lanes: lcore %u has %u lanes (at most %d, %d in all): its link to lcore %u keeps a QP of its own",
		       lcore, w->nlanes, WORKER_LANES_MAX, LANES_MAX, peer->lcore);
		return NULL;
	}
	la = rb2_xport_lane_create(xp, &(struct rb2_xport_lane_params){ .lcore_id = lcore });
	if (la == NULL) {
		PL_LOG(NOTICE, "lanes: no lane on transport '%s' for lcore %u (%s): its channels keep QPs of their own",
		       rb2_xport_name(xp), lcore, rte_strerror(rte_errno));
		return NULL;
	}
	pl->lane_tab[pl->nlanes].xp = xp;
	pl->lane_tab[pl->nlanes].lcore = lcore;
	pl->lane_tab[pl->nlanes].peer = peer->lcore;
	pl->lane_tab[pl->nlanes].peer_proc = peer->proc;
	pl->lane_tab[pl->nlanes++].lane = la;
	w->lanes[w->nlanes++] = la;
	return la;
}

/* May this link's halves post into lanes? A transport that posts WRs (not
 * load/store), one that exchanges descriptors out of band if the other half
 * is in another process, and a channel that needs no receives
 * (WRITE_WITH_IMM, a sleeping receiver's wake-up): lanes carry one-sided
 * WRs only. Both processes of a link read the same configuration and open
 * the same transport, so both halves agree. */
static bool
link_on_lanes(const struct rb2_pipeline *pl, const struct rb2_link *lk, struct rb2_xport *xp,
	      const struct rb2_chan_params *p)
{
	const char *why = NULL;

	if (!pl->lanes)
		return false;
	if (rb2_xport_caps(xp) & RB2_XPORT_CAP_LOADSTORE)
		why = "its transport stores straight into the peer's memory and posts nothing";
	else if ((!lk->from->local || !lk->to->local) && !(rb2_xport_caps(xp) & RB2_XPORT_CAP_OOB))
		why = "its other half is in another process, which its transport's lanes do not reach";
	else if (p->tail_sync == RB2_TAIL_WRITE_IMM || (p->flags & RB2_CHAN_F_SLEEP))
		why = "it needs receive completions (WRITE_WITH_IMM, or idle_sleep's wake-ups)";
	if (why != NULL)
		PL_LOG(INFO, "link '%s' keeps a QP of its own: %s", lk->name, why);
	return why == NULL;
}

/* via = l5: L5's ring of slots x slot_size bytes (as rb2-perf sizes it),
 * whose largest message is half of it as a channel's is; the sender builds
 * each message in a buffer of its own and L5 copies it in, the receiver
 * copies messages out into another (L5's send() and receive()). */
static int
open_l5(struct rb2_pipeline *pl, struct rb2_link *lk, struct rb2_xport *xp, char *err,
	size_t errlen)
{
	size_t bytes = rb2_l5_ring_bytes(lk->params.slots, lk->params.slot_size);
	struct rb2_edge *e = &lk->from->edges[lk->edge];

	lk->l5_max = (uint32_t)RTE_MIN(bytes / 2 - 16, (size_t)UINT32_MAX / 2);
	lk->l5 = rb2_l5_create(xp, lk->name, bytes, lk->l5_max, lk->from->lcore, lk->to->lcore);
	if (lk->l5 == NULL)
		return cfg_err(pl, err, errlen, lk->line, "link '%s': cannot create L5's ring "
			       "(%zu B) over '%s': %s (the log says more)", lk->name, bytes,
			       lk->transport, rte_strerror(rte_errno));
	lk->l5_cap = RTE_MAX((size_t)L5_RX_BUF, (size_t)lk->l5_max);
	lk->l5_buf = rte_malloc_socket("rb2_l5_rx", lk->l5_cap, RTE_CACHE_LINE_SIZE,
				       lk->to->socket);
	lk->l5_msg = rte_malloc_socket("rb2_l5_tx", lk->l5_max, RTE_CACHE_LINE_SIZE,
				       lk->from->socket);
	if (lk->l5_buf == NULL || lk->l5_msg == NULL)
		return cfg_err(pl, err, errlen, lk->line, "link '%s': out of memory for L5's "
			       "buffers (%zu B): raise the EAL's memory (-m)", lk->name,
			       lk->l5_cap + lk->l5_max);
	e->l5 = lk->l5;
	e->l5_msg = lk->l5_msg;
	return 0;
}

/* Create this process's halves of a link's channel and connect them (direct
 * links, both ends on one lcore, have no channel). */
static int
open_link(struct rb2_pipeline *pl, struct rb2_link *lk, char *err, size_t errlen)
{
	bool tx_here = lk->from->local, rx_here = lk->to->local;
	struct rb2_chan_params p = lk->params;
	struct rb2_xport *xp;
	int ret = 0;

	if (!tx_here && !rx_here)    /* between two other processes */
		return 0;
	if (lk->via_ring) {
		char rname[RTE_RING_NAMESIZE];

		snprintf(rname, sizeof(rname), "rb2q.%s", lk->name);
		/* carry = descriptors: elements of the RB2 channel's descriptor
		 * instead of pointers, to tell the ring from what it carries. */
		lk->ring = rte_ring_create_elem(rname, lk->carry_desc ?
						sizeof(struct rb2_pkt_desc) : sizeof(void *),
						rte_align32pow2(lk->params.slots), lk->to->socket,
						RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (lk->ring == NULL)
			return cfg_err(pl, err, errlen, lk->line, "link '%s': cannot create rte_ring "
				       "'%s': %s", lk->name, rname, rte_strerror(rte_errno));
		lk->carry = LINK_CARRY_PTRS;
		lk->from->edges[lk->edge].ring = lk->ring;
		lk->from->edges[lk->edge].ptrs = true;
		lk->from->edges[lk->edge].desc = lk->carry_desc;
		lk->from->edges[lk->edge].ptrs_max = RB2_PKT_PTRS_MAX;
		return 0;
	}
	xp = xport_get(pl, lk->transport);
	if (xp == NULL)
		return cfg_err(pl, err, errlen, lk->line,
			       "link '%s': cannot open transport '%s': %s (the log says more)",
			       lk->name, lk->transport, rte_strerror(rte_errno));
	if (lk->via_l5)
		return open_l5(pl, lk, xp, err, errlen);
	/* Adaptive polling: the receiver may sleep where the transport can
	 * wake it. Both processes of a link read the same config, so both
	 * halves agree. */
	if (pl->idle_sleep > 0 && (rb2_xport_caps(xp) & RB2_XPORT_CAP_WAKE)) {
		p.flags |= RB2_CHAN_F_SLEEP;
		lk->sleep = true;
	}
	if (link_on_lanes(pl, lk, xp, &p)) {
		if (tx_here)
			lk->tx_lane = lane_get(pl, xp, lk->from->lcore, lk->to);
		if (rx_here)
			lk->rx_lane = lane_get(pl, xp, lk->to->lcore, lk->from);
		/* Both halves on lanes or neither: a lane's channel connects
		 * only to another lane's. Across processes a half that could
		 * not have one fails to connect, saying so (the limits in
		 * the log above). */
		if ((tx_here && lk->tx_lane == NULL) || (rx_here && lk->rx_lane == NULL))
			lk->tx_lane = lk->rx_lane = NULL;
	}
	if (tx_here) {
		p.lcore_id = lk->from->lcore;
		p.lane = lk->tx_lane;
		lk->tx = rb2_tx_create(lk->name, xp, &p);
	}
	if (rx_here) {
		p.lcore_id = lk->to->lcore;
		p.lane = lk->rx_lane;
		lk->rx = rb2_rx_create(lk->name, xp, &p);
	}
	if ((tx_here && lk->tx == NULL) || (rx_here && lk->rx == NULL))
		return cfg_err(pl, err, errlen, lk->line, "link '%s': cannot create the channel: %s",
			       lk->name, rte_strerror(rte_errno));
	if (tx_here && rx_here) {
		ret = rb2_chan_pair(lk->tx, lk->rx);
	} else {
		PL_LOG(INFO, "link '%s': waiting up to %u ms for %s '%s' (proc %s) at '%s'",
		       lk->name, lk->timeout_ms, tx_here ? "receiver" : "sender",
		       tx_here ? lk->to->name : lk->from->name,
		       tx_here ? lk->to->proc : lk->from->proc, lk->peer);
		ret = tx_here ? rb2_tx_connect(lk->tx, lk->peer, lk->timeout_ms) :
			rb2_rx_connect(lk->rx, lk->peer, lk->timeout_ms);
	}
	if (ret != 0)
		return cfg_err(pl, err, errlen, lk->line, "link '%s': cannot connect: %s%s",
			       lk->name, strerror(-ret), ret == -ETIMEDOUT ?
			       " (is the peer process running with the same config, --file-prefix "
			       "and its --proc?)" : "");
	if (tx_here)
		lk->from->edges[lk->edge].tx = lk->tx;
	return link_carry(pl, lk, xp, err, errlen);
}

/*
 * A stage's init() is other people's code (a plugin's): if it crashes, say
 * which stage was being initialised, from which file and line of the
 * configuration and which object, before dying of the same signal. The
 * message is made beforehand; the handler only write()s it (async-signal-
 * safe) and re-raises with the default action.
 */
static char crash_msg[512];
static size_t crash_len;
static const int crash_signals[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT };

static void
on_init_crash(int sig)
{
	static const char *const names[] = {
		[SIGSEGV] = "SIGSEGV\n", [SIGBUS] = "SIGBUS\n", [SIGILL] = "SIGILL\n",
		[SIGFPE] = "SIGFPE\n", [SIGABRT] = "SIGABRT\n",
	};
	const char *n = (size_t)sig < RTE_DIM(names) && names[sig] ? names[sig] : "a signal\n";

	if (write(STDERR_FILENO, crash_msg, crash_len) < 0 ||
	    write(STDERR_FILENO, n, strlen(n)) < 0)
		crash_len = 0;
	signal(sig, SIG_DFL);
	raise(sig);
}

static int
init_guarded(struct rb2_pipeline *pl, struct rb2_stage *st, struct rb2_stage_args *args)
{
	struct sigaction sa = { .sa_handler = on_init_crash }, old[RTE_DIM(crash_signals)];
	int ret;

	crash_len = (size_t)snprintf(crash_msg, sizeof(crash_msg),
				     "rb2: stage '%s' (type %s, from %s; %s:%u) crashed in its init(): ",
				     st->name, st->ops->name, rb2_stage_origin(st->ops), pl->cfg->path,
				     st->line);
	crash_len = RTE_MIN(crash_len, sizeof(crash_msg) - 1);
	for (unsigned int i = 0; i < RTE_DIM(crash_signals); i++)
		sigaction(crash_signals[i], &sa, &old[i]);
	ret = st->ops->init(st, args);
	for (unsigned int i = 0; i < RTE_DIM(crash_signals); i++)
		sigaction(crash_signals[i], &old[i], NULL);
	return ret;
}

static int
init_stage(struct rb2_pipeline *pl, struct rb2_stage *st, struct rb2_cfg_section *s,
	   char *err, size_t errlen)
{
	struct rb2_stage_args args = { .st = st, .sec = s };
	char why[320];
	int ret;

	if (st->ops->priv_size > 0) {
		st->priv = rte_zmalloc_socket("rb2_stage", st->ops->priv_size,
					      RTE_CACHE_LINE_SIZE, st->socket);
		if (st->priv == NULL)
			return cfg_err(pl, err, errlen, st->line, "stage '%s': out of memory",
				       st->name);
	}
	ret = st->ops->init != NULL ? init_guarded(pl, st, &args) : 0;
	if (ret != 0) {
		const char *msg = st->err[0] != '\0' ? st->err : strerror(ret < 0 ? -ret : ret);

		/* Argument errors carry their own line; others get the section's. */
		if (strncmp(msg, "line ", 5) == 0)
			snprintf(err, errlen, "%s:%s", pl->cfg->path, msg + 5);
		else
			cfg_err(pl, err, errlen, st->line, "stage '%s' (type %s): %s", st->name,
				st->ops->name, msg);
		return ret < 0 ? ret : -EINVAL;
	}
	st->inited = true;
	ret = rb2_stage_args_unused(&args, why, sizeof(why));
	if (ret != 0) {
		snprintf(err, errlen, "%s:%s", pl->cfg->path, why + 5);
		return ret;
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
		unsigned int linked = 0;

		if (!st->local || st->nedges == 0)
			continue;
		for (unsigned int j = 0; j < st->nedges; j++)
			linked += st->edges[j].link != NULL;
		if (linked == 0)
			return cfg_err(pl, err, errlen, st->line,
				       "stage '%s' (type %s) sends its output nowhere: no [link] has "
				       "from = %s.%s%s; link it to a stage", st->name, st->ops->name,
				       st->name, st->edges[0].name, st->nedges > 1 ? " (or another edge)" : "");
		for (unsigned int j = 0; j < st->nedges; j++)
			if (st->edges[j].link == NULL)
				PL_LOG(WARNING, "%s:%u: edge %s.%s is not linked: what the stage emits "
				       "there is not delivered, and fails the run", pl->cfg->path,
				       st->line, st->name, st->edges[j].name);
	}
	return 0;
}

static void
place_workers(struct rb2_pipeline *pl)
{
	for (unsigned int r = 0; r < pl->nstages; r++)
		for (unsigned int i = 0; i < pl->nstages; i++) {
			struct rb2_stage *st = &pl->stages[i];
			struct rb2_worker *w = &pl->workers[st->lcore];

			if (st->topo != r || !st->local)
				continue;
			w->pl = pl;
			w->lcore = st->lcore;
			w->stages[w->nstages++] = st;
			st->w = w;
		}
	for (unsigned int i = 0; i < pl->nlinks; i++) {
		struct rb2_link *lk = &pl->links[i];

		if (lk->rx != NULL || lk->ring != NULL || lk->l5 != NULL) {
			struct rb2_worker *w = &pl->workers[lk->to->lcore];

			w->inputs[w->ninputs++] = lk;
		}
		if (lk->tx != NULL) {
			struct rb2_worker *w = &pl->workers[lk->from->lcore];

			w->out_links[w->noutputs] = lk;
			w->outputs[w->noutputs++] = lk->tx;
		}
	}
}

struct rb2_pipeline *
rb2_pipeline_load(const char *path, const struct rb2_pipeline_opts *opts,
		  char *err, size_t errlen)
{
	struct rb2_pipeline *pl = rte_zmalloc("rb2_pipeline", sizeof(*pl), RTE_CACHE_LINE_SIZE);
	struct rb2_cfg_section *secs[STAGES_MAX] = { NULL };
	struct rb2_cfg_section *top = NULL;
	unsigned int nlocal = 0;
	uint64_t burst, stop_ms, idle_sleep, sleep_max_us, lanes;

	if (pl == NULL) {
		snprintf(err, errlen, "%s: out of memory", path);
		return NULL;
	}
	snprintf(pl->proc, sizeof(pl->proc), "%s",
		 opts != NULL && opts->proc != NULL ? opts->proc : "main");
	if (opts != NULL && opts->text != NULL)
		pl->cfg = rb2_cfg_parse(path, opts->text, strlen(opts->text), opts->vars,
					opts->nvars, err, errlen);
	else
		pl->cfg = rb2_cfg_load(path, opts != NULL ? opts->vars : NULL,
				       opts != NULL ? opts->nvars : 0, err, errlen);
	if (pl->cfg == NULL)
		goto fail;
	/* Stages first (links name them), then links. */
	for (int pass = 0; pass < 2; pass++)
		for (unsigned int i = 0; i < pl->cfg->n; i++) {
			struct rb2_cfg_section *s = &pl->cfg->sections[i];
			int ret = 0;

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
				ret = cfg_err(pl, err, errlen, s->line, "unknown section [%s]: expected "
					      "[pipeline], [stage NAME] or [link NAME]", s->name);
			}
			if (ret != 0)
				goto fail;
		}
	if (pl->nstages == 0) {
		cfg_err(pl, err, errlen, 0, "no [stage NAME] section");
		goto fail;
	}
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
		goto fail;
	pl->lanes = lanes != 0;
	pl->burst = (unsigned int)burst;
	pl->stop_timeout_ms = (unsigned int)stop_ms;
	pl->idle_sleep = (unsigned int)idle_sleep;
	pl->sleep_max_us = (unsigned int)sleep_max_us;
	if (rank_stages(pl, err, errlen) != 0)
		goto fail;
	for (unsigned int i = 0; i < pl->nstages; i++)
		nlocal += pl->stages[i].local;
	if (nlocal == 0) {
		cfg_err(pl, err, errlen, 0, "no stage has proc = %s (the --proc of this process)",
			pl->proc);
		goto fail;
	}
	if (check_edges(pl, err, errlen) != 0)
		goto fail;
	/* Same-lcore links are queues, not channels. */
	for (unsigned int i = 0; i < pl->nlinks; i++) {
		struct rb2_link *lk = &pl->links[i];

		if (lk->from->local && lk->to->local && lk->from->lcore == lk->to->lcore) {
			lk->direct = true;
			lk->from->edges[lk->edge].next = lk->to;
		}
	}
	if (type_links(pl, err, errlen) != 0)
		goto fail;
	/* Downstream first: a sink's cheap checks (can it write its results?)
	 * fail before a source's long set-up (preloading a trace). */
	for (unsigned int r = pl->nstages; r-- > 0;)
		for (unsigned int i = 0; i < pl->nstages; i++)
			if (pl->stages[i].topo == r && pl->stages[i].local &&
			    init_stage(pl, &pl->stages[i], secs[i], err, errlen) != 0)
				goto fail;
	for (unsigned int i = 0; i < pl->nlinks; i++)
		if (!pl->links[i].direct && open_link(pl, &pl->links[i], err, errlen) != 0)
			goto fail;
	place_workers(pl);
	if (start_stages(pl, err, errlen) != 0)
		goto fail;
	rb2_pipeline_telemetry_set(pl);
	return pl;
fail:
	rb2_pipeline_free(pl);
	return NULL;
}

void
rb2_pipeline_free(struct rb2_pipeline *pl)
{
	if (pl == NULL)
		return;
	rb2_pipeline_telemetry_clear(pl);
	for (unsigned int i = 0; i < pl->nstages; i++) {
		struct rb2_stage *st = &pl->stages[i];

		if (st->inited && st->ops->fini != NULL)
			st->ops->fini(st);
		for (unsigned int j = 0; j < st->nedges; j++)
			while (st->edges[j].q_head != NULL) {
				struct rb2_chunk *c = st->edges[j].q_head;

				st->edges[j].q_head = c->next;
				rte_free(c);
			}
		free(st->edges);
		rte_free(st->priv);
	}
	for (unsigned int i = 0; i < pl->nlinks; i++) {
		rb2_tx_destroy(pl->links[i].tx);
		rb2_rx_destroy(pl->links[i].rx);
		rte_ring_free(pl->links[i].ring);
		if (pl->links[i].l5 != NULL) {
			struct rb2_link *lk = &pl->links[i];

			rte_free(lk->l5_msg);
			rte_free(lk->l5_buf);
			rb2_l5_destroy(lk->l5);
		}
	}
	for (unsigned int i = 0; i < pl->nlanes; i++)   /* after their queues */
		rb2_xport_lane_destroy(pl->lane_tab[i].lane);
	for (unsigned int i = 0; i < pl->nxports; i++)
		rb2_xport_close(pl->xports[i].xp);
	for (unsigned int l = 0; l < RTE_MAX_LCORE; l++) {
		rb2_chunk_pool_free(&pl->workers[l]);
		rte_free(pl->workers[l].pkb);
	}
	rb2_cfg_free(pl->cfg);
	rte_free(pl);
}
