/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_CONN_WIRE_H
#define RB2_CONN_WIRE_H

/**
 * @file
 * The connections' wire format: what lib/conn's endpoints and relay core
 * and the fuzzers put on a ring and parse off it, and nothing else (no
 * endpoint state). Self-contained: it needs no other rb2 header.
 *
 * Every frame on the shared ring (an RB² message, whose length the ring
 * carries) starts with this header, in host byte order (both ends must share
 * it; the SYN's magic catches a mismatch):
 *
 *   +0 u32 cid    the receiver's descriptor (RaaS's vQPN), RB2_CONN_CID_NONE when
 *                 the frame is for the endpoint (SYN, CREDIT, SLEEP, AWAKE,
 *                 LISTEN, UNLISTEN, REFDONE, READREQ, READDONE, BYE)
 *   +4 u8  type   RB2_CONN_FR_*
 *   +5 u8  flags  0
 *   +6 u16 aux    SYN, LISTEN, UNLISTEN: the port; REFUSE, RST: the reason;
 *                 CREDIT, REFDONE, READDONE: entries; BYE: RB2_CONN_BYE
 *                 or RB2_CONN_BYE_ANSWER
 *   +8 body       DATA: the payload; SYN, SYNACK: struct rb2_conn_hello;
 *                 CREDIT: aux x struct rb2_conn_credit; SLEEP: struct
 *                 rb2_conn_sleep; REF: struct rb2_bulk_ref, a buffer lent
 *                 (its tag the lender's id for it, rb2_conn_ref.h);
 *                 REFDONE, READDONE: aux x struct rb2_conn_refdone;
 *                 READREQ: struct rb2_conn_readreq; others: none
 *
 * A DATA frame that follows a DATA frame of the same connection directly in
 * the ring goes without the header: the ring marks it instead
 * (RB2_MSG_MARK, a bit beside its length in lens[]), and the payload starts
 * at its first byte. The receiver takes the connection from the frame
 * before it. So a connection's run of small messages costs the ring what
 * a bare channel's would (a 64 B message fills one 64 B slot, not 72 B
 * straddling two lines); RaaS carries its vQPN in the immediate for the
 * same reason. Every other frame, and the first of a run, has the header.
 * Only frames of one slot are marked, and only where slots are whole cache
 * lines (not RB2_CHAN_F_UNALIGNED): there a frame starts a line, and the
 * header is what can cost one more. In packed 8-byte slots every message
 * costs its stride either way, and marked frames measured slower; marked
 * frames of several slots cost rb2-kv a fifth of its rate (doc/eval/conn.md).
 *
 * A descriptor is (generation << 16 | slot index), generation 1..32767, so
 * a late frame for a slot that was freed and reused does not match.
 *
 * Credits count bytes of the receiver's buffer: a message of len bytes
 * costs rb2_conn_footprint(len) = 8 + len rounded up to 8 (its record
 * there); a lent one costs its descriptor's footprint (the payload stays
 * in the sender's memory until the receiver READs it). The sender keeps
 * sent and acked (the receiver's consumed count, as it last heard); it may
 * send while sent - acked + footprint <= window.
 */

#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Bytes of header in front of every frame on the ring. */
#define RB2_CONN_HDR_LEN 8

#define RB2_CONN_CID_NONE UINT32_MAX

