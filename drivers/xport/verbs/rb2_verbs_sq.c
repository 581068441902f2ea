/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* The verbs driver's send-queue accounting and WR planning
 * (rb2_xport_verbs.h): free of verbs calls, so tests/test_verbs_unit.c
 * compiles and checks it without a device. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>

#include "rb2_xport_verbs.h"

uint32_t
rb2_verbs_sq_depth(uint32_t want, uint32_t max_qp_wr)
{
	uint32_t d = want < 16 ? 16 : want;

	if (max_qp_wr != 0 && d > max_qp_wr)
		d = max_qp_wr;
	return d;
}

int
rb2_verbs_sq_init(struct rb2_verbs_sq *sq, uint32_t depth)
{
	uint32_t ring = rte_align32pow2(depth + 1);

	memset(sq, 0, sizeof(*sq));
	sq->retire = calloc(ring, sizeof(*sq->retire));
	if (sq->retire == NULL)
		return -ENOMEM;
	sq->mask = ring - 1;
	sq->depth = depth;
	sq->free = depth;
	sq->signal_every = depth / 2 > 0 ? depth / 2 : 1;
	return 0;
}

void
rb2_verbs_sq_fini(struct rb2_verbs_sq *sq)
{
	free(sq->retire);
	sq->retire = NULL;
}

int
rb2_verbs_sq_plan(struct rb2_verbs_sq *sq, const struct rb2_xport_wr *wrs,
		  unsigned int n, uint32_t max_inline, uint32_t *flags)
{
	uint32_t unsig = sq->unsignaled;

	if (n > sq->free)
		return -ENOSPC;
	for (unsigned int i = 0; i < n; i++) {
		uint32_t f = 0;

		if ((wrs[i].flags & RB2_WR_INLINE) && wrs[i].len <= max_inline &&
		    wrs[i].opcode != RB2_WR_READ)
			f |= RB2_VERBS_F_INLINE;
		unsig++;
		if (wrs[i].flags & RB2_WR_SIGNALED) {
			f |= RB2_VERBS_F_SIGNALED;
		} else if (unsig >= sq->signal_every) {
			/* The unsignaled-WR rule: a signaled WR at least every
			 * sq_depth/2, or the SQ never gets its entries back. */
			f |= RB2_VERBS_F_SIGNALED | RB2_VERBS_F_INTERNAL;
		}
		if (f & RB2_VERBS_F_SIGNALED)
			unsig = 0;
		flags[i] = f;
	}
	return 0;
}

void
rb2_verbs_sq_posted(struct rb2_verbs_sq *sq, const uint32_t *flags,
		    unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		sq->free--;
		sq->unsignaled++;
		if (flags[i] & RB2_VERBS_F_SIGNALED) {
			/* This completion retires it and the unsignaled ones
			 * before it. */
			sq->retire[sq->r_tail++ & sq->mask] = sq->unsignaled;
			sq->unsignaled = 0;
		}
	}
}

void
rb2_verbs_sq_completed(struct rb2_verbs_sq *sq)
{
	if (sq->r_head != sq->r_tail)
		sq->free += sq->retire[sq->r_head++ & sq->mask];
}
