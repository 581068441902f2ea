/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_PIPELINE_H
#define RB2_PIPELINE_H

/**
 * @file
 * Pipelines: stage instances on lcores, linked by RB² channels, described by
 * a configuration file (INI, see rb2_config.h):
 *
 * @verbatim
 *   [pipeline]
 *   burst = 32                 ; messages per poll of an input channel
 *
 *   [stage replay]             ; an instance named "replay"
 *   type = replay              ; the stage type (rb2_stage.h)
 *   lcore = 0                  ; an EAL lcore (-l)
 *   proc = main                ; which process runs it (rb2-nf --proc)
 *   trace = ${trace}           ; any other key: an argument of the stage
 *
 *   [stage measure]
 *   type = measure
 *   lcore = 1
 *
 *   [link records]             ; also the channel's name (<= 23 chars)
 *   from = replay.out          ; instance.edge (".out" may be left out
 *   to = measure               ;   when the stage has a single edge)
 *   transport = shm            ; a transport spec: shm, shm,mode=copy, verbs,dev=rxe0
 *   peer = 10.0.0.2:7471       ; verbs across hosts: the receiver's address
 *   slots = 4096               ; N
 *   slot_size = 64             ; S
 *   alpha = 32                 ; and beta, gamma
 *   eager = 1                  ; commits published at once after an idle flush
 *                              ;   (default 256: 1 on shm, 0 over verbs)
 *   preset = rb2               ; or a design of the paper: l5, farm, socksdirect
 *   timeout_ms = 30000         ; wait this long for a peer process or host
 * @endverbatim
 *
 * Two stages on one lcore are linked directly (what the first emits is
 * queued, and the worker runs the next on it when the first returns);
 * anything else goes through an RB² channel, within the process, to another
 * process of the DPDK group, or to another host.
 * The graph must be acyclic. End of stream travels in-band (a zero-length
 * message), so a pipeline split over processes or hosts drains as one.
 *
 * @code
 * struct rb2_pipeline_opts o = { .proc = "main" };
 * struct rb2_pipeline *pl = rb2_pipeline_load("config/nf.ini", &o, err, sizeof(err));
 * signal handler: rb2_pipeline_stop(pl);    // first: drain; second: abort
 * rb2_pipeline_run(pl);                      // returns when drained
 * rb2_pipeline_report(pl, stdout);
 * rb2_pipeline_free(pl);
 * @endcode
 */

#include <stdint.h>
#include <stdio.h>

#include <rb2_config.h>
#include <rb2_stage.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rb2_pipeline;

/** How to load a pipeline. */
struct rb2_pipeline_opts {
	/** Run only the stages with this proc (NULL: "main"). */
	const char *proc;
	/** Variables the file may use; their referenced flags are set. */
	struct rb2_cfg_var *vars;
	unsigned int nvars;
	/** If not NULL: the configuration itself (the path names it in messages). */
	const char *text;
};

/**
 * Parse @p path, create and init() the stages of this process, and connect
 * the links (waiting for peer processes or hosts). Call after rte_eal_init().
 *
 * @param err Receives the reason on failure: "FILE:LINE: problem".
 * @return The pipeline, or NULL.
 */
struct rb2_pipeline *rb2_pipeline_load(const char *path,
				       const struct rb2_pipeline_opts *opts,
				       char *err, size_t errlen);

/**
 * Run: launch the workers on their lcores (the calling lcore runs its own
 * share) and return when every local stage has drained or the pipeline was
 * aborted.
 *
 * @return 0, or -ECANCELED (aborted), -EIO (the run was not clean: a link
 *   failed, an emit failed, or a stage could not do its whole job; the
 *   summary of rb2_pipeline_report() says which).
 */
int rb2_pipeline_run(struct rb2_pipeline *pl);

/**
 * Ask the pipeline to stop. Async-signal-safe. The first call stops the
 * sources and lets every queued message drain; the second aborts at once.
 */
void rb2_pipeline_stop(struct rb2_pipeline *pl);

/**
 * Per-instance statistics, then each stage's own report().
 *
 * @return 0, or -EIO when a stage's report() failed its job (results it
 *   could not write: rb2_stage_fail()).
 */
int rb2_pipeline_report(struct rb2_pipeline *pl, FILE *out);

/** Per-instance statistics as a JSON object (no trailing newline). */
void rb2_pipeline_stats_json(struct rb2_pipeline *pl, FILE *out);

/** fini() every stage, destroy the channels. */
void rb2_pipeline_free(struct rb2_pipeline *pl);

/** @return the local instance named @p name, or NULL. */
struct rb2_stage *rb2_pipeline_stage(struct rb2_pipeline *pl, const char *name);

#ifdef __cplusplus
}
#endif

#endif /* RB2_PIPELINE_H */
