/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_CONN_PVT_H
#define RB2_CONN_PVT_H

/*
 * Connections: the wire format, a connection's state and the endpoint, for
 * rb2_conn.c and rb2_conn_telemetry.c only.
 *
 * Every frame on the shared ring (an RB² message, whose length the ring
 * carries) starts with this header, in host byte order (both ends must share
 * it; the SYN's magic catches a mismatch):
 *
 *   +0 u32 cid    the receiver's descriptor (RaaS's vQPN), CID_NONE when
 *                 the frame is for the endpoint (SYN, CREDIT)
 *   +4 u8  type   FR_*
 *   +5 u8  flags  0
 *   +6 u16 aux    SYN: the port; REFUSE, RST: the reason; CREDIT: entries
 *   +8 body       DATA: the payload; SYN, SYNACK: struct conn_hello;
 *                 CREDIT: aux x struct conn_credit; others: none
 *
 * A descriptor is (generation << 16 | slot index), generation 1..32767, so
 * a late frame for a slot that was freed and reused does not match.
 *
 * Credits count bytes of the receiver's buffer: a message of len bytes
 * costs rb2_conn_footprint(len) = 8 + len rounded up to 8 (its record
 * there). The sender keeps sent and acked (the receiver's consumed count,
 * as it last heard); it may send while sent - acked + footprint <= window.
 */

#include <pthread.h>
#include <stdatomic.h>
#include <sys/queue.h>

#include <rte_common.h>

#include "rb2_conn.h"

#define CID_NONE UINT32_MAX

enum {
	FR_DATA = 1,
	FR_SYN,     /* open: aux = port, body hello */
	FR_SYNACK,  /* accepted: body hello */
	FR_REFUSE,  /* aux = REFUSE_* */
	FR_FIN,     /* the sender sends no more */
	FR_RST,     /* the connection is dead: aux = RST_* */
	FR_CREDIT,  /* aux entries of struct conn_credit */
	FR_WANT,    /* the sender waits for credit */
	FR_MAX,
};

enum { REFUSE_NO_LISTENER = 1, REFUSE_BACKLOG, REFUSE_TOO_MANY, REFUSE_MAX };
enum { RST_UNLISTEN = 1, RST_WINDOW, RST_MAX };

#define CONN_MAGIC 0x7262u   /* "rb" */
#define CONN_VERSION 1u

struct conn_hello {
	uint32_t src_cd;     /* the sender's descriptor: put it in frames to it */
	uint32_t window;     /* its receive buffer */
	uint32_t max_msg;    /* the largest message it takes */
	uint16_t magic, version;
};

struct conn_credit {
	uint32_t cid;
	uint32_t consumed;   /* cumulative footprint consumed, mod 2^32 */
};

#define CREDITS_PER_FRAME 64u
#define LISTEN_MAX 64u

/* Control frames a connection owes the peer (sent by the poll). */
enum {
	OWE_SYN = 1 << 0,
	OWE_SYNACK = 1 << 1,
	OWE_CREDIT = 1 << 2,
	OWE_WANT = 1 << 3,
	OWE_FIN = 1 << 4,
	OWE_RST = 1 << 5,
};

enum conn_state {
	ST_FREE = 0,
	ST_SYN_SENT,   /* connect() sent (or owes) the SYN */
	ST_BACKLOG,    /* the peer's connect, not yet accepted here */
	ST_OPEN,       /* accepted (by either side) */
	ST_FAILED,     /* refused, or reset: err says which */
};

static inline uint32_t
rb2_conn_footprint(uint32_t len)
{
	return RB2_CONN_HDR_LEN + RTE_ALIGN_CEIL(len, 8u);
}

