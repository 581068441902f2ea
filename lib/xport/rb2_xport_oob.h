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

/**
 * Exchange @p blob for the peer's over @p fd, a stream socket that is
 * already connected to the peer (blocking or not; its flags are left as
 * they are): both send, then read, in the framing of
 * rb2_xport_tcp_exchange(). The socket goes on carrying what its owner
 * sends after: exactly the exchange's bytes are consumed. A driver whose
 * rendezvous is "fd:N" connects its queue so, as perftest exchanges its
 * QPs' details over its own TCP connection.
 *
 * Raw system calls, not libc's: under an LD_PRELOAD library that wraps
 * send() and recv() (rb2-run), this is called from inside the wrappers.
 *
 * @return as rb2_xport_tcp_exchange(); -ECONNRESET: the peer closed.
 */
int rb2_xport_fd_exchange(int fd, const void *blob, size_t len, void *peer_blob,
			  size_t peer_cap, unsigned int timeout_ms);

/**
 * Parse a rendezvous "fd:N".
 * @return N, or -1 when @p peer is not one.
 */
int rb2_xport_peer_fd(const char *peer);

#ifdef __cplusplus
}
#endif

#endif /* RB2_XPORT_OOB_H */
