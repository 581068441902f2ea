/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* rb2-kv's table (kv_store.h). */

#include <errno.h>
#include <inttypes.h>
#include <stdalign.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <rte_byteorder.h>
#include <rte_common.h>
#include <rte_errno.h>
#include <rte_hash_crc.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_malloc.h>
#include <rte_seqlock.h>

#include "kv_proto.h"
#include "kv_store.h"

#define KV_TOMBSTONE UINT32_MAX  /* an entry whose key has no value */

/* One value, at the position rte_hash gave its key. */
struct kv_entry {
	rte_seqlock_t lock;      /* writers serialize; readers retry */
	uint32_t len;            /* KV_TOMBSTONE: none */
	uint32_t flags;
	uint64_t cas;
	int64_t expires;         /* unix seconds; 0: never */
	int64_t set_time;        /* when written, while a flush_all waits (else 0) */
	uint8_t data[];
};

struct kv_counts {
	alignas(RTE_CACHE_LINE_SIZE) uint64_t gets, hits, puts, dels, misses;
	uint64_t too_large, key_too_long, full;
};

struct kv_store {
	struct rte_hash *h;
	uint8_t *entries;
	size_t stride;
	uint32_t n_entries;      /* rte_hash_max_key_id() + 1 */
	uint32_t key_max, key_len, value_max;
	int64_t flush_at;        /* a delayed flush_all's time; 0: none (read by every get) */
	uint8_t said_full;       /* the table-full warning is out */
	/* Written by every write: its own line, away from what gets read. */
	alignas(RTE_CACHE_LINE_SIZE) uint64_t cas_next;
	struct kv_counts counts[RTE_MAX_LCORE + 1]; /* the last: non-EAL threads */
};

static inline struct kv_counts *
counts(struct kv_store *s)
{
	unsigned int id = rte_lcore_id();

	return &s->counts[id < RTE_MAX_LCORE ? id : RTE_MAX_LCORE];
}

static inline struct kv_entry *
entry(struct kv_store *s, int32_t pos)
{
	return (struct kv_entry *)(s->entries + (size_t)pos * s->stride);
}

/*
 * Whether a value written with @p expires at @p set_time is gone at @p now:
 * expired, or written before a flush_all that has taken effect. Only the
 * memcached front writes either, so the binary protocol's reads never ask
 * the clock (kv_store_get()).
 */
static inline int
expired(const struct kv_store *s, int64_t expires, int64_t set_time, int64_t now)
{
	int64_t f = __atomic_load_n(&s->flush_at, __ATOMIC_RELAXED);

	return (expires != 0 && expires <= now) || (f != 0 && now >= f && set_time <= f);
}

static inline int
timed(const struct kv_store *s, int64_t expires)
{
	return expires != 0 || __atomic_load_n(&s->flush_at, __ATOMIC_RELAXED) != 0;
}

/* Whether entry @p e (its writer's lock held) has a value now. */
static inline int
live(const struct kv_store *s, const struct kv_entry *e)
{
	return e->len != KV_TOMBSTONE &&
	       !(timed(s, e->expires) && expired(s, e->expires, e->set_time, time(NULL)));
}

int64_t
kv_store_expiry(int64_t exptime)
{
	if (exptime == 0)
		return 0;
	if (exptime < 0)
		return 1;               /* long past */
	if (exptime <= 30 * 24 * 3600)
		return (int64_t)time(NULL) + exptime;
	return exptime;
}

/* Up to 8 bytes at @p p as a little-endian word, zeros above: whole loads
 * within [p, p + n) only, the last overlapping the first. */
static inline uint64_t
load_upto8(const uint8_t *p, uint32_t n)
{
	uint64_t v;
	uint32_t lo, hi;
	uint16_t lo2, hi2;

	if (n >= 8) {
		memcpy(&v, p, 8);
		return v;
	}
	if (n >= 4) {
		memcpy(&lo, p, 4);
		memcpy(&hi, p + n - 4, 4);
		return lo | (uint64_t)hi << (8 * (n - 4));
	}
	if (n >= 2) {
		memcpy(&lo2, p, 2);
		memcpy(&hi2, p + n - 2, 2);
		return lo2 | (uint64_t)hi2 << (8 * (n - 2));
	}
	return n != 0 ? p[0] : 0;
}

