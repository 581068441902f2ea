/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * The registration cache (lib/xport/rb2_mr_cache.h) against a reference
 * model: MRRC's algorithm written the plain way (arrays in stack order,
 * linear scans), driven with the same random gets, puts and invalidations.
 * After every step both must agree on the result, the segments, every
 * registration and every batch of deregistrations (the eviction order), and
 * the stack. Then the cases MRRC names, one by one.
 *
 * The cache never touches the memory it registers (the callbacks do), so
 * the addresses here are made up.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <rte_eal.h>
#include <rte_errno.h>

#include <rb2_lcore.h>
#include <rb2_mr_cache.h>
#include <rb2_xport.h>

#define PG 4096ul
#define MAXR 256

/* ---- the callbacks: a log of registrations and deregistration batches -- */

struct cb_log {
	uint32_t next_key;
	uint32_t regs[4096];           /* keys, in order */
	unsigned int nregs;
	uint32_t deregs[4096];         /* keys, in order, batches separated by 0 */
	unsigned int nderegs;
	int fail_next;                 /* make the next registration fail */
};

static int
log_reg(void *ctx, void *addr, size_t len, struct rb2_mr_reg *out)
{
	struct cb_log *l = ctx;

	(void)addr;
	(void)len;
	if (l->fail_next) {
		l->fail_next = 0;
		return -ENOMEM;
	}
	out->lkey = out->rkey = ++l->next_key;
	out->handle = NULL;
	if (l->nregs < 4096)
		l->regs[l->nregs++] = out->lkey;
	return 0;
}

static void
log_dereg(void *ctx, struct rb2_mr_reg *regs, unsigned int n)
{
	struct cb_log *l = ctx;

	for (unsigned int i = 0; i < n && l->nderegs < 4094; i++)
		l->deregs[l->nderegs++] = regs[i].lkey;
	l->deregs[l->nderegs++] = 0;
}

/* ---- the model ----------------------------------------------------------- */

struct mreg {
	uintptr_t start, end;
	unsigned int refs;
	double f;
	uint32_t key;
};

struct model {
	struct mreg st[MAXR];          /* the stack, st[0] on top */
	unsigned int n;
	struct mreg limbo[MAXR];       /* invalidated, still in use */
	unsigned int nlimbo;
	size_t max_pages;
	unsigned int max_regions, frequent_pct;
	size_t batch;
	struct cb_log log;
	uint64_t hits, partial, misses, evictions, invalidations, in_use;
};

static size_t
m_pages(const struct mreg *r)
{
	return (r->end - r->start) / PG;
}

static size_t
m_total(const struct model *m)
{
	size_t p = 0;

	for (unsigned int i = 0; i < m->n; i++)
		p += m_pages(&m->st[i]);
	return p;
}

static void
m_remove(struct model *m, unsigned int i)
{
	memmove(&m->st[i], &m->st[i + 1], (m->n - i - 1) * sizeof(m->st[0]));
	m->n--;
}

static void
m_push_top(struct model *m, struct mreg r)
{
	memmove(&m->st[1], &m->st[0], m->n * sizeof(m->st[0]));
	m->st[0] = r;
	m->n++;
}

