/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * rb2-sockd: the host service of rb2-run. It pairs the two ends of a TCP
 * connection between programs under rb2-run on this host and hands both one
 * arena for their stream (lib/preload/rb2_sockd.h has the protocol and why
 * it trusts nobody's word). It carries no data and runs no EAL: it sleeps in
 * poll(2) between requests.
 *
 * For a connect to another host, it asks that host's service whether an
 * rb2-run program listens there (RB2_SOCKD_PEER_* in rb2_sockd.h), and
 * answers such questions from other hosts. Where both ends can use RDMA,
 * the answer makes both sides' programs open a stream over verbs on that
 * connection (REMOTE), which the two programs set up between themselves.
 *
 *   rb2-sockd [--socket PATH] [--daemon] [--accept-timeout-ms N] [--no-huge] [--slots N]
 *             [--peer-port N] [--link-idle-ms N]
 *   rb2-sockd --stats [--socket PATH]     its counters, one JSON line
 *   rb2-sockd --stop [--socket PATH]      ask it to exit (SIGTERM does the same), and
 *                                         wait until it has: serving(), below
 */

#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <ifaddrs.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <rb2_noeal.h>

#include "rb2_sockd.h"
#include "rb2_stream.h"

/* Arenas go at RB2_STREAM_ARENA_BASE + k * RB2_STREAM_ARENA_SIZE. */
#define SLOTS_MAX RB2_STREAM_ARENA_SLOTS
#define MAX_CONNS 4096
#define MAX_CONNS_PER_USER 1024  /* open requests and listeners of one uid */
#define REQUEST_TIMEOUT_MS 2000  /* a new connection sends its request by then */

/*
 * K_ASKING: a client whose CONNECT goes to another host, waiting for that
 * host's answer; K_LINK: the TCP connection to that host's service that
 * asks it, kept for the next questions while they come; K_REMOTE: such a
 * connection from another host's service.
 */
enum kind { K_FREE, K_NEW, K_LISTENER, K_CLIENT, K_SERVER, K_ASKING, K_LINK, K_REMOTE };

struct conn {
	int fd;
	enum kind kind;
	pid_t pid;
	uid_t uid;
	/* K_LISTENER: where it listens */
	struct sockaddr_storage at;
	int v6only;
	/* K_CLIENT: its port and where it connects; K_SERVER: the accepted
	 * connection's client port and server address */
	uint16_t cport;
	struct sockaddr_storage to;
	int connected;              /* K_CLIENT: CONNECTED came; K_LINK: the
				     * TCP connect is done */
	int pipelined;              /* K_CLIENT: its CONNECT waited for no GO
				     * (RB2_SOCKD_F_PIPE) */
	int self_asked;             /* ... and its own listener's GO went */
	int peer;                   /* the matched other side's index, or -1
				     * (K_ASKING: its link) */
	uint64_t seq;               /* K_ASKING: its question's number on its
				     * link; K_LINK: questions put on it */
	uint64_t answered;          /* K_LINK: answers read; K_REMOTE: questions
				     * answered */
	int reasked;                /* K_ASKING: asked again on a new link */
	uint64_t deadline_ms;
	/* K_LISTENER, K_CLIENT, K_ASKING: the process can use an RDMA device */
	int verbs;
	/* K_LINK, K_REMOTE: the lines read so far */
	char line[64];
	unsigned int llen;
};

static struct conn conns[MAX_CONNS];
static unsigned int nconns;

/* Clients that went before their server's accept came (they closed, or
 * stopped waiting): the late accept learns why it stays kernel TCP,
 * rather than reading that its client is not under rb2-run. The last 64,
 * each for twice the accept timeout. */
#define GONE_MAX 64
static struct gone {
	uint16_t cport;
	struct sockaddr_storage to;
	uint64_t until_ms;
	const char *why;
} gone[GONE_MAX];
static unsigned int gone_next;
/* Why a server's client went kernel TCP, when they are one process. */
static const char self_client[] = "the client is this same process";
/* Each slot's last pair, and a copy of its arena's fd while it may be in
 * use: the arena counts the ends not yet closed (rb2_noeal_arena_holders()). */
static unsigned int n_slots = SLOTS_MAX;   /* --slots */
static pid_t slot_pid[SLOTS_MAX][2];
static int slot_fd[SLOTS_MAX];
static unsigned int slot_fds;    /* slots with an fd kept */
static uint64_t last_sweep_ms;
static unsigned int next_slot;
static unsigned int accept_timeout_ms = 2000;
static unsigned int arena_flags;
static volatile sig_atomic_t stop;       /* signals asking it to exit */
/* Stopping: when the first such signal came (0: not stopping), and the
 * latest it goes then (serving(), below). */
static uint64_t stop_at_ms, stop_until_ms;
static const char stopping_why[] = "rb2-sockd is stopping";
static uint64_t n_pairs, n_plain_nolistener, n_plain_notlocal, n_plain_noaccept,
	n_plain_noclient, n_plain_fail, n_plain_self, n_plain_stopping, n_listeners, n_bad;
static uint64_t stream_id;
static int huge_warned, cap_warned;
static int listen_fd = -1;
/* Other hosts' services: the TCP port where each answers (0: none asked,
 * none answered), this one's listener there, and the hosts where nothing
 * answered, not asked again for a while. */
static unsigned int peer_port;
static int peer_fd = -1;
#define PEER_TIMEOUT_MS 250
/* A link idle this long is closed by the asking side (--link-idle-ms, at
 * most LINK_IDLE_MS; 0: a link per question); the answering side closes
 * one idle for longer, so that a question is not sent on a link the other
 * end is closing (if it is, it is asked again on a new one). */
#define LINK_IDLE_MS 10000
#define REMOTE_IDLE_MS 20000
static unsigned int link_idle_ms = LINK_IDLE_MS;
#define STR_(x) #x
#define STR(x) STR_(x)
#define NOSERVICE_MS 30000
#define NOSERVICE_MAX 64
#define MAX_REMOTE 256          /* links from other hosts open at once */
static struct { struct sockaddr_storage ip; uint64_t until_ms; } noservice[NOSERVICE_MAX];
static uint64_t n_asked, n_answered, n_plain_remote, n_remote;
/* Connections from other hosts this service said yes to (RB2_SOCKD_PEER_RB2):
 * the client's address and port, and ours, until their accept() comes. */
#define EXPECT_MAX 1024
static struct expect {
	struct sockaddr_storage client, server;
	uint64_t until_ms;
} expects[EXPECT_MAX];

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void
say(const char *fmt, ...)
{
	va_list ap;
	char t[32];
	time_t now = time(NULL);

	strftime(t, sizeof(t), "%F %T", localtime(&now));
	fprintf(stderr, "rb2-sockd %s: ", t);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* An address as one family: IPv4-mapped IPv6 as IPv4. */
static void
norm(struct sockaddr_storage *a)
{
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)a;

	if (a->ss_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
		struct sockaddr_in s4 = { .sin_family = AF_INET, .sin_port = s6->sin6_port };

		memcpy(&s4.sin_addr, &s6->sin6_addr.s6_addr[12], 4);
		memset(a, 0, sizeof(*a));
		memcpy(a, &s4, sizeof(s4));
	}
}

static uint16_t
port_of(const struct sockaddr_storage *a)
{
	return ntohs(a->ss_family == AF_INET ? ((const struct sockaddr_in *)a)->sin_port :
		     ((const struct sockaddr_in6 *)a)->sin6_port);
}

static int
any_addr(const struct sockaddr_storage *a)
{
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr == htonl(INADDR_ANY);
	return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)a)->sin6_addr);
}

static int
same_ip(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return 0;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
			((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		      &((const struct sockaddr_in6 *)b)->sin6_addr, 16) == 0;
}

/* Whether @a (normalized) is an address of this host: then a connection
 * to it stays here, and both ends can meet in shared memory. */
static int
local_addr(const struct sockaddr_storage *a)
{
	struct ifaddrs *ifs, *i;
	int yes = 0;

	if (a->ss_family == AF_INET &&
	    (ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr) >> 24) == 127)
		return 1;
	if (a->ss_family == AF_INET6 &&
	    IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)a)->sin6_addr))
		return 1;
	if (getifaddrs(&ifs) != 0)
		return 0;
	for (i = ifs; i != NULL && !yes; i = i->ifa_next) {
		struct sockaddr_storage x = { 0 };

		if (i->ifa_addr == NULL || (i->ifa_addr->sa_family != AF_INET &&
					    i->ifa_addr->sa_family != AF_INET6))
			continue;
		memcpy(&x, i->ifa_addr, i->ifa_addr->sa_family == AF_INET ?
		       sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6));
		yes = same_ip(&x, a);
	}
	freeifaddrs(ifs);
	return yes;
}