/* Two words stored as one 16-byte store. */
typedef uint64_t kv_key16 __attribute__((vector_size(16)));

/*
 * The table's key: a length byte, the key, zeros. @return -ENAMETOOLONG.
 *
 * Built in registers and stored 16 bytes at a time, the width rte_hash's
 * compare loads, whose CRC then loads 8-byte halves of them: each of those
 * loads is served by one store. Built with memset(), a byte store and a
 * memcpy() of the key's length, the CRC's first load overlapped three
 * stores still in flight, and a load that no single store covers waits for
 * all of them to reach the cache: perf put a quarter of the server lcore's
 * samples on that load (rb2-kv bench, 16 outstanding; doc/guides/apps/rb2-kv.md).
 */
static inline int
table_key(const struct kv_store *s, uint8_t *tk, const void *key, uint32_t klen)
{
	const uint8_t *k = key;

	RTE_BUILD_BUG_ON(RTE_BYTE_ORDER != RTE_LITTLE_ENDIAN);
	if (unlikely(klen > s->key_max))
		return -ENAMETOOLONG;
	for (uint32_t off = 0; off < s->key_len; off += 16) {
		uint64_t w[2];
		kv_key16 v;

		for (uint32_t j = 0; j < 2; j++) {
			/* Table byte b is key byte b - 1 (byte 0: klen). */
			uint32_t b = off + 8 * j;

			if (b == 0)
				w[j] = klen | load_upto8(k, RTE_MIN(klen, 7u)) << 8;
			else
				w[j] = b - 1 < klen ? load_upto8(k + b - 1, RTE_MIN(klen - (b - 1), 8u)) : 0;
		}
		v = (kv_key16){ w[0], w[1] };
		memcpy(tk + off, &v, sizeof(v));
	}
	return 0;
}

struct kv_store *
kv_store_create(const struct kv_store_params *p)
{
	struct rte_hash_parameters hp = {0};
	struct kv_store *s;
	int32_t max_id;

	if (p->capacity < 8 || p->key_max < 1 || p->key_max > KV_KEY_MAX ||
	    p->value_max < 1 || p->value_max > KV_VALUE_MAX) {
		RTE_LOG(ERR, USER1, "kv: capacity must be at least 8 keys, key_max 1..%u bytes, "
			"value_max 1..%u bytes\n", KV_KEY_MAX, KV_VALUE_MAX);
		rte_errno = EINVAL;
		return NULL;
	}
	s = rte_zmalloc_socket("kv_store", sizeof(*s), RTE_CACHE_LINE_SIZE, p->socket);
	if (s == NULL)
		goto nomem;
	s->key_max = p->key_max;
	/* rte_hash compares 16..128-byte keys with vector code: round up. */
	s->key_len = RTE_ALIGN_CEIL(p->key_max + 1, 16);
	s->value_max = p->value_max;
	s->cas_next = 1;
	hp.name = p->name;
	hp.entries = p->capacity;
	hp.key_len = s->key_len;
	hp.hash_func = rte_hash_crc;
	hp.socket_id = p->socket;
	hp.extra_flag = RTE_HASH_EXTRA_FLAGS_RW_CONCURRENCY_LF |
			RTE_HASH_EXTRA_FLAGS_MULTI_WRITER_ADD | RTE_HASH_EXTRA_FLAGS_EXT_TABLE;
	s->h = rte_hash_create(&hp);
	if (s->h == NULL) {
		RTE_LOG(ERR, USER1, "kv: rte_hash_create(%s, %u keys of %u bytes): %s\n",
			p->name, p->capacity, s->key_len, rte_strerror(rte_errno));
		goto fail;
	}
	max_id = rte_hash_max_key_id(s->h);
	s->n_entries = (uint32_t)max_id + 1;
	s->stride = RTE_ALIGN_CEIL(sizeof(struct kv_entry) + p->value_max, 8);
	s->entries = rte_zmalloc_socket("kv_values", s->stride * s->n_entries,
					RTE_CACHE_LINE_SIZE, p->socket);
	if (s->entries == NULL) {
		RTE_LOG(ERR, USER1, "kv: no memory for %u values of %u bytes (%zu MiB): give "
			"DPDK more (-m, or hugepages), or lower --records/--value-max\n",
			s->n_entries, p->value_max, (s->stride * s->n_entries) >> 20);
		goto nomem;
	}
	for (uint32_t i = 0; i < s->n_entries; i++) {
		rte_seqlock_init(&entry(s, (int32_t)i)->lock);
		entry(s, (int32_t)i)->len = KV_TOMBSTONE;
	}
	return s;
nomem:
	rte_errno = ENOMEM;
fail:
	kv_store_free(s);
	return NULL;
}

