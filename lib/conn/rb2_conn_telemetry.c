/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Connection endpoints in DPDK telemetry, readable while an app runs:
 *   dpdk-telemetry.py -f <file-prefix>
 *   --> /rb2/conn/endpoints
 *   --> /rb2/conn/endpoint,<name>
 */

#include <string.h>

#include <rte_common.h>
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
		rte_tel_data_add_dict_string(d, "tx_channel", ep->tx->h.name);
		rte_tel_data_add_dict_string(d, "rx_channel", ep->rx->h.name);
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

RTE_INIT(rb2_conn_telemetry_init)
{
	rte_telemetry_register_cmd("/rb2/conn/endpoints", tel_endpoints,
		"Lists the connection endpoints of this process. Takes no parameters");
	rte_telemetry_register_cmd("/rb2/conn/endpoint", tel_endpoint,
		"Returns an endpoint's parameters and counters. Parameters: endpoint name");
}
