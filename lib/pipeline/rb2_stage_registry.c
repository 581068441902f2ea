/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* The registry of stage types, and the plugin loader (rb2_stage_registry.h). */

#define _GNU_SOURCE
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
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
rb2_stage_origin(const struct rb2_stage_ops *ops)
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
			 rb2_stage_origin(ops));
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
			       rb2_stage_origin(types[i]));
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
	unsigned int before = ntypes; /* its constructors append after these */
	void *h;

	/* Loaded already (an earlier --plugin, or the EAL's -d): its
	 * constructors would not run again. */
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
	if (h != NULL) {
		dlclose(h);
		snprintf(err, errlen, "plugin %s is loaded already (given twice, or also with -d?)",
			 path);
		return -EEXIST;
	}
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
	/* Its constructors ran: a plugin is what registered stages (each
	 * checked for its API version, name and callbacks on the way). */
	if (reg_err[0] != '\0') {
		snprintf(err, errlen, "plugin %s: %s", path, reg_err);
		reg_err[0] = '\0';
		ntypes = before;
		dlclose(h);
		return -EPROTO;
	}
	if (reg_added == 0) {
		snprintf(err, errlen, "plugin %s: not an rb2 plugin: it registers no stage "
			 "(register them with RB2_STAGE_REGISTER() from <rb2_stage.h>)", path);
		dlclose(h);
		return -ENOEXEC;
	}
	/* Stays loaded: its stages are in the registry. */
	return 0;
}
