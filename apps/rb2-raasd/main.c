/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * rb2-raasd: the host service (RaaS's model). A DPDK primary; applications
 * are its secondaries and join it with one channel pair each
 * (rb2_conn_service_join()). It relays their connections: a connect names
 * a port (and a host: this one, for now); the service finds the
 * application listening there, gives the connection a relay id on each
 * side (the vQPN each application puts in its frames), and from then on
 * moves frames between the two links, rewriting only the id in the header.
 * Credits are end to end, so the service holds no data of its own.
 *
 *   rb2-raasd [EAL args] -- [--max-relays N] [--stats-interval S]
 *
 * An application whose link fails (it died) has every connection reset at
 * the other end, with the reason. Telemetry: /rb2/raasd/info.
 */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_malloc.h>
#include <rte_ring.h>
#include <rte_telemetry.h>

#include <rb2_conn_service.h>
#include <rb2_lcore.h>

#define MAX_LINKS 256
#define MAX_LISTENS 64

struct link {
	char name[RB2_CONN_SERVICE_NAMESIZE];
	uint32_t pid;
	struct rb2_conn_ep *ep;
	uint16_t listens[MAX_LISTENS];
	unsigned int nlistens;
	uint64_t frames_in, relays_opened;
};

/* A connection through the service: side 0 connected, side 1 accepted.
 * Its id on side s, the vQPN that side's application addresses it by, is
 * gen << 16 | idx << 1 | s. */
struct relay {
	struct link *l[2];
	uint32_t cd[2];                 /* each application's own descriptor */
	uint16_t gen;
	uint8_t used, fin[2];
};

static struct {
	struct link *links[MAX_LINKS];
	unsigned int nlinks;
	struct relay *relays;
	uint32_t max_relays;
	uint32_t *free_idx, nfree;
	uint64_t relayed, unknown, refused, resets, undeliverable;
	volatile sig_atomic_t stop;
} S;

static void
on_signal(int sig __rte_unused)
{
	S.stop = 1;
}

static inline uint32_t
relay_id(uint32_t idx, int side)
{
	return (uint32_t)S.relays[idx].gen << 16 | idx << 1 | (uint32_t)side;
}

/* The relay and side an id names, or NULL. */
static struct relay *
relay_of(uint32_t id, int *side)
{
	uint32_t idx = (id & 0xffff) >> 1;
	struct relay *r;

	if (idx >= S.max_relays)
		return NULL;
	r = &S.relays[idx];
	*side = (int)(id & 1);
	return r->used && r->gen == (id >> 16) ? r : NULL;
}

static void
relay_free(struct relay *r)
{
	r->used = 0;
	S.free_idx[S.nfree++] = (uint32_t)(r - S.relays);
}

/* Put a header-only control frame on @p l's ring. */
static int
send_ctrl(struct link *l, uint32_t cid, uint8_t type, uint16_t aux)
{
	uint8_t f[RB2_CONN_HDR_LEN];
	uint64_t h = (uint64_t)cid | (uint64_t)type << 32 | (uint64_t)aux << 48;

	memcpy(f, &h, sizeof(h));
	return rb2_conn_ep_forward(l->ep, f, sizeof(f));
}

static struct link *
listener(uint16_t port)
{
	for (unsigned int i = 0; i < S.nlinks; i++)
		for (unsigned int j = 0; j < S.links[i]->nlistens; j++)
			if (S.links[i]->listens[j] == port)
				return S.links[i];
	return NULL;
}

static int
syn_in(struct link *from, uint8_t *f, uint32_t len, uint16_t port)
{
	struct rb2_conn_hello h;
	struct link *to;
	struct relay *r;
	uint32_t idx;
	int ret;

	if (len != RB2_CONN_HDR_LEN + sizeof(h))
		return 0;                   /* the application's ep counts it */
	memcpy(&h, f + RB2_CONN_HDR_LEN, sizeof(h));
	to = h.host == 0 ? listener(port) : NULL;
	if (to == NULL || S.nfree == 0) {
		ret = send_ctrl(from, h.src_cd, RB2_CONN_FR_REFUSE, to == NULL ?
				RB2_CONN_REFUSE_NO_LISTENER : RB2_CONN_REFUSE_TOO_MANY);
		S.refused += ret == 0;
		return ret;
	}
	idx = S.free_idx[S.nfree - 1];
	r = &S.relays[idx];
	r->gen = (uint16_t)(r->gen % 0x7fff + 1);
	/* The acceptor addresses the connection as side 1's id. */
	uint32_t theirs = h.src_cd;
	h.src_cd = relay_id(idx, 1);
	h.host = 0;
	memcpy(f + RB2_CONN_HDR_LEN, &h, sizeof(h));
	ret = rb2_conn_ep_forward(to->ep, f, len);
	h.src_cd = theirs;                  /* as it was, for a retry */
	memcpy(f + RB2_CONN_HDR_LEN, &h, sizeof(h));
	if (ret < 0)
		return ret;
	S.nfree--;
	r->used = 1;
	r->l[0] = from;
	r->l[1] = to;
	r->cd[0] = theirs;
	r->cd[1] = UINT32_MAX;
	r->fin[0] = r->fin[1] = 0;
	from->relays_opened++;
	return 0;
}

/* Credits name the relay id; each entry goes to its relay's other side,
 * as a credit frame of its own (credits are cumulative: a retry after a
 * partial forward repeats nothing harmful). */
static int
credit_in(struct link *from, uint8_t *f, uint32_t len, uint16_t n)
{
	struct rb2_conn_credit cr;

	if (len != RB2_CONN_HDR_LEN + (uint32_t)n * sizeof(cr))
		return 0;
	for (uint16_t i = 0; i < n; i++) {
		uint8_t out[RB2_CONN_HDR_LEN + sizeof(cr)];
		uint64_t hdr = (uint64_t)RB2_CONN_CID_NONE | (uint64_t)RB2_CONN_FR_CREDIT << 32 |
			(uint64_t)1 << 48;
		struct relay *r;
		int side, ret;

		memcpy(&cr, f + RB2_CONN_HDR_LEN + i * sizeof(cr), sizeof(cr));
		r = relay_of(cr.cid, &side);
		if (r == NULL || r->l[side] != from || r->cd[!side] == UINT32_MAX)
			continue;           /* after both closed: nothing to deliver */
		cr.cid = r->cd[!side];
		memcpy(out, &hdr, sizeof(hdr));
		memcpy(out + RB2_CONN_HDR_LEN, &cr, sizeof(cr));
		ret = rb2_conn_ep_forward(r->l[!side]->ep, out, sizeof(out));
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* Every frame from an application's link (rb2_conn_relay_fn). */
static int
relay_frame(void *arg, struct rb2_conn_ep *ep __rte_unused, uint8_t *f, uint32_t len)
{
	struct link *from = arg;
	struct rb2_conn_hello h;
	uint32_t cid, orig;
	struct relay *r;
	uint16_t aux;
	uint8_t type;
	int side, ret;

	if (len < RB2_CONN_HDR_LEN)
		return 0;
	memcpy(&cid, f, 4);
	type = f[4];
	memcpy(&aux, f + 6, 2);
	from->frames_in++;
	switch (type) {
	case RB2_CONN_FR_LISTEN:
		if (from->nlistens < MAX_LISTENS && listener(aux) == NULL)
			from->listens[from->nlistens++] = aux;
		else
			fprintf(stderr, "rb2-raasd: %s: cannot listen on %u (taken, or %d ports)\n",
				from->name, aux, MAX_LISTENS);
		return 0;
	case RB2_CONN_FR_UNLISTEN:
		for (unsigned int j = 0; j < from->nlistens; j++)
			if (from->listens[j] == aux)
				from->listens[j] = from->listens[--from->nlistens];
		return 0;
	case RB2_CONN_FR_SYN:
		return syn_in(from, f, len, aux);
	case RB2_CONN_FR_CREDIT:
		return credit_in(from, f, len, aux);
	default:
		break;
	}
	r = relay_of(cid, &side);
	if (r == NULL || r->l[side] != from) {
		S.unknown++;
		return 0;
	}
	if (r->l[!side] == NULL) {
		/* The connector died before this accept: reset it here. */
		if (type == RB2_CONN_FR_SYNACK && len == RB2_CONN_HDR_LEN + sizeof(h)) {
			memcpy(&h, f + RB2_CONN_HDR_LEN, sizeof(h));
			ret = send_ctrl(from, h.src_cd, RB2_CONN_FR_RST, RB2_CONN_RST_PEER_GONE);
			if (ret == -EAGAIN)
				return ret;
		}
		relay_free(r);
		return 0;
	}
	if (type == RB2_CONN_FR_SYNACK) {
		if (side != 1 || len != RB2_CONN_HDR_LEN + sizeof(h))
			return 0;
		memcpy(&h, f + RB2_CONN_HDR_LEN, sizeof(h));
		r->cd[1] = h.src_cd;
		h.src_cd = relay_id((uint32_t)(r - S.relays), 0);
		memcpy(f + RB2_CONN_HDR_LEN, &h, sizeof(h));
	}
	/* The frame as it is, to the other side's descriptor. */
	orig = cid;
	memcpy(f, &r->cd[!side], 4);
	ret = rb2_conn_ep_forward(r->l[!side]->ep, f, len);
	memcpy(f, &orig, 4);
	if (ret == -EAGAIN) {
		if (type == RB2_CONN_FR_SYNACK)
			r->cd[1] = UINT32_MAX;
		return ret;
	}
	if (ret < 0) {
		/* Its link failed: the next pass resets this relay. */
		S.undeliverable++;
		return 0;
	}
	S.relayed++;
	if (type == RB2_CONN_FR_FIN)
		r->fin[side] = 1;
	if (type == RB2_CONN_FR_REFUSE || type == RB2_CONN_FR_RST || (r->fin[0] && r->fin[1]))
		relay_free(r);
	return 0;
}

/* An application's link failed: reset the other end of each of its
 * connections. @return 0, or -EAGAIN (some other end's ring is full:
 * again on the next pass). */
static int
link_gone(struct link *l)
{
	unsigned int n = 0;

	for (uint32_t i = 0; i < S.max_relays; i++) {
		struct relay *r = &S.relays[i];
		int side, other;

		if (!r->used || (r->l[0] != l && r->l[1] != l))
			continue;
		side = r->l[0] == l ? 0 : 1;
		other = !side;
		if (r->l[other] != NULL && r->l[other] != l && r->cd[other] == UINT32_MAX) {
			/* Its accept is still to come: answered with a reset. */
			r->l[side] = NULL;
			n++;
			continue;
		}
		if (r->l[other] != NULL && r->l[other] != l &&
		    send_ctrl(r->l[other], r->cd[other], RB2_CONN_FR_RST,
			      RB2_CONN_RST_PEER_GONE) == -EAGAIN)
			return -EAGAIN;
		relay_free(r);
		n++;
		S.resets++;
	}
	printf("rb2-raasd: application %s (pid %u) left: %u connection(s) reset at the "
	       "other end\n", l->name, l->pid, n);
	fflush(stdout);
	return 0;
}

static void
join(struct rb2_xport *xp, struct rb2_conn_service_join *req)
{
	char up[RB2_CHAN_NAMESIZE], down[RB2_CHAN_NAMESIZE];
	struct rb2_conn_ep_params ep;
	struct rb2_chan_params p;
	struct link *l = calloc(1, sizeof(*l));
	struct rb2_tx *tx;
	struct rb2_rx *rx;

	snprintf(up, sizeof(up), "%s.u", req->name);
	snprintf(down, sizeof(down), "%s.d", req->name);
	rb2_conn_service_chan_params(&p);
	rx = rb2_rx_create(up, xp, &p);
	tx = rb2_tx_create(down, xp, &p);
	rb2_conn_ep_params_init(&ep);
	ep.max_conns = 1;           /* its connections are relayed, not held */
	ep.backlog = 1;
	if (l == NULL || S.nlinks == MAX_LINKS || rx == NULL || tx == NULL ||
	    rb2_rx_connect(rx, up, 2000) != 0 || rb2_tx_connect(tx, down, 2000) != 0 ||
	    (l->ep = rb2_conn_ep_create(req->name, tx, rx, &ep)) == NULL) {
		fprintf(stderr, "rb2-raasd: cannot take application %s (pid %u): %s\n",
			req->name, req->pid, S.nlinks == MAX_LINKS ? "too many applications" :
			rte_strerror(rte_errno));
		if (l == NULL || l->ep == NULL) {
			rb2_tx_destroy(tx);
			rb2_rx_destroy(rx);
		}
		free(l);
		rte_free(req);
		return;
	}
	snprintf(l->name, sizeof(l->name), "%s", req->name);
	l->pid = req->pid;
	rb2_conn_ep_set_relay(l->ep, relay_frame, l);
	S.links[S.nlinks++] = l;
	printf("rb2-raasd: application %s (pid %u) joined\n", l->name, l->pid);
	fflush(stdout);
	rte_free(req);
}

static int
tel_info(const char *cmd __rte_unused, const char *params __rte_unused,
	 struct rte_tel_data *d)
{
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "applications", S.nlinks);
	rte_tel_data_add_dict_u64(d, "relays_in_use", S.max_relays - S.nfree);
	rte_tel_data_add_dict_u64(d, "max_relays", S.max_relays);
	rte_tel_data_add_dict_u64(d, "frames_relayed", S.relayed);
	rte_tel_data_add_dict_u64(d, "unknown_frames", S.unknown);
	rte_tel_data_add_dict_u64(d, "refused", S.refused);
	rte_tel_data_add_dict_u64(d, "resets", S.resets);
	rte_tel_data_add_dict_u64(d, "undeliverable", S.undeliverable);
	/* Over shm: one channel pair per application, whatever the number of
	 * its connections. */
	rte_tel_data_add_dict_u64(d, "channel_pairs", S.nlinks);
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
"  --help\n", prog);
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"max-relays", required_argument, NULL, 'r'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct rte_ring *ring;
	struct rb2_xport *xp;
	int ret, opt;

	ret = rb2_eal_init(argc, argv, 30);
	if (ret < 0) {
		fprintf(stderr, "rb2-raasd: EAL: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	argc -= ret;
	argv += ret;
	S.max_relays = 16384;
	while ((opt = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (opt) {
		case 'r':
			S.max_relays = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'h':
			usage(stdout, argv[0]);
			return 0;
		default:
			usage(stderr, argv[0]);
			return 2;
		}
	}
	if (S.max_relays == 0 || S.max_relays > 32767) {
		fprintf(stderr, "rb2-raasd: --max-relays %u: 1..32767\n", S.max_relays);
		return 2;
	}
	if (rte_eal_process_type() != RTE_PROC_PRIMARY) {
		fprintf(stderr, "rb2-raasd: must be the primary process of its group\n");
		return 2;
	}
	S.relays = calloc(S.max_relays, sizeof(*S.relays));
	S.free_idx = calloc(S.max_relays, sizeof(*S.free_idx));
	for (uint32_t i = 0; i < S.max_relays; i++)
		S.free_idx[i] = S.max_relays - 1 - i;
	S.nfree = S.max_relays;
	ring = rte_ring_create(RB2_CONN_SERVICE_RING, 64, rte_socket_id(), RING_F_SC_DEQ);
	xp = rb2_xport_open("shm", NULL);
	if (ring == NULL || xp == NULL || S.relays == NULL || S.free_idx == NULL) {
		fprintf(stderr, "rb2-raasd: cannot start: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	rte_telemetry_register_cmd("/rb2/raasd/info", tel_info,
		"Returns the service's applications, relays and counters. Takes no parameters");
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	printf("rb2-raasd: ready (pid %d): %u relays\n", (int)getpid(), S.max_relays);
	fflush(stdout);
	while (!S.stop) {
		void *req = NULL;

		/* Worker and Poller in one loop: take joins, then each link's
		 * frames (relayed as they come), then flush. */
		while (rte_ring_dequeue(ring, &req) == 0)
			join(xp, (struct rb2_conn_service_join *)req);
		for (unsigned int i = 0; i < S.nlinks; i++) {
			struct link *l = S.links[i];

			if (rb2_conn_ep_poll(l->ep) >= 0 || link_gone(l) < 0)
				continue;
			rb2_conn_ep_destroy(l->ep);
			free(l);
			S.links[i--] = S.links[--S.nlinks];
		}
		/* What was relayed onto links polled before it, out now. */
		for (unsigned int i = 0; i < S.nlinks; i++)
			rb2_conn_flush(S.links[i]->ep);
	}
	printf("rb2-raasd: stopping: %u application(s), %" PRIu64 " frames relayed\n",
	       S.nlinks, S.relayed);
	for (unsigned int i = 0; i < S.nlinks; i++) {
		rb2_conn_ep_destroy(S.links[i]->ep);
		free(S.links[i]);
	}
	rte_ring_free(ring);
	rb2_xport_close(xp);
	rte_eal_cleanup();
	return 0;
}
