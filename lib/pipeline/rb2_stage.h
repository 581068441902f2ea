/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_STAGE_H
#define RB2_STAGE_H

/**
 * @file
 * Pipeline stages: the API a plugin is written against.
 *
 * A stage type is a set of callbacks registered under a name. A pipeline
 * (rb2_pipeline.h, built from a configuration file) makes instances of it,
 * places each on an lcore and links the instances' named next edges to other
 * instances, through RB² channels (another lcore, process or host) or
 * directly (the same lcore: what a stage emits is queued, and the lcore's
 * worker runs the next stage on it once the emitting call has returned, as
 * rte_graph does; never inside the emit).
 *
 * @code
 * #include <rb2_stage.h>
 *
 * struct ttl_priv { uint64_t min_len; uint64_t *short_msgs; };
 *
 * static int
 * ttl_init(struct rb2_stage *st, struct rb2_stage_args *args)
 * {
 *	struct ttl_priv *p = rb2_stage_priv(st);
 *
 *	if (rb2_stage_arg_u64(args, "min_len", 64, 0, 65536, &p->min_len) < 0)
 *		return -EINVAL;              // the message names key and range
 *	p->short_msgs = rb2_stage_counter(st, "short");
 *	return 0;
 * }
 *
 * static void
 * ttl_process(struct rb2_stage *st, const struct rb2_msg *msgs, unsigned int n)
 * {
 *	struct ttl_priv *p = rb2_stage_priv(st);
 *
 *	for (unsigned int i = 0; i < n; i++) {
 *		if (msgs[i].len < p->min_len)
 *			rb2_stage_count(p->short_msgs, 1);
 *		rb2_stage_emit(st, 0, msgs[i].data, msgs[i].len);  // edge "out"
 *	}
 * }
 *
 * static const char *const ttl_edges[] = { "out", NULL };
 * static const struct rb2_stage_ops ttl_ops = {
 *	.api_version = RB2_STAGE_API_VERSION,
 *	.name = "ttl",
 *	.summary = "counts short messages, forwards all",
 *	.edges = ttl_edges,
 *	.priv_size = sizeof(struct ttl_priv),
 *	.init = ttl_init,
 *	.process = ttl_process,
 * };
 * RB2_STAGE_REGISTER(ttl_ops);
 * @endcode
 *
 * Built into an application or into a shared object loaded with
 * `--plugin PATH` (or the EAL's `-d PATH`), the same source registers the
 * same stage. Build a plugin with
 * `cc -shared -fPIC stage.c $(pkg-config --cflags --libs librb2)`.
 *
 * Rules of the road:
 * - Messages are views: valid until process() returns. Zero-length messages
 *   do not exist (the pipeline uses them for end-of-stream).
 * - Emitting never drops: when the next channel is full, emit waits for
 *   room; it fails (and the failure is counted, and makes the pipeline's
 *   run fail) only when the pipeline is aborted, the channel has failed, the
 *   edge is not linked, or the call is wrong (no such edge, a zero length).
 * - A stage runs on one lcore; its callbacks are never called concurrently.
 * - What the measurement NF's stages exchange (replay's "out", measure's
 *   input) is messages of whole 64-byte records, struct rb2_rec of
 *   <rb2_trace.h>: 1 to `batch` of them per message.
 * - Packets (DPDK mbufs) travel on edges a stage declares in pkt_edges, to
 *   stages that declare takes_pkts: see <rb2_stage_pkt.h> for who owns and
 *   who frees an mbuf at every step.
 */

#include <stdint.h>
#include <stdio.h>

#include <rb2_chan.h>
#include <rb2_stage_registry.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Bump when struct rb2_stage_ops or a callback's contract changes. */
#define RB2_STAGE_API_VERSION 3

/** process() is never given more messages than this at once. */
#define RB2_STAGE_BURST_MAX 256

/** Bytes one call of a stage may queue on a same-lcore edge (64 MiB). */
#define RB2_STAGE_DIRECT_MAX (64u << 20)

/** A stage instance (opaque). */
struct rb2_stage;
/** The key = value arguments of an instance (opaque). */
struct rb2_stage_args;

