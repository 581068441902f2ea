/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Connection endpoints in DPDK telemetry, readable while an app runs:
 *   dpdk-telemetry.py -f <file-prefix>
 *   --> /rb2/conn/endpoints
 *   --> /rb2/conn/endpoint,<name>
 *   --> /rb2/conn/connections,<name>[,<first slot>]
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_telemetry.h>

#include "rb2_conn_pvt.h"

static int
tel_endpoints(const char *cmd __rte_unused, const char *params __rte_unused,
	      struct rte_tel_data *d)
{
	struct rb2_conn_ep *ep;

	rte_tel_data_start_array(d, RTE_TEL_STRING_VAL);
	pthread_mutex_lock(&rb2_conn_eps.lock);
	TAILQ_FOREACH(ep, &rb2_conn_eps.eps, next)
		rte_tel_data_add_array_string(d, ep->name);
	pthread_mutex_unlock(&rb2_conn_eps.lock);
	return 0;
}

static int
tel_endpoint(const char *cmd __rte_unused, const char *params,
	     struct rte_tel_data *d)
{
	struct rb2_conn_ep_stats st;
	struct rb2_conn_ep *ep;
	int found = 0;

	if (params == NULL || params[0] == '\0')
		return -1;
	rte_tel_data_start_dict(d);
	pthread_mutex_lock(&rb2_conn_eps.lock);
	TAILQ_FOREACH(ep, &rb2_conn_eps.eps, next) {
		if (strcmp(ep->name, params) != 0)
			continue;
		found = 1;
		rte_tel_data_add_dict_string(d, "name", ep->name);
		/* The channel pair (and over verbs its QP pair) every
		 * connection of the endpoint shares. */
		rte_tel_data_add_dict_string(d, "tx_channel", rb2_tx_name(ep->tx));
		rte_tel_data_add_dict_string(d, "rx_channel", rb2_rx_name(ep->rx));
		rte_tel_data_add_dict_u64(d, "channel_pairs", 1);
		rte_tel_data_add_dict_u64(d, "max_conns", ep->p.max_conns);
		rte_tel_data_add_dict_u64(d, "window", ep->p.window);
		rte_tel_data_add_dict_u64(d, "max_msg", ep->p.max_msg);
		rb2_conn_ep_stats_get(ep, &st);
#define CONN_COUNTER_TEL(f) rte_tel_data_add_dict_u64(d, #f, st.f);
		RB2_CONN_EP_COUNTERS(CONN_COUNTER_TEL)
		break;
	}
	pthread_mutex_unlock(&rb2_conn_eps.lock);
	return found ? 0 : -1;
}

static const char *
state_name(uint8_t st)
{
	switch (st) {
	case RB2_CONN_ST_SYN_SENT: return "syn_sent";
	case RB2_CONN_ST_BACKLOG: return "backlog";
	case RB2_CONN_ST_OPEN: return "open";
	case RB2_CONN_ST_FAILED: return "failed";
	default: return "free";
	}
}

static void
add_conn(struct rte_tel_data *d, const struct rb2_conn_tel *t)
{
	struct rte_tel_data *x = rte_tel_data_alloc();
	char key[16];

	if (x == NULL)
		return;
	rte_tel_data_start_dict(x);
	rte_tel_data_add_dict_string(x, "state", state_name(t->state));
	rte_tel_data_add_dict_u64(x, "port", t->port);
	rte_tel_data_add_dict_u64(x, "peer_cd", t->peer_cd);
	rte_tel_data_add_dict_u64(x, "credit", t->credit);
	rte_tel_data_add_dict_u64(x, "tx_credit_used", t->tx_credit_used);
	rte_tel_data_add_dict_u64(x, "rx_msgs", t->rx_msgs);
	rte_tel_data_add_dict_u64(x, "rx_bytes", t->rx_bytes);
	rte_tel_data_add_dict_u64(x, "buffered", t->buffered);
	snprintf(key, sizeof(key), "%u", t->cd);
	if (rte_tel_data_add_dict_container(d, key, x, 0) != 0)
		rte_tel_data_free(x);
}