struct conn {
	uint32_t cd;              /* current descriptor of this slot */
	uint32_t peer_cd;         /* the peer's, put in every frame's header */
	uint8_t state;            /* enum conn_state */
	uint8_t owed;             /* OWE_* */
	uint8_t in_owed_list;
	uint8_t wr_shut;          /* FIN owed or sent: no more sends */
	uint8_t rd_eof;           /* the peer's FIN arrived */
	uint8_t app_closed;       /* rb2_conn_close(): descriptor invalid */
	uint8_t want_sent;        /* a WANT is out, no credit since */
	uint8_t peer_wants;       /* the peer waits for credit */
	uint16_t port;
	uint8_t rst_reason;
	int err;                  /* 0, or the negative errno it failed with */
	/* Sending. */
	uint32_t peer_window, peer_max;
	uint64_t sent, acked;     /* footprint bytes */
	/* Receiving: records [u32 len][u32 0][payload, padded to 8] at
	 * logical positions; buf holds window bytes plus one record of
	 * slack, so that a record is contiguous even across the end. */
	uint8_t *buf;
	uint64_t wpos;            /* next record's position */
	uint64_t vpos;            /* next record to hand out as a view */
	uint64_t rpos;            /* oldest unreleased record */
	uint64_t credited;        /* rpos as last sent in a credit */
	uint64_t tx_msgs, tx_bytes, rx_msgs, rx_bytes;
	char why[96];
};

struct listener {
	uint16_t port;
	uint8_t used;
	uint32_t backlog;         /* capacity */
	uint32_t head, count;
	uint32_t *q;              /* descriptors waiting for accept() */
};

/* The endpoint's counters (struct rb2_conn_ep_stats has the same fields),
 * written by its thread, read by telemetry from its own. */
#define CONN_EP_COUNTERS(X) \
	X(conns_open) X(conns_opened) X(refused_sent) X(refused_recv) \
	X(tx_msgs) X(tx_bytes) X(rx_msgs) X(rx_bytes) \
	X(ctrl_frames_tx) X(ctrl_frames_rx) X(credit_waits) X(ring_full) \
	X(discarded_msgs) X(discarded_bytes) X(unknown_conn) X(bad_frames) \
	X(window_violations)

#define CONN_COUNTER_FIELD(f) _Atomic uint64_t f;
struct conn_ep_counters {
	CONN_EP_COUNTERS(CONN_COUNTER_FIELD)
};

#define CONN_STAT_ADD(ep, f, v)                                           \
	atomic_store_explicit(&(ep)->ctr.f,                               \
		atomic_load_explicit(&(ep)->ctr.f, memory_order_relaxed) + (v), \
		memory_order_relaxed)

struct refusal {
	uint32_t peer_cd;
	uint16_t reason;
};

struct rb2_conn_ep {
	char name[RB2_CONN_EP_NAMESIZE];
	struct rb2_tx *tx;
	struct rb2_rx *rx;
	struct rb2_conn_ep_params p;
	uint32_t win_mask;
	int err;
	int resv_cd;              /* descriptor holding the ring's reservation */
	uint32_t resv_len;
	struct conn *conns;       /* max_conns slots */
	uint32_t *free_idx;       /* stack of free slot indexes */
	uint32_t n_free;
	uint32_t *owed;           /* slot indexes owing control frames */
	uint32_t n_owed;
	struct refusal *refusals; /* REFUSE frames owed */
	uint32_t n_refusals, cap_refusals;
	struct listener listeners[LISTEN_MAX];
	uint64_t unknown_logged;  /* log unknown ids at powers of two */
	struct conn_ep_counters ctr;
	TAILQ_ENTRY(rb2_conn_ep) next;
};

/* Every endpoint of the process, for telemetry. */
struct rb2_conn_ep_list {
	pthread_mutex_t lock;
	TAILQ_HEAD(, rb2_conn_ep) eps;
};
extern struct rb2_conn_ep_list rb2_conn_eps;

#define CONN_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_ ## level, rb2_conn_logtype, "rb2.conn: " fmt "\n", ## __VA_ARGS__)

#endif /* RB2_CONN_PVT_H */
