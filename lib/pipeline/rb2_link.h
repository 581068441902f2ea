/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_LINK_H
#define RB2_LINK_H

/*
 * What a pipeline link is made of ([link] via = KIND): one kind per file,
 * as lib/rb2 has one file per sync policy.
 *
 *   rb2_link_chan.c   via = rb2, the default: an RB² channel over any
 *                     transport. Its fast paths (peek, reserve, commit)
 *                     are inline in the worker's loop and the emit calls,
 *                     so its ops are only set-up and teardown.
 *   rb2_link_ring.c   via = rte_ring: DPDK's ring of mbuf pointers, a baseline
 *   rb2_link_l5.c     via = l5: L5's own ring (lib/baseline), a baseline
 *
 * The channel is tested for first everywhere (an edge's xops is NULL for
 * it), so the baselines cost it nothing but that one test: as it was when
 * they were flags. A new kind: copy rb2_link_ring.c, fill in its ops, and
 * add it to rb2_link_kinds[] (rb2_pipeline_graph.c).
 *
 * Private to lib/pipeline: the ops reach into the pipeline's structures
 * (rb2_pipeline_private.h).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct rb2_pipeline;
struct rb2_link;
struct rb2_worker;
struct rb2_stage;
struct rb2_edge;
struct rte_mbuf;
struct json_t;

struct rb2_link_ops {
	const char *via;            /* its name after via = */
	const char *about;          /* what it is, for the error that lists the kinds */
	/* Once the stages' types are known: NULL, or why this link cannot be
	 * of this kind (the whole sentence after "link 'NAME': "). */
	const char *(*check)(const struct rb2_link *lk);
	/* Create this process's halves (when at least one end is here). */
	int (*open)(struct rb2_pipeline *pl, struct rb2_link *lk, char *err, size_t errlen);
	/* Free what open() made, whole or in part. */
	void (*close)(struct rb2_link *lk);
	/* Is an input here to poll? Its receiving half was made here. */
	bool (*is_input)(const struct rb2_link *lk);
	/* An input's poll: what came, given to the stage; 1 if anything
	 * came, else 0. NULL: the channel's, inline in the worker's loop. */
	int (*poll)(struct rb2_worker *w, struct rb2_link *l);
	/* The end of stream, when the sending stage is done. NULL: the
	 * channel's. */
	void (*end)(struct rb2_stage *st, struct rb2_edge *e);
	/* A message edge's rb2_stage_emit_reserve() and _commit(). */
	int (*reserve)(struct rb2_stage *st, struct rb2_edge *e, uint32_t len, unsigned int n,
		       void **first, size_t *stride);
	void (*commit)(struct rb2_stage *st, struct rb2_edge *e, uint32_t len, unsigned int n);
	/* A packet edge's rb2_stage_emit_pkts(). */
	int (*emit_pkts)(struct rb2_stage *st, struct rb2_edge *e, struct rte_mbuf **pkts,
			 unsigned int n);
	/* Its line in the summary; its object in the stats JSON, in the
	 * array json_key names. NULL: none. */
	void (*report)(const struct rb2_link *lk, FILE *out);
	const char *json_key;
	struct json_t *(*report_json)(const struct rb2_link *lk);
	/* Why a worker that reads it cannot sleep when idle; NULL: whether
	 * its transport can wake one decides. */
	const char *no_sleep;
};

extern const struct rb2_link_ops rb2_link_chan_ops;
extern const struct rb2_link_ops rb2_link_ring_ops;
extern const struct rb2_link_ops rb2_link_l5_ops;

/* Every kind, the default first; NULL-terminated. */
extern const struct rb2_link_ops *const rb2_link_kinds[];

#endif /* RB2_LINK_H */
