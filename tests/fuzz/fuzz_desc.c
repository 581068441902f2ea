/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * libFuzzer target: the 56-byte connection descriptor a channel's peer sends
 * (over rdma_cm's private data, or a shared memzone), checked by
 * rb2_chan_desc_check() before anything in it is used.
 *
 * Input: one selector byte, then the descriptor. The selector picks our
 * parameters (preset, fixed size, unaligned), the role we expect, and how to
 * read the rest: as raw bytes, or XORed over a valid descriptor for those
 * parameters (so that mutations explore near-valid ones, field by field).
 * The oracle:
 *  - a refusal is -EPROTO and says why;
 *  - an acceptance means every field is consistent with our parameters (the
 *    wire flags equal, RB2_CHAN_F_LAZY_HEAD the one flag a peer may add: it
 *    bounds what its sender sends), the region is aligned and large enough,
 *    and anything past 56 bytes is zero padding;
 *  - the valid descriptor itself (XORed with zeros: padding) is accepted.
 */

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <rte_common.h>

#include "rb2_chan_pvt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
params_of(uint8_t sel, struct rb2_chan_params *p)
{
	static const char *const presets[] = { "rb2", "l5", "farm", "socksdirect" };

	rb2_chan_params_init(p);
	p->slots = 64u << (sel & 3);
	p->slot_size = (sel & 4) ? 128 : 64;
	if (rb2_chan_params_preset(p, presets[(sel >> 3) & 3]) != 0)
		__builtin_trap();
	if (sel & 0x20)
		p->msg_size = 40;
	if (sel & 0x40)
		p->flags |= RB2_CHAN_F_UNALIGNED;
}

/* What a peer with parameters @p and @role sends (rb2_chan.c's fill_desc()). */
static void
valid_desc(struct rb2_chan_desc *d, const struct rb2_chan_params *p, int role)
{
	memset(d, 0, sizeof(*d));
	d->magic = RB2_DESC_MAGIC;
	d->version = RB2_DESC_VERSION;
	d->role = (uint8_t)role;
	d->policy = (uint8_t)(p->head_sync | (p->tail_sync << 4));
	d->slots = p->slots;
	d->slot_size = p->slot_size;
	d->alpha = p->alpha;
	d->beta = p->beta;
	d->gamma = p->gamma;
	d->rkey = 0x1234;
	d->addr = 0x7f0000001000ull;
	d->len = rb2_region_size(p, role == 0);
	d->msg_size = p->msg_size;
	d->flags = p->flags & RB2_CHAN_F_WIRE;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rb2_chan_params p;
	struct rb2_chan_desc d;
	uint8_t blob[256];
	char why[256] = "";
	int role, ret, pristine = 0;
	size_t len;

	if (size == 0)
		return 0;
	params_of(data[0], &p);
	role = data[0] >> 7;
	data++;
	size--;
	if (size > sizeof(blob))
		return 0;
	if (size >= 1 && (data[0] & 1)) {
		/* Overlay: the valid descriptor, XORed with the rest, and as
		 * long as the rest (at least 56: a shorter one is raw). */
		valid_desc(&d, &p, role);
		memset(blob, 0, sizeof(blob));
		memcpy(blob, &d, sizeof(d));
		len = RTE_MAX(size - 1, sizeof(d));
		pristine = 1;
		for (size_t i = 1; i < size; i++) {
			blob[i - 1] ^= data[i];
			pristine &= data[i] == 0;
		}
	} else {
		memcpy(blob, data, size);
		len = size;
	}
	ret = rb2_chan_desc_check(blob, len, role, &p, why, sizeof(why));
	if (ret != 0) {
		if (ret != -EPROTO || why[0] == '\0')
			__builtin_trap(); /* a refusal must be -EPROTO, with its reason */
		if (pristine)
			__builtin_trap(); /* refused what a valid peer sends */
		return 0;
	}
	/* Accepted: everything the channel will use must be consistent. */
	if (len < sizeof(d))
		__builtin_trap();
	for (size_t i = sizeof(d); i < len; i++)
		if (blob[i] != 0)
			__builtin_trap(); /* only zero padding past the descriptor */
	memcpy(&d, blob, sizeof(d));
	if (d.magic != RB2_DESC_MAGIC || d.version != RB2_DESC_VERSION || d.role != role ||
	    d.slots != p.slots || d.slot_size != p.slot_size || d.msg_size != p.msg_size ||
	    (d.flags & ~RB2_CHAN_F_LAZY_HEAD) != (p.flags & RB2_CHAN_F_WIRE) ||
	    d.policy != (uint8_t)(p.head_sync | (p.tail_sync << 4)))
		__builtin_trap();
	if (d.alpha < 1 || d.alpha >= d.slots || d.beta < 1 || d.beta > d.alpha ||
	    d.gamma < 1 || d.gamma >= d.slots)
		__builtin_trap();
	if (d.addr == 0 || d.addr % RTE_CACHE_LINE_SIZE != 0 ||
	    d.len < rb2_region_size(&p, role == 0))
		__builtin_trap();
	return 0;
}
