/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef KV_STORE_H
#define KV_STORE_H

/*
 * rb2-kv's table: DPDK's rte_hash (lock-free readers, concurrent writers)
 * maps a key to a position; the value lives in an array indexed by that
 * position, each entry under an rte_seqlock, so any number of lcores read
 * and write it at once and a reader never sees a torn value.
 *
 * A key is at most key_max bytes (the table's key is a length byte and
 * key_max bytes, zero-padded). DELETE leaves the key in the table with no
 * value (so no reader can ever follow a freed position): the table holds
 * at most `capacity` distinct keys over its life, and a PUT after a
 * DELETE reuses its entry.
 */

#include <stdint.h>

#include <rte_hash.h>

struct kv_store_params {
	const char *name;        /* unique per process (the rte_hash's name) */
	uint32_t capacity;       /* distinct keys */
	uint32_t key_max;        /* 1 .. KV_KEY_MAX */
	uint32_t value_max;      /* 1 .. KV_VALUE_MAX */
	int socket;              /* SOCKET_ID_ANY: wherever */
};

/* What the table counts (each lcore's share summed; relaxed). */
struct kv_store_stats {
	uint64_t gets, hits, puts, dels, misses, too_large, key_too_long, full;
	uint64_t keys;           /* distinct keys in the table (values or not) */
};

struct kv_store;

/* @return the store, or NULL with rte_errno (EINVAL: the log says which
 *   parameter; ENOMEM: DPDK's heap is too small, give it more with -m). */
struct kv_store *kv_store_create(const struct kv_store_params *p);
void kv_store_free(struct kv_store *s);
uint32_t kv_store_value_max(const struct kv_store *s);
uint32_t kv_store_key_max(const struct kv_store *s);

/* Per-item metadata kept for the memcached protocol. */
struct kv_meta {
	uint32_t flags;
	uint64_t cas;            /* changes with every write */
};

/*
 * Read @p key's value into @p buf.
 * @return its length, -ENOENT (no such key, or deleted), -EMSGSIZE (longer
 *   than @p cap; *need says how long), -ENAMETOOLONG (key over key_max).
 */
int kv_store_get(struct kv_store *s, const void *key, uint32_t klen, void *buf,
		 uint32_t cap, uint32_t *need, struct kv_meta *meta);

enum kv_put_mode {
	KV_PUT_SET,
	KV_PUT_ADD,              /* only if the key has no value */
	KV_PUT_REPLACE,          /* only if it has one */
	KV_PUT_APPEND,           /* after the value it has (flags, expiry kept) */
	KV_PUT_PREPEND,          /* before it */
	KV_PUT_CAS,              /* only if its cas is still kv_write.cas */
};

/*
 * Write @p key's value (KV_PUT_SET, flags 0, never expiring).
 * @return 0, -EEXIST / -ENOENT (ADD / REPLACE declined), -E2BIG (over
 *   value_max), -ENAMETOOLONG, -ENOSPC (the table is full), -EINVAL (an
 *   empty key).
 */
int kv_store_put(struct kv_store *s, const void *key, uint32_t klen, const void *val,
		 uint32_t vlen, uint32_t flags, enum kv_put_mode mode);

/* How kv_store_write() writes. */
struct kv_write {
	enum kv_put_mode mode;
	uint32_t flags;
	int64_t expires;         /* unix seconds; 0: never (kv_store_expiry()) */
	uint64_t cas;            /* KV_PUT_CAS: the cas the value must still have */
};

/*
 * kv_store_put() with every option: a value that has expired or was
 * flushed counts as none. APPEND and PREPEND keep the value's flags and
 * expiry. @return as kv_store_put(); KV_PUT_CAS: -ENOENT (no value),
 * -EEXIST (written since); APPEND, PREPEND: -ENOENT (no value).
 */
int kv_store_write(struct kv_store *s, const void *key, uint32_t klen, const void *val,
		   uint32_t vlen, const struct kv_write *w);

/* memcached's exptime as an absolute time: 0 never; up to 30 days, seconds
 * from now; more, a unix time; negative, already expired. */
int64_t kv_store_expiry(int64_t exptime);

/*
 * memcached's incr and decr: the value, decimal digits (trailing spaces
 * allowed), plus or minus @p delta (an incr wraps at 2^64, a decr stops at
 * 0). The new number is written in place, space-padded to the old length
 * when shorter, as memcached does. @return 0 and the number in *result,
 * -ENOENT, -EINVAL (the value is not a number), -ENAMETOOLONG.
 */
int kv_store_incr(struct kv_store *s, const void *key, uint32_t klen, uint64_t delta, int decr,
		  uint64_t *result);

/* Set @p key's expiry (memcached's touch). @return 0, -ENOENT, -ENAMETOOLONG. */
int kv_store_touch(struct kv_store *s, const void *key, uint32_t klen, int64_t expires);

/* @return 0, -ENOENT, -ENAMETOOLONG. */
int kv_store_del(struct kv_store *s, const void *key, uint32_t klen);

/* Delete every value (memcached's flush_all). */
void kv_store_clear(struct kv_store *s);

/* memcached's flush_all with a delay: every value written before @p at
 * (unix seconds, kv_store_expiry()) counts as none from @p at on. */
void kv_store_flush_at(struct kv_store *s, int64_t at);

void kv_store_stats_get(const struct kv_store *s, struct kv_store_stats *st);

#endif /* KV_STORE_H */
