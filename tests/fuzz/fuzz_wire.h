/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_FUZZ_WIRE_H
#define RB2_FUZZ_WIRE_H

/*
 * What the connection fuzzers (fuzz_conn.c, fuzz_relay.c) share: an EAL on
 * one lcore without hugepages and the shm transport, and their input
 * format, frames built from the wire header (rb2_conn_wire.h):
 *
 *   [u8 type][u8 len][u8 len_hi:2, flags:6][u16 aux][len bytes of body]
 *
 * Type 0: the body is the whole frame, raw. Else a header of type
 * (type % (RB2_CONN_FR_MAX + 1)) and aux, for the connection the target
 * names (flag 0x80, to reach past the descriptor check), RB2_CONN_CID_NONE
 * (0x40) or the body's first 4 bytes, then the body.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>

#include <rb2_conn_wire.h>
#include <rb2_lcore.h>
#include <rb2_xport.h>

/* The largest body an input frame carries. */
#define FUZZ_BODY_MAX 1024u

static struct rb2_xport *fuzz_xp;

/* libFuzzer ends with exit(): close the transport, and leave no EAL
 * runtime directory behind. */
static void
fuzz_fini(void)
{
	rb2_xport_close(fuzz_xp);
	rb2_eal_cleanup();
}

/* The EAL as @name (its file prefix @tag and the pid), and shm open. */
static inline struct rb2_xport *
fuzz_eal_shm(const char *name, const char *tag)
{
	char prefix[32];
	char *eal[] = { (char *)(uintptr_t)name, "-l", "0", "--no-pci", "--no-huge", "-m", "256",
			"--file-prefix", prefix, "--log-level", "*:emerg", NULL };

	snprintf(prefix, sizeof(prefix), "%s%d", tag, (int)getpid());
	if (rte_eal_init((int)(sizeof(eal) / sizeof(eal[0])) - 1, eal) < 0)
		__builtin_trap();
	fuzz_xp = rb2_xport_open("shm", NULL);
	if (fuzz_xp == NULL)
		__builtin_trap();
	atexit(fuzz_fini);
	return fuzz_xp;
}

/*
 * The next input frame into @buf (RB2_CONN_HDR_LEN + FUZZ_BODY_MAX bytes),
 * @named the descriptor flag 0x80 puts in its header. @return its length
 * (0: an empty one), or -1 when the input is used up.
 */
static inline int
fuzz_next_frame(const uint8_t **data, size_t *size, uint32_t named, uint8_t *buf)
{
	const uint8_t *d = *data;
	uint32_t len, cid = RB2_CONN_CID_NONE;
	uint8_t sel, flags;
	uint16_t aux;

	if (*size < 5)
		return -1;
	len = (uint32_t)(d[1] | (d[2] & 0x03) << 8);
	sel = d[0];
	flags = d[2];
	aux = (uint16_t)(d[3] | d[4] << 8);
	d += 5;
	*size -= 5;
	len = len > *size ? (uint32_t)*size : len;
	*data = d + len;
	*size -= len;
	if (sel == 0) {
		memcpy(buf, d, len);
		return (int)len;
	}
	if (flags & 0x80)
		cid = named;
	else if (!(flags & 0x40) && len >= 4)
		memcpy(&cid, d, 4);
	rb2_conn_wire_put_hdr(buf, cid, (uint8_t)(sel % (RB2_CONN_FR_MAX + 1)), aux);
	memcpy(buf + RB2_CONN_HDR_LEN, d, len);
	return (int)(RB2_CONN_HDR_LEN + len);
}

#endif /* RB2_FUZZ_WIRE_H */