/* A listener of ours at @to (normalized), or -1. */
static int
listener_at(const struct sockaddr_storage *to)
{
	for (unsigned int i = 0; i < nconns; i++) {
		struct conn *c = &conns[i];

		if (c->kind != K_LISTENER || port_of(&c->at) != port_of(to))
			continue;
		if (same_ip(&c->at, to))
			return (int)i;
		if (any_addr(&c->at) && (c->at.ss_family == to->ss_family ||
					 (c->at.ss_family == AF_INET6 && !c->v6only)))
			return (int)i;
	}
	return -1;
}

static void
drop(unsigned int i)
{
	struct conn *c = &conns[i];

	close(c->fd);
	/* A partner waiting on this one: it has lost its pair. */
	for (unsigned int k = 0; k < nconns; k++)
		if (conns[k].kind != K_FREE && conns[k].peer == (int)i)
			conns[k].peer = -1;
	memset(c, 0, sizeof(*c));
	c->fd = -1;
	c->kind = K_FREE;
	c->peer = -1;
}

/* @return 0, or -errno: the asker has shut its connection down or gone. */
static int
reply_fds(unsigned int i, uint16_t op, const char *why, const int *fds, unsigned int nfds,
	  const char *name)
{
	struct rb2_sockd_msg m;

	memset(&m, 0, sizeof(m));
	m.magic = RB2_SOCKD_MAGIC;
	m.version = RB2_SOCKD_VERSION;
	m.op = op;
	if (why != NULL)
		snprintf(m.why, sizeof(m.why), "%s", why);
	if (name != NULL)
		snprintf(m.name, sizeof(m.name), "%s", name);
	return rb2_sockd_send(conns[i].fd, &m, fds, nfds);
}

static void
reply(unsigned int i, uint16_t op, const char *why, const char *name)
{
	(void)reply_fds(i, op, why, NULL, 0, name);
}

static void
plain(unsigned int i, uint64_t *counter, const char *fmt, ...)
{
	char why[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	(*counter)++;
	reply(i, RB2_SOCKD_PLAIN, why, NULL);
	drop(i);
}

/* A refusal logged: at most 20 lines per 10 s, so that a flood cannot
 * fill the log. */
static void
log_refusal(const char *who, const char *why)
{
	static uint64_t window_ms, unlogged;
	static unsigned int logged;
	uint64_t now = now_ms();

	if (now - window_ms >= 10000) {
		if (unlogged > 0)
			say("%" PRIu64 " more requests refused, not logged", unlogged);
		window_ms = now;
		logged = 0;
		unlogged = 0;
	}
	if (logged++ < 20)
		say("refused a request from %s: %s", who, why);
	else
		unlogged++;
}

/* A request that breaks the protocol: refused, counted and logged. */
static void
refuse(unsigned int i, const char *fmt, ...)
{
	char why[160], who[48];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	snprintf(who, sizeof(who), "pid %d (uid %u)", (int)conns[i].pid,
		 (unsigned int)conns[i].uid);
	log_refusal(who, why);
	plain(i, &n_bad, "refused: %s", why);
}

/* Client @i goes before its pairing, for @why (to its server). */
static void
gone_note(unsigned int i, const char *why)
{
	struct gone *g = &gone[gone_next++ % GONE_MAX];

	g->cport = conns[i].cport;
	g->to = conns[i].to;
	g->until_ms = now_ms() + 2ull * accept_timeout_ms;
	g->why = why;
}

/* Why the client of server @i went before the pairing, or NULL. */
static const char *
gone_why(unsigned int i)
{
	uint64_t now = now_ms();

	for (unsigned int k = 0; k < GONE_MAX; k++) {
		const struct gone *g = &gone[k];

		if (g->why != NULL && now < g->until_ms && g->cport == conns[i].cport &&
		    same_ip(&g->to, &conns[i].to) && port_of(&g->to) == port_of(&conns[i].to))
			return g->why;
	}
	return NULL;
}

static int
pid_alive(pid_t p)
{
	return p > 0 && (kill(p, 0) == 0 || errno == EPERM);
}

/* Whether slot @k's address is free in every process: never used, both
 * ends closed their stream, or both processes are gone. Frees what it held. */
static int
slot_free(unsigned int k)
{
	if (slot_fd[k] >= 0 && rb2_noeal_arena_holders(slot_fd[k]) > 0 &&
	    (pid_alive(slot_pid[k][0]) || pid_alive(slot_pid[k][1])))
		return 0;
	if (slot_fd[k] >= 0) {
		close(slot_fd[k]);  /* the arena's memory goes with the last copy */
		slot_fd[k] = -1;
		slot_fds--;
	} else if (pid_alive(slot_pid[k][0]) || pid_alive(slot_pid[k][1])) {
		return 0;           /* no count kept (no fd to spare): the processes */
	}
	slot_pid[k][0] = slot_pid[k][1] = 0;
	return 1;
}

/* Once a second while arenas are kept (or at once, with @now_too): close
 * the copies of those both ends are done with, so that a closed
 * connection's memory goes soon. */
static void
sweep_how(int now_too)
{
	uint64_t now = now_ms();

	if (slot_fds == 0 || (!now_too && now - last_sweep_ms < 1000))
		return;
	last_sweep_ms = now;
	for (unsigned int k = 0; k < n_slots && slot_fds > 0; k++)
		if (slot_fd[k] >= 0)
			(void)slot_free(k);
}

static void
sweep(void)
{
	sweep_how(0);
}

/*
 * Arenas' memory made ahead (rb2_noeal_arena_prepare()). An arena's first
 * touch had the kernel zero its 2 MiB hugepage here, in the middle of each
 * pairing: half of this service's CPU, and 11% of all samples under nginx
 * opening a connection to node for each request. A thread at SCHED_IDLE
 * keeps STOCK_MAX of them zeroed: it runs when a CPU has nothing else to
 * run, so a set-up waiting on a wake-up no longer waits for the zeroing,
 * and a host busy with its programs lends it no time (the pairing then
 * zeroes as before, when the stock is out).
 */
#define STOCK_MAX 4
static pthread_mutex_t stock_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t stock_low = PTHREAD_COND_INITIALIZER;
static int stock[STOCK_MAX];
static unsigned int n_stock;
static uint64_t n_stock_used, n_stock_short;

static void *
stock_main(void *arg)
{
	struct sched_param sp = { .sched_priority = 0 };

	(void)arg;
	(void)pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp);
	for (;;) {
		int fd;

		pthread_mutex_lock(&stock_lock);
		while (n_stock == STOCK_MAX)
			pthread_cond_wait(&stock_low, &stock_lock);
		pthread_mutex_unlock(&stock_lock);
		fd = rb2_noeal_arena_prepare(RB2_STREAM_ARENA_SIZE);
		if (fd == -ENOMEM) {
			/* The pool is out: try again at the next pairing (the
			 * sweep may have freed some by then), not on a timer,
			 * so an idle service stays asleep. */
			pthread_mutex_lock(&stock_lock);
			pthread_cond_wait(&stock_low, &stock_lock);
			pthread_mutex_unlock(&stock_lock);
			continue;
		}
		if (fd < 0)
			return NULL;     /* no hugetlb memfds here: each pairing makes its own */
		pthread_mutex_lock(&stock_lock);
		stock[n_stock++] = fd;
		pthread_mutex_unlock(&stock_lock);
	}
	return NULL;
}

/* Start the stock's thread, with no signal of the service's. */
static void
stock_start(void)
{
	sigset_t all, old;
	pthread_attr_t at;
	pthread_t t;

	if (arena_flags & RB2_NOEAL_ARENA_NO_HUGE)
		return;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &at, stock_main, NULL) != 0)
		say("notice: no thread to zero arenas ahead; each pairing zeroes its own");
	pthread_attr_destroy(&at);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* A prepared arena's fd, or -1 when the stock is out. Never waits for the
 * lock: a thread at SCHED_IDLE preempted while holding it may not run
 * again for long on a busy host, and the pairing then zeroes its own. */
static int
stock_take(void)
{
	int fd = -1;

	if (pthread_mutex_trylock(&stock_lock) != 0)
		return -1;
	if (n_stock > 0)
		fd = stock[--n_stock];
	pthread_cond_signal(&stock_low);
	pthread_mutex_unlock(&stock_lock);
	return fd;
}

