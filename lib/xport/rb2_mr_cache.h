/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_MR_CACHE_H
#define RB2_MR_CACHE_H

/**
 * @file
 * A memory registration cache, as MRRC builds it (Ou, He and Han, "An
 * efficient design for fast memory registration in RDMA", §5): a buffer
 * sent twice is registered once.
 *
 * - Regions, not pages: a request that a cached region covers is a hit; one
 *   that overlaps cached regions registers only the pages they do not cover
 *   (cached regions never overlap), and comes back as several segments,
 *   one per region, in address order: an SGE list.
 * - Replacement by recency and size (MRE): an LRU stack whose lower part
 *   (the resorting section) is sorted, when the cache is full, by an
 *   eviction factor r + 1/s (s: pages; r: the bottom region's factor at the
 *   last eviction), so that among regions of the same age the large ones go
 *   first; the bottom of it (the eviction segment) is deregistered in one
 *   batch.
 * - Regions in use (between get and put) are never evicted. Invalidation
 *   (the application frees the buffer) removes a region at once, and
 *   deregisters it at its last put.
 *
 * The cache calls back to register and deregister, so that it serves any
 * transport (rb2_mr_cache_create_xport()) and its tests. Not thread-safe:
 * one per lcore, or a lock around it.
 *
 * @code
 * struct rb2_mr_seg seg[4];
 * int n = rb2_mr_cache_get(c, buf, len, seg, 4);   // SGEs: seg[i].lkey
 * ...post the WR, reap its completion...
 * rb2_mr_cache_put(c, seg, n);
 * rb2_mr_cache_invalidate(c, buf, len);             // before free(buf)
 * @endcode
 */

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rb2_xport;
struct rb2_mr_region;

/** What a registration produced. */
struct rb2_mr_reg {
	uint32_t lkey, rkey;
	void *handle;             /**< the callback's own (e.g. its ibv_mr) */
};

/** Register [@p addr, @p addr + @p len) (page-aligned); 0 or -errno. */
typedef int (*rb2_mr_reg_fn)(void *ctx, void *addr, size_t len, struct rb2_mr_reg *out);
/** Deregister @p n registrations at once (batched deregistration). */
typedef void (*rb2_mr_dereg_fn)(void *ctx, struct rb2_mr_reg *regs, unsigned int n);

/** Cache configuration. */
struct rb2_mr_cache_params {
	size_t max_pages;          /**< pages registered at most (default 65536: 256 MiB) */
	unsigned int max_regions;  /**< regions at most (default 4096) */
	size_t page_size;          /**< default: the system's */
	/** Share of the stack, from the top, that is the frequent-reference
	 *  section, in percent (default 50); the rest is resorted. */
	unsigned int frequent_pct;
	/** Pages an eviction frees at least, deregistered in one batch
	 *  (default max_pages / 8). */
	size_t evict_batch_pages;
	rb2_mr_reg_fn reg;
	rb2_mr_dereg_fn dereg;
	void *ctx;
	/** Its name in telemetry (/rb2/mr_cache,<name>), at most
	 *  RB2_MR_CACHE_NAMESIZE - 1 bytes; NULL: "mr_cache<N>". */
	const char *name;
};

#define RB2_MR_CACHE_NAMESIZE 32

/** Fill @p p with the defaults (reg, dereg and ctx NULL). */
void rb2_mr_cache_params_init(struct rb2_mr_cache_params *p);

struct rb2_mr_cache;

/** @return a cache, or NULL with rte_errno EINVAL (the log says which) or ENOMEM. */
struct rb2_mr_cache *rb2_mr_cache_create(const struct rb2_mr_cache_params *p);

/**
 * A cache that registers through @p xp (rb2_xport_mr_reg()); @p p may be
 * NULL for the defaults (its reg, dereg and ctx are replaced).
 * @return NULL with rte_errno ENOTSUP where the transport cannot register
 *   application memory (shm: nothing to register).
 */
struct rb2_mr_cache *rb2_mr_cache_create_xport(struct rb2_xport *xp,
					       const struct rb2_mr_cache_params *p);

/** Deregister everything and free the cache (no region may be in use). */
void rb2_mr_cache_destroy(struct rb2_mr_cache *c);

/** A registered piece of a request: an SGE. */
struct rb2_mr_seg {
	void *addr;
	uint32_t len;
	uint32_t lkey, rkey;
	struct rb2_mr_region *region;  /**< for rb2_mr_cache_put() */
};

/**
 * Registered segments covering [@p addr, @p addr + @p len), in address
 * order, each region held (in use) until rb2_mr_cache_put().
 *
 * @return the number of segments (1..@p max_segs); -E2BIG (more than
 *   @p max_segs would be needed: nothing is held); -ENOSPC (the cache is
 *   full of regions in use); -EINVAL (@p len 0, or a segment over 4 GiB);
 *   or the registration's error.
 */
int rb2_mr_cache_get(struct rb2_mr_cache *c, void *addr, size_t len,
		     struct rb2_mr_seg *segs, unsigned int max_segs);

/** Release what rb2_mr_cache_get() returned. */
void rb2_mr_cache_put(struct rb2_mr_cache *c, const struct rb2_mr_seg *segs,
		      unsigned int n);

/**
 * The application frees [@p addr, @p addr + @p len): forget every region
 * that overlaps it (deregistered now, or at its last put if in use).
 * @return the number of regions invalidated.
 */
int rb2_mr_cache_invalidate(struct rb2_mr_cache *c, void *addr, size_t len);

/** A cache's counters. */
struct rb2_mr_cache_stats {
	uint64_t gets;
	uint64_t hits;             /**< covered by one cached region */
	uint64_t exact_hits;       /**< ... exactly its pages */
	uint64_t partial_hits;     /**< some pages cached, the rest registered */
	uint64_t misses;           /**< nothing cached */
	uint64_t registrations, deregistrations, dereg_batches;
	uint64_t evictions;        /**< regions evicted (not invalidated) */
	uint64_t invalidations;
	uint64_t regions, pages;   /**< registered now */
	uint64_t in_use;           /**< regions held now */
};

/** Copy a cache's counters (from any thread: telemetry reads them too). */
void rb2_mr_cache_stats_get(const struct rb2_mr_cache *c, struct rb2_mr_cache_stats *st);

/** Its name in telemetry. */
const char *rb2_mr_cache_name(const struct rb2_mr_cache *c);

/**
 * Walk the stack from the top: @p cb(arg, start, pages, refs) for every
 * region (for tests and telemetry).
 */
void rb2_mr_cache_walk(const struct rb2_mr_cache *c,
		       void (*cb)(void *arg, uintptr_t start, size_t pages, unsigned int refs),
		       void *arg);

#ifdef __cplusplus
}
#endif

#endif /* RB2_MR_CACHE_H */
