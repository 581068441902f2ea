/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_XPORT_VERBS_H
#define RB2_XPORT_VERBS_H

/* Internal to the verbs driver: send-queue accounting and WR planning
 * (rb2_verbs_sq.c), kept free of verbs calls so they are unit-tested without
 * a device. Not exported from librb2: the test compiles rb2_verbs_sq.c. */

#include <stdint.h>

#include <rb2_xport.h>

#define RB2_VERBS_F_SIGNALED (1u << 0) /* IBV_SEND_SIGNALED */
#define RB2_VERBS_F_INLINE (1u << 1)   /* IBV_SEND_INLINE */
#define RB2_VERBS_F_INTERNAL (1u << 2) /* signaled by the driver, not the caller */

/* Send-queue state: WRs free, WRs since the last signaled one, and per
 * signaled WR (in posting order) how many WRs its completion retires. */
struct rb2_verbs_sq {
	uint32_t depth;
	uint32_t free;
	uint32_t unsignaled;
	uint32_t signal_every; /* depth / 2 */
	uint32_t *retire;
	uint32_t mask, r_head, r_tail;
};

/* Send-queue depth for @want outstanding WRs, within the device's limit. */
uint32_t rb2_verbs_sq_depth(uint32_t want, uint32_t max_qp_wr);
int rb2_verbs_sq_init(struct rb2_verbs_sq *sq, uint32_t depth);
void rb2_verbs_sq_fini(struct rb2_verbs_sq *sq);
/* Decide each WR's flags (RB2_VERBS_F_*): inline when asked and it fits,
 * signaled when asked or when the unsignaled-WR rule demands. -ENOSPC when
 * the chain does not fit the free send queue. */
int rb2_verbs_sq_plan(struct rb2_verbs_sq *sq, const struct rb2_xport_wr *wrs,
		      unsigned int n, uint32_t max_inline, uint32_t *flags);
/* Account a posted chain. */
void rb2_verbs_sq_posted(struct rb2_verbs_sq *sq, const uint32_t *flags,
			 unsigned int n);
/* Account one send completion (they arrive in posting order). */
void rb2_verbs_sq_completed(struct rb2_verbs_sq *sq);

#endif /* RB2_XPORT_VERBS_H */
