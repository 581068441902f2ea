/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* rb2-kv's YCSB client (kv_client.h). */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_common.h>

#include "app_net.h"
#include "kv_client.h"
#include "kv_proto.h"

/* ---- the client ---------------------------------------------------- */

/* One request in a connection's FIFO. */
struct req {
	uint64_t keynum;
	uint64_t version;      /* a write's; a read's floor (acked when sent) */
	uint64_t t0;
	uint8_t op;            /* enum ycsb_op */
	uint8_t stage;         /* READ-MODIFY-WRITE: 0 its read, 1 its write */
	uint8_t wire;          /* KV_OP_GET / KV_OP_PUT */
};

struct conn {
	int cd;                /* rb2 descriptor */
	int fd;                /* TCP */
	struct rb2_l5 *l5_tx, *l5_rx;   /* L5 */
	struct req *fifo;      /* 2 * depth entries: a read-modify-write's
				* write takes its read's place */
	uint32_t head, sent, tail;   /* [head, sent) on the wire, [sent, tail) not yet */
	uint32_t tag;
	/* TCP: bytes received and not yet parsed, bytes not yet sent; L5:
	 * the answer copied out, the request to copy in */
	uint8_t *in, *out;
	uint32_t in_len, out_len;
};

struct kv_client {
	uint64_t passes;         /* of kv_client_run()'s loop */
	struct kv_shared *sh;
	struct rb2_conn_ep *ep;
	int tcp, l5;
	unsigned int idx;
	struct conn *conns;
	unsigned int n_conns;
	uint32_t *of_slot;     /* rb2: 1 + the index of a descriptor's slot's
				* connection (cd & 0xffff), 0: none */
	uint32_t fifo_mask;
	struct ycsb_gen gen;
	uint8_t value[KV_VALUE_MAX];
	struct kv_result *res;
	enum kv_phase phase;
	uint64_t to_issue, issued_ops, done_ops;
	uint64_t load_next, load_end;
	int err;
};

#define TCP_BUF (256u << 10)

static struct kv_client *
client_new(struct kv_shared *sh, unsigned int idx)
{
	struct kv_client *c = calloc(1, sizeof(*c));
	uint32_t fifo = rte_align32pow2(2 * sh->depth);

	if (c == NULL)
		return NULL;
	c->sh = sh;
	c->idx = idx;
	c->n_conns = sh->conns;
	c->fifo_mask = fifo - 1;
	c->conns = calloc(sh->conns, sizeof(*c->conns));
	if (c->conns == NULL) {
		free(c);
		return NULL;
	}
	for (unsigned int i = 0; i < sh->conns; i++) {
		c->conns[i].cd = -1;
		c->conns[i].fd = -1;
		c->conns[i].fifo = calloc(fifo, sizeof(struct req));
		if (c->conns[i].fifo == NULL) {
			kv_client_free(c);
			return NULL;
		}
	}
	ycsb_gen_init(&c->gen, &sh->w, sh->records, sh->operations, sh->seed + idx * 7919,
		      &sh->inserts);
	return c;
}

struct kv_client *
kv_client_rb2(struct kv_shared *sh, struct rb2_conn_ep *ep, int via_service, uint32_t host,
	      unsigned int lcore_idx)
{
	struct kv_client *c = client_new(sh, lcore_idx);
	int cds[c != NULL ? c->n_conns : 1];

	if (c == NULL)
		return NULL;
	c->ep = ep;
	if (app_conns_open(ep, via_service, host, sh->port, sh->ports, lcore_idx * c->n_conns,
			   cds, c->n_conns) < 0) {
		kv_client_free(c);
		return NULL;
	}
	c->of_slot = calloc(RB2_CONN_MAX + 1, sizeof(*c->of_slot));
	if (c->of_slot == NULL) {
		kv_client_free(c);
		return NULL;
	}
	for (unsigned int i = 0; i < c->n_conns; i++) {
		c->conns[i].cd = cds[i];
		c->of_slot[cds[i] & 0xffff] = i + 1;
	}
	return c;
}