/* One request at a time: the endpoint answers the latest. */
static pthread_mutex_t tel_req_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t tel_seq;

/* How long an endpoint's lcore may take to poll and answer. */
#define TEL_WAIT_MS 200

/*
 * A page of an endpoint's connections, keyed by descriptor (the vQPN each
 * frame carries), copied by the endpoint's own lcore at its next poll: no
 * connection field is read from this thread. An endpoint nobody polls
 * (its application stopped polling) answers nothing and the reply says so.
 */
static int
tel_connections(const char *cmd __rte_unused, const char *params,
		struct rte_tel_data *d)
{
	char name[RB2_CONN_EP_NAMESIZE];
	const char *comma;
	struct rb2_conn_ep *ep;
	uint32_t first = 0, seq;
	int found = 0, answered = 0;

	if (params == NULL || params[0] == '\0')
		return -1;
	comma = strchr(params, ',');
	snprintf(name, sizeof(name), "%.*s", comma ? (int)(comma - params) : (int)strlen(params),
		 params);
	if (comma != NULL)
		first = (uint32_t)strtoul(comma + 1, NULL, 0);
	rte_tel_data_start_dict(d);
	pthread_mutex_lock(&tel_req_lock);
	/* The list lock keeps the endpoint alive while its lcore answers. */
	pthread_mutex_lock(&rb2_conn_eps.lock);
	TAILQ_FOREACH(ep, &rb2_conn_eps.eps, next) {
		struct rte_tel_data *conns;

		if (strcmp(ep->name, name) != 0)
			continue;
		found = 1;
		seq = ++tel_seq;
		atomic_store_explicit(&ep->tel_asked, (uint64_t)seq << 32 | first,
				      memory_order_release);
		for (int ms = 0; ms < TEL_WAIT_MS && !answered; ms++) {
			answered = atomic_load_explicit(&ep->tel_taken, memory_order_acquire) == seq;
			if (!answered)
				rte_delay_us_sleep(1000);
		}
		rte_tel_data_add_dict_string(d, "endpoint", ep->name);
		rte_tel_data_add_dict_u64(d, "conns_open",
					  atomic_load_explicit(&ep->ctr.conns_open, memory_order_relaxed));
		rte_tel_data_add_dict_u64(d, "window", ep->p.window);
		rte_tel_data_add_dict_u64(d, "first", first);
		if (!answered) {
			rte_tel_data_add_dict_string(d, "error",
				"the endpoint's lcore did not poll within 200 ms (rb2_conn_ep_poll)");
			break;
		}
		/* Where the next page starts; max_conns: no more. */
		rte_tel_data_add_dict_u64(d, "next", ep->tel_next);
		conns = rte_tel_data_alloc();
		if (conns == NULL)
			break;
		rte_tel_data_start_dict(conns);
		for (uint32_t i = 0; i < ep->tel_n; i++)
			add_conn(conns, &ep->tel[i]);
		if (rte_tel_data_add_dict_container(d, "connections", conns, 0) != 0)
			rte_tel_data_free(conns);
		break;
	}
	pthread_mutex_unlock(&rb2_conn_eps.lock);
	pthread_mutex_unlock(&tel_req_lock);
	return found ? 0 : -1;
}

RTE_INIT(rb2_conn_telemetry_init)
{
	rte_telemetry_register_cmd("/rb2/conn/endpoints", tel_endpoints,
		"Lists the connection endpoints of this process. Takes no parameters");
	rte_telemetry_register_cmd("/rb2/conn/endpoint", tel_endpoint,
		"Returns an endpoint's parameters and counters. Parameters: endpoint name");
	rte_telemetry_register_cmd("/rb2/conn/connections", tel_connections,
		"Returns an endpoint's connections (32 a reply), each with its state, credit and counts. Parameters: endpoint name[,first slot]");
}
