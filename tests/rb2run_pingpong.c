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
 * ADDR (IPv4; default 127.0.0.1) is where the server listens and the client
 * connects: across hosts, the same program compares rb2-run with rsocket's
 * preload (tests/verbs-vm/preload_two.py), which cannot run sockperf.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
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

int
main(int argc, char **argv)
{
	if ((argc == 3 || argc == 4) && strcmp(argv[1], "server") == 0)
		return server(argc == 4 ? argv[3] : "127.0.0.1", atoi(argv[2]));
	if ((argc == 5 || argc == 6) && strcmp(argv[1], "client") == 0 && atoi(argv[3]) > 0 &&
	    atoi(argv[4]) > 0)
		return client(argc == 6 ? argv[5] : "127.0.0.1", atoi(argv[2]),
			      (uint32_t)atoi(argv[3]), (unsigned int)atoi(argv[4]));
	fprintf(stderr, "usage: rb2run_pingpong server PORT [ADDR] | client PORT SIZE COUNT [ADDR]\n");
	return 2;
}
