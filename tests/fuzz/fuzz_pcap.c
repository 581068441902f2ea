/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * libFuzzer target: the trace reader (libpcap, then rb2's link-layer and IP
 * decoding) on arbitrary files, and the decoder alone on arbitrary frames
 * of every supported link type. Built and run by tests/fuzz/run.sh.
 */

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rb2_trace.h"

static const int linktypes[] = { 0, 1, 12, 14, 101, 108, 113, 228, 229, 276 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512];
	struct rb2_trace_stats st;
	struct rb2_rec r;
	struct rb2_trace *t;
	FILE *f;

	/* The decoder alone: first byte picks the link type. */
	if (size > 0) {
		int lt = linktypes[data[0] % (sizeof(linktypes) / sizeof(linktypes[0]))];

		if (rb2_trace_parse(lt, data + 1, (uint32_t)(size - 1), (uint32_t)size, &r) != 0)
			__builtin_trap();
		if (r.kind < RB2_REC_IPV4 || r.kind > RB2_REC_MALFORMED)
			__builtin_trap();
	}
	/* The whole reader, on the input as a capture file. */
	f = fmemopen((void *)(uintptr_t)data, size, "rb");
	if (f == NULL)
		return 0;
	t = rb2_trace_open_file(f, "fuzz", err, sizeof(err));
	if (t == NULL)
		return 0;
	for (int i = 0; i < 100000 && rb2_trace_next(t, &r) == 1; i++)
		if (r.kind < RB2_REC_IPV4 || r.kind > RB2_REC_MALFORMED)
			__builtin_trap();
	rb2_trace_stats_get(t, &st);
	if (st.ipv4 + st.ipv6 + st.nonip + st.malformed != st.packets)
		__builtin_trap();   /* every packet is counted as exactly one kind */
	rb2_trace_close(t);
	return 0;
}
