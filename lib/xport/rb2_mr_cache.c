/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * The memory registration region cache (rb2_mr_cache.h): regions kept in
 * an array sorted by address (they never overlap, so their ends are sorted
 * too, and one binary search finds where a request starts) and in an LRU
 * stack (a list, top first).
 *
 * Its counters are in DPDK telemetry while the application runs:
 *   --> /rb2/mr_caches
 *   --> /rb2/mr_cache,<name>
 * The owner's lcore is the only writer; each counter is stored whole
 * (relaxed atomics, no locked instruction), so a reader on the telemetry
 * thread sees every counter at some recent value.
 */

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_errno.h>
#include <rte_telemetry.h>

#include "rb2_mr_cache.h"
#include "rb2_xport_driver.h"

struct rb2_mr_region {
	uintptr_t start, end;         /* page-aligned */
	size_t pages;
	struct rb2_mr_reg reg;
	unsigned int refs;
	uint8_t invalid;              /* out of the cache, deregistered at last put */
	double evictfact;             /* MRE's; 0 until it is resorted */
	TAILQ_ENTRY(rb2_mr_region) lru;
};

TAILQ_HEAD(mr_stack, rb2_mr_region);

struct rb2_mr_cache {
	struct rb2_mr_cache_params p;
	char name[RB2_MR_CACHE_NAMESIZE];
	TAILQ_ENTRY(rb2_mr_cache) next;   /* in the process's list, for telemetry */
	struct rb2_mr_region **by_addr;   /* sorted by start, p.max_regions */
	unsigned int n;
	struct mr_stack stack;            /* top first */
	size_t pages;
	struct rb2_mr_cache_stats st;
};

/* One writer (the owner), readers on the telemetry thread. */
#define MRC_ADD(c, f, v) \
	__atomic_store_n(&(c)->st.f, (c)->st.f + (uint64_t)(v), __ATOMIC_RELAXED)
#define MRC_READ(c, f) __atomic_load_n(&(c)->st.f, __ATOMIC_RELAXED)

static struct {
	pthread_mutex_t lock;
	TAILQ_HEAD(, rb2_mr_cache) caches;
	unsigned int created;
} mr_caches = { PTHREAD_MUTEX_INITIALIZER, TAILQ_HEAD_INITIALIZER(mr_caches.caches), 0 };

void
rb2_mr_cache_params_init(struct rb2_mr_cache_params *p)
{
	memset(p, 0, sizeof(*p));
	p->max_pages = 65536;
	p->max_regions = 4096;
	p->page_size = (size_t)sysconf(_SC_PAGESIZE);
	p->frequent_pct = 50;
}

struct rb2_mr_cache *
rb2_mr_cache_create(const struct rb2_mr_cache_params *params)
{
	struct rb2_mr_cache *c;

	if (params == NULL || params->reg == NULL || params->dereg == NULL ||
	    params->max_pages == 0 || params->max_regions == 0 ||
	    !rte_is_power_of_2(params->page_size) || params->frequent_pct >= 100) {
		RB2_XPORT_LOG(ERR, "mr cache: needs reg and dereg callbacks, max_pages and "
			      "max_regions > 0, a power-of-two page size and "
			      "frequent_pct below 100");
		rte_errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL || (c->by_addr = calloc(params->max_regions,
					       sizeof(*c->by_addr))) == NULL) {
		free(c);
		rte_errno = ENOMEM;
		return NULL;
	}
	c->p = *params;
	if (c->p.evict_batch_pages == 0)
		c->p.evict_batch_pages = RTE_MAX(c->p.max_pages / 8, (size_t)1);
	TAILQ_INIT(&c->stack);
	pthread_mutex_lock(&mr_caches.lock);
	if (params->name != NULL && params->name[0] != '\0')
		snprintf(c->name, sizeof(c->name), "%s", params->name);
	else
		snprintf(c->name, sizeof(c->name), "mr_cache%u", mr_caches.created);
	mr_caches.created++;
	TAILQ_INSERT_TAIL(&mr_caches.caches, c, next);
	pthread_mutex_unlock(&mr_caches.lock);
	c->p.name = c->name;
	return c;
}

