/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* Joining rb2-raasd (rb2_conn_service.h). */

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rte_errno.h>
#include <rte_malloc.h>
#include <rte_memory.h>
#include <rte_ring.h>

#include "rb2_conn_pvt.h"
#include "rb2_conn_service.h"

void
rb2_conn_service_chan_params(struct rb2_chan_params *p)
{
	rb2_chan_params_init(p);
	p->slots = 4096;            /* 256 KiB each way, messages up to 128 KiB */
	/* Frames vary in length: each carries its own in its slot, so a
	 * transmission is its slots' WRITE and the tail's, not lens[]'s too
	 * (the "rb2" preset's choice). */
	p->flags |= RB2_CHAN_F_LEN_IN_SLOT;
}

int
rb2_conn_service_shared(const void *p, size_t len)
{
	uintptr_t a = (uintptr_t)p, end = a + len;
	struct rte_memseg_list *msl;

	if (len == 0 || end < a)
		return 0;
	msl = rte_mem_virt2memseg_list(p);
	/* One list is one reservation of address space: the whole range in
	 * it, and each of its pages allocated (a list's pages come and go
	 * with the heap). */
	if (msl == NULL || msl->external || end > (uintptr_t)msl->base_va + msl->len)
		return 0;
	for (uintptr_t pg = RTE_ALIGN_FLOOR(a, msl->page_sz); pg < end; pg += msl->page_sz)
		if (rte_fbarray_is_used(&msl->memseg_arr,
					(unsigned int)((pg - (uintptr_t)msl->base_va) / msl->page_sz)) != 1)
			return 0;
	return 1;
}

struct rb2_conn_ep *
rb2_conn_service_join(const char *name, const struct rb2_conn_ep_params *params,
		      unsigned int timeout_ms)
{
	struct rb2_conn_service_join *req;
	struct rb2_conn_ep_params p;
	struct rb2_chan_params cp;
	char up[RB2_CHAN_NAMESIZE], down[RB2_CHAN_NAMESIZE];
	struct rb2_conn_ep *ep;
	struct rb2_xport *xp;
	struct rb2_tx *tx;
	struct rb2_rx *rx;
	struct rte_ring *ring;
	int ret;

	if (name == NULL || name[0] == '\0' || strlen(name) >= RB2_CONN_SERVICE_NAMESIZE) {
		CONN_LOG(ERR, "service: an application name of 1 to %d characters is needed",
			 RB2_CONN_SERVICE_NAMESIZE - 1);
		rte_errno = EINVAL;
		return NULL;
	}
	ring = rte_ring_lookup(RB2_CONN_SERVICE_RING);
	if (ring == NULL) {
		CONN_LOG(ERR, "service: no rb2-raasd in this process group: start it, and "
			 "start this process as its secondary (--proc-type=secondary and "
			 "its --file-prefix)");
		rte_errno = ENOENT;
		return NULL;
	}
	xp = rb2_xport_open("shm", NULL);
	if (xp == NULL)
		return NULL;
	snprintf(up, sizeof(up), "%s.u", name);
	snprintf(down, sizeof(down), "%s.d", name);
	rb2_conn_service_chan_params(&cp);
	tx = rb2_tx_create(up, xp, &cp);
	rx = rb2_rx_create(down, xp, &cp);
	req = rte_zmalloc("rb2_raasd_join", sizeof(*req), 0);
	if (tx == NULL || rx == NULL || req == NULL) {
		ret = rte_errno != 0 ? rte_errno : ENOMEM;
		goto fail;
	}
	snprintf(req->name, sizeof(req->name), "%s", name);
	req->pid = (uint32_t)getpid();
	if (rte_ring_enqueue(ring, req) != 0) {
		CONN_LOG(ERR, "service: its join queue is full; try again");
		ret = EAGAIN;
		goto fail;
	}
	req = NULL;                 /* the service's now */
	if (rb2_tx_connect(tx, up, timeout_ms) != 0 ||
	    rb2_rx_connect(rx, down, timeout_ms) != 0) {
		CONN_LOG(ERR, "service: rb2-raasd did not take application '%s' within %u ms",
			 name, timeout_ms);
		ret = ETIMEDOUT;
		goto fail;
	}
	if (params == NULL)
		rb2_conn_ep_params_init(&p);
	else
		p = *params;
	p.service = 1;
	ep = rb2_conn_ep_create(name, tx, rx, &p);
	if (ep == NULL) {
		ret = rte_errno;
		goto fail;
	}
	return ep;
fail:
	rte_free(req);
	rb2_tx_destroy(tx);
	rb2_rx_destroy(rx);
	rte_errno = ret;
	return NULL;
}
