/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_PORT_H
#define RB2_PORT_H

/**
 * @file
 * @internal DPDK ports as the pipeline's rx and tx stages use them: each
 * stage attaches one queue in its init(); the first start() configures the
 * port with every queue attached (RSS across the RX queues where the PMD
 * has it), starts it, turns promiscuous mode on and waits for the link; the
 * last stage to finish stops it (after the drain), and the last fini()
 * closes it. Not installed: the stages are the API.
 *
 * Lifecycle of a port, per process:
 *   attach (init, each stage) -> start (first start()) -> release (each
 *   stage's end) -> stopped (last release) -> detach (fini) -> closed.
 */

#include <stddef.h>
#include <stdint.h>

#include <rte_ethdev.h>
#include <rte_mempool.h>

/** How a port is set up; the first stage to start it decides. */
struct rb2_port_conf {
	uint16_t rx_desc, tx_desc;  /**< ring sizes (0: the PMD's default) */
	int promisc;                /**< turn promiscuous mode on */
	int rss;                    /**< RSS across RX queues, where supported */
	unsigned int link_timeout_ms; /**< wait for link up (0: do not wait) */
};

/**
 * Resolve a port given as an index ("0") or a device name ("net_pcap0").
 * @return 0, or -ENODEV with @p err naming the ports there are.
 */
int rb2_port_resolve(const char *spec, uint16_t *port, char *err, size_t errlen);

/**
 * Attach one RX queue (receiving into @p mp) or one TX queue (@p mp NULL)
 * of @p port, before the port starts.
 * @return the queue's index, or a negative errno with @p err saying why
 *   (the PMD has no more queues; the port is already started).
 */
int rb2_port_attach(uint16_t port, struct rte_mempool *mp, char *err, size_t errlen);

/**
 * Configure and start @p port with the queues attached so far (the first
 * call does it; later ones return 0).
 * @return 0, or a negative errno with @p err naming the port, its PMD and
 *   the fix.
 */
int rb2_port_start(uint16_t port, const struct rb2_port_conf *c, char *err, size_t errlen);

/** A tx stage handed @p port packets (it may hold them in its TX ring). */
void rb2_port_tx_sent(uint16_t port);

/**
 * The ports a tx stage handed packets to, as "1 (net_ring0), ..." in
 * @p names. A PMD may keep what it was given until it sends it (net_ring,
 * until the ring's reader takes it): mbufs still in use are theirs.
 * @return how many.
 */
unsigned int rb2_port_holders(char *names, size_t size);

/** A stage is done with @p port's queue: the last stops the port. */
void rb2_port_release(uint16_t port);

/** A stage is freed: the last closes the port (primary process only). */
void rb2_port_detach(uint16_t port);

/** @return the port's device name ("net_pcap0"). */
const char *rb2_port_name(uint16_t port);

/** @return the port's PMD ("net_pcap"). */
const char *rb2_port_driver(uint16_t port);

#endif /* RB2_PORT_H */
