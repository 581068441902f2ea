/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* The measurement NF's flow table: a bounded flow cache with timeouts,
 * top-K and count-min sketch. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_malloc.h>

#include "rb2_flowtab.h"

#define CM_ROWS 4
#define BURST 32
#define NONE UINT32_MAX
/* A full sweep of the table every half of the shorter timeout of trace
 * time (a record is reported at most that late); at most SWEEP_MAX slots a
 * call (the rest is owed to the next). The sweep's cost goes with time, not
 * packets: 2M slots every 30 s by default. */
#define SWEEP_SHARE 2
#define SWEEP_MAX 4096
/* A growing table's first size, in slots (2.5 MiB). */
#define FIRST_SLOTS (UINT64_C(1) << 15)

#define rare(x) __builtin_expect(!!(x), 0)

#define TCP_FIN 0x01
#define TCP_RST 0x04

/* Off the per-packet path, per slot: where the flow stands in the order
 * records started, and its IPv6 addresses (an index into v6[]). */
struct cold {
	uint32_t prev, next;
	uint32_t v6;
	uint32_t rsvd;
};

struct v6tuple {
	uint8_t src[16], dst[16];
	uint16_t sport, dport;
	uint32_t next_free;
};

struct rb2_flowtab {
	struct rb2_flow *slots;
	struct cold *cold;
	uint64_t *occ;        /* a bit per slot, set while it holds a flow: the
			       * sweep skips empty slots 64 at a time */
	struct v6tuple *v6;   /* as many as the table holds flows (grow_at) */
	uint32_t v6_free;     /* free list head; NONE: empty */
	uint32_t v6_used;     /* entries ever used: the rest need no free list */
	uint64_t mask;        /* slots - 1 */
	uint64_t count, cap;
	uint64_t grow_at;     /* count that doubles the table; cap: full size */
	uint64_t max_slots;   /* slots at full size */
	int socket_id;
	uint32_t head, tail;  /* oldest and newest record; NONE: no flow */
	uint64_t active_ns, idle_ns;
	uint64_t now;         /* the latest record time seen */
	uint64_t swept_at;    /* @now when the sweep's share was last taken */
	uint64_t sweep_pos, sweep_owed;
	uint64_t sweep_period; /* ns of trace time per full sweep; 0: none */
	struct rb2_nf_totals tot;
	uint32_t cm_width;    /* 0: no sketch */
	uint64_t *cm;         /* CM_ROWS x cm_width */
	int libc;
	uint64_t memory, memory_peak;
	void (*end)(void *arg, const struct rb2_flow_rec *rec);
	void *end_arg;
};

const char *
rb2_flow_end_name(unsigned int reason)
{
	static const char *const names[RB2_FLOW_END_MAX] = {
		[RB2_FLOW_END_IDLE] = "idle", [RB2_FLOW_END_ACTIVE] = "active",
		[RB2_FLOW_END_DETECTED] = "end", [RB2_FLOW_END_FORCED] = "forced",
		[RB2_FLOW_END_RESOURCES] = "evicted",
	};

	return reason < RB2_FLOW_END_MAX && names[reason] ? names[reason] : "live";
}

void
rb2_flowtab_params_init(struct rb2_flowtab_params *p)
{
	memset(p, 0, sizeof(*p));
	p->max_flows = 1 << 20;
	p->active_ns = 300 * UINT64_C(1000000000);
	p->idle_ns = 60 * UINT64_C(1000000000);
	p->socket_id = RB2_FLOWTAB_LIBC;
}

/* 64-bit FNV-1a: IPv6 keys are a digest of the 5-tuple. */
static uint64_t
fnv(const uint8_t *p, size_t n, uint64_t h)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

/* The key: IPv4 whole; IPv6 as a 160-bit digest (its tuple is 37 bytes).
 * k1's top 24 bits hold the kind and the ingress port for both. */