struct kv_client *
kv_client_tcp(struct kv_shared *sh, const char *addr, unsigned int lcore_idx)
{
	struct kv_client *c = client_new(sh, lcore_idx);

	if (c == NULL)
		return NULL;
	c->tcp = 1;
	for (unsigned int i = 0; i < c->n_conns; i++) {
		struct conn *k = &c->conns[i];

		k->fd = app_tcp_connect(addr);
		k->in = malloc(TCP_BUF);
		k->out = malloc(TCP_BUF);
		if (k->fd < 0 || k->in == NULL || k->out == NULL) {
			kv_client_free(c);
			return NULL;
		}
	}
	return c;
}

struct kv_client *
kv_client_l5(struct kv_shared *sh, const struct app_l5_conn *l5, unsigned int lcore_idx)
{
	struct kv_client *c = client_new(sh, lcore_idx);

	if (c == NULL)
		return NULL;
	c->l5 = 1;
	for (unsigned int i = 0; i < c->n_conns; i++) {
		struct conn *k = &c->conns[i];

		k->l5_tx = l5[i].ring[0];
		k->l5_rx = l5[i].ring[1];
		k->in = malloc(APP_L5_MAX_MSG);
		k->out = malloc(APP_L5_MAX_MSG);
		if (k->in == NULL || k->out == NULL) {
			kv_client_free(c);
			return NULL;
		}
	}
	return c;
}

void
kv_client_free(struct kv_client *c)
{
	if (c == NULL)
		return;
	for (unsigned int i = 0; i < c->n_conns; i++) {
		struct conn *k = &c->conns[i];

		if (k->cd >= 0)
			rb2_conn_close(c->ep, k->cd);
		if (k->fd >= 0)
			close(k->fd);
		free(k->fifo);
		free(k->in);
		free(k->out);
	}
	free(c->conns);
	free(c->of_slot);
	free(c);
}

volatile sig_atomic_t kv_client_stop;

void
kv_shared_versions_init(struct kv_shared *sh)
{
	uint64_t e = ((uint64_t)getpid() * 0x9e3779b1u ^ app_now_ns()) & 0xffffff;

	sh->epoch = (e != 0 ? e : 1) << KV_EPOCH_SHIFT;
	for (uint64_t i = 0; i < sh->tracked; i++)
		sh->issued[i] = sh->acked[i] = sh->epoch;
}

static void
fail_check(struct kv_client *c, const char *fmt, uint64_t keynum, uint64_t a, uint64_t b)
{
	if (c->res->check_failures++ == 0)
		snprintf(c->res->first_failure, sizeof(c->res->first_failure), fmt,
			 (unsigned long long)keynum, (unsigned long long)a, (unsigned long long)b);
}

/* Queue the next operation on @p k (or, loading, the next insert). */
static void
next_op(struct kv_client *c, struct conn *k)
{
	struct req *r = &k->fifo[k->tail++ & c->fifo_mask];
	struct kv_shared *sh = c->sh;

	r->stage = 0;
	r->t0 = app_now_ns();
	if (c->phase == KV_LOAD) {
		r->op = YCSB_INSERT;
		r->keynum = c->load_next++;
	} else {
		r->op = (uint8_t)ycsb_next_op(&c->gen);
		r->keynum = r->op == YCSB_INSERT ? ycsb_next_insert(&sh->inserts) :
						   ycsb_next_keynum(&c->gen);
	}
	r->wire = r->op == YCSB_READ || r->op == YCSB_RMW ? KV_OP_GET : KV_OP_PUT;
	c->issued_ops++;
}

/* The request's bytes: @return its length. */
static uint32_t
encode(struct kv_client *c, struct conn *k, const struct req *r, uint8_t *p)
{
	struct kv_hdr *h = (struct kv_hdr *)p;
	uint64_t key = kv_client_key(c->sh, r->keynum);
	uint32_t vlen = r->wire == KV_OP_PUT ? c->sh->value_size : 0;

	h->op = r->wire;
	h->klen = 8;
	h->vlen = (uint16_t)vlen;
	h->tag = k->tag++;
	memcpy(p + KV_HDR_LEN, &key, 8);
	if (vlen)
		kv_value_fill(p + KV_HDR_LEN + 8, vlen, key, r->version);
	return KV_HDR_LEN + 8 + vlen;
}

