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
rb2_sockd_send(int sock, const struct rb2_sockd_msg *m, const int *fds, unsigned int nfds)
{
	union {
		char buf[CMSG_SPACE(RB2_SOCKD_MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} c;
	struct iovec iov = { (void *)m, sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (nfds > RB2_SOCKD_MAX_FDS)
		return -EINVAL;
	if (nfds > 0) {
		struct cmsghdr *cm;

		memset(&c, 0, sizeof(c));
		mh.msg_control = c.buf;
		mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
	}
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)sizeof(*m) ? 0 : n < 0 ? -errno : -EPROTO;
}

int
rb2_sockd_recv(int sock, struct rb2_sockd_msg *m, int *fds, unsigned int max)
{
	union {
		char buf[CMSG_SPACE(RB2_SOCKD_MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} c;
	struct iovec iov = { m, sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf,
			     .msg_controllen = sizeof(c.buf) };
	struct cmsghdr *cm;
	unsigned int got = 0, extra = 0;
	ssize_t n;

	for (unsigned int i = 0; i < max; i++)
		fds[i] = -1;
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	for (cm = CMSG_FIRSTHDR(&mh); cm != NULL; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
			int k = ((int)cm->cmsg_len - (int)CMSG_LEN(0)) / (int)sizeof(int);

			/* More than @max: not a message of ours, and those
			 * past it are not ours to keep. */
			for (int i = 0; i < k; i++) {
				int x;

				memcpy(&x, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
				if (got < max) {
					fds[got++] = x;
				} else {
					close(x);
					extra++;
				}
			}
		}
	if (n == 0 || n != (ssize_t)sizeof(*m) || extra > 0 ||
	    (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
	    m->magic != RB2_SOCKD_MAGIC || m->version != RB2_SOCKD_VERSION) {
		for (unsigned int i = 0; i < max; i++) {
			if (fds[i] >= 0)
				close(fds[i]);
			fds[i] = -1;
		}
		return n == 0 ? -ECONNRESET : -EPROTO;
	}
	m->name[sizeof(m->name) - 1] = '\0';
	m->why[sizeof(m->why) - 1] = '\0';
	return 0;
}