static void
key_of(const struct rb2_rec *r, uint64_t k[3])
{
	uint64_t tag = (uint64_t)r->kind << 40 | (uint64_t)r->in_port << 48 |
		(uint64_t)r->proto << 32;

	if (r->kind == RB2_REC_IPV4) {
		k[0] = (uint64_t)r->src | (uint64_t)r->dst << 32;
		k[1] = (uint64_t)r->sport | (uint64_t)r->dport << 16 | tag;
		k[2] = 0;
	} else {
		uint8_t t[36];

		memcpy(t, r->src6, 16);
		memcpy(t + 16, r->dst6, 16);
		memcpy(t + 32, &r->sport, 2);
		memcpy(t + 34, &r->dport, 2);
		k[0] = fnv(t, sizeof(t), 14695981039346656037ull);
		k[2] = fnv(t, sizeof(t), 0x84222325cbf29ce4ull);
		k[1] = (k[0] ^ k[2] >> 17) & 0xffffffffu;
		k[1] |= tag;
	}
}

/* A 32-bit mix of the key, never 0 (0 marks an empty slot). */
static uint32_t
hash_of(const uint64_t k[3])
{
	uint64_t h = k[0] * 0x9e3779b97f4a7c15ull;

	h ^= (k[1] + (h >> 29)) * 0xbf58476d1ce4e5b9ull;
	h ^= (k[2] + (h >> 31)) * 0x94d049bb133111ebull;
	h ^= h >> 32;
	return (uint32_t)h | 1;
}

/* @p zero: the memory must read 0 (slots, occupancy); the rest is written
 * before it is read. */
static void *
tab_alloc(const struct rb2_flowtab *ft, size_t size, int socket, int zero)
{
	void *p;

	if (!ft->libc)
		return zero ? rte_zmalloc_socket("rb2_flowtab", size, 64, socket) :
			rte_malloc_socket("rb2_flowtab", size, 64, socket);
	if (posix_memalign(&p, 64, size) != 0)
		return NULL;
	if (zero)
		memset(p, 0, size);
	return p;
}

static void
tab_free(const struct rb2_flowtab *ft, void *p)
{
	if (p == NULL)
		return;
	if (ft->libc)
		free(p);
	else
		rte_free(p);
}

/* The bytes a table of @p slots holds (the sketch aside). */
static uint64_t
size_of(const struct rb2_flowtab *ft, uint64_t slots)
{
	uint64_t flows = slots == ft->max_slots ? ft->cap : slots / 10 * 7;

	return slots * (sizeof(struct rb2_flow) + sizeof(struct cold)) + slots / 8 +
		flows * sizeof(struct v6tuple);
}

/* Arrays for @p slots slots (and their flows' IPv6 tuples); 0 or -ENOMEM. */
static int
arrays_alloc(struct rb2_flowtab *ft, uint64_t slots, struct rb2_flow **s, struct cold **c,
	     uint64_t **occ, struct v6tuple **v6, uint64_t *grow_at)
{
	*grow_at = slots == ft->max_slots ? ft->cap : slots / 10 * 7;
	*s = tab_alloc(ft, slots * sizeof(**s), ft->socket_id, 1);
	*c = tab_alloc(ft, slots * sizeof(**c), ft->socket_id, 0);
	*occ = tab_alloc(ft, slots / 8 < 8 ? 8 : slots / 8, ft->socket_id, 1);
	*v6 = tab_alloc(ft, *grow_at * sizeof(**v6), ft->socket_id, 0);
	if (*s != NULL && *c != NULL && *occ != NULL && *v6 != NULL)
		return 0;
	tab_free(ft, *s);
	tab_free(ft, *c);
	tab_free(ft, *occ);
	tab_free(ft, *v6);
	return -ENOMEM;
}

