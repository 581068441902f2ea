/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * The call surface of rb2-run, observed: one socket program that runs the
 * same steps plainly and under rb2-run, and prints what each call returned
 * (values, errno names, poll and epoll events, flags). tests/test_rb2run.sh
 * runs it both ways and requires the two transcripts to be identical, and
 * the rb2-run one to have gone over rb2.
 *
 *   rb2run_conform
 *
 * A child process is the peer. It does what the parent asks over a pipe,
 * one command at a time, and answers when done, so that every step sees the
 * same state under both runs:
 *   A        accept the next connection (it becomes the current one)
 *   S n      send n bytes of the pattern
 *   L ms n   answer at once, then after ms milliseconds send n bytes
 *   R n      read exactly n bytes; answer their sum ("eof" at the end)
 *   E        read to the end; answer the byte count
 *   X        read to the end; answer the byte count and how it ended (the
 *            end, or the errno: a reset)
 *   W        shutdown(SHUT_WR)
 *   C        close
 *   K port   connect to the parent's listener on port, send 3 bytes
 *   Q        exit
 * Nothing here depends on timing but the bounds it prints ("in time").
 */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int to_peer, from_peer;
static uint16_t peer_port;

static uint8_t
pat(size_t i)
{
	return (uint8_t)(i * 7 + i / 251);
}

static const char *
en(int e)
{
	const char *n = strerrorname_np(e);

	return n != NULL ? n : "?";
}

/* "ret" as a call's result: the value, or -1 and errno's name. */
static const char *
res(long r, int e)
{
	static char b[8][64];
	static int k;
	char *s = b[k++ % 8];

	if (r < 0)
		snprintf(s, 64, "-1 %s", en(e));
	else
		snprintf(s, 64, "%ld", r);
	return s;
}

#define CALL(x) ({ long r_ = (long)(x); int e_ = errno; res(r_, e_); })
/* say() with a call's result first: the call runs before the other
 * arguments, which may read what it wrote, are evaluated. */
#define SAY(fmt, call, ...) do { const char *c_ = CALL(call); say(fmt, c_, ##__VA_ARGS__); } while (0)

static int step;

