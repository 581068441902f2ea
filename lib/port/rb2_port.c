/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* DPDK ports shared by the rx and tx stages (rb2_port.h). */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_log.h>
#include <rte_spinlock.h>

#include "rb2_port.h"

RTE_LOG_REGISTER_DEFAULT(rb2_port_logtype, INFO);
#define PORT_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_ ## level, rb2_port_logtype, "rb2.port: " fmt "\n", ##__VA_ARGS__)

#define QUEUES_MAX 64

/* This process's use of a port. Stages attach and start from the main
 * lcore; they release from their own lcores at their end: the lock. */
struct port_use {
	unsigned int nrx, ntx;      /* queues attached */
	struct rte_mempool *rx_pool[QUEUES_MAX];
	unsigned int users;         /* stages attached, not yet detached */
	unsigned int active;        /* stages started, not yet released */
	int started, stopped;
	int tx_sent;                /* a tx stage handed it packets */
};

static struct port_use uses[RTE_MAX_ETHPORTS];
static rte_spinlock_t lock = RTE_SPINLOCK_INITIALIZER;

const char *
rb2_port_name(uint16_t port)
{
	static __thread char name[RTE_ETH_NAME_MAX_LEN];

	if (rte_eth_dev_get_name_by_port(port, name) != 0)
		snprintf(name, sizeof(name), "port %u", port);
	return name;
}

const char *
rb2_port_driver(uint16_t port)
{
	struct rte_eth_dev_info info;

	if (rte_eth_dev_info_get(port, &info) != 0 || info.driver_name == NULL)
		return "unknown PMD";
	return info.driver_name;
}

int
rb2_port_resolve(const char *spec, uint16_t *port, char *err, size_t errlen)
{
	char *end;
	unsigned long v = strtoul(spec, &end, 10);
	char list[256] = "";
	size_t n = 0;
	uint16_t p;

	if (*spec != '\0' && *end == '\0' && v < RTE_MAX_ETHPORTS && rte_eth_dev_is_valid_port((uint16_t)v)) {
		*port = (uint16_t)v;
		return 0;
	}
	if (*end != '\0' && rte_eth_dev_get_port_by_name(spec, port) == 0)
		return 0;
	RTE_ETH_FOREACH_DEV(p)
		if (n < sizeof(list))
			n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%u = %s (%s)",
					      n ? ", " : "", p, rb2_port_name(p), rb2_port_driver(p));
	snprintf(err, errlen, "no port '%s': %s", spec, n > 0 ? list :
		 "this process has no port at all (a --vdev whose probe failed is not one: "
		 "the EAL's log above says why); give the EAL one, as --vdev net_pcap0,"
		 "rx_pcap=FILE, or bind a NIC to vfio-pci (and drop --no-pci)");
	return -ENODEV;
}

int
rb2_port_attach(uint16_t port, struct rte_mempool *mp, char *err, size_t errlen)
{
	struct port_use *u = &uses[port];
	struct rte_eth_dev_info info;
	int q, ret;

	ret = rte_eth_dev_info_get(port, &info);
	if (ret != 0) {
		snprintf(err, errlen, "port %u (%s): cannot get its device info: %s", port,
			 rb2_port_name(port), rte_strerror(-ret));
		return ret;
	}
	rte_spinlock_lock(&lock);
	if (u->started) {
		rte_spinlock_unlock(&lock);
		snprintf(err, errlen, "port %u (%s) is already started: its queues are set up "
			 "before the pipeline starts", port, rb2_port_name(port));
		return -EBUSY;
	}
	if (mp != NULL) {
		if (u->nrx >= RTE_MIN((unsigned int)info.max_rx_queues, (unsigned int)QUEUES_MAX)) {
			rte_spinlock_unlock(&lock);
			snprintf(err, errlen, "port %u (%s, PMD %s) has %u RX queue(s), all taken: "
				 "use fewer rx stages on it", port, rb2_port_name(port),
				 info.driver_name, info.max_rx_queues);
			return -ENOSPC;
		}
		q = (int)u->nrx;
		u->rx_pool[u->nrx++] = mp;
	} else {
		if (u->ntx >= RTE_MIN((unsigned int)info.max_tx_queues, (unsigned int)QUEUES_MAX)) {
			rte_spinlock_unlock(&lock);
			snprintf(err, errlen, "port %u (%s, PMD %s) has %u TX queue(s), all taken: "
				 "use fewer tx stages on it", port, rb2_port_name(port),
				 info.driver_name, info.max_tx_queues);
			return -ENOSPC;
		}
		q = (int)u->ntx++;
	}
	u->users++;
	rte_spinlock_unlock(&lock);
	return q;
}