struct rb2_flowtab *
rb2_flowtab_create(const struct rb2_flowtab_params *p)
{
	struct rb2_flowtab *ft;
	uint64_t slots = 64, min_to;

	if (p->max_flows == 0 || p->max_flows > (UINT64_C(1) << 31)) {
		errno = EINVAL;
		return NULL;
	}
	ft = calloc(1, sizeof(*ft));
	if (ft == NULL)
		return NULL;
	ft->libc = p->socket_id == RB2_FLOWTAB_LIBC;
	ft->socket_id = p->socket_id;
	while (slots / 10 * 7 < p->max_flows)
		slots <<= 1;
	ft->max_slots = slots;
	if (!p->prealloc && slots > FIRST_SLOTS)
		slots = FIRST_SLOTS;
	ft->mask = slots - 1;
	ft->cap = p->max_flows;
	ft->active_ns = p->active_ns;
	ft->idle_ns = p->idle_ns;
	min_to = p->idle_ns && (!p->active_ns || p->idle_ns < p->active_ns) ? p->idle_ns :
		p->active_ns;
	ft->sweep_period = min_to / SWEEP_SHARE;
	ft->head = ft->tail = NONE;
	ft->v6_free = NONE;
	ft->end = p->end;
	ft->end_arg = p->end_arg;
	ft->cm_width = p->cm_width;
	ft->memory = size_of(ft, ft->max_slots) + (uint64_t)CM_ROWS * p->cm_width * 8;
	ft->memory_peak = size_of(ft, slots) + (uint64_t)CM_ROWS * p->cm_width * 8;
	if (p->cm_width != 0)
		ft->cm = tab_alloc(ft, (size_t)CM_ROWS * p->cm_width * sizeof(*ft->cm),
				   p->socket_id, 1);
	if ((p->cm_width != 0 && ft->cm == NULL) ||
	    arrays_alloc(ft, slots, &ft->slots, &ft->cold, &ft->occ, &ft->v6, &ft->grow_at) < 0) {
		rb2_flowtab_free(ft);
		errno = ENOMEM;
		return NULL;
	}
	return ft;
}

void
rb2_flowtab_free(struct rb2_flowtab *ft)
{
	if (ft == NULL)
		return;
	tab_free(ft, ft->slots);
	tab_free(ft, ft->cold);
	tab_free(ft, ft->occ);
	tab_free(ft, ft->v6);
	tab_free(ft, ft->cm);
	free(ft);
}

uint64_t
rb2_flowtab_memory(const struct rb2_flowtab *ft)
{
	return ft->memory + sizeof(*ft);
}

uint64_t
rb2_flowtab_memory_peak(const struct rb2_flowtab *ft)
{
	return ft->memory_peak + sizeof(*ft);
}

/* Find the key's slot, or the empty one where it goes (linear probing). */
static uint64_t
probe(const struct rb2_flowtab *ft, uint32_t h, const uint64_t k[3])
{
	for (uint64_t i = h & ft->mask;; i = (i + 1) & ft->mask) {
		const struct rb2_flow *f = &ft->slots[i];

		if (f->hash == 0 || (f->hash == h && f->k0 == k[0] && f->k1 == k[1] &&
				     f->k2 == k[2]))
			return i;
	}
}

/* ---- The order records started (a list through cold[]) ----------------- */

static void
order_append(struct rb2_flowtab *ft, uint32_t i)
{
	ft->cold[i].prev = ft->tail;
	ft->cold[i].next = NONE;
	if (ft->tail != NONE)
		ft->cold[ft->tail].next = i;
	else
		ft->head = i;
	ft->tail = i;
}

static void
order_unlink(struct rb2_flowtab *ft, uint32_t i)
{
	struct cold *c = &ft->cold[i];

	if (c->prev != NONE)
		ft->cold[c->prev].next = c->next;
	else
		ft->head = c->next;
	if (c->next != NONE)
		ft->cold[c->next].prev = c->prev;
	else
		ft->tail = c->prev;
}