static void
say(const char *fmt, ...)
{
	va_list ap;

	printf("%02d ", ++step);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/* ---- The peer ----------------------------------------------------------- */

static void
reply(const char *fmt, ...)
{
	char b[128];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(b, sizeof(b) - 1, fmt, ap);
	va_end(ap);
	b[n++] = '\n';
	if (write(from_peer, b, (size_t)n) != n)
		_exit(2);
}

static void
send_pat(int c, size_t n)
{
	char *b = malloc(n);
	size_t done = 0;

	for (size_t i = 0; i < n; i++)
		b[i] = (char)pat(i);
	while (done < n) {
		ssize_t w = send(c, b + done, n - done, MSG_NOSIGNAL);

		if (w <= 0)
			break;
		done += (size_t)w;
	}
	free(b);
}

static void
peer(int cmd_fd, int lfd)
{
	FILE *in = fdopen(cmd_fd, "r");
	char line[128];
	int c = -1;

	while (fgets(line, sizeof(line), in) != NULL) {
		long a = 0, b = 0;
		char op = line[0];

		sscanf(line + 1, "%ld %ld", &a, &b);
		if (op == 'A') {
			c = accept(lfd, NULL, NULL);
			reply("%s", c >= 0 ? "ok" : en(errno));
		} else if (op == 'S') {
			send_pat(c, (size_t)a);
			reply("ok");
		} else if (op == 'L') {
			reply("ok");
			usleep((useconds_t)a * 1000);
			send_pat(c, (size_t)b);
		} else if (op == 'R' || op == 'E') {
			uint64_t sum = 0, got = 0;
			char buf[65536];

			while (op == 'E' || got < (uint64_t)a) {
				size_t want = op == 'E' || a - (long)got > (long)sizeof(buf) ?
					sizeof(buf) : (size_t)(a - (long)got);
				ssize_t r = recv(c, buf, want, 0);

				if (r <= 0)
					break;
				for (ssize_t i = 0; i < r; i++)
					sum += (uint8_t)buf[i];
				got += (uint64_t)r;
			}
			if (op == 'E')
				reply("%lu", (unsigned long)got);
			else if (got < (uint64_t)a)
				reply("eof after %lu", (unsigned long)got);
			else
				reply("sum %lu", (unsigned long)sum);
		} else if (op == 'X') {
			char buf[4096];
			uint64_t got = 0;
			ssize_t r;

			while ((r = recv(c, buf, sizeof(buf), 0)) > 0)
				got += (uint64_t)r;
			reply("%lu, then %s", (unsigned long)got, r == 0 ? "the end" : en(errno));
		} else if (op == 'W') {
			reply("%s", CALL(shutdown(c, SHUT_WR)));
		} else if (op == 'C') {
			reply("%s", CALL(close(c)));
			c = -1;
		} else if (op == 'K') {
			struct sockaddr_in sa = { .sin_family = AF_INET,
				.sin_port = htons((uint16_t)a),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
			int k = socket(AF_INET, SOCK_STREAM, 0);

			if (connect(k, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
				reply("%s", en(errno));
				continue;
			}
			send_pat(k, 3);
			reply("ok");
			/* Kept open: the parent reads, then closes its end. */
		} else if (op == 'Q') {
			break;
		}
	}
	_exit(0);
}

/* The peer's answer to the last command, without the newline. */
static const char *
answer(void)
{
	static char ans[128];
	size_t k = 0;

	while (k < sizeof(ans) - 1 && read(from_peer, ans + k, 1) == 1 && ans[k] != '\n')
		k++;
	ans[k] = '\0';
	return ans;
}

/* Ask the peer, and wait for its answer. */
static const char *
ask(const char *fmt, ...)
{
	char b[128];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(b, sizeof(b) - 1, fmt, ap);
	va_end(ap);
	b[n++] = '\n';
	if (write(to_peer, b, (size_t)n) != n)
		exit(2);
	return answer();
}

/* ---- Helpers --------------------------------------------------------------- */

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int
connect_peer(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(peer_port),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	/* The peer waits in accept() first, as a server does. */
	if (write(to_peer, "A\n", 2) != 2)
		exit(2);
	say("connect: %s", CALL(connect(fd, (struct sockaddr *)&sa, sizeof(sa))));
	say("peer accept: %s", answer());
	return fd;
}

/* The peer sends 3 bytes, which we close @fd on unread: the peer reads to
 * the end, a reset if our close was the connection's last. */
static void
close_with_3_unread(int fd)
{
	say("peer sends 3: %s", ask("S 3"));
	usleep(20000);
	say("close, the 3 unread: %s", CALL(close(fd)));
	say("peer reads to the end: %s", ask("X"));
	say("peer closes: %s", ask("C"));
}

/* recv of up to @n bytes: the result, and the sum of the bytes (the peer
 * sends the pattern from byte 0 each time). */
static const char *
recv_sum(int fd, size_t n, int flags)
{
	static char out[96];
	uint8_t buf[4096];
	ssize_t r = recv(fd, buf, n, flags);
	int e = errno;
	unsigned long sum = 0;

	for (ssize_t i = 0; i < r; i++)
		sum += buf[i];
	if (r > 0)
		snprintf(out, sizeof(out), "%s, sum %lu", res(r, e), sum);
	else
		snprintf(out, sizeof(out), "%s", res(r, e));
	return out;
}

static const char *
pev(int ev)
{
	static char b[4][96];
	static int k;
	char *s = b[k++ % 4];

	snprintf(s, 96, "%s%s%s%s%s%s%s%s", ev == 0 ? "none" : "", ev & POLLIN ? "IN " : "",
		 ev & POLLOUT ? "OUT " : "", ev & POLLRDHUP ? "RDHUP " : "",
		 ev & POLLHUP ? "HUP " : "", ev & POLLERR ? "ERR " : "",
		 ev & POLLRDNORM ? "RDNORM " : "", ev & POLLWRNORM ? "WRNORM " : "");
	return s;
}

/* epoll_wait: how many, and the first's events and data. */
static const char *
ewait(int ep, int ms)
{
	static char b[4][96];
	static int k;
	char *s = b[k++ % 4];
	struct epoll_event ev[4];
	int n = epoll_wait(ep, ev, 4, ms), e = errno;

	if (n <= 0)
		snprintf(s, 96, "%s", res(n, e));
	else
		snprintf(s, 96, "%d: %s(data %lu)", n, pev((int)ev[0].events),
			 (unsigned long)ev[0].data.u64);
	return s;
}

/* A thread asleep in an epoll set for up to 3 s (main's late add). */
struct late {
	int ep;
	const char *got;
};

static void *
late_waiter(void *arg)
{
	struct late *l = arg;

	l->got = ewait(l->ep, 3000);
	return NULL;
}

static volatile sig_atomic_t sigs;
static volatile nfds_t one_fd = 1;

static void
on_signal(int sig)
{
	(void)sig;
	sigs++;
}

/* ---- The steps ---------------------------------------------------------------- */

int
main(void)
{
	int p1[2], p2[2], lfd, fd, ep, ep2, k, v;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in got;
	socklen_t gl = sizeof(got);
	struct epoll_event ev;
	struct pollfd pf;
	pid_t child;
	uint64_t t0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (pipe(p1) != 0 || pipe(p2) != 0)
		return 2;
	/* The peer's listener first, so that both know the port. */
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &(int){ 1 }, sizeof(int));
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(lfd, 16) != 0 ||
	    getsockname(lfd, (struct sockaddr *)&got, &gl) != 0)
		return 2;
	peer_port = ntohs(got.sin_port);
	child = fork();
	if (child == 0) {
		close(p1[1]);
		close(p2[0]);
		from_peer = p2[1];
		peer(p1[0], lfd);
	}
	close(p1[0]);
	close(p2[1]);
	close(lfd);
	to_peer = p1[1];
	from_peer = p2[0];

	/* Connecting, and the addresses. */
	fd = connect_peer();
	{
		struct sockaddr_in pa, la;
		socklen_t pl = sizeof(pa), ll = sizeof(la);

		SAY("getpeername: %s, the peer's port: %s", getpeername(fd, (struct sockaddr *)&pa, &pl), ntohs(pa.sin_port) == peer_port ? "yes" : "no");
		SAY("getsockname: %s, a port: %s, len %u", getsockname(fd, (struct sockaddr *)&la, &ll), la.sin_port != 0 ? "yes" : "no", (unsigned int)ll);
	}
	/* rb2-run's own descriptors (the stream's arena) sit high: the
	 * program's next one is numbered as without it (wrk sizes its event
	 * loop by its connection count and refuses a socket numbered past). */
	k = socket(AF_INET, SOCK_STREAM, 0);
	say("the next socket's number, one connection open: fd + %d", k - fd);
	close(k);
	gl = sizeof(v);
	SAY("SO_ERROR: %s, value %d", getsockopt(fd, SOL_SOCKET, SO_ERROR, &v, &gl), v);
	say("TCP_NODELAY set: %s", CALL(setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int))));
	gl = sizeof(v);
	SAY("TCP_NODELAY get: %s, value %d", getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, &gl), v != 0);
	say("SO_KEEPALIVE set: %s", CALL(setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &(int){ 1 }, sizeof(int))));

	/* Bytes one way and the other. */
	{
		char hello[5];

		for (int i = 0; i < 5; i++)
			hello[i] = (char)pat((size_t)i);
		say("send 5: %s", CALL(send(fd, hello, 5, 0)));
		say("peer reads 5: %s", ask("R 5"));
	}
	say("peer sends 10: %s", ask("S 10"));
	pf = (struct pollfd){ .fd = fd, .events = POLLIN | POLLOUT };
	/* A count the compiler cannot see: built with _FORTIFY_SOURCE
	 * (rb2run_conform_chk), this poll is glibc's __poll_chk. */
	SAY("poll: %s, revents %s", poll(&pf, one_fd, 2000), pev(pf.revents));
	SAY("FIONREAD: %s, value %d", ioctl(fd, FIONREAD, &v), v);
	say("recv 4 MSG_PEEK: %s", recv_sum(fd, 4, MSG_PEEK));
	say("recv 4: %s", recv_sum(fd, 4, 0));
	say("recv 100: %s", recv_sum(fd, 100, 0));
	say("recv MSG_DONTWAIT, nothing there: %s", recv_sum(fd, 100, MSG_DONTWAIT));
	/* TCP's MSG_TRUNC drops what it reads, copying nothing: the buffer
	 * may be NULL (HAProxy drains a connection so). */
	say("peer sends 12: %s", ask("S 12"));
	pf = (struct pollfd){ .fd = fd, .events = POLLIN };
	poll(&pf, 1, 2000);
	usleep(20000);
	say("recv NULL, 5, MSG_TRUNC: %s", CALL(recv(fd, NULL, 5, MSG_TRUNC)));
	say("recv after it: %s", recv_sum(fd, 100, 0));
	/* The error queue (timestamps, zero-copy reports) never waits for
	 * bytes: with nothing in it, EAGAIN at once, on a blocking socket. */
	say("recv MSG_ERRQUEUE, nothing queued: %s", recv_sum(fd, 10, MSG_ERRQUEUE));
	/* MSG_PEEK | MSG_WAITALL waits for all of it, then shows it whole. */
	say("peer sends 3: %s", ask("S 3"));
	say("peer sends 5 in 200 ms: %s", ask("L 200 5"));
	usleep(20000);
	say("recv 8 MSG_PEEK|MSG_WAITALL: %s", recv_sum(fd, 8, MSG_PEEK | MSG_WAITALL));
	say("recv 8 after it: %s", recv_sum(fd, 8, 0));
	/* FIONREAD counts everything that came, also after a partial read. */
	say("peer sends 30: %s", ask("S 30"));
	pf = (struct pollfd){ .fd = fd, .events = POLLIN };
	poll(&pf, 1, 2000);
	say("recv 1: %s", recv_sum(fd, 1, 0));
	say("peer sends 40: %s", ask("S 40"));
	usleep(20000);
	SAY("FIONREAD after more came: %s, value %d", ioctl(fd, FIONREAD, &v), v);
	say("recv 100: %s", recv_sum(fd, 100, MSG_WAITALL | MSG_DONTWAIT));
	pf.events = POLLIN;
	SAY("poll, timeout 0: %s, revents %s", poll(&pf, 1, 0), pev(pf.revents));
	t0 = now_ms();
	k = poll(&pf, 1, 100);
	say("poll, timeout 100 ms: %d, in time: %s", k, now_ms() - t0 >= 95 ? "yes" : "no");
	{
		fd_set rd;
		struct timeval tv = { 0, 0 };

		FD_ZERO(&rd);
		FD_SET(fd, &rd);
		say("select, timeout 0: %s", CALL(select(fd + 1, &rd, NULL, NULL, &tv)));
		say("peer sends 1: %s", ask("S 1"));
		FD_SET(fd, &rd);
		tv.tv_sec = 2;
		SAY("select: %s, readable %d", select(fd + 1, &rd, NULL, NULL, &tv), FD_ISSET(fd, &rd) != 0);
		say("recv 10: %s", recv_sum(fd, 10, 0));
		{
			struct timespec ts = { 2, 0 };
			sigset_t none;

			sigemptyset(&none);
			say("peer sends 2 after 50 ms: %s", ask("L 50 2"));
			FD_ZERO(&rd);
			FD_SET(fd, &rd);
			SAY("pselect: %s, readable %d", pselect(fd + 1, &rd, NULL, NULL, &ts, &none),
			    FD_ISSET(fd, &rd) != 0);
			say("recv 10: %s", recv_sum(fd, 10, 0));
		}
	}

	/* readv/writev, recvmsg/sendmsg, recvfrom. */
	{
		char a[3], b[7];
		struct iovec iv[2] = { { a, 3 }, { b, 7 } };
		struct msghdr mh = { .msg_iov = iv, .msg_iovlen = 2 };
		struct sockaddr_in from;
		socklen_t fl = sizeof(from);
		char p[10];

		for (int i = 0; i < 10; i++)
			p[i] = (char)pat((size_t)i);
		memcpy(a, p, 3);
		memcpy(b, p + 3, 7);
		say("writev 3+7: %s", CALL(writev(fd, iv, 2)));
		say("peer reads 10: %s", ask("R 10"));
		say("sendmsg 3+7: %s", CALL(sendmsg(fd, &mh, MSG_NOSIGNAL)));
		say("peer reads 10: %s", ask("R 10"));
		say("peer sends 10: %s", ask("S 10"));
		pf = (struct pollfd){ .fd = fd, .events = POLLIN };
		poll(&pf, 1, 2000);
		memset(a, 0, 3);
		memset(b, 0, 7);
		SAY("readv 3+7: %s, the pattern: %s", readv(fd, iv, 2), memcmp(a, p, 3) == 0 && memcmp(b, p + 3, 7) == 0 ? "yes" : "no");
		say("peer sends 10: %s", ask("S 10"));
		poll(&pf, 1, 2000);
		SAY("recvmsg 3+7: %s, msg_flags %d", recvmsg(fd, &mh, 0), mh.msg_flags);
		say("peer sends 10: %s", ask("S 10"));
		poll(&pf, 1, 2000);
		from.sin_port = 0;
		SAY("recvfrom: %s, address length %u, port %u", recvfrom(fd, p, 10, 0,
		    (struct sockaddr *)&from, &fl), (unsigned int)fl, from.sin_port);
	}

	/* sendmmsg and recvmmsg: on TCP, each message is a send or a receive. */
	{
		char x[3], y[4], r1[4], r2[4];
		struct iovec sx = { x, 3 }, sy = { y, 4 }, rx1 = { r1, 4 }, rx2 = { r2, 4 };
		struct mmsghdr mm[2] = { { .msg_hdr = { .msg_iov = &sx, .msg_iovlen = 1 } },
					 { .msg_hdr = { .msg_iov = &sy, .msg_iovlen = 1 } } };

		for (int i = 0; i < 7; i++)
			(i < 3 ? x : y - 3)[i] = (char)pat((size_t)i);
		SAY("sendmmsg 3, 4: %s, lengths %u %u", sendmmsg(fd, mm, 2, MSG_NOSIGNAL),
		    mm[0].msg_len, mm[1].msg_len);
		say("peer reads 7: %s", ask("R 7"));
		say("peer sends 10: %s", ask("S 10"));
		pf = (struct pollfd){ .fd = fd, .events = POLLIN };
		poll(&pf, 1, 2000);
		mm[0].msg_hdr.msg_iov = &rx1;
		mm[1].msg_hdr.msg_iov = &rx2;
		SAY("recvmmsg 4, 4 (MSG_WAITFORONE): %s, lengths %u %u, the pattern: %s",
		    recvmmsg(fd, mm, 2, MSG_WAITFORONE, NULL), mm[0].msg_len, mm[1].msg_len,
		    (uint8_t)r1[0] == pat(0) && (uint8_t)r2[3] == pat(7) ? "yes" : "no");
		say("recv 100: %s", recv_sum(fd, 100, 0));
	}

	/* stdio on the socket, the classic way: one FILE to read, one on a dup
	 * to write. A FILE's calls are libc's own, past the wrapped ones. */
	{
		int d = dup(fd), d2 = dup(fd);
		FILE *in = fdopen(d, "r"), *out = fdopen(d2, "w");
		uint8_t b[10];
		int good = 1;

		say("fdopen r, w: %s, fileno names their fds: %s", in != NULL && out != NULL ? "two FILEs" : en(errno),
		    in != NULL && out != NULL && fileno(in) == d && fileno(out) == d2 ? "yes" : "no");
		if (in == NULL || out == NULL)
			return 2;
		say("fprintf 9: %s", CALL(fprintf(out, "hello %d\n", 42)));
		say("fflush: %s", CALL(fflush(out)));
		say("peer reads 9: %s", ask("R 9"));
		say("peer sends 10: %s", ask("S 10"));
		/* A bound on the read: a FILE past the stream would wait on the
		 * idle kernel socket for good. */
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &(struct timeval){ .tv_sec = 2 }, sizeof(struct timeval));
		say("fread 10: %s", CALL(fread(b, 1, 10, in)));
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &(struct timeval){ 0 }, sizeof(struct timeval));
		for (int i = 0; i < 10; i++)
			good &= b[i] == pat((size_t)i);
		say("... the bytes: %s", good ? "right" : "WRONG");
		say("fseek: %s", CALL(fseek(in, 0, SEEK_SET)));
		say("fclose r, w: %s %s", CALL(fclose(in)), CALL(fclose(out)));
		say("their fds closed: %s %s", CALL(fcntl(d, F_GETFD)), CALL(fcntl(d2, F_GETFD)));
		say("peer sends 3: %s", ask("S 3"));
		pf = (struct pollfd){ .fd = fd, .events = POLLIN };
		SAY("poll the socket, its dups' FILEs closed: %s, revents %s", poll(&pf, 1, 2000), pev(pf.revents));
		say("recv 100: %s", recv_sum(fd, 100, 0));
	}

	/* MSG_WAITALL across a pause. */
	say("peer sends 3: %s", ask("S 3"));
	say("peer sends 5 after 50 ms: %s", ask("L 50 5"));
	{
		uint8_t b[8];
		int good = 1;

		say("recv 8 MSG_WAITALL: %s", CALL(recv(fd, b, 8, MSG_WAITALL)));
		for (int i = 0; i < 8; i++)
			good &= b[i] == pat((size_t)(i < 3 ? i : i - 3));
		say("... the bytes: %s", good ? "right" : "WRONG");
	}

	/* epoll: level, edge, one-shot, two sets. */
	ep = epoll_create1(EPOLL_CLOEXEC);
	ev = (struct epoll_event){ .events = EPOLLIN, .data.u64 = 41 };
	say("epoll_ctl ADD IN: %s", CALL(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev)));
	say("epoll_ctl ADD again: %s", CALL(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev)));
	say("epoll_wait, nothing: %s", ewait(ep, 0));
	say("peer sends 3: %s", ask("S 3"));
	say("epoll_wait: %s", ewait(ep, 2000));
	say("epoll_wait again (level): %s", ewait(ep, 0));
	say("recv 3: %s", recv_sum(fd, 3, 0));
	say("epoll_wait, read: %s", ewait(ep, 0));
	/* epoll_pwait2 (a timespec's timeout; systemd's sd-event) sleeps
	 * until the bytes come, 100 ms on. */
	say("peer sends 3 in 100 ms: %s", ask("L 100 3"));
	{
		struct epoll_event got[4];
		struct timespec two = { 2, 0 };
		int n = epoll_pwait2(ep, got, 4, &two, NULL), e = errno;

		say("epoll_pwait2, 2 s: %s%s%s", res(n, e), n > 0 ? ", " : "",
		    n > 0 ? pev((int)got[0].events) : "");
	}
	say("recv 3: %s", recv_sum(fd, 3, 0));
	/* POLLRDNORM alone, as curl asks: a poll and an epoll set sleep on
	 * it and wake with the bytes; POLLWRNORM comes with POLLOUT. */
	say("peer sends 3 in 100 ms: %s", ask("L 100 3"));
	pf = (struct pollfd){ .fd = fd, .events = POLLRDNORM };
	SAY("poll RDNORM, 2 s: %s, revents %s", poll(&pf, 1, 2000), pev(pf.revents));
	pf = (struct pollfd){ .fd = fd, .events = POLLIN | POLLRDNORM | POLLOUT | POLLWRNORM };
	SAY("poll IN|RDNORM|OUT|WRNORM: %s, revents %s", poll(&pf, 1, 0), pev(pf.revents));
	say("recv 3: %s", recv_sum(fd, 3, 0));
	{
		int ep3 = epoll_create1(EPOLL_CLOEXEC);
		struct epoll_event e3 = { .events = EPOLLRDNORM, .data.u64 = 46 };

		say("a set of EPOLLRDNORM alone: %s", CALL(epoll_ctl(ep3, EPOLL_CTL_ADD, fd, &e3)));
		say("peer sends 3 in 100 ms: %s", ask("L 100 3"));
		say("epoll_wait, 2 s: %s", ewait(ep3, 2000));
		say("recv 3: %s", recv_sum(fd, 3, 0));
		close(ep3);
	}
	ev = (struct epoll_event){ .events = EPOLLIN | EPOLLET, .data.u64 = 42 };
	say("epoll_ctl MOD IN|ET: %s", CALL(epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev)));
	say("peer sends 3: %s", ask("S 3"));
	say("epoll_wait (edge): %s", ewait(ep, 2000));
	say("epoll_wait again, no new bytes: %s", ewait(ep, 0));
	say("peer sends 3 more: %s", ask("S 3"));
	say("epoll_wait, new bytes, old unread: %s", ewait(ep, 2000));
	say("recv 100: %s", recv_sum(fd, 100, 0));
	ev = (struct epoll_event){ .events = EPOLLIN | EPOLLONESHOT, .data.u64 = 43 };
	say("epoll_ctl MOD IN|ONESHOT: %s", CALL(epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev)));
	say("peer sends 2: %s", ask("S 2"));
	say("epoll_wait: %s", ewait(ep, 2000));
	say("epoll_wait, fired once: %s", ewait(ep, 50));
	say("epoll_ctl MOD IN (rearm): %s", CALL(epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev)));
	say("epoll_wait, rearmed: %s", ewait(ep, 0));
	ep2 = epoll_create(8);
	ev = (struct epoll_event){ .events = EPOLLIN | EPOLLOUT, .data.u64 = 44 };
	say("a second set, ADD IN|OUT: %s", CALL(epoll_ctl(ep2, EPOLL_CTL_ADD, fd, &ev)));
	say("epoll_wait, second set: %s", ewait(ep2, 0));
	say("recv 100: %s", recv_sum(fd, 100, 0));
	ev.events = EPOLLOUT;
	say("epoll_ctl MOD OUT: %s", CALL(epoll_ctl(ep2, EPOLL_CTL_MOD, fd, &ev)));
	say("epoll_wait OUT: %s", ewait(ep2, 0));
	ev.events = EPOLLIN | EPOLLEXCLUSIVE;
	say("epoll_ctl MOD with EXCLUSIVE: %s", CALL(epoll_ctl(ep2, EPOLL_CTL_MOD, fd, &ev)));
	say("epoll_ctl DEL: %s", CALL(epoll_ctl(ep2, EPOLL_CTL_DEL, fd, NULL)));
	say("epoll_ctl DEL again: %s", CALL(epoll_ctl(ep2, EPOLL_CTL_DEL, fd, NULL)));
	say("epoll_ctl MOD, not there: %s", CALL(epoll_ctl(ep2, EPOLL_CTL_MOD, fd, &ev)));
	ev.events = EPOLLIN | EPOLLEXCLUSIVE;
	say("epoll_ctl ADD IN|EXCLUSIVE: %s", CALL(epoll_ctl(ep2, EPOLL_CTL_ADD, fd, &ev)));
	say("peer sends 1: %s", ask("S 1"));
	say("epoll_wait, exclusive: %s", ewait(ep2, 2000));
	say("recv 100: %s", recv_sum(fd, 100, 0));
	ev.events = EPOLLIN;
	say("epoll_ctl MOD IN on an EXCLUSIVE entry: %s", CALL(epoll_ctl(ep2, EPOLL_CTL_MOD, fd, &ev)));
	say("epoll_ctl DEL the EXCLUSIVE entry: %s", CALL(epoll_ctl(ep2, EPOLL_CTL_DEL, fd, NULL)));
	/* Deleted, added back, deleted and added again: the last one counts
	 * (what redis-benchmark does on every request). */
	ev = (struct epoll_event){ .events = EPOLLOUT, .data.u64 = 45 };
	say("epoll_ctl ADD OUT: %s", CALL(epoll_ctl(ep2, EPOLL_CTL_ADD, fd, &ev)));
	say("epoll_ctl ADD OUT again: %s", CALL(epoll_ctl(ep2, EPOLL_CTL_ADD, fd, &ev)));
	say("epoll_ctl DEL: %s", CALL(epoll_ctl(ep2, EPOLL_CTL_DEL, fd, NULL)));
	say("epoll_wait, nothing in the set: %s", ewait(ep2, 0));
	ev = (struct epoll_event){ .events = EPOLLIN, .data.u64 = 46 };
	say("epoll_ctl ADD IN: %s", CALL(epoll_ctl(ep2, EPOLL_CTL_ADD, fd, &ev)));
	say("epoll_wait IN, nothing there: %s", ewait(ep2, 0));
	say("peer sends 3: %s", ask("S 3"));
	say("epoll_wait IN: %s", ewait(ep2, 2000));
	say("recv 100: %s", recv_sum(fd, 100, 0));
	close(ep2);
	/* Nested: a set holding the socket, inside another set. */
	{
		int inner = epoll_create1(0), outer = epoll_create1(0);

		ev = (struct epoll_event){ .events = EPOLLIN, .data.u64 = 47 };
		say("inner set, ADD IN: %s", CALL(epoll_ctl(inner, EPOLL_CTL_ADD, fd, &ev)));
		ev = (struct epoll_event){ .events = EPOLLIN, .data.u64 = 48 };
		say("outer set, ADD the inner: %s", CALL(epoll_ctl(outer, EPOLL_CTL_ADD, inner, &ev)));
		say("outer epoll_wait, nothing: %s", ewait(outer, 0));
		say("peer sends 9 after 50 ms: %s", ask("L 50 9"));
		say("outer epoll_wait: %s", ewait(outer, 2000));
		say("inner epoll_wait: %s", ewait(inner, 0));
		say("recv 100: %s", recv_sum(fd, 100, 0));
		say("inner epoll_wait, read: %s", ewait(inner, 0));
		say("outer epoll_wait, read: %s", ewait(outer, 0));
		close(outer);
		close(inner);
	}

	/* A connection added to a set while another thread sleeps in it, a
	 * pipe alone in it before (Apache's event MPM: a worker hands a
	 * kept-alive connection to its listener thread's set). The peer's
	 * bytes wake that thread, with the data the program gave. */
	{
		struct late l = { .ep = epoll_create1(EPOLL_CLOEXEC) };
		int pp[2];
		pthread_t t;

		if (pipe(pp) != 0)
			return 2;
		ev = (struct epoll_event){ .events = EPOLLIN, .data.u64 = 60 };
		epoll_ctl(l.ep, EPOLL_CTL_ADD, pp[0], &ev);
		if (pthread_create(&t, NULL, late_waiter, &l) != 0)
			return 2;
		usleep(200000);                  /* asleep in the kernel's wait by now */
		ev = (struct epoll_event){ .events = EPOLLIN, .data.u64 = 61 };
		say("epoll_ctl ADD while a thread sleeps in the set: %s",
		    CALL(epoll_ctl(l.ep, EPOLL_CTL_ADD, fd, &ev)));
		say("peer sends 3: %s", ask("S 3"));
		pthread_join(t, NULL);
		say("the sleeping thread's epoll_wait: %s", l.got);
		say("recv 100: %s", recv_sum(fd, 100, 0));
		close(l.ep);
		close(pp[0]);
		close(pp[1]);
	}

	/* Non-blocking: fcntl and FIONBIO. */
	say("F_GETFL O_NONBLOCK: %d", (fcntl(fd, F_GETFL) & O_NONBLOCK) != 0);
	say("F_SETFL O_NONBLOCK: %s", CALL(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)));
	say("recv, non-blocking: %s", recv_sum(fd, 10, 0));
	say("read, non-blocking: %s", CALL(read(fd, &v, 4)));
	say("F_SETFL blocking: %s", CALL(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)));
	say("FIONBIO 1: %s", CALL(ioctl(fd, FIONBIO, &(int){ 1 })));
	say("recv, FIONBIO: %s", recv_sum(fd, 10, 0));
	say("FIONBIO 0: %s", CALL(ioctl(fd, FIONBIO, &(int){ 0 })));

	/* Timeouts and signals. */
	{
		struct timeval tv = { 0, 100000 };
		struct sigaction sa2 = { .sa_handler = on_signal };
		struct itimerval it = { .it_value = { 0, 50000 } };
		const char *r;

		say("SO_RCVTIMEO 100 ms: %s", CALL(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv))));
		t0 = now_ms();
		r = recv_sum(fd, 10, 0);
		t0 = now_ms() - t0;
		say("recv, timed out: %s, in time: %s", r, t0 >= 95 && t0 < 1000 ? "yes" : "no");
		tv.tv_usec = 0;
		say("SO_RCVTIMEO 0: %s", CALL(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv))));
		sigemptyset(&sa2.sa_mask);
		sigaction(SIGALRM, &sa2, NULL);
		setitimer(ITIMER_REAL, &it, NULL);
		r = recv_sum(fd, 10, 0);
		say("recv, SIGALRM after 50 ms: %s, handled %d", r, (int)sigs);
		sigs = 0;
		setitimer(ITIMER_REAL, &it, NULL);
		pf = (struct pollfd){ .fd = fd, .events = POLLIN };
		SAY("poll, SIGALRM after 50 ms: %s, handled %d", poll(&pf, 1, 2000), (int)sigs);
		sigs = 0;
		setitimer(ITIMER_REAL, &it, NULL);
		r = ewait(ep, 2000);
		say("epoll_wait, SIGALRM after 50 ms: %s, handled %d", r, (int)sigs);
		/* With SA_RESTART (glibc's signal() sets it) the kernel restarts
		 * a blocking recv on a socket with no SO_RCVTIMEO: the handler
		 * runs, and the call goes on to the bytes. poll never restarts. */
		sa2.sa_flags = SA_RESTART;
		sigaction(SIGALRM, &sa2, NULL);
		sigs = 0;
		say("peer sends 5 in 300 ms: %s", ask("L 300 5"));
		setitimer(ITIMER_REAL, &it, NULL);
		r = recv_sum(fd, 10, 0);
		say("recv, SIGALRM with SA_RESTART after 50 ms: %s, handled %d", r, (int)sigs);
		sigs = 0;
		setitimer(ITIMER_REAL, &it, NULL);
		pf = (struct pollfd){ .fd = fd, .events = POLLIN };
		SAY("poll, SIGALRM with SA_RESTART after 50 ms: %s, handled %d", poll(&pf, 1, 300),
		    (int)sigs);
		sigs = 0;
		sa2.sa_flags = 0;
		sigaction(SIGALRM, &sa2, NULL);
	}

	/* dup and friends. */
	{
		int d = dup(fd), d2, d3, d4;

		say("peer sends 4: %s", ask("S 4"));
		say("recv on a dup: %s", recv_sum(d, 10, 0));
		d2 = dup2(fd, 100);
		say("dup2 to 100: %d", d2);
		d3 = dup3(fd, 101, O_CLOEXEC);
		say("dup3 to 101, O_CLOEXEC: %d, FD_CLOEXEC %d", d3, fcntl(d3, F_GETFD) & FD_CLOEXEC);
		d4 = fcntl(fd, F_DUPFD_CLOEXEC, 200);
		say("F_DUPFD_CLOEXEC from 200: %s, FD_CLOEXEC %d", d4 >= 200 ? "200 or more" : "below 200",
		    fcntl(d4, F_GETFD) & FD_CLOEXEC);
		say("dup3, same fd: %s", CALL(dup3(fd, fd, 0)));
		say("close the original: %s", CALL(close(fd)));
		say("peer sends 4: %s", ask("S 4"));
		say("recv on the dup2: %s", recv_sum(d2, 10, 0));
		say("send on the dup3: %s", CALL(send(d3, "\0\7\16", 3, 0)));
		say("peer reads 3: %s", ask("R 3"));
		close(d);
		close(d3);
		close(d4);
		fd = d2;
	}

	/* Half-close both ways, then the peer's close. */
	say("shutdown SHUT_WR: %s", CALL(shutdown(fd, SHUT_WR)));
	say("peer reads to the end: %s", ask("E"));
	say("send after SHUT_WR: %s", CALL(send(fd, "x", 1, MSG_NOSIGNAL)));
	say("peer sends 6: %s", ask("S 6"));
	say("recv after SHUT_WR: %s", recv_sum(fd, 10, 0));
	say("peer shuts down writing: %s", ask("W"));
	pf = (struct pollfd){ .fd = fd, .events = POLLIN | POLLRDHUP };
	SAY("poll IN|RDHUP: %s, revents %s", poll(&pf, 1, 2000), pev(pf.revents));
	ev = (struct epoll_event){ .events = EPOLLIN | EPOLLRDHUP, .data.u64 = 45 };
	say("epoll_ctl MOD IN|RDHUP: %s", CALL(epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev)));
	/* ENOENT: the entry is the closed original fd's (it lives on, as the
	 * file does), so nothing comes here. */
	say("epoll_wait: %s", ewait(ep, 100));
	say("recv at the end: %s", recv_sum(fd, 10, 0));
	say("recv at the end again: %s", recv_sum(fd, 10, 0));
	say("peer closes: %s", ask("C"));
	say("shutdown SHUT_RDWR: %s", CALL(shutdown(fd, SHUT_RDWR)));
	say("shutdown, bad how: %s", CALL(shutdown(fd, 7)));
	close(fd);
	close(ep);

	/* stdio from before connect(), as a client that wraps its socket
	 * first: the FILE must read, write and end the connection the socket
	 * becomes, and the fd number's next file must be that file alone. */
	{
		struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(peer_port),
			.sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		int s = socket(AF_INET, SOCK_STREAM, 0), pp[2] = { -1, -1 };
		FILE *f = fdopen(s, "r+");
		uint8_t b[5];
		char got[4] = "";
		int good = 1;

		if (f == NULL || write(to_peer, "A\n", 2) != 2)
			return 2;
		say("fdopen r+, then connect: %s", CALL(connect(s, (struct sockaddr *)&to, sizeof(to))));
		say("peer accept: %s", answer());
		say("fprintf 6: %s", CALL(fprintf(f, "hi %d\n", 42)));
		say("fflush: %s", CALL(fflush(f)));
		say("peer reads 6: %s", ask("R 6"));
		say("peer sends 5: %s", ask("S 5"));
		setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &(struct timeval){ .tv_sec = 2 }, sizeof(struct timeval));
		say("fread 5: %s", CALL(fread(b, 1, 5, f)));
		for (int i = 0; i < 5; i++)
			good &= b[i] == pat((size_t)i);
		say("... the bytes: %s", good ? "right" : "WRONG");
		say("fclose: %s", CALL(fclose(f)));
		say("peer reads to the end: %s", ask("X"));
		say("peer closes: %s", ask("C"));
		SAY("pipe: %s, its read end takes the socket's number: %s", pipe(pp),
		    pp[0] == s ? "yes" : "no");
		say("write 3 to the pipe: %s", CALL(write(pp[1], "abc", 3)));
		SAY("read the pipe: %s, %s", read(pp[0], got, 3),
		    memcmp(got, "abc", 3) == 0 ? "abc" : "WRONG");
		close(pp[0]);
		close(pp[1]);
	}

	/* SHUT_RD, on a connection of its own (data that comes after both
	 * ways are shut down is a reset, in Linux, which is not emulated): a
	 * read with nothing there is the end at once, poll says so, and what
	 * comes later is still read, as Linux's. */
	fd = connect_peer();
	say("shutdown SHUT_RD: %s", CALL(shutdown(fd, SHUT_RD)));
	say("recv after SHUT_RD, nothing there: %s", recv_sum(fd, 10, 0));
	pf = (struct pollfd){ .fd = fd, .events = POLLIN | POLLOUT | POLLRDHUP };
	SAY("poll after SHUT_RD: %s, revents %s", poll(&pf, 1, 0), pev(pf.revents));
	say("peer sends 3: %s", ask("S 3"));
	usleep(20000);
	say("recv after SHUT_RD, 3 came: %s", recv_sum(fd, 10, 0));
	say("send after SHUT_RD: %s", CALL(send(fd, "abcd", 4, MSG_NOSIGNAL)));
	say("peer reads 4: %s", ask("R 4"));
	say("peer closes: %s", ask("C"));
	close(fd);

	/* Writing to a closed peer: EPIPE, and SIGPIPE without MSG_NOSIGNAL. */
	fd = connect_peer();
	say("peer closes: %s", ask("C"));
	say("recv, the peer closed: %s", recv_sum(fd, 10, 0));
	signal(SIGPIPE, on_signal);
	sigs = 0;
	for (int i = 0; i < 3; i++) {
		ssize_t r = send(fd, "abc", 3, i == 2 ? 0 : MSG_NOSIGNAL);

		/* The kernel's first write into a closed connection may still
		 * be taken (the reset comes back after it); say what matters. */
		if (r == 3)
			continue;
		say("send to a closed peer%s: %s, SIGPIPE %d", i == 2 ? "" : " (MSG_NOSIGNAL)",
		    res(r, errno), (int)sigs);
	}
	close(fd);

	/* A close with unread data is a reset: the peer's reads fail. */
	fd = connect_peer();
	say("send 5, which the peer will not read: %s", CALL(send(fd, "hello", 5, 0)));
	usleep(20000);
	say("peer closes with them unread: %s", ask("C"));
	usleep(20000);
	pf = (struct pollfd){ .fd = fd, .events = POLLIN | POLLOUT | POLLRDHUP };
	SAY("poll: %s, revents %s", poll(&pf, 1, 2000), pev(pf.revents));
	say("recv after the reset: %s", recv_sum(fd, 10, 0));
	say("recv again: %s", recv_sum(fd, 10, 0));
	say("send after the reset: %s", CALL(send(fd, "x", 1, MSG_NOSIGNAL)));
	close(fd);

	/* A bulk transfer with sendfile, and a big one both ways. */
	fd = connect_peer();
	{
		char path[] = "/tmp/rb2conformXXXXXX";
		int f = mkstemp(path);
		static uint8_t big[1 << 20];
		off_t off = 1000;
		uint64_t sum = 0;
		size_t done = 0;

		unlink(path);
		for (size_t i = 0; i < sizeof(big); i++)
			big[i] = pat(i);
		if (write(f, big, 300000) != 300000)
			return 2;
		for (size_t i = 1000; i < 300000; i++)
			sum += big[i];
		SAY("sendfile 299000 from offset 1000: %s, offset now %ld", sendfile(fd, f, &off, 299000), (long)off);
		say("peer reads 299000: %s (want sum %lu)", ask("R 299000"), (unsigned long)sum);
		close(f);
		sum = 0;
		for (size_t i = 0; i < sizeof(big); i++)
			sum += big[i];
		/* The peer reads while we write. */
		if (write(to_peer, "R 1048576\n", 10) != 10)
			return 2;
		while (done < sizeof(big)) {
			ssize_t w = write(fd, big + done, sizeof(big) - done);

			if (w <= 0)
				break;
			done += (size_t)w;
		}
		say("write 1 MiB: %zu", done);
		say("peer read 1 MiB: %s (want sum %lu)", answer(), (unsigned long)sum);
	}
	close(fd);

	/* splice between the connection and a pipe, both ways, with the
	 * kernel's rules: offsets, no pipe, an empty or full pipe under
	 * SPLICE_F_NONBLOCK, a non-blocking socket, the end. */
	fd = connect_peer();
	{
		static char pb[65536];
		int pp[2], fl;
		loff_t off = 0;
		unsigned long sum = 0, want = 0;
		ssize_t r;

		if (pipe(pp) != 0)
			return 2;
		say("peer sends 3000: %s", ask("S 3000"));
		usleep(20000);
		SAY("splice socket to pipe, 10000 asked: %s", splice(fd, NULL, pp[1], NULL, 10000, 0));
		r = read(pp[0], pb, sizeof(pb));
		for (ssize_t i = 0; i < r; i++)
			sum += (uint8_t)pb[i];
		for (size_t i = 0; i < 3000; i++)
			want += pat(i);
		say("the pipe holds %zd bytes, sum %lu (want %lu)", r, sum, want);
		SAY("splice with an offset on the socket: %s", splice(fd, &off, pp[1], NULL, 10, 0));
		SAY("splice with an offset on the pipe: %s", splice(fd, NULL, pp[1], &off, 10, 0));
		SAY("splice socket to socket: %s", splice(fd, NULL, fd, NULL, 10, 0));
		SAY("splice of 0 bytes: %s", splice(fd, NULL, pp[1], NULL, 0, 0));
		fl = fcntl(fd, F_GETFL);
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
		SAY("splice from a non-blocking socket with nothing in it: %s",
		    splice(fd, NULL, pp[1], NULL, 100, 0));
		fcntl(fd, F_SETFL, fl);
		/* A full pipe: SPLICE_F_NONBLOCK says EAGAIN, whatever the socket. */
		say("peer sends 100: %s", ask("S 100"));
		usleep(20000);
		fl = fcntl(pp[1], F_GETFL);
		fcntl(pp[1], F_SETFL, fl | O_NONBLOCK);
		while (write(pp[1], pb, sizeof(pb)) > 0)
			;
		fcntl(pp[1], F_SETFL, fl);
		SAY("splice into a full pipe, SPLICE_F_NONBLOCK: %s",
		    splice(fd, NULL, pp[1], NULL, 100, SPLICE_F_NONBLOCK));
		while (fcntl(pp[0], F_SETFL, O_NONBLOCK) == 0 && read(pp[0], pb, sizeof(pb)) > 0)
			;
		fcntl(pp[0], F_SETFL, 0);
		SAY("then, the pipe drained: %s", splice(fd, NULL, pp[1], NULL, 1000, SPLICE_F_NONBLOCK));
		SAY("read them from the pipe: %s", read(pp[0], pb, sizeof(pb)));
		/* The other way. */
		for (size_t i = 0; i < 5000; i++)
			pb[i] = (char)pat(i);
		SAY("write 5000 into the pipe: %s", write(pp[1], pb, 5000));
		SAY("splice pipe to socket, 8000 asked: %s", splice(pp[0], NULL, fd, NULL, 8000, 0));
		say("peer reads 5000: %s", ask("R 5000"));
		SAY("splice from an empty pipe, SPLICE_F_NONBLOCK: %s",
		    splice(pp[0], NULL, fd, NULL, 100, SPLICE_F_NONBLOCK));
		SAY("splice with an offset on the pipe: %s", splice(pp[0], &off, fd, NULL, 10, 0));
		SAY("write 200 into the pipe: %s", write(pp[1], pb, 200));
		SAY("splice 150 of them, SPLICE_F_MORE: %s",
		    splice(pp[0], NULL, fd, NULL, 150, SPLICE_F_MORE));
		SAY("FIONREAD of the pipe: %s", ioctl(pp[0], FIONREAD, &fl));
		say("... %d left", fl);
		close(pp[1]);
		SAY("splice the rest, the writer gone: %s", splice(pp[0], NULL, fd, NULL, 1000, 0));
		SAY("splice again, the pipe empty and no writer: %s",
		    splice(pp[0], NULL, fd, NULL, 1000, 0));
		say("peer reads 200: %s", ask("R 200"));
		close(pp[0]);
		/* The end of the stream. */
		if (pipe(pp) != 0)
			return 2;
		say("peer shuts its side down: %s", ask("W"));
		usleep(20000);
		SAY("splice at the end: %s", splice(fd, NULL, pp[1], NULL, 100, 0));
		close(pp[0]);
		close(pp[1]);
	}
	say("peer closes: %s", ask("C"));
	close(fd);

	/* Non-blocking connect. */
	{
		struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(peer_port),
			.sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

		fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		/* Into an epoll set before connect(), as nginx does with its
		 * upstream sockets. */
		ep = epoll_create1(0);
		ev = (struct epoll_event){ .events = EPOLLIN | EPOLLOUT | EPOLLET, .data.u64 = 46 };
		say("epoll_ctl ADD before connect: %s", CALL(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev)));
		if (write(to_peer, "A\n", 2) != 2)
			return 2;
		say("non-blocking connect: %s", CALL(connect(fd, (struct sockaddr *)&to, sizeof(to))));
		say("peer accept: %s", answer());
		say("epoll_wait, connected: %s", ewait(ep, 2000));
		say("peer sends 7: %s", ask("S 7"));
		say("epoll_wait, data: %s", ewait(ep, 2000));
		say("recv: %s", recv_sum(fd, 10, 0));
		close(ep);
		pf = (struct pollfd){ .fd = fd, .events = POLLOUT };
		SAY("poll OUT: %s, revents %s", poll(&pf, 1, 2000), pev(pf.revents));
		gl = sizeof(v);
		SAY("SO_ERROR: %s, value %d", getsockopt(fd, SOL_SOCKET, SO_ERROR, &v, &gl), v);
		say("connect again: %s", CALL(connect(fd, (struct sockaddr *)&to, sizeof(to))));
		say("peer sends 5: %s", ask("S 5"));
		pf.events = POLLIN;
		poll(&pf, 1, 2000);
		say("recv: %s", recv_sum(fd, 10, 0));
		close(fd);
		say("peer closes: %s", ask("C"));
	}

	/* fork: the child takes the connection on and the parent closes its
	 * copy at once, as a forking server does after accept(): the
	 * connection lives on in the child, to the child's own close. Then the
	 * same with the fork made by syscall(), past libc's fork() and its
	 * atfork handlers. */
	for (int raw = 0; raw < 2; raw++) {
		int go[2], st;
		pid_t kid;

		fd = connect_peer();
		if (pipe(go) != 0)
			return 2;
		kid = raw ? (pid_t)syscall(SYS_fork) : fork();
		if (kid == 0) {
			uint8_t buf[8], hi[6];
			unsigned long sum = 0, want = 0;
			char c;

			alarm(5);                        /* a bound, should the bytes not come */
			close(go[1]);
			if (read(go[0], &c, 1) != 1)     /* the parent closed its copy */
				_exit(3);
			for (int i = 0; i < 6; i++)
				hi[i] = pat((size_t)i);
			if (send(fd, hi, 6, 0) != 6)
				_exit(4);
			if (recv(fd, buf, 8, MSG_WAITALL) != 8)
				_exit(5);
			for (int i = 0; i < 8; i++) {
				sum += buf[i];
				want += pat((size_t)i);
			}
			if (sum != want)
				_exit(6);
			_exit(close(fd) == 0 ? 0 : 7);
		}
		close(go[0]);
		say("%s, then the parent closes its copy: %s", raw ? "syscall(SYS_fork)" : "fork",
		    CALL(close(fd)));
		if (write(go[1], "x", 1) != 1)
			return 2;
		close(go[1]);
		say("peer reads the child's 6: %s", ask("R 6"));
		say("peer sends 8 to the child: %s", ask("S 8"));
		waitpid(kid, &st, 0);
		say("child (sent 6, read 8, closed): exit %d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		say("peer reads to the end: %s", ask("E"));
		say("peer closes: %s", ask("C"));
	}

	/* fork the other way: the child lets its copy go and exits (Redis's
	 * BGSAVE child), the parent goes on with the connection. */
	{
		int st;
		pid_t kid;

		fd = connect_peer();
		kid = fork();
		if (kid == 0)
			_exit(close(fd) == 0 ? 0 : 1);
		waitpid(kid, &st, 0);
		say("the child closed its copy: exit %d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		{
			char hi[4];

			for (int i = 0; i < 4; i++)
				hi[i] = (char)pat((size_t)i);
			say("send 4: %s", CALL(send(fd, hi, 4, 0)));
		}
		say("peer reads 4: %s", ask("R 4"));
		say("peer sends 3: %s", ask("S 3"));
		say("recv 3: %s", recv_sum(fd, 3, MSG_WAITALL));
		say("close: %s", CALL(close(fd)));
		say("peer reads to the end: %s", ask("E"));
		say("peer closes: %s", ask("C"));
	}

	/* A fork child killed by a signal lets its copy go with it, as the
	 * kernel closes a dead process's files: the parent's close is then the
	 * last, and with bytes unread it is a reset. The child is left a
	 * zombie (waitid's WNOWAIT) until after the close: it has ended. */
	{
		siginfo_t si;
		pid_t kid;

		fd = connect_peer();
		kid = fork();
		if (kid == 0) {
			raise(SIGKILL);
			_exit(1);
		}
		waitid(P_PID, (id_t)kid, &si, WEXITED | WNOWAIT);
		say("the child was killed: signal %d", si.si_code == CLD_KILLED ? si.si_status : 0);
		close_with_3_unread(fd);
		waitpid(kid, NULL, 0);
	}

	/* The same with a holder forked inside libc, past the fork()
	 * wrapper: a child calls daemon(), whose own child sends its pid and
	 * kills itself; the parent waits for its end on a pidfd (it is not
	 * the parent's to wait for). */
	{
		int pp[2], pfd;
		pid_t kid, grand = 0;
		struct pollfd pf = { .fd = -1, .events = POLLIN };

		fd = connect_peer();
		if (pipe(pp) != 0)
			return 2;
		kid = fork();
		if (kid == 0) {
			close(pp[0]);
			if (daemon(1, 1) != 0)
				_exit(1);
			grand = getpid();
			if (write(pp[1], &grand, sizeof(grand)) != sizeof(grand))
				_exit(1);
			raise(SIGKILL);
			_exit(1);
		}
		close(pp[1]);
		waitpid(kid, NULL, 0);
		if (read(pp[0], &grand, sizeof(grand)) != sizeof(grand))
			return 2;
		close(pp[0]);
		pfd = (int)syscall(SYS_pidfd_open, grand, 0);
		pf.fd = pfd;
		poll(&pf, 1, 5000);
		close(pfd);
		say("daemon()'s child killed itself: %s", pf.revents & POLLIN ? "ended" : "still there");
		close_with_3_unread(fd);
	}

	/* Our own listener: accept4's flags. */
	{
		struct sockaddr_in me = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		socklen_t ml = sizeof(me);
		int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), a;

		say("bind port 0: %s", CALL(bind(l, (struct sockaddr *)&me, sizeof(me))));
		say("listen: %s", CALL(listen(l, 4)));
		/* Accepted once its first bytes come (Apache's AcceptFilter,
		 * nginx's `deferred`): the peer sends 3 after connecting. */
		say("TCP_DEFER_ACCEPT 5: %s", CALL(setsockopt(l, IPPROTO_TCP, TCP_DEFER_ACCEPT, &(int){ 5 }, sizeof(int))));
		gl = sizeof(v);
		SAY("TCP_DEFER_ACCEPT get: %s, value %d", getsockopt(l, IPPROTO_TCP, TCP_DEFER_ACCEPT, &v, &gl), v);
		getsockname(l, (struct sockaddr *)&me, &ml);
		say("accept4, nothing there (non-blocking): %s", ({
			fcntl(l, F_SETFL, O_NONBLOCK);
			CALL(accept4(l, NULL, NULL, 0)); }));
		fcntl(l, F_SETFL, 0);
		if (write(to_peer, "K ", 2) != 2)
			return 1;
		dprintf(to_peer, "%u\n", ntohs(me.sin_port));
		a = accept4(l, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		say("accept4 NONBLOCK|CLOEXEC: %s, O_NONBLOCK %d, FD_CLOEXEC %d", a >= 0 ? "a socket" : en(errno),
		    (fcntl(a, F_GETFL) & O_NONBLOCK) != 0, fcntl(a, F_GETFD) & FD_CLOEXEC);
		say("peer connected: %s", answer());
		pf = (struct pollfd){ .fd = a, .events = POLLIN };
		poll(&pf, 1, 2000);
		say("recv on the accepted: %s", recv_sum(a, 10, 0));
		close(a);
		close(l);
		say("connect to the closed listener: %s", ({
			int c = socket(AF_INET, SOCK_STREAM, 0);
			const char *r = CALL(connect(c, (struct sockaddr *)&me, sizeof(me)));
			close(c);
			r; }));
	}

	if (write(to_peer, "Q\n", 2) != 2)
		return 2;
	waitpid(child, &k, 0);
	say("peer exit: %d", WIFEXITED(k) ? WEXITSTATUS(k) : -1);
	return 0;
}
