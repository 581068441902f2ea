/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * A TCP ping-pong through plain blocking send() and recv(), nothing else:
 * run under rb2-run, it measures what the socket layer adds to a bare rb2
 * channel's round trip (rb2-perf --mode lat), as issue 42 asks
 * (usertools/rb2_run_bench.py, doc/eval/rb2-run.md).
 *
 *   rb2run_pingpong server PORT [ADDR]
 *       accept one connection; send back every message of SIZE bytes
 *       (the client's first 4 bytes say SIZE) until the end
 *   rb2run_pingpong client PORT SIZE COUNT [ADDR]
 *       COUNT/10 round trips of warm-up, then COUNT measured; prints JSON:
 *       {"size", "count", "min_ns", "p50_ns", "p99_ns", "p99_9_ns", "max_ns",
 *        "mean_ns"}
 *
 *   rb2run_pingpong pollserver PORT [ADDR]
 *       accept any number of connections and answer each as server does,
 *       all in one thread waiting in poll(), until killed
 *   rb2run_pingpong clients PORT SIZE CONNS SECONDS [ADDR]
 *       CONNS connections, each with one message of SIZE bytes out at a
 *       time, answered before its next (redis-benchmark -c CONNS -P 1's
 *       load), all in one thread waiting in poll(); prints JSON:
 *       {"size", "conns", "seconds", "round_trips", "per_s"}
 *   rb2run_pingpong stall PORT SIZE COUNT NEW [ADDR]
 *       one connection's round trips, as client's, while a child process
 *       opens NEW more to the same pollserver, one after another (each
 *       answered once, and kept open until the last), then closes them and
 *       exits: how long the server's one thread, which accepts them in its
 *       loop, keeps its other client waiting. At least COUNT round trips,
 *       and on until the child is done; prints JSON: {"size", "count",
 *       "new_conns", "connect_all_ms" (from the fork to the child's exit,
 *       its closes included), "p50_ns", "p99_ns", "max_ns", "over_10ms",
 *       and where the child's time went: "child_connect_max_ms" (one
 *       connect and its first message), "child_echo_max_ms" (one answer),
 *       "child_close_max_ms" (one close), "child_closes_ms" (all of them)}
 *   rb2run_pingpong connects PORT COUNT [ADDR]
 *       COUNT connections to a pollserver, one after another, from a
 *       program that has made none before: each connected (timed), one
 *       64 B message answered, and closed (timed). What a short-lived
 *       client pays to set a connection up; prints JSON: {"count",
 *       "first_connect_ms" (the program's first, with whatever the socket
 *       layer does once), "connect_p50_ms", "connect_p90_ms" (the others),
 *       "close_p50_ms"}
 *
 * ADDR (IPv4; default 127.0.0.1) is where the server listens and the client
 * connects: across hosts, the same program compares rb2-run with rsocket's
 * preload (tests/verbs-vm/preload_two.py), which cannot run sockperf, Redis
 * or memcached. Only calls that preload wraps: socket calls and poll(), no
 * epoll, no flags in socket()'s type.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void
die(const char *what)
{
	fprintf(stderr, "rb2run_pingpong: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* All of @n bytes, or exit. */
static void
recv_all(int fd, void *buf, size_t n)
{
	for (size_t got = 0; got < n;) {
		ssize_t r = recv(fd, (char *)buf + got, n - got, 0);

		if (r <= 0) {
			if (r == 0)
				errno = ECONNRESET;
			die("recv");
		}
		got += (size_t)r;
	}
}

static void
send_all(int fd, const void *buf, size_t n)
{
	for (size_t put = 0; put < n;) {
		ssize_t r = send(fd, (const char *)buf + put, n - put, MSG_NOSIGNAL);

		if (r < 0)
			die("send");
		put += (size_t)r;
	}
}

static struct sockaddr_in
addr_of(const char *ip, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };

	if (inet_pton(AF_INET, ip, &a.sin_addr) != 1) {
		fprintf(stderr, "rb2run_pingpong: %s: not an IPv4 address\n", ip);
		exit(2);
	}
	return a;
}

static int
server(const char *ip, int port)
{
	struct sockaddr_in a = addr_of(ip, port);
	int one = 1, ls = socket(AF_INET, SOCK_STREAM, 0), fd;
	uint32_t size;
	char *buf;

	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ls, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(ls, 1) != 0)
		die("bind/listen");
	printf("listening\n");
	fflush(stdout);
	fd = accept(ls, NULL, NULL);
	if (fd < 0)
		die("accept");
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	recv_all(fd, &size, sizeof(size));
	buf = malloc(size);
	if (buf == NULL)
		die("malloc");
	for (;;) {
		ssize_t r = recv(fd, buf, size, MSG_WAITALL);

		if (r == 0)
			break;
		if (r != (ssize_t)size)
			die("recv");
		send_all(fd, buf, size);
	}
	free(buf);
	close(fd);
	close(ls);
	return 0;
}