/* Slot @from's flow now lives at @to: its neighbours learn where. */
static void
order_moved(struct rb2_flowtab *ft, uint32_t from, uint32_t to)
{
	struct cold *c = &ft->cold[to];

	if (c->prev != NONE)
		ft->cold[c->prev].next = to;
	else if (ft->head == from)
		ft->head = to;
	if (c->next != NONE)
		ft->cold[c->next].prev = to;
	else if (ft->tail == from)
		ft->tail = to;
}

/* ---- Records ------------------------------------------------------------- */

void
rb2_flowtab_rec(const struct rb2_flowtab *ft, const struct rb2_flow *f,
		struct rb2_flow_rec *out)
{
	memset(out, 0, sizeof(*out));
	out->kind = (uint8_t)(f->k1 >> 40);
	out->proto = (uint8_t)(f->k1 >> 32);
	out->in_port = (uint16_t)(f->k1 >> 48);
	if (out->kind == RB2_REC_IPV4) {
		uint32_t s = (uint32_t)f->k0, d = (uint32_t)(f->k0 >> 32);

		memcpy(out->src, &s, 4);
		memcpy(out->dst, &d, 4);
		out->sport = (uint16_t)f->k1;
		out->dport = (uint16_t)(f->k1 >> 16);
	} else {
		const struct v6tuple *t = &ft->v6[ft->cold[f - ft->slots].v6];

		memcpy(out->src, t->src, 16);
		memcpy(out->dst, t->dst, 16);
		out->sport = t->sport;
		out->dport = t->dport;
	}
	out->tcp_flags = f->tcp_flags;
	out->packets = f->packets;
	out->bytes = f->bytes;
	out->first_ns = f->first_ns;
	out->last_ns = f->last_ns;
}

/* Hand slot @i's record to the callback, and count it. */
static void
report_end(struct rb2_flowtab *ft, uint64_t i, unsigned int reason)
{
	struct rb2_flow_rec r;

	ft->tot.records++;
	ft->tot.ended[reason]++;
	if (ft->end == NULL)
		return;
	rb2_flowtab_rec(ft, &ft->slots[i], &r);
	r.end_reason = (uint8_t)reason;
	ft->end(ft->end_arg, &r);
}

/* Empty slot @i: backward-shift deletion, so that no probe sequence breaks
 * (no tombstones to clean up later). Flows behind it in its cluster may move
 * back: the caller must not keep slot indices across this. */
static void
remove_slot(struct rb2_flowtab *ft, uint64_t i)
{
	uint64_t j = i;

	order_unlink(ft, (uint32_t)i);
	if ((uint8_t)(ft->slots[i].k1 >> 40) == RB2_REC_IPV6) {
		uint32_t v = ft->cold[i].v6;

		ft->v6[v].next_free = ft->v6_free;
		ft->v6_free = v;
	}
	ft->count--;
	for (;;) {
		uint64_t home;

		j = (j + 1) & ft->mask;
		if (ft->slots[j].hash == 0)
			break;
		home = ft->slots[j].hash & ft->mask;
		/* Does j's probe sequence pass i (home cyclically in (j, i])?
		 * Then j may fill the hole. */
		if ((i <= j) ? (home <= i || home > j) : (home <= i && home > j)) {
			ft->slots[i] = ft->slots[j];
			ft->cold[i] = ft->cold[j];
			order_moved(ft, (uint32_t)j, (uint32_t)i);
			i = j;
		}
	}
	memset(&ft->slots[i], 0, sizeof(ft->slots[i]));
	ft->occ[i >> 6] &= ~(UINT64_C(1) << (i & 63));
}

static void
end_and_remove(struct rb2_flowtab *ft, uint64_t i, unsigned int reason)
{
	report_end(ft, i, reason);
	remove_slot(ft, i);
}

/* Which timeout has passed for flow @f at time @now; 0: none. If both
 * have, the one that came due first: the reason does not depend on when
 * it is noticed (at the flow's next packet, or in a sweep). */
