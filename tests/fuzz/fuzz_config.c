/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * libFuzzer target: the pipeline configuration parser (INI with line
 * numbers and ${variables}). Every failure must come with a message naming
 * the file and a line; every success must give well-formed sections and
 * entries, each with its line.
 */

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rb2_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rb2_cfg_var vars[] = {
		{ .name = "trace", .value = "t.pcap" }, { .name = "top", .value = NULL },
		{ .name = "json", .value = "" },
	};
	char err[512] = "";
	struct rb2_cfg *c = rb2_cfg_parse("fuzz.ini", (const char *)data, size, vars, 3,
					  err, sizeof(err));

	if (c == NULL) {
		if (strncmp(err, "fuzz.ini:", 9) != 0)
			__builtin_trap();   /* an error without its place */
		return 0;
	}
	for (unsigned int i = 0; i < c->n; i++) {
		const struct rb2_cfg_section *s = &c->sections[i];

		if (s->name[0] == '\0' || s->line == 0)
			__builtin_trap();
		for (unsigned int j = 0; j < s->n; j++)
			if (s->entries[j].key[0] == '\0' || s->entries[j].line < s->line)
				__builtin_trap();
	}
	rb2_cfg_free(c);
	return 0;
}
