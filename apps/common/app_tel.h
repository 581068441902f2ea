/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef APP_TEL_H
#define APP_TEL_H

/*
 * An application's counters in telemetry, whether it is a DPDK primary or
 * a secondary of rb2-raasd.
 *
 * A primary registers each command with DPDK's telemetry
 * (rte_telemetry_register_cmd()), on the prefix's socket. DPDK 22.11 gives
 * a secondary no socket at all: the prefix's one is its primary's, and a
 * second bind fails without a word. So in a secondary this also serves the
 * commands on a socket of its own, dpdk_telemetry.v2:N beside the
 * primary's, in the same protocol (the v2 greeting, "/" for the list,
 * "/help,CMD", and each command answered as {"CMD": {...}}), which is
 * where DPDK 23.03 and later put a secondary's and where Debian's
 * dpdk-telemetry.py looks for instance N:
 *
 *   dpdk-telemetry.py -f PREFIX -i N
 *
 * N is the first number free under the prefix; the application prints it.
 * The counters are a dictionary of unsigned integers.
 */

#include <stdint.h>

#define APP_TEL_MAX 32           /* counters per command */

struct app_tel_dict {
	unsigned int n;
	const char *name[APP_TEL_MAX];
	uint64_t value[APP_TEL_MAX];
};

/* Add a counter (past APP_TEL_MAX: dropped). */
void app_tel_add(struct app_tel_dict *d, const char *name, uint64_t value);

/*
 * Register @p cmd ("/rb2/kv/stats"), whose counters @p fill writes (called
 * from telemetry's thread: relaxed loads of what the lcores count). In a
 * secondary, the first call starts its own socket and prints
 * "APP: telemetry: dpdk-telemetry.py -f PREFIX -i N" on stdout.
 * @return 0, or -1 (printed why; the application goes on without it).
 */
int app_tel_register(const char *app, const char *cmd, void (*fill)(struct app_tel_dict *d),
		     const char *help);

/* Close a secondary's socket and remove its file (nothing in a primary). */
void app_tel_close(void);

#endif /* APP_TEL_H */