static int
m_room(struct model *m, size_t pages)
{
	size_t total = m_total(m);
	size_t over = total + pages > m->max_pages ? total + pages - m->max_pages : 0;
	unsigned int over_r = m->n + 1 > m->max_regions, nfreq, k = 0;
	struct mreg sec[MAXR];
	unsigned int pos[MAXR], ns = 0;
	size_t freed = 0;
	double rec;

	if (over == 0 && !over_r)
		return 0;
	if (pages > m->max_pages)
		return -ENOSPC;
	rec = m->st[m->n - 1].f;
	nfreq = (m->n * m->frequent_pct + 99) / 100;
	for (unsigned int i = nfreq; i < m->n; i++) {
		sec[ns] = m->st[i];
		if (sec[ns].f == 0)
			sec[ns].f = rec + 1.0 / (double)m_pages(&sec[ns]);
		ns++;
	}
	/* Selection sort, largest factor first, ties in stack order. */
	for (unsigned int i = 0; i < ns; i++) {
		unsigned int best = i;

		for (unsigned int j = i + 1; j < ns; j++)
			if (sec[j].f > sec[best].f)
				best = j;
		struct mreg t = sec[best];
		memmove(&sec[i + 1], &sec[i], (best - i) * sizeof(t));
		sec[i] = t;
	}
	for (unsigned int i = 0; i < ns; i++)
		m->st[nfreq + i] = sec[i];
	for (int i = (int)m->n - 1; i >= 0; i--) {
		if (freed >= (over > m->batch ? over : m->batch) && k >= over_r)
			break;
		if (m->st[i].refs != 0)
			continue;
		pos[k++] = (unsigned int)i;
		freed += m_pages(&m->st[i]);
	}
	if (freed < over || k < over_r)
		return -ENOSPC;
	for (unsigned int i = 0; i < k; i++)
		m->log.deregs[m->log.nderegs++] = m->st[pos[i]].key;
	m->log.deregs[m->log.nderegs++] = 0;
	m->evictions += k;
	for (unsigned int i = 0; i < k; i++)    /* pos[] descends */
		m_remove(m, pos[i]);
	return 0;
}

struct mseg {
	uintptr_t addr;
	uint32_t len, key;
};

static int
m_get(struct model *m, uintptr_t a, size_t len, struct mseg *out, unsigned int max)
{
	uintptr_t ps = a & ~(PG - 1), pe = (a + len + PG - 1) & ~(PG - 1), cur = ps;
	struct { uintptr_t s, e; int cached; uint32_t key; } pc[64];
	unsigned int np = 0, cached = 0;

	while (cur < pe) {
		int hit = -1;
		uintptr_t next = pe;

		for (unsigned int i = 0; i < m->n; i++) {
			if (m->st[i].start <= cur && m->st[i].end > cur)
				hit = (int)i;
			else if (m->st[i].start > cur && m->st[i].start < next)
				next = m->st[i].start;
		}
		if (np == max || np == 64)
			return -E2BIG;
		if (hit >= 0) {
			pc[np].s = cur;
			pc[np].e = m->st[hit].end < pe ? m->st[hit].end : pe;
			pc[np].cached = 1;
			pc[np++].key = m->st[hit].key;
			cur = m->st[hit].end;
			cached++;
		} else {
			pc[np].s = cur;
			pc[np].e = next;
			pc[np++].cached = 0;
			cur = next;
		}
	}
	for (unsigned int i = 0; i < np; i++)
		for (unsigned int j = 0; pc[i].cached && j < m->n; j++)
			if (m->st[j].key == pc[i].key)
				m->st[j].refs++;
	for (unsigned int i = 0; i < np; i++) {
		int ret;

		if (pc[i].cached)
			continue;
		ret = m_room(m, (pc[i].e - pc[i].s) / PG);
		if (ret == 0 && m->log.fail_next) {
			m->log.fail_next = 0;
			ret = -ENOMEM;
		}
		if (ret < 0) {
			for (unsigned int k = 0; k < np; k++)
				for (unsigned int j = 0; (pc[k].cached || k < i) && j < m->n; j++)
					if (m->st[j].key == pc[k].key)
						m->st[j].refs--;
			return ret;
		}
		pc[i].key = ++m->log.next_key;
		m->log.regs[m->log.nregs++] = pc[i].key;
		m_push_top(m, (struct mreg){ pc[i].s, pc[i].e, 1, 0, pc[i].key });
		pc[i].cached = 2;           /* new */
	}
	for (unsigned int i = 0; i < np; i++) {
		for (unsigned int j = 0; j < m->n; j++) {
			if (m->st[j].key != pc[i].key)
				continue;
			struct mreg r = m->st[j];
			r.f = 0;
			m_remove(m, j);
			m_push_top(m, r);
			break;
		}
		out[i].addr = pc[i].s > a ? pc[i].s : a;
		out[i].len = (uint32_t)((pc[i].e < a + len ? pc[i].e : a + len) - out[i].addr);
		out[i].key = pc[i].key;
	}
	m->in_use += np;
	if (cached == np)
		m->hits++;
	else if (cached > 0)
		m->partial++;
	else
		m->misses++;
	return (int)np;
}