void
kv_store_free(struct kv_store *s)
{
	if (s == NULL)
		return;
	rte_hash_free(s->h);
	rte_free(s->entries);
	rte_free(s);
}

uint32_t
kv_store_value_max(const struct kv_store *s)
{
	return s->value_max;
}

uint32_t
kv_store_key_max(const struct kv_store *s)
{
	return s->key_max;
}

int
kv_store_get(struct kv_store *s, const void *key, uint32_t klen, void *buf, uint32_t cap,
	     uint32_t *need, struct kv_meta *meta)
{
	uint8_t tk[KV_KEY_MAX + 17];
	struct kv_counts *c = counts(s);
	struct kv_entry *e;
	int64_t expires, set_time;
	uint32_t sn, len;
	int32_t pos;

	c->gets++;
	if (table_key(s, tk, key, klen) < 0) {
		c->key_too_long++;
		return -ENAMETOOLONG;
	}
	pos = rte_hash_lookup(s->h, tk);
	if (pos < 0) {
		c->misses++;
		return -ENOENT;
	}
	e = entry(s, pos);
	/* Optimistic read: copy, then retry if a writer was in meanwhile. A
	 * torn length is bounded by cap before any copy. */
	do {
		sn = rte_seqlock_read_begin(&e->lock);
		len = e->len;
		expires = e->expires;
		set_time = e->set_time;
		if (len != KV_TOMBSTONE && len <= cap) {
			memcpy(buf, e->data, len);
			if (meta != NULL) {
				meta->flags = e->flags;
				meta->cas = e->cas;
			}
		}
	} while (rte_seqlock_read_retry(&e->lock, sn));
	if (len == KV_TOMBSTONE ||
	    (unlikely(timed(s, expires)) && expired(s, expires, set_time, time(NULL)))) {
		c->misses++;
		return -ENOENT;
	}
	if (len > cap) {
		if (need != NULL)
			*need = len;
		return -EMSGSIZE;
	}
	c->hits++;
	return (int)len;
}

int
kv_store_put(struct kv_store *s, const void *key, uint32_t klen, const void *val,
	     uint32_t vlen, uint32_t flags, enum kv_put_mode mode)
{
	const struct kv_write w = { .mode = mode, .flags = flags };

	return kv_store_write(s, key, klen, val, vlen, &w);
}

/* The entry of @p key (added when @p add), or a negative errno. */
static int32_t
find(struct kv_store *s, const void *key, uint32_t klen, int add)
{
	uint8_t tk[KV_KEY_MAX + 17];
	struct kv_counts *c = counts(s);
	int32_t pos;

	if (table_key(s, tk, key, klen) < 0) {
		c->key_too_long++;
		return -ENAMETOOLONG;
	}
	pos = rte_hash_lookup(s->h, tk);
	if (pos >= 0 || !add)
		return pos < 0 ? -ENOENT : pos;
	/* Returns the position already there if another lcore added the
	 * key meanwhile. */
	pos = rte_hash_add_key(s->h, tk);
	if (pos < 0) {
		c->full++;
		/* Said once: every write of a new key fails from here. */
		if (!__atomic_exchange_n(&s->said_full, 1, __ATOMIC_RELAXED))
			RTE_LOG(WARNING, USER1, "kv: the table is full (%u keys): writes of "
				"new keys are refused (NO_SPACE, or memcached's SERVER_ERROR "
				"out of memory) and counted as table_full; start the server "
				"with a larger --records\n", rte_hash_count(s->h));
		return -ENOSPC;
	}
	return pos;
}

