/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_CONN_RELAY_PVT_H
#define RB2_CONN_RELAY_PVT_H

/*
 * The relay core's files (rb2_conn_relay.h) and what they share:
 *   rb2_conn_relay.c        relaying: connections set up through the relay,
 *                           frames moved between links, links that end; the API
 *   rb2_conn_relay_queue.c  frames towards a link: its ring, else its queue;
 *                           the answers owed to it about lent buffers
 *   rb2_conn_relay_lend.c   lent buffers passed on as loans: REF, REFDONE,
 *                           READREQ, the READs and copies that serve them
 */

#include <stdint.h>
#include <stdio.h>

#include <rb2_bulk.h>
#include <rb2_mr_cache.h>

#include "rb2_conn_relay.h"
#include "rb2_conn_wire.h"

#define RELAY_SAY(R, fmt, ...) fprintf((R)->p.out, "%s: " fmt, (R)->p.name, ## __VA_ARGS__)
#define RELAY_ERR(R, fmt, ...) fprintf((R)->p.err, "%s: " fmt, (R)->p.name, ## __VA_ARGS__)

#define MAX_LISTENS 64

/*
 * Frames waiting for room in one destination's ring, in order: so that a
 * destination that stops polling holds up only its own connections, not
 * the sources that also talk to others. Records [u32 len][frame] padded to
 * 8 bytes; one that does not fit before the end starts again at 0 behind a
 * QREC_WRAP. Allocated when first needed, bounded by queue_bytes: beyond
 * it the source is held, as without a queue.
 */
struct frame_queue {
	uint8_t *buf;
	uint32_t cap, head, tail;       /* byte offsets; head == tail: empty */
	uint32_t bytes;                 /* queued, records with their headers */
	uint64_t frames;                /* queued now (atomic, for telemetry) */
	uint64_t peak_bytes;            /* the most at once (atomic, for telemetry) */
	int no_memory;                  /* its allocation failed (said once) */
};
#define QREC_WRAP UINT32_MAX

/* Entries (id, status) owed to a link: REFDONEs to a lender, READDONEs
 * to a reader. Sent as frames of up to RB2_CONN_REFDONES_PER_FRAME, as
 * the link's ring has room (owed_flush()). */
struct owed {
	struct rb2_conn_refdone *e;
	uint32_t n, cap;
};

struct link {
	struct rb2_conn_relay *R;
	char name[RB2_CONN_RELAY_NAMESIZE];
	uint32_t pid;
	uint32_t host;                  /* a peer service's host id; 0: an application */
	struct rb2_conn_ep *ep;
	uint16_t listens[MAX_LISTENS];
	unsigned int nlistens;
	uint64_t conns;                 /* connections through it now (atomic) */
	/* Frames and bytes from it and to it (written by the loop alone,
	 * read by telemetry: relaxed atomics). */
	uint64_t frames_in, bytes_in, frames_out, bytes_out;
	struct frame_queue q;           /* frames for it that its ring had no room for */
	struct owed refdone, readdone;  /* answers owed to it about lent buffers */
	/* A peer's: registrations of applications' buffers for its READs,
	 * and of applications' buffers our READs from it land in. */
	struct rb2_mr_cache *tx_cache, *rx_cache;
	uint8_t tx_tried, rx_tried;
};

/*
 * A buffer lent through the service (RaaS's registered sends, §IV-C). Its
 * lender is an application here, whose buffer is in the process group's
 * shared memory and so at the same address here, or a peer service, which
 * registered it there. Its borrower is the application here that receives
 * it, or the peer service on the way to it. The REF frame passed on names
 * the loan by our id (gen << 16 | index); the lender's id for it is kept,
 * to answer the lender: every loan ends with exactly one REFDONE to it.
 *
 * An application never sees a registration: the REF it receives names
 * only the length (one segment, no key: the same size as the lender's, so
 * that both ends count the same credit), and it asks us to READ (READREQ)
 * into its shared memory. A lender here and a reader here: one copy, by us,
 * from buffer to buffer. A lender across the wire: one RDMA READ, from its
 * application's memory straight into ours (zero copy).
 */
struct loan {
	struct link *lender, *borrower;   /* NULL once gone */
	uint32_t lender_id;
	uint16_t gen;
	uint8_t used, reading;
	uint32_t reader_id;               /* the READDONE's id (ours, as the reader has it) */
	struct rb2_bulk_ref ref;          /* where the payload is, as we READ or copy it */
	unsigned int nheld;               /* segments registered here for a peer */
	struct rb2_mr_seg held[RB2_BULK_MAX_SEGS];
	struct rb2_bulk_read rd;          /* our READ for the reader */
};