static void
region_free(struct rb2_mr_cache *c, struct rb2_mr_region *r)
{
	c->p.dereg(c->p.ctx, &r->reg, 1);
	MRC_ADD(c, deregistrations, 1);
	MRC_ADD(c, dereg_batches, 1);
	free(r);
}

/* Take @p r out of the address array and the stack. */
static void
region_unlink(struct rb2_mr_cache *c, struct rb2_mr_region *r)
{
	unsigned int i = 0;

	while (i < c->n && c->by_addr[i] != r)
		i++;
	memmove(&c->by_addr[i], &c->by_addr[i + 1], (c->n - i - 1) * sizeof(r));
	c->n--;
	c->pages -= r->pages;
	MRC_ADD(c, regions, -1);
	MRC_ADD(c, pages, -r->pages);
	TAILQ_REMOVE(&c->stack, r, lru);
}

void
rb2_mr_cache_destroy(struct rb2_mr_cache *c)
{
	struct rb2_mr_region *r;

	if (c == NULL)
		return;
	pthread_mutex_lock(&mr_caches.lock);
	TAILQ_REMOVE(&mr_caches.caches, c, next);
	pthread_mutex_unlock(&mr_caches.lock);
	while ((r = TAILQ_FIRST(&c->stack)) != NULL) {
		if (r->refs != 0)
			RB2_XPORT_LOG(ERR, "mr cache: destroyed with a region in use "
				      "(%zu pages at %#lx): deregistered anyway",
				      r->pages, (unsigned long)r->start);
		TAILQ_REMOVE(&c->stack, r, lru);
		region_free(c, r);
	}
	free(c->by_addr);
	free(c);
}