/*
 * An arena for slot @k. Where it came on 4 KiB pages with hugepages asked
 * for, the pool may be held by closed connections' arenas that the sweep
 * has not freed yet (each holds its first hugepage until then): a burst of
 * connections, 1000 a second, took the 512 pages of this machine's pool
 * within half a second, and the rest of each second's connections went
 * on 4 KiB pages, which cost their two ends 0.4 ms of CPU a connection
 * more (300 connections each way, 3 rounds). So the sweep runs at once,
 * at most every 50 ms, and the arena is made again.
 */
static struct rb2_noeal_arena *
slot_arena(unsigned int k)
{
	static uint64_t last_forced_ms;
	uintptr_t at = RB2_STREAM_ARENA_BASE + (uint64_t)k * RB2_STREAM_ARENA_SIZE;
	int fd = stock_take();
	struct rb2_noeal_arena *a = NULL;
	uint64_t now;

	if (fd >= 0) {
		a = rb2_noeal_arena_create_on(fd, RB2_STREAM_ARENA_SIZE, at);
		if (a != NULL) {
			n_stock_used++;
			return a;
		}
	} else if (!(arena_flags & RB2_NOEAL_ARENA_NO_HUGE)) {
		n_stock_short++;
	}
	a = rb2_noeal_arena_create(RB2_STREAM_ARENA_SIZE, at, arena_flags);
	now = now_ms();

	if (a == NULL || rb2_noeal_arena_huge(a) || (arena_flags & RB2_NOEAL_ARENA_NO_HUGE) ||
	    slot_fds == 0 || now - last_forced_ms < 50)
		return a;
	last_forced_ms = now;
	rb2_noeal_arena_detach(a);
	sweep_how(1);
	return rb2_noeal_arena_create(RB2_STREAM_ARENA_SIZE, at, arena_flags);
}

/* Both ends matched: one arena, to both. */
static void
pair(unsigned int cl, unsigned int sv)
{
	struct rb2_noeal_arena *a = NULL;
	char name[24];
	unsigned int tries = 0, k = 0, nfds;
	int fds[RB2_SOCKD_MAX_FDS];

	/* One process at both ends: both would map the one arena at its one
	 * address in one process, which cannot be (the pairing failed both
	 * ends and reset them). Kernel TCP for both, as the kernel's
	 * loopback. (on_connected() catches most of them sooner: a process
	 * that holds its own listener alone.) */
	if (conns[cl].pid == conns[sv].pid) {
		plain(cl, &n_plain_self, "the server is this same process");
		plain(sv, &n_plain_self, "%s", self_client);
		return;
	}
	/* The next slot whose last users are done with it (or never were). */
	while (tries++ < n_slots) {
		k = next_slot++ % n_slots;
		if (slot_free(k))
			break;
	}
	if (tries <= n_slots)
		a = slot_arena(k);
	if (a == NULL) {
		say("no arena for a connection (%s): both ends stay kernel TCP",
		    tries > n_slots ? "every slot in use" : strerror(errno));
		plain(cl, &n_plain_fail, "rb2-sockd could not make an arena");
		plain(sv, &n_plain_fail, "rb2-sockd could not make an arena");
		return;
	}
	if (!rb2_noeal_arena_huge(a) && !(arena_flags & RB2_NOEAL_ARENA_NO_HUGE) && !huge_warned) {
		huge_warned = 1;
		say("notice: no free hugepages; connections use 4 KiB pages");
	}
	slot_pid[k][0] = conns[cl].pid;
	slot_pid[k][1] = conns[sv].pid;
	rb2_noeal_arena_hold(a, 2);
	slot_fd[k] = fcntl(rb2_noeal_arena_fd(a), F_DUPFD_CLOEXEC, 3);
	if (slot_fd[k] >= 0)
		slot_fds++;
	snprintf(name, sizeof(name), "s%" PRIu64, ++stream_id);
	/* The bells: each end sleeps on its own and rings the other's. Where
	 * eventfds cannot be made, none go: the ends ring on their socket. */
	fds[0] = rb2_noeal_arena_fd(a);
	fds[1] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	fds[2] = fds[1] >= 0 ? eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC) : -1;
	nfds = fds[2] >= 0 ? 3 : 1;
	if (nfds == 1 && fds[1] >= 0)
		close(fds[1]);
	/* The client's first: one that gave up since it asked (a non-blocking
	 * connect closed, which shuts our connection down, or a process that
	 * ended) would never open its end, and the server's accept() would
	 * wait for it until its timeout, then reset. Both stay kernel TCP
	 * instead, as when the client closes before the accept. */
	if (reply_fds(cl, RB2_SOCKD_PAIR, NULL, fds, nfds, name) != 0) {
		rb2_noeal_arena_hold(a, 0);      /* nobody has it: the sweep frees it */
		plain(sv, &n_plain_noclient, "the client closed it before the pairing");
		drop(cl);
	} else {
		(void)reply_fds(sv, RB2_SOCKD_PAIR, NULL, fds, nfds, name);
		n_pairs++;
		drop(cl);
		drop(sv);
	}
	for (unsigned int f = 1; f < nfds; f++)
		close(fds[f]);
	rb2_noeal_arena_detach(a);
}

static int
addrs_of(int fd, struct sockaddr_storage *local, struct sockaddr_storage *peer)
{
	socklen_t l = sizeof(*local);

	memset(local, 0, sizeof(*local));
	if (getsockname(fd, (struct sockaddr *)local, &l) != 0)
		return -1;
	if (peer != NULL) {
		l = sizeof(*peer);
		memset(peer, 0, sizeof(*peer));
		if (getpeername(fd, (struct sockaddr *)peer, &l) != 0)
			return -1;
		norm(peer);
	}
	norm(local);
	return (local->ss_family == AF_INET || local->ss_family == AF_INET6) ? 0 : -1;
}

static void
on_listen(unsigned int i, int fd, uint32_t flags)
{
	struct conn *c = &conns[i];
	int acc = 0, type = 0;
	socklen_t l = sizeof(int);

	if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &l) != 0 || !acc ||
	    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l) != 0 || type != SOCK_STREAM ||
	    addrs_of(fd, &c->at, NULL) != 0) {
		if (fd >= 0)
			close(fd);
		refuse(i, "LISTEN without a listening TCP socket");
		return;
	}
	l = sizeof(int);
	if (c->at.ss_family == AF_INET6)
		getsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &c->v6only, &l);
	/* Not kept: a program that closes its listener and binds the port
	 * again at once (iperf3 does, after each test) must not find it
	 * still open here. The registration lives as long as its connection. */
	close(fd);
	c->kind = K_LISTENER;
	c->verbs = (flags & RB2_SOCKD_F_VERBS) != 0;
	n_listeners++;
	reply(i, RB2_SOCKD_OK, NULL, NULL);
}

static int add_tcp(int fd, enum kind kind, int peer, unsigned int timeout_ms);

static socklen_t
addr_len(const struct sockaddr_storage *a)
{
	return a->ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
}

static void
set_port(struct sockaddr_storage *a, uint16_t port)
{
	if (a->ss_family == AF_INET)
		((struct sockaddr_in *)a)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)a)->sin6_port = htons(port);
}

/* Whether host @a is known to run no rb2 service (asked lately). */
static int
noservice_known(const struct sockaddr_storage *a)
{
	uint64_t now = now_ms();

	for (unsigned int k = 0; k < NOSERVICE_MAX; k++)
		if (noservice[k].until_ms > now && same_ip(&noservice[k].ip, a))
			return 1;
	return 0;
}

static void
noservice_note(const struct sockaddr_storage *a)
{
	unsigned int oldest = 0;

	for (unsigned int k = 0; k < NOSERVICE_MAX; k++) {
		if (same_ip(&noservice[k].ip, a)) {
			oldest = k;
			break;
		}
		if (noservice[k].until_ms < noservice[oldest].until_ms)
			oldest = k;
	}
	noservice[oldest].ip = *a;
	noservice[oldest].until_ms = now_ms() + NOSERVICE_MS;
}

/* ANS_BUSY: the service has too many questions open; asked again next time. */
enum answer { ANS_NOSERVICE, ANS_BUSY, ANS_NOLISTENER, ANS_LISTENER, ANS_RB2 };

/* Tell client @cl (K_ASKING) the other host's answer; its request ends.
 * @p detail: why the host runs no service, as far as can be told. */