/* A write's stamp, for a flush_all that waits (only then is it read). */
static inline int64_t
set_time(const struct kv_store *s)
{
	return __atomic_load_n(&s->flush_at, __ATOMIC_RELAXED) != 0 ? (int64_t)time(NULL) : 0;
}

int
kv_store_write(struct kv_store *s, const void *key, uint32_t klen, const void *val,
	       uint32_t vlen, const struct kv_write *w)
{
	struct kv_counts *c = counts(s);
	enum kv_put_mode mode = w->mode;
	struct kv_entry *e;
	int32_t pos;
	int ret = 0, has;

	c->puts++;
	if (klen == 0)
		return -EINVAL;
	if (klen > s->key_max) {
		c->key_too_long++;
		return -ENAMETOOLONG;
	}
	if (vlen > s->value_max) {
		c->too_large++;
		return -E2BIG;
	}
	/* Only SET and ADD make a key that is not there. */
	pos = find(s, key, klen, mode == KV_PUT_SET || mode == KV_PUT_ADD);
	if (pos < 0)
		return pos;
	e = entry(s, pos);
	rte_seqlock_write_lock(&e->lock);
	has = live(s, e);
	if (mode == KV_PUT_ADD && has) {
		ret = -EEXIST;
	} else if (mode != KV_PUT_SET && mode != KV_PUT_ADD && !has) {
		ret = -ENOENT;
	} else if (mode == KV_PUT_CAS && e->cas != w->cas) {
		ret = -EEXIST;
	} else if (mode == KV_PUT_APPEND || mode == KV_PUT_PREPEND) {
		if (e->len + vlen > s->value_max) {
			ret = -E2BIG;
		} else {
			if (mode == KV_PUT_PREPEND)
				memmove(e->data + vlen, e->data, e->len);
			memcpy(e->data + (mode == KV_PUT_APPEND ? e->len : 0), val, vlen);
			e->len += vlen;
			e->cas = __atomic_fetch_add(&s->cas_next, 1, __ATOMIC_RELAXED);
		}
	} else {
		memcpy(e->data, val, vlen);
		e->len = vlen;
		e->flags = w->flags;
		e->expires = w->expires;
		e->set_time = set_time(s);
		e->cas = __atomic_fetch_add(&s->cas_next, 1, __ATOMIC_RELAXED);
	}
	rte_seqlock_write_unlock(&e->lock);
	if (ret == -E2BIG)
		c->too_large++;
	return ret;
}

int
kv_store_incr(struct kv_store *s, const void *key, uint32_t klen, uint64_t delta, int decr,
	      uint64_t *result)
{
	int32_t pos = find(s, key, klen, 0);
	struct kv_entry *e;
	uint64_t v = 0;
	char num[24];
	uint32_t i = 0, n;
	int ret = 0;

	if (pos < 0)
		return pos;
	e = entry(s, pos);
	rte_seqlock_write_lock(&e->lock);
	if (!live(s, e)) {
		ret = -ENOENT;
		goto out;
	}
	/* Digits, then only spaces (what an earlier decr left), at most
	 * 2^64 - 1: as memcached's safe_strtoull() takes it. */
	for (; i < e->len && e->data[i] >= '0' && e->data[i] <= '9'; i++) {
		unsigned int d = e->data[i] - '0';

		if (v > (UINT64_MAX - d) / 10) {
			ret = -EINVAL;
			goto out;
		}
		v = v * 10 + d;
	}
	if (i == 0) {
		ret = -EINVAL;
		goto out;
	}
	for (; i < e->len; i++)
		if (e->data[i] != ' ') {
			ret = -EINVAL;
			goto out;
		}
	v = decr ? (v > delta ? v - delta : 0) : v + delta;
	n = (uint32_t)snprintf(num, sizeof(num), "%" PRIu64, v);
	if (n > s->value_max) {
		ret = -E2BIG;
		goto out;
	}
	memcpy(e->data, num, n);
	if (n < e->len)
		memset(e->data + n, ' ', e->len - n);
	else
		e->len = n;
	e->cas = __atomic_fetch_add(&s->cas_next, 1, __ATOMIC_RELAXED);
	*result = v;
out:
	rte_seqlock_write_unlock(&e->lock);
	return ret;
}

