/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Channel stats in DPDK telemetry, readable while an app runs:
 *   dpdk-telemetry.py -f <file-prefix>
 *   --> /rb2/channels
 *   --> /rb2/channel,<name>
 */

#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_telemetry.h>

#include "rb2_chan_pvt.h"

static int
tel_channels(const char *cmd __rte_unused, const char *params __rte_unused,
	     struct rte_tel_data *d)
{
	struct rb2_chan_half *h, *o;

	rte_tel_data_start_array(d, RTE_TEL_STRING_VAL);
	pthread_mutex_lock(&rb2_chan_list.lock);
	TAILQ_FOREACH(h, &rb2_chan_list.halves, next) {
		int dup = 0;

		/* A channel whose two halves live in this process is listed
		 * once. */
		for (o = TAILQ_FIRST(&rb2_chan_list.halves); o != h; o = TAILQ_NEXT(o, next))
			dup |= strcmp(o->name, h->name) == 0;
		if (!dup)
			rte_tel_data_add_array_string(d, h->name);
	}
	pthread_mutex_unlock(&rb2_chan_list.lock);
	return 0;
}

#define TEL_STAT(n, desc) \
	rte_tel_data_add_dict_u64(c, #n, atomic_load_explicit(&s->n, memory_order_relaxed));

static void
add_params(struct rte_tel_data *d, const struct rb2_chan_half *h)
{
	const struct rb2_chan_params *p = &h->p;

	rte_tel_data_add_dict_string(d, "transport", rb2_xport_name(h->xp));
	rte_tel_data_add_dict_u64(d, "slots", p->slots);
	rte_tel_data_add_dict_u64(d, "slot_size", p->slot_size);
	rte_tel_data_add_dict_u64(d, "alpha", p->alpha);
	rte_tel_data_add_dict_u64(d, "beta", p->beta);
	rte_tel_data_add_dict_u64(d, "gamma", p->gamma);
	rte_tel_data_add_dict_u64(d, "msg_size", p->msg_size);
	rte_tel_data_add_dict_string(d, "head_sync", h->head->name);
	rte_tel_data_add_dict_string(d, "tail_sync", h->tail->name);
	rte_tel_data_add_dict_u64(d, "flags", p->flags);
}

static int
tel_channel(const char *cmd __rte_unused, const char *params,
	    struct rte_tel_data *d)
{
	struct rb2_chan_half *h;
	int found = 0;

	if (params == NULL || params[0] == '\0')
		return -1;
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_string(d, "name", params);
	pthread_mutex_lock(&rb2_chan_list.lock);
	TAILQ_FOREACH(h, &rb2_chan_list.halves, next) {
		struct rte_tel_data *c;

		if (strcmp(h->name, params) != 0 || (c = rte_tel_data_alloc()) == NULL)
			continue;
		if (!found)
			add_params(d, h);
		found = 1;
		rte_tel_data_start_dict(c);
		if (h->is_tx) {
			const struct rb2_tx *tx = rb2_half_tx(h);
			const struct rb2_tx_stats *s = &tx->stats;

			RB2_TX_STATS(TEL_STAT)
			rte_tel_data_add_dict_u64(c, "tail", RB2_POS_READ(tx->tail));
			rte_tel_data_add_dict_u64(c, "pub_tail", RB2_POS_READ(tx->pub_tail));
			rte_tel_data_add_dict_u64(c, "load_store", h->loadstore);
			rte_tel_data_add_dict_container(d, "tx", c, 0);
		} else {
			const struct rb2_rx *rx = rb2_half_rx(h);
			const struct rb2_rx_stats *s = &rx->stats;

			RB2_RX_STATS(TEL_STAT)
			rte_tel_data_add_dict_u64(c, "head", RB2_POS_READ(rx->head));
			rte_tel_data_add_dict_container(d, "rx", c, 0);
		}
	}
	pthread_mutex_unlock(&rb2_chan_list.lock);
	return found ? 0 : -1;
}

RTE_INIT(rb2_chan_telemetry_init)
{
	rte_telemetry_register_cmd("/rb2/channels", tel_channels,
		"Lists the RB2 channels of this process. Takes no parameters");
	rte_telemetry_register_cmd("/rb2/channel", tel_channel,
		"Returns a channel's parameters and its sender and receiver counters. Parameters: channel name");
}