static void
tell(unsigned int cl, enum answer ans, const char *detail)
{
	switch (ans) {
	case ANS_NOSERVICE:
		plain(cl, &n_plain_remote,
		      "another host, which runs no rb2-sockd (port %u: %s)", peer_port, detail);
		break;
	case ANS_BUSY:
		plain(cl, &n_plain_remote,
		      "another host, whose rb2-sockd is too busy to answer");
		break;
	case ANS_NOLISTENER:
		plain(cl, &n_plain_remote,
		      "another host: no program under rb2-run listens there");
		break;
	case ANS_LISTENER:
		plain(cl, &n_plain_remote,
		      "another host: rb2-run listens there; kernel TCP: %s",
		      conns[cl].verbs ? "it has no RDMA device" : "no RDMA device here");
		break;
	case ANS_RB2:
		n_remote++;
		reply(cl, RB2_SOCKD_REMOTE, "another host: over rb2 (verbs)", NULL);
		drop(cl);
		break;
	}
}

/* The client waiting for link @k's answer number @seq, or -1 (it went). */
static int
asker_of(unsigned int k, uint64_t seq)
{
	for (unsigned int i = 0; i < nconns; i++)
		if (conns[i].kind == K_ASKING && conns[i].peer == (int)k && conns[i].seq == seq)
			return (int)i;
	return -1;
}

static void ask_host(unsigned int i);

/* Link @k ends: every question still open on it gets @p ans, or, on a link
 * that had answered before (the other service closed it while idle, or
 * went away meanwhile), is asked once more on a new one. */
static void
link_done(unsigned int k, enum answer ans, const char *detail)
{
	struct sockaddr_storage host = conns[k].to;
	uint64_t from = conns[k].answered + 1, to = conns[k].seq;
	int again = conns[k].answered > 0;
	int waiting[MAX_CONNS];
	unsigned int n = 0;

	for (uint64_t q = from; q <= to; q++) {
		int cl = asker_of(k, q);

		if (cl >= 0)
			waiting[n++] = cl;
	}
	drop(k);
	if (ans == ANS_NOSERVICE && !again)
		noservice_note(&host);
	for (unsigned int j = 0; j < n; j++) {
		struct conn *c = &conns[waiting[j]];

		if (again && !c->reasked) {
			c->reasked = 1;
			ask_host((unsigned int)waiting[j]);
		} else {
			tell((unsigned int)waiting[j], ans, detail);
		}
	}
}

/* Send client @i's question on its link @k. @return 0, or -1: the link
 * failed (link_done() called). */
static int
link_send(unsigned int k, unsigned int i)
{
	char q[64];
	int n = snprintf(q, sizeof(q), RB2_SOCKD_PEER_ASK, (unsigned int)port_of(&conns[i].to),
			 conns[i].verbs ? (unsigned int)conns[i].cport : 0u);

	if (send(conns[k].fd, q, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) != n) {
		link_done(k, ANS_NOSERVICE, "the question could not be sent");
		return -1;
	}
	/* The oldest question open bounds the wait: later ones keep its
	 * deadline (on_link() moves it on at each answer). */
	if (conns[k].seq - conns[k].answered == 1)
		conns[k].deadline_ms = now_ms() + PEER_TIMEOUT_MS;
	return 0;
}

/* The open link to host @a's service (K_LINK), or -1. */
static int
link_to(const struct sockaddr_storage *a)
{
	if (link_idle_ms == 0)
		return -1;               /* a link per question */
	for (unsigned int k = 0; k < nconns; k++)
		if (conns[k].kind == K_LINK && same_ip(&conns[k].to, a))
			return (int)k;
	return -1;
}

/* Client @i connects to another host: ask that host's service whether a
 * program under rb2-run listens there, on the link to it (K_LINK), made
 * now if there is none, unless nothing answered there lately. */
static void
ask_host(unsigned int i)
{
	struct conn *c = &conns[i];
	struct sockaddr_storage svc = c->to;
	int fd, k, err;

	if (peer_port == 0) {
		plain(i, &n_plain_notlocal,
		      "another host (this rb2-sockd asks none: --peer-port 0)");
		return;
	}
	if (noservice_known(&c->to)) {
		plain(i, &n_plain_remote,
		      "another host, which runs no rb2-sockd (port %u, asked lately)", peer_port);
		return;
	}
	k = link_to(&c->to);
	if (k < 0) {
		set_port(&svc, (uint16_t)peer_port);
		fd = socket(svc.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&svc, addr_len(&svc)) != 0 &&
		    errno != EINPROGRESS) {
			err = errno;
			close(fd);
			noservice_note(&c->to);
			plain(i, &n_plain_remote,
			      "another host, which runs no rb2-sockd (port %u: %s)",
			      peer_port, strerror(err));
			return;
		}
		k = fd < 0 ? -1 : add_tcp(fd, K_LINK, -1, PEER_TIMEOUT_MS);
		if (k < 0) {
			plain(i, &n_plain_fail, "rb2-sockd could not ask the other host (%s)",
			      fd < 0 ? strerror(errno) : "no room");
			if (fd >= 0)
				close(fd);
			return;
		}
		conns[k].to = c->to;
	}
	n_asked++;
	c->kind = K_ASKING;
	c->peer = k;
	c->seq = ++conns[k].seq;
	/* Before the link is up, its questions wait: on_link() sends them. */
	if (conns[k].connected)
		(void)link_send((unsigned int)k, i);
}

/* Link @k moved: connected (its waiting questions go), or answers came,
 * one line each, in the order of the questions. */
static void
on_link(unsigned int k, short revents)
{
	struct conn *p = &conns[k];
	ssize_t r;
	char *nl;

	if (!p->connected) {
		int err = 0;
		socklen_t l = sizeof(err);

		if (getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &err, &l) != 0)
			err = errno;
		if (err != 0) {
			link_done(k, ANS_NOSERVICE, strerror(err));
			return;
		}
		if (!(revents & POLLOUT))
			return;
		p->connected = 1;
		for (uint64_t q = 1; q <= p->seq; q++) {
			int cl = asker_of(k, q);

			if (cl >= 0 && link_send(k, (unsigned int)cl) < 0)
				return;
		}
		return;
	}
	r = recv(p->fd, p->line + p->llen, sizeof(p->line) - 1 - p->llen, 0);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r <= 0) {
		link_done(k, ANS_NOSERVICE, r == 0 ? "closed, no answer" : strerror(errno));
		return;
	}
	p->llen += (unsigned int)r;
	p->line[p->llen] = '\0';
	while ((nl = strchr(p->line, '\n')) != NULL) {
		size_t len = (size_t)(nl - p->line) + 1;
		enum answer ans;
		int cl;

		if (strncmp(p->line, RB2_SOCKD_PEER_RB2, len) == 0)
			ans = ANS_RB2;
		else if (strncmp(p->line, RB2_SOCKD_PEER_YES, len) == 0)
			ans = ANS_LISTENER;
		else if (strncmp(p->line, RB2_SOCKD_PEER_NO, len) == 0)
			ans = ANS_NOLISTENER;
		else if (strncmp(p->line, RB2_SOCKD_PEER_BUSY, len) == 0)
			ans = ANS_BUSY;
		else
			break;
		if (p->answered == p->seq)
			break;               /* an answer nobody asked for */
		cl = asker_of(k, ++p->answered);
		memmove(p->line, nl + 1, p->llen - len + 1);
		p->llen -= (unsigned int)len;
		if (cl >= 0)
			tell((unsigned int)cl, ans, NULL);
		if (ans == ANS_BUSY) {
			/* The other service closes now: the rest go again. */
			link_done(k, ANS_BUSY, NULL);
			return;
		}
	}
	if (nl != NULL || p->llen >= sizeof(p->line) - 1) {
		link_done(k, ANS_NOSERVICE, "not an rb2-sockd answer");
		return;
	}
	p->deadline_ms = now_ms() + (p->answered < p->seq ? PEER_TIMEOUT_MS : link_idle_ms);
}

/* Expect the connection from @client (the asking host, the client's port)
 * to @server. @return 0 when the table is full of live entries. */
static int
expect_add(const struct sockaddr_storage *client, const struct sockaddr_storage *server)
{
	uint64_t now = now_ms();

	for (unsigned int k = 0; k < EXPECT_MAX; k++) {
		if (expects[k].until_ms > now)
			continue;
		expects[k].client = *client;
		expects[k].server = *server;
		expects[k].until_ms = now + RB2_SOCKD_EXPECT_MS;
		return 1;
	}
	return 0;
}

/* The accepted connection from @client to @server was expected: forget it. */
static int
expect_take(const struct sockaddr_storage *client, const struct sockaddr_storage *server)
{
	uint64_t now = now_ms();

	for (unsigned int k = 0; k < EXPECT_MAX; k++) {
		struct expect *e = &expects[k];

		if (e->until_ms > now && port_of(&e->client) == port_of(client) &&
		    same_ip(&e->client, client) && port_of(&e->server) == port_of(server) &&
		    same_ip(&e->server, server)) {
			e->until_ms = 0;
			return 1;
		}
	}
	return 0;
}

