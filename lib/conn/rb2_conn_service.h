/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_CONN_SERVICE_H
#define RB2_CONN_SERVICE_H

/**
 * @file
 * Joining the host service, rb2-raasd (RaaS's model): the service is a DPDK
 * primary; an application is a secondary of it (the same --file-prefix).
 * It joins with one channel pair over shared memory, lock-free and with no
 * verbs of its own, and opens connections through it to applications on
 * this host (or, through the service, beyond it).
 *
 * @code
 * struct rb2_conn_ep *ep = rb2_conn_service_join("kv-server", NULL, 5000);
 * rb2_conn_listen(ep, 11211, 0);
 * ...
 * int cd = rb2_conn_connect_host(ep, 0, 11211);   // 0: this host
 * @endcode
 */

#include <rb2_conn.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The ring where applications ask to join (created by the service). */
#define RB2_CONN_SERVICE_RING "rb2_raasd_join"
/** Longest application name (its channels are "<name>.u" and "<name>.d"). */
#define RB2_CONN_SERVICE_NAMESIZE 18

/** A join request (in the shared heap; the service frees it). */
struct rb2_conn_service_join {
	char name[RB2_CONN_SERVICE_NAMESIZE];
	uint32_t pid;
};

/** The channel parameters of a link to the service (both ends use them). */
void rb2_conn_service_chan_params(struct rb2_chan_params *p);

/**
 * Does [@p p, @p p + @p len) lie in this process group's DPDK memory
 * (rte_malloc(), mempools, memzones; not external heaps), every page of it
 * allocated, so that the service and the other applications see it at the
 * same address? Only such a buffer can be lent through the service
 * (rb2_conn_send_ref()) or READ into in place (rb2_conn_recv()); others are
 * copied.
 * @return 1 or 0 (0 also for @p len 0).
 */
int rb2_conn_service_shared(const void *p, size_t len);

/**
 * Join the service: make a channel pair to it, ask it to take the other
 * ends, and connect, within @p timeout_ms.
 *
 * @param name
 *   Unique among the service's applications, at most
 *   RB2_CONN_SERVICE_NAMESIZE - 1 characters.
 * @param p
 *   The endpoint's parameters (NULL: defaults); service is set.
 * @return
 *   The endpoint, or NULL with rte_errno: ENOENT (no service in this
 *   process group: is rb2-raasd running, and is this process its
 *   secondary?), ETIMEDOUT (it did not answer), EINVAL, ENOMEM.
 */
struct rb2_conn_ep *rb2_conn_service_join(const char *name,
					  const struct rb2_conn_ep_params *p,
					  unsigned int timeout_ms);

#ifdef __cplusplus
}
#endif

#endif /* RB2_CONN_SERVICE_H */