static void
m_put(struct model *m, uint32_t key)
{
	m->in_use--;
	for (unsigned int j = 0; j < m->n; j++)
		if (m->st[j].key == key) {
			m->st[j].refs--;
			return;
		}
	for (unsigned int j = 0; j < m->nlimbo; j++)
		if (m->limbo[j].key == key && --m->limbo[j].refs == 0) {
			m->log.deregs[m->log.nderegs++] = key;
			m->log.deregs[m->log.nderegs++] = 0;
			m->limbo[j] = m->limbo[--m->nlimbo];
			return;
		}
}

static int
m_invalidate(struct model *m, uintptr_t a, size_t len)
{
	int k = 0;
	/* In address order, as the cache finds them. */
	for (;;) {
		int lo = -1;

		for (unsigned int j = 0; j < m->n; j++)
			if (m->st[j].end > a && m->st[j].start < a + len &&
			    (lo < 0 || m->st[j].start < m->st[lo].start))
				lo = (int)j;
		if (lo < 0)
			return k;
		k++;
		m->invalidations++;
		if (m->st[lo].refs == 0) {
			m->log.deregs[m->log.nderegs++] = m->st[lo].key;
			m->log.deregs[m->log.nderegs++] = 0;
		} else {
			m->limbo[m->nlimbo++] = m->st[lo];
		}
		m_remove(m, (unsigned int)lo);
	}
}

/* ---- comparing ----------------------------------------------------------- */

struct walk {
	uintptr_t start[MAXR];
	size_t pages[MAXR];
	unsigned int refs[MAXR], n;
};

static void
walk_cb(void *arg, uintptr_t start, size_t pages, unsigned int refs)
{
	struct walk *w = arg;

	w->start[w->n] = start;
	w->pages[w->n] = pages;
	w->refs[w->n++] = refs;
}

static void
same_state(struct rb2_mr_cache *c, struct model *m, struct cb_log *log, int step)
{
	struct walk w = {0};
	struct rb2_mr_cache_stats st;

	rb2_mr_cache_walk(c, walk_cb, &w);
	cr_assert_eq(w.n, m->n, "step %d: %u regions, the model %u", step, w.n, m->n);
	for (unsigned int i = 0; i < w.n; i++) {
		cr_assert_eq(w.start[i], m->st[i].start, "step %d: stack %u: %#lx, model %#lx",
			     step, i, (unsigned long)w.start[i], (unsigned long)m->st[i].start);
		cr_assert_eq(w.pages[i], m_pages(&m->st[i]), "step %d: stack %u pages", step, i);
		cr_assert_eq(w.refs[i], m->st[i].refs, "step %d: stack %u refs", step, i);
	}
	cr_assert_eq(log->nregs, m->log.nregs, "step %d: registrations", step);
	cr_assert_eq(memcmp(log->regs, m->log.regs, log->nregs * 4), 0, "step %d", step);
	cr_assert_eq(log->nderegs, m->log.nderegs, "step %d: deregistrations %u, model %u",
		     step, log->nderegs, m->log.nderegs);
	cr_assert_eq(memcmp(log->deregs, m->log.deregs, log->nderegs * 4), 0,
		     "step %d: deregistration order differs", step);
	rb2_mr_cache_stats_get(c, &st);
	cr_assert_eq(st.hits, m->hits, "step %d: hits", step);
	cr_assert_eq(st.partial_hits, m->partial, "step %d: partial hits", step);
	cr_assert_eq(st.misses, m->misses, "step %d: misses", step);
	cr_assert_eq(st.evictions, m->evictions, "step %d: evictions", step);
	cr_assert_eq(st.pages, m_total(m), "step %d: pages", step);
	cr_assert_eq(st.invalidations, m->invalidations, "step %d: invalidations", step);
	cr_assert_eq(st.in_use, m->in_use, "step %d: regions in use", step);
}