/* Wait up to @ms for the link; 0 when it is up. */
static int
wait_link(uint16_t port, unsigned int ms)
{
	uint64_t end = rte_get_timer_cycles() + rte_get_timer_hz() * ms / 1000;
	struct rte_eth_link link;

	for (;;) {
		memset(&link, 0, sizeof(link));
		if (rte_eth_link_get_nowait(port, &link) == 0 && link.link_status == RTE_ETH_LINK_UP)
			return 0;
		if (rte_get_timer_cycles() > end)
			return -ETIMEDOUT;
		rte_delay_ms(10);
	}
}

static int
configure(uint16_t port, struct port_use *u, const struct rb2_port_conf *c, char *err,
	  size_t errlen)
{
	struct rte_eth_conf conf = { 0 };
	struct rte_eth_dev_info info;
	uint16_t rxd = c->rx_desc, txd = c->tx_desc;
	int socket = rte_eth_dev_socket_id(port), ret;
	const char *name = rb2_port_name(port);

	ret = rte_eth_dev_info_get(port, &info);
	if (ret != 0)
		goto fail;
	if (socket < 0)
		socket = 0;
	if (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_TIMESTAMP)
		conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_TIMESTAMP;
	if (u->nrx > 1 && c->rss) {
		uint64_t hf = (RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP) &
			info.flow_type_rss_offloads;

		if (hf != 0) {
			conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
			conf.rx_adv_conf.rss_conf.rss_hf = hf;
			PORT_LOG(INFO, "port %u (%s): RSS over %u RX queues", port, name, u->nrx);
		} else {
			PORT_LOG(NOTICE, "port %u (%s, PMD %s) has no RSS: each of its %u RX queues "
				 "gets what the PMD puts in it", port, name, info.driver_name, u->nrx);
		}
	}
	ret = rte_eth_dev_configure(port, (uint16_t)u->nrx, (uint16_t)u->ntx, &conf);
	if (ret != 0) {
		snprintf(err, errlen, "port %u (%s, PMD %s): configuring %u RX and %u TX queue(s) "
			 "failed: %s", port, name, info.driver_name, u->nrx, u->ntx, rte_strerror(-ret));
		return ret;
	}
	ret = rte_eth_dev_adjust_nb_rx_tx_desc(port, &rxd, &txd);
	if (ret != 0)
		goto fail;
	for (unsigned int q = 0; q < u->nrx; q++) {
		ret = rte_eth_rx_queue_setup(port, (uint16_t)q, rxd, (unsigned int)socket, NULL,
					     u->rx_pool[q]);
		if (ret != 0) {
			snprintf(err, errlen, "port %u (%s, PMD %s): RX queue %u of %u descriptors "
				 "on pool '%s': %s%s", port, name, info.driver_name, q, rxd,
				 u->rx_pool[q]->name, rte_strerror(-ret), ret == -ENOMEM ?
				 " (the pool is too small for the ring: raise pool_size)" : "");
			return ret;
		}
	}
	for (unsigned int q = 0; q < u->ntx; q++) {
		ret = rte_eth_tx_queue_setup(port, (uint16_t)q, txd, (unsigned int)socket, NULL);
		if (ret != 0) {
			snprintf(err, errlen, "port %u (%s, PMD %s): TX queue %u: %s", port, name,
				 info.driver_name, q, rte_strerror(-ret));
			return ret;
		}
	}
	return 0;
fail:
	snprintf(err, errlen, "port %u (%s): %s", port, name, rte_strerror(-ret));
	return ret;
}