static inline unsigned int
timed_out(const struct rb2_flowtab *ft, const struct rb2_flow *f, uint64_t now)
{
	int idle = ft->idle_ns && now > f->last_ns && now - f->last_ns >= ft->idle_ns;
	int active = ft->active_ns && now > f->first_ns && now - f->first_ns >= ft->active_ns;

	if (idle && active)
		return f->last_ns + ft->idle_ns <= f->first_ns + ft->active_ns ?
			RB2_FLOW_END_IDLE : RB2_FLOW_END_ACTIVE;
	return idle ? RB2_FLOW_END_IDLE : active ? RB2_FLOW_END_ACTIVE : 0;
}

/* Visit @n slots from where the last sweep stopped, ending the records
 * whose timeouts have passed at @now. Empty slots cost a bit each. */
static uint64_t
sweep(struct rb2_flowtab *ft, uint64_t now, uint64_t n)
{
	uint64_t ended = 0, i = ft->sweep_pos;

	while (n > 0) {
		uint64_t w = ft->occ[i >> 6] >> (i & 63), z;
		unsigned int why;

		if (w == 0) {             /* the rest of this word is empty */
			z = 64 - (i & 63);
			z = z < n ? z : n;
			i = (i + z) & ft->mask;
			n -= z;
			continue;
		}
		z = (uint64_t)__builtin_ctzll(w);
		if (z >= n) {
			i = (i + n) & ft->mask;
			break;
		}
		i = (i + z) & ft->mask;
		n -= z;
		/* A removal may shift the next flow into i: look at i again. */
		while (ft->slots[i].hash != 0 && (why = timed_out(ft, &ft->slots[i], now)) != 0) {
			end_and_remove(ft, i, why);
			ended++;
		}
		i = (i + 1) & ft->mask;
		n--;
	}
	ft->sweep_pos = i;
	return ended;
}

uint64_t
rb2_flowtab_expire(struct rb2_flowtab *ft, uint64_t now_ns, uint64_t slots)
{
	if (ft->sweep_period == 0)
		return 0;
	if (now_ns > ft->now)
		ft->now = now_ns;
	return sweep(ft, ft->now, slots == 0 || slots > ft->mask + 1 ? ft->mask + 1 : slots);
}

/* The sweep's share for the trace time that passed since the last: a full
 * pass every sweep_period, in pieces of at most SWEEP_MAX slots. */
static void
sweep_share(struct rb2_flowtab *ft)
{
	uint64_t dt = ft->now - ft->swept_at, n;

	if (ft->sweep_period == 0 || ft->swept_at == 0) {
		ft->swept_at = ft->now;
		return;
	}
	if (dt == 0 && ft->sweep_owed == 0)
		return;
	ft->swept_at = ft->now;
	/* slots x dt / period, without overflow for any dt. */
	if (dt >= ft->sweep_period)
		ft->sweep_owed = ft->mask + 1;
	else
		ft->sweep_owed += (uint64_t)((double)(ft->mask + 1) * (double)dt /
					     (double)ft->sweep_period);
	if (ft->sweep_owed > ft->mask + 1)
		ft->sweep_owed = ft->mask + 1;
	n = ft->sweep_owed < SWEEP_MAX ? ft->sweep_owed : SWEEP_MAX;
	ft->sweep_owed -= n;
	sweep(ft, ft->now, n);
}

uint64_t
rb2_flowtab_flush(struct rb2_flowtab *ft, unsigned int reason, uint64_t max)
{
	uint64_t n = 0;

	/* Oldest first, as an exporter would send them. A record whose
	 * timeout has passed by the latest record's time ends for it, as the
	 * sweep would have ended it: so which records end how does not
	 * depend on how far the sweep had gone. */
	while (ft->head != NONE && (max == 0 || n < max)) {
		unsigned int why = timed_out(ft, &ft->slots[ft->head], ft->now);

		end_and_remove(ft, ft->head, why != 0 ? why : reason);
		n++;
	}
	return n;
}