int
kv_store_touch(struct kv_store *s, const void *key, uint32_t klen, int64_t expires)
{
	int32_t pos = find(s, key, klen, 0);
	struct kv_entry *e;
	int ret = 0;

	if (pos < 0)
		return pos;
	e = entry(s, pos);
	rte_seqlock_write_lock(&e->lock);
	if (live(s, e))
		e->expires = expires;
	else
		ret = -ENOENT;
	rte_seqlock_write_unlock(&e->lock);
	return ret;
}

int
kv_store_del(struct kv_store *s, const void *key, uint32_t klen)
{
	struct kv_entry *e;
	int32_t pos;
	int ret = 0;

	counts(s)->dels++;
	pos = find(s, key, klen, 0);
	if (pos < 0)
		return pos;
	e = entry(s, pos);
	rte_seqlock_write_lock(&e->lock);
	if (!live(s, e))
		ret = -ENOENT;
	e->len = KV_TOMBSTONE;
	rte_seqlock_write_unlock(&e->lock);
	return ret;
}

void
kv_store_clear(struct kv_store *s)
{
	for (uint32_t i = 0; i < s->n_entries; i++) {
		struct kv_entry *e = entry(s, (int32_t)i);

		rte_seqlock_write_lock(&e->lock);
		e->len = KV_TOMBSTONE;
		rte_seqlock_write_unlock(&e->lock);
	}
}

void
kv_store_flush_at(struct kv_store *s, int64_t at)
{
	int64_t now = time(NULL), f = __atomic_load_n(&s->flush_at, __ATOMIC_RELAXED);

	/* A flush that took effect is made final before another replaces it:
	 * what it hid stays hidden. */
	for (uint32_t i = 0; f != 0 && now >= f && i < s->n_entries; i++) {
		struct kv_entry *e = entry(s, (int32_t)i);

		rte_seqlock_write_lock(&e->lock);
		if (e->set_time <= f)
			e->len = KV_TOMBSTONE;
		rte_seqlock_write_unlock(&e->lock);
	}
	if (at <= now) {
		kv_store_clear(s);
		at = 0;
	}
	__atomic_store_n(&s->flush_at, at, __ATOMIC_RELAXED);
}

void
kv_store_stats_get(const struct kv_store *s, struct kv_store_stats *st)
{
	memset(st, 0, sizeof(*st));
	for (unsigned int i = 0; i <= RTE_MAX_LCORE; i++) {
		const struct kv_counts *c = &s->counts[i];

		st->gets += __atomic_load_n(&c->gets, __ATOMIC_RELAXED);
		st->hits += __atomic_load_n(&c->hits, __ATOMIC_RELAXED);
		st->puts += __atomic_load_n(&c->puts, __ATOMIC_RELAXED);
		st->dels += __atomic_load_n(&c->dels, __ATOMIC_RELAXED);
		st->misses += __atomic_load_n(&c->misses, __ATOMIC_RELAXED);
		st->too_large += __atomic_load_n(&c->too_large, __ATOMIC_RELAXED);
		st->key_too_long += __atomic_load_n(&c->key_too_long, __ATOMIC_RELAXED);
		st->full += __atomic_load_n(&c->full, __ATOMIC_RELAXED);
	}
	st->keys = (uint64_t)rte_hash_count(s->h);
}
