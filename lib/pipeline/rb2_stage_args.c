/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* An instance's key = value arguments, read by its init() (rb2_stage.h):
 * each read marks its key, so that a key no stage read is an error naming
 * the keys it takes. */

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rb2_pipeline_private.h"

static struct rb2_cfg_entry *
arg_get(struct rb2_stage_args *a, const char *key)
{
	struct rb2_cfg_entry *e = rb2_cfg_get(a->sec, key);

	if (a->nasked < RTE_DIM(a->asked))
		a->asked[a->nasked++] = key;
	return e != NULL && e->value[0] != '\0' ? e : NULL;
}

static int
arg_bad(struct rb2_stage_args *a, const struct rb2_cfg_entry *e, const char *fmt, ...)
{
	char what[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(a->st->err, sizeof(a->st->err), "line %u: invalid %s = '%s': %s",
		 e->line, e->key, e->value, what);
	return -EINVAL;
}

int
rb2_stage_arg_has(const struct rb2_stage_args *a, const char *key)
{
	for (unsigned int i = 0; i < a->sec->n; i++)
		if (strcmp(a->sec->entries[i].key, key) == 0)
			return a->sec->entries[i].value[0] != '\0';
	return 0;
}

int
rb2_stage_arg_str(struct rb2_stage_args *a, const char *key, const char *def,
		  const char **out)
{
	struct rb2_cfg_entry *e = arg_get(a, key);

	*out = e != NULL ? e->value : def;
	return 0;
}

int
rb2_stage_arg_u64(struct rb2_stage_args *a, const char *key, uint64_t def,
		  uint64_t min, uint64_t max, uint64_t *out)
{
	struct rb2_cfg_entry *e = arg_get(a, key);
	unsigned long long v;
	char *end;

	if (e == NULL) {
		*out = def;
		return 0;
	}
	errno = 0;
	v = strtoull(e->value, &end, 0);
	if (end != e->value && *end != '\0' && end[1] == '\0') {
		unsigned long long mul = *end == 'k' || *end == 'K' ? 1000ull :
			*end == 'M' ? 1000000ull : *end == 'G' ? 1000000000ull : 0;

		if (mul != 0 && v <= UINT64_MAX / mul) {
			v *= mul;
			end++;
		}
	}
	if (errno != 0 || end == e->value || *end != '\0' || e->value[0] == '-' ||
	    v < min || v > max)
		return arg_bad(a, e, "expected an integer in [%" PRIu64 ", %" PRIu64 "]",
			       min, max);
	*out = v;
	return 0;
}

int
rb2_stage_arg_double(struct rb2_stage_args *a, const char *key, double def,
		     double min, double max, double *out)
{
	struct rb2_cfg_entry *e = arg_get(a, key);
	char *end;
	double v;

	if (e == NULL) {
		*out = def;
		return 0;
	}
	errno = 0;
	v = strtod(e->value, &end);
	if (errno != 0 || end == e->value || *end != '\0' || !isfinite(v) || v < min || v > max)
		return arg_bad(a, e, "expected a number in [%g, %g]", min, max);
	*out = v;
	return 0;
}

int
rb2_stage_arg_bool(struct rb2_stage_args *a, const char *key, int def, int *out)
{
	static const char *const yes[] = { "1", "yes", "true", "on" };
	static const char *const no[] = { "0", "no", "false", "off" };
	struct rb2_cfg_entry *e = arg_get(a, key);

	*out = def;
	if (e == NULL)
		return 0;
	for (unsigned int i = 0; i < RTE_DIM(yes); i++) {
		if (strcasecmp(e->value, yes[i]) == 0) {
			*out = 1;
			return 0;
		}
		if (strcasecmp(e->value, no[i]) == 0) {
			*out = 0;
			return 0;
		}
	}
	return arg_bad(a, e, "expected yes or no");
}

int
rb2_stage_args_unused(struct rb2_stage_args *a, char *err, size_t errlen)
{
	for (unsigned int i = 0; i < a->sec->n; i++) {
		const struct rb2_cfg_entry *e = &a->sec->entries[i];

		if (!e->used) {
			char known[256] = "";
			size_t n = 0;

			for (unsigned int j = 0; j < a->nasked && n < sizeof(known); j++)
				n += (size_t)snprintf(known + n, sizeof(known) - n, "%s%s",
						      n ? ", " : "", a->asked[j]);
			snprintf(err, errlen, "line %u: stage '%s' (type %s) takes no argument '%s'%s%s",
				 e->line, a->st->name, a->st->ops->name, e->key,
				 n ? "; it takes: " : "", known);
			return -EINVAL;
		}
	}
	return 0;
}