static uint32_t
cm_col(uint32_t h, unsigned int row, uint32_t width)
{
	uint64_t x = (uint64_t)h * (0x9e3779b97f4a7c15ull + 2 * row) + row;

	return (uint32_t)((x >> 32) % width);
}

/* A new flow for record @r at slot @i (empty): the table has room. */
static void
insert(struct rb2_flowtab *ft, uint64_t i, uint32_t h, const uint64_t k[3],
       const struct rb2_rec *r)
{
	struct rb2_flow *f = &ft->slots[i];

	f->hash = h;
	f->k0 = k[0];
	f->k1 = k[1];
	f->k2 = k[2];
	f->first_ns = r->ts_ns;
	f->packets = f->bytes = 0;
	f->tcp_flags = 0;
	if (r->kind == RB2_REC_IPV6) {
		/* A freed entry, else one never used: count < grow_at, the
		 * pool's size, so there is one. */
		uint32_t v = ft->v6_free != NONE ? ft->v6_free : ft->v6_used++;
		struct v6tuple *t = &ft->v6[v];

		if (v == ft->v6_free)
			ft->v6_free = t->next_free;
		memcpy(t->src, r->src6, 16);
		memcpy(t->dst, r->dst6, 16);
		t->sport = r->sport;
		t->dport = r->dport;
		ft->cold[i].v6 = v;
	}
	order_append(ft, (uint32_t)i);
	ft->occ[i >> 6] |= UINT64_C(1) << (i & 63);
	if (++ft->count > ft->tot.peak_flows)
		ft->tot.peak_flows = ft->count;
}

/*
 * Double the table: every flow moves to the new arrays, in the order its
 * record started (so that order, the eviction order, carries over), with
 * its IPv6 tuple at the same index. @return 0, or -ENOMEM: the table stays
 * as it is, and the cap is lowered to what it holds (later flows evict).
 */
static int
grow(struct rb2_flowtab *ft)
{
	uint64_t slots = (ft->mask + 1) * 2, mask = slots - 1, grow_at;
	struct rb2_flow *ns;
	struct cold *nc;
	uint64_t *nocc;
	struct v6tuple *nv6;
	uint32_t head = NONE, tail = NONE;

	if (arrays_alloc(ft, slots, &ns, &nc, &nocc, &nv6, &grow_at) < 0) {
		ft->cap = ft->grow_at = ft->count;
		return -ENOMEM;
	}
	memcpy(nv6, ft->v6, (size_t)ft->v6_used * sizeof(*nv6));
	for (uint32_t i = ft->head; i != NONE; i = ft->cold[i].next) {
		uint64_t j = ft->slots[i].hash & mask;

		while (ns[j].hash != 0)
			j = (j + 1) & mask;
		ns[j] = ft->slots[i];
		nc[j].v6 = ft->cold[i].v6;
		nc[j].prev = tail;
		nc[j].next = NONE;
		if (tail != NONE)
			nc[tail].next = (uint32_t)j;
		else
			head = (uint32_t)j;
		tail = (uint32_t)j;
		nocc[j >> 6] |= UINT64_C(1) << (j & 63);
	}
	tab_free(ft, ft->slots);
	tab_free(ft, ft->cold);
	tab_free(ft, ft->occ);
	tab_free(ft, ft->v6);
	ft->slots = ns;
	ft->cold = nc;
	ft->occ = nocc;
	ft->v6 = nv6;
	ft->head = head;
	ft->tail = tail;
	ft->mask = mask;
	ft->grow_at = grow_at;
	ft->sweep_pos = 0;
	ft->memory_peak = size_of(ft, slots) + (uint64_t)CM_ROWS * ft->cm_width * 8;
	return 0;
}