enum {
	RB2_CONN_FR_DATA = 1,
	RB2_CONN_FR_SYN,     /* open: aux = port, body hello */
	RB2_CONN_FR_SYNACK,  /* accepted: body hello */
	RB2_CONN_FR_REFUSE,  /* aux = RB2_CONN_REFUSE_* */
	RB2_CONN_FR_FIN,     /* the sender sends no more */
	RB2_CONN_FR_RST,     /* the connection is dead: aux = RB2_CONN_RST_* */
	RB2_CONN_FR_CREDIT,  /* aux entries of struct rb2_conn_credit */
	RB2_CONN_FR_WANT,    /* the sender waits for credit */
	RB2_CONN_FR_SLEEP,   /* the endpoint sleeps: body struct rb2_conn_sleep */
	RB2_CONN_FR_AWAKE,   /* it is awake again */
	RB2_CONN_FR_LISTEN,  /* to a service: accept connects to port aux here */
	RB2_CONN_FR_UNLISTEN,/* ... no more */
	RB2_CONN_FR_REF,     /* data by reference: body struct rb2_bulk_ref */
	RB2_CONN_FR_REFDONE, /* lent buffers READ or discarded: aux entries */
	RB2_CONN_FR_READREQ, /* to a service: READ a lent buffer for us: body
			      * struct rb2_conn_readreq */
	RB2_CONN_FR_READDONE,/* from it: those READs are over: aux x struct
			      * rb2_conn_refdone (status 0 or why not) */
	RB2_CONN_FR_BYE,     /* the endpoint closes; nothing follows it: aux
			      * RB2_CONN_BYE_* (rb2_conn_ep_destroy()) */
	RB2_CONN_FR_MAX,
};

enum { RB2_CONN_REFUSE_NO_LISTENER = 1, RB2_CONN_REFUSE_BACKLOG, RB2_CONN_REFUSE_TOO_MANY,
       RB2_CONN_REFUSE_NO_ROUTE, RB2_CONN_REFUSE_MAX };
enum { RB2_CONN_RST_UNLISTEN = 1, RB2_CONN_RST_WINDOW, RB2_CONN_RST_PEER_GONE, RB2_CONN_RST_NOMEM,
       RB2_CONN_RST_LEND, RB2_CONN_RST_PEER_LEFT, RB2_CONN_RST_MAX };
/* A goodbye, and the answer that lets its sender go: it waits for that
 * answer, so the peer reads the goodbye before it sees the process gone. */
enum { RB2_CONN_BYE = 0, RB2_CONN_BYE_ANSWER = 1 };

#define RB2_CONN_MAGIC 0x7262u   /* "rb" */
#define RB2_CONN_VERSION 5u

struct rb2_conn_hello {
	uint32_t src_cd;     /* the sender's descriptor: put it in frames to it */
	uint32_t window;     /* its receive buffer */
	uint32_t max_msg;    /* the largest message it takes */
	uint16_t magic, version;
	uint32_t host;       /* SYN through a service: the host id (rb2-raasd's
			      * --host-id, by default its IPv4 address), 0: this one */
};

/* A sleeping endpoint's doorbell: ring it when the ring holds more than
 * @p head (our tail, the sleeper's head: the same slot count). */
struct rb2_conn_sleep {
	uint64_t head;       /* what the sleeper had read */
	uint32_t pid;        /* its process, and there its eventfd */
	int32_t fd;
};

struct rb2_conn_credit {
	uint32_t cid;
	uint32_t consumed;   /* cumulative footprint consumed, mod 2^32 */
};

/* A lent buffer the receiver is done with: READ (status 0), or discarded
 * unread (-ECONNABORTED: closed, reset, or no such connection; through a
 * service also -ECONNRESET: the service lost the receiver's host). As a
 * READDONE entry, from a service to the reader: the READ it asked for is
 * over (0), or failed with that status. */
struct rb2_conn_refdone {
	uint32_t id;         /* the lender's, from the descriptor's tag */
	int32_t status;
};

/* Through a service (rb2_conn_ref.h): an application has no verbs, so it
 * asks its service to READ lent buffer @id (the REF frame's tag, as the
 * service gave it) into [dst, dst + len) of the process group's shared
 * memory. The service answers with a READDONE entry for @id. */
struct rb2_conn_readreq {
	uint32_t id;
	uint32_t rsvd;       /* 0 */
	uint64_t dst;
	uint64_t len;
};

#define RB2_CONN_CREDITS_PER_FRAME 64u
#define RB2_CONN_REFDONES_PER_FRAME 64u

/** The bytes a message of @p len bytes costs of the receiver's window:
 *  its record there, the header and the payload rounded up to 8. */
static inline uint32_t
rb2_conn_footprint(uint32_t len)
{
	return RB2_CONN_HDR_LEN + ((len + 7u) & ~7u);
}

