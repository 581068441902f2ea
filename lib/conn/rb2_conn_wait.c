/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Connections in blocking mode: the doorbell. An endpoint about to sleep
 * tells its peer (SLEEP, its eventfd); the peer rings it when it puts
 * frames on the ring; awake again, it says so (AWAKE).
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>

#include <rte_errno.h>
#include <rte_cycles.h>
#include <rte_log.h>

#include <rb2_bulk.h>

#include "rb2_conn_pvt.h"

/* ---- blocking mode: the doorbell ---------------------------------------- */

/* The peer sleeps: ring its eventfd if the ring holds what it has not read.
 * Once per sleep (it tells us again when it sleeps again). */
void
__rb2_conn_ring_if_due(struct rb2_conn_ep *ep)
{
	uint64_t one = 1;

	if (rb2_tx_published(ep->tx) == ep->peer_head || ep->peer_efd < 0)
		return;
	ep->peer_sleeps = 0;
	CONN_STAT_ADD(ep, doorbells_rung, 1);
	if (write(ep->peer_efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		CONN_LOG(ERR, "endpoint %s: cannot ring the peer's doorbell: %s",
			 ep->name, strerror(errno));
}

/* The peer's eventfd, as a descriptor of ours: the same number in this
 * process; a copy through pidfd_getfd() from another (Linux 5.6). */
static int
peer_doorbell(struct rb2_conn_ep *ep, uint32_t pid, int32_t fd)
{
	int pidfd, copy;

	if (ep->peer_efd >= 0 && ep->peer_pid == pid && ep->peer_efd_num == fd)
		return ep->peer_efd;
	if (ep->peer_efd >= 0 && ep->peer_pid != (uint32_t)getpid())
		close(ep->peer_efd);
	ep->peer_efd = -1;
	ep->peer_pid = pid;
	ep->peer_efd_num = fd;
	if (pid == (uint32_t)getpid())
		return ep->peer_efd = fd;
	pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
	copy = pidfd < 0 ? -1 : (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
	if (copy < 0)
		CONN_LOG(ERR, "endpoint %s: cannot take the doorbell of process %u: %s "
			 "(needs Linux 5.6 and ptrace rights over it); it is woken at its "
			 "wait's timeout only", ep->name, pid, strerror(errno));
	if (pidfd >= 0)
		close(pidfd);
	return ep->peer_efd = copy;
}

void
__rb2_conn_sleep_in(struct rb2_conn_ep *ep, const uint8_t *body, uint32_t blen)
{
	struct rb2_conn_sleep sl;

	if (blen != sizeof(sl))
		return __rb2_conn_bad_frame(ep, "sleep notice of the wrong size", blen, RB2_CONN_FR_SLEEP);
	/* Its pid and fd mean nothing on another host. */
	if (rb2_xport_caps(rb2_tx_xport(ep->tx)) & RB2_XPORT_CAP_REMOTE)
		return __rb2_conn_bad_frame(ep, "sleep notice across hosts", blen, RB2_CONN_FR_SLEEP);
	memcpy(&sl, body, sizeof(sl));
	peer_doorbell(ep, sl.pid, sl.fd);
	ep->peer_head = sl.head;
	ep->peer_sleeps = 1;
	__rb2_conn_ring_if_due(ep);
}

/* Awake again after a sleep: drain our doorbell, tell the peer. */
void
__rb2_conn_disarm(struct rb2_conn_ep *ep)
{
	uint64_t v;

	if (read(ep->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		CONN_LOG(ERR, "endpoint %s: doorbell: %s", ep->name, strerror(errno));
	if (__rb2_conn_frame_out(ep, RB2_CONN_CID_NONE, RB2_CONN_FR_AWAKE, 0, NULL, 0) == 0)
		ep->armed = 0;
	/* else the ring is full: the peer rings once more, at worst */
}


int
rb2_conn_ep_fd(struct rb2_conn_ep *ep)
{
	if (ep->efd < 0) {
		ep->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (ep->efd < 0) {
			CONN_LOG(ERR, "endpoint %s: eventfd: %s", ep->name, strerror(errno));
			return -errno;
		}
	}
	return ep->efd;
}

int
rb2_conn_ep_arm(struct rb2_conn_ep *ep)
{
	struct rb2_conn_sleep sl;
	struct rb2_msg m;
	int n;

	n = rb2_conn_ep_fd(ep);
	if (n < 0)
		return n;
	n = __rb2_conn_progress(ep, POLL_CHECK_PEER);
	if (n != 0)
		return n;                 /* frames came, or the error */
	/* A peer on another host cannot ring an eventfd here: no notice
	 * (rb2_conn_ep_wait() naps instead). */
	if (rb2_xport_caps(rb2_tx_xport(ep->tx)) & RB2_XPORT_CAP_REMOTE)
		return 0;
	/* Frames we owe (a peer may wait on our credit), or a reservation
	 * open: not a time to sleep. */
	if (ep->n_owed != 0 || ep->n_refusals != 0 || ep->resv_cd >= 0)
		return 1;
	sl.head = rb2_rx_head(ep->rx);
	sl.pid = (uint32_t)getpid();
	sl.fd = ep->efd;
	if (__rb2_conn_frame_out(ep, RB2_CONN_CID_NONE, RB2_CONN_FR_SLEEP, 0, &sl, sizeof(sl)) < 0 ||
	    rb2_tx_flush(ep->tx) < 0)
		return ep->err != 0 ? ep->err : 1;
	ep->armed = 1;
	CONN_STAT_ADD(ep, sleeps, 1);
	/* What came between our last look and the notice is not rung for:
	 * look once more. */
	n = rb2_rx_peek_burst(ep->rx, &m, 1);
	return n != 0 ? (n > 0 ? 1 : n) : 0;
}

int
rb2_conn_ep_wait(struct rb2_conn_ep *ep, unsigned int spin_us, int timeout_ms)
{
	uint64_t hz = rte_get_timer_hz(), now = rte_get_timer_cycles();
	uint64_t spin_end = now + hz * spin_us / 1000000;
	uint64_t end = timeout_ms < 0 ? UINT64_MAX : now + hz * (uint64_t)timeout_ms / 1000;
	int n;

	/* Run: poll while work may come soon. */
	do {
		n = __rb2_conn_progress(ep, POLL_CHECK_PEER);
		if (n != 0)
			return n < 0 ? n : 1;
	} while (rte_get_timer_cycles() < spin_end);
	/* Block: tell the peer, sleep on the doorbell. Slices of 100 ms at
	 * most, to notice a dead peer within that. */
	for (;;) {
		struct pollfd pfd;
		uint64_t left;

		n = rb2_conn_ep_arm(ep);
		if (n != 0)
			return n < 0 ? n : 1;
		now = rte_get_timer_cycles();
		if (now >= end)
			return 0;
		left = (end - now) * 1000 / hz;
		pfd = (struct pollfd){ .fd = ep->efd, .events = POLLIN };
		/* Nobody rings across hosts (ep->armed stays 0 there): nap. */
		if (poll(&pfd, 1, (int)RTE_MIN(left + 1, ep->armed ? (uint64_t)100 : 1)) < 0 &&
		    errno != EINTR)
			return -errno;
		n = __rb2_conn_progress(ep, POLL_CHECK_PEER);       /* disarms */
		if (n != 0)
			return n < 0 ? n : 1;
	}
}