/* Account IP record @r, of key @k and hash @h, in its flow. */
static inline void
account(struct rb2_flowtab *ft, const struct rb2_rec *r, const uint64_t k[3], uint32_t h)
{
	uint64_t i = probe(ft, h, k);
	struct rb2_flow *f = &ft->slots[i];

	if (f->hash != 0) {
		unsigned int why = timed_out(ft, f, r->ts_ns);

		if (rare(why)) {
			/* The record ends here; this packet starts the next one
			 * in the same slot, as the newest record. */
			report_end(ft, i, why);
			f->first_ns = r->ts_ns;
			f->packets = f->bytes = 0;
			f->tcp_flags = 0;
			order_unlink(ft, (uint32_t)i);
			order_append(ft, (uint32_t)i);
		}
	} else {
		if (rare(ft->count == ft->grow_at) && ft->count < ft->cap && grow(ft) == 0)
			i = probe(ft, h, k);
		if (ft->count == ft->cap) {
			/* Full: end the record that started first (for its
			 * timeout, when one has passed and no sweep has come
			 * to it yet), then look again (the removal may have
			 * moved the hole). */
			unsigned int why = timed_out(ft, &ft->slots[ft->head], ft->now);

			end_and_remove(ft, ft->head, why != 0 ? why : RB2_FLOW_END_RESOURCES);
			i = probe(ft, h, k);
		}
		insert(ft, i, h, k, r);
		f = &ft->slots[i];
	}
	f->packets++;
	f->bytes += r->ip_len;
	f->last_ns = r->ts_ns;
	f->tcp_flags |= r->tcp_flags;
	for (unsigned int row = 0; ft->cm != NULL && row < CM_ROWS; row++)
		ft->cm[(size_t)row * ft->cm_width + cm_col(h, row, ft->cm_width)]++;
	if (rare((r->tcp_flags & (TCP_FIN | TCP_RST)) && r->proto == 6))
		end_and_remove(ft, i, RB2_FLOW_END_DETECTED);
}

void
rb2_flowtab_add_ptrs(struct rb2_flowtab *ft, const struct rb2_rec *const *recs,
		     unsigned int n)
{
	uint64_t keys[BURST][3];
	uint32_t hs[BURST];
	struct rb2_nf_totals *t = &ft->tot;
	/* The totals in locals over the call: in @t, each record's sums would
	 * wait for the one before's stores (the flows' writes may alias @t). */
	uint64_t bytes = 0, ipv4 = 0, ipv6 = 0, malformed = 0;
	uint64_t first = t->packets > 0 ? t->first_ns : UINT64_MAX, last = t->last_ns;

	for (unsigned int b = 0; b < n; b += BURST) {
		unsigned int m = n - b < BURST ? n - b : BURST;

		/* Hash all that go in a flow, and start every bucket's miss
		 * at once. */
		for (unsigned int i = 0; i < m; i++) {
			unsigned int kind = recs[b + i]->kind;

			if (kind != RB2_REC_IPV4 && kind != RB2_REC_IPV6)
				continue;
			key_of(recs[b + i], keys[i]);
			hs[i] = hash_of(keys[i]);
			__builtin_prefetch(&ft->slots[hs[i] & ft->mask], 1, 3);
		}
		for (unsigned int i = 0; i < m; i++) {
			const struct rb2_rec *r = recs[b + i];

			first = r->ts_ns < first ? r->ts_ns : first;
			last = r->ts_ns > last ? r->ts_ns : last;
			bytes += r->wire_len;
			switch (r->kind) {
			case RB2_REC_IPV4: ipv4++; break;
			case RB2_REC_IPV6: ipv6++; break;
			case RB2_REC_NONIP: continue;
			default: malformed++; continue;  /* rare: the one to spill */
			}
			account(ft, r, keys[i], hs[i]);
		}
	}
	if (n == 0)
		return;
	t->first_ns = first;
	t->last_ns = last;
	t->packets += n;
	t->bytes += bytes;
	t->ipv4 += ipv4;
	t->ipv6 += ipv6;
	t->malformed += malformed;
	t->nonip += n - ipv4 - ipv6 - malformed;
	if (last > ft->now) {
		ft->now = last;
		sweep_share(ft);
	}
}