/*
 * Number @p r as it goes out: a write takes the next version of its
 * record, unless another write of it is in flight (then it waits: @return
 * -1); a read notes the version it must not be older than.
 */
static int
stamp(struct kv_shared *sh, struct req *r)
{
	uint8_t idle = 0;

	if (r->wire == KV_OP_GET) {
		r->version = __atomic_load_n(&sh->acked[r->keynum], __ATOMIC_ACQUIRE);
		return 0;
	}
	if (!__atomic_compare_exchange_n(&sh->writing[r->keynum], &idle, 1, 0, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED))
		return -1;
	r->version = __atomic_add_fetch(&sh->issued[r->keynum], 1, __ATOMIC_RELAXED);
	return 0;
}

/* Put queued requests on the wire. @return 0 or an error. */
static int
send_queued(struct kv_client *c, struct conn *k)
{
	while (k->sent != k->tail) {
		struct req *r = &k->fifo[k->sent & c->fifo_mask];
		uint32_t len = KV_HDR_LEN + 8 + (r->wire == KV_OP_PUT ? c->sh->value_size : 0);

		if (c->tcp) {
			if (k->out_len + len > TCP_BUF || stamp(c->sh, r) < 0)
				break;
			encode(c, k, r, k->out + k->out_len);
			k->out_len += len;
		} else if (c->l5) {
			/* As L5's users do: the request built in our memory,
			 * which L5's send copies into its ring. */
			int ret = rb2_l5_room(k->l5_tx, len, 1);

			if (ret == -ENOBUFS || (ret > 0 && stamp(c->sh, r) < 0))
				break;
			if (ret < 0)
				return ret;
			encode(c, k, r, k->out);
			ret = rb2_l5_send(k->l5_tx, k->out, len);
			if (ret < 0)
				return ret;
		} else {
			void *buf;
			int ret = rb2_conn_reserve(c->ep, k->cd, len, &buf);

			if (ret == -EAGAIN || ret == -ENOBUFS)
				break;
			if (ret < 0)
				return ret;
			if (stamp(c->sh, r) < 0) {
				/* Another write of the record is in flight: this
				 * one waits, and gives its room up (an open
				 * reservation would hold our credits back). */
				rb2_conn_cancel(c->ep, k->cd);
				break;
			}
			encode(c, k, r, buf);
			rb2_conn_commit(c->ep, k->cd, len);
		}
		k->sent++;
	}
	if (c->tcp && k->out_len > 0) {
		ssize_t w = send(k->fd, k->out, k->out_len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		if (w > 0) {
			memmove(k->out, k->out + w, k->out_len - (uint32_t)w);
			k->out_len -= (uint32_t)w;
		}
	}
	return 0;
}

static void
ack_version(uint64_t *acked, uint64_t v)
{
	uint64_t cur = __atomic_load_n(acked, __ATOMIC_RELAXED);

	while (cur < v && !__atomic_compare_exchange_n(acked, &cur, v, 1, __ATOMIC_RELEASE,
						       __ATOMIC_RELAXED))
		;
}

/* One answer for @p k's oldest request. @return 0, or -EPROTO. */
static int
answer(struct kv_client *c, struct conn *k, const uint8_t *p, uint32_t len)
{
	const struct kv_hdr *h = (const struct kv_hdr *)p;
	struct kv_shared *sh = c->sh;
	struct req *r;
	uint64_t v;

	if (k->head == k->sent || len < KV_HDR_LEN || h->klen != KV_RESP_MAGIC ||
	    len != KV_HDR_LEN + h->vlen ||
	    h->tag != (uint32_t)(k->tag - (k->sent - k->head))) {
		fail_check(c, "an answer that fits no request (record %llu, %llu/%llu)",
			   0, len, h->tag);
		return -EPROTO;
	}
	r = &k->fifo[k->head & c->fifo_mask];
	if (h->op != KV_OK) {
		/* An answer, not a wrong value: counted by status (and the
		 * first one said), never as a check failure. */
		if (h->op == KV_NOT_FOUND)
			c->res->not_found[r->op]++;
		else
			c->res->failed[r->op]++;
		if (h->op == KV_NO_SPACE)
			c->res->no_space++;
		if (c->res->first_status[0] == '\0')
			snprintf(c->res->first_status, sizeof(c->res->first_status),
				 "record %" PRIu64 ": %s", r->keynum, kv_status_str(h->op));
		if (r->wire == KV_OP_PUT)
			__atomic_store_n(&sh->writing[r->keynum], 0, __ATOMIC_RELEASE);
		goto done;
	}
	if (r->wire == KV_OP_GET) {
		uint64_t key = kv_client_key(sh, r->keynum);

		if (h->vlen != sh->value_size ||
		    kv_value_check(p + KV_HDR_LEN, h->vlen, key, &v) < 0)
			fail_check(c, "record %llu: a value not written for it (%llu bytes, "
				   "version field %llu)", r->keynum, h->vlen,
				   h->vlen >= 8 ? *(const uint64_t *)(p + KV_HDR_LEN) : 0);
		else if ((v ^ sh->epoch) >> KV_EPOCH_SHIFT != 0) {
			/* Another process's write: correct until one of ours
			 * was acknowledged before this read went out. */
			if (r->version != sh->epoch)
				fail_check(c, "record %llu: a value of another client process read "
					   "after this one's version %llu was acknowledged (%llu)",
					   r->keynum, r->version & KV_COUNT_MASK, 0);
		} else if (v < r->version) {
			fail_check(c, "record %llu: version %llu read after version %llu was "
				   "acknowledged", r->keynum, v & KV_COUNT_MASK,
				   r->version & KV_COUNT_MASK);
		} else if (v > __atomic_load_n(&sh->issued[r->keynum], __ATOMIC_RELAXED)) {
			fail_check(c, "record %llu: version %llu read, never written (last "
				   "%llu)", r->keynum, v & KV_COUNT_MASK,
				   sh->issued[r->keynum] & KV_COUNT_MASK);
		}
		if (r->op == YCSB_RMW) {
			/* Its write goes out next, timed from the read. */
			struct req *w = &k->fifo[k->tail++ & c->fifo_mask];

			*w = *r;
			w->stage = 1;
			w->wire = KV_OP_PUT;
			k->head++;
			return 0;
		}
	} else {
		ack_version(&sh->acked[r->keynum], r->version);
		__atomic_store_n(&sh->writing[r->keynum], 0, __ATOMIC_RELEASE);
		if (r->op == YCSB_INSERT && c->phase == KV_RUN &&
		    ycsb_ack_insert(&sh->inserts, r->keynum) < 0)
			fail_check(c, "record %llu: over 2^20 inserts unacknowledged (%llu %llu)",
				   r->keynum, 0, 0);
	}
	c->res->ok[r->op]++;
done:
	app_hist_add(&c->res->lat[r->op], app_now_ns() - r->t0);
	k->head++;
	c->done_ops++;
	return 0;
}

/* Take every answer that has arrived. @return 0 or an error. */
static int
receive(struct kv_client *c)
{
	if (c->tcp) {
		for (unsigned int i = 0; i < c->n_conns; i++) {
			struct conn *k = &c->conns[i];
			uint32_t pos = 0;
			ssize_t r;

			if (k->head == k->sent)
				continue;
			r = recv(k->fd, k->in + k->in_len, TCP_BUF - k->in_len, MSG_DONTWAIT);
			if (r == 0)
				return -ECONNRESET;
			if (r < 0) {
				if (errno == EAGAIN || errno == EINTR)
					continue;
				return -errno;
			}
			k->in_len += (uint32_t)r;
			while (k->in_len - pos >= KV_HDR_LEN) {
				const struct kv_hdr *h = (const struct kv_hdr *)(k->in + pos);
				uint32_t len = KV_HDR_LEN + h->vlen;

				if (k->in_len - pos < len)
					break;
				if (answer(c, k, k->in + pos, len) < 0)
					return -EPROTO;
				pos += len;
			}
			memmove(k->in, k->in + pos, k->in_len - pos);
			k->in_len -= pos;
		}
		return 0;
	}
	if (c->l5) {
		for (unsigned int i = 0; i < c->n_conns; i++) {
			struct conn *k = &c->conns[i];
			int len;

			/* One message, one answer; copied out, as L5 does. (A
			 * message with no request outstanding fails answer().) */
			while ((len = rb2_l5_recv(k->l5_rx, k->in, APP_L5_MAX_MSG)) != -EAGAIN) {
				if (len < 0)
					return len;
				if (answer(c, k, k->in, (uint32_t)len) < 0)
					return -EPROTO;
			}
		}
		return 0;
	}
	int cds[64], n = rb2_conn_ep_ready(c->ep, cds, RTE_DIM(cds));

	if (n < 0)
		return n;
	for (int j = 0; j < n; j++) {
		uint32_t x = c->of_slot[cds[j] & 0xffff];
		struct conn *k = x != 0 && c->conns[x - 1].cd == cds[j] ? &c->conns[x - 1] : NULL;
		const void *p;
		int len;

		if (k == NULL)
			continue;
		/* What the poll filed; the next poll comes after the sends. */
		while (rb2_conn_recv_ready(c->ep, k->cd)) {
			int ret;

			len = rb2_conn_recv_zc(c->ep, k->cd, &p);
			if (len <= 0) {
				if (len == -EAGAIN)
					break;
				return len == 0 ? -ECONNRESET : len;
			}
			ret = answer(c, k, p, (uint32_t)len);
			rb2_conn_release(c->ep, k->cd, 1);
			if (ret < 0)
				return ret;
		}
	}
	return 0;
}

int
kv_client_run(struct kv_client *c, enum kv_phase phase, uint64_t ops, unsigned int n_lcores,
	      struct kv_result *res)
{
	struct kv_shared *sh = c->sh;
	uint64_t last_report;
	int ret = 0;

	memset(res, 0, sizeof(*res));
	c->res = res;
	c->phase = phase;
	c->issued_ops = c->done_ops = 0;
	if (phase == KV_LOAD) {
		c->load_next = sh->records * c->idx / n_lcores;
		c->load_end = sh->records * (c->idx + 1) / n_lcores;
		ops = c->load_end - c->load_next;
	}
	c->to_issue = ops;
	res->t_start_ns = last_report = app_now_ns();
	while (c->done_ops < ops && !kv_client_stop) {
		for (unsigned int i = 0; i < c->n_conns; i++) {
			struct conn *k = &c->conns[i];

			while (k->tail - k->head < sh->depth && c->issued_ops < c->to_issue)
				next_op(c, k);
			ret = send_queued(c, k);
			if (ret < 0)
				goto failed;
		}
		if (c->ep != NULL)
			rb2_conn_flush(c->ep);
		ret = receive(c);
		if (ret < 0)
			goto failed;
		/* The clock every 256 passes, not operations: a slow run
		 * reports too. */
		if (c->idx == 0 && !sh->quiet && (++c->passes & 0xff) == 0) {
			uint64_t now = app_now_ns();

			if (now - last_report > 1000000000ull) {
				fprintf(stderr, "rb2-kv: %s: %.0f%% (%" PRIu64 " of %" PRIu64
					" on this lcore)\n", phase == KV_LOAD ? "load" : "run",
					100.0 * (double)c->done_ops / (double)ops, c->done_ops, ops);
				last_report = now;
			}
		}
	}
	res->t_end_ns = app_now_ns();
	return 0;
failed:
	res->t_end_ns = app_now_ns();
	if (res->first_failure[0] == '\0')
		snprintf(res->first_failure, sizeof(res->first_failure), "%s after %" PRIu64
			 " operations", strerror(-ret), c->done_ops);
	return ret;
}
