/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 *
 * A library whose constructor makes socket and file calls before rb2-run's
 * preloaded library has run its own: the loader initialises a program's
 * libraries before the preloaded one (libcap-ng's constructor reads
 * /proc/sys/kernel/cap_last_cap, and PostgreSQL's server links it). Each
 * call's result is kept for rb2run_early's main() to print: the same
 * plainly and under rb2-run.
 */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rb2run_early_lib.h"

static char said[512];

/* "call=ok" when @ret is what the call should give, else "call=fail". */
static void
note(const char *call, long ret)
{
	size_t n = strlen(said);

	snprintf(said + n, sizeof(said) - n, "%s%s=%s", n ? " " : "", call,
		 ret < 0 ? "fail" : "ok");
}

__attribute__((constructor)) static void
early_calls(void)
{
	char buf[64];
	struct pollfd pf;
	struct epoll_event ev = { .events = EPOLLIN };
	int fd = open("/proc/self/stat", O_RDONLY), s, e, d;

	note("read", read(fd, buf, sizeof(buf)));
	note("close", close(fd));
	s = socket(AF_INET, SOCK_STREAM, 0);
	note("socket", s);
	note("fcntl", fcntl(s, F_SETFL, fcntl(s, F_GETFL) | O_NONBLOCK));
	pf = (struct pollfd){ .fd = s, .events = POLLOUT };
	note("poll", poll(&pf, 1, 0));
	d = dup(s);
	note("dup", d);
	e = epoll_create1(0);
	note("epoll_ctl", epoll_ctl(e, EPOLL_CTL_ADD, d, &ev));
	note("epoll_wait", epoll_wait(e, &ev, 1, 0));
	note("unconnected read", read(s, buf, 1) < 0 ? 0 : -1);   /* must fail */
	note("closes", close(e) | close(d) | close(s));
}

const char *
rb2run_early_said(void)
{
	return said;
}