/* Another host's service asks (K_REMOTE @k): whether a program under
 * rb2-run listens at the port each question names, on the address it
 * reached us at. One line each, answered in order; the connection stays
 * for the next (REMOTE_IDLE_MS). */
static void
on_remote(unsigned int k)
{
	struct conn *q = &conns[k];
	ssize_t r = recv(q->fd, q->line + q->llen, sizeof(q->line) - 1 - q->llen, 0);
	char *nl;

	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r <= 0) {
		drop(k);
		return;
	}
	q->llen += (unsigned int)r;
	q->line[q->llen] = '\0';
	while ((nl = strchr(q->line, '\n')) != NULL || q->llen >= sizeof(q->line) - 1) {
		struct sockaddr_storage here, from;
		unsigned int port, cport;
		size_t len = nl != NULL ? (size_t)(nl - q->line) + 1 : 0;
		char tail;
		const char *ans;
		int l;

		if (nl == NULL ||
		    sscanf(q->line, "rb2-sockd 2 listener %u from %u%c", &port, &cport, &tail) != 3 ||
		    tail != '\n' || port == 0 || port > 65535 || cport > 65535 ||
		    addrs_of(q->fd, &here, &from) != 0) {
			char who[INET6_ADDRSTRLEN + 8] = "another host";

			if (addrs_of(q->fd, &here, &from) == 0)
				inet_ntop(from.ss_family, from.ss_family == AF_INET ?
					  (void *)&((struct sockaddr_in *)&from)->sin_addr :
					  (void *)&((struct sockaddr_in6 *)&from)->sin6_addr,
					  who, sizeof(who));
			log_refusal(who, "not an rb2-sockd question");
			n_bad++;
			drop(k);
			return;
		}
		norm(&here);
		norm(&from);
		set_port(&here, (uint16_t)port);
		set_port(&from, (uint16_t)cport);
		l = stop_at_ms != 0 ? -1 : listener_at(&here);
		ans = l < 0 ? RB2_SOCKD_PEER_NO :
			cport != 0 && conns[l].verbs && expect_add(&from, &here) ?
			RB2_SOCKD_PEER_RB2 : RB2_SOCKD_PEER_YES;
		if (send(q->fd, ans, strlen(ans), MSG_NOSIGNAL | MSG_DONTWAIT) !=
		    (ssize_t)strlen(ans)) {
			drop(k);             /* the asker sees the end, and asks again */
			return;
		}
		n_answered++;
		q->answered++;
		/* Idle from now: a question half sent keeps this bound. */
		q->deadline_ms = now_ms() + REMOTE_IDLE_MS;
		memmove(q->line, nl + 1, q->llen - len + 1);
		q->llen -= (unsigned int)len;
	}
}

/* A link from another host's service, unless MAX_REMOTE are open: the
 * hosts of the network cannot take the service from this host's programs. */