/* server's answers, for many connections in one poll() loop. A connection's
 * messages are whole once their first byte is in: each blocking recv()
 * with MSG_WAITALL takes the rest. */
static _Noreturn void
pollserver(const char *ip, int port)
{
	struct sockaddr_in a = addr_of(ip, port);
	int one = 1, ls = socket(AF_INET, SOCK_STREAM, 0);
	unsigned int n = 1, cap = 64;
	struct pollfd *pf = calloc(cap, sizeof(*pf));
	uint32_t *size = calloc(cap, sizeof(*size));
	char *buf = NULL;
	uint32_t buf_size = 0;

	if (pf == NULL || size == NULL)
		die("calloc");
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ls, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(ls, 1024) != 0)
		die("bind/listen");
	printf("listening\n");
	fflush(stdout);
	pf[0] = (struct pollfd){ .fd = ls, .events = POLLIN };
	for (;;) {
		if (poll(pf, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			die("poll");
		}
		for (unsigned int i = n; i-- > 1;) {
			ssize_t r;

			if (pf[i].revents == 0)
				continue;
			if (size[i] == 0) {
				recv_all(pf[i].fd, &size[i], sizeof(size[i]));
				if (size[i] > buf_size) {
					buf = realloc(buf, size[i]);
					if (buf == NULL)
						die("realloc");
					buf_size = size[i];
				}
				continue;
			}
			r = recv(pf[i].fd, buf, size[i], MSG_WAITALL);
			if (r == (ssize_t)size[i]) {
				send_all(pf[i].fd, buf, size[i]);
				continue;
			}
			if (r != 0)
				die("recv");
			close(pf[i].fd);        /* the end: the last entry takes its place */
			pf[i] = pf[--n];
			size[i] = size[n];
		}
		if (pf[0].revents & POLLIN) {
			int fd = accept(ls, NULL, NULL);

			if (fd < 0)
				die("accept");
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			if (n == cap) {
				cap *= 2;
				pf = realloc(pf, cap * sizeof(*pf));
				size = realloc(size, cap * sizeof(*size));
				if (pf == NULL || size == NULL)
					die("realloc");
			}
			pf[n] = (struct pollfd){ .fd = fd, .events = POLLIN };
			size[n++] = 0;
		}
	}
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t
now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static int
client(const char *ip, int port, uint32_t size, unsigned int count)
{
	struct sockaddr_in a = addr_of(ip, port);
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);
	unsigned int warm = count / 10;
	uint64_t *rt = calloc(count, sizeof(*rt)), sum = 0;
	char *buf = calloc(1, size);

	if (rt == NULL || buf == NULL)
		die("calloc");
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
		die("connect");
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	send_all(fd, &size, sizeof(size));
	for (unsigned int i = 0; i < warm + count; i++) {
		uint64_t t0 = now_ns();

		send_all(fd, buf, size);
		recv_all(fd, buf, size);
		if (i >= warm)
			rt[i - warm] = now_ns() - t0;
	}
	close(fd);
	qsort(rt, count, sizeof(*rt), cmp_u64);
	for (unsigned int i = 0; i < count; i++)
		sum += rt[i];
	printf("{\"size\": %u, \"count\": %u, \"min_ns\": %" PRIu64 ", \"p50_ns\": %" PRIu64
	       ", \"p99_ns\": %" PRIu64 ", \"p99_9_ns\": %" PRIu64 ", \"max_ns\": %" PRIu64
	       ", \"mean_ns\": %" PRIu64 "}\n", size, count, rt[0], rt[count / 2],
	       rt[(uint64_t)count * 99 / 100], rt[(uint64_t)count * 999 / 1000], rt[count - 1],
	       sum / count);
	free(rt);
	free(buf);
	return 0;
}

/* Closed loop over @conns connections, one message out on each: every
 * answer that comes sends that connection's next, for @seconds. */
