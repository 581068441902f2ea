/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_CHAN_PRIVATE_H
#define RB2_CHAN_PRIVATE_H

/* Library-internal declarations of lib/rb2; not installed. */

#include <rte_log.h>
#include <rte_spinlock.h>

#include "rb2_chan.h"

#define RB2_CHAN_LOG(level, fmt, ...)                                   \
	rte_log(RTE_LOG_##level, rb2_chan_logtype, "rb2_chan: " fmt "\n", \
		##__VA_ARGS__)

/* Every half of this process (telemetry walks it under the lock). */
struct rb2_chan_list {
	rte_spinlock_t lock;
	TAILQ_HEAD(, rb2_tx) tx;
	TAILQ_HEAD(, rb2_rx) rx;
};
extern struct rb2_chan_list rb2_chan_list;

/* Bytes of a region: control lines and lens[], plus the slots if with_ring. */
size_t rb2_region_size(uint32_t slots, uint32_t slot_size, uint32_t flags,
		       int with_ring, int with_cq);
/* Offset of slot 0 in a region. */
size_t rb2_region_slots_off(uint32_t slots, uint32_t flags);

#endif /* RB2_CHAN_PRIVATE_H */