/** A stage type. */
struct rb2_stage_ops {
	/** RB2_STAGE_API_VERSION of the headers it was built with. */
	uint32_t api_version;
	/** Type name used by configurations ("measure"): unique, [a-z0-9_-]. */
	const char *name;
	/** One line for `rb2-nf --list-stages`. */
	const char *summary;
	/** NULL-terminated names of the next edges, in index order; NULL: a sink. */
	const char *const *edges;
	/** Bytes of zeroed, cache-aligned private state: rb2_stage_priv(). */
	size_t priv_size;
	/**
	 * Set the instance up from its arguments (read with
	 * rb2_stage_arg_*()). Runs on the main lcore before any traffic; slow
	 * work (loading files) belongs here. An argument the stage does not
	 * read is an error the pipeline reports.
	 * @return 0, or a negative errno value after rb2_stage_err() (or a
	 *   failing rb2_stage_arg_*()) said why.
	 */
	int (*init)(struct rb2_stage *st, struct rb2_stage_args *args);
	/** Release what init() took. Optional. */
	void (*fini)(struct rb2_stage *st);
	/** A burst of 1..RB2_STAGE_BURST_MAX input messages. Sinks and filters. */
	void (*process)(struct rb2_stage *st, const struct rb2_msg *msgs, unsigned int n);
	/**
	 * Sources only (stages with no input): produce a burst.
	 * @return messages produced (> 0), 0 when it had nothing to do now,
	 *   -ENODATA when it has finished for good.
	 */
	int (*poll)(struct rb2_stage *st);
	/**
	 * Called on the stage's lcore when every input has ended: the last
	 * chance to emit. Optional.
	 * @return 0 when done; > 0 when it has more to emit: it is called
	 *   again once what it emitted has been taken (a same-lcore next
	 *   stage has run on it), so a large remainder goes out in pieces
	 *   (the measure stage's last flow records).
	 */
	int (*drain)(struct rb2_stage *st);
	/** After the pipeline has stopped: print a summary. Optional. */
	void (*report)(struct rb2_stage *st, FILE *out);
	/**
	 * Packets (rb2_stage_pkt.h): bit i set means next edge i carries
	 * packets, emitted with rb2_stage_emit_pkts(). 0: messages only.
	 */
	uint64_t pkt_edges;
	/** Nonzero: the stage's input is packets (rb2_stage_pkts() in process()). */
	int takes_pkts;
	/**
	 * Called once on the main lcore after every stage of this process was
	 * set up and every link connected, before any traffic: where a stage
	 * starts what the others' init() configured together (a port's
	 * queues). Optional; a negative errno fails the pipeline's set-up.
	 */
	int (*start)(struct rb2_stage *st);
	/**
	 * Bit i set: next edge i may be left unlinked; the stage then asks
	 * rb2_stage_edge_linked() and does not emit there (the measure stage's
	 * flow records, for an exporter if there is one). A stage whose edges
	 * are all optional may be a sink.
	 */
	uint64_t optional_edges;
	/**
	 * Called on the stage's lcore when a pass of its worker found nothing
	 * to do (at least every [pipeline] sleep_max_us when the worker
	 * sleeps): where a stage does what time alone asks for (the measure
	 * stage ends idle flows on a quiet port). It must be cheap and
	 * return at once when there is nothing due. Optional.
	 */
	void (*idle)(struct rb2_stage *st);
};

/**
 * Register a stage type when the program or the plugin is loaded (a
 * constructor). A plugin may register several, one macro each. The registry
 * checks the type's API version, name and callbacks, and the plugin loader
 * refuses an object that registered no stage.
 */
#define RB2_STAGE_REGISTER(ops)						\
	static void __attribute__((constructor, used))			\
	rb2_stage_register_##ops(void)					\
	{								\
		rb2_stage_register(&(ops));				\
	}

/** @return the instance's private state (ops->priv_size bytes). */
void *rb2_stage_priv(struct rb2_stage *st);
/** @return the instance's name (the configuration's section). */
const char *rb2_stage_name(const struct rb2_stage *st);
/** @return the lcore the instance runs on. */
unsigned int rb2_stage_lcore(const struct rb2_stage *st);
/** @return the NUMA socket of that lcore. */
int rb2_stage_socket(const struct rb2_stage *st);

/**
 * Record why init() fails (or log a run-time problem). The pipeline prints it
 * with the configuration file and line of the instance.
 */