static void
accept_remote(void)
{
	unsigned int open = 0;
	int c = accept4(peer_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (c < 0)
		return;
	for (unsigned int k = 0; k < nconns; k++)
		open += conns[k].kind == K_REMOTE;
	if (open >= MAX_REMOTE) {
		log_refusal("another host",
			    "more than " STR(MAX_REMOTE) " links from other hosts open at once");
		n_bad++;
		(void)!send(c, RB2_SOCKD_PEER_BUSY, strlen(RB2_SOCKD_PEER_BUSY), MSG_NOSIGNAL);
		close(c);
		return;
	}
	if (add_tcp(c, K_REMOTE, -1, REQUEST_TIMEOUT_MS) < 0)
		close(c);
}

/* Where other hosts' services ask: every address, on TCP @p port. Not
 * fatal: without it, other hosts see no rb2-run listener here. */
static void
open_peer_listener(unsigned int port)
{
	struct sockaddr_in6 s6 = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port),
				   .sin6_addr = IN6ADDR_ANY_INIT };
	struct sockaddr_in s4 = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_ANY) };
	int one = 1, zero = 0;
	int fd = socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd >= 0) {
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, (struct sockaddr *)&s6, sizeof(s6)) != 0) {
			close(fd);
			fd = -1;
		}
	}
	if (fd < 0) {                   /* no IPv6 here */
		fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd >= 0) {
			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
			if (bind(fd, (struct sockaddr *)&s4, sizeof(s4)) != 0) {
				close(fd);
				fd = -1;
			}
		}
	}
	if (fd < 0 || listen(fd, 2 * MAX_REMOTE) != 0) {
		say("notice: cannot answer other hosts' services at TCP port %u (%s): they see no "
		    "rb2-run listener here", port, strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	peer_fd = fd;
}

static void
on_connect(unsigned int i, int fd, const struct rb2_sockd_msg *m)
{
	struct conn *c = &conns[i];
	struct sockaddr_storage local;
	struct rb2_sockd_msg go;
	int l;

	c->to = m->addr;
	norm(&c->to);
	c->pipelined = (m->flags & RB2_SOCKD_F_PIPE) != 0;
	c->self_asked = 0;
	if (fd < 0 || addrs_of(fd, &local, NULL) != 0 || port_of(&local) == 0 ||
	    (c->to.ss_family != AF_INET && c->to.ss_family != AF_INET6)) {
		if (fd >= 0)
			close(fd);
		refuse(i, "CONNECT without a bound TCP socket and an IP address");
		return;
	}
	close(fd);
	if (stop_at_ms != 0) {
		plain(i, &n_plain_stopping, "%s", stopping_why);
		return;
	}
	if (!local_addr(&c->to)) {
		if (c->pipelined) {  /* its SYN is on its way: too late to ask */
			refuse(i, "CONNECT without waiting for GO, to another host");
			return;
		}
		c->cport = port_of(&local);
		c->verbs = (m->flags & RB2_SOCKD_F_VERBS) != 0;
		ask_host(i);
		return;
	}
	l = listener_at(&c->to);
	if (l < 0) {
		plain(i, &n_plain_nolistener, "no program under rb2-run listens there");
		return;
	}
	c->cport = port_of(&local);
	c->kind = K_CLIENT;
	c->peer = -1;
	c->deadline_ms = now_ms() + accept_timeout_ms;
	if (c->pipelined)
		return;              /* connecting already: its CONNECTED follows */
	go = (struct rb2_sockd_msg){ .magic = RB2_SOCKD_MAGIC, .version = RB2_SOCKD_VERSION,
				     .op = RB2_SOCKD_GO,
				     .flags = conns[l].pid == c->pid ? RB2_SOCKD_F_SELF : 0 };
	(void)rb2_sockd_send(c->fd, &go, NULL, 0);
}

/* The client @cl is connected and @sv accepted it: both are here. */
static void
try_pair(unsigned int cl)
{
	for (unsigned int k = 0; k < nconns; k++) {
		struct conn *s = &conns[k];

		if (s->kind == K_SERVER && s->peer < 0 && s->cport == conns[cl].cport &&
		    same_ip(&s->to, &conns[cl].to) && port_of(&s->to) == port_of(&conns[cl].to)) {
			pair(cl, k);
			return;
		}
	}
}

static void
on_connected(unsigned int i, int fd, uint32_t flags)
{
	struct conn *c = &conns[i];
	struct sockaddr_storage local, peer;
	int l;

	if (c->kind != K_CLIENT || fd < 0 || addrs_of(fd, &local, &peer) != 0 ||
	    port_of(&local) != c->cport || port_of(&peer) != port_of(&c->to) ||
	    !same_ip(&peer, &c->to)) {
		if (fd >= 0)
			close(fd);
		refuse(i, c->kind != K_CLIENT ? "CONNECTED without CONNECT" :
		       "CONNECTED names another connection");
		return;
	}
	close(fd);
	/* The process that registered the listener, and holds it alone,
	 * connects to it: only its own accept can take the connection, to
	 * find one process at both ends (pair()), and a blocking connect
	 * made before that accept would wait out the accept timeout. Kernel
	 * TCP for both now, as the kernel's loopback answers at once; the
	 * accept learns why from the note (gone_why()). Whether another
	 * process holds the listener (a forking server's child, which may
	 * accept) only the asker knows (RB2_SOCKD_F_SELF). */
	l = listener_at(&c->to);
	/* A pipelined client learns only now that the listener is its own
	 * registration: it answers with a second CONNECTED. */
	if (c->pipelined && !c->self_asked && !c->connected && l >= 0 &&
	    conns[l].pid == c->pid) {
		struct rb2_sockd_msg go = { .magic = RB2_SOCKD_MAGIC,
					    .version = RB2_SOCKD_VERSION, .op = RB2_SOCKD_GO,
					    .flags = RB2_SOCKD_F_SELF };

		c->self_asked = 1;
		(void)rb2_sockd_send(c->fd, &go, NULL, 0);
		return;
	}
	if ((flags & RB2_SOCKD_F_SELF) && l >= 0 && conns[l].pid == c->pid) {
		gone_note(i, self_client);
		plain(i, &n_plain_self, "the server is this same process");
		return;
	}
	c->connected = 1;
	c->deadline_ms = now_ms() + accept_timeout_ms;
	try_pair(i);
}

static void
read_all_pending(void);

static void
on_accepted(unsigned int i, int fd)
{
	struct conn *c = &conns[i];
	struct sockaddr_storage local, peer;
	int found = 0;

	if (fd < 0 || addrs_of(fd, &local, &peer) != 0) {
		if (fd >= 0)
			close(fd);
		refuse(i, "ACCEPTED without a connected TCP socket");
		return;
	}
	close(fd);
	if (!local_addr(&peer)) {
		norm(&peer);
		norm(&local);
		if (expect_take(&peer, &local)) {
			n_remote++;
			reply(i, RB2_SOCKD_REMOTE, "another host: over rb2 (verbs)", NULL);
			drop(i);
			return;
		}
		plain(i, &n_plain_notlocal, "the client is on another host, and not under rb2-run "
		      "with an RDMA device");
		return;
	}
	c->kind = K_SERVER;
	c->cport = port_of(&peer);
	c->to = local;
	c->peer = -1;
	c->deadline_ms = now_ms() + accept_timeout_ms;
	/* A client under rb2-run sent CONNECT before it connected, so before
	 * this accept: read everything queued before deciding it is not. */
	for (int round = 0; round < 2 && !found; round++) {
		for (unsigned int k = 0; k < nconns && !found; k++) {
			struct conn *x = &conns[k];

			if (x->kind == K_CLIENT && x->cport == c->cport &&
			    same_ip(&x->to, &local) && port_of(&x->to) == port_of(&local)) {
				found = 1;
				if (x->connected)
					pair(k, i);
				/* else: its CONNECTED will pair them (try_pair()) */
			}
		}
		if (!found && round == 0)
			read_all_pending();
	}
	if (!found && conns[i].kind == K_SERVER) {
		const char *why = gone_why(i);

		plain(i, why == self_client ? &n_plain_self : stop_at_ms != 0 ? &n_plain_stopping :
		      &n_plain_noclient, "%s", why != NULL ? why : stop_at_ms != 0 ? stopping_why :
		      "the client is not under rb2-run");
	}
}

static void
on_message(unsigned int i)
{
	struct rb2_sockd_msg m;
	int fd, ret = rb2_sockd_recv(conns[i].fd, &m, &fd, 1);

	if (ret == -EAGAIN)
		return;
	if (ret != 0) {
		if (fd >= 0)
			close(fd);
		if (ret == -EPROTO) {
			refuse(i, "not an rb2-sockd message (size, magic or version)");
		} else {
			/* closed: a listener's end, or a client's */
			if (conns[i].kind == K_CLIENT && conns[i].connected)
				gone_note(i, "the client closed or shut it down before the pairing");
			drop(i);
		}
		return;
	}
	switch (m.op) {
	case RB2_SOCKD_LISTEN:
		if (conns[i].kind == K_NEW) {
			on_listen(i, fd, m.flags);
			return;
		}
		break;
	case RB2_SOCKD_CONNECT:
		if (conns[i].kind == K_NEW) {
			on_connect(i, fd, &m);
			return;
		}
		break;
	case RB2_SOCKD_CONNECTED:
		on_connected(i, fd, m.flags);
		return;
	case RB2_SOCKD_ACCEPTED:
		if (conns[i].kind == K_NEW) {
			on_accepted(i, fd);
			return;
		}
		break;
	case RB2_SOCKD_STATS: {
		char s[160];

		snprintf(s, sizeof(s), "{\"pid\":%d,\"pairs\":%" PRIu64 ",\"listeners\":%" PRIu64
			 ",\"plain\":%" PRIu64 ",\"bad\":%" PRIu64 ",\"arenas\":%u,"
			 "\"hosts_asked\":%" PRIu64 ",\"hosts_answered\":%" PRIu64
			 ",\"remote\":%" PRIu64 "}",
			 (int)getpid(), n_pairs, n_listeners, n_plain_nolistener +
			 n_plain_notlocal + n_plain_noaccept + n_plain_noclient + n_plain_fail +
			 n_plain_self + n_plain_remote + n_plain_stopping, n_bad, slot_fds, n_asked, n_answered, n_remote);
		reply(i, RB2_SOCKD_OK, s, NULL);
		drop(i);
		if (fd >= 0)
			close(fd);
		return;
	}
	default:
		break;
	}
	if (fd >= 0)
		close(fd);
	refuse(i, "request %u where none such is expected", (unsigned int)m.op);
}

static int add_conn(int fd);

/* Requests already queued: connections not yet accepted, and messages on
 * the open ones (non-blocking reads). */
static void
read_all_pending(void)
{
	int c;

	while (listen_fd >= 0 &&
	       (c = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0)
		add_conn(c);
	for (unsigned int k = 0; k < nconns; k++) {
		struct pollfd p = { .fd = conns[k].fd, .events = POLLIN };

		if (conns[k].kind == K_NEW && poll(&p, 1, 0) == 1)
			on_message(k);
	}
}

static void
expire(void)
{
	uint64_t now = now_ms();

	for (unsigned int i = 0; i < nconns; i++) {
		struct conn *c = &conns[i];

		if (c->kind == K_NEW && now >= c->deadline_ms) {
			refuse(i, "no request within %u ms", REQUEST_TIMEOUT_MS);
			continue;
		}
		if (c->kind == K_LINK && now >= c->deadline_ms) {
			if (c->answered < c->seq)
				link_done(i, ANS_NOSERVICE,
					  "no answer within " STR(PEER_TIMEOUT_MS) " ms");
			else
				drop(i);     /* idle */
			continue;
		}
		if (c->kind == K_REMOTE && c->answered > 0 && now >= c->deadline_ms) {
			drop(i);             /* idle */
			continue;
		}
		if (c->kind == K_REMOTE && now >= c->deadline_ms) {
			log_refusal("another host",
				    "no question within " STR(REQUEST_TIMEOUT_MS) " ms");
			n_bad++;
			drop(i);
			continue;
		}
		if ((c->kind == K_CLIENT || c->kind == K_SERVER) && now >= c->deadline_ms) {
			if (c->kind == K_CLIENT) {
				gone_note(i, "the client stopped waiting for this accept");
				plain(i, &n_plain_noaccept, "the server did not accept within %u ms",
				      accept_timeout_ms);
			}
			else
				plain(i, &n_plain_noaccept, "the client did not confirm within %u ms",
				      accept_timeout_ms);
		}
	}
}

/* Milliseconds until the next deadline, or -1: asleep until a request. */
static int
next_deadline(void)
{
	uint64_t now = now_ms(), first = slot_fds > 0 ? last_sweep_ms + 1000 : UINT64_MAX;

	for (unsigned int i = 0; i < nconns; i++)
		if ((conns[i].kind == K_NEW || conns[i].kind == K_CLIENT ||
		     conns[i].kind == K_SERVER || conns[i].kind == K_LINK ||
		     conns[i].kind == K_REMOTE) && conns[i].deadline_ms < first)
			first = conns[i].deadline_ms;
	if (first == UINT64_MAX)
		return -1;
	return first <= now ? 0 : (int)(first - now);
}

/* @p fd in the first free place, as @p kind of @p pid and @p uid, with
 * @p peer and a deadline @p timeout_ms away. @return its index, or -1. */
static int
conn_add(int fd, enum kind kind, pid_t pid, uid_t uid, int peer, unsigned int timeout_ms)
{
	unsigned int i;

	for (i = 0; i < nconns && conns[i].kind != K_FREE; i++)
		;
	if (i == MAX_CONNS)
		return -1;
	if (i == nconns)
		nconns++;
	memset(&conns[i], 0, sizeof(conns[i]));
	conns[i].fd = fd;
	conns[i].kind = kind;
	conns[i].pid = pid;
	conns[i].uid = uid;
	conns[i].peer = peer;
	conns[i].deadline_ms = now_ms() + timeout_ms;
	return (int)i;
}

static int
add_conn(int fd)
{
	struct ucred cr;
	socklen_t l = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &l) != 0) {
		close(fd);
		return -1;
	}
	/* One user cannot take every slot from the others (root, who owns
	 * the service, can). */
	if (cr.uid != 0) {
		unsigned int mine = 0;

		for (unsigned int k = 0; k < nconns; k++)
			mine += conns[k].kind != K_FREE && conns[k].uid == cr.uid;
		if (mine >= MAX_CONNS_PER_USER) {
			n_bad++;
			if (!cap_warned)
				say("uid %u has %u requests and registrations open: more are refused",
				    (unsigned int)cr.uid, mine);
			cap_warned = 1;
			close(fd);
			return -1;
		}
	}
	if (conn_add(fd, K_NEW, cr.pid, cr.uid, -1, REQUEST_TIMEOUT_MS) < 0) {
		close(fd);              /* every place taken */
		return -1;
	}
	return 0;
}

