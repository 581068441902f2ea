/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_CONN_RELAY_H
#define RB2_CONN_RELAY_H

/**
 * @file
 * A host service's relay core (RaaS's model), as rb2-raasd runs it: one
 * endpoint (rb2_conn.h) per link, to an application of this host or to a
 * peer service of another; connections through it are relayed frame by
 * frame between two links, their descriptors rewritten, credits end to
 * end, lent buffers passed on as loans. The service keeps its arguments,
 * its EAL, its telemetry and how links are made (joins, peers); the relay
 * moves frames and reports link events.
 *
 * One thread calls everything here but rb2_conn_relay_stats_get() and
 * rb2_conn_relay_links_get(), which telemetry may call from its own.
 */

#include <stdint.h>
#include <stdio.h>

#include <rb2_conn.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Most links (applications and peer services) a relay holds. */
#define RB2_CONN_RELAY_MAX_LINKS 256
/** Longest link name, with its NUL. */
#define RB2_CONN_RELAY_NAMESIZE 96

struct rb2_conn_relay;

/** Relay configuration (rb2_conn_relay_params_init() sets the defaults). */
struct rb2_conn_relay_params {
	/** Said in front of every line it writes (default "rb2-relay"). */
	const char *name;
	/** Link events (a link gone, with its connections) and the summary
	 *  at rb2_conn_relay_destroy() (default stdout), and errors (stderr). */
	FILE *out, *err;
	/** This host's id: a connect to it, or to 0, stays on this host. */
	uint32_t host_id;
	/** Connections through the relay at once (default 16384, at most 32768). */
	uint32_t max_relays;
	/** Buffers lent through it at once (default 4096, at most 65536). */
	uint32_t max_loans;
	/** Per destination, bytes of frames that wait for room in its ring
	 *  (default 4 MiB; 0: none, a source waits at once; else at least
	 *  256 KiB). */
	uint32_t queue_bytes;
};

/** Relay-wide counters (rb2_conn_relay_stats_get()). */
struct rb2_conn_relay_stats {
	uint64_t links, relays_in_use, max_relays;
	uint64_t frames_relayed;    /**< frames moved from one link to another */
	uint64_t unknown_frames;    /**< for no connection through the relay */
	uint64_t refused, resets, undeliverable;
	uint64_t queued;            /**< frames that waited for a full ring */
	uint64_t sources_held;      /**< times a source waited: a queue was full */
	uint64_t loans_in_use, max_loans, lent, lent_bytes;
	uint64_t copied_here, copied_here_bytes; /**< READs served by one copy here */
	uint64_t reads, read_bytes; /**< READs from peers' lenders */
	uint64_t loans_failed, bad_lend_frames;
};

/** One link's counters (rb2_conn_relay_links_get()). */
struct rb2_conn_relay_link_stats {
	char name[RB2_CONN_RELAY_NAMESIZE];
	uint32_t pid;               /**< an application's process */
	uint32_t host;              /**< a peer service's host id; 0: an application */
	uint64_t conns;             /**< connections through it now */
	uint64_t queued_frames, queue_peak_bytes;
	uint64_t frames_in, bytes_in, frames_out, bytes_out;
};

/** Fill @p p with the defaults. */
void rb2_conn_relay_params_init(struct rb2_conn_relay_params *p);

/** A relay with no link. NULL with rte_errno EINVAL (a parameter out of
 *  its range) or ENOMEM. */
struct rb2_conn_relay *rb2_conn_relay_create(const struct rb2_conn_relay_params *p);

/**
 * Relay the endpoint @p ep (made with max_conns 1: its connections are
 * relayed, not held here) from now on; the relay owns it and destroys it
 * when its link ends. @p host: a peer service's host id, 0 for an
 * application (of process @p pid). @return 0, -ENOSPC
 * (RB2_CONN_RELAY_MAX_LINKS links already) or -ENOMEM.
 */
int rb2_conn_relay_add(struct rb2_conn_relay *R, struct rb2_conn_ep *ep, const char *name,
		       uint32_t pid, uint32_t host);

/**
 * One pass: what waits for each link goes out first, then every link's
 * frames are relayed as they come, then what is owed is flushed. A link
 * that ended (its application exited, a peer failed) is taken away, the
 * other end of each of its connections reset, and the event written.
 */
void rb2_conn_relay_poll(struct rb2_conn_relay *R);

/** Write the summary, end every link (their loans settled first) and
 *  free the relay. */
void rb2_conn_relay_destroy(struct rb2_conn_relay *R);

/** The relay's counters, as the polling thread writes them. */
void rb2_conn_relay_stats_get(const struct rb2_conn_relay *R, struct rb2_conn_relay_stats *st);

/** Up to @p n links' counters into @p ls. @return how many. */
unsigned int rb2_conn_relay_links_get(struct rb2_conn_relay *R,
				      struct rb2_conn_relay_link_stats *ls, unsigned int n);

#ifdef __cplusplus
}
#endif

#endif /* RB2_CONN_RELAY_H */