void rb2_stage_err(struct rb2_stage *st, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/**
 * The stage could not do its whole job, though it goes on (its input was cut
 * short, its output could not be written): logged, named in the pipeline's
 * summary, and the pipeline's run (or its report, when called from report())
 * fails. The first reason is kept. Callable from any callback.
 */
void rb2_stage_fail(struct rb2_stage *st, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/**
 * @name Arguments
 * Each reads one key = value of the instance's section, marks it read, and
 * on a bad value records an error naming the key, the value and what is
 * expected (returning -EINVAL). A missing key yields the default.
 * @{
 */
/** @return nonzero if next edge @p edge is linked (an optional edge may not be). */
int rb2_stage_edge_linked(const struct rb2_stage *st, unsigned int edge);

/** A string (NULL default allowed); empty values count as missing. */
int rb2_stage_arg_str(struct rb2_stage_args *a, const char *key, const char *def,
		      const char **out);
/** An unsigned integer in [min, max]; accepts k/M/G suffixes (10^3). */
int rb2_stage_arg_u64(struct rb2_stage_args *a, const char *key, uint64_t def,
		      uint64_t min, uint64_t max, uint64_t *out);
/** A number in [min, max]. */
int rb2_stage_arg_double(struct rb2_stage_args *a, const char *key, double def,
			 double min, double max, double *out);
/** yes/no, true/false, on/off, 1/0. */
int rb2_stage_arg_bool(struct rb2_stage_args *a, const char *key, int def, int *out);
/** @return whether @p key is set (does not mark it read). */
int rb2_stage_arg_has(const struct rb2_stage_args *a, const char *key);
/** @} */

/**
 * A named counter of the instance, shown in the final statistics and in
 * DPDK telemetry (/rb2/pipeline/stages). Call from init(); add to it with
 * rb2_stage_count() from the stage's own lcore.
 *
 * @return The counter (zeroed), or NULL (out of memory, or more than 16).
 */
uint64_t *rb2_stage_counter(struct rb2_stage *st, const char *name);

/**
 * Add @p n to a counter that only this lcore writes and another thread
 * (telemetry) reads: a relaxed atomic load and store, which on x86 is the
 * same plain add as `*counter += n` (no lock prefix), but which the reader
 * always sees whole and a race detector sees as no race.
 */
static inline void
rb2_stage_count(uint64_t *counter, uint64_t n)
{
	__atomic_store_n(counter, __atomic_load_n(counter, __ATOMIC_RELAXED) + n,
			 __ATOMIC_RELAXED);
}

/**
 * @name Emitting on a next edge (by index in ops->edges)
 * @{
 */
/**
 * Copy one message to edge @p edge. Waits for room in the next channel.
 *
 * @return 0; -EINVAL (no such edge, or @p len 0); -EMSGSIZE (larger than the
 *   link carries); -ECANCELED (the pipeline was aborted while waiting);
 *   -ENOTCONN (the edge is linked to nothing: the message is counted as
 *   unlinked); -ENOBUFS (more than RB2_STAGE_DIRECT_MAX bytes queued on a
 *   same-lcore edge by one call); or the channel's error. Every failure is
 *   counted: on the edge, or as the stage's emit errors.
 */
int rb2_stage_emit(struct rb2_stage *st, unsigned int edge, const void *data,
		   uint32_t len);

/**
 * Zero copy: reserve room for up to @p n messages of @p len bytes each on
 * edge @p edge, waiting until there is room for at least one.
 *
 * @param[out] first Where message 0 goes; message i is at first + i * stride.
 * @param[out] stride Distance between messages.
 * @return How many were reserved (1..n), or a negative errno as
 *   rb2_stage_emit(). Fill them, then rb2_stage_emit_commit().
 */
int rb2_stage_emit_reserve(struct rb2_stage *st, unsigned int edge, uint32_t len,
			   unsigned int n, void **first, size_t *stride);

/** Send @p n (at most the reserved count) of the messages just reserved. */
void rb2_stage_emit_commit(struct rb2_stage *st, unsigned int edge, uint32_t len,
			   unsigned int n);
/** @} */

/** @return nonzero once the pipeline is stopping (sources should finish). */
int rb2_stage_stopping(const struct rb2_stage *st);

#ifdef __cplusplus
}
#endif

#endif /* RB2_STAGE_H */
