/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef APP_OPT_H
#define APP_OPT_H

/*
 * Numeric command-line options, checked once, in a table: each option's
 * range beside its getopt code, and one message for every mistake, naming
 * the option, the value and the range ("rb2-kv: --port 70000: a whole
 * number from 1 to 65535 expected"). A value may end in k, M or G
 * (thousands, millions, billions), as rb2-nf's stage arguments do.
 * Header-only: the apps that do not link apps/common include it too.
 */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* One numeric option: its getopt code and its range. */
struct app_num_opt {
	int val;
	uint64_t min, max;
};

/* @return @p s as a whole number (an optional k, M or G suffix) in
 * *v, or -1. */
static inline int
app_parse_u64(const char *s, uint64_t *v)
{
	unsigned long long x, mul = 1;
	char *end;

	if (s == NULL || *s == '\0' || *s == '-' || *s == '+' || *s == ' ')
		return -1;
	errno = 0;
	x = strtoull(s, &end, 0);
	if (errno != 0 || end == s)
		return -1;
	if (*end != '\0' && end[1] == '\0') {
		mul = *end == 'k' || *end == 'K' ? 1000ull : *end == 'M' ? 1000000ull :
		      *end == 'G' ? 1000000000ull : 0;
		if (mul == 0 || x > UINT64_MAX / mul)
			return -1;
		end++;
	}
	if (*end != '\0')
		return -1;
	*v = x * mul;
	return 0;
}

/*
 * If getopt code @p c is one of @p nums (ending with a zeroed entry), parse
 * @p arg into *v and check its range.
 * @return 1 (parsed), 0 (not a numeric option), -1 (printed why, naming
 *   the option from @p lo).
 */
static inline int
app_opt_num(const char *app, const struct option *lo, const struct app_num_opt *nums, int c,
	    const char *arg, uint64_t *v)
{
	const char *name = "?";

	for (; nums->val != 0; nums++) {
		if (nums->val != c)
			continue;
		for (const struct option *o = lo; o->name != NULL; o++)
			if (o->val == c) {
				name = o->name;
				break;
			}
		if (app_parse_u64(arg, v) < 0 || *v < nums->min || *v > nums->max) {
			fprintf(stderr, "%s: --%s %s: a whole number from %" PRIu64 " to %" PRIu64
				" expected\n", app, name, arg, nums->min, nums->max);
			return -1;
		}
		return 1;
	}
	return 0;
}

#endif /* APP_OPT_H */
