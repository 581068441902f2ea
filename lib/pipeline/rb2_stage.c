/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Stage types: the registry, plugin loading, and the helpers init() uses to
 * read its arguments.
 */

#define _GNU_SOURCE
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <link.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "rb2_pipeline_private.h"

#define STAGE_TYPES_MAX 64

static const struct rb2_stage_ops *types[STAGE_TYPES_MAX];
static unsigned int ntypes;
/* Registrations refused since the last check: reported by whoever loaded
 * the object (rb2_plugin_load, or rb2_stage_registry_check after -d). */
static char reg_err[512];
static unsigned int reg_added;

const char *
rb2_stage_ops_origin(const struct rb2_stage_ops *ops)
{
	Dl_info info;

	if (dladdr(ops, &info) != 0 && info.dli_fname != NULL)
		return info.dli_fname;
	return "?";
}

static int
valid_type_name(const char *s)
{
	if (s == NULL || *s == '\0' || strlen(s) >= STAGE_NAME_MAX)
		return 0;
	for (; *s != '\0'; s++)
		if (!islower((unsigned char)*s) && !isdigit((unsigned char)*s) &&
		    *s != '_' && *s != '-')
			return 0;
	return 1;
}

static void
refuse(const struct rb2_stage_ops *ops, const char *fmt, ...)
{
	char msg[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* Keep the first: it is the one to fix. */
	if (reg_err[0] == '\0')
		snprintf(reg_err, sizeof(reg_err), "%s (from %s)", msg,
			 rb2_stage_ops_origin(ops));
}

void
rb2_stage_register(const struct rb2_stage_ops *ops)
{
	if (ops == NULL)
		return;
	/* api_version comes first in every version of the struct, so it can
	 * be read before trusting anything else. */
	if (ops->api_version != RB2_STAGE_API_VERSION) {
		refuse(ops, "a stage built for stage API v%" PRIu32 "; this rb2 implements v%d: "
		       "rebuild it against this rb2's <rb2_stage.h>", ops->api_version,
		       RB2_STAGE_API_VERSION);
		return;
	}
	if (!valid_type_name(ops->name)) {
		refuse(ops, "stage name '%s' is invalid (1-31 of [a-z0-9_-])",
		       ops->name != NULL ? ops->name : "(null)");
		return;
	}
	if ((ops->process == NULL) == (ops->poll == NULL)) {
		refuse(ops, "stage '%s' must have exactly one of process() (it has inputs) and "
		       "poll() (a source)", ops->name);
		return;
	}
	for (unsigned int i = 0; i < ntypes; i++)
		if (strcmp(types[i]->name, ops->name) == 0) {
			refuse(ops, "stage '%s' is already registered by %s", ops->name,
			       rb2_stage_ops_origin(types[i]));
			return;
		}
	if (ntypes == STAGE_TYPES_MAX) {
		refuse(ops, "too many stage types (%d)", STAGE_TYPES_MAX);
		return;
	}
	types[ntypes++] = ops;
	reg_added++;
}

const struct rb2_stage_ops *
rb2_stage_find(const char *name)
{
	for (unsigned int i = 0; i < ntypes; i++)
		if (strcmp(types[i]->name, name) == 0)
			return types[i];
	return NULL;
}

void
rb2_stage_list(FILE *out)
{
	for (unsigned int i = 0; i < ntypes; i++) {
		const struct rb2_stage_ops *o = types[i];

		fprintf(out, "  %-12s %s%s\n", o->name, o->poll != NULL ? "[source] " : "",
			o->summary != NULL ? o->summary : "");
	}
}

int
rb2_stage_registry_check(char *err, size_t errlen)
{
	if (reg_err[0] == '\0')
		return 0;
	snprintf(err, errlen, "%s", reg_err);
	reg_err[0] = '\0';
	return -EINVAL;
}

int
rb2_plugin_load(const char *path, char *err, size_t errlen)
{
	const uint32_t *ver;
	struct link_map *lm = NULL;
	Dl_info info;
	unsigned int before = ntypes; /* its constructors append after these */
	void *h;

	reg_err[0] = '\0';
	reg_added = 0;
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		const char *why = dlerror();

		snprintf(err, errlen, "plugin %s: cannot load: %s%s", path,
			 why != NULL ? why : "unknown reason",
			 why != NULL && strstr(why, "undefined symbol") != NULL ?
			 " (built against another rb2, or a library is missing from its link line?)" :
			 strchr(path, '/') == NULL ? " (give a path: ./NAME.so)" : "");
		return -ENOENT;
	}
	/* The marker must be the plugin's own, not librb2's found through the
	 * plugin's dependencies. */
	ver = dlsym(h, "rb2_plugin_api_version");
	if (ver == NULL || dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || dladdr(ver, &info) == 0 ||
	    info.dli_fbase != (void *)lm->l_addr) {
		ntypes = before;
		snprintf(err, errlen, "plugin %s: not an rb2 plugin: it does not define "
			 "rb2_plugin_api_version (register its stages with RB2_STAGE_REGISTER() "
			 "from <rb2_stage.h>)", path);
		dlclose(h);
		return -ENOEXEC;
	}
	if (reg_err[0] != '\0' || *ver != RB2_STAGE_API_VERSION) {
		if (reg_err[0] != '\0')
			snprintf(err, errlen, "plugin %s: %s", path, reg_err);
		else
			snprintf(err, errlen, "plugin %s: built for stage API v%" PRIu32
				 "; this rb2 implements v%d: rebuild it against this rb2",
				 path, *ver, RB2_STAGE_API_VERSION);
		reg_err[0] = '\0';
		ntypes = before;
		dlclose(h);
		return -EPROTO;
	}
	if (reg_added == 0) {
		snprintf(err, errlen, "plugin %s registers no stage (and none was refused): "
			 "was it loaded already?", path);
		dlclose(h);
		return -EEXIST;
	}
	/* Stays loaded: its stages are in the registry. */
	return 0;
}

/* ---- Instances ---------------------------------------------------------- */

void *
rb2_stage_priv(struct rb2_stage *st)
{
	return st->priv;
}

const char *
rb2_stage_name(const struct rb2_stage *st)
{
	return st->name;
}

unsigned int
rb2_stage_lcore(const struct rb2_stage *st)
{
	return st->lcore;
}

int
rb2_stage_socket(const struct rb2_stage *st)
{
	return st->socket;
}

void
rb2_stage_err(struct rb2_stage *st, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(st->err, sizeof(st->err), fmt, ap);
	va_end(ap);
	if (st->inited)
		PL_LOG(ERR, "stage '%s': %s", st->name, st->err);
}

uint64_t *
rb2_stage_counter(struct rb2_stage *st, const char *name)
{
	struct rb2_stage_counter *c;

	if (st->ncounters == STAGE_COUNTERS_MAX)
		return NULL;
	c = &st->counters[st->ncounters++];
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->value = 0;
	return &c->value;
}

/* ---- Arguments ---------------------------------------------------------- */

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
