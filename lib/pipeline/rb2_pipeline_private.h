/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_PIPELINE_PRIVATE_H
#define RB2_PIPELINE_PRIVATE_H

/* @internal The pipeline's state, shared by rb2_stage.c and rb2_pipeline.c. */

#include <stdbool.h>

#include <rte_common.h>
#include <rte_log.h>

#include "rb2_config.h"
#include "rb2_pipeline.h"
#include "rb2_stage.h"

extern int rb2_pipeline_logtype;
#define PL_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_ ## level, rb2_pipeline_logtype, "rb2.pipeline: " fmt "\n", \
		##__VA_ARGS__)

#define STAGE_COUNTERS_MAX 16
#define STAGE_NAME_MAX 32
#define LOCAL_ARENA (64u << 10) /* bytes staged per same-lcore edge */

struct rb2_link;

/* One next edge of an instance. */
struct rb2_edge {
	const char *name;
	struct rb2_link *link;      /* NULL: unlinked */
	struct rb2_tx *tx;          /* next stage elsewhere: the channel's sender */
	struct rb2_stage *next;     /* next stage on this lcore (direct) */
	/* Direct edges stage their burst here until the next stage runs. */
	struct rb2_msg *stg;
	unsigned int nstg;
	uint8_t *arena;
	size_t used;
	uint64_t msgs, bytes;       /* delivered */
	uint64_t failed;            /* emits that failed (counted, never silent) */
	uint64_t waits;             /* times the next channel was full */
};

struct rb2_stage_counter {
	char name[STAGE_NAME_MAX];
	uint64_t value;
};

struct rb2_stage {
	const struct rb2_stage_ops *ops;
	struct rb2_pipeline *pl;
	char name[STAGE_NAME_MAX];
	char proc[STAGE_NAME_MAX];
	unsigned int line;          /* of its [stage] section */
	unsigned int lcore;
	int socket;
	bool local;                 /* runs in this process */
	bool inited;
	void *priv;
	struct rb2_edge *edges;
	unsigned int nedges;
	unsigned int topo;          /* topological rank */
	/* End of stream: the stage is done when every input has ended. */
	unsigned int n_in, n_in_done;
	bool done;
	/* Statistics (written by the stage's lcore only). */
	uint64_t in_msgs, in_bytes, bursts, cycles, produced;
	struct rb2_stage_counter counters[STAGE_COUNTERS_MAX];
	unsigned int ncounters;
	char err[256];
};

struct rb2_link {
	char name[RB2_CHAN_NAMESIZE];
	unsigned int line;
	struct rb2_stage *from, *to;
	unsigned int edge;
	char transport[128];
	char peer[128];
	unsigned int timeout_ms;
	struct rb2_chan_params params;
	bool direct;                /* both ends on one lcore of this process */
	struct rb2_tx *tx;          /* when `from` is local */
	struct rb2_rx *rx;          /* when `to` is local */
	bool ended;                 /* end of stream received */
};

struct rb2_stage_args {
	struct rb2_stage *st;
	struct rb2_cfg_section *sec;
	const char *asked[32];      /* keys the stage read, for error messages */
	unsigned int nasked;
};

/* Registration (rb2_stage.c). */
const char *rb2_stage_ops_origin(const struct rb2_stage_ops *ops);

/* Arguments (rb2_stage.c). */
int rb2_stage_args_unused(struct rb2_stage_args *a, char *err, size_t errlen);

#endif /* RB2_PIPELINE_PRIVATE_H */