void
rb2_flowtab_add_burst(struct rb2_flowtab *ft, const struct rb2_rec *recs,
		      unsigned int n)
{
	const struct rb2_rec *p[BURST];

	for (unsigned int b = 0; b < n; b += BURST) {
		unsigned int m = n - b < BURST ? n - b : BURST;

		for (unsigned int i = 0; i < m; i++)
			p[i] = &recs[b + i];
		rb2_flowtab_add_ptrs(ft, p, m);
	}
}

uint32_t
rb2_flowtab_hash(const struct rb2_rec *rec)
{
	uint64_t k[3];

	key_of(rec, k);
	return hash_of(k);
}

uint64_t
rb2_flowtab_count(const struct rb2_flowtab *ft)
{
	return ft->count;
}

void
rb2_flowtab_totals(const struct rb2_flowtab *ft, struct rb2_nf_totals *t)
{
	*t = ft->tot;
}

const struct rb2_flow *
rb2_flowtab_find(const struct rb2_flowtab *ft, const struct rb2_rec *rec)
{
	uint64_t k[3];
	const struct rb2_flow *f;

	key_of(rec, k);
	f = &ft->slots[probe(ft, hash_of(k), k)];
	return f->hash != 0 ? f : NULL;
}

uint64_t
rb2_flowtab_walk(const struct rb2_flowtab *ft,
		 void (*cb)(void *arg, const struct rb2_flow_rec *r), void *arg)
{
	uint64_t n = 0;

	for (uint64_t i = 0; i <= ft->mask; i++)
		if (ft->slots[i].hash != 0) {
			struct rb2_flow_rec r;

			rb2_flowtab_rec(ft, &ft->slots[i], &r);
			cb(arg, &r);
			n++;
		}
	return n;
}

void
rb2_flow_top_offer(struct rb2_flow_rec *top, unsigned int k, unsigned int *n,
		   const struct rb2_flow_rec *r)
{
	unsigned int j;

	/* Insertion into a sorted array of k: cheap for the small k of a report. */
	if (k == 0 || (*n == k && !rb2_flow_rec_heavier(r, &top[k - 1])))
		return;
	j = *n < k ? (*n)++ : k - 1;
	while (j > 0 && rb2_flow_rec_heavier(r, &top[j - 1])) {
		top[j] = top[j - 1];
		j--;
	}
	top[j] = *r;
}

uint64_t
rb2_flowtab_cm_estimate(const struct rb2_flowtab *ft, const struct rb2_flow *f)
{
	uint64_t est = UINT64_MAX;

	if (ft->cm == NULL)
		return 0;
	for (unsigned int row = 0; row < CM_ROWS; row++) {
		uint64_t c = ft->cm[(size_t)row * ft->cm_width +
				    cm_col(f->hash, row, ft->cm_width)];
		if (c < est)
			est = c;
	}
	return est;
}

int
rb2_flowtab_cm_error(const struct rb2_flowtab *ft, struct rb2_cm_error *e)
{
	double sum = 0;

	memset(e, 0, sizeof(*e));
	if (ft->cm == NULL)
		return -ENOENT;
	if (ft->tot.records != 0)
		return -ESTALE;
	for (uint64_t i = 0; i <= ft->mask; i++) {
		const struct rb2_flow *f = &ft->slots[i];
		double rel;

		if (f->hash == 0)
			continue;
		rel = (double)(rb2_flowtab_cm_estimate(ft, f) - f->packets) /
			(double)f->packets;
		sum += rel;
		if (rel > e->max_rel)
			e->max_rel = rel;
		e->exact += rel == 0;
	}
	e->mean_rel = ft->count ? sum / (double)ft->count : 0;
	return 0;
}