/* Index of the first region that ends after @p addr. */
static unsigned int
first_after(const struct rb2_mr_cache *c, uintptr_t addr)
{
	unsigned int lo = 0, hi = c->n;

	while (lo < hi) {
		unsigned int mid = (lo + hi) / 2;

		if (c->by_addr[mid]->end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int
cmp_factor_desc(const void *x, const void *y)
{
	const struct rb2_mr_region *a = *(struct rb2_mr_region *const *)x;
	const struct rb2_mr_region *b = *(struct rb2_mr_region *const *)y;

	return a->evictfact < b->evictfact ? 1 : a->evictfact > b->evictfact ? -1 : 0;
}

/*
 * MRE: make room for @p pages more pages in one more region. Resort the
 * resorting section by eviction factor, then deregister, in one batch, the
 * bottom regions not in use that free what is needed, and at least
 * evict_batch_pages.
 */
static int
make_room(struct rb2_mr_cache *c, size_t pages)
{
	size_t over_pages = c->pages + pages > c->p.max_pages ?
		c->pages + pages - c->p.max_pages : 0;
	unsigned int over_regions = c->n + 1 > c->p.max_regions ? 1 : 0;
	unsigned int nfreq, m = 0, k = 0, i;
	struct rb2_mr_region **sec, **victims, *r;
	struct rb2_mr_reg *regs;
	size_t freed = 0;
	double rec;

	if (over_pages == 0 && over_regions == 0)
		return 0;
	if (pages > c->p.max_pages)
		return -ENOSPC;
	sec = malloc(c->n * sizeof(*sec));
	victims = malloc(c->n * sizeof(*victims));
	regs = malloc(c->n * sizeof(*regs));
	if (sec == NULL || victims == NULL || regs == NULL) {
		free(sec);
		free(victims);
		free(regs);
		return -ENOMEM;
	}
	/* r: the bottom region's factor; the resorting section: below the
	 * top frequent_pct of the stack. Factors are set once, when a region
	 * first reaches the section, and reset when it is used again. */
	rec = TAILQ_LAST(&c->stack, mr_stack)->evictfact;
	nfreq = (c->n * c->p.frequent_pct + 99) / 100;
	i = 0;
	TAILQ_FOREACH(r, &c->stack, lru)
		if (i++ >= nfreq)
			sec[m++] = r;
	for (i = 0; i < m; i++)
		if (sec[i]->evictfact == 0)
			sec[i]->evictfact = rec + 1.0 / (double)sec[i]->pages;
	/* Stable: equal factors keep their stack order. */
	for (i = 0; i < m; i++)
		TAILQ_REMOVE(&c->stack, sec[i], lru);
	for (i = 1; i < m; i++) {
		struct rb2_mr_region *x = sec[i];
		unsigned int j = i;

		while (j > 0 && cmp_factor_desc(&sec[j - 1], &x) > 0) {
			sec[j] = sec[j - 1];
			j--;
		}
		sec[j] = x;
	}
	for (i = 0; i < m; i++)
		TAILQ_INSERT_TAIL(&c->stack, sec[i], lru);
	/* The eviction segment, from the bottom up. */
	TAILQ_FOREACH_REVERSE(r, &c->stack, mr_stack, lru) {
		if (freed >= RTE_MAX(over_pages, c->p.evict_batch_pages) && k >= over_regions)
			break;
		if (r->refs != 0)
			continue;
		victims[k++] = r;
		freed += r->pages;
	}
	if (freed < over_pages || k < over_regions) {
		free(sec);
		free(victims);
		free(regs);
		return -ENOSPC;     /* the rest is in use */
	}
	for (i = 0; i < k; i++) {
		region_unlink(c, victims[i]);
		regs[i] = victims[i]->reg;
		free(victims[i]);
	}
	c->p.dereg(c->p.ctx, regs, k);
	MRC_ADD(c, deregistrations, k);
	MRC_ADD(c, evictions, k);
	MRC_ADD(c, dereg_batches, 1);
	free(sec);
	free(victims);
	free(regs);
	return 0;
}

/* Register [start, end) as a new region, held once. */
static int
region_new(struct rb2_mr_cache *c, uintptr_t start, uintptr_t end,
	   struct rb2_mr_region **out)
{
	size_t pages = (end - start) / c->p.page_size;
	struct rb2_mr_region *r;
	unsigned int at;
	int ret;

	ret = make_room(c, pages);
	if (ret < 0)
		return ret;
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return -ENOMEM;
	ret = c->p.reg(c->p.ctx, (void *)start, end - start, &r->reg);
	if (ret < 0) {
		free(r);
		return ret;
	}
	r->start = start;
	r->end = end;
	r->pages = pages;
	r->refs = 1;
	at = first_after(c, start);
	memmove(&c->by_addr[at + 1], &c->by_addr[at], (c->n - at) * sizeof(r));
	c->by_addr[at] = r;
	c->n++;
	c->pages += pages;
	MRC_ADD(c, regions, 1);
	MRC_ADD(c, pages, pages);
	TAILQ_INSERT_HEAD(&c->stack, r, lru);
	MRC_ADD(c, registrations, 1);
	*out = r;
	return 0;
}

int
rb2_mr_cache_get(struct rb2_mr_cache *c, void *addr, size_t len,
		 struct rb2_mr_seg *segs, unsigned int max_segs)
{
	uintptr_t a = (uintptr_t)addr, ps, pe, cur;
	unsigned int i, np = 0, cached = 0;
	struct {
		uintptr_t start, end;
		struct rb2_mr_region *r;
	} piece[64];
	int ret = 0;

	if (len == 0)
		return -EINVAL;
	ps = RTE_ALIGN_FLOOR(a, (uintptr_t)c->p.page_size);
	pe = RTE_ALIGN_CEIL(a + len, (uintptr_t)c->p.page_size);
	/* Plan: cached regions and the gaps between them, in address order. */
	i = first_after(c, ps);
	for (cur = ps; cur < pe; ) {
		struct rb2_mr_region *r = i < c->n ? c->by_addr[i] : NULL;

		if (np == RTE_DIM(piece) || np == max_segs)
			return -E2BIG;
		if (r != NULL && r->start <= cur) {
			piece[np].start = cur;
			piece[np].end = RTE_MIN(r->end, pe);
			piece[np++].r = r;
			cached++;
			cur = r->end;
			i++;
		} else {
			piece[np].start = cur;
			piece[np].end = r != NULL && r->start < pe ? r->start : pe;
			piece[np++].r = NULL;
			cur = piece[np - 1].end;
		}
	}
	for (i = 0; i < np; i++)
		if (RTE_MIN(piece[i].end, a + len) - RTE_MAX(piece[i].start, a) > UINT32_MAX)
			return -EINVAL;
	/* Hold what is cached, so that making room does not evict it. */
	for (i = 0; i < np; i++)
		if (piece[i].r != NULL)
			piece[i].r->refs++;
	for (i = 0; i < np && ret == 0; i++)
		if (piece[i].r == NULL)
			ret = region_new(c, piece[i].start, piece[i].end, &piece[i].r);
	if (ret < 0) {
		/* Drop our holds; what was registered stays cached. */
		for (unsigned int j = 0; j < np; j++)
			if (piece[j].r != NULL)
				piece[j].r->refs--;
		return ret;
	}
	/* Used: to the top of the stack, the last piece topmost. */
	for (i = 0; i < np; i++) {
		struct rb2_mr_region *r = piece[i].r;

		r->evictfact = 0;
		TAILQ_REMOVE(&c->stack, r, lru);
		TAILQ_INSERT_HEAD(&c->stack, r, lru);
		segs[i].addr = (void *)RTE_MAX(piece[i].start, a);
		segs[i].len = (uint32_t)(RTE_MIN(piece[i].end, a + len) -
					 RTE_MAX(piece[i].start, a));
		segs[i].lkey = r->reg.lkey;
		segs[i].rkey = r->reg.rkey;
		segs[i].region = r;
	}
	MRC_ADD(c, gets, 1);
	if (cached == np) {
		MRC_ADD(c, hits, 1);
		MRC_ADD(c, exact_hits, np == 1 && piece[0].r->start == ps && piece[0].r->end == pe);
	} else if (cached > 0) {
		MRC_ADD(c, partial_hits, 1);
	} else {
		MRC_ADD(c, misses, 1);
	}
	MRC_ADD(c, in_use, np);
	return (int)np;
}

void
rb2_mr_cache_put(struct rb2_mr_cache *c, const struct rb2_mr_seg *segs, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		struct rb2_mr_region *r = segs[i].region;

		MRC_ADD(c, in_use, -1);
		if (--r->refs == 0 && r->invalid)
			region_free(c, r);
	}
}

int
rb2_mr_cache_invalidate(struct rb2_mr_cache *c, void *addr, size_t len)
{
	uintptr_t a = (uintptr_t)addr;
	unsigned int i = first_after(c, a), k = 0;

	while (i < c->n && c->by_addr[i]->start < a + len) {
		struct rb2_mr_region *r = c->by_addr[i];

		region_unlink(c, r);        /* the next one slides into i */
		k++;
		if (r->refs == 0)
			region_free(c, r);
		else
			r->invalid = 1;
	}
	MRC_ADD(c, invalidations, k);
	return (int)k;
}

#define RB2_MR_CACHE_STATS(X) X(gets) X(hits) X(exact_hits) X(partial_hits) X(misses) \
	X(registrations) X(deregistrations) X(dereg_batches) X(evictions) X(invalidations) \
	X(regions) X(pages) X(in_use)

void
rb2_mr_cache_stats_get(const struct rb2_mr_cache *c, struct rb2_mr_cache_stats *st)
{
#define MRC_COPY(f) st->f = MRC_READ(c, f);
	RB2_MR_CACHE_STATS(MRC_COPY)
#undef MRC_COPY
}

const char *
rb2_mr_cache_name(const struct rb2_mr_cache *c)
{
	return c->name;
}

void
rb2_mr_cache_walk(const struct rb2_mr_cache *c,
		  void (*cb)(void *arg, uintptr_t start, size_t pages, unsigned int refs),
		  void *arg)
{
	const struct rb2_mr_region *r;

	TAILQ_FOREACH(r, &c->stack, lru)
		cb(arg, r->start, r->pages, r->refs);
}

/* ---- through a transport ------------------------------------------------ */

static int
xport_reg(void *ctx, void *addr, size_t len, struct rb2_mr_reg *out)
{
	struct rb2_xport_mr *mr = calloc(1, sizeof(*mr));
	int ret;

	if (mr == NULL)
		return -ENOMEM;
	ret = rb2_xport_mr_reg(ctx, addr, len, mr);
	if (ret < 0) {
		free(mr);
		return ret;
	}
	out->lkey = mr->lkey;
	out->rkey = mr->rkey;
	out->handle = mr;
	return 0;
}

static void
xport_dereg(void *ctx, struct rb2_mr_reg *regs, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		rb2_xport_mr_dereg(ctx, regs[i].handle);
		free(regs[i].handle);
	}
}

struct rb2_mr_cache *
rb2_mr_cache_create_xport(struct rb2_xport *xp, const struct rb2_mr_cache_params *params)
{
	struct rb2_mr_cache_params p;

	if (xp->ops->mr_reg == NULL || xp->ops->mr_dereg == NULL) {
		RB2_XPORT_LOG(ERR, "mr cache: transport %s does not register application "
			      "memory", rb2_xport_name(xp));
		rte_errno = ENOTSUP;
		return NULL;
	}
	if (params == NULL)
		rb2_mr_cache_params_init(&p);
	else
		p = *params;
	p.reg = xport_reg;
	p.dereg = xport_dereg;
	p.ctx = xp;
	return rb2_mr_cache_create(&p);
}

/* ---- telemetry ----------------------------------------------------------- */

static int
tel_caches(const char *cmd __rte_unused, const char *params __rte_unused,
	   struct rte_tel_data *d)
{
	struct rb2_mr_cache *c;

	rte_tel_data_start_array(d, RTE_TEL_STRING_VAL);
	pthread_mutex_lock(&mr_caches.lock);
	TAILQ_FOREACH(c, &mr_caches.caches, next)
		rte_tel_data_add_array_string(d, c->name);
	pthread_mutex_unlock(&mr_caches.lock);
	return 0;
}

static int
tel_cache(const char *cmd __rte_unused, const char *params, struct rte_tel_data *d)
{
	struct rb2_mr_cache_stats st;
	struct rb2_mr_cache *c;
	int found = 0;

	if (params == NULL || params[0] == '\0')
		return -1;
	rte_tel_data_start_dict(d);
	pthread_mutex_lock(&mr_caches.lock);
	TAILQ_FOREACH(c, &mr_caches.caches, next) {
		if (strcmp(c->name, params) != 0)
			continue;
		found = 1;
		rte_tel_data_add_dict_string(d, "name", c->name);
		rte_tel_data_add_dict_u64(d, "max_pages", c->p.max_pages);
		rte_tel_data_add_dict_u64(d, "max_regions", c->p.max_regions);
		rte_tel_data_add_dict_u64(d, "page_size", c->p.page_size);
		rb2_mr_cache_stats_get(c, &st);
#define MRC_TEL(f) rte_tel_data_add_dict_u64(d, #f, st.f);
		RB2_MR_CACHE_STATS(MRC_TEL)
#undef MRC_TEL
		/* Hits per thousand gets. */
		rte_tel_data_add_dict_u64(d, "hit_permille",
					  st.gets ? st.hits * 1000 / st.gets : 0);
		break;
	}
	pthread_mutex_unlock(&mr_caches.lock);
	return found ? 0 : -1;
}

RTE_INIT(rb2_mr_cache_telemetry_init)
{
	rte_telemetry_register_cmd("/rb2/mr_caches", tel_caches,
		"Lists the memory registration caches of this process. Takes no parameters");
	rte_telemetry_register_cmd("/rb2/mr_cache", tel_cache,
		"Returns a registration cache's size and counters (hits, misses, evictions, ...). Parameters: cache name");
}
