/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_STAGE_REGISTRY_H
#define RB2_STAGE_REGISTRY_H

/**
 * @file
 * The registry of stage types: what RB2_STAGE_REGISTER() (rb2_stage.h) adds
 * to, what pipelines look types up in, and the plugin loader.
 *
 * @code
 * char err[512];
 * if (rb2_plugin_load("./filter.so", err, sizeof(err)) != 0)
 *	fprintf(stderr, "%s\n", err);        // why it was refused
 * rb2_stage_list(stdout);                  // every type, with its summary
 * @endcode
 */

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rb2_stage_ops;

/**
 * @internal The registration behind RB2_STAGE_REGISTER(). A registration
 * that is refused (another API version, a bad or taken name) is kept and
 * reported by whoever loaded the object: rb2_plugin_load(), or
 * rb2_stage_registry_check() after the EAL's -d.
 */
void rb2_stage_register(const struct rb2_stage_ops *ops);

/** @return the stage type @p name, or NULL. */
const struct rb2_stage_ops *rb2_stage_find(const char *name);

/** Print every registered stage type with its summary. */
void rb2_stage_list(FILE *out);

/**
 * Load a plugin: a shared object whose stages register with
 * RB2_STAGE_REGISTER().
 *
 * @param err Receives why a plugin is refused: it cannot be loaded (the
 *   dynamic loader's reason, e.g. an undefined symbol), it is not an rb2
 *   plugin, it was built for another RB2_STAGE_API_VERSION, or a stage name
 *   is taken.
 * @return 0, or -ENOENT, -ENOEXEC, -EPROTO, -EEXIST.
 */
int rb2_plugin_load(const char *path, char *err, size_t errlen);

/**
 * Report stage registrations that failed outside rb2_plugin_load() (from
 * objects loaded by the EAL's -d).
 *
 * @return 0, or -EINVAL with the first problem in @p err.
 */
int rb2_stage_registry_check(char *err, size_t errlen);

/** @return the file a stage type was registered from ("?" if unknown). */
const char *rb2_stage_origin(const struct rb2_stage_ops *ops);

#ifdef __cplusplus
}
#endif

#endif /* RB2_STAGE_REGISTRY_H */
