/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* TCP sockets and endpoint pairs for the case-study apps (app_net.h). */

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_errno.h>

#include <rb2_conn_service.h>

#include "app_net.h"

const char *app_name = "rb2";

int
app_parse_addr(const char *what, const char *addr, struct sockaddr_storage *ss)
{
	struct sockaddr_in *sa = (struct sockaddr_in *)ss;
	const char *colon = strrchr(addr, ':');
	char ip[64], *end;
	unsigned long port;

	memset(ss, 0, sizeof(*ss));
	sa->sin_family = AF_INET;
	if (colon == NULL || (size_t)(colon - addr) >= sizeof(ip)) {
		app_err("%s %s: IP:PORT expected\n", what, addr);
		return -1;
	}
	memcpy(ip, addr, (size_t)(colon - addr));
	ip[colon - addr] = '\0';
	port = strtoul(colon + 1, &end, 10);
	if (inet_pton(AF_INET, ip, &sa->sin_addr) != 1 || *end != '\0' || port > 65535) {
		app_err("%s %s: an IPv4 address and a port expected\n", what, addr);
		return -1;
	}
	sa->sin_port = htons((uint16_t)port);
	return 0;
}

int
app_tcp_listen(const char *addr, uint16_t *port)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd, one = 1;

	if (app_parse_addr("TCP address", addr, &ss) < 0)
		return -1;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	/* SO_REUSEADDR, not SO_REUSEPORT: the kernel would let another
	 * process bind the same port too, and split the connections between
	 * two servers with two tables. The lcores of one server share this
	 * one socket instead (app_serve()). */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sizeof(struct sockaddr_in)) < 0 ||
	    listen(fd, 1024) < 0) {
		app_err("TCP %s: %s%s\n", addr, strerror(errno),
			errno == EADDRINUSE ? " (another server listens on that port)" : "");
		close(fd);
		return -1;
	}
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	if (port != NULL)
		*port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	return fd;
}

int
app_tcp_connect(const char *addr)
{
	struct sockaddr_storage ss;
	int fd, one = 1;

	if (app_parse_addr("TCP address", addr, &ss) < 0)
		return -1;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&ss, sizeof(struct sockaddr_in)) < 0) {
		app_err("TCP connect to %s: %s\n", addr, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static int
chan_pair(const char *name, struct rb2_xport *xp, const char *design, struct rb2_tx **tx,
	  struct rb2_rx **rx)
{
	struct rb2_chan_params p;

	rb2_conn_service_chan_params(&p);
	if (rb2_chan_params_preset(&p, design) < 0) {
		app_err("design '%s': none of tcp, l5-chan, " RB2_CHAN_PRESET_NAMES "\n", design);
		return -1;
	}
	*tx = rb2_tx_create(name, xp, &p);
	*rx = rb2_rx_create(name, xp, &p);
	if (*tx == NULL || *rx == NULL || rb2_chan_pair(*tx, *rx) != 0) {
		app_err("channel %s: %s\n", name, rte_strerror(rte_errno));
		return -1;
	}
	return 0;
}

int
app_ep_pair(const char *name, struct rb2_xport *xp, const char *design,
	    struct rb2_conn_ep **client, struct rb2_conn_ep **server, struct app_ep_chans *chans)
{
	struct rb2_conn_ep_params p;
	char n[RB2_CHAN_NAMESIZE];
	struct rb2_tx *t1, *t2;
	struct rb2_rx *r1, *r2;

	snprintf(n, sizeof(n), "%s.c2s", name);
	if (chan_pair(n, xp, design, &t1, &r1) < 0)
		return -1;
	snprintf(n, sizeof(n), "%s.s2c", name);
	if (chan_pair(n, xp, design, &t2, &r2) < 0)
		return -1;
	if (chans != NULL)
		*chans = (struct app_ep_chans){ .tx = { t1, t2 }, .rx = { r1, r2 } };
	rb2_conn_ep_params_init(&p);
	snprintf(n, sizeof(n), "%s.cli", name);
	*client = rb2_conn_ep_create(n, t1, r2, &p);
	snprintf(n, sizeof(n), "%s.srv", name);
	*server = rb2_conn_ep_create(n, t2, r1, &p);
	if (*client == NULL || *server == NULL) {
		app_err("endpoint %s: %s\n", name, rte_strerror(rte_errno));
		return -1;
	}
	return 0;
}

int
app_l5_conn_create(const char *name, struct rb2_xport *xp, unsigned int client_lcore,
		   unsigned int server_lcore, struct app_l5_conn *c)
{
	char n[RB2_CHAN_NAMESIZE];

	snprintf(n, sizeof(n), "%s.c2s", name);
	c->ring[0] = rb2_l5_create(xp, n, APP_L5_RING_BYTES, APP_L5_MAX_MSG, client_lcore,
				   server_lcore);
	snprintf(n, sizeof(n), "%s.s2c", name);
	c->ring[1] = c->ring[0] == NULL ? NULL :
		     rb2_l5_create(xp, n, APP_L5_RING_BYTES, APP_L5_MAX_MSG, server_lcore,
				   client_lcore);
	if (c->ring[1] == NULL) {
		app_err("L5 connection %s: %s\n", name, rte_strerror(rte_errno));
		app_l5_conn_destroy(c);
		return -1;
	}
	return 0;
}

void
app_l5_conn_destroy(struct app_l5_conn *c)
{
	rb2_l5_destroy(c->ring[0]);
	rb2_l5_destroy(c->ring[1]);
	c->ring[0] = c->ring[1] = NULL;
}

int
app_conns_open(struct rb2_conn_ep *ep, int via_service, uint32_t host, uint16_t port,
	       unsigned int nports, unsigned int first, int *cds, unsigned int n)
{
	uint64_t deadline = rte_get_timer_cycles() + 10 * rte_get_timer_hz();

	for (unsigned int i = 0; i < n; i++) {
		uint16_t p = (uint16_t)(port + (first + i) % nports);

		cds[i] = via_service ? rb2_conn_connect_host(ep, host, p) : rb2_conn_connect(ep, p);
		if (cds[i] < 0) {
			app_err("connect to port %u: %s\n", p, strerror(-cds[i]));
			return -1;
		}
	}
	for (unsigned int i = 0; i < n; i++) {
		int st;

		while ((st = rb2_conn_status(ep, cds[i])) == -EINPROGRESS &&
		       rte_get_timer_cycles() < deadline)
			rb2_conn_ep_poll(ep);
		if (st != 0) {
			app_err("connection %u to port %u: %s%s%s\n", i,
				port + (first + i) % nports,
				st == -EINPROGRESS ? "no answer in 10 s" : strerror(-st),
				*rb2_conn_why(ep, cds[i]) ? ": " : "", rb2_conn_why(ep, cds[i]));
			return -1;
		}
	}
	return 0;
}
