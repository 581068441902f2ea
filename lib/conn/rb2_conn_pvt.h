/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_CONN_PVT_H
#define RB2_CONN_PVT_H

/* Connections: what only rb2_conn.c and rb2_conn_telemetry.c share. */

#include <pthread.h>

#include "rb2_conn.h"

#define CONN_STAT_ADD(ep, f, v)                                           \
	atomic_store_explicit(&(ep)->ctr.f,                               \
		atomic_load_explicit(&(ep)->ctr.f, memory_order_relaxed) + (v), \
		memory_order_relaxed)

/* Every endpoint of the process, for telemetry. */
struct rb2_conn_ep_list {
	pthread_mutex_t lock;
	TAILQ_HEAD(, rb2_conn_ep) eps;
};
extern struct rb2_conn_ep_list rb2_conn_eps;

#define CONN_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_ ## level, rb2_conn_logtype, "rb2.conn: " fmt "\n", ## __VA_ARGS__)

#endif /* RB2_CONN_PVT_H */
