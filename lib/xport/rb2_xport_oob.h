/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_XPORT_OOB_H
#define RB2_XPORT_OOB_H

/**
 * @file
 * Out-of-band exchange, for drivers: a blob each way over a kernel TCP
 * connection to the rendezvous "ip:port", with no queue connected, as
 * perftest exchanges its QPs' details. A driver whose rendezvous is an IP
 * address offers it as its oob_exchange op; lanes use it to tell each other
 * the rings of the channels they carry once their QPs are connected
 * (rb2_xport_lane.h).
 *
 * The TCP port is the rendezvous's own number: rdma_cm's port space is not
 * the kernel's, so the two do not collide.
 */

#include <stddef.h>

#include <rb2_xport_core.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Exchange @p blob for the peer's over TCP: the passive side listens on
 * @p peer ("ip:port"; an empty ip: every address) for one connection, the
 * active side connects to it, retrying while it is refused. Both send,
 * then read.
 *
 * @return the peer blob's length (at most @p peer_cap: longer is -EMSGSIZE),
 *   or -ETIMEDOUT (passive) or -ECONNREFUSED (active): no peer within
 *   @p timeout_ms; -EINVAL (not "ip:port"),
 *   -EPROTO (the peer sent something else), or the socket's error.
 */
int rb2_xport_tcp_exchange(const char *peer, enum rb2_xport_role role, const void *blob,
			   size_t len, void *peer_blob, size_t peer_cap, unsigned int timeout_ms);

#ifdef __cplusplus
}
#endif

#endif /* RB2_XPORT_OOB_H */