/* A TCP connection of the services' own (K_LINK, K_REMOTE), with @p peer
 * and a deadline @p timeout_ms away. @return its index, or -1. */
static int
add_tcp(int fd, enum kind kind, int peer, unsigned int timeout_ms)
{
	return conn_add(fd, kind, 0, (uid_t)-1 /* nobody on this host */, peer, timeout_ms);
}

static int
open_socket(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[sizeof(sa.sun_path)];
	/* Non-blocking: read_all_pending() accepts until there is none. */
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), c;
	char *slash;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash != NULL && slash != dir) {
		*slash = '\0';
		/* Root's is everybody's (SO_PEERCRED says who asks); a user's
		 * is the user's. */
		if (mkdir(dir, geteuid() == 0 ? 0755 : 0700) != 0 && errno != EEXIST) {
			fprintf(stderr, "rb2-sockd: cannot make %s: %s\n", dir, strerror(errno));
			return -1;
		}
	}
	/* One service per socket: a live one answers; a dead one's file goes. */
	c = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (c >= 0 && connect(c, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		fprintf(stderr, "rb2-sockd: already running at %s\n", path);
		close(c);
		close(fd);
		return -2;
	}
	if (c >= 0)
		close(c);
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 256) != 0) {
		fprintf(stderr, "rb2-sockd: cannot listen at %s: %s\n", path, strerror(errno));
		close(fd);
		return -1;
	}
	if (geteuid() == 0)
		chmod(path, 0666);
	return fd;
}

static int
ask(const char *path, uint16_t op, struct rb2_sockd_msg *out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct rb2_sockd_msg m = { .magic = RB2_SOCKD_MAGIC, .version = RB2_SOCKD_VERSION, .op = op };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0), got, ret;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		fprintf(stderr, "rb2-sockd: none running at %s (%s)\n", path, strerror(errno));
		return 1;
	}
	ret = rb2_sockd_send(fd, &m, NULL, 0);
	if (ret == 0)
		ret = rb2_sockd_recv(fd, out, &got, 1);
	close(fd);
	return ret == 0 ? 0 : 1;
}

/* What the service answered for and has not finished: requests still
 * unread, clients and servers waiting for their other end, questions out
 * to other hosts, and connections other hosts were told to expect. */
static int
pending(void)
{
	uint64_t now = now_ms();
	unsigned int n = 0;

	for (unsigned int k = 0; k < EXPECT_MAX; k++)
		n += expects[k].until_ms > now;
	for (unsigned int i = 0; i < nconns; i++)
		n += conns[i].kind == K_NEW || conns[i].kind == K_CLIENT ||
		     conns[i].kind == K_SERVER || conns[i].kind == K_ASKING;
	return (int)n;
}

/*
 * Whether the loop goes on. A stop (SIGTERM, SIGINT, --stop) does not end
 * what the service already answered for: a client that was told to go
 * ahead over rb2 waits for its pairing, and another host's client told
 * "rb2" waits 15 s for a stream that only this service can set up at the
 * server's accept (it would then time out where it could have been kernel
 * TCP). So the service first stops answering: other hosts' services find
 * its port closed, and new questions, local or from a link still open,
 * get "kernel TCP". It goes on serving what is pending() until none is
 * left, or RB2_SOCKD_EXPECT_MS at most; a second signal ends it at once.
 */
static int
serving(void)
{
	uint64_t now = now_ms();
	int n;

	if (stop == 0)
		return 1;
	if (stop > 1)
		return 0;
	n = pending();
	if (stop_at_ms == 0) {
		stop_at_ms = now;
		stop_until_ms = now + RB2_SOCKD_EXPECT_MS;
		if (peer_fd >= 0) {
			close(peer_fd);
			peer_fd = -1;
		}
		if (n > 0)
			say("stopping: %d connections answered for are still to be set up (at "
			    "most %u s; a second signal stops at once); new ones stay kernel TCP",
			    n, RB2_SOCKD_EXPECT_MS / 1000);
	}
	return n > 0 && now < stop_until_ms;
}

/* --stop: wait until the service @pid, asked to stop, is gone (it finishes
 * first what it answered for: serving()), so that a service started next
 * finds its socket free. Its socket's removal, its end or its zombie say
 * so; one that a stop cannot end (its second signal does) is named. */
static int
wait_gone(pid_t pid, const char *path)
{
	char proc[32], st[256], *rp;
	unsigned int i;

	snprintf(proc, sizeof(proc), "/proc/%d/stat", (int)pid);
	for (i = 0; i < (RB2_SOCKD_EXPECT_MS + 5000) / 20; i++) {
		FILE *f = fopen(proc, "re");
		size_t n = 0;

		if (f != NULL) {
			n = fread(st, 1, sizeof(st) - 1, f);
			fclose(f);
		}
		st[n] = '\0';
		rp = strrchr(st, ')');
		if (access(path, F_OK) != 0 || n == 0 || (rp != NULL && rp[1] == ' ' && rp[2] == 'Z'))
			return 0;
		usleep(20000);
	}
	fprintf(stderr, "rb2-sockd: pid %d still runs %u s after the stop: kill it again to end "
		"it at once\n", (int)pid, (RB2_SOCKD_EXPECT_MS + 5000) / 1000);
	return 1;
}

static void
on_signal(int sig)
{
	(void)sig;
	stop = stop + 1;
}

static void
usage(FILE *f)
{
	fprintf(f,
"usage: rb2-sockd [--socket PATH] [--daemon] [--accept-timeout-ms N] [--no-huge]\n"
"                 [--slots N] [--peer-port N] [--link-idle-ms N]\n"
"       rb2-sockd --stats | --stop [--socket PATH]\n"
"The host service of rb2-run: it pairs the two ends of each TCP connection\n"
"between programs under rb2-run on this host, and hands both a shared-memory\n"
"arena for the connection's bytes. It carries no data. rb2-run starts it\n"
"when none is running.\n"
"  --socket PATH          its unix socket (default: $RB2_SOCKD_PATH, else\n"
"                         /run/rb2/sockd.sock for root, else\n"
"                         $XDG_RUNTIME_DIR/rb2/sockd.sock or /tmp/rb2-UID/)\n"
"  --daemon               go to the background once listening; log to PATH.log\n"
"  --accept-timeout-ms N  how long a client's connect waits for the server's\n"
"                         accept before both stay kernel TCP (default 2000)\n"
"  --no-huge              4 KiB pages for the arenas even where hugepages are free\n"
"  --slots N              connections over rb2 open at once on this host (default\n"
"                         and most 65536: each has 4 MiB of address space at a\n"
"                         fixed place; a closed one's is reused)\n"
"  --peer-port N          the TCP port where this host's and other hosts'\n"
"                         services ask each other whether a program under\n"
"                         rb2-run listens at an address, and so whether the\n"
"                         connection goes over verbs (default %u for root's\n"
"                         service, which answers there on every address; 0 for\n"
"                         a user's: none asked, none answered)\n"
"  --link-idle-ms N       how long a link to another host's service, which\n"
"                         the next questions to that host share, stays idle\n"
"                         before this service closes it (0 to %u; default\n"
"                         $RB2_SOCKD_LINK_IDLE_MS, else %u; 0: a link per\n"
"                         question, to compare)\n"
"  --stats                print the running service's counters (JSON)\n"
"  --stop                 ask the running service to exit, and wait until it\n"
"                         has: it first sets up the connections it answered\n"
"                         for (at most %u s), answering new ones \"kernel TCP\"\n",
		RB2_SOCKD_PEER_PORT,
		LINK_IDLE_MS, LINK_IDLE_MS, RB2_SOCKD_EXPECT_MS / 1000);
}