static int
clients(const char *ip, int port, uint32_t size, unsigned int conns, double seconds)
{
	struct sockaddr_in a = addr_of(ip, port);
	struct pollfd *pf = calloc(conns, sizeof(*pf));
	char *buf = calloc(1, size);
	uint64_t done = 0, t0, t1, until;
	int one = 1;

	if (pf == NULL || buf == NULL)
		die("calloc");
	for (unsigned int i = 0; i < conns; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
			die("connect");
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		send_all(fd, &size, sizeof(size));
		pf[i] = (struct pollfd){ .fd = fd, .events = POLLIN };
	}
	t0 = now_ns();
	until = t0 + (uint64_t)(seconds * 1e9);
	for (unsigned int i = 0; i < conns; i++)
		send_all(pf[i].fd, buf, size);
	for (;;) {
		int r = poll(pf, conns, 1000);

		if (r < 0 && errno != EINTR)
			die("poll");
		for (unsigned int i = 0; r > 0 && i < conns; i++) {
			if (pf[i].revents == 0)
				continue;
			recv_all(pf[i].fd, buf, size);
			done++;
			if (now_ns() < until)
				send_all(pf[i].fd, buf, size);
			else
				pf[i].fd = -pf[i].fd - 1;     /* answered: out of the loop */
		}
		t1 = now_ns();
		if (t1 >= until) {
			unsigned int out = 0;

			for (unsigned int i = 0; i < conns; i++)
				out += pf[i].fd >= 0;
			if (out == 0)
				break;
			if (t1 >= until + 10000000000ull) {
				fprintf(stderr, "rb2run_pingpong: %u answers still missing 10 s "
					"after the end\n", out);
				return 1;
			}
		}
	}
	for (unsigned int i = 0; i < conns; i++)
		close(-pf[i].fd - 1);
	printf("{\"size\": %u, \"conns\": %u, \"seconds\": %.3f, \"round_trips\": %" PRIu64
	       ", \"per_s\": %.1f}\n", size, conns, (t1 - t0) / 1e9, done,
	       done / ((t1 - t0) / 1e9));
	free(pf);
	free(buf);
	return 0;
}

/* A connection to the server, its size said: @return its fd, or exit. */
static int
open_conn(const struct sockaddr_in *a, uint32_t size)
{
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || connect(fd, (const struct sockaddr *)a, sizeof(*a)) != 0)
		die("connect");
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	send_all(fd, &size, sizeof(size));
	return fd;
}

static int
stall(const char *ip, int port, uint32_t size, unsigned int count, unsigned int conns)
{
	struct sockaddr_in a = addr_of(ip, port);
	unsigned int n = 0, cap = count, over = 0;
	uint64_t *rt = calloc(cap, sizeof(*rt)), t0, t1 = 0;
	uint64_t spent[4] = {0, 0, 0, 0};   /* the child's: connect, echo, close maxima; closes */
	char *buf = calloc(1, size);
	int fd, status, done = 0, report[2];
	pid_t child;

	if (rt == NULL || buf == NULL)
		die("calloc");
	if (pipe(report) != 0)
		die("pipe");
	fd = open_conn(&a, size);
	for (unsigned int i = 0; i < 100; i++) {   /* warm-up */
		send_all(fd, buf, size);
		recv_all(fd, buf, size);
	}
	t0 = now_ns();
	child = fork();
	if (child < 0)
		die("fork");
	if (child == 0) {
		int *fds = calloc(conns, sizeof(*fds));

		if (fds == NULL)
			die("calloc");
		close(fd);
		close(report[0]);
		for (unsigned int i = 0; i < conns; i++) {
			uint64_t t = now_ns(), u;

			fds[i] = open_conn(&a, size);
			u = now_ns();
			spent[0] = u - t > spent[0] ? u - t : spent[0];
			send_all(fds[i], buf, size);
			recv_all(fds[i], buf, size);
			t = now_ns();
			spent[1] = t - u > spent[1] ? t - u : spent[1];
		}
		for (unsigned int i = 0; i < conns; i++) {
			uint64_t t = now_ns(), u;

			close(fds[i]);
			u = now_ns();
			spent[2] = u - t > spent[2] ? u - t : spent[2];
			spent[3] += u - t;
		}
		_exit(write(report[1], spent, sizeof(spent)) == (ssize_t)sizeof(spent) ? 0 : 1);
	}
	close(report[1]);
	while (n < count || !done) {
		uint64_t t = now_ns();

		send_all(fd, buf, size);
		recv_all(fd, buf, size);
		if (n == cap) {
			cap *= 2;
			rt = realloc(rt, cap * sizeof(*rt));
			if (rt == NULL)
				die("realloc");
		}
		rt[n] = now_ns() - t;
		over += rt[n++] > 10000000ull;
		if (!done && waitpid(child, &status, WNOHANG) == child) {
			done = 1;
			t1 = now_ns();
			if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
				fprintf(stderr, "rb2run_pingpong: the connecting child failed\n");
				return 1;
			}
		}
	}
	close(fd);
	if (read(report[0], spent, sizeof(spent)) != (ssize_t)sizeof(spent))
		die("read of the child's report");
	close(report[0]);
	qsort(rt, n, sizeof(*rt), cmp_u64);
	printf("{\"size\": %u, \"count\": %u, \"new_conns\": %u, \"connect_all_ms\": %.1f, "
	       "\"p50_ns\": %" PRIu64 ", \"p99_ns\": %" PRIu64 ", \"max_ns\": %" PRIu64
	       ", \"over_10ms\": %u, \"child_connect_max_ms\": %.1f, \"child_echo_max_ms\": %.1f"
	       ", \"child_close_max_ms\": %.1f, \"child_closes_ms\": %.1f}\n",
	       size, n, conns, (t1 - t0) / 1e6, rt[n / 2], rt[(uint64_t)n * 99 / 100], rt[n - 1],
	       over, spent[0] / 1e6, spent[1] / 1e6, spent[2] / 1e6, spent[3] / 1e6);
	free(rt);
	free(buf);
	return 0;
}

