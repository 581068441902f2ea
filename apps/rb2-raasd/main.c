/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * rb2-raasd: the host service (RaaS's model). A DPDK primary; applications
 * are its secondaries and join it with one channel pair each over shm
 * (rb2_conn_service_join()). Other hosts' services are its peers, one
 * channel pair each over verbs (one RC QP each way, shared by every
 * connection of every application to that host). It relays connections
 * with lib/conn's relay core (rb2_conn_relay.h, where the design is):
 * this file holds the options, the EAL, the telemetry commands, and how
 * links are made (applications' joins, peer services).
 *
 *   rb2-raasd [EAL args] -- [--host-id N] [--listen IP:PORT]
 *             [--peer [ID@]IP:PORT]... [--transport SPEC] [--max-relays N]
 *             [--queue-kb N]
 *
 * A link that fails (an application died, a peer service or its host) has
 * every connection through it reset at the other end, with the reason.
 * Telemetry: /rb2/raasd/info, /rb2/raasd/links (each application and peer,
 * with its connections).
 */

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_malloc.h>
#include <rte_ring.h>
#include <rte_telemetry.h>

#include <rb2_conn_relay.h>
#include <rb2_conn_service.h>
#include <rb2_lcore.h>

#include "../common/app_opt.h"

/* The service: its relay core (lib/conn) and what only it needs. */
static struct {
	struct rb2_conn_relay_params rp;
	struct rb2_conn_relay *R;
	enum rb2_head_sync peer_head;   /* --peer-sync: the peer links' policies */
	enum rb2_tail_sync peer_tail;
	volatile sig_atomic_t stop;
} S;

static void
on_signal(int sig __rte_unused)
{
	S.stop = 1;
}

static void
join(struct rb2_xport *xp, struct rb2_conn_service_join *req)
{
	char up[RB2_CHAN_NAMESIZE], down[RB2_CHAN_NAMESIZE];
	struct rb2_conn_ep_params ep;
	struct rb2_conn_ep *cep = NULL;
	struct rb2_chan_params p;
	struct rb2_tx *tx;
	struct rb2_rx *rx;
	int ret = -EINVAL;

	snprintf(up, sizeof(up), "%s.u", req->name);
	snprintf(down, sizeof(down), "%s.d", req->name);
	rb2_conn_service_chan_params(&p);
	rx = rb2_rx_create(up, xp, &p);
	tx = rb2_tx_create(down, xp, &p);
	rb2_conn_ep_params_init(&ep);
	ep.max_conns = 1;           /* its connections are relayed, not held */
	ep.backlog = 1;
	if (rx == NULL || tx == NULL || rb2_rx_connect(rx, up, 2000) != 0 ||
	    rb2_tx_connect(tx, down, 2000) != 0 ||
	    (cep = rb2_conn_ep_create(req->name, tx, rx, &ep)) == NULL ||
	    (ret = rb2_conn_relay_add(S.R, cep, req->name, req->pid, 0)) < 0) {
		fprintf(stderr, "rb2-raasd: cannot take application %s (pid %u): %s\n",
			req->name, req->pid, ret == -ENOSPC ? "too many applications" :
			ret == -ENOMEM ? "out of memory" : rte_strerror(rte_errno));
		if (cep != NULL) {
			rb2_conn_ep_destroy(cep);
		} else {
			rb2_tx_destroy(tx);
			rb2_rx_destroy(rx);
		}
		rte_free(req);
		return;
	}
	printf("rb2-raasd: application %s (pid %u) joined\n", req->name, req->pid);
	fflush(stdout);
	rte_free(req);
}

/* Telemetry runs on its own thread: the relay's counters are read as the
 * loop writes them (rb2_conn_relay_stats_get()). */
static int
tel_info(const char *cmd __rte_unused, const char *params __rte_unused,
	 struct rte_tel_data *d)
{
	struct rb2_conn_relay_stats st;

	rb2_conn_relay_stats_get(S.R, &st);
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "links", st.links);
	rte_tel_data_add_dict_u64(d, "relays_in_use", st.relays_in_use);
	rte_tel_data_add_dict_u64(d, "max_relays", st.max_relays);
	rte_tel_data_add_dict_u64(d, "frames_relayed", st.frames_relayed);
	rte_tel_data_add_dict_u64(d, "unknown_frames", st.unknown_frames);
	rte_tel_data_add_dict_u64(d, "refused", st.refused);
	rte_tel_data_add_dict_u64(d, "resets", st.resets);
	rte_tel_data_add_dict_u64(d, "undeliverable", st.undeliverable);
	rte_tel_data_add_dict_u64(d, "queue_kb", S.rp.queue_bytes / 1024);
	rte_tel_data_add_dict_u64(d, "sources_held", st.sources_held);
	/* Lent buffers (RaaS's registered sends): loans out now, made, and
	 * how each reader got its bytes. Registrations: /rb2/mr_cache,
	 * raasd-tx.<peer host> and raasd-rx.<peer host>. */
	rte_tel_data_add_dict_u64(d, "loans_in_use", st.loans_in_use);
	rte_tel_data_add_dict_u64(d, "max_loans", st.max_loans);
	rte_tel_data_add_dict_u64(d, "lent", st.lent);
	rte_tel_data_add_dict_u64(d, "lent_bytes", st.lent_bytes);
	rte_tel_data_add_dict_u64(d, "copied_here", st.copied_here);
	rte_tel_data_add_dict_u64(d, "copied_here_bytes", st.copied_here_bytes);
	rte_tel_data_add_dict_u64(d, "reads", st.reads);
	rte_tel_data_add_dict_u64(d, "read_bytes", st.read_bytes);
	rte_tel_data_add_dict_u64(d, "loans_failed", st.loans_failed);
	rte_tel_data_add_dict_u64(d, "bad_lend_frames", st.bad_lend_frames);
	/* One channel pair per link (application or peer service), whatever
	 * the number of connections through it. */
	rte_tel_data_add_dict_u64(d, "host_id", S.rp.host_id);
	return 0;
}

/*
 * A channel pair to a peer service: our sender to its --listen, its sender
 * to ours. Each side listens for the other's sender and connects its own;
 * the one with the smaller host id connects first, so that two services
 * starting together do not both wait (and a set of them, each taking its
 * peers in order, neither).
 */
static int
peer_link(struct rb2_xport *xp, uint32_t id, const char *addr, const char *listen)
{
	char in[RB2_CHAN_NAMESIZE], out[RB2_CHAN_NAMESIZE];
	struct rb2_conn_ep_params ep;
	struct rb2_conn_ep *cep = NULL;
	struct rb2_chan_params p;
	char name[RB2_CONN_RELAY_NAMESIZE];
	struct rb2_tx *tx;
	struct rb2_rx *rx;
	int ret = -1;

	snprintf(in, sizeof(in), "peer%u.i", id);
	snprintf(out, sizeof(out), "peer%u.o", id);
	rb2_conn_service_chan_params(&p);
	p.head_sync = S.peer_head;
	p.tail_sync = S.peer_tail;
	rx = rb2_rx_create(in, xp, &p);
	tx = rb2_tx_create(out, xp, &p);
	if (rx == NULL || tx == NULL)
		goto out;
	printf("rb2-raasd: connecting to peer service %u at %s (listening on %s)\n", id,
	       addr, listen);
	fflush(stdout);
	for (int first = 0; first < 2; first++) {
		if ((first == 0) == (S.rp.host_id < id)) {
			/* A minute for it to start, in attempts of seconds:
			 * an attempt must outlast a handshake on a loaded
			 * host. One that gave up after the passive side saw
			 * the link established would leave that side linked
			 * to a QP that is gone, and this one refused. */
			time_t until = time(NULL) + 60;

			do
				ret = rb2_tx_connect(tx, addr, 3000);
			while (ret != 0 && !S.stop && time(NULL) < until);
		} else {
			ret = rb2_rx_connect(rx, listen, 60000);
		}
		if (ret != 0)
			goto out;
	}
	rb2_conn_ep_params_init(&ep);
	ep.max_conns = 1;
	ep.backlog = 1;
	cep = rb2_conn_ep_create(out, tx, rx, &ep);
	if (cep == NULL)
		goto out;
	snprintf(name, sizeof(name), "%u@%s", id, addr);
	ret = rb2_conn_relay_add(S.R, cep, name, 0, id);
	if (ret < 0)
		goto out;
	printf("rb2-raasd: peer service %s linked\n", name);
	fflush(stdout);
	return 0;
out:
	fprintf(stderr, "rb2-raasd: no link to peer service %u at %s: %s\n", id, addr,
		ret == -ENOSPC ? "too many links" : ret != 0 ? strerror(-ret) :
		rte_strerror(rte_errno));
	if (cep != NULL) {
		rb2_conn_ep_destroy(cep);
	} else {
		rb2_tx_destroy(tx);
		rb2_rx_destroy(rx);
	}
	return -1;
}

/* "[ID@]IP:PORT": the host id defaults to the address, as a number. */
/* @return whether @p addr is IPv4:PORT, each part in its range. */
static int
addr_ok(const char *addr)
{
	unsigned int a, b, c, d, port;
	int n = 0;

	return sscanf(addr, "%3u.%3u.%3u.%3u:%5u%n", &a, &b, &c, &d, &port, &n) == 5 &&
	       addr[n] == '\0' && a < 256 && b < 256 && c < 256 && d < 256 && port > 0 &&
	       port < 65536;
}

static int
parse_peer(const char *spec, uint32_t *id, char *addr, size_t len)
{
	const char *at = strchr(spec, '@');
	unsigned int a, b, c, d;
	uint64_t v;

	snprintf(addr, len, "%s", at != NULL ? at + 1 : spec);
	if (!addr_ok(addr))
		return -1;
	if (at != NULL) {
		char num[24];

		snprintf(num, sizeof(num), "%.*s", (int)(at - spec), spec);
		if (app_parse_u64(num, &v) < 0 || v == 0 || v > UINT32_MAX)
			return -1;
		*id = (uint32_t)v;
		return 0;
	}
	if (sscanf(addr, "%u.%u.%u.%u:", &a, &b, &c, &d) != 4)
		return -1;
	*id = a << 24 | b << 16 | c << 8 | d;
	return 0;
}

static int
tel_links(const char *cmd __rte_unused, const char *params __rte_unused,
	  struct rte_tel_data *d)
{
	static struct rb2_conn_relay_link_stats ls[RB2_CONN_RELAY_MAX_LINKS];
	unsigned int n = rb2_conn_relay_links_get(S.R, ls, RTE_DIM(ls));

	/* One telemetry thread: the static array is its own. */
	rte_tel_data_start_dict(d);
	for (unsigned int i = 0; i < n; i++) {
		const struct rb2_conn_relay_link_stats *l = &ls[i];
		struct rte_tel_data *c = rte_tel_data_alloc();
		char key[sizeof(l->name)];

		/* Keys may hold only alphanumerics, '_' and '/': the name
		 * itself is in the entry. */
		for (size_t k = 0; k < sizeof(key); k++) {
			char ch = l->name[k];

			key[k] = ch == '\0' || isalnum((unsigned char)ch) || ch == '/' ? ch : '_';
			if (ch == '\0')
				break;
		}
		if (c == NULL)
			break;
		rte_tel_data_start_dict(c);
		rte_tel_data_add_dict_string(c, "name", l->name);
		rte_tel_data_add_dict_string(c, "kind", l->host ? "peer service" : "application");
		rte_tel_data_add_dict_u64(c, "pid", l->pid);
		rte_tel_data_add_dict_u64(c, "host_id", l->host);
		rte_tel_data_add_dict_u64(c, "connections", l->conns);
		/* Frames for it waiting for room in its ring; the most bytes
		 * that ever waited (what --queue-kb needs to be). */
		rte_tel_data_add_dict_u64(c, "queued_frames", l->queued_frames);
		rte_tel_data_add_dict_u64(c, "queue_peak_bytes", l->queue_peak_bytes);
		/* Frames (and bytes, headers included) it sent us and we
		 * put towards it, queued ones included. */
		rte_tel_data_add_dict_u64(c, "frames_in", l->frames_in);
		rte_tel_data_add_dict_u64(c, "bytes_in", l->bytes_in);
		rte_tel_data_add_dict_u64(c, "frames_out", l->frames_out);
		rte_tel_data_add_dict_u64(c, "bytes_out", l->bytes_out);
		/* One channel pair: over verbs, one QP each way; an
		 * application's is shm, no QP. */
		rte_tel_data_add_dict_u64(c, "channel_pairs", 1);
		rte_tel_data_add_dict_u64(c, "qps", l->host != 0 ? 2 : 0);
		rte_tel_data_add_dict_container(d, key, c, 0);
	}
	return 0;
}

static void
usage(FILE *f, const char *prog)
{
	fprintf(f,
"usage: %s [EAL args] -- [options]\n"
"\n"
"The host service: applications started as secondaries of it (the same\n"
"--file-prefix, --proc-type=secondary) join with rb2_conn_service_join() and\n"
"open connections through it.\n"
"\n"
"  --max-relays N       connections through the service at once (default 16384,\n"
"                       at most 32767)\n"
"  --max-loans N        buffers lent through the service at once (default 4096,\n"
"                       at most 65535); beyond, lenders wait\n"
"  --host-id N          this host's id in connects (default: the --listen IPv4\n"
"                       address as a number; applications may also use 0)\n"
"  --listen IP:PORT     where peer services connect to this one\n"
"  --peer [ID@]IP:PORT  a peer service (its --listen; ID: its --host-id, by\n"
"                       default its address); repeat for more\n"
"  --transport SPEC     the transport to peers (default verbs; RB2_VERBS_ARGS),\n"
"                       e.g. verbs,dev=rxe0,srq=4096\n"
"  --peer-sync H+T      the peer links' sync policy: head push|pull, tail\n"
"                       wt|imm|poll (default push+wt; every service must use\n"
"                       the same). With imm, receives come from the device's\n"
"                       shared receive queue where the transport has srq=N\n"
"  --queue-kb N         frames for a destination whose ring is full wait in a\n"
"                       queue of N KiB of its own, so that their source goes on\n"
"                       with its other connections (default 4096; 0: none, the\n"
"                       source waits)\n"
"  --help\n", prog);
}

/* Every numeric option's range (app_opt.h). */
static const struct app_num_opt num_opts[] = {
	{'r', 1, 32767}, {'l', 1, 65535}, {'H', 0, UINT32_MAX}, {'Q', 0, 1024 * 1024},
	{0, 0, 0},
};

/* The options after '--' (also told apart before it: rb2_app_run()). */
static const struct option lo[] = {
	{"max-relays", required_argument, NULL, 'r'},
	{"max-loans", required_argument, NULL, 'l'},
	{"host-id", required_argument, NULL, 'H'},
	{"listen", required_argument, NULL, 'L'},
	{"peer", required_argument, NULL, 'P'},
	{"transport", required_argument, NULL, 'T'},
	{"queue-kb", required_argument, NULL, 'Q'},
	{"peer-sync", required_argument, NULL, 'S'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

/* Everything after the EAL's start: @return the exit status. */
static int
raasd_main(int argc, char **argv)
{
	const char *listen = NULL, *spec = NULL, *peers[16];
	unsigned int npeers = 0;
	struct rb2_xport *pxp = NULL;
	struct rte_ring *ring;
	struct rb2_xport *xp;
	int opt;

	rb2_conn_relay_params_init(&S.rp);
	S.rp.name = "rb2-raasd";
	while ((opt = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		uint64_t v = 0;

		if (optarg != NULL && app_opt_num("rb2-raasd", lo, num_opts, opt, optarg, &v) < 0)
			return 2;
		switch (opt) {
		case 'r':
			S.rp.max_relays = (uint32_t)v;
			break;
		case 'l':
			S.rp.max_loans = (uint32_t)v;
			break;
		case 'H':
			S.rp.host_id = (uint32_t)v;
			break;
		case 'L':
			listen = optarg;
			break;
		case 'P':
			if (npeers == RTE_DIM(peers)) {
				fprintf(stderr, "rb2-raasd: at most %zu --peer\n", RTE_DIM(peers));
				return 2;
			}
			peers[npeers++] = optarg;
			break;
		case 'T':
			spec = optarg;
			break;
		case 'S': {
			const char *plus = strchr(optarg, '+');

			if (plus == NULL || (strncmp(optarg, "push+", 5) != 0 &&
					     strncmp(optarg, "pull+", 5) != 0) ||
			    (strcmp(plus + 1, "wt") != 0 && strcmp(plus + 1, "imm") != 0 &&
			     strcmp(plus + 1, "poll") != 0)) {
				fprintf(stderr, "rb2-raasd: --peer-sync %s: expected HEAD+TAIL, "
					"HEAD push or pull, TAIL wt, imm or poll (push+imm)\n", optarg);
				return 2;
			}
			S.peer_head = strncmp(optarg, "pull+", 5) == 0 ? RB2_HEAD_LAZY_PULL :
				RB2_HEAD_LAZY_PUSH;
			S.peer_tail = strcmp(plus + 1, "imm") == 0 ? RB2_TAIL_WRITE_IMM :
				strcmp(plus + 1, "poll") == 0 ? RB2_TAIL_POLL_MSG :
				RB2_TAIL_WRITE_TWICE;
			break;
		}
		case 'Q': {
			uint64_t kb = v;

			if (kb != 0 && kb < 256) {
				fprintf(stderr, "rb2-raasd: --queue-kb %s: 0 (none) or 256..1048576 "
					"(a queue holds at least two of the largest frames)\n", optarg);
				return 2;
			}
			S.rp.queue_bytes = (uint32_t)kb * 1024;
			break;
		}
		case 'h':
			usage(stdout, argv[0]);
			return 0;
		default:
			usage(stderr, argv[0]);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "rb2-raasd: unexpected argument '%s' (options start with --; "
			"rb2-raasd --help)\n", argv[optind]);
		return 2;
	}
	/* Its applications map its memory: DPDK shares only hugepage files. */
	if (!rte_eal_has_hugepages()) {
		fprintf(stderr, "rb2-raasd: --no-huge: its applications could not map its memory "
			"(DPDK multi-process shares hugepages): reserve some (usertools/"
			"rb2-hugepages.sh 1024) and drop --no-huge\n");
		return 2;
	}
	if (listen != NULL && !addr_ok(listen)) {
		fprintf(stderr, "rb2-raasd: --listen %s: IPv4:PORT expected, the port 1..65535\n",
			listen);
		return 2;
	}
	if (npeers > 0 && listen == NULL) {
		fprintf(stderr, "rb2-raasd: --peer needs --listen (where the peer connects back)\n");
		return 2;
	}
	if (S.rp.host_id == 0 && listen != NULL && parse_peer(listen, &S.rp.host_id, (char[64]){0}, 64) < 0) {
		fprintf(stderr, "rb2-raasd: --listen %s: IP:PORT (or give --host-id)\n", listen);
		return 2;
	}
	if (rte_eal_process_type() != RTE_PROC_PRIMARY) {
		fprintf(stderr, "rb2-raasd: must be the primary process of its group\n");
		return 2;
	}
	S.R = rb2_conn_relay_create(&S.rp);
	ring = rte_ring_create(RB2_CONN_SERVICE_RING, 64, rte_socket_id(), RING_F_SC_DEQ);
	xp = rb2_xport_open("shm", NULL);
	if (ring == NULL || xp == NULL || S.R == NULL) {
		fprintf(stderr, "rb2-raasd: cannot start: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	rte_telemetry_register_cmd("/rb2/raasd/info", tel_info,
		"Returns the service's applications, relays and counters. Takes no parameters");
	rte_telemetry_register_cmd("/rb2/raasd/links", tel_links,
		"Returns each application and peer service linked, with its connections. Takes no parameters");
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	/* A --transport is opened now, peers or not: one it cannot open is
	 * refused at start, not when a peer first needs it. */
	if (npeers > 0 || spec != NULL) {
		pxp = spec != NULL ? rb2_xport_open_spec(spec) :
			rb2_xport_open("verbs", getenv("RB2_VERBS_ARGS"));
		if (pxp == NULL) {
			fprintf(stderr, "rb2-raasd: --transport %s: cannot open it: %s (the "
				"log above says why)\n", spec != NULL ? spec : "verbs",
				rte_strerror(rte_errno));
			return 1;
		}
	}
	for (unsigned int i = 0; i < npeers; i++) {
		char addr[64];
		uint32_t id;

		if (parse_peer(peers[i], &id, addr, sizeof(addr)) < 0 || id == S.rp.host_id) {
			fprintf(stderr, "rb2-raasd: --peer %s: [ID@]IP:PORT, ID not this host's\n",
				peers[i]);
			return 2;
		}
		if (peer_link(pxp, id, addr, listen) < 0)
			return 1;
	}
	printf("rb2-raasd: ready (pid %d, host %u): %u relays, %u peer(s)\n", (int)getpid(),
	       S.rp.host_id, S.rp.max_relays, npeers);
	fflush(stdout);
	while (!S.stop) {
		void *req = NULL;

		/* Worker and Poller in one loop: take joins, then relay each
		 * link's frames as they come (rb2_conn_relay_poll()). */
		while (rte_ring_dequeue(ring, &req) == 0)
			join(xp, (struct rb2_conn_service_join *)req);
		rb2_conn_relay_poll(S.R);
	}
	rb2_conn_relay_destroy(S.R);
	rte_ring_free(ring);
	rb2_xport_close(xp);
	if (pxp != NULL)
		rb2_xport_close(pxp);
	return 0;
}

/* The usage with the name it is installed under. */
static void
app_usage(FILE *f)
{
	usage(f, "rb2-raasd");
}

int
main(int argc, char **argv)
{
	const struct rb2_app app = { .name = "rb2-raasd", .usage = app_usage, .options = lo };

	return rb2_app_run(&app, argc, argv, raasd_main);
}
