/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * A child made with clone() and no CLONE_VM, as container tools and
 * sandboxes make theirs: it runs past rb2-run's fork handlers, like a vfork
 * child, but in memory of its own. Its close of a connection must clear
 * its own table (a vfork child's must not touch its parent's), so that the
 * next file it opens on that number reads as that file.
 *
 *   rb2run_clone PORT
 *
 * connects to 127.0.0.1:PORT, then in a clone() child closes the
 * connection, opens /dev/zero (on the same number) and reads 4 bytes of
 * it. Prints what the read got; exits 0 if it got 4 zero bytes.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static int conn_fd;

static int
child(void *arg)
{
	unsigned char b[4] = { 1, 1, 1, 1 };
	ssize_t n;
	int z;

	(void)arg;
	close(conn_fd);
	z = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	n = read(z, b, sizeof(b));
	printf("clone child: /dev/zero on fd %d (the connection's was %d) read %zd: %u%u%u%u\n",
	       z, conn_fd, n, b[0], b[1], b[2], b[3]);
	fflush(stdout);
	return n == 4 && (b[0] | b[1] | b[2] | b[3]) == 0 ? 0 : 1;
}

int
main(int argc, char **argv)
{
	static char stack[1 << 16] __attribute__((aligned(16)));
	struct sockaddr_in a = { .sin_family = AF_INET };
	int st;
	pid_t p;

	if (argc != 2) {
		fprintf(stderr, "usage: rb2run_clone PORT\n");
		return 2;
	}
	a.sin_port = htons((uint16_t)atoi(argv[1]));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	conn_fd = socket(AF_INET, SOCK_STREAM, 0);
	if (conn_fd < 0 || connect(conn_fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		perror("rb2run_clone: connect");
		return 2;
	}
	p = clone(child, stack + sizeof(stack), SIGCHLD, NULL);
	if (p < 0) {
		perror("rb2run_clone: clone");
		return 2;
	}
	if (waitpid(p, &st, 0) != p || !WIFEXITED(st))
		return 1;
	return WEXITSTATUS(st);
}
