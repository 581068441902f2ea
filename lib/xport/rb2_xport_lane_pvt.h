/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_XPORT_LANE_PVT_H
#define RB2_XPORT_LANE_PVT_H

/*
 * @internal What rb2_xport.c calls for a queue that posts into a lane
 * (rb2_xport_lane.c implements them); not installed.
 */

#include <rb2_xport_core.h>

/* Set up @qp (allocated by rb2_xport_qp_create()) as a queue of attr->lane. */
int rb2_xport_lane_qp_create(struct rb2_xport_qp *qp, const struct rb2_xport_qp_attr *attr);
/* Take it off its lane (its waiting WRs are posted first). */
void rb2_xport_lane_qp_destroy(struct rb2_xport_qp *qp);
/* Connect two queues of lanes; the lanes' QPs connect on the first pair. */
int rb2_xport_lane_qp_connect_local(struct rb2_xport_qp *a, struct rb2_xport_qp *b);
/* Connect a queue of a lane to a peer's queue at @peer: the lanes' QPs
 * connect on the first (rb2_xport_qp_exchange() semantics). */
int rb2_xport_lane_qp_exchange(struct rb2_xport_qp *qp, const char *peer,
			       enum rb2_xport_role role, const void *blob, size_t len,
			       void *peer_blob, size_t peer_cap, unsigned int timeout_ms);
/* Its lane's QP's status. */
int rb2_xport_lane_qp_status(struct rb2_xport_qp *qp);

#endif /* RB2_XPORT_LANE_PVT_H */
