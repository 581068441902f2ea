/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_IPFIX_H
#define RB2_IPFIX_H

/**
 * @file
 * IPFIX (RFC 7011) for the measurement NF's flow records: an encoder that
 * packs records into messages no bigger than a datagram may be, and a
 * decoder that reads them back (tests, fuzzing, and a user checking what a
 * collector should see). Neither does I/O: the export stage sends what the
 * encoder makes, over UDP or into a file (RFC 5655: a file is the messages
 * one after another).
 *
 * @code
 * struct rb2_ipfix_params p;
 * rb2_ipfix_params_init(&p);                 // domain 0, 1472-byte messages
 * struct rb2_ipfix_enc *e = rb2_ipfix_enc_create(&p);
 * rb2_ipfix_enc_add(e, &rec, time(NULL), send_msg, sock);  // calls send_msg per full message
 * rb2_ipfix_enc_flush(e, time(NULL), send_msg, sock);      // the one in progress
 * @endcode
 *
 * Two templates, one per address family, each a flow as rb2_flow_rec holds
 * it (RFC 7012 information elements, network byte order):
 *
 * | IE (id)                          | bytes | template 256 (IPv4) / 257 (IPv6) |
 * |----------------------------------|-------|----------------------------------|
 * | sourceIPv4Address (8) / sourceIPv6Address (27)           | 4 / 16 | |
 * | destinationIPv4Address (12) / destinationIPv6Address (28) | 4 / 16 | |
 * | sourceTransportPort (7), destinationTransportPort (11)    | 2 + 2  | |
 * | protocolIdentifier (4)           | 1     | |
 * | tcpControlBits (6)               | 2     | RFC 7125's width |
 * | packetDeltaCount (2), octetDeltaCount (1) | 8 + 8 | |
 * | flowStartMilliseconds (152), flowEndMilliseconds (153) | 8 + 8 | |
 * | flowEndReason (136)              | 1     | |
 * | ingressInterface (10)            | 4     | |
 *
 * Templates go in the first message, then again every @c refresh_msgs
 * messages and every @c refresh_s seconds of export time, as RFC 7011 §8.4
 * asks of UDP (a collector that starts late, or lost the message, learns
 * them). The header's sequence number counts the data records sent before
 * the message, so a collector can count what it lost.
 *
 * **NetFlow v9** (RFC 3954), for collectors that read only that: the same
 * templates and records in v9's framing. Its 20-byte header counts records
 * where IPFIX gives a length, and its sequence number counts messages; the
 * template FlowSet's ID is 0 where IPFIX's is 2. The times stay elements
 * 152 and 153, absolute milliseconds, as Cisco's NSEL sends them in v9 and
 * nfdump, pmacct and Wireshark read them: v9's own FIRST_SWITCHED and
 * LAST_SWITCHED (22, 21) count from the exporter's boot in 32 bits, and a
 * replayed capture's times lie years before the export, beyond their
 * 49.7-day range. flowEndReason (136) rides along; a v9 collector that
 * does not know it skips it by its length. v9 has no file format: a file
 * is IPFIX.
 */

#include <stddef.h>
#include <stdint.h>

#include <rb2_flowtab.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RB2_IPFIX_VERSION 10
#define RB2_IPFIX_HDR_LEN 16
#define RB2_NFV9_VERSION 9
#define RB2_NFV9_HDR_LEN 20
#define RB2_IPFIX_TMPL_V4 256
#define RB2_IPFIX_TMPL_V6 257
/** Bytes of one data record by template. */
#define RB2_IPFIX_REC_V4 52
#define RB2_IPFIX_REC_V6 76
/** The smallest message size the encoder takes: the templates and a record fit. */
#define RB2_IPFIX_MSG_MIN 256

/** Encoder parameters: rb2_ipfix_params_init() fills the defaults. */
struct rb2_ipfix_params {
	/** RB2_IPFIX_VERSION (default) or RB2_NFV9_VERSION: NetFlow v9 framing */
	uint32_t version;
	uint32_t domain;       /**< observation domain ID, v9's source ID (default 0) */
	/** Largest message, bytes (default 1472: a 1500-byte MTU less the
	 * IPv4 and UDP headers); RB2_IPFIX_MSG_MIN..65535. */
	uint32_t max_msg;
	uint32_t refresh_msgs; /**< templates again every N messages; 0: by time only (default 20) */
	uint32_t refresh_s;    /**< ... and every T s of export time; 0: by count only (default 600) */
};

void rb2_ipfix_params_init(struct rb2_ipfix_params *p);

/** Where a finished message goes: @p msg is valid during the call only. */
typedef void rb2_ipfix_out_t(void *arg, const uint8_t *msg, size_t len);

struct rb2_ipfix_enc;

/** @return the encoder, or NULL with errno EINVAL (a size or version out of
 *  range) or ENOMEM. */
struct rb2_ipfix_enc *rb2_ipfix_enc_create(const struct rb2_ipfix_params *p);
void rb2_ipfix_enc_free(struct rb2_ipfix_enc *e);

/**
 * Add one record (IPv4 or IPv6; other kinds are refused with -EINVAL).
 * When it does not fit in the message in progress, that message is
 * finished and handed to @p out first. @p now_s is the export time
 * (seconds since the epoch) stamped on messages finished in this call.
 */
int rb2_ipfix_enc_add(struct rb2_ipfix_enc *e, const struct rb2_flow_rec *r, uint32_t now_s,
		      rb2_ipfix_out_t *out, void *arg);

/** Finish the message in progress, if it holds a record, and hand it to @p out. */
void rb2_ipfix_enc_flush(struct rb2_ipfix_enc *e, uint32_t now_s, rb2_ipfix_out_t *out,
			 void *arg);

/** What an encoder has made. */
struct rb2_ipfix_enc_stats {
	uint64_t records;     /**< data records in finished messages */
	uint64_t messages;
	uint64_t bytes;
	uint64_t templates;   /**< messages that carried the templates */
};

void rb2_ipfix_enc_stats(const struct rb2_ipfix_enc *e, struct rb2_ipfix_enc_stats *st);

/* ---- Decoding ----------------------------------------------------------- */

struct rb2_ipfix_dec;

struct rb2_ipfix_dec *rb2_ipfix_dec_create(void);
void rb2_ipfix_dec_free(struct rb2_ipfix_dec *d);

/** Called for each data record decoded; @p domain is its message's. */
typedef void rb2_ipfix_rec_t(void *arg, const struct rb2_flow_rec *r, uint32_t domain);

/**
 * Decode one message, IPFIX or NetFlow v9 (one datagram, for v9):
 * remember its templates (any template of the elements above, in any
 * order and reduced-size widths), and hand each data record of a known
 * template to @p cb. Data sets of templates not seen yet are counted and
 * skipped, as a collector does.
 * @return 0, or -EBADMSG with the reason in @p err (a length that does not
 *   add up, a version other than 10 or 9, a malformed template).
 */
int rb2_ipfix_dec_msg(struct rb2_ipfix_dec *d, const uint8_t *msg, size_t len,
		      rb2_ipfix_rec_t *cb, void *arg, char *err, size_t errlen);

/** What a decoder has read. */
struct rb2_ipfix_dec_stats {
	uint64_t messages, records, templates;
	uint64_t unknown_sets;   /**< data sets of a template not (yet) known */
	/** records (v9: messages) the sequence numbers say were missed */
	uint64_t seq_lost;
};

void rb2_ipfix_dec_stats(const struct rb2_ipfix_dec *d, struct rb2_ipfix_dec_stats *st);

#ifdef __cplusplus
}
#endif

#endif /* RB2_IPFIX_H */
