/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Out-of-band exchange over TCP (rb2_xport_oob.h). One message each way:
 * [u32 magic][u32 length][blob], both sides writing first; the blobs are
 * small enough for any socket buffer, so neither write waits on a read.
 * Every wait is bounded by the caller's timeout.
 */

#define _GNU_SOURCE /* accept4() */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <rte_cycles.h>

#include "rb2_xport_driver.h"
#include "rb2_xport_oob.h"

#define OOB_MAGIC 0x4f423252u   /* "R2BO" */
#define OOB_MAX (64 * 1024)     /* a blob longer than this is not ours */

/* Milliseconds until the timer-cycle @deadline, 0 once it passed. */
static int
ms_left(uint64_t deadline)
{
	uint64_t now = rte_get_timer_cycles();

	return now >= deadline ? 0 : (int)((deadline - now) * 1000 / rte_get_timer_hz());
}

/* Wait for @events on @fd until @deadline: 0, -ETIMEDOUT, or -errno. */
static int
wait_fd(int fd, short events, uint64_t deadline)
{
	struct pollfd p = {.fd = fd, .events = events};

	for (;;) {
		int ms = ms_left(deadline);
		struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
		int n = (int)syscall(SYS_ppoll, &p, 1, &ts, NULL, (size_t)8);

		if (n > 0)
			return 0;
		if (n == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

/* Move exactly @len bytes through @fd (send, or receive), without blocking
 * in the call (MSG_DONTWAIT: the socket may be a blocking one); raw system
 * calls (rb2_xport_fd_exchange() runs under a preload that wraps libc's). */
static int
move_all(int fd, void *buf, size_t len, int out, uint64_t deadline)
{
	uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = out ? syscall(SYS_sendto, fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT, NULL, 0) :
			syscall(SYS_recvfrom, fd, p, len, MSG_DONTWAIT, NULL, NULL);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
		} else if (n == 0) {
			return -ECONNRESET;      /* the peer closed mid-message */
		} else if (errno == EAGAIN || errno == EWOULDBLOCK) {
			int ret = wait_fd(fd, out ? POLLOUT : POLLIN, deadline);

			if (ret < 0)
				return ret;
		} else if (errno != EINTR) {
			return -errno;
		}
	}
	return 0;
}

static int
parse(const char *peer, int passive, struct sockaddr_in *sa)
{
	char host[128], *colon;
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM,
				 .ai_flags = passive ? AI_PASSIVE : 0};
	struct addrinfo *ai;

	if (strlen(peer) >= sizeof(host))
		return -EINVAL;
	strcpy(host, peer);
	colon = strrchr(host, ':');
	if (colon == NULL)
		return -EINVAL;
	*colon = '\0';
	if (getaddrinfo(host[0] ? host : NULL, colon + 1, &hints, &ai) != 0)
		return -EINVAL;
	memcpy(sa, ai->ai_addr, sizeof(*sa));
	freeaddrinfo(ai);
	return 0;
}

static int
nonblocking_socket(void)
{
	int one = 1;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* The passive side: one connection on @sa, or -ETIMEDOUT. */
static int
accept_one(const struct sockaddr_in *sa, uint64_t deadline)
{
	int ls = nonblocking_socket(), fd, ret;

	if (ls < 0)
		return ls;
	if (bind(ls, (const struct sockaddr *)sa, sizeof(*sa)) != 0 || listen(ls, 1) != 0) {
		ret = -errno;
		close(ls);
		return ret;
	}
	for (;;) {
		ret = wait_fd(ls, POLLIN, deadline);
		if (ret < 0)
			break;
		fd = accept4(ls, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			ret = fd;
			break;
		}
		if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) {
			ret = -errno;
			break;
		}
	}
	close(ls);
	return ret;
}

/* The active side: connected to @sa, retrying while refused (the peer may
 * not listen yet); -ECONNREFUSED once the deadline is near, -ETIMEDOUT if
 * the connection itself hangs. */
static int
connect_one(const struct sockaddr_in *sa, uint64_t deadline)
{
	for (;;) {
		int fd = nonblocking_socket(), err = 0, ret;
		socklen_t el = sizeof(err);

		if (fd < 0)
			return fd;
		if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0)
			return fd;
		ret = errno == EINPROGRESS ? wait_fd(fd, POLLOUT, deadline) : -errno;
		if (ret == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 && err == 0)
			return fd;
		close(fd);
		if (ret == 0)
			ret = -err;
		if (ret != -ECONNREFUSED || ms_left(deadline) < 100)
			return ret;
		rte_delay_us_sleep(50 * 1000);
	}
}

/* Both send, then read: header (magic, length), then the blob. */
static int
exchange_on(int fd, const void *blob, size_t len, void *peer_blob, size_t peer_cap,
	    uint64_t deadline)
{
	uint32_t hdr[2] = {OOB_MAGIC, (uint32_t)len}, phdr[2];
	int ret;

	ret = move_all(fd, hdr, sizeof(hdr), 1, deadline);
	if (ret == 0)
		ret = move_all(fd, (void *)(uintptr_t)blob, len, 1, deadline);
	if (ret == 0)
		ret = move_all(fd, phdr, sizeof(phdr), 0, deadline);
	if (ret == 0 && (phdr[0] != OOB_MAGIC || phdr[1] > OOB_MAX))
		ret = -EPROTO;
	if (ret == 0 && phdr[1] > peer_cap)
		ret = -EMSGSIZE;
	if (ret == 0)
		ret = move_all(fd, peer_blob, phdr[1], 0, deadline);
	return ret < 0 ? ret : (int)phdr[1];
}

int
rb2_xport_fd_exchange(int fd, const void *blob, size_t len, void *peer_blob,
		      size_t peer_cap, unsigned int timeout_ms)
{
	uint64_t deadline = rte_get_timer_cycles() + rte_get_timer_hz() * timeout_ms / 1000;

	if (len > OOB_MAX)
		return -EMSGSIZE;
	return exchange_on(fd, blob, len, peer_blob, peer_cap, deadline);
}

int
rb2_xport_peer_fd(const char *peer)
{
	char *end;
	long n;

	if (peer == NULL || strncmp(peer, "fd:", 3) != 0)
		return -1;
	errno = 0;
	n = strtol(peer + 3, &end, 10);
	if (errno != 0 || end == peer + 3 || *end != '\0' || n < 0 || n > 1 << 30)
		return -1;
	return (int)n;
}

int
rb2_xport_tcp_exchange(const char *peer, enum rb2_xport_role role, const void *blob,
		       size_t len, void *peer_blob, size_t peer_cap, unsigned int timeout_ms)
{
	uint64_t deadline = rte_get_timer_cycles() + rte_get_timer_hz() * timeout_ms / 1000;
	struct sockaddr_in sa;
	int fd, ret;

	if (len > OOB_MAX || parse(peer, role == RB2_XPORT_PASSIVE, &sa) < 0) {
		RB2_XPORT_LOG(ERR, "out-of-band exchange: '%s' is not ip:port", peer);
		return -EINVAL;
	}
	fd = role == RB2_XPORT_PASSIVE ? accept_one(&sa, deadline) : connect_one(&sa, deadline);
	if (fd < 0)
		return fd;
	ret = exchange_on(fd, blob, len, peer_blob, peer_cap, deadline);
	close(fd);
	return ret;
}