/* A connection through the service: side 0 connected, side 1 accepted.
 * Its id on side s, the vQPN that side's application addresses it by, is
 * gen << 16 | idx << 1 | s. */
struct relay {
	struct link *l[2];
	uint32_t cd[2];                 /* each application's own descriptor */
	uint16_t gen;
	uint8_t used, fin[2];
};

/* The relay: written by the polling thread alone; the counters that
 * telemetry reads are relaxed atomics, the link array is under lock. */
struct rb2_conn_relay {
	struct rb2_conn_relay_params p;
	struct link *links[RB2_CONN_RELAY_MAX_LINKS];
	unsigned int nlinks;
	struct relay *relays;
	uint32_t *free_idx, nfree;
	uint64_t relayed, unknown, refused, resets, undeliverable;
	uint64_t held;                  /* times a source waited: a queue was full */
	uint64_t queued_all;            /* frames queued, links gone included */
	pthread_mutex_t lock;           /* the link array, against telemetry */
	struct loan *loans;
	uint32_t *loan_free, nloan_free;
	uint32_t nreading;              /* loans with a READ of ours in flight */
	uint64_t lent, lent_bytes;      /* loans made (atomic, for telemetry) */
	uint64_t copied_here, copied_bytes; /* READs served by one copy here */
	uint64_t reads, read_bytes;     /* READs from peers' lenders */
	uint64_t loans_failed;          /* lenders answered other than 0 */
	uint64_t bad_lends;             /* malformed REF, READREQ, REFDONE frames */
	uint32_t *reading;              /* the loans of those READs (nreading) */
};

/* Telemetry reads the counters as the loop writes them. */
#define TEL_LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

static inline uint32_t
relay_id(struct rb2_conn_relay *R, uint32_t idx, int side)
{
	return (uint32_t)R->relays[idx].gen << 16 | idx << 1 | (uint32_t)side;
}

static inline uint32_t
qrec_size(uint32_t len)
{
	return (uint32_t)RTE_ALIGN_CEIL(sizeof(uint32_t) + len, 8);
}

/* One frame of @p len bytes more on a link's counters. */
static inline void
count(uint64_t *frames, uint64_t *bytes, uint32_t len)
{
	__atomic_store_n(frames, *frames + 1, __ATOMIC_RELAXED);
	__atomic_store_n(bytes, *bytes + len, __ATOMIC_RELAXED);
}


/* rb2_conn_relay.c: the connection @r is over; its id is free again. */
void __rb2_relay_free(struct rb2_conn_relay *R, struct relay *r);

/* rb2_conn_relay_queue.c: frames towards a link. */
/* @f towards @l: its ring, or its queue. 0, -EAGAIN (the source waits), or
 * the link's error. */
int __rb2_relay_link_put(struct rb2_conn_relay *R, struct link *l, const void *f,
			 uint32_t len);
/* A header-only control frame towards @l. */
int __rb2_relay_send_ctrl(struct rb2_conn_relay *R, struct link *l, uint32_t cid, uint8_t type,
			  uint16_t aux);
/* What waits for @l onto its ring, as far as there is room. */
void __rb2_relay_link_drain(struct rb2_conn_relay *R, struct link *l);
/* @l taken away: what still waited for it is counted undeliverable. */
void __rb2_relay_link_free(struct rb2_conn_relay *R, struct link *l);
/* Owe @l a REFDONE or READDONE entry (@what names which, for the log). */
void __rb2_relay_owe(struct link *l, struct owed *o, uint32_t id, int status, const char *what);
/* Send what is owed to @l, as its ring has room. */
void __rb2_relay_owed_flush(struct rb2_conn_relay *R, struct link *l);

/* rb2_conn_relay_lend.c: loans. Each frame handler returns 0 or -EAGAIN
 * (offered again), as frame handlers do. */
int __rb2_relay_lend_in(struct rb2_conn_relay *R, struct link *from, struct relay *r, int side,
			const uint8_t *f, uint32_t len);
int __rb2_relay_refdone_in(struct rb2_conn_relay *R, struct link *from, const uint8_t *f,
			   uint32_t len, uint16_t n);
int __rb2_relay_readreq_in(struct rb2_conn_relay *R, struct link *from, const uint8_t *f,
			   uint32_t len);
/* A malformed lending frame from @from: counted, said once in a while. */
void __rb2_relay_bad_lend(struct rb2_conn_relay *R, struct link *from, const char *what);
/* Our READs that completed (each pass). */
void __rb2_relay_reads_poll(struct rb2_conn_relay *R);
/* @l is going: settle every loan through it first. */
void __rb2_relay_link_settle(struct rb2_conn_relay *R, struct link *l);

#endif /* RB2_CONN_RELAY_PVT_H */
