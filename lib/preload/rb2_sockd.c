/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* The messages between librb2_preload.so and rb2-sockd (rb2_sockd.h). */

#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "rb2_sockd.h"

int
rb2_sockd_path(char *buf, unsigned int len)
{
	const char *p = getenv("RB2_SOCKD_PATH"), *rt = getenv("XDG_RUNTIME_DIR");
	int n;

	if (p != NULL && p[0] != '\0')
		n = snprintf(buf, len, "%s", p);
	else if (geteuid() == 0)
		n = snprintf(buf, len, "/run/rb2/sockd.sock");
	else if (rt != NULL && rt[0] == '/')
		n = snprintf(buf, len, "%s/rb2/sockd.sock", rt);
	else
		n = snprintf(buf, len, "/tmp/rb2-%u/sockd.sock", (unsigned int)geteuid());
	return n > 0 && (unsigned int)n < len && (size_t)n < sizeof(((struct sockaddr_un *)0)->sun_path) ?
		0 : -ENAMETOOLONG;
}

int
rb2_sockd_send(int sock, const struct rb2_sockd_msg *m, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} c;
	struct iovec iov = { (void *)m, sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (fd >= 0) {
		struct cmsghdr *cm;

		memset(&c, 0, sizeof(c));
		mh.msg_control = c.buf;
		mh.msg_controllen = sizeof(c.buf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)sizeof(*m) ? 0 : n < 0 ? -errno : -EPROTO;
}

int
rb2_sockd_recv(int sock, struct rb2_sockd_msg *m, int *fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} c;
	struct iovec iov = { m, sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf,
			     .msg_controllen = sizeof(c.buf) };
	struct cmsghdr *cm;
	ssize_t n;

	*fd = -1;
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	for (cm = CMSG_FIRSTHDR(&mh); cm != NULL; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
		    cm->cmsg_len >= CMSG_LEN(sizeof(int))) {
			int extra = ((int)cm->cmsg_len - (int)CMSG_LEN(0)) / (int)sizeof(int);

			memcpy(fd, CMSG_DATA(cm), sizeof(int));
			/* More than one: not ours to keep. */
			for (int i = 1; i < extra; i++) {
				int x;

				memcpy(&x, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
				close(x);
			}
		}
	if (n == 0)
		return -ECONNRESET;
	if (n != (ssize_t)sizeof(*m) || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
	    m->magic != RB2_SOCKD_MAGIC || m->version != RB2_SOCKD_VERSION) {
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		return -EPROTO;
	}
	m->name[sizeof(m->name) - 1] = '\0';
	m->why[sizeof(m->why) - 1] = '\0';
	return 0;
}