static int
connects(const char *ip, int port, unsigned int count)
{
	struct sockaddr_in a = addr_of(ip, port);
	uint64_t *ct = calloc(count, sizeof(*ct)), *cl = calloc(count, sizeof(*cl));
	char buf[64] = { 0 };

	if (ct == NULL || cl == NULL)
		die("calloc");
	for (unsigned int i = 0; i < count; i++) {
		uint64_t t = now_ns(), u;
		int fd = open_conn(&a, sizeof(buf));

		ct[i] = now_ns() - t;
		send_all(fd, buf, sizeof(buf));
		recv_all(fd, buf, sizeof(buf));
		u = now_ns();
		close(fd);
		cl[i] = now_ns() - u;
	}
	printf("{\"count\": %u, \"first_connect_ms\": %.3f", count, ct[0] / 1e6);
	if (count > 1) {
		qsort(ct + 1, count - 1, sizeof(*ct), cmp_u64);
		printf(", \"connect_p50_ms\": %.3f, \"connect_p90_ms\": %.3f",
		       ct[1 + (count - 1) / 2] / 1e6, ct[1 + (uint64_t)(count - 1) * 9 / 10] / 1e6);
	}
	qsort(cl, count, sizeof(*cl), cmp_u64);
	printf(", \"close_p50_ms\": %.3f}\n", cl[count / 2] / 1e6);
	free(ct);
	free(cl);
	return 0;
}

int
main(int argc, char **argv)
{
	if ((argc == 3 || argc == 4) && strcmp(argv[1], "server") == 0)
		return server(argc == 4 ? argv[3] : "127.0.0.1", atoi(argv[2]));
	if ((argc == 5 || argc == 6) && strcmp(argv[1], "client") == 0 && atoi(argv[3]) > 0 &&
	    atoi(argv[4]) > 0)
		return client(argc == 6 ? argv[5] : "127.0.0.1", atoi(argv[2]),
			      (uint32_t)atoi(argv[3]), (unsigned int)atoi(argv[4]));
	if ((argc == 3 || argc == 4) && strcmp(argv[1], "pollserver") == 0)
		pollserver(argc == 4 ? argv[3] : "127.0.0.1", atoi(argv[2]));
	if ((argc == 6 || argc == 7) && strcmp(argv[1], "clients") == 0 && atoi(argv[3]) > 0 &&
	    atoi(argv[4]) > 0 && atof(argv[5]) > 0)
		return clients(argc == 7 ? argv[6] : "127.0.0.1", atoi(argv[2]),
			       (uint32_t)atoi(argv[3]), (unsigned int)atoi(argv[4]), atof(argv[5]));
	if ((argc == 6 || argc == 7) && strcmp(argv[1], "stall") == 0 && atoi(argv[3]) > 0 &&
	    atoi(argv[4]) > 0 && atoi(argv[5]) > 0)
		return stall(argc == 7 ? argv[6] : "127.0.0.1", atoi(argv[2]), (uint32_t)atoi(argv[3]),
			     (unsigned int)atoi(argv[4]), (unsigned int)atoi(argv[5]));
	if ((argc == 4 || argc == 5) && strcmp(argv[1], "connects") == 0 && atoi(argv[3]) > 0)
		return connects(argc == 5 ? argv[4] : "127.0.0.1", atoi(argv[2]),
				(unsigned int)atoi(argv[3]));
	fprintf(stderr, "usage: rb2run_pingpong server PORT [ADDR] | client PORT SIZE COUNT [ADDR]\n"
		"       rb2run_pingpong pollserver PORT [ADDR] | "
		"clients PORT SIZE CONNS SECONDS [ADDR]\n"
		"       rb2run_pingpong stall PORT SIZE COUNT NEW [ADDR] | connects PORT COUNT [ADDR]\n");
	return 2;
}