static struct rb2_mr_cache *
make(struct cb_log *log, size_t max_pages, unsigned int max_regions)
{
	struct rb2_mr_cache_params p;

	rb2_mr_cache_params_init(&p);
	p.page_size = PG;
	p.max_pages = max_pages;
	p.max_regions = max_regions;
	p.reg = log_reg;
	p.dereg = log_dereg;
	p.ctx = log;
	return rb2_mr_cache_create(&p);
}

static uint64_t
rnd(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

TestSuite(rb2_mr_cache, .timeout = 120);

Test(rb2_mr_cache, agrees_with_the_reference_model)
{
	for (uint64_t seed = 1; seed <= 40; seed++) {
		static struct cb_log log;
		static struct model m;
		struct { struct rb2_mr_seg s[8]; struct mseg ms[8]; int n; } held[16];
		unsigned int nheld = 0;
		uint64_t s = seed;
		struct rb2_mr_cache *c;

		memset(&log, 0, sizeof(log));
		memset(&m, 0, sizeof(m));
		m.max_pages = 64 + seed % 64;
		m.max_regions = 8 + (unsigned int)(seed % 24);
		m.frequent_pct = 50;
		m.batch = m.max_pages / 8 ? m.max_pages / 8 : 1;
		c = make(&log, m.max_pages, m.max_regions);
		cr_assert_not_null(c);
		for (int step = 0; step < 600; step++) {
			unsigned int op = (unsigned int)(rnd(&s) % 10);

			if (op < 6 && nheld < 16) {
				/* A buffer: one of a few hot ones, or anywhere. */
				uintptr_t a = (rnd(&s) % 4 ? (rnd(&s) % 8) * 16 * PG :
					       rnd(&s) % (256 * PG)) + rnd(&s) % PG;
				size_t len = 1 + rnd(&s) % (rnd(&s) % 3 ? 4 * PG : 24 * PG);

				if (rnd(&s) % 50 == 0)
					log.fail_next = m.log.fail_next = 1;
				int n1 = rb2_mr_cache_get(c, (void *)a, len, held[nheld].s, 8);
				int n2 = m_get(&m, a, len, held[nheld].ms, 8);

				cr_assert_eq(n1, n2, "seed %lu step %d: get %#lx+%zu: %d, model %d",
					     (unsigned long)seed, step, (unsigned long)a, len, n1, n2);
				log.fail_next = m.log.fail_next = 0;
				for (int i = 0; i < n1; i++) {
					cr_assert_eq((uintptr_t)held[nheld].s[i].addr, held[nheld].ms[i].addr);
					cr_assert_eq(held[nheld].s[i].len, held[nheld].ms[i].len);
					cr_assert_eq(held[nheld].s[i].lkey, held[nheld].ms[i].key);
				}
				if (n1 > 0)
					held[nheld++].n = n1;
			} else if (op < 9 && nheld > 0) {
				unsigned int k = (unsigned int)(rnd(&s) % nheld);

				rb2_mr_cache_put(c, held[k].s, (unsigned int)held[k].n);
				for (int i = 0; i < held[k].n; i++)
					m_put(&m, held[k].ms[i].key);
				held[k] = held[--nheld];
			} else {
				uintptr_t a = rnd(&s) % (256 * PG);
				size_t len = 1 + rnd(&s) % (8 * PG);

				cr_assert_eq(rb2_mr_cache_invalidate(c, (void *)a, len),
					     m_invalidate(&m, a, len), "seed %lu step %d: invalidate",
					     (unsigned long)seed, step);
			}
			same_state(c, &m, &log, step);
		}
		while (nheld > 0) {
			rb2_mr_cache_put(c, held[nheld - 1].s, (unsigned int)held[nheld - 1].n);
			nheld--;
		}
		rb2_mr_cache_destroy(c);
	}
}

/* The four cases of MRRC §5: exact, subset, overlap, none. */
Test(rb2_mr_cache, exact_subset_overlap_and_miss)
{
	static struct cb_log log;
	struct rb2_mr_cache *c = make(&log, 1024, 64);
	struct rb2_mr_cache_stats st;
	struct rb2_mr_seg s[4];
	char *base = (char *)(64 * PG);

	cr_assert_eq(rb2_mr_cache_get(c, base, 4 * PG, s, 4), 1);        /* miss */
	rb2_mr_cache_put(c, s, 1);
	cr_assert_eq(rb2_mr_cache_get(c, base, 4 * PG, s, 4), 1);        /* exact */
	rb2_mr_cache_put(c, s, 1);
	cr_assert_eq(rb2_mr_cache_get(c, base + PG + 5, 100, s, 4), 1);  /* subset */
	cr_assert_eq(s[0].addr, base + PG + 5);
	cr_assert_eq(s[0].len, 100);
	rb2_mr_cache_put(c, s, 1);
	/* Overlap: pages 2..5; 2..3 are cached, 4..5 are registered. */
	cr_assert_eq(rb2_mr_cache_get(c, base + 2 * PG, 4 * PG, s, 4), 2);
	cr_assert_eq(s[0].len, 2 * PG);
	cr_assert_eq(s[1].addr, base + 4 * PG);
	cr_assert_eq(s[1].len, 2 * PG);
	cr_assert_neq(s[0].lkey, s[1].lkey);
	rb2_mr_cache_put(c, s, 2);
	rb2_mr_cache_stats_get(c, &st);
	cr_expect_eq(st.misses, 1);
	cr_expect_eq(st.hits, 2);
	cr_expect_eq(st.exact_hits, 1);
	cr_expect_eq(st.partial_hits, 1);
	cr_expect_eq(st.registrations, 2);
	cr_expect_eq(st.pages, 6);
	/* A request that needs more segments than given holds nothing. */
	cr_assert_eq(rb2_mr_cache_get(c, base - PG, 8 * PG, s, 2), -E2BIG);
	rb2_mr_cache_stats_get(c, &st);
	cr_expect_eq(st.in_use, 0);
	rb2_mr_cache_destroy(c);
}

/* Among regions of the same age, the large one is evicted first; regions
 * in use never are; a full cache of regions in use says so. */
Test(rb2_mr_cache, eviction_by_size_and_recency)
{
	static struct cb_log log;
	struct rb2_mr_cache_params p;
	struct rb2_mr_cache *c;
	struct rb2_mr_seg s[4], big, hold;
	uint32_t big_key;

	rb2_mr_cache_params_init(&p);
	p.page_size = PG;
	p.max_pages = 32;
	p.max_regions = 16;
	p.evict_batch_pages = 1;
	p.frequent_pct = 0;            /* all of the stack is resorted */
	p.reg = log_reg;
	p.dereg = log_dereg;
	p.ctx = &log;
	c = rb2_mr_cache_create(&p);
	cr_assert_not_null(c);
	/* Oldest first: a small region, a large one, a small one. */
	cr_assert_eq(rb2_mr_cache_get(c, (void *)(0 * PG), PG, s, 4), 1);
	rb2_mr_cache_put(c, s, 1);
	cr_assert_eq(rb2_mr_cache_get(c, (void *)(10 * PG), 16 * PG, &big, 1), 1);
	big_key = big.lkey;
	rb2_mr_cache_put(c, &big, 1);
	cr_assert_eq(rb2_mr_cache_get(c, (void *)(40 * PG), PG, s, 4), 1);
	rb2_mr_cache_put(c, s, 1);
	/* 18 pages in; 15 more need room: the large region goes, not the
	 * oldest (same factor base, 1/16 < 1/1). */
	cr_assert_eq(rb2_mr_cache_get(c, (void *)(100 * PG), 15 * PG, s, 4), 1);
	rb2_mr_cache_put(c, s, 1);
	cr_assert_eq(log.nderegs, 2);
	cr_assert_eq(log.deregs[0], big_key, "evicted %u, not the large region %u",
		     log.deregs[0], big_key);
	/* Everything in use: nothing can go. */
	cr_assert_eq(rb2_mr_cache_get(c, (void *)(100 * PG), 15 * PG, &hold, 1), 1);
	cr_assert_eq(rb2_mr_cache_get(c, (void *)(0 * PG), PG, s, 1), 1);
	cr_assert_eq(rb2_mr_cache_get(c, (void *)(40 * PG), PG, s + 1, 1), 1);
	cr_assert_eq(rb2_mr_cache_get(c, (void *)(200 * PG), 16 * PG, s + 2, 1), -ENOSPC);
	cr_assert_eq(rb2_mr_cache_get(c, (void *)(300 * PG), 33 * PG, s + 2, 1), -ENOSPC);
	rb2_mr_cache_put(c, s, 2);
	rb2_mr_cache_put(c, &hold, 1);
	rb2_mr_cache_destroy(c);
}

/* A freed buffer: its region goes at once, or at the last put if in use. */
Test(rb2_mr_cache, invalidation_when_a_buffer_is_freed)
{
	static struct cb_log log;
	struct rb2_mr_cache *c = make(&log, 1024, 64);
	struct rb2_mr_cache_stats st;
	struct rb2_mr_seg a, b;

	cr_assert_eq(rb2_mr_cache_get(c, (void *)(8 * PG), 2 * PG, &a, 1), 1);
	rb2_mr_cache_put(c, &a, 1);
	cr_assert_eq(rb2_mr_cache_invalidate(c, (void *)(8 * PG), 2 * PG), 1);
	cr_assert_eq(log.nderegs, 2);            /* deregistered now */
	/* Registered again on the next use (a new buffer at that address). */
	cr_assert_eq(rb2_mr_cache_get(c, (void *)(8 * PG), 2 * PG, &a, 1), 1);
	rb2_mr_cache_stats_get(c, &st);
	cr_assert_eq(st.misses, 2);
	cr_assert_eq(rb2_mr_cache_get(c, (void *)(8 * PG), PG, &b, 1), 1);
	cr_assert_eq(rb2_mr_cache_invalidate(c, (void *)(9 * PG), 1), 1);
	cr_assert_eq(log.nderegs, 2, "deregistered while in use");
	rb2_mr_cache_put(c, &a, 1);
	cr_assert_eq(log.nderegs, 2);
	rb2_mr_cache_put(c, &b, 1);
	cr_assert_eq(log.nderegs, 4, "not deregistered at its last put");
	rb2_mr_cache_stats_get(c, &st);
	cr_assert_eq(st.invalidations, 2);
	cr_assert_eq(st.regions, 0);
	rb2_mr_cache_destroy(c);
}

/* Through a transport: the loop driver registers application memory (a key
 * per region); shm has nothing to register and says so. */
Test(rb2_mr_cache, through_a_transport)
{
	char prefix[32];
	char *argv[] = { "t", "-l", "0", "--no-pci", "--no-huge", "-m", "64", "--file-prefix",
			 prefix, "--log-level", "lib.eal:error", NULL };
	static char buf[64 * 4096] __attribute__((aligned(4096)));
	struct rb2_mr_seg s[2], t;
	struct rb2_mr_cache *c;
	struct rb2_xport *xp;

	snprintf(prefix, sizeof(prefix), "mrc%d", (int)getpid());
	cr_assert_geq(rte_eal_init(11, argv), 0);
	xp = rb2_xport_open("loop", NULL);
	cr_assert_not_null(xp);
	c = rb2_mr_cache_create_xport(xp, NULL);
	cr_assert_not_null(c, "%s", rte_strerror(rte_errno));
	cr_assert_eq(rb2_mr_cache_get(c, buf, 2 * 4096, s, 2), 1);
	cr_assert_eq(rb2_mr_cache_get(c, buf + 4096, 3 * 4096, &t, 1), -E2BIG);
	cr_assert_eq(rb2_mr_cache_get(c, buf + 100, 200, &t, 1), 1);
	cr_assert_eq(t.lkey, s[0].lkey, "a hit has the region's key");
	rb2_mr_cache_put(c, &t, 1);
	rb2_mr_cache_put(c, s, 1);
	rb2_mr_cache_destroy(c);
	rb2_xport_close(xp);
	xp = rb2_xport_open("shm", NULL);
	cr_assert_not_null(xp);
	cr_assert_null(rb2_mr_cache_create_xport(xp, NULL));
	cr_assert_eq(rte_errno, ENOTSUP);
	rb2_xport_close(xp);
	rb2_eal_cleanup();
}