/* link_idle_ms from @val, given as @what. @return 0, or 1: said why not. */
static int
link_idle_arg(const char *what, const char *val)
{
	char *end;
	unsigned long v = strtoul(val, &end, 10);

	if (*end != '\0' || end == val || v > LINK_IDLE_MS) {
		fprintf(stderr, "rb2-sockd: %s %s: give 0 (a link per question) to %u\n", what,
			val, LINK_IDLE_MS);
		return 1;
	}
	link_idle_ms = (unsigned int)v;
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "daemon", no_argument, NULL, 'd' },
		{ "accept-timeout-ms", required_argument, NULL, 't' },
		{ "no-huge", no_argument, NULL, 'n' },
		{ "slots", required_argument, NULL, 'L' },
		{ "peer-port", required_argument, NULL, 'P' },
		{ "link-idle-ms", required_argument, NULL, 'I' },
		{ "stats", no_argument, NULL, 'S' },
		{ "stop", no_argument, NULL, 'X' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char path[108];
	const char *sock = NULL;
	int daemon_mode = 0, query = 0, opt, lfd, ready[2] = { -1, -1 };

	/* Root's service is the host's, and answers other hosts; a user's
	 * serves that user only. */
	peer_port = geteuid() == 0 ? RB2_SOCKD_PEER_PORT : 0;
	if (getenv("RB2_SOCKD_LINK_IDLE_MS") != NULL &&
	    link_idle_arg("RB2_SOCKD_LINK_IDLE_MS", getenv("RB2_SOCKD_LINK_IDLE_MS")) != 0)
		return 1;

	while ((opt = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (opt) {
		case 's': sock = optarg; break;
		case 'd': daemon_mode = 1; break;
		case 't': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);

			if (*end != '\0' || v == 0 || v > 600000) {
				fprintf(stderr, "rb2-sockd: --accept-timeout-ms %s: give 1 to 600000\n",
					optarg);
				return 1;
			}
			accept_timeout_ms = (unsigned int)v;
			break;
		}
		case 'n': arena_flags |= RB2_NOEAL_ARENA_NO_HUGE; break;
		case 'L': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);

			if (*end != '\0' || v == 0 || v > SLOTS_MAX) {
				fprintf(stderr, "rb2-sockd: --slots %s: give 1 to %u\n", optarg,
					SLOTS_MAX);
				return 1;
			}
			n_slots = (unsigned int)v;
			break;
		}
		case 'P': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);

			if (*end != '\0' || end == optarg || v > 65535) {
				fprintf(stderr, "rb2-sockd: --peer-port %s: give 0 (none) to 65535\n",
					optarg);
				return 1;
			}
			peer_port = (unsigned int)v;
			break;
		}
		case 'I':
			if (link_idle_arg("--link-idle-ms", optarg) != 0)
				return 1;
			break;
		case 'S': query = RB2_SOCKD_STATS; break;
		case 'X': query = -1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "rb2-sockd: unexpected argument '%s' (see --help)\n", argv[optind]);
		return 1;
	}
	if (sock != NULL)
		snprintf(path, sizeof(path), "%s", sock);
	else if (rb2_sockd_path(path, sizeof(path)) != 0) {
		fprintf(stderr, "rb2-sockd: the socket path is too long: set RB2_SOCKD_PATH\n");
		return 1;
	}
	if (query == RB2_SOCKD_STATS) {
		struct rb2_sockd_msg m;

		if (ask(path, RB2_SOCKD_STATS, &m) != 0)
			return 1;
		printf("%s\n", m.why);
		return 0;
	}
	if (query == -1) {
		struct rb2_sockd_msg m;
		long pid;

		if (ask(path, RB2_SOCKD_STATS, &m) != 0)
			return 1;
		if (sscanf(m.why, "{\"pid\":%ld", &pid) != 1 || pid <= 1 || kill((pid_t)pid, SIGTERM) != 0) {
			fprintf(stderr, "rb2-sockd: cannot stop it: %s\n", strerror(errno));
			return 1;
		}
		return wait_gone((pid_t)pid, path);
	}
	lfd = listen_fd = open_socket(path);
	if (lfd == -2)
		return 0;       /* one is running: nothing to do */
	if (lfd < 0)
		return 1;
	if (daemon_mode) {
		pid_t pid;

		if (pipe(ready) != 0)
			return 1;
		pid = fork();
		if (pid < 0)
			return 1;
		if (pid > 0) {
			char b;

			/* Back once the child is ready, so the caller can connect. */
			close(ready[1]);
			return read(ready[0], &b, 1) == 1 ? 0 : 1;
		}
		setsid();
		close(ready[0]);
		/* A daemon keeps none of its starter's descriptors: a pipe it
		 * held open (a caller capturing rb2-run's output, say) would
		 * never see its end. Its messages go to a log beside its
		 * socket. */
		{
			unsigned int lo = (unsigned int)(lfd < ready[1] ? lfd : ready[1]);
			unsigned int hi = (unsigned int)(lfd < ready[1] ? ready[1] : lfd);

			if (lo > 3)
				close_range(3, lo - 1, 0);
			if (hi > lo + 1)
				close_range(lo + 1, hi - 1, 0);
			close_range(hi + 1, ~0u, 0);
		}
		{
			char log[sizeof(path) + 8];

			snprintf(log, sizeof(log), "%s.log", path);
			if (freopen("/dev/null", "r", stdin) == NULL ||
			    freopen("/dev/null", "w", stdout) == NULL ||
			    freopen(log, "a", stderr) == NULL)
				return 1;
			setvbuf(stderr, NULL, _IOLBF, 0);
		}
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGPIPE, SIG_IGN);
	for (unsigned int k = 0; k < n_slots; k++)
		slot_fd[k] = -1;
	/* The slots' page tables kept from one arena to the next (an arena is
	 * made, and mapped here, for each connection); without, as before. */
	(void)rb2_noeal_reserve(RB2_STREAM_ARENA_BASE, (size_t)n_slots * RB2_STREAM_ARENA_SIZE);
	/* One fd kept per open connection: as many as the hard limit allows. */
	{
		struct rlimit rl;

		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max;
			(void)setrlimit(RLIMIT_NOFILE, &rl);
		}
	}
	if (peer_port != 0)
		open_peer_listener(peer_port);
	say("listening at %s (accept timeout %u ms); other hosts' services: %s %u", path,
	    accept_timeout_ms, peer_port == 0 ? "none asked, none answered, port" :
	    peer_fd >= 0 ? "asked and answered at TCP port" : "asked (not answered) at TCP port",
	    peer_port);
	if (ready[1] >= 0) {
		if (write(ready[1], "r", 1) != 1)
			return 1;
		close(ready[1]);
	}
	stock_start();
	while (serving()) {
		static struct pollfd p[MAX_CONNS + 2];
		unsigned int map[MAX_CONNS + 2], n;
		int r, wait_ms;

		p[0] = (struct pollfd){ .fd = lfd, .events = POLLIN };
		/* -1 (none): poll ignores it */
		p[1] = (struct pollfd){ .fd = peer_fd, .events = POLLIN };
		n = 2;
		for (unsigned int i = 0; i < nconns; i++)
			if (conns[i].kind != K_FREE) {
				p[n] = (struct pollfd){ .fd = conns[i].fd, .events =
					conns[i].kind == K_LINK && !conns[i].connected ?
					POLLOUT : POLLIN };
				map[n++] = i;
			}
		wait_ms = next_deadline();
		/* Stopping: a look every 50 ms at what is left (pending()). */
		if (stop_at_ms != 0 && (wait_ms < 0 || wait_ms > 50))
			wait_ms = 50;
		r = poll(p, n, wait_ms);
		if (r < 0 && errno != EINTR)
			break;
		if (r > 0 && (p[0].revents & POLLIN)) {
			int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

			if (c >= 0)
				add_conn(c);
		}
		for (unsigned int k = 2; r > 0 && k < n; k++) {
			struct conn *c = &conns[map[k]];

			if (p[k].revents == 0 || c->kind == K_FREE || c->fd != p[k].fd)
				continue;
			if (c->kind == K_LINK)
				on_link(map[k], p[k].revents);
			else if (c->kind == K_REMOTE)
				on_remote(map[k]);
			else
				on_message(map[k]);
		}
		/* After the questions that ended: their places are free. */
		if (r > 0 && (p[1].revents & POLLIN))
			accept_remote();
		expire();
		sweep();
	}
	if (stop_at_ms != 0 && pending() > 0)
		say("stopped with %d connections answered for not set up: %s", pending(),
		    stop > 1 ? "a second signal" : "they did not come within the bound");
	say("exiting: %" PRIu64 " connections paired, %" PRIu64 " on arenas zeroed ahead, %"
	    PRIu64 " with none ready", n_pairs, n_stock_used, n_stock_short);
	unlink(path);
	return 0;
}