int
rb2_port_start(uint16_t port, const struct rb2_port_conf *c, char *err, size_t errlen)
{
	struct port_use *u = &uses[port];
	const char *name = rb2_port_name(port);
	int ret = 0;

	rte_spinlock_lock(&lock);
	u->active++;
	if (u->started) {
		rte_spinlock_unlock(&lock);
		return 0;
	}
	u->started = 1;
	rte_spinlock_unlock(&lock);
	ret = configure(port, u, c, err, errlen);
	if (ret != 0)
		return ret;
	ret = rte_eth_dev_start(port);
	if (ret != 0) {
		snprintf(err, errlen, "port %u (%s, PMD %s) does not start: %s (the PMD's log says "
			 "why)", port, name, rb2_port_driver(port), rte_strerror(-ret));
		return ret;
	}
	rte_eth_stats_reset(port);
	if (c->promisc) {
		ret = rte_eth_promiscuous_enable(port);
		if (ret != 0 && ret != -ENOTSUP)
			PORT_LOG(WARNING, "port %u (%s): promiscuous mode: %s", port, name,
				 rte_strerror(-ret));
	}
	if (c->link_timeout_ms > 0 && wait_link(port, c->link_timeout_ms) != 0) {
		snprintf(err, errlen, "port %u (%s, PMD %s): the link is still down after %u ms: "
			 "check the cable or the peer interface (ip link set IFACE up), or set "
			 "link_timeout_ms = 0 not to wait", port, name, rb2_port_driver(port),
			 c->link_timeout_ms);
		return -ENETDOWN;
	}
	PORT_LOG(INFO, "port %u (%s, PMD %s) started: %u RX, %u TX queue(s)", port, name,
		 rb2_port_driver(port), u->nrx, u->ntx);
	return 0;
}

void
rb2_port_tx_sent(uint16_t port)
{
	uses[port].tx_sent = 1;
}

unsigned int
rb2_port_holders(char *names, size_t size)
{
	unsigned int k = 0;
	size_t n = 0;

	if (size > 0)
		names[0] = '\0';
	for (uint16_t p = 0; p < RTE_MAX_ETHPORTS; p++)
		if (uses[p].tx_sent) {
			if (n < size)
				n += (size_t)snprintf(names + n, size - n, "%s%u (%s)", k ? ", " : "",
						      p, rb2_port_name(p));
			k++;
		}
	return k;
}

void
rb2_port_release(uint16_t port)
{
	struct port_use *u = &uses[port];
	int stop;

	rte_spinlock_lock(&lock);
	stop = u->active > 0 && --u->active == 0 && u->started && !u->stopped;
	if (stop)
		u->stopped = 1;
	rte_spinlock_unlock(&lock);
	if (stop) {
		int ret = rte_eth_dev_stop(port);

		if (ret != 0)
			PORT_LOG(WARNING, "port %u (%s): stop: %s", port, rb2_port_name(port),
				 rte_strerror(-ret));
		else
			PORT_LOG(INFO, "port %u (%s) stopped: its stages have drained", port,
				 rb2_port_name(port));
	}
}

void
rb2_port_detach(uint16_t port)
{
	struct port_use *u = &uses[port];
	int close;

	rte_spinlock_lock(&lock);
	close = u->users > 0 && --u->users == 0;
	rte_spinlock_unlock(&lock);
	if (!close)
		return;
	if (u->started && !u->stopped)
		rte_eth_dev_stop(port);
	if (rte_eal_process_type() == RTE_PROC_PRIMARY && u->started)
		rte_eth_dev_close(port);
	memset(u, 0, sizeof(*u));
}