/** A frame header as one 64-bit store (little-endian layout). */
static inline uint64_t
rb2_conn_wire_hdr(uint32_t cid, uint8_t type, uint16_t aux)
{
	return (uint64_t)cid | (uint64_t)type << 32 | (uint64_t)aux << 48;
}

/** Write a frame's header at @p f (which needs no alignment). */
static inline void
rb2_conn_wire_put_hdr(void *f, uint32_t cid, uint8_t type, uint16_t aux)
{
	uint64_t h = rb2_conn_wire_hdr(cid, type, aux);

	memcpy(f, &h, sizeof(h));
}

/** Rewrite the descriptor a frame at @p f is for (a relay's job). */
static inline void
rb2_conn_wire_set_cid(void *f, uint32_t cid)
{
	memcpy(f, &cid, sizeof(cid));
}

/** A frame as it came off the ring: its header read, or, for a marked
 *  frame, which has none, taken from the run it continues. */
struct rb2_conn_frame {
	uint32_t cid;
	uint8_t type;             /**< 0: no header (too short, or marked out of a run) */
	uint8_t marked;
	uint16_t aux;
	const uint8_t *body;
	uint32_t blen;
	uint32_t len;             /**< its bytes in the ring */
};

/**
 * Parse the frame of @p len bytes at @p data, marked (@p marked: it has no
 * header) or not, which follows in the ring a DATA frame of connection
 * @p run (or RB2_CONN_CID_NONE: any other frame).
 * @return the run after it, for the frame that follows it.
 */
static inline __attribute__((always_inline)) uint32_t
rb2_conn_wire_parse(const void *data, uint32_t len, int marked, uint32_t run,
		    struct rb2_conn_frame *fr)
{
	uint64_t hdr;

	fr->len = len;
	fr->marked = marked != 0;
	fr->aux = 0;
	if (marked) {
		/* No header: the run's DATA, from the first byte. */
		fr->cid = run;
		fr->type = run != RB2_CONN_CID_NONE ? RB2_CONN_FR_DATA : 0;
		fr->body = (const uint8_t *)data;
		fr->blen = len;
		return run;
	}
	if (__builtin_expect(len < RB2_CONN_HDR_LEN, 0)) {
		fr->cid = RB2_CONN_CID_NONE;
		fr->type = 0;
		fr->body = (const uint8_t *)data;
		fr->blen = 0;
		return RB2_CONN_CID_NONE;
	}
	memcpy(&hdr, data, sizeof(hdr));      /* cid, type, flags, aux */
	fr->cid = (uint32_t)hdr;
	fr->type = (uint8_t)(hdr >> 32);
	fr->aux = (uint16_t)(hdr >> 48);
	fr->body = (const uint8_t *)data + RB2_CONN_HDR_LEN;
	fr->blen = len - RB2_CONN_HDR_LEN;
	return fr->type == RB2_CONN_FR_DATA ? fr->cid : RB2_CONN_CID_NONE;
}

/**
 * Check a SYN's or SYNACK's hello (@p blen bytes at @p body) and copy it
 * to @p h. @return NULL, or why it is malformed.
 */
static inline const char *
rb2_conn_wire_hello(const uint8_t *body, uint32_t blen, struct rb2_conn_hello *h)
{
	if (blen != sizeof(*h))
		return "hello of the wrong size";
	memcpy(h, body, sizeof(*h));
	if (h->magic != RB2_CONN_MAGIC)
		return "bad magic (byte order?)";
	if (h->version != RB2_CONN_VERSION)
		return "unknown version";
	if (h->window < 4096 || h->max_msg == 0 ||
	    /* in 64 bits: a hostile max_msg near 2^32 must not wrap */
	    RB2_CONN_HDR_LEN + (((uint64_t)h->max_msg + 7) & ~7ull) > h->window)
		return "window or max_msg out of range";
	return NULL;
}

#ifdef __cplusplus
}
#endif

#endif /* RB2_CONN_WIRE_H */
